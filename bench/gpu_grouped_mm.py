"""What the decoder's routed experts (``runtime.model.Experts``, grouped GEMMs) cost on a GPU, by tokens per step.

Without a calibrated grouped-experts rate, ``verify`` prices a routed-expert op at the dense skinny-GEMM
table, read at the rows each touched expert multiplies; the decoder runs them as two ``torch._grouped_mm``
calls (CUTLASS) plus the sort, gather and scatter around them. This times the decoder's own ``Experts`` module of a model (random
weights, ``copies`` distinct layers so the weights stream from memory past the L2) at several token
counts, with uniform random top-k routing, replayed as one CUDA graph, and prints per layer: tokens, experts
touched, rows per touched expert, time, the touched experts' weight bytes over the time, and that as a
fraction of the device copy rate measured here.

    python bench/gpu_grouped_mm.py                                  # Qwen3-30B-A3B on CUDA
    python bench/gpu_grouped_mm.py --node-us 1.2                    # the overhead net of 1.2 us per dispatched op

It is what ``planner calibrate`` measures for ``experts_grouped_bandwidth`` and ``experts_grouped_overhead``
(``runtime.calibrate.measure_experts_grouped``), printed point by point beside the fitted line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--model", default="Qwen/Qwen3-30B-A3B")
    p.add_argument("--tokens", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    p.add_argument("--copies", type=int, default=4, help="distinct expert layers per replay (weights streamed)")
    p.add_argument("--node-us", type=float, default=0.0,
                   help="graph-node cost per dispatched op to take off the overhead (default 0: the whole intercept)")
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)

    import torch

    from planner.cli.common import load_model
    from planner.runtime.calibrate import measure_copy, measure_experts_grouped

    device = torch.device(args.device)
    spec = load_model(args.model).spec
    if spec.first_moe is None:
        print(f"Error: {args.model} has no routed experts", file=sys.stderr)
        return 1
    bw = measure_copy(device, 2 * 2**30 if device.type == "cuda" else 256 * 2**20, 10).value
    try:
        fig, overhead, rec = measure_experts_grouped(device, spec, lambda t: args.node_us * 1e-6,
                                                     tokens=tuple(args.tokens), copies=args.copies)
    except (RuntimeError, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    moe = spec.first_moe
    print(f"{args.model}: {moe.num_experts} experts, top-{moe.num_experts_per_tok}, hidden {moe.hidden_size}, expert width "
          f"{moe.moe_intermediate_size}, {rec['expert_bytes'] / 2**20:.2f} MiB an expert, {rec['copies']} copies; copy "
          f"bandwidth {bw / 1e9:.0f} GB/s")
    print("| tokens | experts touched | rows per expert | dispatched ops | µs per layer | GB/s | of copy | line µs |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rec["points"]:
        rate = r["weight_bytes"] / r["layer_s"]
        line = overhead + r["dispatched_ops"] * args.node_us * 1e-6 + r["weight_bytes"] / fig.value
        print(f"| {r['tokens']} | {r['experts_touched']} | {r['tokens'] * moe.num_experts_per_tok / r['experts_touched']:.2f} | "
              f"{r['dispatched_ops']} | {r['layer_s'] * 1e6:.1f} | {rate / 1e9:.0f} | {100 * rate / bw:.0f}% | {line * 1e6:.1f} |")
    print(f"line: {overhead * 1e6:.1f} us + {rec['points'][0]['dispatched_ops']} ops x {args.node_us:.2f} us + touched bytes / "
          f"{fig.value / 1e9:.0f} GB/s ({100 * fig.value / bw:.0f}% of the copy rate; rounds "
          + ", ".join(f"{v / 1e9:.0f}" for v in fig.rounds) + " GB/s)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"copy_bytes_per_s": bw, "rate_bytes_per_s": fig.value,
                                                   "overhead_s": overhead, **rec}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
