"""``planner calibrate``: measure the local device, and write it as a hardware profile.

What is measured (all with torch, on the device itself):

- **copy bandwidth**: a large device-to-device copy, counting what it reads plus what it writes
  (``2 × buffer bytes / time``), the median of several copies;
- **read bandwidth** (CPU): matrix-vector products streaming many distinct weight-sized matrices (1 GiB
  in all, beyond the caches), in the dtype the decoder uses, as a decode step does. A CPU copy also pays a write-allocate read of its destination, so it
  understates the streaming read rate a decode step (GEMVs over the weights) achieves; on a CPU the
  profile's ``memory_bandwidth`` is this read rate and the copy rate is kept in its notes. On a GPU
  the copy bandwidth is the profile's (stores do not pay that extra read there);
- **matmul FLOP/s**: the median of large square GEMMs in each dtype asked for (bf16 and fp32 on CUDA,
  with TF32 off for fp32; the decoder's dtype on CPU);
- **per-launch overhead**: what an eager decode step pays per kernel: the wall time of an eager decode
  step of a tiny decoder (device work negligible) divided by the kernels the trace counts for it, so
  Python and framework dispatch are included; a bare tiny op's dispatch (``add_``) is kept in the notes.

The profile (``calibration_profile``) carries no efficiency factors: the measured rates are the rates.
It names the device in its notes (``device: cuda: NVIDIA H200``), so ``verify`` uses it by default
only on the device it was measured on.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

import torch

from .timing import _no_progress, synchronize

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
            "details": dict(self.details),
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
    return avail if avail is not None else total_memory_bytes(device) // 2


# ---- measurements --------------------------------------------------------------------------------


def _median_time(fn: Callable[[], object], device: torch.device, reps: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    synchronize(device)
    samples = []
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def measure_copy(device: torch.device, nbytes: int, reps: int) -> float:
    """Bytes/s of ``dst.copy_(src)``, counting the read and the write."""
    n = nbytes // 4
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    t = _median_time(lambda: dst.copy_(src), device, reps)
    del src, dst
    return 2 * n * 4 / t


def measure_read(device: torch.device, nbytes: int, dtype, reps: int) -> float:
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

    t = _median_time(run, device, reps)
    del mats
    return count * size / t


def measure_matmul(device: torch.device, n: int, dtype, reps: int) -> float:
    """FLOP/s of an ``n × n × n`` GEMM (``2·n³`` FLOPs)."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    t = _median_time(lambda: torch.mm(a, b), device, reps)
    return 2 * n ** 3 / t


def measure_launch(device: torch.device, calls: int) -> float:
    """Seconds per call of a tiny eager op (launch / dispatch overhead)."""
    x = torch.zeros(1, device=device)
    for _ in range(100):
        x.add_(1.0)
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        x.add_(1.0)
    synchronize(device)
    return (time.perf_counter() - t0) / calls


def measure_step_overhead(device: torch.device, dtype_name: str, steps: int) -> tuple[float, int]:
    """(seconds per kernel, kernels) of an eager decode step of a tiny Llama-style decoder (hidden 64,
    2 layers), whose device work is negligible: what eager dispatch costs per kernel of the trace,
    Python, framework and launch included."""
    from planner.analysis.config import parse_config
    from planner.analysis.families import TINY_DECODER
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    from .cache import KVCache
    from .model import build_decoder

    spec = parse_config(TINY_DECODER)
    dtype = torch_dtype(dtype_name)
    model = build_decoder(spec, dtype=dtype, device=device)
    cache = KVCache(spec, 1, 33, dtype, device)
    cache.fill_random_()
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    fmt, _ = weight_format(spec, dtype_name)
    kernels = sum(o.kernels for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=32))

    def step():
        model.decode(tokens, 32, cache)
        synchronize(device)

    with torch.inference_mode():
        t = _wall_median(step, steps)  # wall time: an eager step this small is all dispatch and launches
    return t / kernels, kernels


def _wall_median(fn: Callable[[], object], reps: int) -> float:
    for _ in range(5):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def torch_dtype(name: str):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def calibrate(device: str | torch.device = "cpu", *, dtypes: tuple[str, ...] | None = None, quick: bool = False,
              progress=_no_progress) -> Calibration:
    """Measure ``device``. ``dtypes``: GEMM dtypes (default: bf16 and fp32 on CUDA, fp32 on CPU);
    ``quick`` uses smaller buffers (tests). Takes well under a minute on a 2-core CPU."""
    device = torch.device(device)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs at the fp32 rate
        return _calibrate(device, dtypes, quick, progress)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def _calibrate(device: torch.device, dtypes, quick: bool, progress) -> Calibration:
    t_start = time.perf_counter()
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
    steps = 3 + len(dtypes)
    progress("calibrate", 0, steps)
    copy_bw = measure_copy(device, buf, copy_reps)
    progress("calibrate", 1, steps)
    read_bw = None
    if device.type != "cuda":
        read_bw = measure_read(device, buf, torch_dtype(dtypes[0]), copy_reps)
    progress("calibrate", 2, steps)
    flops = {}
    for i, d in enumerate(dtypes):
        flops[d] = measure_matmul(device, sizes[d], torch_dtype(d), mm_reps)
        progress("calibrate", 3 + i, steps)
    op_launch = measure_launch(device, calls)
    launch, kernels = measure_step_overhead(device, dtypes[0] if device.type == "cpu" else "bf16", 50 if not quick else 10)
    progress("calibrate", steps, steps)
    details = {"buffer_bytes": int(buf), "gemm_sizes": {d: sizes[d] for d in dtypes}, "launch_calls": calls,
               "op_launch_s": op_launch, "tiny_step_kernels": kernels, "torch": torch.__version__}
    threads = torch.get_num_threads() if device.type == "cpu" else None
    return Calibration(device.type, device_name(device), copy_bw, read_bw, flops, launch, total_memory_bytes(device),
                       threads, time.perf_counter() - t_start, details)


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
        f"{cal.details.get('tiny_step_kernels', 0)} kernels (as the trace counts them): dispatch, Python and launch per kernel",
    ]
    notes = [f"{DEVICE_NOTE}{cal.device_label}",
             f"copy bandwidth (read + write counted): {units.format_bandwidth(_round(cal.copy_bytes_per_s))}"]
    if cal.read_bytes_per_s:
        notes.append(f"read bandwidth (GEMV stream): {units.format_bandwidth(_round(cal.read_bytes_per_s))}")
    if cal.details.get("op_launch_s"):
        notes.append(f"a bare tiny op ({cal.details.get('launch_calls', 0)} calls of add_) costs "
                     f"{units.format_time(_round(cal.details['op_launch_s'], 3))} each")
    if cal.threads:
        notes.append(f"threads: {cal.threads} (torch.get_num_threads(); verify with the same count)")
    notes.append("efficiency factors are null: the measured rates are the rates")
    return {
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
        "efficiency": {"memory_bandwidth": None, "compute": None},
        "source": source,
        "notes": notes,
    }


def profile_device(profile) -> str | None:
    """The ``device: ...`` a calibrated profile was measured on (None for other profiles)."""
    for n in getattr(profile, "notes", ()):
        if n.startswith(DEVICE_NOTE):
            return n[len(DEVICE_NOTE):]
    return None
