"""MiniMax-M3's sparse attention layers (``layer_types`` entry ``"minimax_m3_sparse"``): GQA softmax attention over
the key *blocks* a lightning indexer selects (the protocol: ``analysis.mixers.base``).

The indexer (transformers' ``MiniMaxM3VLIndexer``, models/minimax_m3_vl/modular_minimax_m3_vl.py) has its own
projections, ``self_attn.indexer.q_proj`` (hidden -> index_n_heads · index_head_dim) and ``k_proj`` (hidden ->
index_head_dim, one key head), Gemma-style RMSNorms ``q_norm`` / ``k_norm`` over index_head_dim, and RoPE. Its
key of every token is cached beside K and V (``idx_keys``: index_head_dim per token and layer). Each query scores
every visible key with every index head, max-pools the scores into blocks of ``index_block_size`` keys and keeps,
per index head (one per KV group), the top ``index_topk_blocks`` blocks; the ``index_local_blocks`` blocks ending at
the query's own always win. The attention then reads the selected blocks only.

Keys a query at position ``p`` attends (``block_keys``): all ``p + 1`` while it sees at most ``index_topk_blocks``
blocks, else ``topk - 1`` full blocks plus its own partial block, ``(topk - 1) · B + p mod B + 1`` (exact with at
least one local block; without, an upper bound). Indexer FLOPs grow with the whole context.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention, _tri, attended_keys, distinct_keys
from .base import MixerKind


def block_keys(cached: int, new: int, block: int, topk: int) -> int:
    """Σ over the queries at positions cached..cached+new-1 of the keys their selected blocks hold (causal)."""
    full = topk * block  # below this position a query sees at most topk blocks: every key

    def g(n: int) -> int:  # Σ_{p=0..n-1} keys(p)
        s = _tri(min(n, full))
        m = n - full
        if m > 0:
            c, r = divmod(m, block)
            s += m * ((topk - 1) * block + 1) + c * block * (block - 1) // 2 + r * (r - 1) // 2
        return s
    return g(cached + new) - g(cached)


@frozen
class BlockSparseAttention(Attention):
    """MiniMax-M3's attention with a lightning indexer choosing blocks of keys (see the module doc)."""

    index_n_heads: int = 4
    index_head_dim: int = 128
    index_block_size: int = 128
    index_topk_blocks: int = 16
    index_local_blocks: int = 1

    kind = MixerKind.BLOCK_SPARSE
    title = "MiniMax-M3 block-sparse attention"

    def label(self) -> str:
        return f"block-sparse({self.index_topk_blocks}x{self.index_block_size})"

    def summary(self) -> str:
        return (f"{super().summary()}, block-sparse: top {self.index_topk_blocks} blocks of "
                f"{self.index_block_size} keys (indexer {self.index_n_heads}x{self.index_head_dim})")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        x, d = f"{prefix}.indexer", self.index_head_dim
        _linear(out, f"{x}.q_proj", self.index_n_heads * d, self.hidden_size, False)
        _linear(out, f"{x}.k_proj", d, self.hidden_size, False)
        out.append(Tensor(f"{x}.q_norm.weight", (d,), "norm"))
        out.append(Tensor(f"{x}.k_norm.weight", (d,), "norm"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The indexer (projections, norms, RoPE, scores over every visible key, block pooling and top-k), then
        the attention's ops (its kv_append writes the indexer key with K and V) with FLOPs and KV reads over the
        selected blocks only."""
        s, n, a = b.shape, b.shape.tokens, b.a
        hi, d = self.index_n_heads, self.index_head_dim
        own = {t.name.split(".indexer.")[1].split(".")[0]: t for t in tensors["indexer"]}
        rep = Parallel.REPLICATED
        b.matmul("indexer.q_proj", [own["q_proj"]], i, "attention", parallel=rep)
        b.matmul("indexer.k_proj", [own["k_proj"]], i, "attention", parallel=rep)
        b.norm("indexer.q_norm", None, hi * d, i, tensors=[own["q_norm"]])
        b.norm("indexer.k_norm", None, d, i, tensors=[own["k_norm"]])
        rope = n * (hi + 1) * d
        b.elementwise("indexer.rope", rope, rope, i, "attention", kernels=4, kind=OpKind.ROPE)
        all_keys = attended_keys(s.cached_tokens, s.new_tokens)
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        b.add(name="indexer.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * all_keys * hi * d, act_read_bytes=n * hi * d * a,
              act_write_bytes=s.batch * all_keys * hi * 4, kv_read_bytes=s.batch * seen * b.kv.nbytes(d),
              kernels=3, parallel=rep)
        b.add(name=f"indexer.top{self.index_topk_blocks}", kind=OpKind.ATTENTION, category="attention", layer=i,
              act_read_bytes=s.batch * all_keys * hi * 4, act_write_bytes=n * hi * self.index_topk_blocks * 8,
              kernels=3, parallel=rep)  # the scores max-pooled per block, the top blocks' int64 indices
        start = len(b.ops)
        super().trace(b, i, tensors)
        keys = block_keys(s.cached_tokens, s.new_tokens, self.index_block_size, self.index_topk_blocks)
        read = min(seen, s.new_tokens * self.index_topk_blocks * self.index_block_size)
        for j in range(start, len(b.ops)):
            o = b.ops[j]
            if o.name == "attention":
                per_key = 2 * (self.head_dim + self.v_head_dim) * self.num_attention_heads
                b.ops[j] = replace(o, name=f"attention (top-{self.index_topk_blocks} blocks)",
                                   flops=s.batch * per_key * keys,
                                   kv_read_bytes=s.batch * read * b.kv.nbytes(self.kv_elements_read_per_token()))

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        """K and V of every KV head, plus the indexer's key (index_head_dim)."""
        return super().kv_elements_per_token() + self.index_head_dim

    def kv_elements_read_per_token(self) -> int:
        """What the attention reads per selected token: K and V (the indexer's keys are read by its scores)."""
        return self.num_key_value_heads * (self.head_dim + self.v_head_dim)

    def indexer_kv_bytes(self, kv_dtype=None) -> int:
        """The indexer key of one token, in ``kv_dtype`` (transformers keeps it in the model's dtype beside K and V;
        ``None``: bf16, as no serving engine's own layout for it is known)."""
        return kv_dtype.nbytes(self.index_head_dim) if kv_dtype is not None else 2 * self.index_head_dim

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:
            raise OptionError(f"--tp {tp}: how MiniMax-M3's indexer key cache (one head, layer {layer}) is held "
                              "across tensor-parallel ranks is not modelled", "use --tp 1 for this model")
        return super().tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "BlockSparseAttention | None":
        return None  # a window over the indexer's selection is not modelled
