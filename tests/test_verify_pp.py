"""``planner verify --pp 2 --device cpu``: gloo ranks, one pipeline stage each (or ``--tp 2`` ranks per
stage), every rank checked against the analysis of its stage (``analysis.parallel``'s split) and the
pipeline's logits equal to the single-process decoder's; the per-stage split itself checked by hand
on bundled configs."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.parallel import Layout, layout_plan, stage_params
from tests.clirun import run
from tests.conftest import load_bundled_config


def test_stage_params_by_hand_untied():
    """Llama-3.1-8B over 2 stages: per layer q and o 4096², k and v 4096·1024, gate/up/down 3·4096·14336,
    two norms of 4096 = 218,112,000; the embedding 128,256·4096 = 525,336,576 on the first stage, the
    final norm and the lm_head on the last."""
    spec = parse_config(load_bundled_config("meta-llama/Llama-3.1-8B"))
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert layer == 218_112_000
    emb = 128_256 * 4096
    assert stage_params(spec, layout_plan(spec, Layout(pp=2))) == [emb + 16 * layer, 16 * layer + 4096 + emb]
    assert stage_params(spec, layout_plan(spec, Layout(tp=2, pp=2)))[0] == emb // 2 + 16 * (layer - 2 * 4096) // 2 + 16 * 2 * 4096


def test_tied_embedding_is_copied_onto_the_last_stage():
    """Qwen2.5-0.5B ties its embedding: with pp > 1 the last stage holds its own copy as the LM head
    (vLLM builds embed_tokens on the last rank too), so the stages hold one embedding more than the model."""
    spec = parse_config(load_bundled_config("Qwen/Qwen2.5-0.5B"))
    assert spec.tie_word_embeddings
    one = stage_params(spec, layout_plan(spec, Layout()))
    two = stage_params(spec, layout_plan(spec, Layout(pp=2)))
    assert sum(two) - sum(one) == 151_936 * 896


# ---- the prediction: the step model per stage, plan's send and pipeline (pure arithmetic) -----------

HAND_PROFILE = """name: hand
memory: 64 GiB
memory_bandwidth: 10 GB/s
peak_flops: {fp32: 1000000 TFLOP/s}
interconnect: 100 GB/s
kernel_launch_overhead: 10 us
allreduce_latency: 20 us
efficiency: {memory_bandwidth: 1.0, compute: 1.0, interconnect: 0.5}
"""
BW, LAUNCH, LINK, LATENCY = 10e9, 10e-6, 100e9 * 0.5, 20e-6  # the profile's figures (link at its efficiency)


def _qwen_pp(tmp_path, layout, batch: int, hardware: str | None = None, kernels=None):
    """Qwen2.5-0.5B (24 layers, hidden 896, fp32) on ``layout``, priced on the hand profile."""
    from planner.analysis.parallel import layout_groups
    from planner.analysis.trace import step_groups
    from planner.analysis.weights import weight_format
    from planner.hardware.profiles import load_profile
    from planner.runtime.verify_pp import predict_pipeline

    spec = parse_config(load_bundled_config("Qwen/Qwen2.5-0.5B"))
    (tmp_path / "hand.yaml").write_text(HAND_PROFILE)
    hw = load_profile(hardware or str(tmp_path / "hand.yaml"))
    fmt, _ = weight_format(spec, "fp32")
    plan = layout_plan(spec, layout)
    pred = predict_pipeline(spec, fmt, hw, plan, batch=batch, context=64, device_type="cpu", kernels=kernels)
    mb = -(-batch // min(layout.pp, batch))
    groups = step_groups(spec, fmt, fmt.act, batch=mb, new_tokens=1, cached_tokens=64)
    per_stage = [layout_groups(groups, plan, s) for s in range(layout.pp)]
    return pred, [sum(g.count * g.op.bytes for g in gs) for gs in per_stage], \
        [sum(g.count * g.op.kernels for g in gs) for gs in per_stage]


def test_pp2_batch1_is_the_sum_of_the_stages_with_half_a_bubble(tmp_path):
    """One sequence through two stages: the stage's bytes at 10 GB/s (the compute peak is out of reach),
    plus its counted kernels × 10 µs (torch on a CPU launches serially); stage 0 sends one fp32 hidden
    state (896 × 4 bytes) at 100 GB/s × 0.5, no latency on a profile without a node block; the
    iteration is the sum of the stages and half of it is bubble."""
    pred, stage_bytes, _ = _qwen_pp(tmp_path, Layout(pp=2), 1, kernels=[300, 400])
    s0, s1 = pred.stages
    assert pred.microbatches == 1 and pred.engine == "torch-cpu-eager"
    assert s0.cost.ideal_s == pytest.approx(stage_bytes[0] / BW, rel=1e-9)
    assert s0.compute_s == pytest.approx(stage_bytes[0] / BW + 300 * LAUNCH, rel=1e-9)
    assert s1.compute_s == pytest.approx(stage_bytes[1] / BW + 400 * LAUNCH, rel=1e-9)
    assert s0.cost.parts["step overhead"] == pytest.approx(300 * LAUNCH)  # the launches, the only factor here
    assert s0.allreduce_s == s1.allreduce_s == 0.0
    assert s0.send.bytes_per_gpu == 896 * 4 and s0.send_s == pytest.approx(896 * 4 / LINK)
    assert s1.send is None and s1.send_s is None
    t0, t1 = stage_bytes[0] / BW + 300 * LAUNCH + 896 * 4 / LINK, stage_bytes[1] / BW + 400 * LAUNCH
    assert pred.iteration_s == pytest.approx(t0 + t1, rel=1e-9)
    assert pred.bubble == pytest.approx(0.5) and pred.overhead_s == 0.0
    assert "3,584 bytes" in pred.send_rule and "× 0.5" in pred.send_rule and "inside a node" in pred.send_rule


def test_pp2_batch3_runs_two_microbatches_bound_by_the_slower_stage(tmp_path):
    """Batch 3 over two stages: micro-batches of 2 and 1, priced at the larger (2 sequences: 2 × 896 × 4
    bytes sent); the stages overlap, so the iteration is max(2 × the slower stage, their sum)."""
    pred, stage_bytes, _ = _qwen_pp(tmp_path, Layout(pp=2), 3, kernels=[300, 300])
    s0, s1 = pred.stages
    assert pred.microbatches == 2 and s0.send.bytes_per_gpu == 2 * 896 * 4
    t0 = stage_bytes[0] / BW + 300 * LAUNCH + 2 * 896 * 4 / LINK
    t1 = stage_bytes[1] / BW + 300 * LAUNCH
    assert (s0.stage_s, s1.stage_s) == (pytest.approx(t0, rel=1e-9), pytest.approx(t1, rel=1e-9))
    assert pred.iteration_s == pytest.approx(max(2 * max(t0, t1), t0 + t1), rel=1e-9)
    assert pred.bubble == pytest.approx(1 - 2 * (t0 + t1) / (2 * pred.iteration_s))


def test_tp2_pp2_prices_the_stage_all_reduces_and_the_sliced_send_as_plan_does(tmp_path):
    """Two stages of two tensor-parallel ranks: stage 0 (layers 0-11) runs 12 attention and 12 MLP
    all-reduces of one 3,584-byte hidden state, each 20 µs + 2·(2-1)/2 × 3,584 bytes over the link;
    each rank sends its half (1,792 bytes). Without counted kernels the trace's are launched."""
    pred, stage_bytes, trace_kernels = _qwen_pp(tmp_path, Layout(tp=2, pp=2), 1)
    s0, s1 = pred.stages
    assert s0.allreduce_s == pytest.approx(24 * (LATENCY + 3584 / LINK), rel=1e-12)
    assert s1.allreduce_s == pytest.approx(24 * (LATENCY + 3584 / LINK), rel=1e-12)
    assert s0.send.bytes_per_gpu == 1792 and s0.send_s == pytest.approx(1792 / LINK)
    assert s0.compute_s == pytest.approx(stage_bytes[0] / BW + trace_kernels[0] * LAUNCH, rel=1e-9)
    assert pred.iteration_s == pytest.approx(sum(s.compute_s + s.allreduce_s for s in pred.stages) + s0.send_s,
                                             rel=1e-12)


def test_without_a_link_the_send_is_not_predicted_and_an_all_reduce_is_its_latency(tmp_path):
    """The bundled cpu profile has no interconnect: the send has no predicted time (the rule says it is
    measured only) and each all-reduce costs _device.yaml's latency."""
    from planner.hardware.expected import device_defaults

    lat = device_defaults()["allreduce_latency_s"]
    assert lat > 0
    pred, _, _ = _qwen_pp(tmp_path, Layout(tp=2, pp=2), 1, hardware="cpu")
    s0, s1 = pred.stages
    assert s0.send_s is None and "measured, not predicted" in pred.send_rule
    assert s0.allreduce_s == pytest.approx(24 * lat) and s1.allreduce_s == pytest.approx(24 * lat)
    assert pred.iteration_s == pytest.approx(sum(s.compute_s + s.allreduce_s for s in pred.stages), rel=1e-12)


def test_pipeline_step_adds_the_engine_overhead_once_per_iteration():
    """hardware.deploy.pipeline_step_s: stages of 1 s and 3 s, two micro-batches: max(2 × 3, 4) = 6 s,
    idle 1 - 2 × 4 / (2 × 6) = 1/3; the engine's 0.5 s + 0.1 s × 4 sequences added once."""
    from planner.hardware.deploy import pipeline_step_s
    from planner.hardware.expected import Factors

    f = Factors(step_overhead_s=0.5, step_overhead_per_sequence_s=0.1)
    it, bubble, overhead = pipeline_step_s([1.0, 3.0], 2, f, 4)
    assert (it, overhead) == (pytest.approx(6.9), pytest.approx(0.9)) and bubble == pytest.approx(1 / 3)


torch = pytest.importorskip("torch", reason="verify --pp needs the torch runtime")

from tests.test_runtime import TINY  # noqa: E402


@pytest.mark.parametrize("cfg,tp", [(TINY["bloom"], 1), (dict(TINY["qwen2"], num_key_value_heads=1), 2)],
                         ids=["bloom-pp2", "qwen2-tp2-pp2"])
def test_gloo_stages_match_the_analysis_and_the_single_process_logits(cfg, tp):
    """BLOOM's tiny shape on 2 stages: fused QKV, an embedding norm (first stage), tied embeddings
    (copied onto the last stage). Qwen2's with one KV head on 2 stages of 2 tensor-parallel ranks: the
    KV head replicated on both ranks of a stage, each rank sending its half of the hidden state. Batch 3
    runs as two uneven micro-batches (2 + 1)."""
    from planner.hardware.profiles import load_profile
    from planner.runtime.model import build_decoder
    from planner.runtime.verify import VerifyOptions
    from planner.runtime.verify_pp import run_verify_pp

    spec = parse_config(cfg)
    opts = VerifyOptions(device="cpu", batch=3, context=12, steps=2, warmup=1, hardware="cpu", threads=1, seed=3, tp=tp)
    r = run_verify_pp(spec, opts, 2, want_logits=True)
    assert r.backend == "gloo" and r.microbatches == (2, 1) and len(r.stages) == 2 * tp
    assert [(s.stage, s.tp_rank, s.layers) for s in r.stages] == [(s, t, ((0, 1), (1, 2))[s]) for s in (0, 1) for t in range(tp)]
    for s in r.stages:
        assert all(c.ok for c in s.checks), s.checks
    assert [c.name for c in r.stages[0].checks] == ["params", "flops", "kv_bytes", "send_bytes"]
    # the larger micro-batch's fp32 hidden state, each tensor-parallel rank its slice
    assert r.stages[0].checks[3].measured == 2 * spec.hidden_size * 4 // tp
    if tp > 1:
        assert r.stages[0].predicted_allreduce_s > 0  # the stage's all-reduces, predicted as verify --tp does
    # each stage priced on the step model with its own counted kernels: the launches are the ideal's gap
    assert all(s.kernels > 0 for s in r.stages)
    for s in r.stages:
        parts = dict(s.compute_parts)
        assert s.predicted_compute_s - s.predicted_allreduce_s == pytest.approx(s.ideal_compute_s + sum(parts.values()))
        busiest = max(x.kernels for x in r.stages if x.stage == s.stage)  # torch on a CPU launches serially
        assert parts["step overhead"] == pytest.approx(busiest * load_profile("cpu").kernel_launch_s)
    single = build_decoder(spec, seed=3)
    prompt = torch.randint(0, spec.vocab_size, (3, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = single(prompt, 0, None)
    assert want.abs().max() > 0.01
    torch.testing.assert_close(torch.tensor(r.logits), want, atol=1e-5, rtol=0)
    assert r.stages[0].measured_send_s > 0 and r.stages[0].predicted_send_s is None  # the cpu profile has no link
    assert len(r.iteration_samples_s) == 2 and 0 <= r.predicted_bubble < 1


def test_cli_pp2_json_states_the_layout_and_every_stage(tmp_path):
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY["llama"]))
    r = run("verify", str(d), "--device", "cpu", "--pp", "2", "--context", "8", "--steps", "2", "--warmup", "1",
            "--hardware", "cpu", "--threads", "1", "--json")
    assert r.code == 0, r.err
    j = r.json
    assert j["pp"] == 2 and j["layout"]["label"] == "TP1 PP2" and [s["rank"] for s in j["stages"]] == [0, 1]
    assert all(c["ok"] for s in j["stages"] for c in s["checks"].values())
    assert j["timing"]["measured_s"] > 0 and j["timing"]["predicted_s"] > 0


@pytest.mark.parametrize("args,fragment", [
    (("--pp", "2", "--tp", "3"), "do not split 3 ways"),
    (("--pp", "3"), "more pipeline stages than"),
    (("--pp", "2", "--weights", "."), "--weights"),
])
def test_pp_refusals_are_one_error_line(tmp_path, args, fragment):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY["llama"]))
    r = run("verify", str(d), "--device", "cpu", "--hardware", "cpu", *args)
    r.assert_error(fragment, code=r.code)
    assert r.code in (1, 2)


def test_opt_projections_sit_on_the_first_and_last_stage():
    """OPT-350m's shape: project_in with the embedding on the first stage, project_out with the head on the
    last; each stage's built parameters equal the analysis' share (no distributed run needed)."""
    from planner.runtime.model import parameter_count
    from planner.runtime.pipeline import build_stage

    spec = parse_config(TINY["opt-post-ln-projected"])
    plan = layout_plan(spec, Layout(pp=2))
    built = [parameter_count(build_stage(spec, plan, s, dtype=torch.float32, device="cpu", seed=0)) for s in range(2)]
    assert built == stage_params(spec, plan)
