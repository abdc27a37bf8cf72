"""What a hostile or broken server, file or environment can do to the planner: nothing but one ``Error:`` line.

The hub cases run against ``tests.hubserver.FakeHub`` on 127.0.0.1 answering like a hostile mirror.
Most run in-process (``huggingface_hub``'s settings patched to the server and a temporary cache);
the cases whose failure mode is a hang run the CLI in a subprocess with a timeout. After each case
every file under the test's temporary folder is listed: none may appear outside the HF cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import Run, run
from tests.conftest import ROOT, load_bundled_config
from tests.hubserver import FakeHub, commit_of
from tests.test_hub import planner

QWEN = load_bundled_config("Qwen/Qwen2.5-0.5B")
QWEN_PARAMS = 494_032_768


def tree(root: Path) -> set[str]:
    """Every path (files, folders, links, dangling or not) under ``root``."""
    out = set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            out.add(os.path.join(folder, name))
    return out


def isolate_hub(monkeypatch, tmp_path: Path, timeout_s: str) -> Path:
    """huggingface_hub's import-time settings pointed at ``tmp_path/hf`` (cache, token files), online, no token
    from the environment, ``PLANNER_HUB_TIMEOUT`` = ``timeout_s``; returns the cache folder."""
    from huggingface_hub import constants

    cache = tmp_path / "hf" / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "hf" / "stored_tokens"))
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PLANNER_HUB_TIMEOUT", timeout_s)
    return cache


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A FakeHub, and huggingface_hub's import-time settings pointed at it and at tmp_path/hf/hub."""
    from huggingface_hub import constants

    with FakeHub() as h:
        h.cache = isolate_hub(monkeypatch, tmp_path, "2")
        monkeypatch.setattr(constants, "ENDPOINT", h.url)
        yield h


def assert_nothing_outside_cache(before: set[str], tmp_path: Path, cache: Path) -> None:
    new = tree(tmp_path) - before
    outside = [p for p in new if not (p == str(cache) or p.startswith(str(cache) + os.sep)
                                      or str(cache).startswith(p + os.sep))]
    assert outside == [], outside
    assert not [p for p in new if p.endswith((".incomplete", ".tmp"))]


# ---- 1. no file outside the cache, whatever the server sends ------------------------------------


def _evil_names(tmp_path: Path) -> list[str]:
    return ["../../../../x", "../../../../../../../../../../tmp/planner-evil", str(tmp_path / "abs-evil"),
            "..", ".", "a/b", "", " ", "0" * 39 + "/", "W/../x", "c" * 300]


@pytest.mark.parametrize("which", range(11))
def test_traversal_etag_writes_nothing_outside_the_cache(hub, tmp_path, which):
    value = _evil_names(tmp_path)[which]
    hub.repo("acme/evil", headers={"ETag": f'"{value}"'}).add({"config.json": QWEN})
    before = tree(tmp_path)
    line = run("analyze", "acme/evil").assert_error("acme/evil", "ETag", "nothing was written")
    assert len(line) < 600
    assert_nothing_outside_cache(before, tmp_path, hub.cache)
    assert not (tmp_path / "abs-evil").exists() and not Path("/tmp/planner-evil").exists()
    assert not list(hub.cache.glob("**/blobs/*"))  # nothing cached under any name


def test_traversal_linked_etag_on_a_redirect(hub, tmp_path):
    hub.repo("acme/evil", redirect=True, headers={"X-Linked-Etag": '"../../../../x"'}).add({"config.json": QWEN})
    before = tree(tmp_path)
    run("analyze", "acme/evil").assert_error("ETag")
    assert_nothing_outside_cache(before, tmp_path, hub.cache)


def test_missing_etag(hub, tmp_path):
    hub.repo("acme/evil", headers={"ETag": None}).add({"config.json": QWEN})
    before = tree(tmp_path)
    run("analyze", "acme/evil").assert_error("ETag", "nothing was written")
    assert_nothing_outside_cache(before, tmp_path, hub.cache)


@pytest.mark.parametrize("value", ["../../../../x", "/etc/passwd-planner", "", "A" * 40, "0" * 39 + "/", "x" * 500])
def test_traversal_commit_writes_nothing(hub, tmp_path, value):
    hub.repo("acme/evil", headers={"X-Repo-Commit": value}).add({"config.json": QWEN})
    before = tree(tmp_path)
    line = run("analyze", "acme/evil").assert_error("X-Repo-Commit", "not a 40-hex commit id")
    assert "internal error" not in line and len(line) < 600
    assert_nothing_outside_cache(before, tmp_path, hub.cache)


def test_a_commit_other_than_the_one_asked_for(hub):
    sha = commit_of("pinned")
    hub.repo("acme/tiny", headers={"X-Repo-Commit": commit_of("other")}).add({"config.json": QWEN}, commit=sha)
    run("analyze", "acme/tiny", "--revision", sha).assert_error(sha, "answered commit")


def test_a_good_answer_is_cached_in_the_hub_layout_and_found_again(hub, tmp_path):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    before = tree(tmp_path)
    r = run("analyze", "acme/tiny", "--json")
    assert r.code == 0, r.err
    assert r.json["model"]["source"] == "hub"
    assert_nothing_outside_cache(before, tmp_path, hub.cache)
    repo = hub.cache / "models--acme--tiny"
    commit = (repo / "refs" / "main").read_text()
    snap = repo / "snapshots" / commit / "config.json"
    assert json.loads(snap.read_text()) == QWEN
    assert snap.is_symlink() and os.readlink(snap).startswith("../../blobs/")  # as huggingface_hub lays it out
    n = len(hub.paths())
    r = run("analyze", "acme/tiny", "--json")
    assert r.json["model"]["source"] == "hub-cache" and len(hub.paths()) == n  # no request


# ---- 2. bounded requests -----------------------------------------------------------------------


def test_too_large_content_length_is_refused_before_the_body(hub, tmp_path):
    hub.repo("acme/big", headers={"Content-Length": str(2 * 10**9), "Connection": "close"}).add({"config.json": QWEN})
    before = tree(tmp_path)
    run("analyze", "acme/big").assert_error("2000000000 bytes", "nothing was downloaded")
    assert_nothing_outside_cache(before, tmp_path, hub.cache)
    assert not list(hub.cache.glob("**/blobs/*"))


def test_short_body_says_the_answer_broke_off(hub, tmp_path):
    n = len(json.dumps(QWEN))
    hub.repo("acme/short", headers={"Content-Length": str(n + 100), "Connection": "close"}).add({"config.json": QWEN})
    line = run("analyze", "acme/short").assert_error("broke off")
    assert f"after {n} bytes" in line or "bytes" in line
    assert "unreachable" not in line


def test_body_that_is_not_the_gzip_it_claims(hub):
    hub.repo("acme/gz", body="bad-gzip").add({"config.json": QWEN})
    line = run("analyze", "acme/gz").assert_error("could not be decoded")
    assert "unreachable" not in line


def test_a_full_disk_is_not_called_a_network_problem(hub, tmp_path, monkeypatch):
    import errno

    from planner.cli import hub as hub_mod

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(hub_mod.os, "fsync", full)
    hub.repo("acme/tiny").add({"config.json": QWEN})
    line = run("analyze", "acme/tiny").assert_error("No space left on device", "Hugging Face cache")
    assert "unreachable" not in line
    assert not [p for p in tree(tmp_path) if p.endswith(".tmp")]  # the temporary file is gone


def test_retry_after_longer_than_the_budget_is_an_error_saying_when(hub, tmp_path):
    # a subprocess with a timeout: the failure mode is sleeping for an hour
    hub.repo("acme/busy", status=429, headers={"Retry-After": "3600"})
    planner("analyze", "acme/busy", endpoint=hub.url, home=tmp_path, timeout=30).assert_error(
        "429", "retry in 3600 s", "UTC", "PLANNER_HUB_TIMEOUT")
    assert len(hub.paths()) == 1


def test_retry_after_within_the_budget_is_waited_for_once(hub, tmp_path):
    hub.repo("acme/busy", status=503, headers={"Retry-After": "0"})
    run("analyze", "acme/busy").assert_error("503")
    assert len(hub.paths()) == 2


def test_slow_body_is_cut_off_at_the_budget(hub, tmp_path):
    hub.repo("acme/slow", body="slow").add({"config.json": QWEN})  # ~70 s at 10 bytes/s
    line = planner("analyze", "acme/slow", endpoint=hub.url, home=tmp_path, timeout=30,
                   PLANNER_HUB_TIMEOUT="1").assert_error("still arriving", "PLANNER_HUB_TIMEOUT=1 s")
    assert "nothing was written" in line
    assert not [p for p in tree(tmp_path) if "blobs" in p or p.endswith((".incomplete", ".tmp"))]


def test_endless_body_stops_at_the_size_limit(hub, tmp_path):
    hub.repo("acme/endless", body="endless").add({"config.json": QWEN})
    planner("analyze", "acme/endless", endpoint=hub.url, home=tmp_path, timeout=60,
            PLANNER_HUB_TIMEOUT="30").assert_error("more than 16777216 bytes", "nothing was written")
    assert not [p for p in tree(tmp_path) if "blobs" in p or p.endswith((".incomplete", ".tmp"))]


# ---- 2. the cache: --refresh, and a broken cached copy names the flag ---------------------------


def test_a_bad_cached_config_says_refresh_and_refresh_fetches_the_fixed_one(hub):
    repo = hub.repo("acme/fixme")
    repo.add({"config.json": dict(QWEN, hidden_size=-1)})
    run("analyze", "acme/fixme").assert_error("hidden_size")  # fetched, then refused
    repo.add({"config.json": QWEN})  # the server is fixed: main is a new commit
    line = run("analyze", "acme/fixme").assert_error("hidden_size", "--refresh")  # the cached copy
    assert "cached" in line
    for cmd in (["analyze"], ["trace", "--context", "64"], ["compare"]):
        hub.repo("acme/fixme").add({"config.json": dict(QWEN, hidden_size=-1)})
        run(*cmd, "acme/fixme", "--refresh", "--json").assert_error("hidden_size")
        repo.add({"config.json": QWEN})
        r = run(*cmd, "acme/fixme", "--refresh", "--json")
        assert r.code == 0, r.err
        assert "hub-cache" not in r.out


def test_a_cached_file_that_is_not_json_says_refresh(hub):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    assert run("analyze", "acme/tiny", "--json").code == 0
    blob = next(hub.cache.glob("models--acme--tiny/blobs/*"))
    blob.write_bytes(b"{ truncated")
    run("analyze", "acme/tiny").assert_error("not valid JSON", "cached", "--refresh")
    r = run("analyze", "acme/tiny", "--refresh", "--json")
    assert r.code == 0, r.err and r.json["params"]["total"] == QWEN_PARAMS


def test_refresh_while_offline_is_an_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run("analyze", "acme/tiny", "--refresh").assert_error("--refresh", "HF_HUB_OFFLINE")


@pytest.mark.parametrize("revision", ["main\n", "main\r", "v1\x00", "mä"])
def test_revision_with_a_control_or_odd_character_is_refused(revision):
    line = run("analyze", "acme/tiny", "--revision", revision).assert_error("--revision")
    assert "\n" not in line.strip()


# ---- 3. the environment huggingface_hub reads -----------------------------------------------------


@pytest.mark.parametrize("endpoint", ["not a url", "ftp://example.com", "http://127.0.0.1:notaport", "http://", "https://h/\x7f"])
def test_malformed_hf_endpoint(tmp_path, endpoint):
    planner("analyze", "acme/tiny", endpoint=endpoint, home=tmp_path).assert_error("HF_ENDPOINT")


def test_non_ascii_hf_token_is_refused_without_echoing_it(hub, tmp_path):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    line = planner("analyze", "acme/tiny", endpoint=hub.url, home=tmp_path, HF_TOKEN="hf_sécret").assert_error("HF_TOKEN")
    assert "sécret" not in line
    assert hub.paths() == []


@pytest.mark.parametrize("var", ["HF_HUB_DOWNLOAD_TIMEOUT", "HF_HUB_ETAG_TIMEOUT"])
def test_hf_timeout_that_is_not_a_number(hub, tmp_path, var):
    planner("analyze", "acme/tiny", endpoint=hub.url, home=tmp_path, **{var: "abc"}).assert_error(var)


# ---- 2. special files: refused up front, never read (a hang is the failure mode: subprocesses) -----

BOMB = """\
name: bomb
notes: [&a [lol,lol,lol,lol,lol,lol,lol,lol,lol], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a],
  &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], &d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d],
  &f [*e,*e,*e,*e,*e,*e,*e,*e,*e], &g [*f,*f,*f,*f,*f,*f,*f,*f,*f], &h [*g,*g,*g,*g,*g,*g,*g,*g,*g],
  &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]]
memory: *i
memory_bandwidth: 1 TB/s
peak_flops: {bf16: 1 TFLOP/s}
"""


def cli(*args: str, home: Path, timeout: float = 30, **env: str) -> Run:
    """The CLI in a subprocess, offline, with a timeout: a hang fails the test instead of the suite."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PLANNER_"))}
    e.update(HF_HOME=str(home / "hf"), HF_HUB_OFFLINE="1", PLANNER_CONFIG_DIR=str(home / "planner"),
             PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200", **env)
    p = subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, env=e, capture_output=True, text=True,
                       timeout=timeout)
    return Run(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_fifo_and_dev_zero_as_model_or_profile(tmp_path, fifo):
    cli("analyze", str(fifo), home=tmp_path).assert_error("FIFO", "not a config.json")
    cli("analyze", "qwen2.5-0.5b", "--hardware", str(fifo), home=tmp_path).assert_error("FIFO", "hardware profile")
    if os.path.exists("/dev/zero"):
        cli("analyze", "/dev/zero", home=tmp_path).assert_error("character device")
        cli("trace", "qwen2.5-0.5b", "-H", "/dev/zero", home=tmp_path).assert_error("character device")


def test_fifo_as_config_json_in_a_folder_and_as_a_safetensors_file_beside_it(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    cli("analyze", str(folder), home=tmp_path).assert_error("FIFO")
    os.unlink(folder / "config.json")
    (folder / "config.json").write_text(json.dumps(QWEN))
    os.mkfifo(folder / "model.safetensors")  # the checkpoint reconciliation must not open it
    r = cli("analyze", str(folder), "--json", home=tmp_path)
    assert r.code == 0, r.err


def test_fifo_in_the_user_profile_folder_does_not_hang_other_commands(tmp_path):
    hw = tmp_path / "planner" / "hardware"
    hw.mkdir(parents=True)
    os.mkfifo(hw / "stuck.yaml")
    r = cli("analyze", "qwen2.5-0.5b", "--json", home=tmp_path)
    assert r.code == 0, r.err


def test_a_too_large_profile_is_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("name: big\nnotes: |\n" + ("  x\n" * 400_000))
    run("analyze", "qwen2.5-0.5b", "--hardware", str(big)).assert_error("too large")


def test_yaml_alias_bomb_is_refused_quickly(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    assert len(BOMB) < 600
    line = cli("analyze", "qwen2.5-0.5b", "--hardware", str(bomb), home=tmp_path).assert_error("aliases")
    assert len(line) < 400
    hw = tmp_path / "planner" / "hardware"  # in the user's profile folder: named, not hanging
    hw.mkdir(parents=True)
    (hw / "bomb.yaml").write_text(BOMB)
    cli("hardware", "list", home=tmp_path).assert_error("bomb.yaml", "aliases")


def test_yaml_aliases_of_a_normal_size_still_load(tmp_path):
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: ok\nmemory: &m 24 GiB\nmemory_bandwidth: 1 TB/s\npeak_flops: {bf16: &f 100 TFLOP/s, fp16: *f}\n"
                  "notes: [*m]\n")
    r = run("analyze", "qwen2.5-0.5b", "--hardware", str(ok), "--json")
    assert r.code == 0, r.err


def test_error_messages_never_format_an_unbounded_value(tmp_path):
    from planner.analysis.errors import short

    nested: list = ["x"]
    for _ in range(40):  # 9^40 leaves if expanded
        nested = [nested] * 9
    for value in (nested, "y" * 10**6, 10**5000, {"k" * 1000: 1}):
        assert len(short(value)) <= 40
    p = tmp_path / "p.yaml"
    p.write_text(PROFILE_LONG_NAME)
    line = run("analyze", "qwen2.5-0.5b", "--hardware", str(p)).assert_error("memory")
    assert len(line) < 500


PROFILE_LONG_NAME = "name: long\nmemory: " + "x" * 100_000 + "\nmemory_bandwidth: 1 TB/s\npeak_flops: {bf16: 1 TFLOP/s}\n"


# ---- 3. clean errors: markup, numbers at the edges -------------------------------------------------


def test_rich_markup_in_user_strings_is_shown_literally(tmp_path, monkeypatch):
    folder = tmp_path / "[/x]"  # (a folder "[" holding "x]")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(QWEN))
    r = run("analyze", str(folder))
    assert r.code == 0, r.err
    assert "[/x]" in r.out
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(dict(QWEN, model_type="[/x]")))
    r = run("analyze", str(odd))
    assert r.code == 0, r.err
    assert "[/x]" in r.out
    cfg = tmp_path / "[bold]cfg"
    hw = cfg / "hardware"
    hw.mkdir(parents=True)
    (hw / "odd.yaml").write_text('name: odd\ndisplay_name: "[/x] [red]gpu"\nmemory: 80 GiB\nmemory_bandwidth: 1 TB/s\n'
                                 "peak_flops: {bf16: 100 TFLOP/s}\n")
    monkeypatch.setenv("PLANNER_CONFIG_DIR", str(cfg))
    for args in (["analyze", "qwen2.5-0.5b", "-H", "odd"], ["compare", "qwen2.5-0.5b", "-H", "odd"],
                 ["trace", "qwen2.5-0.5b", "-H", "odd", "--context", "64"], ["hardware", "show", "odd"],
                 ["hardware", "list"]):
        r = run(*args)
        assert r.code == 0, (args, r.err)
        assert "[/x] [red]gpu" in r.out or args == ["hardware", "list"], args
    assert "[bold]" in run("hardware", "list").out  # (the caption may fold the long path)


def test_unknown_model_type_warns_on_stderr_once(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(dict(QWEN, model_type="mystery")))
    r = run("analyze", str(odd), "--json")
    assert r.code == 0, r.err
    warnings = [line for line in r.err.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 1 and "mystery" in warnings[0] and "generic" in warnings[0]
    assert not [line for line in run("analyze", "qwen2.5-0.5b", "--json").err.splitlines() if "generic" in line]


@pytest.mark.parametrize("value", [[1, 2], "llama", 3])
def test_text_config_must_be_an_object(tmp_path, value):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(dict(QWEN, model_type="llava", text_config=value)))
    run("analyze", str(p)).assert_error("text_config", "must be an object")


def test_tiny_price_ranks_and_explains_without_dividing_by_zero():
    r = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--price-per-hour", "5e-324", "--json")
    assert r.code == 0, r.err
    normal = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--price-per-hour", "3", "--json")
    assert r.json["ranking"] == normal.json["ranking"]  # the same order a real price gives
    assert r.json["reasons"] == normal.json["reasons"]
    assert run("compare", "llama-3.1-8b", "qwen2.5-7b", "--price-per-hour", "5e-324").code == 0


@pytest.mark.parametrize("sweep", ["batch=" + "9" * 400, "context=" + "9" * 400, "batch=" + "9" * 300 + "k"])
def test_sweep_values_too_large_for_a_float(sweep):
    line = run("trace", "qwen2.5-0.5b", "--sweep", sweep).assert_error("--sweep", "out of range")
    assert len(line) < 300


# ---- 3. --plot: odd paths, never a half-written or redirected picture -------------------------------


@pytest.fixture
def mpl():
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")


def test_plot_with_dollar_signs_in_the_path_and_the_model_name(tmp_path, mpl):
    folder = tmp_path / "a$b"
    folder.mkdir()
    cfg = folder / "x$y.json"
    cfg.write_text(json.dumps(QWEN))
    out = folder / "m$.png"
    r = run("compare", str(cfg), "qwen2.5-0.5b", "--plot", str(out), "--json")
    assert r.code == 0, r.err
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plot_name_too_long_and_dangling_link(tmp_path, mpl):
    line = run("trace", "qwen2.5-0.5b", "--plot", str(tmp_path / ("x" * 300 + ".png"))).assert_error("--plot")
    assert len(line) < 400
    link = tmp_path / "dl.png"
    link.symlink_to(tmp_path / "nowhere.png")
    run("trace", "qwen2.5-0.5b", "--plot", str(link)).assert_error("symbolic link")
    assert not (tmp_path / "nowhere.png").exists()


def test_a_failed_plot_leaves_the_old_picture_whole(tmp_path, mpl, monkeypatch):
    import errno

    from matplotlib.figure import Figure

    out = tmp_path / "old.png"
    out.write_bytes(b"\x89PNG old picture")

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    run("trace", "qwen2.5-0.5b", "--plot", str(out)).assert_error("No space left")
    assert out.read_bytes() == b"\x89PNG old picture"
    assert sorted(p.name for p in tmp_path.iterdir() if "plot" in p.name or p.suffix == ".png") == ["old.png"]


# ---- 3. the environment: an ASCII terminal, a seed past 64 bits ------------------------------------


def test_an_ascii_output_encoding_gets_a_table_not_a_crash(tmp_path):
    for args in (["analyze", "qwen2.5-0.5b"], ["compare", "qwen2.5-0.5b", "llama-3.1-8b"]):
        r = cli(*args, home=tmp_path, PYTHONIOENCODING="ascii")
        assert r.code == 0, r.err
        assert "Qwen/Qwen2.5-0.5B" in r.out


@pytest.mark.parametrize("seed", [str(1 << 64), "-1", "9" * 40])
def test_verify_seed_outside_64_bits_is_a_usage_error(seed):
    run("verify", "qwen2.5-0.5b", "--seed", seed).assert_error("--seed", code=2)
