"""The wheel installs exactly one top-level import name, ``planner``, with its data files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools in this environment")
    src = tmp_path_factory.mktemp("src")
    # build from a copy of the tracked layout, so the build leaves nothing in the checkout
    for name in ("pyproject.toml", "README.md", "planner", "analysis", "cli", "hardware", "runtime", "profiles"):
        p = ROOT / name
        (shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__")) if p.is_dir()
         else shutil.copy(p, src / name))
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("planner-*.whl")
    return zipfile.ZipFile(whl)


def test_one_top_level_name(wheel):
    tops = {n.split("/")[0] for n in wheel.namelist()}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"planner"}, tops
    (info,) = dist_info
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["planner"]
    assert "planner.cli.app:main" in wheel.read(f"{info}/entry_points.txt").decode()


def test_subpackages_and_data_are_inside(wheel):
    names = set(wheel.namelist())
    for sub in ("analysis", "cli", "hardware", "runtime", "profiles"):
        assert f"planner/{sub}/__init__.py" in names, sub
    tracked = {p.relative_to(ROOT / "profiles").as_posix() for p in (ROOT / "profiles").rglob("*")
               if p.is_file() and p.suffix in {".yaml", ".json"}}
    shipped = {n[len("planner/profiles/"):] for n in names if n.startswith("planner/profiles/")}
    assert tracked and tracked <= shipped, sorted(tracked - shipped)[:5]
