"""Every command, every bad option: one ``Error:`` line (exit 1 or 2), nothing on stdout, no traceback.

Covers ``analyze``, ``trace`` (``--sweep`` included), ``compare``, ``hardware``, ``models``, ``verify`` and
``calibrate``: bad numbers (negative, zero, absurd), unknown dtypes, unknown hardware (close matches
suggested), malformed and hostile YAML (``!!python/object`` must not run), profiles with missing units
or negative bandwidth, garbage MODEL arguments, files beside a config that lie, the documented exit
codes (0 ok, 1 error, 2 usage, 3 does not fit with ``--require-fit``), ``verify`` refusing a model
that does not fit before allocating, and ``calibrate`` writing its profile atomically. The last part
holds one regression test per bug the fuzz and hub tests found.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest

from tests.clirun import run
from tests.conftest import ROOT, load_bundled_config

SMALL = "qwen2.5-0.5b"
TINY = "HuggingFaceTB/SmolLM2-135M-Instruct"
BASE = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}

PROFILE = """\
name: my-gpu
memory: 24 GiB
memory_bandwidth: 1 TB/s
peak_flops:
  bf16: 100 TFLOP/s
"""


def err(*args: str, fragments=(), env=None) -> str:
    """Run, expect a clean failure (exit 1 or 2), return its one ``Error:`` line."""
    r = run(*args, env=env)
    assert r.code in (1, 2), (args, r.code, r.out[:500], r.err)
    line = r.assert_error(*fragments, code=r.code)
    assert "internal error" not in line, line
    return line


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ---- exit codes ----------------------------------------------------------------------------------


def test_exit_codes_are_documented_in_help_and_readme():
    r = run("--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "Exit codes: 0 ok, 1 error, 2 usage error, 3 does not fit (with --require-fit)" in text
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "## Exit codes" in (ROOT / "README.md").read_text()
    for fragment in ("`0` ok", "`1` error", "`2` usage error", "`3` does not fit (with `--require-fit`)"):
        assert fragment in readme


def test_exit_codes_0_1_2_3():
    assert run("analyze", SMALL, "--json").code == 0
    err("analyze", "no-such-model-anywhere")  # 1
    r = run("analyze", SMALL, "--no-such-option")
    assert r.code == 2
    r.assert_error("--no-such-option", code=2)
    r = run("analyze", "meta-llama/Llama-3.1-70B", "--hardware", "l4", "--require-fit", "--json")
    assert r.code == 3 and r.json["memory"]["fits"] is False  # the result is still printed
    assert run("analyze", SMALL, "--hardware", "h100", "--require-fit", "--json").code == 0


@pytest.mark.parametrize("args", [[], ["hardware"], ["models"]])
def test_a_group_without_its_command_is_a_usage_error_with_one_line(args):
    r = run(*args)
    assert r.code == 2
    errors = [line for line in r.err.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: missing command (see '{' '.join(['planner', *args])} --help')"]
    assert "Usage:" in r.out  # the help is shown


@pytest.mark.parametrize("args", [["nope"], ["analyze"], ["trace"], ["compare"], ["verify"], ["hardware", "show"],
                                  ["models", "nope"], ["analyze", SMALL, "extra-argument"], ["--nope"]])
def test_usage_errors_exit_2(args):
    r = run(*args)
    assert r.code == 2, (r.code, r.err)
    r.assert_error(code=2)


# ---- bad numbers, every command ------------------------------------------------------------------

MODELS_OF = {"analyze": [SMALL], "trace": [SMALL], "compare": [SMALL, "llama-3.1-8b"]}


@pytest.mark.parametrize("command", ["analyze", "trace", "compare"])
@pytest.mark.parametrize("option,value,fragment", [
    ("--context", "-1", "--context"), ("--context", "1e9", "--context"), ("--context", "abc", "--context"),
    ("--context", "99999999999999999999", "--context"), ("--context", "", "--context"), ("--context", "1.5", "--context"),
    ("-c", "-0.5", "-c"), ("--batch", "0", "--batch"), ("--batch", "-3", "--batch"), ("--batch", "99999999999", "--batch"),
    ("--batch", "nan", "--batch"), ("-b", "1e3", "-b"),
    ("--dtype", "int3", "int3"), ("--dtype", "", "--dtype"), ("--dtype", "float64", "float64"), ("--dtype", "\x00", "dtype"),
    ("--kv-dtype", "bogus", "bogus"), ("--kv-dtype", "int4x", "int4x"),
    ("--hardware", "h1000", "h1000"), ("--hardware", "", "hardware"), ("--hardware", "nope.yaml", "nope.yaml"),
    ("--hardware", "/", "folder"), ("--format", "xml", "--format"), ("--revision", "../../etc", "--revision"),
    ("--revision", "", "--revision"),
])
def test_bad_option_values(command, option, value, fragment):
    err(command, *MODELS_OF[command], option, value, fragments=[fragment])


@pytest.mark.parametrize("command", ["analyze", "compare"])
@pytest.mark.parametrize("args,fragment", [
    (["--gpus", "0"], "--gpus"), (["--gpus", "-1"], "--gpus"), (["--gpus", "100000"], "--gpus"),
    (["--tp", "0"], "--tp"), (["--tp", "2"], "--tp"), (["--gpus", "6", "--tp", "4"], "--tp"),
    (["--sliding-window", "0"], "--sliding-window"), (["--sliding-window", "-64"], "--sliding-window"),
    (["--sliding-window", "99999999999"], "--sliding-window"),
])
def test_bad_parallelism_and_window(command, args, fragment):
    err(command, *MODELS_OF[command], *args, fragments=[fragment])


@pytest.mark.parametrize("value", ["-1", "1e7", "abc", "inf", "nan", "-inf"])
def test_compare_bad_price(value):
    err("compare", SMALL, "llama-3.1-8b", "--price-per-hour", value, fragments=["--price-per-hour"])


@pytest.mark.parametrize("sweep,fragment", [
    ("batch", "--sweep"), ("batch=", "--sweep"), ("batch=0", "batch"), ("batch=-1", "batch"), ("batch=1,,x", "x"),
    ("context=2k,-1", "context"), ("context=1.5", "context"), ("context=2g", "2g"), ("context=99999999999", "context"),
    ("foo=1", "foo"), ("batch=nan", "nan"), ("batch=inf", "inf"), ("batch=" + ",".join(map(str, range(1, 80))), "64"),
    ("batch=1,2 batch=3", "twice"),
])
def test_trace_bad_sweep(sweep, fragment):
    err("trace", SMALL, "--sweep", sweep, fragments=[fragment])


@pytest.mark.parametrize("model", ["", " ", "/", "a/b/c", "org/", "-", "\x00", "x" * 5000, "org/" + "x" * 200,
                                   "café/modèle", "~nope", "./nope.json", "../nope"])
def test_garbage_model_arguments(model):
    err("analyze", model)


def test_compare_names_the_failing_model():
    err("compare", SMALL, "no-such-model", fragments=["no-such-model"])


def test_models_and_hardware_bad_format():
    err("models", "list", "--format", "yaml", fragments=["--format"])
    err("hardware", "list", "-f", "xml", fragments=["--format"])


# ---- hardware: unknown names, bad and hostile YAML -----------------------------------------------


@pytest.mark.parametrize("name,suggestion", [("h100-sx", "h100-sxm"), ("a100", "a100-80gb"), ("mi300", "mi300x"),
                                             ("H100SXM", "h100-sxm")])
def test_unknown_hardware_suggests_close_names(name, suggestion):
    for args in (["hardware", "show", name], ["analyze", SMALL, "--hardware", name], ["trace", SMALL, "-H", name],
                 ["compare", SMALL, SMALL, "--hardware", name]):
        line = err(*args, fragments=[name])
        assert suggestion in line and "planner hardware list" in line


HOSTILE = [
    "!!python/object/apply:os.system ['touch {marker}']\n",
    "name: !!python/object/apply:os.system ['touch {marker}']\nmemory: 80 GiB\n",
    "memory: !!python/object/new:subprocess.Popen [['touch', '{marker}']]\n",
    "name: !!python/name:os.system\n",
    "!!python/object:builtins.dict {{}}\n",
    "name: x\nmemory: !custom 3\n",
]


@pytest.mark.parametrize("template", HOSTILE)
def test_python_tags_never_run_anywhere(tmp_path, template):
    marker = tmp_path / "pwned"
    path = write(tmp_path / "evil.yaml", template.format(marker=marker))
    for args in (["hardware", "show", str(path)], ["analyze", SMALL, "--hardware", str(path)],
                 ["trace", SMALL, "--hardware", str(path), "--json"], ["compare", SMALL, SMALL, "--hardware", str(path)]):
        err(*args, fragments=["evil.yaml"])
    # the same file in the user profile folder: every command that reads profiles refuses it
    write(tmp_path / "planner-config" / "hardware" / "evil.yaml", template.format(marker=marker))
    err("hardware", "list", fragments=["evil.yaml"])
    err("analyze", SMALL, "--hardware", "h100", fragments=["evil.yaml"])
    assert not marker.exists()


@pytest.mark.parametrize("field,value,fragments", [
    ("memory", "80", ["memory", "no unit"]),
    ("memory", "80 gb", ["memory", "GB"]),
    ("memory", "-80 GiB", ["memory", "negative"]),
    ("memory", "0 GiB", ["memory", "zero"]),
    ("memory", "2 EiB", ["memory", "absurd"]),
    ("memory", "[80 GiB]", ["memory"]),
    ("memory", "1e999999999 GiB", ["memory"]),
    ("memory", "9" * 5000, ["digits"]),
    ("memory_bandwidth", "-3.35 TB/s", ["memory_bandwidth", "negative"]),
    ("memory_bandwidth", "3.35", ["memory_bandwidth", "no unit"]),
    ("memory_bandwidth", "3.35 TB", ["memory_bandwidth", "not a rate"]),
    ("memory_bandwidth", "1e400 TB/s", ["memory_bandwidth"]),
    ("memory_bandwidth", "nan TB/s", ["memory_bandwidth", "finite"]),
    ("memory_bandwidth", ".inf", ["memory_bandwidth", "finite"]),
    ("memory_bandwidth", "1,5 TB/s", ["memory_bandwidth", "comma"]),
    ("peak_flops", "{bf16: 0 TFLOP/s}", ["peak_flops", "zero"]),
    ("peak_flops", "{bf16: 1e400 TFLOP/s}", ["peak_flops"]),
    ("peak_flops", "{bf16: 100}", ["peak_flops", "no unit"]),
    ("peak_flops", "{fp64: 100 TFLOP/s}", ["peak_flops", "fp64"]),
    ("peak_flops", "{fp8: 100 TFLOP/s}", ["bf16"]),
    ("peak_flops", "100 TFLOP/s", ["peak_flops", "mapping"]),
    ("kernel_launch_overhead", "1e400 s", ["kernel_launch_overhead"]),
    ("kernel_launch_overhead", "-5 us", ["kernel_launch_overhead", "negative"]),
    ("kernel_launch_overhead", "2 days", ["kernel_launch_overhead", "unit"]),
    ("runtime_reserve", "30 GiB", ["runtime_reserve"]),
    ("price_per_hour", "1e400", ["price_per_hour"]),
    ("price_per_hour", "9" * 5000, ["digits"]),
    ("price_per_hour", "-2", ["price_per_hour", "negative"]),
    ("efficiency", "{compute: 1.5}", ["efficiency.compute"]),
    ("efficiency", "{speed: 0.5}", ["efficiency", "speed"]),
    ("interconnect", "fast", ["interconnect"]),
    ("name", "My GPU!", ["name"]),
    ("aliases", "[{a: 1}]", ["aliases"]),
    ("memmory", "80 GiB", ["memmory", "did you mean 'memory'"]),
    ("memory", "2001-12-14", ["memory"]),
    ("memory", "!!binary aGVsbG8=", ["memory"]),
])
def test_bad_profile_values(tmp_path, field, value, fragments):
    lines = [line for line in PROFILE.splitlines() if not line.startswith(field + ":")]
    if field == "peak_flops":
        lines = [line for line in lines if not line.startswith("  bf16")]
    text = "\n".join(lines) + f"\n{field}: {value}\n"
    path = write(tmp_path / "gpu.yaml", text)
    line = err("hardware", "show", str(path), fragments=["gpu.yaml", *fragments])
    assert len(line) < 6000
    err("analyze", SMALL, "--hardware", str(path), fragments=["gpu.yaml"])


@pytest.mark.parametrize("content,fragment", [
    ("", "empty"), ("- a\n- b\n", "mapping"), ("name: [unclosed\n", "YAML"), ("name:\tx\n\tmemory: 1\n", "YAML"),
    ("[" * 5000 + "]" * 5000, "gpu.yaml"), (b"name: x\nmemory: \xff\xfe 80 GiB\n", "UTF-8"),
    ("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "notes: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n" + PROFILE, "gpu.yaml"),
])
def test_malformed_yaml(tmp_path, content, fragment):
    path = write(tmp_path / "gpu.yaml", content)
    t0 = time.monotonic()
    err("hardware", "show", str(path), fragments=[fragment])
    assert time.monotonic() - t0 < 10


def test_yaml_anchors_and_merge_keys_are_plain_yaml(tmp_path):
    text = PROFILE.replace("memory: 24 GiB\n", "memory: &m 24 GiB\nnotes: &n [one]\nsource: *n\n<<: {vendor: Acme}\n")
    r = run("hardware", "show", str(write(tmp_path / "gpu.yaml", text)), "--json")
    assert r.code == 0, r.err
    assert r.json["profile"]["source"] == ["one"] and r.json["profile"]["vendor"] == "Acme"


def test_missing_profile_file_and_folder(tmp_path):
    err("hardware", "show", str(tmp_path / "nope.yaml"), fragments=["not found"])
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    err("hardware", "show", str(folder), fragments=["folder"])


def test_a_broken_user_profile_is_named_by_every_command(tmp_path):
    write(tmp_path / "planner-config" / "hardware" / "bad.yaml", "name: bad\nmemory: 80\n")
    for args in (["hardware", "list"], ["hardware", "show", "h100"], ["analyze", SMALL], ["trace", SMALL],
                 ["compare", SMALL, SMALL]):
        err(*args, fragments=["bad.yaml", "memory"])


# ---- configs and the files beside them -----------------------------------------------------------


@pytest.mark.parametrize("content,fragment", [
    (b"", "JSON"), (b"{", "JSON"), (b"null", "JSON object"), (b'"llama"', "JSON object"), (b"\xff\xfe{}", "UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "config.json"), (('{"hidden_size": ' + "9" * 5000 + "}").encode(), "digits"),
    (b'{"model_type": "llama", "hidden_size": NaN}', "hidden_size"),
    (b'{"model_type": "llama", "hidden_size": 1e999}', "hidden_size"),
])
def test_unreadable_configs(tmp_path, content, fragment):
    path = write(tmp_path / "config.json", content)
    for command in ("analyze", "trace", "verify"):
        err(command, str(path), fragments=[fragment])
    err("compare", SMALL, str(path), fragments=[fragment])


def test_config_too_large_is_refused_without_reading(tmp_path):
    path = tmp_path / "config.json"
    with path.open("wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    err("analyze", str(path), fragments=["too large"])


@pytest.mark.parametrize("name,content", [
    ("model.safetensors.index.json", b'{"metadata": {"total_size": 1e400}, "weight_map": {}}'),
    ("model.safetensors.index.json", b'{"metadata": {"total_size": -5}, "weight_map": {}}'),
    ("model.safetensors.index.json", b"[" * 100000 + b"]" * 100000),
    ("model.safetensors.index.json", b"\xff\xfe"),
    ("model.safetensors", b"\x01\x02"),
    ("model.safetensors", struct.pack("<Q", 2**63) + b"{}"),
    ("model.safetensors", struct.pack("<Q", 5) + b"{abc}"),
    ("model.safetensors", b"[" * 10),
])
def test_lying_checkpoint_files_beside_a_config_are_ignored(tmp_path, name, content):
    write(tmp_path / "config.json", json.dumps(load_bundled_config("Qwen/Qwen2.5-0.5B")))
    write(tmp_path / name, content)
    r = run("analyze", str(tmp_path), "--json")
    assert r.code == 0, r.err
    ck = r.json.get("checkpoint")
    assert ck is None or ck["bytes"] >= 0


@pytest.mark.parametrize("header", [
    b'{"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 1e400]}}',
    b'{"w": {"dtype": "BF16", "shape": [1], "data_offsets": [10, 0]}}',
    b"[" * 100000 + b"]" * 100000,
])
def test_lying_safetensors_headers_are_ignored(tmp_path, header):
    write(tmp_path / "config.json", json.dumps(load_bundled_config("Qwen/Qwen2.5-0.5B")))
    write(tmp_path / "model.safetensors", struct.pack("<Q", len(header)) + header)
    r = run("analyze", str(tmp_path), "--json")
    assert r.code == 0, r.err
    assert r.json.get("checkpoint") is None


def test_auto_map_with_python_beside_it_is_not_run(tmp_path):
    marker = tmp_path / "ran"
    cfg = dict(BASE, auto_map={"AutoConfig": "configuration_x.XConfig", "AutoModelForCausalLM": "modeling_x.XModel"})
    write(tmp_path / "config.json", json.dumps(cfg))
    for mod in ("configuration_x.py", "modeling_x.py", "__init__.py"):
        write(tmp_path / mod, f"open({str(marker)!r}, 'w').write('ran')\n")
    for command in ("analyze", "trace", "compare"):
        args = [command, str(tmp_path)] + ([SMALL] if command == "compare" else []) + ["--json"]
        r = run(*args)
        assert r.code == 0, r.err
    d = run("analyze", str(tmp_path), "--json").json
    assert any("remote code" in c for c in d["caveats"])
    assert not marker.exists()


# ---- verify and calibrate ------------------------------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="verify and calibrate need the torch runtime")


@pytest.mark.parametrize("args,fragment", [
    (["--steps", "0"], "--steps"), (["--steps", "99999999999"], "--steps"), (["--warmup", "-1"], "--warmup"),
    (["--threads", "0"], "--threads"), (["--batch", "0"], "--batch"), (["--context", "-1"], "--context"),
    (["--seed", "abc"], "--seed"), (["--format", "xml"], "--format"),
    (["--dtype", "int4"], "int4"), (["--dtype", "fp8"], "fp8"), (["--dtype", "bogus"], "bogus"),
    (["--device", "tpu"], "tpu"), (["--hardware", "h100-sx"], "h100-sxm"), (["--hardware", "nope.yaml"], "nope.yaml"),
    (["--weights", "/nonexistent/folder"], "/nonexistent/folder"), (["--plot", "x.txt"], "--plot"),
    (["--plot", "/nonexistent/x.png"], "--plot"), (["--revision", "main"], "HF_HUB_OFFLINE"),
])
def test_verify_bad_options(torch, args, fragment):
    err("verify", TINY, "--device", "cpu", *args, fragments=[fragment])


def test_verify_cuda_without_cuda(torch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    err("verify", TINY, "--device", "cuda", fragments=["CUDA"])


@pytest.mark.parametrize("model,args", [
    ("meta-llama/Meta-Llama-3.1-405B", []),
    ("deepseek-ai/DeepSeek-V3", []),
    (SMALL, ["--batch", "16777216", "--context", "1073741824"]),
])
def test_verify_refuses_a_model_that_does_not_fit_before_allocating(torch, model, args):
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    line = err("verify", model, "--device", "cpu", *args, fragments=["not enough cpu memory"])
    assert time.monotonic() - t0 < 30
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 * 1024, grown_kib  # nothing of the model's size was allocated
    assert "--batch" in line or "--context" in line or "do not fit" in line


@pytest.mark.parametrize("args,fragment", [
    (["--device", "tpu"], "tpu"), (["--dtype", "int8"], "int8"), (["--dtype", "fp8"], "fp8"),
    (["--threads", "0"], "--threads"), (["--threads", "-3"], "--threads"), (["--format", "xml"], "--format"),
])
def test_calibrate_bad_options(torch, args, fragment):
    err("calibrate", *args, fragments=[fragment])


@pytest.fixture
def fake_measurement(torch, monkeypatch):
    """``planner calibrate`` with its measurement replaced by fixed numbers (it takes ~a minute)."""
    import planner.runtime.calibrate as rc

    def fake(device="cpu", *, dtypes=None, quick=False, progress=None, threads=None, shapes=None, shapes_from="",
             spec=None):
        return rc.Calibration(device_type="cpu", device_name="Test CPU", copy_bytes_per_s=20e9, read_bytes_per_s=30e9,
                              matmul_flops_per_s={"fp32": 5e11}, launch_s=4e-6, memory_bytes=64 * 2**30, threads=2,
                              seconds=0.01, details={"buffer_bytes": 2**30, "gemm_sizes": {"fp32": 1024},
                                                     "tiny_step_kernels": 100})

    monkeypatch.setattr(rc, "calibrate", fake)
    return fake


def test_calibrate_writes_a_profile_that_loads(fake_measurement, tmp_path):
    r = run("calibrate", "--device", "cpu", "--json")
    assert r.code == 0, r.err
    path = Path(r.json["path"])
    assert path == tmp_path / "planner-config" / "hardware" / "calibrated.yaml"
    d = run("hardware", "show", "calibrated", "--json").json["profile"]
    assert d["memory_bandwidth_bytes_per_s"] == 30e9 and d["origin"] == "user"
    r = run("calibrate", "--device", "cpu", "--no-save", "--name", "other", "--json")
    assert r.code == 0 and r.json["path"] is None
    assert not (path.parent / "other.yaml").exists()


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_calibrate_interrupted_while_saving_leaves_the_old_profile(fake_measurement, tmp_path, monkeypatch, failure):
    folder = tmp_path / "planner-config" / "hardware"
    old = write(folder / "calibrated.yaml", PROFILE.replace("my-gpu", "calibrated"))
    before = old.read_bytes()

    def broken_replace(src, dst):
        raise failure("interrupted at the last step")

    monkeypatch.setattr("planner.hardware.profiles.os.replace", broken_replace)
    r = run("calibrate", "--device", "cpu")
    assert r.code in (1, 130), (r.code, r.err)
    r.assert_error(code=r.code)
    assert old.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["calibrated.yaml"]  # no temporary file left behind
    assert run("hardware", "show", "calibrated", "--json").json["profile"]["memory_bandwidth_bytes_per_s"] == 1e12


@pytest.mark.parametrize("name", ["../evil", "Evil", "a b", "", "/tmp/x", "x" * 300 + "/"])
def test_calibrate_refuses_a_bad_profile_name_and_writes_nothing(fake_measurement, tmp_path, name):
    err("calibrate", "--device", "cpu", "--name", name)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == []


# ---- regressions: one test per bug found by the fuzz and hub tests --------------------------------


def _cfg(tmp_path, **changes) -> str:
    cfg = dict(BASE)
    cfg.update(changes)
    return str(write(tmp_path / "config.json", json.dumps(cfg)))


@pytest.mark.parametrize("inner", [["llama"], {"a": 1}, 7])
def test_text_config_model_type_of_the_wrong_type(tmp_path, inner):
    path = write(tmp_path / "config.json", json.dumps({"model_type": "llama4", "text_config": dict(BASE, model_type=inner)}))
    err("analyze", str(path), fragments=["model_type"])


def test_rotary_dim_larger_than_head_dim(tmp_path):
    err("analyze", _cfg(tmp_path, rotary_dim=1000), fragments=["rotary_dim", "head_dim"])


@pytest.mark.parametrize("kind", ["mamba", "linear_attention", "conv"])
def test_attention_decoder_with_non_attention_layer_types(tmp_path, kind):
    err("analyze", _cfg(tmp_path, layer_types=["full_attention", kind]), fragments=["layer_types", kind])


def test_layer_types_of_attention_kinds_still_work(tmp_path):
    r = run("analyze", _cfg(tmp_path, layer_types=["full_attention", "sliding_attention"], sliding_window=64,
                            model_type="ministral"), "--json")
    assert r.code == 0, r.err
    assert [lk["window"] for lk in r.json["kv_cache"]["per_layer"]] == [None, 64]


@pytest.mark.parametrize("weights,fragment", [
    ({"num_bits": 4, "strategy": "group", "group_size": -5}, "group_size"),
    ({"num_bits": 4, "strategy": "group"}, "group_size"),
    ({"num_bits": 4, "strategy": "block"}, "block_structure"),
    ({"num_bits": 4, "strategy": "block", "block_structure": [-128, 128]}, "block_structure"),
])
def test_compressed_tensors_without_a_usable_group_or_block(tmp_path, weights, fragment):
    qc = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": weights}}}
    err("analyze", _cfg(tmp_path, quantization_config=qc), fragments=[fragment])


def test_qwen2_moe_shared_expert_of_size_zero(tmp_path):
    path = _cfg(tmp_path, model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                shared_expert_intermediate_size=0)
    err("analyze", path, fragments=["shared_expert_intermediate_size"])


def test_olmoe_head_dim_inconsistent_with_hidden_size(tmp_path):
    path = _cfg(tmp_path, model_type="olmoe", num_experts=4, num_experts_per_tok=2, head_dim=8)
    err("analyze", path, fragments=["head_dim", "olmoe"])


def test_qwen3_moe_without_head_dim_uses_hidden_over_heads(tmp_path):
    path = _cfg(tmp_path, model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
    d = run("analyze", path, "--json").json
    assert "head_dim 16" in d["model"]["attention"]  # 64 / 4, as transformers builds it (not 128)


def test_compare_with_a_price_of_zero(tmp_path):
    r = run("compare", SMALL, "llama-3.1-8b", "--price-per-hour", "0", "--json")
    assert r.code == 0, r.err
    assert "GPU-seconds" in r.json["criterion"]
    assert run("compare", SMALL, "llama-3.1-8b", "--price-per-hour", "0").code == 0


def test_huge_integers_in_json_and_yaml(tmp_path):
    path = write(tmp_path / "config.json", '{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}")
    err("analyze", str(path), fragments=["config.json", "digits"])
    yaml_path = write(tmp_path / "gpu.yaml", PROFILE + "price_per_hour: " + "9" * 5000 + "\n")
    err("hardware", "show", str(yaml_path), fragments=["gpu.yaml"])


def test_model_type_of_the_wrong_type(tmp_path):
    """The fuzz's find: a list as model_type met the flat-wrapper lookup (unhashable) before its type check."""
    path = _cfg(tmp_path, model_type=[])
    err("analyze", path, fragments=["model_type", "must be a string"])


@pytest.mark.parametrize("value", ["1e400 TFLOP/s", "1e999999999 TFLOP/s", "1e-999999999 TFLOP/s"])
def test_absurd_exponents_in_units_are_quick_errors(tmp_path, value):
    path = write(tmp_path / "gpu.yaml", PROFILE.replace("100 TFLOP/s", value))
    t0 = time.monotonic()
    err("hardware", "show", str(path), fragments=["peak_flops"])
    assert time.monotonic() - t0 < 5



def test_calibrate_checks_its_destination_before_measuring(torch, monkeypatch, tmp_path):
    """A folder that cannot be written is found before the minute of measuring, not after it."""
    import planner.runtime.calibrate as rc

    measured = []
    monkeypatch.setattr(rc, "calibrate", lambda *a, **k: measured.append(1))
    blocker = write(tmp_path / "blocker", "a file where the config folder should be")
    monkeypatch.setenv("PLANNER_CONFIG_DIR", str(blocker))
    err("calibrate", "--device", "cpu", fragments=["cannot write"])
    assert measured == []
    monkeypatch.setenv("PLANNER_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "cfg" / "hardware" / "mine.yaml").mkdir(parents=True)  # a folder in the profile's place
    err("calibrate", "--device", "cpu", "--name", "mine", fragments=["folder"])
    assert measured == []


def test_verify_refuses_an_odd_rotary_dimension(torch, config_dir):
    """hidden_size 1 (head_dim 1) is a shape analyze can count but RoPE cannot turn: one error, no crash."""
    cfg = {"model_type": "llama", "hidden_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1,
           "num_key_value_heads": 1, "intermediate_size": 4, "vocab_size": 16, "max_position_embeddings": 64}
    path = config_dir(cfg)
    assert run("analyze", str(path), "--json").code == 0
    err("verify", str(path), "--device", "cpu", "--steps", "1", "--context", "8", fragments=["rotary dimension 1 is odd"])


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_a_finite_but_absurd_float_is_an_error_not_an_overflow(tmp_path, command):
    """The fuzz's find: a vision mlp_ratio of 1e308 is finite, but hidden_size x 1e308 is infinity and int() of it
    raised OverflowError (an internal error). Floats above any real model's are refused where they are read."""
    vision = {"depth": 2, "embed_dim": 32, "mlp_ratio": 1e308, "num_heads": 2, "hidden_size": 64, "patch_size": 4,
              "spatial_merge_size": 2, "temporal_patch_size": 2}
    path = _cfg(tmp_path, model_type="qwen2_vl", vision_config=vision, rope_scaling={"rope_type": "default",
                                                                                   "mrope_section": [2, 3, 3]})
    args = ("compare", path, SMALL) if command == "compare" else ("analyze", path)
    err(*args, fragments=["mlp_ratio", "larger than any real model"])
