"""Tencent Hunyuan V3 (``hy_v3``: Hy3-preview).

transformers' modeling_hy_v3.py: a Llama-style pre-norm decoder (RMSNorm, GQA with a per-head RMSNorm of q
and k before RoPE, head_dim 128 by default whatever hidden / heads, no sliding window) whose FFN is chosen per
layer by ``mlp_layer_types`` ("sparse": MoE, anything else: the dense SwiGLU MLP of ``intermediate_size``;
absent: layer 0 dense, the rest sparse). The MoE: ``num_experts`` stacked SwiGLU experts of
``moe_intermediate_size`` (no biases), one always-on shared MLP of ``num_shared_experts x
moe_intermediate_size`` (biased by ``mlp_bias``, like the dense MLP), and a sigmoid router (an fp32
``Linear(hidden, num_experts)`` without bias) whose top-k choice adds the ``e_score_correction_bias``
buffer (not a parameter), the chosen sigmoid scores renormalised and multiplied by
``router_scaling_factor``. No groups.

The released checkpoint also holds a multi-token-prediction layer (``model.layers.80``) that
transformers drops on load; it is not counted here either.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec, MoE, RouterKind
from . import decoder
from .common import Traits, read_act, sparse_layers

#: everything but the MoE: the q/k norms per head, biases from attention_bias / mlp_bias, no windows
TRAITS = Traits(qk_norm="head", windows="none", head_dim_default=128)


def build(f: Fields, model_type: str) -> ModelSpec:
    spec = decoder.build(f, model_type, TRAITS)  # every layer dense; the sparse ones replaced below
    n_layers = len(spec.layers)
    if f.raw("mlp_layer_types") is None:
        at = set(f.derived("mlp_layer_types", list(range(1, n_layers)),
                           "absent: layer 0 dense, every later layer sparse (HYV3Config)"))
    else:
        at = sparse_layers(f, n_layers)
    if not at:
        return spec
    # HYV3Config's attribute_map: num_local_experts is num_experts
    experts = "num_local_experts" if "num_local_experts" in f.cfg and "num_experts" not in f.cfg else "num_experts"
    for key in (experts, "num_experts_per_tok", "num_shared_experts"):
        if f.raw(key) is None:
            raise f.error(key, "is null, but mlp_layer_types has sparse layers: transformers' HYV3 MoE needs it")
    n_exp = f.int(experts)
    k = f.int("num_experts_per_tok")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
    size = f.int("moe_intermediate_size")
    n_shared = f.int("num_shared_experts", lo=0)
    if n_shared == 0:
        # HYV3MLP(config, intermediate_size=0) falls back to intermediate_size (its `or`): a shared MLP as wide
        # as the dense one, which a checkpoint without shared experts would not hold
        raise f.error("num_shared_experts", "is 0: transformers' HYV3 then builds a shared MLP of intermediate_size "
                                            "(HYV3MLP's fallback), which a checkpoint without shared experts would "
                                            "not match")
    act = read_act(f, TRAITS)
    moe = MoE(spec.hidden_size, n_exp, k, size, shared_intermediate_size=n_shared * size,
              shared_bias=f.bool("mlp_bias", False), act=act)
    layers = tuple(replace(layer, ffn=moe) if i in at else layer for i, layer in enumerate(spec.layers))
    numerics = replace(spec.numerics, router=RouterKind.SIGMOID, norm_topk_prob=True,
                       routed_scaling_factor=f.float("router_scaling_factor", 2.826), score_correction_bias=True)
    return replace(spec, layers=layers, numerics=numerics)
