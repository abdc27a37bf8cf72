"""rednote-hilab dots.ocr (``dots_ocr``, remote code: the hub's configuration_dots.py / modeling_dots_ocr.py /
modeling_dots_vision.py; vLLM's vllm/model_executor/models/dots_ocr.py serves it): a flat Qwen2 config (DotsOCRConfig
subclasses Qwen2Config; the language model is Qwen2ForCausalLM) with its own vision tower in ``vision_config``
(DotsVisionConfig), counted whole.

Vision (``vision_tower``, DotsVisionTransformer), with E = embed_dim, I = intermediate_size, m = spatial_merge_size:

- ``patch_embed.patchifier``: a biased Conv2d (num_channels -> E, patch x patch) and an RMSNorm (E);
- ``num_hidden_layers`` blocks: RMSNorm ``norm1``, fused ``attn.qkv`` (E -> 3E) and ``attn.proj`` (E -> E), RMSNorm
  ``norm2``, a SwiGLU MLP ``fc1`` / ``fc3`` (E -> I) and ``fc2`` (I -> E); every Linear biased by ``use_bias``
  (false in dots.ocr);
- ``post_trunk_norm``, an RMSNorm (E) when ``post_norm``;
- ``merger`` (PatchMerger): LayerNorm ``ln_q`` (E, weight and bias), biased ``mlp.0`` (E·m² -> E·m²) and ``mlp.2``
  (E·m² -> vision hidden_size, the language model's width).

The rotary embedding is a buffer. DotsVisionConfig's defaults (embed_dim 1536, 42 layers, 12 heads, intermediate 4224,
patch 14, merge 2, 3 channels, no biases, post_norm) fill absent fields.

rednote-hilab/dots.ocr: 3,039,193,600 parameters (language model 1,777,102,336, vision 1,262,091,264), the
checkpoint's 3.04B (the model card: a 1.7B language model and a 1.2B vision encoder).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import vision_config_dict

#: DotsVisionConfig.__init__ defaults (configuration_dots.py; vLLM's transformers_utils/configs/dotsocr.py)
DOTS_VISION_DEFAULTS = {"embed_dim": 1536, "hidden_size": 1536, "intermediate_size": 4224, "num_hidden_layers": 42,
                        "num_attention_heads": 12, "num_channels": 3, "patch_size": 14, "spatial_merge_size": 2,
                        "temporal_patch_size": 1, "rms_norm_eps": 1e-5, "use_bias": False, "post_norm": True}


def dots_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The vision tower and its merger (kind ``vision``), as DotsVisionTransformer builds them."""
    vc = vision_config_dict(top.get("vision_config"), where)
    f = Fields(vc, f"{where} (vision_config)", defaults=DOTS_VISION_DEFAULTS, nested=True, family="dots_vit")
    e = f.int("embed_dim")
    heads = f.int("num_attention_heads")
    if e % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide embed_dim ({e})")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    channels = f.int("num_channels", hi=64)
    patch = f.int("patch_size", hi=1 << 12)
    merge = f.int("spatial_merge_size", hi=64)
    out_dim = f.int("hidden_size")
    bias = f.bool("use_bias")
    p = "vision_tower"
    v = "vision"

    def linear(name: str, n_out: int, n_in: int, biased: bool) -> list[Tensor]:
        return [Tensor(f"{name}.weight", (n_out, n_in), v)] + ([Tensor(f"{name}.bias", (n_out,), v)] if biased else [])

    out = [Tensor(f"{p}.patch_embed.patchifier.proj.weight", (e, channels, patch, patch), v),
           Tensor(f"{p}.patch_embed.patchifier.proj.bias", (e,), v),
           Tensor(f"{p}.patch_embed.patchifier.norm.weight", (e,), v)]
    for i in range(layers):
        b = f"{p}.blocks.{i}"
        out += [Tensor(f"{b}.norm1.weight", (e,), v), *linear(f"{b}.attn.qkv", 3 * e, e, bias),
                *linear(f"{b}.attn.proj", e, e, bias), Tensor(f"{b}.norm2.weight", (e,), v),
                *linear(f"{b}.mlp.fc1", inter, e, bias), *linear(f"{b}.mlp.fc3", inter, e, bias),
                *linear(f"{b}.mlp.fc2", e, inter, bias)]
    if f.bool("post_norm"):
        out.append(Tensor(f"{p}.post_trunk_norm.weight", (e,), v))
    wide = e * merge * merge
    out += [Tensor(f"{p}.merger.ln_q.weight", (e,), v), Tensor(f"{p}.merger.ln_q.bias", (e,), v),
            *linear(f"{p}.merger.mlp.0", wide, wide, True), *linear(f"{p}.merger.mlp.2", out_dim, wide, True)]
    return tuple(out)
