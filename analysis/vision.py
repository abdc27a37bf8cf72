"""Vision encoders and projectors of multimodal wrappers, as transformers' full model
(``*ForConditionalGeneration``) builds them: Gemma 3 (SigLIP), LLaVA (CLIP or SigLIP), Mistral 3 (Pixtral),
the Qwen-VL family, Qwen3.5 and Qwen3.5-MoE.

Their parameters count in ``params.total`` (category ``vision``) and their weights in memory (an engine
loads the whole checkpoint); they take no part in a text decode step, so the trace and the FLOP counts
leave them out.

CLIP vision tower (``clip_vision_model``): a class embedding, a bias-free patch conv, learned positions
(patches + 1), ``pre_layrnorm``, SigLIP-shaped encoder blocks and ``post_layernorm``. Pixtral
(``pixtral``): a bias-free patch conv, an RMSNorm ``ln_pre``, blocks of RMSNorm, bias-free q/k/v/o and a
gated SiLU MLP (gate/up/down), RoPE (no parameters). LLaVA's projector: ``linear_1`` (vision hidden ×
feature layers → text hidden) and ``linear_2``, biased when ``multimodal_projector_bias``. Mistral 3's:
an RMSNorm over the vision hidden, a bias-free ``patch_merger.merging_layer`` (vision hidden ×
spatial_merge_size² → vision hidden), then LLaVA's two linears.

Qwen3.5 (``qwen3_5_vision``): the Qwen3-VL tower below without its DeepStack mergers.

SigLIP vision tower (``siglip_vision_model``): a patch-embedding conv with bias, learned positions
(one per patch), ``num_hidden_layers`` pre-LayerNorm blocks (q, k, v, out projections and fc1/fc2, all
with biases), a final LayerNorm, and — when ``vision_use_head`` — an attention-pooling head (probe,
``nn.MultiheadAttention``, LayerNorm, MLP). Gemma 3's projector: ``mm_input_projection_weight``
(vision hidden × text hidden) and an RMSNorm over the vision hidden size.
"""

from __future__ import annotations

from .errors import ConfigError, UnsupportedModelError
from .fields import MAX_LAYERS, Fields
from .spec import Tensor


def _lin(out: list[Tensor], name: str, n_out: int, n_in: int) -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), "vision"))
    out.append(Tensor(f"{name}.bias", (n_out,), "vision"))


def _ln(out: list[Tensor], name: str, dim: int) -> None:
    out.append(Tensor(f"{name}.weight", (dim,), "vision"))
    out.append(Tensor(f"{name}.bias", (dim,), "vision"))


def _side(f: Fields, key: str) -> int:
    raw = f.raw(key)
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        sides = list(raw)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sides):
            raise f.error(key, "must be a positive integer or a pair of them")
        return sides[0] * sides[1]
    v = f.int(key)
    return v * v


def _pair(f: Fields, key: str) -> tuple[int, int]:
    raw = f.raw(key)
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        _side(f, key)  # checks the pair
        return raw[0], raw[1]
    v = f.int(key)
    return v, v


def _grid(f: Fields) -> int:
    """Patches of a ViT tower: (image_size // patch_size) per side, floored as its embeddings do (SigLIP's 384-pixel
    image in 14-pixel patches is 27 × 27 = 729, not 384² // 14² = 752)."""
    (ih, iw), (ph, pw) = _pair(f, "image_size"), _pair(f, "patch_size")
    return (ih // ph) * (iw // pw)


def vision_config_dict(vision_config: object, where: str, key: str = "vision_config") -> dict:
    """A sub-config (``vision_config`` unless ``key`` names another, e.g. ``audio_config``) as a dict: ``{}`` when
    absent (null), a ConfigError when not an object."""
    if vision_config is None:
        return {}
    if not isinstance(vision_config, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object")
    return vision_config


def vision_tower_config(top: dict, where: str, model_type: str, wrapper: str, hint: str) -> dict:
    """The wrapper's ``vision_config`` as a dict (see vision_config_dict), its ``model_type`` (``model_type`` when
    absent) checked to be ``model_type``: an UnsupportedModelError naming ``wrapper``, with ``hint``, otherwise."""
    vc = vision_config_dict(top.get("vision_config"), where)
    mt = vc.get("model_type", model_type)
    if mt != model_type:
        raise UnsupportedModelError(f"{where}: vision tower '{mt}' is not one we can count for {wrapper}", hint)
    return vc


def _vision_fields(vision_config: object, where: str, family: str) -> Fields:
    from .family_defaults import FAMILY_DEFAULTS

    vision_config = vision_config_dict(vision_config, where)
    return Fields(vision_config, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get(family), nested=True,
                  family=family)


def _encoder_block(out: list[Tensor], p: str, h: int, inter: int) -> None:
    """One CLIP/SigLIP encoder layer: LayerNorms, biased q/k/v/out projections, biased fc1/fc2."""
    _ln(out, f"{p}.layer_norm1", h)
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        _lin(out, f"{p}.self_attn.{name}", h, h)
    _ln(out, f"{p}.layer_norm2", h)
    _lin(out, f"{p}.mlp.fc1", inter, h)
    _lin(out, f"{p}.mlp.fc2", h, inter)


def _qkv_block(out: list[Tensor], b: str, h: int, inter: int, fc: str = "fc", split: bool = False) -> None:
    """One Qwen-VL-style vision block: LayerNorms norm1 / norm2, a biased fused attn.qkv and attn.proj, biased
    mlp.{fc}1 / mlp.{fc}2 (``fc="linear_fc"`` for Qwen3-VL's names; ``split``: biased attn.q_proj / k_proj /
    v_proj in place of the fused qkv, as MoonViT-style towers name them)."""
    _ln(out, f"{b}.norm1", h)
    _ln(out, f"{b}.norm2", h)
    for name, rows in ((("q_proj", h), ("k_proj", h), ("v_proj", h)) if split else (("qkv", 3 * h),)):
        _lin(out, f"{b}.attn.{name}", rows, h)
    _lin(out, f"{b}.attn.proj", h, h)
    _lin(out, f"{b}.mlp.{fc}1", inter, h)
    _lin(out, f"{b}.mlp.{fc}2", h, inter)


def siglip_tensors(vision_config: object, where: str, prefix: str = "model.vision_tower.vision_model",
                   family: str = "siglip_vision_model", head: bool = True) -> list[Tensor]:
    """SigLIP's vision tower; with ``family="siglip2_vision_model"`` SigLIP2's (NaFlex): the same blocks, post norm
    and head, but a biased Linear patch embedding (channels·patch² → hidden) and ``num_patches`` learned positions
    (a config field, not image_size / patch_size). ``head=False``: a tower class that never builds the pooling head
    (PaddleOCR-VL's), whatever ``vision_use_head`` says."""
    f = _vision_fields(vision_config, where, family)
    h, inter, layers, channels = _tower_shape(f)
    if family in ("siglip2_vision_model", "cosmos3_edge_vision"):  # Cosmos3-Edge: a SigLIP2 tower
        patch = f.int("patch_size", hi=4096)  # Siglip2VisionEmbeddings squares it: an int only
        patch_shape: tuple[int, ...] = (h, channels * patch * patch)
        patches = f.int("num_patches", hi=1 << 24)
    else:
        image_area = _side(f, "image_size")
        patch_area = _side(f, "patch_size")
        patches = _grid(f) if image_area >= patch_area else 0
        if patches < 1:
            raise f.error("patch_size", "is larger than image_size")
        patch = int(round(patch_area ** 0.5))
        patch_shape = (h, channels, patch, patch) if patch * patch == patch_area else (h, channels, patch_area)
    out: list[Tensor] = [
        Tensor(f"{prefix}.embeddings.patch_embedding.weight", patch_shape, "vision"),
        Tensor(f"{prefix}.embeddings.patch_embedding.bias", (h,), "vision"),
        Tensor(f"{prefix}.embeddings.position_embedding.weight", (patches, h), "vision"),
    ]
    for i in range(layers):
        _encoder_block(out, f"{prefix}.encoder.layers.{i}", h, inter)
    _ln(out, f"{prefix}.post_layernorm", h)
    if head and f.bool("vision_use_head"):
        out.append(Tensor(f"{prefix}.head.probe", (1, 1, h), "vision"))
        out.append(Tensor(f"{prefix}.head.attention.in_proj_weight", (3 * h, h), "vision"))
        out.append(Tensor(f"{prefix}.head.attention.in_proj_bias", (3 * h,), "vision"))
        _lin(out, f"{prefix}.head.attention.out_proj", h, h)
        _ln(out, f"{prefix}.head.layernorm", h)
        _lin(out, f"{prefix}.head.mlp.fc1", inter, h)
        _lin(out, f"{prefix}.head.mlp.fc2", h, inter)
    return out


def idefics_tower(vision_config: object, where: str, family: str = "idefics3_vision",
                  prefix: str = "model.vision_tower") -> list[Tensor]:
    """The NaViT-style SigLIP tower of Idefics2 / Idefics3 / SmolVLM / Aria / Granite-Docling (its
    ``family``'s defaults): a biased patch conv, (image_size // patch_size)² learned positions (integer sides
    only), SigLIP encoder blocks and a final LayerNorm, no pooling head."""
    f = _vision_fields(vision_config, where, family)
    h, inter, layers, channels = _tower_shape(f)
    image = f.int("image_size", hi=1 << 16)
    patch = f.int("patch_size", hi=4096)
    if patch > image:
        raise f.error("patch_size", f"({patch}) is larger than image_size ({image})")
    out = [Tensor(f"{prefix}.embeddings.patch_embedding.weight", (h, channels, patch, patch), "vision"),
           Tensor(f"{prefix}.embeddings.patch_embedding.bias", (h,), "vision"),
           Tensor(f"{prefix}.embeddings.position_embedding.weight", ((image // patch) ** 2, h), "vision")]
    for i in range(layers):
        _encoder_block(out, f"{prefix}.encoder.layers.{i}", h, inter)
    _ln(out, f"{prefix}.post_layernorm", h)
    return out


def gemma3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = top.get("vision_config")
    tower = siglip_tensors(vc, where)
    vh = tower[0].shape[0]
    projector = [
        Tensor("model.multi_modal_projector.mm_input_projection_weight", (vh, text_hidden), "vision"),
        Tensor("model.multi_modal_projector.mm_soft_emb_norm.weight", (vh,), "vision"),
    ]
    return tuple(tower + projector)


def _patches(f: Fields) -> tuple[int, int]:
    """(patch count, patch side) of a square-patch tower."""
    image_area = _side(f, "image_size")
    patch = f.int("patch_size", hi=4096)
    patches = _grid(f) if image_area >= patch * patch else 0
    if patches < 1:
        raise f.error("patch_size", "is larger than image_size")
    return patches, patch


def _heads_divide(f: Fields, h: int) -> None:
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")


def _tower_shape(f) -> tuple[int, int, int, int]:
    """hidden, intermediate, layers and input channels of a ViT tower (CLIP, Pixtral)."""
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    _heads_divide(f, h)
    return h, inter, layers, f.int("num_channels", hi=64)


def clip_tensors(vision_config: object, where: str, prefix: str = "model.vision_tower.vision_model",
                 family: str = "clip_vision_model") -> list[Tensor]:
    """CLIP's ViT; ``family``: whose config class defaults fill absent fields (GIT: git_vision_model)."""
    f = _vision_fields(vision_config, where, family)
    h, inter, layers, channels = _tower_shape(f)
    patches, patch = _patches(f)
    out: list[Tensor] = [
        Tensor(f"{prefix}.embeddings.class_embedding", (h,), "vision"),
        Tensor(f"{prefix}.embeddings.patch_embedding.weight", (h, channels, patch, patch), "vision"),
        Tensor(f"{prefix}.embeddings.position_embedding.weight", (patches + 1, h), "vision"),
    ]
    _ln(out, f"{prefix}.pre_layrnorm", h)
    for i in range(layers):
        _encoder_block(out, f"{prefix}.encoder.layers.{i}", h, inter)
    _ln(out, f"{prefix}.post_layernorm", h)
    return out


def pixtral_tensors(vision_config: object, where: str, prefix: str = "model.vision_tower") -> list[Tensor]:
    f = _vision_fields(vision_config, where, "pixtral")
    h, inter, layers, channels = _tower_shape(f)
    _, patch = _patches(f)
    out = [Tensor(f"{prefix}.patch_conv.weight", (h, channels, patch, patch), "vision"),
           Tensor(f"{prefix}.ln_pre.weight", (h,), "vision")]
    for i in range(layers):
        p = f"{prefix}.transformer.layers.{i}"
        out.append(Tensor(f"{p}.attention_norm.weight", (h,), "vision"))
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out.append(Tensor(f"{p}.attention.{name}.weight", (h, h), "vision"))
        out.append(Tensor(f"{p}.ffn_norm.weight", (h,), "vision"))
        out.append(Tensor(f"{p}.feed_forward.gate_proj.weight", (inter, h), "vision"))
        out.append(Tensor(f"{p}.feed_forward.up_proj.weight", (inter, h), "vision"))
        out.append(Tensor(f"{p}.feed_forward.down_proj.weight", (h, inter), "vision"))
    return out


def _llava_projector(top: dict, vh: int, text_hidden: int, where: str, family: str) -> list[Tensor]:
    from .family_defaults import FAMILY_DEFAULTS

    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)
    layer = f.raw("vision_feature_layer")
    if layer is None:
        layer = FAMILY_DEFAULTS[family]["vision_feature_layer"]
    if isinstance(layer, list) and layer and all(isinstance(x, int) and not isinstance(x, bool) for x in layer):
        n_layers = len(layer)
    elif isinstance(layer, int) and not isinstance(layer, bool):
        n_layers = 1
    else:
        raise f.error("vision_feature_layer", "must be an integer or a non-empty list of integers")
    bias = f.bool("multimodal_projector_bias")
    out: list[Tensor] = []
    for name, n_out, n_in in (("linear_1", text_hidden, vh * n_layers), ("linear_2", text_hidden, text_hidden)):
        out.append(Tensor(f"model.multi_modal_projector.{name}.weight", (n_out, n_in), "vision"))
        if bias:
            out.append(Tensor(f"model.multi_modal_projector.{name}.bias", (n_out,), "vision"))
    return out


#: LLaVA's vision_config when the config has none (LlavaConfig.sub_configs_defaults).
LLAVA_VISION_DEFAULT = {"model_type": "clip_vision_model", "intermediate_size": 4096, "hidden_size": 1024,
                        "patch_size": 14, "image_size": 336, "num_hidden_layers": 24, "num_attention_heads": 16}

#: Mistral 3's vision_config when the config has none (Mistral3Config.sub_configs_defaults).
MISTRAL3_VISION_DEFAULT = {"model_type": "pixtral", "intermediate_size": 4096, "hidden_size": 1024, "patch_size": 14,
                           "image_size": 1540, "num_hidden_layers": 24, "num_attention_heads": 16}

#: vision_config.model_type -> its tower's tensors (the towers LLaVA-style wrappers are built with here).
TOWERS = {"clip_vision_model": clip_tensors, "siglip_vision_model": siglip_tensors, "pixtral": pixtral_tensors,
          # Siglip2VisionModel holds its embeddings / encoder itself (no .vision_model inside)
          "siglip2_vision_model": lambda vc, where, prefix="model.vision_tower": siglip_tensors(
              vc, where, prefix.removesuffix(".vision_model"), family="siglip2_vision_model")}


def _tower(top: dict, where: str, default: dict, root: str = "model.vision_tower") -> list[Tensor]:
    """The tower of ``vision_config`` (``default`` when absent) under ``root`` (Video-LLaVA: two towers)."""
    vc = top.get("vision_config")
    if vc is None:
        vc = default
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    mt = vc.get("model_type", default["model_type"])
    build = TOWERS.get(mt) if isinstance(mt, str) else None
    if build is None:
        from .errors import UnsupportedModelError

        raise UnsupportedModelError(f"{where}: vision tower '{mt}' is not one we can count",
                                    f"supported vision towers: {', '.join(sorted(TOWERS))}")
    return build(vc, where, prefix=root if mt == "pixtral" else f"{root}.vision_model")


def llava_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    tower = _tower(top, where, LLAVA_VISION_DEFAULT)
    vh = tower[-1].shape[0]  # every tower ends with a norm over its hidden size
    return tuple(tower + _llava_projector(top, vh, text_hidden, where, "llava"))


def mistral3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from .family_defaults import FAMILY_DEFAULTS

    tower = _tower(top, where, MISTRAL3_VISION_DEFAULT)
    vh = tower[-1].shape[0]
    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("mistral3"), family="mistral3")
    merger = _pixtral_merger(vh, f.int("spatial_merge_size", hi=64), "model.multi_modal_projector")
    return tuple(tower + merger + _llava_projector(top, vh, text_hidden, where, "mistral3"))


def _pixtral_merger(vh: int, merge: int, proj: str) -> list[Tensor]:
    """Mistral 3's RMSNorm over the vision hidden and its bias-free patch merger (vh·merge² → vh)."""
    return [Tensor(f"{proj}.norm.weight", (vh,), "vision"),
            Tensor(f"{proj}.patch_merger.merging_layer.weight", (vh, vh * merge * merge), "vision")]


def lighton_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """LightOnOCR: Mistral 3's Pixtral tower (``model.vision_encoder``; Mistral 3's default tower when
    vision_config is absent, as LightOnOcrConfig's) and its projector (``model.vision_projection``: the norm and
    patch merger, the wrapper's spatial_merge_size), then bias-free linear_1 (vision hidden → text hidden) and
    linear_2 (text hidden square): one feature layer, no projector bias."""
    from .family_defaults import FAMILY_DEFAULTS

    vc = vision_tower_config(top, where, "pixtral", "LightOnOCR", "LightOnOCR's checkpoints use a Pixtral tower")
    tower = pixtral_tensors(vc if top.get("vision_config") is not None else MISTRAL3_VISION_DEFAULT, where,
                            prefix="model.vision_encoder")
    vh = tower[0].shape[0]  # patch_conv: (hidden, channels, patch, patch)
    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("lighton_ocr"), family="lighton_ocr")
    p = "model.vision_projection"
    out = tower + _pixtral_merger(vh, f.int("spatial_merge_size", hi=64), p)
    out += [Tensor(f"{p}.linear_1.weight", (text_hidden, vh), "vision"),
            Tensor(f"{p}.linear_2.weight", (text_hidden, text_hidden), "vision")]
    return tuple(out)


# ---- Qwen-VL vision towers (``model.visual``) ----------------------------------------------------
# Qwen2-VL: a bias-free Conv3d patch embed (temporal_patch_size × patch × patch), blocks of LayerNorms,
# a fused biased qkv, a biased proj and a biased fc1/fc2 MLP (embed_dim × mlp_ratio), and a PatchMerger
# (LayerNorm ln_q over embed_dim, then Linear(embed·m², embed·m²), GELU, Linear(embed·m², hidden_size)).
# Qwen2.5-VL: RMSNorms (weight only) in the blocks and the merger, a biased gated MLP (gate/up/down,
# intermediate_size), the merger's output out_hidden_size. Qwen3-VL (and -MoE): a biased patch embed,
# learned positions (num_position_embeddings), LayerNorm blocks with biased linear_fc1/linear_fc2, a merger
# (LayerNorm over hidden, linear_fc1, linear_fc2) and one DeepStack merger per deepstack_visual_indexes
# entry (LayerNorm over hidden·m², after the spatial shuffle). Rotary tables are buffers, not parameters.


def _rms(out: list[Tensor], name: str, dim: int) -> None:
    out.append(Tensor(f"{name}.weight", (dim,), "vision"))


def _qwen_vision_fields(top: dict, where: str, family: str) -> Fields:
    vc = top.get("vision_config")
    return _vision_fields({} if vc is None else vc, where, family)


def _qwen_patch(f: Fields, dim: int) -> tuple[int, ...]:
    """The Conv3d patch-embedding weight's shape: (dim, channels, temporal_patch_size, patch, patch)."""
    patch = f.int("patch_size", hi=4096)
    return (dim, f.int("in_channels", hi=64), f.int("temporal_patch_size", hi=64), patch, patch)


def _qwen_blocks(f: Fields, dim: int) -> int:
    depth = f.int("depth", hi=MAX_LAYERS)
    heads = f.int("num_heads")
    if dim % heads:
        raise f.error("num_heads", f"({heads}) must divide the vision hidden size ({dim})")
    return depth


def qwen2_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _qwen_vision_fields(top, where, "qwen2_vl_vision")
    e = f.int("embed_dim")
    depth = _qwen_blocks(f, e)
    mlp = int(e * f.float("mlp_ratio"))  # VisionMlp(dim, int(dim * mlp_ratio))
    merged = e * f.int("spatial_merge_size", hi=64) ** 2
    out_dim = f.int("hidden_size")
    p = "model.visual"
    out = [Tensor(f"{p}.patch_embed.proj.weight", _qwen_patch(f, e), "vision")]
    for i in range(depth):
        _qkv_block(out, f"{p}.blocks.{i}", e, mlp)
    _ln(out, f"{p}.merger.ln_q", e)
    _lin(out, f"{p}.merger.mlp.0", merged, merged)
    _lin(out, f"{p}.merger.mlp.2", out_dim, merged)
    return tuple(out)


def qwen2_5_vl_vision(top: dict, text_hidden: int, where: str, family: str = "qwen2_5_vl_vision",
                      prefix: str = "model.visual", gqa: bool = False) -> tuple[Tensor, ...]:
    """The Qwen2.5-VL tower; ``family`` / ``prefix`` for the wrappers that reuse it (HyperCLOVAX-Vision's
    ``model.vision_model``); ``gqa``: EXAONE 4.5's grouped qkv (num_heads query heads, num_key_value_heads
    key / value heads of hidden_size // num_heads)."""
    f = _qwen_vision_fields(top, where, family)
    h = f.int("hidden_size")
    depth = _qwen_blocks(f, h)
    inter = f.int("intermediate_size")
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    out_dim = f.int("out_hidden_size")
    qkv = 3 * h
    if gqa:
        heads = f.int("num_heads")
        kv = f.int("num_key_value_heads")
        if kv > heads or heads % kv:
            raise f.error("num_key_value_heads", f"({kv}) must divide num_heads ({heads})")
        qkv = h + 2 * kv * (h // heads)
    p = prefix
    out = [Tensor(f"{p}.patch_embed.proj.weight", _qwen_patch(f, h), "vision")]
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        _rms(out, f"{b}.norm1", h)
        _rms(out, f"{b}.norm2", h)
        _lin(out, f"{b}.attn.qkv", qkv, h)
        _lin(out, f"{b}.attn.proj", h, h)
        _lin(out, f"{b}.mlp.gate_proj", inter, h)
        _lin(out, f"{b}.mlp.up_proj", inter, h)
        _lin(out, f"{b}.mlp.down_proj", h, inter)
    _rms(out, f"{p}.merger.ln_q", h)
    _lin(out, f"{p}.merger.mlp.0", merged, merged)
    _lin(out, f"{p}.merger.mlp.2", out_dim, merged)
    return tuple(out)


def _qwen3_merger(out: list[Tensor], name: str, norm_dim: int, merged: int, out_dim: int) -> None:
    _ln(out, f"{name}.norm", norm_dim)
    _lin(out, f"{name}.linear_fc1", merged, merged)
    _lin(out, f"{name}.linear_fc2", out_dim, merged)


def _qwen3_vision(top: dict, where: str, family: str, deepstack_mergers: bool = True) -> tuple[Tensor, ...]:
    f = _qwen_vision_fields(top, where, family)
    h = f.int("hidden_size")
    depth = _qwen_blocks(f, h)
    inter = f.int("intermediate_size")
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    out_dim = f.int("out_hidden_size")
    deepstack = f.int_list("deepstack_visual_indexes", hi=MAX_LAYERS) if deepstack_mergers else []
    if deepstack is None:  # the class default (a tuple, so not in the generated scalar table)
        deepstack = f.derived("deepstack_visual_indexes", [8, 16, 24], "absent: the class default (8, 16, 24)")
    p = "model.visual"
    out = [Tensor(f"{p}.patch_embed.proj.weight", _qwen_patch(f, h), "vision"),
           Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision")]
    out.append(Tensor(f"{p}.pos_embed.weight", (f.int("num_position_embeddings", hi=1 << 24), h), "vision"))
    for i in range(depth):
        _qkv_block(out, f"{p}.blocks.{i}", h, inter, fc="linear_fc")
    _qwen3_merger(out, f"{p}.merger", h, merged, out_dim)
    for k in range(len(deepstack)):
        _qwen3_merger(out, f"{p}.deepstack_merger_list.{k}", merged, merged, out_dim)
    return tuple(out)


def qwen3_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _qwen3_vision(top, where, "qwen3_vl_vision")


def qwen3_vl_moe_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _qwen3_vision(top, where, "qwen3_vl_moe_vision")


def qwen3_5_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Qwen3.5 / Qwen3.5-MoE: the Qwen3-VL tower without its DeepStack mergers (transformers'
    Qwen3_5VisionModel deletes them, whatever deepstack_visual_indexes says); the merger's output width is
    the vision config's ``out_hidden_size``, not the text hidden size."""
    return _qwen3_vision(top, where, "qwen3_5_vision", deepstack_mergers=False)


# GLM-4.1V / GLM-4.6V / GLM-4.5V (``glm4v_vision``, ``glm4v_moe_vision``): learned positions (one per patch of
# image_size), a biased Conv3d patch embedding, RMSNorm blocks with a fused qkv (biased by attention_bias), a
# bias-free proj and a bias-free gated MLP out_hidden_size wide; then post_layernorm, a biased Conv2d
# downsample (hidden -> out_hidden_size, spatial_merge_size kernel) and the merger: a bias-free proj, a
# LayerNorm and a bias-free gated MLP intermediate_size wide. post_conv_layernorm is built but is an RMSNorm too.


def _glm4v_vision(top: dict, where: str, family: str) -> tuple[Tensor, ...]:
    """GLM-4.xV's tower; with ``family="glm_ocr_vision"`` GLM-OCR's: no learned positions, attention_bias (default
    true) biasing qkv, proj and the block MLP, RMSNorm q_norm / k_norm over head_dim, the block MLP intermediate_size
    wide (GLM-4.xV's: out_hidden_size), no post_conv_layernorm, and a merger whose gated MLP is
    out_hidden_size × in_channels wide (GlmOcrVisionModel's context_dim); with ``family="glm5_next_vision"``
    GLM-5.3-Flash's: GLM-OCR's, the merger's gated MLP projection_intermediate_size wide (Glm5NextVisionPatchMerger)."""
    ocr = family in ("glm_ocr_vision", "glm5_next_vision")
    f = _qwen_vision_fields(top, where, family)
    h = f.int("hidden_size")
    depth = _qwen_blocks(f, h)
    out_dim = f.int("out_hidden_size")
    inter = f.int("intermediate_size")
    merge = f.int("spatial_merge_size", hi=64)
    qkv_bias = f.bool("attention_bias", False)
    patch = f.int("patch_size", hi=4096)
    p = "model.visual"
    out = [] if ocr else [Tensor(f"{p}.embeddings.position_embedding.weight",
                                 ((f.int("image_size", hi=1 << 16) // patch) ** 2, h), "vision")]
    out += [Tensor(f"{p}.patch_embed.proj.weight", _qwen_patch(f, h), "vision"),
            Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision")]
    mlp = inter if ocr else out_dim
    biased = qkv_bias and ocr  # GLM-OCR: proj and the MLP biased with qkv
    hd = h // f.int("num_heads")
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        _rms(out, f"{b}.norm1", h)
        _rms(out, f"{b}.norm2", h)
        out.append(Tensor(f"{b}.attn.qkv.weight", (3 * h, h), "vision"))
        if qkv_bias:
            out.append(Tensor(f"{b}.attn.qkv.bias", (3 * h,), "vision"))
        out.append(Tensor(f"{b}.attn.proj.weight", (h, h), "vision"))
        if ocr:
            _rms(out, f"{b}.attn.q_norm", hd)
            _rms(out, f"{b}.attn.k_norm", hd)
        for name, shape in (("gate_proj", (mlp, h)), ("up_proj", (mlp, h)), ("down_proj", (h, mlp))):
            out.append(Tensor(f"{b}.mlp.{name}.weight", shape, "vision"))
        if biased:
            for name, n in (("attn.proj", h), ("mlp.gate_proj", mlp), ("mlp.up_proj", mlp), ("mlp.down_proj", h)):
                out.append(Tensor(f"{b}.{name}.bias", (n,), "vision"))
    if not ocr:
        _rms(out, f"{p}.post_conv_layernorm", h)
    _rms(out, f"{p}.post_layernorm", h)
    out.append(Tensor(f"{p}.downsample.weight", (out_dim, h, merge, merge), "vision"))
    out.append(Tensor(f"{p}.downsample.bias", (out_dim,), "vision"))
    out.append(Tensor(f"{p}.merger.proj.weight", (out_dim, out_dim), "vision"))
    _ln(out, f"{p}.merger.post_projection_norm", out_dim)
    ctx = f.int("projection_intermediate_size") if family == "glm5_next_vision" else \
        out_dim * f.int("in_channels", hi=64) if ocr else inter
    for name, shape in (("gate_proj", (ctx, out_dim)), ("up_proj", (ctx, out_dim)), ("down_proj", (out_dim, ctx))):
        out.append(Tensor(f"{p}.merger.{name}.weight", shape, "vision"))
    return tuple(out)


def glm_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _glm4v_vision(top, where, "glm_ocr_vision")


def glm4v_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _glm4v_vision(top, where, "glm4v_vision")


def glm4v_moe_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _glm4v_vision(top, where, "glm4v_moe_vision")


# ---- Gemma 4: its own ViT and (E2B/E4B) its conformer audio tower ------------------------------------


def _mm_fields(cfg: object, where: str, key: str, family: str) -> Fields | None:
    """The Fields of ``top[key]``; None when the config has none (transformers then builds no tower)."""
    if cfg is None:
        return None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object")
    from .family_defaults import FAMILY_DEFAULTS

    return Fields(cfg, f"{where} ({key})", defaults=FAMILY_DEFAULTS.get(family), nested=True, family=family)


def _plain(out: list[Tensor], name: str, shape: tuple[int, ...], kind: str) -> None:
    out.append(Tensor(name, shape, kind))


def gemma4_vision_tensors(f: Fields, text_hidden: int, prefix: str = "model.vision_tower") -> list[Tensor]:
    """Gemma4VisionModel: a bias-free patch projection (3·patch² → hidden), a learned (2, positions, hidden)
    position table, pre/post sandwich-normed blocks (bias-free q/k/v/o, q/k RMSNorms over head_dim, a
    weightless v_norm, a gated MLP), no parameters in the pooler (``std_bias``/``std_scale`` are buffers);
    then ``embed_vision``: a weightless RMSNorm and a bias-free projection to the text hidden size."""
    out: list[Tensor] = []
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads)
    hd = f.int("head_dim", lambda: h // heads)
    patch = f.int("patch_size", hi=1024)
    positions = f.int("position_embedding_size", hi=1 << 24)
    _plain(out, f"{prefix}.patch_embedder.input_proj.weight", (h, 3 * patch * patch), "vision")
    _plain(out, f"{prefix}.patch_embedder.position_embedding_table", (2, positions, h), "vision")
    for i in range(layers):
        p = f"{prefix}.encoder.layers.{i}"
        for name, n_out, n_in in (("q_proj", heads * hd, h), ("k_proj", kv * hd, h), ("v_proj", kv * hd, h),
                                  ("o_proj", h, heads * hd)):
            _plain(out, f"{p}.self_attn.{name}.linear.weight", (n_out, n_in), "vision")
        _plain(out, f"{p}.self_attn.q_norm.weight", (hd,), "vision")
        _plain(out, f"{p}.self_attn.k_norm.weight", (hd,), "vision")
        for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            _plain(out, f"{p}.{name}.weight", (h,), "vision")
        for name, n_out, n_in in (("gate_proj", inter, h), ("up_proj", inter, h), ("down_proj", h, inter)):
            _plain(out, f"{p}.mlp.{name}.linear.weight", (n_out, n_in), "vision")
    _plain(out, "model.embed_vision.embedding_projection.weight", (text_hidden, h), "vision")
    return out


def gemma4_audio_tensors(f: Fields, text_hidden: int, prefix: str = "model.audio_tower") -> list[Tensor]:
    """Gemma4AudioModel (a conformer): two bias-free 3×3 stride-2 convs, each with a bias-free LayerNorm,
    then ``input_proj_linear`` ((channels0 / 4)·channels1 → hidden); per layer two macaron feed-forwards
    (hidden → 4·hidden → hidden, RMSNorms before and after), chunked self-attention (q/k/v, ``post``, a
    ``relative_k_proj``, ``per_dim_scale``), a light conv block (``linear_start`` → GLU → depthwise conv →
    RMSNorm → ``linear_end``) and three RMSNorms; a biased ``output_proj`` to ``output_proj_dims``; then
    ``embed_audio``'s bias-free projection to the text hidden size (clipping bounds are buffers)."""
    out: list[Tensor] = []
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    hd = h // heads
    kernel = f.int("conv_kernel_size", hi=1024)
    channels = f.raw("subsampling_conv_channels", [128, 32])
    if not (isinstance(channels, list) and len(channels) == 2
            and all(isinstance(c, int) and not isinstance(c, bool) and 0 < c < 1 << 16 for c in channels)):
        raise f.error("subsampling_conv_channels", "must be a list of two positive integers")
    c0, c1 = channels
    out_dims = f.int("output_proj_dims", 1536)
    a = "audio"
    sub = f"{prefix}.subsample_conv_projection"
    _plain(out, f"{sub}.layer0.conv.weight", (c0, 1, 3, 3), a)
    _plain(out, f"{sub}.layer0.norm.weight", (c0,), a)
    _plain(out, f"{sub}.layer1.conv.weight", (c1, c0, 3, 3), a)
    _plain(out, f"{sub}.layer1.norm.weight", (c1,), a)
    _plain(out, f"{sub}.input_proj_linear.weight", (h, (c0 // 4) * c1), a)
    for i in range(layers):
        p = f"{prefix}.layers.{i}"
        for ff in ("feed_forward1", "feed_forward2"):
            _plain(out, f"{p}.{ff}.ffw_layer_1.linear.weight", (4 * h, h), a)
            _plain(out, f"{p}.{ff}.ffw_layer_2.linear.weight", (h, 4 * h), a)
            _plain(out, f"{p}.{ff}.pre_layer_norm.weight", (h,), a)
            _plain(out, f"{p}.{ff}.post_layer_norm.weight", (h,), a)
        for name in ("q_proj", "k_proj", "v_proj"):
            _plain(out, f"{p}.self_attn.{name}.linear.weight", (heads * hd, h), a)
        _plain(out, f"{p}.self_attn.post.linear.weight", (h, h), a)
        _plain(out, f"{p}.self_attn.relative_k_proj.weight", (heads * hd, h), a)
        _plain(out, f"{p}.self_attn.per_dim_scale", (hd,), a)
        _plain(out, f"{p}.lconv1d.linear_start.linear.weight", (2 * h, h), a)
        _plain(out, f"{p}.lconv1d.linear_end.linear.weight", (h, h), a)
        _plain(out, f"{p}.lconv1d.depthwise_conv1d.weight", (h, 1, kernel), a)
        _plain(out, f"{p}.lconv1d.pre_layer_norm.weight", (h,), a)
        _plain(out, f"{p}.lconv1d.conv_norm.weight", (h,), a)
        for name in ("norm_pre_attn", "norm_post_attn", "norm_out"):
            _plain(out, f"{p}.{name}.weight", (h,), a)
    _plain(out, f"{prefix}.output_proj.weight", (out_dims, h), a)
    _plain(out, f"{prefix}.output_proj.bias", (out_dims,), a)
    _plain(out, "model.embed_audio.embedding_projection.weight", (text_hidden, out_dims), a)
    return out


def gemma4_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Gemma4ForConditionalGeneration's vision tower (kind ``vision``) and audio tower (kind ``audio``),
    each only when its config is given (a null ``audio_config``, as in the 26B and 31B, builds none)."""
    out: list[Tensor] = []
    vf = _mm_fields(top.get("vision_config"), where, "vision_config", "gemma4_vision")
    if vf is not None:
        out += gemma4_vision_tensors(vf, text_hidden)
    af = _mm_fields(top.get("audio_config"), where, "audio_config", "gemma4_audio")
    if af is not None:
        out += gemma4_audio_tensors(af, text_hidden)
    return tuple(out)


def gemma4_unified_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Gemma4UnifiedForConditionalGeneration has no towers, only embedders, each when its config is given.
    ``embed_vision`` (Gemma4UnifiedVisionEmbedder): LayerNorm (bias) over the merged patch's pixels
    ((patch_size · pooling_kernel_size)² · 3), a biased Dense to ``mm_embed_dim``, a LayerNorm, a factorized
    (``mm_posemb_size``, 2, mm_embed_dim) position table, a LayerNorm, then a weightless RMSNorm and a bias-free
    projection from ``output_proj_dims`` to the text hidden size. ``embed_audio``: raw waveform frames of
    ``audio_embed_dim`` samples through a weightless RMSNorm and a bias-free projection to the text hidden size."""
    out: list[Tensor] = []
    vf = _mm_fields(top.get("vision_config"), where, "vision_config", "gemma4_unified_vision")
    if vf is not None:
        patch = vf.int("patch_size", hi=1024) * vf.int("pooling_kernel_size", hi=1024)
        pixels = 3 * patch * patch
        mm = vf.int("mm_embed_dim")
        p = "model.embed_vision"
        _ln(out, f"{p}.patch_ln1", pixels)
        _lin(out, f"{p}.patch_dense", mm, pixels)
        _ln(out, f"{p}.patch_ln2", mm)
        _plain(out, f"{p}.pos_embedding", (vf.int("mm_posemb_size", hi=1 << 24), 2, mm), "vision")
        _ln(out, f"{p}.pos_norm", mm)
        _plain(out, f"{p}.multimodal_embedder.embedding_projection.weight",
               (text_hidden, vf.int("output_proj_dims", 3840, note="absent: Gemma4UnifiedVisionConfig's default")),
               "vision")
    af = _mm_fields(top.get("audio_config"), where, "audio_config", "gemma4_unified_audio")
    if af is not None:
        dim = af.int("audio_embed_dim")
        for alias in ("hidden_size", "output_proj_dims", "audio_samples_per_token"):  # properties setting it
            v = af.raw(alias)
            if v is not None and v != dim:
                raise af.error(alias, f"({v!r}) disagrees with audio_embed_dim ({dim}): Gemma4UnifiedAudioConfig "
                               "sets one from the other")
        _plain(out, "model.embed_audio.embedding_projection.weight", (text_hidden, dim), "audio")
    return tuple(out)


# ---- Llama 3.2 Vision (mllama) -------------------------------------------------------------------
# MllamaVisionModel: a bias-free patch conv, a class embedding, gated positional embeddings (one per patch
# and the class token, plus a tile table indexed by aspect ratio), gated pre- and post-tile embeddings
# (max_aspect_ratio_id + 1 rows of max_num_tiles × hidden), LayerNorms before and after, a local
# transformer (num_hidden_layers) and a gated global one (num_global_layers: tanh gates on attention and
# MLP): bias-free q/k/v/o, biased fc1/fc2, LayerNorms. The projector is one biased Linear from
# vision_output_dim (the hidden size × (1 + intermediate layers)) to the text hidden size.

#: MllamaVisionConfig's list defaults (not in the generated scalar table).
MLLAMA_ASPECT_RATIOS = 8  # len(supported_aspect_ratios) of the default [[1, 1], [1, 2], ... [4, 1]]


def _mllama_fields(top: dict, where: str) -> Fields:
    vc = top.get("vision_config")
    return _vision_fields({} if vc is None else vc, where, "mllama_vision_model")


def _mllama_patches(f: Fields) -> tuple[int, int]:
    """(patches per tile, plus the class token; patch side)."""
    size = f.int("image_size", hi=1 << 16)
    patch = f.int("patch_size", hi=4096)
    if patch > size:
        raise f.error("patch_size", "is larger than image_size")
    return (size // patch) ** 2 + 1, patch


def mllama_image_tokens(top: dict, where: str) -> int:
    """Image tokens one image puts in the cross-attention cache: max_num_tiles × (patches + 1)."""
    f = _mllama_fields(top, where)
    tokens, _ = _mllama_patches(f)
    return f.int("max_num_tiles", hi=1024) * tokens


def mllama_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _mllama_fields(top, where)
    h = f.int("hidden_size")
    heads = f.int("attention_heads")
    attn = heads * (h // heads)  # MllamaVisionAttention: head_dim = hidden // heads
    if attn == 0:
        raise f.error("attention_heads", f"({heads}) exceeds the vision hidden size ({h})")
    inter = f.int("intermediate_size")
    channels = f.int("num_channels", hi=64)
    tiles = f.int("max_num_tiles", hi=1024)
    tokens, patch = _mllama_patches(f)
    ratios = f.raw("supported_aspect_ratios")
    if ratios is None:
        n_ratios = f.derived("supported_aspect_ratios", MLLAMA_ASPECT_RATIOS, "absent: the class default's 8 ratios")
    elif isinstance(ratios, list) and ratios:
        n_ratios = len(ratios)
    else:
        raise f.error("supported_aspect_ratios", "must be a non-empty list of [width, height] tile counts")
    out_dim = f.int("vision_output_dim", 7680)  # MllamaVisionConfig's default
    p = "model.vision_model"
    out = [Tensor(f"{p}.patch_embedding.weight", (h, channels, patch, patch), "vision"),
           Tensor(f"{p}.class_embedding", (h,), "vision"),
           Tensor(f"{p}.gated_positional_embedding.gate", (1,), "vision"),
           Tensor(f"{p}.gated_positional_embedding.embedding", (tokens, h), "vision"),
           Tensor(f"{p}.gated_positional_embedding.tile_embedding.weight", (n_ratios + 1, tiles * tokens * h), "vision")]
    for name in ("pre_tile_positional_embedding", "post_tile_positional_embedding"):
        out.append(Tensor(f"{p}.{name}.embedding.weight", (n_ratios + 1, tiles * h), "vision"))
        out.append(Tensor(f"{p}.{name}.gate", (1,), "vision"))
    _ln(out, f"{p}.layernorm_pre", h)
    _ln(out, f"{p}.layernorm_post", h)
    for stack, n, gated in (("transformer", f.int("num_hidden_layers", hi=MAX_LAYERS), False),
                            ("global_transformer", f.int("num_global_layers", hi=MAX_LAYERS), True)):
        for i in range(n):
            b = f"{p}.{stack}.layers.{i}"
            for name in ("q_proj", "k_proj", "v_proj"):
                out.append(Tensor(f"{b}.self_attn.{name}.weight", (attn, h), "vision"))
            out.append(Tensor(f"{b}.self_attn.o_proj.weight", (h, attn), "vision"))
            _lin(out, f"{b}.mlp.fc1", inter, h)
            _lin(out, f"{b}.mlp.fc2", h, inter)
            _ln(out, f"{b}.input_layernorm", h)
            _ln(out, f"{b}.post_attention_layernorm", h)
            if gated:
                out.append(Tensor(f"{b}.gate_attn", (1,), "vision"))
                out.append(Tensor(f"{b}.gate_ffn", (1,), "vision"))
    _lin(out, "model.multi_modal_projector", text_hidden, out_dim)
    return tuple(out)


# ---- MiniMax-M3 VL (``minimax_m3_vl``) ------------------------------------------------------------
# A CLIP-style tower without class or position embeddings (3D RoPE, a buffer): a bias-free Conv3d patch embed
# (temporal_patch_size x patch x patch), pre_layrnorm, CLIP encoder layers (biased q/k/v/out_proj, fc1/fc2,
# LayerNorms), no post norm; the projector maps each patch through linear_1 / linear_2 (vision -> projector_hidden_size
# -> text hidden, biased), then merges spatial_merge_size² neighbours through merge_linear_1 / merge_linear_2.


def minimax_m3_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from .family_defaults import FAMILY_DEFAULTS

    f = _vision_fields(top.get("vision_config"), where, "minimax_m3_vl_vision")
    h, inter, layers, channels = _tower_shape(f)
    patch = f.int("patch_size", hi=4096)
    merge = f.int("spatial_merge_size", hi=64)
    p = "model.vision_tower"
    out = [Tensor(f"{p}.embeddings.proj.weight", (h, channels, f.int("temporal_patch_size", hi=64), patch, patch),
                  "vision")]
    _ln(out, f"{p}.pre_layrnorm", h)
    for i in range(layers):
        _encoder_block(out, f"{p}.layers.{i}", h, inter)
    top_f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("minimax_m3_vl"), family="minimax_m3_vl")
    proj = top_f.int("projector_hidden_size")
    q = "model.multi_modal_projector"
    _lin(out, f"{q}.linear_1", proj, h)
    _lin(out, f"{q}.linear_2", text_hidden, proj)
    _lin(out, f"{q}.merge_linear_1", proj, text_hidden * merge * merge)
    _lin(out, f"{q}.merge_linear_2", text_hidden, proj)
    return tuple(out)
