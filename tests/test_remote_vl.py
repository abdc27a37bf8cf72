"""Remote-code vision-language wrappers around DeepSeek MoE language models: Kimi-VL (``kimi_vl``) and DeepSeek-VL2
(``deepseek_vl_v2``). No transformers class exists for the wrappers: the whole-checkpoint counts are checked against
hand counts written from vLLM's weight shapes (vllm/model_executor/models/kimi_vl.py, moonvit.py, deepseek_vl2.py
and timm's vit_so400m_patch14_siglip_384 that it creates) and against the published totals; the language model's
logits against transformers' DeepSeek-V2 / V3 (the layout vLLM serves them with). No network, no remote code."""

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params

# moonshotai/Kimi-VL-A3B-Instruct config.json (written from the hub file; -Thinking has the same shapes)
KIMI_VL_A3B = {
    "architectures": ["KimiVLForConditionalGeneration"], "model_type": "kimi_vl", "ignore_index": -100,
    "media_placeholder_token_id": 163605, "pad_token_id": 0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "text_config": {
        "vocab_size": 163840, "max_position_embeddings": 131072, "hidden_size": 2048, "intermediate_size": 11264,
        "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_nextn_predict_layers": 0,
        "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2, "n_routed_experts": 64,
        "ep_size": 1, "routed_scaling_factor": 2.446, "kv_lora_rank": 512, "q_lora_rank": None,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "noaux_tc", "n_group": 1,
        "topk_group": 1, "num_experts_per_tok": 6, "moe_layer_freq": 1, "first_k_dense_replace": 1,
        "norm_topk_prob": True, "scoring_func": "sigmoid", "aux_loss_alpha": 0.001, "seq_aux": True,
        "hidden_act": "silu", "rms_norm_eps": 1e-05, "rope_theta": 800000.0, "rope_scaling": None,
        "attention_bias": False, "bos_token_id": 163584, "eos_token_id": 163585, "pad_token_id": 163839,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "model_type": "deepseek_v3"},
    "vision_config": {
        "init_pos_emb_height": 64, "init_pos_emb_width": 64, "hidden_size": 1152, "intermediate_size": 4304,
        "merge_kernel_size": [2, 2], "model_type": "moonvit", "num_attention_heads": 16, "num_hidden_layers": 27,
        "patch_size": 14, "torch_dtype": "bfloat16"}}

# deepseek-ai/deepseek-vl2-tiny / -small / deepseek-vl2 config.json (written from the hub files; their
# language_config fields as published, the full model's leaving layers / heads / MLA dims to DeepseekV2Config)
_SIGLIP_SO400M = {"layers": 27, "mlp_ratio": 3.7362, "model_name": "siglip_so400m_patch14_384", "model_type": "vision",
                  "patch_size": 14, "width": 1152}


def _dsvl2(language: dict, n_embed: int) -> dict:
    return {"architectures": ["DeepseekVLV2ForCausalLM"], "model_type": "deepseek_vl_v2", "tile_tag": "2D",
            "global_view_pos": "head", "candidate_resolutions": [[384, 384], [384, 768], [768, 384]],
            "torch_dtype": "bfloat16", "language_config": dict(language, architectures=["DeepseekV2ForCausalLM"]),
            "projector_config": {"model_type": "mlp_projector", "n_embed": n_embed},
            "vision_config": dict(_SIGLIP_SO400M)}


DSVL2_TINY = _dsvl2({"bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 1, "hidden_size": 1280,
                     "intermediate_size": 6848, "kv_lora_rank": None, "lm_head": True, "max_position_embeddings": 4096,
                     "model_type": "deepseek_v2", "moe_intermediate_size": 896, "n_group": 1, "n_routed_experts": 64,
                     "n_shared_experts": 2, "num_attention_heads": 10, "num_experts_per_tok": 6,
                     "num_hidden_layers": 12, "num_key_value_heads": 10, "q_lora_rank": None, "qk_nope_head_dim": 0,
                     "qk_rope_head_dim": 0, "rm_head": False, "topk_group": 1, "topk_method": "greedy",
                     "use_mla": False, "v_head_dim": 0, "vocab_size": 129280}, 1280)
DSVL2_SMALL = _dsvl2({"first_k_dense_replace": 1, "hidden_size": 2048, "intermediate_size": 10944,
                      "kv_lora_rank": 512, "lm_head": True, "max_position_embeddings": 4096,
                      "model_type": "deepseek_v2", "moe_intermediate_size": 1408, "n_group": 1,
                      "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 16,
                      "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
                      "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rm_head": False,
                      "topk_group": 1, "topk_method": "greedy", "use_mla": True, "v_head_dim": 128,
                      "vocab_size": 102400}, 2048)
DSVL2 = _dsvl2({"first_k_dense_replace": 1, "hidden_size": 2560, "intermediate_size": 12288, "lm_head": True,
                "max_position_embeddings": 4096, "model_type": "deepseek_v2", "moe_intermediate_size": 1536,
                "n_group": 1, "n_routed_experts": 72, "n_shared_experts": 2, "num_experts_per_tok": 6,
                "q_lora_rank": None, "rm_head": False, "routed_scaling_factor": 2.0, "scoring_func": "sigmoid",
                "norm_topk_prob": True, "topk_group": 1, "topk_method": "noaux_tc", "vocab_size": 129280}, 2560)


def _siglip_so400m() -> int:
    """timm vit_so400m_patch14_siglip_384 (what vLLM creates): Conv2d patch embed, 27 x 27 positions, 27 blocks
    (norm1, fused qkv, proj, norm2, fc1 / fc2 of int(1152 x 3.7362) = 4304, all biased), the final norm and the
    ``map`` attention pool (latent, q, kv, proj, norm, its MLP)."""
    w, m = 1152, 4304
    block = 2 * 2 * w + (3 * w * w + 3 * w) + (w * w + w) + (m * w + m) + (w * m + w)
    pool = w + (w * w + w) + (2 * w * w + 2 * w) + (w * w + w) + 2 * w + (m * w + m) + (w * m + w)
    return (w * 3 * 14 * 14 + w) + 729 * w + 27 * block + 2 * w + pool


def _dsvl2_projector(n: int) -> int:
    """vLLM MlpProjector (downsample_mlp_gelu, depth 2): Linear(1152 x 2 x 2 -> n), Linear(n -> n), biased; plus
    image_newline and view_seperator (n each)."""
    return (4 * 1152 * n + n) + (n * n + n) + 2 * n


def _mla(h: int, heads: int) -> int:
    """DeepSeek-V2 MLA without a query LoRA: q_proj (heads x 192), kv_a_proj_with_mqa (512 + 64), kv_a_layernorm,
    kv_b_proj (heads x (128 + 128)), o_proj (heads x 128)."""
    return h * heads * 192 + h * 576 + 512 + 512 * heads * 256 + heads * 128 * h


def test_kimi_vl_a3b_by_hand_and_published():
    """MoonViT (vLLM moonvit.py): Conv2d patch embed, a 64 x 64 x 1152 learned position grid, 27 blocks of norm0 /
    norm1, fused wqkv and wo, fc0 / fc1 (all biased), final_layernorm; KimiVLMultiModalProjector: pre_norm (1152),
    linear_1 (4608 square), linear_2 (4608 -> 2048). The language model (DeepseekV2ForCausalLM, noaux_tc): MLA,
    layer 0 a SwiGLU of 11264, layers 1..26 a 64 x h gate (its correction bias a buffer), 64 experts of 1408 (top 6) and
    a shared SwiGLU of 2 x 1408; untied head. Published: 16.4B total (2.8B activated in the language model)."""
    w, m = 1152, 4304
    tower = (w * 3 * 14 * 14 + w) + 64 * 64 * w + 27 * (4 * w + 3 * w * w + 3 * w + w * w + w + m * w + m + w * m + w) \
        + 2 * w
    projector = 2 * w + (4608 * 4608 + 4608) + (2048 * 4608 + 2048)
    h, v = 2048, 163840
    expert = 3 * h * 1408
    # the router's e_score_correction_bias (64) is not counted: a buffer in transformers' DeepSeek-V3, as
    # planner counts every DeepSeek-V3 (vLLM holds it as a Parameter; 1,664 in all here)
    moe = 64 * h + 64 * expert + 3 * h * 2816
    lm = 2 * v * h + h + 27 * (_mla(h, 16) + 2 * h) + 3 * h * 11264 + 26 * moe
    spec = parse_config(KIMI_VL_A3B)
    p = count_params(spec)
    assert p.vision == tower + projector == 447_545_840
    assert p.total == lm + tower + projector == 16_407_654_384
    assert round(p.total / 1e9, 1) == 16.4
    assert p.active == p.total - 26 * 58 * expert
    # the language model's activated parameters without its input embedding: 2.58B (published "2.8B" counts
    # otherwise; vLLM's shapes are the oracle here)
    assert p.active - p.vision - v * h == 2_579_230_208
    # MLA: one 512 + 64 latent per layer and token (bf16), 27 layers
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 27 * 576 * 2
    assert spec.numerics.score_correction_bias is True and spec.mtp_layers == ()


@pytest.mark.parametrize("cfg,lm,published,active,kv", [
    # tiny: DeepSeek-MoE v1 layout (use_mla false: MHA of 10 heads x 128), 12 layers, 64 experts of 896
    (DSVL2_TINY, lambda: 2 * 129280 * 1280 + 1280 + 12 * (4 * 1280 * 1280 + 2 * 1280) + 3 * 1280 * 6848
     + 11 * (64 * 1280 + 64 * 3 * 1280 * 896 + 3 * 1280 * 1792), 3.37, 1.0, 12 * 2 * 10 * 128 * 2),
    # small: DeepSeek-V2-Lite's layout (MLA, greedy softmax routing: no correction bias), 27 layers
    (DSVL2_SMALL, lambda: 2 * 102400 * 2048 + 2048 + 27 * (_mla(2048, 16) + 2 * 2048) + 3 * 2048 * 10944
     + 26 * (64 * 2048 + 64 * 3 * 2048 * 1408 + 3 * 2048 * 2816), 16.1, 2.8, 27 * 576 * 2),
    # full: noaux_tc (its correction bias a buffer, uncounted, as for DeepSeek-V3); 30 layers and 32 heads from
    # DeepSeek-VL2's DeepseekV2Config defaults
    (DSVL2, lambda: 2 * 129280 * 2560 + 2560 + 30 * (_mla(2560, 32) + 2 * 2560) + 3 * 2560 * 12288
     + 29 * (72 * 2560 + 72 * 3 * 2560 * 1536 + 3 * 2560 * 3072), 27.5, 4.5, 30 * 576 * 2),
], ids=["tiny", "small", "full"])
def test_deepseek_vl2_by_hand_and_published(cfg, lm, published, active, kv):
    """Whole checkpoint = SigLIP-so400m tower + projector + the language model, by hand from vLLM's shapes; the
    published totals (3.37B / 16.1B / 27.5B) and activated counts (1.0B / 2.8B / 4.5B: without the input
    embedding, cut, not rounded, to one decimal)."""
    spec = parse_config(cfg)
    p = count_params(spec)
    n = spec.hidden_size
    assert p.vision == _siglip_so400m() + _dsvl2_projector(n)
    assert p.total == lm() + p.vision
    assert round(p.total / 1e9, 2 if published < 10 else 1) == published
    embed = spec.vocab_size * n
    assert active <= (p.active - embed) / 1e9 < active + 0.1
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == kv


def test_bad_configs_raise_clear_errors():
    # DeepSeek-OCR (architectures DeepseekOCR*) is counted now: tests/test_remote_deepseek_ocr.py
    with pytest.raises(UnsupportedModelError, match="projector_type"):
        parse_config(dict(DSVL2_TINY, projector_config={"projector_type": "linear", "n_embed": 1280}))
    with pytest.raises(ConfigError, match="n_embed"):
        parse_config(dict(DSVL2_TINY, projector_config={"n_embed": 2048}))
    with pytest.raises(ConfigError, match="n_routed_experts"):
        parse_config(dict(DSVL2_TINY, language_config={k: x for k, x in DSVL2_TINY["language_config"].items()
                                                       if k != "n_routed_experts"}))
    with pytest.raises(ConfigError, match="use_mla"):
        parse_config(dict(DSVL2_TINY, language_config=dict(DSVL2_TINY["language_config"], use_mla="no")))
    with pytest.raises(ConfigError, match="language_config"):
        parse_config(dict(DSVL2_TINY, language_config=[1]))
    with pytest.raises(UnsupportedModelError, match="tile_tag"):
        parse_config(dict(DSVL2_TINY, tile_tag="1D"))
    with pytest.raises(ConfigError, match="width"):
        parse_config(dict(DSVL2_TINY, vision_config=dict(_SIGLIP_SO400M, width="big")))
    with pytest.raises(UnsupportedModelError, match="vision tower"):
        parse_config(dict(KIMI_VL_A3B, vision_config=dict(KIMI_VL_A3B["vision_config"], model_type="siglip")))
    with pytest.raises(ConfigError, match="merge_kernel_size"):
        parse_config(dict(KIMI_VL_A3B, vision_config=dict(KIMI_VL_A3B["vision_config"], merge_kernel_size=[2])))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(KIMI_VL_A3B, vision_config=dict(KIMI_VL_A3B["vision_config"], num_attention_heads=7)))
    with pytest.raises(UnsupportedModelError, match="text_config.model_type"):
        parse_config(dict(KIMI_VL_A3B, text_config=dict(KIMI_VL_A3B["text_config"], model_type="llama")))


def test_kimi_vl_text_config_reads_deepseek_v2_defaults():
    """KimiVLConfig builds text_config as DeepseekV2Config, whatever its model_type: an absent first_k_dense_replace
    is V2's 0 (V3's would be 3) and an absent num_nextn_predict_layers builds no MTP layer."""
    text = {k: x for k, x in KIMI_VL_A3B["text_config"].items()
            if k not in ("first_k_dense_replace", "num_nextn_predict_layers")}
    spec = parse_config(dict(KIMI_VL_A3B, text_config=text))
    assert spec.mtp_layers == ()
    assert count_params(spec).total - count_params(parse_config(KIMI_VL_A3B)).total == \
        64 * 2048 + 64 * 3 * 2048 * 1408 + 3 * 2048 * 2816 - 3 * 2048 * 11264


# ---- the language model's logits: transformers' DeepSeek V3 / V2 with the same weights ----------------------

_TINY_TEXT = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32,
              "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4, "n_shared_experts": 1,
              "n_routed_experts": 4, "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 8,
              "v_head_dim": 16, "qk_nope_head_dim": 16, "n_group": 1, "topk_group": 1, "num_experts_per_tok": 2,
              "first_k_dense_replace": 1, "max_position_embeddings": 256, "rope_theta": 10000.0,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "torch_dtype": "float32"}
_V3 = dict(_TINY_TEXT, topk_method="noaux_tc", scoring_func="sigmoid", norm_topk_prob=True, routed_scaling_factor=2.446)
_TINY_TOWER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
               "init_pos_emb_height": 4, "init_pos_emb_width": 4}
_DSVL2_TOWER = {"vision_config": {"width": 32, "layers": 1, "heads": 2, "mlp_ratio": 2, "patch_size": 14,
                                  "image_size": 28}, "projector_config": {"n_embed": 64, "input_dim": 32}}

TEXT_PARITY = {
    "kimi_vl": ({"model_type": "kimi_vl", "text_config": dict(_V3, model_type="deepseek_v3"),
                 "vision_config": _TINY_TOWER}, dict(_V3, model_type="deepseek_v3")),
    "deepseek_vl_v2-mla": (dict(_DSVL2_TOWER, model_type="deepseek_vl_v2",
                                language_config=dict(_TINY_TEXT, model_type="deepseek_v2", topk_method="greedy")),
                           dict(_TINY_TEXT, model_type="deepseek_v2", topk_method="greedy")),
    "deepseek_vl_v2-noaux_tc": (dict(_DSVL2_TOWER, model_type="deepseek_vl_v2",
                                     language_config=dict(_V3, model_type="deepseek_v2")),
                                dict(_V3, model_type="deepseek_v3")),
}


@pytest.mark.parametrize("name", sorted(TEXT_PARITY))
def test_text_logits_equal_transformers_deepseek(name):
    """Our decoder built from the wrapper's config, loaded with the weights of transformers' DeepSeek language model
    of the same text fields, gives its logits (and cached decode equals recompute): the language model is read as
    that layout, the tower counted apart (params.vision)."""
    pytest.importorskip("torch")
    from tests.test_runtime import assert_logits_and_cached_decode, hf_model, ours_from_hf

    wrapper, text = TEXT_PARITY[name]
    hf = hf_model(text)
    spec, ours = ours_from_hf(wrapper, hf)
    assert count_params(spec).total - count_params(spec).vision == sum(p.numel() for p in hf.parameters())
    assert_logits_and_cached_decode(spec, ours, hf)


def test_deepseek_vl2_tiny_layout_verifies():
    """The MHA (use_mla false) layout has no transformers class: planner verify's exact self-checks (parameters,
    FLOPs, KV bytes of the built decoder) pass on a tiny config."""
    pytest.importorskip("torch")
    from planner.runtime.model import build_decoder, parameter_count

    cfg = dict(_DSVL2_TOWER, model_type="deepseek_vl_v2",
               language_config=dict(_TINY_TEXT, model_type="deepseek_v2", use_mla=False, kv_lora_rank=None,
                                    qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0))
    spec = parse_config(cfg)
    model = build_decoder(spec, seed=0)
    p = count_params(spec)
    assert parameter_count(model) == p.total - p.vision
    assert kv_cache(spec, get_dtype("fp32"), get_dtype("fp32")).bytes_per_token == 3 * 2 * 4 * 16 * 4
