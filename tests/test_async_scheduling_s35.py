"""vLLM's async scheduling (the default from v0.14.0): the engine's per-step host work runs beside the
device's step, so a step pays only what of it outlasts the device time. Hand-computed step costs, the
engine profiles' flag, serve's option and its refusals, plan's pipeline step, and the benchmark's
version rule."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner.analysis.errors import OptionError
from planner.analysis.trace import Op
from planner.hardware.deploy import pipeline_step_s
from planner.hardware.engine import load_engine
from planner.hardware.expected import Factors, factors_for, step_cost
from planner.hardware.profiles import HardwareError, load_profile
from planner.hardware.serve import serve
from tests.clirun import run
from tests.test_serve import HW, _model

ROOT = Path(__file__).resolve().parent.parent


def _gemv(weight_bytes: int) -> Op:
    """A memory-bound matmul: 1 ms per GB at the test device's 1 TB/s."""
    return Op("gate_proj", "matmul", "ffn", 0, flops=2 * weight_bytes // 2, weight_bytes=weight_bytes)


def test_step_overhead_longer_than_the_device_step_costs_only_its_excess():
    # device 1 ms (1 GB at 1 TB/s); host 0.5 ms + 10 sequences x 100 us = 1.5 ms: 0.5 ms shows
    f = Factors(step_overhead_s=0.5e-3, step_overhead_per_sequence_s=100e-6)
    sync = step_cost([_gemv(10**9)], HW(), "bf16", f, decode=True, sequences=10)
    assert sync.expected_s == pytest.approx(2.5e-3)
    assert sync.parts["step overhead"] == pytest.approx(1.5e-3)
    a = step_cost([_gemv(10**9)], HW(), "bf16", replace(f, async_scheduling=True), decode=True, sequences=10)
    assert a.parts["step overhead"] == pytest.approx(0.5e-3)
    assert a.expected_s == pytest.approx(1.5e-3)  # max(device 1 ms, host 1.5 ms)
    assert sum(a.parts.values()) == pytest.approx(a.expected_s - a.ideal_s)


def test_step_overhead_shorter_than_the_device_step_is_hidden():
    # device 4 ms; host 0.5 ms + 2 x 100 us = 0.7 ms: hidden whole
    f = Factors(step_overhead_s=0.5e-3, step_overhead_per_sequence_s=100e-6, async_scheduling=True)
    c = step_cost([_gemv(4 * 10**9)], HW(), "bf16", f, decode=True, sequences=2)
    assert c.parts["step overhead"] == 0.0
    assert c.expected_s == pytest.approx(4e-3)


def test_the_device_time_that_hides_it_includes_all_reduce_and_op_floors():
    # device: 0.1 ms of GEMV + 10 all-reduce calls x 50 us latency + 1 MB / 100 GB/s = 0.61 ms; host 1 ms
    f = Factors(step_overhead_s=1e-3, allreduce_latency_s=50e-6, async_scheduling=True)
    c = step_cost([_gemv(10**8)], HW(), "bf16", f, decode=True, sequences=1, allreduce_bytes=10**6,
                  allreduce_calls=10)
    assert c.parts["all-reduce latency"] == pytest.approx(0.5e-3)
    assert c.parts["step overhead"] == pytest.approx(1e-3 - 0.61e-3)
    assert c.expected_s == pytest.approx(1e-3)
    # a per-op floor (min_op_time) lengthens the device step: 0.1 ms GEMV -> 0.3 ms floor
    g = replace(f, min_op_time_s=0.3e-3)
    d = step_cost([_gemv(10**8)], HW(), "bf16", g, decode=True, sequences=1, allreduce_bytes=10**6,
                  allreduce_calls=10)
    assert d.parts["kernel launches"] == pytest.approx(0.2e-3)
    assert d.parts["step overhead"] == pytest.approx(1e-3 - 0.81e-3)
    assert d.expected_s == pytest.approx(1e-3)


def test_engine_profiles_carry_the_flag_where_the_engine_has_the_setting():
    assert load_engine("vllm").async_scheduling is True  # v0.14.0's default
    assert load_engine("vllm-v0").async_scheduling is False  # V0 never had it (inherits vllm, overrides)
    assert load_engine("sglang").async_scheduling is None
    assert load_engine("trtllm").async_scheduling is None
    hw = load_profile("h100-sxm")
    assert factors_for(hw, load_engine("vllm")).async_scheduling is True
    assert factors_for(hw, load_engine("sglang")).async_scheduling is False


def test_a_quoted_flag_in_an_engine_profile_is_refused(tmp_path, monkeypatch):
    from tests.test_published_fit import _engines_copy

    src = (ROOT / "profiles" / "engines" / "vllm.yaml").read_text()
    assert "  async_scheduling: true\n" in src
    _engines_copy(tmp_path, monkeypatch, vllm=src.replace("  async_scheduling: true\n", '  async_scheduling: "false"\n'))
    with pytest.raises(HardwareError, match="scheduler.async_scheduling.*not true or false"):
        load_engine("vllm")


def _tpot(**kw) -> float:
    kw = {"concurrency": 8, **kw}
    d = serve(_model("llama-3.1-8b"), load_profile("h100-sxm"), input_len=1024, output_len=128, **kw)
    return d.result.expected.tpot_s, d


def test_serve_hides_vllms_step_overhead_by_default_and_not_when_asked():
    # one request: it reaches an idle engine, so async scheduling's one-step wait for a new request
    # (tests/test_lookahead_s40.py) does not enter, and the difference is the step overhead alone
    on, d_on = _tpot(concurrency=1)
    off, d_off = _tpot(async_scheduling=False, concurrency=1)
    assert d_on.factors.async_scheduling and not d_off.factors.async_scheduling
    f = d_off.factors
    host = f.step_overhead_s + f.step_overhead_per_sequence_s  # 1 sequence decoding
    # the 8B model's decode step on an H100 outlasts the host's 0.5 ms: async hides it whole
    assert off - on == pytest.approx(host, rel=0.02)
    assert any("async scheduling" in n for n in d_on.notes)
    assert not any("async scheduling" in n for n in d_off.notes)


def test_serve_refuses_the_option_where_the_engine_has_no_such_setting_and_with_multi_step():
    with pytest.raises(OptionError, match="SGLang has no such setting"):
        _tpot(engine="sglang", async_scheduling=True)
    with pytest.raises(OptionError, match="num-scheduler-steps"):
        _tpot(async_scheduling=True, num_scheduler_steps=4)
    # multi-step alone is a V0 what-if: synchronous
    _, d = _tpot(num_scheduler_steps=4)
    assert d.factors.async_scheduling is False


def test_cli_option_and_its_error_line():
    r = run("serve", "llama-3.1-8b", "--hardware", "h100-sxm", "--no-async-scheduling", "--json")
    assert r.code == 0, r.err
    assert r.json["settings"]["async_scheduling"] is False
    assert r.json["factors"]["async_scheduling"] is False
    assert run("serve", "llama-3.1-8b", "--hardware", "h100-sxm", "--json").json["settings"]["async_scheduling"] is True
    r = run("serve", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "trtllm", "--async-scheduling")
    r.assert_error("--async-scheduling: TensorRT-LLM has no such setting")


def test_plan_pipeline_step_hides_the_overhead_without_stages_only():
    f = Factors(step_overhead_s=1e-3, step_overhead_per_sequence_s=0.0, async_scheduling=True)
    it, _, over = pipeline_step_s([0.4e-3], 1, f, 4)  # one stage: host 1 ms beside a 0.4 ms step
    assert over == pytest.approx(0.6e-3) and it == pytest.approx(1e-3)
    it2, _, over2 = pipeline_step_s([0.4e-3, 0.4e-3], 1, f, 4)  # two stages: vLLM turns it off
    assert over2 == pytest.approx(1e-3) and it2 == pytest.approx(0.8e-3 + 1e-3)


@pytest.fixture(scope="module")
def published():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import published as mod
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return mod


@pytest.mark.parametrize("version, date, expected", [
    ("0.15.1", "2026-03-01", True),
    ("0.14.0", None, True),
    ("0.13.0", "2026-05-01", False),  # a release number decides, whatever the date
    ("0.11.0", "2026-01-06", False),
    ("main @ a89015c6df (July 2026)", "2026-07-27", True),
    ("None", None, False),
    ("not stated (April 2025)", "2025-04-01", False),
    ("v0.11 (V1 engine), December 2025", "2025-12-17", False),
    ("commit abc", "not stated in the stored copy", False),
])
def test_benchmark_runs_vllm_entries_async_from_v0_14(published, version, date, expected):
    entry = {"engine": "vllm", "engine_version": version, "source": {"date": date}}
    assert published.vllm_async_scheduling(entry) is expected


def _entry(**settings) -> dict:
    """A vLLM 0.11 TPOT entry (synchronous by its release) of Llama-3.1-8B on one H100, one client."""
    return {"id": "t", "quantity": "tpot_s", "value": 0.01, "engine": "vllm", "engine_version": "0.11.0",
            "model": "meta-llama/Llama-3.1-8B", "model_config": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm",
            "gpus": 1, "tp": 1, "source": {"date": "2026-01-06"},
            "settings": {"arrival": "together", "client": "in-process", "input_len": 512, "output_len": 64,
                         "concurrency": 1, **settings}}


def test_an_entrys_own_setting_overrides_its_releases_default(published):
    sync = published.Point(_entry())
    assert sync.base.async_scheduling is False  # 0.11: synchronous by default
    own = published.Point(_entry(async_scheduling=True))  # a 0.11 run that passed --async-scheduling
    assert own.base.async_scheduling is True
    f = sync.base
    # one sequence of an 8B model on an H100: the device step (~6 ms) hides the host's 0.5 ms + 16 us whole
    assert sync.predict() - own.predict() == pytest.approx(f.step_overhead_s + f.step_overhead_per_sequence_s, rel=0.05)
    with pytest.raises(ValueError, match="settings.async_scheduling"):
        published.Point(_entry(async_scheduling="yes"))
    bad = _entry(async_scheduling=True)
    bad["engine"] = "sglang"
    with pytest.raises(ValueError, match="settings.async_scheduling"):
        published.Point(bad)


README_PLAN = ("plan", "llama-3.1-70b", "--gpu", "h100-sxm", "--max-gpus", "64", "--rate", "20", "--input-len", "3000",
               "--output-len", "500", "--ttft-p90", "1.0", "--tpot-p90", "0.04", "--json")


def test_plan_takes_the_option_and_it_changes_the_cheapest_layout():
    on = run(*README_PLAN).json
    off = run(*README_PLAN, "--no-async-scheduling").json
    assert on["search"]["async_scheduling"] is True and off["search"]["async_scheduling"] is False
    assert any(n.startswith("async scheduling") for n in on["notes"])
    assert not any(n.startswith("async scheduling") for n in off["notes"])
    # the README's scenario: six TP8 replicas meet the target once a TP8 decode step no longer pays the host's
    # step overhead; synchronous, the cheapest is the 56-GPU disaggregated pair of pools
    assert on["cheapest"]["gpus"] < off["cheapest"]["gpus"]
    assert on["cheapest"]["tpot_p90_s"] <= 0.04 and off["cheapest"]["tpot_p90_s"] <= 0.04


def test_plan_refuses_the_option_where_the_engine_has_none():
    run("plan", "llama-3.1-8b", "--rate", "1", "--max-gpus", "2", "--engine", "trtllm",
        "--no-async-scheduling").assert_error("--no-async-scheduling: TensorRT-LLM has no such setting")
