"""Red-team wave s31: special files, option extremes, sweep grammar and the process's own streams.

Each test pins a failure found by driving every command with hostile files (FIFOs, devices, symlink loops,
2 GB sparse files, JSON nested 100k deep, UTF-16, duplicate keys, YAML alias bombs and tags), option values
at their extremes (0, negatives, 2^63, 1e308, nan, '', full-width digits) and environments (COLUMNS, HOME,
HF_HOME, a closed or full stdout and stderr); each failed before its fix:

- ``planner ... >&-`` (stdout closed): ``--json`` and ``--format csv`` were ``internal error: AttributeError``, and
  a table went nowhere with exit 0;
- ``planner ... > /dev/full``: ``internal error: OSError: [Errno 28] No space left on device``;
- ``2> /dev/full`` or ``2>&-`` on a run that warns: exit 1 and no result at all (the warning's failed write
  aborted the command);
- ``trace --sweep batch=,`` swept nothing: exit 0, an empty sweep, and ``--format csv`` printed no line;
  ``--sweep ''`` swept the default point;
- a 64 × 64 ``trace --sweep ... --plot`` labelled all 4,096 points (over 20 s, labels past the axes);
- ``compare --batch 16777216 --context 1073741824 --plot``: ``internal error: TypeError`` (byte counts past 2^63
  as numpy axis limits);
- ``plan --rate 1e-308``: three numpy warnings, then "Error: arrival times must be sorted";
- a config.json integer field given as ``1e300`` was echoed as the 301-digit integer it equals;
- ``torch_dtype: ["bfloat16"]`` was taken as absent, and an unknown ``torch_dtype`` was labelled
  "(torch_dtype absent)" in analyze's table;
- ``verify --dtype 'bf16 '`` failed after loading torch and the model with "--dtype bf16 is not a dtype the
  torch runtime computes in (choose one of fp32, bf16, fp16)", and ``--dtype bfloat16`` (accepted by every
  other command) was refused;
- ``verify`` without ``--hardware`` hung for ever when ``<config>/last-calibration`` was a FIFO, and ``calibrate``
  wrote its record through a fixed ``.last-calibration.tmp`` (a FIFO there hung it, a link there had its target
  overwritten).

Stream cases run the CLI in a subprocess (``cli``) whose stdout or stderr is closed or is ``/dev/full``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.clirun import Run, run
from tests.conftest import ROOT
from tests.test_hostile_s29 import TINY, err

SMALL = "qwen2.5-0.5b"


def cli(*args: str, home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close: int | None = None,
        timeout: float = 60) -> Run:
    """The CLI in a subprocess, offline; ``close`` (1 or 2) closes that descriptor before Python starts,
    as ``>&-`` / ``2>&-`` do."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PLANNER_"))}
    e.update(HF_HOME=str(home / "hf"), HF_HUB_OFFLINE="1", PLANNER_CONFIG_DIR=str(home / "planner"),
             PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
    p = subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, env=e, stdout=stdout, stderr=stderr,
                       preexec_fn=(lambda: os.close(close)) if close is not None else None, timeout=timeout)
    text = (lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else "")
    return Run(p.returncode, text(p.stdout), text(p.stderr))


posix_only = pytest.mark.skipif(os.name != "posix", reason="closes descriptors before exec")
dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this platform")


# ---- the process's own streams --------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("args", [["analyze", SMALL, "--json"], ["trace", SMALL, "--format", "csv"],
                                  ["analyze", SMALL], ["hardware", "list"], ["--version"]])
def test_a_closed_stdout_is_one_error_not_a_lost_result(tmp_path, args):
    r = cli(*args, home=tmp_path, close=1)
    line = r.assert_error("standard output is closed")
    assert "internal error" not in line


@posix_only
@dev_full
@pytest.mark.parametrize("args", [["analyze", SMALL, "--json"], ["analyze", SMALL], ["models", "list", "--format", "csv"],
                                  ["hardware", "show", "cpu", "--json"], ["analyze", "--help"]])
def test_a_full_stdout_is_one_error_naming_the_full_device(tmp_path, args):
    with open("/dev/full", "wb") as full:
        r = cli(*args, home=tmp_path, stdout=full)
    line = r.assert_error("cannot write the result to standard output", "No space left on device")
    assert "internal error" not in line and "Exception ignored" not in r.err


@pytest.fixture
def warns(tmp_path):
    """A config that makes analyze warn (a context beyond its max_position_embeddings)."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(dict(TINY, max_position_embeddings=64)))
    return path


@posix_only
def test_a_closed_stderr_costs_a_warning_not_the_result(tmp_path, warns):
    assert "Warning: " in cli("analyze", str(warns), "--json", home=tmp_path).err  # (the run does warn)
    r = cli("analyze", str(warns), "--json", home=tmp_path, close=2)
    assert r.code == 0
    assert r.json["params"]["total"] > 0


@posix_only
@dev_full
def test_a_full_stderr_costs_a_warning_not_the_result(tmp_path, warns):
    with open("/dev/full", "wb") as full:
        r = cli("analyze", str(warns), "--json", home=tmp_path, stderr=full)
    assert r.code == 0
    assert r.json["params"]["total"] > 0
    with open("/dev/full", "wb") as full:  # an error that cannot be shown still sets the exit code
        assert cli("analyze", "no-such-model-s31", home=tmp_path, stderr=full).code == 1


@posix_only
def test_a_reader_that_stops_early_gets_no_error_text(tmp_path):
    """``| head -c1``: the broken pipe ends the run quietly (no Error line, no 'Exception ignored')."""
    p = subprocess.Popen([sys.executable, "-m", "planner", "trace", SMALL, "--all-layers"], cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", COLUMNS="200"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.read(1)
    p.stdout.close()  # the reader goes away after one byte
    err_text = p.stderr.read().decode()
    assert p.wait(timeout=60) in (0, 1)
    assert "Exception ignored" not in err_text and "Traceback" not in err_text and "Error" not in err_text


# ---- --sweep: a list with no values ------------------------------------------------------------------


@pytest.mark.parametrize("sweep,fragment", [("batch=,", "no batch values"), ("context=,,,", "no context values"),
                                            ("", "empty"), ("  ", "empty")])
def test_a_sweep_without_values_is_an_error(sweep, fragment):
    for fmt in ("csv", "json", "table"):
        err("trace", SMALL, "--sweep", sweep, "--format", fmt, fragments=["--sweep", fragment])


def test_a_sweep_with_an_empty_item_between_values_still_runs():
    r = run("trace", SMALL, "--sweep", "batch=1,,8", "--json")
    assert r.code == 0, r.err
    assert [p["batch"] for p in r.json["sweep"]] == [1, 8]


# ---- --plot of a large sweep: bounded labels ----------------------------------------------------------


def test_a_large_sweep_labels_only_its_grid_corners():
    from planner.cli.plots import SWEEP_LABELLED_POINTS, _sweep_labels

    rows = [{"batch": b, "context": c} for c in range(1024, 65 * 1024, 1024) for b in range(1, 65)]
    xy = [(float(r["batch"]) * (1 + r["context"] / 1e6), 1e12 * r["batch"] * (1 + r["context"] / 1e6)) for r in rows]
    labels = _sweep_labels(xy, rows)
    assert len(rows) > SWEEP_LABELLED_POINTS
    assert sorted(t for _, _, t, _ in labels) == sorted(["b=1, 1k", "b=64, 1k", "b=1, 64k", "b=64, 64k"])


def test_points_sharing_a_spot_list_a_few_and_count_the_rest():
    from planner.cli.plots import _sweep_labels

    rows = [{"batch": b, "context": 2048} for b in range(1, 21)]
    (_, _, text, _), = _sweep_labels([(1.0, 1e12)] * 20, rows)
    assert text == "b=1, 2, 3, +17 more, 2k"


def test_a_small_sweep_still_labels_every_point(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    r = run("trace", SMALL, "--sweep", "batch=1,64,4096", "--sweep", "context=1k,1M", "--plot", tmp_path / "s.png",
            "--json")
    assert r.code == 0, r.err
    from planner.cli.plots import _sweep_labels

    sw = r.json["sweep"]
    xy = [(s["flops"] / s["bytes"], s["flops"] / s["time_s"]) for s in sw]
    listed = " ".join(t for _, _, t, _ in _sweep_labels(xy, sw))
    for s in sw:  # each of the six points is named in some label
        assert f"{s['batch']}" in listed


def test_a_64_by_64_sweep_plot_draws_few_labels(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from planner.cli.plots import plot_roofline

    r = run("trace", SMALL, "--sweep", "batch=" + ",".join(str(b) for b in range(1, 65)),
            "--sweep", "context=" + ",".join(f"{k}k" for k in range(1, 9)), "--json")
    assert r.code == 0, r.err
    d = r.json
    fig = plot_roofline(d, d["hardware"], tmp_path / "big.png", sweep=d["sweep"])
    red = [t for t in fig.axes[0].texts if t.get_color() == "crimson"]
    assert len(d["sweep"]) == 512 and 1 <= len(red) <= 4


def test_a_memory_plot_past_2_to_the_63_bytes_is_drawn(tmp_path):
    """compare's memory plot at --batch 2^24 and --context 2^30: the exact byte counts pass 2^63, which numpy
    could not take as an axis limit (internal error: TypeError)."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    out = tmp_path / "m.png"
    r = run("compare", SMALL, "llama-3.1-70b", "--batch", str(1 << 24), "--context", str(1 << 30), "--plot", out,
            "--json")
    assert r.code == 0, r.err
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert all(m["max_batch"] == 0 for m in r.json["models"])


# ---- plan --rate at its slow end ---------------------------------------------------------------------


@pytest.mark.parametrize("rate", ["1e-308", "5e-324", "1e-7"])
def test_a_rate_too_slow_to_simulate_is_one_error(rate):
    line = err("plan", SMALL, "--rate", rate, fragments=["--rate", "at least 1e-06"])
    assert "sorted" not in line


def test_arrivals_that_overflow_are_refused_by_the_simulator():
    pytest.importorskip("numpy")
    from planner.analysis.errors import OptionError
    from planner.hardware.simulate import poisson_arrivals

    with pytest.raises(OptionError, match="overflow"):
        poisson_arrivals(1e-308, 10)
    assert poisson_arrivals(1e-6, 10).max() < float("inf")  # the slowest rate plan takes still simulates


# ---- config.json values: echoed as written -------------------------------------------------------------


def test_a_huge_float_for_an_integer_field_is_echoed_as_written(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(TINY)[:-1] + ', "max_position_embeddings": 1e300}')
    line = err("analyze", str(path), fragments=["max_position_embeddings", "1e+300", "larger than any real model"])
    assert "0000000000" not in line and len(line) < 300


def test_torch_dtype_that_is_not_a_name_is_an_error(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(TINY, torch_dtype=["bfloat16"])))
    err("analyze", str(path), fragments=["torch_dtype", "must be a dtype name"])


def test_an_unknown_torch_dtype_is_not_called_absent(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(TINY, torch_dtype="float128")))
    r = run("analyze", str(path))
    assert r.code == 0, r.err
    assert "torch_dtype absent" not in r.out and "(torch_dtype 'float128' not understood)" in r.out
    path.write_text(json.dumps({k: v for k, v in TINY.items() if k != "torch_dtype"}))
    assert "torch_dtype absent" in run("analyze", str(path)).out


# ---- the last-calibration record: a FIFO or a link in the config folder ---------------------------------


def _in_subprocess(code: str, cfg) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PLANNER_CONFIG_DIR=str(cfg))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)


@posix_only
def test_a_fifo_as_the_last_calibration_record_is_no_record(_config_dir):
    """verify (no --hardware) read <config>/last-calibration with open(): a FIFO there hung it for ever."""
    _config_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(_config_dir / "last-calibration")
    p = _in_subprocess("from planner.hardware.profiles import last_calibration; print(last_calibration())", _config_dir)
    assert p.returncode == 0 and p.stdout.strip() == "None", p.stderr


@posix_only
def test_recording_the_last_calibration_past_a_fifo_and_a_link(_config_dir, tmp_path):
    """calibrate wrote its record through a fixed '.last-calibration.tmp': a FIFO there blocked it for ever,
    and a symbolic link there had its target overwritten."""
    from planner.hardware.profiles import last_calibration, record_last_calibration

    _config_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(_config_dir / ".last-calibration.tmp")
    p = _in_subprocess("from planner.hardware.profiles import record_last_calibration as r; r('mine')", _config_dir)
    assert p.returncode == 0, p.stderr
    assert last_calibration() == "mine"
    os.unlink(_config_dir / ".last-calibration.tmp")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (_config_dir / ".last-calibration.tmp").symlink_to(victim)
    record_last_calibration("other")
    assert victim.read_text() == "keep me\n" and last_calibration() == "other"


# ---- verify --dtype: the same names as every other command, checked before torch -------------------------


def test_verify_refuses_a_dtype_before_loading_torch(monkeypatch):
    import planner.runtime as rt
    from planner.analysis.errors import RuntimeUnavailableError

    def no_torch():
        raise RuntimeUnavailableError("torch is not installed")

    monkeypatch.setattr(rt, "require_torch", no_torch)
    err("verify", SMALL, "--device", "cpu", "--dtype", "fp4", fragments=["--dtype fp4 is not", "computes in"])
    err("verify", SMALL, "--device", "tpu", fragments=["--device", "tpu"])


@pytest.mark.parametrize("given", ["bf16 ", "BFloat16", "torch.bfloat16"])
def test_verify_takes_a_dtype_by_any_of_its_names(monkeypatch, given):
    pytest.importorskip("torch", reason="verify needs the torch runtime")
    import planner.runtime.verify as rv

    seen = []

    def captured(spec, opts, *a, **k):
        seen.append(opts.dtype)
        raise rv.OptionError("captured")

    monkeypatch.setattr(rv, "run_verify", captured)
    err("verify", SMALL, "--device", "cpu", "--dtype", given, fragments=["captured"])
    assert seen == ["bf16"]


def test_a_user_profile_over_256_kib_is_refused_by_its_size(tmp_path, monkeypatch):
    """Every command that names a profile reads all the user profiles, so their size bounds every command's time:
    at the former 1 MiB each, 30 such files took 25 s a command. A file of 300 KiB is refused in one line that says
    why, and the other profiles still answer when it is not in the user folder."""
    from planner.hardware.profiles import MAX_PROFILE_BYTES

    big = tmp_path / "big.yaml"
    filler = "# " + "x" * 1000 + "\n"
    body = "name: big\nmemory: 80 GiB\nmemory_bandwidth: 1 TB/s\npeak_flops: {bf16: 1 TFLOP/s}\n"
    big.write_text(body + filler * (300 * 1024 // len(filler)))
    assert big.stat().st_size > MAX_PROFILE_BYTES
    line = run("analyze", "qwen2.5-0.5b", "--hardware", str(big)).assert_error("too large")
    assert str(MAX_PROFILE_BYTES) in line
    small = tmp_path / "small.yaml"
    small.write_text(body)
    assert run("analyze", "qwen2.5-0.5b", "--hardware", str(small)).code == 0


@pytest.mark.parametrize("argv", [
    ("serve", "qwen2.5-0.5b"),
    ("trace", "qwen2.5-0.5b"),
    ("plan", "qwen2.5-0.5b", "--rate", "1", "--input-len", "256", "--output-len", "64", "--ttft-p90", "2",
     "--tpot-p90", "0.1"),
    ("compare", "qwen2.5-0.5b", "llama-3.1-8b"),
])
def test_kv_dtype_is_one_the_engine_offers_in_every_engine_command(argv):
    """--kv-dtype accepts only what the engine offers (vLLM: bf16, fp16, fp8). serve and trace refused an int4
    KV cache; plan and compare (which size memory as vLLM does) planned it. fp8, which vLLM offers, runs."""
    line = run(*argv, "--kv-dtype", "int4").assert_error("does not offer a KV cache in int4")
    assert "fp8" in line
    assert run(*argv, "--kv-dtype", "fp8").code == 0


def test_a_sweep_value_given_twice_is_one_row():
    """--sweep batch=1,1,8 context=2k,2048 printed four rows, two of them repeats (2k is 2,048); each point is one row,
    in the order given."""
    r = run("trace", "qwen2.5-0.5b", "--sweep", "batch=8,1,8", "--sweep", "context=2k,2048", "--json")
    assert r.code == 0, r.err
    rows = json.loads(r.out)["sweep"]
    assert [(x["batch"], x["context"]) for x in rows] == [(8, 2048), (1, 2048)]
