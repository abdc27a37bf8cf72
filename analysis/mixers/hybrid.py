"""Falcon-H1's parallel hybrid mixer: attention and Mamba-2 side by side in every layer (the protocol:
``analysis.mixers.base``); each part answers as its own module says, and the layer sums them."""

from __future__ import annotations

from ..records import frozen
from ..tensors import Tensor
from .attention import Attention
from .base import MixerKind, MixerSpec
from .mamba import Mamba


class AttentionMambaCache:
    """The cache of a layer holding an ``attention`` and a ``mamba`` (Falcon-H1's parallel branches, Zamba's
    shared block then Mamba): the attention's K/V per token (and its window), the Mamba's state per sequence."""

    def kv_elements_per_token(self) -> int:
        return self.attention.kv_elements_per_token()  # type: ignore[attr-defined]

    def kv_cap(self) -> int | None:
        return self.attention.kv_cap()  # type: ignore[attr-defined]

    def state_elements(self) -> tuple[int, int]:
        return self.mamba.state_elements()  # type: ignore[attr-defined]

    def recurrent_dtype(self, state_dtype):
        return self.mamba.recurrent_dtype(state_dtype)  # type: ignore[attr-defined]


@frozen
class ParallelHybrid(AttentionMambaCache, MixerSpec):
    """Falcon-H1's mixer: attention and a Mamba-2 mixer read the same normed input in every layer
    and their outputs are summed. The layer caches the attention's K/V per token and keeps the
    Mamba's fixed state per sequence. Tensors are named ``self_attn.*`` and ``mixer.*`` (the
    latter is ``mamba.*`` in transformers)."""

    attention: Attention
    mamba: Mamba

    kind = MixerKind.ATTENTION_MAMBA
    title = "attention+Mamba"

    def summary(self) -> str:
        return f"{self.attention.summary()} ∥ {self.mamba.summary()}"

    def tensors(self, prefix: str) -> list[Tensor]:
        base = prefix[: -len(".mixer")] if prefix.endswith(".mixer") else prefix
        return self.attention.tensors(f"{base}.{self.attention.module}") + self.mamba.tensors(f"{base}.mixer")

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, h = b.shape.tokens, b.spec.hidden_size
        self.attention.trace(b, i, tensors)
        self.mamba.trace(b, i, tensors)
        # the two branch outputs summed (their scalar multipliers fold into this pass)
        b.elementwise("branch_sum", 2 * n * h, n * h, i, "other")

    # the cache: AttentionMambaCache (the attention's K/V per token and window, the Mamba's state per sequence)

    # (tp_kv_split: the default, every part split tp ways; the attention's heads are not checked here)

    def with_window(self, window: int) -> None:
        return None  # the attention part is not windowed by the what-if

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return self.attention.rope_tables()

    def attention_shape(self) -> tuple[int, int] | None:
        return self.attention.attention_shape()
