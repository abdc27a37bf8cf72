"""DiffLlama (``diffllama``), as transformers builds it (models/diffllama/modeling_diffllama.py): Llama's decoder
(pre-norm RMSNorms, bias-free SwiGLU MLP, RoPE on every layer, no sliding window) whose attention is differential
(``analysis.mixers.diff_attention``: four λ vectors of head_dim per layer, a weightless per-head-pair norm).

``attention_bias`` biases all four projections; ``num_key_value_heads`` (absent: the attention heads) must be even
and ``attention_dropout`` 0: ``DiffLlamaAttention`` refuses anything else.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import Fields
from ..mixers import DiffAttention
from ..spec import ModelSpec
from . import decoder
from .common import Traits

TRAITS = Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, windows="none")


def build(f: Fields, model_type: str) -> ModelSpec:
    spec = decoder.build(f, model_type, TRAITS)
    kv = spec.layers[0].mixer.num_key_value_heads if spec.layers else 2
    if kv % 2:
        raise f.error("num_key_value_heads", f"({kv}) is odd: differential attention splits the value heads in "
                      "two halves, and transformers refuses it")
    dropout = f.float("attention_dropout", 0.0, positive=False)
    if dropout > 0:
        raise f.error("attention_dropout", f"({dropout}) is above 0: transformers' DiffLlamaAttention refuses it")
    layers = []
    for layer in spec.layers:
        m = layer.mixer
        layers.append(replace(layer, mixer=DiffAttention(**{x.name: getattr(m, x.name) for x in fields(m)})))
    return replace(spec, layers=tuple(layers))
