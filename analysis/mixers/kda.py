"""Kimi Delta Attention as Ling 3 (``bailing_hybrid``) and Kimi Linear (``kimi_linear``) build it: the spec,
its tensors, trace and per-sequence state (the protocol: ``analysis.mixers.base``; the trace conventions of
recurrent mixers: ``analysis.trace``, "recurrent mixers").

The two layouts differ in their gates only: Ling 3's are full rank (``f_proj``, ``g_proj``), Kimi Linear's
low rank (``f_a_proj``/``f_b_proj``, ``g_a_proj``/``g_b_proj`` through ``gate_rank``)."""

from __future__ import annotations

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind
from .deltanet import GatedDeltaNet


@frozen
class KimiDeltaAttention(GatedDeltaNet):
    """Kimi Delta Attention (transformers' ``BailingHybridDeltaAttention``): the gated delta rule with a
    decay per channel instead of per head.

    ``q_proj``, ``k_proj``, ``v_proj`` (hidden -> H·d each) pass one depthwise causal conv (no bias, SiLU)
    over their ``3·H·d`` channels; ``forget_gate``: ``f_proj`` (hidden -> H·d) plus ``dt_bias`` (H·d), times
    ``exp(A_log)`` (H), bounded by a sigmoid, is the per-channel log decay; ``b_proj`` (hidden -> H) the
    write strength β; each head keeps a ``d × d`` state; its output is RMS-normalised over d (``o_norm``),
    gated by ``g_proj`` (hidden -> H·d) and projected by ``o_proj``. Heads: ``num_k_heads`` =
    ``num_v_heads`` = H, ``head_k_dim`` = ``head_v_dim`` = d.

    ``gate_rank`` (Kimi Linear, transformers' ``KimiLinearDeltaAttention``; 0: Ling 3): both gates low rank,
    ``forget_gate.f_a_proj`` (hidden -> gate_rank) then ``forget_gate.f_b_proj`` (gate_rank -> H·d), and
    ``g_a_proj`` / ``g_b_proj`` alike (transformers sets gate_rank = d); the decay is
    ``-exp(A_log)·softplus(f + dt_bias)``, unbounded. The checkpoint stores q/k/v's conv as three
    ``(H·d, 1, kernel)`` tensors (``q_conv1d`` ...) that transformers concatenates into ``conv1d``, and the
    forget gate's tensors on the layer (``self_attn.f_a_proj`` ...): the same elements. vLLM keeps the
    low-rank down projections whole on every rank (``ReplicatedLinear``).

    Per-sequence state: the conv window ``3·H·d × (conv_kernel - 1)`` plus ``H × d × d`` (as Gated
    DeltaNet's), the latter in fp32 whatever the model dtype (vLLM's ``MambaStateDtypeCalculator.kda_state_dtype``:
    the conv windows in the cache dtype, the recurrent state ``torch.float32``; fla's kernels return it in fp32 to
    transformers too); under tensor parallelism the heads split ``tp`` ways.
    """

    gate_rank: int = 0
    ssm_state_dtype: str | None = "fp32"
    # Kimi K3 (linear_attn_config.use_full_rank_gate): the forget gate low rank (gate_rank) but the output gate one
    # full-rank ``g_proj`` (hidden -> H·d); and ``A_log`` stored at this length (K3: head_dim, zero-padded past the
    # heads; SGLang's kimi_k3.py narrows it on load). 0: num_v_heads
    full_rank_output_gate: bool = False
    a_log_size: int = 0

    kind = MixerKind.KDA
    title = "Kimi Delta Attention"
    module = "self_attn"
    tp_replicated_modules = ("f_a_proj", "g_a_proj")

    @property
    def low_rank_output_gate(self) -> bool:
        """The output gate through g_a_proj / g_b_proj (Kimi Linear), not one full-rank g_proj (Kimi K3)."""
        return bool(self.gate_rank) and not self.full_rank_output_gate

    def in_projections(self) -> list[tuple[str, int]]:
        gate = [] if self.low_rank_output_gate else [("g_proj", self.value_dim)]
        return [("q_proj", self.key_dim), ("k_proj", self.key_dim), ("v_proj", self.value_dim),
                ("b_proj", self.num_v_heads)] + gate

    def summary(self) -> str:
        return f"Kimi Delta Attention ({self.num_v_heads} heads of {self.head_k_dim})"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        for name, rows in self.in_projections():
            _linear(out, f"{prefix}.{name}", rows, h, False)
        out.append(Tensor(f"{prefix}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "conv"))
        out.append(Tensor(f"{prefix}.forget_gate.A_log", (self.a_log_size or self.num_v_heads,), "other"))
        out.append(Tensor(f"{prefix}.forget_gate.dt_bias", (self.key_dim,), "other"))
        if self.gate_rank:
            r = self.gate_rank
            _linear(out, f"{prefix}.forget_gate.f_a_proj", r, h, False)
            _linear(out, f"{prefix}.forget_gate.f_b_proj", self.key_dim, r, False)
            if self.low_rank_output_gate:
                _linear(out, f"{prefix}.g_a_proj", r, h, False)
                _linear(out, f"{prefix}.g_b_proj", self.value_dim, r, False)
        else:
            _linear(out, f"{prefix}.forget_gate.f_proj", self.key_dim, h, False)
        out.append(Tensor(f"{prefix}.o_norm.weight", (self.head_v_dim,), "norm"))
        _linear(out, f"{prefix}.o_proj", h, self.value_dim, False)
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a = b.shape.tokens, b.a
        for name in ("q_proj", "k_proj", "v_proj"):
            b.matmul(name, tensors[name], i, "ssm")
        # conv1d + SiLU over q, k, v: 2·n·conv_dim·conv_kernel
        b.conv(i, "conv1d", self.conv_dim, self.conv_kernel, tensors["conv1d"], kernels=2)
        gate = tensors["forget_gate"]
        mats = ("f_a_proj", "f_b_proj") if self.gate_rank else ("f_proj",)
        for name in mats:  # Kimi Linear: the rank-gate_rank down projection whole on every rank
            b.matmul(name, [t for t in gate if f".{name}." in t.name], i, "ssm",
                     **({"parallel": Parallel.REPLICATED} if name == "f_a_proj" else {}))
        b.matmul("b_proj", tensors["b_proj"], i, "ssm")
        _, st = self.state_elements()
        rd, wr = b.state_io(st, self.recurrent_dtype(b.state))
        small = [t for t in gate if not any(f".{name}." in t.name for name in mats)]  # A_log, dt_bias
        # the delta rule with a per-channel decay, recurrent form, per token and head with state S (d × d):
        # S ← diag(exp(g))·S, kᵀS, S += k ⊗ β(v - kᵀS), o = qᵀS: 6·d·d FLOPs per head per token. Reads q, k, v
        # (conv_dim), the decay input f (H·d) and β (H), the gate's bound and q/k L2 norms included; writes o
        b.add(name="delta_rule", kind=OpKind.SCAN, category="ssm", layer=i, flops=6 * n * st,
              weight_bytes=b.fmt.bytes_of(small),
              act_read_bytes=n * (self.conv_dim + self.key_dim + self.num_v_heads) * a,
              act_write_bytes=n * self.value_dim * a, state_read_bytes=rd, state_write_bytes=wr, kernels=10)
        if self.low_rank_output_gate:
            b.matmul("g_a_proj", tensors["g_a_proj"], i, "ssm", parallel=Parallel.REPLICATED)
            b.matmul("g_b_proj", tensors["g_b_proj"], i, "ssm")
        else:
            b.matmul("g_proj", tensors["g_proj"], i, "ssm")
        # RMSNorm over d, times the output gate
        b.gate(i, "gated_norm", self.value_dim, tensors.get("o_norm", []), kernels=7)
        b.matmul("o_proj", tensors["o_proj"], i, "ssm", parallel=Parallel.ROW)
