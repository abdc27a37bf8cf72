"""The Hugging Face model-id path, tested against a local HTTP server that answers like the hub.

The real ``huggingface_hub`` download and cache code runs: the CLI runs in a subprocess with
``HF_ENDPOINT`` pointed at ``tests.hubserver.FakeHub`` on 127.0.0.1 and ``HF_HOME`` in a temporary
folder (``huggingface_hub`` reads both at import time). Nothing here touches the network or the
user's caches; every request is bounded by a timeout and every server is stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.clirun import Run, run
from tests.conftest import ROOT, load_bundled_config
from tests.hubserver import FakeHub, commit_of, refused_url

QWEN = load_bundled_config("Qwen/Qwen2.5-0.5B")
QWEN_PARAMS = 494_032_768


def planner(*args: str, endpoint: str, home: Path, timeout: float = 60, **env: str) -> Run:
    """``python -m cli ARGS`` with a clean Hugging Face environment pointed at ``endpoint``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "PLANNER_", "TRANSFORMERS_"))}
    e.update(HF_ENDPOINT=endpoint, HF_HOME=str(home / "hf"), PLANNER_CONFIG_DIR=str(home / "planner"),
             PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200", PLANNER_HUB_TIMEOUT="2")
    e.update(env)
    p = subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, env=e, capture_output=True, text=True,
                       timeout=timeout)
    return Run(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


def resolve_paths(hub: FakeHub) -> list[str]:
    return [p for p in hub.paths() if "/resolve" in p]


# ---- download, cache, offline --------------------------------------------------------------------


def test_download_then_cache_with_server_stopped_then_offline(tmp_path):
    with FakeHub() as hub:
        hub.repo("acme/tiny").add({"config.json": QWEN})
        r = planner("analyze", "acme/tiny", "--json", endpoint=hub.url, home=tmp_path)
        assert r.code == 0, r.err
        assert r.err == ""  # no progress bar, no retry log
        d = r.json
        assert d["model"]["id"] == "acme/tiny" and d["model"]["source"] == "hub"
        assert d["params"]["total"] == QWEN_PARAMS
        # one GET of config.json, nothing else (no HEAD, no telemetry, no other file)
        assert [(m, p) for m, p, _ in hub.requests] == [("GET", "/acme/tiny/resolve/main/config.json")]
    cached = list((tmp_path / "hf" / "hub").glob("models--acme--tiny/snapshots/*/config.json"))
    assert len(cached) == 1  # the real cache layout, under the temporary HF_HOME

    # the server is gone: served from the cache
    r = planner("analyze", "acme/tiny", "--json", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err
    assert r.json["model"]["source"] == "hub-cache" and r.json["params"]["total"] == QWEN_PARAMS

    # HF_HUB_OFFLINE=1: the cache only
    r = planner("analyze", "acme/tiny", "--json", endpoint=refused_url(), home=tmp_path, HF_HUB_OFFLINE="1")
    assert r.code == 0, r.err
    assert r.json["model"]["source"] == "hub-cache"
    line = planner("analyze", "acme/other", endpoint=refused_url(), home=tmp_path,
                   HF_HUB_OFFLINE="1").assert_error("acme/other")
    assert "HF_HUB_OFFLINE" in line and "planner models list" in line


def test_hub_redirect_to_resolve_cache_is_followed(hub, tmp_path):
    hub.repo("acme/redir", redirect=True).add({"config.json": QWEN})
    r = planner("analyze", "acme/redir", "--json", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == QWEN_PARAMS
    assert any(p.startswith("/api/resolve-cache/models/acme/redir/") for p in hub.paths())


def test_trace_and_compare_take_hub_ids(hub, tmp_path):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    r = planner("trace", "acme/tiny", "--json", "--context", "128", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err
    assert r.json["model"]["source"] == "hub"
    r = planner("compare", "acme/tiny", "qwen2.5-0.5b", "--json", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err


# ---- access and existence ------------------------------------------------------------------------


def test_gated_without_token_says_set_hf_token_and_accept_licence(hub, tmp_path):
    hub.repo("acme/gated", gated=True).add({"config.json": QWEN})
    line = planner("analyze", "acme/gated", endpoint=hub.url, home=tmp_path).assert_error("acme/gated", "gated")
    assert "HF_TOKEN" in line and "licence" in line and "401" in line


def test_gated_with_a_token_sends_it_and_says_accept_licence(hub, tmp_path):
    hub.repo("acme/gated", gated=True).add({"config.json": QWEN})
    line = planner("analyze", "acme/gated", endpoint=hub.url, home=tmp_path,
                   HF_TOKEN="hf_test_token").assert_error("acme/gated", "gated")
    assert "licence" in line and "403" in line
    auth = [h.get("authorization") or h.get("Authorization") for _, p, h in hub.requests if "/resolve/" in p]
    assert auth and all(a == "Bearer hf_test_token" for a in auth)
    assert "hf_test_token" not in line  # the token is never echoed


@pytest.mark.parametrize("status", [401, 403])
def test_plain_access_refusal_says_set_hf_token(hub, tmp_path, status):
    hub.repo("acme/private", status=status)
    line = planner("analyze", "acme/private", endpoint=hub.url, home=tmp_path).assert_error("acme/private")
    assert "HF_TOKEN" in line
    assert "unreachable" not in line


def test_missing_repo_says_it_does_not_exist_and_lists_close_bundled_names(hub, tmp_path):
    line = planner("analyze", "meta-llama/Llama-3.1-8c", endpoint=hub.url, home=tmp_path).assert_error(
        "meta-llama/Llama-3.1-8c", "no such repository")
    assert "meta-llama/Llama-3.1-8B" in line and "planner models list" in line


def test_missing_repo_with_a_token_is_a_404(hub, tmp_path):
    line = planner("analyze", "acme/nothing", endpoint=hub.url, home=tmp_path,
                   HF_TOKEN="hf_test_token").assert_error("acme/nothing", "no such repository")
    assert "hf_test_token" not in line


def test_repo_without_config_json(hub, tmp_path):
    hub.repo("acme/dataset-like").add({"README.md": b"# hi\n"})
    planner("analyze", "acme/dataset-like", endpoint=hub.url, home=tmp_path).assert_error("no config.json")


def test_server_error_is_reported_with_its_status(hub, tmp_path):
    hub.repo("acme/boom", status=500)
    line = planner("analyze", "acme/boom", endpoint=hub.url, home=tmp_path).assert_error("acme/boom", "500")
    assert "HF_HUB_OFFLINE" in line


def test_endpoint_that_is_not_a_hub(hub, tmp_path):
    hub.repo("acme/plain", bare=True).add({"config.json": QWEN})
    planner("analyze", "acme/plain", endpoint=hub.url, home=tmp_path).assert_error(
        "does not answer like a Hugging Face hub", "HF_ENDPOINT")


# ---- unreachable ---------------------------------------------------------------------------------


def test_connection_refused_says_unreachable_and_how_to_go_offline(tmp_path):
    line = planner("analyze", "acme/tiny", endpoint=refused_url(), home=tmp_path).assert_error(
        "acme/tiny", "unreachable")
    assert "HF_HUB_OFFLINE=1" in line and "planner models list" in line


def test_timeout_says_unreachable_within_a_bounded_time(tmp_path):
    with FakeHub(hang=True) as hub:
        t0 = time.monotonic()
        line = planner("analyze", "acme/tiny", endpoint=hub.url, home=tmp_path,
                       PLANNER_HUB_TIMEOUT="0.3").assert_error("acme/tiny", "unreachable", "0.3 s")
        elapsed = time.monotonic() - t0
    assert "HF_HUB_OFFLINE=1" in line
    # one request bounded by PLANNER_HUB_TIMEOUT, not the library's 10 s + 60 s retry (generous: start-up on a busy machine)
    assert elapsed < 30, elapsed
    # (on a busy machine the 0.3 s may end before the server thread records the request)
    assert all("/resolve/main/config.json" in p for p in hub.paths())


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e9"])
def test_bad_hub_timeout(hub, tmp_path, value):
    planner("analyze", "acme/tiny", endpoint=hub.url, home=tmp_path,
            PLANNER_HUB_TIMEOUT=value).assert_error("PLANNER_HUB_TIMEOUT")
    assert hub.paths() == []


# ---- --revision ----------------------------------------------------------------------------------


def test_revision_reaches_the_server_and_pins_a_commit(hub, tmp_path):
    repo = hub.repo("acme/tiny")
    repo.add({"config.json": QWEN})
    old = dict(QWEN, num_hidden_layers=2)
    sha = repo.add({"config.json": old}, ref="v1", commit=commit_of("v1"))
    r = planner("analyze", "acme/tiny", "--revision", "v1", "--json", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err
    assert r.json["model"]["num_layers"] == 2
    assert "/acme/tiny/resolve/v1/config.json" in resolve_paths(hub)
    r = planner("analyze", "acme/tiny", "--json", endpoint=hub.url, home=tmp_path)
    assert r.json["model"]["num_layers"] == 24  # main is another commit

    # a commit sha: in the URL, and cached by commit (a second call needs no server)
    hub2_home = tmp_path / "other"
    r = planner("trace", "acme/tiny", "--revision", sha, "--json", endpoint=hub.url, home=hub2_home)
    assert r.code == 0, r.err
    assert f"/acme/tiny/resolve/{sha}/config.json" in resolve_paths(hub)
    r = planner("analyze", "acme/tiny", "--revision", sha, "--json", endpoint=refused_url(), home=hub2_home)
    assert r.code == 0, r.err
    assert r.json["model"]["num_layers"] == 2 and r.json["model"]["source"] == "hub-cache"


def test_missing_revision(hub, tmp_path):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    line = planner("analyze", "acme/tiny", "--revision", "v9", endpoint=hub.url, home=tmp_path).assert_error(
        "acme/tiny", "v9", "does not exist")
    assert "/acme/tiny/resolve/v9/config.json" in resolve_paths(hub)
    assert "unreachable" not in line


@pytest.mark.parametrize("revision", ["../../etc", "", " main", "a b", "main/", "x" * 300, "refs//pr", "-rf", "v1.lock"])
def test_bad_revision_is_refused_before_any_request(hub, tmp_path, revision):
    # in-process: the check comes before huggingface_hub is imported
    r = run("analyze", "acme/tiny", "--revision", revision, env={"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path)})
    assert r.code in (1, 2)
    r.assert_error("--revision", code=r.code)
    assert hub.paths() == []


def test_revision_on_a_file_or_bundled_alias(hub, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(QWEN))
    planner("analyze", str(cfg), "--revision", "main", endpoint=hub.url, home=tmp_path).assert_error("--revision")
    line = planner("analyze", "qwen2.5-0.5b", "--revision", "main", endpoint=hub.url, home=tmp_path).assert_error(
        "--revision", "bundled")
    assert "Qwen/Qwen2.5-0.5B" in line
    assert hub.paths() == []


# ---- what the hub serves is data, never code -----------------------------------------------------


def test_auto_map_config_from_the_hub_is_read_not_run(hub, tmp_path):
    marker = tmp_path / "ran"
    cfg = dict(QWEN, auto_map={"AutoConfig": "configuration_evil.EvilConfig",
                               "AutoModelForCausalLM": "modeling_evil.EvilModel"}, trust_remote_code=True)
    evil = f"open({str(marker)!r}, 'w').write('ran')\n".encode()
    hub.repo("acme/remote-code").add({"config.json": cfg, "configuration_evil.py": evil, "modeling_evil.py": evil})
    r = planner("analyze", "acme/remote-code", "--json", endpoint=hub.url, home=tmp_path)
    assert r.code == 0, r.err
    assert any("remote code" in c and "auto_map" in c for c in r.json["caveats"])
    assert r.json["params"]["total"] == QWEN_PARAMS
    assert all(p.endswith("/config.json") for p in resolve_paths(hub))  # no .py was even downloaded
    assert not marker.exists()


@pytest.mark.parametrize("content,fragment", [
    (b"\xff\xfe\x00\x01", "UTF-8"),
    (b"<html>captive portal</html>", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (json.dumps({"model_type": "llama", "hidden_size": -1}).encode(), "hidden_size"),
])
def test_broken_config_from_the_hub(hub, tmp_path, content, fragment):
    hub.repo("acme/broken").add({"config.json": content})
    line = planner("analyze", "acme/broken", endpoint=hub.url, home=tmp_path).assert_error(fragment)
    assert "config.json" in line


def test_unusable_cache_folder_is_not_called_a_network_problem(hub, tmp_path):
    hub.repo("acme/tiny").add({"config.json": QWEN})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    line = planner("analyze", "acme/tiny", endpoint=hub.url, home=tmp_path, HF_HOME=str(blocker)).assert_error(
        "acme/tiny", "Hugging Face cache", "HF_HOME")
    assert "unreachable" not in line
