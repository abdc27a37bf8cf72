"""Ovis2 in transformers' format (``ovis2``: thisisiron/Ovis2-1B-hf ... Ovis2-34B-hf, converted by transformers'
convert_ovis2_weights_to_hf.py from AIDC-AI/Ovis2-*), as modeling_ovis2.py builds ``Ovis2ForConditionalGeneration``.
The AIDC-AI remote-code format (model_type ``ovis``) stays refused by name (``_OVIS_WHY``): its hub code and
configs were not at hand to check.

- ``model.language_model``: ``AutoModel`` of text_config (Qwen2 by default; its own family counts it).
- ``model.vision_tower`` (Ovis2VisionModel): the AIMv2 ViT as transformers stores it — a biased conv
  ``patch_embedding`` (channels -> hidden, patch x patch), ``position_embedding`` ((image_size // patch_size)^2 rows),
  an RMSNorm ``embeddings.rms_norm``; per layer q/k/v/out_proj (hidden x hidden, biased by ``qkv_bias``), a SwiGLU
  ``ffn`` (gate / up / down_proj at intermediate_size, biased by ``mlp_bias``), RMSNorms ``rms_norm1`` / ``rms_norm2``;
  a final ``transformer.rms_norm``; the visual tokenizer's head: bias-free ``head_linear`` (hidden · hidden_stride^2
  -> vocab_size - num_visual_indicator_tokens) and LayerNorm ``head_norm`` over that width.
- ``model.visual_embeddings_table``: vision_config.vocab_size x the wrapper's ``hidden_size``.
- ``lm_head``: Linear(the wrapper's hidden_size -> the wrapper's vocab_size), tied to the language model's
  embedding by the wrapper's ``tie_word_embeddings`` alone (default true; checked on the meta device). Untied, it is
  counted as the language model's head, so a wrapper hidden_size / vocab_size other than text_config's is refused
  (the converter sets both from the language model).

Exact against transformers on the meta device (tests/test_ovis2.py), Ovis2Config's defaults included.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _grid, _vision_fields


def _w(out: list[Tensor], name: str, shape: tuple[int, ...]) -> None:
    out.append(Tensor(name, shape, "vision"))


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool) -> None:
    _w(out, f"{name}.weight", (n_out, n_in))
    if bias:
        _w(out, f"{name}.bias", (n_out,))


def _check_head(w: Fields, top: dict, text_hidden: int, where: str) -> None:
    """An untied lm_head is Linear(wrapper hidden_size -> wrapper vocab_size): refused unless that is the language
    model's own head shape (which is what is counted)."""
    from ..family_defaults import FAMILY_DEFAULTS

    if w.bool("tie_word_embeddings"):
        return
    text = top.get("text_config") if isinstance(top.get("text_config"), dict) else {}
    mt = text.get("model_type", "qwen2")
    t = Fields(text, f"{where} (text_config)", defaults=FAMILY_DEFAULTS.get(mt if isinstance(mt, str) else ""),
               nested=True, family=str(mt))
    ours = (t.int("vocab_size", hi=1 << 26), text_hidden)
    shape = (w.int("vocab_size", hi=1 << 26), w.int("hidden_size"))
    if shape != ours:
        raise UnsupportedModelError(
            f"{where}: Ovis2's untied lm_head is built from the wrapper's vocab_size x hidden_size {shape}, not the "
            f"language model's {ours}: a head of another shape than the language model's is not modelled",
            "the converted checkpoints set both from text_config (or tie lm_head)")


def ovis2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Ovis2's vision tower, visual tokenizer head and visual embedding table."""
    from ..family_defaults import FAMILY_DEFAULTS

    # nested: hidden_size and vocab_size are the wrapper class's own fields (their Ovis2Config defaults apply)
    w = Fields(top, where, defaults=FAMILY_DEFAULTS.get("ovis2"), nested=True, family="ovis2")
    _check_head(w, top, text_hidden, where)
    f = _vision_fields(top.get("vision_config"), where, "ovis2_vision")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    channels = f.int("num_channels", hi=64)
    patch = f.int("patch_size", hi=4096)
    patches = _grid(f)
    if patches < 1:
        raise f.error("patch_size", "is larger than image_size")
    qkv_bias = f.bool("qkv_bias")
    mlp_bias = f.bool("mlp_bias")
    stride = f.int("hidden_stride", hi=64)
    vocab = f.int("vocab_size", hi=1 << 24)
    indicators = f.int("num_visual_indicator_tokens", lo=0, hi=1 << 10)
    if vocab <= indicators:
        raise f.error("vocab_size", f"({vocab}) must exceed num_visual_indicator_tokens ({indicators})")
    head = vocab - indicators  # the visual tokenizer's logits; the indicator tokens are padded on after
    p = "model.vision_tower.transformer"
    out: list[Tensor] = []
    _w(out, f"{p}.embeddings.patch_embedding.weight", (h, channels, patch, patch))
    _w(out, f"{p}.embeddings.patch_embedding.bias", (h,))
    _w(out, f"{p}.embeddings.position_embedding.weight", (patches, h))
    _w(out, f"{p}.embeddings.rms_norm.weight", (h,))
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        b = f"{p}.encoder.layers.{i}"
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _linear(out, f"{b}.attention.{name}", h, h, qkv_bias)
        _linear(out, f"{b}.ffn.gate_proj", inter, h, mlp_bias)
        _linear(out, f"{b}.ffn.up_proj", inter, h, mlp_bias)
        _linear(out, f"{b}.ffn.down_proj", h, inter, mlp_bias)
        _w(out, f"{b}.rms_norm1.weight", (h,))
        _w(out, f"{b}.rms_norm2.weight", (h,))
    _w(out, f"{p}.rms_norm.weight", (h,))
    _linear(out, "model.vision_tower.head_linear", head, h * stride * stride, False)
    _w(out, "model.vision_tower.head_norm.weight", (head,))
    _w(out, "model.vision_tower.head_norm.bias", (head,))
    _w(out, "model.visual_embeddings_table.weight", (vocab, w.int("hidden_size")))
    return tuple(out)
