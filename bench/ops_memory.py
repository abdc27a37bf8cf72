"""What the step model's op cache holds while bench/published.py fits: ``python bench/ops_memory.py [--points 700
--seed 7]``.

Loads a random sample of the published timing entries (``--points`` of them, drawn with ``--seed``; the steady
points of those are kept), then runs twelve trials as a fit would (the achieved bandwidth at four values, then each
engine's launch floor at two), and prints a table: the op groups held in the points' caches (``Point.ops_cache``:
each step shape's ops, which ``hardware.serve.StepModel`` keeps between factor sets) after loading and after the
trials, the trials' seconds, the process's peak resident memory, and a digest of every prediction (equal digests:
equal predictions, to compare two checkouts). Run it in each checkout to compare them; the machines are noisy, so
run them side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    import published as P

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=700)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    if args.points < 1:
        ap.error("--points: a positive number expected")
    data = P.read_yaml((ROOT / "bench" / "published.yaml").read_text())
    entries = data if isinstance(data, list) else data["entries"]
    ids = [e["id"] for e in entries if not e.get("excluded") and e.get("quantity") in P.TIMING]
    random.seed(args.seed)
    pick = random.sample(ids, min(args.points, len(ids)))
    t0 = time.perf_counter()
    points, _ = P.load_points(ROOT / "bench" / "published.yaml", pick)
    points = [p for p in points if p.quantity in P.TIMING and p.regime == "steady"]
    load_s = time.perf_counter() - t0

    def held() -> int:
        return sum(len(v) for p in points for v in p.ops_cache.values() if isinstance(v, list))

    def rss_mib() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    rows = [("points (steady timing, of the sample)", f"{len(points):,}"), ("loading, s", f"{load_s:.0f}"),
            ("op groups held after loading", f"{held():,}"), ("peak resident memory after loading, MiB", f"{rss_mib():.0f}")]
    start = P.start_params(points)
    trials = [{"memory_bandwidth": v} for v in (0.7, 0.75, 0.8, 0.9)]
    trials += [{f"launch_overhead_per_op@{e}": v} for v in (16e-6, 64e-6) for e in ("vllm", "sglang", "vllm-v0", "trtllm")]
    t0 = time.perf_counter()
    out = [[p.predict({**start, **t}) for p in points] for t in trials]
    rows += [(f"{len(trials)} trials, s", f"{time.perf_counter() - t0:.1f}"), ("op groups held after them", f"{held():,}"),
             ("peak resident memory, MiB", f"{rss_mib():.0f}"),
             ("digest of the predictions", hashlib.sha256(json.dumps(out).encode()).hexdigest()[:16])]
    print(f"{'':44} {ROOT.name}")
    for label, v in rows:
        print(f"{label:44} {v:>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
