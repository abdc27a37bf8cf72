"""Helpers shared by the commands: loading a model or a hardware profile, writing warnings."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.config import parse_config
from analysis.resolve import Resolved
from analysis.spec import ModelSpec

from .render import warn

DEFAULT_HARDWARE = "h100-sxm"


@dataclass(frozen=True)
class LoadedModel:
    spec: ModelSpec
    resolved: Resolved

    @property
    def id(self) -> str:
        return self.resolved.id

    @property
    def source(self) -> str:
        return self.resolved.source


def load_model(model: str, revision: str | None = None) -> LoadedModel:
    from .hub import resolve_model

    r = resolve_model(model, revision)
    spec = parse_config(r.config, where=r.where, name=r.id, source=r.source)
    return LoadedModel(spec, r)


def load_hardware(name: str | None):
    from hardware.profiles import load_profile

    return load_profile(DEFAULT_HARDWARE if name is None else name)  # an empty --hardware "" is an error


def warn_notes(notes) -> None:
    for n in notes:
        if "beyond max_position_embeddings" in n:
            warn(n)
