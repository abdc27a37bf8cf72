"""Phi-3-small's block-sparse attention layers ("local + vertical-stride" pattern): GQA softmax attention whose
queries see, per head, only some blocks of ``block_size`` keys (the protocol: ``analysis.mixers.base``).

The pattern is vLLM's (vllm/attention/ops/blocksparse_attention/utils.py ``get_sparse_attn_mask``, the same rule in
its paged-attention decode kernel): query block ``i`` of head ``h`` reads key block ``j <= i`` when
``i - j < local_blocks`` (the local window) or ``(j + h · step + 1) mod vert_stride == 0`` (a vertical stride
shifted per head; ``step = max(1, int(vert_stride / heads))`` over the model's heads, 0 with
``blocksparse_homo_head_pattern``), with the usual causal mask inside the query's own block. The parameters are
plain attention's (same projections, biases and RoPE); vLLM's cache keeps K and V of every position in every layer
(the sparsity saves FLOPs and reads, not cache).

FLOPs count exactly the (query, key) pairs of that mask, summed per head (``strided_keys``). The KV read is, per KV
head, the key positions any of its query heads reads during the step (``distinct_strided_keys``). Under tensor
parallelism a rank holds a slice of the heads, and the ranks' heads see different vertical columns: the trace
counts the first rank's heads (heads 0 .. H/tp - 1), whose count can differ from another rank's by a few blocks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..records import frozen
from ..tensors import Tensor
from .attention import Attention, _tri
from .base import MixerKind


def _col_blocks(m: int, c: int, stride: int) -> int:
    """How many block indices j in [0, m] have j mod stride == c (0 when m < c)."""
    return 0 if m < c else (m - c) // stride + 1


def _sum_col_blocks(q: int, local: int, c: int, stride: int) -> int:
    """Σ over query blocks i in [0, q) of the vertical blocks below their local window, Σ_i _col_blocks(i - local)."""
    top = q - 1 - local - c  # Σ_{t=0..top} (t // stride + 1)
    if top < 0:
        return 0
    a, rem = divmod(top + 1, stride)
    return top + 1 + stride * a * (a - 1) // 2 + rem * a


def strided_keys(cached: int, new: int, block: int, local: int, stride: int, c: int) -> int:
    """Σ over the queries at positions cached..cached+new-1 of the keys one head reads; ``c`` is the residue mod
    ``stride`` of that head's vertical blocks (head h: ``-(h · step + 1) mod stride``)."""

    def blocks(i: int) -> int:  # key blocks query block i reads, its own included
        return min(local, i + 1) + _col_blocks(i - local, c, stride)

    def g(n: int) -> int:  # Σ_{p=0..n-1} keys(p); keys(p) = block · (blocks(p // block) - 1) + p mod block + 1
        q, r = divmod(n, block)
        own = q * _tri(block) + _tri(r)
        before = _tri(min(q, local)) - q + max(0, q - local) * local + _sum_col_blocks(q, local, c, stride)
        return own + block * (block * before + r * (blocks(q) - 1))
    return g(cached + new) - g(cached)


def distinct_strided_keys(cached: int, new: int, block: int, local: int, stride: int, residues) -> int:
    """Key positions one KV head's cache is read at during the step: every position from the first query's local
    window on, plus the whole vertical blocks below it whose residue mod ``stride`` is one of ``residues`` (its
    query heads')."""
    lo = max(0, cached // block - local + 1)  # the first key block of the first query's local window
    return cached + new - lo * block + block * sum(_col_blocks(lo - 1, c, stride) for c in set(residues))


@frozen
class LocalStridedAttention(Attention):
    """Phi-3-small's block-sparse attention (see the module doc)."""

    block_size: int = 64
    local_blocks: int = 16
    vert_stride: int = 8
    head_sliding_step: int = 1  # 0: every head the same pattern (blocksparse_homo_head_pattern)

    kind = MixerKind.LOCAL_STRIDED
    title = "Phi-3-small block-sparse attention"

    def label(self) -> str:
        return f"blocksparse({self.local_blocks}x{self.block_size}/{self.vert_stride})"

    def summary(self) -> str:
        return (f"{super().summary()}, block-sparse: {self.local_blocks} local blocks of {self.block_size} keys "
                f"+ every {self.vert_stride}th block")

    def residues(self) -> list[int]:
        """Per query head, the residue mod vert_stride of its vertical key blocks."""
        return [-(h * self.head_sliding_step + 1) % self.vert_stride for h in range(self.num_attention_heads)]

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """Plain attention's ops, its ``attention`` op's FLOPs and KV read over the block-sparse mask."""
        s = b.shape
        start = len(b.ops)
        super().trace(b, i, tensors)
        res = self.residues()
        keys = sum(n * strided_keys(s.cached_tokens, s.new_tokens, self.block_size, self.local_blocks,
                                    self.vert_stride, c) for c, n in Counter(res).items())
        g = self.num_attention_heads // self.num_key_value_heads
        seen = sum(distinct_strided_keys(s.cached_tokens, s.new_tokens, self.block_size, self.local_blocks,
                                         self.vert_stride, res[k * g:(k + 1) * g])
                   for k in range(self.num_key_value_heads))
        for j in range(start, len(b.ops)):
            o = b.ops[j]
            if o.name == "attention":
                b.ops[j] = replace(o, name="attention (block-sparse)",
                                   flops=s.batch * 2 * (self.head_dim + self.v_head_dim) * keys,
                                   kv_read_bytes=s.batch * b.kv.nbytes(seen * (self.head_dim + self.v_head_dim)))

    # ---- sundries --------------------------------------------------------------------------------

    def with_window(self, window: int) -> "LocalStridedAttention | None":
        return None  # a window over the block-sparse pattern is not modelled
