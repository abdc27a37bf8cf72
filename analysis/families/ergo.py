"""Ergo (Amazon; transformers' ``ergo``, ErgoForCausalLM), as transformers 5.25's modeling_ergo.py builds it.

- Attention: GQA over ``hidden_size // num_attention_heads``-wide heads (no ``head_dim`` field), one fused bias-free
  ``qkv_proj`` (heads + 2 x KV heads), per-head q/k RMSNorms, bias-free ``o_proj``.
- ``layer_types`` (absent: every ``global_attention_every_n_layers``-th layer full, class default 4, the others
  sliding over ``sliding_window`` keys, alias ``local_attention_window``, 512). Sliding layers use interleaved RoPE
  (``rope_parameters``: flat parameters are the sliding layers', default base 1e6); full layers are NoPE (their optional
  ``global_attention_scale`` multiplies q and k by a buffer: no parameter).
- Sandwich RMSNorms (input, post-attention, pre- and post-feedforward) and two learned residual gates (hidden each):
  ``sigmoid(w)·branch + sqrt(1 + sigmoid(w))·exp(-softplus(w) / 2)·residual``.
- MLP per layer by ``mlp_layer_types`` (absent: the first ``num_dense_blocks`` dense, 1): a plain relu2 MLP
  (up -> relu2 -> down) of ``first_dense_intermediate_size``, or ``num_experts`` relu2 experts of
  ``moe_intermediate_size`` (top ``num_experts_per_tok``), each followed by its own RMSNorm scale
  (``experts.post_expert_norm``: num_experts x hidden), behind a sigmoid router (``gate.linear``) whose choice adds an
  ``e_score_correction_bias`` buffer, the top-k renormalised and scaled by ``moe_routed_scaling_factor`` (sqrt 8),
  plus a relu2 shared expert of ``shared_intermediate_size`` followed by an RMSNorm.
- Kept in float32 whatever the dtype (``_keep_in_fp32_modules_strict``): the embedding, every RMSNorm (per-expert
  ones included), the residual gates and the routers (``ModelSpec.fp32_kinds``); ``lm_head`` and the matmuls are not.
- ``lm_head`` never tied (``_tied_weights_keys`` removed; the config has no ``tie_word_embeddings``); no MTP.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.attention import Attention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, RopeStyle, RouterKind
from .common import per_layer_types, read_eps, sparse_layers

_TYPES = ("full_attention", "sliding_attention")
_NORMS = (("input_layernorm", "pre_mixer"), ("post_attention_layernorm", "post_mixer"),
          ("pre_feedforward_layernorm", "pre_ffn"), ("post_feedforward_layernorm", "post_ffn"))


def _sliding_theta(f: Fields) -> float:
    """The sliding layers' RoPE base: ``rope_parameters`` flat (ErgoConfig.convert_rope_params_to_dict gives them to
    the sliding layers, full layers none) or keyed by layer type; absent: ``rope_theta`` (class default 1e6)."""
    params = f.raw("rope_parameters")
    if params is None:
        return f.float("rope_theta")
    if not isinstance(params, dict):
        raise f.error("rope_parameters", f"must be a mapping, got {params!r}")
    if "sliding_attention" in params or "full_attention" in params:
        if params.get("full_attention") is not None:
            raise UnsupportedModelError(f"{f.where}: ergo with RoPE on its full-attention layers is not supported",
                                        "transformers' Ergo runs its full layers without position embeddings")
        params = params.get("sliding_attention") or {}
        if not isinstance(params, dict):
            raise f.error("rope_parameters.sliding_attention", f"must be a mapping or null, got {params!r}")
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind != "default" or "partial_rotary_factor" in params:
        raise UnsupportedModelError(f"{f.where}: ergo with {kind} RoPE {params!r} is not supported yet",
                                    "transformers' Ergo class default is plain RoPE on the sliding layers")
    theta = params.get("rope_theta", f.float("rope_theta"))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise f.error("rope_parameters.rope_theta", f"must be a positive number, got {theta!r}")
    return float(theta)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads, kv = f.int("num_attention_heads"), f.int("num_key_value_heads")
    if heads % kv:
        raise f.error("num_attention_heads", f"({heads}) must be a multiple of num_key_value_heads ({kv})")
    hd = hidden // heads
    if hd < 2 or hd % 2:
        raise f.error("num_attention_heads", f"({heads}) leaves heads of {hd} features (hidden_size // heads); RoPE "
                                             "rotates pairs")
    vocab = f.int("vocab_size", hi=1 << 26)
    if f.raw("layer_types") is None:
        every = f.int("global_attention_every_n_layers")
        types = f.derived("layer_types", ["sliding_attention" if (i + 1) % every else "full_attention"
                                          for i in range(n_layers)],
                          f"absent: every {every}th layer full (NoPE), the others sliding")
    else:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    window = None
    if "sliding_attention" in types:
        # (ErgoConfig.attribute_map: local_attention_window is the released configs' name)
        key = "local_attention_window" if f.cfg.get("sliding_window") is None \
            and f.cfg.get("local_attention_window") is not None else "sliding_window"
        window = f.int(key, hi=1 << 30)
    theta = _sliding_theta(f) if "sliding_attention" in types else 0.0
    if f.raw("mlp_layer_types") is None:
        dense_n = min(f.int("num_dense_blocks", lo=0), n_layers)
        f.derived("mlp_layer_types", ["dense"] * dense_n + ["sparse"] * (n_layers - dense_n),
                  f"absent: the first {dense_n} layers (num_dense_blocks) dense, the rest sparse")
        moe_at = set(range(dense_n, n_layers))
    else:
        moe_at = sparse_layers(f, n_layers)
    dense = MLP(hidden, f.int("first_dense_intermediate_size"), gated=False, act="relu2") \
        if len(moe_at) < n_layers else None
    moe = None
    if moe_at:
        n_exp, k = f.int("num_experts"), f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"), gated=False, act="relu2",
                  shared_intermediate_size=f.int("shared_intermediate_size"), expert_norms=True)
    layers = []
    for i, t in enumerate(types):
        sliding = t == "sliding_attention"
        attn = Attention(hidden, heads, kv, hd, hd, fused_qkv=True, q_norm_dim=hd, k_norm_dim=hd,
                         window=window if sliding else None, rotary_dim=hd if sliding else 0,
                         rope_theta=theta if sliding else 10000.0)
        norms = tuple(PlacedNorm(name, role, Norm(hidden)) for name, role in _NORMS)
        layers.append(Layer(attn, moe if i in moe_at else dense, norms, residual_gates=True))
    numerics = Numerics(rope_style=RopeStyle.PAIRS, router=RouterKind.SIGMOID, norm_topk_prob=True,
                        routed_scaling_factor=f.float("moe_routed_scaling_factor") if moe_at else 1.0,
                        score_correction_bias=bool(moe_at))
    if "tie_word_embeddings" in f.cfg and f.cfg["tie_word_embeddings"]:
        f.derived("tie_word_embeddings", False, "read as false: ErgoForCausalLM never ties lm_head")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=False, final_norm=Norm(hidden), hidden_act="relu2", norm_eps=read_eps(f),
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 30), numerics=numerics,
        fp32_kinds=("embedding", "norm", "router"),
        caveats=("Ergo keeps its embedding, norms, residual gates, routers and per-expert norms in fp32 "
                 "(transformers' _keep_in_fp32_modules_strict): 4 bytes a parameter here, the rest at the model's "
                 "dtype",),
    )
