"""A sub-block replaced by one linear map (NVIDIA's NAS-pruned Llama models, ``nemotron-nas``: a block config's
``replace_with_linear``; the protocol: ``analysis.mixers.base``).

The remote ``modeling_decilm.py`` builds ``DeciLMLinearAttention`` (``self_attn.linear_attn``) in place of
attention, and ``DeciLMLinearMLP`` (``mlp.linear_mlp``) in place of the MLP: each one bias-free
``Linear(hidden_size, hidden_size)`` behind the sub-block's own RMSNorm, its output added to the residual. It mixes
no tokens and caches nothing; it sits in a layer's mixer slot (attention's place; or, where attention is a no-op,
the MLP's, which is the same arithmetic: norm, linear, residual add).
"""

from __future__ import annotations

from ..opkinds import Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class LinearReplacement(MixerSpec):
    """One bias-free ``hidden_size × hidden_size`` Linear, ``<module>.<weight>`` in the checkpoint
    (``self_attn.linear_attn`` or ``mlp.linear_mlp``)."""

    hidden_size: int
    module: str = "self_attn"
    weight: str = "linear_attn"

    kind = MixerKind.LINEAR_REPLACEMENT
    title = "linear replacement"

    @property
    def includes_ffn(self) -> bool:  # type: ignore[override]
        """The MLP's linear replacement is the layer's FFN (its label has no '-only')."""
        return self.weight == "linear_mlp"

    def label(self) -> str:
        return "linear-attn" if self.weight == "linear_attn" else "linear-mlp"

    def summary(self) -> str:
        return f"linear replacement ({self.module}.{self.weight})"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        _linear(out, f"{prefix}.{self.weight}", self.hidden_size, self.hidden_size, False)
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        # one hidden -> hidden matmul per token: 2·n·hidden². Over tensor-parallel ranks it splits as a row-parallel
        # Linear (each rank its share of the input features, a partial sum all-reduced), which is the one all-reduce
        # analysis.parallel counts for a layer's mixer
        b.matmul(self.weight, tensors[self.weight], i, "attention" if self.weight == "linear_attn" else "ffn",
                 parallel=Parallel.ROW)
