"""Arcee AFMoE (the Trinity models: Trinity-Nano, Trinity-Mini, Trinity-Large), as transformers'
``models/afmoe`` builds it.

Every layer: attention with per-head q/k RMSNorms, q/k/v/o biased by ``attention_bias``, and a bias-free
``gate_proj`` (hidden -> heads x head_dim) whose sigmoid scales the attention output before ``o_proj``;
sandwich norms (input / post_attention around the attention, pre_mlp / post_mlp around the FFN). Sliding
layers (``layer_types``; when absent, full attention on every ``global_attn_every_n_layers``-th layer) attend
``sliding_window`` keys with RoPE; full layers use no position embedding (NoPE). The first
``num_dense_layers`` layers have a dense gated MLP of ``intermediate_size``, the rest a MoE: ``num_experts``
experts of ``moe_intermediate_size``, ``num_shared_experts`` always-on experts fused into one MLP of
``num_shared_experts x moe_intermediate_size``, a sigmoid router (``router.gate``) whose choice adds the
``expert_bias`` (an ``nn.Parameter`` of ``num_experts``, counted), the chosen scores renormalised and scaled
by ``route_scale``. ``mup_enabled`` scales the embeddings by sqrt(hidden_size).
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention, GatedAttention
from ..spec import ModelSpec, MoE, RouterKind
from . import decoder
from .common import Traits, per_layer_types

TRAITS = Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, qk_norm="head",
                norms="sandwich", norm_names=("input_layernorm", "post_attention_layernorm", "pre_mlp_layernorm",
                                              "post_mlp_layernorm"),
                head_dim_default=128, windows="none",
                # the router's linear is router.gate (ours: router); expert_bias is read by runtime/load.py
                modules=((".mlp.router.gate.", ".mlp.router."),))


def build(f: Fields, model_type: str) -> ModelSpec:
    if "head_dim" in f.cfg and f.cfg["head_dim"] is None:
        # AfmoeAttention reads config.head_dim as is (no hidden / heads fallback): null does not build
        raise f.error("head_dim", "is null: transformers' AFMoE attention takes head_dim as given (no "
                                  "hidden_size / num_attention_heads fallback), so set it")
    spec = decoder.build(f, model_type, TRAITS)  # attention, dense MLPs, sandwich norms, head, RoPE on every layer
    n = spec.num_layers
    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n, ("sliding_attention", "full_attention"))
    else:
        every = f.int("global_attn_every_n_layers", lo=1, hi=MAX_LAYERS)
        types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n)]
        f.derived("layer_types", f"list[{n}]: {types.count('full_attention')} full",
                  f"absent: full attention on every {every}th layer (layers {every - 1}, {2 * every - 1} ...), "
                  "sliding elsewhere")
    window = f.int("sliding_window", lo=1, hi=1 << 30) if "sliding_attention" in types else None
    dense = f.int("num_dense_layers", lo=0, hi=MAX_LAYERS)
    moe = None
    if dense < n:
        hidden = spec.hidden_size
        n_exp = f.int("num_experts")
        k = f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        size = f.int("moe_intermediate_size")
        shared = f.int("num_shared_experts", lo=0)
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared * size, correction_bias_param=True,
                  act=spec.hidden_act)
    layers = []
    for i, layer in enumerate(spec.layers):
        attn = layer.mixer
        sliding = types[i] == "sliding_attention"
        gated = GatedAttention(**{x.name: getattr(attn, x.name) for x in fields(Attention)}, proj_gate=True)
        # AfmoeAttention applies RoPE on the sliding layers only
        gated = replace(gated, window=window if sliding else None, rotary_dim=attn.rotary_dim if sliding else 0)
        layers.append(replace(layer, mixer=gated, ffn=moe if i >= dense else layer.ffn))
    numerics = spec.numerics
    if moe is not None:
        # sigmoid scores; the choice by scores + expert_bias, the chosen scores / (their sum + 1e-20) x route_scale
        numerics = replace(numerics, router=RouterKind.SIGMOID, norm_topk_prob=True, score_correction_bias=True,
                           routed_scaling_factor=f.float("route_scale"))
    mup = f.bool("mup_enabled")
    return replace(spec, layers=tuple(layers), numerics=numerics,
                   embedding_multiplier=spec.hidden_size ** 0.5 if mup else 1.0)
