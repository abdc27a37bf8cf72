"""Qwen-VL (2023; Qwen/Qwen-VL, Qwen/Qwen-VL-Chat: model_type ``qwen`` with a ``visual`` block, remote code): Qwen-1's
language model (``remote.build_qwen``) plus the vision tower the hub's visual.py builds under
``transformer.visual`` (vLLM's vllm/model_executor/models/qwen_vl.py builds the same shapes), counted from
``visual`` = {image_size, patch_size, width, layers, heads, mlp_ratio, output_dim; n_queries 256 by default}:

- ``conv1``: a bias-free patch Conv2d 3 -> width (kernel = stride = patch_size); ``positional_embedding`` (256, width)
  (fixed 256 rows, interpolated to the grid at run time); ``ln_pre`` (LayerNorm, biased);
- ``layers`` x VisualAttentionBlock: ``ln_1`` / ``ln_2`` LayerNorms, ``attn.in_proj`` (3 x width, biased),
  ``attn.out_proj`` (biased), ``mlp.c_fc`` / ``mlp.c_proj`` (GELU, biased) of int(width x mlp_ratio);
- ``attn_pool`` (Resampler): ``pos_embed`` (n_queries, output_dim; a fixed 2-D sincos table kept as a Parameter, in
  the checkpoint), ``query`` (n_queries, output_dim), ``kv_proj`` (width -> output_dim, bias-free; identity when they
  agree), ``attn`` (nn.MultiheadAttention(output_dim, output_dim // 128): in_proj_weight / in_proj_bias, biased
  out_proj), ``ln_q`` / ``ln_kv``;
- ``ln_post`` (output_dim) and ``proj`` (output_dim, output_dim, a bare Parameter).

Qwen-VL-Chat: ViT 1,859,556,096 (the paper's 1.9B), adapter 76,054,528 (0.08B), Qwen-7B 7,721,324,544 (7.7B):
9,656,935,168 in all (the hub's 9.66B; the Qwen-VL paper's 9.6B).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, Tensor
from ..vision import _lin, _ln
from . import remote

#: visual.py VisionTransformer's n_queries default (Qwen-VL's configs do not set it)
N_QUERIES = 256
#: the Resampler's heads are output_dim // 128 (visual.py)
POOL_HEAD_DIM = 128


def _visual_tensors(visual: dict, where: str, text_hidden: int) -> tuple[Tensor, ...]:
    f = Fields(visual, f"{where} (visual)", family="qwen_vl")
    from ..fields import REQUIRED

    width = f.int("width", REQUIRED)
    layers = f.int("layers", REQUIRED, hi=MAX_LAYERS)
    heads = f.int("heads", REQUIRED)
    if width % heads:
        raise f.error("heads", f"({heads}) must divide width ({width})")
    ratio = f.float("mlp_ratio", REQUIRED)
    if not 0 < ratio <= 64:
        raise f.error("mlp_ratio", f"must be in (0, 64], got {ratio}")
    mlp = int(width * ratio)
    image = f.int("image_size", REQUIRED, hi=1 << 16)
    patch = f.int("patch_size", REQUIRED, hi=1 << 16)
    if patch > image:
        raise f.error("patch_size", f"({patch}) is larger than image_size ({image})")
    out_dim = f.int("output_dim", 512, note="absent: VisionTransformer's default")
    if out_dim != text_hidden:
        raise f.error("output_dim", f"({out_dim}) must equal the language model's hidden_size ({text_hidden}): the "
                                    "image features replace token embeddings")
    if out_dim % POOL_HEAD_DIM:
        raise f.error("output_dim", f"({out_dim}) must be a multiple of 128: the resampler has output_dim // 128 heads")
    nq = f.int("n_queries", N_QUERIES, note="absent: VisionTransformer's default")
    if int(nq ** 0.5) ** 2 != nq:
        raise f.error("n_queries", f"({nq}) must be a square: the resampler's queries are a grid")
    p = "transformer.visual"
    out = [Tensor(f"{p}.conv1.weight", (width, 3, patch, patch), "vision"),
           Tensor(f"{p}.positional_embedding", (256, width), "vision")]
    _ln(out, f"{p}.ln_pre", width)
    for i in range(layers):
        b = f"{p}.transformer.resblocks.{i}"
        _ln(out, f"{b}.ln_1", width)
        _lin(out, f"{b}.attn.in_proj", 3 * width, width)
        _lin(out, f"{b}.attn.out_proj", width, width)
        _ln(out, f"{b}.ln_2", width)
        _lin(out, f"{b}.mlp.c_fc", mlp, width)
        _lin(out, f"{b}.mlp.c_proj", width, mlp)
    a = f"{p}.attn_pool"
    out += [Tensor(f"{a}.pos_embed", (nq, out_dim), "vision"), Tensor(f"{a}.query", (nq, out_dim), "vision")]
    if width != out_dim:
        out.append(Tensor(f"{a}.kv_proj.weight", (out_dim, width), "vision"))
    out += [Tensor(f"{a}.attn.in_proj_weight", (3 * out_dim, out_dim), "vision"),
            Tensor(f"{a}.attn.in_proj_bias", (3 * out_dim,), "vision")]
    _lin(out, f"{a}.attn.out_proj", out_dim, out_dim)
    _ln(out, f"{a}.ln_q", out_dim)
    _ln(out, f"{a}.ln_kv", out_dim)
    _ln(out, f"{p}.ln_post", out_dim)
    out.append(Tensor(f"{p}.proj", (out_dim, out_dim), "vision"))
    return tuple(out)


def build(f: Fields, model_type: str) -> ModelSpec:
    """Qwen-1 (``remote.build_qwen``); with a ``visual`` block (Qwen-VL), its ViT and resampler in ``vision``."""
    spec = remote.build_qwen(f, model_type)
    visual = f.raw("visual")
    if visual is None:
        return spec
    if not isinstance(visual, dict):
        raise ConfigError(f"{f.where}: field 'visual' must be an object of the vision tower's fields")
    return replace(spec, vision=_visual_tensors(visual, f.where, spec.hidden_size),
                   caveats=spec.caveats + ("Qwen-VL: its ViT and resampler (transformer.visual) are counted in the "
                                           "parameters and weights, but take no part in the text decode trace",))
