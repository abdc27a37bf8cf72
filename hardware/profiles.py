"""Hardware profiles: what one accelerator offers, read from small YAML files with units.

Where profiles come from, in order of precedence:

1. a path (``planner analyze ... --hardware ./my-gpu.yaml``): origin ``"file"``;
2. the user folder ``<config>/hardware/*.yaml``, where ``<config>`` is ``$PLANNER_CONFIG_DIR`` if set,
   else ``platformdirs.user_config_dir("planner")``: origin ``"user"``; a user profile with the same
   name as a bundled one shadows it;
3. the bundled ``profiles/hardware/*.yaml`` shipped with the package: origin ``"bundled"``.

A profile file (values carry units; see ``hardware/units.py``)::

    name: h100-sxm                    # required; lowercase letters, digits, '-', '_', '.'
    display_name: NVIDIA H100 SXM5 80GB
    vendor: NVIDIA
    aliases: [h100]                   # other names that select this profile
    memory: 80 GiB                    # required
    memory_bandwidth: 3.35 TB/s       # required; vendor peak DRAM bandwidth
    peak_flops:                       # required; DENSE peaks (no 2:4 sparsity); at least bf16, fp16 or fp32
      bf16: 989.4 TFLOP/s
    interconnect: 450 GB/s            # scale-up bandwidth per direction per GPU, or null
    kernel_launch_overhead: 5 us      # default 5 us (a typical eager-PyTorch figure, not a datasheet one)
    runtime_reserve: 2 GiB            # default 2 GiB: CUDA context, allocator slack, NCCL buffers
    price_per_hour: null              # USD per GPU-hour, or null
    efficiency:                       # device factors of the expected step time (hardware/expected.py);
      memory_bandwidth: null          #   achieved fraction of peak DRAM bandwidth (memory-bound kernels)
      compute: null                   #   achieved fraction of dense peak FLOP/s (large GEMMs)
      interconnect: null              #   achieved fraction of interconnect bandwidth (all-reduce)
      gemm_ridge_exponent: null       #   p joining a GEMM's compute and memory time, >= 1
    allreduce_latency: null           # fixed cost per all-reduce call, e.g. 20 us
                                      # (null: profiles/engines/_device.yaml defaults; calibrate may fill)
    node:                             # optional: the platform (for multi-GPU layouts)
      name: DGX H100
      gpus_per_node: 8                # GPUs in one scale-up (NVLink/xGMI) domain
      intra_node_bandwidth: 450 GB/s  # per GPU per direction
      intra_node_latency: 2 us        # per step of a collective
      inter_node_bandwidth: 50 GB/s   # per GPU per direction (the NIC), or absent
      inter_node_latency: 6.6 us
      source: [...]
    matmul_efficiency_by_rows: {1: 0.05, 4: 0.07, 16: 0.2, 64: 0.5}   # optional: skinny GEMMs (below)
    sm_count: 132                     # optional (datasheet): streaming multiprocessors
    boost_clock: 1830 MHz             # optional (datasheet): the clock the 16-bit tensor peak is quoted at
    source: [...]

``sm_count`` and ``boost_clock``: where both are given, an engine profile's ``weight_only_compute`` (the
FLOP per SM per clock of a weight-only kernel that issues Ampere-style MMA instructions, Marlin) prices a
compute-bound weight-only GEMM at ``sm_count × boost_clock × that figure`` on the device; without them that
term is not applied there, and the factors' sources (``Factors.sources``) say so.

``matmul_efficiency_by_rows`` (written by ``planner calibrate``): the fraction of the square-GEMM peak
that a matmul with that many rows (tokens) achieves against the weight shapes decode runs, weights
streamed from memory. A decode matmul is neither at the bandwidth nor at the peak: on CPUs a 4-row
fp32 GEMM can run at 7 % of the peak while reading its weights no faster than one row does. The step
model divides a matmul's FLOPs by ``peak × efficiency(rows)`` (log-linear between the measured rows,
rising to 1 at the square-GEMM size ``matmul_efficiency_square_rows``), and keeps the roofline's
max with the memory time.

``matmul_efficiency_by_shape`` (also written by ``planner calibrate``): the same fraction by rows and
by the matmul's inner dimension K (``{rows: {K: fraction}}``, weights streamed). A CPU GEMV's rate
grows with K (11 GB/s at K = 576, 21 GB/s at K = 4864 on one EPYC core), so a table measured on one
model's shapes misprices another's; where the step knows a matmul's K the step model uses this table
(log-linear in K, then in rows) instead of ``matmul_efficiency_by_rows``. That grid holds the output
width N at ``MATMUL_SHAPE_OUT`` (1024). ``matmul_efficiency_by_out`` (also written by ``planner calibrate``)
is the output-width axis: ``{rows: {N: fraction}}`` at K = 1024, ``MATMUL_SHAPE_OUT`` among the Ns. A
skinny matmul slows as N grows (4 rows × K 896 at 20 GFLOP/s against 1,024 outputs, 12.5 against a
151,936-wide lm_head on one EPYC core), and the step model multiplies the by-shape fraction by this
table's ratio at the matmul's N to the one at ``MATMUL_SHAPE_OUT`` (the two axes taken as separable).

``attention_decode_efficiency`` (written by ``planner calibrate``): the fraction of
``memory_bandwidth`` a decode step's attention kernel reaches reading K and V, by head_dim and query
heads per KV head (``{head_dim: {group: fraction}}``): CPU SDPA runs far below the read rate at small
groups of query rows. ``verify`` uses it in place of the engine's attention efficiency.

``graph_node_overhead`` and ``attention_decode_head_bandwidth`` (written by ``planner calibrate`` on a
GPU; the torch decoder ``verify`` times, not a serving engine): what each kernel of a CUDA-graph replay
costs beyond its own work (a tiny decoder's replayed step over its dispatched aten ops: the graph
node's launch latency and a small kernel's ramp), and what one (sequence, KV head) program of the
decoder's decode attention (``scaled_dot_product_attention``, no split over the keys) reads per
second. A decode step of B sequences × K KV heads then reads its KV cache at no more than
B·K × that rate: one sequence of an 8-KV-head model keeps 8 of an H200's 132 multiprocessors busy.
``graph_node_overhead_by_rows`` (``{rows: time}``, written by ``planner calibrate`` on a GPU beside
``graph_node_overhead``): the same per-op figure taken at a model's own width (``--model``): the
decoder's norms, RoPE, activation and residual adds of every layer, at each batch, replayed as one graph,
over their dispatched ops. A model's fp32 norms and RoPE run on tensors thousands of times wider than the
tiny decoder's; ``verify`` takes the figure at its batch (log-linear between the measured rows, the
nearest end outside them) in place of ``graph_node_overhead``.
``experts_grouped_bandwidth`` and ``experts_grouped_overhead`` (written by ``planner calibrate`` on a GPU where
``torch._grouped_mm`` runs): the decoder's routed experts (``runtime.model.Experts``: two grouped GEMMs with
the sort, gather and scatter around them) of a reference MoE layer timed in a CUDA graph at 1-128 tokens
fit ``time = overhead + touched expert weight bytes / bandwidth``; the overhead is what is left per MoE
layer beyond its dispatched ops' graph-node cost. ``verify`` prices each MoE layer's experts so.
``attention_decode_overhead`` (written by ``planner calibrate`` on a GPU): the decoder's decode attention call
timed in a CUDA graph at 1,024-32,768 keys fits ``time = overhead + K and V bytes / rate``; the overhead,
beyond the call's dispatched ops' graph-node cost, is added to each layer's decode attention in ``verify``.
    notes: [...]

Nothing is read at import time; every call reads the (few, small) files again, so a change of
``$PLANNER_CONFIG_DIR`` or of a file takes effect at once. Only ``yaml``'s safe loader is used: a
``!!python/...`` tag is an error, never code.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
import sys
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from planner.analysis.errors import HardwareError, PlannerError, short
from planner.analysis.records import frozen

from . import units

__all__ = [
    "DTYPE_KEYS",
    "DEFAULT_KERNEL_LAUNCH_S",
    "DEFAULT_RUNTIME_RESERVE_BYTES",
    "HardwareProfile",
    "NodeSpec",
    "profile_from_data",
    "list_profiles",
    "load_profile",
    "user_profile_dir",
    "save_user_profile",
]

#: Peak-FLOP/s columns a profile may have (keys of ``peak_flops_per_s``).
DTYPE_KEYS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

#: Memory a serving runtime keeps for itself when a profile does not say (CUDA context ~0.5-1 GiB,
#: allocator fragmentation, NCCL buffers). aiconfigurator budgets 3.5 GiB "other_mem" plus NCCL.
DEFAULT_RUNTIME_RESERVE_BYTES: int = 2 * 2**30

#: Per-kernel launch overhead of an eager step when a profile does not say: a typical figure for
#: eager PyTorch on NVIDIA/AMD GPUs (a few µs of CPU dispatch per op), not a datasheet one.
DEFAULT_KERNEL_LAUNCH_S: float = 5e-6

ORIGINS = ("bundled", "user", "file")

#: Keys of a profile's ``efficiency`` mapping: device factors of the expected step time
#: (``hardware/expected.py``). memory_bandwidth, compute, interconnect: achieved fractions of the
#: peaks; gemm_ridge_exponent: the p-norm exponent joining a GEMM's compute and memory time.
EFFICIENCY_KEYS = ("memory_bandwidth", "compute", "interconnect", "gemm_ridge_exponent")

# Which peak column a dtype falls back to when the profile lacks its own (first present wins).
# fp32 never falls back to a faster column (tf32/bf16 would overstate fp32 matmuls); low-precision
# formats without hardware support run at the bf16 rate (weights are up-cast before the matmul).
_FALLBACKS: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp8": ("fp8", "bf16", "fp16", "fp32"),
    "int8": ("int8", "bf16", "fp16", "fp32"),
    "fp4": ("fp4", "bf16", "fp16", "fp32"),
}

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")
_YAML_SUFFIXES = (".yaml", ".yml")
_VENDOR_ORDER = {"nvidia": 0, "amd": 1, "intel": 2, "google": 3, "apple": 4}

_FIELDS = (
    "name",
    "display_name",
    "vendor",
    "aliases",
    "memory",
    "memory_bandwidth",
    "peak_flops",
    "interconnect",
    "interconnect_name",
    "kernel_launch_overhead",
    "runtime_reserve",
    "price_per_hour",
    "max_achievable_matmul_flops",
    "efficiency",
    "allreduce_latency",
    "node",
    "matmul_efficiency_by_rows",
    "matmul_efficiency_square_rows",
    "matmul_efficiency_by_shape",
    "matmul_efficiency_by_out",
    "attention_decode_efficiency",
    "graph_node_overhead",
    "graph_node_overhead_by_rows",
    "experts_grouped_bandwidth",
    "experts_grouped_overhead",
    "attention_decode_overhead",
    "attention_decode_head_bandwidth",
    "sm_count",
    "boost_clock",
    "source",
    "notes",
)
#: the output width N of the weights ``matmul_efficiency_by_shape`` is measured against
MATMUL_SHAPE_OUT = 1024
_NODE_FIELDS = ("name", "gpus_per_node", "intra_node_bandwidth", "intra_node_latency", "inter_node_bandwidth",
                "inter_node_latency", "source")
_REQUIRED = ("name", "memory", "memory_bandwidth", "peak_flops")


# ---- the node (platform) a device is sold in -----------------------------------------------------

@frozen
class NodeSpec:
    """The platform one device sits in: how many GPUs share the scale-up fabric (one NVLink/xGMI
    domain, the "node"), and the two links a collective can travel: inside the node and between
    nodes. Bandwidths are per GPU per direction; a latency is the fixed cost of one step of a
    collective (a ring all-reduce over n GPUs takes 2(n-1) steps; see ``hardware.comm``)."""

    name: str
    gpus_per_node: int
    intra_node_bytes_per_s: float
    intra_node_latency_s: float
    inter_node_bytes_per_s: float | None  # None: no scale-out network described
    inter_node_latency_s: float | None
    source: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "gpus_per_node": self.gpus_per_node,
                "intra_node_bytes_per_s": self.intra_node_bytes_per_s,
                "intra_node_latency_s": self.intra_node_latency_s,
                "inter_node_bytes_per_s": self.inter_node_bytes_per_s,
                "inter_node_latency_s": self.inter_node_latency_s, "source": list(self.source)}

    def to_yaml_data(self) -> dict[str, Any]:
        return {"name": self.name, "gpus_per_node": self.gpus_per_node,
                "intra_node_bandwidth": units.format_bandwidth(self.intra_node_bytes_per_s),
                "intra_node_latency": units.format_time(self.intra_node_latency_s),
                "inter_node_bandwidth": None if self.inter_node_bytes_per_s is None
                else units.format_bandwidth(self.inter_node_bytes_per_s),
                "inter_node_latency": None if self.inter_node_latency_s is None
                else units.format_time(self.inter_node_latency_s),
                "source": list(self.source)}


def _node_from_data(raw: Any, where: str) -> NodeSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise HardwareError(f"{where}: field 'node' must be a mapping",
                            "e.g. node: {gpus_per_node: 8, intra_node_bandwidth: 450 GB/s, intra_node_latency: 2 us}")
    for key in raw:
        if key not in _NODE_FIELDS:
            close = difflib.get_close_matches(str(key), _NODE_FIELDS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known node fields: {', '.join(_NODE_FIELDS)}"
            raise HardwareError(f"{where}: unknown field 'node.{key}'", hint)
    for key in ("gpus_per_node", "intra_node_bandwidth", "intra_node_latency"):
        if raw.get(key) is None:
            raise HardwareError(f"{where}: missing required field 'node.{key}'",
                                "a node needs gpus_per_node, intra_node_bandwidth and intra_node_latency")
    n = raw["gpus_per_node"]
    if isinstance(n, bool) or not isinstance(n, int) or not (1 <= n <= 4096):
        raise HardwareError(f"{where}: field 'node.gpus_per_node' = {short(n, 80)} is not a whole number in 1..4096",
                            "e.g. gpus_per_node: 8")
    inter_bw = raw.get("inter_node_bandwidth")
    inter_lat = raw.get("inter_node_latency")
    if (inter_bw is None) != (inter_lat is None):
        raise HardwareError(f"{where}: node.inter_node_bandwidth and node.inter_node_latency go together",
                            "give both, or neither (no network between nodes)")
    return NodeSpec(
        name=_string(raw.get("name", "node"), "node.name", where) or "node",
        gpus_per_node=n,
        intra_node_bytes_per_s=units.parse_bandwidth(raw["intra_node_bandwidth"], field="node.intra_node_bandwidth", where=where),
        intra_node_latency_s=units.parse_time(raw["intra_node_latency"], field="node.intra_node_latency", where=where, allow_zero=True),
        inter_node_bytes_per_s=None if inter_bw is None else units.parse_bandwidth(inter_bw, field="node.inter_node_bandwidth", where=where),
        inter_node_latency_s=None if inter_lat is None else units.parse_time(inter_lat, field="node.inter_node_latency", where=where, allow_zero=True),
        source=_text_list(raw.get("source"), "node.source", where),
    )


# ---- the profile ---------------------------------------------------------------------------------

@frozen
class HardwareProfile:
    """One accelerator (one GPU / chip), everything in base units."""

    name: str
    display_name: str
    vendor: str
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: Mapping[str, float] = field(hash=False)
    interconnect_bytes_per_s: float | None = None  # scale-up, per direction, per GPU
    kernel_launch_s: float = DEFAULT_KERNEL_LAUNCH_S
    price_per_hour: float | None = None  # USD per GPU-hour
    memory_efficiency: float | None = None  # measured fraction of peak bandwidth, 0 < x <= 1
    compute_efficiency: float | None = None  # measured fraction of peak FLOP/s, 0 < x <= 1
    runtime_reserve_bytes: int = DEFAULT_RUNTIME_RESERVE_BYTES
    source: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    origin: str = "file"  # "bundled" | "user" | "file"
    path: str | None = None
    # ---- additions (after the fixed fields) ----
    aliases: tuple[str, ...] = ()
    interconnect_name: str | None = None
    # device factors of the expected step time (hardware/expected.py); null: the fitted defaults in
    # profiles/engines/_device.yaml. 'planner calibrate' may write them.
    interconnect_efficiency: float | None = None  # achieved fraction of interconnect bandwidth in all-reduce
    gemm_ridge_exponent: float | None = None  # p of the p-norm joining a GEMM's compute and memory time (>= 1)
    allreduce_latency_s: float | None = None  # fixed cost of one all-reduce call
    node: NodeSpec | None = None  # the platform (GPUs per node, links inside and between nodes)
    matmul_efficiency_by_rows: Mapping[int, float] | None = field(default=None, hash=False)
    matmul_efficiency_square_rows: int | None = None  # the n of the n×n×n GEMM the peak was measured at
    # calibrated: rows -> {inner dim K -> fraction of the peak}; head_dim -> {query heads per KV head -> fraction
    # of memory_bandwidth} of a decode step's attention (see the module docstring)
    matmul_efficiency_by_shape: Mapping[int, Mapping[int, float]] | None = field(default=None, hash=False)
    # calibrated: rows -> {output width N -> fraction of the peak} at K = 1024 (see the module docstring)
    matmul_efficiency_by_out: Mapping[int, Mapping[int, float]] | None = field(default=None, hash=False)
    attention_decode_efficiency: Mapping[int, Mapping[int, float]] | None = field(default=None, hash=False)
    # measured: the FLOP/s the best-shaped large matmul reaches per peak column (MAMF, a published
    # mamf-finder run), where the device has one; the expected time scales it by the fitted fraction of it
    # that serving GEMMs reach (profiles/engines/_device.yaml compute_of_mamf)
    max_achievable_matmul_flops_per_s: Mapping[str, float] | None = field(default=None, hash=False)
    # calibrated on a GPU (``planner calibrate``), for the torch decoder ``verify`` times: what each kernel
    # of a CUDA-graph replay costs beyond its work (``graph_node_overhead``), and what one (sequence, KV
    # head) program of its decode attention kernel reads per second (``attention_decode_head_bandwidth``)
    graph_node_s: float | None = None
    attention_head_bytes_per_s: float | None = None
    # calibrated on a GPU at a model's width, by batch rows: ``graph_node_overhead_by_rows``
    graph_node_by_rows_s: Mapping[int, float] | None = field(default=None, hash=False)
    # calibrated on a GPU: the torch decoder's grouped routed experts (``experts_grouped_bandwidth``, ``_overhead``)
    experts_grouped_bytes_per_s: float | None = None
    experts_grouped_overhead_s: float | None = None
    # calibrated on a GPU: each decode attention call's fixed cost (``attention_decode_overhead``)
    attention_decode_overhead_s: float | None = None
    # datasheet: the streaming multiprocessors and the clock the vendor's 16-bit tensor peak is quoted at
    # (``sm_count`` × ``boost_clock`` × the tensor FLOP per SM per clock of the architecture gives the peak);
    # for kernels whose rate scales with SM-clocks rather than the peak (an engine's ``weight_only_compute``)
    sm_count: int | None = None
    boost_clock_hz: float | None = None

    def __post_init__(self) -> None:
        where = f"hardware profile {short(self.name, 80)}" + (f" ({self.path})" if self.path else "")

        def bad(what: str, hint: str) -> HardwareError:
            return HardwareError(f"{where}: {what}", hint)

        def positive(value: Any, attr: str, *, allow_zero: bool = False, integer: bool = False) -> None:
            ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
            if isinstance(value, bool) or not ok_type:
                raise bad(f"{attr} = {short(value, 80)} is not a {'whole ' if integer else ''}number", "use base units")
            if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
                raise bad(f"{attr} = {short(value, 80)} must be {'>= 0' if allow_zero else '> 0'} and finite", "use base units")

        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise bad(
                f"name {short(self.name, 80)} is not a valid profile name",
                "use lowercase letters, digits, '-', '_' or '.', e.g. 'h100-sxm'",
            )
        positive(self.memory_bytes, "memory_bytes", integer=True)
        positive(self.memory_bandwidth_bytes_per_s, "memory_bandwidth_bytes_per_s")
        peaks = dict(self.peak_flops_per_s)
        for key, value in peaks.items():
            if key not in DTYPE_KEYS:
                raise bad(f"peak_flops_per_s has an unknown key {short(key, 80)}", f"use keys among {', '.join(DTYPE_KEYS)}")
            positive(value, f"peak_flops_per_s[{short(key, 80)}]")
        if not any(k in peaks for k in _FALLBACKS["bf16"]):
            raise bad("has no bf16, fp16 or fp32 peak FLOP/s", "add at least peak_flops.bf16 (dense)")
        object.__setattr__(self, "peak_flops_per_s", MappingProxyType({k: float(peaks[k]) for k in DTYPE_KEYS if k in peaks}))
        if self.interconnect_bytes_per_s is not None:
            positive(self.interconnect_bytes_per_s, "interconnect_bytes_per_s")
        positive(self.kernel_launch_s, "kernel_launch_s", allow_zero=True)
        if self.price_per_hour is not None:
            positive(self.price_per_hour, "price_per_hour", allow_zero=True)
        for attr in ("memory_efficiency", "compute_efficiency", "interconnect_efficiency"):
            v = getattr(self, attr)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= 1)):
                raise bad(f"{attr} = {short(v, 80)} is not a fraction in (0, 1]", "use e.g. 0.85, or null")
        if self.gemm_ridge_exponent is not None:
            positive(self.gemm_ridge_exponent, "gemm_ridge_exponent")
            if self.gemm_ridge_exponent < 1:
                raise bad(f"gemm_ridge_exponent = {short(self.gemm_ridge_exponent, 80)} must be >= 1", "use e.g. 2, or null")
        if self.allreduce_latency_s is not None:
            positive(self.allreduce_latency_s, "allreduce_latency_s", allow_zero=True)
        if self.graph_node_s is not None:
            positive(self.graph_node_s, "graph_node_s", allow_zero=True)
        if self.attention_head_bytes_per_s is not None:
            positive(self.attention_head_bytes_per_s, "attention_head_bytes_per_s")
        if self.experts_grouped_bytes_per_s is not None:
            positive(self.experts_grouped_bytes_per_s, "experts_grouped_bytes_per_s")
        if self.experts_grouped_overhead_s is not None:
            positive(self.experts_grouped_overhead_s, "experts_grouped_overhead_s", allow_zero=True)
        if self.attention_decode_overhead_s is not None:
            positive(self.attention_decode_overhead_s, "attention_decode_overhead_s", allow_zero=True)
        if self.sm_count is not None:
            positive(self.sm_count, "sm_count", integer=True)
        if self.boost_clock_hz is not None:
            positive(self.boost_clock_hz, "boost_clock_hz")
        def rows_table(attr: str, label: str, checked, examples: tuple[str, str]) -> None:
            """``attr``, a {row count: value} table, checked (``checked(rows, value)`` gives the float) and sorted."""
            out = {}
            for r, v in dict(getattr(self, attr)).items():
                if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                    raise bad(f"{label} has a row count {short(r, 80)} that is not a whole number >= 1",
                              f"use e.g. {examples[0]}")
                out[r] = checked(r, v)
            if not out:
                raise bad(f"{label} is empty", f"remove it or give e.g. {examples[1]}")
            object.__setattr__(self, attr, MappingProxyType(dict(sorted(out.items()))))

        def positive_time(r: int, v: Any) -> float:
            positive(v, f"graph_node_overhead_by_rows[{r}]")
            return float(v)

        def fraction(r: int, v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= 1):
                raise bad(f"matmul_efficiency_by_rows[{r}] = {short(v, 80)} is not a fraction in (0, 1]", "use e.g. 0.07")
            return float(v)

        if self.graph_node_by_rows_s is not None:
            rows_table("graph_node_by_rows_s", "graph_node_overhead_by_rows", positive_time,
                       ("{1: '1.2 us', 16: '1.6 us'}", "{1: '1.2 us'}"))
        positive(self.runtime_reserve_bytes, "runtime_reserve_bytes", allow_zero=True, integer=True)
        if self.runtime_reserve_bytes >= self.memory_bytes:
            raise bad(
                f"runtime_reserve ({self.runtime_reserve_bytes} bytes) is not smaller than memory ({self.memory_bytes} bytes)",
                "lower runtime_reserve",
            )
        if self.origin not in ORIGINS:
            raise bad(f"origin {short(self.origin, 80)} is not one of {', '.join(ORIGINS)}", "this is a bug")
        if self.matmul_efficiency_by_rows is not None:
            rows_table("matmul_efficiency_by_rows", "matmul_efficiency_by_rows", fraction, ("{1: 0.05, 4: 0.07}", "{1: 0.05}"))
        if self.matmul_efficiency_square_rows is not None:
            positive(self.matmul_efficiency_square_rows, "matmul_efficiency_square_rows", integer=True)
        for attr in ("matmul_efficiency_by_shape", "matmul_efficiency_by_out", "attention_decode_efficiency"):
            table = getattr(self, attr)
            if table is None:
                continue
            out = {}
            for k, row in dict(table).items():
                if isinstance(k, bool) or not isinstance(k, int) or k < 1 or not isinstance(row, Mapping) or not row:
                    raise bad(f"{attr} has a key {short(k, 80)} that is not a whole number >= 1 with a non-empty mapping",
                              "use e.g. {1: {1024: 0.08, 4096: 0.12}}")
                inner = {}
                for j, v in dict(row).items():
                    if isinstance(j, bool) or not isinstance(j, int) or j < 1:
                        raise bad(f"{attr}[{k}] has a key {short(j, 80)} that is not a whole number >= 1", "use e.g. {1024: 0.08}")
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= 1):
                        raise bad(f"{attr}[{k}][{j}] = {short(v, 80)} is not a fraction in (0, 1]", "use e.g. 0.08")
                    inner[j] = float(v)
                out[k] = MappingProxyType(dict(sorted(inner.items())))
            object.__setattr__(self, attr, MappingProxyType(dict(sorted(out.items()))))
        for r, row in (self.matmul_efficiency_by_out or {}).items():
            if MATMUL_SHAPE_OUT not in row:
                raise bad(f"matmul_efficiency_by_out[{r}] has no entry at N = {MATMUL_SHAPE_OUT}, the width "
                          "matmul_efficiency_by_shape is measured at (the table scales it by the ratio to that entry)",
                          f"add {MATMUL_SHAPE_OUT}: <fraction> to each row, or rerun 'planner calibrate'")
        if self.max_achievable_matmul_flops_per_s is not None:
            mamf = {}
            for key, value in dict(self.max_achievable_matmul_flops_per_s).items():
                if key not in self.peak_flops_per_s:
                    raise bad(f"max_achievable_matmul_flops has a column {short(key, 80)} without a peak",
                              f"use columns of peak_flops ({', '.join(self.peak_flops_per_s)})")
                positive(value, f"max_achievable_matmul_flops[{short(key, 80)}]")
                if value > self.peak_flops_per_s[key]:
                    raise bad(f"max_achievable_matmul_flops[{key}] = {value:.4g} FLOP/s is above the peak "
                              f"({self.peak_flops_per_s[key]:.4g} FLOP/s)", "a measured rate cannot beat the dense peak")
                mamf[key] = float(value)
            object.__setattr__(self, "max_achievable_matmul_flops_per_s", MappingProxyType(mamf))
        object.__setattr__(self, "source", tuple(self.source))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "aliases", tuple(self.aliases))

    # ---- peaks -----------------------------------------------------------------------------------

    def peak_flops_key_for(self, dtype_key: str) -> str:
        """The peak column actually used for ``dtype_key`` (after fallbacks), e.g. 'bf16' for fp8 on A100.

        ``dtype_key`` is a column name (fp32, tf32, bf16, fp16, fp8, int8, fp4) or any dtype name that
        ``analysis.dtypes`` knows (``bfloat16``, ``int4`` -> its compute column).
        """
        key = _compute_key(dtype_key, self.name)
        for candidate in _FALLBACKS[key]:
            if candidate in self.peak_flops_per_s:
                return candidate
        have = ", ".join(self.peak_flops_per_s) or "none"
        raise HardwareError(
            f"hardware profile {short(self.name, 80)} has no peak FLOP/s usable for {short(dtype_key, 80)} (it has: {have})",
            f"add peak_flops.{key} to the profile, or use another dtype",
        )

    def peak_flops_for(self, dtype_key: str) -> float:
        """Dense peak FLOP/s for matmuls in ``dtype_key``, with documented fallbacks (never 0).

        Fallbacks: bf16 <-> fp16, then fp32; tf32 -> fp32; fp8/int8/fp4 missing -> the bf16 rate
        (the weights are up-cast and the matmul runs in bf16); fp32 never falls back to a faster column.
        Raises ``HardwareError`` when nothing usable is present.
        """
        return self.peak_flops_per_s[self.peak_flops_key_for(dtype_key)]

    @property
    def sm_clocks_per_s(self) -> float | None:
        """``sm_count`` × ``boost_clock``: the SM-clock cycles the device runs per second, None without either."""
        if self.sm_count is None or self.boost_clock_hz is None:
            return None
        return self.sm_count * self.boost_clock_hz

    def mamf_fractions(self) -> dict[str, float]:
        """Measured MAMF over the dense peak, per peak column that has one (empty without the field)."""
        return {k: v / self.peak_flops_per_s[k] for k, v in (self.max_achievable_matmul_flops_per_s or {}).items()}

    def matmul_rows_table(self) -> dict[int, float]:
        """The calibrated skinny-matmul table (``matmul_efficiency_by_rows``) with the square-GEMM point
        ``(matmul_efficiency_square_rows, 1)`` appended when recorded above the last measured row count;
        empty without the field. ``hardware.expected`` is the one user of it."""
        table = dict(self.matmul_efficiency_by_rows or {})
        if table and self.matmul_efficiency_square_rows and self.matmul_efficiency_square_rows > max(table):
            table[self.matmul_efficiency_square_rows] = 1.0
        return table

    def matmul_efficiency_at(self, rows: int | None) -> float:
        """The fraction of the peak a matmul of ``rows`` rows achieves: ``hardware.expected.rows_efficiency``
        of ``matmul_rows_table`` (1 without the field or without a row count; the first measured value
        below the first measured row count; log-linear in the row count between measured points and from
        the last one up to 1 at ``matmul_efficiency_square_rows``; the last value beyond)."""
        from .expected import rows_efficiency

        return rows_efficiency(self.matmul_rows_table(), rows)

    # ---- export ----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict in base units (keys are the field names, which carry the units)."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "vendor": self.vendor,
            "memory_bytes": self.memory_bytes,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "peak_flops_per_s": dict(self.peak_flops_per_s),
            "interconnect_bytes_per_s": self.interconnect_bytes_per_s,
            "kernel_launch_s": self.kernel_launch_s,
            "price_per_hour": self.price_per_hour,
            "memory_efficiency": self.memory_efficiency,
            "compute_efficiency": self.compute_efficiency,
            "interconnect_efficiency": self.interconnect_efficiency,
            "gemm_ridge_exponent": self.gemm_ridge_exponent,
            "allreduce_latency_s": self.allreduce_latency_s,
            "runtime_reserve_bytes": self.runtime_reserve_bytes,
            "source": list(self.source),
            "notes": list(self.notes),
            "origin": self.origin,
            "path": self.path,
            "aliases": list(self.aliases),
            "interconnect_name": self.interconnect_name,
            "node": None if self.node is None else self.node.to_dict(),
            "matmul_efficiency_by_rows": None if self.matmul_efficiency_by_rows is None
            else {str(r): v for r, v in self.matmul_efficiency_by_rows.items()},
            "matmul_efficiency_square_rows": self.matmul_efficiency_square_rows,
            "max_achievable_matmul_flops_per_s": None if self.max_achievable_matmul_flops_per_s is None
            else dict(self.max_achievable_matmul_flops_per_s),
            "graph_node_s": self.graph_node_s,
            "graph_node_by_rows_s": None if self.graph_node_by_rows_s is None
            else {str(r): v for r, v in self.graph_node_by_rows_s.items()},
            "attention_head_bytes_per_s": self.attention_head_bytes_per_s,
            "experts_grouped_bytes_per_s": self.experts_grouped_bytes_per_s,
            "experts_grouped_overhead_s": self.experts_grouped_overhead_s,
            "attention_decode_overhead_s": self.attention_decode_overhead_s,
            "sm_count": self.sm_count,
            "boost_clock_hz": self.boost_clock_hz,
            **{attr: None if getattr(self, attr) is None else
               {str(k): {str(j): v for j, v in row.items()} for k, row in getattr(self, attr).items()}
               for attr in ("matmul_efficiency_by_shape", "matmul_efficiency_by_out", "attention_decode_efficiency")},
        }

    def to_yaml_data(self) -> dict[str, Any]:
        """The profile as YAML-file data with unit strings (what ``save_user_profile`` takes)."""
        data: dict[str, Any] = {
            "name": self.name,
            "display_name": self.display_name,
            "vendor": self.vendor,
            "aliases": list(self.aliases),
            "memory": units.format_bytes(self.memory_bytes),
            "memory_bandwidth": units.format_bandwidth(self.memory_bandwidth_bytes_per_s),
            "peak_flops": {k: units.format_flops(v) for k, v in self.peak_flops_per_s.items()},
            "interconnect": None if self.interconnect_bytes_per_s is None else units.format_bandwidth(self.interconnect_bytes_per_s),
            "interconnect_name": self.interconnect_name,
            "kernel_launch_overhead": units.format_time(self.kernel_launch_s),
            "runtime_reserve": units.format_bytes(self.runtime_reserve_bytes) if self.runtime_reserve_bytes else "0 B",
            "price_per_hour": self.price_per_hour,
            "efficiency": {"memory_bandwidth": self.memory_efficiency, "compute": self.compute_efficiency,
                           "interconnect": self.interconnect_efficiency,
                           "gemm_ridge_exponent": self.gemm_ridge_exponent},
            "allreduce_latency": None if self.allreduce_latency_s is None else units.format_time(self.allreduce_latency_s),
            "source": list(self.source),
            "notes": list(self.notes),
        }
        if data["interconnect_name"] is None:
            del data["interconnect_name"]
        if self.max_achievable_matmul_flops_per_s is not None:
            data["max_achievable_matmul_flops"] = {k: units.format_flops(v)
                                                   for k, v in self.max_achievable_matmul_flops_per_s.items()}
        if self.node is not None:
            data["node"] = self.node.to_yaml_data()
        if self.matmul_efficiency_by_rows is not None:
            data["matmul_efficiency_by_rows"] = dict(self.matmul_efficiency_by_rows)
        if self.matmul_efficiency_square_rows is not None:
            data["matmul_efficiency_square_rows"] = self.matmul_efficiency_square_rows
        for attr in ("matmul_efficiency_by_shape", "matmul_efficiency_by_out", "attention_decode_efficiency"):
            if getattr(self, attr) is not None:
                data[attr] = {k: dict(row) for k, row in getattr(self, attr).items()}
        if self.graph_node_s is not None:
            data["graph_node_overhead"] = units.format_time(self.graph_node_s)
        if self.graph_node_by_rows_s is not None:
            data["graph_node_overhead_by_rows"] = {r: units.format_time(v) for r, v in self.graph_node_by_rows_s.items()}
        if self.attention_head_bytes_per_s is not None:
            data["attention_decode_head_bandwidth"] = units.format_bandwidth(self.attention_head_bytes_per_s)
        if self.experts_grouped_bytes_per_s is not None:
            data["experts_grouped_bandwidth"] = units.format_bandwidth(self.experts_grouped_bytes_per_s)
        if self.experts_grouped_overhead_s is not None:
            data["experts_grouped_overhead"] = units.format_time(self.experts_grouped_overhead_s)
        if self.attention_decode_overhead_s is not None:
            data["attention_decode_overhead"] = units.format_time(self.attention_decode_overhead_s)
        if self.sm_count is not None:
            data["sm_count"] = self.sm_count
        if self.boost_clock_hz is not None:
            data["boost_clock"] = units.format_frequency(self.boost_clock_hz)
        return data


def _compute_key(dtype_key: str, profile_name: str) -> str:
    key = str(dtype_key).strip().lower()
    if key in _FALLBACKS:
        return key
    from planner.analysis.dtypes import ALIASES, DTYPES  # light: standard library only

    key = ALIASES.get(key.replace("torch.", ""), key.replace("torch.", ""))
    if key in DTYPES:
        return DTYPES[key].compute
    raise HardwareError(
        f"unknown compute dtype {short(dtype_key, 80)} for hardware profile {short(profile_name, 80)}",
        f"use one of {', '.join(DTYPE_KEYS)}",
    )


# ---- reading YAML --------------------------------------------------------------------------------

#: A hardware profile is a few dozen values (the largest bundled one is under 6 KB); a YAML file larger than this
#: is not one. Every command that names a profile reads all the user profiles (a user profile of any file name
#: may shadow a bundled name), so this bounds that too: 30 files of 1 MiB took 25 s a command, of 256 KiB about 6 s.
MAX_PROFILE_BYTES = 256 << 10
#: Nodes a profile may hold once its aliases are expanded (a 550-byte "billion laughs" holds 10^9).
MAX_YAML_NODES = 100_000


def _expanded_nodes(text: str, yaml, loader) -> None:
    """Refuse YAML whose aliases expand past ``MAX_YAML_NODES`` nodes, counted on the parser's event
    stream (anchors are sized once, aliases add their anchor's size) before anything is built."""
    anchors: dict[str, int] = {}
    stack = [[0, None]]
    for ev in yaml.parse(text, Loader=loader):
        if isinstance(ev, yaml.AliasEvent):
            stack[-1][0] += anchors.get(ev.anchor, 1)
        elif isinstance(ev, yaml.ScalarEvent):
            stack[-1][0] += 1
            if ev.anchor:
                anchors[ev.anchor] = 1
        elif isinstance(ev, yaml.CollectionStartEvent):
            stack.append([1, ev.anchor])
        elif isinstance(ev, yaml.CollectionEndEvent) and len(stack) > 1:
            count, anchor = stack.pop()
            if anchor:
                anchors[anchor] = count
            stack[-1][0] += count
        if stack[-1][0] > MAX_YAML_NODES:
            raise OverflowError


@functools.cache
def _unique_key_loader(yaml) -> Any:
    """The C-accelerated *safe* loader when available (same SafeConstructor: no python/* tags), refusing a
    mapping that gives one key twice (YAML says keys are unique; PyYAML keeps the last, so a profile with a
    second 'memory:' line took it silently). Keys a merge ('<<') brings in may still be overridden."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class UniqueKeyLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key_node, _ in node.value:
                    if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                        if key_node.value in seen:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"the key {short(key_node.value, 60)} is given twice", key_node.start_mark)
                        seen.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _safe_load(text: str, where: str) -> Any:
    import yaml  # lazy: keeps `import hardware.profiles` cheap

    loader = _unique_key_loader(yaml)
    if "*" in text:  # aliases: bounded before the document is built (and before any message shows a value)
        try:
            _expanded_nodes(text, yaml, loader)
        except OverflowError:
            raise HardwareError(f"{where}: YAML aliases expand to more than {MAX_YAML_NODES} values",
                                "a hardware profile is a flat mapping: write the values out, without '*' aliases") from None
        except (yaml.YAMLError, RecursionError):
            pass  # reported with its line by the load below
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader, equivalent to yaml.safe_load
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if "constructor for the tag" in problem:
            raise HardwareError(
                f"{where}: a YAML tag that is not allowed{at}: {problem}",
                "only plain YAML is read (no !!python or other custom tags); remove the tag",
            ) from None
        raise HardwareError(
            f"{where}: not valid YAML{at}: {problem}",
            "fix the YAML syntax at that place",
        ) from None
    except (ValueError, OverflowError) as exc:  # a constructor's own failure, e.g. an integer of 5000 digits
        raise HardwareError(f"{where}: a value the YAML reader cannot hold: {str(exc).split(';')[0]}",
                            "write a plausible number with its unit") from None
    except RecursionError:
        raise HardwareError(f"{where}: YAML nested too deeply", "a hardware profile is a flat mapping") from None


def _read_text(read_bytes, where: str) -> str:
    try:
        raw = read_bytes()
    except HardwareError:
        raise
    except FileNotFoundError:
        raise HardwareError(f"hardware profile file not found: {where}", "check the path") from None
    except IsADirectoryError:
        raise HardwareError(f"{where} is a folder, not a YAML file", "pass the path of a .yaml file") from None
    except OSError as exc:
        import errno

        hint = {errno.EACCES: "check the file's permissions", errno.EPERM: "check the file's permissions",
                errno.ENAMETOOLONG: "the path or one of its names is too long for the file system",
                errno.ELOOP: "a symbolic link in the path points back to itself"}.get(exc.errno, "check the path")
        raise HardwareError(f"cannot read hardware profile {where}: {exc.strerror or exc}", hint) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise HardwareError(
            f"{where}: not UTF-8 text (byte {exc.start})", "save the file as UTF-8"
        ) from None


def _text_list(value: Any, fieldname: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return tuple(str(v) for v in value)
    raise HardwareError(f"{where}: field '{fieldname}' must be a list of strings", f"got {type(value).__name__}")


def _string(value: Any, fieldname: str, where: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise HardwareError(
            f"{where}: field '{fieldname}' must be a non-empty string",
            f"got {short(value, 80)}",
        )
    return value.strip()


def profile_from_data(
    data: Any, *, where: str, origin: str = "file", path: str | None = None
) -> HardwareProfile:
    """Build a profile from parsed YAML data (a mapping of unit strings). ``where`` names the file
    in error messages."""
    if data is None:
        raise HardwareError(f"{where}: the file is empty", "write a profile; see 'planner hardware show h100-sxm'")
    if not isinstance(data, Mapping):
        raise HardwareError(
            f"{where}: a hardware profile must be a YAML mapping (key: value), not a {type(data).__name__}",
            "see 'planner hardware show h100-sxm --format json' for the fields",
        )
    for key in data:
        if key not in _FIELDS:
            close = difflib.get_close_matches(str(key), _FIELDS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known fields: {', '.join(_FIELDS)}"
            raise HardwareError(f"{where}: unknown field {short(key, 80)}", hint)
    for key in _REQUIRED:
        if data.get(key) is None:
            raise HardwareError(f"{where}: missing required field '{key}'", _FIELD_HINTS[key])

    name = _string(data["name"], "name", where)
    assert name is not None
    if not _NAME_RE.match(name):
        raise HardwareError(
            f"{where}: field 'name': {short(name, 80)} is not a valid profile name",
            "use lowercase letters, digits, '-', '_' or '.', e.g. 'h100-sxm'",
        )
    display_name = _string(data.get("display_name", name), "display_name", where)
    vendor = _string(data.get("vendor", "unknown"), "vendor", where)
    aliases = tuple(a.strip().lower() for a in _text_list(data.get("aliases"), "aliases", where))
    for alias in aliases:
        if not _NAME_RE.match(alias):
            raise HardwareError(f"{where}: field 'aliases': {short(alias, 80)} is not a valid name", "use lowercase letters, digits, '-', '_' or '.'")

    memory_bytes = units.parse_bytes(data["memory"], field="memory", where=where)
    bandwidth = units.parse_bandwidth(data["memory_bandwidth"], field="memory_bandwidth", where=where)

    peaks_raw = data["peak_flops"]
    if not isinstance(peaks_raw, Mapping):
        raise HardwareError(
            f"{where}: field 'peak_flops' must be a mapping of dtype to rate",
            "e.g. peak_flops: {bf16: 989.4 TFLOP/s}",
        )
    peaks: dict[str, float] = {}
    for key, value in peaks_raw.items():
        k = str(key).lower()
        if k not in DTYPE_KEYS:
            raise HardwareError(f"{where}: field 'peak_flops' has an unknown dtype {short(key, 80)}", f"use keys among {', '.join(DTYPE_KEYS)}")
        if value is None:
            continue  # null: not supported / not published
        peaks[k] = units.parse_flops(value, field=f"peak_flops.{k}", where=where)
    if not any(k in peaks for k in _FALLBACKS["bf16"]):
        raise HardwareError(
            f"{where}: field 'peak_flops' needs a bf16 (or fp16/fp32) rate",
            "the roofline needs a dense bf16 peak, e.g. 'bf16: 989.4 TFLOP/s'; label an estimate in notes",
        )

    interconnect = data.get("interconnect")
    interconnect_bps = None if interconnect is None else units.parse_bandwidth(interconnect, field="interconnect", where=where)
    interconnect_name = _string(data.get("interconnect_name"), "interconnect_name", where, required=False)

    launch = data.get("kernel_launch_overhead")
    launch_s = DEFAULT_KERNEL_LAUNCH_S if launch is None else units.parse_time(
        launch, field="kernel_launch_overhead", where=where, allow_zero=True
    )
    reserve = data.get("runtime_reserve")
    reserve_bytes = DEFAULT_RUNTIME_RESERVE_BYTES if reserve is None else units.parse_bytes(
        reserve, field="runtime_reserve", where=where, allow_zero=True
    )
    if reserve_bytes >= memory_bytes:
        shown = short(reserve, 80) if reserve is not None else f"not given: the default {DEFAULT_RUNTIME_RESERVE_BYTES / 2**30:g} GiB"
        raise HardwareError(f"{where}: field 'runtime_reserve' ({shown}) is not smaller than memory ({short(data['memory'], 80)})",
                            "lower runtime_reserve" if reserve is not None else "set a smaller runtime_reserve, e.g. runtime_reserve: 0 GiB")

    price = data.get("price_per_hour")
    price_per_hour = None if price is None else units.parse_money(price, field="price_per_hour", where=where)

    eff = data.get("efficiency") or {}
    if not isinstance(eff, Mapping):
        raise HardwareError(f"{where}: field 'efficiency' must be a mapping", "e.g. efficiency: {memory_bandwidth: 0.85, compute: null}")
    for key in eff:
        if key not in EFFICIENCY_KEYS:
            raise HardwareError(f"{where}: field 'efficiency' has an unknown key {short(key, 80)}", f"use {', '.join(EFFICIENCY_KEYS)}")
    mem_eff = eff.get("memory_bandwidth")
    comp_eff = eff.get("compute")
    ic_eff = eff.get("interconnect")
    memory_efficiency = None if mem_eff is None else units.parse_fraction(mem_eff, field="efficiency.memory_bandwidth", where=where)
    compute_efficiency = None if comp_eff is None else units.parse_fraction(comp_eff, field="efficiency.compute", where=where)
    interconnect_efficiency = None if ic_eff is None else units.parse_fraction(ic_eff, field="efficiency.interconnect", where=where)
    ridge = eff.get("gemm_ridge_exponent")
    if ridge is not None and (isinstance(ridge, bool) or not isinstance(ridge, (int, float))
                              or not (1 <= ridge <= 1e6)):
        raise HardwareError(f"{where}: field 'efficiency.gemm_ridge_exponent' = {short(ridge, 80)} is not a number >= 1",
                            "use e.g. 2 (1: compute and memory time add; large: the roofline's max)")
    ar = data.get("allreduce_latency")
    allreduce_latency_s = None if ar is None else units.parse_time(ar, field="allreduce_latency", where=where,
                                                                   allow_zero=True)

    skinny = data.get("matmul_efficiency_by_rows")
    skinny_eff = None
    if skinny is not None:
        if not isinstance(skinny, Mapping) or not skinny:
            raise HardwareError(f"{where}: field 'matmul_efficiency_by_rows' must be a non-empty mapping of rows to a fraction",
                                "e.g. matmul_efficiency_by_rows: {1: 0.05, 4: 0.07, 16: 0.2, 64: 0.5}")
        skinny_eff = {}
        for key, value in skinny.items():
            try:
                rows = int(str(key))
            except ValueError:
                rows = 0
            if rows < 1 or isinstance(key, bool):
                raise HardwareError(f"{where}: field 'matmul_efficiency_by_rows' has a key {short(key, 80)} that is not a row count",
                                    "use whole numbers >= 1, e.g. {1: 0.05, 4: 0.07}")
            skinny_eff[rows] = units.parse_fraction(value, field=f"matmul_efficiency_by_rows.{rows}", where=where)
    square = data.get("matmul_efficiency_square_rows")
    if square is not None and (isinstance(square, bool) or not isinstance(square, int) or square < 1):
        raise HardwareError(f"{where}: field 'matmul_efficiency_square_rows' must be a whole number >= 1, got {short(square, 80)}",
                            "the n of the n x n x n GEMM the peak was measured with, e.g. 2048")

    mamf_raw = data.get("max_achievable_matmul_flops")
    mamf = None
    if mamf_raw is not None:
        if not isinstance(mamf_raw, Mapping) or not mamf_raw:
            raise HardwareError(f"{where}: field 'max_achievable_matmul_flops' must be a non-empty mapping of dtype to rate",
                                "e.g. max_achievable_matmul_flops: {bf16: 794.5 TFLOP/s}")
        mamf = {}
        for key, value in mamf_raw.items():
            k = str(key).lower()
            if k not in peaks:
                raise HardwareError(f"{where}: field 'max_achievable_matmul_flops' has a dtype {short(key, 80)} without a peak",
                                    f"use columns of peak_flops ({', '.join(peaks)})")
            mamf[k] = units.parse_flops(value, field=f"max_achievable_matmul_flops.{k}", where=where)
            if mamf[k] > peaks[k]:
                raise HardwareError(f"{where}: field 'max_achievable_matmul_flops.{k}' ({short(value, 80)}) is above the dense peak",
                                    "a measured matmul rate cannot beat the peak; check the units")

    node_raw = data.get("graph_node_overhead")
    graph_node_s = None if node_raw is None else units.parse_time(node_raw, field="graph_node_overhead", where=where,
                                                                  allow_zero=True)
    nodes_by_rows = _rows_times(data.get("graph_node_overhead_by_rows"), "graph_node_overhead_by_rows", where)
    ex_bw_raw, ex_oh_raw = data.get("experts_grouped_bandwidth"), data.get("experts_grouped_overhead")
    ex_bw = None if ex_bw_raw is None else units.parse_bandwidth(ex_bw_raw, field="experts_grouped_bandwidth", where=where)
    ex_oh = None if ex_oh_raw is None else units.parse_time(ex_oh_raw, field="experts_grouped_overhead", where=where,
                                                            allow_zero=True)
    attn_oh_raw = data.get("attention_decode_overhead")
    attn_oh = None if attn_oh_raw is None else units.parse_time(attn_oh_raw, field="attention_decode_overhead",
                                                                where=where, allow_zero=True)
    head_raw = data.get("attention_decode_head_bandwidth")
    head_bps = None if head_raw is None else units.parse_bandwidth(head_raw, field="attention_decode_head_bandwidth",
                                                                   where=where)

    sms = data.get("sm_count")
    if sms is not None and (isinstance(sms, bool) or not isinstance(sms, int) or sms < 1):
        raise HardwareError(f"{where}: field 'sm_count' must be a whole number >= 1, got {short(sms, 80)}",
                            "the streaming multiprocessors of the device, e.g. 132 for an H100 SXM")
    clock_raw = data.get("boost_clock")
    clock = None if clock_raw is None else units.parse_frequency(clock_raw, field="boost_clock", where=where)

    tables = {attr: _table2(data.get(attr), attr, where)
              for attr in ("matmul_efficiency_by_shape", "matmul_efficiency_by_out", "attention_decode_efficiency")}

    return HardwareProfile(
        name=name,
        display_name=display_name or name,
        vendor=vendor or "unknown",
        memory_bytes=memory_bytes,
        memory_bandwidth_bytes_per_s=bandwidth,
        peak_flops_per_s=peaks,
        interconnect_bytes_per_s=interconnect_bps,
        kernel_launch_s=launch_s,
        price_per_hour=price_per_hour,
        memory_efficiency=memory_efficiency,
        compute_efficiency=compute_efficiency,
        interconnect_efficiency=interconnect_efficiency,
        gemm_ridge_exponent=None if ridge is None else float(ridge),
        allreduce_latency_s=allreduce_latency_s,
        runtime_reserve_bytes=reserve_bytes,
        source=_text_list(data.get("source"), "source", where),
        notes=_text_list(data.get("notes"), "notes", where),
        origin=origin,
        path=path,
        aliases=aliases,
        interconnect_name=interconnect_name,
        node=_node_from_data(data.get("node"), where),
        matmul_efficiency_by_rows=skinny_eff,
        matmul_efficiency_square_rows=square,
        max_achievable_matmul_flops_per_s=mamf,
        graph_node_s=graph_node_s,
        graph_node_by_rows_s=nodes_by_rows,
        experts_grouped_bytes_per_s=ex_bw,
        experts_grouped_overhead_s=ex_oh,
        attention_decode_overhead_s=attn_oh,
        attention_head_bytes_per_s=head_bps,
        sm_count=sms,
        boost_clock_hz=clock,
        **tables,
    )


def _whole_key(key: Any, fieldname: str, where: str, hint: str) -> int:
    """A table's key as a whole number >= 1 (YAML may give it as a string), else refused naming the field."""
    try:
        n = int(str(key))
    except ValueError:
        n = 0
    if n < 1 or isinstance(key, bool):
        raise HardwareError(f"{where}: field '{fieldname}' has a key {short(key, 80)} that is not a whole number >= 1", hint)
    return n


def _rows_times(value: Any, fieldname: str, where: str) -> dict[int, float] | None:
    """A mapping of row counts (whole numbers >= 1) to times (``{1: '1.2 us'}``), or None."""
    if value is None:
        return None
    hint = f"e.g. {fieldname}: {{1: '1.2 us', 16: '1.6 us'}}"
    if not isinstance(value, Mapping) or not value:
        raise HardwareError(f"{where}: field '{fieldname}' must be a non-empty mapping of row counts to times", hint)
    out: dict[int, float] = {}
    for key, v in value.items():
        n = _whole_key(key, fieldname, where, hint)
        out[n] = units.parse_time(v, field=f"{fieldname}.{n}", where=where)
    return out


def _table2(value: Any, fieldname: str, where: str) -> dict[int, dict[int, float]] | None:
    """A two-level table of fractions with whole-number keys (``{1: {1024: 0.08}}``), or None."""
    if value is None:
        return None
    hint = f"e.g. {fieldname}: {{1: {{1024: 0.08, 4096: 0.12}}}}"
    if not isinstance(value, Mapping) or not value:
        raise HardwareError(f"{where}: field '{fieldname}' must be a non-empty mapping of mappings", hint)

    def whole(key: Any) -> int:
        return _whole_key(key, fieldname, where, hint)

    out: dict[int, dict[int, float]] = {}
    for key, row in value.items():
        k = whole(key)
        if not isinstance(row, Mapping) or not row:
            raise HardwareError(f"{where}: field '{fieldname}.{k}' must be a non-empty mapping", hint)
        out[k] = {whole(j): units.parse_fraction(v, field=f"{fieldname}.{k}.{j}", where=where) for j, v in row.items()}
    return out


_FIELD_HINTS = {
    "name": "add e.g. 'name: my-gpu' (lowercase letters, digits, '-')",
    "memory": "add e.g. 'memory: 80 GiB'",
    "memory_bandwidth": "add e.g. 'memory_bandwidth: 3.35 TB/s'",
    "peak_flops": "add e.g. 'peak_flops: {bf16: 989.4 TFLOP/s}' (dense, no sparsity)",
}


def _load_file(entry: Any, origin: str) -> HardwareProfile:
    """``entry`` is a Path or an importlib.resources Traversable."""
    where = str(entry)
    if isinstance(entry, (str, os.PathLike)):  # a user's file: a regular file of bounded size, read without blocking
        from planner.analysis.files import read_bounded

        text = _read_text(lambda: read_bounded(entry, MAX_PROFILE_BYTES, what="hardware profile (YAML)",
                                               error=HardwareError), where)
    else:
        text = _read_text(entry.read_bytes, where)
    data = _safe_load(text, where)
    return profile_from_data(data, where=where, origin=origin, path=where)


# ---- where profiles live -------------------------------------------------------------------------

def user_config_dir() -> Path:
    """``$PLANNER_CONFIG_DIR`` if set, else ``platformdirs.user_config_dir("planner")``."""
    env = os.environ.get("PLANNER_CONFIG_DIR", "").strip()
    if env:
        return Path(os.path.expanduser(env))  # (Path.expanduser raises on '~nosuchuser'; this leaves it as typed)
    if sys.platform.startswith("linux"):  # platformdirs' Unix rule, without importing it on every command
        xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
        return Path(xdg if xdg else os.path.expanduser("~/.config")) / "planner"
    import platformdirs  # macOS, Windows ...

    return Path(platformdirs.user_config_dir("planner"))


def user_profile_dir() -> Path:
    """The folder of user hardware profiles: ``<user config dir>/hardware`` (may not exist yet)."""
    return user_config_dir() / "hardware"


LAST_CALIBRATION = "last-calibration"  # a file in the user config dir naming the profile the last calibrate saved


def record_last_calibration(name: str) -> Path:
    """Remember ``name`` as the profile the last ``planner calibrate`` saved (``verify`` uses it)."""
    import tempfile

    check_profile_name(name)
    path = user_config_dir() / LAST_CALIBRATION
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # a fresh temporary file: a fixed '.last-calibration.tmp' that was a FIFO blocked the open for ever,
        # and one that was a symbolic link had its target written
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{LAST_CALIBRATION}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(name + "\n")
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise HardwareError(f"cannot write {path}: {exc.strerror or exc}", "check the folder's permissions or set PLANNER_CONFIG_DIR") from None
    return path


def last_calibration() -> str | None:
    """The profile name the last ``planner calibrate`` saved, or None (no file, or not a valid name)."""
    from planner.analysis.files import read_bounded

    path = user_config_dir() / LAST_CALIBRATION
    try:  # bounded and non-blocking: a FIFO in its place hung verify's open() for ever
        name = read_bounded(path, 256, what="last-calibration file").decode("utf-8", errors="replace").strip()
    except (OSError, PlannerError):
        return None
    return name if _NAME_RE.match(name) else None


def _yaml_entries(folder: Any) -> list[Any]:
    try:
        entries = [
            e for e in folder.iterdir()
            if e.name.lower().endswith(_YAML_SUFFIXES) and not e.name.startswith(".") and e.is_file()
        ]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise HardwareError(f"cannot list hardware profiles in {folder}: {exc.strerror or exc}", "check the folder's permissions") from None
    return sorted(entries, key=lambda e: e.name)


def _bundled_folder() -> Any:
    from planner.profiles import data_dir

    return data_dir("hardware")


def _load_folder(folder: Any, origin: str) -> dict[str, HardwareProfile]:
    out: dict[str, HardwareProfile] = {}
    for entry in _yaml_entries(folder):
        profile = _load_file(entry, origin)
        if profile.name in out:
            raise HardwareError(
                f"two {origin} hardware profiles are named {short(profile.name, 80)}: {out[profile.name].path} and {profile.path}",
                "rename or remove one of them",
            )
        out[profile.name] = profile
    return out


def _sort_key(p: HardwareProfile) -> tuple[int, str]:
    return (_VENDOR_ORDER.get(p.vendor.lower(), len(_VENDOR_ORDER)), p.name)


def list_profiles() -> list[HardwareProfile]:
    """Bundled profiles plus user profiles (a user profile shadows a bundled one of the same name)."""
    merged = _load_folder(_bundled_folder(), "bundled")
    user_dir = user_profile_dir()
    if os.path.isdir(user_dir):  # (False for any OSError, where Path.is_dir raises ENAMETOOLONG)
        merged.update(_load_folder(user_dir, "user"))
    return sorted(merged.values(), key=_sort_key)


def _is_file(path: Any) -> bool:
    """``path.is_file()``, False where the name cannot be a file at all (too long for the file system: Python
    3.11's ``is_file`` raises ENAMETOOLONG instead of answering False)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _looks_like_path(text: str) -> bool:
    return text.lower().endswith(_YAML_SUFFIXES) or "/" in text or os.sep in text or text.startswith("~")


def load_profile(name_or_path: str) -> HardwareProfile:
    """A profile by name or alias (case-insensitive), or from a YAML file.

    A value ending in ``.yaml``/``.yml`` or containing a path separator is read as a file. Otherwise a
    profile name or alias is looked up (user profiles first); if none matches and a file of that name
    exists, it is read. An unknown name raises ``HardwareError`` listing close matches.
    """
    text = str(name_or_path).strip()
    if not text:
        raise HardwareError("empty hardware profile name", "run 'planner hardware list' to see the profiles")
    if _looks_like_path(text):
        return _load_file(Path(os.path.expanduser(text)), "file")  # ('~nosuchuser/x.yaml' stays a missing file)

    key = text.lower()
    # fast path: an exact bundled name is its file's stem; user profiles (usually few) are read first
    # because a user profile of the same name shadows the bundled one
    user_dir = user_profile_dir()
    user = _load_folder(user_dir, "user") if os.path.isdir(user_dir) else {}
    if key in user:
        return user[key]
    if _NAME_RE.match(key):
        entry = _bundled_folder().joinpath(f"{key}.yaml")
        if _is_file(entry):
            profile = _load_file(entry, "bundled")
            if profile.name == key:
                return profile
    profiles = list_profiles()
    for p in profiles:
        if p.name == key:
            return p
    for origin in ("user", "bundled"):
        hits = [p for p in profiles if p.origin == origin and key in p.aliases]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise HardwareError(
                f"hardware alias {short(text, 80)} is ambiguous: {', '.join(p.name for p in hits)}",
                "use the full profile name, or remove the alias from one of the files",
            )
    if _is_file(Path(text)):
        return _load_file(Path(text), "file")

    close = _close_matches(key, profiles)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise HardwareError(
        f"unknown hardware profile {short(text, 80)}",
        f"{hint}run 'planner hardware list' to see all profiles, or pass a path to a YAML file",
    )


def _close_matches(key: str, profiles: Iterable[HardwareProfile]) -> list[str]:
    canonical: dict[str, str] = {}
    for p in profiles:
        canonical.setdefault(p.name, p.name)
        for alias in p.aliases:
            canonical.setdefault(alias, p.name)
    out: list[str] = []
    # names that contain what was typed ('a100' -> a100-40gb, a100-80gb, ...), then spelling neighbours
    contained = sorted(c for c in canonical if len(key) >= 2 and key in c)
    for cand in contained + difflib.get_close_matches(key, list(canonical), n=6, cutoff=0.6):
        if canonical[cand] not in out:
            out.append(canonical[cand])
    return out[:6]


# ---- writing -------------------------------------------------------------------------------------

def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def check_profile_name(name: str) -> str:
    """A profile name usable as a file name in the user folder, or ``HardwareError``."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise HardwareError(
            f"{short(name, 80)} is not a valid profile name", "use lowercase letters, digits, '-', '_' or '.', e.g. 'my-gpu'"
        )
    return name


def check_user_profile_writable(name: str) -> Path:
    """The path ``name`` would be saved to, after checking the name and that the user profile folder can
    be created and written (a temporary file is made and removed), or ``HardwareError``: callers that
    measure before saving check this first, so a minute of work is not lost to a read-only folder."""
    check_profile_name(name)
    folder = user_profile_dir()
    target = folder / f"{name}.yaml"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        import tempfile  # only when a profile is saved

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise HardwareError(f"cannot write to {folder}: {exc.strerror or exc}", "check the folder's permissions or set PLANNER_CONFIG_DIR") from None
    if target.is_dir() or (target.is_symlink() and not target.exists()):
        raise HardwareError(f"cannot save profile {name!r}: {target} is a folder or a dangling link", "choose another --name")
    return target


def save_user_profile(data: dict, name: str) -> Path:
    """Write ``data`` (YAML-file data with unit strings, e.g. ``profile.to_yaml_data()``) to
    ``user_profile_dir() / f"{name}.yaml"``, atomically: the data is validated and serialised first,
    written to a temporary file in the same folder, and moved into place with ``os.replace``; a failure
    at any step leaves the previous file as it was."""
    import yaml  # lazy

    check_profile_name(name)
    if not isinstance(data, Mapping):
        raise HardwareError(f"profile data for {short(name, 80)} must be a mapping", f"got {type(data).__name__}")
    if data.get("name", name) != name:
        raise HardwareError(f"profile data is named {short(data.get('name'), 80)} but is being saved as {short(name, 80)}", "make the two names equal")
    payload = {"name": name, **{k: v for k, v in _plain(data).items() if k != "name"}}

    folder = user_profile_dir()
    target = folder / f"{name}.yaml"
    profile_from_data(payload, where=str(target), origin="user", path=str(target))  # validate first
    text = (
        "# planner hardware profile (values carry units; see 'planner hardware show NAME').\n"
        + yaml.safe_dump(payload, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        import tempfile  # only when a profile is saved

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    except OSError as exc:
        raise HardwareError(f"cannot write to {folder}: {exc.strerror or exc}", "check the folder's permissions or set PLANNER_CONFIG_DIR") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise HardwareError(f"cannot write {target}: {exc.strerror or exc}", "the previous file, if any, is unchanged") from None
        raise
    return target
