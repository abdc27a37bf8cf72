"""Aria (rhymes-ai/Aria), as transformers' modeling_aria.py builds it.

Language model (``aria_text``, AriaTextForCausalLM): a Llama-style pre-norm decoder (RMSNorm, GQA with
``head_dim`` defaulting to hidden / heads, RoPE, q/k/v/o biased by ``attention_bias``) whose every layer's
FFN is a mixture of experts (AriaTextMoELayer):

- ``moe_num_experts`` routed SwiGLU experts of ``intermediate_size``, stacked as ``(E, hidden, 2·I)`` /
  ``(E, I, hidden)`` tensors (``is_transposed``: in × out, Llama 4's layout), always SiLU-gated and bias-free;
- a bias-free router ``Linear(hidden, E)``: the top ``moe_topk`` logits, softmaxed among themselves (top-k
  softmax; ``num_experts_per_tok`` is not read: AriaTextConfig has no attribute_map);
- one always-on shared MLP of ``intermediate_size × moe_num_shared_experts`` (``shared_experts``), gated by
  ``hidden_act`` and biased by ``mlp_bias``.

The multimodal wrapper (``aria``, AriaForConditionalGeneration) adds an Idefics3 vision tower
(``idefics3_vision``: SigLIP's encoder without a pooling head, ``image_size // patch_size`` squared learned
positions) and AriaProjector: learned queries (the largest value of ``projector_patch_to_query_dict``
rows, vision-hidden wide), a cross-attention (bias-free q/k/v, ``nn.MultiheadAttention`` with its biased
in/out projections, a biased ``linear``, two LayerNorms), a LayerNorm, and a bias-free GELU MLP
(vision hidden -> text hidden -> text hidden).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError, UnsupportedModelError
from ..fields import Fields
from ..spec import CheckpointLayout, ExpertLayout, ModelSpec, MoE, RouterKind, Tensor
from ..vision import _lin, _ln, idefics_tower, vision_config_dict
from . import decoder
from .common import Traits, read_act

#: everything but the MoE (transformers' AriaTextAttention: Llama's, biased by attention_bias; no windows)
TRAITS = Traits(windows="none")

#: AriaConfig's projector_patch_to_query_dict when the config has none
PATCH_TO_QUERY_DEFAULT = {1225: 128, 4900: 256}
#: AriaConfig's vision_config when the config has none (sub_configs_defaults: an Idefics3VisionConfig)
VISION_TYPE = "idefics3_vision"


def build_text(f: Fields, model_type: str) -> ModelSpec:
    spec = decoder.build(f, model_type, TRAITS)  # every layer a dense MLP of intermediate_size: replaced below
    act = read_act(f, TRAITS)
    if act != "silu":
        raise UnsupportedModelError(
            f"{f.where}: field 'hidden_act' is {act!r}: Aria's routed experts are always SiLU-gated while its shared "
            "experts follow hidden_act, a mixed MoE this planner does not model",
            "every published Aria checkpoint uses silu")
    n_exp = f.int("moe_num_experts")
    k = f.int("moe_topk")
    if k > n_exp:
        raise f.error("moe_topk", f"({k}) exceeds moe_num_experts ({n_exp})")
    size = f.int("intermediate_size")
    n_shared = f.int("moe_num_shared_experts", lo=0)
    moe = MoE(spec.hidden_size, n_exp, k, size, shared_intermediate_size=n_shared * size,
              shared_bias=f.bool("mlp_bias"), act=act)
    return replace(spec, layers=tuple(replace(layer, ffn=moe) for layer in spec.layers),
                   numerics=replace(spec.numerics, router=RouterKind.TOPK_SOFTMAX),
                   checkpoint=replace(spec.checkpoint or CheckpointLayout(), experts=ExpertLayout.STACKED_IN_OUT))


def _queries(top: dict, where: str) -> int:
    """Rows of the projector's learned queries: the largest query count of projector_patch_to_query_dict."""
    d = top.get("projector_patch_to_query_dict")
    if d is None:
        d = PATCH_TO_QUERY_DEFAULT
    if not isinstance(d, dict) or not d:
        raise ConfigError(f"{where}: field 'projector_patch_to_query_dict' must be a non-empty object of patch "
                          f"counts to query counts, got {d!r}"[:300])
    out = []
    for key, v in d.items():
        try:
            int(key)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: field 'projector_patch_to_query_dict' has a key {key!r} that is not an "
                              "integer patch count") from None
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{where}: field 'projector_patch_to_query_dict' maps {key!r} to {v!r}: query counts "
                              "must be positive integers")
        out.append(v)
    return max(out)


def idefics3_tower(vision_config: dict, where: str, prefix: str = "model.vision_tower") -> list[Tensor]:
    """Idefics3VisionTransformer (analysis.vision.idefics_tower with Idefics3VisionConfig's defaults)."""
    return idefics_tower(vision_config, where, VISION_TYPE, prefix)


def aria_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = vision_config_dict(top.get("vision_config"), where)
    mt = vc.get("model_type", VISION_TYPE)
    if mt != VISION_TYPE:
        raise UnsupportedModelError(f"{where}: vision tower '{mt}' is not one we can count for Aria",
                                    f"Aria's projector and forward are built for its {VISION_TYPE} tower")
    tower = idefics3_tower(vc, where)
    vh = tower[-1].shape[0]
    p = "model.multi_modal_projector"
    out = [Tensor(f"{p}.query", (_queries(top, where), vh), "vision")]
    for name in ("q_proj", "k_proj", "v_proj"):
        out.append(Tensor(f"{p}.cross_attn.{name}.weight", (vh, vh), "vision"))
    out.append(Tensor(f"{p}.cross_attn.multihead_attn.in_proj_weight", (3 * vh, vh), "vision"))
    out.append(Tensor(f"{p}.cross_attn.multihead_attn.in_proj_bias", (3 * vh,), "vision"))
    _lin(out, f"{p}.cross_attn.multihead_attn.out_proj", vh, vh)
    _lin(out, f"{p}.cross_attn.linear", vh, vh)
    _ln(out, f"{p}.cross_attn.layer_norm", vh)
    _ln(out, f"{p}.cross_attn.layer_norm_kv", vh)
    _ln(out, f"{p}.layer_norm", vh)
    out.append(Tensor(f"{p}.feed_forward.linear_in.weight", (text_hidden, vh), "vision"))
    out.append(Tensor(f"{p}.feed_forward.linear_out.weight", (text_hidden, text_hidden), "vision"))
    return tuple(tower + out)
