"""LLaVA in the LLaVA / LLaVA-NeXT repositories' own format (flat config + mm_* fields; LlavaQwenForCausalLM,
LlavaLlamaForCausalLM, LlavaMistralForCausalLM; model_type "llava" or llava_qwen / llava_llama / llava_mistral):
the whole checkpoint, checked against a hand count written from the repositories' module shapes (SigLipVisionTower
drops the last SigLIP layer and the head; CLIPVisionTower keeps the whole CLIPVisionModel; mlp2x_gelu projector;
image_newline with an "unpad" merge) and the hub's published counts. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# lmms-lab/llava-onevision-qwen2-7b-ov config.json (shape fields as published; image_grid_pinpoints left out)
ONEVISION_7B = {
    "architectures": ["LlavaQwenForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "image_token_index": 151646,
    "image_aspect_ratio": "anyres_max_9", "initializer_range": 0.02, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "mm_hidden_size": 1152,
    "mm_newline_position": "one_token", "mm_patch_merge_type": "spatial_unpad", "mm_projector_type": "mlp2x_gelu",
    "mm_resampler_type": None, "mm_spatial_pool_mode": "bilinear",
    "mm_tunable_parts": "mm_vision_tower,mm_mlp_adapter,mm_language_model", "mm_use_im_patch_token": False,
    "mm_use_im_start_end": False, "mm_vision_select_feature": "patch", "mm_vision_select_layer": -2,
    "mm_vision_tower": "google/siglip-so400m-patch14-384", "mm_vision_tower_lr": 2e-06, "model_type": "llava",
    "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_mm_proj": True, "use_sliding_window": False, "vocab_size": 152064}

# liuhaotian/llava-v1.6-vicuna-7b config.json (shape fields)
LLAVA_16_VICUNA_7B = {
    "architectures": ["LlavaLlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu", "hidden_size": 4096,
    "image_aspect_ratio": "anyres", "intermediate_size": 11008, "max_position_embeddings": 4096,
    "mm_hidden_size": 1024, "mm_patch_merge_type": "spatial_unpad", "mm_projector_type": "mlp2x_gelu",
    "mm_resampler_type": None, "mm_vision_select_feature": "patch", "mm_vision_select_layer": -2,
    "mm_vision_tower": "openai/clip-vit-large-patch14-336", "model_type": "llava", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "pad_token_id": 0, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "unfreeze_mm_vision_tower": True, "use_mm_proj": True, "vocab_size": 32000}


def _siglip_so400m_minus_last() -> int:
    """SigLIP so400m-patch14-384 with 26 of its 27 layers, post_layernorm, no head."""
    h, inter = 1152, 4304
    layer = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    return (h * 3 * 14 * 14 + h) + 729 * h + 26 * layer + 2 * h


def _clip_l_336() -> int:
    """CLIPVisionModel ViT-L/14-336: class embedding, bias-free patch conv, 577 positions, pre / post LayerNorm."""
    h, inter = 1024, 4096
    layer = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    return h + h * 3 * 14 * 14 + 577 * h + 2 * h + 24 * layer + 2 * h


def _mlp2x(vh, h) -> int:
    return (vh * h + h) + (h * h + h)


def _decoder(h, inter, layers, heads, kv, vocab, qkv_bias) -> int:
    hd = h // heads
    attn = h * h + 2 * h * kv * hd + h * h + ((h + 2 * kv * hd) if qkv_bias else 0)
    return 2 * vocab * h + h + layers * (attn + 3 * h * inter + 2 * h)


def test_onevision_7b_by_hand_and_published():
    spec = parse_config(ONEVISION_7B)
    p = count_params(spec)
    lm = _decoder(3584, 18944, 28, 28, 4, 152064, True)
    vision = _siglip_so400m_minus_last() + _mlp2x(1152, 3584) + 3584
    assert lm == 7_615_616_512  # Qwen2-7B
    assert p.vision == vision == 414_732_320
    assert p.total == lm + vision == 8_030_348_832
    assert round(p.total / 1e7) == 803  # the hub's 8.03B
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 4 * 128 * 2


def test_llava_16_vicuna_and_mistral_by_hand_and_published():
    p = count_params(parse_config(LLAVA_16_VICUNA_7B))
    vision = _clip_l_336() + _mlp2x(1024, 4096) + 4096
    assert p.vision == vision and _clip_l_336() == 303_507_456
    assert p.total == _decoder(4096, 11008, 32, 32, 32, 32000, False) + vision == 7_062_906_880  # the hub's 7.06B
    mistral = dict(LLAVA_16_VICUNA_7B, architectures=["LlavaMistralForCausalLM"], model_type="llava_mistral",
                   intermediate_size=14336, num_key_value_heads=8, rope_theta=1000000.0, sliding_window=None,
                   max_position_embeddings=32768)
    p = count_params(parse_config(mistral))
    assert p.total == _decoder(4096, 14336, 32, 32, 8, 32000, False) + vision == 7_566_223_360  # the hub's 7.57B


def test_repository_model_types_and_tensor_names():
    same = dict(ONEVISION_7B, model_type="llava_qwen")
    assert count_params(parse_config(same)).total == 8_030_348_832
    from planner.analysis.families.llava_original import llava_original_vision

    names = {t.name: t.shape for t in llava_original_vision(ONEVISION_7B, 3584, "x")}
    base = "model.vision_tower.vision_tower.vision_model"
    assert f"{base}.encoder.layers.25.mlp.fc1.weight" in names
    assert f"{base}.encoder.layers.26.mlp.fc1.weight" not in names
    assert f"{base}.post_layernorm.weight" in names and not any(".head." in n for n in names)
    assert names["model.mm_projector.0.weight"] == (3584, 1152) and names["model.mm_projector.2.weight"] == (3584, 3584)
    assert names["model.image_newline"] == (3584,)
    flat = dict(ONEVISION_7B, mm_patch_merge_type="flat", mm_projector_type="linear")
    names = {t.name for t in llava_original_vision(flat, 3584, "x")}
    assert "model.image_newline" not in names and "model.mm_projector.2.weight" not in names


def test_transformers_llava_is_unchanged():
    with pytest.raises(UnsupportedModelError, match="has no text_config we can read"):
        parse_config({"model_type": "llava"})


@pytest.mark.parametrize("change,error,match", [
    ({"mm_vision_tower": "openai/clip-vit-base-patch16"}, UnsupportedModelError, "clip-vit-base-patch16"),
    ({"mm_projector_type": "pooler"}, UnsupportedModelError, "mm_projector_type"),
    ({"mm_hidden_size": 1024}, ConfigError, "mm_hidden_size"),
    ({"architectures": ["LlavaMixtralForCausalLM"]}, UnsupportedModelError, "LlavaMixtralForCausalLM"),
    ({"model_type": "llava_llama"}, ConfigError, "disagrees"),
    ({"mm_resampler_type": "spatial_pool"}, UnsupportedModelError, "mm_resampler_type"),
])
def test_bad_fields_raise_clear_errors(change, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(ONEVISION_7B, **change))


def test_llava_original_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ONEVISION_7B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_030_348_832
    assert r.json["kv_cache"]["bytes_per_token"] == 57_344
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(ONEVISION_7B, mm_vision_tower="some/tower")))
    run("analyze", str(bad)).assert_error("mm_vision_tower 'some/tower'")


def test_llava_original_language_model_verifies(tmp_path):
    """verify builds the language model (the tower is counted apart): its exact self-checks pass."""
    tiny = dict(ONEVISION_7B, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                num_hidden_layers=2, vocab_size=256, max_position_embeddings=256)
    verify_self_checks(tmp_path, tiny, name="ov")
