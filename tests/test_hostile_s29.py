"""Red-team wave s29: option values, profile paths and environment that broke the one-``Error:``-line rule.

Each test pins a failure found by probing every command (``analyze``, ``trace``, ``compare``, ``serve``,
``plan``, ``hardware``, ``models``, ``calibrate``, ``verify``) with hostile values; each failed before its fix:

- a name too long for the file system (``--hardware``, ``--weights``, ``$PLANNER_CONFIG_DIR``) and a path under
  an unknown user's home (``~nosuchuser/...``) were ``internal error: OSError`` / ``RuntimeError`` lines;
- an empty ``--engine`` (serve, trace, plan), ``--device`` / ``--model`` (calibrate) or ``--device`` /
  ``--dtype`` / ``--hardware`` / ``--reference`` (verify) silently meant the default (calibrate then measured
  for a minute), where an empty ``--hardware`` elsewhere is an error;
- a 5,000-character ``--engine``, ``--arrival``, ``--sweep``, ``--device``, ``--dtype``, ``--reference`` or
  model name came back whole in a 5,000-character Error line;
- ``serve`` ran its step-by-step simulation for minutes (``--output-len 16777216`` on a model whose
  ``max_position_embeddings`` allows it: 16 M steps, gigabytes; a prompt in chunks of
  ``--max-num-batched-tokens 1``; 64 closed-loop clients of 1 M-token prompts: 62,464 chunks priced apart), ``plan`` for minutes on long prompts (``--input-len 1048576``: 38,400
  prefill steps), ``compare --context 1073741824`` for minutes (131,072 prefill chunks priced one by one);
- ``plan --engine ideal`` (max_num_seqs 1,048,576) sized its slot arrays by that limit: 7.8 GB and 42 s;
- ``COLUMNS=1`` folded every table cell to nothing;
- a profile giving ``memory:`` twice loaded the last silently; one whose memory was below the default
  ``runtime_reserve`` was told "runtime_reserve (None) is not smaller than memory".

The cases whose failure mode is a hang run the CLI in a subprocess with a timeout (``tests.test_hostile.cli``).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.clirun import run
from tests.test_hostile import cli

SMALL = "qwen2.5-0.5b"
LONG = "x" * 5000
TINY = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "intermediate_size": 128, "vocab_size": 256, "torch_dtype": "bfloat16"}


def err(*args: str, fragments=(), env=None) -> str:
    """A clean failure: exit 1 or 2, one bounded ``Error:`` line, nothing on stdout, no internal error."""
    r = run(*args, env=env)
    assert r.code in (1, 2), (args[:3], r.code, r.out[:300], r.err[:500])
    line = r.assert_error(*fragments, code=r.code)
    assert "internal error" not in line, line
    assert len(line) < 700, len(line)
    return line


@pytest.fixture
def long_context_model(tmp_path):
    """A tiny decoder (128 B of KV per token) whose max_position_embeddings (2^30) lets --output-len reach
    the CLI's limit of 2^24: one sequence of 16 M tokens fits one H100's KV pool."""
    path = tmp_path / "long.json"
    path.write_text(json.dumps(dict(TINY, max_position_embeddings=1 << 30)))
    return path


# ---- names the file system cannot hold, homes that do not exist --------------------------------------


@pytest.mark.parametrize("name", [LONG, "é" * 2000])
def test_a_hardware_name_too_long_for_the_file_system_is_an_unknown_profile(name):
    for args in (["analyze", SMALL, "--hardware", name], ["serve", SMALL, "-H", name], ["hardware", "show", name],
                 ["plan", SMALL, "--gpu", name]):
        err(*args, fragments=["unknown hardware profile"])


def test_a_profile_path_too_long_says_so_not_permissions(tmp_path):
    line = err("analyze", SMALL, "--hardware", str(tmp_path / (LONG + ".yaml")), fragments=["File name too long"])
    assert "permissions" not in line and "too long for the file system" in line


def test_a_profile_path_under_a_home_that_does_not_exist():
    err("analyze", SMALL, "--hardware", "~nosuchuser-planner-s29/gpu.yaml", fragments=["not found"])


@pytest.mark.parametrize("folder", ["~nosuchuser-planner-s29", "/tmp/" + LONG])
def test_a_config_dir_that_cannot_exist_is_an_empty_one(folder):
    for args in (["analyze", SMALL, "--json"], ["hardware", "list", "--json"], ["hardware", "show", "h100"]):
        r = run(*args, env={"PLANNER_CONFIG_DIR": folder})
        assert r.code == 0, (args, r.err)


@pytest.mark.parametrize("weights", [LONG, "~nosuchuser-planner-s29/model", "", "/dev/null"])
def test_verify_weights_that_are_no_folder_are_refused_before_torch(weights):
    err("verify", SMALL, "--device", "cpu", "--weights", weights, fragments=["--weights", "no such folder"])


PROFILE = "name: my-gpu\nmemory: 24 GiB\nmemory_bandwidth: 1 TB/s\npeak_flops:\n  bf16: 100 TFLOP/s\n"


def test_a_profile_key_given_twice_is_an_error(tmp_path):
    """PyYAML keeps the last of two equal keys: a profile with a second 'memory:' line loaded silently."""
    path = tmp_path / "gpu.yaml"
    path.write_text(PROFILE + "memory: 1 GiB\n")
    err("hardware", "show", str(path), fragments=["gpu.yaml", "line 6", "'memory' is given twice"])
    path.write_text(PROFILE.replace("memory: 24 GiB", "memory: &m 24 GiB\nnotes: [*m]") + "<<: {vendor: Acme}\n")
    assert run("hardware", "show", str(path), "--json").json["profile"]["vendor"] == "Acme"  # merges still load


def test_memory_below_the_default_reserve_names_the_default(tmp_path):
    path = tmp_path / "gpu.yaml"
    path.write_text(PROFILE.replace("24 GiB", "1 GiB"))
    line = err("hardware", "show", str(path), fragments=["runtime_reserve", "not given: the default 2 GiB", "'1 GiB'"])
    assert "(None)" not in line


# ---- an empty value is not the default ------------------------------------------------------------


@pytest.mark.parametrize("args", [["serve", SMALL], ["trace", SMALL], ["plan", SMALL, "--requests", "20"]])
def test_an_empty_engine_is_an_error(args):
    err(*args, "--engine", "", fragments=["unknown --engine", "vllm"])


@pytest.fixture
def no_measuring(monkeypatch):
    """calibrate's measurement and verify's decode loop replaced by a failure: an option that is wrongly
    taken as the default fails fast, with the word 'measured', instead of running for a minute."""
    pytest.importorskip("torch", reason="verify and calibrate need the torch runtime")
    import planner.runtime.calibrate as rc
    import planner.runtime.verify as rv

    def measured(*a, **k):
        raise AssertionError("measured")

    monkeypatch.setattr(rc, "calibrate", measured)
    monkeypatch.setattr(rv, "run_verify", measured)


@pytest.mark.parametrize("args,fragment", [
    (["calibrate", "--no-save", "--device", ""], "--device"),
    (["calibrate", "--no-save", "--model", ""], "--model is empty"),
    (["calibrate", "--no-save", "--model", " "], "--model is empty"),
    (["verify", SMALL, "--device", ""], "--device is empty"),
    (["verify", SMALL, "--device", "cpu", "--dtype", ""], "--dtype is empty"),
    (["verify", SMALL, "--device", "cpu", "--hardware", ""], "--hardware is empty"),
    (["verify", SMALL, "--device", "cpu", "--reference", ""], "--reference is empty"),
])
def test_empty_calibrate_and_verify_options_are_errors(no_measuring, args, fragment):
    line = err(*args, fragments=[fragment])
    assert "measured" not in line


def test_calibrate_checks_its_options_before_loading_torch(monkeypatch):
    """A bad --device or --dtype is named even where torch is missing (it used to be checked after it loaded)."""
    import planner.runtime as rt
    from planner.analysis.errors import RuntimeUnavailableError

    def no_torch():
        raise RuntimeUnavailableError("torch is not installed")

    monkeypatch.setattr(rt, "require_torch", no_torch)
    err("calibrate", "--no-save", "--device", "tpu", fragments=["--device", "tpu"])
    err("calibrate", "--no-save", "--dtype", "int8", fragments=["--dtype", "int8"])


# ---- echoed values stay bounded -------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["serve", SMALL, "--engine", LONG], ["trace", SMALL, "--engine", LONG], ["plan", SMALL, "--engine", LONG],
    ["serve", SMALL, "--arrival", LONG], ["trace", SMALL, "--sweep", LONG], ["trace", SMALL, "--sweep", LONG + "=1"],
    ["analyze", LONG + "/" + LONG], ["calibrate", "--no-save", "--device", LONG], ["calibrate", "--no-save", "--dtype", LONG],
    ["verify", SMALL, "--device", "cpu", "--reference", LONG], ["analyze", SMALL, "--context", LONG],
])
def test_a_long_option_value_comes_back_shortened(args):
    line = err(*args)
    assert "xxxxxxxxxx" in line  # the value is still shown, cut


def test_the_error_line_bounds_any_message():
    """The last guard (``cli.app._one_line``): a word longer than 240 characters keeps its head and tail; a
    line stops at 8,000 characters; shorter messages are unchanged."""
    from planner.cli.app import _one_line

    assert _one_line("unknown  model\n'abc'") == "unknown model 'abc'"
    path = "/data/" + "d" * 10_000 + "/config.json"
    out = _one_line(f"{path}: not valid JSON")
    assert len(out) < 300 and out.startswith("/data/ddd") and out.endswith("/config.json: not valid JSON")
    many = _one_line("word " * 100_000)
    assert len(many) < 8100 and many.endswith("more characters)")


# ---- simulations whose cost grows with an option: refused before they run -------------------------


@pytest.mark.parametrize("args,fragments", [
    (["--output-len", str(1 << 24)], ["16,777,215 engine steps", "at most 4,000,000", "lower --output-len"]),
    (["--output-len", "1000000", "--arrival", "closed-loop", "--engine", "ideal"],
     ["8 request(s)", "7,999,992 engine steps", "--requests"]),
    (["--input-len", "16000000", "--output-len", "2", "--max-num-batched-tokens", "1", "--engine", "sglang"],
     ["16,000,000 engine steps", "raise --max-num-batched-tokens"]),  # the step count binds first (mend s30)
    (["--input-len", "16000000", "--output-len", "2", "--max-num-batched-tokens", "100"],
     ["159,999 prefill steps", "prices at most 16,384"]),
    # 64 closed-loop clients, 8 requests each, of 1,000,000-token prompts in 8,192-token chunks: 512 × 122
    (["--input-len", "1000000", "--output-len", "100", "--concurrency", "64", "--arrival", "closed-loop"],
     ["512 prompt(s)", "62,464 prefill steps", "--requests"]),
])
def test_serve_refuses_a_simulation_past_its_step_budget(tmp_path, long_context_model, args, fragments):
    t0 = time.monotonic()
    r = cli("serve", str(long_context_model), "--max-model-len", str((1 << 24) + 1024), *args, "--json",
            home=tmp_path, timeout=60)
    r.assert_error(*fragments)
    assert time.monotonic() - t0 < 30


def test_serve_still_simulates_a_long_output_within_the_budget(tmp_path, long_context_model):
    r = cli("serve", str(long_context_model), "--max-model-len", "300000", "--output-len", "200000", "--json",
            home=tmp_path, timeout=60)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["settings"]["output_len"] == 200_000 and out["latency"]["tpot_s"] > 0


def test_plan_refuses_more_prefill_steps_than_it_simulates(tmp_path, long_context_model):
    # 300 requests (the default) of 1,048,576 tokens in vLLM's 8,192-token chunks on an H100: 38,400 steps
    r = cli("plan", str(long_context_model), "--input-len", str(1 << 20), "--output-len", "10", "--json",
            home=tmp_path, timeout=60)
    line = r.assert_error("--requests 300", "128 steps of 8,192", "38,400 simulated steps", "156 or fewer")
    assert len(line) < 400


def test_a_huge_max_num_seqs_does_not_size_the_simulation():
    """The simulation's slot arrays are sized by the requests, not by max_num_seqs (the ideal engine's is
    1,048,576: three configurations took 10 arrays of 3 × 1 M int64); the results are the same."""
    import tracemalloc

    from planner.hardware.simulate import Scheduler, StepCost, simulate

    costs = [StepCost((1, 8192), (0.01, 0.2), 1e-9, 1e-12)] * 3
    arrivals, inp, out = [0.1 * k for k in range(10)], [500] * 10, [50] * 10
    small = simulate(costs, [Scheduler(10, 8192, 100_000)] * 3, arrivals, inp, out)
    tracemalloc.start()
    try:
        big = simulate(costs, [Scheduler(1 << 20, 8192, 100_000)] * 3, arrivals, inp, out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak
    for what in ("ttft", "e2e", "tpot"):
        assert (getattr(small, what + "_s") == getattr(big, what + "_s")).all(), what


def test_compare_at_a_context_of_a_billion_tokens_leaves_the_ttft_out(tmp_path):
    t0 = time.monotonic()
    r = cli("compare", SMALL, "--context", str(1 << 30), "--json", home=tmp_path, timeout=60)
    assert r.code == 0, r.err
    assert time.monotonic() - t0 < 30
    out = json.loads(r.out)
    text = json.dumps(out)
    assert "time to first token not priced" in text and "more than 4,096 prefill steps of 8,192 tokens" in text


# ---- the terminal ---------------------------------------------------------------------------------


def test_a_one_column_terminal_still_gets_whole_cells():
    r = run("analyze", SMALL, env={"COLUMNS": "1"})
    assert r.code == 0, r.err
    assert "Qwen/Qwen2.5-0.5B" in r.out  # the title on one line, not one character per line


# ---- control characters from a config, profile or server: shown escaped, never sent to the terminal ----

# ESC (CSI colour, OSC window title, clear screen), BEL, NUL, DEL, a C1 CSI and a bidi override
_CONTROL = "\x1b[31m\x1b]0;t\x07\x1b[2J\x00\x7f\x9b1m\u202e"
_RAW = {ch for ch in _CONTROL if not ch.isprintable()}


def _raw_controls(text: str) -> set:
    return {ch for ch in text if ch in _RAW}


@pytest.fixture
def hostile_model(tmp_path):
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps(dict(TINY, model_type="llama" + _CONTROL, architectures=["X" + _CONTROL])))
    return path


@pytest.fixture
def hostile_profile(tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "profiles" / "hardware" / "h100-sxm.yaml").read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith("name:"):
            line = "name: ctl-h100"
        elif line.startswith("display_name:"):
            line = 'display_name: "H100 \\e[31m\\a\\x9b1m\\u202e"'
        lines.append(line)
    path = tmp_path / "ctl.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("command", [
    ["analyze"], ["analyze", "--format", "markdown"], ["analyze", "--format", "csv"], ["trace"],
    ["trace", "--format", "csv"], ["compare", "qwen2.5-0.5b"], ["serve"], ["serve", "--format", "markdown"],
])
def test_control_characters_in_a_config_are_shown_escaped(hostile_model, command):
    """A model_type carrying a colour code, a window-title OSC, a screen clear, NUL, DEL, a C1 CSI and a
    bidi override came back raw in the warning, the architecture row and the caveats (the terminal obeyed
    them); now each is written as ``\\x1b`` / ``\\u202e``."""
    r = run(command[0], str(hostile_model), *command[1:], "--hardware", "h100-sxm")
    assert r.code == 0, r.err
    assert _raw_controls(r.out) == set() and _raw_controls(r.err) == set()
    shown = r.out + r.err
    assert "\\x1b[31m" in shown and "\\x00" in shown and "\\u202e" in shown


def test_control_characters_in_an_error_line_are_escaped(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(dict(TINY, hidden_size="64" + _CONTROL)))
    line = err("analyze", str(path))
    assert _raw_controls(line) == set() and "\\x1b[31m" in line and "\\u202e" in line
    from planner.cli.app import _one_line

    assert _one_line("model 'a\x1b[0mb' not found") == "model 'a\\x1b[0mb' not found"
    assert _one_line("tab\tand newline\nare spaces") == "tab and newline are spaces"  # whitespace still folds


def test_control_characters_in_a_profile_are_shown_escaped(hostile_profile):
    for args in (["hardware", "show", str(hostile_profile)], ["hardware", "show", str(hostile_profile), "--format", "markdown"],
                 ["serve", SMALL, "--hardware", str(hostile_profile)]):
        r = run(*args)
        assert r.code == 0, (args, r.err)
        assert _raw_controls(r.out) == set() and _raw_controls(r.err) == set(), args
    assert "H100 \\x1b[31m\\x07\\x9b1m\\u202e" in run("hardware", "show", str(hostile_profile)).out
