"""Baidu ERNIE-4.5-VL (``ernie4_5_vl_moe``), as transformers' modeling_ernie4_5_vl_moe.py builds it
(Ernie4_5_VLMoeForConditionalGeneration: ERNIE-4.5-VL-28B-A3B, ERNIE-4.5-VL-424B-A47B).

Language model (``ernie4_5_vl_moe_text``): ERNIE 4.5's block (every projection biased by ``use_bias``, RMSNorm,
GQA with ``head_dim`` defaulting to hidden / heads, interleaved RoPE) whose MoE is modality-isolated
(Ernie4_5_VLMoeMoeBlock): per sparse layer (``mlp_layer_types``; absent: layer 0 dense, the rest sparse)

- ``text_moe``: ``moe_num_experts`` stacked SwiGLU experts of ``moe_intermediate_size[0]``, a float32 router
  ``(E, hidden)`` and its ``e_score_correction_bias`` parameter ``(1, E)`` (softmax scores, the choice by score +
  bias, the top ``moe_k`` renormalised), the only experts a text token uses;
- ``vision_moe``: as many experts of ``moe_intermediate_size[1]`` with their own router and bias, run only on
  image / video tokens (here ``mlp.vision_router`` / ``mlp.vision_experts``: counted in the total, the experts
  and memory, never in a text token's active parameters, the decode trace or its FLOPs);
- ``moe_num_shared_experts`` shared experts: one MLP of ``moe_intermediate_size[0] × moe_num_shared_experts``
  (biased by ``use_bias``) that every token runs.

Dense layers have an MLP of ``intermediate_size``. The lm_head is bias-free (tied by default). M-RoPE: with text
positions (the same position on the t, h and w axes) ERNIE's pre-rotated 3D frequencies are plain interleaved
RoPE when the h and w sections are equal and the three sum to head_dim / 2 (transformers' own requirement).

The vision tower (``ernie4_5_vl_moe_vision``, ``model.vision_tower``): a bias-free Linear patch embedding
(in_channels·patch² → hidden), ``depth`` blocks of biased LayerNorms, a fused biased qkv, a biased proj and a
biased fc1 / fc2 MLP of ``intermediate_size``, a final LayerNorm ``ln`` (2D RoPE: no parameters). The resampler
(``model.resampler_model``): ``spatial_linear`` (fc1 and fc2 of hidden·m² → hidden·m², a LayerNorm),
``temporal_linear`` (fc1 from hidden·m²·temporal_merge_size, fc2, a LayerNorm), a biased ``mlp`` to the text
hidden size and an RMSNorm ``after_norm`` over it.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, MoE, RopeStyle, RouterKind, Tensor
from ..vision import _lin, _ln, _qkv_block, vision_config_dict
from . import decoder
from .common import Traits, read_act

#: everything but the MoE; the checkpoint's modality MoE names rewritten to ours (text_moe: what a text token runs)
TRAITS = Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", tie_default=True, windows="none",
                rope_style=RopeStyle.PAIRS,
                modules=((".mlp.text_moe.gate.", ".mlp.gate."), (".mlp.text_moe.experts.", ".mlp.experts."),
                         (".mlp.vision_moe.gate.moe_statics.", ".mlp.vision_router."),
                         (".mlp.vision_moe.gate.", ".mlp.vision_router."),
                         (".mlp.vision_moe.experts.", ".mlp.vision_experts.")))

#: Ernie4_5_VLMoeTextConfig.__post_init__'s moe_intermediate_size when absent: [text experts, vision experts]
MOE_SIZES_DEFAULT = [1536, 512]
#: the rotary embedding's mrope_section when rope_parameters has none
MROPE_DEFAULT = [22, 22, 20]


def _moe_sizes(f: Fields) -> tuple[int, int]:
    raw = f.raw("moe_intermediate_size")
    if raw is None:
        raw = f.derived("moe_intermediate_size", list(MOE_SIZES_DEFAULT), "absent: the class's [text, vision] default")
    if not (isinstance(raw, list) and len(raw) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 24 for v in raw)):
        raise f.error("moe_intermediate_size", f"must be a pair of positive integers [text experts, vision experts], "
                                               f"got {raw!r}"[:200])
    return raw[0], raw[1]


def _sparse(f: Fields, n_layers: int) -> set[int]:
    raw = f.raw("mlp_layer_types")
    if raw is None:
        return set(range(1, n_layers))  # ["dense"] + ["sparse"] * (num_hidden_layers - 1)
    if not (isinstance(raw, list) and len(raw) == n_layers and all(v in ("dense", "sparse") for v in raw)):
        raise f.error("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {n_layers} layers")
    return {i for i, v in enumerate(raw) if v == "sparse"}


def _check_rope(f: Fields, head_dim: int) -> None:
    params = f.raw("rope_parameters")
    params = params if isinstance(params, dict) else f.raw("rope_scaling")
    params = params if isinstance(params, dict) else {}
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise f.error("rope_parameters", f"has rope_type {kind!r}: ERNIE-4.5-VL's rotary embedding takes only "
                                         "'default' (transformers raises otherwise)")
    section = params.get("mrope_section", MROPE_DEFAULT)
    if not (isinstance(section, list) and len(section) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in section)
            and section[0] == section[1] and sum(section) == head_dim // 2):
        raise f.error("rope_parameters", f"has mrope_section {section!r}: ERNIE-4.5-VL needs three positive sections, "
                                         f"the h and w ones equal, summing to head_dim / 2 ({head_dim // 2})")


def build_text(f: Fields, model_type: str) -> ModelSpec:
    spec = decoder.build(f, model_type, TRAITS)  # every layer a dense MLP of intermediate_size: MoE replaced below
    # transformers' attribute_map: num_experts -> moe_num_experts, num_experts_per_tok -> moe_k
    n_exp = f.int("num_experts" if "num_experts" in f.cfg and "moe_num_experts" not in f.cfg else "moe_num_experts")
    k = f.int("num_experts_per_tok" if "num_experts_per_tok" in f.cfg and "moe_k" not in f.cfg else "moe_k")
    if k > n_exp:
        raise f.error("moe_k", f"({k}) exceeds moe_num_experts ({n_exp})")
    text_size, vision_size = _moe_sizes(f)
    n_shared = f.int("moe_num_shared_experts", lo=0)
    sparse = _sparse(f, spec.num_layers)
    attn = next(layer.mixer for layer in spec.layers)
    _check_rope(f, attn.head_dim)
    moe = MoE(spec.hidden_size, n_exp, k, text_size, shared_intermediate_size=n_shared * text_size,
              shared_bias=f.bool("use_bias"), correction_bias_param=True, vision_intermediate_size=vision_size,
              act=read_act(f, TRAITS))
    layers = tuple(replace(layer, ffn=moe) if i in sparse else layer for i, layer in enumerate(spec.layers))
    # softmax scores (fp32), the choice by score + e_score_correction_bias, the chosen renormalised, unscaled
    numerics = replace(spec.numerics, router=RouterKind.SOFTMAX, norm_topk_prob=True, score_correction_bias=True)
    note = (f"ERNIE-4.5-VL's {n_exp} vision experts per MoE layer (moe_intermediate_size {vision_size}) and their "
            "router count in the total, the routed experts and the weights memory (sharded like the text experts), "
            "but never in a text token's active parameters, trace or FLOPs: only image / video tokens are routed "
            "to them")
    return replace(spec, layers=layers, numerics=numerics, caveats=tuple(spec.caveats) + (note,))


def _vision_fields(top: dict, where: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_config_dict(top.get("vision_config"), where)
    # Ernie4_5_VLMoeVisionConfig's attribute_map: num_attention_heads -> num_heads, num_hidden_layers -> depth
    return Fields(vc, f"{where} (vision_config)", aliases={"num_heads": ("num_attention_heads",),
                                                          "depth": ("num_hidden_layers",)},
                  defaults=FAMILY_DEFAULTS.get("ernie4_5_vl_moe_vision"), nested=True, family="ernie4_5_vl_moe_vision")


def ernie_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _vision_fields(top, where)
    h = f.int("hidden_size")
    depth = f.int("depth", hi=MAX_LAYERS)
    heads = f.int("num_heads")
    if h % heads:
        raise f.error("num_heads", f"({heads}) must divide the vision hidden_size ({h})")
    inter = f.int("intermediate_size")
    channels = f.int("in_channels", hi=64)
    patch = f.int("patch_size", hi=4096)  # a Linear over in_channels · patch² pixels: one side only
    merge = f.int("spatial_merge_size", hi=64)
    spatial = h * merge * merge
    temporal = spatial * f.int("temporal_merge_size", hi=64)
    p = "model.vision_tower"
    out = [Tensor(f"{p}.patch_embed.proj.weight", (h, channels * patch * patch), "vision")]
    for i in range(depth):
        _qkv_block(out, f"{p}.blocks.{i}", h, inter)
    _ln(out, f"{p}.ln", h)
    r = "model.resampler_model"
    for name, n_in in (("spatial_linear", spatial), ("temporal_linear", temporal)):
        _lin(out, f"{r}.{name}.fc1", spatial, n_in)
        _lin(out, f"{r}.{name}.fc2", spatial, spatial)
        _ln(out, f"{r}.{name}.ln", spatial)
    _lin(out, f"{r}.mlp", text_hidden, spatial)
    out.append(Tensor(f"{r}.after_norm.weight", (text_hidden,), "vision"))
    return tuple(out)
