"""The torch runtime: a decoder of the exact shape of a ``ModelSpec`` (``model``), its static KV cache
(``cache``), Hugging Face checkpoint loading (``load``), decode timing (``timing``), device calibration
(``calibrate``) and ``planner verify`` (``verify``). The only package that imports torch; importing
``runtime`` itself does not (the submodules do)."""

from __future__ import annotations

from planner.analysis.errors import RuntimeUnavailableError

INSTALL_HINT = "pip install 'planner[runtime]'"


def require_torch():
    """``torch``, or ``RuntimeUnavailableError`` with the install hint."""
    try:
        import torch
    except ImportError:
        raise RuntimeUnavailableError("the torch runtime is not installed", INSTALL_HINT) from None
    return torch
