"""Typed errors. Every user-facing failure is a ``PlannerError``; the CLI prints its message as one
``Error: ...`` line on stderr and exits 1. Messages say what is wrong, where, and how to fix it."""

from __future__ import annotations


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
