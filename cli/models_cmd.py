"""``planner models``: the bundled model configs."""

from __future__ import annotations

import typer

from .options import FormatOpt, JsonOpt
from .render import OutputFormat, fmt_count, print_csv, print_json, resolve_format
from .sections import Section, emit

models_app = typer.Typer(help="Bundled model configs (usable offline by id or alias).", no_args_is_help=True)


@models_app.command("list")
def list_models(fmt: FormatOpt = None, as_json: JsonOpt = False) -> None:
    """List the bundled models: Hugging Face id, aliases, architecture and parameter count.

    Example: planner models list --format markdown
    """
    from planner.analysis.config import parse_config
    from planner.analysis.params import count_params
    from planner.analysis.resolve import bundled_models, load_bundled

    rows = []
    for m in bundled_models():
        r = load_bundled(m)
        try:
            spec = parse_config(r.config, where=r.where, name=m.id, source="bundled")
            p = count_params(spec)
            rows.append({"id": m.id, "aliases": list(m.aliases), "model_type": spec.model_type,
                         "total_params": p.total, "active_params": p.active, "note": m.note})
        except Exception as exc:  # a bundled config we cannot size yet is listed, not hidden
            rows.append({"id": m.id, "aliases": list(m.aliases), "model_type": r.config.get("model_type"),
                         "total_params": None, "active_params": None, "note": f"cannot analyse: {exc}"})
    out = resolve_format(fmt, as_json)
    if out == OutputFormat.json:
        print_json({"schema_version": 1, "models": rows})
        return
    if out == OutputFormat.csv:
        print_csv(rows)
        return
    s = Section("Bundled models", ["id", "aliases", "model_type", "params", "active"], right=(3, 4))
    for r in rows:
        active = fmt_count(r["active_params"]) if r["active_params"] != r["total_params"] else ""
        s.add(r["id"], ", ".join(r["aliases"]), r["model_type"], fmt_count(r["total_params"]), active)
    emit([s], out)
