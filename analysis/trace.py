"""The per-operation trace of one forward step: FLOPs and bytes of every op.

One function, ``step_ops``, serves decode and prefill alike: a step processes ``new_tokens`` per
sequence for ``batch`` sequences that already hold ``cached_tokens`` each. Decode is
``new_tokens=1, cached_tokens=context``; prefill of a prompt is ``new_tokens=prompt, cached_tokens=0``.

Conventions
-----------
- FLOPs count the multiply-adds of matmuls at 2 FLOPs each (a ``(m,k)@(k,n)`` matmul is ``2·m·k·n``):
  weight matmuls, attention's q·k and p·v, and the matmul-shaped work of recurrent layers (conv taps,
  state updates and reads). Elementwise work (norms, RoPE, softmax, activations, residuals) is
  counted in bytes, not FLOPs; this is also what ``torch.utils.flop_counter`` counts.
- A new token at position ``p`` attends ``p+1`` keys (itself included); ``min(p+1, window)`` in a
  sliding layer; ``p mod chunk + 1`` in a chunked layer. Prefill sums this exact causal triangle.
- Logits are computed for the last position of each sequence only (what serving engines do).
- Bytes are split by source as LLM-Viewer does: weights read, activations read and written, KV
  read and written, recurrent state read and written. Each weight is read once per step, whatever
  the batch; a MoE step reads the experts its tokens touch: ``E·(1-(1-k/E)^N)`` expected distinct
  experts for ``N`` tokens.
- KV read per attention layer is every cached key the step's queries see, including the keys the
  step itself appends (decode at context C reads C+1 keys).
- MLA decodes in the absorbed form (queries projected into the latent space; scores over
  ``kv_lora_rank + qk_rope_head_dim`` and values over ``kv_lora_rank`` per head) and prefills in the
  expanded form (``kv_b_proj`` applied to every key's latent), as vLLM and SGLang do.
- ``kernels`` is the number of kernels an unfused eager PyTorch step launches for the op
  (approximate; a CUDA-graph replay launches one graph instead).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Iterator

from .records import frozen
from .dtypes import DType
from .spec import (MLA, MLP, Attention, GatedAttention, GatedDeltaNet, Layer, Mamba, ModelSpec, MoE, Norm,
                   ParallelHybrid, ShortConv, Tensor)
from .weights import WeightFormat


class OpKind(StrEnum):
    EMBEDDING = "embedding"
    NORM = "norm"
    MATMUL = "matmul"
    ROPE = "rope"
    KV_APPEND = "kv_append"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    ROUTER = "router"
    EXPERTS = "experts"
    CONV = "conv"
    SCAN = "scan"
    SAMPLING = "sampling"


class Parallel(StrEnum):
    """How an op splits over tensor-parallel ranks (Megatron-style, as vLLM and SGLang shard):

    - ``column``: the weight's output features split; each rank reads the whole input and writes its
      share of the output (q/k/v, gate/up, in_proj, the embedding and lm_head, conv and scan
      channels, routed experts);
    - ``row``: the weight's input features split; each rank reads its share of the input and writes
      a whole partial output, summed by the all-reduce (o_proj, down_proj, out_proj);
    - ``heads``: attention over each rank's heads; KV traffic splits with the KV heads;
    - ``replicated``: every rank does all of it (norms, residual adds, sampling, the MoE router and
      Qwen's one-output shared-expert gate: vLLM's ``ReplicatedLinear``)."""

    COLUMN = "column"
    ROW = "row"
    HEADS = "heads"
    REPLICATED = "replicated"


#: The role an op has unless its builder says otherwise.
DEFAULT_PARALLEL = {
    OpKind.MATMUL: Parallel.COLUMN, OpKind.EXPERTS: Parallel.COLUMN, OpKind.ROUTER: Parallel.REPLICATED,
    OpKind.CONV: Parallel.COLUMN, OpKind.SCAN: Parallel.COLUMN, OpKind.EMBEDDING: Parallel.COLUMN,
    OpKind.ATTENTION: Parallel.HEADS, OpKind.KV_APPEND: Parallel.HEADS, OpKind.ROPE: Parallel.HEADS,
}


@frozen
class Op:
    name: str
    kind: OpKind
    category: str  # attention | ffn | lm_head | norm | embedding | ssm | other
    layer: int | None
    flops: int = 0
    weight_bytes: int = 0
    act_read_bytes: int = 0
    act_write_bytes: int = 0
    kv_read_bytes: int = 0
    kv_write_bytes: int = 0
    state_read_bytes: int = 0
    state_write_bytes: int = 0
    kernels: int = 1
    parallel: Parallel = Parallel.REPLICATED

    @property
    def bytes(self) -> int:
        return (self.weight_bytes + self.act_read_bytes + self.act_write_bytes + self.kv_read_bytes
                + self.kv_write_bytes + self.state_read_bytes + self.state_write_bytes)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte moved."""
        return self.flops / self.bytes if self.bytes else 0.0


NUMERIC_FIELDS = ("flops", "weight_bytes", "act_read_bytes", "act_write_bytes", "kv_read_bytes",
                  "kv_write_bytes", "state_read_bytes", "state_write_bytes", "kernels")


@frozen
class StepShape:
    batch: int
    new_tokens: int
    cached_tokens: int

    @property
    def tokens(self) -> int:
        return self.batch * self.new_tokens


# ---- attention geometry --------------------------------------------------------------------------


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


def expected_experts(num_experts: int, k: int, tokens: int) -> float:
    """Expected distinct experts ``tokens`` tokens touch with top-``k`` routing over ``num_experts``
    (uniform routing): ``E·(1-(1-k/E)^N)``."""
    if num_experts <= 0 or tokens <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - k / num_experts) ** tokens)


# ---- op builders ---------------------------------------------------------------------------------


class _Builder:
    def __init__(self, spec: ModelSpec, fmt: WeightFormat, kv_dtype: DType, state_dtype: DType, shape: StepShape):
        self.spec, self.fmt, self.kv, self.state, self.shape = spec, fmt, kv_dtype, state_dtype, shape
        self.a = fmt.act.bits // 8 if fmt.act.bits >= 8 else 2
        self.ops: list[Op] = []

    def add(self, **kw) -> None:
        kw["kind"] = kind = OpKind(kw["kind"])
        kw.setdefault("parallel", DEFAULT_PARALLEL.get(kind, Parallel.REPLICATED))
        self.ops.append(Op(**kw))

    def matmul(self, name: str, tensors: list[Tensor], layer: int | None, cat: str, n_tokens: int | None = None,
               parallel: Parallel = Parallel.COLUMN) -> None:
        n = self.shape.tokens if n_tokens is None else n_tokens
        w = [t for t in tensors if t.kind != "bias" and len(t.shape) >= 2]
        n_in = w[0].shape[-1]
        macs = sum(t.numel for t in w)
        self.add(name=name, kind="matmul", category=cat, layer=layer, flops=2 * n * macs,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=n * n_in * self.a,
                 act_write_bytes=n * sum(t.shape[-2] for t in w) * self.a, kernels=1, parallel=parallel)

    def norm(self, name: str, norm: Norm | None, dim: int, layer: int | None, cat: str = "norm",
             n_tokens: int | None = None, tensors: list[Tensor] | None = None) -> None:
        n = self.shape.tokens if n_tokens is None else n_tokens
        tl = tensors if tensors is not None else (norm.tensors(name) if norm is not None else [])
        kernels = 1 if norm is not None and norm.kind == "layer" else 6
        self.add(name=name, kind="norm", category=cat, layer=layer, weight_bytes=self.fmt.bytes_of(tl),
                 act_read_bytes=n * dim * self.a, act_write_bytes=n * dim * self.a, kernels=kernels)

    def elementwise(self, name: str, reads: int, writes: int, layer: int | None, cat: str, kernels: int = 1,
                    kind: str = "elementwise") -> None:
        self.add(name=name, kind=kind, category=cat, layer=layer, act_read_bytes=reads * self.a,
                 act_write_bytes=writes * self.a, kernels=kernels)

    # ---- blocks ----------------------------------------------------------------------------------

    def embedding(self) -> None:
        n = self.shape.tokens
        h = self.spec.hidden_size
        tables = self.spec.embedding_tensors()
        per_row = sum(self.fmt.tensor_bytes(t) // t.shape[0] for t in tables)  # one row of each table per token
        self.add(name="embedding", kind="embedding", category="embedding", layer=None,
                 weight_bytes=n * per_row, act_write_bytes=n * h * self.a, kernels=len(tables))
        proj = self.spec.projection_tensors()
        if proj:  # OPT: project_in widens the token embedding to hidden_size (replicated, as vLLM runs it)
            self.matmul("project_in", proj[:1], None, "embedding", parallel=Parallel.REPLICATED)
        if self.spec.embedding_norm is not None:  # BLOOM's word_embeddings_layernorm
            self.norm("embed_layernorm", self.spec.embedding_norm, h, None,
                      tensors=self.spec.embedding_norm.tensors("model.embed_layernorm"))
        extra = self.spec.input_tensors()
        if extra:  # Gemma 4: the per-layer inputs projected from the embedding, normed per layer
            width = self.spec.num_layers * self.spec.per_layer_input_size
            self.matmul("per_layer_model_projection", [t for t in extra if t.kind == "linear"], None, "embedding",
                        parallel=Parallel.REPLICATED)
            self.norm("per_layer_projection_norm", None, width, None, tensors=[t for t in extra if t.kind == "norm"])
            self.elementwise("per_layer_inputs", 2 * n * width, n * width, None, "embedding")

    def attention(self, i: int, m: Attention, tensors: dict[str, list[Tensor]]) -> None:
        s, n, a = self.shape, self.shape.tokens, self.a
        if m.fused_qkv:
            self.matmul("qkv_proj", tensors["qkv_proj"], i, "attention")
        else:
            # Gemma 4: no v_proj where K = V, no k/v projections in a layer that reads another layer's K/V
            for p in ("q_proj", "k_proj", "v_proj"):
                if p in tensors:
                    self.matmul(p, tensors[p], i, "attention")
        if self.spec.numerics.clip_qkv is not None:  # DBRX: q, k and v clamped in place
            qkv = n * (m.q_dim + m.k_dim + m.v_dim)
            self.elementwise("clip_qkv", qkv, qkv, i, "attention")
        own_k = 0 if m.kv_shared else m.k_dim  # keys this layer projects, norms and ropes itself
        if m.q_norm_dim:
            self.norm("q_norm", None, m.q_dim, i, tensors=tensors.get("q_norm", []))
            if own_k:
                self.norm("k_norm", None, m.k_dim, i, tensors=tensors.get("k_norm", []))
        if m.v_norm and not m.kv_shared:
            self.norm("v_norm", None, m.v_dim, i, tensors=[])
        if m.rotary_dim:
            qk = n * (m.q_dim + own_k)
            self.elementwise("rope", qk, qk, i, "attention", kernels=10, kind="rope")
        kv_elems = m.kv_elements_per_token()
        if kv_elems:
            self.add(name="kv_append", kind="kv_append", category="attention", layer=i,
                     act_read_bytes=n * kv_elems * a, kv_write_bytes=n * self.kv.nbytes(kv_elems), kernels=2)
        keys = attended_keys(s.cached_tokens, s.new_tokens, m.window, m.chunk)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, m.window, m.chunk)
        flops = s.batch * m.num_attention_heads * 2 * (m.head_dim + m.v_head_dim) * keys
        sinks = self.fmt.bytes_of(tensors.get("sinks", []))
        read = m.kv_elements_read_per_token()  # a shared-KV layer reads its source layer's cache
        self.add(name="attention", kind="attention", category="attention", layer=i, flops=flops, weight_bytes=sinks,
                 act_read_bytes=n * m.q_dim * a, act_write_bytes=n * m.o_in * a,
                 kv_read_bytes=s.batch * seen * self.kv.nbytes(read), kernels=1)
        self.matmul("o_proj", tensors["o_proj"], i, "attention", parallel=Parallel.ROW)

    def mla(self, i: int, m: MLA, tensors: dict[str, list[Tensor]]) -> None:
        s, n, a = self.shape, self.shape.tokens, self.a
        nh = m.num_attention_heads
        if m.q_lora_rank is None:
            self.matmul("q_proj", tensors["q_proj"], i, "attention")
        else:
            # the latent projections are replicated on tensor-parallel ranks (vLLM: ReplicatedLinear)
            self.matmul("q_a_proj", tensors["q_a_proj"], i, "attention", parallel=Parallel.REPLICATED)
            self.norm("q_a_layernorm", None, m.q_lora_rank, i, tensors=tensors["q_a_layernorm"])
            self.matmul("q_b_proj", tensors["q_b_proj"], i, "attention")
        self.matmul("kv_a_proj_with_mqa", tensors["kv_a_proj_with_mqa"], i, "attention", parallel=Parallel.REPLICATED)
        self.norm("kv_a_layernorm", None, m.kv_lora_rank, i, tensors=tensors["kv_a_layernorm"])
        rope = n * (nh + 1) * m.qk_rope_head_dim
        self.elementwise("rope", rope, rope, i, "attention", kernels=10, kind="rope")
        kv_elems = m.kv_elements_per_token()
        kv_tok = self.kv.nbytes(kv_elems)
        self.add(name="kv_append", kind="kv_append", category="attention", layer=i, act_read_bytes=n * kv_elems * a,
                 kv_write_bytes=n * kv_tok, kernels=2)
        keys = attended_keys(s.cached_tokens, s.new_tokens)
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        kv_b = tensors["kv_b_proj"]
        kv_b_bytes = self.fmt.bytes_of(kv_b)
        k_part = nh * m.qk_nope_head_dim * m.kv_lora_rank
        total = nh * (m.qk_nope_head_dim + m.v_head_dim) * m.kv_lora_rank
        k_bytes = kv_b_bytes * k_part // total
        if s.new_tokens == 1:  # absorbed: q_nope -> latent, attention over the latent, latent -> v
            self.add(name="q_absorb", kind="matmul", category="attention", layer=i, flops=2 * n * k_part,
                     weight_bytes=k_bytes, act_read_bytes=n * nh * m.qk_nope_head_dim * a,
                     act_write_bytes=n * nh * m.kv_lora_rank * a, kernels=1)
            flops = s.batch * nh * (2 * (m.kv_lora_rank + m.qk_rope_head_dim) + 2 * m.kv_lora_rank) * keys
            self.add(name="attention", kind="attention", category="attention", layer=i, flops=flops,
                     act_read_bytes=n * nh * (m.kv_lora_rank + m.qk_rope_head_dim) * a,
                     act_write_bytes=n * nh * m.kv_lora_rank * a, kv_read_bytes=s.batch * seen * kv_tok, kernels=1)
            self.add(name="v_up", kind="matmul", category="attention", layer=i,
                     flops=2 * n * (total - k_part), weight_bytes=kv_b_bytes - k_bytes,
                     act_read_bytes=n * nh * m.kv_lora_rank * a, act_write_bytes=n * nh * m.v_head_dim * a, kernels=1)
        else:  # expanded: every key's latent through kv_b_proj, then ordinary attention
            rows = s.batch * seen
            self.add(name="kv_b_proj", kind="matmul", category="attention", layer=i, flops=2 * rows * total,
                     weight_bytes=kv_b_bytes, act_read_bytes=rows * kv_tok,
                     act_write_bytes=rows * nh * (m.qk_nope_head_dim + m.v_head_dim) * a, kernels=1)
            flops = s.batch * nh * (2 * m.qk_head_dim + 2 * m.v_head_dim) * keys
            self.add(name="attention", kind="attention", category="attention", layer=i, flops=flops,
                     act_read_bytes=n * nh * m.qk_head_dim * a + rows * nh * (m.qk_head_dim + m.v_head_dim) * a,
                     act_write_bytes=n * nh * m.v_head_dim * a, kv_read_bytes=s.batch * seen * kv_tok, kernels=1)
        self.matmul("o_proj", tensors["o_proj"], i, "attention", parallel=Parallel.ROW)

    # ---- recurrent mixers --------------------------------------------------------------------------
    # Conventions for the state-space / linear-attention / short-conv ops below (n = batch·new_tokens
    # tokens, B = batch sequences, a = bytes per activation element):
    # - FLOPs count the matmul-shaped work at 2 per multiply-add: projections (``matmul``), the conv
    #   taps, and the recurrence of the *recurrent* form, which is what a token needs whatever the
    #   kernel (chunked prefill kernels such as Mamba-2's SSD or GDN's chunked delta rule do more,
    #   quadratic inside a chunk; that extra is not counted). Elementwise work (SiLU, softplus, exp
    #   decays, norms, gates) is bytes only.
    # - The fixed per-sequence state (``kv.layer_kv``) is written once per step for each sequence
    #   (``B × state bytes``) and read once per step when the sequences already have one
    #   (``cached_tokens > 0``); a fresh prompt starts from a zero state that no kernel loads.
    #   Conv window and recurrent state are split over the ``conv`` and ``scan`` rows.

    def _state_io(self, elems: int) -> tuple[int, int]:
        """(bytes read, bytes written) of ``elems`` state elements per sequence in one step."""
        per_seq = self.state.nbytes(elems)
        return (self.shape.batch * per_seq if self.shape.cached_tokens > 0 else 0), self.shape.batch * per_seq

    def _conv(self, i: int, name: str, channels: int, kernel: int, tensors: list[Tensor], kernels: int) -> None:
        """Depthwise causal conv: each of ``channels`` outputs per token is ``kernel`` multiply-adds
        over the current input and the ``kernel - 1`` previous ones (2·n·channels·kernel FLOPs); reads
        the n new inputs, writes n outputs; the window of ``channels × (kernel - 1)`` is the state."""
        n, a = self.shape.tokens, self.a
        rd, wr = self._state_io(channels * (kernel - 1))
        self.add(name=name, kind="conv", category="ssm", layer=i, flops=2 * n * channels * kernel,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=n * channels * a,
                 act_write_bytes=n * channels * a, state_read_bytes=rd, state_write_bytes=wr, kernels=kernels)

    def _gate(self, i: int, name: str, dim: int, tensors: list[Tensor], kernels: int) -> None:
        """``y · act(z)`` (optionally RMS-normalised): reads y and z (2·n·dim), writes n·dim; weights
        are the norm's, if any."""
        n, a = self.shape.tokens, self.a
        self.add(name=name, kind="norm" if tensors else "elementwise", category="ssm", layer=i,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=2 * n * dim * a,
                 act_write_bytes=n * dim * a, kernels=kernels)

    def mamba(self, i: int, m: Mamba, tensors: dict[str, list[Tensor]]) -> None:
        n, a = self.shape.tokens, self.a
        d, ns = m.intermediate_size, m.state_size
        # in_proj: h -> [z | x | B | C | dt] (Mamba-2) or [x | z] (Mamba-1): 2·n·h·in_proj_dim
        self.matmul("in_proj", tensors["in_proj"], i, "ssm")
        # conv1d + SiLU over x (Mamba-1) or x, B, C (Mamba-2): 2·n·conv_dim·conv_kernel
        self._conv(i, "conv1d", m.conv_dim, m.conv_kernel, tensors["conv1d"], kernels=2)
        if m.version == 1:
            # x_proj: d_inner -> [dt (dt_rank) | B (N) | C (N)]: 2·n·d_inner·(dt_rank + 2N)
            self.matmul("x_proj", tensors["x_proj"], i, "ssm")
            if m.dt_layernorms or m.bcdt_rms:
                # RMSNorms over dt, B and C (Jamba with weights, Falcon-Mamba without)
                dims = m.dt_rank + 2 * ns
                norms = sum((tensors.get(k, []) for k in ("dt_layernorm", "b_layernorm", "c_layernorm")), [])
                self.add(name="dt_bc_norm", kind="norm", category="ssm", layer=i,
                         weight_bytes=self.fmt.bytes_of(norms), act_read_bytes=n * dims * a,
                         act_write_bytes=n * dims * a, kernels=3 * 6)
            # dt_proj: dt_rank -> d_inner (with bias): 2·n·dt_rank·d_inner
            self.matmul("dt_proj", tensors["dt_proj"], i, "ssm")
        _, ssm_elems = m.state_elements()
        rd, wr = self._state_io(ssm_elems)
        small = sum((tensors.get(k, []) for k in ("A_log", "D", "dt_bias")), [])
        # selective scan, recurrent form, per token and state element (Mamba-2: heads·head_dim·N,
        # Mamba-1: d_inner·N): h = exp(dt·A)·h + (dt·B)·x is one multiply-add (the outer product),
        # y = C·h another: 4 FLOPs per state element per token (the decay and the D·x skip are
        # elementwise). Reads x, B, C and dt (``scan_inputs_per_token``), writes y (d_inner).
        self.add(name="ssm_scan", kind="scan", category="ssm", layer=i, flops=4 * n * ssm_elems,
                 weight_bytes=self.fmt.bytes_of(small), act_read_bytes=n * m.scan_inputs_per_token * a,
                 act_write_bytes=n * d * a, state_read_bytes=rd, state_write_bytes=wr, kernels=8)
        if m.version == 2 and m.gated_norm:
            # RMSNormGated: norm(y · silu(z)) over norm_groups groups of d_inner
            self._gate(i, "gated_norm", d, tensors.get("gated_norm", []), kernels=7)
        else:
            self._gate(i, "gate", d, [], kernels=2)  # y · silu(z)
        # out_proj: d_inner -> h: 2·n·d_inner·h
        self.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def gdn(self, i: int, m: GatedDeltaNet, tensors: dict[str, list[Tensor]]) -> None:
        n, a = self.shape.tokens, self.a
        # in_proj_qkvz: h -> [q | k | v | z]: 2·n·h·(2·key_dim + 2·value_dim); in_proj_ba: h -> [b | a]
        # (Qwen3.5: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, the same rows in four matmuls)
        for name, _ in m.in_projections():
            self.matmul(name, tensors[name], i, "ssm")
        # conv1d + SiLU over q, k, v: 2·n·conv_dim·conv_kernel
        self._conv(i, "conv1d", m.conv_dim, m.conv_kernel, tensors["conv1d"], kernels=2)
        _, st = m.state_elements()
        rd, wr = self._state_io(st)
        small = sum((tensors.get(k, []) for k in ("A_log", "dt_bias")), [])
        # gated delta rule, recurrent form, per token and v-head with state S (dk × dv): after the decay
        # S ← exp(g)·S (elementwise), kᵀS (dk·dv multiply-adds), S += k ⊗ β(v - kᵀS) (dk·dv), o = qᵀS
        # (dk·dv): 6·dk·dv FLOPs per v-head per token. Reads q, k, v (conv_dim) and a, b (2 per v-head),
        # q/k L2 norms and the gates g, β included; writes o (value_dim).
        self.add(name="delta_rule", kind="scan", category="ssm", layer=i, flops=6 * n * st,
                 weight_bytes=self.fmt.bytes_of(small), act_read_bytes=n * (m.conv_dim + 2 * m.num_v_heads) * a,
                 act_write_bytes=n * m.value_dim * a, state_read_bytes=rd, state_write_bytes=wr, kernels=10)
        # RMSNorm over head_v_dim, times silu(z)
        self._gate(i, "gated_norm", m.value_dim, tensors.get("norm", []), kernels=7)
        # out_proj: value_dim -> h
        self.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def short_conv(self, i: int, m: ShortConv, tensors: dict[str, list[Tensor]]) -> None:
        n, h = self.shape.tokens, m.hidden_size
        # in_proj: h -> [B | C | x]: 2·n·h·3h
        self.matmul("in_proj", tensors["in_proj"], i, "ssm")
        self.elementwise("B·x", 2 * n * h, n * h, i, "ssm")
        # depthwise causal conv over h channels (no activation): 2·n·h·conv_kernel
        self._conv(i, "conv", h, m.conv_kernel, tensors["conv"], kernels=1)
        self.elementwise("C·y", 2 * n * h, n * h, i, "ssm")
        # out_proj: h -> h
        self.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def gated_attention(self, i: int, m: GatedAttention, tensors: dict[str, list[Tensor]]) -> None:
        self.attention(i, m, tensors)
        if m.output_gate:
            # Qwen3-Next: the attention output is multiplied by sigmoid(gate) before o_proj; the gate is
            # the second half of q_proj's output (q_dim features). Reads gate and output, writes output.
            o_proj = self.ops.pop()
            n = self.shape.tokens
            self.elementwise("output_gate", n * (m.q_dim + m.o_in), n * m.o_in, i, "attention", kernels=2)
            self.ops.append(o_proj)

    def parallel_hybrid(self, i: int, m: ParallelHybrid, tensors: dict[str, list[Tensor]]) -> None:
        n, h = self.shape.tokens, self.spec.hidden_size
        self.attention(i, m.attention, tensors)
        self.mamba(i, m.mamba, tensors)
        # the two branch outputs summed (their scalar multipliers fold into this pass)
        self.elementwise("branch_sum", 2 * n * h, n * h, i, "other")

    def mlp(self, i: int, m: MLP, tensors: dict[str, list[Tensor]], prefix: str = "", n_tokens: int | None = None) -> None:
        n = self.shape.tokens if n_tokens is None else n_tokens
        if m.gated and m.fused_gate_up:
            self.matmul(prefix + "gate_up_proj", tensors[prefix + "gate_up_proj"], i, "ffn", n)
        else:
            if m.gated:
                self.matmul(prefix + "gate_proj", tensors[prefix + "gate_proj"], i, "ffn", n)
            self.matmul(prefix + "up_proj", tensors[prefix + "up_proj"], i, "ffn", n)
        ii = m.intermediate_size
        if m.gated:
            self.elementwise(prefix + "act", 2 * n * ii, n * ii, i, "ffn", kernels=2)
        else:
            self.elementwise(prefix + "act", n * ii, n * ii, i, "ffn", kernels=1)
        self.matmul(prefix + "down_proj", tensors[prefix + "down_proj"], i, "ffn", n, parallel=Parallel.ROW)

    def moe(self, i: int, m: MoE, tensors: dict[str, list[Tensor]]) -> None:
        n, a, h = self.shape.tokens, self.a, m.hidden_size
        router = tensors["router"]
        # the router is replicated on every tensor-parallel rank (vLLM's ReplicatedLinear gate, SGLang alike)
        self.add(name="router", kind="router", category="ffn", layer=i, flops=2 * n * h * m.num_experts,
                 weight_bytes=self.fmt.bytes_of(router), act_read_bytes=n * h * a,
                 act_write_bytes=n * m.num_experts * 4, kernels=3, parallel=Parallel.REPLICATED)
        expert_tensors = tensors["experts"]
        all_bytes = self.fmt.bytes_of(expert_tensors)
        touched = expected_experts(m.num_experts, m.num_experts_per_tok, n)
        macs = (3 if m.gated else 2) * h * m.moe_intermediate_size
        ii = m.moe_intermediate_size
        routed = n * m.num_experts_per_tok
        self.add(name=f"experts (top-{m.num_experts_per_tok} of {m.num_experts})", kind="experts", category="ffn",
                 layer=i, flops=2 * routed * macs, weight_bytes=round(all_bytes * touched / m.num_experts),
                 act_read_bytes=routed * (h + (3 if m.gated else 1) * ii) * a,
                 act_write_bytes=routed * ((2 if m.gated else 1) * ii + ii + h) * a,
                 kernels=max(1, round(touched)) * (5 if m.gated else 4) + 2)
        shared = m.shared_mlp()
        if shared is not None:
            self.mlp(i, shared, tensors, prefix="shared_expert.")
            if m.shared_expert_gate:
                self.add(name="shared_expert_gate", kind="matmul", category="ffn", layer=i, flops=2 * n * h,
                         weight_bytes=self.fmt.bytes_of(tensors["shared_expert_gate"]), act_read_bytes=n * h * a,
                         act_write_bytes=n * a, kernels=3, parallel=Parallel.REPLICATED)  # one output: not split

    def placed_norm(self, layer: Layer, role: str, i: int, tensors: dict[str, list[Tensor]]) -> None:
        p = layer.norm(role)
        if p is not None:
            self.norm(p.name, p.norm, self.spec.hidden_size, i, tensors=tensors.get(p.name))

    def layer(self, i: int, layer: Layer) -> None:
        n, h = self.shape.tokens, self.spec.hidden_size
        tensors = group_tensors(layer, i)
        m = layer.mixer
        if m is not None:
            self.placed_norm(layer, "pre_mixer", i, tensors)
            if isinstance(m, GatedAttention):
                self.gated_attention(i, m, tensors)
            elif isinstance(m, Attention):
                self.attention(i, m, tensors)
            elif isinstance(m, MLA):
                self.mla(i, m, tensors)
            elif isinstance(m, Mamba):
                self.mamba(i, m, tensors)
            elif isinstance(m, GatedDeltaNet):
                self.gdn(i, m, tensors)
            elif isinstance(m, ShortConv):
                self.short_conv(i, m, tensors)
            elif isinstance(m, ParallelHybrid):
                self.parallel_hybrid(i, m, tensors)
            else:
                raise TypeError(f"no trace for mixer {type(m).__name__}")
            self.placed_norm(layer, "post_mixer", i, tensors)
            if not layer.parallel:
                self.elementwise("residual", 2 * n * h, n * h, i, "other")
                self.placed_norm(layer, "post_mixer_residual", i, tensors)  # post-LN (OPT-350m)
        if layer.ffn is not None:
            self.placed_norm(layer, "pre_ffn", i, tensors)
            if isinstance(layer.ffn, MoE):
                self.moe(i, layer.ffn, tensors)
            else:
                self.mlp(i, layer.ffn, tensors)
            self.placed_norm(layer, "post_ffn", i, tensors)
            # parallel blocks add the mixer and the FFN outputs to the residual in one pass
            self.elementwise("residual", (3 if layer.parallel else 2) * n * h, n * h, i, "other")
            self.placed_norm(layer, "post_ffn_residual", i, tensors)
        if layer.per_layer_input:  # Gemma 4: gate, GELU times this layer's input slice, project, norm, add
            w = layer.per_layer_input
            self.matmul("per_layer_input_gate", tensors["per_layer_input_gate"], i, "ffn")
            self.elementwise("per_layer_act", 2 * n * w, n * w, i, "ffn", kernels=2)
            self.matmul("per_layer_projection", tensors["per_layer_projection"], i, "ffn", parallel=Parallel.ROW)
            self.norm("post_per_layer_input_norm", None, h, i, tensors=tensors.get("post_per_layer_input_norm", []))
            self.elementwise("residual", 2 * n * h, n * h, i, "other")

    def head(self) -> None:
        spec, s, a = self.spec, self.shape, self.a
        h, v = spec.hidden_size, spec.vocab_size
        last = s.batch  # logits only for the last position of each sequence
        if spec.final_norm is not None:
            self.norm("final_norm", spec.final_norm, h, None, n_tokens=last,
                      tensors=spec.final_norm.tensors("model.norm"))
        proj = spec.projection_tensors()
        if proj:  # OPT: project_out narrows to the embedding width before the LM head
            self.matmul("project_out", proj[1:], None, "lm_head", n_tokens=last, parallel=Parallel.REPLICATED)
        head = spec.lm_head_tensors() or [spec.embedding_tensors()[0]]
        w = head[0]
        self.add(name="lm_head", kind="matmul", category="lm_head", layer=None, flops=2 * last * w.numel,
                 weight_bytes=self.fmt.bytes_of(head), act_read_bytes=last * spec.embed_dim * a,
                 act_write_bytes=last * v * a, kernels=1)
        self.add(name="sampling", kind="sampling", category="other", layer=None, act_read_bytes=last * v * a,
                 act_write_bytes=last * 8, kernels=3)


def group_tensors(layer: Layer, i: int) -> dict[str, list[Tensor]]:
    """A layer's tensors keyed by their module's short name (``q_proj``, ``experts``, ``router`` ...)."""
    out: dict[str, list[Tensor]] = {}
    for t in layer.tensors(f"model.layers.{i}"):
        parts = t.name.split(".")[3:]  # drop model.layers.N
        if parts[0] in ("self_attn", "mixer"):
            parts = parts[1:]
        elif parts[0] == "mlp":
            parts = parts[1:]
            if parts[0] == "shared_expert":
                key = "shared_expert." + parts[1]
                out.setdefault(key, []).append(t)
                continue
        key = parts[0]
        out.setdefault(key, []).append(t)
    return out


def step_ops(spec: ModelSpec, fmt: WeightFormat, kv_dtype: DType, *, batch: int = 1, new_tokens: int = 1,
             cached_tokens: int = 0, state_dtype: DType | None = None) -> list[Op]:
    """Every op of one forward step, in execution order (one row per op and layer)."""
    if batch < 1 or new_tokens < 1 or cached_tokens < 0:
        raise ValueError("batch and new_tokens must be >= 1 and cached_tokens >= 0")
    b = _Builder(spec, fmt, kv_dtype, state_dtype or fmt.act, StepShape(batch, new_tokens, cached_tokens))
    b.embedding()
    for i, layer in enumerate(spec.layers):
        b.layer(i, layer)
    b.head()
    return b.ops


def step_groups(spec: ModelSpec, fmt: WeightFormat, kv_dtype: DType, *, batch: int = 1, new_tokens: int = 1,
                cached_tokens: int = 0, state_dtype: DType | None = None) -> list["OpGroup"]:
    """One forward step with identical layers collapsed, in execution order of each group's first layer:
    the ops of every distinct layer (``WeightFormat.layer_groups``) built once, each an ``OpGroup`` with the
    figures of one instance and the layers it stands for; model-level ops (embedding, lm_head ...) have no
    layers. ``count × figures`` summed over the groups is exactly ``step_ops``' sum over every op, at a
    cost that grows with the distinct layer shapes, not with the layers."""
    if batch < 1 or new_tokens < 1 or cached_tokens < 0:
        raise ValueError("batch and new_tokens must be >= 1 and cached_tokens >= 0")
    b = _Builder(spec, fmt, kv_dtype, state_dtype or fmt.act, StepShape(batch, new_tokens, cached_tokens))
    b.embedding()
    out = [OpGroup(o, ()) for o in b.ops]
    for members in fmt.layer_groups(spec):
        b.ops = []
        b.layer(members[0], spec.layers[members[0]])
        out.extend(OpGroup(o, members) for o in b.ops)
    b.ops = []
    b.head()
    out.extend(OpGroup(o, ()) for o in b.ops)
    return out


def per_layer(groups: list["OpGroup"]) -> Iterator[tuple[Op, int | None]]:
    """The collapsed step expanded to one ``(op, layer)`` per op and layer, in execution order (what
    ``step_ops`` lists), without building the ops again."""
    by_first: dict[int, list[Op]] = {}
    owner: dict[int, int] = {}
    pre: list[Op] = []
    post: list[Op] = []
    for g in groups:
        if g.layers:
            first = g.layers[0]
            if first not in by_first:
                by_first[first] = []
                for i in g.layers:
                    owner[i] = first
            by_first[first].append(g.op)
        else:
            (post if by_first else pre).append(g.op)
    for o in pre:
        yield o, None
    for i in sorted(owner):
        for o in by_first[owner[i]]:
            yield o, i
    for o in post:
        yield o, None


@frozen
class Totals:
    flops: int
    weight_bytes: int
    act_bytes: int
    kv_bytes: int
    state_bytes: int
    bytes: int
    kernels: int

    @staticmethod
    def of(ops: list[Op]) -> "Totals":
        w = sum(o.weight_bytes for o in ops)
        act = sum(o.act_read_bytes + o.act_write_bytes for o in ops)
        kv = sum(o.kv_read_bytes + o.kv_write_bytes for o in ops)
        st = sum(o.state_read_bytes + o.state_write_bytes for o in ops)
        return Totals(sum(o.flops for o in ops), w, act, kv, st, w + act + kv + st, sum(o.kernels for o in ops))

    @staticmethod
    def of_groups(groups: list["OpGroup"]) -> "Totals":
        """The totals of a collapsed step: each group's figures times its count (exact ints)."""
        flops = w = act = kv = st = kernels = 0
        for g in groups:
            o, n = g.op, g.count
            flops += n * o.flops
            w += n * o.weight_bytes
            act += n * (o.act_read_bytes + o.act_write_bytes)
            kv += n * (o.kv_read_bytes + o.kv_write_bytes)
            st += n * (o.state_read_bytes + o.state_write_bytes)
            kernels += n * o.kernels
        return Totals(flops, w, act, kv, st, w + act + kv + st, kernels)


@frozen
class OpGroup:
    """An op as the trace table shows it: one row for every layer of the same shape."""

    op: Op  # the op of the first layer in the group (figures are per instance)
    layers: tuple[int, ...]  # empty for model-level ops (embedding, lm_head ...)

    @property
    def count(self) -> int:
        return max(1, len(self.layers))


def group_ops(spec: ModelSpec, ops: list[Op], all_layers: bool = False) -> list[OpGroup]:
    """Collapse the ops of identical layers into one row each with a count (unless ``all_layers``).

    Layers are identical when their specs are equal (same mixer, window, FFN, norms), so each group's
    ops have the same figures; every layer kind of a hybrid model keeps its own rows.
    """
    if all_layers:
        return [OpGroup(o, () if o.layer is None else (o.layer,)) for o in ops]
    first_of: dict[Layer, int] = {}
    members: dict[int, list[int]] = {}
    for i, layer in enumerate(spec.layers):
        j = first_of.setdefault(layer, i)
        members.setdefault(j, []).append(i)
    out = []
    for o in ops:
        if o.layer is None:
            out.append(OpGroup(o, ()))
        elif o.layer in members:
            out.append(OpGroup(o, tuple(members[o.layer])))
    return out
