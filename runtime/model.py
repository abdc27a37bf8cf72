"""The one decoder: a torch model of the exact shape of a ``ModelSpec``.

Every family ``analyze`` reads (Llama, Mistral, Qwen, Gemma 1-3, Phi-3, GPT-NeoX, Falcon, OLMo 2,
StarCoder2, Mixtral, Qwen-MoE, DeepSeek V2/V3 MLA, gpt-oss, Llama 4, Gemma 4 ...) is this one model, selected by
the spec's fields: norms and where they sit, biases, fused projections, RoPE (theta, scaling,
partial rotary), GQA/MQA/MHA, sliding and chunked windows, q/k norms, logit soft-capping, attention
sinks, gated and plain MLPs, parallel residuals, tied embeddings, MoE with top-k routing and shared
experts, MLA with its compressed cache, and the Gated DeltaNet layers (with their conv and recurrent
state) of Qwen3-Next and Qwen3.5 beside their gated attention. Parameter names are the spec's tensor
names, so ``state_dict()`` lines up with ``spec.tensors()`` one to one.

The arithmetic matches ``analysis.trace``'s conventions, so that ``FlopCounterMode`` over a decode step
equals the trace's matmul FLOPs exactly: attention runs over a slice of exactly the keys a query sees
(never the whole preallocated buffer), logits are computed for the last position only, a MoE layer
multiplies only the routed (token, expert) pairs, and MLA decodes in the absorbed form and prefills
in the expanded form. RoPE angles are an elementwise outer product (no matmul).

Models are built on the meta device and then allocated on the target device in the target dtype
(``build_decoder``): a 16 GB model never passes through CPU memory on its way to a GPU.

Shape suffixes of tensor names (legend)::

    B  batch (sequences)              T  new tokens per sequence in this step
    S  keys attended (cached + new)   C  cache slots of a layer (capacity, or its window/chunk)
    D  hidden_size                    V  vocab_size
    H  query heads                    K  key/value heads           G  query heads per KV head (H/K)
    d  head_dim                       e  v_head_dim                Q  rows of grouped queries (G·T)
    R  rotary dims / 2                N  tokens of the step (B·T)  E  experts
    I  intermediate size              A  routed (token, expert) pairs (N·top_k)
    L  MLA latent (kv_lora_rank)      P  MLA rope dims (qk_rope_head_dim)
    n  MLA qk_nope_head_dim           k  top-k
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from planner.analysis.errors import ConfigError, RuntimeUnavailableError, UnsupportedModelError
from planner.analysis.spec import (GLU, MLA, MLP, Attention, GatedDeltaNet, GroupScore, Layer, MixerKind, MixerSpec,
                                   ModelSpec, MoE, Norm, NormKind, Numerics, RopeStyle, RouterKind)

from .cache import AttentionKV, DeltaNetState, LatentKV

# ---- profiler regions: the trace's op kinds --------------------------------------------------------

_REGIONS = {"on": False}


def region(kind: str):
    """A ``torch.profiler`` range named ``planner::<kind>`` (kinds of ``analysis.trace.Op``) while the
    per-kind profile runs (``runtime.timing.profile_kinds``); a no-op otherwise."""
    if not _REGIONS["on"]:
        return nullcontext()
    return torch.profiler.record_function(f"planner::{kind}")


def check_router_groups(spec: ModelSpec) -> None:
    """A grouped router (DeepSeek's) views the experts as (n_group, experts / n_group), keeps topk_group groups and,
    with ``GroupScore.TOP2``, ranks a group by its two best experts: refuse a config where that cannot run (the
    analysis reads it, as transformers' config classes do; their router fails as ours would)."""
    num = spec.numerics
    if num.n_group <= 1 or num.group_score == GroupScore.NONE:
        return
    for e in {layer.ffn.num_experts for layer in spec.layers if isinstance(layer.ffn, MoE)}:
        if e % num.n_group:
            raise ConfigError(f"{spec.label}: n_group ({num.n_group}) does not split the {e} routed experts into "
                              "equal groups, which the router needs", "choose an n_group that divides the experts")
        if num.group_score == GroupScore.TOP2 and e // num.n_group < 2:
            raise ConfigError(f"{spec.label}: n_group ({num.n_group}) leaves groups of one expert, but the router ranks "
                              "each group by its two best experts (DeepSeek-V3's; transformers cannot run it either)",
                              "lower n_group so that each group holds at least 2 experts")
    if not 1 <= num.topk_group <= num.n_group:
        raise ConfigError(f"{spec.label}: topk_group ({num.topk_group}) must be between 1 and n_group ({num.n_group})",
                          "the router keeps topk_group of the n_group expert groups")


def check_supported(spec: ModelSpec) -> None:
    """Refuse, with one clear message, what the runtime cannot run yet: a mixer kind without a module in
    ``MIXERS``, or what its module says it does not run (``MixerModule.unsupported``)."""
    if spec.numerics.depth_scaled_residual:
        raise RuntimeUnavailableError(f"verify does not support Beam's decoder layer yet ({spec.label}: depth-scaled "
                                      "residual adds, a per-head bias in the attention's sigmoid gate and a "
                                      "scalable-softmax query scale on its NoPE layers)",
                                      "analyze and trace work for this model")
    if any(isinstance(layer.ffn, MoE) and layer.ffn.expert_norms for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support per-expert output norms yet ({spec.label}: Ergo's "
                                      "learned RMSNorm on each routed expert's and the shared expert's output, and "
                                      "its learned residual gates)", "analyze and trace work for this model")
    if any(isinstance(layer.ffn, MoE) and layer.ffn.expert_hidden_size for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support Muse Spark's decoder layer yet ({spec.label}: learned "
                                      "residual gates, experts run at moe_hidden_size between pre / post expert "
                                      "projections and norms, weightless q/k/o norms with a query scale)",
                                      "analyze and trace work for this model")
    if any(layer.residual_gates for layer in spec.layers):  # Ergo without MoE layers, a dense Muse Spark
        raise RuntimeUnavailableError(f"verify does not support learned residual gates yet ({spec.label}: each "
                                      "branch and the residual mixed by a learned sigmoid gate per channel, as in "
                                      "Ergo's and Muse Spark's decoder layers)", "analyze and trace work for this model")
    if any(isinstance(layer.ffn, MoE) and layer.ffn.latent_size for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support latent-projected MoE yet ({spec.label}: routed experts "
                                      "run at moe_latent_size between fc1_latent_proj / fc2_latent_proj)",
                                      "analyze and trace work for this model")
    if any(layer.ada_norm_rank for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support Voxtral Realtime's decoder layer yet ({spec.label}: "
                                      "the FFN input scaled by 1 + ada_rms_norm(t_cond), an MLP of the delay-time "
                                      "embedding)", "analyze and trace work for this model")
    check_router_groups(spec)
    if spec.numerics.runtime_unsupported:
        raise RuntimeUnavailableError(f"verify does not support {spec.numerics.runtime_unsupported} yet "
                                      f"({spec.label})", "analyze and trace work for this model")
    looped = next((i for i, layer in enumerate(spec.layers) if not layer.stored), None)
    if looped is not None:  # Inkling-2 Loop, Dory, HRM: one module per layer run would not share the weights
        raise RuntimeUnavailableError(f"verify does not support looped layers yet (layer {looped} of {spec.label} runs "
                                      "an earlier layer's weights again)", "analyze and trace work for this model")
    for i, layer in enumerate(spec.layers):
        m = layer.mixer
        if m is None:
            continue
        run = MIXERS.get(m.kind)
        if run is None:
            titles = [r.title for r in MIXERS.values()]
            covered = f"{', '.join(titles[:-1])} and {titles[-1]}"
            raise RuntimeUnavailableError(f"verify does not support {m.title} layers yet (layer {i} of {spec.label})",
                                          f"analyze and trace work for this model; the torch runtime covers {covered}")
        what = run.module.unsupported(m)
        if what:
            raise RuntimeUnavailableError(f"verify does not support {what} yet (layer {i} of {spec.label})",
                                          "analyze and trace work for this model")
    if spec.numerics.residual_after_norm:  # MiniMax with softmax layers only, ChatGLM with
        # apply_residual_connection_post_layernorm: the mixers run, the residual does not
        raise RuntimeUnavailableError(f"verify does not support a residual taken after each norm yet ({spec.label}: "
                                      "MiniMax's decoder layer, scaled by its alpha / beta factors; ChatGLM's "
                                      "apply_residual_connection_post_layernorm)",
                                      "analyze and trace work for this model")
    if spec.numerics.glu == GLU.GPT_OSS and any(isinstance(layer.ffn, MLP) or (isinstance(layer.ffn, MoE) and
                                                                               layer.ffn.shared_intermediate_size)
                                                for layer in spec.layers):
        # MiniMax-M3: its dense MLPs and shared experts run the clamped SwiGLU, which only the routed experts do here
        raise RuntimeUnavailableError(f"verify does not support the clamped SwiGLU in dense MLPs and shared experts "
                                      f"yet ({spec.label})", "analyze and trace work for this model")
    if spec.altup_inputs or any(layer.altup_inputs or layer.laurel_rank for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support Gemma 3n's decoder layer yet ({spec.label}: AltUp's "
                                      "predicted / corrected residual streams, LAuReL's low-rank residual and the "
                                      "Gaussian top-k activation sparsity)", "analyze and trace work for this model")
    if spec.ngram_rows:
        raise RuntimeUnavailableError(f"verify does not support hashed n-gram embeddings yet ({spec.label}: "
                                      "LongCat-Flash-Lite's embedding averages the word embedding with projected "
                                      "rows of its n-gram tables)", "analyze and trace work for this model")
    if spec.numerics.shortcut_moe or any(isinstance(layer.ffn, MoE) and layer.ffn.zero_experts
                                         for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support LongCat-Flash's shortcut MoE yet ({spec.label}: the "
                                      "MoE's output joins the residual a sublayer later, its router also picks "
                                      "zero-computation experts, and its MLA scales the latents)",
                                      "analyze and trace work for this model")
    if any(isinstance(layer.ffn, MoE) and layer.ffn.attention_router for layer in spec.layers):
        raise RuntimeUnavailableError(f"verify does not support Yuan2.0-M32's attention router yet ({spec.label})",
                                      "analyze and trace work for this model")
    if spec.numerics.glu == GLU.STEP:
        raise RuntimeUnavailableError(f"verify does not support Step-3.5's decoder layer yet ({spec.label}: its SwiGLU "
                                      "clamped per layer by swiglu_limits / swiglu_limits_shared)",
                                      "analyze and trace work for this model")
    if spec.position_embeddings and spec.max_position_embeddings is None:
        raise RuntimeUnavailableError("learned position embeddings without max_position_embeddings")
    if spec.numerics.rope_unscaled_layers:
        raise RuntimeUnavailableError(f"verify does not support RoPE scaled on some layers only yet ({spec.label}: "
                                      "Molmo2's rope_scaling_layers leave layers "
                                      f"{list(spec.numerics.rope_unscaled_layers)} unscaled)",
                                      "analyze and trace work for this model")
    if spec.numerics.norm_offsets:  # PLaMo-2, Muse Glimmer: each placed RMSNorm scales by its own offset + weight
        names = ", ".join(f"{n} x ({o:g} + weight)" for n, o in spec.numerics.norm_offsets[:3])
        raise RuntimeUnavailableError(f"verify does not support RMSNorms with per-norm weight offsets yet ({spec.label}: "
                                      f"{names})", "analyze and trace work for this model")
    if spec.numerics.alibi_sqrt:
        raise RuntimeUnavailableError(f"verify does not support ALiBi on the square root of the key distance yet "
                                      f"({spec.label}: Step1's use_alibi_sqrt)", "analyze and trace work for this model")
    if spec.numerics.alibi_scaling:
        raise RuntimeUnavailableError(f"verify does not support ALiBi's linear scaling (alibi_scaling) yet "
                                      f"({spec.label})", "analyze and trace work for this model")
    if spec.head_transform and spec.numerics.head_act not in ACTIVATIONS:
        raise RuntimeUnavailableError(f"verify does not support the prediction head's activation "
                                      f"{spec.numerics.head_act!r} yet ({spec.label})",
                                      "analyze and trace work for this model")
    if spec.numerics.moe_beside_attention:
        raise RuntimeUnavailableError(f"verify does not support Snowflake Arctic's decoder layer yet ({spec.label}: "
                                      "the experts read the layer's input beside attention, the residual MLP the "
                                      "attention's output)", "analyze and trace work for this model")
    if spec.cross_attention is not None and spec.cross_attention.style == "idefics":
        raise RuntimeUnavailableError(f"verify does not support IDEFICS's gated cross-attention blocks yet "
                                      f"({spec.label}: transformers runs them before every cross_layer_interval-th "
                                      "layer at every step, its forward needing an image, so the LLaMA layers alone "
                                      "are not its logits)", "analyze and trace work for this model")


# ---- activations ---------------------------------------------------------------------------------

def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {
    "silu": F.silu, "swish": F.silu, "gelu": F.gelu, "gelu_pytorch_tanh": _gelu_tanh, "gelu_new": _gelu_tanh,
    "gelu_fast": _gelu_tanh, "gelu_python": F.gelu, "relu": F.relu, "relu2": lambda x: F.relu(x).square(),
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x), "tanh": torch.tanh, "sigmoid": torch.sigmoid,
}


class XIELU(nn.Module):
    """xIELU (Apertus; transformers' ``XIELUActivation``, its Python path): learned ``alpha_p`` and ``alpha_n``
    (one scalar each, the spec's ``act_fn`` tensors), ``beta`` and ``eps`` buffers (0.5 and -1e-6 in
    transformers, which the checkpoint may carry)::

        x > 0:  softplus(alpha_p)·x² + beta·x
        x <= 0: (expm1(min(x, eps)) - x)·(beta + softplus(alpha_n)) + beta·x
    """

    BETA, EPS = 0.5, -1e-6

    def __init__(self, dtype=None):
        super().__init__()
        self.alpha_p = nn.Parameter(torch.empty(1, dtype=dtype))
        self.alpha_n = nn.Parameter(torch.empty(1, dtype=dtype))
        self.register_buffer("beta", torch.empty((), dtype=dtype))
        self.register_buffer("eps", torch.empty((), dtype=dtype))

    def reset_buffers(self) -> None:
        self.beta.fill_(self.BETA)
        self.eps.fill_(self.EPS)

    def forward(self, x):
        alpha_p = F.softplus(self.alpha_p)
        alpha_n = self.beta + F.softplus(self.alpha_n)
        return torch.where(x > 0, alpha_p * x * x + self.beta * x,
                           (torch.expm1(torch.min(x, self.eps)) - x) * alpha_n + self.beta * x)


#: Activations with learned parameters (``analysis.spec.ACT_PARAMS``): a module per MLP, named ``act_fn``
PARAMETRIC_ACTIVATIONS = {"xielu": XIELU}


def activation(name: str, notes: list[str]):
    fn = ACTIVATIONS.get(str(name).lower())
    if fn is None:
        notes.append(f"activation '{name}' is not implemented: SiLU is used (shapes, FLOPs and timing are unaffected)")
        return F.silu
    return fn


# ---- norms ---------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    """RMSNorm in fp32. ``offset`` 1.0 is Gemma's ``x·(1 + weight)`` (scaled in fp32); otherwise
    Llama's: normalise in fp32, cast back, then scale."""

    def __init__(self, dim: int, eps: float, offset: float = 0.0, affine: bool = True, dtype=None):
        super().__init__()
        self.eps, self.offset = eps, offset
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype)) if affine else None

    def forward(self, x):
        with region("norm"):
            x32 = x.float()
            y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
            if self.weight is None:
                return y.type_as(x)
            if self.offset:
                return (y * (self.offset + self.weight.float())).type_as(x)
            return self.weight * y.type_as(x)


class LayerNorm(nn.Module):
    """``offset`` 1.0 is Nemotron's LayerNorm1P: ``F.layer_norm`` with ``weight + 1``."""

    def __init__(self, dim: int, eps: float, bias: bool = True, affine: bool = True, dtype=None, offset: float = 0.0):
        super().__init__()
        self.dim, self.eps, self.offset = dim, eps, offset
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype)) if affine else None
        self.bias = nn.Parameter(torch.empty(dim, dtype=dtype)) if affine and bias else None

    def forward(self, x):
        with region("norm"):
            w = self.weight + self.offset if self.offset and self.weight is not None else self.weight
            return F.layer_norm(x, (self.dim,), w, self.bias, self.eps)


class HeadLayerNorm(nn.Module):
    """Cohere's q/k norm: a bias-free LayerNorm over head_dim, in fp32, with a (heads, head_dim) weight."""

    def __init__(self, heads: int, dim: int, eps: float, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(heads, dim, dtype=dtype))

    def forward(self, x_BTHd):
        with region("norm"):
            x32 = x_BTHd.float()
            x32 = x32 - x32.mean(-1, keepdim=True)
            y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
            return (self.weight.float() * y).to(x_BTHd.dtype)


def make_norm(norm: Norm, spec: ModelSpec, dtype, eps: float | None = None) -> nn.Module:
    eps = spec.norm_eps if eps is None else eps
    if norm.kind == NormKind.LAYER:
        return LayerNorm(norm.dim, eps, bias=norm.bias, affine=norm.affine, dtype=dtype, offset=spec.norm_offset)
    return RMSNorm(norm.dim, eps, offset=spec.norm_offset, affine=norm.affine, dtype=dtype)


def linear(n_in: int, n_out: int, bias: bool, dtype) -> nn.Linear:
    return nn.Linear(n_in, n_out, bias=bias, dtype=dtype)


# ---- rotary position embedding -------------------------------------------------------------------


def rope_frequencies(dim: int, theta: float, scaling: dict, max_pos: int | None, notes: list[str]) -> tuple[torch.Tensor, float]:
    """(inv_freq of ``dim/2`` frequencies in fp32, factor on cos/sin), as ``transformers`` computes them
    for rope_type default, linear, dynamic (below its original length), llama3, yarn and longrope."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    kind = str(scaling.get("rope_type") or scaling.get("type") or "default")
    factor = float(scaling.get("factor") or 1.0)
    if kind in ("default", "dynamic", "proportional"):
        return inv, 1.0
    if kind == "linear":
        return inv / factor, 1.0
    if kind == "llama3":
        low, high = float(scaling.get("low_freq_factor", 1.0)), float(scaling.get("high_freq_factor", 4.0))
        old = float(scaling.get("original_max_position_embeddings", 8192))
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) * ~(wavelen > old / low)
        return torch.where(medium, smoothed, scaled), 1.0
    if kind == "yarn":
        orig = float(scaling.get("original_max_position_embeddings") or max_pos or 4096)

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        att = scaling.get("attention_factor")
        ms, ms_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        if att is None:
            att = mscale(factor, ms) / mscale(factor, ms_all) if ms and ms_all else mscale(factor)
        beta_fast, beta_slow = float(scaling.get("beta_fast") or 32), float(scaling.get("beta_slow") or 1)

        def corr(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = corr(beta_fast), corr(beta_slow)
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - lo) / (hi - lo)).clamp(0, 1)
        extrapolation = 1 - ramp
        pos = theta ** (torch.arange(0, dim, 2).float() / dim)
        inv = (1.0 / (factor * pos)) * (1 - extrapolation) + (1.0 / pos) * extrapolation
        return inv, float(att)
    if kind in ("longrope", "su"):
        extra = dict(scaling.get("_extra", ()))
        short = extra.get("short_factor")
        orig = float(scaling.get("original_max_position_embeddings") or max_pos or 4096)
        if max_pos and scaling.get("original_max_position_embeddings"):
            factor = max_pos / orig
        if short is None or len(short) != dim // 2:
            notes.append("longrope factors unavailable: plain RoPE used (shapes, FLOPs and timing are unaffected)")
            return inv, 1.0
        att = scaling.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
        return inv / torch.tensor(short, dtype=torch.float32), float(att)
    notes.append(f"rope_type '{kind}' is not implemented: plain RoPE used (shapes, FLOPs and timing are unaffected)")
    return inv, 1.0


class Rotary(nn.Module):
    """cos and sin of RoPE for given positions; ``inv_freq`` is fp32 and filled by ``reset_buffers``."""

    def __init__(self, dim: int, theta: float, scaling: dict, style: str, max_pos: int | None, notes: list[str],
                 proportional: float | None = None):
        super().__init__()
        self.dim, self.theta, self.scaling, self.style, self.max_pos = dim, theta, scaling, style, max_pos
        self.notes, self.proportional = notes, proportional
        self.attention_factor = 1.0
        self.register_buffer("inv_freq", torch.empty(dim // 2, dtype=torch.float32), persistent=False)

    def reset_buffers(self) -> None:
        if self.proportional is not None:  # Gemma 4 full layers: the first f·d/2 frequencies over d, the rest 0
            n = int(self.proportional * self.dim // 2)
            inv = 1.0 / (self.theta ** (torch.arange(0, 2 * n, 2, dtype=torch.int64).float() / self.dim))
            inv, self.attention_factor = torch.cat((inv, torch.zeros(self.dim // 2 - n))), 1.0
        else:
            inv, self.attention_factor = rope_frequencies(self.dim, self.theta, self.scaling, self.max_pos, self.notes)
        self.inv_freq = inv.to(self.inv_freq.device)

    def forward(self, pos_T: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        angle_TR = pos_T.float()[:, None] * self.inv_freq[None, :]  # elementwise outer product, not a matmul
        f = self.attention_factor
        return (angle_TR.cos() * f).to(dtype), (angle_TR.sin() * f).to(dtype)


def apply_rope(x: torch.Tensor, cos_TR: torch.Tensor, sin_TR: torch.Tensor, style: str) -> torch.Tensor:
    """Rotate the first ``2R`` features of ``x`` (..., T, heads, dims). ``half`` pairs feature i with
    i+R (rotate_half); ``pairs`` pairs 2i with 2i+1 and returns them de-interleaved (evens, then odds),
    as DeepSeek V3 does: q and k get the same layout, so q·k is that of interleaved RoPE."""
    rd = 2 * cos_TR.shape[-1]
    rot, rest = x[..., :rd], x[..., rd:]
    cos, sin = cos_TR[:, None, :], sin_TR[:, None, :]  # (T, 1, R) against (..., T, heads, R)
    if style == RopeStyle.HALF_FLIPPED:  # NanoChat: rotate_half as cat(x2, -x1), the same as sin negated
        sin = -sin
    if style == RopeStyle.PAIRS:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., : rd // 2], rot[..., rd // 2:]
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return torch.cat((out, rest), dim=-1) if rest.shape[-1] else out


# ---- attention -----------------------------------------------------------------------------------


def _allowed_TS(qpos_T: torch.Tensor, kpos_S: torch.Tensor, window: int | None, chunk: int | None) -> torch.Tensor:
    """Which keys each query sees: causal, within ``window`` keys (the query included), or in its chunk."""
    q, k = qpos_T[:, None], kpos_S[None, :]
    ok = k <= q
    if window:
        ok = ok & (q - k < window)
    if chunk:
        ok = ok & (torch.div(k, chunk, rounding_mode="floor") == torch.div(q, chunk, rounding_mode="floor"))
    return ok


def alibi_slopes(heads: int, bias_max: float = 8.0) -> torch.Tensor:
    """ALiBi's per-head slopes (Press et al.; BLOOM's ``_get_alibi_slopes``): a geometric series over
    the nearest power of two of heads, the odd powers of the next one's base for the rest. MPT's
    ``alibi_bias_max`` other than 8 (``build_mpt_alibi_tensor``): ``2^(-bias_max·i / n)`` for i in 1..n,
    n the next power of two, the even-indexed ones first then the odd, the first ``heads`` kept."""
    if bias_max != 8.0:
        n = 2 ** math.ceil(math.log2(heads))
        s = [2.0 ** (-bias_max * i / n) for i in range(1, n + 1)]
        if n != heads:
            s = (s[1::2] + s[::2])[:heads]
        return torch.tensor(s, dtype=torch.float32)
    closest = 2 ** math.floor(math.log2(heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, 1 + closest)]
    if closest != heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 1 + 2 * min(closest, heads - closest), 2)]
    return torch.tensor(slopes, dtype=torch.float32)


class Sinusoids(nn.Module):
    """CTRL's fixed position table (transformers' ``positional_encoding``): row p is ``[sin(p·r_j) | cos(p·r_j)]``,
    ``r_j = 10000^(-2j / dim)``, in fp32 as transformers computes it; only the rows asked for are computed (the
    rates are the buffer), nothing is loaded."""

    def __init__(self, dim: int, fairseq: bool = False, offset: int = 0, padding_row: int | None = None):
        super().__init__()
        self.dim, self.fairseq, self.offset, self.padding_row = dim, fairseq, offset, padding_row
        n = dim // 2 if fairseq else dim
        self.register_buffer("rates", torch.empty(n, dtype=torch.float32), persistent=False)

    def reset_buffers(self) -> None:
        if self.fairseq:  # XGLM (transformers' XGLMSinusoidalPositionalEmbedding.get_embedding)
            half = self.dim // 2
            step = math.log(10000) / (half - 1)
            self.rates = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step).to(self.rates.device)
            return
        i = torch.arange(self.dim, dtype=torch.int64).float()
        self.rates = (1 / torch.pow(10000, (2 * (i // 2)) / self.dim)).to(self.rates.device)

    def forward(self, pos_T: torch.Tensor) -> torch.Tensor:
        if self.fairseq:  # row p + offset of [sin | cos] (| 0 when dim is odd), the padding row zeroed
            row_T = pos_T + self.offset
            angle_TH = row_T.float()[:, None] * self.rates[None]
            out_TD = torch.cat([torch.sin(angle_TH), torch.cos(angle_TH)], dim=-1)
            if self.dim % 2:
                out_TD = torch.cat([out_TD, out_TD.new_zeros(out_TD.shape[0], 1)], dim=-1)
            if self.padding_row is not None:
                out_TD = out_TD.masked_fill((row_T == self.padding_row)[:, None], 0.0)
            return out_TD
        angle_TD = pos_T.float()[:, None] * self.rates[None]
        return torch.cat([torch.sin(angle_TD[:, 0::2]), torch.cos(angle_TD[:, 1::2])], dim=-1)


class AlibiSlopes(nn.Module):
    """Jais's ``relative_pe``: ALiBi's slopes as a (heads, 1) parameter that never trains (the checkpoint holds
    it); the attention layers compute the same slopes themselves (``alibi_slopes``)."""

    def __init__(self, heads: int, dtype):
        super().__init__()
        self.slopes = nn.Parameter(torch.empty(heads, 1, dtype=dtype), requires_grad=False)


class HeadBias(nn.Module):
    """The bias of an LM head whose weight is tied to the embedding (CTRL): ``lm_head.bias``."""

    def __init__(self, vocab: int, dtype):
        super().__init__()
        self.bias = nn.Parameter(torch.empty(vocab, dtype=dtype))


class Alibi(nn.Module):
    """The score bias of ALiBi: ``slope_h × key position`` (BLOOM's form; the ``-slope_h × query
    position`` of the textbook form is constant along a softmax row and drops out)."""

    def __init__(self, heads: int, bias_max: float = 8.0):
        super().__init__()
        self.heads, self.bias_max = heads, bias_max
        self.register_buffer("slopes", torch.empty(heads, dtype=torch.float32), persistent=False)

    def reset_buffers(self) -> None:
        self.slopes = alibi_slopes(self.heads, self.bias_max).to(self.slopes.device)


class MixerModule(nn.Module):
    """Base of the torch module of a mixer kind (``MIXERS``): built as ``cls(m, spec, num, notes, dtype)``
    from the mixer's spec, registered under the spec's ``module`` name, called as ``(x_BTD, pos_T, pos0,
    cache)``; what of the kind it does not run, and whether it shards under ``verify --tp``."""

    @staticmethod
    def unsupported(m: MixerSpec) -> str | None:
        """What of ``m`` this module does not run yet (a phrase for the refusal), or None."""
        return None

    @staticmethod
    def check_tp(m: MixerSpec, layer: int) -> None:
        """Raise ``RuntimeUnavailableError`` unless ``runtime.parallel`` shards this mixer."""
        raise RuntimeUnavailableError(f"verify --tp does not shard {m.title} layers (layer {layer})", "use --tp 1")


class SelfAttention(MixerModule):
    """Softmax attention with K key/value heads shared by G = H/K query heads each (MHA, GQA, MQA).

    The G query heads of a KV head are laid out as G·T query rows against that head's keys, so the
    keys are never repeated (no copy) and SDPA's FLOPs are exactly ``2·B·H·T·S·(d + e)``."""

    @staticmethod
    def unsupported(m: Attention) -> str | None:
        if getattr(m, "gate_bias", False):
            return "a per-head bias in the attention's sigmoid output gate (Beam's gate_bias)"
        if getattr(m, "sub_layernorms", False):  # analysis.families.kosmos2.SubLNAttention
            return ("Kosmos's biased sub-LayerNorms (ffn_layernorm before fc2; Kosmos-2's inner_attn_ln before "
                    "out_proj; the runtime has BitNet's RMS sub-norms only)")
        if m.qk_norm_bias and (m.qk_norm_per_head or m.q_norm_dim != m.head_dim):
            return "q/k LayerNorms with bias over more than one head"
        if m.lf_gate:
            return ("Yuan 2.0's localized filtering attention (LFA: two causal convolutions and a norm before q_proj / "
                    "k_proj, a conv state per sequence)")
        if m.cla:
            return ("Hunyuan's cross-layer attention (CLA: layers without K/V projections read the previous "
                    "layer's rotated keys and values, norming the keys with their own key_layernorm)")
        return None

    @staticmethod
    def check_tp(m: Attention, layer: int) -> None:
        if m.fused_qkv:
            raise RuntimeUnavailableError(f"verify --tp does not shard fused QKV projections yet (layer {layer})",
                                          "use --tp 1")
        if m.q_norm_dim and m.q_norm_dim != m.head_dim:
            raise RuntimeUnavailableError(f"verify --tp: a q/k norm over all heads (layer {layer}) needs a cross-rank "
                                          "reduction the runtime does not do", "use --tp 1")

    def __init__(self, m: Attention, spec: ModelSpec, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.m, self.num = m, num
        D, H, K = m.hidden_size, m.num_attention_heads, m.num_key_value_heads
        # Qwen3-Next / Qwen3.5: q_proj also emits a gate per query feature, per head [q (d) | gate (d)]
        self.gated = m.output_gate  # (never fused: GatedAttention refuses it)
        if m.fused_qkv:
            self.qkv_proj = linear(D, m.q_dim + m.k_dim + m.v_dim, m.q_bias or m.k_bias or m.v_bias, dtype)
        else:
            self.q_proj = linear(D, 2 * m.q_dim if self.gated else m.q_dim, m.q_bias, dtype)
            if not m.kv_shared:  # Gemma 4: a shared-KV layer attends over an earlier layer's K/V
                self.k_proj = linear(D, m.k_dim, m.k_bias, dtype)
                if not m.k_eq_v:  # Gemma 4 full layers: V is the K projection
                    self.v_proj = linear(D, m.v_dim, m.v_bias, dtype)
        self.o_proj = linear(m.o_in, D, m.o_bias, dtype)
        if m.head_gate:  # LFM3: sigmoid(g_proj(x)) scales each head's output (Laguna: softplus, maybe per feature)
            self.g_proj = linear(D, m.gate_dim, False, dtype)
        if m.proj_gate:  # AFMoE: sigmoid(gate_proj(x)) scales each output feature
            self.gate_proj = linear(D, m.o_in, False, dtype)
        if m.o_norm:  # BitNet: an RMSNorm of the attention output before o_proj
            self.attn_sub_norm = RMSNorm(m.o_in, spec.norm_eps, dtype=dtype)
        if m.qk_norm_per_head:  # Cohere: LayerNorm over head_dim with a weight per head and feature
            self.q_norm = HeadLayerNorm(H, m.head_dim, spec.norm_eps, dtype=dtype)
            self.k_norm = HeadLayerNorm(K, m.head_dim, spec.norm_eps, dtype=dtype)
        elif m.qk_norm_bias:  # Phi's / Persimmon's qk_layernorm: a LayerNorm with bias over head_dim, shared by heads
            self.q_norm = LayerNorm(m.q_norm_dim, spec.norm_eps, bias=True, dtype=dtype)
            self.k_norm = LayerNorm(m.k_norm_dim, spec.norm_eps, bias=True, dtype=dtype)
        else:
            if m.q_norm_dim:
                self.q_norm = RMSNorm(m.q_norm_dim, spec.norm_eps, spec.norm_offset, dtype=dtype)
            if m.k_norm_dim and not m.kv_shared:
                self.k_norm = RMSNorm(m.k_norm_dim, spec.norm_eps, spec.norm_offset, dtype=dtype)
        if m.sinks:
            self.sinks = nn.Parameter(torch.empty(H, dtype=dtype))
        self.alibi = Alibi(H, num.alibi_bias_max) if m.alibi else None
        self.rotary = None
        if m.rotary_dim % 2:  # RoPE turns pairs of channels; an odd width has no torch (or transformers) form
            raise UnsupportedModelError(f"rotary dimension {m.rotary_dim} is odd (head_dim {m.head_dim}): RoPE rotates "
                                        "pairs of channels, so no decoder can run it",
                                        "analyze and trace still count it; verify needs an even rotary dimension")
        if m.rotary_dim:
            scaling = dict(spec.rope_scaling)
            if num.rope_plain_on_windows and m.window:
                scaling = dict(num.rope_window_scaling)  # Laguna: the sliding layers' own scaling (else none)
            scaling["_extra"] = num.rope_extra
            proportional = num.proportional_rope if not (m.window or m.chunk) else None
            self.rotary = Rotary(m.rotary_dim, m.rope_theta, scaling, num.rope_style, spec.max_position_embeddings,
                                 notes, proportional)
        if num.attention_multiplier is not None:
            self.scale = num.attention_multiplier
        elif spec.query_pre_attn_scalar:
            self.scale = spec.query_pre_attn_scalar ** -0.5
        else:
            self.scale = m.head_dim ** -0.5
        self.softcap = spec.attn_logit_softcapping
        self.eps = spec.norm_eps
        self.H, self.K, self.G, self.d, self.e = H, K, H // K, m.head_dim, m.v_head_dim

    def forward(self, x_BTD: torch.Tensor, pos_T: torch.Tensor, pos0: int, cache,
                shared: dict | None = None) -> torch.Tensor:
        """``shared``: this step's K/V (with key positions) of the last layer of each window size, for the
        Gemma 4 layers that read them (``kv_shared``); filled by the layers that own their K/V."""
        if self.m.kv_shared:
            return self.forward_shared(x_BTD, pos_T, shared)
        B, T, _ = x_BTD.shape
        m, H, K, d, e = self.m, self.H, self.K, self.d, self.e
        with region("matmul"):
            if m.fused_qkv:
                q, k, v = self.qkv_proj(x_BTD).split([m.q_dim, m.k_dim, m.v_dim], dim=-1)
            else:
                q, k = self.q_proj(x_BTD), self.k_proj(x_BTD)
                v = k if m.k_eq_v else self.v_proj(x_BTD)
        gate = None
        if self.gated:  # (B, T, H, 2d) -> q and the gate, each (B, T, H·d)
            q, gate = q.view(B, T, H, 2 * d).chunk(2, dim=-1)
            q, gate = q.reshape(B, T, H * d), gate.reshape(B, T, H * d)
        elif m.proj_gate:  # AFMoE: the gate from its own projection of the layer input
            with region("matmul"):
                gate = self.gate_proj(x_BTD)
        if self.num.clip_qkv is not None:  # DBRX: q, k and v clamped to [-clip, clip]
            with region("elementwise"):
                c = self.num.clip_qkv
                q, k, v = q.clamp(-c, c), k.clamp(-c, c), v.clamp(-c, c)
        if m.q_norm_dim and m.q_norm_dim != d and not m.qk_norm_per_head:  # OLMo 2: one norm over all heads' features
            q, k = self.q_norm(q), self.k_norm(k)
        q_BTHd, k_BTKd, v_BTKe = q.view(B, T, H, d), k.view(B, T, K, d), v.view(B, T, K, e)
        late_norm = bool(m.q_norm_dim) and self.num.qk_norm_after_rope  # Hunyuan: per-head q/k norms after RoPE
        if m.q_norm_dim and (m.q_norm_dim == d or m.qk_norm_per_head) and not late_norm:  # Qwen 3, Gemma 3, Cohere
            q_BTHd, k_BTKd = self.q_norm(q_BTHd), self.k_norm(k_BTKd)
        if m.v_norm:  # Gemma 4: a weightless RMSNorm of V over head_dim
            with region("norm"):
                v_BTKe = _rms(v_BTKe, self.eps)
        if self.num.value_scale != 1.0:  # MiMo-V2-Flash: V scaled (attention_value_scale) before it is cached
            with region("elementwise"):
                v_BTKe = v_BTKe * self.num.value_scale
        if self.rotary is not None:
            with region("rope"):
                cos_TR, sin_TR = self.rotary(pos_T, q_BTHd.dtype)
                q_BTHd = apply_rope(q_BTHd, cos_TR, sin_TR, self.rotary.style)
                k_BTKd = apply_rope(k_BTKd, cos_TR, sin_TR, self.rotary.style)
        if late_norm:
            q_BTHd, k_BTKd = self.q_norm(q_BTHd), self.k_norm(k_BTKd)
        if self.rotary is not None:
            if self.num.qk_l2_norm:  # Llama 4: weightless RMS norm after RoPE
                with region("norm"):
                    q_BTHd = _rms(q_BTHd, self.eps)
                    k_BTKd = _rms(k_BTKd, self.eps)
        if self.num.query_position_scale is not None:  # Ministral 3: 1 + beta·log(1 + floor(pos / original))
            with region("elementwise"):
                beta_, orig_ = self.num.query_position_scale
                s_T = 1 + beta_ * torch.log(1 + torch.floor(pos_T / orig_))
                q_BTHd = q_BTHd * s_T[:, None, None].to(q_BTHd.dtype)
        elif self.num.attn_temperature is not None and self.rotary is None:  # Llama 4 NoPE layers: by position
            with region("elementwise"):
                scale_, floor_ = self.num.attn_temperature
                t_T = torch.log1p(torch.floor((pos_T.float() + 1.0) / floor_)) * scale_ + 1.0
                q_BTHd = (q_BTHd * t_T[:, None, None]).to(q_BTHd.dtype)
        k_BKTd, v_BKTe = k_BTKd.transpose(1, 2), v_BTKe.transpose(1, 2)
        if cache is None:
            keys_BKSd, vals_BKSe, kpos_S = k_BKTd, v_BKTe, (pos_T if T > 1 else None)
        else:
            with region("kv_append"):
                keys_BKSd, vals_BKSe, kpos_S = cache.update(k_BKTd, v_BKTe, pos0)
        if shared is not None:
            shared[(m.window, m.chunk)] = (keys_BKSd, vals_BKSe, kpos_S)
        with region("attention"):
            mask_TS = None if kpos_S is None else _allowed_TS(pos_T, kpos_S, m.window, m.chunk)
            bias = None
            if self.alibi is not None:  # keys without positions are the first S positions (no ring without windows)
                S = keys_BKSd.shape[2]
                kp_S = kpos_S if kpos_S is not None else (pos_T if cache is None else torch.arange(S, device=pos_T.device))
                bias = self.alibi.slopes[:, None] * kp_S.float()[None, :]  # (H, S)
            out_BTHe = self.attend(q_BTHd, keys_BKSd, vals_BKSe, mask_TS, bias)
        if m.head_gate:
            with region("matmul"):
                g_BTH = self.g_proj(x_BTD)
            with region("elementwise"):
                # Laguna: softplus in fp32, cast back; per head, or per output feature (gate_per_element)
                g_BTH = F.softplus(g_BTH.float()).to(out_BTHe.dtype) if m.gate_softplus else torch.sigmoid(g_BTH)
                if m.gate_per_element:
                    out_BTHe = (out_BTHe.reshape(B, T, H * e) * g_BTH).view(B, T, H, e)
                else:
                    out_BTHe = out_BTHe.reshape(B, T, H, e) * g_BTH[..., None]
        out = out_BTHe.reshape(B, T, H * e)
        if gate is not None:
            with region("elementwise"):
                out = out * torch.sigmoid(gate)
        if m.o_norm:
            out = self.attn_sub_norm(out)
        with region("matmul"):
            return self.o_proj(out)

    def forward_shared(self, x_BTD: torch.Tensor, pos_T: torch.Tensor, shared: dict | None) -> torch.Tensor:
        """A Gemma 4 shared-KV layer: its own queries over the K/V the last layer of its window size
        computed in this step (that layer's cache and mask)."""
        B, T, _ = x_BTD.shape
        m, H, d, e = self.m, self.H, self.d, self.e
        src = None if shared is None else shared.get((m.window, m.chunk))
        if src is None:
            raise RuntimeUnavailableError("a shared-KV layer ran before any layer of its type computed K/V")
        with region("matmul"):
            q_BTHd = self.q_proj(x_BTD).view(B, T, H, d)
        if m.q_norm_dim:
            q_BTHd = self.q_norm(q_BTHd)
        if self.rotary is not None:
            with region("rope"):
                cos_TR, sin_TR = self.rotary(pos_T, q_BTHd.dtype)
                q_BTHd = apply_rope(q_BTHd, cos_TR, sin_TR, self.rotary.style)
        keys_BKSd, vals_BKSe, kpos_S = src
        with region("attention"):
            mask_TS = None if kpos_S is None else _allowed_TS(pos_T, kpos_S, m.window, m.chunk)
            out_BTHe = self.attend(q_BTHd, keys_BKSd, vals_BKSe, mask_TS)
        with region("matmul"):
            return self.o_proj(out_BTHe.reshape(B, T, H * e))

    def attend(self, q_BTHd, keys_BKSd, vals_BKSe, mask_TS, bias_HS=None):
        B, T = q_BTHd.shape[:2]
        K, G, d, e = self.K, self.G, self.d, self.e
        # (B, T, K, G, d) -> (B, K, G, T, d) -> (B, K, Q, d): the G heads of a KV head as G·T query rows
        q_BKQd = q_BTHd.view(B, T, K, G, d).permute(0, 2, 3, 1, 4).reshape(B, K, G * T, d)
        mask_QS = None if mask_TS is None else mask_TS.repeat(G, 1)
        if bias_HS is not None:  # ALiBi: an additive float mask, -inf where a key is not seen
            S = bias_HS.shape[-1]
            bias_KQS = bias_HS.view(K, G, 1, S).expand(K, G, T, S).reshape(K, G * T, S).to(q_BKQd.dtype)
            if mask_QS is not None:
                bias_KQS = bias_KQS.masked_fill(~mask_QS, float("-inf"))
            mask_QS = bias_KQS
        if self.softcap is None and not self.m.sinks:
            out_BKQe = F.scaled_dot_product_attention(q_BKQd, keys_BKSd, vals_BKSe, attn_mask=mask_QS, scale=self.scale)
        else:  # soft-capped logits (Gemma 2) or attention sinks (gpt-oss): written out
            s_BKQS = torch.matmul(q_BKQd, keys_BKSd.transpose(-1, -2)) * self.scale
            if self.softcap is not None:
                s_BKQS = torch.tanh(s_BKQS / self.softcap) * self.softcap
            if mask_QS is not None:
                s_BKQS = s_BKQS.masked_fill(~mask_QS, float("-inf"))
            if self.m.sinks:
                sink_BKQ1 = self.sinks.view(1, K, G, 1, 1).expand(B, K, G, T, 1).reshape(B, K, G * T, 1)
                s_BKQS = torch.cat((s_BKQS, sink_BKQ1.to(s_BKQS.dtype)), dim=-1)
                s_BKQS = s_BKQS - s_BKQS.max(dim=-1, keepdim=True).values
                p_BKQS = torch.softmax(s_BKQS.float(), dim=-1)[..., :-1].to(q_BKQd.dtype)
            else:
                p_BKQS = torch.softmax(s_BKQS.float(), dim=-1).to(q_BKQd.dtype)
            out_BKQe = torch.matmul(p_BKQS, vals_BKSe)
        # (B, K, G, T, e) -> (B, T, K, G, e) = (B, T, H, e), head h = k·G + g
        return out_BKQe.view(B, K, G, T, e).permute(0, 3, 1, 2, 4)


def _rounded(value: float, dtype) -> float:
    return float(torch.tensor(value, dtype=dtype, device="cpu"))


def _rms(x, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


class LatentAttention(MixerModule):
    """DeepSeek multi-head latent attention. The cache holds each token's normalised latent (L) and
    its roped key (P). Decode (T = 1, cached) is absorbed: ``q_nope·W_UK`` projects the queries into
    the latent space, scores run over L + P and values over L, then ``W_UV`` maps back to heads.
    Prefill is expanded: ``kv_b_proj`` turns every key's latent into per-head K and V."""

    @staticmethod
    def unsupported(m: MLA) -> str | None:
        if not m.rope:
            return "MLA without RoPE (Kimi Linear's NoPE latent attention)"
        if m.window or m.k_rope_norm:
            return "dots3-note's gated MLA (a sliding window over the latent cache, a normed rope key, g_proj)"
        if m.output_gate:
            return "MLA with a sigmoid output gate per feature (Kimi K3's g_proj)"
        return "MLA with a per-head output gate (Ling 3's g_proj)" if m.head_gate else None

    @staticmethod
    def check_tp(m: MLA, layer: int) -> None:
        return None  # heads split tp ways, the latent projections and cache whole (runtime.parallel)

    def __init__(self, m: MLA, spec: ModelSpec, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.m, self.num = m, num
        D, H = m.hidden_size, m.num_attention_heads
        if m.q_lora_rank is None:
            self.q_proj = linear(D, H * m.qk_head_dim, False, dtype)
        else:
            self.q_a_proj = linear(D, m.q_lora_rank, m.bias, dtype)
            self.q_a_layernorm = RMSNorm(m.q_lora_rank, num.mla_norm_eps, dtype=dtype)
            self.q_b_proj = linear(m.q_lora_rank, H * m.qk_head_dim, False, dtype)
        self.kv_a_proj_with_mqa = linear(D, m.kv_lora_rank + m.qk_rope_head_dim, m.bias, dtype)
        self.kv_a_layernorm = RMSNorm(m.kv_lora_rank, num.mla_norm_eps, dtype=dtype)
        self.kv_b_proj = linear(m.kv_lora_rank, H * (m.qk_nope_head_dim + m.v_head_dim), False, dtype)
        self.o_proj = linear(H * m.v_head_dim, D, m.bias, dtype)
        scaling = dict(spec.rope_scaling)
        scaling["_extra"] = num.rope_extra  # longrope's factors (MiniCPM3-4B)
        self.rotary = Rotary(m.qk_rope_head_dim, m.rope_theta, scaling, num.rope_style, spec.max_position_embeddings, notes)
        self.scale = m.qk_head_dim ** -0.5
        kind = scaling.get("rope_type") or scaling.get("type")
        if kind and kind != "default" and scaling.get("mscale_all_dim"):
            f = float(scaling["factor"])
            ms = 0.1 * float(scaling["mscale_all_dim"]) * math.log(f) + 1.0 if f > 1 else 1.0
            self.scale *= ms * ms

    def forward(self, x_BTD: torch.Tensor, pos_T: torch.Tensor, pos0: int, cache) -> torch.Tensor:
        m = self.m
        B, T, _ = x_BTD.shape
        H, L, P, n, e = m.num_attention_heads, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim
        with region("matmul"):
            if m.q_lora_rank is None:
                q = self.q_proj(x_BTD)
            else:
                q = self.q_a_proj(x_BTD)
        if m.q_lora_rank is not None:
            q = self.q_a_layernorm(q)
            with region("matmul"):
                q = self.q_b_proj(q)
        with region("matmul"):
            ckv_BTX = self.kv_a_proj_with_mqa(x_BTD)
        q_BTHn, q_BTHP = q.view(B, T, H, n + P).split([n, P], dim=-1)
        c_BTL, kpe_BTP = ckv_BTX.split([L, P], dim=-1)
        c_BTL = self.kv_a_layernorm(c_BTL)
        with region("rope"):
            cos_TR, sin_TR = self.rotary(pos_T, x_BTD.dtype)
            q_BTHP = apply_rope(q_BTHP, cos_TR, sin_TR, self.rotary.style)
            kpe_BTP = apply_rope(kpe_BTP[:, :, None, :], cos_TR, sin_TR, self.rotary.style)[:, :, 0, :]
        if self.num.query_position_scale is not None:  # Mistral 4: 1 + beta·log(1 + floor(pos / original))
            with region("elementwise"):
                beta_, orig_ = self.num.query_position_scale
                s_T11 = (1 + beta_ * torch.log(1 + torch.floor(pos_T / orig_)))[:, None, None]
                q_BTHn, q_BTHP = q_BTHn * s_T11.to(q_BTHn.dtype), q_BTHP * s_T11.to(q_BTHP.dtype)
        lat_BTX = torch.cat((c_BTL, kpe_BTP), dim=-1)  # what the cache stores: L + P per token
        if cache is None:
            lat_BSX, kpos_S = lat_BTX, (pos_T if T > 1 else None)
        else:
            with region("kv_append"):
                lat_BSX, kpos_S = cache.update(lat_BTX, pos0)
        if T == 1 and cache is not None:
            out_BTHe = self.absorbed(q_BTHn, q_BTHP, lat_BSX)
        else:
            out_BTHe = self.expanded(q_BTHn, q_BTHP, lat_BSX, pos_T, kpos_S)
        with region("matmul"):
            return self.o_proj(out_BTHe.reshape(B, T, H * e))

    def absorbed(self, q_BTHn, q_BTHP, lat_BSX):
        m = self.m
        H, L, n, e = m.num_attention_heads, m.kv_lora_rank, m.qk_nope_head_dim, m.v_head_dim
        B = q_BTHn.shape[0]
        w_HmL = self.kv_b_proj.weight.view(H, n + e, L)
        w_uk_HnL, w_uv_HeL = w_HmL[:, :n, :], w_HmL[:, n:, :]
        with region("matmul"):  # q_absorb: (H, B, n) @ (H, n, L) -> (H, B, L), 2·B·H·n·L FLOPs
            qlat_HBL = torch.bmm(q_BTHn[:, 0].transpose(0, 1), w_uk_HnL)
        qcat_BHX = torch.cat((qlat_HBL.transpose(0, 1), q_BTHP[:, 0]), dim=-1)  # (B, H, L + P)
        with region("attention"):
            s_BHS = torch.bmm(qcat_BHX, lat_BSX.transpose(1, 2)) * self.scale  # 2·B·H·(L+P)·S
            p_BHS = torch.softmax(s_BHS.float(), dim=-1).to(qcat_BHX.dtype)
            olat_BHL = torch.bmm(p_BHS, lat_BSX[..., :L])  # 2·B·H·S·L
        with region("matmul"):  # v_up: (H, B, L) @ (H, L, e) -> (H, B, e), 2·B·H·L·e FLOPs
            o_HBe = torch.bmm(olat_BHL.transpose(0, 1), w_uv_HeL.transpose(1, 2))
        return o_HBe.transpose(0, 1)[:, None]  # (B, 1, H, e)

    def expanded(self, q_BTHn, q_BTHP, lat_BSX, pos_T, kpos_S):
        m = self.m
        H, L, P, n, e = m.num_attention_heads, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim
        B, S = lat_BSX.shape[:2]
        T = q_BTHn.shape[1]
        with region("matmul"):  # every key's latent through kv_b_proj: 2·B·S·L·H·(n+e) FLOPs
            kv_BSHm = self.kv_b_proj(lat_BSX[..., :L]).view(B, S, H, n + e)
        k_BSHn, v_BSHe = kv_BSHm.split([n, e], dim=-1)
        kpe_BSHP = lat_BSX[..., L:][:, :, None, :].expand(B, S, H, P)
        with region("attention"):
            k_BHSd = torch.cat((k_BSHn, kpe_BSHP), dim=-1).transpose(1, 2)
            q_BHTd = torch.cat((q_BTHn, q_BTHP), dim=-1).transpose(1, 2)
            mask_TS = None if kpos_S is None else _allowed_TS(pos_T, kpos_S, None, None)
            out_BHTe = F.scaled_dot_product_attention(q_BHTd, k_BHSd, v_BSHe.transpose(1, 2), attn_mask=mask_TS,
                                                      scale=self.scale)
        return out_BHTe.transpose(1, 2)  # (B, T, H, e)


# ---- Gated DeltaNet (Qwen3-Next, Qwen3.5 linear-attention layers) ---------------------------------


class DeltaNetMixer(MixerModule):
    """Gated DeltaNet, recurrent form (transformers' ``torch_recurrent_gated_delta_rule``), exact for
    prefill and decode alike: projections to q, k, v (through a depthwise causal conv + SiLU), the output
    gate z, the write strength β = sigmoid(b) and the decay g = -exp(A_log)·softplus(a + dt_bias); per
    token and v-head with state S (dk × dv): S ← exp(g)·S; δ = β·(v - kᵀS); S ← S + k ⊗ δ; o = qᵀS
    (q, k L2-normalised, q scaled by dk^-½; k-heads shared by Hv/Hk v-heads); o is RMS-normalised over
    dv, times silu(z), then ``out_proj``. The three products are matmuls (6·dk·dv FLOPs per v-head and
    token, the trace's ``delta_rule``); the conv is ``F.conv1d`` over the kept ``kernel - 1`` inputs and
    the new ones (2·conv_dim·kernel per token). The state and the arithmetic of the rule are fp32.

    Extra suffixes: Hk / Hv k- and v-heads, dk / dv their widths, X conv channels (2·Hk·dk + Hv·dv),
    W conv kernel."""

    @staticmethod
    def unsupported(m: GatedDeltaNet) -> str | None:
        return "OLMo Hybrid's Gated DeltaNet (separate q/k/v/a/b/g projections, doubled beta)" if m.separate_proj \
            else None

    def __init__(self, m: GatedDeltaNet, spec: ModelSpec, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.m = m
        D = m.hidden_size
        for name, rows in m.in_projections():
            self.add_module(name, linear(D, rows, False, dtype))
        self.conv1d = nn.Conv1d(m.conv_dim, m.conv_dim, m.conv_kernel, groups=m.conv_dim, bias=False, dtype=dtype)
        self.dt_bias = nn.Parameter(torch.empty(m.num_v_heads, dtype=dtype))
        self.A_log = nn.Parameter(torch.empty(m.num_v_heads, dtype=dtype))
        self.norm = GatedRMSNorm(m.head_v_dim, spec.norm_eps, dtype=dtype)
        self.out_proj = linear(m.value_dim, D, False, dtype)
        self.act = activation(spec.hidden_act, notes)

    def project(self, x_BTD):
        """q·k·v (B, T, X) in the conv's channel order, z (B, T, Hv, dv), b and a (B, T, Hv)."""
        m = self.m
        B, T, _ = x_BTD.shape
        Hk, Hv, dk, dv = m.num_k_heads, m.num_v_heads, m.head_k_dim, m.head_v_dim
        with region("matmul"):
            if m.split_in_proj:  # Qwen3.5
                return (self.in_proj_qkv(x_BTD), self.in_proj_z(x_BTD).view(B, T, Hv, dv), self.in_proj_b(x_BTD),
                        self.in_proj_a(x_BTD))
            qkvz, ba = self.in_proj_qkvz(x_BTD), self.in_proj_ba(x_BTD)
        # Qwen3-Next: rows grouped per k-head: [q (dk) | k (dk) | v (G·dv) | z (G·dv)] and [b (G) | a (G)], G = Hv/Hk
        G = Hv // Hk
        q, k, v, z = qkvz.view(B, T, Hk, 2 * dk + 2 * G * dv).split([dk, dk, G * dv, G * dv], dim=-1)
        b, a = ba.view(B, T, Hk, 2 * G).split([G, G], dim=-1)
        qkv = torch.cat((q.reshape(B, T, -1), k.reshape(B, T, -1), v.reshape(B, T, -1)), dim=-1)
        return qkv, z.reshape(B, T, Hv, dv), b.reshape(B, T, Hv), a.reshape(B, T, Hv)

    def forward(self, x_BTD, pos_T, pos0: int, cache):
        m = self.m
        B, T, _ = x_BTD.shape
        Hk, Hv, dk, dv, W = m.num_k_heads, m.num_v_heads, m.head_k_dim, m.head_v_dim, m.conv_kernel
        qkv_BTX, z_BTHe, b_BTH, a_BTH = self.project(x_BTD)
        X = qkv_BTX.shape[-1]
        fresh = cache is None or pos0 == 0  # a prompt starts from a zero state
        if cache is not None:
            cache.check(pos0, T)
        with region("conv"):
            past_BXW = qkv_BTX.new_zeros(B, X, W - 1) if fresh else cache.conv_BXW
            seq_BXS = torch.cat((past_BXW, qkv_BTX.transpose(1, 2)), dim=-1)  # S = W - 1 + T
            y_BXT = self.act(F.conv1d(seq_BXS, self.conv1d.weight, None, groups=X))
            if cache is not None:
                cache.conv_BXW.copy_(seq_BXS[:, :, -(W - 1):])
        q, k, v = y_BXT.transpose(1, 2).split([Hk * dk, Hk * dk, Hv * dv], dim=-1)
        with region("scan"):
            G = Hv // Hk
            # (B, T, Hk, dk) -> (B, Hv, T, dk): each k-head serves G consecutive v-heads
            q_BHTd = _l2(q.reshape(B, T, Hk, dk).float()).repeat_interleave(G, dim=2).transpose(1, 2) * dk ** -0.5
            k_BHTd = _l2(k.reshape(B, T, Hk, dk).float()).repeat_interleave(G, dim=2).transpose(1, 2)
            v_BHTe = v.reshape(B, T, Hv, dv).float().transpose(1, 2)
            beta_BHT = torch.sigmoid(b_BTH).float().transpose(1, 2)
            g_BHT = (-self.A_log.float().exp() * F.softplus(a_BTH.float() + self.dt_bias)).transpose(1, 2)
            S_BHde = x_BTD.new_zeros(B, Hv, dk, dv, dtype=torch.float32) if fresh else cache.state_BHde.float()
            o_BHTe = torch.empty_like(v_BHTe)
            for t in range(T):
                S_BHde = S_BHde * g_BHT[:, :, t].exp()[..., None, None]
                k_BH1d = k_BHTd[:, :, t:t + 1]
                kS_BH1e = torch.matmul(k_BH1d, S_BHde)  # kᵀS: 2·dk·dv per v-head
                delta_BH1e = (v_BHTe[:, :, t:t + 1] - kS_BH1e) * beta_BHT[:, :, t, None, None]
                S_BHde = S_BHde + torch.matmul(k_BH1d.transpose(-1, -2), delta_BH1e)  # k ⊗ δ: 2·dk·dv
                o_BHTe[:, :, t:t + 1] = torch.matmul(q_BHTd[:, :, t:t + 1], S_BHde)  # qᵀS: 2·dk·dv
            if cache is not None:
                cache.state_BHde.copy_(S_BHde)
        o_BTHe = o_BHTe.transpose(1, 2).to(x_BTD.dtype)
        y = self.norm(o_BTHe, z_BTHe).reshape(B, T, Hv * dv)
        with region("matmul"):
            return self.out_proj(y)


def _l2(x, eps: float = 1e-6):
    """The FLA library's l2norm (transformers' ``l2norm``): x / sqrt(Σx² + eps)."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


class GatedRMSNorm(nn.Module):
    """RMSNorm over the last dim (fp32), scaled by its weight, times silu(gate) (Qwen3-Next's RMSNormGated)."""

    def __init__(self, dim: int, eps: float, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype))

    def forward(self, x, gate):
        with region("norm"):
            x32 = x.float()
            y = self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
            return (y * F.silu(gate.float())).to(x.dtype)


# ---- feed-forward --------------------------------------------------------------------------------


# ---- the mixer registry --------------------------------------------------------------------------


@dataclass(frozen=True)
class MixerRuntime:
    """How the runtime runs one mixer kind: its module and its per-layer cache (``runtime.cache``,
    built as ``cache(m, batch, capacity, dtype, device)`` for a layer that caches anything)."""

    title: str  # how the refusal of another kind lists this one
    module: type[MixerModule]
    cache: type


#: The one place the runtime tells mixer kinds apart: each ``MixerKind`` it runs, keyed by the spec's
#: ``kind`` (``Attention`` and ``GatedAttention`` share one). A kind absent here is refused by
#: ``check_supported``; analyze and trace still cover it (``analysis.mixers``).
MIXERS: dict[MixerKind, MixerRuntime] = {
    MixerKind.ATTENTION: MixerRuntime("attention", SelfAttention, AttentionKV),
    MixerKind.MLA: MixerRuntime("MLA", LatentAttention, LatentKV),
    MixerKind.GATED_DELTANET: MixerRuntime("Gated DeltaNet", DeltaNetMixer, DeltaNetState),
}


class FeedForward(nn.Module):
    """Gated (SwiGLU/GeGLU: ``down(act(gate)·up)``) or plain (``down(act(up))``) MLP."""

    def __init__(self, m: MLP, notes: list[str], dtype, eps: float = 1e-6):
        super().__init__()
        self.m = m
        D, I = m.hidden_size, m.intermediate_size
        if m.gated and m.fused_gate_up:
            self.gate_up_proj = linear(D, 2 * I, m.bias, dtype)
        else:
            if m.gated:
                self.gate_proj = linear(D, I, m.bias, dtype)
            self.up_proj = linear(D, I, m.bias, dtype)
        self.down_proj = linear(I, D, m.bias or m.down_bias, dtype)
        if m.inner_norm:  # BitNet: ffn_sub_norm before down_proj
            self.ffn_sub_norm = RMSNorm(I, eps, dtype=dtype)
        parametric = PARAMETRIC_ACTIVATIONS.get(str(m.act).lower())
        if parametric is not None:  # its learned parameters are the spec's <mlp>.act_fn tensors
            self.act_fn = parametric(dtype=dtype)
            self.act = self.act_fn.forward  # (a bound method: the module is registered once, as act_fn)
        else:
            self.act = activation(m.act, notes)

    def forward(self, x):
        m = self.m
        with region("matmul"):
            if m.gated and m.fused_gate_up:
                g, u = self.gate_up_proj(x).chunk(2, dim=-1)
            elif m.gated:
                g, u = self.gate_proj(x), self.up_proj(x)
            else:
                u = self.up_proj(x)
        with region("elementwise"):
            h = self.act(g) * u if m.gated else self.act(u)
        if m.inner_norm:  # BitNet
            h = self.ffn_sub_norm(h)
        with region("matmul"):
            return self.down_proj(h)


class Router(nn.Module):
    def __init__(self, m: MoE, num: Numerics, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(m.num_experts, m.hidden_size, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(m.num_experts, dtype=dtype)) if m.router_bias else None
        if m.router_scales:  # Gemma 4: a learned input scale and a per-expert output scale
            self.scale = nn.Parameter(torch.empty(m.hidden_size, dtype=dtype))
            self.per_expert_scale = nn.Parameter(torch.empty(m.num_experts, dtype=dtype))
        if m.correction_bias_param:  # ERNIE 4.5 MoE: a (1, E) parameter that never trains (as in transformers)
            self.e_score_correction_bias = nn.Parameter(torch.empty(1, m.num_experts, dtype=torch.float32),
                                                        requires_grad=False)
        elif num.score_correction_bias:  # a buffer, not a parameter (as in transformers)
            self.register_buffer("e_score_correction_bias", torch.empty(m.num_experts, dtype=torch.float32))


class Experts(nn.Module):
    """Routed experts stacked: ``gate_up_proj`` (E, 2I, D) with the gate rows first, ``down_proj`` (E, D, I).

    Only the routed (token, expert) pairs are multiplied: pairs are sorted by expert, then either one
    grouped GEMM per projection (``torch._grouped_mm``; no host sync, CUDA-graph friendly) or a loop
    over the experts that received tokens (``loop``; what FlopCounterMode counts natively)."""

    def __init__(self, m: MoE, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.m, self.num = m, num
        E, D, I = m.num_experts, m.hidden_size, m.moe_intermediate_size
        up_rows = 2 * I if m.gated else I
        self.gate_up_proj = nn.Parameter(torch.empty(E, up_rows, D, dtype=dtype))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(E, up_rows, dtype=dtype)) if m.expert_bias else None
        self.down_proj = nn.Parameter(torch.empty(E, D, I, dtype=dtype))
        self.down_proj_bias = nn.Parameter(torch.empty(E, D, dtype=dtype)) if m.expert_bias else None
        self.act = activation(m.act, notes)
        self.impl = "loop"

    def glu(self, h_AX: torch.Tensor) -> torch.Tensor:
        if not self.m.gated:
            return self.act(h_AX)
        g, u = h_AX.chunk(2, dim=-1)
        if self.num.glu == GLU.GPT_OSS:
            lim = self.num.swiglu_limit
            g = g.clamp(max=lim)
            u = u.clamp(min=-lim, max=lim)
            return (u + 1) * (g * torch.sigmoid(g * self.num.swiglu_alpha))
        return self.act(g) * u

    def forward(self, x_ND: torch.Tensor, idx_Nk: torch.Tensor, w_Nk: torch.Tensor) -> torch.Tensor:
        N, k = idx_Nk.shape
        E = self.m.num_experts
        e_A = idx_Nk.reshape(-1)
        order_A = torch.argsort(e_A, stable=True)
        tok_A = torch.div(order_A, k, rounding_mode="floor")
        esort_A = e_A[order_A]
        w_A = w_Nk.reshape(-1)[order_A].to(x_ND.dtype)
        x_AD = x_ND[tok_A]
        if self.num.scale_expert_input:  # Llama 4 scales the expert's input, not its output
            x_AD = x_AD * w_A[:, None]
        if self.impl == "grouped":
            counts_E = torch.zeros(E, dtype=torch.int32, device=x_ND.device).index_add_(
                0, e_A, torch.ones_like(e_A, dtype=torch.int32))
            offs_E = torch.cumsum(counts_E, 0, dtype=torch.int32)
            h_AX = torch._grouped_mm(x_AD, self.gate_up_proj.transpose(1, 2), offs=offs_E)
            if self.gate_up_proj_bias is not None:
                h_AX = h_AX + self.gate_up_proj_bias[esort_A]
            y_AD = torch._grouped_mm(self.glu(h_AX), self.down_proj.transpose(1, 2), offs=offs_E)
            if self.down_proj_bias is not None:
                y_AD = y_AD + self.down_proj_bias[esort_A]
        else:
            counts = torch.bincount(e_A, minlength=E).tolist()  # a host sync: eager only
            y_AD = torch.empty_like(x_AD)
            start = 0
            for ex, cnt in enumerate(counts):
                if not cnt:
                    continue
                rows = slice(start, start + cnt)
                b1 = None if self.gate_up_proj_bias is None else self.gate_up_proj_bias[ex]
                b2 = None if self.down_proj_bias is None else self.down_proj_bias[ex]
                h = self.glu(F.linear(x_AD[rows], self.gate_up_proj[ex], b1))
                y_AD[rows] = F.linear(h, self.down_proj[ex], b2)
                start += cnt
        if not self.num.scale_expert_input:
            y_AD = y_AD * w_A[:, None]
        return torch.zeros_like(x_ND).index_add_(0, tok_A, y_AD)


def sparsemixer_top2(s_NE: torch.Tensor, jitter_eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """PhiMoE's SparseMixer at inference (transformers' ``sparsemixer``, not training): the best expert,
    weighted by a softmax over the logits within a relative band ``2·jitter_eps`` of it, then the best of
    the rest, weighted the same way over the rest. Computed in the logits' dtype, as there."""
    out_w, out_i = [], []
    s = s_NE
    for _ in range(2):
        best_N1, idx_N1 = s.max(dim=-1, keepdim=True)
        factor_NE = s_NE.abs().clamp(min=best_N1)
        far_NE = (best_N1 - s_NE) / factor_NE > 2 * jitter_eps
        w_NE = torch.softmax(s.masked_fill(far_NE, float("-inf")), dim=-1)
        out_w.append(w_NE.gather(-1, idx_N1))
        out_i.append(idx_N1)
        s = s.scatter(-1, idx_N1, float("-inf"))  # the chosen expert leaves the second round
    return torch.cat(out_w, dim=-1), torch.cat(out_i, dim=-1)


class SparseMoE(nn.Module):
    """Router, routed experts, optional shared expert(s) (with Qwen's sigmoid gate)."""

    def __init__(self, m: MoE, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.m, self.num = m, num
        self.router = Router(m, num, dtype)
        self.experts = Experts(m, num, notes, dtype)
        shared = m.shared_mlp()
        if shared is not None:
            self.shared_expert = FeedForward(shared, notes, dtype)
            if m.shared_expert_gate:
                self.shared_expert_gate = linear(m.hidden_size, 1, False, dtype)
        vision = m.vision_moe()
        if vision is not None:  # ERNIE-4.5-VL: held (loaded, counted) but never run: a text token uses the text experts
            self.vision_router = Router(vision, num, dtype)
            self.vision_experts = Experts(vision, num, notes, dtype)

    def route(self, logits_NE: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(weights, expert indices), each (N, k), as the family's router computes them."""
        num, k, E = self.num, self.m.num_experts_per_tok, self.m.num_experts
        if num.router_logit_softcapping:  # Laguna: the logits soft-capped (fp32) before the scores
            c = num.router_logit_softcapping
            logits_NE = torch.tanh(logits_NE.float() / c) * c
        if num.router == RouterKind.SPARSEMIXER:  # PhiMoE
            return sparsemixer_top2(logits_NE, num.router_jitter_noise)
        if num.router in (RouterKind.TOPK_SOFTMAX, RouterKind.TOPK_SIGMOID):  # gpt-oss, Llama 4: top-k of the logits first
            v_Nk, idx_Nk = torch.topk(logits_NE, k, dim=-1)
            w_Nk = torch.softmax(v_Nk, dim=-1) if num.router == RouterKind.TOPK_SOFTMAX else torch.sigmoid(v_Nk.float())
            return w_Nk, idx_Nk
        if num.router == RouterKind.LOGIT_SIGMOID:  # Kolibri-1, Flint: the choice by logits (+ bias), sigmoid weights
            l_NE = logits_NE.float()
            choice_NE = l_NE + self.router.e_score_correction_bias if num.score_correction_bias else l_NE
            idx_Nk = torch.topk(choice_NE, k, dim=-1)[1]
            w_Nk = torch.sigmoid(l_NE.gather(1, idx_Nk))
            if num.norm_topk_prob:
                w_Nk = w_Nk / w_Nk.sum(dim=-1, keepdim=True)
            return w_Nk * num.routed_scaling_factor, idx_Nk
        if num.router == RouterKind.SIGMOID:  # DeepSeek V3: sigmoid scores, bias only for the choice
            s_NE = torch.sigmoid(logits_NE.float())
            # openPangu-Ultra-MoE without router_enable_expert_bias: the scores alone choose
            choice_NE = s_NE + self.router.e_score_correction_bias if num.score_correction_bias else s_NE
        else:
            s_NE = torch.softmax(logits_NE.float(), dim=-1)
            choice_NE = s_NE
            if num.score_correction_bias:  # ERNIE 4.5 MoE: the bias steers the choice, the weights are the scores
                choice_NE = s_NE + self.router.e_score_correction_bias.reshape(-1)
        if num.n_group > 1 and num.group_score != GroupScore.NONE:
            N = s_NE.shape[0]
            grouped = choice_NE.view(N, num.n_group, E // num.n_group)
            g_NG = grouped.max(dim=-1).values if num.group_score == GroupScore.MAX else grouped.topk(2, dim=-1)[0].sum(dim=-1)
            gidx = torch.topk(g_NG, num.topk_group, dim=-1, sorted=False)[1]
            gmask_NG = torch.zeros_like(g_NG).scatter_(1, gidx, 1.0)
            keep_NE = gmask_NG[:, :, None].expand(N, num.n_group, E // num.n_group).reshape(N, E).bool()
            choice_NE = choice_NE.masked_fill(~keep_NE, float("-inf") if num.router == RouterKind.SIGMOID else 0.0)
        if num.router == RouterKind.SIGMOID:
            idx_Nk = torch.topk(choice_NE, k, dim=-1, sorted=False)[1]
            w_Nk = s_NE.gather(1, idx_Nk)
            if num.norm_topk_prob:
                w_Nk = w_Nk / (w_Nk.sum(dim=-1, keepdim=True) + 1e-20)
        else:
            w_Nk, idx_Nk = torch.topk(choice_NE, k, dim=-1)
            if num.score_correction_bias:
                w_Nk = s_NE.gather(1, idx_Nk)
            if num.norm_topk_prob and num.topk_norm_p != 1.0:  # DBRX: divided by the weights' p-norm
                w_Nk = w_Nk / torch.linalg.vector_norm(w_Nk, ord=num.topk_norm_p, dim=-1, keepdim=True)
            elif num.norm_topk_prob:
                w_Nk = w_Nk / w_Nk.sum(dim=-1, keepdim=True)
        return w_Nk * num.routed_scaling_factor, idx_Nk

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        B, T, D = x_BTD.shape
        x_ND = x_BTD.reshape(B * T, D)
        with region("router"):  # 2·N·D·E FLOPs
            logits_NE = F.linear(x_ND, self.router.weight, self.router.bias)
            w_Nk, idx_Nk = self.route(logits_NE)
        with region("experts"):  # 2·N·k·(3·D·I) FLOPs (gated)
            y_ND = self.experts(x_ND, idx_Nk, w_Nk)
        if self.m.shared_intermediate_size:
            s_ND = self.shared_expert(x_ND)
            if self.m.shared_expert_gate:
                with region("matmul"):
                    gate_N1 = self.shared_expert_gate(x_ND)
                s_ND = torch.sigmoid(gate_N1) * s_ND
            y_ND = (y_ND + s_ND) / 2 if self.m.shared_average else y_ND + s_ND  # Cohere 2 MoE: "average"
        return y_ND.view(B, T, D)

    def forward_beside(self, x_BTD: torch.Tensor, block: "Block") -> torch.Tensor:
        """Gemma 4: the dense MLP (our ``shared_expert``) on the pre-FFN-normed input and the routed experts
        on their own normed input, each post-normed, summed. The router reads the residual itself:
        weightless RMSNorm, times ``scale`` and hidden^-1/2; softmax, top-k renormalised, times
        ``per_expert_scale`` of each chosen expert."""
        B, T, D = x_BTD.shape
        dense = block.normed("post_ffn_shared", self.shared_expert(block.normed("pre_ffn", x_BTD)))
        x_ND = x_BTD.reshape(B * T, D)
        r = self.router
        with region("router"):
            h_ND = _rms(x_ND, block.eps) * r.scale * _rounded(D ** -0.5, x_ND.dtype)
            logits_NE = F.linear(h_ND, r.weight)
            w_Nk, idx_Nk = self.route(logits_NE)
            w_Nk = w_Nk * r.per_expert_scale[idx_Nk]
        with region("experts"):
            y_ND = self.experts(block.normed("pre_experts", x_ND), idx_Nk, w_Nk)
        return dense + block.normed("post_experts", y_ND.view(B, T, D))


# ---- the block and the model ---------------------------------------------------------------------


class Block(nn.Module):
    """One decoder layer; norms are registered under their config names (``input_layernorm``,
    ``ln_attn``, ``post_feedforward_layernorm`` ...) and applied by role."""

    def __init__(self, layer: Layer, spec: ModelSpec, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.layer, self.num = layer, num
        self.roles: dict[str, str] = {}
        for p in layer.norms:
            self.add_module(p.name, make_norm(p.norm, spec, dtype))
            self.roles[p.role] = p.name
        m = layer.mixer
        if m is not None:  # the mixer kind's module (MIXERS), under the spec's tensor names
            self.mixer_name = m.module
            self.add_module(m.module, MIXERS[m.kind].module(m, spec, num, notes, dtype))
        if isinstance(layer.ffn, MoE):
            self.mlp = SparseMoE(layer.ffn, num, notes, dtype)
        elif isinstance(layer.ffn, MLP):
            self.mlp = FeedForward(layer.ffn, notes, dtype, spec.norm_eps)
        self.eps = spec.norm_eps
        if layer.per_layer_input:  # Gemma 4 per-layer inputs
            D, W = spec.hidden_size, layer.per_layer_input
            self.per_layer_input_gate = linear(D, W, False, dtype)
            self.per_layer_projection = linear(W, D, False, dtype)
            self.act = activation(spec.hidden_act, notes)
        if num.layer_scalar:  # Gemma 4: a per-layer output scale, a buffer in the checkpoint
            self.register_buffer("layer_scalar", torch.empty(1, dtype=dtype))

    def normed(self, role: str, x):
        name = self.roles.get(role)
        return x if name is None else getattr(self, name)(x)

    def forward(self, x_BTD, pos_T, pos0: int, cache, shared: dict | None = None, ple_BTW=None):
        if self.num.layer_scalar:  # Gemma 4: sandwich norms, the MoE beside the MLP, per-layer inputs, scalar
            return self.forward_gemma4(x_BTD, pos_T, pos0, cache, shared, ple_BTW)
        r = self.num.residual_multiplier
        if self.layer.parallel:  # GPT-NeoX, Falcon: mixer and FFN read the same input
            h = self.normed("pre_mixer", x_BTD)
            a = self.normed("post_mixer", getattr(self, self.mixer_name)(h, pos_T, pos0, cache))
            f = self.normed("post_ffn", self.mlp(self.normed("pre_ffn", x_BTD) if "pre_ffn" in self.roles else h))
            with region("elementwise"):
                return x_BTD + a + f
        if self.layer.mixer is not None:
            mix = getattr(self, self.mixer_name)
            a = self.normed("post_mixer", mix(self.normed("pre_mixer", x_BTD), pos_T, pos0, cache))
            with region("elementwise"):
                x_BTD = x_BTD + a * r if r != 1.0 else x_BTD + a
            x_BTD = self.normed("post_mixer_residual", x_BTD)  # post-LN (OPT-350m): the sum is normalised
        if self.layer.ffn is not None:
            f = self.normed("post_ffn", self.mlp(self.normed("pre_ffn", x_BTD)))
            with region("elementwise"):
                x_BTD = x_BTD + f * r if r != 1.0 else x_BTD + f
            x_BTD = self.normed("post_ffn_residual", x_BTD)
        return x_BTD

    def forward_gemma4(self, x_BTD, pos_T, pos0: int, cache, shared, ple_BTW):
        a = self.normed("post_mixer", self.self_attn(self.normed("pre_mixer", x_BTD), pos_T, pos0, cache, shared))
        with region("elementwise"):
            x_BTD = x_BTD + a
        if isinstance(self.layer.ffn, MoE):
            f = self.mlp.forward_beside(x_BTD, self)
        else:
            f = self.mlp(self.normed("pre_ffn", x_BTD))
        with region("elementwise"):
            x_BTD = x_BTD + self.normed("post_ffn", f)
        if self.layer.per_layer_input:
            with region("matmul"):
                g_BTW = self.per_layer_input_gate(x_BTD)
            with region("elementwise"):
                g_BTW = self.act(g_BTW) * ple_BTW
            with region("matmul"):
                p_BTD = self.per_layer_projection(g_BTW)
            with region("elementwise"):
                x_BTD = x_BTD + self.normed("post_per_layer_input", p_BTD)
        with region("elementwise"):
            return x_BTD * self.layer_scalar


class Body(nn.Module):
    """``model.*``: embeddings, layers and the final norm (Hugging Face's module names)."""

    def __init__(self, spec: ModelSpec, num: Numerics, notes: list[str], dtype):
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.embedding_rows or spec.vocab_size, spec.embed_dim, dtype=dtype)
        if spec.word_embed_proj_dim:  # OPT: the embedding is narrower than the residual stream
            self.project_in = linear(spec.embed_dim, spec.hidden_size, False, dtype)
            self.project_out = linear(spec.hidden_size, spec.embed_dim, False, dtype)
        if spec.position_embeddings:
            self.embed_positions = nn.Embedding(spec.position_embeddings, spec.hidden_size, dtype=dtype)
        if num.sinusoidal_positions:  # CTRL: a fixed table, added like learned positions
            self.embed_sinusoids = Sinusoids(spec.hidden_size, num.sinusoid_fairseq, num.position_offset,
                                             num.sinusoid_padding_row)
        if spec.embedding_norm is not None:
            self.embed_layernorm = make_norm(spec.embedding_norm, spec, dtype)
        if spec.alibi_slopes:  # Jais: ALiBi's slopes kept as a parameter (loaded, never read: Alibi computes them)
            self.relative_pe = AlibiSlopes(spec.alibi_slopes, dtype)
        if spec.per_layer_input_size:  # Gemma 4 per-layer inputs: a second token table and a projection
            LW = spec.num_layers * spec.per_layer_input_size
            self.embed_tokens_per_layer = nn.Embedding(spec.per_layer_vocab_size, LW, dtype=dtype)
            self.per_layer_model_projection = linear(spec.hidden_size, LW, False, dtype)
            self.per_layer_projection_norm = RMSNorm(spec.per_layer_input_size, spec.norm_eps, dtype=dtype)
        self.layers = nn.ModuleList(Block(layer, spec, num, notes, dtype) for layer in spec.layers)
        if spec.final_norm is not None:
            self.norm = make_norm(spec.final_norm, spec, dtype)


class Decoder(nn.Module):
    """The decoder of ``spec``. ``forward(tokens_BT, pos0, cache)`` runs T new tokens per sequence at
    positions ``pos0 .. pos0+T-1`` (all sequences at the same positions) and returns the logits of
    the last position (B, V), or of every position with ``all_logits=True`` (tests only)."""

    def __init__(self, spec: ModelSpec, dtype=torch.float32):
        super().__init__()
        check_supported(spec)
        self.spec = spec
        self.num = spec.numerics
        self.notes: list[str] = []
        self.model = Body(spec, self.num, self.notes, dtype)
        if not spec.tie_word_embeddings:
            self.lm_head = linear(spec.embed_dim, spec.vocab_size, spec.lm_head_bias, dtype)
        elif spec.lm_head_bias:  # CTRL: the tied head's bias of its own
            self.lm_head = HeadBias(spec.vocab_size, dtype)
        if spec.head_transform:  # ModernBERT decoder: lm_head.dense and lm_head.norm before the (tied) head
            if not hasattr(self, "lm_head"):
                self.lm_head = nn.Module()
            names = {t.name for t in spec.head_transform}
            self.lm_head.dense = linear(spec.hidden_size, spec.hidden_size, "lm_head.dense.bias" in names, dtype)
            self.lm_head.norm = LayerNorm(spec.hidden_size, spec.norm_eps, bias="lm_head.norm.bias" in names,
                                          affine=True, dtype=dtype, offset=0.0)
        self.embedding_multiplier = float(spec.embedding_multiplier)

    # -- setup ---------------------------------------------------------------------------------------

    def reset_buffers(self) -> None:
        """(Re)compute the non-parameter buffers: RoPE frequencies, router score biases (zero)."""
        for mod in self.modules():
            if isinstance(mod, (Rotary, Alibi, Sinusoids)):
                mod.reset_buffers()
            if isinstance(mod, Router) and hasattr(mod, "e_score_correction_bias"):
                mod.e_score_correction_bias.zero_()
            if isinstance(mod, Block) and hasattr(mod, "layer_scalar"):
                mod.layer_scalar.fill_(1.0)
            if isinstance(mod, XIELU):
                mod.reset_buffers()
        self.notes[:] = list(dict.fromkeys(self.notes))

    def set_moe_impl(self, impl: str) -> None:
        """``grouped`` (torch._grouped_mm) or ``loop`` for every MoE layer."""
        for mod in self.modules():
            if isinstance(mod, Experts):
                mod.impl = impl

    # -- forward -------------------------------------------------------------------------------------

    def head_weight(self) -> torch.Tensor:
        return self.model.embed_tokens.weight if self.spec.tie_word_embeddings else self.lm_head.weight

    def forward(self, tokens_BT: torch.Tensor, pos0: int = 0, cache=None, all_logits: bool = False) -> torch.Tensor:
        B, T = tokens_BT.shape
        pos_T = torch.arange(pos0, pos0 + T, device=tokens_BT.device)
        x_BTD = self.embed(tokens_BT, pos_T)
        ple_BTLW = self.per_layer_inputs(tokens_BT, x_BTD) if self.spec.per_layer_input_size else None
        shared: dict | None = {} if any(getattr(b.layer.mixer, "kv_shared", False) for b in self.model.layers) else None
        for i, block in enumerate(self.model.layers):
            layer_cache = None if cache is None else cache.layers[i]
            if ple_BTLW is None and shared is None:
                x_BTD = block(x_BTD, pos_T, pos0, layer_cache)
            else:  # Gemma 4: K/V shared across layers, per-layer inputs
                x_BTD = block(x_BTD, pos_T, pos0, layer_cache, shared, None if ple_BTLW is None else ple_BTLW[:, :, i])
        h = x_BTD if all_logits else x_BTD[:, -1:]  # logits for the last position only (serving engines)
        logits = self.head(h)
        return logits if all_logits else logits[:, 0]

    def embed(self, tokens_BT: torch.Tensor, pos_T: torch.Tensor) -> torch.Tensor:
        """Token (and learned position) embeddings, scaled and normed as the family does: (B, T, D).
        A pipeline's first stage runs this alone (``runtime.pipeline``)."""
        with region("embedding"):
            x_BTD = self.model.embed_tokens(tokens_BT)
            if self.embedding_multiplier != 1.0 and not self.num.embedding_scale_after_positions:
                x_BTD = x_BTD * _rounded(self.embedding_multiplier, x_BTD.dtype)  # rounded as transformers does
        if self.spec.word_embed_proj_dim:
            with region("matmul"):
                x_BTD = self.model.project_in(x_BTD)
        if self.spec.position_embeddings:
            with region("embedding"):  # OPT looks position p up at row p + 2
                x_BTD = x_BTD + self.model.embed_positions(pos_T + self.num.position_offset)[None]
            if self.num.embedding_scale_after_positions:  # Jais: the sum of both embeddings is scaled
                x_BTD = x_BTD * _rounded(self.embedding_multiplier, x_BTD.dtype)
        if self.num.sinusoidal_positions:
            x_BTD = x_BTD + self.model.embed_sinusoids(pos_T).to(x_BTD.dtype)[None]
        if self.spec.embedding_norm is not None:
            x_BTD = self.model.embed_layernorm(x_BTD)
        return x_BTD

    def head(self, h_BTD: torch.Tensor) -> torch.Tensor:
        """The final norm, the LM head and the family's logit scaling: (B, T, V). A pipeline's last
        stage runs this after its layers."""
        if self.spec.final_norm is not None:
            h_BTD = self.model.norm(h_BTD)
        with region("matmul"):
            if self.spec.word_embed_proj_dim:  # OPT: back to the embedding width
                h_BTD = self.model.project_out(h_BTD)
            if self.spec.head_transform:  # ModernBERT decoder's prediction head: dense, activation, LayerNorm
                h_BTD = self.lm_head.norm(ACTIVATIONS[self.num.head_act](self.lm_head.dense(h_BTD)))
            bias = getattr(self.lm_head, "bias", None) if hasattr(self, "lm_head") else None  # CTRL: tied, biased
            logits = F.linear(h_BTD, self.head_weight(), bias)
        if self.spec.final_logit_softcapping:
            c = self.spec.final_logit_softcapping
            logits = torch.tanh(logits / c) * c
        if self.num.logits_scaling != 1.0:
            logits = logits / self.num.logits_scaling
        if self.num.logit_scale != 1.0:
            logits = logits * self.num.logit_scale
        return logits

    def per_layer_inputs(self, tokens_BT: torch.Tensor, x_BTD: torch.Tensor) -> torch.Tensor:
        """Gemma 4: (the token's per-layer embedding × sqrt(width) + the normed projection of its scaled
        embedding × hidden^-1/2) / sqrt(2), one slice of width W per layer: (B, T, L, W)."""
        B, T, D = x_BTD.shape
        L, W = self.spec.num_layers, self.spec.per_layer_input_size
        body = self.model
        with region("embedding"):
            tok_BTLW = body.embed_tokens_per_layer(tokens_BT) * _rounded(W ** 0.5, x_BTD.dtype)
        with region("matmul"):
            proj_BTLW = body.per_layer_model_projection(x_BTD) * (D ** -0.5)
        proj_BTLW = body.per_layer_projection_norm(proj_BTLW.view(B, T, L, W))
        with region("elementwise"):
            return (proj_BTLW + tok_BTLW.view(B, T, L, W)) * (2.0 ** -0.5)

    def decode(self, tokens_B1: torch.Tensor, pos: int, cache) -> torch.Tensor:
        """One decode step at position ``pos``: the greedy next token of every sequence (B,)."""
        logits_BV = self(tokens_B1, pos, cache)  # through __call__: forward hooks (tensor parallelism) apply
        with region("sampling"):
            return logits_BV.argmax(dim=-1)


# ---- building ------------------------------------------------------------------------------------


def unique_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    seen, out = set(), []
    for name, p in model.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


def parameter_count(model: nn.Module) -> int:
    """Parameters taken from the model itself (each tensor once)."""
    return sum(p.numel() for _, p in unique_parameters(model))


@torch.no_grad()
def init_random_(model: Decoder, seed: int = 0, std: float = 0.02) -> None:
    """Seeded random weights, generated on the model's device in its dtype: norms at their identity
    (1, or 0 under Gemma's ``1 + weight``), everything else ``N(0, std)``."""
    device = next(model.parameters()).device
    if device.type == "meta":  # shapes only (structure checks of large models)
        return
    g = torch.Generator(device=device).manual_seed(seed)
    for name, p in unique_parameters(model):
        mod_name = name.rsplit(".", 1)[0]
        mod = model.get_submodule(mod_name) if mod_name else model
        if isinstance(mod, Router) and name.endswith("scale"):  # Gemma 4's router scales: 1 (transformers' init)
            p.fill_(1.0)
        elif isinstance(mod, Router) and name.endswith("e_score_correction_bias"):  # ERNIE 4.5 MoE: 0 at init
            p.zero_()
        elif isinstance(mod, (RMSNorm, LayerNorm, HeadLayerNorm, GatedRMSNorm)):
            if name.endswith(".bias"):
                p.zero_()
            else:
                p.fill_(1.0 - getattr(mod, "offset", 0.0))
        else:
            p.normal_(0.0, std, generator=g)


def build_decoder(spec: ModelSpec, *, dtype=torch.float32, device="cpu",
                  seed: int | None = 0, moe_impl: str | None = None) -> Decoder:
    """Build on the meta device, allocate on ``device`` in ``dtype`` (no CPU copy of a GPU model),
    then fill seeded random weights (``seed=None`` leaves them uninitialised, e.g. before loading)."""
    device = torch.device(device)
    with torch.device("meta"):
        model = Decoder(spec, dtype)
    model = model.to_empty(device=device)
    model.reset_buffers()
    if seed is not None:
        init_random_(model, seed)
    model.eval().requires_grad_(False)
    if any(isinstance(layer.ffn, MoE) for layer in spec.layers):
        model.set_moe_impl(moe_impl or default_moe_impl(device, dtype))
    return model


def grouped_mm_works(device, dtype) -> bool:
    """Whether ``torch._grouped_mm`` runs on ``device`` in ``dtype`` (it needs a recent GPU on CUDA)."""
    if not hasattr(torch, "_grouped_mm"):
        return False
    try:
        a = torch.zeros(32, 16, device=device, dtype=dtype)
        b = torch.zeros(2, 32, 16, device=device, dtype=dtype).transpose(1, 2)
        torch._grouped_mm(a, b, offs=torch.tensor([16, 32], device=device, dtype=torch.int32))
        return True
    except (RuntimeError, NotImplementedError, TypeError):
        return False


def default_moe_impl(device, dtype=torch.bfloat16) -> str:
    """Grouped GEMMs on CUDA (no host sync, so CUDA graphs can capture them), the expert loop elsewhere
    or where ``_grouped_mm`` does not run."""
    device = torch.device(device)
    if device.type == "cuda" and grouped_mm_works(device, dtype):
        return "grouped"
    return "loop"
