"""An engine profile's own all-reduce latency (``timing.allreduce_latency``): vLLM V1 prices a
tensor-parallel all-reduce call at its k-fold's 20 us (25 us before session 38's refit) where the device default is 30 us. Which figure a
step uses (hardware profile, then engine, then device default), the strict parse, what it does to a TP
step, and how bench/published.py fits it apart from the device factor."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.hardware.engine import load_engine
from planner.hardware.expected import device_defaults, factors_for
from planner.hardware.profiles import HardwareError, load_profile
from planner.hardware.serve import serve
from tests.test_serve import _model


def test_vllm_prices_its_own_call_and_the_others_take_the_device_default():
    h100 = load_profile("h100-sxm")
    device = device_defaults()["allreduce_latency_s"]
    v1 = factors_for(h100, load_engine("vllm"))
    assert v1.allreduce_latency_s == pytest.approx(20e-6)
    assert v1.sources["allreduce_latency_s"] == "profiles/engines/vllm.yaml (timing.allreduce_latency)"
    assert device != pytest.approx(20e-6)
    # V0 inherits vllm.yaml but sets the field to null: the device's
    for name in ("vllm-v0", "sglang", "trtllm"):
        f = factors_for(h100, load_engine(name))
        assert f.allreduce_latency_s == device, name
        assert f.sources["allreduce_latency_s"] == "_device.yaml default", name


def test_a_hardware_profiles_own_figure_wins_over_the_engines():
    measured = replace(load_profile("h100-sxm"), allreduce_latency_s=12e-6)  # e.g. written by planner calibrate
    f = factors_for(measured, load_engine("vllm"))
    assert f.allreduce_latency_s == pytest.approx(12e-6)
    assert f.sources["allreduce_latency_s"] == "h100-sxm profile"


@pytest.mark.parametrize("bad", ["fast", "-5 us", "[25 us]"])
def test_a_malformed_engine_figure_is_refused(tmp_path, monkeypatch, bad):
    from tests.test_published_fit import _engines_copy

    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\ntiming: {{allreduce_latency: {bad}}}\n"})
    with pytest.raises(HardwareError, match="allreduce_latency"):
        load_engine("vllm-v0")


def test_a_tp_decode_step_is_cheaper_by_the_calls_times_the_difference():
    """One sequence of Llama-3.1-70B at TP8 on H100s: a decode step makes two all-reduces a layer (80 layers),
    so TPOT moves by the step's calls x (30 - 20) us."""
    h100 = load_profile("h100-sxm")
    kw = dict(gpus=8, tp=8, input_len=512, output_len=64, concurrency=1)
    own = serve(_model("llama-3.1-70b"), h100, **kw)
    device = serve(_model("llama-3.1-70b"), replace(h100, allreduce_latency_s=device_defaults()["allreduce_latency_s"]),
                   **kw)
    assert own.factors.allreduce_latency_s == pytest.approx(20e-6)
    calls = own.result.decode_step.allreduce_calls
    assert calls >= 160  # two a layer
    # vLLM schedules asynchronously: its host work hides behind a device step of either length
    diff = device.result.expected.tpot_s - own.result.expected.tpot_s
    assert diff == pytest.approx(calls * 10e-6, rel=0.02)


def _entry(engine: str, version: str) -> dict:
    """A TPOT entry of Llama-3.1-70B at TP8 on H100s, one client."""
    return {"id": f"t-{engine}", "quantity": "tpot_s", "value": 0.02, "engine": engine, "engine_version": version,
            "model": "meta-llama/Llama-3.1-70B", "model_config": "meta-llama/Llama-3.1-70B", "gpu": "h100-sxm",
            "gpus": 8, "tp": 8, "source": {"date": "2026-03-01"},
            "settings": {"arrival": "together", "client": "in-process", "input_len": 512, "output_len": 64,
                         "concurrency": 1}}


def test_benchmark_fits_an_engines_own_figure_apart_from_the_device_factor():
    from tests.test_published_fit import pub as published

    vllm = published.Point(_entry("vllm", "0.15.1"))
    sgl = published.Point(_entry("sglang", "0.5.6"))
    assert vllm.engine_allreduce and not sgl.engine_allreduce
    # the device factor's trial values move SGLang's point, not vLLM's (its profile prices its own call)
    assert vllm.predict({"allreduce_latency_s": 50e-6}) == vllm.predict()
    assert sgl.predict({"allreduce_latency_s": 50e-6}) > sgl.predict()
    # its own key moves it
    assert vllm.predict({"allreduce_latency_s@vllm": 50e-6}) > vllm.predict()
    # the whole k-fold starts it where the profile has it; another engine's only when named (--factors)
    start = published.start_params([vllm, sgl])
    assert start["allreduce_latency_s@vllm"] == pytest.approx(20e-6)
    assert start["allreduce_latency_s"] == pytest.approx(device_defaults()["allreduce_latency_s"])
    assert "allreduce_latency_s@sglang" not in start
    assert "allreduce_latency_s@sglang" in published.start_params([vllm, sgl], ("allreduce_latency_s@sglang",))
