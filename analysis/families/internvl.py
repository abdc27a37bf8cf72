"""InternVL's vision towers and projectors, in the two formats the hub ships.

``internvl`` (transformers' HF format, e.g. OpenGVLab/InternVL3-8B-hf; InternVLForConditionalGeneration): the
language model is ``text_config`` (Qwen2 by default); the vision tower (``internvl_vision``, InternVLVisionModel)
is a ViT with a ``cls_token`` (and a ``mask_token`` when ``use_mask_token``), a biased patch Conv2d
(num_channels -> hidden, kernel = stride = patch_size, image_size / patch_size per side), learned positions
(patches + 1) when ``use_absolute_position_embeddings``, then per layer: q/k/v projections (hidden -> hidden, biased
by ``attention_bias``), a biased ``projection_layer``, RMSNorm ``q_norm`` / ``k_norm`` over the whole hidden size when
``use_qk_norm``, a biased fc1 / fc2 MLP, ``layernorm_before`` / ``layernorm_after`` (LayerNorm with bias, or a
weight-only RMSNorm when ``norm_type`` is rms_norm), and the layer scales ``lambda_1`` / ``lambda_2`` (always
built); a final LayerNorm only when ``use_mean_pooling`` is false. InternVLMultiModalProjector: a LayerNorm over
the pixel-shuffled width (vision hidden x int(1 / downsample_ratio)^2), a biased Linear to the text hidden size,
GELU, a biased Linear text hidden -> text hidden.

``internvl_chat`` (the original remote-code format: OpenGVLab/InternVL2_5-8B, InternVL3-8B/38B/78B, ...;
InternVLChatModel): the language model is ``llm_config``, built by its ``architectures[0]`` (Llama, InternLM2,
Phi-3, Qwen2, Qwen3, Qwen3-MoE, GPT-OSS) and tied as llm_config says; ``vision_config`` is an InternVisionConfig
(InternViT-300M or -6B): ``embeddings.class_embedding``, a biased patch Conv2d from 3 channels (hard-coded),
``position_embedding`` of (image_size // patch_size)^2 + 1 rows, then per layer a fused ``attn.qkv`` (biased by
``qkv_bias``), RMSNorm ``q_norm`` / ``k_norm`` over the hidden size when ``qk_normalization``, a biased
``attn.proj``, a biased fc1 / fc2 MLP, ``norm1`` / ``norm2`` (``norm_type``: rms_norm or layer_norm) and the layer
scales ``ls1`` / ``ls2``; no final norm. ``mlp1`` is the same projector as the HF format's. The whole checkpoint is
counted, every vision layer included (vLLM builds only the layers up to ``select_layer``; -1 in the published
configs, all of them).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from .voxtral import required_sub_config
from ..vision import _lin, _ln, _vision_fields, vision_config_dict, vision_tower_config

#: InternVLVisionConfig's tuple defaults (not in the generated scalar table)
HF_IMAGE_SIZE = 448
HF_PATCH_SIZE = 14

#: InternVisionConfig's defaults (the hub's configuration_intern_vit.py: InternViT-6B at 224 px); no transformers
#: class exists to generate them
INTERN_VIT_DEFAULTS = {"hidden_size": 3200, "num_hidden_layers": 48, "num_attention_heads": 25,
                       "intermediate_size": 12800, "qkv_bias": False, "qk_normalization": True,
                       "norm_type": "rms_norm", "image_size": 224, "patch_size": 14}
#: InternVLChatConfig's defaults
CHAT_DEFAULTS = {"downsample_ratio": 0.5}

#: llm_config.architectures[0] -> the model_type InternVLChatConfig builds its llm_config as (it picks the config
#: class by the architecture, not by model_type)
LLM_ARCHITECTURES = {"LlamaForCausalLM": "llama", "InternLM2ForCausalLM": "internlm2", "Phi3ForCausalLM": "phi3",
                     "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe",
                     "GptOssForCausalLM": "gpt_oss"}


def _pair(f: Fields, key: str, default: int) -> tuple[int, int]:
    raw = f.raw(key)
    if raw is None:
        f.defaulted(key, default, "absent: the class default")
        return default, default
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        if not all(isinstance(s, int) and not isinstance(s, bool) and 0 < s <= 1 << 16 for s in raw):
            raise f.error(key, "must be a positive integer or a pair of them")
        return raw[0], raw[1]
    v = f.int(key, hi=1 << 16)
    return v, v


def _norm(out: list[Tensor], name: str, dim: int, kind: str) -> None:
    if kind == "layer_norm":
        _ln(out, name, dim)
    else:
        out.append(Tensor(f"{name}.weight", (dim,), "vision"))


def _qk_norms(out: list[Tensor], attn: str, dim: int) -> None:
    """InternViT's optional q / k RMSNorms (weights only) over the whole hidden size."""
    out.append(Tensor(f"{attn}.q_norm.weight", (dim,), "vision"))
    out.append(Tensor(f"{attn}.k_norm.weight", (dim,), "vision"))


def _mlp_norms_scales(out: list[Tensor], b: str, h: int, inter: int, kind: str, norms: tuple[str, str],
                      scales: tuple[str, str]) -> None:
    """The rest of an InternViT layer after its attention: biased mlp.fc1 / fc2, the two ``norms`` (``kind``) and
    the two layer-scale vectors ``scales``."""
    _lin(out, f"{b}.mlp.fc1", inter, h)
    _lin(out, f"{b}.mlp.fc2", h, inter)
    for name in norms:
        _norm(out, f"{b}.{name}", h, kind)
    for name in scales:
        out.append(Tensor(f"{b}.{name}", (h,), "vision"))


def _norm_type(f: Fields, default=None) -> str:
    kind = f.str("norm_type") if default is None else f.str("norm_type", default, note="absent: the class default")
    if kind not in ("layer_norm", "rms_norm"):
        raise f.error("norm_type", f"must be 'layer_norm' or 'rms_norm', got {kind!r}")
    return kind


def _projector(out: list[Tensor], top: dict, where: str, family: str, defaults: dict | None, vh: int,
               text_hidden: int, prefix: str, names: tuple[str, str, str]) -> None:
    """LayerNorm(vh * int(1 / downsample_ratio)^2), Linear to the text hidden size, GELU, Linear."""
    f = Fields(top, where, defaults=defaults, family=family)
    ratio = f.float("downsample_ratio", CHAT_DEFAULTS["downsample_ratio"], note="absent: the class default")
    if not 1 / 64 <= ratio <= 1:
        raise f.error("downsample_ratio", f"must be between 1/64 and 1 (the pixel shuffle merges 1/ratio patches a "
                                          f"side), got {ratio}")
    merged = vh * int(1 / ratio) ** 2
    ln, l1, l2 = names
    _ln(out, f"{prefix}.{ln}", merged)
    _lin(out, f"{prefix}.{l1}", text_hidden, merged)
    _lin(out, f"{prefix}.{l2}", text_hidden, text_hidden)


def _hidden_heads(f: Fields, defaults: dict | None = None) -> tuple[int, int, int]:
    """hidden, layers, intermediate of a ViT; ``defaults``: a remote class's (no transformers table for it)."""
    from ..fields import REQUIRED

    def get(key: str, **kw) -> int:
        if defaults is None:
            return f.int(key, REQUIRED, **kw)
        return f.int(key, defaults[key], note="absent: InternVisionConfig's default (remote code)", **kw)

    h = get("hidden_size")
    heads = get("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide the vision hidden_size ({h})")
    return h, get("num_hidden_layers", hi=MAX_LAYERS), get("intermediate_size")


def internvl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InternVLForConditionalGeneration's vision tower and multi-modal projector (transformers' HF format)."""
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_tower_config(top, where, "internvl_vision", "InternVL",
                             "InternVLConfig builds its tower as internvl_vision (InternViT)")
    f = _vision_fields(vc, where, "internvl_vision")
    h, layers, inter = _hidden_heads(f)
    channels = f.int("num_channels", hi=64)
    ih, iw = _pair(f, "image_size", HF_IMAGE_SIZE)
    ph, pw = _pair(f, "patch_size", HF_PATCH_SIZE)
    patches = (iw // pw) * (ih // ph)
    if patches < 1:
        raise f.error("patch_size", "is larger than image_size")
    norm = _norm_type(f)
    qk_norm = f.bool("use_qk_norm")
    bias = f.bool("attention_bias")
    p = "model.vision_tower"
    out = [Tensor(f"{p}.embeddings.cls_token", (1, 1, h), "vision")]
    if f.bool("use_mask_token"):
        out.append(Tensor(f"{p}.embeddings.mask_token", (1, 1, h), "vision"))
    out.append(Tensor(f"{p}.embeddings.patch_embeddings.projection.weight", (h, channels, ph, pw), "vision"))
    out.append(Tensor(f"{p}.embeddings.patch_embeddings.projection.bias", (h,), "vision"))
    if f.bool("use_absolute_position_embeddings"):
        out.append(Tensor(f"{p}.embeddings.position_embeddings", (1, patches + 1, h), "vision"))
    for i in range(layers):
        b = f"{p}.encoder.layer.{i}"
        for name in ("q_proj", "k_proj", "v_proj"):
            out.append(Tensor(f"{b}.attention.{name}.weight", (h, h), "vision"))
            if bias:
                out.append(Tensor(f"{b}.attention.{name}.bias", (h,), "vision"))
        _lin(out, f"{b}.attention.projection_layer", h, h)
        if qk_norm:
            _qk_norms(out, f"{b}.attention", h)
        _mlp_norms_scales(out, b, h, inter, norm, ("layernorm_before", "layernorm_after"), ("lambda_1", "lambda_2"))
    if not f.bool("use_mean_pooling"):
        _ln(out, f"{p}.layernorm", h)
    _projector(out, top, where, "internvl", FAMILY_DEFAULTS.get("internvl"), h, text_hidden,
               "model.multi_modal_projector", ("layer_norm", "linear_1", "linear_2"))
    return tuple(out)


def intern_vit_tensors(top: dict, where: str, *, extra_heads: int = 0) -> tuple[list[Tensor], int]:
    """InternViT (remote code: the chat checkpoints' ``vision_model``) as the checkpoint stores it, and its width.
    ``extra_heads``: dummy heads the attention is padded with (NVLM-D's 7: its qkv, q / k norms and proj are that
    many heads wider)."""
    vc = vision_config_dict(top.get("vision_config"), where)
    f = Fields(vc, f"{where} (vision_config)", family="intern_vit_6b")
    note = "absent: InternVisionConfig's default (remote code)"
    d = INTERN_VIT_DEFAULTS
    h, layers, inter = _hidden_heads(f, d)
    width = h
    if extra_heads:
        heads = f.int("num_attention_heads", d["num_attention_heads"], note=note)
        width = (heads + extra_heads) * (h // heads)
    image = f.int("image_size", d["image_size"], hi=1 << 16, note=note)
    patch = f.int("patch_size", d["patch_size"], hi=1 << 16, note=note)
    if patch > image:
        raise f.error("patch_size", f"({patch}) is larger than image_size ({image})")
    qkv_bias = f.bool("qkv_bias", d["qkv_bias"], note=note)
    qk_norm = f.bool("qk_normalization", d["qk_normalization"], note=note)
    norm = _norm_type(f, d["norm_type"])
    p = "vision_model"
    out = [Tensor(f"{p}.embeddings.class_embedding", (1, 1, h), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.weight", (h, 3, patch, patch), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.bias", (h,), "vision"),
           Tensor(f"{p}.embeddings.position_embedding", (1, (image // patch) ** 2 + 1, h), "vision")]
    for i in range(layers):
        b = f"{p}.encoder.layers.{i}"
        out.append(Tensor(f"{b}.attn.qkv.weight", (3 * width, h), "vision"))
        if qkv_bias:
            out.append(Tensor(f"{b}.attn.qkv.bias", (3 * width,), "vision"))
        if qk_norm:
            _qk_norms(out, f"{b}.attn", width)
        _lin(out, f"{b}.attn.proj", h, width)
        _mlp_norms_scales(out, b, h, inter, norm, ("norm1", "norm2"), ("ls1", "ls2"))
    return out, h


def internvl_chat_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InternVLChatModel's ``vision_model`` (InternViT, remote code) and ``mlp1``, as the checkpoint stores them."""
    for key in ("use_backbone_lora", "use_llm_lora"):
        if top.get(key):  # published checkpoints say 0 (their LoRA merged); a rank wraps LoRA adapters around layers
            raise UnsupportedModelError(f"{where}: field '{key}' ({top[key]!r}) adds LoRA adapters InternVLChatModel "
                                        "wraps around its layers; they are not modelled",
                                        "published InternVL checkpoints set it to 0")
    out, h = intern_vit_tensors(top, where)
    _projector(out, top, where, "internvl_chat", None, h, text_hidden, "mlp1", ("0", "1", "3"))
    return tuple(out)


def chat_text_config(cfg: dict, where: str) -> dict:
    """InternVLChatConfig's language model: ``llm_config``, its model_type the one its ``architectures[0]`` builds
    (the remote config picks the class by architecture), its own tie_word_embeddings deciding lm_head's tying."""
    llm = required_sub_config(cfg, "llm_config", where,
                              "an internvl_chat config names its language model's fields in llm_config")
    text = dict(llm)
    arch = llm.get("architectures")
    mt = llm.get("model_type")
    if arch is not None:
        if not (isinstance(arch, list) and arch and isinstance(arch[0], str)):
            raise ConfigError(f"{where}: field 'llm_config.architectures' must be a non-empty list of class names")
        if arch[0] == "InternLM2VEForCausalLM":
            raise UnsupportedModelError(f"{where}: Mono-InternVL (llm_config {arch[0]}: visual experts inside the "
                                        "language model, a patch-embedding tower) is not modelled",
                                        "InternVL's ViT + MLP-projector checkpoints are")
        built = LLM_ARCHITECTURES.get(arch[0])
        if built is None:
            raise UnsupportedModelError(f"{where}: llm_config architecture '{arch[0]}' is not one InternVLChatConfig "
                                        "builds", f"it builds {', '.join(sorted(LLM_ARCHITECTURES))}")
        if mt is not None and mt != built:
            raise ConfigError(f"{where}: field 'llm_config.model_type' ({mt!r}) disagrees with its architectures "
                              f"({arch[0]}, built as {built})")
        text["model_type"] = built
    elif not isinstance(mt, str):
        raise ConfigError(f"{where}: field 'llm_config' names neither architectures nor model_type",
                          "InternVLChatConfig builds the language model by llm_config.architectures[0]")
    if "tie_word_embeddings" not in text:
        from ..family_defaults import FAMILY_DEFAULTS

        # the llm_config class's default, never the wrapper's flag (InternLM2Config, remote code: untied)
        tie = FAMILY_DEFAULTS.get(text["model_type"], {}).get("tie_word_embeddings", False)
        text["tie_word_embeddings"] = tie if isinstance(tie, bool) else False
    return text
