"""A local stand-in for the Hugging Face hub's file endpoint, for tests of the model-id path.

It answers ``HEAD`` and ``GET /{org}/{name}/resolve/{revision}/{filename}`` the way huggingface.co does
for a small (non-LFS) file, with the headers ``huggingface_hub.hf_hub_download`` needs:

- ``X-Repo-Commit``: the 40-hex commit the revision resolves to (required: without it the client
  refuses the answer);
- ``ETag``: the blob's id (the cache stores the file under ``blobs/<etag>``);
- ``Content-Length``: the size (the client checks the downloaded size against it).

Errors carry the hub's ``X-Error-Code`` header, which is how the client tells them apart:
``RepoNotFound`` (401/404), ``GatedRepo`` (401/403), ``RevisionNotFound`` (404), ``EntryNotFound``
(404). A repository can also answer a fixed status (403 without a code, 500 ...), redirect like the
hub does (a relative 307 to ``/api/resolve-cache/...``), or answer like a plain web server (``bare``).

Everything is bounded: the server binds 127.0.0.1 on a free port, runs in a daemon thread, and
``stop()`` (or leaving the ``with`` block) shuts it down. ``hang=True`` makes it accept and never
answer until stopped, which the client sees as a timeout. ``refused_url()`` gives a URL nothing
listens on. A repository can also answer like a hostile mirror: any header replaced or dropped
(``headers``: a traversal ``ETag``, a ``Retry-After``, a lying ``Content-Length``), or a body sent at
1 byte per 0.1 s, without end, or declared gzip and not. Every request is recorded in ``requests`` as ``(method, path, headers)``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


def commit_of(name: str) -> str:
    """A stable fake 40-hex commit id."""
    return hashlib.sha1(name.encode()).hexdigest()


@dataclass
class Repo:
    """One model repository: ``refs`` maps branch/tag names to commits, ``files`` commit -> {name: bytes}."""

    refs: dict[str, str] = field(default_factory=dict)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    gated: bool = False  # answer 401 GatedRepo (no token) / 403 GatedRepo (a token without access)
    status: int | None = None  # answer this status (no error code) to everything
    redirect: bool = False  # answer the resolve URL with a relative 307 to a resolve-cache URL, like the hub
    bare: bool = False  # answer like a plain web server: 200 and the file, without the hub's headers
    # hostile answers (a mirror an attacker controls, or a broken proxy):
    headers: dict[str, str | None] = field(default_factory=dict)  # set (or, with None, drop) these headers
    body: str = "normal"  # "slow": 1 byte per 0.1 s; "endless": zeros until the client goes; "bad-gzip"

    def add(self, files: dict[str, bytes | dict], ref: str = "main", commit: str | None = None) -> str:
        commit = commit or commit_of(f"{ref}:{sorted(files)}:{len(self.files)}")
        self.files[commit] = {k: (json.dumps(v).encode() if isinstance(v, dict) else v) for k, v in files.items()}
        if ref:
            self.refs[ref] = commit
        return commit


class FakeHub:
    def __init__(self, *, hang: bool = False):
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.hang = hang
        self._stop = threading.Event()
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30  # a socket timeout on the server side too: no thread can live forever

            def log_message(self, *args):  # keep pytest's output clean
                pass

            def do_HEAD(self):
                hub._handle(self, body=False)

            def do_GET(self):
                hub._handle(self, body=True)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that hung up: recorded, not printed
                hub.errors.append(sys.exc_info()[1])

        self.errors: list[BaseException | None] = []
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # ---- lifecycle -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeHub":
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> "FakeHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- content ---------------------------------------------------------------------------------

    def repo(self, repo_id: str, **kw) -> Repo:
        r = self.repos.setdefault(repo_id, Repo())
        for k, v in kw.items():
            setattr(r, k, v)
        return r

    def paths(self, method: str | None = None) -> list[str]:
        with self._lock:
            return [p for m, p, _ in self.requests if method is None or m == method]

    # ---- answering -------------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        with self._lock:
            self.requests.append((h.command, h.path, dict(h.headers)))
        if self.hang:
            self._stop.wait(30)  # accept, read the request, never answer (until stopped)
            h.close_connection = True
            return
        status, headers, content, mode = self._answer(h.command, urlsplit(h.path).path, h.headers.get("authorization"))
        headers = {"Content-Length": str(len(content)), **headers}
        if mode == "endless":
            headers.pop("Content-Length")
            headers["Connection"] = "close"
            h.close_connection = True
        if mode == "bad-gzip":
            headers["Content-Encoding"] = "gzip"  # ... and a body that is not gzip
        h.send_response(status)
        for k, v in headers.items():
            if v is not None:
                h.send_header(k, v)
        h.end_headers()
        if not body:
            return
        try:
            if mode == "slow":
                for i in range(len(content)):
                    if self._stop.wait(0.1):
                        return
                    h.wfile.write(content[i:i + 1])
                    h.wfile.flush()
            elif mode == "endless":
                chunk = b"0" * 65536
                while not self._stop.is_set():
                    h.wfile.write(chunk)
            elif content:
                h.wfile.write(content)
        except OSError:  # the client hung up: what a bounded client does
            h.close_connection = True

    def _answer(self, method: str, path: str, auth: str | None) -> tuple[int, dict[str, str], bytes]:
        parts = path.lstrip("/").split("/")
        if parts[:3] == ["api", "resolve-cache", "models"] and len(parts) >= 7:
            # /api/resolve-cache/models/{org}/{name}/{commit}/{filename}: where the hub redirects to
            repo_id, revision, filename = f"{parts[3]}/{parts[4]}", parts[5], "/".join(parts[6:])
            return self._file(repo_id, revision, filename, auth, redirected=True)
        if len(parts) < 5 or parts[2] != "resolve":
            return 404, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}, b"Not Found", "normal"
        repo_id, revision, filename = f"{parts[0]}/{parts[1]}", unquote(parts[3]), unquote("/".join(parts[4:]))
        return self._file(repo_id, revision, filename, auth)

    def _file(self, repo_id: str, revision: str, filename: str, auth: str | None, redirected: bool = False):
        status, headers, content = self._file_answer(repo_id, revision, filename, auth, redirected)
        repo = self.repos.get(repo_id)
        if repo is None:
            return status, headers, content, "normal"
        return status, {**headers, **repo.headers}, content, repo.body

    def _file_answer(self, repo_id: str, revision: str, filename: str, auth: str | None, redirected: bool):
        repo = self.repos.get(repo_id)
        if repo is None:
            # the hub answers 401 to anonymous requests for a repo that does not exist (or is private)
            code = 404 if auth else 401
            return code, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}, b"Repository not found"
        if repo.status is not None:
            return repo.status, {}, b"nope"
        if repo.gated:
            msg = f"Access to model {repo_id} is restricted. You must have access to it and be authenticated to access it."
            return (403 if auth else 401), {"X-Error-Code": "GatedRepo", "X-Error-Message": msg}, msg.encode()
        commit = repo.refs.get(revision, revision if revision in repo.files else None)
        if commit is None:
            return 404, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id: " + revision}, b"Invalid rev id"
        content = repo.files[commit].get(filename)
        if content is None:
            return 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit,
                         "X-Error-Message": "Entry not found"}, b"Entry not found"
        if repo.bare:
            return 200, {"Content-Type": "application/json"}, content
        etag = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # git's blob id
        headers = {"X-Repo-Commit": commit, "ETag": f'"{etag}"', "Content-Type": "application/json",
                   "Accept-Ranges": "bytes"}
        if repo.redirect and not redirected:
            headers["Location"] = f"/api/resolve-cache/models/{repo_id}/{commit}/{filename}"
            headers["X-Linked-Etag"] = headers.pop("ETag")
            headers["X-Linked-Size"] = str(len(content))
            return 307, headers, b""
        return 200, headers, content


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"
