"""Open-Bee Bee-8B (``bee``, BeeForConditionalGeneration; served by vLLM's vllm/model_executor/models/bee.py).

vLLM's class is LLaVA-OneVision (``LlavaOnevisionForConditionalGeneration``: the SigLIP tower of ``vision_config``
under ``model.vision_tower``, ``model.image_newline`` of the text hidden size, the language model of ``text_config``,
Qwen3 for Bee-8B) with its projector replaced by ``BeeMultiModalProjector``: ``pre_norm`` LayerNorm(vision hidden),
``linear_1`` Linear(vision hidden, 4 × text hidden), GELU, ``linear_2`` Linear(4 × text hidden, text hidden), both
biased. The checkpoint (saved with transformers' LLaVA-OneVision names, ``model.vision_tower.`` ...) holds the whole
tower as transformers builds it; lm_head follows text_config's tie flag (vLLM builds the text model from it).
"""

from __future__ import annotations

from ..spec import Tensor
from ..vision import _ln, _lin, _tower
from .llava_next import ONEVISION_VISION_DEFAULT


def bee_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    out = _tower(top, where, ONEVISION_VISION_DEFAULT)
    vh = out[-1].shape[0]  # SigLIP's post_layernorm, or its head's fc2 bias when vision_use_head
    p = "model.multi_modal_projector"
    _ln(out, f"{p}.pre_norm", vh)
    _lin(out, f"{p}.linear_1", 4 * text_hidden, vh)
    _lin(out, f"{p}.linear_2", text_hidden, 4 * text_hidden)
    out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    return tuple(out)
