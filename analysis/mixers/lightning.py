"""MiniMax lightning attention (MiniMax-Text-01, MiniMax-M1): linear attention with a per-head decay and
a ``head_dim × head_dim`` state per head (the protocol: ``analysis.mixers.base``; the trace conventions
of recurrent mixers: ``analysis.trace``, "recurrent mixers").

transformers' ``MiniMaxLightningAttention``, per token (h = hidden_size, H heads of d = head_dim):

1. ``qkv_proj``: h -> 3·H·d (no bias), SiLU on all of it, split per head into q, k, v (no RoPE, no conv);
2. the recurrence, per head with state S (d × d) and the fixed decay λ = exp(-slope_rate):
   ``S ← λ·S + kᵀv``, ``o = q·S``. ``slope_rate`` (and the ``query_decay``, ``key_decay`` and
   ``diagonal_decay`` tables of the block form) are buffers computed from the head and layer index, not
   parameters. A prompt runs in blocks of ``block_size`` tokens (intra-block ``(QKᵀ ⊙ decay)V`` plus the
   inter-block ``Q·S``), decode the recurrent form;
3. ``norm``: one RMSNorm over all H·d features (not per head), times ``sigmoid(output_gate(x))``
   (``output_gate``: h -> H·d, no bias), then ``out_proj``: H·d -> h (no bias).

Per-sequence state: H × d × d (no conv window), which transformers (``MiniMaxCache.linear_cache``) and vLLM
(``linear_attention_state_dtype``: the model dtype unless a mamba cache dtype is set; fp32 refused) keep
in the activation dtype, not the KV dtype: ``kv.layer_kv`` gives every recurrent state the activation
dtype. Under tensor parallelism the heads split ``tp`` ways; the norm over all heads then needs its
variance summed across ranks (vLLM's ``MiniMaxText01RMSNormTP``).
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class LightningAttention(MixerSpec):
    """MiniMax lightning attention (see the module doc)."""

    hidden_size: int
    num_heads: int
    head_dim: int
    block_size: int = 256

    kind = MixerKind.LIGHTNING
    title = "lightning attention"
    module = "self_attn"  # transformers names both of MiniMax's mixers self_attn
    tp_note = ("lightning attention: its RMSNorm spans all heads, so under tensor parallelism each rank sums its "
               "share of the variance with the others (one small all-reduce per layer, as vLLM's "
               "MiniMaxText01RMSNormTP)")

    @property
    def inner(self) -> int:
        return self.num_heads * self.head_dim

    def summary(self) -> str:
        return f"lightning attention ({self.num_heads} heads x {self.head_dim}, state {self.head_dim}x{self.head_dim})"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, inner = self.hidden_size, self.inner
        _linear(out, f"{prefix}.qkv_proj", 3 * inner, h, False)
        _linear(out, f"{prefix}.output_gate", inner, h, False)
        out.append(Tensor(f"{prefix}.norm.weight", (inner,), "norm"))
        _linear(out, f"{prefix}.out_proj", h, inner, False)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, inner = b.shape.tokens, self.inner
        # qkv_proj: h -> 3·H·d, then SiLU over all of it
        b.matmul("qkv_proj", tensors["qkv_proj"], i, "ssm")
        b.elementwise("qkv_act", 3 * n * inner, 3 * n * inner, i, "ssm", kernels=1)
        self.recurrence(b, i)
        # output_gate: h -> H·d; RMSNorm over H·d times sigmoid(gate)
        b.matmul("output_gate", tensors["output_gate"], i, "ssm")
        b.gate(i, "gated_norm", inner, tensors.get("norm", []), kernels=7)
        # out_proj: H·d -> h
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def recurrence(self, b, i: int) -> None:
        """The lightning_attention op: the recurrent form per token and head, S ← λ·S + kᵀv (d·d multiply-adds)
        and o = q·S (d·d), 4·d² FLOPs per head per token (the decay is a fixed per-head scalar; prefill's block
        form does more inside a block, quadratic in block_size, which is not counted). Reads q, k, v, writes o."""
        n, a, inner = b.shape.tokens, b.a, self.inner
        _, st = self.state_elements()
        rd, wr = b.state_io(st)
        b.add(name="lightning_attention", kind=OpKind.SCAN, category="ssm", layer=i, flops=4 * n * st,
              act_read_bytes=3 * n * inner * a, act_write_bytes=n * inner * a, state_read_bytes=rd,
              state_write_bytes=wr, kernels=4)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        return 0, self.num_heads * self.head_dim * self.head_dim

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_heads} lightning-attention heads do not split {tp} ways "
                              f"(layer {layer})")
        return tp, 1
