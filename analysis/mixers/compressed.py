"""DeepSeek-V4 attention (``deepseek_v4``): shared-KV multi-query attention over a sliding window of raw
tokens plus, on compressed layers, one pooled entry per ``compress_ratio`` tokens (the protocol:
``analysis.mixers.base``). transformers' models/deepseek_v4/modeling_deepseek_v4.py (5.24):

- every layer (``DeepseekV4Attention``): ``q_a_proj`` (hidden -> q_lora_rank), ``q_a_norm``, ``q_b_proj``
  (q_lora_rank -> heads · head_dim), a weightless RMSNorm per head, ``kv_proj`` (hidden -> head_dim: one KV
  head, read as both key and value), ``kv_norm``, partial interleaved RoPE on the last ``rope_dim``
  channels, a learnable sink per head, then the grouped output projection: ``o_a_proj`` (``o_groups``
  blocks of heads · head_dim / o_groups -> o_lora_rank) and ``o_b_proj`` (o_groups · o_lora_rank -> hidden);
- ``heavily_compressed_attention`` (HCA, ratio 128): a compressor (``kv_proj``, ``gate_proj``: hidden ->
  head_dim; ``position_bias`` ratio x head_dim; ``kv_norm``) pools every ``ratio`` tokens into one entry
  (softmax-gated sum); every query attends all entries whose window has closed, ``(p + 1) // ratio``;
- ``compressed_sparse_attention`` (CSA, ratio 4): the compressor projects 2 · head_dim (two overlapping
  series, windows of 2 · ratio at stride ratio) and a lightning indexer (its own compressor at
  ``index_head_dim``, ``q_b_proj`` q_lora_rank -> index_n_heads · index_head_dim, ``weights_proj``) scores
  each query against every compressed entry (``Σ_h w_h · relu(q_h · k)``) and keeps the top ``index_topk``:
  a query attends ``min(index_topk, (p + 1) // ratio)`` entries;
- ``sliding_attention``: the window alone.

The layer's two manifold-constrained hyper-connections (``attn_hc``, ``ffn_hc``: ``fn`` ((2 + n)·n x n·hidden),
``base``, ``scale``; n = ``hc_mult`` residual streams) are this mixer's tensors too (named at the layer).

Cache per sequence and layer (``DeepseekV4HCACache`` / ``DeepseekV4CSACache``): the window's keys, head_dim
per token (K = V, stored once; transformers keeps ``sliding_window - 1`` past tokens, the query's own key
making the window; its generic sliding layers hold a second, identical tensor as values), capped at the
window (``kv_cap``); one entry of head_dim (+ index_head_dim with the indexer) per ``ratio`` tokens, every
entry kept (``compressed_kv``: ``analysis.kv`` adds ``entry bytes x (context // ratio)``); and the compressor's
buffer of the tokens since the last closed window (kv and gate, at most ratio - 1 tokens) plus, on CSA, the
last closed window's first series (ratio x width, kv and gate): a fixed per-sequence state counted at its largest (``state_elements``).

Attention FLOPs are those of the sparse kernels: 4 · heads · head_dim per attended key (q·k and p·v over
the shared head); transformers' eager path computes CSA densely over every compressed entry with a mask.
"""

from __future__ import annotations

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import attended_keys, distinct_keys
from .base import MixerKind, MixerSpec


def entries_seen(cached: int, new: int, ratio: int, cap: int | None = None) -> int:
    """Σ over the queries at positions cached..cached+new-1 of ``min(cap, (p + 1) // ratio)``."""
    def f(n: int) -> int:  # Σ_{q=1..n} min(cap, q // ratio)
        top = n if cap is None else min(n, cap * ratio - 1)
        m = top // ratio
        s = ratio * m * (m - 1) // 2 + m * (top - m * ratio + 1)
        return s + (cap * (n - top) if cap is not None else 0)
    return f(cached + new) - f(cached)


@frozen
class CompressedMQA(MixerSpec):
    """One DeepSeek-V4 attention layer (see the module doc). ``compress_ratio`` 0: sliding window only;
    ``indexer``: CSA's lightning indexer (with its overlapping two-series compressor)."""

    hidden_size: int
    num_attention_heads: int
    head_dim: int
    q_lora_rank: int
    o_groups: int
    o_lora_rank: int
    rope_dim: int
    window: int | None
    compress_ratio: int = 0
    indexer: bool = False
    index_n_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 512
    hc_mult: int = 4
    rope_theta: float = 10000.0

    kind = MixerKind.COMPRESSED_MQA
    title = "DeepSeek-V4 compressed attention"
    module = "self_attn"
    tp_replicated_modules = ("q_a_proj", "kv_proj", "compressor", "indexer", "attn_hc", "ffn_hc")
    tp_replicated_kv = True
    tp_note = "DeepSeek-V4's single shared K=V head and its compressed entries are replicated on every rank"

    def label(self) -> str:
        if not self.compress_ratio:
            return f"swa({self.window})"
        return f"{'csa' if self.indexer else 'hca'}({self.compress_ratio})"

    def summary(self) -> str:
        s = f"shared-KV MQA ({self.num_attention_heads}x{self.head_dim}), window {self.window}"
        if self.compress_ratio:
            s += f", one compressed entry per {self.compress_ratio} tokens"
        if self.indexer:
            s += f" (top {self.index_topk}; indexer {self.index_n_heads}x{self.index_head_dim})"
        return s

    @property
    def _width(self) -> int:
        """Channels the compressor projects per token: two overlapping series on CSA."""
        return (2 if self.indexer else 1) * self.head_dim

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, nh, d = self.hidden_size, self.num_attention_heads, self.head_dim
        _linear(out, f"{prefix}.q_a_proj", self.q_lora_rank, h, False)
        out.append(Tensor(f"{prefix}.q_a_norm.weight", (self.q_lora_rank,), "norm"))
        _linear(out, f"{prefix}.q_b_proj", nh * d, self.q_lora_rank, False)
        _linear(out, f"{prefix}.kv_proj", d, h, False)
        out.append(Tensor(f"{prefix}.kv_norm.weight", (d,), "norm"))
        _linear(out, f"{prefix}.o_a_proj", self.o_groups * self.o_lora_rank, nh * d // self.o_groups, False)
        _linear(out, f"{prefix}.o_b_proj", h, self.o_groups * self.o_lora_rank, False)
        out.append(Tensor(f"{prefix}.sinks", (nh,), "other"))
        if self.compress_ratio:
            c = f"{prefix}.compressor"
            _linear(out, f"{c}.kv_proj", self._width, h, False)
            _linear(out, f"{c}.gate_proj", self._width, h, False)
            out.append(Tensor(f"{c}.position_bias", (self.compress_ratio, self._width), "other"))
            out.append(Tensor(f"{c}.kv_norm.weight", (d,), "norm"))
            if self.indexer:
                x, di = f"{c}.indexer", self.index_head_dim
                _linear(out, f"{x}.kv_proj", 2 * di, h, False)
                _linear(out, f"{x}.gate_proj", 2 * di, h, False)
                out.append(Tensor(f"{x}.position_bias", (self.compress_ratio, 2 * di), "other"))
                out.append(Tensor(f"{x}.kv_norm.weight", (di,), "norm"))
                _linear(out, f"{x}.q_b_proj", self.index_n_heads * di, self.q_lora_rank, False)
                _linear(out, f"{x}.scorer.weights_proj", self.index_n_heads, h, False)
        layer = prefix.rsplit(".", 1)[0]
        n = self.hc_mult
        for hc in ("attn_hc", "ffn_hc"):
            out.append(Tensor(f"{layer}.{hc}.fn", ((2 + n) * n, n * h), "other"))
            out.append(Tensor(f"{layer}.{hc}.base", ((2 + n) * n,), "other"))
            out.append(Tensor(f"{layer}.{hc}.scale", (3,), "other"))
        return out

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        return self.head_dim  # the window's shared K = V

    def kv_cap(self) -> int | None:
        return self.window

    def compressed_kv(self) -> tuple[tuple[int, int], ...]:
        if not self.compress_ratio:
            return ()
        return ((self.compress_ratio, self.head_dim + (self.index_head_dim if self.indexer else 0)),)

    def state_elements(self) -> tuple[int, int]:
        """The compressors' buffers at their largest (ratio - 1 tokens of kv and gate) plus, on CSA, the
        last closed window's first series (kv and gate, ratio x head_dim each) of the compressor and of the
        indexer, which the next entry overlaps."""
        if not self.compress_ratio:
            return 0, 0
        r = self.compress_ratio - 1
        n = 2 * r * self._width
        if self.indexer:
            n += 2 * r * 2 * self.index_head_dim + 2 * self.compress_ratio * (self.head_dim + self.index_head_dim)
        return 0, n

    def buffer_elements(self, context: int) -> int:
        """The compressor state transformers holds after ``context`` tokens (``state_elements`` at its
        largest): ``context % ratio`` buffered tokens, and the overlap once a window has closed."""
        if not self.compress_ratio:
            return 0
        r = context % self.compress_ratio
        n = 2 * r * self._width
        if self.indexer:
            n += 2 * r * 2 * self.index_head_dim
            if context >= self.compress_ratio:
                n += 2 * self.compress_ratio * (self.head_dim + self.index_head_dim)
        return n

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        own = _by_module(tensors)
        trace_mhc(b, i, own, self.hc_mult, self.hidden_size, lambda: self._trace_attention(b, i, own))

    def _trace_attention(self, b, i: int, own: dict[str, list[Tensor]]) -> None:
        """The attention between the hyper-connections: compressed MQA with its compressor and indexer."""
        s, n, a = b.shape, b.shape.tokens, b.a
        nh, d = self.num_attention_heads, self.head_dim
        rep = Parallel.REPLICATED
        b.matmul("q_a_proj", own["q_a_proj"], i, "attention", parallel=rep)
        b.norm("q_a_norm", None, self.q_lora_rank, i, tensors=own["q_a_norm"])
        b.matmul("q_b_proj", own["q_b_proj"], i, "attention")
        b.norm("q_b_norm", None, nh * d, i, tensors=[])
        b.matmul("kv_proj", own["kv_proj"], i, "attention", parallel=rep)
        b.norm("kv_norm", None, d, i, tensors=own["kv_norm"])
        rope = n * (nh + 1) * self.rope_dim
        b.elementwise("rope", rope, rope, i, "attention", kernels=4, kind=OpKind.ROPE)
        tok = b.kv.nbytes(d)
        b.add(name="kv_append", kind=OpKind.KV_APPEND, category="attention", layer=i, act_read_bytes=n * d * a,
              kv_write_bytes=n * tok, kernels=1, parallel=rep)
        keys = attended_keys(s.cached_tokens, s.new_tokens, window=self.window)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, window=self.window)
        kv_read = s.batch * seen * tok
        r = self.compress_ratio
        if r:
            keys, kv_read = self._trace_compressor(b, i, own, keys, kv_read)
        b.add(name="attention", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=s.batch * nh * 4 * d * keys, act_read_bytes=n * nh * d * a, act_write_bytes=n * nh * d * a,
              kv_read_bytes=kv_read, kernels=1)
        rope_o = n * nh * self.rope_dim
        b.elementwise("rope_out", rope_o, rope_o, i, "attention", kernels=2, kind=OpKind.ROPE)
        b.matmul("o_a_proj", own["o_a_proj"], i, "attention", parallel=Parallel.ROW)  # grouped: o_groups blocks
        b.matmul("o_b_proj", own["o_b_proj"], i, "attention", parallel=rep)

    def _trace_compressor(self, b, i: int, own: dict[str, list[Tensor]], keys: int, kv_read: int) -> tuple[int, int]:
        """The compressor's projections on every new token, the entries whose windows close in this step
        (pooled, normed, roped, appended), the indexer (CSA) and the entries the attention reads."""
        s, a, r = b.shape, b.a, self.compress_ratio
        d, rep = self.head_dim, Parallel.REPLICATED
        b.matmul("compressor.kv_proj", own["compressor.kv_proj"], i, "attention", parallel=rep)
        b.matmul("compressor.gate_proj", own["compressor.gate_proj"], i, "attention", parallel=rep)
        end = s.cached_tokens + s.new_tokens
        closed = s.batch * (end // r - s.cached_tokens // r)  # entries emitted in this step
        entry = b.kv.nbytes(d)
        pool_in = (2 if self.indexer else 1) * r * d
        b.add(name="compress", kind=OpKind.KV_APPEND, category="attention", layer=i,
              act_read_bytes=closed * 2 * pool_in * a, kv_write_bytes=closed * entry, kernels=6, parallel=rep)
        entries = s.batch * (end // r)  # every entry of the sequences so far
        if self.indexer:
            self._trace_indexer(b, i, own, closed, entries)
            seen = entries_seen(s.cached_tokens, s.new_tokens, r, self.index_topk)
            read = min(entries, s.new_tokens * s.batch * self.index_topk)
            return keys + s.batch * seen, kv_read + read * entry
        seen = entries_seen(s.cached_tokens, s.new_tokens, r)
        return keys + s.batch * seen, kv_read + entries * entry

    def _trace_indexer(self, b, i: int, own: dict[str, list[Tensor]], closed: int, entries: int) -> None:
        s, n, a, r = b.shape, b.shape.tokens, b.a, self.compress_ratio
        hi, di, rep = self.index_n_heads, self.index_head_dim, Parallel.REPLICATED
        x = "compressor.indexer"
        b.matmul(f"{x}.kv_proj", own[f"{x}.kv_proj"], i, "attention", parallel=rep)
        b.matmul(f"{x}.gate_proj", own[f"{x}.gate_proj"], i, "attention", parallel=rep)
        tok = b.kv.nbytes(di)
        b.add(name=f"{x}.compress", kind=OpKind.KV_APPEND, category="attention", layer=i,
              act_read_bytes=closed * 2 * 2 * r * di * a, kv_write_bytes=closed * tok, kernels=6, parallel=rep)
        b.matmul(f"{x}.q_b_proj", own[f"{x}.q_b_proj"], i, "attention", parallel=rep)
        b.matmul(f"{x}.weights_proj", own[f"{x}.scorer.weights_proj"], i, "attention", parallel=rep)
        rope = n * hi * self.rope_dim
        b.elementwise(f"{x}.rope", rope, rope, i, "attention", kernels=2, kind=OpKind.ROPE)
        scored = entries_seen(s.cached_tokens, s.new_tokens, r)  # every closed entry, per sequence
        b.add(name=f"{x}.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * scored * hi * (di + 1), act_read_bytes=n * hi * (di + 1) * a,
              act_write_bytes=s.batch * scored * 4, kv_read_bytes=entries * tok, kernels=1, parallel=rep)
        selected = entries_seen(s.cached_tokens, s.new_tokens, r, self.index_topk)
        b.add(name=f"{x}.top{self.index_topk}", kind=OpKind.ATTENTION, category="attention", layer=i,
              act_read_bytes=s.batch * scored * 4, act_write_bytes=s.batch * selected * 4, kernels=1, parallel=rep)

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        from ..errors import OptionError

        if self.num_attention_heads % tp or self.o_groups % tp:
            raise OptionError(f"--tp {tp}: {self.num_attention_heads} heads in {self.o_groups} output groups "
                              f"do not split {tp} ways")
        return 1, 1  # the one shared K = V head and the compressed entries are whole on every rank

    # ---- what-ifs and sundries -------------------------------------------------------------------

    def with_window(self, window: int) -> None:
        return None  # the compressed layers' window is part of the architecture

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return ((self.rope_dim, self.rope_theta),)

    def attention_shape(self) -> tuple[int, int] | None:
        return self.num_attention_heads, self.head_dim


def hc_pre(b, i: int, own: list[Tensor], name: str, hc: int, hidden: int) -> None:
    """A manifold-constrained hyper-connection's weights (DeepSeek-V4, GLM-5.3-Flash; ``own``: its ``fn`` /
    ``base`` / ``scale``): the ``hc`` streams RMS-normed, ``fn`` (a replicated fp32 matmul), the Sinkhorn iterations
    on the hc x hc comb matrix (bytes only) and the collapse to one stream."""
    n = b.shape.tokens
    b.norm(f"{name}.input_norm", None, hc * hidden, i, tensors=[])
    fn = next(t for t in own if t.name.endswith(".fn"))
    b.add(name=f"{name}.fn", kind=OpKind.MATMUL, category="other", layer=i, flops=2 * n * fn.numel,
          weight_bytes=b.fmt.bytes_of(own), act_read_bytes=n * hc * hidden * 4,
          act_write_bytes=n * fn.shape[0] * 4, kernels=1, parallel=Parallel.REPLICATED)
    b.elementwise(f"{name}.collapse", n * hc * hidden, n * hidden, i, "other", kernels=2)


def hc_post(b, i: int, name: str, hc: int, hidden: int) -> None:
    """A sublayer's output weighted into every one of the ``hc`` streams (``post``, elementwise) plus the streams
    mixed by the hc x hc ``comb`` matrix: a matmul (transformers' ``torch.matmul(comb.T, streams)``), 2·hc²·hidden
    FLOPs per token. After the attention and after the FFN."""
    n = b.shape.tokens
    b.add(name=name, kind=OpKind.ELEMENTWISE, category="other", layer=i, flops=2 * n * hc * hc * hidden,
          act_read_bytes=(n * (hc + 1) * hidden + n * hc * hc) * b.a, act_write_bytes=n * hc * hidden * b.a,
          kernels=2)


def trace_mhc(b, i: int, own: dict[str, list[Tensor]], hc: int, hidden: int, block) -> None:
    """A layer's manifold-constrained hyper-connections around ``block`` (the mixer's own trace; DeepSeek-V4,
    GLM-5.3-Flash; transformers' decoder layer forward): the attention's weights and collapse, the block, its output
    weighted into the streams plus the comb-mixed streams (a matmul), then the FFN's weights and collapse and, for
    the FFN's output (traced after this mixer), its comb mix. ``own``: the layer's tensors by module
    (``attn_hc``, ``ffn_hc``)."""
    hc_pre(b, i, own["attn_hc"], "attn_hc", hc, hidden)
    block()
    hc_post(b, i, "hc_post", hc, hidden)
    hc_pre(b, i, own["ffn_hc"], "ffn_hc", hc, hidden)
    hc_post(b, i, "ffn_hc.post", hc, hidden)


def _by_module(tensors: dict[str, list[Tensor]]) -> dict[str, list[Tensor]]:
    """The layer's tensors keyed by their module path below the layer, ``self_attn.`` dropped
    (``compressor.indexer.q_b_proj``, ``attn_hc``)."""
    out: dict[str, list[Tensor]] = {}
    for ts in tensors.values():
        for t in ts:
            parts = t.name.split(".")
            path = parts[3:-1]  # model.layers.N.<path>.<param>
            if path and path[0] == "self_attn":
                path = path[1:]
            out.setdefault(".".join(path), []).append(t)
    return out
