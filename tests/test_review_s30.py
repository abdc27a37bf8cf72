"""Review of session 29's change (hostile-input guards, hub budget): what it refused or reported wrongly.

- The step budgets of ``serve`` and ``plan`` (``hardware/serve.py`` ``check_simulated_steps``,
  ``hardware/planning.py`` ``check_prefill_steps``) refused realistic long-context runs that session 28's code
  simulated in 1-18 s (timed on this machine, 2026-12-04): 256 requests of 98,304 + 32,768 tokens on one H100
  (vLLM: 3 fit the KV pool at once, 2,796,118 steps, 11 s, 1.0 GB), DeepSeek-V3 at 131,072 + 32,768 on 8 H200s
  (2,097,088 steps, 9 s), a plan of 130,000-token prompts on A100s (vLLM's 2,048-token chunks × the default 300
  requests: 19,200 prefill steps, 72 candidates, 18 s), and 20,000 prompts sent together to an in-process engine
  (SGLang, ideal), which prices one wave, not every request (0.7 s).
- ``cli/hub.py`` ``_within_budget``: a request the deadline cut, whose thread then ended before the waiting
  thread looked again, answered the cut's own error (a broken-off answer) instead of the budget's.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.test_hostile import cli


def _scenario(**kw):
    from planner.hardware.serve import Scenario

    return Scenario(**kw)


@pytest.mark.parametrize("requests,slots", [
    (256, 3),  # Llama-3.1-8B, 98,304 + 32,768 tokens, vLLM on one H100: 2,796,118 decode steps
    (256, 4),  # DeepSeek-V3, 131,072 + 32,768 tokens, vLLM on 8 H200: 2,097,088
])
def test_serve_simulates_256_long_context_requests_of_32k_output(requests, slots):
    from planner.hardware.serve import check_simulated_steps

    check_simulated_steps(_scenario(input_len=98_304, output_len=32_768, concurrency=256), requests, slots, 8192)
    check_simulated_steps(_scenario(input_len=98_304, output_len=32_768, concurrency=256, arrival="closed-loop",
                                    requests=256), requests, slots, 8192)


def test_serve_still_refuses_a_run_of_millions_of_steps_more():
    from planner.analysis.errors import OptionError
    from planner.hardware.serve import check_simulated_steps

    # 256 requests of 131,072 output tokens, one at a time: 33,554,176 steps
    with pytest.raises(OptionError, match="33,554,176 engine steps"):
        check_simulated_steps(_scenario(input_len=1, output_len=131_072, concurrency=256), 256, 1, 8192)


def test_plan_simulates_a_128k_prompt_in_2048_token_chunks_at_the_default_requests():
    from planner.hardware.planning import Workload, check_prefill_steps

    # 131,072 tokens in vLLM's chunks of 2,048 on an A100 (SGLang's below 35 GiB): 64 steps × 300 requests
    check_prefill_steps(Workload(rate_per_s=0.5, input_len=131_072, output_len=1000), 2048, "vLLM")


@pytest.mark.parametrize("engine", ["ideal"])
def test_serve_together_in_process_counts_the_prompts_it_prices_not_every_request(tmp_path, engine):
    """An engine without an HTTP front-end cost simulates requests sent together wave by wave, pricing one full
    wave and the rest (``simulate``'s run_wave): 20,000 prompts of 16,384 tokens in 8,192-token chunks are not
    20,000 chunks priced apart. (SGLang was such an engine until session 59 fitted its front end at 5 ms a request;
    a burst through a front end is simulated request by request, and refused beyond 16,384: tests/test_serve.py.)"""
    t0 = time.monotonic()
    r = cli("serve", "qwen2.5-0.5b", "--engine", engine, "--input-len", "16384", "--output-len", "16",
            "--concurrency", "20000", "--max-num-batched-tokens", "8192", "--json", home=tmp_path, timeout=60)
    assert r.code == 0, r.err
    assert time.monotonic() - t0 < 30


def test_a_request_cut_at_the_deadline_reports_the_budget_even_when_its_thread_ends_first(monkeypatch):
    from planner.cli import hub

    released = threading.Event()
    ended = []

    def request(watch):
        try:
            released.wait(10)
            raise hub.HubError("the hub broke off its answer (cut) after 0 bytes")
        finally:
            ended.append(True)

    cut = hub._Watch.cut

    def cut_then_let_it_end(self):
        cut(self)
        released.set()  # the cut socket ends the blocked read at once ...
        for _ in range(200):  # ... and the thread may end before the waiting one looks again
            if ended:
                break
            time.sleep(0.01)
        time.sleep(0.05)

    monkeypatch.setattr(hub._Watch, "cut", cut_then_let_it_end)
    with pytest.raises(hub.HubError, match="unreachable"):
        hub._within_budget(request, time.monotonic() + 0.2, 0.2, "config.json")
