"""Hardware side: unit parsing, bundled and user profiles, atomic saves, roofline, `planner hardware`."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the project may not be pip-installed in the test environment
    sys.path.insert(0, str(REPO))

from planner.analysis.errors import HardwareError, PlannerError
from planner.hardware import profiles as hp
from planner.hardware import units
from planner.hardware.profiles import HardwareProfile, list_profiles, load_profile, save_user_profile, user_profile_dir
from planner.hardware.roofline import RooflineTime, ridge_intensity, roofline

GiB = 2**30

BUNDLED = {
    "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h20", "b200", "gb200", "a100-40gb", "a100-80gb",
    "a100-pcie-80gb", "l4", "l40s", "a10g", "rtx-4090", "rtx-5090", "mi250x", "mi300x", "mi325x", "mi355x",
    "gaudi3", "tpu-v5e", "tpu-v5p", "tpu-v6e", "m2-ultra", "m3-max", "m4-max", "cpu",
}

MINIMAL = """\
name: my-gpu
memory: 24 GiB
memory_bandwidth: 1 TB/s
peak_flops:
  bf16: 100 TFLOP/s
"""


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---- units ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("80 GiB", 80 * GiB),
        ("141 GB", 141_000_000_000),
        ("24 GB", 24_000_000_000),
        ("512 MiB", 512 * 2**20),
        ("1.5 TiB", 1_649_267_441_664),
        ("143771 MiB", 150_754_820_096),
        ("80GiB", 80 * GiB),
        ("  2 KiB ", 2048),
        ("1,024 B", 1024),
        ("7 bytes", 7),
    ],
)
def test_parse_bytes_exact(text, expected):
    assert units.parse_bytes(text) == expected
    assert isinstance(units.parse_bytes(text), int)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3.35 TB/s", 3.35e12),
        ("900 GB/s", 900e9),
        ("819 GB/s", 819e9),
        ("3.2768 TB/s", 3.2768e12),
        ("900 GBps", 900e9),
        ("800 GiB/s", 800 * GiB),
        ("200 Gbit/s", 25e9),
        ("200 Gbps", 25e9),
    ],
)
def test_parse_bandwidth(text, expected):
    assert units.parse_bandwidth(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("989.4 TFLOP/s", 989.4e12),
        ("67 TFLOPS", 67e12),
        ("1.6 PFLOP/s", 1.6e15),
        ("1,978.9 TFLOP/s", 1978.9e12),
        ("393 TOPS", 393e12),
        ("362.05 tflop/s", 362.05e12),
    ],
)
def test_parse_flops(text, expected):
    assert units.parse_flops(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [("4 us", 4e-6), ("4 µs", 4e-6), ("4 μs", 4e-6), ("5e-6 s", 5e-6), ("10 ms", 0.01), ("250 ns", 2.5e-7)],
)
def test_parse_time(text, expected):
    assert units.parse_time(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("value, expected", [(2.49, 2.49), (2, 2.0), ("2.49", 2.49), ("$2.49", 2.49), ("2.49 USD", 2.49)])
def test_parse_money(value, expected):
    assert units.parse_money(value) == expected


@pytest.mark.parametrize("value, expected", [(0.85, 0.85), ("85%", 0.85), (1, 1.0)])
def test_parse_fraction(value, expected):
    assert units.parse_fraction(value) == pytest.approx(expected)


def test_parse_size_for_cli_values():
    assert units.parse_size("80GiB") == 80 * GiB
    assert units.parse_size("141GB") == 141 * 10**9
    with pytest.raises(HardwareError, match="no unit"):
        units.parse_size("80")


@pytest.mark.parametrize(
    "parser, value, needle",
    [
        (units.parse_bytes, "80", "no unit"),
        (units.parse_bytes, 80, "no unit"),
        (units.parse_bytes, "80 gb", "did you mean 'GB'"),
        (units.parse_bytes, "80 Gb", "gigabits"),
        (units.parse_bytes, "80 parsecs", "unknown size unit"),
        (units.parse_bytes, "-80 GB", "negative"),
        (units.parse_bytes, "0 GB", "zero"),
        (units.parse_bytes, "nan GB", "not a finite number"),
        (units.parse_bytes, "inf GiB", "not a finite number"),
        (units.parse_bytes, "5000 EiB", "absurd"),
        (units.parse_bytes, "9" * 5000 + " GiB", "absurdly many digits"),  # past int()'s 4,300-digit limit
        (units.parse_bandwidth, "0." + "0" * 5000 + "1 TB/s", "absurdly many digits"),
        (units.parse_bytes, "1,5 TB", "comma"),
        (units.parse_bytes, True, "not a value with a unit"),
        (units.parse_bytes, [80], "wrong type"),
        (units.parse_bytes, "GB", "not a number"),
        (units.parse_bandwidth, "3.35", "no unit"),
        (units.parse_bandwidth, "3.35 TB", "not a rate"),
        (units.parse_bandwidth, "-3.35 TB/s", "negative"),
        (units.parse_bandwidth, "0 TB/s", "zero"),
        (units.parse_bandwidth, "3350 PB/s", "plausible range"),
        (units.parse_bandwidth, float("nan"), "not a finite number"),
        (units.parse_flops, "989.4", "no unit"),
        (units.parse_flops, "989.4 TB/s", "unknown FLOP-rate unit"),
        (units.parse_flops, "-1 TFLOP/s", "negative"),
        (units.parse_flops, "1e9 PFLOP/s", "plausible range"),
        (units.parse_flops, "inf TFLOPS", "not a finite number"),
        (units.parse_time, "5", "no unit"),
        (units.parse_time, "5 parsecs", "unknown time unit"),
        (units.parse_time, "-5 us", "negative"),
        (units.parse_time, "0 us", "zero"),
        (units.parse_time, "2 days", "unknown time unit"),
        (units.parse_time, "1e9 s", "absurd"),
        (units.parse_money, "-2", "negative"),
        (units.parse_money, "two dollars", "not a price"),
        (units.parse_money, 1e9, "absurd"),
        (units.parse_fraction, 1.5, "not in (0, 1]"),
        (units.parse_fraction, 0, "not in (0, 1]"),
    ],
)
def test_parsers_reject_bad_values(parser, value, needle):
    with pytest.raises(HardwareError) as info:
        parser(value, field="thing", where="some/file.yaml")
    msg = str(info.value)
    assert needle in msg
    assert "some/file.yaml" in msg and "'thing'" in msg  # where and which field
    assert "expected" in msg  # and what was expected
    assert isinstance(info.value, PlannerError)
    assert "\n" not in msg


def test_zero_allowed_only_when_asked():
    assert units.parse_bytes("0 GiB", allow_zero=True) == 0
    assert units.parse_time("0 us", allow_zero=True) == 0.0


@pytest.mark.parametrize("n", [80 * GiB, 141 * 10**9, 150_754_820_096, 123_456_789, 1])
def test_format_bytes_round_trips(n):
    assert units.parse_bytes(units.format_bytes(n)) == n


@pytest.mark.parametrize("v", [3.35e12, 3.2768e12, 819e9, 1.638e12, 123.456e9])
def test_format_bandwidth_round_trips(v):
    assert units.parse_bandwidth(units.format_bandwidth(v)) == v


@pytest.mark.parametrize("v", [989.4e12, 1978.9e12, 362.05e12, 1.01e16, 31.2e12])
def test_format_flops_round_trips(v):
    assert units.parse_flops(units.format_flops(v)) == v


@pytest.mark.parametrize("v", [5e-6, 4e-6, 0.01, 2.5e-7, 1.5])
def test_format_time_round_trips(v):
    assert units.parse_time(units.format_time(v)) == v


# ---- bundled profiles ----------------------------------------------------------------------------

def test_every_bundled_profile_loads_with_sane_numbers():
    profiles = list_profiles()
    names = {p.name for p in profiles}
    assert BUNDLED <= names
    for p in profiles:
        assert p.origin == "bundled"
        assert p.path and p.path.endswith(f"{p.name}.yaml"), "file name matches the profile name"
        assert isinstance(p.memory_bytes, int) and p.memory_bytes > GiB
        assert p.memory_bandwidth_bytes_per_s > 1e9
        assert p.peak_flops_for("bf16") > 1e11
        assert set(p.peak_flops_per_s) <= set(hp.DTYPE_KEYS)
        assert all(v > 0 and math.isfinite(v) for v in p.peak_flops_per_s.values())
        assert p.source and all(s.strip() for s in p.source)
        assert p.display_name and p.vendor
        assert 0 <= p.runtime_reserve_bytes < p.memory_bytes
        assert 0 < p.kernel_launch_s < 1e-3
        assert p.price_per_hour is None, "no invented prices"
        assert p.interconnect_bytes_per_s is None or p.interconnect_bytes_per_s > 1e9
        # dense peaks: low precision is never more than 2x the next wider type (sparse figures would be 4x)
        bf16 = p.peak_flops_per_s.get("bf16")
        fp8 = p.peak_flops_per_s.get("fp8")
        if bf16 and fp8:
            assert fp8 <= 2 * bf16 * 1.03  # datasheet rounding (L4 242.5 vs 2 x 121; L40S 733 vs 2 x 362.05)


def test_documented_datasheet_values():
    h100 = load_profile("h100-sxm")
    # NVIDIA H100 datasheet: BF16 "1,979 TFLOPS*" (* with sparsity; dense is half) and 3.35 TB/s HBM3.
    assert h100.peak_flops_per_s["bf16"] == 989.4e12
    assert h100.peak_flops_per_s["fp8"] == 1978.9e12
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12
    assert h100.memory_bytes == 81559 * 2**20  # as nvidia-smi reports it (ECC on); the label says 80 GB
    assert h100.interconnect_bytes_per_s == 450e9  # NVLink 4: 900 GB/s total = 450 per direction
    # NVIDIA A100 datasheet: BF16 312 TFLOPS dense (624 sparse); 80GB SXM 2,039 GB/s; no FP8.
    a100 = load_profile("a100-80gb")
    assert a100.peak_flops_per_s["bf16"] == 312e12
    assert a100.memory_bandwidth_bytes_per_s == 2.039e12
    assert "fp8" not in a100.peak_flops_per_s
    # H200: nvidia-smi reports 143,771 MiB (NVIDIA/cuda-samples issue #311); 4.8 TB/s.
    h200 = load_profile("h200")
    assert h200.memory_bytes == 143771 * 2**20
    assert h200.memory_bandwidth_bytes_per_s == 4.8e12


def test_a10g_bf16_is_a_labelled_estimate():
    p = load_profile("a10g")
    assert p.peak_flops_per_s["bf16"] == 125e12
    assert any("ESTIMATE" in n and "UNCERTAIN" in n for n in p.notes)


def test_cpu_is_a_template():
    p = load_profile("cpu")
    assert any("calibrate" in n for n in p.notes)
    text = Path(p.path).read_text(encoding="utf-8")
    assert "planner calibrate --device cpu" in text


def test_bundled_yaml_states_runtime_reserve_default():
    text = (REPO / "profiles" / "hardware" / "h100-sxm.yaml").read_text(encoding="utf-8")
    assert "runtime_reserve: 2 GiB" in text and "default" in text
    assert hp.DEFAULT_RUNTIME_RESERVE_BYTES == 2 * GiB


@pytest.mark.parametrize(
    "alias, name",
    [("h100", "h100-sxm"), ("H100", "h100-sxm"), ("  h200 ", "h200-sxm"), ("H100-SXM", "h100-sxm"), ("4090", "rtx-4090"), ("trillium", "tpu-v6e")],
)
def test_aliases_and_case(alias, name):
    assert load_profile(alias).name == name


def test_aliases_are_unique_and_never_shadow_names():
    profiles = list_profiles()
    names = {p.name for p in profiles}
    seen: set[str] = set()
    for p in profiles:
        for a in p.aliases:
            assert a not in names, f"alias {a} of {p.name} is also a profile name"
            assert a not in seen, f"alias {a} used twice"
            seen.add(a)


def test_unknown_name_suggests_close_matches():
    with pytest.raises(HardwareError) as info:
        load_profile("a100")
    msg = str(info.value)
    assert "unknown hardware profile 'a100'" in msg
    assert "a100-40gb" in msg and "a100-80gb" in msg
    assert "planner hardware list" in msg
    with pytest.raises(HardwareError, match="h100-sxm"):
        load_profile("h100-sxn")
    with pytest.raises(HardwareError, match="planner hardware list"):
        load_profile("zzzzzz")


# ---- peaks and fallbacks -------------------------------------------------------------------------

def test_peak_flops_fallbacks():
    a100 = load_profile("a100-80gb")
    assert a100.peak_flops_for("fp8") == a100.peak_flops_per_s["bf16"]  # no FP8 on Ampere
    assert a100.peak_flops_key_for("fp8") == "bf16"
    assert a100.peak_flops_for("fp4") == 312e12
    assert a100.peak_flops_for("int4") == 312e12  # weight-only int4 computes in bf16
    assert a100.peak_flops_for("bfloat16") == 312e12
    assert a100.peak_flops_for("int8") == 624e12
    mi355 = load_profile("mi355x")
    assert mi355.peak_flops_key_for("tf32") == "fp32"  # tf32 not published for CDNA4
    m4 = load_profile("m4-max")
    assert m4.peak_flops_for("bf16") == m4.peak_flops_per_s["fp32"]  # only an fp32 estimate exists
    v5e = load_profile("tpu-v5e")
    with pytest.raises(HardwareError, match="fp32"):
        v5e.peak_flops_for("fp32")  # never silently 0, never a faster column
    with pytest.raises(HardwareError, match="unknown compute dtype"):
        a100.peak_flops_for("fp64")


# ---- the dataclass -------------------------------------------------------------------------------

def _profile(**overrides) -> HardwareProfile:
    base = dict(
        name="toy",
        display_name="Toy",
        vendor="test",
        memory_bytes=80 * GiB,
        memory_bandwidth_bytes_per_s=3.35e12,
        peak_flops_per_s={"bf16": 989.4e12},
        interconnect_bytes_per_s=None,
        kernel_launch_s=5e-6,
        price_per_hour=None,
        memory_efficiency=None,
        compute_efficiency=None,
        runtime_reserve_bytes=2 * GiB,
        source=("test",),
        notes=(),
        origin="file",
        path=None,
    )
    base.update(overrides)
    return HardwareProfile(**base)


def test_profile_field_order_is_the_documented_one():
    names = [f.name for f in dataclasses.fields(HardwareProfile)]
    assert names[:16] == [
        "name", "display_name", "vendor", "memory_bytes", "memory_bandwidth_bytes_per_s", "peak_flops_per_s",
        "interconnect_bytes_per_s", "kernel_launch_s", "price_per_hour", "memory_efficiency", "compute_efficiency",
        "runtime_reserve_bytes", "source", "notes", "origin", "path",
    ]


def test_profile_is_frozen_hashable_and_json_ready():
    p = load_profile("h100-sxm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.memory_bytes = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.peak_flops_per_s["bf16"] = 1.0  # type: ignore[index]
    hash(p)
    d = p.to_dict()
    for key in ("memory_bytes", "memory_bandwidth_bytes_per_s", "peak_flops_per_s", "interconnect_bytes_per_s",
                "kernel_launch_s", "runtime_reserve_bytes", "price_per_hour", "memory_efficiency",
                "compute_efficiency", "source", "notes", "origin", "path"):
        assert key in d
    json.dumps(d, allow_nan=False)
    assert d["peak_flops_per_s"]["bf16"] == 989.4e12


@pytest.mark.parametrize(
    "overrides",
    [
        {"memory_bytes": -1},
        {"memory_bytes": 1.5},
        {"memory_bandwidth_bytes_per_s": 0.0},
        {"memory_bandwidth_bytes_per_s": float("nan")},
        {"peak_flops_per_s": {}},
        {"peak_flops_per_s": {"fp8": 1e15}},  # nothing usable for bf16
        {"peak_flops_per_s": {"bf16": 0.0}},
        {"peak_flops_per_s": {"bf17": 1e15}},
        {"memory_efficiency": 1.2},
        {"compute_efficiency": 0.0},
        {"runtime_reserve_bytes": 81 * GiB},
        {"origin": "elsewhere"},
        {"name": "Has Spaces"},
    ],
)
def test_profile_validates_on_construction(overrides):
    with pytest.raises(HardwareError):
        _profile(**overrides)


def test_mamf_over_the_peak_per_column_from_the_published_table():
    """stas00/ml-engineering's MAMF table: H100 SXM bf16 794.5 of 989.4 TFLOP/s, MI300X 668.4 of 1307.4, A100
    SXM 271.2 of 312. Only the columns given have a fraction (fp8 GEMMs keep the general one)."""
    h100, mi300x, a100 = load_profile("h100-sxm"), load_profile("mi300x"), load_profile("a100-80gb")
    assert h100.mamf_fractions() == pytest.approx({"bf16": 794.5 / 989.4, "fp16": 794.5 / 989.4})
    assert mi300x.mamf_fractions()["bf16"] == pytest.approx(668.4 / 1307.4)
    assert a100.mamf_fractions()["bf16"] == pytest.approx(271.2 / 312)
    # RTX 4090: torch square-matmul sweeps on two hosts (zzc0721/torch-performance-test-data #78, #20), the
    # lower BF16 best, 163.1 of the 165.2 dense FP32-accumulate peak
    assert load_profile("rtx-4090").mamf_fractions() == pytest.approx({"bf16": 163.1 / 165.2, "fp16": 163.1 / 165.2})
    # RTX 5090: the median BF16 best of five hosts' sweeps, 236.0 of 419
    assert load_profile("rtx-5090").mamf_fractions()["bf16"] == pytest.approx(236.0 / 419)
    assert _profile().mamf_fractions() == {}  # a profile without the field
    with pytest.raises(HardwareError, match="above the peak"):
        _profile(max_achievable_matmul_flops_per_s={"bf16": 2e15})


def test_yaml_data_round_trip_for_every_bundled_profile():
    for p in list_profiles():
        again = hp.profile_from_data(p.to_yaml_data(), where="round-trip", origin=p.origin, path=p.path)
        assert again == p


# ---- bad files -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, needles",
    [
        (MINIMAL.replace("memory: 24 GiB\n", ""), ["missing required field 'memory'"]),
        (MINIMAL.replace("name: my-gpu\n", ""), ["missing required field 'name'"]),
        (MINIMAL.replace("24 GiB", "24"), ["'memory'", "no unit"]),
        (MINIMAL.replace("1 TB/s", "-1 TB/s"), ["'memory_bandwidth'", "negative"]),
        (MINIMAL.replace("100 TFLOP/s", "100"), ["'peak_flops.bf16'", "no unit"]),
        (MINIMAL.replace("peak_flops:\n  bf16: 100 TFLOP/s\n", "peak_flops: 5\n"), ["'peak_flops'", "mapping"]),
        (MINIMAL.replace("bf16", "fp8"), ["'peak_flops'", "bf16"]),
        (MINIMAL.replace("bf16", "bfloat17"), ["'peak_flops'", "bfloat17"]),
        (MINIMAL + "memory_bandwith: 1 TB/s\n", ["unknown field 'memory_bandwith'", "did you mean 'memory_bandwidth'"]),
        (MINIMAL + "runtime_reserve: 30 GiB\n", ["'runtime_reserve'"]),
        (MINIMAL + "efficiency: {memory_bandwidth: 1.3}\n", ["'efficiency.memory_bandwidth'"]),
        (MINIMAL + "source: {a: 1}\n", ["'source'"]),
        (MINIMAL + "max_achievable_matmul_flops: {bf16: 120 TFLOP/s}\n", ["'max_achievable_matmul_flops.bf16'", "above the dense peak"]),
        (MINIMAL + "max_achievable_matmul_flops: {fp8: 80 TFLOP/s}\n", ["'max_achievable_matmul_flops'", "fp8", "without a peak"]),
        (MINIMAL + "max_achievable_matmul_flops: {bf16: 80}\n", ["'max_achievable_matmul_flops.bf16'", "no unit"]),
        (MINIMAL + "max_achievable_matmul_flops: 80 TFLOP/s\n", ["'max_achievable_matmul_flops'", "mapping"]),
        (MINIMAL.replace("name: my-gpu", "name: [1, 2]"), ["'name'"]),
        (MINIMAL.replace("name: my-gpu", "name: My GPU"), ["'name'", "lowercase"]),
        ("- just\n- a list\n", ["mapping"]),
        ("just a string\n", ["mapping"]),
        ("", ["empty"]),
        ("# only a comment\n", ["empty"]),
        ("name: [unclosed\n", ["not valid YAML", "line"]),
    ],
)
def test_bad_profile_files_name_the_file_and_field(tmp_path, text, needles):
    path = _write(tmp_path / "bad.yaml", text)
    with pytest.raises(HardwareError) as info:
        load_profile(str(path))
    msg = str(info.value)
    assert str(path) in msg
    for needle in needles:
        assert needle in msg


def test_non_utf8_file(tmp_path):
    path = _write(tmp_path / "latin1.yaml", MINIMAL.replace("my-gpu", "my-gpu\ndisplay_name: caf\xe9").encode("latin-1"))
    with pytest.raises(HardwareError, match="UTF-8") as info:
        load_profile(str(path))
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "template",
    [
        'name: !!python/object/apply:os.system ["touch {marker}"]\n',
        '!!python/object/apply:os.system ["touch {marker}"]\n',
        MINIMAL + 'notes: [!!python/object/apply:os.system ["touch {marker}"]]\n',
    ],
)
def test_python_tags_are_rejected_and_never_run(tmp_path, template):
    marker = tmp_path / "pwned"
    path = _write(tmp_path / "evil.yaml", template.format(marker=marker))
    with pytest.raises(HardwareError) as info:
        load_profile(str(path))
    assert str(path) in str(info.value)
    assert not marker.exists()


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(HardwareError, match="not found"):
        load_profile(str(tmp_path / "nope.yaml"))
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(HardwareError, match="folder"):
        load_profile(str(tmp_path / "dir.yaml"))
    with pytest.raises(HardwareError):
        load_profile("")


def test_load_from_path(tmp_path):
    path = _write(tmp_path / "my-gpu.yml", MINIMAL)
    p = load_profile(str(path))
    assert (p.name, p.origin, p.path) == ("my-gpu", "file", str(path))
    # defaults for what a small file leaves out
    assert p.runtime_reserve_bytes == 2 * GiB
    assert p.kernel_launch_s == hp.DEFAULT_KERNEL_LAUNCH_S
    assert p.display_name == "my-gpu" and p.interconnect_bytes_per_s is None
    assert p.memory_efficiency is None and p.compute_efficiency is None and p.price_per_hour is None


# ---- user profiles -------------------------------------------------------------------------------

def test_user_profile_dir_follows_env(_config_dir, monkeypatch):
    assert user_profile_dir() == _config_dir / "hardware"
    monkeypatch.delenv("PLANNER_CONFIG_DIR")
    import platformdirs

    assert user_profile_dir() == Path(platformdirs.user_config_dir("planner")) / "hardware"


def test_user_profiles_extend_and_shadow_bundled(_config_dir):
    bundled_count = len(list_profiles())
    _write(_config_dir / "hardware" / "my-gpu.yaml", MINIMAL)
    _write(
        _config_dir / "hardware" / "h100.yaml",
        "name: h100-sxm\naliases: [h100, my-h100]\nmemory: 79 GiB\nmemory_bandwidth: 3 TB/s\n"
        "peak_flops: {bf16: 900 TFLOP/s}\nefficiency: {memory_bandwidth: 85%, compute: 0.7}\n",
    )
    _write(_config_dir / "hardware" / "notes.txt", "ignored: not yaml")
    profiles = {p.name: p for p in list_profiles()}
    assert len(profiles) == bundled_count + 1
    assert profiles["my-gpu"].origin == "user"
    assert profiles["h100-sxm"].origin == "user" and profiles["h100-sxm"].memory_bytes == 79 * GiB
    assert profiles["h200-sxm"].origin == "bundled"
    assert load_profile("h100").origin == "user"
    assert load_profile("my-h100").memory_efficiency == 0.85
    assert load_profile("MY-GPU").name == "my-gpu"


def test_user_alias_wins_over_bundled_alias(_config_dir):
    _write(_config_dir / "hardware" / "mine.yaml", MINIMAL.replace("name: my-gpu", "name: my-gpu\naliases: [h100]"))
    assert load_profile("h100").name == "my-gpu"
    assert load_profile("h100-sxm").origin == "bundled"


def test_broken_user_profile_is_reported(_config_dir):
    path = _write(_config_dir / "hardware" / "broken.yaml", "name: broken\nmemory: 80\n")
    with pytest.raises(HardwareError) as info:
        list_profiles()
    assert str(path) in str(info.value)


def test_duplicate_user_names_are_reported(_config_dir):
    _write(_config_dir / "hardware" / "a.yaml", MINIMAL)
    _write(_config_dir / "hardware" / "b.yaml", MINIMAL)
    with pytest.raises(HardwareError, match="two user hardware profiles"):
        list_profiles()


# ---- saving --------------------------------------------------------------------------------------

def _data(**over):
    data = {
        "name": "saved",
        "display_name": "Saved GPU",
        "vendor": "test",
        "memory": "48 GiB",
        "memory_bandwidth": "900 GB/s",
        "peak_flops": {"bf16": "300 TFLOP/s"},
        "source": ["a unit test"],
    }
    data.update(over)
    return data


def test_save_user_profile_writes_and_loads(_config_dir):
    path = save_user_profile(_data(), "saved")
    assert path == _config_dir / "hardware" / "saved.yaml"
    p = load_profile("saved")
    assert (p.origin, p.memory_bytes, p.peak_flops_per_s["bf16"]) == ("user", 48 * GiB, 300e12)
    # overwrite
    save_user_profile(_data(memory="24 GiB", efficiency={"memory_bandwidth": 0.9, "compute": None}), "saved")
    p = load_profile("saved")
    assert p.memory_bytes == 24 * GiB and p.memory_efficiency == 0.9
    assert [f.name for f in path.parent.iterdir()] == ["saved.yaml"], "no temp files left behind"


def test_save_round_trips_a_profile(_config_dir):
    h100 = load_profile("h100-sxm")
    calibrated = dataclasses.replace(h100, name="h100-measured", memory_efficiency=0.87, aliases=())
    save_user_profile(calibrated.to_yaml_data(), "h100-measured")
    again = load_profile("h100-measured")
    assert again.memory_efficiency == 0.87
    assert again.peak_flops_per_s == h100.peak_flops_per_s
    assert again.memory_bytes == h100.memory_bytes


def test_save_is_atomic_when_replace_fails(_config_dir, monkeypatch):
    path = save_user_profile(_data(), "saved")
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hp.os, "replace", boom)
    with pytest.raises(HardwareError, match="cannot write"):
        save_user_profile(_data(memory="24 GiB"), "saved")
    assert path.read_bytes() == before
    assert sorted(f.name for f in path.parent.iterdir()) == ["saved.yaml"]


def test_save_is_atomic_when_serialising_fails(_config_dir, monkeypatch):
    import yaml

    path = save_user_profile(_data(), "saved")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(yaml, "safe_dump", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        save_user_profile(_data(memory="24 GiB"), "saved")
    assert path.read_bytes() == before


def test_save_is_atomic_when_the_write_is_interrupted(_config_dir, monkeypatch):
    path = save_user_profile(_data(), "saved")
    before = path.read_bytes()
    real_fsync = os.fsync

    def interrupted(fd):
        real_fsync(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(hp.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_user_profile(_data(memory="24 GiB"), "saved")
    assert path.read_bytes() == before
    assert sorted(f.name for f in path.parent.iterdir()) == ["saved.yaml"]


@pytest.mark.parametrize(
    "data, name, needle",
    [
        (_data(memory="48"), "saved", "no unit"),
        (_data(), "../escape", "not a valid profile name"),
        (_data(), "Saved", "not a valid profile name"),
        (_data(name="other"), "saved", "make the two names equal"),
        ("not a dict", "saved", "mapping"),
    ],
)
def test_save_rejects_bad_data_without_writing(_config_dir, data, name, needle):
    with pytest.raises(HardwareError, match=needle):
        save_user_profile(data, name)
    assert not (_config_dir / "hardware" / "saved.yaml").exists()
    assert not (_config_dir / "escape.yaml").exists()


# ---- roofline ------------------------------------------------------------------------------------

# Llama-3-8B decode step (batch 1, bf16): weights plus a small KV read, and 2 FLOPs per parameter.
LLAMA3_8B_BYTES = 15_272_124_416
LLAMA3_8B_FLOPS = 16_058_417_152


def test_roofline_llama3_8b_on_h100():
    r = roofline(LLAMA3_8B_FLOPS, LLAMA3_8B_BYTES, load_profile("h100-sxm"), "bf16")
    assert isinstance(r, RooflineTime)
    assert r.memory_s == pytest.approx(LLAMA3_8B_BYTES / 3.35e12)
    assert r.memory_s * 1e3 == pytest.approx(4.56, abs=0.005)
    assert r.compute_s * 1e3 == pytest.approx(0.0162, abs=0.0001)
    assert r.bound == "memory"
    assert r.time_s == r.memory_s


def test_roofline_efficiencies():
    p = _profile(memory_efficiency=0.8, compute_efficiency=0.5)
    r = roofline(10**12, 10**9, p, "bf16")
    assert r.memory_s == pytest.approx(1e9 / (3.35e12 * 0.8))
    assert r.compute_s == pytest.approx(1e12 / (989.4e12 * 0.5))
    raw = roofline(10**12, 10**9, p, "bf16", use_efficiency=False)
    assert raw.memory_s == pytest.approx(1e9 / 3.35e12)
    assert raw.compute_s == pytest.approx(1e12 / 989.4e12)


def test_roofline_bound_and_ties():
    p = _profile(memory_bandwidth_bytes_per_s=1e12, peak_flops_per_s={"bf16": 1e14})
    assert roofline(10**14, 10**9, p, "bf16").bound == "compute"
    assert roofline(10**14, 10**12, p, "bf16").bound == "memory"  # tie -> memory
    zero = roofline(0, 0, p, "bf16")
    assert (zero.time_s, zero.bound) == (0.0, "memory")
    assert ridge_intensity(p, "bf16") == pytest.approx(100.0)
    assert ridge_intensity(load_profile("h100-sxm"), "bf16") == pytest.approx(989.4 / 3.35)
    with pytest.raises(ValueError):
        roofline(-1, 0, p, "bf16")


def test_roofline_uses_fallback_peak():
    a100 = load_profile("a100-80gb")
    r = roofline(312 * 10**12, 1, a100, "fp8")
    assert r.compute_s == pytest.approx(1.0)


# ---- import hygiene ------------------------------------------------------------------------------

def test_imports_are_light():
    code = (
        "import sys; import planner.hardware.profiles, planner.hardware.roofline, planner.hardware.units; "
        "assert 'yaml' not in sys.modules and 'platformdirs' not in sys.modules, 'eager import'; "
        "import planner.cli.hardware_cmd; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# ---- CLI -----------------------------------------------------------------------------------------

@pytest.fixture
def cli():
    from planner.cli.app import PlannerGroup
    from planner.cli.hardware_cmd import hardware_app

    app = typer.Typer(cls=PlannerGroup, add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def _root() -> None:
        pass

    app.add_typer(hardware_app, name="hardware")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["hardware", *args], env={"COLUMNS": "160"})


def test_cli_list_table(cli):
    r = cli("list")
    assert r.exit_code == 0, r.output
    assert "h100-sxm" in r.stdout and "989.4" in r.stdout and "bundled" in r.stdout
    assert r.stderr == ""


def test_cli_list_json(cli, _config_dir):
    _write(_config_dir / "hardware" / "my-gpu.yaml", MINIMAL)
    r = cli("list", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    by_name = {p["name"]: p for p in doc["profiles"]}
    assert BUNDLED <= set(by_name)
    assert by_name["my-gpu"]["origin"] == "user"
    assert by_name["h100-sxm"]["memory_bandwidth_bytes_per_s"] == 3.35e12
    assert json.loads(cli("list", "--format", "json").stdout) == doc


def test_cli_list_csv_and_markdown(cli):
    r = cli("list", "--format", "csv")
    assert r.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == len(list_profiles())
    h100 = next(row for row in rows if row["name"] == "h100-sxm")
    assert int(h100["memory_bytes"]) == 81559 * 2**20 and float(h100["peak_flops_per_s.bf16"]) == 989.4e12
    md = cli("list", "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("| name | device |")


def test_cli_show(cli):
    r = cli("show", "h100")
    assert r.exit_code == 0, r.output
    assert "NVIDIA H100 SXM5 80GB" in r.stdout and "989.4 TFLOP/s" in r.stdout
    assert "Sources" in r.stdout and "Notes" in r.stdout
    doc = json.loads(cli("show", "h100", "--json").stdout)
    assert doc["schema_version"] == 1
    assert doc["profile"]["name"] == "h100-sxm" and doc["profile"]["memory_bytes"] == 81559 * 2**20
    rows = list(csv.DictReader(io.StringIO(cli("show", "a100-80gb", "-f", "csv").stdout)))
    assert len(rows) == 1 and rows[0]["name"] == "a100-80gb" and json.loads(rows[0]["source"])
    assert float(rows[0]["peak_flops_per_s.bf16"]) == 312e12 and "peak_flops_per_s.fp8" not in rows[0]  # no fp8 peak
    md = cli("show", "l4", "--format", "markdown").stdout
    assert md.startswith("| field | value |") and "**Sources**" in md


def test_cli_show_file(cli, tmp_path):
    path = _write(tmp_path / "mine.yaml", MINIMAL)
    doc = json.loads(cli("show", str(path), "--json").stdout)
    assert doc["profile"]["origin"] == "file" and doc["profile"]["memory_bytes"] == 24 * GiB


@pytest.mark.parametrize("args", [("show", "a100"), ("show", "nope.yaml"), ("show", "h100", "--format", "xml")])
def test_cli_errors_are_one_line_on_stderr(cli, args):
    r = cli(*args)
    assert r.exit_code in (1, 2)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")


def test_cli_unknown_profile_exit_code_and_hint(cli):
    r = cli("show", "a100")
    assert r.exit_code == 1
    assert "planner hardware list" in r.stderr and "a100-80gb" in r.stderr


def test_cli_broken_user_profile(cli, _config_dir):
    _write(_config_dir / "hardware" / "bad.yaml", "name: bad\n")
    r = cli("list")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.startswith("Error: ") and "bad.yaml" in r.stderr


@pytest.mark.parametrize("command", ["list", "show"])
def test_cli_help_has_an_example(cli, command):
    r = cli(command, "--help")
    assert r.exit_code == 0
    assert "Example: planner hardware" in r.stdout
