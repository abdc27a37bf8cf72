"""RWKV-7 "Goose" (model_type ``rwkv7``, flash-linear-attention's remote code: fla-hub/rwkv7-0.1B-world ...
rwkv7-2.9B-world, RWKV/RWKV7-Goose-World3-*-HF; not in transformers). Every block: ``attn_norm`` -> time-mix ->
residual, ``ffn_norm`` -> channel-mix -> residual (one mixer, ``analysis.mixers.rwkv7``); with ``norm_first``
(default true) the first block's ``pre_norm`` normalises the embedding (our ``embedding_norm``); ``norm`` after the
blocks; ``lm_head`` untied unless ``tie_word_embeddings``. Every norm is a LayerNorm, with a bias when
``norm_bias`` (default true), eps ``norm_eps``.

The fields and their defaults are fla's ``RWKV7Config`` (fla/models/rwkv7/configuration_rwkv7.py): hidden_size
2048, num_hidden_layers 24, vocab_size 32000, head_dim 64 (when null: hidden_size / num_heads; a given head_dim
wins over num_heads, as ``RWKV7Attention`` reads it), hidden_ratio 4 and intermediate_size null
(= hidden_size x hidden_ratio rounded up to a multiple of 32), the LoRA ranks decay 64 / gate 128 / a 64 / v 16
(when null, ``RWKV7Attention``'s formulas from sqrt(hidden_size)), value_dim null (= hidden_size on every layer;
an int or a per-layer list, each a multiple of hidden_size), ``attn`` null (fla's hybrid softmax-attention
layers: refused here).
"""

from __future__ import annotations

import math

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.rwkv7 import RWKV7
from ..spec import CheckpointLayout, Layer, ModelSpec, Norm, NormKind, PlacedNorm

#: fla's checkpoint names -> ours
LAYOUT = CheckpointLayout(
    renames=(("model.embeddings.", "model.embed_tokens."), ("model.layers.0.pre_norm.", "model.embed_layernorm.")),
    modules=((".attn.", ".mixer."), (".ffn.", ".mixer.mlp.")))


def _rank(mult: float, hidden: int, factor: float) -> int:
    """``RWKV7Attention``'s default LoRA rank: max(32, round(mult·sqrt(hidden)·factor / 32)·32)."""
    return max(32, int(round((mult * (hidden ** 0.5)) * factor / 32) * 32))


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size", 2048, note="the fla RWKV7Config default")
    n_layers = f.int("num_hidden_layers", 24, hi=MAX_LAYERS, note="the fla RWKV7Config default")
    vocab = f.int("vocab_size", 32000, hi=1 << 26, note="the fla RWKV7Config default")
    # head_dim: 64 by default; null -> hidden_size / num_heads (RWKV7Config), a given head_dim wins
    if f.cfg.get("head_dim", 64) is None:
        heads = f.int("num_heads", note="head_dim is null")
        if hidden % heads:
            raise f.error("num_heads", f"({heads}) does not divide hidden_size ({hidden})")
        head_dim = f.derived("head_dim", hidden // heads, "hidden_size / num_heads")
    else:
        head_dim = f.int("head_dim", 64, note="the fla RWKV7Config default")
    if hidden % head_dim:
        raise f.error("head_dim", f"({head_dim}) does not divide hidden_size ({hidden}): RWKV-7's heads split the "
                                  "hidden_size key channels")
    ratio = f.float("hidden_ratio", 4, note="the fla RWKV7Config default (null: 4)")
    if ratio > 1 << 12:
        raise f.error("hidden_ratio", f"is {ratio}, larger than any real model")
    inter = f.int("intermediate_size", lambda: 32 * ((int(hidden * ratio) + 31) // 32),
                  note="hidden_size x hidden_ratio rounded up to a multiple of 32 (RWKV7FeedForward)")
    factor = head_dim / 64
    ranks = {}
    for key, default, mult, scaled in (("decay_low_rank_dim", 64, 2.5, True), ("gate_low_rank_dim", 128, 5, False),
                                       ("a_low_rank_dim", 64, 2.5, True), ("v_low_rank_dim", 16, 1.7, True)):
        if key in f.cfg and f.cfg[key] is None:  # RWKV7Attention's formula
            ranks[key] = f.derived(key, _rank(mult, hidden, factor if scaled else 1),
                                   f"max(32, round({mult} x sqrt(hidden_size){' x head_dim / 64' if scaled else ''} "
                                   "/ 32) x 32) (RWKV7Attention)")
        else:
            ranks[key] = f.int(key, default, note="the fla RWKV7Config default")
    raw_v = f.cfg.get("value_dim")
    if raw_v is None:
        values = [hidden] * n_layers
    elif isinstance(raw_v, list):
        values = f.int_list("value_dim", n_layers, lo=1)
    else:
        values = [f.int("value_dim")] * n_layers
    for v in values:
        if v < hidden or v % hidden:
            raise f.error("value_dim", f"holds {v}: each value_dim must be a multiple of hidden_size ({hidden}) "
                                       "(RWKV7Config)")
    attn = f.cfg.get("attn")
    if attn is not None:
        if not isinstance(attn, dict):
            raise f.error("attn", "must be an object (fla's hybrid attention layers) or null")
        if attn.get("layers"):
            raise UnsupportedModelError(f"{f.where}: RWKV-7 with fla's hybrid softmax-attention layers ('attn': "
                                        f"layers {attn.get('layers')}) is not supported yet",
                                        "only the pure RWKV-7 stack (attn null) is modelled")
    norm_bias = f.bool("norm_bias", True, note="the fla RWKV7Config default")
    norm_first = f.bool("norm_first", True, note="the fla RWKV7Config default")
    eps = f.float("norm_eps", 1e-5, note="the fla RWKV7Config default")
    tied = f.bool("tie_word_embeddings", False, note="the fla RWKV7Config default")
    act = f.str("hidden_act", "sqrelu", note="the fla RWKV7Config default")
    caveats: list[str] = []
    if act != "sqrelu":
        caveats.append(f"hidden_act '{act}' in the channel-mix (counts unchanged; the FLOPs assume squared ReLU)")
    if not math.isfinite(eps):
        raise f.error("norm_eps", f"must be finite, got {eps}")
    if f.cfg.get("max_position_embeddings") is not None:
        # fla reads it for hybrid attention layers only: the recurrence itself has no context limit (not a cap here)
        f.derived("max_position_embeddings", f.cfg["max_position_embeddings"],
                  "not a context limit: fla reads it for hybrid attention layers only")
        f.cfg = {k: v for k, v in f.cfg.items() if k != "max_position_embeddings"}
    ln = Norm(hidden, NormKind.LAYER, bias=norm_bias)
    norms = (PlacedNorm("attn_norm", "pre_mixer", ln), PlacedNorm("ffn_norm", "pre_ffn", ln))
    layers = tuple(Layer(RWKV7(hidden, head_dim, values[i], inter, ranks["decay_low_rank_dim"],
                               ranks["a_low_rank_dim"], ranks["v_low_rank_dim"], ranks["gate_low_rank_dim"],
                               first=i == 0), None, norms) for i in range(n_layers))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
                     tie_word_embeddings=tied, final_norm=ln, embedding_norm=ln if norm_first else None,
                     hidden_act="relu2", norm_eps=eps, checkpoint=LAYOUT, caveats=tuple(caveats))
