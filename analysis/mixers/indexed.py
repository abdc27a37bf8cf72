"""Kolibri 1.1's indexed-attention layers (``layer_types`` entry ``"indexed_attention"``): NoPE GQA attention over the
keys a weightless indexer selects (the protocol: ``analysis.mixers.base``).

transformers' ``Kolibri1_1Indexer`` (models/kolibri1_1/modular_kolibri1_1.py) has no weights: it scores keys by the
ReLU of the logits of the first ``index_num_heads`` query heads against key head 0 (both rounded to NVFP4), averaged
over those heads. An indexer layer (``index_layers``) first picks a pool of ``index_pool_size`` candidate keys, for a
query that sees more, by scoring the means of blocks of ``index_compression`` keys; every indexed layer then attends
the ``index_topk`` best keys of the pool of its indexer plus the first ``index_num_sink_tokens`` and the last
``index_num_local_tokens`` (a query that sees no more than that budget attends all its keys, and skips the scoring).
Its K and V are cached whole and in the model's dtype (NVFP4 rounding is applied to the attended copy only), unless the
layer reads an earlier layer's (``kv_shared``: ``kv_source_layers``), when it has no k/v projections, k_norm or cache.

Counted here as a serving engine would run it: a query at position ``p`` (``p + 1`` keys) attends
``min(p + 1, budget)`` keys; beyond the budget its indexer scores ``min(p + 1, pool)`` keys (the pool's), and an indexer
layer beyond the pool also scores its ``(p + 1) // index_compression`` block means. transformers' reference applies the
selection as a mask over dense attention and scores every key; below the budget both agree.

Tensor parallelism is refused. DeepSeek V3.2's DSA indexer is replicated on every rank by vLLM (its own ``wq_b`` /
``wk`` / ``weights_proj`` as ReplicatedLinear, its own fp8 key cache whole per rank: ``analysis.mixers.dsa``), so each
rank selects the same keys by itself. Kolibri's indexer owns nothing to replicate: it reads the first
``index_num_heads`` query heads and key head 0 of the attention's own projections and cache, which head sharding puts
on one rank only; replicating them means slices of q_proj / k_proj and a second copy of key head 0's cache on every
other rank, or a broadcast of the selection, neither of which any implementation does. transformers 5.25 leaves the
attention out of ``Kolibri1_1Config.base_model_tp_plan`` for this reason ("an indexer scores keys with the query heads
of key head 0 and must select the same keys on every rank, so the heads cannot be sharded"); no vLLM or SGLang model
of Kolibri 1.1 was found.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from .attention import Attention, _tri, attended_keys, distinct_keys
from .base import MixerKind


def _floor_sum(n: int, c: int) -> int:
    """Σ_{L=1..n} L // c."""
    q, r = divmod(n, c)
    return c * q * (q - 1) // 2 + q * (r + 1)


def scored_keys(cached: int, new: int, budget: int, pool: int) -> int:
    """Σ over the queries at positions cached..cached+new-1 that see more than ``budget`` keys of the keys their
    indexer scores, ``min(p + 1, pool)`` each (``budget <= pool``)."""
    end = cached + new
    return attended_keys(cached, new, window=pool) - (_tri(min(end, budget)) - _tri(min(cached, budget)))


def block_means(cached: int, new: int, pool: int, compression: int) -> int:
    """Σ over the queries that see more than ``pool`` keys of the block means an indexer scores, ``(p + 1) //
    compression`` each."""
    lo, hi = max(cached, pool), cached + new
    return _floor_sum(hi, compression) - _floor_sum(lo, compression) if hi > lo else 0


@frozen
class IndexedAttention(Attention):
    """Kolibri 1.1's attention over the keys its weightless indexer selects (see the module doc)."""

    index_topk: int = 2048
    index_pool_size: int = 16384
    index_compression: int = 16
    index_num_heads: int = 12
    index_num_local_tokens: int = 128
    index_num_sink_tokens: int = 8
    pool_source: bool = False  # an indexer (``index_layers``): it picks a new pool

    kind = MixerKind.INDEXED
    title = "Kolibri 1.1 indexed attention"

    @property
    def budget(self) -> int:
        """Keys a query attends once it sees more: the top-k, the sinks and the local window."""
        return self.index_topk + self.index_num_local_tokens + self.index_num_sink_tokens

    def label(self) -> str:
        return f"indexed(top-{self.index_topk})" + ("+shared-kv" if self.kv_shared else "")

    def summary(self) -> str:
        role = "indexer" if self.pool_source else "reindexer"
        return (f"{super().summary()}, NoPE, top {self.index_topk} + {self.index_num_sink_tokens} sink + "
                f"{self.index_num_local_tokens} local keys ({role}, {self.index_num_heads} scoring heads)")

    def trace(self, b, i: int, tensors) -> None:
        """The indexer's scores (no weights: query heads against key head 0), then the attention's ops with FLOPs
        and KV reads over the selected keys only."""
        s, d, hi = b.shape, self.head_dim, self.index_num_heads
        pool = max(self.index_pool_size, self.budget)
        scored = scored_keys(s.cached_tokens, s.new_tokens, self.budget, pool)
        if self.pool_source:
            scored += block_means(s.cached_tokens, s.new_tokens, pool, self.index_compression)
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        b.add(name="indexer.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * scored * hi * d, act_read_bytes=s.tokens * hi * d * b.a,
              act_write_bytes=s.batch * scored * 4,
              kv_read_bytes=s.batch * min(seen, pool) * b.kv.nbytes(d) if scored else 0, kernels=3,
              parallel=Parallel.REPLICATED)
        first = len(b.ops)
        super().trace(b, i, tensors)
        at = next(j for j in range(first, len(b.ops)) if b.ops[j].name == "attention")
        keys = attended_keys(s.cached_tokens, s.new_tokens, window=self.budget)
        read = min(seen, s.new_tokens * self.budget)
        b.ops[at] = replace(b.ops[at], name=f"attention (top-{self.index_topk} keys)",
                            flops=s.batch * self.num_attention_heads * 2 * (d + self.v_head_dim) * keys,
                            kv_read_bytes=s.batch * read * b.kv.nbytes(self.kv_elements_read_per_token()))

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:  # (see the module doc: why it is not replicated as DSA's indexer is)
            raise OptionError(f"--tp {tp}: Kolibri 1.1's indexer (layer {layer}) scores keys with query heads "
                              f"0-{self.index_num_heads - 1} against key head 0 and every rank must select the same "
                              "keys; it owns no weights or key cache to replicate per rank (DeepSeek V3.2's DSA "
                              "indexer does), and transformers shards no attention for it "
                              "(Kolibri1_1Config.base_model_tp_plan)", "use --tp 1 (--pp or --dp to spread it)")
        return super().tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "IndexedAttention | None":
        return None  # a window over the indexer's selection is not modelled
