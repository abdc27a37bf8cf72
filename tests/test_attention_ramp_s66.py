"""The prompt attention kernel's ramp (``hardware.expected.prefill_attention_ramp``, ``_device.yaml``
attention_prefill_tiles_half / attention_prefill_keys_half): its arithmetic by hand, where a step's parts put
it, how serve's prompt step counts a step's tiles over its pieces, and the device defaults' validation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.parallel import tp_plan
from planner.analysis.trace import Op
from planner.hardware.engine import HardwareError, load_engine
from planner.hardware.expected import Factors, factors_for, prefill_attention_ramp, step_cost
from planner.hardware.profiles import load_profile
from planner.hardware.serve import StepModel
from tests.test_serve import HW, _model

RAMP = Factors(attention_prefill=0.5, attention_prefill_tiles_half=256.0, attention_prefill_keys_half=1024.0)


def test_ramp_by_hand():
    # 256 tiles at half-point 256: 1/2; 1,024 keys at half-point 1,024: 1/2
    assert prefill_attention_ramp(RAMP, (256, 1024)) == pytest.approx(0.25)
    # 768 tiles, 3,072 keys: 3/4 x 3/4
    assert prefill_attention_ramp(RAMP, (768, 3072)) == pytest.approx(0.5625)
    assert prefill_attention_ramp(RAMP, None) == 1.0  # no work given: no ramp
    assert prefill_attention_ramp(Factors(), (1, 1)) == 1.0  # both half-points 0: not applied
    assert prefill_attention_ramp(replace(RAMP, attention_prefill_keys_half=0.0), (256, 10)) == pytest.approx(0.5)


def test_step_cost_puts_the_ramp_in_the_attention_kernels_part():
    """A compute-bound prompt attention op: 10 TFLOP at the test device's 1 PFLOP/s is 10 ms ideal; at
    attention_prefill 0.5 it takes 20 ms, and with 256 tiles of 1,024 keys (ramp 1/4) 80 ms, the 60 ms more
    in the attention-kernel part."""
    op = Op("attention", "attention", "attention", 0, flops=10**13, act_read_bytes=10**6)
    work = {id(op): (256, 1024)}
    c = step_cost([op], HW(), "bf16", RAMP, decode=False, sequences=1, attention_work=work)
    flat = step_cost([op], HW(), "bf16", RAMP, decode=False, sequences=1)
    assert c.ideal_s == pytest.approx(10e-3) and flat.expected_s == pytest.approx(20e-3)
    assert c.expected_s == pytest.approx(80e-3)
    assert c.parts["attention kernels"] - flat.parts["attention kernels"] == pytest.approx(60e-3)
    assert sum(c.parts.values()) == pytest.approx(c.expected_s - c.ideal_s)
    # a decode step's attention is priced by bandwidth: the ramp is a prompt kernel's
    d = step_cost([op], HW(), "bf16", RAMP, decode=True, sequences=1, attention_work=work)
    assert d.expected_s == pytest.approx(step_cost([op], HW(), "bf16", RAMP, decode=True, sequences=1).expected_s)


def _llama_step(f: Factors, tp: int = 1) -> StepModel:
    spec = _model("llama-3.1-8b")
    return StepModel(analyze(spec, Options(context=16384)), load_profile("h100-sxm"), tp_plan(spec, tp), f)


def test_prompt_step_counts_tiles_over_all_pieces():
    """Llama-3.1-8B has 32 query heads (8 a rank at TP4). A step of one 8,192-token prompt and three decode pieces
    on 100 cached tokens runs 32 x (64 + 3) = 2,144 tiles at TP1; the prompt piece's 8,192 keys then give a ramp of
    2,144 / 2,400 x 8,192 / 9,216, which the prompt's attention time carries beside the same step without the ramp."""
    base = Factors(attention_prefill=0.5)
    with_ramp, without = _llama_step(replace(base, attention_prefill_tiles_half=256.0,
                                             attention_prefill_keys_half=1024.0)), _llama_step(base)
    assert with_ramp.query_heads == 32 and _llama_step(base, tp=4).query_heads == 8
    pieces = {(8192, 0): 1, (1, 100): 3}
    r = with_ramp.prefill(pieces).parts["attention kernels"]
    flat = without.prefill(pieces).parts["attention kernels"]
    # the prompt piece dominates the attention time; its compute-bound time grows by 1 / ramp
    ramp = 2144 / (2144 + 256) * 8192 / (8192 + 1024)
    prompt = [g for g in without._part(True, 1, 8192, 0)]
    peak = load_profile("h100-sxm").peak_flops_for("bf16")
    prompt_s = sum(g.count * g.op.flops for g in prompt) / (peak * 0.5)
    assert r - flat == pytest.approx(prompt_s * (1 / ramp - 1), rel=0.02)
    # one 512-token prompt alone: 32 x 4 = 128 tiles, 512 keys: a ramp of 1/3 x 1/3 -- nine times the flat time
    one = [g for g in without._part(True, 1, 512, 0)]
    one_s = sum(g.count * g.op.flops for g in one) / (peak * 0.5)
    assert (with_ramp.prefill({(512, 0): 1}).parts["attention kernels"]
            - without.prefill({(512, 0): 1}).parts["attention kernels"]) == pytest.approx(one_s * 8, rel=0.02)


def test_device_defaults_scale_the_keys_half_point_by_the_per_sm_rate_and_refuse_bad_values(monkeypatch):
    """_device.yaml gives 1,024 keys at 7.495 TFLOP/s an SM (H100 SXM: 989.4 TFLOP/s over 132 SMs); the A100's SM runs
    312 / 108 = 2.889 TFLOP/s: 1,024 x 2.889 / 7.495 = 394.7 keys. A profile without an SM count takes no ramp, nor does
    the ideal engine; the tiles term is off by default."""
    from planner.hardware import engine as engine_mod
    from planner.hardware.expected import device_defaults

    h100 = factors_for(load_profile("h100-sxm"), load_engine("vllm"))
    assert h100.attention_prefill_keys_half == pytest.approx(1024 * (989.4e12 / 132) / 7.495e12)
    assert h100.attention_prefill_tiles_half == 0.0
    a100 = factors_for(load_profile("a100-80gb"), load_engine("sglang"))
    assert a100.attention_prefill_keys_half == pytest.approx(1024 * (312e12 / 108) / 7.495e12)
    assert load_profile("mi300x").sm_count is None
    assert factors_for(load_profile("mi300x"), load_engine("vllm")).attention_prefill_keys_half == 0.0
    ideal = factors_for(load_profile("h100-sxm"), load_engine("ideal"))
    assert ideal.attention_prefill_tiles_half == 0.0 and ideal.attention_prefill_keys_half == 0.0
    device = engine_mod._read_yaml("_device")
    # without the per-SM rate the half-point is given at, there is nothing to scale by: no ramp
    no_rate = {k: v for k, v in device.items() if k != "attention_prefill_keys_half_at"}
    vllm = load_engine("vllm")
    monkeypatch.setattr(engine_mod, "_read_yaml", lambda name: no_rate)
    assert device_defaults()["attention_prefill_keys_half_at"] == 0.0
    assert factors_for(load_profile("h100-sxm"), vllm, defaults=device_defaults()).attention_prefill_keys_half == 0.0
    for field, bads in (("attention_prefill_tiles_half", (-1, True, "many", float("nan"))),
                        ("attention_prefill_keys_half", (-1, True, "many", float("nan"))),
                        ("attention_prefill_keys_half_at", ("fast", -1, "3 GB/s"))):
        for bad in bads:
            monkeypatch.setattr(engine_mod, "_read_yaml", lambda name, bad=bad, field=field: {**device, field: bad})
            with pytest.raises(HardwareError, match=field):
                device_defaults()
