"""``ModelSpec``: the shape of a decoder, independent of where its config came from.

A spec is a tuple of layers, each a *mixer* (attention, MLA, or a recurrent state-space / linear
attention block) and an *FFN* (dense MLP or mixture of experts), plus the norms around them. Every
component lists its tensors (``tensors()``) with Hugging Face-style names and exact shapes; parameter
counts, weight bytes (per storage format) and the per-op trace are all derived from those lists, so
there is one description of each architecture and nothing to drift.

Field names follow Hugging Face ``config.json`` names where one exists (``hidden_size``,
``num_key_value_heads``, ``head_dim``, ``kv_lora_rank`` ...).

Tensor kinds (used to pick a storage format and to group parameters):

- ``embedding``  token (and learned position) embedding tables; a decode step reads one row per token
- ``lm_head``    the output projection (absent when tied to the embedding)
- ``linear``     a dense matmul weight ``(out, in)`` applied to every token
- ``expert``     a routed expert's matmul weights, stacked ``(num_experts, out, in)``; a token uses top-k
- ``router``     the MoE router's weight ``(num_experts, hidden)``
- ``bias``       a bias vector (kept in the activation dtype by every quantizer)
- ``norm``       a norm's scale (and shift) vector
- ``conv``       a depthwise causal-conv kernel of a state-space / linear-attention layer
- ``other``      small per-head parameters (attention sinks, A_log, D, dt_bias)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Union


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    kind: str

    @property
    def numel(self) -> int:
        return prod(self.shape)


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool, kind: str = "linear") -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), kind))
    if bias:
        out.append(Tensor(f"{name}.bias", (n_out,), "bias"))


# ---- norms ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Norm:
    """RMSNorm (``kind='rms'``) or LayerNorm (``kind='layer'``) over ``dim`` features."""

    dim: int
    kind: str = "rms"
    bias: bool = False
    affine: bool = True

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        if self.affine:
            out.append(Tensor(f"{prefix}.weight", (self.dim,), "norm"))
            if self.bias:
                out.append(Tensor(f"{prefix}.bias", (self.dim,), "norm"))
        return out


# ---- mixers --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attention:
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

    kind = "attention"

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

    def kv_elements_per_token(self) -> int:
        """Elements one token adds to this layer's cache: K and V of every KV head."""
        return self.num_key_value_heads * (self.head_dim + self.v_head_dim)

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        if self.fused_qkv:
            n = self.q_dim + self.k_dim + self.v_dim
            _linear(out, f"{prefix}.qkv_proj", n, h, self.q_bias or self.k_bias or self.v_bias)
        else:
            _linear(out, f"{prefix}.q_proj", self.q_dim, h, self.q_bias)
            _linear(out, f"{prefix}.k_proj", self.k_dim, h, self.k_bias)
            _linear(out, f"{prefix}.v_proj", self.v_dim, h, self.v_bias)
        _linear(out, f"{prefix}.o_proj", h, self.o_in, self.o_bias)
        if self.q_norm_dim:
            out.append(Tensor(f"{prefix}.q_norm.weight", (self.q_norm_dim,), "norm"))
        if self.k_norm_dim:
            out.append(Tensor(f"{prefix}.k_norm.weight", (self.k_norm_dim,), "norm"))
        if self.sinks:
            out.append(Tensor(f"{prefix}.sinks", (self.num_attention_heads,), "other"))
        return out


@dataclass(frozen=True)
class MLA:
    """DeepSeek multi-head latent attention.

    The cache holds, per token and layer, the compressed latent (``kv_lora_rank``) and the shared
    rope key (``qk_rope_head_dim``), as serving engines store it. Decode uses the absorbed form
    (queries projected into the latent space), prefill the expanded form; see ``analysis.trace``.
    """

    hidden_size: int
    num_attention_heads: int
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    bias: bool = False  # attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj
    rope_theta: float = 10000.0

    kind = "mla"
    window = None
    chunk = None

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def kv_elements_per_token(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def expanded_kv_elements_per_token(self) -> int:
        """What a naive cache of expanded per-head K and V would hold."""
        return self.num_attention_heads * (self.qk_head_dim + self.v_head_dim)

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, nh = self.hidden_size, self.num_attention_heads
        if self.q_lora_rank is None:
            _linear(out, f"{prefix}.q_proj", nh * self.qk_head_dim, h, False)
        else:
            _linear(out, f"{prefix}.q_a_proj", self.q_lora_rank, h, self.bias)
            out.append(Tensor(f"{prefix}.q_a_layernorm.weight", (self.q_lora_rank,), "norm"))
            _linear(out, f"{prefix}.q_b_proj", nh * self.qk_head_dim, self.q_lora_rank, False)
        _linear(out, f"{prefix}.kv_a_proj_with_mqa", self.kv_lora_rank + self.qk_rope_head_dim, h, self.bias)
        out.append(Tensor(f"{prefix}.kv_a_layernorm.weight", (self.kv_lora_rank,), "norm"))
        _linear(out, f"{prefix}.kv_b_proj", nh * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank, False)
        _linear(out, f"{prefix}.o_proj", h, nh * self.v_head_dim, self.bias)
        return out


@dataclass(frozen=True)
class Mamba:
    """A Mamba-2 (``version=2``) or Mamba-1 (``version=1``) selective state-space mixer.

    Its per-sequence state is fixed-size: the causal-conv window (``conv_kernel - 1`` past inputs of
    the conv channels) and the SSM state. Mamba-2: ``num_heads × head_dim × state_size``;
    Mamba-1: ``intermediate_size × state_size``.
    """

    hidden_size: int
    version: int
    intermediate_size: int  # d_inner = num_heads * head_dim for Mamba-2
    state_size: int
    conv_kernel: int
    num_heads: int = 0
    head_dim: int = 0
    n_groups: int = 1
    dt_rank: int = 0  # Mamba-1
    conv_bias: bool = True
    proj_bias: bool = False  # in_proj / out_proj bias
    gated_norm: bool = True  # Mamba-2 RMSNormGated over intermediate_size
    norm_groups: int = 1
    dt_layernorms: bool = False  # Jamba: RMSNorms over dt, B and C
    d_mlp: int = 0  # Falcon-H1: extra MLP channels in in_proj (mamba_d_ssm != intermediate)
    chunk_size: int = 256

    kind = "mamba"
    window = None
    chunk = None

    @property
    def conv_dim(self) -> int:
        if self.version == 1:
            return self.intermediate_size
        return self.intermediate_size + 2 * self.n_groups * self.state_size

    @property
    def in_proj_dim(self) -> int:
        if self.version == 1:
            return 2 * self.intermediate_size
        return 2 * self.intermediate_size + 2 * self.n_groups * self.state_size + self.num_heads + 2 * self.d_mlp

    def state_elements(self) -> tuple[int, int]:
        """(conv state, ssm state) elements per sequence."""
        conv = self.conv_dim * (self.conv_kernel - 1)
        if self.version == 1:
            return conv, self.intermediate_size * self.state_size
        return conv, self.num_heads * self.head_dim * self.state_size

    def kv_elements_per_token(self) -> int:
        return 0

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, d = self.hidden_size, self.intermediate_size
        _linear(out, f"{prefix}.in_proj", self.in_proj_dim, h, self.proj_bias)
        out.append(Tensor(f"{prefix}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "conv"))
        if self.conv_bias:
            out.append(Tensor(f"{prefix}.conv1d.bias", (self.conv_dim,), "bias"))
        if self.version == 1:
            _linear(out, f"{prefix}.x_proj", self.dt_rank + 2 * self.state_size, d, False)
            _linear(out, f"{prefix}.dt_proj", d, self.dt_rank, True)
            out.append(Tensor(f"{prefix}.A_log", (d, self.state_size), "other"))
            out.append(Tensor(f"{prefix}.D", (d,), "other"))
            if self.dt_layernorms:
                out.append(Tensor(f"{prefix}.dt_layernorm.weight", (self.dt_rank,), "norm"))
                out.append(Tensor(f"{prefix}.b_layernorm.weight", (self.state_size,), "norm"))
                out.append(Tensor(f"{prefix}.c_layernorm.weight", (self.state_size,), "norm"))
        else:
            out.append(Tensor(f"{prefix}.dt_bias", (self.num_heads,), "other"))
            out.append(Tensor(f"{prefix}.A_log", (self.num_heads,), "other"))
            out.append(Tensor(f"{prefix}.D", (self.num_heads,), "other"))
            if self.gated_norm:
                out.append(Tensor(f"{prefix}.norm.weight", (d,), "norm"))
        _linear(out, f"{prefix}.out_proj", h, d, self.proj_bias)
        return out


@dataclass(frozen=True)
class GatedDeltaNet:
    """Gated DeltaNet linear attention (Qwen3-Next): a fixed-size state of
    ``num_v_heads × head_k_dim × head_v_dim`` per sequence plus the causal-conv window."""

    hidden_size: int
    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int

    kind = "gated_deltanet"
    window = None
    chunk = None

    @property
    def key_dim(self) -> int:
        return self.num_k_heads * self.head_k_dim

    @property
    def value_dim(self) -> int:
        return self.num_v_heads * self.head_v_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    def state_elements(self) -> tuple[int, int]:
        return self.conv_dim * (self.conv_kernel - 1), self.num_v_heads * self.head_k_dim * self.head_v_dim

    def kv_elements_per_token(self) -> int:
        return 0

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        _linear(out, f"{prefix}.in_proj_qkvz", 2 * self.key_dim + 2 * self.value_dim, h, False)
        _linear(out, f"{prefix}.in_proj_ba", 2 * self.num_v_heads, h, False)
        out.append(Tensor(f"{prefix}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "conv"))
        out.append(Tensor(f"{prefix}.dt_bias", (self.num_v_heads,), "other"))
        out.append(Tensor(f"{prefix}.A_log", (self.num_v_heads,), "other"))
        out.append(Tensor(f"{prefix}.norm.weight", (self.head_v_dim,), "norm"))
        _linear(out, f"{prefix}.out_proj", h, self.value_dim, False)
        return out


Mixer = Union[Attention, MLA, Mamba, GatedDeltaNet]


# ---- feed-forward --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MLP:
    """Dense FFN: gated (gate, up, down; SwiGLU/GeGLU) or plain (up, down)."""

    hidden_size: int
    intermediate_size: int
    gated: bool = True
    bias: bool = False
    fused_gate_up: bool = False
    act: str = "silu"

    kind = "mlp"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, i = self.hidden_size, self.intermediate_size
        if self.gated and self.fused_gate_up:
            _linear(out, f"{prefix}.gate_up_proj", 2 * i, h, self.bias)
        else:
            if self.gated:
                _linear(out, f"{prefix}.gate_proj", i, h, self.bias)
            _linear(out, f"{prefix}.up_proj", i, h, self.bias)
        _linear(out, f"{prefix}.down_proj", h, i, self.bias)
        return out


@dataclass(frozen=True)
class MoE:
    """Mixture of experts: a router over ``num_experts`` experts of ``moe_intermediate_size``, each
    token using ``num_experts_per_tok``; optional always-on shared expert(s)."""

    hidden_size: int
    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    gated: bool = True
    expert_bias: bool = False  # gpt-oss: gate_up and down biases per expert
    router_bias: bool = False  # gpt-oss: router bias
    shared_intermediate_size: int = 0  # all shared experts together (0: none)
    shared_expert_gate: bool = False  # qwen2_moe: sigmoid gate Linear(hidden, 1)
    act: str = "silu"

    kind = "moe"

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert (weights and biases)."""
        h, i = self.hidden_size, self.moe_intermediate_size
        n = (3 if self.gated else 2) * h * i
        if self.expert_bias:
            n += (2 * i if self.gated else i) + h
        return n

    def shared_mlp(self) -> MLP | None:
        if not self.shared_intermediate_size:
            return None
        return MLP(self.hidden_size, self.shared_intermediate_size, gated=self.gated, act=self.act)

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, i, e = self.hidden_size, self.moe_intermediate_size, self.num_experts
        out.append(Tensor(f"{prefix}.router.weight", (e, h), "router"))
        if self.router_bias:
            out.append(Tensor(f"{prefix}.router.bias", (e,), "bias"))
        up_rows = 2 * i if self.gated else i
        out.append(Tensor(f"{prefix}.experts.gate_up_proj", (e, up_rows, h), "expert"))
        if self.expert_bias:
            out.append(Tensor(f"{prefix}.experts.gate_up_proj_bias", (e, up_rows), "bias"))
        out.append(Tensor(f"{prefix}.experts.down_proj", (e, h, i), "expert"))
        if self.expert_bias:
            out.append(Tensor(f"{prefix}.experts.down_proj_bias", (e, h), "bias"))
        shared = self.shared_mlp()
        if shared is not None:
            out.extend(shared.tensors(f"{prefix}.shared_expert"))
            if self.shared_expert_gate:
                out.append(Tensor(f"{prefix}.shared_expert_gate.weight", (1, h), "router"))
        return out


FFN = Union[MLP, MoE]


# ---- layers and model ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlacedNorm:
    """A norm of a block: its module name and where it sits: ``pre_mixer``, ``post_mixer`` (applied to
    the mixer's output before the residual add), ``pre_ffn`` or ``post_ffn``."""

    name: str
    role: str
    norm: Norm


@dataclass(frozen=True)
class Layer:
    """One decoder block. ``parallel``: mixer and FFN read the same input (GPT-NeoX, Falcon)."""

    mixer: Mixer | None
    ffn: FFN | None
    norms: tuple[PlacedNorm, ...] = ()
    parallel: bool = False

    def norm(self, role: str) -> PlacedNorm | None:
        return next((p for p in self.norms if p.role == role), None)

    @property
    def kind(self) -> str:
        """A short label: 'full', 'sliding(4096)', 'chunked(8192)', 'mla', 'mamba', ... + '+moe'."""
        m = self.mixer
        if m is None:
            label = "mlp-only"
        elif isinstance(m, Attention):
            if m.window:
                label = f"sliding({m.window})"
            elif m.chunk:
                label = f"chunked({m.chunk})"
            else:
                label = "full" if m.rotary_dim or m.num_attention_heads == 0 else "full-nope"
        else:
            label = m.kind
        if isinstance(self.ffn, MoE):
            label += "+moe"
        elif self.ffn is None and m is not None:
            label += "-only"
        return label

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        for p in self.norms:
            out.extend(p.norm.tensors(f"{prefix}.{p.name}"))
        if self.mixer is not None:
            sub = "self_attn" if isinstance(self.mixer, (Attention, MLA)) else "mixer"
            out.extend(self.mixer.tensors(f"{prefix}.{sub}"))
        if self.ffn is not None:
            out.extend(self.ffn.tensors(f"{prefix}.mlp"))
        return out


@dataclass(frozen=True)
class Provenance:
    """Where one number came from: ``read`` from the config, ``default``ed, or ``derived``."""

    field: str
    status: str  # "read" | "default" | "derived"
    value: object
    note: str = ""


@dataclass(frozen=True)
class QuantSpec:
    """How the checkpoint stores its weights (from ``quantization_config``)."""

    method: str  # fp8 | awq | gptq | mxfp4 | bnb4 | bnb8 | compressed
    bits: int
    group_size: int = 0  # int4 groups along the input dim; 0 = per output channel
    block_size: tuple[int, int] = (0, 0)  # fp8 block scales (rows, cols)
    zero_point: bool = True
    scale_bits: int = 16
    desc_act_g_idx: bool = False  # GPTQ stores g_idx (int32 per input row)
    double_quant: bool = False  # bitsandbytes nested absmax quantization
    targets: tuple[str, ...] = ("linear", "expert")  # tensor kinds it converts
    modules_to_not_convert: tuple[str, ...] = ()
    raw_method: str = ""


@dataclass(frozen=True)
class ModelSpec:
    model_type: str
    hidden_size: int
    vocab_size: int
    layers: tuple[Layer, ...]
    tie_word_embeddings: bool
    final_norm: Norm | None
    max_position_embeddings: int | None = None
    position_embeddings: int = 0  # learned absolute positions (rows)
    lm_head_bias: bool = False
    mtp_layers: tuple[Layer, ...] = ()  # DeepSeek multi-token prediction (reported, not in total)
    mtp_extra_params: int = 0  # MTP's own projections and norms besides its decoder block
    torch_dtype: str | None = None
    quant: QuantSpec | None = None
    # numerics the runtime decoder needs (not used by the arithmetic)
    hidden_act: str = "silu"
    norm_eps: float = 1e-6
    norm_offset: float = 0.0  # Gemma's RMSNorm scales by (1 + weight)
    embedding_multiplier: float = 1.0  # Gemma: sqrt(hidden_size)
    rope_scaling: tuple[tuple[str, object], ...] = ()
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    query_pre_attn_scalar: float | None = None
    # bookkeeping
    name: str = ""
    source: str = ""
    provenance: tuple[Provenance, ...] = field(default=(), compare=False)
    caveats: tuple[str, ...] = field(default=(), compare=False)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def embedding_tensors(self) -> list[Tensor]:
        out = [Tensor("model.embed_tokens.weight", (self.vocab_size, self.hidden_size), "embedding")]
        if self.position_embeddings:
            out.append(Tensor("model.embed_positions.weight", (self.position_embeddings, self.hidden_size), "embedding"))
        return out

    def lm_head_tensors(self) -> list[Tensor]:
        if self.tie_word_embeddings:
            return []
        out = [Tensor("lm_head.weight", (self.vocab_size, self.hidden_size), "lm_head")]
        if self.lm_head_bias:
            out.append(Tensor("lm_head.bias", (self.vocab_size,), "bias"))
        return out

    def final_norm_tensors(self) -> list[Tensor]:
        return self.final_norm.tensors("model.norm") if self.final_norm else []

    def tensors(self) -> list[Tensor]:
        """Every tensor of the model (tied embeddings once; MTP layers excluded)."""
        out = self.embedding_tensors()
        for i, layer in enumerate(self.layers):
            out.extend(layer.tensors(f"model.layers.{i}"))
        out.extend(self.final_norm_tensors())
        out.extend(self.lm_head_tensors())
        return out
