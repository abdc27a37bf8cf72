"""Calibration that checks itself: repetition until stable, refusal of figures that disagree, the
last calibration's name carried to ``verify``, and the skinny-matmul efficiency the step model uses.

The CLI tests replace the measurement with fixed figures (a real calibration takes about a minute);
``test_runtime.py`` runs a real one end to end.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.clirun import run


def _profile(**kw):
    from planner.hardware.profiles import load_profile

    return dataclasses.replace(load_profile("cpu"), **kw)


# ---- repetition and checks (no torch needed beyond the module import) --------------------------------


@pytest.fixture
def rc():
    pytest.importorskip("torch", reason="the calibration module measures with torch")
    import planner.runtime.calibrate as rc

    return rc


def test_repeat_until_stable_stops_when_three_rounds_agree(rc):
    seq = iter([10.0, 30.0, 11.0, 10.5, 10.2, 99.0])
    fig = rc.repeat_until_stable(lambda: next(seq))
    # 10, 30, 11 spread too wide; 30, 11, 10.5 too; 11, 10.5, 10.2 agree within 10%
    assert fig.rounds == (10.0, 30.0, 11.0, 10.5, 10.2)
    assert fig.value == 10.5 and fig.stable


def test_repeat_until_stable_gives_up_and_says_so(rc):
    seq = iter([1.0, 2.0] * 10)
    fig = rc.repeat_until_stable(lambda: next(seq), max_rounds=6)
    assert len(fig.rounds) == 6 and not fig.stable and fig.spread > rc.STABLE_SPREAD


def _cal(rc, **kw):
    base = dict(device_type="cpu", device_name="Test CPU", copy_bytes_per_s=20e9, read_bytes_per_s=12e9,
                matmul_flops_per_s={"fp32": 1e11}, launch_s=7e-6, memory_bytes=64 * 2**30, threads=1, seconds=1.0,
                details={"op_launch_s": 3e-6, "buffer_bytes": 2**30, "gemm_sizes": {"fp32": 2048},
                         "load_before": (0.2, 0.2, 0.2), "load_after": (0.3, 0.2, 0.2), "cpus": 2},
                matmul_efficiency_by_rows={1: 0.08, 4: 0.15, 16: 0.4, 64: 0.7},
                figures={"copy_bytes_per_s": rc.Figure(20e9, (19e9, 20e9, 21e9))})
    base.update(kw)
    return rc.Calibration(**base)


def test_consistent_calibration_has_no_problems(rc):
    assert rc.calibration_problems(_cal(rc)) == []


def test_launch_overhead_far_from_the_bare_dispatch_is_a_problem(rc):
    """The issue's case: 675 µs per kernel saved while the same run measured 4.25 µs of bare dispatch."""
    probs = rc.calibration_problems(_cal(rc, launch_s=675e-6, details={"op_launch_s": 4.25e-6}))
    assert len(probs) == 1 and "675 µs" in probs[0] and "4.25 µs" in probs[0]


def test_read_rate_far_from_the_copy_test_is_a_problem(rc):
    probs = rc.calibration_problems(_cal(rc, read_bytes_per_s=1.0e9, copy_bytes_per_s=21e9))
    assert len(probs) == 1 and "copy test" in probs[0]


def test_an_unstable_figure_is_a_problem(rc):
    probs = rc.calibration_problems(_cal(rc, figures={"launch_s": rc.Figure(7e-6, (7e-6, 675e-6, 7.5e-6, 12e-6))}))
    assert len(probs) == 1 and "launch_s was not stable" in probs[0]


def test_busy_machine_is_reported_without_counting_our_own_threads(rc):
    assert rc.machine_busy(_cal(rc)) is None
    assert rc.machine_busy(_cal(rc, threads=2, details={"load_before": (2.5, 1, 1), "cpus": 2})) is None
    msg = rc.machine_busy(_cal(rc, details={"load_before": (4.3, 3, 2), "load_after": (5.0, 3, 2), "cpus": 2}))
    assert msg and "5.0 on 2 CPUs" in msg


def test_profile_records_how_it_was_measured(rc):
    from planner.hardware.profiles import load_profile, save_user_profile

    data = rc.calibration_profile(_cal(rc, details={**_cal(rc).details, "threads_chosen_by": "--threads",
                                                    "skinny_dtype": "fp32", "skinny_shapes_from": "Qwen/Qwen2.5-0.5B"}),
                                  "cal1")
    save_user_profile(data, "cal1")
    p = load_profile("cal1")
    assert dict(p.matmul_efficiency_by_rows) == {1: 0.08, 4: 0.15, 16: 0.4, 64: 0.7}
    assert p.matmul_efficiency_square_rows == 2048
    text = "\n".join(p.source + p.notes)
    for fragment in ("Qwen/Qwen2.5-0.5B", "threads: 1", "load average before the run: 0.20", "every figure stable",
                     "median of the last 3 rounds"):
        assert fragment in text, fragment


def test_profile_records_the_shape_and_attention_grids_with_how_they_were_measured(rc):
    from planner.hardware.profiles import load_profile, save_user_profile

    cal = _cal(rc, details={**_cal(rc).details, "shape_dtype": "fp32"},
               matmul_efficiency_by_shape={1: {512: 0.06, 4096: 0.12}, 4: {512: 0.2, 4096: 0.21}},
               attention_decode_efficiency={64: {1: 0.66, 8: 0.31}, 128: {1: 0.57, 8: 0.28}},
               matmul_efficiency_by_out={4: {1024: 0.2, 65536: 0.12}})
    save_user_profile(rc.calibration_profile(cal, "cal2"), "cal2")
    p = load_profile("cal2")
    assert {r: dict(row) for r, row in p.matmul_efficiency_by_shape.items()} == {1: {512: 0.06, 4096: 0.12},
                                                                               4: {512: 0.2, 4096: 0.21}}
    assert dict(p.attention_decode_efficiency[128]) == {1: 0.57, 8: 0.28}
    assert p.memory_efficiency == 1.0 and p.compute_efficiency == 1.0  # measured rates: no datasheet factor on top
    text = "\n".join(p.source)
    assert "matmul_efficiency_by_shape: 1, 4 rows x (1024 x K) fp32 weights for K = 512, 4096" in text
    assert "attention_decode_efficiency: scaled_dot_product_attention" in text and "head_dim 64, 128" in text
    assert {r: dict(row) for r, row in p.matmul_efficiency_by_out.items()} == {4: {1024: 0.2, 65536: 0.12}}
    assert "matmul_efficiency_by_out: 4 rows x (N x 1024) fp32 weights for N = 1024, 65536" in text


def test_model_matmul_shapes_count_the_tied_head_once(rc):
    from planner.analysis.config import parse_config

    spec = parse_config({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 300,
                         "tie_word_embeddings": True})
    shapes = {(n, k): c for n, k, c in rc.model_matmul_shapes(spec)}
    assert shapes == {(64, 64): 6, (32, 64): 6, (96, 64): 6, (64, 96): 3, (300, 64): 1}


# ---- the step model uses the skinny efficiency ------------------------------------------------------


def test_matmul_efficiency_interpolates_in_log_rows_up_to_the_square_gemm():
    p = _profile(matmul_efficiency_by_rows={1: 0.1, 4: 0.2, 64: 0.6}, matmul_efficiency_square_rows=4096)
    assert p.matmul_efficiency_at(1) == 0.1 and p.matmul_efficiency_at(4) == 0.2
    assert p.matmul_efficiency_at(2) == pytest.approx(0.15)  # halfway in log2 between 1 and 4
    assert p.matmul_efficiency_at(16) == pytest.approx(0.2 + 0.4 * 0.5)  # 16 is halfway (log) from 4 to 64
    assert p.matmul_efficiency_at(512) == pytest.approx(0.6 + 0.4 * 0.5)  # halfway from 64 to 4096
    assert p.matmul_efficiency_at(10**6) == 1.0
    assert _profile().matmul_efficiency_at(4) == 1.0  # no table: the square-GEMM peak


def test_step_time_divides_matmul_compute_by_the_efficiency_of_its_rows():
    from planner.analysis.trace import Op
    from planner.hardware.timing import step_time

    ops = [Op("q_proj", "matmul", "attention", 0, flops=10**9, weight_bytes=10), Op("attn", "attention", "attention", 0,
                                                                                     flops=10**9, weight_bytes=10)]
    p = _profile(matmul_efficiency_by_rows={4: 0.25}, kernel_launch_s=0.0)
    plain, _ = step_time(ops, p, "fp32")
    skinny, times = step_time(ops, p, "fp32", rows=4)
    peak = p.peak_flops_for("fp32")
    assert plain.compute_s == pytest.approx(2e9 / peak)
    assert times[0].compute_s == pytest.approx(1e9 / (0.25 * peak))  # the matmul
    assert times[1].compute_s == pytest.approx(1e9 / peak)  # attention is not a weight matmul


@pytest.mark.parametrize("bad", ["{0: 0.5}", "{4: 1.5}", "{4: 0}", "[0.5]", "{x: 0.5}"])
def test_bad_efficiency_table_is_one_error_line(bad):
    from tests.test_bad_input import PROFILE, err, write

    import os
    from pathlib import Path

    folder = Path(os.environ["PLANNER_CONFIG_DIR"]) / "hardware"
    write(folder / "skinny.yaml", PROFILE.replace("my-gpu", "skinny") + f"matmul_efficiency_by_rows: {bad}\n")
    err("hardware", "show", "skinny", fragments=["matmul_efficiency_by_rows"])


# ---- the command ---------------------------------------------------------------------------------------


@pytest.fixture
def fake(rc, monkeypatch):
    """``planner calibrate`` with the measurement replaced by fixed figures; ``state['cal']`` is returned."""
    state = {"cal": _cal(rc)}

    def fake_calibrate(device="cpu", *, dtypes=None, quick=False, progress=None, threads=None, shapes=None,
                       shapes_from="", spec=None):
        state["shapes"], state["spec"] = shapes, spec
        return state["cal"]

    monkeypatch.setattr(rc, "calibrate", fake_calibrate)
    return state


def test_calibrate_names_the_saved_profile_and_verify_picks_it(fake):
    from planner.hardware.profiles import last_calibration
    from planner.runtime.verify import choose_profile

    r = run("calibrate", "--device", "cpu", "--name", "cal1")
    assert r.code == 0, r.err
    assert "--hardware cal1" in r.out and "--hardware calibrated" not in r.out
    assert last_calibration() == "cal1"
    assert (896, 896, 48) in fake["shapes"]  # Qwen2.5-0.5B's q and o projections, the default shapes
    assert fake["spec"].hidden_size == 896  # the same model's width for graph_node_overhead_by_rows
    p, why = choose_profile(None, "cpu", "Test CPU")
    assert p.name == "cal1" and "last calibration" in why
    p, _ = choose_profile("calibrated", "cpu", "Test CPU")  # --hardware calibrated: the last one too
    assert p.name == "cal1"
    r = run("calibrate", "--device", "cpu", "--name", "cal2")
    assert r.code == 0 and choose_profile(None, "cpu", "Test CPU")[0].name == "cal2"


def test_calibrate_refuses_to_save_disagreeing_figures_unless_forced(fake, rc, tmp_path):
    fake["cal"] = _cal(rc, launch_s=675e-6, details={"op_launch_s": 4.25e-6})
    folder = tmp_path / "planner-config" / "hardware"
    r = run("calibrate", "--device", "cpu", "--name", "bad")
    r.assert_error("not saved", "--force", code=1)
    assert not (folder / "bad.yaml").exists()
    r = run("calibrate", "--device", "cpu", "--name", "bad", "--force", "--json")
    assert r.code == 0 and (folder / "bad.yaml").exists()
    assert r.json["problems"] and "675 µs" in r.json["problems"][0]
