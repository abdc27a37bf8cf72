"""Roofline timing: the time of some work on one device is bounded by its compute or its memory traffic.

    compute_s = flops  / (peak FLOP/s of the compute dtype  x compute_efficiency)
    memory_s  = nbytes / (peak DRAM bandwidth               x memory_efficiency)
    time_s    = max(compute_s, memory_s)      # perfect overlap of the two, no launch overhead

An efficiency that a profile leaves null counts as 1 (the datasheet peak); ``use_efficiency=False``
ignores the profile's efficiencies. Ties are called memory-bound. Standard library only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from planner.analysis.records import frozen

if TYPE_CHECKING:  # pragma: no cover
    from .profiles import HardwareProfile

__all__ = ["RooflineTime", "roofline", "ridge_intensity", "effective_rates"]


@frozen
class RooflineTime:
    compute_s: float
    memory_s: float
    time_s: float
    bound: str  # "compute" | "memory"


def effective_rates(profile: "HardwareProfile", compute_dtype: str, *, use_efficiency: bool = True) -> tuple[float, float]:
    """(FLOP/s, bytes/s) the roofline uses: the peaks times the profile's efficiencies (null -> 1)."""
    flops_per_s = profile.peak_flops_for(compute_dtype)
    bytes_per_s = profile.memory_bandwidth_bytes_per_s
    if use_efficiency:
        flops_per_s *= profile.compute_efficiency or 1.0
        bytes_per_s *= profile.memory_efficiency or 1.0
    return flops_per_s, bytes_per_s


def roofline(
    flops: int,
    nbytes: int,
    profile: "HardwareProfile",
    compute_dtype: str,
    *,
    use_efficiency: bool = True,
) -> RooflineTime:
    """Time of ``flops`` FLOPs and ``nbytes`` bytes of DRAM traffic on ``profile``.

    ``compute_dtype`` selects the peak column (``profile.peak_flops_for``). Raises ``ValueError`` for
    negative or non-finite work (a caller bug, not user input).
    """
    for label, value in (("flops", flops), ("nbytes", nbytes)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"roofline: {label} must be a finite number >= 0, got {value!r}")
    flops_per_s, bytes_per_s = effective_rates(profile, compute_dtype, use_efficiency=use_efficiency)
    compute_s = flops / flops_per_s
    memory_s = nbytes / bytes_per_s
    bound = "compute" if compute_s > memory_s else "memory"
    return RooflineTime(compute_s=compute_s, memory_s=memory_s, time_s=max(compute_s, memory_s), bound=bound)


def ridge_intensity(profile: "HardwareProfile", compute_dtype: str, *, use_efficiency: bool = True) -> float:
    """Arithmetic intensity (FLOP/byte) where compute and memory time balance; above it, compute-bound."""
    flops_per_s, bytes_per_s = effective_rates(profile, compute_dtype, use_efficiency=use_efficiency)
    return flops_per_s / bytes_per_s
