"""Every command of the CLI, one line each; only the command being run is imported.

``planner --help`` lists the names and help lines below without importing any command module; running
a command imports its module and builds it then (``app.PlannerGroup``). Adding a command is one line:
``Command(name, module under planner.cli, attribute, help line)``. The attribute is a command function
(its docstring is the command's ``--help``) or a ``typer.Typer`` of subcommands. The help line is the
first paragraph of that docstring or Typer help, word for word (tests/test_startup.py checks it).
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    name: str
    module: str
    attr: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("analyze", "analyze_cmd", "analyze",
            "Exact parameters, FLOPs per token, KV cache and memory of MODEL, and whether it fits."),
    Command("trace", "trace_cmd", "trace",
            "Per-op FLOPs and bytes of one decode step, its roofline time on the hardware, and which bound wins."),
    Command("compare", "compare_cmd", "compare",
            "Compare models side by side: memory, concurrency, decode throughput, time to first token and cost,\n"
            "ranked cheapest to serve first, with the reason for each."),
    Command("verify", "verify_cmd", "verify",
            "Check the analysis against a real torch decode loop: exact checks, measured vs predicted step time, "
            "where the time went."),
    Command("calibrate", "calibrate_cmd", "calibrate",
            "Measure this device's bandwidth, matmul FLOP/s and launch overhead; save them as a hardware profile."),
    Command("serve", "serve_cmd", "serve",
            "Serve MODEL on a named engine: KV capacity, TTFT, time per output token, end-to-end latency and\n"
            "throughput, expected (sourced engine and device factors) beside the ideal roofline."),
    Command("plan", "plan_cmd", "plan",
            "Plan a deployment: the cheapest parallel layout, replica count and batch limit that meet a p90\n"
            "TTFT and TPOT target at a request rate, simulated under load; the Pareto front of tokens/s per GPU\n"
            "against tokens/s per user; and why each rejected family of layouts failed."),
    Command("models", "models_cmd", "models_app", "Bundled model configs (usable offline by id or alias)."),
    Command("hardware", "hardware_cmd", "hardware_app",
            "Hardware profiles: memory, bandwidth, dense peak FLOP/s, interconnect, sources."),
)


def load(entry: Command):
    """The click command of ``entry``, built from its module (imported now)."""
    import importlib

    import typer
    from typer.main import get_command, get_group

    obj = getattr(importlib.import_module(f"planner.cli.{entry.module}"), entry.attr)
    if isinstance(obj, typer.Typer):
        obj.rich_markup_mode = None  # plain help, as the app's (cli/app.py)
        cmd = get_group(obj)
    else:
        one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
        one.command(entry.name)(obj)
        cmd = get_command(one)
    cmd.name = entry.name
    return cmd
