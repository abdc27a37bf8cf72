"""The serving simulation against hand-computed schedules and closed-form queueing results."""

import numpy as np
import pytest

from planner.analysis.errors import OptionError
from planner.hardware.simulate import (Scheduler, StepCost, draw_lengths, poisson_arrivals, simulate,
                                       simulate_disaggregated)

# a step of N new tokens takes 0.1 + 0.01·N seconds (no KV or attention term)
LINEAR = StepCost((1, 1000), (0.11, 0.1 + 0.01 * 1000), 0.0, 0.0)


def one(cost, sched, arrivals, inp, out, **kw):
    return simulate([cost], [sched], np.asarray(arrivals, float), inp, out, **kw)


def test_three_requests_exact_schedule():
    # t=0: both first requests prefill together (20 tokens, 0.3 s) -> first tokens at 0.3;
    # two decode steps of 2 tokens (0.12 s each) end at 0.42 and 0.54, finishing them; the third
    # request (arrived at 0.5, during the second decode) prefills alone from 0.54 (10 tokens, 0.2 s)
    # -> first token at 0.74, then two decode steps of 0.11 s -> done at 0.96.
    r = one(LINEAR, Scheduler(8, 100, 10_000), [0.0, 0.0, 0.5], [10, 10, 10], [3, 3, 3])
    np.testing.assert_allclose(r.ttft_s[0], [0.3, 0.3, 0.24], rtol=1e-12)
    np.testing.assert_allclose(r.finish_s[0], [0.54, 0.54, 0.96], rtol=1e-12)
    np.testing.assert_allclose(r.e2e_s[0], [0.54, 0.54, 0.46], rtol=1e-12)
    np.testing.assert_allclose(r.tpot_s[0], [0.12, 0.12, 0.11], rtol=1e-12)
    assert r.preemptions[0] == 0


def test_chunked_prefill_exact_schedule():
    # budget 8 tokens per step: a 20-token prompt takes chunks of 8, 8, 4 (0.18 + 0.18 + 0.14 s),
    # the first token at 0.5 s; one decode step (0.11 s) ends the 2-token answer at 0.61 s
    r = one(LINEAR, Scheduler(8, 8, 10_000), [0.0], [20], [2])
    np.testing.assert_allclose(r.ttft_s[0], [0.5], rtol=1e-12)
    np.testing.assert_allclose(r.finish_s[0], [0.61], rtol=1e-12)


def test_decode_first_then_prefill_shares_the_budget():
    # budget 10: at t=0.3 request 0 decodes (1 token) and request 1 (arrived at 0.1) gets 9 of its 12
    # prompt tokens: 0.1 + 0.01·10 = 0.2 s; then 1 decode + 3 prompt tokens = 0.14 s -> its first
    # token at 0.64
    r = one(LINEAR, Scheduler(8, 10, 10_000), [0.0, 0.1], [20, 12], [3, 2])
    # request 0: prefill 20 tokens in chunks 10, 10 (0.2 s each) -> first token at 0.4
    assert r.ttft_s[0, 0] == pytest.approx(0.4)
    # at 0.4: decode r0 + 9 tokens of r1 (0.2 s) -> 0.6; decode r0 (finishes, gen 3) + 3 tokens of r1
    # (0.14 s) -> 0.74 = r1's first token
    assert r.finish_s[0, 0] == pytest.approx(0.74)
    assert r.ttft_s[0, 1] == pytest.approx(0.74 - 0.1)
    assert r.finish_s[0, 1] == pytest.approx(0.74 + 0.11)


def test_prefill_first_idles_the_decodes_for_a_prompt_step():
    # A (10 in, 3 out) at 0, B (10 in, 2 out) at 0.15. Mixed (vLLM): 0-0.2 A's prompt; 0.2-0.41 A's decode +
    # B's prompt (11 tokens); 0.41-0.53 both decode: both done at 0.53, B's first token at 0.41. Prefill first
    # (SGLang): 0.2-0.4 B's prompt alone (A waits); 0.4-0.52 both decode (B done); 0.52-0.63 A alone.
    arr, inp, out = [0.0, 0.15], [10, 10], [3, 2]
    mixed = one(LINEAR, Scheduler(8, 100, 10_000), arr, inp, out)
    np.testing.assert_allclose(mixed.finish_s[0], [0.53, 0.53], rtol=1e-12)
    np.testing.assert_allclose(mixed.ttft_s[0], [0.2, 0.26], rtol=1e-12)
    alone = one(LINEAR, Scheduler(8, 100, 10_000, prefill_first=True), arr, inp, out)
    np.testing.assert_allclose(alone.finish_s[0], [0.63, 0.52], rtol=1e-12)
    np.testing.assert_allclose(alone.ttft_s[0], [0.2, 0.25], rtol=1e-12)
    assert alone.steps == mixed.steps + 1


def test_preemption_recomputes_the_newest_sequence():
    # pool of 12 tokens, two requests of 5 prompt + 4 output tokens (8 tokens each at the end):
    # prefill both (10 tokens, 0.2 s), one decode of both (0.12 s, pool 12/12); the next decode needs
    # 2 more tokens: the newer request is preempted (its 6 tokens freed) and request 0 decodes alone
    # (0.11 s twice) to finish at 0.54; request 1 then recomputes its 7 tokens (0.17 s), which emits
    # its third token, and decodes its fourth (0.11 s): done at 0.82.
    r = one(LINEAR, Scheduler(8, 100, 12), [0.0, 0.0], [5, 5], [4, 4])
    assert r.preemptions[0] == 1
    np.testing.assert_allclose(r.finish_s[0], [0.54, 0.82], rtol=1e-12)
    np.testing.assert_allclose(r.ttft_s[0], [0.2, 0.2], rtol=1e-12)
    assert r.kv_peak_occupancy[0] == pytest.approx(1.0)


def test_whole_sequence_reservation_queues_instead_of_preempting():
    # The workload above with reserve_whole (TensorRT-LLM's GUARANTEED_NO_EVICT): request 0 reserves 5 + 4 - 1 = 8
    # of the 12 tokens, so request 1 (8 more) waits for it: prefill 5 (0.15 s), three decodes alone (0.33 s) ->
    # done at 0.48; request 1 then prefills (first token at 0.63) and decodes three steps -> 0.96. Nothing is
    # preempted, and the pool never holds more than one sequence (8 of 12 tokens at the end of request 0).
    r = one(LINEAR, Scheduler(8, 100, 12, reserve_whole=True), [0.0, 0.0], [5, 5], [4, 4])
    assert r.preemptions[0] == 0
    np.testing.assert_allclose(r.finish_s[0], [0.48, 0.96], rtol=1e-12)
    np.testing.assert_allclose(r.ttft_s[0], [0.15, 0.63], rtol=1e-12)
    assert r.kv_peak_occupancy[0] == pytest.approx(8 / 12)
    # a pool of 16 holds both whole sequences: they run together as on demand (no preemption either way)
    both = one(LINEAR, Scheduler(8, 100, 16, reserve_whole=True), [0.0, 0.0], [5, 5], [4, 4])
    free = one(LINEAR, Scheduler(8, 100, 16), [0.0, 0.0], [5, 5], [4, 4])
    np.testing.assert_array_equal(both.finish_s, free.finish_s)
    assert both.preemptions[0] == free.preemptions[0] == 0


def test_request_larger_than_the_pool_is_rejected():
    r = one(LINEAR, Scheduler(8, 100, 10), [0.0, 0.0], [5, 20], [2, 2])
    assert r.rejected[0] == 1
    assert np.isnan(r.ttft_s[0, 1]) and not np.isnan(r.ttft_s[0, 0])


def test_mdl_mean_wait_at_low_load():
    # one request at a time, each a single prefill step of D seconds: an M/D/1 queue.
    # Pollaczek-Khinchine: mean wait = rho·D / (2(1 - rho)); TTFT = wait + D.
    D, rho, n, reps = 0.05, 0.3, 3000, 4
    flat = StepCost((1, 1000), (D, D), 0.0, 0.0)
    arr = poisson_arrivals(rho / D, n, seed=7, configs=reps)
    r = simulate([flat] * reps, [Scheduler(1, 1000, 10_000)] * reps, arr, 100, 1)
    expected = D + rho * D / (2 * (1 - rho))
    assert np.nanmean(r.ttft_s) == pytest.approx(expected, rel=0.05)


def test_littles_law_on_a_continuous_batching_run():
    # L (time-averaged requests in the system, integrated step by step) = lambda · W (mean e2e)
    cost = StepCost((1, 16, 256, 4096), (0.02, 0.021, 0.03, 0.2), 1e-7, 1e-9)
    n = 1500
    arr = poisson_arrivals(8.0, n, seed=3)
    inp = draw_lengths("uniform:200:800", n, seed=4)
    out = draw_lengths("uniform:20:120", n, seed=5)
    r = simulate([cost], [Scheduler(64, 2048, 60_000)], arr, inp, out)
    lam = n / r.duration_s[0]
    w = np.nanmean(r.e2e_s[0])
    assert r.mean_in_system[0] == pytest.approx(lam * w, rel=0.05)


def test_configurations_run_together_as_they_run_alone():
    costs = [LINEAR, StepCost((1, 64, 4096), (0.01, 0.012, 0.1), 2e-8, 1e-9)]
    scheds = [Scheduler(4, 64, 2_000), Scheduler(16, 512, 500)]
    arr = poisson_arrivals(5.0, 200, seed=1)
    inp = draw_lengths("uniform:10:200", 200, seed=2)
    out = draw_lengths("uniform:1:60", 200, seed=3)
    both = simulate(costs, scheds, arr, inp, out)
    for i in range(2):
        alone = simulate([costs[i]], [scheds[i]], arr, inp, out)
        np.testing.assert_allclose(both.finish_s[i], alone.finish_s[0], rtol=1e-12, equal_nan=True)
        assert both.preemptions[i] == alone.preemptions[0]


def test_decode_runs_taken_in_one_jump_match_step_by_step():
    # the same single request with and without other arrivals forcing single steps gives the same
    # finish when the KV term makes every decode step a different length
    cost = StepCost((1, 1000), (0.01, 0.01 + 1e-5 * 999), 1e-4, 0.0)
    r = one(cost, Scheduler(4, 100, 10_000), [0.0], [10], [50])
    # prefill 10 tokens: 0.01 + 9e-5 (N=10) + 0; decode k (k = 1..49) reads 10 + k cached tokens + 1
    t = 0.01 + 1e-5 * 9
    for k in range(1, 50):
        t += 0.01 + 1e-4 * (10 + k)
    assert r.finish_s[0, 0] == pytest.approx(t, rel=1e-12)


def test_disaggregated_first_token_after_the_kv_transfer():
    pre = StepCost((1, 1000), (0.11, 0.1 + 0.01 * 1000), 0.0, 0.0)
    dec = StepCost((1, 1000), (0.02, 0.02), 0.0, 0.0)
    r = simulate_disaggregated(pre, Scheduler(4, 100, 1000), dec, Scheduler(4, 100, 1000), [0.0], [10], [3],
                               kv_transfer_s=0.05)
    # prefill 0.2 s, transfer 0.05 s: first token at 0.25; two decode steps of 0.02 s
    assert r.ttft_s[0, 0] == pytest.approx(0.25)
    assert r.finish_s[0, 0] == pytest.approx(0.29)


@pytest.mark.parametrize("spec", ["uniform:5", "normal:1", "weird:1:2", "uniform:9:3", "lognormal:-1:2", "0"])
def test_bad_length_distributions(spec):
    with pytest.raises(OptionError):
        draw_lengths(int(spec) if spec.isdigit() else spec, 10)


def test_bad_rate_and_scheduler():
    with pytest.raises(OptionError):
        poisson_arrivals(0.0, 10)
    with pytest.raises(OptionError):
        simulate([LINEAR], [Scheduler(0, 10, 10)], [0.0], [1], [1])
    with pytest.raises(OptionError):
        simulate([LINEAR], [Scheduler(1, 10, 10)], [1.0, 0.0], [1, 1], [1, 1])


@pytest.mark.parametrize("in_flight", [None, (None, 1, 3, 8)])
@pytest.mark.parametrize("per_sequence", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7])
def test_fast_simulation_equals_the_plain_lock_step_exactly(seed, per_sequence, in_flight):
    # hardware.simulate keeps per-configuration sums, a decode clock and drops finished configurations;
    # tests/sim_reference.py advances every slot of every configuration each step. Random small
    # workloads with preemptions, chunked prefill, rejections and prefilled arrivals: every figure equal,
    # bit for bit, with and without dropping finished configurations; ``per_sequence``: with a host cost per
    # sequence a step runs (StepCost.sigma_s) in three of the four configurations; ``in_flight``: the client's
    # cap on requests in flight (max_in_flight) in three of the four
    from dataclasses import replace

    from tests.sim_reference import simulate_reference

    rng = np.random.default_rng(seed)
    C, R = 4, 150
    costs, scheds = [], []
    for _ in range(C):
        a, b = rng.uniform(0.005, 0.05), rng.uniform(1e-5, 1e-4)
        costs.append(StepCost((1, 64, 4096), (a, a + 63 * b, a + 4095 * b * rng.uniform(0.5, 1.5)),
                              float(rng.choice([0.0, 1e-7, 1e-6])), float(rng.choice([0.0, 1e-10]))))
        scheds.append(Scheduler(int(rng.integers(1, 40)), int(rng.integers(16, 600)), int(rng.integers(200, 5000))))
    scheds[0] = Scheduler(16, 256, 300)  # a pool smaller than some requests: rejections
    if per_sequence:
        costs = [replace(c, sigma_s=x) for c, x in zip(costs, (0.0, 1e-4, 5e-4, 2e-3))]
    if seed in (2, 3):  # SGLang's prefill-first steps in half the configurations (and none of seeds 0-1)
        scheds = [Scheduler(x.max_num_seqs, x.max_num_batched_tokens, x.kv_capacity_tokens, prefill_first=bool(i % 2))
                  for i, x in enumerate(scheds)]
    if seed in (4, 5):  # vLLM's asynchronous scheduling (lookahead) in half the configurations
        scheds = [Scheduler(x.max_num_seqs, x.max_num_batched_tokens, x.kv_capacity_tokens, lookahead=bool(i % 2))
                  for i, x in enumerate(scheds)]
    if seed >= 6:  # whole-sequence reservation (TensorRT-LLM's) in half the configurations, SGLang's steps in one
        scheds = [Scheduler(x.max_num_seqs, x.max_num_batched_tokens, x.kv_capacity_tokens, reserve_whole=bool(i % 2),
                            prefill_first=i == 3) for i, x in enumerate(scheds)]
    arr = poisson_arrivals(float(rng.uniform(1, 50)), R, seed=seed, configs=C)
    inp = draw_lengths("uniform:1:400", R, seed=seed + 1)
    out = draw_lengths("uniform:1:80", R, seed=seed + 2)
    kw = dict(prefilled=rng.random(R) < (0.5 if seed in (0, 7) else 0.0), record_kv=True, max_in_flight=in_flight)
    ref = simulate_reference(costs, scheds, arr, inp, out, **kw)
    assert ref.preemptions.sum() > 0 and ref.rejected.sum() > 0  # the hard paths are exercised
    if in_flight is not None:  # the caps bind: the engine holds fewer requests than without them
        free = simulate_reference(costs, scheds, arr, inp, out, **{**kw, "max_in_flight": None})
        for j, cap in enumerate(in_flight):
            if cap is None:
                np.testing.assert_array_equal(ref.finish_s[j], free.finish_s[j])
            else:
                assert ref.mean_in_system[j] <= cap + 1e-9
                assert ref.mean_in_system[j] < free.mean_in_system[j]
    whole = np.array([x.reserve_whole for x in scheds])
    assert not ref.preemptions[whole].any()  # a whole reservation never runs out of pool
    for compact in (True, False):
        r = simulate(costs, scheds, arr, inp, out, compact=compact, **kw)
        for f in ("ttft_s", "tpot_s", "e2e_s", "finish_s", "output_tokens_per_s", "kv_mean_occupancy",
                  "kv_peak_occupancy", "mean_in_system", "preemptions", "rejected", "duration_s"):
            np.testing.assert_array_equal(getattr(r, f), getattr(ref, f), err_msg=f)
        assert r.steps == ref.steps
        assert len(r.kv_series) == len(ref.kv_series)
        for (ta, oa), (tb, ob) in zip(r.kv_series, ref.kv_series):
            np.testing.assert_array_equal(ta, tb)
            np.testing.assert_array_equal(oa, ob)


def test_a_host_cost_per_sequence_counts_sequences_not_tokens():
    """sigma_s is paid once per sequence a step runs: a 990-token prompt pays it once, and each decode step of two
    sequences twice. LINEAR plus 5 ms a sequence; A (990 in, 3 out) at 0 and B (10 in, 2 out) at 0.
    Step 1: both prompts (1,000 tokens, 2 sequences): 0.1 + 10 + 0.01 = 10.11 s, first tokens for both.
    Step 2: both decode (2 tokens, 2 sequences): 0.12 + 0.01 = 0.13 s; B is done at 10.24.
    Step 3: A decodes alone: 0.11 + 0.005 = 0.115 s; A is done at 10.355. Priced as tokens it would have been
    1,000 x 5 ms = 5 s more for the prompt step alone."""
    from dataclasses import replace

    cost = replace(LINEAR, sigma_s=5e-3)
    r = one(cost, Scheduler(8, 2000, 10_000), [0.0, 0.0], [990, 10], [3, 2])
    np.testing.assert_allclose(r.ttft_s[0], [10.11, 10.11], rtol=1e-12)
    np.testing.assert_allclose(r.finish_s[0], [10.355, 10.24], rtol=1e-12)
    assert cost.time_s(1000, sequences=2) == pytest.approx(10.11)
