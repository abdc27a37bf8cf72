"""Parameter counts against independent oracles: transformers on the meta device, and the reference
counts shipped beside the configs (recomputed by the same oracle when transformers is present)."""

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.conftest import DATA, MODELS, bundled_index
from tests.oracle import hf_model, hf_param_count

# Reference counts of transformers 5.24 on the meta device (copied from ../shared/configs/expected_params.json;
# tests must not depend on that folder's location). Active = embedding + lm_head + dense parts + router +
# shared experts + top-k routed experts.
EXPECTED = {
    "01-ai/Yi-1.5-6B": (6061035520, None),
    "EleutherAI/pythia-410m": (405334016, None),
    "HuggingFaceTB/SmolLM2-135M-Instruct": (134515008, None),
    "Qwen/Qwen2-72B": (72706203648, None),
    "Qwen/Qwen2.5-0.5B": (494032768, None),
    "Qwen/Qwen2.5-32B": (32763876352, None),
    "Qwen/Qwen2.5-7B": (7615616512, None),
    "Qwen/Qwen3-0.6B": (596049920, None),
    "Qwen/Qwen3-30B-A3B": (30532122624, 3353032704),
    "Qwen/Qwen3-32B": (32762123264, None),
    "Qwen/Qwen3-8B": (8190735360, None),
    "TinyLlama/TinyLlama-1.1B-Chat-v1.0": (1100048384, None),
    "deepseek-ai/DeepSeek-V3": (671026404352, 37552282624),
    "google/gemma-2-2b": (2614341888, None),
    "google/gemma-2-9b": (9241705984, None),
    "google/gemma-2b": (2506172416, None),
    "google/gemma-3-1b-it": (999885952, None),
    "meta-llama/Llama-2-7b-hf": (6738415616, None),
    "meta-llama/Llama-3.1-70B": (70553706496, None),
    "meta-llama/Llama-3.1-8B": (8030261248, None),
    "meta-llama/Llama-3.2-1B": (1235814400, None),
    "meta-llama/Llama-3.2-3B": (3212749824, None),
    "meta-llama/Meta-Llama-3-8B": (8030261248, None),
    "microsoft/Phi-3-mini-4k-instruct": (3821079552, None),
    "mistralai/Mistral-7B-v0.1": (7241732096, None),
    "mistralai/Mixtral-8x7B-v0.1": (46702792704, 12879925248),
    "openai/gpt-oss-20b": (20914757184, 4187440704),
}

BUNDLED = [m["id"] for m in bundled_index()]


def _spec(model_id):
    m = next(m for m in bundled_index() if m["id"] == model_id)
    return parse_config(json.loads((MODELS / m["file"]).read_text()), where=m["file"])


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_reference_counts(model_id):
    total, active = EXPECTED[model_id]
    p = count_params(_spec(model_id))
    assert p.total == total
    assert p.active == (active if active is not None else total)


def _oracle_config(cfg: dict) -> dict:
    """What transformers builds for a bundled config: a multimodal wrapper's whole *ForConditionalGeneration
    model (gemma3's, llama4's: the vision tower and projector are counted too)."""
    return cfg


@pytest.mark.parametrize("model_id", BUNDLED)
def test_bundled_total_equals_transformers_meta(model_id):
    m = next(m for m in bundled_index() if m["id"] == model_id)
    cfg = json.loads((MODELS / m["file"]).read_text())
    mt = _oracle_config(cfg).get("model_type")
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if mt not in CONFIG_MAPPING_NAMES:
        cfg = dict(cfg, model_type="deepseek_v3") if mt == "kimi_k2" else cfg
        if cfg.get("model_type") not in CONFIG_MAPPING_NAMES:
            pytest.skip(f"transformers {transformers.__version__} has no model_type {mt!r}")
    oracle_cfg = _oracle_config(cfg)
    if cfg.get("model_type") == "deepseek_v3" and mt == "kimi_k2":
        oracle_cfg = {k: v for k, v in oracle_cfg.items() if k not in ("quantization_config", "auto_map")}
    assert count_params(_spec(model_id)).total == hf_param_count(oracle_cfg)


def test_component_split_matches_transformers_names():
    """Embedding, lm_head and norm counts agree with the oracle's own parameter names."""
    cfg = json.loads((MODELS / "meta-llama--Llama-3.2-1B.json").read_text())
    model = hf_model(cfg)
    named = dict(model.named_parameters())  # tied weights appear once
    p = count_params(parse_config(cfg))
    assert p.embedding == named["model.embed_tokens.weight"].numel()
    assert p.lm_head == 0 and "lm_head.weight" not in named  # tied
    assert p.norm == sum(v.numel() for k, v in named.items() if "norm" in k)
    assert p.attention == sum(v.numel() for k, v in named.items() if ".self_attn." in k and "norm" not in k)
    assert p.mlp == sum(v.numel() for k, v in named.items() if ".mlp." in k)


def test_untied_lm_head_is_counted():
    """USERS.md: one tool drops the untied lm_head and undercounts Llama-3.1-8B by 6.5 %."""
    p = count_params(_spec("meta-llama/Llama-3.1-8B"))
    assert p.lm_head == 128256 * 4096
    assert p.total - p.lm_head == 8030261248 - 525336576


def test_quantized_reconstruction_counts_logical_params():
    cfg = json.loads((DATA / "Qwen--Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4.json").read_text())
    assert count_params(parse_config(cfg)).total == hf_param_count(cfg)


def test_per_layer_groups_sum_to_total():
    for model_id in ("google/gemma-2-9b", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b"):
        p = count_params(_spec(model_id))
        layers = sum(lp.total * lp.count for lp in p.per_layer)
        assert layers + p.embedding + p.lm_head + p.norm - sum(lp.norm * lp.count for lp in p.per_layer) == p.total
