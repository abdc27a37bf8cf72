"""Fit the serving engines' decode-attention fraction on some devices, leave one publisher out.

    python bench/device_attention_fit.py [--devices mi300x,mi325x] [--grid 0.3,0.25,...]

For the steady published timing points (``bench/published.py``'s, as shipped otherwise) on the named hardware
profiles, it predicts each point with the engines' decode attention at each grid value in place of the engine
profile's own (``attention_decode``: the fraction of the achieved memory-bound bandwidth a decode step's attention
kernel reaches reading K and V), and prints:

- the objective on all points per value (``bench/published.py``'s: per quantity the mean |log(predicted /
  published)|, averaged over the quantities);
- for each publisher (``published.publisher_key``: a repository, else a web host) the value fitted without it;
- per quantity, the median |error|, the median signed error and the points beyond 30 %: with the profiles as
  shipped, held out (each publisher's points at the value fitted without them), and at the all-points fit.

The engine profiles take the all-points fit for those devices (``timing.attention_decode_efficiency_by_device``);
a grid value ``none`` stands for the profiles as shipped. A few minutes on two cores (every point is simulated
once per value)."""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import published as P  # noqa: E402

GRID = (None, 0.3, 0.25, 0.2, 0.175, 0.15, 0.125, 0.1)


def objective(points, pred, g) -> float:
    by = collections.defaultdict(list)
    for p in points:
        v = pred[(p.id, g)]
        if v:
            by[p.quantity].append(abs(math.log(v / p.value)))
    return sum(statistics.mean(v) for v in by.values()) / len(by)


def summary(points, value_of) -> dict:
    by = collections.defaultdict(list)
    for p in points:
        v = value_of(p)
        if v:
            by[p.quantity].append(v / p.value - 1)
    return {q: (len(v), statistics.median(abs(x) for x in v), statistics.median(v), sum(abs(x) > 0.3 for x in v))
            for q, v in sorted(by.items())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", default="mi300x,mi325x")
    ap.add_argument("--grid", default=",".join("none" if g is None else str(g) for g in GRID))
    ap.add_argument("--data", type=Path, default=P.ROOT / "bench" / "published.yaml")
    args = ap.parse_args(argv)
    devices = {d.strip() for d in args.devices.split(",") if d.strip()}
    try:
        grid = [None if g.strip() == "none" else float(g) for g in args.grid.split(",") if g.strip()]
    except ValueError:
        ap.error("--grid: numbers or none, comma-separated")
    points, _ = P.load_points(args.data, None)
    points = [p for p in points if p.quantity in P.TIMING and p.hw.name in devices and p.regime == "steady"]
    if not points:
        ap.error(f"no steady timing points on {', '.join(sorted(devices))}")
    pred = {(p.id, g): p.predict(None if g is None else {"attention_decode": g}) for g in grid for p in points}
    pub = {p.id: P.publisher_key(p.entry) for p in points}
    print(f"{len(points)} steady timing points on {', '.join(sorted(devices))} from {len(set(pub.values()))} publishers")
    print()
    print("| attention_decode | objective (mean \\|log error\\| per quantity) |")
    print("|---|---|")
    for g in grid:
        print(f"| {'as shipped' if g is None else g} | {objective(points, pred, g):.4f} |")
    best_all = min(grid, key=lambda g: objective(points, pred, g))
    held = {}
    print()
    print("| publisher held out | points | fitted without it |")
    print("|---|---|---|")
    for pk in sorted(set(pub.values())):
        train = [p for p in points if pub[p.id] != pk]
        best = min(grid, key=lambda g: objective(train, pred, g))
        test = [p for p in points if pub[p.id] == pk]
        print(f"| {pk} | {len(test)} | {'as shipped' if best is None else best} |")
        for p in test:
            held[p.id] = pred[(p.id, best)]
    print()
    print("| predicted with | quantity | points | median \\|error\\| | median signed | beyond 30 % |")
    print("|---|---|---|---|---|---|")
    # (Point.predict keeps each simulation: the shipped one is the grid's "none" where the grid has it)
    for label, value_of in (("profiles as shipped", lambda p: p.predict()), ("held out", lambda p: held[p.id]),
                            (f"all-points fit ({best_all})", lambda p: pred[(p.id, best_all)])):
        for q, (n, med, signed, over) in summary(points, value_of).items():
            print(f"| {label} | {q} | {n} | {med:.1%} | {signed:+.1%} | {over} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
