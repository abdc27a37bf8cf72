"""LLaVA in the LLaVA / LLaVA-NeXT repositories' own format (github.com/haotian-liu/LLaVA,
github.com/LLaVA-VL/LLaVA-NeXT; remote code): LLaVA-OneVision / LLaVA-Video
(lmms-lab/llava-onevision-qwen2-*-ov, LLaVA-Video-*-Qwen2: LlavaQwenForCausalLM), LLaVA-1.6
(liuhaotian/llava-v1.6-vicuna-7b: LlavaLlamaForCausalLM; -mistral-7b: LlavaMistralForCausalLM). Their config.json
is flat: the language model's fields (LlavaQwenConfig(Qwen2Config),
LlavaConfig(LlamaConfig), LlavaMistralConfig(MistralConfig)) at the top level beside the ``mm_*`` fields. The
published configs say model_type ``llava`` (transformers' LLaVA name, but no text_config / vision_config), or
``llava_qwen`` / ``llava_llama`` / ``llava_mistral``; the language model is the one ``architectures[0]`` names.
Counted from the repositories' llava/model (LlavaMetaModel and the tower / projector builders):

- ``model.vision_tower.vision_tower``: the tower ``mm_vision_tower`` names (its shape is not in config.json, so only
  the names in ``TOWERS`` are counted, others refused by name). LLaVA-NeXT's ``SigLipVisionTower`` deletes the last
  encoder layer of the named SigLIP (``del vision_model.encoder.layers[-1:]``) and replaces its pooling head by
  Identity: so400m-patch14-384 (1152 wide, 27 layers, MLP 4304) is stored as 26 layers with post_layernorm and no
  head (transformers' LlavaOnevisionConfig default tower, which the -hf conversions use). ``CLIPVisionTower`` keeps
  the whole CLIPVisionModel: ViT-L/14-336 (1024 wide, 24 layers, MLP 4096, pre_layrnorm and post_layernorm).
- ``model.mm_projector``: ``mm_projector_type`` ``mlp{N}x_gelu`` (N biased Linears, the first mm_hidden_size ->
  hidden_size, GELU between: indices 0, 2, 4 ...) or ``linear``; the other projector types are refused.
- ``model.image_newline`` (hidden_size) when ``mm_patch_merge_type`` contains "unpad" (LlavaMetaModel.__init__).

llava-onevision-qwen2-7b-ov: Qwen2-7B (vocabulary 152,064, untied) 7,615,616,512 + SigLIP 397,747,744 + projector
16,980,992 + image_newline 3,584 = 8,030,348,832 (the hub's 8.03B). llava-v1.6-vicuna-7b: Vicuna-7B 6,738,415,616 +
CLIP-L/14-336 303,507,456 + projector 20,979,712 + image_newline 4,096 = 7,062,906,880 (the hub's 7.06B).
"""

from __future__ import annotations

import re

from ..errors import ConfigError, UnsupportedModelError
from ..fields import Fields
from ..spec import Tensor
from ..vision import _lin, clip_tensors, siglip_tensors

#: mm_vision_tower -> the tower LLaVA-NeXT's SigLipVisionTower stores (its last layer deleted, no head)
TOWERS: dict[str, dict] = {
    "google/siglip-so400m-patch14-384": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                                         "intermediate_size": 4304, "num_attention_heads": 16,
                                         "num_hidden_layers": 27 - 1, "patch_size": 14, "image_size": 384,
                                         "num_channels": 3, "vision_use_head": False},
    "openai/clip-vit-large-patch14-336": {"model_type": "clip_vision_model", "hidden_size": 1024,
                                          "intermediate_size": 4096, "num_attention_heads": 16,
                                          "num_hidden_layers": 24, "patch_size": 14, "image_size": 336,
                                          "num_channels": 3},
}
#: architectures[0] -> the language model's model_type (the config class each LLaVA class derives from)
ARCHITECTURES = {"LlavaQwenForCausalLM": "qwen2", "LlavaLlamaForCausalLM": "llama",
                 "LlavaMistralForCausalLM": "mistral"}
#: the repositories' own model_types -> the language model's
MODEL_TYPES = {"llava_qwen": "qwen2", "llava_llama": "llama", "llava_mistral": "mistral"}


def is_original(cfg: dict) -> bool:
    """A LLaVA-repository config: flat (no vision_config), its tower named by mm_vision_tower."""
    return cfg.get("vision_config") is None and "mm_vision_tower" in cfg


def text_config(cfg: dict, where: str) -> dict:
    """The flat language model of a LLaVA-repository config, its model_type the one architectures[0] (else the
    repository's model_type) derives from. For ``llava`` configs without it, transformers' format: refused as before."""
    mt = cfg.get("model_type")
    arch = cfg.get("architectures")
    first = arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else None
    if mt == "llava" and not is_original(cfg):
        raise UnsupportedModelError(f"{where}: multimodal model_type 'llava' has no text_config we can read")
    inner = ARCHITECTURES.get(first) if first is not None else None
    if inner is None:
        inner = MODEL_TYPES.get(mt)
    if inner is None:
        raise UnsupportedModelError(f"{where}: LLaVA-repository architecture {first!r} is not one we read",
                                    f"the language model is read for {', '.join(sorted(ARCHITECTURES))}")
    if mt in MODEL_TYPES and MODEL_TYPES[mt] != inner:
        raise ConfigError(f"{where}: field 'model_type' ({mt!r}) disagrees with its architectures ({first})")
    text = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures", "auto_map")}
    text["model_type"] = inner
    return text


def llava_original_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The tower, mm_projector and image_newline of a LLaVA-repository checkpoint."""
    f = Fields(top, where, family="llava_original")
    name = f.raw("mm_vision_tower", f.raw("vision_tower"))
    if not isinstance(name, str):
        raise ConfigError(f"{where}: field 'mm_vision_tower' must name the vision tower (a hub id)",
                          "LLaVA-NeXT builds its tower from the checkpoint mm_vision_tower names")
    tower = TOWERS.get(name)
    if tower is None:
        raise UnsupportedModelError(f"{where}: mm_vision_tower '{name}' is not a tower we can count: its shape is not "
                                    "in config.json (LLaVA-NeXT loads it from that hub id)",
                                    f"counted towers: {', '.join(sorted(TOWERS))}")
    mm_hidden = f.int("mm_hidden_size", tower["hidden_size"], note="absent: the tower's hidden size")
    if mm_hidden != tower["hidden_size"]:
        raise f.error("mm_hidden_size", f"({mm_hidden}) disagrees with {name}'s hidden size ({tower['hidden_size']})")
    prefix = "model.vision_tower.vision_tower.vision_model"
    if tower["model_type"] == "siglip_vision_model":
        out = siglip_tensors(tower, f"{where} (mm_vision_tower)", prefix=prefix, head=False)
    else:
        out = clip_tensors(tower, f"{where} (mm_vision_tower)", prefix=prefix)
    kind = f.str("mm_projector_type", "linear", note="absent: LLaVA's builder default")
    m = re.fullmatch(r"mlp(\d+)x_gelu", kind)
    if kind == "linear":
        depth = 1
    elif m and 1 <= int(m.group(1)) <= 16:
        depth = int(m.group(1))
    else:
        raise UnsupportedModelError(f"{where}: mm_projector_type '{kind}' is not modelled",
                                    "'linear' and 'mlp<N>x_gelu' projectors are counted")
    _lin(out, "model.mm_projector.0", text_hidden, mm_hidden)
    for i in range(1, depth):
        _lin(out, f"model.mm_projector.{2 * i}", text_hidden, text_hidden)
    merge = f.str("mm_patch_merge_type", "flat", note="absent: LLaVA's default")
    if "unpad" in merge:
        out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    for key in ("mm_resampler_type", "mm_perceiver_depth"):
        if f.raw(key):
            raise UnsupportedModelError(f"{where}: field '{key}' ({f.raw(key)!r}) adds a resampler; it is not modelled",
                                        "the published OneVision / LLaVA-Video checkpoints set none")
    return tuple(out)


def llava_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """model_type ``llava``: the LLaVA repository's flat format, else transformers' LLaVA (vision.llava_vision)."""
    if is_original(top):
        return llava_original_vision(top, text_hidden, where)
    from ..vision import llava_vision as hf_llava_vision

    return hf_llava_vision(top, text_hidden, where)
