"""``analyze`` and ``compare`` with ``--pp`` and ``--ep``: priced by the code ``planner plan`` uses
(``hardware.deploy`` on ``analysis.parallel.Layout``), checked against hand-computed cases."""

from __future__ import annotations

import pytest

from tests.clirun import run

LLAMA8 = "meta-llama/Llama-3.1-8B"
# Llama-3.1-8B: a layer is q and o 4096², k and v 4096·1024, gate/up/down 3·4096·14336, two norms of 4096
LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096  # 218,112,000 parameters
EMB = 128_256 * 4096  # the embedding, and the (untied) lm_head
TOTAL = 8_030_261_248


def test_analyze_pp2_memory_per_stage_by_hand():
    d = run("analyze", LLAMA8, "--hardware", "h100-sxm", "--gpus", "2", "--pp", "2", "--context", "8192",
            "--batch", "4", "--dtype", "bf16", "--json").json
    mem = d["memory"]
    lo = mem["layout"]
    assert lo["label"] == "TP1 PP2" and lo["priced_by"] == "hardware.deploy" and "2 stages" in mem["layout_text"]
    s0, s1 = lo["stages"]
    assert (s0["layers"], s1["layers"]) == ([0, 16], [16, 32])
    one = run("analyze", LLAMA8, "--hardware", "h100-sxm", "--context", "8192", "--batch", "4", "--dtype", "bf16",
              "--json").json["memory"]["per_gpu"]["weights_bytes"]
    extra = one - 2 * TOTAL  # what the engine loads beside the checkpoint's tensors (the same on every GPU here)
    assert s0["weights_bytes"] == 2 * (EMB + 16 * LAYER) + extra
    assert s1["weights_bytes"] == 2 * (16 * LAYER + 4096 + EMB) + extra  # + the final norm and lm_head
    # KV of a sequence at 8,192 tokens: 16 layers × K and V × 8 heads × 128 × 2 bytes × 8,192 on each stage
    assert s0["kv_bytes_per_sequence"] == s1["kv_bytes_per_sequence"] == 16 * 2 * 8 * 128 * 2 * 8192
    assert lo["tightest_stage"] == 1 and mem["per_gpu"]["weights_bytes"] == s1["weights_bytes"]
    assert mem["fits"] and mem["max_batch"] == min(s0["max_batch"], s1["max_batch"])
    assert mem["max_context"] > 8192


def test_compare_pp2_batch1_bubble_is_half():
    """One sequence through two stages: a single micro-batch, each stage idle while the other runs, so
    the bubble is exactly 1/2 and the iteration is the sum of the stages plus the engine's overhead."""
    m = run("compare", LLAMA8, "--hardware", "h100-sxm", "--gpus", "2", "--pp", "2", "--batch", "1",
            "--context", "1024", "--json").json["models"][0]
    st = m["step_breakdown"]
    assert st["microbatches"] == 1 and st["bubble"] == pytest.approx(0.5)
    assert st["iteration_s"] == pytest.approx(sum(st["stage_s"]) + st["overhead_s"])
    assert m["serving"]["step_s"] == pytest.approx(st["iteration_s"])
    assert m["decode_tokens_per_s"] == pytest.approx(1 / st["iteration_s"] / 2)  # per GPU: 1 token / step / 2 GPUs
    assert m["layout"]["label"] == "TP1 PP2" and m["ttft_s"] > 0


def test_compare_pp2_two_microbatches_overlap():
    """Batch 2 over two stages is two micro-batches of one: the stages overlap, so the iteration is
    max(2 × the slower stage, their sum) (+ overhead) and the bubble under 1/2."""
    m = run("compare", LLAMA8, "--hardware", "h100-sxm", "--gpus", "2", "--pp", "2", "--batch", "2",
            "--context", "1024", "--json").json["models"][0]
    st = m["step_breakdown"]
    assert st["microbatches"] == 2
    assert st["iteration_s"] == pytest.approx(max(2 * max(st["stage_s"]), sum(st["stage_s"])) + st["overhead_s"])
    assert st["bubble"] < 0.5


def test_ep_keeps_expert_weights_at_one_tp_th_and_adds_the_all_to_all():
    """Experts split E/ep ways, each tp/ep ways: weights per GPU are the same for EP2 and EP4 of TP4; the
    step's collectives include the MoE dispatch and combine (ep > 1)."""
    args = ["--hardware", "h100-sxm", "--gpus", "4", "--tp", "4", "--context", "4096", "--batch", "8", "--json"]
    e2 = run("compare", "qwen3-30b-a3b", "--ep", "2", *args).json["models"][0]
    e4 = run("compare", "qwen3-30b-a3b", "--ep", "4", *args).json["models"][0]
    assert e2["layout"]["label"] == "TP4 EP2" and e4["layout"]["label"] == "TP4 EP4"
    assert e2["layout"]["stages"][0]["weights_bytes"] == e4["layout"]["stages"][0]["weights_bytes"]
    assert e2["step_breakdown"]["comm_s"] > 0 and e2["step_breakdown"]["bubble"] == 0
    a = run("analyze", "qwen3-30b-a3b", "--ep", "2", *args).json["memory"]
    assert a["layout"]["label"] == "TP4 EP2" and a["per_gpu"]["weights_bytes"] == e2["layout"]["stages"][0]["weights_bytes"]


def test_text_output_states_the_layout_and_the_stages():
    r = run("analyze", LLAMA8, "--hardware", "h100-sxm", "--gpus", "4", "--tp", "2", "--pp", "2")
    assert r.code == 0, r.err
    assert "TP2 PP2" in r.out and "Memory per GPU of each stage" in r.out
    r = run("compare", LLAMA8, "--hardware", "h100-sxm", "--gpus", "4", "--tp", "2", "--pp", "2")
    assert r.code == 0, r.err
    assert "TP2 PP2" in r.out and "pipeline bubble" in r.out


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_layout_step_is_serves_step_model_on_one_gpu(engine):
    """``planner plan``'s step (``hardware.deploy.replica_step``) and ``planner serve``'s (``StepModel``)
    are one step model: on one GPU (no collectives) a decode step and a prompt step cost the same in both,
    with a calibrated rows table (expert GEMMs at their rows per touched expert) and TensorRT-LLM's
    launch floor on steps it does not replay as a CUDA graph (its prompt steps, decodes over 128)."""
    from dataclasses import replace

    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import Layout, tp_plan
    from planner.cli.common import load_model
    from planner.hardware.deploy import EngineModel, plan_for, replica_step
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import StepModel

    spec = load_model("qwen3-30b-a3b").spec
    a = analyze(spec, Options(context=4096))
    hw = replace(load_profile("h100-sxm"), matmul_efficiency_by_rows={1: 0.05, 8: 0.2, 64: 0.6},
                 matmul_efficiency_square_rows=4096)
    eng = load_engine(engine)
    f = factors_for(hw, eng)
    assert f.matmul_efficiency_by_rows
    em = EngineModel(eng, f)
    serve = StepModel(a, hw, tp_plan(spec, 1), f)
    plan = plan_for(a, hw, Layout())
    for batch, ctx in ((1, 1000), (32, 3000), (200, 500)):
        got = replica_step(a, hw, plan, em, batch=batch, new_tokens=1, cached=ctx).iteration_s
        assert got == pytest.approx(serve.decode(batch, ctx).expected_s, rel=1e-9)
    for n in (17, 2048):
        got = replica_step(a, hw, plan, em, batch=1, new_tokens=n, cached=0).iteration_s
        assert got == pytest.approx(serve.prefill({(n, 0): 1}).expected_s, rel=1e-9)
    if engine == "trtllm":  # the floor is there: the same prompt without it is faster
        bare = EngineModel(eng, replace(f, launch_overhead_per_op_s=0.0))
        assert replica_step(a, hw, plan, bare, batch=1, new_tokens=17, cached=0).iteration_s < \
            replica_step(a, hw, plan, em, batch=1, new_tokens=17, cached=0).iteration_s


def test_attention_dp_ranks_pay_the_per_sequence_overhead_in_parallel():
    """With attention-DP each rank schedules its own sequences: the per-sequence host overhead of a step
    is that of the busiest rank (``ceil(batch / attn_dp)``), not of the whole replica."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import Layout
    from planner.cli.common import load_model
    from planner.hardware.deploy import engine_model, plan_for, replica_step
    from planner.hardware.profiles import load_profile

    a = analyze(load_model("deepseek-ai/DeepSeek-V2-Lite").spec, Options(context=2048))
    hw = load_profile("h100-sxm")
    em = engine_model(hw, "sglang")
    f = em.factors
    assert f.step_overhead_per_sequence_s > 0
    adp = replica_step(a, hw, plan_for(a, hw, Layout(tp=8, ep=8, attn_dp=8)), em, batch=61, new_tokens=1, cached=100)
    assert adp.overhead_s == pytest.approx(f.step_overhead_s + 8 * f.step_overhead_per_sequence_s)
    tp = replica_step(a, hw, plan_for(a, hw, Layout(tp=8, ep=8)), em, batch=61, new_tokens=1, cached=100)
    assert tp.overhead_s == pytest.approx(f.step_overhead_s + 61 * f.step_overhead_per_sequence_s)
