"""Speed of the serving simulation: many configurations × many requests in one vectorised run.

Configurations are real step costs (Llama-3.1-70B on H100 nodes at TP2/TP4/TP8, and TP8 PP2, from
``hardware.deploy.step_cost``) crossed with scheduler limits (max_num_seqs, max_num_batched_tokens,
KV pool) and request rates; each configuration serves the same kind of workload (Poisson arrivals,
input ~ normal(3000, 600), output ~ normal(500, 150) tokens). Prints one markdown table row per
size: configurations, requests, wall and CPU seconds (the CPU time is what a busy shared machine
inflates least), lock-step iterations.

    python bench/simulate.py [--configs 1000] [--requests 2000] [--sizes]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def build(n_configs: int, n_requests: int, seed: int = 0):
    import numpy as np

    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import Layout
    from planner.cli.common import load_hardware, load_model
    from planner.hardware.deploy import engine_model, layout_memory, plan_for, step_cost
    from planner.hardware.simulate import Scheduler, draw_lengths, poisson_arrivals

    lm = load_model("meta-llama/Llama-3.1-70B")
    a = analyze(lm.spec, Options(context=3500))
    hw = load_hardware("h100-sxm")
    em = engine_model(hw, "vllm")
    bases = []
    for lo in (Layout(tp=2), Layout(tp=4), Layout(tp=8), Layout(tp=8, pp=2)):
        plan = plan_for(a, hw, lo)
        mem = layout_memory(a, hw, plan, em, max_num_batched_tokens=8192, max_num_seqs=256)
        if mem.kv_capacity_tokens < 4000:
            continue
        bases.append((step_cost(a, hw, plan, em, ref_batch=64, ref_context=3250, ref_prompt=3000), mem.kv_capacity_tokens))
    rng = np.random.default_rng(seed)
    costs, scheds, rates = [], [], []
    for i in range(n_configs):
        cost, kv = bases[i % len(bases)]
        costs.append(cost)
        scheds.append(Scheduler(int(rng.choice([32, 64, 128, 256])), int(rng.choice([2048, 4096, 8192])),
                                int(kv * rng.uniform(0.3, 1.0))))
        rates.append(rng.uniform(1.0, 8.0))
    arr = np.stack([poisson_arrivals(r, n_requests, seed=seed + 1 + i)[0] for i, r in enumerate(rates)])
    inp = draw_lengths("normal:3000:600", n_requests, seed=seed + 2)
    out = draw_lengths("normal:500:150", n_requests, seed=seed + 3)
    return costs, scheds, arr, inp, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--sizes", action="store_true", help="also time 10 and 100 configurations")
    args = ap.parse_args()
    from planner.hardware.simulate import simulate

    sizes = ([10, 100] if args.sizes else []) + [args.configs]
    print("| configurations | requests | seconds (wall) | CPU seconds | lock-step iterations | median p90 TTFT (s) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in sizes:
        costs, scheds, arr, inp, out = build(c, args.requests)
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(costs, scheds, arr, inp, out)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        import numpy as np

        p90 = float(np.nanmedian(r.percentiles("ttft_s", (90,))[:, 0]))
        print(f"| {c} | {args.requests} | {dt:.1f} | {cpu:.1f} | {r.steps} | {p90:.2f} |", flush=True)


if __name__ == "__main__":
    main()
