"""MODEL resolution, step 3: a Hugging Face id through ``huggingface_hub``.

Only ``config.json`` (and, when present in the cache, ``model.safetensors.index.json``) is fetched.
The local HF cache is used first; ``HF_TOKEN`` authenticates gated models; ``HF_HUB_OFFLINE=1`` uses
the cache only; ``HF_ENDPOINT`` points elsewhere. Remote code is never run: the config is read as
JSON. ``huggingface_hub`` is imported only here, only when a hub id is asked for.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from analysis.config import read_config_file
from analysis.errors import ModelNotFoundError, OptionError
from analysis.resolve import HF_ID, Resolved, not_found, resolve_local


def resolve_model(model: str, revision: str | None = None) -> Resolved:
    """A path, a bundled model, or a Hugging Face id (cache first, then a download)."""
    if revision is None:
        local = resolve_local(model)
        if local is not None:
            return local
    elif resolve_local_path_only(model):
        raise OptionError("--revision applies to Hugging Face ids, not to files or bundled models")
    if not HF_ID.match(model):
        raise not_found(model)
    return fetch_config(model, revision)


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
    with _quiet_hub():
        return _fetch(huggingface_hub, hf_errors, repo_id, revision, where)


@contextmanager
def _quiet_hub():
    """huggingface_hub logs each retry on stderr and backs off ~23 s on an unreachable host; a CLI
    that promises one ``Error:`` line keeps its logger at ERROR and retries once."""
    import logging

    import huggingface_hub.file_download  # noqa: F401  (importing configures the library's logger level)

    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.ERROR)
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
        for fn, defaults in saved or ():
            fn.__kwdefaults__.update(defaults)


def _fetch(huggingface_hub, hf_errors, repo_id: str, revision: str | None, where: str) -> Resolved:
    kwargs = dict(repo_id=repo_id, filename="config.json", revision=revision, etag_timeout=10)
    source = "hub"
    try:
        try:
            path = huggingface_hub.hf_hub_download(**kwargs, local_files_only=True)
            source = "hub-cache"
        except hf_errors.LocalEntryNotFoundError:
            if _offline():
                raise
            path = huggingface_hub.hf_hub_download(**kwargs)
    except hf_errors.GatedRepoError:
        raise ModelNotFoundError(
            f"{where}: gated model; access was refused",
            "accept the licence on huggingface.co and set HF_TOKEN to a token with access") from None
    except hf_errors.RevisionNotFoundError:
        raise ModelNotFoundError(f"{where}: revision '{revision}' does not exist") from None
    except hf_errors.RepositoryNotFoundError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403):
            raise ModelNotFoundError(f"{where}: access refused (HTTP {status})",
                                     "set HF_TOKEN, and accept the model's licence if it is gated") from None
        raise not_found(repo_id, "no such repository on the Hugging Face hub (or it is private: set HF_TOKEN)") from None
    except hf_errors.LocalEntryNotFoundError:  # (a subclass of EntryNotFoundError: keep it first)
        if _offline():
            raise not_found(repo_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from None
        raise ModelNotFoundError(
            f"{where}: the Hugging Face hub is unreachable and config.json is not cached",
            "check the network or HF_ENDPOINT; offline, use a bundled model ('planner models list'), a local "
            "config.json, or set HF_HUB_OFFLINE=1 after caching it") from None
    except hf_errors.EntryNotFoundError:
        raise ModelNotFoundError(f"{where}: the repository has no config.json") from None
    except hf_errors.OfflineModeIsEnabled:
        raise not_found(repo_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from None
    except hf_errors.HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403):
            raise ModelNotFoundError(f"{where}: access refused (HTTP {status})",
                                     "set HF_TOKEN, and accept the model's licence if it is gated") from None
        if status == 404:
            raise not_found(repo_id, "no such repository on the Hugging Face hub") from None
        raise ModelNotFoundError(f"{where}: the hub answered HTTP {status}: {str(exc).splitlines()[0]}") from None
    except hf_errors.HFValidationError as exc:
        raise not_found(repo_id, f"not a valid Hugging Face id ({str(exc).splitlines()[0]})") from None
    except OSError as exc:  # connection refused, timeouts surface as OSError subclasses in some versions
        raise ModelNotFoundError(
            f"{where}: the Hugging Face hub is unreachable ({type(exc).__name__})",
            "offline, use a bundled model, a local config.json, or HF_HUB_OFFLINE=1 with a cached copy") from None
    except Exception as exc:  # httpx errors (ConnectError, TimeoutException) without importing httpx
        if type(exc).__module__.startswith(("httpx", "httpcore", "requests", "urllib3")):
            raise ModelNotFoundError(
                f"{where}: the Hugging Face hub is unreachable ({type(exc).__name__})",
                "offline, use a bundled model, a local config.json, or HF_HUB_OFFLINE=1 with a cached copy") from None
        raise
    cfg = read_config_file(path)
    return Resolved(cfg, repo_id, source, str(path), f"{where} config.json")
