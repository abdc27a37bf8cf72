"""inclusionAI's Ring-linear 2.0 linear attention (``bailing_moe_linear``: Ring-mini-linear-2.0, Ring-flash-linear-2.0):
MiniMax's lightning attention (``mixers/lightning.py``: a fixed per-head decay, a ``head_dim × head_dim`` state per
head) inside Ling 2.0's attention block. The protocol: ``analysis.mixers.base``.

vLLM's ``BailingMoELinearAttention`` (vllm/model_executor/layers/mamba/linear/bailing_linear_attn.py) and SGLang's
(python/sglang/srt/models/bailing_moe_linear.py), the hub's ``BailingMoeV2LinearAttention`` as mlx-lm ports it
(mlx_lm/models/bailing_moe_linear.py), per token (h = hidden_size, H = num_attention_heads heads of d = head_dim):

1. ``query_key_value``: h -> 3·H·d (MHA: K and V have H heads whatever num_key_value_heads says), biased by
   ``use_qkv_bias``; SiLU on all of it only when ``linear_silu`` (false in the released configs);
2. ``query_layernorm`` / ``key_layernorm`` (``use_qk_norm``): RMSNorm(d) per head of q and k; RoPE (rotate half)
   on the first ``partial_rotary_factor`` of each head (``linear_rope``, default on); q scaled by d^-0.5;
3. the recurrence per head, S ← λ·S + kᵀv, o = q·S (λ = exp(-slope), the slope a buffer from the head and layer
   index: no parameter), as MiniMax's;
4. ``g_norm``: an RMSNorm over ``group_norm_size`` equal groups of the H·d features (one weight of H·d), times
   ``sigmoid(g_proj(x))`` (``g_proj``: h -> H·d, no bias); ``dense``: H·d -> h, biased by ``use_bias``.

The state is H × d × d per sequence (no conv window), kept in the model dtype (vLLM's
``linear_attention_state_dtype``), as MiniMax's. Under tensor parallelism vLLM and SGLang need tp to divide
``group_norm_size`` (each rank then norms whole groups: no extra all-reduce).
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .lightning import LightningAttention


@frozen
class BailingLinearAttention(LightningAttention):
    """Ring-linear 2.0's lightning attention (see the module doc); ``LightningAttention``'s state and recurrence."""

    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    rotary_dim: int = 0
    rope_theta: float = 10000.0
    norm_groups: int = 1
    silu: bool = False

    title = "Bailing lightning attention"
    tp_note = ("Bailing lightning attention: its gated RMSNorm normalises group_norm_size groups of the heads' "
               "features, so tensor parallelism needs tp to divide group_norm_size (vLLM and SGLang assert it); "
               "each rank then norms whole groups, with no extra all-reduce")

    def summary(self) -> str:
        return (f"Bailing lightning attention ({self.num_heads} heads x {self.head_dim}, state "
                f"{self.head_dim}x{self.head_dim}, gated norm in {self.norm_groups} groups)")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        # our names (the Bailing checkpoint layout maps query_key_value / dense / *_layernorm onto them)
        out: list[Tensor] = []
        h, inner, d = self.hidden_size, self.inner, self.head_dim
        _linear(out, f"{prefix}.qkv_proj", 3 * inner, h, self.qkv_bias)
        if self.qk_norm:
            out.append(Tensor(f"{prefix}.q_norm.weight", (d,), "norm"))
            out.append(Tensor(f"{prefix}.k_norm.weight", (d,), "norm"))
        _linear(out, f"{prefix}.g_proj", inner, h, False)
        out.append(Tensor(f"{prefix}.g_norm.weight", (inner,), "norm"))
        _linear(out, f"{prefix}.o_proj", h, inner, self.o_bias)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, inner = b.shape.tokens, self.inner
        b.matmul("qkv_proj", tensors["qkv_proj"], i, "ssm")
        if self.silu:
            b.elementwise("qkv_act", 3 * n * inner, 3 * n * inner, i, "ssm", kernels=1)
        if self.qk_norm:
            b.norm("q_norm", None, inner, i, tensors=tensors.get("q_norm", []))
            b.norm("k_norm", None, inner, i, tensors=tensors.get("k_norm", []))
        if self.rotary_dim:
            b.elementwise("rope", 2 * n * inner, 2 * n * inner, i, "ssm", kernels=10, kind=OpKind.ROPE)
        b.elementwise("query_scale", n * inner, n * inner, i, "ssm")
        self.recurrence(b, i)  # MiniMax's recurrent form
        b.matmul("g_proj", tensors["g_proj"], i, "ssm")
        b.gate(i, "gated_group_norm", inner, tensors.get("g_norm", []), kernels=7)
        b.matmul("o_proj", tensors["o_proj"], i, "ssm", parallel=Parallel.ROW)

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.norm_groups % tp:
            raise OptionError(f"--tp {tp}: Bailing lightning attention norms {self.norm_groups} groups "
                              f"(group_norm_size), which do not split {tp} ways (layer {layer}; vLLM and SGLang "
                              "require tp to divide group_norm_size)")
        return super().tp_kv_split(tp, layer)

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return ((self.rotary_dim, self.rope_theta),) if self.rotary_dim else ()
