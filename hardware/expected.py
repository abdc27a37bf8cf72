"""Expected time of one engine step: the roofline (``ideal``) plus sourced factors, each one's share
shown separately.

One rank's share of a step (``analysis.parallel.shard_ops``) costs, per op, with ``c = flops / peak``
and ``m = bytes / bandwidth`` at the datasheet peaks:

    ideal     max(c, m)                                         every op
    expected  (c'^p + m'^p)^(1/p)                               GEMMs (matmul, experts) and attention
              max(c'/e_rows(r), m')                             matmuls of a calibrated profile (below)
              max(c', m')                                       other ops (norms, rope, elementwise, ...)
    with      m' = weight_bytes / (bw · e_mem · e_wq) + other_bytes / (bw · e_mem)
              c' = flops / (peak · e_gemm)                       (attention prefill: · e_attn_prefill)
                   GEMMs without a calibrated table: × (K + K_half) / K, K the GEMM's inner dimension
                   (``k_scale``: a matmul's from its counts, ``inner_dim``; routed experts' gate/up over the
                   hidden size and down over the expert's intermediate size / tp, by their FLOP shares)
              attention decode: m' = (bytes + (n_kv − 1) · kv_read_bytes) / (bw · e_mem · e_attn_decode),
                                n_kv the times the kernel reads each KV byte (1 unless the engine's
                                decode kernel reads a KV head once per query head); e_attn_decode is a
                                fraction of the achieved bandwidth and may pass 1 (a long streaming
                                read outruns a weight GEMV), capped so that e_mem · e_attn_decode ≤ 1

GEMM efficiency by shape is decided here only (``gemm_time_s``): when the hardware profile has a
calibrated ``matmul_efficiency_by_rows`` table (``planner calibrate``: the fraction of the square-GEMM
peak that a matmul of ``r`` rows reaches against a model's weight shapes, weights streamed), a matmul
of the step's ``r`` rows (tokens) takes ``max(c' / e_rows(r), m')``; the table measured the skinny
GEMM's whole time, so it replaces the fitted ridge curve for those ops instead of stacking on it.
``e_rows`` is log-linear in ``r`` between the measured rows, the first value below them, rising to 1
at the square-GEMM size when the profile records it (``rows_efficiency``). An expert GEMM reads the
rows table at the rows each touched expert multiplies (``expert_rows``: tokens × top-k over the
expected distinct experts touched), except where the factors carry a calibrated grouped-experts rate
(``experts_grouped_bytes_per_s``, the torch decoder ``verify`` times on a GPU): then a routed-expert op
(one layer's) takes ``experts_grouped_overhead_s + weight bytes / that rate + its other bytes / bw``, its
FLOPs at the compute rate where longer. Without a table, or without a row count, the ridge curve with
exponent ``p`` applies. ``hardware.timing`` (the per-op roofline of ``trace``) takes its skinny-matmul factor from
the same ``rows_efficiency``. Where the profile also has ``matmul_efficiency_by_shape`` (calibrated
rows × inner dimension K), a matmul whose K its op's counts give (``inner_dim``) takes ``e(r, K)``
from it instead (log-linear in K at each measured row count, then ``rows_efficiency`` over rows),
scaled, where the profile has ``matmul_efficiency_by_out`` (rows × output width N), by that table's
ratio at the matmul's N (``outer_dim``) to the by-shape grid's N.

plus, per step, ``all-reduce = calls × latency + bytes / (interconnect · e_ic)`` (ideal: bytes /
interconnect) and the engine's ``step overhead + per-sequence overhead × sequences`` (with asynchronous
scheduling, ``async_scheduling``, only what of it outlasts the step's device time:
``max(0, host − device)``, since the scheduler prepares the next step while the GPU runs this one), plus the host's
kernel launches where the engine profile says how it launches them (``kernel_launches``; the per-kernel
cost ``t_launch`` is the hardware profile's ``kernel_launch_overhead``, which ``planner calibrate``
measures): ``serial`` (an eager step on a CPU: the thread that dispatches a kernel also runs it)
adds ``kernels × t_launch``; ``overlapped`` (eager on a GPU: the host queues kernels ahead of the
device) adds ``max(0, kernels × t_launch − expected device time)``; ``graph`` (a CUDA-graph replay)
adds one ``t_launch``, and each of its kernels the profile's calibrated ``graph_node_overhead`` (in
``kernel launches``: a replayed node's launch latency and a small kernel's ramp and tail, 0.98 µs per
dispatched aten op on an H200, which a decode step of a few thousand small kernels pays in full); ``none``
(serving engines: their fixed step overhead covers it) adds nothing.
``kernels`` is what the caller counted (``verify``: the decoder's dispatched ops), else Σ of the ops'.
A serving engine's step that it does not replay as a CUDA graph (``graphed``: prompt steps unless the
engine captures them, steps of more tokens than its largest captured size) is launched op by op from
the host: each op of each layer takes at least the host's launch time for the kernels the engine launches
for it, ``max(t_op, launches × launch overhead per op)`` -- ``launches`` is the op's ``Op.launches`` (the kernels
of a Python serving engine's fused implementation: 2 for an FP8 GEMM, 0 for a projection run inside its
partner's GEMM, 9 for FP8 routed experts ...; ``analysis.trace``) where the engine profile's ``op_launches`` is
``serving``, else 1 -- short kernels (norms, rope, activations of a small step) wait for the host, long ones
hide it. In every step, graphed or not, each op also takes at least the engine's ``min_op_time`` on the
device (a graph node's launch latency, a short kernel's ramp and tail; a decode step of a large model at TP8
is a few thousand such ops); ``op_floor_s`` gives the two, and ``kernel launches`` is what the longer adds. Per
request, not per step, ``request overhead`` (the engine's admission, input preparation and first
sampling; plus, for a client that streams through the engine's HTTP server, its front end:
tokenisation, detokenisation, streaming) is added to a request's TTFT by ``hardware.serve``.

Device factors (``e_mem``, ``e_gemm``, ``p``, ``K_half``, ``e_ic``, latency) come from the hardware profile's
``efficiency`` and ``allreduce_latency`` fields, or the fitted defaults in
``profiles/engines/_device.yaml`` where the profile leaves them null (``K_half`` and the per-dtype compute
fractions only from there, and not where the profile has its own compute fraction). The all-reduce latency is
the one device factor an engine profile may give too (``timing.allreduce_latency``: its all-reduce kernels and what
a TP layer adds around them); a hardware profile's own figure still wins (``allreduce_latency_for``). Engine factors
(``e_attn_*``, ``e_wq`` by weight bits, overheads) come from ``profiles/engines/<engine>.yaml``.

``explain`` splits ``expected − ideal`` into the factors by adding them one at a time in a fixed
order (``FACTORS``); the parts sum exactly to the difference. Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Iterable, Mapping

from planner.analysis.records import frozen

FACTORS = (
    "bandwidth efficiency",
    "GEMM efficiency",
    "attention kernels",
    "weight-only kernels",
    "all-reduce bandwidth",
    "all-reduce latency",
    "step overhead",
    "kernel launches",
    "request overhead",
)

GEMM_KINDS = ("matmul", "experts")
KERNEL_LAUNCHES = ("none", "serial", "overlapped", "graph")
OP_LAUNCHES = ("serving", "one")  # an engine profile's timing.op_launches (hardware.engine.EngineProfile.op_launches)


@frozen
class Factors:
    memory_bandwidth: float = 1.0
    compute: float = 1.0
    # the fraction of a peak column's FLOP/s (fp4, fp8, ...) that GEMMs reach where it differs from ``compute``
    # (the fraction of every other column's): replaces ``compute`` in a step whose matmuls run in that column
    compute_by_dtype: Mapping[str, float] = field(default_factory=dict, hash=False)
    # the engine's routed-expert (MoE) kernels: the fraction of the rate this model gives their GEMMs that they
    # reach, where the engine's MoE path is measured to fall short of it; per peak column (``experts_by_dtype``,
    # from the engine profile's ``experts_efficiency``), ``experts`` for the step's column (``for_column``)
    experts_by_dtype: Mapping[str, float] = field(default_factory=dict, hash=False)
    experts: float = 1.0
    # the fraction of the compute rate (``compute`` of the column) that the engine's routed-expert GEMMs reach
    # on this device for one weight format (``experts_format``: ``fp8_block``, ``mxfp4``), where that path is measured to
    # fall short in its compute-bound regime only: per format (``experts_compute_by_format``, from the engine
    # profile's ``experts_compute_efficiency`` for this device), ``experts_compute`` for the step's model
    experts_compute_by_format: Mapping[str, float] = field(default_factory=dict, hash=False)
    experts_compute: float = 1.0
    # the torch decoder's grouped routed experts on a GPU (``verify``: ``runtime.model.Experts``, two
    # ``torch._grouped_mm`` with the sort, gather and scatter around them), calibrated on the device
    # (``experts_grouped_bandwidth`` and ``experts_grouped_overhead``): where the rate is set, a routed-expert
    # op takes ``overhead + touched expert weight bytes / rate + its other bytes / bandwidth`` (its
    # FLOPs at the compute rate where longer), in place of the rows table; 0: not applied
    experts_grouped_bytes_per_s: float = 0.0
    experts_grouped_overhead_s: float = 0.0
    # the device's measured MAMF over its dense peak per column (``HardwareProfile.mamf_fractions``) and the
    # fraction of it serving GEMMs reach: a column with a MAMF takes compute = compute_of_mamf × that fraction
    # (before ``compute_by_dtype`` and ``compute``); 0: not applied
    mamf_fraction: Mapping[str, float] = field(default_factory=dict, hash=False)
    compute_of_mamf: float = 0.0
    # the inner dimension K at which a GEMM reaches half its large-K compute fraction: its compute time is
    # scaled by (K + gemm_k_half) / K (0: not applied); see ``k_scale``
    gemm_k_half: float = 0.0
    gemm_ridge_exponent: float = math.inf
    interconnect: float = 1.0
    allreduce_latency_s: float = 0.0
    step_overhead_s: float = 0.0
    step_overhead_per_sequence_s: float = 0.0
    # host seconds per token the step's sequences hold (prompt + output so far) that the engine's sampler copies
    # into padded token tensors every step: vLLM 0.2.6-0.4.x built the prompt and output token lists of every
    # sequence into tensors each step, penalties or not (bench/sampler_copy.py); part of the step overhead
    sampler_token_s: float = 0.0
    # the engine schedules step n + 1 while the device runs step n (vLLM's async scheduling, the default
    # from v0.14.0): the step overhead above costs only what of it outlasts the step's device time
    async_scheduling: bool = False
    attention_decode: float = 1.0
    attention_prefill: float = 1.0
    # the prompt attention kernel's ramp (``prefill_attention_ramp``): its fraction of the rate above is
    # tiles / (tiles + attention_prefill_tiles_half) × keys / (keys + attention_prefill_keys_half), tiles being the
    # step's (sequence, query head, 128-query block) work items on one rank and keys each sequence's context at the
    # chunk's end; 0: not applied
    attention_prefill_tiles_half: float = 0.0
    attention_prefill_keys_half: float = 0.0
    # times the decode attention kernel reads each byte of the KV cache from memory: 1 where the kernel
    # shares one load of a KV head among its query heads (XQA, FlashAttention/FlashInfer decode); the
    # query heads per KV head where one thread block per query head reads its KV head's cache on its own
    # (TensorRT-LLM's masked MHA before v0.7, whose CHANGELOG lists "MMHA optimization for MQA and GQA")
    attention_decode_kv_reads: float = 1.0
    # the torch decoder's decode attention call on a GPU (``verify``): what each call (one a layer) costs beyond
    # its bytes at the attention rate and its dispatched ops' graph-node cost (the hardware profile's calibrated
    # ``attention_decode_overhead``); 0: not applied
    attention_decode_overhead_s: float = 0.0
    weight_only: Mapping[str, float] = field(default_factory=dict, hash=False)
    # the engine's weight-only kernel where a dense GEMM is compute-bound (``timing.weight_only_compute``): its
    # FLOP/s on this device (SM count x boost clock x its FLOP per SM per clock) by ``int{bits}:{method}`` of the
    # checkpoint, and the one for the step's model (``for_weights``; 0: not priced), which a dense matmul of a
    # weight-only step takes at least its FLOPs over
    weight_only_compute_by_method: Mapping[str, float] = field(default_factory=dict, hash=False)
    weight_only_flops_per_s: float = 0.0
    # calibrated skinny-matmul table (rows -> fraction of the peak), the square-GEMM point included
    matmul_efficiency_by_rows: Mapping[int, float] = field(default_factory=dict, hash=False)
    # calibrated rows -> {inner dim K -> fraction of the peak}; used before the rows table where K is known
    matmul_efficiency_by_shape: Mapping[int, Mapping[int, float]] = field(default_factory=dict, hash=False)
    # calibrated rows -> {output width N -> fraction of the peak} at K = 1024; scales the by-shape figure
    # by its ratio at a matmul's N to the one at MATMUL_SHAPE_OUT (the width the by-shape grid used)
    matmul_efficiency_by_out: Mapping[int, Mapping[int, float]] = field(default_factory=dict, hash=False)
    kernel_launches: str = "none"  # how the host launches the step's kernels (KERNEL_LAUNCHES)
    kernel_launch_s: float = 0.0  # host cost of one kernel launch (the hardware profile's)
    # host time to launch one kernel: the least an op (of each layer) takes in a step that is not a
    # CUDA-graph replay
    launch_overhead_per_op_s: float = 0.0
    # each op takes that many launches (its ``Op.launches``: a Python serving engine's kernels for it) where True;
    # one launch per op where False (the engine profile's ``op_launches``)
    op_launches: bool = False
    # the least one op (of each layer) takes on the device in any step, CUDA-graph replays included: a
    # graph node's launch latency and a short kernel's ramp and tail (``op_floor_s``)
    min_op_time_s: float = 0.0
    # each kernel of a CUDA-graph replay (``kernel_launches: graph``) costs this beyond its work: the graph
    # node's launch latency and a small kernel's ramp (the hardware profile's calibrated
    # ``graph_node_overhead``; 0 without one); ``graph_nodes_s``
    graph_node_s: float = 0.0
    # which steps replay a captured CUDA graph: steps of at most this many tokens (batch × new tokens),
    # prompt steps only when the engine captures them
    cuda_graph_max_tokens: int = 1 << 30
    cuda_graph_prefill: bool = True
    # the largest prompt step replayed as a graph where it is not ``cuda_graph_max_tokens`` (SGLang's piecewise
    # prefill graphs: every chunk), its cap for a model with MLA attention, and the model types (or
    # ``multimodal``) the engine runs no prompt graphs for; ``for_model`` applies the last two
    cuda_graph_prefill_max_tokens: int | None = None
    cuda_graph_prefill_max_tokens_mla: int | None = None
    cuda_graph_prefill_exclude: tuple[str, ...] = ()
    # per request, added to its TTFT: the engine's admission, input preparation, first sampling
    request_overhead_s: float = 0.0
    # per request, added to its TTFT where the client streams through the HTTP server: the front end
    server_overhead_s: float = 0.0
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict:
        return {
            "memory_bandwidth": self.memory_bandwidth, "compute": self.compute,
            "compute_by_dtype": dict(self.compute_by_dtype),
            "experts_by_dtype": dict(self.experts_by_dtype),
            "experts_compute_by_format": dict(self.experts_compute_by_format),
            "experts_grouped_bytes_per_s": self.experts_grouped_bytes_per_s,
            "experts_grouped_overhead_s": self.experts_grouped_overhead_s,
            "mamf_fraction": dict(self.mamf_fraction), "compute_of_mamf": self.compute_of_mamf,
            "gemm_k_half": self.gemm_k_half,
            "gemm_ridge_exponent": None if math.isinf(self.gemm_ridge_exponent) else self.gemm_ridge_exponent,
            "interconnect": self.interconnect, "allreduce_latency_s": self.allreduce_latency_s,
            "step_overhead_s": self.step_overhead_s, "step_overhead_per_sequence_s": self.step_overhead_per_sequence_s,
            "sampler_token_s": self.sampler_token_s,
            "async_scheduling": self.async_scheduling,
            "attention_decode": self.attention_decode, "attention_prefill": self.attention_prefill,
            "attention_prefill_tiles_half": self.attention_prefill_tiles_half,
            "attention_prefill_keys_half": self.attention_prefill_keys_half,
            "attention_decode_kv_reads": self.attention_decode_kv_reads,
            "attention_decode_overhead_s": self.attention_decode_overhead_s,
            "weight_only": dict(self.weight_only),
            "weight_only_compute_by_method": dict(self.weight_only_compute_by_method),
            "weight_only_flops_per_s": self.weight_only_flops_per_s,
            "matmul_efficiency_by_rows": {str(r): v for r, v in self.matmul_efficiency_by_rows.items()} or None,
            "matmul_efficiency_by_shape": {str(r): {str(k): v for k, v in row.items()}
                                           for r, row in self.matmul_efficiency_by_shape.items()} or None,
            "matmul_efficiency_by_out": {str(r): {str(n): v for n, v in row.items()}
                                         for r, row in self.matmul_efficiency_by_out.items()} or None,
            "kernel_launches": self.kernel_launches, "kernel_launch_s": self.kernel_launch_s,
            "launch_overhead_per_op_s": self.launch_overhead_per_op_s, "op_launches": self.op_launches,
            "min_op_time_s": self.min_op_time_s,
            "graph_node_s": self.graph_node_s,
            "cuda_graph_max_tokens": self.cuda_graph_max_tokens, "cuda_graph_prefill": self.cuda_graph_prefill,
            "cuda_graph_prefill_max_tokens": self.cuda_graph_prefill_max_tokens,
            "cuda_graph_prefill_max_tokens_mla": self.cuda_graph_prefill_max_tokens_mla,
            "cuda_graph_prefill_exclude": list(self.cuda_graph_prefill_exclude),
            "request_overhead_s": self.request_overhead_s, "server_overhead_s": self.server_overhead_s,
            "sources": dict(self.sources),
        }


IDEAL = Factors()


def op_floor_s(f: Factors, *, graph: bool) -> tuple[float, float]:
    """What the least each op (of each layer) of a step takes under ``f`` is made of: ``(the device's least op
    time, the host's time per kernel launch)``. The first (``min_op_time``) holds in every step; the second
    (``launch_overhead_per_op``) only in a step launched op by op (``graph=False``; 0 in a graph replay), where
    an op takes at least that times the kernels a serving engine launches for it (``Op.launches``)."""
    return f.min_op_time_s, 0.0 if graph else f.launch_overhead_per_op_s


def graphed(f: Factors, *, tokens: int, prefill: bool) -> bool:
    """Whether an engine step of ``tokens`` tokens (batch × new tokens; ``prefill``: it holds prompt
    tokens) replays a captured CUDA graph under ``f`` (then it pays no per-launch host cost): a decode step up to
    ``cuda_graph_max_tokens``; a prompt step where the engine captures them, up to its own limit where it has one
    (``cuda_graph_prefill_max_tokens``), else the same."""
    if not prefill:
        return tokens <= f.cuda_graph_max_tokens
    return f.cuda_graph_prefill and tokens <= prefill_graph_cap(f)


def prefill_graph_cap(f: Factors) -> int:
    """The largest prompt step ``f``'s engine replays as a graph: its own limit, else its decode limit."""
    return f.cuda_graph_max_tokens if f.cuda_graph_prefill_max_tokens is None else f.cuda_graph_prefill_max_tokens


def uses_mla(spec) -> bool:
    """Whether any layer of the model attends with MLA (DeepSeek-V2/V3's latent attention)."""
    return any(getattr(layer, "mixer", None) is not None and layer.mixer.label().startswith("mla")
               for layer in spec.layers)


def for_model(f: Factors, spec) -> Factors:
    """``f`` for one model: no prompt graphs where the engine excludes its type (``cuda_graph_prefill_exclude``:
    a ``model_type``, or ``multimodal`` for a model with a vision or audio encoder), and the MLA cap on the
    largest prompt graph (``cuda_graph_prefill_max_tokens_mla``) for a model with MLA attention."""
    if not f.cuda_graph_prefill:
        return f
    ex = f.cuda_graph_prefill_exclude
    if str(spec.model_type).lower() in ex or ("multimodal" in ex and getattr(spec, "vision", ())):
        return replace(f, cuda_graph_prefill=False)
    if f.cuda_graph_prefill_max_tokens_mla is not None and uses_mla(spec):
        return replace(f, cuda_graph_prefill_max_tokens=min(prefill_graph_cap(f), f.cuda_graph_prefill_max_tokens_mla))
    return f




def device_defaults() -> dict:
    from .engine import _number, _read_yaml

    from . import units

    d = _read_yaml("_device")
    w = "profiles/engines/_device.yaml"
    return {
        "memory_bandwidth": units.parse_fraction(d["memory_bandwidth"], field="memory_bandwidth", where=w),
        "compute": units.parse_fraction(d["compute"], field="compute", where=w),
        "compute_by_dtype": {str(k): units.parse_fraction(v, field=f"compute_by_dtype.{k}", where=w)
                             for k, v in (d.get("compute_by_dtype") or {}).items()},
        "gemm_ridge_exponent": float(d["gemm_ridge_exponent"]),
        # 0 or absent: a device's MAMF is not used
        "compute_of_mamf": 0.0 if not d.get("compute_of_mamf") else
        units.parse_fraction(d["compute_of_mamf"], field="compute_of_mamf", where=w),
        "gemm_k_half": _number(d.get("gemm_k_half", 0), "gemm_k_half", w),  # elements; 0: not applied
        "attention_prefill_tiles_half": _number(d.get("attention_prefill_tiles_half", 0),
                                                "attention_prefill_tiles_half", w),
        "attention_prefill_keys_half": _number(d.get("attention_prefill_keys_half", 0),
                                               "attention_prefill_keys_half", w),
        # the per-SM 16-bit rate the keys' half-point is given at (a device's scales by its own); absent: no ramp
        "attention_prefill_keys_half_at": units.parse_flops(d["attention_prefill_keys_half_at"],
                                                            field="attention_prefill_keys_half_at", where=w)
        if "attention_prefill_keys_half_at" in d else 0.0,
        "interconnect": units.parse_fraction(d["interconnect"], field="interconnect", where=w),
        "allreduce_latency_s": units.parse_time(d["allreduce_latency"], field="allreduce_latency", where=w, allow_zero=True),
    }


def factors_for(hw, engine, *, defaults: dict | None = None) -> Factors:
    """The factors of ``engine`` on ``hw``: device ones from the profile (else the fitted defaults),
    engine ones from the engine profile. The ``ideal`` engine gets ``IDEAL``."""
    if engine.name == "ideal":
        return IDEAL
    dd = defaults if defaults is not None else device_defaults()
    src = {}

    def dev(attr: str, key: str):
        v = getattr(hw, attr)
        src[key] = f"{hw.name} profile" if v is not None else "_device.yaml default"
        return v if v is not None else dd[key]

    table = hw.matmul_rows_table()
    if table:
        src["matmul_efficiency_by_rows"] = f"{hw.name} profile (calibrated)"
    by_shape = dict(getattr(hw, "matmul_efficiency_by_shape", None) or {})
    if by_shape:
        src["matmul_efficiency_by_shape"] = f"{hw.name} profile (calibrated)"
    by_out = dict(getattr(hw, "matmul_efficiency_by_out", None) or {})
    if by_out:
        src["matmul_efficiency_by_out"] = f"{hw.name} profile (calibrated)"
    # a device's measured MAMF scales the GEMM fraction of its columns, unless the profile's own compute
    # fraction (calibrated or written) decides alone
    mamf = {} if hw.compute_efficiency is not None or not dd.get("compute_of_mamf") else hw.mamf_fractions()
    if mamf:
        src["mamf_fraction"] = f"{hw.name} profile (max_achievable_matmul_flops)"
        src["compute_of_mamf"] = "_device.yaml default"
    return Factors(
        matmul_efficiency_by_rows=table,
        matmul_efficiency_by_shape=by_shape,
        matmul_efficiency_by_out=by_out,
        memory_bandwidth=dev("memory_efficiency", "memory_bandwidth"),
        compute=dev("compute_efficiency", "compute"),
        # per peak column: the fitted defaults; a profile whose compute fraction is its own (calibrated or
        # written) keeps that one for every column
        compute_by_dtype={} if hw.compute_efficiency is not None else dict(dd.get("compute_by_dtype") or {}),
        mamf_fraction=mamf,
        compute_of_mamf=float(dd.get("compute_of_mamf") or 0.0) if mamf else 0.0,
        # like the per-dtype fractions, a device default: a profile with its own compute figure uses it alone
        gemm_k_half=0.0 if hw.compute_efficiency is not None else float(dd.get("gemm_k_half") or 0.0),
        gemm_ridge_exponent=dev("gemm_ridge_exponent", "gemm_ridge_exponent"),
        interconnect=dev("interconnect_efficiency", "interconnect"),
        allreduce_latency_s=allreduce_latency_for(hw, engine, dd, src),
        step_overhead_s=engine.step_overhead_s,
        step_overhead_per_sequence_s=engine.step_overhead_per_sequence_s,
        sampler_token_s=engine.sampler_token_cost_s,
        async_scheduling=bool(engine.async_scheduling),
        attention_decode=engine.attention_decode_by_device.get(hw.name, engine.attention_decode_efficiency),
        attention_prefill=engine.attention_prefill_by_device.get(hw.name, engine.attention_prefill_efficiency),
        attention_prefill_tiles_half=float(dd.get("attention_prefill_tiles_half") or 0.0),
        attention_prefill_keys_half=prompt_keys_half(hw, dd),
        weight_only=dict(engine.weight_only_efficiency),
        weight_only_compute_by_method=weight_only_compute_rates(hw, engine),
        experts_by_dtype=dict(engine.experts_efficiency),
        experts_compute_by_format={k: by_hw[hw.name] for k, by_hw in engine.experts_compute_efficiency.items()
                                   if hw.name in by_hw},
        kernel_launches=engine.kernel_launches,
        kernel_launch_s=hw.kernel_launch_s if engine.kernel_launches != "none" else 0.0,
        launch_overhead_per_op_s=engine.launch_overhead_per_op_s,
        op_launches=engine.op_launches == "serving",
        min_op_time_s=engine.min_op_time_s,
        graph_node_s=(getattr(hw, "graph_node_s", None) or 0.0) if engine.kernel_launches == "graph" else 0.0,
        cuda_graph_max_tokens=engine.cuda_graph_max_tokens(hw),
        # prompt graphs only on the vendors' devices the engine captures them on (SGLang's: CUDA)
        cuda_graph_prefill=engine.cuda_graph_prefill and (not engine.cuda_graph_prefill_vendors
                                                          or str(getattr(hw, "vendor", "")).lower()
                                                          in engine.cuda_graph_prefill_vendors),
        cuda_graph_prefill_max_tokens=engine.cuda_graph_prefill_max_tokens,
        cuda_graph_prefill_max_tokens_mla=engine.cuda_graph_prefill_max_tokens_mla,
        cuda_graph_prefill_exclude=engine.cuda_graph_prefill_exclude,
        request_overhead_s=engine.request_overhead_s,
        server_overhead_s=engine.server_overhead_s,
        sources={**src, "engine": f"profiles/engines/{engine.name}.yaml",
                 **({"attention_decode": f"profiles/engines/{engine.name}.yaml attention_decode_efficiency_by_device "
                                         f"({hw.name})"} if hw.name in engine.attention_decode_by_device else {}),
                 **({"attention_prefill": f"profiles/engines/{engine.name}.yaml attention_prefill_efficiency_by_device "
                                          f"({hw.name})"} if hw.name in engine.attention_prefill_by_device else {}),
                 **({"weight_only_compute": weight_only_compute_source(hw, engine)}
                    if engine.weight_only_compute else {}),
                 **({"kernel_launch_s": f"{hw.name} profile (kernel_launch_overhead)"}
                    if engine.kernel_launches != "none" else {}),
                 **({"graph_node_s": f"{hw.name} profile (graph_node_overhead, calibrated)"}
                    if engine.kernel_launches == "graph" and getattr(hw, "graph_node_s", None) else {})},
    )


def weight_only_compute_rates(hw, engine) -> dict:
    """``{"int4:awq": FLOP/s, ...}``: the engine's weight-only kernel rates (``timing.weight_only_compute``, FLOP
    per SM per clock) on ``hw`` (its ``sm_count`` × ``boost_clock``); empty where the profile lacks either."""
    sm_clocks = getattr(hw, "sm_clocks_per_s", None)
    if not engine.weight_only_compute or not sm_clocks:
        return {}
    return {f"{fmt}:{m}": rate * sm_clocks for fmt, (rate, methods) in engine.weight_only_compute.items()
            for m in methods}


def weight_only_compute_source(hw, engine) -> str:
    """Where the weight-only kernel's compute-bound rate comes from on ``hw``, or why it is not applied there."""
    where = f"profiles/engines/{engine.name}.yaml weight_only_compute"
    if not getattr(hw, "sm_clocks_per_s", None):
        return f"{where}: not applied on {hw.name} (its profile gives no sm_count and boost_clock)"
    return f"{where} x {hw.name} profile ({hw.sm_count} SMs x {hw.boost_clock_hz / 1e6:g} MHz)"


def for_weights(f: Factors, fmt, weight_only_bits: int | None) -> Factors:
    """``f`` for a model's weights: the engine's weight-only kernel rate for its checkpoint method
    (``weight_only_compute_by_method``) where its dense linear layers are weight-only quantized (``weight_only_bits``
    given and ``linear`` among the quantization's targets), else none."""
    q = getattr(fmt, "quant", None)
    rate = 0.0
    if weight_only_bits and q is not None and "linear" in q.targets:
        rate = f.weight_only_compute_by_method.get(f"int{weight_only_bits}:{q.method}", 0.0)
    return f if rate == f.weight_only_flops_per_s else replace(f, weight_only_flops_per_s=rate)


def allreduce_latency_source(hw, engine) -> str:
    """Which figure prices one tensor-parallel all-reduce call beyond its bytes: ``hardware`` (the hardware
    profile's own, measured there), else ``engine`` (the engine profile's ``timing.allreduce_latency``: what its
    all-reduce kernels and a TP layer's work around them cost), else ``device`` (``_device.yaml``'s default)."""
    if hw.allreduce_latency_s is not None:
        return "hardware"
    return "engine" if engine.allreduce_latency_s is not None else "device"


def allreduce_latency_for(hw, engine, dd: Mapping, src: dict) -> float:
    """Seconds one tensor-parallel all-reduce call costs beyond its bytes, from the figure
    ``allreduce_latency_source`` names; records which in ``src``."""
    where = allreduce_latency_source(hw, engine)
    if where == "hardware":
        src["allreduce_latency_s"] = f"{hw.name} profile"
        return hw.allreduce_latency_s
    if where == "engine":
        src["allreduce_latency_s"] = f"profiles/engines/{engine.name}.yaml (timing.allreduce_latency)"
        return engine.allreduce_latency_s
    src["allreduce_latency_s"] = "_device.yaml default"
    return dd["allreduce_latency_s"]


def host_step_overhead_s(f: Factors, sequences: int, device_s: float, *, overlap: bool = True,
                         held_tokens: int = 0) -> float:
    """Seconds the engine's per-step host work (``step_overhead`` + ``step_overhead_per_sequence`` × ``sequences``
    + ``sampler_token`` × ``held_tokens``, the tokens those sequences hold) adds to a step whose device time is
    ``device_s``: all of it, or, where ``f`` schedules asynchronously and ``overlap`` allows it (not under
    pipeline parallelism), only what outlasts the device's step."""
    host = f.step_overhead_s + f.step_overhead_per_sequence_s * sequences + f.sampler_token_s * held_tokens
    return max(0.0, host - device_s) if f.async_scheduling and overlap else host


def with_async_scheduling(f: Factors, engine, value: bool | None, *, scheduler_steps: int = 1) -> Factors:
    """``f`` with asynchronous scheduling as asked (``--async-scheduling`` / ``--no-async-scheduling``): ``value``
    None keeps the engine profile's default, off under multi-step scheduling (``scheduler_steps`` > 1, vLLM
    V0's, which had none). ``OptionError`` where the engine profile has no such setting (SGLang, TensorRT-LLM,
    the roofline: their fitted step overheads are what their own overlap schedulers leave) or for async with
    multi-step scheduling."""
    if value is None:
        return replace(f, async_scheduling=False) if scheduler_steps > 1 and f.async_scheduling else f
    from planner.analysis.errors import OptionError

    if engine.async_scheduling is None:
        raise OptionError(f"--{'' if value else 'no-'}async-scheduling: {engine.display_name} has no such setting in "
                          "planner", "it is vLLM's (--engine vllm); SGLang's and TensorRT-LLM's step overheads are "
                          "fitted as their overlap schedulers leave them")
    if value and scheduler_steps > 1:
        raise OptionError("--async-scheduling with --num-scheduler-steps above 1: multi-step scheduling is vLLM V0's, "
                          "which had no async scheduling")
    return replace(f, async_scheduling=bool(value))


def async_note(f: Factors, engine) -> str | None:
    """The line ``serve`` and ``plan`` print where the step overhead runs beside the device's step."""
    if not (f.async_scheduling and (f.step_overhead_s or f.step_overhead_per_sequence_s)):
        return None
    return (f"async scheduling ({engine.display_name}'s default from v0.14.0; --no-async-scheduling before): the step "
            f"overhead ({f.step_overhead_s * 1e3:g} ms + {f.step_overhead_per_sequence_s * 1e6:g} µs per sequence) runs "
            "beside the GPU's step and adds only what outlasts it; the next step is scheduled as this one starts, so a "
            "request that arrives while others run waits for the step after next")


def for_column(f: Factors, hw, compute_key: str, experts_format: str | None = None) -> Factors:
    """``f`` for a step whose matmuls run in ``compute_key`` on ``hw``: ``compute`` is the fraction of that peak
    column (fp4, fp8, ...) that GEMMs reach: ``compute_of_mamf`` × the device's MAMF fraction where the
    column has a measured MAMF, else ``compute_by_dtype``'s where it has one, else ``compute``. Every op
    time goes through here. ``experts`` is the engine's ``experts_by_dtype`` of that column (1 without one),
    and ``experts_compute`` its ``experts_compute_by_format`` of the model's routed-expert weight format
    (``experts_format``; 1 without one)."""
    mamf = f.mamf_fraction if f.compute_of_mamf else {}
    if not (mamf or f.compute_by_dtype or f.experts_by_dtype or f.experts_compute_by_format):
        return f
    column = hw.peak_flops_key_for(compute_key)
    if column in mamf:
        compute = min(1.0, f.compute_of_mamf * mamf[column])
    else:
        compute = f.compute_by_dtype.get(column, f.compute)
    experts = f.experts_by_dtype.get(column, 1.0)
    experts_compute = f.experts_compute_by_format.get(experts_format, 1.0) if experts_format else 1.0
    if compute == f.compute and experts == f.experts and experts_compute == f.experts_compute:
        return f
    return replace(f, compute=compute, experts=experts, experts_compute=experts_compute)


#: routed-expert weight formats that an engine profile may price apart (``experts_compute_efficiency``)
EXPERTS_FORMATS = ("fp8_block", "mxfp4")


def experts_format(fmt) -> str | None:
    """The routed experts' weight format where it has a kernel path of its own (``EXPERTS_FORMATS``):
    ``fp8_block`` for FP8 expert weights with block scales (DeepSeek-V3's 128 × 128 tiles,
    ``quantization_config.weight_block_size``; the engines run them through block-scaled grouped GEMMs,
    not the per-tensor FP8 ones); ``mxfp4`` for MXFP4 expert weights (gpt-oss's checkpoints: MoE kernels of
    their own, W4A16 with the dequantisation in the GEMM on Hopper); else None (a ``--dtype fp8`` what-if
    follows the per-tensor recipe)."""
    q = getattr(fmt, "quant", None)
    if q is not None and q.method == "fp8" and any(q.block_size) and "expert" in q.targets:
        return "fp8_block"
    if q is not None and q.method == "mxfp4":
        return "mxfp4"
    return None


def _stage(f: Factors, n: int) -> Factors:
    """``f`` with only the first ``n`` op-level factors of ``FACTORS`` applied (the rest ideal)."""
    out = IDEAL
    if n >= 1:
        out = replace(out, memory_bandwidth=f.memory_bandwidth)
    if n >= 2:
        out = replace(out, compute=f.compute, gemm_ridge_exponent=f.gemm_ridge_exponent, gemm_k_half=f.gemm_k_half,
                      matmul_efficiency_by_rows=f.matmul_efficiency_by_rows,
                      matmul_efficiency_by_shape=f.matmul_efficiency_by_shape,
                      matmul_efficiency_by_out=f.matmul_efficiency_by_out, experts=f.experts,
                      experts_compute=f.experts_compute, experts_grouped_bytes_per_s=f.experts_grouped_bytes_per_s,
                      experts_grouped_overhead_s=f.experts_grouped_overhead_s)
    if n >= 3:
        out = replace(out, attention_decode=f.attention_decode, attention_prefill=f.attention_prefill,
                      attention_prefill_tiles_half=f.attention_prefill_tiles_half,
                      attention_prefill_keys_half=f.attention_prefill_keys_half,
                      attention_decode_kv_reads=f.attention_decode_kv_reads,
                      attention_decode_overhead_s=f.attention_decode_overhead_s)
    if n >= 4:
        out = replace(out, weight_only=f.weight_only, weight_only_flops_per_s=f.weight_only_flops_per_s)
    return out


def _join(c: float, m: float, p: float) -> float:
    if math.isinf(p) or c == 0 or m == 0:
        return max(c, m)
    hi = max(c, m)
    return hi * ((c / hi) ** p + (m / hi) ** p) ** (1 / p)


def rows_efficiency(table: Mapping[int, float] | None, rows: int | None) -> float:
    """The fraction of the square-GEMM peak a matmul of ``rows`` rows reaches by a calibrated
    ``table`` (rows -> fraction, ascending, the square-GEMM point included when known): 1 without a
    table or a row count; the first value at or below the first row count; log-linear in the row count
    between points; the last value beyond the last point."""
    if not table or not rows or rows < 1:
        return 1.0
    pts = sorted(table.items())
    if rows <= pts[0][0]:
        return pts[0][1]
    for (r0, e0), (r1, e1) in zip(pts, pts[1:]):
        if rows <= r1:
            w = (math.log(rows) - math.log(r0)) / (math.log(r1) - math.log(r0))
            return e0 + w * (e1 - e0)
    return pts[-1][1]


def _log_interp(points: Mapping[int, float], x: int) -> float:
    """Log-linear interpolation in ``x`` between sorted points, clamped to the first and last value."""
    pts = sorted(points.items())
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, e0), (x1, e1) in zip(pts, pts[1:]):
        if x <= x1:
            return e0 + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * (e1 - e0)
    return pts[-1][1]


def graph_node_at(table: Mapping[int, float], rows: int) -> float:
    """A calibrated ``{rows: seconds per dispatched op}`` table (``graph_node_overhead_by_rows``) at one
    step's rows: log-linear in the rows between measured counts, clamped to the ends."""
    return _log_interp(table, rows)


def shape_efficiency(by_shape: Mapping[int, Mapping[int, float]], rows_table: Mapping[int, float] | None,
                     rows: int, inner: int, *, outer: int | None = None,
                     by_out: Mapping[int, Mapping[int, float]] | None = None) -> float:
    """The fraction of the peak a matmul of ``rows`` rows and inner dimension ``inner`` reaches by a
    calibrated ``{rows: {K: fraction}}`` table: each measured row count's value at ``inner`` (log-linear
    in K, clamped), times, where ``by_out`` (``{rows: {N: fraction}}``) has that row count and the
    matmul's output width ``outer`` is known, the ratio of ``by_out``'s value at ``outer`` (log-linear in
    N, clamped) to its value at ``MATMUL_SHAPE_OUT``; then ``rows_efficiency`` over those values, with the
    rows table's square-GEMM point (fraction 1) appended when it lies beyond the measured rows."""
    from .profiles import MATMUL_SHAPE_OUT

    table = {}
    for r, row in by_shape.items():
        e = _log_interp(row, inner)
        wide = (by_out or {}).get(r)
        if outer and wide and MATMUL_SHAPE_OUT in wide:
            e = min(1.0, e * _log_interp(wide, outer) / wide[MATMUL_SHAPE_OUT])
        table[r] = e
    if rows_table:
        square = max(rows_table)
        if square > max(table) and rows_table[square] == 1.0:
            table[square] = 1.0
    return rows_efficiency(table, rows)


def attention_efficiency_at(table: Mapping[int, Mapping[int, float]], group: int, head_dim: int) -> float:
    """A calibrated ``{head_dim: {query heads per KV head: fraction of the bandwidth}}`` table at one
    attention shape: the measured head_dim nearest in log (ties: the larger), log-linear in the group
    between measured groups, clamped."""
    d = min(table, key=lambda k: (abs(math.log(k) - math.log(head_dim)), -k))
    return _log_interp(table[d], group)


def inner_dim(o, rows: int | None) -> int | None:
    """The inner dimension K of a matmul op from its own counts: ``flops = 2·n·K·ΣN``, ``act_read = n·K·a``
    and ``act_write = n·ΣN·a`` give ``K² = flops / 2n · act_read / act_write`` for ``n`` rows (any
    activation dtype ``a``); None where a count is missing."""
    if not rows or not o.flops or not o.act_read_bytes or not o.act_write_bytes:
        return None
    return max(1, round(math.sqrt(o.flops / (2 * rows) * o.act_read_bytes / o.act_write_bytes)))


def outer_dim(o, rows: int | None) -> int | None:
    """The output width ΣN of a matmul op from its own counts: ``flops = 2·n·K·ΣN``, ``act_read = n·K·a``
    and ``act_write = n·ΣN·a`` give ``ΣN² = flops / 2n · act_write / act_read`` for ``n`` rows; None where
    a count is missing."""
    if not rows or not o.flops or not o.act_read_bytes or not o.act_write_bytes:
        return None
    return max(1, round(math.sqrt(o.flops / (2 * rows) * o.act_write_bytes / o.act_read_bytes)))


def gemm_time_s(kind: str, c_s: float, m_s: float, f: Factors, rows: float | None, inner: int | None = None,
                outer: int | None = None, expert_inner: tuple | None = None) -> float:
    """The one decision of a GEMM's time by shape: ``c_s`` (FLOPs over the peak × ``f.compute``) and
    ``m_s`` (bytes over the achieved bandwidth) joined by the calibrated rows × K table for a ``matmul``
    when the factors carry one and the step's ``rows`` and the matmul's ``inner`` K are known, else by
    the calibrated rows table when the rows are known (a ``matmul``: the step's tokens; ``experts``: the
    rows each touched expert multiplies, tokens × top-k / experts touched), else by the ridge curve, the
    compute time first scaled by the inner dimension (``k_scale``: a matmul's ``inner`` K; routed experts'
    ``expert_inner``, each GEMM's K and share of the FLOPs)."""
    if kind == "matmul" and f.matmul_efficiency_by_shape and rows and inner:
        return max(c_s / shape_efficiency(f.matmul_efficiency_by_shape, f.matmul_efficiency_by_rows, rows, inner,
                                          outer=outer, by_out=f.matmul_efficiency_by_out), m_s)
    if kind in GEMM_KINDS and f.matmul_efficiency_by_rows and rows:
        return max(c_s / rows_efficiency(f.matmul_efficiency_by_rows, max(1, round(rows))), m_s)
    if f.gemm_k_half:
        dims = ((inner, 1.0),) if kind == "matmul" and inner else expert_inner if kind == "experts" else None
        c_s *= k_scale(f.gemm_k_half, dims)
    return _join(c_s, m_s, f.gemm_ridge_exponent)


def k_scale(k_half: float, dims: Iterable | None) -> float:
    """How much longer a GEMM's compute takes than at an unbounded inner dimension K: Σ share × (K +
    ``k_half``) / K over ``dims`` (each GEMM's K and its share of the op's FLOPs; 1 without them). A
    GEMM tile's main loop runs K / k_tile iterations after a fixed prologue (the pipeline fill) and before
    a fixed epilogue (the output tile's write), so its time is ``a + b·K`` and its fraction of the
    large-K rate ``K / (K + a/b)``: half at K = ``k_half``."""
    if not k_half or not dims:
        return 1.0
    return sum(share * (k + k_half) / k for k, share in dims if k > 0)


def expert_inner(spec, tp: int = 1) -> tuple | None:
    """The routed experts' GEMMs as ``((K, share of the FLOPs), ...)`` on one rank of a ``tp``-way split:
    gate and up projections multiply over the hidden size, the down projection over the expert's
    intermediate size, split ``tp`` ways (the first MoE layer's shape; None without one)."""
    moe = spec.first_moe
    if moe is None:
        return None
    first = 2 if moe.gated else 1
    return ((moe.hidden_size, first / (first + 1)), (moe.moe_intermediate_size / tp, 1 / (first + 1)))


def expert_rows(tokens: int, num_experts: int, top_k: int) -> float:
    """Rows each touched expert's GEMM multiplies in a step of ``tokens`` tokens: the ``tokens × top_k``
    routed rows over the expected distinct experts touched (``analysis.trace.expected_experts``)."""
    from planner.analysis.trace import expected_experts

    return tokens * top_k / expected_experts(num_experts, top_k, tokens)


def ops_time_s(ops: Iterable, flops_per_s: float, bytes_per_s: float, f: Factors, *, decode: bool,
               weight_only_bits: int | None = None, rows: int | None = None, floor_s: float = 0.0,
               expert_rows: float | None = None, expert_inner: tuple | None = None, launch_s: float = 0.0,
               attention_work: Mapping | None = None) -> float:
    """Σ over ops of the time under factors ``f`` (see the module docstring). ``ops`` are ``Op``s or
    collapsed ``OpGroup``s (an op and how many identical layers run it). ``rows``: the tokens each
    matmul of the step multiplies (batch × new tokens), for a calibrated rows table. ``floor_s``: the
    least each op takes (the host's launch time of a step launched op by op). ``expert_rows``: the rows
    each touched expert multiplies (``expert_rows``), for the rows table on expert GEMMs; ``expert_inner``:
    their GEMMs' inner dimensions (``expert_inner``), for ``k_scale``. ``attention_work``: ``{id(op): (tiles,
    keys)}`` of a prompt step's attention ops, for ``prefill_attention_ramp`` (``hardware.serve.StepModel.prefill``
    knows its pieces; an attention op without an entry takes no ramp)."""
    return ops_times_s(ops, flops_per_s, bytes_per_s, f, decode=decode, weight_only_bits=weight_only_bits, rows=rows,
                       floor_s=floor_s, expert_rows=expert_rows, expert_inner=expert_inner, launch_s=launch_s,
                       attention_work=attention_work)[1]


def ops_times_s(ops: Iterable, flops_per_s: float, bytes_per_s: float, f: Factors, *, decode: bool,
                weight_only_bits: int | None = None, rows: int | None = None, floor_s: float = 0.0,
                expert_rows: float | None = None, expert_inner: tuple | None = None,
                launch_s: float = 0.0, attention_work: Mapping | None = None) -> tuple[float, float]:
    """``ops_time_s`` without and with the floor, in one pass over the ops: ``(Σ n × t, Σ n × max(t, floor_s,
    launch_s × launches))``, an op's ``launches`` being the kernels a serving engine launches for it
    (``analysis.trace``; 1 unless ``f.op_launches``): ``launch_s`` is the host's time per launch in a step launched
    op by op."""
    bw = bytes_per_s * f.memory_bandwidth
    wq = f.weight_only.get(f"int{weight_only_bits}", 1.0) if weight_only_bits else 1.0
    wr = f.weight_only_flops_per_s if weight_only_bits else 0.0
    total = floored = 0.0
    for item in ops:
        o, n = (item.op, item.count) if hasattr(item, "op") else (item, 1)
        r = expert_rows if o.kind == "experts" else rows
        t = _op_time(o, flops_per_s, bw, f, decode, wq, r, expert_inner,
                     attention_work.get(id(o)) if attention_work and o.kind == "attention" else None)
        if wr and o.kind == "matmul":  # the weight-only kernel's own compute-bound rate (``for_weights``)
            t = max(t, o.flops / wr)
        total += n * t
        floored += n * max(t, floor_s, launch_s * (o.launches if f.op_launches else 1))
    return total, floored


def prefill_attention_ramp(f: Factors, work: tuple[float, float] | None) -> float:
    """The prompt attention kernel's fraction of its large-problem rate (``f.attention_prefill``) in a step:
    ``tiles / (tiles + attention_prefill_tiles_half) × keys / (keys + attention_prefill_keys_half)`` for ``work`` =
    ``(tiles, keys)``, 1 without it or with both half-points 0. A FlashAttention-style prompt kernel gives each
    thread block one (sequence, query head, 128-query block) tile: with few tiles the device's SMs idle, and a
    tile's fixed prologue and epilogue weigh against its main loop over the keys it attends. Both half-points
    are fitted on NVIDIA's measured context-attention tables (``bench/aic_attention.py``)."""
    if work is None:
        return 1.0
    tiles, keys = work
    r = 1.0
    if f.attention_prefill_tiles_half:
        r *= tiles / (tiles + f.attention_prefill_tiles_half)
    if f.attention_prefill_keys_half:
        r *= keys / (keys + f.attention_prefill_keys_half)
    return r


def prompt_keys_half(hw, dd: Mapping) -> float:
    """The device's keys half-point of the prompt attention ramp (``prefill_attention_ramp``): ``_device.yaml``
    attention_prefill_keys_half, given at the per-SM 16-bit rate attention_prefill_keys_half_at, scaled by the
    device's own per-SM rate (its bf16 peak over ``sm_count``). A tile's fixed prologue and epilogue take about the
    same time on any SM, and a key costs the tile 1 / (its SM's rate): the keys that match the fixed part grow with
    the SM's rate (NVIDIA's measured tables: 256-512 on A100 and L40S, 1,024 on Hopper, 1,024-3,072 on Blackwell).
    0 (no ramp) on a device without an SM count or a bf16 peak."""
    half, at = float(dd.get("attention_prefill_keys_half") or 0.0), float(dd.get("attention_prefill_keys_half_at") or 0.0)
    peak = hw.peak_flops_per_s.get("bf16") if hasattr(hw, "peak_flops_per_s") else None
    sms = getattr(hw, "sm_count", None)
    if not half or not at or not peak or not sms:
        return 0.0
    return half * (peak / sms) / at


def query_heads(spec, tp: int = 1) -> int | None:
    """The query heads on one rank of a ``tp``-way split (rounded up) of the model's first layer that has them
    (softmax attention or MLA), for the prompt attention kernel's tiles (``prefill_attention_ramp``); None where no
    layer has them."""
    heads = next((m.num_attention_heads for m in (layer.mixer for layer in spec.layers)
                  if isinstance(getattr(m, "num_attention_heads", None), int)), None)
    return -(-heads // tp) if heads else None


def prompt_attention_work(groups, heads: int | None, pieces) -> dict:
    """``{id(op): (tiles, keys)}`` for the attention ops of a prompt step (``ops_time_s`` attention_work). The
    step's attention runs as one varlen kernel over every piece, so its tiles are all the pieces' (sequence, query
    head, 128-query block) work items; each piece's keys are its context at the chunk's end. ``groups``: each
    piece's attention ops, in the order of ``pieces`` (``((new, cached, sequences), ...)``); ``heads``: the query
    heads on one rank (None: no ramp). A sliding-window layer's keys are taken as the whole context too (not capped
    at its window), so its ramp is the full layers'."""
    if not heads:
        return {}
    tiles = heads * sum(k * -(-n // 128) for n, _, k in pieces)
    return {id(g.op): (tiles, n + c) for gs, (n, c, _) in zip(groups, pieces) for g in gs}


def _op_time(o, flops_per_s: float, bw: float, f: Factors, decode: bool, wq: float, rows: float | None,
             expert_inner: tuple | None = None, attention_work: tuple[float, float] | None = None) -> float:
    kind = o.kind
    if kind in GEMM_KINDS:
        # routed experts: the engine's fraction of the compute rate for their weight format (``experts_compute``)
        c = o.flops / (flops_per_s * f.compute * (f.experts_compute if kind == "experts" else 1.0))
        if kind == "experts" and f.experts_grouped_bytes_per_s:  # calibrated grouped experts (verify on a GPU)
            return max(c, f.experts_grouped_overhead_s + o.weight_bytes / f.experts_grouped_bytes_per_s
                       + (o.bytes - o.weight_bytes) / bw)
        m = o.weight_bytes / (bw * wq) + (o.bytes - o.weight_bytes) / bw
        inner = inner_dim(o, rows) if kind == "matmul" and (f.matmul_efficiency_by_shape or f.gemm_k_half) else None
        outer = outer_dim(o, rows) if inner and f.matmul_efficiency_by_out else None
        t = gemm_time_s(kind, c, m, f, rows, inner, outer, expert_inner)
        return t / f.experts if kind == "experts" else t
    if kind == "attention":
        if decode:
            c = o.flops / (flops_per_s * f.compute)
            # the decode kernel's fraction is of the achieved bandwidth ``bw``; together never above the peak
            e_attn = min(f.attention_decode, 1.0 / f.memory_bandwidth)
            m = (o.bytes + (f.attention_decode_kv_reads - 1) * o.kv_read_bytes) / (bw * e_attn) \
                + f.attention_decode_overhead_s
        else:
            c = o.flops / (flops_per_s * f.compute * f.attention_prefill * prefill_attention_ramp(f, attention_work))
            m = o.bytes / bw
        return _join(c, m, f.gemm_ridge_exponent)
    return max(o.flops / (flops_per_s * f.compute), o.bytes / bw)


def step_kernels(ops: Iterable) -> int:
    """Σ of the ops' ``kernels`` (an ``OpGroup`` counts its op once per layer it stands for)."""
    return sum((item.count * item.op.kernels) if hasattr(item, "op") else item.kernels for item in ops)


def launch_time_s(f: Factors, ops: Iterable, kernels: int | None, device_s: float) -> float:
    """Seconds the host's kernel launches add to a step whose expected device time is ``device_s``
    (see the module docstring: ``serial``, ``overlapped``, ``graph``, ``none``)."""
    mode = f.kernel_launches
    if mode == "none" or not f.kernel_launch_s:
        return 0.0
    if mode == "graph":
        return f.kernel_launch_s
    host = (step_kernels(ops) if kernels is None else kernels) * f.kernel_launch_s
    if mode == "serial":
        return host
    if mode == "overlapped":
        return max(0.0, host - device_s)
    raise ValueError(f"kernel_launches {mode!r} is not one of {', '.join(KERNEL_LAUNCHES)}")


def graph_nodes_s(f: Factors, ops: Iterable, kernels: int | None) -> float:
    """Seconds the nodes of a CUDA-graph replay add (``kernel_launches: graph``): ``kernels`` (None: Σ
    of the ops' ``kernels``) × ``graph_node_s``; 0 in any other launch mode."""
    if f.kernel_launches != "graph" or not f.graph_node_s:
        return 0.0
    return (step_kernels(ops) if kernels is None else kernels) * f.graph_node_s


@frozen
class StepCost:
    ideal_s: float
    expected_s: float
    parts: Mapping[str, float] = field(hash=False)  # seconds each factor adds; Σ = expected − ideal
    allreduce_calls: int = 0

    def __add__(self, other: "StepCost") -> "StepCost":
        return StepCost(self.ideal_s + other.ideal_s, self.expected_s + other.expected_s,
                        {k: self.parts.get(k, 0.0) + other.parts.get(k, 0.0) for k in FACTORS},
                        self.allreduce_calls + other.allreduce_calls)

    def scaled(self, n: float) -> "StepCost":
        return StepCost(self.ideal_s * n, self.expected_s * n, {k: v * n for k, v in self.parts.items()},
                        int(round(self.allreduce_calls * n)))


ZERO = StepCost(0.0, 0.0, {k: 0.0 for k in FACTORS}, 0)


def step_cost(ops: list, hw, compute_key: str, f: Factors, *, decode: bool, sequences: int,
              allreduce_bytes: int = 0, allreduce_calls: int = 0, weight_only_bits: int | None = None,
              detail: bool = True, rows: int | None = None, kernels: int | None = None, graph: bool = True,
              expert_rows: float | None = None, expert_inner: tuple | None = None,
              experts_format: str | None = None, allreduce_link: tuple[float, float] | None = None,
              ideal_ops_s: float | None = None, held_tokens: int = 0,
              attention_work: Mapping | None = None) -> StepCost:
    """Ideal and expected seconds of one rank's step (``ops`` already sharded), and each factor's share.
    ``graph=False``: the step is launched op by op (not a CUDA-graph replay) and pays the launches.
    ``detail=False`` skips the intermediate stages (the op-level parts are then lumped into the first
    factor; the totals are the same). ``kernels``: the kernels the step launches, for the engine's
    ``kernel_launches`` (None: Σ of the ops' ``kernels``). ``experts_format``: the routed experts' weight
    format (``experts_format``), for the engine's ``experts_compute_by_format``. ``allreduce_link``: ``(bytes/s,
    seconds per call)`` of a tensor-parallel group that spans nodes (``hardware.serve.StepModel``: the network
    between nodes and its ring's 2(n − 1) steps of latency, as ``hardware.comm.collective_s`` prices a planned
    layout's); None: the device's interconnect and the engine's fitted per-call latency. ``ideal_ops_s``: the ops'
    roofline time (``ops_time_s`` under ``IDEAL``) where the caller kept it from an earlier call on the same ops,
    device and compute column (it does not depend on ``f``). ``held_tokens``: the tokens the step's sequences hold
    (prompt + output so far), for the engine's ``sampler_token_s``. ``attention_work``: ``{id(op): (tiles, keys)}``
    of a prompt step's attention ops (``ops_time_s``), for the prompt attention kernel's ramp."""
    flops_per_s = hw.peak_flops_for(compute_key)
    bytes_per_s = hw.memory_bandwidth_bytes_per_s
    f = for_column(f, hw, compute_key, experts_format)
    floor, launch = op_floor_s(f, graph=graph)
    # the last stage applies every op-level factor: its op times are f's, so one pass gives it and the floored sum
    stage4, floored = ops_times_s(ops, flops_per_s, bytes_per_s, f, decode=decode, weight_only_bits=weight_only_bits,
                                  rows=rows, floor_s=floor, expert_rows=expert_rows, expert_inner=expert_inner,
                                  launch_s=launch, attention_work=attention_work)
    stage = {n: ops_time_s(ops, flops_per_s, bytes_per_s, _stage(f, n), decode=decode, rows=rows,
                           expert_rows=expert_rows, expert_inner=expert_inner, attention_work=attention_work)
             for n in (range(4) if detail else (0,)) if n or ideal_ops_s is None}
    if ideal_ops_s is not None:  # (stage 0 is the roofline: _stage(f, 0) is IDEAL whatever f)
        stage[0] = ideal_ops_s
    stage[4] = stage4
    if detail:
        parts = {FACTORS[i]: stage[i + 1] - stage[i] for i in range(4)}
    else:
        parts = {FACTORS[0]: stage[4] - stage[0], FACTORS[1]: 0.0, FACTORS[2]: 0.0, FACTORS[3]: 0.0}
    stages = [stage[0]]
    ar_ideal = ar_bw = 0.0
    link_bw, call_s = allreduce_link if allreduce_link else (hw.interconnect_bytes_per_s, f.allreduce_latency_s)
    if allreduce_bytes:
        if not link_bw:
            from planner.analysis.errors import OptionError

            raise OptionError(f"hardware profile '{hw.name}' has no interconnect bandwidth for tensor parallelism",
                              "add 'interconnect: 450 GB/s' to the profile or use --tp 1")
        ar_ideal = allreduce_bytes / link_bw
        ar_bw = allreduce_bytes / (link_bw * f.interconnect)
    parts["all-reduce bandwidth"] = ar_bw - ar_ideal
    parts["all-reduce latency"] = allreduce_calls * call_s if allreduce_bytes else 0.0
    launches = launch_time_s(f, ops, kernels, stage[4] + ar_bw + parts["all-reduce latency"])
    # (0 where neither floor applies: the floored sum is then the same sum)
    parts["kernel launches"] = floored - stage[4]
    if graph:  # a step launched op by op is not a replay: its nodes cost nothing as such
        parts["kernel launches"] += graph_nodes_s(f, ops, kernels)
    # every part so far is device time (the step overhead and request overhead are not in ``parts`` yet)
    parts["step overhead"] = host_step_overhead_s(f, sequences, stages[0] + ar_ideal + sum(parts.values()),
                                                  held_tokens=held_tokens) + launches
    parts["request overhead"] = 0.0
    ideal = stages[0] + ar_ideal
    expected = ideal + sum(parts.values())
    return StepCost(ideal, expected, parts, allreduce_calls if allreduce_bytes else 0)


__all__ = ["EXPERTS_FORMATS", "FACTORS", "allreduce_latency_for", "allreduce_latency_source", "async_note", "KERNEL_LAUNCHES", "OP_LAUNCHES", "Factors", "IDEAL", "graph_node_at", "graph_nodes_s", "host_step_overhead_s", "launch_time_s", "op_floor_s", "step_kernels", "with_async_scheduling",
           "StepCost", "ZERO", "device_defaults", "expert_inner", "expert_rows", "experts_format", "factors_for", "for_column", "for_model", "for_weights", "gemm_time_s",
           "weight_only_compute_rates", "weight_only_compute_source", "graphed", "prefill_graph_cap", "uses_mla",
           "inner_dim", "k_scale", "prefill_attention_ramp", "prompt_attention_work", "prompt_keys_half", "query_heads", "outer_dim", "attention_efficiency_at", "shape_efficiency",
           "ops_time_s", "ops_times_s", "rows_efficiency", "step_cost"]
