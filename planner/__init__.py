"""planner: capacity planner and config analyzer for transformer LLMs.

One import name. Installed, the subpackages live under this folder (setuptools' ``package-dir``
maps the repository's top-level ``analysis/``, ``cli/``, ``hardware/``, ``runtime/`` and
``profiles/`` folders to ``planner.analysis`` and so on). Run from a source checkout, the same
names resolve to the repository's folders: the parent folder joins this package's search path.
"""

from __future__ import annotations

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "analysis")) and _os.path.isfile(_os.path.join(_root, "pyproject.toml")) \
        and _os.path.isdir(_os.path.join(_root, "analysis")):
    __path__.append(_root)  # source checkout: planner.analysis -> <repo>/analysis
