"""Baidu Qianfan-OCR (``qianfan_ocr``, QianfanOCRForConditionalGeneration) vision tower and projector, as
transformers' modeling_qianfan_ocr.py builds them; the language model is the ``text_config``'s own family (Qwen3 by
default).

The tower (``qianfan_ocr_vision``, ``model.vision_tower``) is InternVL's InternViT (``internvl.internvl_vision``:
cls token, optional mask token, biased patch Conv2d, learned positions, q/k/v biased by ``attention_bias``, a biased
``projection_layer``, optional q/k RMSNorms, fc1 / fc2, layer norms by ``norm_type``, ``lambda_1`` / ``lambda_2``, a
final LayerNorm unless ``use_mean_pooling``) with its layers under ``layers.{i}`` and its own class defaults
(``attention_bias`` true); the projector is InternVL's pixel-shuffle one (LayerNorm over hidden·int(1 /
downsample_ratio)², linear_1 to the text hidden size, linear_2).
"""

from __future__ import annotations

from ..spec import Tensor
from ..vision import vision_tower_config
from .internvl import internvl_vision


def qianfan_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_tower_config(top, where, "qianfan_ocr_vision", "Qianfan-OCR",
                             "QianfanOCRConfig builds its tower as qianfan_ocr_vision (InternViT)")
    # InternVL's builder with Qianfan-OCR's own class defaults filled in (the tuple-valued image / patch sizes are
    # the same 448 / 14 as InternVL's)
    vision = {**FAMILY_DEFAULTS.get("qianfan_ocr_vision", {}), **vc, "model_type": "internvl_vision"}
    wrapper = {k: v for k, v in FAMILY_DEFAULTS.get("qianfan_ocr", {}).items() if k == "downsample_ratio"}
    tensors = internvl_vision({**wrapper, **top, "vision_config": vision}, text_hidden, where)
    return tuple(Tensor(t.name.replace("model.vision_tower.encoder.layer.", "model.vision_tower.layers."), t.shape,
                        t.kind) for t in tensors)
