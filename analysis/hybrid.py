"""State-space, linear-attention and other hybrid families (registered into ``config.SPECIAL``)."""

from __future__ import annotations

from .config import SPECIAL  # noqa: F401
