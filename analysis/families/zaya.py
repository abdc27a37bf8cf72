"""Zyphra ZAYA (``zaya``; ZAYA1), as transformers 5.24 builds it (models/zaya/modeling_zaya.py, ``ZayaForCausalLM``).

Every layer is ZAYA's compressed convolutional attention (``analysis.mixers.cca``: q/k convs, half-delayed V, L2 q/k
norms with a per-KV-head temperature, learned residual scales) then a MoE of ``num_experts`` SwiGLU experts of
``moe_intermediate_size`` (top ``num_experts_per_tok``, which transformers requires to be 1) with ZAYA's MLP router
(``router_hidden_size``: down_proj, a router-state scale from the previous layer on every layer but the first, an
RMSNorm, fc1, fc2 and out_proj) over ``num_experts + 1`` classes: the extra one a skip expert without weights or
compute (``MoE.zero_experts``). ``layer_types``: "hybrid" (full) or "hybrid_sliding" (``sliding_window``), each with
its own ``rope_parameters`` entry (theta, ``partial_rotary_factor``: rotary dims ``int(head_dim · factor)``). The
model scales its input embedding (``input_hidden_states_scale`` / ``input_hidden_states_bias``, counted with the
model-level tensors); lm_head is tied by default and biased with ``lm_head_bias``.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.cca import CCAttention
from ..spec import Layer, ModelSpec, MoE, Norm, PlacedNorm, Tensor
from .common import Traits, per_layer_types, read_act, read_eps, read_tie

_TRAITS = Traits()
_TYPES = ("hybrid", "hybrid_sliding")
#: ZayaConfig.__post_init__'s rope_parameters when the config gives none
_ROPE_DEFAULTS = {"hybrid": (5_000_000.0, 0.5), "hybrid_sliding": (10_000.0, 0.5)}


def _rope(f: Fields, kind: str, head_dim: int) -> tuple[float, int]:
    """(theta, rotary dims) of a layer type, from rope_parameters[kind] (ZayaRotaryEmbedding)."""
    params = f.raw("rope_parameters")
    if params is None:
        theta, factor = _ROPE_DEFAULTS[kind]
        return f.derived(f"rope_parameters.{kind}", theta, "ZayaConfig's default"), int(head_dim * factor)
    block = params.get(kind) if isinstance(params, dict) else None
    if not isinstance(block, dict):
        raise f.error("rope_parameters", f"has no '{kind}' entry (ZAYA keeps one RoPE block per layer type)")
    theta, factor = block.get("rope_theta"), block.get("partial_rotary_factor", 1.0)
    for name, v in (("rope_theta", theta), ("partial_rotary_factor", factor)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise f.error("rope_parameters", f"'{kind}'.{name} must be a positive number, got {v!r}")
    if factor > 1:
        raise f.error("rope_parameters", f"'{kind}'.partial_rotary_factor must be in (0, 1], got {factor}")
    return float(theta), int(head_dim * factor)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    heads, kv, hd = f.int("num_attention_heads"), f.int("num_key_value_heads"), f.int("head_dim")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    if (kv * hd) % 2:
        raise f.error("head_dim", f"num_key_value_heads x head_dim ({kv * hd}) must be even: half of each value "
                      "head comes from the current token, half from the previous one")
    t0, t1 = f.int("cca_time0", hi=1024), f.int("cca_time1", hi=1024)
    if t0 + t1 < 3:
        raise f.error("cca_time0", "and cca_time1 are both 1: transformers' CCA keeps a conv state of "
                      "(cca_time0 - 1) + (cca_time1 - 1) columns, and an empty one is not handled")
    top_k = f.int("num_experts_per_tok")
    if top_k != 1:
        raise f.error("num_experts_per_tok", f"is {top_k}; ZAYA supports 1 only (ZayaConfig.validate_architecture)")
    if f.raw("layer_types") is not None:
        sliding = [t == "hybrid_sliding" for t in per_layer_types(f, "layer_types", n_layers, _TYPES)]
    else:
        sliding = f.derived("layer_types", [False] * n_layers, "every layer 'hybrid' (the config class's default)")
    window = f.int("sliding_window", hi=1 << 40) if any(sliding) else None
    bias = f.bool("attention_bias")
    ropes = {kind: _rope(f, kind, hd) for kind in set("hybrid_sliding" if s else "hybrid" for s in sliding)}
    act = read_act(f, _TRAITS)
    experts, inter = f.int("num_experts"), f.int("moe_intermediate_size")
    router = f.int("router_hidden_size")
    norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
             PlacedNorm("post_attention_layernorm", "pre_ffn", Norm(hidden)))
    layers = []
    for i in range(n_layers):
        theta, rot = ropes["hybrid_sliding" if sliding[i] else "hybrid"]
        mixer = CCAttention(hidden, heads, kv, hd, hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias,
                            window=window if sliding[i] else None, rotary_dim=rot, rope_theta=theta,
                            cca_time0=t0, cca_time1=t1)
        moe = MoE(hidden, experts, top_k, inter, act=act, zero_experts=1, router_mlp=router,
                  router_state_scale=i > 0)
        layers.append(Layer(mixer, moe, norms))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), lm_head_bias=f.bool("lm_head_bias"), final_norm=Norm(hidden),
        hidden_act=act, norm_eps=read_eps(f), max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40),
        head_hc=(Tensor("model.input_hidden_states_scale", (hidden,), "other"),
                 Tensor("model.input_hidden_states_bias", (hidden,), "other")),
        caveats=("ZAYA's router picks among num_experts + 1 classes, the last a skip expert that computes nothing: "
                 "active parameters and FLOPs count one routed expert per token (an upper bound); its router MLP "
                 "and the EDA state carried from layer to layer are counted, their numerics are not modelled",),
    )
