"""``planner trace``: the per-op roofline trace of one decode step, and sweeps over batch × context."""

from __future__ import annotations

import math
import re
from typing import Annotated, Optional

import typer

from planner.analysis.errors import OptionError, short

from .analyze_cmd import ModelArg, RevisionOpt
from .options import DEFAULT_BATCH, DEFAULT_CONTEXT
from .options import BatchOpt, ContextOpt, DtypeOpt, FormatOpt, HardwareOpt, JsonOpt, KvDtypeOpt, RefreshOpt
from .options import PlotOpt
from .render import OutputFormat, fmt_bytes, fmt_int, fmt_si, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit

AllLayersOpt = Annotated[bool, typer.Option("--all-layers", help="One row per op and layer instead of one per layer shape.")]
SweepOpt = Annotated[
    Optional[list[str]],
    typer.Option("--sweep", help="Grid to sweep, e.g. --sweep batch=1,8,64 --sweep context=2k,32k (k = 1024 tokens)."),
]
GraphsOpt = Annotated[bool, typer.Option("--graphs/--eager", help="Time the step as a CUDA-graph replay (default) or as eager launches.")]

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_count(text: str, what: str) -> int:
    m = SIZE.match(text)
    if not m:
        raise OptionError(f"--sweep {what}: {short(text)} is not a count (use e.g. 64, 2k, 32k)")
    value = float(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if not math.isfinite(value) or value != int(value) or value < (1 if what == "batch" else 0) or value > (1 << 30):
        raise OptionError(f"--sweep {what}: {short(text)} is out of range (at most {1 << 30})")
    return int(value)


def parse_sweep(items: list[str] | None, batch: int, context: int) -> tuple[list[int], list[int]] | None:
    if not items:
        return None
    grid = {"batch": [batch], "context": [context]}
    seen = set()
    for item in items:
        for part in item.split():
            key, sep, values = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in grid or not values.strip():
                raise OptionError(f"--sweep '{part}': expected batch=1,8,64 or context=2k,32k")
            if key in seen:
                raise OptionError(f"--sweep: {key} given twice")
            seen.add(key)
            grid[key] = [parse_count(v, key) for v in values.split(",") if v.strip()]
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
    revision: RevisionOpt = None,
    refresh: RefreshOpt = False,
    plot: PlotOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Per-op FLOPs and bytes of one decode step, its roofline time on the hardware, and which bound wins.

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
    t = build_trace(loaded.spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype,
                    all_layers=all_layers, graphs=graphs)
    rows = sweep_rows(loaded.spec, hw, grid, dtype=dtype, kv_dtype=kv_dtype, graphs=graphs) if grid else None
    flips = None
    if grid:
        flips = [{"context": c, "batch": flip_batch(loaded.spec, hw, c, dtype=dtype, kv_dtype=kv_dtype)} for c in grid[1]]
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


def _step(spec, hw, *, batch: int, context: int, dtype: str | None, kv_dtype: str | None):
    """The collapsed decode step: (weight format, KV dtype, notes, op groups, step time, op times)."""
    from planner.analysis.analyze import kv_dtype_for
    from planner.analysis.trace import step_groups
    from planner.analysis.weights import weight_format
    from planner.hardware.timing import groups_time

    fmt, notes = weight_format(spec, dtype)
    kvd = kv_dtype_for(fmt, kv_dtype)
    groups = step_groups(spec, fmt, kvd, batch=batch, new_tokens=1, cached_tokens=context)
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
        "tokens_per_s": batch / time_s if time_s else None,
    }
    return totals, shares


def _op_row(o, ot, count: int) -> dict:
    return {
        "name": o.name, "kind": o.kind, "category": o.category, "count": count,
        "flops": o.flops, "weight_bytes": o.weight_bytes, "act_read_bytes": o.act_read_bytes,
        "act_write_bytes": o.act_write_bytes, "kv_read_bytes": o.kv_read_bytes, "kv_write_bytes": o.kv_write_bytes,
        "state_read_bytes": o.state_read_bytes, "state_write_bytes": o.state_write_bytes, "bytes": o.bytes,
        "intensity": o.intensity, "compute_s": ot.compute_s, "memory_s": ot.memory_s, "time_s": ot.time_s,
        "bound": ot.bound, "kernels": o.kernels,
    }


def build_trace(spec, hw, *, batch: int, context: int, dtype: str | None, kv_dtype: str | None,
                all_layers: bool = False, graphs: bool = True) -> dict:
    """The trace as a JSON-ready dict (ops, totals, shares, kernel view). Identical layers are computed
    once (``step_groups``); ``all_layers`` repeats their rows, one per layer."""
    from planner.analysis.trace import per_layer

    fmt, kvd, notes, groups, st, times = _step(spec, hw, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype)
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
    from planner.hardware.roofline import ridge_intensity

    return {
        "batch": batch, "context": context, "weights_dtype": fmt.describe(), "kv_dtype": kvd.name,
        "compute_dtype": compute_key, "ops": rows, "totals": totals, "shares": shares,
        "ridge_intensity": ridge_intensity(hw, compute_key),
        "kernels": {"count": st.kernels, "launch_overhead_s": hw.kernel_launch_s, "launch_s": st.launch_s,
                    "eager_s": st.eager_s, "graph_s": st.graph_s, "graphs": graphs},
        "model_timing": "per op max(FLOPs/peak, bytes/bandwidth), summed over ops; eager adds kernel launches "
                        "(each op at least kernels × launch overhead); a CUDA graph launches once",
        "notes": notes,
    }


def sweep_rows(spec, hw, grid, *, dtype, kv_dtype, graphs) -> list[dict]:
    """One row of step totals per (batch, context) point: each point builds the distinct layers' ops
    only and keeps their totals (no per-op rows)."""
    batches, contexts = grid
    out = []
    for c in contexts:
        for b in batches:
            _, _, _, groups, st, times = _step(spec, hw, batch=b, context=c, dtype=dtype, kv_dtype=kv_dtype)
            tt, shares = _totals(groups, times, st, batch=b, graphs=graphs)
            attn = shares.get("attention", {}).get("bytes", 0.0)
            out.append({"batch": b, "context": c, "flops": tt["flops"], "bytes": tt["bytes"],
                        "compute_s": tt["compute_s"], "memory_s": tt["memory_s"], "time_s": tt["time_s"],
                        "bound": tt["bound"], "bound_ratio": tt["bound_ratio"], "weight_share": tt["weight_share"],
                        "kv_share": tt["kv_share"], "attention_bytes_share": attn, "tokens_per_s": tt["tokens_per_s"]})
    return out


def flip_batch(spec, hw, context: int, *, dtype, kv_dtype, limit: int = 1 << 16) -> int | None:
    """The smallest batch at which the decode step at ``context`` is compute-bound (None below ``limit``)."""
    from planner.analysis.capacity import largest

    def memory_bound(b: int) -> bool:
        st = _step(spec, hw, batch=b, context=context, dtype=dtype, kv_dtype=kv_dtype)[4]
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
    totals.add("step time" + (" (CUDA graph)" if t["kernels"]["graphs"] else " (eager)"), fmt_time(tt["time_s"]))
    if tt["tokens_per_s"]:
        totals.add("decode throughput", f"{tt['tokens_per_s']:,.0f} tokens/s")
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
                               "step", "tokens/s", "bound"], right=tuple(range(0, 11)))
        for r in sweep:
            mark = f"{r['bound']} ({_ratio(r['bound_ratio'])})"
            if r["bound"] == "compute":
                mark = "COMPUTE " + _ratio(r["bound_ratio"])
            sw.add(r["batch"], f"{r['context']:,}", fmt_si(r["flops"], ""), fmt_si(r["bytes"], "B"),
                   f"{100 * r['weight_share']:.0f}%", f"{100 * r['kv_share']:.0f}%", f"{100 * r['attention_bytes_share']:.0f}%",
                   fmt_time(r["compute_s"]), fmt_time(r["memory_s"]), fmt_time(r["time_s"]),
                   f"{r['tokens_per_s']:,.0f}" if r["tokens_per_s"] else "-", mark)
        flips = [r for r in sweep if r["bound"] == "compute"]
        sw.caption = ("compute-bound from: " + ", ".join(f"batch {r['batch']} at {r['context']:,}" for r in flips)
                      if flips else "memory-bound at every point of the grid")
        secs.append(sw)
    return secs
