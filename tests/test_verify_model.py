"""verify's prediction is planner's one step model (hardware.serve.StepModel) on the torch runtime's
engine profiles: the factor arithmetic by hand, no timing (what verify measures is bench/verify_cpu.py's)."""

from __future__ import annotations

import dataclasses

import pytest

from planner.analysis.trace import Op


def _hw(**kw):
    from planner.hardware.profiles import load_profile

    base = dict(memory_bandwidth_bytes_per_s=10e9, peak_flops_per_s={"fp32": 100e9}, kernel_launch_s=5e-6,
                memory_efficiency=1.0, compute_efficiency=1.0, matmul_efficiency_by_rows=None,
                matmul_efficiency_square_rows=None)
    base.update(kw)
    return dataclasses.replace(load_profile("cpu"), **base)


# a 1-row matmul: 2 MFLOP, 4 MB of weights (+ 8 kB activations); a norm of 8 kB; 3 + 7 kernels
MATMUL = Op("q_proj", "matmul", "attention", 0, flops=2 * 10**6, weight_bytes=4 * 10**6, act_read_bytes=4000,
            act_write_bytes=4000, kernels=3)
NORM = Op("norm", "norm", "norm", 0, act_read_bytes=4000, act_write_bytes=4000, kernels=7)


@pytest.mark.parametrize("name, mode", [("torch-cpu-eager", "serial"), ("torch-cuda-eager", "overlapped"),
                                        ("torch-cuda-graphs", "graph")])
def test_torch_engines_take_the_launch_cost_from_the_hardware_profile(name, mode):
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for

    eng = load_engine(name)
    assert eng.kernel_launches == mode and eng.step_overhead_s == 0.0
    f = factors_for(_hw(kernel_launch_s=7e-6), eng)
    assert f.kernel_launches == mode and f.kernel_launch_s == 7e-6
    assert f.memory_bandwidth == 1.0 and f.compute == 1.0  # a calibrated profile's rates are the achieved ones
    assert "kernel_launch_overhead" in f.sources["kernel_launch_s"]
    assert factors_for(_hw(), load_engine("vllm")).kernel_launch_s == 0.0  # serving engines: their step overhead


def test_serial_launches_add_every_kernel_to_the_device_time():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    f = factors_for(_hw(), load_engine("torch-cpu-eager"))
    # ideal: max(2e6 / 100e9, 4.008e6 / 10e9) = 400.8 µs for the matmul, 8e3 / 10e9 = 0.8 µs for the norm;
    # expected: the matmul's compute and memory joined by the ridge curve (p = 2 from _device.yaml)
    c = step_cost([MATMUL, NORM], _hw(), "fp32", f, decode=True, sequences=1, rows=1)
    assert f.gemm_ridge_exponent == 2.0 and c.ideal_s == pytest.approx(400.8e-6 + 0.8e-6)
    device = (20e-6 ** 2 + 400.8e-6 ** 2) ** 0.5 + 0.8e-6
    assert c.parts["step overhead"] == pytest.approx(10 * 5e-6)  # 3 + 7 kernels × 5 µs
    assert c.expected_s == pytest.approx(device + 50e-6)
    c = step_cost([MATMUL, NORM], _hw(), "fp32", f, decode=True, sequences=1, rows=1, kernels=100)
    assert c.parts["step overhead"] == pytest.approx(100 * 5e-6)  # the decoder's counted kernels win


def test_overlapped_launches_cost_only_what_the_host_adds_and_a_graph_one_launch():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw()
    f = factors_for(hw, load_engine("torch-cuda-eager"))
    device = (20e-6 ** 2 + 400.8e-6 ** 2) ** 0.5 + 0.8e-6  # as in the serial case
    c = step_cost([MATMUL, NORM], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=10)
    assert c.parts["step overhead"] == 0.0  # 50 µs of launches hide behind 401.6 µs of device work
    c = step_cost([MATMUL, NORM], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=1000)
    assert c.parts["step overhead"] == pytest.approx(1000 * 5e-6 - device)  # host-bound: 5 ms of launches
    assert c.expected_s == pytest.approx(5e-3)
    g = factors_for(hw, load_engine("torch-cuda-graphs"))
    c = step_cost([MATMUL, NORM], hw, "fp32", g, decode=True, sequences=1, rows=1, kernels=1000)
    assert c.parts["step overhead"] == pytest.approx(5e-6)


def test_calibrated_rows_efficiency_prices_the_matmul():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw(matmul_efficiency_by_rows={1: 0.004, 4: 0.01})
    f = factors_for(hw, load_engine("torch-cpu-eager"))
    c = step_cost([MATMUL], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=0)
    # 2 MFLOP at 0.004 × 100 GFLOP/s = 5 ms, above the 400.8 µs of bytes
    assert c.expected_s == pytest.approx(5e-3)
    assert c.parts["GEMM efficiency"] == pytest.approx(5e-3 - 400.8e-6)


# ---- calibrated shape tables -------------------------------------------------------------------------


def test_shape_efficiency_is_log_linear_in_k_then_in_rows():
    from planner.hardware.expected import shape_efficiency

    t = {1: {512: 0.1, 2048: 0.2}, 4: {512: 0.3, 2048: 0.4}}
    assert shape_efficiency(t, None, 1, 1024) == pytest.approx(0.15)  # 1024 is halfway (log) from 512 to 2048
    assert shape_efficiency(t, None, 4, 1024) == pytest.approx(0.35)
    assert shape_efficiency(t, None, 2, 1024) == pytest.approx(0.25)  # 2 rows: halfway (log) from 1 to 4
    assert shape_efficiency(t, None, 1, 100) == 0.1 and shape_efficiency(t, None, 1, 10**5) == 0.2  # clamped
    # the rows table's square-GEMM point (fraction 1 at 64 rows) beyond the measured rows: 16 is halfway
    assert shape_efficiency(t, {1: 0.1, 4: 0.3, 64: 1.0}, 16, 512) == pytest.approx(0.3 + 0.7 * 0.5)


def test_shape_efficiency_scales_by_the_output_width_table_ratio():
    from planner.hardware.expected import shape_efficiency

    t = {1: {512: 0.1, 2048: 0.2}, 4: {512: 0.3, 2048: 0.4}}
    wide = {4: {1024: 0.2, 16384: 0.1}}  # at 4 rows half the rate 16x wider; no entry at 1 row
    # 4 rows, K = 1024 (0.35 by K), N = 4096: halfway (log) from 1024 to 16384 -> 0.15, ratio 0.75
    assert shape_efficiency(t, None, 4, 1024, outer=4096, by_out=wide) == pytest.approx(0.35 * 0.75)
    assert shape_efficiency(t, None, 4, 1024, outer=10**6, by_out=wide) == pytest.approx(0.35 * 0.5)  # clamped
    assert shape_efficiency(t, None, 4, 1024, outer=1024, by_out=wide) == pytest.approx(0.35)  # the grid's own N
    assert shape_efficiency(t, None, 1, 1024, outer=4096, by_out=wide) == pytest.approx(0.15)  # row without a table
    assert shape_efficiency(t, None, 4, 1024, outer=None, by_out=wide) == pytest.approx(0.35)  # N unknown
    # 2 rows: log-linear in rows between 1 row (0.15, unscaled) and 4 rows (0.2625)
    assert shape_efficiency(t, None, 2, 1024, outer=4096, by_out=wide) == pytest.approx((0.15 + 0.2625) / 2)


def test_outer_dim_of_a_matmul_comes_from_its_own_counts():
    from planner.hardware.expected import outer_dim

    n, k, outs = 4, 576, 576 + 192 + 192
    for a in (2, 4):  # any activation dtype
        op = Op("qkv", "matmul", "attention", 0, flops=2 * n * k * outs, weight_bytes=a * k * outs,
                act_read_bytes=n * k * a, act_write_bytes=n * outs * a)
        assert outer_dim(op, n) == outs
    assert outer_dim(op, None) is None and outer_dim(NORM, 1) is None


def test_inner_dim_of_a_matmul_comes_from_its_own_counts():
    from planner.hardware.expected import inner_dim

    # q, k, v of K = 576 fused (ΣN = 576 + 192 + 192) over 4 rows in fp32: K² = flops / 2n × read / write
    n, k, outs = 4, 576, 576 + 192 + 192
    op = Op("qkv", "matmul", "attention", 0, flops=2 * n * k * outs, weight_bytes=4 * k * outs,
            act_read_bytes=n * k * 4, act_write_bytes=n * outs * 4)
    assert inner_dim(op, n) == 576
    assert inner_dim(op, None) is None and inner_dim(NORM, 1) is None


def test_inner_and_outer_dims_match_the_weights_of_every_matmul_of_a_real_trace():
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format
    from planner.cli.common import load_model
    from planner.hardware.expected import inner_dim, outer_dim

    spec = load_model("Qwen/Qwen3-0.6B", None).spec
    fmt, _ = weight_format(spec, "fp32")
    ops = [o for o in step_ops(spec, fmt, fmt.act, batch=4, new_tokens=1, cached_tokens=16) if o.kind == "matmul"]
    # independent oracle: config.json's shapes (hidden 1024, 16 heads x 128, 8 KV heads x 128, intermediate
    # 3072, vocab 151,936), (K, N) per weight
    want = {"q_proj": (1024, 2048), "k_proj": (1024, 1024), "v_proj": (1024, 1024), "o_proj": (2048, 1024),
            "gate_proj": (1024, 3072), "up_proj": (1024, 3072), "down_proj": (3072, 1024), "lm_head": (1024, 151936)}
    seen = set()
    for o in ops:
        key = o.name.split(".")[-1]
        if key in want:
            assert (inner_dim(o, 4), outer_dim(o, 4)) == want[key], o.name
            seen.add(key)
    assert {"q_proj", "o_proj", "down_proj", "lm_head"} <= seen


def test_attention_efficiency_takes_the_nearest_head_dim_and_interpolates_the_group():
    from planner.hardware.expected import attention_efficiency_at

    t = {64: {1: 0.6, 4: 0.3}, 128: {2: 0.5}}
    assert attention_efficiency_at(t, 2, 64) == pytest.approx(0.45)
    assert attention_efficiency_at(t, 8, 64) == 0.3  # clamped past the last group
    assert attention_efficiency_at(t, 2, 100) == 0.5  # 100 is nearer 128 than 64 in log


def test_a_calibrated_shape_table_prices_each_matmul_at_its_k():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw(matmul_efficiency_by_shape={1: {512: 0.01, 2048: 0.004}}, matmul_efficiency_by_rows={1: 0.5})
    f = factors_for(hw, load_engine("torch-cpu-eager"))
    k, outs = 1024, 1000  # K = 1024: halfway (log) between the two columns -> 0.007
    op = Op("x", "matmul", "ffn", 0, flops=2 * k * outs, weight_bytes=4 * k * outs, act_read_bytes=4 * k,
            act_write_bytes=4 * outs)
    c = step_cost([op], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=0)
    assert c.expected_s == pytest.approx(max(2 * k * outs / (0.007 * 100e9), (4 * k * outs + 4 * k + 4 * outs) / 10e9))


def test_a_calibrated_output_width_table_slows_a_wide_matmul():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw(matmul_efficiency_by_shape={1: {512: 0.01, 2048: 0.004}}, matmul_efficiency_by_rows={1: 0.5},
             matmul_efficiency_by_out={1: {1024: 0.01, 65536: 0.0025}})
    f = factors_for(hw, load_engine("torch-cpu-eager"))
    assert f.sources["matmul_efficiency_by_out"].endswith("(calibrated)")
    k, outs = 1024, 8192  # 0.007 by K; N = 8192 is half way (log) from 1024 to 65536 -> 0.00625, ratio 0.625
    op = Op("x", "matmul", "ffn", 0, flops=2 * k * outs, weight_bytes=4 * k * outs, act_read_bytes=4 * k,
            act_write_bytes=4 * outs)
    c = step_cost([op], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=0)
    assert c.expected_s == pytest.approx(max(2 * k * outs / (0.007 * 0.625 * 100e9), (4 * k * outs + 4 * k + 4 * outs) / 10e9))


def test_profile_tables_load_validate_and_round_trip(tmp_path):
    from planner.analysis.errors import HardwareError
    from planner.hardware.profiles import load_profile, profile_from_data

    data = load_profile("cpu").to_yaml_data()
    data.update(matmul_efficiency_by_shape={1: {512: 0.08, 4096: 0.2}, "4": {"512": 0.3}},
                attention_decode_efficiency={64: {1: 0.6, 8: 0.3}})
    p = profile_from_data(data, where="x.yaml", origin="file", path="x.yaml")
    assert dict(p.matmul_efficiency_by_shape[4]) == {512: 0.3} and p.attention_decode_efficiency[64][8] == 0.3
    again = profile_from_data(p.to_yaml_data(), where="y.yaml", origin="file", path="y.yaml")
    assert again.matmul_efficiency_by_shape == p.matmul_efficiency_by_shape
    assert p.to_dict()["attention_decode_efficiency"] == {"64": {"1": 0.6, "8": 0.3}}
    for bad in ({1: {512: 1.5}}, {0: {512: 0.1}}, {1: {}}, [0.1], {1: {"x": 0.1}}):
        with pytest.raises(HardwareError, match="matmul_efficiency_by_shape"):
            profile_from_data({**data, "matmul_efficiency_by_shape": bad}, where="x.yaml", origin="file", path="x.yaml")
    wide = profile_from_data({**data, "matmul_efficiency_by_out": {4: {1024: 0.2, 65536: 0.12}}},
                             where="x.yaml", origin="file", path="x.yaml")
    assert profile_from_data(wide.to_yaml_data(), where="y.yaml", origin="file",
                             path="y.yaml").matmul_efficiency_by_out == wide.matmul_efficiency_by_out
    with pytest.raises(HardwareError, match=r"matmul_efficiency_by_out\[4\] has no entry at N = 1024"):
        profile_from_data({**data, "matmul_efficiency_by_out": {4: {8192: 0.2}}}, where="x.yaml", origin="file",
                          path="x.yaml")


def test_cpu_bench_prints_one_table_of_runs(tmp_path):
    """bench/verify_cpu.py's logic on a tiny model (no calibration, the bundled cpu template): one row
    per model × batch × run, the summary line, exit 0 when the exact checks hold. No timing asserted."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch", reason="the bench runs verify, which needs torch")
    repo = Path(__file__).resolve().parents[1]
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=96, vocab_size=128, max_position_embeddings=4096, torch_dtype="float32")))
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, str(repo / "bench" / "verify_cpu.py"), "--models", str(d), "--batches", "1", "2",
                        "--runs", "1", "--context", "8", "--steps", "2", "--warmup", "0", "--no-calibrate",
                        "--hardware", "cpu", "--config-dir", str(tmp_path / "cfg"), "--json", str(out)],
                       cwd=repo, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| model"))
    assert all(c in lines[header] for c in ("batch", "run", "predicted ms", "measured ms", "error"))
    rows = [line for line in lines[header + 2:] if line.startswith("|")]
    assert [r.split("|")[2].strip() for r in rows] == ["1", "2"] and all("| ok |" in r for r in rows)
    assert any(line.startswith("median |error|") and "/2 runs within ±10%" in line for line in lines)
    assert [r["options"]["batch"] for r in json.loads(out.read_text())] == [1, 2]
