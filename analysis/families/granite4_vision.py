"""Granite 4 Vision (``granite4_vision``): transformers' Granite4VisionForConditionalGeneration
(models/granite4_vision/modeling_granite4_vision.py, transformers 5.24), counted whole.

- ``model.vision_tower``: ``AutoModel.from_config(vision_config)``, a CLIP vision model by default
  (``clip_vision_model``), SigLIP in the checkpoints (``siglip_vision_model``: SiglipVisionModel, its post LayerNorm
  and, with ``vision_use_head``, its attention-pooling head built though unused). Every other tower is refused by
  name: the downsamplers read ``vision_config.image_size`` / ``patch_size``, which SigLIP2's config has not.
- ``model.image_newline``: one text-width vector.
- ``model.layerwise_projectors`` (one per ``deepstack_layer_map`` entry) and ``model.spatial_projectors`` (always
  four: the TL / TR / BL / BR offsets), each a Granite4VisionWindowQFormerDownsampler: a LayerNorm over the vision
  width (``norm``), learned ``query`` (1, q², vision width) and ``image_positions`` (1, w², vision width) for
  ``downsample_rate`` "q/w", a BLIP-2 Q-Former (``qformer``: Blip2QFormerModel from ``qformer_config``, its
  hidden_size / encoder_hidden_size forced to the vision width and its heads to vision width // 64; absent, the
  config class's init_kwargs: one layer, intermediate 3072, cross-attention every layer, no text feed-forward), and
  a biased ``out_linear`` to the text width.
- ``model.language_model``: Granite4VisionTextModel, Granite's dense block (biases per attention_bias / mlp_bias,
  the four multipliers, head_dim from the config when given) built from ``text_config`` as Granite4VisionTextConfig
  whatever its model_type says (the 4.0 checkpoint's text_config names granitemoehybrid, with all-attention
  layer_types and no experts); its class defaults are GraniteConfig's, so it is read as ``granite``. ``lm_head``
  is tied to the embeddings when the wrapper's own ``tie_word_embeddings`` is true (absent: false), the
  text_config's flag not read (checked on the meta device).

The projected features are added into the image-token rows of chosen decoder layers (deepstack) at prefill only:
the text decode trace, FLOPs and KV bytes per token are the language model's.

ibm-granite/granite-4.0-3b-vision (config.json at revision bf108f36960fb4df79bf035e506c592f4ee3c2d3, less
image_grid_pinpoints / auto_map): 3,997,206,464 parameters, equal to transformers on the meta device; language
model 3,402,839,040 (tied) and vision 594,367,424 (SigLIP 428,256,704, eight downsamplers 166,108,160,
image_newline 2,560), the model card's "3.4B LLM and 0.6B Vision Encoder and Projectors" (granite-vision-4.1-4b's
card, the same shapes). The checkpoints' LoRA adapter (rank 256, a separate PEFT adapter merged at load by vLLM /
mlx-vlm) is not part of the transformers model and is not counted.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from ..vision import TOWERS
from .ocr_vl import QFORMER_CROSS_ATTENTION_FREQUENCY, qformer_layers
from .voxtral import sub_config_dict, text_config_dict

#: Granite4VisionConfig's class defaults for the fields read here (downsample_rate and deepstack_layer_map default
#: to None: the model then cannot be built)
GRANITE4_VISION_DEFAULTS = {"tie_word_embeddings": False}
#: Granite4VisionConfig.sub_configs_defaults["qformer_config"].init_kwargs: used when qformer_config is absent
QFORMER_INIT_KWARGS = {"num_hidden_layers": 1, "intermediate_size": 3072, "cross_attention_frequency": 1,
                       "max_position_embeddings": 2048, "use_qformer_text_input": False}
#: the vision towers the wrapper can be built with (AutoModel of vision_config; absent: clip_vision_model)
_TOWERS = ("clip_vision_model", "siglip_vision_model")
#: Granite4VisionWindowQFormerDownsampler sets the Q-Former's heads to vision width // this
_QFORMER_HEAD_DIM = 64


def granite4_vision_text_config(cfg: dict, where: str) -> dict:
    """text_config as transformers reads it: Granite4VisionTextConfig (GraniteConfig's fields and defaults) whatever
    its model_type says; fields of other Granite configs (granitemoehybrid's layer_types, mamba_* and expert
    counts) are not fields of that class and build nothing, so they are dropped."""
    text = text_config_dict(cfg, where)
    ignored = {k for k in text if k == "layer_types" or k.startswith("mamba_") or "expert" in k
               or k in ("shared_intermediate_size", "normalization_function", "position_embedding_type",
                        "router_aux_loss_coef", "output_router_logits")}
    return {**{k: v for k, v in text.items() if k not in ignored}, "model_type": "granite"}


def _qformer(top: dict, where: str, vh: int) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    qc = sub_config_dict(top, "qformer_config", where, "blip_2_qformer", "Granite 4 Vision's Q-Former downsampler") \
        if top.get("qformer_config") is not None else dict(QFORMER_INIT_KWARGS)
    heads = vh // _QFORMER_HEAD_DIM
    if heads < 1 or vh % heads:
        raise ConfigError(f"{where}: field 'vision_config.hidden_size' ({vh}) cannot be split into "
                          f"{heads} Q-Former heads (vision width // {_QFORMER_HEAD_DIM}): Granite4VisionConfig sets "
                          "the downsamplers' Q-Former heads so, and BLIP-2's attention needs them to divide its width",
                          f"use a vision width that is a multiple of {_QFORMER_HEAD_DIM}")
    # Granite4VisionConfig.__post_init__ overwrites the Q-Former's widths with the vision tower's
    qc = {**qc, "hidden_size": vh, "num_attention_heads": heads, "encoder_hidden_size": vh}
    return Fields(qc, f"{where} (qformer_config)", defaults=FAMILY_DEFAULTS.get("blip_2_qformer"), nested=True,
                  family="blip_2_qformer")


def _rate(f: Fields) -> tuple[int, int]:
    """downsample_rate "q/w": the query and key window sides (both positive integers)."""
    rate = f.raw("downsample_rate")
    if rate is None:
        raise f.error("downsample_rate", "is required (Granite4VisionConfig's default None builds no downsampler): "
                                         "a fraction \"q/w\" of query and key window sides, e.g. \"4/8\"")
    parts = rate.split("/") if isinstance(rate, str) else []
    try:
        q, w = (int(p) for p in parts) if len(parts) == 2 else (0, 0)
    except ValueError:
        q = w = 0
    if q < 1 or w < 1:
        raise f.error("downsample_rate", f"must be a fraction \"q/w\" of two positive integers (query and key window "
                                         f"sides, e.g. \"4/8\"), got {short(rate)}")
    return q, w


def _layer_map(f: Fields) -> int:
    """deepstack_layer_map's entries ([vision_layer, llm_layer] pairs of integers): one downsampler each."""
    m = f.raw("deepstack_layer_map")
    if m is None:
        raise f.error("deepstack_layer_map", "is required (Granite4VisionConfig's default None builds no model): a "
                                             "list of [vision_layer, llm_layer] pairs, one downsampler each")
    ok = isinstance(m, list) and all(isinstance(p, list) and len(p) == 2 and all(
        isinstance(x, int) and not isinstance(x, bool) for x in p) for p in m)
    if not ok:
        raise f.error("deepstack_layer_map", f"must be a list of [vision_layer, llm_layer] integer pairs, got "
                                             f"{short(m)}")
    if len(m) > MAX_LAYERS:
        raise f.error("deepstack_layer_map", f"has {len(m)} entries, more than {MAX_LAYERS}")
    return len(m)


def _downsampler(out: list[Tensor], p: str, vh: int, text_hidden: int, q: int, w: int, qf: Fields) -> None:
    def lin(name: str, n_out: int, n_in: int) -> None:
        out.extend((Tensor(f"{name}.weight", (n_out, n_in), "vision"), Tensor(f"{name}.bias", (n_out,), "vision")))

    out.append(Tensor(f"{p}.query", (1, q * q, vh), "vision"))
    out.append(Tensor(f"{p}.image_positions", (1, w * w, vh), "vision"))
    out.extend((Tensor(f"{p}.qformer.layernorm.weight", (vh,), "vision"),
                Tensor(f"{p}.qformer.layernorm.bias", (vh,), "vision")))
    qformer_layers(out, f"{p}.qformer", qf.int("num_hidden_layers", hi=MAX_LAYERS), vh, qf.int("intermediate_size"),
                   vh, qf.int("cross_attention_frequency", QFORMER_CROSS_ATTENTION_FREQUENCY, hi=MAX_LAYERS,
                          note="absent: Blip2QFormerConfig's class default"), qf.bool("use_qformer_text_input"))
    out.extend((Tensor(f"{p}.norm.weight", (vh,), "vision"), Tensor(f"{p}.norm.bias", (vh,), "vision")))
    lin(f"{p}.out_linear", text_hidden, vh)


def granite4_vision_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The vision tower, image_newline and the layerwise and spatial window Q-Former downsamplers (kind
    ``vision``)."""
    vc = top.get("vision_config")
    if vc is None:
        vc = {}  # CLIPVisionConfig's class defaults
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object of fields, got {short(vc)}")
    mt = vc.get("model_type", "clip_vision_model")
    if mt not in _TOWERS:
        raise UnsupportedModelError(f"{where}: vision tower {short(mt)} is not one we can count for Granite 4 Vision "
                                    "(its downsamplers read vision_config.image_size and patch_size)",
                                    f"supported vision towers: {', '.join(_TOWERS)}")
    out = TOWERS[mt](vc, where, prefix="model.vision_tower.vision_model")
    vh = out[-1].shape[0]  # CLIP ends with its post LayerNorm, SigLIP with it or its head's fc2: the vision width
    f = Fields(top, where, defaults=GRANITE4_VISION_DEFAULTS, family="granite4_vision")
    q, w = _rate(f)
    n_layerwise = _layer_map(f)
    qf = _qformer(top, where, vh)
    out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    for i in range(n_layerwise):
        _downsampler(out, f"model.layerwise_projectors.{i}", vh, text_hidden, q, w, qf)
    for i in range(4):  # TL / TR / BL / BR offsets, whatever spatial_target_layers holds
        _downsampler(out, f"model.spatial_projectors.{i}", vh, text_hidden, q, w, qf)
    return tuple(out)
