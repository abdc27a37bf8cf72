"""Eager dispatch overhead per kernel, as ``planner calibrate`` measures it (a tiny Llama-style decoder
whose device work is negligible), over several rounds. Target: under 1 ms per kernel on an idle CPU;
a loaded machine measures more (a test once saw 1.37 ms under a parallel test run), which is why this
is a benchmark that prints a table and not a test assertion.

    python bench/launch.py [--rounds 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    import torch

    from planner.runtime.calibrate import measure_step_overhead

    device = torch.device(args.device)
    per_kernel_s = []
    print(f"{'round':>5}  {'per kernel':>12}  {'kernels/step':>12}")
    for r in range(args.rounds):
        s, kernels = measure_step_overhead(device, "fp32", args.steps)
        per_kernel_s.append(s)
        print(f"{r:>5}  {s * 1e6:>9.1f} us  {kernels:>12}")
    med = statistics.median(per_kernel_s)
    print(f"median {med * 1e6:.1f} us per kernel; target < 1000 us: {'met' if med < 1e-3 else 'NOT met'}")


if __name__ == "__main__":
    main()
