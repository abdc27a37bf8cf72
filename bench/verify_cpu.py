"""CPU acceptance of verify's prediction (issue 14: within ±10 % at batch 1 and 4 on three bundled
models, run twice): ``planner calibrate`` once, then ``planner verify`` at each batch, each model,
twice, with one thread; one table of predicted (planner's step model on the calibrated profile),
measured and error per run.

    python bench/verify_cpu.py                     # the acceptance run (about 3-4 minutes on 2 cores)
    python bench/verify_cpu.py --taskset 1 --nice 0 --json out.json

Every planner call is a fresh ``python -m planner`` process, as a user runs it, in a private config
folder (``--config-dir``, default a temporary one), so the user's own calibration is left alone.
``--taskset CPU`` pins every call to one core (``taskset -c``), which steadies the figures when
other processes share the machine. The load average is printed before and after each call: CPU
timings on a busy machine are not the machine's, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = ("HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen3-0.6B")
TARGET = 0.10


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def planner(args: list[str], env: dict, prefix: list[str], timeout: int = 900) -> dict:
    cmd = prefix + [sys.executable, "-m", "planner", *args, "--json"]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"Error: {' '.join(args[:2])} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--context", type=int, default=512, help="cached tokens of the timed decode step")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-calibrate", action="store_true", help="skip calibrate (use --hardware)")
    ap.add_argument("--hardware", default=None, help="profile for verify (default: the calibration just made)")
    ap.add_argument("--config-dir", default=None, help="PLANNER_CONFIG_DIR for the run (default: a temporary folder)")
    ap.add_argument("--taskset", default=None, help="pin every call to these CPUs (taskset -c LIST)")
    ap.add_argument("--nice", type=int, default=None, help="run every call under nice -n N")
    ap.add_argument("--json", default=None, help="write every verify result here")
    a = ap.parse_args(argv)

    tmp = None
    if a.config_dir is None:
        tmp = tempfile.mkdtemp(prefix="planner-verify-cpu-")
    env = dict(os.environ, PLANNER_CONFIG_DIR=a.config_dir or tmp, HF_HUB_OFFLINE="1", NO_COLOR="1")
    prefix: list[str] = []
    if a.nice is not None:
        prefix += ["nice", "-n", str(a.nice)]
    if a.taskset:
        if not shutil.which("taskset"):
            raise SystemExit("Error: --taskset needs the taskset command (util-linux)")
        prefix += ["taskset", "-c", a.taskset]
    t0 = time.perf_counter()
    results = []
    try:
        print(f"load average at start: {load()} on {os.cpu_count()} CPUs; "
              f"wrapper: {' '.join(prefix) or 'none'}; {a.threads} thread(s)", flush=True)
        hw_args = []
        if not a.no_calibrate:
            before = load()
            cal = planner(["calibrate", "--device", "cpu", "--threads", str(a.threads), "--name", "bench-cpu",
                           "--force"], env, prefix)
            m = cal["measured"]
            print(f"calibrate ({m['seconds']:.0f} s, load {before} -> {load()}): read {m['read_bytes_per_s'] / 1e9:.3g} GB/s, "
                  f"copy {m['copy_bytes_per_s'] / 1e9:.3g} GB/s, fp32 {m['matmul_flops_per_s']['fp32'] / 1e9:.3g} GFLOP/s, "
                  f"launch {m['launch_s'] * 1e6:.3g} us per kernel"
                  + (f"; problems: {'; '.join(cal['problems'])}" if cal["problems"] else ""), flush=True)
            hw_args = ["--hardware", "bench-cpu"]
        if a.hardware:
            hw_args = ["--hardware", a.hardware]
        rows = []
        for model in a.models:
            for b in a.batches:
                for run in range(1, a.runs + 1):
                    before = load()
                    d = planner(["verify", model, "--device", "cpu", "--batch", str(b), "--context", str(a.context),
                                 "--steps", str(a.steps), "--warmup", str(a.warmup), "--threads", str(a.threads),
                                 "--no-profile", *hw_args], env, prefix)
                    t = d["timing"]
                    ok = all(c["ok"] for c in d["checks"].values())
                    rows.append((model, b, run, t["predicted_s"], t["ideal_s"], t["measured_s"], t["error"], ok,
                                 f"{before} -> {load()}"))
                    results.append(d)
                    print(f"  {model} b={b} run {run}: predicted {t['predicted_s'] * 1e3:.1f} ms, measured "
                          f"{t['measured_s'] * 1e3:.1f} ms, {100 * t['error']:+.1f}%", file=sys.stderr, flush=True)
        head = ["model", "batch", "run", "predicted ms", "ideal ms", "measured ms", "error", "checks", "load (1/5/15 min)"]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(" --- " if i < 3 or i == 7 or i == 8 else " ---: " for i in range(len(head))) + "|")
        for model, b, run, p, i, m, e, ok, ld in rows:
            print(f"| {model} | {b} | {run} | {p * 1e3:.1f} | {i * 1e3:.1f} | {m * 1e3:.1f} | {100 * e:+.1f}% | "
                  f"{'ok' if ok else 'MISMATCH'} | {ld} |")
        errs = [abs(r[6]) for r in rows]
        inside = sum(e <= TARGET for e in errs)
        print(f"median |error| {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}%; {inside}/{len(errs)} "
              f"runs within ±{100 * TARGET:.0f}%; context {a.context}, {a.steps} steps after {a.warmup} warm-up, "
              f"{a.threads} thread(s); took {time.perf_counter() - t0:.0f} s; load average at the end: {load()}")
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=1))
        return 0 if all(r[7] for r in rows) else 1
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
