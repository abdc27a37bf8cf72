"""HunYuan-VL / HunyuanOCR (``hunyuan_vl`` wrapper, ``hunyuan_vl_text`` language model), as transformers'
``HunYuanVLForConditionalGeneration`` builds it (models/hunyuan_vl/modeling_hunyuan_vl.py).

* The language model (``model.language_model``): Hunyuan dense's block (``hunyuan_v1_dense``): per-head q/k RMSNorms
  (``query_layernorm`` / ``key_layernorm``) after RoPE, q/k/v/o biased by ``attention_bias``, a bias-free SwiGLU,
  NTK-alpha RoPE (``xdrope`` is read as "dynamic"); its M-RoPE sections see one position for text, so decode is
  plain RoPE. ``head_dim`` (alias ``attention_head_dim``) is required: HunYuanVLDenseV1Attention reads
  ``config.head_dim`` as it is, and None builds no model. lm_head tied when the wrapper's or the text's
  ``tie_word_embeddings`` is set (both default true).
* The vision tower (``model.vision_tower``): a biased Conv2d patch embedding, (max_image_size // patch_size)² + 1
  learned positions, blocks of biased LayerNorms, biased q/k/v/o (num_attention_heads × hidden / heads, no GQA:
  num_key_value_heads is not read) and a biased fc1 / fc2 MLP; then the patch merger: an RMSNorm over the vision
  width (``before_rms``), ``proj_conv`` (hidden → 2·hidden, spatial_merge_size² kernel), ``proj_out`` (1×1,
  2·hidden → 4·hidden), ``image_newline`` (4·hidden), ``mlp`` (4·hidden → the text hidden size, which the wrapper
  writes into ``vision_config.text_hidden_size``), ``image_begin`` / ``image_end`` / ``image_sep`` and ``after_rms``
  (text hidden each). ``out_hidden_size`` is not read.

Checked against transformers on the meta device (tests/test_hunyuan_vl.py).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, Tensor
from ..vision import _lin, _ln, vision_config_dict
from . import decoder
from .common import Traits

_TRAITS = Traits(o_bias="attention_bias", mlp_bias=False, windows="none", qk_norm="head", qk_norm_after_rope=True,
                 rope_ntk_alpha=True,
                 aliases=(("head_dim", ("attention_head_dim",)), ("vocab_size", ("org_vocab_size",))),
                 modules=((".self_attn.query_layernorm.", ".self_attn.q_norm."),
                          (".self_attn.key_layernorm.", ".self_attn.k_norm.")))


def build_text(f: Fields, model_type: str) -> ModelSpec:
    if f.raw("head_dim") is None and f.raw("attention_head_dim") is None:
        raise f.error("head_dim", "is missing: transformers' HunYuanVLDenseV1Attention reads config.head_dim as it is "
                                  "(None builds no model); HunyuanOCR's config sets it (128)")
    # HunYuanVLTextConfig's attribute_map (attention_head_dim, org_vocab_size) on top of the common aliases
    f.aliases = {**f.aliases, **dict(_TRAITS.aliases)}
    return decoder.build(f, model_type, _TRAITS)


def hunyuan_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_config_dict(top.get("vision_config"), where)
    f = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get("hunyuan_vl_vision"),
               nested=True, family="hunyuan_vl_vision",
               aliases={"num_attention_heads": ("attention_heads",), "rms_norm_eps": ("layer_norm_eps",)})
    out = vision_tower(f)
    h = f.int("hidden_size")
    merge = f.int("spatial_merge_size", hi=64)
    m = "model.vision_tower.patch_merger"
    out += [Tensor(f"{m}.proj_conv.weight", (2 * h, h, merge, merge), "vision"),
            Tensor(f"{m}.proj_conv.bias", (2 * h,), "vision"),
            Tensor(f"{m}.proj_out.weight", (4 * h, 2 * h, 1, 1), "vision"),
            Tensor(f"{m}.proj_out.bias", (4 * h,), "vision")]
    _lin(out, f"{m}.mlp", text_hidden, 4 * h)
    out.append(Tensor(f"{m}.image_newline", (4 * h,), "vision"))
    for name in ("image_begin", "image_end", "image_sep"):
        out.append(Tensor(f"{m}.{name}", (text_hidden,), "vision"))
    out.append(Tensor(f"{m}.before_rms.weight", (h,), "vision"))
    out.append(Tensor(f"{m}.after_rms.weight", (text_hidden,), "vision"))
    return tuple(out)


def vision_tower(f: Fields, p: str = "model.vision_tower") -> list[Tensor]:
    """HunYuanVLVisionTransformer's patch embedding and blocks (no merger), which HY-V4-VL's tower shares."""
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    patch = f.int("patch_size", hi=1 << 12)
    size = f.int("max_image_size", hi=1 << 20)
    channels = f.int("num_channels", hi=64)
    out = [Tensor(f"{p}.embeddings.patch_embedding.weight", (h, channels, patch, patch), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.bias", (h,), "vision"),
           Tensor(f"{p}.embeddings.position_embedding.weight", ((size // patch) ** 2 + 1, h), "vision")]
    for i in range(layers):
        b = f"{p}.layers.{i}"
        _ln(out, f"{b}.layer_norm1", h)
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            _lin(out, f"{b}.self_attn.{name}", h, h)
        _ln(out, f"{b}.layer_norm2", h)
        _lin(out, f"{b}.mlp.fc1", inter, h)
        _lin(out, f"{b}.mlp.fc2", h, inter)
    return out

