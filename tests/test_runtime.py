"""The torch runtime: parity with ``transformers``, exact FLOP / KV / parameter checks, loading, verify.

Tiny configs (hidden 64, 2 layers, vocab 128) of every family ``analyze`` reads; each test builds the
``transformers`` model with random weights in fp32, copies its state dict into our decoder and compares
logits (1e-4), checks that cached decode equals full recomputation, and that ``FlopCounterMode`` and the
allocated KV cache equal the analysis exactly. Skipped (saying why) without torch or transformers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the runtime tests need torch (pip install 'planner[runtime]')")

from planner.analysis.config import parse_config  # noqa: E402
from planner.analysis.errors import OptionError, RuntimeUnavailableError  # noqa: E402
from planner.analysis.families import VISION_COUNTED  # noqa: E402
from planner.analysis.kv import kv_cache  # noqa: E402
from planner.analysis.params import count_params  # noqa: E402
from planner.analysis.trace import step_ops  # noqa: E402
from planner.analysis.weights import weight_format  # noqa: E402
from planner.runtime.cache import KVCache  # noqa: E402
from planner.runtime.model import build_decoder, parameter_count, unique_parameters  # noqa: E402
from planner.runtime.timing import count_flops, time_steps  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

BASE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
            vocab_size=128, max_position_embeddings=256, rms_norm_eps=1e-6, torch_dtype="float32", pad_token_id=0)
NO_EPS = {k: v for k, v in BASE.items() if k != "rms_norm_eps"}

#: one tiny config per family; windows (8) and chunks (8) are shorter than the test sequences (20)
TINY: dict[str, dict] = {
    "llama": dict(BASE, model_type="llama", tie_word_embeddings=False, rope_theta=500000.0,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 64}),
    "mistral": dict(BASE, model_type="mistral", sliding_window=8, rope_theta=10000.0),
    "qwen2": dict(BASE, model_type="qwen2", tie_word_embeddings=True, rope_theta=10000.0),
    "qwen3": dict(BASE, model_type="qwen3", head_dim=32, rope_theta=10000.0),
    "gemma": dict(BASE, model_type="gemma", head_dim=16, num_key_value_heads=1, rope_theta=10000.0),
    "gemma2": dict(BASE, model_type="gemma2", head_dim=16, sliding_window=8, query_pre_attn_scalar=16, rope_theta=10000.0,
                   attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    "gemma3_text": dict(BASE, model_type="gemma3_text", head_dim=16, sliding_window=8, sliding_window_pattern=2,
                        query_pre_attn_scalar=16, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                        rope_scaling={"rope_type": "linear", "factor": 8.0}),
    "phi3": dict(BASE, model_type="phi3", num_key_value_heads=4, partial_rotary_factor=0.5, rope_theta=10000.0),
    "gpt_neox": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, vocab_size=128,
                     max_position_embeddings=256, model_type="gpt_neox", rotary_pct=0.25, use_parallel_residual=True,
                     layer_norm_eps=1e-5, rope_theta=10000.0, pad_token_id=0),
    "olmo2": dict(BASE, model_type="olmo2", rope_theta=10000.0),
    "starcoder2": dict(NO_EPS, model_type="starcoder2", sliding_window=8, use_bias=True, norm_epsilon=1e-5, rope_theta=10000.0),
    "falcon": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=128, model_type="falcon",
                   new_decoder_architecture=True, num_kv_heads=2, bias=False, parallel_attn=True, rope_theta=10000.0,
                   pad_token_id=0),
    "mixtral": dict(BASE, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2, rope_theta=1e6),
    "qwen2_moe": dict(BASE, model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=48, norm_topk_prob=False, rope_theta=10000.0),
    "qwen3_moe": dict(BASE, model_type="qwen3_moe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, norm_topk_prob=True, rope_theta=10000.0),
    "deepseek_v3": dict(BASE, model_type="deepseek_v3", num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16,
                        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1,
                        routed_scaling_factor=2.5, rope_theta=10000.0,
                        rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                      "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}),
    "deepseek_v2": dict(BASE, model_type="deepseek_v2", num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16,
                        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1,
                        topk_method="group_limited_greedy", rope_theta=10000.0),
    "gpt_oss": dict(BASE, model_type="gpt_oss", head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=8,
                    layer_types=["sliding_attention", "full_attention"], rope_theta=150000.0,
                    rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "truncate": False, "original_max_position_embeddings": 64}),
    "llama4_text": dict(BASE, model_type="llama4_text", head_dim=16, num_local_experts=4, num_experts_per_tok=1,
                        intermediate_size_mlp=96, attention_chunk_size=8, no_rope_layers=[1, 0],
                        interleave_moe_layer_step=1, rope_theta=500000.0),
}
TINY["cohere"] = dict(NO_EPS, model_type="cohere", use_qk_norm=True, logit_scale=0.5, layer_norm_eps=1e-5,
                      rope_theta=10000.0)
TINY["cohere2"] = dict(NO_EPS, model_type="cohere2", sliding_window=8, sliding_window_pattern=2, logit_scale=0.5,
                       layer_norm_eps=1e-5, rope_theta=10000.0)
# Cohere Compass's language model: Cohere 2's parallel block, RoPE per layer type (rotate-half M-RoPE on the sliding
# layers, NoPE full layers); IQuest-Coder: Llama
TINY["cohere_compass_text"] = dict(NO_EPS, model_type="cohere_compass_text", sliding_window=8, logit_scale=0.5,
                                   layer_norm_eps=1e-5, layer_types=["sliding_attention", "full_attention"] * (
                                       NO_EPS["num_hidden_layers"] // 2),
                                   rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 5e4,
                                                                          "mrope_interleaved": True,
                                                                          "mrope_section": [4, 2, 2]},
                                                    "full_attention": None})
TINY["iquestcoder"] = dict(BASE, model_type="iquestcoder", head_dim=16, rope_theta=10000.0)
GPT = dict(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5, pad_token_id=0)
TINY["gpt2"] = dict(GPT, model_type="gpt2", n_inner=96)
TINY["gpt_bigcode"] = dict(GPT, model_type="gpt_bigcode", multi_query=True)
TINY["gpt_bigcode-mha"] = dict(GPT, model_type="gpt_bigcode", multi_query=False)
TINY["gptj"] = dict(GPT, model_type="gptj", rotary_dim=8)
# CodeGen: GPT-J's block with the fused qkv_proj in 4 blocks of [q | v | k] rows (hidden 96: 24 rows a block, heads of
# 16 straddling the blocks), partial RoPE on pairs, an untied head with a bias
TINY["codegen"] = dict(GPT, model_type="codegen", n_embd=96, n_head=6, rotary_dim=8, n_inner=80)
# GPT-1: post-LN blocks (no final norm), learned positions, Conv1D weights stored (in, out); untied
TINY["openai-gpt"] = dict(GPT, model_type="openai-gpt", tie_word_embeddings=False)
# CTRL: the embedding scaled by sqrt(n_embd) plus a fixed sinusoidal table, biased q/k/v/o and relu MLP, the LM head
# tied to the embedding with a bias of its own (perturbed by hf_model)
TINY["ctrl"] = dict(GPT, model_type="ctrl", dff=80, layer_norm_epsilon=1e-6)
TINY["bloom"] = dict(vocab_size=128, hidden_size=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5, model_type="bloom",
                     pad_token_id=0)
TINY["bloom-6-heads"] = dict(TINY["bloom"], hidden_size=48, n_head=6)  # slopes past the nearest power of two
# GPT-NeoX Japanese: (heads, 3, d) fused rows, bias-free but for the last layer's dense_bias, RoPE on half of each
# head at its own base (rotary_emb_base), serial pre-LN blocks
TINY["gpt_neox_japanese"] = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_multiple_size=2, vocab_size=128, max_position_embeddings=64,
                                 rotary_pct=0.5, rotary_emb_base=5000, layer_norm_eps=1e-5,
                                 model_type="gpt_neox_japanese", pad_token_id=0)
TINY["gpt_neo"] = dict(vocab_size=128, max_position_embeddings=64, hidden_size=64, num_layers=2, num_heads=4,
                       window_size=8, attention_types=[[["global", "local"], 1]], layer_norm_epsilon=1e-5,
                       model_type="gpt_neo", pad_token_id=0)
# StableLM: LayerNorms with bias, qkv bias, per-head q/k LayerNorms, partial rotary (0.25 by default); and the
# parallel block (use_parallel_residual: no post_attention_layernorm)
TINY["stablelm"] = dict(NO_EPS, model_type="stablelm", use_qkv_bias=True, qk_layernorm=True, layer_norm_eps=1e-5,
                        rope_theta=10000.0)
TINY["stablelm-parallel"] = dict(NO_EPS, model_type="stablelm", use_parallel_residual=True, partial_rotary_factor=0.5,
                                 layer_norm_eps=1e-5, rope_theta=10000.0)
# PhiMoE: SparseMixer routing (a wide jitter band, so that its softmax spans several experts), LayerNorms with
# bias, attention and lm_head biases, longrope scaled by short_mscale
_LONGROPE = [1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0, 4.0]
TINY["phimoe"] = dict(BASE, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2, router_jitter_noise=0.3,
                      attention_bias=True, lm_head_bias=True, sliding_window=8, rope_theta=10000.0,
                      rope_scaling={"rope_type": "longrope", "short_factor": _LONGROPE,
                                    "long_factor": [2 * x for x in _LONGROPE], "short_mscale": 1.3, "long_mscale": 1.3,
                                    "original_max_position_embeddings": 64})
# MiniMax-M2: q/k RMSNorms over all heads' features, sigmoid router with its correction bias, rotary_dim
TINY["minimax_m2"] = dict(BASE, model_type="minimax_m2", head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                          rotary_dim=8, rope_theta=10000.0)
# Gated DeltaNet hybrids: layer 0 linear attention, layer 1 gated full attention (partial RoPE 0.25)
_GDN = dict(BASE, head_dim=16, full_attention_interval=2, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=16, linear_value_head_dim=8, linear_conv_kernel_dim=4, rope_theta=10000.0)
TINY["qwen3_next"] = dict(_GDN, model_type="qwen3_next", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                          shared_expert_intermediate_size=48, decoder_sparse_step=2)  # layer 0 dense, layer 1 MoE
TINY["qwen3_5_text"] = dict(_GDN, model_type="qwen3_5_text")
TINY["qwen3_5_moe_text"] = dict({k: v for k, v in _GDN.items() if k != "intermediate_size"},
                                model_type="qwen3_5_moe_text", num_experts=4, num_experts_per_tok=2,
                                moe_intermediate_size=32, shared_expert_intermediate_size=48)
# OPT: post-LN blocks with a projected (narrower) embedding, as opt-350m; pre-LN without biases or norm weights
OPT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=96,
           max_position_embeddings=64, pad_token_id=1, model_type="opt")
TINY["opt-post-ln-projected"] = dict(OPT, do_layer_norm_before=False, word_embed_proj_dim=32)
TINY["opt-pre-ln-no-bias-untied"] = dict(OPT, enable_bias=False, layer_norm_elementwise_affine=False,
                                         tie_word_embeddings=False)
# DBRX: nested attn_config / ffn_config; clip_qkv small enough to clip; the RoPE base given at the top level
# too (transformers 5 reads only that one)
DBRX = dict(model_type="dbrx", d_model=64, n_heads=4, n_layers=2, max_seq_len=256, vocab_size=128,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
            attn_config={"kv_n_heads": 2, "clip_qkv": 0.3, "rope_theta": 500000},
            ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2, "moe_normalize_expert_weights": 1.0})
TINY["dbrx"] = DBRX
TINY["dbrx-l2-normalized"] = dict(DBRX, n_layers=1, ffn_config=dict(DBRX["ffn_config"], moe_normalize_expert_weights=2.0))
# MPT: ALiBi with a fused bias-free Wqkv, bias-free LayerNorms, clip_qkv small enough to clip and its own softmax
# scale; 6 heads past a power of two (MPT's slopes, equal to BLOOM's at alibi_bias_max 8), untied. (transformers'
# MptModel never passes alibi_bias_max on, so another value is checked on the slopes alone, below)
MPT = dict(model_type="mpt", d_model=64, n_heads=4, n_layers=2, max_seq_len=64, vocab_size=128,
           attn_config={"clip_qkv": 0.3, "softmax_scale": 0.3})
TINY["mpt"] = MPT
TINY["mpt-6-heads-untied"] = dict(MPT, d_model=48, n_heads=6, tie_word_embeddings=False, attn_config={})
# ERNIE 4.5 MoE: layer 0 dense, layer 1 MoE with a shared expert; interleaved RoPE; biases (use_bias) everywhere;
# the softmax router's choice steered by its e_score_correction_bias parameter (perturbed by hf_model)
TINY["ernie4_5_moe"] = dict(BASE, model_type="ernie4_5_moe", moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
                            moe_num_shared_experts=1, moe_layer_start_index=1, use_bias=True, tie_word_embeddings=False,
                            rope_theta=500000.0)
# dots.llm1: layer 0 dense, layer 1 MoE (sigmoid, grouped, scaled) and sliding (from max_window_layers 1 on)
TINY["dots1"] = dict(BASE, model_type="dots1", head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1,
                     routed_scaling_factor=2.0, norm_topk_prob=True, sliding_window=8, max_window_layers=1,
                     rope_theta=10000.0)
# EXAONE MoE: layer 0 sliding (RoPE) and dense, layer 1 full (NoPE, as sliding_window is set) and MoE
TINY["exaone_moe"] = dict(BASE, model_type="exaone_moe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=32, num_shared_experts=1, first_k_dense_replace=1, sliding_window=8,
                          sliding_window_pattern=2, routed_scaling_factor=2.5, rope_theta=10000.0)
# Solar Open: both layers MoE (sigmoid router, grouped, scaled), q/k/v biases (transformers' Solar Open rotates
# the whole head whatever partial_rotary_factor says: its apply_rotary_pos_emb fails on a partial one)
TINY["solar_open"] = dict({k: v for k, v in BASE.items() if k != "intermediate_size"}, model_type="solar_open",
                          head_dim=16, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                          n_shared_experts=1, n_group=2, topk_group=1, routed_scaling_factor=1.5,
                          attention_bias=True, rope_theta=10000.0)
# Hunyuan: per-head q/k norms after RoPE, NTK-alpha RoPE (the published "dynamic" block with alpha); the MoE's
# shared MLP beside the experts, top-k per layer
_HUNYUAN_ROPE = {"type": "dynamic", "alpha": 1000.0, "factor": 1.0, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
                 "mscale_all_dim": 1.0}
TINY["hunyuan_v1_dense"] = dict(BASE, model_type="hunyuan_v1_dense", head_dim=16, rope_theta=10000.0,
                                rope_scaling=_HUNYUAN_ROPE)
TINY["hunyuan_v1_moe"] = dict(BASE, model_type="hunyuan_v1_moe", head_dim=16, num_experts=4, moe_topk=[2, 1],
                              attention_bias=True, rope_theta=10000.0, rope_scaling=_HUNYUAN_ROPE)
MOE = {"hunyuan_v1_moe", "solar_open", "dots1", "exaone_moe", "ernie4_5_moe", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "deepseek_v2", "gpt_oss", "llama4_text", "phimoe",
       "minimax_m2", "qwen3_next", "qwen3_5_moe_text", "dbrx", "gemma4_text-moe"}
# Gemma 4: a wide K = V full layer (proportional RoPE), the last two layers reading earlier layers' K/V (their
# MLPs double-wide), per-layer inputs; the MoE row adds the routed experts beside the dense MLP
GEMMA4 = dict(BASE, model_type="gemma4_text", head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
              attention_k_eq_v=True, sliding_window=8, num_hidden_layers=5, vocab_size_per_layer_input=128,
              layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "full_attention"], final_logit_softcapping=30.0,
              rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                               "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1000000.0}})
TINY["gemma4_text"] = dict(GEMMA4, num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_size_per_layer_input=8)
TINY["gemma4_text-moe"] = dict(GEMMA4, hidden_size_per_layer_input=0, enable_moe_block=True, num_experts=4,
                               top_k_experts=2, moe_intermediate_size=32)
# Gemma 4 unified's language model: Gemma 4's layers; its per-layer input and MoE fields are not read (never built)
TINY["gemma4_unified_text"] = dict(TINY["gemma4_text"], model_type="gemma4_unified_text", enable_moe_block=True,
                                   num_experts=4, top_k_experts=2, moe_intermediate_size=32)
#: cached decode against full recompute: fp32 summation-order noise only. Gemma 4's softmax scale is 1 over
#: RMS-normed q and k (scores up to ~head_dim, not ~sqrt(head_dim)), which makes that noise ~2e-5 here
#: (it matches transformers at 1e-4 either way)
DECODE_ATOL = {"gemma4_text": 5e-5, "gemma4_text-moe": 5e-5, "gemma4_unified_text": 5e-5}
# Plain decoders that are rows of Traits: a non-gated relu2 MLP (Arcee); xIELU with its learned scalars, per-head
# q/k norms and their own norm names (Apertus; 1.5 with a pruned lm_head); weightless LayerNorms and clip_qkv
# (OLMo-1); interleaved partial RoPE and a fused gate_up (GLM, GLM-4-0414 with post norms); an o_proj bias of its
# own (Seed-OSS); Granite's multipliers with post norms and multiplied logits (HyperCLOVAX); interleaved RoPE with
# biases (ERNIE 4.5, Helium); Granite MoE (top-k softmax, a fused shared MLP); EXAONE 3 and InternLM3 under their
# published field names; Gemma 2 without post norms (VaultGemma); CWM's default layer_types; Ministral 3's
# position-scaled queries (original_max_position_embeddings 4, so that the scale changes within the sequence)
_ROPE = {"rope_type": "default", "rope_theta": 10000.0}
TINY.update({
    "arcee": dict(BASE, model_type="arcee", mlp_bias=True, rope_theta=10000.0),
    # LayerNorm1P (weight + 1, with bias), relu2, RoPE on a quarter of each head, every projection biased
    "nemotron": dict(NO_EPS, model_type="nemotron", norm_eps=1e-5, attention_bias=True, mlp_bias=True,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}),
    "apertus": dict(BASE, model_type="apertus", attention_bias=True,
                    rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 64}),
    "apertus1p5_text-pruned-head": dict(BASE, model_type="apertus1p5_text", output_vocab_size=100,
                                        rope_parameters=_ROPE),
    "olmo": dict(NO_EPS, model_type="olmo", clip_qkv=0.3, rope_theta=10000.0),
    "glm": dict(BASE, model_type="glm", head_dim=16, rope_theta=10000.0),
    "glm4": dict(BASE, model_type="glm4", head_dim=16, partial_rotary_factor=0.75, rope_theta=10000.0),
    "seed_oss": dict(BASE, model_type="seed_oss", head_dim=16, attention_out_bias=True, mlp_bias=True,
                     rope_theta=10000.0),
    "hyperclovax": dict(BASE, model_type="hyperclovax", embedding_multiplier=2.0, residual_multiplier=0.5,
                        attention_multiplier=0.2, logits_scaling=1.5, rope_theta=10000.0),
    "hyperclovax-no-post-norm": dict(BASE, model_type="hyperclovax", use_post_norm=False, rope_theta=10000.0),
    "ernie4_5": dict(BASE, model_type="ernie4_5", head_dim=16, use_bias=True, rope_theta=10000.0),
    "helium": dict(BASE, model_type="helium", head_dim=16, rope_theta=10000.0),
    "granitemoe": dict(BASE, model_type="granitemoe", num_local_experts=4, num_experts_per_tok=2,
                       embedding_multiplier=2.0, residual_multiplier=0.5, attention_multiplier=0.2, logits_scaling=2.0,
                       rope_theta=10000.0),
    "granitemoeshared": dict(BASE, model_type="granitemoeshared", num_local_experts=4, num_experts_per_tok=2,
                             shared_intermediate_size=48, rope_theta=10000.0),
    "exaone": dict(model_type="exaone", hidden_size=64, num_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   intermediate_size=96, vocab_size=128, max_position_embeddings=256, layer_norm_epsilon=1e-5,
                   activation_function="silu", rope_theta=10000.0, pad_token_id=0),
    "internlm3": dict(BASE, model_type="internlm3", head_dim=16, qkv_bias=True, bias=True, rope_theta=10000.0),
    "vaultgemma": dict(BASE, model_type="vaultgemma", head_dim=16, sliding_window=8, query_pre_attn_scalar=16,
                       attn_logit_softcapping=50.0, final_logit_softcapping=30.0, rope_theta=10000.0),
    "cwm": dict(BASE, model_type="cwm", head_dim=16, sliding_window=8, rope_parameters=_ROPE),
    "ministral3": dict(BASE, model_type="ministral3", head_dim=16,
                       rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                                        "original_max_position_embeddings": 4, "beta_fast": 32.0, "beta_slow": 1.0,
                                        "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}),
})
MOE |= {"granitemoe", "granitemoeshared"}
# Granite SWA: sinks, Granite's multipliers, a NoPE full layer and a sliding layer with its own RoPE base; Granite
# MoE SWA with a shared MLP and the default layer_types; FlexOlmo (OLMo 2 norms, OLMoE experts); Mellum (a dense
# sliding layer with its own base, a sparse full layer); MiniCPM3 (MLA with rotate-half RoPE and its multipliers)
TINY.update({
    "granite_swa": dict(BASE, model_type="granite_swa", sliding_window=8, layer_types=["full_attention",
                        "sliding_attention"], layer_rope_theta=[0, 20000.0], embedding_multiplier=2.0,
                        residual_multiplier=0.5, attention_multiplier=0.2, logits_scaling=2.0, rope_theta=10000.0),
    "granitemoe_swa": dict(BASE, model_type="granitemoe_swa", num_local_experts=4, num_experts_per_tok=2,
                           shared_intermediate_size=48, sliding_window=8, rope_theta=10000.0),
    "flex_olmo": dict(BASE, model_type="flex_olmo", num_experts=4, num_experts_per_tok=2, rope_theta=10000.0),
    "mellum": dict(BASE, model_type="mellum", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                   mlp_layer_types=["dense", "sparse"],
                   rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    "minicpm3": dict(BASE, model_type="minicpm3", num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16,
                     qk_nope_head_dim=16, qk_rope_head_dim=8, scale_emb=3.0, scale_depth=1.4, dim_model_base=32,
                     rope_theta=10000.0),
})
MOE |= {"granitemoe_swa", "flex_olmo", "mellum"}
# BitNet: sub-layer RMSNorms before o_proj and down_proj (relu2); NanoChat: weightless norms (the embeddings
# normed too), q/k normed after its sign-flipped rotate_half RoPE, a relu2 fc1 / fc2 MLP, logits soft-capped
TINY["bitnet"] = dict(BASE, model_type="bitnet", attention_bias=True, rope_theta=10000.0)
# Youtu-LLM: interleaved-RoPE MLA with a dense MLP; Jais 2: LayerNorms with bias, a biased relu2 up / down MLP
TINY["youtu"] = dict(BASE, model_type="youtu", num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16,
                     qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, rope_theta=10000.0)
TINY["jais2"] = dict(NO_EPS, model_type="jais2", layer_norm_eps=1e-5, rope_theta=10000.0)
TINY["nanochat"] = dict(BASE, model_type="nanochat", final_logit_softcapping=15.0, rope_theta=10000.0)
# Kolibri-1: a sliding (RoPE) and a full (NoPE) layer, sandwich norms, experts chosen by logits + the (perturbed)
# e_score_correction_bias, sigmoid-weighted, plus an ungated shared expert; Flint: a dense full (NoPE) layer, then
# a sliding MoE layer (sigmoid top-k renormalised, an ungated shared expert), per-head sinks and q/k/v/o biases
TINY["kolibri1"] = dict({k: v for k, v in BASE.items() if k != "intermediate_size"}, model_type="kolibri1",
                        head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                        shared_expert_intermediate_size=48, sliding_window=8,
                        layer_types=["sliding_attention", "full_attention"], rope_parameters=_ROPE)
TINY["flint"] = dict(BASE, model_type="flint", head_dim=16, num_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=32, shared_expert_intermediate_size=48, sliding_window=8,
                     attention_bias=True, mlp_only_layers=[0], layer_types=["full_attention", "sliding_attention"],
                     rope_parameters=_ROPE)
# Lara-4-Mini: a DeltaNet, a sliding (RoPE) and a full (NoPE) Qwen3 attention layer, each with Flint's sparse block
# under a softmax router; plain (weight · x) RMSNorms, tied
TINY["lara_mini"] = dict({k: v for k, v in _GDN.items() if k not in ("intermediate_size", "full_attention_interval")},
                         model_type="lara_mini", num_hidden_layers=3, num_experts=4, num_experts_per_tok=2,
                         moe_intermediate_size=32, shared_expert_intermediate_size=48, sliding_window=8,
                         attention_bias=True, layer_types=["linear_attention", "sliding_attention", "full_attention"])
MOE |= {"kolibri1", "flint", "lara_mini"}
# V3-style MLA + MoE variants, layer 0 dense and layer 1 MoE: GLM-4.7-Flash (mlp_layer_types' default), A.X-K1 (an
# RMSNorm on the MoE output), Sarvam MLA (no q LoRA, rotate-half RoPE, its original names and deepseek_yarn)
_MLA_MOE = dict(BASE, num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                num_experts_per_tok=2, moe_intermediate_size=32, n_group=2, topk_group=1, rope_theta=10000.0)
TINY["glm4_moe_lite"] = dict(_MLA_MOE, model_type="glm4_moe_lite", q_lora_rank=32, n_routed_experts=4,
                             n_shared_experts=1, routed_scaling_factor=1.8)
TINY["axk1"] = dict(_MLA_MOE, model_type="axk1", q_lora_rank=32, n_routed_experts=4, n_shared_experts=1)
TINY["sarvam_mla"] = dict(_MLA_MOE, model_type="sarvam_mla", num_experts=4, num_shared_experts=1, head_dim=24,
                          first_k_dense_replace=1, rope_interleave=False,
                          rope_scaling={"type": "deepseek_yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})
MOE |= {"glm4_moe_lite", "axk1", "sarvam_mla"}
# Mistral Small 4 (mistral4): V3's MLA and experts under a softmax router, YaRN, and Llama 4's query scaling by position
# (original_max_position_embeddings 4: the scale grows within the test's positions)
TINY["mistral4"] = dict(_MLA_MOE, model_type="mistral4", q_lora_rank=32, n_routed_experts=4, n_shared_experts=1,
                        first_k_dense_replace=1, routed_scaling_factor=1.5, norm_topk_prob=True,
                        rope_parameters={"rope_type": "yarn", "type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                         "original_max_position_embeddings": 4, "beta_fast": 32.0, "beta_slow": 1.0,
                                         "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1})
MOE |= {"mistral4"}
# Sarvam-30B (sarvam_moe): GLM-4.5's block (Glm4MoeForCausalLM) under the original sarvam-30b names, RoPE on the
# whole head by default, per-head q/k norms on by default, layer 0 dense
TINY["sarvam_moe"] = dict(BASE, model_type="sarvam_moe", head_dim=16, num_experts=4, num_shared_experts=1,
                          num_experts_per_tok=2, moe_intermediate_size=32, use_qkv_bias=True, rope_theta=10000.0)
# Laguna: per-layer query heads over 2 KV heads, softplus(g_proj(x)) on each head's (or each feature's) output, RoPE
# per layer type (full: YaRN on half of head_dim; sliding: its own base, plain or linearly scaled), sigmoid router
# steered by its e_score_correction_bias parameter, always renormalised, scaled, optionally soft-capped logits
_LAGUNA = dict(BASE, model_type="laguna", num_hidden_layers=3, head_dim=16, num_attention_heads_per_layer=[4, 6, 2],
               layer_types=["full_attention", "sliding_attention", "sliding_attention"], sliding_window=8,
               num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=16,
               moe_routed_scaling_factor=2.5,
               rope_parameters={"full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                                   "original_max_position_embeddings": 64, "beta_fast": 64.0,
                                                   "beta_slow": 1.0, "partial_rotary_factor": 0.5},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
TINY["laguna"] = _LAGUNA
TINY["laguna-per-element-softcap"] = dict(
    _LAGUNA, gating="per-element", attention_bias=True, moe_router_logit_softcapping=3.0,
    layer_types=["sliding_attention", "full_attention", "sliding_attention"], mlp_layer_types=["sparse", "dense", "sparse"],
    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5},
                     "sliding_attention": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}})
MOE |= {"sarvam_moe", "laguna", "laguna-per-element-softcap"}
# LFM2-MoE without conv layers: a dense layer, then sigmoid-routed experts whose choice adds the expert_bias buffer
TINY["lfm2_moe-attention-only"] = dict(NO_EPS, model_type="lfm2_moe", norm_eps=1e-5, num_dense_layers=1,
                                       layer_types=["full_attention", "full_attention"], moe_intermediate_size=32,
                                       num_experts=4, num_experts_per_tok=2, routed_scaling_factor=1.5)
MOE |= {"lfm2_moe-attention-only"}
# LFM3 without conv layers (the short conv is not run): a sliding and a full layer, each head's output scaled by
# sigmoid(g_proj(x)), sandwich norms, q/k/v/o biases, per-head q/k norms; the full layer's RoPE proportional
TINY["lfm3-attention-only"] = dict(NO_EPS, model_type="lfm3", head_dim=16, norm_eps=1e-5, sliding_window=8,
                                   attention_bias=True, layer_types=["sliding_attention", "full_attention"])
# Hunyuan V3: layer 0 dense, layer 1 MoE (sigmoid router steered by the correction bias, top-k renormalised and
# scaled by router_scaling_factor, a biased shared MLP of two experts' width), per-head q/k norms before RoPE
TINY["hy_v3"] = dict(BASE, model_type="hy_v3", head_dim=16, num_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=32, num_shared_experts=2, router_scaling_factor=1.7, mlp_bias=True,
                     attention_bias=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
MOE |= {"hy_v3"}
# Cohere 2 MoE: Cohere 2's parallel block over experts; a sliding (RoPE) and a full (NoPE) layer, both MoE with the
# top-k logits softmaxed and a shared expert averaged in ("average"); the other row: a dense prefix layer (full, RoPE
# forced), sigmoid weights renormalised, two shared experts summed in, RMSNorms, q/k/v/o biases, untied
TINY["cohere2_moe"] = dict(NO_EPS, model_type="cohere2_moe", head_dim=16, sliding_window=8, sliding_window_pattern=2,
                           num_experts=4, num_experts_per_tok=2, num_shared_experts=1, logit_scale=0.5,
                           layer_norm_eps=1e-5, rope_theta=10000.0)
TINY["cohere2_moe-prefix-sigmoid-rms"] = dict(NO_EPS, model_type="cohere2_moe", head_dim=16, num_hidden_layers=3,
                                              sliding_window=8, sliding_window_pattern=2, first_k_dense_replace=1,
                                              prefix_dense_intermediate_size=80, num_experts=4, num_experts_per_tok=2,
                                              num_shared_experts=2, shared_expert_combination_strategy="sum",
                                              expert_selection_fn="sigmoid", rms_norm_eps=1e-6, attention_bias=True,
                                              tie_word_embeddings=False, logit_scale=0.5, rope_theta=10000.0)
MOE |= {"cohere2_moe", "cohere2_moe-prefix-sigmoid-rms"}
# Persimmon: a biased (heads, 3, d) fused query_key_value, LayerNorms with bias over head_dim on q and k (before
# RoPE), RoPE on a quarter of each head, a biased relu2 MLP (Fuyu: in WRAPPED); BioGPT: the scaled embedding plus
# positions at row p + 2, fc1 / fc2, LayerNorms at torch's eps whatever layer_norm_eps says, tied
_PERSIMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, vocab_size=128,
                  max_position_embeddings=256, layer_norm_eps=1e-5, pad_token_id=0)
TINY["persimmon"] = dict(_PERSIMMON, model_type="persimmon", partial_rotary_factor=0.25, rope_theta=25000.0)
TINY["biogpt"] = dict(_PERSIMMON, model_type="biogpt", layer_norm_eps=1e-12)
# AFMoE (Trinity): a sliding (RoPE) dense layer, then a full (NoPE) MoE layer; the attention output scaled by
# sigmoid(gate_proj(x)), sandwich norms, per-head q/k norms, q/k/v/o biases, muP's sqrt(hidden) embedding scale;
# experts chosen by sigmoid scores + the (perturbed) expert_bias parameter, renormalised, times route_scale
TINY["afmoe"] = dict(BASE, model_type="afmoe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=32, num_shared_experts=1, route_scale=1.7, sliding_window=8,
                     attention_bias=True, mup_enabled=True, layer_types=["sliding_attention", "full_attention"],
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
MOE |= {"afmoe"}
# MiMo-V2-Flash: layer 0 full and dense, layers 1-2 sliding (twice the KV heads, a sink per head; window
# sliding_window_size + 1) with MoE (sigmoid router in two groups, correction bias, scaled); q/k 24 wide, v 16, V
# scaled by attention_value_scale (the class's 0.707) before the cache; RoPE on int(24 x 0.334) = 8 channels, a
# base per layer type
TINY["mimo_v2_flash"] = dict(BASE, model_type="mimo_v2_flash", num_hidden_layers=3, num_key_value_heads=1,
                             head_dim=24, v_head_dim=16, sliding_window_size=7, attention_bias=True,
                             n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, n_group=2,
                             topk_group=1, routed_scaling_factor=1.5,
                             rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                                              "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
MOE |= {"mimo_v2_flash"}


def hf_model(cfg: dict):
    """The ``transformers`` model of ``cfg`` with random fp32 weights, norms and biases perturbed."""
    pytest.importorskip("transformers", reason="parity tests need transformers (the dev extra)")
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    transformers.logging.set_verbosity_error()
    d = dict(cfg, initializer_range=0.1)
    mt = d.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(mt, **d)
        torch.manual_seed(0)
        # a wrapper with a vision tower: its full model (mllama's causal-LM class is the text model alone)
        vl = "vision_config" in d and mt in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
        auto = AutoModelForCausalLM if mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not vl else AutoModelForImageTextToText
        model = auto.from_config(config, attn_implementation="eager").float().eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or ".ln" in name:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias") or "sinks" in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("router.scale") or name.endswith("per_expert_scale"):  # Gemma 4 (ones at init)
                p.add_(0.1 * torch.randn(p.shape, generator=g))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))
            elif name.endswith("layer_scalar"):  # Gemma 4 (one at init)
                b.add_(0.1 * torch.randn(b.shape, generator=g))
    return model


def ours_from_hf(cfg: dict, hf, **kw):
    from planner.runtime.load import load_tensors

    spec = parse_config(cfg)
    model = build_decoder(spec, seed=None, **kw)
    report = load_tensors(model, hf.state_dict().items())
    assert report.missing == []
    return spec, model


# Aria's language model: every layer a MoE of stacked (in x out) SiLU experts, the top-k logits softmaxed, a biased
# shared MLP of intermediate_size x moe_num_shared_experts, GQA with biased q/k/v/o; XGLM: fairseq's sinusoidal
# table (row p + 2, odd width padded with a zero column; pad_token_id 3 zeroes the row of position 1), the scaled
# embedding, biased attention and fc1 / fc2 (GELU), LayerNorms at torch's eps, tied
TINY["aria_text"] = dict(BASE, model_type="aria_text", head_dim=24, moe_num_experts=4, moe_topk=2,
                         moe_num_shared_experts=2, attention_bias=True, mlp_bias=True, rope_theta=10000.0)
TINY["xglm"] = {"model_type": "xglm", "d_model": 63, "num_layers": 2, "attention_heads": 7, "ffn_dim": 96,
                "vocab_size": 128, "max_position_embeddings": 256, "pad_token_id": 3, "torch_dtype": "float32"}
MOE |= {"aria_text"}
# ModernBERT decoder: embedding LayerNorm, no attn_norm on layer 0, GeGLU Wi, 8-key windows (local_attention 16 // 2)
# on layers 1, 2 with their own RoPE base, the dense + LayerNorm prediction head, the tied decoder's bias; and with
# every bias on, untied, explicit layer_types
_MBD = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=96, vocab_size=128,
            max_position_embeddings=256, pad_token_id=0, model_type="modernbert-decoder", local_attention=16,
            global_attn_every_n_layers=3, local_rope_theta=500.0, global_rope_theta=20000.0)
TINY["modernbert-decoder"] = _MBD
TINY["modernbert-decoder-biases-untied"] = dict(_MBD, attention_bias=True, mlp_bias=True, norm_bias=True,
                                                classifier_bias=True, decoder_bias=False, tie_word_embeddings=False,
                                                classifier_activation="gelu_pytorch_tanh",
                                                layer_types=["sliding_attention", "full_attention",
                                                             "sliding_attention", "full_attention"])


# ---- parity with transformers ------------------------------------------------------------------------


def assert_logits_and_cached_decode(spec, ours, hf, atol: float = 1e-5) -> None:
    """Our decoder's logits over 2 x 20 random tokens equal transformers' ``hf`` at 1e-4, and a 12-token prefill
    into a KVCache (longer than the 8-token windows / chunks: the ring buffers wrap) then 8 one-token decode steps
    equal that full pass at ``atol``."""
    tokens = torch.randint(0, 128, (2, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(tokens).logits
        full = ours(tokens, 0, None, all_logits=True)
        assert ref.std() > 0.1, "logits too small for the comparison to mean anything"
        torch.testing.assert_close(full, ref, atol=1e-4, rtol=0)
        cache = KVCache(spec, 2, 20)
        pre = ours(tokens[:, :12], 0, cache, all_logits=True)
        torch.testing.assert_close(pre, full[:, :12], atol=atol, rtol=0)
        for p in range(12, 20):
            step = ours(tokens[:, p:p + 1], p, cache)
            torch.testing.assert_close(step, full[:, p], atol=atol, rtol=0)


@pytest.mark.parametrize("family", sorted(TINY))
def test_logits_equal_transformers_and_cached_decode_equals_recompute(family):
    cfg = TINY[family]
    hf = hf_model(cfg)
    spec, ours = ours_from_hf(cfg, hf)
    assert_logits_and_cached_decode(spec, ours, hf, DECODE_ATOL.get(family, 1e-5))


@pytest.mark.parametrize("bias_max", [8.0, 6.0, 12.0])
def test_alibi_slopes_equal_mpts(bias_max):
    """MPT's slopes (transformers' build_mpt_alibi_tensor, whose alibi_bias_max MptModel never passes on: the
    MosaicML code does) for 1..40 heads; at 8 they are BLOOM's."""
    pytest.importorskip("transformers", reason="needs transformers (the dev extra)")
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    from planner.runtime.model import alibi_slopes

    for heads in range(1, 41):
        ref = -build_mpt_alibi_tensor(heads, 2, alibi_bias_max=bias_max)[:, 0, 0]  # key 1 - 2 = -1: -slope
        torch.testing.assert_close(alibi_slopes(heads, bias_max), ref, rtol=1e-6, atol=0)


#: multimodal wrappers: the text decoder runs (vision tensors are counted, not built or loaded)
_VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2, image_size=32,
               patch_size=8)
WRAPPED = {
    "llava": {"model_type": "llava", "text_config": TINY["llama"], "image_token_index": 127,
              "vision_config": dict(_VISION, model_type="clip_vision_model")},
    "mistral3": {"model_type": "mistral3", "text_config": TINY["mistral"], "image_token_index": 127,
                 "vision_config": dict(_VISION, model_type="pixtral")},
}
# Qwen-VL: M-RoPE with text-only positions (the same position in every section) is plain RoPE
_MROPE = {"rope_type": "default", "mrope_section": [2, 3, 3]}  # sums to head_dim / 2
_QWEN3_VISION = dict(depth=2, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64, patch_size=4,
                     spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16,
                     deepstack_visual_indexes=[0, 1])
WRAPPED.update({
    # Llama 3.2 Vision: a text-only step skips the cross-attention layer (1), as transformers does
    "mllama": {"model_type": "mllama",
               "text_config": dict(TINY["llama"], model_type="mllama_text_model", num_hidden_layers=3,
                                   cross_attention_layers=[1]),
               "vision_config": dict(hidden_size=32, attention_heads=2, intermediate_size=48, num_hidden_layers=1,
                                     num_global_layers=1, image_size=16, patch_size=8, max_num_tiles=2,
                                     supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]], vision_output_dim=64,
                                     intermediate_layers_indices=[0])},
    # a flat config, as Qwen2-VL's hub configs are
    "qwen2_vl": dict(TINY["qwen2"], model_type="qwen2_vl", rope_scaling=_MROPE,
                     vision_config=dict(depth=1, embed_dim=32, mlp_ratio=2, num_heads=2, hidden_size=64, patch_size=4,
                                        spatial_merge_size=2, temporal_patch_size=2)),
    "qwen2_5_vl": {"model_type": "qwen2_5_vl",
                   "text_config": dict(TINY["qwen2"], model_type="qwen2_5_vl_text", rope_scaling=_MROPE),
                   "vision_config": dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64,
                                         patch_size=4, spatial_merge_size=2, temporal_patch_size=2)},
    "qwen3_vl": {"model_type": "qwen3_vl", "vision_config": _QWEN3_VISION,
                 "text_config": dict(TINY["qwen3"], model_type="qwen3_vl_text", head_dim=16,
                                     rope_scaling=dict(_MROPE, mrope_interleaved=True))},
    # its router renormalises the top-k weights whatever norm_topk_prob says
    "qwen3_vl_moe": {"model_type": "qwen3_vl_moe", "vision_config": _QWEN3_VISION,
                     "text_config": dict(TINY["qwen3_moe"], model_type="qwen3_vl_moe_text", norm_topk_prob=False,
                                         rope_scaling=dict(_MROPE, mrope_interleaved=True))},
    # Gemma 4's own ViT and conformer audio tower, counted apart (params.vision, params.audio)
    "gemma4": {"model_type": "gemma4", "text_config": TINY["gemma4_text"],
               "vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2,
                                     num_key_value_heads=2, head_dim=16, patch_size=4, position_embedding_size=16),
               "audio_config": dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                    subsampling_conv_channels=[8, 4], output_proj_dims=48)},
    # Gemma 4 unified: encoder-free patch and waveform embedders, counted apart (params.vision, params.audio)
    "gemma4_unified": {"model_type": "gemma4_unified", "text_config": TINY["gemma4_unified_text"],
                       "vision_config": dict(patch_size=4, pooling_kernel_size=2, mm_embed_dim=48, mm_posemb_size=16,
                                             output_proj_dims=48),
                       "audio_config": dict(audio_embed_dim=24)},
})
#: text-only wrappers (their towers are built by transformers, not counted here): the language model runs
_GLM4V_VISION = dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64, patch_size=4,
                     image_size=16, spatial_merge_size=2, temporal_patch_size=2)
WRAPPED.update({
    # GLM-4.1V: GLM-4-0414's sandwich block, q/k/v biases always, interleaved RoPE on half of head_dim
    "glm4v": {"model_type": "glm4v", "vision_config": _GLM4V_VISION,
              "text_config": dict(BASE, model_type="glm4v_text",
                                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                   "partial_rotary_factor": 0.5, "mrope_section": [1, 1, 2]})},
    # GLM-OCR: the same block without q/k/v biases, full-width RoPE by default
    "glm_ocr": {"model_type": "glm_ocr", "vision_config": _GLM4V_VISION,
                "text_config": dict(BASE, model_type="glm_ocr_text", head_dim=8,
                                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                     "mrope_section": [1, 1, 2]})},
    # GLM-4.5V: GLM-4.5's MoE without q/k norms; partial_rotary_factor 0.5 when absent (M-RoPE sections of 4)
    "glm4v_moe": {"model_type": "glm4v_moe", "vision_config": _GLM4V_VISION,
                  "text_config": dict(BASE, model_type="glm4v_moe_text", head_dim=16, n_routed_experts=4,
                                      num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1,
                                      first_k_dense_replace=1, n_group=2, topk_group=1, routed_scaling_factor=2.5,
                                      use_qk_norm=True,
                                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                       "mrope_section": [1, 1, 2]})},
    # Qwen3-Omni's thinker: Qwen3-MoE's block, norm_topk_prob true by default
    "qwen3_omni_moe_thinker": {
        "model_type": "qwen3_omni_moe_thinker",
        "text_config": dict(BASE, model_type="qwen3_omni_moe_text", head_dim=16, num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=32, mlp_only_layers=[0],
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                             "mrope_section": [2, 3, 3], "interleaved": True}),
        "vision_config": dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64,
                              patch_size=4, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16,
                              deepstack_visual_indexes=[0]),
        "audio_config": dict(num_mel_bins=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=48,
                             d_model=32, output_dim=64, downsample_hidden_size=8, max_source_positions=64)},
})


# Fuyu: Persimmon behind a patch projection (vision_embed_tokens), its published config flat
WRAPPED["fuyu"] = dict(_PERSIMMON, model_type="fuyu", rope_theta=25000.0, patch_size=4)
# Phi-4-multimodal: Phi-3's decoder (flat fields) behind its SigLIP and conformer audio embeddings, counted not built
WRAPPED["phi4_multimodal"] = dict(TINY["phi3"], model_type="phi4_multimodal", pad_token_id=0,
                                  vision_config=dict(_VISION, num_hidden_layers=1),
                                  audio_config=dict(hidden_size=32, intermediate_size=48, num_blocks=1,
                                                    num_attention_heads=2, input_size=16, nemo_conv_channels=8,
                                                    ext_pw_out_channel=16, depthwise_separable_out_channel=32,
                                                    bias_max_distance=10, time_reduction=4))
# Aria: its Idefics3 tower and cross-attention projector counted, not built; the MoE language model runs
WRAPPED["aria"] = {"model_type": "aria", "text_config": TINY["aria_text"], "image_token_index": 127,
                   "vision_config": dict(_VISION, model_type="idefics3_vision")}
# InternVL (HF format): its InternViT and pixel-shuffle projector counted, not built; the Qwen2 language model runs,
# lm_head tied as the wrapper's flag says
WRAPPED["internvl"] = {"model_type": "internvl", "text_config": TINY["qwen2"], "image_token_id": 127,
                       "tie_word_embeddings": False, "vision_config": dict(_VISION, use_qk_norm=True)}
# ERNIE-4.5-VL: a text token runs the text experts (and the shared ones); the vision experts and their router are
# loaded and counted, never run; M-RoPE with text positions is plain interleaved RoPE
WRAPPED["ernie4_5_vl_moe"] = {
    "model_type": "ernie4_5_vl_moe", "image_token_id": 127, "tie_word_embeddings": False,
    "text_config": dict(BASE, model_type="ernie4_5_vl_moe_text", num_hidden_layers=3, moe_num_experts=4, moe_k=2,
                        moe_intermediate_size=[32, 16], moe_num_shared_experts=1, use_bias=True,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 4]}),
    "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "patch_size": 4}}
# Qwen2.5-Omni's thinker: Qwen2's block under M-RoPE (text positions: plain RoPE); its vision tower and audio encoder
# counted, not built
WRAPPED["qwen2_5_omni_thinker"] = {
    "model_type": "qwen2_5_omni_thinker",
    "text_config": dict(TINY["qwen2"], model_type="qwen2_5_omni_text", rope_scaling=_MROPE),
    "vision_config": dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64, patch_size=4,
                          spatial_merge_size=2, temporal_patch_size=2),
    "audio_config": dict(num_mel_bins=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=48, d_model=32,
                         output_dim=64)}
# MiniCPM-V 4.6 / 4.7, MiniCPM-o OCR: the text_config's own decoder (here Qwen3) runs; the SigLIP tower, its window
# merger and the DownsampleMLPs are counted, not built
for _mt in ("minicpmv4_6", "minicpmv4_7", "minicpm_ocr"):
    WRAPPED[_mt] = {"model_type": _mt, "text_config": dict(TINY["qwen3"], tie_word_embeddings=False),
                    "tie_word_embeddings": False,
                    "vision_config": dict(_VISION, model_type=f"{_mt}_vision")}
# VideoLLaMA3 (Qwen2 text; tied by either flag) and Qianfan-OCR (Qwen3 text): towers counted, not built
WRAPPED["video_llama_3"] = {"model_type": "video_llama_3", "text_config": TINY["qwen2"],
                            "vision_config": {k: v for k, v in _VISION.items() if k != "image_size"}}
WRAPPED["qianfan_ocr"] = {"model_type": "qianfan_ocr", "text_config": TINY["qwen3"], "image_token_id": 127,
                          "vision_config": dict(_VISION, model_type="qianfan_ocr_vision")}
# LFM2-VL / LFM3-VL (their language models without conv layers: the short conv is not run), Command A Vision and
# Aya Vision (Cohere 2's language model): towers and pixel-shuffle projectors counted, not run
WRAPPED.update({
    "lfm2_vl": {"model_type": "lfm2_vl", "image_token_id": 127, "projector_hidden_size": 48,
                "text_config": dict(NO_EPS, model_type="lfm2", norm_eps=1e-5,
                                    layer_types=["full_attention", "full_attention"]),
                "vision_config": dict(_VISION, model_type="siglip2_vision_model", num_patches=16)},
    "lfm3_vl": {"model_type": "lfm3_vl", "image_token_id": 127, "video_token_id": 126, "projector_hidden_size": 40,
                "text_config": TINY["lfm3-attention-only"],
                "vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=2,
                                      num_key_value_heads=1, patch_size=4)},
    "cohere2_vision": {"model_type": "cohere2_vision", "image_token_id": 127, "alignment_intermediate_size": 40,
                       "text_config": TINY["cohere2"], "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    # Aya Vision's head multiplies the logits by text_config.logit_scale (transformers 5.25; 5.24 left it out): a
    # scale of 2 (TINY["cohere2"]'s 0.5 leaves the random init's logits too flat) that ours must apply too
    "aya_vision": {"model_type": "aya_vision", "image_token_index": 127,
                   "text_config": dict(TINY["cohere2"], logit_scale=2.0),
                   "vision_config": dict(_VISION, model_type="siglip_vision_model", vision_use_head=False)},
})
# Molmo2: a Qwen3-shaped LM with extra embedding rows (never tied); with norm_after, each sublayer's output normed
# (OLMo-2's post-norm under Molmo2's names) and q/k norms over all heads
_MOLMO2_TEXT = dict(BASE, head_dim=16, additional_vocab_size=8, attention_bias=True)
_MOLMO2_VIT = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                   num_key_value_heads=2, head_dim=16, patch_size=4, image_size=[16, 16])
_MOLMO2_ADAPTER = dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                       intermediate_size=48, text_hidden_size=64, vision_feature_layer=[-1, 0])
WRAPPED.update({
    "molmo2": {"model_type": "molmo2", "image_patch_id": 127, "text_config": _MOLMO2_TEXT,
               "vision_config": _MOLMO2_VIT, "adapter_config": _MOLMO2_ADAPTER},
    "molmo2-olmo-norm_after": {"model_type": "molmo2", "image_patch_id": 127,
                               "text_config": dict(_MOLMO2_TEXT, qk_norm_type="olmo", norm_after=True),
                               "vision_config": _MOLMO2_VIT, "adapter_config": _MOLMO2_ADAPTER},
})
# Idefics2 (Mistral), Idefics3 / SmolVLM (Llama), Granite-Docling (Granite's multipliers): the language model under
# model.text_model; the NaViT tower and connectors (perceiver, pixel shuffle, DeepStack paths) counted, not built
WRAPPED["idefics2"] = {"model_type": "idefics2", "text_config": TINY["mistral"], "image_token_id": 127,
                       "vision_config": _VISION,
                       "perceiver_config": {"resampler_n_latents": 4, "resampler_depth": 1, "resampler_n_heads": 2,
                                            "resampler_head_dim": 16, "num_key_value_heads": 1}}
WRAPPED["idefics3"] = {"model_type": "idefics3", "text_config": TINY["llama"], "image_token_id": 127,
                       "vision_config": _VISION}
WRAPPED["smolvlm"] = {"model_type": "smolvlm", "text_config": TINY["llama"], "image_token_id": 127,
                      "tie_word_embeddings": True, "vision_config": _VISION}
WRAPPED["granite_docling"] = {
    "model_type": "granite_docling", "image_token_id": 127, "pad_token_id": 0,
    "text_config": dict(BASE, model_type="granite_docling_text", embedding_multiplier=3.0, residual_multiplier=0.5,
                        attention_multiplier=0.2, logits_scaling=0.5, bos_token_id=1, eos_token_id=2),
    "vision_config": dict(_VISION, out_hidden_size=64, scale_factor=4, deepstack_visual_indexes=[0])}

# the LLaVA variants: their towers, projectors, image_newline and resampler counted, not built; the language model runs
WRAPPED.update({
    "llava_next": {"model_type": "llava_next", "text_config": TINY["mistral"], "image_token_index": 127,
                   "vision_config": dict(_VISION, model_type="clip_vision_model")},
    "llava_next_video": {"model_type": "llava_next_video", "text_config": TINY["llama"], "image_token_index": 127,
                         "video_token_index": 126, "spatial_pool_mode": "conv",
                         "vision_config": dict(_VISION, model_type="clip_vision_model")},
    "llava_onevision": {"model_type": "llava_onevision", "text_config": TINY["qwen2"], "image_token_index": 127,
                        "video_token_index": 126, "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    "video_llava": {"model_type": "video_llava", "text_config": TINY["llama"], "image_token_index": 127,
                    "video_token_index": 126, "vision_config": dict(_VISION, model_type="clip_vision_model")},
    "vipllava": {"model_type": "vipllava", "text_config": TINY["llama"], "image_token_index": 127,
                 "vision_config": dict(_VISION, model_type="clip_vision_model")},
})

# PaliGemma 1 / 2 (Gemma / Gemma 2; text-only input is causal, the prefix-LM mask needs token_type_ids), ShieldGemma 2
# (Gemma 3), DeepSeek-VL and its hybrid, Janus (Llama): towers, aligners, the SAM ViT and Janus' VQ-VAE and
# generation heads counted, not built
_SAM = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8, window_size=2,
            global_attn_indexes=[1], output_channels=16)
_JANUS = {"vision_config": dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16, patch_size=4,
                                projection_dim=BASE["hidden_size"]),
          "vq_config": dict(base_channels=32, channel_multiplier=[1, 2], num_res_blocks=1, latent_channels=32,
                            embed_dim=8, num_embeddings=64, projection_dim=BASE["hidden_size"],
                            image_token_embed_dim=BASE["hidden_size"])}
WRAPPED.update({
    "paligemma": {"model_type": "paligemma", "text_config": TINY["gemma"], "image_token_index": 127,
                  "projection_dim": TINY["gemma"]["hidden_size"],
                  "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    "paligemma2": {"model_type": "paligemma", "text_config": TINY["gemma2"], "image_token_index": 127,
                   "projection_dim": TINY["gemma2"]["hidden_size"],
                   "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    "shieldgemma2": {"model_type": "shieldgemma2", "text_config": TINY["gemma3_text"], "image_token_index": 127,
                     "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    "deepseek_vl": {"model_type": "deepseek_vl", "text_config": TINY["llama"], "image_token_id": 127,
                    "vision_config": dict(_VISION, model_type="siglip_vision_model")},
    "deepseek_vl_hybrid": {"model_type": "deepseek_vl_hybrid", "text_config": TINY["llama"], "image_token_id": 127,
                           "vision_config": dict(_VISION, model_type="siglip_vision_model"),
                           "high_res_vision_config": _SAM},
    "janus": dict(_JANUS, model_type="janus", text_config=TINY["llama"], image_token_id=127),
})


# towers counted by analysis/vision_wrappers.py, not built; their language models run. Cosmos3-Edge: Llama with a plain
# relu2 MLP (fc1 / fc2) and M-RoPE (text positions: plain RoPE), lm_head never tied; Kimi K2.5: DeepSeek-V3, tied as
# the wrapper says; EXAONE 4.5 (EXAONE 4) and Cosmos3-Omni (Qwen3-VL text): the wrapper's flag
_COSMOS_EDGE_TEXT = dict(BASE, model_type="cosmos3_edge_text", head_dim=16, mlp_bias=True, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]})
WRAPPED.update({
    "cosmos3_edge": {"model_type": "cosmos3_edge", "text_config": _COSMOS_EDGE_TEXT, "image_token_id": 127,
                     "projector_hidden_size": 48, "tie_word_embeddings": True,
                     "vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                           num_attention_heads=2, patch_size=4, num_patches=16)},
    "kimi_k25": {"model_type": "kimi_k25", "text_config": TINY["deepseek_v3"], "image_token_id": 127,
                 "projection_hidden_size": 32,
                 "vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2,
                                       patch_size=4, pos_emb_height=4, pos_emb_width=4)},
    "exaone4_5": {"model_type": "exaone4_5", "image_token_id": 127, "tie_word_embeddings": True,
                  "text_config": dict(BASE, model_type="exaone4", sliding_window=4,
                                      layer_types=["sliding_attention", "full_attention"]),
                  "vision_config": dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2, num_key_value_heads=1,
                                        out_hidden_size=64, patch_size=4, spatial_merge_size=2, temporal_patch_size=2)},
    "hyperclovax_vision_v2": {"model_type": "hyperclovax_vision_v2", "image_token_id": 127,
                              "text_config": TINY["hyperclovax"],
                              "vision_config": dict(depth=1, hidden_size=32, intermediate_size=48, num_heads=2,
                                                    out_hidden_size=64, patch_size=4, spatial_merge_size=2,
                                                    temporal_patch_size=2)},
    # Apertus 1.5: its image / audio tokenizers counted, not built; lm_head tied as the wrapper's flag says
    "apertus1p5": {"model_type": "apertus1p5", "tie_word_embeddings": True, "image_token_offset": 60,
                   "audio_token_offset": 92,
                   "text_config": dict(BASE, model_type="apertus1p5_text", rope_parameters=_ROPE),
                   "vision_config": {"base_channels": 32, "channel_multiplier": [1, 2], "num_res_blocks": 1,
                                     "attn_resolutions": [8], "resolution": 16, "latent_channels": 8, "embed_dim": 8,
                                     "codebook_size": 32},
                   "audio_config": {"model_type": "wavtokenizer_encoder", "num_filters": 4, "upsampling_ratios": [2],
                                    "hidden_size": 16, "codebook_dim": 16, "codebook_size": 16}},
})
# OCR wrappers and BLIP-2 / InstructBLIP (OPT): towers, projectors and Q-Formers counted, the language model runs
_BLIP = {"vision_config": dict(_VISION, image_size=16), "num_query_tokens": 3,
         "qformer_config": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                                vocab_size=50, max_position_embeddings=16)}
WRAPPED.update({
    # PaddleOCR-VL: ERNIE 4.5's biased block with half-split M-RoPE (text positions: plain RoPE)
    "paddleocr_vl": {"model_type": "paddleocr_vl",
                     "text_config": dict(BASE, model_type="paddleocr_vl_text", head_dim=8, use_bias=True,
                                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                          "mrope_section": [1, 1, 2]}),
                     "vision_config": dict(_VISION, spatial_merge_size=2)},
    "lighton_ocr": {"model_type": "lighton_ocr", "text_config": TINY["qwen3"], "image_token_id": 127,
                    "vision_config": dict(_VISION, model_type="pixtral")},
    "got_ocr2": {"model_type": "got_ocr2", "text_config": TINY["qwen2"], "image_token_index": 127,
                 "vision_config": dict(hidden_size=32, output_channels=8, num_hidden_layers=2, num_attention_heads=2,
                                       image_size=32, patch_size=8, window_size=2, global_attn_indexes=[1],
                                       mlp_dim=48)},
})
#: BLIP-2 / InstructBLIP: their forward needs pixel_values, so the text check runs their language_model (OPT)
BLIP_WRAPPED = {
    "blip-2": dict(_BLIP, model_type="blip-2", text_config=TINY["opt-post-ln-projected"], image_token_index=127),
    "instructblip": dict(_BLIP, model_type="instructblip", text_config=TINY["opt-post-ln-projected"],
                         image_token_index=127),
}
BLIP_WRAPPED["instructblipvideo"] = dict(_BLIP, model_type="instructblipvideo", video_token_index=127,
                                        text_config=TINY["opt-post-ln-projected"])
WRAPPED["pp_chart2table"] = dict(WRAPPED["got_ocr2"], model_type="pp_chart2table")  # GOT-OCR 2.0's model
# (Llama 4's wrapper is not here: transformers 5.24's Llama4ForConditionalGeneration.forward fails on a text-only input
# (outputs.image_outputs); its language model's logits are checked as TINY["llama4_text"])


@pytest.mark.parametrize("family", sorted(WRAPPED))
def test_wrapper_text_logits_equal_transformers(family):
    cfg = WRAPPED[family]
    hf = hf_model(cfg)
    spec, ours = ours_from_hf(cfg, hf)
    vision = sum(p.numel() for n, p in hf.named_parameters()
                 if any(k in n for k in (".vision_tower.", ".multi_modal_projector.", ".visual.", ".embed_vision.",
                                         ".vision_model.", ".vision_embed_tokens.",
                                         ".resampler_model.", "model.merger.", "model.projector.", ".image_tower.", ".video_tower.",
                                         ".image_newline", ".vision_resampler.", "model.connector.",
                                         "model.density_router.",
                                         ".aligner.", ".vqmodel.", ".generation_", ".high_res_vision_",
                                         "model.mm_projector.", "model.projector.", "vision_model.",
                                         "multi_modal_projector.", ".vision_tokenizer.", "model.vision_encoder.",
                                         "model.vision_projection.", "qformer.", "query_tokens",
                                         "language_projection.", ".embed_tokens_extend.image_embed.")))
    audio = sum(p.numel() for n, p in hf.named_parameters()
                if ".audio_tower." in n or ".embed_audio." in n or ".audio_tokenizer." in n
                or ".embed_tokens_extend.audio_embed." in n)
    if cfg["model_type"] in VISION_COUNTED:
        assert (count_params(spec).vision, count_params(spec).audio) == (vision, audio)
    else:  # a text-only wrapper: the language model and lm_head, tied or not as transformers builds them
        assert count_params(spec).total == sum(p.numel() for n, p in hf.named_parameters()
                                               if "language_model." in n or n.startswith("lm_head."))
    tokens = torch.randint(0, 127, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(input_ids=tokens).logits
        assert ref.std() > 0.1, "logits too small for the comparison to mean anything"
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=0)


@pytest.mark.parametrize("family", sorted(BLIP_WRAPPED))
def test_blip_text_logits_equal_its_language_model(family):
    """BLIP-2 / InstructBLIP with OPT: ours, loaded from the whole checkpoint's state dict, gives the logits of the
    wrapper's own language_model (its forward needs pixel_values); the ViT, Q-Former, query tokens and
    language_projection are what params.vision counts."""
    cfg = BLIP_WRAPPED[family]
    hf = hf_model(cfg)
    with torch.no_grad():  # BLIP's init (std 0.02 over the whole wrapper) leaves the logits too flat to compare
        gen = torch.Generator().manual_seed(5)
        for p in hf.language_model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * (0.3 if p.dim() > 1 else 0.1) + (p.dim() == 1) * 1.0)
    spec, ours = ours_from_hf(cfg, hf)
    vision = sum(p.numel() for n, p in hf.named_parameters() if not n.startswith("language_model."))
    assert count_params(spec).vision == vision > 0
    tokens = torch.randint(0, 127, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf.language_model(input_ids=tokens).logits
        assert ref.std() > 0.1, "logits too small for the comparison to mean anything"
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=0)


@pytest.mark.parametrize("family", sorted(MOE))
def test_grouped_experts_equal_the_expert_loop(family):
    cfg = TINY[family]
    hf = hf_model(cfg)
    _, loop = ours_from_hf(cfg, hf, moe_impl="loop")
    _, grouped = ours_from_hf(cfg, hf, moe_impl="grouped")
    tokens = torch.randint(0, 128, (3, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(grouped(tokens, 0, None, all_logits=True), loop(tokens, 0, None, all_logits=True),
                                   atol=1e-5, rtol=0)


# ---- exact checks: parameters, FLOPs, KV bytes -----------------------------------------------------


@pytest.mark.parametrize("family", sorted(TINY))
def test_parameters_are_the_specs_tensors(family):
    spec = parse_config(TINY[family])
    model = build_decoder(spec)
    shapes = {n: tuple(p.shape) for n, p in unique_parameters(model)}
    assert shapes == {t.name: tuple(t.shape) for t in spec.tensors()}
    assert parameter_count(model) == count_params(spec).total


def _flop_and_kv_check(spec, model, batch, cached, dtype=torch.float32, device="cpu"):
    fmt, _ = weight_format(spec, {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype])
    cache = KVCache(spec, batch, cached + 1, dtype, device)
    if device != "meta":
        cache.fill_random_()
    tokens = torch.zeros(batch, 1, dtype=torch.long, device=device)
    with torch.inference_mode():
        got, by_op = count_flops(lambda: model.decode(tokens, cached, cache))
    want = sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=batch, new_tokens=1, cached_tokens=cached))
    assert got == want, f"FlopCounterMode {got:,} vs trace {want:,} ({by_op})"
    kv = kv_cache(spec, fmt.act, fmt.act)  # K/V of cached + 1 tokens, and the recurrent layers' fixed state
    assert cache.nbytes == (kv.bytes_per_sequence(cached + 1) + kv.state_bytes_per_sequence) * batch


# Nemotron-H without Mamba layers (attention, MoE and MLP blocks only: the runtime builds no Mamba mixer): each layer
# is one norm named ``norm`` and one mixer, a name that collided with the block's own norm helper ("attribute 'norm'
# already exists": an internal error from `planner verify` before)
NEMOTRON_H_NO_MAMBA = dict(NO_EPS, model_type="nemotron_h", num_hidden_layers=4, hybrid_override_pattern="*E*-",
                            head_dim=16, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                            moe_shared_expert_intermediate_size=48, n_group=1, topk_group=1, norm_topk_prob=True,
                            routed_scaling_factor=1.5, layer_norm_epsilon=1e-5)


def test_nemotron_h_without_mamba_builds_and_matches_the_analysis():
    """The decoder builds (the parameters are the spec's tensors) and its decode FLOPs and KV bytes equal the
    analysis; transformers' NemotronH checkpoint names are not mapped for loading, so no logits parity here."""
    spec = parse_config(NEMOTRON_H_NO_MAMBA)
    model = build_decoder(spec)
    assert parameter_count(model) == count_params(spec).total
    _flop_and_kv_check(spec, model, batch=2, cached=5)


@pytest.mark.parametrize("family,impl", [(f, "loop") for f in sorted(TINY)] + [(f, "grouped") for f in sorted(MOE)])
def test_decode_flops_and_kv_bytes_equal_the_analysis(family, impl):
    spec = parse_config(TINY[family])
    model = build_decoder(spec, moe_impl=impl)
    for batch, cached in ((1, 0), (3, 5), (2, 17), (1, 40)):  # 17 and 40 wrap the 8-token rings
        _flop_and_kv_check(spec, model, batch, cached)


REAL = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b",
        "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "mistralai/Mixtral-8x7B-v0.1", "tiiuae/falcon-40b-instruct", "microsoft/phi-2", "google/gemma-3-4b-it",
        "google/gemma-4-E2B-it"]


@pytest.mark.parametrize("model_id", REAL)
def test_real_sized_models_on_meta(model_id):
    """Full-size models built on the meta device (no memory): parameters, decode FLOPs (the grouped-GEMM
    MoE path CUDA uses) and KV bytes equal the analysis."""
    from planner.cli.common import load_model

    loaded = load_model(model_id)
    spec = loaded.spec
    model = build_decoder(spec, dtype=torch.bfloat16,
                          device="meta", moe_impl="grouped")
    counts = count_params(spec)
    assert parameter_count(model) == counts.total - counts.vision - counts.audio  # the runtime builds the text decoder
    assert {n: tuple(p.shape) for n, p in unique_parameters(model)} == \
        {t.name: tuple(t.shape) for t in spec.tensors() if t.kind not in ("vision", "audio")}
    _flop_and_kv_check(spec, model, 2, 4096, torch.bfloat16, "meta")


def assert_loads_and_matches(cfg: dict, items: list, hf) -> None:
    """Our decoder of ``cfg`` loads the checkpoint ``items`` (name, tensor) with nothing missing or left over, and
    its logits equal transformers' ``hf`` at 1e-4."""
    from planner.runtime.load import load_tensors

    model = build_decoder(parse_config(cfg), seed=None)
    report = load_tensors(model, items)
    assert report.missing == [] and report.ignored == []
    tokens = torch.randint(0, 128, (1, 6), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens, 0, None, all_logits=True), hf(tokens).logits, atol=1e-4, rtol=0)


def load_saved_checkpoint(tmp_path: Path, cfg: dict, weights: dict):
    """``weights`` (name -> tensor) saved as ``tmp_path``/model.safetensors beside ``cfg`` as config.json, and our
    decoder of ``cfg`` loaded from that directory with nothing missing or left over: (spec, model)."""
    from safetensors.torch import save_file

    from planner.runtime.load import load_checkpoint

    save_file({n: t.contiguous() for n, t in weights.items()}, tmp_path / "model.safetensors",
              metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = parse_config(cfg)
    model = build_decoder(spec, seed=None)
    report = load_checkpoint(model, tmp_path)
    assert report.missing == [] and report.ignored == []
    return spec, model


def test_exaone_checkpoint_with_its_original_names_loads():
    """EXAONE 3 checkpoints keep their remote-code names (transformer.h.N.attn.attention.*, ln_1, mlp.c_fc_0 ...):
    the spec's CheckpointLayout renames them as transformers' conversion mapping does."""
    cfg = TINY["exaone"]
    hf = hf_model(cfg)
    back = [("model.embed_tokens.", "transformer.wte."), ("model.layers.", "transformer.h."),
            ("model.norm.", "transformer.ln_f."),
            (".self_attn.o_proj.", ".attn.attention.out_proj."), (".self_attn.", ".attn.attention."),
            (".input_layernorm.", ".ln_1."), (".post_attention_layernorm.", ".ln_2."),
            (".mlp.gate_proj.", ".mlp.c_fc_0."),
            (".mlp.up_proj.", ".mlp.c_fc_1."), (".mlp.down_proj.", ".mlp.c_proj.")]
    items = []
    for n, t in hf.state_dict().items():
        for ours, orig in back:
            n = n.replace(ours, orig) if ours.startswith(".") or n.startswith(ours) else n
        items.append((n, t))
    assert any(".attn.attention.out_proj." in n for n, _ in items)
    assert_loads_and_matches(cfg, items, hf)


def test_sarvam_moe_checkpoint_with_its_original_names_loads():
    """sarvam-30b's checkpoint keeps its remote-code names (model.word_embeddings, attention.query_key_value with rows
    [q | k | v], attention.dense, query_layernorm / key_layernorm, mlp.gate.expert_bias): read as transformers'
    conversion mapping reads them, q / k / v split by their sizes."""
    cfg = TINY["sarvam_moe"]
    hf = hf_model(cfg)
    sd = hf.state_dict()
    items = []
    for n, t in sd.items():
        if ".self_attn.k_proj." in n or ".self_attn.v_proj." in n:
            continue
        if ".self_attn.q_proj." in n:  # fused in q, k, v order
            t = torch.cat([t, sd[n.replace("q_proj", "k_proj")], sd[n.replace("q_proj", "v_proj")]])
            n = n.replace(".self_attn.q_proj.", ".attention.query_key_value.")
        for ours, orig in (("model.embed_tokens.", "model.word_embeddings."), (".self_attn.o_proj.", ".attention.dense."),
                           (".self_attn.q_norm.", ".attention.query_layernorm."),
                           (".self_attn.k_norm.", ".attention.key_layernorm."),
                           (".mlp.gate.e_score_correction_bias", ".mlp.gate.expert_bias")):
            n = n.replace(ours, orig)
        items.append((n, t))
    assert any(".attention.query_key_value.bias" in n for n, _ in items)
    assert any(n.endswith(".mlp.gate.expert_bias") for n, _ in items)
    assert not any(".self_attn." in n for n, _ in items)
    assert_loads_and_matches(cfg, items, hf)


def test_axk1_released_checkpoint_layout_loads():
    """A.X-K1's released checkpoints keep post_mlp_layernorm at the layer (transformers moves it into the MoE), on
    the dense layers too (unused: ignored), and no e_score_correction_bias (zeros, as transformers leaves it)."""
    from planner.runtime.load import load_tensors

    cfg = TINY["axk1"]
    hf = hf_model(cfg)
    with torch.no_grad():
        for n, b in hf.named_buffers():
            if n.endswith("e_score_correction_bias"):
                b.zero_()
    items = [(n.replace(".mlp.post_mlp_layernorm.", ".post_mlp_layernorm."), t) for n, t in hf.state_dict().items()
             if not n.endswith("e_score_correction_bias")]
    items.append(("model.layers.0.post_mlp_layernorm.weight", torch.ones(cfg["hidden_size"])))
    assert any(n == "model.layers.1.post_mlp_layernorm.weight" for n, _ in items)
    model = build_decoder(parse_config(cfg), seed=None)
    report = load_tensors(model, items)
    assert report.missing == [] and report.ignored == ["model.layers.0.post_mlp_layernorm.weight"]
    tokens = torch.randint(0, 128, (1, 6), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens, 0, None, all_logits=True), hf(tokens).logits, atol=1e-4, rtol=0)


def test_opt_checkpoint_saved_from_opt_model_loads():
    """Older OPT checkpoints are saved from ``OPTModel``: ``decoder.*`` without ``model.``, no lm_head (tied)."""
    cfg = TINY["opt-post-ln-projected"]
    hf = hf_model(cfg)
    items = [(n[len("model."):], t) for n, t in hf.state_dict().items() if n.startswith("model.decoder.")]
    assert_loads_and_matches(cfg, items, hf)


@pytest.mark.parametrize("name", ["opt-350m", "opt-1.3b", "dbrx-instruct"])
def test_published_shapes_on_meta(name):
    """Published OPT and DBRX shapes (tests/test_families.py, whose totals equal transformers') built on the
    meta device: parameters, decode FLOPs and KV bytes equal the analysis."""
    from tests.test_families import CASES

    spec = parse_config(CASES[name])
    model = build_decoder(spec, dtype=torch.bfloat16, device="meta", moe_impl="grouped")
    assert parameter_count(model) == count_params(spec).total
    assert {n: tuple(p.shape) for n, p in unique_parameters(model)} == {t.name: tuple(t.shape) for t in spec.tensors()}
    _flop_and_kv_check(spec, model, 2, 1000, torch.bfloat16, "meta")


def test_cache_capacity_is_enforced():
    spec = parse_config(TINY["llama"])
    model = build_decoder(spec)
    cache = KVCache(spec, 1, 4)
    with pytest.raises(OptionError, match="capacity of 4 tokens"):
        model(torch.zeros(1, 5, dtype=torch.long), 0, cache)


@pytest.mark.parametrize("model_id", ["tiiuae/falcon-mamba-7b", "ai21labs/AI21-Jamba-1.5-Mini"])
def test_unsupported_mixers_are_refused_clearly(model_id):
    from planner.cli.common import load_model

    spec = load_model(model_id).spec
    with pytest.raises(RuntimeUnavailableError, match="verify does not support Mamba layers yet"):
        build_decoder(spec, device="meta")
    r = run_cli("verify", model_id, "--device", "cpu", "--steps", "1")
    assert r.exit_code == 1 and r.stderr.startswith("Error: verify does not support Mamba layers yet")


def test_zamba2_is_refused_clearly(tmp_path):
    """Zamba2 is analysed and traced, not run: its Mamba-2 layers (and, where a hybrid layer comes first, its
    shared-block layers) are refused with one message, by build and by the verify command."""
    from tests.test_families import CASES

    cfg = CASES["zamba2"]
    with pytest.raises(RuntimeUnavailableError, match="verify does not support Mamba layers yet"):
        build_decoder(parse_config(cfg), device="meta")
    hybrid_first = {k: v for k, v in CASES["zamba2-blocks-adapters-rope-bias"].items() if v is not None}
    with pytest.raises(RuntimeUnavailableError, match="verify does not support shared attention block"):
        build_decoder(parse_config(hybrid_first), device="meta")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_cli("verify", str(tmp_path), "--device", "cpu", "--steps", "1")
    assert r.exit_code == 1 and r.stderr.startswith("Error: verify does not support Mamba layers yet")


def test_minimax_is_refused_clearly(tmp_path):
    """MiniMax is analysed and traced, not run: its lightning-attention layers are refused by build and by the
    verify command; a config of softmax layers only is refused too (its residual follows the norm)."""
    from tests.test_families import CASES

    cfg = CASES["minimax"]
    with pytest.raises(RuntimeUnavailableError, match="verify does not support lightning attention layers yet"):
        build_decoder(parse_config(cfg), device="meta")
    with pytest.raises(RuntimeUnavailableError,
                       match="verify does not support a residual taken after each norm yet .*MiniMax's decoder layer"):
        build_decoder(parse_config(dict(cfg, layer_types=["full_attention"] * 4)), device="meta")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_cli("verify", str(tmp_path), "--device", "cpu", "--steps", "1")
    assert r.exit_code == 1 and r.stderr.startswith("Error: verify does not support lightning attention layers yet")


def test_olmo_hybrid_is_refused_clearly():
    """OLMo Hybrid is analysed and traced, not run: its Gated DeltaNet (projections apart, doubled beta) is refused
    by build with one message naming it."""
    from tests.test_hybrid import SYNTHETIC

    with pytest.raises(RuntimeUnavailableError, match="verify does not support OLMo Hybrid's Gated DeltaNet"):
        build_decoder(parse_config(SYNTHETIC["olmo_hybrid/defaults"]), device="meta")


def test_lfm3_with_conv_layers_is_refused_clearly():
    """LFM3 runs without conv layers (TINY["lfm3-attention-only"]); its short conv layers, as LFM2's, are analysed
    and traced, not run: build refuses them by name."""
    from tests.test_hybrid import SYNTHETIC

    with pytest.raises(RuntimeUnavailableError, match="verify does not support short conv layers yet"):
        build_decoder(parse_config(SYNTHETIC["lfm3/defaults"]), device="meta")


def test_molmo2_rope_scaled_on_some_layers_is_refused_clearly():
    """Molmo2 runs (WRAPPED["molmo2"]) unless its RoPE scaling covers only rope_scaling_layers: then build refuses,
    naming the unscaled layers; all layers listed, or no scaling, runs."""
    cfg = dict(WRAPPED["molmo2"], text_config=dict(_MOLMO2_TEXT, rope_scaling_layers=[1], rope_parameters={
        "rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}))
    with pytest.raises(RuntimeUnavailableError, match=r"RoPE scaled on some layers only yet .*\[0\] unscaled"):
        build_decoder(parse_config(cfg), device="meta")
    everywhere = dict(cfg, text_config=dict(cfg["text_config"], rope_scaling_layers=[0, 1]))
    build_decoder(parse_config(everywhere), device="meta")
    build_decoder(parse_config(dict(WRAPPED["molmo2"], text_config=dict(_MOLMO2_TEXT, rope_scaling_layers=[1]))),
                  device="meta")


def test_ling3_is_refused_clearly():
    """Ling 3 (bailing_hybrid) is analysed and traced, not run: its Kimi Delta Attention layers, and its MLA's
    per-head output gate (a config of MLA layers only), are refused by build with one message each."""
    from tests.test_hybrid import SYNTHETIC

    cfg = SYNTHETIC["bailing_hybrid/defaults"]
    with pytest.raises(RuntimeUnavailableError, match="verify does not support Kimi Delta Attention layers yet"):
        build_decoder(parse_config(cfg), device="meta")
    with pytest.raises(RuntimeUnavailableError, match="verify does not support MLA with a per-head output gate"):
        build_decoder(parse_config(dict(cfg, layer_types=["full_attention"] * 6)), device="meta")


def test_kimi_linear_is_refused_clearly(tmp_path):
    """Kimi Linear is analysed and traced, not run: its Kimi Delta Attention layers, and its MLA without RoPE (a
    config of MLA layers only), are refused by build and by the verify command with one message each."""
    from tests.test_hybrid import SYNTHETIC

    cfg = SYNTHETIC["kimi_linear/defaults"]
    with pytest.raises(RuntimeUnavailableError, match="verify does not support Kimi Delta Attention layers yet"):
        build_decoder(parse_config(cfg), device="meta")
    mla_only = dict(cfg, layer_types=["full_attention"] * 6)
    with pytest.raises(RuntimeUnavailableError, match="verify does not support MLA without RoPE"):
        build_decoder(parse_config(mla_only), device="meta")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_cli("verify", str(tmp_path), "--device", "cpu", "--steps", "1")
    assert r.exit_code == 1 and r.stderr.startswith("Error: verify does not support Kimi Delta Attention layers yet")


@pytest.mark.parametrize("case,message", [
    # Gemma 3n: AltUp and LAuReL
    ("gemma3n_text-tiny", "verify does not support Gemma 3n's decoder layer yet"),
    # DeepSeek-V3.2: MLA with the lightning indexer
    ("deepseek_v32", "verify does not support DeepSeek sparse attention layers yet"),
    # DeepSeek-V4: compressed attention and hyper-connections
    ("deepseek_v4", "verify does not support DeepSeek-V4 compressed attention"),
    # Qwen4-Exp: hyper-connections around Gated DeltaNet / QSA attention, n-gram PLE
    ("qwen4_exp_text-ple-tied", "verify does not support Qwen4-Exp hyper-connected layers yet"),
    # Inkling / Inkling-2: relative-bias attention with short convs on K, V and the block outputs
    ("inkling_text", "verify does not support Inkling attention layers yet"),
    ("inkling2_text", "verify does not support Inkling attention layers yet"),
    ("inkling2_loop_text", "verify does not support looped layers yet"),
    # NVIDIA Dory: looped nGPT layers
    ("dory", "verify does not support looped layers yet"),
    # HRM-Text: its stacks run H_cycles x (L_cycles + 1) times; with one pass each, its gated attention refused
    ("hrm_text", "verify does not support looped layers yet"),
    # Hy4-preview and A.X-K2: DeepSeek sparse attention with output gates (and Hy4's hyper-connections)
    ("hy_v4", "verify does not support DeepSeek sparse attention layers yet"),
    ("axk2", "verify does not support DeepSeek sparse attention layers yet"),
    # MiniMax-M3: the clamped SwiGLU in its dense MLPs and shared experts
    ("minimax_m3_vl_text", "verify does not support the clamped SwiGLU in dense MLPs and shared experts yet"),
    ("minimax_m3_vl_text-sparse", "verify does not support MiniMax-M3 block-sparse attention layers yet"),
    # SmallDoge's Doge: the dynamic mask on the scores and the learned residual scales
    ("doge", "verify does not support Doge dynamic-mask attention layers yet"),
    # xLSTM: the mLSTM recurrence (exponential input gates, a d_k x d_v matrix memory per head)
    ("xlstm", "verify does not support mLSTM layers yet"),
    # RecurrentGemma: the RG-LRU recurrence behind a temporal conv (its local attention layers alone would run)
    ("recurrent_gemma", "verify does not support RG-LRU layers yet"),
    # RWKV-4: the WKV recurrence and the channel-mix's token shift (one block with two residuals)
    ("rwkv", "verify does not support RWKV-4 layers yet"),
    # JetMoE: routed query / output attention experts over a shared kv_proj, a MoE with an output bias
    ("jetmoe", "verify does not support JetMoE mixture-of-attention layers yet"),
    # DiffLlama: differential attention (head pairs subtracted by a learned lambda, a per-pair group norm)
    ("diffllama", "verify does not support differential attention layers yet"),
    # dots3-note: DSA layers; without DSA, its gated MLA (a sliding window, a normed rope key)
    ("dots3_note_text", "verify does not support DeepSeek sparse attention layers yet"),
    ("dots3_note_text-no-dsa-freq", "verify does not support dots3-note's gated MLA"),
    ("zaya-tiny-sliding-biased", "verify does not support ZAYA compressed convolutional attention layers yet"),
    # Beam: depth-scaled residual adds, the attention gate's per-head bias, the NoPE layers' query scale
    ("beam", "verify does not support Beam's decoder layer yet"),
])
def test_analysed_but_not_run_families_are_refused_clearly(tmp_path, case, message):
    """Families analysed and traced but not run: build and the verify command refuse them with one message."""
    from tests.test_families import CASES

    assert_verify_refuses(tmp_path, CASES[case], message)


def test_dory_and_hrm_without_loops_are_refused_by_their_layer_kind(tmp_path):
    """Dory with one pass has no looped layer, but its nGPT attention (unit-norm q / k, sqk / s_gate scales) and
    interpolated residuals are not the runtime's attention; nor is HRM's with one cycle of each stack (weightless
    norms, biased gate, prefix-LM mask, two stacks): refused by name, never run as AFMoE's."""
    from tests.test_families import CASES

    assert_verify_refuses(tmp_path, dict(CASES["dory"], n_recurrent_loops=1),
                          "verify does not support Dory nGPT attention layers yet")
    assert_verify_refuses(tmp_path, dict(CASES["hrm_text"], H_cycles=1, L_cycles=1),
                          "verify does not support HRM gated attention layers yet")


def assert_verify_refuses(tmp_path, cfg: dict, message: str) -> None:
    """Building ``cfg``'s decoder raises ``message``, and ``planner verify`` on it exits 1 with that one
    ``Error:`` line."""
    with pytest.raises(RuntimeUnavailableError, match=message):
        build_decoder(parse_config(cfg), device="meta")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_cli("verify", str(tmp_path), "--device", "cpu", "--steps", "1")
    assert r.exit_code == 1 and r.stderr.startswith(f"Error: {message}")


@pytest.mark.parametrize("family", ["gemma4_text", "gemma4_text-moe", "gemma4_unified_text"])
def test_gemma4_tensor_and_pipeline_parallel_are_refused_clearly(family):
    from planner.runtime.parallel import check_tp_supported
    from planner.runtime.pipeline import check_pp_supported

    spec = parse_config(TINY[family])
    with pytest.raises(RuntimeUnavailableError, match="Gemma 4"):
        check_tp_supported(spec, 2)
    with pytest.raises(RuntimeUnavailableError, match="Gemma 4"):
        check_pp_supported(spec, 2, 1)


def test_ctrl_tied_head_bias_is_refused_by_tensor_parallel_clearly():
    """CTRL's tied LM head keeps a bias of its own (vocabulary-wide), which the tensor-parallel runtime does not
    shard; one process and pipeline stages run it (parity above)."""
    from planner.runtime.parallel import check_tp_supported

    with pytest.raises(RuntimeUnavailableError, match="tied LM head's own bias"):
        check_tp_supported(parse_config(TINY["ctrl"]), 2)


# ---- loading checkpoints -------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["llama", "mixtral", "gpt_neox", "falcon", "deepseek_v3", "qwen2_moe", "stablelm",
                                    "minimax_m2"])
def test_load_safetensors_checkpoint(family, tmp_path):
    """save_pretrained writes Hugging Face's on-disk layout (per-expert tensors, fused QKV rows ...);
    load_checkpoint reads it back into our decoder."""
    from planner.runtime.load import load_checkpoint

    cfg = TINY[family]
    hf = hf_model(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf.save_pretrained(tmp_path, safe_serialization=True)
    spec = parse_config(json.loads((tmp_path / "config.json").read_text()))
    ours = build_decoder(spec, seed=None)
    report = load_checkpoint(ours, tmp_path)
    assert report.missing == []
    tokens = torch.randint(0, 128, (2, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), hf(tokens).logits, atol=1e-4, rtol=0)


def test_load_rejects_a_mismatched_checkpoint(tmp_path):
    from planner.analysis.errors import ConfigError
    from planner.runtime.load import load_checkpoint

    hf = hf_model(TINY["llama"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf.save_pretrained(tmp_path, safe_serialization=True)
    spec = parse_config(dict(TINY["llama"], intermediate_size=128))
    ours = build_decoder(spec, seed=None)
    with pytest.raises(ConfigError, match="shape"):
        load_checkpoint(ours, tmp_path)
    with pytest.raises(ConfigError, match="no such folder"):
        load_checkpoint(ours, tmp_path / "missing")


@pytest.mark.parametrize("family, fragment", [("mixtral", "names expert 7, but"), ("gpt_neox", "fused QKV tensor has")])
def test_load_rejects_a_broken_checkpoint_with_one_error(family, fragment, tmp_path):
    """A checkpoint whose expert index (past num_local_experts) or fused-QKV size (a row short) disagrees
    with its config is a ConfigError that says so, not an IndexError or a reshape error from torch."""
    from safetensors.torch import load_file, save_file

    from planner.analysis.errors import ConfigError
    from planner.runtime.load import load_checkpoint

    cfg = TINY[family]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_model(cfg).save_pretrained(tmp_path, safe_serialization=True)
    (path,) = tmp_path.glob("*.safetensors")
    state = load_file(path)
    if family == "mixtral":
        assert any(".experts.3." in n for n in state)  # on disk: one tensor per expert
        state = {n.replace(".experts.3.", ".experts.7."): t for n, t in state.items()}
    else:
        state = {n: t[:-1].contiguous() if "query_key_value.weight" in n else t for n, t in state.items()}
    save_file(state, path, metadata={"format": "pt"})
    ours = build_decoder(parse_config(cfg), seed=None)
    with pytest.raises(ConfigError, match=fragment):
        load_checkpoint(ours, tmp_path)


# ---- timing, memory guard, profiles --------------------------------------------------------------


def test_cpu_timing_is_eager_even_when_graphs_are_asked_for():
    t = time_steps(lambda: torch.ones(4).sum(), torch.device("cpu"), steps=5, warmup=1, graphs=True)
    assert not t.graphs and len(t.samples_s) == 5 and t.median_s > 0 and t.spread_s >= 0


def test_memory_guard_refuses_with_the_largest_fitting_batch_and_context():
    from planner.runtime.verify import memory_guard

    def kv_at(ctx):
        return 1000 * ctx

    memory_guard(weights_bytes=10_000, kv_bytes_at=kv_at, batch=2, context=100, workspace=100, free_bytes=10**9,
                 device="cpu", margin_bytes=0)
    with pytest.raises(OptionError) as e:
        memory_guard(weights_bytes=10_000, kv_bytes_at=kv_at, batch=8, context=1000, workspace=800,
                     free_bytes=3_000_000, device="cpu", margin_bytes=0)
    msg = str(e.value)
    assert "not enough cpu memory" in msg and "--batch 2 fits at --context 1000" in msg and "--context 372 fits at --batch 8" in msg


@pytest.mark.parametrize("name,memory,expected", [
    ("NVIDIA H200", 150 * 10**9, "h200-sxm"), ("NVIDIA H100 80GB HBM3", 85 * 10**9, "h100-sxm"),
    ("NVIDIA H100 PCIe", 85 * 10**9, "h100-pcie"), ("NVIDIA A100-SXM4-40GB", 42 * 10**9, "a100-40gb"),
    ("NVIDIA A100-SXM4-80GB", 85 * 10**9, "a100-80gb"), ("NVIDIA L4", 24 * 10**9, "l4"),
    ("NVIDIA L40S", 48 * 10**9, "l40s"), ("NVIDIA GeForce RTX 4090", 25 * 10**9, "rtx-4090"),
    ("NVIDIA B200", 190 * 10**9, "b200"), ("Some Unknown GPU", None, None),
])
def test_closest_bundled_profile_by_device_name(name, memory, expected):
    from planner.runtime.verify import closest_bundled

    p = closest_bundled(name, memory)
    assert (p.name if p else None) == expected


def test_profile_choice_prefers_a_calibration_of_this_device():
    from planner.hardware.profiles import save_user_profile
    from planner.runtime.calibrate import Calibration, calibration_profile
    from planner.runtime.verify import choose_profile

    p, why = choose_profile(None, "cpu", "Test CPU")
    assert p.name == "cpu" and "template" in why
    with pytest.raises(Exception, match="no calibrated profile"):
        choose_profile("calibrated", "cpu", "Test CPU")
    cal = Calibration("cpu", "Test CPU", 20e9, 25e9, {"fp32": 1e11}, 3e-6, 16 * 2**30, 2, 1.0, {"buffer_bytes": 2**30})
    save_user_profile(calibration_profile(cal), "calibrated")
    p, why = choose_profile(None, "cpu", "Test CPU")
    assert p.name == "calibrated" and "this device" in why
    assert p.memory_bandwidth_bytes_per_s == 25e9 and p.peak_flops_for("fp32") == 1e11 and p.kernel_launch_s == 3e-6
    p, why = choose_profile(None, "cpu", "Another CPU")
    assert p.name == "cpu" and "measured on cpu: Test CPU" in why
    p, why = choose_profile("calibrated", "cpu", "Another CPU")
    assert p.name == "calibrated" and "not this device" in why


def test_quick_calibration_round_trips_through_a_saved_profile():
    from planner.hardware.profiles import load_profile, save_user_profile
    from planner.runtime.calibrate import calibrate, calibration_profile, profile_device

    cal = calibrate("cpu", quick=True)
    assert cal.copy_bytes_per_s > 0 and cal.read_bytes_per_s > 0 and cal.matmul_flops_per_s["fp32"] > 0
    assert cal.launch_s > 0 and {"copy_bytes_per_s", "read_bytes_per_s", "launch_s"} <= set(cal.figures)
    assert all(len(f.rounds) >= 3 for f in cal.figures.values())  # every figure repeated
    path = save_user_profile(calibration_profile(cal), "calibrated")
    p = load_profile("calibrated")
    assert p.origin == "user" and Path(p.path) == path
    assert profile_device(p) == f"cpu: {cal.device_name}"
    assert p.memory_bandwidth_bytes_per_s == pytest.approx(cal.read_bytes_per_s, rel=1e-3)


def test_explanation_names_bandwidth_launches_factors_and_kinds():
    from types import SimpleNamespace

    from planner.hardware.expected import FACTORS, StepCost
    from planner.runtime.verify import KindTime, explain

    parts = {k: 0.0 for k in FACTORS}
    parts.update({"GEMM efficiency": 1e-3, "step overhead": 2e-3})
    cost = StepCost(8e-3, 11e-3, parts)
    totals = SimpleNamespace(bytes=10**9, weight_bytes=9 * 10**8, kv_bytes=10**8, act_bytes=10**6, flops=2 * 10**9)
    kinds = (KindTime("matmul", 9e-3, 0.5, 0.9, 0.6), KindTime("attention", 1e-3, 0.4, 0.1, 0.3),
             KindTime("other (untraced)", 0.0, 0.1, 0.0, 0.1))
    lines = explain(predicted_s=11e-3, measured_s=20e-3, cost=cost, totals=totals, rates=(1e12, 1e11), graphs=False,
                    eager_measured_s=None, kinds=kinds, profile_name="x", engine_name="torch eager (CPU)",
                    kernels=400, launch_s=5e-6)
    text = "\n".join(lines)
    assert "-45.0%" in text and "50% of the profile's 100 GB/s" in text
    # the gap by factor, as serve words it; 10 GB at 100 GB/s vs 2 GFLOP at 1 TFLOP/s: memory-bound 5x
    assert "ideal 8 ms + GEMM efficiency +1 ms, step overhead +2 ms (step overhead: 400 kernels × 5 µs)" in text
    assert "memory-bound at the profile's peaks (5x)" in text
    assert "matmul 60% measured vs 90% predicted" in text and "outside the traced ops" in text


# ---- the CLI -------------------------------------------------------------------------------------


@pytest.fixture
def tiny_dir(tmp_path):
    def write(family: str) -> str:
        d = tmp_path / family
        d.mkdir()
        (d / "config.json").write_text(json.dumps(TINY[family]))
        return str(d)

    return write


def run_cli(*args):
    from typer.testing import CliRunner

    from planner.cli.app import app

    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("family", ["qwen2", "deepseek_v3", "gemma2"])
def test_cli_verify_json_on_a_tiny_model(family, tiny_dir):
    r = run_cli("verify", tiny_dir(family), "--device", "cpu", "--context", "16", "--batch", "2", "--steps", "3",
                "--warmup", "1", "--hardware", "cpu", "--threads", "1", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema_version"] == 1
    for key in ("params", "flops", "kv_bytes"):
        assert d["checks"][key]["ok"] is True and d["checks"][key]["predicted"] == d["checks"][key]["measured"]
    t = d["timing"]
    for key in ("predicted_s", "measured_s", "error", "spread_s", "steps", "graphs", "achieved_bytes_per_s",
                "achieved_flops_per_s"):
        assert key in t
    assert t["steps"] == 3 and t["graphs"] is False and t["measured_s"] > 0
    assert t["error"] == pytest.approx(t["predicted_s"] / t["measured_s"] - 1)
    assert d["options"]["capacity"] == 17 and d["hardware"]["name"] == "cpu"
    assert d["explanation"] and {k["kind"] for k in d["per_kind"]} >= {"matmul", "attention"}


def test_cli_verify_table_and_markdown(tiny_dir):
    path = tiny_dir("mixtral")
    r = run_cli("verify", path, "--device", "cpu", "--context", "8", "--steps", "2", "--warmup", "0", "--threads", "1",
                "--no-profile")
    assert r.exit_code == 0, r.output
    for text in ("Exact checks", "params", "flops", "kv_bytes", "Decode step", "error", "cpu: bundled 'cpu' template"):
        assert text in r.stdout
    r = run_cli("verify", path, "--device", "cpu", "--context", "8", "--steps", "2", "--warmup", "0", "--threads", "1",
                "--no-profile", "--format", "markdown")
    assert r.exit_code == 0 and "### Exact checks" in r.stdout


def test_cli_verify_refuses_bad_options_and_missing_cuda(tiny_dir):
    path = tiny_dir("llama")
    r = run_cli("verify", path, "--device", "cpu", "--dtype", "int4", "--steps", "1")
    assert r.exit_code == 1 and "Error: --dtype int4" in r.stderr
    if not torch.cuda.is_available():
        r = run_cli("verify", path, "--device", "cuda", "--steps", "1")
        assert r.exit_code == 1 and "CUDA is not available" in r.stderr and "--device cpu" in r.stderr


def test_cli_verify_refuses_a_context_past_the_learned_positions(tmp_path):
    """OPT (BLIP-2's language model) has max_position_embeddings learned positions: a --context whose decoded token
    has no row is an option error naming the limit, not an IndexError from the embedding; one less runs."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(BLIP_WRAPPED["blip-2"]))
    r = run_cli("verify", str(path), "--device", "cpu", "--context", "64", "--steps", "1", "--warmup", "0",
                "--threads", "1", "--no-profile")
    assert r.exit_code == 1 and "64 learned positions" in r.stderr and "--context 63" in r.stderr
    r = run_cli("verify", str(path), "--device", "cpu", "--context", "63", "--steps", "1", "--warmup", "0",
                "--threads", "1", "--no-profile")
    assert r.exit_code == 0, r.output


def test_cli_says_how_to_install_torch_when_it_is_missing(tiny_dir, monkeypatch):
    path = tiny_dir("llama")
    monkeypatch.setitem(sys.modules, "torch", None)
    for args in (("verify", path, "--device", "cpu"), ("calibrate", "--device", "cpu")):
        r = run_cli(*args)
        assert r.exit_code == 1
        assert r.stderr.strip().splitlines() == ["Error: the torch runtime is not installed (pip install 'planner[runtime]')"]


def test_cli_modules_do_not_import_torch():
    code = ("import sys, planner.cli.app, planner.cli.verify_cmd, planner.cli.calibrate_cmd, runtime, planner.runtime.verify\n"
            "from typer.testing import CliRunner\n"
            "for args in (['--help'], ['verify', '--help'], ['calibrate', '--help']):\n"
            "    r = CliRunner().invoke(planner.cli.app.app, args); assert r.exit_code == 0, r.output\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_calibrate_then_verify_qwen_on_cpu():
    """The acceptance flow: calibrate the CPU under a name, then verify Qwen2.5-0.5B at context 512 with no
    --hardware: verify uses exactly the profile the last calibrate saved, with its thread count, and the
    exact checks hold. (--force: a shared test machine may be too busy for the figures to agree, which
    the calibration reports; how close the timing comes is bench/ material, not a test assertion.)"""
    r = run_cli("calibrate", "--device", "cpu", "--threads", "1", "--name", "cal1", "--force", "--json")
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)
    assert Path(cal["path"]).is_file() and cal["measured"]["memory_bandwidth_bytes_per_s"] > 0
    assert set(cal["profile_data"]["matmul_efficiency_by_rows"]) == {"1", "4", "16", "64"}  # JSON keys
    r = run_cli("verify", "Qwen/Qwen2.5-0.5B", "--device", "cpu", "--context", "512",
                "--batch", "1", "--steps", "4", "--no-profile", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert all(d["checks"][k]["ok"] for k in ("params", "flops", "kv_bytes"))
    assert d["checks"]["params"]["measured"] == 494_032_768
    assert d["hardware"]["name"] == "cal1" and "last calibration" in d["hardware_choice"]
    assert d["device"]["threads"] == 1 and d["timing"]["steps"] == 4



def test_lara_mini_published_checkpoint_layout_loads():
    """Lara-4-Mini's published checkpoints fuse each DeltaNet's input projections into one in_proj (rows
    [q | k | v | z | b | a]) and name its gated norm out_norm (transformers' conversion mapping splits and renames
    them): the loader splits the rows into in_proj_qkv / z / b / a, the spec's layout renames the norm."""
    cfg = TINY["lara_mini"]
    hf = hf_model(cfg)
    sd = hf.state_dict()
    items, fused = [], {}
    for n, t in sd.items():
        if n == "lm_head.weight":  # tied: not saved
            continue
        if ".linear_attn.in_proj_" in n:
            fused.setdefault(n.split(".linear_attn.")[0], {})[n.split("in_proj_")[1].split(".")[0]] = t
            continue
        items.append((n.replace(".linear_attn.norm.", ".linear_attn.out_norm."), t))
    for pre, parts in fused.items():
        items.append((f"{pre}.linear_attn.in_proj.weight", torch.cat([parts[p] for p in ("qkv", "z", "b", "a")])))
    assert fused and any(".linear_attn.out_norm." in n for n, _ in items)
    assert_loads_and_matches(cfg, items, hf)


def per_expert_checkpoint(state: dict, back=()) -> list:
    """transformers' state dict in the released layout of one tensor per expert (qwen2_moe's): each
    ``mlp.experts.gate_up_proj`` as every expert's gate_proj (the first half of its rows) and up_proj, each
    ``mlp.experts.down_proj`` as every expert's down_proj; the other tensors' names with each (ours, original)
    pair of ``back`` replaced in turn."""
    items = []
    for n, t in state.items():
        if n.endswith("mlp.experts.gate_up_proj"):
            pre, inter = n[: -len("gate_up_proj")], t.shape[1] // 2
            for e in range(t.shape[0]):
                items += [(f"{pre}{e}.gate_proj.weight", t[e, :inter]), (f"{pre}{e}.up_proj.weight", t[e, inter:])]
            continue
        if n.endswith("mlp.experts.down_proj"):
            items += [(f"{n[: -len('down_proj')]}{e}.down_proj.weight", t[e]) for e in range(t.shape[0])]
            continue
        for ours, orig in back:
            n = n.replace(ours, orig)
        items.append((n, t))
    return items


@pytest.mark.parametrize("family,back", [
    ("kolibri1", [(".mlp.gate.e_score_correction_bias", ".moe.router.expert_bias"),
                  (".post_self_attn_layernorm.", ".post_attn_norm."), (".post_mlp_layernorm.", ".post_ffn_norm.")]),
    ("flint", [(".self_attn.sinks", ".self_attn.softmax_offset")]),
])
def test_kolibri1_and_flint_released_checkpoint_names_load(family, back):
    """Kolibri-1's and Flint's released checkpoints: one tensor per expert (qwen2_moe's layout) and their own names
    for the router's bias, the sandwich norms (Kolibri-1) and the sinks (Flint), renamed as transformers' conversion
    mapping does."""
    cfg = TINY[family]
    hf = hf_model(cfg)
    items = per_expert_checkpoint(hf.state_dict(), back)
    assert all(any(orig in n for n, _ in items) for _, orig in back)
    assert_loads_and_matches(cfg, items, hf)


def test_afmoe_released_layout_with_a_live_router_loads_and_matches():
    """AFMoE (Trinity): transformers zeroes the router's gate at init, so the parity test's experts are chosen by
    the expert_bias alone; here the router is random too (the choice and the weights by sigmoid scores), and the
    checkpoint is in the released layout (one tensor per expert, transformers' qwen2_moe conversion), its
    (E,) expert_bias parameter loaded into our router."""
    cfg = dict(TINY["afmoe"], num_hidden_layers=3, num_dense_layers=1, num_experts=6, num_experts_per_tok=3,
               layer_types=["sliding_attention", "sliding_attention", "full_attention"])
    hf = hf_model(cfg)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for n, p in hf.named_parameters():
            if n.endswith("mlp.router.gate.weight"):
                p.copy_(torch.randn(p.shape, generator=g))
    items = per_expert_checkpoint(hf.state_dict())
    assert any(n.endswith("mlp.expert_bias") and t.shape == (6,) for n, t in items)
    assert any(n.endswith("self_attn.gate_proj.weight") for n, _ in items)
    assert_loads_and_matches(cfg, items, hf)


def test_modernbert_decoder_tensor_and_pipeline_parallel_are_refused_clearly():
    """The prediction head before the LM head (lm_head.dense, lm_head.norm) is run by one process only."""
    from planner.runtime.parallel import check_tp_supported
    from planner.runtime.pipeline import check_pp_supported

    spec = parse_config(TINY["modernbert-decoder-biases-untied"])
    with pytest.raises(RuntimeUnavailableError, match="prediction head"):
        check_tp_supported(spec, 2)
    with pytest.raises(RuntimeUnavailableError, match="prediction head"):
        check_pp_supported(spec, 2, 1)


def test_idefics_v1_is_refused_by_verify_clearly(tmp_path):
    """IDEFICS v1 is analysed, not run: transformers runs its gated cross-attention blocks at every step (its forward
    needs an image), so the LLaMA layers alone would not give its logits; build and verify refuse it by name."""
    from tests.test_families import IDEFICS_V1

    assert_verify_refuses(tmp_path, IDEFICS_V1["idefics"],
                          "verify does not support IDEFICS's gated cross-attention blocks yet")


# GIT: BERT's post-LayerNorm blocks made causal (word + learned positions, then a LayerNorm; biased q/k/v/o and MLP;
# LayerNorm(x + sublayer) twice; no final norm; a biased head); its CLIP tower and projection counted, not built
_GIT = {"model_type": "git", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 96, "vocab_size": 128, "max_position_embeddings": 64,
        "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 2,
                          "image_size": 16, "patch_size": 4}}
GIT = {"git": _GIT,
       "git-tied-relu-video": dict(_GIT, tie_word_embeddings=True, hidden_act="relu", layer_norm_eps=1e-5,
                                   num_image_with_embedding=3)}


@pytest.mark.parametrize("name", sorted(GIT))
def test_git_text_logits_and_cached_decode_equal_transformers(name):
    """GIT's text decoder (GitForCausalLM without pixel_values: text tokens alone, causal) runs from the whole
    checkpoint's state dict; params.vision is its image encoder, visual projection and temporal embeddings."""
    cfg = GIT[name]
    hf = hf_model(cfg)
    spec, ours = ours_from_hf(cfg, hf)
    vision = sum(p.numel() for n, p in hf.named_parameters()
                 if n.startswith(("git.image_encoder.", "git.visual_projection.", "git.img_temporal_embedding.")))
    assert count_params(spec).vision == vision > 0
    assert_logits_and_cached_decode(spec, ours, hf)


def test_muse_spark_text_is_refused_by_verify_clearly(tmp_path):
    """Muse Spark's residual gates and projected experts: analysed and traced, not run."""
    from tests.test_families import MUSE_SPARK_TEXT

    assert_verify_refuses(tmp_path, MUSE_SPARK_TEXT, "verify does not support Muse Spark's decoder layer yet")
