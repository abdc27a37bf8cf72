"""How long one trial of bench/published.py's k-fold takes: ``python bench/kfold_speed.py [--jobs 2]``.

A trial predicts every steady timing point under one set of factors (``published.fit``'s ``score``). This script
loads the points once, then times, in one run on this machine: a trial in this process (each point's own
``predict``); on a ``published.Predictor`` of ``--jobs`` workers a first trial under another factor value (the
fresh workers also copy the pages they touch), the same trial as in this process, and that trial again (every
simulation kept: what a later fit pays for a trial an earlier fit made). It prints a table, and checks that the
pool's predictions equal this process's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None) -> int:
    import published as P

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    points, _ = P.load_points(ROOT / "bench" / "published.yaml", None)
    timing = [p for p in points if p.quantity in P.TIMING and p.regime == "steady"]
    load_s = time.perf_counter() - t0
    rows = []

    def timed(label, fn):
        t = time.perf_counter()
        out = fn()
        rows.append((label, time.perf_counter() - t))
        return out

    pool = P.Predictor(timing, args.jobs)  # (forked before this process predicts anything more: the workers hold
    try:                                   # only the shipped predictions)
        here = timed("a trial in this process (memory_bandwidth 0.8)",
                     lambda: [p.predict({"memory_bandwidth": 0.8}) for p in timing])
        # the first trial on fresh workers also copies the pages of the points they touch (fork's copy-on-write)
        timed(f"a first trial on {args.jobs} fresh workers (0.75)", lambda: pool({"memory_bandwidth": 0.75}, timing))
        there = timed(f"the same trial as above on {args.jobs} workers (0.8)", lambda: pool({"memory_bandwidth": 0.8}, timing))
        timed(f"that trial again on the {args.jobs} workers", lambda: pool({"memory_bandwidth": 0.8}, timing))
        same = there == here
    finally:
        pool.close()
    print(f"{len(timing)} steady timing points (loaded and predicted as shipped in {load_s:.0f} s)")
    print(f"{'trial':52} {'seconds':>8}")
    for label, s in rows:
        print(f"{label:52} {s:>8.2f}")
    print(f"the workers' predictions equal this process's: {same}; {sum(x is not None for x in there)} predicted")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
