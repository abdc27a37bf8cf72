"""DeepSeek-OCR (deepseek-ai/DeepSeek-OCR: model_type ``deepseek_vl_v2``, architectures ``DeepseekOCRForCausalLM``),
counted as vLLM's vllm/model_executor/models/deepseek_ocr.py + deepencoder.py builds it (the hub's
modeling_deepseekocr.py + deepencoder.py build the same modules; published ~3.3B: its single bf16 safetensors file
is 6,672,212,480 bytes = 3,336,106,240 parameters).

- The language model is ``language_config`` read as DeepSeek-VL2's is (``remote_vl.deepseek_v2_text``): with
  ``use_mla: false`` vLLM's DeepseekForCausalLM, Llama attention + DeepSeek MoE (DeepSeek-3B-MoE: 12 layers, 64
  routed experts top-6, 2 shared, the first layer dense).
- The towers do not read ``vision_config`` (vLLM's ``build_sam_vit_b()`` and a fixed ``CLIPVisionConfig``; the
  hub's deepencoder hard-codes them too), so they are counted at those fixed shapes:
  SAM ViT-B (``sam_model``): a biased 16x16 patch conv 3 -> 768, a (1, 64, 64, 768) absolute position table, 12
  blocks (LayerNorms ``norm1`` / ``norm2``, biased fused ``attn.qkv`` and ``attn.proj``, decomposed relative
  positions ``rel_pos_h`` / ``rel_pos_w`` of (2·n - 1, 64) with n = 64 on the global blocks 2, 5, 8, 11 and 14 (the
  window) elsewhere, a biased GELU ``mlp.lin1`` / ``lin2`` of 3072), the neck (bias-free 1x1 conv 768 -> 256,
  LayerNorm2d, bias-free 3x3 conv 256 -> 256, LayerNorm2d) and two bias-free stride-2 3x3 convs ``net_2`` (256 ->
  512) and ``net_3`` (512 -> 1024).
  CLIP-L/14-224 (``vision_model``): class embedding, a bias-free 14x14 patch conv (in the checkpoint, unused: SAM's
  features replace the patches), 257 positions, ``pre_layrnorm``, 24 CLIP layers of width 1024 with a fused biased
  ``self_attn.qkv_proj``, biased ``out_proj``, two LayerNorms, a biased fc1 / fc2 MLP of 4096; no post-LayerNorm.
- ``projector_config`` (``projector_type: linear``): one biased Linear(``input_dim`` = 1024 CLIP + 1024 SAM
  channels, ``n_embed``); ``image_newline`` and ``view_seperator`` (n_embed each, 2D tile tag).
Tensor names are the checkpoint's (``model.`` prefix; vLLM strips it).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import short
from ..spec import Tensor
from ..vision import _lin, _ln

#: vLLM's build_sam_vit_b() (deepencoder.py): width, depth, heads, global-attention blocks, window, image, patch
SAM_B = dict(width=768, depth=12, heads=12, global_blocks=(2, 5, 8, 11), window=14, image=1024, patch=16, mlp=3072,
             neck=256, net_2=512, net_3=1024)
#: vLLM deepseek_ocr.py's CLIPVisionConfig for the CLIP-L tower
CLIP_L = dict(width=1024, layers=24, intermediate=4096, image=224, patch=14)


def is_ocr(top: dict) -> bool:
    arch = top.get("architectures") or []
    return isinstance(arch, list) and any(isinstance(a, str) and a.startswith("DeepseekOCR") for a in arch)


def sam_b_tensors(prefix: str = "model.sam_model") -> list[Tensor]:
    s = SAM_B
    d, hd, grid = s["width"], s["width"] // s["heads"], s["image"] // s["patch"]
    out = [Tensor(f"{prefix}.patch_embed.proj.weight", (d, 3, s["patch"], s["patch"]), "vision"),
           Tensor(f"{prefix}.patch_embed.proj.bias", (d,), "vision"),
           Tensor(f"{prefix}.pos_embed", (1, grid, grid, d), "vision")]
    for i in range(s["depth"]):
        p = f"{prefix}.blocks.{i}"
        n = grid if i in s["global_blocks"] else s["window"]
        _ln(out, f"{p}.norm1", d)
        _lin(out, f"{p}.attn.qkv", 3 * d, d)
        _lin(out, f"{p}.attn.proj", d, d)
        out.append(Tensor(f"{p}.attn.rel_pos_h", (2 * n - 1, hd), "vision"))
        out.append(Tensor(f"{p}.attn.rel_pos_w", (2 * n - 1, hd), "vision"))
        _ln(out, f"{p}.norm2", d)
        _lin(out, f"{p}.mlp.lin1", s["mlp"], d)
        _lin(out, f"{p}.mlp.lin2", d, s["mlp"])
    ch = s["neck"]
    out.append(Tensor(f"{prefix}.neck.0.weight", (ch, d, 1, 1), "vision"))
    _ln(out, f"{prefix}.neck.1", ch)
    out.append(Tensor(f"{prefix}.neck.2.weight", (ch, ch, 3, 3), "vision"))
    _ln(out, f"{prefix}.neck.3", ch)
    out.append(Tensor(f"{prefix}.net_2.weight", (s["net_2"], ch, 3, 3), "vision"))
    out.append(Tensor(f"{prefix}.net_3.weight", (s["net_3"], s["net_2"], 3, 3), "vision"))
    return out


def clip_l_tensors(prefix: str = "model.vision_model") -> list[Tensor]:
    c = CLIP_L
    h, inter, patch = c["width"], c["intermediate"], c["patch"]
    out = [Tensor(f"{prefix}.embeddings.class_embedding", (h,), "vision"),
           Tensor(f"{prefix}.embeddings.patch_embedding.weight", (h, 3, patch, patch), "vision"),
           Tensor(f"{prefix}.embeddings.position_embedding.weight", ((c["image"] // patch) ** 2 + 1, h), "vision")]
    _ln(out, f"{prefix}.pre_layrnorm", h)
    for i in range(c["layers"]):
        p = f"{prefix}.transformer.layers.{i}"
        _ln(out, f"{p}.layer_norm1", h)
        _lin(out, f"{p}.self_attn.qkv_proj", 3 * h, h)
        _lin(out, f"{p}.self_attn.out_proj", h, h)
        _ln(out, f"{p}.layer_norm2", h)
        _lin(out, f"{p}.mlp.fc1", inter, h)
        _lin(out, f"{p}.mlp.fc2", h, inter)
    return out


def deepseek_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    if "DeepseekOCR2ForCausalLM" in (top.get("architectures") or []):
        # DeepSeek-OCR-2's hub format: DeepEncoder V2 (a Qwen2 encoder, no CLIP-L), whose shapes it does not spell out
        raise UnsupportedModelError(f"{where}: DeepSeek-OCR-2's remote-code format (architectures "
                                    "DeepseekOCR2ForCausalLM) is not read: its Qwen2 vision encoder's shapes are "
                                    "hard-coded in its modeling code, not in this config",
                                    "use transformers' format (model_type deepseek_ocr2, e.g. "
                                    "deepseek-community/DeepSeek-OCR-2's config.json), which planner counts exactly")
    pc = top.get("projector_config") or {}
    if not isinstance(pc, dict):
        raise ConfigError(f"{where}: field 'projector_config' must be an object")
    # absent fields take MlpProjectorConfig's defaults (downsample_mlp_gelu, input_dim 1152, n_embed 2048)
    kind = pc.get("projector_type", "downsample_mlp_gelu")
    if kind != "linear":
        raise UnsupportedModelError(f"{where}: DeepSeek-OCR projector_type {short(kind)} is not modelled",
                                    "DeepSeek-OCR's projector is 'linear' (one Linear)")
    feat = SAM_B["net_3"] + CLIP_L["width"]
    input_dim = pc.get("input_dim", 1152)
    if input_dim != feat:
        raise ConfigError(f"{where}: field 'projector_config.input_dim' ({short(input_dim)}) must be {feat}: the "
                          f"CLIP-L features ({CLIP_L['width']}) concatenated with SAM's ({SAM_B['net_3']})")
    n_embed = pc.get("n_embed", 2048)
    if n_embed != text_hidden:
        raise ConfigError(f"{where}: field 'projector_config.n_embed' ({short(n_embed)}) must equal the language "
                          f"model's hidden_size ({text_hidden})")
    tile = top.get("tile_tag", "2D")
    if tile != "2D":
        raise UnsupportedModelError(f"{where}: DeepSeek-OCR tile_tag {short(tile)} is not modelled",
                                    "vLLM supports only the 2D tile tag")
    out = sam_b_tensors() + clip_l_tensors()
    _lin(out, "model.projector.layers", text_hidden, feat)
    out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    out.append(Tensor("model.view_seperator", (text_hidden,), "vision"))
    return tuple(out)
