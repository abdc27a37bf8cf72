"""Cohere (Command R, R+) and Cohere 2 (Command R7B, Command A).

transformers' modeling_cohere.py / modeling_cohere2.py: every layer is ONE LayerNorm (weight only,
no bias) feeding attention and a SwiGLU MLP in parallel, summed into the residual; RoPE on
interleaved pairs; logits multiplied by ``logit_scale``; embeddings tied by default (the
``use_embedding_sharing`` field of published configs is what ``tie_word_embeddings``' class default
already says). Cohere's ``use_qk_norm``: per-head LayerNorms of q and k with a weight per head and
feature, shape (heads, head_dim).

Cohere 2: ``layer_types``, else ``sliding_window_pattern`` (default 4: three sliding layers, then
one full); the sliding layers use RoPE, the full layers none (NoPE); head_dim is always
hidden_size / num_attention_heads (the config class overwrites it).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm, RopeStyle
from .common import Traits, check_layer_types, read_act, read_eps, read_head_dim, read_kv_heads, read_rope, read_tie

TRAITS = Traits(act_default="silu")


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    if f.raw("layer_types") is not None:
        return check_layer_types(f, n_layers)
    pattern = f.int("sliding_window_pattern", 4, hi=MAX_LAYERS)
    return f.derived("layer_types", ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                     for i in range(n_layers)],
                     f"absent: sliding_window_pattern {pattern} ({pattern - 1} sliding layers, then one full)")


def build(f: Fields, model_type: str, *, version: int) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = read_kv_heads(f, heads)
    if version == 2:
        if hidden % heads:
            raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
        hd = f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads (Cohere2Config sets it)")
    else:
        hd = read_head_dim(f, hidden, heads)
    theta, rotary_dim, scaling = read_rope(f, hd)
    bias = f.bool("attention_bias", False)
    qk_norm = version == 1 and f.bool("use_qk_norm", False)
    act = read_act(f, TRAITS)
    inter = f.int("intermediate_size")
    if version == 2:
        types = _layer_types(f, n_layers)
        sliding = f.opt_int("sliding_window", lo=1, hi=1 << 30)
        windows = [sliding if t == "sliding_attention" else None for t in types]
        ropes = [t == "sliding_attention" for t in types]  # full layers: no position encoding at all
    else:
        windows, ropes = [None] * n_layers, [True] * n_layers
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=False)  # noqa: E731
    mlp = MLP(hidden, inter, act=act)
    layers = []
    for i in range(n_layers):
        attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, window=windows[i],
                         q_norm_dim=heads * hd if qk_norm else 0, k_norm_dim=kv * hd if qk_norm else 0,
                         qk_norm_per_head=qk_norm, rotary_dim=rotary_dim if ropes[i] else 0, rope_theta=theta)
        layers.append(Layer(attn, mlp, (PlacedNorm("input_layernorm", "pre_mixer", ln()),), parallel=True))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling,
        numerics=Numerics(rope_style=RopeStyle.PAIRS, logit_scale=f.float("logit_scale", 0.0625)),
    )


def build_v1(f: Fields, model_type: str) -> ModelSpec:
    return build(f, model_type, version=1)


def build_v2(f: Fields, model_type: str) -> ModelSpec:
    return build(f, model_type, version=2)
