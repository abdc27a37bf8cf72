"""verify's prediction is planner's one step model (hardware.serve.StepModel) on the torch runtime's
engine profiles: the factor arithmetic by hand, no timing (what verify measures is bench/verify_cpu.py's)."""

from __future__ import annotations

import dataclasses

import pytest

from planner.analysis.trace import Op


def _hw(**kw):
    from planner.hardware.profiles import load_profile

    base = dict(memory_bandwidth_bytes_per_s=10e9, peak_flops_per_s={"fp32": 100e9}, kernel_launch_s=5e-6,
                memory_efficiency=1.0, compute_efficiency=1.0, matmul_efficiency_by_rows=None,
                matmul_efficiency_square_rows=None)
    base.update(kw)
    return dataclasses.replace(load_profile("cpu"), **base)


# a 1-row matmul: 2 MFLOP, 4 MB of weights (+ 8 kB activations); a norm of 8 kB; 3 + 7 kernels
MATMUL = Op("q_proj", "matmul", "attention", 0, flops=2 * 10**6, weight_bytes=4 * 10**6, act_read_bytes=4000,
            act_write_bytes=4000, kernels=3)
NORM = Op("norm", "norm", "norm", 0, act_read_bytes=4000, act_write_bytes=4000, kernels=7)


@pytest.mark.parametrize("name, mode", [("torch-cpu-eager", "serial"), ("torch-cuda-eager", "overlapped"),
                                        ("torch-cuda-graphs", "graph")])
def test_torch_engines_take_the_launch_cost_from_the_hardware_profile(name, mode):
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for

    eng = load_engine(name)
    assert eng.kernel_launches == mode and eng.step_overhead_s == 0.0
    f = factors_for(_hw(kernel_launch_s=7e-6), eng)
    assert f.kernel_launches == mode and f.kernel_launch_s == 7e-6
    assert f.memory_bandwidth == 1.0 and f.compute == 1.0  # a calibrated profile's rates are the achieved ones
    assert "kernel_launch_overhead" in f.sources["kernel_launch_s"]
    assert factors_for(_hw(), load_engine("vllm")).kernel_launch_s == 0.0  # serving engines: their step overhead


def test_serial_launches_add_every_kernel_to_the_device_time():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    f = factors_for(_hw(), load_engine("torch-cpu-eager"))
    # ideal: max(2e6 / 100e9, 4.008e6 / 10e9) = 400.8 µs for the matmul, 8e3 / 10e9 = 0.8 µs for the norm;
    # expected: the matmul's compute and memory joined by the ridge curve (p = 2 from _device.yaml)
    c = step_cost([MATMUL, NORM], _hw(), "fp32", f, decode=True, sequences=1, rows=1)
    assert f.gemm_ridge_exponent == 2.0 and c.ideal_s == pytest.approx(400.8e-6 + 0.8e-6)
    device = (20e-6 ** 2 + 400.8e-6 ** 2) ** 0.5 + 0.8e-6
    assert c.parts["step overhead"] == pytest.approx(10 * 5e-6)  # 3 + 7 kernels × 5 µs
    assert c.expected_s == pytest.approx(device + 50e-6)
    c = step_cost([MATMUL, NORM], _hw(), "fp32", f, decode=True, sequences=1, rows=1, kernels=100)
    assert c.parts["step overhead"] == pytest.approx(100 * 5e-6)  # the decoder's counted kernels win


def test_overlapped_launches_cost_only_what_the_host_adds_and_a_graph_one_launch():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw()
    f = factors_for(hw, load_engine("torch-cuda-eager"))
    device = (20e-6 ** 2 + 400.8e-6 ** 2) ** 0.5 + 0.8e-6  # as in the serial case
    c = step_cost([MATMUL, NORM], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=10)
    assert c.parts["step overhead"] == 0.0  # 50 µs of launches hide behind 401.6 µs of device work
    c = step_cost([MATMUL, NORM], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=1000)
    assert c.parts["step overhead"] == pytest.approx(1000 * 5e-6 - device)  # host-bound: 5 ms of launches
    assert c.expected_s == pytest.approx(5e-3)
    g = factors_for(hw, load_engine("torch-cuda-graphs"))
    c = step_cost([MATMUL, NORM], hw, "fp32", g, decode=True, sequences=1, rows=1, kernels=1000)
    assert c.parts["step overhead"] == pytest.approx(5e-6)


def test_calibrated_rows_efficiency_prices_the_matmul():
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for, step_cost

    hw = _hw(matmul_efficiency_by_rows={1: 0.004, 4: 0.01})
    f = factors_for(hw, load_engine("torch-cpu-eager"))
    c = step_cost([MATMUL], hw, "fp32", f, decode=True, sequences=1, rows=1, kernels=0)
    # 2 MFLOP at 0.004 × 100 GFLOP/s = 5 ms, above the 400.8 µs of bytes
    assert c.expected_s == pytest.approx(5e-3)
    assert c.parts["GEMM efficiency"] == pytest.approx(5e-3 - 400.8e-6)
