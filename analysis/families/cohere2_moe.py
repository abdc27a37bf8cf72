"""Cohere 2 MoE (``cohere2_moe``: Command A MoE).

transformers' modeling_cohere2_moe.py: Cohere 2's parallel block (one input norm feeding attention and the FFN,
both summed into the residual; RoPE on interleaved pairs; logits times ``logit_scale``; embeddings tied by
default) with, per layer, either a dense SwiGLU MLP or a mixture of experts:

- ``mlp_layer_types`` ("dense" / "sparse"); absent: the first ``first_k_dense_replace`` layers (a config
  kwarg, 0 by default) dense, the rest sparse. Dense layers are ``prefix_dense_intermediate_size`` wide
  (absent: ``intermediate_size``).
- The MoE: a bias-free router ``Linear(hidden, num_experts)``; ``num_experts`` stacked SwiGLU experts of
  ``intermediate_size`` (not a separate moe size); ``num_shared_experts`` (default 0) shared experts as one
  MLP of ``num_shared_experts x intermediate_size``, combined with the routed output by
  ``shared_expert_combination_strategy``: "sum", or "average" ((routed + shared) / 2). Routing: the top-k
  of the logits, then a softmax over those k (``expert_selection_fn`` "softmax") or their sigmoids,
  renormalised when ``norm_topk_prob`` ("sigmoid").
- ``layer_types``; absent: the first_k_dense_replace prefix at ``prefix_dense_sliding_window_pattern``
  (default 1: all full), the rest at ``sliding_window_pattern`` (default 4: three sliding, then one full).
  Sliding layers keep ``sliding_window`` tokens and use RoPE; full layers use none (NoPE), except the dense
  layers when prefix_dense_sliding_window_pattern is 1 (their ``force_rope``).
- head_dim is the config's (class default 128), not hidden / heads as in Cohere 2; num_key_value_heads
  defaults to the heads. Norms: RMSNorm when ``rms_norm_eps`` is set, else Cohere's bias-free LayerNorm
  at ``layer_norm_eps`` (one weight of hidden_size either way).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import (MLP, Attention, Layer, ModelSpec, MoE, Norm, NormKind, Numerics, PlacedNorm, RopeStyle,
                    RouterKind)
from .common import (Traits, per_layer_types, read_act, read_head_dim, read_kv_heads, read_rope, read_tie,
                     sparse_layers)

TRAITS = Traits(act_default="silu")


def _layer_types(f: Fields, n_layers: int, first_dense: int) -> list[str]:
    if f.raw("layer_types") is not None:
        return per_layer_types(f, "layer_types", n_layers, ("sliding_attention", "full_attention"))
    prefix = f.int("prefix_dense_sliding_window_pattern", 1, hi=MAX_LAYERS)
    pattern = f.int("sliding_window_pattern", 4, hi=MAX_LAYERS)
    types = ["sliding_attention" if (i + 1) % prefix else "full_attention" for i in range(first_dense)]
    types += ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers - first_dense)]
    return f.derived("layer_types", types, f"absent: {first_dense} prefix layer(s) at pattern {prefix}, the rest at "
                                           f"sliding_window_pattern {pattern} ({pattern - 1} sliding, then one full)")


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = read_kv_heads(f, heads)
    hd = read_head_dim(f, hidden, heads, 128)
    theta, rotary_dim, scaling = read_rope(f, hd)
    bias = f.bool("attention_bias", False)
    act = read_act(f, TRAITS)
    inter = f.int("intermediate_size")

    # first_k_dense_replace: a kwarg Cohere2MoeConfig pops (not saved), read only where the lists are absent
    first_dense = 0
    if f.raw("layer_types") is None or f.raw("mlp_layer_types") is None:
        first_dense = f.int("first_k_dense_replace", 0, lo=0, hi=n_layers)
    types = _layer_types(f, n_layers, first_dense)
    if f.raw("mlp_layer_types") is not None:
        sparse = sparse_layers(f, n_layers)
    else:
        sparse = set(f.derived("mlp_layer_types", list(range(first_dense, n_layers)),
                               f"absent: the first {first_dense} layer(s) dense (first_k_dense_replace), the rest "
                               "sparse"))
    sliding = f.opt_int("sliding_window", lo=1, hi=1 << 30)
    force_rope = f.int("prefix_dense_sliding_window_pattern", 1, hi=MAX_LAYERS) == 1

    dense_inter = inter
    if f.raw("prefix_dense_intermediate_size") is not None:
        dense_inter = f.int("prefix_dense_intermediate_size")
    moe = None
    router = RouterKind.TOPK_SOFTMAX
    norm_topk = False
    if sparse:
        n_exp = f.int("num_experts")
        k = f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        n_shared = f.int("num_shared_experts", 0, lo=0)
        average = False
        if n_shared:
            strategy = f.str("shared_expert_combination_strategy", "average")
            if strategy not in ("average", "sum"):
                raise f.error("shared_expert_combination_strategy", f"is {strategy!r}; transformers' Cohere 2 MoE "
                                                                    "takes 'average' or 'sum'")
            average = strategy == "average"
        selection = f.str("expert_selection_fn", "softmax")
        if selection not in ("softmax", "sigmoid"):
            raise f.error("expert_selection_fn", f"is {selection!r}; transformers' Cohere 2 MoE takes 'softmax' or "
                                                 "'sigmoid'")
        if selection == "sigmoid":
            router, norm_topk = RouterKind.LOGIT_SIGMOID, f.bool("norm_topk_prob", True)
        moe = MoE(hidden, n_exp, k, inter, shared_intermediate_size=n_shared * inter, shared_average=average,
                  act=act)

    # the config's own rms_norm_eps (not its alias layer_norm_eps, which every Cohere 2 MoE config has)
    rms = f.cfg.get("rms_norm_eps") is not None
    eps = f.float("rms_norm_eps") if rms else f.float("layer_norm_eps", 1e-5)
    norm = lambda: Norm(hidden, NormKind.RMS) if rms else Norm(hidden, NormKind.LAYER, bias=False)  # noqa: E731
    dense = MLP(hidden, dense_inter, act=act)
    layers = []
    for i in range(n_layers):
        window = sliding if types[i] == "sliding_attention" else None
        rope = window is not None or (i not in sparse and force_rope)
        attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, window=window,
                         rotary_dim=rotary_dim if rope else 0, rope_theta=theta)
        layers.append(Layer(attn, moe if i in sparse else dense, (PlacedNorm("input_layernorm", "pre_mixer", norm()),),
                            parallel=True))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), final_norm=norm(), hidden_act=act, norm_eps=eps, rope_scaling=scaling,
        numerics=Numerics(rope_style=RopeStyle.PAIRS, logit_scale=f.float("logit_scale", 0.0625), router=router,
                          norm_topk_prob=norm_topk),
    )
