"""Kosmos-2 (``kosmos-2``) and Kosmos-2.5 (``kosmos-2.5``): the whole checkpoint against a hand count from
transformers' modeling_kosmos2.py / modeling_kosmos2_5.py module shapes, against transformers on the meta device,
and the published sizes; the text decode's KV and FLOPs by hand; the CLI end to end."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: microsoft/kosmos-2-patch14-224's config.json, its shape fields (Kosmos2Config's defaults are this checkpoint's)
KOSMOS2 = {
    "architectures": ["Kosmos2ForConditionalGeneration"], "model_type": "kosmos-2", "latent_query_num": 64,
    "text_config": {"model_type": "kosmos_2_text_model", "activation_function": "gelu", "attention_heads": 32,
                    "embed_dim": 2048, "ffn_dim": 8192, "layer_norm_eps": 1e-05, "layers": 24,
                    "max_position_embeddings": 2048, "scale_embedding": True, "vocab_size": 65037},
    "vision_config": {"model_type": "kosmos_2_vision_model", "hidden_act": "quick_gelu", "hidden_size": 1024,
                      "image_size": 224, "intermediate_size": 4096, "num_attention_heads": 16,
                      "num_hidden_layers": 24, "patch_size": 14, "num_channels": 3},
}
#: microsoft/kosmos-2.5's config.json, its shape fields (Kosmos2_5Config's defaults are this checkpoint's)
KOSMOS2_5 = {
    "architectures": ["Kosmos2_5ForConditionalGeneration"], "model_type": "kosmos-2.5", "latent_query_num": 2048,
    "text_config": {"model_type": "kosmos_2_5_text_model", "activation_function": "gelu", "attention_heads": 16,
                    "embed_dim": 1536, "ffn_dim": 6144, "layer_norm_eps": 1e-05, "layers": 24,
                    "max_position_embeddings": 4096, "scale_embedding": True, "vocab_size": 108481},
    "vision_config": {"model_type": "kosmos_2_5_vision_model", "hidden_size": 1536, "patch_embed_hidden_size": 768,
                      "intermediate_size": 3968, "head_dim": 64, "num_hidden_layers": 18, "num_attention_heads": 24,
                      "dense_act_fn": "gelu_new", "layer_norm_eps": 1e-06, "max_num_patches": 4096},
}


def _lin(n_out: int, n_in: int, bias: bool = True) -> int:
    return n_out * n_in + (n_out if bias else 0)


def text_count(d: int, layers: int, ffn: int, vocab: int, inner_attn_ln: bool, segment: bool) -> int:
    """Kosmos2(_5)TextForCausalLM, tied: embed_tokens, per layer biased q/k/v/out_proj (+ inner_attn_ln), two
    LayerNorms, fc1 / ffn_layernorm / fc2; the final layer_norm; Kosmos-2.5's segment_emb (2 rows)."""
    per_layer = 4 * _lin(d, d) + (2 * d if inner_attn_ln else 0) + 2 * 2 * d + _lin(ffn, d) + 2 * ffn + _lin(d, ffn)
    return vocab * d + layers * per_layer + 2 * d + (2 * d if segment else 0)


def projection_count(vision_hidden: int, d: int, latents: int) -> int:
    """image_to_text_projection: dense, latent_query, x_attn (biased q/k/v/out_proj)."""
    return _lin(d, vision_hidden) + latents * d + 4 * _lin(d, d)


def clip_count(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    """Kosmos2VisionModel: CLIP's embeddings (class, bias-free conv, positions), pre / post LayerNorms, blocks."""
    block = 2 * 2 * h + 4 * _lin(h, h) + _lin(inter, h) + _lin(h, inter)
    return h + h * 3 * patch * patch + ((image // patch) ** 2 + 1) * h + 2 * 2 * h + layers * block


def pix2struct_count(h: int, patch_in: int, inter: int, inner: int, layers: int, rows: int) -> int:
    """Kosmos2_5VisionModel: patch_projection, row / column embedders, bias-free attention and gated MLP, T5 norms."""
    block = 3 * inner * h + h * inner + 3 * inter * h + 2 * h
    return _lin(h, patch_in) + 2 * rows * h + layers * block + h


KOSMOS2_TEXT = text_count(2048, 24, 8192, 65037, inner_attn_ln=True, segment=False)
KOSMOS2_TOTAL = KOSMOS2_TEXT + clip_count(1024, 4096, 24, 224, 14) + projection_count(1024, 2048, 64)
KOSMOS2_5_TEXT = text_count(1536, 24, 6144, 108481, inner_attn_ln=False, segment=True)
KOSMOS2_5_TOTAL = (KOSMOS2_5_TEXT + pix2struct_count(1536, 768, 3968, 24 * 64, 18, 4096)
                   + projection_count(1536, 1536, 2048))


def test_hand_counts_and_published_sizes():
    assert KOSMOS2_TEXT == 1_342_289_920
    assert KOSMOS2_TOTAL == 1_664_485_376  # the hub's "1.66B params"
    assert round(KOSMOS2_TOTAL / 1e9, 2) == 1.66
    assert KOSMOS2_5_TEXT == 846_884_352
    assert KOSMOS2_5_TOTAL == 1_374_646_272  # the card's "1.37B params"
    assert round(KOSMOS2_5_TOTAL / 1e9, 2) == 1.37


@pytest.mark.parametrize("cfg, total", [(KOSMOS2, KOSMOS2_TOTAL), (KOSMOS2_5, KOSMOS2_5_TOTAL)])
def test_real_configs_total_and_active(cfg, total):
    p = count_params(parse_config(cfg))
    assert p.total == total
    assert p.active == total  # dense: every parameter runs for a token (the towers counted, as elsewhere)


@pytest.mark.parametrize("cfg", [KOSMOS2, KOSMOS2_5, {"model_type": "kosmos-2"}, {"model_type": "kosmos-2.5"}])
def test_total_equals_transformers(cfg):
    assert count_params(parse_config(cfg)).total == unique_param_count(hf_model(cfg, image_text=True))


_SMALL_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 2,
                 "image_size": 28, "patch_size": 14, "head_dim": 8, "patch_embed_hidden_size": 12,
                 "max_num_patches": 10}


@pytest.mark.parametrize("model_type", ["kosmos-2", "kosmos-2.5"])
@pytest.mark.parametrize("wrapper_tie", [True, False, None])
@pytest.mark.parametrize("text_tie", [True, False, None])
def test_tying_equals_transformers(model_type, wrapper_tie, text_tie):
    """Kosmos-2 ties when either flag is set; Kosmos-2.5 by its text model's flag alone."""
    text = {"embed_dim": 64, "layers": 2, "attention_heads": 4, "ffn_dim": 96, "vocab_size": 300}
    if text_tie is not None:
        text["tie_word_embeddings"] = text_tie
    cfg = {"model_type": model_type, "text_config": text, "vision_config": _SMALL_VISION, "latent_query_num": 8}
    if wrapper_tie is not None:
        cfg["tie_word_embeddings"] = wrapper_tie
    assert count_params(parse_config(cfg)).total == unique_param_count(hf_model(cfg, image_text=True))


@pytest.mark.parametrize("cfg, d, heads, ffn, vocab", [(KOSMOS2, 2048, 32, 8192, 65037),
                                                       (KOSMOS2_5, 1536, 16, 6144, 108481)])
def test_kv_and_decode_flops_by_hand(tmp_path, cfg, d, heads, ffn, vocab):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    out = r.json
    assert out["kv_cache"]["bytes_per_token"] == 24 * 2 * d * 2  # K and V of every layer, bf16
    keys = out["flops_per_token"]["context"] + 1
    matmuls = 24 * 2 * (4 * d * d + 2 * d * ffn) + 2 * vocab * d  # q/k/v/out, fc1/fc2, the tied head
    attention = 24 * 2 * heads * (2 * (d // heads)) * keys  # q·k and p·v over every cached key
    assert out["flops_per_token"]["decode"] == matmuls + attention
    assert out["params"]["total"] == count_params(parse_config(cfg)).total
    assert any("kosmos" in c and "vision" in c for c in out["caveats"])


def test_kosmos2_kv_equals_transformers_cache():
    torch = pytest.importorskip("torch")
    from transformers.models.kosmos2.configuration_kosmos2 import Kosmos2TextConfig
    from transformers.models.kosmos2.modeling_kosmos2 import Kosmos2TextForCausalLM

    text = {"embed_dim": 64, "layers": 2, "attention_heads": 4, "ffn_dim": 96, "vocab_size": 300}
    model = Kosmos2TextForCausalLM(Kosmos2TextConfig(**text)).eval()
    with torch.no_grad():
        cache = model(torch.tensor([[5, 6, 7]]), use_cache=True).past_key_values
    elements = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers) // 3
    spec = parse_config({"model_type": "kosmos-2", "text_config": text, "vision_config": _SMALL_VISION})
    assert sum(layer.mixer.kv_elements_per_token() for layer in spec.layers) == elements


def test_verify_refuses_with_one_error_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(KOSMOS2))
    run("verify", path).assert_error("Kosmos", "sub-LayerNorms")


def test_bad_configs(tmp_path):
    bad = dict(KOSMOS2, text_config=dict(KOSMOS2["text_config"], attention_heads=30))
    with pytest.raises(ConfigError, match="attention_heads"):
        parse_config(bad)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(bad))
    run("analyze", path).assert_error("attention_heads", "must divide embed_dim")
    cross = dict(KOSMOS2, text_config=dict(KOSMOS2["text_config"], add_cross_attention=True))
    with pytest.raises(UnsupportedModelError, match="add_cross_attention"):
        parse_config(cross)
    tiny = dict(KOSMOS2_5, vision_config=dict(KOSMOS2_5["vision_config"], num_hidden_layers=0))
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        parse_config(tiny)
