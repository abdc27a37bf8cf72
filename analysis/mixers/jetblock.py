"""JetBlock, Jet-Nemotron's linear attention (NVlabs/Jet-Nemotron ``jetai/modeling/hf/jet_block.py`` and
``dynamic_conv.py``): the spec, its tensors, trace and per-sequence state (the protocol:
``analysis.mixers.base``; the trace conventions of recurrent mixers: ``analysis.trace``, "recurrent mixers")."""

from __future__ import annotations

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind
from .deltanet import GatedDeltaNet


@frozen
class JetBlock(GatedDeltaNet):
    """JetBlock: the gated delta rule (fla's ``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule``,
    q/k L2-normalised in the kernel) whose values pass a *dynamic* causal convolution.

    ``q_proj``, ``k_proj`` (hidden -> H·dk, SiLU), ``v_proj`` (hidden -> H·dv), ``b_proj`` (hidden -> H, β) and
    ``a_proj`` (hidden -> H, the decay input, with ``A_log`` and ``dt_bias`` per head), no biases. Only v is
    convolved: ``dynamic_conv1d`` (``DynamicShortConvolution``) generates a depthwise kernel per token and
    channel from the layer input, ``kernel_generator.w1`` (hidden -> H·dv / reduction, no bias), SiLU,
    ``kernel_generator.w2`` (-> H·dv · conv_size, with bias, the static kernel), then SiLU after the taps. Each
    head keeps a ``dk × dv`` state; its output is RMS-normalised over dv (``o_norm``), gated by
    ``silu(g_proj(x))`` (hidden -> H·dv) and projected by ``o_proj``. ``num_k_heads`` = ``num_v_heads`` = H.

    Per-sequence state, as the reference code keeps it (``JetNemotronCache``): the conv cache
    ``H·dv × conv_size`` (``x.new_zeros(N, D, W)``: the whole kernel width, rolled in place each step) plus
    ``H × dk × dv``. Under tensor parallelism the heads split ``tp`` ways.
    """

    generator_reduction: int = 8

    kind = MixerKind.JET_BLOCK
    title = "JetBlock"
    module = "self_attn"

    @property
    def conv_dim(self) -> int:
        return self.value_dim  # only v is convolved

    @property
    def generator_dim(self) -> int:
        return self.value_dim // self.generator_reduction

    def in_projections(self) -> list[tuple[str, int]]:
        return [("q_proj", self.key_dim), ("k_proj", self.key_dim), ("v_proj", self.value_dim),
                ("b_proj", self.num_v_heads), ("a_proj", self.num_v_heads)]

    def summary(self) -> str:
        return f"JetBlock ({self.num_v_heads} heads of {self.head_k_dim}/{self.head_v_dim}, dynamic conv)"

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h = self.hidden_size
        for name, rows in self.in_projections():
            _linear(out, f"{prefix}.{name}", rows, h, False)
        out.append(Tensor(f"{prefix}.A_log", (self.num_v_heads,), "other"))
        out.append(Tensor(f"{prefix}.dt_bias", (self.num_v_heads,), "other"))
        gen = f"{prefix}.dynamic_conv1d.kernel_generator"
        _linear(out, f"{gen}.w1", self.generator_dim, h, False)
        _linear(out, f"{gen}.w2", self.value_dim * self.conv_kernel, self.generator_dim, True)
        _linear(out, f"{prefix}.g_proj", self.value_dim, h, False)
        out.append(Tensor(f"{prefix}.o_norm.weight", (self.head_v_dim,), "norm"))
        _linear(out, f"{prefix}.o_proj", h, self.value_dim, False)
        return out

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a = b.shape.tokens, b.a
        for name, _ in self.in_projections():
            b.matmul(name, tensors[name], i, "ssm")
        gen = tensors["dynamic_conv1d"]
        # the kernel generator: w1 (h -> value_dim / reduction), SiLU, w2 (-> value_dim · conv_size, biased)
        b.matmul("kernel_generator.w1", [t for t in gen if ".w1." in t.name], i, "ssm")
        b.matmul("kernel_generator.w2", [t for t in gen if ".w2." in t.name], i, "ssm")
        # the taps: each of value_dim outputs is conv_size multiply-adds with its own per-token kernel
        # (2·n·value_dim·conv_size), reads v and the kernels, writes v; SiLU after. The cache holds the
        # whole kernel width per channel.
        conv_state, st = self.state_elements()
        crd, cwr = b.state_io(conv_state)
        b.add(name="dynamic_conv", kind=OpKind.CONV, category="ssm", layer=i,
              flops=2 * n * self.value_dim * self.conv_kernel, weight_bytes=0,
              act_read_bytes=n * self.value_dim * (1 + self.conv_kernel) * a,
              act_write_bytes=n * self.value_dim * a, state_read_bytes=crd, state_write_bytes=cwr, kernels=2)
        rd, wr = b.state_io(st)
        small = sum((tensors.get(k, []) for k in ("A_log", "dt_bias")), [])
        # gated delta rule, recurrent form, per token and head with state S (dk × dv): S ← exp(g)·S,
        # kᵀS, S += k ⊗ β(v - kᵀS), o = qᵀS: 6·dk·dv FLOPs per head per token. Reads q, k (key_dim each),
        # v (value_dim), a and b (H each); writes o (value_dim).
        b.add(name="delta_rule", kind=OpKind.SCAN, category="ssm", layer=i, flops=6 * n * st,
              weight_bytes=b.fmt.bytes_of(small),
              act_read_bytes=n * (2 * self.key_dim + self.value_dim + 2 * self.num_v_heads) * a,
              act_write_bytes=n * self.value_dim * a, state_read_bytes=rd, state_write_bytes=wr, kernels=10)
        b.matmul("g_proj", tensors["g_proj"], i, "ssm")
        # RMSNorm over dv, times silu(g)
        b.gate(i, "gated_norm", self.value_dim, tensors.get("o_norm", []), kernels=7)
        b.matmul("o_proj", tensors["o_proj"], i, "ssm", parallel=Parallel.ROW)

    def state_elements(self) -> tuple[int, int]:
        return self.value_dim * self.conv_kernel, self.num_v_heads * self.head_k_dim * self.head_v_dim
