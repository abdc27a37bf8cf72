"""MiniMax-M3's language model (``minimax_m3_vl_text``, the text model of the ``minimax_m3_vl`` wrapper), as
transformers builds it (models/minimax_m3_vl/modular_minimax_m3_vl.py).

A MiniMax-M2 attention (bias-free q/k/v/o) with per-head q/k RMSNorms; every RMSNorm Gemma-style (``1 + w``);
per layer, by ``mlp_layer_types``, a dense MLP (``dense_intermediate_size``, gate and up fused in ``gate_up_proj``)
or a MoE block: stacked routed experts of ``intermediate_size``, MiniMax-M2's sigmoid router (its
``e_score_correction_bias`` a buffer, for the choice only; the top-k renormalised), the routed sum scaled by
``routed_scaling_factor`` and one shared expert (``shared_intermediate_size``, fused ``gate_up_proj``) added.
Every MLP runs the clamped SwiGLU of gpt-oss (``(up + 1) · gate · sigmoid(alpha · gate)``, swiglu_alpha /
swiglu_limit) on gate / up halves; transformers sets hidden_act to silu whatever the checkpoint says. RoPE covers
the first ``rotary_dim`` channels of each head, as the config documents (transformers 5.24's rotary table is
head_dim wide, its config setting no partial_rotary_factor from rotary_dim: no parameter depends on it).

Layers whose ``layer_types`` entry is ``"minimax_m3_sparse"`` add a lightning indexer (its own q / k
projections and norms, an indexer key cache) that selects blocks of keys for a block-sparse attention
(``analysis.mixers.block_sparse``). The checkpoint's legacy fields are read as
``MiniMaxM3VLTextConfig.__post_init__`` reads them: ``moe_layer_freq`` (a 0/1 list) for ``mlp_layer_types``,
``sparse_attention_config.sparse_attention_freq`` for ``layer_types`` and its ``sparse_*`` indexer fields.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import Fields
from ..mixers import BlockSparseAttention
from ..spec import GLU, MLP, ModelSpec, RouterKind
from . import decoder
from .common import Traits, per_layer_types

TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="head", norm_offset=1.0, windows="none",
                moe="mixtral", router=RouterKind.SIGMOID, shared_mlp_key="shared_intermediate_size",
                fused_gate_up=True, aliases=(("num_local_experts", ("num_experts",)),))

SPARSE = "minimax_m3_sparse"
#: the indexer's fields and their names in the checkpoint's sparse_attention_config
LEGACY_INDEX = {"index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim",
                "index_block_size": "sparse_block_size", "index_topk_blocks": "sparse_topk_blocks",
                "index_local_blocks": "sparse_local_block"}


def _legacy(f: Fields, n_layers: int) -> None:
    """Derive ``layer_types`` / ``mlp_layer_types`` from the checkpoint's legacy fields, as the config class does
    (a local copy of the config: the caller's dict is left alone)."""
    cfg = dict(f.cfg)
    sparse_cfg = cfg.get("sparse_attention_config") or {}
    if not isinstance(sparse_cfg, dict):
        raise f.error("sparse_attention_config", "must be an object")
    for flat, legacy in LEGACY_INDEX.items():  # the config class lets the legacy name win
        if legacy in sparse_cfg:
            cfg[flat] = f.derived(flat, sparse_cfg[legacy], f"from sparse_attention_config.{legacy}")
    if cfg.get("layer_types") is None and "sparse_attention_freq" in sparse_cfg:
        freq = sparse_cfg["sparse_attention_freq"]
        if not isinstance(freq, list):
            raise f.error("sparse_attention_config", "has a sparse_attention_freq that is not a list")
        cfg["layer_types"] = f.derived("layer_types", [SPARSE if x else "full_attention" for x in freq],
                                       "from sparse_attention_config.sparse_attention_freq")
    freq = cfg.get("moe_layer_freq")
    if cfg.get("mlp_layer_types") is None and isinstance(freq, list):
        cfg["mlp_layer_types"] = f.derived("mlp_layer_types", ["sparse" if x else "dense" for x in freq],
                                           "from moe_layer_freq")
    # MiniMaxM3VLTextConfig.__post_init__: the checkpoint's "swigluoai" is computed inline, hidden_act is silu
    if cfg.get("hidden_act") not in (None, "silu"):
        cfg["hidden_act"] = f.derived("hidden_act", "silu", f"{cfg['hidden_act']!r} read as transformers does: the "
                                      "clamped SwiGLU (swiglu_alpha, swiglu_limit) with silu as hidden_act")
    f.cfg = cfg


def build(f: Fields, model_type: str) -> ModelSpec:
    n_layers = f.int("num_hidden_layers")
    _legacy(f, n_layers)
    types = per_layer_types(f, "layer_types", n_layers, ("full_attention", SPARSE)) \
        if f.raw("layer_types") is not None else ["full_attention"] * n_layers
    spec = decoder.build(f, model_type, TRAITS)
    index = {}
    if SPARSE in types:
        index = dict(index_n_heads=f.int("index_n_heads"), index_head_dim=f.int("index_head_dim"),
                     index_block_size=f.int("index_block_size"), index_topk_blocks=f.int("index_topk_blocks"),
                     index_local_blocks=f.int("index_local_blocks", lo=0))
        heads = spec.layers[0].mixer.num_attention_heads
        if heads % index["index_n_heads"]:  # transformers repeats each selection over heads / index_n_heads heads
            raise f.error("index_n_heads", f"({index['index_n_heads']}) must divide num_attention_heads ({heads}): "
                                           "each index head's block selection serves a group of query heads")
    mlp_types = per_layer_types(f, "mlp_layer_types", n_layers, ("dense", "sparse")) \
        if f.raw("mlp_layer_types") is not None else ["sparse"] * n_layers
    dense = f.int("dense_intermediate_size") if "dense" in mlp_types else 0
    layers = []
    for layer, kind, attn in zip(spec.layers, mlp_types, types):
        if kind == "dense":
            layer = replace(layer, ffn=MLP(spec.hidden_size, dense, gated=True, bias=False, fused_gate_up=True,
                                           act=spec.hidden_act))
        if attn == SPARSE:
            m = layer.mixer
            layer = replace(layer, mixer=BlockSparseAttention(**{x.name: getattr(m, x.name) for x in fields(m)},
                                                              **index))
        layers.append(layer)
    num = replace(spec.numerics, glu=GLU.GPT_OSS, swiglu_alpha=f.float("swiglu_alpha"),
                  swiglu_limit=f.float("swiglu_limit"), routed_scaling_factor=f.float("routed_scaling_factor"))
    # the checkpoint's MTP modules: transformers builds none, and no public serving code read here gives their shapes
    n_mtp = max(f.int("num_mtp_modules", 0, lo=0, hi=64), f.int("num_nextn_predict_layers", 0, lo=0, hi=64))
    caveats = spec.caveats + ((f"the checkpoint's multi-token-prediction modules (num_mtp_modules / "
                               f"num_nextn_predict_layers: {n_mtp}) are not counted: transformers builds none and "
                               "their shapes are not modelled",) if n_mtp else ())
    return replace(spec, layers=tuple(layers), numerics=num, caveats=caveats)
