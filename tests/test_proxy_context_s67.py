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
