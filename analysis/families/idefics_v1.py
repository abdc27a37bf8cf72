"""IDEFICS v1 (``idefics``: HuggingFaceM4/idefics-9b, -80b and their -instruct), as transformers'
``IdeficsForVisionText2Text`` builds it (models/idefics/modeling_idefics.py, vision.py, perceiver.py).

A flat config: the language model's fields at the top level, ``vision_config`` (IdeficsVisionConfig) and
``perceiver_config`` nested.

* The language model: LLaMA's decoder (bias-free q/k/v/o with as many K/V heads as query heads, the gated MLP,
  RMSNorms, RoPE). ``embed_tokens`` and ``lm_head`` are "decoupled": ``vocab_size`` rows plus, when
  ``additional_vocab_size`` > 0, an ``additional_embedding`` / ``additional_fc`` of that many rows (the logits are
  the two concatenated), so both count ``vocab_size + additional_vocab_size`` rows; tied (both parts) when
  ``tie_word_embeddings``.
* ``num_hidden_layers // cross_layer_interval`` gated cross-attention blocks, block k running before decoder layer
  k · interval: an RMSNorm, attention whose queries are the text tokens and whose keys / values are projected from
  the image features (the vision width ``vision_config.embed_dim``), RMSNorms over head_dim on q and k when
  ``qk_layer_norms``, a tanh gate ``alpha_cross_attn``, an RMSNorm, the gated MLP and a tanh gate ``alpha_dense``
  (``alpha_type`` "float": one element each; "vector": hidden_size each). They are ``ModelSpec.cross_attention``
  (style "idefics"): counted in parameters and memory, not in the decoder the trace prices.
* The vision tower (``model.vision_model``): CLIP's ViT (a class embedding, a bias-free patch conv, learned
  positions, pre / post LayerNorms, biased attention and fc1 / fc2) at ``embed_dim``.
* With ``use_resampler``, the perceiver resampler (``model.perceiver_resampler``): ``resampler_n_latents`` latents,
  ``resampler_depth`` blocks of attention (two LayerNorms, optional q / k LayerNorms over the head dim, bias-free
  q / k / v to heads × head_dim and an output projection back) and an MLP (LayerNorm, bias-free fc to 4 · embed_dim
  and c_proj), then a LayerNorm.

The KV cache: transformers' cache holds the decoder layers' self-attention K/V only (MHA: 2 · hidden per token and
layer); the gated blocks' ``forward`` refuses a cache, so their image K/V are recomputed from the image features
every step and nothing per image is in the cache (generation carries the image features — the resampler's latents
or the tower's patches, embed_dim wide — beside it).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, CrossAttentionLayers, ModelSpec, Tensor
from ..vision import _encoder_block, _ln, _patches, _tower_shape, vision_config_dict
from . import decoder
from .common import Traits

TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="none")
ALPHA_INITIALIZERS = ("zeros", "ones", "normal", "gaussian", "random")


def _sub(top: dict, key: str, where: str, family: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    sub = dict(vision_config_dict(top.get(key), where, key))
    defaults = dict(FAMILY_DEFAULTS.get(family, {}))
    if "embed_dim" in defaults:  # IdeficsVisionConfig: attribute_map hidden_size -> embed_dim
        defaults["hidden_size"] = defaults.pop("embed_dim")
    if "embed_dim" in sub:
        sub["hidden_size"] = sub.pop("embed_dim")
    return Fields(sub, f"{where} ({key})", defaults=defaults, nested=True, family=family)


def _vision(top: dict, where: str, use_resampler: bool) -> tuple[tuple[Tensor, ...], int]:
    f = _sub(top, "vision_config", where, "idefics_vision")
    h, inter, layers, channels = _tower_shape(f)
    patches, patch = _patches(f)
    v = "model.vision_model"
    out: list[Tensor] = [
        Tensor(f"{v}.embeddings.class_embedding", (h,), "vision"),
        Tensor(f"{v}.embeddings.patch_embedding.weight", (h, channels, patch, patch), "vision"),
        Tensor(f"{v}.embeddings.position_embedding.weight", (patches + 1, h), "vision"),
    ]
    _ln(out, f"{v}.pre_layrnorm", h)
    for i in range(layers):
        _encoder_block(out, f"{v}.encoder.layers.{i}", h, inter)
    _ln(out, f"{v}.post_layernorm", h)
    if use_resampler:
        p = _sub(top, "perceiver_config", where, "idefics_perciever")
        depth = p.int("resampler_depth", hi=MAX_LAYERS)
        heads = p.int("resampler_n_heads")
        hd = p.int("resampler_head_dim")
        qk = p.bool("qk_layer_norms_perceiver")
        r = "model.perceiver_resampler"
        out.append(Tensor(f"{r}.latents", (p.int("resampler_n_latents", hi=1 << 20), h), "vision"))
        for i in range(depth):
            a = f"{r}.blocks.{i}.0"
            _ln(out, f"{a}.context_layer_norm", h)
            _ln(out, f"{a}.latents_layer_norm", h)
            if qk:
                _ln(out, f"{a}.q_layer_norm", hd)
                _ln(out, f"{a}.k_layer_norm", hd)
            for name in ("q_proj", "k_proj", "v_proj"):
                out.append(Tensor(f"{a}.{name}.weight", (heads * hd, h), "vision"))
            out.append(Tensor(f"{a}.output_proj.weight", (h, heads * hd), "vision"))
            m = f"{r}.blocks.{i}.1"
            _ln(out, f"{m}.ln", h)
            out.append(Tensor(f"{m}.fc.weight", (4 * h, h), "vision"))
            out.append(Tensor(f"{m}.c_proj.weight", (h, 4 * h), "vision"))
        _ln(out, f"{r}.layer_norm", h)
    return tuple(out), h


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    for key in ("num_key_value_heads", "head_dim"):
        if f.has(key):
            raise f.error(key, "is not a field of IDEFICS (IdeficsConfig): its attention has num_attention_heads "
                               "K/V heads of hidden_size / num_attention_heads")
    full = decoder.build(f, model_type, TRAITS)
    n = full.num_layers
    interval = f.int("cross_layer_interval", hi=MAX_LAYERS)
    if n % interval:
        raise f.error("cross_layer_interval", f"({interval}) must divide num_hidden_layers ({n}): transformers "
                                              f"builds {n} // {interval} gated cross-attention blocks but its forward "
                                              "runs one before every layer whose index is a multiple of it")
    extra = f.int("additional_vocab_size", lo=0, hi=1 << 24)
    alpha_type = f.str("alpha_type")
    if alpha_type not in ("float", "vector"):
        raise f.error("alpha_type", f"must be 'float' or 'vector', got {alpha_type!r}")
    init = f.str("alpha_initializer", "zeros", note="absent: the class default (a field name the generator drops)")
    if init not in ALPHA_INITIALIZERS:
        raise f.error("alpha_initializer", f"must be one of {', '.join(ALPHA_INITIALIZERS)}, got {init!r} "
                                           "(transformers builds no gates otherwise)")
    use_resampler = f.bool("use_resampler")
    vision, embed_dim = _vision(f.cfg, f.where, use_resampler)
    attn, mlp = full.layers[0].mixer, full.layers[0].ffn
    assert isinstance(attn, Attention) and isinstance(mlp, MLP)
    xattn = CrossAttentionLayers(tuple(k * (interval + 1) for k in range(n // interval)), hidden, heads, heads,
                                 attn.head_dim, mlp.intermediate_size, mlp.act, style="idefics",
                                 kv_input_size=embed_dim, qk_norm=f.bool("qk_layer_norms"),
                                 gate_size=hidden if alpha_type == "vector" else 1)
    vocab = full.vocab_size + extra
    if extra:
        f.derived("vocab_size", vocab, f"vocab_size + additional_vocab_size ({extra}): the decoupled embedding's "
                                       "and lm_head's extra rows, logits concatenated")
    return replace(full, vocab_size=vocab, cross_attention=xattn, vision=vision)
