"""Registers every command group on the app (one module per command group)."""

from __future__ import annotations
