"""Time of a traced step on a device: per-op roofline, plus kernel-launch overhead.

Model (stated in every output that uses it):

- each op takes ``max(flops / peak, bytes / bandwidth)`` on its own (``roofline``); ops run one after
  another, so a step's device time is the sum over ops (``device_s``);
- an eager (unfused, no CUDA graph) step cannot run an op faster than the host can launch its
  kernels: ``eager_s = Σ max(op time, kernels × launch overhead)``;
- a CUDA-graph step replays all kernels with one launch: ``graph_s = device_s + launch overhead``.

- a skinny matmul (``rows`` tokens against a weight) runs below the square-GEMM peak: when the profile
  has ``matmul_efficiency_by_rows`` (measured by ``planner calibrate``) and the caller gives the step's
  rows, ops of kind ``matmul`` use ``peak × efficiency(rows)`` for their compute time.

``compute_s`` and ``memory_s`` of the step are the sums of the ops' compute and memory times, so the
step's bound and its ratio ("memory-bound by 280×") compare the two totals.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from planner.analysis.records import frozen

from .roofline import effective_rates


class _OpLike(Protocol):
    flops: int
    kernels: int

    @property
    def bytes(self) -> int: ...


@frozen
class OpTime:
    compute_s: float
    memory_s: float
    time_s: float
    bound: str
    launch_s: float  # kernels × per-launch overhead


@frozen
class StepTime:
    compute_s: float
    memory_s: float
    device_s: float  # Σ per-op max(compute, memory)
    launch_s: float  # Σ kernels × launch overhead (what an eager step pays on the host)
    eager_s: float
    graph_s: float
    kernels: int
    bound: str
    ratio: float  # how strongly bound: max(compute, memory) / min(...)

    def time_s(self, graphs: bool = True) -> float:
        return self.graph_s if graphs else self.eager_s


def op_time(op: _OpLike, rates: tuple[float, float], launch_s: float, matmul_efficiency: float = 1.0) -> OpTime:
    flops_per_s, bytes_per_s = rates
    if getattr(op, "kind", None) == "matmul":
        flops_per_s *= matmul_efficiency
    c = op.flops / flops_per_s
    m = op.bytes / bytes_per_s
    return OpTime(c, m, max(c, m), "compute" if c > m else "memory", op.kernels * launch_s)


def step_time(ops: Iterable[_OpLike], profile, compute_dtype: str, *, use_efficiency: bool = True,
              counts: Sequence[int] | None = None, rows: int | None = None) -> tuple[StepTime, list[OpTime]]:
    """The step's time and each op's. ``counts``: how many times each op runs (the layer count of a
    collapsed step's ``OpGroup``); 1 each when not given. The per-op times are of one instance.
    ``rows``: the tokens each matmul of the step multiplies (batch × new tokens); with it, the
    profile's ``matmul_efficiency_by_rows`` applies to ``matmul`` ops (None: the square-GEMM peak)."""
    ops = list(ops)
    rates = effective_rates(profile, compute_dtype, use_efficiency=use_efficiency)
    launch = profile.kernel_launch_s
    mm_eff = profile.matmul_efficiency_at(rows) if use_efficiency and rows else 1.0
    times = [op_time(o, rates, launch, mm_eff) for o in ops]
    n = [1] * len(ops) if counts is None else list(counts)
    compute = sum(k * t.compute_s for k, t in zip(n, times))
    memory = sum(k * t.memory_s for k, t in zip(n, times))
    device = sum(k * t.time_s for k, t in zip(n, times))
    launch_total = sum(k * t.launch_s for k, t in zip(n, times))
    eager = sum(k * max(t.time_s, t.launch_s) for k, t in zip(n, times))
    kernels = sum(k * o.kernels for k, o in zip(n, ops))
    lo, hi = sorted((compute, memory))
    bound = "compute" if compute > memory else "memory"
    ratio = hi / lo if lo > 0 else float("inf")
    return StepTime(compute, memory, device, launch_total, eager, device + launch, kernels, bound, ratio), times


def groups_time(groups, profile, compute_dtype: str, **kw) -> tuple[StepTime, list[OpTime]]:
    """``step_time`` of a collapsed step (``analysis.trace.step_groups``): each group's op once,
    weighted by its layer count."""
    return step_time([g.op for g in groups], profile, compute_dtype, counts=[g.count for g in groups], **kw)
