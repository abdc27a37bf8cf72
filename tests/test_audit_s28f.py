"""Wave s28 F: mlx-vlm's registry (``Blaizzy/mlx-vlm``, one folder per model under ``mlx_vlm/models/``), the folders
mage_flow, mage_vl, minimax_h3, molmo_point, moondream2, nemotron_h_nano_omni, nemotron_labs_diffusion,
nemotron_voicechat, plamo2vl, youtu_vl and zaya1_vl (analysis/families/s28f_mlx_vlm.py).

- ``nemotron_labs_diffusion`` (NVIDIA Nemotron-Labs-Diffusion-8B, a block-diffusion LM): read before as a generic
  Llama ("not a known family" caveat) with autoregressive decode figures; now refused by name. The refusal's claim
  that its body reads exactly as ``ministral3`` is pinned against transformers' Ministral3ForCausalLM on the meta
  device and a hand count (8,489,553,920).
- ``nemotron_voicechat``: read before as its text_config, ending in a misleading layers_block_type error.
- ``moondream2`` (mlx-vlm's own layout of vikhyatk/moondream2): "required field 'model_type' is missing".
- ``mage_vl``, ``molmo_point``, ``plamo2vl``: read before as text_config alone, the tower "not counted".
- ``youtu_vl``, ``zaya1_vl``: refused before only as "not a known family".
- ``nemotron_h_nano_omni`` is mlx-vlm's folder for the hub's ``NemotronH_Nano_Omni_Reasoning_V3`` configs, counted
  already (tests/test_nemotron_omni_hub.py); ``mage_flow`` and ``minimax_h3`` generate images / video: not audited.

The refused configs below are stand-ins built from each mlx-vlm folder's config.py defaults (commit of the local
mirror at /work/.mirror/Blaizzy+mlx-vlm, read with ``git show HEAD:mlx_vlm/models/<folder>/config.py``) or from a
public port's test that quotes the hub config in part; a refusal depends on the model_type alone, so only the
fragments of its reason are pinned.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: nvidia/Nemotron-Labs-Diffusion-8B's config.json as a public lecture note quotes it in full ("The complete config
#: of Nemotron-Labs-Diffusion-8B", find_string id 55111056124), verbatim
NEMOTRON_LABS_DIFFUSION_8B = {
    "ar_loss_weight": 1.0, "architectures": ["NemotronLabsDiffusionModel"], "attention_bias": False,
    "attention_dropout": 0.0, "attn_implementation": "sdpa",
    "auto_map": {"AutoConfig": "configuration_nemotron_labs_diffusion.NemotronLabsDiffusionConfig",
                 "AutoModel": "modeling_nemotron_labs_diffusion.NemotronLabsDiffusionModel"},
    "block_size": 32, "bos_token_id": 1, "dlm_loss_weight": None, "dlm_paradigm": "bidirectional",
    "dp_varying_mask_ratio": False, "eos_token_id": 11, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "mask_token_id": 100, "max_position_embeddings": 262144,
    "mlp_bias": False, "model_type": "nemotron_labs_diffusion", "num_attention_heads": 32, "num_hidden_layers": 34,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 16.0, "llama_4_scaling_beta": 0.1,
                        "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 16384,
                        "rope_theta": 1000000.0, "rope_type": "yarn"},
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "5.0.0",
    "use_cache": False, "vocab_size": 131072,
}

#: mlx-vlm's mage_vl/config.py TextConfig ("Stock Qwen3-4B-Instruct-2507") and VisionConfig defaults, nested as a
#: public MLX port's test quotes Mage-VL's config.json (find_string id 71194829356: model_type mage_vl over a qwen3
#: text_config with rope_parameters)
MAGE_VL = {
    "model_type": "mage_vl", "image_token_id": 151655, "video_token_id": 151656,
    "text_config": {"model_type": "qwen3", "hidden_size": 2560, "num_hidden_layers": 36, "intermediate_size": 9728,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6,
                    "vocab_size": 151936, "max_position_embeddings": 262144, "tie_word_embeddings": False,
                    "rope_parameters": {"rope_theta": 5000000.0, "rope_type": "default"}},
    "vision_config": {"model_type": "mage_vl_vision", "hidden_size": 1024, "num_hidden_layers": 24,
                      "num_attention_heads": 16, "intermediate_size": 4096, "patch_size": 16, "spatial_merge_size": 2,
                      "temporal_patch_size": 1, "out_hidden_size": 2560, "frame_windows_size": 4},
}
#: mlx-vlm's molmo_point/config.py defaults (its README: allenai/MolmoPoint-8B), the ViT under vit_config as the
#: hub's Molmo2-style config names it
MOLMO_POINT = {
    "model_type": "molmo_point", "patch_location": "3x3", "no_more_points_class": True, "patch_embed_dim": 512,
    "text_config": {"model_type": "molmo2_text", "hidden_size": 4096, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "additional_vocab_size": 128,
                    "num_hidden_layers": 36, "intermediate_size": 12288, "use_qk_norm": True, "qk_norm_type": "qwen3",
                    "layer_norm_eps": 1e-6, "rope_theta": 1000000.0},
    "vit_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
                   "num_key_value_heads": 16, "head_dim": 72, "image_patch_size": 14},
    "adapter_config": {"vit_layers": [-3, -9], "hidden_size": 1152, "num_attention_heads": 16,
                       "num_key_value_heads": 16, "head_dim": 72, "intermediate_size": 12288,
                       "text_hidden_size": 4096},
}
#: mlx-vlm's plamo2vl/config.py defaults; the SigLIP fields flattened as vision_encoder_* with an empty model_type, as
#: its VisionConfig.from_dict says the upstream config stores them
PLAMO2VL = {
    "model_type": "plamo2vl",
    "text_config": {"model_type": "plamo2", "hidden_size": 2048, "num_hidden_layers": 32, "num_attention_heads": 32,
                    "num_key_value_heads": 4, "hidden_size_per_head": 128, "mamba_d_state": 64, "mamba_d_conv": 4,
                    "mamba_num_heads": 64, "mamba_step": 2, "intermediate_size": 5632, "vocab_size": 100032,
                    "rms_norm_eps": 1e-6},
    "vision_config": {"model_type": "", "vision_encoder_hidden_size": 1152, "vision_encoder_num_hidden_layers": 27,
                      "vision_encoder_intermediate_size": 4304, "vision_encoder_num_attention_heads": 16,
                      "vision_encoder_patch_size": 14, "vision_encoder_image_size": 384, "image_feature_size": 1152,
                      "image_proj_hidden_size": 2048, "image_token_id": 100002},
}
#: the fields a public MLX port's test round-trips as "what the loader sees on a real config.json" (find_string id
#: 54845912615) plus mlx-vlm's youtu_vl/config.py VisionConfig defaults
YOUTU_VL = {
    "model_type": "youtu_vl", "vocab_size": 283386, "hidden_size": 2560, "intermediate_size": 9728,
    "num_hidden_layers": 40, "num_attention_heads": 32, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
    "vision_config": {"model_type": "siglip2_vision_model", "hidden_size": 1152, "out_hidden_size": 2560,
                      "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
                      "num_patches": 4096, "patch_size": 16, "spatial_merge_size": 2, "window_size": 256,
                      "fullatt_block_indexes": [7, 15, 23, 26]},
}
#: ZAYA1-VL-8B's fields as a public Swift port's registry test quotes them (find_string id 54784642883), with
#: mlx-vlm's zaya1_vl/config.py TextConfig defaults for the layer widths
ZAYA1_VL = {
    "model_type": "zaya1_vl", "architectures": ["Zaya1VLForConditionalGeneration"], "hidden_size": 2048,
    "num_hidden_layers": 40, "num_attention_heads": 8, "num_key_value_heads": 2, "num_query_groups": 2,
    "vocab_size": 262272, "ffn_hidden_size": 4096, "num_experts": 16, "head_dim": 128, "zaya_mlp_expansion": 256,
    "image_token_id": 262147, "vision_start_token_id": 255999, "vision_end_token_id": 256000, "vision_lora": True,
    "vision_config": {"model_type": "qwen2_5_vl", "hidden_size": 1280, "out_hidden_size": 2048,
                      "spatial_patch_size": 14, "temporal_patch_size": 1, "in_chans": 3},
}
#: mlx-vlm's moondream2/config.py defaults (text_config / vision_config, the layout its sanitize maps
#: vikhyatk/moondream2's text_model / vision_encoder / region_model weights onto)
MOONDREAM2 = {
    "model_type": "moondream2",
    "text_config": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24, "vocab_size": 51200,
                    "num_attention_heads": 32, "partial_rotary_factor": 0.5},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                      "num_attention_heads": 16, "patch_size": 14, "crop_size": 378, "max_crops": 12,
                      "proj_inner_dim": 8192, "proj_out_dim": 2048},
}
#: mlx-vlm's nemotron_voicechat/config.py layout (mlx-community/NemotronLabs-VoiceChat-11B-bf16): a Nemotron-H
#: text_config beside audio / TTS / codec configs (their contents do not matter to the refusal)
NEMOTRON_VOICECHAT = {
    "model_type": "nemotron_voicechat",
    "text_config": {"model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52, "vocab_size": 131072},
    "audio_config": {"encoder": {}}, "tts_config": {"num_hidden_layers": 28}, "codec_config": {},
    "frame_duration": 0.08,
}


def _refused(tmp_path, cfg: dict, *fragments: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error(*fragments)


# ---- Nemotron-Labs-Diffusion -------------------------------------------------------------------------------------

def test_nemotron_labs_diffusion_is_refused_as_a_block_diffusion_lm(tmp_path):
    _refused(tmp_path, NEMOTRON_LABS_DIFFUSION_8B, "nemotron_labs_diffusion", "Nemotron-Labs-Diffusion",
             "bidirectional", "model_type ministral3")
    with pytest.raises(UnsupportedModelError, match="block-diffusion"):
        parse_config(NEMOTRON_LABS_DIFFUSION_8B)
    vlm = dict(NEMOTRON_LABS_DIFFUSION_8B, model_type="nemotron_labs_diffusion_vlm",
               architectures=["NemotronDiffusionVLMModel"])
    _refused(tmp_path, vlm, "Nemotron-Labs-Diffusion-VLM", "Pixtral")


def test_nemotron_labs_diffusion_body_is_ministral3():
    """The refusal points at model_type ministral3 for the exact parameters: that read equals transformers'
    Ministral3ForCausalLM built from the same fields (diffusion_head in lm_head's place, the same shape) and a hand
    count of mlx-vlm's nemotron_labs_diffusion language.py modules."""
    m3 = {k: v for k, v in NEMOTRON_LABS_DIFFUSION_8B.items() if k != "auto_map"}
    m3.update(model_type="ministral3", architectures=["Ministral3ForCausalLM"])
    h, layers, vocab, inter, kv = 4096, 34, 131072, 14336, 8 * 128
    per_layer = (h * 32 * 128 + 2 * h * kv + 32 * 128 * h  # q, k, v, o (no biases)
                 + 3 * h * inter  # gate, up, down
                 + 2 * h)  # input / post-attention RMSNorms
    hand = vocab * h + layers * per_layer + h + h * vocab  # embed, layers, final norm, diffusion_head
    oracle = unique_param_count(hf_model(m3))
    assert count_params(parse_config(m3)).total == oracle == hand == 8_489_553_920


# ---- mlx-vlm VLMs / speech models refused by name ------------------------------------------------------------------

@pytest.mark.parametrize("cfg, fragments", [
    (MAGE_VL, ("Mage-VL", "Mage-ViT", "3D RoPE")),
    (MOLMO_POINT, ("MolmoPoint", "point predictor", "no output projection")),
    (PLAMO2VL, ("PLaMo 2.1 VL", "vision_encoder_*", "image_proj_hidden_size")),
    (YOUTU_VL, ("Youtu-VL", "SigLIP2", "fullatt_block_indexes")),
    (ZAYA1_VL, ("ZAYA1-VL", "vision LoRA", "Qwen2.5-VL")),
    (MOONDREAM2, ("Moondream 2", "region model", "proj_mlp")),
    (NEMOTRON_VOICECHAT, ("VoiceChat", "RNN-T", "TTS")),
], ids=["mage_vl", "molmo_point", "plamo2vl", "youtu_vl", "zaya1_vl", "moondream2", "nemotron_voicechat"])
def test_mlx_vlm_models_are_refused_by_name(tmp_path, cfg, fragments):
    # before: mage_vl / molmo_point / plamo2vl were read as text_config alone ("not counted"), youtu_vl / zaya1_vl
    # refused as unknown, moondream2 and nemotron_voicechat ended in a field error of their text_config
    _refused(tmp_path, cfg, f"model_type '{cfg['model_type']}'", "is not supported yet", *fragments)
