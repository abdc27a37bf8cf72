"""Where a decode step of the torch decoder spends its device time, kernel by kernel, on a GPU.

For each ``MODEL:BATCH:CONTEXT``: the decoder ``verify`` times (random bf16 weights, a random KV cache),
a few eager decode steps under ``torch.profiler``, and one table of the kernels by device time
(calls per step, µs per call, share of the step). Beside it, the graph-replayed step's time (CUDA
events, as verify times it) and its count of dispatched aten ops, so that what each replayed kernel
costs beyond its work can be read off against the calibrated profile.

    python bench/gpu_profile.py google/gemma-2-9b:1:32768 meta-llama/Llama-3.1-8B:1:2048
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run(model_id: str, batch: int, context: int, steps: int, rows: int, device: str = "cuda") -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from planner.cli.common import load_model
    from planner.runtime.cache import KVCache
    from planner.runtime.model import build_decoder
    from planner.runtime.timing import capture_graph, count_kernels, timed_samples

    spec = load_model(model_id).spec
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    model = build_decoder(spec, dtype=dtype, device=dev)
    cache = KVCache(spec, batch, context + 1, dtype, dev)
    cache.fill_random_()
    tokens = torch.zeros(batch, 1, dtype=torch.long, device=dev)

    def step():
        return model.decode(tokens, context, cache)

    with torch.inference_mode():
        kernels, _ = count_kernels(step)
        graph = capture_graph(step, dev) if cuda else None
        run_ = graph.replay if cuda else step
        for _ in range(3):
            run_()
        replay = statistics.median(timed_samples(run_, dev, 10))
        for _ in range(2):
            step()
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                step()
            if cuda:
                torch.cuda.synchronize()
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    events = [e for e in prof.key_averages() if getattr(e, attr, 0.0) > 0]
    total = sum(getattr(e, attr, 0.0) for e in events) / steps
    print(f"\n## {model_id} batch {batch} context {context}: {'graph replay' if cuda else 'eager step'} {replay * 1e3:.3f} ms, {kernels} dispatched "
          f"aten ops; kernels' device time {total / 1e3:.3f} ms per eager step "
          f"(the rest of the replay: {replay * 1e3 - total / 1e3:.3f} ms)")
    print("| kernel | calls/step | µs/call | µs/step | share |")
    print("|---|---|---|---|---|")
    events.sort(key=lambda e: -getattr(e, attr, 0.0))
    calls_all = sum(e.count for e in events) / steps
    for e in events[:rows]:
        t = getattr(e, attr, 0.0) / steps
        calls = e.count / steps
        print(f"| {e.key[:90]} | {calls:g} | {t / calls if calls else 0:.2f} | {t:.1f} | {100 * t / total if total else 0:.1f}% |")
    print(f"kernels per step: {calls_all:g}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="MODEL:BATCH:CONTEXT")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = p.parse_args(argv)
    for r in args.runs:
        model_id, b, c = r.rsplit(":", 2)
        run(model_id, int(b), int(c), args.steps, args.rows, args.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
