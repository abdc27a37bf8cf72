"""Typed errors. Every user-facing failure is a ``PlannerError``; the CLI prints its message as one
``Error: ...`` line on stderr and exits 1. Messages say what is wrong, where, and how to fix it."""

from __future__ import annotations

from typing import Any


class PlannerError(Exception):
    """Base class of every error a user can cause (bad config, bad profile, bad option)."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # one line, always
        text = self.message if not self.hint else f"{self.message} ({self.hint})"
        return " ".join(text.split())


class ConfigError(PlannerError):
    """A model config.json that cannot be read or does not describe a model we can size."""


class UnsupportedModelError(ConfigError):
    """A config whose architecture we cannot size exactly."""


class ModelNotFoundError(PlannerError):
    """A MODEL argument that is neither a path, a bundled model, nor a reachable Hugging Face id."""


class HardwareError(PlannerError):
    """A hardware profile that cannot be found or read."""


class OptionError(PlannerError):
    """A command-line option with a value we cannot use."""


class RuntimeUnavailableError(PlannerError):
    """The torch runtime (the ``runtime`` extra) is missing or cannot run the request."""


def short(v: Any, limit: int = 40) -> str:
    """A bounded repr for error messages: the cost and the length never grow with the value
    (a long string, a huge integer, a list of a million items or a structure nested by YAML aliases)."""
    import reprlib

    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 4 * limit:
        text = f"an integer of {len(str(v)) if v.bit_length() < 13000 else 'thousands of'} digits"
        return text
    r = reprlib.Repr()
    r.maxstring = r.maxother = r.maxlong = max(limit, 8)
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = r.maxfrozenset = r.maxdeque = r.maxarray = 4
    r.maxlevel = 2
    try:
        text = r.repr(v)
    except Exception:  # a value whose repr fails
        text = f"<{type(v).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
