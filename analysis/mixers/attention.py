"""Softmax attention (MHA, GQA, MQA; full, sliding-window and chunked; Gemma 4's K = V and shared-KV
layers) and ``GatedAttention`` (Qwen3-Next's output gate, Phi's biased q/k LayerNorms): the spec, its
tensors, trace, cache and tensor-parallel split (the protocol: ``analysis.mixers.base``).

Attention geometry: a new token at position ``p`` attends ``p+1`` keys (itself included);
``min(p+1, window)`` in a sliding layer; ``p mod chunk + 1`` in a chunked layer. A step's FLOPs sum
this exact causal triangle (``attended_keys``); its KV read is every key position its queries see,
the ones it appends included (``distinct_keys``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


def _tri(n: int) -> int:
    return n * (n + 1) // 2


def attended_keys(cached: int, new: int, window: int | None = None, chunk: int | None = None) -> int:
    """Σ over the ``new`` queries at positions cached..cached+new-1 of the keys each attends."""
    if window:
        def s(n: int) -> int:  # Σ_{q=1..n} min(q, W)
            return _tri(n) if n <= window else _tri(window) + (n - window) * window
        return s(cached + new) - s(cached)
    if chunk:
        def g(n: int) -> int:  # Σ_{p=0..n-1} (p mod K) + 1
            return (n // chunk) * _tri(chunk) + _tri(n % chunk)
        return g(cached + new) - g(cached)
    return new * cached + _tri(new)


def distinct_keys(cached: int, new: int, window: int | None = None, chunk: int | None = None) -> int:
    """How many key positions the step's queries read, appended ones included."""
    end = cached + new
    if window:
        first = max(0, cached - window + 1)
    elif chunk:
        first = (cached // chunk) * chunk
    else:
        first = 0
    return end - first


@frozen
class Attention(MixerSpec):
    """Softmax attention with ``num_key_value_heads`` K/V heads (MHA, GQA and MQA alike).

    ``window``: a sliding window of that many keys (the query included); ``chunk``: chunked attention
    (a query sees the keys of its own chunk up to itself). ``rotary_dim`` 0 means no RoPE (NoPE).
    """

    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    v_head_dim: int
    q_bias: bool = False
    k_bias: bool = False
    v_bias: bool = False
    o_bias: bool = False
    fused_qkv: bool = False
    q_norm_dim: int = 0  # q_norm weight size: head_dim (per-head norm) or heads*head_dim (olmo2)
    k_norm_dim: int = 0
    window: int | None = None
    chunk: int | None = None
    rotary_dim: int = 0
    rope_theta: float = 10000.0
    sinks: bool = False
    qk_norm_per_head: bool = False  # Cohere: LayerNorms with a (heads, head_dim) weight, over head_dim
    alibi: bool = False  # BLOOM: a per-head linear bias on the scores (slope x key position), no RoPE
    # Gemma 4: ``k_eq_v`` — no v_proj, V is the K projection (then v-normed, not roped: K and V are still
    # cached apart); ``v_norm`` — a weightless RMSNorm of V over head_dim; ``kv_shared`` — the layer has
    # no K/V projections and no cache of its own: it attends over the K/V of the last earlier layer of
    # its type (``num_kv_shared_layers``)
    k_eq_v: bool = False
    v_norm: bool = False
    kv_shared: bool = False
    # Hunyuan-Large's cross-layer attention (CLA): a ``kv_shared`` layer reading the previous layer's K/V (its
    # rotated, un-normed keys) that, with q/k norms (k_norm_dim), norms those keys with a key_layernorm of its own
    cla: bool = False
    # BitNet: an RMSNorm over the attention output (attn_sub_norm, heads x v_head_dim) before o_proj
    o_norm: bool = False

    kind = MixerKind.ATTENTION
    title = "attention"
    module = "self_attn"
    # with fewer KV heads than ranks, each rank computes a whole KV head: k/v split kv_divisor ways
    tp_kv_modules = ("k_proj", "v_proj")
    # what ``GatedAttention`` adds (fields there): plain attention has neither
    output_gate = False
    lf_gate = False  # Yuan 2.0's localized filtering before q/k (analysis.mixers.lfa)
    qk_norm_bias = False
    head_gate = False
    proj_gate = False

    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def k_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def v_dim(self) -> int:
        return self.num_key_value_heads * self.v_head_dim

    @property
    def o_in(self) -> int:
        return self.num_attention_heads * self.v_head_dim

    # ---- identity --------------------------------------------------------------------------------

    def label(self) -> str:
        if self.window:
            label = f"sliding({self.window})"
        elif self.chunk:
            label = f"chunked({self.chunk})"
        else:
            label = "full" if self.rotary_dim or self.num_attention_heads == 0 else "full-nope"
        return label + "+shared-kv" if self.kv_shared else label

    def summary(self) -> str:
        h, kv = self.num_attention_heads, self.num_key_value_heads
        kind = "MHA" if kv == h else "MQA" if kv == 1 else f"GQA ({kv} KV heads)"
        return f"{kind}, head_dim {self.head_dim}"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        if self.fused_qkv:
            n = self.q_dim + self.k_dim + self.v_dim
            _linear(out, f"{prefix}.qkv_proj", n, h, self.q_bias or self.k_bias or self.v_bias)
        else:
            _linear(out, f"{prefix}.q_proj", self.q_dim, h, self.q_bias)
            if not self.kv_shared:
                _linear(out, f"{prefix}.k_proj", self.k_dim, h, self.k_bias)
                if not self.k_eq_v:
                    _linear(out, f"{prefix}.v_proj", self.v_dim, h, self.v_bias)
        _linear(out, f"{prefix}.o_proj", h, self.o_in, self.o_bias)
        per_head = self.qk_norm_per_head
        if self.q_norm_dim:
            shape = (self.num_attention_heads, self.head_dim) if per_head else (self.q_norm_dim,)
            out.append(Tensor(f"{prefix}.q_norm.weight", shape, "norm"))
        if self.k_norm_dim and (not self.kv_shared or self.cla):
            shape = (self.num_key_value_heads, self.head_dim) if per_head else (self.k_norm_dim,)
            out.append(Tensor(f"{prefix}.k_norm.weight", shape, "norm"))
        if self.sinks:
            out.append(Tensor(f"{prefix}.sinks", (self.num_attention_heads,), "other"))
        if self.o_norm:
            out.append(Tensor(f"{prefix}.attn_sub_norm.weight", (self.o_in,), "norm"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        s, n, a = b.shape, b.shape.tokens, b.a
        if self.fused_qkv:
            b.matmul("qkv_proj", tensors["qkv_proj"], i, "attention")
        else:
            # Gemma 4: no v_proj where K = V, no k/v projections in a layer that reads another layer's K/V
            # (engines run them as one qkv_proj GEMM: the first present launches it)
            present = [p for p in ("q_proj", "k_proj", "v_proj") if p in tensors]
            for p in present:
                b.matmul(p, tensors[p], i, "attention", fused=p != present[0])
        if b.spec.numerics.clip_qkv is not None:  # DBRX: q, k and v clamped in place
            qkv = n * (self.q_dim + self.k_dim + self.v_dim)
            b.elementwise("clip_qkv", qkv, qkv, i, "attention")
        if b.spec.numerics.value_scale != 1.0 and not self.kv_shared:  # MiMo-V2-Flash: V scaled before caching
            v = n * self.v_dim
            b.elementwise("value_scale", v, v, i, "attention")
        own_k = 0 if self.kv_shared else self.k_dim  # keys this layer projects, norms and ropes itself
        if self.q_norm_dim:
            b.norm("q_norm", None, self.q_dim, i, tensors=tensors.get("q_norm", []))
            if own_k or (self.cla and self.k_norm_dim):  # Hunyuan CLA: its own norm of the shared keys
                b.norm("k_norm", None, self.k_dim, i, tensors=tensors.get("k_norm", []))
        if self.v_norm and not self.kv_shared:
            b.norm("v_norm", None, self.v_dim, i, tensors=[])
        if self.rotary_dim:
            qk = n * (self.q_dim + own_k)
            b.elementwise("rope", qk, qk, i, "attention", kernels=10, kind=OpKind.ROPE)
        if b.spec.numerics.query_position_scale is not None:  # Ministral 3: the queries scaled by position
            q = n * self.q_dim
            b.elementwise("query_scale", q, q, i, "attention")
        kv_elems = self.kv_elements_per_token()
        if kv_elems:
            b.add(name="kv_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
                  act_read_bytes=n * kv_elems * a, kv_write_bytes=n * b.kv.nbytes(kv_elems), kernels=2, launches=2)
        keys = attended_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        flops = s.batch * self.num_attention_heads * 2 * (self.head_dim + self.v_head_dim) * keys
        sinks = b.fmt.bytes_of(tensors.get("sinks", []))
        read = self.kv_elements_read_per_token()  # a shared-KV layer reads its source layer's cache
        b.add(name="attention", kind=OpKind.ATTENTION, category="attention", layer=i, flops=flops, weight_bytes=sinks,
              act_read_bytes=n * self.q_dim * a, act_write_bytes=n * self.o_in * a,
              kv_read_bytes=s.batch * seen * b.kv.nbytes(read), kernels=1, launches=3)
        if self.o_norm:  # BitNet: the attention output normed before o_proj
            b.norm("attn_sub_norm", None, self.o_in, i, tensors=tensors.get("attn_sub_norm", []))
        b.matmul("o_proj", tensors["o_proj"], i, "attention", parallel=Parallel.ROW)

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        """Elements one token adds to this layer's cache: K and V of every KV head (none for a layer
        that reads another layer's cache)."""
        return 0 if self.kv_shared else self.kv_elements_read_per_token()

    def kv_elements_read_per_token(self) -> int:
        """Elements of one cached token the attention reads: K and V of every KV head."""
        return self.num_key_value_heads * (self.head_dim + self.v_head_dim)

    def kv_cap(self) -> int | None:
        return self.window or self.chunk or None

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        """Query heads split ``tp`` ways; KV heads split too when ``tp`` divides them, else each is
        replicated on ``tp / kv`` ranks (``tp`` a multiple of them); any other ratio is refused."""
        if self.num_attention_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_attention_heads} attention heads do not split {tp} ways "
                              f"(layer {layer}); choose a tp that divides {self.num_attention_heads}")
        kv = self.num_key_value_heads
        if kv % tp == 0:
            return tp, 1
        if tp % kv == 0:
            return kv, tp // kv
        raise OptionError(f"--tp {tp}: {kv} KV heads neither split {tp} ways nor replicate evenly "
                          f"(layer {layer}); choose a tp that divides or is a multiple of {kv}")

    def tp_shard(self, tp: int) -> "Attention":
        """``H/tp`` query heads; ``K/tp`` KV heads, or one (replicated) when ``tp`` exceeds them."""
        kv = self.num_key_value_heads // tp if self.num_key_value_heads % tp == 0 else 1
        return replace(self, num_attention_heads=self.num_attention_heads // tp, num_key_value_heads=kv)

    # ---- what-ifs and sundries -------------------------------------------------------------------

    def with_window(self, window: int) -> "Attention":
        """A full-attention layer, or a wider window, gets ``window``; chunked and narrower layers stay."""
        if (not self.window and not self.chunk) or (self.window and self.window > window):
            return replace(self, window=window)
        return self

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return ((self.rotary_dim, self.rope_theta),) if self.rotary_dim else ()

    def attention_shape(self) -> tuple[int, int] | None:
        return max(1, self.num_attention_heads // max(1, self.num_key_value_heads)), self.head_dim


@frozen
class GatedAttention(Attention):
    """Softmax attention with what ``Attention`` does not carry.

    ``output_gate`` (Qwen3-Next): ``q_proj`` also emits a gate per query feature, so it has
    ``2 · num_attention_heads · head_dim`` rows; the attention output is multiplied by
    ``sigmoid(gate)`` before ``o_proj``. ``qk_norm_bias`` (Phi's ``qk_layernorm``): the q/k norms
    are LayerNorms with a bias. ``head_gate`` (LFM3): a bias-free ``g_proj`` (hidden -> heads) whose
    sigmoid scales each head's output before ``o_proj``. ``proj_gate`` (AFMoE / Trinity): its own bias-free
    ``gate_proj`` (hidden -> heads · v_head_dim) whose sigmoid scales each output feature before ``o_proj``.
    Laguna's ``g_proj`` gate is a softplus (``gate_softplus``), per head or, with ``gate_per_element``, per
    output feature (``g_proj``: hidden -> heads · v_head_dim).
    KV cache, windows and everything else are those of ``Attention``.
    """

    output_gate: bool = False
    qk_norm_bias: bool = False
    head_gate: bool = False
    proj_gate: bool = False
    gate_softplus: bool = False  # Laguna: softplus(g_proj(x)) in place of LFM3's sigmoid
    gate_per_element: bool = False  # Laguna's "per-element" gating: g_proj emits one gate per output feature
    # Beam: a learned per-head bias ``gate_bias`` (heads) added to proj_gate's gate before the sigmoid
    gate_bias: bool = False

    def __post_init__(self) -> None:
        if self.output_gate and self.fused_qkv:
            raise ValueError("GatedAttention: an output gate with a fused qkv_proj is not modelled")

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        for t in super().tensors(prefix):
            if self.output_gate and t.name == f"{prefix}.q_proj.weight":
                t = Tensor(t.name, (2 * self.q_dim, self.hidden_size), t.kind)
            elif self.output_gate and t.name == f"{prefix}.q_proj.bias":
                t = Tensor(t.name, (2 * self.q_dim,), t.kind)
            out.append(t)
            if self.qk_norm_bias and t.name in (f"{prefix}.q_norm.weight", f"{prefix}.k_norm.weight"):
                out.append(Tensor(t.name[: -len("weight")] + "bias", t.shape, "norm"))
        if self.head_gate:
            _linear(out, f"{prefix}.g_proj", self.gate_dim, self.hidden_size, False)
        if self.proj_gate:
            _linear(out, f"{prefix}.gate_proj", self.o_in, self.hidden_size, False)
            if self.gate_bias:
                out.append(Tensor(f"{prefix}.gate_bias", (self.num_attention_heads,), "bias"))
        return out

    @property
    def gate_dim(self) -> int:
        """g_proj's outputs: one gate per head, or (Laguna's per-element gating) one per output feature."""
        return self.o_in if self.gate_per_element else self.num_attention_heads

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        super().trace(b, i, tensors)
        if self.output_gate:
            # Qwen3-Next: the attention output is multiplied by sigmoid(gate) before o_proj; the gate is
            # the second half of q_proj's output (q_dim features). Reads gate and output, writes output.
            o_proj = b.ops.pop()
            n = b.shape.tokens
            b.elementwise("output_gate", n * (self.q_dim + self.o_in), n * self.o_in, i, "attention", kernels=2)
            b.ops.append(o_proj)
        if self.head_gate:
            # LFM3: sigmoid(g_proj(x)), one scalar per head, scales that head's output before o_proj (Laguna:
            # softplus, per head or per output feature)
            o_proj = b.ops.pop()
            n = b.shape.tokens
            b.matmul("g_proj", tensors["g_proj"], i, "attention")
            b.elementwise("head_gate", n * (self.gate_dim + self.o_in), n * self.o_in, i, "attention", kernels=2)
            b.ops.append(o_proj)
        if self.proj_gate:
            # AFMoE: sigmoid(gate_proj(x)) scales every output feature before o_proj (reads gate and output)
            o_proj = b.ops.pop()
            n = b.shape.tokens
            # (the layer's dense MLP has a gate_proj too: the short name holds both)
            own = [t for t in tensors["gate_proj"] if f".{self.module}." in t.name]
            own += [t for t in tensors.get("gate_bias", []) if f".{self.module}." in t.name]  # Beam's per-head bias
            b.matmul("attn_gate_proj", own, i, "attention")
            b.elementwise("output_gate", 2 * n * self.o_in, n * self.o_in, i, "attention", kernels=2)
            b.ops.append(o_proj)
