"""Chameleon (facebook/chameleon-7b, chameleon-30b; Anole), as transformers' ``ChameleonForConditionalGeneration``
builds it (models/chameleon/modeling_chameleon.py).

A flat config: the language model's fields at the top level, ``vq_config`` (ChameleonVQVAEConfig) nested.

* The language model: Llama's block with q/k ``ChameleonLayerNorm``s — LayerNorms over head_dim whose weight and
  bias are (heads, head_dim) and (kv_heads, head_dim), one per head (the original model-parallel shards' own
  gamma / beta), eps fixed at 1e-5, before RoPE; heads are hidden / num_attention_heads wide whatever a head_dim
  field says; q/k/v/o biased by ``attention_bias``, the MLP by ``mlp_bias``. ``swin_norm`` (ChameleonSwinDecoderLayer)
  moves the two RMSNorms after attention and after the MLP (``x + norm(attn(x))``, ``x + norm(mlp(x))``): OLMo 2's
  post-norm layout with the pre-norm names (``input_layernorm`` after attention, ``post_attention_layernorm`` after
  the MLP). lm_head tied only by ``tie_word_embeddings`` (default false).
* ``model.vqmodel``: the VQ-VAE image tokenizer's encoder (no decoder is built): conv_in, ``len(channel_multiplier)``
  levels of ``num_res_blocks`` ResNet blocks (GroupNorm(32) + 3x3 conv twice, a 1x1 ``nin_shortcut`` where the
  width changes), attention blocks (GroupNorm + four 1x1 convs) at ``attn_resolutions`` when ``attn_type`` is
  "vanilla", a stride-2 3x3 downsample conv between levels, the mid block (ResNet, attention when vanilla, ResNet),
  norm_out and conv_out (2 x latent_channels when ``double_latent``); the codebook (num_embeddings x embed_dim),
  ``quant_conv`` and ``post_quant_conv`` (1x1, biased). Counted in the checkpoint, not in the text decode: image
  tokens are ordinary vocabulary entries the decoder caches like text.

Checked against transformers on the meta device (tests/test_chameleon.py): the class defaults (chameleon-7b's
shape) and a swin_norm GQA variant.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..mixers import GatedAttention
from ..spec import ModelSpec, Norm, NormKind, PlacedNorm, Tensor
from . import decoder
from .common import Traits

TRAITS = Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias", windows="none")

QK_NORM_EPS = 1e-5  # ChameleonLayerNorm.forward: F.layer_norm(..., eps=1e-5), whatever the config says

#: ChameleonVQVAEConfig's defaults (transformers 5.24)
VQ_DEFAULTS = {"embed_dim": 256, "num_embeddings": 8192, "double_latent": False, "latent_channels": 256,
               "resolution": 512, "in_channels": 3, "base_channels": 128, "channel_multiplier": [1, 1, 2, 2, 4],
               "num_res_blocks": 2, "attn_resolutions": None, "attn_type": "vanilla"}


def _conv(out: list[Tensor], name: str, c_out: int, c_in: int, k: int) -> None:
    out.append(Tensor(f"{name}.weight", (c_out, c_in, k, k), "vision"))
    out.append(Tensor(f"{name}.bias", (c_out,), "vision"))


def _gn(out: list[Tensor], name: str, c: int) -> None:
    out.append(Tensor(f"{name}.weight", (c,), "vision"))
    out.append(Tensor(f"{name}.bias", (c,), "vision"))


def _resnet(out: list[Tensor], p: str, c_in: int, c_out: int) -> None:
    _gn(out, f"{p}.norm1", c_in)
    _conv(out, f"{p}.conv1", c_out, c_in, 3)
    _gn(out, f"{p}.norm2", c_out)
    _conv(out, f"{p}.conv2", c_out, c_out, 3)
    if c_in != c_out:  # conv_shortcut is never set by the encoder: a 1x1 nin_shortcut
        _conv(out, f"{p}.nin_shortcut", c_out, c_in, 1)


def _attn(out: list[Tensor], p: str, c: int) -> None:
    _gn(out, f"{p}.norm", c)
    for name in ("q", "k", "v", "proj_out"):
        _conv(out, f"{p}.{name}", c, c, 1)


def vq_tensors(top: dict, where: str, prefix: str = "model.vqmodel") -> tuple[Tensor, ...]:
    raw = top.get("vq_config")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise Fields(top, where).error("vq_config", "must be an object of ChameleonVQVAEConfig fields")
    f = Fields(raw, f"{where} (vq_config)", defaults=VQ_DEFAULTS, family="chameleon_vqgan")
    mult = f.int_list("channel_multiplier", hi=1 << 10)
    if mult is None:
        mult = f.derived("channel_multiplier", list(VQ_DEFAULTS["channel_multiplier"]), "absent: the class default")
    if not mult:
        raise f.error("channel_multiplier", "must list at least one level")
    base = f.int("base_channels", hi=1 << 16)
    blocks = f.int("num_res_blocks", hi=64)
    attn_at = f.raw("attn_resolutions")
    if attn_at is not None and (not isinstance(attn_at, list) or
                                any(isinstance(r, bool) or not isinstance(r, int) for r in attn_at)):
        raise f.error("attn_resolutions", "must be a list of integer resolutions")
    vanilla = f.str("attn_type") == "vanilla"
    for c in [base] + [base * m for m in mult]:
        if c % 32:  # torch.nn.GroupNorm(num_groups=32)
            raise f.error("base_channels", f"x channel_multiplier gives {c} channels, which GroupNorm(32) cannot split")
    res = f.int("resolution", hi=1 << 20)
    latent = f.int("latent_channels", hi=1 << 16)
    embed = f.int("embed_dim", hi=1 << 16)
    p = f"{prefix}.encoder"
    out: list[Tensor] = []
    _conv(out, f"{p}.conv_in", base, f.int("in_channels", hi=64), 3)
    in_mult = [1] + list(mult)
    for lvl in range(len(mult)):
        c_in, c_out = base * in_mult[lvl], base * mult[lvl]
        for i in range(blocks):
            _resnet(out, f"{p}.down.{lvl}.block.{i}", c_in, c_out)
            c_in = c_out
            if attn_at is not None and res in attn_at and vanilla:
                _attn(out, f"{p}.down.{lvl}.attn.{i}", c_in)
        if lvl != len(mult) - 1:
            _conv(out, f"{p}.down.{lvl}.downsample.conv", c_in, c_in, 3)
            res //= 2
    c = base * mult[-1]
    _resnet(out, f"{p}.mid.block_1", c, c)
    if vanilla:
        _attn(out, f"{p}.mid.attn_1", c)
    _resnet(out, f"{p}.mid.block_2", c, c)
    _gn(out, f"{p}.norm_out", c)
    _conv(out, f"{p}.conv_out", 2 * latent if f.bool("double_latent") else latent, c, 3)
    out.append(Tensor(f"{prefix}.quantize.embedding.weight", (f.int("num_embeddings", hi=1 << 24), embed), "vision"))
    _conv(out, f"{prefix}.quant_conv", embed, latent, 1)
    _conv(out, f"{prefix}.post_quant_conv", latent, embed, 1)
    return tuple(out)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): ChameleonAttention's "
                                             "heads are hidden_size / num_attention_heads wide")
    hd = hidden // heads
    if f.has("head_dim") and f.opt_int("head_dim") != hd:
        raise f.error("head_dim", f"is not read by Chameleon: its heads are hidden_size / num_attention_heads = {hd}")
    spec = decoder.build(f, model_type, TRAITS)
    swin = f.bool("swin_norm", False)
    layers = []
    for layer in spec.layers:
        a = layer.mixer
        # ChameleonLayerNorm((heads, head_dim)): a weight and a bias per head and feature, normed over head_dim
        attn = GatedAttention(a.hidden_size, a.num_attention_heads, a.num_key_value_heads, a.head_dim, a.v_head_dim,
                              a.q_bias, a.k_bias, a.v_bias, a.o_bias, q_norm_dim=a.q_dim, k_norm_dim=a.k_dim,
                              rotary_dim=a.rotary_dim, rope_theta=a.rope_theta, qk_norm_per_head=True,
                              qk_norm_bias=True)
        norms = layer.norms
        if swin:  # ChameleonSwinDecoderLayer: the same two norms, after attention and after the MLP
            norm = Norm(hidden, NormKind.RMS)
            norms = (PlacedNorm("input_layernorm", "post_mixer", norm),
                     PlacedNorm("post_attention_layernorm", "post_ffn", norm))
        layers.append(replace(layer, mixer=attn, norms=norms))
    caveats = ("Chameleon: the VQ-VAE image tokenizer (model.vqmodel) is counted in the parameters and weights but "
               "takes no part in the text decode trace; image tokens are vocabulary entries cached like text",
               f"q/k norms are per-head LayerNorms with eps {QK_NORM_EPS} (ChameleonLayerNorm), not rms_norm_eps")
    return replace(spec, layers=tuple(layers), vision=vq_tensors(f.cfg, f.where), caveats=spec.caveats + caveats)
