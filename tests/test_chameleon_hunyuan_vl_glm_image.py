"""Chameleon (``chameleon``), HunYuan-VL / HunyuanOCR (``hunyuan_vl``) and GLM-Image (``glm_image``): whole checkpoints
(towers, projectors, VQ models) checked against hand counts written from transformers' module shapes
(modeling_chameleon.py, modeling_hunyuan_vl.py, modeling_glm_image.py) and against transformers' models built on the
meta device; Granite 4 Vision's language model alone refused by name (the wrapper: tests/test_granite4_vision.py). Before: all four were read by the generic Llama-style fallback
("not a known family"), towers and VQ models missed."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run

# ChameleonConfig's class defaults (facebook/chameleon-7b's shape, as its docstring says), the core fields spelled
# out as a saved top-level config carries them
CHAMELEON_7B = {"model_type": "chameleon", "architectures": ["ChameleonForConditionalGeneration"],
                "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 32, "vocab_size": 65536, "max_position_embeddings": 4096,
                "rms_norm_eps": 1e-05, "swin_norm": False, "torch_dtype": "bfloat16",
                "vq_config": {"embed_dim": 256, "num_embeddings": 8192, "double_latent": False,
                              "latent_channels": 256, "resolution": 512, "in_channels": 3, "base_channels": 128,
                              "channel_multiplier": [1, 1, 2, 2, 4], "num_res_blocks": 2, "attn_resolutions": [],
                              "attn_type": "vanilla"}}
# a post-norm (swin_norm) GQA variant with biases, a tied head and attention in the VQ encoder's levels
CHAMELEON_SWIN = dict(CHAMELEON_7B, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2, swin_norm=True, attention_bias=True,
                      tie_word_embeddings=True,
                      vq_config={"attn_resolutions": [512, 32], "double_latent": True, "channel_multiplier": [1, 2, 4]})


def _vq_hand(base=128, mult=(1, 1, 2, 2, 4), blocks=2, in_ch=3, latent=256, embed=256, codes=8192, double=False,
             attn_res=(), res=512, vanilla=True) -> int:
    """ChameleonVQVAE: its encoder, codebook, quant_conv and post_quant_conv (no decoder)."""
    conv = lambda o, i, k: o * i * k * k + o  # noqa: E731
    gn = lambda c: 2 * c  # noqa: E731
    resnet = lambda i, o: gn(i) + conv(o, i, 3) + gn(o) + conv(o, o, 3) + (conv(o, i, 1) if i != o else 0)  # noqa: E731
    attn = lambda c: gn(c) + 4 * conv(c, c, 1)  # noqa: E731
    n = conv(base, in_ch, 3)
    ins = (1,) + tuple(mult)
    for lvl, m in enumerate(mult):
        c = base * ins[lvl]
        for _ in range(blocks):
            n += resnet(c, base * m)
            c = base * m
            if res in attn_res and vanilla:
                n += attn(c)
        if lvl != len(mult) - 1:
            n += conv(c, c, 3)
            res //= 2
    c = base * mult[-1]
    n += 2 * resnet(c, c) + (attn(c) if vanilla else 0) + gn(c) + conv(2 * latent if double else latent, c, 3)
    return n + codes * embed + conv(embed, latent, 1) + conv(latent, embed, 1)


def _chameleon_text_hand(h, inter, layers, heads, kv, vocab, bias=False, tied=False) -> int:
    hd = h // heads
    per = (h * heads * hd + 2 * h * kv * hd + heads * hd * h + (2 * kv * hd + 2 * h if bias else 0)
           + 2 * heads * hd + 2 * kv * hd  # the per-head q/k LayerNorms: a weight and a bias per head and feature
           + 3 * h * inter + 2 * h)
    return vocab * h * (1 if tied else 2) + layers * per + h


def test_chameleon_7b_hand_count_and_kv():
    spec = parse_config(CHAMELEON_7B)
    p = count_params(spec)
    vq = _vq_hand()
    assert vq == 29_423_616
    assert p.vision == vq
    assert p.total == _chameleon_text_hand(4096, 11008, 32, 32, 32, 65536) + vq == 7_043_090_432
    assert p.active == p.total
    # 32 layers x K and V of 32 heads x 128 in bf16: 512 KiB a token
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 32 * 128 * 2


def test_chameleon_swin_hand_count():
    p = count_params(parse_config(CHAMELEON_SWIN))
    vq = _vq_hand(mult=(1, 2, 4), attn_res=(512, 32), double=True)
    assert p.vision == vq
    assert p.total == _chameleon_text_hand(1024, 2816, 4, 8, 2, 65536, bias=True, tied=True) + vq


def test_chameleon_swin_norms_are_post_norms():
    spec = parse_config(CHAMELEON_SWIN)
    roles = [(n.name, n.role) for n in spec.layers[0].norms]
    assert roles == [("input_layernorm", "post_mixer"), ("post_attention_layernorm", "post_ffn")]
    pre = [(n.name, n.role) for n in parse_config(CHAMELEON_7B).layers[0].norms]
    assert pre == [("input_layernorm", "pre_mixer"), ("post_attention_layernorm", "pre_ffn")]


def _hf_chameleon(cfg: dict) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers import ChameleonConfig, ChameleonForConditionalGeneration

    from tests.oracle import unique_param_count

    transformers.logging.set_verbosity_error()
    d = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures", "torch_dtype")}
    # ChameleonModel reads vocabulary_map["<image>"] (None fails); the real config carries the tokenizer's map
    config = ChameleonConfig(vocabulary_map={"<image>": 8711}, **d)
    with torch.device("meta"):
        return unique_param_count(ChameleonForConditionalGeneration(config))


@pytest.mark.parametrize("cfg", [CHAMELEON_7B, CHAMELEON_SWIN], ids=["7b-defaults", "swin-gqa"])
def test_chameleon_matches_transformers(cfg):
    assert count_params(parse_config(cfg)).total == _hf_chameleon(cfg)


def test_chameleon_errors():
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(CHAMELEON_7B, num_attention_heads=24))
    with pytest.raises(ConfigError, match="head_dim"):
        parse_config(dict(CHAMELEON_7B, head_dim=64))
    with pytest.raises(ConfigError, match="GroupNorm"):
        parse_config(dict(CHAMELEON_7B, vq_config={"base_channels": 100}))


# ---- HunYuan-VL / HunyuanOCR ---------------------------------------------------------------------------------------

# HunYuanVLConfig's class defaults with the head_dim a real config sets (the class default None builds no model)
HUNYUAN_VL = {"model_type": "hunyuan_vl", "text_config": {"head_dim": 128}}
# a flat config (HunYuanVLConfig pops the text fields into its text_config), GQA, the legacy attention_head_dim alias;
# tie_word_embeddings false is the wrapper's own field, the text_config keeps its default (true), so lm_head is tied
HUNYUAN_VL_FLAT = {"model_type": "hunyuan_vl", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
                   "num_key_value_heads": 4, "attention_head_dim": 64, "intermediate_size": 3072, "vocab_size": 120818,
                   "attention_bias": True, "tie_word_embeddings": False,
                   "vision_config": {"num_hidden_layers": 3, "hidden_size": 256, "num_attention_heads": 4,
                                     "intermediate_size": 512, "max_image_size": 512, "spatial_merge_size": 2}}


def _hunyuan_text_hand(h, inter, layers, heads, kv, hd, vocab, bias=False, tied=True) -> int:
    per = (2 * h * heads * hd + 2 * h * kv * hd + (heads * hd + 2 * kv * hd + h if bias else 0)
           + 2 * hd + 3 * h * inter + 2 * h)
    return vocab * h * (1 if tied else 2) + layers * per + h


def _hunyuan_vision_hand(h, inter, layers, text_h, patch=16, size=2048, merge=2, ch=3) -> int:
    n = h * ch * patch * patch + h + ((size // patch) ** 2 + 1) * h
    n += layers * (4 * h + 4 * (h * h + h) + inter * h + inter + h * inter + h)
    n += 2 * h * h * merge * merge + 2 * h + 4 * h * 2 * h + 4 * h  # proj_conv, proj_out
    n += text_h * 4 * h + text_h + 4 * h + 3 * text_h + h + text_h  # mlp, newline, begin/end/sep, the two RMSNorms
    return n


def test_hunyuan_vl_hand_count_and_kv():
    spec = parse_config(HUNYUAN_VL)
    p = count_params(spec)
    vision = _hunyuan_vision_hand(1152, 4304, 27, 4096)
    assert p.vision == vision == 471_369_200
    assert p.total == _hunyuan_text_hand(4096, 11008, 32, 32, 32, 128, 290943) + vision == 8_139_351_536
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 32 * 128 * 2
    flat = count_params(parse_config(HUNYUAN_VL_FLAT))
    vision = _hunyuan_vision_hand(256, 512, 3, 1024, size=512)
    assert flat.vision == vision
    assert flat.total == _hunyuan_text_hand(1024, 3072, 4, 16, 4, 64, 120818, bias=True, tied=True) + vision


@pytest.mark.parametrize("cfg", [HUNYUAN_VL, HUNYUAN_VL_FLAT], ids=["defaults", "flat-gqa"])
def test_hunyuan_vl_matches_transformers(cfg):
    from tests.oracle import hf_model, unique_param_count

    assert count_params(parse_config(cfg)).total == unique_param_count(hf_model(cfg, image_text=True))


def test_hunyuan_vl_needs_head_dim():
    with pytest.raises(ConfigError, match="head_dim"):
        parse_config({"model_type": "hunyuan_vl", "text_config": {}})


# ---- GLM-Image -----------------------------------------------------------------------------------------------------

GLM_IMAGE = {"model_type": "glm_image", "text_config": {}}  # GlmImageConfig's class defaults
GLM_IMAGE_SMALL = {"model_type": "glm_image", "tie_word_embeddings": True,
                   "text_config": {"num_hidden_layers": 3, "attention_bias": False, "hidden_size": 512,
                                   "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 1024,
                                   "vocab_size": 5000, "vision_vocab_size": 700, "pad_token_id": 0},
                   "vision_config": {"depth": 2, "hidden_size": 128, "num_heads": 4, "intermediate_size": 256,
                                     "image_size": 256, "attention_bias": False},
                   "vq_config": {"embed_dim": 64, "num_embeddings": 100, "latent_channels": 32}}


def _glm_image_hand(h, inter, layers, heads, kv, vocab, head_rows, bias, vh, vinter, depth, image, vbias, embed,
                    codes, latent, patch=16) -> tuple[int, int]:
    hd = h // heads
    per = (h * heads * hd + 2 * h * kv * hd + heads * hd * h + ((heads + 2 * kv) * hd if bias else 0)
           + 3 * h * inter + 4 * h)
    text = vocab * h + layers * per + h + head_rows * h  # lm_head: vision_vocab_size rows, never tied
    vision = (image // patch) ** 2 * vh + vh * 3 * patch * patch + vh
    vision += depth * (4 * vh + 3 * vh * vh + vh * vh + (4 * vh if vbias else 0) + 2 * vh * vinter + vinter + vh)
    vision += codes * embed + (embed * latent + embed) + (latent * embed + latent)
    return text + vision, vision


def test_glm_image_hand_count_and_kv():
    spec = parse_config(GLM_IMAGE)
    p = count_params(spec)
    total, vision = _glm_image_hand(4096, 13696, 40, 32, 2, 168064, 16512, True, 1536, 6144, 40, 2048, True,
                                    2048, 16384, 1536)
    assert (p.total, p.vision) == (total, vision) == (10_114_245_632, 1_199_457_280)
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 40 * 2 * 2 * 128 * 2
    small = count_params(parse_config(GLM_IMAGE_SMALL))
    assert (small.total, small.vision) == _glm_image_hand(512, 1024, 3, 8, 4, 5000, 700, False, 128, 256, 2, 256,
                                                          False, 64, 100, 32)


@pytest.mark.parametrize("cfg", [GLM_IMAGE, GLM_IMAGE_SMALL], ids=["defaults", "small"])
def test_glm_image_matches_transformers(cfg):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers import GlmImageConfig, GlmImageForConditionalGeneration

    from tests.oracle import unique_param_count

    transformers.logging.set_verbosity_error()
    config = GlmImageConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    with torch.device("meta"):
        hf = unique_param_count(GlmImageForConditionalGeneration(config))
    assert count_params(parse_config(cfg)).total == hf


# ---- Granite 4 Vision's language model alone: refused by name (the wrapper: tests/test_granite4_vision.py) ---------


def test_granite4_vision_text_refused():
    cfg = {"model_type": "granite4_vision_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 100, "intermediate_size": 128, "text_config": {}}
    with pytest.raises(UnsupportedModelError, match="granite4_vision wrapper"):
        parse_config(cfg)


# ---- CLI -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [CHAMELEON_7B, HUNYUAN_VL, GLM_IMAGE], ids=["chameleon", "hunyuan_vl", "glm_image"])
def test_cli_analyze(tmp_path, cfg):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.stderr
    assert r.json["params"]["total"] == count_params(parse_config(cfg)).total


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_type": "hunyuan_vl", "text_config": {}}))
    run("analyze", str(bad)).assert_error("head_dim")
    g4 = tmp_path / "g4.json"
    g4.write_text(json.dumps({"model_type": "granite4_vision", "text_config": {}}))
    run("analyze", str(g4)).assert_error("downsample_rate' is required")


def test_cli_verify_refuses_chameleon_qk_norms(tmp_path):
    tiny = dict(CHAMELEON_7B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=4, vocab_size=256, vq_config={"base_channels": 32, "channel_multiplier": [1, 2],
                                                                  "num_embeddings": 16, "embed_dim": 8,
                                                                  "latent_channels": 8, "num_res_blocks": 1})
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny))
    run("verify", str(path)).assert_error("LayerNorms with bias")
