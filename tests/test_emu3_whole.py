"""Emu3 (``emu3``) counted whole: the language model, lm_head and the VQ-VAE image tokenizer (``model.vqmodel``, kind
``vision``), checked against a hand count written from modeling_emu3.py's module shapes and against transformers'
Emu3ForConditionalGeneration on the meta device; the decode trace and K/V stay the language model's."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import emu3
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

# BAAI/Emu3-Chat-hf and BAAI/Emu3-Gen-hf: transformers' convert_emu3_weights_to_hf.py builds both as
# Emu3Config(max_position_embeddings=..., rope_scaling={"rope_type": "default"}, vocabulary_map=<the tokenizer's
# vocab>) around the default text_config and vq_config, and loads BAAI/Emu3-Chat (or -Gen) and
# BAAI/Emu3-VisionTokenizer into it with strict=True; the saved config.json holds those sub-configs whole. Their
# structural fields (the original BAAI/Emu3-Gen config.json, as mindone's Emu3 port quotes it: hidden 4096,
# intermediate 14336, 32 layers, 32 heads, 8 KV heads, vocab 184622, rope_theta 1e6, untied) are copied here; the
# vocabulary_map (the whole 184,622-entry tokenizer vocabulary) is cut to the two entries transformers reads at build.
EMU3_CHAT_HF = {
    "architectures": ["Emu3ForConditionalGeneration"], "model_type": "emu3", "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "vocabulary_map": {"<image>": 151851, "<|extra_200|>": 151846},
    "text_config": {"model_type": "emu3_text_model", "vocab_size": 184622, "hidden_size": 4096,
                    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 9216,
                    "rms_norm_eps": 1e-05, "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
                    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
                    "pad_token_id": 151643, "bos_token_id": 151849, "eos_token_id": 151850},
    "vq_config": {"model_type": "emu3_vqgan", "codebook_size": 32768, "embed_dim": 4, "latent_channels": 4,
                  "double_latent": False, "in_channels": 3, "out_channels": 3, "temporal_downsample_factor": 4,
                  "base_channels": 256, "channel_multiplier": [1, 2, 2, 4], "num_res_blocks": 2,
                  "attn_resolutions": [3], "hidden_size": 1024, "num_attention_heads": 1, "attention_dropout": 0.0},
}
EMU3_GEN_HF = copy.deepcopy(EMU3_CHAT_HF)  # the same conversion, the same shapes

TINY_TEXT = {"model_type": "emu3_text_model", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "pad_token_id": 0}
TINY_VQ = {"base_channels": 32, "channel_multiplier": [1, 2], "attn_resolutions": [1], "hidden_size": 64,
           "codebook_size": 64, "num_res_blocks": 1}


def _meta(cfg: dict) -> int:
    # Emu3ImageVocabularyMapping reads vocabulary_map (None fails in 5.24)
    cfg = {"vocabulary_map": {"<image>": 5}, **cfg}
    return unique_param_count(hf_class_model(cfg, "Emu3ForConditionalGeneration"))


def _same(cfg: dict) -> int:
    total = count_params(parse_config(copy.deepcopy(cfg))).total
    assert total == _meta(cfg)
    return total


def vq_hand(base=256, mult=(1, 2, 2, 4), blocks=2, attn=(3,), hidden=1024, latent=4, embed=4, tdown=4, in_ch=3,
            out_ch=3, codebook=32768, double=False):
    """Emu3VQVAE's parameters, written from modeling_emu3.py's module shapes."""
    def conv(o, i, *k):
        n = o * i
        for d in k:
            n *= d
        return n + o

    gn = lambda c: 2 * c  # noqa: E731  (GroupNorm / BatchNorm3d weight and bias)
    spatial = lambda c: 2 * c + 2 * conv(c, embed, 1, 1)  # noqa: E731  (Emu3VQVAESpatialNorm)
    att = 4 * (hidden * hidden + hidden)

    def res(ci, co, norm):
        return norm(ci) + conv(co, ci, 3, 3) + norm(co) + conv(co, co, 3, 3) + (conv(co, ci, 1, 1) if ci != co else 0)

    def tres(c):
        return 2 * (gn(c) + conv(c, c, 3, 3, 3))

    levels = len(mult)
    t = {1: 0, 2: 1, 4: 2, 8: 3}[tdown]
    top = base * mult[-1]
    eo = 2 * latent if double else latent
    enc = conv(base, in_ch, 3, 3)
    ci = base
    for lvl in range(levels):
        c = base * mult[lvl]
        for _ in range(blocks):
            enc += res(ci, c, gn) + (att + gn(c) if lvl in attn else 0)
            ci = c
        enc += conv(ci, ci, 3, 3) if lvl != levels - 1 else 0
    enc += 2 * res(top, top, gn) + att + gn(top) + gn(top) + conv(eo, top, 3, 3)
    enc += t * conv(eo, eo, 4, 3, 3) + blocks * tres(eo)
    dec = blocks * tres(latent) + t * conv(latent, latent, 3, 3, 3) + conv(top, latent, 3, 3)
    dec += 2 * res(top, top, spatial) + att + spatial(top)
    ci = top
    for lvl in reversed(range(levels)):
        c = base * mult[lvl]
        for _ in range(blocks + 1):
            dec += res(ci, c, spatial) + (att + spatial(c) if lvl in attn else 0)
            ci = c
        dec += conv(ci, ci, 3, 3) if lvl != 0 else 0
    dec += spatial(base * mult[0]) + conv(out_ch, base * mult[0], 3, 3)
    quant = codebook * embed + conv(embed, latent, 3, 1, 1) + conv(latent, embed, 3, 1, 1)
    return enc, dec, quant


def lm_hand(h=4096, inter=14336, layers=32, heads=32, kv=8, vocab=184622, tied=False):
    hd = h // heads
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h  # bias-free Llama block
    return vocab * h + layers * layer + h + (0 if tied else vocab * h)


def test_class_defaults_match_the_installed_transformers():
    pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.models.emu3.configuration_emu3 import Emu3VQVAEConfig

    c = Emu3VQVAEConfig()
    for key, value in emu3.VQ_DEFAULTS.items():
        got = getattr(c, key)
        assert (list(got) if isinstance(got, (list, tuple)) else got) == value, key


@pytest.mark.parametrize("cfg", [EMU3_CHAT_HF, EMU3_GEN_HF], ids=["Emu3-Chat-hf", "Emu3-Gen-hf"])
def test_emu3_hf_checkpoints(cfg):
    spec = parse_config(copy.deepcopy(cfg))
    p = count_params(spec)
    enc, dec, quant = vq_hand()
    assert (enc, dec, quant) == (109_488_252, 161_120_859, 131_176)
    assert p.vision == enc + dec + quant == 270_740_287
    assert lm_hand() == 8_492_011_520  # BAAI/Emu3-Chat's language model and untied lm_head
    assert p.total == enc + dec + quant + lm_hand() == 8_762_751_807 == _same(cfg)
    assert p.audio == 0 and p.lm_head == 184622 * 4096
    # the decode trace and K/V are the language model's: 32 layers x 8 KV heads x 128, K and V, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 8 * 128 * 2 * 2 == 131_072
    assert spec.model_type == "emu3_text_model" and len(spec.layers) == 32
    assert any("vision (and audio) encoders are counted" in c for c in spec.caveats)
    assert not any("encoder is not counted" in c for c in spec.caveats)


def test_variants_equal_transformers():
    """Tie flags (the wrapper's alone decides), double_latent, no attention levels, three temporal blocks, wider
    multipliers: each equal to transformers on the meta device and to the hand count."""
    for top in (None, True, False):
        for txt in (True, False):
            cfg = {"model_type": "emu3", "text_config": dict(TINY_TEXT, tie_word_embeddings=txt), "vq_config": TINY_VQ}
            if top is not None:
                cfg["tie_word_embeddings"] = top
            _same(cfg)
    for vq, hand in (
            (TINY_VQ, dict(base=32, mult=(1, 2), attn=(1,), hidden=64, codebook=64, blocks=1)),
            (dict(TINY_VQ, double_latent=True, attn_resolutions=[], temporal_downsample_factor=8, embed_dim=8,
                  latent_channels=6, in_channels=1, out_channels=2, num_res_blocks=2),
             dict(base=32, mult=(1, 2), attn=(), hidden=64, codebook=64, blocks=2, double=True, tdown=8, embed=8,
                  latent=6, in_ch=1, out_ch=2)),
            (dict(TINY_VQ, channel_multiplier=[2, 2, 2], attn_resolutions=[0, 1, 2], base_channels=64, hidden_size=128,
                  num_attention_heads=4, temporal_downsample_factor=1),
             dict(base=64, mult=(2, 2, 2), attn=(0, 1, 2), hidden=128, codebook=64, blocks=1, tdown=1)),
    ):
        cfg = {"model_type": "emu3", "text_config": TINY_TEXT, "vq_config": vq}
        p = count_params(parse_config(copy.deepcopy(cfg)))
        assert p.vision == sum(vq_hand(**hand))
        _same(cfg)


def test_text_config_absent_reads_the_class_defaults():
    cfg = {"model_type": "emu3"}
    p = count_params(parse_config(cfg))
    assert p.total == 8_762_751_807 == _same(cfg)


def test_bad_configs():
    base = {"model_type": "emu3", "text_config": TINY_TEXT}
    with pytest.raises(ConfigError, match="GroupNorm"):
        parse_config(dict(base, vq_config=dict(TINY_VQ, base_channels=48)))
    with pytest.raises(ConfigError, match="hidden_size"):
        parse_config(dict(base, vq_config=dict(TINY_VQ, hidden_size=32)))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(base, vq_config=dict(TINY_VQ, num_attention_heads=3)))
    with pytest.raises(ConfigError, match="attn_resolutions"):
        parse_config(dict(base, vq_config=dict(TINY_VQ, attn_resolutions=None)))
    with pytest.raises(ConfigError, match="channel_multiplier"):
        parse_config(dict(base, vq_config=dict(TINY_VQ, channel_multiplier=[])))
    with pytest.raises(ConfigError, match="vq_config"):
        parse_config(dict(base, vq_config=[1]))
    with pytest.raises(UnsupportedModelError, match="emu3_vqgan"):
        parse_config(dict(base, vq_config={"model_type": "chameleon_vqgan"}))
    with pytest.raises(UnsupportedModelError, match="emu3_text_model"):
        parse_config({"model_type": "emu3", "text_config": dict(TINY_TEXT, model_type="llama")})


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(EMU3_CHAT_HF))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_762_751_807 and r.json["params"]["vision"] == 270_740_287
    path.write_text(json.dumps(dict(EMU3_CHAT_HF, vq_config=dict(EMU3_CHAT_HF["vq_config"], hidden_size=512))))
    run("analyze", path).assert_error("vq_config", "hidden_size")


def test_verify_runs_the_language_model(tmp_path):
    """verify builds the language model (the VQ-VAE takes no part in a decode step): its exact self-checks pass."""
    pytest.importorskip("torch", reason="verify needs torch")
    out = verify_self_checks(tmp_path, {"model_type": "emu3", "text_config": TINY_TEXT, "vq_config": TINY_VQ})
    assert out["model"]["model_type"] == "emu3_text_model"
