"""``planner plan``: the cheapest deployment (layout, replicas, batch limit) that meets a latency target
at a request rate, found by simulating the promising layouts under load; the Pareto front of tokens/s
per GPU against tokens/s per user; why each rejected family of layouts failed."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from .analyze_cmd import ModelArg, RevisionOpt
from .options import TOKENS_HELP, DtypeOpt, FormatOpt, JsonOpt, KvDtypeOpt, PlotOpt, tokens
from .render import OutputFormat, print_csv, print_json, resolve_format
from .sections import Section, emit

GpuOpt = Annotated[Optional[str], typer.Option("--gpu", "--hardware", "-H", help="GPU (hardware profile) of the nodes: a name from 'planner hardware list' or a YAML path; default h100-sxm.")]
MaxGpusOpt = Annotated[int, typer.Option("--max-gpus", min=1, max=4096, help="Most GPUs the deployment may use (count).")]
FixedGpusOpt = Annotated[Optional[int], typer.Option("--gpus", min=1, max=4096, help="Use exactly this many GPUs: the best layout on N GPUs (count).")]
RateOpt = Annotated[float, typer.Option("--rate", help="Request rate in requests per second (Poisson arrivals).")]
InOpt = Annotated[int, typer.Option("--input-len", "-i", click_type=tokens(1, 1 << 20), help=f"Prompt tokens per request ({TOKENS_HELP}).")]
OutOpt = Annotated[int, typer.Option("--output-len", "-o", click_type=tokens(1, 1 << 20), help=f"Generated tokens per request ({TOKENS_HELP}).")]
InDistOpt = Annotated[Optional[str], typer.Option("--input-len-dist", help="Draw each request's prompt length from this distribution, in place of --input-len (then their mean): uniform:A:B, normal:MEAN:SD, lognormal:MEAN:SD or const:N (seeded with --seed, as the arrivals).")]
OutDistOpt = Annotated[Optional[str], typer.Option("--output-len-dist", help="Draw each request's output length from this distribution, in place of --output-len (then their mean); the syntax of --input-len-dist.")]
TtftOpt = Annotated[float, typer.Option("--ttft-p90", help="Target: 90th-percentile time to first token, seconds.")]
TpotOpt = Annotated[float, typer.Option("--tpot-p90", help="Target: 90th-percentile time per output token, seconds.")]
EngineOpt = Annotated[str, typer.Option("--engine", "-e", help="Serving engine: vllm, sglang, trtllm or ideal (the roofline).")]
PriceOpt = Annotated[Optional[float], typer.Option("--price-per-hour", min=0.0, max=1e6, help="USD per GPU-hour (overrides the profile's price).")]
# at most 5,000: the search simulates every promising layout, about 3 ms per request for Llama-3.1-8B on up to
# 64 H100s (2,000 took 6.6 s, 5,000 15 s; 100,000 ran past two minutes)
RequestsOpt = Annotated[int, typer.Option("--requests", min=20, max=5_000, help="Requests simulated per replica (count).")]
DisaggOpt = Annotated[bool, typer.Option("--disaggregated/--aggregated-only", help="Also search disaggregated prefill/decode pools (xPyD), with the KV transfer priced on its link.")]
AsyncOpt = Annotated[Optional[bool], typer.Option("--async-scheduling/--no-async-scheduling", help="vLLM schedules the next step while the GPU runs this one, so its per-step host work costs only what outlasts the step (the default from vLLM 0.14.0, not under pipeline parallelism; --no-async-scheduling for 0.8-0.13). Default: the engine's (vLLM: on).")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**31, help="Seed of the simulated arrivals.")]


def plan(
    model: ModelArg,
    gpu: GpuOpt = None,
    max_gpus: MaxGpusOpt = 64,
    gpus: FixedGpusOpt = None,
    rate: RateOpt = 20.0,
    input_len: InOpt = 3000,
    output_len: OutOpt = 500,
    input_len_dist: InDistOpt = None,
    output_len_dist: OutDistOpt = None,
    ttft_p90: TtftOpt = 1.0,
    tpot_p90: TpotOpt = 0.04,
    engine: EngineOpt = "vllm",
    dtype: DtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    price_per_hour: PriceOpt = None,
    requests: RequestsOpt = 300,
    seed: SeedOpt = 0,
    disaggregated: DisaggOpt = True,
    async_scheduling: AsyncOpt = None,
    revision: RevisionOpt = None,
    plot: PlotOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Plan a deployment: the cheapest parallel layout, replica count and batch limit that meet a p90
    TTFT and TPOT target at a request rate, simulated under load; the Pareto front of tokens/s per GPU
    against tokens/s per user; and why each rejected family of layouts failed.

    Example: planner plan llama-3.1-70b --gpu h100-sxm --max-gpus 64 --rate 20 --input-len 3000 --output-len 500 --ttft-p90 1.0 --tpot-p90 0.04
    """
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.errors import OptionError
    from planner.hardware.planning import Target, Workload, plan as run_plan, plan_dict
    from planner.hardware.accuracy import bias_dict, bias_lines, load_bias

    from .common import load_hardware, load_model, warn_all

    # the bounds only keep answers readable: a million requests a second is past any --max-gpus (4,096
    # GPUs), and a target of a million seconds is no target; a request every 11.6 days (1e-6/s) is the
    # slowest rate (at 1e-308/s the simulated arrival times overflowed to infinity)
    for name, v, lo, hi in (("--rate", rate, 1e-6, 1e6), ("--ttft-p90", ttft_p90, 0, 1e6),
                            ("--tpot-p90", tpot_p90, 0, 1e6)):
        if not (math.isfinite(v) and 0 < v <= hi and v >= lo):
            least = f"at least {lo:g} and " if lo else ""
            raise OptionError(f"{name} must be a positive finite number of {least}at most {hi:,.0f}, got {v:g}")
    if price_per_hour is not None and not math.isfinite(price_per_hour):
        raise OptionError(f"--price-per-hour must be a finite number of USD, got {price_per_hour}")
    out_fmt = resolve_format(fmt, as_json)
    if plot is not None:
        from .plots import check_plot_path

        plot = check_plot_path(plot)
    from planner.hardware.engine import check_kv_dtype, load_engine

    check_kv_dtype(load_engine(engine), kv_dtype)  # only a KV cache the engine offers (as serve and trace)
    hw = load_hardware(gpu)
    lm = load_model(model, revision)
    context = input_len + output_len
    if input_len_dist is not None or output_len_dist is not None:  # the means stand for the requests' lengths
        from planner.hardware.simulate import drawn_length_summary

        input_len, output_len, context = drawn_length_summary(input_len, output_len, input_len_dist, output_len_dist)
    a = analyze(lm.spec, Options(context=context, batch=1, dtype=dtype, kv_dtype=kv_dtype))
    warn_all(a.warnings)
    workload = Workload(rate, input_len, output_len, requests, seed, input_len_dist, output_len_dist)
    r = run_plan(a, hw, model_id=lm.id, workload=workload,
                 target=Target(ttft_p90, tpot_p90), engine=engine, max_gpus=max_gpus, gpus=gpus,
                 price_per_hour=price_per_hour, disaggregated=disaggregated, async_scheduling=async_scheduling)
    d = plan_dict(r)
    # the signed error of the steady published runs of this model family and of this vendor's GPUs (as serve)
    d["accuracy_bias"] = bias_dict(load_bias(), a.spec.model_type, hw.vendor, r.engine)
    if plot is not None:
        from .plots import plot_pareto

        plot_pareto(d, plot)
    if out_fmt == OutputFormat.json:
        print_json(d)
        return
    if out_fmt == OutputFormat.csv:  # one row per layout of the Pareto front (and the cheapest, first)
        print_csv(plan_records(d))
        return
    room = headroom_line(d)
    emit(sections(d), out_fmt, lines=[headline(d, hw)] + ([room] if room else []) + bias_lines(d["accuracy_bias"])
         + [f"note: {n}" for n in d["notes"]])


def plan_records(d: dict) -> list[dict]:
    """The CSV rows of a plan: the Pareto front's layouts, each marked whether it is the cheapest that
    meets the target (the cheapest comes first, added when it is not on the front)."""
    best = d.get("cheapest")
    rows = [{"cheapest": c == best, **c} for c in d.get("pareto") or []]
    if best is not None and not any(r["cheapest"] for r in rows):
        rows.insert(0, {"cheapest": True, **best})
    return sorted(rows, key=lambda r: not r["cheapest"])


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.1f} ms"


def _s(x) -> str:
    return "-" if x is None else f"{x:.2f} s"


def headline(d: dict, hw) -> str:
    w, t = d["workload"], d["target"]
    lens = (f"{w['input_len']:,}" + (f" ({w['input_len_dist']})" if w.get("input_len_dist") else "") + " in / "
            + f"{w['output_len']:,}" + (f" ({w['output_len_dist']})" if w.get("output_len_dist") else "") + " out")
    ask = (f"{w['rate_per_s']:g} req/s of {lens} with TTFT p90 <= "
           f"{t['ttft_p90_s']:g} s and TPOT p90 <= {t['tpot_p90_s'] * 1e3:g} ms on {hw.display_name} ({d['engine']})")
    c = d["cheapest"]
    if c is None:
        n, bound = d["needs_at_least_gpus"], d["search"]["gpus"] or d["search"]["max_gpus"]
        if n and n <= bound:  # layouts that hold it were searched: they miss a target instead
            return (f"No layout meets {ask}: the model fits from {n} GPUs, but every layout that holds it misses "
                    f"a target; see the rejected families for why.")
        if n:
            return f"No layout meets {ask}: the model needs at least {n} GPUs to fit."
        within = f"exactly {d['search']['gpus']}" if d["search"]["gpus"] else f"at most {d['search']['max_gpus']}"
        return f"No layout on {within} GPUs meets {ask}; see the rejected families for why."
    cost = (f", ${c['cost_per_million_tokens']:.3f} per million output tokens" if c["cost_per_million_tokens"] is not None
            else "")
    if c["prefill"] is not None:
        pf = c["prefill"]
        shape = (f"{pf['replicas']} prefill replica(s) of {pf['layout']['gpus_per_replica']} + {c['replicas']} decode "
                 f"replica(s) of {c['layout']['gpus_per_replica']}, KV sent in {_ms(pf['kv_transfer_s'])} "
                 f"({pf['kv_transfer_link'].replace('_', '-')})")
    else:
        shape = f"{c['replicas']} replica(s) of {c['layout']['gpus_per_replica']}"
    return (f"Cheapest for {ask}: {c['label']} = {c['gpus']} GPUs ({shape}), max_num_seqs {c['max_num_seqs']}: "
            f"TTFT p90 {_s(c['ttft_p90_s'])}, TPOT p90 {_ms(c['tpot_p90_s'])}{cost}.")


def headroom_line(d: dict) -> str | None:
    """The table's line on the cheapest deployment's headroom: 'headroom: it meets the target up to about 14.1 req/s
    (1.41x the asked rate), where TTFT p90 breaks first; ...'; with a warning where the margin is within the
    serve model's held-out error of throughput on the engine."""
    h = d.get("headroom")
    if not h:
        return None
    if not h["limited_by"]:
        text = (f"headroom: it meets the target at {h['searched_up_to_per_s']:g} req/s too ({h['ratio']:.1f}x the "
                "asked rate, the most searched)")
    else:
        text = (f"headroom: it meets the target up to about {h['max_rate_per_s']:.3g} req/s ({h['ratio']:.2f}x the asked "
                f"rate); above that {' and '.join(h['limited_by'])} {'breaks' if len(h['limited_by']) == 1 else 'break'} first")
    err = h["tokens_per_s_held_out_median_error"]
    if err is not None and h["within_model_error"]:
        text += (f". Warning: that margin is within the serve model's held-out median error of throughput on this engine "
                 f"({err:.0%}): if the engine runs that much slower than priced, the target is missed at the asked rate "
                 f"(to cover it, plan for --rate {d['workload']['rate_per_s'] * (1 + err):.3g})")
    return text + "."


def _row(c: dict) -> list:
    return [c["label"], c["gpus"], c["max_num_seqs"], _s(c["ttft_p50_s"]), _s(c["ttft_p90_s"]),
            _ms(c["tpot_p50_s"]), _ms(c["tpot_p90_s"]), f"{c['output_tokens_per_s_per_gpu']:,.0f}",
            "-" if c["output_tokens_per_s_per_user"] is None else f"{c['output_tokens_per_s_per_user']:.1f}",
            f"{c['kv_mean_occupancy']:.0%}" if c["kv_mean_occupancy"] is not None else "-",
            "-" if c["cost_per_million_tokens"] is None else f"{c['cost_per_million_tokens']:.3f}",
            "yes" if c["meets_target"] else "no"]


HEADERS = ["layout", "GPUs", "max seqs", "TTFT p50", "TTFT p90", "TPOT p50", "TPOT p90", "tok/s per GPU",
           "tok/s per user", "KV used (mean)", "$ per M tok", "meets"]


def sections(d: dict) -> list[Section]:
    out = []
    if d["cheapest"] is not None:
        s = Section("Cheapest meeting the target", HEADERS, right=tuple(range(1, 11)))
        s.add(*_row(d["cheapest"]))
        m = d["cheapest"]["memory_per_gpu"]
        s.caption = (f"per GPU: weights {m['weights_bytes'] / 2**30:.1f} GiB, KV pool {m['kv_pool_bytes'] / 2**30:.1f} GiB "
                     + (f"= {m['kv_capacity_tokens']:,} tokens per replica" if m["kv_capacity_tokens"] is not None else
                        f"of recurrent state ({m['state_bytes_per_sequence'] / 2**20:,.1f} MiB per sequence per GPU)")
                     + (" (the decode pool's)" if d["cheapest"]["prefill"] is not None else ""))
        out.append(s)
    p = Section("Pareto front: tokens/s per GPU against tokens/s per user", HEADERS, right=tuple(range(1, 11)))
    for c in d["pareto"]:
        p.add(*_row(c))
    out.append(p)
    rj = Section("Rejected layout families", ["family", "why"])
    for x in d["rejected"]:
        rj.add(x["family"], x["reason"])
    out.append(rj)
    return out
