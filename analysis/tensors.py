"""``Tensor``: one named weight of a model with its exact shape and kind (see ``analysis.spec`` for the
kinds). A leaf module: the spec, the mixers (``analysis.mixers``) and the quantizers all build on it."""

from __future__ import annotations

from math import prod

from .records import frozen


@frozen
class Tensor:
    name: str
    shape: tuple[int, ...]
    kind: str

    @property
    def numel(self) -> int:
        return prod(self.shape)


def linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool, kind: str = "linear") -> None:
    """Append a matmul weight ``(n_out, n_in)`` named ``{name}.weight`` (and its bias) to ``out``."""
    out.append(Tensor(f"{name}.weight", (n_out, n_in), kind))
    if bias:
        out.append(Tensor(f"{name}.bias", (n_out,), "bias"))
