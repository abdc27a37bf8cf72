"""Qwen4-Exp's layer (``qwen4_exp_text``): a Gated DeltaNet or a QSA attention mixer inside gated
hyper-connections, optionally with a per-layer n-gram embedding (PLE) (the protocol: ``analysis.mixers.base``).
transformers' models/qwen4_exp/modular_qwen4_exp.py (5.24):

- the residual stream is ``hc_count`` streams of hidden_size (``hc = hc_count · hidden`` features); the layer
  has no input / post-attention norms. Each of its two sub-blocks (mixer, FFN) is wrapped by a
  ``Qwen4ExpTextGatedResidual`` (``attn_hyper_connection``, ``mlp_hyper_connection``): ``hc_norm`` (an RMSNorm
  over each stream, a weight of hc), ``input_mix_weight_down`` (hc -> hc_lowrank), ``input_mix_weight_up``
  (hc_lowrank -> hc): a sigmoid weight per feature, the weighted streams averaged into the block's input;
  ``block_inject_weight`` (hc -> hc_count): how much of the block's output each stream receives;
- ``linear_attention`` layers: Qwen3.5's Gated DeltaNet (``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``,
  ``in_proj_a``; ``GatedDeltaNet.split_in_proj``);
- ``indexed_attention`` layers: Qwen3.5's gated attention (q_proj twice wide, per-head q/k norms) behind a QSA
  indexer (``self_attn.indexer``: ``index_qk_proj`` hidden -> (index heads + 1) · index_head_dim, q/k RMSNorms
  over index_head_dim). The indexer caches every token's raw key (index_head_dim), averages each complete
  block of ``compress_ratio`` keys, scores the blocks per query (``Σ_h relu(q_h · k)``) and keeps the best
  ``budget / compress_ratio`` blocks; the query attends their tokens and the incomplete last block's;
- PLE (``ple_layer_ids``, linear layers only): ``ple.ple_embedding.ngram_embedding`` (hashed 2..ngram_size-grams,
  ``(ngram_size - 1) · heads_per_ngram`` heads, each its own prime-sized slice of rows ``ple_embed_dim / heads``
  wide), ``key_proj`` (ple_embed_dim -> hc), ``value_proj`` (ple_embed_dim -> hidden), three RMSNorms over hc
  and a dilated depthwise conv (hc channels, ``ple_conv_kernel_size`` taps, dilation ngram_size), added to the
  streams before the hyper-connection.

Cache per token: the attention's K and V plus the indexer's raw key (index_head_dim). Per sequence: the
DeltaNet's conv window and state, plus on PLE layers the dilated conv's window ((kernel - 1) · ngram_size · hc);
transformers also keeps the last ngram_size - 1 token ids (int64) there and, on the first indexed layer, the
positions (3 int64 per token) for the indexer, neither counted (ids and positions, not activations).

Attention FLOPs are those of a sparse kernel over the selected tokens (``qsa_keys``); transformers' eager path
masks a dense score matrix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Union

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import GatedAttention, _tri, distinct_keys
from .base import MixerKind, MixerSpec
from .compressed import entries_seen
from .deltanet import GatedDeltaNet

HC_MODULES = ("attn_hyper_connection", "mlp_hyper_connection")


def qsa_keys(cached: int, new: int, ratio: int, blocks: int) -> int:
    """Σ over the queries at positions cached..cached+new-1 of the tokens QSA selects: with v = p + 1 visible
    keys, ``min(v // ratio, blocks) · ratio + v % ratio`` (the best ``blocks`` complete blocks and the tail)."""
    last = (blocks + 1) * ratio - 1  # up to here every visible key is selected

    def g(n: int) -> int:
        s = _tri(min(n, last))
        m = n - last
        if m > 0:
            c, rem = divmod(m, ratio)
            s += m * blocks * ratio + c * ratio * (ratio - 1) // 2 + rem * (rem - 1) // 2
        return s
    return g(cached + new) - g(cached)


@frozen
class HyperBlock(MixerSpec):
    """One Qwen4-Exp layer's mixer with its hyper-connections (see the module doc). ``index_n_heads`` 0: no
    indexer (a linear layer); ``ple_rows`` 0: no PLE."""

    inner: Union[GatedDeltaNet, GatedAttention]
    hidden_size: int
    hc_count: int
    hc_lowrank: int
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_budget: int = 0
    index_ratio: int = 0
    ple_embed_dim: int = 0
    ple_heads: int = 0
    ple_rows: int = 0
    ple_conv_kernel: int = 0
    ngram_size: int = 0

    kind = MixerKind.HYPER_BLOCK
    title = "Qwen4-Exp hyper-connected"
    tp_replicated_modules = ("index_qk_proj", "input_mix_weight_down", "input_mix_weight_up", "block_inject_weight",
                             "key_proj", "value_proj")

    @property
    def module(self) -> str:  # type: ignore[override]
        return self.inner.module

    @property
    def hc(self) -> int:
        return self.hc_count * self.hidden_size

    def label(self) -> str:
        label = f"qsa({self.index_budget})" if self.index_n_heads else self.inner.label()
        return label + "+ple" if self.ple_rows else label

    def summary(self) -> str:
        s = f"{self.inner.summary()} in {self.hc_count} hyper-connection streams"
        if self.index_n_heads:
            s += f", QSA top {self.index_budget} tokens in blocks of {self.index_ratio}"
        return s

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out = self.inner.tensors(prefix)
        h, hc = self.hidden_size, self.hc
        if self.index_n_heads:
            x, d = f"{prefix}.indexer", self.index_head_dim
            _linear(out, f"{x}.index_qk_proj", (self.index_n_heads + 1) * d, h, False)
            out.append(Tensor(f"{x}.q_layernorm.weight", (d,), "norm"))
            out.append(Tensor(f"{x}.k_layernorm.weight", (d,), "norm"))
        layer = prefix.rsplit(".", 1)[0]
        if self.ple_rows:
            p, e = f"{layer}.ple", self.ple_embed_dim
            out.append(Tensor(f"{p}.ple_embedding.ngram_embedding.weight", (self.ple_rows, e // self.ple_heads),
                              "embedding"))
            _linear(out, f"{p}.key_proj", hc, e, False)
            _linear(out, f"{p}.value_proj", h, e, False)
            for norm in ("norm_key", "norm_query", "norm_conv"):
                out.append(Tensor(f"{p}.{norm}.weight", (hc,), "norm"))
            out.append(Tensor(f"{p}.conv1d.weight", (hc, 1, self.ple_conv_kernel), "conv"))
        for name in HC_MODULES:
            p = f"{layer}.{name}"
            out.append(Tensor(f"{p}.hc_norm.weight", (hc,), "norm"))
            _linear(out, f"{p}.input_mix_weight_down", self.hc_lowrank, hc, False)
            _linear(out, f"{p}.input_mix_weight_up", hc, self.hc_lowrank, False)
            _linear(out, f"{p}.block_inject_weight", self.hc_count, hc, False)
        return out

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        return self.inner.kv_elements_per_token() + self.index_head_dim

    def ple_conv_elements(self) -> int:
        """The PLE conv's window: (kernel - 1) · dilation taps of hc channels (0 without PLE)."""
        return (self.ple_conv_kernel - 1) * self.ngram_size * self.hc if self.ple_rows else 0

    def state_elements(self) -> tuple[int, int]:
        conv, rec = self.inner.state_elements()
        return conv + self.ple_conv_elements(), rec

    def recurrent_dtype(self, state_dtype):
        return self.inner.recurrent_dtype(state_dtype)

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, h, hc = b.shape.tokens, self.hidden_size, self.hc
        if self.ple_rows:
            self._trace_ple(b, i, tensors)
        self._trace_hc(b, i, tensors, HC_MODULES[0])
        if self.index_n_heads:
            self._trace_indexer(b, i, tensors)
        start = len(b.ops)
        self.inner.trace(b, i, tensors)
        if self.index_n_heads:  # the attention over the selected tokens only
            s, inner = b.shape, self.inner
            keys = qsa_keys(s.cached_tokens, s.new_tokens, self.index_ratio, self.index_budget // self.index_ratio)
            seen = min(distinct_keys(s.cached_tokens, s.new_tokens), keys)
            for j in range(start, len(b.ops)):
                o = b.ops[j]
                if o.name == "attention":
                    b.ops[j] = replace(o, flops=s.batch * inner.num_attention_heads * 2 * (inner.head_dim
                                                                                            + inner.v_head_dim) * keys,
                                       kv_read_bytes=s.batch * seen * b.kv.nbytes(inner.kv_elements_read_per_token()))
        b.elementwise("attn_inject", n * (hc + h + self.hc_count), n * hc, i, "other", kernels=2)
        self._trace_hc(b, i, tensors, HC_MODULES[1])
        b.elementwise("mlp_inject", n * (hc + h + self.hc_count), n * hc, i, "other", kernels=2)

    def _trace_hc(self, b, i: int, tensors: dict[str, list[Tensor]], name: str) -> None:
        """A gated residual: the streams normed, the low-rank mixer (down, up), the weighted mean of the
        streams (the block's input) and the injection weights."""
        n, hc = b.shape.tokens, self.hc
        own = {t.name.split(f".{name}.")[1].split(".")[0]: t for t in tensors[name]}
        rep = Parallel.REPLICATED
        b.norm(f"{name}.hc_norm", None, hc, i, tensors=[own["hc_norm"]])
        b.matmul(f"{name}.input_mix_weight_down", [own["input_mix_weight_down"]], i, "other", parallel=rep)
        b.matmul(f"{name}.input_mix_weight_up", [own["input_mix_weight_up"]], i, "other", parallel=rep)
        b.elementwise(f"{name}.mix", 2 * n * hc, n * self.hidden_size, i, "other", kernels=3)
        b.matmul(f"{name}.block_inject_weight", [own["block_inject_weight"]], i, "other", parallel=rep)

    def _trace_indexer(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The indexer's projection and norms, its raw key appended, every complete block of the visible keys
        pooled and scored per query (reading every cached raw key), the top blocks picked."""
        s, n, a = b.shape, b.shape.tokens, b.a
        hi, d, r = self.index_n_heads, self.index_head_dim, self.index_ratio
        own = {t.name.split(".indexer.")[1].split(".")[0]: t for t in tensors["indexer"]}
        rep = Parallel.REPLICATED
        b.matmul("indexer.index_qk_proj", [own["index_qk_proj"]], i, "attention", parallel=rep)
        b.norm("indexer.q_layernorm", None, hi * d, i, tensors=[own["q_layernorm"]])
        rope = n * hi * d
        b.elementwise("indexer.rope", rope, rope, i, "attention", kernels=4, kind=OpKind.ROPE)
        b.add(name="indexer.key_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
              act_read_bytes=n * d * a, kv_write_bytes=n * b.kv.nbytes(d), kernels=1, parallel=rep)
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        blocks = entries_seen(s.cached_tokens, s.new_tokens, r)  # complete blocks each query scores
        b.add(name="indexer.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * blocks * hi * d, weight_bytes=b.fmt.bytes_of([own["k_layernorm"]]),
              act_read_bytes=n * hi * d * a, act_write_bytes=s.batch * blocks * 4,
              kv_read_bytes=s.batch * seen * b.kv.nbytes(d), kernels=4, parallel=rep)
        picked = min(blocks, s.new_tokens * (self.index_budget // r))
        b.add(name=f"indexer.top{self.index_budget // r}", kind=OpKind.ATTENTION, category="attention", layer=i,
              act_read_bytes=s.batch * blocks * 4, act_write_bytes=s.batch * picked * 4, kernels=1, parallel=rep)

    def _trace_ple(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """PLE: the hashed n-gram rows looked up (one per head and token), key and value projections, the
        gate of each stream, the dilated conv over the gated values (its window is state), the add."""
        n, a, h, hc = b.shape.tokens, b.a, self.hidden_size, self.hc
        own = {t.name.split(".ple.")[1].split(".")[0]: t for t in tensors["ple"]}
        table = own["ple_embedding"]
        b.add(name="ple.ngram_embedding", kind="embedding", category="embedding", layer=i,
              weight_bytes=n * self.ple_heads * (b.fmt.tensor_bytes(table) // table.shape[0]),
              act_write_bytes=n * self.ple_embed_dim * a, kernels=3)
        b.matmul("ple.key_proj", [own["key_proj"]], i, "other", parallel=Parallel.REPLICATED)
        b.matmul("ple.value_proj", [own["value_proj"]], i, "other", parallel=Parallel.REPLICATED)
        b.norm("ple.norm_key", None, hc, i, tensors=[own["norm_key"]])
        b.norm("ple.norm_query", None, hc, i, tensors=[own["norm_query"]])
        b.elementwise("ple.gate", n * (2 * hc + h), n * hc, i, "other", kernels=4)
        b.norm("ple.norm_conv", None, hc, i, tensors=[own["norm_conv"]])
        rd, wr = b.state_io(self.ple_conv_elements())
        b.add(name="ple.conv1d", kind="conv", category="other", layer=i, flops=2 * n * hc * self.ple_conv_kernel,
              weight_bytes=b.fmt.bytes_of([own["conv1d"]]), act_read_bytes=n * hc * a, act_write_bytes=n * hc * a,
              state_read_bytes=rd, state_write_bytes=wr, kernels=2)
        b.elementwise("ple.residual", 3 * n * hc, n * hc, i, "other", kernels=2)

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        return self.inner.tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "MixerSpec | None":
        return None if self.index_n_heads else self  # a window over QSA's selection is not modelled

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return self.inner.rope_tables()

    def attention_shape(self) -> tuple[int, int] | None:
        return self.inner.attention_shape()
