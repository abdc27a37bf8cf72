"""Beam (Reflection AI; transformers' ``beam``, BeamForCausalLM), as transformers 5.24's modeling_beam.py builds it.

- Attention: GQA (``num_key_value_heads``, ``head_dim`` class default 128), q/k/v/o biased by ``attention_bias``,
  per-head q/k RMSNorms, and an output gate: a bias-free ``gate_proj`` (hidden -> heads x head_dim) plus a learned
  per-head ``gate_bias`` (heads), whose sigmoid scales every output feature before ``o_proj``.
- ``layer_types`` (absent: every sixth layer and the last full, the others sliding with ``sliding_window`` keys,
  class default 512; the sliding layers cache only those). RoPE per layer type from ``rope_parameters`` (absent:
  sliding layers RoPE at the default base, full layers ``None``: NoPE, with a scalable-softmax query scale).
- Sandwich RMSNorms (input, post-attention, pre- and post-feedforward), each residual add depth-scaled.
- MLP per layer by ``mlp_layer_types`` ("dense" / "sparse"; absent: the first three dense): a SwiGLU of
  ``intermediate_size``, or ``num_experts`` stacked SwiGLU experts of ``moe_intermediate_size`` (top
  ``num_experts_per_tok``, no shared expert) behind DeepSeek-V3's grouped sigmoid router (``n_group`` groups, the
  best ``topk_group`` by their two best scores, an ``e_score_correction_bias`` buffer for the choice,
  ``norm_topk_prob``, scaled by ``routed_scaling_factor``).
- Untied ``lm_head`` by default; logits soft-capped by ``final_logit_softcapping`` (30).
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.attention import GatedAttention
from ..spec import MLP, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, RouterKind
from .common import check_groups, per_layer_types, read_act, read_eps, read_tie, sparse_layers, Traits

_TYPES = ("full_attention", "sliding_attention")
_NORMS = (("input_layernorm", "pre_mixer"), ("post_attention_layernorm", "post_mixer"),
          ("pre_feedforward_layernorm", "pre_ffn"), ("post_feedforward_layernorm", "post_ffn"))


def _rope(f: Fields, kind: str, hd: int) -> tuple[int, float]:
    """(rotary_dim, theta) of one layer type: rope_parameters[kind], None meaning NoPE."""
    params = f.raw("rope_parameters")
    if params is None:  # BeamConfig.__post_init__: sliding layers default RoPE, full layers NoPE
        return (hd, f.float("rope_theta", 10000.0)) if kind == "sliding_attention" else (0, 0.0)
    if not isinstance(params, dict) or kind not in params:
        raise f.error("rope_parameters", f"must map each layer type to its RoPE parameters (or null: NoPE); "
                                         f"{kind} is missing")
    block = params[kind]
    if block is None:
        return 0, 0.0
    if not isinstance(block, dict):
        raise f.error(f"rope_parameters.{kind}", f"must be a mapping or null, got {block!r}")
    kind_ = block.get("rope_type") or block.get("type") or "default"
    if kind_ != "default" or "partial_rotary_factor" in block:
        raise UnsupportedModelError(f"{f.where}: beam with {kind} rope {block!r} is not supported yet",
                                    "the published Beam configs use plain RoPE on the sliding layers")
    theta = block.get("rope_theta", 10000.0)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise f.error(f"rope_parameters.{kind}.rope_theta", f"must be a positive number, got {theta!r}")
    return hd, float(theta)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads, kv = f.int("num_attention_heads"), f.int("num_key_value_heads")
    if heads % kv:
        raise f.error("num_attention_heads", f"({heads}) must be a multiple of num_key_value_heads ({kv})")
    hd = f.int("head_dim")
    vocab = f.int("vocab_size", hi=1 << 26)
    if f.raw("layer_types") is None:
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
        types[-1] = "full_attention"
        f.derived("layer_types", types, "absent: every sixth layer and the last full, the others sliding")
    else:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    window = f.int("sliding_window", hi=1 << 30) if "sliding_attention" in types else None
    ropes = {t: _rope(f, t, hd) for t in dict.fromkeys(types)}
    if f.raw("mlp_layer_types") is None:
        dense_n = min(3, n_layers)
        f.derived("mlp_layer_types", ["dense"] * dense_n + ["sparse"] * (n_layers - dense_n),
                  "absent: the first three layers dense, the rest sparse")
        moe_at = set(range(dense_n, n_layers))
    else:
        moe_at = sparse_layers(f, n_layers)
    bias = f.bool("attention_bias", False)
    act = read_act(f, Traits())
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if len(moe_at) < n_layers else None
    moe, n_group, topk_group = None, 1, 1
    if moe_at:
        n_exp, k = f.int("num_experts"), f.int("num_experts_per_tok")
        n_group, topk_group = f.int("n_group"), f.int("topk_group")
        check_groups(f, n_exp, k, n_group, topk_group, "num_experts", top2=True, top2_one_group=True)
        moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"), act=act)
    layers = []
    for i, t in enumerate(types):
        rotary_dim, theta = ropes[t]
        attn = GatedAttention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, q_norm_dim=hd, k_norm_dim=hd,
                              window=window if t == "sliding_attention" else None, rotary_dim=rotary_dim,
                              rope_theta=theta or 10000.0, proj_gate=True, gate_bias=True)
        norms = tuple(PlacedNorm(name, role, Norm(hidden)) for name, role in _NORMS)
        layers.append(Layer(attn, moe if i in moe_at else dense, norms))
    softcap = f.raw("final_logit_softcapping")
    if softcap is not None:
        softcap = f.float("final_logit_softcapping")
    numerics = Numerics(router=RouterKind.SIGMOID, norm_topk_prob=f.bool("norm_topk_prob", True),
                        routed_scaling_factor=f.float("routed_scaling_factor", 1.0), n_group=n_group,
                        topk_group=topk_group, group_score=GroupScore.TOP2, score_correction_bias=True,
                        depth_scaled_residual=True)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        max_position_embeddings=f.int("max_position_embeddings", 8192, hi=1 << 30),
        final_logit_softcapping=softcap, numerics=numerics,
    )
