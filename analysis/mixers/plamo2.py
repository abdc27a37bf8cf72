"""PLaMo-2's Mamba mixer (Preferred Networks' ``plamo2``, remote code: the hub's modeling_plamo.py ``Mamba``;
vLLM ``Plamo2MambaMixer``, vllm/model_executor/models/plamo2.py): a Mamba-1-style projection path feeding a
Mamba-2 (SSD) scan (the protocol: ``analysis.mixers.base``).

- ``in_proj``: hidden -> ``[z | x]`` (2·d_inner, no bias; stored interleaved per head in the checkpoint, which vLLM
  reorders on load), d_inner = ``mamba_num_heads · hidden_size_per_head``;
- ``conv1d``: a depthwise causal conv over the d_inner x channels only (no bias, B and C are not convolved);
- ``bcdt_proj``: d_inner -> ``[B (N) | C (N) | dt (dt_dim)]`` (one group: B and C shared by every head), dt_dim =
  ``max(64, hidden_size // 16)``; then weighted RMSNorms over dt, B and C (``dt_norm_weight``, ``B_norm_weight``,
  ``C_norm_weight``); ``dt_proj``: dt_dim -> num_heads (no bias);
- the scan keeps ``num_heads × head_dim × N`` state per sequence (``dt_bias``, ``A_log``, ``D`` per head); the output
  is gated ``y · silu(z)`` (no gated norm) and ``out_proj`` maps d_inner back to hidden.

Per-sequence state, vLLM's (``MambaStateShapeCalculator.mamba2_state_shape`` with ``n_groups=0``): the conv window of
``d_conv - 1`` inputs of the d_inner channels, plus the scan state. Under tensor parallelism vLLM's ``bcdt_proj`` is
row-parallel (its d_inner input is split, its output all-reduced): two all-reduces per layer.
"""

from __future__ import annotations

from dataclasses import replace

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .mamba import Mamba


@frozen
class Plamo2Mamba(Mamba):
    """PLaMo-2's Mamba (see the module doc). Fields as ``Mamba``'s: ``intermediate_size`` d_inner, ``num_heads`` /
    ``head_dim`` the scan's heads, ``dt_rank`` the dt_dim of ``bcdt_proj``; one group of B and C, no biases."""

    title = "PLaMo-2 Mamba"
    tp_allreduces = 2  # bcdt_proj (row-parallel in vLLM) and out_proj

    @property
    def conv_dim(self) -> int:
        return self.intermediate_size

    @property
    def in_proj_dim(self) -> int:
        return 2 * self.intermediate_size

    @property
    def bcdt_dim(self) -> int:
        return 2 * self.state_size + self.dt_rank

    @property
    def scan_inputs_per_token(self) -> int:
        """x (d_inner), B and C (N each, shared by the heads) and dt (one per head)."""
        return self.intermediate_size + 2 * self.state_size + self.num_heads

    def summary(self) -> str:
        return f"PLaMo-2 Mamba (state {self.state_size})"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, d, nh = self.hidden_size, self.intermediate_size, self.num_heads
        _linear(out, f"{prefix}.in_proj", self.in_proj_dim, h, False)
        out.append(Tensor(f"{prefix}.conv1d.weight", (d, 1, self.conv_kernel), "conv"))
        _linear(out, f"{prefix}.bcdt_proj", self.bcdt_dim, d, False)
        _linear(out, f"{prefix}.dt_proj", nh, self.dt_rank, False)
        out.append(Tensor(f"{prefix}.dt_bias", (nh,), "other"))
        out.append(Tensor(f"{prefix}.A_log", (nh,), "other"))
        out.append(Tensor(f"{prefix}.D", (nh,), "other"))
        out.append(Tensor(f"{prefix}.dt_norm_weight", (self.dt_rank,), "norm"))
        out.append(Tensor(f"{prefix}.B_norm_weight", (self.state_size,), "norm"))
        out.append(Tensor(f"{prefix}.C_norm_weight", (self.state_size,), "norm"))
        _linear(out, f"{prefix}.out_proj", h, d, False)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a = b.shape.tokens, b.a
        d, bc = self.intermediate_size, self.bcdt_dim
        # in_proj: h -> [z | x]: 2·n·h·2·d_inner
        b.matmul("in_proj", tensors["in_proj"], i, "ssm")
        # conv1d + SiLU over x: 2·n·d_inner·d_conv
        b.conv(i, "conv1d", d, self.conv_kernel, tensors["conv1d"], kernels=2)
        # bcdt_proj: d_inner -> [B | C | dt]: 2·n·d_inner·(2N + dt_dim); row-parallel in vLLM (all-reduced)
        b.matmul("bcdt_proj", tensors["bcdt_proj"], i, "ssm", parallel=Parallel.ROW)
        b.ops[-1] = replace(b.ops[-1], act_read_bytes=n * d * a, act_write_bytes=n * bc * a)
        # RMSNorms (with weights) over dt, B and C
        norms = sum((tensors.get(k, []) for k in ("dt_norm_weight", "B_norm_weight", "C_norm_weight")), [])
        b.add(name="dt_bc_norm", kind=OpKind.NORM, category="ssm", layer=i, weight_bytes=b.fmt.bytes_of(norms),
              act_read_bytes=n * bc * a, act_write_bytes=n * bc * a, kernels=3 * 6)
        # dt_proj: dt_dim -> heads: 2·n·dt_dim·heads
        b.matmul("dt_proj", tensors["dt_proj"], i, "ssm")
        b.ops[-1] = replace(b.ops[-1], act_read_bytes=n * self.dt_rank * a, act_write_bytes=n * self.num_heads * a)
        _, ssm_elems = self.state_elements()
        rd, wr = b.state_io(ssm_elems)
        small = sum((tensors.get(k, []) for k in ("A_log", "D", "dt_bias")), [])
        # the SSD scan, recurrent form: 4 FLOPs per state element (heads·head_dim·N) per token, as Mamba-2's
        b.add(name="ssm_scan", kind=OpKind.SCAN, category="ssm", layer=i, flops=4 * n * ssm_elems,
              weight_bytes=b.fmt.bytes_of(small), act_read_bytes=n * self.scan_inputs_per_token * a,
              act_write_bytes=n * d * a, state_read_bytes=rd, state_write_bytes=wr, kernels=8)
        b.gate(i, "gate", d, [], kernels=2)  # y · silu(z)
        # out_proj: d_inner -> h: 2·n·d_inner·h
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    # ---- state -----------------------------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(conv window of the d_inner x channels, scan state heads·head_dim·N) per sequence."""
        return self.intermediate_size * (self.conv_kernel - 1), self.num_heads * self.head_dim * self.state_size
