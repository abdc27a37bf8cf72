"""Data shipped with planner: hardware profiles (YAML) and bundled model configs (JSON)."""

from __future__ import annotations

from pathlib import Path

#: The folder of this package's data: a plain folder wherever pip installs planner (and in a source
#: checkout). A path, not ``importlib.resources``, which imports tempfile and zipfile on every command.
DATA = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """``hardware``, ``models`` or ``engines``."""
    return DATA / kind
