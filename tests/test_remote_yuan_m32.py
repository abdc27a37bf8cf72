"""IEIT Yuan2.0-M32 (``yuan`` with a ``moe_config``), a remote-code family with no transformers class. Counts are
checked against a hand count written from the shapes of the hub's M32 modeling_yuan.py (as the Yuan2.0-M32
repository's 3rd_party/AutoGPTQ/auto_gptq/modeling/yuan_moe_hf_model.py copies it: YuanAttention with
attention_projection_size, LocalizedFiltering, ParallelAttention_router, YuanExpertMLP, YuanMoeLayer) and the
published 40B total / 3.7B active; no network, no remote code."""

from __future__ import annotations

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params

# Yuan2.0-M32 (IEITYuan/Yuan2-M32-hf): the geometry of the repository's examples/pretrain_yuan2.0_moe_2x32B.sh
# (24 layers, hidden 2048, 16 heads, kv-channels 256 = attention_projection_size 4096, rotary-percent 0.5, 32
# experts, top-2, SwiGLU of Megatron's default 4 x hidden, the attention router) in the HF config's names, the
# YuanTokenizer vocabulary (135,040) and the head tied as in every Yuan 2.0 HF config
YUAN2_M32 = {
    "architectures": ["YuanForCausalLM"], "model_type": "yuan", "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 8192, "max_position_embeddings": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
    "attention_projection_size": 4096, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "vocab_size": 135040,
    "moe_config": {"moe_num_experts": 32, "moe_top_k": 2, "ffn_hidden_size": 8192, "gated_linear_unit": True,
                   "norm_topk_prob": True, "router_type": "attn_router"}}


def _m32_by_hand(h=2048, L=24, V=135040, E=32, k=2, ffn=8192, proj=4096) -> tuple[int, int]:
    """YuanAttention: q/k/v_proj h x proj, o_proj proj x h (bias-free); lf_gate conv1 Conv2d(h, h/2, (2, 1)) and
    conv2 Conv2d(h/2, h, (2, 1)) (biased) + output_layernorm (h). YuanMoeLayer: gate = ParallelAttention_router
    (query / key / value: E x h each), E YuanExpertMLPs (w1 h -> 2·ffn, w2 ffn -> h). Two RMSNorms a layer, the final
    norm, the embedding tied to the head. Active: k of the E experts."""
    attn = 3 * h * proj + proj * h + (h // 2) * h * 2 + h // 2 + h * (h // 2) * 2 + h + h
    moe = 3 * E * h + E * (h * 2 * ffn + ffn * h)
    total = V * h + h + L * (attn + moe + 2 * h)
    return total, total - L * (E - k) * 3 * h * ffn


def test_yuan2_m32_by_hand_and_published():
    p = count_params(parse_config(YUAN2_M32))
    total, active = _m32_by_hand()
    assert (p.total, p.active) == (total, active) == (39_942_842_368, 3_704_055_808)
    assert round(p.total / 1e9) == 40 and round(p.active / 1e9, 1) == 3.7  # published: 40B, 3.7B active
    assert p.router == 24 * 3 * 32 * 2048


def test_yuan2_m32_kv_and_heads():
    """K and V of 16 heads x 256 (attention_projection_size / heads) per layer; RoPE on the first 128 (hidden /
    heads) dims of each head; the LFA state as in the dense model."""
    spec = parse_config(YUAN2_M32)
    attn = spec.layers[0].mixer
    assert (attn.head_dim, attn.rotary_dim) == (256, 128)
    kv = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 24 * 2 * 16 * 256 * 2 == 393_216
    assert kv.state_bytes_per_sequence == 24 * (2048 + 1024) * 2
    assert spec.numerics.router.name == "SOFTMAX" and spec.numerics.norm_topk_prob


def test_yuan2_m32_router_flops():
    """The attention router per token and layer: q, k, v (3·h·E multiply-adds), E x E scores and their product with
    v (2·E² multiply-adds)."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(YUAN2_M32)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], get_dtype("bf16"), cached_tokens=10)
    router = [o for o in ops if o.name == "router"]
    assert len(router) == 24 and all(o.flops == 2 * (3 * 2048 * 32 + 2 * 32 * 32) for o in router)


def test_yuan_moe_config_edges():
    # moe_num_experts 0: the dense YuanMLP (YuanDecoderLayer), counted as Yuan 2.0
    dense = dict(YUAN2_M32, moe_config={"moe_num_experts": 0}, attention_projection_size=2048)
    h, L, V = 2048, 24, 135040
    lf = (h // 2) * h * 2 + h // 2 + h * (h // 2) * 2 + h + h
    assert count_params(parse_config(dense)).total == V * h + h + L * (4 * h * h + lf + 3 * h * 8192 + 2 * h)
    # an ungated expert (gated_linear_unit false): w1 h -> ffn
    ungated = dict(YUAN2_M32, moe_config=dict(YUAN2_M32["moe_config"], gated_linear_unit=False))
    assert count_params(parse_config(YUAN2_M32)).total - count_params(parse_config(ungated)).total == 24 * 32 * 2048 * 8192


@pytest.mark.parametrize("extra,field", [
    ({"moe_config": {"moe_num_experts": 32, "moe_top_k": 33, "ffn_hidden_size": 8192}}, "moe_top_k"),
    ({"moe_config": {"moe_num_experts": 32, "moe_top_k": 2}}, "ffn_hidden_size"),
    ({"moe_config": [32, 2]}, "moe_config"),
    ({"attention_projection_size": 1000}, "attention_projection_size"),
    ({"attention_projection_size": 1024}, "attention_projection_size"),
    ({"use_shareqk": True}, "use_shareqk"),
])
def test_yuan2_m32_bad_configs_raise_config_errors(extra, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(YUAN2_M32, **extra))


def test_yuan2_m32_is_refused_by_verify(tmp_path):
    from tests.test_runtime import assert_verify_refuses

    tiny = dict(YUAN2_M32, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                attention_projection_size=128, vocab_size=256,
                moe_config=dict(YUAN2_M32["moe_config"], moe_num_experts=4, ffn_hidden_size=32))
    assert_verify_refuses(tmp_path, tiny, "verify does not support Yuan 2.0's localized filtering attention")


def test_attention_router_is_refused_by_the_runtime_on_its_own():
    """Behind plain attention too (LFA is refused first for Yuan): one clear error, never a wrong router."""
    from dataclasses import replace

    from planner.analysis.errors import RuntimeUnavailableError
    from planner.runtime.model import check_supported

    spec = parse_config({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
                         "num_local_experts": 4, "num_experts_per_tok": 2})
    spec = replace(spec, layers=tuple(replace(lay, ffn=replace(lay.ffn, attention_router=True)) for lay in spec.layers))
    with pytest.raises(RuntimeUnavailableError, match="attention router"):
        check_supported(spec)
