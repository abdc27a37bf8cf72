"""State-space and linear-attention hybrids (and Phi): exact parameters against transformers, the
fixed per-sequence state against the published state shapes, and the trace of their ops.

Parameter totals are checked against ``tests.oracle`` (transformers built on the meta device). The
state sizes are derived here from vLLM's ``MambaStateShapeCalculator`` definitions (conv window of
``kernel - 1`` columns; Mamba-2 ``(heads, head_dim, state)``, Mamba-1 ``(d_inner, state)``, Gated
DeltaNet ``(v_heads, v_dim, k_dim)``, short conv ``(hidden, L - 1)``), independently of ``kv.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.spec import MLA, Attention, GatedAttention, GatedDeltaNet, Mamba, MoE, ParallelHybrid, ShortConv
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

from .conftest import load_bundled_config
from .oracle import flop_counter, hf_model, hf_param_count

BF16, FP32 = get_dtype("bf16"), get_dtype("fp32")

# ---- configs -------------------------------------------------------------------------------------

T = dict(vocab_size=128, hidden_size=64)

SYNTHETIC = {
    # Qwen3-Next: interval default, explicit layer_types, sparse step + mlp_only, dense-only, biases, tie
    # OLMo Hybrid: Gated DeltaNet with q/k/v/a/b/g projections apart (pre-norm layers) and OLMo 3 attention
    # (post-norm, q/k norms over all heads); transformers' default widths, or explicit ones and layer_types
    "olmo_hybrid/defaults": dict(T, model_type="olmo_hybrid", num_hidden_layers=4, num_attention_heads=4, pad_token_id=0,
                                 intermediate_size=96),
    "olmo_hybrid/widths+layer_types": dict(
        T, model_type="olmo_hybrid", num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2, pad_token_id=0,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12,
        linear_conv_kernel_dim=3, intermediate_size=96, attention_bias=True, tie_word_embeddings=True,
        layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention", "full_attention"]),
    # MiniMax: lightning attention (a head_dim x head_dim state per head, no conv) beside softmax layers, MoE
    "minimax/base": dict(T, model_type="minimax", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         intermediate_size=96, num_local_experts=4, num_experts_per_tok=2),
    "qwen3_next/base": dict(
        T, model_type="qwen3_next", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
        linear_conv_kernel_dim=4, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=48, intermediate_size=96),
    "qwen3_next/layer_types+sparse_step": dict(
        T, model_type="qwen3_next", num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=1, head_dim=8,
        layer_types=["full_attention", "linear_attention", "full_attention", "linear_attention", "linear_attention"],
        linear_num_key_heads=1, linear_num_value_heads=3, linear_key_head_dim=16, linear_value_head_dim=8,
        linear_conv_kernel_dim=3, num_experts=6, num_experts_per_tok=3, moe_intermediate_size=16,
        shared_expert_intermediate_size=24, intermediate_size=80, decoder_sparse_step=2, mlp_only_layers=[1],
        attention_bias=True),
    "qwen3_next/dense+tied": dict(
        T, model_type="qwen3_next", num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=2, head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=16,
        linear_conv_kernel_dim=4, num_experts=0, intermediate_size=96, full_attention_interval=2,
        tie_word_embeddings=True),
    # Qwen3.5: the DeltaNet input projections split in four; dense MLP everywhere (qwen3_5_text), or the
    # Qwen3-Next sparse block everywhere (qwen3_5_moe_text)
    "qwen3_5_text/base": dict(
        T, model_type="qwen3_5_text", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
        linear_conv_kernel_dim=4, intermediate_size=96),
    "qwen3_5_text/layer_types+tied+bias": dict(
        T, model_type="qwen3_5_text", num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        layer_types=["full_attention", "linear_attention", "linear_attention"], linear_num_key_heads=1,
        linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=8, linear_conv_kernel_dim=3,
        intermediate_size=80, tie_word_embeddings=True, attention_bias=True),
    "qwen3_5_moe_text/base": dict(
        T, model_type="qwen3_5_moe_text", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1,
        head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=16,
        linear_conv_kernel_dim=4, num_experts=6, num_experts_per_tok=2, moe_intermediate_size=24,
        shared_expert_intermediate_size=40, full_attention_interval=2),
    # Nemotron-H: pattern without MoE; list form with E, biases; legacy names, shared size 0 fallback
    "nemotron_h/pattern": dict(
        T, model_type="nemotron_h", hybrid_override_pattern="M-M*-", num_hidden_layers=5, mamba_num_heads=8,
        mamba_head_dim=16, n_groups=2, ssm_state_size=8, conv_kernel=4, intermediate_size=96,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16),
    "nemotron_h/list+moe+bias": dict(
        T, model_type="nemotron_h", layers_block_type=["mamba", "moe", "attention", "mamba", "mlp", "moe"],
        mamba_num_heads=4, mamba_head_dim=8, n_groups=4, ssm_state_size=16, conv_kernel=3, use_bias=True,
        use_conv_bias=False, intermediate_size=40, num_attention_heads=8, num_key_value_heads=8, head_dim=8,
        n_routed_experts=6, num_experts_per_tok=2, moe_intermediate_size=24, moe_shared_expert_intermediate_size=20),
    "nemotron_h/legacy_names": dict(
        T, model_type="nemotron_h", hybrid_override_pattern="MEM*EM", mamba_num_heads=6, mamba_head_dim=8,
        mamba_n_groups=3, ssm_state_size=4, mamba_d_conv=2, num_attention_heads=4, num_key_value_heads=1,
        head_dim=12, n_routed_experts=4, num_experts_per_tok=4, moe_intermediate_size=16,
        moe_shared_expert_intermediate_size=0, intermediate_size=36),
    # Jamba: MoE every other layer; dense only (num_experts 1) with biases; tied, one attention layer
    "jamba/moe": dict(
        T, model_type="jamba", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=96, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=0,
        num_experts=4, num_experts_per_tok=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2),
    "jamba/dense+bias": dict(
        T, model_type="jamba", num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=80, attn_layer_period=3, attn_layer_offset=0, num_experts=1, mamba_d_state=4,
        mamba_d_conv=3, mamba_expand=3, mamba_dt_rank=5, mamba_proj_bias=True, mamba_conv_bias=False),
    "jamba/tied": dict(
        T, model_type="jamba", num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=1,
        intermediate_size=48, attn_layer_period=6, attn_layer_offset=5, expert_layer_period=3,
        expert_layer_offset=2, num_experts=5, num_experts_per_tok=1, mamba_d_state=16, mamba_d_conv=4,
        mamba_expand=1, tie_word_embeddings=True),
    # Falcon-H1: d_ssm given, no gated norm; expand + 'auto' head dim, gated norm with groups, all biases
    "falcon_h1/base": dict(
        T, model_type="falcon_h1", num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size=96, mamba_d_ssm=96, mamba_n_heads=6, mamba_d_head=16, mamba_n_groups=1, mamba_d_state=8,
        mamba_d_conv=4),
    "falcon_h1/rms_norm+bias+multipliers": dict(
        T, model_type="falcon_h1", num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=4,
        intermediate_size=40, mamba_d_ssm=None, mamba_expand=2, mamba_n_heads=8, mamba_d_head="auto",
        mamba_n_groups=2, mamba_d_state=4, mamba_d_conv=3, mamba_rms_norm=True, projectors_bias=True,
        mamba_proj_bias=True, attention_bias=True, mlp_bias=True, mamba_conv_bias=False,
        ssm_multipliers=[0.5, 1.0, 2.0, 1.0, 0.25], mlp_multipliers=[0.7, 0.3], key_multiplier=0.5),
    # pure SSMs
    "mamba/tied_default": dict(T, model_type="mamba", num_hidden_layers=3, state_size=8, conv_kernel=4, expand=2),
    "falcon_mamba/intermediate+bias": dict(
        T, model_type="falcon_mamba", num_hidden_layers=2, state_size=4, conv_kernel=3, expand=16,
        intermediate_size=96, time_step_rank=6, use_bias=True, use_conv_bias=False, tie_word_embeddings=False),
    "falcon_mamba/expand": dict(T, model_type="falcon_mamba", num_hidden_layers=2, state_size=16, conv_kernel=4,
                                expand=3),
    "mamba2/groups": dict(T, model_type="mamba2", num_hidden_layers=3, num_heads=8, head_dim=16, n_groups=2,
                          state_size=16, conv_kernel=4, expand=2),
    "mamba2/bias+tied": dict(T, model_type="mamba2", num_hidden_layers=2, num_heads=4, head_dim=16, n_groups=1,
                             state_size=8, conv_kernel=2, expand=1, use_bias=True, use_conv_bias=False,
                             tie_word_embeddings=True),
    # Bamba and Granite-4 hybrid
    "bamba/attn_indices": dict(
        T, model_type="bamba", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=96, attn_layer_indices=[1, 3], mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=8,
        mamba_d_conv=4, mamba_expand=2),
    "bamba/all_mamba+bias+tied": dict(
        T, model_type="bamba", num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=48, mamba_n_heads=4, mamba_d_head=32, mamba_n_groups=1, mamba_d_state=4, mamba_d_conv=3,
        mamba_expand=2, mamba_proj_bias=True, mamba_conv_bias=False, mlp_bias=True, tie_word_embeddings=True),
    "granitemoehybrid/moe+rope": dict(
        T, model_type="granitemoehybrid", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        layer_types=["mamba", "attention", "mamba", "mamba"], num_local_experts=4, num_experts_per_tok=2,
        intermediate_size=32, shared_intermediate_size=48, mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=8,
        mamba_d_conv=4, mamba_expand=2, position_embedding_type="rope"),
    "granitemoehybrid/dense+tied": dict(
        T, model_type="granitemoehybrid", num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2,
        layer_types=["full_attention", "linear_attention", "linear_attention"], num_local_experts=0,
        shared_intermediate_size=96, mamba_n_heads=4, mamba_n_groups=4, mamba_d_state=4, mamba_d_conv=2,
        mamba_expand=1, mamba_proj_bias=True, attention_bias=True, tie_word_embeddings=True),
    "granitemoehybrid/default_types+no_shared": dict(
        T, model_type="granitemoehybrid", num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        num_local_experts=3, num_experts_per_tok=1, intermediate_size=16, shared_intermediate_size=0,
        mamba_n_heads=2, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2),
    # LFM2: layer_types; full_attn_idxs without ff adjustment, conv bias; block_ff_dim with multiplier
    "lfm2/layer_types": dict(
        T, model_type="lfm2", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        layer_types=["conv", "full_attention", "conv", "full_attention"], intermediate_size=256,
        block_multiple_of=32, conv_L_cache=3),
    "lfm2/idxs+bias+untied": dict(
        T, model_type="lfm2", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
        full_attn_idxs=[1, 3], intermediate_size=100, block_auto_adjust_ff_dim=False, conv_bias=True,
        conv_L_cache=4, tie_word_embeddings=False),
    "lfm2/block_ff_dim+multiplier": dict(
        T, model_type="lfm2", num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2,
        full_attn_idxs=[0], block_ff_dim=200, block_ffn_dim_multiplier=1.5, block_multiple_of=48, conv_L_cache=2),
    # LFM2-MoE (LFM2-8B-A1B's layout): dense SwiGLU layers first (intermediate_size, no width adjustment), then a
    # sigmoid-routed MoE with an expert_bias buffer; untied, routing without the bias, one dense layer
    "lfm2_moe/layer_types": dict(
        T, model_type="lfm2_moe", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        layer_types=["conv", "conv", "full_attention", "conv"], intermediate_size=96, moe_intermediate_size=32,
        num_experts=8, num_experts_per_tok=2, num_dense_layers=2, conv_L_cache=3),
    "lfm2_moe/one-dense+untied+no-bias": dict(
        T, model_type="lfm2_moe", num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        layer_types=["full_attention", "conv", "full_attention"], intermediate_size=64, moe_intermediate_size=16,
        num_experts=4, num_experts_per_tok=3, num_dense_layers=1, use_expert_bias=False, conv_bias=True,
        conv_L_cache=4, tie_embedding=False, routed_scaling_factor=2.0, norm_topk_prob=False),
    # LFM3: the default layout (conv, conv, full, conv, sliding, conv), gated attention, sandwich norms; and
    # layer_types without the gate or sandwich norms, biases, plain RoPE on both attention types, untied
    "lfm3/defaults": dict(
        T, model_type="lfm3", num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size=96, conv_L_cache=3, sliding_window=4, pad_token_id=0),
    "lfm3/layer_types+plain": dict(
        T, model_type="lfm3", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, head_dim=24,
        layer_types=["full_attention", "conv", "sliding_attention", "conv"], intermediate_size=80, conv_L_cache=4,
        conv_bias=True, attention_bias=True, use_attention_gate=False, use_sandwich_norm=False,
        tie_word_embeddings=False, pad_token_id=0,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    # Ling 3: the default layout (KDA x 5, gated MLA), MoE from layer 2; and the names Ling's configs (and
    # transformers' to_dict) use, layer_types / mlp_layer_types, a q LoRA, biases, tie_word_embeddings ignored
    "bailing_hybrid/defaults": dict(
        T, model_type="bailing_hybrid", num_hidden_layers=6, num_attention_heads=4, head_dim=16, kv_lora_rank=32,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, intermediate_size=96, moe_intermediate_size=32,
        num_local_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, pad_token_id=0),
    "bailing_hybrid/saved-names+layer_types": dict(
        T, model_type="bailing_hybrid", num_hidden_layers=4, num_attention_heads=2, head_dim=24, kv_lora_rank=16,
        q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, intermediate_size=40,
        moe_intermediate_size=16, num_experts=4, num_experts_per_tok=1, num_shared_experts=2, num_expert_group=1,
        topk_group=1, moe_renormalize=False, attention_bias=True, short_conv_kernel_size=3, tie_word_embeddings=True,
        layer_types=["full_attention", "linear_attention", "full_attention", "linear_attention"],
        mlp_layer_types=["sparse", "dense", "sparse", "sparse"], rope_theta=10000.0, pad_token_id=0),
    # Kimi Linear: the default layout (KDA, full MLA without RoPE at index 4), MoE from layer 1, grouped router;
    # Moonshot's saved names with linear_attn_config (1-indexed layer lists, heads, head dim, kernel over the
    # fields), a q LoRA, biases, first_k_dense_replace, tie_word_embeddings ignored; explicit layer_types and
    # mlp_layer_types with the dataclass linear_* fields
    "kimi_linear/defaults": dict(
        T, model_type="kimi_linear", num_hidden_layers=6, num_attention_heads=4, kv_lora_rank=32, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, intermediate_size=96, moe_intermediate_size=32, num_local_experts=8,
        num_experts_per_tok=2, n_group=2, topk_group=1, linear_num_heads=2, linear_head_dim=16, pad_token_id=0),
    "kimi_linear/saved-names+linear_attn_config": dict(
        T, model_type="kimi_linear", num_hidden_layers=4, num_attention_heads=2, kv_lora_rank=16, q_lora_rank=24,
        qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, intermediate_size=40, moe_intermediate_size=16,
        num_experts=4, num_experts_per_token=1, num_shared_experts=2, num_expert_group=1, topk_group=1,
        moe_renormalize=False, attention_bias=True, first_k_dense_replace=2, tie_word_embeddings=True,
        linear_num_heads=5, linear_head_dim=7, linear_conv_kernel_dim=2,
        linear_attn_config={"full_attn_layers": [1, 3], "kda_layers": [2, 4], "num_heads": 3, "head_dim": 8,
                            "short_conv_kernel_size": 3}, pad_token_id=0),
    "kimi_linear/layer_types+mlp_layer_types": dict(
        T, model_type="kimi_linear", num_hidden_layers=3, num_attention_heads=2, kv_lora_rank=16, qk_nope_head_dim=8,
        qk_rope_head_dim=8, v_head_dim=12, intermediate_size=40, moe_intermediate_size=16, num_local_experts=4,
        num_experts_per_tok=2, n_shared_experts=0, linear_num_heads=2, linear_head_dim=12, linear_conv_kernel_dim=5,
        layer_types=["linear_attention", "linear_attention", "full_attention"],
        mlp_layer_types=["sparse", "dense", "sparse"], pad_token_id=0),
    # Phi
    "phi/base": dict(T, model_type="phi", num_hidden_layers=2, num_attention_heads=4, intermediate_size=256),
    "phi/qk_layernorm+gqa": dict(T, model_type="phi", num_hidden_layers=3, num_attention_heads=8,
                                 num_key_value_heads=2, intermediate_size=96, qk_layernorm=True,
                                 partial_rotary_factor=0.25),
}

DATA = Path(__file__).parent / "data"

#: Qwen3.5's published config.json (the wrapper: text_config + vision_config), the fields that set shapes, as
#: quoted in public code (ModelCloud GPTQModel's and others' tests of Qwen/Qwen3.5-27B and Qwen3.5-35B-A3B).
QWEN35_REAL = {name: json.loads((DATA / f"Qwen--{name}.json").read_text())
               for name in ("Qwen3.5-27B", "Qwen3.5-35B-A3B")}

#: Published model shapes (the hub config.json fields that matter for shapes).
PUBLISHED = {
    # Qwen/Qwen3-Next-80B-A3B-Instruct (the transformers Qwen3NextConfig defaults are modelled on it)
    "Qwen3-Next-80B-A3B": dict(
        model_type="qwen3_next", hidden_size=2048, num_hidden_layers=48, vocab_size=151936, num_attention_heads=16,
        num_key_value_heads=2, head_dim=256, intermediate_size=5120, num_experts=512, num_experts_per_tok=10,
        moe_intermediate_size=512, shared_expert_intermediate_size=512, decoder_sparse_step=1, mlp_only_layers=[],
        full_attention_interval=4, linear_num_value_heads=32, linear_num_key_heads=16, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_conv_kernel_dim=4, partial_rotary_factor=0.25, rope_theta=10000000,
        tie_word_embeddings=False),
    # Qwen/Qwen3.5-27B and Qwen/Qwen3.5-35B-A3B: their text_config (the wrappers with vision: test_families)
    "Qwen3.5-27B": dict(QWEN35_REAL["Qwen3.5-27B"]["text_config"]),
    "Qwen3.5-35B-A3B": dict(QWEN35_REAL["Qwen3.5-35B-A3B"]["text_config"]),
    # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
    "Nemotron-3-Nano-30B-A3B": dict(
        model_type="nemotron_h", hidden_size=2688, num_hidden_layers=52, vocab_size=131072,
        hybrid_override_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", head_dim=128,
        intermediate_size=1856, mamba_head_dim=64, mamba_num_heads=64, n_groups=8, ssm_state_size=128,
        conv_kernel=4, expand=2, num_attention_heads=32, num_key_value_heads=2, n_routed_experts=128,
        n_shared_experts=1, num_experts_per_tok=6, moe_intermediate_size=1856,
        moe_shared_expert_intermediate_size=3712, mlp_hidden_act="relu2", mlp_bias=False, use_bias=False,
        use_conv_bias=True, tie_word_embeddings=False),
    # LiquidAI/LFM2-1.2B
    "LFM2-1.2B": dict(
        model_type="lfm2", hidden_size=2048, num_hidden_layers=16, vocab_size=65536, num_attention_heads=32,
        num_key_value_heads=8, block_ff_dim=12288, intermediate_size=12288, block_ffn_dim_multiplier=1.0,
        block_multiple_of=256, block_auto_adjust_ff_dim=True, conv_L_cache=3, conv_bias=False,
        full_attn_idxs=[2, 5, 8, 10, 12, 14], tie_embedding=True),
    # mistralai/Mamba-Codestral-7B-v0.1 (also the transformers Mamba2Config defaults)
    "Mamba-Codestral-7B": dict(
        model_type="mamba2", hidden_size=4096, num_hidden_layers=64, vocab_size=32768, num_heads=128, head_dim=64,
        n_groups=8, state_size=128, expand=2, conv_kernel=4, tie_word_embeddings=False),
    # tiiuae/Falcon-H1-0.5B-Base shapes (mamba_d_ssm = mamba_n_heads x mamba_d_head)
    "Falcon-H1-0.5B": dict(
        model_type="falcon_h1", hidden_size=1024, num_hidden_layers=36, vocab_size=32784, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64, intermediate_size=2048, mamba_d_ssm=1536, mamba_n_heads=24,
        mamba_d_head=64, mamba_n_groups=1, mamba_d_state=128, mamba_d_conv=4, mamba_expand=2, mamba_rms_norm=False,
        mamba_proj_bias=False, projectors_bias=False, tie_word_embeddings=False),
}

#: Bundled real configs and transformers' totals for them.
BUNDLED = {
    "nvidia/Nemotron-H-56B-Base-8K": 56_324_350_464,
    "ai21labs/AI21-Jamba-1.5-Mini": 51_570_323_328,
    "tiiuae/falcon-mamba-7b": 7_272_665_088,
    "microsoft/phi-2": 2_779_683_840,
}

ALL = {**SYNTHETIC, **PUBLISHED, **{k: load_bundled_config(k) for k in BUNDLED}}
FAMILIES = {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "nemotron_h", "jamba", "falcon_h1", "mamba",
            "falcon_mamba", "mamba2", "bamba", "granitemoehybrid", "lfm2", "phi", "olmo_hybrid", "minimax",
            "lfm3", "bailing_hybrid", "lfm2_moe", "kimi_linear"}


def spec_of(cfg):
    return parse_config(dict(cfg), where="config.json")


# ---- parameters ----------------------------------------------------------------------------------


def test_every_family_is_covered():
    assert {c["model_type"] for c in ALL.values()} == FAMILIES
    for fam in FAMILIES:
        assert sum(c["model_type"] == fam for c in SYNTHETIC.values()) >= 1


@pytest.mark.parametrize("model_id,total", BUNDLED.items())
def test_bundled_totals_are_exact(model_id, total):
    assert count_params(spec_of(load_bundled_config(model_id))).total == total


def test_published_totals():
    """Figures published with the checkpoints (safetensors headers, model cards)."""
    qwen = count_params(spec_of(PUBLISHED["Qwen3-Next-80B-A3B"]))
    assert (qwen.total, qwen.active) == (79_674_391_296, 3_874_929_408)
    assert count_params(spec_of(PUBLISHED["LFM2-1.2B"])).total == 1_170_340_608


@pytest.mark.parametrize("name", ALL)
def test_total_matches_transformers(name):
    cfg = ALL[name]
    assert count_params(spec_of(cfg)).total == hf_param_count(cfg)


def hf_active(cfg) -> int:
    """Unique parameters minus the routed experts a token does not use: stacked ``.experts.``
    tensors ``(E, ...)`` count ``k/E`` of their size."""
    model = hf_model(cfg)
    k = cfg["num_experts_per_tok"] if "num_experts_per_tok" in cfg else cfg["num_experts_per_token"]  # Kimi's name
    seen, n = set(), 0
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if ".experts." in name and p.dim() == 3:
            e = p.shape[0]
            assert p.numel() % e == 0
            n += p.numel() // e * k
        else:
            n += p.numel()
    return n


MOE = [name for name, cfg in ALL.items() if any(isinstance(layer.ffn, MoE) for layer in spec_of(cfg).layers)]


@pytest.mark.parametrize("name", MOE)
def test_active_matches_transformers(name):
    assert len(MOE) >= 8
    cfg = ALL[name]
    assert count_params(spec_of(cfg)).active == hf_active(cfg)


def test_dense_models_are_all_active():
    for name, cfg in ALL.items():
        if name not in MOE:
            p = count_params(spec_of(cfg))
            assert p.active == p.total, name


def test_layer_structure():
    nem = spec_of(SYNTHETIC["nemotron_h/list+moe+bias"])
    assert [layer.kind for layer in nem.layers] == ["mamba-only", "mlp-only+moe", "full-nope-only", "mamba-only",
                                                    "mlp-only", "mlp-only+moe"]
    assert all(len(layer.norms) == 1 for layer in nem.layers)
    q = spec_of(SYNTHETIC["qwen3_next/base"])
    assert [type(layer.mixer) for layer in q.layers] == [GatedDeltaNet] * 3 + [GatedAttention]
    assert q.layers[3].mixer.rotary_dim == 4  # partial_rotary_factor 0.25 of head_dim 16
    h1 = spec_of(SYNTHETIC["falcon_h1/base"])
    assert all(isinstance(layer.mixer, ParallelHybrid) for layer in h1.layers)
    jam = spec_of(SYNTHETIC["jamba/moe"])
    assert [type(layer.mixer) for layer in jam.layers] == [Mamba, Attention, Mamba, Attention]
    assert [isinstance(layer.ffn, MoE) for layer in jam.layers] == [True, False, True, False]
    lfm = spec_of(SYNTHETIC["lfm2/idxs+bias+untied"])
    assert [type(layer.mixer) for layer in lfm.layers] == [ShortConv, Attention, ShortConv, Attention]
    phi = spec_of(load_bundled_config("microsoft/phi-2"))
    assert phi.layers[0].parallel and phi.lm_head_bias and phi.layers[0].mixer.rotary_dim == 32


def test_nemotron_attention_head_dim_is_the_head_dim():
    """The original Nemotron-H configs (remote code) name it ``attention_head_dim``; transformers 5
    reads only ``head_dim`` (class default 128). We read the checkpoint's own field."""
    cfg = dict(SYNTHETIC["nemotron_h/legacy_names"])
    legacy = {k: v for k, v in cfg.items() if k != "head_dim"}
    legacy["attention_head_dim"] = cfg["head_dim"]
    assert spec_of(legacy).layers == spec_of(cfg).layers
    assert spec_of({**legacy, "head_dim": 16}).layers[3].mixer.head_dim == 16  # head_dim wins when both are given


# ---- recurrent state -----------------------------------------------------------------------------


def expected_state(cfg) -> list[tuple[int, int]]:
    """(conv, recurrent) elements per layer from the published definitions (vLLM's shapes), read
    straight from the config fields."""
    mt, h = cfg["model_type"], cfg["hidden_size"]
    n = cfg.get("num_hidden_layers")

    def m2(d_inner, groups, state, heads, head_dim, kernel):
        return (d_inner + 2 * groups * state) * (kernel - 1), heads * head_dim * state

    if mt == "mamba2":
        return [m2(cfg["expand"] * h, cfg["n_groups"], cfg["state_size"], cfg["num_heads"], cfg["head_dim"],
                   cfg["conv_kernel"])] * n
    if mt in ("mamba", "falcon_mamba"):
        d = cfg.get("intermediate_size", cfg["expand"] * h)
        return [(d * (cfg["conv_kernel"] - 1), d * cfg["state_size"])] * n
    if mt == "jamba":
        d = cfg.get("mamba_expand", 2) * h
        st = (d * (cfg.get("mamba_d_conv", 4) - 1), d * cfg.get("mamba_d_state", 16))
        return [(0, 0) if i % cfg["attn_layer_period"] == cfg["attn_layer_offset"] else st for i in range(n)]
    if mt == "nemotron_h":
        pattern = cfg.get("hybrid_override_pattern") or "".join(
            {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}[t] for t in cfg["layers_block_type"])
        heads, hd = cfg["mamba_num_heads"], cfg["mamba_head_dim"]
        groups = cfg.get("n_groups", cfg.get("mamba_n_groups"))
        kernel = cfg.get("conv_kernel", cfg.get("mamba_d_conv"))
        st = m2(heads * hd, groups, cfg["ssm_state_size"], heads, hd, kernel)
        return [st if ch == "M" else (0, 0) for ch in pattern]
    if mt in ("bamba", "granitemoehybrid", "falcon_h1"):
        d = cfg.get("mamba_d_ssm") or cfg.get("mamba_expand", 2) * h
        heads = cfg["mamba_n_heads"]
        st = m2(d, cfg["mamba_n_groups"], cfg["mamba_d_state"], heads, d // heads, cfg["mamba_d_conv"])
        if mt == "falcon_h1":
            return [st] * n
        if mt == "bamba":
            return [(0, 0) if i in cfg.get("attn_layer_indices", []) else st for i in range(n)]
        types = cfg.get("layer_types", ["mamba"] * n)
        return [st if t in ("mamba", "linear_attention") else (0, 0) for t in types]
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        kh, vh, kd, vd = (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"],
                          cfg["linear_value_head_dim"])
        st = ((2 * kh * kd + vh * vd) * (cfg["linear_conv_kernel_dim"] - 1), vh * vd * kd)
        types = cfg.get("layer_types") or ["full_attention" if (i + 1) % cfg.get("full_attention_interval", 4) == 0
                                           else "linear_attention" for i in range(n)]
        return [st if t == "linear_attention" else (0, 0) for t in types]
    if mt == "olmo_hybrid":
        kh, vh = cfg.get("linear_num_key_heads", cfg["num_attention_heads"]), cfg.get("linear_num_value_heads",
                                                                                      cfg["num_attention_heads"])
        kd = cfg.get("linear_key_head_dim", int(0.75 * h / kh))
        vd = cfg.get("linear_value_head_dim", 2 * kd)
        st = ((2 * kh * kd + vh * vd) * (cfg.get("linear_conv_kernel_dim", 4) - 1), vh * vd * kd)
        types = cfg.get("layer_types") or ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
        return [st if t == "linear_attention" else (0, 0) for t in types]
    if mt == "minimax":
        heads = cfg["num_attention_heads"]
        d = cfg.get("head_dim") or h // heads
        types = cfg.get("layer_types") or ["full_attention" if i % 2 == 0 else "linear_attention" for i in range(n)]
        return [(0, heads * d * d) if t == "linear_attention" else (0, 0) for t in types]
    if mt in ("lfm2", "lfm2_moe"):
        types = cfg.get("layer_types") or ["full_attention" if i in cfg["full_attn_idxs"] else "conv"
                                           for i in range(n)]
        return [(h * (cfg["conv_L_cache"] - 1), 0) if t == "conv" else (0, 0) for t in types]
    if mt == "bailing_hybrid":
        heads, d, k = cfg["num_attention_heads"], cfg.get("head_dim", 128), cfg.get("short_conv_kernel_size", 4)
        types = cfg.get("layer_types") or ["full_attention" if (i + 1) % 6 == 0 else "linear_attention"
                                           for i in range(n)]
        return [(3 * heads * d * (k - 1), heads * d * d) if t == "linear_attention" else (0, 0) for t in types]
    if mt == "kimi_linear":  # linear_attn_config (1-indexed layer lists, heads, head dim, kernel) over the fields
        lac = cfg.get("linear_attn_config", {})
        heads = lac.get("num_heads", cfg.get("linear_num_heads", 32))
        d = lac.get("head_dim", cfg.get("linear_head_dim", 128))
        k = lac.get("short_conv_kernel_size", cfg.get("linear_conv_kernel_dim", 4))
        types = cfg.get("layer_types") or (
            ["full_attention" if i + 1 in lac["full_attn_layers"] else "linear_attention" for i in range(n)]
            if "full_attn_layers" in lac else
            ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)])
        return [(3 * heads * d * (k - 1), heads * d * d) if t == "linear_attention" else (0, 0) for t in types]
    if mt == "lfm3":
        types = cfg.get("layer_types") or ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0
                                           and i > 0 else "conv" for i in range(n)]
        return [(h * (cfg["conv_L_cache"] - 1), 0) if t == "conv" else (0, 0) for t in types]
    if mt == "phi":
        return [(0, 0)] * n
    raise AssertionError(mt)


def recurrent_bits(cfg, state_dtype) -> int:
    """Bits per element of the recurrent (temporal) state as vLLM allocates it (vllm/model_executor/layers/mamba/
    mamba_utils.py MambaStateDtypeCalculator; models/config.py's verify_and_update_config hooks): KDA's always
    fp32 (kda_state_dtype); NemotronH's mamba_ssm_cache_dtype from the config, float32 when absent; Qwen3.5's
    the config's mamba_ssm_dtype; else the state dtype (the conv window's, always)."""
    fixed = {"kimi_linear": "float32", "bailing_hybrid": "float32",
             "nemotron_h": cfg.get("mamba_ssm_cache_dtype", "float32")}.get(cfg["model_type"])
    if cfg["model_type"] in ("qwen3_5_text", "qwen3_5_moe_text"):
        fixed = cfg.get("mamba_ssm_dtype")
    return {"float32": 32, "bfloat16": 16, "float16": 16, None: state_dtype.bits}[fixed]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("state_dtype", [BF16, FP32])
def test_state_bytes_match_published_shapes(name, state_dtype):
    cfg = ALL[name]
    spec = spec_of(cfg)
    cache = kv_cache(spec, BF16, state_dtype)
    want = [(conv * state_dtype.bits + rec * recurrent_bits(cfg, state_dtype)) // 8
            for conv, rec in expected_state(cfg)]
    assert [lk.state_bytes for lk in cache.layers] == want
    assert cache.state_bytes_per_sequence == sum(want)
    # independent of context: the state does not grow, K/V does
    assert cache.bytes_per_sequence(0) == 0


@pytest.mark.parametrize("name", ALL)
def test_attention_layers_cache_kv(name):
    spec = spec_of(ALL[name])
    cache = kv_cache(spec, BF16, BF16)
    for lk, layer in zip(cache.layers, spec.layers):
        m = layer.mixer
        attn = m.attention if isinstance(m, ParallelHybrid) else m
        if isinstance(attn, Attention):
            assert lk.bytes_per_token == 2 * attn.num_key_value_heads * 2 * attn.head_dim
        elif isinstance(attn, MLA):  # Ling 3: the latent and the rope key
            assert lk.bytes_per_token == 2 * (attn.kv_lora_rank + attn.qk_rope_head_dim)
        else:
            assert lk.bytes_per_token == 0


def test_bundled_state_sizes():
    """Nemotron-H-56B: 54 Mamba-2 layers of conv (16384 + 2·8·256)·3 in bf16 and 256·64·256 state in fp32 (vLLM's
    NemotronH hook: mamba_ssm_cache_dtype, absent from this config, defaults to float32)."""
    nem = kv_cache(spec_of(load_bundled_config("nvidia/Nemotron-H-56B-Base-8K")), BF16, BF16)
    assert nem.state_bytes_per_sequence == 54 * (2 * (16384 + 2 * 8 * 256) * 3 + 4 * 256 * 64 * 256)
    assert nem.bytes_per_token == 10 * 2 * 8 * 2 * 128
    fm = kv_cache(spec_of(load_bundled_config("tiiuae/falcon-mamba-7b")), BF16, BF16)
    assert fm.state_bytes_per_sequence == 64 * 2 * (8192 * 3 + 8192 * 16) and fm.bytes_per_token == 0
    jam = kv_cache(spec_of(load_bundled_config("ai21labs/AI21-Jamba-1.5-Mini")), BF16, BF16)
    assert jam.state_bytes_per_sequence == 28 * 2 * (8192 * 3 + 8192 * 16)
    assert jam.bytes_per_token == 4 * 2 * 8 * 2 * 128


# ---- trace ---------------------------------------------------------------------------------------


def ops_of(cfg, **kw):
    spec = spec_of(cfg)
    fmt, _ = weight_format(spec)
    return spec, fmt, step_ops(spec, fmt, BF16, **kw)


@pytest.mark.parametrize("name", ALL)
def test_state_traffic_equals_state_bytes(name):
    spec, fmt, ops = ops_of(ALL[name], batch=3, new_tokens=1, cached_tokens=7)
    per_seq = kv_cache(spec, BF16, fmt.act).state_bytes_per_sequence
    assert sum(o.state_read_bytes for o in ops) == 3 * per_seq
    assert sum(o.state_write_bytes for o in ops) == 3 * per_seq
    # a fresh prompt starts from a zero state: written, not read
    _, _, prefill = ops_of(ALL[name], batch=2, new_tokens=5, cached_tokens=0)
    assert sum(o.state_read_bytes for o in prefill) == 0
    assert sum(o.state_write_bytes for o in prefill) == 2 * per_seq
    # a continued prefill (chunked) reads it once and writes it once
    _, _, chunk = ops_of(ALL[name], batch=2, new_tokens=5, cached_tokens=9)
    assert sum(o.state_read_bytes for o in chunk) == sum(o.state_write_bytes for o in chunk) == 2 * per_seq


@pytest.mark.parametrize("name", ALL)
def test_op_figures_are_ints_and_prefill_of_one_token_is_decode(name):
    cfg = ALL[name]
    _, _, ops = ops_of(cfg, batch=2, new_tokens=1, cached_tokens=5)
    assert all(isinstance(getattr(o, f), int) and getattr(o, f) >= 0 for o in ops
               for f in ("flops", "weight_bytes", "act_read_bytes", "state_read_bytes", "state_write_bytes"))
    spec = spec_of(cfg)
    assert analyze(spec, Options(context=1)).prefill_flops == analyze(spec, Options(context=0)).decode_flops


@pytest.mark.parametrize("name", [n for n in ALL if n not in MOE])
def test_every_weight_is_read_once_per_decode_step(name):
    """Dense models: a decode step reads every tensor once, the embedding table one row per token
    (and again in full as the lm_head when tied)."""
    spec, fmt, ops = ops_of(ALL[name], batch=1, new_tokens=1, cached_tokens=3)
    emb = spec.embedding_tensors()
    row = fmt.bytes_of(emb) // emb[0].shape[0]
    want = fmt.bytes_of(spec.tensors()) - fmt.bytes_of(emb) + row
    if spec.tie_word_embeddings:
        want += fmt.bytes_of(emb)
    assert sum(o.weight_bytes for o in ops) == want


def layer_ops(ops, i):
    return {o.name: o for o in ops if o.layer == i}


def test_mamba2_ops_and_formulas():
    cfg = SYNTHETIC["nemotron_h/pattern"]  # layer 0: Mamba-2, 8 heads x 16, 2 groups, N 8, kernel 4
    n, b = 5, 2
    _, _, ops = ops_of(cfg, batch=b, new_tokens=n, cached_tokens=3)
    lo = layer_ops(ops, 0)
    assert list(lo) == ["norm", "in_proj", "conv1d", "ssm_scan", "gated_norm", "out_proj", "residual"]
    tok, d, conv_dim = b * n, 8 * 16, 8 * 16 + 2 * 2 * 8
    assert lo["in_proj"].flops == 2 * tok * 64 * (2 * d + 2 * 2 * 8 + 8)
    assert lo["conv1d"].flops == 2 * tok * conv_dim * 4
    assert lo["conv1d"].state_read_bytes == lo["conv1d"].state_write_bytes == b * conv_dim * 3 * 2
    assert lo["ssm_scan"].flops == 4 * tok * 8 * 16 * 8
    assert lo["ssm_scan"].state_write_bytes == b * 8 * 16 * 8 * 4  # NemotronH's SSM state: fp32 (vLLM's hook)
    assert lo["ssm_scan"].act_read_bytes == tok * (conv_dim + 8) * 2
    assert lo["gated_norm"].act_read_bytes == 2 * tok * d * 2 and lo["gated_norm"].weight_bytes == d * 2
    assert lo["out_proj"].flops == 2 * tok * d * 64
    assert list(layer_ops(ops, 1)) == ["norm", "up_proj", "act", "down_proj", "residual"]  # '-' layer


def test_mamba1_ops_and_formulas():
    cfg = load_bundled_config("tiiuae/falcon-mamba-7b")
    _, _, ops = ops_of(cfg, batch=1, new_tokens=1, cached_tokens=100)
    lo = layer_ops(ops, 0)
    assert list(lo) == ["norm", "in_proj", "conv1d", "x_proj", "dt_bc_norm", "dt_proj", "ssm_scan", "gate",
                        "out_proj", "residual"]
    assert lo["x_proj"].flops == 2 * 8192 * (256 + 32)
    assert lo["dt_proj"].flops == 2 * 256 * 8192
    assert lo["ssm_scan"].flops == 4 * 8192 * 16
    assert lo["dt_bc_norm"].weight_bytes == 0  # Falcon-Mamba's dt/B/C norms have no weights
    jam = layer_ops(ops_of(SYNTHETIC["jamba/moe"], new_tokens=1, cached_tokens=1)[2], 0)
    assert jam["dt_bc_norm"].weight_bytes == 2 * (4 + 2 * 8)  # Jamba: dt_rank 4 (auto: 64/16), B and C (8 each)
    # decode FLOPs of a pure Mamba model = 2 x matmul weights (lm_head included) + conv taps + scan
    spec = spec_of(cfg)
    w = sum(t.numel for t in spec.tensors() if t.kind in ("linear", "lm_head"))
    m = spec.layers[0].mixer
    per_layer = 2 * m.conv_dim * m.conv_kernel + 4 * m.intermediate_size * m.state_size
    assert sum(o.flops for o in ops) == 2 * w + spec.num_layers * per_layer


def test_gdn_and_gated_attention_ops():
    cfg = SYNTHETIC["qwen3_next/base"]  # GDN: k heads 2 x 8, v heads 4 x 8, kernel 4; attention 4 x 16
    n = 3
    _, _, ops = ops_of(cfg, batch=1, new_tokens=n, cached_tokens=2)
    gdn = layer_ops(ops, 0)
    assert list(gdn)[:7] == ["input_layernorm", "in_proj_qkvz", "in_proj_ba", "conv1d", "delta_rule", "gated_norm",
                             "out_proj"]
    conv_dim = 2 * 2 * 8 + 4 * 8
    assert gdn["conv1d"].flops == 2 * n * conv_dim * 4
    assert gdn["delta_rule"].flops == 6 * n * 4 * 8 * 8
    assert gdn["delta_rule"].state_write_bytes == 4 * 8 * 8 * 2
    assert gdn["gated_norm"].weight_bytes == 8 * 2
    att = layer_ops(ops, 3)
    names = list(att)
    assert names.index("attention") < names.index("output_gate") < names.index("o_proj")
    assert att["q_proj"].flops == 2 * n * 64 * 2 * 4 * 16  # q and its gate
    assert att["output_gate"].act_read_bytes == n * 2 * 4 * 16 * 2
    assert {"router", "shared_expert_gate", "shared_expert.down_proj"} <= set(att)
    # Qwen3.5: the same projections as four matmuls, the same FLOPs in total
    split = layer_ops(ops_of(SYNTHETIC["qwen3_5_text/base"], batch=1, new_tokens=n, cached_tokens=2)[2], 0)
    assert list(split)[:8] == ["input_layernorm", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "conv1d",
                               "delta_rule", "gated_norm"]
    assert sum(split[k].flops for k in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")) == \
        gdn["in_proj_qkvz"].flops + gdn["in_proj_ba"].flops
    assert split["in_proj_qkv"].flops == 2 * n * 64 * conv_dim


def test_kimi_linear_layout_and_ops():
    """Kimi Linear: linear_attn_config over the linear_* fields; KDA with rank-d forget and output gates (their
    down projections whole on every tensor-parallel rank); MLA whose shared key slice is cached, never rotated."""
    from planner.analysis.mixers import KimiDeltaAttention
    from planner.analysis.parallel import replicated_tensor

    cfg = SYNTHETIC["kimi_linear/saved-names+linear_attn_config"]
    spec = spec_of(cfg)
    kda, mla = spec.layers[1].mixer, spec.layers[0].mixer
    assert isinstance(kda, KimiDeltaAttention) and isinstance(mla, MLA) and spec.layers[2].mixer == mla
    assert (kda.num_v_heads, kda.head_k_dim, kda.conv_kernel, kda.gate_rank) == (3, 8, 3, 8)
    assert not mla.rope and mla.rope_tables() == () and mla.kv_elements_per_token() == 16 + 4
    assert [isinstance(layer.ffn, MoE) for layer in spec.layers] == [False, False, True, True]
    assert not spec.tie_word_embeddings
    names = {t.name.split("self_attn.")[1]: t for t in spec.layers[1].tensors("model.layers.1")
             if "self_attn." in t.name}
    assert names["forget_gate.f_a_proj.weight"].shape == (8, 64) and names["g_b_proj.weight"].shape == (24, 8)
    assert names["conv1d.weight"].shape == (72, 1, 3) and "g_proj.weight" not in names
    assert replicated_tensor(names["forget_gate.f_a_proj.weight"]) and replicated_tensor(names["g_a_proj.weight"])
    assert not replicated_tensor(names["forget_gate.f_b_proj.weight"])
    n = 3
    _, _, ops = ops_of(cfg, batch=1, new_tokens=n, cached_tokens=2)
    lin, full = layer_ops(ops, 1), layer_ops(ops, 0)
    assert lin["f_a_proj"].flops == lin["g_a_proj"].flops == 2 * n * 64 * 8
    assert lin["f_b_proj"].flops == lin["g_b_proj"].flops == 2 * n * 8 * 24
    assert lin["conv1d"].flops == 2 * n * 72 * 3 and lin["delta_rule"].flops == 6 * n * 3 * 8 * 8
    assert "rope" not in full and "kv_a_proj_with_mqa" in full
    ling = layer_ops(ops_of(SYNTHETIC["bailing_hybrid/defaults"], new_tokens=n)[2], 5)
    assert "rope" in ling  # Ling 3's MLA rotates


def test_short_conv_and_parallel_hybrid_ops():
    lfm = layer_ops(ops_of(SYNTHETIC["lfm2/layer_types"], batch=2, new_tokens=1, cached_tokens=4)[2], 0)
    assert list(lfm)[:6] == ["operator_norm", "in_proj", "B·x", "conv", "C·y", "out_proj"]
    assert lfm["conv"].flops == 2 * 2 * 64 * 3
    assert lfm["conv"].state_read_bytes == lfm["conv"].state_write_bytes == 2 * 64 * 2 * 2
    h1 = layer_ops(ops_of(SYNTHETIC["falcon_h1/base"], batch=1, new_tokens=1, cached_tokens=4)[2], 0)
    names = list(h1)
    for op in ("q_proj", "attention", "kv_append", "in_proj", "conv1d", "ssm_scan", "gate", "branch_sum",
               "gate_proj"):
        assert op in names, op
    assert names.index("o_proj") < names.index("in_proj") < names.index("branch_sum") < names.index("gate_proj")
    assert h1["kv_append"].kv_write_bytes == 2 * 2 * 16 * 2


def test_recurrent_prefill_is_linear_in_tokens():
    """The recurrent-form FLOPs of the SSM / GDN / conv ops grow linearly with the prompt."""
    for name in ("nemotron_h/pattern", "qwen3_next/base", "lfm2/layer_types", "jamba/moe"):
        one = ops_of(SYNTHETIC[name], new_tokens=1)[2]
        many = ops_of(SYNTHETIC[name], new_tokens=9)[2]
        for a, b in zip(one, many):
            if a.kind in ("scan", "conv"):
                assert b.flops == 9 * a.flops, (name, a.name)


# ---- errors --------------------------------------------------------------------------------------

BAD = [
    ("nemotron_h/pattern", dict(hybrid_override_pattern="M-X*-"), "hybrid_override_pattern"),
    ("nemotron_h/pattern", dict(num_hidden_layers=6), "hybrid_override_pattern"),
    ("nemotron_h/list+moe+bias", dict(moe_latent_size=0), "moe_latent_size"),  # (a width: tests/test_nemotron3_latent_moe.py)
    ("nemotron_h/list+moe+bias", dict(mlp_bias=True), "mlp_bias"),
    ("nemotron_h/pattern", dict(tie_word_embeddings=True), "tie_word_embeddings"),
    ("nemotron_h/pattern", dict(attention_bias=True), "attention_bias"),
    ("nemotron_h/pattern", dict(n_groups=3), "n_groups"),
    ("nemotron_h/list+moe+bias", dict(layers_block_type=["mamba", "sparse"]), "layers_block_type"),
    ("nemotron_h/list+moe+bias", dict(num_experts_per_tok=7), "num_experts_per_tok"),
    ("mamba2/groups", dict(head_dim=8), "head_dim"),
    ("mamba2/groups", dict(conv_kernel="4"), "conv_kernel"),
    ("falcon_h1/base", dict(mamba_d_ssm=100), "mamba_d_head"),
    ("falcon_h1/base", dict(mamba_d_ssm=None), "mamba_d_head"),
    ("bamba/attn_indices", dict(mamba_d_head=7), "mamba_d_head"),
    ("granitemoehybrid/moe+rope", dict(layer_types=["mamba", "attention", "mamba"]), "layer_types"),
    ("granitemoehybrid/moe+rope", dict(layer_types=["mamba", "conv", "mamba", "mamba"]), "layer_types"),
    ("granitemoehybrid/dense+tied", dict(shared_intermediate_size=0), "shared_intermediate_size"),
    ("jamba/moe", dict(attn_layer_offset=2), "attn_layer_offset"),
    ("jamba/moe", dict(num_experts_per_tok=5), "num_experts_per_tok"),
    ("qwen3_next/base", dict(linear_num_value_heads=3), "linear_num_value_heads"),
    ("qwen3_next/base", dict(layer_types=["linear_attention"] * 3), "layer_types"),
    ("qwen3_next/base", dict(num_key_value_heads=3), "num_key_value_heads"),
    ("qwen3_next/base", dict(shared_expert_intermediate_size=0), "shared_expert_intermediate_size"),
    ("qwen3_5_text/base", dict(linear_num_key_heads=3), "linear_num_value_heads"),
    ("qwen3_5_moe_text/base", dict(num_experts_per_tok=7), "num_experts_per_tok"),
    ("lfm2/layer_types", dict(layer_types=["conv", "mamba", "conv", "conv"]), "layer_types"),
    ("lfm3/layer_types+plain", dict(layer_types=["full_attention", "conv", "attention", "conv"]), "layer_types"),
    # LFM3 reads RoPE per attention type: a flat block does not build in transformers; scaled RoPE is not modelled
    ("lfm3/defaults", dict(rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "rope_parameters"),
    ("lfm3/layer_types+plain", dict(rope_parameters={
        "full_attention": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}), "rope_parameters.full_attention"),
    ("phi/base", dict(tie_word_embeddings=True), "tie_word_embeddings"),
    ("mamba/tied_default", dict(state_size=0), "state_size"),
    # Kimi Linear: linear_attn_config's 1-indexed layer lists must name every layer, within range
    ("kimi_linear/saved-names+linear_attn_config", dict(linear_attn_config={"full_attn_layers": [1],
                                                                           "kda_layers": [2, 4]}),
     "linear_attn_config"),
    ("kimi_linear/saved-names+linear_attn_config", dict(linear_attn_config={"full_attn_layers": [0, 1],
                                                                           "kda_layers": [2, 3, 4]}),
     "linear_attn_config"),
    ("kimi_linear/saved-names+linear_attn_config", dict(linear_attn_config={"head_dim": 0}), "linear_attn_config"),
    ("kimi_linear/layer_types+mlp_layer_types", dict(mlp_layer_types=["sparse", "moe", "sparse"]), "mlp_layer_types"),
]


@pytest.mark.parametrize("base,change,field", BAD)
def test_unsupported_or_invalid_configs_raise_one_line_config_errors(base, change, field):
    with pytest.raises(ConfigError) as exc:
        spec_of({**SYNTHETIC[base], **change})
    msg = str(exc.value)
    assert "\n" not in msg and "config.json" in msg and f"'{field}'" in msg, msg


# ---- CLI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", ["nvidia/Nemotron-H-56B-Base-8K", "ai21labs/AI21-Jamba-1.5-Mini",
                                      "tiiuae/falcon-mamba-7b", "microsoft/phi-2"])
def test_cli_analyze_json(model_id):
    import json

    from typer.testing import CliRunner

    from planner.cli.app import app

    r = CliRunner().invoke(app, ["analyze", model_id, "--json", "--context", "1024"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["params"]["total"] == BUNDLED[model_id]
    cache = kv_cache(spec_of(load_bundled_config(model_id)), BF16, BF16)
    assert d["kv_cache"]["state_bytes_per_sequence"] == cache.state_bytes_per_sequence


def test_cli_models_list_counts_every_covered_family():
    import json

    from typer.testing import CliRunner

    from planner.cli.app import app

    r = CliRunner().invoke(app, ["models", "list", "--json"])
    assert r.exit_code == 0, r.output
    rows = [m for m in json.loads(r.stdout)["models"] if m["model_type"] in FAMILIES]
    assert rows and all(isinstance(m["total_params"], int) and m["total_params"] > 0 for m in rows), rows


CACHE_CHECK = ["mamba/tied_default", "falcon_mamba/expand", "mamba2/groups", "nemotron_h/pattern", "jamba/moe",
               "falcon_h1/base", "bamba/attn_indices", "granitemoehybrid/moe+rope", "qwen3_next/base",
               "qwen3_5_text/base", "qwen3_5_moe_text/base", "lfm2/layer_types", "olmo_hybrid/defaults",
               "olmo_hybrid/widths+layer_types", "lfm3/defaults", "lfm3/layer_types+plain",
               "bailing_hybrid/defaults", "bailing_hybrid/saved-names+layer_types", "kimi_linear/defaults",
               "kimi_linear/saved-names+linear_attn_config", "kimi_linear/layer_types+mlp_layer_types"]


@pytest.mark.parametrize("name", CACHE_CHECK)
def test_state_matches_transformers_cache(name):
    """A second, independent source: the tiny model run by transformers on CPU for 3 tokens keeps,
    per layer, a conv state of ``conv_kernel`` columns (its convention; ours keeps ``kernel - 1``)
    and a recurrent state of exactly our shape."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="needs transformers (dev extra)")
    import warnings

    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(SYNTHETIC[name])
    mt = cfg.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(mt, **cfg)).eval()
        with torch.no_grad():
            cache = model(torch.tensor([[1, 2, 3]]), use_cache=True).past_key_values
    if not hasattr(cache, "get_conv_state"):
        pytest.skip("this transformers version has no per-layer conv/recurrent state API")
    spec = spec_of(SYNTHETIC[name])
    for i, (lk, layer) in enumerate(zip(kv_cache(spec, FP32, FP32).layers, spec.layers)):
        try:
            conv, rec = cache.get_conv_state(i), cache.get_recurrent_state(i)
        except ValueError:  # transformers refuses the question for an attention / MLP layer
            conv = rec = None
        if lk.state_bytes == 0:
            assert conv is None and rec is None, i
            continue
        m = layer.mixer.mamba if isinstance(layer.mixer, ParallelHybrid) else layer.mixer
        assert conv.shape[0] == 1 and conv.shape[-1] == m.conv_kernel
        want = conv.numel() // m.conv_kernel * (m.conv_kernel - 1) + (rec.numel() if rec is not None else 0)
        assert lk.state_bytes == 4 * want, i


def hf_decode_flops(cfg: dict, attn: str):
    """(transformers' model, FlopCounterMode over its decode of one token after a 5-token prefill) (eager
    experts: only the routed experts run; ``attn``: its attention implementation)."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="needs transformers (dev extra)")
    import warnings

    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(cfg)
    mt = cfg.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(mt, **cfg), attn_implementation=attn,
                                                 experts_implementation="eager").eval()
        with torch.no_grad():
            past = model(torch.tensor([[1, 2, 3, 4, 5]]), use_cache=True).past_key_values
            counter = flop_counter(model)
            with counter:
                model(torch.tensor([[6]]), past_key_values=past, use_cache=True)
    return model, counter


@pytest.mark.parametrize("name", ["qwen3_next/base", "qwen3_5_text/base", "qwen3_5_moe_text/base",
                                  "olmo_hybrid/defaults", "olmo_hybrid/widths+layer_types", "lfm3/defaults",
                                  "lfm3/layer_types+plain"])
def test_decode_flops_match_transformers(name):
    """FlopCounterMode over transformers' own decode step (eager attention, eager experts: only the routed
    experts run), after a 5-token prefill: its matmuls (``aten.mm``) are our matmul, router and expert ops,
    its attention ``aten.bmm`` our attention op. (Its reference causal-conv update convolves the kernel's
    window plus the new token, so the conv taps follow another convention and are left out.)"""
    _, counter = hf_decode_flops(SYNTHETIC[name], "eager")
    hf = {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}
    _, _, ops = ops_of(SYNTHETIC[name], batch=1, new_tokens=1, cached_tokens=5)
    assert hf["aten.mm"] + hf.get("aten.addmm", 0) == sum(o.flops for o in ops if o.kind in ("matmul", "router",
                                                                                              "experts"))
    assert hf["aten.bmm"] == sum(o.flops for o in ops if o.kind == "attention")


@pytest.mark.parametrize("name", [n for n in SYNTHETIC if n.startswith("kimi_linear/")])
def test_kimi_linear_decode_flops_match_transformers(name):
    """Kimi Linear's decode step after a 5-token prefill, per layer (FlopCounterMode's module breakdown): every
    KDA layer's matmuls (q/k/v, the rank-d forget and output gates, b_proj, o_proj) and every MLP / MoE's are
    ours exactly. (Its MLA layers run the expanded form where we count the absorbed decode, as for DeepSeek.)"""
    model, counter = hf_decode_flops(SYNTHETIC[name], "sdpa")
    counts = counter.get_flop_counts()
    _, _, ops = ops_of(SYNTHETIC[name], batch=1, new_tokens=1, cached_tokens=5)

    def hf_mm(i: int, module: str) -> int:
        (key,) = [k for k in counts if k.endswith(f"model.layers.{i}.{module}")]
        return sum(v for k, v in counts[key].items() if str(k) in ("aten.mm", "aten.addmm"))

    checked = 0
    for i, t in enumerate(model.config.layer_types):
        mixer = [o for o in ops if o.layer == i and o.category in ("ssm", "attention")]
        ffn = [o for o in ops if o.layer == i and o.kind in ("matmul", "router", "experts") and o not in mixer]
        assert hf_mm(i, "mlp") == sum(o.flops for o in ffn), i
        if t == "linear_attention":
            assert hf_mm(i, "self_attn") == sum(o.flops for o in mixer if o.kind == "matmul"), i
            checked += 1
    assert checked
