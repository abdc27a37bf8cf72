"""Audit against real hub config.json files of 2024-2026 vision-language models that no other test has yet: the
whole-checkpoint parameter count (language model, towers and projectors), the towers apart, and a refusal.

Each config is quoted as the source transcribes it (the code index's copy; repository and path below). Expected
counts come from transformers 5.24 built on the meta device (tests/oracle.py) and, where one is published, from the
checkpoint's safetensors metadata; none is copied from planner's own output.

Sources (config.json as transcribed):
- Qwen/Qwen3-VL-4B-Instruct: ``QWEN3_VL_4B_INSTRUCT_CONFIG`` of a port of kohya-ss/musubi-tuner
  src/musubi_tuner/krea2/krea2_encoder.py (the config it builds Qwen3VLForConditionalGeneration from).
- HuggingFaceTB/SmolVLM2-500M-Video-Instruct: ``CONFIG`` of a tests/offline_vlm_cache.py ("config.json verbatim from
  the model card"; its VOCAB_SIZE constant 49280 substituted back).
- Qwen/Qwen2.5-VL-3B-Instruct: the "model config" block of a Qwen2.5-VL-3B-Instruct model note (the flat
  transformers 4.41 layout: text fields at the top level).
- mistralai/Mistral-Small-3.1-24B-Instruct-2503: ``kRealConfig`` of a C++ mistral3_config test ("Verbatim
  Mistral-Small-3.1-24B-Instruct-2503 config.json"); Mistral-Small-3.2-24B-Instruct-2506's (FLUX.2's Mistral3Embedder
  ``M3_CONFIG_JSON``, transformers 4.57.1) has the same fields.
- baidu/ERNIE-Image text encoder (a Ministral 3 3B in the mistral3 wrapper, tied):
  ``ERNIE_IMAGE_TEXT_ENCODER_CONFIG_JSON`` of musubi-tuner's ERNIE-Image module.
- google/gemma-3-12b-it, google/gemma-3-27b-it: AI-Hypercomputer/maxtext
  MaxText/utils/ckpt_conversion/utils/hf_model_configs.py (``gemma3_12b_config`` / ``gemma3_27b_config``, "the
  architectural configurations of the Hugging Face version"; its text vocab_size 262144, the hub's is 262208).
- Qwen3-VL-32B's shape (MiniMax-H3's text_encoder/config.json, "The published text_encoder/config.json, verbatim"):
  ``SHIPPED_CONFIG`` of a MiniMax-H3 Rust port; no tie_word_embeddings anywhere (Qwen3VLConfig: untied).
- microsoft/Florence-2-base's shape (``real_shaped_config()`` of a Rust florence2 port): refused, encoder-decoder.

Published counts:
- Mistral Small 3.1 / 3.2 24B: 24,011,361,280 (keras-team/keras-hub's mistral3 presets
  ``mistral_small_3.1_24b_base_2503_en`` / ``..._instruct_2503_en`` "params"; the Hub's safetensors total for
  Mistral-Small-3.2-24B-Instruct-2506 in debaditc/kvfit scripts/build_registry.py). The checkpoint ships
  ``language_model.lm_head.weight``: its config, written by transformers 4.5x (which tied by the text config,
  MistralConfig's default untied), leaves tie_word_embeddings out; transformers 5's Mistral3Config defaults it to
  true, and from_pretrained unties when both tensors are present and differ.
- gemma-3-12b-it 12,187,325,040 and gemma-3-27b-it 27,432,406,640 (the Hub's safetensors totals in debaditc/kvfit
  scripts/build_registry.py; keras-team/keras-hub's gemma3 preset medgemma_instruct_27b 27,432,406,640;
  google/medgemma-27b-it's index total_size
  54,864,813,280 bytes = 2 x 27,432,406,640 in bf16).
"""

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

QWEN3_VL_4B = {
    "architectures": ["Qwen3VLForConditionalGeneration"],
    "image_token_id": 151655,
    "model_type": "qwen3_vl",
    "text_config": {
        "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643, "dtype": "bfloat16",
        "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2560, "initializer_range": 0.02,
        "intermediate_size": 9728, "max_position_embeddings": 262144, "model_type": "qwen3_vl_text",
        "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
        "rope_theta": 5000000, "tie_word_embeddings": True, "use_cache": True, "vocab_size": 151936,
    },
    "tie_word_embeddings": True,
    "transformers_version": "4.57.0.dev0",
    "video_token_id": 151656,
    "vision_config": {
        "deepstack_visual_indexes": [5, 11, 17], "depth": 24, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1024,
        "in_channels": 3, "initializer_range": 0.02, "intermediate_size": 4096, "model_type": "qwen3_vl",
        "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 2560, "patch_size": 16,
        "spatial_merge_size": 2, "temporal_patch_size": 2,
    },
    "vision_end_token_id": 151653,
    "vision_start_token_id": 151652,
}

SMOLVLM2_500M = {
    "architectures": ["SmolVLMForConditionalGeneration"],
    "image_token_id": 49190, "model_type": "smolvlm", "pad_token_id": 128002, "scale_factor": 4,
    "text_config": {
        "architectures": ["VLlama3ForCausalLM"], "head_dim": 64, "hidden_size": 960, "intermediate_size": 2560,
        "is_llama_config": True, "max_position_embeddings": 8192, "model_type": "llama", "neftune_noise_alpha": 0.0,
        "num_attention_heads": 15, "num_hidden_layers": 32, "num_key_value_heads": 5, "pad_token_id": 2,
        "pixel_shuffle_factor": 4, "qk_layer_norms": False, "rms_norm_eps": 1e-05, "rope_interleaved": False,
        "rope_theta": 100000, "torch_dtype": "bfloat16", "use_resampler": False, "vocab_size": 49280,
    },
    "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.47.1", "use_cache": False,
    "use_reentrant_checkpointing": False,
    "vision_config": {
        "hidden_size": 768, "image_size": 512, "max_image_size": {"longest_edge": 512}, "model_type": "smolvlm_vision",
        "num_attention_heads": 12, "patch_size": 16, "size": {"longest_edge": 2048}, "tie_word_embeddings": False,
        "use_base_siglip": False,
    },
    "vocab_size": 49280,
}

QWEN25_VL_3B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652,
    "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 128000, "max_window_layers": 70, "model_type": "qwen2_5_vl", "num_attention_heads": 16,
    "num_hidden_layers": 36, "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
    "use_cache": True, "use_sliding_window": False,
    "vision_config": {
        "depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
        "in_chans": 3, "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14,
        "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
        "temporal_patch_size": 2,
    },
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 151936,
}

_PIXTRAL_24B = {
    "attention_dropout": 0.0, "head_dim": 64, "hidden_act": "silu", "hidden_size": 1024, "image_size": 1540,
    "initializer_range": 0.02, "intermediate_size": 4096, "model_type": "pixtral", "num_attention_heads": 16,
    "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14, "rope_theta": 10000.0,
}
MISTRAL_SMALL_31 = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "image_token_index": 10,
    "model_type": "mistral3",
    "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu",
    "spatial_merge_size": 2,
    "text_config": {
        "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
        "initializer_range": 0.02, "intermediate_size": 32768, "max_position_embeddings": 131072,
        "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": None, "use_cache": True,
        "vocab_size": 131072,
    },
    "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0",
    "vision_config": _PIXTRAL_24B,
    "vision_feature_layer": -1,
}

ERNIE_IMAGE_MINISTRAL3_TE = {
    "architectures": ["Mistral3Model"],
    "dtype": "bfloat16",
    "image_token_index": 10,
    "model_type": "mistral3",
    "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu",
    "spatial_merge_size": 2,
    "text_config": {
        "attention_dropout": 0.0, "bos_token_id": 1, "dtype": "bfloat16", "eos_token_id": 2, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 9216,
        "max_position_embeddings": 262144, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 26,
        "num_key_value_heads": 8, "pad_token_id": 11, "rms_norm_eps": 1e-05,
        "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 16.0, "llama_4_scaling_beta": 0.1,
                            "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 16384,
                            "rope_theta": 1000000.0, "rope_type": "yarn", "type": "yarn"},
        "sliding_window": None, "tie_word_embeddings": True, "use_cache": True, "vocab_size": 131072,
    },
    "tie_word_embeddings": True,
    "transformers_version": "5.2.0",
    "vision_config": dict({k: v for k, v in _PIXTRAL_24B.items() if k != "rope_theta"}, dtype="bfloat16",
                          rope_parameters={"rope_theta": 10000.0, "rope_type": "default"}),
    "vision_feature_layer": -1,
}

_GEMMA3_VISION = {
    "attention_dropout": 0.0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152, "image_size": 896,
    "intermediate_size": 4304, "layer_norm_eps": 1e-06, "model_type": "siglip_vision_model", "num_attention_heads": 16,
    "num_channels": 3, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False,
}


def _gemma3(head_dim, hidden, inter, heads, layers, kv, qpas):
    """maxtext's ``transformers.Gemma3Config(...)`` keyword arguments for the 12B / 27B, as a config.json."""
    return {
        "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
        "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
        "model_type": "gemma3",
        "text_config": {
            "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None,
            "cache_implementation": "hybrid", "final_logit_softcapping": None, "head_dim": head_dim,
            "hidden_activation": "gelu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
            "max_position_embeddings": 163840, "model_type": "gemma3_text", "num_attention_heads": heads,
            "num_hidden_layers": layers, "num_key_value_heads": kv, "query_pre_attn_scalar": qpas,
            "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            "rope_theta": 10000.0, "sliding_window": 1024, "sliding_window_pattern": 6, "use_cache": True,
            "vocab_size": 262144,
        },
        "torch_dtype": "bfloat16",
        "vision_config": _GEMMA3_VISION,
    }


GEMMA3_12B = _gemma3(256, 3840, 15360, 16, 48, 8, 256)
GEMMA3_27B = _gemma3(128, 5376, 21504, 32, 62, 16, 168)

QWEN3_VL_32B_SHAPE = {
    "architectures": ["Qwen3VLForConditionalGeneration"],
    "image_token_id": 151655,
    "model_type": "qwen3_vl",
    "text_config": {
        "attention_bias": False, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 5120, "intermediate_size": 25600,
        "max_position_embeddings": 262144, "model_type": "qwen3_vl_text",
        "num_attention_heads": 64, "num_hidden_layers": 64, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
        "rope_theta": 5000000, "vocab_size": 151936,
    },
    "video_token_id": 151656,
    "vision_config": {"deepstack_visual_indexes": [8, 16, 24], "depth": 27, "hidden_size": 1152,
                      "intermediate_size": 4304, "num_heads": 16, "out_hidden_size": 5120, "patch_size": 16,
                      "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 2304},
    "vision_end_token_id": 151653,
    "vision_start_token_id": 151652,
}

FLORENCE2_BASE_SHAPE = {
    "model_type": "florence2", "architectures": ["Florence2ForConditionalGeneration"], "is_encoder_decoder": True,
    "vocab_size": 51289,
    "text_config": {"model_type": "florence2_language", "d_model": 768, "encoder_layers": 6, "decoder_layers": 6,
                    "encoder_attention_heads": 12, "decoder_attention_heads": 12, "vocab_size": 51289},
    "vision_config": {"model_type": "davit"},
}

#: name -> (config, whole-checkpoint count, towers + projectors): transformers 5.24's Qwen3VL / SmolVLM / Qwen2.5-VL /
#: Mistral3 / Gemma3 ForConditionalGeneration on the meta device (unique parameters; the towers are what lies outside
#: its language / text model and lm_head)
CASES = {
    "Qwen3-VL-4B-Instruct": (QWEN3_VL_4B, 4_437_815_808, 415_347_712),
    "SmolVLM2-500M-Video-Instruct": (SMOLVLM2_500M, 507_482_304, 98_229_504),
    "Qwen2.5-VL-3B-Instruct": (QWEN25_VL_3B, 3_754_622_976, 668_684_288),
    "ERNIE-Image-Ministral3-3B-text-encoder": (ERNIE_IMAGE_MINISTRAL3_TE, 3_849_090_048, 420_083_712),
    "gemma-3-12b (maxtext)": (GEMMA3_12B, 12_187_079_280, 421_290_864),
    "gemma-3-27b (maxtext)": (GEMMA3_27B, 27_432_062_576, 423_060_336),
    "Qwen3-VL-32B (MiniMax-H3 text encoder)": (QWEN3_VL_32B_SHAPE, 33_357_390_064, 595_266_800),
}


def _towers(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters()
               if not ("language_model." in n or "text_model." in n or n.startswith("lm_head.")))


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_checkpoint_count(name):
    cfg, total, towers = CASES[name]
    p = count_params(parse_config(copy.deepcopy(cfg)))
    assert (p.total, p.vision, p.audio) == (total, towers, 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts_are_transformers(name):
    """The pinned numbers above are transformers' (meta device), not ours."""
    cfg, total, towers = CASES[name]
    model = hf_model(copy.deepcopy(cfg), image_text=True)
    assert (unique_param_count(model), _towers(model)) == (total, towers)


@pytest.mark.parametrize("name, published", [("gemma-3-12b (maxtext)", 12_187_325_040),
                                             ("gemma-3-27b (maxtext)", 27_432_406_640)])
def test_gemma3_with_the_hubs_vocab_is_the_published_count(name, published):
    """The hub's text_config has vocab_size 262208 (maxtext's copy 262144): 64 more embedding rows, tied."""
    cfg, maxtext_total, _ = CASES[name]
    cfg = copy.deepcopy(cfg)
    cfg["text_config"]["vocab_size"] = 262208
    assert count_params(parse_config(cfg)).total == published
    assert published - maxtext_total == 64 * cfg["text_config"]["hidden_size"]


MISTRAL_SMALL_24B_PUBLISHED = 24_011_361_280


def test_mistral_small_31_counts_its_untied_lm_head():
    """Mistral Small 3.1 (and 3.2, the same fields) leave tie_word_embeddings out of both levels: the checkpoint ships
    language_model.lm_head.weight, so the whole checkpoint is the published 24,011,361,280, lm_head included."""
    p = count_params(parse_config(copy.deepcopy(MISTRAL_SMALL_31)))
    assert p.total == MISTRAL_SMALL_24B_PUBLISHED
    assert p.lm_head == 131072 * 5120
    assert p.vision == 438_958_080


def test_mistral_small_31_published_count_is_transformers_untied():
    """The published count is transformers' Mistral3ForConditionalGeneration with its lm_head untied (what
    from_pretrained leaves when the checkpoint holds both tensors); built from the config as it stands, transformers 5
    ties them (Mistral3Config's default) and is short by exactly the lm_head."""
    untied = hf_model(dict(copy.deepcopy(MISTRAL_SMALL_31), tie_word_embeddings=False), image_text=True)
    assert unique_param_count(untied) == MISTRAL_SMALL_24B_PUBLISHED
    assert _towers(untied) == 438_958_080
    as_written = unique_param_count(hf_model(copy.deepcopy(MISTRAL_SMALL_31), image_text=True))
    assert MISTRAL_SMALL_24B_PUBLISHED - as_written == 131072 * 5120


def test_mistral3_wrapper_flag_still_decides_when_set():
    """An explicit wrapper flag wins over text_config's: untied when false, tied when true (the ERNIE-Image text
    encoder above sets both true)."""
    untied = dict(copy.deepcopy(ERNIE_IMAGE_MINISTRAL3_TE), tie_word_embeddings=False)
    tied_total = CASES["ERNIE-Image-Ministral3-3B-text-encoder"][1]
    assert count_params(parse_config(untied)).total == tied_total + 131072 * 3072
    text_tied_only = copy.deepcopy(MISTRAL_SMALL_31)
    text_tied_only["text_config"]["tie_word_embeddings"] = True
    assert count_params(parse_config(text_tied_only)).total == MISTRAL_SMALL_24B_PUBLISHED - 131072 * 5120


def test_florence2_is_refused(tmp_path):
    with pytest.raises(UnsupportedModelError, match="encoder-decoder"):
        parse_config(copy.deepcopy(FLORENCE2_BASE_SHAPE))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLORENCE2_BASE_SHAPE))
    run("analyze", path).assert_error("encoder-decoder")


def test_mlx_quantized_config_is_flagged(tmp_path):
    """An mlx-community conversion keeps its quantization in a top-level ``quantization`` object (mlx-community/
    LocateAnything-3B-4bit: {"group_size": 64, "bits": 4, "mode": "affine"}), no quantization_config: the weights are
    not bf16, so the analysis says it sized them at torch_dtype instead of passing silently."""
    cfg = dict(copy.deepcopy(QWEN3_VL_4B), quantization={"group_size": 64, "bits": 4, "mode": "affine"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert any("MLX-quantized" in c for c in r.json["caveats"])
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(QWEN3_VL_4B))
    assert not any("MLX" in c for c in run("analyze", plain, "--json").json["caveats"])
