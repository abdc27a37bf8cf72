"""SmallDoge's Doge (``doge``), as transformers builds it (models/doge/modeling_doge.py): a Llama-style decoder whose
attention has per-head q/k RMSNorms and a dynamic mask (``analysis.mixers.doge``: ``A`` and ``dt_proj``) and whose
layers scale each residual by a learned vector (``input_residual``, ``post_attention_residual``). Every projection
is biased by attention_bias, the MLP by mlp_bias; sliding_window, when set, applies to every layer.

With ``is_moe`` the MLP is a cross-domain MoE (``DogeCDMoE``: a dense MLP beside product-key routed expert
embeddings, ``router_gate``, ``down_embed`` / ``up_embed``), not modelled: refused by name.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..mixers import DogeAttention
from ..spec import ModelSpec
from . import decoder
from .common import Traits

TRAITS = Traits(o_bias="attention_bias", qk_norm="head", windows="all")


def build(f: Fields, model_type: str) -> ModelSpec:
    if f.bool("is_moe", False):
        raise UnsupportedModelError(
            f"{f.where}: model_type '{model_type}' (SmallDoge Doge) with is_moe is not supported yet: its "
            "cross-domain MoE (product-key router_gate, down_embed / up_embed expert embeddings beside a dense MLP) "
            "is not modelled", "a generic Llama-style analysis would miscount it, so none is given")
    spec = decoder.build(f, model_type, TRAITS)
    dt_bias = f.bool("attention_bias", False)
    keep = f.int("keep_window_size", 2048)
    layers = []
    for layer in spec.layers:
        m = layer.mixer
        mixer = DogeAttention(**{x.name: getattr(m, x.name) for x in fields(m)}, dt_bias=dt_bias, keep_window_size=keep)
        layers.append(replace(layer, mixer=mixer))
    return replace(spec, layers=tuple(layers))
