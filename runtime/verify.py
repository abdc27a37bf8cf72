"""``planner verify``: every prediction of the analysis, checked against a real decode step.

1. Exact checks: the decoder's parameter count (from the model itself) equals ``params.total``; the
   FLOPs ``FlopCounterMode`` counts over one decode step equal the trace's; the allocated KV cache
   equals ``bytes_per_sequence(capacity) × batch``.
2. Timing: the decode step at position ``context`` (the cache holds ``context`` tokens, the step
   writes one more; capacity ``context + 1``) is replayed ``steps`` times after ``warmup`` (a CUDA
   graph on CUDA unless ``graphs=False``); the median is compared with the expected step of
   ``hardware.serve.StepModel`` -- the step model of serve, plan, compare and trace -- on the torch
   runtime's engine profile (``profiles/engines/torch-cpu-eager.yaml``, ``torch-cuda-eager``,
   ``torch-cuda-graphs``): the hardware profile's bandwidth, calibrated GEMM and attention
   efficiencies, and the aten ops the eager step dispatches (counted) at its per-kernel launch cost.
   The ideal roofline is shown beside it. Replaying one position makes every sample the same work
   as the prediction.
3. Where the time went (``explain``): achieved vs profile bandwidth and FLOP/s, launch overhead
   (eager vs graphs), and the op kinds whose measured share differs most from the trace.

The context's KV is random (decode time does not depend on its values), so a 32k context is not
prefilled first. This module imports torch only inside ``run_verify``.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from planner.analysis.errors import HardwareError, OptionError, RuntimeUnavailableError
from planner.analysis.spec import ModelSpec, MoE

RUNTIME_DTYPES = ("fp32", "bf16", "fp16")
DEFAULT_HARDWARE = "h100-sxm"  # as cli.common: the fallback for a GPU no bundled profile matches
GiB = 2**30


@dataclass(frozen=True)
class VerifyOptions:
    device: str | None = None  # cuda | cpu; None: cuda when available
    dtype: str | None = None  # None: fp32 on CPU, the config's float dtype on CUDA
    batch: int = 1
    context: int = 2000
    steps: int = 32
    warmup: int = 5
    graphs: bool = True
    hardware: str | None = None  # a profile name, a YAML path, or "calibrated"; None: see choose_profile
    weights: str | None = None  # a local safetensors folder; None: seeded random weights
    seed: int = 0
    profile: bool = True  # per-op-kind times from the torch profiler
    profile_steps: int = 3
    threads: int | None = None  # CPU threads (torch.set_num_threads)
    moe_impl: str | None = None  # grouped | loop; None: grouped on CUDA, loop elsewhere
    tp: int = 1  # tensor-parallel ranks (runtime.verify_tp)

    def check(self) -> None:
        if self.batch < 1:
            raise OptionError(f"--batch must be >= 1, got {self.batch}")
        if self.context < 0:
            raise OptionError(f"--context must be >= 0, got {self.context}")
        if self.steps < 1:
            raise OptionError(f"--steps must be >= 1, got {self.steps}")
        if self.warmup < 0:
            raise OptionError(f"--warmup must be >= 0, got {self.warmup}")
        if self.device not in (None, "cpu", "cuda"):
            raise OptionError(f"--device must be cuda or cpu, got {self.device!r}")
        if self.dtype is not None and self.dtype not in RUNTIME_DTYPES:
            raise OptionError(f"--dtype {self.dtype} is not a dtype the torch runtime computes in",
                              f"choose one of {', '.join(RUNTIME_DTYPES)}")
        if self.threads is not None and self.threads < 1:
            raise OptionError(f"--threads must be >= 1, got {self.threads}")
        if self.tp < 1:
            raise OptionError(f"--tp must be >= 1, got {self.tp}")
        if self.moe_impl not in (None, "grouped", "loop"):
            raise OptionError(f"moe_impl must be grouped or loop, got {self.moe_impl!r}")


@dataclass(frozen=True)
class Check:
    name: str
    predicted: int
    measured: int
    unit: str
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.predicted == self.measured


@dataclass(frozen=True)
class KindTime:
    kind: str
    predicted_s: float  # Σ over the trace's ops of this kind (eager: max(op time, launches))
    measured_s: float | None  # from the profiler (profiled steps run slower: compare shares)
    predicted_share: float
    measured_share: float | None


@dataclass(frozen=True)
class VerifyResult:
    model_id: str
    spec: ModelSpec
    options: VerifyOptions
    device_type: str
    device_name: str
    dtype: str
    capacity: int
    checks: tuple[Check, ...]
    hardware: object  # HardwareProfile
    hardware_reason: str
    prediction: "Prediction"  # the step model's price of the step
    totals: object  # analysis.trace.Totals of the decode step
    times: object  # runtime.timing.StepTimes (the measured step)
    eager_times: object | None  # CUDA with graphs: a few eager steps, for the launch overhead
    kinds: tuple[KindTime, ...]
    profiled_step_s: float | None
    explanation: tuple[str, ...]
    notes: tuple[str, ...]
    build_s: float
    weights: str
    moe_impl: str | None
    threads: int | None
    kv_dtype: str
    compute_dtype: str
    rates: tuple[float, float] = field(default=(0.0, 0.0))  # (FLOP/s, bytes/s) the prediction used

    @property
    def graphs(self) -> bool:
        return bool(self.times.graphs)

    @property
    def step(self):
        """The step's ``StepCost``: expected, ideal and the seconds each factor adds."""
        return self.prediction.cost

    @property
    def predicted_s(self) -> float:
        return self.prediction.cost.expected_s

    @property
    def ideal_s(self) -> float:
        return self.prediction.cost.ideal_s

    @property
    def measured_s(self) -> float:
        return self.times.median_s

    @property
    def error(self) -> float:
        """predicted / measured - 1: positive when the prediction is slower than the measurement."""
        return self.predicted_s / self.measured_s - 1.0

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.totals.bytes / self.measured_s

    @property
    def achieved_flops_per_s(self) -> float:
        return self.totals.flops / self.measured_s

    @property
    def checks_ok(self) -> bool:
        return all(c.ok for c in self.checks)


# ---- hardware profile ----------------------------------------------------------------------------


def _device_label(device_type: str, name: str) -> str:
    return f"{device_type}: {name}"


def closest_bundled(device_name: str, memory_bytes: int | None = None):
    """The bundled profile of a CUDA device name ("NVIDIA H200" -> h200-sxm), or None."""
    from planner.hardware.profiles import list_profiles

    key = device_name.lower().replace("-", " ")
    hits = []
    for p in list_profiles():
        if p.origin != "bundled" or p.vendor.lower() not in ("nvidia", "amd"):
            continue
        parts = p.name.split("-")
        model = " ".join(parts[:2]) if parts[0] in ("rtx", "tpu") else parts[0]
        if not re.search(rf"(?<![a-z0-9]){re.escape(model)}(?![a-z0-9])", key):
            continue
        variant = [v for v in parts[1:] if v in ("sxm", "pcie", "nvl")]
        score = 0
        for v in ("pcie", "nvl"):
            if (v in key) == (v in variant):
                score += 2
        if memory_bytes:
            score -= abs(p.memory_bytes - memory_bytes) / max(p.memory_bytes, 1)
        hits.append((score, p.name, p))
    if not hits:
        return None
    return max(hits, key=lambda h: (h[0], h[1]))[2]


def choose_profile(requested: str | None, device_type: str, device_name: str, memory_bytes: int | None = None):
    """(profile, why it was chosen). ``requested``: a name/path, ``calibrated``, or None for the default:
    the profile the last ``planner calibrate`` saved (``calibrated`` when none is recorded) when it was
    measured on this device, else ``cpu`` on CPU and the bundled profile matching the GPU's name on CUDA.
    ``--hardware calibrated`` also means the last calibration's profile."""
    from planner.hardware.profiles import last_calibration, load_profile, user_profile_dir

    from .calibrate import profile_device

    here = _device_label(device_type, device_name)
    if requested and requested.lower() != "calibrated":
        p = load_profile(requested)
        return p, f"--hardware {requested}"
    last = last_calibration()
    cal = None
    for name in dict.fromkeys(n for n in (last, "calibrated") if n):
        try:
            p = load_profile(name)
        except HardwareError:
            continue
        if p.origin == "user":
            cal = p
            break
    label = (f"the last calibration's profile '{cal.name}'" if cal is not None and cal.name == last
             else f"calibrated profile '{cal.name}'" if cal is not None else "")
    if requested:  # "calibrated"
        if cal is None:
            raise HardwareError(f"no calibrated profile in {user_profile_dir()}",
                                f"run 'planner calibrate --device {device_type}' first")
        measured_on = profile_device(cal)
        why = f"{label} ({cal.path})" + (f", measured on {measured_on}" if measured_on else "")
        if measured_on and measured_on != here:
            why += f" (not this device, {here})"
        return cal, why
    if cal is not None and profile_device(cal) == here:
        return cal, f"{label} ({cal.path}; measured on this device; default)"
    skipped = f"; {label} was measured on {profile_device(cal)}" if cal is not None else ""
    if device_type == "cpu":
        return load_profile("cpu"), ("bundled 'cpu' template (placeholder numbers: run 'planner calibrate --device cpu')"
                                     + skipped)
    p = closest_bundled(device_name, memory_bytes)
    if p is None:
        return load_profile(DEFAULT_HARDWARE), (f"bundled '{DEFAULT_HARDWARE}' (no bundled profile matches "
                                                f"'{device_name}': pass --hardware or run 'planner calibrate')" + skipped)
    return p, f"bundled '{p.name}' (matches '{device_name}'; run 'planner calibrate' for measured rates)" + skipped


# ---- memory guard --------------------------------------------------------------------------------


def workspace_bytes(ops, batch: int, vocab: int, act_bytes: int) -> int:
    """Room for activations, logits, graph pools and allocator slack beside weights and KV."""
    act_peak = max((o.act_read_bytes + o.act_write_bytes for o in ops), default=0)
    return 256 * 2**20 + 8 * act_peak + 4 * batch * vocab * max(act_bytes, 4)


def memory_guard(*, weights_bytes: int, kv_bytes_at, batch: int, context: int, workspace: int, free_bytes: int,
                 device: str, margin_bytes: int | None = None, hint: str | None = None) -> None:
    """Refuse (``OptionError``) before allocating when weights + KV + workspace exceed the free memory,
    naming the largest batch at this context and the longest context at this batch that fit, or ``hint``
    where the run has no --batch / --context (``verify --reference``). The free memory is shown clamped at 0;
    on the CPU, where the address-space limit (``ulimit -v``, ``calibrate.address_space_left``) is below the
    memory available, the refusal says that it binds (each CPU thread maps its own stack: ``--threads``)."""
    from planner.analysis.capacity import largest

    if margin_bytes is None:  # 512 MiB on a GPU; on the CPU a tenth of what is free, at least 1 GiB
        margin_bytes = 512 * 2**20 if device == "cuda" else max(GiB, free_bytes // 10)
    usable = free_bytes - margin_bytes
    need = weights_bytes + kv_bytes_at(context + 1) * batch + workspace
    if need <= usable:
        return
    limit = _address_space_binds() if device == "cpu" else None
    tips = []
    if limit is not None:
        tips.append(f"raise or lift the address-space limit (ulimit -v), or run fewer CPU threads (--threads; "
                    f"{limit[1]:,} now)")
    if hint is not None:
        tips.append(hint)
    else:
        per_seq_ws = max(1, workspace // max(batch, 1))

        def fits_batch(b: int) -> bool:
            return weights_bytes + kv_bytes_at(context + 1) * b + per_seq_ws * b <= usable

        def fits_ctx(c: int) -> bool:
            return weights_bytes + kv_bytes_at(c + 1) * batch + workspace <= usable

        mb = largest(fits_batch, 1, max(batch, 1))
        mc = largest(fits_ctx, 0, context)
        if mb >= 1:
            tips.append(f"--batch {mb} fits at --context {context}")
        if mc >= 0:
            tips.append(f"--context {mc} fits at --batch {batch}")
        if mb < 1 and mc < 0 and limit is None:
            if weights_bytes + workspace > usable:
                tips.append("the weights alone do not fit: use a smaller model or dtype")
            else:
                tips.append("even one sequence's KV cache at this context does not fit beside the weights: "
                            "lower --context or use a smaller --dtype")
    free = f"{max(0, usable) / GiB:.2f} GiB is free (after a {margin_bytes / GiB:.2f} GiB margin)"
    if limit is not None:
        free += (f": the address-space limit (ulimit -v) binds, leaving this process {limit[0] / GiB:.2f} GiB to "
                 f"map with {limit[1]:,} CPU thread(s), each mapping its own stack")
    raise OptionError(
        f"not enough {device} memory: this run needs {need / GiB:.2f} GiB (weights {weights_bytes / GiB:.2f} GiB, "
        f"KV cache {kv_bytes_at(context + 1) * batch / GiB:.2f} GiB, workspace {workspace / GiB:.2f} GiB) but "
        f"{free}", "; ".join(tips))


#: The address space a run needs left after torch starts its CPU threads, to read its profile and build anything
#: (below it, reading a small file failed with MemoryError: ``--threads 4096`` under ``ulimit -v 4000000``)
THREADS_ADDRESS_SPACE_BYTES = 256 * 2**20


def set_cpu_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)`` (--threads), then refuse (``OptionError``) when those threads, each
    mapping its own stack, leave less than ``THREADS_ADDRESS_SPACE_BYTES`` of the address-space limit
    (``ulimit -v``) to map: what binds is that limit and the thread count, not the model (--threads is not
    capped: the limit decides)."""
    from . import require_torch
    from .calibrate import address_space_left

    require_torch().set_num_threads(threads)

    left = address_space_left()
    if left is not None and left < THREADS_ADDRESS_SPACE_BYTES:
        raise OptionError(f"--threads {threads:,}: the CPU threads' stacks leave this process {left / GiB:.2f} GiB "
                          f"of its address-space limit (ulimit -v) to map",
                          "raise or lift the address-space limit (ulimit -v), or run fewer CPU threads (--threads)")


def _address_space_binds() -> tuple[int, int] | None:
    """(what ``ulimit -v`` still lets this process map, torch's CPU threads) where that is less than the memory
    available (so it, not the machine's memory, is what binds), else None."""
    from . import require_torch
    from .calibrate import address_space_left, meminfo_bytes

    left = address_space_left()
    if left is None:
        return None
    avail = meminfo_bytes("MemAvailable")
    return (left, require_torch().get_num_threads()) if avail is None or left < avail else None


# ---- where the time went -------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


def _rate(v: float, unit: str) -> str:
    for p, d in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if v >= d:
            return f"{v / d:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


def explain(*, predicted_s: float, measured_s: float, cost, totals, rates: tuple[float, float], graphs: bool,
            eager_measured_s: float | None, kinds: tuple[KindTime, ...], profile_name: str, engine_name: str,
            kernels: int, launch_s: float) -> list[str]:
    """Sentences saying where the measured time went, relative to the prediction (pure arithmetic).
    ``cost``: the step's ``hardware.expected.StepCost`` (ideal, expected, seconds by factor)."""
    flops_rate, bw_rate = rates
    out = []
    err = predicted_s / measured_s - 1.0
    mode = "CUDA-graph replay" if graphs else "eager step"
    out.append(f"measured {_ms(measured_s)} per {mode} vs {_ms(predicted_s)} expected on {engine_name} with '{profile_name}' "
               f"({'+' if err >= 0 else ''}{100 * err:.1f}%: the prediction is {'slower' if err >= 0 else 'faster'} than the device)")
    gaps = [f"{k} +{_ms(v)}" if v >= 0 else f"{k} −{_ms(-v)}" for k, v in cost.parts.items() if abs(v) > 0]
    out.append(f"expected {_ms(cost.expected_s)} = ideal {_ms(cost.ideal_s)}" + (" + " + ", ".join(gaps) if gaps else "")
               + (f" (step overhead: {kernels:,} kernels × {_ms(launch_s)})" if kernels and launch_s and not graphs else ""))
    compute_s, memory_s = totals.flops / flops_rate, totals.bytes / bw_rate
    bound = "memory" if memory_s >= compute_s else "compute"
    lo, hi = sorted((compute_s, memory_s))
    out.append(f"the trace is {bound}-bound at the profile's peaks ({hi / lo if lo else float('inf'):.3g}x): "
               f"{totals.bytes / 1e9:.3g} GB moved (weights {totals.weight_bytes / 1e9:.3g} GB, KV "
               f"{totals.kv_bytes / 1e9:.3g} GB, activations {totals.act_bytes / 1e9:.3g} GB) and {totals.flops / 1e9:.3g} GFLOP")
    ach_bw = totals.bytes / measured_s
    ach_fl = totals.flops / measured_s
    out.append(f"achieved {_rate(ach_bw, 'B/s')} = {_pct(ach_bw / bw_rate)} of the profile's {_rate(bw_rate, 'B/s')}, "
               f"and {_rate(ach_fl, 'FLOP/s')} = {_pct(ach_fl / flops_rate)} of its {_rate(flops_rate, 'FLOP/s')}")
    if graphs and eager_measured_s is not None:
        saved = eager_measured_s - measured_s
        out.append(f"launch overhead: eager steps took {_ms(eager_measured_s)}, the graph replay {_ms(measured_s)} "
                   f"({_ms(saved)} saved over {kernels:,} kernels ≈ {_ms(max(saved, 0) / max(kernels, 1))} each; "
                   f"the profile assumes {_ms(launch_s)} each)")
    measured_kinds = [k for k in kinds if k.measured_share is not None]
    if measured_kinds:
        diffs = sorted(measured_kinds, key=lambda k: abs(k.measured_share - k.predicted_share), reverse=True)
        parts = [f"{k.kind} {_pct(k.measured_share)} measured vs {_pct(k.predicted_share)} predicted" for k in diffs[:3]
                 if abs(k.measured_share - k.predicted_share) >= 0.02]
        if parts:
            out.append("op kinds whose share of the step differs most from the prediction: " + "; ".join(parts))
        other = next((k for k in kinds if k.kind == "other (untraced)"), None)
        if other is not None and other.measured_share and other.measured_share > 0.05:
            out.append(f"{_pct(other.measured_share)} of the profiled step ran outside the traced ops "
                       f"(Python and framework work between the op kinds' ranges)")
    return out


# ---- the prediction: planner's one step model ----------------------------------------------------


def verify_engine_name(device_type: str, graphs: bool) -> str:
    """The engine profile of the runtime verify times (``profiles/engines/torch-*.yaml``)."""
    if device_type == "cpu":
        return "torch-cpu-eager"
    return "torch-cuda-graphs" if graphs else "torch-cuda-eager"


@dataclass(frozen=True)
class Prediction:
    cost: object  # hardware.expected.StepCost of the step (expected, ideal, seconds by factor)
    factors: object  # hardware.expected.Factors
    engine: object  # hardware.engine.EngineProfile
    kernels: int  # kernels the step launches (the decoder's dispatched ops when counted, else the trace's)
    trace_kernels: int  # Σ of the trace's op kernels
    by_kind: dict  # op kind -> expected seconds (device time, plus its share of the launches)


@dataclass(frozen=True)
class _Analysis:
    """What ``StepModel`` reads of an analysis, with the exact dtypes verify runs."""

    spec: ModelSpec
    fmt: object  # analysis.weights.WeightFormat
    kv: object  # analysis.kv.KVCache


def first_attention(spec: ModelSpec):
    """The mixer of the model's first softmax-attention layer (one with an ``attention_shape``), or None."""
    return next((layer.mixer for layer in spec.layers
                 if layer.mixer is not None and layer.mixer.attention_shape() is not None), None)


def attention_shape(spec: ModelSpec) -> tuple[int, int] | None:
    """(query heads per KV head, head_dim) of the model's first attention layer, or None (MLA, none)."""
    m = first_attention(spec)
    return None if m is None else m.attention_shape()


def sdpa_heads(spec: ModelSpec) -> int | None:
    """KV heads of the model's first softmax attention layer that the decoder runs through
    ``scaled_dot_product_attention`` (not the written-out path of soft-capped logits or sinks), or None."""
    m = first_attention(spec)
    if m is None or spec.attn_logit_softcapping is not None or getattr(m, "sinks", False):
        return None
    k = getattr(m, "num_key_value_heads", None)
    return int(k) if isinstance(k, int) and k > 0 else None


def written_attention_note(spec: ModelSpec, device_type: str) -> str | None:
    """On a GPU, for a model whose attention the decoder writes out (soft-capped logits, sinks: no SDPA), what
    the H200 run measured of that path against the step model's fused-kernel price; None otherwise."""
    if device_type != "cuda" or attention_shape(spec) is None or sdpa_heads(spec) is not None:
        return None
    return ("this model's attention is written out (soft-capped logits or sinks: matmul, softmax, matmul), which "
            "the step model prices as one fused kernel; on an H200 (torch 2.11) gemma-2-9b's steps ran 1.6-4x the "
            "price, cuBLAS taking 1,063 us a layer for p.V at 32k keys (bench/data/h200-2026-12-04)")


def hardware_factors(hw, engine, spec: ModelSpec, *, batch: int | None = None, tp: int = 1):
    """``factors_for(hw, engine)`` with the device's calibrated attention-decode efficiency
    (``attention_decode_efficiency``) at this model's attention shape where the profile has one, and,
    where it has a calibrated per-program read rate (``attention_decode_head_bandwidth``) and ``batch``
    is given, no more than ``batch`` × the rank's KV heads × that rate: the decoder's SDPA decode runs
    one program per (sequence, KV head), so a batch of one keeps a few multiprocessors busy. In a CUDA-graph
    replay, each dispatched op at the profile's ``graph_node_overhead_by_rows`` at ``batch`` where it has one,
    each layer's decode attention plus its calibrated ``attention_decode_overhead``, and an MoE model's routed
    experts at its calibrated grouped-experts rate and overhead."""
    from dataclasses import replace

    from planner.hardware.expected import attention_efficiency_at, factors_for, graph_node_at

    f = factors_for(hw, engine)
    shape = attention_shape(spec)
    if hw.attention_decode_efficiency and shape is not None:
        g, d = shape
        f = replace(f, attention_decode=attention_efficiency_at(hw.attention_decode_efficiency, g, d),
                    sources={**f.sources, "attention_decode": f"{hw.name} profile (calibrated), at {g} query heads "
                                                              f"per KV head and head_dim {d}"})
    heads = sdpa_heads(spec)
    per_head = getattr(hw, "attention_head_bytes_per_s", None)
    if per_head and batch and heads:
        programs = batch * -(-heads // max(1, tp))  # the busiest rank's KV heads (one where tp > heads)
        cap = programs * per_head / (hw.memory_bandwidth_bytes_per_s * f.memory_bandwidth)
        if cap < f.attention_decode:
            f = replace(f, attention_decode=cap,
                        sources={**f.sources, "attention_decode": f"{hw.name} profile (attention_decode_head_bandwidth, "
                                                                  f"calibrated) x {programs} programs (batch {batch} x "
                                                                  f"{programs // batch} KV heads)"})
    nodes = getattr(hw, "graph_node_by_rows_s", None)
    if nodes and batch and f.kernel_launches == "graph":  # the per-op figure at a model's width, at this batch
        f = replace(f, graph_node_s=graph_node_at(nodes, batch),
                    sources={**f.sources, "graph_node_s": f"{hw.name} profile (graph_node_overhead_by_rows, calibrated) "
                                                          f"at batch {batch}"})
    attn_oh = getattr(hw, "attention_decode_overhead_s", None)
    if attn_oh and f.kernel_launches == "graph":  # each decode attention call's fixed cost, calibrated
        f = replace(f, attention_decode_overhead_s=attn_oh,
                    sources={**f.sources, "attention_decode_overhead_s": f"{hw.name} profile (attention_decode_overhead, "
                                                                         "calibrated)"})
    ex_rate = getattr(hw, "experts_grouped_bytes_per_s", None)
    if ex_rate and f.kernel_launches == "graph" and spec.first_moe is not None:  # the decoder's grouped experts
        f = replace(f, experts_grouped_bytes_per_s=ex_rate,
                    experts_grouped_overhead_s=getattr(hw, "experts_grouped_overhead_s", None) or 0.0,
                    sources={**f.sources, "experts_grouped_bytes_per_s": f"{hw.name} profile (experts_grouped_bandwidth "
                                                                         "and experts_grouped_overhead, calibrated)"})
    return f


def verify_factors(hw, spec: ModelSpec, device_type: str, graphs: bool = False, *, batch: int | None = None,
                   tp: int = 1):
    """The step model's factors for the torch runtime verify times on ``hw`` (``hardware_factors`` on
    the engine profile of ``verify_engine_name``)."""
    from planner.hardware.engine import load_engine

    return hardware_factors(hw, load_engine(verify_engine_name(device_type, graphs)), spec, batch=batch, tp=tp)


def expected_ops_cost(groups, spec: ModelSpec, fmt, hw, *, rows: int, device_type: str, graphs: bool = False,
                      kernels: int | None = None, factors=None, tp: int = 1):
    """``hardware.expected.step_cost`` (the step model's price, which ``StepModel`` takes) of one
    rank's or stage's decode ops (``Op``s or ``OpGroup``s, already sharded) on the torch runtime's
    engine profile, without collectives (``verify --tp``/``--pp`` time and price those apart).
    ``kernels``: the dispatched ops the rank counted (None: the trace's). ``factors``: the
    ``verify_factors`` already held (None: read them). Routed experts are priced at the rows each
    touched expert multiplies, as ``StepModel.decode`` prices them (their GEMMs' inner dimensions on one
    rank of ``tp``)."""
    from planner.hardware.expected import expert_inner, expert_rows, experts_format, step_cost

    f = factors if factors is not None else verify_factors(hw, spec, device_type, graphs)
    moe = spec.first_moe
    e_rows = expert_rows(rows, moe.num_experts, moe.num_experts_per_tok) if moe is not None else None
    return step_cost(list(groups), hw, fmt.compute.compute, f, decode=True, sequences=rows, rows=rows, kernels=kernels,
                     expert_rows=e_rows, expert_inner=expert_inner(spec, tp), experts_format=experts_format(fmt))


def predict_step(spec: ModelSpec, fmt, kvc, hw, *, batch: int, context: int, device_type: str, graphs: bool,
                 kernels: int | None = None) -> Prediction:
    """The decode step verify times, priced by ``hardware.serve.StepModel`` (the step model of serve,
    plan, compare and trace) on the torch runtime's engine profile: memory-bound kernels at the
    profile's bandwidth, GEMMs at its calibrated rows efficiency, attention at its calibrated decode
    efficiency, and ``kernels`` launches at its ``kernel_launch_overhead`` (None: the trace's count)."""
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import for_column, graph_nodes_s, launch_time_s, ops_time_s, step_kernels
    from planner.hardware.serve import StepModel

    engine = load_engine(verify_engine_name(device_type, graphs))
    f = hardware_factors(hw, engine, spec, batch=batch)
    model = StepModel(_Analysis(spec, fmt, kvc), hw, tp_plan(spec, 1), f)
    cost = model.decode(batch, context, kernels=kernels)
    groups = model._ops(batch, 1, context)
    trace_kernels = step_kernels(groups)
    n = trace_kernels if kernels is None else kernels
    flops_per_s = hw.peak_flops_for(model.compute_key)
    by_kind: dict[str, float] = {}
    launches = (launch_time_s(f, groups, n, cost.expected_s - cost.parts.get("step overhead", 0.0))
                + graph_nodes_s(f, groups, n))
    fc = for_column(f, hw, model.compute_key)  # the step's GEMM fraction, as step_cost takes it
    for kind in dict.fromkeys(g.op.kind for g in groups):
        sub = [g for g in groups if g.op.kind == kind]
        dev = ops_time_s(sub, flops_per_s, hw.memory_bandwidth_bytes_per_s, fc, decode=True, rows=batch)
        share = step_kernels(sub) / trace_kernels if trace_kernels else 0.0  # launches split as the trace's kernels
        by_kind[str(kind)] = dev + launches * share
    return Prediction(cost, f, engine, n, trace_kernels, by_kind)


def kind_times(predicted: dict[str, float], measured: dict[str, float] | None,
               profiled_step_s: float | None) -> tuple[KindTime, ...]:
    """Expected time per op kind (``Prediction.by_kind``) beside the profiled share."""
    total_pred = sum(predicted.values()) or 1.0
    rows = []
    total_meas = profiled_step_s if measured else None
    kinds = list(predicted) + [k for k in (measured or {}) if k not in predicted]
    for k in kinds:
        m = None if measured is None else measured.get(k, 0.0)
        rows.append(KindTime(k, predicted.get(k, 0.0), m, predicted.get(k, 0.0) / total_pred,
                             None if m is None or not total_meas else m / total_meas))
    if measured is not None and total_meas:
        rest = max(0.0, total_meas - sum(measured.values()))
        rows.append(KindTime("other (untraced)", 0.0, rest, 0.0, rest / total_meas))
    return tuple(rows)


# ---- the run -------------------------------------------------------------------------------------


def machine_load(device_type: str) -> str | None:
    """A note when other processes already load the CPUs (CPU timings then vary run to run)."""
    import os

    if device_type != "cpu" or not hasattr(os, "getloadavg"):
        return None
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cpus = os.cpu_count() or 1
    if load - 1.0 <= 0.5 * cpus:  # the 1-minute load includes this process (~1) when it was already running
        return None
    return (f"the machine was busy before the run (load average {load:.1f} on {cpus} CPUs): other processes compete "
            "for cores and memory bandwidth, so CPU timings vary; --threads 1 is steadier on a busy machine")


def profile_threads(hw) -> int | None:
    """The CPU thread count a calibrated profile records in its notes (``threads: N ...``), or None."""
    for n in getattr(hw, "notes", ()):
        if n.startswith("threads: "):
            try:
                return int(n.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def default_dtype(spec: ModelSpec, device_type: str) -> str:
    """fp32 on CPU (bf16 matmuls are slow and erratic on many CPUs); the config's float dtype on CUDA."""
    if device_type == "cpu":
        return "fp32"
    from planner.analysis.dtypes import try_dtype

    d = try_dtype(spec.torch_dtype) if spec.torch_dtype else None
    return d.name if d is not None and d.name in RUNTIME_DTYPES else "bf16"


def run_verify(spec: ModelSpec, opts: VerifyOptions, *, model_id: str = "",
               progress=None) -> VerifyResult:
    """Build the decoder of ``spec``, run the exact checks and time its decode step (see module doc)."""
    from . import require_torch

    torch = require_torch()
    from planner.analysis.kv import kv_cache
    from planner.analysis.params import count_params
    from planner.analysis.trace import Totals, step_ops
    from planner.analysis.weights import weight_format

    from .cache import KVCache
    from .calibrate import device_name, free_memory_bytes, total_memory_bytes
    from .load import load_checkpoint
    from .model import build_decoder, check_supported, parameter_count, unique_parameters
    from .timing import _no_progress, count_flops, count_kernels, profile_kinds, synchronize, time_steps

    progress = progress or _no_progress
    opts.check()
    check_supported(spec)
    if spec.position_embeddings and spec.max_position_embeddings and opts.context + 1 > spec.max_position_embeddings:
        # learned positions (OPT, GPT-2, BLIP-2's OPT): the decoded token at position --context needs a row
        raise OptionError(f"--context {opts.context}: the decoded token's position passes the model's "
                          f"{spec.max_position_embeddings} learned positions (max_position_embeddings)",
                          f"use --context {spec.max_position_embeddings - 1} or less")
    dev_type = opts.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev_type == "cuda" and not torch.cuda.is_available():
        raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}",
                                      "use --device cpu, or install a CUDA build of torch on a machine with a GPU")
    device = torch.device(dev_type)
    if opts.threads and dev_type == "cpu":
        set_cpu_threads(opts.threads)
    dtype_name = opts.dtype or default_dtype(spec, dev_type)
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    notes: list[str] = []
    if opts.dtype is None:
        notes.append(f"dtype {dtype_name}: the default on {dev_type}" + (" (bf16 matmuls are slow and erratic on many CPUs)"
                                                                        if dev_type == "cpu" else " (the config's torch_dtype)"))
    if spec.quant is not None:
        notes.append(f"the checkpoint is quantized ({spec.quant.raw_method or spec.quant.method}); verify runs {dtype_name} "
                     "weights and the analysis is done for them (--dtype)")

    written = written_attention_note(spec, dev_type)
    if written:
        notes.append(written)
    busy = machine_load(dev_type)
    if busy:
        notes.append(busy)

    # -- the analysis of exactly what will run --------------------------------------------------------
    B, C = opts.batch, opts.context
    capacity = C + 1
    fmt, fmt_notes = weight_format(spec, dtype_name)
    kvd = fmt.act
    kvc = kv_cache(spec, kvd, fmt.act)
    params = count_params(spec)
    ops = step_ops(spec, fmt, kvd, batch=B, new_tokens=1, cached_tokens=C)
    totals = Totals.of(ops)
    weights_bytes = fmt.bytes_of(spec.tensors())
    kv_bytes = kvc.seq_bytes(capacity) * B  # per sequence: K/V of the tokens, and the recurrent layers' fixed state

    name = device_name(device)
    hw, hw_reason = choose_profile(opts.hardware, dev_type, name, total_memory_bytes(device))
    cal_threads = profile_threads(hw)
    if dev_type == "cpu" and not opts.threads and cal_threads:
        torch.set_num_threads(cal_threads)
        notes.append(f"{cal_threads} CPU thread(s), as profile '{hw.name}' was calibrated with (--threads to change)")
    threads = torch.get_num_threads() if dev_type == "cpu" else None
    if threads and cal_threads and cal_threads != threads:
        notes.append(f"the profile was calibrated with {cal_threads} CPU thread(s), this run uses {threads} (--threads)")

    if opts.weights:  # fail before allocating: a missing folder or a quantized checkpoint
        from .load import checkpoint_files

        if spec.quant is not None:
            raise RuntimeUnavailableError(
                f"loading a quantized checkpoint ({spec.quant.raw_method or spec.quant.method}) is not supported",
                "verify with random weights (omit --weights)")
        checkpoint_files(opts.weights)

    # -- memory guard, before any allocation ----------------------------------------------------------
    memory_guard(weights_bytes=weights_bytes, kv_bytes_at=kvc.seq_bytes, batch=B, context=C,
                 workspace=workspace_bytes(ops, B, spec.vocab_size, tdtype.itemsize),
                 free_bytes=free_memory_bytes(device), device=dev_type)

    # -- build (meta, then allocate on the device), load, cache ---------------------------------------
    t0 = time.perf_counter()
    progress("build", 0, 2)
    model = build_decoder(spec, dtype=tdtype, device=device,
                          seed=None if opts.weights else opts.seed, moe_impl=opts.moe_impl)
    if opts.weights:
        rep = load_checkpoint(model, opts.weights)
        weights_src = f"{opts.weights} ({rep.loaded} tensors)"
        if rep.ignored:
            notes.append(f"{len(rep.ignored)} checkpoint tensor(s) not used: {', '.join(rep.ignored[:3])}")
    else:
        weights_src = f"random (seed {opts.seed})"
    progress("build", 1, 2)
    cache = KVCache(spec, B, capacity, tdtype, device)
    cache.fill_random_(opts.seed)
    synchronize(device)
    progress("build", 2, 2)
    build_s = time.perf_counter() - t0
    moe_impl = None
    if any(isinstance(layer.ffn, MoE) for layer in spec.layers):
        moe_impl = next(m.impl for m in model.modules() if type(m).__name__ == "Experts")
    notes.extend(model.notes)

    # -- exact checks ---------------------------------------------------------------------------------
    measured_params = parameter_count(model)
    shapes = {n: tuple(p.shape) for n, p in unique_parameters(model)}
    cross = {t.name for t in spec.cross_tensors()}
    # the text decoder only
    expected = {t.name: tuple(t.shape) for t in spec.tensors()
                if t.kind not in ("vision", "audio") and t.name not in cross}
    pnote = "" if shapes == expected else (
        f"tensor names/shapes differ from the spec: {sorted(set(shapes.items()) ^ set(expected.items()))[:3]}")
    if params.vision or params.audio:
        pnote = (pnote + "; " if pnote else "") + (f"the text decoder: params.total less the vision/audio encoders "
                                                   f"({params.vision + params.audio:,}), which verify does not build")
    if params.cross_attention:
        pnote += (f"; less the cross-attention layers ({params.cross_attention:,}), which a text-only step skips "
                  "(transformers too) and verify does not build")
    g = torch.Generator(device="cpu").manual_seed(opts.seed)
    tokens = torch.randint(0, spec.vocab_size, (B, 1), generator=g).to(device)

    def step():
        return model.decode(tokens, C, cache)

    with torch.inference_mode():
        flops, by_op = count_flops(step)
        kernels, _ = count_kernels(step)  # what the eager step dispatches, priced at the profile's launch cost
    fnote = ", ".join(f"{k.split('.')[-1]} {v:,}" for k, v in sorted(by_op.items(), key=lambda kv: -kv[1]))
    checks = (
        Check("params", params.total - params.vision - params.audio - params.cross_attention, measured_params,
              "parameters", pnote or "from the model's own tensors"),
        Check("flops", totals.flops, flops, "FLOPs", f"one decode step (batch {B}, {C} cached tokens): {fnote}"),
        Check("kv_bytes", kv_bytes, cache.nbytes, "bytes",
              f"bytes_per_sequence({capacity}) × {B}; capacity = context + 1 (the decoded token)"),
    )

    # -- timing ---------------------------------------------------------------------------------------
    with torch.inference_mode():
        times = time_steps(step, device, steps=opts.steps, warmup=opts.warmup, graphs=opts.graphs, progress=progress)
        eager_times = None
        if times.graphs:
            eager_times = time_steps(step, device, steps=min(opts.steps, 8), warmup=1, graphs=False,
                                     progress=progress, phase="eager steps")
        if times.note:
            notes.append(times.note)
        measured_kinds, profiled_s = None, None
        if opts.profile:
            progress("profile", 0, 1)
            measured_kinds, profiled_s = profile_kinds(step, device, steps=opts.profile_steps)
            progress("profile", 1, 1)

    # -- prediction and explanation --------------------------------------------------------------------
    compute = fmt.compute.name
    used_col = hw.peak_flops_key_for(compute)
    if used_col != compute:
        notes.append(f"profile '{hw.name}' has no {compute} matmul rate; its {used_col} rate is used"
                     + (f" (run 'planner calibrate --dtype {compute}')" if hw.name == "calibrated" else ""))
    pred = predict_step(spec, fmt, kvc, hw, batch=B, context=C, device_type=dev_type, graphs=times.graphs,
                        kernels=kernels)
    rates = (hw.peak_flops_for(fmt.compute.compute), hw.memory_bandwidth_bytes_per_s)
    kinds = kind_times(pred.by_kind, measured_kinds, profiled_s)
    explanation = explain(predicted_s=pred.cost.expected_s, measured_s=times.median_s, cost=pred.cost, totals=totals,
                          rates=rates, graphs=times.graphs,
                          eager_measured_s=None if eager_times is None else eager_times.median_s, kinds=kinds,
                          profile_name=hw.name, engine_name=pred.engine.display_name, kernels=pred.kernels,
                          launch_s=pred.factors.kernel_launch_s)
    notes.append(f"KV cache of the {C:,}-token context is random (not prefilled): decode time does not depend on its values")
    if not math.isfinite(times.median_s) or times.median_s <= 0:
        raise RuntimeUnavailableError("the timer returned no usable step time")
    return VerifyResult(
        model_id=model_id or spec.name, spec=spec, options=opts, device_type=dev_type, device_name=name,
        dtype=dtype_name, capacity=capacity, checks=checks, hardware=hw, hardware_reason=hw_reason, prediction=pred,
        totals=totals, times=times, eager_times=eager_times, kinds=kinds, profiled_step_s=profiled_s,
        explanation=tuple(explanation), notes=tuple(dict.fromkeys(notes + list(fmt_notes))), build_s=build_s,
        weights=weights_src, moe_impl=moe_impl, threads=threads, kv_dtype=kvd.name, compute_dtype=compute,
        rates=rates,
    )


def result_dict(r: VerifyResult, schema_version: int = 1) -> dict:
    """The JSON contract of ``planner verify`` (base units)."""
    st, t = r.step, r.times
    eager_s = r.eager_times.median_s if r.eager_times is not None else t.median_s
    d = {
        "schema_version": schema_version,
        "model": {"id": r.model_id, **r.spec.identity()},
        "device": {"type": r.device_type, "name": r.device_name, "dtype": r.dtype, "kv_dtype": r.kv_dtype,
                   "compute_dtype": r.compute_dtype, "threads": r.threads},
        "options": {"batch": r.options.batch, "context": r.options.context, "capacity": r.capacity,
                    "steps": r.options.steps, "warmup": r.options.warmup, "graphs": r.graphs, "seed": r.options.seed,
                    "weights": r.weights, "moe_impl": r.moe_impl},
        "checks": {c.name: {"predicted": c.predicted, "measured": c.measured, "ok": c.ok, "unit": c.unit, "note": c.note}
                   for c in r.checks},
        "timing": {
            "predicted_s": r.predicted_s,
            "measured_s": r.measured_s,
            "error": r.error,
            "error_definition": "predicted_s / measured_s - 1",
            "spread_s": t.spread_s,
            "min_s": t.min_s,
            "max_s": t.max_s,
            "samples_s": list(t.samples_s),
            "steps": len(t.samples_s),
            "warmup": t.warmup,
            "graphs": r.graphs,
            "eager_measured_s": None if r.eager_times is None else r.eager_times.median_s,
            "achieved_bytes_per_s": r.achieved_bytes_per_s,
            "achieved_flops_per_s": r.achieved_flops_per_s,
            "step_bytes": r.totals.bytes,
            "step_flops": r.totals.flops,
            "profile_bytes_per_s": r.rates[1],
            "profile_flops_per_s": r.rates[0],
            "achieved_bandwidth_fraction": r.achieved_bytes_per_s / r.rates[1] if r.rates[1] else None,
            "build_s": r.build_s,
            "ideal_s": st.ideal_s,
            "explain": dict(st.parts),
            "engine": r.prediction.engine.name,
            "kernels": {"dispatched": r.prediction.kernels, "trace": r.prediction.trace_kernels,
                        "launch_s": r.prediction.factors.kernel_launch_s,
                        "launches": r.prediction.factors.kernel_launches},
            "factors": r.prediction.factors.to_dict(),
        },
        "per_kind": [{"kind": k.kind, "predicted_s": k.predicted_s, "predicted_share": k.predicted_share,
                      "profiled_s": k.measured_s, "measured_share": k.measured_share,
                      "measured_s": None if k.measured_share is None else k.measured_share * eager_s}
                     for k in r.kinds],
        "per_kind_definition": "predicted_s: the kind's expected time (its ops, plus its share of the launches); profiled_s: its time in profiled eager "
                               "steps (slowed by the profiler); measured_s: its profiled share of the measured eager step",
        "hardware": r.hardware.to_dict(),
        "hardware_choice": r.hardware_reason,
        "explanation": list(r.explanation),
        "notes": list(r.notes),
    }
    return d
