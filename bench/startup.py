"""Start-up benchmark: `planner analyze` (and --help, trace) against the floor of importing its
dependencies, `python -c "import typer, rich.table, yaml, numpy"`. Target: at most 1.3x the floor.

Runs the commands interleaved, N rounds, and prints the median wall time of each and the ratio to the
floor measured in the same run (these machines are noisy; compare ratios, not seconds).

    python bench/startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

def floor_cmd() -> tuple[str, list[str]]:
    """The floor of the issue, ``import typer, rich.table, yaml, numpy``; numpy is not a dependency of
    planner, so where it is missing the floor is the rest (and the label says so)."""
    import importlib.util

    mods = ["typer", "rich.table", "yaml"] + (["numpy"] if importlib.util.find_spec("numpy") else [])
    return f"floor: import {', '.join(mods)}", [sys.executable, "-c", f"import {', '.join(mods)}"]


def planner_cmd(*args: str) -> list[str]:
    exe = shutil.which("planner")
    return [exe, *args] if exe else [sys.executable, "-m", "planner", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ns = ap.parse_args()
    floor_name, floor = floor_cmd()
    cases = {
        floor_name: floor,
        "planner --help": planner_cmd("--help"),
        "planner analyze llama-3.1-8b --json": planner_cmd("analyze", "llama-3.1-8b", "--json"),
        "planner analyze llama-3.1-8b (table)": planner_cmd("analyze", "llama-3.1-8b"),
        "planner trace llama-3.1-8b --json": planner_cmd("trace", "llama-3.1-8b", "--json"),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(ns.rounds):
        for name, cmd in cases.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times[next(iter(cases))])
    width = max(map(len, cases))
    print(f"{'command':<{width}}  {'median':>9}  {'min':>9}  {'vs floor':>8}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<{width}}  {med * 1e3:7.1f}ms  {min(ts) * 1e3:7.1f}ms  {med / floor:7.2f}x")


if __name__ == "__main__":
    main()
