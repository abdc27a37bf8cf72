"""GLM-5.3-Flash (``glm5_next`` / ``glm5_next_text``): KDA and k-pool DSA layers in mHC streams, GLM-5's MoE, GLM-OCR's
vision tower with a wider merger (analysis/families/glm5_next.py, analysis/mixers/glm5_next.py).

Checked against transformers 5.24's Glm5NextForConditionalGeneration on the meta device, against hand counts written
from its module shapes, and against the published figures (zai-org/GLM-5.3-Flash: "320B total / 18B active")."""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

# The released config (zai-org/GLM-5.3-Flash, revision 84c6a6aa9497188e15a635ba793b0f95a79b1033): text_config as
# transcribed field by field in public GitHub code (a Rust loader's "minimal official GLM-5.3-Flash contract" test and
# a fail-closed source contract pinning that revision), vision_config's fields as that contract pins them
# (quantization_config, 1,509 modules_to_not_convert, left out: it does not change the count).
DSA = set(range(3, 45, 4))
RELEASED_TEXT = {
    "model_type": "glm5_next_text", "dtype": "bfloat16", "vocab_size": 154880, "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 45, "num_attention_heads": 64, "num_key_value_heads": 64,
    "head_dim": 0, "qk_head_dim": 256, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 256,
    "qk_rope_head_dim": 0, "v_head_dim": 256,
    "linear_attn_config": {"num_heads": 64, "head_dim": 128, "short_conv_kernel_size": 4, "gate_lower_bound": -5.0,
                           "kda_layers": [i for i in range(45) if i not in DSA], "full_attn_layers": sorted(DSA)},
    "layer_types": ["deepseek_sparse_attention" if i in DSA else "linear_attention" for i in range(45)],
    "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 42, "indexer_types": ["full"] * 45,
    "n_routed_experts": 288, "n_shared_experts": 1, "first_k_dense_replace": 3, "n_group": 1, "topk_group": 1,
    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "scoring_func": "sigmoid", "norm_topk_prob": True,
    "routed_scaling_factor": 2.5, "topk_method": "noaux_tc", "hidden_act": "silu", "moe_router_dtype": "float32",
    "attention_bias": False, "hc_mult": 4, "hc_eps": 1e-06, "hc_sinkhorn_iters": 20, "mhc": True,
    "mla_use_nope": True, "index_head_dim": 128, "index_n_heads": 32, "index_topk": 2048, "index_kpool": 4,
    "index_kpool_always_select_tail": True, "index_kpool_compress": True, "index_share_for_mtp_iteration": True,
    "indexer_rope_interleave": True, "swiglu_limit": 10.0, "num_nextn_predict_layers": 1,
    "max_position_embeddings": 1048576, "rms_norm_eps": 1e-05, "eos_token_id": [154820, 154827, 154829],
    "pad_token_id": 154820, "tie_word_embeddings": False,
}
RELEASED = {
    "architectures": ["Glm5NextForConditionalGeneration"], "model_type": "glm5_next", "tie_word_embeddings": False,
    "text_config": RELEASED_TEXT,
    "vision_config": {"model_type": "glm5_next_vision", "depth": 24, "hidden_size": 1024, "intermediate_size": 4096,
                      "num_heads": 16, "image_size": 448, "patch_size": 14, "temporal_patch_size": 2,
                      "spatial_merge_size": 2, "out_hidden_size": 4096},
}

# small configs (transformers builds them; the counts are checked against it)
TINY_TEXT = {"hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32, "num_hidden_layers": 6,
             "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 300, "pad_token_id": 0, "q_lora_rank": 48,
             "kv_lora_rank": 32, "qk_nope_head_dim": 16, "v_head_dim": 8, "n_routed_experts": 6,
             "num_experts_per_tok": 2, "n_shared_experts": 2, "index_topk": 8, "index_head_dim": 16,
             "index_n_heads": 2, "index_kpool": 2, "linear_num_heads": 2, "linear_head_dim": 16,
             "linear_conv_kernel_dim": 3, "hc_mult": 3,
             "layer_types": ["linear_attention", "indexed_attention", "indexed_attention", "linear_attention",
                             "full_attention", "linear_attention"],
             "indexer_types": ["full", "full", "shared", "full", "full", "full"],
             "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"]}
TINY_VISION = {"depth": 2, "hidden_size": 32, "num_heads": 4, "intermediate_size": 48, "out_hidden_size": 64,
               "projection_intermediate_size": 80, "attention_bias": False}
TINY = {"model_type": "glm5_next", "text_config": TINY_TEXT, "vision_config": TINY_VISION}


def hf_total(cfg: dict) -> int:
    return unique_param_count(hf_model(cfg, image_text=True))


def released_hand_count() -> tuple[int, int, int]:
    """(language model, vision tower, MTP layer) of the released config, from transformers' module shapes."""
    h, v = 4096, 154880
    hc = 2 * (24 * 4 * h + 24 + 3)  # attn_hc / ffn_hc: fn ((2 + 4)·4 x 4·h), base, scale (3)
    norms = 2 * h
    kda = (3 * 8192 * h + 24576 * 4 + 8192 + 64  # q/k/v, conv1d, dt_bias, A_log
           + 128 * h + 8192 * 128 + 64 * h + 128 * h + 8192 * 128 + 128 + h * 8192)  # f_a/b, b, g_a/b, o_norm, o
    mla = 1536 * h + 1536 + 16384 * 1536 + 512 * h + 512 + 32768 * 512 + h * 16384
    indexer = 4 * 128 + 128 * h + 4096 * 1536 + 128 * h + 2 * 128 + 32 * h  # ape, gate, wq_b, wk, k_norm, weights
    dense = 3 * 12288 * h
    moe = 288 * 3 * 2048 * h + 288 * h + 3 * 2048 * h  # experts, router, shared expert
    lm = (2 * v * h + h + 34 * (kda + hc + norms) + 11 * (mla + indexer + hc + norms)
          + 3 * dense + 42 * moe)
    block = (2 * 1024 + 3072 * 1024 + 3072 + 1024 * 1024 + 1024 + 2 * 64
             + 3 * 4096 * 1024 + 2 * 4096 + 1024)
    vision = (1024 * 3 * 2 * 14 * 14 + 1024 + 24 * block + 1024 + 4096 * 1024 * 4 + 4096
              + 4096 * 4096 + 2 * 4096 + 3 * 10240 * 4096)
    mtp = mla + indexer + norms + moe + 3 * h + 2 * h * h  # a DSA + MoE layer, enorm / hnorm / head norm, eh_proj
    return lm, vision, mtp


def test_released_config_equals_transformers_and_hand_count():
    lm, vision, mtp = released_hand_count()
    c = count_params(parse_config(RELEASED))
    assert c.total == lm + vision == 313_890_426_878 == hf_total(RELEASED)
    assert c.vision == vision == 563_627_008
    assert c.mtp == mtp == 7_432_592_128
    assert c.active == c.total - 42 * (288 - 8) * 3 * 2048 * 4096 == 17_940_336_638
    # published: 320B total (with the MTP layer), 18B active
    assert abs(c.total + c.mtp - 320e9) / 320e9 < 0.005
    assert abs(c.active - 18e9) / 18e9 < 0.005


def test_default_config_equals_transformers():
    """The class defaults (index_kpool 16, out_hidden_size 1536): what `planner analyze` failed on before."""
    c = count_params(parse_config({"model_type": "glm5_next"}))
    assert c.total == 313_786_889_214 == hf_total({"model_type": "glm5_next"})
    assert c.vision == 460_072_448


@pytest.mark.parametrize("cfg", [
    TINY,
    {**TINY, "tie_word_embeddings": True},
    {**TINY, "text_config": {**TINY_TEXT, "tie_word_embeddings": True}},  # the wrapper's flag alone decides
    {**TINY, "text_config": {**TINY_TEXT, "index_kpool_always_select_tail": False, "attention_bias": True,
                             "linear_attn_config": {"num_heads": 3, "head_dim": 8, "short_conv_kernel_size": 2}}},
    {**TINY, "text_config": {k: v for k, v in TINY_TEXT.items()
                             if k not in ("layer_types", "indexer_types", "mlp_layer_types")}},
    {**TINY, "text_config": {**{k: v for k, v in TINY_TEXT.items() if k != "indexer_types"},
                             "index_topk_pattern": "FFSFFF"}},
], ids=["tiny", "tied", "text-tie-ignored", "no-tail-bias-lac", "class-default-layouts", "topk-pattern"])
def test_small_configs_equal_transformers(cfg):
    assert count_params(parse_config(cfg)).total == hf_total(cfg)


def test_flat_config_is_its_text_config():
    """Glm5NextConfig: text fields at the top level become text_config (the default tower built)."""
    flat = {"model_type": "glm5_next", **{k: v for k, v in TINY_TEXT.items()}}
    assert count_params(parse_config(flat)).total == hf_total(flat)


def test_layer_kinds_and_shared_indexers():
    spec = parse_config(TINY)
    assert [lay.kind for lay in spec.layers] == ["kda", "dsa-kpool2+moe", "dsa-kpool(shared)+moe", "kda",
                                                 "dsa-kpool2+moe", "kda+moe"]
    shared = spec.layers[2].mixer
    assert not any(".indexer." in t.name for t in shared.tensors("model.layers.2.self_attn"))
    names = {t.name for t in spec.layers[1].mixer.tensors("model.layers.1.self_attn")}
    assert {"model.layers.1.self_attn.indexer.index_kpool_compress_ape", "model.layers.1.attn_hc.fn",
            "model.layers.1.ffn_hc.scale", "model.layers.1.self_attn.indexer.index_kpool_compress_gate"} <= names


def test_released_kv_state_and_decode_flops():
    """The cache: each of the 11 sparse layers holds the NoPE latent (512) per token and one pooled indexer key (128)
    per 4 tokens; the 34 KDA layers a conv window and a 64 x 128 x 128 state; the open pool's keys and gates."""
    a = analyze(parse_config(RELEASED), Options(context=8192))
    kv = a.kv
    assert kv.bytes_per_token == 11 * 512 * 2 + 11 * (128 * 2 // 4) == 11_968
    assert kv.bytes_per_sequence(8192) == 11 * 512 * 2 * 8192 + 11 * 128 * 2 * (8192 // 4) == 98_041_856
    assert kv.bytes_per_sequence(8191) == 11 * 512 * 2 * 8191 + 11 * 128 * 2 * (8191 // 4)
    # the conv windows in bf16, the KDA state in fp32 (vLLM's kda_state_dtype)
    kda_state = 34 * (2 * 3 * 8192 * (4 - 1) + 4 * 64 * 128 * 128)
    assert kv.state_bytes_per_sequence == kda_state + 11 * 2 * (4 - 1) * 2 * 128 == 147_636_736
    assert a.decode_flops == decode_flops_hand(8192) == 36_849_188_864
    # past the selection budget the attention stops growing, the indexer's pool scores do not
    grow = decode_flops_hand(65536) - decode_flops_hand(65532)
    assert analyze(parse_config(RELEASED), Options(context=65536)).decode_flops - \
        analyze(parse_config(RELEASED), Options(context=65532)).decode_flops == grow == 11 * 2 * 32 * 129


def decode_flops_hand(ctx: int) -> int:
    """One decode step at ``ctx`` cached tokens (2 FLOPs per multiply-add) of the released language model."""
    h, hd, heads = 4096, 128, 64
    kda = 3 * 8192 * h + 128 * h + 8192 * 128 + 64 * h + 128 * h + 8192 * 128 + h * 8192
    kda_fl = 2 * kda + 2 * 3 * 8192 * 4 + 6 * heads * hd * hd  # projections, conv, the delta rule
    v = ctx + 1  # keys visible to the new token
    keys = min(v // 4, 2048 // 4) * 4 + v % 4  # the best 512 pools of 4 tokens plus the open pool
    mla = 1536 * h + 16384 * 1536 + 512 * h + h * 16384
    dsa_fl = 2 * mla + 2 * 64 * 256 * 512 + 64 * 4 * 512 * keys + 2 * 64 * 256 * 512  # absorbed q, scores+values, v up
    dsa_fl += 2 * (4096 * 1536 + 128 * h + 32 * h + 128 * h) + 2 * (v // 4) * 32 * (128 + 1)  # indexer, pool scores
    # the two hyper-connections' fn (24 x 4·h each), and the 4 x 4 comb mixes of the streams after the attention and
    # after the FFN (Glm5NextTextDecoderLayer.forward: torch.matmul(comb.T, residual), 2·4²·h each)
    hc_fl = 2 * 2 * (24 * 4 * h) + 2 * 2 * 4 * 4 * h
    moe = 2 * (288 * h + 8 * 3 * 2048 * h + 3 * 2048 * h)
    return 34 * (kda_fl + hc_fl) + 11 * (dsa_fl + hc_fl) + 3 * 2 * 3 * 12288 * h + 42 * moe + 2 * 154880 * h


@pytest.mark.parametrize("change, fragment", [
    ({"num_key_value_heads": 2}, "num_key_value_heads"),
    ({"index_kpool": 3}, "does not divide index_topk"),
    ({"qk_rope_head_dim": 64}, "NoPE"),
    ({"q_lora_rank": None}, "query LoRA"),
    ({"indexer_types": ["full", "shared", "full", "full", "shared", "full"]}, "layer 4 shared"),
    ({"layer_types": ["linear_attention"] * 5 + ["sliding_attention"]}, "layer_types"),
])
def test_bad_configs_refused(change, fragment, tmp_path):
    text = {**TINY_TEXT, **change}
    if change.get("indexer_types"):
        text["layer_types"] = ["indexed_attention"] * 3 + ["linear_attention", "indexed_attention", "indexed_attention"]
    cfg = {**TINY, "text_config": text}
    with pytest.raises(ConfigError, match=fragment):
        parse_config(cfg)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    run("analyze", p).assert_error(fragment)


def test_cli_analyze_released(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(RELEASED))
    r = run("analyze", p, "--json")
    assert r.code == 0, r.err
    out = r.json
    assert out["params"]["total"] == 313_890_426_878 and out["params"]["active"] == 17_940_336_638
    assert out["params"]["vision"] == 563_627_008 and out["params"]["mtp"] == 7_432_592_128
    assert out["kv_cache"]["bytes_per_token"] == 11_968
    assert out["flops_per_token"]["decode"] == 36_849_188_864  # decode_flops_hand(8192)


def test_verify_refuses(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(TINY))
    run("verify", p, "--device", "cpu").assert_error("verify does not support")
