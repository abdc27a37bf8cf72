"""DeepSeek-OCR-2 in transformers 5.24's format (``deepseek_ocr2`` wrapper, ``deepseek_ocr2_text`` language model;
deepseek-community/DeepSeek-OCR-2): the whole checkpoint (SAM ViT-B + DeepEncoder V2's Qwen2 encoder, the queries, the
projector, the DeepSeek-MoE v1 language model) against a hand count written from the module shapes of
models/deepseek_ocr2/modeling_deepseek_ocr2.py and against ``AutoModelForImageTextToText`` on the meta device, active
parameters, KV bytes per token, decode FLOPs and cache against transformers' own, and the CLI.

The checkpoint's config is built the way transformers made it: convert_deepseek_ocr2_weights_to_hf.convert_config
applied to deepseek-ai/DeepSeek-OCR-2's hub config (``language_config`` at DeepSeek-OCR's DeepSeek-3B-MoE shapes,
``vision_config.width`` {sam_vit_b: 768 wide, 12 layers, 12 heads, global [2, 5, 8, 11]; qwen2-0-5b: dim 896}); the
converter fixes the Qwen2 encoder at 24 layers, 14 heads, 2 K/V heads, 4864 intermediate and SAM's downsample
channels at [512, 896], and turns first_k_dense_replace 1 into mlp_layer_types. No verbatim config.json of
deepseek-community/DeepSeek-OCR-2 was at hand. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.test_hy_v4_vl_unlimited_ocr import _sam as _uo_sam, _uo_text
from tests.test_hy_v4_vl_unlimited_ocr import (_hf_active, _hf_total,
                                               assert_text_cache_and_decode_flops_equal_transformers)
from tests.oracle import hf_model

BF16 = get_dtype("bf16")

#: convert_config(deepseek-ai/DeepSeek-OCR-2's config.json), the shape fields
DEEPSEEK_OCR2 = {
    "architectures": ["DeepseekOcr2ForConditionalGeneration"], "model_type": "deepseek_ocr2",
    "image_token_id": 128815, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "text_config": {"model_type": "deepseek_ocr2_text", "vocab_size": 129280, "hidden_size": 1280,
                    "intermediate_size": 6848, "moe_intermediate_size": 896, "num_hidden_layers": 12,
                    "num_attention_heads": 10, "num_key_value_heads": 10, "n_routed_experts": 64,
                    "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_layer_freq": 1, "topk_method": "greedy",
                    "n_group": 1, "topk_group": 1, "max_position_embeddings": 8192, "bos_token_id": 0,
                    "eos_token_id": 1, "mlp_layer_types": ["dense"] + ["sparse"] * 11},
    "vision_config": {"model_type": "deepseek_ocr2_vision",
                      "sam_config": {"model_type": "deepseek_ocr2_sam_vision_model", "hidden_size": 768,
                                     "num_hidden_layers": 12, "num_attention_heads": 12,
                                     "global_attn_indexes": [2, 5, 8, 11], "downsample_channels": [512, 896]},
                      "encoder_config": {"model_type": "deepseek_ocr2_encoder", "hidden_size": 896,
                                         "num_hidden_layers": 24, "num_attention_heads": 14,
                                         "num_key_value_heads": 2, "intermediate_size": 4864, "rms_norm_eps": 1e-6,
                                         "rope_theta": 1000000.0, "vocab_size": 1}}}

#: deepseek-ai/DeepSeek-OCR-2's hub (remote-code) format: model_type deepseek_vl_v2, architectures DeepseekOCR2*
HUB_FORMAT = {"architectures": ["DeepseekOCR2ForCausalLM"], "model_type": "deepseek_vl_v2", "tile_tag": "2D",
              "language_config": {k: v for k, v in DEEPSEEK_OCR2["text_config"].items()
                                  if k not in ("model_type", "mlp_layer_types")} | {"first_k_dense_replace": 1},
              "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deepencoderv2",
                                "model_type": "vision",
                                "width": {"qwen2-0-5b": {"dim": 896},
                                          "sam_vit_b": {"downsample_channels": [512, 1024],
                                                        "global_attn_indexes": [2, 5, 8, 11], "heads": 12,
                                                        "layers": 12, "width": 768}}},
              "projector_config": {"input_dim": 896, "model_type": "mlp_projector", "n_embed": 1280,
                                   "projector_type": "linear"}}


def _write(tmp_path, cfg: dict, name: str = "m"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def _sam(**kw) -> int:
    """DeepseekOcr2SamVisionEncoder: Unlimited-OCR's SAM hand count with proj's second conv 896 wide."""
    return _uo_sam(**{"down": (512, 896), **kw})


def _encoder(h=896, inter=4864, layers=24, heads=14, kv=2) -> int:
    """DeepseekOcr2VisionEncoder (Qwen2 layers: biased q / k / v, bias-free o and SwiGLU, two RMSNorms; a final
    RMSNorm; no token embedding) + query_768_resolution (144 x h) and query_1024_resolution (256 x h)."""
    hd = h // heads
    per = (h * h + h) + 2 * (h * kv * hd + kv * hd) + h * h + 3 * h * inter + 2 * h
    return layers * per + h + (144 + 256) * h


_text = _uo_text  # DeepseekOcr2TextModel has Unlimited-OCR's text model's modules (the two hand counts are one)


def test_deepseek_ocr2_checkpoint_by_hand_transformers_and_published():
    text, active = _text()
    vision = _sam() + _encoder() + (896 * 1280 + 1280) + 1280  # + multi_modal_projector, view_separator
    spec = parse_config(DEEPSEEK_OCR2)
    p = count_params(spec)
    assert p.vision == vision == 454_385_280
    assert p.total == text + vision == 3_389_119_360 == _hf_total(DEEPSEEK_OCR2)
    assert p.active == active + vision == 1_193_991_040
    # published: DeepSeek-OCR's bf16 safetensors (6,672,212,480 bytes = 3,336,106,240 parameters: the same language
    # model and SAM) with its CLIP-L tower (patch embedding included), 2048-wide projector, image_newline and
    # 1024-channel net_3 replaced by DeepEncoder V2, the 896-wide projector and an 896-channel conv
    clip_l = 1024 + 1024 * 3 * 14 * 14 + 257 * 1024 + 2 * 1024 + 24 * (
        4 * 1024 + 4 * (1024 * 1024 + 1024) + (1024 * 4096 + 4096) + (4096 * 1024 + 1024))
    v1_only = clip_l + (2048 * 1280 + 1280) + 1280 + 1024 * 512 * 9
    v2_only = _encoder() + (896 * 1280 + 1280) + 896 * 512 * 9
    assert p.total == 3_336_106_240 - v1_only + v2_only
    # MHA cache on every layer (the text config has no window): 12 layers x K and V of 10 heads x 128, bf16
    kv = kv_cache(spec, BF16, BF16)
    assert kv.bytes_per_token == 12 * 2 * 10 * 128 * 2 == 61_440
    assert kv.bytes_per_sequence(8192) == 8192 * 61_440
    assert spec.model_type == "deepseek_ocr2_text" and spec.max_position_embeddings == 8192
    assert [layer.kind for layer in spec.layers[:2]] == ["full", "full+moe"]
    assert spec.numerics.norm_topk_prob is False and spec.numerics.rope_style == "half"


#: a scaled variant: GQA and biased attention, group-limited routing, mixed MLP layers, tied at the wrapper, a GQA
#: encoder with a sliding-window setting (no parameters) and absent SAM fields (class defaults)
SMALL = {"model_type": "deepseek_ocr2", "tie_word_embeddings": True,
         "text_config": {"hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 4,
                         "num_hidden_layers": 4, "n_routed_experts": 8, "n_shared_experts": 1,
                         "num_experts_per_tok": 2, "moe_intermediate_size": 48, "intermediate_size": 320,
                         "vocab_size": 1000, "attention_bias": True, "topk_method": "group_limited_greedy",
                         "n_group": 4, "topk_group": 2, "mlp_layer_types": ["dense", "sparse", "dense", "sparse"]},
         "vision_config": {"sam_config": {"hidden_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
                                          "global_attn_indexes": [1], "mlp_dim": 200, "output_channels": 32,
                                          "downsample_channels": [64, 128], "image_size": 256, "window_size": 4},
                           "encoder_config": {"hidden_size": 128, "intermediate_size": 100, "num_hidden_layers": 2,
                                              "num_attention_heads": 8, "num_key_value_heads": 2,
                                              "use_sliding_window": True, "sliding_window": 64}}}


def test_deepseek_ocr2_scaled_variant_by_hand_and_transformers():
    text, active = _text(V=1000, h=256, L=4, kv=4 * 32, inter=320, E=8, k=2, moe=48, shared=1,
                         sparse=[False, True, False, True], bias=True, tied=True)
    vision = _sam(d=96, layers=3, heads=4, grid=16, window=4, glob=(1,), mlp=200, ch=32, down=(64, 128)) \
        + _encoder(h=128, inter=100, layers=2, heads=8, kv=2) + (128 * 256 + 256) + 256
    spec = parse_config(SMALL)
    p = count_params(spec)
    assert p.vision == vision
    assert (p.total, p.active) == (text + vision, active + vision)
    assert p.total == _hf_total(SMALL) and p.active == _hf_active(SMALL, 2)
    assert (spec.numerics.n_group, spec.numerics.topk_group, spec.numerics.group_score) == (4, 2, "max")
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 4 * 2 * 128 * 2


def test_deepseek_ocr2_cache_and_decode_flops_equal_transformers():
    cfg = json.loads(json.dumps(SMALL))
    cfg["text_config"].update(topk_method="greedy", num_key_value_heads=8)  # MHA: eager attention
    assert_text_cache_and_decode_flops_equal_transformers(cfg)


def test_transformers_default_config_does_not_build_and_is_refused():
    """DeepseekOcr2TextConfig leaves mlp_layer_types null and the decoder layer indexes it: transformers' default
    config cannot build the model, and planner names the field."""
    pytest.importorskip("torch")
    with pytest.raises(TypeError):
        hf_model({"model_type": "deepseek_ocr2"}, image_text=True)
    with pytest.raises(ConfigError, match="mlp_layer_types' is missing: DeepseekOcr2TextConfig has no default"):
        parse_config({"model_type": "deepseek_ocr2", "text_config": {}})


def test_deepseek_ocr2_bad_configs_are_refused():
    def edit(where: str, **kw):
        cfg = json.loads(json.dumps(SMALL))
        (cfg["text_config"] if where == "text" else cfg["vision_config"][where]).update(kw)
        return cfg
    with pytest.raises(ConfigError, match=r"hidden_size' \(96\) must equal sam_config.downsample_channels\[1\] "
                                          r"\(128\)"):
        parse_config(edit("encoder_config", hidden_size=96))
    with pytest.raises(ConfigError, match="mlp_bias' true"):
        parse_config(edit("text", mlp_bias=True))
    with pytest.raises(ConfigError, match="topk_method' must be greedy or group_limited_greedy"):
        parse_config(edit("text", topk_method="noaux_tc"))
    with pytest.raises(ConfigError, match="num_key_value_heads' \\(3\\) must divide"):
        parse_config(edit("encoder_config", num_key_value_heads=3))


def test_hub_format_is_refused_by_name():
    """Before: the hub format was read as DeepSeek-OCR (SAM + CLIP-L) and failed on projector_config.input_dim."""
    with pytest.raises(UnsupportedModelError, match="DeepSeek-OCR-2's remote-code format"):
        parse_config(HUB_FORMAT)


def test_cli_analyze(tmp_path):
    r = run("analyze", _write(tmp_path, DEEPSEEK_OCR2), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 3_389_119_360
    assert r.json["kv_cache"]["bytes_per_token"] == 61_440


def test_cli_bad_configs_give_one_error_line(tmp_path):
    bad = json.loads(json.dumps(SMALL))
    bad["vision_config"]["encoder_config"]["hidden_size"] = 96
    run("analyze", _write(tmp_path, bad, "enc")).assert_error("downsample_channels[1]")
    run("analyze", _write(tmp_path, {"model_type": "deepseek_ocr2", "text_config": {}}, "default")).assert_error(
        "mlp_layer_types")
    run("analyze", _write(tmp_path, HUB_FORMAT, "hub")).assert_error("DeepseekOCR2ForCausalLM", "deepseek_ocr2")


def test_cli_verify_runs_self_checks(tmp_path):
    """The torch runtime runs its language model: parameters, decode FLOPs and KV bytes predicted == measured."""
    from tests.clirun import verify_self_checks

    tiny = json.loads(json.dumps(SMALL))
    tiny["text_config"].update(num_key_value_heads=8, topk_method="greedy", hidden_size=128, intermediate_size=160,
                               vocab_size=512)
    out = verify_self_checks(tmp_path, tiny)
    p = count_params(parse_config(tiny))
    assert out["checks"]["params"]["measured"] == p.total - p.vision  # the decoder it builds: no towers
