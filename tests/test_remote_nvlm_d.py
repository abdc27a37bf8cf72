"""NVIDIA NVLM-D (model_type ``NVLM_D``, remote code): the whole checkpoint, checked against a hand count written from
the module shapes of the hub's modeling_nvlm_d.py / modeling_intern_vit.py (vLLM's nvlm_d.py builds the same:
InternViT with 7 dummy heads, a bias-free mlp1 through the language model's intermediate size) and Qwen2-72B's
layers, and against the published model.safetensors.index.json. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# nvidia/NVLM-D-72B config.json (shape fields as published; generation defaults of the nested configs left out).
# Its llm_config says model_type "llama": NVLM_D_Config builds it as Qwen2Config (architectures[0]) all the same.
NVLM_D_72B = {
    "architectures": ["NVLM_D"],
    "auto_map": {"AutoConfig": "configuration_nvlm_d.NVLM_D_Config", "AutoModel": "modeling_nvlm_d.NVLM_D_Model",
                 "AutoModelForCausalLM": "modeling_nvlm_d.NVLM_D_Model"},
    "downsample_ratio": 0.5, "dynamic_image_size": True, "force_image_size": 448,
    "llm_config": {
        "_name_or_path": "Qwen/Qwen2-72B-Instruct", "architectures": ["Qwen2ForCausalLM"], "attention_bias": True,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
        "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 29568, "max_position_embeddings": 32768,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
        "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-06,
        "rope_scaling": {"factor": 3.0, "type": "dynamic"}, "rope_theta": 1000000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_bfloat16": True, "use_cache": True, "vocab_size": 152064},
    "max_dynamic_patch": 6, "min_dynamic_patch": 1, "model_type": "NVLM_D", "ps_version": "v2", "select_layer": -1,
    "template": "chatml", "torch_dtype": "bfloat16", "use_backbone_lora": 0, "use_llm_lora": 0, "use_thumbnail": True,
    "vision_config": {
        "architectures": ["InternVisionModel"], "attention_dropout": 0.0, "drop_path_rate": 0.0, "dropout": 0.0,
        "hidden_act": "gelu", "hidden_size": 3200, "image_size": 448, "initializer_factor": 0.1,
        "initializer_range": 1e-10, "intermediate_size": 12800, "layer_norm_eps": 1e-06, "model_type": "intern_vit_6b",
        "norm_type": "rms_norm", "num_attention_heads": 25, "num_channels": 3, "num_hidden_layers": 45,
        "patch_size": 14, "qk_normalization": True, "qkv_bias": False, "torch_dtype": "bfloat16",
        "use_bfloat16": True, "use_flash_attn": True}}


def _vit_by_hand(h=3200, heads=25, layers=45, inter=12800, image=448, patch=14) -> int:
    """InternVisionModel (hub modeling_intern_vit.py): class_embedding, biased 3-channel patch conv, positions; per
    layer qkv (3 x dummy, h) bias-free, q_norm / k_norm of dummy, biased proj (h, dummy), biased fc1 / fc2, RMSNorms
    norm1 / norm2 and ls1 / ls2 of h, where dummy = (heads + 7) x head_dim."""
    dummy = (heads + 7) * (h // heads)
    layer = 3 * dummy * h + 2 * dummy + (dummy * h + h) + (h * inter + inter) + (inter * h + h) + 2 * h + 2 * h
    return h + (h * 3 * patch * patch + h) + ((image // patch) ** 2 + 1) * h + layers * layer


def _mlp1_by_hand(vh=3200, ratio_inv=2, inter=29568, text=8192) -> int:
    m = vh * ratio_inv ** 2
    return 2 * m + m * inter + inter * text  # LayerNorm(m), Linear(m, inter, no bias), Linear(inter, text, no bias)


def _qwen2_by_hand(h=8192, inter=29568, heads=64, kv=8, layers=80, vocab=152064) -> int:
    hd = h // heads
    attn = (h * h + h) + 2 * (h * kv * hd + kv * hd) + h * h  # biased q / k / v, bias-free o
    return 2 * vocab * h + h + layers * (attn + 3 * h * inter + 2 * h)  # untied head, final norm


def test_nvlm_d_72b_by_hand_and_published():
    spec = parse_config(NVLM_D_72B)
    p = count_params(spec)
    assert _vit_by_hand() == 6_052_672_640
    assert _mlp1_by_hand() == 620_717_056
    assert _qwen2_by_hand() == 72_706_203_648  # Qwen2-72B-Instruct's published 72.71B
    assert p.vision == _vit_by_hand() + _mlp1_by_hand()
    assert p.total == _qwen2_by_hand() + _vit_by_hand() + _mlp1_by_hand() == 79_379_593_344
    assert p.active == p.total
    # the published index's total_size, 176,901,927,168 bytes: the language model's q/k/v weights and biases and the
    # tower's qkv / proj.weight / q_norm / k_norm are stored in fp32 (4 bytes), everything else in bf16
    h, kvd, vh, dummy = 8192, 1024, 3200, 4096
    fp32 = 80 * ((h * h + h) + 2 * (kvd * h + kvd)) + 45 * (3 * dummy * vh + dummy * vh + 2 * dummy)
    assert 2 * p.total + 2 * fp32 == 176_901_927_168
    # GQA cache of the language model: 80 layers x K and V of 8 heads x 128, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 80 * 2 * 8 * 128 * 2 == 327_680
    assert spec.tie_word_embeddings is False


def test_nvlm_d_tensor_names_are_the_checkpoints():
    from planner.analysis.families.nvlm_d import nvlm_d_vision

    names = {t.name: t.shape for t in nvlm_d_vision(NVLM_D_72B, 8192, "x")}
    # the names and shapes of the published index's weight_map
    assert names["vision_model.encoder.layers.0.attn.qkv.weight"] == (12288, 3200)
    assert names["vision_model.encoder.layers.0.attn.q_norm.weight"] == (4096,)
    assert names["vision_model.encoder.layers.44.attn.proj.weight"] == (3200, 4096)
    assert names["vision_model.embeddings.position_embedding"] == (1, 1025, 3200)
    assert names["mlp1.1.weight"] == (29568, 12800)
    assert names["mlp1.3.weight"] == (8192, 29568)
    assert "mlp1.1.bias" not in names and "vision_model.encoder.layers.45.ls1" not in names
    assert "vision_model.encoder.layers.0.attn.qkv.bias" not in names


def test_nvlm_d_refuses_what_it_cannot_read():
    with pytest.raises(ConfigError, match="llm_config"):
        parse_config({k: v for k, v in NVLM_D_72B.items() if k != "llm_config"})
    with pytest.raises(UnsupportedModelError, match="architecture 'LlamaForCausalLM'"):
        parse_config(dict(NVLM_D_72B, llm_config=dict(NVLM_D_72B["llm_config"], architectures=["LlamaForCausalLM"])))
    with pytest.raises(UnsupportedModelError, match="use_backbone_lora"):
        parse_config(dict(NVLM_D_72B, use_backbone_lora=16))
    with pytest.raises(ConfigError, match="downsample_ratio"):
        parse_config(dict(NVLM_D_72B, downsample_ratio=4))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(NVLM_D_72B, vision_config=dict(NVLM_D_72B["vision_config"], num_attention_heads=24)))


def test_nvlm_d_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(NVLM_D_72B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 79_379_593_344
    assert r.json["kv_cache"]["bytes_per_token"] == 327_680
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(NVLM_D_72B, llm_config=dict(NVLM_D_72B["llm_config"], architectures=["X"]))))
    run("analyze", str(bad)).assert_error("llm_config architecture 'X'")


def test_nvlm_d_language_model_verifies(tmp_path):
    """verify builds the language model (Qwen2; the tower is counted apart): its exact self-checks pass."""
    tiny = dict(NVLM_D_72B, llm_config=dict(NVLM_D_72B["llm_config"], hidden_size=64, intermediate_size=96,
                                            num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                            vocab_size=256, max_position_embeddings=256),
                vision_config=dict(NVLM_D_72B["vision_config"], hidden_size=32, num_attention_heads=2,
                                   intermediate_size=48, num_hidden_layers=2, image_size=28))
    verify_self_checks(tmp_path, tiny, name="nvlm")
