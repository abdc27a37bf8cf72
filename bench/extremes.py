"""Legal extremes: 16,384-layer configs (the most a config may declare) and the largest sweep grid.

Identical layers are computed once (``analysis.trace.step_groups``, ``ModelSpec.layer_groups``), so
the cost of a command grows with the distinct layer shapes, not the layers. This script writes five
16,384-layer variants of bundled configs into a temporary folder (Gemma 3's sliding/full pattern,
a dense Llama, a Qwen3 MoE, a Jamba Mamba/attention/MoE hybrid, DeepSeek-V2's MLA with dense and MoE
layers), times the commands below end to end (one process each, as a user runs them) and prints a
table of wall seconds:

    python bench/extremes.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "profiles" / "models"
LAYERS = 1 << 14

VARIANTS = {  # bundled config -> its 16,384-layer variant's name
    "google--gemma-3-1b-it.json": "gemma3-16k",
    "meta-llama--Llama-3.2-1B.json": "llama-16k",
    "Qwen--Qwen3-30B-A3B.json": "qwen3moe-16k",
    "ai21labs--AI21-Jamba-1.5-Mini.json": "jamba-16k",
    "deepseek-ai--DeepSeek-V2-Lite.json": "deepseek-16k",
}
GRID64 = ",".join(str(b) for b in range(1, 65))
CONTEXTS64 = ",".join(f"{k}k" for k in range(1, 65))


def planner_cmd(*args: str) -> list[str]:
    exe = shutil.which("planner")
    return [exe, *args] if exe else [sys.executable, "-m", "planner", *args]


def write_configs(folder: Path) -> dict[str, Path]:
    out = {}
    for src, name in VARIANTS.items():
        cfg = json.loads((MODELS / src).read_text())
        cfg["num_hidden_layers"] = LAYERS
        cfg.pop("max_window_layers", None)
        path = folder / name / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(cfg))
        out[name] = path
    return out


def cases(paths: dict[str, Path]) -> dict[str, list[str]]:
    big = str(paths["gemma3-16k"])
    five = [str(p) for p in paths.values()]
    return {
        "16k layers: trace, 4x4 sweep": planner_cmd("trace", big, "--sweep", "batch=1,8,64,512",
                                                     "--sweep", "context=1k,8k,32k,128k", "--json"),
        "16k layers: trace, 64x64 sweep": planner_cmd("trace", big, "--sweep", f"batch={GRID64}",
                                                       "--sweep", f"context={CONTEXTS64}", "--json"),
        "16k layers: trace --all-layers (table)": planner_cmd("trace", big, "--all-layers"),
        "16k layers: trace --all-layers (markdown)": planner_cmd("trace", big, "--all-layers", "--format", "markdown"),
        "16k layers: compare of five": planner_cmd("compare", *five, "--json"),
        "16k layers: analyze (table)": planner_cmd("analyze", big),
        "llama-3.1-8b: trace, 64x64 sweep": planner_cmd("trace", "llama-3.1-8b", "--sweep", f"batch={GRID64}",
                                                         "--sweep", f"context={CONTEXTS64}", "--json"),
        "deepseek-v3: trace --all-layers (table)": planner_cmd("trace", "deepseek-v3", "--all-layers"),
        "deepseek-v3: trace --all-layers (markdown)": planner_cmd("trace", "deepseek-v3", "--all-layers",
                                                                   "--format", "markdown"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="planner-extremes-") as tmp:
        todo = cases(write_configs(Path(tmp)))
        times: dict[str, list[float]] = {k: [] for k in todo}
        for _ in range(ns.rounds):
            for name, cmd in todo.items():
                t0 = time.perf_counter()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
                times[name].append(time.perf_counter() - t0)
    width = max(map(len, times))
    print(f"{'case':<{width}}  {'seconds':>8}")
    for name, ts in times.items():
        print(f"{name:<{width}}  {statistics.median(ts):8.2f}")


if __name__ == "__main__":
    main()
