"""``planner plan``: output keys, the chosen layout against its own simulation, rejection reasons,
"needs at least N GPUs", --gpus N, bad input."""

import math
import os
import subprocess
import sys

import pytest

from tests.clirun import run
from tests.conftest import ROOT

SMALL = ["llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "8", "--rate", "4", "--input-len", "1000",
         "--output-len", "100", "--ttft-p90", "1.0", "--tpot-p90", "0.05", "--requests", "60"]


@pytest.fixture(scope="module")
def small():
    r = run("plan", *SMALL, "--price-per-hour", "2", "--json")
    assert r.code == 0, r.err
    return r.json


def test_plan_json_keys_and_consistency(small):
    d = small
    assert d["schema_version"] == 1
    for k in ("model", "hardware", "engine", "workload", "target", "search", "cheapest", "gpus_needed", "pareto",
              "rejected", "needs_at_least_gpus", "notes", "price_per_hour", "headroom"):
        assert k in d, k
    c = d["cheapest"]
    assert c is not None and c["meets_target"]
    assert c["ttft_p90_s"] <= 1.0 and c["tpot_p90_s"] <= 0.05
    lo = c["layout"]
    # the layout the output states agrees with its GPU count and replicas (a disaggregated candidate's
    # layout is its decode pool; its prefill pool adds its own GPUs)
    pf = c["prefill"]
    assert c["mode"] == ("disaggregated" if pf else "aggregated")
    pool = pf["layout"]["gpus"] if pf else 0
    assert lo["gpus"] + pool == c["gpus"] == d["gpus_needed"] and lo["gpus"] == lo["tp"] * lo["pp"] * lo["dp"]
    assert c["replicas"] == lo["dp"] and lo["gpus_per_replica"] == lo["tp"] * lo["pp"]
    assert c["gpus"] <= 8
    # cost per million output tokens = price × GPUs / (served tokens/s × 3600) × 1e6
    assert c["cost_per_million_tokens"] == pytest.approx(2 * c["gpus"] / (c["output_tokens_per_s"] * 3600) * 1e6)
    assert c["output_tokens_per_s_per_gpu"] == pytest.approx(c["output_tokens_per_s"] / c["gpus"])
    assert c["output_tokens_per_s_per_user"] == pytest.approx(1 / c["tpot_p50_s"])
    assert c["memory_per_gpu"]["fits"] and c["memory_per_gpu"]["kv_capacity_tokens"] >= 1100
    # no cheaper candidate meets the target: the cheapest has the fewest GPUs of those that do
    assert all(p["gpus"] >= c["gpus"] for p in d["pareto"] if p["meets_target"])
    # the front is a front: along falling tokens/s per GPU, tokens/s per user rises
    per_gpu = [p["output_tokens_per_s_per_gpu"] for p in d["pareto"]]
    per_user = [p["output_tokens_per_s_per_user"] for p in d["pareto"]]
    assert per_gpu == sorted(per_gpu, reverse=True) and per_user == sorted(per_user)
    for x in d["rejected"]:
        assert set(x) == {"family", "reason"} and x["reason"]
    series = c["kv_occupancy_series"]
    assert series and all(0 <= f <= 1 for _, f in series)
    assert [t for t, _ in series] == sorted(t for t, _ in series)
    assert max(f for _, f in series) <= c["kv_peak_occupancy"] + 1e-12


def test_plan_has_no_nan(small):
    def walk(v):
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(small)


def test_rejection_reasons_name_the_figure():
    d = run("plan", "llama-3.1-70b", "--gpu", "h100-sxm", "--max-gpus", "16", "--rate", "2", "--input-len", "2000",
            "--output-len", "100", "--ttft-p90", "2", "--tpot-p90", "0.05", "--requests", "40", "--json").json
    why = {x["family"]: x["reason"] for x in d["rejected"]}
    assert "does not fit" in why["TP1"] and "GiB of weights per GPU" in why["TP1"]
    # a pipeline of one sequence idles its other stages
    assert any("pipeline bubble" in r or "bubble costs" in r for f, r in why.items() if "PP" in f), why
    # TP16 spans two 8-GPU nodes: its all-reduces go over the network
    assert "TP16" in why


def test_needs_at_least_n_gpus():
    r = run("plan", "deepseek-v3", "--gpu", "h100-sxm", "--max-gpus", "4", "--rate", "1", "--input-len", "1000",
            "--output-len", "100", "--requests", "20", "--json")
    assert r.code == 0, r.err
    d = r.json
    assert d["cheapest"] is None and d["needs_at_least_gpus"] is not None
    assert d["needs_at_least_gpus"] > 8  # 671B parameters in fp8 do not fit one 8×80 GB node
    table = run("plan", "deepseek-v3", "--gpu", "h100-sxm", "--max-gpus", "4", "--rate", "1", "--input-len", "1000",
                "--output-len", "100", "--requests", "20")
    assert f"needs at least {d['needs_at_least_gpus']} GPUs" in table.out


def test_when_layouts_that_fit_miss_the_targets_the_headline_says_so():
    """Llama-3.1-70B on L40S (PCIe): TP1/TP2 do not hold it, TP4 and TP8 do, but no 3,000-token prompt is
    prefilled in 10 ms; the headline names the targets, not the fit, as the reason."""
    r = run("plan", "llama-3.1-70b", "-H", "l40s", "--rate", "2", "--ttft-p90", "0.01")
    assert r.code == 0, r.err
    assert "fits from 4 GPUs, but every layout that holds it misses a target" in " ".join(r.out.split())
    assert "needs at least" not in r.out


def test_fixed_gpus_uses_exactly_n():
    d = run("plan", *SMALL, "--gpus", "4", "--json").json
    assert d["search"]["gpus"] == 4
    assert d["cheapest"] is None or d["cheapest"]["gpus"] == 4
    assert all(p["gpus"] == 4 for p in d["pareto"])


@pytest.mark.parametrize("args, words", [
    (["--rate", "0"], "--rate"),
    (["--rate", "nan"], "--rate"),
    (["--rate", "1e300"], "--rate"),
    (["--ttft-p90", "1e9"], "--ttft-p90"),
    (["--tpot-p90", "-1"], "--tpot-p90"),
    (["--engine", "nope"], "nope"),
    (["--gpu", "no-such-gpu"], "no-such-gpu"),
])
def test_bad_input_is_one_error_line(args, words):
    run("plan", *SMALL, *args).assert_error(words)


def test_requests_bounded_where_the_search_stays_quick():
    run("plan", *SMALL, "--requests", "100000").assert_error("--requests", "5000", code=2)


def test_plan_does_not_import_torch():
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom planner.cli.app import app\n"
            f"res = CliRunner().invoke(app, ['plan', *{SMALL!r}, '--json'])\n"
            "assert res.exit_code == 0, res.output\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_plot_draws_the_front(tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra")
    p = tmp_path / "front.svg"
    r = run("plan", *SMALL, "--plot", str(p))
    assert r.code == 0, r.err
    assert p.exists() and 'id="pareto-front"' in p.read_text()


def test_plan_searches_disaggregated_pools():
    # Llama-3.1-8B at 12 req/s of 2000 in / 200 out on up to 8 H100s: xPyD candidates are simulated
    # beside the aggregated ones, each with its KV transfer on the node's NVLink (8 GPUs fit one node),
    # and every family that is not the answer keeps a reason
    r = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "8", "--rate", "12", "--input-len", "2000",
            "--output-len", "200", "--ttft-p90", "0.5", "--tpot-p90", "0.03", "--requests", "80", "--json")
    assert r.code == 0, r.err
    d = r.json
    fams = {x["family"] for x in d["rejected"]}
    dis = [c for c in d["pareto"] + [d["cheapest"] or {}] if c.get("mode") == "disaggregated"]
    assert any(f.startswith("disagg ") for f in fams) or dis
    assert any("disaggregated candidates" in n for n in d["notes"])
    for c in dis:
        pf = c["prefill"]
        assert pf["kv_transfer_link"] == "intra_node" and pf["kv_transfer_s"] > 0
        assert c["gpus"] == pf["layout"]["gpus"] + c["layout"]["gpus"] <= 8
        assert c["label"].startswith(f"{pf['replicas']}P ")
    r2 = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "8", "--rate", "12", "--input-len", "2000",
             "--output-len", "200", "--ttft-p90", "0.5", "--tpot-p90", "0.03", "--requests", "80", "--json",
             "--aggregated-only")
    assert r2.code == 0, r2.err
    assert not any(x["family"].startswith("disagg ") for x in r2.json["rejected"])
    assert all(c["mode"] == "aggregated" for c in r2.json["pareto"])


def test_kv_transfer_on_its_link_and_one_to_one_pools_match_the_library():
    import numpy as np

    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import Layout
    from planner.cli.common import load_hardware, load_model
    from planner.hardware.deploy import engine_model, layout_memory, plan_for, step_cost
    from planner.hardware.planning import Candidate, Disagg, Workload, _disagg_streams, kv_transfer
    from planner.hardware.simulate import Scheduler, draw_lengths, poisson_arrivals, simulate_disaggregated

    a = analyze(load_model("llama-3.1-8b").spec, Options(context=2200))
    hw = load_hardware("h100-sxm")
    em = engine_model(hw, "vllm")
    p = plan_for(a, hw, Layout(tp=2))
    intra = kv_transfer(a, hw, em, p, 8, 2000)
    inter = kv_transfer(a, hw, em, p, 16, 2000)
    # each of the 2 prefill GPUs sends half the KV: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes / 2
    assert intra[1] == inter[1] == 2000 * 32 * 8 * 128 * 2 * 2 // 2
    assert (intra[2], inter[2]) == ("intra_node", "inter_node") and inter[0] > intra[0] > 0
    # one prefill and one decode replica: the plan's two runs are simulate_disaggregated's chain
    mem = layout_memory(a, hw, p, em, max_num_batched_tokens=2048, max_num_seqs=64)
    cost = step_cost(a, hw, p, em, ref_batch=16, ref_context=2100, ref_prompt=2000)
    w = Workload(3.0, 2000, 200, requests=60)
    c = Candidate(Layout(tp=2), 64, 2048, mem, cost, disagg=Disagg(Layout(tp=2), mem, cost, 64, intra[0], intra[1], "intra_node"))
    pre, dec, arr, ready, darr, order, out = _disagg_streams([c], w)
    sched = Scheduler(64, 2048, mem.kv_capacity_tokens)
    lib = simulate_disaggregated(cost, sched, cost, sched, poisson_arrivals(3.0, 60, seed=0),
                                 draw_lengths(2000, 60, seed=1), draw_lengths(200, 60, seed=2), kv_transfer_s=intra[0])
    np.testing.assert_allclose(ready[0] - arr[0], lib.ttft_s[0], rtol=1e-12)
    back = np.argsort(order[0])
    np.testing.assert_allclose(dec.finish_s[0][back], lib.finish_s[0], rtol=1e-12)


def test_keeps_up_tells_a_finite_run_from_a_growing_queue():
    import numpy as np

    from planner.hardware.planning import keeps_up

    arr = np.arange(200) * 0.1  # 10 req/s
    assert keeps_up(arr, arr + 2.0)  # every request 2 s in the system: the drain at the end is not a backlog
    served = 0.5 + np.arange(200) * 0.125  # one finishes every 0.125 s: 8 req/s served of 10 offered
    assert not keeps_up(arr, served)
    assert not keeps_up(arr, np.where(arr > 10, np.nan, arr + 1.0))  # requests never finished


def test_front_end_arrivals_queue_one_after_another():
    import numpy as np

    from planner.hardware.serve import intake_arrivals
    from planner.hardware.simulate import front_end_arrivals

    # hand-computed: a burst of three at 0 with 4 ms each leaves at 4, 8, 12 ms; a send at 20 ms finds the
    # front end free and leaves at 24 ms; one at 22 ms waits for it: 28 ms
    sends = np.array([[0.0, 0.0, 0.0, 0.020, 0.022]])
    assert front_end_arrivals(sends, 0.004)[0] == pytest.approx([0.004, 0.008, 0.012, 0.024, 0.028])
    assert front_end_arrivals(sends, 0.0) is not None and (front_end_arrivals(sends, 0.0) == sends).all()
    # the same recursion as planner serve's step-by-step front end, on random rows
    rng = np.random.default_rng(1)
    rows = np.cumsum(rng.exponential(0.003, size=(3, 200)), axis=1)
    for row, got in zip(rows, front_end_arrivals(rows, 0.0025)):
        assert got == pytest.approx(intake_arrivals(list(row), 0.0025)[0])


def _plan_best(monkeypatch, patch, *, context: int, workload, engine: str | None = None) -> dict:
    """``plan``'s best candidate's metrics for Llama-3.1-8B on one H100 (bf16, no disaggregation), with the
    engine model replaced by ``patch(engine_model)``."""
    from planner.analysis.analyze import Options, analyze
    from planner.cli.common import load_model
    from planner.hardware import deploy, planning
    from planner.hardware.planning import Target
    from planner.hardware.profiles import load_profile

    a = analyze(load_model("llama-3.1-8b", None).spec, Options(context=context, batch=1, dtype="bf16"))
    monkeypatch.setattr(planning, "engine_model", lambda hw_, name=None: patch(deploy.engine_model(hw_, name)))
    r = planning.plan(a, load_profile("h100-sxm"), model_id="m", workload=workload, target=Target(10.0, 1.0),
                      engine=engine, max_gpus=1, disaggregated=False)
    return r.best.metrics


def test_plan_queues_requests_at_the_front_end(monkeypatch):
    """With a per-request front-end cost the simulated TTFT includes the queue there: at a rate near the
    front end's own limit the p90 TTFT grows by more than the cost paid once."""
    import dataclasses

    from planner.hardware.planning import Workload

    def best_ttft(intake_s):
        def patch(m):
            return dataclasses.replace(m, factors=dataclasses.replace(m.factors, server_overhead_s=intake_s))

        return _plan_best(monkeypatch, patch, context=600, workload=Workload(90.0, 100, 50, 400, 0))["ttft_p90_s"]

    base, queued = best_ttft(0.0), best_ttft(0.010)  # 90 req/s x 10 ms: the front end is 90 % busy
    assert queued - base > 0.010 * 1.5


def test_plan_runs_sglang_prompts_in_steps_of_their_own(monkeypatch):
    """SGLang's profile sets scheduler.prefill_first, and plan's request simulation follows it: the same
    candidate, with the flag turned off in the profile, decodes through the prompt steps (mixed, as vLLM
    does), so its TPOT is lower; with the flag, every prompt step pauses the decodes."""
    import dataclasses

    from planner.hardware import deploy
    from planner.hardware.planning import Workload
    from planner.hardware.profiles import load_profile

    def best(prefill_first):
        def patch(m):
            return dataclasses.replace(m, profile=dataclasses.replace(m.profile, prefill_first=prefill_first))

        return _plan_best(monkeypatch, patch, context=1100, workload=Workload(20.0, 1000, 100, 400, 0),
                          engine="sglang")

    assert deploy.engine_model(load_profile("h100-sxm"), "sglang").profile.prefill_first
    alone, mixed = best(True), best(False)
    assert alone["tpot_p50_s"] > mixed["tpot_p50_s"] * 1.05


@pytest.mark.parametrize("engine, whole", [("vllm", False), ("trtllm", True), ("sglang", True)])
def test_plan_admits_against_the_pool_as_the_engine_does(engine, whole):
    """plan's request simulation reads the engine profile's scheduler.kv_admission: TensorRT-LLM (and SGLang,
    as serve counts it) admit a request only while the pool holds its whole sequence, so two requests of
    5 + 4 tokens queue in a 12-token pool instead of running together until vLLM's scheduler preempts one."""
    from types import SimpleNamespace

    import numpy as np

    from planner.hardware import deploy
    from planner.hardware.planning import _scheduler
    from planner.hardware.profiles import load_profile
    from planner.hardware.simulate import StepCost, simulate

    em = deploy.engine_model(load_profile("h100-sxm"), engine)
    c = SimpleNamespace(max_num_seqs=8, max_num_batched_tokens=100, memory=SimpleNamespace(kv_capacity_tokens=12))
    sched = _scheduler(c, em)
    assert sched.reserve_whole is whole
    linear = StepCost((1, 1000), (0.11, 0.1 + 0.01 * 1000), 0.0, 0.0)
    r = simulate([linear], [sched], np.zeros(2), [5, 5], [4, 4])
    assert bool(r.preemptions[0] == 0) is whole
    # queued behind the first request (whole) or admitted with it (on demand, then preempted)
    assert bool(r.ttft_s[0, 1] > r.finish_s[0, 0] - 1e-12) is whole


def _plan_8b(rate: float, requests: int = 120, max_gpus: int = 1):
    from planner.analysis.analyze import Options, analyze
    from planner.cli.common import load_model
    from planner.hardware import planning
    from planner.hardware.planning import Target, Workload
    from planner.hardware.profiles import load_profile

    a = analyze(load_model("llama-3.1-8b", None).spec, Options(context=2300, batch=1, dtype="bf16"))
    hw = load_profile("h100-sxm")
    w, tg = Workload(rate, 2000, 300, requests, 0), Target(1.0, 0.04)
    return a, hw, w, tg, planning.plan(a, hw, model_id="m", workload=w, target=tg, max_gpus=max_gpus,
                                       disaggregated=False)


def test_headroom_is_the_highest_rate_the_chosen_deployment_still_meets():
    """plan's headroom: the cheapest deployment (Llama-3.1-8B on one H100 at 10 req/s of 2,000 / 300 tokens) simulated
    again at the rate found meets the target, and at the next rate of the bisection (4^(1/64) higher) misses what
    the headroom says; the warning compares the margin with the engine's held-out error of tokens/s."""
    import dataclasses

    from planner.hardware import deploy, planning

    a, hw, w, tg, r = _plan_8b(10.0)
    h = r.headroom
    assert r.best is not None and h is not None and 1.0 <= h.ratio < planning.HEADROOM_MAX
    assert h.max_rate_per_s == pytest.approx(10.0 * h.ratio) and h.misses

    def at(rate):
        x = dataclasses.replace(r.best, metrics={}, meets=False)
        planning._simulate_into([x], a, hw, deploy.engine_model(hw, "vllm"), w, tg, [], rates=[rate])
        return x

    assert at(h.max_rate_per_s).meets
    above = at(h.max_rate_per_s * planning.HEADROOM_MAX ** (1 / 2 ** planning.HEADROOM_STEPS) * 1.0001)
    assert not above.meets and planning._misses(above, tg) == h.misses
    err = planning._tokens_per_s_error("vllm")
    assert err is not None and h.tokens_per_s_error == err and h.within_error == (h.ratio - 1 < err)
    d = planning.plan_dict(r)["headroom"]
    assert d["ratio"] == h.ratio and d["limited_by"] == list(h.misses) and d["within_model_error"] == h.within_error


def test_headroom_at_a_light_load_reaches_the_top_of_the_search_and_the_line_says_so():
    """At 0.5 req/s one H100 meets the target at 4x the rate too: the headroom is the search's top, nothing breaks,
    and the table's line says 'the most searched' (no warning: 4x is beyond any model error on record)."""
    from planner.cli.plan_cmd import headroom_line
    from planner.hardware import planning

    r = _plan_8b(0.5)[-1]
    h = r.headroom
    assert h.ratio == planning.HEADROOM_MAX and h.misses == () and not h.within_error
    line = headroom_line(planning.plan_dict(r))
    assert "2 req/s too (4.0x the asked rate, the most searched)" in line and "Warning" not in line
    thin = {"workload": {"rate_per_s": 10.0}, "headroom": {"max_rate_per_s": 10.2, "ratio": 1.02, "searched_up_to_per_s": 40.0,
                         "limited_by": ["TTFT p90", "TPOT p90"], "tokens_per_s_held_out_median_error": 0.16,
                         "within_model_error": True}}
    line = headroom_line(thin)
    assert "up to about 10.2 req/s (1.02x" in line and "TTFT p90 and TPOT p90 break first" in line
    assert "held-out median error of throughput on this engine (16%)" in line and "plan for --rate 11.6)" in line
    assert headroom_line({"headroom": None}) is None


def test_of_the_deployments_tied_for_the_fewest_gpus_plan_answers_with_the_most_headroom():
    """Llama-3.1-8B on one H100 at 10 req/s: max_num_seqs 64 and vLLM's default 1,024 both meet the target on one GPU,
    64 with the lower TPOT p90; plan answers with the one that keeps meeting the target to the higher rate."""
    from planner.hardware import deploy, planning

    a, hw, w, tg, r = _plan_8b(10.0)
    ok = [c for c in r.candidates if c.meets]
    tied = [c for c in ok if c.gpus == min(x.gpus for x in ok)]
    rooms = planning.headrooms(tied, a, hw, deploy.engine_model(hw, "vllm"), w, tg)
    by_room = max(zip(tied, rooms), key=lambda x: x[1].ratio)
    by_tpot = min(tied, key=lambda c: c.metrics["tpot_p90_s"])
    assert len(tied) >= 2 and by_tpot is not by_room[0]  # the rule decides something here
    assert r.best is by_room[0] and r.headroom.ratio == by_room[1].ratio
    assert all(h.ratio <= r.headroom.ratio for h in rooms)


def test_the_search_starts_below_the_capacity_estimate_and_the_simulation_decides():
    """The capacity estimate prices a request's prompt and decode steps one after the other, where the engines run
    prompt chunks inside decode steps: for Llama-3.1-8B on one H100 at 10 req/s of 2,000 / 300 tokens it says two
    replicas (one sustains 9.95 req/s), and the simulation finds one meets the target with room to spare. plan
    answers with one GPU, under --max-gpus 1 as well as 8 (before session 54 it rejected the family at 1 and
    answered two GPUs at 8)."""
    for most in (1, 8):
        r = _plan_8b(10.0, max_gpus=most)[-1]
        assert r.best is not None and r.best.gpus == 1 and r.best.layout.tp == 1, most
        assert r.headroom.ratio > 1.2  # the estimate was low, not the edge
    # families the estimate puts beyond twice the budget are still refused without a simulation
    r = _plan_8b(40.0)[-1]
    assert r.best is None and any("needs about" in why for why in r.rejected.values())
