"""Registers every command group on the app (one module per command group)."""

from __future__ import annotations

from .analyze_cmd import analyze
from .app import app
from .hardware_cmd import hardware_app
from .models_cmd import models_app

app.command("analyze")(analyze)
app.add_typer(models_app, name="models")
app.add_typer(hardware_app, name="hardware")
from .trace_cmd import trace  # noqa: E402

app.command("trace")(trace)
from .compare_cmd import compare  # noqa: E402

app.command("compare")(compare)
from .calibrate_cmd import calibrate  # noqa: E402
from .verify_cmd import verify  # noqa: E402

app.command("verify")(verify)
app.command("calibrate")(calibrate)
from .serve_cmd import serve  # noqa: E402

app.command("serve")(serve)
