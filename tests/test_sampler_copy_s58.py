"""vLLM 0.2.6-0.4.x's sampler copied every sequence's prompt and output token lists into tensors each step
(``timing.sampler_token_cost``, ``Factors.sampler_token_s``): the host time it adds to a step by hand, serve's
decode and prompt steps, plan's step, the engine profiles' figure and its refusals, and the benchmark's version
rule."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner.analysis.trace import Op
from planner.hardware.deploy import pipeline_step_s
from planner.hardware.engine import HardwareError, load_engine
from planner.hardware.expected import Factors, factors_for, host_step_overhead_s, step_cost
from planner.hardware.profiles import load_profile
from planner.hardware.serve import StepModel
from tests.test_published_fit import _engines_copy, pub
from tests.test_serve import HW, _model

ROOT = Path(__file__).resolve().parent.parent


def test_host_overhead_adds_each_held_token_by_hand():
    # 1 ms + 4 sequences x 10 us + 10,000 held tokens x 60 ns = 1.64 ms
    f = Factors(step_overhead_s=1e-3, step_overhead_per_sequence_s=10e-6, sampler_token_s=60e-9)
    assert host_step_overhead_s(f, 4, 0.0, held_tokens=10_000) == pytest.approx(1.64e-3)
    assert host_step_overhead_s(f, 4, 0.0) == pytest.approx(1.04e-3)  # no tokens given: none copied
    # scheduled asynchronously, beside a 1.5 ms device step: only the 0.14 ms that outlasts it
    assert host_step_overhead_s(replace(f, async_scheduling=True), 4, 1.5e-3,
                                held_tokens=10_000) == pytest.approx(0.14e-3)


def test_step_cost_puts_the_copy_in_the_step_overhead():
    gemv = Op("gate_proj", "matmul", "ffn", 0, flops=10**9, weight_bytes=10**9)  # 1 ms at the test device's 1 TB/s
    f = Factors(step_overhead_s=0.5e-3, sampler_token_s=100e-9)
    c = step_cost([gemv], HW(), "bf16", f, decode=True, sequences=8, held_tokens=8 * 2_000)
    assert c.parts["step overhead"] == pytest.approx(0.5e-3 + 1.6e-3)
    assert c.expected_s == pytest.approx(c.ideal_s + 2.1e-3)
    assert sum(c.parts.values()) == pytest.approx(c.expected_s - c.ideal_s)


def _steps(sampler_token_s: float) -> StepModel:
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan

    hw = load_profile("a100-80gb")
    spec = _model("llama-3.1-8b")
    f = replace(factors_for(hw, load_engine("vllm-v0-early")), sampler_token_s=sampler_token_s)
    return StepModel(analyze(spec, Options(context=8192)), hw, tp_plan(spec, 1), f)


def test_a_decode_step_pays_for_every_token_its_sequences_hold():
    """16 sequences of 3,000 cached tokens each: the step copies 16 x 3,001 tokens (the new one included) at
    60 ns, 2.88 ms, and nothing else moves."""
    on, off = _steps(60e-9), _steps(0.0)
    a, b = on.decode(16, 3000), off.decode(16, 3000)
    assert a.expected_s - b.expected_s == pytest.approx(16 * 3001 * 60e-9)
    assert a.parts["step overhead"] - b.parts["step overhead"] == pytest.approx(16 * 3001 * 60e-9)
    assert a.ideal_s == b.ideal_s
    # twice the context, twice the copy
    assert on.decode(16, 6000).expected_s - off.decode(16, 6000).expected_s == pytest.approx(16 * 6001 * 60e-9)


def test_a_prompt_step_pays_for_its_pieces_tokens():
    # a 1,000-token prompt beside 4 decoding sequences of 500 cached tokens: 1,000 + 4 x 501 tokens held
    on, off = _steps(60e-9), _steps(0.0)
    pieces = {(1000, 0): 1, (1, 500): 4}
    assert on.prefill(pieces).expected_s - off.prefill(pieces).expected_s == pytest.approx(3004 * 60e-9)


def test_plans_step_pays_it_once_per_iteration():
    f = Factors(step_overhead_s=1e-3, step_overhead_per_sequence_s=0.0, sampler_token_s=50e-9)
    it, _, over = pipeline_step_s([2e-3], 1, f, 8, held_tokens=8 * 1000)
    assert over == pytest.approx(1e-3 + 0.4e-3)
    assert it == pytest.approx(2e-3 + 1.4e-3)


def test_only_the_early_v0_profile_copies_tokens():
    assert load_engine("vllm-v0-early").sampler_token_cost_s == pytest.approx(60e-9)
    for name in ("vllm-v0", "vllm", "sglang", "trtllm"):
        assert load_engine(name).sampler_token_cost_s == 0.0
        assert factors_for(load_profile("h100-sxm"), load_engine(name)).sampler_token_s == 0.0


@pytest.mark.parametrize("value, words", [("60", "has no unit"), ("-5 ns", "sampler_token_cost"),
                                          ("fast", "sampler_token_cost")])
def test_a_bad_sampler_token_cost_is_one_error_naming_it(tmp_path, monkeypatch, value, words):
    _engines_copy(tmp_path, monkeypatch,
                  **{"vllm-v0-early": f"inherits: vllm-v0\ntiming: {{sampler_token_cost: '{value}'}}\n"})
    with pytest.raises(HardwareError, match=words):
        load_engine("vllm-v0-early")


@pytest.mark.parametrize("version, want", [
    ("0.2.5", False),  # before SamplingTensors: penalties applied only when set
    ("0.2.6", True), ("0.3.3", True), ("0.4.3", True), ("v0.4.0.post1", True),
    ("0.3", True), ("0.4", True),  # every patch of the minor release copies
    ("0.2", False), ("0.5", False),  # 0.2.0-0.2.5 did not, 0.5.0 on only with penalties
    ("0.5.0", False), ("0.6.0", False), ("0.7.3", False),
    ("main @ abc123", False),
])
def test_which_v0_entries_copied_their_tokens_every_step(version, want):
    assert pub.v0_sampler_copies({"engine": "vllm", "engine_version": version}) is want


def test_an_old_v0_entry_is_priced_with_the_copy_and_a_later_one_without():
    """The same closed loop of ten clients on vLLM 0.4.3 and 0.5.0 (both the early V0 profile): only the older
    one carries the copy, and its end-to-end latency is the longer for it; 0.6.0 runs the later V0 profile,
    without it."""
    base = {"id": "t", "quantity": "e2e_s", "value": 20.0, "engine": "vllm", "model_config": "meta-llama/Llama-3.1-8B",
            "gpu": "a100-80gb", "gpus": 1, "tp": 1,
            "settings": {"arrival": "closed-loop", "client": "server", "input_len": 4000, "output_len": 256,
                         "concurrency": 10}}
    old = pub.Point({**base, "engine_version": "0.4.3"})
    new = pub.Point({**base, "engine_version": "0.5.0"})
    assert old.engine_name == new.engine_name == "vllm-v0-early"
    assert old.base.sampler_token_s == pytest.approx(60e-9) and new.base.sampler_token_s == 0.0
    assert pub.Point({**base, "engine_version": "0.6.0"}).base.sampler_token_s == 0.0
    # 256 decode steps of about 10 x 4,128 tokens at 60 ns: about 0.63 s more
    assert 0.4 < old.predict() - new.predict() < 0.9


def test_the_benchmark_script_refuses_a_bad_option():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "sampler_copy.py"), "--repeats", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["Error: --repeats must be >= 1"]
