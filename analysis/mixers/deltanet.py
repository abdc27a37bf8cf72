"""Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): the spec, its tensors, trace, per-sequence
state and tensor-parallel split (the protocol: ``analysis.mixers.base``; the trace conventions of
recurrent mixers: ``analysis.trace``, "recurrent mixers")."""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class GatedDeltaNet(MixerSpec):
    """Gated DeltaNet linear attention (Qwen3-Next ``linear_attention`` layers).

    ``in_proj_qkvz`` gives q, k (``num_k_heads × head_k_dim`` each), v and the output gate z
    (``num_v_heads × head_v_dim`` each); ``in_proj_ba`` the per-v-head write strength β and decay
    input a. q, k, v pass a depthwise causal conv (no bias) of ``conv_dim = 2·key_dim + value_dim``
    channels. Each v-head keeps a ``head_k_dim × head_v_dim`` state (k-heads are shared by
    ``num_v_heads / num_k_heads`` v-heads, like GQA); its output is RMS-normalised over
    ``head_v_dim``, gated by ``silu(z)`` and projected by ``out_proj``.

    ``split_in_proj`` (Qwen3.5): the same projections as four matrices, ``in_proj_qkv`` (q, k, v),
    ``in_proj_z``, ``in_proj_b`` and ``in_proj_a``, with the same parameters and FLOPs in total.
    ``separate_proj`` (OLMo Hybrid): six matrices, ``q_proj``, ``k_proj``, ``v_proj``, ``a_proj``,
    ``b_proj`` and ``g_proj`` (the output gate z), the norm ``o_norm`` and ``o_proj`` for ``out_proj``;
    the same parameters and FLOPs again (its β is doubled, ``linear_allow_neg_eigval``: numerics only).

    Per-sequence state (vLLM's ``gated_delta_net_state_shape``): the conv window
    ``conv_dim × (conv_kernel - 1)`` plus ``num_v_heads × head_k_dim × head_v_dim``. Under tensor
    parallelism the v-heads split ``tp`` ways.
    """

    hidden_size: int
    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int
    split_in_proj: bool = False
    separate_proj: bool = False
    ssm_state_dtype: str | None = None  # the delta-rule state's dtype where the engine fixes it (``recurrent_dtype``)

    kind = MixerKind.GATED_DELTANET
    title = "Gated DeltaNet"

    @property
    def key_dim(self) -> int:
        return self.num_k_heads * self.head_k_dim

    @property
    def value_dim(self) -> int:
        return self.num_v_heads * self.head_v_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    def in_projections(self) -> list[tuple[str, int]]:
        """(name, output rows) of the input projections: [q | k | v | z] and [b | a] (Qwen3-Next), or
        the four of them apart (Qwen3.5), or q, k, v, a, b, g apart (OLMo Hybrid)."""
        if self.separate_proj:
            return [("q_proj", self.key_dim), ("k_proj", self.key_dim), ("v_proj", self.value_dim),
                    ("a_proj", self.num_v_heads), ("b_proj", self.num_v_heads), ("g_proj", self.value_dim)]
        if self.split_in_proj:
            return [("in_proj_qkv", self.conv_dim), ("in_proj_z", self.value_dim), ("in_proj_b", self.num_v_heads),
                    ("in_proj_a", self.num_v_heads)]
        return [("in_proj_qkvz", 2 * self.key_dim + 2 * self.value_dim), ("in_proj_ba", 2 * self.num_v_heads)]

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        for name, rows in self.in_projections():
            _linear(out, f"{prefix}.{name}", rows, h, False)
        out.append(Tensor(f"{prefix}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "conv"))
        out.append(Tensor(f"{prefix}.dt_bias", (self.num_v_heads,), "other"))
        out.append(Tensor(f"{prefix}.A_log", (self.num_v_heads,), "other"))
        norm, proj = self.out_names()
        out.append(Tensor(f"{prefix}.{norm}.weight", (self.head_v_dim,), "norm"))
        _linear(out, f"{prefix}.{proj}", h, self.value_dim, False)
        return out

    def out_names(self) -> tuple[str, str]:
        """(gated norm, output projection) module names."""
        return ("o_norm", "o_proj") if self.separate_proj else ("norm", "out_proj")

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a = b.shape.tokens, b.a
        # in_proj_qkvz: h -> [q | k | v | z]: 2·n·h·(2·key_dim + 2·value_dim); in_proj_ba: h -> [b | a]
        # (Qwen3.5: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, the same rows in four matmuls)
        for name, _ in self.in_projections():
            b.matmul(name, tensors[name], i, "ssm")
        # conv1d + SiLU over q, k, v: 2·n·conv_dim·conv_kernel
        b.conv(i, "conv1d", self.conv_dim, self.conv_kernel, tensors["conv1d"], kernels=2)
        _, st = self.state_elements()
        rd, wr = b.state_io(st, self.recurrent_dtype(b.state))
        small = sum((tensors.get(k, []) for k in ("A_log", "dt_bias")), [])
        # gated delta rule, recurrent form, per token and v-head with state S (dk × dv): after the decay
        # S ← exp(g)·S (elementwise), kᵀS (dk·dv multiply-adds), S += k ⊗ β(v - kᵀS) (dk·dv), o = qᵀS
        # (dk·dv): 6·dk·dv FLOPs per v-head per token. Reads q, k, v (conv_dim) and a, b (2 per v-head),
        # q/k L2 norms and the gates g, β included; writes o (value_dim).
        b.add(name="delta_rule", kind=OpKind.SCAN, category="ssm", layer=i, flops=6 * n * st,
              weight_bytes=b.fmt.bytes_of(small), act_read_bytes=n * (self.conv_dim + 2 * self.num_v_heads) * a,
              act_write_bytes=n * self.value_dim * a, state_read_bytes=rd, state_write_bytes=wr, kernels=10)
        # RMSNorm over head_v_dim, times silu(z)
        norm, proj = self.out_names()
        b.gate(i, "gated_norm", self.value_dim, tensors.get(norm, []), kernels=7)
        # out_proj (OLMo Hybrid: o_proj): value_dim -> h
        b.matmul(proj, tensors[proj], i, "ssm", parallel=Parallel.ROW)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        return self.conv_dim * (self.conv_kernel - 1), self.num_v_heads * self.head_k_dim * self.head_v_dim

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_v_heads and self.num_v_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_v_heads} recurrent heads do not split {tp} ways (layer {layer})")
        return tp, 1
