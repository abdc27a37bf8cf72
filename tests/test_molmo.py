"""Ai2 Molmo v1 (model_type ``molmo``, hub remote code): the whole checkpoint, checked against hand counts written from
the module shapes of the hub's modeling_molmo.py / modeling_molmoe.py (and vLLM's molmo.py for the dense models) and
against Molmo-7B-D-0924's published safetensors total_size. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

_AUTO_MAP = {"AutoConfig": "config_molmo.MolmoConfig", "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM"}

# allenai/Molmo-7B-D-0924 config.json, verbatim (the hub folder as vendored in maifoundations/LayerCD,
# model_zoo/MolmoD/config.json; its model.safetensors.index.json: "total_size": 32084101120)
MOLMO_7B_D = {
    "architectures": ["MolmoForCausalLM"], "attention_layer_norm": False, "auto_map": _AUTO_MAP, "clip_qkv": None,
    "embedding_size": 152064, "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 37888,
    "layer_norm_eps": 1e-06, "layer_norm_type": "rms", "max_position_embeddings": 4096, "model_type": "molmo",
    "norm_after": False, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "qkv_bias": True, "rope_theta": 1000000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
    "transformers_version": "4.43.3", "use_cache": True, "use_position_ids": True, "vocab_size": 152064,
    "weight_tying": False}

# Molmo-7B-O-0924 and Molmo-72B-0924: no verbatim config.json was at hand; these are MolmoConfig's fields filled from
# the language models they were trained from, allenai/molmo launch_scripts/utils.py OLMO_1024_PREVIEW (d_model 4096,
# 32 heads, n_kv_heads None, mlp_hidden_size 22016, q/k norms, norm_after, rope_theta 5e5, vocab 100278 / embedding
# 100352) and QWEN2_72B (d_model 8192, 80 layers, 64 heads, 8 KV heads, mlp_hidden_size 29568 x 2, qkv_bias, eps 1e-5)
MOLMO_7B_O = dict(MOLMO_7B_D, attention_layer_norm=True, embedding_size=100352, hidden_size=4096,
                  intermediate_size=22016, norm_after=True, num_attention_heads=32, num_hidden_layers=32,
                  num_key_value_heads=None, qkv_bias=False, rope_theta=500000.0, vocab_size=100278)
MOLMO_72B = dict(MOLMO_7B_D, hidden_size=8192, intermediate_size=59136, layer_norm_eps=1e-05, num_attention_heads=64,
                 num_hidden_layers=80, num_key_value_heads=8)

# allenai/MolmoE-1B-0924 config.json: the whole FullMolmoConfig (ChulanZhang/molmo_hf configs/model/config.json, the
# checkpoint's config; run-time-only keys such as dropouts, crop and prompt settings left out: none is a shape)
MOLMOE_1B = {
    "auto_map": {"AutoConfig": "config_molmoe.MolmoConfig", "AutoModelForCausalLM": "modeling_molmoe.MolmoForCausalLM"},
    "activation_type": "swiglu", "additional_vocab_size": 128, "alibi": False, "architectures": ["OLMoForCausalLM"],
    "attention_layer_norm": True, "attention_layer_norm_with_affine": True, "attention_type": "sdpa",
    "attn_logit_softcapping": None, "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "moe",
    "clip_qkv": None, "d_model": 2048, "embedding_size": 50304, "final_logit_softcapping": None, "head_dim": None,
    "image_padding_embed": "pad_and_partial_pad", "image_pooling_2d": "attention-meanq", "image_pooling_h": 2,
    "image_pooling_w": 2, "image_projector": "mlp", "include_bias": False, "layer_norm_eps": 1e-05,
    "layer_norm_type": "rms", "layer_norm_with_affine": True, "max_position_embeddings": 32768,
    "max_sequence_length": 4096, "mlp_hidden_size": None, "mlp_ratio": 1, "model_type": "molmo",
    "moe_capacity_factor": 1.25, "moe_dropless": True, "moe_interleave": False, "moe_mlp_impl": "sparse",
    "moe_num_experts": 64, "moe_shared_expert": False, "moe_top_k": 8, "multi_query_attention": None, "n_heads": 16,
    "n_kv_heads": None, "n_layers": 16, "norm_after": False, "normalize_input_embeds": False, "pad_token_id": 1,
    "precision": "amp_bf16", "qkv_bias": False, "query_pre_attn_scalar": 224, "rope": True,
    "rope_full_precision": True, "rope_impl": "llama", "rope_theta": 10000.0, "scale_logits": False,
    "transformers_version": "4.45.0.dev0", "use_cache": True, "use_cls_feature": False, "use_position_ids": True,
    "vision_backbone": {
        "attention_dropout": 0.0, "fsdp_wrap": False, "image_default_input_size": [336, 336],
        "image_dropout_rate": 0.0, "image_emb_dim": 1024, "image_head_dim": 64, "image_mlp_activations": "quick_gelu",
        "image_mlp_dim": 4096, "image_model_type": "openai", "image_norm_eps": 1e-05, "image_num_heads": 16,
        "image_num_key_value_heads": 16, "image_num_layers": 23, "image_num_pos": 577, "image_patch_size": 14,
        "image_pos_patch_size": 14, "initializer_range": 0.02, "residual_dropout": 0.0, "resize_mode": "default"},
    "vit_layers": [-2, -9], "vocab_size": 50280, "weight_tying": False}


def _vision(lm_hidden: int, swiglu: int) -> int:
    """OLMoPretrainedVisionBackbone as MolmoForCausalLM builds it: the 23-layer CLIP ViT-L/14-336 (class embedding,
    577 positions, a bias-free 588 -> 1024 patch Linear, pre_ln; per layer biased wq/wk/wv/wo, w1/w2 of 4096, two
    LayerNorms), attention-meanq pooling over the 2 x 1024 vit_layers features, the bias-free w1/w3/w2 projector of
    ``swiglu`` (the LM's SwiGLU width) and pad_embed (2, 2048)."""
    v = 1024
    vit = v + 577 * v + 14 * 14 * 3 * v + 2 * v
    vit += 23 * (4 * (v * v + v) + (v * 4096 + 4096) + (4096 * v + v) + 2 * 2 * v)
    pooling = 3 * (2 * v * v + v) + (v * v + v)
    return vit + pooling + 2 * v * swiglu + swiglu * lm_hidden + 2 * 2 * v


def _dense(d, layers, heads, kv, fused, rows, qkv_bias, qk_norm) -> int:
    """Molmo's LM: wte.embedding (rows) + new_embedding (128), per block att_proj (d -> d + 2 kv hd, biased by
    qkv_bias), attn_out (d x d), ff_proj (d -> fused), ff_out (fused / 2 -> d), attn_norm / ff_norm, q_norm (d) / k_norm
    (kv hd) with attention_layer_norm; ln_f; the untied ff_out head (rows x d)."""
    hd = d // heads
    qkv = d + 2 * kv * hd
    block = d * qkv + (qkv if qkv_bias else 0) + d * d + d * fused + fused // 2 * d + 2 * d
    block += d + kv * hd if qk_norm else 0
    return (rows + 128) * d + layers * block + d + rows * d


def test_molmo_7b_d_matches_the_published_safetensors():
    p = count_params(parse_config(MOLMO_7B_D))
    vision = _vision(3584, 18944)
    assert p.vision == vision == 404_950_016
    assert p.total == _dense(3584, 28, 28, 4, 37888, 152064, True, False) + vision == 8_021_025_280
    assert p.total * 4 == 32_084_101_120  # model.safetensors.index.json total_size, fp32
    assert p.active == p.total


def test_molmo_7b_o_and_72b_by_hand():
    o = count_params(parse_config(MOLMO_7B_O))
    assert o.total == _dense(4096, 32, 32, 32, 22016, 100352, False, True) + _vision(4096, 11008) == 7_665_032_192
    big = count_params(parse_config(MOLMO_72B))
    assert big.total == _dense(8192, 80, 64, 8, 59136, 152064, True, False) + _vision(8192, 29568) == 73_308_285_952


def test_molmoe_1b_by_hand_and_card():
    spec = parse_config(MOLMOE_1B)
    p = count_params(spec)
    d, e, f = 2048, 64, 1024
    # OLMoEBlock: att_proj (no bias), attn_out, attn_norm / ff_norm, q_norm / k_norm (2048 each), the router
    # (64 x 2048, bias-free) and 64 SwiGLU experts (w1 / v1 / w2: 1024 x 2048 each)
    block = d * 3 * d + d * d + 2 * d + 2 * d + e * d + e * 3 * d * f
    lm = (50304 + 128) * d + 16 * block + d + 50304 * d
    vision = _vision(d, f)  # the projector's SwiGLU: (mlp_ratio 1 x d_model) / 2
    assert p.vision == vision == 302_451_712
    assert p.total == lm + vision == 7_221_875_712  # model card: 7.2B total
    assert p.active == p.total - 16 * (e - 8) * 3 * d * f == 1_584_731_136  # card: ~1.5B active (8 of 64 experts)


@pytest.mark.parametrize("cfg,layers,kv_width", [(MOLMO_7B_D, 28, 512), (MOLMO_7B_O, 32, 4096),
                                                  (MOLMO_72B, 80, 1024), (MOLMOE_1B, 16, 2048)])
def test_molmo_kv_bytes_per_token(cfg, layers, kv_width):
    spec = parse_config(cfg)
    bf16 = get_dtype("bf16")
    assert kv_cache(spec, bf16, bf16).bytes_per_token == layers * 2 * kv_width * 2  # K and V, every layer full


def test_molmo_layer_layout():
    o = parse_config(MOLMO_7B_O).layers[0]
    assert [p.role for p in o.norms] == ["post_mixer", "post_ffn"]  # norm_after: OLMo 2's post-norm
    assert (o.mixer.q_norm_dim, o.mixer.k_norm_dim) == (4096, 4096)
    d = parse_config(MOLMO_7B_D).layers[0]
    assert [p.role for p in d.norms] == ["pre_mixer", "pre_ffn"] and d.mixer.q_norm_dim == 0
    assert d.ffn.intermediate_size == 18944  # intermediate_size names the fused ff_proj: each half is 37888 / 2
    moe = parse_config(MOLMOE_1B)
    ffn = moe.layers[0].ffn
    assert (ffn.num_experts, ffn.num_experts_per_tok, ffn.moe_intermediate_size) == (64, 8, 1024)
    assert moe.numerics.norm_topk_prob is False
    assert moe.query_pre_attn_scalar is None  # saved in the config, never read by Molmo's attention


def test_molmo_vision_tensor_names_are_the_checkpoints():
    from planner.analysis.families.molmo import molmo_vision

    names = {t.name: t.shape for t in molmo_vision(MOLMO_7B_D, 3584, "x")}
    v = "model.vision_backbone"
    assert names[f"{v}.image_vit.patch_embedding.weight"] == (1024, 588)
    assert f"{v}.image_vit.patch_embedding.bias" not in names
    assert f"{v}.image_vit.transformer.resblocks.22.ffn_norm.bias" in names
    assert f"{v}.image_vit.transformer.resblocks.23.ffn_norm.bias" not in names  # 23 layers, as the checkpoint
    assert names[f"{v}.image_pooling_2d.wq.weight"] == (1024, 2048)
    assert names[f"{v}.image_projector.w2.weight"] == (3584, 18944)
    assert names[f"{v}.pad_embed"] == (2, 2048)


@pytest.mark.parametrize("change,error,match", [
    ({"layer_norm_type": "default"}, UnsupportedModelError, "layer_norm_type"),
    ({"weight_tying": True}, UnsupportedModelError, "weight_tying"),
    ({"intermediate_size": 37887}, ConfigError, "intermediate_size"),
    ({"num_key_value_heads": 5}, ConfigError, "num_key_value_heads"),
    ({"embedding_size": 1000}, ConfigError, "embedding_size"),
])
def test_molmo_bad_flat_configs(change, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(MOLMO_7B_D, **change))


@pytest.mark.parametrize("change,error,match", [
    ({"block_type": "llama"}, UnsupportedModelError, "block_type"),
    ({"moe_shared_expert": True}, UnsupportedModelError, "moe_shared_expert"),
    ({"include_bias": True}, UnsupportedModelError, "include_bias"),
    ({"image_pooling_2d": "attention_2wide"}, UnsupportedModelError, "image_pooling_2d"),
    ({"image_projector": "linear"}, UnsupportedModelError, "image_projector"),
    ({"vit_layers": [-2, -30]}, ConfigError, "vit_layers"),
    ({"vision_backbone": None}, ConfigError, "vision_backbone"),
    ({"head_dim": 64}, UnsupportedModelError, "head_dim"),
])
def test_molmoe_bad_configs(change, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(MOLMOE_1B, **change))


def test_molmo_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MOLMO_7B_D))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_021_025_280
    path.write_text(json.dumps(dict(MOLMOE_1B, image_projector="linear")))
    run("analyze", str(path), "--json").assert_error("image_projector")


@pytest.mark.parametrize("tiny", [
    dict(MOLMO_7B_O, hidden_size=64, intermediate_size=192, num_attention_heads=4, num_hidden_layers=2,
         vocab_size=250, embedding_size=256, max_position_embeddings=256),  # q/k norms, norm_after
    dict(MOLMOE_1B, d_model=64, n_heads=4, n_layers=2, moe_num_experts=8, moe_top_k=2, vocab_size=250,
         embedding_size=256, max_position_embeddings=256),
], ids=["dense", "moe"])
def test_molmo_language_model_verifies(tmp_path, tiny):
    """verify builds the language model (the tower is counted apart) from a tiny Molmo: its exact self-checks pass."""
    verify_self_checks(tmp_path, tiny, name="molmo")
