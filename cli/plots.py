"""``--plot PATH``: pictures of what ``trace``, ``compare`` and ``verify`` print (the ``plot`` extra).

Each ``plot_*`` function takes the same dicts a command prints as JSON, draws them with matplotlib's
object API (a ``Figure`` with an Agg canvas: no pyplot, no display, no global state), saves the file
and returns the ``Figure`` so tests can read the plotted numbers back from its artists.

- Files: ``.png`` or ``.svg`` only. Every figure is ``FIGSIZE_IN`` inches at ``DPI`` dots per inch,
  so a PNG is always ``PIXELS`` = 960 × 600 pixels; no tight bounding box (it would change the size),
  no timestamps in the file (the same command writes the same bytes).
- The data-carrying artists have a ``gid`` (``GID_*`` below) and keep the JSON numbers unscaled:
  bytes and FLOP/s on the axes, turned into GiB / TFLOP/s only by the tick formatters.
- matplotlib is imported inside these functions only (``check_plot_path`` tries it first), so the
  commands start as fast without the extra as with it; missing, the error says how to install it.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from planner.analysis.errors import OptionError, short

FIGSIZE_IN = (8.0, 5.0)
DPI = 120
PIXELS = (960, 600)  # FIGSIZE_IN × DPI: the size of every PNG
SUFFIXES = (".png", ".svg")
INSTALL_HINT = "install the plot extra: pip install 'planner[plot]'"

# gids of the artists that carry data (tests find them with ``artist(fig, gid)``)
GID_OPS = "roofline:ops"  # PathCollection, offsets = (op intensity FLOP/B, op FLOPs / op time_s)
GID_STEP = "roofline:step"  # PathCollection, one point: (step FLOPs / bytes, step FLOPs / step time_s)
GID_SWEEP = "roofline:sweep"  # PathCollection, one point per sweep row, in the JSON's order
GID_MEMORY_SLOPE = "roofline:memory"  # Line2D, y = bandwidth × x
GID_CEILING = "roofline:compute"  # Line2D, y = peak FLOP/s of the compute dtype
GID_RIDGE = "roofline:ridge"  # Line2D, x = ridge intensity
GID_CAPACITY = "memory:capacity"  # Line2D, y = tp × GPU memory bytes
GID_USABLE = "memory:usable"  # Line2D, y = tp × (GPU memory - runtime reserve) bytes
GID_CONTEXT = "memory:context"  # Line2D, x = the chosen context



def memory_gid(model_id: str) -> str:
    """Line2D of one model in the memory plot: x = context (tokens), y = weights + batch × (KV + state) bytes."""
    return f"memory:{model_id}"


def verify_gid(series: str, kind: str) -> str:
    """Rectangle of one bar in the verify plot (``series`` is 'predicted' or 'measured'); height in seconds."""
    return f"verify:{series}:{kind}"


# ---- the file --------------------------------------------------------------------------------------

def _need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise OptionError("--plot needs matplotlib, which is not installed", INSTALL_HINT) from None


def check_plot_path(path: str | os.PathLike) -> Path:
    """The path ``--plot`` may write, checked before any work: a .png or .svg file in a folder that exists
    and is writable, and matplotlib importable. Raises ``OptionError`` naming the path otherwise."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise OptionError(f"--plot {p}: unsupported file type '{p.suffix or '(none)'}'", "use a .png or .svg file name")
    try:
        os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        pass  # (worded below)
    except OSError as exc:  # a name too long for the file system ...
        raise OptionError(f"--plot {short(str(p), 120)}: {exc.strerror or type(exc).__name__}",
                          "choose a shorter name or another path") from None
    if p.is_symlink():
        if not p.exists():
            raise OptionError(f"--plot {p}: a symbolic link to a file that does not exist",
                              "remove the link or choose another path")
        p = Path(os.path.realpath(p))  # the file it names is replaced, not the link
    if p.is_dir():
        raise OptionError(f"--plot {p}: is a folder", "give a file name ending in .png or .svg")
    parent = p.parent
    if not parent.exists():
        raise OptionError(f"--plot {p}: folder '{parent}' does not exist", "create it first or choose another path")
    if not parent.is_dir():
        raise OptionError(f"--plot {p}: '{parent}' is not a folder", "choose a path inside a folder")
    if p.exists() and not os.access(p, os.W_OK):
        raise OptionError(f"--plot {p}: the file exists and is not writable", "choose another path")
    try:  # os.access says yes to root everywhere; a real probe also catches read-only mounts
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError:
        raise OptionError(f"--plot {p}: folder '{parent}' is not writable", "choose another folder") from None
    _need_matplotlib()
    return p


def _new_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.155, right=0.975, bottom=0.11, top=0.895)
    return fig


def _save(fig, path: Path) -> None:
    import matplotlib

    fmt = path.suffix.lower().lstrip(".")
    meta = {"Date": None} if fmt == "svg" else {"Software": None}
    from matplotlib.text import Text

    for text in fig.findobj(Text):  # names and paths are text, never mathtext ('$' in a model id or path)
        text.set_parse_math(False)
    # written to a temporary file beside it, then renamed: a failure (a full disk) leaves any old picture whole
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".planner-plot-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh, matplotlib.rc_context({"svg.hashsalt": "planner", "svg.fonttype": "path"}):
            fig.savefig(fh, format=fmt, dpi=DPI, metadata=meta)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        raise OptionError(f"--plot {path}: cannot write it ({exc.strerror or exc})", "choose another path") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- shared drawing helpers ---------------------------------------------------------------------

def _profile(hw: Any):
    """A ``HardwareProfile`` from a profile or from its JSON dict (``HardwareProfile.to_dict``)."""
    from planner.hardware.profiles import HardwareProfile

    if isinstance(hw, HardwareProfile):
        return hw
    return HardwareProfile(**hw)


def _si_formatter(unit: str):
    from matplotlib.ticker import FuncFormatter

    from .render import fmt_si

    return FuncFormatter(lambda v, _pos: fmt_si(v, unit) if v > 0 else "")


def _plain_formatter():
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _pos):
        if v <= 0:
            return ""
        if v >= 1000:
            return f"{v / 1000:g}k"
        return f"{v:g}"

    return FuncFormatter(fmt)


def ctx_label(tokens: int) -> str:
    """2048 -> '2k', 32768 -> '32k', 1048576 -> '1M', 2000 -> '2,000' (k = 1024 tokens, as --sweep reads)."""
    if tokens >= 1 << 20 and tokens % (1 << 20) == 0:
        return f"{tokens >> 20}M"
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens >> 10}k"
    return f"{tokens:,}"


def _place_labels(fig, ax, items: Iterable[tuple[float, float, str, str]], *, avoid: Iterable[Any] = (),
                  points: Iterable[tuple[float, float, float]] = (), fontsize: float = 8) -> list:
    """Annotate each (x, y, text, color) near its point: the first of rings of offsets, nearest first, whose
    text stays inside the axes and overlaps no label placed before it, no artist of ``avoid`` (legend,
    notes) and no marker of ``points`` ((x, y, radius in points)). A label set far from its point gets a
    thin leader line; far offsets avoid the rising diagonal, where the line would hide under the data."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox, IdentityTransform

    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    blocked = [a.get_window_extent(renderer).padded(2) for a in avoid]
    pt = fig.dpi / 72  # pixels per point
    for px_, py_, r in points:
        cx, cy = ax.transData.transform((px_, py_))
        half = max(r, 3) * pt
        blocked.append(Bbox.from_extents(cx - half, cy - half, cx + half, cy + half))
    candidates = []
    for i, r in enumerate((7, 14, 24, 38, 56, 78)):
        dirs = [(1, -1), (-1, 1), (1, 0), (-1, 0), (0, 1), (0, -1)]
        if i < 2:  # along the rising lines only while the label stays next to its point
            dirs += [(1, 1), (-1, -1)]
        candidates += [(dx * r, dy * r * 0.7) for dx, dy in dirs]
    out = []
    for x, y, text, color in items:
        px, py = ax.transData.transform((x, y))
        chosen = None
        for dx, dy in candidates:
            probe = Text(0, 0, text, fontsize=fontsize, ha=_ha(dx), va=_va(dy))
            probe.set_figure(fig)
            probe.set_transform(IdentityTransform())  # pixels
            probe.set_position((px + dx * pt, py + dy * pt))
            box = probe.get_window_extent(renderer).padded(2)
            if (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
                    and not any(box.overlaps(b) for b in blocked)):
                chosen = (dx, dy, box)
                break
        if chosen is None:
            dx, dy = candidates[0]
            box = None
        else:
            dx, dy, box = chosen
        far = abs(dx) > 12 or abs(dy) > 12
        ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, color=color,
                          ha=_ha(dx), va=_va(dy),
                          arrowprops={"arrowstyle": "-", "color": color, "lw": 0.6, "shrinkA": 0, "shrinkB": 3}
                          if far else None)
        if box is not None:
            blocked.append(box)
        out.append(ann)
    return out


def _ha(dx: float) -> str:
    return "left" if dx > 0 else "right" if dx < 0 else "center"


def _va(dy: float) -> str:
    return "bottom" if dy > 0 else "top" if dy < 0 else "center"


# ---- trace: the roofline ---------------------------------------------------------------------------

_CATEGORY_COLORS = {"attention": "tab:blue", "ffn": "tab:orange", "lm_head": "tab:green", "ssm": "tab:purple",
                    "embedding": "tab:brown", "norm": "tab:gray", "other": "tab:olive"}


def _clusters(points: list[dict]) -> list[dict]:
    """Ops at the same spot of the plot (within 3% on both log axes) share one label."""
    out: list[dict] = []
    for p in sorted(points, key=lambda q: -q["share"]):
        for c in out:
            if abs(math.log(p["x"] / c["x"])) < 0.03 and abs(math.log(p["y"] / c["y"])) < 0.03:
                c["names"].append(p["name"])
                c["share"] += p["share"]
                break
        else:
            out.append({"x": p["x"], "y": p["y"], "names": [p["name"]], "share": p["share"], "color": p["color"]})
    return out


#: A sweep of more points than this labels only the four corners of its grid: 4,096 labels (64 × 64) covered the
#: picture, spilled past the axes, and placing them added 15-20 s to the run.
SWEEP_LABELLED_POINTS = 32
#: Points at one spot beyond this many are counted, not listed, in their shared label.
_SWEEP_LABEL_ROWS = 4


def _sweep_labels(xy: list[tuple[float, float]], rows: list[dict]) -> list[tuple[float, float, str, str]]:
    """'b=64, 32k' per sweep point; points at the same spot (within 5%) share one label ('b=64, 512, 32k');
    of a sweep of more than ``SWEEP_LABELLED_POINTS`` points, only the grid's corners."""
    pairs = list(zip(xy, rows))
    if len(pairs) > SWEEP_LABELLED_POINTS:
        bs, cs = [r["batch"] for r in rows], [r["context"] for r in rows]
        corners = {(b, c) for b in (min(bs), max(bs)) for c in (min(cs), max(cs))}
        pairs = [(p, r) for p, r in pairs if (r["batch"], r["context"]) in corners]
    groups: list[dict] = []
    for (x, y), r in pairs:
        for g in groups:
            if abs(math.log(x / g["x"])) < 0.05 and abs(math.log(y / g["y"])) < 0.05:
                g["rows"].append(r)
                break
        else:
            groups.append({"x": x, "y": y, "rows": [r]})
    out = []
    for g in groups:
        ctxs = list(dict.fromkeys(r["context"] for r in g["rows"]))
        if len(ctxs) == 1:
            parts = [str(r["batch"]) for r in g["rows"]]
            text = f"b={', '.join(_first(parts))}, {ctx_label(ctxs[0])}"
        else:
            text = "; ".join(_first([f"b={r['batch']}, {ctx_label(r['context'])}" for r in g["rows"]]))
        out.append((g["x"], g["y"], text, "crimson"))
    return out


def _first(parts: list[str]) -> list[str]:
    """``parts`` whole up to ``_SWEEP_LABEL_ROWS``, else the first few and how many more."""
    if len(parts) <= _SWEEP_LABEL_ROWS:
        return parts
    return parts[:_SWEEP_LABEL_ROWS - 1] + [f"+{len(parts) - _SWEEP_LABEL_ROWS + 1} more"]


def plot_roofline(trace: dict, hw: Any, path: str | os.PathLike, *, sweep: list[dict] | None = None,
                  model: str | None = None):
    """The hardware's roofline with each op of the step at (intensity, FLOPs / time), sized by its share of
    the step's device time; the step itself as a star; with ``sweep`` (the trace JSON's ``sweep`` rows) one
    point per batch × context. ``trace`` is the trace JSON (or ``build_trace``'s dict); ``hw`` a
    ``HardwareProfile`` or its JSON dict. Returns the saved ``Figure``."""
    path = check_plot_path(path)
    from planner.hardware.roofline import effective_rates

    from .render import fmt_si

    prof = _profile(hw)
    compute = trace["compute_dtype"]
    peak_flops_per_s, bytes_per_s = effective_rates(prof, compute)
    ridge = peak_flops_per_s / bytes_per_s
    model = model or (trace.get("model") or {}).get("id") or "model"
    tt = trace["totals"]
    device_s = tt["device_s"]

    pts, skipped, skipped_share = [], [], 0.0
    for r in trace["ops"]:
        share = r["count"] * r["time_s"] / device_s if device_s else 0.0
        if r["flops"] <= 0 or r["time_s"] <= 0:
            skipped.append(r["name"])
            skipped_share += share
            continue
        pts.append({"x": r["intensity"], "y": r["flops"] / r["time_s"], "share": share, "name": r["name"],
                    "color": _CATEGORY_COLORS.get(r["category"], "black"), "category": r["category"]})
    step = (tt["flops"] / tt["bytes"], tt["flops"] / tt["time_s"])
    sw = [(s["flops"] / s["bytes"], s["flops"] / s["time_s"]) for s in sweep or []]

    xs = [p["x"] for p in pts] + [step[0]] + [x for x, _ in sw]
    x_lo = 10 ** math.floor(math.log10(min(min(xs), ridge) / 2))
    x_hi = 10 ** math.ceil(math.log10(max(max(xs), ridge) * 8))
    y_lo = 10 ** math.floor(math.log10(bytes_per_s * x_lo))
    y_hi = 10 ** math.ceil(math.log10(peak_flops_per_s * 3))

    fig = _new_figure()
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.grid(True, which="major", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, log scale)")
    ax.set_ylabel("attainable FLOP/s (log scale)")
    ax.xaxis.set_major_formatter(_plain_formatter())
    ax.yaxis.set_major_formatter(_si_formatter("FLOP/s"))

    eff = " × efficiency" if prof.memory_efficiency or prof.compute_efficiency else ""
    ax.plot([x_lo, ridge], [bytes_per_s * x_lo, peak_flops_per_s], color="black", lw=1.6, gid=GID_MEMORY_SLOPE,
            label=f"memory: {fmt_si(bytes_per_s, 'B/s')}{eff}")
    ax.plot([ridge, x_hi], [peak_flops_per_s, peak_flops_per_s], color="black", lw=1.6, ls="--", gid=GID_CEILING,
            label=f"compute: {fmt_si(peak_flops_per_s, 'FLOP/s')} dense {prof.peak_flops_key_for(compute)}{eff}")
    ax.plot([ridge, ridge], [y_lo, peak_flops_per_s], color="0.5", lw=0.8, ls=":", gid=GID_RIDGE)
    ridge_text = ax.annotate(f"ridge {ridge:.3g} FLOP/B", (ridge, peak_flops_per_s), xytext=(4, -5),
                             textcoords="offset points", ha="left", va="top", fontsize=8, color="0.35")

    if pts:
        ops = ax.scatter([p["x"] for p in pts], [p["y"] for p in pts], s=[12 + 900 * p["share"] for p in pts],
                         c=[p["color"] for p in pts], alpha=0.6, edgecolors="white", linewidths=0.5, gid=GID_OPS,
                         zorder=3)
        ops.set_label("_ops")
        for cat in dict.fromkeys(p["category"] for p in pts):
            ax.scatter([], [], s=30, c=_CATEGORY_COLORS.get(cat, "black"), alpha=0.6, label=f"op: {cat}")
    ax.scatter([step[0]], [step[1]], s=160, marker="*", c="crimson", edgecolors="black", linewidths=0.5, zorder=5,
               gid=GID_STEP, label=f"step (b={trace['batch']}, {ctx_label(trace['context'])})")
    if sw:
        ax.scatter([x for x, _ in sw], [y for _, y in sw], s=36, marker="D", facecolors="none", edgecolors="crimson",
                   linewidths=1.2, zorder=4, gid=GID_SWEEP, label="sweep step (batch × context)")

    title = f"{model}: decode step on {prof.display_name}"
    fig.suptitle(title, fontsize=11, x=0.155, ha="left", y=0.975)
    fig.text(0.155, 0.915, f"batch {trace['batch']}, context {trace['context']:,}, {trace['weights_dtype']} weights, "
             f"{trace['kv_dtype']} KV; point size = share of step time", fontsize=8.5, color="0.3", ha="left")
    avoid = [ax.legend(loc="upper left", fontsize=8, framealpha=0.9), ridge_text]
    if skipped:
        import textwrap

        names = ", ".join(dict.fromkeys(skipped))
        note = textwrap.fill(f"not shown (no FLOPs, memory only): {names}; {100 * skipped_share:.2g}% of step time",
                             44)
        avoid.append(ax.text(0.99, 0.02, note, transform=ax.transAxes, fontsize=7, color="0.4", va="bottom",
                             ha="right", bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.9, "pad": 1}))

    labels = []
    for c in _clusters(pts)[:6]:
        if c["share"] < 0.01:
            continue
        uniq = list(dict.fromkeys(c["names"]))  # layers of different shapes repeat an op's name
        n = len(uniq)
        names = ", ".join(uniq) if n <= 3 else f"{', '.join(uniq[:2])} + {n - 2} more"
        labels.append((c["x"], c["y"], f"{names}: {100 * c['share']:.0f}%", "0.15"))
    labels += _sweep_labels(sw, sweep or [])
    markers = ([(p["x"], p["y"], math.sqrt(12 + 900 * p["share"]) / 2) for p in pts] + [(*step, 6.5)]
               + [(x, y, 3.5) for x, y in sw])
    _place_labels(fig, ax, labels, avoid=avoid, points=markers)
    _save(fig, path)
    return fig


# ---- compare: memory against context ---------------------------------------------------------------

def context_grid(lo: int, hi: int, extra: Iterable[int] = ()) -> list[int]:
    """Token counts from ``lo`` to ``hi``: four per doubling, plus the ``extra`` ones in range (windows, the
    chosen context), sorted and distinct."""
    pts = set()
    k = 0
    while True:
        v = int(round(lo * 2 ** (k / 4)))
        if v > hi:
            break
        pts.add(v)
        k += 1
    pts.add(hi)
    pts.update(e for e in extra if lo <= e <= hi)
    return sorted(pts)


def plot_memory(models: list[dict], hw: Any, path: str | os.PathLike, *, batch: int, context: int, tp: int = 1):
    """Weights + batch × (KV + state) of one replica against context (log-log), one line per model of the
    compare JSON's ``models``, with the replica's memory (``tp`` GPUs) and what is usable after the runtime
    reserve; each model's ``max_batch`` at ``context`` in its legend entry and next to its point.
    KV bytes come from ``analysis.kv`` over the JSON's per-layer rows (windows cap their layers).
    Returns the saved ``Figure``."""
    path = check_plot_path(path)
    from planner.analysis.kv import LayerKV

    from .render import fmt_gib

    prof = _profile(hw)
    capacity = tp * prof.memory_bytes
    usable = tp * (prof.memory_bytes - prof.runtime_reserve_bytes)
    lo = max(1, min(512, context))  # a log axis: context 0 gets no point of its own
    hi = max([context] + [m["model"].get("max_position_embeddings") or 0 for m in models])
    hi = max(hi, 2 * lo)

    fig = _new_figure()
    ax = fig.add_subplot()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("context (tokens per sequence, log scale; k = 1024)")
    ax.set_ylabel("weights + KV cache (GiB, log scale)")
    ax.xaxis.set_major_formatter(_fmt_tokens())
    ax.yaxis.set_major_formatter(_fmt_gib_ticks())
    ax.grid(True, which="major", color="0.9", lw=0.6)
    ax.set_axisbelow(True)

    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:cyan"]
    ys_all, marks = [capacity, usable], []
    for i, m in enumerate(models):
        layers = [LayerKV(**row) for row in m["kv_cache"]["per_layer"]]
        windows = {lk.window for lk in layers if lk.window}
        top = max(m["model"].get("max_position_embeddings") or hi, context)
        grid = context_grid(lo, min(top, hi), windows | {context})
        weights = m["memory"]["weights_bytes"]
        state = m["kv_cache"]["state_bytes_per_sequence"]
        # plotted as floats: exact byte counts past 2^63 (a batch of 2^24 at a context of 2^30) are Python ints
        # numpy cannot hold (set_ylim and the label placement failed with an internal TypeError)
        ys = [float(weights + batch * (sum(lk.bytes_at(c) for lk in layers) + state)) for c in grid]
        color = colors[i % len(colors)]
        mb = m["max_batch"]
        ax.plot(grid, ys, color=color, lw=1.6, gid=memory_gid(m["model"]["id"]),
                label=f"{m['model']['id']}: max batch {mb:,} at {ctx_label(context)}")
        if context >= lo:
            y_ctx = ys[grid.index(context)]
            ax.plot([context], [y_ctx], "o", color=color, ms=5, zorder=4)
            marks.append((context, y_ctx, f"max {mb:,}", color))
        ys_all += ys
    ax.axhline(capacity, color="black", lw=1.2, gid=GID_CAPACITY,
               label=f"{tp}× {prof.display_name}: {fmt_gib(capacity, 0)}" if tp > 1 else
               f"{prof.display_name}: {fmt_gib(capacity, 0)}")
    ax.axhline(usable, color="black", lw=1.0, ls="--", gid=GID_USABLE,
               label=f"usable after {fmt_gib(tp * prof.runtime_reserve_bytes, 0)} runtime reserve")
    if context >= lo:
        ax.axvline(context, color="0.5", lw=0.8, ls=":", gid=GID_CONTEXT)
    y_lo = 2.0 ** math.floor(math.log2(min(ys_all) / 1.3))
    y_hi = 2.0 ** math.ceil(math.log2(max(ys_all) * 1.3))
    x_hi = hi if context < hi else 2 * hi  # room right of a chosen context at the end of the axis
    ax.set_xlim(lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    right = math.log(max(context, lo) / lo) > 0.7 * math.log(x_hi / lo)
    ax.annotate(f"context {context:,}", (max(context, lo), y_lo), xytext=(-4 if right else 4, 4),
                textcoords="offset points", ha="right" if right else "left", fontsize=8, color="0.35")
    fig.suptitle(f"Memory against context at batch {batch}", fontsize=11, x=0.155, ha="left", y=0.975)
    fig.text(0.155, 0.915, "one replica" + (f" (tp {tp})" if tp > 1 else "") + "; max batch: the most sequences that "
             "fit at the chosen context, decode activations included", fontsize=8.5, color="0.3",
             ha="left")
    legend = ax.legend(loc="best", fontsize=8, framealpha=0.9)
    _place_labels(fig, ax, marks, avoid=[legend], points=[(x, y, 3) for x, y, _, _ in marks])
    _save(fig, path)
    return fig


def _fmt_tokens():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: ctx_label(int(round(v))) if v >= 1 else "")


def _fmt_gib_ticks():
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _pos):
        g = v / 2**30
        return f"{g:g}" if g >= 1 / 64 else ""

    return FuncFormatter(fmt)


# ---- verify: predicted against measured --------------------------------------------------------------

def plot_verify(verify: dict, path: str | os.PathLike):
    """Predicted and measured seconds of the decode step by op kind and for the whole step, as grouped bars
    (log scale), with measured / predicted above each pair. ``verify`` is the verify JSON:
    ``{"timing": {"predicted_s", "measured_s", ...}, "per_kind": [{"kind", "predicted_s", "measured_s"}]}``;
    a kind's measured time is ``measured_s`` or, as ``planner verify`` names it, ``profiled_s`` (the torch
    profiler's time, from eager steps); null draws no bar. Returns the saved ``Figure``."""
    path = check_plot_path(path)
    from .render import fmt_time

    rows = [(r["kind"], r.get("predicted_s"), r["measured_s"] if "measured_s" in r else r.get("profiled_s"))
            for r in verify.get("per_kind") or []]
    timing = verify["timing"]
    rows.append(("step", timing.get("predicted_s"), timing.get("measured_s")))
    values = [v for _, p, m in rows for v in (p, m) if v is not None and v > 0]

    fig = _new_figure()
    ax = fig.add_subplot()
    ax.set_yscale("log")
    ax.set_ylabel("time per decode step (log scale)")
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_time(v) if v > 0 else ""))
    ax.grid(True, axis="y", which="major", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    y_lo = 10 ** math.floor(math.log10(min(values) / 2)) if values else 1e-6
    y_hi = 10 ** math.ceil(math.log10(max(values) * 30)) if values else 1.0
    w = 0.38
    labelled = set()
    for i, (kind, pred, meas) in enumerate(rows):
        for series, value, dx, color in (("predicted", pred, -w / 2, "tab:blue"),
                                         ("measured", meas, w / 2, "tab:orange")):
            if value is None or value <= 0:
                ax.text(i + dx, y_lo * 1.15, "n/a", ha="center", va="bottom", fontsize=7, color="0.4")
                continue
            bars = ax.bar([i + dx], [value], width=w, bottom=0, color=color, alpha=0.85 if kind != "step" else 1.0,
                          edgecolor="black" if kind == "step" else "none", lw=0.8,
                          label=None if series in labelled else series)
            labelled.add(series)
            bars.patches[0].set_gid(verify_gid(series, kind))
        if pred and meas:
            ratio = meas / pred
            ax.annotate(f"{ratio:.2g}×" if ratio < 100 else f"{ratio:,.0f}×", (i, max(pred, meas)), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7.5, color="0.25")
    ax.set_ylim(y_lo, y_hi)
    tilt = len(rows) > 7
    ax.set_xticks(range(len(rows)), [k for k, _, _ in rows], rotation=30 if tilt else 0,
                  ha="right" if tilt else "center", rotation_mode="anchor" if tilt else "default", fontsize=8.5)
    if tilt:
        fig.subplots_adjust(bottom=0.2)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    model = (verify.get("model") or {}).get("id") if isinstance(verify.get("model"), dict) else verify.get("model")
    fig.suptitle(f"{model + ': ' if model else ''}predicted vs measured decode time", fontsize=11, x=0.155,
                 ha="left", y=0.975)
    profiled = any("profiled_s" in r and "measured_s" not in r for r in verify.get("per_kind") or [])
    fig.text(0.155, 0.915, "by op kind" + (" (measured: torch profiler, eager steps)" if profiled else "")
             + " and for the whole step; above each pair: measured / predicted", fontsize=8.5, color="0.3", ha="left")
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    _save(fig, path)
    return fig


def artist(fig, gid: str):
    """The one artist of ``fig`` with ``gid`` (tests; ``None`` when absent)."""
    found = fig.findobj(lambda a: a.get_gid() == gid)
    return found[0] if found else None


__all__ = ["DPI", "FIGSIZE_IN", "PIXELS", "PlotOpt", "artist", "check_plot_path", "ctx_label", "context_grid",
           "memory_gid", "plot_memory", "plot_roofline", "plot_verify", "verify_gid"]


GID_FRONT = "pareto-front"
GID_CHEAPEST = "cheapest"


def plot_pareto(plan: dict, path: str | os.PathLike):
    """The Pareto front of ``planner plan``'s JSON: output tokens/s per GPU (x) against tokens/s per
    user (1 / median TPOT, y), each point labelled with its layout; those meeting the target filled,
    the cheapest ringed. Returns the saved ``Figure``."""
    path = check_plot_path(path)
    pts = [c for c in plan["pareto"] if c["output_tokens_per_s_per_user"]]
    fig = _new_figure()
    ax = fig.add_subplot()
    ax.set_xlabel("output tokens/s per GPU (the served rate over the GPUs)")
    ax.set_ylabel("output tokens/s per user (1 / median TPOT)")
    ax.grid(True, color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    xs = [c["output_tokens_per_s_per_gpu"] for c in pts]
    ys = [c["output_tokens_per_s_per_user"] for c in pts]
    if pts:
        ax.plot(xs, ys, "-", color="tab:blue", lw=1.2, gid=GID_FRONT)
        for c, x, y in zip(pts, xs, ys):
            ax.plot([x], [y], "o", ms=6, color="tab:blue", mfc="tab:blue" if c["meets_target"] else "white", zorder=3)
        marks = [(x, y, f"{c.get('label') or c['layout']['label']} ({c['gpus']})", "0.2") for c, x, y in zip(pts, xs, ys)]
        _place_labels(fig, ax, marks, points=[(x, y, 3) for x, y, _, _ in marks])
    best = plan.get("cheapest")
    if best is not None and best["output_tokens_per_s_per_user"]:
        ax.plot([best["output_tokens_per_s_per_gpu"]], [best["output_tokens_per_s_per_user"]], "o", ms=13,
                mfc="none", mec="tab:red", mew=1.6, gid=GID_CHEAPEST, zorder=4, label="cheapest meeting the target")
        ax.legend(loc="best", fontsize=8, framealpha=0.9)
    w = plan["workload"]
    fig.suptitle(f"{plan['model']} on {plan['hardware']}: layouts simulated at {w['rate_per_s']:g} req/s",
                 fontsize=11, x=0.155, ha="left", y=0.975)
    fig.text(0.155, 0.915, "filled: meets the p90 TTFT and TPOT target; label: layout (GPUs)", fontsize=8.5,
             color="0.3", ha="left")
    _save(fig, path)
    return fig
