"""The kernels a Python serving engine launches for each op of a step it runs op by op (``Op.launches``), and the
host floor they set (``timing.op_launches: serving``). The per-layer totals are those counted from SGLang 0.4.8's
prompt path at TP8 on Hopper (bench/published.md, "Kernel launches of an eager prompt step"), all-reduces apart:
13 a Llama layer, 23 a Qwen3-MoE layer, 32 a DeepSeek-V3 MoE layer with its shared expert fused into the routed
MoE and 37 with it run apart, as the trace runs it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import HardwareError
from planner.analysis.trace import Op, step_ops
from planner.analysis.weights import weight_format
from planner.hardware.engine import load_engine
from planner.hardware.expected import Factors, ops_times_s, step_cost
from tests.conftest import load_bundled_config


def _layer(model_id: str, dtype: str | None = None, new_tokens: int = 1000) -> list[Op]:
    spec = parse_config(load_bundled_config(model_id))
    fmt, _ = weight_format(spec, dtype)
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=new_tokens)
    return [o for o in ops if o.layer == spec.num_layers - 1]


def test_launches_per_layer_match_sglangs_prompt_path():
    llama = _layer("meta-llama/Llama-3.1-8B")
    assert sum(o.launches for o in llama) == 13
    # q/k/v run as one qkv_proj GEMM, gate/up as one gate_up_proj; the residual adds live in fused_add_rmsnorm
    assert {o.name: o.launches for o in llama if o.launches == 0} == {"k_proj": 0, "v_proj": 0, "up_proj": 0,
                                                                       "residual": 0}
    qwen = _layer("Qwen/Qwen3-30B-A3B")
    assert sum(o.launches for o in qwen) == 23
    assert [o.launches for o in qwen if o.kind in ("router", "experts")] == [4, 7]  # softmax top-k; bf16 fused_moe
    ds = _layer("deepseek-ai/DeepSeek-V3", "fp8")
    by = {o.name: o.launches for o in ds}
    shared = sum(v for k, v in by.items() if k.startswith("shared_expert."))
    assert sum(o.launches for o in ds) - shared == 32 and shared == 5
    # block-FP8 GEMMs quantize their input first; kv_a runs inside q_a's fused GEMM; grouped top-k is one kernel
    assert (by["q_a_proj"], by["kv_a_proj_with_mqa"], by["kv_b_proj"], by["o_proj"]) == (2, 0, 2, 2)
    assert (by["router"], by["experts (top-8 of 256)"], by["attention"], by["kv_a_layernorm"]) == (2, 9, 5, 2)


def test_a_weight_only_checkpoint_launches_one_kernel_per_gemm():
    """AWQ / GPTQ kernels dequantize inside the GEMM (16-bit activations): no quantization kernel, unlike FP8."""
    int4 = {o.name: o.launches for o in _layer("meta-llama/Llama-3.1-8B", "int4")}
    fp8 = {o.name: o.launches for o in _layer("meta-llama/Llama-3.1-8B", "fp8")}
    assert (int4["q_proj"], int4["down_proj"]) == (1, 1) and (fp8["q_proj"], fp8["down_proj"]) == (2, 2)


def test_the_host_floor_counts_launches_only_where_the_engine_says_serving():
    """Three 1-us ops launching 0, 2 and 9 kernels under 10 us a launch: 1 + 20 + 90 us where ``op_launches``, 10 us
    each where one launch per op; the device's least op time (3 us) still holds for the fused one."""
    ops = [Op("residual", "elementwise", "other", 0, act_read_bytes=10**6, launches=0),
           Op("q_proj", "norm", "norm", 0, act_read_bytes=10**6, launches=2),
           Op("experts", "norm", "norm", 0, act_read_bytes=10**6, launches=9)]
    f = Factors(memory_bandwidth=1.0, min_op_time_s=3e-6)
    total, floored = ops_times_s(ops, 1e15, 1e12, replace(f, op_launches=True), decode=False, floor_s=3e-6,
                                 launch_s=10e-6)
    assert total == pytest.approx(3e-6) and floored == pytest.approx(3e-6 + 20e-6 + 90e-6)
    assert ops_times_s(ops, 1e15, 1e12, f, decode=False, floor_s=3e-6, launch_s=10e-6)[1] == pytest.approx(30e-6)
    # a graph replay pays no launches: the device's floor alone
    assert ops_times_s(ops, 1e15, 1e12, replace(f, op_launches=True), decode=False, floor_s=3e-6,
                       launch_s=0.0)[1] == pytest.approx(9e-6)


def test_an_eager_steps_launch_part_is_the_floor_over_the_device_time():
    class HW:
        name = "x"
        memory_bandwidth_bytes_per_s = 1e12
        interconnect_bytes_per_s = 1e11

        def peak_flops_for(self, _key):
            return 1e15

    ops = [Op("experts", "norm", "norm", 0, act_read_bytes=10**6, launches=9)]
    f = Factors(memory_bandwidth=1.0, launch_overhead_per_op_s=10e-6, op_launches=True)
    eager = step_cost(ops, HW(), "bf16", f, decode=False, sequences=1, graph=False)
    assert eager.parts["kernel launches"] == pytest.approx(89e-6)  # 9 x 10 us, less the op's own 1 us
    assert step_cost(ops, HW(), "bf16", f, decode=False, sequences=1).parts["kernel launches"] == pytest.approx(0.0)


def test_engine_profiles_say_how_their_ops_launch(tmp_path, monkeypatch):
    assert [load_engine(n).op_launches for n in ("sglang", "vllm", "vllm-v0", "trtllm")] == [
        "serving", "serving", "serving", "one"]
    import shutil
    from pathlib import Path

    import planner.hardware.engine as E

    folder = tmp_path / "engines"
    shutil.copytree(Path(__file__).resolve().parents[1] / "profiles" / "engines", folder)
    text = (folder / "sglang.yaml").read_text()
    (folder / "sglang.yaml").write_text(text.replace("op_launches: serving", "op_launches: fused"))
    monkeypatch.setattr(E, "_engines_folder", lambda: folder)
    with pytest.raises(HardwareError, match="op_launches 'fused' is not one of serving, one"):
        load_engine("sglang")


def test_trace_json_gives_each_ops_launches():
    """``trace --json`` (a decode step) carries each op's launches: a Llama-3.1-8B layer's sum to 13, the same ops as
    its prompt step's."""
    from tests.clirun import run

    r = run("trace", "llama-3.1-8b", "--json")
    assert r.code == 0, r.err
    layer_ops = [o for o in r.json["ops"] if o.get("layers")]
    assert sum(o["launches"] for o in layer_ops) == 13
    assert {o["name"]: o["launches"] for o in layer_ops}["attention"] == 3
