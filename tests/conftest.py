import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "profiles" / "models"
DATA = Path(__file__).resolve().parent / "data"


def bundled_index() -> list[dict]:
    return json.loads((MODELS / "index.json").read_text())["models"]


#: ``edited``'s value that deletes the key
DROP = object()


def edited(base: dict, path: str, value) -> dict:
    """A deep copy of ``base`` with the dotted ``path`` ("vision_config.depth") set to ``value`` (``DROP``: deleted)."""
    import copy

    cfg = copy.deepcopy(base)
    *keys, last = path.split(".")
    d = cfg
    for k in keys:
        d = d[k]
    if value is DROP:
        del d[last]
    else:
        d[last] = value
    return cfg


def load_bundled_config(model_id: str) -> dict:
    for m in bundled_index():
        if m["id"] == model_id:
            return json.loads((MODELS / m["file"]).read_text())
    raise KeyError(model_id)


@pytest.fixture
def config_dir(tmp_path):
    """Write a config dict to tmp_path/config.json and return its path."""

    def write(cfg, name="config.json"):
        p = tmp_path / name
        p.write_text(json.dumps(cfg) if not isinstance(cfg, (str, bytes)) else cfg if isinstance(cfg, str) else "")
        if isinstance(cfg, bytes):
            p.write_bytes(cfg)
        return p

    return write


@pytest.fixture(autouse=True)
def _config_dir(tmp_path, monkeypatch):
    """Every test gets an empty user config folder and an offline, empty Hugging Face home: no test
    reads or writes the developer's real profiles or cache, or reaches the network."""
    cfg = tmp_path / "planner-config"
    monkeypatch.setenv("PLANNER_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cfg
