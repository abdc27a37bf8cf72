"""One engine's per-request and launch overheads fitted on two kinds of published runs at once:
``python bench/joint_fit.py [--engine sglang]``.

``bench/published.py`` fits every timing factor k-fold on the runs ``planner serve`` simulates (static
batches, closed loops); request-rate (Poisson) runs are simulated by ``planner plan`` in
``bench/plan_published.py --rate``, too slow to sit inside that coordinate search. Where the two disagree
on an engine's overheads (SGLang: the sgl-cookbook's one-request TTFTs want some 64 us of host time per op
of an eager prompt step, and SGLang 0.3.0's request-rate runs saturate at that value), this script scores a
grid of (request_overhead, launch_overhead_per_op) for ``--engine`` on both: the engine's timing points of
bench/published.yaml (predicted as shipped, the other factors held) and its rows of
``plan_published.py --rate``. The objective is published.py's L1: the mean over the timing quantities of
the mean |log(predicted / published)| of the quantity's points, both sources pooled. It prints the grid and
the best pair, to be written into profiles/engines/<engine>.yaml with this script as the source.
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

REQUEST_MS = (0, 8, 16, 32)
LAUNCH_US = (16, 24, 32, 48, 64)


def rate_errors(engine: str) -> dict[str, list[float]]:
    """|log error| per quantity of the engine's rows of ``plan_published.py --rate`` (its own process,
    which reads the engine profile as it is on disk)."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "plan_published.py"), "--rate"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600).stdout
    errs: dict[str, list[float]] = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 8 or f"-{engine}-" not in cells[1]:
            continue
        try:
            published, predicted = float(cells[5]), float(cells[6])
        except ValueError:  # a row the simulation does not predict (ITL of SGLang)
            continue
        errs.setdefault(cells[2].split()[-1], []).append(abs(math.log(predicted / published)))
    return errs


def main(argv=None) -> int:
    import published as P

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", default="sglang")
    args = ap.parse_args(argv)
    points, _ = P.load_points(ROOT / "bench" / "published.yaml", None)
    mine = [p for p in points if p.engine_name == args.engine and p.quantity in P.TIMING]
    start = P.start_params(points)
    path = ROOT / "profiles" / "engines" / f"{args.engine}.yaml"
    kept = path.read_text()
    rows = []
    try:
        for req, launch in itertools.product(REQUEST_MS, LAUNCH_US):
            params = {**start, f"request_overhead_s@{args.engine}": req * 1e-3,
                      f"launch_overhead_per_op_s@{args.engine}": launch * 1e-6}
            errs: dict[str, list[float]] = {}
            for p in mine:
                errs.setdefault(p.quantity, []).append(P.log_err(p.predict(params), p.value))
            text = re.sub(r"(?m)^  launch_overhead_per_op: .*$", f"  launch_overhead_per_op: {launch} us", kept)
            text = re.sub(r"(?m)^  request_overhead: .*$", f"  request_overhead: {req} ms", text)
            path.write_text(text)
            for q, es in rate_errors(args.engine).items():
                errs.setdefault(q, []).extend(es)
            score = statistics.fmean(statistics.fmean(es) for es in errs.values())
            rows.append((score, req, launch))
            print(f"request {req:>2} ms, launch {launch:>2} us: L1 {score:.3f}  "
                  + "  ".join(f"{q} {statistics.fmean(es):.3f} (n {len(es)})" for q, es in sorted(errs.items())),
                  flush=True)
    finally:
        path.write_text(kept)
    best = min(rows)
    print(f"best: request_overhead {best[1]} ms, launch_overhead_per_op {best[2]} us (L1 {best[0]:.3f}; "
          f"{len(mine)} published.py points of {args.engine} and its plan_published --rate rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
