"""Start-up: commands are registered lazily (cli/commands.py); ``--help`` lists them all without
importing any, and a command imports only its own module. (Timings are in bench/startup.py.)"""

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli.commands import COMMANDS, load

ROOT = Path(__file__).resolve().parent.parent
COMMAND_MODULES = sorted({f"planner.cli.{c.module}" for c in COMMANDS})


@pytest.mark.parametrize("entry", COMMANDS, ids=[c.name for c in COMMANDS])
def test_help_line_is_the_commands_own_first_paragraph(entry):
    cmd = load(entry)
    assert cmd.name == entry.name
    assert entry.help == inspect.cleandoc(cmd.help or "").split("\n\n")[0]


def _modules_after(args: list[str]) -> tuple[str, set[str]]:
    code = (
        "import sys, io, contextlib\n"
        "from planner.cli.app import app\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    code = app(args={args!r}, standalone_mode=False)\n"
        "assert code == 0, code\n"
        "sys.stderr.write(buf.getvalue())\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('planner.cli.')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stderr, set(out.stdout.split())


def test_help_lists_every_command_without_importing_one():
    text, loaded = _modules_after(["--help"])
    assert not loaded & set(COMMAND_MODULES), loaded
    for c in COMMANDS:
        assert f"  {c.name}  " in text


def test_help_lists_the_commands_as_if_they_were_imported():
    from typer.main import get_command

    from planner.cli.app import app

    def root_help(imported: bool) -> str:
        group = get_command(app)
        if imported:
            for c in COMMANDS:
                group.commands[c.name] = load(c)
        return group.get_help(group.context_class(group, info_name="planner"))

    assert root_help(imported=False) == root_help(imported=True)


@pytest.mark.parametrize("args, own", [(["analyze", "llama-3.1-8b", "--json"], {"planner.cli.analyze_cmd"}),
                                       (["hardware", "list", "--json"], {"planner.cli.hardware_cmd"})])
def test_a_command_imports_only_its_own_module(args, own):
    _, loaded = _modules_after(args)
    assert loaded & set(COMMAND_MODULES) == own
