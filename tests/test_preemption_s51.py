"""vLLM's blocks on demand with recompute preemption in serve's scheduler loop (``run_steps(preempt=True)``): a prompt
is admitted where the pool holds it, a running request holds its prompt and the tokens it has made, and where a decode
step's tokens do not fit the newest running requests are preempted, freed, sent back to the front of the queue and
recomputed from their prompt and the tokens they had made. Schedules worked by hand on a flat clock, and a closed
loop through ``simulate`` that the pool limits."""

from __future__ import annotations

import pytest

from planner.hardware.serve import Scenario, StepRules, pool_tokens, run_steps, simulate


def _flat(_pieces):
    return 1.0


def test_the_newest_request_is_preempted_and_recomputed_by_hand():
    """Four requests of 10 + 6 tokens sent together into a pool of 50 tokens. Their prompts (40) fit, so all four
    start in step 0. Each decode step adds one token per request: 44 after step 1, 48 after step 2; step 3's four
    tokens would make 52, so the newest request (first tokens came together: the last of the group) is preempted.
    It had made 3 tokens (its first and two decodes) and held 12, so 36 remain and three requests decode to 45 by
    step 5, when they have made 6 tokens and finish. Step 6 recomputes the preempted one as a prompt of 10 + 3 = 13
    tokens, which makes its fourth token; steps 7 and 8 make the fifth and sixth. Its first token stays the one
    of step 0 (time 1), its lengths those it was sent with."""
    stats: dict = {}
    steps, done = run_steps([(0.0, 4, 10, 6)], 64, 8, price=_flat, kv_tokens=50, preempt=True, stats=stats)
    assert steps == [{(10, 0): 4}, {(1, 10): 4}, {(1, 11): 4}, {(1, 12): 3}, {(1, 13): 3}, {(1, 14): 3},
                     {(13, 0): 1}, {(1, 13): 1}, {(1, 14): 1}]
    assert [(m.count, m.first_step, m.end_step, m.first_s, m.end_s, m.input_len, m.output_len) for m in done] == [
        (3, 0, 5, 1.0, 6.0, 10, 6), (1, 0, 8, 1.0, 9.0, 10, 6)]
    assert stats == {"peak": 4, "preempted": 1}


def test_reserving_the_whole_sequence_starts_fewer_and_preempts_none():
    """The same requests where the pool reserves each whole sequence (16 tokens): three start (48 of 50), the
    fourth waits for them to finish at step 5 and makes its first token at step 6, five steps later than its first
    token on demand."""
    steps, done = run_steps([(0.0, 4, 10, 6)], 64, 8, price=_flat, kv_tokens=50)
    assert steps[0] == {(10, 0): 3}
    assert [(m.count, m.first_s, m.end_s) for m in done] == [(3, 1.0, 6.0), (1, 7.0, 12.0)]


def test_a_preemption_admits_nothing_new_in_its_step_and_the_queue_front_comes_first():
    """Two requests of 10 + 6 into a pool of 24, then a third sent at time 2.5. Prompts 20; step 1 makes 22, step 2
    24; step 3 needs 26: the newer is preempted (it held 12) and the third, which has arrived, is not admitted in
    that step. The preempted one goes back ahead of it: once the older finishes (step 5), step 6 recomputes it (13
    tokens) and then takes the third's prompt (13 + 10 = 23 of 24). Step 7 needs 25: the third, admitted after the
    recomputed one, is the newest and is preempted in turn, after its first token (time 7); it is recomputed as 11
    tokens in step 9 and ends at step 13."""
    sends = [(0.0, 2, 10, 6), (2.5, 1, 10, 6)]
    stats: dict = {}
    steps, done = run_steps(sends, 64, 8, price=_flat, kv_tokens=24, preempt=True, stats=stats)
    assert steps[:4] == [{(10, 0): 2}, {(1, 10): 2}, {(1, 11): 2}, {(1, 12): 1}]
    prompts = [p for s in steps for (new, cached), n in s.items() if new > 1 for p in [new] * n]
    assert prompts == [10, 10, 13, 10, 11]
    assert stats == {"peak": 2, "preempted": 2}
    assert [(m.first_s, m.end_s, m.input_len, m.output_len) for m in done] == [
        (1.0, 6.0, 10, 6), (1.0, 9.0, 10, 6), (7.0, 14.0, 10, 6)]


def test_the_oldest_request_keeps_its_place_so_the_loop_ends():
    """One request of 10 + 6 in a pool of 12 tokens (the block rounding of a real pool can leave it a few tokens
    short): preempting it would free the pool only to take it back; it runs on alone and finishes."""
    stats: dict = {}
    steps, done = run_steps([(0.0, 1, 10, 6)], 64, 8, price=_flat, kv_tokens=12, preempt=True, stats=stats)
    assert len(steps) == 6 and done[0].end_s == 6.0
    assert stats["preempted"] == 0


def test_multi_step_checks_the_pool_for_a_whole_round():
    """vLLM V0 multi-step (rounds of 3 decode steps): two requests of 10 + 8 in a pool of 24. The prompts (20) run
    alone; the first round needs 20 + 2 × 3 = 26 > 24, so the newer is preempted before the round starts and the
    older decodes its round alone."""
    stats: dict = {}
    steps, _ = run_steps([(0.0, 2, 10, 8)], 64, 8, price=_flat, kv_tokens=24, preempt=True, scheduler_steps=3,
                         stats=stats)
    assert steps[0] == {(10, 0): 2}
    assert steps[1] == {(1, 10): 1}
    assert stats["preempted"] >= 1


class _Mem:
    """An engine memory of 100,000 tokens of 1 byte (blocks of 16), no other limit."""
    max_model_len, max_num_seqs, max_num_batched_tokens = 16384, 1024, 8192
    kv_pool_bytes, kv_bytes_per_token, state_bytes_per_sequence, block_size = 100_000, 1, 0, 16
    kv_capacity_tokens = 100_000

    @classmethod
    def max_batch(cls, tokens):
        return cls.kv_pool_bytes // tokens


def test_pool_tokens_counts_the_part_filled_block_and_a_hybrid_state():
    assert pool_tokens(_Mem()) == (100_000, 7)

    class Hybrid(_Mem):
        kv_bytes_per_token, state_bytes_per_sequence = 4, 4000  # a state of 1,000 tokens' KV

    assert pool_tokens(Hybrid()) == (25_000, 1007)

    class StateOnly(_Mem):
        kv_bytes_per_token, state_bytes_per_sequence = 0, 4000

    assert pool_tokens(StateOnly()) is None


def test_a_pool_limited_closed_loop_on_demand_starts_more_and_says_so():
    """20 closed-loop clients of 4,000 + 4,000 tokens on 100,000 tokens (flat steps). Reserving whole sequences,
    12 run at once; counted at the mean held, 16; admitted by the prompt with preemption, more start at once (at
    most 20), so the mean TTFT is the lowest of the three, and the notes say how many ran and how many were
    preempted."""
    from planner.hardware.expected import Factors
    from tests.test_serve import _FlatModel

    s = Scenario(4000, 4000, 20, "closed-loop", requests=40)
    model = _FlatModel(Factors())
    whole = simulate(model, _Mem(), s, server=False)
    mean = simulate(model, _Mem(), s, server=False, rules=StepRules(held_output=0.5))
    pre = simulate(model, _Mem(), s, server=False, rules=StepRules(held_output=0.5, preempt=True))
    assert pre.expected.ttft_s < mean.expected.ttft_s < whole.expected.ttft_s
    assert 16 < pre.wave <= 20
    said = [n for n in pre.notes if n.startswith("the KV pool held at most")]
    assert len(said) == 1 and "preemption(s)" in said[0] and "of 20 clients" in said[0]
    # the static count's notes are not given where the simulation applies the pool itself
    assert not any(n.startswith("the engine itself admits") for n in pre.notes)


@pytest.mark.parametrize("engine, preempt", [("vllm", True), ("trtllm", False), ("sglang", False)])
def test_serve_preempts_only_where_the_engine_allocates_on_demand(engine, preempt):
    """Llama-3.1-8B on one H100: 256 closed-loop clients of 8,000 + 8,000 tokens fill the pool. vLLM admits by the
    prompt and reports its preemptions; the engines that reserve the whole sequence report a wait instead."""
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import serve
    from tests.test_serve import _model

    d = serve(_model("llama-3.1-8b"), load_profile("h100-sxm"), engine=engine, input_len=8000, output_len=8000,
              concurrency=256, arrival="closed-loop", requests=256)
    held = [n for n in d.notes if n.startswith("the KV pool held at most")]
    assert bool(held) == preempt
    if preempt:
        assert "preemption(s)" in held[0]
    # --json: the count the note gives (null where the engine reserves whole sequences), and the profile's flags
    from planner.hardware.serve import deployment_dict

    js = deployment_dict(d)
    if preempt:
        assert js["preemptions"] > 0 and f"{js['preemptions']:,} preemption(s)" in held[0]
        assert js["wave_sequences"] == d.result.wave and f"held at most {d.result.wave:,} of 256" in held[0]
    else:
        assert js["preemptions"] is None
    assert js["settings"]["prefix_caching"] is (engine == "vllm")


def test_the_recompute_reads_back_the_prefix_still_cached_by_hand():
    """The first schedule with vLLM V1's prefix caching. The free queue holds positions 0-49 at the start; the
    prompts take 0-39 and the decodes of steps 1-2 take 40-47. The preempted request's 12 tokens join the tail at
    50-61, its last token first, so its first 5 tokens sit at 57-61. Steps 3-5 hand out 9 more (48-56), so when
    step 6 recomputes its 13 tokens, 5 are still cached: the step computes 8 beside 5 cached."""
    steps, done = run_steps([(0.0, 4, 10, 6)], 64, 8, price=_flat, kv_tokens=50, preempt=True, prefix_cache=True)
    assert steps[6] == {(8, 5): 1}
    assert steps[:6] == run_steps([(0.0, 4, 10, 6)], 64, 8, price=_flat, kv_tokens=50, preempt=True)[0][:6]
    assert done[-1].end_step == 8


@pytest.mark.parametrize("engine, on_demand, cached", [
    ("vllm", True, True), ("vllm-v0", True, False), ("sglang", False, False), ("trtllm", False, False)])
def test_each_engine_profile_says_whether_it_preempts_and_caches_prefixes(engine, on_demand, cached):
    from planner.hardware.engine import load_engine

    e = load_engine(engine)
    assert (not e.reserves_whole) == on_demand
    assert e.prefix_caching == cached


@pytest.mark.parametrize("bad", ["yes please", "[true]", "2"])
def test_a_prefix_caching_value_that_is_not_a_flag_is_refused(tmp_path, monkeypatch, bad):
    from planner.hardware.engine import load_engine
    from planner.hardware.profiles import HardwareError
    from tests.test_published_fit import _engines_copy

    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\nscheduler: {{prefix_caching: {bad}}}\n"})
    with pytest.raises(HardwareError, match="prefix_caching"):
        load_engine("vllm-v0")
