"""HY-V4-VL (``hy_v4_vl`` wrapper, ``hy_v4_vl_text`` language model; tencent/Hy4), as transformers 5.24's
``HYV4VLForConditionalGeneration`` builds it (models/hy_v4_vl/modeling_hy_v4_vl.py).

* The language model (``model.language_model``) is Hy4-preview's block (``hy_v4``, ``deepseek.build_hy_v4``):
  HYV4VLTextModel subclasses HYV4Model and HYV4VLAttention HYV4Attention, with the same modules and shapes (MLA with
  a q LoRA, the DSA indexer on the ``full`` layers of ``indexer_types``, the per-head sigmoid output gate
  ``gate_proj``, a learned sink per head, DeepSeek-V4's hyper-connections and ``hc_head``, DeepSeek-V3's sigmoid MoE
  on the ``sparse`` layers of ``mlp_layer_types``). What differs is numerics only: RoPE on interleaved pairs (the
  ERNIE 4.5 ``apply_rotary_pos_emb`` the module imports) in place of Hy4-preview's rotate-half, as Qwen3-VL's
  M-RoPE whose three sections (``mrope_section``, [12, 10, 10] by default) see one position for text, so decode is
  plain RoPE; the latent norms' epsilon is ``rms_norm_eps`` (Hy4-preview's 1e-6). Its class defaults are its own
  (hidden 6144, 78 layers, 64 heads, q LoRA 2048, 32 indexer heads). lm_head (fp32, as Hy4-preview's) is tied only
  when the wrapper's ``tie_word_embeddings`` is set (the text_config's flag is not read).
* The vision tower (``model.vision_tower``): HunYuan-VL's patch embedding, learned positions and blocks
  (``hunyuan_vl.vision_tower``), then its own patch merger: ``before_rms`` over the vision width, ``proj_conv``
  (hidden -> hidden·merge², merge x merge kernel, biased), ``proj_out`` (1x1, hidden·merge² -> ``out_hidden_size``,
  biased) and ``image_newline`` (``out_hidden_size``); no ``mlp``, ``after_rms`` or image begin / end / sep vectors.
  ``out_hidden_size`` is what the merger hands the language model, so it must equal the text hidden size.

Checked against transformers on the meta device (tests/test_hy_v4_vl_unlimited_ocr.py).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec, RopeStyle, Tensor
from ..vision import vision_config_dict
from . import deepseek
from .hunyuan_vl import vision_tower


def build_text(f: Fields, model_type: str) -> ModelSpec:
    spec = deepseek.build_hy_v4(f, model_type)
    note = ("HY-V4-VL's M-RoPE (mrope_section) gives text tokens one position on all three sections: decode is plain "
            "RoPE on interleaved pairs")
    return replace(spec, numerics=replace(spec.numerics, rope_style=RopeStyle.PAIRS), caveats=(*spec.caveats, note))


def hy_v4_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_config_dict(top.get("vision_config"), where)
    f = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get("hy_v4_vl_vision"), nested=True,
               family="hy_v4_vl_vision",
               aliases={"num_attention_heads": ("attention_heads",), "rms_norm_eps": ("layer_norm_eps",)})
    out = vision_tower(f)
    h = f.int("hidden_size")
    merge = f.int("spatial_merge_size", hi=64)
    width = f.int("out_hidden_size")
    if width != text_hidden:
        raise f.error("out_hidden_size", f"({width}) must equal the language model's hidden_size ({text_hidden}): "
                                         "the patch merger's output replaces the image tokens' embeddings")
    m = "model.vision_tower.patch_merger"
    wide = h * merge * merge
    out += [Tensor(f"{m}.proj_conv.weight", (wide, h, merge, merge), "vision"),
            Tensor(f"{m}.proj_conv.bias", (wide,), "vision"),
            Tensor(f"{m}.proj_out.weight", (width, wide, 1, 1), "vision"),
            Tensor(f"{m}.proj_out.bias", (width,), "vision"),
            Tensor(f"{m}.image_newline", (width,), "vision"),
            Tensor(f"{m}.before_rms.weight", (h,), "vision")]
    return tuple(out)
