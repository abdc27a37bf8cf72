"""Vision encoders of multimodal wrappers whose transformers causal-LM class builds them (Gemma 3).

Their parameters count in ``params.total`` (category ``vision``) and their weights in memory, as
``AutoModelForCausalLM`` builds them; they take no part in a text decode step, so the trace and the
FLOP counts leave them out.

SigLIP vision tower (``siglip_vision_model``): a patch-embedding conv with bias, learned positions
(one per patch), ``num_hidden_layers`` pre-LayerNorm blocks (q, k, v, out projections and fc1/fc2, all
with biases), a final LayerNorm, and — when ``vision_use_head`` — an attention-pooling head (probe,
``nn.MultiheadAttention``, LayerNorm, MLP). Gemma 3's projector: ``mm_input_projection_weight``
(vision hidden × text hidden) and an RMSNorm over the vision hidden size.
"""

from __future__ import annotations

from .errors import ConfigError
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


def siglip_tensors(vision_config: object, where: str, prefix: str = "model.vision_tower.vision_model") -> list[Tensor]:
    from .family_defaults import FAMILY_DEFAULTS

    if vision_config is None:
        vision_config = {}
    if not isinstance(vision_config, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    f = Fields(vision_config, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get("siglip_vision_model"),
               nested=True, family="siglip_vision_model")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    channels = f.int("num_channels", hi=64)
    image_area = _side(f, "image_size")
    patch_area = _side(f, "patch_size")
    patches = image_area // patch_area
    if patches < 1:
        raise f.error("patch_size", "is larger than image_size")
    patch = int(round(patch_area ** 0.5))
    out: list[Tensor] = [
        Tensor(f"{prefix}.embeddings.patch_embedding.weight", (h, channels, patch, patch) if patch * patch == patch_area
               else (h, channels, patch_area), "vision"),
        Tensor(f"{prefix}.embeddings.patch_embedding.bias", (h,), "vision"),
        Tensor(f"{prefix}.embeddings.position_embedding.weight", (patches, h), "vision"),
    ]
    for i in range(layers):
        p = f"{prefix}.encoder.layers.{i}"
        _ln(out, f"{p}.layer_norm1", h)
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _lin(out, f"{p}.self_attn.{name}", h, h)
        _ln(out, f"{p}.layer_norm2", h)
        _lin(out, f"{p}.mlp.fc1", inter, h)
        _lin(out, f"{p}.mlp.fc2", h, inter)
    _ln(out, f"{prefix}.post_layernorm", h)
    if f.bool("vision_use_head"):
        out.append(Tensor(f"{prefix}.head.probe", (1, 1, h), "vision"))
        out.append(Tensor(f"{prefix}.head.attention.in_proj_weight", (3 * h, h), "vision"))
        out.append(Tensor(f"{prefix}.head.attention.in_proj_bias", (3 * h,), "vision"))
        _lin(out, f"{prefix}.head.attention.out_proj", h, h)
        _ln(out, f"{prefix}.head.layernorm", h)
        _lin(out, f"{prefix}.head.mlp.fc1", inter, h)
        _lin(out, f"{prefix}.head.mlp.fc2", h, inter)
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
