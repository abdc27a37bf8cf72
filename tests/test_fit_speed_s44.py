"""What makes bench/published.py's k-fold faster without changing a prediction: the roofline time of a step's
ops kept beside the ops (it does not depend on the factors), the floored op sum taken in the same pass as the
plain one, and the ``Predictor`` that splits each trial's points over worker processes by simulation group."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.parallel import tp_plan
from planner.cli.common import load_model
from planner.hardware.engine import load_engine
from planner.hardware.expected import IDEAL, factors_for, ops_time_s, ops_times_s
from planner.hardware.profiles import load_profile
from planner.hardware.serve import StepModel
from tests.test_published_fit import Toy, pub


def _model(gpu: str, cache: dict, bandwidth: float | None = None):
    spec = load_model("llama-3.1-8b").spec
    a = analyze(spec, Options(context=4096))
    hw = load_profile(gpu)
    f = factors_for(hw, load_engine("vllm"))
    if bandwidth is not None:
        f = replace(f, memory_bandwidth=bandwidth)
    return StepModel(a, hw, tp_plan(spec, 1), f, ops_cache=cache, detail=False), hw


def test_the_kept_roofline_is_the_devices_own_and_no_factor_moves_it():
    shared: dict = {}
    h100, hw100 = _model("h100-sxm", shared)
    h200, hw200 = _model("h200", shared)  # the same ops, another device, one cache
    slow, _ = _model("h100-sxm", shared, bandwidth=0.5)
    for batch, ctx in ((1, 100), (32, 3000)):
        ops = h100._ops(batch, 1, ctx)
        for m, hw in ((h100, hw100), (h200, hw200)):
            roof = ops_time_s(ops, hw.peak_flops_for(m.compute_key), hw.memory_bandwidth_bytes_per_s, IDEAL,
                              decode=True, rows=batch)
            assert m.decode(batch, ctx).ideal_s == pytest.approx(roof, rel=1e-12)  # TP1: no all-reduce
        assert h200.decode(batch, ctx).ideal_s < h100.decode(batch, ctx).ideal_s  # 4.8 against 3.35 TB/s
        assert slow.decode(batch, ctx).ideal_s == h100.decode(batch, ctx).ideal_s
        assert slow.decode(batch, ctx).expected_s > h100.decode(batch, ctx).expected_s
    p = h100.prefill({(2048, 0): 1})
    fresh, _ = _model("h100-sxm", {})
    assert p.ideal_s == fresh.prefill({(2048, 0): 1}).ideal_s
    assert p.expected_s == fresh.prefill({(2048, 0): 1}).expected_s


def test_the_floored_sum_in_one_pass():
    m, hw = _model("h100-sxm", {})
    ops = m._ops(1, 1, 100)
    peak, bw = hw.peak_flops_for(m.compute_key), hw.memory_bandwidth_bytes_per_s
    plain, floored = ops_times_s(ops, peak, bw, m.f, decode=True, rows=1, floor_s=1.0)  # a floor above every op
    assert floored == pytest.approx(sum(g.count for g in ops) * 1.0)
    assert plain == ops_time_s(ops, peak, bw, m.f, decode=True, rows=1)
    assert ops_times_s(ops, peak, bw, m.f, decode=True, rows=1) == (plain, plain)


def test_predictor_in_two_processes_keeps_each_group_on_one_worker():
    pts = []
    for i, a in enumerate((0.5, 0.6, 0.7, 0.8, 0.9, 1.0)):
        p = Toy(f"p{i}", "tpot_s", a, 1.0)
        p.predict = lambda params, a=a: params["memory_bandwidth"] / a
        p.sim_key = f"row{i // 2}"  # two entries of each benchmark row
        pts.append(p)
    pool = pub.Predictor(pts, 2)
    try:
        for g in range(3):
            assert pool.owner[id(pts[2 * g])] == pool.owner[id(pts[2 * g + 1])]
        assert len(set(pool.owner.values())) == 2
        asked = [pts[5], pts[0], pts[3]]
        assert pool({"memory_bandwidth": 0.6}, asked) == [0.6 / 1.0, 0.6 / 0.5, 0.6 / 0.8]
    finally:
        pool.close()
    assert pub.Predictor(pts, 1)({"memory_bandwidth": 0.6}, asked) == [0.6 / 1.0, 0.6 / 0.5, 0.6 / 0.8]


def test_predictor_raises_a_workers_error_and_goes_on():
    good = Toy("g", "tpot_s", 0.5, 1.0)
    good.predict = lambda params: params["memory_bandwidth"] / 0.5
    bad = Toy("b", "tpot_s", 0.5, 1.0)

    def fails(params):
        raise ValueError("no such factor")

    bad.predict = fails
    pool = pub.Predictor([good, bad], 2)
    try:
        with pytest.raises(RuntimeError, match="ValueError: no such factor"):
            pool({"memory_bandwidth": 0.6}, [good, bad])
        assert pool({"memory_bandwidth": 0.6}, [good]) == [1.2]  # the workers still serve
    finally:
        pool.close()
