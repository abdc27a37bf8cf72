"""bench/plan_published.py's request-rate entries (issue 12, item 5): the workload a rate entry builds
(Poisson arrivals at its rate with a fixed seed, lengths drawn and cut as the benchmark's dataset filter
does) and that bench/published.py fits nothing on such an entry. No timing is asserted here: the
predicted-against-published table is bench/plan_published.py --rate's output (bench/published.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
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
        # the simulation gives the mean, the median and the percentiles of each figure over the requests
        assert e["statistic"] in load_bench("plan_published").RATE_STATISTICS
        assert e["source"]["url"].startswith("https://")
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(rate[:2]))
    points, skipped = pub.load_points(path, None)
    assert points == []
    assert [i for i, _ in skipped] == [rate[0]["id"], rate[1]["id"]]
    assert all("request-rate" in why for _, why in skipped)


def _cap_entry(**settings):
    s = {"arrival": "poisson", "client": "server", "request_rate": 400.0, "num_requests": 96, "input_len": 512,
         "output_len": 64, "dtype": "bf16", "max_model_len": 1024, **settings}
    return {"id": "cap-test", "quantity": "ttft_s", "statistic": "mean", "value": 0.1, "engine": "vllm",
            "engine_version": "0.18.0", "model": "Qwen/Qwen3-8B", "model_config": "Qwen/Qwen3-8B", "gpu": "h100-sxm",
            "gpus": 1, "tp": 1, "settings": s, "source": {"url": "https://example.invalid/"}}


def test_a_rate_entry_behind_max_concurrency_is_simulated_with_the_client_cap():
    # vllm bench serve --request-rate 400 --max-concurrency 8: 96 requests arrive within a quarter second, far
    # faster than one H100 serves them; uncapped they queue in the engine (TTFT grows through the run), capped
    # the client holds them and each is timed from its send, so TTFT stays near a prompt step; a cap as large
    # as the run changes nothing
    pub, pp = load_bench("published"), load_bench("plan_published")
    free = pp.rate_predict(_cap_entry(), pub)
    capped = pp.rate_predict(_cap_entry(max_concurrency=8), pub)
    wide = pp.rate_predict(_cap_entry(max_concurrency=96), pub)
    assert capped["ttft_s"] < free["ttft_s"] / 3
    assert capped["e2e_s"] < free["e2e_s"]
    assert wide == free
    # the serve loop (vLLM V0's multi-step rounds) has no client cap: such an entry is listed as skipped
    got, how = pp.rate_prediction(_cap_entry(max_concurrency=8, num_scheduler_steps=8), pub, {})
    assert isinstance(got, str) and got.startswith("skipped") and "max_concurrency" in got


def test_a_rate_statistic_is_the_benchmark_clients():
    # vllm bench serve's percentiles: np.percentile over the requests, linear between ranks; nan (a request
    # without the figure, e.g. the TPOT of a one-token output) left out
    pp = load_bench("plan_published")
    x = np.array([1.0, 2.0, np.nan, 3.0, 4.0, 10.0])
    assert pp.rate_statistic("mean")(x) == 4.0
    assert pp.rate_statistic("median")(x) == 3.0
    assert pp.rate_statistic("p90")(x) == pytest.approx(7.6)  # (4 + 0.6 × (10 − 4))
    assert pp.rate_statistic("p99")(x) == np.percentile([1, 2, 3, 4, 10], 99)
    with pytest.raises(ValueError, match="statistic"):
        pp.rate_statistic("p50x")
