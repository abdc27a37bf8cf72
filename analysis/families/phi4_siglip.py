"""Microsoft Phi-4-reasoning-vision-15B (``phi4-siglip``, ``Phi4ForCausalLMV``; remote code modeling_phi4_visionr.py,
served by vLLM's vllm/model_executor/models/phi4siglip.py). No transformers class: counted from the shapes its code
builds, which are transformers' own classes.

Its config.json is flat: Phi-4's text fields (Phi-3's: ``Phi4ForCausalLMV`` subclasses ``Phi3ForCausalLM``) at the
top level, read as ``phi3`` (``FLAT_TEXT_WRAPPERS``), beside

- ``vision_config``: a ``siglip2_vision_model`` (SigLIP2 NaFlex so400m: hidden 1152, 27 layers, 16 heads, patch 16,
  256 learned positions), built whole as transformers' Siglip2VisionModel under ``model.vision_tower.vision_tower.
  vision_model``: the checkpoint holds every layer, the post-LayerNorm and the pooling head (vLLM's loader drops
  ``...vision_model.head.`` and builds the tower only up to ``mm_vision_select_layer`` -2; the checkpoint and this
  count hold it all). ``patch_size`` absent reads 16, as vLLM's phi4siglip.py fills it in.
- ``mm_projector_type`` "mlp2x_gelu" (the only one counted): ``model.mm_projector.0`` Linear(mm_hidden_size, hidden),
  GELU, ``model.mm_projector.2`` Linear(hidden, hidden), both biased (vLLM: LlavaMultiModalProjector with
  ``multimodal_projector_bias=True``); ``mm_hidden_size`` must be the tower's width.

lm_head follows the flat config's tie_word_embeddings (Phi-3's default: untied).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError, short
from ..spec import Tensor
from ..vision import _lin, siglip_tensors, vision_config_dict

PROJECTOR = "mlp2x_gelu"


def phi4_siglip_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = dict(vision_config_dict(top.get("vision_config"), where))
    mt = vc.get("model_type", "siglip2_vision_model")
    if mt != "siglip2_vision_model":
        raise UnsupportedModelError(f"{where}: vision tower {short(mt)} is not the one Phi-4-reasoning-vision builds",
                                    "its code builds a SigLIP2 NaFlex tower (siglip2_vision_model)")
    vc.setdefault("patch_size", 16)  # vLLM's phi4siglip.py: absent patch_size reads 16
    proj = top.get("mm_projector_type", PROJECTOR)
    if proj != PROJECTOR:
        raise UnsupportedModelError(f"{where}: mm_projector_type {short(proj)} is not counted",
                                    f"Phi-4-reasoning-vision's checkpoint and vLLM build '{PROJECTOR}' only")
    out = siglip_tensors(vc, where, prefix="model.vision_tower.vision_tower.vision_model",
                         family="siglip2_vision_model")
    vh = out[0].shape[0]  # the patch embedding's rows: the tower's width
    mm = top.get("mm_hidden_size", vh)
    if mm != vh:
        raise ConfigError(f"{where}: field 'mm_hidden_size' is {short(mm)}, but the vision tower's hidden size is {vh} "
                          "(the projector reads the tower's features)")
    _lin(out, "model.mm_projector.0", text_hidden, vh)
    _lin(out, "model.mm_projector.2", text_hidden, text_hidden)
    return tuple(out)
