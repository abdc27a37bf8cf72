"""``--plot``: the pictures of ``trace``, ``compare`` and ``verify`` (the ``plot`` extra).

The rendering tests skip, saying why, when matplotlib is missing. They draw from bundled models to
PNG and SVG, check each file is a valid image of the fixed size, and read the plotted numbers back from
the figure's artists to compare them with the JSON the same command prints.
"""

import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from planner.cli.plots import DPI, FIGSIZE_IN, PIXELS, artist, context_grid, ctx_label, memory_gid, verify_gid
from tests.clirun import run

ROOT = Path(__file__).resolve().parent.parent
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
THREE = ["meta-llama/Llama-3.1-8B", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b"]
TRACE_ARGS = ["trace", LLAMA3, "--context", "2000", "--batch", "64", "--sweep", "batch=1,8,64,512",
              "--sweep", "context=2k,32k", "--hardware", "h100-sxm"]
COMPARE_ARGS = ["compare", *THREE, "--context", "8192", "--batch", "32", "--hardware", "h100-sxm", "--dtype", "bf16"]


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib", reason="the plots need matplotlib (pip install 'planner[plot]')")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, tag = struct.unpack(">I4s", data[8:16])
    assert tag == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def svg_root(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    return root


def test_figure_size_is_fixed():
    assert PIXELS == (round(FIGSIZE_IN[0] * DPI), round(FIGSIZE_IN[1] * DPI)) == (960, 600)


def test_context_labels_and_grid():
    assert [ctx_label(n) for n in (2000, 2048, 32768, 1 << 20)] == ["2,000", "2k", "32k", "1M"]
    g = context_grid(512, 8192, extra=(4096, 5000, 100, 9000))
    assert g[0] == 512 and g[-1] == 8192 and 5000 in g and 100 not in g and 9000 not in g
    assert g == sorted(set(g))


# ---- trace --plot: the roofline ------------------------------------------------------------------

def test_trace_roofline_png_equals_the_json(mpl, tmp_path):
    from planner.cli.plots import GID_CEILING, GID_MEMORY_SLOPE, GID_OPS, GID_RIDGE, GID_STEP, GID_SWEEP, plot_roofline

    png = tmp_path / "roofline.png"
    r = run(*TRACE_ARGS, "--json", "--plot", png)
    assert r.code == 0, r.err
    d = r.json
    assert png_size(png) == PIXELS
    # The same picture from the printed JSON: the command plotted exactly the numbers it printed.
    again = tmp_path / "again.png"
    fig = plot_roofline(d, d["hardware"], again, sweep=d["sweep"])
    assert again.read_bytes() == png.read_bytes()

    ops = [o for o in d["ops"] if o["flops"] > 0]
    assert len(artist(fig, GID_OPS).get_offsets()) == len(ops)  # one point per op with FLOPs
    shares = [o["count"] * o["time_s"] / d["totals"]["device_s"] for o in ops]
    assert sum(shares) > 0.95  # the ops left out (no FLOPs) are a sliver of the step
    tt = d["totals"]
    assert tuple(artist(fig, GID_STEP).get_offsets()[0]) == (tt["flops"] / tt["bytes"], tt["flops"] / tt["time_s"])
    assert [tuple(p) for p in artist(fig, GID_SWEEP).get_offsets()] == [
        (s["flops"] / s["bytes"], s["flops"] / s["time_s"]) for s in d["sweep"]]
    assert len(d["sweep"]) == 8
    # the roofline itself: bandwidth slope, the bf16 dense peak, the ridge between them
    peak = d["hardware"]["peak_flops_per_s"]["bf16"]
    bw = d["hardware"]["memory_bandwidth_bytes_per_s"]
    ceiling = artist(fig, GID_CEILING)
    assert set(ceiling.get_ydata()) == {peak}
    slope = artist(fig, GID_MEMORY_SLOPE)
    (x0, ridge), (y0, y1) = slope.get_xdata(), slope.get_ydata()
    assert (y0, y1, ridge) == (bw * x0, peak, d["ridge_intensity"])
    assert set(artist(fig, GID_RIDGE).get_xdata()) == {d["ridge_intensity"]}
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert "b=1, 2k" in texts and any(t.startswith("attention: ") for t in texts)
    assert any("not shown (no FLOPs" in t and "input_layernorm" in t for t in texts)


def test_trace_roofline_svg(mpl, tmp_path):
    svg = tmp_path / "roofline.svg"
    r = run("trace", LLAMA3, "--context", "2000", "--plot", svg)
    assert r.code == 0, r.err
    root = svg_root(svg)
    assert (root.get("width"), root.get("height")) == (f"{FIGSIZE_IN[0] * 72:g}pt", f"{FIGSIZE_IN[1] * 72:g}pt")
    assert "decode step" in r.out  # the table is still printed


def test_roofline_from_a_profile_object_and_efficiency(mpl, tmp_path):
    from dataclasses import replace

    from planner.cli.plots import GID_CEILING, GID_MEMORY_SLOPE, plot_roofline
    from planner.hardware.profiles import load_profile
    from planner.hardware.roofline import effective_rates

    hw = replace(load_profile("h100-sxm"), memory_efficiency=0.8, compute_efficiency=0.7)
    d = run("trace", "Qwen/Qwen2.5-0.5B", "--context", "512", "--json").json
    fig = plot_roofline(d, hw, tmp_path / "eff.png")
    flops_per_s, bytes_per_s = effective_rates(hw, d["compute_dtype"])
    assert set(artist(fig, GID_CEILING).get_ydata()) == {flops_per_s}
    assert artist(fig, GID_MEMORY_SLOPE).get_label().endswith("× efficiency")
    assert png_size(tmp_path / "eff.png") == PIXELS


# ---- compare --plot: memory against context -------------------------------------------------------

def test_compare_memory_png_equals_the_json(mpl, tmp_path):
    from planner.analysis.kv import LayerKV
    from planner.cli.plots import GID_CAPACITY, GID_CONTEXT, GID_USABLE, plot_memory

    png = tmp_path / "memory.png"
    r = run(*COMPARE_ARGS, "--json", "--plot", png)
    assert r.code == 0, r.err
    d = r.json
    assert png_size(png) == PIXELS
    s = d["settings"]
    again = tmp_path / "again.png"
    fig = plot_memory(d["models"], d["hardware"], again, batch=s["batch"], context=s["context"], tp=s["tp"])
    assert again.read_bytes() == png.read_bytes()

    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    for m in d["models"]:
        line = artist(fig, memory_gid(m["model"]["id"]))
        xs, ys = list(line.get_xdata()), list(line.get_ydata())
        assert xs[0] == 512 and xs == sorted(xs) and xs[-1] == m["model"]["max_position_embeddings"]
        assert ys[xs.index(8192)] == m["memory"]["total_bytes"]  # weights + batch × KV at the chosen context
        layers = [LayerKV(**row) for row in m["kv_cache"]["per_layer"]]
        assert ys == [m["memory"]["weights_bytes"] + 32 * sum(lk.bytes_at(c) for lk in layers) for c in xs]
        assert any(t.startswith(m["model"]["id"]) and f"max batch {m['max_batch']:,} at 8k" in t for t in legend)
    mistral = artist(fig, memory_gid("mistralai/Mistral-7B-v0.1"))
    flat = [y for x, y in zip(mistral.get_xdata(), mistral.get_ydata()) if x >= 4096]
    assert len(set(flat)) == 1 and len(flat) > 4  # the 4096-token window caps its KV cache
    hw = d["hardware"]
    assert set(artist(fig, GID_CAPACITY).get_ydata()) == {hw["memory_bytes"]}
    assert set(artist(fig, GID_USABLE).get_ydata()) == {hw["memory_bytes"] - hw["runtime_reserve_bytes"]}
    assert set(artist(fig, GID_CONTEXT).get_xdata()) == {8192}
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert {f"max {m['max_batch']:,}" for m in d["models"]} <= set(texts)


def test_compare_memory_svg_with_tp(mpl, tmp_path):
    from planner.cli.plots import GID_CAPACITY, plot_memory

    svg = tmp_path / "memory.svg"
    r = run("compare", "meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-32B", "--gpus", "4", "--tp", "4", "--context", "32768",
            "--batch", "8", "--json", "--plot", svg)
    assert r.code == 0, r.err
    svg_root(svg)
    d = r.json
    fig = plot_memory(d["models"], d["hardware"], tmp_path / "m.png", batch=8, context=32768, tp=4)
    assert set(artist(fig, GID_CAPACITY).get_ydata()) == {4 * d["hardware"]["memory_bytes"]}


# ---- verify: predicted against measured ----------------------------------------------------------

VERIFY = {
    "model": {"id": "Qwen/Qwen2.5-0.5B"},
    "timing": {"predicted_s": 0.0031, "measured_s": 0.0052, "error": 0.0031 / 0.0052 - 1},
    "per_kind": [
        {"kind": "matmul", "predicted_s": 0.0025, "measured_s": 0.0036},
        {"kind": "attention", "predicted_s": 0.0003, "measured_s": 0.0007},
        {"kind": "norm", "predicted_s": 1e-5, "measured_s": 8e-5},
        {"kind": "rope", "predicted_s": 4e-6, "measured_s": None},
    ],
}


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_verify_plot_bars_equal_the_json(mpl, tmp_path, suffix):
    from planner.cli.plots import plot_verify

    path = tmp_path / f"verify{suffix}"
    fig = plot_verify(VERIFY, path)
    if suffix == ".png":
        assert png_size(path) == PIXELS
    else:
        svg_root(path)
    for k in VERIFY["per_kind"]:
        assert artist(fig, verify_gid("predicted", k["kind"])).get_height() == k["predicted_s"]
        bar = artist(fig, verify_gid("measured", k["kind"]))
        assert (bar is None) if k["measured_s"] is None else bar.get_height() == k["measured_s"]
    assert artist(fig, verify_gid("predicted", "step")).get_height() == VERIFY["timing"]["predicted_s"]
    assert artist(fig, verify_gid("measured", "step")).get_height() == VERIFY["timing"]["measured_s"]
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["matmul", "attention", "norm", "rope", "step"]


def test_verify_plot_reads_the_profiled_times_of_planner_verify(mpl, tmp_path):
    """``planner verify --json`` names a kind's measured time ``profiled_s`` (torch profiler)."""
    from planner.cli.plots import plot_verify

    d = {"timing": VERIFY["timing"], "per_kind": [{"kind": "matmul", "predicted_s": 2e-3, "predicted_share": 0.9,
                                                    "profiled_s": 3e-3, "measured_share": 0.8}]}
    fig = plot_verify(d, tmp_path / "v.png")
    assert artist(fig, verify_gid("measured", "matmul")).get_height() == 3e-3
    assert any("torch profiler" in t.get_text() for t in fig.texts)


@pytest.mark.slow
@pytest.mark.torch
def test_verify_command_plot(mpl, tmp_path):
    pytest.importorskip("torch", reason="planner verify needs torch (the runtime extra)")
    from planner.cli.plots import plot_verify

    png = tmp_path / "verify.png"
    r = run("verify", "HuggingFaceTB/SmolLM2-135M-Instruct", "--device", "cpu", "--context", "16", "--steps", "2",
            "--warmup", "0", "--no-profile", "--json", "--plot", png)
    assert r.code == 0, r.err
    assert png_size(png) == PIXELS
    again = tmp_path / "again.png"
    fig = plot_verify(r.json, again)
    assert again.read_bytes() == png.read_bytes()
    assert artist(fig, verify_gid("measured", "step")).get_height() == r.json["timing"]["measured_s"]


# ---- bad paths and the missing extra --------------------------------------------------------------

@pytest.mark.parametrize("name, fragment", [
    ("plot.jpg", "unsupported file type '.jpg'"),
    ("plot", "unsupported file type '(none)'"),
    ("missing/plot.png", "does not exist"),
])
@pytest.mark.parametrize("command", [["trace", LLAMA3], ["compare", *THREE[:2]]])
def test_bad_plot_path_is_one_error_line(tmp_path, name, fragment, command):
    path = tmp_path / name
    r = run(*command, "--plot", path)
    r.assert_error("--plot", str(path), fragment)
    assert not path.exists()


def test_plot_path_checked_before_any_work(tmp_path):
    # the model does not exist either: the path is the first thing checked
    r = run("trace", "no-such-model-anywhere", "--plot", tmp_path / "nope" / "x.png")
    r.assert_error("--plot", "does not exist")


def test_plot_path_inside_a_file_or_onto_a_folder(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    run("trace", LLAMA3, "--plot", f / "x.png").assert_error("--plot", "is not a folder")
    folder = tmp_path / "dir.png"
    folder.mkdir()
    r = run("trace", LLAMA3, "--plot", folder)
    assert r.code != 0 and "Traceback" not in r.err and r.out == ""


def test_unwritable_folder(tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        target = Path("/proc/planner-plot.png")  # root may write anywhere but here
        if not Path("/proc").is_dir():
            pytest.skip("running as root without /proc: no unwritable folder to try")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "plot.png"
    try:
        run("trace", LLAMA3, "--plot", target).assert_error("--plot", str(target), "not writable")
    finally:
        if target.parent != Path("/proc"):
            target.parent.chmod(0o700)


def test_missing_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    for args in (["trace", LLAMA3], ["compare", *THREE[:2]]):
        r = run(*args, "--plot", tmp_path / "x.png")
        r.assert_error("--plot needs matplotlib", "pip install 'planner[plot]'")
    assert not (tmp_path / "x.png").exists()


def test_no_matplotlib_without_plot():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from planner.cli.app import app\n"
        "r = CliRunner()\n"
        "for args in (['trace', 'llama-3.1-8b', '--json'], ['compare', 'llama-3.1-8b', 'qwen2.5-7b', '--json'],"
        " ['trace', '--help']):\n"
        "    res = r.invoke(app, args)\n"
        "    assert res.exit_code == 0, (args, res.output)\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib was imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
