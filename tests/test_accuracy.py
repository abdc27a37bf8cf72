"""The held-out error that ``serve`` prints beside its prediction (hardware/accuracy.py), and the
summary ``bench/published.py --write-accuracy`` writes, on hand-made cases. The shipped figures are the
benchmark's output and are not asserted here, only that the shipped file reads."""

from __future__ import annotations

import pytest

from planner.analysis.errors import HardwareError
from planner.hardware import accuracy as A
from tests.clirun import run
from tests.test_published_fit import pub  # bench/published.py, loaded once


def _record(**over):
    d = {"date": "2026-12-01", "command": "python bench/published.py --folds 5", "points": 40,
         "steady": {"all": {"ttft_s": {"n": 30, "median": 0.2, "p90": 0.6}, "tpot_s": {"n": 20, "median": 0.08, "p90": 0.3}},
                    "engines": {"vllm": {"ttft_s": {"n": 12, "median": 0.35, "p90": 1.5},
                                         "tpot_s": {"n": 3, "median": 0.01, "p90": 0.02}}}},
         "server_burst": {"all": {"ttft_s": {"n": 9, "median": 0.45, "p90": 0.9}},
                          "engines": {"vllm": {"ttft_s": {"n": 6, "median": 0.55, "p90": 1.2}}}}}
    d.update(over)
    return d


def _bad(where, table):
    """A record whose steady ``where`` ("all" or "engines") is ``table``."""
    r = _record()
    r["steady"] = {**r["steady"], where: table}
    return r


def test_engine_figure_where_it_has_enough_points_else_all_engines():
    acc = A.parse(_record())
    got = acc.for_engine("vllm")
    assert got["ttft_s"] == (A.Error(12, 0.35, 1.5), "vllm")
    # vLLM has 3 TPOT points (< MIN_POINTS): the all-engine figure, marked so
    assert A.MIN_POINTS > 3
    assert got["tpot_s"] == (A.Error(20, 0.08, 0.3), "all")
    # an engine with no points of its own gets every quantity from all engines; none has e2e here
    assert A.parse(_record()).for_engine("sglang") == {"ttft_s": (A.Error(30, 0.2, 0.6), "all"),
                                                       "tpot_s": (A.Error(20, 0.08, 0.3), "all")}


def test_line_and_json_name_scope_points_and_percentages():
    acc = A.parse(_record())
    line = A.accuracy_line(A.accuracy_dict(acc, "vllm"), "vLLM")
    assert "on vLLM" in line and "k-fold of 2026-12-01" in line
    # the record's size, so that a record older than the benchmark's file reads as such
    assert "k-fold of 2026-12-01, over the 40 published points of that day" in line
    assert "over the 1,234 published points" in A.accuracy_line(A.accuracy_dict(A.parse(_record(points=1234)), "vllm"), "vLLM")
    assert "TTFT 35% / 150% (12 points)" in line
    assert "TPOT 8% / 30% (20 points, all engines)" in line
    d = A.accuracy_dict(acc, "vllm")
    assert d["by_quantity"]["ttft_s"] == {"scope": "vllm", "points": 12, "median_abs_error": 0.35, "p90_abs_error": 1.5}
    assert d["by_quantity"]["tpot_s"]["scope"] == "all"
    # the ideal roofline is no engine's prediction: no error is claimed for it
    assert A.accuracy_dict(acc, "ideal") is None and A.accuracy_line(None, "ideal") is None
    assert A.accuracy_dict(None, "vllm") is None


@pytest.mark.parametrize("bad, words", [
    (_record(points=-1), "points must be a count"),
    (_bad("all", {"ttft_s": {"n": 0, "median": 0.1, "p90": 0.2}}), "steady.all.ttft_s.n must be a positive integer"),
    (_bad("all", {"ttft_s": {"n": 3, "median": 0.3, "p90": 0.2}}), "p90 0.2 is below its median 0.3"),
    (_bad("all", {"ttft_s": {"n": 3, "median": float("nan"), "p90": 0.2}}), "median must be a finite number"),
    (_bad("all", {"ttft_s": {"n": 3, "median": 0.1}}), "lacks 'p90'"),
    (_bad("all", {"latency": {"n": 3, "median": 0.1, "p90": 0.2}}), "unknown quantity 'latency'"),
    (_bad("engines", {"vllm": [1, 2]}), "steady.engines.vllm is not a mapping"),
    (_record(server_burst=[1]), "server_burst is not a mapping of all and engines"),
])
def test_malformed_record_is_one_error(bad, words):
    with pytest.raises(HardwareError, match=words.replace("(", r"\(").replace(")", r"\)")):
        A.parse(bad)
    with pytest.raises(HardwareError, match="is not a mapping"):
        A.parse([1, 2])


def test_write_accuracy_summary_by_hand():
    # nearest rank: the smallest value with at least 90 % of the values at or below it
    assert pub.nearest_rank([0.5, 0.1, 0.3, 0.2, 0.4], 0.9) == 0.5  # ceil(4.5) = 5th of 5
    assert pub.nearest_rank([i / 10 for i in range(1, 11)], 0.9) == pytest.approx(0.9)  # 9th of 10
    rows = [("vllm", "ttft_s", "steady", 0.1), ("vllm", "ttft_s", "steady", 0.4), ("vllm", "ttft_s", "steady", 0.2),
            ("sglang", "ttft_s", "steady", 0.05), ("vllm", "tpot_s", "steady", 0.07),
            ("vllm", "ttft_s", "server_burst", 0.6), ("vllm", "ttft_s", "server_burst", 0.2)]
    s = pub.accuracy_summary(rows, command="c", date="d", points=9)
    assert s["steady"]["all"]["ttft_s"] == {"n": 4, "median": 0.15, "p90": 0.4}  # (0.1 + 0.2) / 2; 4th of 4
    assert s["steady"]["engines"]["vllm"]["ttft_s"] == {"n": 3, "median": 0.2, "p90": 0.4}
    assert s["steady"]["engines"]["sglang"] == {"ttft_s": {"n": 1, "median": 0.05, "p90": 0.05}}
    assert "e2e_s" not in s["steady"]["all"]
    # the bursts are summarised apart and do not enter the steady figures
    assert s["server_burst"]["all"] == {"ttft_s": {"n": 2, "median": 0.4, "p90": 0.6}}
    # what it writes is what serve reads
    acc = A.parse(s)
    assert acc.for_engine("sglang")["ttft_s"] == (A.Error(4, 0.15, 0.4), "all")
    assert acc.for_engine("vllm", "server_burst") == {"ttft_s": (A.Error(2, 0.4, 0.6), "all")}


def test_regime_boundary_and_burst_figures():
    assert A.regime_of(True, A.BURST_PER_REPLICA) == "steady"
    assert A.regime_of(True, A.BURST_PER_REPLICA + 1) == "server_burst"
    assert A.regime_of(True, 2 * A.BURST_PER_REPLICA, 2) == "steady"  # 64 on each of two replicas
    assert A.regime_of(True, 2 * A.BURST_PER_REPLICA + 1, 2) == "server_burst"  # 65 on one of them
    assert A.regime_of(False, 10_000) == "steady"  # an offline or in-process run is never a server burst
    acc = A.parse(_record())
    assert acc.for_engine("vllm", "server_burst") == {"ttft_s": (A.Error(6, 0.55, 1.2), "vllm")}
    line = A.accuracy_line(A.accuracy_dict(acc, "vllm", "server_burst"), "vLLM")
    assert "on vLLM through the HTTP server with more than 64 requests per replica" in line
    assert "TTFT 55% / 120% (6 points)" in line
    assert "through the HTTP server" not in A.accuracy_line(A.accuracy_dict(acc, "vllm"), "vLLM")
    # a record written before the split (all and engines at the top) is one steady regime, with no burst figures
    legacy = {"points": 5, "all": {"ttft_s": {"n": 5, "median": 0.2, "p90": 0.3}}}
    old = A.parse(legacy)
    assert old.for_engine("vllm") == {"ttft_s": (A.Error(5, 0.2, 0.3), "all")}
    assert old.for_engine("vllm", "server_burst") == {}
    assert A.accuracy_line(A.accuracy_dict(old, "vllm", "server_burst"), "vLLM") is None


def test_shipped_record_reads():
    acc = A.load()
    assert acc is not None and acc.points > 0
    assert set(acc.overall) == set(A.QUANTITIES)


def test_serve_prints_the_engines_figures(monkeypatch):
    monkeypatch.setattr(A, "load", lambda: A.parse(_record()))
    r = run("serve", "llama-3.1-8b", "--json")
    assert r.code == 0, r.err
    assert r.json["accuracy"]["regime"] == "steady"
    assert r.json["accuracy"]["by_quantity"]["ttft_s"]["median_abs_error"] == 0.35
    r = run("serve", "llama-3.1-8b", "--engine", "sglang")
    assert r.code == 0, r.err
    assert "TTFT 20% / 60% (30 points, all engines)" in " ".join(r.out.split())
    # 130 clients on two replicas: 65 per replica through the server, the burst figures
    r = run("serve", "llama-3.1-8b", "--gpus", "2", "--tp", "1", "--concurrency", "130", "--json")
    assert r.code == 0, r.err
    assert r.json["accuracy"]["regime"] == "server_burst"
    assert r.json["accuracy"]["by_quantity"] == {"ttft_s": {"scope": "vllm", "points": 6, "median_abs_error": 0.55,
                                                            "p90_abs_error": 1.2}}
    r = run("serve", "llama-3.1-8b", "--gpus", "2", "--tp", "1", "--concurrency", "128", "--json")
    assert r.json["accuracy"]["regime"] == "steady"  # 64 per replica
    # no prediction (the model does not fit): no error figure
    r = run("serve", "llama-3.1-70b", "-H", "l4", "--json")
    assert r.code == 0 and r.json["fits"] is False and r.json["accuracy"] is None


def test_broken_shipped_file_is_one_error_line(tmp_path, monkeypatch):
    from tests.test_published_fit import _engines_copy

    _engines_copy(tmp_path, monkeypatch, _accuracy="points: 3\nsteady: {all: {ttft_s: {n: 2, median: 0.5, p90: 0.1}}}\n")
    r = run("serve", "llama-3.1-8b")
    r.assert_error("_accuracy.yaml", "below its median")
