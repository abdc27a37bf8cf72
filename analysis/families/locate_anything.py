"""NVIDIA LocateAnything (``locateanything``: nvidia/LocateAnything-3B, LocateAnythingForConditionalGeneration),
remote code transformers does not ship. Counted as SGLang's ``python/sglang/srt/models/locate_anything.py`` builds it
(adapted from the hub's modeling_locateanything.py; vLLM PR #44182 the same):

- ``text_config``: a Qwen2 language model (SGLang's Qwen2ForCausalLM), tied by text_config's own flag.
- ``vision_config``: Kimi-VL's MoonViT, unchanged (``remote_vl.moonvit_tower``; the checkpoint's ``vision_model.*``).
- ``mlp1``, an InternVL-style projector that LayerNorms *after* the merge: LayerNorm(hidden x kh x kw) (``mlp1.0``),
  Linear(merged -> text hidden) (``mlp1.1``), GELU, Linear(text hidden -> text hidden) (``mlp1.3``), all biased.
  (Kimi-VL norms over the vision hidden before the merge and keeps linear_1 square at the merged width.)
"""

from __future__ import annotations

from ..spec import Tensor
from ..vision import _lin, _ln
from .remote_vl import moonvit_tower


def vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    out, _, merged = moonvit_tower(top, where, "locateanything", "vision_model")
    _ln(out, "mlp1.0", merged)
    _lin(out, "mlp1.1", text_hidden, merged)
    _lin(out, "mlp1.3", text_hidden, text_hidden)
    return tuple(out)
