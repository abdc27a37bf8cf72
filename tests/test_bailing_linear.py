"""inclusionAI's Ring-linear 2.0 hybrids (the remote-code ``bailing_moe_linear`` model type, architecture
BailingMoeLinearV2ForCausalLM), which transformers does not ship.

No transformers oracle: the counts are checked against hand counts written from the module shapes of SGLang's
bailing_moe_linear.py and vLLM's bailing_moe_linear.py / bailing_linear_attn.py (the hub's
modeling_bailing_moe_linear_v2.py as mlx-lm ports it), and against the published figures. Before this family the
planner read the model_type as a generic Llama-style decoder: Ring-mini-linear-2.0 came out at 16,970,237,952
parameters, 1,367,427,072 active, 20 GQA layers caching 40,960 bytes a token and no recurrent state.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.clirun import run

#: inclusionAI/Ring-mini-linear-2.0 config.json, as mlx-community/Ring-mini-linear-2.0-4bit ships it without its
#: quantization keys (quoted verbatim in a public MLX port's tests)
RING_MINI = {
    "architectures": ["BailingMoeLinearV2ForCausalLM"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_bailing_moe_linear_v2.BailingMoeLinearV2Config"},
    "embedding_dropout": 0.0, "eos_token_id": 156892, "first_k_dense_replace": 1, "group_norm_size": 4,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5120, "layer_group_size": 5,
    "linear_silu": False, "max_position_embeddings": 131072, "model_type": "bailing_moe_linear",
    "moe_intermediate_size": 512, "moe_router_enable_expert_bias": True, "moe_shared_expert_intermediate_size": 512,
    "n_group": 8, "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 256, "num_experts_per_tok": 8,
    "num_hidden_layers": 20, "num_key_value_heads": 4, "num_nextn_predict_layers": 0, "num_shared_experts": 1,
    "output_dropout": 0.0, "pad_token_id": 156892, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000, "routed_scaling_factor": 2.5, "router_dtype": "fp32",
    "score_function": "sigmoid", "tie_word_embeddings": False, "topk_group": 4, "torch_dtype": "bfloat16",
    "transformers_version": "4.56.1", "use_bias": False, "use_cache": True, "use_qk_norm": True,
    "use_qkv_bias": False, "use_rmsnorm": True, "vocab_size": 157184,
}
#: inclusionAI/Ring-flash-linear-2.0 as reconstructed (its config.json was not at hand): converted from
#: Ling-flash-base-2.0 (hidden 4096, 32 layers, 32 heads / 4 KV heads of 128, 256 experts of 1024, top-8, one shared,
#: first layer dense of 9216), one softmax layer in 8 (the technical report's M = 7; 28 of 32 layers linear in its
#: MLX 4-bit config), Ring-mini's linear-attention fields
RING_FLASH = dict(RING_MINI, hidden_size=4096, intermediate_size=9216, moe_intermediate_size=1024,
                  moe_shared_expert_intermediate_size=1024, num_hidden_layers=32, num_attention_heads=32,
                  layer_group_size=8)


def hand_count(c: dict) -> dict:
    """Parameters of the remote code's modules (no expert_bias: a buffer), K/V bytes per token and state bytes per
    sequence at bf16, from the module shapes."""
    h, heads, kv, v, n = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"],
                          c["num_hidden_layers"])
    d = h // heads
    qkv_b, o_b, qk = c.get("use_qkv_bias", False), c.get("use_bias", False), c.get("use_qk_norm", False)
    g = c["layer_group_size"]
    full_at = [i for i in range(n) if (i + 1) % g == 0]
    # softmax layer: query_key_value (heads + 2 kv) x d, dense, query/key_layernorm (d each)
    soft = h * (heads + 2 * kv) * d + qkv_b * (heads + 2 * kv) * d + heads * d * h + o_b * h + qk * 2 * d
    # linear layer: query_key_value 3 heads x d (MHA), g_proj, g_norm (heads x d), dense, q/k norms
    lin = h * 3 * heads * d + qkv_b * 3 * heads * d + h * heads * d + heads * d + heads * d * h + o_b * h + qk * 2 * d
    mlp = lambda i: 3 * h * i  # noqa: E731
    m, e, k = c["moe_intermediate_size"], c["num_experts"], c["num_experts_per_tok"]
    shared = mlp(c["num_shared_experts"] * c.get("moe_shared_expert_intermediate_size", m))
    first = c["first_k_dense_replace"]
    moe_total, moe_active = e * mlp(m) + shared + e * h, k * mlp(m) + shared + e * h
    mixers = len(full_at) * soft + (n - len(full_at)) * lin
    ffn_total = first * mlp(c["intermediate_size"]) + (n - first) * moe_total
    ffn_active = first * mlp(c["intermediate_size"]) + (n - first) * moe_active
    outer = 2 * v * h + h + n * 2 * h  # embedding, lm_head, final norm, two norms a layer
    norms = h + n * 2 * h + qk * 2 * d * n + (n - len(full_at)) * heads * d
    return {"total": mixers + ffn_total + outer, "active": mixers + ffn_active + outer,
            "matmul_active": mixers + ffn_active + outer - v * h - norms, "full": len(full_at),
            "kv_per_token": len(full_at) * 2 * kv * d * 2, "state": (n - len(full_at)) * heads * d * d * 2}


def test_ring_mini_linear_is_the_published_16_4b_with_1_6b_active():
    p = count_params(parse_config(RING_MINI))
    hc = hand_count(RING_MINI)
    assert (p.total, p.active) == (hc["total"], hc["active"]) == (16_423_443_456, 1_600_773_120)
    # the card: "activating only 1.6B of its 16.4B total parameters"; the technical report (arXiv 2510.19338):
    # "16B parameters and 957M activations" (without embedding and head)
    assert round(p.total / 1e8) == 164 and round(p.active / 1e8) == 16
    assert round((p.active - p.embedding - p.lm_head) / 1e6) == 957
    assert p.mtp == 0


def test_ring_flash_linear_reconstruction_is_the_published_104b():
    p = count_params(parse_config(RING_FLASH))
    hc = hand_count(RING_FLASH)
    assert (p.total, p.active) == (hc["total"], hc["active"]) == (104_181_657_600, 7_444_230_144)
    # the report: "104B parameters and 6.1B activations" (without embedding and head: 6.157B)
    assert round(p.total / 1e9) == 104 and int((p.active - p.embedding - p.lm_head) / 1e8) == 61
    # Ling-flash-2.0 (tests/test_bailing.py: 102,889,697,280) plus, on each of its 28 linear layers, the wider MHA
    # query_key_value, g_proj and g_norm
    assert p.total - 102_889_697_280 == 28 * ((3 * 32 - 40) * 128 * 4096 + 4096 * 4096 + 4096)


@pytest.mark.parametrize("cfg", [RING_MINI, RING_FLASH], ids=["mini", "flash"])
def test_layers_kv_state_and_decode_flops(cfg):
    hc = hand_count(cfg)
    spec = parse_config(cfg)
    g, n = cfg["layer_group_size"], cfg["num_hidden_layers"]
    assert [lay.kind.startswith("full") for lay in spec.layers] == [(i + 1) % g == 0 for i in range(n)]
    lin = spec.layers[0].mixer
    assert (lin.num_heads, lin.head_dim, lin.rotary_dim, lin.norm_groups, lin.qk_norm, lin.silu) == \
        (cfg["num_attention_heads"], 128, 64, 4, True, False)
    full = spec.layers[g - 1].mixer
    assert (full.num_key_value_heads, full.head_dim, full.rotary_dim) == (4, 128, 64)
    ctx = 1000
    a = analyze(spec, Options(context=ctx, dtype="bf16", kv_dtype="bf16"))
    # only the softmax layers cache K and V per token; each linear layer keeps heads x d x d per sequence
    assert a.kv.bytes_per_token == hc["kv_per_token"] == hc["full"] * 2 * 4 * 128 * 2 == 8192
    assert a.kv.state_bytes_per_sequence == hc["state"]
    assert hc["state"] == {20: 8 << 20, 32: 28 << 20}[n]
    # decode: 2 FLOPs per active matmul weight, q·k and p·v over context + 1 keys on the softmax layers, and the
    # recurrence's 4·d² a head on the linear ones
    heads = cfg["num_attention_heads"]
    attn = hc["full"] * heads * 2 * (128 + 128) * (ctx + 1)
    recur = (n - hc["full"]) * 4 * heads * 128 * 128
    assert a.decode_flops == 2 * hc["matmul_active"] + attn + recur


def test_variants_equal_the_hand_count():
    for cfg in (dict(RING_MINI, use_bias=True, use_qkv_bias=True, group_norm_size=1),
                dict(RING_MINI, use_qk_norm=False, num_hidden_layers=10, layer_group_size=2, first_k_dense_replace=3),
                dict(RING_MINI, layer_group_size=1)):
        p = count_params(parse_config(cfg))
        hc = hand_count(cfg)
        assert (p.total, p.active) == (hc["total"], hc["active"])
    # layer_group_size 1: every layer softmax attention, Ling-mini-2.0's decoder (tests/test_bailing.py)
    assert all(lay.kind.startswith("full") for lay in parse_config(dict(RING_MINI, layer_group_size=1)).layers)


def test_mtp_layers_are_not_counted_and_said_so():
    spec = parse_config(dict(RING_MINI, num_nextn_predict_layers=1))
    assert count_params(spec).total == count_params(parse_config(RING_MINI)).total and not spec.mtp_layers
    notes = [p.note for p in spec.provenance if p.field == "mtp_layers"]
    assert notes and "not counted" in notes[0]


@pytest.mark.parametrize("patch, match", [
    ({"architectures": ["BailingMoeV2_5ForCausalLM"]}, "MLA"),
    ({"architectures": ["BailingMoeLinearForCausalLM"]}, "Ring-lite-linear-preview"),
    ({"architectures": ["LlamaForCausalLM"]}, "BailingMoeLinearV2ForCausalLM only"),
    ({"kv_lora_rank": 512}, "MLA"),
    ({"head_dim": 64}, "hidden_size / num_attention_heads"),
    ({"num_hidden_layers": 22}, "does not divide num_hidden_layers"),
    ({"group_norm_size": 3}, "group_norm_size"),
    ({"use_bias": True}, "use_qkv_bias"),
    ({"use_bias": None}, "use_qkv_bias"),  # absent: BailingMoeConfig's default, true
    ({"layer_group_size": None}, "layer_group_size"),
])
def test_bad_configs_are_refused(patch, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(dict(RING_MINI, **patch))


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(RING_MINI))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    out = r.json
    assert (out["params"]["total"], out["params"]["active"]) == (16_423_443_456, 1_600_773_120)
    assert out["kv_cache"]["bytes_per_token"] == 8192 and out["kv_cache"]["state_bytes_per_sequence"] == 8 << 20
    # tensor parallelism: vLLM and SGLang need tp to divide group_norm_size (4)
    run("analyze", path, "--tp", "8", "--gpus", "8").assert_error("group_norm_size")
    assert run("analyze", path, "--tp", "4", "--gpus", "4", "--json").code == 0
    run("verify", path).assert_error("lightning attention")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(RING_MINI, num_hidden_layers=22)))
    run("analyze", bad).assert_error("layer_group_size", "num_hidden_layers")
