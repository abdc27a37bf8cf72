"""Ai2 Molmo2 (``molmo2``; its language model ``molmo2_text``), as transformers' modeling_molmo2.py builds them.

- Language model (Molmo2TextModel): a Qwen3-shaped decoder: q/k/v biased when ``attention_bias`` (``qkv_bias``),
  a bias-free o_proj, q/k RMSNorms over head_dim (``qk_norm_type`` "qwen3") or over all heads' features
  ("olmo"), a bias-free SwiGLU MLP, two RMSNorms per layer (``input_layernorm``, ``post_attention_layernorm``)
  that normalise each sublayer's input, or with ``norm_after`` its output (post-norm, OLMo-2 style); the
  embedding has ``vocab_size + additional_vocab_size`` rows, lm_head ``vocab_size``: never tied
  (Molmo2ForConditionalGeneration declares no tied weights, whatever tie_word_embeddings says). RoPE scaling
  (``rope_parameters``) applies on ``rope_scaling_layers`` only (all layers when absent), the others unscaled.
- Vision tower (Molmo2VisionModel): ``num_position_embeddings`` learned positions, a biased Linear patch
  embedding (patch² · channels → hidden), pre-LN blocks (LayerNorms, q/k/v/o of num_attention_heads /
  num_key_value_heads × head_dim, biased when ``attention_bias``, biased fc1 / fc2), no final norm.
- Adapter (Molmo2Adapter): ``image_pooling_2d``, an attention whose q/k/v read the concatenation of the
  ``vision_feature_layer`` outputs (adapter hidden × their count) and whose o_proj returns the adapter hidden
  size; ``image_projector``, a SwiGLU (gate / up biased when ``mlp_bias``, a bias-free down_proj to the
  adapter's own ``text_hidden_size``).

The hub's remote-code keys are read as Molmo2Config reads them: ``vit_config`` for vision_config (then the tower
is cut to the deepest layer ``vit_layers`` reads, as the released weights are), ``image_default_input_size``,
``image_patch_size``, ``image_num_pos``, ``vit_layers``.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, PlacedNorm, Tensor
from . import decoder
from .common import Traits

_ALIASES = (("attention_bias", ("qkv_bias",)), ("rms_norm_eps", ("layer_norm_eps",)))
_QWEN3_NORMS = Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, qk_norm="head", windows="none",
                      head_dim_default=128, aliases=_ALIASES)
_OLMO_NORMS = replace(_QWEN3_NORMS, qk_norm="full")


def build_text(f: Fields, model_type: str) -> ModelSpec:
    kind = f.str("qk_norm_type")
    if kind not in ("qwen3", "olmo"):
        raise f.error("qk_norm_type", f"({kind!r}) must be 'qwen3' (per-head q/k norms) or 'olmo' (over all heads)")
    extra = f.int("additional_vocab_size", lo=0, hi=1 << 24)
    spec = decoder.build(f, model_type, _QWEN3_NORMS if kind == "qwen3" else _OLMO_NORMS)
    if f.bool("norm_after"):  # each sublayer's output normed before the residual add, under the same names
        layers = tuple(replace(layer, norms=(PlacedNorm("input_layernorm", "post_mixer", layer.norms[0].norm),
                                             PlacedNorm("post_attention_layernorm", "post_ffn", layer.norms[1].norm)))
                       for layer in spec.layers)
        spec = replace(spec, layers=layers)
    n = len(spec.layers)
    scaled = f.raw("rope_scaling_layers")
    if scaled is not None:
        if not (isinstance(scaled, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in scaled)):
            raise f.error("rope_scaling_layers", "must be a list of layer indices")
        if spec.rope_scaling and set(range(n)) - set(scaled):  # () or None: unscaled everywhere anyway
            spec = replace(spec, numerics=replace(spec.numerics, rope_unscaled_layers=tuple(
                i for i in range(n) if i not in scaled)))
    # never tied: Molmo2ForConditionalGeneration has no tied weights
    return replace(spec, tie_word_embeddings=False, embedding_rows=spec.vocab_size + extra if extra else 0)


def _sub(top: dict, key: str, where: str, family: str, legacy: str | None = None) -> tuple[Fields, bool]:
    from ..family_defaults import FAMILY_DEFAULTS

    cfg = top.get(key)
    used_legacy = False
    if cfg is None and legacy is not None and top.get(legacy) is not None:
        cfg, used_legacy = top[legacy], True
    if cfg is None:
        cfg = {}
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: field '{legacy if used_legacy else key}' must be an object")
    return Fields(cfg, f"{where} ({legacy if used_legacy else key})", defaults=FAMILY_DEFAULTS.get(family),
                  nested=True, family=family), used_legacy


def _attention(out: list[Tensor], p: str, f: Fields, n_in: int, n_out: int) -> None:
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    hd = f.int("head_dim")
    bias = f.bool("attention_bias")
    for name, rows, cols in (("q_proj", heads * hd, n_in), ("k_proj", kv * hd, n_in), ("v_proj", kv * hd, n_in),
                             ("o_proj", n_out, heads * hd)):
        out.append(Tensor(f"{p}.{name}.weight", (rows, cols), "vision"))
        if bias:
            out.append(Tensor(f"{p}.{name}.bias", (rows,), "vision"))


def molmo2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vf, legacy = _sub(top, "vision_config", where, "molmo2_vision", legacy="vit_config")
    af, _ = _sub(top, "adapter_config", where, "molmo2_adapter")
    h = vf.int("hidden_size")
    layers = vf.int("num_hidden_layers", hi=MAX_LAYERS)
    # Molmo2*Config.__post_init__: the hub's remote-code keys override the transformers names
    fkey = "vit_layers" if af.cfg.get("vit_layers") is not None else "vision_feature_layer"
    feature = af.raw(fkey)
    if feature is None:
        feature = af.derived("vision_feature_layer", [24, 18], "absent: Molmo2AdapterConfig's default")
    if not (isinstance(feature, list) and feature
            and all(isinstance(i, int) and not isinstance(i, bool) for i in feature)):
        raise af.error(fkey, "must be a non-empty list of ViT layer indices")
    if legacy:  # Molmo2Config: a vit_config's tower stops at the deepest layer the adapter reads
        layers = max(i % layers for i in feature) + 1
    elif not all(-layers <= i < layers for i in feature):
        raise af.error(fkey, f"{feature} must index the {layers} layers of vision_config")
    patch = vf.int("image_patch_size" if vf.cfg.get("image_patch_size") is not None else "patch_size", hi=4096)
    pkey = "image_num_pos" if vf.cfg.get("image_num_pos") is not None else "num_position_embeddings"
    if vf.raw(pkey) is not None:
        positions = vf.int(pkey, hi=1 << 24)
    else:
        skey = "image_default_input_size" if vf.cfg.get("image_default_input_size") is not None else "image_size"
        size = vf.raw(skey)
        if size is None:
            size = vf.derived("image_size", [378, 378], "absent: Molmo2VisionConfig's default")
        if not (isinstance(size, list) and len(size) == 2
                and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size)):
            raise vf.error(skey, "must be a [height, width] pair of positive integers")
        positions = vf.derived("num_position_embeddings", (size[0] // patch) * (size[1] // patch),
                               "absent: (height // patch_size) x (width // patch_size)")
        if positions < 1:
            raise vf.error("patch_size", f"({patch}) is larger than the image ({size})")
    inter = vf.int("intermediate_size")
    v = "model.vision_tower"
    out = [Tensor(f"{v}.positional_embedding", (positions, h), "vision"),
           Tensor(f"{v}.patch_embedding.weight", (h, patch * patch * vf.int("num_channels", hi=64)), "vision"),
           Tensor(f"{v}.patch_embedding.bias", (h,), "vision")]
    for i in range(layers):
        b = f"{v}.layers.{i}"
        for norm in ("layer_norm1", "layer_norm2"):
            out += [Tensor(f"{b}.{norm}.weight", (h,), "vision"), Tensor(f"{b}.{norm}.bias", (h,), "vision")]
        _attention(out, f"{b}.self_attn", vf, h, h)
        out += [Tensor(f"{b}.mlp.fc1.weight", (inter, h), "vision"), Tensor(f"{b}.mlp.fc1.bias", (inter,), "vision"),
                Tensor(f"{b}.mlp.fc2.weight", (h, inter), "vision"), Tensor(f"{b}.mlp.fc2.bias", (h,), "vision")]
    ah = af.int("hidden_size")
    a = "model.multi_modal_projector"
    _attention(out, f"{a}.image_pooling_2d", af, ah * len(feature), ah)
    ainter = af.int("intermediate_size")
    bias = af.bool("mlp_bias")
    for name in ("gate_proj", "up_proj"):
        out.append(Tensor(f"{a}.image_projector.{name}.weight", (ainter, ah), "vision"))
        if bias:
            out.append(Tensor(f"{a}.image_projector.{name}.bias", (ainter,), "vision"))
    out.append(Tensor(f"{a}.image_projector.down_proj.weight", (af.int("text_hidden_size"), ainter), "vision"))
    return tuple(out)
