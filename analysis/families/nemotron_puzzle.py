"""NVIDIA Nemotron-H "Puzzle" (``nemotron_h_puzzle``, ``NemotronHPuzzleForCausalLM``; e.g. Nemotron-3-Puzzle-75B-A9B):
a Nemotron-H (analysis/families/hybrid.py ``build_nemotron_h``) pruned by Puzzle into layers of their own shapes.

As vLLM builds it (vllm/transformers_utils/configs/nemotron_h.py ``NemotronHPuzzleConfig``, models/nemotron_h.py):
the layer types are the top-level ``hybrid_override_pattern`` / ``layers_block_type``; layer ``i`` is built from the
top-level config with the items of ``block_configs[i]`` set over it (null ones too)
(``get_nemotron_h_config_for_layer``) for its MLP (``intermediate_size``), MoE (experts, top-k, expert / latent /
shared sizes) and attention (heads, KV heads, head_dim, a per-layer ``sliding_window``). Mamba-2 layers and every
norm read the top-level config only. MTP layers read ``mtp_block_configs`` the same way (reported apart).
Without a top-level pattern, the layer types are the blocks' ``block_type``.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import Layer, ModelSpec
from .hybrid import NEMOTRON_TYPES, _present, build_nemotron_h, nemotron_block_types

#: the top-level keys a per-layer build must not see (they describe the whole stack, which the builder re-reads)
_STACK_KEYS = ("block_configs", "mtp_block_configs", "hybrid_override_pattern", "layers_block_type", "layer_types",
               "num_hidden_layers", "mtp_hybrid_override_pattern", "mtp_layers_block_type",
               "num_nextn_predict_layers")


def _blocks(f: Fields, key: str) -> list[dict]:
    blocks = f.list(key, [])
    for i, b in enumerate(blocks):
        if not isinstance(b, dict):
            raise f.error(key, f"entry {i} is {type(b).__name__}, not an object of per-layer fields")
    return blocks


def _block_types(f: Fields, blocks: list[dict], key: str) -> list[str]:
    """Each entry's ``block_type`` of ``key`` (block_configs / mtp_block_configs) as a Nemotron-H layer type."""
    types = []
    for i, b in enumerate(blocks):
        t = NEMOTRON_TYPES.get(b.get("block_type"))
        if t is None:
            raise f.error(key, f"entry {i} has block_type {b.get('block_type')!r}: expected one of "
                               f"{sorted(NEMOTRON_TYPES)} (no hybrid_override_pattern to read instead)")
        types.append(t)
    if not types:
        raise f.error(key, "is empty")
    return types


def _types(f: Fields, blocks: list[dict]) -> list[str]:
    if any(_present(f, k) for k in ("layers_block_type", "layer_types", "hybrid_override_pattern")):
        return nemotron_block_types(f)
    return f.derived("layers_block_type", _block_types(f, blocks, "block_configs"),
                     "absent: the block_configs' block_type")


def _layer(f: Fields, base: dict, block: dict, kind: str, where: str, cache: dict) -> tuple[Layer, ModelSpec]:
    """The layer vLLM builds for a ``kind`` block with ``block``'s fields over ``base`` (Mamba-2: ``base`` only), and
    the one-layer Nemotron-H spec it came from."""
    from ..family_defaults import FAMILY_DEFAULTS

    over = {} if kind == "mamba" else {k: v for k, v in block.items() if k != "block_type"}  # None too, as vLLM
    key = (kind, repr(sorted(over.items())))
    if key not in cache:
        cfg = {**base, **over, "model_type": "nemotron_h", "layers_block_type": [kind]}
        sub = Fields(cfg, where, defaults=FAMILY_DEFAULTS.get("nemotron_h"), family="nemotron_h")
        spec = build_nemotron_h(sub, "nemotron_h")
        layer = spec.layers[0]
        window = sub.opt_int("sliding_window") if kind == "attention" else None
        if window is not None:  # vLLM's per_layer_sliding_window
            layer = replace(layer, mixer=replace(layer.mixer, window=window))
        for k, rec in sub.records.items():  # what the top-level fields gave, recorded once
            if k not in over and k in f.cfg:
                f.records.setdefault(k, rec)
        cache[key] = layer, spec
    return cache[key]


def build(f: Fields, model_type: str) -> ModelSpec:
    blocks = _blocks(f, "block_configs")
    types = _types(f, blocks)
    if len(types) > MAX_LAYERS:
        raise f.error("block_configs", f"has {len(types)} layers, more than {MAX_LAYERS}")
    if len(types) != len(blocks):
        raise f.error("block_configs", f"has {len(blocks)} entries but the layer pattern has {len(types)} layers")
    base = {k: v for k, v in f.cfg.items() if k not in _STACK_KEYS}
    cache: dict = {}
    layers, first = [], None
    for i, (kind, block) in enumerate(zip(types, blocks)):
        layer, spec = _layer(f, base, block, kind, f"{f.where} (block_configs[{i}])", cache)
        layers.append(layer)
        first = first or spec
    steps = f.int("num_nextn_predict_layers", 0, lo=0, hi=MAX_LAYERS)
    mtp: list[Layer] = []
    if steps:
        mtp_blocks = _blocks(f, "mtp_block_configs")
        if _present(f, "mtp_layers_block_type") or _present(f, "mtp_hybrid_override_pattern"):
            from .hybrid import _nemotron_mtp
            _, mtp_types = _nemotron_mtp(f)
        else:
            mtp_types = _block_types(f, mtp_blocks, "mtp_block_configs") if mtp_blocks else ["attention", "moe"]
        if mtp_blocks and len(mtp_blocks) != len(mtp_types):
            raise f.error("mtp_block_configs", f"has {len(mtp_blocks)} entries for {len(mtp_types)} MTP blocks")
        step = [_layer(f, base, mtp_blocks[j] if mtp_blocks else {}, t, f"{f.where} (mtp_block_configs[{j}])",
                       cache)[0] for j, t in enumerate(mtp_types)]
        mtp = step * steps
    hidden = first.hidden_size
    return replace(first, model_type=model_type, layers=tuple(layers), mtp_layers=tuple(mtp),
                   mtp_extra_params=steps * (3 * hidden + 2 * hidden * hidden),
                   caveats=first.caveats + ("Nemotron-H Puzzle: each layer's shape from its block_configs entry "
                                            "over the top-level config, as vLLM builds it",))
