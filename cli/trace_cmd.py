"""``planner trace``: the per-op roofline trace of one decode step, and sweeps over batch × context."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from planner.analysis.errors import OptionError, short

from .analyze_cmd import ModelArg, RevisionOpt
from .options import DEFAULT_BATCH, DEFAULT_CONTEXT
from .options import BatchOpt, ContextOpt, DtypeOpt, FormatOpt, HardwareOpt, JsonOpt, KvDtypeOpt, RefreshOpt
from .options import DEFAULT_GPUS, TOKEN_COUNT, GpusOpt, PlotOpt, token_value
from .render import OutputFormat, fmt_bytes, fmt_int, fmt_si, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit
from .serve_cmd import EngineOpt, TpOpt

AllLayersOpt = Annotated[bool, typer.Option("--all-layers", help="One row per op and layer instead of one per layer shape.")]
SweepOpt = Annotated[
    Optional[list[str]],
    typer.Option("--sweep", help="Grid to sweep, e.g. --sweep batch=1,8,64 --sweep context=2k,32k (k = 1024 tokens)."),
]
GraphsOpt = Annotated[bool, typer.Option("--graphs/--eager", help="Time the step as a CUDA-graph replay (default) or as eager launches.")]

def parse_count(text: str, what: str) -> int:
    value = token_value(text)  # the rule every token-count option (--context, --input-len, ...) shares
    if value is None and not TOKEN_COUNT.match(text):
        raise OptionError(f"--sweep {what}: {short(text)} is not a count (use e.g. 64, 2k, 32k)")
    if value is None or value.denominator != 1 or value < (1 if what == "batch" else 0) or value > (1 << 30):
        raise OptionError(f"--sweep {what}: {short(text)} is out of range (at most {1 << 30})")
    return int(value)


def parse_sweep(items: list[str] | None, batch: int, context: int) -> tuple[list[int], list[int]] | None:
    if not items:
        return None
    grid = {"batch": [batch], "context": [context]}
    seen = set()
    for item in items:
        if not item.strip():  # (an empty --sweep '' swept the one default point)
            raise OptionError("--sweep: empty", "give e.g. --sweep batch=1,8,64 or --sweep context=2k,32k")
        for part in item.split():
            key, sep, values = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in grid or not values.strip():
                raise OptionError(f"--sweep {short(part, 60)}: expected batch=1,8,64 or context=2k,32k")
            if key in seen:
                raise OptionError(f"--sweep: {key} given twice")
            seen.add(key)
            # each value once, in the order given ("batch=1,1,8" printed the batch-1 row twice); "2k,2048" are one
            grid[key] = list(dict.fromkeys(parse_count(v, key) for v in values.split(",") if v.strip()))
            if not grid[key]:  # 'batch=,' swept nothing: an empty table, and CSV printed no line
                raise OptionError(f"--sweep {short(part, 60)}: no {key} values", f"give e.g. {key}=1,8,64")
            if len(grid[key]) > 64:
                raise OptionError(f"--sweep {key}: at most 64 values")
    return grid["batch"], grid["context"]


def trace(
    model: ModelArg,
    context: ContextOpt = DEFAULT_CONTEXT,
    batch: BatchOpt = DEFAULT_BATCH,
    hardware: HardwareOpt = None,
    dtype: DtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    all_layers: AllLayersOpt = False,
    sweep: SweepOpt = None,
    graphs: GraphsOpt = True,
    engine: EngineOpt = "vllm",
    gpus: GpusOpt = DEFAULT_GPUS,
    tp: TpOpt = None,
    revision: RevisionOpt = None,
    refresh: RefreshOpt = False,
    plot: PlotOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Per-op FLOPs and bytes of one decode step, its roofline time on the hardware, and which bound wins.

    The step's expected time on --engine is shown beside it, with the gap by factor. With --gpus/--tp the ops are
    one rank's share of a tensor-parallel replica; a step (or --sweep point) whose sequences do not fit in
    the engine's KV pool is marked and gets no throughput.

    Example: planner trace meta-llama/Meta-Llama-3-8B --context 2000 --batch 1 --hardware h100-sxm

    Roofline picture: planner trace meta-llama/Meta-Llama-3-8B --context 2000 --sweep batch=1,8,64 --plot roofline.png
    """
    from .common import load_hardware, load_model

    out_fmt = resolve_format(fmt, as_json)
    grid = parse_sweep(sweep, batch, context)
    if plot is not None:
        from .plots import check_plot_path

        plot = check_plot_path(plot)
    hw = load_hardware(hardware)
    loaded = load_model(model, revision, refresh)
    dep = deployment(loaded.spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype, engine=engine,
                     gpus=gpus, tp=tp)
    spec = dep.a.spec  # as the engine runs it
    t = build_trace(spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype,
                    all_layers=all_layers, graphs=graphs, dep=dep)
    rows = sweep_rows(spec, hw, grid, dtype=dtype, kv_dtype=kv_dtype, graphs=graphs, dep=dep) if grid else None
    flips = None
    if grid:
        flips = [{"context": c, "batch": flip_batch(spec, hw, c, dtype=dtype, kv_dtype=kv_dtype, plan=dep.plan)}
                 for c in grid[1]]
    if plot is not None:
        from .plots import plot_roofline

        plot_roofline(t, hw, plot, sweep=rows, model=loaded.id)
    if out_fmt == OutputFormat.csv:  # one table: the sweep's points, else the step's ops
        print_csv(rows if rows is not None else t["ops"])
        return
    if out_fmt == OutputFormat.json:
        d = {"schema_version": 1, "model": {"id": loaded.id, "source": loaded.source, "model_type": loaded.spec.model_type},
             **{k: v for k, v in t.items() if not k.startswith("_")}, "hardware": hw.to_dict()}
        if rows is not None:
            d["sweep"] = rows
            d["compute_bound_from_batch"] = flips
        print_json(d)
        return
    lines = [f"note: {n}" for n in t["notes"]]
    for f in flips or []:
        lines.append(f"at context {f['context']:,} the step turns compute-bound at batch {f['batch']:,}" if f["batch"]
                     else f"at context {f['context']:,} the step stays memory-bound up to batch 65,536")
    emit(trace_sections(loaded, hw, t, rows), out_fmt, lines=lines)


class Deployment:
    """What trace prices a step on: the tensor-parallel plan (``analysis.parallel.tp_plan``, the one
    serve and the engine memory use), the engine's memory (its ``fits_batch`` is the one fit test) and
    the step model (``hardware.serve.StepModel``, expected beside ideal)."""

    def __init__(self, a, hw, engine, plan, mem, model):
        self.a, self.hw, self.engine, self.plan, self.mem, self.model = a, hw, engine, plan, mem, model
        self._fewest: list = []
        self.gpus = plan.tp
        self.notes: tuple[str, ...] = ()  # how the engine runs the model differently from its config

    def fits(self, batch: int, context: int) -> bool:
        return self.mem.fits_batch(batch, context + 1)  # the step's new token is stored too

    def fewest_gpus(self) -> int | None:
        if not self._fewest:
            from planner.hardware.engine import fewest_gpus

            self._fewest.append(fewest_gpus(self.a, self.hw, self.engine, max_model_len=self.mem.max_model_len))
        return self._fewest[0]

    def expected(self, batch: int, context: int, fits: bool) -> dict:
        """The step's expected and ideal seconds, the gap by factor, and throughput only where it fits."""
        c = self.model.decode(batch, context)
        return {"expected_step_s": c.expected_s, "ideal_step_s": c.ideal_s, "gap_by_factor": dict(c.parts),
                "tokens_per_s": batch / c.expected_s if fits and c.expected_s else None,
                "ideal_tokens_per_s": batch / c.ideal_s if fits and c.ideal_s else None}


def deployment(spec, hw, *, batch: int, context: int, dtype: str | None, kv_dtype: str | None,
               engine: str | None = None, gpus: int = 1, tp: int | None = None) -> Deployment:
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import check_kv_dtype, engine_analysis, engine_memory, load_engine
    from planner.hardware.expected import factors_for
    from planner.hardware.serve import StepModel

    tp = gpus if tp is None else tp
    if gpus % tp:
        raise OptionError(f"--gpus {gpus} is not a multiple of --tp {tp}")
    eng = load_engine(engine)
    check_kv_dtype(eng, kv_dtype)
    # the model as the engine runs it (full attention where it does not apply the config's window)
    a, engine_notes = engine_analysis(analyze(spec, Options(context=context, batch=batch, dtype=dtype, kv_dtype=kv_dtype)),
                                      eng)
    plan = tp_plan(spec, tp)
    mpe = spec.max_position_embeddings
    mml = max(1, min(context + 1, mpe) if mpe else context + 1)
    mem = engine_memory(a, hw, eng, plan, max_model_len=mml)
    dep = Deployment(a, hw, eng, plan, mem, StepModel(a, hw, plan, factors_for(hw, eng)))
    dep.gpus = gpus
    dep.notes = engine_notes
    return dep


def _step(spec, hw, *, batch: int, context: int, dtype: str | None, kv_dtype: str | None, plan=None):
    """The collapsed decode step of one rank (``plan``: its tensor-parallel share; None: the whole step):
    (weight format, KV dtype, notes, op groups, step time, op times)."""
    from planner.analysis.analyze import kv_dtype_for
    from planner.analysis.parallel import shard_groups
    from planner.analysis.trace import step_groups
    from planner.analysis.weights import weight_format
    from planner.hardware.timing import groups_time

    fmt, notes = weight_format(spec, dtype)
    kvd = kv_dtype_for(fmt, kv_dtype)
    groups = step_groups(spec, fmt, kvd, batch=batch, new_tokens=1, cached_tokens=context)
    if plan is not None and plan.tp > 1:
        groups = shard_groups(groups, plan)
    st, times = groups_time(groups, hw, fmt.compute.compute, rows=batch)
    return fmt, kvd, notes, groups, st, times


def _totals(groups, times, st, *, batch: int, graphs: bool) -> tuple[dict, dict]:
    """(totals, shares by category) of a collapsed step."""
    from planner.analysis.trace import Totals

    tot = Totals.of_groups(groups)
    cats: dict[str, dict[str, float]] = {}
    for g, ot in zip(groups, times):
        o, n = g.op, g.count
        c = cats.setdefault(o.category, {"flops": 0, "bytes": 0, "time_s": 0.0})
        c["flops"] += n * o.flops
        c["bytes"] += n * o.bytes
        c["time_s"] += n * ot.time_s
    shares = {k: {"flops": v["flops"] / tot.flops if tot.flops else 0.0, "bytes": v["bytes"] / tot.bytes,
                  "time": v["time_s"] / st.device_s if st.device_s else 0.0} for k, v in sorted(cats.items())}
    time_s = st.time_s(graphs)
    totals = {
        "flops": tot.flops, "bytes": tot.bytes, "weight_bytes": tot.weight_bytes, "kv_bytes": tot.kv_bytes,
        "act_bytes": tot.act_bytes, "state_bytes": tot.state_bytes,
        "weight_share": tot.weight_bytes / tot.bytes, "kv_share": tot.kv_bytes / tot.bytes,
        "compute_s": st.compute_s, "memory_s": st.memory_s, "device_s": st.device_s, "time_s": time_s,
        "bound": st.bound, "bound_ratio": st.ratio, "intensity": tot.flops / tot.bytes,
    }
    return totals, shares


def _op_row(o, ot, count: int) -> dict:
    return {
        "name": o.name, "kind": o.kind, "category": o.category, "count": count,
        "flops": o.flops, "weight_bytes": o.weight_bytes, "act_read_bytes": o.act_read_bytes,
        "act_write_bytes": o.act_write_bytes, "kv_read_bytes": o.kv_read_bytes, "kv_write_bytes": o.kv_write_bytes,
        "state_read_bytes": o.state_read_bytes, "state_write_bytes": o.state_write_bytes, "bytes": o.bytes,
        "intensity": o.intensity, "compute_s": ot.compute_s, "memory_s": ot.memory_s, "time_s": ot.time_s,
        "bound": ot.bound, "kernels": o.kernels, "launches": o.launches,
    }


def build_trace(spec, hw, *, batch: int, context: int, dtype: str | None, kv_dtype: str | None,
                all_layers: bool = False, graphs: bool = True, dep: Deployment | None = None) -> dict:
    """The trace as a JSON-ready dict (ops, totals, shares, kernel view, the expected step). Identical
    layers are computed once (``step_groups``); ``all_layers`` repeats their rows, one per layer."""
    from planner.analysis.trace import per_layer

    if dep is None:
        dep = deployment(spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype)
    fmt, kvd, notes, groups, st, times = _step(spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype,
                                               plan=dep.plan)
    notes = list(dep.notes) + list(notes) + list(dep.plan.notes)
    compute_key = fmt.compute.compute
    rows = []
    if all_layers:
        time_of = {id(g.op): t for g, t in zip(groups, times)}
        base: dict[int, dict] = {}
        for o, layer in per_layer(groups):
            b = base.get(id(o))
            if b is None:
                b = base[id(o)] = _op_row(o, time_of[id(o)], 1)
            rows.append({**b, "layer": layer})
    else:
        for g, ot in zip(groups, times):
            row = _op_row(g.op, ot, g.count)
            if g.layers:
                row["layers"] = list(g.layers)
            else:
                row["layer"] = None
            rows.append(row)
    totals, shares = _totals(groups, times, st, batch=batch, graphs=graphs)
    fits = dep.fits(batch, context)
    totals.update(dep.expected(batch, context, fits))
    from planner.hardware.roofline import ridge_intensity

    mem = dep.mem
    fit = {"fits": fits, "kv_capacity_tokens": (None if not mem.token_bound else mem.kv_capacity_tokens if mem.kv_pool_bytes > 0 else 0),
           "max_batch": mem.max_batch(context + 1), "fewest_gpus": None if fits else dep.fewest_gpus()}
    if not fits:
        notes.append(f"does not fit: {batch} sequence(s) of {context + 1:,} tokens need more than the KV pool of "
                     f"{dep.engine.display_name} on {dep.plan.tp} × {hw.name}"
                     + (f"; the fewest GPUs that hold one sequence: {fit['fewest_gpus']}" if fit["fewest_gpus"] else "")
                     + "; no throughput is shown")
    return {
        "batch": batch, "context": context, "weights_dtype": fmt.describe(), "kv_dtype": kvd.name,
        "compute_dtype": compute_key, "engine": dep.engine.name, "layout": {"gpus": dep.gpus, "tp": dep.plan.tp},
        "memory": fit, "ops": rows, "totals": totals, "shares": shares,
        "ridge_intensity": ridge_intensity(hw, compute_key),
        "kernels": {"count": st.kernels, "launch_overhead_s": hw.kernel_launch_s, "launch_s": st.launch_s,
                    "eager_s": st.eager_s, "graph_s": st.graph_s, "graphs": graphs},
        "model_timing": "per op max(FLOPs/peak, bytes/bandwidth), summed over ops; eager adds kernel launches "
                        "(each op at least kernels × launch overhead); a CUDA graph launches once",
        "expected_timing": "hardware.serve.StepModel (planner serve's step): the roofline with the device's and "
                           "the engine's sourced factors, all-reduces and the per-step overhead; gap_by_factor sums "
                           "to expected_step_s − ideal_step_s; tokens_per_s is batch / expected_step_s",
        "notes": notes,
    }


def sweep_rows(spec, hw, grid, *, dtype, kv_dtype, graphs, dep: Deployment) -> list[dict]:
    """One row of step totals per (batch, context) point: each point builds the distinct layers' ops
    only and keeps their totals (no per-op rows); ``fits`` by the engine's one fit test, and a
    throughput only where it fits."""
    batches, contexts = grid
    out = []
    for c in contexts:
        for b in batches:
            _, _, _, groups, st, times = _step(spec, hw, batch=b, context=c, dtype=dtype, kv_dtype=kv_dtype,
                                               plan=dep.plan)
            tt, shares = _totals(groups, times, st, batch=b, graphs=graphs)
            fits = dep.fits(b, c)
            tt.update(dep.expected(b, c, fits))
            attn = shares.get("attention", {}).get("bytes", 0.0)
            out.append({"batch": b, "context": c, "flops": tt["flops"], "bytes": tt["bytes"],
                        "compute_s": tt["compute_s"], "memory_s": tt["memory_s"], "time_s": tt["time_s"],
                        "bound": tt["bound"], "bound_ratio": tt["bound_ratio"], "weight_share": tt["weight_share"],
                        "kv_share": tt["kv_share"], "attention_bytes_share": attn, "fits": fits,
                        "expected_step_s": tt["expected_step_s"], "ideal_step_s": tt["ideal_step_s"],
                        "tokens_per_s": tt["tokens_per_s"], "ideal_tokens_per_s": tt["ideal_tokens_per_s"]})
    return out


def flip_batch(spec, hw, context: int, *, dtype, kv_dtype, limit: int = 1 << 16, plan=None) -> int | None:
    """The smallest batch at which the decode step at ``context`` is compute-bound (None below ``limit``)."""
    from planner.analysis.capacity import largest

    def memory_bound(b: int) -> bool:
        st = _step(spec, hw, batch=b, context=context, dtype=dtype, kv_dtype=kv_dtype, plan=plan)[4]
        return st.bound == "memory"

    last_memory = largest(memory_bound, 1, limit)
    return None if last_memory >= limit else last_memory + 1


def _ratio(x: float) -> str:
    return "∞" if x == float("inf") else f"{x:.3g}×"


def trace_sections(loaded, hw, t: dict, sweep: list[dict] | None) -> list[Section]:
    title = (f"{loaded.id}: decode step, batch {t['batch']}, context {t['context']:,}, on {hw.display_name} "
             f"({t['weights_dtype']} weights, {t['kv_dtype']} KV)")
    ops = Section(title, ["op", "layers", "×", "FLOPs", "weights", "act r+w", "KV r+w", "FLOP/B", "compute", "memory", "bound"],
                  right=(2, 3, 4, 5, 6, 7, 8, 9))
    cells: dict[tuple, tuple] = {}  # --all-layers repeats each op's figures once per layer: format them once
    for r in t["ops"]:
        if "layers" in r:
            ls = r["layers"]
            where = f"{ls[0]}" if len(ls) == 1 else f"{ls[0]}..{ls[-1]}" if ls == list(range(ls[0], ls[-1] + 1)) else f"{ls[0]},{ls[1]}..{ls[-1]}"
        else:
            where = "" if r.get("layer") is None else str(r["layer"])
        key = (r["flops"], r["weight_bytes"], r["act_read_bytes"], r["act_write_bytes"], r["kv_read_bytes"],
               r["state_read_bytes"], r["kv_write_bytes"], r["state_write_bytes"], r["intensity"], r["compute_s"],
               r["memory_s"], r["bound"])
        figures = cells.get(key)
        if figures is None:
            figures = cells[key] = (
                fmt_si(r["flops"], "") if r["flops"] else "0", fmt_bytes(r["weight_bytes"]),
                fmt_bytes(r["act_read_bytes"] + r["act_write_bytes"]),
                fmt_bytes(r["kv_read_bytes"] + r["state_read_bytes"] + r["kv_write_bytes"] + r["state_write_bytes"]),
                f"{r['intensity']:.3g}", fmt_time(r["compute_s"]), fmt_time(r["memory_s"]), r["bound"])
        ops.add(r["name"], where, r["count"], *figures)
    ops.caption = "figures per layer; × = layers of that shape (--all-layers for one row each)"
    tt = t["totals"]
    totals = Section("Step totals", ["", "value"], right=(1,))
    totals.add("FLOPs", f"{fmt_si(tt['flops'], 'FLOP')} ({fmt_int(tt['flops'])})")
    totals.add("bytes", f"{fmt_si(tt['bytes'], 'B')} ({fmt_int(tt['bytes'])})")
    totals.add("  weights / KV / activations / state",
               f"{100 * tt['weight_share']:.1f}% / {100 * tt['kv_share']:.1f}% / "
               f"{100 * tt['act_bytes'] / tt['bytes']:.1f}% / {100 * tt['state_bytes'] / tt['bytes']:.1f}%")
    totals.add("arithmetic intensity", f"{tt['intensity']:.3g} FLOP/B (ridge {t['ridge_intensity']:.3g})")
    totals.add("compute time", fmt_time(tt["compute_s"]))
    totals.add("memory time", fmt_time(tt["memory_s"]))
    totals.add("bound", f"{tt['bound']}-bound by {_ratio(tt['bound_ratio'])}")
    totals.add("roofline step" + (" (CUDA graph)" if t["kernels"]["graphs"] else " (eager)"), fmt_time(tt["time_s"]))
    totals.add(f"expected step ({t['engine']}, tp {t['layout']['tp']})",
               f"{fmt_time(tt['expected_step_s'])} (ideal {fmt_time(tt['ideal_step_s'])})")
    for k, v in tt["gap_by_factor"].items():
        if v:
            totals.add(f"  + {k}", fmt_time(v))
    if tt["tokens_per_s"]:
        totals.add("decode throughput (expected)", f"{tt['tokens_per_s']:,.0f} tokens/s "
                   f"(ideal {tt['ideal_tokens_per_s']:,.0f})")
    else:
        totals.add("decode throughput", "- (does not fit)")
    shares = Section("Shares by part", ["part", "FLOPs", "bytes", "time"], right=(1, 2, 3))
    for k, v in t["shares"].items():
        shares.add(k, f"{100 * v['flops']:.1f}%", f"{100 * v['bytes']:.1f}%", f"{100 * v['time']:.1f}%")
    k = t["kernels"]
    kernels = Section("Kernel launches", ["", "value"], right=(1,))
    kernels.add("kernels in an unfused eager step", fmt_int(k["count"]))
    kernels.add("launch overhead each (profile)", fmt_time(k["launch_overhead_s"]))
    kernels.add("launch time if serial", fmt_time(k["launch_s"]))
    kernels.add("eager step", fmt_time(k["eager_s"]))
    kernels.add("CUDA-graph step", fmt_time(k["graph_s"]))
    secs = [ops, totals, shares, kernels]
    if sweep:
        sw = Section("Sweep", ["batch", "context", "FLOPs", "bytes", "weights", "KV", "attn bytes", "compute", "memory",
                               "step", "expected", "tokens/s", "bound"], right=tuple(range(0, 12)))
        for r in sweep:
            mark = f"{r['bound']} ({_ratio(r['bound_ratio'])})"
            if r["bound"] == "compute":
                mark = "COMPUTE " + _ratio(r["bound_ratio"])
            sw.add(r["batch"], f"{r['context']:,}", fmt_si(r["flops"], ""), fmt_si(r["bytes"], "B"),
                   f"{100 * r['weight_share']:.0f}%", f"{100 * r['kv_share']:.0f}%", f"{100 * r['attention_bytes_share']:.0f}%",
                   fmt_time(r["compute_s"]), fmt_time(r["memory_s"]), fmt_time(r["time_s"]),
                   fmt_time(r["expected_step_s"]),
                   f"{r['tokens_per_s']:,.0f}" if r["tokens_per_s"] else "does not fit" if not r["fits"] else "-", mark)
        flips = [r for r in sweep if r["bound"] == "compute"]
        if any(not r["fits"] for r in sweep):
            secs_note = "; 'does not fit': the sequences exceed the engine's KV pool (no throughput)"
        else:
            secs_note = ""
        sw.caption = ("step: roofline; expected: the engine's step model; tokens/s: batch / expected" + secs_note
                      + "\n")
        sw.caption += ("compute-bound from: " + ", ".join(f"batch {r['batch']} at {r['context']:,}" for r in flips)
                      if flips else "memory-bound at every point of the grid")
        secs.append(sw)
    return secs
