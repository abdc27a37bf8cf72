"""Where a MODEL argument's config.json comes from: a path, or a bundled model.

Resolution order (the Hugging Face hub, the third step, lives in ``cli.hub`` so that this package
stays free of network code):

1. a path to a ``config.json`` or to a folder holding one;
2. a bundled model (``profiles/models/``), by exact Hugging Face id or by an explicit alias,
   case-insensitively. Nothing is matched fuzzily; an unknown name lists the close ones.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from .records import frozen
from .config import read_config_file
from .errors import ConfigError, ModelNotFoundError

HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


@frozen
class Bundled:
    id: str
    file: str
    aliases: tuple[str, ...]
    note: str = ""


@frozen
class Resolved:
    config: dict
    id: str
    source: str  # "file" | "bundled" | "hub" | "hub-cache"
    path: str
    where: str  # how errors name it


def _models_dir():
    from planner.profiles import data_dir

    return data_dir("models")


@lru_cache(maxsize=1)
def bundled_models() -> tuple[Bundled, ...]:
    index = json.loads(_models_dir().joinpath("index.json").read_text(encoding="utf-8"))
    return tuple(Bundled(m["id"], m["file"], tuple(m.get("aliases", ())), m.get("note", "")) for m in index["models"])


def find_bundled(name: str) -> Bundled | None:
    key = name.strip().lower()
    for m in bundled_models():
        if key == m.id.lower() or key in m.aliases:
            return m
    return None


def close_bundled(name: str, n: int = 5) -> list[str]:
    key = name.strip().lower()
    names: dict[str, str] = {}
    for m in bundled_models():
        names[m.id.lower()] = m.id
        for a in m.aliases:
            names[a] = a
    tail = key.split("/")[-1]
    hits = difflib.get_close_matches(key, list(names), n=n, cutoff=0.5)
    hits += [k for k in difflib.get_close_matches(tail, list(names), n=n, cutoff=0.6) if k not in hits]
    return [names[h] for h in hits][:n]


def load_bundled(m: Bundled) -> Resolved:
    path = _models_dir().joinpath(m.file)
    cfg = json.loads(path.read_text(encoding="utf-8"))
    return Resolved(cfg, m.id, "bundled", str(path), f"bundled {m.id}")


def looks_like_path(model: str) -> bool:
    """A Hugging Face id has exactly one '/'; anything else with path punctuation is a path."""
    return (model.endswith(".json") or model.startswith((".", "/", "~")) or model.count("/") > 1
            or "\\" in model)


def resolve_local(model: str) -> Resolved | None:
    """A path or a bundled model; None when ``model`` is neither (it may still be a hub id)."""
    if not model or not model.strip():
        raise ModelNotFoundError("empty MODEL argument", "pass a bundled name, a config.json path or a Hugging Face id")
    expanded = os.path.expanduser(model)
    if os.path.exists(expanded):
        p = Path(expanded)
        cfg = read_config_file(p)
        cfg_path = p / "config.json" if p.is_dir() else p
        return Resolved(cfg, str(p), "file", str(cfg_path.resolve()), str(cfg_path))
    m = find_bundled(model)
    if m is not None:
        return load_bundled(m)
    if looks_like_path(model):
        raise ConfigError(f"{model}: no such file or folder")
    return None


def not_found(model: str, why: str = "") -> ModelNotFoundError:
    close = close_bundled(model)
    hint = f"close bundled names: {', '.join(close)}; " if close else ""
    hint += "see 'planner models list'"
    reason = why or "not a file, not a bundled model, and not a Hugging Face id (org/name)"
    return ModelNotFoundError(f"unknown model '{model}': {reason}", hint)
