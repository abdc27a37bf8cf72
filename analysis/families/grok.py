"""xAI Grok-1 (``grok-1``: hpcai-tech/grok-1, keyfan/grok-1-hf; 314B), a remote-code family transformers does
not ship, read as the hub's modeling_grok1.py / configuration_grok1.py (HPC-AI Tech's port of xai-org/grok-1's
JAX code) and vLLM's vllm/model_executor/models/grok1.py build it:

- a decoder of ``num_hidden_layers`` blocks, each with four RMSNorms of ``hidden_size`` (``pre_attn_norm``,
  ``post_attn_norm``, ``pre_moe_norm``, ``post_moe_norm``: the sandwich layout, the post norms on each branch's
  output before the residual add), GQA attention (``attn.q_proj`` / ``k_proj`` / ``v_proj`` / ``o_proj``,
  bias-free, head_dim = hidden / heads, rotate-half RoPE of base 10000), and a MoE (``moe_block``) of
  ``num_experts`` GELU-gated experts of ``intermediate_size`` (``linear`` the gate through exact GELU,
  ``linear_v`` the up, ``linear_1`` the down; bias-free) behind a bias-free ``gate`` (experts x hidden), top
  ``num_experts_per_tok``; no shared expert, no dense layer;
- the embedding multiplied by ``embedding_multiplier_scale``, the logits by ``output_multiplier_scale``, the
  attention scores by ``attn_output_multiplier`` (the softmax scale, in place of head_dim^-0.5) and then soft-capped
  at ``max_attn_value`` (``c · tanh(s / c)``); the head tied to the embedding by default (tie_word_embeddings).
- routing as the hub's code does it: softmax over the experts, the top k taken with their probabilities, not
  renormalised. vLLM's grok1.py differs (30 · tanh(l / 30) on the router logits, the top k renormalised, the
  o_proj output multiplied by attn_output_multiplier on top of the head_dim^-0.5 scale): a caveat says so; the
  counts do not depend on it.

Class defaults: HPC-AI Tech's Grok1Config (the published 314B geometry).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec, RouterKind
from .common import Traits
from . import decoder
from .hunyuan_large import relabel_defaults, remote_defaults

#: the hub's checkpoint names -> ours (RMSNorm's parameter is ``scale`` there)
GROK1_NORMS = ("pre_attn_norm", "post_attn_norm", "pre_moe_norm", "post_moe_norm")
_GROK1 = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, norms="sandwich", norm_names=GROK1_NORMS,
                act_default="gelu", moe="generic", norm_topk_fixed=False, router=RouterKind.SOFTMAX,
                windows="none", tie_default=True,
                modules=((".attn.", ".self_attn."), (".moe_block.", ".mlp."), (".linear_v.", ".up_proj."),
                         (".linear_1.", ".down_proj."), (".linear.", ".gate_proj."), ("norm.scale", "norm.weight")))

#: HPC-AI Tech's Grok1Config defaults (the published model) of the fields beside the core geometry (hidden_size,
#: num_hidden_layers, num_attention_heads, vocab_size, intermediate_size: required, as for every family)
_DEFAULTS = dict(num_key_value_heads=8, num_experts=8, num_experts_per_tok=2, rms_norm_eps=1e-5,
                 max_position_embeddings=8192)


def build_grok1(f: Fields, model_type: str) -> ModelSpec:
    remote_defaults(f, _DEFAULTS)
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    if f.has("head_dim") and f.int("head_dim") * heads != hidden:
        raise f.error("head_dim", f"({f.raw('head_dim')}) is not hidden_size / num_attention_heads "
                                  f"({hidden} / {heads}): Grok-1's attention derives its head size")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): Grok-1's head size "
                                             "is hidden_size / num_attention_heads")
    for key in ("rope_theta", "rope_scaling"):
        if f.raw(key) not in (None, 10000, 10000.0):
            raise f.error(key, f"is {f.raw(key)!r}: Grok-1's rotary embedding is fixed at base 10000, unscaled "
                               "(the hub's code reads no rope field)")
    if f.has("hidden_act") and f.str("hidden_act") != "gelu":
        raise f.error("hidden_act", f"is {f.raw('hidden_act')!r}: Grok-1's experts are GELU-gated (nn.GELU in the hub's "
                                    "MoeMLP, whatever the config says)")
    spec = decoder.build(f, model_type, _GROK1)
    scale = f.float("attn_output_multiplier", 0.08838834764831845)
    cap = f.float("max_attn_value", 30.0)
    if cap <= 0 or scale <= 0:
        raise f.error("max_attn_value" if cap <= 0 else "attn_output_multiplier", "must be positive")
    numerics = replace(spec.numerics, attention_multiplier=scale,
                       logit_scale=f.float("output_multiplier_scale", 0.5773502691896257))
    caveat = ("Grok-1: numerics as the hub's modeling_grok1.py (softmax top-k weights not renormalised, the scores "
              "scaled by attn_output_multiplier and capped at max_attn_value); vLLM's grok1.py renormalises the top "
              "k after a 30·tanh cap on the router logits and also scales the attention output (counts unaffected)")
    relabel_defaults(f, _DEFAULTS, "HPC-AI Tech's Grok1Config")
    return replace(spec, numerics=numerics, attn_logit_softcapping=cap,
                   embedding_multiplier=f.float("embedding_multiplier_scale", 78.38367176906169),
                   caveats=spec.caveats + (caveat,))
