"""MiniCPM-V 4.6 / 4.7 (``minicpmv4_6``, ``minicpmv4_7``) and MiniCPM-o OCR (``minicpm_ocr``) vision towers, as
transformers' modeling_minicpmv4_6.py / modeling_minicpmv4_7.py / modeling_minicpm_ocr.py build them (one design).
Their language model is the ``text_config``'s own family (Qwen3.5 by default).

The tower (``model.vision_tower``, MiniCPMV4_6VisionModel): SigLIP's (a biased Conv2d patch embedding,
(image_size // patch_size)² learned positions, ``num_hidden_layers`` encoder layers, ``post_layernorm``, no pooling
head) plus ``vit_merger`` (the window-attention merger applied after ``insert_layer_id``): a biased q/k/v/out
self-attention over hidden, ``layer_norm1``, ``pre_norm`` over the window's hidden·kh·kw, ``linear_1`` (hidden·kh·kw →
intermediate·kh·kw) and ``linear_2`` (→ hidden), all biased (``window_kernel_size`` = (kh, kw)).

The merger (``model.merger``): ``merger_times`` DownsampleMLPs, each a LayerNorm over 4·hidden (two 2×2 merges: the
factor 4 is fixed in the code, not merge_kernel_size), a biased 4·hidden square ``linear_1`` and a biased
``linear_2`` to the vision hidden size, the last one to the text hidden size.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import Fields
from ..spec import Tensor
from ..vision import _lin, _ln, siglip_tensors


def _pair(f: Fields, key: str, default: list[int]) -> tuple[int, int]:
    raw = f.raw(key)
    if raw is None:
        raw = f.derived(key, list(default), "absent: the class default")
    if not (isinstance(raw, (list, tuple)) and len(raw) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 64 for v in raw)):
        raise f.error(key, f"must be a pair of positive integers (h, w), got {raw!r}"[:200])
    return raw[0], raw[1]


def _towers(top: dict, text_hidden: int, where: str, family: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vision_family = f"{family}_vision"
    vc = top.get("vision_config")
    if vc is None:
        vc = {}
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    for key in ("image_size", "patch_size"):  # its embeddings divide them as integers
        v = vc.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise ConfigError(f"{where} (vision_config): field '{key}' must be an integer, got {v!r}"[:200])
    p = "model.vision_tower"
    out = siglip_tensors(dict(vc, vision_use_head=False), where, p, family=vision_family)
    vf = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get(vision_family), nested=True,
                family=vision_family)
    h = vf.int("hidden_size")
    inter = vf.int("intermediate_size")
    kh, kw = _pair(vf, "window_kernel_size", [2, 2])
    m = f"{p}.vit_merger"
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        _lin(out, f"{m}.self_attn.{name}", h, h)
    _ln(out, f"{m}.layer_norm1", h)
    _ln(out, f"{m}.pre_norm", h * kh * kw)
    _lin(out, f"{m}.linear_1", inter * kh * kw, h * kh * kw)
    _lin(out, f"{m}.linear_2", h, inter * kh * kw)
    tf = Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)
    times = tf.int("merger_times", hi=64)
    for j in range(times):
        q = f"model.merger.mlp.{j}"
        _ln(out, f"{q}.pre_norm", 4 * h)
        _lin(out, f"{q}.linear_1", 4 * h, 4 * h)
        _lin(out, f"{q}.linear_2", text_hidden if j == times - 1 else h, 4 * h)
    return tuple(out)


def minicpmv4_6_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpmv4_6")


def minicpmv4_7_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpmv4_7")


def minicpm_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpm_ocr")
