"""``Tensor``: one named weight of a model with its exact shape and kind (see ``analysis.spec`` for the
kinds). A leaf module: the spec, the mixers (``analysis.mixers``) and the quantizers all build on it."""

from __future__ import annotations

from enum import StrEnum
from math import prod

from .records import frozen


class TensorKind(StrEnum):
    """What a weight is, for the parameter breakdown, the quantizers and tensor-parallel sharding."""

    EMBEDDING = "embedding"
    LINEAR = "linear"
    BIAS = "bias"
    NORM = "norm"
    ROUTER = "router"
    EXPERT = "expert"
    CONV = "conv"
    LM_HEAD = "lm_head"
    VISION = "vision"
    AUDIO = "audio"
    OTHER = "other"


@frozen
class Tensor:
    name: str
    shape: tuple[int, ...]
    kind: TensorKind  # a plain string is taken and checked: an unknown kind is a ValueError here
    # a routed expert's stacked ``gate_up_proj``: True when it holds a gate and an up projection (checkpoints store
    # them as two matrices, each with its own scales), False for a non-gated expert's single ``up_proj`` (relu²:
    # Nemotron-H); meaningless for other tensors
    gated: bool = True

    def __post_init__(self) -> None:
        if type(self.kind) is not TensorKind:
            object.__setattr__(self, "kind", TensorKind(self.kind))

    @property
    def numel(self) -> int:
        return prod(self.shape)


def linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool, kind: str = "linear") -> None:
    """Append a matmul weight ``(n_out, n_in)`` named ``{name}.weight`` (and its bias) to ``out``."""
    out.append(Tensor(f"{name}.weight", (n_out, n_in), kind))
    if bias:
        out.append(Tensor(f"{name}.bias", (n_out,), "bias"))
