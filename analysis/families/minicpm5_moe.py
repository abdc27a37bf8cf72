"""OpenBMB MiniCPM5 MoE (``minicpm5_moe``: MiniCPM5-15B-A2.5B / "16A3B", ``MiniCPM5MoeForCausalLM``), new in
transformers 5.25 (``models/minicpm5_moe/modular_minicpm5_moe.py``): DeepSeek-V3's MoE under a gated GQA attention.

- Attention (``MiniCPM5MoeAttention``, Llama's with Qwen3-Next's output gate): ``q_gate_proj`` (hidden ->
  2 · heads · head_dim, per head [q | gate]; the checkpoint's ``q_proj``, renamed by transformers' conversion
  mapping), ``k_proj`` / ``v_proj`` (hidden -> kv · head_dim), ``o_proj``; all four biased by ``attention_bias``;
  no q/k norms; the attention output times ``sigmoid(gate)`` before ``o_proj``. RoPE (rotate half) over the
  whole ``head_dim`` (DeepseekV3RotaryEmbedding; ``partial_rotary_factor`` is not read). ``use_gated_attention``
  false is refused by transformers (``validate_architecture``) and so here.
- MLP by layer (``mlp_layer_types``: "dense" / "sparse"; absent, the first ``first_k_dense_replace`` layers
  (default 1) dense): a SwiGLU MLP of ``intermediate_size``, or DeepseekV3MoE: a bias-free fp32 router
  (n_routed_experts x hidden) with a choice-only ``e_score_correction_bias`` buffer, ``n_routed_experts``
  SwiGLU experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``), one shared SwiGLU MLP of
  ``n_shared_experts x moe_intermediate_size``. Routing: sigmoid scores, groups ranked by their two best
  (``n_group`` / ``topk_group``), renormalised by ``norm_topk_prob``, scaled by ``routed_scaling_factor``.
- Two RMSNorms a layer, a final RMSNorm, ``lm_head`` untied by default. No muP multipliers, no MTP layers.

The class defaults (MiniCPM5-15B-A2.5B: hidden 2048, 28 layers, 32 heads / 2 KV of 128, vocab 130560, dense 8192,
160 experts of 512 top 16, one shared) are 15,002,552,320 parameters (transformers on the meta device), 2,771,961,856
active (tests/test_minicpm5_param2.py), KV 1,024 B/token/layer in bf16.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, CheckpointLayout, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle, RouterKind
from .common import (Traits, check_groups, pre_norms, read_act, read_eps, read_rope, read_routing, read_tie,
                     sparse_layers)
from .hybrid import read_attention


def build(f: Fields, model_type: str) -> ModelSpec:
    if f.raw("use_gated_attention") is False:
        raise UnsupportedModelError(f"{f.where}: use_gated_attention is false: transformers' MiniCPM5Moe requires "
                                    "gated attention (its validate_architecture refuses such a checkpoint)")
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), rotary_fixed=1.0, qk_norm_dim=0,
                          output_gate=True)
    act = read_act(f, Traits())
    if f.raw("mlp_layer_types") is not None:
        moe_at = sparse_layers(f, n_layers)
    else:  # MiniCPM5MoeConfig.__post_init__: first_k_dense_replace (a kwarg, default 1) dense layers first
        first = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
        moe_at = set(range(first, n_layers))
        f.derived("mlp_layer_types", ["sparse" if i in moe_at else "dense" for i in range(n_layers)],
                  f"absent: the first {min(first, n_layers)} layers dense (first_k_dense_replace)")
    moe = None
    numerics = Numerics(rope_style=RopeStyle.HALF)
    if moe_at:
        n_exp = f.int("n_routed_experts")
        k = f.int("num_experts_per_tok")  # k <= n_exp: check_groups, below
        size = f.int("moe_intermediate_size")
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=f.int("n_shared_experts", 1, lo=0) * size, act=act)
        routing = read_routing(f, RouterKind.SIGMOID, group_score=GroupScore.TOP2)
        check_groups(f, n_exp, k, routing["n_group"], routing["topk_group"], "n_routed_experts", top2=True)
        numerics = Numerics(rope_style=RopeStyle.HALF, score_correction_bias=True, **routing)
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if len(moe_at) < n_layers else None
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(attn, moe if i in moe_at else dense, norms) for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=read_rope(f, attn.head_dim)[2], max_position_embeddings=f.int("max_position_embeddings", 524288, hi=1 << 40),
        numerics=numerics,
        # the hub checkpoint's q_proj (ours); transformers' module (and an unconverted state dict) calls it q_gate_proj
        checkpoint=CheckpointLayout(modules=((".self_attn.q_gate_proj.", ".self_attn.q_proj."),)),
    )
