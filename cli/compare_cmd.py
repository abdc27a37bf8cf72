"""``planner compare``: several models side by side; which is cheapest to serve, and why."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from planner.analysis.errors import OptionError, PlannerError

from .analyze_cmd import RevisionOpt, SlidingOpt
from .options import DEFAULT_BATCH, DEFAULT_CONTEXT, DEFAULT_GPUS
from .options import BatchOpt, ContextOpt, DtypeOpt, FormatOpt, GpusOpt, HardwareOpt, JsonOpt, KvDtypeOpt, RefreshOpt
from .options import DpOpt, EpOpt, PlotOpt, PpOpt, TpOpt
from .render import OutputFormat, fmt_bytes, fmt_count, fmt_gib, fmt_int, fmt_si, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit

ModelsArg = Annotated[list[str], typer.Argument(help="Two or more models: bundled names, config.json paths or Hugging Face ids.", show_default=False)]
PriceOpt = Annotated[Optional[float], typer.Option("--price-per-hour", min=0.0, max=1e6, help="USD per GPU-hour (overrides the profile's price).")]

CRITERION_COST = "cost per million generated tokens (USD) at the given context and batch, lowest first"
CRITERION_GPU = ("GPU-seconds per million generated tokens (1 / decode tokens per second per GPU) at the given "
                 "context and batch, lowest first; give --price-per-hour to rank by cost in USD")


def compare(
    models: ModelsArg,
    context: ContextOpt = DEFAULT_CONTEXT,
    batch: BatchOpt = DEFAULT_BATCH,
    hardware: HardwareOpt = None,
    gpus: GpusOpt = DEFAULT_GPUS,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    dp: DpOpt = None,
    dtype: DtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    price_per_hour: PriceOpt = None,
    sliding_window: SlidingOpt = None,
    revision: RevisionOpt = None,
    refresh: RefreshOpt = False,
    plot: PlotOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare models side by side: memory, concurrency, decode throughput, time to first token and cost,
    ranked cheapest to serve first, with the reason for each.

    Example: planner compare llama-3.1-8b qwen2.5-7b mistral-7b-v0.1 gemma-2-9b qwen3-30b-a3b --context 8192 --batch 32
    """
    from planner.analysis.analyze import Options, analyze as run_analyze, to_dict
    from dataclasses import replace

    from planner.hardware.serving import estimate_dict
    from planner.hardware.accuracy import bias_dict, bias_lines, load_bias

    from planner.hardware.replicas import RULE_FASTEST, candidates, deployment, fallback, fewest_gpus_note, served

    from .common import load_hardware, load_model, resolve_layout, warn_all

    if len(models) < 1:
        raise OptionError("give at least one model")
    if price_per_hour is not None and not math.isfinite(price_per_hour):  # (click's range lets nan through)
        raise OptionError(f"--price-per-hour must be a finite number of USD, got {price_per_hour}")
    out_fmt = resolve_format(fmt, as_json)
    if plot is not None:
        from .plots import check_plot_path

        plot = check_plot_path(plot)  # before any work
    from planner.hardware.engine import check_kv_dtype, load_engine

    engine = load_engine(None)  # compare sizes memory and prices steps as vLLM (the default engine) does
    check_kv_dtype(engine, kv_dtype)  # a KV cache vLLM offers
    layout = resolve_layout(gpus, tp, pp, ep, dp)
    hw = load_hardware(hardware)
    loaded = []
    for m in models:
        try:
            loaded.append(load_model(m, revision, refresh))
        except PlannerError as exc:
            raise type(exc)(f"model '{m}': {exc}") from None
    bias = load_bias()  # the bias record, read once for all the models
    rows = []
    for lm in loaded:
        opts = dict(context=context, dtype=dtype, kv_dtype=kv_dtype, sliding_window=sliding_window)
        a = run_analyze(lm.spec, Options(batch=batch, **opts))
        try:
            if layout is None:  # --gpus N alone: the fitting layout with the most decode tokens/s in total
                deps = candidates(a, hw, gpus)
                scored = [(served(d, a, lambda b: run_analyze(lm.spec, Options(batch=b, **opts)), hw, price_per_hour), d)
                          for d in deps if d.fits]
                if scored:
                    s_, dep = max(scored, key=lambda x: (x[0].tokens_per_s, -x[1].layout.tp))
                    s_ = replace(s_, dep=replace(dep, chosen=RULE_FASTEST))
                else:
                    dep = fallback(deps)
                    s_ = served(dep, a, lambda b: run_analyze(lm.spec, Options(batch=b, **opts)), hw, price_per_hour)
            else:
                dep = deployment(a, hw, layout)
                s_ = served(dep, a, lambda b: run_analyze(lm.spec, Options(batch=b, **opts)), hw, price_per_hour)
        except PlannerError as exc:
            raise type(exc)(f"model '{lm.id}': {exc}") from None
        e, dep = s_.busiest, s_.dep
        warn_all(a.warnings)
        d = to_dict(a, model_id=lm.id, source=lm.source)
        ed = estimate_dict(e)
        need = fewest_gpus_note(a, hw, dep)
        d.update({
            "layout": dep.to_dict(),
            "layout_text": dep.describe(),
            "fits": dep.fits,
            "needed_bytes": dep.needed_bytes,
            "usable_bytes": dep.usable_bytes,
            "capacity_bytes": dep.capacity_bytes,
            "decode_tokens_per_s": s_.tokens_per_s_per_gpu,
            "decode_tokens_per_s_total": s_.tokens_per_s,
            "decode_tokens_per_s_per_replica": e.decode_tokens_per_s,
            "max_batch": dep.max_batch,
            "ttft_s": e.ttft_s,
            "cost_per_million_tokens": s_.cost_per_million_tokens,
            "gpu_seconds_per_million_tokens": 1e6 / s_.tokens_per_s_per_gpu if s_.tokens_per_s_per_gpu else None,
            "needs_at_least": need,
            "serving": ed,
            "step_breakdown": s_.step.to_dict() if s_.step is not None else None,
            # the signed error of the steady published runs of this family and of this vendor's GPUs (as serve)
            "accuracy_bias": bias_dict(bias, a.spec.model_type, hw.vendor, engine.name),
        })
        rows.append((lm, a, s_, d))
    dtypes = {lm.id: a.fmt.describe() for lm, a, _, _ in rows}
    if len(set(dtypes.values())) > 1 and dtype is None:
        from .render import warn

        warn("the models' weights are in different dtypes (" + ", ".join(f"{k}: {v}" for k, v in dtypes.items())
             + "), each from its config; pass --dtype bf16 to compare like with like")
    priced = all(e.cost_per_million_tokens is not None for _, _, e, _ in rows if e.tokens_per_s_per_gpu)
    # a price of 0 makes every cost 0: rank by GPU-seconds then (a cost ratio would divide by zero)
    criterion = CRITERION_COST if priced and any(e.price_per_hour for _, _, e, _ in rows) else CRITERION_GPU

    def key(row):
        _, _, e, _ = row
        if not e.tokens_per_s_per_gpu:
            return (1, float("inf"))
        # cost = price × GPUs / tokens/s (one price, the same GPUs for all): ordered by 1 / tokens/s per GPU,
        # which a tiny price (5e-324: every cost underflows to 0.0) cannot tie
        return (0, 1 / e.tokens_per_s_per_gpu)

    ranked = sorted(rows, key=key)
    reasons = explain(ranked, context=context, batch=batch, hw=hw, criterion=criterion)
    smallest = min(rows, key=lambda r: r[1].params.total)
    headline = headline_text(ranked, smallest, reasons)
    if plot is not None:
        from .plots import plot_memory

        plot_memory([d for *_, d in rows], hw, plot, batch=batch, context=context, tp=layout.tp if layout else gpus)
    settings = {"context": context, "batch": batch, "hardware": hw.name, "gpus": gpus,
                "tp": layout.tp if layout else None, "pp": layout.pp if layout else None,
                "ep": layout.ep if layout else None, "replicas": layout.dp if layout else None,
                "layout": "searched per model" if layout is None else layout.label,
                "dtype": dtype, "kv_dtype": kv_dtype, "price_per_hour": price_per_hour, "sliding_window": sliding_window}
    if out_fmt == OutputFormat.json:
        print_json({
            "schema_version": 1, "criterion": criterion, "settings": settings, "models": [d for *_, d in rows],
            "ranking": [lm.id for lm, *_ in ranked], "reasons": reasons, "summary": headline,
            "cheapest": ranked[0][0].id, "smallest": smallest[0].id, "hardware": hw.to_dict(),
            "assumptions": assumptions(hw, layout),
        })
        return
    if out_fmt == OutputFormat.csv:  # one row per model, ranked cheapest first
        rank_of = {lm.id: i + 1 for i, (lm, *_) in enumerate(ranked)}
        print_csv([{"rank": rank_of[lm.id], **d} for lm, *_, d in sorted(rows, key=lambda r: rank_of[r[0].id])])
        return
    emit(table_sections(rows, ranked, reasons, hw, settings, criterion), out_fmt,
         lines=[headline] + [f"note: {n}" for n in assumptions(hw, layout)]
         + [f"note: {lm.id}: {d['needs_at_least']}" for lm, *_, d in rows if d["needs_at_least"]]
         + [f"note: {lm.id}: {line}" for lm, *_, d in rows for line in bias_lines(d["accuracy_bias"])])


def assumptions(hw, layout=None) -> list[str]:
    if layout is not None and (layout.pp > 1 or layout.ep > 1):
        return [
            f"{layout.label} priced as planner plan prices it (hardware.deploy on analysis.parallel.Layout): memory per "
            "GPU of each pipeline stage as vLLM accounts for it, the tightest stage deciding the fit",
            "decode step: each stage's share on the step model (sourced device and engine factors), its collectives "
            "(all-reduce, MoE all-to-all, the stage-to-stage send) on their link, min(pp, batch) micro-batches with "
            "the pipeline bubble, and the engine's per-step overhead; no ideal roofline is shown for these layouts",
            "time to first token: one prompt through the stages in turn, in vLLM's max_num_batched_tokens chunks",
        ]
    return [
        "memory per GPU as vLLM accounts for it (planner serve --engine for others): weights as loaded/tp + "
        "batch × (KV + state) within its KV pool (gpu_memory_utilization 0.9 minus activation peak and non-torch memory)",
        "decode time: expected on vLLM by planner serve's step model (sourced device and engine factors, "
        "all-reduce latency and bandwidth, per-step overhead); the ideal roofline in brackets",
        "time to first token: the same model for the prefill of one --context-token prompt in vLLM's "
        "max_num_batched_tokens chunks",
    ]


def _pick_driver(best, other) -> str:
    """Why ``other`` costs more than ``best``: the decode step's extra traffic (KV read, weights read)
    at the requested batch, and the concurrency each can hold."""
    _, a0, e0, _ = best
    _, a1, e1, _ = other
    t0, t1 = a0.decode_totals, a1.decode_totals
    parts = []
    d_kv = (t1.kv_bytes + t1.state_bytes) - (t0.kv_bytes + t0.state_bytes)
    d_w = t1.weight_bytes - t0.weight_bytes
    seq0 = a0.kv_bytes_per_sequence + a0.kv.state_bytes_per_sequence
    seq1 = a1.kv_bytes_per_sequence + a1.kv.state_bytes_per_sequence
    big = 0.02 * t0.bytes
    for delta, text in sorted([
        (d_kv, f"{fmt_bytes(d_kv)} more KV read per step ({seq1 / seq0:.2f}× the cache per sequence: "
               f"{fmt_bytes(seq1)} vs {fmt_bytes(seq0)})" if seq0 else ""),
        (d_w, f"{fmt_bytes(d_w)} more weights read per step ({t1.weight_bytes / t0.weight_bytes:.2f}×)"),
    ], key=lambda x: -x[0]):
        if delta > big and text:
            parts.append(text)
    if e1.max_batch and e0.max_batch > 1.1 * e1.max_batch:
        parts.append(f"{e0.max_batch / e1.max_batch:.1f}× less concurrency ({e1.max_batch} vs {e0.max_batch} sequences)")
    if not parts:
        parts.append("a step of about the same traffic that the roofline puts slightly slower")
    return "; ".join(parts)


def describe_attention(a) -> str:
    from planner.analysis.analyze import attention_summary

    return attention_summary(a.spec)


def explain(ranked, *, context: int, batch: int, hw, criterion: str) -> dict[str, str]:
    out = {}
    best = ranked[0]
    for i, row in enumerate(ranked):
        lm, a, e, _ = row
        if not e.tokens_per_s_per_gpu:
            need = fmt_gib(e.memory.weights_bytes)
            out[lm.id] = (f"does not fit on {e.dep.layout.gpus_per_replica}× {hw.display_name} per replica at context "
                          f"{context:,} even at batch 1 (weights alone take {need} per GPU)")
            continue
        kv = fmt_bytes(a.kv.bytes_per_token)
        base = (f"{e.tokens_per_s_per_gpu:,.0f} tokens/s per GPU on {e.dep.layout.label}; {describe_attention(a)}: "
                f"{kv} KV per token; {fmt_count(a.params.active)} active parameters")
        if i == 0:
            out[lm.id] = "cheapest: " + base
        else:
            # one price for every model: the cost ratio is the ratio of GPU-seconds per token, which stays
            # defined when a tiny --price-per-hour makes every cost 0.0 (5e-324 underflows)
            # (every model on the same --gpus: cost and GPU-seconds both go as 1 / tokens/s per GPU)
            ratio = best[2].tokens_per_s_per_gpu / e.tokens_per_s_per_gpu
            out[lm.id] = f"{ratio:.2f}× the cost of {best[0].id}: {_pick_driver(best, row)}; " + base
        if not e.fits:
            out[lm.id] += f" (batch {batch} does not fit; at most {e.max_batch})"
    return out


def headline_text(ranked, smallest, reasons) -> str:
    best = ranked[0]
    text = f"Cheapest to serve: {best[0].id}."
    if smallest[0].id != best[0].id:
        text += (f" It is not the smallest: {smallest[0].id} has fewer parameters "
                 f"({fmt_count(smallest[1].params.total)} vs {fmt_count(best[1].params.total)}) but "
                 + reasons[smallest[0].id].split(": ", 1)[-1].split("; ")[0] + ".")
    else:
        text += " It is also the smallest."
    return text


def _cell_time(x, ideal=None):
    if x is None:
        return "-"
    return fmt_time(x) + (f" (ideal {fmt_time(ideal)})" if ideal is not None else "")


def table_sections(rows, ranked, reasons, hw, settings, criterion) -> list[Section]:
    ids = [lm.id for lm, *_ in rows]
    title = (f"{len(rows)} models at context {settings['context']:,}, batch {settings['batch']}, on "
             f"{settings['gpus']}× {hw.display_name}" + (f" ({settings['layout']})" if settings["gpus"] > 1 else ""))
    s = Section(title, ["", *ids], right=tuple(range(1, len(ids) + 1)))
    rank_of = {lm.id: i + 1 for i, (lm, *_) in enumerate(ranked)}
    s.add("rank (cheapest = 1)", *[rank_of[i] for i in ids])
    s.add("layout", *[e.dep.describe() for _, _, e, _ in rows])
    s.add("parameters", *[fmt_count(a.params.total) for _, a, _, _ in rows])
    s.add("active parameters", *[fmt_count(a.params.active) for _, a, _, _ in rows])
    s.add("decode FLOPs per token", *[fmt_si(a.decode_flops, "FLOP") for _, a, _, _ in rows])
    s.add("attention", *[describe_attention(a) for _, a, _, _ in rows])
    s.add("KV per token", *[fmt_bytes(a.kv.bytes_per_token) for _, a, _, _ in rows])
    s.add("KV per sequence", *[fmt_bytes(a.kv_bytes_per_sequence + a.kv.state_bytes_per_sequence) for _, a, _, _ in rows])
    s.add("weights", *[fmt_gib(a.weights_bytes) for _, a, _, _ in rows])
    s.add("weights + KV (batch)", *[fmt_gib(a.total_bytes) for _, a, _, _ in rows])
    s.add("per GPU needed / usable (busiest replica)", *[f"{fmt_gib(e.memory.needed_bytes(e.requested_batch), 1)} / "
                                        f"{fmt_gib(e.memory.usable_bytes, 1)}" for _, _, e, _ in rows])
    s.add("fits", *["yes" if e.fits else "NO" for _, _, e, _ in rows])
    s.add("max batch", *[fmt_int(e.max_batch) for _, _, e, _ in rows])
    s.add("decode step (busiest replica)", *[_cell_time(e.step_s, e.ideal_step_s) for _, _, e, _ in rows])
    s.add("tokens/s per GPU", *[f"{e.tokens_per_s_per_gpu:,.0f}" if e.tokens_per_s_per_gpu else "-" for _, _, e, _ in rows])
    if any(e.step is not None for _, _, e, _ in rows):
        s.add("collectives / pipeline bubble", *[f"{fmt_time(e.step.comm_s)} / {100 * e.step.bubble:.0f}% "
                                                 f"({e.step.microbatches} micro-batch{'es' if e.step.microbatches > 1 else ''})"
                                                 if e.step is not None else "-" for _, _, e, _ in rows])
    s.add("time to first token", *[_cell_time(e.ttft_s, e.ideal_ttft_s) for _, _, e, _ in rows])
    if criterion == CRITERION_COST:
        s.add("$ per M tokens", *[f"{e.cost_per_million_tokens:.3f}" if e.cost_per_million_tokens else "-" for _, _, e, _ in rows])
    else:
        s.add("GPU-s per M tokens", *[f"{1e6 / e.tokens_per_s_per_gpu:,.0f}" if e.tokens_per_s_per_gpu else "-" for _, _, e, _ in rows])
    s.caption = f"ranked by {criterion}"
    why = Section("Ranking", ["#", "model", "why"])
    for i, (lm, *_) in enumerate(ranked):
        why.add(i + 1, lm.id, reasons[lm.id])
    return [s, why]
