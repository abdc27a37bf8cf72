"""vLLM's asynchronous scheduling schedules the next step as this one starts (``EngineCore.step_with_batch_queue``
with ``max_concurrent_batches`` 2), so while requests run a new one joins the step after next. The rule is
``lookahead`` in serve's scheduler loop (``hardware.serve.run_steps``, ``StepRules``) and in plan's request
simulation (``hardware.simulate.Scheduler``), checked here on hand-computed schedules; the fast simulation against
its lock-step oracle is in tests/test_simulate.py (seeds 4-5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.hardware.serve import StepRules, run_steps
from planner.hardware.simulate import Scheduler, StepCost, simulate
from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]


def _one_second(_pieces) -> float:
    return 1.0


def _first_token_s(marks, send_s):
    return next(m.first_s for m in marks if m.send_s == send_s)


def test_a_request_that_arrives_while_others_run_waits_one_more_step():
    # A (4 in, 10 out) at 0: its prompt runs in step 0 (0-1 s), then it decodes one token a step. B (4 in, 2 out)
    # arrives at 2.5 s, during step 2 (2-3 s).
    sends = [(0.0, 1, 4, 10), (2.5, 1, 4, 2)]
    _, plain = run_steps(sends, 16, 4, price=_one_second)
    _, ahead = run_steps(sends, 16, 4, price=_one_second, lookahead=True)
    # scheduled as each step starts: B joins step 3 (3-4 s) and has its first token at 4 s
    assert _first_token_s(plain, 2.5) == pytest.approx(4.0)
    # step 3 was scheduled when step 2 started (2 s), before B came: B joins step 4 (4-5 s)
    assert _first_token_s(ahead, 2.5) == pytest.approx(5.0)
    # A itself is not delayed: the engine was idle when it came
    assert _first_token_s(plain, 0.0) == _first_token_s(ahead, 0.0) == pytest.approx(1.0)


def test_an_idle_engine_takes_a_request_at_once():
    # A finishes with its prompt step (one output token); B comes to an idle engine at 2.5 s
    sends = [(0.0, 1, 4, 1), (2.5, 1, 4, 2)]
    for lookahead in (False, True):
        _, marks = run_steps(sends, 16, 4, price=_one_second, lookahead=lookahead)
        assert _first_token_s(marks, 2.5) == pytest.approx(3.5)


def test_plan_simulation_follows_the_same_rule():
    cost = StepCost((1, 4096), (1.0, 1.0), 0.0, 0.0)  # every step takes 1 s
    for lookahead, b_ttft in ((False, 1.5), (True, 2.5)):
        r = simulate([cost], [Scheduler(4, 16, 10_000, lookahead=lookahead)], [0.0, 2.5], [4, 4], [10, 2])
        assert r.ttft_s[0, 0] == pytest.approx(1.0)
        assert r.ttft_s[0, 1] == pytest.approx(b_ttft)
    # the same workload where B comes to an idle engine: no wait either way
    for lookahead in (False, True):
        r = simulate([cost], [Scheduler(4, 16, 10_000, lookahead=lookahead)], [0.0, 2.5], [4, 4], [1, 2])
        assert r.ttft_s[0, 1] == pytest.approx(1.0)


def test_a_decode_run_in_the_plan_simulation_stops_one_step_later():
    # A decodes alone for many steps; B's arrival at 6.5 s falls inside that run: it is admitted at the first
    # step starting after it (7 s), or with lookahead at the second (8 s)
    cost = StepCost((1, 4096), (1.0, 1.0), 0.0, 0.0)
    plain = simulate([cost], [Scheduler(4, 16, 10_000)], [0.0, 6.5], [4, 4], [40, 3])
    ahead = simulate([cost], [Scheduler(4, 16, 10_000, lookahead=True)], [0.0, 6.5], [4, 4], [40, 3])
    assert plain.ttft_s[0, 1] == pytest.approx(1.5) and ahead.ttft_s[0, 1] == pytest.approx(2.5)
    # and A's decode is the same 1 s a token in both
    assert plain.finish_s[0, 0] == ahead.finish_s[0, 0] == pytest.approx(40.0)


def test_serve_applies_it_with_async_scheduling_only():
    base = ["serve", "llama-3.1-8b", "--input-len", "1024", "--output-len", "256", "--concurrency", "8",
            "--arrival", "closed-loop", "--json"]
    on = run(*base)
    off = run(*base, "--no-async-scheduling")
    assert on.code == 0 and off.code == 0, (on.err, off.err)
    assert any("waits for the step after next" in n for n in on.json["notes"])
    assert not any("waits for the step after next" in n for n in off.json["notes"])
    assert StepRules().lookahead is False


def test_benchmark_entries_follow_their_release():
    from tests.test_published_fit import pub

    ids = ["vq-qwen25-7b-bf16-rtx4090-tp1-sharegpt-c8-ttft", "gpustack-vllm-qwen3-8b-h100-sharegpt-c4-ttft"]
    points, _ = pub.load_points(ROOT / "bench" / "published.yaml", ids)
    by_id = {p.id: p for p in points}
    assert by_id[ids[0]].rules.lookahead is True  # vLLM 0.25.1: async scheduling by default
    assert by_id[ids[1]].rules.lookahead is False  # vLLM 0.11.0: synchronous
