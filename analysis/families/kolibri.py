"""Kolibri 1.1 (Aleph Alpha; transformers' ``kolibri1_1``, Kolibri1_1ForCausalLM), as transformers 5.25's
modeling_kolibri1_1.py builds it: Kolibri-1's block (``REGISTRY["kolibri1"]``: per-head q/k norms, sandwich norms,
sliding RoPE layers, a sigmoid router with a choice bias, an ungated-sum SwiGLU shared expert) with

- ``layer_types`` of ``"sliding_attention"`` and ``"indexed_attention"`` (absent: every fifth layer indexed): indexed
  layers are NoPE attention over the keys a weightless indexer selects (``analysis.mixers.indexed``);
- ``kv_source_layers``: an indexed layer reading an earlier indexed layer's K/V has no k_proj / v_proj / k_norm and no
  cache (absent: of the indexed layers, the 2nd, 3rd and 10th read the 1st's, the 7th to 9th the 6th's);
- ``index_layers``: the indexed layers that pick a new pool (absent: the 1st, 3rd, 4th and 6th indexed layers);
- a gated SiLU MLP of ``mlp_only_intermediate_size`` on ``mlp_only_layers`` (absent: layers 0 and 1), experts
  elsewhere.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import MAX_LAYERS, Fields
from ..mixers.indexed import IndexedAttention
from ..spec import MLP, ModelSpec
from . import decoder
from .common import per_layer_types

INDEXED, SLIDING = "indexed_attention", "sliding_attention"
#: Kolibri1_1Config.__post_init__: for each indexed layer (by order), the indexed layer whose K/V it reads
_DEFAULT_SOURCES = (0, 0, 0, 3, 4, 5, 5, 5, 5, 0)


def _sources(f: Fields, types: list[str], indexed: list[int]) -> list[int]:
    """``kv_source_layers``, checked as Kolibri1_1Config.validate_architecture does."""
    n = len(types)
    if f.raw("kv_source_layers") is None:
        if len(indexed) > len(_DEFAULT_SOURCES):
            raise f.error("kv_source_layers", f"is absent, but its default covers {len(_DEFAULT_SOURCES)} indexed "
                                              f"layers and there are {len(indexed)}: set it explicitly")
        sources = list(range(n))
        for layer, j in zip(indexed, _DEFAULT_SOURCES):
            sources[layer] = indexed[j]
        return f.derived("kv_source_layers", sources, "absent: Kolibri 1.1's layout")
    sources = f.int_list("kv_source_layers", n, lo=0, hi=MAX_LAYERS)
    for i, s in enumerate(sources):
        if types[i] == SLIDING and s != i:
            raise f.error("kv_source_layers", f"makes sliding layer {i} read layer {s}'s K/V")
        if s > i or sources[s] != s or types[s] != types[i]:
            raise f.error("kv_source_layers", f"makes layer {i} read layer {s}'s K/V, which is not an earlier layer "
                                              "of its type producing its own")
    return sources


def build(f: Fields, model_type: str) -> ModelSpec:
    from . import REGISTRY  # (the registry imports this module)

    traits = REGISTRY["kolibri1"]
    f.aliases = {**f.aliases, **dict(traits.aliases)}  # (num_local_experts, as Kolibri-1's row reads it)
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    if f.raw("layer_types") is None:
        types = f.derived("layer_types", [INDEXED if (i + 1) % 5 == 0 else SLIDING for i in range(n_layers)],
                          "absent: every fifth layer indexed, the others sliding")
    else:
        types = per_layer_types(f, "layer_types", n_layers, (INDEXED, SLIDING))
    indexed = [i for i, t in enumerate(types) if t == INDEXED]
    if f.raw("index_layers") is None:
        pools = f.derived("index_layers", [indexed[j] for j in (0, 2, 3, 5) if j < len(indexed)],
                          "absent: the 1st, 3rd, 4th and 6th indexed layers")
    else:
        pools = f.int_list("index_layers", lo=0, hi=MAX_LAYERS) or []
        if sorted(set(pools)) != pools or not set(pools) <= set(indexed) or (indexed and indexed[0] not in pools):
            raise f.error("index_layers", f"({pools}) must be increasing indexed layers, the first indexed layer "
                                          "among them")
    sources = _sources(f, types, indexed)
    if f.raw("mlp_only_layers") is None:
        only = f.derived("mlp_only_layers", [i for i in (0, 1) if i < n_layers], "absent: layers 0 and 1")
    else:
        only = f.int_list("mlp_only_layers", lo=0, hi=n_layers - 1) or []
    # Kolibri-1's block over the same fields, its indexed layers read as Kolibri-1's full (NoPE) layers
    f.cfg = dict(f.cfg, layer_types=["full_attention" if t == INDEXED else t for t in types], mlp_only_layers=only)
    spec = decoder.build(f, model_type, traits)
    index = {}
    if indexed:
        index = dict(index_topk=f.int("index_topk"), index_pool_size=f.int("index_pool_size"),
                     index_compression=f.int("index_compression"), index_num_heads=f.int("index_num_heads"),
                     index_num_local_tokens=f.int("index_num_local_tokens", lo=0),
                     index_num_sink_tokens=f.int("index_num_sink_tokens", lo=0))
        if index["index_pool_size"] % index["index_compression"]:
            raise f.error("index_pool_size", "must be a multiple of index_compression")
        m = spec.layers[indexed[0]].mixer
        if index["index_num_heads"] > m.num_attention_heads // m.num_key_value_heads:
            raise f.error("index_num_heads", "must be at most the number of query heads of key head 0")
    dense = MLP(spec.hidden_size, f.int("mlp_only_intermediate_size"), act=spec.hidden_act) if only else None
    layers = []
    for i, layer in enumerate(spec.layers):
        if i in only:
            layer = replace(layer, ffn=dense)
        if types[i] == INDEXED:
            m = layer.mixer
            base = {x.name: getattr(m, x.name) for x in fields(m)}
            base.update(index, kv_shared=sources[i] != i, pool_source=i in pools)
            layer = replace(layer, mixer=IndexedAttention(**base))
        layers.append(layer)
    return replace(spec, layers=tuple(layers))
