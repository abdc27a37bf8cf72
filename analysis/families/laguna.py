"""Laguna (Poolside; transformers' ``laguna``, LagunaForCausalLM), read as transformers 5.24 builds it.

- Attention: GQA with ``num_key_value_heads`` KV heads of ``head_dim`` (class default 128) on every layer, but
  ``num_attention_heads_per_layer[i]`` query heads on layer ``i`` (else ``num_attention_heads`` everywhere);
  q/k/v/o biased by ``attention_bias``; per-head q/k RMSNorms; a bias-free ``g_proj`` whose softplus scales the
  attention output before ``o_proj``: one gate per head (``gating`` true or ``"per-head"``, the default) or one per
  output feature (``gating`` false or ``"per-element"``: g_proj hidden -> heads x head_dim).
- ``layer_types``: ``full_attention`` / ``sliding_attention`` (window ``sliding_window``, 512); all full when absent.
- RoPE per layer type (``rope_parameters`` keyed by layer type; absent: full layers theta 5e5 on half of head_dim,
  sliding layers theta 1e4 on all of it), each type its own base, ``partial_rotary_factor`` and rope type.
- MLP per layer by ``mlp_layer_types`` ("dense" / "sparse"; absent: layer 0 dense, the rest sparse): a dense SwiGLU
  of ``intermediate_size``, or ``num_experts`` routed experts of ``moe_intermediate_size`` (top
  ``num_experts_per_tok``) plus one always-on shared SwiGLU of ``shared_expert_intermediate_size``. The router:
  sigmoid of the (optionally tanh soft-capped) logits, the choice by score + ``e_score_correction_bias`` (an
  nn.Parameter, so counted), the chosen scores always renormalised, then scaled by ``moe_routed_scaling_factor``.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..mixers.attention import GatedAttention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, RouterKind
from .common import (Traits, per_layer_types, pre_norms, read_act, read_eps, read_ropes_by_type, read_tie,
                     sparse_layers)

TRAITS = Traits()

_TYPES = ("full_attention", "sliding_attention")
#: LagunaConfig.__post_init__'s rope_parameters when the config has none
_DEFAULT_ROPE = {"full_attention": {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5},
                 "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0}}


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = f.int("num_key_value_heads")
    hd = f.int("head_dim")
    if f.raw("layer_types") is None:
        types = f.derived("layer_types", ["full_attention"] * n_layers, "absent: full attention on every layer")
    else:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    if f.raw("num_attention_heads_per_layer") is None:
        heads = [f.int("num_attention_heads")] * n_layers
    else:
        heads = f.int_list("num_attention_heads_per_layer", n_layers, lo=1)
    for i, h in enumerate(heads):
        if h % kv:
            key = "num_attention_heads_per_layer" if f.raw("num_attention_heads_per_layer") is not None \
                else "num_attention_heads"
            raise f.error(key, f"gives layer {i} {h} query heads, not a multiple of num_key_value_heads ({kv})")
    window = None
    if "sliding_attention" in types:
        window = f.int("sliding_window", hi=1 << 30)
    per_element = _per_element_gate(f)
    bias = f.bool("attention_bias", False)
    ropes = read_ropes_by_type(f, types, hd, _DEFAULT_ROPE, "LagunaConfig")
    mixers = [GatedAttention(hidden_size=hidden, num_attention_heads=heads[i], num_key_value_heads=kv, head_dim=hd,
                             v_head_dim=hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias, q_norm_dim=hd,
                             k_norm_dim=hd, window=window if t == "sliding_attention" else None,
                             rotary_dim=ropes[t][1], rope_theta=ropes[t][0], head_gate=True, gate_softplus=True,
                             gate_per_element=per_element)
              for i, t in enumerate(types)]

    act = read_act(f, TRAITS)
    if f.raw("mlp_layer_types") is None:
        f.derived("mlp_layer_types", ["dense"] + ["sparse"] * (n_layers - 1), "absent: layer 0 dense, the rest sparse")
        moe_at = set(range(1, n_layers))
    else:
        moe_at = sparse_layers(f, n_layers)
    dense = MLP(hidden, f.int("intermediate_size"), act=act)
    moe = None
    if moe_at:
        n_exp, k = f.int("num_experts"), f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"),
                  shared_intermediate_size=f.int("shared_expert_intermediate_size"), act=act,
                  correction_bias_param=True)
    if f.bool("moe_apply_router_weight_on_input", False):
        raise UnsupportedModelError(f"{f.where}: moe_apply_router_weight_on_input is true, which transformers' "
                                    "Laguna does not implement (it raises NotImplementedError)",
                                    "a Laguna config has it false")
    softcap = f.float("moe_router_logit_softcapping", 0.0, positive=False)
    if softcap < 0:
        raise f.error("moe_router_logit_softcapping", f"must be >= 0 (0: none), got {softcap}")
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(mixers[i], moe if i in moe_at else dense, norms) for i in range(n_layers))
    lead = "full_attention" if "full_attention" in types else "sliding_attention"
    numerics = Numerics(rope_plain_on_windows=True,
                        rope_window_scaling=ropes["sliding_attention"][2] if "sliding_attention" in ropes else (),
                        router=RouterKind.SIGMOID, norm_topk_prob=True, score_correction_bias=True,
                        routed_scaling_factor=f.float("moe_routed_scaling_factor", 1.0, positive=False),
                        router_logit_softcapping=softcap)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=ropes[lead][2], numerics=numerics,
    )


def _per_element_gate(f: Fields) -> bool:
    """LagunaAttention: ``gating is True or gating == "per-head"`` gates per head, anything else per element."""
    g = f.raw("gating", True)
    if isinstance(g, bool):
        g = f.bool("gating", True)
    elif isinstance(g, str):
        g = f.str("gating")
    if g is True or g == "per-head":
        return False
    if g is False or g == "per-element":
        return True
    raise f.error("gating", f"is {short(g)}; expected true / \"per-head\" (a gate per head) or false / "
                            "\"per-element\" (a gate per output feature)")
