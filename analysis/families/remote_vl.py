"""Remote-code vision-language wrappers around a DeepSeek MoE language model, counted as vLLM builds them (no
transformers class: vllm/model_executor/models/kimi_vl.py + moonvit.py, deepseek_vl2.py, and their configs in
vllm/transformers_utils/configs/).

- Kimi-VL (``kimi_vl``: moonshotai/Kimi-VL-A3B-Instruct / -Thinking): ``KimiVLConfig`` builds ``text_config`` as
  transformers' ``DeepseekV2Config`` (whatever its model_type says: absent fields take V2's defaults) and vLLM
  serves it with ``DeepseekV2ForCausalLM`` (MLA, DeepSeek MoE; ``topk_method: noaux_tc`` adds the routers'
  ``e_score_correction_bias``, as DeepSeek V3). The tower is MoonViT (``MoonViTConfig`` defaults: patch 14, 64 x 64
  learned positions, 16 heads, 27 layers, hidden 1152, intermediate 4304, merge kernel (2, 2)): a biased Conv2d
  patch embed, a (init_pos_emb_height, init_pos_emb_width, hidden) position grid, blocks of two LayerNorms, a
  biased fused ``wqkv`` and ``wo``, a biased fc0 / fc1 MLP (2D RoPE: no parameters), a final LayerNorm. The
  projector: ``pre_norm`` LayerNorm over the vision hidden, ``linear_1`` (hidden·kh·kw square) and ``linear_2``
  (→ text hidden), both biased. Kimi K2.5's MoonViT (analysis/vision_wrappers.py) has the same shapes under other
  field names and a projector norm over ``projection_hidden_size``.
- DeepSeek-VL2 (``deepseek_vl_v2``: deepseek-ai/deepseek-vl2 / -small / -tiny): the language model is
  ``language_config`` read as a ``DeepseekV2Config`` (transformers' defaults, but DeepSeek-VL2's own class's 30
  layers, which deepseek-vl2's config leaves out, and no default expert counts); vLLM picks DeepSeek-V3's layout for
  ``topk_method: noaux_tc``, DeepSeek-MoE v1's (MHA, no MLA) for ``use_mla: false`` (the tiny model), DeepSeek-V2's
  otherwise. The tower is timm's ``vit_so400m_patch14_siglip_384`` (vLLM creates it by that name; the config's
  vision_config describes the same: width, layers, heads, mlp_ratio, patch_size, image_size): SigLIP's shapes with
  its ``map`` attention-pooling head (kept in the module and the checkpoint: ``attn_pool``), counted with
  ``siglip_tensors``. The projector (``downsample_mlp_gelu``): Linear(input_dim·r², n_embed·mlp_ratio), depth - 2
  hidden Linears, Linear(→ n_embed), all biased; ``image_newline`` and ``view_seperator`` (n_embed each, 2D tile tag).
  DeepSeek-OCR checkpoints (model_type deepseek_vl_v2 too, architectures DeepseekOCR*): the same language model,
  SAM ViT-B + CLIP-L towers and a linear projector (analysis/families/deepseek_ocr.py).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from ..vision import _lin, _ln, siglip_tensors, vision_config_dict

#: MoonViTConfig's defaults (vLLM vllm/transformers_utils/configs/moonvit.py, from the hub's configuration_kimi_vl.py)
MOONVIT_DEFAULTS = {"patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64, "num_attention_heads": 16,
                    "num_hidden_layers": 27, "hidden_size": 1152, "intermediate_size": 4304,
                    "merge_kernel_size": [2, 2]}
#: DeepSeek-VL2's VisionEncoderConfig / MlpProjectorConfig defaults (vLLM configs/deepseek_vl2.py)
DSVL2_VISION_DEFAULTS = {"image_size": 384, "patch_size": 16, "width": 1024, "layers": 24, "heads": 16,
                         "mlp_ratio": 4, "global_pool": "map", "class_token": False}
DSVL2_PROJECTOR_DEFAULTS = {"projector_type": "downsample_mlp_gelu", "input_dim": 1152, "n_embed": 2048, "depth": 2,
                            "mlp_ratio": 1, "downsample_ratio": 2, "token_pooling": False}


def deepseek_v2_text(text: dict, where: str, mla_default: bool = True, remote: bool = False) -> dict:
    """A language-model config that vLLM reads as transformers' DeepseekV2Config: absent fields take that class's
    defaults (filled in here, so the builder chosen below does not apply its own class's), and the model_type is
    the layout vLLM builds from it: deepseek_v3 for noaux_tc routing (the correction bias), deepseek (DeepSeek-MoE
    v1: MHA) for use_mla false, deepseek_v2 otherwise."""
    from ..family_defaults import FAMILY_DEFAULTS

    out = dict(text)
    defaults = dict(FAMILY_DEFAULTS["deepseek_v2"])
    if remote:
        # DeepSeek-VL2's own DeepseekV2Config (its configuration_deepseek.py, as the checkpoints were saved):
        # 30 layers (transformers' 32; deepseek-vl2's language_config leaves it out: 27.5B published needs 30), no
        # default expert counts (None: a dense model, which no checkpoint is, so they are required here)
        defaults["num_hidden_layers"] = 30
        for k in ("n_routed_experts", "n_shared_experts"):
            if out.get(k) is None:
                raise ConfigError(f"{where}: required field '{k}' is missing",
                                  "DeepSeek-VL2's DeepseekV2Config has no default expert count (None)")
    for k, v in defaults.items():
        if k not in out:  # (an explicit null stays null, as the config class keeps it)
            out[k] = v
    method = out.get("topk_method")
    mla = out.get("use_mla", mla_default)
    if not isinstance(mla, bool):
        raise ConfigError(f"{where}: field 'use_mla' must be true or false, got {short(mla)}")
    if not mla:
        out["model_type"] = "deepseek"  # vLLM DeepseekForCausalLM: Llama attention + DeepSeek MoE
        out.pop("head_dim", None)  # hidden / heads (the qk_*_head_dim fields are unused, 0 in deepseek-vl2-tiny)
    elif method == "noaux_tc":
        out["model_type"] = "deepseek_v3"
        out.setdefault("num_nextn_predict_layers", 0)  # DeepseekV2Config has no MTP layers
        out.setdefault("num_mtp_layers", 0)
        for k in ("n_group", "topk_group"):
            if out.get(k) is None:
                out[k] = 1  # DeepseekV2Config's None: no group limit (vLLM: one group)
    else:
        out["model_type"] = "deepseek_v2"
    return out


# ---- Kimi-VL -------------------------------------------------------------------------------------


def kimi_vl_text_config(cfg: dict, where: str) -> dict:
    text = cfg.get("text_config")
    if text is None:
        text = {}
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields")
    mt = text.get("model_type", "deepseek_v3")
    if mt not in ("deepseek_v2", "deepseek_v3"):
        raise UnsupportedModelError(f"{where}: kimi_vl with text_config.model_type {short(mt)} is not modelled",
                                    "KimiVLConfig reads text_config as DeepseekV2Config (deepseek_v2 / deepseek_v3)")
    return deepseek_v2_text(text, f"{where} (text_config)", mla_default=True)


def kimi_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    out, h, merged = moonvit_tower(top, where, "kimi_vl", "vision_tower")
    q = "multi_modal_projector"
    _ln(out, f"{q}.pre_norm", h)
    _lin(out, f"{q}.linear_1", merged, merged)
    _lin(out, f"{q}.linear_2", text_hidden, merged)
    return tuple(out)


def moonvit_tower(top: dict, where: str, wrapper: str, p: str) -> tuple[list[Tensor], int, int]:
    """The MoonViT tower of ``top``'s vision_config under the prefix ``p`` (no projector), its hidden size and the
    width of a merged patch (hidden x merge_kernel_size)."""
    vc = vision_config_dict(top.get("vision_config"), where)
    mt = vc.get("model_type", "moonvit")
    if mt != "moonvit":
        raise UnsupportedModelError(f"{where}: {wrapper}'s vision tower {short(mt)} is not one we can count",
                                    "modelled here: moonvit")
    f = Fields(vc, f"{where} (vision_config)", defaults=MOONVIT_DEFAULTS, nested=True, family="moonvit")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads or (h // heads) % 4:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h}) into heads of a multiple of 4 "
                                             "(MoonViT's 2D RoPE)")
    patch = f.raw("patch_size")
    if isinstance(patch, list) and len(patch) == 2:
        ph, pw = (f.int_list("patch_size", hi=4096) or [0, 0])
        if ph < 1 or pw < 1:
            raise f.error("patch_size", "must be positive")
    else:
        ph = pw = f.int("patch_size", hi=4096)
    merge = f.int_list("merge_kernel_size", hi=64)
    if merge is None:
        merge = f.derived("merge_kernel_size", [2, 2], "absent: MoonViTConfig's default (2, 2)")
    if len(merge) != 2 or min(merge) < 1:
        raise f.error("merge_kernel_size", "must be two positive integers")
    merged = h * merge[0] * merge[1]
    out = [Tensor(f"{p}.patch_embed.proj.weight", (h, 3, ph, pw), "vision"),
           Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision"),
           Tensor(f"{p}.patch_embed.pos_emb.weight",
                  (f.int("init_pos_emb_height", hi=1 << 16), f.int("init_pos_emb_width", hi=1 << 16), h), "vision")]
    for i in range(layers):
        b = f"{p}.encoder.blocks.{i}"
        _ln(out, f"{b}.norm0", h)
        _ln(out, f"{b}.norm1", h)
        _lin(out, f"{b}.wqkv", 3 * h, h)
        _lin(out, f"{b}.wo", h, h)
        _lin(out, f"{b}.mlp.fc0", inter, h)
        _lin(out, f"{b}.mlp.fc1", h, inter)
    _ln(out, f"{p}.encoder.final_layernorm", h)
    return out, h, merged


# ---- DeepSeek-VL2 --------------------------------------------------------------------------------


def _dsvl2_sub(top: dict, where: str, key: str) -> dict:
    sub = top.get(key)
    if sub is None:
        return {}
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object")
    return sub


def deepseek_vl2_text_config(cfg: dict, where: str) -> dict:
    text = cfg.get("language_config")
    if text is None:
        text = {}  # DeepseekVLV2Config: DeepseekV2Config(**{}) — the class defaults
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'language_config' must be an object of the language model's fields")
    mt = text.get("model_type", "deepseek_v2")
    if mt not in ("deepseek_v2", "deepseek_v3", "deepseek"):
        raise UnsupportedModelError(f"{where}: deepseek_vl_v2 with language_config.model_type {short(mt)} is not "
                                    "modelled", "DeepseekVLV2Config reads language_config as DeepseekV2Config")
    return deepseek_v2_text(text, f"{where} (language_config)", mla_default=True, remote=True)


def deepseek_vl2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from .deepseek_ocr import deepseek_ocr_vision, is_ocr

    if is_ocr(top):  # DeepSeek-OCR: SAM ViT-B + CLIP-L towers, a linear projector (analysis/families/deepseek_ocr.py)
        return deepseek_ocr_vision(top, text_hidden, where)
    vc = _dsvl2_sub(top, where, "vision_config")
    f = Fields(vc, f"{where} (vision_config)", defaults=DSVL2_VISION_DEFAULTS, nested=True,
               family="deepseek_vl_v2_vision")
    width = f.int("width")
    ratio = f.float("mlp_ratio")
    if f.str("global_pool") not in ("map", ""):
        raise f.error("global_pool", "must be 'map' (the SigLIP tower's attention pooling) or ''")
    if f.bool("class_token"):
        raise f.error("class_token", "is not modelled (SigLIP has no class token)")
    # SigLIP's shapes in its transformers names (the counts equal timm's VisionTransformer: mlp hidden
    # int(width * mlp_ratio), (image_size // patch_size)² positions, attn_pool = SigLIP's head)
    tower = siglip_tensors({"hidden_size": width, "intermediate_size": int(width * ratio),
                            "num_hidden_layers": f.int("layers", hi=MAX_LAYERS),
                            "num_attention_heads": f.int("heads"), "image_size": f.int("image_size", hi=1 << 16),
                            "patch_size": f.int("patch_size", hi=4096), "num_channels": 3,
                            "vision_use_head": f.str("global_pool") == "map"},
                           where, "vision", family="siglip_vision_model")
    if width % f.int("heads"):
        raise f.error("heads", f"({f.int('heads')}) must divide width ({width})")
    pc = _dsvl2_sub(top, where, "projector_config")
    g = Fields(pc, f"{where} (projector_config)", defaults=DSVL2_PROJECTOR_DEFAULTS, nested=True,
               family="deepseek_vl_v2_projector")
    kind = g.str("projector_type")
    if kind != "downsample_mlp_gelu":
        raise UnsupportedModelError(f"{where}: deepseek_vl_v2 projector_type {short(kind)} is not modelled",
                                    "vLLM builds only downsample_mlp_gelu")
    if g.bool("token_pooling"):
        raise g.error("token_pooling", "is not supported (vLLM asserts it is false)")
    n_embed = g.int("n_embed")
    if n_embed != text_hidden:
        raise g.error("n_embed", f"({n_embed}) must equal the language model's hidden_size ({text_hidden})")
    r = g.int("downsample_ratio", hi=64)
    hidden = n_embed * g.int("mlp_ratio", hi=64)
    depth = g.int("depth", hi=64)
    if depth < 2:
        raise g.error("depth", "must be at least 2 (vLLM's MlpProjector: a first and a last Linear)")
    tile = top.get("tile_tag", "2D")
    if tile != "2D":
        raise UnsupportedModelError(f"{where}: deepseek_vl_v2 tile_tag {short(tile)} is not modelled",
                                    "vLLM supports only the 2D tile tag")
    out = list(tower)
    _lin(out, "projector.layers.0", hidden, g.int("input_dim") * r * r)
    for i in range(1, depth - 1):
        _lin(out, f"projector.layers.{2 * i}", hidden, hidden)
    _lin(out, f"projector.layers.{2 * (depth - 1)}", n_embed, hidden)
    out.append(Tensor("image_newline", (n_embed,), "vision"))
    out.append(Tensor("view_seperator", (n_embed,), "vision"))
    return tuple(out)
