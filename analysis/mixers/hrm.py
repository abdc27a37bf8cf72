"""HRM-Text's attention block (transformers' ``HrmTextAttention``): the spec and its tensors (the protocol:
``analysis.mixers.base``; trace and cache are ``GatedAttention``'s).

Multi-head attention (``num_attention_heads`` query, key and value heads of ``head_dim``, RoPE) whose output is
scaled per feature by sigmoid(``gate_proj``(x)) before ``o_proj``, as AFMoE's (``GatedAttention.proj_gate``), but
with every projection, the gate's included, biased by ``attention_bias``. Its own kind: the torch runtime does
not run HRM's weightless norms, prefix-LM mask and recurrent stacks.
"""

from __future__ import annotations

from ..records import frozen
from ..tensors import Tensor
from .attention import GatedAttention
from .base import MixerKind


@frozen
class HrmAttention(GatedAttention):
    """HRM's gated multi-head attention (module doc)."""

    kind = MixerKind.HRM_ATTENTION
    title = "HRM gated attention"

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        if self.q_bias:  # (attention_bias): the gate's bias too
            out.append(Tensor(f"{prefix}.gate_proj.bias", (self.o_in,), "bias"))
        return out
