"""NVIDIA Nemotron-Labs Dory's attention block (transformers' ``DoryAttention`` in a ``DoryDecoderLayer``): the
spec, its tensors, trace and cache (the protocol: ``analysis.mixers.base``).

AFMoE's gated attention (``GatedAttention`` with ``proj_gate``: q/k/v/o biased by ``attention_bias``, a bias-free
``gate_proj`` hidden -> heads x head_dim whose sigmoid scales the output before ``o_proj``) on nGPT's unit sphere:
weightless L2 norms on q, k and the attention output, the queries scaled per channel (``sqk``), the gate by
``s_gate`` (each heads x head_dim). The layer's own nGPT parameters are listed here too (one level up, so that
``Layer`` and ``MLP`` stay Llama-shaped): the residual interpolation rates ``lambda_1`` / ``lambda_2`` (hidden
each) and the MLP's ``suv_gate`` / ``suv_up`` scales (intermediate_size each); the four sandwich norms and the
MLP's ``ffn_sub_norm`` are weightless L2 norms.

Cache: K and V of every KV head per token (sliding layers keep ``window`` tokens). Under
``recurrent_kv_cache_mode`` "last_loop" the looped layers' earlier passes read the last pass's cache and write
none (``cache_written`` False: they attend over it and their own new tokens).
"""

from __future__ import annotations

from ..records import frozen
from ..tensors import Tensor
from .attention import GatedAttention
from .base import MixerKind


@frozen
class DoryAttention(GatedAttention):
    """Dory's attention block (module doc); ``intermediate_size``: its layer's MLP width (for suv_gate / suv_up)."""

    intermediate_size: int = 0
    cache_written: bool = True

    kind = MixerKind.NGPT_ATTENTION
    title = "Dory nGPT attention"

    def label(self) -> str:
        return super().label() + ("" if self.cache_written else "+reads-last-loop-kv")

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        parent = prefix.rsplit(".", 1)[0]  # model.layers.N
        out.append(Tensor(f"{prefix}.sqk", (self.q_dim,), "other"))
        out.append(Tensor(f"{prefix}.s_gate", (self.o_in,), "other"))
        out.append(Tensor(f"{parent}.lambda_1", (self.hidden_size,), "other"))
        out.append(Tensor(f"{parent}.lambda_2", (self.hidden_size,), "other"))
        out.append(Tensor(f"{parent}.mlp.suv_gate", (self.intermediate_size,), "other"))
        out.append(Tensor(f"{parent}.mlp.suv_up", (self.intermediate_size,), "other"))
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        super().trace(b, i, tensors)
        n, h = b.shape.tokens, self.hidden_size
        # the two residual interpolations towards the normalized updates, at the learned per-channel rates, and the
        # MLP's suv scales (the small vectors' bytes here)
        small = tensors.get("sqk", []) + tensors.get("s_gate", []) + tensors.get("lambda_1", []) \
            + tensors.get("lambda_2", []) + tensors.get("suv_gate", []) + tensors.get("suv_up", [])
        b.add(name="ngpt_scales", kind="elementwise", category="attention", layer=i, weight_bytes=b.fmt.bytes_of(small),
              act_read_bytes=4 * n * h * b.a, act_write_bytes=2 * n * h * b.a, kernels=4)

    def kv_elements_per_token(self) -> int:
        return super().kv_elements_per_token() if self.cache_written else 0
