"""Session 57: SGLang's piecewise CUDA graphs for prompt steps (``timing.cuda_graphs.prefill_*`` in the engine
profiles; on by default since SGLang v0.5.10, PR #16331). Which devices, models and layouts take them, the prompt
step sizes they cover (every chunk; 2,048 tokens for MLA models), what they take out of a served prompt (the
host's per-launch time, nothing else), which benchmark entries ran them (their release), and the profile's
refusals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.hardware.engine import HardwareError, load_engine
from planner.hardware.expected import factors_for, for_model, graphed, uses_mla
from planner.hardware.profiles import load_profile
from tests.test_published_fit import _engines_copy, pub
from tests.test_serve import _model

ALL = 1 << 30


def test_the_sglang_profile_captures_prompt_graphs_on_cuda_and_vllms_keep_their_decode_limit():
    sgl = load_engine("sglang")
    assert sgl.cuda_graph_prefill and sgl.cuda_graph_prefill_max_tokens == ALL
    assert sgl.cuda_graph_prefill_max_tokens_mla == 2048 and sgl.cuda_graph_prefill_vendors == ("nvidia",)
    assert {"multimodal", "qwen3_next", "deepseek_v32"} <= set(sgl.cuda_graph_prefill_exclude)
    assert sgl.cuda_graph_prefill_tp_only
    assert factors_for(load_profile("h100-sxm"), sgl).cuda_graph_prefill
    assert factors_for(load_profile("b200"), sgl).cuda_graph_prefill
    assert not factors_for(load_profile("mi300x"), sgl).cuda_graph_prefill  # ROCm: CUDA-only in v0.5.10
    for name in ("vllm", "vllm-v0"):  # vLLM's prompt graphs: its decode limit (512 tokens), on every vendor
        eng = load_engine(name)
        assert eng.cuda_graph_prefill_max_tokens is None and eng.cuda_graph_prefill_vendors == ()
        assert factors_for(load_profile("mi300x"), eng).cuda_graph_prefill == eng.cuda_graph_prefill


def test_which_prompt_steps_replay_a_graph():
    """On an H100, SGLang replays a Llama prompt step of any size (every chunk, 8,192 tokens by default); a
    DeepSeek-R1 step up to 2,048 tokens (MLA's cap), and a decode step up to its decode limit (256 sequences)
    whatever the model. vLLM's prompt steps up to 512 tokens, as before."""
    h100 = load_profile("h100-sxm")
    f = factors_for(h100, load_engine("sglang"))
    llama, ds = _model("llama-3.1-8b"), _model("deepseek-r1")
    assert uses_mla(ds) and not uses_mla(llama)
    fl, fd = for_model(f, llama), for_model(f, ds)
    assert graphed(fl, tokens=8192, prefill=True) and graphed(fl, tokens=16384, prefill=True)
    assert graphed(fd, tokens=2048, prefill=True) and not graphed(fd, tokens=2049, prefill=True)
    for g in (fl, fd):
        assert graphed(g, tokens=256, prefill=False) and not graphed(g, tokens=257, prefill=False)
    v = factors_for(h100, load_engine("vllm"))
    assert for_model(v, ds) == v  # no MLA cap or exclusions of vLLM's
    assert graphed(v, tokens=512, prefill=True) and not graphed(v, tokens=513, prefill=True)


def test_multimodal_and_excluded_models_run_their_prompts_op_by_op():
    f = factors_for(load_profile("h100-sxm"), load_engine("sglang"))
    gemma = _model("gemma-3-4b-it")  # a vision tower: SGLang disables the graphs for multimodal models
    assert gemma.vision and not for_model(f, gemma).cuda_graph_prefill
    assert not graphed(for_model(f, gemma), tokens=64, prefill=True)
    assert graphed(for_model(f, gemma), tokens=64, prefill=False)  # its decode steps still replay
    text = _model("gemma-3-1b-it")
    assert not text.vision and for_model(f, text).cuda_graph_prefill
    # an architecture on SGLang's list (Qwen3-Next), by its model_type
    assert not for_model(f, replace(_model("qwen3-8b"), model_type="qwen3_next")).cuda_graph_prefill


def _serve(hw, model="llama-3.1-8b", **kw):
    from planner.hardware.serve import serve

    return serve(_model(model), load_profile(hw), engine="sglang", gpus=kw.pop("gpus", 1), input_len=1000,
                 output_len=64, concurrency=1, **kw)


def test_a_graphed_prompt_saves_exactly_the_launches_and_nothing_else():
    """Llama-3.1-8B on one H100, one 1,000-token prompt: against the same engine with prompts op by op (SGLang
    0.5.9), TTFT drops by the host's kernel launches of the prompt step and by nothing else (the GEMMs, the
    roofline and the decode steps do not move); the note says so. On the MI300X nothing changes."""
    f = factors_for(load_profile("h100-sxm"), load_engine("sglang"))
    graphs = _serve("h100-sxm")
    eager = _serve("h100-sxm", factors=replace(f, cuda_graph_prefill=False))
    g, e = graphs.result, eager.result
    saved = e.expected.ttft_s - g.expected.ttft_s
    assert saved > 1e-3  # seconds: 13 launches a layer x 32 layers x 24 us, less what the GPU hid of it
    kl_g, kl_e = g.explain["ttft_s"]["kernel launches"], e.explain["ttft_s"]["kernel launches"]
    assert kl_g < 0.02 * kl_e  # what remains is the request's decode-side launches, not the prompt step's
    assert kl_e - kl_g == pytest.approx(saved)
    assert g.explain["ttft_s"]["GEMM efficiency"] == pytest.approx(e.explain["ttft_s"]["GEMM efficiency"])
    assert g.ideal.ttft_s == pytest.approx(e.ideal.ttft_s)
    assert g.expected.tpot_s == pytest.approx(e.expected.tpot_s)
    assert any("replays prompt steps as piecewise CUDA graphs" in n for n in graphs.notes)
    mi = _serve("mi300x")
    mi_eager = _serve("mi300x", factors=replace(factors_for(load_profile("mi300x"), load_engine("sglang")),
                                                cuda_graph_prefill=False))
    assert mi.result.expected.ttft_s == pytest.approx(mi_eager.result.expected.ttft_s)
    assert any("op by op on mi300x" in n for n in mi.notes)


def test_an_mla_prompt_over_2048_tokens_pays_its_launches():
    """DeepSeek-R1 on 8 H200s: a 1,000-token prompt replays (next to no launch time in its TTFT), a 4,000-token
    one does not; the note gives the cap."""
    from planner.hardware.serve import serve

    spec, hw = _model("deepseek-r1"), load_profile("h200-sxm")
    short = serve(spec, hw, engine="sglang", gpus=8, input_len=1000, output_len=16, concurrency=1)
    long = serve(spec, hw, engine="sglang", gpus=8, input_len=4000, output_len=16, concurrency=1)
    kl_short, kl_long = (d.result.explain["ttft_s"]["kernel launches"] for d in (short, long))
    assert kl_long > 0.01 and kl_short < 0.05 * kl_long  # seconds; 0.5 ms and 15.5 ms as shipped (session 57)
    assert any("up to 2,048 tokens" in n for n in short.notes)


@pytest.mark.parametrize("version, date, settings, want", [
    ("0.5.9", "2026-05-01", {}, False),
    ("0.5.10", "2026-04-01", {}, True),
    ("0.5.12 (lmsysorg/sglang image)", None, {}, True),
    ("0.4.7.post1", "2026-06-01", {}, False),
    ("v0.5.14", None, {}, True),
    ("not stated", "2026-05-01", {}, True),
    ("not stated", "2026-03-01", {}, False),
    ("0.5", "2026-06-01", {}, False),  # no patch number: not known to be 0.5.10 or later
    ("0.5.14", None, {"torch_compile": True}, False),
    ("0.5.14", None, {"enable_dp_attention": True}, False),
])
def test_which_sglang_entries_ran_prompt_graphs(version, date, settings, want):
    entry = {"engine": "sglang", "engine_version": version, "settings": settings,
             "source": {"date": date} if date else {}}
    assert pub.sglang_prefill_graphs(entry) is want


def test_an_old_sglang_entry_is_priced_with_prompts_op_by_op():
    base = {"id": "t", "quantity": "ttft_s", "value": 0.05, "engine": "sglang", "model_config": "meta-llama/Llama-3.1-8B",
            "gpu": "h100-sxm", "gpus": 1, "tp": 1,
            "settings": {"arrival": "closed-loop", "client": "server", "input_len": 1000, "output_len": 64,
                         "concurrency": 1}}
    old = pub.Point({**base, "engine_version": "0.5.6"})
    new = pub.Point({**base, "engine_version": "0.5.14"})
    assert not old.base.cuda_graph_prefill and new.base.cuda_graph_prefill
    assert old.predict() > new.predict()  # the old server's prompt step pays its launches
    off = pub.Point({**base, "engine_version": "0.5.14", "settings": {**base["settings"], "cuda_graphs": False}})
    assert not off.base.cuda_graph_prefill and off.base.cuda_graph_max_tokens == 0


@pytest.mark.parametrize("graphs, words", [
    ("{prefill_max_tokens: -1}", "prefill_max_tokens"),
    ("{prefill_max_tokens: some}", "prefill_max_tokens"),
    ("{prefill_max_tokens_mla: 2.5}", "prefill_max_tokens_mla"),
    ("{prefill_vendors: NVIDIA}", "prefill_vendors"),
    ("{prefill_exclude: [1, 2]}", "prefill_exclude"),
    ("{prefill: yes please}", "cuda_graphs.prefill"),
    ("{prefill_tp_only: 1}", "prefill_tp_only"),
])
def test_a_bad_prompt_graph_field_is_one_error_naming_it(tmp_path, monkeypatch, graphs, words):
    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\ntiming: {{cuda_graphs: {graphs}}}\n"})
    with pytest.raises(HardwareError, match=words):
        load_engine("vllm-v0")


def test_plan_runs_sglang_prompts_op_by_op_with_attention_dp():
    """SGLang turns its prompt graphs off with DP attention (and EP, PP): plan's DeepSeek-R1 prompt step with
    attention DP 8 costs more than the same step priced as if it replayed (the profile's ``prefill_tp_only``
    cleared), by the launches alone; at plain TP8 the rule changes nothing."""
    from planner.analysis.parallel import Layout
    from planner.cli.common import load_model
    from planner.hardware.deploy import EngineModel, plan_for, replica_step
    from planner.hardware.engine import engine_analysis

    from planner.analysis.analyze import Options, analyze

    spec = load_model("deepseek-r1").spec
    hw = load_profile("h200-sxm")
    eng = load_engine("sglang")
    a, _ = engine_analysis(analyze(spec, Options(context=2048)), eng)
    shipped = EngineModel(eng, factors_for(hw, eng))
    lifted = EngineModel(replace(eng, cuda_graph_prefill_tp_only=False), factors_for(hw, eng))

    def step(em, layout, batch):
        return replica_step(a, hw, plan_for(a, hw, layout), em, batch=batch, new_tokens=1000, cached=0).compute_s

    dp = Layout(tp=8, ep=8, attn_dp=8)
    assert step(shipped, dp, 8) > step(lifted, dp, 8) * 1.05
    assert step(shipped, Layout(tp=8), 1) == pytest.approx(step(lifted, Layout(tp=8), 1))
