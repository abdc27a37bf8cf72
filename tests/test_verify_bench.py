"""bench/gpu_verify.sh: the GPU acceptance grid's script, exercised on CPU with tiny models and sizes.

On a machine with a GPU the script runs the real grid (five models × batch {1, 16, 64} × context
{2k, 32k}); here its logic is tested: a table with one row per run, refused runs listed with the
largest fitting batch/context, the median-error and bandwidth summary lines, exit 0 when the exact
checks hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the bench needs torch (pip install 'planner[runtime]')")

REPO = Path(__file__).resolve().parents[1]

TINY_LLAMA = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=96, vocab_size=128, max_position_embeddings=4096, rope_theta=10000.0,
                  torch_dtype="float32")
TINY_MOE = dict(TINY_LLAMA, model_type="qwen3_moe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=32)


def test_bench_script_on_cpu_with_tiny_models(tmp_path):
    models = []
    for name, cfg in (("tiny-llama", TINY_LLAMA), ("tiny-moe", TINY_MOE)):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps(cfg))
        models.append(str(d))
    out_json = tmp_path / "results.json"
    env = dict(os.environ, PYTHON=sys.executable, PLANNER_CONFIG_DIR=str(tmp_path / "config"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu_verify.sh"), "--device", "cpu", "--models", *models, "--batches", "1", "2",
         "--contexts", "16", "1000000000", "--steps", "2", "--warmup", "1", "--no-calibrate", "--hardware", "cpu",
         "--tp", "1", "2", "--tp-model", models[0], "--logits", "--logits-model", models[0], "--json", str(out_json)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| model"))
    for col in ("tp", "predicted ms", "measured ms", "error", "achieved GB/s", "checks"):
        assert col in lines[header]
    rows = [line for line in lines[header + 2:] if line.startswith("|")]
    assert len(rows) == 2 * 2 * 2 + 2  # the grid, then the TP rows (tp 1 and 2)
    grid, tp_rows = rows[:8], rows[8:]
    fitted = [r for r in grid if "| ok" in r]
    refused = [r for r in grid if "does not fit" in r]
    assert len(fitted) == 4 and len(refused) == 4  # a billion-token context never fits; the guard says so
    assert [r.split("|")[2].strip() for r in tp_rows] == ["1", "2"] and all("| ok" in r for r in tp_rows)
    assert "per rank" in tp_rows[1]
    logit_lines = [line for line in lines if line.startswith("logits check")]
    assert len(logit_lines) == 2 and all("PASS" in line for line in logit_lines), logit_lines
    assert all("--context" in r for r in refused)
    assert any(line.startswith("median |error| over 4 runs") for line in lines)
    assert any(line.startswith("batch-1 decode of") for line in lines)
    assert any(line.startswith("exact checks: 6 ok, 0 failed") for line in lines)
    results = json.loads(out_json.read_text())
    assert len(results) == 6 and all(r["checks"]["flops"]["ok"] for r in results[:5])
    assert all(c["ok"] for rank in results[5]["ranks"] for c in rank["checks"].values())
