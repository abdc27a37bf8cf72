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

from dataclasses import field
from enum import StrEnum
from functools import cached_property
from typing import Union

from .mixers import (MLA, Attention, GatedAttention, GatedDeltaNet, Mamba, Mixer, MixerKind,  # noqa: F401 (re-exported)
                     MixerSpec, ParallelHybrid, ShortConv)
from .records import frozen
from .tensors import Tensor, TensorKind  # noqa: F401  (re-exported)
from .tensors import linear as _linear


class FFNKind(StrEnum):
    MLP = "mlp"
    MOE = "moe"


class NormKind(StrEnum):
    RMS = "rms"
    LAYER = "layer"


class RopeStyle(StrEnum):
    """``half``: rotate_half (Llama, NeoX); ``pairs``: interleaved pairs (GPT-J, DeepSeek, Llama 4);
    ``half_flipped``: NanoChat's rotate_half with the signs flipped (``cat(x2, -x1)``), i.e. rotate_half
    with sin negated."""

    HALF = "half"
    PAIRS = "pairs"
    HALF_FLIPPED = "half_flipped"


class RouterKind(StrEnum):
    """How a MoE router turns logits into top-k weights: ``softmax`` then top-k (Mixtral, Qwen);
    ``sigmoid`` scores with a choice bias (DeepSeek V3, GLM-4 MoE, MiniMax-M2); top-k of the logits first,
    then ``topk_softmax`` (gpt-oss) or ``topk_sigmoid`` (Llama 4); ``sparsemixer`` (PhiMoE): two experts
    chosen one after the other, each weighted by a softmax over the logits within a relative
    ``router_jitter_noise`` band of the best remaining one; ``logit_sigmoid`` (Kolibri-1, Flint): the choice by
    the logits (plus the correction bias, if any), the weights the chosen logits' sigmoids, renormalised by
    norm_topk_prob."""

    SOFTMAX = "softmax"
    SIGMOID = "sigmoid"
    TOPK_SOFTMAX = "topk_softmax"
    TOPK_SIGMOID = "topk_sigmoid"
    SPARSEMIXER = "sparsemixer"
    LOGIT_SIGMOID = "logit_sigmoid"


class GroupScore(StrEnum):
    NONE = "none"
    MAX = "max"  # DeepSeek V2 group_limited_greedy
    TOP2 = "top2"  # DeepSeek V3: sum of the two best scores of a group


class GLU(StrEnum):
    STANDARD = "standard"
    GPT_OSS = "gpt_oss"  # clamped SwiGLU with (up + 1)
    # Step-3.5 / 3.7: silu(gate) clamped above and up clamped to ±limit, per-layer limits (swiglu_limits,
    # swiglu_limits_shared; 0 none); the runtime does not run it
    STEP = "step"


class ExpertLayout(StrEnum):
    """How a checkpoint stores routed experts: one tensor per expert (``experts.3.gate_proj``, Mixtral's
    ``w1/w3/w2``), stacked ``(E, in, out)`` (Llama 4), or stacked with gate and up interleaved column by
    column (gpt-oss), or DBRX's three ``(E·I, D)`` matrices ``w1``, ``v1`` and ``w2``."""

    PER_EXPERT = "per_expert"
    STACKED_IN_OUT = "stacked_in_out"
    GPT_OSS = "gpt_oss"
    DBRX = "dbrx"  # w1 (gate), v1 (up), w2 (down): each (E·I, D), w2 stored as the transpose of our down_proj


@frozen
class Numerics:
    """The arithmetic a config fixes beyond the shapes: RoPE layout, routing functions, multipliers.
    Filled by the family builders through the validated field reader; defaults are transformers'."""

    rope_style: RopeStyle = RopeStyle.HALF
    rope_plain_on_windows: bool = False  # Gemma 3: sliding layers use unscaled RoPE at their own theta
    # Laguna: with rope_plain_on_windows, the sliding layers' own RoPE scaling (rope_scaling's items; () unscaled)
    rope_window_scaling: tuple = ()
    # Gemma 4: full (window-less) layers use proportional RoPE: the first ``factor · head_dim / 2`` frequencies
    # theta^(-2j / head_dim), the rest 0 (unrotated), over the whole head_dim; None: not used
    proportional_rope: float | None = None
    layer_scalar: bool = False  # Gemma 4: every layer's output is multiplied by its loaded ``layer_scalar`` buffer
    rope_extra: tuple = ()  # list-valued rope parameters (longrope short/long factors)
    router: RouterKind = RouterKind.SOFTMAX
    norm_topk_prob: bool = True
    routed_scaling_factor: float = 1.0
    n_group: int = 1
    topk_group: int = 1
    group_score: GroupScore = GroupScore.NONE
    score_correction_bias: bool = False  # DeepSeek V3: e_score_correction_bias buffer
    router_jitter_noise: float = 0.0  # PhiMoE's SparseMixer: the relative band of logits each softmax keeps
    router_logit_softcapping: float = 0.0  # Laguna: router logits -> tanh(l / c) · c before the scores (0: none)
    scale_expert_input: bool = False  # Llama 4: the router score scales the expert's input
    glu: GLU = GLU.STANDARD
    swiglu_alpha: float = 1.702
    swiglu_limit: float = 7.0
    qk_l2_norm: bool = False  # Llama 4: weightless RMS norm of q and k on RoPE layers
    qk_norm_after_rope: bool = False  # Hunyuan: the per-head q/k RMSNorms run on the rotated q and k
    attn_temperature: tuple[float, float] | None = None  # Llama 4 NoPE layers: (attn_scale, floor_scale)
    residual_multiplier: float = 1.0  # Granite
    # MiniMax: each residual branch adds to the normed input, both scaled (x = norm(x)·alpha + f(norm(x))·beta)
    residual_after_norm: bool = False
    attention_multiplier: float | None = None  # Granite: the softmax scale
    logits_scaling: float = 1.0  # Granite: logits are divided by it
    logit_scale: float = 1.0  # Cohere: logits are multiplied by it
    lm_head_l2_norm: bool = False  # Bailing's norm_head: the checkpoint's lm_head columns L2-normalised at load (vLLM)
    mla_norm_eps: float = 1e-6  # DeepSeek's q_a / kv_a layernorms use the class default eps
    topk_norm_p: float = 1.0  # DBRX: with norm_topk_prob, the top-k weights are divided by their p-norm (1: their sum)
    clip_qkv: float | None = None  # DBRX: q, k and v clamped to [-clip_qkv, clip_qkv] after the projection
    # Ministral 3: (beta, original_max_position_embeddings): after RoPE, the queries at position p are scaled by
    # 1 + beta·log(1 + floor(p / original)) on every layer; None: not used
    query_position_scale: tuple[float, float] | None = None
    rope_unscaled_layers: tuple[int, ...] = ()  # Molmo2: layers outside rope_scaling_layers run RoPE unscaled
    position_offset: int = 0  # OPT: learned position p is row p + 2 of embed_positions
    # ALiBi's slopes 2^(-alibi_bias_max·i / n) over the next power of two n of heads (MPT's alibi_bias_max;
    # BLOOM's slopes are these at 8)
    alibi_bias_max: float = 8.0
    alibi_sqrt: bool = False  # StepFun Step1: the ALiBi bias is slope x sqrt(key distance) (vLLM's use_alibi_sqrt)
    # CTRL: a fixed sinusoidal table (no parameters) added to the scaled token embedding: position p's row is
    # [sin(p·r_j) | cos(p·r_j)], r_j = 10000^(-2j / hidden), j < hidden / 2
    sinusoidal_positions: bool = False
    # XGLM: fairseq's table instead: position p is row p + position_offset of [sin(n·r_j) | cos(n·r_j)],
    # r_j = exp(-j·ln(10000) / (hidden/2 - 1)) (a zero column when hidden is odd), row sinusoid_padding_row zeroed
    sinusoid_fairseq: bool = False
    sinusoid_padding_row: int | None = None
    # MiMo-V2-Flash: V multiplied by attention_value_scale after v_proj, before it is cached
    value_scale: float = 1.0
    # LongCat-Flash: layers come in pairs (one checkpoint layer); the MoE of the first reads that layer's
    # post-attention norm beside its dense MLP (here its shared expert) and its output joins the residual only after
    # the second layer's MLP (the "shortcut" MoE), with LongCat's LoRA-scaled MLA
    shortcut_moe: bool = False
    # Snowflake Arctic: a MoE layer's experts read the layer's input (post_attention_layernorm of the block input),
    # beside attention; its residual MLP (the spec's shared expert, behind its "pre_shared" norm) reads the
    # attention's output; both outputs join the residual together
    moe_beside_attention: bool = False
    # Jais: the embedding multiplier scales the sum of the token and the learned position embeddings (elsewhere
    # the token embedding alone, before positions are added)
    embedding_scale_after_positions: bool = False
    # Jais: ALiBi's linear scaling (alibi_scaling's items: type and factor or train_seq_len); () none
    alibi_scaling: tuple = ()
    # PLaMo-2: ((norm name, offset), ...) of RMSNorms that scale by offset + weight, each its own offset (pre norms
    # 1, post-mixer 1/5, post-MLP 1/5^1.5, final 1); () none (a single offset for all: ``norm_offset``)
    norm_offsets: tuple = ()
    # ModernBERT decoder: the activation of the prediction head (ModelSpec.head_transform)
    head_act: str = "gelu"
    # Beam: each residual add is depth-scaled, x·sqrt((k-1)/k) + f(x)/sqrt(k) for the k-th add (k = 2, 3, ... by
    # sublayer), and its NoPE layers scale the queries by (1 + (p + 1) / 2048)^0.1
    depth_scaled_residual: bool = False
    # numerics the runtime does not run, named in a phrase for verify's refusal (Intern-S1-Pro's FoPE and per-group
    # router); "" none
    runtime_unsupported: str = ""


@frozen
class CheckpointLayout:
    """How the checkpoint on disk names and lays out the tensors of ``ModelSpec.tensors()``.

    ``renames``: name prefixes to rewrite, checkpoint's -> ours (GPT-NeoX's ``gpt_neox.embed_in.``,
    Falcon's ``transformer.h.`` ...), applied before the module renames every family shares;
    ``qkv_grouped``: the fused QKV rows are interleaved per KV group (GPT-NeoX ``(H, 3, d)``, Falcon
    ``(K, G+2, d)``) where ours are ``[q; k; v]``; ``experts``: how routed experts are stored;
    ``modules``: pieces of module names to rewrite (GPT-2's ``.attn.c_attn.`` is our
    ``.self_attn.qkv_proj.``); ``transposed``: GPT-2's ``Conv1D`` stores weights ``(in, out)``."""

    renames: tuple[tuple[str, str], ...] = ()
    modules: tuple[tuple[str, str], ...] = ()  # module-name pieces to rewrite, checkpoint's -> ours
    qkv_grouped: bool = False
    experts: ExpertLayout = ExpertLayout.PER_EXPERT
    transposed: bool = False  # GPT-2's Conv1D: every matmul weight of a layer stored (in, out)
    # CodeGen: the fused QKV rows are ``qkv_mp`` blocks of [q | v | k], hidden / qkv_mp rows each (0: not so)
    qkv_mp: int = 0
    # Baichuan 2's NormHead: the model multiplies by the L2-normalised rows of lm_head.weight; the checkpoint stores
    # them unnormalised, so loading normalises each row (as vLLM's lm_head_weight_loader does)
    head_normalized: bool = False
    # TeleChat's ``key_value``: k_proj and v_proj stored as one matrix (per head [k; v]), so a GPTQ checkpoint keeps one
    # g_idx (one int32 per input row) for the pair, not one each
    kv_fused: bool = False


# ---- norms (the mixers, one module each, are in analysis.mixers) ---------------------------------


@frozen
class Norm:
    """RMSNorm (``kind='rms'``) or LayerNorm (``kind='layer'``) over ``dim`` features."""

    dim: int
    kind: NormKind = NormKind.RMS
    bias: bool = False
    affine: bool = True
    # A.X-K2's gated RMSNorm: y = norm(x) · sigmoid(fc2(silu(fc1(y)))), a bias-free rank-``gate_rank`` gate; the
    # norm's weight under ``<name>.norm``, the gate under ``<name>.mlp.fc1`` / ``fc2`` (0: no gate)
    gate_rank: int = 0

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        p = f"{prefix}.norm" if self.gate_rank else prefix
        if self.affine:
            out.append(Tensor(f"{p}.weight", (self.dim,), "norm"))
            if self.bias:
                out.append(Tensor(f"{p}.bias", (self.dim,), "norm"))
        if self.gate_rank:  # the norm module's own small matmuls: kind "norm" (replicated, not quantized)
            out.append(Tensor(f"{prefix}.mlp.fc1.weight", (self.gate_rank, self.dim), "norm"))
            out.append(Tensor(f"{prefix}.mlp.fc2.weight", (self.dim, self.gate_rank), "norm"))
        return out


# ---- feed-forward --------------------------------------------------------------------------------

#: Activations with learned parameters (transformers' ``ACT2CLS`` modules an MLP builds with parameters):
#: name -> the parameters under ``<mlp>.act_fn``, one scalar (shape (1,)) each, per MLP. xIELU (Apertus):
#: ``alpha_p`` and ``alpha_n`` (its ``beta`` and ``eps`` are buffers, not parameters).
ACT_PARAMS: dict[str, tuple[str, ...]] = {"xielu": ("alpha_p", "alpha_n")}


@frozen
class MLP:
    """Dense FFN: gated (gate, up, down; SwiGLU/GeGLU) or plain (up, down)."""

    hidden_size: int
    intermediate_size: int
    gated: bool = True
    bias: bool = False
    fused_gate_up: bool = False
    act: str = "silu"
    # BitNet: an RMSNorm over the intermediate features (ffn_sub_norm) between the activation and down_proj
    inner_norm: bool = False
    # TeleChat2: a bias on down_proj only (gate / up bias-free); ``bias`` puts one on every projection
    down_bias: bool = False

    kind = FFNKind.MLP

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, i = self.hidden_size, self.intermediate_size
        if self.gated and self.fused_gate_up:
            _linear(out, f"{prefix}.gate_up_proj", 2 * i, h, self.bias)
        else:
            if self.gated:
                _linear(out, f"{prefix}.gate_proj", i, h, self.bias)
            _linear(out, f"{prefix}.up_proj", i, h, self.bias)
        _linear(out, f"{prefix}.down_proj", h, i, self.bias or self.down_bias)
        if self.inner_norm:
            out.append(Tensor(f"{prefix}.ffn_sub_norm.weight", (i,), "norm"))
        for name in ACT_PARAMS.get(self.act, ()):
            out.append(Tensor(f"{prefix}.act_fn.{name}", (1,), "other"))
        return out


@frozen
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
    # Cohere 2 MoE's "average" shared_expert_combination_strategy: the output is (routed + shared) / 2
    shared_average: bool = False
    act: str = "silu"
    # Gemma 4: the router scales its (weightless-RMS-normed) input by a learned vector ``router.scale``
    # (hidden) and the top-k weights by ``router.per_expert_scale`` (num_experts)
    router_scales: bool = False
    # ERNIE 4.5 MoE: the router's e_score_correction_bias is an nn.Parameter (requires_grad=False) of shape
    # (1, num_experts) (transformers' Ernie4_5_MoeStatics), so it counts; elsewhere it is a buffer (Numerics)
    correction_bias_param: bool = False
    shared_bias: bool = False  # ERNIE 4.5 MoE: the shared experts' projections take use_bias, as its dense MLP
    shared_fused_gate_up: bool = False  # Granite MoE Shared: one gate_up projection (its shared_mlp.input_linear)
    output_bias: bool = False  # JetMoE: one bias (hidden) added to the gated sum of the experts (``mlp.bias``)
    # LongCat-Flash: zero-computation (identity) experts the router scores beside the routed ones (router rows
    # num_experts + zero_experts); they have no weights, and a token routed to one skips that expert's compute
    zero_experts: int = 0
    # ERNIE-4.5-VL: modality-isolated experts: beside the text experts (the fields above, the only ones a text token
    # uses) a second set of num_experts experts of this width with its own router (and e_score_correction_bias
    # parameter) that only image / video tokens are routed to (``vision_router``, ``vision_experts``; 0: none)
    vision_intermediate_size: int = 0
    # Zyphra ZAYA: the router is an MLP of this width (0: one Linear): ``router.down_proj`` (hidden -> width, biased),
    # on every layer but the first ``router.router_states_scale`` (width; ``router_state_scale``) over the previous
    # layer's router state, then ``router.router_mlp``: an RMSNorm, ``fc1`` and ``fc2`` (width x width, biased) and a
    # bias-free ``out_proj`` to router_experts logits
    router_mlp: int = 0
    router_state_scale: bool = False
    # Yuan2.0-M32: an attention router: bias-free ``router.query`` / ``key`` / ``value`` (each num_experts x hidden);
    # per token softmax(q kᵀ) v over the num_experts "positions" (E x E scores) gives the router's logits
    attention_router: bool = False
    # Muse Spark: the routed experts run at this width (0: hidden_size): a bias-free ``pre_expert_proj`` (hidden ->
    # width) and its RMSNorm ``pre_expert_norm`` before them, one ``experts.post_expert_norm`` (width) on each
    # expert's output, a bias-free ``post_expert_proj`` (width -> hidden) after their sum; the router reads hidden
    expert_hidden_size: int = 0
    # Nemotron 3 Super / Ultra (LatentMoE, ``moe_latent_size``): the routed experts run at this width (0: hidden_size)
    # between a bias-free ``fc1_latent_proj`` (hidden -> latent) and ``fc2_latent_proj`` (latent -> hidden) applied
    # to the token once, no norms; the router and the shared expert read hidden (vLLM: ReplicatedLinear projections)
    latent_size: int = 0
    # Kimi K3 (routed_expert_hidden_size with latent_moe_use_norm): an RMSNorm (``latent_norm``, latent_size) over the
    # experts' weighted sum before fc2_latent_proj
    latent_norm: bool = False
    # Ergo: a learned RMSNorm per routed expert on its output (``experts.post_expert_norm.weight``: num_experts x
    # hidden; a token reads the rows of its top-k) and one on the shared expert's output (``shared_expert.norm``)
    expert_norms: bool = False
    # Kwai Klear: the routed and shared outputs blended per token by a 2-way softmax of ``coefficient`` (a biased
    # Linear(hidden, 2)): y = routed * c0 + shared * c1, instead of added
    shared_coefficient: bool = False

    kind = FFNKind.MOE

    @property
    def expert_dim(self) -> int:
        """The width the routed experts read and write (Muse Spark's ``moe_hidden_size``, Nemotron 3's
        ``moe_latent_size``, else hidden_size)."""
        return self.expert_hidden_size or self.latent_size or self.hidden_size

    def vision_moe(self) -> "MoE | None":
        """ERNIE-4.5-VL's vision experts and router as a MoE of their own (no shared experts), else None."""
        if not self.vision_intermediate_size:
            return None
        return MoE(self.hidden_size, self.num_experts, self.num_experts_per_tok, self.vision_intermediate_size,
                   correction_bias_param=self.correction_bias_param, act=self.act)

    @property
    def vision_router_params(self) -> int:
        """The vision experts' router parameters (a text token never runs them; 0: no vision experts)."""
        v = self.vision_moe()
        return 0 if v is None else sum(t.numel for t in v.tensors("x") if t.kind == "router")

    @property
    def router_experts(self) -> int:
        """The router's output width: the routed experts plus the zero-computation ones."""
        return self.num_experts + self.zero_experts

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert (weights and biases)."""
        h, i = self.expert_dim, self.moe_intermediate_size
        n = (3 if self.gated else 2) * h * i
        if self.expert_bias:
            n += (2 * i if self.gated else i) + h
        return n

    def shared_mlp(self) -> MLP | None:
        if not self.shared_intermediate_size:
            return None
        return MLP(self.hidden_size, self.shared_intermediate_size, gated=self.gated, bias=self.shared_bias,
                   fused_gate_up=self.shared_fused_gate_up, act=self.act)

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, i, e = self.hidden_size, self.moe_intermediate_size, self.num_experts
        if self.router_mlp:  # ZAYA's MLP router (its biases and norm are router parameters too)
            r, rp = self.router_mlp, f"{prefix}.router"
            out += [Tensor(f"{rp}.down_proj.weight", (r, h), "router"), Tensor(f"{rp}.down_proj.bias", (r,), "router")]
            if self.router_state_scale:
                out.append(Tensor(f"{rp}.router_states_scale", (r,), "router"))
            out.append(Tensor(f"{rp}.router_mlp.norm.weight", (r,), "router"))
            for fc in ("fc1", "fc2"):
                out += [Tensor(f"{rp}.router_mlp.{fc}.weight", (r, r), "router"),
                        Tensor(f"{rp}.router_mlp.{fc}.bias", (r,), "router")]
            out.append(Tensor(f"{rp}.router_mlp.out_proj.weight", (self.router_experts, r), "router"))
        elif self.attention_router:
            out += [Tensor(f"{prefix}.router.{name}.weight", (e, h), "router") for name in ("query", "key", "value")]
        else:
            out.append(Tensor(f"{prefix}.router.weight", (self.router_experts, h), "router"))
        if self.router_scales:
            out.append(Tensor(f"{prefix}.router.scale", (h,), "router"))
            out.append(Tensor(f"{prefix}.router.per_expert_scale", (e,), "router"))
        if self.router_bias:
            out.append(Tensor(f"{prefix}.router.bias", (self.router_experts,), "bias"))
        if self.correction_bias_param:
            out.append(Tensor(f"{prefix}.router.e_score_correction_bias", (1, e), "router"))
        up_rows = 2 * i if self.gated else i
        x = self.expert_dim
        if self.expert_hidden_size:  # Muse Spark: the experts' own width, projected to and from
            _linear(out, f"{prefix}.pre_expert_proj", x, h, False)
            out.append(Tensor(f"{prefix}.pre_expert_norm.weight", (x,), "norm"))
        if self.latent_size:  # Nemotron 3 Super / Ultra: into the latent
            _linear(out, f"{prefix}.fc1_latent_proj", x, h, False)
        out.append(Tensor(f"{prefix}.experts.gate_up_proj", (e, up_rows, x), "expert", gated=self.gated))
        if self.expert_bias:
            out.append(Tensor(f"{prefix}.experts.gate_up_proj_bias", (e, up_rows), "bias"))
        out.append(Tensor(f"{prefix}.experts.down_proj", (e, x, i), "expert"))
        if self.expert_bias:
            out.append(Tensor(f"{prefix}.experts.down_proj_bias", (e, x), "bias"))
        if self.expert_norms:  # Ergo: one RMSNorm scale per expert
            out.append(Tensor(f"{prefix}.experts.post_expert_norm.weight", (e, x), "norm"))
        if self.expert_hidden_size:
            out.append(Tensor(f"{prefix}.experts.post_expert_norm.weight", (x,), "norm"))
            _linear(out, f"{prefix}.post_expert_proj", h, x, False)
        if self.latent_norm:  # Kimi K3: the latent sum normed first
            out.append(Tensor(f"{prefix}.latent_norm.weight", (x,), "norm"))
        if self.latent_size:  # ... and out of it after the routed experts' weighted sum
            _linear(out, f"{prefix}.fc2_latent_proj", h, x, False)
        if self.output_bias:
            out.append(Tensor(f"{prefix}.bias", (h,), "bias"))
        shared = self.shared_mlp()
        if shared is not None:
            out.extend(shared.tensors(f"{prefix}.shared_expert"))
            if self.expert_norms:  # Ergo: the shared expert's output normed too
                out.append(Tensor(f"{prefix}.shared_expert.norm.weight", (h,), "norm"))
            if self.shared_expert_gate:
                out.append(Tensor(f"{prefix}.shared_expert_gate.weight", (1, h), "router"))
            if self.shared_coefficient:  # Klear: the blend's logits, weight and bias
                out += [Tensor(f"{prefix}.coefficient.weight", (2, h), "router"),
                        Tensor(f"{prefix}.coefficient.bias", (2,), "router")]
        vision = self.vision_moe()
        if vision is not None:  # ERNIE-4.5-VL: mlp.vision_router.*, mlp.vision_experts.*
            for t in vision.tensors(prefix):
                name = t.name.replace(f"{prefix}.router.", f"{prefix}.vision_router.")
                out.append(Tensor(name.replace(f"{prefix}.experts.", f"{prefix}.vision_experts."), t.shape, t.kind))
        return out


FFN = Union[MLP, MoE]


# ---- cross-attention layers (Llama 3.2 Vision) ----------------------------------------------------


@frozen
class CrossAttentionLayers:
    """Llama 3.2 Vision's (mllama) cross-attention layers, interleaved with the self-attention decoder at
    checkpoint indices ``layers``.

    Each is a gated block (transformers' ``MllamaCrossAttentionDecoderLayer``): an RMSNorm, attention whose
    queries are the text tokens and whose keys and values are the image tokens (q/k/v/o bias-free, RMSNorms
    over head_dim on q and k), a tanh gate, an RMSNorm, the gated MLP and a second tanh gate. Their K and V
    are computed once per image and cached: ``num_key_value_heads × 2 × head_dim`` elements per image token
    and layer, with ``image_tokens`` tokens per image (``max_num_tiles × (patches + 1)``, padded tiles
    included, as transformers' cross_attention_states are shaped); nothing per text token. A text-only step
    skips the whole layer (transformers: no cross_attention_states and nothing cached), so the decoder, its
    trace and its FLOPs are the self-attention layers; the weights count in parameters and memory."""

    layers: tuple[int, ...]
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    act: str = "silu"
    image_tokens: int = 0  # per image; 0 when the vision config is unknown (a text_config read alone)
    # IDEFICS v1 (style "idefics"): k/v read the vision width (kv_input_size), q/k norms only when qk_norm, tanh gates
    # alpha_cross_attn / alpha_dense of gate_size elements, nothing cached (transformers recomputes K/V each step)
    style: str = "mllama"
    kv_input_size: int = 0  # 0: hidden_size
    qk_norm: bool = True
    gate_size: int = 1

    def kv_elements_per_image(self) -> int:
        """K and V of every cross-attention layer for one image's tokens."""
        return len(self.layers) * 2 * self.num_key_value_heads * self.head_dim * self.image_tokens

    def tensors(self) -> list[Tensor]:
        """Every cross-attention layer's tensors, named ``model.cross_layers.{k}.*`` (k-th cross layer)."""
        out: list[Tensor] = []
        h, hd = self.hidden_size, self.head_dim
        kv_in = self.kv_input_size or h
        mlp = MLP(h, self.intermediate_size, act=self.act)
        idefics = self.style == "idefics"
        gates = ("alpha_cross_attn", "alpha_dense") if idefics else ("cross_attn_attn_gate", "cross_attn_mlp_gate")
        norms = ("q_layer_norm", "k_layer_norm") if idefics else ("q_norm", "k_norm")
        for k in range(len(self.layers)):
            p = f"model.gated_cross_attn_layers.{k}" if idefics else f"model.cross_layers.{k}"
            out.append(Tensor(f"{p}.input_layernorm.weight", (h,), "norm"))
            _linear(out, f"{p}.cross_attn.q_proj", self.num_attention_heads * hd, h, False)
            _linear(out, f"{p}.cross_attn.k_proj", self.num_key_value_heads * hd, kv_in, False)
            _linear(out, f"{p}.cross_attn.v_proj", self.num_key_value_heads * hd, kv_in, False)
            _linear(out, f"{p}.cross_attn.o_proj", h, self.num_attention_heads * hd, False)
            if self.qk_norm:
                out.append(Tensor(f"{p}.cross_attn.{norms[0]}.weight", (hd,), "norm"))
                out.append(Tensor(f"{p}.cross_attn.{norms[1]}.weight", (hd,), "norm"))
            out.append(Tensor(f"{p}.{gates[0]}", (self.gate_size,), "other"))
            out.append(Tensor(f"{p}.post_attention_layernorm.weight", (h,), "norm"))
            out.extend(mlp.tensors(f"{p}.mlp"))
            out.append(Tensor(f"{p}.{gates[1]}", (self.gate_size,), "other"))
        return out


# ---- layers and model ----------------------------------------------------------------------------


@frozen
class PlacedNorm:
    """A norm of a block: its module name and where it sits: ``pre_mixer``, ``post_mixer`` (applied to
    the mixer's output before the residual add), ``pre_ffn``, ``post_ffn``, or ``post_mixer_residual`` /
    ``post_ffn_residual`` (applied to the residual stream after the add: post-LN, OPT-350m)."""

    name: str
    role: str
    norm: Norm


@frozen
class Layer:
    """One decoder block. ``parallel``: mixer and FFN read the same input (GPT-NeoX, Falcon)."""

    mixer: Mixer | None
    ffn: FFN | None
    norms: tuple[PlacedNorm, ...] = ()
    parallel: bool = False
    # Gemma 4 per-layer inputs (PLE): after the FFN, ``per_layer_projection(act(per_layer_input_gate(x)) *
    # this layer's slice of the per-layer input)`` is normed (``post_per_layer_input_norm``, one of
    # ``norms``) and added to the residual; the width of that slice (0: none)
    per_layer_input: int = 0
    # Gemma 3n: AltUp over ``altup_inputs`` copies of the residual stream (``altup.*``: a router (inputs x hidden)
    # behind its RMSNorm, prediction (inputs^2 x inputs) and correction (inputs x inputs) coefficients, a
    # correct_output_scale over hidden); LAuReL, a rank-``laurel_rank`` residual beside attention
    # (``laurel.linear_left`` / ``linear_right``, ``post_laurel_norm``). 0: none
    altup_inputs: int = 0
    laurel_rank: int = 0
    # Muse Spark: learned residual gates, one vector (hidden) each after attention and after the FFN
    # (``post_attention_residual_gate.gate``, ``post_feedforward_residual_gate.gate``): the residual becomes
    # alpha(g)·x + sigmoid(g / T)·f(x) per feature
    residual_gates: bool = False
    # Voxtral Realtime: the FFN's input (after the pre-FFN norm) is scaled by 1 + ``ada_rms_norm(t_cond)``, a bias-free
    # Linear(hidden, rank) -> GELU -> Linear(rank, hidden) (``ada_rms_norm.linear1`` / ``linear2``) of the step's one
    # delay-time embedding t_cond (the same for every token): its width (0: none)
    ada_norm_rank: int = 0
    # a looped model's later pass over its core (Inkling-2 Loop, Dory, HRM): this executed layer runs the weights
    # of an earlier layer again. Its ops read them (FLOPs and weight bytes per pass) and its cache is its own, but
    # its tensors are not stored again: ``stored_tensors`` is empty, so parameters and weight memory count once
    stored: bool = True

    def norm(self, role: str) -> PlacedNorm | None:
        return next((p for p in self.norms if p.role == role), None)

    @property
    def kind(self) -> str:
        """A short label: 'full', 'sliding(4096)', 'chunked(8192)', 'mla', 'mamba', ... + '+moe'."""
        m = self.mixer
        # a layer with neither (Nemotron-NAS: attention and FFN both no-ops) is the identity
        label = ("identity" if self.ffn is None else "mlp-only") if m is None else m.label()
        if isinstance(self.ffn, MoE):
            label += "+moe"
        elif self.ffn is None and m is not None and not m.includes_ffn:
            label += "-only"
        return label

    def stored_tensors(self, prefix: str) -> list[Tensor]:
        """The tensors this layer holds in the checkpoint: ``tensors`` but none for a looped pass (``stored``)."""
        return self.tensors(prefix) if self.stored else []

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        for p in self.norms:
            out.extend(p.norm.tensors(f"{prefix}.{p.name}"))
        if self.mixer is not None:
            out.extend(self.mixer.tensors(f"{prefix}.{self.mixer.module}"))
        if self.ffn is not None:
            out.extend(self.ffn.tensors(f"{prefix}.mlp"))
        if self.per_layer_input:
            h = self.mixer.hidden_size if self.mixer is not None else self.ffn.hidden_size  # type: ignore[union-attr]
            _linear(out, f"{prefix}.per_layer_input_gate", self.per_layer_input, h, False)
            _linear(out, f"{prefix}.per_layer_projection", h, self.per_layer_input, False)
        if self.altup_inputs or self.laurel_rank:  # (Gemma 3n's layers: attention, so the mixer has hidden_size)
            h = self.mixer.hidden_size  # type: ignore[union-attr]
        if self.altup_inputs:
            n = self.altup_inputs
            out.append(Tensor(f"{prefix}.altup.correct_output_scale", (h,), "norm"))
            _linear(out, f"{prefix}.altup.correction_coefs", n, n, False)
            _linear(out, f"{prefix}.altup.prediction_coefs", n * n, n, False)
            _linear(out, f"{prefix}.altup.modality_router", n, h, False)
            out.append(Tensor(f"{prefix}.altup.router_norm.weight", (h,), "norm"))
        if self.laurel_rank:
            _linear(out, f"{prefix}.laurel.linear_left", self.laurel_rank, h, False)
            _linear(out, f"{prefix}.laurel.linear_right", h, self.laurel_rank, False)
            out.append(Tensor(f"{prefix}.laurel.post_laurel_norm.weight", (h,), "norm"))
        if self.residual_gates:  # (per-feature vectors like a norm's scale: replicated, never quantized)
            h = self.mixer.hidden_size  # type: ignore[union-attr]
            out.append(Tensor(f"{prefix}.post_attention_residual_gate.gate", (h,), "norm"))
            out.append(Tensor(f"{prefix}.post_feedforward_residual_gate.gate", (h,), "norm"))
        if self.ada_norm_rank:
            h = self.mixer.hidden_size  # type: ignore[union-attr]
            _linear(out, f"{prefix}.ada_rms_norm.linear1", self.ada_norm_rank, h, False)
            _linear(out, f"{prefix}.ada_rms_norm.linear2", h, self.ada_norm_rank, False)
        return out


@frozen
class Provenance:
    """Where one number came from: ``read`` from the config, ``default``ed, or ``derived``."""

    field: str
    status: str  # "read" | "default" | "derived"
    value: object
    note: str = ""


@frozen
class QuantSpec:
    """How the checkpoint stores its weights (from ``quantization_config``)."""

    method: str  # fp8 | fp8_channel | fp8_tensor | fp_group | awq | gptq | mxfp4 | bnb4 | bnb8 | compressed
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
    tensor_bytes: int = 0  # bytes of the per-tensor scalars each stored matrix carries (global / input scales)
    # dtype the matmuls run in ("fp8", "fp4", "act": the activations'); "" = the method's default (fp8 for fp8 / fp8_channel)
    compute: str = ""
    per_tensor: bool = False  # compressed-tensors "tensor" strategy: one weight scale per matrix
    # routed experts stored apart as fp4 e2m1 (two a byte) with one scale_bits scale per this many inputs
    # (DeepSeek-V4's ``expert_dtype: "fp4"`` beside block-fp8 linears); 0 = experts as the other matrices
    expert_group: int = 0
    # compressed-tensors with several config_groups (llm-compressor's ``mixed-precision`` format: FP8 attention
    # beside NVFP4 experts, ...) or ModelOpt ``MIXED_PRECISION`` (one group per algorithm of its quantized_layers
    # table): each group's ``targets`` and the spec its matrices are stored in, in the config's order
    # (``analysis.quant.converted_spec`` picks a tensor's); the fields above are then the group's that holds the
    # most parameters (``analysis.quant.with_primary``), which prices the GEMMs. () = one format for all
    groups: tuple = ()
    group_names: tuple = ()  # the config_groups' names, as ``groups``


#: the prefix of LongCat-Flash-Lite's n-gram modules (tables in embedding_tensors, projections in input_tensors):
#: params counts the projections as embedding, the trace runs them as one replicated bmm, parallel replicates them
NGRAM_EMBEDDINGS = "model.ngram_embeddings."


@frozen
class ModelSpec:
    model_type: str
    hidden_size: int
    vocab_size: int
    layers: tuple[Layer, ...]
    tie_word_embeddings: bool
    final_norm: Norm | None
    embedding_norm: Norm | None = None  # BLOOM: a LayerNorm right after the word embedding
    max_position_embeddings: int | None = None
    position_embeddings: int = 0  # learned absolute positions (rows)
    word_embed_proj_dim: int = 0  # OPT: embedding and lm_head width, projected to/from hidden_size (0: hidden_size)
    lm_head_bias: bool = False
    # NVIDIA Dory: ``lm_head.logit_scale``, a learned per-vocabulary-row scale of the logits (tied head or not)
    lm_head_logit_scale: bool = False
    # ModernBERT decoder's prediction head before the LM head: ``lm_head.dense`` (hidden x hidden, optional bias),
    # the hidden_act-like ``classifier_activation`` (Numerics.head_act), ``lm_head.norm`` (a LayerNorm); () none
    head_transform: tuple[Tensor, ...] = ()
    mtp_layers: tuple[Layer, ...] = ()  # DeepSeek multi-token prediction (reported, not in total)
    mtp_extra_params: int = 0  # MTP's own projections and norms besides its decoder block
    # the same as tensors, where the checkpoint stores them apart from the model's dtype (DeepSeek-V4: fp8 e_proj /
    # h_proj, F32 hc_head): sized by the format like the model's tensors (quantization, fp32_names)
    mtp_extra_tensors: tuple[Tensor, ...] = ()
    head_hc: tuple[Tensor, ...] = ()  # DeepSeek-V4's hc_head: collapses the hyper-connection streams before the final norm
    # Inkling-2: the states final_input's query (in head_hc) attends, the blocks closed after the last layer plus the
    # partial one (ceil(layers / n_layers_per_attn_res_block) + 1); 0: none
    final_input_states: int = 0
    # Jais: ALiBi's slopes kept as a never-trained (heads, 1) parameter, ``model.relative_pe.slopes`` (counted with
    # the model-level norms; no op reads it, engines compute the slopes); 0: none
    alibi_slopes: int = 0
    # HRM: model-level parameters no op reads per token (its low-level stack's initial state ``model.z_L_init``),
    # counted with the model-level norms
    model_params: tuple[Tensor, ...] = ()
    vision: tuple[Tensor, ...] = ()  # a multimodal wrapper's encoders and projectors (kind "vision", or "audio")
    # name prefixes of checkpoint tensors (counted in the total) that the serving engines do not load: Qwen-Omni's
    # speech-output models (talker, code2wav / token2wav), which vLLM's thinker model skips on load
    engine_unloaded: tuple[str, ...] = ()
    # Gemma 4 per-layer inputs (PLE): a second token table ``embed_tokens_per_layer`` (per_layer_vocab_size
    # rows, num_layers x per_layer_input_size wide) plus ``per_layer_model_projection`` of the embedding,
    # normed per layer (``per_layer_projection_norm``); layer i reads slice i (``Layer.per_layer_input``)
    per_layer_input_size: int = 0
    per_layer_vocab_size: int = 0
    # Gemma 3n: AltUp's model-level projections, (altup_inputs - 1) hidden x hidden each way: altup_projections
    # make the extra residual streams from the embedding, altup_unembed_projections fold them back before the
    # final norm (every token, both). 0: none
    altup_inputs: int = 0
    # LongCat-Flash-Lite's hashed n-gram embedding (``model.ngram_embeddings``): one table of each row count here
    # (``embedders.i``, ngram_dim wide) and its bias-free projection to hidden (``post_projs.i``); every token reads
    # one row of each and the embedding is the mean of the word embedding and the projections. () none
    ngram_rows: tuple[int, ...] = ()
    ngram_dim: int = 0
    embedding_rows: int = 0  # rows of embed_tokens when not vocab_size (mllama: vocab_size + 8)
    cross_attention: CrossAttentionLayers | None = None  # mllama: image cross-attention layers, apart from `layers`
    torch_dtype: str | None = None
    quant: QuantSpec | None = None
    # tensor kinds transformers holds in float32 whatever the checkpoint's dtype (``_keep_in_fp32_modules_strict``),
    # sized at 4 bytes a parameter and never quantized (WeightFormat.tensor_bytes); e.g. Ergo's embedding, norms and
    # residual gates, routers. () none
    fp32_kinds: tuple[str, ...] = ()
    # where only some tensors of a kind are kept in float32: fragments of their names (a tensor whose name contains one,
    # as transformers' _keep_in_fp32_modules regex searches a parameter's name), sized as fp32_kinds are; e.g.
    # Qwen2.5-Omni's ``token2wav.`` (audio-kind tensors, like its audio tower's, which are not). Only where the released
    # checkpoint stores them so: transformers' fp32 lists alone prove nothing (Nemotron 3 Super's BF16 checkpoint keeps
    # the gate.weight transformers upcasts in bf16). () none
    fp32_names: tuple[str, ...] = ()
    # numerics the runtime decoder needs (not used by the arithmetic)
    hidden_act: str = "silu"
    norm_eps: float = 1e-6
    norm_offset: float = 0.0  # Gemma's RMSNorm scales by (1 + weight)
    embedding_multiplier: float = 1.0  # Gemma: sqrt(hidden_size); Granite: embedding_multiplier
    rope_scaling: tuple[tuple[str, object], ...] = ()
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    query_pre_attn_scalar: float | None = None
    numerics: Numerics = Numerics()
    checkpoint: CheckpointLayout = CheckpointLayout()
    # bookkeeping
    generic: bool = False  # an unknown model_type analysed as a generic Llama-style decoder
    name: str = ""
    source: str = ""
    provenance: tuple[Provenance, ...] = field(default=(), compare=False)
    caveats: tuple[str, ...] = field(default=(), compare=False)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def first_moe(self) -> "MoE | None":
        """The first mixture-of-experts FFN (the shape the step model prices every MoE layer by), else None."""
        return next((layer.ffn for layer in self.layers if isinstance(layer.ffn, MoE)), None)

    @property
    def label(self) -> str:
        """The model's name, else its family: what messages call it."""
        return self.name or self.model_type

    def identity(self) -> dict:
        """The JSON ``model`` fields every command reports (besides the id it was asked by)."""
        return {"model_type": self.model_type, "num_layers": self.num_layers}

    @property
    def embed_dim(self) -> int:
        """The width of the token embedding and the LM head (OPT's ``word_embed_proj_dim``)."""
        return self.word_embed_proj_dim or self.hidden_size

    def embedding_tensors(self) -> list[Tensor]:
        out = [Tensor("model.embed_tokens.weight", (self.embedding_rows or self.vocab_size, self.embed_dim),
                      "embedding")]
        if self.position_embeddings:
            out.append(Tensor("model.embed_positions.weight", (self.position_embeddings, self.hidden_size), "embedding"))
        if self.per_layer_input_size:
            out.append(Tensor("model.embed_tokens_per_layer.weight",
                              (self.per_layer_vocab_size, self.num_layers * self.per_layer_input_size), "embedding"))
        for i, rows in enumerate(self.ngram_rows):
            out.append(Tensor(f"{NGRAM_EMBEDDINGS}embedders.{i}.weight", (rows, self.ngram_dim), "embedding"))
        return out

    def input_tensors(self) -> list[Tensor]:
        """Model-level tensors between the embedding and the first layer (Gemma 4's per-layer input
        projection and its norm; Gemma 3n's AltUp projections, the unembedding ones too: they run on
        every token, as the embedding's do)."""
        out: list[Tensor] = []
        if self.per_layer_input_size:
            _linear(out, "model.per_layer_model_projection", self.num_layers * self.per_layer_input_size,
                    self.hidden_size, False)
            out.append(Tensor("model.per_layer_projection_norm.weight", (self.per_layer_input_size,), "norm"))
        for name in ("altup_projections", "altup_unembed_projections"):
            for j in range(max(0, self.altup_inputs - 1)):
                _linear(out, f"model.{name}.{j}", self.hidden_size, self.hidden_size, False)
        for i in range(len(self.ngram_rows)):  # LongCat-Flash-Lite's n-gram projections
            _linear(out, f"{NGRAM_EMBEDDINGS}post_projs.{i}", self.hidden_size, self.ngram_dim, False)
        return out

    def lm_head_tensors(self) -> list[Tensor]:
        # CTRL: a head tied to the embedding with a bias of its own
        out = [] if self.tie_word_embeddings else [Tensor("lm_head.weight", (self.vocab_size, self.embed_dim), "lm_head")]
        if self.lm_head_bias:
            out.append(Tensor("lm_head.bias", (self.vocab_size,), "bias"))
        if self.lm_head_logit_scale:
            out.append(Tensor("lm_head.logit_scale", (self.vocab_size,), "other"))
        return out

    def projection_tensors(self) -> list[Tensor]:
        """OPT's bias-free ``project_in`` (embedding width -> hidden, after the token lookup) and
        ``project_out`` (hidden -> embedding width, before the LM head), in that order; none without ``word_embed_proj_dim``."""
        if not self.word_embed_proj_dim:
            return []
        p, h = self.word_embed_proj_dim, self.hidden_size
        return [Tensor("model.project_in.weight", (h, p), "linear"), Tensor("model.project_out.weight", (p, h), "linear")]

    def final_norm_tensors(self) -> list[Tensor]:
        """The model-level norms: the final norm and, where there is one, the embedding's norm."""
        out = self.embedding_norm.tensors("model.embed_layernorm") if self.embedding_norm else []
        out = out + (self.final_norm.tensors("model.norm") if self.final_norm else []) + list(self.head_hc)
        if self.alibi_slopes:  # Jais's relative_pe.slopes
            out.append(Tensor("model.relative_pe.slopes", (self.alibi_slopes, 1), "other"))
        return out + list(self.model_params)

    @cached_property
    def layer_groups(self) -> tuple[tuple[int, ...], ...]:
        """The indices of identical layers (equal specs), one tuple per distinct layer, in order of first
        appearance. A figure computed for a group's first layer holds for every layer of the group, so
        work grows with the distinct layer shapes, not the layers (computed once per spec)."""
        groups: dict[Layer, list[int]] = {}
        for i, layer in enumerate(self.layers):
            groups.setdefault(layer, []).append(i)
        return tuple(tuple(v) for v in groups.values())

    @cached_property
    def storage_layer_groups(self) -> tuple[tuple[int, ...], ...]:
        """``layer_groups`` split further where ``quantization_config``'s ``modules_to_not_convert``
        names the modules of some layers but not of others, or its groups' targets put them in different
        formats (their weights are stored differently):
        the groups for figures that depend on how the checkpoint stores weights."""
        q = self.quant
        if q is None or not (q.modules_to_not_convert or q.groups):
            return self.layer_groups
        from .quant import storage_key

        out: list[tuple[int, ...]] = []
        for group in self.layer_groups:
            split: dict[tuple, list[int]] = {}
            for i in group:
                key = tuple(storage_key(t, q) for t in self.layers[i].stored_tensors(f"model.layers.{i}"))
                split.setdefault(key, []).append(i)
            out.extend(tuple(v) for v in split.values())
        return tuple(sorted(out))

    def cross_tensors(self) -> list[Tensor]:
        """The cross-attention layers' tensors (mllama), none elsewhere."""
        return self.cross_attention.tensors() if self.cross_attention is not None else []

    def layer_tensors(self, i: int) -> list[Tensor]:
        """The tensors layer ``i`` stores, named as in the checkpoint (none for a looped pass)."""
        return self.layers[i].stored_tensors(f"model.layers.{i}")

    def engine_skips(self, t: Tensor) -> bool:
        """Whether the serving engines leave ``t`` unloaded (a name under ``engine_unloaded``)."""
        return bool(self.engine_unloaded) and t.name.startswith(self.engine_unloaded)

    def tensors(self) -> list[Tensor]:
        """Every tensor of the model (tied embeddings once; MTP layers excluded)."""
        out = self.embedding_tensors() + self.projection_tensors() + self.input_tensors()
        for i, layer in enumerate(self.layers):
            out.extend(layer.stored_tensors(f"model.layers.{i}"))
        out.extend(self.cross_tensors())
        out.extend(self.final_norm_tensors())
        out.extend(self.head_transform)
        out.extend(self.lm_head_tensors())
        out.extend(self.vision)
        return out
