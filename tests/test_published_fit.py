"""bench/published.py's k-fold machinery on small hand-made cases: the objective, the coordinate search
(several sweeps until nothing changes), the source of an entry and the grouping of whole sources into
folds. No published figure or prediction is asserted here: those are the script's output."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_bench(name: str):
    """The script ``bench/<name>.py`` as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pub = load_bench("published")


def test_objective_l1_and_median_by_hand():
    errs = [[0.1, 0.2, 0.9], [0.4]]  # quantity A: three points, quantity B: one
    # l1: mean of (0.4, 0.4) -- each quantity weighs the same whatever its count
    assert pub.objective_value(errs, "l1") == pytest.approx(0.4)
    # median: A's median is its middle point 0.2, so (0.2 + 0.4) / 2
    assert pub.objective_value(errs, "median") == pytest.approx(0.3)


class Toy:
    """A stand-in for Point: prediction = published x (a / a*) x (b / b*) with the truth a*, b*."""

    def __init__(self, pid, quantity, a_true, b_true, engine="e"):
        self.id, self.quantity, self.value, self.engine_name = pid, quantity, 1.0, engine
        self.a_true, self.b_true = a_true, b_true

    def predict(self, params=None):
        return (params["memory_bandwidth"] / self.a_true) * (params["compute"] / self.b_true)


GRID = {"memory_bandwidth": [0.5, 0.6, 0.7, 0.8], "compute": [0.5, 0.6, 0.7, 0.8],
        "allreduce_latency_s": [0.0]}
START = {"memory_bandwidth": 0.5, "compute": 0.5, "allreduce_latency_s": 0.0}


def _power(pid, quantity, ea, eb, a_true=0.7, b_true=0.6):
    p = Toy(pid, quantity, a_true, b_true)
    p.predict = lambda params: (params["memory_bandwidth"] / a_true) ** ea * (params["compute"] / b_true) ** eb
    return p


def test_fit_sweeps_until_nothing_changes():
    # truth a = 0.7, b = 0.6; TTFT = (a/0.7)(b/0.6), e2e = (a/0.7)(b/0.6)^2; in logs x = ln(a/0.7), y = ln(b/0.6).
    # From a = b = 0.5 (y = -0.182), sweep 1 sets a: |x - 0.182| + |x - 0.365| falls as x rises to the grid's
    # end, a = 0.8 (x = 0.134): 0.279. Then b with x = 0.134: b = 0.6 gives 0.268, b = 0.5 0.279: b = 0.6.
    # One sweep stops at (0.8, 0.6); sweep 2 moves a to 0.7 (both errors 0) and sweep 3 changes nothing.
    pts = [_power("t", "ttft_s", 1, 1), _power("e", "e2e_s", 1, 2)]
    one = pub.fit(pts, START, objective="l1", max_sweeps=1, grid=GRID)
    assert (one["memory_bandwidth"], one["compute"]) == (0.8, 0.6)
    many = pub.fit(pts, START, objective="l1", max_sweeps=20, grid=GRID)
    assert (many["memory_bandwidth"], many["compute"]) == (0.7, 0.6)


def test_fit_l1_lands_on_the_middle_point_where_the_median_lands_between():
    # TPOT sees a only; truths a* = 0.5, 0.6, 0.8; |log errors| |ln(a / a*)| on the grid:
    #   a = 0.5: 0, 0.182, 0.470 (median 0.182, mean 0.217)
    #   a = 0.6: 0.182, 0, 0.288 (median 0.182, mean 0.157)
    #   a = 0.7: 0.336, 0.154, 0.134 (median 0.154, mean 0.208)
    #   a = 0.8: 0.470, 0.288, 0 (median 0.288, mean 0.253)
    # the median of |errors| is least at 0.7, which fits none of the three; the L1 mean at 0.6, the median
    # of the truths (a single factor's L1 minimiser is the median of the signed log ratios)
    def tpot(pid, a_true):
        p = Toy(pid, "tpot_s", a_true, 1.0)
        p.predict = lambda params: params["memory_bandwidth"] / a_true
        return p

    pts = [tpot(f"p{i}", a) for i, a in enumerate((0.5, 0.6, 0.8))]
    assert pub.fit(pts, START, objective="median", grid=GRID)["memory_bandwidth"] == 0.7
    assert pub.fit(pts, START, objective="l1", grid=GRID)["memory_bandwidth"] == 0.6


def test_fit_leaves_a_factor_no_training_point_of_its_engine_sees():
    p = Toy("t", "tpot_s", 0.7, 1.0)
    p.predict = lambda params: params["memory_bandwidth"] / 0.7
    start = {**START, "step_overhead_s@vllm": 0.003}
    grid = {**GRID, "step_overhead_s": [0.0, 0.001]}
    got = pub.fit([p], start, grid=grid)
    assert got["step_overhead_s@vllm"] == 0.003 and got["memory_bandwidth"] == 0.7


def test_fit_leaves_a_not_fitted_factor_at_its_start_though_a_point_moves_with_it():
    """gpt-fast's launch floor (``NOT_FITTED``) keeps the shipped value even where its points would pull it."""
    key = "launch_overhead_per_op_s@gptfast"
    assert key in pub.NOT_FITTED
    p = Toy("t", "tpot_s", 0.7, 1.0, engine="gptfast")
    p.predict = lambda params: params["memory_bandwidth"] / 0.7 * (1 + params[key] / 1e-6)  # best at 0
    start = {**START, key: 2e-6}
    grid = {**GRID, "launch_overhead_per_op_s": [0.0, 2e-6]}
    got = pub.fit([p], start, objective="l1", max_sweeps=20, grid=grid)
    assert got[key] == 2e-6  # 0 would fit better; it is not searched
    assert got["memory_bandwidth"] == 0.5  # the other factors compensate as far as the grid goes


def test_fits_in_forked_processes_equal_the_fits_in_one():
    """``run_fits`` with two processes returns, in order, what each training set's fit gives in this one:
    here the truths differ by point, so the two training sets land on different values."""
    def tpot(pid, a_true):
        p = Toy(pid, "tpot_s", a_true, 1.0)
        p.predict = lambda params: params["memory_bandwidth"] / a_true
        return p

    pts = [tpot(f"p{i}", a) for i, a in enumerate((0.5, 0.6, 0.8, 0.8))]
    trains = [[0, 1], [2, 3], [0, 1, 2, 3]]
    how = dict(objective="l1", max_sweeps=20, grid=GRID)
    one = pub.run_fits(pts, trains, how, jobs=1, start=lambda train: START)
    assert [r["memory_bandwidth"] for r in one] == [0.5, 0.8, 0.6]  # ties keep the earlier grid value
    assert pub.run_fits(pts, trains, how, jobs=2, start=lambda train: START) == one


def test_source_key():
    repo = {"id": "a", "source": {"repo": "o/r", "commit": "c" * 40, "path": "README.md", "url": "https://x/y"}}
    assert pub.source_key(repo) == "o/r@" + "c" * 40
    other_file = {"id": "b", "source": {"repo": "o/r", "commit": "c" * 40, "path": "sub/README.md"}}
    assert pub.source_key(other_file) == pub.source_key(repo)  # one repository at one commit is one source
    assert pub.source_key({"id": "c", "source": {"url": "https://h/p#table-2"}}) == "https://h/p"
    assert pub.source_key({"id": "d", "source": {"title": "T"}}) == "T"
    assert pub.source_key({"id": "e"}) == "e"


def test_assign_groups_by_hand():
    # 5 -> fold 0; 3 -> fold 1; 3 -> fold 1 (3 < 5); 1 -> fold 0 (5 < 6): totals 6 and 6
    got = pub.assign_groups({"a": (5,), "b": (3,), "c": (3,), "d": (1,)}, 2)
    assert got == {"a": 0, "b": 1, "c": 1, "d": 0}
    # the second element breaks ties of the first: x and y both have 2 timing points, y more in all
    got = pub.assign_groups({"x": (2, 2), "y": (2, 9), "z": (0, 4)}, 2)
    assert got == {"y": 0, "x": 1, "z": 1}
    # more folds than groups: the extra folds stay empty
    assert pub.assign_groups({"a": (1,)}, 3) == {"a": 0}


class P:
    def __init__(self, pid, quantity, src):
        self.id, self.quantity, self.entry = pid, quantity, {"id": pid, "source": {"url": src}}


def test_split_folds_keeps_each_source_whole():
    order = [P("a1", "tpot_s", "A"), P("a2", "ttft_s", "A"), P("a3", "kv_capacity_tokens", "A"),
             P("b1", "tpot_s", "B"), P("c1", "weights_gib", "C"), P("c2", "weights_gib", "C"),
             P("d1", "e2e_s", "D")]
    folds = pub.split_folds(order, 2, "source")
    # sizes (timing, all): A (2, 3), B (1, 1), D (1, 1), C (0, 2), taken in that order. A -> fold 0; B -> fold 1
    # ((0, 0) < (2, 3)); D -> fold 1 ((1, 1) < (2, 3)), now (2, 2); C -> fold 1 ((2, 2) < (2, 3))
    assert folds == [0, 0, 0, 1, 1, 1, 1]
    assert pub.split_folds(order, 3, "id") == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("engine, version, profile", [
    ("vllm", "0.7.3", "vllm-v0"),  # V0 was the default before 0.8
    ("vllm", "0.2.6 (main, Dec 2023)", "vllm-v0-early"),  # before v0.6.0's cut of the host work per sequence
    ("vllm", "0.5.4", "vllm-v0-early"),
    ("vllm", "0.6.0", "vllm-v0"),
    ("vllm", "0.6.4.post2.dev (main, Dec 2024)", "vllm-v0"),
    ("vllm", "0.8.5", "vllm"),  # V1 by default from 0.8
    ("vllm", "0.11.0", "vllm"),  # two-digit minor: compared as a number, not as text
    ("vllm", "1.0.0", "vllm"),
    ("vllm", "main @ a89015c6df (July 2026)", "vllm"),  # no release number: the V1 profile
    ("vllm", None, "vllm"),
    ("sglang", "0.3.0", "sglang"),  # only vLLM has a V0 profile
    ("nim", "1.8.0", "trtllm"),
])
def test_engine_profile_of_maps_vllm_before_0_8_to_the_v0_profile(engine, version, profile):
    assert pub.engine_profile_of({"engine": engine, "engine_version": version}) == profile


@pytest.mark.parametrize("version, chosen, profile", [
    ("0.9.2.dev364+gb432b7a28", "v0", "vllm-v0"),  # VLLM_USE_V1=0 on a release whose default is V1 (ROCm images)
    ("0.7.3", "v1", "vllm"),  # VLLM_USE_V1=1 before V1 was the default
    ("0.9.2", None, "vllm"),
])
def test_engine_profile_of_follows_the_engine_a_vllm_run_chose(version, chosen, profile):
    entry = {"engine": "vllm", "engine_version": version, "settings": {} if chosen is None else {"vllm_engine": chosen}}
    assert pub.engine_profile_of(entry) == profile


@pytest.mark.parametrize("engine, chosen", [("vllm", "v2"), ("vllm", "V0"), ("sglang", "v0")])
def test_engine_profile_of_refuses_an_unknown_or_misplaced_vllm_engine(engine, chosen):
    with pytest.raises(ValueError, match="vllm_engine"):
        pub.engine_profile_of({"engine": engine, "engine_version": "0.9.2", "settings": {"vllm_engine": chosen}})


def test_the_v0_profile_loads_and_differs_from_v1_where_its_header_says():
    from planner.hardware.engine import load_engine

    v0, v1 = load_engine("vllm-v0"), load_engine("vllm")
    assert (v0.name, v1.name) == ("vllm-v0", "vllm")
    # V0 replays CUDA graphs for decode batches of up to 256 sequences and never for prompts
    assert [r.value for r in v0.cuda_graph_max_tokens_rules] == [256]
    assert v0.cuda_graph_prefill is False and v1.cuda_graph_prefill is True
    assert [r.value for r in v0.max_num_seqs_rules] == [256]
    # the memory accounting is V1's
    assert (v0.fraction, v0.block_size, v0.non_torch_single_bytes) == (v1.fraction, v1.block_size,
                                                                       v1.non_torch_single_bytes)


def _engines_copy(tmp_path, monkeypatch, **files):
    """The shipped engine profiles in a folder of their own, with ``files`` (name -> YAML text) written over."""
    import shutil

    import planner.hardware.engine as E

    folder = tmp_path / "engines"
    shutil.copytree(Path(__file__).resolve().parents[1] / "profiles" / "engines", folder)
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text)
    monkeypatch.setattr(E, "_engines_folder", lambda: folder)


def test_inherits_replaces_only_what_the_child_gives(tmp_path, monkeypatch):
    """A nested key replaced keeps its siblings; a list of rules is replaced whole; the rest is the parent's."""
    from planner.hardware.engine import load_engine

    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": "inherits: vllm\ntiming: {step_overhead: 3 ms}\n"
                                                      "scheduler: {max_num_seqs: [{value: 64}]}\n"})
    child, parent = load_engine("vllm-v0"), load_engine("vllm")
    assert child.step_overhead_s == pytest.approx(3e-3) and parent.step_overhead_s != child.step_overhead_s
    assert [r.value for r in child.max_num_seqs_rules] == [64]  # vllm's two rules gone
    assert len(parent.max_num_seqs_rules) == 2
    # siblings of the replaced keys, and whole sections the child does not name, are vllm's
    assert child.launch_overhead_per_op_s == parent.launch_overhead_per_op_s
    assert child.max_num_batched_tokens_rules == parent.max_num_batched_tokens_rules
    assert (child.fraction, child.block_size) == (parent.fraction, parent.block_size)
    assert child.name == "vllm-v0"


@pytest.mark.parametrize("files", [
    {"vllm-v0": "inherits: vllm-v0\n"},  # itself
    {"vllm-v0": "inherits: gptfast\n", "gptfast": "inherits: vllm-v0\n"},  # a loop
    {"vllm-v0": "inherits: nosuch\n"},
    {"vllm-v0": "inherits: ../vllm\n"},
])
def test_inherits_other_than_another_profile_is_one_error(tmp_path, monkeypatch, files):
    from planner.analysis.errors import HardwareError
    from planner.hardware.engine import load_engine

    _engines_copy(tmp_path, monkeypatch, **files)
    with pytest.raises(HardwareError, match="inherits"):
        load_engine("vllm-v0")


def test_a_broken_inherits_through_the_cli_is_one_error_line(tmp_path, monkeypatch):
    from tests.clirun import run

    _engines_copy(tmp_path, monkeypatch, sglang="inherits: sglang\n")
    run("serve", "llama-3.1-8b", "--engine", "sglang").assert_error("inherits")


def test_sharegpt_entry_runs_geometric_lengths_cut_at_the_dataset_filter():
    """A ``dataset: sharegpt`` entry gives the run's mean lengths; its outputs are simulated with that mean,
    cut where vLLM's and SGLang's ShareGPT filter drops pairs (prompt + output over 2,048 tokens): a 215-token
    prompt with mean output 194 runs as --output-len 1833 --mean-output-len 194. An entry that gives its own
    mean_output_len keeps its lengths, and one without the dataset key runs its fixed lengths."""
    entry = {"id": "t", "quantity": "output_tokens_per_s", "value": 1.0, "engine": "vllm",
             "model_config": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm", "gpus": 1, "tp": 1,
             "settings": {"arrival": "closed-loop", "client": "server", "input_len": 215, "output_len": 194,
                          "concurrency": 8, "num_prompts": 16, "dataset": "sharegpt"}}
    sc = pub.Point(entry).scenario
    assert pub.SHAREGPT_MAX_TOTAL_LEN == 2048
    assert (sc.input_len, sc.output_len, sc.mean_output_len) == (215, 2048 - 215, 194.0)
    own = {**entry, "settings": {**entry["settings"], "output_len": 512, "mean_output_len": 300}}
    sc = pub.Point(own).scenario
    assert (sc.output_len, sc.mean_output_len) == (512, 300)
    plain = {**entry, "settings": {k: v for k, v in entry["settings"].items() if k != "dataset"}}
    sc = pub.Point(plain).scenario
    assert (sc.output_len, sc.mean_output_len) == (194, None)


def test_an_entrys_cuda_graph_sizes_replace_the_engines_default_and_speed_up_its_large_decode_steps():
    """TensorRT-LLM's perf-overview runs captured decode graphs up to batch 8192 (``cuda_graph_config.batch_sizes``);
    the engine profile's default graphs stop at 128. An entry with ``cuda_graph_max_tokens: 8192`` prices its
    decode steps of 512 sequences as graph replays (no per-op launch floor), so the run comes out faster than at
    the default, where they run op by op. ``cuda_graphs: false`` leaves those steps as they were and takes
    the graphs from a 64-sequence run, which comes out slower."""
    entry = {"id": "t", "quantity": "output_tokens_per_s", "value": 1.0, "engine": "trtllm",
             "model_config": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm", "gpus": 1, "tp": 1,
             "settings": {"arrival": "together", "client": "in-process", "input_len": 128, "output_len": 64,
                          "request_rate": "inf", "num_requests": 512}}

    def point(**kw):
        return pub.Point({**entry, "settings": {**entry["settings"], **kw}})

    default, big = point(), point(cuda_graph_max_tokens=8192)
    assert (default.base.cuda_graph_max_tokens, big.base.cuda_graph_max_tokens) == (128, 8192)
    assert big.predict() > 1.01 * default.predict()
    assert point(cuda_graphs=False).predict() == default.predict()  # 512 > 128: op by op either way
    small, small_none = point(num_requests=64), point(num_requests=64, cuda_graphs=False)
    assert small_none.base.cuda_graph_max_tokens == 0
    assert small_none.predict() < small.predict()


@pytest.mark.parametrize("bad", ["{fp8_block: {h100-sxm: 0}}", "{fp8_block: {h100-sxm: 1.5}}", "{fp8_block: 0.37}",
                                 "{fp8: {h100-sxm: 0.5}}", "0.37", "null"])
def test_a_bad_experts_compute_efficiency_is_one_error_naming_the_field(tmp_path, monkeypatch, bad):
    """``timing.experts_compute_efficiency`` maps a known weight format to {hardware profile: fraction in (0, 1]}:
    a zero or too-large fraction, a bare number, an unknown format or a null is one HardwareError naming it."""
    from planner.analysis.errors import HardwareError
    from planner.hardware.engine import load_engine

    _engines_copy(tmp_path, monkeypatch,
                  **{"vllm-v0": f"inherits: vllm\ntiming: {{experts_compute_efficiency: {bad}}}\n"})
    with pytest.raises(HardwareError, match="experts_compute_efficiency"):
        load_engine("vllm-v0")


@pytest.mark.parametrize("bad", ["{fp4: 0}", "{fp4: 1.5}", "0.38", "0", "null"])
def test_a_bad_experts_efficiency_is_one_error_naming_the_field(tmp_path, monkeypatch, bad):
    """``timing.experts_efficiency`` is a mapping of peak column to a fraction in (0, 1]: anything else is one
    HardwareError that names the field."""
    from planner.analysis.errors import HardwareError
    from planner.hardware.engine import load_engine

    _engines_copy(tmp_path, monkeypatch, **{"vllm-v0": f"inherits: vllm\ntiming: {{experts_efficiency: {bad}}}\n"})
    with pytest.raises(HardwareError, match="experts_efficiency"):
        load_engine("vllm-v0")


def fitted_lines(out: str) -> list[str]:
    """The "factor: value" lines bench/published.py prints under "factors fitted on all points"."""
    fitted = out.split("factors fitted on all points", 1)[1].split("factors per fold", 1)[0]
    return [x.strip() for x in fitted.splitlines()[1:] if x.strip()]


def refit(capsys, ids: list[str], factors: str, *grid: str) -> str:
    """bench/published.py's printout of a two-fold refit of ``factors`` alone on the points ``ids``, searched on
    ``grid`` (``--grid-values``); the run must succeed."""
    assert pub.main(["--only", *ids, "--folds", "2", "--factors", factors, "--grid-values", *grid]) == 0
    return capsys.readouterr().out


def test_factors_refits_only_those_on_their_engines_points(capsys):
    """--factors NAME@ENGINE refits those factors alone, every other as shipped, on the points of their engines:
    the table holds no point of another engine, and the fitted factors are the ones named, searched on
    --grid-values."""
    ids = ["accelmark-vllm0201-llama3-8b-b200-interactive-c1-tpot-p50",
           "accelmark-vllm0201-llama31-8b-b200-longctx-interactive-c1-ttft-p50",
           "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft",
           "trtllm-perf090-llama2-7b-h100-sxm-fp8-tp1-ttft-128"]
    out = refit(capsys, ids, "request_overhead_s@vllm", "request_overhead_s=0,0.002,0.064")
    assert "trtllm-perf090" not in out
    lines = fitted_lines(out)
    assert len(lines) == 1 and lines[0].split(":")[0] == "request_overhead_s@vllm"
    # a value the search visited: one on the grid, or the shipped one it starts from where none beats it
    from planner.hardware.engine import load_engine

    assert float(lines[0].split(":")[1]) in (0.0, 0.002, 0.064, load_engine("vllm").request_overhead_s)


def test_a_device_factor_is_refitted_on_the_points_it_moves(capsys):
    """--factors allreduce_latency_s (a device factor) keeps only the points whose prediction it moves: a
    TP4 run, not a one-GPU one."""
    ids = ["vllm-i16300-qwq32b-a100-tp4-bs16-e2e", "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft"]
    out = refit(capsys, ids, "allreduce_latency_s", "allreduce_latency_s=0,0.00003")
    assert "vllm-i16300-qwq32b-a100-tp4-bs16-e2e" in out and "vllm-pr23151-qwen3-30b-a3b-h100-tp1" not in out
    lines = fitted_lines(out)
    assert len(lines) == 1 and lines[0].split(":")[0] == "allreduce_latency_s"


def test_weight_only_int4_is_refitted_on_the_points_it_moves(capsys):
    """--factors weight_only_int4@vllm (named only, never in the whole k-fold) keeps the vLLM points whose
    prediction it moves: gpt-oss-120b's MXFP4 experts through Marlin on an H100, not a bf16 Qwen3 run."""
    ids = ["infx828-gptoss120b-h100-vllm-tp8-1k1k-c16-tpot", "infx828-gptoss120b-h100-vllm-tp2-1k1k-c64-tpot",
           "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft"]
    out = refit(capsys, ids, "weight_only_int4@vllm", "weight_only_int4=0.5,1.0")
    assert "infx828-gptoss120b-h100-vllm-tp2-1k1k-c64-tpot" in out and "vllm-pr23151" not in out
    lines = fitted_lines(out)
    assert len(lines) == 1 and lines[0].split(":")[0] == "weight_only_int4@vllm"
    # a grid value, or the profile's own where neither scores better (the sweep starts from the shipped value)
    from planner.hardware.engine import load_engine

    shipped = load_engine("vllm").weight_only_efficiency["int4"]
    assert float(lines[0].split(":")[1]) in (0.5, 1.0, shipped)


@pytest.mark.parametrize("bad", [["--factors", "compute@vllm"], ["--factors", "nonsense@vllm"], ["--factors", "nonsense"],
                                 ["--factors", "allreduce_latency_s,request_overhead_s@vllm"],
                                 ["--grid-values", "request_overhead_s=a,b"]])
def test_factors_and_grid_values_refuse_what_they_cannot_fit(bad):
    with pytest.raises(SystemExit) as e:
        pub.main(["--only", "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft", *bad])
    assert e.value.code == 2


def test_an_engines_own_all_reduce_latency_is_refitted_on_its_tp_points_and_beside_its_overheads_on_all(capsys):
    """--factors allreduce_latency_s@vllm alone keeps the vLLM points it moves (a TP8 run, not a one-GPU one);
    named beside an engine overhead, which moves every point of the engine, all of the engine's points stay.
    The device factor allreduce_latency_s no longer moves vLLM V1's TP8 point: its profile prices its own call."""
    ids = ["infx828-gptoss120b-h100-vllm-tp8-1k1k-c16-tpot", "vllm-pr23151-qwen3-30b-a3b-h100-tp1-c10-ttft"]
    out = refit(capsys, ids, "allreduce_latency_s@vllm", "allreduce_latency_s=0.00002,0.00003")
    assert "infx828-gptoss120b-h100-vllm-tp8-1k1k-c16-tpot" in out and "vllm-pr23151" not in out
    lines = fitted_lines(out)
    assert len(lines) == 1 and lines[0].split(":")[0] == "allreduce_latency_s@vllm"
    out = refit(capsys, ids, "allreduce_latency_s@vllm,request_overhead_s@vllm", "allreduce_latency_s=0.00002,0.00003",
                "request_overhead_s=0,0.002")
    assert "infx828-gptoss120b-h100-vllm-tp8-1k1k-c16-tpot" in out and "vllm-pr23151" in out
    out = refit(capsys, ids, "allreduce_latency_s", "allreduce_latency_s=0,0.00005")
    assert "infx828-gptoss120b-h100-vllm-tp8-1k1k-c16-tpot" not in out


def test_a_figure_beyond_its_own_roofline_is_listed_and_a_reachable_one_is_not():
    """``beyond_roofline``: 64 prompts of 8,192 tokens on one H100 take Llama-3.1-8B some 8.5 PFLOP of prefill, over
    8 s at the bf16 peak, so a mean TTFT of 10 ms (or 10 million output tokens/s) is no run as described; 100 s, or
    100 tokens/s, is reachable, and a memory figure has no roofline."""
    base = {"engine": "vllm", "model_config": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm", "gpus": 1, "tp": 1,
            "settings": {"arrival": "together", "client": "in-process", "input_len": 8192, "output_len": 16,
                         "concurrency": 64}}
    pts = [pub.Point({**base, "id": i, "quantity": q, "value": v})
           for i, q, v in (("fast", "ttft_s", 0.01), ("slow", "ttft_s", 100.0), ("many", "output_tokens_per_s", 1e7),
                           ("few", "output_tokens_per_s", 100.0), ("kv", "kv_capacity_tokens", 1.0))]
    listed = {p.id: r for p, r in pub.beyond_roofline(pts)}
    assert set(listed) == {"fast", "many"}
    assert 4.0 < listed["fast"] < 100.0  # the roofline's own TTFT: seconds, not the published 10 ms
    assert pts[4].ideal() is None


def test_a_run_whose_own_figures_put_fewer_requests_in_flight_than_its_concurrency_is_listed():
    """``implied_concurrency`` (Little's law): 100 clients asking 2,000 tokens each that finish in 26 s at 2,744
    output tokens/s had 2,744 / 2,000 x 26 = 35.7 requests in flight, not 100 (listed); at 7,600 tokens/s, 98.8
    (not listed). A per-GPU throughput counts every GPU; runs of drawn output lengths and runs without both
    figures are not checked."""
    def run(rid, c, e2e, tps, **extra):
        s = {"arrival": "together", "input_len": 1750, "output_len": 2000, "concurrency": c, **extra.pop("s", {})}
        base = {"engine": "vllm", "model": "m", "gpu": "h100-sxm", "gpus": extra.pop("gpus", 1), "settings": s,
                "source": {"url": f"https://example.org/{rid}"}}
        return [{**base, "id": f"{rid}-e2e", "quantity": "e2e_s", "value": e2e},
                {**base, "id": f"{rid}-tput", "quantity": "output_tokens_per_s", "value": tps},
                {**base, "id": f"{rid}-ttft", "quantity": "ttft_s", "value": 0.4}]

    entries = (run("capped", 100, 26.0, 2744.0) + run("full", 100, 26.0, 7600.0)
               + run("pergpu", 100, 26.0, 1900.0, gpus=4, s={"throughput_unit": "per_gpu"})
               + run("drawn", 100, 26.0, 2744.0, s={"output_len_dist": "uniform:1000:3000"})
               + [e for e in run("noe2e", 100, 26.0, 2744.0) if e["quantity"] != "e2e_s"])
    listed = {e["id"]: (c, flight) for e, c, flight in pub.implied_concurrency(entries)}
    assert set(listed) == {"capped-e2e"}
    c, flight = listed["capped-e2e"]
    assert c == 100 and flight == pytest.approx(2744.0 / 2000 * 26.0)
    # the entries of one run share a key; a different setting is a different run
    assert pub.run_key(entries[0]) == pub.run_key(entries[1]) != pub.run_key(entries[3])


@pytest.mark.parametrize("text, says", [
    (None, "No such file"),                      # missing
    ("a: [1\n", "not YAML"),                     # broken YAML
    ("- 1\n- 2\n", "each with an id"),           # a list, but not of entries
    ("id: x\n", "each with an id"),              # one mapping, not a list
])
def test_a_bad_data_file_is_one_usage_error(tmp_path, capsys, text, says):
    path = tmp_path / "data.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as e:
        pub.main(["--shipped", "--data", str(path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"--data {path}" in err and says in err and "Traceback" not in err
