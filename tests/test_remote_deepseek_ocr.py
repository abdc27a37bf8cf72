"""DeepSeek-OCR (model_type ``deepseek_vl_v2``, architectures ``DeepseekOCRForCausalLM``): the whole checkpoint,
checked against a hand count written from the module shapes of vLLM's vllm/model_executor/models/deepseek_ocr.py
and deepencoder.py (build_sam_vit_b, DeepCLIPVisionTransformer over a fixed CLIP-L config, MlpProjector 'linear')
and the language model of deepseek_vl2.py's DeepseekForCausalLM layout, and against the published checkpoint size.
No network, no remote code."""

from __future__ import annotations

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import verify_self_checks

# deepseek-ai/DeepSeek-OCR config.json (shape fields as published; vision_config is descriptive: vLLM and the hub
# code build the towers at fixed shapes)
DEEPSEEK_OCR = {
    "architectures": ["DeepseekOCRForCausalLM"], "model_type": "deepseek_vl_v2", "candidate_resolutions": [[1024, 1024]],
    "global_view_pos": "head", "tile_tag": "2D", "torch_dtype": "bfloat16", "vocab_size": 129280,
    "language_config": {
        "architectures": ["DeepseekV2ForCausalLM"], "bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 1,
        "hidden_size": 1280, "intermediate_size": 6848, "kv_lora_rank": None, "lm_head": True,
        "max_position_embeddings": 8192, "moe_intermediate_size": 896, "n_group": 1, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_attention_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12,
        "num_key_value_heads": 10, "q_lora_rank": None, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0,
        "rm_head": False, "topk_group": 1, "topk_method": "greedy", "torch_dtype": "bfloat16", "use_mla": False,
        "v_head_dim": 0, "vocab_size": 129280},
    "projector_config": {"input_dim": 2048, "model_type": "mlp_projector", "n_embed": 1280,
                         "projector_type": "linear"},
    "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l", "model_type": "vision",
                      "width": {"clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14,
                                                  "width": 1024},
                                "sam_vit_b": {"downsample_channels": [512, 1024], "global_attn_indexes": [2, 5, 8, 11],
                                              "heads": 12, "layers": 12, "width": 768}}}}


def _sam_vit_b() -> int:
    """deepencoder.py ImageEncoderViT(768, depth 12, heads 12, window 14, global blocks 2/5/8/11, rel pos, 1024 / 16)."""
    d, hd, grid = 768, 64, 64
    n = d * 3 * 16 * 16 + d + grid * grid * d  # patch_embed.proj (biased), pos_embed
    for i in range(12):
        side = grid if i in (2, 5, 8, 11) else 14
        n += 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * (2 * side - 1) * hd + 2 * d + (4 * d * d + 4 * d) \
            + (4 * d * d + d)  # norm1, qkv, proj, rel_pos_h/w, norm2, mlp.lin1, mlp.lin2
    n += 256 * d + 2 * 256 + 256 * 256 * 9 + 2 * 256  # neck: 1x1 conv, LayerNorm2d, 3x3 conv, LayerNorm2d
    return n + 512 * 256 * 9 + 1024 * 512 * 9  # net_2, net_3 (bias-free)


def _clip_l() -> int:
    """DeepCLIPVisionTransformer(CLIPVisionConfig(1024, 4096, 16 heads, 24 layers, 224 / 14)): no post-LayerNorm."""
    c = 1024
    n = c + c * 3 * 14 * 14 + (16 * 16 + 1) * c + 2 * c  # class embedding, patch conv, positions, pre_layrnorm
    return n + 24 * (2 * c + (3 * c * c + 3 * c) + (c * c + c) + 2 * c + (4 * c * c + 4 * c) + (4 * c * c + c))


def _language(V=129280, h=1280, L=12) -> tuple[int, int]:
    """DeepseekForCausalLM (use_mla false): q/k/v/o of 1280 (10 heads x 128, bias-free), two RMSNorms a layer, layer 0
    a dense SwiGLU of 6848, layers 1-11 gate (64 x h) + 64 SwiGLU experts of 896 + shared of 2 x 896; untied head."""
    total = 2 * V * h + h + L * (4 * h * h + 2 * h) + 3 * h * 6848 + 11 * (64 * h + 64 * 3 * h * 896 + 3 * h * 1792)
    return total, total - 11 * (64 - 6) * 3 * h * 896


def test_deepseek_ocr_by_hand_and_published():
    spec = parse_config(DEEPSEEK_OCR)
    p = count_params(spec)
    lm, lm_active = _language()
    vision = _sam_vit_b() + _clip_l() + (2048 * 1280 + 1280) + 2 * 1280  # + projector, image_newline, view_seperator
    assert p.vision == vision == 401_372_160
    assert p.total == lm + vision == 3_336_106_240
    # the published checkpoint: one bf16 model.safetensors of 6,672,212,480 bytes (6.67 GB), i.e. 3,336,106,240
    # parameters (the same figure an OCR converter for this checkpoint family asserts, EXPECTED_TOTAL_BYTES)
    assert p.total * 2 == 6_672_212_480
    assert p.active == lm_active + vision
    # MHA cache: 12 layers x K and V of 10 heads x 128, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 12 * 2 * 10 * 128 * 2


def test_deepseek_ocr_tensor_names_are_the_checkpoints():
    from planner.analysis.families.deepseek_ocr import deepseek_ocr_vision

    names = {t.name: t.shape for t in deepseek_ocr_vision(DEEPSEEK_OCR, 1280, "x")}
    assert names["model.sam_model.patch_embed.proj.weight"] == (768, 3, 16, 16)
    assert names["model.vision_model.transformer.layers.0.self_attn.qkv_proj.weight"] == (3072, 1024)
    assert names["model.projector.layers.weight"] == (1280, 2048)
    assert names["model.sam_model.blocks.2.attn.rel_pos_h"] == (127, 64)
    assert names["model.sam_model.blocks.0.attn.rel_pos_h"] == (27, 64)
    assert "model.vision_model.post_layernorm.weight" not in names


@pytest.mark.parametrize("projector,error,match", [
    ({"projector_type": "mlp_gelu", "input_dim": 2048, "n_embed": 1280}, UnsupportedModelError, "projector_type"),
    ({"projector_type": "linear", "input_dim": 1024, "n_embed": 1280}, ConfigError, "input_dim"),
    ({"projector_type": "linear", "input_dim": 2048, "n_embed": 2048}, ConfigError, "n_embed"),
    ({}, UnsupportedModelError, "projector_type"),  # MlpProjectorConfig's default: downsample_mlp_gelu
])
def test_deepseek_ocr_bad_projectors_raise_clear_errors(projector, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(DEEPSEEK_OCR, projector_config=projector))
    with pytest.raises(UnsupportedModelError, match="tile_tag"):
        parse_config(dict(DEEPSEEK_OCR, tile_tag="1D"))


def test_deepseek_ocr_language_model_verifies(tmp_path):
    """verify builds the language model (the towers are counted apart): its exact self-checks pass."""
    tiny = dict(DEEPSEEK_OCR, projector_config=dict(DEEPSEEK_OCR["projector_config"], n_embed=64),
                language_config=dict(DEEPSEEK_OCR["language_config"], hidden_size=64, intermediate_size=96,
                                     moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2,
                                     num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=3,
                                     vocab_size=256, max_position_embeddings=256))
    verify_self_checks(tmp_path, tiny, name="ocr")
