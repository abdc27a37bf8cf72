"""Serving memory: what a deployment holds, whether it fits, and the largest batch or context that does.

A GPU's budget is its memory minus a runtime reserve (CUDA context, allocator slack, communication
buffers: the hardware profile's ``runtime_reserve``). Against it stand the weights (split over
tensor-parallel ranks), the KV cache and recurrent state of every sequence, and the largest
activation buffer of a decode step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Budget:
    gpus: int
    memory_bytes_per_gpu: int
    reserve_bytes_per_gpu: int

    @property
    def capacity_bytes(self) -> int:
        return self.gpus * self.memory_bytes_per_gpu

    @property
    def usable_bytes(self) -> int:
        return max(0, self.gpus * (self.memory_bytes_per_gpu - self.reserve_bytes_per_gpu))


@dataclass(frozen=True)
class Fit:
    needed_bytes: int
    usable_bytes: int
    fits: bool

    @property
    def headroom_bytes(self) -> int:
        return self.usable_bytes - self.needed_bytes


def fit(needed_bytes: int, budget: Budget) -> Fit:
    return Fit(needed_bytes, budget.usable_bytes, needed_bytes <= budget.usable_bytes)


def largest(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest n in [lo, hi] with fits(n) true, for a monotone predicate; lo-1 if none."""
    if not fits(lo):
        return lo - 1
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
