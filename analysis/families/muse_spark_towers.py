"""Muse Spark whole (the ``muse_spark`` wrapper, MuseSparkForConditionalGeneration): its vision tower, vision adapter
and projection and its audio tower, as transformers 5.24's modeling_muse_spark.py builds them. The language model is
``muse_spark_text`` (analysis/families/muse_spark.py, with the wrapper's lm_head, never tied); the decode trace and KV
bytes stay its own. A missing or null ``vision_config`` / ``audio_config`` is its class defaults (MuseSparkConfig
builds both towers always).

Vision (``model.vision_tower``, MuseSparkVisionModel, kind ``vision``), Muse Glimmer's tower in shape:

- ``patch_embedder.patch_embedding``: a bias-free Linear ``patch_temporal`` x 3 x ``patch_size``^2 -> hidden, and a
  learned ``position_embedding_table`` of ``pos_emb_height`` x ``pos_emb_width`` rows (bilinearly resampled per
  image, so its size does not follow the image);
- ``ln_pre`` and ``ln_post`` LayerNorms (weight and bias);
- ``num_hidden_layers`` pre-norm blocks: LayerNorms ``norm1`` / ``norm2``, biased ``attn.q_proj`` / ``k_proj`` /
  ``v_proj`` / ``proj`` (hidden -> hidden, heads of hidden // ``num_attention_heads``), biased ``mlp.fc1`` / ``fc2``
  of ``intermediate_size``. ``layer_types`` (windowed attention over ``pos_emb_height`` x ``patch_size`` pixels, or
  full) and the axial 2-D RoPE (non-persistent buffers) change no weight;
- the ``merge_size`` x ``merge_size`` pixel shuffle has no weight: it hands hidden x merge_size^2 features on.

Then ``model.vision_adapter`` (bias-free ``fc1`` ``out_hidden_size`` -> ``projector_hidden_size``, bias-free ``fc2``
square), a bias-free ``model.vision_projection`` to the text hidden size, and ``perception_emb_norm`` (weightless).
``out_hidden_size`` must be what the pixel shuffle hands on (vision hidden x merge_size^2: 6144 by default):
transformers builds any other value but its forward cannot run it, so that is refused as a broken config.

Audio (``model.audio_tower``, MuseSparkAudioModel, kind ``audio``): a causal convolutional pyramid on the raw 24 kHz
waveform, no attention. Stage s (``num_hidden_layers`` stages; ``patch_sizes``, ``hidden_sizes``, ``depths`` one
entry each): a biased Linear patch embedding (previous width, 1 for the waveform, x ``patch_sizes[s]`` ->
``hidden_sizes[s]``) and its RMSNorm weight, then ``depths[s]`` conv blocks: a depthwise causal Conv1d of
``conv_kernel_size`` with a bias, an RMSNorm weight, a biased fc1 / fc2 MLP of int(hidden x ``mlp_ratio``). Then an
RMSNorm of the last width, a biased ``proj`` to ``out_hidden_size`` (which must equal the text hidden size:
MuseSparkConfig.validate_architecture) and its ``post_proj_norm`` weight.

Checked against transformers 5.24 on the meta device (tests/test_muse_spark_whole.py): MuseSparkConfig()'s defaults
(Muse-Spark-Open-816B-A42B's shape; published "816B total / 42B active") come to 822,036,513,792 parameters: the
language model 819,990,536,192 (lm_head untied), the vision tower 1,852,639,744, the adapter 41,943,040 and
projection 33,554,432, the audio tower 117,840,384. No released config.json was at hand: the class defaults are the
documented checkpoint's.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _ln, _qkv_block, vision_config_dict, vision_tower_config

_VISION = "vision"
_AUDIO = "audio"

#: MuseSparkAudioConfig's tuple defaults (the generated table holds scalars only)
AUDIO_PATCH_SIZES = (16, 6, 5, 4)
AUDIO_HIDDEN_SIZES = (256, 512, 1024, 2048)
AUDIO_DEPTHS = (2, 2, 2, 2)

_VISION_LAYER_TYPES = ("full_attention", "window_attention")


def _fields(cfg: dict, where: str, family: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    return Fields(cfg, where, defaults=FAMILY_DEFAULTS.get(family), nested=True, family=family)


def vision_tensors(top: dict, text_hidden: int, where: str) -> list[Tensor]:
    """MuseSparkVisionModel, vision_adapter and vision_projection (module docstring)."""
    vc = vision_tower_config(top, where, "muse_spark_vision", "muse_spark", "modelled here: muse_spark_vision")
    f = _fields(vc, f"{where} (vision_config)", "muse_spark_vision")
    h, inter = f.int("hidden_size"), f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h}): the tower splits the hidden "
                      "size into heads of hidden_size // num_attention_heads")
    types = f.raw("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != layers
                              or any(t not in _VISION_LAYER_TYPES for t in types)):
        raise f.error("layer_types", f"must list 'full_attention' or 'window_attention' for each of the {layers} "
                      "layers")
    rope = f.raw("rope_parameters")
    if rope is not None and (not isinstance(rope, dict) or rope.get("rope_type", "axial") != "axial"):
        raise f.error("rope_parameters", "must be an axial RoPE (rope_type 'axial'): MuseSparkVisionRotaryEmbedding "
                      "supports no other")
    patch = f.int("patch_size", hi=1024)
    merge = f.int("merge_size", hi=64)
    p = "model.vision_tower"
    out = [Tensor(f"{p}.patch_embedder.patch_embedding.weight",
                  (h, f.int("patch_temporal", hi=64) * 3 * patch * patch), _VISION),
           Tensor(f"{p}.patch_embedder.position_embedding_table.weight",
                  (f.int("pos_emb_height", hi=1 << 12) * f.int("pos_emb_width", hi=1 << 12), h), _VISION)]
    _ln(out, f"{p}.ln_pre", h)
    for i in range(layers):
        _qkv_block(out, f"{p}.layers.{i}", h, inter, split=True)
    _ln(out, f"{p}.ln_post", h)
    t = _fields(top, where, "muse_spark")
    shuffled, proj = t.int("out_hidden_size"), t.int("projector_hidden_size")
    if shuffled != h * merge * merge:
        raise t.error("out_hidden_size", f"({shuffled}) must be the vision tower's hidden_size x merge_size^2 "
                      f"({h} x {merge}^2 = {h * merge * merge}): the pixel shuffle feeds vision_adapter.fc1 that wide")
    out += [Tensor("model.vision_adapter.fc1.weight", (proj, shuffled), _VISION),
            Tensor("model.vision_adapter.fc2.weight", (proj, proj), _VISION),
            Tensor("model.vision_projection.weight", (text_hidden, proj), _VISION)]
    return out


def _stage_list(f: Fields, key: str, stages: int, default: tuple, lo: int) -> list[int]:
    raw = f.int_list(key, stages, lo=lo, hi=1 << 20)
    if raw is not None:
        return raw
    if f.raw(key) is None and len(default) != stages:  # MuseSparkAudioConfig.validate_architecture
        raise f.error("num_hidden_layers", f"is {stages} but '{key}' is absent (its default has {len(default)} "
                      "entries): a custom pyramid sets num_hidden_layers, patch_sizes, hidden_sizes and depths alike")
    return list(default)


def audio_tensors(top: dict, text_hidden: int, where: str) -> list[Tensor]:
    """MuseSparkAudioModel's parameters (module docstring)."""
    f = _fields(vision_config_dict(top.get("audio_config"), where, "audio_config"), f"{where} (audio_config)",
                "muse_spark_audio")
    mt = f.raw("model_type")
    if mt is not None and mt != "muse_spark_audio":
        raise UnsupportedModelError(f"{where}: audio tower '{mt}' is not one we can count for muse_spark",
                                    "modelled here: muse_spark_audio")
    stages = f.int("num_hidden_layers", hi=64)
    patches = _stage_list(f, "patch_sizes", stages, AUDIO_PATCH_SIZES, 1)
    widths = _stage_list(f, "hidden_sizes", stages, AUDIO_HIDDEN_SIZES, 1)
    depths = _stage_list(f, "depths", stages, AUDIO_DEPTHS, 0)
    ratio = f.float("mlp_ratio")
    kernel = f.int("conv_kernel_size", hi=1 << 12)
    out_h = f.int("out_hidden_size")
    if out_h != text_hidden:
        raise f.error("out_hidden_size", f"({out_h}) must equal text_config.hidden_size ({text_hidden}): the audio "
                      "tower's output is scattered onto the text embeddings (MuseSparkConfig.validate_architecture)")
    a, p = _AUDIO, "model.audio_tower"
    out: list[Tensor] = []
    prev = 1  # stage 0 reads the mono waveform
    for s, (patch, w, depth) in enumerate(zip(patches, widths, depths)):
        inter = int(w * ratio)
        if inter < 1:
            raise f.error("mlp_ratio", f"({ratio}) leaves stage {s} (hidden {w}) no MLP width")
        q = f"{p}.layers.{s}"
        out += [Tensor(f"{q}.patch_embedder.proj.weight", (w, prev * patch), a),
                Tensor(f"{q}.patch_embedder.proj.bias", (w,), a),
                Tensor(f"{q}.patch_embedder.norm.weight", (w,), a)]
        for b in range(depth):
            c = f"{q}.conv_blocks.{b}"
            out += [Tensor(f"{c}.conv.weight", (w, 1, kernel), a), Tensor(f"{c}.conv.bias", (w,), a),
                    Tensor(f"{c}.norm.weight", (w,), a),
                    Tensor(f"{c}.mlp.fc1.weight", (inter, w), a), Tensor(f"{c}.mlp.fc1.bias", (inter,), a),
                    Tensor(f"{c}.mlp.fc2.weight", (w, inter), a), Tensor(f"{c}.mlp.fc2.bias", (w,), a)]
        prev = w
    out += [Tensor(f"{p}.norm.weight", (prev,), a), Tensor(f"{p}.proj.weight", (out_h, prev), a),
            Tensor(f"{p}.proj.bias", (out_h,), a), Tensor(f"{p}.post_proj_norm.weight", (out_h,), a)]
    return out


def muse_spark_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """MuseSparkForConditionalGeneration's vision tower, adapter and projection (kind ``vision``) and audio tower
    (kind ``audio``)."""
    if not isinstance(top, dict):
        raise ConfigError(f"{where}: expected a JSON object of config fields")
    return tuple(vision_tensors(top, text_hidden, where) + audio_tensors(top, text_hidden, where))
