"""Vision towers and pixel-shuffle projectors of LFM2-VL, LFM3-VL, Command A Vision (``cohere2_vision``) and
Aya Vision, as their ``*ForConditionalGeneration`` builds them (the wrappers' ``VISION_COUNTED`` functions).

- LFM2-VL (``lfm2_vl``): a SigLIP2 NaFlex tower (``siglip2_vision_model`` by default; any tower
  ``vision.TOWERS`` knows, as ``AutoModel.from_config`` builds the vision_config's model_type), then
  ``Lfm2VlMultiModalProjector``: pixel unshuffle (vision hidden × downsample_factor²), a LayerNorm over that
  width when ``projector_use_layernorm``, ``linear_1`` (→ projector_hidden_size) and ``linear_2`` (→ text
  hidden), both biased when ``projector_bias``.
- LFM3-VL (``lfm3_vl``): its own encoder (``Lfm3VlVisionModel``): a bias-free Linear patch embedding
  (in_channels · temporal_patch_size · patch² → hidden), an RMSNorm, layers of RMSNorms (operator_norm,
  ffn_norm), a bias-free SwiGLU (w1, w3, w2) and either bias-free GQA attention with per-head q/k RMSNorms
  (``layer_types`` entry not ``conv``) or a gated depthwise 2-D short conv (in_proj hidden → 3·hidden, a
  bias-free depthwise conv_kernel_size² conv, out_proj); axial RoPE (a buffer). The projector: a LayerNorm over
  the vision hidden, ``linear_1`` (hidden · spatial_merge_size² → projector_hidden_size), ``linear_2``.
- Command A Vision (``cohere2_vision``): a SigLIP tower (Cohere2VisionConfig's default: 1152 wide, 27 layers,
  512 px, with the pooling head SiglipVisionModel builds), then pixel shuffle into ``linear_1`` (vision hidden ×
  downsample_factor² → alignment_intermediate_size, biased) and a SwiGLU's half into ``linear_2``
  (alignment_intermediate_size // 2 → text hidden, biased).
- Aya Vision (``aya_vision``): a SigLIP tower (AyaVisionConfig's default: 26 layers, 14 heads, no head — a
  default transformers cannot build, 14 heads not dividing 1152), a LayerNorm over the shuffled width, then the
  same two biased linears, ``alignment_intermediate_size`` defaulting to the text hidden size (it is not a
  declared field: ``getattr(config, ..., text_config.hidden_size)``).

A vision_config given as a dict is built with its class's defaults; the wrappers' own default towers
(``sub_configs_defaults`` init_kwargs) apply only when vision_config is absent.
"""

from __future__ import annotations

from .fields import MAX_LAYERS, Fields
from .spec import Tensor
from .vision import _lin, _ln, _rms, _tower, _vision_fields


def _top(top: dict, where: str, family: str) -> Fields:
    from .family_defaults import FAMILY_DEFAULTS

    return Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)


def _auto_tower(top: dict, where: str, default: dict) -> tuple[list[Tensor], int]:
    """The tower ``AutoModel.from_config(vision_config)`` builds (``default`` when vision_config is absent) and
    its hidden size."""
    tower = _tower(top, where, default)
    return tower, tower[-1].shape[0]  # every tower ends with a tensor whose first dim is its hidden size


def _downsampled(f: Fields, vh: int) -> int:
    return vh * f.int("downsample_factor", hi=64) ** 2


def lfm2_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower, vh = _auto_tower(top, where, {"model_type": "siglip2_vision_model"})
    f = _top(top, where, "lfm2_vl")
    width = _downsampled(f, vh)
    proj = f.int("projector_hidden_size")
    bias = f.bool("projector_bias")
    p = "model.multi_modal_projector"
    out = list(tower)
    if f.bool("projector_use_layernorm"):
        _ln(out, f"{p}.layer_norm", width)
    for name, n_out, n_in in (("linear_1", proj, width), ("linear_2", text_hidden, proj)):
        if bias:
            _lin(out, f"{p}.{name}", n_out, n_in)
        else:
            out.append(Tensor(f"{p}.{name}.weight", (n_out, n_in), "vision"))
    return tuple(out)


#: Lfm3VlVisionConfig.__post_init__'s layer_types when absent: conv for the first two and every odd layer.
def _lfm3_vision_layer_types(n: int) -> list[str]:
    return ["conv" if i < 2 or i % 2 else "full_attention" for i in range(n)]


def lfm3_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = top.get("vision_config")
    # Lfm3VlConfig builds its vision_config with Lfm3VlVisionConfig whatever model_type it names
    f = _vision_fields({} if vc is None else vc, where, "lfm3_vl_vision")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = h // heads
    patch = f.int("patch_size", hi=4096)
    temporal = f.int("temporal_patch_size", hi=64)
    merge = f.int("spatial_merge_size", hi=64)
    kernel = f.int("conv_kernel_size", hi=1024)
    types = f.raw("layer_types")
    if types is None:
        types = f.derived("layer_types", _lfm3_vision_layer_types(layers),
                          "absent: Lfm3VlVisionConfig's conv for layers 0, 1 and every odd one")
    if not (isinstance(types, list) and len(types) == layers and all(isinstance(t, str) for t in types)):
        raise f.error("layer_types", f"must be a list of {layers} layer type names (one per num_hidden_layers)")
    v = "model.vision_tower"
    out = [Tensor(f"{v}.patch_embed.weight", (h, f.int("in_channels", hi=64) * temporal * patch * patch), "vision")]
    _rms(out, f"{v}.embedding_norm", h)
    for i, kind in enumerate(types):
        b = f"{v}.layers.{i}"
        if kind != "conv":  # Lfm3VlVisionLayer: anything but "conv" is attention
            for name, n_out, n_in in (("q_proj", heads * hd, h), ("k_proj", kv * hd, h), ("v_proj", kv * hd, h),
                                      ("out_proj", h, heads * hd)):
                out.append(Tensor(f"{b}.self_attn.{name}.weight", (n_out, n_in), "vision"))
            _rms(out, f"{b}.self_attn.q_norm", hd)
            _rms(out, f"{b}.self_attn.k_norm", hd)
        else:
            out.append(Tensor(f"{b}.conv.in_proj.weight", (3 * h, h), "vision"))
            out.append(Tensor(f"{b}.conv.spatial_conv.weight", (h, 1, kernel, kernel), "vision"))
            out.append(Tensor(f"{b}.conv.out_proj.weight", (h, h), "vision"))
        for name, n_out, n_in in (("w1", inter, h), ("w3", inter, h), ("w2", h, inter)):
            out.append(Tensor(f"{b}.feed_forward.{name}.weight", (n_out, n_in), "vision"))
        _rms(out, f"{b}.operator_norm", h)
        _rms(out, f"{b}.ffn_norm", h)
    t = _top(top, where, "lfm3_vl")
    proj = t.int("projector_hidden_size")
    bias = t.bool("projector_bias")
    p = "model.multi_modal_projector"
    _ln(out, f"{p}.layer_norm", h)
    for name, n_out, n_in in (("linear_1", proj, h * merge * merge), ("linear_2", text_hidden, proj)):
        if bias:
            _lin(out, f"{p}.{name}", n_out, n_in)
        else:
            out.append(Tensor(f"{p}.{name}.weight", (n_out, n_in), "vision"))
    return tuple(out)


#: Cohere2VisionConfig's vision_config when the config has none (sub_configs_defaults init_kwargs).
COHERE2_VISION_DEFAULT = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 3072,
                          "image_size": 512, "num_hidden_layers": 27, "num_attention_heads": 12}

#: AyaVisionConfig's vision_config when the config has none (its 14 heads do not divide 1152: transformers
#: cannot build it either).
AYA_VISION_DEFAULT = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                      "patch_size": 14, "image_size": 384, "num_hidden_layers": 26, "num_attention_heads": 14,
                      "vision_use_head": False}


def _swiglu_alignment(out: list[Tensor], f: Fields, width: int, inter: int, text_hidden: int) -> None:
    if inter < 2:
        raise f.error("alignment_intermediate_size", f"({inter}) must be at least 2: its SwiGLU halves it")
    _lin(out, "model.multi_modal_projector.linear_1", inter, width)
    _lin(out, "model.multi_modal_projector.linear_2", text_hidden, inter // 2)


def cohere2_vision_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower, vh = _auto_tower(top, where, COHERE2_VISION_DEFAULT)
    f = _top(top, where, "cohere2_vision")
    out = list(tower)
    _swiglu_alignment(out, f, _downsampled(f, vh), f.int("alignment_intermediate_size"), text_hidden)
    return tuple(out)


def aya_vision_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower, vh = _auto_tower(top, where, AYA_VISION_DEFAULT)
    f = _top(top, where, "aya_vision")
    width = _downsampled(f, vh)
    out = list(tower)
    _ln(out, "model.multi_modal_projector.layernorm", width)
    inter = f.int("alignment_intermediate_size", text_hidden,
                  note="absent: AyaVisionMultiModalProjector falls back to the text hidden size")
    _swiglu_alignment(out, f, width, inter, text_hidden)
    return tuple(out)
