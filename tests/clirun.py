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


def verify_self_checks(tmp_path, config: dict, *, name: str = "tiny", batch: int = 1) -> dict:
    """``planner verify`` on the CPU on ``config`` (a tiny model, seeded random weights): its exact self-checks
    must pass (parameters, decode FLOPs and KV bytes, predicted == measured). Returns the JSON."""
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    r = run("verify", d, "--device", "cpu", "--context", "16", "--batch", str(batch), "--steps", "2", "--warmup", "1",
            "--hardware", "cpu", "--threads", "1", "--json")
    assert r.code == 0, r.err
    out = r.json
    for key in ("params", "flops", "kv_bytes"):
        assert out["checks"][key]["ok"] is True and out["checks"][key]["predicted"] == out["checks"][key]["measured"]
    return out


def check_whole_checkpoint_cli(path, total: int, kv_per_token: int) -> dict:
    """``analyze --json`` on a wrapper's config counts ``total`` parameters with nothing left uncounted (no
    "not counted" caveat, a "counted in the parameters" one) and ``kv_per_token`` KV bytes; ``trace`` and ``serve``
    run on it. Returns analyze's JSON."""
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    out = r.json
    assert out["params"]["total"] == total
    assert out["kv_cache"]["bytes_per_token"] == kv_per_token
    assert not any("not counted" in c for c in out["caveats"])
    assert any("counted in the parameters" in c for c in out["caveats"])
    assert run("trace", str(path), "--context", "2000", "--hardware", "h100-sxm").code == 0
    r = run("serve", str(path), "--hardware", "h100-sxm", "--input-len", "1024", "--output-len", "128",
            "--concurrency", "4")
    assert r.code == 0, r.err
    return out


def analyze_json(tmp_path, cfg: dict, name: str = "config.json", context: int = 8192) -> dict:
    """``planner analyze --json --context CONTEXT`` of ``cfg`` written to ``tmp_path / name``; it must succeed."""
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--json", "--context", str(context))
    assert r.code == 0, r.err
    return r.json
