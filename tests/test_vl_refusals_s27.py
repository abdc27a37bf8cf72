"""vLLM 0.28 vision-language architectures refused by name (analysis/families/vl_refusals_s27.py), and Eagle 2.5's
refusal checked on the one real eagle_2_5_vl config found.

Before: ``ovis2_6_moe`` / ``interns2_mobius`` / ``kanana-1.5-v`` ended in a generic-decoder error (unknown model_type),
``llava_onevision2`` / ``intern_s2_preview`` were counted text-only (their towers, Intern-S2's time-series encoder and
MTP layer left out). The configs below carry the fields the sources name (model_type, architectures and the keys the
serving code reads); no released config.json of these checkpoints was at hand, which is why they are refused."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from tests.clirun import run

_QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
              "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
              "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936}
_NAVIT = {"model_type": "siglip2_navit", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
          "num_attention_heads": 16, "patch_size": 16, "hidden_stride": 2}

CONFIGS = {
    # GPTQModel tests/test_ovis2_6_moe_support.py selects its definition by model_type "ovis2_6_moe"; vLLM's ovis2_5.py
    # reads llm_config (text_config), vit_config, visual_vocab_size and hidden_size
    "ovis2_6": {"model_type": "ovis2_6", "architectures": ["Ovis2_6ForCausalLM"], "hidden_size": 2048,
                "llm_config": dict(_QWEN3_MOE, model_type="qwen3"), "vit_config": _NAVIT},
    "ovis2_6_moe": {"model_type": "ovis2_6_moe", "architectures": ["Ovis2_6_MoeForCausalLM"], "hidden_size": 2048,
                    "visual_vocab_size": 65536, "llm_config": _QWEN3_MOE, "vit_config": _NAVIT},
    "ovis2_6_next": {"model_type": "ovis2_6_next", "architectures": ["Ovis2_6_NextForCausalLM"], "hidden_size": 2048,
                     "llm_config": dict(_QWEN3_MOE, model_type="qwen3_next"), "vit_config": _NAVIT},
    # lmms-lab's LlavaOnevision2Config: a text_config (Qwen3 / Qwen3.5-MoE) and the OneVision vision_config
    "llava_onevision2": {"model_type": "llava_onevision2", "architectures": ["LlavaOnevision2ForConditionalGeneration"],
                         "text_config": dict(_QWEN3_MOE, model_type="qwen3"),
                         "vision_config": {"model_type": "llava_onevision2", "hidden_size": 1024}},
    "llava_onevision2_moe": {"model_type": "llava_onevision2_moe",
                             "architectures": ["LlavaOnevision2ForConditionalGeneration"],
                             "text_config": dict(_QWEN3_MOE, model_type="qwen3_5_moe_text"),
                             "vision_config": {"hidden_size": 1024, "use_post_layernorm": False}},
    # the time-series extraction test's source config (model_type intern_s2_preview, ts_config) + a Qwen3.5-MoE text
    "intern_s2_preview": {"model_type": "intern_s2_preview",
                          "architectures": ["InternS2PreviewForConditionalGeneration"],
                          "text_config": dict(_QWEN3_MOE, model_type="qwen3_5_moe_text"),
                          "ts_config": {"model_type": "interns2_preview_time_series", "out_hidden_size": 2048}},
    # the mlx-lm port's test config of Intern-S2-Mobius (num_blocks routed banks, a shared expert per layer)
    "interns2_mobius": {"model_type": "interns2_mobius", "architectures": ["InternS2MobiusForCausalLM"],
                        "vocab_size": 1000, "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "linear_num_value_heads": 4,
                        "linear_num_key_heads": 2, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
                        "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2, "num_blocks": 2,
                        "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64,
                        "full_attention_interval": 4},
    # kakaobank/kanana-1.5-v-3b-instruct's model_type and language-model fields as a model-card reader's test quotes
    # them, with the vision_config / projector_config keys vLLM's kanana_v.py reads
    "kanana-1.5-v": {"model_type": "kanana-1.5-v", "architectures": ["KananaVForConditionalGeneration"],
                     "vocab_size": 102400, "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
                     "num_key_value_heads": 8, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
                     "vision_config": {"depth": 32, "embed_dim": 1280, "spatial_merge_size": 2},
                     "projector_config": {"depth": 2, "encoder_hidden_size": 1280, "hidden_size": 1024,
                                          "output_hidden_size": 3072, "mlp_depth": 2, "merge_size": 2}},
}

#: GR00T N1.5's Eagle 2.5 backbone config, verbatim (NVIDIA/Isaac-GR00T
#: gr00t/model/backbone/eagle2_hg_model/config.json, commit 338d3ec2): the one real eagle_2_5_vl config found
GR00T_EAGLE_2_5 = {
    "_attn_implementation": "flash_attention_2", "_commit_hash": None,
    "architectures": ["Eagle2_5_VLForConditionalGeneration"],
    "auto_map": {"AutoConfig": "configuration_eagle2_5_vl.Eagle2_5_VLConfig",
                 "AutoModel": "modeling_eagle2_5_vl.Eagle2_5_VLForConditionalGeneration"},
    "downsample_ratio": 0.5, "dynamic_image_size": True, "force_image_size": 224, "image_token_index": 151669,
    "loss_version": "efficient_v2_cp_head", "max_dynamic_tiles": 12, "min_dynamic_tiles": 1, "mlp_checkpoint": False,
    "mlp_connector_layers": 1, "model_type": "eagle_2_5_vl", "pad2square": False, "select_layer": -1,
    "template": "qwen3-chat",
    "text_config": {"_attn_implementation_autoset": True, "_name_or_path": "Qwen/Qwen3-1.7B",
                    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
                    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
                    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
                    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
                    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
                    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": False,
                    "use_sliding_window": False, "vocab_size": 151680},
    "torch_dtype": "bfloat16", "transformers_version": None, "use_backbone_lora": 0, "use_llm_lora": 0,
    "use_pixel_shuffle": False, "use_thumbnail": True,
    "vision_config": {"_attn_implementation_autoset": True, "attention_dropout": 0.0,
                      "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152, "image_size": 224,
                      "intermediate_size": 4304, "layer_norm_eps": 1e-06, "model_type": "siglip_vision_model",
                      "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 27, "patch_size": 14,
                      "torch_dtype": "bfloat16"},
}

#: the reason each refusal must name (so a wrong family's refusal would fail)
REASONS = {"ovis2_6": "post_layernorm", "ovis2_6_moe": "Qwen3-MoE", "ovis2_6_next": "Qwen3-Next",
           "llava_onevision2": "OneVision vision encoder", "llava_onevision2_moe": "Qwen3.5-MoE",
           "intern_s2_preview": "time-series", "interns2_mobius": "num_blocks", "kanana-1.5-v": "RegStage"}


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_refused_by_name_with_its_reason(tmp_path, model_type):
    cfg = CONFIGS[model_type]
    with pytest.raises(UnsupportedModelError, match=REASONS[model_type]):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    line = run("analyze", path, "--json").assert_error(f"model_type '{model_type}'", "not supported yet",
                                                       REASONS[model_type])
    assert "not a known family" not in line


def test_eagle_2_5_real_config_is_refused_naming_its_connector(tmp_path):
    """GR00T N1.5's Eagle 2.5 config: a one-Linear connector (mlp_connector_layers 1, no pixel shuffle) that vLLM's
    eagle2_5_vl.py does not build (its mlp1 is LayerNorm / Linear / GELU / Linear over pixel-shuffled features), in a
    policy that truncates the language model; refused by name, its Qwen3 text_config not read in its place."""
    with pytest.raises(UnsupportedModelError, match="mlp_connector_layers 1"):
        parse_config(GR00T_EAGLE_2_5)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GR00T_EAGLE_2_5))
    run("analyze", path).assert_error("model_type 'eagle_2_5_vl'", "use_pixel_shuffle false")
