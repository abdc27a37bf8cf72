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


torch = pytest.importorskip("torch", reason="verify --pp needs the torch runtime")

from tests.test_runtime import TINY  # noqa: E402


@pytest.mark.parametrize("cfg,tp", [(TINY["bloom"], 1), (dict(TINY["qwen2"], num_key_value_heads=1), 2)],
                         ids=["bloom-pp2", "qwen2-tp2-pp2"])
def test_gloo_stages_match_the_analysis_and_the_single_process_logits(cfg, tp):
    """BLOOM's tiny shape on 2 stages: fused QKV, an embedding norm (first stage), tied embeddings
    (copied onto the last stage). Qwen2's with one KV head on 2 stages of 2 tensor-parallel ranks: the
    KV head replicated on both ranks of a stage, each rank sending its half of the hidden state. Batch 3
    runs as two uneven micro-batches (2 + 1)."""
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
