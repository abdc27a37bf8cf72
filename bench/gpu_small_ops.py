"""What the decoder's small ops cost per dispatched aten op at a model's own width, in a CUDA-graph replay.

``planner calibrate`` prices every dispatched op of a replayed decode step at ``graph_node_overhead``,
measured on the tiny decoder (hidden 64). A real model's small ops (norms in fp32, RoPE's slices and
cat, the gated activation, the residual adds) run on tensors 64-2,000 times wider, and a kernel profile
showed them at 1.0-2.4 µs each (8.7 µs for the fp32 mean of 16 rows of 3,584). This probe replays, as
one CUDA graph, the non-matmul, non-attention ops of every layer of each model, built from the decoder's
own modules (``runtime.model``: its norms, ``Rotary`` and ``apply_rope``, the activation), at batch 1,
16 and 64, and prints the time per dispatched op beside the tiny decoder's figure. No weights are read
beyond the norms' (a few KB a layer), so the time is what the small kernels cost.

    python bench/gpu_small_ops.py                       # the five models of bench/gpu_verify.py, on CUDA
    python bench/gpu_small_ops.py --device cpu --models Qwen/Qwen2.5-0.5B --batches 1 --layers 2   # smoke test
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.gpu_verify import MODELS  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--models", nargs="+", default=MODELS)
    p.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64])
    p.add_argument("--layers", type=int, default=None, help="layers per step (default: the model's)")
    p.add_argument("--replays", type=int, default=10)
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)

    import torch

    from planner.cli.common import load_model
    from planner.runtime.calibrate import _median_time, measure_graph_node, small_ops_step, torch_dtype
    from planner.runtime.timing import capture_graph, count_kernels

    device = torch.device(args.device)
    dtype = torch_dtype("bf16" if device.type == "cuda" else "fp32")
    rows = []
    tiny = None
    if device.type == "cuda":
        fig, tiny_ops = measure_graph_node(device, "bf16")
        tiny = fig.value
        print(f"tiny decoder (hidden 64, 2 layers): {tiny * 1e6:.3f} us per dispatched op ({tiny_ops} ops)", flush=True)
    for model_id in args.models:
        spec = load_model(model_id).spec
        for b in args.batches:
            step, n_layers = small_ops_step(spec, b, device, dtype, args.layers)
            with torch.inference_mode():
                ops, by_op = count_kernels(step)
                if device.type == "cuda":
                    graph = capture_graph(step, device)

                    def run(graph=graph):
                        for _ in range(args.replays):
                            graph.replay()
                else:
                    def run():
                        for _ in range(args.replays):
                            step()
                t = statistics.median(_median_time(run, device, 5, warmup=2) for _ in range(3)) / args.replays
            per_op = t / ops
            rows.append({"model": model_id, "batch": b, "layers": n_layers, "hidden": spec.hidden_size,
                         "dispatched_ops": ops, "step_s": t, "per_op_s": per_op, "ops": by_op})
            print(f"{model_id} batch {b}: {ops} ops, {t * 1e3:.3f} ms, {per_op * 1e6:.3f} us per op"
                  + (f" ({per_op / tiny:.2f}x the tiny decoder's)" if tiny else ""), flush=True)
            if device.type == "cuda":
                del graph
                torch.cuda.empty_cache()
    print("| model | batch | hidden | ops | step ms | µs per op | × tiny |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['hidden']} | {r['dispatched_ops']} | {r['step_s'] * 1e3:.3f} | "
              f"{r['per_op_s'] * 1e6:.3f} | {r['per_op_s'] / tiny:.2f} |" if tiny else
              f"| {r['model']} | {r['batch']} | {r['hidden']} | {r['dispatched_ops']} | {r['step_s'] * 1e3:.3f} | "
              f"{r['per_op_s'] * 1e6:.3f} | - |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"tiny_per_op_s": tiny, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
