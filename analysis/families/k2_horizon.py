"""MBZUAI-IFM K2-Horizon (``k2_horizon``, ``K2HorizonForCausalLM``; remote code, read as vLLM's k2_horizon.py builds
it).

The dense models (K2-Horizon-0.9B / 3.7B / 7B / 32B: ``num_experts`` 0, no ``mova_num_experts``) are Llama's decoder
with K2HorizonRMSNorm: the hidden state cut into ``layernorm_num_groups`` contiguous slices, each normalised by its
own RMS, then scaled by one weight of the full width, so the parameter count, cache and FLOPs are Llama's (GQA with
its own ``head_dim``, SwiGLU, an untied head, RoPE from ``rope_parameters``). The runtime has no grouped RMSNorm:
``verify`` refuses groups above 1 by name.

Refused by name (vLLM gives their shapes; planner has no mixer for them): the MoE models (K2-Horizon-MoVA-36B-A4B,
K2-Horizon-375B-A23B: ``num_experts`` routed experts under a biased sigmoid router with shared experts, and MoVA,
attention whose value projection is ``mova_num_experts`` routed experts picked per token by ``v_router``), the
softplus / silu output gate (``attention_gate_func``), K2's q/k norms (``query_key_norm``: a norm over the whole
q / k width grouped by head) and the partial interleaved RoPE (``rope_head_dim`` below ``head_dim``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..spec import ModelSpec

_HINT = "a generic Llama-style analysis would miscount it, so none is given"


def _refuse(f: Fields, why: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{f.where}: K2-Horizon (k2_horizon) {why}", _HINT)


def build(f: Fields, model_type: str) -> ModelSpec:
    from .remote import build_llama_served

    experts, mova = f.int("num_experts", 0, lo=0), f.int("mova_num_experts", 0, lo=0)
    if experts or mova:
        raise _refuse(f, f"with num_experts {experts} / mova_num_experts {mova} is a MoE model (K2-Horizon-MoVA, "
                         "375B-A23B): routed experts under a biased sigmoid router with shared experts, and MoVA "
                         "attention whose value projection is routed among mova_num_experts value experts "
                         "(vLLM's K2HorizonMoVAAttention), which planner does not model")
    gate = f.raw("attention_gate_func")
    if gate not in (None, "", False):
        raise _refuse(f, f"with attention_gate_func {gate!r} gates each head's attention output by a projection of "
                         "the input (vLLM's gate_proj), which planner does not model")
    if f.bool("query_key_norm", False):
        raise _refuse(f, "with query_key_norm true normalises q and k by head over their whole width (one weight of "
                         "heads x head_dim), which planner does not model")
    if f.bool("mlp_bias", False):
        raise _refuse(f, "with mlp_bias true: K2-Horizon's MLP has no bias (vLLM's K2HorizonMLP), so the config is "
                         "not one vLLM loads")
    spec = build_llama_served(f, model_type)
    hd = spec.layers[0].mixer.head_dim
    rope_hd = f.int("rope_head_dim", hd, lo=1)
    if rope_hd != hd:
        raise _refuse(f, f"with rope_head_dim {rope_hd} below head_dim {hd} rotates an interleaved part of each "
                         "head (vLLM's split_to_interleaved), which planner does not model")
    groups = f.int("layernorm_num_groups", 1, lo=1)
    if spec.hidden_size % groups:
        raise f.error("layernorm_num_groups", f"({groups}) must divide hidden_size ({spec.hidden_size})")
    if groups == 1:
        return spec
    return replace(spec, numerics=replace(spec.numerics, runtime_unsupported=(
        f"K2-Horizon's grouped RMSNorm (layernorm_num_groups {groups}: each of {groups} slices of the hidden state "
        "normalised by its own RMS)")))
