"""SambaY's mixers (Phi-4-mini-flash-reasoning, ``phi4flash``; microsoft's remote code modeling_phi4flash.py, vLLM's
model_executor/models/phi4flash.py; arXiv 2507.06607): the gated memory unit of the cross-decoder and the
differential attention of every attention layer (the protocol: ``analysis.mixers.base``).

``GatedMemoryUnit`` (GMU; ``Phi3Mamba`` built with ``yoco_cross``): no scan, no conv and no state of its own. It
reads the *memory* ``m``, the scan output (``d_inner`` wide, before its ``silu(z)`` gate) of the self-decoder's last
Mamba layer at the same token, computed in the same step: ``out_proj(m · silu(in_proj(x)))``, ``in_proj``
hidden -> d_inner and ``out_proj`` d_inner -> hidden, both bias-free. Nothing is cached across steps.

``SambaYDiffAttention``: differential attention (``diff_attention.DiffAttention``'s fields and λ vectors) as
``FlashDiffCustomAttention`` runs it: the heads split into pairs (2j, 2j + 1), four flash-attention calls
(``fa_og``: q1·k1 over v1 and v2, q2·k2 over v1 and v2, each over half the query and KV heads), the combination
``attn1 - λ · attn2``, then ``subln``, an RMSNorm *with a weight* over the ``2 · head_dim`` features of each pair,
and the ``1 - λ_init`` scale before ``out_proj``. The four calls do the FLOPs of DiffLlama's two (8 · H · head_dim
per key) but read K and V twice each (each call reads one half of K and one half of V). The λ vectors live under
``inner_cross_attn`` in the checkpoint (``CheckpointLayout.modules`` of the family).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import distinct_keys
from .base import MixerKind, MixerSpec
from .diff_attention import DiffAttention


@frozen
class GatedMemoryUnit(MixerSpec):
    """SambaY's GMU (see the module doc): ``out_proj(memory · silu(in_proj(x)))`` over ``intermediate_size``."""

    hidden_size: int
    intermediate_size: int  # d_inner: the memory's width (the source Mamba layer's scan output)

    kind = MixerKind.GMU
    title = "gated memory unit"

    def label(self) -> str:
        return "gmu"

    def summary(self) -> str:
        return f"gated memory unit ({self.intermediate_size}-wide memory read from an earlier Mamba layer's scan)"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        _linear(out, f"{prefix}.in_proj", self.intermediate_size, self.hidden_size, False)
        _linear(out, f"{prefix}.out_proj", self.hidden_size, self.intermediate_size, False)
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        # in_proj: h -> d_inner: 2·n·h·d_inner
        b.matmul("in_proj", tensors["in_proj"], i, "ssm")
        # memory · silu(gate): reads the gate and the memory, writes d_inner
        b.gate(i, "memory_gate", self.intermediate_size, [], kernels=2)
        # out_proj: d_inner -> h
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.intermediate_size % tp:
            raise OptionError(f"--tp {tp}: the gated memory unit's {self.intermediate_size} channels do not split "
                              f"{tp} ways (layer {layer})")
        return tp, 1

    def tp_shard(self, tp: int) -> "GatedMemoryUnit":
        return replace(self, intermediate_size=self.intermediate_size // tp)


@frozen
class SambaYDiffAttention(DiffAttention):
    """Differential attention with SambaY's learned ``subln`` (2 · head_dim) and four flash calls (module doc)."""

    def summary(self) -> str:
        return f"{super().summary()}, subln over head pairs"

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + [Tensor(f"{prefix}.subln.weight", (2 * self.head_dim,), "norm")]

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """DiffAttention's ops with the attention as four calls (K and V each read twice) and its weightless group
        norm replaced by ``subln``."""
        s = b.shape
        super().trace(b, i, tensors)
        at = max(j for j, o in enumerate(b.ops) if o.name == "attention (2 calls)")
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        kv, hd = self.num_key_value_heads, self.head_dim
        b.ops[at] = replace(b.ops[at], name="attention (4 calls)",
                            kv_read_bytes=s.batch * seen * b.kv.nbytes(kv * 2 * (hd + self.v_head_dim)), kernels=4)
        gn = max(j for j, o in enumerate(b.ops) if o.name == "groupnorm")
        b.ops[gn] = replace(b.ops[gn], name="subln", weight_bytes=b.fmt.bytes_of(tensors.get("subln", [])))

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:
            raise OptionError(f"--tp {tp}: SambaY's differential attention pairs heads 2j and 2j + 1 and vLLM builds its "
                              f"Wqkv and out_proj unsplit (layer {layer}): its tensor-parallel split is not modelled",
                              "use --tp 1 for this model")
        return super().tp_kv_split(tp, layer)
