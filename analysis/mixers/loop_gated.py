"""IQuest-Coder-V1-Loop's later-pass attention (vLLM ``iquest_loopcoder.py``: ``LoopCoderAttention`` with
``loop_idx > 0`` and ``LoopGateProjection``; the protocol: ``analysis.mixers.base``).

A later pass of a layer projects q, k and v with the layer's own (shared) weights, ropes q and k, and attends twice:

- globally: its queries over the *first* pass's K/V of the same layer (every position; vLLM calls that pass's
  ``Attention`` with no new keys, so nothing is written);
- locally: its queries over its own K/V, appended to a cache of its own that keeps the last ``window`` positions
  (vLLM builds that pass's ``Attention`` with ``sliding_window = loop_window_size``).

A per-head gate g = sigmoid(gate_proj(q_h)) blends them, ``g·global + (1 − g)·local``, before ``o_proj``. vLLM's
``LoopGateProjection`` runs the Linear(head_dim → heads) over every head's query and keeps the diagonal, so it
multiplies heads × heads × head_dim per token. The gate's weights are the model's ``gate_projections.N`` (one per
checkpoint layer, shared by the passes), held as model-level tensors; this spec names them for their reads.

This spec is ``Attention`` with ``window`` (the local part: tensors, own cache, K/V append, windowed attention)
plus the global attention, the gate and the blend, which the trace lists after the layer's ``o_proj`` (the same
operations and totals; only their order in the listing differs from vLLM's).
"""

from __future__ import annotations

from ..opkinds import OpKind
from ..records import frozen
from ..tensors import Tensor
from .attention import Attention, attended_keys, distinct_keys


@frozen
class LoopGatedAttention(Attention):
    """A later loop pass: windowed attention over its own cache plus full attention over the first pass's cache of
    checkpoint layer ``index % loop_layers``, blended by a per-head sigmoid gate."""

    loop_layers: int = 1  # num_hidden_layers: a run index i is checkpoint layer i % loop_layers

    title = "loop-gated attention"

    def summary(self) -> str:
        return f"{super().summary()}, loop pass: first pass's K/V + own {self.window}-token window, gated"

    def gate_tensors(self, layer: int) -> list[Tensor]:
        """``model.gate_projections.N`` (Linear(head_dim, heads) with a bias) of checkpoint layer N."""
        p = f"model.gate_projections.{layer}"
        h = self.num_attention_heads
        return [Tensor(f"{p}.weight", (h, self.head_dim), "linear"), Tensor(f"{p}.bias", (h,), "bias")]

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        super().trace(b, i, tensors)  # q/k/v, RoPE, own windowed cache and attention, o_proj
        s, n, a = b.shape, b.shape.tokens, b.a
        h = self.num_attention_heads
        keys = attended_keys(s.cached_tokens, s.new_tokens)
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        b.add(name="global_attention", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=s.batch * h * 2 * (self.head_dim + self.v_head_dim) * keys,
              act_read_bytes=n * self.q_dim * a, act_write_bytes=n * self.o_in * a,
              kv_read_bytes=s.batch * seen * b.kv.nbytes(self.kv_elements_read_per_token()), kernels=1)
        gate = self.gate_tensors(i % self.loop_layers)
        b.add(name="loop_gate", kind="matmul", category="attention", layer=i, flops=2 * n * h * h * self.head_dim,
              weight_bytes=b.fmt.bytes_of(gate), act_read_bytes=n * self.q_dim * a, act_write_bytes=n * h * h * a,
              kernels=1)
        b.elementwise("loop_blend", 2 * n * self.o_in + n * h, n * self.o_in, i, "attention")
