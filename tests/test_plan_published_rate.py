"""bench/plan_published.py's request-rate entries (issue 12, item 5): the workload a rate entry builds
(Poisson arrivals at its rate with a fixed seed, lengths drawn and cut as the benchmark's dataset filter
does) and that bench/published.py fits nothing on such an entry. No timing is asserted here: the
predicted-against-published table is bench/plan_published.py --rate's output (bench/published.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from tests.test_published_fit import load_bench

ROOT = Path(__file__).resolve().parents[1]

SETTINGS = {"arrival": "poisson", "request_rate": 4, "num_requests": 20_000, "input_len": 224, "output_len": 189,
            "input_len_dist": "lognormal:224:224", "output_len_dist": "lognormal:189:189",
            "max_input_len": 1024, "max_total_len": 2048}


def test_rate_workload_is_a_poisson_process_at_the_rate():
    pp = load_bench("plan_published")
    arr, i, o = pp.rate_workload(SETTINGS)
    assert arr.shape == i.shape == o.shape == (20_000,)
    assert arr[0] == 0.0 and np.all(np.diff(arr) >= 0)
    gaps = np.diff(arr)
    # exponential gaps of mean 1 / rate: the mean within 3 % (its standard error is 0.7 % at 20,000 gaps)
    # and a coefficient of variation near 1 (evenly spaced arrivals would give 0)
    assert abs(gaps.mean() * 4 - 1) < 0.03
    assert abs(gaps.std() / gaps.mean() - 1) < 0.05
    # the duration the source's own run reports for 1200 requests at 4 req/s is 302.97 s; 20,000 give ~5,000 s
    assert abs(arr[-1] / (20_000 / 4) - 1) < 0.03


def test_rate_workload_is_fixed_by_its_seed():
    pp = load_bench("plan_published")
    a1, i1, o1 = pp.rate_workload(SETTINGS)
    a2, i2, o2 = pp.rate_workload(SETTINGS)
    assert np.array_equal(a1, a2) and np.array_equal(i1, i2) and np.array_equal(o1, o2)
    a3, i3, _ = pp.rate_workload(SETTINGS, seed=pp.RATE_SEED + 7)
    assert not np.array_equal(a1, a3) and not np.array_equal(i1, i3)


def test_rate_workload_cuts_lengths_as_the_dataset_filter():
    pp = load_bench("plan_published")
    _, i, o = pp.rate_workload(SETTINGS)
    assert i.min() >= 1 and o.min() >= 1
    assert i.max() == 1024  # the lognormal's tail reaches past 1024 at 20,000 draws, and is cut there
    assert (i + o).max() <= 2048
    # the cut leaves the stated means roughly in place (the tail beyond the cuts is small)
    assert abs(i.mean() / 224 - 1) < 0.1 and abs(o.mean() / 189 - 1) < 0.1
    fixed = {**SETTINGS, "input_len_dist": None, "output_len_dist": None, "num_requests": 5}
    _, i, o = pp.rate_workload(fixed)
    assert i.tolist() == [224] * 5 and o.tolist() == [189] * 5


def test_published_fits_nothing_on_a_rate_entry(tmp_path):
    pub = load_bench("published")
    entries = yaml.safe_load((ROOT / "bench" / "published.yaml").read_text())
    rate = [e for e in entries if (e.get("settings") or {}).get("arrival") == "poisson"]
    assert rate, "bench/published.yaml holds request-rate entries"
    for e in rate:  # what rate_predict reads, and the source it is quoted from
        s = e["settings"]
        assert float(s["request_rate"]) > 0 and int(s["num_requests"]) > 0  # (R1-Benchmark's runs: 50)
        # the simulation gives a mean or a median; a p90 / p99 row is excluded with that reason (session 57's block)
        assert e["statistic"] in ("median", "mean") or "statistic not simulated" in e.get("excluded", "")
        assert e["source"]["url"].startswith("https://")
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(rate[:2]))
    points, skipped = pub.load_points(path, None)
    assert points == []
    assert [i for i, _ in skipped] == [rate[0]["id"], rate[1]["id"]]
    assert all("request-rate" in why for _, why in skipped)
