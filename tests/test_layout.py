"""Parallel layouts (TP, PP, EP, attention-DP, DP): memory per GPU and collectives against hand-computed
cases; the pipeline's bubble; collectives priced on the link they travel."""

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import OptionError
from planner.analysis.parallel import (Collective, Layout, layout_plan, stage_collectives, stage_kv_bytes_per_token,
                                       stage_tensors, stage_weights_bytes)
from planner.hardware.comm import collective_s, links
from planner.hardware.deploy import engine_model, layout_memory, plan_for, replica_step
from planner.hardware.profiles import load_profile
from tests.conftest import load_bundled_config


def spec_of(model):
    return parse_config(load_bundled_config(model))


LLAMA8 = "meta-llama/Llama-3.1-8B"
DSV3 = "deepseek-ai/DeepSeek-V3"


def test_pipeline_stages_hold_their_layers_and_sum_to_the_model():
    spec = spec_of(LLAMA8)
    a = analyze(spec, Options(context=1024, dtype="bf16"))
    plan = layout_plan(spec, Layout(pp=4))
    assert plan.stages == ((0, 8), (8, 16), (16, 24), (24, 32))
    w = stage_weights_bytes(spec, a.fmt, plan)
    assert sum(w) == a.weights_bytes
    layer = a.fmt.bytes_of(spec.layers[0].tensors("model.layers.0"))
    assert w[1] == w[2] == 8 * layer
    assert w[0] == 8 * layer + a.fmt.bytes_of(spec.embedding_tensors())
    assert w[3] == 8 * layer + a.fmt.bytes_of(spec.final_norm_tensors() + spec.lm_head_tensors())


def test_tensor_parallel_weights_split_norms_replicated():
    spec = spec_of(LLAMA8)
    a = analyze(spec, Options(context=1024, dtype="bf16"))
    norms = a.fmt.bytes_of([t for t in spec.tensors() if t.kind == "norm"])
    (w,) = stage_weights_bytes(spec, a.fmt, layout_plan(spec, Layout(tp=4)))
    assert w == (a.weights_bytes - norms) // 4 + norms  # every split tensor divides evenly here


def test_a_wrappers_encoders_sit_on_the_first_stage_as_the_engine_loads_them():
    """A multimodal wrapper's vision tower and projector (spec.vision) are weights the engine loads (vLLM builds
    them on the first pipeline rank, tensor-parallel like the decoder): plan's stage weights hold them, equal to
    serve's loaded weights (hardware.engine.loaded_weights) at PP 1, and on stage 0 only under PP. Before, the
    stages held the decoder alone: Llama-4-Scout's 871,932,416-parameter tower (1.74 GB) was missing from plan."""
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import load_engine, loaded_weights

    eng = load_engine("vllm")
    for model in ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"):
        spec = spec_of(model)
        a = analyze(spec, Options(context=1024))
        vision = a.fmt.bytes_of(list(spec.vision))
        assert vision > 0
        for tp in (1, 2):
            (w,) = stage_weights_bytes(spec, a.fmt, layout_plan(spec, Layout(tp=tp)))
            assert w == loaded_weights(a, tp_plan(spec, tp), eng).counted_bytes_per_gpu
        (whole,) = stage_weights_bytes(spec, a.fmt, layout_plan(spec, Layout()))
        assert whole == a.weights_bytes
        plan = layout_plan(spec, Layout(pp=2))
        staged = stage_weights_bytes(spec, a.fmt, plan)
        decoder = [sum(a.fmt.tensor_bytes(t) for s, t, _ in stage_tensors(spec, plan) if s == k) for k in (0, 1)]
        assert staged == [decoder[0] + vision, decoder[1]] and sum(staged) == a.weights_bytes


def test_kv_per_token_per_gpu():
    spec = spec_of(LLAMA8)  # 32 layers × K and V × 8 heads × 128 × 2 bytes = 131,072 bytes per token
    a = analyze(spec, Options(context=1024, dtype="bf16"))
    assert stage_kv_bytes_per_token(a.kv, layout_plan(spec, Layout())) == [131072]
    assert stage_kv_bytes_per_token(a.kv, layout_plan(spec, Layout(tp=8))) == [131072 // 8]
    assert stage_kv_bytes_per_token(a.kv, layout_plan(spec, Layout(tp=16))) == [131072 // 8]  # heads replicated
    assert stage_kv_bytes_per_token(a.kv, layout_plan(spec, Layout(pp=2))) == [65536, 65536]


def test_attention_dp_keeps_mla_cache_unreplicated():
    spec = spec_of(DSV3)
    a = analyze(spec, Options(context=1024, kv_dtype="bf16"))  # fp8 weights, as published
    per_token = 61 * 576 * 2  # 61 MLA layers × (512 latent + 64 rope) × 2 bytes
    hw = load_profile("h200-sxm")
    em = engine_model(hw, "vllm")
    kw = dict(max_num_batched_tokens=1024, max_num_seqs=64)
    tp = layout_memory(a, hw, plan_for(a, hw, Layout(tp=8)), em, **kw)
    adp = layout_memory(a, hw, plan_for(a, hw, Layout(tp=8, ep=8, attn_dp=8)), em, **kw)
    assert tp.kv_bytes_per_token == adp.kv_bytes_per_token == per_token
    # TP replicates the latent cache on all 8 GPUs; attention-DP ranks each hold their own sequences
    blk = em.profile.block_size
    assert tp.kv_capacity_tokens == tp.kv_pool_bytes // per_token // blk * blk
    assert adp.kv_capacity_tokens == 8 * (adp.kv_pool_bytes // per_token // blk * blk)
    # the pool is what the engine's cap leaves after this layout's weights (the same accounting as serve)
    from planner.hardware.engine import engine_memory

    ref = engine_memory(a, hw, em.profile, plan_for(a, hw, Layout(tp=8)).attn, **kw)
    assert tp.weights_bytes == ref.weights_bytes and tp.kv_pool_bytes == ref.kv_pool_bytes


def _layout_and_engine_memory(model_id: str, tp: int):
    """plan's layout memory and serve's engine memory of one bundled model on TP ``tp`` H100s under vLLM, with
    the same engine settings."""
    from planner.hardware.engine import engine_memory

    a = analyze(parse_config(load_bundled_config(model_id)), Options(context=4096))
    hw = load_profile("h100-sxm")
    em = engine_model(hw, "vllm")
    kw = dict(max_num_batched_tokens=8192, max_num_seqs=256)
    p = plan_for(a, hw, Layout(tp=tp))
    return layout_memory(a, hw, p, em, **kw), engine_memory(a, hw, em.profile, p.attn, **kw)


def test_layout_pool_of_a_hybrid_counts_state_per_sequence_not_per_token():
    """plan's layout memory and serve's engine memory agree on a hybrid (Jamba-1.5-Mini at TP2, the same engine
    settings): the same KV tokens, and the same sequences of a length (each its whole KV blocks plus its Mamba
    state). Charging the state to every token instead left 4,992 tokens, and plan refused TP2."""
    lm, ref = _layout_and_engine_memory("ai21labs/AI21-Jamba-1.5-Mini", tp=2)
    assert lm.kv_pool_bytes == ref.kv_pool_bytes and lm.kv_bytes_per_token == ref.kv_bytes_per_token
    assert lm.kv_capacity_tokens == ref.kv_capacity_tokens > 1_000_000
    state = ref.state_bytes_per_sequence
    assert lm.stage_state_bytes == (state,)
    for ctx in (1, 3500, 65536):
        blocks = -(-ctx // 16) * 16
        assert lm.max_batch(ctx) == ref.max_batch(ctx) == ref.kv_pool_bytes // (blocks * ref.kv_bytes_per_token + state)


def test_layout_pool_of_a_recurrent_only_model_is_sequences_of_state():
    lm, ref = _layout_and_engine_memory("tiiuae/falcon-mamba-7b", tp=2)
    assert not lm.token_bound and lm.to_dict()["kv_capacity_tokens"] is None
    assert lm.kv_pool_bytes == ref.kv_pool_bytes > 0
    assert lm.max_batch(10) == lm.max_batch(100_000) == ref.kv_pool_bytes // ref.state_bytes_per_sequence


def test_collectives_of_a_tensor_parallel_stage():
    spec = spec_of(LLAMA8)
    plan = layout_plan(spec, Layout(tp=4), gpus_per_node=8)
    (c,) = stage_collectives(spec, plan, 0, tokens=64, act_bytes=2)
    assert (c.kind, c.group, c.count, c.bytes_per_gpu, c.inter_node) == ("all_reduce", 4, 64, 64 * 4096 * 2, False)
    hw = load_profile("h100-sxm")  # NVLink 450 GB/s per direction, 2 µs per step
    # ring all-reduce: 2(n-1) = 6 steps of latency and 2(n-1)/n = 1.5 × the buffer on the wire, 64 times
    assert collective_s(c, links(hw)) == pytest.approx(64 * (6 * 2e-6 + 1.5 * 524288 / 450e9))
    # with the engine model's factors: 80 % of the bandwidth and a fixed 20 µs per all-reduce call
    assert collective_s(c, links(hw), efficiency=0.8, allreduce_call_s=20e-6) == pytest.approx(
        64 * (20e-6 + 1.5 * 524288 / (0.8 * 450e9)))


def test_pipeline_send_crosses_nodes_when_stages_do():
    spec = spec_of(LLAMA8)
    within = layout_plan(spec, Layout(tp=4, pp=2), gpus_per_node=8)
    across = layout_plan(spec, Layout(tp=8, pp=2), gpus_per_node=8)
    send_w = [c for c in stage_collectives(spec, within, 0, 16, 2) if c.kind == "send"]
    send_a = [c for c in stage_collectives(spec, across, 0, 16, 2) if c.kind == "send"]
    assert send_w[0].inter_node is False and send_a[0].inter_node is True
    assert send_w[0].bytes_per_gpu == 16 * 4096 * 2 // 4  # each GPU sends its 1/tp slice
    assert not [c for c in stage_collectives(spec, across, 1, 16, 2) if c.kind == "send"]  # the last stage


def test_network_prices_a_group_that_spans_nodes():
    hw = load_profile("h100-sxm")  # network: 50 GB/s, 6.6 µs per step
    c = Collective("x", "all_to_all", 16, 10_000_000, 1, True)
    assert collective_s(c, links(hw)) == pytest.approx(15 * 6.6e-6 + 15 / 16 * 1e7 / 50e9)


def test_expert_parallel_exchanges_tokens_all_to_all():
    spec = spec_of(DSV3)  # 58 MoE layers (3 dense first), top-8 routing, hidden 7168
    plan = layout_plan(spec, Layout(tp=8, ep=8, attn_dp=8), gpus_per_node=8)
    cs = {c.name: c for c in stage_collectives(spec, plan, 0, tokens=64, act_bytes=2)}
    d = cs["MoE all-to-all dispatch"]
    assert (d.kind, d.group, d.count) == ("all_to_all", 8, 58)
    assert d.bytes_per_gpu == (64 // 8) * 8 * 7168 * 2
    assert "attention/dense all-reduce" not in cs  # attn_tp = 1: nothing to reduce


def test_pipeline_bubble_when_too_few_sequences():
    spec = spec_of(LLAMA8)
    a = analyze(spec, Options(context=1024, dtype="bf16"))
    hw = load_profile("h100-sxm")
    plan = plan_for(a, hw, Layout(tp=2, pp=2))
    em = engine_model(hw, "vllm")
    one = replica_step(a, hw, plan, em, batch=1, new_tokens=1, cached=512)
    assert one.microbatches == 1
    assert one.bubble == pytest.approx(0.5)  # one micro-batch: each stage idles while the other works
    assert one.iteration_s == pytest.approx(sum(one.stage_s) + one.overhead_s)
    f = em.factors
    assert one.overhead_s == pytest.approx(f.step_overhead_s + f.step_overhead_per_sequence_s)
    many = replica_step(a, hw, plan, em, batch=8, new_tokens=1, cached=512)
    assert many.microbatches == 2 and many.bubble < 0.1


@pytest.mark.parametrize("layout, words", [
    (Layout(tp=8, ep=3), "does not divide --tp"),
    (Layout(tp=4, attn_dp=3), "does not divide --tp"),
    (Layout(pp=100), "more pipeline stages"),
    (Layout(tp=2, ep=2), "no mixture-of-experts"),
])
def test_layouts_that_do_not_split(layout, words):
    with pytest.raises(OptionError, match=words):
        layout_plan(spec_of(LLAMA8), layout)


def test_a_profile_without_a_network_cannot_span_nodes():
    spec = spec_of(LLAMA8)
    a = analyze(spec, Options(context=1024, dtype="bf16"))
    hw = load_profile("l4")  # no node block: one server of 8 cards on PCIe, no network to a second one
    plan_for(a, hw, Layout(tp=8))  # inside the server
    with pytest.raises(OptionError, match="no network between them"):
        plan_for(a, hw, Layout(tp=16))


def test_layout_labels():
    assert Layout(tp=8, pp=2, ep=8, dp=2, attn_dp=8).label == "TP8 PP2 EP8 ADP8 DP2"
    assert Layout(tp=8, dp=4).family == "TP8"
    assert Layout(tp=4, pp=2, dp=3).gpus == 24


def _profile_data(**node):
    from planner.hardware.profiles import load_profile

    d = load_profile("h100-sxm").to_yaml_data()
    d["node"] = node
    return d


@pytest.mark.parametrize("node, words", [
    ({"gpus_per_node": 8, "intra_node_bandwidth": "450 GB/s", "intra_node_latency": "2 us", "bogus": 1}, "node.bogus"),
    ({"intra_node_bandwidth": "450 GB/s", "intra_node_latency": "2 us"}, "node.gpus_per_node"),
    ({"gpus_per_node": 0, "intra_node_bandwidth": "450 GB/s", "intra_node_latency": "2 us"}, "gpus_per_node"),
    ({"gpus_per_node": 8, "intra_node_bandwidth": "450 GB/s", "intra_node_latency": "2 us",
      "inter_node_bandwidth": "50 GB/s"}, "go together"),
    ({"gpus_per_node": 8, "intra_node_bandwidth": "fast", "intra_node_latency": "2 us"}, "intra_node_bandwidth"),
])
def test_bad_node_blocks(node, words):
    from planner.analysis.errors import HardwareError
    from planner.hardware.profiles import profile_from_data

    with pytest.raises(HardwareError, match=words):
        profile_from_data(_profile_data(**node), where="test.yaml")


def test_node_block_round_trips():
    from planner.hardware.profiles import profile_from_data

    p = load_profile("gb200")
    again = profile_from_data(p.to_yaml_data(), where="round-trip")
    assert again.node == p.node and again.node.gpus_per_node == 72
    assert p.to_dict()["node"]["inter_node_bytes_per_s"] == 50e9
