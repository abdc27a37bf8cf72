"""Token-count options take the suffixes ``trace --sweep`` reads (``2k`` = 2048: k = 1024, M = 1024k):
--context/-c (analyze, compare, trace, verify), --input-len/-i and --output-len/-o (serve, plan),
--max-model-len and --max-num-batched-tokens (serve). A plain integer parses as before (same bounds, same
messages); a bad value is one ``Error:`` line and exit 2 (not "internal error: BadParameter"); --help shows
the metavar TOKENS (not ``<function ...>``) and imports no torch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.clirun import run
from tests.conftest import ROOT

try:
    from typer._click.types import IntRange
except ImportError:  # pragma: no cover  (an older typer built on click itself)
    from click.types import IntRange

from planner.cli.options import TokenCount, tokens
from planner.cli.trace_cmd import parse_count

MODEL = "llama-3.1-8b"
CTX_MAX = 1 << 30

# (the command line before the option, the option, its bounds today)
OPTIONS = [
    (["analyze", MODEL], "--context", 0, CTX_MAX),
    (["analyze", MODEL], "-c", 0, CTX_MAX),
    (["trace", MODEL], "--context", 0, CTX_MAX),
    (["compare", MODEL, "qwen2.5-0.5b"], "--context", 0, CTX_MAX),
    (["verify", MODEL], "--context", 0, CTX_MAX),
    (["serve", MODEL], "--input-len", 1, 1 << 24),
    (["serve", MODEL], "-i", 1, 1 << 24),
    (["serve", MODEL], "--output-len", 1, 1 << 24),
    (["serve", MODEL], "-o", 1, 1 << 24),
    (["serve", MODEL], "--max-model-len", 1, CTX_MAX),
    (["serve", MODEL], "--max-num-batched-tokens", 1, 1 << 24),
    (["plan", MODEL], "--input-len", 1, 1 << 20),
    (["plan", MODEL], "-i", 1, 1 << 20),
    (["plan", MODEL], "--output-len", 1, 1 << 20),
    (["plan", MODEL], "-o", 1, 1 << 20),
    (["analyze", MODEL], "--sliding-window", 1, CTX_MAX),
    (["serve", MODEL], "--cuda-graph-max-tokens", 0, 1 << 24),
]
OPTION_IDS = [f"{a[0]}{o}" for a, o, _, _ in OPTIONS]


# ---- the rule: the one --sweep reads ----------------------------------------------------------------

@pytest.mark.parametrize("text, tokens_", [("2k", 2048), ("32k", 32768), ("1.5k", 1536), ("1M", 1 << 20),
                                           ("8K", 8192), (" 4k ", 4096), ("2.0", 2), ("0k", 0), ("0.5m", 1 << 19)])
def test_a_suffix_reads_as_sweep_reads_it(text, tokens_):
    """k is 1024 tokens (not 1000), as --sweep has it: the option and the sweep give the same count."""
    assert TokenCount(min=0, max=CTX_MAX).convert(text, None, None) == tokens_
    assert parse_count(text, "context") == tokens_


@pytest.mark.parametrize("text", ["0", "1", "8192", str(CTX_MAX), "+5", " 17 ", "1_000", "0064"])
def test_a_plain_integer_parses_as_before(text):
    """What IntRange (the type these options had) makes of a plain integer, TokenCount makes too."""
    old = IntRange(min=0, max=CTX_MAX).convert(text, None, None)
    new = tokens(0, CTX_MAX).convert(text, None, None)
    assert new == old and type(new) is int


@pytest.mark.parametrize("args, option, low, high", OPTIONS, ids=OPTION_IDS)
def test_plain_integers_out_of_range_keep_todays_message(args, option, low, high):
    long = {"-c": "--context", "-i": "--input-len", "-o": "--output-len"}.get(option, option)
    short = {"--context": "-c", "--input-len": "-i", "--output-len": "-o"}.get(long)
    name = f"'{long}' / '{short}'" if short else f"'{long}'"
    for bad in (low - 1, high + 1):
        line = run(*args, option, str(bad)).assert_error(code=2)
        assert line == (f"Error: Invalid value for {name}: {bad} is not in the range {low}<=x<={high}. "
                        f"(see 'planner {args[0]} --help')"), line


# ---- the counts reach the commands (and their JSON echoes the integer) ------------------------------

def test_context_suffix_in_analyze_trace_compare_json():
    a = run("analyze", MODEL, "--context", "2k", "--json")
    assert a.code == 0, a.err
    assert a.json["kv_cache"]["context"] == 2048 and '"context": 2048' in a.out
    assert a.json == run("analyze", MODEL, "-c", "2048", "--json").json
    t = run("trace", MODEL, "-c", "1.5k", "--json")
    assert t.code == 0, t.err
    assert t.json["context"] == 1536
    c = run("compare", MODEL, "qwen2.5-0.5b", "--context", "32k", "--json")
    assert c.code == 0, c.err
    assert c.json["settings"]["context"] == 32768


def test_serve_token_options_json():
    r = run("serve", MODEL, "-i", "1k", "-o", "0.5k", "--max-model-len", "4k", "--max-num-batched-tokens", "2k",
            "--json")
    assert r.code == 0, r.err
    s = r.json["settings"]
    assert (s["input_len"], s["output_len"], s["max_model_len"], s["max_num_batched_tokens"]) == (1024, 512, 4096, 2048)
    assert r.json["memory"]["max_model_len"] == 4096
    plain = run("serve", MODEL, "-i", "1024", "-o", "512", "--max-model-len", "4096", "--max-num-batched-tokens",
                "2048", "--json")
    assert plain.json == r.json


def test_plan_token_options_json():
    r = run("plan", MODEL, "--input-len", "2k", "--output-len", "0.25k", "--requests", "20", "--max-gpus", "2", "--json")
    assert r.code == 0, r.err
    w = r.json["workload"]
    assert (w["input_len"], w["output_len"]) == (2048, 256)


def test_verify_context_suffix(tmp_path):
    from tests.test_runtime import TINY

    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY["llama"]))
    r = run("verify", d, "--device", "cpu", "--context", "0.0625k", "--steps", "2", "--warmup", "1",
            "--hardware", "cpu", "--threads", "1", "--json")
    assert r.code == 0, r.err
    assert r.json["options"]["context"] == 64


def test_the_sweep_is_unchanged():
    r = run("trace", MODEL, "-c", "2k", "--sweep", "context=2k,8k", "--json")
    assert r.code == 0, r.err
    assert r.json["context"] == 2048 and [p["context"] for p in r.json["sweep"]] == [2048, 8192]
    run("trace", MODEL, "--sweep", "context=8x").assert_error("--sweep context: '8x' is not a count", code=1)


# ---- bad values: one Error line, exit 2, no traceback -----------------------------------------------

BAD = ["8x", "-1k", "1e999", "", "0.1k", "k", "2kk", "1.5", "nan", "inf", "9" * 400 + "k", "1" + "0" * 5000]


@pytest.mark.parametrize("args, option, low, high", OPTIONS, ids=OPTION_IDS)
def test_bad_values_are_one_usage_error(args, option, low, high):
    above = [str(high + 1), f"{high // 1024 + 1}k", f"{(high >> 20) + 1}M"]
    below = ["0k", "0.0M"] if low == 1 else []
    for bad in BAD + above + below:
        r = run(*args, option, bad)
        line = r.assert_error(code=2)
        assert "internal error" not in r.err and "BadParameter" not in r.err, (bad, r.err)
        assert line.startswith("Error: Invalid value for '") and line.endswith(f"(see 'planner {args[0]} --help')")
        assert len(line) < 400, line  # (the 5,000-digit value is cut, not echoed whole)


@pytest.mark.parametrize("bad", ["8x", "-1k", "1e999", "", "2000000k"])
def test_bad_value_in_a_real_process(bad):
    """The installed entry point as a user runs it: stderr is exactly one Error line, stdout empty, exit 2."""
    out = subprocess.run([sys.executable, "-m", "planner", "analyze", MODEL, "--context", bad], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: Invalid value for '--context' / '-c': "), out.stderr


def test_messages_say_what_is_wrong():
    line = run("analyze", MODEL, "--context", "8x").assert_error(code=2)
    assert "'8x' is not a token count" in line and "2k" in line
    line = run("plan", MODEL, "-i", "2M").assert_error(code=2)
    assert "'2M' (2,097,152 tokens) is not in the range 1<=x<=1048576" in line
    line = run("analyze", MODEL, "-c", "0.1k").assert_error(code=2)
    assert "'0.1k' is not a whole number of tokens" in line


# ---- --help --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, option, low, high", OPTIONS, ids=OPTION_IDS)
def test_help_shows_tokens_metavar_and_range(args, option, low, high):
    r = run(args[0], "--help", env={"COLUMNS": "200"})
    assert r.code == 0, r.err
    assert "<function" not in r.out and "<token count>" not in r.out
    long = {"-c": "--context", "-i": "--input-len", "-o": "--output-len"}.get(option, option)
    m = re.search(rf"^ +((?:-\w, )?{long}) +(\S+)", r.out.split("Options:", 1)[1], re.M)  # the option's own line: '-c, --context TOKENS'
    assert m and m.group(2) == "TOKENS", m and m.group(0)
    if long != option:
        assert m.group(1) == f"{option}, {long}", m.group(0)
    text = " ".join(r.out.split())
    assert f"{low}<=x<={high}" in text
    assert "k = 1024" in text


def test_help_and_suffixed_runs_import_no_torch():
    code = (
        "import sys, io, contextlib\n"
        "from planner.cli.app import app\n"
        "for args in (['--help'], ['analyze', '--help'], ['trace', '--help'], ['compare', '--help'],\n"
        "             ['serve', '--help'], ['plan', '--help'], ['verify', '--help'],\n"
        "             ['analyze', 'llama-3.1-8b', '-c', '2k', '--json'],\n"
        "             ['trace', 'llama-3.1-8b', '-c', '2k', '--sweep', 'context=2k,8k', '--json'],\n"
        "             ['serve', 'llama-3.1-8b', '-i', '1k', '-o', '0.5k', '--max-model-len', '4k', '--json'],\n"
        "             ['analyze', 'llama-3.1-8b', '-c', '8x']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        code = app(args=args, standalone_mode=False)\n"
        "    assert code == (2 if '8x' in args else 0), (args, code)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
