"""The layout step model and the serving simulation of ``planner plan`` against published multi-GPU
figures (bench/published.yaml, collected for issues 12 and 13). No factor is fitted here.

1. Tensor-parallel entries (gpt-fast's TP sweep, TensorRT-LLM's tables, DeepSeek-R1 on 8×H200, vLLM's
   TP runs): every entry on more than one GPU whose quantity is a time or a throughput. Each is the
   scenario the source ran: ``concurrency`` requests of ``input_len`` tokens all arriving at once on each
   replica, ``output_len`` tokens each, simulated with ``hardware.simulate`` on the step cost of
   ``hardware.deploy`` (``Layout(tp, dp = gpus / tp)``) under the entry's engine. Beside it, ``planner
   serve``'s prediction (bench/published.py's ``Point``) for the same entry.
2. Entries with a ``layout`` block (expert parallel, attention data parallel, one pool of a
   disaggregated deployment: SGLang's 96-H100 DeepSeek-V3 blog, TensorRT-LLM's DeepSeek-R1 max-throughput
   blog), which ``serve`` cannot express, by ``phase``:
   - ``prefill`` (a prefill pool measured alone, fed as fast as it takes prompts): each GPU runs
     ``tokens_per_gpu`` prompt tokens per step (``tokens_per_gpu / input_len`` prompts per attention-DP
     rank); input tokens/s = the replica's prompt tokens over ``hardware.deploy.replica_step``;
   - ``decode`` (a decode pool measured alone at a steady batch): ``sequences_per_gpu`` sequences per
     GPU at ``context`` cached tokens; output tokens/s = sequences over the decode step;
   - ``aggregated``: the simulation of 1. on the layout (``num_requests`` arriving together, at most
     ``max_batch_size × attn_dp`` sequences and ``max_num_tokens × attn_dp`` tokens per step: one
     scheduler per attention-DP rank).
   The memory of the layout (``hardware.deploy.layout_memory`` under the entry's memory fraction, else
   the engine's default) is checked to hold the batch; a figure per node is the per-GPU figure times the profile's GPUs per node.
3. Request-rate entries (``arrival: poisson``: ``--request-rate R`` in vLLM's benchmark_serving or
   SGLang's bench_serving): ``num_requests`` requests arriving as a Poisson process of ``request_rate``
   requests/s (``hardware.simulate.poisson_arrivals``, seed ``RATE_SEED``), sent by a client that keeps at most
   ``max_concurrency`` in flight where the entry names one (``--max-concurrency``: ``hardware.simulate``'s
   ``max_in_flight``, each request timed from its send), lengths drawn from the entry's
   ``input_len_dist`` / ``output_len_dist`` (``hardware.simulate.draw_lengths``, seeds ``RATE_SEED`` and
   ``RATE_SEED + 1``; a prompt is cut to ``max_input_len`` and an output to ``max_total_len`` minus its
   prompt, as the benchmark's dataset filter drops longer pairs), simulated on the step cost of 1. under the entry's engine; the statistic the
   source reports (``statistic``: the mean, the median, or a percentile p90 / p95 / p99: ``RATE_STATISTICS``) of
   TTFT, TPOT and E2E latency over the requests. A dataset's
   lengths given as a distribution are an approximation of its real lengths (the entry's ``length_note``).
   ITL (the gap between streamed chunks) is listed, not predicted: the simulation records no per-token gaps.
   An entry whose settings name ``num_scheduler_steps`` (vLLM V0's multi-step scheduling, which
   ``hardware.simulate`` does not model) is simulated instead by ``planner serve``'s scheduler loop
   (``hardware.serve.simulate_requests``: the same arrivals and lengths, each step priced by serve's step
   model, rounds of that many decode steps, prompts in steps of their own) with V0's default token budget
   without chunked prefill, ``max(max_model_len, 2048)``; the table says which simulation priced each row.
   There ITL is predicted too: the gaps between a request's first token and the ends of the decode rounds
   that hand out its tokens (what the benchmark's client measures per streamed chunk), over all requests.

Prints predicted, published and error per point, and the median |error| per quantity.

    python bench/plan_published.py            # all of it
    python bench/plan_published.py --rate     # only the request-rate entries (3.)
"""

from __future__ import annotations

import functools
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUANTITIES = ("output_tokens_per_s", "tpot_s", "ttft_s", "e2e_s")
LAYOUT_QUANTITIES = ("output_tokens_per_s", "input_tokens_per_s")
RATE_QUANTITIES = ("ttft_s", "tpot_s", "e2e_s", "itl_s")
RATE_SEED = 0


@functools.cache
def _published_module():
    spec = importlib.util.spec_from_file_location("bench_published", ROOT / "bench" / "published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def plan_predict(p) -> float | None:
    """The scenario of point ``p`` on the layout model and the request-level simulation."""
    import numpy as np

    from planner.analysis.parallel import Layout
    from planner.hardware.deploy import EngineModel, layout_memory, plan_for, step_cost
    from planner.hardware.simulate import Scheduler, simulate

    sc = p.scenario
    dp = max(1, p.gpus // p.tp)
    em = EngineModel(p.engine, p.base)
    plan = plan_for(p.a, p.hw, Layout(tp=p.tp, dp=dp))
    seqs = p.mem.max_num_seqs
    mem = layout_memory(p.a, p.hw, plan, em, max_num_batched_tokens=p.mem.max_num_batched_tokens, max_num_seqs=seqs)
    if not mem.fits:
        return None
    per_replica = max(1, -(-sc.concurrency // dp))
    cost = step_cost(p.a, p.hw, plan, em, ref_batch=min(per_replica, 64), ref_context=sc.input_len + sc.output_len // 2,
                     ref_prompt=min(sc.input_len, p.mem.max_num_batched_tokens))
    r = simulate([cost], [Scheduler(seqs, p.mem.max_num_batched_tokens, max(mem.kv_capacity_tokens, sc.input_len + sc.output_len),
                                    prefill_first=p.rules.prefill_first, lookahead=p.rules.lookahead,
                                    reserve_whole=p.engine.reserves_whole)],
                 np.zeros(per_replica), sc.input_len, sc.output_len)
    q = p.quantity
    # once per request, as planner plan and serve add it: the engine's admission and first sampling, and
    # its HTTP front end where the benchmark's client streams through the server
    req = p.base.request_overhead_s + (p.base.server_overhead_s if p.server_client else 0.0)
    if q == "ttft_s":
        return float(np.nanmean(r.ttft_s)) + req
    if q == "tpot_s":
        return float(np.nanmean(r.tpot_s)) if sc.output_len > 1 else None
    if q == "e2e_s":
        return float(np.nanmean(r.e2e_s)) + req
    total = float(r.output_tokens_per_s[0]) * dp
    return total / p.gpus if p.per_gpu else total


def rate_workload(s: dict, seed: int = RATE_SEED):
    """(arrival times (n,), input lengths (n,), output lengths (n,)) of a request-rate entry's settings ``s``
    (module doc, 3.)."""
    import numpy as np

    from planner.hardware.simulate import draw_lengths, poisson_arrivals

    n = int(s["num_requests"])
    arrivals = poisson_arrivals(float(s["request_rate"]), n, seed=seed)[0]
    i = draw_lengths(s.get("input_len_dist") or int(s["input_len"]), n, seed=seed, what="input length")
    o = draw_lengths(s.get("output_len_dist") or int(s["output_len"]), n, seed=seed + 1, what="output length")
    if s.get("max_input_len"):
        i = np.minimum(i, int(s["max_input_len"]))
    if s.get("max_total_len"):
        o = np.maximum(1, np.minimum(o, int(s["max_total_len"]) - i))
    return arrivals, i, o


#: the statistics of a request-rate run's per-request figures this script predicts: the mean, the median and the
#: percentiles, as ``vllm bench serve`` computes them (``np.percentile``, linear between the ranks, over the
#: requests that succeeded)
RATE_STATISTICS = ("mean", "median", "p90", "p95", "p99")


def rate_statistic(name: str):
    """The function of an array (nan: a request without the figure) that gives statistic ``name``
    (``RATE_STATISTICS``)."""
    import numpy as np

    if name == "mean":
        return np.nanmean
    if name == "median":
        return np.nanmedian
    if name in RATE_STATISTICS:
        q = float(name[1:])
        return lambda x: np.nanpercentile(x, q)
    raise ValueError(f"statistic {name!r}: one of {', '.join(RATE_STATISTICS)} expected")


def rate_predict(e: dict, pub, overrides: dict | None = None) -> dict:
    """{quantity: predicted statistic} for the request-rate entry ``e`` (module doc, 3.); a quantity that
    cannot be predicted is absent. Entries that share settings give the same simulation: call once per group.
    ``overrides``: factor fields (``hardware.expected.Factors``) replacing the shipped profile's."""
    from planner.analysis.parallel import Layout
    from planner.hardware.deploy import EngineModel, layout_memory, plan_for, step_cost
    from planner.hardware.simulate import Scheduler, simulate

    s = dict(e.get("settings") or {})
    arrivals, ilens, olens = rate_workload(s)
    # the Point (model analysis, engine memory) for the longest request the workload holds
    s["input_len"], s["output_len"] = int(ilens.max()), int(olens.max())
    s.setdefault("max_model_len", int((ilens + olens).max()))
    p = _point(e, s, pub, overrides)
    dp = max(1, p.gpus // p.tp)
    em = EngineModel(p.engine, p.base)
    plan = plan_for(p.a, p.hw, Layout(tp=p.tp, dp=dp))
    seqs, mnbt = p.mem.max_num_seqs, p.mem.max_num_batched_tokens
    mem = layout_memory(p.a, p.hw, plan, em, max_num_batched_tokens=mnbt, max_num_seqs=seqs, fraction=p.mem.fraction)
    if not mem.fits:
        return {}
    cost = step_cost(p.a, p.hw, plan, em, ref_batch=min(seqs, 64),
                     ref_context=int(ilens.mean() + olens.mean() / 2), ref_prompt=min(int(ilens.mean()), mnbt))
    r = simulate([cost], [Scheduler(seqs, mnbt, max(mem.kv_capacity_tokens, int((ilens + olens).max())),
                                    prefill_first=p.rules.prefill_first, lookahead=p.rules.lookahead,
                                    reserve_whole=p.engine.reserves_whole)],
                 arrivals, ilens, olens, max_in_flight=s.get("max_concurrency"))
    req = p.base.request_overhead_s + (p.base.server_overhead_s if p.server_client else 0.0)
    stat = rate_statistic(e.get("statistic", "mean"))
    return {"ttft_s": float(stat(r.ttft_s[0])) + req, "tpot_s": float(stat(r.tpot_s[0])),
            "e2e_s": float(stat(r.e2e_s[0])) + req}


def _point(e: dict, s: dict, pub, overrides: dict | None):
    """published.py's Point of entry ``e`` with settings ``s``, its factors replaced by ``overrides``."""
    from dataclasses import replace

    p = pub.Point({**e, "settings": s, "quantity": "e2e_s"})
    if overrides:
        p.base = replace(p.base, **overrides)
    return p


def rate_entries(entries: list) -> list:
    """The request-rate entries of a quantity this script predicts (module doc, 3.), excluded ones too."""
    return [e for e in entries if (e.get("settings") or {}).get("arrival") == "poisson"
            and e.get("quantity") in RATE_QUANTITIES]


def rate_prediction(e: dict, pub, cache: dict, overrides: dict | None = None) -> tuple[dict | str, str]:
    """(``{quantity: statistic}`` or ``"skipped: why"``, how it was simulated) for the request-rate entry
    ``e``, computed once per group of entries that share model, GPU, engine and settings (``cache``)."""
    s = e.get("settings") or {}
    steps = int(s.get("num_scheduler_steps") or 1)
    how = "plan simulation" if steps == 1 else f"serve loop, {steps}-step rounds"
    if e.get("layout"):  # the simulation runs tensor-parallel replicas (attention-DP and EP runs: the layout table)
        return "skipped: layout beyond tensor parallel", how
    key = repr((e.get("model_config"), e.get("gpu"), e.get("gpus"), e.get("tp"), e.get("engine"),
                e.get("statistic"), sorted(s.items())))
    if key not in cache:
        try:
            cache[key] = (rate_predict(e, pub, overrides) if steps == 1
                          else rate_predict_steps(e, pub, steps, overrides))
        except Exception as exc:  # listed, not fatal
            cache[key] = f"skipped: {exc}"
    return cache[key], how



def rate_predict_steps(e: dict, pub, scheduler_steps: int, overrides: dict | None = None) -> dict:
    """{quantity: predicted statistic} for the request-rate entry ``e`` by serve's scheduler loop
    (``hardware.serve.simulate_requests``) with ``scheduler_steps`` decode steps per round (module doc, 3.)."""
    import numpy as np

    from planner.hardware.serve import StepModel, simulate_requests

    s = dict(e.get("settings") or {})
    if s.get("max_concurrency") is not None:
        raise ValueError("a client cap (max_concurrency) beside num_scheduler_steps: the serve loop has none")
    arrivals, ilens, olens = rate_workload(s)
    s["input_len"], s["output_len"] = int(ilens.max()), int(olens.max())
    s.setdefault("max_model_len", int((ilens + olens).max()))
    p = _point(e, s, pub, overrides)
    if not p.mem.fits or p.gpus != p.tp:
        return {}
    model = StepModel(p.a, p.hw, p.plan, p.base, ops_cache=p.ops_cache, detail=False)
    budget = max(p.mem.max_model_len, pub.V0_MIN_BATCHED_TOKENS) if scheduler_steps > 1 else None
    ends: list = []
    done = simulate_requests(model, p.mem, arrivals, ilens, olens, scheduler_steps=scheduler_steps,
                             intake_s=p.base.server_overhead_s if p.server_client else 0.0,
                             max_num_batched_tokens=budget, step_ends=ends, prefill_first=p.rules.prefill_first,
                             held_output=p.rules.held_output, preempt=p.rules.preempt,
                             prefix_cache=p.rules.prefix_cache)
    hand_t = np.array([t for t, handed in ends if handed])  # (steps are in time order)
    hand_step = np.array([j for j, (_, handed) in enumerate(ends) if handed])
    gaps = []
    for m in done:  # a request's chunks: its first token, then each round end in (first step, end step]
        lo, hi = np.searchsorted(hand_step, [m.first_step + 1, m.end_step + 1])
        times = np.concatenate([[m.first_s], hand_t[lo:hi]])
        gaps.extend(np.repeat(np.diff(times)[None, :], m.count, axis=0).ravel())
    req = p.base.request_overhead_s
    ttft = np.repeat([m.first_s - m.send_s for m in done], [m.count for m in done]) + req
    e2e = np.repeat([m.end_s - m.send_s for m in done], [m.count for m in done]) + req
    tpot = np.repeat([(m.end_s - m.first_s) / (m.output_len - 1) if m.output_len > 1 else np.nan for m in done],
                     [m.count for m in done])
    stat = rate_statistic(e.get("statistic", "mean"))
    return {"ttft_s": float(stat(ttft)), "tpot_s": float(stat(tpot)), "e2e_s": float(stat(e2e)),
            "itl_s": float(stat(gaps)) if gaps else None}


def _overlap_note(eng, lo) -> str:
    ep = eng.expert_parallel
    return f", overlapped: {ep.library} two-batch overlap" if ep is not None and lo.ep > 1 and ep.overlap == "two_batch" else ""


def layout_predict(e: dict, engine_map: dict, ep_terms: dict | None = None) -> tuple[float | None, str, str]:
    """(prediction, the layout's label, a note) for an entry with a ``layout`` block (module doc, 2.).
    ``ep_terms``: fields of the engine's ``expert_parallel`` block replaced (the term-by-term table)."""
    import numpy as np

    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import Layout
    from planner.cli.common import load_model
    from planner.hardware.comm import links
    from planner.hardware.deploy import EngineModel, layout_memory, plan_for, replica_step, step_cost
    from planner.hardware.engine import engine_analysis, load_engine
    from planner.hardware.expected import factors_for
    from planner.hardware.profiles import load_profile
    from planner.hardware.simulate import Scheduler, simulate

    s, lay = e.get("settings") or {}, e["layout"]
    spec = load_model(e["model_config"]).spec
    hw = load_profile(e["gpu"])
    eng = load_engine(engine_map[e["engine"]])
    if ep_terms and eng.expert_parallel is not None:
        from dataclasses import replace

        eng = replace(eng, expert_parallel=replace(eng.expert_parallel, **ep_terms))
    em = EngineModel(eng, factors_for(hw, eng))
    lo = Layout(tp=int(lay["tp"]), ep=int(lay.get("ep", 1)), attn_dp=int(lay.get("attn_dp", 1)))
    phase = lay["phase"]
    i = int(s.get("input_len") or 1)
    o = int(s.get("output_len") or 1)
    ctx = int(s.get("context") or i)
    dtype = _published_module().run_dtype(s, spec)  # as bench/published.py's Point reads it
    a, _ = engine_analysis(analyze(spec, Options(context=max(i + o, ctx + 1), dtype=dtype, kv_dtype=s.get("kv_dtype"))),
                           eng)
    plan = plan_for(a, hw, lo)
    ranks = lo.attn_dp
    frac = _published_module().memory_fraction_of(e)  # the run's own memory fraction, as published.py's Point
    if phase == "prefill":
        per_rank = max(1, int(s["tokens_per_gpu"]) * lo.attn_tp // i)  # prompts per attention-DP rank per step
        seqs, need = per_rank * ranks, per_rank * ranks * i
        mem = layout_memory(a, hw, plan, em, max_num_batched_tokens=per_rank * i, max_num_seqs=per_rank,
                            fraction=frac)
    elif phase == "decode":
        seqs = int(s["sequences_per_gpu"]) * lo.gpus_per_replica
        need = seqs * (ctx + 1)
        mem = layout_memory(a, hw, plan, em, max_num_batched_tokens=eng.max_num_batched_tokens(hw),
                            max_num_seqs=-(-seqs // ranks), fraction=frac)
    else:  # aggregated
        seqs = int(s["max_batch_size"]) * ranks
        mnbt = int(s["max_num_tokens"]) * ranks
        need = min(seqs, int(s["num_requests"])) * (i + o)
        mem = layout_memory(a, hw, plan, em, max_num_batched_tokens=int(s["max_num_tokens"]),
                            max_num_seqs=int(s["max_batch_size"]), fraction=frac)
    note = f"KV pool {mem.kv_capacity_tokens:,} tokens per replica for {need:,}"
    if not mem.fits or mem.kv_capacity_tokens < need:
        return None, lo.label, f"does not fit: {note}"
    if phase == "prefill":
        st = replica_step(a, hw, plan, em, batch=seqs, new_tokens=i, cached=0)
        per_gpu = seqs * i / st.iteration_s / lo.gpus_per_replica
        note += f"; step {st.iteration_s * 1e3:.1f} ms (compute {st.compute_s * 1e3:.1f} ms, collectives {st.comm_s * 1e3:.1f} ms{_overlap_note(eng, lo)})"
    elif phase == "decode":
        st = replica_step(a, hw, plan, em, batch=seqs, new_tokens=1, cached=ctx)
        per_gpu = seqs / st.iteration_s / lo.gpus_per_replica
        note += f"; step {st.iteration_s * 1e3:.1f} ms (compute {st.compute_s * 1e3:.1f} ms, collectives {st.comm_s * 1e3:.1f} ms{_overlap_note(eng, lo)})"
    else:
        n = int(s["num_requests"])
        cost = step_cost(a, hw, plan, em, ref_batch=min(seqs, 64), ref_context=i + o // 2,
                         ref_prompt=min(i, mnbt))
        r = simulate([cost], [Scheduler(seqs, mnbt, mem.kv_capacity_tokens, prefill_first=eng.prefill_first,
                                        lookahead=em.factors.async_scheduling, reserve_whole=eng.reserves_whole)],
                     np.zeros(n), i, o)
        per_gpu = float(r.output_tokens_per_s[0]) / lo.gpus_per_replica
        note += f"; {r.steps} lock-step iterations, mean TPOT {float(np.nanmean(r.tpot_s)) * 1e3:.1f} ms"
    unit = s.get("throughput_unit", "total")
    scale = {"per_gpu": 1, "per_node": links(hw).gpus_per_node, "total": int(e["gpus"])}[unit]
    return per_gpu * scale, lo.label, note


def main() -> None:
    pub = _published_module()
    entries = pub.read_yaml((ROOT / "bench" / "published.yaml").read_text())
    if "--rate" in sys.argv[1:]:
        rate_table(entries, pub)
        return
    rows, errs_plan, errs_serve = [], {}, {}
    for e in entries:
        if int(e.get("gpus") or 1) < 2 or e.get("quantity") not in QUANTITIES or e.get("engine") not in pub.ENGINE_MAP:
            continue
        if (e.get("settings") or {}).get("arrival") == "poisson":  # request-rate entries: 3.
            continue
        if not e.get("model_config") or e.get("excluded") or e.get("layout"):  # excluded: see its reason
            continue
        try:
            p = pub.Point(e)
            mine = plan_predict(p)
            serve = p.predict()
        except Exception as exc:  # a point the models cannot price is listed, not fatal
            rows.append((e["id"], e["quantity"], e["value"], None, None, f"skipped: {exc}"))
            continue
        rows.append((e["id"], e["quantity"], float(e["value"]), mine, serve, ""))
        if mine is not None:
            errs_plan.setdefault(e["quantity"], []).append(abs(mine / float(e["value"]) - 1))
        if serve is not None:
            errs_serve.setdefault(e["quantity"], []).append(abs(serve / float(e["value"]) - 1))
    print("| id | quantity | published | plan (layout + simulation) | error | serve | error |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for i, q, v, m, s, note in rows:
        if note:
            print(f"| {i} | {q} | {v:g} | {note} | | | |")
            continue
        em = "-" if m is None else f"{m / v - 1:+.0%}"
        es = "-" if s is None else f"{s / v - 1:+.0%}"
        print(f"| {i} | {q} | {v:g} | {'-' if m is None else f'{m:.4g}'} | {em} | {'-' if s is None else f'{s:.4g}'} | {es} |")
    print()
    print("| quantity | points | median abs error, plan | median abs error, serve |")
    print("| --- | ---: | ---: | ---: |")
    for q in QUANTITIES:
        a, b = errs_plan.get(q, []), errs_serve.get(q, [])
        if a or b:
            print(f"| {q} | {len(a)} | {statistics.median(a):.0%} | {statistics.median(b) if b else float('nan'):.0%} |")
    print()
    print("Layouts beyond tensor parallel (expert parallel, attention-DP, one pool of a disaggregated deployment):")
    print()
    print("| id | phase | layout priced | quantity | published | predicted | error | note |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | --- |")
    for e in entries:
        lay = e.get("layout")
        if not lay or e.get("quantity") not in LAYOUT_QUANTITIES:
            continue
        unit = (e.get("settings") or {}).get("throughput_unit", "total")
        q = f"{e['quantity']} ({unit.replace('_', ' ')})"
        if e.get("excluded"):
            print(f"| {e['id']} | {lay.get('phase')} | - | {q} | {float(e['value']):g} | - | - | excluded: "
                  f"{e['excluded']} |")
            continue
        try:
            mine, label, note = layout_predict(e, pub.ENGINE_MAP)
        except Exception as exc:  # listed, not fatal
            print(f"| {e['id']} | {lay.get('phase')} | - | {q} | {float(e['value']):g} | - | - | skipped: {exc} |")
            continue
        v = float(e["value"])
        pe = "-" if mine is None else f"{mine / v - 1:+.0%}"
        pm = "-" if mine is None else f"{mine:,.0f}"
        print(f"| {e['id']} | {lay['phase']} | {label} | {q} | {v:,.0f} | {pm} | {pe} | {note} |", flush=True)
    ep_term_table(entries, pub.ENGINE_MAP)
    rate_table(entries, pub)


#: the engine profile's expert_parallel terms switched on one at a time (FP8 dispatch and BF16 combine in all)
EP_TERMS = (("element sizes only: flat, ring steps, no overlap", {"prefill_hierarchical": False, "direct": False,
                                                                   "overlap": "none"}),
            ("+ hierarchical normal kernels, direct writes", {"overlap": "none"}),
            ("+ two-batch overlap (the profile as it is)", {}))


def ep_term_table(entries, engine_map) -> None:
    """The entries whose engine profile has an ``expert_parallel`` block, priced with its terms added one
    at a time (``EP_TERMS``): what each sourced term changes. Nothing is fitted."""
    from planner.hardware.engine import load_engine

    rows = [e for e in entries if e.get("layout") and not e.get("excluded") and e.get("quantity") in LAYOUT_QUANTITIES
            and e.get("engine") in engine_map and load_engine(engine_map[e["engine"]]).expert_parallel is not None]
    if not rows:
        return
    print()
    print("The EP all-to-all term by term (error against the published figure):")
    print()
    print("| id | " + " | ".join(name for name, _ in EP_TERMS) + " |")
    print("| --- |" + " ---: |" * len(EP_TERMS))
    for e in rows:
        cells = []
        for _, terms in EP_TERMS:
            mine = layout_predict(e, engine_map, terms)[0]
            cells.append("-" if mine is None else f"{mine / float(e['value']) - 1:+.0%}")
        print(f"| {e['id']} | " + " | ".join(cells) + " |", flush=True)


def rate_table(entries: list, pub) -> None:
    """Print the request-rate entries (module doc, 3.): one simulation per group of entries that share
    model, GPU, engine and settings."""
    print()
    print("Request-rate benchmarks (Poisson arrivals at the stated rate, seed %d):" % RATE_SEED)
    print()
    print("| id | statistic | rate (req/s) | requests | published | predicted | error | simulated by |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    cache: dict = {}
    errs: dict = {}
    for e in rate_entries(entries):
        s = e.get("settings") or {}
        v = float(e["value"])
        head = f"| {e['id']} | {e.get('statistic', 'mean')} {e['quantity']} | {s.get('request_rate')} | {s.get('num_requests')}"
        if e.get("excluded"):
            print(f"{head} | {v:g} | excluded: {e['excluded']} | | |")
            continue
        got, how = rate_prediction(e, pub, cache)
        if isinstance(got, str):
            print(f"{head} | {v:g} | {got} | | {how} |")
            continue
        m = got.get(e["quantity"])
        if m is None:
            why = "not predicted (no per-token gaps)" if e["quantity"] == "itl_s" else "does not fit"
            print(f"{head} | {v:g} | {why} | - | {how} |")
            continue
        errs.setdefault(e["quantity"], []).append(abs(m / v - 1))
        print(f"{head} | {v:g} | {m:.4g} | {m / v - 1:+.0%} | {how} |", flush=True)
    print()
    print("| quantity | points | median abs error |")
    print("| --- | ---: | ---: |")
    for q in RATE_QUANTITIES:
        if errs.get(q):
            print(f"| {q} | {len(errs[q])} | {statistics.median(errs[q]):.0%} |")


if __name__ == "__main__":
    main()
