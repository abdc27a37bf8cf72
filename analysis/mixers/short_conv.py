"""LFM2's gated short convolution: the spec, its tensors, trace and per-sequence state (the protocol:
``analysis.mixers.base``; the trace conventions of recurrent mixers: ``analysis.trace``)."""

from __future__ import annotations

from ..opkinds import Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class ShortConv(MixerSpec):
    """LFM2's gated short convolution: ``in_proj`` to ``[B | C | x]`` (3·hidden), ``y = C ·
    conv(B · x)`` with a depthwise causal conv of ``conv_kernel`` taps (``conv_L_cache``) over the
    hidden channels, then ``out_proj``. Per-sequence state: the conv window, ``hidden × (conv_kernel
    - 1)`` (vLLM's ``short_conv_state_shape``)."""

    hidden_size: int
    conv_kernel: int
    bias: bool = False

    kind = MixerKind.SHORT_CONV
    title = "short conv"

    @property
    def conv_dim(self) -> int:
        return self.hidden_size

    def summary(self) -> str:
        return f"short conv ({self.conv_kernel} taps)"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        _linear(out, f"{prefix}.in_proj", 3 * h, h, self.bias)
        out.append(Tensor(f"{prefix}.conv.weight", (h, 1, self.conv_kernel), "conv"))
        if self.bias:
            out.append(Tensor(f"{prefix}.conv.bias", (h,), "bias"))
        _linear(out, f"{prefix}.out_proj", h, h, self.bias)
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, h = b.shape.tokens, self.hidden_size
        # in_proj: h -> [B | C | x]: 2·n·h·3h
        b.matmul("in_proj", tensors["in_proj"], i, "ssm")
        b.elementwise("B·x", 2 * n * h, n * h, i, "ssm")
        # depthwise causal conv over h channels (no activation): 2·n·h·conv_kernel
        b.conv(i, "conv", h, self.conv_kernel, tensors["conv"], kernels=1)
        b.elementwise("C·y", 2 * n * h, n * h, i, "ssm")
        # out_proj: h -> h
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def state_elements(self) -> tuple[int, int]:
        return self.conv_dim * (self.conv_kernel - 1), 0
