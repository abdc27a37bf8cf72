"""Baidu ERNIE-4.5-VL's original remote-code config (``ernie4_5_moe_vl``: ERNIE-4.5-VL-28B-A3B(-Base)-PT,
ERNIE-4.5-VL-424B-A47B(-Base)-PT, -Thinking), read by translating it into the transformers format
(``ernie4_5_vl_moe``: text_config + vision_config) that ``analysis.families.ernie4_5_vl`` builds, as transformers'
convert_ernie4_5_vl_moe_to_hf.py does (``convert_text_config_to_hf`` / ``convert_vision_config_to_hf``). The
checkpoint is the same model: the hub's modeling code holds per layer one ``experts`` list (the text experts, then
the vision experts), a ``gate`` with ``weight`` / ``weight_1`` (one router per modality) and ``moe_statics`` of
``(2, E)`` correction biases, which transformers' format splits into ``text_moe`` / ``vision_moe``: the same
parameters.

The flat config's fields, as the conversion reads them:

- the language model's fields at the top level; ``moe_num_experts`` a pair ``[text, vision]`` that must be equal
  (the hub's ``Ernie4_5_MoEStatics`` and vLLM's ernie45_vl_moe.py assume it; transformers keeps one number);
  ``moe_intermediate_size`` the pair ``[text experts, vision experts]`` carried over as it is;
- a layer is sparse when ``(i + 1) % moe_layer_interval == 0`` and ``min(moe_layer_start_index) <= i <=
  max(moe_layer_end_index)`` (the hub's Ernie4_5_DecoderLayer, the conversion's ``mlp_layer_types``). vLLM
  instead gives each modality its own range (a dense MLP in place of the experts outside it): a config whose text
  and vision ranges cover different layers is refused, the two readings disagreeing on its checkpoint;
- M-RoPE sections from ``freq_allocation`` (temporal; height and width split the rest of head_dim / 2 equally, as
  vLLM's Ernie4_5_VLMoeAttention), which gives the conversion's fixed ``[22, 22, 20]`` for head_dim 128 and 20;
- the DFNRope tower (``vision_config``): ``embed_dim`` wide (its ``hidden_size`` must equal it: the hub's
  DFNRopeVisionTransformerPreTrainedModel asserts so), an MLP of ``int(embed_dim * mlp_ratio)``; the resampler
  reads ``pixel_hidden_size`` (the tower's width: it must equal ``embed_dim``), ``spatial_conv_size`` and
  ``temporal_conv_size`` from the top level (the conversion's ``spatial_merge_size`` / ``temporal_merge_size``).

Refused rather than guessed: ``use_temporal_conv`` false (the hub's resampler then has no ``temporal_linear``,
transformers' always does) and ``num_nextn_predict_layers`` > 0 (MTP modules neither transformers nor vLLM build).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError, short
from ..fields import MAX_DIM, MAX_LAYERS, Fields, as_int
from ..spec import Tensor
from ..vision import vision_config_dict
from .ernie4_5_vl import ernie_vl_vision

#: the language-model fields carried over unchanged (the conversion's VALID_TEXT_CONFIG_KEYS, the MoE ones apart)
CARRIED = ("hidden_size", "intermediate_size", "max_position_embeddings", "num_attention_heads", "num_hidden_layers",
           "num_key_value_heads", "rms_norm_eps", "vocab_size", "use_cache", "use_bias", "head_dim", "hidden_act")
#: fields the hub's config class gives no usable default (a toy 768-wide model, or None): required here
REQUIRED_TEXT = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                 "num_key_value_heads", "vocab_size")
#: the hub's DFNRopeVisionTransformerConfig defaults (configuration_ernie_45t_vl.py; transformers' draft port
#: src/transformers/models/ernie4_5_vl/configuration_ernie4_5_vl.py quotes the class)
DFNROPE_DEFAULTS = {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "mlp_ratio": 4, "num_heads": 16,
                    "in_channels": 3, "patch_size": 14, "hidden_act": "quick_gelu"}
#: Ernie4_5_VLMoEConfig's defaults for the top-level fields the conversion moves into the vision config, and the
#: text ones read here (freq_allocation 20: the class and vLLM's getattr default)
TOP_DEFAULTS = {"spatial_conv_size": 2, "temporal_conv_size": 2, "use_temporal_conv": True, "freq_allocation": 20,
                "moe_num_shared_experts": 0, "tie_word_embeddings": False, "rope_theta": 500000.0}


def _pair(f: Fields, key: str, *, lo: int) -> list[int]:
    """A list-valued field of the flat config: two integers, [text, vision]."""
    raw = f.raw(key)
    if raw is None:
        raise ConfigError(f"{f.where}: required field '{key}' is missing",
                          "ERNIE-4.5-VL's remote-code config gives it per modality: [text, vision]")
    out = [as_int(v) for v in raw] if isinstance(raw, list) and len(raw) == 2 else [None]
    if any(v is None or v < lo or v > MAX_DIM for v in out):
        what = "positive integers" if lo == 1 else "non-negative integers"
        raise f.error(key, f"must be a pair of {what} [text, vision], got {short(raw)}")
    return out


def _index_pair(f: Fields, key: str) -> list[int]:
    """moe_layer_start_index / moe_layer_end_index: a layer index, or one per modality."""
    raw = f.raw(key)
    if raw is None or isinstance(raw, list):
        return _pair(f, key, lo=0)
    return [f.int(key, lo=0, hi=MAX_LAYERS)] * 2


def _sparse_layers(f: Fields, n_layers: int) -> list[str]:
    interval = f.int("moe_layer_interval", hi=MAX_LAYERS)
    start = _index_pair(f, "moe_layer_start_index")
    end = _index_pair(f, "moe_layer_end_index")

    def covered(lo: int, hi: int) -> set[int]:
        return {i for i in range(n_layers) if (i + 1) % interval == 0 and lo <= i <= hi}

    text, vision = covered(start[0], end[0]), covered(start[1], end[1])
    if text != vision:
        raise UnsupportedModelError(
            f"{f.where}: moe_layer_start_index {start} / moe_layer_end_index {end} give the text and vision experts "
            f"different layers ({len(text)} and {len(vision)} MoE layers): the hub's code and transformers' "
            "conversion put both on every layer of the union, vLLM a dense MLP in place of the missing modality's "
            "experts; which the checkpoint holds is not known, so it is not modelled",
            "the released ERNIE-4.5-VL configs give both modalities the same layers")
    union = covered(min(start), max(end))
    return ["sparse" if i in union else "dense" for i in range(n_layers)]


def text_config(cfg: dict, where: str) -> dict:
    """The transformers-format text_config (Ernie4_5_VLMoeTextConfig's fields) of a flat remote-code config."""
    f = Fields(cfg, where, defaults=TOP_DEFAULTS, family="ernie4_5_moe_vl")
    for key in REQUIRED_TEXT:
        f.int(key, hi=MAX_LAYERS if key == "num_hidden_layers" else MAX_DIM)
    experts = _pair(f, "moe_num_experts", lo=1)
    if experts[0] != experts[1]:
        raise UnsupportedModelError(
            f"{where}: moe_num_experts {experts} gives the text and vision experts different counts: the hub's "
            "Ernie4_5_MoEStatics and vLLM's ernie45_vl_moe.py require them equal (one (2, E) correction bias)",
            "the released ERNIE-4.5-VL configs have [64, 64]")
    sizes = _pair(f, "moe_intermediate_size", lo=1)
    if f.int("num_nextn_predict_layers", 0, lo=0, hi=64):
        raise UnsupportedModelError(
            f"{where}: num_nextn_predict_layers > 0: ERNIE-4.5-VL's MTP modules are not modelled (transformers' "
            "Ernie4_5_VLMoe and vLLM's ernie45_vl.py build none and skip their weights)",
            "a config without MTP layers is analysed")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    head_dim = f.int("head_dim") if f.has("head_dim") else f.int("hidden_size") // heads
    t = f.int("freq_allocation", lo=0)
    h = (head_dim // 2 - t) // 2
    if t < 1 or h < 1 or 2 * h + t != head_dim // 2:
        raise f.error("freq_allocation", f"({t}) must leave head_dim / 2 ({head_dim // 2}) minus it a positive even "
                                         "number, split equally between the height and width rotary sections")
    if not f.bool("use_temporal_conv"):
        raise UnsupportedModelError(
            f"{where}: use_temporal_conv is false: the hub's resampler then has no temporal_linear, "
            "transformers' Ernie4_5_VLMoe always builds one; not modelled",
            "the released ERNIE-4.5-VL configs use the temporal resampler")
    text = {k: cfg[k] for k in CARRIED if k in cfg}
    text.update(model_type="ernie4_5_vl_moe_text", moe_num_experts=experts[0], moe_intermediate_size=sizes,
                moe_k=f.int("moe_k"), moe_num_shared_experts=f.int("moe_num_shared_experts", lo=0),
                mlp_layer_types=_sparse_layers(f, n_layers),
                tie_word_embeddings=f.bool("tie_word_embeddings"),
                rope_parameters={"rope_type": "default", "rope_theta": f.float("rope_theta"),
                                 "mrope_section": [h, h, t]})
    return text


def vision_config(top: dict, where: str) -> dict:
    """The transformers-format vision_config (Ernie4_5_VLMoeVisionConfig's fields) of the DFNRope tower."""
    vc = vision_config_dict(top.get("vision_config"), where)
    fv = Fields(vc, f"{where} (vision_config)", defaults=DFNROPE_DEFAULTS, nested=True,
                family="DFNRope_vision_transformer")
    embed = fv.int("embed_dim")
    if fv.int("hidden_size") != embed:
        raise fv.error("hidden_size", f"({fv.int('hidden_size')}) must equal embed_dim ({embed}): the hub's "
                                      "DFNRopeVisionTransformerPreTrainedModel asserts it (its final ln is that wide)")
    heads = fv.int("num_heads")
    if embed % heads:
        raise fv.error("num_heads", f"({heads}) must divide embed_dim ({embed})")
    inter = int(embed * fv.float("mlp_ratio"))
    if inter < 1:
        raise fv.error("mlp_ratio", f"gives an MLP of {inter} (embed_dim x mlp_ratio): must be positive")
    f = Fields(top, where, defaults=TOP_DEFAULTS, family="ernie4_5_moe_vl")
    pixel = f.int("pixel_hidden_size")
    if pixel != embed:
        raise f.error("pixel_hidden_size", f"({pixel}) must equal the tower's embed_dim ({embed}): the resampler "
                                           "reads the tower's output")
    return {"depth": fv.int("depth", hi=MAX_LAYERS), "hidden_size": embed, "intermediate_size": inter,
            "num_heads": heads, "in_channels": fv.int("in_channels", hi=64), "patch_size": fv.int("patch_size", hi=4096),
            "hidden_act": fv.raw("hidden_act"), "spatial_merge_size": f.int("spatial_conv_size", hi=64),
            "temporal_merge_size": f.int("temporal_conv_size", hi=64)}


def to_transformers(cfg: dict, where: str = "config.json") -> dict:
    """The whole transformers-format config (model_type ernie4_5_vl_moe) of a remote-code one."""
    out = {"model_type": "ernie4_5_vl_moe", "text_config": text_config(cfg, where),
           "vision_config": vision_config(cfg, where)}
    out["tie_word_embeddings"] = out["text_config"]["tie_word_embeddings"]
    if "im_patch_id" in cfg:
        out["image_token_id"] = cfg["im_patch_id"]
    return out


def remote_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The DFNRope tower and resampler, counted as the transformers format names them."""
    return ernie_vl_vision({"vision_config": vision_config(top, where)}, text_hidden, where)
