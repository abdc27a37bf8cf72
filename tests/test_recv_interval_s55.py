"""SGLang's ``--scheduler-recv-interval`` (``SchedulerRecvSkipper``, python/sglang/srt/managers/
scheduler_recv_skipper.py): the scheduler takes new requests off its socket only when a count reaches N, each
loop adding its last batch's weight (decode 1, anything else 1000) and a receive setting it back to 0. So while
requests decode an arrival waits for up to N decode steps, and after a prefill step the next loop receives.
Hand-computed step schedules of the scheduler loop, the option's rules and refusals, and the profiles'
settings."""

from __future__ import annotations

import pytest

from planner.analysis.errors import OptionError
from planner.hardware.engine import load_engine
from planner.hardware.profiles import load_profile
from planner.hardware.serve import recv_interval_of, run_steps, serve
from tests.clirun import run
from tests.test_serve import _model


def _flat_price(pieces) -> float:  # every step 1 s
    return 1.0


# A: an 8-token prompt, 20 tokens out, sent at 0. B: an 8-token prompt, 4 out, sent at 2.5 s (during decode step 2).
# C: an 8-token prompt, 4 out, sent at 5.5 s.
A, B, C = (0.0, 1, 8, 20), (2.5, 1, 8, 4), (5.5, 1, 8, 4)


def _first_token_s(done, send_s: float) -> float:
    return next(m.first_s for m in done if m.send_s == send_s)


def test_every_loop_receives_by_default():
    """Without the interval B is taken by the loop at 3 s (the first after it arrived), its prompt runs alone
    (prefill first) from 3 to 4 s: its first token 1.5 s after it was sent."""
    steps, done = run_steps([A, B], 64, 8, price=_flat_price, prefill_first=True)
    assert steps[:4] == [{(8, 0): 1}, {(1, 8): 1}, {(1, 9): 1}, {(8, 0): 1}]
    assert _first_token_s(done, 2.5) == pytest.approx(4.0)


def test_an_arrival_waits_for_the_count_while_requests_decode():
    """N = 4. Loop 0 (idle) receives A; step 0 is A's prompt, so loop 1 (1 s) adds 1000 and receives (nothing
    yet). Decode steps 1, 2, 3 add 1 each: loops 2, 3, 4 (2, 3, 4 s) count 1, 2, 3 and do not receive, though B
    has arrived at 2.5 s; loop 5 (5 s) counts 4 and receives B, whose prompt runs from 5 to 6 s: its first token
    3.5 s after it was sent (1.5 s without the interval). C arrives at 5.5 s, during B's prompt: that prefill step
    fills the count, so the loop at 6 s receives C at once and its prompt runs from 6 to 7 s."""
    steps, done = run_steps([A, B, C], 64, 8, price=_flat_price, prefill_first=True, recv_interval=4)
    assert steps[:7] == [{(8, 0): 1}, {(1, 8): 1}, {(1, 9): 1}, {(1, 10): 1}, {(1, 11): 1}, {(8, 0): 1},
                         {(8, 0): 1}]
    assert _first_token_s(done, 2.5) == pytest.approx(6.0)
    assert _first_token_s(done, 5.5) == pytest.approx(7.0)
    a = next(m for m in done if m.send_s == 0.0)
    base = next(m for m in run_steps([A, B, C], 64, 8, price=_flat_price, prefill_first=True)[1] if m.send_s == 0.0)
    assert a.first_s == base.first_s  # A arrived at an idle engine: taken at once


def test_an_idle_engine_takes_a_request_at_once():
    """Requests that arrive one after another at an idle engine never wait for the count: an idle loop turns in
    microseconds (weight 1 a turn)."""
    sends = [(0.0, 1, 8, 2), (10.0, 1, 8, 2), (20.0, 1, 8, 2)]
    _, done = run_steps(sends, 64, 8, price=_flat_price, prefill_first=True, recv_interval=30)
    assert sorted(m.first_s - m.send_s for m in done) == pytest.approx([1.0, 1.0, 1.0])


def test_recv_interval_of_is_sglangs_setting():
    sgl = load_engine("sglang")
    assert sgl.recv_interval == 1  # server_args' default
    assert recv_interval_of(sgl, None) == 1
    assert recv_interval_of(sgl, 30) == 30
    for bad in (0, -3, 2.5, True):
        with pytest.raises(OptionError, match="whole number"):
            recv_interval_of(sgl, bad)
    for name in ("vllm", "trtllm"):
        eng = load_engine(name)
        assert eng.recv_interval is None
        assert recv_interval_of(eng, None) == 1
        with pytest.raises(OptionError, match="no such setting"):
            recv_interval_of(eng, 10)


def test_serve_closed_loop_waits_lengthen_ttft():
    """Eight closed-loop clients whose lengths drift apart: new requests arrive while others decode, so with
    the interval their first tokens wait for decode steps, by up to N of them. The prompts that waited are
    taken together, so fewer prefill steps (prefill first) stop the decoding requests: TPOT is no longer."""
    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    kw = dict(engine="sglang", input_len=512, output_len=64, concurrency=8, arrival="closed-loop", requests=32,
              input_len_dist="uniform:400:600", output_len_dist="uniform:32:96")
    base = serve(spec, hw, **kw)
    held = serve(spec, hw, **kw, scheduler_recv_interval=30)
    assert base.recv_interval == 1 and held.recv_interval == 30
    assert any("--scheduler-recv-interval 30" in n for n in held.notes)
    assert not any("scheduler-recv-interval" in n for n in base.notes)
    tpot = held.result.expected.tpot_s
    assert held.result.expected.ttft_s > base.result.expected.ttft_s + 5 * tpot
    assert held.result.expected.ttft_s < base.result.expected.ttft_s + 30 * tpot
    assert tpot <= base.result.expected.tpot_s
    # the wait is decode steps the request could have joined: it shows under the decode factors (and in the ideal),
    # not as the front end's request overhead
    over = [d.result.explain["ttft_s"]["request overhead"] for d in (base, held)]
    assert over[1] < over[0] + 2 * tpot
    assert held.result.ideal.ttft_s > base.result.ideal.ttft_s + 5 * held.result.ideal.tpot_s


@pytest.mark.parametrize("args, fragment", [
    (["--engine", "vllm", "--scheduler-recv-interval", "10"], "no such setting"),
    (["--engine", "trtllm", "--scheduler-recv-interval", "10"], "no such setting"),
])
def test_cli_refusals(args, fragment):
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", *args)
    r.assert_error(fragment)


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "x"])
def test_cli_refuses_a_bad_interval(value):
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", "--engine", "sglang", "--scheduler-recv-interval", value)
    assert r.code == 2, r.err
    assert "Traceback" not in r.err


def test_cli_json_names_the_setting():
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", "--engine", "sglang", "--scheduler-recv-interval", "30",
            "--arrival", "closed-loop", "-C", "4", "--json")
    assert r.code == 0, r.err
    assert r.json["settings"]["scheduler_recv_interval"] == 30
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", "--engine", "vllm", "--json")
    assert r.code == 0, r.err
    assert r.json["settings"]["scheduler_recv_interval"] == 1


def test_published_entries_that_set_it_are_priced_with_it():
    """bench/published.py reads settings.scheduler_recv_interval (the InferenceX B200 runs whose server command
    sets --scheduler-recv-interval 10 or 30) into the step rules it prices the entry with."""
    from pathlib import Path

    from tests.test_published_fit import pub

    ids = ["s51c-ixpr3363-b200-dsr1-fp8-sgl0512-1k1k-tp8-c64-ttft", "s51c-ixpr3363-b200-dsr1-fp8-sgl0512-1k1k-tp8-c4-ttft",
           "infx870-dsr1-h200-sgl-tp8-1k1k-c4-ttft"]
    points, _ = pub.load_points(Path(__file__).resolve().parents[1] / "bench" / "published.yaml", ids)
    by_id = {p.id: p for p in points}
    assert [by_id[i].rules.recv_interval for i in ids] == [30, 10, 1]  # (the H200 script sets none)
    assert "--scheduler-recv-interval 30" in by_id[ids[0]].entry["notes"]
