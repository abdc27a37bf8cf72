"""The MoE all-to-all as an engine's expert-parallel library moves it (``hardware.comm.ep_exchange``, the
engine profile's ``expert_parallel`` block) and two-batch overlap (``hardware.deploy.two_batch_overlap_s``),
against hand-computed cases. No timing of this machine is asserted."""

from math import prod

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import HardwareError
from planner.analysis.parallel import Layout
from planner.hardware.comm import Links, ep_exchange, links, touched_fraction
from planner.hardware.deploy import EngineModel, plan_for, replica_step, two_batch_overlap_s
from planner.hardware.engine import _ep_comm, load_engine
from planner.hardware.expected import factors_for
from planner.hardware.profiles import load_profile
from tests.conftest import load_bundled_config

# two 4-GPU nodes: 100 B/s inside, 10 B/s between, latencies 1 s and 2 s (round numbers for hand sums)
LK = Links(gpus_per_node=4, intra_bytes_per_s=100.0, intra_latency_s=1.0, inter_bytes_per_s=10.0,
           inter_latency_s=2.0, source="node")


def test_touched_fraction_by_hand():
    # 4 experts on 2 parts, top-2: only the pair {0, 1} misses part 2, 1 of C(4, 2) = 6 pairs
    assert touched_fraction(4, 2, 2) == pytest.approx(5 / 6)
    # DeepSeek-V3 on 4 nodes: a node (64 of 256 experts) is missed with prob. prod (192 - i) / (256 - i), i < 8
    assert touched_fraction(256, 8, 4) == pytest.approx(1 - prod((192 - i) / (256 - i) for i in range(8)))
    assert touched_fraction(256, 8, 256) == pytest.approx(8 / 256)  # one expert per part


def test_sglang_deepep_copy_bytes_fp8_dispatch_with_scales_bf16_combine():
    ep = load_engine("sglang").expert_parallel
    assert ep.copy_bytes(7168, dispatch=True) == 7168 * 1 + 7168 // 128 * 4  # e4m3 + one fp32 scale per 128
    assert ep.copy_bytes(7168, dispatch=False) == 7168 * 2
    assert load_engine("vllm").expert_parallel is None  # today's flat activation-dtype pricing kept


def test_flat_exchange_across_nodes_by_hand():
    # 8 GPUs on 2 nodes, 3 tokens per GPU, top-2 of 8 experts, 5 bytes a copy: 3 * 2 * 7/8 copies leave
    x = ep_exchange(3, 16, 2, 8, 8, 5.0, LK, hierarchical=False, direct=True)
    assert (x.network_bytes, x.nvlink_bytes) == (pytest.approx(3 * 2 * 7 / 8 * 5), 0.0)
    assert x.seconds == pytest.approx(2.0 + 3 * 2 * 7 / 8 * 5 / 10)  # one network latency (direct)
    ring = ep_exchange(3, 16, 2, 8, 8, 5.0, LK, hierarchical=False, direct=False)
    assert ring.seconds == pytest.approx(7 * 2.0 + 3 * 2 * 7 / 8 * 5 / 10)  # n - 1 ring steps


def test_hierarchical_exchange_crosses_the_network_once_per_node_by_hand():
    # 8 experts on 2 nodes of 4 GPUs, top-2: the other node is touched with prob. 1 - C(4,2)/C(8,2) = 1 - 6/28
    x = ep_exchange(3, 16, 2, 8, 8, 5.0, LK, hierarchical=True, direct=True)
    net = 3 * 1 * (1 - 6 / 28) * 5
    # NVLink: each GPU (one expert each) is touched with prob. 2/8: 8 * 2/8 = 2 GPUs, 3/4 of them forwarded
    nvl = 3 * 2 * 3 / 4 * 5
    assert x.network_bytes == pytest.approx(net) and x.nvlink_bytes == pytest.approx(nvl)
    assert x.seconds == pytest.approx(2.0 + max(net / 10, nvl / 100))
    flat = ep_exchange(3, 16, 2, 8, 8, 5.0, LK, hierarchical=False, direct=True)
    assert x.network_bytes < flat.network_bytes


def test_a_group_inside_one_node_is_flat_on_nvlink_either_way():
    a = ep_exchange(3, 16, 2, 4, 4, 5.0, LK, hierarchical=True, direct=True)
    b = ep_exchange(3, 16, 2, 4, 4, 5.0, LK, hierarchical=False, direct=True)
    assert a == b and a.network_bytes == 0.0
    assert a.seconds == pytest.approx(1.0 + 3 * 2 * 3 / 4 * 5 / 100)


def test_two_batch_overlap_by_hand():
    assert two_batch_overlap_s(1.0, 1.0, 0.0, 0.0) == pytest.approx(2.0)  # nothing to hide: the compute
    assert two_batch_overlap_s(0.0, 0.0, 2.0, 0.5) == pytest.approx(2.5)  # nothing to hide under: the comm
    # attention 1, MoE 3, dispatch 2, combine 0.5: (max(1, .5) + max(1, 2) + max(3, 2) + max(3, .5)) / 2
    t = two_batch_overlap_s(1.0, 3.0, 2.0, 0.5)
    assert t == pytest.approx((1 + 2 + 3 + 3) / 2)
    assert max(4.0, 2.5) <= t <= 4.0 + 2.5


def test_sglang_ep_decode_step_prices_the_low_latency_exchange():
    """DeepSeek-V3 TP16 EP16 ADP16 on two H100 nodes, a decode step of 512 sequences: each GPU's 32 tokens
    go as 8 FP8 copies (15/16 leave) and come back as 8 BF16 copies, 58 MoE layers, one network latency
    each, at the engine's interconnect efficiency: the step's communication is that sum."""
    spec = parse_config(load_bundled_config("deepseek-ai/DeepSeek-V3"))
    a = analyze(spec, Options(context=2048))
    hw = load_profile("h100-sxm")
    eng = load_engine("sglang")
    em = EngineModel(eng, factors_for(hw, eng))
    plan = plan_for(a, hw, Layout(tp=16, ep=16, attn_dp=16))
    st = replica_step(a, hw, plan, em, batch=512, new_tokens=1, cached=1000)
    lk, e = links(hw), em.factors.interconnect
    wire = 32 * 8 * 15 / 16 * (7168 + 56 * 4 + 7168 * 2)
    assert st.comm_s == pytest.approx(58 * (2 * lk.inter_latency_s + wire / (lk.inter_bytes_per_s * e)))
    assert st.stage_s[0] < st.compute_s + st.comm_s  # two-batch overlap hides part of it


def test_bad_expert_parallel_block_is_one_hardware_error():
    good = {"library": "x", "dispatch_bytes_per_element": 1, "combine_bytes_per_element": 2,
            "prefill": {"hierarchical": True}, "decode": {"hierarchical": False}}
    assert _ep_comm(good, "p").overlap == "none"
    with pytest.raises(HardwareError, match="overlap"):
        _ep_comm({**good, "overlap": "always"}, "p")
    with pytest.raises(HardwareError, match="hierarchical"):
        _ep_comm({**good, "decode": {"hierarchical": "yes"}}, "p")
    with pytest.raises(HardwareError, match="dispatch_bytes_per_element"):
        _ep_comm({**good, "dispatch_bytes_per_element": -1}, "p")
