"""PaliGemma (1 and 2) and ShieldGemma 2: SigLIP-towered Gemma wrappers, as transformers builds them.

PaliGemma (``paligemma``, PaliGemmaForConditionalGeneration): the language model is ``text_config`` (Gemma for
PaliGemma 1, Gemma 2 for PaliGemma 2; a registry entry of its own, read through ``TEXT_WRAPPERS``); the vision
tower is a SigLIP vision model (``siglip_vision_model``, built with ``vision_use_head`` as the config says:
PaliGemmaConfig's default vision_config turns the head off, SiglipVisionConfig's class default — what a given
vision_config without the field gets — turns it on); the projector (``PaliGemmaMultiModalProjector``) is one
biased Linear from the vision hidden size to the wrapper's top-level ``projection_dim`` (PaliGemmaConfig copies
it into vision_config.projection_dim, overriding whatever the vision_config says). lm_head ties to the embedding
by the wrapper's ``tie_word_embeddings`` (class default true). The top-level ``hidden_size`` is not read by the
model (the text_config's is).

ShieldGemma 2 (``shieldgemma2``): transformers builds Gemma3ForConditionalGeneration from it (the image-text
model of the checkpoint; ShieldGemma2ForImageClassification wraps exactly that model and adds no parameters):
a SigLIP tower and Gemma 3's projector, i.e. Gemma 3's ``gemma3_vision``; its default vision_config is SigLIP's
class default (no PaliGemma-style overrides), so a config without one gets the 768-wide, 12-layer, headed tower.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import Fields
from ..spec import Tensor
from ..vision import siglip_tensors

#: PaliGemmaConfig's vision_config when the config has none (sub_configs_defaults init_kwargs).
PALIGEMMA_VISION_DEFAULT = {"model_type": "siglip_vision_model", "intermediate_size": 4096, "hidden_size": 1152,
                            "patch_size": 14, "image_size": 224, "num_hidden_layers": 27, "num_attention_heads": 16,
                            "vision_use_head": False}


def paligemma_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = top.get("vision_config")
    if vc is None:
        vc = PALIGEMMA_VISION_DEFAULT
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    mt = vc.get("model_type", "siglip_vision_model")
    if mt != "siglip_vision_model":
        from ..errors import UnsupportedModelError

        raise UnsupportedModelError(f"{where}: vision tower '{mt}' is not one we can count for PaliGemma",
                                    "PaliGemma's checkpoints use a SigLIP tower (siglip_vision_model)")
    tower = siglip_tensors(vc, where)
    vh = tower[0].shape[0]  # the patch embedding's output channels: the vision hidden size
    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("paligemma"), family="paligemma")
    proj = f.int("projection_dim")
    if proj != text_hidden:
        raise f.error("projection_dim", f"({proj}) must equal the language model's hidden_size ({text_hidden}): "
                      "the projected image tokens are merged into its input embeddings")
    p = "model.multi_modal_projector.linear"
    return tuple(tower + [Tensor(f"{p}.weight", (proj, vh), "vision"), Tensor(f"{p}.bias", (proj,), "vision")])
