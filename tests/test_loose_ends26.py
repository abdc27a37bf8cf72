"""Loose ends of the newest families (wave 26).

- Ergo's weight bytes: transformers 5.25's modeling_ergo.py creates the embedding, every ErgoRMSNorm (per-expert
  ``ErgoExpertNorm`` included), the residual gates and the router's ``gate.linear`` in float32 and lists them in
  ``_keep_in_fp32_modules_strict``; the oracle is transformers' own model built on the meta device with
  ``dtype=torch.bfloat16`` (each parameter's element size), and a hand count from those module shapes.
- An Ergo with no MoE layer is refused by verify for what it has (learned residual gates), not as Muse Spark.
- Kolibri 1.1 under --tp > 1 stays refused, with the source of the reason: transformers 5.25's
  Kolibri1_1Config.base_model_tp_plan leaves attention out ("an indexer scores keys with the query heads of key head 0
  and must select the same keys on every rank"); unlike DeepSeek V3.2's DSA indexer (own weights and key cache, which
  vLLM replicates per rank), it has nothing of its own to replicate.
- A TeleChat mixture of experts (TeleChat2-39B-A12B: 16 experts, top 4, ffn 6144, 30 layers, hidden 4096, 32 heads,
  per Tele-AI/TeleChat2 MoE/README.md; its config.json was not found in the public index) is refused, not read dense.
- Ling 3 (bailing_hybrid) under transformers 5.25: per-layer SwiGLU clamps (BailingHybridConfig's
  expert_swiglu_limit_list / share_expert_swiglu_limit_list, 0 = off; modeling_bailing_hybrid.py clamps the routed
  experts' and the MoE layers' shared experts' gate / up after the activation, never the dense MLPs'): nothing to
  count; a caveat names the clamped layers and verify refuses them (GLU.STEP, Step-3.7's identical clamp).
"""

from __future__ import annotations

import copy

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import OptionError, RuntimeUnavailableError, UnsupportedModelError
from planner.analysis.weights import weight_format

transformers = pytest.importorskip("transformers", reason="the oracle is transformers' models (dev extra)")
torch = pytest.importorskip("torch", reason="the oracle builds transformers' models on the meta device")
from transformers import CONFIG_MAPPING, AutoModelForCausalLM  # noqa: E402

from tests.test_ergo_kolibri import SMALL_ERGO, _config  # noqa: E402  (transformers' config dict, as a file holds it)


def _hf_bytes(cfg: dict, dtype) -> int:
    """Bytes of transformers' model built in ``dtype``: every parameter at its own element size."""
    d = {k: v for k, v in copy.deepcopy(cfg).items() if k not in ("model_type", "transformers_version")}
    config = CONFIG_MAPPING[cfg["model_type"]](**d)
    transformers.logging.set_verbosity_error()
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


def _planner_bytes(cfg: dict, dtype: str) -> int:
    spec = parse_config(dict(copy.deepcopy(cfg), torch_dtype=dtype), where="config.json")
    fmt, _ = weight_format(spec)
    return fmt.model_bytes(spec)


# ---- 1. Ergo: fp32-kept modules ------------------------------------------------------------------

def test_ergo_weight_bytes_by_hand():
    """SMALL_ERGO in bf16 (layer 0 dense, layers 1-5 MoE; heads of 64 // 4 = 16), from modeling_ergo.py's shapes.
    float32: embed_tokens 256 x 64; per layer 4 sandwich norms (64) + q/k norms (16) + 2 residual gates (64); per MoE
    layer post_expert_norm (8 x 64) + gate.linear (8 x 64) + shared_experts.norm (64); the final norm (64).
    bf16: per layer qkv_proj (4 + 2 x 2) x 16 x 64 + o_proj 64 x 64; layer 0's up / down 96 x 64 each; per MoE layer
    experts 2 x 8 x 64 x 32 + shared expert 2 x 48 x 64; lm_head 256 x 64 (not tied)."""
    fp32 = 256 * 64 + 6 * (4 * 64 + 2 * 16 + 2 * 64) + 5 * (8 * 64 + 8 * 64 + 64) + 64
    bf16 = 6 * (128 * 64 + 64 * 64) + 2 * 96 * 64 + 5 * (2 * 8 * 64 * 32 + 2 * 48 * 64) + 256 * 64
    assert _planner_bytes(_config("ergo", **SMALL_ERGO), "bfloat16") == 4 * fp32 + 2 * bf16 == 691_456


@pytest.mark.parametrize("kw,dtype", [
    ({}, "bfloat16"),
    ({}, "float16"),
    ({"num_dense_blocks": 6}, "bfloat16"),  # no MoE layer
    ({"num_experts": 16, "num_experts_per_tok": 4, "vocab_size": 512}, "bfloat16"),
])
def test_ergo_weight_bytes_match_transformers(kw, dtype):
    cfg = _config("ergo", **{**SMALL_ERGO, **kw})
    assert _planner_bytes(cfg, dtype) == _hf_bytes(cfg, getattr(torch, dtype))


def test_ergo_defaults_weight_bytes_match_transformers():
    """ErgoConfig's defaults (1,105,550,917,632 parameters) in bf16, parameter by parameter as transformers holds
    them; the 262144 x 8192 embedding alone is 4 bytes a parameter."""
    cfg = _config("ergo")
    assert _planner_bytes(cfg, "bfloat16") == _hf_bytes(cfg, torch.bfloat16)


def test_ergo_without_moe_is_refused_by_verify_for_its_residual_gates():
    from planner.runtime.model import check_supported

    spec = parse_config(_config("ergo", **{**SMALL_ERGO, "num_dense_blocks": 6}), where="config.json")
    with pytest.raises(RuntimeUnavailableError, match="learned residual gates") as e:
        check_supported(spec)
    assert "support Muse Spark's decoder layer" not in str(e.value) and "\n" not in str(e.value)


# ---- 2. Kolibri 1.1: --tp > 1 refused with its source ---------------------------------------------

def test_kolibri1_1_tp_refusal_names_its_source():
    from planner.analysis.parallel import tp_plan

    cfg = _config("kolibri1_1", hidden_size=64, num_hidden_layers=10, num_attention_heads=8, num_key_value_heads=2,
                  head_dim=16, vocab_size=256, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                  mlp_only_intermediate_size=96, num_experts=8, num_experts_per_tok=2, sliding_window=16,
                  index_num_heads=3)
    spec = parse_config(cfg, where="config.json")
    assert tp_plan(spec, 1).tp == 1
    with pytest.raises(OptionError) as e:
        tp_plan(spec, 2)
    msg = str(e.value)
    assert "query heads 0-2" in msg and "Kolibri1_1Config.base_model_tp_plan" in msg and "\n" not in msg
    # transformers' own plan shards no attention module of it (the reason the refusal cites)
    plan = CONFIG_MAPPING["kolibri1_1"].base_model_tp_plan
    assert not any("self_attn" in k or "q_proj" in k for k in plan)


# ---- 3. TeleChat mixtures of experts are refused, never read dense --------------------------------

#: Tele-AI/TeleChat2-39B-A12B's shape (Tele-AI/TeleChat2 MoE/README.md: 30 layers, 16 experts, 4 chosen, hidden 4096,
#: ffn_hidden_size 6144, 32 heads, untied, no GQA) in TelechatConfig's names (configuration_telechat2.py: n_layer,
#: n_head, ffn_hidden_size); the MoE fields' names are guesses in the spellings MoE configs use
TELECHAT_MOE = {"model_type": "telechat", "architectures": ["TelechatForCausalLM"], "vocab_size": 131072,
                "hidden_size": 4096, "n_layer": 30, "n_head": 32, "ffn_hidden_size": 6144,
                "layer_norm_epsilon": 1e-5, "tie_word_embeddings": False}


@pytest.mark.parametrize("moe", [
    {"num_experts": 16, "num_experts_per_tok": 4},
    {"num_local_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 6144},
    {"moe_config": {"expert_num": 16, "num_experts_chosen": 4}},  # MindFormers' telechat MoE yaml
    {"is_moe": True},
])
@pytest.mark.parametrize("mt", ["telechat", "telechat2"])
def test_telechat_moe_is_refused(moe, mt):
    cfg = dict(TELECHAT_MOE, model_type=mt, **moe)
    with pytest.raises(UnsupportedModelError, match="TeleChat mixture of experts") as e:
        parse_config(cfg, where="config.json")
    assert "\n" not in str(e.value)
    dense = dict(TELECHAT_MOE, model_type=mt, num_experts=1, moe_config={})  # one expert / empty: still dense
    assert parse_config(dense, where="config.json").first_moe is None


# ---- 4. Ling 3's SwiGLU clamps ------------------------------------------------------------------

LING = dict(vocab_size=128, hidden_size=64, num_hidden_layers=6, num_attention_heads=4, head_dim=16, kv_lora_rank=32,
            qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, intermediate_size=96, moe_intermediate_size=32,
            num_local_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, pad_token_id=0)


def _clamp_caveats(spec) -> list[str]:
    return [c for c in spec.caveats if "SwiGLU clamped" in c]


def test_bailing_hybrid_swiglu_limits_caveated():
    from planner.analysis.params import count_params
    from planner.analysis.spec import GLU
    from planner.runtime.model import check_supported

    plain = parse_config(_config("bailing_hybrid", **LING), where="config.json")  # limits [0] * 6: no clamp
    assert not _clamp_caveats(plain) and plain.numerics.glu == GLU.STANDARD
    # first_k_dense_replace 2 (class default): layers 0-1 dense (never clamped), 2-5 MoE with one shared expert
    cfg = _config("bailing_hybrid", **LING, n_shared_experts=1, swiglu_limits=[7, 7, 0, 5, 0, 0],
                  swiglu_limits_shared=[0, 0, 0, 0, 3, 0])
    assert cfg["expert_swiglu_limit_list"] == [7, 7, 0, 5, 0, 0]  # the name a saved config carries
    spec = parse_config(cfg, where="config.json")
    assert _clamp_caveats(spec) == ["SwiGLU clamped on layers [3, 4] (expert_swiglu_limit_list / "
                                    "share_expert_swiglu_limit_list)"]
    assert spec.numerics.glu == GLU.STEP
    unclamped = parse_config(_config("bailing_hybrid", **LING, n_shared_experts=1), where="config.json")
    assert count_params(spec).total == count_params(unclamped).total  # nothing to count
    with pytest.raises(RuntimeUnavailableError) as e:
        check_supported(spec)
    assert "\n" not in str(e.value)


def test_bailing_hybrid_bad_swiglu_limits_are_one_error_line():
    from planner.analysis.errors import ConfigError

    cfg = dict(_config("bailing_hybrid", **LING), expert_swiglu_limit_list=[1, 2])
    with pytest.raises(ConfigError, match="expert_swiglu_limit_list"):
        parse_config(cfg, where="config.json")
