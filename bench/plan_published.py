"""The layout step model and the serving simulation of ``planner plan`` against published multi-GPU
figures (bench/published.yaml, collected for issue 13): every entry on more than one GPU whose quantity
is a time or a throughput (gpt-fast's TP sweep, TensorRT-LLM's tables, DeepSeek-R1 on 8×H200, vLLM's
TP runs). Each is the scenario the source ran: ``concurrency`` requests of ``input_len`` tokens all
arriving at once on each replica, ``output_len`` tokens each, simulated with ``hardware.simulate`` on the
step cost of ``hardware.deploy`` (``Layout(tp, dp = gpus / tp)``) under the entry's engine. Beside it,
``planner serve``'s prediction (bench/published.py's ``Point``) for the same entry. Prints predicted,
published and error per point, and the median |error| per quantity. No factor is fitted here.

    python bench/plan_published.py
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUANTITIES = ("output_tokens_per_s", "tpot_s", "ttft_s", "e2e_s")


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
    r = simulate([cost], [Scheduler(seqs, p.mem.max_num_batched_tokens, max(mem.kv_capacity_tokens, sc.input_len + sc.output_len))],
                 np.zeros(per_replica), sc.input_len, sc.output_len)
    q = p.quantity
    if q == "ttft_s":
        return float(np.nanmean(r.ttft_s))
    if q == "tpot_s":
        return float(np.nanmean(r.tpot_s)) if sc.output_len > 1 else None
    if q == "e2e_s":
        return float(np.nanmean(r.e2e_s))
    total = float(r.output_tokens_per_s[0]) * dp
    return total / p.gpus if p.per_gpu else total


def main() -> None:
    import yaml

    pub = _published_module()
    entries = yaml.safe_load((ROOT / "bench" / "published.yaml").read_text())
    rows, errs_plan, errs_serve = [], {}, {}
    for e in entries:
        if int(e.get("gpus") or 1) < 2 or e.get("quantity") not in QUANTITIES or e.get("engine") not in pub.ENGINE_MAP:
            continue
        if not e.get("model_config") or e.get("excluded"):  # excluded: see its reason in published.yaml
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


if __name__ == "__main__":
    main()
