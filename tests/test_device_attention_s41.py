"""Session 41's two AMD terms. The engines' decode attention per device (``timing.attention_decode_efficiency_by_device``:
fitted by ``bench/device_attention_fit.py`` on the published runs on MI300X and MI325X): which factor each device gets,
the op time it gives by hand, the profile's refusals, and the benchmark's per-engine refit leaving it alone. AMD's
published FP8 matmul rate in the MI300X and MI325X profiles: the fraction their FP8 GEMMs take."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.analysis.errors import HardwareError
from planner.analysis.trace import Op
from planner.hardware.engine import load_engine
from planner.hardware.expected import Factors, factors_for, step_cost
from planner.hardware.profiles import load_profile
from tests.test_published_fit import _engines_copy, load_bench


def test_a_device_listed_takes_its_figure_and_the_others_the_engines():
    for name in ("vllm", "vllm-v0", "sglang"):
        eng = load_engine(name)
        # MI355X's figure came in session 42 (bench/device_attention_fit.py --devices mi355x)
        assert eng.attention_decode_by_device == {"mi300x": 0.125, "mi325x": 0.125, "mi355x": 0.4}
        mi = factors_for(load_profile("mi300x"), eng)
        assert mi.attention_decode == 0.125
        assert "attention_decode_efficiency_by_device (mi300x)" in mi.sources["attention_decode"]
        assert factors_for(load_profile("mi355x"), eng).attention_decode == 0.4
        for other in ("h100-sxm", "h200-sxm"):
            f = factors_for(load_profile(other), eng)
            assert f.attention_decode == eng.attention_decode_efficiency and "attention_decode" not in f.sources
    assert load_engine("trtllm").attention_decode_by_device == {}


class _Dev:
    """1 PFLOP/s and 1 TB/s, nothing else."""
    memory_bandwidth_bytes_per_s = 1e12
    interconnect_bytes_per_s = None

    def peak_flops_for(self, key):
        return 1e15

    def peak_flops_key_for(self, key):
        return "bf16"


def test_decode_attention_time_by_hand():
    """A decode step's attention reading 1 GB of KV (and 1 MFLOP) at 1 TB/s, the device fraction 0.8: at vLLM's
    1.2 the kernel reads at 1.2 × 0.8 = 0.96 TB/s (below the cap 1 / 0.8): 1.0417 ms; at a device's 0.125 it reads
    at 0.125 × 0.8 = 0.1 TB/s: 10 ms, of which 0.25 ms is the device's bandwidth fraction (1 ms at 0.8 is 1.25 ms)
    and 8.75 ms the attention kernels' share."""
    op = Op("attention", "attention", "attention", 0, flops=10**6, kv_read_bytes=10**9)
    for e_attn, want in ((1.2, 1e-3 / 0.96), (0.125, 1e-2)):
        c = step_cost([op], _Dev(), "bf16", Factors(memory_bandwidth=0.8, attention_decode=e_attn), decode=True,
                      sequences=1)
        assert c.ideal_s == pytest.approx(1e-3) and c.expected_s == pytest.approx(want)
    assert c.parts["bandwidth efficiency"] == pytest.approx(0.25e-3)
    assert c.parts["attention kernels"] == pytest.approx(8.75e-3)


@pytest.mark.parametrize("bad, words", [("{mi300x: 0}", "not in (0, 1.25]"), ("{mi300x: 2}", "not in (0, 1.25]"),
                                        ("0.125", "must map a hardware profile"), ("{mi300x: fast}", "mi300x")])
def test_a_bad_figure_is_one_error_naming_the_field(tmp_path, monkeypatch, bad, words):
    assert words in refusal(tmp_path, monkeypatch, "attention_decode_efficiency_by_device", bad)


def refusal(tmp_path, monkeypatch, key: str, bad: str) -> str:
    """The one error an engine profile (vLLM V0's, inheriting vLLM's) with ``timing.<key>: <bad>`` is refused with,
    which names the field (also session 56's ``attention_prefill_efficiency_by_device``)."""
    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\ntiming: {{{key}: {bad}}}\n"})
    with pytest.raises(HardwareError, match=key) as e:
        load_engine("vllm-v0")
    return str(e.value)


def test_serve_on_mi300x_decodes_a_large_batch_slower_and_one_sequence_about_the_same():
    """Against the engine's own fraction on the same device (a user's engine profile without the device's figure),
    128 sequences of Llama-3.1-70B FP8 on 8 MI300X decode markedly slower; one sequence hardly moves."""
    from planner.cli.common import load_model
    from planner.hardware.serve import serve

    spec = load_model("llama-3.1-70b").spec
    hw = load_profile("mi300x")
    eng = load_engine("vllm")
    own = factors_for(hw, eng)
    from dataclasses import replace

    plain = replace(own, attention_decode=eng.attention_decode_efficiency)

    def tpot(c, f):
        return serve(spec, hw, engine="vllm", gpus=8, dtype="fp8", input_len=128, output_len=512, concurrency=c,
                     factors=f).result.expected.tpot_s

    assert tpot(128, own) > 1.2 * tpot(128, plain)
    assert tpot(1, own) < 1.05 * tpot(1, plain)


def test_the_benchmarks_per_engine_refit_leaves_a_listed_device_alone():
    P = load_bench("published")
    import yaml

    entries = yaml.safe_load((Path(__file__).resolve().parents[1] / "bench" / "published.yaml").read_text())
    entries = entries["entries"] if isinstance(entries, dict) else entries

    def first(pred):
        e = next(e for e in entries if pred(e))
        return P.Point(e)

    amd = first(lambda e: e["id"].startswith("s42d-rocmvllmv0901-llama70b") and "bs128" in e["id"])
    nv = first(lambda e: e["engine"] == "vllm" and e["gpu"] == "h100-sxm" and e["quantity"] == "tpot_s"
               and not e.get("excluded"))
    assert amd.base.attention_decode == 0.125
    trial = {"attention_decode@vllm": 0.5}
    assert amd.predict(trial) == amd.predict()
    assert nv.predict(trial) != nv.predict()


def test_amds_published_fp8_matmul_rate_prices_fp8_gemms_on_mi300x_and_mi325x():
    """AMD's ROCm blog (Max-Achievable FLOPs, Part 2, Table 1) gives 1,273 and 1,519 TFLOP/s of FP8 GEMM on MI300X
    and MI325X: with compute_of_mamf 1.0 their FP8 GEMMs reach 1273 / 2614.9 and 1519 / 2614.9 of the peak, where
    they took _device.yaml's compute (0.9) before; an H100's FP8 still takes that compute (its FP8 MAMF is not
    listed), and MI355X has none."""
    from planner.hardware.expected import for_column

    for dev, maf in (("mi300x", 1273e12), ("mi325x", 1519e12)):
        hw = load_profile(dev)
        f = for_column(factors_for(hw, load_engine("vllm")), hw, "fp8")
        assert f.compute == pytest.approx(maf / hw.peak_flops_per_s["fp8"])
        assert 0.48 < f.compute < 0.59
    for dev in ("h100-sxm", "mi355x"):
        hw = load_profile(dev)
        assert for_column(factors_for(hw, load_engine("vllm")), hw, "fp8").compute == 0.9
