"""Price saved ``gpu_verify`` runs again with another hardware profile, without a GPU.

A GPU is lent rarely; what it measured is kept (``bench/data/<device>-<date>/run*.json``: per run the
model, batch, context, measured step time and the decoder's dispatched aten ops). This recomputes
``verify``'s prediction (``runtime.verify.predict_step``, the step model on the torch CUDA-graph engine
profile) for each run with ``--hardware`` (a profile name or YAML path) and prints the table and the
median |error|, so a change to the step model or to a calibrated term is checked against the
measurements on a machine without a GPU.

    python bench/gpu_reprice.py bench/data/h200-2026-12-04/run4-calibrated-terms.json \\
        --hardware bench/data/h200-2026-12-04/calibrated-run4.yaml
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


def reprice(runs: list[dict], hardware: str) -> list[dict]:
    """Each run with ``repriced_s`` (the prediction under ``hardware``) and ``error`` (repriced / measured − 1)."""
    from planner.analysis.kv import kv_cache
    from planner.analysis.weights import weight_format
    from planner.cli.common import load_model
    from planner.hardware.profiles import load_profile
    from planner.runtime.verify import predict_step

    hw = load_profile(hardware)
    out = []
    for r in runs:
        spec = load_model(r["model"]).spec
        fmt, _ = weight_format(spec, r.get("dtype", "bf16"))
        kvc = kv_cache(spec, fmt.act, fmt.act)
        p = predict_step(spec, fmt, kvc, hw, batch=r["batch"], context=r["context"], device_type="cuda",
                         graphs=r.get("graphs", True), kernels=r["kernels_dispatched"])
        out.append({**r, "repriced_s": p.cost.expected_s, "error": p.cost.expected_s / r["measured_s"] - 1,
                    "attention_decode": p.factors.attention_decode})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", help="a run file written from gpu_verify's --json (bench/data/...)")
    ap.add_argument("--hardware", required=True, help="profile name or YAML path to price the runs with")
    args = ap.parse_args(argv)
    try:
        data = json.loads(Path(args.runs).read_text())
        runs = data["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"Error: cannot read runs from {args.runs}: {exc}", file=sys.stderr)
        return 1
    from planner.analysis.errors import PlannerError

    try:
        rows = reprice(runs, args.hardware)
    except PlannerError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 1
    print(f"{data.get('device', '?')}, {data.get('date', '?')}: priced with {args.hardware}")
    print("| model | batch | context | measured ms | predicted then ms | predicted now ms | error now |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['context']} | {r['measured_s'] * 1e3:.3f} | "
              f"{r['predicted_s'] * 1e3:.3f} | {r['repriced_s'] * 1e3:.3f} | {100 * r['error']:+.1f}% |")
    errs = [abs(r["error"]) for r in rows]
    print(f"median |error| {100 * statistics.median(errs):.1f}% over {len(errs)} runs; within 10%: "
          f"{sum(e <= 0.10 for e in errs)}; within 20%: {sum(e <= 0.20 for e in errs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
