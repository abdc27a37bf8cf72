"""mlx-vlm registry audit (wave s28 E; analysis/families/s28e_mlxvlm.py).

mlx-vlm's folders bonsai, deepseekocr, deepseekocr_2, falcon_ocr, fastvlm, florence2, granite_vision, inkling,
jina_vlm, llava_bunny and llmjpvl (``Blaizzy/mlx-vlm``, ``mlx_vlm/models/``; MODEL_REMAPPING in mlx_vlm/utils.py maps
llava_qwen2 -> fastvlm, llava-qwen2 / bunny-llama -> llava_bunny, jvlm -> jina_vlm, granite-vision -> granite_vision,
inkling_mm_model -> inkling), mapped onto the model_types their checkpoints carry. What changed:

- ``granite_vision`` / ``granite-vision`` (mlx-community's Granite Vision 3.x conversions) were read as their
  text_config alone, the SigLIP tower, the projector over four feature layers and image_newline dropped: now read as
  transformers' LLaVA-NeXT, which they are (IBM's originals say llava_next);
- mlx-vlm's ``inkling`` (its name for inkling_mm_model) was read without its towers: now as inkling_mm_model;
- Falcon-OCR (``falcon_ocr``: read as a generic Llama from dim / n_layers / ffn_dim), Jina-VLM (``jvlm``, mlx-vlm's
  ``jina_vlm``), LLM-jp-VL (``llmjpvl``) and the flat LLaVA-repository formats of FastVLM (``llava_qwen2``), Bunny
  (``bunny-*``) and nanoLLaVA (``llava-qwen2``) are refused by name.

Unchanged and pinned only where at risk: Florence-2 (``florence2``, is_encoder_decoder: refused as an
encoder-decoder). DeepSeek-OCR (deepseek_vl_v2 + DeepseekOCRForCausalLM) and DeepSeek-OCR-2 (deepseek_ocr2) are
counted by their own families and tests; bonsai is a text-to-image model (out of scope).
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.clirun import analyze_json, run
from tests.oracle import hf_class_model, hf_model, unique_param_count

#: Granite Vision 3.2 2B in its llava_next form: the wrapper fields and vision_config as mlxcel's granite-vision
#: detection tests quote the checkpoint (image_token_index 49155, vision_feature_layer [-24, -20, -12, -1], a 27-layer
#: 1152-wide SigLIP at 384 px / patch 14; llama.cpp's granitevision.md gives the same vision config with
#: intermediate_size 4304 and gelu_pytorch_tanh), text_config Granite 3.x 2B's shapes (2048 wide, 40 layers, 32 heads /
#: 8 KV, 8192 MLP; vocab 49156 = 49155 + the image token; granite-speech-4.1-2b-plus's text side, quoted beside, has
#: the same widths), tied as Granite's 2B models are; the image_grid_pinpoints list cut short (no parameter depends on
#: it). mlx-vlm's README for the folder: "~3B" parameters
GRANITE_VISION_3_2_2B = {
    "architectures": ["LlavaNextForConditionalGeneration"], "model_type": "llava_next", "image_token_index": 49155,
    "image_grid_pinpoints": [[384, 384], [384, 768], [768, 384], [768, 768]], "projector_hidden_act": "gelu",
    "vision_feature_select_strategy": "full", "vision_feature_layer": [-24, -20, -12, -1],
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "text_config": {"architectures": ["GraniteForCausalLM"], "model_type": "granite", "hidden_size": 2048,
                    "intermediate_size": 8192, "num_hidden_layers": 40, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "vocab_size": 49156, "max_position_embeddings": 131072,
                    "rms_norm_eps": 1e-05, "rope_theta": 300000, "attention_multiplier": 0.015625,
                    "embedding_multiplier": 12.0, "logits_scaling": 8.0, "residual_multiplier": 0.22,
                    "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 384,
                      "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "layer_norm_eps": 1e-06, "hidden_act": "gelu_pytorch_tanh"}}

#: tiiuae/Falcon-OCR's config.json, verbatim as mlxcel's falcon_ocr config tests quote "the shipped config.json"
FALCON_OCR = {
    "architectures": ["FalconOCRForCausalLM"], "model_type": "falcon_ocr", "torch_dtype": "float32",
    "dim": 768, "n_layers": 22, "n_heads": 16, "head_dim": 64, "n_kv_heads": 8, "vocab_size": 65536, "ffn_dim": 2304,
    "norm_eps": 1e-05, "max_seq_len": 8192, "rope_theta": 10000, "channel_size": 3, "spatial_patch_size": 16,
    "temporal_patch_size": 1, "eos_id": 11, "img_id": 227, "image_cls_token_id": 244, "image_reg_1_token_id": 245,
    "image_reg_2_token_id": 246, "image_reg_3_token_id": 247, "image_reg_4_token_id": 248, "img_end_id": 230}

#: apple/FastVLM-0.5B's config.json fields (as a FastVLM fine-tuning script copies them for its mlx-swift export)
FASTVLM_0_5B = {
    "architectures": ["LlavaQwen2ForCausalLM"], "hidden_act": "silu", "hidden_size": 896, "image_aspect_ratio": "pad",
    "image_token_index": 151646, "intermediate_size": 4864, "max_position_embeddings": 32768, "mm_hidden_size": 3072,
    "mm_patch_merge_type": "flat", "mm_projector_type": "mlp2x_gelu", "mm_vision_select_feature": "patch",
    "mm_vision_select_layer": -2, "mm_vision_tower": "mobileclip_l_1024", "model_type": "llava_qwen2",
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_sliding_window": False, "vocab_size": 151936}

#: BAAI/Bunny-v1_0-3B's config.json (a user's copy of it, printed in a Bunny evaluation script's comments)
BUNNY_V1_0_3B = {
    "_name_or_path": "BAAI/bunny-phi-2-siglip", "architectures": ["BunnyPhiForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_bunny_phi.BunnyPhiConfig",
                 "AutoModelForCausalLM": "modeling_bunny_phi.BunnyPhiForCausalLM"},
    "hidden_act": "gelu_new", "hidden_size": 2560, "image_aspect_ratio": "pad", "intermediate_size": 10240,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "mm_hidden_size": 1152, "mm_projector_type": "mlp2x_gelu",
    "mm_vision_tower": "google/siglip-so400m-patch14-384", "model_type": "bunny-phi", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.4, "qk_layernorm": False,
    "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float16", "vocab_size": 50295}

#: jinaai/jina-vlm's text_config as mlxcel's jina_vlm tests quote jinaai/jina-vlm-mlx (trimmed by them to the keys
#: they read); its vision_config from the same tests, only the fields a reader would need for the tower's widths
JINA_VLM = {
    "architectures": ["JinaVLMForConditionalGeneration"], "model_type": "jvlm",
    "text_config": {
        "additional_vocab_size": 128, "block_config": {
            "attn_config": {"head_dim": 128, "k_lnorm": True, "n_heads": 16, "n_kv_heads": 8, "q_lnorm": True},
            "ffn_config": {"activation_type": "silu", "gated_activation": True, "ratio": 4, "size": 6144}},
        "embedding_size": 151936, "hidden_size": 2048, "max_sequence_length": 40960, "model_type": "jvlm",
        "n_layers": 28, "num_hidden_layers": 28, "rope_theta": 1000000, "tie_word_embeddings": False,
        "vocab_size": 151936},
    "vision_config": {"hidden_size": 1152, "model_type": "jvlm", "n_layers": 27, "patch_size": 14,
                      "vit_layers": [-4, -10], "output_size": 2048}}

#: microsoft/Florence-2-base's layout as mlxcel's Florence-2 tests quote the real config.json (trimmed by them)
FLORENCE2_BASE = {
    "model_type": "florence2", "is_encoder_decoder": True, "vocab_size": 51289,
    "text_config": {"model_type": "florence2_language", "d_model": 768, "encoder_layers": 6, "decoder_layers": 6,
                    "encoder_attention_heads": 12, "decoder_attention_heads": 12, "encoder_ffn_dim": 3072,
                    "decoder_ffn_dim": 3072, "vocab_size": 51289, "max_position_embeddings": 1024},
    "vision_config": {"model_type": ""}}


def _write(tmp_path, cfg: dict, name: str = "config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


# ---- Granite Vision under mlx-vlm's names: transformers' LLaVA-NeXT ----------------------------------------------


def test_granite_vision_llava_next_equals_transformers(tmp_path):
    oracle = unique_param_count(hf_model(GRANITE_VISION_3_2_2B))
    d = analyze_json(tmp_path, GRANITE_VISION_3_2_2B)
    assert d["params"]["total"] == oracle == 2_975_396_928
    # the tower (SiglipVisionModel with its attention-pooling head, vision_use_head's default) and the projector from
    # 4 x 1152 concatenated features, by hand from modeling_siglip / modeling_llava_next
    vh, th, inter, layers = 1152, 2048, 4304, 27
    patches = (384 // 14) ** 2
    mlp = vh * inter + inter + inter * vh + vh
    siglip = (3 * vh * 14 * 14 + vh) + patches * vh + layers * (4 * (vh * vh + vh) + 2 * 2 * vh + mlp) + 2 * vh
    head = vh + (3 * vh * vh + 3 * vh) + (vh * vh + vh) + 2 * vh + mlp  # probe, MHA in / out, LayerNorm, MLP
    projector = (4 * vh * th + th) + (th * th + th)
    assert d["params"]["vision"] == siglip + head + projector + th  # + image_newline


@pytest.mark.parametrize("model_type", ["granite_vision", "granite-vision", "granitevision"])
def test_granite_vision_mlx_names_read_as_llava_next(tmp_path, model_type):
    oracle = unique_param_count(hf_model(GRANITE_VISION_3_2_2B))
    base = analyze_json(tmp_path, GRANITE_VISION_3_2_2B, "llava_next.json")
    d = analyze_json(tmp_path, dict(GRANITE_VISION_3_2_2B, model_type=model_type))
    assert d["params"]["total"] == oracle
    assert d["params"]["vision"] == base["params"]["vision"] > 0
    assert d["kv_cache"]["bytes_per_token"] == base["kv_cache"]["bytes_per_token"] == 40 * 2 * 8 * 64 * 2


# ---- mlx-vlm's inkling: transformers' InklingForConditionalGeneration ---------------------------------------------


def test_inkling_mlx_name_equals_transformers_inkling_mm_model(tmp_path):
    from tests.test_families import WRAPPERS  # the inkling_mm_model case: HMLP tower 2·2·3, dMel audio embedding

    cfg = copy.deepcopy(WRAPPERS["inkling_mm_model"])
    oracle = unique_param_count(hf_class_model(cfg, "InklingForConditionalGeneration"))
    d = analyze_json(tmp_path, dict(cfg, model_type="inkling"))
    assert d["params"]["total"] == oracle
    assert d["params"]["vision"] > 0


# ---- refused by name ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg, fragments", [
    (FALCON_OCR, ("Falcon-OCR", "early-fusion", "freqs_cis_golden", "squared-ReLU")),
    (JINA_VLM, ("Jina-VLM", "attention pooling", "additional_vocab_size")),
    (dict(JINA_VLM, model_type="jina_vlm"), ("Jina-VLM", "mlx-vlm's name")),
    ({"model_type": "llmjpvl", "llm_config": {"model_type": "qwen3", "hidden_size": 2048}},
     ("LLM-jp-VL", "mlp1", "neither checkpoint's config.json")),
    (FASTVLM_0_5B, ("FastVLM", "mobileclip_l_1024", "mm_vision_tower", "model_type fast_vlm")),
    (BUNNY_V1_0_3B, ("Bunny", "BunnyPhiForCausalLM", "mm_vision_tower", "Phi-2")),
    (dict(FASTVLM_0_5B, model_type="llava-qwen2", hidden_size=1024), ("nanoLLaVA", "siglip-so400m")),
    (dict(BUNNY_V1_0_3B, model_type="bunny-llama"), ("BunnyLlamaForCausalLM", "Llama-3")),
])
def test_refused_by_name(tmp_path, cfg, fragments):
    run("analyze", _write(tmp_path, cfg)).assert_error(*fragments)


# ---- unchanged: Florence-2 stays an encoder-decoder -----------------------------------------------------------------


def test_florence2_refused_as_encoder_decoder(tmp_path):
    run("analyze", _write(tmp_path, FLORENCE2_BASE)).assert_error("florence2", "encoder-decoder")
