"""vLLM V0 before v0.6.0 (``profiles/engines/vllm-v0-early.yaml``): the same engine as vllm-v0.yaml but for its host
work per running sequence, 0.2.6-0.4.x's sampler token copies and the overheads session 59's k-fold fitted on
0.2-0.5's points apart from 0.6-0.7's; which entries run with it; what the per-sequence term adds to a closed loop."""

from __future__ import annotations

from dataclasses import fields

import pytest

from planner.hardware.engine import load_engine
from tests.test_published_fit import pub

OWN = {"name", "display_name", "version", "step_overhead_per_sequence_s", "sampler_token_cost_s",
       # fitted on the 0.2-0.5 points apart from 0.6-0.7's (session 59's k-fold; the front end kept at V0's 7.5 ms)
       "launch_overhead_per_op_s", "min_op_time_s", "request_overhead_s", "attention_decode_efficiency",
       "weight_only_efficiency", "server_overhead_s",
       # session 60: 0.2-0.4 ran AWQ through AWQ's own GEMM, not Marlin (vllm-v0.yaml weight_only_compute)
       "weight_only_compute"}


def _same_but_own(early, late):
    for f in fields(early):
        if f.name == "platform_memory":  # the memory overlays each inherits (vLLM on TPU): the same, field by field
            assert early.platform_memory.keys() == late.platform_memory.keys()
            for vendor in early.platform_memory:
                _same_but_own(early.platform_memory[vendor], late.platform_memory[vendor])
        elif f.name not in OWN:
            assert getattr(early, f.name) == getattr(late, f.name), f.name


def test_the_early_profile_is_v0_but_for_its_own_terms():
    early, late = load_engine("vllm-v0-early"), load_engine("vllm-v0")
    _same_but_own(early, late)
    assert set(early.platform_memory) == {"google"}  # inherited from vllm.yaml through vllm-v0.yaml
    assert early.step_overhead_per_sequence_s == pytest.approx(300e-6) and late.step_overhead_per_sequence_s < 50e-6
    assert early.sampler_token_cost_s == pytest.approx(60e-9) and late.sampler_token_cost_s == 0.0
    assert early.server_overhead_s == pytest.approx(7.5e-3)
    assert early.weight_only_compute == {"int4": (929.0, ())} and late.weight_only_compute == {"int4": (929.0, ("awq",))}


def _point(version: str, quantity: str = "e2e_s"):
    return pub.Point({"id": "t", "quantity": quantity, "value": 10.0, "engine": "vllm", "engine_version": version,
                      "model_config": "meta-llama/Llama-3.1-8B", "gpu": "a100-80gb", "gpus": 1, "tp": 1,
                      "settings": {"arrival": "closed-loop", "client": "server", "input_len": 100,
                                   "output_len": 256, "concurrency": 10}})


def test_a_closed_loop_on_0_5_pays_each_sequence_every_step():
    """Ten clients of 100-token prompts and 256 output tokens on vLLM 0.5.4 (the early profile; 0.6.0 the later one;
    no token copies on either): against the same profile without its per-sequence term, each of the 255 decode steps
    after the first token runs ten sequences at 300 us more host work each, 0.77 s in all, and the prompt step's ten
    sequences add 3 ms more."""
    early, late = _point("0.5.4"), _point("0.6.0")
    assert (early.engine_name, late.engine_name) == ("vllm-v0-early", "vllm-v0")
    assert early.base.sampler_token_s == late.base.sampler_token_s == 0.0
    assert early.predict() - early.predict({"step_overhead_per_sequence_s@vllm-v0-early": 0.0}) == pytest.approx(
        256 * 10 * 300e-6, rel=0.05)
