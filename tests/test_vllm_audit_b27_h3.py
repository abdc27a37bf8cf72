"""Session 27 vLLM-registry audit (helper H3): released configs of architectures vLLM 0.28 registers, read by
families planner already had, pinned against transformers on the meta device.

- BailingMoeV3ForCausalLM (Ling 3.0) is ``model_type: bailing_hybrid``; GLM-4.7-Flash (Glm4MoeLiteForCausalLM) is
  ``glm4_moe_lite``; GraniteSWAForCausalLM / GraniteMoeSWAForCausalLM are ``granite_swa`` / ``granitemoe_swa``.
- The two big models are checked layer kind by layer kind: transformers builds a short model holding one layer of each
  kind (the same config but ``num_hidden_layers``), and the full model's total is its model-level parameters plus
  each kind's layer times the number of such layers in the released config (so the oracle needs no 30B / 124B
  model on meta). The small ones are built whole.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.oracle import hf_model

#: GLM-4.7-Flash config.json fields, as quoted by vLLM's tests for its Glm4MoeLiteConfig (find_string id 3227613672)
#: and by a Rust port's metadata test (id 55665026553, with num_nextn_predict_layers 1)
GLM47_FLASH = {"model_type": "glm4_moe_lite", "architectures": ["Glm4MoeLiteForCausalLM"], "vocab_size": 154880,
               "hidden_size": 2048, "intermediate_size": 10240, "moe_intermediate_size": 1536,
               "num_hidden_layers": 47, "num_attention_heads": 20, "num_key_value_heads": 20, "hidden_act": "silu",
               "rms_norm_eps": 1e-5, "attention_bias": False, "max_position_embeddings": 202752,
               "rope_theta": 1000000.0, "partial_rotary_factor": 1.0, "q_lora_rank": 768, "kv_lora_rank": 512,
               "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256, "n_routed_experts": 64,
               "n_shared_experts": 1, "num_experts_per_tok": 4, "norm_topk_prob": True, "routed_scaling_factor": 1.8,
               "n_group": 1, "topk_group": 1, "topk_method": "noaux_tc", "first_k_dense_replace": 1,
               "num_nextn_predict_layers": 1, "tie_word_embeddings": False}

#: Ling-3.0-flash (BailingMoeV3ForCausalLM) config.json fields, as a Rust port pins them ("the Ling-3.0-flash-int4
#: config facts (subset)", find_string id 57959046250); its MLA layers 5, 11, ..., 41 checked there against the index
LING3_FLASH = {"model_type": "bailing_hybrid", "architectures": ["BailingMoeV3ForCausalLM"], "num_hidden_layers": 42,
               "hidden_size": 2560, "vocab_size": 157184, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
               "first_k_dense_replace": 2, "intermediate_size": 6144, "num_attention_heads": 32,
               "num_key_value_heads": 32, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
               "qk_rope_head_dim": 64, "v_head_dim": 128, "head_dim": 128,
               "gated_attention_proj_granularity_type": "head_wise", "rope_theta": 6000000, "rotary_dim": 64,
               "rope_interleave": True, "short_conv_kernel_size": 4, "no_kda_lora": True, "kda_safe_gate": True,
               "kda_lower_bound": -5.0, "num_experts": 512, "num_experts_per_tok": 8, "num_shared_experts": 1,
               "moe_intermediate_size": 768, "moe_shared_expert_intermediate_size": 768,
               "routed_scaling_factor": 2.5, "norm_topk_prob": True, "n_group": 8, "topk_group": 4,
               "layer_group_size": 6}

#: ibm-granite/granite-swash-2b config.json @ af1e3227100b61088eead48389ab5409b5d0e39c, as pinned in an ONNX port's
#: test (find_string id 62519137983)
GRANITE_SWASH_2B = {"model_type": "granite_swa", "architectures": ["GraniteSWAForCausalLM"], "vocab_size": 100352,
                    "hidden_size": 2560, "intermediate_size": 8192, "num_hidden_layers": 24,
                    "num_attention_heads": 20, "num_key_value_heads": 4, "hidden_act": "silu",
                    "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "attention_bias": False,
                    "mlp_bias": False, "tie_word_embeddings": True, "sliding_window": 128,
                    "layer_types": ["full_attention"] + (["sliding_attention"] * 3 + ["full_attention"]) * 5
                    + ["sliding_attention"] * 3,
                    "embedding_multiplier": 12, "residual_multiplier": 0.28, "logits_scaling": 10,
                    "attention_multiplier": 0.0078125, "rope_theta": 10000}

#: a GraniteMoeSWA checkpoint's topology as an MLX port validates it (find_string id 70259142590, "local 3B target")
GRANITE_MOE_SWA_3B = {"model_type": "granitemoe_swa", "architectures": ["GraniteMoeSWAForCausalLM"],
                      "vocab_size": 100352, "hidden_size": 1280, "intermediate_size": 512, "num_hidden_layers": 28,
                      "num_attention_heads": 20, "num_key_value_heads": 4, "num_local_experts": 48,
                      "num_experts_per_tok": 4, "shared_intermediate_size": 1280, "sliding_window": 128,
                      "max_position_embeddings": 8192, "tie_word_embeddings": True, "embedding_multiplier": 12,
                      "attention_multiplier": 0.015625, "residual_multiplier": 0.26, "logits_scaling": 5}


def _by_layer(cfg: dict) -> tuple[int, dict[int, int]]:
    """(parameters outside the layers, parameters of each layer) of transformers' model on meta."""
    outside, layers = 0, Counter()
    for name, p in hf_model(cfg).named_parameters():
        m = re.search(r"\.layers\.(\d+)\.", name)
        if m:
            layers[int(m.group(1))] += p.numel()
        else:
            outside += p.numel()
    return outside, layers


def test_glm_4_7_flash_equals_transformers_layer_kind_by_kind():
    """layer 0 dense (first_k_dense_replace 1), layers 1..46 MoE: a 2-layer transformers model has one of each"""
    outside, layers = _by_layer(dict(GLM47_FLASH, num_hidden_layers=2))
    p = count_params(parse_config(GLM47_FLASH))
    assert p.total == outside + layers[0] + 46 * layers[1]
    assert abs(p.total - 30e9) < 0.1e9  # zai-org: "30B-A3B"


def test_ling_3_flash_equals_transformers_layer_kind_by_kind():
    """groups of 6 (5 KDA, then gated MLA), MoE from layer 2: a 6-layer transformers model has dense KDA (0, 1),
    MoE KDA (2..4) and MoE MLA (5); the 42 layers are 2 dense KDA, 33 MoE KDA and 7 MoE MLA"""
    outside, layers = _by_layer(dict(LING3_FLASH, num_hidden_layers=6))
    assert layers[0] == layers[1] and layers[2] == layers[3] == layers[4]
    p = count_params(parse_config(LING3_FLASH))
    assert p.total == outside + 2 * layers[0] + 33 * layers[2] + 7 * layers[5]
    kinds = [layer.kind for layer in parse_config(LING3_FLASH).layers]
    assert [i for i, k in enumerate(kinds) if k.startswith("mla")] == [5, 11, 17, 23, 29, 35, 41]


@pytest.mark.parametrize("cfg", [GRANITE_SWASH_2B, GRANITE_MOE_SWA_3B], ids=["granite-swash-2b", "granitemoe_swa"])
def test_granite_swa_released_configs_equal_transformers(cfg):
    p = count_params(parse_config(cfg))
    assert p.total == sum(t.numel() for t in hf_model(cfg).parameters())
    windows = [layer.mixer.window for layer in parse_config(cfg).layers]
    if "layer_types" in cfg:  # every fourth layer full, the rest a 128-token window
        assert windows == [None if t == "full_attention" else 128 for t in cfg["layer_types"]]
