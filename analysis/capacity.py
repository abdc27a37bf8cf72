"""Small helpers for capacity questions (the largest batch or context that fits)."""

from __future__ import annotations

from typing import Callable


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
