"""DeepSeek-VL, DeepSeek-VL hybrid and Janus: the towers and heads of their multimodal wrappers, as transformers'
``*ForConditionalGeneration`` builds them (the language model is ``text_config``, a Llama by default, counted by
its own registry entry; lm_head ties by the wrapper's ``tie_word_embeddings``, class default true).

DeepSeek-VL (``deepseek_vl``): a SigLIP vision model (``siglip_vision_model``; its class default builds the
attention-pooling head, which the checkpoint carries though the forward does not use it) and the aligner: a biased
Linear (vision hidden -> text hidden), GELU, a biased Linear (text hidden -> text hidden).

DeepSeek-VL hybrid (``deepseek_vl_hybrid``, DeepSeek-VL 7B): the same SigLIP tower beside a SAM ViT
(``high_res_vision_config``, ``sam_vision_model``): a biased patch conv, an absolute position table
(``use_abs_pos``: image/patch squared × hidden), pre-LayerNorm blocks with a fused qkv (biased by ``qkv_bias``), a
biased proj, decomposed relative positions (``use_rel_pos``: (2·size − 1) × head_dim for height and width, size
the window, or the whole patch grid in the ``global_attn_indexes`` layers and when ``window_size`` is 0), a biased
lin1/lin2 MLP of ``mlp_dim`` (hidden × mlp_ratio), and the neck (bias-free 1×1 and 3×3 convs to
``output_channels``, each with a LayerNorm); then the wrapper's own copy of that neck
(``high_res_vision_neck``), two bias-free stride-2 3×3 convs (channels → 2·channels → 4·channels), a scalar ``high_res_vision_alpha``, and the
aligner: biased Linears from each tower to half the text hidden size, then a biased text hidden × text hidden.

Janus (``janus``, Janus / Janus-Pro): an understanding tower (``JanusVisionModel``: SigLIP's embeddings and
blocks with q/k/v biased by ``attention_bias``, an always-biased output projection, optional q/k LayerNorms over the
whole hidden size (``use_qk_norm``), an MLP of int(hidden × mlp_ratio), a post LayerNorm, no head) and its aligner
(``depth`` biased Linears: hidden -> projection_dim, then projection_dim square); and for image generation a VQ-VAE
(``vq_config``, ``JanusVQVAE``: a conv encoder and decoder of GroupNorm'd resnet blocks over ``channel_multiplier``
levels, attention blocks at the lowest resolution, a middle block, the codebook (num_embeddings × embed_dim), the
quant / post-quant 1×1 convs), ``generation_embeddings`` (num_embeddings × embed_dim), the generation aligner
(``num_hidden_layers`` biased Linears: embed_dim -> projection_dim, then square) and the generation head (biased
image_token_embed_dim -> projection_dim, projection_dim -> num_embeddings). All of it is in the checkpoint, so all
of it is counted (kind ``vision``); none of it takes part in a text decode step.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _lin, _ln, siglip_tensors, vision_config_dict, vision_tower_config

#: SamVisionConfig's list default (not in the generated scalar table) and its output_channels (a field name the
#: generator's deny-list drops).
SAM_GLOBAL_ATTN_INDEXES = (2, 5, 8, 11)
SAM_OUTPUT_CHANNELS = 256
#: JanusVQVAEConfig's list default.
JANUS_CHANNEL_MULTIPLIER = (1, 1, 2, 2, 4)


def _sub(top: dict, key: str, where: str, family: str) -> Fields:
    sub = vision_config_dict(top.get(key), where, key)
    from ..family_defaults import FAMILY_DEFAULTS

    return Fields(sub, f"{where} ({key})", defaults=FAMILY_DEFAULTS.get(family), nested=True, family=family)


def _siglip(top: dict, where: str, prefix: str) -> list[Tensor]:
    vc = vision_tower_config(top, where, "siglip_vision_model", "DeepSeek-VL",
                             "DeepSeek-VL's checkpoints use a SigLIP tower (siglip_vision_model)")
    return siglip_tensors(vc, where, prefix=prefix)


def deepseek_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _siglip(top, where, "model.vision_model.vision_model")
    vh = tower[0].shape[0]
    out = list(tower)
    _lin(out, "model.aligner.linear1", text_hidden, vh)
    _lin(out, "model.aligner.linear2", text_hidden, text_hidden)
    return tuple(out)


def _plain(out: list[Tensor], name: str, shape: tuple[int, ...]) -> None:
    out.append(Tensor(name, shape, "vision"))


def _neck(out: list[Tensor], p: str, h: int, ch: int) -> None:
    _plain(out, f"{p}.conv1.weight", (ch, h, 1, 1))
    _ln(out, f"{p}.layer_norm1", ch)
    _plain(out, f"{p}.conv2.weight", (ch, ch, 3, 3))
    _ln(out, f"{p}.layer_norm2", ch)


def sam_tensors(f: Fields, prefix: str, encoder: str = "vision_encoder") -> tuple[list[Tensor], int, int]:
    """SamVisionModel's tensors (under ``prefix.encoder``; ``encoder=""``: directly under ``prefix``, as GOT-OCR 2.0's
    tower holds them), its hidden size and output_channels."""
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    hd = h // heads
    size = f.int("image_size", hi=1 << 16)
    patch = f.int("patch_size", hi=4096)
    grid = size // patch
    if grid < 1:
        raise f.error("patch_size", "is larger than image_size")
    window = f.int("window_size", lo=0, hi=1 << 16)
    glob = f.int_list("global_attn_indexes")
    if glob is None:
        glob = list(f.derived("global_attn_indexes", SAM_GLOBAL_ATTN_INDEXES, "absent: SamVisionConfig's default"))
    mlp = f.opt_int("mlp_dim")
    if mlp is None:
        mlp = f.derived("mlp_dim", int(h * f.float("mlp_ratio")), "absent: hidden_size × mlp_ratio")
    ch = f.int("output_channels", SAM_OUTPUT_CHANNELS, note="absent: SamVisionConfig's default")
    qkv_bias = f.bool("qkv_bias")
    rel = f.bool("use_rel_pos")
    out: list[Tensor] = []
    e = f"{prefix}.{encoder}" if encoder else prefix
    _plain(out, f"{e}.patch_embed.projection.weight", (h, f.int("num_channels", hi=64), patch, patch))
    _plain(out, f"{e}.patch_embed.projection.bias", (h,))
    if f.bool("use_abs_pos"):
        _plain(out, f"{e}.pos_embed", (1, grid, grid, h))
    for i in range(layers):
        p = f"{e}.layers.{i}"
        _ln(out, f"{p}.layer_norm1", h)
        _plain(out, f"{p}.attn.qkv.weight", (3 * h, h))
        if qkv_bias:
            _plain(out, f"{p}.attn.qkv.bias", (3 * h,))
        _lin(out, f"{p}.attn.proj", h, h)
        if rel:
            n = grid if (window == 0 or i in glob) else window
            _plain(out, f"{p}.attn.rel_pos_h", (2 * n - 1, hd))
            _plain(out, f"{p}.attn.rel_pos_w", (2 * n - 1, hd))
        _ln(out, f"{p}.layer_norm2", h)
        _lin(out, f"{p}.mlp.lin1", mlp, h)
        _lin(out, f"{p}.mlp.lin2", h, mlp)
    _neck(out, f"{e}.neck", h, ch)
    return out, h, ch


def deepseek_vl_hybrid_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _siglip(top, where, "model.vision_model.vision_model")
    vh = tower[0].shape[0]
    hf = _sub(top, "high_res_vision_config", where, "sam_vision_model")
    mt = hf.raw("model_type", "sam_vision_model")
    if mt != "sam_vision_model":
        raise UnsupportedModelError(f"{where}: high-resolution tower '{mt}' is not one we can count for DeepSeek-VL "
                                    "hybrid", "its checkpoints use a SAM ViT (sam_vision_model)")
    sam, h, ch = sam_tensors(hf, "model.high_res_vision_model")
    if hf.int_list("global_attn_indexes") == []:
        raise hf.error("global_attn_indexes", "is empty: DeepseekVLHybridModel reads its first entry")
    out = list(tower) + sam
    _neck(out, "model.high_res_vision_neck", h, ch)
    _plain(out, "model.high_res_vision_proj.conv1.weight", (2 * ch, ch, 3, 3))
    _plain(out, "model.high_res_vision_proj.conv2.weight", (4 * ch, 2 * ch, 3, 3))
    _plain(out, "model.high_res_vision_alpha", (1,))
    half = text_hidden // 2
    _lin(out, "model.aligner.vision_proj", half, vh)
    _lin(out, "model.aligner.high_res_vision_proj", half, 4 * ch)
    _lin(out, "model.aligner.proj", text_hidden, text_hidden)
    return tuple(out)


def _janus_understanding(f: Fields) -> list[Tensor]:
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    size = f.int("image_size", hi=1 << 16)
    patch = f.int("patch_size", hi=4096)
    if patch > size:
        raise f.error("patch_size", "is larger than image_size")
    inter = int(h * f.float("mlp_ratio"))
    bias = f.bool("attention_bias")
    qk_norm = f.bool("use_qk_norm")
    proj = f.int("projection_dim")
    depth = f.int("depth", hi=1024)
    p = "model.vision_model"
    out: list[Tensor] = []
    _plain(out, f"{p}.embeddings.patch_embedding.weight", (h, f.int("num_channels", hi=64), patch, patch))
    _plain(out, f"{p}.embeddings.patch_embedding.bias", (h,))
    _plain(out, f"{p}.embeddings.position_embedding.weight", ((size // patch) ** 2, h))
    for i in range(layers):
        b = f"{p}.encoder.layers.{i}"
        _ln(out, f"{b}.layer_norm1", h)
        for name in ("q_proj", "k_proj", "v_proj"):
            _plain(out, f"{b}.self_attn.{name}.weight", (h, h))
            if bias:
                _plain(out, f"{b}.self_attn.{name}.bias", (h,))
        _lin(out, f"{b}.self_attn.projection_layer", h, h)
        if qk_norm:
            _ln(out, f"{b}.self_attn.q_norm", h)
            _ln(out, f"{b}.self_attn.k_norm", h)
        _ln(out, f"{b}.layer_norm2", h)
        _lin(out, f"{b}.mlp.fc1", inter, h)
        _lin(out, f"{b}.mlp.fc2", h, inter)
    _ln(out, f"{p}.post_layernorm", h)
    _lin(out, "model.aligner.fc1", proj, h)
    for i in range(depth - 1):
        _lin(out, f"model.aligner.hidden_layers.{i}", proj, proj)
    return out


def _conv(out: list[Tensor], name: str, c_out: int, c_in: int, k: int) -> None:
    """A biased k×k Conv2d."""
    _plain(out, f"{name}.weight", (c_out, c_in, k, k))
    _plain(out, f"{name}.bias", (c_out,))


def _groups(f: Fields, key: str, channels: int) -> None:
    if channels % 32:
        raise f.error(key, f"gives {channels} channels somewhere in the VQ-VAE, not a multiple of its GroupNorm's 32 "
                      "groups")


def _resnet(out: list[Tensor], f: Fields, p: str, c_in: int, c_out: int) -> None:
    _groups(f, "base_channels", c_in)
    _groups(f, "base_channels", c_out)
    _ln(out, f"{p}.norm1", c_in)  # GroupNorm(affine): weight and bias per channel
    _conv(out, f"{p}.conv1", c_out, c_in, 3)
    _ln(out, f"{p}.norm2", c_out)
    _conv(out, f"{p}.conv2", c_out, c_out, 3)
    if c_in != c_out:
        _conv(out, f"{p}.nin_shortcut", c_out, c_in, 1)


def _attn(out: list[Tensor], p: str, c: int) -> None:
    _ln(out, f"{p}.norm", c)
    for name in ("q", "k", "v", "proj_out"):
        _conv(out, f"{p}.{name}", c, c, 1)


def _mid(out: list[Tensor], f: Fields, p: str, c: int) -> None:
    _resnet(out, f, f"{p}.block_1", c, c)
    _attn(out, f"{p}.attn_1", c)
    _resnet(out, f, f"{p}.block_2", c, c)


def janus_vq_tensors(f: Fields, prefix: str = "model.vqmodel") -> list[Tensor]:
    """JanusVQVAE: encoder, codebook, quant convs and decoder (convolutions as flattened weight + bias pairs)."""
    base = f.int("base_channels", hi=1 << 16)
    mult = f.int_list("channel_multiplier", lo=1, hi=1024)
    if mult is None:
        mult = list(f.derived("channel_multiplier", JANUS_CHANNEL_MULTIPLIER, "absent: JanusVQVAEConfig's default"))
    if not mult:
        raise f.error("channel_multiplier", "is empty: the VQ-VAE needs at least one resolution")
    blocks = f.int("num_res_blocks", lo=0, hi=1024)
    latent = f.int("latent_channels")
    embed = f.int("embed_dim")
    codes = f.int("num_embeddings")
    levels = len(mult)
    out: list[Tensor] = []
    e = f"{prefix}.encoder"
    _conv(out, f"{e}.conv_in", base, f.int("in_channels", hi=64), 3)
    c_in_mult = [1, *mult]
    block_in = base
    for lvl in range(levels):
        block_in = base * c_in_mult[lvl]
        block_out = base * mult[lvl]
        for b in range(blocks):
            _resnet(out, f, f"{e}.down.{lvl}.block.{b}", block_in, block_out)
            block_in = block_out
            if lvl == levels - 1:
                _attn(out, f"{e}.down.{lvl}.attn.{b}", block_in)
        if lvl != levels - 1:
            _conv(out, f"{e}.down.{lvl}.downsample.conv", block_in, block_in, 3)
    _mid(out, f, f"{e}.mid", block_in)
    _ln(out, f"{e}.norm_out", block_in)
    _conv(out, f"{e}.conv_out", 2 * latent if f.bool("double_latent") else latent, block_in, 3)
    _plain(out, f"{prefix}.quantize.embedding.weight", (codes, embed))
    _conv(out, f"{prefix}.quant_conv", embed, latent, 1)
    _conv(out, f"{prefix}.post_quant_conv", latent, embed, 1)
    d = f"{prefix}.decoder"
    block_in = base * mult[-1]
    _conv(out, f"{d}.conv_in", block_in, latent, 3)
    _mid(out, f, f"{d}.mid", block_in)
    for n, lvl in enumerate(reversed(range(levels))):
        block_out = base * mult[lvl]
        for b in range(blocks + 1):
            _resnet(out, f, f"{d}.up.{n}.block.{b}", block_in, block_out)
            block_in = block_out
            if lvl == levels - 1:
                _attn(out, f"{d}.up.{n}.attn.{b}", block_in)
        if lvl != 0:
            _conv(out, f"{d}.up.{n}.upsample.conv", block_in, block_in, 3)
    _ln(out, f"{d}.norm_out", block_in)
    _conv(out, f"{d}.conv_out", f.int("out_channels", hi=64), block_in, 3)
    return out


def janus_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vf = _sub(top, "vision_config", where, "janus_vision_model")
    qf = _sub(top, "vq_config", where, "janus_vqgan")
    out = _janus_understanding(vf) + janus_vq_tensors(qf)
    codes = qf.int("num_embeddings")
    embed = qf.int("embed_dim")
    proj = qf.int("projection_dim")
    _plain(out, "model.generation_embeddings.weight", (codes, embed))
    _lin(out, "model.generation_aligner.fc1", proj, embed)
    for i in range(qf.int("num_hidden_layers", hi=1024) - 1):
        _lin(out, f"model.generation_aligner.hidden_layers.{i}", proj, proj)
    _lin(out, "model.generation_head.proj_out", proj, qf.int("image_token_embed_dim"))
    _lin(out, "model.generation_head.vision_head", codes, proj)
    return tuple(out)


