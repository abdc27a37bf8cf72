"""Run the planner CLI in-process and capture stdout, stderr and the exit code separately."""

from __future__ import annotations

import json
from dataclasses import dataclass

from typer.testing import CliRunner

from planner.cli.app import app


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)

    def assert_error(self, *fragments: str, code: int = 1) -> str:
        """Exactly one ``Error:`` line on stderr, nothing on stdout, no traceback."""
        assert self.code == code, (self.code, self.out, self.err)
        assert self.out == "", self.out
        lines = [line for line in self.err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("Error: ")]
        assert len(errors) == 1, self.err
        assert "Traceback" not in self.err
        for f in fragments:
            assert f in errors[0], (f, errors[0])
        return errors[0]


def run(*args: str, env: dict | None = None) -> Run:
    runner = CliRunner()
    r = runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
    return Run(r.exit_code, r.stdout, r.stderr)
