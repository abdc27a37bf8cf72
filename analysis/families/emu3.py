"""Emu3 (``emu3``: BAAI/Emu3-Chat-hf, Emu3-Gen-hf), counted whole as transformers' ``Emu3ForConditionalGeneration``
builds it (models/emu3/modeling_emu3.py, transformers 5.24).

* ``model.text_model`` + ``lm_head``: the language model, ``text_config`` read as ``emu3_text_model`` (Llama with
  attention / MLP biases fixed off; its registry row). lm_head is tied by the wrapper's own ``tie_word_embeddings``
  alone (default false; checked on the meta device: text_config's flag is not read).
* ``model.vqmodel`` (Emu3VQVAE, ``vq_config``; kind ``vision``): a MoVQGAN image / video tokenizer with temporal
  convolutions.

  - encoder: ``conv_in`` (3x3, in_channels -> base), ``len(channel_multiplier)`` levels of ``num_res_blocks`` ResNet
    blocks (GroupNorm(32) + 3x3 conv, twice; a 1x1 ``nin_shortcut`` where the width changes), at the levels named
    by ``attn_resolutions`` an attention block after each ResNet (four biased Linears of ``hidden_size`` and a
    GroupNorm), a stride-2 3x3 ``downsample`` conv between levels; the middle block (ResNet, GroupNorm + attention,
    ResNet); ``norm_out`` and ``conv_out`` (3x3, to 2 x latent_channels when ``double_latent``); then
    log2(``temporal_downsample_factor``) temporal (4, 3, 3) Conv3d downsamplers and ``num_res_blocks`` temporal
    ResNet blocks (BatchNorm3d — weight and bias; its running statistics are buffers — and two 3x3x3 Conv3d).
  - decoder: the temporal ResNet blocks and log2(``temporal_downsample_factor``) 3x3x3 Conv3d upsamplers on
    latent_channels, ``conv_in``, the middle block and ``num_res_blocks + 1`` ResNet blocks per level (top level
    first, a 3x3 ``upsample`` conv above level 0), every norm a SpatialNorm (GroupNorm(32) and two biased 1x1 convs
    from the ``embed_dim``-wide quantized latents, ``conv_y`` and ``conv_b``), ``norm_out`` and ``conv_out``.
  - the codebook (``codebook_size`` x ``embed_dim``), ``quant_conv`` and ``post_quant_conv`` ((3, 1, 1) Conv3d).

  The VQ-VAE encodes a prompt's images (understanding) and decodes generated image tokens (Emu3-Gen), once per
  image; image tokens are ordinary vocabulary entries the language model caches like text, so the decode trace,
  FLOPs and K/V bytes are the language model's.

Its shapes are Emu3VQVAEConfig's class defaults in both checkpoints: transformers' convert_emu3_weights_to_hf.py
builds ``Emu3Config(vocabulary_map=...)`` with the default vq_config and text_config and loads BAAI/Emu3-VisionTokenizer
and BAAI/Emu3-Chat / -Gen into it with ``strict=True``. Emu3-Chat-hf and Emu3-Gen-hf are 8,762,751,807 parameters:
the VQ-VAE 270,740,287 (encoder 109,488,252, decoder 161,120,859, codebook 131,072 and the two quant convs 104)
beside BAAI/Emu3-Chat's 8,492,011,520-parameter language model and untied lm_head. No safetensors index of either
checkpoint was at hand to compare byte totals (the paper calls the model 8B).
transformers 5.24 builds the wrapper only with a ``vocabulary_map`` (the class default None fails in
Emu3ImageVocabularyMapping); the counts do not depend on it, so it is not required here.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import Fields, short
from ..spec import Tensor
from .voxtral import sub_config_dict, text_config_dict

#: Emu3VQVAEConfig's class defaults (transformers 5.24; tests/test_emu3_whole.py checks them against the installed
#: class): the list-valued fields have no home in analysis/family_defaults.py
VQ_DEFAULTS = {"codebook_size": 32768, "embed_dim": 4, "latent_channels": 4, "double_latent": False,
               "in_channels": 3, "out_channels": 3, "temporal_downsample_factor": 4, "base_channels": 256,
               "channel_multiplier": [1, 2, 2, 4], "num_res_blocks": 2, "attn_resolutions": [3], "hidden_size": 1024,
               "num_attention_heads": 1}

GROUPS = 32  # every nn.GroupNorm of the VQ-VAE: num_groups=32


def emu3_text_config(cfg: dict, where: str) -> dict:
    """Emu3Config's text_config: an Emu3TextConfig whatever its dict says (its class defaults when absent)."""
    text = text_config_dict(cfg, where)
    mt = text.get("model_type", "emu3_text_model")
    if mt != "emu3_text_model":
        raise UnsupportedModelError(f"{where}: field 'text_config.model_type' is {short(mt)}: Emu3Config builds its "
                                    "language model as Emu3TextConfig (emu3_text_model) whatever the dict names",
                                    "an Emu3 config.json names text_config.model_type 'emu3_text_model'")
    return {**text, "model_type": "emu3_text_model"}


def _conv(out: list[Tensor], name: str, c_out: int, c_in: int, *kernel: int) -> None:
    out.append(Tensor(f"{name}.weight", (c_out, c_in, *kernel), "vision"))
    out.append(Tensor(f"{name}.bias", (c_out,), "vision"))


def _affine(out: list[Tensor], name: str, c: int) -> None:
    """A GroupNorm / BatchNorm3d's weight and bias (BatchNorm's running statistics are buffers, not parameters)."""
    out.append(Tensor(f"{name}.weight", (c,), "vision"))
    out.append(Tensor(f"{name}.bias", (c,), "vision"))


def _norm(out: list[Tensor], name: str, c: int, quant: int | None) -> None:
    """GroupNorm(32) in the encoder; in the decoder Emu3VQVAESpatialNorm: the GroupNorm under ``norm_layer`` and the
    biased 1x1 ``conv_y`` / ``conv_b`` from the quantized latents."""
    if quant is None:
        _affine(out, name, c)
        return
    _affine(out, f"{name}.norm_layer", c)
    _conv(out, f"{name}.conv_y", c, quant, 1, 1)
    _conv(out, f"{name}.conv_b", c, quant, 1, 1)


def _resnet(out: list[Tensor], p: str, c_in: int, c_out: int, quant: int | None = None) -> None:
    _norm(out, f"{p}.norm1", c_in, quant)
    _conv(out, f"{p}.conv1", c_out, c_in, 3, 3)
    _norm(out, f"{p}.norm2", c_out, quant)
    _conv(out, f"{p}.conv2", c_out, c_out, 3, 3)
    if c_in != c_out:
        _conv(out, f"{p}.nin_shortcut", c_out, c_in, 1, 1)


def _attention(out: list[Tensor], p: str, hidden: int) -> None:
    """Emu3VQVAEAttentionBlock: biased q / k / v / out Linears of hidden_size, whatever the block's channels."""
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        _conv(out, f"{p}.{name}", hidden, hidden)


def _temporal_resnet(out: list[Tensor], p: str, c: int) -> None:
    _affine(out, f"{p}.norm1", c)
    _conv(out, f"{p}.conv1.conv", c, c, 3, 3, 3)
    _affine(out, f"{p}.norm2", c)
    _conv(out, f"{p}.conv2.conv", c, c, 3, 3, 3)


def _middle(out: list[Tensor], p: str, c: int, hidden: int, quant: int | None) -> None:
    _resnet(out, f"{p}.block_1", c, c, quant)
    _attention(out, f"{p}.attn_1", hidden)
    _norm(out, f"{p}.attn_norm", c, quant)
    _resnet(out, f"{p}.block_2", c, c, quant)


def emu3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """``model.vqmodel``: Emu3VQVAE's encoder, decoder, codebook and quant convs (kind ``vision``)."""
    raw = sub_config_dict(top, "vq_config", where, "emu3_vqgan", "Emu3's image tokenizer (Emu3VQVAE)")
    f = Fields(raw, f"{where} (vq_config)", defaults=VQ_DEFAULTS, nested=True, family="emu3_vqgan")
    mult = f.int_list("channel_multiplier", lo=1, hi=1 << 10)
    if mult is None:
        mult = list(f.defaulted("channel_multiplier", VQ_DEFAULTS["channel_multiplier"],
                                "absent: the emu3_vqgan class default in transformers"))
    if not mult or len(mult) > 16:
        raise f.error("channel_multiplier", "must list 1 to 16 levels")
    attn_at = f.int_list("attn_resolutions", lo=0, hi=1 << 10)
    if attn_at is None:
        if "attn_resolutions" in raw:  # an explicit null: the decoder's `i_level in None` fails in transformers
            raise f.error("attn_resolutions", "is null: Emu3VQVAEUpBlock needs a list (empty for no attention)")
        attn_at = list(f.defaulted("attn_resolutions", VQ_DEFAULTS["attn_resolutions"],
                                   "absent: the emu3_vqgan class default in transformers"))
    base = f.int("base_channels", hi=1 << 16)
    blocks = f.int("num_res_blocks", lo=0, hi=64)
    latent = f.int("latent_channels", hi=1 << 16)
    embed = f.int("embed_dim", hi=1 << 16)
    hidden = f.int("hidden_size", hi=1 << 16)
    heads = f.int("num_attention_heads", hi=1 << 10)
    if hidden % heads:  # Emu3VQVAEAttentionBlock raises the same ValueError
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    widths = [base * m for m in [1] + mult]
    for c in widths:
        if c % GROUPS:  # torch.nn.GroupNorm(num_groups=32)
            raise f.error("base_channels", f"x channel_multiplier gives {c} channels, which GroupNorm(32) cannot "
                                           "split")
    for lvl in [len(mult) - 1] + [i for i in attn_at if i < len(mult)]:
        if base * mult[lvl] != hidden:  # the attention reads the block's channels as hidden_size wide
            raise f.error("hidden_size", f"({hidden}) must equal the channels its attention blocks run on: "
                                         f"base_channels x channel_multiplier[{lvl}] = {base * mult[lvl]}")
    tdown = f.int("temporal_downsample_factor", hi=1 << 10)
    temporal = tdown.bit_length() - 1  # int(math.log2(factor)) blocks
    enc_out = 2 * latent if f.bool("double_latent") else latent

    out: list[Tensor] = []
    p = "model.vqmodel.encoder"
    _conv(out, f"{p}.conv_in", base, f.int("in_channels", hi=64), 3, 3)
    in_mult = [1] + list(mult)
    for lvl, m in enumerate(mult):
        c_in, c = base * in_mult[lvl], base * m
        d = f"{p}.down_block.down.{lvl}"
        for i in range(blocks):
            _resnet(out, f"{d}.block.{i}", c_in, c)
            c_in = c
            if lvl in attn_at:
                _attention(out, f"{d}.attn.{i}", hidden)
                _affine(out, f"{d}.attn_norms.{i}", c)
        if lvl != len(mult) - 1:
            _conv(out, f"{d}.downsample.conv", c_in, c_in, 3, 3)
    top_c = base * mult[-1]
    _middle(out, f"{p}.middle_block", top_c, hidden, None)
    _affine(out, f"{p}.norm_out", top_c)
    _conv(out, f"{p}.conv_out", enc_out, top_c, 3, 3)
    for i in range(temporal):
        _conv(out, f"{p}.time_conv.{i}.conv.conv", enc_out, enc_out, 4, 3, 3)
    for i in range(blocks):
        _temporal_resnet(out, f"{p}.time_res_stack.{i}", enc_out)

    p = "model.vqmodel.decoder"
    for i in range(blocks):
        _temporal_resnet(out, f"{p}.time_res_stack.{i}", latent)
    for i in range(temporal):
        _conv(out, f"{p}.time_conv.{i}.conv.conv", latent, latent, 3, 3, 3)
    _conv(out, f"{p}.conv_in", top_c, latent, 3, 3)
    _middle(out, f"{p}.middle_block", top_c, hidden, embed)
    c_in = top_c
    for lvl in reversed(range(len(mult))):
        c = base * mult[lvl]
        u = f"{p}.up_block.up.{lvl}"
        for i in range(blocks + 1):
            _resnet(out, f"{u}.block.{i}", c_in, c, embed)
            c_in = c
            if lvl in attn_at:
                _attention(out, f"{u}.attn.{i}", hidden)
                _norm(out, f"{u}.attn_norms.{i}", c, embed)
        if lvl != 0:
            _conv(out, f"{u}.upsample.conv", c_in, c_in, 3, 3)
    _norm(out, f"{p}.norm_out", base * mult[0], embed)
    _conv(out, f"{p}.conv_out", f.int("out_channels", hi=64), base * mult[0], 3, 3)

    out.append(Tensor("model.vqmodel.quantize.embedding.weight", (f.int("codebook_size", hi=1 << 24), embed), "vision"))
    _conv(out, "model.vqmodel.quant_conv.conv", embed, latent, 3, 1, 1)
    _conv(out, "model.vqmodel.post_quant_conv.conv", latent, embed, 3, 1, 1)
    return tuple(out)
