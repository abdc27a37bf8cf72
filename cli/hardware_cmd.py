"""``planner hardware``: list and show hardware profiles (bundled, user, or a YAML file)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .options import FormatOpt, JsonOpt
from .render import (
    SCHEMA_VERSION,
    literal,
    OutputFormat,
    fmt_int,
    fmt_si,
    fmt_time,
    print_csv,
    print_json,
    resolve_format,
    rich_table,
    visible,
    rows_to_markdown,
    stdout_console,
)

hardware_app = typer.Typer(
    help=(
        "Hardware profiles: memory, bandwidth, dense peak FLOP/s, interconnect, sources.\n\n"
        "Bundled profiles can be shadowed or extended by YAML files in the user config folder "
        "(<config>/hardware/*.yaml; <config> is $PLANNER_CONFIG_DIR if set).\n\n"
        "Example: planner hardware show h100"
    ),
    no_args_is_help=True,
)


def _num(value: float | None, fmt: str) -> str | None:
    return None if value is None else format(value, fmt)


def _tflops(profile: Any, key: str) -> float | None:
    v = profile.peak_flops_per_s.get(key)
    return None if v is None else v / 1e12


def _list_rows(profiles: list, *, precise: bool) -> list[list[Any]]:
    g = ".6g" if precise else ".5g"
    rows = []
    for p in profiles:
        ic = p.interconnect_bytes_per_s
        rows.append(
            [
                p.name,
                p.display_name,
                _num(p.memory_bytes / 2**30, ".3f" if precise else ".2f"),
                _num(p.memory_bandwidth_bytes_per_s / 1e12, g),
                _num(_tflops(p, "bf16"), g),
                _num(_tflops(p, "fp8"), g),
                _num(None if ic is None else ic / 1e9, g),
                p.origin,
            ]
        )
    return rows


_LIST_HEADERS = [
    "name",
    "device",
    "memory (GiB)",
    "bandwidth (TB/s)",
    "bf16 (TFLOP/s)",
    "fp8 (TFLOP/s)",
    "interconnect (GB/s/dir)",
    "origin",
]


@hardware_app.command("list")
def list_cmd(fmt: FormatOpt = None, as_json: JsonOpt = False) -> None:
    """List every hardware profile: bundled ones and those in the user config folder.

    Memory is in GiB (2^30 bytes); bandwidth, FLOP rates and interconnect in SI units (TB/s, TFLOP/s, GB/s per direction). Peaks are dense (no 2:4 sparsity); an empty cell means the device has no published peak for that dtype.

    Example: planner hardware list --format csv
    """
    from planner.hardware.profiles import list_profiles, user_profile_dir

    profiles = list_profiles()
    out = resolve_format(fmt, as_json)
    if out is OutputFormat.json:
        print_json({"schema_version": SCHEMA_VERSION, "profiles": [p.to_dict() for p in profiles]})
    elif out is OutputFormat.csv:  # one row per profile, base units
        print_csv([p.to_dict() for p in profiles])
    elif out is OutputFormat.markdown:
        typer.echo(rows_to_markdown(_LIST_HEADERS, _list_rows(profiles, precise=False)), nl=False)
    else:
        from rich import box

        headers = ["name", "device", "memory\nGiB", "DRAM\nTB/s", "bf16\nTFLOP/s", "fp8\nTFLOP/s", "link\nGB/s/dir", "origin"]
        table = rich_table("Hardware profiles (dense peaks)", headers, _list_rows(profiles, precise=False), right=(2, 3, 4, 5, 6))
        table.box = box.SIMPLE_HEAD
        table.pad_edge = False
        table.collapse_padding = True
        for i, column in enumerate(table.columns):
            column.no_wrap = i != 1  # only the long device name wraps
        table.columns[1].min_width = 10
        table.caption = literal(f"user profiles: {user_profile_dir()}/*.yaml")
        table.caption_justify = "left"
        stdout_console().print(table)


def _tflops_text(flops_per_s: float) -> str:
    return f"{format(flops_per_s / 1e12, ',.6g')} TFLOP/s"


def _peak_text(profile: Any, key: str) -> str:
    if key in profile.peak_flops_per_s:
        return _tflops_text(profile.peak_flops_per_s[key])
    from planner.analysis.errors import HardwareError

    try:
        used = profile.peak_flops_key_for(key)
    except HardwareError:
        return "- (no usable peak)"
    return f"- (uses the {used} rate, {_tflops_text(profile.peak_flops_per_s[used])})"


def _show_rows(p: Any) -> list[list[str]]:
    from planner.hardware.profiles import DTYPE_KEYS
    from planner.hardware.roofline import ridge_intensity

    usable = p.memory_bytes - p.runtime_reserve_bytes
    rows = [
        ["name", p.name],
        ["display name", p.display_name],
        ["vendor", p.vendor],
        ["aliases", ", ".join(p.aliases) or "-"],
        ["origin", p.origin],
        ["path", p.path or "-"],
        ["memory", f"{p.memory_bytes / 2**30:,.2f} GiB ({fmt_int(p.memory_bytes)} bytes)"],
        ["runtime reserve", f"{p.runtime_reserve_bytes / 2**30:,.2f} GiB ({fmt_int(p.runtime_reserve_bytes)} bytes)"],
        ["memory after reserve", f"{usable / 2**30:,.2f} GiB ({fmt_int(usable)} bytes)"],
        ["memory bandwidth", fmt_si(p.memory_bandwidth_bytes_per_s, "B/s", digits=5)],
    ]
    for key in DTYPE_KEYS:
        rows.append([f"peak {key} (dense)", _peak_text(p, key)])
    for key, frac in p.mamf_fractions().items():  # measured: the best large matmul
        rows.append([f"max achievable matmul {key}",
                     f"{_tflops_text(p.max_achievable_matmul_flops_per_s[key])} ({frac:.1%} of the peak)"])
    rows += [
        ["ridge intensity (bf16)", f"{ridge_intensity(p, 'bf16', use_efficiency=False):.4g} FLOP/byte"],
        [
            "interconnect",
            "-" if p.interconnect_bytes_per_s is None else f"{fmt_si(p.interconnect_bytes_per_s, 'B/s', digits=5)} per direction",
        ],
        ["interconnect name", p.interconnect_name or "-"],
        ["kernel launch overhead", fmt_time(p.kernel_launch_s)],
        ["SMs x boost clock", "-" if p.sm_count is None or p.boost_clock_hz is None
         else f"{p.sm_count} x {p.boost_clock_hz / 1e6:g} MHz"],
        ["price per hour", "-" if p.price_per_hour is None else f"{p.price_per_hour:.4g} USD per GPU-hour"],
        ["memory efficiency", "- (peak used)" if p.memory_efficiency is None else f"{p.memory_efficiency:.3g}"],
        ["compute efficiency", "- (peak used)" if p.compute_efficiency is None else f"{p.compute_efficiency:.3g}"],
        ["interconnect efficiency", "- (_device.yaml default)" if p.interconnect_efficiency is None
         else f"{p.interconnect_efficiency:.3g} of the interconnect in all-reduce"],
    ]
    if p.graph_node_s is not None:  # calibrated on a GPU, for the torch decoder verify times
        rows.append(["graph node overhead (verify)", f"{fmt_time(p.graph_node_s)} per dispatched op of a CUDA-graph replay"])
    if p.graph_node_by_rows_s:
        rows.append(["graph node overhead at a model's width (verify)",
                     ", ".join(f"batch {r} {fmt_time(v)}" for r, v in p.graph_node_by_rows_s.items())
                     + " per dispatched op, small ops' work included"])
    if p.attention_decode_overhead_s is not None:
        rows.append(["decode attention call overhead (verify)", f"{fmt_time(p.attention_decode_overhead_s)} per layer"])
    if p.experts_grouped_bytes_per_s is not None:
        rows.append(["grouped routed experts (verify)",
                     f"{fmt_si(p.experts_grouped_bytes_per_s, 'B/s', digits=4)} of touched expert weights"
                     + (f" + {fmt_time(p.experts_grouped_overhead_s)} per MoE layer" if p.experts_grouped_overhead_s else "")])
    if p.attention_head_bytes_per_s is not None:
        rows.append(["decode attention per KV head (verify)",
                     f"{fmt_si(p.attention_head_bytes_per_s, 'B/s', digits=4)} per (sequence, KV head)"])
    return rows


@hardware_app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(help="Profile name or alias (see 'planner hardware list'), or a path to a YAML file.")],
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show every field of one hardware profile, with its sources and notes.

    Memory is in GiB (2^30 bytes) with the exact byte count; rates in SI units. A dtype without its own peak shows the rate the planner falls back to.

    Example: planner hardware show h100-sxm --json
    """
    from planner.hardware.profiles import load_profile

    p = load_profile(name)
    out = resolve_format(fmt, as_json)
    if out is OutputFormat.json:
        print_json({"schema_version": SCHEMA_VERSION, "profile": p.to_dict()})
        return
    if out is OutputFormat.csv:  # one row, base units
        print_csv([p.to_dict()])
        return
    rows = _show_rows(p)
    if out is OutputFormat.markdown:
        text = rows_to_markdown(["field", "value"], rows)
        text += "\n**Sources**\n\n" + "".join(f"- {visible(s)}\n" for s in p.source or ("none given",))
        text += "\n**Notes**\n\n" + "".join(f"- {visible(n)}\n" for n in p.notes or ("none",))
        typer.echo(text, nl=False)
    else:
        console = stdout_console()
        console.print(rich_table(p.display_name, ["field", "value"], rows))
        from rich.markup import escape

        console.print("\n[bold]Sources[/bold]")
        for s in p.source or ("none given",):
            console.print(f"  - {escape(visible(s))}", soft_wrap=True)
        console.print("\n[bold]Notes[/bold]")
        for n in p.notes or ("none",):
            console.print(f"  - {escape(visible(n))}", soft_wrap=True)
