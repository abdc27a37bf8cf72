"""MODEL resolution, step 3: a Hugging Face id, read from the HF cache or fetched from the hub.

Only ``config.json`` is fetched, with one bounded request of our own through ``huggingface_hub``'s
HTTP session (its proxy and TLS settings, its ``HF_ENDPOINT``, its ``HF_TOKEN`` headers), and written
into the Hugging Face cache's own layout (``models--org--name/{blobs,snapshots,refs}``) so that
transformers and ``huggingface_hub`` find it there too.

Whatever a server sends, nothing is written outside that cache folder: the blob's name (the ETag)
and the commit (``X-Repo-Commit``) must be plain hex ids before anything touches the disk; every
file is written to a temporary name in its final folder and renamed; nothing ``.incomplete`` stays.

One request has one wall-clock budget, ``PLANNER_HUB_TIMEOUT`` (seconds, default 10), redirects and one
asked-for retry included: a server that asks to retry later than that (``Retry-After``) is an error
saying when; headers or a body still coming when the budget is spent (a byte at a time, ``100 Continue``
forever) are cut off by the waiting thread, whatever the HTTP client's per-read timeouts would allow;
a body over ``MAX_CONFIG_BYTES`` is refused while it streams. A token goes only where the request
went: a redirect to another scheme, host or port drops it.

The local cache is used first (``--refresh`` skips it); ``HF_HUB_OFFLINE=1`` uses the cache only;
``--revision`` pins a branch, tag or commit. Remote code is never run: the config is read as JSON.
``huggingface_hub`` is imported only here, only when a hub id is asked for.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from planner.analysis.config import MAX_CONFIG_BYTES, decode_config_bytes, read_config_file
from planner.analysis.errors import ConfigError, ModelNotFoundError, OptionError, PlannerError
from planner.analysis.fields import short
from planner.analysis.resolve import HF_ID, Resolved, find_bundled, not_found, resolve_local

#: A branch, tag or commit as the hub names them (``main``, ``v1.0``, ``refs/pr/1``, a 40-hex sha).
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+/-]{0,199}\Z")
#: A git commit id, as the hub sends it in ``X-Repo-Commit``.
COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
#: A blob id, as the hub sends it in ``ETag``: git's sha1 (40 hex) or an LFS sha256 (64 hex).
BLOB_ID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")

#: Seconds one request to the hub may take in all (``PLANNER_HUB_TIMEOUT`` overrides).
DEFAULT_TIMEOUT_S = 10.0
#: Redirects followed for one file (the hub uses one: to its resolve cache or a CDN).
MAX_REDIRECTS = 5

UNREACHABLE_HINT = ("check the network or HF_ENDPOINT; offline, use a bundled model ('planner models list'), a local "
                    "config.json, or set HF_HUB_OFFLINE=1 to use a copy cached by an earlier run")
REFRESH_HINT = "run again with --refresh to fetch it from the hub again"

#: ``huggingface_hub`` parses these as integers when it is imported.
_HF_INT_VARS = ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")


class HubError(ModelNotFoundError):
    """The hub (or what ``HF_ENDPOINT`` points at) answered in a way we cannot use."""


def resolve_model(model: str, revision: str | None = None, refresh: bool = False) -> Resolved:
    """A path, a bundled model, or a Hugging Face id (cache first unless ``refresh``, then a download)."""
    if revision is None:
        local = resolve_local(model)
        if local is not None:
            return local
    else:
        check_revision(revision)
        if resolve_local_path_only(model):
            raise OptionError("--revision applies to Hugging Face ids, not to files or bundled models")
    if not HF_ID.fullmatch(model):  # fullmatch: ``$`` alone would let a trailing newline into the URL
        bundled = find_bundled(model) if model.strip() else None
        if revision is not None and bundled is not None:
            raise OptionError(f"--revision applies to Hugging Face ids, and '{model}' is a bundled alias",
                              f"pass the id instead: {bundled.id} --revision {revision}")
        raise not_found(model)
    if ("--" in model or ".." in model or model.endswith(".git")
            or any(part.endswith(("-", ".")) for part in model.split("/"))):
        # huggingface_hub's validate_repo_id refuses these; "a--b/c" and "a/b--c" would share one cache folder
        raise not_found(model, "not a Hugging Face id: the hub's names have no '--' or '..' and do not end in "
                               "'-', '.' or '.git'")
    return fetch_config(model, revision, refresh=refresh)


def check_revision(revision: str) -> None:
    """A revision is a name for the hub's URL and for a file in the HF cache: no path tricks. As git's
    check-ref-format, no part starts with '.' or ends in '.lock' (``a/.`` would be cached as ``refs/a``)."""
    parts = revision.split("/")
    if (not REVISION.match(revision) or ".." in revision or "//" in revision or revision.endswith("/")
            or any(part.startswith(".") or part.endswith(".lock") for part in parts)):
        raise OptionError(f"--revision {short(revision)} is not a branch, tag or commit name",
                          "e.g. main, v1.0, refs/pr/1 or a 40-character commit sha")


def hub_timeout_s() -> float:
    """``PLANNER_HUB_TIMEOUT`` (seconds for one request to the hub, all included), default 10."""
    raw = os.environ.get("PLANNER_HUB_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 600):
        raise OptionError(f"PLANNER_HUB_TIMEOUT={short(raw)} is not a number of seconds in (0, 600]")
    return value


def resolve_local_path_only(model: str) -> bool:
    return os.path.exists(os.path.expanduser(model))


def _offline() -> bool:
    return (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").strip().lower() in (
        "1", "true", "yes", "on")


# ---- huggingface_hub and its environment -----------------------------------------------------------


def _import_hub():
    """``huggingface_hub`` after checking the environment it parses at import time."""
    for var in _HF_INT_VARS:
        raw = os.environ.get(var)
        if raw is not None and raw.strip():
            try:
                int(raw)
            except ValueError:
                raise OptionError(f"{var}={short(raw)} is not a whole number of seconds",
                                  f"huggingface_hub reads it; unset {var} or set e.g. {var}=10") from None
    if os.environ.get("HF_ENDPOINT"):
        _check_endpoint(os.environ["HF_ENDPOINT"].rstrip("/"))  # huggingface_hub parses it at import
    _check_cache_var()
    try:
        import huggingface_hub
        from huggingface_hub import constants
        from huggingface_hub.utils import build_hf_headers, get_session
    except ImportError:  # pragma: no cover - a declared dependency
        raise ModelNotFoundError("a Hugging Face id needs huggingface_hub, which is not installed",
                                 "pip install huggingface_hub") from None
    except Exception as exc:  # a setting it cannot parse
        first = (str(exc).splitlines() or [""])[0]
        raise OptionError(f"huggingface_hub cannot start: {type(exc).__name__}: {short(first, 120)}",
                          "check the HF_* environment variables") from None
    del huggingface_hub
    return constants, build_hf_headers, get_session


#: Where huggingface_hub puts its cache, the first of these that is set deciding (read at its import).
_CACHE_VARS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


#: ``$NAME`` / ``${NAME}`` left in a path after ``os.path.expandvars``: a variable that is not set.
_UNSET_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def _check_cache_var() -> None:
    """The variable that places the cache, set empty or to an unknown user's ``~name``: huggingface_hub would
    take it as a folder relative to the current one (``HF_HOME=`` means ``./hub``), and the planner would
    fill the current folder with ``models--*`` (the XDG spec reads an empty ``XDG_CACHE_HOME`` as unset)."""
    for var in _CACHE_VARS:
        raw = os.environ.get(var)
        if raw is None:
            continue
        expanded = os.path.expandvars(os.path.expanduser(raw))  # as huggingface_hub expands it
        if not raw.strip() or (raw.startswith("~") and os.path.expanduser(raw) == raw):
            raise OptionError(f"{var}={short(raw)} does not name a folder for the Hugging Face cache "
                              "(huggingface_hub would use one under the current folder)",
                              f"unset {var}, or set it to the path of a folder")
        unset = None if os.path.isabs(expanded) else _UNSET_VAR.search(expanded)  # '$NOPE/x' stays './$NOPE/x'
        if unset:
            raise OptionError(f"{var}={short(raw)} names a variable that is not set ({unset[0]}); "
                              "huggingface_hub would make a folder of that name under the current one",
                              f"set that variable, or set {var} to the path of a folder")
        return


def _endpoint(constants) -> str:
    return _check_endpoint(str(constants.ENDPOINT))


def _check_endpoint(raw: str) -> str:
    bad = OptionError(f"HF_ENDPOINT={short(raw)} is not an http(s) URL",
                      "e.g. HF_ENDPOINT=https://huggingface.co, or unset it")
    if not raw.isprintable() or any(c.isspace() for c in raw):
        raise bad
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise bad
    return raw.rstrip("/")


def _headers(constants, build_hf_headers, where: str) -> dict[str, str]:
    # Telemetry off while the user-agent is built: otherwise huggingface_hub asks HF_ENDPOINT for an agent
    # registry (one more request, with its own timeout) and looks for torch. The planner asks for one file.
    from planner.analysis.files import regular_file_or_error

    regular_file_or_error(getattr(constants, "HF_TOKEN_PATH", ""), what="token file", error=OptionError)  # no FIFO
    saved = constants.HF_HUB_DISABLE_TELEMETRY
    constants.HF_HUB_DISABLE_TELEMETRY = True
    try:
        headers = dict(build_hf_headers())
    except OSError as exc:  # the saved token's file under HF_HOME
        raise PlannerError(f"{where}: cannot use the Hugging Face cache folder: {exc.strerror or type(exc).__name__}"
                           f"{': ' + str(exc.filename) if exc.filename else ''}",
                           "set HF_HOME (or HF_HUB_CACHE) to a writable folder") from None
    except Exception as exc:
        raise OptionError(f"cannot build the hub's request headers: {type(exc).__name__}",
                          "check HF_TOKEN and the token file under HF_HOME") from None
    finally:
        constants.HF_HUB_DISABLE_TELEMETRY = saved  # huggingface_hub's setting, as it was (in-process callers)
    for key, value in headers.items():
        if not (value.isascii() and value.isprintable()):
            if key.lower() == "authorization":  # never echo the token
                raise OptionError("HF_TOKEN (or the saved token) holds characters a token cannot have",
                                  "a Hugging Face token is ASCII letters and digits (hf_...)")
            headers[key] = value.encode("ascii", "replace").decode("ascii")
    headers["Accept-Encoding"] = "identity"  # the stored file is the file, byte for byte
    return headers


# ---- the cache, in huggingface_hub's layout ----------------------------------------------------------


class HubCache:
    """``<HF_HUB_CACHE>/models--org--name`` with ``refs/<revision>``, ``blobs/<etag>`` and
    ``snapshots/<commit>/config.json`` (a relative symlink to the blob, or a copy)."""

    def __init__(self, root: str | os.PathLike, repo_id: str):
        self.root = Path(root)
        self.repo = self.root / ("models--" + repo_id.replace("/", "--"))

    def commit_of(self, revision: str) -> str | None:
        if COMMIT.match(revision):
            return revision
        try:
            from planner.analysis.files import read_bounded

            text = read_bounded(self.repo / "refs" / revision, 128, what="ref file").decode("ascii").strip()
        except (OSError, PlannerError, UnicodeDecodeError):
            return None
        return text if COMMIT.match(text) else None

    def lookup(self, revision: str) -> Path | None:
        commit = self.commit_of(revision)
        if commit is None:
            return None
        path = self.repo / "snapshots" / commit / "config.json"
        return path if os.path.lexists(path) else None

    def _inside(self, path: Path) -> Path:
        """``path``, its folder checked to lie inside the cache root (after resolving links, also of a folder
        not made yet: checked before ``mkdir``, so that a linked ``models--*`` grows no folder elsewhere)."""
        root = os.path.realpath(self.root)
        folder = os.path.realpath(path.parent)
        if not (folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)):
            raise PlannerError(f"refusing to write {path}: it lies outside the Hugging Face cache {self.root}")
        return path

    def store(self, revision: str, commit: str, etag: str, data: bytes) -> Path:
        if not (COMMIT.match(commit) and BLOB_ID.match(etag)):  # checked by the caller too: never a path
            raise PlannerError("refusing to cache a file under a name that is not a hex id")
        blob = self.repo / "blobs" / etag
        snapshot = self.repo / "snapshots" / commit / "config.json"
        for path in (blob, snapshot):
            self._inside(path).parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(self._inside(blob), data)
        try:
            _atomic_symlink(self._inside(snapshot), Path("..") / ".." / "blobs" / etag)
        except (NotImplementedError, OSError) as exc:
            if getattr(exc, "errno", None) == 28:  # ENOSPC: the copy would fail too
                raise
            _atomic_write(snapshot, data)  # no symlinks here (Windows without developer mode)
        if revision != commit:
            ref = self.repo / "refs" / revision
            self._inside(ref).parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(self._inside(ref), commit.encode("ascii"))
        return snapshot


def _atomic_write(path: Path, data: bytes) -> None:
    import tempfile  # only when a file is written (start-up: bench/startup.py)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".planner-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _replace_or_remove(tmp, path)


def _atomic_symlink(path: Path, target: Path) -> None:
    tmp = path.parent / f".planner-{os.getpid()}-{time.monotonic_ns()}.tmp"
    os.symlink(target, tmp)
    _replace_or_remove(tmp, path)


def _replace_or_remove(tmp: str | Path, path: Path) -> None:
    """Move ``tmp`` into place; on any failure (or an interrupt) remove it, so nothing is left behind."""
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(p: str | Path) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


# ---- fetching ------------------------------------------------------------------------------------------


def fetch_config(repo_id: str, revision: str | None = None, refresh: bool = False) -> Resolved:
    where = f"{repo_id}{'@' + revision if revision else ''}"
    rev = revision or "main"
    timeout_s = hub_timeout_s()
    offline = _offline()
    if refresh and offline:
        raise OptionError("--refresh fetches from the hub, and HF_HUB_OFFLINE is set", "unset HF_HUB_OFFLINE")
    constants, build_hf_headers, get_session = _import_hub()
    cache = HubCache(constants.HF_HUB_CACHE, repo_id)
    if not refresh:
        cached = cache.lookup(rev)
        if cached is not None:
            try:
                cfg = read_config_file(cached)
            except ConfigError as exc:
                raise ConfigError(f"{exc.message} (the cached copy of {where} config.json)",
                                  _join(exc.hint, REFRESH_HINT)) from None
            return Resolved(cfg, repo_id, "hub-cache", str(cached), f"{where} config.json")
    if offline:
        raise not_found(repo_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    url = f"{_endpoint(constants)}/{repo_id}/resolve/{quote(rev, safe='')}/config.json"
    headers = _headers(constants, build_hf_headers, where)
    data, commit, etag = _download(get_session, url, headers, timeout_s, where, revision)
    cfg = decode_config_bytes(data, f"{where} config.json (from the hub)")
    try:
        path = cache.store(rev, commit, etag, data)
    except OSError as exc:
        raise PlannerError(f"{where}: cannot write to the Hugging Face cache: {exc.strerror or type(exc).__name__}"
                           f"{': ' + str(exc.filename) if exc.filename else ''}",
                           "free some space, or set HF_HOME (or HF_HUB_CACHE) to a writable folder") from None
    return Resolved(cfg, repo_id, "hub", str(path), f"{where} config.json")


def _join(*hints: str | None) -> str:
    return "; ".join(h for h in hints if h)


def _header(response, name: str) -> str | None:
    value = response.headers.get(name)
    return None if value is None else str(value)


def _etag(raw: str | None) -> str | None:
    """An ETag header's value without ``W/`` and quotes."""
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("W/"):
        text = text[2:]
    return text.strip('"')


#: A ``Retry-After`` longer than this (a year) is read as this: an error either way, and a time ``gmtime`` can print.
MAX_RETRY_AFTER_S = 366 * 86400.0


def _retry_after_s(response) -> float | None:
    """``Retry-After`` in seconds (delay-seconds or an HTTP-date), at most ``MAX_RETRY_AFTER_S``; None when it is
    absent or neither (a negative number, ``²``: ``str.isdigit`` is true for it and ``float`` refuses it)."""
    raw = _header(response, "retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    if re.fullmatch(r"[0-9]+", raw):
        return min(float(raw) if len(raw) <= 12 else math.inf, MAX_RETRY_AFTER_S)
    try:
        import email.utils  # only for a Retry-After date

        when = email.utils.parsedate_to_datetime(raw)
        wait_s = when.timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError, AttributeError):
        return None
    return min(max(0.0, wait_s), MAX_RETRY_AFTER_S)


def _exc_names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def _download(get_session, url: str, headers: dict[str, str], timeout_s: float, where: str,
              revision: str | None) -> tuple[bytes, str, str]:
    """(body, commit, blob id) of one GET, redirects followed, all within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    tried_again = False
    while True:
        try:
            return _within_budget(lambda watch: _get(get_session(), url, dict(headers), deadline, timeout_s, where,
                                                     revision, watch), deadline, timeout_s, where)
        except _RetryLater as later:
            left = deadline - time.monotonic()
            if later.wait_s >= MAX_RETRY_AFTER_S:
                raise HubError(f"{where}: the hub answered HTTP {later.status} and asks to retry in more than a year",
                               "check HF_ENDPOINT and any proxy") from None
            at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(time.time() + later.wait_s))
            if tried_again:
                raise HubError(f"{where}: the hub answered HTTP {later.status} again after the one retry it asked for "
                               f"(now: retry in {later.wait_s:.0f} s, after {at})",
                               "try again after that time") from None
            if later.wait_s > left:
                raise HubError(f"{where}: the hub answered HTTP {later.status} and asks to retry in "
                               f"{later.wait_s:.0f} s (after {at}), longer than PLANNER_HUB_TIMEOUT={timeout_s:g} s",
                               "try again after that time, or raise PLANNER_HUB_TIMEOUT") from None
            tried_again = True
            time.sleep(later.wait_s)


class _Watch:
    """One request's sockets and progress, shared by the thread that reads it and the one that waits for it.

    The HTTP client's timeouts are per read: a server that sends a byte a second, or ``100 Continue`` forever,
    never trips them. So the request runs in a daemon thread; at the deadline the waiting thread shuts its
    sockets down (which ends a blocked read at once) and answers the error itself. The sockets are taken from
    the client's ``trace`` extension when it connects (and from the response for a reused connection)."""

    def __init__(self):
        import threading  # only when a request is made (start-up: bench/startup.py)

        self.lock = threading.Lock()
        self.sockets: list = []
        self.received: int | None = None  # bytes of body so far; None until the headers have come
        self.expired = False

    def trace(self, event: str, info: dict) -> None:
        if event.endswith(("connect_tcp.complete", "start_tls.complete")):
            self.add(info.get("return_value"))

    def add(self, stream) -> None:
        get = getattr(stream, "get_extra_info", None)
        sock = get("socket") if callable(get) else None
        if sock is None:
            return
        with self.lock:
            self.sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def cut(self) -> None:
        with self.lock:
            self.expired = True
            for sock in self.sockets:
                _shutdown(sock)


def _shutdown(sock) -> None:
    import socket

    try:
        sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError):
        pass


def _within_budget(request, deadline: float, timeout_s: float, where: str):
    """``request(watch)``'s result, or its error, if it ends by ``deadline``; else the budget's error."""
    import threading

    watch = _Watch()
    box: dict = {}

    def work() -> None:
        try:
            box["value"] = request(watch)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="planner-hub-request", daemon=True)
    worker.start()
    late = True  # an interrupt in join: cut too
    try:
        worker.join(max(0.0, deadline - time.monotonic()))
        late = worker.is_alive()
    finally:
        if late:  # the deadline, or an interrupt: no read of ours goes on
            watch.cut()
    if late:  # (decided once: the cut read may end the thread before this line, with the cut's own error)
        if watch.received is not None:
            raise HubError(f"{where}: config.json was still arriving after PLANNER_HUB_TIMEOUT={timeout_s:g} s "
                           f"({watch.received} bytes so far); nothing was written",
                           "try again, or raise PLANNER_HUB_TIMEOUT for a slow link")
        raise HubError(f"{where}: the hub is unreachable (no complete answer within {timeout_s:g} s)", UNREACHABLE_HINT)
    if "error" in box:
        raise box["error"]
    return box["value"]


class _RetryLater(Exception):
    def __init__(self, status: int, wait_s: float):
        self.status, self.wait_s = status, wait_s


def _get(session, url: str, headers: dict[str, str], deadline: float, timeout_s: float, where: str,
         revision: str | None, watch: _Watch) -> tuple[bytes, str, str]:
    commit: str | None = None
    linked_etag: str | None = None
    origin = _origin(url)
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise HubError(f"{where}: the hub is unreachable (no answer within {timeout_s:g} s)", UNREACHABLE_HINT)
            with session.stream("GET", url, headers=headers, follow_redirects=False, timeout=left,
                                extensions={"trace": watch.trace}) as resp:
                watch.add(resp.extensions.get("network_stream"))  # a reused connection was not traced
                status = resp.status_code
                commit = commit or _header(resp, "x-repo-commit")
                linked_etag = linked_etag or _header(resp, "x-linked-etag")
                if 300 <= status < 400 and _header(resp, "location"):
                    url = _next_url(url, _header(resp, "location"), where)
                    if _origin(url) != origin:  # a CDN, or http: the token stays with the hub (and TLS)
                        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                    continue
                if not 200 <= status < 300:
                    _raise_status(resp, status, where, revision)
                blob = _etag(linked_etag) if linked_etag is not None else _etag(_header(resp, "etag"))
                _check_ids(commit, blob, where, revision)
                data = _read_body(resp, deadline, timeout_s, where, watch)
                return data, commit, blob  # type: ignore[return-value]
        raise HubError(f"{where}: the hub redirected more than {MAX_REDIRECTS} times", "check HF_ENDPOINT and any proxy")
    except PlannerError:
        raise
    except _RetryLater:
        raise
    except Exception as exc:  # the HTTP client's errors, named without importing it
        names = _exc_names(exc)
        if names & {"TimeoutException", "Timeout", "ReadTimeout", "ConnectTimeout", "PoolTimeout", "WriteTimeout"}:
            raise HubError(f"{where}: the hub is unreachable (no answer within {timeout_s:g} s)", UNREACHABLE_HINT) from None
        if "DecodingError" in names:
            raise HubError(f"{where}: the hub's answer could not be decoded ({short(str(exc), 80)})",
                           "the server sent a compressed body it declared wrongly; check HF_ENDPOINT and any proxy") from None
        if "RemoteProtocolError" in names:
            raise HubError(f"{where}: the hub broke off its answer ({short(str(exc), 80)}) after "
                           f"{watch.received or 0} bytes",
                           "try again; check HF_ENDPOINT and any proxy") from None
        if names & {"InvalidURL", "UnsupportedProtocol", "LocalProtocolError"}:
            raise OptionError(f"HF_ENDPOINT: cannot request {short(url, 120)}: {short(str(exc), 80)}",
                              "set HF_ENDPOINT to an http(s) URL, or unset it") from None
        if names & {"ConnectError", "NetworkError", "ProxyError", "TransportError", "ConnectionError"}:
            raise HubError(f"{where}: the Hugging Face hub is unreachable ({type(exc).__name__}) and config.json is not cached",
                           UNREACHABLE_HINT) from None
        if "OfflineModeIsEnabled" in names:
            raise not_found(where.split("@", 1)[0], "not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from None
        if isinstance(exc, OSError):
            raise HubError(f"{where}: the hub request failed: {exc.strerror or type(exc).__name__}", UNREACHABLE_HINT) from None
        raise


def _next_url(url: str, location: str | None, where: str) -> str:
    try:
        nxt = urljoin(url, location or "")
        parts = urlsplit(nxt)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:  # "http://[::1", "http://h:99999"
        raise HubError(f"{where}: the hub redirected to a malformed URL: {short(location, 80)}",
                       "check HF_ENDPOINT and any proxy") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HubError(f"{where}: the hub redirected to a URL that is not http(s): {short(nxt, 80)}",
                       "check HF_ENDPOINT and any proxy")
    return nxt


def _origin(url: str) -> tuple[str, str]:
    """What a token is bound to: scheme and host:port (``https://hub`` to ``http://hub`` is another origin)."""
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _check_ids(commit: str | None, blob: str | None, where: str, revision: str | None) -> None:
    if not commit and not blob:
        raise HubError(f"{where}: {os.environ.get('HF_ENDPOINT') or 'the hub'} does not answer like a Hugging Face hub "
                       "(no X-Repo-Commit or ETag header)", "check HF_ENDPOINT and any proxy")
    if not commit or not COMMIT.match(commit):
        raise HubError(f"{where}: the hub sent X-Repo-Commit {short(commit)}, which is not a 40-hex commit id; nothing was written",
                       "check HF_ENDPOINT: a Hugging Face hub names commits by their git sha")
    if not blob or not BLOB_ID.match(blob):
        raise HubError(f"{where}: the hub sent ETag {short(blob)}, which is not a file's hex id; nothing was written",
                       "check HF_ENDPOINT: a Hugging Face hub names files by their git sha1 or sha256")
    if revision is not None and COMMIT.match(revision) and commit != revision:
        raise HubError(f"{where}: asked for commit {revision}, the hub answered commit {commit}",
                       "check HF_ENDPOINT and any proxy")


def _raise_status(resp, status: int, where: str, revision: str | None) -> None:
    code = _header(resp, "x-error-code") or ""
    repo_id = where.split("@", 1)[0]
    access_hint = "set HF_TOKEN to a valid token, and accept the model's licence on huggingface.co if it is gated"
    if status in (429, 500, 502, 503, 504):
        wait_s = _retry_after_s(resp)
        if wait_s is not None:
            raise _RetryLater(status, wait_s)
    if code == "GatedRepo":
        raise HubError(f"{where}: gated model; access was refused (HTTP {status})",
                       "accept the licence on the model's page on huggingface.co and set HF_TOKEN to a token of that account")
    if code == "RevisionNotFound":
        raise HubError(f"{where}: revision '{revision or 'main'}' does not exist",
                       "pass a branch, tag or commit of the repository (default: main)")
    if code == "EntryNotFound":
        raise HubError(f"{where}: the repository has no config.json", "is it a model repository of transformers weights?")
    if code == "RepoNotFound" or (status == 404 and not code):
        # the hub answers 401 RepoNotFound to anonymous requests for missing *and* private repos
        raise not_found(repo_id, "no such repository on the Hugging Face hub (a private one needs HF_TOKEN)")
    if status in (401, 403):
        raise HubError(f"{where}: access refused (HTTP {status})", access_hint)
    message = _header(resp, "x-error-message")
    detail = f": {short(message, 120)}" if message else ""
    raise HubError(f"{where}: the Hugging Face hub answered HTTP {status}{detail} and config.json is not cached",
                   "try again later, or " + UNREACHABLE_HINT.split("; ", 1)[1])


def _read_body(resp, deadline: float, timeout_s: float, where: str, watch: _Watch) -> bytes:
    encoding = (_header(resp, "content-encoding") or "identity").strip().lower()
    declared: int | None = None
    raw_length = _header(resp, "content-length")
    if raw_length is not None:
        try:
            declared = int(raw_length)
        except ValueError:
            raise HubError(f"{where}: the hub sent Content-Length {short(raw_length)}, not a number",
                           "check HF_ENDPOINT and any proxy") from None
        if encoding == "identity" and declared > MAX_CONFIG_BYTES:
            raise HubError(f"{where}: the hub's config.json is {declared} bytes, more than the {MAX_CONFIG_BYTES} "
                           "a config.json may have; nothing was downloaded", "check the model id and HF_ENDPOINT")
    buf = bytearray()
    watch.received = 0
    for chunk in resp.iter_bytes():
        buf += chunk
        watch.received = len(buf)
        if len(buf) > MAX_CONFIG_BYTES:
            raise HubError(f"{where}: the hub's config.json is more than {MAX_CONFIG_BYTES} bytes; the download was "
                           "stopped there and nothing was written", "check the model id and HF_ENDPOINT")
        if time.monotonic() > deadline:
            raise HubError(f"{where}: config.json was still arriving after PLANNER_HUB_TIMEOUT={timeout_s:g} s "
                           f"({len(buf)} bytes so far); nothing was written",
                           "try again, or raise PLANNER_HUB_TIMEOUT for a slow link")
    if encoding == "identity" and declared is not None and len(buf) != declared:
        raise HubError(f"{where}: the hub announced {declared} bytes and sent {len(buf)}; nothing was written",
                       "try again; check HF_ENDPOINT and any proxy")
    return bytes(buf)
