"""Tensor parallelism past one node in ``serve`` / ``trace`` (``hardware.serve.allreduce_link_of``): each
all-reduce crosses the network between nodes and is priced as ``plan`` prices it (``hardware.comm.collective_s``:
the ring's 2(n − 1) steps of the network's latency, its bytes at the node's NICs together, at most NVLink's rate),
never as one NVLink domain; a profile without a network refuses it."""

import pytest

from planner.analysis.errors import OptionError
from planner.analysis.parallel import allreduce_bytes_per_gpu, allreduces_per_pass
from planner.cli.common import load_model
from planner.hardware.profiles import load_profile
from planner.hardware.serve import allreduce_link_of, serve
from tests.clirun import run


def test_the_network_prices_an_all_reduce_of_two_nodes_hand_computed():
    """h100-sxm's node block: 8 GPUs a node, 50 GB/s per GPU and 6.6 µs a step between nodes. TP16 is two
    nodes: 2 × 15 = 30 ring steps, 198 µs a call, where one node's call is the engine's fitted 25 µs (vLLM). The
    ring's bytes cross at the node's eight NICs together: 8 × 50 = 400 GB/s, below NVLink's 450."""
    hw = load_profile("h100-sxm")
    assert allreduce_link_of(hw, 8) is None and allreduce_link_of(hw, 1) is None
    bw, call = allreduce_link_of(hw, 16)
    assert bw == pytest.approx(400e9) and call == pytest.approx(30 * 6.6e-6)
    d = serve(load_model("llama-3.1-70b").spec, hw, gpus=16, tp=16, input_len=128, output_len=4)
    step = d.result.decode_step
    spec = d.analysis.spec
    calls = allreduces_per_pass(spec) + 2  # (one after each sub-block, the embedding, the logits)
    assert step.allreduce_calls == calls
    assert step.parts["all-reduce latency"] == pytest.approx(calls * 198e-6)
    wire = allreduce_bytes_per_gpu(spec, 1, 2, 16)  # one sequence's token, bf16 activations
    assert step.parts["all-reduce bandwidth"] == pytest.approx(wire / (400e9 * d.factors.interconnect) - wire / 400e9)
    assert any("spans 2 nodes of 8 GPUs" in n for n in d.notes)
    one_node = serve(d.analysis.spec, hw, gpus=16, tp=8, input_len=128, output_len=4)
    assert one_node.result.decode_step.parts["all-reduce latency"] == pytest.approx(calls * d.factors.allreduce_latency_s)


def test_a_profile_without_a_network_refuses_tp_past_its_server():
    with pytest.raises(OptionError, match="describes no network between nodes"):
        allreduce_link_of(load_profile("l40s"), 16)
    bad = run("serve", "llama-3.1-70b", "--hardware", "l40s", "--gpus", "16", "--tp", "16")
    assert bad.code != 0 and bad.err.count("Error:") == 1 and "--tp 8" in bad.err and bad.out == ""
    ok = run("serve", "llama-3.1-70b", "--hardware", "l40s", "--gpus", "16", "--tp", "8", "--json")
    assert ok.json["layout"] == {"gpus": 16, "tp": 8, "replicas": 2}


def test_serve_explains_the_network_call():
    r = run("serve", "llama-3.1-70b", "--hardware", "h100-sxm", "--gpus", "16", "--tp", "16", "--input-len", "128",
            "--output-len", "8")
    out = " ".join(r.out.split())  # (the table may wrap at the terminal's width)
    assert "× 198 µs" in out and "spans 2 nodes" in out and "400 GB/s per GPU" in out


def test_a_ring_across_nodes_moves_at_the_nodes_nics_together_hand_computed():
    """``ring_bytes_per_s``: the group's GPUs in one node × the per-GPU NIC rate, at most the scale-up fabric's.
    DGX A100 (8 × 25 GB/s) gives 200 GB/s, where NCCL's maintainers measure 192 GB/s of all-reduce bus bandwidth on
    "8x200Gbit/s IB cards" (NVIDIA/nccl#812); GB200's 72-GPU domain is capped by its NVLink (900 GB/s); a send or a flat
    all-to-all between nodes still uses one GPU's NIC."""
    from planner.analysis.parallel import Collective
    from planner.hardware.comm import collective_s, links, ring_bytes_per_s

    a100 = links(load_profile("a100-80gb"))
    assert ring_bytes_per_s(a100, 16) == pytest.approx(200e9)
    assert ring_bytes_per_s(a100, 32) == pytest.approx(200e9)
    assert ring_bytes_per_s(a100, 12) == pytest.approx(6 * 25e9)  # two nodes of six
    assert ring_bytes_per_s(links(load_profile("gb200")), 144) == pytest.approx(900e9)
    assert ring_bytes_per_s(links(load_profile("l40s")), 16) is None
    h100 = links(load_profile("h100-sxm"))
    m = 64 << 20
    ar = Collective("tp", "all_reduce", 16, m, 2, True)
    assert collective_s(ar, h100) == pytest.approx(2 * (30 * 6.6e-6 + 2 * 15 / 16 * m / 400e9))
    ag = Collective("tp", "all_gather", 16, m, 1, True)
    assert collective_s(ag, h100) == pytest.approx(15 * 6.6e-6 + 15 / 16 * m / 400e9)
    send = Collective("pp", "send", 2, m, 1, True)
    assert collective_s(send, h100) == pytest.approx(6.6e-6 + m / 50e9)
    a2a = Collective("ep", "all_to_all", 16, m, 1, True)
    assert collective_s(a2a, h100) == pytest.approx(15 * 6.6e-6 + 15 / 16 * m / 50e9)
