"""``planner calibrate``: measure the local device, check the figures against each other, and write
them as a hardware profile.

What is measured (all with torch, on the device itself):

- **copy bandwidth**: a large device-to-device copy, counting what it reads plus what it writes
  (``2 × buffer bytes / time``);
- **read bandwidth** (CPU): matrix-vector products streaming many distinct weight-sized matrices (1 GiB
  in all, beyond the caches), in the dtype the decoder uses, as a decode step does. A CPU copy also pays
  a write-allocate read of its destination, so it understates the streaming read rate a decode step
  achieves; on a CPU the profile's ``memory_bandwidth`` is this read rate and the copy rate is kept in
  its notes. On a GPU the copy bandwidth is the profile's (stores do not pay that extra read there);
- **matmul FLOP/s**: large square GEMMs in each dtype asked for (bf16 and fp32 on CUDA, with TF32 off
  for fp32; the decoder's dtype on CPU);
- **skinny matmuls**: 1, 4, 16 and 64 rows against the weight shapes of a model's decode step (each
  shape streamed from memory, weighted by how often the model has it); their rate over the square-GEMM
  peak is the profile's ``matmul_efficiency_by_rows``, which the step model uses for matmul ops;
- **skinny matmuls by shape**: 1, 4, 16 and 64 rows against (1024 × K) weights for K = 512 .. 8192
  (streamed), as fractions of the square-GEMM peak: the profile's ``matmul_efficiency_by_shape``. A
  CPU GEMV's rate grows with K, so one model's table misprices another's; the step model prices each
  matmul at its own K from this grid;
- **attention at decode**: ``scaled_dot_product_attention`` as the decoder calls it at decode (the
  ``G`` query heads of each KV head as ``G`` query rows, 1024 keys, 4 KV heads) for head_dim 64 and
  128 and groups 1 .. 8, streamed: bytes of K and V read over the time, as a fraction of the profile's
  bandwidth (``attention_decode_efficiency``). CPU SDPA is far below the read rate at a few query rows;
- **on a GPU, the decoder's CUDA-graph replays** (what ``verify`` times there): the tiny decoder's decode
  step captured and replayed, divided by its dispatched aten ops (``graph_node_overhead``: what each
  replayed kernel costs beyond its work, 0.98 µs on an H200); and the decoder's decode attention per
  (sequence, KV head) program (``attention_decode_head_bandwidth``: SDPA with 4 query rows, head_dim 128
  and 32,768 keys over 2-16 KV heads, K and V bytes / time / heads; 42.5 GB/s on an H200, where one
  program per KV head and no split over the keys leave most multiprocessors idle at small batches).
  There the skinny-matmul tables are timed inside a CUDA graph too (eager, each product paid the host's
  launch), with weights streamed past the L2; the CPU-oriented ``attention_decode_efficiency`` table is
  not measured (the per-program rate replaces it). Also on a GPU: the same per-op figure at ``--model``'s own
  width by batch (``graph_node_overhead_by_rows``: ``small_ops_step``, every layer's norms, RoPE, activation
  and residual adds replayed at 1-64 rows; 1.10-1.52 µs on an H200 at Llama-3.1-8B's width), the decode
  attention call's fixed cost (``attention_decode_overhead``: the call at 1k-32k keys in a graph, the line's
  intercept less its graph node; 4.8 µs), and the decoder's grouped routed experts
  (``experts_grouped_bandwidth`` and ``experts_grouped_overhead``: ``runtime.model.Experts`` of ``--model``'s
  MoE layer, else Qwen3-30B-A3B's, at 1-128 tokens in a graph; 2.82 TB/s of touched weights + 38.8 µs a layer);
- **per-launch overhead**: what an eager decode step pays per kernel: the wall time of an eager decode
  step of a tiny decoder (device work negligible) divided by the aten ops it dispatches (the count
  ``verify`` takes of the real step), so Python and framework dispatch are included; a bare tiny op's dispatch (``add_``) is measured beside it.

Every figure is repeated in rounds until the last three agree within ``STABLE_SPREAD`` (or
``MAX_ROUNDS`` is reached, and the figure is reported as unstable). On a CPU the thread count is chosen
first: each candidate (1, and torch's default) is measured the same way and the one whose read rate is
stable and highest is used (``--threads`` fixes it). ``calibration_problems`` lists what disagrees (the
per-kernel overhead against the bare dispatch, the read rate against the copy test, unstable figures);
the CLI refuses to save such a profile unless ``--force``. The load average before and after is kept.

The profile (``calibration_profile``) sets the bandwidth and peak efficiency factors to 1: the measured
rates are the achieved rates (null would let the step model apply its fitted datasheet defaults). It names the device in its notes (``device: cuda: NVIDIA H200``), so ``verify``
uses it by default only on the device it was measured on.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

import torch

from planner.hardware.profiles import MATMUL_SHAPE_OUT

from .timing import _no_progress, count_kernels, synchronize, timed_samples

GiB = 2**30
DEVICE_NOTE = "device: "


@dataclass(frozen=True)
class Calibration:
    device_type: str  # cpu | cuda
    device_name: str
    copy_bytes_per_s: float
    read_bytes_per_s: float | None  # CPU only: streaming GEMV read rate
    matmul_flops_per_s: dict[str, float]
    launch_s: float
    memory_bytes: int
    threads: int | None
    seconds: float
    details: dict = field(default_factory=dict)
    matmul_efficiency_by_rows: dict[int, float] = field(default_factory=dict)  # skinny GEMMs, see measure_skinny
    figures: dict = field(default_factory=dict)  # name -> Figure (rounds, spread, stable)
    matmul_efficiency_by_shape: dict[int, dict[int, float]] = field(default_factory=dict)  # measure_matmul_by_shape
    attention_decode_efficiency: dict[int, dict[int, float]] = field(default_factory=dict)  # measure_attention
    matmul_efficiency_by_out: dict[int, dict[int, float]] = field(default_factory=dict)  # measure_matmul_by_out
    graph_node_s: float | None = None  # CUDA: measure_graph_node
    attention_head_bytes_per_s: float | None = None  # CUDA: measure_attention_heads
    graph_node_by_rows_s: dict[int, float] = field(default_factory=dict)  # CUDA with a model: measure_graph_node_by_rows
    experts_grouped_bytes_per_s: float | None = None  # CUDA: measure_experts_grouped
    experts_grouped_overhead_s: float | None = None
    attention_decode_overhead_s: float | None = None  # CUDA: measure_attention_overhead

    @property
    def device_label(self) -> str:
        return f"{self.device_type}: {self.device_name}"

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        """What the profile's ``memory_bandwidth`` holds: the read rate on CPU, the copy rate on GPU."""
        return self.read_bytes_per_s if self.read_bytes_per_s else self.copy_bytes_per_s

    def to_dict(self) -> dict:
        return {
            "device_type": self.device_type, "device_name": self.device_name,
            "copy_bytes_per_s": self.copy_bytes_per_s, "read_bytes_per_s": self.read_bytes_per_s,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "matmul_flops_per_s": dict(self.matmul_flops_per_s), "launch_s": self.launch_s,
            "memory_bytes": self.memory_bytes, "threads": self.threads, "seconds": self.seconds,
            "matmul_efficiency_by_rows": {str(r): v for r, v in self.matmul_efficiency_by_rows.items()},
            "matmul_efficiency_by_shape": {str(r): {str(k): v for k, v in row.items()}
                                           for r, row in self.matmul_efficiency_by_shape.items()},
            "attention_decode_efficiency": {str(d): {str(g): v for g, v in row.items()}
                                            for d, row in self.attention_decode_efficiency.items()},
            "matmul_efficiency_by_out": {str(r): {str(n): v for n, v in row.items()}
                                         for r, row in self.matmul_efficiency_by_out.items()},
            "graph_node_s": self.graph_node_s, "attention_head_bytes_per_s": self.attention_head_bytes_per_s,
            "graph_node_by_rows_s": {str(r): v for r, v in self.graph_node_by_rows_s.items()},
            "experts_grouped_bytes_per_s": self.experts_grouped_bytes_per_s,
            "experts_grouped_overhead_s": self.experts_grouped_overhead_s,
            "attention_decode_overhead_s": self.attention_decode_overhead_s,
            "details": {k: v for k, v in self.details.items() if k != "figures"},
            "figures": {k: f.to_dict() for k, f in self.figures.items()},
        }


# ---- the device ----------------------------------------------------------------------------------


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not name:
        import platform

        name = platform.processor() or platform.machine() or "unknown CPU"
    return name


def meminfo_bytes(key: str) -> int | None:
    """A /proc/meminfo value (``MemAvailable``, ``MemTotal``) in bytes, or None off Linux."""
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def total_memory_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    total = meminfo_bytes("MemTotal")
    if total:
        return total
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 * GiB


def free_memory_bytes(device: torch.device) -> int:
    """Memory a new allocation can use now: ``cudaMemGetInfo`` free, or ``MemAvailable`` on CPU."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    avail = meminfo_bytes("MemAvailable")
    avail = avail if avail is not None else total_memory_bytes(device) // 2
    left = address_space_left()
    return avail if left is None else min(avail, left)


def address_space_left() -> int | None:
    """What ``ulimit -v`` (RLIMIT_AS) still lets this process map, or None when it is unlimited (or off Linux):
    past it an allocation fails however much memory the machine has free."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            mapped = next((int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:")), 0)
    except (ImportError, OSError, ValueError, IndexError):
        return None
    return max(0, soft - mapped)


# ---- measurements --------------------------------------------------------------------------------

#: A figure is stable when the last three rounds' (max - min) / median is at most this. Run-to-run
#: spread of a quiet machine is a few percent; a round that differs by more is another mode of the
#: machine (another process, the threads waiting on each other), which is what the repetition catches.
STABLE_SPREAD = 0.10
MIN_ROUNDS, MAX_ROUNDS = 3, 8

#: Sanity bounds between figures of the same run (not prediction factors: a profile outside them is
#: refused unless --force). The per-kernel overhead of an eager step includes Python and framework
#: work around each kernel, so it exceeds a bare op's dispatch, but by a bounded factor (a quiet
#: machine gives 1.5-4x); the streaming read rate of a GEMV is within a small factor of the copy test's
#: read rate (half its read + write figure).
LAUNCH_OVER_DISPATCH = (0.5, 10.0)
READ_OVER_COPY_READ = (0.25, 4.0)
SKINNY_ROWS = (1, 4, 16, 64)
SHAPE_INNER = (512, 1024, 2048, 4096, 8192)  # K of the (1024 × K) weights of the rows × K grid
SHAPE_OUT = MATMUL_SHAPE_OUT  # N of the (N × K) weights of the rows × K grid
#: N of the (N × K) weights of the rows × N grid, at K = SHAPE_OUT_INNER: a skinny matmul's rate also
#: falls with its output width (on one EPYC core, 4 rows × K 896 run at 20 GFLOP/s against 1,024 outputs
#: and 12.5 against a 151,936-wide lm_head), which the (1024 × K) grid alone cannot show
SHAPE_WIDE_OUT = (1024, 8192, 65536)
SHAPE_OUT_INNER = 1024
ATTN_HEAD_DIMS, ATTN_GROUPS = (64, 128), (1, 2, 4, 8)
ATTN_KV_HEADS, ATTN_KEYS = 4, 1024
#: CUDA: the decode attention's read rate per (sequence, KV head) program, measured at these KV-head counts
#: (all below a GPU's multiprocessor count) and keys, query group and head_dim (a Llama-3-8B layer's)
HEAD_PROGRAMS, HEAD_KEYS, HEAD_GROUP, HEAD_DIM = (2, 4, 8, 16), 32768, 4, 128
#: the record beside it (calibration details): programs x keys
HEAD_GRID = ((1, 32768), (4, 32768), (8, 32768), (32, 32768), (64, 32768), (128, 32768),
             (8, 2048), (32, 2048), (128, 2048), (512, 2048))
DEFAULT_SHAPES_MODEL = "Qwen/Qwen2.5-0.5B"  # a bundled model; --model picks another


@dataclass(frozen=True)
class Figure:
    """A measurement repeated in rounds: ``value`` is the median of the last three rounds."""

    value: float
    rounds: tuple[float, ...]

    @property
    def spread(self) -> float:
        last = self.rounds[-3:]
        med = statistics.median(last)
        return (max(last) - min(last)) / med if med else 0.0

    @property
    def stable(self) -> bool:
        return self.spread <= STABLE_SPREAD

    def to_dict(self) -> dict:
        return {"value": self.value, "rounds": list(self.rounds), "spread": self.spread, "stable": self.stable}


def repeat_until_stable(measure: Callable[[], float], *, min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS) -> Figure:
    """Call ``measure`` (one round's figure) until the last three rounds agree within ``STABLE_SPREAD``
    (``Figure.stable``), or ``max_rounds`` have run."""
    rounds: list[float] = []
    while True:
        rounds.append(float(measure()))
        if len(rounds) >= min_rounds:
            fig = Figure(statistics.median(rounds[-3:]), tuple(rounds))
            if fig.stable or len(rounds) >= max_rounds:
                return fig


def _median_time(fn: Callable[[], object], device: torch.device, reps: int, warmup: int = 1, *,
                 wall: bool = False) -> float:
    """Median seconds of ``reps`` calls of ``fn`` after ``warmup`` (``timing.timed_samples``: device time
    on CUDA, or wall time with ``wall``)."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    return statistics.median(timed_samples(fn, device, reps, wall=wall))


def measure_copy(device: torch.device, nbytes: int, reps: int, rounds: tuple[int, int] = (MIN_ROUNDS, MAX_ROUNDS)) -> Figure:
    """Bytes/s of ``dst.copy_(src)``, counting the read and the write."""
    n = nbytes // 4
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    fig = repeat_until_stable(lambda: 2 * n * 4 / _median_time(lambda: dst.copy_(src), device, reps),
                              min_rounds=rounds[0], max_rounds=rounds[1])
    del src, dst
    return fig


def measure_read(device: torch.device, nbytes: int, dtype, reps: int, rounds: tuple[int, int] = (MIN_ROUNDS, MAX_ROUNDS)) -> Figure:
    """Bytes/s of matrix-vector products over many distinct (4096 × 1024) matrices, ``nbytes`` in all:
    reads dominate, and like a decode step each matrix is streamed once per pass (no cache reuse)."""
    rows, cols = 4096, 1024
    size = rows * cols * torch.tensor([], dtype=dtype).element_size()
    count = max(2, nbytes // size)
    mats = [torch.empty(rows, cols, dtype=dtype, device=device).normal_(0, 0.02) for _ in range(count)]
    x = torch.randn(1, cols, dtype=dtype, device=device)

    def run():
        for w in mats:
            torch.nn.functional.linear(x, w)

    fig = repeat_until_stable(lambda: count * size / _median_time(run, device, reps),
                              min_rounds=rounds[0], max_rounds=rounds[1])
    del mats
    return fig


def measure_matmul(device: torch.device, n: int, dtype, reps: int) -> Figure:
    """FLOP/s of an ``n × n × n`` GEMM (``2·n³`` FLOPs)."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    return repeat_until_stable(lambda: 2 * n ** 3 / _median_time(lambda: torch.mm(a, b), device, reps))


def measure_launch(device: torch.device, calls: int) -> Figure:
    """Seconds per call of a tiny eager op (launch / dispatch overhead)."""
    x = torch.zeros(1, device=device)
    for _ in range(100):
        x.add_(1.0)
    synchronize(device)

    def one_round() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            x.add_(1.0)
        synchronize(device)
        return (time.perf_counter() - t0) / calls

    return repeat_until_stable(one_round)


def model_matmul_shapes(spec) -> list[tuple[int, int, int]]:
    """(out features, in features, how many) of the dense weight matrices a decode step multiplies:
    the ``linear`` tensors and the LM head (the embedding when tied)."""
    from collections import Counter

    c: Counter = Counter()
    for t in spec.tensors():
        if len(t.shape) == 2 and (t.kind == "linear" or (t.kind == "embedding" and spec.tie_word_embeddings
                                                         and t.name.endswith("embed_tokens.weight"))):
            c[tuple(t.shape)] += 1
    return [(n, k, cnt) for (n, k), cnt in sorted(c.items())]


def streamed_matmul_s(device: torch.device, dtype, n: int, k: int, rows: tuple[int, ...], *, stream_bytes: int,
                      reps: int, min_copies: int = 1) -> dict[int, float]:
    """{rows: seconds} of one ``rows × K`` by ``K × N`` matmul (``F.linear``) at each row count, the
    weight streamed from memory as a decode step reads each weight once: enough distinct copies of it
    to pass ``stream_bytes`` (at least ``min_copies``, at most 64), each multiplied in turn."""
    elem = torch.tensor([], dtype=dtype).element_size()
    cuda = device.type == "cuda"
    copies = max(min_copies, min(256 if cuda else 64, -(-stream_bytes // (n * k * elem))))
    mats = [torch.empty(n, k, dtype=dtype, device=device).normal_(0, 0.02) for _ in range(copies)]
    out: dict[int, float] = {}
    for r in rows:
        x = torch.randn(r, k, dtype=dtype, device=device)

        def run():
            for w in mats:
                torch.nn.functional.linear(x, w)

        if cuda:  # as verify replays the step: one CUDA graph, the products back to back, no host launch between
            from .timing import capture_graph

            graph = capture_graph(run, device)
            out[r] = _median_time(graph.replay, device, max(reps, 10), warmup=3) / copies
            del graph
        else:
            out[r] = _median_time(run, device, reps) / copies
    del mats
    return out


def measure_skinny(device: torch.device, dtype, shapes: list[tuple[int, int, int]], peak_flops_per_s: float, *,
                   rows: tuple[int, ...] = SKINNY_ROWS, stream_bytes: int = 64 * 2**20, reps: int = 3
                   ) -> tuple[dict[int, float], dict]:
    """({rows: fraction of ``peak_flops_per_s``}, details) of ``rows × K`` by ``K × N`` matmuls over the
    given weight shapes. Each shape is streamed from memory (``streamed_matmul_s``) and weighted by its
    count, so the figure is the model's matmul FLOPs over its matmul time at that row count."""
    per_rows: dict[int, tuple[float, float]] = {r: (0.0, 0.0) for r in rows}  # rows -> (flops, seconds) weighted
    detail: dict = {}
    for n, k, count in shapes:
        for r, t in streamed_matmul_s(device, dtype, n, k, rows, stream_bytes=stream_bytes, reps=reps).items():
            f, s = per_rows[r]
            per_rows[r] = (f + count * 2 * r * n * k, s + count * t)
            detail[f"{n}x{k}@{r}"] = 2 * r * n * k / t
    eff = {r: min(1.0, f / s / peak_flops_per_s) for r, (f, s) in per_rows.items() if s > 0}
    return eff, detail


def measure_matmul_by_shape(device: torch.device, dtype, peak_flops_per_s: float, *, rows: tuple[int, ...] = SKINNY_ROWS,
                            inners: tuple[int, ...] = SHAPE_INNER, n_out: int = SHAPE_OUT,
                            stream_bytes: int = 64 * 2**20, reps: int = 3) -> dict[int, dict[int, float]]:
    """{rows: {K: fraction of ``peak_flops_per_s``}} of ``rows × K`` by ``K × n_out`` matmuls, each
    weight shape streamed from memory (enough distinct copies to pass ``stream_bytes``)."""
    return _streamed_matmul_grid(device, dtype, peak_flops_per_s, rows, [(n_out, k) for k in inners], stream_bytes, reps,
                                 key=lambda n, k: k)


def measure_matmul_by_out(device: torch.device, dtype, peak_flops_per_s: float, *, rows: tuple[int, ...] = SKINNY_ROWS,
                          outs: tuple[int, ...] = SHAPE_WIDE_OUT, inner: int = SHAPE_OUT_INNER,
                          stream_bytes: int = 64 * 2**20, reps: int = 3) -> dict[int, dict[int, float]]:
    """{rows: {N: fraction of ``peak_flops_per_s``}} of ``rows × inner`` by ``inner × N`` matmuls, each
    weight shape streamed from memory (at least two distinct copies, more up to ``stream_bytes``): the
    output-width axis of the shape grid (``measure_matmul_by_shape`` holds N at ``SHAPE_OUT``)."""
    return _streamed_matmul_grid(device, dtype, peak_flops_per_s, rows, [(n, inner) for n in outs], stream_bytes, reps,
                                 key=lambda n, k: n)


def _streamed_matmul_grid(device, dtype, peak_flops_per_s, rows, shapes, stream_bytes, reps, key):
    """{rows: {key(N, K): fraction of the peak}} of ``rows × K`` by ``K × N`` matmuls (``F.linear`` on an
    ``(N, K)`` weight, as the decoder calls it) for each ``(N, K)`` of ``shapes``, the weights streamed
    (``streamed_matmul_s``, at least two copies)."""
    out: dict[int, dict[int, float]] = {r: {} for r in rows}
    for n, k in shapes:
        for r, t in streamed_matmul_s(device, dtype, n, k, rows, stream_bytes=stream_bytes, reps=reps,
                                      min_copies=2).items():
            out[r][key(n, k)] = min(1.0, 2 * r * n * k / t / peak_flops_per_s)
    return out


def measure_attention(device: torch.device, dtype, bytes_per_s: float, *, head_dims: tuple[int, ...] = ATTN_HEAD_DIMS,
                      groups: tuple[int, ...] = ATTN_GROUPS, kv_heads: int = ATTN_KV_HEADS, keys: int = ATTN_KEYS,
                      stream_bytes: int = 32 * 2**20, reps: int = 3) -> dict[int, dict[int, float]]:
    """{head_dim: {group: fraction of ``bytes_per_s``}}: one decode step's attention kernel as
    ``runtime.model`` calls it (queries ``(1, kv_heads, group, d)`` against ``keys`` cached keys and
    values), K and V streamed (distinct copies past ``stream_bytes``); the fraction is the K and V
    bytes read over the time, over the profile's bandwidth."""
    import torch.nn.functional as F

    elem = torch.tensor([], dtype=dtype).element_size()
    out: dict[int, dict[int, float]] = {}
    for d in head_dims:
        kv_bytes = 2 * kv_heads * keys * d * elem
        copies = max(2, min(64, -(-stream_bytes // kv_bytes)))
        ks = [torch.randn(1, kv_heads, keys, d, dtype=dtype, device=device) for _ in range(copies)]
        vs = [torch.randn(1, kv_heads, keys, d, dtype=dtype, device=device) for _ in range(copies)]
        out[d] = {}
        for g in groups:
            q = torch.randn(1, kv_heads, g, d, dtype=dtype, device=device)

            def run():
                for k, v in zip(ks, vs):
                    F.scaled_dot_product_attention(q, k, v, scale=d ** -0.5)

            t = _median_time(run, device, reps) / copies
            out[d][g] = min(1.0, kv_bytes / t / bytes_per_s)
        del ks, vs
    return out


def tiny_decode_step(device: torch.device, dtype_name: str) -> Callable[[], object]:
    """One decode step (at position 32) of the tiny Llama-style decoder (hidden 64, 2 layers, random weights
    and cache), whose device work is negligible: what the launch measurements time."""
    from planner.analysis.config import parse_config
    from planner.analysis.families import TINY_DECODER

    from .cache import KVCache
    from .model import build_decoder

    spec = parse_config(TINY_DECODER)
    dtype = torch_dtype(dtype_name)
    model = build_decoder(spec, dtype=dtype, device=device)
    cache = KVCache(spec, 1, 33, dtype, device)
    cache.fill_random_()
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    return lambda: model.decode(tokens, 32, cache)


def measure_step_overhead(device: torch.device, dtype_name: str, steps: int) -> tuple[Figure, int]:
    """(seconds per kernel, kernels) of an eager decode step of the tiny decoder (``tiny_decode_step``):
    what eager dispatch costs per aten op the step dispatches (``timing.count_kernels``, the count
    ``verify`` takes of the real step), Python, framework and launch included."""
    decode = tiny_decode_step(device, dtype_name)

    def step():
        decode()
        synchronize(device)

    with torch.inference_mode():  # wall time: an eager step this small is all dispatch and launches
        kernels, _ = count_kernels(decode)
        fig = repeat_until_stable(lambda: _median_time(step, device, steps, warmup=5, wall=True) / kernels)
    return fig, kernels


def measure_graph_node(device: torch.device, dtype_name: str, replays: int = 20) -> tuple[Figure, int]:
    """(seconds per kernel, kernels) of a CUDA-graph replay of the tiny decoder's decode step that
    ``measure_step_overhead`` times eagerly (device work negligible): what each node of a replayed step
    costs beyond its work, per dispatched aten op (the count ``verify`` takes of the real step)."""
    from .timing import capture_graph

    decode = tiny_decode_step(device, dtype_name)
    with torch.inference_mode():
        kernels, _ = count_kernels(decode)
        graph = capture_graph(decode, device)

        def run():
            for _ in range(replays):
                graph.replay()

        fig = repeat_until_stable(lambda: _median_time(run, device, 10, warmup=3) / (replays * kernels))
    return fig, kernels


def small_ops_step(spec, batch: int, device: torch.device, dtype, layers: int | None = None):
    """(step, layers): a callable running the decoder's small ops of one decode step of ``batch`` sequences
    at ``spec``'s width, built from ``runtime.model``'s own modules, for each layer (``layers`` of them,
    default all): the layer's norms on the hidden state, the q/k norm (where the model has one) and RoPE
    on one token's queries and keys, the activation (times the up projection where gated) at the FFN's
    width (``batch × top-k`` rows of an MoE's expert width), the two residual adds; then the final norm.
    No matmul and no attention: what a replayed step's small kernels cost at the model's own width."""
    from planner.analysis.spec import MLP, MixerKind, MoE, Norm

    from .model import Rotary, activation, apply_rope, make_norm

    notes: list[str] = []
    n_layers = min(layers or spec.num_layers, spec.num_layers)
    lay = spec.layers[0]
    a, ffn = lay.mixer, lay.ffn
    if a.kind != MixerKind.ATTENTION or not isinstance(ffn, (MLP, MoE)) or not lay.norms:
        raise ValueError(f"{spec.name}: its first layer is not attention and an MLP or MoE with norms "
                         f"({type(a).__name__}, {type(ffn).__name__}); the small-ops step is built for that form")
    norms = [make_norm(p.norm, spec, dtype) for p in lay.norms]
    qk = [make_norm(Norm(dim=a.head_dim, kind="rms"), spec, dtype)] if getattr(a, "q_norm_dim", 0) else []
    final = make_norm(spec.final_norm, spec, dtype) if spec.final_norm is not None else None
    for m in norms + qk + ([final] if final is not None else []):
        m.to(device)
        for name, value in (("weight", 1.0), ("bias", 0.0)):
            if getattr(m, name, None) is not None:
                torch.nn.init.constant_(getattr(m, name), value)
    rotary = Rotary(a.rotary_dim or a.head_dim, a.rope_theta, dict(spec.rope_scaling or ()), "half",
                    spec.max_position_embeddings, notes).to(device)
    rotary.reset_buffers()
    act = activation(getattr(ffn, "act", spec.hidden_act), notes)
    rows, width = ((batch * ffn.num_experts_per_tok, ffn.moe_intermediate_size) if isinstance(ffn, MoE)
                   else (batch, ffn.intermediate_size))
    x = torch.randn(batch, 1, spec.hidden_size, dtype=dtype, device=device)
    q = torch.randn(batch, 1, a.num_attention_heads, a.head_dim, dtype=dtype, device=device)
    k = torch.randn(batch, 1, a.num_key_value_heads, a.head_dim, dtype=dtype, device=device)
    g = torch.randn(rows, width, dtype=dtype, device=device)
    u = torch.randn(rows, width, dtype=dtype, device=device)
    pos = torch.tensor([32], device=device)
    gated = ffn.gated

    def step():
        h = x
        for _ in range(n_layers):
            ys = [n(h) for n in norms]  # pre/post norms of the mixer and the FFN (2 or 4), each on the hidden state
            qq, kk = (qk[0](q), qk[0](k)) if qk else (q, k)
            cos, sin = rotary(pos, dtype)
            apply_rope(qq, cos, sin, "half"), apply_rope(kk, cos, sin, "half")
            act(g) * u if gated else act(u)  # feeds down_proj, a matmul (priced apart)
            h = h + ys[0]
            h = h + ys[-1]
        return final(h) if final is not None else h

    return step, n_layers


def measure_graph_node_by_rows(device: torch.device, spec, rows: tuple[int, ...] = SKINNY_ROWS, replays: int = 10,
                               layers: int | None = None) -> tuple[dict[int, Figure], dict[int, int]]:
    """({rows: seconds per dispatched op}, {rows: dispatched ops}): ``small_ops_step`` of ``spec`` at each
    batch of ``rows``, captured as a CUDA graph and replayed, over the aten ops it dispatches (the count
    ``verify`` takes of the real step): what each op of a replayed step costs at the model's own width, its
    small kernels' own device time included (``graph_node_overhead_by_rows``)."""
    from .timing import capture_graph

    dtype = torch.bfloat16
    out, ops_by_rows = {}, {}
    for r in rows:
        step, _ = small_ops_step(spec, r, device, dtype, layers)
        with torch.inference_mode():
            ops, _ = count_kernels(step)
            graph = capture_graph(step, device)

            def run(graph=graph):
                for _ in range(replays):
                    graph.replay()

            out[r] = repeat_until_stable(lambda: _median_time(run, device, 5, warmup=2) / (replays * ops))
            ops_by_rows[r] = ops
        del graph
    return out, ops_by_rows


#: the MoE layer whose routed experts the grouped-experts figures time when the calibrated model has none
#: (a bundled model), and the tokens per step they are timed at
EXPERTS_REFERENCE_MODEL = "Qwen/Qwen3-30B-A3B"
EXPERTS_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128)


def fit_overhead_and_rate(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept seconds, bytes per second): the least-squares line ``seconds = a + bytes / rate`` through
    ``points`` of (bytes, seconds). Refuses fewer than two distinct byte counts or a line that does not
    rise with the bytes."""
    n = len(points)
    if n < 2 or len({b for b, _ in points}) < 2:
        raise ValueError("a line needs two or more distinct byte counts")
    mb = sum(b for b, _ in points) / n
    mt = sum(t for _, t in points) / n
    slope = sum((b - mb) * (t - mt) for b, t in points) / sum((b - mb) ** 2 for b, _ in points)
    if not slope > 0:
        raise ValueError(f"the time does not rise with the bytes (slope {slope:.3g} s/B)")
    return mt - slope * mb, 1.0 / slope


def measure_experts_grouped(device: torch.device, spec, node_s: Callable[[int], float], *,
                            tokens: tuple[int, ...] = EXPERTS_TOKENS, copies: int = 4, reps: int = 5
                            ) -> tuple[Figure, float, dict]:
    """(rate figure, overhead seconds, record) of the decoder's routed experts on a GPU
    (``runtime.model.Experts`` with ``torch._grouped_mm``: the sort, the gather, two grouped GEMMs, the
    scatter) of ``spec``'s first MoE layer: ``copies`` distinct layers (random weights, so each step streams
    them past the L2), at each token count of ``tokens`` with uniform random top-k routing (as random
    weights route), replayed as one CUDA graph. The line ``seconds = a + touched expert weight bytes / rate``
    is fitted through the points in each of three rounds (the rate's figure); the overhead is the median over
    the points of what is left beyond the line's bytes term and the layer's dispatched ops at ``node_s(tokens)``
    (each of them is priced as a graph node already), and not below 0."""
    from .model import Experts, default_moe_impl
    from .timing import capture_graph

    moe = spec.first_moe
    dtype = torch.bfloat16
    if moe is None:
        raise ValueError(f"{spec.name} has no routed experts")
    if default_moe_impl(device, dtype) != "grouped":
        raise RuntimeError("torch._grouped_mm does not run on this device in bf16")
    elem = torch.tensor([], dtype=dtype).element_size()
    up_rows = 2 * moe.moe_intermediate_size if moe.gated else moe.moe_intermediate_size
    expert_bytes = (up_rows + moe.moe_intermediate_size) * moe.hidden_size * elem
    layer_bytes = moe.num_experts * expert_bytes
    free = free_memory_bytes(device)
    if 2 * layer_bytes > free // 2:  # two copies at least, so that consecutive layers do not share the L2
        raise RuntimeError(f"two copies of {spec.name}'s expert layer ({2 * layer_bytes / GiB:.1f} GiB) need more than "
                           f"half the free device memory ({free / GiB:.1f} GiB)")
    copies = max(2, min(copies, free // (4 * layer_bytes)))
    layers = []
    for _ in range(copies):
        m = Experts(moe, spec.numerics, [], dtype).to(device)
        m.impl = "grouped"
        with torch.no_grad():
            m.gate_up_proj.normal_(0, 0.02)
            m.down_proj.normal_(0, 0.02)
        layers.append(m)
    g = torch.Generator(device="cpu").manual_seed(0)
    k = moe.num_experts_per_tok
    cases, rounds_by_case = [], []
    with torch.inference_mode():
        for t in tokens:  # one graph at a time: captured, timed in three rounds, released
            idx = torch.rand(t, moe.num_experts, generator=g).topk(k, dim=-1).indices.to(device)
            w = torch.full((t, k), 1.0 / k, device=device)
            x = torch.randn(t, moe.hidden_size, dtype=dtype, device=device)
            ops, _ = count_kernels(lambda: layers[0](x, idx, w))
            synchronize(device)

            def step(x=x, idx=idx, w=w):
                for m in layers:
                    m(x, idx, w)

            graph = capture_graph(step, device)  # replays read x, idx and w: timed while they are alive
            rounds_by_case.append([_median_time(graph.replay, device, reps, warmup=2) / copies for _ in range(3)])
            cases.append((t, int(torch.unique(idx).numel()), ops))
            del graph
    rounds = [[case_rounds[i] for case_rounds in rounds_by_case] for i in range(3)]
    seconds = [statistics.median(r[i] for r in rounds) for i in range(len(cases))]
    points = [(touched * expert_bytes, sec) for (_, touched, _), sec in zip(cases, seconds)]
    per_round = [fit_overhead_and_rate([(b, r[i]) for i, (b, _) in enumerate(points)])[1] for r in rounds]
    _, rate = fit_overhead_and_rate(points)
    left = [sec - b / rate - ops * node_s(t) for (t, _, ops), (b, sec) in zip(cases, points)]
    overhead = max(0.0, statistics.median(left))
    record = {"model": spec.name, "copies": copies, "expert_bytes": expert_bytes,
              "points": [{"tokens": t, "experts_touched": touched, "dispatched_ops": ops, "weight_bytes": b,
                          "layer_s": sec, "left_s": lv}
                         for (t, touched, ops), (b, sec), lv in zip(cases, points, left)]}
    return Figure(rate, tuple(per_round)), overhead, record


#: keys the decode attention call is timed at for ``attention_decode_overhead``
OVERHEAD_KEYS = (1024, 2048, 4096, 8192, 32768)


def measure_attention_overhead(device: torch.device, dtype, node_s: float, *, keys: tuple[int, ...] = OVERHEAD_KEYS,
                               programs: int = 8, stream_bytes: int = 256 * 2**20, reps: int = 5
                               ) -> tuple[float, dict]:
    """(seconds, record): what one decode attention call of the decoder costs on a GPU beyond its K and V
    bytes and its dispatched ops' graph-node cost (``node_s`` each). The call as ``runtime.model`` makes it
    at decode (``programs`` KV heads of one sequence, ``HEAD_GROUP`` query rows each, head_dim
    ``HEAD_DIM``, no mask) at each key count of ``keys``, over distinct K and V copies (past
    ``stream_bytes``, as a step's layers read distinct caches), replayed as one CUDA graph; the intercept of
    the least-squares line ``seconds = a + bytes / rate`` less the ops' node cost, not below 0."""
    import torch.nn.functional as F

    from .timing import capture_graph

    elem = torch.tensor([], dtype=dtype).element_size()
    points, record = [], {}
    ops = 0
    with torch.inference_mode():
        for n in keys:
            kv_bytes = 2 * programs * n * HEAD_DIM * elem
            copies = max(2, min(64, -(-stream_bytes // kv_bytes)))
            q = torch.randn(1, programs, HEAD_GROUP, HEAD_DIM, dtype=dtype, device=device)
            ks = [torch.randn(1, programs, n, HEAD_DIM, dtype=dtype, device=device) for _ in range(copies)]
            vs = [torch.randn(1, programs, n, HEAD_DIM, dtype=dtype, device=device) for _ in range(copies)]

            def step(q=q, ks=ks, vs=vs):
                for k, v in zip(ks, vs):
                    F.scaled_dot_product_attention(q, k, v, scale=HEAD_DIM ** -0.5)

            ops, _ = count_kernels(lambda: F.scaled_dot_product_attention(q, ks[0], vs[0], scale=HEAD_DIM ** -0.5))
            graph = capture_graph(step, device)  # timed while q, ks and vs are alive
            sec = statistics.median(_median_time(graph.replay, device, reps, warmup=2) for _ in range(3)) / copies
            points.append((kv_bytes, sec))
            record[str(n)] = {"bytes": kv_bytes, "call_s": sec, "copies": copies}
            del graph
    a, rate = fit_overhead_and_rate(points)
    record.update(programs=programs, dispatched_ops=ops, intercept_s=a, bytes_per_s=rate)
    return max(0.0, a - ops * node_s), record


def _sdpa_decode_s(device: torch.device, dtype, programs: int, keys: int, group: int, d: int, reps: int = 10) -> float:
    """Seconds of one decode attention call as ``runtime.model`` makes it: ``programs`` KV heads of one
    sequence, their ``group`` query heads as query rows, ``keys`` cached keys and values, no mask."""
    import torch.nn.functional as F

    q = torch.randn(1, programs, group, d, dtype=dtype, device=device)
    k = torch.randn(1, programs, keys, d, dtype=dtype, device=device)
    v = torch.randn(1, programs, keys, d, dtype=dtype, device=device)
    # no mask: a decode step's single query sees every cached key (runtime/cache.py returns no key positions)
    return _median_time(lambda: F.scaled_dot_product_attention(q, k, v, scale=d ** -0.5), device, reps, warmup=3)


def measure_attention_heads(device: torch.device, dtype) -> tuple[Figure, dict]:
    """(bytes per second per program, record) of the decoder's decode attention on a GPU, where one
    program per (sequence, KV head) streams its keys and values (no split over the keys): K and V bytes
    over the time over the programs, the median over ``HEAD_PROGRAMS`` KV heads at ``HEAD_KEYS`` keys.
    The record: the achieved read rate at each (programs, keys) of ``HEAD_GRID``."""
    elem = torch.tensor([], dtype=dtype).element_size()

    def rate(programs: int, keys: int) -> float:
        return 2 * programs * keys * HEAD_DIM * elem / _sdpa_decode_s(device, dtype, programs, keys, HEAD_GROUP, HEAD_DIM)

    fig = repeat_until_stable(lambda: statistics.median(rate(p, HEAD_KEYS) / p for p in HEAD_PROGRAMS))
    record = {f"{p}x{k}": rate(p, k) for p, k in HEAD_GRID}
    return fig, record


def torch_dtype(name: str):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def load_average() -> tuple[float, float, float] | None:
    try:
        return tuple(os.getloadavg())  # type: ignore[return-value]
    except (OSError, AttributeError):
        return None


def choose_threads(device: torch.device, dtype, candidates: list[int], nbytes: int, reps: int,
                   progress=_no_progress) -> tuple[int, dict[int, Figure]]:
    """The CPU thread count whose streaming read rate is stable and highest (the steadiest when none is
    stable), and each candidate's figure."""
    figs: dict[int, Figure] = {}
    before = torch.get_num_threads()
    for i, n in enumerate(candidates):
        torch.set_num_threads(n)
        figs[n] = measure_read(device, nbytes, dtype, reps, rounds=(3, 5))
        progress("threads", i + 1, len(candidates))
    torch.set_num_threads(before)
    stable = [n for n in candidates if figs[n].stable]
    if stable:
        return max(stable, key=lambda n: figs[n].value), figs
    return min(candidates, key=lambda n: figs[n].spread), figs


def calibrate(device: str | torch.device = "cpu", *, dtypes: tuple[str, ...] | None = None, quick: bool = False,
              progress=_no_progress, threads: int | None = None, shapes: list[tuple[int, int, int]] | None = None,
              shapes_from: str = "", spec=None) -> Calibration:
    """Measure ``device``. ``dtypes``: GEMM dtypes (default: bf16 and fp32 on CUDA, fp32 on CPU);
    ``quick`` uses smaller buffers (tests); ``threads`` fixes the CPU thread count (default: chosen);
    ``shapes``: (N, K, count) weight shapes for the skinny-matmul rates (None: no skinny figures);
    ``spec``: on CUDA, the model (``shapes_from``) whose width ``graph_node_overhead_by_rows`` is measured at
    (None: not measured)."""
    device = torch.device(device)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs at the fp32 rate
        return _calibrate(device, dtypes, quick, progress, threads, shapes, shapes_from, spec)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def _calibrate(device: torch.device, dtypes, quick: bool, progress, threads, shapes, shapes_from, spec=None) -> Calibration:
    t_start = time.perf_counter()
    load_before = load_average()
    if device.type == "cuda":
        dtypes = dtypes or ("bf16", "fp32")
        free = free_memory_bytes(device)
        buf = min(2 * GiB, free // 6) if not quick else 64 * 2**20
        sizes = {"bf16": 8192, "fp16": 8192, "fp32": 4096} if not quick else {"bf16": 1024, "fp16": 1024, "fp32": 1024}
        copy_reps, mm_reps, calls = 20, 20, 5000
    else:
        dtypes = dtypes or ("fp32",)
        avail = free_memory_bytes(device)
        buf = max(64 * 2**20, min(GiB, avail // 8)) if not quick else 64 * 2**20
        sizes = {"fp32": 2048, "bf16": 1024, "fp16": 1024} if not quick else {"fp32": 256, "bf16": 256, "fp16": 256}
        copy_reps, mm_reps, calls = (5, 3, 20000) if not quick else (3, 2, 2000)
    details: dict = {}
    thread_figs: dict[int, Figure] = {}
    if device.type == "cpu":
        default_threads = torch.get_num_threads()
        if threads:
            chosen = threads
            details["threads_chosen_by"] = "--threads"
        else:
            candidates = sorted({1, default_threads})
            chosen, thread_figs = choose_threads(device, torch_dtype(dtypes[0]), candidates, min(buf, 256 * 2**20),
                                                 copy_reps, progress)
            details["threads_chosen_by"] = (
                "the stable and fastest streaming read among " if thread_figs[chosen].stable else
                "no candidate was stable; the steadiest streaming read among ") + ", ".join(map(str, candidates))
        torch.set_num_threads(chosen)
    steps = 4 + len(dtypes)
    progress("calibrate", 0, steps)
    copy = measure_copy(device, buf, copy_reps)
    progress("calibrate", 1, steps)
    read = measure_read(device, buf, torch_dtype(dtypes[0]), copy_reps) if device.type != "cuda" else None
    progress("calibrate", 2, steps)
    flops: dict[str, Figure] = {}
    for i, d in enumerate(dtypes):
        flops[d] = measure_matmul(device, sizes[d], torch_dtype(d), mm_reps)
        progress("calibrate", 3 + i, steps)
    skinny: dict[int, float] = {}
    stream_mib = 256 if device.type == "cuda" else 64  # weights streamed past a GPU's L2 (50-60 MB on Hopper)
    if shapes:
        sd = dtypes[0] if device.type == "cpu" else ("bf16" if "bf16" in dtypes else dtypes[0])
        skinny, skinny_detail = measure_skinny(device, torch_dtype(sd), shapes, flops[sd].value,
                                               stream_bytes=(stream_mib if not quick else 4) * 2**20)
        details.update(skinny_dtype=sd, skinny_shapes_from=shapes_from,
                       skinny_shapes=[list(s) for s in shapes], skinny_flops_per_s=skinny_detail)
    by_shape: dict[int, dict[int, float]] = {}
    by_out: dict[int, dict[int, float]] = {}
    attention: dict[int, dict[int, float]] = {}
    sd = dtypes[0] if device.type == "cpu" else ("bf16" if "bf16" in dtypes else dtypes[0])
    if shapes:  # the grids beside the model's own shapes
        by_shape = measure_matmul_by_shape(device, torch_dtype(sd), flops[sd].value,
                                           stream_bytes=(stream_mib if not quick else 4) * 2**20)
        by_out = measure_matmul_by_out(device, torch_dtype(sd), flops[sd].value,
                                       outs=SHAPE_WIDE_OUT if not quick else SHAPE_WIDE_OUT[:2],
                                       stream_bytes=(stream_mib if not quick else 4) * 2**20)
        if device.type == "cpu":  # on a GPU the per-program rate (measure_attention_heads) prices attention
            attention = measure_attention(device, torch_dtype(sd), read.value if read is not None else copy.value,
                                          keys=ATTN_KEYS if not quick else 64,
                                          stream_bytes=(32 if not quick else 2) * 2**20)
        details.update(shape_dtype=sd, matmul_efficiency_by_shape=by_shape, matmul_efficiency_by_out=by_out,
                       attention_decode_efficiency=attention)
    progress("calibrate", 3 + len(dtypes), steps)
    op_launch = measure_launch(device, calls)
    launch, kernels = measure_step_overhead(device, dtypes[0] if device.type == "cpu" else "bf16", 50 if not quick else 10)
    graph_node = heads = experts_fig = experts_overhead = attn_overhead = None
    node_rows: dict[int, Figure] = {}
    if device.type == "cuda":  # what the decoder's CUDA-graph replays pay per kernel, and its decode attention
        def first_line(exc: Exception) -> str:
            return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__

        try:
            graph_node, _ = measure_graph_node(device, "bf16", replays=20 if not quick else 2)
        except RuntimeError as exc:  # a device or build that cannot capture graphs: the profile goes without
            details["graph_node_error"] = first_line(exc)
        if spec is not None and graph_node is not None:
            try:
                by_rows, by_rows_ops = measure_graph_node_by_rows(device, spec, replays=10 if not quick else 2,
                                                                  layers=None if not quick else 2)
                node_rows = by_rows
                details.update(graph_node_by_rows_model=shapes_from or spec.name,
                               graph_node_by_rows_ops={str(r): n for r, n in by_rows_ops.items()})
            except Exception as exc:  # noqa: BLE001 (an optional figure: a model whose layer has another form, a build that fails it) -> the flat figure alone
                details["graph_node_by_rows_error"] = first_line(exc)
        if graph_node is not None:
            try:
                from planner.hardware.expected import graph_node_at

                moe_spec = spec if spec is not None and spec.first_moe is not None else None
                if moe_spec is None:
                    from planner.cli.common import load_model

                    moe_spec = load_model(EXPERTS_REFERENCE_MODEL).spec
                table = {r: fig.value for r, fig in node_rows.items()}
                flat = graph_node.value
                experts_fig, experts_overhead, experts_record = measure_experts_grouped(
                    device, moe_spec, lambda t: graph_node_at(table, t) if table else flat,
                    tokens=EXPERTS_TOKENS if not quick else EXPERTS_TOKENS[:3], copies=4 if not quick else 2)
                details.update(experts_grouped_record=experts_record)
            except Exception as exc:  # noqa: BLE001 (an optional figure) -> verify keeps the rows table for experts
                details["experts_grouped_error"] = first_line(exc)
        try:
            heads, heads_record = measure_attention_heads(device, torch.bfloat16)
            details.update(attention_head_record=heads_record)
        except RuntimeError as exc:
            details["attention_head_error"] = first_line(exc)
        if graph_node is not None:
            try:
                attn_overhead, attn_record = measure_attention_overhead(
                    device, torch.bfloat16, graph_node.value, keys=OVERHEAD_KEYS if not quick else OVERHEAD_KEYS[:2],
                    stream_bytes=(256 if not quick else 8) * 2**20)
                details.update(attention_overhead_record=attn_record)
            except Exception as exc:  # noqa: BLE001 (an optional figure) -> verify goes without it
                details["attention_overhead_error"] = first_line(exc)
    progress("calibrate", steps, steps)
    details.update({"buffer_bytes": int(buf), "gemm_sizes": {d: sizes[d] for d in dtypes}, "launch_calls": calls,
                    "op_launch_s": op_launch.value, "tiny_step_kernels": kernels, "torch": torch.__version__,
                    "load_before": load_before, "load_after": load_average(), "cpus": os.cpu_count()})
    figures = {"copy_bytes_per_s": copy, "launch_s": launch, "op_launch_s": op_launch,
               **{f"matmul_flops_per_s.{d}": f for d, f in flops.items()}}
    if read is not None:
        figures["read_bytes_per_s"] = read
    if graph_node is not None:
        figures["graph_node_s"] = graph_node
    if heads is not None:
        figures["attention_head_bytes_per_s"] = heads
    for r, fig in node_rows.items():
        figures[f"graph_node_by_rows_s.{r}"] = fig
    if experts_fig is not None:
        figures["experts_grouped_bytes_per_s"] = experts_fig
    details["figures"] = {k: f.to_dict() for k, f in figures.items()}
    if thread_figs:
        details["thread_candidates"] = {str(n): f.to_dict() for n, f in thread_figs.items()}
    threads_used = torch.get_num_threads() if device.type == "cpu" else None
    return Calibration(device.type, device_name(device), copy.value, None if read is None else read.value,
                       {d: f.value for d, f in flops.items()}, launch.value, total_memory_bytes(device),
                       threads_used, time.perf_counter() - t_start, details, skinny, figures, by_shape, attention, by_out,
                       None if graph_node is None else graph_node.value, None if heads is None else heads.value,
                       {r: fig.value for r, fig in node_rows.items()},
                       None if experts_fig is None else experts_fig.value, experts_overhead, attn_overhead)


def calibration_problems(cal: Calibration) -> list[str]:
    """What disagrees within one calibration (each a sentence); empty when the figures hang together."""
    out = []
    op = cal.details.get("op_launch_s")
    lo, hi = LAUNCH_OVER_DISPATCH
    if op and not (lo * op <= cal.launch_s <= hi * op):
        out.append(f"the per-kernel overhead of an eager step ({cal.launch_s * 1e6:.3g} µs) disagrees with the bare "
                   f"dispatch measured in the same run ({op * 1e6:.3g} µs): {cal.launch_s / op:.3g}x, outside "
                   f"{lo:g}-{hi:g}x")
    if cal.read_bytes_per_s and cal.copy_bytes_per_s:
        ratio = cal.read_bytes_per_s / (cal.copy_bytes_per_s / 2)
        lo, hi = READ_OVER_COPY_READ
        if not (lo <= ratio <= hi):
            out.append(f"the streaming read rate ({cal.read_bytes_per_s / 1e9:.3g} GB/s) is far from the copy test's "
                       f"read rate ({cal.copy_bytes_per_s / 2e9:.3g} GB/s, half its read + write): {ratio:.3g}x, "
                       f"outside {lo:g}-{hi:g}x")
    for name, fig in cal.figures.items():
        if not fig.stable:
            out.append(f"{name} was not stable: the last rounds spread {100 * fig.spread:.0f}% "
                       f"(more than {100 * STABLE_SPREAD:.0f}%) after {len(fig.rounds)} rounds")
    return out


def machine_busy(cal: Calibration) -> str | None:
    """A warning when other processes loaded the CPUs during the calibration (its own threads excluded)."""
    cpus = cal.details.get("cpus") or os.cpu_count() or 1
    loads = [lv[0] for lv in (cal.details.get("load_before"), cal.details.get("load_after")) if lv]
    if not loads:
        return None
    own = cal.threads or 1
    worst = max(loads)
    if worst - own > 0.5 * cpus:
        return (f"the machine was busy (1-minute load average up to {worst:.1f} on {cpus} CPUs, this run using "
                f"{own} thread(s)): other processes compete for cores and memory bandwidth")
    return None


# ---- the profile ---------------------------------------------------------------------------------


def _round(x: float, digits: int = 4) -> float:
    if x == 0:
        return 0.0
    from math import floor, log10

    return round(x, -int(floor(log10(abs(x)))) + digits - 1)


def calibration_profile(cal: Calibration, name: str = "calibrated") -> dict:
    """YAML-file data (units as strings) for ``hardware.profiles.save_user_profile``."""
    from planner.hardware import units

    peaks = {d: units.format_flops(_round(v)) for d, v in cal.matmul_flops_per_s.items()}
    if "bf16" in peaks and "fp16" not in peaks:
        peaks["fp16"] = peaks["bf16"]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    MiB = 2**20
    reserve = 2 * GiB if cal.device_type == "cuda" else min(8 * GiB, cal.memory_bytes // 4 // MiB * MiB)
    bw_src = (f"memory_bandwidth: matrix-vector products streaming {cal.details.get('buffer_bytes', 0) / GiB:.2g} GiB of "
              f"(4096 x 1024) matrices (the copy rate understates CPU reads: a copy pays a write-allocate read)"
              if cal.read_bytes_per_s else
              f"memory_bandwidth: device-to-device copy of {cal.details.get('buffer_bytes', 0) / GiB:.2g} GiB, read + write counted")
    source = [
        f"measured by 'planner calibrate' on {when} with torch {cal.details.get('torch', torch.__version__)}",
        bw_src,
        "peak_flops: median of square GEMMs of size " + ", ".join(f"{d} {n}" for d, n in cal.details.get("gemm_sizes", {}).items()),
        f"kernel_launch_overhead: an eager decode step of a tiny decoder (negligible device work) divided by its "
        f"{cal.details.get('tiny_step_kernels', 0)} dispatched aten ops (TorchDispatchMode; verify counts the real step's the "
        f"same way): dispatch, Python and launch per kernel",
        f"each figure: the median of the last 3 rounds, repeated until they agree within {100 * STABLE_SPREAD:.0f}% "
        f"(at most {MAX_ROUNDS} rounds)",
    ]
    if cal.matmul_efficiency_by_rows:
        source.append(
            f"matmul_efficiency_by_rows: {', '.join(str(r) for r in cal.matmul_efficiency_by_rows)} rows x the "
            f"{cal.details.get('skinny_dtype', '')} weight shapes of {cal.details.get('skinny_shapes_from') or 'a model'} "
            "(each streamed from memory, weighted by its count), FLOPs / time / the square-GEMM peak")
    if cal.matmul_efficiency_by_shape:
        source.append(
            f"matmul_efficiency_by_shape: {', '.join(str(r) for r in cal.matmul_efficiency_by_shape)} rows x "
            f"({SHAPE_OUT} x K) {cal.details.get('shape_dtype', '')} weights for K = "
            f"{', '.join(str(k) for k in next(iter(cal.matmul_efficiency_by_shape.values())))} (each streamed from "
            "memory), FLOPs / time / the square-GEMM peak")
    if cal.matmul_efficiency_by_out:
        source.append(
            f"matmul_efficiency_by_out: {', '.join(str(r) for r in cal.matmul_efficiency_by_out)} rows x "
            f"(N x {SHAPE_OUT_INNER}) {cal.details.get('shape_dtype', '')} weights for N = "
            f"{', '.join(str(n) for n in next(iter(cal.matmul_efficiency_by_out.values())))} (each streamed from "
            "memory), FLOPs / time / the square-GEMM peak; the step model scales the by-shape figure by its "
            f"ratio at a matmul's output width to the one at N = {SHAPE_OUT}")
    if cal.attention_decode_efficiency:
        source.append(
            f"attention_decode_efficiency: scaled_dot_product_attention of one decode step as the decoder calls it "
            f"({ATTN_KV_HEADS} KV heads, {ATTN_KEYS} keys, the query heads of a KV head as query rows) for head_dim "
            f"{', '.join(str(d) for d in cal.attention_decode_efficiency)} and query heads per KV head "
            f"{', '.join(str(g) for g in next(iter(cal.attention_decode_efficiency.values())))}, K and V streamed: "
            "their bytes / time / memory_bandwidth")
    if cal.graph_node_s is not None:
        source.append(
            f"graph_node_overhead: a CUDA-graph replay of the tiny decoder's decode step divided by its "
            f"{cal.details.get('tiny_step_kernels', 0)} dispatched aten ops (what each replayed kernel costs beyond "
            "its work; verify prices the real step's count at it)")
    if cal.graph_node_by_rows_s:
        source.append(
            f"graph_node_overhead_by_rows: at the width of {cal.details.get('graph_node_by_rows_model', 'the model')}, the "
            "decoder's small ops of a decode step (every layer's norms, q/k norm, RoPE, activation, residual adds; no "
            f"matmul, no attention) at batch {', '.join(map(str, cal.graph_node_by_rows_s))}, replayed as a CUDA graph, "
            "over their dispatched aten ops (verify takes the figure at its batch in place of graph_node_overhead)")
    if cal.experts_grouped_bytes_per_s is not None:
        rec = cal.details.get("experts_grouped_record") or {}
        pts = rec.get("points") or []
        source.append(
            f"experts_grouped_bandwidth, experts_grouped_overhead: the decoder's routed experts (two torch._grouped_mm "
            f"with the sort, gather and scatter) of {rec.get('model', 'a reference MoE')}'s first MoE layer, "
            f"{rec.get('copies', '?')} distinct copies streamed, at {', '.join(str(p['tokens']) for p in pts)} tokens "
            "(uniform random top-k), replayed as a CUDA graph: the least-squares line time = overhead + touched expert "
            "weight bytes / bandwidth; the overhead is the median left per layer beyond that and its dispatched ops' "
            "graph-node cost")
    if cal.attention_decode_overhead_s is not None:
        rec = cal.details.get("attention_overhead_record") or {}
        source.append(
            "attention_decode_overhead: scaled_dot_product_attention of one decode step as the decoder calls it "
            f"({rec.get('programs', '?')} KV heads, {HEAD_GROUP} query rows each, head_dim {HEAD_DIM}) at "
            f"{', '.join(k for k in rec if k.isdigit())} keys, distinct K and V copies streamed, replayed as a CUDA "
            "graph: the intercept of the least-squares line time = a + K and V bytes / rate, less the call's "
            f"{rec.get('dispatched_ops', '?')} dispatched ops at graph_node_overhead")
    if cal.attention_head_bytes_per_s is not None:
        source.append(
            f"attention_decode_head_bandwidth: scaled_dot_product_attention of one decode step as the decoder calls "
            f"it at decode ({HEAD_GROUP} query rows per KV head, head_dim {HEAD_DIM}, {HEAD_KEYS} keys), K and V "
            f"bytes / time / KV heads, the median over {', '.join(map(str, HEAD_PROGRAMS))} KV heads")
    notes = [f"{DEVICE_NOTE}{cal.device_label}",
             f"copy bandwidth (read + write counted): {units.format_bandwidth(_round(cal.copy_bytes_per_s))}"]
    if cal.read_bytes_per_s:
        notes.append(f"read bandwidth (GEMV stream): {units.format_bandwidth(_round(cal.read_bytes_per_s))}")
    if cal.details.get("op_launch_s"):
        notes.append(f"a bare tiny op ({cal.details.get('launch_calls', 0)} calls of add_) costs "
                     f"{units.format_time(_round(cal.details['op_launch_s'], 3))} each")
    if cal.threads:
        notes.append(f"threads: {cal.threads} (torch.get_num_threads(); verify uses the same count unless --threads)")
        if cal.details.get("threads_chosen_by"):
            notes.append(f"threads chosen by: {cal.details['threads_chosen_by']}")
    for key in ("load_before", "load_after"):
        lv = cal.details.get(key)
        if lv:
            notes.append(f"load average {key.split('_')[1]} the run: {lv[0]:.2f} {lv[1]:.2f} {lv[2]:.2f} "
                         f"on {cal.details.get('cpus') or '?'} CPUs")
    unstable = [k for k, f in cal.figures.items() if not f.stable]
    if cal.figures:
        notes.append("stability: " + ("every figure stable" if not unstable else "NOT stable: " + ", ".join(unstable))
                     + " (" + ", ".join(f"{k} ±{100 * f.spread / 2:.0f}%" for k, f in cal.figures.items()) + ")")
    notes.append("efficiency factors are 1: the measured rates are the achieved rates (the step model must not apply "
                 "its fitted datasheet-to-achieved defaults of profiles/engines/_device.yaml on top of them)")
    data = {
        "name": name,
        "display_name": f"Calibrated {cal.device_name}",
        "vendor": "NVIDIA" if cal.device_type == "cuda" else "cpu",
        "aliases": [],
        "memory": units.format_bytes(cal.memory_bytes // MiB * MiB),
        "memory_bandwidth": units.format_bandwidth(_round(cal.memory_bandwidth_bytes_per_s)),
        "peak_flops": peaks,
        "interconnect": None,
        "kernel_launch_overhead": units.format_time(_round(cal.launch_s, 3)),
        "runtime_reserve": units.format_bytes(reserve),
        "price_per_hour": None,
        "efficiency": {"memory_bandwidth": 1.0, "compute": 1.0},
        "source": source,
        "notes": notes,
    }
    if cal.matmul_efficiency_by_rows:
        data["matmul_efficiency_by_rows"] = {int(r): _round(v, 3) for r, v in sorted(cal.matmul_efficiency_by_rows.items())}
        sq = cal.details.get("gemm_sizes", {}).get(cal.details.get("skinny_dtype"))
        if sq:
            data["matmul_efficiency_square_rows"] = int(sq)
    if cal.matmul_efficiency_by_shape:
        data["matmul_efficiency_by_shape"] = {int(r): {int(k): _round(v, 3) for k, v in sorted(row.items())}
                                              for r, row in sorted(cal.matmul_efficiency_by_shape.items())}
    if cal.matmul_efficiency_by_out:
        data["matmul_efficiency_by_out"] = {int(r): {int(n): _round(v, 3) for n, v in sorted(row.items())}
                                            for r, row in sorted(cal.matmul_efficiency_by_out.items())}
    if cal.attention_decode_efficiency:
        data["attention_decode_efficiency"] = {int(d): {int(g): _round(v, 3) for g, v in sorted(row.items())}
                                               for d, row in sorted(cal.attention_decode_efficiency.items())}
    if cal.graph_node_s is not None:
        data["graph_node_overhead"] = units.format_time(_round(cal.graph_node_s, 3))
    if cal.attention_decode_overhead_s is not None:
        data["attention_decode_overhead"] = units.format_time(_round(cal.attention_decode_overhead_s, 3))
    if cal.experts_grouped_bytes_per_s is not None:
        data["experts_grouped_bandwidth"] = units.format_bandwidth(_round(cal.experts_grouped_bytes_per_s))
        data["experts_grouped_overhead"] = units.format_time(_round(cal.experts_grouped_overhead_s or 0.0, 3))
    if cal.graph_node_by_rows_s:
        data["graph_node_overhead_by_rows"] = {r: units.format_time(_round(v, 3)) for r, v in cal.graph_node_by_rows_s.items()}
    if cal.attention_head_bytes_per_s is not None:
        data["attention_decode_head_bandwidth"] = units.format_bandwidth(_round(cal.attention_head_bytes_per_s, 3))
    return data


def profile_device(profile) -> str | None:
    """The ``device: ...`` a calibrated profile was measured on (None for other profiles)."""
    for n in getattr(profile, "notes", ()):
        if n.startswith(DEVICE_NOTE):
            return n[len(DEVICE_NOTE):]
    return None
