"""What the decoder's small ops cost per dispatched aten op at a model's own width, in a CUDA-graph replay.

``planner calibrate`` prices every dispatched op of a replayed decode step at ``graph_node_overhead``,
measured on the tiny decoder (hidden 64). A real model's small ops (norms in fp32, RoPE's slices and
cat, the gated activation, the residual adds) run on tensors 64-2,000 times wider, and a kernel profile
showed them at 1.0-2.4 µs each (8.7 µs for the fp32 mean of 16 rows of 3,584). This probe replays, as
one CUDA graph, the non-matmul, non-attention ops of every layer of each model, built from the decoder's
own modules (``runtime.model``: its norms, ``Rotary`` and ``apply_rope``, the activation), at batch 1,
16 and 64, and prints the time per dispatched op beside the tiny decoder's figure. No weights are read
beyond the norms' (a few KB a layer), so the time is what the small kernels cost. It is what ``planner
calibrate --model`` measures for ``graph_node_overhead_by_rows`` (``runtime.calibrate.measure_graph_node_by_rows``),
here for several models at once.

    python bench/gpu_small_ops.py                       # the five models of bench/gpu_verify.py, on CUDA
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.gpu_verify import MODELS  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=MODELS)
    p.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64])
    p.add_argument("--layers", type=int, default=None, help="layers per step (default: the model's)")
    p.add_argument("--replays", type=int, default=10)
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)

    import torch

    from planner.cli.common import load_model
    from planner.runtime.calibrate import measure_graph_node, measure_graph_node_by_rows

    if not torch.cuda.is_available():
        print("Error: the probe replays CUDA graphs and torch sees no GPU", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    fig, tiny_ops = measure_graph_node(device, "bf16")
    tiny = fig.value
    print(f"tiny decoder (hidden 64, 2 layers): {tiny * 1e6:.3f} us per dispatched op ({tiny_ops} ops)", flush=True)
    rows = []
    for model_id in args.models:
        spec = load_model(model_id).spec
        figs, ops = measure_graph_node_by_rows(device, spec, rows=tuple(args.batches), replays=args.replays,
                                               layers=args.layers)
        for b in args.batches:
            per_op = figs[b].value
            rows.append({"model": model_id, "batch": b, "layers": min(args.layers or spec.num_layers, spec.num_layers),
                         "hidden": spec.hidden_size, "dispatched_ops": ops[b], "step_s": per_op * ops[b],
                         "per_op_s": per_op})
            print(f"{model_id} batch {b}: {ops[b]} ops, {per_op * ops[b] * 1e3:.3f} ms, {per_op * 1e6:.3f} us per op "
                  f"({per_op / tiny:.2f}x the tiny decoder's)", flush=True)
        torch.cuda.empty_cache()
    print("| model | batch | hidden | ops | step ms | µs per op | × tiny |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['hidden']} | {r['dispatched_ops']} | {r['step_s'] * 1e3:.3f} | "
              f"{r['per_op_s'] * 1e6:.3f} | {r['per_op_s'] / tiny:.2f} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"tiny_per_op_s": tiny, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
