"""inclusionAI's Ling / Ring MoE models (``bailing_moe``; ``bailing_moe_v2`` in some wrappers' configs): a remote-code
family transformers does not ship.

Two generations share the ``model_type`` "bailing_moe" (the hub configs of Ling-lite / Ling-plus / Ling-Coder-lite
and of Ling-mini-2.0 / Ling-flash-2.0 / Ling-1T / Ring-1T all say "bailing_moe"; the 2.0 ones name the
architecture BailingMoeV2ForCausalLM). vLLM serves both with one file (``vllm/model_executor/models/
bailing_moe.py``: BailingMoeV2ForCausalLM is BailingMoeForCausalLM) that switches on config fields; so does this
reader. Shapes, from the remote code (github.com/inclusionAI/Ling ``models/modeling_bailing_moe.py``,
github.com/inclusionAI/Ling-V2 ``models/modeling_bailing_moe_v2.py``) and vLLM:

- attention: one fused ``query_key_value`` (hidden -> (heads + 2 kv_heads) x head_dim, rows [q; k; v], biased by
  ``use_qkv_bias``), ``dense`` (heads x head_dim -> hidden, biased by ``use_bias``); head_dim is the config's, else
  hidden / heads. ``use_qk_norm`` (Ling 2.0): per-head RMSNorms (head_dim) of q and k, before RoPE. RoPE (rotate
  half) on the first head_dim x ``partial_rotary_factor`` dimensions (absent: all).
- norms: RMSNorm input_layernorm / post_attention_layernorm, a final norm; the embedding is ``word_embeddings``,
  the head ``lm_head`` (tied by ``tie_word_embeddings``, default false).
- FFN: the first ``first_k_dense_replace`` layers a bias-free SwiGLU MLP of ``intermediate_size``, the rest a MoE:
  a bias-free router (``mlp.gate.weight``, num_experts x hidden), ``num_experts`` SwiGLU experts of
  ``moe_intermediate_size``, ``num_shared_experts`` shared experts as one MLP of ``num_shared_experts x
  moe_intermediate_size`` (vLLM: ``moe_shared_expert_intermediate_size`` when given). The remote code's MLPs
  have no bias whatever ``use_bias`` says (only ``dense`` takes it).
- routing: ``score_function`` absent or "softmax" (Ling 1): softmax over all experts, top-k, renormalised by
  ``norm_topk_prob``; "sigmoid" (Ling 2.0): sigmoid scores, the choice by scores + ``expert_bias`` (a buffer of
  num_experts, ``moe_router_enable_expert_bias``; stored in the checkpoint in fp32, not a parameter) within the
  ``topk_group`` best of ``n_group`` groups (a group's score: its two best), the chosen scores renormalised and
  scaled by ``routed_scaling_factor``. vLLM pairs softmax with no bias and sigmoid with a bias only, and groups
  whenever n_group and topk_group are set (a softmax router's group score: its best expert).
- ``num_nextn_predict_layers`` MTP layers (Ling 2.0 base checkpoints): stored after the decoder as
  ``model.layers.{num_hidden_layers + i}`` (sglang's and llama.cpp's reading), each enorm + hnorm + eh_proj
  (2 hidden -> hidden) + a MoE decoder block + final_layernorm; reported apart, not in the total (as DeepSeek's).
- ``norm_head`` (Ling-plus): the lm_head's columns are L2-normalised when loaded (vLLM); no shape change.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import (MLP, CheckpointLayout, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle,
                    RouterKind)
from .common import check_groups, pre_norms, read_act, read_rope, read_tie, Traits

TRAITS = Traits(act_default="silu")

#: the checkpoint's names, ours after: the loader already maps query_key_value / dense / shared_experts
CHECKPOINT = CheckpointLayout(
    renames=(("model.word_embeddings.", "model.embed_tokens."),),
    modules=((".attention.query_layernorm.", ".self_attn.q_norm."), (".attention.key_layernorm.", ".self_attn.k_norm."),
             (".mlp.gate.expert_bias", ".mlp.gate.e_score_correction_bias")),
)


def read_head_rope(f: Fields, hidden: int, heads: int) -> tuple[int, float, int, object]:
    """``head_dim`` (hidden_size / num_attention_heads when absent) and the RoPE fields (base, rotary width, scaling)
    of a Bailing-style attention (Ling 2.0, Param2), the rotary width checked to be even."""
    if f.raw("head_dim") is not None:
        hd = f.int("head_dim")
    else:
        if hidden % heads:
            raise f.error("head_dim", f"is missing and hidden_size ({hidden}) is not divisible by "
                                      f"num_attention_heads ({heads})")
        hd = f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads")
    theta, rotary_dim, scaling = read_rope(f, hd)
    if rotary_dim % 2:
        raise f.error("partial_rotary_factor", f"gives an odd rotary dimension ({rotary_dim}) of head_dim {hd}")
    return hd, theta, rotary_dim, scaling


def build(f: Fields, model_type: str) -> ModelSpec:
    # BailingMoeConfig's defaults (the remote configuration_bailing_moe.py) where a config leaves a field out
    hidden = f.int("hidden_size", 1024)
    n_layers = f.int("num_hidden_layers", 24, hi=MAX_LAYERS)
    heads = f.int("num_attention_heads", 16)
    vocab = f.int("vocab_size", 30592, hi=1 << 26)
    kv = f.int("num_key_value_heads", 0, lo=0)
    if kv == 0:  # the class default: the remote attention divides heads by it
        raise f.error("num_key_value_heads", "is 0 or absent (BailingMoeConfig's default): the remote attention "
                                             "divides num_attention_heads by it, so set it")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd, theta, rotary_dim, scaling = read_head_rope(f, hidden, heads)
    qkv_bias = f.bool("use_qkv_bias", False)
    o_bias = f.bool("use_bias", True)
    qk_norm = f.bool("use_qk_norm", False)
    act = read_act(f, TRAITS)

    first_dense = f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS)
    dense_at = set(range(min(first_dense, n_layers)))
    moe = None
    if len(dense_at) < n_layers or f.int("num_nextn_predict_layers", 0, lo=0, hi=64):
        n_exp = f.int("num_experts", 16)
        k = f.int("num_experts_per_tok", 2)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        size = f.int("moe_intermediate_size")  # the class default (None) does not build
        n_shared = f.int("num_shared_experts", 0, lo=0)
        shared = 0
        if n_shared:
            per = f.int("moe_shared_expert_intermediate_size") if f.raw("moe_shared_expert_intermediate_size") \
                is not None else size
            shared = n_shared * per
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared, act=act)
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if dense_at else None

    numerics = _routing(f, moe) if moe is not None else Numerics(rope_style=RopeStyle.HALF)
    # norm_head (Ling-plus): vLLM L2-normalises the lm_head's columns (dim 0) as it loads them
    numerics = replace(numerics, lm_head_l2_norm=f.bool("norm_head", False))

    norm = lambda: Norm(hidden)  # noqa: E731
    attn = Attention(hidden, heads, kv, hd, hd, q_bias=qkv_bias, k_bias=qkv_bias, v_bias=qkv_bias, o_bias=o_bias,
                     fused_qkv=True, q_norm_dim=hd if qk_norm else 0, k_norm_dim=hd if qk_norm else 0,
                     rotary_dim=rotary_dim, rope_theta=theta)
    layers = tuple(Layer(attn, dense if i in dense_at else moe, pre_norms(norm)) for i in range(n_layers))
    n_mtp = f.int("num_nextn_predict_layers", 0, lo=0, hi=64)
    mtp = tuple(Layer(attn, moe, pre_norms(norm)) for _ in range(n_mtp))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm(), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-5), rope_scaling=scaling,
        max_position_embeddings=f.int("max_position_embeddings", 16384, hi=1 << 40),
        # per MTP layer besides its block: enorm, hnorm, final_layernorm and eh_proj (2 hidden -> hidden)
        mtp_layers=mtp, mtp_extra_params=n_mtp * (3 * hidden + 2 * hidden * hidden),
        numerics=numerics, checkpoint=CHECKPOINT,
    )


def _routing(f: Fields, moe: MoE) -> Numerics:
    fn = f.str("score_function", "softmax") if f.raw("score_function") is not None else \
        f.derived("score_function", "softmax", "absent: softmax (vLLM's default; Ling 1's router)")
    if fn not in ("softmax", "sigmoid"):
        raise f.error("score_function", f"is {fn!r}; the Bailing MoE router takes 'softmax' or 'sigmoid'")
    bias = f.bool("moe_router_enable_expert_bias", False)
    if (fn == "sigmoid") != bias:
        # vLLM's BailingMoE asserts the pairs (softmax, no bias) and (sigmoid, a bias)
        raise f.error("moe_router_enable_expert_bias", f"is {str(bias).lower()} with score_function {fn!r}: the "
                                                       "Bailing MoE router pairs softmax with no expert bias and "
                                                       "sigmoid with one")
    return grouped_routing(f, moe, fn, bias)


def grouped_routing(f: Fields, moe: MoE, fn: str, bias: bool) -> Numerics:
    """vLLM's BailingMoE router (also Param2-MoE's) with score function ``fn`` and expert ``bias``: grouped top-k
    when the config sets both ``n_group`` and ``topk_group`` (vLLM's use_grouped_topk), top-k renormalised when
    more than one expert is chosen, scaled by ``routed_scaling_factor``."""
    grouped = f.raw("n_group") is not None and f.raw("topk_group") is not None  # vLLM's use_grouped_topk
    n_group = f.int("n_group", 1, lo=1) if grouped else 1
    topk_group = f.int("topk_group", 1, lo=1) if grouped else 1
    if grouped:
        check_groups(f, moe.num_experts, moe.num_experts_per_tok, n_group, topk_group, "num_experts")
    # the remote gates renormalise the top-k only when more than one expert is chosen
    norm_topk = f.bool("norm_topk_prob", True) and moe.num_experts_per_tok > 1
    return Numerics(rope_style=RopeStyle.HALF, router=RouterKind.SIGMOID if fn == "sigmoid" else RouterKind.SOFTMAX,
                    norm_topk_prob=norm_topk, routed_scaling_factor=f.float("routed_scaling_factor", 1.0),
                    n_group=n_group, topk_group=topk_group,
                    # vLLM's grouped_topk: a group's score is its two best (choice-biased) scores with the
                    # correction bias, else its best score
                    group_score=GroupScore.NONE if n_group == 1 else GroupScore.TOP2 if bias else GroupScore.MAX,
                    score_correction_bias=bias)
