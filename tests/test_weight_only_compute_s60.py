"""Session 60: a weight-only kernel's own compute-bound rate (``timing.weight_only_compute``), priced per SM-clock of
the device (``sm_count`` × ``boost_clock`` of its hardware profile), for vLLM 0.5.3-0.7's Marlin on AWQ checkpoints."""

from __future__ import annotations

import math

import pytest

from planner.analysis.errors import HardwareError
from planner.analysis.spec import QuantSpec
from planner.analysis.trace import Op
from planner.hardware import units
from planner.hardware.engine import _weight_only_compute, load_engine
from planner.hardware.expected import Factors, factors_for, for_weights, ops_time_s
from planner.hardware.profiles import load_profile, profile_from_data


# ---- the clock and the SM count of a hardware profile ---------------------------------------------------------------

@pytest.mark.parametrize("text, hz", [("1830 MHz", 1.83e9), ("1.41 GHz", 1.41e9), ("1410MHz", 1.41e9), ("2 GHz", 2e9)])
def test_a_clock_parses_exactly_and_writes_back(text, hz):
    assert units.parse_frequency(text) == hz
    assert units.parse_frequency(units.format_frequency(hz)) == hz


@pytest.mark.parametrize("bad", ["1830", "1830 THz", "-5 MHz", "0 MHz", "20 GHz", "50 MHz", "fast", True, None, [1]])
def test_a_bad_clock_is_refused_naming_the_field(bad):
    with pytest.raises(HardwareError, match="boost_clock"):
        units.parse_frequency(bad)


def _user_profile(**extra):
    data = {"name": "sm-test", "memory": "80 GiB", "memory_bandwidth": "2 TB/s", "peak_flops": {"bf16": "312 TFLOP/s"}}
    data.update(extra)
    return profile_from_data(data, where="sm-test.yaml")


def test_a_profile_carries_its_sms_and_clock_through_json_and_yaml():
    p = _user_profile(sm_count=108, boost_clock="1410 MHz")
    assert (p.sm_count, p.boost_clock_hz) == (108, 1.41e9)
    assert p.to_dict()["sm_count"] == 108 and p.to_dict()["boost_clock_hz"] == 1.41e9
    back = profile_from_data(p.to_yaml_data(), where="sm-test.yaml")
    assert (back.sm_count, back.boost_clock_hz) == (108, 1.41e9)
    bare = _user_profile()
    assert bare.sm_count is None and bare.boost_clock_hz is None and "sm_count" not in bare.to_yaml_data()


@pytest.mark.parametrize("bad", [0, -3, 1.5, "108", True])
def test_a_bad_sm_count_is_refused(bad):
    with pytest.raises(HardwareError, match="sm_count"):
        _user_profile(sm_count=bad)


@pytest.mark.parametrize("name, sms, mhz", [("a100-80gb", 108, 1410), ("a100-40gb", 108, 1410), ("h100-sxm", 132, 1830),
                                           ("h200-sxm", 132, 1830), ("h100-pcie", 114, 1620)])
def test_the_shipped_clock_is_the_one_the_datasheet_peak_is_quoted_at(name, sms, mhz):
    # the dense 16-bit tensor FLOP per SM per clock: GA100 1024 FMA, GH100 2048 FMA (the whitepapers)
    p = load_profile(name)
    per_sm_clock = 2048 if name.startswith("a100") else 4096
    assert (p.sm_count, p.boost_clock_hz) == (sms, mhz * 1e6)
    assert math.isclose(p.sm_count * p.boost_clock_hz * per_sm_clock, p.peak_flops_per_s["bf16"], rel_tol=0.002)


# ---- the engine profile's term -------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, what", [
    ({"int3": {"flops_per_sm_clock": 929, "methods": ["awq"]}}, "unknown weight format"),
    ({"int4": {"flops_per_sm_clock": 929}}, "must give flops_per_sm_clock and methods"),
    ({"int4": {"flops_per_sm_clock": 0, "methods": ["awq"]}}, "is not a number"),
    ({"int4": {"flops_per_sm_clock": "929", "methods": ["awq"]}}, "is not a number"),
    ({"int4": {"flops_per_sm_clock": 929, "methods": ["marlin"]}}, "methods must be a list"),
    ({"int4": {"flops_per_sm_clock": 929, "methods": "awq"}}, "methods must be a list"),
    (["int4"], "must map a weight format"),
])
def test_a_bad_weight_only_compute_entry_is_refused(raw, what):
    with pytest.raises(HardwareError, match=what):
        _weight_only_compute(raw, "engine profile x.yaml")


def test_vllm_v0_prices_marlin_per_sm_clock_on_awq_only():
    v0 = load_engine("vllm-v0")
    assert v0.weight_only_compute == {"int4": (929.0, ("awq",))}
    h100 = factors_for(load_profile("h100-sxm"), v0)
    assert h100.weight_only_compute_by_method == {"int4:awq": 929 * 132 * 1.83e9}  # 224 TFLOP/s, 23 % of the peak
    assert "132 SMs x 1830 MHz" in h100.sources["weight_only_compute"]
    # a device without the two datasheet figures: said, not silently skipped
    l4 = factors_for(load_profile("l4"), v0)
    assert l4.weight_only_compute_by_method == {} and "not applied on l4" in l4.sources["weight_only_compute"]
    # 0.2-0.5 (AWQ's own GEMM before awq_marlin) and V1: not priced
    assert factors_for(load_profile("h100-sxm"), load_engine("vllm-v0-early")).weight_only_compute_by_method == {}
    assert factors_for(load_profile("h100-sxm"), load_engine("vllm")).weight_only_compute_by_method == {}


class _Fmt:
    def __init__(self, quant):
        self.quant = quant


def test_the_rate_follows_the_checkpoint_method_and_its_targets():
    f = Factors(weight_only_compute_by_method={"int4:awq": 2e14})
    awq = QuantSpec("awq", 4, group_size=128)
    assert for_weights(f, _Fmt(awq), 4).weight_only_flops_per_s == 2e14
    assert for_weights(f, _Fmt(QuantSpec("gptq", 4, group_size=128)), 4).weight_only_flops_per_s == 0.0  # Machete on Hopper
    assert for_weights(f, _Fmt(QuantSpec("awq", 4, targets=("expert",))), 4).weight_only_flops_per_s == 0.0  # dense 16-bit
    assert for_weights(f, _Fmt(awq), None).weight_only_flops_per_s == 0.0  # not weight-only on this device
    assert for_weights(f, _Fmt(None), None) is f


# ---- the arithmetic, worked by hand ---------------------------------------------------------------------------------

PEAK, BW = 1e15, 1e12  # FLOP/s and bytes/s; IDEAL-like factors below (compute 1, bandwidth 1, max of the two)
F = Factors(gemm_ridge_exponent=math.inf, weight_only_flops_per_s=2e14)


def test_a_compute_bound_matmul_takes_the_kernels_rate():
    # 4096 rows x 8192 x 8192: 2 * 4096 * 8192 * 8192 = 5.5e11 FLOP; int4 weights 8192 * 8192 / 2 = 33.6 MB
    op = Op("o_proj", "matmul", "attention", 0, flops=2 * 4096 * 8192 * 8192, weight_bytes=8192 * 8192 // 2)
    # the roofline: max(5.5e11 / 1e15, 3.4e7 / 1e12) = 0.550 ms; Marlin's 2e14 FLOP/s: 2.75 ms
    assert ops_time_s([op], PEAK, BW, F, decode=False, weight_only_bits=4) == pytest.approx(op.flops / 2e14)
    # no weight-only step (16-bit weights): the roofline
    assert ops_time_s([op], PEAK, BW, F, decode=False) == pytest.approx(op.flops / PEAK)


def test_a_memory_bound_matmul_and_other_ops_keep_their_time():
    # one decode row: 2 * 8192 * 8192 = 1.3e8 FLOP (0.67 us at the kernel's rate), weights 33.6 MB (33.6 us)
    gemv = Op("o_proj", "matmul", "attention", 0, flops=2 * 8192 * 8192, weight_bytes=8192 * 8192 // 2)
    assert ops_time_s([gemv], PEAK, BW, F, decode=True, weight_only_bits=4) == pytest.approx(gemv.weight_bytes / BW)
    # routed experts and attention run other kernels: untouched however many FLOPs
    experts = Op("experts", "experts", "ffn", 0, flops=10**12, weight_bytes=10**6)
    attn = Op("attention", "attention", "attention", 0, flops=10**12, act_read_bytes=10**6)
    for op in (experts, attn):
        assert ops_time_s([op], PEAK, BW, F, decode=False, weight_only_bits=4) == pytest.approx(op.flops / PEAK)
