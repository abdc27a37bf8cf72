"""The LLaVA variants' vision side, as transformers' ``*ForConditionalGeneration`` builds it (the language model
in ``text_config`` is a registry entry of its own: TEXT_WRAPPERS).

- LLaVA-NeXT (``llava_next``), LLaVA-NeXT-Video (``llava_next_video``), LLaVA-OneVision (``llava_onevision``):
  LLaVA's tower (``model.vision_tower``: CLIP by default, SigLIP without its head for OneVision) and projector
  (``linear_1`` from vision hidden × feature layers, ``linear_2``), plus ``model.image_newline``, one learned
  vector of the text hidden size. LLaVA-NeXT-Video's ``vision_resampler`` pools video features: average / max
  pooling has no parameters, ``spatial_pool_mode: "conv"`` a biased Conv2d (vision hidden →
  ``spatial_pool_out_channels``, default the vision hidden; kernel = stride = ``spatial_pool_stride``).
- Video-LLaVA (``video_llava``): two towers built from the one ``vision_config`` (``model.image_tower`` and
  ``model.video_tower``; 224-pixel CLIP ViT-L/14 by default) and LLaVA's projector.
- ViP-LLaVA (``vipllava``): LLaVA's tower and a projector that concatenates the five feature layers
  (``vision_feature_layers``, default (-2, -5, -8, -11, 6)), LayerNorms them, then two biased linears
  (no ``multimodal_projector_bias`` switch).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import Fields
from ..spec import Tensor
from ..vision import LLAVA_VISION_DEFAULT, _llava_projector, _tower


def _defaults(family: str) -> dict:
    from ..family_defaults import FAMILY_DEFAULTS

    return FAMILY_DEFAULTS.get(family, {})


def _newline(text_hidden: int) -> list[Tensor]:
    return [Tensor("model.image_newline", (text_hidden,), "vision")]


def llava_next_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _tower(top, where, LLAVA_VISION_DEFAULT)
    vh = tower[-1].shape[0]  # every tower ends with a norm over its hidden size
    return tuple(tower + _llava_projector(top, vh, text_hidden, where, "llava_next") + _newline(text_hidden))


def llava_next_video_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _tower(top, where, LLAVA_VISION_DEFAULT)
    vh = tower[-1].shape[0]
    out = tower + _llava_projector(top, vh, text_hidden, where, "llava_next_video") + _newline(text_hidden)
    f = Fields(top, where, defaults=_defaults("llava_next_video"), family="llava_next_video")
    mode = f.str("spatial_pool_mode")
    stride = f.int("spatial_pool_stride", hi=64)
    if mode == "conv":
        ch = f.int("spatial_pool_out_channels", vh)
        out += [Tensor("model.vision_resampler.pool.weight", (ch, vh, stride, stride), "vision"),
                Tensor("model.vision_resampler.pool.bias", (ch,), "vision")]
    elif mode not in ("average", "max"):
        raise f.error("spatial_pool_mode", f"must be 'average', 'max' or 'conv', got {mode!r}")
    return tuple(out)


#: LLaVA-OneVision's vision_config when the config has none (LlavaOnevisionConfig.sub_configs_defaults).
ONEVISION_VISION_DEFAULT = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                            "patch_size": 14, "image_size": 384, "num_hidden_layers": 26, "num_attention_heads": 16,
                            "vision_use_head": False}


def llava_onevision_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _tower(top, where, ONEVISION_VISION_DEFAULT)
    vh = tower[-1].shape[0]  # SigLIP's post_layernorm, or its head's fc2 bias when vision_use_head
    return tuple(tower + _llava_projector(top, vh, text_hidden, where, "llava_onevision") + _newline(text_hidden))


#: Video-LLaVA's vision_config when the config has none (VideoLlavaConfig.sub_configs_defaults: 224 pixels).
VIDEO_LLAVA_VISION_DEFAULT = dict(LLAVA_VISION_DEFAULT, image_size=224)


def video_llava_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    image = _tower(top, where, VIDEO_LLAVA_VISION_DEFAULT, root="model.image_tower")
    video = _tower(top, where, VIDEO_LLAVA_VISION_DEFAULT, root="model.video_tower")
    vh = image[-1].shape[0]
    return tuple(image + video + _llava_projector(top, vh, text_hidden, where, "video_llava"))


#: ViP-LLaVA's vision_feature_layers default (VipLlavaConfig: a tuple, so not among the scalar FAMILY_DEFAULTS).
VIPLLAVA_FEATURE_LAYERS = (-2, -5, -8, -11, 6)


def vipllava_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _tower(top, where, LLAVA_VISION_DEFAULT)
    vh = tower[-1].shape[0]
    f = Fields(top, where, aliases={"vision_feature_layer": ("vision_feature_layers",)},
               defaults=_defaults("vipllava"), family="vipllava")
    layers = f.raw("vision_feature_layer")
    if layers is None:
        layers = VIPLLAVA_FEATURE_LAYERS
    if isinstance(layers, int) and not isinstance(layers, bool):
        n = 1
    elif isinstance(layers, (list, tuple)) and layers and all(isinstance(x, int) and not isinstance(x, bool)
                                                             for x in layers):
        n = len(layers)
    else:
        key = "vision_feature_layers" if "vision_feature_layers" in top else "vision_feature_layer"
        raise ConfigError(f"{where}: field '{key}' must be an integer or a non-empty list of integers")
    p = "model.multi_modal_projector"
    return tuple(tower + [
        Tensor(f"{p}.projector_layernorm.weight", (vh * n,), "vision"),
        Tensor(f"{p}.projector_layernorm.bias", (vh * n,), "vision"),
        Tensor(f"{p}.linear_1.weight", (text_hidden, vh * n), "vision"),
        Tensor(f"{p}.linear_1.bias", (text_hidden,), "vision"),
        Tensor(f"{p}.linear_2.weight", (text_hidden, text_hidden), "vision"),
        Tensor(f"{p}.linear_2.bias", (text_hidden,), "vision"),
    ])
