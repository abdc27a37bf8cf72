"""``graph_node_overhead_by_rows``: the per-dispatched-op cost of a CUDA-graph replay measured at a model's
own width, by batch (``planner calibrate --model`` on a GPU), which ``verify`` takes at its batch in place
of the tiny decoder's ``graph_node_overhead``.

Profile field (parse, refuse, write back), the log-linear lookup (hardware/expected.py), verify's factors
and prediction (runtime/verify.py), calibrate's profile writer, and the small-ops step the figure is
measured on (runtime/calibrate.py, run eagerly on the CPU here: no timing). Expected numbers are worked
by hand in the comments.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from planner.analysis.errors import HardwareError
from planner.hardware import profiles as hp
from planner.hardware.expected import graph_node_at
from tests.test_gpu_terms_s32 import _hw, _spec  # the H200-like calibrated test profile and a bundled spec


# ---- the profile field -----------------------------------------------------------------------------------


def test_field_parses_row_keys_and_times_sorted():
    p = _hw(graph_node_overhead_by_rows={"64": "3 us", 1: "1500 ns", 16: "0.002 ms"})
    assert list(p.graph_node_by_rows_s) == [1, 16, 64]
    assert p.graph_node_by_rows_s[1] == pytest.approx(1.5e-6, rel=1e-12)
    assert p.graph_node_by_rows_s[16] == pytest.approx(2e-6, rel=1e-12)
    assert p.graph_node_by_rows_s[64] == pytest.approx(3e-6, rel=1e-12)


def test_field_round_trips_through_yaml_data_and_to_dict():
    p = _hw(graph_node_overhead_by_rows={1: "1.5 us", 64: "3 us"})
    q = hp.profile_from_data(p.to_yaml_data(), where="again.yaml")
    assert dict(q.graph_node_by_rows_s) == pytest.approx({1: 1.5e-6, 64: 3e-6}, rel=1e-9)
    assert p.to_dict()["graph_node_by_rows_s"] == pytest.approx({"1": 1.5e-6, "64": 3e-6}, rel=1e-12)
    assert _hw().to_dict()["graph_node_by_rows_s"] is None
    assert "graph_node_overhead_by_rows" not in _hw().to_yaml_data()


@pytest.mark.parametrize("value, words", [
    ({}, "non-empty mapping"),
    ([1, 2], "non-empty mapping"),
    ("1 us", "non-empty mapping"),
    ({0: "1 us"}, "whole number >= 1"),
    ({"x": "1 us"}, "whole number >= 1"),
    ({True: "1 us"}, "whole number >= 1"),
    ({"1.5": "1 us"}, "whole number >= 1"),
    ({"9" * 5000: "1 us"}, "whole number >= 1"),
    ({1: "0 us"}, "graph_node_overhead_by_rows.1"),
    ({1: "-1 us"}, "graph_node_overhead_by_rows.1"),
    ({1: "1"}, "graph_node_overhead_by_rows.1"),
    ({1: "1 GB"}, "graph_node_overhead_by_rows.1"),
    ({1: None}, "graph_node_overhead_by_rows.1"),
])
def test_bad_values_are_refused_naming_the_field(value, words):
    with pytest.raises(HardwareError) as e:
        _hw(graph_node_overhead_by_rows=value)
    assert words in str(e.value) and "test.yaml" in str(e.value)


def test_construction_refuses_a_bad_table():
    p = _hw()
    import dataclasses

    for bad in ({0: 1e-6}, {1: 0.0}, {1: float("nan")}, {1: "1 us"}, {}):
        with pytest.raises(HardwareError):
            dataclasses.replace(p, graph_node_by_rows_s=bad)


# ---- the lookup ------------------------------------------------------------------------------------------


def test_graph_node_at_is_log_linear_in_rows_and_clamped():
    table = {1: 1e-6, 16: 2e-6, 64: 4e-6}
    assert graph_node_at(table, 1) == 1e-6
    assert graph_node_at(table, 16) == 2e-6
    # 4 rows: half way from 1 to 16 in log -> 1.5 us; 32 rows: half way from 16 to 64 in log -> 3 us
    assert graph_node_at(table, 4) == pytest.approx(1.5e-6, rel=1e-12)
    assert graph_node_at(table, 32) == pytest.approx(3e-6, rel=1e-12)
    # 2 rows: a quarter of the way -> 1.25 us
    assert graph_node_at(table, 2) == pytest.approx(1.25e-6, rel=1e-12)
    assert graph_node_at(table, 256) == 4e-6  # beyond the last measured batch: its figure


# ---- verify's factors and prediction ---------------------------------------------------------------------


def test_verify_factors_take_the_table_at_the_batch_for_graph_replays_only():
    from planner.runtime.verify import verify_factors

    spec = _spec("meta-llama/Llama-3.1-8B")
    hw = _hw(graph_node_overhead="1 us", graph_node_overhead_by_rows={1: "1.5 us", 64: "3 us"})
    f8 = verify_factors(hw, spec, "cuda", True, batch=8)
    # 8 rows: log(8)/log(64) = 1/2 of the way -> 2.25 us
    assert f8.graph_node_s == pytest.approx(2.25e-6, rel=1e-12)
    assert "graph_node_overhead_by_rows" in f8.sources["graph_node_s"] and "batch 8" in f8.sources["graph_node_s"]
    assert verify_factors(hw, spec, "cuda", True, batch=1).graph_node_s == pytest.approx(1.5e-6, rel=1e-12)
    # no batch: the flat figure; eager: no graph nodes at all
    assert verify_factors(hw, spec, "cuda", True).graph_node_s == pytest.approx(1e-6, rel=1e-12)
    assert verify_factors(hw, spec, "cuda", False, batch=8).graph_node_s == 0.0
    # without the table, the flat figure at every batch
    assert verify_factors(_hw(graph_node_overhead="1 us"), spec, "cuda", True, batch=8).graph_node_s == \
        pytest.approx(1e-6, rel=1e-12)


def test_predict_step_prices_each_dispatched_op_at_the_batch_figure():
    from planner.analysis.kv import kv_cache
    from planner.analysis.weights import weight_format
    from planner.runtime.verify import predict_step

    spec = _spec("meta-llama/Llama-3.1-8B")
    fmt, _ = weight_format(spec, "bf16")
    kvc = kv_cache(spec, fmt.act, fmt.act)

    def predict(hw, batch):
        return predict_step(spec, fmt, kvc, hw, batch=batch, context=2048, device_type="cuda", graphs=True,
                            kernels=2606)

    flat = _hw(graph_node_overhead="1 us")
    rows = _hw(graph_node_overhead="1 us", graph_node_overhead_by_rows={1: "1.8 us", 16: "2.2 us"})
    # batch 1: 2,606 ops x (1.8 - 1.0) us = 2.0848 ms more; batch 4 (half way in log): x 1.0 us = 2.606 ms
    for batch, per_op in ((1, 0.8e-6), (4, 1.0e-6)):
        a, b = predict(flat, batch), predict(rows, batch)
        assert b.cost.expected_s - a.cost.expected_s == pytest.approx(2606 * per_op, rel=1e-9)
        assert b.cost.ideal_s == a.cost.ideal_s


# ---- calibrate: the profile it writes, and the step it measures -------------------------------------------


def _calibration(**kw):
    from planner.runtime.calibrate import Calibration

    return Calibration("cuda", "NVIDIA H200", 4.3e12, None, {"bf16": 7.9e14}, 5e-6, 141 * 10**9, None, 60.0,
                       {"tiny_step_kernels": 120, "graph_node_by_rows_model": "meta-llama/Llama-3.1-8B"},
                       graph_node_s=0.98e-6, **kw)


def test_calibration_profile_writes_the_table_and_its_source():
    from planner.runtime.calibrate import calibration_profile

    data = calibration_profile(_calibration(graph_node_by_rows_s={1: 1.61e-6, 16: 1.9e-6, 64: 2.4e-6}), "cal")
    assert set(data["graph_node_overhead_by_rows"]) == {1, 16, 64}
    p = hp.profile_from_data(data, where="cal.yaml")
    assert dict(p.graph_node_by_rows_s) == pytest.approx({1: 1.61e-6, 16: 1.9e-6, 64: 2.4e-6}, rel=1e-6)
    assert any("graph_node_overhead_by_rows" in s and "meta-llama/Llama-3.1-8B" in s for s in data["source"])
    # measured without a model (or off a GPU): no table
    assert "graph_node_overhead_by_rows" not in calibration_profile(_calibration(), "cal")


torch = pytest.importorskip("torch", reason="the small-ops step is built from runtime.model's torch modules")


def _ops(spec, batch, layers):
    from planner.runtime.calibrate import small_ops_step
    from planner.runtime.timing import count_kernels

    step, n = small_ops_step(spec, batch, torch.device("cpu"), torch.float32, layers)
    with torch.inference_mode():
        total, by_op = count_kernels(step)
    return n, total, Counter(by_op)


@pytest.mark.parametrize("model_id, norms, qk_norm", [
    ("meta-llama/Llama-3.1-8B", 2, False),
    ("google/gemma-2-9b", 4, False),
    ("Qwen/Qwen3-30B-A3B", 2, True),
])
def test_small_ops_step_runs_each_layers_norms_rope_and_activation(model_id, norms, qk_norm):
    spec = _spec(model_id)
    n1, t1, ops1 = _ops(spec, 1, 1)
    n3, t3, ops3 = _ops(spec, 1, 3)
    assert (n1, n3) == (1, 3)
    per_layer = {k: (ops3[k] - ops1[k]) / 2 for k in ops3}
    # one RMSNorm is one fp32 mean; a layer has its norms on the hidden state plus the q and k norms where the model
    # has them; the final norm adds one per step
    assert per_layer["aten.mean"] == norms + (2 if qk_norm else 0)
    assert ops1["aten.mean"] == norms + (2 if qk_norm else 0) + 1
    assert per_layer["aten.cat"] == 2  # RoPE on q and on k
    assert per_layer["aten.add"] >= 2  # the two residual adds (the norms add their eps too)
    # no matmul: the figure is what the small kernels cost
    assert not any(k in ops3 for k in ("aten.mm", "aten.addmm", "aten.linear", "aten.bmm", "aten.matmul"))
    assert t3 - t1 == 2 * sum(per_layer.values())


def test_small_ops_step_defaults_to_every_layer_and_sizes_the_moe_activation_by_top_k():
    spec = _spec("Qwen/Qwen3-30B-A3B")
    from planner.runtime.calibrate import small_ops_step

    step, n = small_ops_step(spec, 2, torch.device("cpu"), torch.float32)
    assert n == spec.num_layers == 48
    seen = []

    from torch.utils._python_dispatch import TorchDispatchMode

    class Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if str(func.overloadpacket) == "aten.silu":
                seen.append(tuple(out.shape))
            return out

    with torch.inference_mode(), Shapes():
        step()
    # batch 2 x top-8 rows of the 768-wide expert activation, once a layer
    assert seen == [(2 * 8, 768)] * 48


@pytest.mark.parametrize("model_id", ["tiiuae/falcon-mamba-7b", "deepseek-ai/DeepSeek-V3"])
def test_small_ops_step_refuses_a_first_layer_of_another_form(model_id):
    """Mamba and MLA layers have other small ops: calibrate then keeps the flat graph_node_overhead alone."""
    from planner.runtime.calibrate import small_ops_step

    with pytest.raises(ValueError, match="not attention and an MLP or MoE"):
        small_ops_step(_spec(model_id), 1, torch.device("cpu"), torch.float32, 1)


def test_small_ops_step_output_is_finite():
    from planner.runtime.calibrate import small_ops_step

    step, _ = small_ops_step(_spec("meta-llama/Llama-3.1-8B"), 2, torch.device("cpu"), torch.float32, 2)
    with torch.inference_mode():
        out = step()
    assert out.shape == (2, 1, 4096) and bool(torch.isfinite(out).all())
    assert math.isfinite(float(out.float().abs().mean()))


# ---- the grouped routed experts (experts_grouped_bandwidth, experts_grouped_overhead) ----------------------


def test_experts_fields_parse_round_trip_and_show():
    p = _hw(experts_grouped_bandwidth="2.8 TB/s", experts_grouped_overhead="35 us")
    assert p.experts_grouped_bytes_per_s == pytest.approx(2.8e12, rel=1e-12)
    assert p.experts_grouped_overhead_s == pytest.approx(35e-6, rel=1e-12)
    q = hp.profile_from_data(p.to_yaml_data(), where="again.yaml")
    assert (q.experts_grouped_bytes_per_s, q.experts_grouped_overhead_s) == pytest.approx((2.8e12, 35e-6), rel=1e-9)
    assert _hw(experts_grouped_overhead="0 us").experts_grouped_overhead_s == 0.0
    assert _hw().experts_grouped_bytes_per_s is None and "experts_grouped_bandwidth" not in _hw().to_yaml_data()


@pytest.mark.parametrize("field, value", [
    ("experts_grouped_bandwidth", "0 TB/s"), ("experts_grouped_bandwidth", "-1 TB/s"),
    ("experts_grouped_bandwidth", "3 us"), ("experts_grouped_bandwidth", [1]),
    ("experts_grouped_overhead", "-1 us"), ("experts_grouped_overhead", "1 GB"), ("experts_grouped_overhead", "35"),
])
def test_bad_experts_fields_are_refused_naming_the_field(field, value):
    with pytest.raises(HardwareError) as e:
        _hw(**{field: value})
    assert field in str(e.value) and "test.yaml" in str(e.value)


def _experts_op(weight_bytes=900_000_000, other=1_000_000, flops=10**9):
    from planner.analysis.trace import Op

    return Op("experts", "experts", "ffn", 0, flops=flops, weight_bytes=weight_bytes, act_read_bytes=other // 2,
              act_write_bytes=other - other // 2)


def test_an_experts_op_at_the_grouped_rate_plus_the_overhead():
    from planner.hardware.expected import Factors, ops_time_s

    f = Factors(experts_grouped_bytes_per_s=3e12, experts_grouped_overhead_s=40e-6)
    # 900 MB / 3 TB/s = 300 us, + 1 MB / 4 TB/s = 0.25 us, + 40 us = 340.25 us; the FLOPs (1 GFLOP at 800 TFLOP/s:
    # 1.25 us) are shorter; the rows table is not read
    t = ops_time_s([_experts_op()], 800e12, 4e12, f, decode=True, rows=1, expert_rows=1.0)
    assert t == pytest.approx(340.25e-6, rel=1e-12)
    # compute-bound: 1 PFLOP at 800 TFLOP/s is 1.25 s, longer than the bytes
    assert ops_time_s([_experts_op(flops=10**15)], 800e12, 4e12, f, decode=True) == pytest.approx(1.25, rel=1e-12)
    # a matmul op is not affected
    from planner.analysis.trace import Op

    mm = Op("q", "matmul", "attention", 0, flops=2, weight_bytes=4_000_000)
    assert ops_time_s([mm], 800e12, 4e12, f, decode=True) == pytest.approx(1e-6, rel=1e-12)


def test_the_grouped_term_is_part_of_the_gemm_stage_of_explain():
    from planner.hardware.expected import Factors, step_cost

    class HW:
        name = "x"
        memory_bandwidth_bytes_per_s = 4e12
        interconnect_bytes_per_s = None

        def peak_flops_for(self, key):
            return 800e12

        def peak_flops_key_for(self, key):
            return key

    f = Factors(experts_grouped_bytes_per_s=3e12, experts_grouped_overhead_s=40e-6)
    c = step_cost([_experts_op()], HW(), "bf16", f, decode=True, sequences=1)
    # ideal: 901 MB / 4 TB/s = 225.25 us; expected 340.25 us, the difference in "GEMM efficiency"
    assert c.ideal_s == pytest.approx(225.25e-6, rel=1e-12)
    assert c.expected_s == pytest.approx(340.25e-6, rel=1e-12)
    assert c.parts["GEMM efficiency"] == pytest.approx(115e-6, rel=1e-9)


def test_verify_factors_take_the_grouped_experts_for_moe_graph_replays_only():
    from planner.runtime.verify import verify_factors

    hw = _hw(experts_grouped_bandwidth="2.8 TB/s", experts_grouped_overhead="35 us")
    moe, dense = _spec("Qwen/Qwen3-30B-A3B"), _spec("meta-llama/Llama-3.1-8B")
    f = verify_factors(hw, moe, "cuda", True, batch=16)
    assert (f.experts_grouped_bytes_per_s, f.experts_grouped_overhead_s) == pytest.approx((2.8e12, 35e-6), rel=1e-12)
    assert "experts_grouped_bandwidth" in f.sources["experts_grouped_bytes_per_s"]
    assert verify_factors(hw, moe, "cuda", False, batch=16).experts_grouped_bytes_per_s == 0.0  # eager
    assert verify_factors(hw, dense, "cuda", True, batch=16).experts_grouped_bytes_per_s == 0.0  # no experts
    assert verify_factors(_hw(), moe, "cuda", True, batch=16).experts_grouped_bytes_per_s == 0.0  # no figure


def test_predict_step_prices_qwen3_experts_per_layer_at_the_calibrated_line():
    """Qwen3-30B-A3B at batch 1: 8 experts of 9,437,184 bytes (3 x 768 x 2048 x 2) touched in each of 48 MoE layers;
    at 3 TB/s and 40 us a layer the experts take 48 x (40 us + 75,497,472 B / 3 TB/s + their activations)."""
    from planner.analysis.kv import kv_cache
    from planner.analysis.weights import weight_format
    from planner.runtime.verify import predict_step

    spec = _spec("Qwen/Qwen3-30B-A3B")
    fmt, _ = weight_format(spec, "bf16")
    kvc = kv_cache(spec, fmt.act, fmt.act)
    hw = _hw(experts_grouped_bandwidth="3 TB/s", experts_grouped_overhead="40 us")
    p = predict_step(spec, fmt, kvc, hw, batch=1, context=2048, device_type="cuda", graphs=True, kernels=1000)
    share = p.by_kind["experts"]
    weights = 48 * (40e-6 + 8 * 9_437_184 / 3e12)
    assert weights < share < weights * 1.01 + 0.5e-3  # + the activations' few kB and its share of one launch


def test_fit_overhead_and_rate_recovers_a_line_and_refuses_a_flat_one():
    pytest.importorskip("torch", reason="runtime.calibrate imports torch")
    from planner.runtime.calibrate import fit_overhead_and_rate

    pts = [(b, 70e-6 + b / 2.8e12) for b in (75e6, 141e6, 491e6, 1.2e9)]
    a, rate = fit_overhead_and_rate(pts)
    assert a == pytest.approx(70e-6, rel=1e-9) and rate == pytest.approx(2.8e12, rel=1e-9)
    for bad in ([(1e6, 1e-3)], [(1e6, 1e-3), (1e6, 2e-3)], [(1e6, 2e-3), (2e6, 1e-3)], [(1e6, 1e-3), (2e6, 1e-3)]):
        with pytest.raises(ValueError):
            fit_overhead_and_rate(bad)


def test_calibration_profile_writes_the_grouped_experts_figures():
    from planner.runtime.calibrate import calibration_profile

    cal = _calibration(experts_grouped_bytes_per_s=2.8e12, experts_grouped_overhead_s=35e-6)
    cal.details["experts_grouped_record"] = {"model": "Qwen3-30B-A3B", "copies": 4, "points": [{"tokens": 1}, {"tokens": 16}]}
    data = calibration_profile(cal, "cal")
    p = hp.profile_from_data(data, where="cal.yaml")
    assert p.experts_grouped_bytes_per_s == pytest.approx(2.8e12, rel=1e-6)
    assert p.experts_grouped_overhead_s == pytest.approx(35e-6, rel=1e-6)
    assert any("experts_grouped_bandwidth" in s and "Qwen3-30B-A3B" in s and "1, 16 tokens" in s for s in data["source"])
    assert "experts_grouped_bandwidth" not in calibration_profile(_calibration(), "cal")


# ---- the decode attention call's fixed cost (attention_decode_overhead) -------------------------------------


def test_attention_overhead_field_parses_and_is_refused_when_bad():
    assert _hw(attention_decode_overhead="6.5 us").attention_decode_overhead_s == pytest.approx(6.5e-6, rel=1e-12)
    assert _hw(attention_decode_overhead="0 s").attention_decode_overhead_s == 0.0
    p = _hw(attention_decode_overhead="6.5 us")
    assert hp.profile_from_data(p.to_yaml_data(), where="x.yaml").attention_decode_overhead_s == pytest.approx(6.5e-6)
    for bad in ("-1 us", "6.5", "1 GB/s", [1]):
        with pytest.raises(HardwareError) as e:
            _hw(attention_decode_overhead=bad)
        assert "attention_decode_overhead" in str(e.value)


def test_decode_attention_adds_the_overhead_per_call_and_prefill_does_not():
    from planner.analysis.trace import Op
    from planner.hardware.expected import Factors, ops_time_s

    att = Op("attention", "attention", "attention", 0, flops=10**6, kv_read_bytes=8_000_000, act_read_bytes=0)
    base = Factors(attention_decode=0.5)
    with_oh = Factors(attention_decode=0.5, attention_decode_overhead_s=7e-6)
    # 8 MB at 4 TB/s x 0.5 = 4 us; + 7 us a call; 32 layers (an OpGroup-like count via a list of 32)
    a = ops_time_s([att] * 32, 800e12, 4e12, base, decode=True)
    b = ops_time_s([att] * 32, 800e12, 4e12, with_oh, decode=True)
    assert a == pytest.approx(32 * 4e-6, rel=1e-9)
    assert b - a == pytest.approx(32 * 7e-6, rel=1e-9)
    assert ops_time_s([att], 800e12, 4e12, with_oh, decode=False) == ops_time_s([att], 800e12, 4e12, base, decode=False)


def test_verify_factors_take_the_attention_overhead_for_graph_replays_only():
    from planner.runtime.verify import verify_factors

    hw = _hw(attention_decode_overhead="6.5 us")
    spec = _spec("meta-llama/Llama-3.1-8B")
    assert verify_factors(hw, spec, "cuda", True, batch=1).attention_decode_overhead_s == pytest.approx(6.5e-6)
    assert verify_factors(hw, spec, "cuda", False, batch=1).attention_decode_overhead_s == 0.0
    assert verify_factors(_hw(), spec, "cuda", True, batch=1).attention_decode_overhead_s == 0.0


def test_calibration_profile_writes_the_attention_overhead():
    from planner.runtime.calibrate import calibration_profile

    cal = _calibration(attention_decode_overhead_s=6.4e-6)
    cal.details["attention_overhead_record"] = {"1024": {}, "32768": {}, "programs": 8, "dispatched_ops": 1}
    data = calibration_profile(cal, "cal")
    assert hp.profile_from_data(data, where="c.yaml").attention_decode_overhead_s == pytest.approx(6.4e-6, rel=1e-6)
    assert any("attention_decode_overhead" in s and "1024, 32768 keys" in s for s in data["source"])
    assert "attention_decode_overhead" not in calibration_profile(_calibration(), "cal")


def test_grouped_experts_probe_refuses_a_layer_that_does_not_fit_twice(monkeypatch):
    """DeepSeek-V3's expert layer is 256 x 3 x 7168 x 2048 x 2 bytes = 21 GiB: two copies need more than half of
    40 GiB free, so the probe is refused before allocating (calibrate then keeps the rows table for experts)."""
    import planner.runtime.calibrate as rc
    import planner.runtime.model as rm

    monkeypatch.setattr(rm, "default_moe_impl", lambda device, dtype=None: "grouped")
    monkeypatch.setattr(rc, "free_memory_bytes", lambda device: 40 * 2**30)
    with pytest.raises(RuntimeError, match=r"two copies of deepseek-ai/DeepSeek-V3's expert layer \(42.0 GiB\)"):
        rc.measure_experts_grouped(torch.device("cpu"), _spec("deepseek-ai/DeepSeek-V3"), lambda t: 1e-6)
    with pytest.raises(ValueError, match="has no routed experts"):
        rc.measure_experts_grouped(torch.device("cpu"), _spec("meta-llama/Llama-3.1-8B"), lambda t: 1e-6)


def test_grouped_experts_probe_records_each_point_on_the_cpu(monkeypatch):
    """The probe's bookkeeping, run eagerly (a CUDA graph replaced by calling the step; torch._grouped_mm runs
    on the CPU in this torch): each point's experts touched is the routing's distinct experts, its weight bytes
    are those experts' (3 x 512 x 256 x 2 = 786,432 bytes each), and the overhead is never negative."""
    import planner.runtime.calibrate as rc
    import planner.runtime.model as rm
    import planner.runtime.timing as rt

    if not rm.grouped_mm_works(torch.device("cpu"), torch.bfloat16):
        pytest.skip("torch._grouped_mm does not run on this CPU build")

    class Eager:
        def __init__(self, step):
            self.replay = step

    monkeypatch.setattr(rt, "capture_graph", lambda step, device: Eager(step))
    monkeypatch.setattr(rm, "default_moe_impl", lambda device, dtype=None: "grouped")
    from planner.analysis.config import parse_config

    # Qwen3-30B-A3B's layer form at a small size: 32 experts of 3 x 512 x 256 weights, top-8 (wide enough that
    # the time grows with the experts touched well beyond the noise)
    spec = parse_config({"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 128,
                         "moe_intermediate_size": 512, "num_experts": 32, "num_experts_per_tok": 8,
                         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2,
                         "vocab_size": 256, "max_position_embeddings": 256, "torch_dtype": "bfloat16"})
    fig, overhead, rec = rc.measure_experts_grouped(torch.device("cpu"), spec, lambda t: 1e-6, tokens=(1, 4, 16),
                                                    copies=2, reps=1)
    assert rec["expert_bytes"] == 3 * 512 * 256 * 2 and rec["copies"] == 2
    assert [p["tokens"] for p in rec["points"]] == [1, 4, 16]
    for p in rec["points"]:
        assert min(p["tokens"] * 8, 32) >= p["experts_touched"] >= 8
        assert p["weight_bytes"] == p["experts_touched"] * rec["expert_bytes"]
        assert p["dispatched_ops"] > 10 and p["layer_s"] > 0
    assert rec["points"][0]["experts_touched"] == 8  # one token: its top-8, all distinct
    assert fig.value > 0 and len(fig.rounds) == 3 and overhead >= 0
