"""vLLM V0's step budget with chunked prefill: 512 tokens before v0.6.5 (vllm/config.py SchedulerConfig), 2048 from
it (PR #10544). bench/published.py's release rule (``v0_small_chunks``) and the budget a benchmark entry is priced
with."""

from __future__ import annotations

import pytest

from tests.test_published_fit import pub


@pytest.mark.parametrize("version, small", [
    ("0.6.4.post1", True),   # the last release before PR #10544
    ("0.6.5", False),        # the first with 2048
    ("0.6.3.post2.dev308+gb489fc3c", True),
    ("0.4.3", True),
    ("0.5", True),           # every 0.5.x is before 0.6.5
    ("0.6", False),          # 0.6.0-0.6.4 or 0.6.5-0.6.6: not known, the profile's 2048
    ("0.7.2", False),
    ("main @ 1a2b3c4", False),
])
def test_release_rule(version, small):
    assert pub.v0_small_chunks({"engine_version": version}) is small


def _entry(version: str, model: str = "meta-llama/Llama-3.1-8B", **settings) -> dict:
    return {"id": "t", "quantity": "ttft_s", "value": 0.1, "engine": "vllm", "engine_version": version,
            "model_config": model, "gpu": "a100-80gb", "gpus": 1, "tp": 1,
            "settings": {"arrival": "closed-loop", "client": "server", "input_len": 1000, "output_len": 16,
                         "concurrency": 38, **settings}}


def test_a_chunked_prefill_entry_before_0_6_5_is_priced_with_512_token_steps():
    """Llama-3.1-8B's 131,072 tokens of context turn V0's chunked prefill on (v0_chunked_prefill): 512-token steps
    in 0.6.3.post1, 2048 in 0.6.5 and 0.7.2; a budget the run states, or multi-step scheduling, keeps its own."""
    p = pub.Point(_entry("0.6.3.post1"))
    assert p.engine_name == "vllm-v0" and not p.rules.whole_prompts
    assert p.mem.max_num_batched_tokens == 512
    assert pub.Point(_entry("0.6.5")).mem.max_num_batched_tokens == 2048
    assert pub.Point(_entry("0.7.2")).mem.max_num_batched_tokens == 2048
    assert pub.Point(_entry("0.6.3.post1", max_num_batched_tokens=4096)).mem.max_num_batched_tokens == 4096
    assert pub.Point(_entry("0.6.3.post1", num_scheduler_steps=8)).mem.max_num_batched_tokens != 512


def test_an_entry_without_chunked_prefill_keeps_whole_prompts():
    """Llama-3-8B (8,192 tokens of context) runs V0 without chunked prefill: whole prompts within max(8,192, 2,048),
    whatever the release."""
    p = pub.Point(_entry("0.6.3.post1", model="meta-llama/Meta-Llama-3-8B"))
    assert p.rules.whole_prompts and p.mem.max_num_batched_tokens == 8192


def test_512_token_steps_queue_a_closed_loop_of_short_answers_longer():
    """38 clients of 1,000-token prompts and 16-token answers (France-Travail's vLLM 0.6.3.post1 run): with
    512-token steps about half a prompt runs a step, and a prompt waits for most of the others' first; priced with
    2048-token steps two prompts run a step and the wait is short. The mean TTFT comes out more than twice as long."""
    small = pub.Point(_entry("0.6.3.post1")).predict()
    large = pub.Point(_entry("0.6.5")).predict()
    assert small > 2 * large
