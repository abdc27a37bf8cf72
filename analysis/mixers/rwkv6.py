"""The RWKV-6 "Finch" block (model_type ``rwkv6``, the RWKV hub repos' remote code: RWKV/v6-Finch-1B6-HF ... 14B;
not in transformers): a time-mix with a matrix-valued WKV state per head and a data-dependent token shift and
decay (low-rank projections), and RWKV-4's channel-mix, both fed by a one-token time shift (the protocol:
``analysis.mixers.base``; the trace conventions of recurrent mixers: ``analysis.trace``, "recurrent mixers").

One mixer holds the whole block, as RWKV-4's (``analysis.mixers.rwkv``). The shapes, from the remote
``modeling_rwkv6.py`` (``Rwkv6SelfAttention``, ``Rwkv6FeedForward``), h = hidden_size, a = attention_hidden_size
(= h), S = head_size, H = a / S, m = the mix LoRA rank (32; 64 when h is 4096), d = the decay LoRA rank (64; 128
when h is 4096), I = intermediate_size (always int(h x 3.5) // 32 x 32: the remote config drops the field):

1. time-mix (``attention``): ``time_maa_x / _w / _k / _v / _r / _g`` (1, 1, h); ``time_maa_w1`` (h, 5m) and
   ``time_maa_w2`` (5, m, h): tanh(xxx @ w1) then one (m -> h) map per w, k, v, r, g, the data-dependent blend
   of each token with the previous one; ``time_decay`` (1, 1, a) plus ``tanh(x_w @ time_decay_w1 (h, d)) @
   time_decay_w2 (d, a)``, the data-dependent decay; ``time_faaaa`` (H, S), the bonus u; ``receptance``, ``key``,
   ``value``, ``gate`` (h -> a) and ``output`` (a -> h), bias-free; ``ln_x``, a GroupNorm of H groups over h
   channels, weight and bias. Per token and head, with state S (S x S, fp32): ``o = r·(S + u·kᵀv)``,
   ``S ← diag(w)·S + kᵀv``; then ``output(ln_x(o) · silu(gate))``;
2. channel-mix (``feed_forward``): ``time_maa_k / _r`` (1, 1, h), ``key`` (h -> I), ``value`` (I -> h),
   ``receptance`` (h -> h): ``sigmoid(receptance(xr)) · value(relu(key(xk))²)``.

Our tensors: the time-mix under ``mixer.*``, the channel-mix under ``mixer.mlp.*``. Per-sequence state (the remote
``state``: (batch, h, layers) twice in the model's dtype, the shifted tokens; (batch, H, S, S, layers) in fp32,
``WKV_BYTES``). Nothing per token.

FLOPs: the projections and low-rank maps, and the recurrent form's two multiply-adds per state element and token
(kᵀv, r·S: 4·H·S²); the decay, the bonus, the blends and activations are elementwise (bytes only).
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec
from .rwkv import channel_mix_tensors, trace_channel_mix

#: Bytes per element of the WKV state: fp32 whatever the model's dtype (the remote code allocates it so)
WKV_BYTES = 4


@frozen
class RWKV6(MixerSpec):
    """An RWKV-6 block: time-mix with a matrix-valued state and data-dependent shift / decay, and channel-mix."""

    hidden_size: int
    attention_hidden_size: int
    head_size: int
    intermediate_size: int
    mix_rank: int
    decay_rank: int

    kind = MixerKind.RWKV6
    title = "RWKV-6"
    eagle = False  # RWKV-5 (``RWKV5``): static token shift and decay, no low-rank maps
    channel_mix_blends = ("time_maa_k", "time_maa_r")
    module = "mixer"  # the checkpoint's attention (and feed_forward, as mixer.mlp: CheckpointLayout.modules)
    includes_ffn = True
    tp_allreduces = 2  # time-mix's output, channel-mix's value
    tp_note = ("RWKV-6: the channel-mix receptance (hidden -> hidden) is taken column-parallel; gathering its "
               "output for the gate is not counted")

    @property
    def num_heads(self) -> int:
        return self.attention_hidden_size // self.head_size

    def summary(self) -> str:
        return (f"RWKV-6 ({self.num_heads} heads of {self.head_size} x {self.head_size} state, channel-mix "
                f"{self.intermediate_size}, data-dependent token shift)")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, a, ii, m, d = (self.hidden_size, self.attention_hidden_size, self.intermediate_size, self.mix_rank,
                          self.decay_rank)
        for name in ("x", "w", "k", "v", "r", "g"):
            out.append(Tensor(f"{prefix}.time_maa_{name}", (1, 1, h), "other"))
        out.append(Tensor(f"{prefix}.time_maa_w1", (h, 5 * m), "other"))
        out.append(Tensor(f"{prefix}.time_maa_w2", (5, m, h), "other"))
        out.append(Tensor(f"{prefix}.time_decay", (1, 1, a), "other"))
        out.append(Tensor(f"{prefix}.time_decay_w1", (h, d), "other"))
        out.append(Tensor(f"{prefix}.time_decay_w2", (d, a), "other"))
        out.append(Tensor(f"{prefix}.time_faaaa", (self.num_heads, self.head_size), "other"))
        for name in ("receptance", "key", "value", "gate"):
            _linear(out, f"{prefix}.{name}", a, h, False)
        _linear(out, f"{prefix}.output", h, a, False)
        out.append(Tensor(f"{prefix}.ln_x.weight", (h,), "norm"))
        out.append(Tensor(f"{prefix}.ln_x.bias", (h,), "norm"))
        channel_mix_tensors(out, prefix, h, ii, {"time_maa_k": (1, 1, h), "time_maa_r": (1, 1, h)})
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, act, h, a, ii = b.shape.tokens, b.a, self.hidden_size, self.attention_hidden_size, self.intermediate_size
        m, d = self.mix_rank, self.decay_rank

        def lowrank(name: str, t: list[Tensor], n_in: int, n_out: int, parallel: Parallel) -> None:
            # a raw (in, out) Parameter used as x @ W: 2 FLOPs per element and token
            w = sum(x.numel for x in t)
            b.add(name=name, kind=OpKind.MATMUL, category="ssm", layer=i, flops=2 * n * w,
                  weight_bytes=b.fmt.bytes_of(t), act_read_bytes=n * n_in * act, act_write_bytes=n * n_out * act,
                  kernels=1, parallel=parallel)

        rd, wr = b.state_io(h)
        if self.eagle:  # RWKV-5: four static blends of each token with the previous one (the state)
            mix = [t for name in ("key", "value", "receptance", "gate") for t in tensors[f"time_mix_{name}"]]
            b.add(name="time_shift", kind=OpKind.ELEMENTWISE, category="ssm", layer=i,
                  weight_bytes=b.fmt.bytes_of(mix), act_read_bytes=2 * n * h * act, act_write_bytes=4 * n * h * act,
                  state_read_bytes=rd, state_write_bytes=wr, kernels=4)
        else:  # the previous token (state), x + xx·time_maa_x, the mix LoRA, five data-dependent blends
            mix = [t for name in ("x", "w", "k", "v", "r", "g") for t in tensors[f"time_maa_{name}"]]
            b.add(name="time_shift", kind=OpKind.ELEMENTWISE, category="ssm", layer=i,
                  weight_bytes=b.fmt.bytes_of(mix), act_read_bytes=2 * n * h * act, act_write_bytes=n * h * act,
                  state_read_bytes=rd, state_write_bytes=wr, kernels=2)
            lowrank("time_maa_w1", tensors["time_maa_w1"], h, 5 * m, Parallel.COLUMN)
            lowrank("time_maa_w2", tensors["time_maa_w2"], 5 * m, 5 * h, Parallel.COLUMN)
            b.elementwise("ddlerp", 7 * n * h, 5 * n * h, i, "ssm", kernels=5)
        for name in ("receptance", "key", "value", "gate"):
            b.matmul(name, tensors[name], i, "ssm")
        if not self.eagle:
            lowrank("time_decay_w1", tensors["time_decay_w1"], h, d, Parallel.COLUMN)
            lowrank("time_decay_w2", tensors["time_decay_w2"], d, a, Parallel.COLUMN)
        # WKV in fp32: two multiply-adds per state element and token (see the module doc); reads r, k, v, w
        st = self.num_heads * self.head_size * self.head_size
        per_seq = b.shape.batch * WKV_BYTES * st
        b.add(name="wkv6", kind=OpKind.SCAN, category="ssm", layer=i, flops=4 * n * st,
              weight_bytes=b.fmt.bytes_of(tensors["time_decay"] + tensors["time_faaaa"]),
              act_read_bytes=4 * n * a * act, act_write_bytes=n * a * act,
              state_read_bytes=per_seq if b.shape.cached_tokens > 0 else 0, state_write_bytes=per_seq, kernels=1)
        b.gate(i, "ln_x_gate", a, tensors["ln_x"], kernels=3)  # GroupNorm, times silu(gate)
        b.matmul("output", tensors["output"], i, "ssm", parallel=Parallel.ROW)
        trace_channel_mix(b, i, tensors, h, ii, self.channel_mix_blends)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(the two shifted tokens, the WKV matrix state H x S x S) elements per sequence."""
        return 2 * self.hidden_size, self.num_heads * self.head_size * self.head_size

    # the recurrent part in fp32 whatever the dtype (WKV_BYTES): MixerSpec.state_bytes / recurrent_dtype read it
    ssm_state_dtype = "fp32"

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        for what, dim in (("heads", self.num_heads), ("intermediate_size", self.intermediate_size),
                          ("hidden_size", self.hidden_size)):
            if dim % tp:
                verb = "do" if what == "heads" else "does"
                raise OptionError(f"--tp {tp}: {self.title}'s {what} ({dim}) {verb} not split {tp} ways (layer {layer})")
        return tp, 1


@frozen
class RWKV5(RWKV6):
    """An RWKV-5 "Eagle" block (model_type ``rwkv5``, the RWKV hub repos' remote code: RWKV/rwkv-5-world-1b5, -3b,
    -7b): RWKV-6's block with a static token shift and decay, from the remote ``modeling_rwkv5.py``
    (``RwkvSelfAttention``, ``RwkvFeedForward``): ``time_mix_key / _value / _receptance / _gate`` (1, 1, h) blend
    each token with the previous one; ``time_decay`` and ``time_faaaa`` (H, S); ``receptance``, ``key``, ``value``,
    ``gate`` (h -> a), ``output`` (a -> h), ``ln_x`` (GroupNorm of H groups over h, weight and bias); the same WKV
    recurrence per head (``o = r·(S + u·kᵀv)``, ``S ← w·S + kᵀv``, w per channel and fixed) and fp32 state; the
    channel-mix's blends are ``time_mix_key / _receptance``. ``mix_rank`` / ``decay_rank`` are 0."""

    kind = MixerKind.RWKV5
    title = "RWKV-5"
    eagle = True
    channel_mix_blends = ("time_mix_key", "time_mix_receptance")

    def summary(self) -> str:
        return (f"RWKV-5 ({self.num_heads} heads of {self.head_size} x {self.head_size} state, channel-mix "
                f"{self.intermediate_size}, token shift)")

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, a, ii = self.hidden_size, self.attention_hidden_size, self.intermediate_size
        out.append(Tensor(f"{prefix}.time_decay", (self.num_heads, self.head_size), "other"))
        out.append(Tensor(f"{prefix}.time_faaaa", (self.num_heads, self.head_size), "other"))
        for name in ("gate", "key", "value", "receptance"):
            out.append(Tensor(f"{prefix}.time_mix_{name}", (1, 1, h), "other"))
        for name in ("key", "value", "receptance", "gate"):
            _linear(out, f"{prefix}.{name}", a, h, False)
        _linear(out, f"{prefix}.output", h, a, False)
        out.append(Tensor(f"{prefix}.ln_x.weight", (h,), "norm"))
        out.append(Tensor(f"{prefix}.ln_x.bias", (h,), "norm"))
        channel_mix_tensors(out, prefix, h, ii, {"time_mix_key": (1, 1, h), "time_mix_receptance": (1, 1, h)})
        return out
