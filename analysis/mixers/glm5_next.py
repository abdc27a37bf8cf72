"""GLM-5.3-Flash's layers (``glm5_next_text``): Kimi Delta Attention or DeepSeek sparse attention with a k-pool
indexer, each inside DeepSeek-V4's manifold-constrained hyper-connections (the protocol: ``analysis.mixers.base``).
transformers' models/glm5_next/modeling_glm5_next.py (5.24):

- every layer has two hyper-connections (``Glm5NextTextHyperConnection``: ``attn_hc``, ``ffn_hc``), DeepSeek-V4's
  shapes: ``fn`` ((2 + n)·n x n·hidden), ``base`` ((2 + n)·n, fp32), ``scale`` (3, fp32) over ``hc_mult`` = n
  residual streams; the streams RMS-normed (no weight), ``fn`` gives the pre / post weights and the n x n comb
  matrix (Sinkhorn-normalised), the pre weights collapse the streams into the block's input. They are this
  mixer's tensors (named at the layer, as DeepSeek-V4's);
- ``linear_attention`` layers: Kimi Linear's KDA (``Glm5NextTextLinearAttention``: low-rank forget and output gates
  through ``linear_head_dim``; ``analysis.mixers.kda``), its decay bounded by ``linear_lower_bound``;
- the other layers (``indexed_attention``; the released config says ``deepseek_sparse_attention``): GLM-5's NoPE MLA
  (``qk_rope_head_dim`` 0) with a lightning indexer that scores *pools* of ``index_kpool`` tokens
  (``Glm5NextTextIndexer``): beside DSA's ``wq_b`` / ``wk`` / ``k_norm`` / ``weights_proj`` it has
  ``index_kpool_compress_gate`` (index_head_dim x hidden, a gate score per key channel) and
  ``index_kpool_compress_ape`` (index_kpool x index_head_dim); each complete pool's key is the softmax(gate +
  ape)-weighted sum of its tokens' normed keys, each query scores the complete pools whose last token it sees
  (``Σ_h w_h relu(q_h · k_pool)``), keeps the best ``index_topk / index_kpool`` and attends their tokens plus,
  with ``index_kpool_always_select_tail``, the tokens of the incomplete last pool: ``min(v // kpool, topk /
  kpool) · kpool + v % kpool`` keys for v visible tokens (``hyper_block.qsa_keys``). ``shared`` layers
  (``indexer_types``) reuse the previous full layer's selection and have no indexer.

Cache of a sparse layer: MLA's latent per token (no rope key: NoPE) and one pooled indexer key of index_head_dim per
``index_kpool`` tokens (``compressed_kv``), as SGLang's k-pool indexer keeps it (``IndexerKPool``,
python/sglang/srt/layers/attention/dsa/: the pooled key written to the index cache when a pool closes, one slot per
kpool tokens of a 64-token page), plus the open pool's tokens (their keys and gate scores, at most kpool - 1) as a
per-sequence buffer (``state_elements``). transformers' own cache keeps every token's key, gate scores and validity.
KDA layers keep Kimi Linear's conv window and per-head d x d state.

The final collapse of the streams (``Glm5NextTextHyperHead``) is an unweighted mean: no tensors.
"""

from __future__ import annotations

from dataclasses import replace

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from .attention import distinct_keys
from .compressed import entries_seen, trace_mhc
from .dsa import SparseMLA
from .hyper_block import qsa_keys
from .kda import KimiDeltaAttention

HC_NAMES = ("attn_hc", "ffn_hc")


def mhc_tensors(prefix: str, n: int, hidden: int) -> list[Tensor]:
    """The layer's two hyper-connections (``prefix``: the mixer's, e.g. ``model.layers.3.self_attn``)."""
    layer = prefix.rsplit(".", 1)[0]
    out: list[Tensor] = []
    for hc in HC_NAMES:
        out.append(Tensor(f"{layer}.{hc}.fn", ((2 + n) * n, n * hidden), "other"))
        out.append(Tensor(f"{layer}.{hc}.base", ((2 + n) * n,), "other"))
        out.append(Tensor(f"{layer}.{hc}.scale", (3,), "other"))
    return out


@frozen
class Glm5NextKDA(KimiDeltaAttention):
    """A ``linear_attention`` layer: Kimi Linear's KDA (``gate_rank`` = head dim) in ``mhc`` hyper-connection
    streams."""

    mhc: int = 4

    title = "Kimi Delta Attention (hyper-connected)"

    def summary(self) -> str:
        return f"{super().summary()} in {self.mhc} hyper-connection streams"

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + mhc_tensors(prefix, self.mhc, self.hidden_size)

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        trace_mhc(b, i, tensors, self.mhc, self.hidden_size, lambda: super(Glm5NextKDA, self).trace(b, i, tensors))


@frozen
class PooledSparseMLA(SparseMLA):
    """A sparse-attention layer of GLM-5.3-Flash (see the module doc): MLA whose indexer scores pools of
    ``index_kpool`` tokens; ``mhc`` hyper-connection streams around it (0: none, GLM-5.3's MTP layer).
    ``select_tail``: the incomplete last pool's tokens are attended too (``index_kpool_always_select_tail``)."""

    index_kpool: int = 16
    select_tail: bool = True
    mhc: int = 0

    title = "DeepSeek sparse attention over k-pools"
    # FlashMLA's fp8 sparse cache is not used: SGLang refuses an fp8 KV cache with index_kpool > 1 (no kernel takes
    # a bf16 query over fp8 latents there); the engine profile's MLA layout applies
    fp8_latent_layout = None

    def label(self) -> str:
        return f"dsa-kpool{self.index_kpool}" if self.indexer else "dsa-kpool(shared)"

    def summary(self) -> str:
        s = (f"NoPE MLA (latent {self.kv_lora_rank}) with DeepSeek sparse attention over pools of {self.index_kpool} "
             f"tokens (top {self.index_topk}; indexer {self.index_n_heads}x{self.index_head_dim})")
        return s + (f", {self.mhc} hyper-connection streams" if self.mhc else "")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        if self.indexer:
            p, d = f"{prefix}.indexer", self.index_head_dim
            out.append(Tensor(f"{p}.index_kpool_compress_ape", (self.index_kpool, d), "other"))
            out.append(Tensor(f"{p}.index_kpool_compress_gate", (d, self.hidden_size), "other"))
        if self.mhc:
            out += mhc_tensors(prefix, self.mhc, self.hidden_size)
        return out

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def expanded_kv_elements_per_token(self) -> int:
        return self.num_attention_heads * (self.qk_head_dim + self.v_head_dim)

    def kv_bytes_per_token(self, kv_dtype) -> int:
        return kv_dtype.nbytes(self.kv_lora_rank + self.qk_rope_head_dim)

    def indexer_kv_bytes(self, kv_dtype=None) -> int:
        return 0  # the indexer keeps one pooled key per index_kpool tokens (compressed_kv), nothing per token

    def compressed_kv(self) -> tuple[tuple[int, int], ...]:
        return ((self.index_kpool, self.index_head_dim),) if self.indexer else ()

    def state_elements(self) -> tuple[int, int]:
        """The open pool: at most kpool - 1 tokens' keys and gate scores (index_head_dim each)."""
        return (0, (self.index_kpool - 1) * 2 * self.index_head_dim) if self.indexer else (0, 0)

    def selected_keys(self, cached: int, new: int) -> int:
        """Σ over the queries at positions cached..cached+new-1 of the tokens they attend (see the module doc)."""
        r, pools = self.index_kpool, self.index_topk // self.index_kpool
        if self.select_tail:
            return qsa_keys(cached, new, r, pools)
        return r * entries_seen(cached, new, r, pools)

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The hyper-connection, then DSA's trace (``SparseMLA.trace``, this class's indexer) with the attention
        re-counted over the pooled selection, then the streams' update and the FFN's hyper-connection."""
        if self.mhc:
            trace_mhc(b, i, tensors, self.mhc, self.hidden_size, lambda: self._trace_block(b, i, tensors))
        else:
            self._trace_block(b, i, tensors)

    def _trace_block(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """DSA's trace with the attention re-counted over the pooled selection."""
        start = len(b.ops)
        super().trace(b, i, tensors)
        s, nh, r, rope = b.shape, self.num_attention_heads, self.kv_lora_rank, self.qk_rope_head_dim
        keys = self.selected_keys(s.cached_tokens, s.new_tokens)
        read = min(distinct_keys(s.cached_tokens, s.new_tokens), keys)
        lat_tok = b.kv.nbytes(r + rope)
        for j in range(start, len(b.ops)):
            o = b.ops[j]
            if o.name.startswith("attention (top-"):
                b.ops[j] = replace(o, flops=s.batch * nh * (2 * (r + rope) + 2 * r) * keys,
                                   act_read_bytes=s.tokens * nh * (r + rope) * b.a + s.batch * keys * 4,
                                   kv_read_bytes=s.batch * read * lat_tok)

    def _trace_indexer(self, b, i: int, tensors: dict[str, list[Tensor]], all_keys: int, seen: int) -> None:
        """The indexer's projections (replicated), the gate scores, each new token's key and gate buffered and
        every pool closing in this step pooled into the cache, the scores of every query against the complete
        pools it sees (fp32 logits) and the top pools picked (int32 indices)."""
        s, n, a = b.shape, b.shape.tokens, b.a
        hi, d, kp = self.index_n_heads, self.index_head_dim, self.index_kpool
        own: dict[str, list[Tensor]] = {}
        for t in tensors["indexer"]:
            own.setdefault(t.name.split(".indexer.")[1].split(".")[0], []).append(t)
        rep = Parallel.REPLICATED
        b.matmul("indexer.wq_b", own["wq_b"], i, "attention", parallel=rep)
        b.matmul("indexer.wk", own["wk"], i, "attention", parallel=rep)
        b.add(name="indexer.k_norm", kind=OpKind.NORM, category="norm", layer=i,
              weight_bytes=b.fmt.bytes_of(own["k_norm"]), act_read_bytes=n * d * a, act_write_bytes=n * d * a,
              kernels=1, parallel=rep)
        b.matmul("indexer.weights_proj", own["weights_proj"], i, "attention", parallel=rep)
        b.matmul("indexer.compress_gate", own["index_kpool_compress_gate"], i, "attention", parallel=rep)
        end = s.cached_tokens + s.new_tokens
        closed = s.batch * (end // kp - s.cached_tokens // kp)  # pools completed in this step
        entry = b.kv.nbytes(d)
        b.add(name="indexer.pool_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
              weight_bytes=b.fmt.bytes_of(own["index_kpool_compress_ape"]),
              act_read_bytes=n * 2 * d * a + closed * kp * 2 * d * a, kv_write_bytes=closed * entry, kernels=2,
              parallel=rep)
        pools = entries_seen(s.cached_tokens, s.new_tokens, kp)  # Σ over queries of the complete pools seen
        b.add(name="indexer.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * pools * hi * (d + 1), act_read_bytes=n * hi * (d + 1) * a,
              act_write_bytes=s.batch * pools * 4, kv_read_bytes=s.batch * (end // kp) * entry, kernels=1,
              parallel=rep)
        picked = min(pools, s.new_tokens * (self.index_topk // kp))
        b.add(name=f"indexer.top{self.index_topk // kp}", kind=OpKind.ATTENTION, category="attention", layer=i,
              act_read_bytes=s.batch * pools * 4, act_write_bytes=s.batch * picked * 4, kernels=1, parallel=rep)
