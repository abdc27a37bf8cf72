"""Time of ``planner plan`` on the issue's question for three large models on H100 and H200 nodes:
20 req/s of 3000 tokens in and 500 out, TTFT p90 <= 1 s, TPOT p90 <= 40 ms, at most 64 GPUs (vLLM).
Each run is a fresh process (start-up included), as a user would run it. Prints a markdown table:
model, GPU, wall and CPU seconds (the CPU time is what a busy shared machine does not inflate), the answer (layout, GPUs, p90 TTFT/TPOT) and candidates simulated.

    python bench/plan.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["meta-llama/Llama-3.1-70B", "Qwen/Qwen3-235B-A22B", "deepseek-ai/DeepSeek-V3"]
GPUS = ["h100-sxm", "h200-sxm"]
ARGS = ["--max-gpus", "64", "--rate", "20", "--input-len", "3000", "--output-len", "500", "--ttft-p90", "1.0",
        "--tpot-p90", "0.04", "--json"]


def main() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print("| model | GPU | seconds (wall) | CPU seconds | answer | GPUs | TTFT p90 | TPOT p90 | candidates simulated |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for m in MODELS:
        for g in GPUS:
            t0 = time.perf_counter()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run([sys.executable, "-m", "planner", "plan", m, "--gpu", g, *ARGS], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=600)
            dt = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            if out.returncode:
                print(f"| {m} | {g} | {dt:.1f} | {cpu:.1f} | error: {out.stderr.strip()[:80]} | | | | |")
                continue
            d = json.loads(out.stdout)
            c = d["cheapest"]
            n = d["search"]["candidates_simulated"]
            if c is None:
                ans = f"none (needs at least {d['needs_at_least_gpus']} GPUs)" if d["needs_at_least_gpus"] else "none"
                print(f"| {m} | {g} | {dt:.1f} | {cpu:.1f} | {ans} | | | | {n} |")
            else:
                print(f"| {m} | {g} | {dt:.1f} | {cpu:.1f} | {c['label']} (max_num_seqs {c['max_num_seqs']}) | "
                      f"{c['gpus']} | {c['ttft_p90_s']:.2f} s | {c['tpot_p90_s'] * 1e3:.1f} ms | {n} |", flush=True)


if __name__ == "__main__":
    main()
