"""``planner plan`` beside NVIDIA's aiconfigurator on the same questions (bench/plan.py's): 20 req/s of
3000 tokens in and 500 out, TTFT p90 <= 1 s, TPOT p90 <= 40 ms, vLLM, on H100 and H200 nodes, for
Llama-3.1-70B, Qwen3-235B-A22B and DeepSeek-V3. aiconfigurator answers with ``cli recommend
--target-request-rate`` (the fewest GPUs that serve the rate within the SLA, aggregated and
disaggregated, from its measured kernel databases); planner with ``plan --max-gpus 64`` (the cheapest
deployment its simulation finds). Prints one markdown table, side by side.

aiconfigurator is not a dependency of planner (it pins its own numpy, pandas, scipy...): install it
into a separate environment and point this script at its executable::

    python3 -m venv /tmp/venv-aic && /tmp/venv-aic/bin/pip install aiconfigurator
    python bench/aiconfigurator.py --aic /tmp/venv-aic/bin/aiconfigurator

Without ``--aic`` it uses ``$AICONFIGURATOR``, then ``aiconfigurator`` on PATH, then the module if it
is importable in this Python; when none is there it says how to install it and exits 2.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# planner's model id -> aiconfigurator's (its bundled model_configs)
MODELS = {"meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B", "Qwen/Qwen3-235B-A22B": "Qwen/Qwen3-235B-A22B",
          "deepseek-ai/DeepSeek-V3": "deepseek-ai/DeepSeek-V3"}
GPUS = {"h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm"}
RATE, ISL, OSL, TTFT_S, TPOT_S, MAX_GPUS = 20.0, 3000, 500, 1.0, 0.04, 64


def aic_command(given: str | None) -> list[str] | None:
    exe = given or os.environ.get("AICONFIGURATOR") or shutil.which("aiconfigurator")
    if exe:
        return [exe]
    if importlib.util.find_spec("aiconfigurator") is not None:
        return [sys.executable, "-c", "import sys; from aiconfigurator.main import main; sys.exit(main())"]
    return None


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_planner(model: str, gpu: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0, c0 = time.perf_counter(), _cpu_children()
    out = subprocess.run([sys.executable, "-m", "planner", "plan", model, "--gpu", gpu, "--max-gpus", str(MAX_GPUS),
                          "--rate", str(RATE), "--input-len", str(ISL), "--output-len", str(OSL), "--ttft-p90", str(TTFT_S),
                          "--tpot-p90", str(TPOT_S), "--engine", "vllm", "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    res = {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_children() - c0}
    if out.returncode:
        return {**res, "error": out.stderr.strip()[:120]}
    d = json.loads(out.stdout)
    c = d["cheapest"]
    if c is None:
        return {**res, "answer": "none", "gpus": d["needs_at_least_gpus"]}
    return {**res, "answer": c["label"], "gpus": c["gpus"], "ttft_s": c["ttft_p90_s"], "tpot_s": c["tpot_p90_s"]}


def _best(path: Path) -> dict | None:
    """The row of aiconfigurator's best_config_topn.csv with the fewest GPUs needed."""
    if not path.is_file():
        return None
    with path.open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    r = min(rows, key=lambda r: (int(float(r["total_gpus_needed"])), -float(r["tokens/s/gpu"])))
    if "(p)parallel" in r:
        label = (f"{r['(p)workers']}P {r['(p)parallel']} + {r['(d)workers']}D {r['(d)parallel']}"
                 f" x{r['replicas_needed']}")
    else:
        label = f"{r['parallel']} x{r['replicas_needed']} (bs {r['bs']})"
    return {"label": label.replace("pp1dp1etp1ep1", "").replace("pp1", ""), "gpus": int(float(r["total_gpus_needed"])),
            "ttft_s": float(r["ttft"]) / 1e3, "tpot_s": float(r["tpot"]) / 1e3}


def run_aic(cmd: list[str], model: str, system: str, backend: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), _cpu_children()
        out = subprocess.run([*cmd, "cli", "recommend", "--model-path", model, "--system", system, "--backend", backend,
                              "--target-request-rate", str(RATE), "--isl", str(ISL), "--osl", str(OSL),
                              "--ttft", str(TTFT_S * 1e3), "--tpot", str(TPOT_S * 1e3), "--save-dir", tmp,
                              "--no-color", "--log-level", "WARNING"], capture_output=True, text=True, timeout=1800)
        res = {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_children() - c0}
        if out.returncode:
            tail = [ln for ln in out.stderr.splitlines() if "Error" in ln or "error" in ln][-1:] or [out.stderr[-120:]]
            return {**res, "error": tail[0].strip()[:120]}
        found = list(Path(tmp).rglob("best_config_topn.csv"))
        for p in found:
            res[p.parent.name] = _best(p)
    return res


def _fmt(x: dict | None) -> str:
    if not x:
        return "none within the SLA"
    return f"{x['label']}: {x['gpus']} GPUs, TTFT {x['ttft_s']:.2f} s, TPOT {x['tpot_s'] * 1e3:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aic", help="aiconfigurator executable (default: $AICONFIGURATOR, PATH, or the importable module)")
    ap.add_argument("--backend", default="vllm", help="aiconfigurator backend (vllm, sglang, trtllm); planner uses vllm")
    args = ap.parse_args()
    cmd = aic_command(args.aic)
    if cmd is None:
        print("aiconfigurator is not installed. Install it into its own environment (it pins its own numpy and "
              "pandas) and run again:\n  python3 -m venv /tmp/venv-aic && /tmp/venv-aic/bin/pip install aiconfigurator\n"
              "  python bench/aiconfigurator.py --aic /tmp/venv-aic/bin/aiconfigurator", file=sys.stderr)
        sys.exit(2)
    ver = subprocess.run([*cmd, "version"], capture_output=True, text=True, timeout=120)
    version = (ver.stdout.strip() or ver.stderr.strip().splitlines()[-1:] or ["?"])
    print(f"aiconfigurator: {version if isinstance(version, str) else version[0]}; backend {args.backend}; "
          f"{RATE:g} req/s, ISL {ISL}, OSL {OSL}, TTFT <= {TTFT_S:g} s, TPOT <= {TPOT_S * 1e3:g} ms; "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}\n")
    print("| model | GPU | planner plan (p90) | aiconfigurator aggregated | aiconfigurator disaggregated | "
          "planner s (wall / CPU) | aiconfigurator s (wall / CPU) |")
    print("| --- | --- | --- | --- | --- | ---: | ---: |")
    for m, am in MODELS.items():
        for g, sysname in GPUS.items():
            p = run_planner(m, g)
            a = run_aic(cmd, am, sysname, args.backend)
            pl = p.get("error") or (f"{p['answer']}: {p['gpus']} GPUs, TTFT {p['ttft_s']:.2f} s, TPOT "
                                    f"{p['tpot_s'] * 1e3:.1f} ms" if "ttft_s" in p else
                                    (f"none (needs at least {p['gpus']} GPUs)" if p.get("gpus")
                                     else f"none within {MAX_GPUS} GPUs"))
            ag = a.get("error") or _fmt(a.get("agg"))
            dg = "" if "error" in a else _fmt(a.get("disagg"))
            print(f"| {m} | {g} | {pl} | {ag} | {dg} | {p['wall_s']:.1f} / {p['cpu_s']:.1f} | "
                  f"{a['wall_s']:.1f} / {a['cpu_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
