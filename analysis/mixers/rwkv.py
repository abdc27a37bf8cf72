"""The RWKV-4 block (transformers' ``rwkv``: RWKV/rwkv-4-*-pile, rwkv-raven-*): a time-mix (WKV linear
attention with a per-channel exponential decay) and a channel-mix (a squared-ReLU feed-forward gated by a
receptance), both fed by a one-token time shift (the protocol: ``analysis.mixers.base``; the trace conventions
of recurrent mixers: ``analysis.trace``, "recurrent mixers").

One mixer holds the whole block, as transformers' ``RwkvBlock`` does: the channel-mix reads the time shift too,
so it is no standard MLP (the layer has no ``ffn``; ``includes_ffn``). transformers' modeling_rwkv.py (5.24),
h = hidden_size, a = attention_hidden_size (default h), i = intermediate_size (default 4·h):

1. time-mix (``attention``): ``time_mix_key`` / ``_value`` / ``_receptance`` (h each, stored (1, 1, h)) blend
   the token with the previous one; ``key``, ``value``, ``receptance`` (h -> a) and ``output`` (a -> h), all
   bias-free; ``time_decay`` and ``time_first`` (a each; transformers keeps them in fp32,
   ``_keep_in_fp32_modules``). The WKV recurrence per channel keeps a numerator, a denominator and a running
   max: out = (e1·num + e2·v) / (e1·den + e2), then num ← e1'·num + e2'·v, den ← e1'·den + e2';
   ``output(sigmoid(r) · wkv)``;
2. channel-mix (``feed_forward``): ``time_mix_key`` / ``_receptance`` (h each), ``key`` (h -> i), ``value``
   (i -> h), ``receptance`` (h -> h): ``sigmoid(receptance(xr)) · value(relu(key(xk))²)``.

Our tensors: the time-mix under ``mixer.*``, the channel-mix under ``mixer.mlp.*`` (counted as the layer's MLP
parameters). Per-sequence state (transformers' ``state``: five (batch, h, layers) tensors): the two shifted
tokens (time-mix and channel-mix, h each) in the model's dtype, the WKV numerator, denominator and max (a each)
in fp32 whatever the dtype (``WKV_BYTES``). Nothing per token.

FLOPs: the projections, and the recurrent form's four multiply-adds per channel and token (the output's
numerator and denominator, the state's two updates: 8·a); the exps, max, division and the token-shift blends
are elementwise (bytes only).
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec

#: Bytes per element of the WKV state (numerator, denominator, max): fp32, whatever the model or state dtype
WKV_BYTES = 4


@frozen
class RWKV4(MixerSpec):
    """An RWKV-4 block: time-mix and channel-mix (see the module doc)."""

    hidden_size: int
    attention_hidden_size: int
    intermediate_size: int

    kind = MixerKind.RWKV
    title = "RWKV-4"
    module = "mixer"  # the checkpoint's attention (and feed_forward, as mixer.mlp: CheckpointLayout.modules)
    includes_ffn = True
    tp_allreduces = 2  # time mix's output, channel mix's value
    tp_note = ("RWKV-4: the channel-mix receptance (hidden -> hidden) is taken column-parallel; gathering its "
               "output for the gate is not counted")

    def summary(self) -> str:
        return (f"RWKV-4 (time-mix {self.attention_hidden_size} channels, channel-mix {self.intermediate_size}, "
                "token shift)")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, a, i = self.hidden_size, self.attention_hidden_size, self.intermediate_size
        out.append(Tensor(f"{prefix}.time_decay", (a,), "other"))
        out.append(Tensor(f"{prefix}.time_first", (a,), "other"))
        for name in ("key", "value", "receptance"):
            out.append(Tensor(f"{prefix}.time_mix_{name}", (1, 1, h), "other"))
        for name in ("key", "value", "receptance"):
            _linear(out, f"{prefix}.{name}", a, h, False)
        _linear(out, f"{prefix}.output", h, a, False)
        channel_mix_tensors(out, prefix, h, i, {"time_mix_key": (1, 1, h), "time_mix_receptance": (1, 1, h)})
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, act, h, a, ii = b.shape.tokens, b.a, self.hidden_size, self.attention_hidden_size, self.intermediate_size
        # time-mix: blend each token with the previous one (the shifted token is state: read when the sequences
        # have one, written every step) three ways, then key / value / receptance
        rd, wr = b.state_io(h)
        mix = [t for name in ("key", "value", "receptance") for t in tensors[f"time_mix_{name}"]]
        b.add(name="time_shift", kind=OpKind.ELEMENTWISE, category="ssm", layer=i, weight_bytes=b.fmt.bytes_of(mix),
              act_read_bytes=2 * n * h * act, act_write_bytes=3 * n * h * act, state_read_bytes=rd,
              state_write_bytes=wr, kernels=3)
        for name in ("key", "value", "receptance"):
            b.matmul(name, tensors[name], i, "ssm")
        # WKV in fp32: four multiply-adds per channel and token (see the module doc); reads k and v, writes wkv
        per_seq = b.shape.batch * WKV_BYTES * 3 * a
        b.add(name="wkv", kind=OpKind.SCAN, category="ssm", layer=i, flops=8 * n * a,
              weight_bytes=b.fmt.bytes_of(tensors["time_decay"] + tensors["time_first"]),
              act_read_bytes=2 * n * a * act, act_write_bytes=n * a * act,
              state_read_bytes=per_seq if b.shape.cached_tokens > 0 else 0, state_write_bytes=per_seq, kernels=1)
        b.gate(i, "receptance_gate", a, [], kernels=2)  # sigmoid(r) · wkv
        b.matmul("output", tensors["output"], i, "ssm", parallel=Parallel.ROW)
        trace_channel_mix(b, i, tensors, h, ii, ("time_mix_key", "time_mix_receptance"))

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(the two shifted tokens, the WKV numerator / denominator / max) elements per sequence."""
        return 2 * self.hidden_size, 3 * self.attention_hidden_size

    # the recurrent part in fp32 whatever the dtype (WKV_BYTES): MixerSpec.state_bytes / recurrent_dtype read it
    ssm_state_dtype = "fp32"

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        for what, dim in (("attention_hidden_size", self.attention_hidden_size),
                          ("intermediate_size", self.intermediate_size), ("hidden_size", self.hidden_size)):
            if dim % tp:
                raise OptionError(f"--tp {tp}: RWKV's {what} ({dim}) does not split {tp} ways (layer {layer})")
        return tp, 1


# ---- the channel-mix, shared by RWKV-4 to RWKV-7 ----------------------------------------------------


def channel_mix_tensors(out: list[Tensor], prefix: str, h: int, i: int, blends: dict[str, tuple[int, ...]],
                        receptance: bool = True) -> None:
    """The channel-mix under ``{prefix}.mlp.``: its token-shift blends (name -> shape), ``key`` (h -> i),
    ``receptance`` (h -> h; RWKV-7 has none) and ``value`` (i -> h), bias-free."""
    for name, shape in blends.items():
        out.append(Tensor(f"{prefix}.mlp.{name}", shape, "other"))
    _linear(out, f"{prefix}.mlp.key", i, h, False)
    if receptance:
        _linear(out, f"{prefix}.mlp.receptance", h, h, False)
    _linear(out, f"{prefix}.mlp.value", h, i, False)


def trace_channel_mix(b, i: int, tensors: dict[str, list[Tensor]], h: int, ii: int, blends: tuple[str, ...],
                      receptance: bool = True) -> None:
    """After the time-mix: its residual add and the pre-FFN norm (the layer adds the channel-mix's residual
    after the mixer), then the channel-mix: its own shifted token (state) and one blend per name in
    ``blends``, relu(key)² -> value, gated by sigmoid(receptance) where there is one."""
    n, act = b.shape.tokens, b.a
    ffn = {t.name.split(".mlp.", 1)[1].rsplit(".weight", 1)[0]: t for t in tensors["mlp"]}
    b.elementwise("residual", 2 * n * h, n * h, i, "other")
    p = b.spec.layers[i].norm("pre_ffn")
    b.norm(p.name, p.norm, h, i, tensors=tensors.get(p.name, []))
    rd, wr = b.state_io(h)
    b.add(name="ffn_time_shift", kind=OpKind.ELEMENTWISE, category="ffn", layer=i,
          weight_bytes=b.fmt.bytes_of([ffn[name] for name in blends]), act_read_bytes=2 * n * h * act,
          act_write_bytes=len(blends) * n * h * act, state_read_bytes=rd, state_write_bytes=wr, kernels=len(blends))
    b.matmul("ffn_key", [ffn["key"]], i, "ffn")
    b.elementwise("ffn_relu_sq", n * ii, n * ii, i, "ffn")
    b.matmul("ffn_value", [ffn["value"]], i, "ffn", parallel=Parallel.ROW)
    if receptance:
        b.matmul("ffn_receptance", [ffn["receptance"]], i, "ffn")
        b.elementwise("ffn_gate", 2 * n * h, n * h, i, "ffn", kernels=2)  # sigmoid(r) · value
