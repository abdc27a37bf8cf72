"""How an engine admits a request against the KV pool (``scheduler.kv_admission``): vLLM (V1 and V0) gives a request
blocks as its tokens come and preempts when none is left, so serve's static batches are sized by what a running request
holds on average (its prompt and half its output; the step-by-step paths simulate the preemptions instead, since
session 51: tests/test_preemption_s51.py); TensorRT-LLM's GUARANTEED_NO_EVICT reserves the whole sequence at admission;
SGLang keeps the whole sequence (its decaying reservation is not modelled). The profiles, the strict parse, the batch it
sizes by hand, and a closed loop that the pool limits."""

from __future__ import annotations

import pytest

from planner.hardware.engine import load_engine
from planner.hardware.profiles import HardwareError
from planner.hardware.serve import Scenario, StepRules, _replica_admission, held_output_of, simulate


@pytest.mark.parametrize("engine, admission, held", [
    ("vllm", "on_demand", 0.5), ("vllm-v0", "on_demand", 0.5), ("trtllm", "whole", 1.0), ("sglang", "whole", 1.0),
])
def test_each_engine_profile_names_its_admission(engine, admission, held):
    e = load_engine(engine)
    assert e.kv_admission == admission
    assert held_output_of(e) == held


@pytest.mark.parametrize("bad", ["lazy", "true", "[on_demand]"])
def test_an_unknown_admission_is_refused(tmp_path, monkeypatch, bad):
    from tests.test_published_fit import _engines_copy

    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\nscheduler: {{kv_admission: {bad}}}\n"})
    with pytest.raises(HardwareError, match="kv_admission"):
        load_engine("vllm-v0")


class _Pool:
    """A KV pool of 100,000 tokens (one token a unit), no other limit."""
    max_model_len, max_num_seqs, max_num_batched_tokens = 16384, 1024, 8192
    pool = 100_000

    @classmethod
    def max_batch(cls, tokens):
        return cls.pool // tokens


def test_the_batch_is_sized_by_the_whole_sequence_or_by_its_mean():
    """20 clients of 4,000 + 4,000 tokens on 100,000 tokens: whole sequences, 100,000 // 8,000 = 12 run at once;
    held on demand (the prompt and half the output, 6,000), 100,000 // 6,000 = 16."""
    s = Scenario(4000, 4000, 20, "closed-loop")
    assert _replica_admission(_Pool(), s, 1, closed=True)[1] == 12
    assert _replica_admission(_Pool(), s, 1, closed=True, held_output=0.5)[1] == 16
    # where the pool is not the limit, both run every client: 4 clients
    small = Scenario(4000, 4000, 4, "closed-loop")
    assert _replica_admission(_Pool(), small, 1, closed=True, held_output=0.5)[1] == 4
    # requests that stop at end-of-sequence hold their own mean length: 4,000 + 2,000 / 2 = 5,000 -> 20
    eos = Scenario(4000, 4000, 20, "closed-loop", mean_output_len=2000.0)
    assert _replica_admission(_Pool(), eos, 1, closed=True, held_output=0.5)[1] == 20


def test_a_request_that_cannot_finish_alone_is_refused_either_way():
    """60,000 + 60,000 tokens do not fit in 100,000 even though the mean held (90,000) would: refused."""
    from planner.analysis.errors import OptionError

    class Long(_Pool):
        max_model_len = 131072

    s = Scenario(60000, 60000, 2, "closed-loop")
    for held in (1.0, 0.5):
        with pytest.raises(OptionError, match="not even one request fits"):
            _replica_admission(Long(), s, 1, closed=True, held_output=held)


def test_on_demand_admission_runs_a_pool_limited_closed_loop_with_more_at_once():
    """The closed loop above through the step simulation (flat 10 ms steps): with more requests running at once,
    a client waits less for a slot, so the mean TTFT falls and the output rate rises."""
    from tests.test_serve import _FlatModel
    from planner.hardware.expected import Factors

    s = Scenario(4000, 4000, 20, "closed-loop", requests=40)
    whole = simulate(_FlatModel(Factors()), _Pool(), s, server=False)
    mean = simulate(_FlatModel(Factors()), _Pool(), s, server=False, rules=StepRules(held_output=0.5))
    assert mean.expected.ttft_s < whole.expected.ttft_s
    assert mean.expected.output_tokens_per_s > whole.expected.output_tokens_per_s


def test_the_wait_note_says_how_the_pool_counts_a_running_request():
    s = Scenario(4000, 4000, 20, "closed-loop")
    whole = _replica_admission(_Pool(), s, 1, closed=True)[2]
    mean = _replica_admission(_Pool(), s, 1, closed=True, held_output=0.5)[2]
    assert any("12 run at once (the KV pool limits them)" in n for n in whole)
    assert any("16 run at once (the KV pool, each running request counted at its prompt and 50% of its output" in n
               for n in mean)
    # on demand, the engine admits by the prompt and preempts later: the note says which way that moves the latencies
    said = [n for n in mean if n.startswith("the engine itself admits a request once its prompt fits")]
    assert len(said) == 1 and "first tokens sooner" in said[0] and "later tokens slower" in said[0]
    assert not any(n.startswith("the engine itself admits") for n in whole)
    # where max_num_seqs, not the pool, is the limit, there is nothing to say
    class Seqs(_Pool):
        max_num_seqs = 8
    capped = _replica_admission(Seqs(), s, 1, closed=True, held_output=0.5)[2]
    assert any("8 run at once (max_num_seqs limits them)" in n for n in capped)
    assert not any(n.startswith("the engine itself admits") for n in capped)


def test_the_request_rate_loop_counts_the_pool_the_same_way():
    """run_steps (the request-rate and front-end loop): four 10-token prompts of 40 tokens out sent at once into a
    pool of 100 tokens. Whole sequences (50 each): two start in the first step. Prompt and half the output (30
    each): three."""
    from planner.hardware.serve import run_steps

    def flat(pieces):
        return 10e-3

    sends = [(0.0, 4, 10, 40)]
    whole, _ = run_steps(sends, 64, 8, price=flat, kv_tokens=100)
    mean, _ = run_steps(sends, 64, 8, price=flat, kv_tokens=100, kv_held_output=0.5)
    assert whole[0] == {(10, 0): 2}
    assert mean[0] == {(10, 0): 3}


@pytest.mark.parametrize("engine, admission", [("vllm", "on_demand"), ("trtllm", "whole"), ("sglang", "whole")])
def test_serve_json_names_the_engines_admission(engine, admission):
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import deployment_dict, serve
    from tests.test_serve import _model

    d = serve(_model("llama-3.1-8b"), load_profile("h100-sxm"), engine=engine, input_len=512, output_len=64,
              concurrency=4)
    assert deployment_dict(d)["settings"]["kv_admission"] == admission
