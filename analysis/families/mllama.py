"""Llama 3.2 Vision (``mllama``): a Llama decoder with image cross-attention layers interleaved.

transformers' modeling_mllama.py: ``MllamaTextModel`` builds ``num_hidden_layers`` layers, those at
``cross_attention_layers`` (default 3, 8, ..., 38) being ``MllamaCrossAttentionDecoderLayer`` and the
others Llama self-attention layers (bias-free; head_dim = hidden_size / num_attention_heads, the config
has no head_dim field); ``embed_tokens`` has ``vocab_size + 8`` rows (the image token and spares) while
``lm_head`` has ``vocab_size``, so the two are never tied.

Here the decoder (``ModelSpec.layers``, what runtime/ builds and the trace prices) is the self-attention
layers, renumbered 0..n-1; the cross-attention layers are ``ModelSpec.cross_attention``: their weights
count in the parameters and in memory, their KV cache is per image (image tokens, not text tokens), and a
text-only step skips them, as transformers does when there is no image and nothing cached. The
checkpoint's layer indices map onto ours through ``CheckpointLayout.renames``.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, CheckpointLayout, CrossAttentionLayers, ModelSpec
from . import decoder
from .common import Traits

TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="none")

#: MllamaTextConfig's cross_attention_layers when the config has none (a list: not in the generated table).
DEFAULT_CROSS_LAYERS = [3, 8, 13, 18, 23, 28, 33, 38]


def build_text(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if f.has("head_dim") and f.int("head_dim") * heads != hidden:
        raise f.error("head_dim", f"is not a field of {model_type}: transformers uses hidden_size / "
                                  f"num_attention_heads ({hidden} / {heads})")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    full = decoder.build(f, model_type, TRAITS)
    n = full.num_layers
    cross = f.int_list("cross_attention_layers", lo=0, hi=MAX_LAYERS)
    if cross is None:
        cross = f.derived("cross_attention_layers", DEFAULT_CROSS_LAYERS, "absent: the class default")
    cross = sorted(set(cross))
    if cross and cross[-1] >= n:
        raise f.error("cross_attention_layers", f"names layer {cross[-1]}, but num_hidden_layers is {n}")
    keep = [i for i in range(n) if i not in set(cross)]
    if not keep:
        raise f.error("cross_attention_layers", "names every layer: a decoder without self-attention layers is "
                                                "not supported")
    attn, mlp = full.layers[0].mixer, full.layers[0].ffn
    assert isinstance(attn, Attention) and isinstance(mlp, MLP)
    xattn = CrossAttentionLayers(tuple(cross), hidden, heads, attn.num_key_value_heads, attn.head_dim,
                                 mlp.intermediate_size, mlp.act)
    # checkpoint layer i -> our self-attention layer keep.index(i), or the k-th cross layer; in increasing
    # order of i, so that no renamed prefix is renamed again (renames apply in order)
    renames = tuple((f"model.layers.{i}.", f"model.cross_layers.{cross.index(i)}." if i in cross
                     else f"model.layers.{keep.index(i)}.") for i in range(n))
    if full.tie_word_embeddings:
        f.derived("tie_word_embeddings", False, "embed_tokens has vocab_size + 8 rows, lm_head vocab_size: "
                                                "transformers never ties them")
    return replace(full, layers=tuple(full.layers[i] for i in keep), tie_word_embeddings=False,
                   embedding_rows=full.vocab_size + 8, cross_attention=xattn, checkpoint=CheckpointLayout(renames=renames))
