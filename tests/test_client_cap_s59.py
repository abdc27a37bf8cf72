"""The client's cap on requests in flight (``simulate(..., max_in_flight=)``, ``vllm bench serve --request-rate R
--max-concurrency C``): hand-computed schedules, the send times, and the refusals."""

import numpy as np
import pytest

from planner.analysis.errors import OptionError
from planner.hardware.simulate import Scheduler, client_sends, poisson_arrivals, simulate
from tests.test_simulate import LINEAR  # a step of N new tokens takes 0.1 + 0.01·N seconds


def one(arrivals, inp, out, **kw):
    return simulate([LINEAR], [Scheduler(8, 100, 10_000)], np.asarray(arrivals, float), inp, out, **kw)


def test_a_cap_of_one_runs_the_requests_one_after_another_each_timed_from_its_send():
    # three requests of 10 in / 3 out, arriving at 0, 0 and 0.5. One in flight at a time: each runs alone, its
    # prompt step 0.2 s and two decode steps of 0.11 s: sent at 0, 0.42 (when the first ends; it had arrived at 0)
    # and 0.84 (arrived at 0.5, held until the second ends); each TTFT 0.2 s and e2e 0.42 s from its send.
    r = one([0.0, 0.0, 0.5], [10, 10, 10], [3, 3, 3], max_in_flight=1)
    np.testing.assert_allclose(r.finish_s[0], [0.42, 0.84, 1.26], rtol=1e-12)
    np.testing.assert_allclose(r.ttft_s[0], [0.2, 0.2, 0.2], rtol=1e-12)
    np.testing.assert_allclose(r.e2e_s[0], [0.42, 0.42, 0.42], rtol=1e-12)
    np.testing.assert_allclose(r.duration_s, [1.26], rtol=1e-12)
    # uncapped (tests/test_simulate.py's three-request schedule): the first two share the prompt step
    free = one([0.0, 0.0, 0.5], [10, 10, 10], [3, 3, 3])
    np.testing.assert_allclose(free.finish_s[0], [0.54, 0.54, 0.96], rtol=1e-12)


def test_the_held_request_starts_its_clock_when_the_client_sends_it():
    # cap 2: the third request arrives at 0.5 while the first two run (they end at 0.54); the client sends it at
    # 0.54, when the engine (uncapped) would have taken it anyway: the same schedule, but its TTFT and e2e count
    # from 0.54, not from 0.5 (the client's wait is not in the benchmark's figures)
    capped = one([0.0, 0.0, 0.5], [10, 10, 10], [3, 3, 3], max_in_flight=2)
    free = one([0.0, 0.0, 0.5], [10, 10, 10], [3, 3, 3])
    np.testing.assert_array_equal(capped.finish_s, free.finish_s)
    np.testing.assert_allclose(free.ttft_s[0, 2], 0.24, rtol=1e-12)
    np.testing.assert_allclose(capped.ttft_s[0, 2], 0.2, rtol=1e-12)
    np.testing.assert_allclose(capped.e2e_s[0, 2], 0.42, rtol=1e-12)


def test_a_cap_the_run_never_reaches_changes_nothing():
    arr = poisson_arrivals(2.0, 60, seed=3)[0]
    inp, out = np.full(60, 50), np.full(60, 20)
    free = one(arr, inp, out)
    capped = one(arr, inp, out, max_in_flight=60)
    for f in ("ttft_s", "e2e_s", "finish_s", "output_tokens_per_s", "mean_in_system"):
        np.testing.assert_array_equal(getattr(capped, f), getattr(free, f))


def test_under_overload_the_cap_bounds_the_requests_in_the_engine_and_their_waits():
    # 200 requests at 100/s where a request alone takes 0.3 s: uncapped, the queue grows through the run
    # (TTFTs of seconds); capped at 4, the engine never holds more than 4 and every TTFT stays within a few steps
    # (under a second), while the run takes as long as the engine needs
    arr = poisson_arrivals(100.0, 200, seed=1)[0]
    inp, out = np.full(200, 10), np.full(200, 3)
    free = one(arr, inp, out)
    capped = one(arr, inp, out, max_in_flight=4)
    assert capped.mean_in_system[0] <= 4
    assert free.mean_in_system[0] > 8
    assert np.nanmax(capped.ttft_s) < 1.0 and np.nanmax(free.ttft_s) > 5.0
    assert capped.duration_s[0] >= free.duration_s[0] - 1e-9


def test_client_sends_is_the_arrival_or_the_release_of_a_slot():
    # cap 2: request 2 waits for the first end (at 3.0), request 3 for the second (5.0); request 4 arrived after
    # the third end (4.5 < 6.0)
    arr = np.array([[0.0, 1.0, 2.0, 2.5, 6.0]])
    ends = np.array([[5.0, 3.0, 4.5, 9.0, 10.0]])  # in any order
    np.testing.assert_array_equal(client_sends(arr, ends, [2]), [[0.0, 1.0, 3.0, 4.5, 6.0]])
    np.testing.assert_array_equal(client_sends(arr, ends, [5]), arr)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4", float("inf"), float("nan")])
def test_a_cap_that_is_not_a_whole_count_is_refused(bad):
    with pytest.raises(OptionError, match="max_in_flight"):
        one([0.0], [10], [3], max_in_flight=bad)


def test_one_cap_per_configuration():
    with pytest.raises(OptionError, match="one cap per configuration"):
        one([0.0], [10], [3], max_in_flight=[1, 2])
    r = simulate([LINEAR, LINEAR], [Scheduler(8, 100, 10_000)] * 2, np.array([0.0, 0.0, 0.5]), [10] * 3, [3] * 3,
                 max_in_flight=[1, None])
    np.testing.assert_allclose(r.finish_s, [[0.42, 0.84, 1.26], [0.54, 0.54, 0.96]], rtol=1e-12)
