"""Remote-code MoE families (no transformers class): DeepSeek-MoE v1 (``deepseek``) and the hub's MiniMax-M1 /
MiniMax-Text-01 configs (``minimax_m1`` / ``minimax_text_01``). Counts are checked against hand counts written
from vLLM's weight shapes and against the published totals; no network, no remote code."""

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params

# deepseek-ai/deepseek-moe-16b-base config.json (the hub repository's file, fields as published)
DEEPSEEK_MOE_16B = {
    "architectures": ["DeepseekForCausalLM"], "attention_bias": False, "bos_token_id": 100000, "eos_token_id": 100001,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 10944,
    "max_position_embeddings": 4096, "model_type": "deepseek", "moe_intermediate_size": 1408, "moe_layer_freq": 1,
    "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False, "num_attention_heads": 16,
    "num_experts_per_tok": 6, "num_hidden_layers": 28, "num_key_value_heads": 16, "pretraining_tp": 1,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000, "scoring_func": "softmax", "seq_aux": True,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 102400}

# MiniMaxAI/MiniMax-M1-80k config.json (M1-40k differs in nothing that changes shapes)
MINIMAX_M1 = {
    "architectures": ["MiniMaxM1ForCausalLM"], "attn_type_list": ([0] * 7 + [1]) * 10, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 6144, "intermediate_size": 9216,
    "layernorm_full_attention_alpha": 3.5565588200778455, "layernorm_full_attention_beta": 1.0,
    "layernorm_linear_attention_alpha": 3.5565588200778455, "layernorm_linear_attention_beta": 1.0,
    "layernorm_mlp_alpha": 3.5565588200778455, "layernorm_mlp_beta": 1.0, "max_position_embeddings": 10240000,
    "model_type": "minimax_m1", "num_attention_heads": 64, "num_experts_per_tok": 2, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "num_local_experts": 32, "postnorm": True, "rms_norm_eps": 1e-05,
    "rope_theta": 10000000, "rotary_dim": 64, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0,
    "shared_intermediate_size": 0, "shared_moe_mode": "sigmoid", "sliding_window": None,
    "tie_word_embeddings": False, "use_cache": True, "vocab_size": 200064}


def test_deepseek_moe_16b_by_hand_and_published():
    """vLLM deepseek_v2.py (MHA path) / the hub's modeling_deepseek.py: q/k/v/o h x h, layer 0 a SwiGLU of 10944,
    layers 1..27 a gate (64 x h), 64 SwiGLU experts of 1408, a shared SwiGLU of 2 x 1408; two norms a layer, the
    final norm, untied embedding and head. Published: 16.4B total, 2.8B activated."""
    h, v, L = 2048, 102400, 28
    attn = 4 * h * h
    dense = 3 * h * 10944
    expert = 3 * h * 1408
    moe = 64 * h + 64 * expert + 3 * h * 2816
    total = 2 * v * h + h + L * (attn + 2 * h) + dense + 27 * moe
    p = count_params(parse_config(DEEPSEEK_MOE_16B))
    assert p.total == total == 16_375_728_128
    assert p.active == total - 27 * 58 * expert == 2_828_650_496
    assert round(p.total / 1e9, 1) == 16.4 and round(p.active / 1e9, 1) == 2.8
    spec = parse_config(DEEPSEEK_MOE_16B)
    assert spec.numerics.norm_topk_prob is False and spec.numerics.score_correction_bias is False
    assert spec.mtp_layers == ()
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    # MHA: every one of the 28 layers caches K and V of 16 heads x 128 per token (bf16)
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 16 * 128 * 2 == 229_376


def test_deepseek_moe_bad_configs_raise_config_errors():
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        parse_config(dict(DEEPSEEK_MOE_16B, num_experts_per_tok=65))
    with pytest.raises(ConfigError, match="scoring_func"):
        parse_config(dict(DEEPSEEK_MOE_16B, scoring_func="sigmoid"))
    with pytest.raises(ConfigError, match="n_routed_experts"):
        parse_config({k: x for k, x in DEEPSEEK_MOE_16B.items() if k != "n_routed_experts"})


@pytest.mark.parametrize("model_type", ["minimax_m1", "minimax_text_01"])
def test_minimax_m1_hub_config_by_hand_and_published(model_type):
    """vLLM minimax_text_01.py: 70 lightning layers (qkv 3·H·d x h, output_gate, out_proj, a norm over H·d), 10 GQA
    layers (8 KV heads x 128), every layer 32 SwiGLU experts of 9216 (top-2) and a 32 x h gate. Published: 456B
    total, 45.9B activated (without the embedding and head)."""
    h, i, v = 6144, 9216, 200064
    light = 3 * 8192 * h + 8192 * h + 8192 + h * 8192
    soft = 8192 * h + 2 * 1024 * h + h * 8192
    total = 2 * v * h + h + 70 * light + 10 * soft + 80 * (2 * h + 32 * h + 32 * 3 * h * i)
    spec = parse_config(dict(MINIMAX_M1, model_type=model_type))
    p = count_params(spec)
    assert p.total == total == 456_089_655_296
    assert p.active - 2 * v * h == total - 80 * 30 * 3 * h * i - 2 * v * h == 45_944_920_064
    assert [lay.mixer.rotary_dim for lay in spec.layers if lay.kind.startswith("full")] == [64] * 10
    with pytest.raises(ConfigError, match="shared_intermediate_size"):
        parse_config(dict(MINIMAX_M1, shared_intermediate_size=1024))
