"""plan's simulation counts the engine's host work per sequence over the sequences a step runs
(``StepCost.sigma_s``), not over its tokens: a prompt chunk of N tokens pays it once. ``hardware.deploy.step_cost``
takes it out of the tokens table where it adds to the step (no async scheduling, or pipeline stages) and leaves
it in where vLLM's async scheduling runs it beside the device's step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.parallel import Layout
from planner.cli.common import load_model
from planner.hardware.deploy import TOKENS_GRID, EngineModel, engine_model, plan_for, replica_step, step_cost
from planner.hardware.profiles import load_profile


def _setup(engine: str, layout: Layout = Layout(tp=1, dp=1)):
    spec = load_model("meta-llama/Llama-3.1-8B").spec
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options(context=8192))
    return a, hw, plan_for(a, hw, layout), engine_model(hw, engine)


@pytest.mark.parametrize("engine, per_seq", [("sglang", 6e-6), ("trtllm", 5e-6)])
def test_a_synchronous_engine_pays_per_sequence_in_the_simulation_not_per_token(engine, per_seq):
    a, hw, plan, em = _setup(engine)
    assert em.factors.step_overhead_per_sequence_s == pytest.approx(per_seq)
    c = step_cost(a, hw, plan, em, ref_batch=64, ref_context=2000, ref_prompt=2048)
    assert c.sigma_s == pytest.approx(per_seq)
    # the table no longer charges each of a step's N tokens the per-sequence work: exactly N x per_seq less
    for n, t in zip(TOKENS_GRID, c.t_tokens_s):
        as_tokens = replica_step(a, hw, plan, em, batch=n, new_tokens=1, cached=0).iteration_s
        assert as_tokens - t == pytest.approx(n * per_seq, rel=1e-9, abs=1e-12)
    # an 8,192-token prompt step alone: one sequence's worth (6 us), where it was 49 ms (8,192 x 6 us)
    assert c.time_s(8192, sequences=1) < replica_step(a, hw, plan, em, batch=8192, new_tokens=1,
                                                      cached=0).iteration_s - 0.04


def test_vllms_async_scheduling_keeps_it_in_the_table():
    a, hw, plan, em = _setup("vllm")
    assert em.factors.async_scheduling and em.factors.step_overhead_per_sequence_s > 0
    c = step_cost(a, hw, plan, em, ref_batch=64, ref_context=2000, ref_prompt=2048)
    assert c.sigma_s == 0.0
    for n, t in zip(TOKENS_GRID, c.t_tokens_s):
        assert t == replica_step(a, hw, plan, em, batch=n, new_tokens=1, cached=0).iteration_s


def test_under_pipeline_stages_vllm_pays_it_whole():
    a, hw, plan, em = _setup("vllm", Layout(tp=1, pp=2, dp=1))
    c = step_cost(a, hw, plan, em, ref_batch=64, ref_context=2000, ref_prompt=2048)
    assert c.sigma_s == pytest.approx(em.factors.step_overhead_per_sequence_s)


def test_attention_dp_ranks_share_the_sequences():
    """Four attention-DP ranks each schedule a quarter of a step's sequences, in parallel: a quarter of the cost
    per sequence of the replica's step."""
    a, hw, plan, em = _setup("sglang", Layout(tp=4, dp=1, attn_dp=4))
    em_ = EngineModel(em.profile, replace(em.factors, step_overhead_per_sequence_s=100e-6))
    c = step_cost(a, hw, plan, em_, ref_batch=64, ref_context=2000, ref_prompt=2048)
    assert plan.layout.attn_dp == 4
    assert c.sigma_s == pytest.approx(25e-6)
