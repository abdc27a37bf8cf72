"""MODEL resolution, step 3: a Hugging Face id through ``huggingface_hub``.

Only ``config.json`` (and, when present in the cache, ``model.safetensors.index.json``) is fetched.
The local HF cache is used first; ``HF_TOKEN`` authenticates gated models; ``HF_HUB_OFFLINE=1`` uses
the cache only; ``HF_ENDPOINT`` points elsewhere; ``PLANNER_HUB_TIMEOUT`` bounds each request (seconds,
default 10). ``--revision`` pins a branch, tag or commit. Remote code is never run: the config is read
as JSON. ``huggingface_hub`` is imported only here, only when a hub id is asked for.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager

from planner.analysis.config import read_config_file
from planner.analysis.errors import ModelNotFoundError, OptionError, PlannerError
from planner.analysis.resolve import HF_ID, Resolved, find_bundled, not_found, resolve_local

#: A branch, tag or commit as the hub names them (``main``, ``v1.0``, ``refs/pr/1``, a 40-hex sha).
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+/-]{0,199}$")

#: Seconds to wait for the hub's answer to one request (``PLANNER_HUB_TIMEOUT`` overrides).
DEFAULT_TIMEOUT_S = 10.0

UNREACHABLE_HINT = ("check the network or HF_ENDPOINT; offline, use a bundled model ('planner models list'), a local "
                    "config.json, or set HF_HUB_OFFLINE=1 to use a copy cached by an earlier run")


def resolve_model(model: str, revision: str | None = None) -> Resolved:
    """A path, a bundled model, or a Hugging Face id (cache first, then a download)."""
    if revision is None:
        local = resolve_local(model)
        if local is not None:
            return local
    else:
        check_revision(revision)
        if resolve_local_path_only(model):
            raise OptionError("--revision applies to Hugging Face ids, not to files or bundled models")
    if not HF_ID.match(model):
        bundled = find_bundled(model) if model.strip() else None
        if revision is not None and bundled is not None:
            raise OptionError(f"--revision applies to Hugging Face ids, and '{model}' is a bundled alias",
                              f"pass the id instead: {bundled.id} --revision {revision}")
        raise not_found(model)
    return fetch_config(model, revision)


def check_revision(revision: str) -> None:
    """A revision is a name for the hub's URL and for a file in the HF cache: no path tricks."""
    if (not REVISION.match(revision) or ".." in revision or "//" in revision
            or revision.endswith(("/", ".lock"))):
        raise OptionError(f"--revision {revision!r} is not a branch, tag or commit name",
                          "e.g. main, v1.0, refs/pr/1 or a 40-character commit sha")


def hub_timeout_s() -> float:
    """``PLANNER_HUB_TIMEOUT`` (seconds per request to the hub), default 10."""
    raw = os.environ.get("PLANNER_HUB_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 600):
        raise OptionError(f"PLANNER_HUB_TIMEOUT={raw!r} is not a number of seconds in (0, 600]")
    return value


def resolve_local_path_only(model: str) -> bool:
    return os.path.exists(os.path.expanduser(model))


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def fetch_config(repo_id: str, revision: str | None = None) -> Resolved:
    try:
        import huggingface_hub
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - a declared dependency
        raise ModelNotFoundError(f"'{repo_id}' looks like a Hugging Face id, but huggingface_hub is not installed",
                                 "pip install huggingface_hub") from None
    where = f"{repo_id}{'@' + revision if revision else ''}"
    timeout_s = hub_timeout_s()
    with _quiet_hub(timeout_s):
        return _fetch(huggingface_hub, hf_errors, repo_id, revision, where, timeout_s)


@contextmanager
def _quiet_hub(timeout_s: float = DEFAULT_TIMEOUT_S):
    """huggingface_hub logs each retry on stderr and backs off ~23 s on an unreachable host; a CLI
    that promises one ``Error:`` line keeps its logger at ERROR and retries once. Its second try after
    a timeout waits 60 s (``_ETAG_RETRY_TIMEOUT``): bounded here by ``timeout_s`` too. Its
    telemetry (an extra request for an agent registry, with its own 3 s timeout) is turned off: the
    planner asks the hub for one file."""
    import logging

    import huggingface_hub.file_download as fd  # (importing configures the library's logger level)
    from huggingface_hub import constants

    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.ERROR)
    saved_retry_timeout = getattr(fd, "_ETAG_RETRY_TIMEOUT", None)
    if saved_retry_timeout is not None:
        fd._ETAG_RETRY_TIMEOUT = timeout_s
    saved_telemetry = constants.HF_HUB_DISABLE_TELEMETRY
    constants.HF_HUB_DISABLE_TELEMETRY = True
    saved = None
    try:
        from huggingface_hub.utils import _http

        saved = []
        for name in ("http_backoff", "_http_backoff_base"):
            fn = getattr(_http, name, None)
            if fn is not None and isinstance(getattr(fn, "__kwdefaults__", None), dict) and "max_retries" in fn.__kwdefaults__:
                saved.append((fn, dict(fn.__kwdefaults__)))
                fn.__kwdefaults__.update(max_retries=1, base_wait_time=0.5)
    except Exception:  # a private helper: if it moved, keep the library's defaults
        saved = None
    try:
        yield
    finally:
        logger.setLevel(level)
        if saved_retry_timeout is not None:
            fd._ETAG_RETRY_TIMEOUT = saved_retry_timeout
        constants.HF_HUB_DISABLE_TELEMETRY = saved_telemetry
        for fn, defaults in saved or ():
            fn.__kwdefaults__.update(defaults)


def _status(exc: BaseException | None) -> int | None:
    return getattr(getattr(exc, "response", None), "status_code", None)


def _fetch(huggingface_hub, hf_errors, repo_id: str, revision: str | None, where: str,
           timeout_s: float = DEFAULT_TIMEOUT_S) -> Resolved:
    kwargs = dict(repo_id=repo_id, filename="config.json", revision=revision, etag_timeout=timeout_s)
    source = "hub"
    access_hint = "set HF_TOKEN to a valid token, and accept the model's licence on huggingface.co if it is gated"
    try:
        try:
            path = huggingface_hub.hf_hub_download(**kwargs, local_files_only=True)
            source = "hub-cache"
        except hf_errors.LocalEntryNotFoundError:
            if _offline():
                raise
            path = huggingface_hub.hf_hub_download(**kwargs)
    except hf_errors.GatedRepoError as exc:
        raise ModelNotFoundError(
            f"{where}: gated model; access was refused (HTTP {_status(exc)})",
            "accept the licence on the model's page on huggingface.co and set HF_TOKEN to a token of that account") from None
    except hf_errors.RevisionNotFoundError:
        raise ModelNotFoundError(f"{where}: revision '{revision}' does not exist",
                                 "pass a branch, tag or commit of the repository (default: main)") from None
    except hf_errors.RepositoryNotFoundError:
        # the hub answers 401 RepoNotFound to anonymous requests for missing *and* private repos
        raise not_found(repo_id, "no such repository on the Hugging Face hub (a private one needs HF_TOKEN)") from None
    except hf_errors.LocalEntryNotFoundError as exc:  # (a subclass of EntryNotFoundError: keep it first)
        if _offline():
            raise not_found(repo_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from None
        cause = exc.__cause__
        status = _status(cause)
        if status in (401, 403):
            raise ModelNotFoundError(f"{where}: access refused (HTTP {status})", access_hint) from None
        if status is not None:
            raise ModelNotFoundError(f"{where}: the Hugging Face hub answered HTTP {status} and config.json is not cached",
                                     "try again later, or " + UNREACHABLE_HINT.split("; ", 1)[1]) from None
        if isinstance(cause, getattr(hf_errors, "FileMetadataError", ())):
            raise ModelNotFoundError(
                f"{where}: {os.environ.get('HF_ENDPOINT') or 'the hub'} does not answer like a Hugging Face hub "
                "(no X-Repo-Commit or ETag header)", "check HF_ENDPOINT and any proxy") from None
        why = ""
        if cause is not None:
            why = (f" (no answer within {timeout_s:g} s)" if "Timeout" in type(cause).__name__
                   else f" ({type(cause).__name__})")
        raise ModelNotFoundError(f"{where}: the Hugging Face hub is unreachable{why} and config.json is not cached",
                                 UNREACHABLE_HINT) from None
    except hf_errors.EntryNotFoundError:
        raise ModelNotFoundError(f"{where}: the repository has no config.json",
                                 "is it a model repository of transformers weights?") from None
    except hf_errors.OfflineModeIsEnabled:
        raise not_found(repo_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from None
    except hf_errors.HfHubHTTPError as exc:
        status = _status(exc)
        if status in (401, 403):
            raise ModelNotFoundError(f"{where}: access refused (HTTP {status})", access_hint) from None
        if status == 404:
            raise not_found(repo_id, "no such repository on the Hugging Face hub") from None
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelNotFoundError(f"{where}: the hub answered HTTP {status}: {first}") from None
    except hf_errors.HFValidationError as exc:
        raise not_found(repo_id, f"not a valid Hugging Face id ({str(exc).splitlines()[0]})") from None
    except OSError as exc:  # connection refused, timeouts surface as OSError subclasses in some versions
        if getattr(exc, "filename", None):  # a file of the cache, not the network
            raise PlannerError(f"{where}: cannot use the Hugging Face cache: {exc.strerror or type(exc).__name__}: "
                               f"{exc.filename}", "set HF_HOME (or HF_HUB_CACHE) to a writable folder") from None
        raise ModelNotFoundError(f"{where}: the Hugging Face hub is unreachable ({type(exc).__name__})",
                                 UNREACHABLE_HINT) from None
    except Exception as exc:  # httpx errors (ConnectError, TimeoutException) without importing httpx
        if type(exc).__module__.startswith(("httpx", "httpcore", "requests", "urllib3")):
            raise ModelNotFoundError(f"{where}: the Hugging Face hub is unreachable ({type(exc).__name__})",
                                     UNREACHABLE_HINT) from None
        raise
    cfg = read_config_file(path)
    return Resolved(cfg, repo_id, source, str(path), f"{where} config.json")
