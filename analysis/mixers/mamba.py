"""Mamba-1 and Mamba-2 selective state-space mixers: the spec, its tensors, trace, per-sequence state
and tensor-parallel split (the protocol: ``analysis.mixers.base``; the trace conventions of recurrent
mixers: ``analysis.trace``, "recurrent mixers")."""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class Mamba(MixerSpec):
    """A Mamba-2 (``version=2``) or Mamba-1 (``version=1``) selective state-space mixer.

    Mamba-2 (mamba2, Nemotron-H, Bamba, Granite-4 hybrid, Falcon-H1): ``in_proj`` maps the hidden
    state to ``[z (d_inner) | x (d_inner) | B (groups·N) | C (groups·N) | dt (heads)]``; x, B and C
    go through a depthwise causal conv of ``conv_dim = d_inner + 2·groups·N`` channels; the scan keeps
    ``num_heads × head_dim × state_size`` state; then a gated RMSNorm over ``norm_groups`` groups
    (``gated_norm``) or a bare ``y·silu(z)`` gate, and ``out_proj``.

    Mamba-1 (mamba, falcon_mamba, Jamba): ``in_proj`` to ``[x | z]`` (2·d_inner); conv over d_inner
    channels; ``x_proj`` to ``[dt (dt_rank) | B (N) | C (N)]``, ``dt_proj`` back to d_inner; the scan
    keeps ``d_inner × state_size`` state. Jamba RMS-normalises dt, B and C with weights
    (``dt_layernorms``), Falcon-Mamba without (``bcdt_rms``).

    Tensor names are transformers' except the gated norm, ``gated_norm`` here (``norm`` there), which
    would otherwise collide with the Nemotron-H / mamba2 block norm ``norm`` when the trace groups a
    layer's tensors by module name.

    Per-sequence state, vLLM's convention (``MambaStateShapeCalculator``): the conv window of the
    ``conv_kernel - 1`` previous inputs of every conv channel (the current input is not kept), plus
    the SSM state above. Under tensor parallelism the heads (Mamba-2) split ``tp`` ways.
    """

    hidden_size: int
    version: int
    intermediate_size: int  # d_inner; Mamba-2: num_heads * head_dim
    state_size: int
    conv_kernel: int
    num_heads: int = 0  # Mamba-2
    head_dim: int = 0  # Mamba-2
    n_groups: int = 1  # Mamba-2: groups of B and C
    dt_rank: int = 0  # Mamba-1
    conv_bias: bool = True
    proj_bias: bool = False  # in_proj bias (and out_proj's unless out_proj_bias says otherwise)
    out_proj_bias: bool | None = None  # Falcon-H1: projectors_bias; None: same as proj_bias
    gated_norm: bool = True  # Mamba-2: RMSNormGated over intermediate_size (else a bare SiLU gate)
    norm_groups: int = 1
    dt_layernorms: bool = False  # Jamba: RMSNorms (with weights) over dt, B and C
    bcdt_rms: bool = False  # Falcon-Mamba: weightless RMSNorms over dt, B and C
    chunk_size: int = 256
    # Zamba: Mamba-1 over ``num_heads`` heads of d_inner / num_heads channels, each with its own x_proj and
    # dt_proj, stored stacked: x_proj_weight (heads, dt_rank + 2N, head_dim), dt_proj_weight (heads, head_dim,
    # dt_rank), dt_proj_bias, A_log and D per (head, channel). The same elements and multiply-adds as one
    # x_proj / dt_proj over d_inner; B and C are per head
    head_stacked: bool = False
    ssm_state_dtype: str | None = None  # the SSM state's dtype where the engine fixes it (``recurrent_dtype``)

    kind = MixerKind.MAMBA
    title = "Mamba"

    @property
    def conv_dim(self) -> int:
        if self.version == 1:
            return self.intermediate_size
        return self.intermediate_size + 2 * self.n_groups * self.state_size

    @property
    def in_proj_dim(self) -> int:
        if self.version == 1:
            return 2 * self.intermediate_size
        return self.intermediate_size + self.conv_dim + self.num_heads

    @property
    def scan_inputs_per_token(self) -> int:
        """Elements the scan reads per token: Mamba-2 x, B, C (the conv output) and dt (one per head);
        Mamba-1 x, dt (d_inner each, dt after dt_proj), B and C."""
        if self.version == 1:
            return 2 * self.intermediate_size + 2 * self.state_size * (self.num_heads if self.head_stacked else 1)
        return self.conv_dim + self.num_heads

    def summary(self) -> str:
        return f"Mamba-{self.version} (state {self.state_size})"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, d = self.hidden_size, self.intermediate_size
        _linear(out, f"{prefix}.in_proj", self.in_proj_dim, h, self.proj_bias)
        out.append(Tensor(f"{prefix}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "conv"))
        if self.conv_bias:
            out.append(Tensor(f"{prefix}.conv1d.bias", (self.conv_dim,), "bias"))
        if self.version == 1 and self.head_stacked:
            nh, hd, r = self.num_heads, d // self.num_heads, self.dt_rank
            out.append(Tensor(f"{prefix}.x_proj_weight", (nh, r + 2 * self.state_size, hd), "linear"))
            out.append(Tensor(f"{prefix}.dt_proj_weight", (nh, hd, r), "linear"))
            out.append(Tensor(f"{prefix}.dt_proj_bias", (nh, hd), "bias"))
            out.append(Tensor(f"{prefix}.A_log", (nh, hd, self.state_size), "other"))
            out.append(Tensor(f"{prefix}.D", (nh, hd), "other"))
        elif self.version == 1:
            _linear(out, f"{prefix}.x_proj", self.dt_rank + 2 * self.state_size, d, False)
            _linear(out, f"{prefix}.dt_proj", d, self.dt_rank, True)
            out.append(Tensor(f"{prefix}.A_log", (d, self.state_size), "other"))
            out.append(Tensor(f"{prefix}.D", (d,), "other"))
            if self.dt_layernorms:
                out.append(Tensor(f"{prefix}.dt_layernorm.weight", (self.dt_rank,), "norm"))
                out.append(Tensor(f"{prefix}.b_layernorm.weight", (self.state_size,), "norm"))
                out.append(Tensor(f"{prefix}.c_layernorm.weight", (self.state_size,), "norm"))
        else:
            out.append(Tensor(f"{prefix}.dt_bias", (self.num_heads,), "other"))
            out.append(Tensor(f"{prefix}.A_log", (self.num_heads,), "other"))
            out.append(Tensor(f"{prefix}.D", (self.num_heads,), "other"))
            if self.gated_norm:  # transformers: mixer.norm (renamed: the block's own norm is `norm`)
                out.append(Tensor(f"{prefix}.gated_norm.weight", (d,), "norm"))
        out_bias = self.proj_bias if self.out_proj_bias is None else self.out_proj_bias
        _linear(out, f"{prefix}.out_proj", h, d, out_bias)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a = b.shape.tokens, b.a
        d, ns = self.intermediate_size, self.state_size
        # in_proj: h -> [z | x | B | C | dt] (Mamba-2) or [x | z] (Mamba-1): 2·n·h·in_proj_dim
        b.matmul("in_proj", tensors["in_proj"], i, "ssm")
        # conv1d + SiLU over x (Mamba-1) or x, B, C (Mamba-2): 2·n·conv_dim·conv_kernel
        b.conv(i, "conv1d", self.conv_dim, self.conv_kernel, tensors["conv1d"], kernels=2)
        if self.version == 1:
            # x_proj: d_inner -> [dt (dt_rank) | B (N) | C (N)]: 2·n·d_inner·(dt_rank + 2N)
            # (Zamba: per head, head_dim -> dt_rank + 2N: the same multiply-adds, heads x the outputs)
            per_head = self.num_heads if self.head_stacked else 1
            x_out = per_head * (self.dt_rank + 2 * ns)
            b.matmul("x_proj", tensors["x_proj_weight" if self.head_stacked else "x_proj"], i, "ssm")
            b.ops[-1] = replace(b.ops[-1], act_read_bytes=n * d * a, act_write_bytes=n * x_out * a)
            if self.dt_layernorms or self.bcdt_rms:
                # RMSNorms over dt, B and C (Jamba with weights, Falcon-Mamba without)
                dims = self.dt_rank + 2 * ns
                norms = sum((tensors.get(k, []) for k in ("dt_layernorm", "b_layernorm", "c_layernorm")), [])
                b.add(name="dt_bc_norm", kind=OpKind.NORM, category="ssm", layer=i,
                      weight_bytes=b.fmt.bytes_of(norms), act_read_bytes=n * dims * a,
                      act_write_bytes=n * dims * a, kernels=3 * 6)
            # dt_proj: dt_rank -> d_inner (with bias): 2·n·dt_rank·d_inner (Zamba: per head, dt_rank -> head_dim)
            dt = tensors["dt_proj_weight"] + tensors["dt_proj_bias"] if self.head_stacked else tensors["dt_proj"]
            b.matmul("dt_proj", dt, i, "ssm")
            b.ops[-1] = replace(b.ops[-1], act_read_bytes=n * per_head * self.dt_rank * a, act_write_bytes=n * d * a)
        _, ssm_elems = self.state_elements()
        rd, wr = b.state_io(ssm_elems, self.recurrent_dtype(b.state))
        small = sum((tensors.get(k, []) for k in ("A_log", "D", "dt_bias")), [])
        # selective scan, recurrent form, per token and state element (Mamba-2: heads·head_dim·N,
        # Mamba-1: d_inner·N): h = exp(dt·A)·h + (dt·B)·x is one multiply-add (the outer product),
        # y = C·h another: 4 FLOPs per state element per token (the decay and the D·x skip are
        # elementwise). Reads x, B, C and dt (``scan_inputs_per_token``), writes y (d_inner).
        b.add(name="ssm_scan", kind=OpKind.SCAN, category="ssm", layer=i, flops=4 * n * ssm_elems,
              weight_bytes=b.fmt.bytes_of(small), act_read_bytes=n * self.scan_inputs_per_token * a,
              act_write_bytes=n * d * a, state_read_bytes=rd, state_write_bytes=wr, kernels=8)
        if self.version == 2 and self.gated_norm:
            # RMSNormGated: norm(y · silu(z)) over norm_groups groups of d_inner
            b.gate(i, "gated_norm", d, tensors.get("gated_norm", []), kernels=7)
        else:
            b.gate(i, "gate", d, [], kernels=2)  # y · silu(z)
        # out_proj: d_inner -> h: 2·n·d_inner·h
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(conv state, ssm state) elements per sequence."""
        conv = self.conv_dim * (self.conv_kernel - 1)
        if self.version == 1:
            return conv, self.intermediate_size * self.state_size
        return conv, self.num_heads * self.head_dim * self.state_size

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_heads and self.num_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_heads} recurrent heads do not split {tp} ways (layer {layer})")
        return tp, 1
