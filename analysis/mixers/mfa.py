"""StepFun Step-3's Multi-matrix Factorization Attention (MFA; ``step3_text``, vLLM's ``Step3TextAttention``,
vllm/model_executor/models/step3_text.py; arXiv 2507.19427): many wide query heads from a low-rank query, one
shared K/V head (the protocol: ``analysis.mixers.base``).

The query is ``wq(inter_norm(q_proj(x)))``: ``q_proj`` (hidden -> ``share_q_dim``), an RMSNorm over the
``share_q_dim`` features (``inter_norm``), ``wq`` (``share_q_dim`` -> heads · head_dim). ``k_proj`` and
``v_proj`` give one head of ``head_dim`` each (vLLM refuses any other KV head count), RoPE over the whole head,
``o_proj`` (heads · head_dim -> hidden); no biases. The cache is that one K/V head: ``2 · head_dim`` elements per
token and layer.

Tensor parallelism as vLLM runs it: ``q_proj`` / ``k_proj`` / ``v_proj`` are one ``ReplicatedLinear`` (whole on
every rank, as the norm), ``wq`` splits its heads (column), ``o_proj`` by rows; the one K/V head is cached on every
rank. Our tensors name the query's two projections ``q_a_proj`` / ``q_b_proj`` (the names of MLA's replicated
low-rank query, which the tensor-parallel tables already hold whole / split); the checkpoint's ``q_proj`` / ``wq``
/ ``inter_norm`` are mapped to them by the family's checkpoint layout.
"""

from __future__ import annotations

from dataclasses import replace

from ..opkinds import Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind


@frozen
class MFAttention(Attention):
    """MFA (see the module doc): ``Attention``'s fields (one KV head, no biases) plus ``q_rank``, the low-rank
    query width (``share_q_dim``)."""

    q_rank: int = 0

    kind = MixerKind.MFA
    title = "multi-matrix factorization attention (MFA)"
    tp_replicated_modules = ("q_a_proj",)

    def __post_init__(self) -> None:
        if self.q_rank < 1:
            raise ValueError("MFAttention: q_rank (share_q_dim) must be positive")

    def summary(self) -> str:
        return (f"MFA: {self.num_attention_heads} query heads from a rank-{self.q_rank} query, "
                f"{self.num_key_value_heads} shared KV head, head_dim {self.head_dim}")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        _linear(out, f"{prefix}.q_a_proj", self.q_rank, h, False)
        _linear(out, f"{prefix}.k_proj", self.k_dim, h, False)
        _linear(out, f"{prefix}.v_proj", self.v_dim, h, False)
        out.append(Tensor(f"{prefix}.inter_norm.weight", (self.q_rank,), "norm"))
        _linear(out, f"{prefix}.q_b_proj", self.q_dim, self.q_rank, False)
        _linear(out, f"{prefix}.o_proj", h, self.o_in, False)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """q_a_proj, k_proj, v_proj (replicated in vLLM: one fused ReplicatedLinear), inter_norm, q_b_proj,
        then attention's RoPE, cache append, attention and o_proj."""
        b.matmul("q_a_proj", tensors["q_a_proj"], i, "attention", parallel=Parallel.REPLICATED)
        b.matmul("k_proj", tensors["k_proj"], i, "attention")
        b.matmul("v_proj", tensors["v_proj"], i, "attention")
        b.norm("inter_norm", None, self.q_rank, i, tensors=tensors.get("inter_norm", []))
        b.matmul("q_b_proj", tensors["q_b_proj"], i, "attention")
        # the rest is attention's (no q/k/v projection of its own: none is passed on)
        rest = {k: v for k, v in tensors.items() if k not in ("q_a_proj", "k_proj", "v_proj", "q_b_proj")}
        super().trace(b, i, rest)

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_shard(self, tp: int) -> "MFAttention":
        """``H/tp`` query heads (wq and o_proj split); the low-rank query and the one K/V head whole."""
        return replace(self, num_attention_heads=self.num_attention_heads // tp)
