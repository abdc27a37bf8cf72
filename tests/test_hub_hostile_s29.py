"""The hub download path against a server that speaks raw, hostile HTTP (wave s29 red-team of ``cli/hub.py``).

``tests.hubserver.FakeHub`` answers through ``http.server``, which cannot drip headers, send ``100 Continue``
forever, redirect to a malformed URL or send bytes a header parser would refuse. ``RawHub`` here writes the
bytes itself: it binds 127.0.0.1 on a free port, hands each connection to a test's ``answer(conn)`` in a
daemon thread and stops every loop when the test ends. The CLI runs in-process with ``huggingface_hub``'s
import-time settings pointed at the server and at ``tmp_path/hf/hub`` (as in ``tests/test_hostile.py``).

Each case pins what the rules ask for: nothing written outside the cache, a total time budget
(``PLANNER_HUB_TIMEOUT``) that holds whatever the server does, and one ``Error:`` line (never an internal
error). The ones marked "was:" failed before the fix in ``cli/hub.py`` that they name.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.clirun import Run, run
from tests.conftest import ROOT, load_bundled_config
from tests.hubserver import FakeHub
from tests.test_hostile import isolate_hub

QWEN = load_bundled_config("Qwen/Qwen2.5-0.5B")
QWEN_PARAMS = 494_032_768
BODY = json.dumps(QWEN).encode()
COMMIT = hashlib.sha1(b"s29").hexdigest()
ETAG = hashlib.sha1(b"blob %d\0" % len(BODY) + BODY).hexdigest()  # git's blob id of BODY


def head(status: str = "200 OK", body: bytes = BODY, *extra: str, length: bool = True) -> bytes:
    """A hub-like header block: X-Repo-Commit, ETag, Content-Length (unless ``length`` is False), and ``extra``."""
    lines = [f"HTTP/1.1 {status}", f"X-Repo-Commit: {COMMIT}", f'ETag: "{ETAG}"', "Connection: close", *extra]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Conn:
    def __init__(self, hub: "RawHub", sock: socket.socket, path: str, headers: dict[str, str]):
        self.hub, self.sock, self.path, self.headers = hub, sock, path, headers

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def drip(self, data: bytes, every_s: float) -> None:
        """``data`` a byte at a time, ``every_s`` apart, until sent or the test ends."""
        for i in range(len(data)):
            if self.hub.stopped.wait(every_s):
                return
            self.sock.sendall(data[i:i + 1])


class RawHub:
    """A TCP server on 127.0.0.1 whose answers are whatever bytes ``answer(conn)`` writes."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, lower-cased headers)
        self.stopped = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        try:
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                more = sock.recv(65536)
                if not more:
                    return
                data += more
            lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
            self.requests.append((path, headers))
            self.answer(Conn(self, sock, path, headers))
        except OSError:  # the client hung up: what a bounded client does
            pass
        finally:
            sock.close()

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """``serve(answer)`` starts a RawHub and points ``huggingface_hub`` at it and at ``tmp_path/hf/hub``."""
    from huggingface_hub import constants

    hubs: list[RawHub] = []
    isolate_hub(monkeypatch, tmp_path, "1")

    def start(answer) -> RawHub:
        hub = RawHub(answer)
        hubs.append(hub)
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        return hub

    yield start
    for hub in hubs:
        hub.stop()


def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf" / "hub"


def normal(conn: Conn) -> None:
    conn.send(head() + BODY)


def timed(*args: str):
    t0 = time.monotonic()
    r = run(*args)
    return r, time.monotonic() - t0


# ---- the time budget holds whatever the server does (was: a hang, the client's timeouts being per read) ----


def test_headers_a_byte_at_a_time_are_cut_off_at_the_budget(serve):
    # was: no end (h11 buffers up to 16 KiB of headers; each byte resets the read timeout)
    serve(lambda c: c.drip(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 10000, 0.1))
    r, elapsed = timed("analyze", "acme/drip")
    r.assert_error("acme/drip", "unreachable", "no complete answer within 1 s")
    assert elapsed < 3, elapsed


def test_endless_100_continue_is_cut_off_at_the_budget(serve):
    # was: no end (each informational answer is a whole event; the client waits for the next)
    def answer(c):
        while not c.hub.stopped.wait(0.02):
            c.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    serve(answer)
    r, elapsed = timed("analyze", "acme/continue")
    r.assert_error("acme/continue", "no complete answer within 1 s")
    assert elapsed < 3, elapsed


def test_a_body_dripped_just_inside_each_read_timeout_ends_at_the_budget(monkeypatch, serve):
    # was: about twice the budget (the last read could wait a whole per-read timeout past the deadline)
    monkeypatch.setenv("PLANNER_HUB_TIMEOUT", "2")

    def answer(c):
        c.send(head())
        c.drip(BODY, 1.9)
    serve(answer)
    r, elapsed = timed("analyze", "acme/slow")
    line = r.assert_error("still arriving after PLANNER_HUB_TIMEOUT=2 s", "nothing was written")
    assert "bytes so far" in line
    assert elapsed < 3.2, elapsed


# ---- Retry-After a server can send (was: internal errors) ---------------------------------------------


def retry_after(value: bytes, status: bytes = b"429 Too Many Requests"):
    return lambda c: c.send(b"HTTP/1.1 " + status + b"\r\nRetry-After: " + value +
                            b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.mark.parametrize("value,fragment", [
    (b"9" * 400, "more than a year"),  # was: OverflowError: timestamp out of range
    (b"100000000000000000000", "more than a year"),  # was: the same
    (b"Wed, 21 Oct 2999 07:28:00 GMT", "more than a year"),
    (b"\xb2", "answered HTTP 429"),  # '²': str.isdigit() is true, float() refuses it (was: ValueError)
    (b"-5", "answered HTTP 429"),
    (b"soon", "answered HTTP 429"),
])
def test_retry_after_values_a_hostile_server_sends(serve, value, fragment):
    serve(retry_after(value))
    r, elapsed = timed("analyze", "acme/busy")
    line = r.assert_error("acme/busy", fragment)
    assert "internal error" not in line
    assert elapsed < 3, elapsed


def test_a_second_retry_after_says_it_came_again_not_that_0_s_is_too_long(serve):
    # was: "asks to retry in 0 s (...), longer than PLANNER_HUB_TIMEOUT=1 s"
    hub = serve(retry_after(b"Wed, 21 Oct 2015 07:28:00 GMT", b"503 Service Unavailable"))
    line = run("analyze", "acme/busy").assert_error("HTTP 503 again after the one retry")
    assert "longer than" not in line
    assert len(hub.requests) == 2


def test_retry_after_time_names_the_date(serve):
    serve(retry_after(b"7200"))
    line = run("analyze", "acme/busy").assert_error("retry in 7200 s", "UTC", "PLANNER_HUB_TIMEOUT")
    assert time.strftime("%Y-", time.gmtime(time.time() + 7200)) in line


# ---- redirects -----------------------------------------------------------------------------------------


def redirect(location_of, status: str = "302 Found"):
    """Answers the resolve URL with a redirect to ``location_of(conn)``, and any other path with the file."""
    def answer(c):
        if "/resolve/" in c.path or c.path.startswith("/hop"):
            c.send(f"HTTP/1.1 {status}\r\nLocation: {location_of(c)}\r\nX-Repo-Commit: {COMMIT}\r\n"
                   f'X-Linked-Etag: "{ETAG}"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'.encode("latin-1"))
        else:
            normal(c)
    return answer


@pytest.mark.parametrize("location", ["http://[::1", "http://127.0.0.1:99999/x"])
def test_redirect_to_a_malformed_url(serve, location):
    # was: "internal error: ValueError: Invalid IPv6 URL"; and a port out of range blamed HF_ENDPOINT
    serve(redirect(lambda c: location))
    line = run("analyze", "acme/redir").assert_error("acme/redir", "redirected to a malformed URL")
    assert "HF_ENDPOINT:" not in line


@pytest.mark.parametrize("location", ["file:///etc/passwd", "javascript:alert(1)", "ftp://127.0.0.1/x"])
def test_redirect_to_another_scheme_is_refused(serve, location):
    hub = serve(redirect(lambda c: location))
    run("analyze", "acme/redir").assert_error("redirected to a URL that is not http(s)")
    assert len(hub.requests) == 1


@pytest.mark.parametrize("hops", [6, 20, None])  # None: to itself, forever
def test_redirect_chains_stop_at_five(serve, hops):
    def location(c):
        n = int(c.path[4:]) if c.path.startswith("/hop") else 0
        return c.path if hops is None else (f"/hop{n + 1}" if n < hops else "/final")
    hub = serve(redirect(location))
    run("analyze", "acme/redir").assert_error("redirected more than 5 times")
    assert len(hub.requests) == 6


def test_relative_redirect_keeps_the_token_and_a_redirect_to_another_host_drops_it(serve, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_s29_secret")
    hub = serve(redirect(lambda c: "../../final" if "/resolve/" in c.path and "near" in c.path
                         else f"http://localhost:{c.hub.url.rsplit(':', 1)[1]}/final"))
    for repo in ("acme/near", "acme/far"):
        r = run("analyze", repo, "--json")
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == QWEN_PARAMS
    auth = [(h.get("host", "").split(":")[0], h.get("authorization")) for _, h in hub.requests]
    assert auth == [("127.0.0.1", "Bearer hf_s29_secret"), ("127.0.0.1", "Bearer hf_s29_secret"),
                    ("127.0.0.1", "Bearer hf_s29_secret"), ("localhost", None)]


class _Resp:
    def __init__(self, status: int, headers: dict[str, str], body: bytes = b""):
        self.status_code, self.headers, self.body, self.extensions = status, headers, body, {}

    def iter_bytes(self):
        yield self.body


class _Session:
    """Stands in for huggingface_hub's HTTP session: answers from ``answers`` and records each request."""

    def __init__(self, answers):
        self.answers, self.sent = list(answers), []

    @contextlib.contextmanager
    def stream(self, method, url, headers, **kw):
        self.sent.append((url, dict(headers)))
        yield self.answers.pop(0)


def test_a_redirect_from_https_to_http_on_the_same_host_drops_the_token():
    # was: kept (only host:port was compared), so the token crossed the network unencrypted
    from planner.cli import hub as hub_mod

    session = _Session([
        _Resp(302, {"location": "http://hub.example/api/resolve-cache/x", "x-repo-commit": COMMIT,
                    "x-linked-etag": f'"{ETAG}"'}),
        _Resp(200, {"content-length": str(len(BODY))}, BODY),
    ])
    data, commit, blob = hub_mod._get(session, "https://hub.example/acme/x/resolve/main/config.json",
                                      {"authorization": "Bearer hf_x"}, time.monotonic() + 5, 5, "acme/x", None,
                                      hub_mod._Watch())
    assert (data, commit, blob) == (BODY, COMMIT, ETAG)
    assert [h.get("authorization") for _, h in session.sent] == ["Bearer hf_x", None]


def test_a_redirect_to_credentials_in_the_url_never_carries_the_token(serve, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_s29_secret")
    hub = serve(redirect(lambda c: f"http://user:pw@127.0.0.1:{c.hub.url.rsplit(':', 1)[1]}/final"))
    assert run("analyze", "acme/creds").code == 0
    assert "hf_s29_secret" not in str(hub.requests[-1][1])


# ---- what the answer's body and framing can be ------------------------------------------------------


def test_a_traversal_content_disposition_names_nothing_on_disk(serve, tmp_path):
    def answer(c):
        c.send(head("200 OK", BODY, 'Content-Disposition: attachment; filename="../../../../s29-evil"',
                    "X-Linked-Size: 1") + BODY)
    serve(answer)
    r = run("analyze", "acme/tiny", "--json")
    assert r.code == 0, r.err
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir())
    assert files == [f"hf/hub/models--acme--tiny/blobs/{ETAG}", "hf/hub/models--acme--tiny/refs/main",
                     f"hf/hub/models--acme--tiny/snapshots/{COMMIT}/config.json"]
    assert not Path("/s29-evil").exists()


def test_a_short_body_says_how_many_bytes_came(serve):
    # was: "after 0 bytes" whatever had come
    serve(lambda c: c.send(head("200 OK", BODY + b"x" * 100) + BODY))
    run("analyze", "acme/short").assert_error("broke off", f"after {len(BODY)} bytes")


def test_a_body_longer_than_its_content_length_is_cut_there(serve):
    serve(lambda c: c.send(head("200 OK", BODY[:-50]) + BODY))
    run("analyze", "acme/long").assert_error("not valid JSON")


def test_gzip_of_gzip_bomb_stops_at_the_size_limit_quickly(serve, tmp_path):
    bomb = gzip.compress(gzip.compress(b"0" * (40 << 20), 9), 9)  # 40 MiB of zeros in about 6 kB
    serve(lambda c: c.send(head("200 OK", bomb, "Content-Encoding: gzip, gzip") + bomb))
    r, elapsed = timed("analyze", "acme/bomb")
    r.assert_error("more than 16777216 bytes", "nothing was written")
    assert elapsed < 4, elapsed
    assert not list(cache(tmp_path).rglob("blobs/*"))


@pytest.mark.parametrize("chunks", [b"FFFFFFFFFFFFFFFFFFFF\r\n" + BODY, b"-5\r\nabc\r\n0\r\n\r\n",
                                    b"%x\r\n" % len(BODY) + BODY + b"\r\n"])  # too large, negative, no end
def test_chunked_framing_abuse_is_one_error(serve, chunks):
    serve(lambda c: c.send(head("200 OK", BODY, "Transfer-Encoding: chunked", length=False) + chunks))
    run("analyze", "acme/chunked").assert_error("acme/chunked", "broke off")


@pytest.mark.parametrize("answer,fragment", [
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", "broke off"),
    (b"HTTP/1.1 999 Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "HTTP 999"),
    (b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "HTTP 302"),  # no Location
    (b"\x00\xff" * 64, "broke off"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 200000 + b"\r\n\r\n", "acme/odd"),  # over h11's 16 KiB of headers
])
def test_odd_status_lines_and_headers(serve, answer, fragment):
    serve(lambda c: c.send(answer))
    line = run("analyze", "acme/odd").assert_error("acme/odd", fragment)
    assert "internal error" not in line


@pytest.mark.parametrize("body,fragment", [
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (b'{"a":' * 50000 + b"1" + b"}" * 50000, "nested too deeply"),
    (b'{"model_type": "llama", "hidden_size": NaN}', "hidden_size"),
    (b'{"model_type": "llama", "hidden_size": 1e999}', "hidden_size"),
    (b'{"hidden_size": ' + b"9" * 5000 + b"}", "4300 digits"),
    (b"[" + b"1," * 1000000 + b"1]", "JSON object"),
    (bytes(range(256)), "not UTF-8"),
])
def test_valid_but_hostile_json_is_one_error(serve, body, fragment):
    serve(lambda c: c.send(head("200 OK", body) + body))
    run("analyze", "acme/json").assert_error("acme/json", fragment)


# ---- ids and revisions: refused before any request (was: requested, and cached under a shared folder) ----


@pytest.mark.parametrize("model", ["acme/tiny\n", "a--b/c", "acme/x--y", "acme/x.", "acme/x-", "acme./x",
                                   "acme/x.git", "acme/x..y"])
def test_ids_the_hub_cannot_have_are_refused_before_any_request(serve, tmp_path, model):
    # "acme/tiny\n" was sent on (HF_ID's "$" matches before a final newline) and blamed HF_ENDPOINT;
    # "a--b/c" and "a/b--c" shared the cache folder models--a--b--c
    hub = serve(normal)
    line = run("analyze", model).assert_error("unknown model")
    assert "HF_ENDPOINT" not in line
    assert hub.requests == []
    assert not cache(tmp_path).exists()


@pytest.mark.parametrize("revision", ["a/.", "a/./b", "a/.b", "a.lock/b"])
def test_revision_parts_git_refuses_are_refused_before_any_request(serve, revision):
    # was: fetched, and "a/." cached as refs/a (the answer for branch "a" afterwards)
    hub = serve(normal)
    run("analyze", "acme/tiny", "--revision", revision).assert_error("--revision")
    assert hub.requests == []


def test_a_pull_request_revision_is_quoted_and_cached_by_its_name(serve, tmp_path, monkeypatch):
    hub = serve(normal)
    r = run("analyze", "acme/tiny", "--revision", "refs/pr/1", "--json")
    assert r.code == 0, r.err
    assert hub.requests[0][0] == "/acme/tiny/resolve/refs%2Fpr%2F1/config.json"
    assert (cache(tmp_path) / "models--acme--tiny" / "refs" / "refs" / "pr" / "1").read_text() == COMMIT
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = run("analyze", "acme/tiny", "--revision", "refs/pr/1", "--json")
    assert r.code == 0 and r.json["model"]["source"] == "hub-cache"
    assert len(hub.requests) == 1


# ---- what is already in the cache ---------------------------------------------------------------------


def tree(root: Path) -> set[str]:
    return {os.path.join(folder, name) for folder, dirs, files in os.walk(root) for name in dirs + files}


@pytest.mark.parametrize("linked", ["models--acme--tiny", "models--acme--tiny/snapshots", "models--acme--tiny/blobs",
                                    "models--acme--tiny/refs"])
def test_a_cache_folder_linked_outside_grows_nothing_there(serve, tmp_path, linked):
    # was: models--*/{blobs,snapshots/<commit>} (or snapshots/<commit>) made in the outside folder before the refusal
    serve(normal)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = cache(tmp_path) / linked
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    run("analyze", "acme/tiny").assert_error("refusing to write", "outside the Hugging Face cache")
    assert tree(outside) == set()


def test_a_cached_config_linked_to_a_file_outside_is_read_never_written(serve, tmp_path):
    serve(normal)
    victim = tmp_path / "victim"
    victim.write_text("root:x:0:0:root:/root:/bin/bash\n")
    snap = cache(tmp_path) / "models--acme--tiny" / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text(COMMIT)
    (snap / "config.json").symlink_to(victim)
    line = run("analyze", "acme/tiny").assert_error("not valid JSON", "cached copy", "--refresh")
    assert "root:" not in line  # the file's text is not echoed
    r = run("analyze", "acme/tiny", "--refresh", "--json")
    assert r.code == 0, r.err
    assert victim.read_text() == "root:x:0:0:root:/root:/bin/bash\n"  # the link was replaced, not written through
    assert os.readlink(snap / "config.json") == f"../../blobs/{ETAG}"


@pytest.mark.parametrize("ref", ["../../../../victim", "link"])
def test_a_hostile_ref_is_ignored_and_replaced_not_followed(serve, tmp_path, ref):
    serve(normal)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    refs = cache(tmp_path) / "models--acme--tiny" / "refs"
    refs.mkdir(parents=True)
    if ref == "link":
        (refs / "main").symlink_to(victim)
    else:
        (refs / "main").write_text(ref)
    r = run("analyze", "acme/tiny", "--json")
    assert r.code == 0 and r.json["model"]["source"] == "hub"
    assert victim.read_text() == "keep"
    assert not (refs / "main").is_symlink() and (refs / "main").read_text() == COMMIT


def test_a_blob_pre_placed_as_a_link_is_replaced_not_written_through(serve, tmp_path):
    serve(normal)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    blobs = cache(tmp_path) / "models--acme--tiny" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / ETAG).symlink_to(victim)
    assert run("analyze", "acme/tiny").code == 0
    assert victim.read_text() == "keep" and not (blobs / ETAG).is_symlink()


@pytest.mark.parametrize("blocker", ["models--acme--tiny/blobs", f"models--acme--tiny/snapshots/{COMMIT}"])
def test_a_file_where_a_cache_folder_should_be(serve, tmp_path, blocker):
    serve(normal)
    path = cache(tmp_path) / blocker
    path.parent.mkdir(parents=True)
    path.write_text("")
    line = run("analyze", "acme/tiny").assert_error("cannot write to the Hugging Face cache", "HF_HOME")
    assert "unreachable" not in line


def test_a_read_only_cache_is_named(serve, tmp_path, monkeypatch):
    # root writes through a chmod 555 folder, so the refusal is the one the kernel would give anyone else
    import errno
    import tempfile

    def refused(*args, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", kw.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    serve(normal)
    line = run("analyze", "acme/tiny").assert_error("cannot write to the Hugging Face cache: Permission denied",
                                                   "writable folder")
    assert "unreachable" not in line


# ---- the environment that places the cache ------------------------------------------------------------


@pytest.mark.parametrize("var,value", [("HF_HUB_CACHE", ""), ("HF_HOME", " "), ("HUGGINGFACE_HUB_CACHE", ""),
                                       ("HF_HOME", "~no-such-user-s29/hf"), ("XDG_CACHE_HOME", "")])
def test_a_cache_variable_that_names_no_folder_is_refused_before_anything_is_written(tmp_path, var, value):
    # was: HF_HUB_CACHE= (or HF_HOME=, XDG_CACHE_HOME=) put models--* (or hub/models--*) in the current folder.
    # A subprocess: huggingface_hub reads these when it is imported.
    work = tmp_path / "cwd"
    work.mkdir()
    with FakeHub() as hub:
        hub.repo("acme/tiny").add({"config.json": QWEN})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "XDG_", "PLANNER_"))}
        env.update(HF_ENDPOINT=hub.url, PYTHONPATH=str(ROOT), PLANNER_CONFIG_DIR=str(tmp_path / "planner"),
                   **{var: value})
        p = subprocess.run([sys.executable, "-m", "planner", "analyze", "acme/tiny"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
        Run(p.returncode, p.stdout, p.stderr).assert_error(var, "does not name a folder")
        assert hub.paths() == []
    assert list(work.iterdir()) == []


def test_the_telemetry_switch_is_put_back_after_the_headers_are_built(serve):
    # was: left True for the rest of the process (an in-process caller's huggingface_hub changed under it)
    from huggingface_hub import constants

    before = constants.HF_HUB_DISABLE_TELEMETRY
    serve(normal)
    assert run("analyze", "acme/tiny").code == 0
    assert constants.HF_HUB_DISABLE_TELEMETRY == before
