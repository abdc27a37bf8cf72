"""Session 67: benchmark entries whose bundled proxy config declared another context length than the model that ran.

vLLM V0 (0.6-0.7) turns chunked prefill on by default only where the server's max_model_len passes 32,768
(``v0_chunked_prefill``), and without it sizes each step to max(max_model_len, 2,048) tokens. A proxy config with the
wrong context therefore changed how France-Travail's runs were scheduled: Qwen2-7B-Instruct (32,768 in its config)
was priced as Qwen2.5-7B (131,072) with 512-token chunks, Meta-Llama-3-70B-Instruct-AWQ (8,192) as Llama-3.1-70B
(131,072), and Phi-3-mini-128k-instruct (131,072) as Phi-3-mini-4k-instruct (4,096), which refused the runs that set
max_model_len 45,920. The entries now carry the served model's max_model_len, or a proxy of the same shape and
context (Phi-3.5-mini-instruct)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_published_fit import pub
from tests.test_v0_chunk_budget_s63 import _entry

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def entries():
    return pub.read_yaml((ROOT / "bench" / "published.yaml").read_text())


def _timed(entries, model_prefix: str, version_prefix: str) -> list[dict]:
    return [e for e in entries if str(e.get("model", "")).startswith(model_prefix)
            and str(e.get("engine_version", "")).startswith(version_prefix) and not e.get("excluded")]


@pytest.mark.parametrize("model, version, mml", [
    ("Qwen/Qwen2-7B-Instruct", "0.6", 32768),
    ("Meta-Llama-3-70B-Instruct-AWQ", "0.6", 8192),
])
def test_the_served_context_turns_v0_chunked_prefill_off(entries, model, version, mml):
    """Each such entry states the served model's max_model_len, and V0 then runs whole prompts in steps of
    max(max_model_len, 2,048) tokens, not the 512-token chunks its proxy's 131,072 tokens gave."""
    found = _timed(entries, model, version)
    assert len(found) >= 20
    for e in found:
        assert e["settings"]["max_model_len"] == mml, e["id"]
    p = pub.Point(found[0])
    assert p.engine_name == "vllm-v0" and p.rules.whole_prompts
    assert p.mem.max_num_batched_tokens == mml


def test_phi3_mini_128k_runs_on_a_proxy_of_its_shape_and_context(entries):
    """Phi-3-mini-128k-instruct's entries use Phi-3.5-mini-instruct, whose layers match the 4k proxy's and whose
    context is 131,072 tokens (so the runs with max_model_len 45,920 are priced, not refused)."""
    found = _timed(entries, "microsoft/Phi-3-mini-128k-instruct", "")
    assert len(found) >= 40 and {e["model_config"] for e in found} == {"microsoft/Phi-3.5-mini-instruct"}
    models = ROOT / "profiles" / "models"
    new = json.loads((models / "microsoft--Phi-3.5-mini-instruct.json").read_text())
    old = json.loads((models / "microsoft--Phi-3-mini-4k-instruct.json").read_text())
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "vocab_size"):
        assert new[key] == old[key], key
    assert new["max_position_embeddings"] == 131072 > 45920 > old["max_position_embeddings"]
    run = [e for e in found if e["settings"].get("max_model_len") == 45920]
    assert run and pub.Point(run[0]).predict() > 0


# ---- vLLM v0.28.0's step budget on devices of 160 GiB and more -------------------------------------------------


def _b200(version: str, **extra) -> dict:
    """test_v0_chunk_budget_s63's entry of a vLLM closed loop, on a B200."""
    return {**_entry(version), "gpu": "b200", **extra}


def test_vllm_defaults_a_device_of_160_gib_to_16384_token_steps():
    """The engine profile (the newest vLLM) gives B200 and MI300X 16,384 tokens a step, H100 and H200 (under 160 GiB)
    8,192, A100 2,048 (vllm/engine/arg_utils.py get_batch_defaults from v0.28.0)."""
    from planner.hardware.engine import load_engine
    from planner.hardware.profiles import load_profile

    eng = load_engine("vllm")
    assert eng.max_num_batched_tokens(load_profile("b200")) == 16384
    assert eng.max_num_batched_tokens(load_profile("mi300x")) == 16384
    assert eng.max_num_batched_tokens(load_profile("h200-sxm")) == 8192
    assert eng.max_num_batched_tokens(load_profile("a100-80gb")) == 2048


@pytest.mark.parametrize("version, date, budget", [
    ("0.27.1", None, 8192),          # before v0.28.0: the tier below
    ("0.28.0", None, 16384),
    ("0.31.1rc1.dev23+g43b4aaea3", None, 16384),
    ("nightly", "2026-09-01", 16384),  # no release number: by the source's date
    ("nightly", "2026-08-01", 8192),
    ("nightly", None, 8192),          # undated: the older default
])
def test_a_release_before_0_28_runs_8192_token_steps_on_b200(version, date, budget):
    source = {"source": {"date": date}} if date else {}
    assert pub.Point(_b200(version, **source)).mem.max_num_batched_tokens == budget
    stated = _b200("0.27.1")
    stated["settings"]["max_num_batched_tokens"] = 4096  # a budget the run states is its own
    assert pub.Point(stated).mem.max_num_batched_tokens == 4096
