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
- ``launches`` is the number of kernels a serving engine's fused implementation launches for the op
  in a step it runs op by op (no CUDA graph), counted from SGLang 0.4.8's prompt path at TP8 on Hopper
  (``bench/published.md``, "Kernel launches of an eager prompt step"): a 16-bit GEMM 1, an FP8 / FP4
  GEMM 2 (the activations' quantization kernel, then the GEMM), a projection fused into its partner's
  GEMM 0 (k/v into q's qkv_proj, up into gate's gate_up_proj, kv_a into q_a's fused_qkv_a), a residual
  add 0 (fused into the next norm's fused_add_rmsnorm), the KV write 2 (k and v, or MLA's latent copy
  and its write), attention 3 (FlashAttention-3's scheduler and kernel, and the contiguous q), MLA's
  expanded prefill attention 5 (the kernels, the two copies that build K, the LSE transpose), the
  routed experts 7 (fused_moe: buffer init, the two align kernels, two GEMMs, the activation, the top-k
  sum) and 2 more with FP8 / FP4 activations, the router 2 with a fused grouped top-k (DeepSeek's
  ``moe_fused_gate``) and 4 with softmax top-k (the float cast, ``topk_softmax``, the renormalisation).
  The engine's host time per launch (``launch_overhead_per_op``) times these is the least an op takes
  in such a step (``hardware.expected.ops_times_s``).

Each mixer builds its own ops (``MixerSpec.trace`` in ``analysis.mixers``: attention and its key
geometry in ``mixers/attention.py``, MLA in ``mixers/mla.py`` ...) through the builder below, which
also builds the embedding, norms, FFNs and head.
"""

from __future__ import annotations

from typing import Iterator

from .records import frozen
from .dtypes import DType
from .mixers import attended_keys, distinct_keys  # noqa: F401  (re-exported: the attention geometry)
from .opkinds import DEFAULT_PARALLEL, OpCategory, OpKind, Parallel  # noqa: F401  (re-exported)
from .spec import MLP, NGRAM_EMBEDDINGS, Layer, ModelSpec, MoE, Norm, Tensor
from .weights import WeightFormat


@frozen
class Op:
    name: str
    kind: OpKind
    category: OpCategory
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
    launches: int = 1  # kernels a serving engine's fused implementation launches for it (module docstring)

    def __post_init__(self) -> None:
        # plain strings are taken and checked (an unknown kind, category or role is a ValueError here)
        if type(self.kind) is not OpKind:
            object.__setattr__(self, "kind", OpKind(self.kind))
        if type(self.category) is not OpCategory:
            object.__setattr__(self, "category", OpCategory(self.category))
        if type(self.parallel) is not Parallel:
            object.__setattr__(self, "parallel", Parallel(self.parallel))

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

    def quantized_gemm(self, tensors: list[Tensor]) -> bool:
        """Whether a GEMM of these weights quantizes its activations first (FP8 / FP4 compute on weights stored
        in fewer than 16 bits: a per-token or per-group quantization kernel before the GEMM)."""
        w = [t for t in tensors if t.kind != "bias" and len(t.shape) >= 2]
        return (self.fmt.compute.bits <= 8 and bool(w)
                and all(self.fmt.tensor_bytes(t) < 2 * t.numel for t in w))

    def matmul(self, name: str, tensors: list[Tensor], layer: int | None, cat: str, n_tokens: int | None = None,
               parallel: Parallel = Parallel.COLUMN, fused: bool = False) -> None:
        """``fused``: the engine runs this projection inside its partner's GEMM (``launches`` 0)."""
        n = self.shape.tokens if n_tokens is None else n_tokens
        w = [t for t in tensors if t.kind != "bias" and len(t.shape) >= 2]
        n_in = w[0].shape[-1]
        macs = sum(t.numel for t in w)
        self.add(name=name, kind="matmul", category=cat, layer=layer, flops=2 * n * macs,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=n * n_in * self.a,
                 act_write_bytes=n * sum(t.shape[-2] for t in w) * self.a, kernels=1, parallel=parallel,
                 launches=0 if fused else 1 + self.quantized_gemm(tensors))

    def norm(self, name: str, norm: Norm | None, dim: int, layer: int | None, cat: str = "norm",
             n_tokens: int | None = None, tensors: list[Tensor] | None = None, launches: int = 1) -> None:
        n = self.shape.tokens if n_tokens is None else n_tokens
        tl = tensors if tensors is not None else (norm.tensors(name) if norm is not None else [])
        kernels = 1 if norm is not None and norm.kind == "layer" else 6
        self.add(name=name, kind="norm", category=cat, layer=layer, weight_bytes=self.fmt.bytes_of(tl),
                 act_read_bytes=n * dim * self.a, act_write_bytes=n * dim * self.a, kernels=kernels, launches=launches)

    def elementwise(self, name: str, reads: int, writes: int, layer: int | None, cat: str, kernels: int = 1,
                    kind: str = "elementwise", launches: int = 1) -> None:
        self.add(name=name, kind=kind, category=cat, layer=layer, act_read_bytes=reads * self.a,
                 act_write_bytes=writes * self.a, kernels=kernels, launches=launches)

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
        inputs = self.spec.input_tensors()
        extra = [t for t in inputs if not t.name.startswith(NGRAM_EMBEDDINGS)]
        if self.spec.ngram_rows:  # LongCat-Flash-Lite: each n-gram row projected to hidden, then the mean of all
            k = len(self.spec.ngram_rows)
            # one bmm (vLLM): 2·n·k·ngram_dim·hidden FLOPs, k·hidden outputs a token
            self.matmul("ngram_projection", [t for t in inputs if t.name.startswith(NGRAM_EMBEDDINGS)], None,
                        "embedding", parallel=Parallel.REPLICATED)
            self.elementwise("ngram_mean", (k + 1) * n * h, n * h, None, "embedding")
        if extra:  # Gemma 4: the per-layer inputs projected from the embedding, normed per layer
            width = self.spec.num_layers * self.spec.per_layer_input_size
            self.matmul("per_layer_model_projection", [t for t in extra if t.kind == "linear"], None, "embedding",
                        parallel=Parallel.REPLICATED)
            self.norm("per_layer_projection_norm", None, width, None, tensors=[t for t in extra if t.kind == "norm"])
            self.elementwise("per_layer_inputs", 2 * n * width, n * width, None, "embedding")

    # ---- recurrent mixers --------------------------------------------------------------------------
    # Conventions for the state-space / linear-attention / short-conv ops, which their mixers build
    # with the helpers below (n = batch·new_tokens tokens, B = batch sequences, a = bytes per
    # activation element):
    # - FLOPs count the matmul-shaped work at 2 per multiply-add: projections (``matmul``), the conv
    #   taps, and the recurrence of the *recurrent* form, which is what a token needs whatever the
    #   kernel (chunked prefill kernels such as Mamba-2's SSD or GDN's chunked delta rule do more,
    #   quadratic inside a chunk; that extra is not counted). Elementwise work (SiLU, softplus, exp
    #   decays, norms, gates) is bytes only.
    # - The fixed per-sequence state (``kv.layer_kv``) is written once per step for each sequence
    #   (``B × state bytes``) and read once per step when the sequences already have one
    #   (``cached_tokens > 0``); a fresh prompt starts from a zero state that no kernel loads.
    #   Conv window and recurrent state are split over the ``conv`` and ``scan`` rows.

    def state_io(self, elems: int, dtype: DType | None = None) -> tuple[int, int]:
        """(bytes read, bytes written) of ``elems`` state elements per sequence in one step (in ``dtype``: the
        mixer's ``recurrent_dtype``; else the state dtype)."""
        per_seq = (dtype or self.state).nbytes(elems)
        return (self.shape.batch * per_seq if self.shape.cached_tokens > 0 else 0), self.shape.batch * per_seq

    def conv(self, i: int, name: str, channels: int, kernel: int, tensors: list[Tensor], kernels: int) -> None:
        """Depthwise causal conv: each of ``channels`` outputs per token is ``kernel`` multiply-adds
        over the current input and the ``kernel - 1`` previous ones (2·n·channels·kernel FLOPs); reads
        the n new inputs, writes n outputs; the window of ``channels × (kernel - 1)`` is the state."""
        n, a = self.shape.tokens, self.a
        rd, wr = self.state_io(channels * (kernel - 1))
        self.add(name=name, kind="conv", category="ssm", layer=i, flops=2 * n * channels * kernel,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=n * channels * a,
                 act_write_bytes=n * channels * a, state_read_bytes=rd, state_write_bytes=wr, kernels=kernels)

    def gate(self, i: int, name: str, dim: int, tensors: list[Tensor], kernels: int) -> None:
        """``y · act(z)`` (optionally RMS-normalised): reads y and z (2·n·dim), writes n·dim; weights
        are the norm's, if any."""
        n, a = self.shape.tokens, self.a
        self.add(name=name, kind="norm" if tensors else "elementwise", category="ssm", layer=i,
                 weight_bytes=self.fmt.bytes_of(tensors), act_read_bytes=2 * n * dim * a,
                 act_write_bytes=n * dim * a, kernels=kernels)

    def mlp(self, i: int, m: MLP, tensors: dict[str, list[Tensor]], prefix: str = "", n_tokens: int | None = None) -> None:
        n = self.shape.tokens if n_tokens is None else n_tokens
        # the MLP's own gate_proj (a mixer may have one of that short name: Hy4-preview's self_attn.gate_proj)
        gate = [t for t in tensors.get(prefix + "gate_proj", []) if ".self_attn." not in t.name]
        if m.gated and m.fused_gate_up:
            self.matmul(prefix + "gate_up_proj", tensors[prefix + "gate_up_proj"], i, "ffn", n)
        else:
            if m.gated:
                self.matmul(prefix + "gate_proj", gate, i, "ffn", n)
            self.matmul(prefix + "up_proj", tensors[prefix + "up_proj"], i, "ffn", n, fused=m.gated)
        ii = m.intermediate_size
        if m.gated:
            self.elementwise(prefix + "act", 2 * n * ii, n * ii, i, "ffn", kernels=2)
        elif prefix + "act_fn" in tensors:  # xIELU (Apertus): its two learned scalars are read too
            self.add(name=prefix + "act", kind="elementwise", category="ffn", layer=i,
                     weight_bytes=self.fmt.bytes_of(tensors[prefix + "act_fn"]), act_read_bytes=n * ii * self.a,
                     act_write_bytes=n * ii * self.a, kernels=1)
        else:
            self.elementwise(prefix + "act", n * ii, n * ii, i, "ffn", kernels=1)
        if m.inner_norm:  # BitNet: ffn_sub_norm over the intermediate features
            self.norm(prefix + "ffn_sub_norm", None, ii, i, tensors=tensors.get(prefix + "ffn_sub_norm", []))
        self.matmul(prefix + "down_proj", tensors[prefix + "down_proj"], i, "ffn", n, parallel=Parallel.ROW)

    def moe(self, i: int, m: MoE, tensors: dict[str, list[Tensor]]) -> None:
        n, a, h = self.shape.tokens, self.a, m.hidden_size
        router = tensors["router"]
        # the router is replicated on every tensor-parallel rank (vLLM's ReplicatedLinear gate, SGLang alike)
        # (its width counts LongCat-Flash's zero-computation experts: router_experts)
        # (ZAYA's MLP router: down_proj, fc1, fc2 and out_proj)
        r = m.router_mlp
        macs = h * r + 2 * r * r + r * m.router_experts if r else h * m.router_experts
        if m.attention_router:  # Yuan2.0-M32: q, k, v (E each), then E x E scores and their product with v
            e = m.num_experts
            macs = 3 * h * e + 2 * e * e
        self.add(name="router", kind="router", category="ffn", layer=i, flops=2 * n * macs,
                 weight_bytes=self.fmt.bytes_of(router), act_read_bytes=n * h * a,
                 act_write_bytes=n * m.router_experts * 4, kernels=3, parallel=Parallel.REPLICATED,
                 launches=2 if self.spec.numerics.n_group > 1 else 4)
        expert_tensors = [t for t in tensors["experts"] if t.kind != "norm"]  # (Muse Spark's post_expert_norm apart)
        all_bytes = self.fmt.bytes_of(expert_tensors)
        touched = expected_experts(m.num_experts, m.num_experts_per_tok, n)
        if m.expert_hidden_size:  # Muse Spark: down to the experts' width and normed first
            self.matmul("pre_expert_proj", tensors["pre_expert_proj"], i, "ffn")
            self.norm("pre_expert_norm", None, m.expert_dim, i, tensors=tensors["pre_expert_norm"])
            h = m.expert_dim
        if m.latent_size:  # Nemotron 3 Super / Ultra: the token into the latent once (replicated in vLLM)
            self.matmul("fc1_latent_proj", tensors["fc1_latent_proj"], i, "ffn", parallel=Parallel.REPLICATED)
            h = m.expert_dim
        macs = (3 if m.gated else 2) * h * m.moe_intermediate_size
        ii = m.moe_intermediate_size
        routed = n * m.num_experts_per_tok
        self.add(name=f"experts (top-{m.num_experts_per_tok} of {m.num_experts})", kind="experts", category="ffn",
                 layer=i, flops=2 * routed * macs, weight_bytes=round(all_bytes * touched / m.num_experts),
                 act_read_bytes=routed * (h + (3 if m.gated else 1) * ii) * a,
                 act_write_bytes=routed * ((2 if m.gated else 1) * ii + ii + h) * a,
                 kernels=max(1, round(touched)) * (5 if m.gated else 4) + 2,
                 launches=7 + 2 * self.quantized_gemm(expert_tensors))
        if m.expert_norms or m.expert_hidden_size:  # each routed output normed (Ergo: by its expert's own scale)
            self.norm("post_expert_norm", None, h, i, n_tokens=routed,
                      tensors=[t for t in tensors["experts"] if t.kind == "norm"])
        if m.expert_hidden_size:  # Muse Spark: the experts' sum back up to hidden_size
            self.matmul("post_expert_proj", tensors["post_expert_proj"], i, "ffn", parallel=Parallel.ROW)
            h = m.hidden_size
        if m.latent_norm:  # Kimi K3: the latent sum RMS-normed before fc2
            self.norm("latent_norm", None, m.expert_dim, i, tensors=tensors["latent_norm"])
        if m.latent_size:  # the experts' weighted sum back up to hidden_size
            self.matmul("fc2_latent_proj", tensors["fc2_latent_proj"], i, "ffn", parallel=Parallel.REPLICATED)
            h = m.hidden_size
        if m.output_bias:  # JetMoE: one bias added to the experts' gated sum (whole on every rank)
            self.add(name="experts_bias", kind="elementwise", category="ffn", layer=i,
                     weight_bytes=self.fmt.bytes_of(tensors["bias"]), act_read_bytes=n * h * a,
                     act_write_bytes=n * h * a, kernels=1)
        shared = m.shared_mlp()
        if shared is not None:
            self.mlp(i, shared, tensors, prefix="shared_expert.")
            if m.expert_norms:  # Ergo: the shared expert's output normed
                self.norm("shared_expert.norm", None, h, i, tensors=tensors["shared_expert.norm"])
            if m.shared_expert_gate:
                self.add(name="shared_expert_gate", kind="matmul", category="ffn", layer=i, flops=2 * n * h,
                         weight_bytes=self.fmt.bytes_of(tensors["shared_expert_gate"]), act_read_bytes=n * h * a,
                         act_write_bytes=n * a, kernels=3, parallel=Parallel.REPLICATED)  # one output: not split
            if m.shared_coefficient:  # Klear: 2 blend logits per token, their softmax, the weighted sum of both outputs
                self.add(name="coefficient", kind="matmul", category="ffn", layer=i, flops=2 * n * 2 * h,
                         weight_bytes=self.fmt.bytes_of(tensors["coefficient"]), act_read_bytes=3 * n * h * a,
                         act_write_bytes=n * h * a, kernels=4, parallel=Parallel.REPLICATED)

    def placed_norm(self, layer: Layer, role: str, i: int, tensors: dict[str, list[Tensor]]) -> None:
        p = layer.norm(role)
        if p is not None:
            self.norm(p.name, p.norm, self.spec.hidden_size, i, tensors=tensors.get(p.name))
            if p.norm.gate_rank:  # A.X-K2's gated norm: fc1, fc2 and the sigmoid gate (weights counted in the norm's op)
                n, h, g = self.shape.tokens, self.spec.hidden_size, p.norm.gate_rank
                self.add(name=f"{p.name}.gate", kind="matmul", category="norm", layer=i, flops=2 * n * 2 * g * h,
                         act_read_bytes=2 * n * h * self.a, act_write_bytes=n * h * self.a, kernels=4,
                         parallel=Parallel.REPLICATED)

    def layer(self, i: int, layer: Layer) -> None:
        n, h = self.shape.tokens, self.spec.hidden_size
        tensors = group_tensors(layer, i)
        m = layer.mixer
        if m is not None:
            self.placed_norm(layer, "pre_mixer", i, tensors)
            m.trace(self, i, tensors)  # the mixer's own ops (analysis.mixers)
            self.placed_norm(layer, "post_mixer", i, tensors)
            if not layer.parallel:
                self.elementwise("residual", 2 * n * h, n * h, i, "other", launches=0)
                self.placed_norm(layer, "post_mixer_residual", i, tensors)  # post-LN (OPT-350m)
        if layer.ffn is not None:
            self.placed_norm(layer, "pre_ffn", i, tensors)
            self.placed_norm(layer, "pre_shared", i, tensors)  # Arctic: the residual MLP's own norm
            if layer.ada_norm_rank:
                self.ada_norm(i, layer.ada_norm_rank, tensors["ada_rms_norm"])
            if isinstance(layer.ffn, MoE):
                self.moe(i, layer.ffn, tensors)
            else:
                self.mlp(i, layer.ffn, tensors)
            self.placed_norm(layer, "post_ffn", i, tensors)
            # parallel blocks add the mixer and the FFN outputs to the residual in one pass
            self.elementwise("residual", (3 if layer.parallel else 2) * n * h, n * h, i, "other", launches=0)
            self.placed_norm(layer, "post_ffn_residual", i, tensors)
        if layer.residual_gates:  # Muse Spark: the two residual adds read their learned gates
            gates = tensors.get("post_attention_residual_gate", []) + tensors.get("post_feedforward_residual_gate", [])
            self.add(name="residual_gates", kind="elementwise", category="other", layer=i,
                     weight_bytes=self.fmt.bytes_of(gates), act_read_bytes=0, act_write_bytes=0, kernels=2)
        if layer.altup_inputs or layer.laurel_rank:
            self.altup_laurel(i, layer, tensors)
        if layer.per_layer_input:  # Gemma 4: gate, GELU times this layer's input slice, project, norm, add
            w = layer.per_layer_input
            self.matmul("per_layer_input_gate", tensors["per_layer_input_gate"], i, "ffn")
            self.elementwise("per_layer_act", 2 * n * w, n * w, i, "ffn", kernels=2)
            self.matmul("per_layer_projection", tensors["per_layer_projection"], i, "ffn", parallel=Parallel.ROW)
            self.norm("post_per_layer_input_norm", None, h, i, tensors=tensors.get("post_per_layer_input_norm", []))
            self.elementwise("residual", 2 * n * h, n * h, i, "other")

    def ada_norm(self, i: int, rank: int, tensors: list[Tensor]) -> None:
        """Voxtral Realtime's ada_rms_norm (vLLM's MistralDecoderLayer.ada_rms_norm_t_cond): the gain 1 + MLP(t_cond)
        is computed once per step from the one t_cond vector (the delay-time embedding, shared by every sequence and
        token: one row, whatever the batch), then multiplies each token's normed FFN input."""
        n, h = self.shape.tokens, self.spec.hidden_size
        linear1 = [t for t in tensors if ".linear1." in t.name]
        linear2 = [t for t in tensors if ".linear2." in t.name]
        self.matmul("ada_rms_norm.linear1", linear1, i, "ffn", n_tokens=1)  # ColumnParallelLinear(hidden, rank)
        self.elementwise("ada_rms_norm.act", rank, rank, i, "ffn")  # GELU over rank values
        self.matmul("ada_rms_norm.linear2", linear2, i, "ffn", n_tokens=1, parallel=Parallel.ROW)
        self.elementwise("ada_rms_norm.scale", n * h + h, n * h, i, "ffn", kernels=2)  # x · (1 + gain)

    def altup_laurel(self, i: int, layer: Layer, tensors: dict[str, list[Tensor]]) -> None:
        """Gemma 3n's AltUp (the router, behind its norm, runs twice: to predict the streams before the
        block and to correct them after; the prediction mixes the ``N`` streams per feature, an
        (N x N) matmul per token and feature) and LAuReL (a low-rank residual beside attention)."""
        n, h, a = self.shape.tokens, self.spec.hidden_size, self.a
        N = layer.altup_inputs
        if N:
            alt = {t.name.split(".altup.")[1].split(".")[0]: t for t in tensors.get("altup", [])}
            for step in ("predict", "correct"):
                self.norm(f"altup_{step}_router_norm", None, h, i, tensors=[alt["router_norm"]])
                self.matmul(f"altup_{step}_router", [alt["modality_router"]], i, "other",
                            parallel=Parallel.REPLICATED)
                coefs = alt["prediction_coefs" if step == "predict" else "correction_coefs"]
                self.matmul(f"altup_{step}_coefs", [coefs], i, "other", parallel=Parallel.REPLICATED)
                mix = 2 * n * h * N * N if step == "predict" else 0  # the prediction's per-feature stream mix
                self.add(name=f"altup_{step}", kind="matmul" if mix else "elementwise", category="other", layer=i,
                         flops=mix, act_read_bytes=2 * n * N * h * a, act_write_bytes=n * N * h * a, kernels=3)
            self.add(name="altup_scale", kind="elementwise", category="other", layer=i,
                     weight_bytes=self.fmt.bytes_of([alt["correct_output_scale"]]), act_read_bytes=n * h * a,
                     act_write_bytes=n * h * a, kernels=1)
        if layer.laurel_rank:
            lau = {t.name.split(".laurel.")[1].split(".")[0]: t for t in tensors.get("laurel", [])}
            self.matmul("laurel_left", [lau["linear_left"]], i, "attention", parallel=Parallel.REPLICATED)
            self.matmul("laurel_right", [lau["linear_right"]], i, "attention", parallel=Parallel.REPLICATED)
            self.norm("post_laurel_norm", None, h, i, tensors=[lau["post_laurel_norm"]])
            self.elementwise("laurel_residual", 3 * n * h, n * h, i, "other")

    def head(self) -> None:
        spec, s, a = self.spec, self.shape, self.a
        h, v = spec.hidden_size, spec.vocab_size
        last = s.batch  # logits only for the last position of each sequence
        hc = [t for t in spec.head_hc if len(t.shape) == 2]
        # Inkling-2's final_input (Kimi K3's output_attn_res): one learned query over the block states (q·k, p·v)
        if spec.head_hc and (spec.final_input_states or not hc):
            k = spec.final_input_states
            if k:
                self.add(name="final_input", kind="attention", category="other", layer=None,
                         flops=4 * s.tokens * h * k, weight_bytes=self.fmt.bytes_of(list(spec.head_hc)),
                         act_read_bytes=k * s.tokens * h * a, act_write_bytes=s.tokens * h * a, kernels=3)
            else:  # ZAYA: the input scale and bias vectors (elementwise), as before final_input_states existed
                self.add(name="final_input", kind="elementwise", category="other", layer=None,
                         weight_bytes=self.fmt.bytes_of(list(spec.head_hc)), act_read_bytes=2 * s.tokens * h * a,
                         act_write_bytes=s.tokens * h * a, kernels=3)
        elif spec.head_hc:  # DeepSeek-V4: the hyper-connection streams collapsed to one (every token's, as transformers)
            # (Qwen4-Exp's hyper_connection_mixer: two matrices, down and up)
            self.add(name="hc_head", kind="matmul", category="other", layer=None,
                     flops=2 * s.tokens * sum(t.numel for t in hc),
                     weight_bytes=self.fmt.bytes_of(list(spec.head_hc)), act_read_bytes=s.tokens * hc[0].shape[1] * 4,
                     act_write_bytes=s.tokens * h * a, kernels=3, parallel=Parallel.REPLICATED)
        if spec.final_norm is not None:
            self.norm("final_norm", spec.final_norm, h, None, n_tokens=last,
                      tensors=spec.final_norm.tensors("model.norm"))
        if spec.head_transform:  # ModernBERT decoder: dense -> activation -> LayerNorm before the LM head
            dense = [t for t in spec.head_transform if ".dense." in t.name]
            self.matmul("head_dense", dense, None, "lm_head", n_tokens=last, parallel=Parallel.REPLICATED)
            self.elementwise("head_act", last * h, last * h, None, "lm_head")
            self.norm("head_norm", None, h, None, n_tokens=last,
                      tensors=[t for t in spec.head_transform if ".norm." in t.name])
        proj = spec.projection_tensors()
        if proj:  # OPT: project_out narrows to the embedding width before the LM head
            self.matmul("project_out", proj[1:], None, "lm_head", n_tokens=last, parallel=Parallel.REPLICATED)
        head = spec.lm_head_tensors()  # tied: the embedding (and CTRL's bias)
        head = [spec.embedding_tensors()[0]] + head if spec.tie_word_embeddings else head
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
