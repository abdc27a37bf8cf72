"""MPT (mosaicml/mpt-7b, mpt-30b and their -instruct / -chat / -8k variants), as transformers'
modeling_mpt.py builds it.

- The top level names the shape ``d_model``, ``n_heads``, ``n_layers``, ``max_seq_len`` (aliases of the
  standard fields); the attention reads the nested ``attn_config`` block (``clip_qkv``,
  ``softmax_scale``, ``alibi``, ``alibi_bias_max``, ``qk_ln``, ``attn_type``) with its class defaults.
- Attention: one fused, bias-free ``Wqkv`` (rows ``[q; k; v]``, multi-head), its output clamped to
  ``[-clip_qkv, clip_qkv]`` when set, scores scaled by ``softmax_scale`` (default 1/sqrt(head_dim)),
  ALiBi instead of any position embedding (slopes ``2^(-alibi_bias_max · i / n)`` over the next power
  of two of heads, BLOOM's at the default 8), a bias-free ``out_proj``.
- MLP: ``up_proj`` (4 × d_model) -> exact GELU -> ``down_proj``, bias-free.
- LayerNorms without bias (``norm_1``, ``norm_2``, ``norm_f``), eps ``layer_norm_epsilon``; no
  embedding norm; lm_head tied by default.

transformers builds that block whatever ``expansion_ratio``, ``no_bias``, ``qk_ln`` and ``alibi`` say
(every published MPT is 4 / true / false / true); a config that sets another value describes a checkpoint
transformers cannot load, so it is refused naming the field rather than counted as the block transformers
would build. ``attn_type`` grouped_query_attention (``kv_n_heads`` K/V heads, llm-foundry's GQA option) and
multiquery_attention (one) are counted as MosaicML's code and vLLM's mpt.py build them (a narrower ``Wqkv``);
transformers' MptAttention is multi-head only and does not load them. ``logit_scale`` and
``alibi_bias_max`` (null and 8 in every published config) are applied as MosaicML's code does (transformers
ignores both: MptModel never passes ``alibi_bias_max`` to its ALiBi); the parameter counts do not depend on them.
"""

from __future__ import annotations

import math

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics
from .common import merge_nested, nested_fields, pre_norms, read_mha_shape, read_tie

#: MptForCausalLM's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("transformer.wte.", "model.embed_tokens."), ("transformer.blocks.", "model.layers."),
             ("transformer.norm_f.", "model.norm.")),
    modules=((".attn.Wqkv.", ".self_attn.qkv_proj."), (".attn.out_proj.", ".self_attn.o_proj."),
             (".norm_1.", ".input_layernorm."), (".norm_2.", ".post_attention_layernorm."),
             (".ffn.up_proj.", ".mlp.up_proj."), (".ffn.down_proj.", ".mlp.down_proj.")))

EXPANSION = 4  # MptMLP: Linear(d_model, 4 * d_model), whatever expansion_ratio says


def _kv_heads(attn_f: Fields, attn_type: str, heads: int) -> tuple[int, str | None]:
    """K/V heads of the fused ``Wqkv`` (rows ``[q (d_model); k (kv x head_dim); v (kv x head_dim)]``), as MosaicML's
    llm-foundry attention classes build them and vLLM's mpt.py loads them: ``grouped_query_attention`` reads
    ``kv_n_heads``; ``multiquery_attention`` is one K/V head; ``multihead_attention`` all heads. (transformers'
    MptAttention is multi-head only: such a GQA / MQA checkpoint loads in vLLM and MosaicML's remote code, not in
    transformers.) With a caveat when multi-head attention comes with a different ``kv_n_heads``."""
    if attn_type == "multihead_attention":
        kv = attn_f.int("kv_n_heads") if attn_f.has("kv_n_heads") else heads
        if kv == heads:
            return heads, None
        # llm-foundry's MultiheadAttention ignores kv_n_heads (its checkpoint's Wqkv is 3 x d_model); vLLM's mpt.py
        # reads kv_n_heads whatever attn_type says
        return heads, (f"MPT: attn_config.kv_n_heads ({kv}) is ignored with attn_type 'multihead_attention', as "
                       f"MosaicML's code does (all {heads} K/V heads, a 3 x d_model Wqkv); vLLM's mpt.py would read "
                       f"{kv} K/V heads and not load such a checkpoint")
    if attn_type == "multiquery_attention":
        return 1, None
    if attn_type == "grouped_query_attention":
        kv = attn_f.int("kv_n_heads")
        if kv > heads or heads % kv:
            raise attn_f.error("kv_n_heads", f"({kv}) must divide n_heads ({heads})")
        return kv, None
    raise attn_f.error("attn_type", f"is {attn_type!r}: MPT's attention is multihead_attention, "
                                    "multiquery_attention or grouped_query_attention; not supported")


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    ratio = f.float("expansion_ratio", EXPANSION)
    if ratio != EXPANSION:
        raise f.error("expansion_ratio", f"is {ratio:g}: transformers' MptMLP is always {EXPANSION} x d_model, so "
                                         "such a checkpoint does not load in transformers; not supported")
    if not f.bool("no_bias", True):
        raise f.error("no_bias", "is false (biased linears and LayerNorms, MosaicML's code only): transformers "
                                 "builds MPT bias-free; not supported")
    norm_type = f.str("norm_type", "low_precision_layernorm")
    if "rms" in norm_type.lower():
        raise f.error("norm_type", f"is {norm_type!r}: transformers' MPT has LayerNorms only; not supported")
    eps = f.float("layer_norm_epsilon", 1e-5)

    attn_f = nested_fields(f, "attn_config")
    attn_type = attn_f.str("attn_type", "multihead_attention")
    kv, kv_caveat = _kv_heads(attn_f, attn_type, heads)
    if attn_f.bool("qk_ln", False):
        raise attn_f.error("qk_ln", "is true (q/k LayerNorms, MosaicML's code only): transformers' MPT has none; "
                                    "not supported")
    if not attn_f.bool("alibi", True):
        raise attn_f.error("alibi", "is false (learned or rotary positions, MosaicML's code only): transformers' MPT "
                                    "always applies ALiBi; not supported")
    bias_max = attn_f.float("alibi_bias_max", 8.0)
    clip = attn_f.float("clip_qkv", None, positive=False)
    if clip is not None and clip < 0:
        raise attn_f.error("clip_qkv", f"must be >= 0 (0: no clipping), got {clip:g}")
    scale = attn_f.float("softmax_scale", None)
    merge_nested(f, "attn_config", attn_f)

    logit_scale = f.raw("logit_scale")
    if logit_scale == "inv_sqrt_d_model":
        mult = f.derived("logit_scale", 1 / math.sqrt(hidden), "inv_sqrt_d_model: logits times 1/sqrt(d_model)")
    elif logit_scale is None:
        mult = 1.0
    else:
        mult = f.float("logit_scale")

    ln = lambda: Norm(hidden, NormKind.LAYER, bias=False)  # noqa: E731
    act = "gelu"  # nn.GELU(approximate="none")
    attn = Attention(hidden, heads, kv, hd, hd, fused_qkv=True, alibi=True)
    layer = Layer(attn, MLP(hidden, EXPANSION * hidden, gated=False, bias=False, act=act), pre_norms(ln))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=eps,
        numerics=Numerics(clip_qkv=clip or None, attention_multiplier=scale, logit_scale=mult,
                          alibi_bias_max=bias_max),
        checkpoint=LAYOUT, caveats=(kv_caveat,) if kv_caveat else (),
    )
