"""Mistral Small 4 (``mistral4``, shipped as a ``mistral3`` wrapper with a ``mistral4`` text_config and a Pixtral tower)
and Mistral Large 4 (``mistral_large4`` / ``mistral_large4_text``): totals against transformers 5.24 on the meta device
and against hand counts written from the module shapes of models/mistral4/modular_mistral4.py and
models/mistral_large4/modular_mistral_large4.py; active parameters, KV bytes per token (the MLA latent + rope key per
layer, the DSA indexer key, none for a layer reusing another's latent) and decode FLOPs by hand."""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from planner.analysis.spec import GroupScore, RopeStyle, RouterKind
from tests.clirun import run
from tests.oracle import hf_language_model_count, hf_model, hf_param_count, unique_param_count

#: Mistral4Config's class defaults, written out (transformers 5.24, configuration_mistral4.py; its docstring names
#: mistralai/Mistral-Small-4-119B-2603): the text model of Mistral Small 4
MISTRAL4_DEFAULT = {
    "model_type": "mistral4", "vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 12288,
    "moe_intermediate_size": 2048, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 32,
    "n_shared_experts": 1, "n_routed_experts": 128, "routed_scaling_factor": 1.0, "kv_lora_rank": 256,
    "q_lora_rank": 1024, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 64, "n_group": 1,
    "topk_group": 1, "num_experts_per_tok": 4, "first_k_dense_replace": 0, "norm_topk_prob": True, "hidden_act": "silu",
    "max_position_embeddings": 1048576, "rms_norm_eps": 1e-6, "pad_token_id": 11, "bos_token_id": 1,
    "eos_token_id": 2, "tie_word_embeddings": False, "rope_interleave": True, "attention_bias": False,
    "rope_parameters": {"type": "yarn", "rope_type": "yarn", "rope_theta": 10000.0, "factor": 128.0,
                        "original_max_position_embeddings": 8192, "max_position_embeddings": 1048576,
                        "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
                        "llama_4_scaling_beta": 0.1, "partial_rotary_factor": 0.5}}

#: mistralai/Mistral-Small-4-119B-2603 as it ships (transformers' docs and tests load it with
#: Mistral3ForConditionalGeneration): a mistral3 wrapper, the text_config above, Mistral Small 3.1's Pixtral tower
#: (vLLM's recipe: "Pixtral-style encoder, 1540x1540, patch size 14"; transformers' Mistral 3 conversion: hidden 1024,
#: 24 layers, 16 heads, SiLU MLP 4096), bias-free projector, untied head. Reconstructed from those sources: no verbatim
#: config.json was at hand (its FP8 weights make the safetensors size no parameter count).
MISTRAL_SMALL_4 = {
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "image_token_index": 10,
    "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
    "tie_word_embeddings": False, "vision_feature_layer": -1, "text_config": MISTRAL4_DEFAULT,
    "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096,
                      "num_hidden_layers": 24, "num_attention_heads": 16, "head_dim": 64, "patch_size": 14,
                      "image_size": 1540, "hidden_act": "silu", "num_channels": 3, "rope_theta": 10000.0}}

#: MistralLarge4TextConfig's core fields (its class defaults; its docstring names mistralai/Mistral-Large-4-1T-A52B,
#: published as Mistral-Large-4.0-1T05-A52B: 1.05T total, 52B active with the embedding and output layer)
LARGE4_TEXT = {"model_type": "mistral_large4_text", "hidden_size": 6144, "num_hidden_layers": 72,
               "num_attention_heads": 64, "vocab_size": 204800, "intermediate_size": 24576}
LARGE4 = {"model_type": "mistral_large4", "text_config": LARGE4_TEXT}

#: a small Mistral Large 4: NoPE on layer 3 (the default interval), layers 2 and 4 reusing layers 1 and 3's latent
#: cache, shared indexers on odd layers, layer 0 dense
LARGE4_TINY = {"model_type": "mistral_large4_text", "hidden_size": 64, "intermediate_size": 96,
               "moe_intermediate_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4,
               "n_routed_experts": 4, "num_experts_per_tok": 2, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
               "v_head_dim": 16, "qk_nope_head_dim": 8, "index_head_dim": 16, "index_n_heads": 2, "vocab_size": 128,
               "kv_source_layers": [0, 1, 1, 3, 3, 5], "indexer_types": ["full", "shared"] * 3}


# ---- hand counts (module shapes) ----------------------------------------------------------------


def _mistral4_layer(h, heads, q_lora, kv_lora, nope, rope, v, n_exp, moe, shared, dense=None, k=None):
    """(parameters, active) of one Mistral4DecoderLayer: DeepseekV3Attention + Mistral4MoE (or Qwen2MoeMLP)."""
    q = (q_lora * h + q_lora + heads * (nope + rope) * q_lora) if q_lora else heads * (nope + rope) * h
    attn = q + (kv_lora + rope) * h + kv_lora + heads * (nope + v) * kv_lora + h * heads * v
    norms = 2 * h
    if dense:
        mlp = 3 * h * dense
        return attn + mlp + norms, attn + mlp + norms
    expert = 3 * h * moe
    ffn = n_exp * expert + n_exp * h + shared * expert
    return attn + ffn + norms, attn + k * expert + n_exp * h + shared * expert + norms


def _pixtral(h, inter, layers, patch, text_h, merge=2):
    tower = h * 3 * patch * patch + h + layers * (4 * h * h + 3 * h * inter + 2 * h)
    projector = h + h * merge * merge * h + text_h * h + text_h * text_h
    return tower + projector


SMALL4_LAYER = _mistral4_layer(4096, 32, 1024, 256, 64, 64, 128, 128, 2048, 1, k=4)
SMALL4_TEXT = 36 * SMALL4_LAYER[0] + 2 * 131072 * 4096 + 4096
SMALL4_VISION = _pixtral(1024, 4096, 24, 14, 4096)
SMALL4_TOTAL = SMALL4_TEXT + SMALL4_VISION
SMALL4_ACTIVE = 36 * SMALL4_LAYER[1] + 2 * 131072 * 4096 + 4096 + SMALL4_VISION


def _large4_attention(h, heads, kv_lora, nope, rope, v, i_heads, i_dim, *, own_kv=True, indexer=True):
    """MistralLarge4TextAttention (rope 0 on a NoPE layer, its dims in nope) and its indexer."""
    n = heads * (nope + rope) * h + heads * (nope + v) * kv_lora + h * heads * v + 2 * heads
    if own_kv:
        n += (kv_lora + rope) * h + kv_lora
    if indexer:  # q_input_norm (LayerNorm), wq_b, wk, k_norm (LayerNorm), weights_proj, softmax_scaling
        n += 2 * h + i_heads * i_dim * h + i_dim * h + 2 * i_dim + i_heads * h + 2 * i_heads
    return n


def _large4_text(h, layers, heads, kv_lora, nope, rope, v, i_heads, i_dim, vocab, dense, n_exp, moe, k, *,
                 nope_layers, sources, full, dense_layers):
    """(total, active) of MistralLarge4TextModel plus lm_head (untied)."""
    total = active = 2 * vocab * h + h + rope // 2  # embed, lm_head, final norm, rotary_emb.alpha
    for i in range(layers):
        r = 0 if i in nope_layers else rope
        a = _large4_attention(h, heads, kv_lora, nope + rope - r, r, v, i_heads, i_dim, own_kv=sources[i] == i,
                              indexer=full[i]) + 2 * h
        if i in dense_layers:
            total, active = total + a + 3 * h * dense, active + a + 3 * h * dense
        else:
            expert = 3 * h * moe
            total += a + n_exp * expert + n_exp * h + expert
            active += a + k * expert + n_exp * h + expert
    return total, active


LARGE4_NOPE = {i for i in range(72) if (i + 1) % 4 == 0}
LARGE4_HAND = _large4_text(6144, 72, 64, 512, 64, 64, 128, 32, 128, 204800, 24576, 128, 6144, 4,
                           nope_layers=LARGE4_NOPE, sources=list(range(72)), full=[True] * 72, dense_layers={0})
LARGE4_VISION = _pixtral(2048, 6144, 30, 14, 6144)


# ---- Mistral Small 4 ----------------------------------------------------------------------------


def test_mistral4_default_text_equals_transformers():
    spec = parse_config(dict(MISTRAL4_DEFAULT))
    p = count_params(spec)
    assert p.total == SMALL4_TEXT == 118_972_826_624
    assert p.total == hf_param_count(MISTRAL4_DEFAULT)
    assert p.active == 36 * SMALL4_LAYER[1] + 2 * 131072 * 4096 + 4096 == 6_632_588_288


def test_mistral_small_4_whole_checkpoint():
    """119,401,298,944: the published 119.4B (Mistral Small 4 119B, "119.4-billion-parameter"), vision tower and
    projector included; 6.63B of the language model active per token (published: 6.5B activated)."""
    spec = parse_config(json.loads(json.dumps(MISTRAL_SMALL_4)))
    p = count_params(spec)
    assert spec.model_type == "mistral4" and not spec.tie_word_embeddings
    assert p.total == SMALL4_TOTAL == 119_401_298_944
    assert p.total == unique_param_count(hf_model(MISTRAL_SMALL_4))
    assert p.vision == SMALL4_VISION == 428_472_320
    assert p.active == SMALL4_ACTIVE == 7_061_060_608
    a = analyze(spec, Options(context=8192, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 36 * (256 + 64) * 2 == 23_040  # the latent and the rope key, as vLLM's MLA caches
    # decode at 8192 (8193 keys): absorbed MLA, 4 experts + shared, router, lm_head; 2 FLOPs per multiply-add
    h, nh, keys = 4096, 32, 8193
    attn = (2 * h * 1024 + 2 * 1024 * nh * 128 + 2 * h * 320 + 2 * nh * 64 * 256 + nh * (2 * 320 + 2 * 256) * keys
            + 2 * nh * 256 * 128 + 2 * nh * 128 * h)
    ffn = 2 * h * 128 + 4 * 2 * 3 * 2048 * h + 2 * 3 * 2048 * h
    assert a.decode_flops == 36 * (attn + ffn) + 2 * h * 131072 == 23_063_707_648


@pytest.mark.parametrize("extra", [
    {"q_lora_rank": None},
    {"first_k_dense_replace": 2, "n_shared_experts": 2},
    {"tie_word_embeddings": True, "n_group": 2, "topk_group": 1},
])
def test_mistral4_variants_equal_transformers(extra):
    cfg = {"model_type": "mistral4", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96,
           "moe_intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
           "n_routed_experts": 4, "num_experts_per_tok": 2, "kv_lora_rank": 16, "q_lora_rank": 24,
           "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16, **extra}
    p = count_params(parse_config(dict(cfg)))
    assert p.total == hf_param_count(cfg)  # q_lora_rank None: q_proj, as transformers builds it
    first = cfg.get("first_k_dense_replace", 0)
    hand = sum(_mistral4_layer(64, 4, cfg["q_lora_rank"], 16, 8, 8, 16, 4, 32, cfg.get("n_shared_experts", 1),
                               dense=96 if i < first else None, k=2)[0] for i in range(3))
    assert p.total == hand + 256 * 64 * (1 if cfg.get("tie_word_embeddings") else 2) + 64


def test_mistral4_numerics():
    num = parse_config(dict(MISTRAL4_DEFAULT)).numerics
    assert num.router == RouterKind.SOFTMAX and not num.score_correction_bias
    assert num.norm_topk_prob and num.routed_scaling_factor == 1.0
    assert num.query_position_scale == (0.1, 8192.0) and num.rope_style == RopeStyle.PAIRS
    grouped = parse_config(dict(MISTRAL4_DEFAULT, n_group=8, topk_group=2, rope_interleave=False)).numerics
    assert grouped.group_score == GroupScore.TOP2 and grouped.n_group == 8 and grouped.rope_style == RopeStyle.HALF
    with pytest.raises(ConfigError, match="llama_4_scaling_beta"):
        parse_config(dict(MISTRAL4_DEFAULT, rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                             "llama_4_scaling_beta": "x"}))


# ---- Mistral Large 4 ----------------------------------------------------------------------------


def test_mistral_large4_default_equals_transformers():
    """The class defaults (Mistral-Large-4.0-1T05-A52B): 1,050,118,202,912 for the language model (published
    1.05T), 1,704,218,624 for the Pixtral tower and projector (published: a 1.6B vision encoder)."""
    text = parse_config(dict(LARGE4_TEXT))
    p = count_params(text)
    assert p.total == LARGE4_HAND[0] == 1_050_118_202_912
    assert p.total == hf_language_model_count(LARGE4)
    assert p.active == LARGE4_HAND[1] == 53_098_587_680
    whole = parse_config(json.loads(json.dumps(LARGE4)))
    pw = count_params(whole)
    assert pw.total == LARGE4_HAND[0] + LARGE4_VISION == 1_051_822_421_536
    assert pw.total == unique_param_count(hf_model(LARGE4, image_text=True))
    assert whole.final_logit_softcapping == 30.0 and not whole.tie_word_embeddings
    a = analyze(text, Options(context=8192, dtype="bf16", kv_dtype="bf16"))
    # 54 RoPE layers cache latent 512 + rope 64, 18 NoPE layers the latent alone; every layer its indexer key (128)
    assert a.kv.bytes_per_token == (54 * 576 + 18 * 512 + 72 * 128) * 2 == 99_072
    h, nh, ih, idim, keys = 6144, 64, 32, 128, 8193
    flops = 2 * h * 204800
    for i in range(72):
        r = 0 if i in LARGE4_NOPE else 64
        nope = 128 - r
        flops += (2 * h * nh * 128 + 2 * h * (512 + r) + 2 * nh * nope * 512 + nh * (2 * (512 + r) + 2 * 512) * 2048
                  + 2 * nh * 512 * 128 + 2 * nh * 128 * h  # q_proj, kv_a, q_absorb, top-2048 attention, v_up, o_proj
                  + 2 * h * ih * idim + 2 * h * idim + 2 * h * ih + 2 * keys * ih * (idim + 1))  # the indexer
        flops += 2 * 3 * h * 24576 if i == 0 else 2 * h * 128 + 5 * 2 * 3 * h * 6144
    assert a.decode_flops == flops


def test_mistral_large4_shared_cache_nope_and_shared_indexers():
    spec = parse_config(dict(LARGE4_TINY))
    full = [True, False] * 3
    hand = _large4_text(64, 6, 4, 16, 8, 8, 16, 2, 16, 128, 96, 4, 32, 2, nope_layers={3},
                        sources=[0, 1, 1, 3, 3, 5], full=full, dense_layers={0})
    p = count_params(spec)
    assert p.total == hand[0] == hf_language_model_count({"model_type": "mistral_large4", "text_config": LARGE4_TINY})
    assert p.active == hand[1]
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    # own latents: layers 0, 1, 5 (latent + rope), 3 (NoPE: latent); indexer keys on layers 0, 2, 4
    assert a.kv.bytes_per_token == (3 * (16 + 8) + 16 + 3 * 16) * 2
    assert [m.kv_shared for m in (lay.mixer for lay in spec.layers)] == [False, False, True, False, True, False]


@pytest.mark.parametrize("extra, fragment", [
    ({"kv_source_layers": [0, 2, 2, 3, 4, 5]}, "kv_source_layers"),
    ({"kv_source_layers": [0, 1]}, "kv_source_layers"),
    ({"no_rope_layers": [1, 2, 1, 1, 1, 1]}, "no_rope_layers"),
    ({"q_lora_rank": 32}, "q_lora_rank"),
    ({"num_experts_per_tok": 8}, "num_experts_per_tok"),
])
def test_mistral_large4_bad_configs(extra, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_config(dict(LARGE4_TINY, **extra))


# ---- CLI ------------------------------------------------------------------------------------------


def test_cli_analyze_and_errors(tmp_path):
    small = tmp_path / "small4.json"
    small.write_text(json.dumps(MISTRAL_SMALL_4))
    r = run("analyze", small, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == SMALL4_TOTAL and r.json["kv_cache"]["bytes_per_token"] == 23_040
    large = tmp_path / "large4.json"
    large.write_text(json.dumps(LARGE4))
    r = run("analyze", large, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == LARGE4_HAND[0] + LARGE4_VISION
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MISTRAL_SMALL_4, text_config=dict(MISTRAL4_DEFAULT, num_experts_per_tok=200))))
    run("analyze", bad).assert_error("num_experts_per_tok")
    bad.write_text(json.dumps(dict(LARGE4_TINY, kv_source_layers=[0, 2, 2, 3, 4, 5])))
    run("analyze", bad).assert_error("kv_source_layers")


def test_cli_verify_refuses_mistral_large4(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(LARGE4_TINY))
    run("verify", path).assert_error("DeepSeek sparse attention")
