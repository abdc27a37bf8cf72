"""PCIe cards joined in pairs by NVLink bridges (A100 80GB PCIe, H100 PCIe, H100 NVL): the bridge is the scale-up
domain of two GPUs, so a tensor-parallel group of more than two crosses each GPU's PCIe link between the pairs
(the profiles' ``node`` block, priced by ``hardware.comm`` as any group across domains). Until session 42 these
profiles gave every group the bridge's 300 GB/s; TensorRT-LLM's perf-overview (v0.15.0) has Llama-3.1-70B at TP4 on
A100 PCIe at 53 % of its A100 SXM throughput, where planner predicted 95 %."""

from __future__ import annotations

import json

import pytest

from planner.hardware.comm import links
from planner.hardware.profiles import load_profile
from tests.clirun import run


@pytest.mark.parametrize("name, pcie", [("a100-pcie-80gb", 31.5e9), ("h100-pcie", 63e9), ("h100-nvl", 63e9)])
def test_a_bridged_pair_is_the_domain_and_pcie_joins_the_pairs(name, pcie):
    lk = links(load_profile(name))
    assert (lk.gpus_per_node, lk.intra_bytes_per_s, lk.inter_bytes_per_s) == (2, 300e9, pcie)
    assert lk.inter_latency_s == pytest.approx(5.7e-6)


def _tpot_parts(hw: str, gpus: int, model: str = "llama-3.1-70b") -> tuple[dict, list[str]]:
    r = run("serve", model, "-H", hw, "--gpus", str(gpus), "--concurrency", "1", "--input-len", "100",
            "--output-len", "50", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    return d["explain"]["tpot_s"], d.get("notes", [])


def test_tp4_all_reduces_cross_pcie_and_tp2_stays_on_the_bridge():
    calls = 80 * 2 + 2  # Llama-3.1-70B: two per layer, the embedding's and the logits'
    pcie4, notes4 = _tpot_parts("a100-pcie-80gb", 4)
    sxm4, _ = _tpot_parts("a100-80gb", 4)
    # the ring's 2(tp - 1) steps at NCCL's PCI latency per call, in place of the engine's per-call latency
    assert pcie4["all-reduce latency"] == pytest.approx(calls * 6 * 5.7e-6)
    # the same bytes at each GPU's two PCIe links of the pair (63 GB/s) instead of NVLink's 300 GB/s
    assert pcie4["all-reduce bandwidth"] / sxm4["all-reduce bandwidth"] == pytest.approx(300 / 63)
    assert any("spans 2 nodes of 2 GPUs" in n and "NVLink-bridged pairs" in n for n in notes4)
    # (the 70B's weights need more than two 80 GB GPUs under vLLM's cap: the 8B at TP2)
    pcie2, notes2 = _tpot_parts("a100-pcie-80gb", 2, "llama-3.1-8b")
    sxm2, _ = _tpot_parts("a100-80gb", 2, "llama-3.1-8b")
    assert pcie2["all-reduce latency"] == pytest.approx(sxm2["all-reduce latency"])  # the engine's, on the bridge
    assert pcie2["all-reduce bandwidth"] == pytest.approx(sxm2["all-reduce bandwidth"])
    assert not any("spans" in n for n in notes2)
