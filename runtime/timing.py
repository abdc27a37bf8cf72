"""Measuring decode steps: FLOPs counted by torch, step times, and where the time goes by op kind.

- ``count_flops``: ``torch.utils.flop_counter.FlopCounterMode`` over one call. Two kernels it has no
  formula for are given the formula of their math: the CPU SDPA kernel
  (``_scaled_dot_product_flash_attention_for_cpu``, counted as torch counts the CUDA SDPA kernels:
  ``2·b·h·s_q·s_k·(d_qk + d_v)``) and ``_grouped_mm`` (``2·M·K·N`` over the grouped rows).
- ``count_kernels``: the aten ops one call dispatches (``TorchDispatchMode``), the kernels an eager
  step launches one by one: ``calibrate`` divides a tiny decoder's step time by this count of it, and
  ``verify`` prices the real step's count at that cost.
- ``time_steps``: warm-up, then every step timed alone: CUDA events around a CUDA-graph replay (or an
  eager step) followed by a synchronise; ``perf_counter`` on CPU. The median is the result, the
  spread is the interquartile range.
- ``profile_kinds``: a few eager steps under ``torch.profiler`` with the model's ``planner::<kind>``
  ranges on (the op kinds of ``analysis.trace``), giving the time of each kind per step.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import torch

from . import model as _model

Progress = Callable[[str, int, int], None]


def _no_progress(phase: str, done: int, total: int) -> None:
    return None


# ---- FLOPs ---------------------------------------------------------------------------------------


def _flop_mapping() -> dict:
    from torch.utils.flop_counter import sdpa_flop_count

    aten = torch.ops.aten
    mapping = {}

    def sdpa_cpu(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query_shape, key_shape, value_shape)

    def grouped_mm(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
        if len(a_shape) == 2 and len(b_shape) == 3:  # (M, K) rows grouped over (E, K, N) weights
            return 2 * a_shape[0] * a_shape[1] * b_shape[2]
        if len(a_shape) == 3 and len(b_shape) == 3:  # batched
            return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]
        if len(a_shape) == 2 and len(b_shape) == 2:  # groups along K or M: every product once
            return 2 * a_shape[0] * a_shape[1] * b_shape[1]
        return 2 * a_shape[-2] * a_shape[-1] * b_shape[-1] * (a_shape[0] if len(a_shape) == 3 else 1)

    for name, fn in (("_scaled_dot_product_flash_attention_for_cpu", sdpa_cpu), ("_grouped_mm", grouped_mm)):
        op = getattr(aten, name, None)
        if op is not None:
            mapping[op] = fn
    return mapping


def count_flops(fn: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """(total FLOPs, FLOPs by aten op) of one call of ``fn``, counted by ``FlopCounterMode``."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=_flop_mapping()) as counter:
        fn()
    by_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), by_op


def count_kernels(fn: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """(aten ops, count by op) that one call of ``fn`` dispatches below autograd: every op the eager
    runtime sends through the dispatcher one at a time (views and copies included: each costs a
    dispatch), as ``TorchDispatchMode`` sees them."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    class _Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: Counter = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[str(func.overloadpacket)] += 1
            return func(*args, **(kwargs or {}))

    with _Count() as mode:
        fn()
    return sum(mode.ops.values()), dict(mode.ops)


# ---- step times ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepTimes:
    samples_s: tuple[float, ...]
    graphs: bool
    warmup: int
    note: str = ""

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def max_s(self) -> float:
        return max(self.samples_s)

    @property
    def spread_s(self) -> float:
        """Interquartile range of the samples (0 with fewer than 4)."""
        if len(self.samples_s) < 4:
            return self.max_s - self.min_s
        q = statistics.quantiles(self.samples_s, n=4, method="inclusive")
        return q[2] - q[0]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def capture_graph(step: Callable[[], object], device: torch.device):
    """A CUDA graph of ``step`` (warmed up on a side stream first, as CUDA graphs require)."""
    s = torch.cuda.Stream(device)
    s.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(s):
        for _ in range(2):
            step()
    torch.cuda.current_stream(device).wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    synchronize(device)
    return graph


def time_steps(step: Callable[[], object], device: torch.device, *, steps: int, warmup: int, graphs: bool,
               progress: Progress = _no_progress, phase: str = "timing") -> StepTimes:
    """Median-ready samples of ``steps`` calls of ``step`` after ``warmup`` calls; with ``graphs`` (CUDA
    only) each call is a replay of one captured graph."""
    device = torch.device(device)
    use_graph = graphs and device.type == "cuda"
    run = step
    note = ""
    if use_graph:
        try:
            graph = capture_graph(step, device)
            run = graph.replay
        except RuntimeError as exc:  # a host sync in the step (e.g. the MoE expert loop): time it eagerly
            use_graph = False
            note = f"CUDA-graph capture failed ({str(exc).splitlines()[0][:120]}); eager steps were timed"
            synchronize(device)
    for i in range(warmup):
        run()
        synchronize(device)
        progress("warm-up", i + 1, warmup)
    samples = timed_samples(run, device, steps, progress=lambda i: progress(phase, i, steps))
    return StepTimes(tuple(samples), use_graph, warmup, note)


def timed_samples(run: Callable[[], object], device: torch.device, n: int, *, wall: bool = False,
                  progress: Callable[[int], None] | None = None) -> list[float]:
    """Seconds of each of ``n`` calls of ``run``, timed alone: CUDA events around the call on CUDA
    (the device's time), ``perf_counter`` otherwise or with ``wall`` (then ``run`` synchronises itself
    where it must). ``progress(i)`` after the ``i``-th call."""
    samples = []
    if device.type == "cuda" and not wall:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(n):
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
            if progress:
                progress(i + 1)
    else:
        for i in range(n):
            t0 = time.perf_counter()
            run()
            samples.append(time.perf_counter() - t0)
            if progress:
                progress(i + 1)
    return samples


# ---- time by op kind -----------------------------------------------------------------------------


@contextmanager
def quiet_stderr():
    """Silence file descriptor 2 (Kineto prints USDT lines from C++ when a profile starts and stops)."""
    try:
        sys.stderr.flush()
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    os.dup2(null, 2)
    try:
        yield
    finally:
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError, TypeError):
            pass
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def profile_kinds(step: Callable[[], object], device: torch.device, *, steps: int = 3) -> tuple[dict[str, float], float]:
    """(seconds per step of each trace op kind, wall seconds per profiled step), from eager steps under
    ``torch.profiler``: device time of the kernels under each ``planner::<kind>`` range on CUDA, the
    range's wall time on CPU. Profiling slows a step; use the shares, not the absolute times."""
    from torch.profiler import ProfilerActivity, profile

    device = torch.device(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    step()
    synchronize(device)
    _model._REGIONS["on"] = True
    try:
        with quiet_stderr(), profile(activities=activities) as prof:
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            synchronize(device)
            wall = (time.perf_counter() - t0) / steps
    finally:
        _model._REGIONS["on"] = False
    out: dict[str, float] = {}
    for evt in prof.key_averages():
        if not evt.key.startswith("planner::"):
            continue
        kind = evt.key.split("::", 1)[1]
        us = getattr(evt, "device_time_total", 0.0) if device.type == "cuda" else evt.cpu_time_total
        if device.type == "cuda" and not us:
            us = evt.cpu_time_total
        out[kind] = out.get(kind, 0.0) + us / 1e6 / steps
    return out, wall
