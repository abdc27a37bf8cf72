"""bench/published.py's --fit-sample and --no-allfit (session 65): a k-fold whose folds are fitted on a fixed
share of the benchmark rows, every held-out point still predicted, and the fit on all points skipped. Small
hand-made cases and runs of the script on four points; no published figure is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_published_fit import load_bench

ROOT = Path(__file__).resolve().parents[1]
pub = load_bench("published")


class Row:
    """A stand-in for Point: what in_fit_sample reads (its row's sim_key) and a prediction of one factor."""

    def __init__(self, pid: str, key: str, truth: float = 0.8):
        self.id, self.sim_key, self.quantity, self.value, self.engine_name = pid, key, "tpot_s", 1.0, "e"
        self.truth = truth

    def predict(self, params=None):
        return (params or {}).get("memory_bandwidth", 0.8) / self.truth


def test_the_sample_is_a_fixed_share_of_the_rows_and_grows_with_the_share():
    rows = [Row(f"p{i}", f"row {i}") for i in range(20_000)]
    for f in (0.1, 0.4, 0.75):
        share = sum(pub.in_fit_sample(r, f) for r in rows) / len(rows)
        assert abs(share - f) < 0.02, (f, share)
    # a row in the sample at 0.4 is in it at 0.75; every row at 1
    assert all(pub.in_fit_sample(r, 0.75) for r in rows if pub.in_fit_sample(r, 0.4))
    assert all(pub.in_fit_sample(r, 1.0) for r in rows)
    # the entries of one row (one sim_key) are in or out together, whatever their ids
    a, b = Row("ttft of row 7", "row 7"), Row("tpot of row 7", "row 7")
    assert [pub.in_fit_sample(a, f) for f in (0.1, 0.4, 0.75)] == [pub.in_fit_sample(b, f) for f in (0.1, 0.4, 0.75)]


def test_run_fits_predicts_each_test_set_with_its_own_fit_in_any_number_of_processes():
    """With ``tests``, each training set's item is its factors and its test points' predictions under them:
    the two folds here land on different bandwidth fractions, and each test set is priced with its own."""
    pts = [Row(f"p{i}", f"row {i}", truth) for i, truth in enumerate((0.5, 0.5, 0.9, 0.9))]
    trains, tests = [[0, 1], [2, 3]], [[2, 3], [0, 1]]
    how = dict(objective="l1", max_sweeps=20, grid={**pub.GRID, "memory_bandwidth": [0.5, 0.7, 0.9]})
    start = lambda train: {"memory_bandwidth": 0.7}  # noqa: E731
    one = pub.run_fits(pts, trains, how, jobs=1, start=start, tests=tests)
    assert [params["memory_bandwidth"] for params, _ in one] == [0.5, 0.9]
    assert one[0][1] == [0.5 / 0.9, 0.5 / 0.9] and one[1][1] == [0.9 / 0.5, 0.9 / 0.5]
    assert pub.run_fits(pts, trains, how, jobs=2, start=start, tests=tests) == one


@pytest.mark.parametrize("bad", [["--fit-sample", "0"], ["--fit-sample", "1.5"], ["--fit-sample", "-0.2"],
                                 ["--shipped", "--fit-sample", "0.5"], ["--shipped", "--no-allfit"]])
def test_fit_sample_and_no_allfit_refuse_what_they_cannot_do(bad, capsys):
    with pytest.raises(SystemExit) as e:
        pub.main(["--only", "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft", *bad])
    assert e.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error:" in last and bad[-2 if bad[-1][0] != "-" else -1] in last


IDS = ["gpustack-vllm-qwen3-8b-h100-sharegpt-c1-tpot", "gpustack-vllm-qwen3-8b-h100-sharegpt-c2-tpot",
       "gpustack-vllm-qwen3-8b-h100-sharegpt-c4-tpot", "gpustack-vllm-qwen3-8b-h100-sharegpt-c8-tpot"]


def _held_out(out: str) -> dict[str, str]:
    """id -> the held-out column of the script's per-point table."""
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] in IDS:
            got[parts[0]] = parts[-2]
    return got


def _subset(tmp_path) -> Path:
    """A data file of the IDS entries alone (--write-accuracy refuses --only, not --data)."""
    import yaml

    entries = [e for e in pub.read_yaml((ROOT / "bench" / "published.yaml").read_text()) if e["id"] in IDS]
    path = tmp_path / "four.yaml"
    path.write_text(yaml.safe_dump(entries, sort_keys=False))
    return path


def test_no_allfit_gives_the_same_held_out_column_and_writes_the_record(capsys, tmp_path):
    """--no-allfit changes no fold's fit: the held-out column is the one of the run that also fits all points,
    and --write-accuracy writes its record without that fit."""
    common = ["--data", str(_subset(tmp_path)), "--folds", "2", "--sweeps", "1"]
    assert pub.main(common) == 0
    full = capsys.readouterr().out
    path = tmp_path / "acc.yaml"
    assert pub.main([*common, "--no-allfit", "--write-accuracy", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not fitted (--no-allfit)" in out and "not fitted" not in full
    assert _held_out(out) == _held_out(full) and len(_held_out(out)) == 4
    assert all(v not in ("-", "train") for v in _held_out(out).values())
    import yaml

    rec = yaml.safe_load(path.read_text())
    assert rec["steady"]["all"]["tpot_s"]["n"] == 4 and "--no-allfit" in rec["command"]


def test_a_fit_sample_fits_on_fewer_points_and_still_predicts_every_held_out_one(capsys):
    share = 0.5
    points, _ = pub.load_points(pub.ROOT / "bench" / "published.yaml", IDS)
    assert pub.main(["--only", *IDS, "--folds", "2", "--sweeps", "1", "--no-allfit", "--fit-sample", str(share)]) == 0
    out = capsys.readouterr().out
    fitted = sum(pub.in_fit_sample(p, share) for p in points)
    assert f"on 0.5 of the rows (--fit-sample): {fitted} points there" in out
    assert len(_held_out(out)) == 4 and all(v not in ("-", "train") for v in _held_out(out).values())
