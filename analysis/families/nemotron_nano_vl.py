"""NVIDIA's remote-code Nemotron Nano VL wrappers, counted from vLLM's model files (no transformers class):

- ``NemotronH_Nano_VL_V2`` (nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-BF16, -FP8, -NVFP4-QAD; vLLM
  vllm/model_executor/models/nano_nemotron_vl.py ``NemotronH_Nano_VL_V2``): ``vision_model`` is the hub's RADIO
  (C-RADIOv2-H, ``vision_config.version`` "radio_v2.5-h"), ``mlp1`` = RMSNorm(m), Linear(m, projector_hidden_size, no
  bias), ReLU², Linear(projector_hidden_size, LLM hidden, no bias) with m = vit_hidden_size x int(round(1 /
  downsample_ratio))², and ``language_model`` a NemotronHForCausalLM built from ``llm_config`` (the hub's
  configuration.py builds NemotronHConfig(**llm_config)). With ``vision_config.video_temporal_patch_size`` > 1 the
  patch generator also holds a bias-free ``video_embedder`` (vLLM radio.py ViTPatchGenerator).
- ``Llama_Nemotron_Nano_VL`` (nvidia/Llama-3.1-Nemotron-Nano-VL-8B-V1; vLLM nemotron_vl.py
  ``LlamaNemotronVLChatModel``): the same RADIO tower (``AutoModel.from_config(vision_config)``), ``mlp1`` =
  LayerNorm(m), Linear(m, projector_hidden_size), GELU, Linear(projector_hidden_size, LLM hidden), all biased, and a
  LlamaForCausalLM built from ``llm_config`` (Nemotron_Nano_VL_Config: ``LlamaConfig(**llm_config)``, whatever its
  model_type says).

The RADIO tower is the hub's timm ViT read as vLLM reads it (vllm/transformers_utils/configs/radio.py,
vllm/model_executor/models/radio.py): width, depth, heads and MLP from ``VIT_TIMM_DIM_BY_NAME[args.model]``, patch
size ``vision_config.patch_size``, (round(cpe_max_size / patch) x patch / patch)² learned positions, one cls token per
unique teacher (``cls_token_per_teacher``; else one) plus ``register_multiple - cls % register_multiple`` registers,
biased fused qkv / proj / fc1 / fc2, two LayerNorms per block, no layer scale and no final norm; the shapes of
transformers' RadioModel (the Nemotron-3 Nano Omni tower, ``vision_wrappers.radio_tensors``) less its layer scales.
The checkpoint also stores the input conditioner's ``norm_mean`` / ``norm_std`` (3 values each) and ``summary_idxs``:
buffers, not parameters, so not counted. KV / state come from the language model alone.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import Fields
from ..spec import Tensor
from .voxtral import required_sub_config
from ..vision import _lin, _ln, _vision_fields, vision_config_dict
from ..vision_wrappers import radio_tensors

#: vLLM configs/radio.py VIT_TIMM_DIM_BY_NAME: timm model name -> (hidden, layers, heads, MLP width)
VIT_TIMM_DIM_BY_NAME = {
    "vit_small_patch16_224": (384, 12, 6, 1536),
    "vit_base_patch16_224": (768, 12, 12, 3072),
    "vit_large_patch16_224": (1024, 24, 16, 4096),
    "vit_huge_patch16_224": (1280, 32, 16, 5120),
}

#: the wrappers' config-class defaults (the hub's configuration.py as vLLM / SGLang copy it)
DEFAULTS = {"downsample_ratio": 0.5, "projector_hidden_size": 4096, "vit_hidden_size": 1280}

#: RADIOConfig fields whose modules are not modelled (the released configs set them null / empty)
_UNMODELLED = ("adaptor_names", "feature_normalizer_config", "inter_feature_normalizer_config", "vitdet_window_size")


_NOTE = "absent: the wrapper config class's default"


def _top_int(t: Fields, key: str) -> int:
    return t.int(key, DEFAULTS[key], note=_NOTE)


def _llm(cfg: dict, where: str, wrapper: str) -> dict:
    return required_sub_config(cfg, "llm_config", where,
                               f"a {wrapper} config names its language model's fields in llm_config")


def nano_vl_v2_text_config(cfg: dict, where: str) -> dict:
    """NemotronH_Nano_VL_V2_Config: ``NemotronHConfig(**llm_config)``, tied as llm_config says (NemotronHConfig's
    default: untied), never by the wrapper's own flag."""
    text = _llm(cfg, where, "NemotronH_Nano_VL_V2")
    mt = text.get("model_type", "nemotron_h")
    if mt != "nemotron_h":
        raise UnsupportedModelError(f"{where}: llm_config model_type '{mt}' is not the NemotronH language model "
                                    "NemotronH_Nano_VL_V2_Config builds", "its llm_config is a nemotron_h config")
    text["model_type"] = "nemotron_h"
    text.setdefault("tie_word_embeddings", False)
    return text


def llama_nano_vl_text_config(cfg: dict, where: str) -> dict:
    """Nemotron_Nano_VL_Config: ``LlamaConfig(**llm_config)`` whatever llm_config's model_type, untied unless
    llm_config says so (LlamaConfig's default)."""
    text = _llm(cfg, where, "Llama_Nemotron_Nano_VL")
    text["model_type"] = "llama"
    text.setdefault("tie_word_embeddings", False)
    return text


def _radio_fields(top: dict, where: str) -> tuple[Fields, int | None]:
    """The hub RADIOConfig (``vision_config`` with its ``args``) as transformers' RadioConfig fields, and the video
    embedder's temporal patch size (None: no video embedder)."""
    vc = vision_config_dict(top.get("vision_config"), where)
    w = f"{where} (vision_config)"
    mt = vc.get("model_type", "radio")
    if mt != "radio":
        raise UnsupportedModelError(f"{w}: vision tower '{mt}' is not the RADIO model the Nemotron Nano VL "
                                    "wrappers build", "modelled here: radio (nvidia/C-RADIOv2-H's remote code)")
    for key in _UNMODELLED:
        if vc.get(key):
            raise UnsupportedModelError(f"{w}: field '{key}' ({vc[key]!r}) adds RADIO modules that are not "
                                        "modelled", "the released Nemotron Nano VL configs leave it null")
    args = vc.get("args")
    if not isinstance(args, dict):
        raise ConfigError(f"{w}: field 'args' must be an object naming the RADIO backbone (args.model)",
                          "the hub's RADIOConfig keeps its timm model and teachers in vision_config.args")
    model = args.get("model")
    if model not in VIT_TIMM_DIM_BY_NAME:
        raise UnsupportedModelError(f"{w}: RADIO backbone args.model {model!r} is not one vLLM builds",
                                    f"VIT_TIMM_DIM_BY_NAME holds {', '.join(VIT_TIMM_DIM_BY_NAME)}")
    a = Fields(args, f"{w} (args)", nested=True)
    for key, ok in (("qk_normalization", False), ("norm_type", "layer_norm"), ("hidden_act", "gelu")):
        if args.get(key, ok) != ok:
            raise UnsupportedModelError(f"{w}: args.{key} {args[key]!r} is not modelled",
                                        f"vLLM's RADIO tower is the timm ViT with {key} {ok!r}")
    h, layers, heads, inter = VIT_TIMM_DIM_BY_NAME[model]
    v = Fields(vc, w, nested=True)
    patch = v.int("patch_size", 16, hi=4096, note="absent: vLLM's default (16)")
    cpe = a.int("cpe_max_size", 2048, hi=1 << 20, note="absent: RadioConfig's default (2048)")
    teachers = args.get("teachers") or []
    if not isinstance(teachers, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str)
                                                 for t in teachers):
        raise a.error("teachers", "must be a list of objects with a 'name'")
    cls = len({t["name"] for t in teachers}) if a.bool("cls_token_per_teacher", False) else 1
    multiple = a.int("register_multiple", 0, lo=0, hi=1024, note="absent: no registers")
    registers = multiple - cls % multiple if multiple else 0  # vLLM radio.py ClsToken
    video = v.int("video_temporal_patch_size", 1, hi=64, note="absent: no video embedder")
    if video > 1 and not v.bool("separate_video_embedder", True):
        raise UnsupportedModelError(f"{w}: video_temporal_patch_size {video} without separate_video_embedder is "
                                    "not built by vLLM (NotImplementedError)")
    radio = {"hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": heads, "mlp_ratio": inter / h,
             "patch_size": patch, "num_channels": 3, "max_img_size": round(cpe / patch) * patch,
             "num_cls_tokens": cls, "num_registers": registers, "qkv_bias": a.bool("qkv_bias", True),
             "use_swiglu_ffn": False}
    return _vision_fields(radio, where, "radio"), (video if video > 1 else None)


def _tower(top: dict, where: str) -> tuple[list[Tensor], Fields, int]:
    f, video = _radio_fields(top, where)
    out = radio_tensors(f, video, prefix="vision_model.radio_model", timm=True)
    t = Fields(top, where)
    vh = _top_int(t, "vit_hidden_size")
    if vh != f.int("hidden_size"):
        raise t.error("vit_hidden_size", f"must equal the RADIO backbone's width ({f.int('hidden_size')})")
    ratio = t.float("downsample_ratio", DEFAULTS["downsample_ratio"], note=_NOTE)
    if not 1 / 64 <= ratio <= 1:
        raise t.error("downsample_ratio", f"must be between 1/64 and 1, got {ratio}")
    return out, t, vh * int(round(1 / ratio)) ** 2


def nano_vl_v2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """NemotronH_Nano_VL_V2: the RADIO tower and the bias-free RMSNorm / ReLU² ``mlp1``."""
    if top.get("sound_config") is not None:
        raise UnsupportedModelError(f"{where}: a NemotronH_Nano_VL_V2 config with a sound_config (the Parakeet "
                                    "sound encoder and projection) is not modelled",
                                    "Nemotron-3 Nano Omni's transformers format (nemotron_h_omni) is")
    out, t, width = _tower(top, where)
    proj = _top_int(t, "projector_hidden_size")
    out.append(Tensor("mlp1.0.weight", (width,), "vision"))
    out.append(Tensor("mlp1.1.weight", (proj, width), "vision"))
    out.append(Tensor("mlp1.3.weight", (text_hidden, proj), "vision"))
    return tuple(out)


def llama_nano_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Llama_Nemotron_Nano_VL: the RADIO tower and the biased LayerNorm / GELU ``mlp1``."""
    out, t, width = _tower(top, where)
    proj = _top_int(t, "projector_hidden_size")
    _ln(out, "mlp1.0", width)
    _lin(out, "mlp1.1", proj, width)
    _lin(out, "mlp1.3", text_hidden, proj)
    return tuple(out)
