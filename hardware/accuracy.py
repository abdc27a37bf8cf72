"""How far ``planner serve`` has been from published measurements: the held-out error that
``bench/published.py --write-accuracy`` writes to ``profiles/engines/_accuracy.yaml`` after its k-fold
(each published point predicted by factors fitted without it). Per timing quantity and regime, over all
engines and per engine: the points, the median and the 90th percentile of |predicted / published − 1|.
``serve`` prints the figures of its engine and regime beside its prediction, so that a user reads the
expected number with the error it has had; an engine with fewer than ``MIN_POINTS`` points of a quantity
gets the all-engine figure, marked so.

Two regimes (``regime_of``), because the published runs split into two populations whose errors differ
several-fold: ``server_burst``, a benchmark through the engine's HTTP server with more than
``BURST_PER_REPLICA`` requests per replica in flight (the 1,000-prompt bursts of ``vllm bench serve``
without ``--max-concurrency``, 100-500-client runs), where the front end's work under load (intake,
detokenisation, streaming every token of hundreds of requests) sets the pace and the serve model, which
prices it as a per-request intake only, has been off by 30-80 %; and ``steady``, everything else (1-64
clients through the server, in-process and offline runs of any size). The published runs hold no
server run between 65 and 99 requests per replica, so where in that range the front end starts to bind
is not known; 64 is the largest client count of a run that fits like the rest (bench/published.md).

A second record in the same layout, ``profiles/engines/_blind.yaml`` (``bench/blind.py``, ``load_blind``), holds the
blind error: the published figures each session scored with the profiles of its day before anything was fitted on
them, predicted again by the code of the commit that scored them. ``serve`` prints it as a second line and returns
it as ``accuracy_blind``: the error to expect on a source the benchmark has not seen.

A third record, ``profiles/engines/_bias.yaml`` (``bench/published.py --shipped --write-bias``, ``load_bias``), holds the
signed error of the profiles as shipped by model family (the config's ``model_type``) and by device vendor, over the
steady published runs: where a family's or a vendor's runs have come out on one side by more than the record's
threshold, over enough points from enough publishers, ``serve`` says so beside its prediction (``bias_lines``) and
returns every group that matches the deployment as ``accuracy_bias``. It is a disclosure, not a correction: a gap
that no fitted factor removes (DeepSeek-V3's prompt steps, third-party stacks on AMD's GPUs; bench/published.md)
is shown, never folded into the number."""

from __future__ import annotations

import math
from typing import Mapping

from planner.analysis.errors import HardwareError
from planner.analysis.records import frozen

QUANTITIES = ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s")
LABELS = {"ttft_s": "TTFT", "tpot_s": "TPOT", "e2e_s": "e2e", "output_tokens_per_s": "output tokens/s"}
MIN_POINTS = 5  # fewer points of a quantity on the engine: the all-engine figure is shown instead
WHERE = "profiles/engines/_accuracy.yaml"
BLIND_WHERE = "profiles/engines/_blind.yaml"
BURST_PER_REPLICA = 64  # more requests per replica than this through the HTTP server: the server_burst regime
REGIMES = {
    "steady": "published runs other than bursts through the HTTP server",
    "server_burst": f"published runs through the HTTP server with more than {BURST_PER_REPLICA} requests per replica",
}


def regime_of(server: bool, concurrency: int, replicas: int = 1) -> str:
    """``server_burst`` where requests reach the engine through its HTTP server (``server``) and more than
    ``BURST_PER_REPLICA`` of the ``concurrency`` in flight fall on one of the ``replicas`` (split evenly,
    the larger share rounded up), else ``steady``."""
    return "server_burst" if server and -(-concurrency // max(1, replicas)) > BURST_PER_REPLICA else "steady"


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
    overall: Mapping[str, Error]  # the steady regime, all engines
    engines: Mapping[str, Mapping[str, Error]]  # the steady regime, per engine
    burst_overall: Mapping[str, Error]  # the server_burst regime (empty: the record has none)
    burst_engines: Mapping[str, Mapping[str, Error]]

    def for_engine(self, engine: str, regime: str = "steady") -> dict[str, tuple[Error, str]]:
        """Per quantity, the engine's figure in ``regime`` where it has ``MIN_POINTS`` points or more,
        else the all-engine one of that regime; with the scope (the engine's name or ``"all"``). A regime
        the record has no figures for gets none."""
        overall, engines = ((self.burst_overall, self.burst_engines) if regime == "server_burst"
                            else (self.overall, self.engines))
        out = {}
        mine = engines.get(engine, {})
        for q in QUANTITIES:
            if q in mine and mine[q].n >= MIN_POINTS:
                out[q] = (mine[q], engine)
            elif q in overall:
                out[q] = (overall[q], "all")
        return out


def _error(d, where: str, file: str = WHERE) -> Error:
    if not isinstance(d, Mapping):
        raise HardwareError(f"{file}: {where} is not a mapping of n, median, p90", "rerun the script that writes it")
    try:
        n, med, p90 = d["n"], d["median"], d["p90"]
    except KeyError as e:
        raise HardwareError(f"{file}: {where} lacks {e.args[0]!r}", "rerun the script that writes it") from None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise HardwareError(f"{file}: {where}.n must be a positive integer, got {n!r}", "fix the file")
    for name, v in (("median", med), ("p90", p90)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise HardwareError(f"{file}: {where}.{name} must be a finite number >= 0, got {v!r}", "fix the file")
    if p90 < med:
        raise HardwareError(f"{file}: {where}.p90 {p90} is below its median {med}", "fix the file")
    return Error(n, float(med), float(p90))


def _table(d, where: str, file: str = WHERE) -> dict[str, Error]:
    if not isinstance(d, Mapping):
        raise HardwareError(f"{file}: {where} is not a mapping of quantities", "fix the file")
    bad = [k for k in d if k not in QUANTITIES]
    if bad:
        raise HardwareError(f"{file}: {where} has unknown quantity {bad[0]!r}", f"use {', '.join(QUANTITIES)}")
    return {q: _error(v, f"{where}.{q}", file) for q, v in d.items()}


def _regime(d, where: str, file: str = WHERE) -> tuple[dict, dict]:
    if not isinstance(d, Mapping):
        raise HardwareError(f"{file}: {where.rstrip('.') or 'the record'} is not a mapping of all and engines",
                            "fix the file")
    engines = d.get("engines") or {}
    if not isinstance(engines, Mapping):
        raise HardwareError(f"{file}: {where}engines is not a mapping", "fix the file")
    return (_table(d.get("all") or {}, f"{where}all", file),
            {str(e): _table(t, f"{where}engines.{e}", file) for e, t in engines.items()})


def parse(d, file: str = WHERE) -> Accuracy:
    """The accuracy record from the YAML's data; ``HardwareError`` (one line) on anything malformed.
    Layout: ``steady`` and ``server_burst``, each ``{all: {quantity: {n, median, p90}}, engines: {engine:
    {quantity: ...}}}``; a record with ``all`` and ``engines`` at the top (written before the regimes were
    split) is read as one steady regime with no burst figures."""
    if not isinstance(d, Mapping):
        raise HardwareError(f"{file} is not a mapping", "rerun the script that writes it")
    points = d.get("points")
    if isinstance(points, bool) or not isinstance(points, int) or points < 0:
        raise HardwareError(f"{file}: points must be a count, got {points!r}", "fix the file")
    if "steady" in d or "server_burst" in d:
        overall, engines = _regime(d.get("steady") or {}, "steady.", file)
        b_overall, b_engines = _regime(d.get("server_burst") or {}, "server_burst.", file)
    else:
        overall, engines = _regime(d, "", file)
        b_overall, b_engines = {}, {}
    return Accuracy(str(d.get("date", "")), str(d.get("command", "")), points, overall, engines, b_overall, b_engines)


def _load_shipped(stem: str, read):
    """``read`` of the shipped record ``profiles/engines/<stem>.yaml``'s data; None where the package has none."""
    from .engine import _engines_folder, _read_yaml

    if not _engines_folder().joinpath(f"{stem}.yaml").is_file():
        return None
    return read(_read_yaml(stem))


def load() -> Accuracy | None:
    """The shipped record (None where the package has none)."""
    return _load_shipped("_accuracy", parse)


def load_blind() -> Accuracy | None:
    """The shipped blind record (``BLIND_WHERE``, written by ``bench/blind.py``: the figures that each session
    scored with the profiles of its day before anything was fitted on them); None where the package has none."""
    return _load_shipped("_blind", lambda d: parse(d, BLIND_WHERE))


BIAS_WHERE = "profiles/engines/_bias.yaml"
BIAS_DIMENSIONS = {"family": "models of model_type", "vendor": "GPUs of vendor"}


@frozen
class Bias:
    dimension: str  # "family" (the config's model_type) or "vendor" (the hardware profile's)
    key: str  # e.g. "deepseek_v3", "AMD"
    quantity: str
    n: int  # steady published points
    publishers: int  # distinct publishers among them (a repository, else a web host)
    median_error: float  # median of predicted / published - 1 (signed)
    median_abs_error: float

    @property
    def published_over_predicted(self) -> float:
        """The median of published / predicted (the signed median's inverse: the ratio is monotone in it)."""
        return 1.0 / (1.0 + self.median_error)


@frozen
class BiasRecord:
    date: str
    command: str
    points: int  # steady timing points predicted
    min_points: int  # a group with fewer points is not recorded
    min_publishers: int  # nor one with fewer publishers
    threshold: float  # |median_error| at or beyond which serve says so
    groups: tuple  # of Bias

    def matching(self, family: str, vendor: str) -> list:
        """The groups of this model family or this vendor, in the record's order."""
        return [g for g in self.groups if (g.dimension, g.key) in (("family", family), ("vendor", vendor))]


def _count(d: Mapping, name: str, file: str, where: str, least: int = 0) -> int:
    v = d.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise HardwareError(f"{file}: {where}{name} must be an integer >= {least}, got {v!r}", "rerun the script that writes it")
    return v


def _fraction(d: Mapping, name: str, file: str, where: str, *, signed: bool) -> float:
    v = d.get(name)
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or (v <= -1 if signed else v < 0)):
        want = "a finite number above -1" if signed else "a finite number >= 0"
        raise HardwareError(f"{file}: {where}{name} must be {want}, got {v!r}", "rerun the script that writes it")
    return float(v)


def parse_bias(d, file: str = BIAS_WHERE) -> BiasRecord:
    """The bias record from the YAML's data; ``HardwareError`` (one line) on anything malformed. Layout: ``date``,
    ``command``, ``points``, ``min_points``, ``min_publishers``, ``threshold`` and ``groups``, a list of ``{dimension,
    key, quantity, n, publishers, median_error, median_abs_error}``."""
    if not isinstance(d, Mapping):
        raise HardwareError(f"{file} is not a mapping", "rerun the script that writes it")
    points = _count(d, "points", file, "")
    min_points = _count(d, "min_points", file, "", 1)
    min_pub = _count(d, "min_publishers", file, "", 1)
    threshold = _fraction(d, "threshold", file, "", signed=False)
    raw = d.get("groups") or []
    if not isinstance(raw, list):
        raise HardwareError(f"{file}: groups is not a list", "rerun the script that writes it")
    groups = []
    for i, g in enumerate(raw):
        where = f"groups[{i}]."
        if not isinstance(g, Mapping):
            raise HardwareError(f"{file}: groups[{i}] is not a mapping", "rerun the script that writes it")
        dim, q = g.get("dimension"), g.get("quantity")
        if dim not in BIAS_DIMENSIONS:
            raise HardwareError(f"{file}: {where}dimension must be one of {', '.join(BIAS_DIMENSIONS)}, got {dim!r}",
                                "rerun the script that writes it")
        if q not in QUANTITIES:
            raise HardwareError(f"{file}: {where}quantity must be one of {', '.join(QUANTITIES)}, got {q!r}",
                                "rerun the script that writes it")
        if not isinstance(g.get("key"), str) or not g["key"]:
            raise HardwareError(f"{file}: {where}key must be a name, got {g.get('key')!r}", "rerun the script that writes it")
        groups.append(Bias(dim, g["key"], q, _count(g, "n", file, where, 1), _count(g, "publishers", file, where, 1),
                           _fraction(g, "median_error", file, where, signed=True),
                           _fraction(g, "median_abs_error", file, where, signed=False)))
    return BiasRecord(str(d.get("date", "")), str(d.get("command", "")), points, min_points, min_pub, threshold,
                      tuple(groups))


def load_bias() -> BiasRecord | None:
    """The shipped bias record (``BIAS_WHERE``, written by ``bench/published.py --shipped --write-bias``); None where
    the package has none."""
    return _load_shipped("_bias", parse_bias)


def bias_dict(rec: BiasRecord | None, family: str, vendor: str, engine: str) -> dict | None:
    """``serve --json``'s ``accuracy_bias``: every group of the record that matches the deployment's model family
    or device vendor (``flagged`` where |median_error| reaches the record's threshold); None without a record or
    for ``--engine ideal``."""
    if rec is None or engine == "ideal":
        return None
    return {"source": "bench/published.py --shipped --write-bias (profiles/engines/_bias.yaml)", "date": rec.date,
            "points": rec.points, "regime": "steady", "threshold": rec.threshold,
            "groups": [{"dimension": g.dimension, "key": g.key, "quantity": g.quantity, "points": g.n,
                        "publishers": g.publishers, "median_error": g.median_error,
                        "median_abs_error": g.median_abs_error,
                        "published_over_predicted": round(g.published_over_predicted, 3),
                        "flagged": abs(g.median_error) >= rec.threshold}
                       for g in rec.matching(family, vendor)]}


def bias_lines(bias: dict | None) -> list[str]:
    """One line per family or vendor with a flagged group: 'published runs of deepseek_v3 models measured a median
    2.22× the TTFT and 0.65× the output tokens/s predicted here (35 and 37 steady points from 6 and 4 publishers;
    bench/published.py --shipped of 2026-12-05), a gap no fitted factor removes: expect it here too'."""
    if not bias:
        return []
    out = []
    seen: dict = {}
    for g in bias["groups"]:
        if g["flagged"]:
            seen.setdefault((g["dimension"], g["key"]), []).append(g)
    def join(xs: list[str]) -> str:
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]

    for (dim, key), gs in seen.items():
        gs.sort(key=lambda g: QUANTITIES.index(g["quantity"]))
        who = f"of {key} models" if dim == "family" else f"on {key} GPUs"
        what = join([f"{g['published_over_predicted']:.2f}× the {LABELS[g['quantity']]}" for g in gs])
        n = join([str(g["points"]) for g in gs])
        pubs = join([str(g["publishers"]) for g in gs])
        out.append(f"bias on record: published runs {who} measured a median {what} predicted here ({n} steady points "
                   f"from {pubs} publishers; bench/published.py --shipped of {bias['date']}), a gap no fitted factor "
                   f"removes: expect it here too")
    return out


SOURCES = {"k-fold": "bench/published.py --write-accuracy (profiles/engines/_accuracy.yaml)",
           "blind": "bench/blind.py --write profiles/engines/_blind.yaml"}


def accuracy_dict(acc: Accuracy | None, engine: str, regime: str = "steady", kind: str = "k-fold") -> dict | None:
    """``serve --json``'s ``accuracy`` (``kind`` "k-fold": each point predicted by factors fitted without it)
    and ``accuracy_blind`` ("blind": each point predicted by the profiles of the day it was found, before
    anything was fitted on it): per quantity the error that applies to ``engine`` in the scenario's ``regime``
    (``regime_of``)."""
    if acc is None or engine == "ideal":
        return None
    return {"source": SOURCES[kind], "kind": kind, "date": acc.date,
            "points": acc.points, "regime": regime, "regime_means": REGIMES[regime],
            "by_quantity": {q: {"scope": scope, "points": e.n, "median_abs_error": e.median, "p90_abs_error": e.p90}
                            for q, (e, scope) in acc.for_engine(engine, regime).items()}}


def accuracy_line(acc: dict | None, display: str) -> str | None:
    """The table's line from ``accuracy_dict``'s record: 'held-out error against published runs on vLLM,
    median / 90th percentile of |predicted / published - 1| (...): TTFT 31% / 59% (21 points); ...'; in the
    ``server_burst`` regime it says so ('... on vLLM through the HTTP server with more than 64 requests per
    replica, ...'); a blind record (``kind`` "blind") says 'blind error against published runs ... that the
    profiles had not seen'."""
    if not acc or not acc["by_quantity"]:
        return None
    parts = []
    for q, e in acc["by_quantity"].items():
        where = ", all engines" if e["scope"] == "all" else ""
        parts.append(f"{LABELS[q]} {e['median_abs_error']:.0%} / {e['p90_abs_error']:.0%} ({e['points']} points{where})")
    regime = (f" through the HTTP server with more than {BURST_PER_REPLICA} requests per replica"
              if acc.get("regime") == "server_burst" else "")
    if acc.get("kind") == "blind":
        return (f"blind error against published runs on {display}{regime} that the profiles had not seen, median / 90th "
                f"percentile of |predicted / published - 1| (bench/blind.py of {acc['date']}: each figure predicted by "
                "the profiles of the day it was found): " + "; ".join(parts))
    return (f"held-out error against published runs on {display}{regime}, median / 90th percentile of |predicted / "
            f"published - 1| (bench/published.py k-fold of {acc['date']}, over the {acc['points']:,} published points "
            "of that day): " + "; ".join(parts))


__all__ = ["Accuracy", "Error", "load", "load_blind", "parse", "BLIND_WHERE", "BIAS_WHERE", "BIAS_DIMENSIONS", "Bias",
           "BiasRecord", "bias_dict", "bias_lines", "load_bias", "parse_bias", "SOURCES", "accuracy_dict", "accuracy_line", "regime_of", "QUANTITIES", "MIN_POINTS",
           "BURST_PER_REPLICA", "REGIMES"]
