"""Two VLMs whose vision tower is a timm model behind transformers' ``TimmWrapperModel``, counted whole: PerceptionLM
(``perception_lm``: facebook/Perception-LM-1B / -3B / -8B) and FastVLM (``fast_vlm``: KamilaMila/FastVLM-0.5B / -1.5B /
-7B, transformers' conversion of apple/FastVLM-*). The language model is text_config's own family (Llama, Qwen2); the
decode trace and the K/V cache are its alone. The tower and projector count under kind ``vision``.

``model.vision_tower`` is ``TimmWrapperModel``: ``timm.create_model(vision_config.architecture, pretrained=False,
num_classes=0, **vision_config.model_args)`` (modeling_timm_wrapper.py), so no classifier head; nothing else of
vision_config reaches timm. Its parameters are read here from timm's module definitions (timm 1.0.31) for the
architectures below; any other architecture, or a ``model_args`` key that is not modelled, is refused by name.

- PE (Meta's Perception Encoder, timm/models/eva.py ``vit_pe_core_*`` / ``vit_pe_lang_*`` / ``vit_pe_spatial_*``):
  ``Eva`` with ``attn_type='rope'``. A bias-free conv ``patch_embed.proj`` (channels -> embed_dim, patch x patch;
  biased only without ``use_pre_transformer_norm``), ``cls_token`` (``class_token``), ``pos_embed`` (patches +
  prefix tokens rows), LayerNorm ``norm_pre``; per block LayerNorms ``norm1`` / ``norm2``, ``AttentionRope`` with a
  fused biased ``qkv`` (3 x embed_dim) and a biased ``proj``, an ``Mlp`` ``fc1`` / ``fc2`` (int(embed_dim x
  mlp_ratio), biased), layer scales ``gamma_1`` / ``gamma_2`` when ``init_values`` is set; a LayerNorm ``norm`` when
  ``use_post_transformer_norm`` (default: not fc_norm), ``attn_pool`` (``AttentionPoolLatent``: latent, q, kv, proj,
  LayerNorm, Mlp) when ``global_pool == 'map'``, a LayerNorm ``fc_norm`` when ``use_fc_norm`` (default: global_pool
  'avg'). RoPE is buffers only. The image size an absent ``img_size`` means is the architecture's default
  pretrained_cfg input_size, which timm passes in.
- FastViT MCi3 / MCi4 (timm/models/fastvit.py ``fastvit_mci3`` / ``fastvit_mci4``, MobileCLIP2's image towers) built
  re-parameterised (``model_args.inference_mode`` true, as the FastVLM checkpoints are): a three-conv stem
  (``reparam_conv`` 3x3 s2, 3x3 depthwise s2, 1x1); five stages, each a ``downsample`` PatchEmbed (a biased 7x7 conv
  grouped by the input channels, then a biased 1x1) where the width changes, a ``pos_emb`` 7x7 depthwise conv in the
  attention stages, and blocks: RepMixer (a biased 3x3 depthwise ``token_mixer.reparam_conv``) or attention
  (LayerNorm2d ``norm``, bias-free ``qkv``, biased ``proj``, ``layer_scale_1``), both with a ``ConvMlp`` (7x7
  depthwise conv + BatchNorm affine, biased 1x1 ``fc1`` / ``fc2`` at 4 x width) and a layer scale; ``final_conv``
  (a biased 3x3 conv from the last width to 2 x it, grouped by the input channels, with a squeeze-excite of
  ``fc1`` / ``fc2`` at 1/16). The BatchNorms' running statistics are buffers, not parameters (the checkpoint stores
  them beside). The train-time form (``inference_mode`` false: BatchNormed branches) is refused by name.

Projectors: PerceptionLM's ``multi_modal_projector`` is ``linear_1`` (model_args.embed_dim -> text hidden) and
``linear_2`` (text hidden -> text hidden), both biased; its 2-D adaptive pooling has no weights. FastVLM's is
``linear_1`` (vision_config.hidden_size -> text hidden) and ``linear_2``, biased by ``multimodal_projector_bias``.

lm_head: PerceptionLMConfig ties it by its own ``tie_word_embeddings`` when set, else by text_config's; FastVlmConfig
ties it when either flag is set (both checked on the meta device).

Counts: the transformers + timm model built on the meta device (tests/test_timm_vlm.py records the totals and says
how they were obtained). Perception-LM-1B / -3B / -8B come to 1,533,524,992 / 3,516,753,920 / 9,794,260,736: the
Hugging Face Hub's safetensors parameter metadata of facebook/Perception-LM-* (BF16), exactly. FastVLM-0.5B / -1.5B /
-7B (KamilaMila's converted configs) come to 620,361,440 / 1,673,607,776 / 7,762,651,744.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, UnsupportedModelError, short
from ..fields import MAX_LAYERS, Fields, as_int
from ..spec import Tensor
from ..vision import vision_config_dict

_V = "vision"


def _w(out: list[Tensor], name: str, shape: tuple[int, ...]) -> None:
    out.append(Tensor(name, shape, _V))


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool = True) -> None:
    _w(out, f"{name}.weight", (n_out, n_in))
    if bias:
        _w(out, f"{name}.bias", (n_out,))


def _norm(out: list[Tensor], name: str, dim: int) -> None:
    _w(out, f"{name}.weight", (dim,))
    _w(out, f"{name}.bias", (dim,))


def _conv(out: list[Tensor], name: str, c_out: int, c_in: int, k: int, groups: int = 1, bias: bool = True) -> None:
    _w(out, f"{name}.weight", (c_out, c_in // groups, k, k))
    if bias:
        _w(out, f"{name}.bias", (c_out,))


# ---- timm's Perception Encoder (Eva, attn_type 'rope') ----------------------------------------------------------

#: timm's vit_pe_* registrations (eva.py), with the img_size their default pretrained_cfg gives: patch, embed_dim,
#: depth, num_heads, mlp_ratio, global_pool, class_token, init_values, use_post_transformer_norm, use_fc_norm,
#: attn_pool_num_heads, attn_pool_mlp_ratio, img_size
_PE_COLUMNS = ("patch_size", "embed_dim", "depth", "num_heads", "mlp_ratio", "global_pool", "class_token",
               "init_values", "use_post_transformer_norm", "use_fc_norm", "attn_pool_num_heads",
               "attn_pool_mlp_ratio", "img_size")
_G = 8960 / 1536  # the gigantic towers' mlp_ratio, as timm writes it
_PE_ROWS = {
    "vit_pe_core_tiny_patch16_384": (16, 192, 12, 3, 4.0, "map", True, None, None, None, 8, 4.0, 384),
    "vit_pe_core_small_patch16_384": (16, 384, 12, 6, 4.0, "map", True, None, None, None, 8, 4.0, 384),
    "vit_pe_core_base_patch16_224": (16, 768, 12, 12, 4.0, "map", True, None, None, None, 8, 4.0, 224),
    "vit_pe_core_large_patch14_336": (14, 1024, 24, 16, 4.0, "map", True, None, None, None, 8, 4.0, 336),
    "vit_pe_core_gigantic_patch14_448": (14, 1536, 50, 16, _G, "map", False, None, None, None, 8, 4.0, 448),
    "vit_pe_lang_large_patch14_448": (14, 1024, 23, 16, 4.0, "avg", True, 0.1, False, False, None, None, 448),
    "vit_pe_lang_gigantic_patch14_448": (14, 1536, 47, 16, _G, "avg", False, 0.1, False, False, None, None, 448),
    "vit_pe_spatial_tiny_patch16_512": (16, 192, 12, 3, 4.0, "avg", True, None, False, False, None, None, 512),
    "vit_pe_spatial_small_patch16_512": (16, 384, 12, 6, 4.0, "avg", True, None, False, False, None, None, 512),
    "vit_pe_spatial_base_patch16_512": (16, 768, 12, 12, 4.0, "avg", True, None, False, False, None, None, 512),
    "vit_pe_spatial_large_patch14_448": (14, 1024, 24, 16, 4.0, "avg", True, None, False, False, None, None, 448),
    "vit_pe_spatial_gigantic_patch14_448": (14, 1536, 50, 16, _G, "avg", False, 0.1, False, False, None, None, 448),
}
PE_ARCHITECTURES: dict[str, dict[str, Any]] = {k: dict(zip(_PE_COLUMNS, v)) for k, v in _PE_ROWS.items()}
#: model_args keys that change no parameter of a PE tower (drop rates, RoPE grid settings, head init)
_PE_FREE = frozenset({"ref_feat_shape", "rope_grid_offset", "rope_grid_indexing", "rope_temperature", "drop_rate",
                      "pos_drop_rate", "patch_drop_rate", "proj_drop_rate", "attn_drop_rate", "drop_path_rate",
                      "head_init_scale", "dynamic_img_size"})
_PE_READ = frozenset(_PE_COLUMNS) | {"in_chans", "use_pre_transformer_norm", "qkv_bias"}
_POOLS = ("", "avg", "avgmax", "max", "token", "map")


def _model_args(vc: dict, where: str) -> dict:
    args = vc.get("model_args")
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise ConfigError(f"{where}: field 'vision_config.model_args' must be an object of timm.create_model "
                          f"arguments, got {short(args)}")
    return args


def _unmodelled(arch: str, args: dict, modelled: frozenset, where: str) -> None:
    extra = sorted(k for k in args if k not in modelled)
    if extra:
        raise UnsupportedModelError(
            f"{where}: vision_config.model_args {', '.join(repr(k) for k in extra)} for timm's {arch} "
            "is not modelled (TimmWrapperModel passes model_args to timm.create_model)",
            f"modelled model_args: {', '.join(sorted(modelled))}")


def _arg(f: Fields, key: str, default: Any, kind: str) -> Any:
    """One model_args value (typed, recorded), ``default`` (the architecture's) when absent; None stays None (timm
    resolves it from the other arguments)."""
    if f.raw(key, default) is None:
        return None
    if kind == "int":
        return f.int(key, default, hi=1 << 16)
    if kind == "bool":
        return f.bool(key, default)
    return f.float(key, default)


def _side_pair(f: Fields, key: str, default: int) -> tuple[int, int]:
    raw = f.raw(key, default)
    if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(as_int(s) for s in raw):
        pair = (as_int(raw[0]), as_int(raw[1]))
    elif as_int(raw) is not None and not isinstance(raw, (list, tuple)):
        pair = (as_int(raw), as_int(raw))
    else:
        raise f.error(key, f"must be a positive integer or a pair of them, got {short(raw)}")
    if min(pair) < 1 or max(pair) > 1 << 16:
        raise f.error(key, f"must be a positive integer or a pair of them (at most 65536), got {short(raw)}")
    return pair


def pe_tensors(arch: str, args: dict, where: str, prefix: str) -> tuple[list[Tensor], int]:
    """timm's PE ``arch`` built with ``model_args`` ``args`` and num_classes 0: its tensors under ``prefix`` and
    its embed_dim (module doc)."""
    d0 = PE_ARCHITECTURES[arch]
    _unmodelled(arch, args, _PE_READ | _PE_FREE, where)
    f = Fields(args, f"{where} (vision_config.model_args)", nested=True, family=arch)
    for key in ("embed_dim", "depth", "num_heads", "mlp_ratio", "global_pool", "class_token", "patch_size", "img_size"):
        if key in args and args[key] is None:
            raise f.error(key, "is null; timm's Eva takes a value for it")
    dim = _arg(f, "embed_dim", d0["embed_dim"], "int")
    depth = f.int("depth", d0["depth"], hi=MAX_LAYERS)
    heads = _arg(f, "num_heads", d0["num_heads"], "int")
    if dim % heads:
        raise f.error("num_heads", f"({heads}) must divide embed_dim ({dim}): timm's AttentionRope asserts it")
    ratio = _arg(f, "mlp_ratio", d0["mlp_ratio"], "ratio")
    hidden = int(dim * ratio)  # Mlp's hidden width as EvaBlock computes it
    if hidden < 1:
        raise f.error("mlp_ratio", f"({ratio}) gives an MLP of {hidden} features")
    pool = f.str("global_pool", d0["global_pool"])
    if pool not in _POOLS:
        raise f.error("global_pool", f"must be one of {', '.join(repr(p) for p in _POOLS)} (timm's Eva asserts "
                                     f"it), got {short(pool)}")
    cls = _arg(f, "class_token", d0["class_token"], "bool")
    if pool == "token" and not cls:
        raise f.error("global_pool", "is 'token' but class_token is false: timm's Eva needs the class token")
    init = f.raw("init_values", d0["init_values"])
    if init is not None and (isinstance(init, bool) or not isinstance(init, (int, float))):
        raise f.error("init_values", f"must be a number or null, got {short(init)}")
    pre = _arg(f, "use_pre_transformer_norm", True, "bool")  # every vit_pe_* registration sets it
    fc_norm = _arg(f, "use_fc_norm", d0["use_fc_norm"], "bool")
    fc_norm = (pool == "avg") if fc_norm is None else fc_norm  # Eva: on by default with avg pooling
    post = _arg(f, "use_post_transformer_norm", d0["use_post_transformer_norm"], "bool")
    post = (not fc_norm) if post is None else post  # Eva: on by default unless fc_norm is
    qkv_bias = _arg(f, "qkv_bias", True, "bool")
    ch = f.int("in_chans", 3, hi=64)
    ph, pw = _side_pair(f, "patch_size", d0["patch_size"])
    ih, iw = _side_pair(f, "img_size", d0["img_size"])
    if ph > ih or pw > iw:
        raise f.error("patch_size", f"({ph} x {pw}) exceeds img_size ({ih} x {iw})")
    patches = (ih // ph) * (iw // pw)
    p = prefix
    out: list[Tensor] = []
    _w(out, f"{p}.patch_embed.proj.weight", (dim, ch, ph, pw))
    if not pre:  # PatchEmbed(bias=not use_pre_transformer_norm)
        _w(out, f"{p}.patch_embed.proj.bias", (dim,))
    if cls:
        _w(out, f"{p}.cls_token", (1, 1, dim))
    _w(out, f"{p}.pos_embed", (1, patches + (1 if cls else 0), dim))
    if pre:
        _norm(out, f"{p}.norm_pre", dim)
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        if init is not None:
            _w(out, f"{b}.gamma_1", (dim,))
            _w(out, f"{b}.gamma_2", (dim,))
        _norm(out, f"{b}.norm1", dim)
        _linear(out, f"{b}.attn.qkv", 3 * dim, dim, qkv_bias)
        _linear(out, f"{b}.attn.proj", dim, dim)
        _norm(out, f"{b}.norm2", dim)
        _linear(out, f"{b}.mlp.fc1", hidden, dim)
        _linear(out, f"{b}.mlp.fc2", dim, hidden)
    if post:
        _norm(out, f"{p}.norm", dim)
    if pool == "map":  # AttentionPoolLatent(embed_dim, num_heads=attn_pool_num_heads or num_heads, ...)
        pool_heads = _arg(f, "attn_pool_num_heads", d0["attn_pool_num_heads"], "int") or heads
        if dim % pool_heads:
            raise f.error("attn_pool_num_heads", f"({pool_heads}) must divide embed_dim ({dim}): timm's "
                                                 "AttentionPoolLatent asserts it")
        pool_ratio = _arg(f, "attn_pool_mlp_ratio", d0["attn_pool_mlp_ratio"], "ratio") or ratio
        pool_hidden = int(dim * pool_ratio)
        a = f"{p}.attn_pool"
        _w(out, f"{a}.latent", (1, 1, dim))
        _linear(out, f"{a}.q", dim, dim)
        _linear(out, f"{a}.kv", 2 * dim, dim)
        _linear(out, f"{a}.proj", dim, dim)
        _norm(out, f"{a}.norm", dim)
        _linear(out, f"{a}.mlp.fc1", pool_hidden, dim)
        _linear(out, f"{a}.mlp.fc2", dim, pool_hidden)
    if fc_norm:
        _norm(out, f"{p}.fc_norm", dim)
    return out, dim


# ---- timm's FastViT MCi3 / MCi4, re-parameterised ---------------------------------------------------------------

#: timm's fastvit_mci3 / fastvit_mci4 registrations: blocks per stage, widths, token mixers (every stage downsamples
#: but the first; mlp_ratios 4; RepConditionalPosEnc 7x7 in the attention stages; cls_ratio 2)
FASTVIT_ARCHITECTURES: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]] = {
    "fastvit_mci3": ((2, 12, 24, 4, 2), (96, 192, 384, 768, 1536),
                     ("repmixer", "repmixer", "repmixer", "attention", "attention")),
    "fastvit_mci4": ((2, 12, 24, 4, 4), (128, 256, 512, 1024, 2048),
                     ("repmixer", "repmixer", "repmixer", "attention", "attention")),
}
_FASTVIT_FREE = frozenset({"inference_mode", "drop_rate", "proj_drop_rate", "drop_path_rate"})
_FASTVIT_WHY = ("model_args.inference_mode false builds FastViT's train-time re-parameterisable branches (BatchNormed "
                "kxk / scale / identity convs, RepMixer's norm and mixer, the large-kernel conv's small branch), which "
                "are not modelled; the FastVLM checkpoints are stored re-parameterised (inference_mode true)")


def fastvit_width(arch: str) -> int:
    """The channels of the tower's last_hidden_state: final_conv's output, int(last width x cls_ratio 2.0)."""
    return int(FASTVIT_ARCHITECTURES[arch][1][-1] * 2.0)


def fastvit_tensors(arch: str, args: dict, where: str, prefix: str) -> list[Tensor]:
    """timm's ``arch`` built with ``model_args`` ``args`` (inference_mode true) and num_classes 0 (module doc)."""
    _unmodelled(arch, args, _FASTVIT_FREE, where)
    f = Fields(args, f"{where} (vision_config.model_args)", nested=True, family=arch)
    if not f.bool("inference_mode", False):
        raise UnsupportedModelError(f"{where}: timm's {arch} with {_FASTVIT_WHY}",
                                    'set vision_config.model_args {"inference_mode": true}, as the checkpoints do')
    layers, dims, mixers = FASTVIT_ARCHITECTURES[arch]
    p = prefix
    out: list[Tensor] = []
    c0 = dims[0]
    _conv(out, f"{p}.stem.0.reparam_conv", c0, 3, 3)
    _conv(out, f"{p}.stem.1.reparam_conv", c0, c0, 3, groups=c0)
    _conv(out, f"{p}.stem.2.reparam_conv", c0, c0, 1)
    prev = c0
    for i, (depth, dim, mixer) in enumerate(zip(layers, dims, mixers)):
        s = f"{p}.stages.{i}"
        if i > 0 or prev != dim:  # downsamples (False, True, True, True, True)
            _conv(out, f"{s}.downsample.proj.0.reparam_conv", dim, prev, 7, groups=prev)
            _conv(out, f"{s}.downsample.proj.1.reparam_conv", dim, dim, 1)
        if mixer == "attention":
            _conv(out, f"{s}.pos_emb.reparam_conv", dim, dim, 7, groups=dim)
        for j in range(depth):
            b = f"{s}.blocks.{j}"
            if mixer == "repmixer":
                _conv(out, f"{b}.token_mixer.reparam_conv", dim, dim, 3, groups=dim)
            else:
                _norm(out, f"{b}.norm", dim)
                _linear(out, f"{b}.token_mixer.qkv", 3 * dim, dim, bias=False)
                _linear(out, f"{b}.token_mixer.proj", dim, dim)
            _conv(out, f"{b}.mlp.conv.conv", dim, dim, 7, groups=dim, bias=False)
            _norm(out, f"{b}.mlp.conv.bn", dim)
            _conv(out, f"{b}.mlp.fc1", 4 * dim, dim, 1)
            _conv(out, f"{b}.mlp.fc2", dim, 4 * dim, 1)
            if mixer == "repmixer":
                _w(out, f"{b}.layer_scale.gamma", (dim, 1, 1))
            else:
                _w(out, f"{b}.layer_scale_1.gamma", (dim, 1, 1))
                _w(out, f"{b}.layer_scale_2.gamma", (dim, 1, 1))
        prev = dim
    final = fastvit_width(arch)
    se = final // 16  # SqueezeExcite(final, rd_ratio 1/16, rd_divisor 1)
    _conv(out, f"{p}.final_conv.se.fc1", se, final, 1)
    _conv(out, f"{p}.final_conv.se.fc2", final, se, 1)
    _conv(out, f"{p}.final_conv.reparam_conv", final, prev, 3, groups=prev)
    return out


# ---- the wrappers -----------------------------------------------------------------------------------------------

def _timm_vision_config(top: dict, where: str, wrapper: str) -> dict:
    vc = vision_config_dict(top.get("vision_config"), where)
    mt = vc.get("model_type", "timm_wrapper")
    if mt != "timm_wrapper":
        raise UnsupportedModelError(f"{where}: {wrapper}'s vision tower {short(mt)} is not modelled: the "
                                    "checkpoints' vision_config is a timm_wrapper (TimmWrapperConfig)")
    return vc


def _architecture(vc: dict, where: str) -> str:
    arch = vc.get("architecture", "resnet50")  # TimmWrapperConfig's default
    if not isinstance(arch, str):
        raise ConfigError(f"{where}: field 'vision_config.architecture' must be a timm model name, got {short(arch)}")
    return arch


def perception_lm_text_config(top: dict, where: str) -> dict:
    """The text_config PerceptionLMConfig builds (LlamaConfig's defaults when absent), tied by the wrapper's own
    ``tie_word_embeddings`` when it sets one (PerceptionLMConfig.__post_init__ falls back to text_config's only when
    it is null; checked on the meta device)."""
    text = top.get("text_config")
    if text is None:
        text = {"model_type": "llama"}
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {short(text)}")
    tie = top.get("tie_word_embeddings")
    if tie is None:
        return text
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true, false or null, got {short(tie)}")
    return dict(text, tie_word_embeddings=tie)


def perception_lm_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """PerceptionLMForConditionalGeneration's vision_tower (timm PE) and multi_modal_projector (module doc)."""
    vc = _timm_vision_config(top, where, "perception_lm")
    arch = _architecture(vc, where)
    args = _model_args(vc, where)
    if "embed_dim" not in args:
        raise ConfigError(
            f"{where}: vision_config.model_args has no 'embed_dim': transformers' PerceptionLMMultiModalProjector "
            "reads it for linear_1's input width, so no PerceptionLM model is built without it (the class default "
            "vision_config, TimmWrapperConfig's timm 'resnet50' with no model_args, builds none)",
            "give the checkpoint's vision_config (Perception-LM-1B: vit_pe_core_large_patch14_336 with model_args "
            "embed_dim 1024, depth 23)")
    if arch not in PE_ARCHITECTURES:
        raise UnsupportedModelError(f"{where}: perception_lm's timm vision tower '{arch}' is not modelled",
                                    "modelled: timm's Perception Encoder towers " + ", ".join(PE_ARCHITECTURES))
    out, dim = pe_tensors(arch, args, where, "model.vision_tower.timm_model")
    f = Fields(top, where, nested=True, family="perception_lm")
    f.int("projector_pooling_ratio", 1, hi=1 << 10)  # PerceptionLMConfig's default; the pooling has no weights
    _linear(out, "model.multi_modal_projector.linear_1", text_hidden, dim)
    _linear(out, "model.multi_modal_projector.linear_2", text_hidden, text_hidden)
    return tuple(out)


#: FastVlmConfig's sub-config defaults (configuration_fast_vlm.py), used when a sub-config is absent
FAST_VLM_TEXT_DEFAULT = {"model_type": "qwen2", "hidden_size": 3584, "vocab_size": 152128, "intermediate_size": 18944,
                         "num_attention_heads": 28, "num_key_value_heads": 4, "num_hidden_layers": 28}
FAST_VLM_VISION_DEFAULT = {"model_type": "timm_wrapper", "architecture": "fastvit_mci3", "do_pooling": True,
                           "global_pool": "avg", "hidden_size": 3072, "model_args": {"inference_mode": True}}


def fast_vlm_text_config(top: dict, where: str) -> dict:
    """The text_config FastVlmConfig builds: its FastVLM-7B-style Qwen2 defaults when absent (a given text_config
    takes Qwen2Config's own defaults, not those)."""
    text = top.get("text_config")
    if text is None:
        return dict(FAST_VLM_TEXT_DEFAULT)
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {short(text)}")
    return text


def fast_vlm_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """FastVlmForConditionalGeneration's vision_tower (timm FastViT) and multi_modal_projector (module doc)."""
    f = Fields(top, where, nested=True, family="fast_vlm")
    strategy = f.str("vision_feature_select_strategy", "full")
    if strategy != "full":
        raise f.error("vision_feature_select_strategy", f"is {short(strategy)}; FastVlmConfig accepts only 'full'")
    layer = f.raw("vision_feature_layer", -1)
    if layer != -1 or isinstance(layer, bool):
        raise f.error("vision_feature_layer", f"is {short(layer)}; FastVlmConfig accepts only -1")
    bias = f.bool("multimodal_projector_bias", True)
    vc = _timm_vision_config(top, where, "fast_vlm") if top.get("vision_config") is not None \
        else dict(FAST_VLM_VISION_DEFAULT)
    arch = _architecture(vc, where)
    if arch not in FASTVIT_ARCHITECTURES:
        raise UnsupportedModelError(f"{where}: fast_vlm's timm vision tower '{arch}' is not modelled",
                                    "modelled: timm's " + ", ".join(FASTVIT_ARCHITECTURES) + " (inference_mode)")
    out = fastvit_tensors(arch, _model_args(vc, where), where, "model.vision_tower.timm_model")
    v = Fields(vc, f"{where} (vision_config)", nested=True, family="timm_wrapper")
    if "hidden_size" not in vc:
        raise ConfigError(f"{where}: required field 'vision_config.hidden_size' is missing: FastVlmMultiModalProjector "
                          "reads it for linear_1's input width (TimmWrapperConfig has no default for it)",
                          f"timm's {arch} outputs {fastvit_width(arch)} channels")
    vh = v.int("hidden_size")
    if vh != fastvit_width(arch):
        raise v.error("hidden_size", f"is {vh}, but timm's {arch} outputs {fastvit_width(arch)} channels, which "
                                     "FastVLM's projector (linear_1) takes in")
    _linear(out, "model.multi_modal_projector.linear_1", text_hidden, vh, bias)
    _linear(out, "model.multi_modal_projector.linear_2", text_hidden, text_hidden, bias)
    return tuple(out)
