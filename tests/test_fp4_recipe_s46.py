"""``--dtype fp4`` follows a named recipe (NVFP4, as ModelOpt and llm-compressor write it), and bench/published.py
runs an entry whose weights are of another width than its bundled base's quantization (an NVFP4 or MXFP4
checkpoint made from DeepSeek-R1's block FP8, INT4 experts from Kimi-K2's FP8, gpt-oss dequantized to bf16) on
that what-if, where it used to load the base's own format silently. No published figure is asserted here."""

from __future__ import annotations

import yaml

from planner.analysis.analyze import Options, analyze
from planner.cli.common import load_model
from tests.test_published_fit import pub


H, KV, F, LAYERS, VOCAB = 4096, 1024, 14336, 32, 128256  # Llama-3.1-8B
MATS = [H * H, H * KV, H * KV, H * H, H * F, H * F, F * H]  # q k v o gate up down
REST = 2 * VOCAB * H * 2 + (2 * H * LAYERS + H) * 2  # embeddings, lm_head and norms in bf16


def test_fp4_recipe_bytes_by_hand():
    """Llama-3.1-8B: every linear of every layer in fp4 e2m1 (two a byte), one fp8 scale per 16 inputs of a row
    and two fp32 global scales per tensor (NVFP4); embeddings, lm_head and norms in bf16."""
    expect = LAYERS * sum(n // 2 + n // 16 + 8 for n in MATS) + REST
    spec = load_model("llama-3.1-8b").spec
    for name in ("fp4", "nvfp4", "NVFP4"):
        a = analyze(spec, Options(dtype=name))
        assert a.weights_bytes == expect == 6_027_749_120
        assert "NVFP4" in a.fmt.describe()
        assert any("embeddings and lm_head in 16 bit" in n for n in a.notes)


def test_mxfp4_recipe_bytes_by_hand():
    """The same with OCP MXFP4 (AMD Quark): one E8M0 byte per 32 inputs of a row, no global scale."""
    a = analyze(load_model("llama-3.1-8b").spec, Options(dtype="mxfp4"))
    assert a.weights_bytes == LAYERS * sum(n // 2 + n // 32 for n in MATS) + REST == 5_809_643_520
    assert "MXFP4" in a.fmt.describe()
    assert any(n.startswith("--dtype mxfp4:") for n in a.notes)


def test_other_format_compares_widths():
    r1 = load_model("deepseek-r1").spec.quant  # block FP8
    oss = load_model("gpt-oss-120b").spec.quant  # MXFP4 experts
    assert (r1.bits, oss.bits) == (8, 4)
    assert pub.other_format("fp4", r1) and pub.other_format("mxfp4", r1) and pub.other_format("int4", r1)
    assert pub.other_format("bf16", oss)
    assert not pub.other_format("fp8", r1) and not pub.other_format("mxfp4", oss)
    assert not pub.other_format("something-else", r1)  # not a width planner knows: the base's own format


def _entry(pid: str, dtype: str) -> dict:
    return {"id": pid, "quantity": "tpot_s", "value": 0.01, "engine": "sglang", "engine_version": "0.5.6",
            "model": "some/DeepSeek-R1-checkpoint", "model_config": "deepseek-ai/DeepSeek-R1", "gpu": "b200",
            "gpus": 8, "tp": 8,
            "settings": {"arrival": "closed-loop", "client": "server", "dtype": dtype, "input_len": 1000,
                         "output_len": 100, "concurrency": 4},
            "source": {"title": "hand-made", "url": "https://example.invalid/", "quote": "-"}}


def test_published_entry_of_another_width_runs_the_recipe(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump([_entry("as-stored", "fp8"), _entry("nvfp4", "fp4")]))
    points, skipped = pub.load_points(path, None)
    assert skipped == []
    fp8, fp4 = points
    spec = load_model("deepseek-r1").spec
    assert fp8.a.weights_bytes == analyze(spec, Options()).weights_bytes  # the checkpoint's block FP8
    assert fp4.a.weights_bytes == analyze(spec, Options(dtype="fp4")).weights_bytes
    assert fp4.a.weights_bytes < 0.65 * fp8.a.weights_bytes
    # fewer weight bytes a decode step reads: the predicted step is shorter
    assert fp4.predict() < fp8.predict()


def test_memory_breakdown_names_the_what_if():
    """The serve memory table says where the weights come from: the checkpoint, or the --dtype recipe."""
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import engine_memory, load_engine
    from planner.hardware.profiles import load_profile

    spec = load_model("deepseek-r1").spec
    rows = {}
    for dtype in (None, "fp4"):
        a = analyze(spec, Options(dtype=dtype))
        m = engine_memory(a, load_profile("b200"), load_engine("vllm"), tp_plan(spec, 8))
        rows[dtype] = [r for r in m.breakdown() if r[0].startswith("weights")]
    assert rows[None] == [("weights (checkpoint)", rows[None][0][1], "checkpoint bytes / tp")]
    (label, nbytes, note), = rows["fp4"]
    assert label == "weights (--dtype)" and note.startswith("NVFP4 recipe") and nbytes < 0.65 * rows[None][0][1]
