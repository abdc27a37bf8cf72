"""serve's scheduler loop runs decode stretches on a short path (``run_steps(stretch=True)``, the default): while no
request arrives, none finishes and the pool holds the step's tokens, each step only takes every decoding request's
token. The general path (``stretch=False``) is the reference: on scenarios that mix arrivals inside steps, closed
loops, the front end, asynchronous scheduling, SGLang's prefill-first steps, TensorRT-LLM's delayed batching,
vLLM's preemption and prefix cache, the two give the same steps, the same finishes on the same float clock, the same
step ends and the same counts."""

from __future__ import annotations

import random

import pytest

from planner.hardware.serve import run_steps


class Price:
    """A step price that depends on every piece (so that arrivals fall at uneven points inside steps), with
    ``again`` as ``StepPricer`` has it (the step priced last, once more), counting how often each is called."""

    def __init__(self, again: bool = True):
        self.last = None
        self.calls = self.agains = 0
        if not again:
            self.again = None

    def __call__(self, pieces: dict) -> float:
        self.calls += 1
        self.last = 1e-3 + sum(k * (n * 7e-6 + c * 3e-8) for (n, c), k in pieces.items()) + 1e-4 * len(pieces)
        return self.last

    def again(self) -> float:
        self.agains += 1
        return self.last


def _closed(clients_left: int, I: int, O: int):
    left = [clients_left]

    def resend(_t: float, finished: int) -> list:
        n = min(finished, left[0])
        left[0] -= n
        return [(n, I, O)] if n else []
    return resend


def _case(rng: random.Random) -> tuple[list, dict, int | None]:
    sends = []
    t = 0.0
    for _ in range(rng.randint(1, 5)):
        sends.append((t, rng.randint(1, 6), rng.choice([3, 17, 64, 200, 700]), rng.choice([1, 2, 9, 40, 120])))
        t += rng.choice([0.0, 0.0005, 0.004, 0.03, 0.2])
    kw: dict = dict(ctx_step=rng.choice([1, 1, 4, 16]))
    engine = rng.choice(["vllm", "vllm-async", "sglang", "trtllm", "v0"])
    if engine == "vllm-async":
        kw["lookahead"] = True
    if engine == "sglang":
        kw["prefill_first"] = True
    if engine == "trtllm":
        kw["batch_wait"] = (rng.randint(1, 5), rng.choice([8.0, 64.0, 400.0]))
    if engine == "v0":
        kw["whole_prompts"] = True
    if rng.random() < 0.4:
        kw["intake_s"] = rng.choice([1e-4, 2e-3])
    if rng.random() < 0.5:
        kw["kv_tokens"] = rng.choice([800, 1500, 4000])
        if engine in ("vllm", "vllm-async") and rng.random() < 0.7:
            kw["preempt"] = True
            kw["kv_seq_tokens"] = rng.choice([0, 15])
            kw["prefix_cache"] = rng.random() < 0.5
        else:
            kw["kv_held_output"] = rng.choice([1.0, 0.5])
    clients = rng.randint(1, 12) if rng.random() < 0.4 else None  # closed-loop clients: their next requests
    return sends, kw, clients


def _run(sends, kw, stretch: bool, again: bool = True):
    price = Price(again)
    ends: list = []
    stats: dict = {}
    steps, marks = run_steps(sends, budget=256, slots=8, price=price, step_ends=ends, stats=stats, stretch=stretch,
                             **kw)
    return (steps, marks, ends, stats), price


@pytest.mark.parametrize("seed", range(300))
def test_the_short_path_builds_the_steps_the_general_path_builds(seed):
    rng = random.Random(seed)
    sends, kw, clients = _case(rng)
    outcomes = []
    for stretch in (False, True):
        k = dict(kw)
        if clients is not None:  # a fresh closed loop for each run (it counts what it has sent)
            k["resend"] = _closed(clients, sends[0][2], sends[0][3])
        try:
            result, price = _run(sends, k, stretch)
            outcomes.append((result, price.calls + price.agains))  # a price for every step, either way
        except Exception as exc:  # (the two paths must fail alike, e.g. a request larger than the pool)
            outcomes.append((type(exc), str(exc)))
    ref, short = outcomes
    assert short == ref


def test_the_short_path_runs_and_prices_a_repeated_step_once():
    """A batch that decodes 100 tokens with contexts rounded to 16: the short path prices each distinct step
    once and repeats it (``again``) for the rest, and the clock ends where the general path's does."""
    sends = [(0.0, 4, 64, 100)]
    (ref, p_ref) = _run(sends, dict(ctx_step=16), stretch=False)
    (short, p_short) = _run(sends, dict(ctx_step=16), stretch=True)
    assert short == ref
    assert p_ref.agains == 0 and p_short.agains > 80  # 99 decode steps, a handful of distinct contexts
    assert p_short.calls + p_short.agains == p_ref.calls == len(ref[0])
    assert short[1][-1].end_s == ref[1][-1].end_s  # the same float, summed in the same order


def test_a_price_without_again_is_called_for_every_step():
    sends = [(0.0, 3, 20, 30), (0.01, 2, 50, 10)]
    (ref, _) = _run(sends, dict(ctx_step=4), stretch=False)
    (short, p) = _run(sends, dict(ctx_step=4), stretch=True, again=False)
    assert short == ref and p.calls == len(ref[0])


def test_an_arrival_inside_a_stretch_joins_the_step_the_general_path_gives_it():
    """A request sent while four decode: it joins the first step that starts after it arrives (with asynchronous
    scheduling, the one after that), on either path."""
    for lookahead in (False, True):
        sends = [(0.0, 4, 32, 60), (0.0337, 1, 32, 5)]
        (ref, _) = _run(sends, dict(lookahead=lookahead), stretch=False)
        (short, _) = _run(sends, dict(lookahead=lookahead), stretch=True)
        assert short == ref
        late = next(m for m in ref[1] if m.send_s > 0)
        assert late.start_step > 1  # it arrived inside the stretch, not before it
