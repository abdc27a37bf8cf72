"""The GPU bench helpers that also run without a GPU: the written-out attention forms of
bench/gpu_attention.py compute the same attention, and bench/gpu_reprice.py reads saved runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "h200-2026-12-04"


@pytest.mark.torch
def test_attention_forms_agree_with_a_softmax_written_by_hand():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_attention
    finally:
        sys.path.remove(str(ROOT / "bench"))
    g = torch.Generator().manual_seed(1)
    B, K, G, S, d = 2, 3, 2, 37, 8  # 37 keys: chunks of 16 leave a tail of 5
    q, k, v = (torch.randn(B, K, n, d, generator=g, dtype=torch.float64) for n in (G, S, S))
    cap, scale = 5.0, d ** -0.5
    # by hand, one query row at a time
    want = torch.empty(B, K, G, d, dtype=torch.float64)
    for b in range(B):
        for h in range(K):
            for r in range(G):
                s = [(q[b, h, r] @ k[b, h, j]).item() * scale for j in range(S)]
                s = [cap * __import__("math").tanh(x / cap) for x in s]
                m = max(s)
                w = [__import__("math").exp(x - m) for x in s]
                z = sum(w)
                want[b, h, r] = sum(w[j] / z * v[b, h, j] for j in range(S))
    for name, fn in gpu_attention.all_forms([16, 64]).items():
        got = fn(q, k, v, scale, cap)
        assert got.shape == (B, K, G, d), name
        assert torch.allclose(got, want, atol=1e-6), name


def test_reprice_refuses_a_file_without_runs(tmp_path):
    bad = tmp_path / "runs.json"
    bad.write_text(json.dumps({"device": "x"}))
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_reprice.py"), str(bad), "--hardware", "h200"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.startswith("Error: cannot read runs") and "Traceback" not in r.stderr


def test_saved_h200_runs_are_whole():
    """The stored measurements the README and the h200-sxm profile cite: 28 runs each, all exact checks ok,
    and the calibrated profile of run 4 loads with the two GPU terms."""
    from planner.hardware.profiles import load_profile

    for name in ("run1-launch-only.json", "run4-calibrated-terms.json"):
        data = json.loads((DATA / name).read_text())
        assert len(data["runs"]) == 28 and all(r["checks_ok"] for r in data["runs"])
    hw = load_profile(str(DATA / "calibrated-run4.yaml"))
    assert hw.graph_node_s == pytest.approx(984e-9) and hw.attention_head_bytes_per_s == pytest.approx(42.5e9)
    assert load_profile(str(DATA / "calibrated-run1.yaml")).graph_node_s is None
