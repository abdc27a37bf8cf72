"""Qwen4-Exp (``qwen4_exp_text``; the ``qwen4_exp`` wrapper adds Qwen3.5's vision tower): Qwen3.5-MoE's layers
(Gated DeltaNet with split projections, gated attention with per-head q/k norms, Qwen3-Next's sparse block with
a gated shared expert in every layer) inside gated hyper-connections, a QSA indexer on every attention layer
and per-layer n-gram embeddings (PLE) on ``ple_layer_ids``; no per-layer norms and no final norm (the model
ends with ``hyper_connection_mixer``, which folds the streams into one). The layer: ``analysis.mixers.hyper_block``.

transformers builds the QSA indexer on every ``indexed_attention`` layer, so a config without the indexer fields
(the class defaults) does not build there (``None // None``); it is refused here too, naming the fields.
"""

from __future__ import annotations

import math

from ..fields import MAX_LAYERS, Fields
from ..mixers import HyperBlock
from ..spec import CheckpointLayout, Layer, ModelSpec, Numerics, RouterKind, Tensor
from ..tensors import linear as _linear
from .common import per_layer_types, read_routing, read_rope
from .hybrid import _act, _core, _present, _qwen_gdn, _qwen_moe, _spec, read_attention

TYPES = {"linear_attention": "linear", "indexed_attention": "full", "full_attention": "full"}
QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")
_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # deterministic Miller-Rabin below 3.3e24
MAX_NGRAM_HEADS = 1 << 12  # prime-sized n-gram tables over all PLE layers (the published layout: 16 per layer)


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in _MR_BASES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def ngram_rows(base: int, heads: int, ple_layers: int, divisor: int) -> list[int]:
    """Rows of each PLE layer's n-gram table: head g (over all PLE layers, in order) is the (g + 1)-th prime
    >= ``base`` (transformers' ``_find_nth_prime_after(base - 1, g + 1)``); a layer's heads summed, padded up to a
    multiple of ``divisor``."""
    primes: list[int] = []
    p = base - 1
    while len(primes) < heads * ple_layers:
        p += 1
        while not _is_prime(p):
            p += 1
        primes.append(p)
    return [math.ceil(sum(primes[k * heads:(k + 1) * heads]) / divisor) * divisor for k in range(ple_layers)]


def build_text(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, vocab = _core(f)
    if _present(f, "layer_types"):
        types = per_layer_types(f, "layer_types", n_layers, TYPES)
    else:
        every = f.int("full_attention_interval", 4)
        f.derived("layer_types", f"list[{n_layers}]", f"absent: every {every}th layer indexed_attention, the others "
                                                      "linear_attention (full_attention_interval)")
        types = ["full" if (i + 1) % every == 0 else "linear" for i in range(n_layers)]
    act = _act(f, "silu")
    hc_count, rank = f.int("hc_count", lo=2, hi=1 << 10), f.int("hc_lowrank")
    common = dict(hidden_size=hidden, hc_count=hc_count, hc_lowrank=rank)
    moe = _qwen_moe(f, hidden, f.int("num_experts"), act)
    attn = gdn = None
    if "full" in types:
        missing = [k for k in QSA_FIELDS if f.raw(k) is None]
        if missing:
            raise f.error(missing[0], "is required: transformers builds a QSA indexer on every indexed_attention "
                                      f"layer and cannot build one without {', '.join(missing)}")
        if f.int("indexer_kv_heads") != 1:
            raise f.error("indexer_kv_heads", "must be 1 (Qwen4-Exp's QSA has one key head)")
        budget, ratio = f.int("indexer_budget"), f.int("indexer_compress_ratio")
        if budget % ratio:
            raise f.error("indexer_budget", f"({budget}) must be a multiple of indexer_compress_ratio ({ratio})")
        inner = read_attention(f, hidden, bias=f.bool("attention_bias", False), rotary_default=1.0, output_gate=True)
        if inner.rotary_dim > f.int("indexer_head_dim"):
            raise f.error("indexer_head_dim", f"({f.int('indexer_head_dim')}) must hold the attention's rotary "
                                              f"dimensions ({inner.rotary_dim}): the indexer ropes its q and k alike")
        attn = HyperBlock(inner, **common, index_n_heads=f.int("indexer_n_heads"),
                          index_head_dim=f.int("indexer_head_dim"), index_budget=budget, index_ratio=ratio)
    ple_ids = sorted(set(f.int_list("ple_layer_ids", lo=1, hi=MAX_LAYERS) or []))
    ple_at: dict[int, int] = {}
    if "linear" in types:
        gdn = HyperBlock(_qwen_gdn(f, hidden, True), **common)
    if ple_ids:
        for k, lid in enumerate(ple_ids):
            if lid > n_layers or types[lid - 1] != "linear":
                raise f.error("ple_layer_ids", f"names layer {lid}: PLE runs on linear_attention layers only "
                                               f"(one-indexed, 1..{n_layers})")
            ple_at[lid - 1] = k
        ngram, per_ngram = f.int("ngram_size", lo=2, hi=64), f.int("heads_per_ngram", hi=1 << 10)
        heads = (ngram - 1) * per_ngram
        e = f.int("ple_embed_dim") if _present(f, "ple_embed_dim") else f.derived("ple_embed_dim", hidden,
                                                                                    "absent: hidden_size")
        if e % heads:
            raise f.error("ple_embed_dim", f"({e}) must be a multiple of the n-gram heads ((ngram_size - 1) x "
                                           f"heads_per_ngram = {heads})")
        if heads * len(ple_ids) > MAX_NGRAM_HEADS:
            raise f.error("heads_per_ngram", f"gives {heads * len(ple_ids)} n-gram heads over the PLE layers, "
                                             f"more than the {MAX_NGRAM_HEADS} prime-sized tables analysed")
        if f.raw("eos_token_id") in (None, []):
            raise f.error("eos_token_id", "must be set when ple_layer_ids are (transformers pads n-grams with it)")
        rows = ngram_rows(f.int("ngram_vocab_size_base", hi=1 << 40), heads, len(ple_ids),
                          f.int("make_ngram_vocab_size_divisible_by", hi=1 << 20))
        ple = dict(ple_embed_dim=e, ple_heads=heads, ple_conv_kernel=f.int("ple_conv_kernel_size", hi=1 << 10),
                   ngram_size=ngram)
    layers = []
    for i, t in enumerate(types):
        m = attn if t == "full" else gdn
        if i in ple_at:
            m = HyperBlock(m.inner, **common, ple_rows=rows[ple_at[i]], **ple)  # type: ignore[union-attr]
        layers.append(Layer(m, moe))
    hc = hc_count * hidden
    mixer: list[Tensor] = [Tensor("model.hyper_connection_mixer.hc_norm.weight", (hc,), "norm")]
    _linear(mixer, "model.hyper_connection_mixer.input_mix_weight_down", rank, hc, False)
    _linear(mixer, "model.hyper_connection_mixer.input_mix_weight_up", hc, rank, False)
    head_dim = attn.inner.head_dim if attn is not None else 0
    return _spec(f, model_type, hidden, vocab, layers, None, False, act, norm_offset=1.0, head_hc=tuple(mixer),
                 rope_scaling=read_rope(f, head_dim)[2] if attn is not None else (),
                 numerics=Numerics(**read_routing(f, RouterKind.SOFTMAX)),
                 checkpoint=CheckpointLayout(modules=((".linear_attn.", ".mixer."),)))
