"""How far ``planner serve`` has been from published measurements: the held-out error that
``bench/published.py --write-accuracy`` writes to ``profiles/engines/_accuracy.yaml`` after its k-fold
(each published point predicted by factors fitted without it). Per timing quantity, over all engines
and per engine: the points, the median and the 90th percentile of |predicted / published − 1|.
``serve`` prints the engine's figures beside its prediction, so that a user reads the expected
number with the error it has had; an engine with fewer than ``MIN_POINTS`` points of a quantity gets
the all-engine figure, marked so."""

from __future__ import annotations

import math
from typing import Mapping

from planner.analysis.errors import HardwareError
from planner.analysis.records import frozen

QUANTITIES = ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s")
LABELS = {"ttft_s": "TTFT", "tpot_s": "TPOT", "e2e_s": "e2e", "output_tokens_per_s": "output tokens/s"}
MIN_POINTS = 5  # fewer points of a quantity on the engine: the all-engine figure is shown instead
WHERE = "profiles/engines/_accuracy.yaml"


@frozen
class Error:
    n: int  # published points held out
    median: float  # of |predicted / published - 1|
    p90: float  # 90th percentile (nearest rank) of the same


@frozen
class Accuracy:
    date: str
    command: str
    points: int
    overall: Mapping[str, Error]
    engines: Mapping[str, Mapping[str, Error]]

    def for_engine(self, engine: str) -> dict[str, tuple[Error, str]]:
        """Per quantity, the engine's figure where it has ``MIN_POINTS`` points or more, else the
        all-engine one; with the scope (the engine's name or ``"all"``)."""
        out = {}
        mine = self.engines.get(engine, {})
        for q in QUANTITIES:
            if q in mine and mine[q].n >= MIN_POINTS:
                out[q] = (mine[q], engine)
            elif q in self.overall:
                out[q] = (self.overall[q], "all")
        return out


def _error(d, where: str) -> Error:
    if not isinstance(d, Mapping):
        raise HardwareError(f"{WHERE}: {where} is not a mapping of n, median, p90", "rerun bench/published.py "
                            "--write-accuracy")
    try:
        n, med, p90 = d["n"], d["median"], d["p90"]
    except KeyError as e:
        raise HardwareError(f"{WHERE}: {where} lacks {e.args[0]!r}", "rerun bench/published.py --write-accuracy") from None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise HardwareError(f"{WHERE}: {where}.n must be a positive integer, got {n!r}", "fix the file")
    for name, v in (("median", med), ("p90", p90)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise HardwareError(f"{WHERE}: {where}.{name} must be a finite number >= 0, got {v!r}", "fix the file")
    if p90 < med:
        raise HardwareError(f"{WHERE}: {where}.p90 {p90} is below its median {med}", "fix the file")
    return Error(n, float(med), float(p90))


def _table(d, where: str) -> dict[str, Error]:
    if not isinstance(d, Mapping):
        raise HardwareError(f"{WHERE}: {where} is not a mapping of quantities", "fix the file")
    bad = [k for k in d if k not in QUANTITIES]
    if bad:
        raise HardwareError(f"{WHERE}: {where} has unknown quantity {bad[0]!r}", f"use {', '.join(QUANTITIES)}")
    return {q: _error(v, f"{where}.{q}") for q, v in d.items()}


def parse(d) -> Accuracy:
    """The accuracy record from the YAML's data; ``HardwareError`` (one line) on anything malformed."""
    if not isinstance(d, Mapping):
        raise HardwareError(f"{WHERE} is not a mapping", "rerun bench/published.py --write-accuracy")
    points = d.get("points")
    if isinstance(points, bool) or not isinstance(points, int) or points < 0:
        raise HardwareError(f"{WHERE}: points must be a count, got {points!r}", "fix the file")
    engines = d.get("engines") or {}
    if not isinstance(engines, Mapping):
        raise HardwareError(f"{WHERE}: engines is not a mapping", "fix the file")
    return Accuracy(str(d.get("date", "")), str(d.get("command", "")), points, _table(d.get("all") or {}, "all"),
                    {str(e): _table(t, f"engines.{e}") for e, t in engines.items()})


def load() -> Accuracy | None:
    """The shipped record (None where the package has none)."""
    from .engine import _engines_folder, _read_yaml

    if not _engines_folder().joinpath("_accuracy.yaml").is_file():
        return None
    return parse(_read_yaml("_accuracy"))


def accuracy_dict(acc: Accuracy | None, engine: str) -> dict | None:
    """``serve --json``'s ``accuracy``: per quantity the held-out error that applies to ``engine``."""
    if acc is None or engine == "ideal":
        return None
    return {"source": "bench/published.py --write-accuracy (profiles/engines/_accuracy.yaml)", "date": acc.date,
            "points": acc.points,
            "by_quantity": {q: {"scope": scope, "points": e.n, "median_abs_error": e.median, "p90_abs_error": e.p90}
                            for q, (e, scope) in acc.for_engine(engine).items()}}


def accuracy_line(acc: dict | None, display: str) -> str | None:
    """The table's line from ``accuracy_dict``'s record: 'held-out error against published runs on vLLM,
    median / 90th percentile of |predicted / published - 1| (...): TTFT 31% / 59% (21 points); ...'."""
    if not acc or not acc["by_quantity"]:
        return None
    parts = []
    for q, e in acc["by_quantity"].items():
        where = ", all engines" if e["scope"] == "all" else ""
        parts.append(f"{LABELS[q]} {e['median_abs_error']:.0%} / {e['p90_abs_error']:.0%} ({e['points']} points{where})")
    return (f"held-out error against published runs on {display}, median / 90th percentile of |predicted / "
            f"published - 1| (bench/published.py k-fold of {acc['date']}): " + "; ".join(parts))


__all__ = ["Accuracy", "Error", "load", "parse", "accuracy_dict", "accuracy_line", "QUANTITIES", "MIN_POINTS"]
