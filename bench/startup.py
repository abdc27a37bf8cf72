"""Start-up benchmark: planner's commands against the floor of importing the stack they run on,
`python -c "import typer, rich.table, yaml"` (what any Typer + Rich + YAML CLI pays before its own code).
Targets: `analyze --json`, `trace --json` and `--help` within 1.3x the floor, compare of five within 1.6x.

Runs the commands interleaved, N rounds, and prints the median wall and CPU time (user + sys) of each
and their ratios to the floor measured in the same run (these machines are noisy; compare ratios, not
seconds, and prefer the CPU ratio on a busy machine). Run it with
the Python of a normal install (`pip install .` into a fresh venv) so `planner` is the installed script.

    python bench/startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

FLOOR = ["typer", "rich.table", "yaml"]  # what planner imports for every command (numpy is never loaded)
FIVE = ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "gemma-2-9b", "qwen3-30b-a3b"]


def floor_cmd() -> tuple[str, list[str]]:
    return f"floor: import {', '.join(FLOOR)}", [sys.executable, "-c", f"import {', '.join(FLOOR)}"]


def planner_cmd(*args: str) -> list[str]:
    """The installed ``planner`` script beside this Python (a venv's bin/), else on PATH, else -m."""
    here = Path(sys.executable).parent / "planner"
    exe = str(here) if here.is_file() else shutil.which("planner")
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
        "planner compare (five models) --json": planner_cmd("compare", *FIVE, "--json"),
    }
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(ns.rounds):
        for name, cmd in cases.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            wall[name].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    first = next(iter(cases))
    floor_wall, floor_cpu = statistics.median(wall[first]), statistics.median(cpu[first])
    width = max(map(len, cases))
    # CPU time (user + sys of the process) is the steadier figure on a shared machine; wall time is
    # what a user waits for
    print(f"{'command':<{width}}  {'wall':>9}  {'vs floor':>8}  {'cpu':>9}  {'vs floor':>8}")
    for name in cases:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:<{width}}  {w * 1e3:7.1f}ms  {w / floor_wall:7.2f}x  {c * 1e3:7.1f}ms  {c / floor_cpu:7.2f}x")

if __name__ == "__main__":
    main()
