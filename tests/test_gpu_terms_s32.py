"""The two GPU terms a calibrated profile can carry for the torch decoder ``verify`` times:
``graph_node_overhead`` (each kernel of a CUDA-graph replay costs this beyond its work) and
``attention_decode_head_bandwidth`` (the decode SDPA's read rate per (sequence, KV head) program, so a
small batch of a model with few KV heads reads its KV cache at B·K × that rate at most).

Profile fields (parse, validate, write back), the step model's graph-node term (hardware/expected.py),
verify's attention cap and prediction (runtime/verify.py), and calibrate's profile writer
(runtime/calibrate.py). Every expected number is worked out by hand in the comments; no timing.
"""

from __future__ import annotations

import dataclasses

import pytest

from planner.analysis.errors import HardwareError
from planner.analysis.trace import Op
from planner.hardware import profiles as hp

# ---- helpers -----------------------------------------------------------------------------------------

#: an H200-like calibrated profile: 4.2 TB/s, the efficiencies 1 (a calibrated profile's rates are achieved ones)
BASE = {
    "name": "test-gpu",
    "memory": "141 GB",
    "memory_bandwidth": "4.2 TB/s",
    "peak_flops": {"bf16": "800 TFLOP/s"},
    "kernel_launch_overhead": "5 us",
    "efficiency": {"memory_bandwidth": 1.0, "compute": 1.0},
}


def _data(**extra) -> dict:
    d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    d.update(extra)
    return d


def _hw(**extra):
    return hp.profile_from_data(_data(**extra), where="test.yaml")


def _spec(model_id: str):
    from planner.cli.common import load_model

    return load_model(model_id).spec


# ---- hardware/profiles.py: the two fields ------------------------------------------------------------


def test_profile_without_the_fields_has_none_and_writes_none_back():
    p = _hw()
    assert p.graph_node_s is None and p.attention_head_bytes_per_s is None
    data = p.to_yaml_data()
    assert "graph_node_overhead" not in data and "attention_decode_head_bandwidth" not in data
    d = p.to_dict()
    assert d["graph_node_s"] is None and d["attention_head_bytes_per_s"] is None


def test_fields_parse_to_seconds_and_bytes_per_second():
    p = _hw(graph_node_overhead="1.8 us", attention_decode_head_bandwidth="42 GB/s")
    assert p.graph_node_s == pytest.approx(1.8e-6, rel=1e-12)
    assert p.attention_head_bytes_per_s == pytest.approx(42e9, rel=1e-12)
    # other units of the same quantities
    q = _hw(graph_node_overhead="1800 ns", attention_decode_head_bandwidth="0.042 TB/s")
    assert q.graph_node_s == pytest.approx(1.8e-6, rel=1e-12)
    assert q.attention_head_bytes_per_s == pytest.approx(42e9, rel=1e-12)
    assert _hw(graph_node_overhead="0.002 ms").graph_node_s == pytest.approx(2e-6, rel=1e-12)


def test_null_fields_are_absent():
    p = _hw(graph_node_overhead=None, attention_decode_head_bandwidth=None)
    assert p.graph_node_s is None and p.attention_head_bytes_per_s is None


def test_zero_graph_node_overhead_is_allowed():
    p = _hw(graph_node_overhead="0 us")
    assert p.graph_node_s == 0.0
    # written back as a zero time, not dropped (0 is a value, not "absent")
    again = hp.profile_from_data(p.to_yaml_data(), where="round-trip")
    assert again.graph_node_s == 0.0


def test_fields_are_written_back_and_round_trip():
    p = _hw(graph_node_overhead="1.8 us", attention_decode_head_bandwidth="42 GB/s")
    data = p.to_yaml_data()
    assert data["graph_node_overhead"] == "1.8 us"
    assert data["attention_decode_head_bandwidth"] == "42 GB/s"
    again = hp.profile_from_data(data, where="round-trip")
    assert again == p
    assert again.graph_node_s == pytest.approx(1.8e-6) and again.attention_head_bytes_per_s == pytest.approx(42e9)
    d = p.to_dict()
    assert d["graph_node_s"] == pytest.approx(1.8e-6) and d["attention_head_bytes_per_s"] == pytest.approx(42e9)


def test_fields_survive_a_saved_user_profile(tmp_path):
    """Through the YAML file a user profile is (the autouse fixture points the user folder at tmp_path)."""
    p = _hw(graph_node_overhead="0.98 us", attention_decode_head_bandwidth="37.5 GB/s")
    hp.save_user_profile(p.to_yaml_data(), "test-gpu")
    loaded = hp.load_profile("test-gpu")
    assert loaded.graph_node_s == pytest.approx(0.98e-6)
    assert loaded.attention_head_bytes_per_s == pytest.approx(37.5e9)


@pytest.mark.parametrize(
    "field, value, needle",
    [
        ("graph_node_overhead", "-1 us", "negative"),
        ("graph_node_overhead", "1.8", "no unit"),
        ("graph_node_overhead", 1.8, "no unit"),
        ("graph_node_overhead", "1.8 GB/s", "unknown time unit"),
        ("graph_node_overhead", "fast", "not a number"),
        ("graph_node_overhead", True, "not a value with a unit"),
        ("graph_node_overhead", [1], "wrong type"),
        ("graph_node_overhead", "2 days", "unknown time unit"),
        ("attention_decode_head_bandwidth", "0 GB/s", "zero"),
        ("attention_decode_head_bandwidth", "-42 GB/s", "negative"),
        ("attention_decode_head_bandwidth", "42 GB", "not a rate"),
        ("attention_decode_head_bandwidth", "42 us", "unknown bandwidth unit"),
        ("attention_decode_head_bandwidth", "42", "no unit"),
        ("attention_decode_head_bandwidth", "1 B/s", "plausible range"),
        ("attention_decode_head_bandwidth", "lots", "not a number"),
    ],
)
def test_bad_values_are_hardware_errors_naming_the_field(field, value, needle):
    with pytest.raises(HardwareError) as info:
        _hw(**{field: value})
    msg = str(info.value)
    assert field in msg and "test.yaml" in msg
    assert needle in msg


@pytest.mark.parametrize(
    "attr, value",
    [
        ("graph_node_s", -1e-6),
        ("graph_node_s", float("nan")),
        ("graph_node_s", float("inf")),
        ("graph_node_s", "1 us"),
        ("attention_head_bytes_per_s", 0.0),
        ("attention_head_bytes_per_s", -42e9),
        ("attention_head_bytes_per_s", float("nan")),
        ("attention_head_bytes_per_s", True),
    ],
)
def test_profile_construction_validates_the_new_attributes(attr, value):
    with pytest.raises(HardwareError, match=attr):
        dataclasses.replace(_hw(), **{attr: value})


def test_profile_construction_accepts_zero_graph_node_and_positive_head_rate():
    p = dataclasses.replace(_hw(), graph_node_s=0.0, attention_head_bytes_per_s=1e9)
    assert p.graph_node_s == 0.0 and p.attention_head_bytes_per_s == 1e9


# ---- hardware/expected.py: the graph-node term ---------------------------------------------------------

# a 1-row matmul (3 kernels) and a norm (7 kernels): Σ kernels = 10
MATMUL = Op("q_proj", "matmul", "attention", 0, flops=2 * 10**6, weight_bytes=4 * 10**6, act_read_bytes=4000,
            act_write_bytes=4000, kernels=3)
NORM = Op("norm", "norm", "norm", 0, act_read_bytes=4000, act_write_bytes=4000, kernels=7)


def _factors(engine_name: str, **extra):
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for

    return factors_for(_hw(**extra), load_engine(engine_name))


def test_factors_take_graph_node_only_for_graph_replays():
    g = _factors("torch-cuda-graphs", graph_node_overhead="1.8 us")
    assert g.kernel_launches == "graph"
    assert g.graph_node_s == pytest.approx(1.8e-6)
    assert "graph_node_overhead" in g.sources["graph_node_s"]
    assert g.to_dict()["graph_node_s"] == pytest.approx(1.8e-6)
    for name in ("torch-cuda-eager", "vllm", "torch-cpu-eager"):
        f = _factors(name, graph_node_overhead="1.8 us")
        assert f.kernel_launches != "graph"
        assert f.graph_node_s == 0.0, name
        assert "graph_node_s" not in f.sources, name


def test_factors_without_the_field_have_zero_graph_node():
    f = _factors("torch-cuda-graphs")
    assert f.graph_node_s == 0.0 and "graph_node_s" not in f.sources
    z = _factors("torch-cuda-graphs", graph_node_overhead="0 s")
    assert z.graph_node_s == 0.0 and "graph_node_s" not in z.sources


def test_graph_nodes_s_counts_kernels_in_graph_mode_only():
    from planner.hardware.expected import graph_nodes_s

    f = _factors("torch-cuda-graphs", graph_node_overhead="2 us")
    assert graph_nodes_s(f, [MATMUL, NORM], 500) == pytest.approx(500 * 2e-6)  # 1 ms
    assert graph_nodes_s(f, [MATMUL, NORM], None) == pytest.approx(10 * 2e-6)  # Σ kernels 3 + 7
    assert graph_nodes_s(f, [MATMUL, NORM], 0) == 0.0
    # the same figure under another launch mode adds nothing
    for mode in ("overlapped", "serial", "none"):
        assert graph_nodes_s(dataclasses.replace(f, kernel_launches=mode), [MATMUL, NORM], 500) == 0.0
    assert graph_nodes_s(_factors("torch-cuda-graphs"), [MATMUL, NORM], 500) == 0.0


def test_step_kernels_of_grouped_ops_feed_graph_nodes():
    """An OpGroup stands for ``count`` layers: its kernels count once per layer."""
    from planner.hardware.expected import graph_nodes_s

    group = type("G", (), {"op": MATMUL, "count": 32})()
    f = _factors("torch-cuda-graphs", graph_node_overhead="1 us")
    assert graph_nodes_s(f, [group, NORM], None) == pytest.approx((32 * 3 + 7) * 1e-6)


@pytest.mark.parametrize("kernels, added", [(None, 10 * 1.8e-6), (1000, 1000 * 1.8e-6), (1, 1.8e-6)])
def test_step_cost_adds_kernels_times_graph_node_to_kernel_launches(kernels, added):
    from planner.hardware.expected import step_cost

    hw0, hw1 = _hw(), _hw(graph_node_overhead="1.8 us")
    f0, f1 = _factors("torch-cuda-graphs"), _factors("torch-cuda-graphs", graph_node_overhead="1.8 us")
    a = step_cost([MATMUL, NORM], hw0, "bf16", f0, decode=True, sequences=1, rows=1, kernels=kernels)
    b = step_cost([MATMUL, NORM], hw1, "bf16", f1, decode=True, sequences=1, rows=1, kernels=kernels)
    assert b.ideal_s == a.ideal_s
    assert b.expected_s - a.expected_s == pytest.approx(added, rel=1e-9)
    assert b.parts["kernel launches"] - a.parts["kernel launches"] == pytest.approx(added, rel=1e-9)
    # every other part is the same
    for k in a.parts:
        if k != "kernel launches":
            assert b.parts[k] == pytest.approx(a.parts[k], rel=1e-12, abs=1e-15), k


def test_step_cost_of_an_eager_engine_ignores_graph_node():
    from planner.hardware.expected import step_cost

    hw0, hw1 = _hw(), _hw(graph_node_overhead="1.8 us")
    for name in ("torch-cuda-eager", "vllm"):
        f0, f1 = _factors(name), _factors(name, graph_node_overhead="1.8 us")
        a = step_cost([MATMUL, NORM], hw0, "bf16", f0, decode=True, sequences=1, rows=1, kernels=1000)
        b = step_cost([MATMUL, NORM], hw1, "bf16", f1, decode=True, sequences=1, rows=1, kernels=1000)
        assert b.expected_s == pytest.approx(a.expected_s, rel=1e-12), name


# ---- runtime/verify.py: sdpa_heads, the attention cap, predict_step ------------------------------------


@pytest.mark.parametrize(
    "model_id, heads",
    [
        ("meta-llama/Llama-3.1-8B", 8),  # config num_key_value_heads 8
        ("Qwen/Qwen2.5-7B", 4),  # config num_key_value_heads 4
        ("ai21labs/AI21-Jamba-1.5-Mini", 8),  # Mamba first; the first attention layer (offset 4) has 8 KV heads
        ("google/gemma-2-9b", None),  # attention logit soft-capping: the written-out path, not SDPA
        ("openai/gpt-oss-20b", None),  # attention sinks: not SDPA
        ("tiiuae/falcon-mamba-7b", None),  # no softmax attention at all
    ],
)
def test_sdpa_heads(model_id, heads):
    from planner.runtime.verify import sdpa_heads

    assert sdpa_heads(_spec(model_id)) == heads


def _hf(spec, *, batch=None, tp=1, engine="torch-cuda-graphs", **extra):
    from planner.hardware.engine import load_engine
    from planner.runtime.verify import hardware_factors

    return hardware_factors(_hw(**extra), load_engine(engine), spec, batch=batch, tp=tp)


HEADS = {"attention_decode_head_bandwidth": "42 GB/s"}


@pytest.mark.parametrize(
    "batch, tp, expected",
    [
        (1, 1, 0.08),  # 1 × 8 heads × 42 GB/s / 4.2 TB/s
        (1, 2, 0.04),  # 1 × 4 heads per rank × 42 / 4200
        (2, 1, 0.16),  # 2 × 8 × 42 / 4200
        (4, 4, 0.08),  # 4 × 2 × 42 / 4200
        (12, 1, 0.96),  # 96 programs × 42 / 4200: still below the engine's 1.0
        (16, 1, 1.0),  # 128 × 42 / 4200 = 1.28 > 1.0: the engine's value stays
        (64, 1, 1.0),
    ],
)
def test_attention_cap_at_batch_and_tp(batch, tp, expected):
    f = _hf(_spec("meta-llama/Llama-3.1-8B"), batch=batch, tp=tp, **HEADS)
    assert f.attention_decode == pytest.approx(expected, rel=1e-9)
    capped = "attention_decode_head_bandwidth" in f.sources.get("attention_decode", "")
    assert capped == (expected < 1.0)


def test_attention_cap_needs_batch_and_the_field():
    spec = _spec("meta-llama/Llama-3.1-8B")
    assert _hf(spec, batch=None, **HEADS).attention_decode == 1.0  # no batch given
    assert _hf(spec, batch=1).attention_decode == 1.0  # no per-head rate in the profile


def test_attention_cap_skips_models_without_sdpa_heads():
    for model_id in ("google/gemma-2-9b", "openai/gpt-oss-20b"):
        assert _hf(_spec(model_id), batch=1, **HEADS).attention_decode == 1.0, model_id


def test_attention_cap_is_of_the_achieved_bandwidth():
    """Memory efficiency 0.5: the cap is a fraction of 2.1 TB/s, 8 × 42 / 2100 = 0.16."""
    eff = {"memory_bandwidth": 0.5, "compute": 1.0}
    f = _hf(_spec("meta-llama/Llama-3.1-8B"), batch=1, efficiency=eff, **HEADS)
    assert f.memory_bandwidth == 0.5
    assert f.attention_decode == pytest.approx(0.16, rel=1e-9)


def test_attention_cap_with_few_kv_heads():
    """Qwen2.5-7B: 4 KV heads, batch 1 → 4 × 42 / 4200 = 0.04."""
    assert _hf(_spec("Qwen/Qwen2.5-7B"), batch=1, **HEADS).attention_decode == pytest.approx(0.04, rel=1e-9)


def test_attention_cap_takes_the_lower_of_calibrated_table_and_cap():
    """Llama-3.1-8B: 32 query heads / 8 KV heads = group 4, head_dim 128."""
    spec = _spec("meta-llama/Llama-3.1-8B")
    low = {128: {1: 0.05, 8: 0.05}}  # 0.05 everywhere, below the batch-1 cap 0.08
    assert _hf(spec, batch=1, attention_decode_efficiency=low, **HEADS).attention_decode == pytest.approx(0.05)
    high = {128: {1: 0.5, 8: 0.5}}  # 0.5, above the cap 0.08
    assert _hf(spec, batch=1, attention_decode_efficiency=high, **HEADS).attention_decode == pytest.approx(0.08)
    assert _hf(spec, batch=16, attention_decode_efficiency=high, **HEADS).attention_decode == pytest.approx(0.5)


def test_verify_factors_pass_batch_and_tp():
    from planner.runtime.verify import verify_factors

    spec = _spec("meta-llama/Llama-3.1-8B")
    hw = _hw(**HEADS)
    assert verify_factors(hw, spec, "cuda", True, batch=1, tp=2).attention_decode == pytest.approx(0.04)
    assert verify_factors(hw, spec, "cuda", False, batch=1).attention_decode == pytest.approx(0.08)
    assert verify_factors(hw, spec, "cuda", True).attention_decode == 1.0


def _predict(hw, *, batch=1, context=1024, kernels=None, graphs=True):
    from planner.analysis.kv import kv_cache
    from planner.analysis.weights import weight_format
    from planner.runtime.verify import predict_step

    spec = _spec("meta-llama/Llama-3.1-8B")
    fmt, _ = weight_format(spec, "bf16")
    kvc = kv_cache(spec, fmt.act, fmt.act)
    return predict_step(spec, fmt, kvc, hw, batch=batch, context=context, device_type="cuda", graphs=graphs,
                        kernels=kernels)


@pytest.mark.parametrize("kernels", [1000, 2345])
def test_predict_step_grows_by_kernels_times_graph_node(kernels):
    a = _predict(_hw(), kernels=kernels)
    b = _predict(_hw(graph_node_overhead="1.8 us"), kernels=kernels)
    added = kernels * 1.8e-6  # 1.8 ms / 4.221 ms
    assert b.kernels == a.kernels == kernels
    assert b.cost.ideal_s == a.cost.ideal_s
    assert b.cost.expected_s - a.cost.expected_s == pytest.approx(added, rel=1e-9)
    assert b.cost.parts["kernel launches"] - a.cost.parts["kernel launches"] == pytest.approx(added, rel=1e-9)
    # the per-kind split shares the launches out, so its total grows by the same
    assert sum(b.by_kind.values()) - sum(a.by_kind.values()) == pytest.approx(added, rel=1e-9)


def test_predict_step_without_kernels_uses_the_trace_count():
    a = _predict(_hw())
    b = _predict(_hw(graph_node_overhead="1 us"))
    assert a.kernels == a.trace_kernels > 0
    assert b.cost.expected_s - a.cost.expected_s == pytest.approx(a.trace_kernels * 1e-6, rel=1e-9)


def test_predict_step_eager_ignores_graph_node():
    a = _predict(_hw(), kernels=1000, graphs=False)
    b = _predict(_hw(graph_node_overhead="1.8 us"), kernels=1000, graphs=False)
    assert b.cost.expected_s == pytest.approx(a.cost.expected_s, rel=1e-12)


def test_predict_step_attention_at_the_per_head_rate():
    """Llama-3.1-8B, batch 1, 4096 cached tokens, bf16: the KV read is 32 layers × 2 (K, V) × 8 heads ×
    128 × 2 bytes × 4096 = 536,870,912 bytes; at 8 programs × 42 GB/s = 336 GB/s that is 1.598 ms (at
    4.2 TB/s it would be 0.128 ms). The attention kind's expected time is that, give or take the query,
    output and new token's few kB (and no launch share: no graph_node_overhead, one launch per replay)."""
    kv = 32 * 2 * 8 * 128 * 2 * 4096
    p = _predict(_hw(**HEADS), context=4096, kernels=1000)
    assert p.factors.attention_decode == pytest.approx(0.08)
    launch_share = 5e-6 * 1000 / max(p.trace_kernels, 1)  # at most: one 5 µs launch split by kernel share
    assert p.by_kind["attention"] == pytest.approx(kv / 336e9, rel=0.02, abs=launch_share)
    q = _predict(_hw(), context=4096, kernels=1000)
    assert q.by_kind["attention"] == pytest.approx(kv / 4.2e12, rel=0.02, abs=launch_share)


# ---- runtime/calibrate.py: the profile it writes ------------------------------------------------------


@pytest.fixture
def rc():
    pytest.importorskip("torch", reason="the calibration module measures with torch")
    import planner.runtime.calibrate as rc

    return rc


def _cal(rc, **kw):
    base = dict(device_type="cuda", device_name="Test GPU", copy_bytes_per_s=4.0e12, read_bytes_per_s=None,
                matmul_flops_per_s={"bf16": 7.0e14}, launch_s=4.5e-6, memory_bytes=141 * 10**9, threads=None,
                seconds=1.0, details={"tiny_step_kernels": 123, "buffer_bytes": 2**30, "gemm_sizes": {"bf16": 8192}})
    base.update(kw)
    return rc.Calibration(**base)


def _source_lines(data, prefix):
    return [s for s in data["source"] if s.startswith(prefix)]


def test_calibration_profile_writes_both_terms(rc):
    cal = _cal(rc, graph_node_s=0.98765e-6, attention_head_bytes_per_s=41.8765e9)
    data = rc.calibration_profile(cal)
    # 3 significant digits: 0.988 µs, 41.9 GB/s
    assert data["graph_node_overhead"] == "988 ns"
    assert data["attention_decode_head_bandwidth"] == "41.9 GB/s"
    assert len(_source_lines(data, "graph_node_overhead:")) == 1
    assert "123" in _source_lines(data, "graph_node_overhead:")[0]  # the tiny step's kernel count
    assert len(_source_lines(data, "attention_decode_head_bandwidth:")) == 1
    p = hp.profile_from_data(data, where="calibrated")
    assert p.graph_node_s == pytest.approx(0.988e-6, rel=1e-9)
    assert p.attention_head_bytes_per_s == pytest.approx(41.9e9, rel=1e-9)
    # and within rounding of what was measured
    assert p.graph_node_s == pytest.approx(cal.graph_node_s, rel=5e-3)
    assert p.attention_head_bytes_per_s == pytest.approx(cal.attention_head_bytes_per_s, rel=5e-3)


def test_calibration_profile_omits_unmeasured_terms(rc):
    data = rc.calibration_profile(_cal(rc))
    assert "graph_node_overhead" not in data and "attention_decode_head_bandwidth" not in data
    assert not _source_lines(data, "graph_node_overhead:")
    assert not _source_lines(data, "attention_decode_head_bandwidth:")
    p = hp.profile_from_data(data, where="calibrated")
    assert p.graph_node_s is None and p.attention_head_bytes_per_s is None


def test_calibration_profile_one_term_alone(rc):
    data = rc.calibration_profile(_cal(rc, attention_head_bytes_per_s=3.0e10))
    assert "graph_node_overhead" not in data and not _source_lines(data, "graph_node_overhead:")
    p = hp.profile_from_data(data, where="calibrated")
    assert p.graph_node_s is None and p.attention_head_bytes_per_s == pytest.approx(30e9)
    data = rc.calibration_profile(_cal(rc, graph_node_s=2.0e-6))
    assert "attention_decode_head_bandwidth" not in data
    p = hp.profile_from_data(data, where="calibrated")
    assert p.graph_node_s == pytest.approx(2e-6) and p.attention_head_bytes_per_s is None


def test_calibration_profile_zero_graph_node_is_written(rc):
    data = rc.calibration_profile(_cal(rc, graph_node_s=0.0))
    assert "graph_node_overhead" in data
    assert hp.profile_from_data(data, where="calibrated").graph_node_s == 0.0


def test_calibrated_profile_saved_and_used_by_verify(rc):
    """The written data saved as the user's 'calibrated' profile loads back and prices verify's step:
    Llama-3.1-8B batch 1 at 4 TB/s (the copy rate) × 1.0 and 40 GB/s per head → 8 × 40 / 4000 = 0.08."""
    from planner.runtime.verify import verify_factors

    cal = _cal(rc, graph_node_s=1.5e-6, attention_head_bytes_per_s=40e9)
    hp.save_user_profile(rc.calibration_profile(cal), "calibrated")
    hw = hp.load_profile("calibrated")
    assert hw.memory_bandwidth_bytes_per_s == pytest.approx(4.0e12)
    assert hw.graph_node_s == pytest.approx(1.5e-6) and hw.attention_head_bytes_per_s == pytest.approx(40e9)
    f = verify_factors(hw, _spec("meta-llama/Llama-3.1-8B"), "cuda", True, batch=1)
    assert f.graph_node_s == pytest.approx(1.5e-6)
    assert f.attention_decode == pytest.approx(0.08)


def test_calibration_to_dict_carries_the_terms(rc):
    d = _cal(rc, graph_node_s=1e-6, attention_head_bytes_per_s=4e10).to_dict()
    assert d["graph_node_s"] == 1e-6 and d["attention_head_bytes_per_s"] == 4e10
    d = _cal(rc).to_dict()
    assert d["graph_node_s"] is None and d["attention_head_bytes_per_s"] is None


def test_step_cost_launched_op_by_op_pays_no_graph_nodes():
    """``graph=False`` (a step the engine does not replay): the node term is not charged."""
    from planner.hardware.expected import step_cost

    hw1 = _hw(graph_node_overhead="1.8 us")
    f1 = _factors("torch-cuda-graphs", graph_node_overhead="1.8 us")
    replay = step_cost([MATMUL, NORM], hw1, "bf16", f1, decode=True, sequences=1, rows=1, kernels=1000)
    by_op = step_cost([MATMUL, NORM], hw1, "bf16", f1, decode=True, sequences=1, rows=1, kernels=1000, graph=False)
    assert replay.expected_s - by_op.expected_s == pytest.approx(1000 * 1.8e-6, rel=1e-9)


@pytest.mark.parametrize("tp, per_rank", [(3, 3), (16, 1)])
def test_attention_cap_counts_the_busiest_ranks_heads(tp, per_rank):
    """8 KV heads over 3 ranks: the busiest holds 3; over 16 ranks each holds (a copy of) one."""
    f = _hf(_spec("meta-llama/Llama-3.1-8B"), batch=1, tp=tp, **HEADS)
    assert f.attention_decode == pytest.approx(per_rank * 42e9 / 4.2e12, rel=1e-9)


@pytest.mark.parametrize("model_id, device, noted", [
    ("google/gemma-2-9b", "cuda", True),  # soft-capped logits: written out
    ("openai/gpt-oss-20b", "cuda", True),  # sinks: written out
    ("meta-llama/Llama-3.1-8B", "cuda", False),  # SDPA
    ("google/gemma-2-9b", "cpu", False),  # the H200 figures say nothing of a CPU
    ("tiiuae/falcon-mamba-7b", "cuda", False),  # no softmax attention
])
def test_written_attention_note(model_id, device, noted):
    from planner.runtime.verify import written_attention_note

    note = written_attention_note(_spec(model_id), device)
    assert (note is not None) == noted
    if noted:
        assert "written out" in note and "h200-2026-12-04" in note
