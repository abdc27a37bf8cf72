"""Baichuan-M1's attention (the hub's ``BaichuanAttention`` / ``BaichuanFlashAttention2`` in
baichuan-inc/Baichuan-M1-14B-*'s modeling_baichuan.py; vLLM's and mlx-lm's ``baichuan_m1`` ports): softmax
attention whose keys and values, before RoPE and before the cache, pass a causal convolution over time
(the protocol: ``analysis.mixers.base``).

- ``W_pack``: one bias-free ``[q; k; v]`` projection (``hidden + 2 · kv_heads · head_dim`` rows; spec name
  ``qkv_proj``), ``o_proj`` bias-free; head_dim is hidden / heads of the layer's type (full or sliding: each
  type has its own head counts, so its own head_dim);
- ``conv_k`` / ``conv_v``: ``(1, 1, kv_heads, 1, conv_window)`` each, a ``conv_window``-tap filter per KV head
  shared by its ``head_dim`` channels: ``k'_t = w0 · k_{t-1} + w1 · k_t`` (``conv_window`` 2, which the hub's
  code asserts); then RoPE on q and k', and k' / v' are what the cache keeps;
- per sequence the last pre-conv K and V row (``last_k`` / ``last_v``: ``2 · kv_heads · head_dim ·
  (conv_window - 1)`` elements), beside the per-token K/V cache (a sliding layer keeps ``window`` tokens).

Trace: ``Attention``'s ops with the two convs after ``W_pack`` (``2 · n · kv_heads · head_dim · conv_window``
FLOPs each, their window read and written as state). The torch runtime does not run it: ``verify`` refuses
the layer kind.
"""

from __future__ import annotations

from ..records import frozen
from ..tensors import Tensor
from .attention import Attention
from .base import MixerKind


@frozen
class ConvKVAttention(Attention):
    """Attention with a causal ``conv_window``-tap conv over time on K and V per KV head (module doc);
    ``Attention``'s fields give its heads, window, RoPE and cache."""

    conv_window: int = 2

    kind = MixerKind.CONV_KV_ATTENTION
    title = "Baichuan-M1 conv-K/V attention"

    def label(self) -> str:
        return f"{super().label()}+kvconv"

    def summary(self) -> str:
        return f"{super().summary()}, {self.conv_window}-tap causal conv over time on K and V per KV head"

    def tensors(self, prefix: str) -> list[Tensor]:
        shape = (1, 1, self.num_key_value_heads, 1, self.conv_window)
        return super().tensors(prefix) + [Tensor(f"{prefix}.conv_k", shape, "conv"),
                                          Tensor(f"{prefix}.conv_v", shape, "conv")]

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """``Attention``'s ops, the K and V convs placed right after the fused projection."""
        start = len(b.ops)
        super().trace(b, i, tensors)
        rest = b.ops[start + 1:]  # everything after qkv_proj (W_pack)
        del b.ops[start + 1:]
        for name in ("conv_k", "conv_v"):
            b.conv(i, name, self.k_dim, self.conv_window, tensors.get(name, []), kernels=1)
        b.ops.extend(rest)

    def state_elements(self) -> tuple[int, int]:
        """The previous token's pre-conv K and V rows (``conv_window - 1`` of each)."""
        return 2 * self.k_dim * (self.conv_window - 1), 0
