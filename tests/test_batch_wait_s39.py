"""TensorRT-LLM's delayed batching of new prompts (``batch_wait_timeout_iters``, ``batch_wait_max_tokens_ratio``;
PyExecutor._schedule / _waiting_requests): while requests decode, a step takes no new prompt until the count
of steps that waited reaches the timeout or the step's tokens reach the threshold; and SGLang's prefill-first
scheduling (a step that can take a prompt runs prompts alone). Hand-computed step schedules of the scheduler
loop, the option's rules and refusals, and the engine profiles' settings."""

from __future__ import annotations

import pytest

from planner.analysis.errors import OptionError
from planner.hardware.engine import load_engine
from planner.hardware.profiles import load_profile
from planner.hardware.serve import batch_wait_of, run_steps, serve
from tests.clirun import run
from tests.test_serve import _model


def _flat_price(pieces) -> float:  # every step 10 ms
    return 10e-3


# A: a 4-token prompt, 6 tokens out, sent at 0. B: a 4-token prompt, 3 out, sent at 15 ms (during step 1).
SENDS = [(0.0, 1, 4, 6), (15e-3, 1, 4, 3)]


def test_without_waiting_the_prompt_joins_the_next_step():
    steps, done = run_steps(SENDS, 16, 4, price=_flat_price)
    assert steps[2] == {(1, 5): 1, (4, 0): 1}
    b = max(done, key=lambda m: m.send_s)
    assert b.first_s - b.send_s == pytest.approx(15e-3)  # step 2 runs 20-30 ms


def test_prompt_waits_out_the_timeout_while_a_request_decodes():
    """Timeout 2 steps, threshold 8 tokens. B has arrived by step 2; a step would run its 4 prompt tokens
    and A's one decode token, 5 < 8: steps 2 and 3 hold it back (the count goes 1, 2), step 4 takes it (the
    count is at the timeout) and resets the count. B's first token comes at the end of step 4, 50 ms:
    35 ms after it was sent, where it was 15 ms without waiting."""
    steps, done = run_steps(SENDS, 16, 4, price=_flat_price, batch_wait=(2, 8))
    assert steps[:5] == [{(4, 0): 1}, {(1, 4): 1}, {(1, 5): 1}, {(1, 6): 1}, {(1, 7): 1, (4, 0): 1}]
    a, b = sorted(done, key=lambda m: m.send_s)
    assert b.first_step == 4 and b.first_s - b.send_s == pytest.approx(35e-3)
    assert a.end_step == 5  # A's own tokens are not delayed: its 6th comes with decode step 5


def test_threshold_reached_takes_the_prompt_at_once():
    """Threshold 5: 4 prompt tokens + 1 decode token reach it, so nothing waits (TensorRT-LLM stops waiting
    at num_scheduled_tokens >= ratio x max_num_tokens)."""
    assert run_steps(SENDS, 16, 4, price=_flat_price, batch_wait=(40, 5))[0] == run_steps(
        SENDS, 16, 4, price=_flat_price)[0]


def test_nothing_waits_without_a_decoding_request():
    """Two prompts sent together, one per step (a 4-token budget): the first step has nothing decoding
    and takes A; the second has A decoding and holds B back for the whole timeout of 3 steps."""
    steps, done = run_steps([(0.0, 2, 4, 8)], 4, 4, price=_flat_price, batch_wait=(3, 100))
    assert steps[0] == {(4, 0): 1}
    assert [set(s) for s in steps[1:5]] == [{(1, 4)}, {(1, 5)}, {(1, 6)}, {(1, 7), (3, 0)}]
    # (the 4-token budget less A's decode leaves 3: B's prompt is cut and completes in step 5)
    assert max(m.first_step for m in done) == 5


def test_batch_wait_of_follows_tensorrt_llms_stop_rule():
    trt = load_engine("trtllm")
    assert trt.batch_wait == (0, 0.0)  # llm_args' defaults: off
    assert batch_wait_of(trt, None, None, 8192) is None
    assert batch_wait_of(trt, 40, 0.8, 8192) == (40, pytest.approx(6553.6))
    # either at 0 turns it off: iters_count >= 0, or tokens >= 0, always stops the wait
    assert batch_wait_of(trt, 0, 0.8, 8192) is None
    assert batch_wait_of(trt, 40, 0.0, 8192) is None
    with pytest.raises(OptionError, match="fraction"):
        batch_wait_of(trt, 40, 1.5, 8192)
    with pytest.raises(OptionError, match="no delayed batching"):
        batch_wait_of(load_engine("vllm"), 40, 0.8, 8192)
    assert load_engine("vllm").batch_wait is None and load_engine("sglang").batch_wait is None


def test_clients_in_step_never_wait():
    """Closed-loop clients of one length that start together stay in step: all four finish together and
    send their next prompts when nothing decodes, so delayed batching changes nothing."""
    def loop():
        sent = 4

        def resend(_t, finished):
            nonlocal sent
            more = min(finished, 12 - sent)
            sent += more
            return [(more, 4, 3)] if more else []
        return resend

    held = run_steps([(0.0, 4, 4, 3)], 16, 4, price=_flat_price, resend=loop(), batch_wait=(40, 1000))
    assert held[0] == run_steps([(0.0, 4, 4, 3)], 16, 4, price=_flat_price, resend=loop())[0]
    assert held[0][:4] == [{(4, 0): 4}, {(1, 4): 4}, {(1, 5): 4}, {(4, 0): 4}]


def test_serve_waits_lengthen_ttft_not_the_decode_steps():
    """Closed-loop clients through the HTTP front end reach the engine one after another, and with drawn
    lengths they drift apart: prompts arrive while others decode and wait, so TTFT grows; TPOT stays
    within a few percent (the decode steps are the same, a few of them lighter by a prompt)."""
    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    kw = dict(engine="trtllm", input_len=512, output_len=64, concurrency=8, arrival="closed-loop", requests=32,
              input_len_dist="uniform:400:600", output_len_dist="uniform:32:96")
    base = serve(spec, hw, **kw)
    held = serve(spec, hw, **kw, batch_wait_iters=20, batch_wait_tokens_ratio=0.9)
    assert base.batch_wait is None
    assert held.batch_wait == (20, pytest.approx(0.9 * held.memory.max_num_batched_tokens))
    assert any("delayed batching" in n for n in held.notes)
    assert held.result.expected.ttft_s > 2 * base.result.expected.ttft_s
    assert held.result.expected.tpot_s == pytest.approx(base.result.expected.tpot_s, rel=0.1)


@pytest.mark.parametrize("args, fragment", [
    (["--engine", "vllm", "--batch-wait-iters", "40"], "no delayed batching"),
    (["--engine", "trtllm", "--batch-wait-tokens-ratio", "1.5"], "fraction"),
    (["--engine", "trtllm", "--batch-wait-tokens-ratio", "nan"], "fraction"),
])
def test_cli_refusals(args, fragment):
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", *args)
    r.assert_error(fragment)


def test_cli_json_names_the_setting():
    r = run("serve", "llama-3.2-1b", "-H", "h100-sxm", "--engine", "trtllm", "--batch-wait-iters", "40",
            "--batch-wait-tokens-ratio", "0.8", "--arrival", "closed-loop", "-C", "4", "--json")
    assert r.code == 0, r.err
    assert r.json["settings"]["batch_wait"] == {"timeout_iters": 40, "min_step_tokens": 6554}


# ---- SGLang's prefill-first scheduling (Scheduler.get_next_batch_to_run: "Run prefill first if possible") ----


def test_prefill_first_runs_the_prompt_alone_and_the_decode_waits():
    """A (4 in, 4 out) at 0, B (4 in, 2 out) at 15 ms, 10 ms steps. Mixed (vLLM, TensorRT-LLM): B's prompt rides
    in step 2 with A's decode, and A's 4th token comes with step 3. Prefill first (SGLang): step 2 is B's prompt
    alone, A makes no token in it, and A's 4th token comes a step later (step 4); B's first token still comes
    with step 2."""
    sends = [(0.0, 1, 4, 4), (15e-3, 1, 4, 2)]
    mixed, done_m = run_steps(sends, 16, 4, price=_flat_price)
    alone, done_a = run_steps(sends, 16, 4, price=_flat_price, prefill_first=True)
    assert mixed[2] == {(1, 5): 1, (4, 0): 1}
    assert alone[2] == {(4, 0): 1}
    assert alone[3] == {(1, 4): 2}  # A at context 5 and B at 4 decode together, at their mean context (4.5 -> 4)
    a_m, b_m = sorted(done_m, key=lambda m: m.send_s)
    a, b = sorted(done_a, key=lambda m: m.send_s)
    assert (a_m.end_step, a.end_step) == (3, 4)
    assert b.first_step == b_m.first_step == 2


def test_prefill_first_goes_on_with_a_cut_prompt_before_any_decode():
    """A 4-token budget: B's 6-token prompt is cut 4 + 2 and both pieces run alone (steps 1 and 2), so A
    (2 in, 6 out, decoding since step 0) makes no token until step 3 and ends at step 7 (mixed: step 5)."""
    sends = [(0.0, 1, 2, 6), (5e-3, 1, 6, 2)]
    alone, done = run_steps(sends, 4, 4, price=_flat_price, prefill_first=True)
    assert alone[1:3] == [{(4, 0): 1}, {(2, 4): 1}]
    assert max(done, key=lambda m: m.end_step).end_step == 7
    mixed, done_m = run_steps(sends, 4, 4, price=_flat_price)
    assert mixed[1] == {(1, 2): 1, (3, 0): 1} and max(m.end_step for m in done_m) == 5


def test_only_sglang_runs_prefill_first():
    assert load_engine("sglang").prefill_first
    assert not load_engine("vllm").prefill_first and not load_engine("trtllm").prefill_first
    spec, hw = _model("llama-3.2-1b"), load_profile("h100-sxm")
    kw = dict(input_len=256, output_len=16, concurrency=4, arrival="closed-loop")
    assert any("steps of their own" in n for n in serve(spec, hw, engine="sglang", **kw).notes)
    assert not any("steps of their own" in n for n in serve(spec, hw, engine="vllm", **kw).notes)


# ---- vLLM V0 without chunked prefill (bench/published.py: the benchmark's V0 profile) ----


def test_whole_prompts_are_not_cut_at_the_budget():
    """An 8-token budget and two 6-token prompts sent together. Chunked (vLLM V1): the first prompt and 2
    tokens of the second, then its last 4. Whole (V0 without chunked prefill): the second waits for the next
    step whole; with prefill first, the first prompt's decode waits for it too."""
    sends = [(0.0, 2, 6, 3)]
    cut, _ = run_steps(sends, 8, 4, price=_flat_price)
    assert cut[:2] == [{(6, 0): 1, (2, 0): 1}, {(1, 6): 1, (4, 2): 1}]
    whole, done = run_steps(sends, 8, 4, price=_flat_price, prefill_first=True, whole_prompts=True)
    assert whole[:3] == [{(6, 0): 1}, {(6, 0): 1}, {(1, 6): 2}]
    assert sorted(m.first_step for m in done) == [0, 1]


def _published():
    from tests.test_published_fit import pub

    return pub


@pytest.mark.parametrize("model, gpu, settings, chunked", [
    ("meta-llama/Llama-3.1-8B", "h100-sxm", {}, True),  # 131,072 tokens of context on a CUDA GPU
    ("meta-llama/Llama-3.1-8B", "mi300x", {}, False),  # ROCm: current_platform.is_cuda() is false
    ("meta-llama/Llama-3.1-8B", "h100-sxm", {"max_model_len": 8192}, False),  # the server's max_model_len
    ("meta-llama/Meta-Llama-3-8B", "h100-sxm", {}, False),  # 8,192
    ("deepseek-ai/DeepSeek-R1", "h200-sxm", {}, False),  # MLA: never in V0
    ("mistralai/Mistral-7B-v0.1", "h100-sxm", {"max_model_len": 65536}, False),  # a sliding window
    ("meta-llama/Meta-Llama-3-8B", "h100-sxm", {"enable_chunked_prefill": True}, True),  # the run's own
])
def test_v0_chunked_prefill_default(model, gpu, settings, chunked):
    from planner.cli.common import load_model

    assert _published().v0_chunked_prefill(settings, load_model(model, None).spec, load_profile(gpu)) is chunked


def test_a_v0_entry_runs_whole_prompts_alone_within_max_model_len():
    """A vLLM 0.7.3 run of Llama-3-8B (8,192 tokens of context: no chunked prefill) is priced with prompts alone
    and whole, within a budget of max(8,192, 2,048); a 0.9 run (V1) is not."""
    pub = _published()
    entry = {"id": "t", "quantity": "tpot_s", "value": 0.01, "engine": "vllm", "engine_version": "0.7.3",
             "model_config": "meta-llama/Meta-Llama-3-8B", "gpu": "h100-sxm", "gpus": 1, "tp": 1,
             "settings": {"arrival": "closed-loop", "client": "server", "input_len": 256, "output_len": 64,
                          "concurrency": 8}}
    v0 = pub.Point(entry)
    assert v0.engine_name == "vllm-v0"
    assert v0.rules.prefill_first and v0.rules.whole_prompts
    assert v0.mem.max_num_batched_tokens == 8192
    v1 = pub.Point({**entry, "engine_version": "0.9.0"})
    assert not v1.rules.prefill_first and not v1.rules.whole_prompts
