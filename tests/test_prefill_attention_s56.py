"""Session 56's prefill attention per device (``timing.attention_prefill_efficiency_by_device``: FlashAttention-3's
measured share of the H20's peak, flash-attention issue #1310): which engines and devices take it, the op time it
gives by hand, what it moves in a served prompt and in nothing else, and the profile's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.analysis.trace import Op
from planner.hardware.engine import load_engine
from planner.hardware.expected import Factors, factors_for, step_cost
from planner.hardware.profiles import load_profile
from tests.test_device_attention_s41 import _Dev, refusal  # _Dev: 1 PFLOP/s and 1 TB/s, nothing else
from tests.test_published_fit import _engines_copy


def test_the_h20_takes_the_fa3_figure_and_every_other_device_the_engines():
    # (session 66: the figures are the large-problem rate beside the prompt attention ramp -- #1310's 0.81 at 2,048
    # tokens over the H20's ramp there, 0.888 -- and the A100s and the L40S have their own from NVIDIA's tables)
    for name in ("vllm", "vllm-v0", "sglang"):  # vllm-v0 inherits vllm's timing
        eng = load_engine(name)
        assert eng.attention_prefill_by_device["h20"] == 0.91
        assert set(eng.attention_prefill_by_device) == {"h20", "a100-40gb", "a100-80gb", "a100-pcie-80gb", "l40s"}
        h20 = factors_for(load_profile("h20"), eng)
        assert h20.attention_prefill == 0.91
        assert h20.attention_prefill * 2048 / (2048 + h20.attention_prefill_keys_half) == pytest.approx(0.81, abs=0.005)
        assert "attention_prefill_efficiency_by_device (h20)" in h20.sources["attention_prefill"]
        for other in ("h100-sxm", "h200-sxm", "mi300x"):
            f = factors_for(load_profile(other), eng)
            assert f.attention_prefill == eng.attention_prefill_efficiency and "attention_prefill" not in f.sources
    # TensorRT-LLM runs its own attention kernels, which #1310 did not measure
    trt = load_engine("trtllm")
    assert trt.attention_prefill_by_device == {}
    assert factors_for(load_profile("h20"), trt).attention_prefill == trt.attention_prefill_efficiency


def test_prefill_attention_time_by_hand():
    """A prompt step's attention of 1 TFLOP (no bytes) on a 1 PFLOP/s device whose GEMMs reach 0.9: at the engine's
    0.7 it runs at 0.9 × 0.7 = 0.63 PFLOP/s, 1.5873 ms; at the H20's 0.81 at 0.729 PFLOP/s, 1.3717 ms. Of the
    latter, 0.1111 ms is the GEMM rate's (1 ms at 0.9) and 0.2606 ms the attention kernel's share."""
    op = Op("attention", "attention", "attention", 0, flops=10**12)
    for e_attn, want in ((0.7, 1e-3 / 0.63), (0.81, 1e-3 / 0.729)):
        c = step_cost([op], _Dev(), "bf16", Factors(compute=0.9, attention_prefill=e_attn), decode=False,
                      sequences=1)
        assert c.ideal_s == pytest.approx(1e-3) and c.expected_s == pytest.approx(want)
    assert c.parts["GEMM efficiency"] == pytest.approx(1e-3 / 0.9 - 1e-3)
    assert c.parts["attention kernels"] == pytest.approx(1e-3 / 0.729 - 1e-3 / 0.9)


def _serve(engine, hw, input_len, output_len=64):
    from planner.hardware.serve import serve
    from tests.test_serve import _model

    spec = _model("llama-3.1-8b")
    return serve(spec, load_profile(hw), engine=engine, gpus=4, input_len=input_len, output_len=output_len,
                 concurrency=1).result


def test_a_long_prompt_on_the_h20_gets_faster_and_its_decode_does_not(tmp_path, monkeypatch):
    """Llama-3.1-8B at TP4 on the H20, one 32k-token prompt (the FlashPrefill paper's shape): the figure makes the
    prompt's attention 0.8 / 0.91 as long (0.7 / 0.81 before session 66's ramp), so the first token comes sooner by that share alone; a decode step's attention is the decode
    kernel's, which this figure does not touch."""
    with_it = _serve("sglang", "h20", 32768)
    _engines_copy(tmp_path, monkeypatch,
                  sglang=(Path(__file__).resolve().parents[1] / "profiles" / "engines" / "sglang.yaml").read_text()
                  .replace("attention_prefill_efficiency_by_device: {h20: 0.91, ", "attention_prefill_efficiency_by_device: {"))
    assert "h20" not in load_engine("sglang").attention_prefill_by_device
    without = _serve("sglang", "h20", 32768)
    saved = without.expected.ttft_s - with_it.expected.ttft_s
    assert saved > 0.05  # seconds: 2.32 -> 2.22 s as shipped (session 56)
    # all of it is the attention kernels' share; the GEMMs' does not move
    assert without.explain["ttft_s"]["attention kernels"] - with_it.explain["ttft_s"]["attention kernels"] \
        == pytest.approx(saved)
    assert with_it.explain["ttft_s"]["GEMM efficiency"] == pytest.approx(without.explain["ttft_s"]["GEMM efficiency"])
    assert with_it.expected.tpot_s == pytest.approx(without.expected.tpot_s)
    assert with_it.ideal.ttft_s == pytest.approx(without.ideal.ttft_s)  # the roofline does not move


@pytest.mark.parametrize("bad, words", [("{h20: 0}", "h20"), ("{h20: 1.5}", "h20"),
                                        ("0.81", "must map a hardware profile"), ("{h20: fast}", "h20")])
def test_a_bad_figure_is_one_error_naming_the_field(tmp_path, monkeypatch, bad, words):
    assert words in refusal(tmp_path, monkeypatch, "attention_prefill_efficiency_by_device", bad)
