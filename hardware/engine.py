"""Serving engines as data: how vLLM, SGLang and TensorRT-LLM size their memory, and the engine factors
of the expected step time. Profiles live in ``profiles/engines/<name>.yaml`` (every term carries its
source there); this module reads them and applies the memory accounting each engine's code does.

Memory of one GPU of a replica (``engine_memory``), in the engine's own order:

- ``vllm`` (``budget: total_fraction``): ``requested = gpu_memory_utilization × visible``;
  ``KV = requested − weights − activation peak of the profile run − non-torch memory``;
- ``sglang`` (``static_fraction``): ``KV = mem_fraction_static × free_before_weights − weights``,
  where ``free_before_weights = visible − non-torch``;
- ``trtllm`` (``free_fraction``): ``KV = free_gpu_memory_fraction × (visible − non-torch − weights −
  activations − graphs)``;
- ``ideal`` (``all``): ``KV = device memory − weights``.

``visible`` is the device's memory as ``nvidia-smi`` reports it (the hardware profile's ``memory``)
minus the driver's reservation, i.e. what ``cudaMemGetInfo`` calls total. The KV pool holds
``⌊KV / (bytes per token per GPU)⌋`` tokens, rounded down to the engine's block size; that is
``kv_capacity_tokens`` of the replica (every rank holds its shard of the same tokens).

Weights are sized as the engine loads them: the checkpoint's mixed precision (``analysis.weights``),
MXFP4 expert padding, and the RoPE cos/sin cache. Standard library and yaml only.
"""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Any, Mapping

from planner.analysis.records import frozen
from planner.analysis.errors import HardwareError, OptionError, short

from . import units

ENGINES = ("vllm", "sglang", "trtllm", "ideal")
#: engines with a profile for the benchmark of published figures only (not a serving engine)
BENCH_ENGINES = ("gptfast", "vllm-v0", "vllm-v0-early")
#: the eager/graph torch runtime ``planner verify`` times (its prediction's engine; not a serving engine)
VERIFY_ENGINES = ("torch-cpu-eager", "torch-cuda-eager", "torch-cuda-graphs")
DEFAULT_ENGINE = "vllm"
BUDGETS = ("total_fraction", "static_fraction", "free_fraction", "all")


# ---- reading profiles ----------------------------------------------------------------------------


def _engines_folder():
    from planner.profiles import data_dir

    return data_dir("engines")


def _read_yaml(name: str, _children: tuple = ()) -> Any:
    """The profile's data. ``inherits: OTHER`` (another shipped engine profile) takes OTHER's data and
    replaces what this file gives: mappings key by key, at every depth; anything else (a number, a list
    of rules) whole. (``load_engine`` names a profile after its file, whatever the data says.)"""
    from .profiles import _read_text, _safe_load

    entry = _engines_folder().joinpath(f"{name}.yaml")
    where = f"engine profile {name}.yaml"
    if not entry.is_file():
        raise HardwareError(f"{where} not found", "reinstall planner; the engine profiles ship with it")
    d = _safe_load(_read_text(entry.read_bytes, where), where)
    if not isinstance(d, Mapping) or "inherits" not in d:
        return d
    parent = d["inherits"]
    shipped = ENGINES + BENCH_ENGINES + VERIFY_ENGINES
    if parent not in shipped or parent == name or parent in _children:
        raise HardwareError(f"{where}: inherits {parent!r} is not another engine profile (or it comes back to "
                            f"{name})", f"name one of: {', '.join(e for e in shipped if e != name)}")
    own = {k: v for k, v in d.items() if k != "inherits"}
    return _overlay(_read_yaml(parent, _children + (name,)), own)


def _overlay(base: Any, over: Any) -> Any:
    """``over`` on top of ``base``: two mappings merge key by key (recursively); otherwise ``over``."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = _overlay(base[k], v) if k in base else v
        return out
    return over


def _get(data: Mapping, key: str, where: str) -> Any:
    if not isinstance(data, Mapping) or key not in data:
        raise HardwareError(f"{where}: missing field '{key}'", "see profiles/engines/vllm.yaml for the fields")
    return data[key]


#: the checkpoint methods a weight-only kernel term may name (``analysis.spec.QuantSpec.method``)
WEIGHT_ONLY_METHODS = ("awq", "gptq", "compressed", "fp_group", "bnb4", "bnb8")


def _weight_only_compute(raw: Any, w: str) -> dict:
    """``timing.weight_only_compute``: ``{int4: {flops_per_sm_clock: 929, methods: [awq]}}`` checked."""
    hint = "e.g. {int4: {flops_per_sm_clock: 929, methods: [awq]}}"
    if not isinstance(raw, Mapping):
        raise HardwareError(f"{w}: timing.weight_only_compute must map a weight format to its kernel's rate", hint)
    out = {}
    for fmt, v in raw.items():
        if fmt not in ("int4", "int8"):
            raise HardwareError(f"{w}: timing.weight_only_compute: unknown weight format {short(fmt, 40)!r}",
                                "use int4 or int8")
        if not isinstance(v, Mapping) or set(v) != {"flops_per_sm_clock", "methods"}:
            raise HardwareError(f"{w}: timing.weight_only_compute.{fmt} must give flops_per_sm_clock and methods", hint)
        rate, methods = v["flops_per_sm_clock"], v["methods"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or not 0 < rate <= 1e5:
            raise HardwareError(f"{w}: timing.weight_only_compute.{fmt}.flops_per_sm_clock = {short(rate, 40)} is not "
                                "a number in (0, 100000]", hint)
        if not isinstance(methods, list) or not all(m in WEIGHT_ONLY_METHODS for m in methods):
            raise HardwareError(f"{w}: timing.weight_only_compute.{fmt}.methods must be a list among "
                                f"{', '.join(WEIGHT_ONLY_METHODS)}", hint)
        out[str(fmt)] = (float(rate), tuple(methods))
    return out


def _bytes(v: Any, f: str, where: str) -> int:
    return units.parse_bytes(v, field=f, where=where, allow_zero=True)


def _time(v: Any, f: str, where: str) -> float:
    return units.parse_time(v, field=f, where=where, allow_zero=True)


def _frac(v: Any, f: str, where: str) -> float:
    return units.parse_fraction(v, field=f, where=where)


# the decode attention kernel's fraction of the device's achieved memory-bound bandwidth (hardware/expected.py)
# may pass 1: a long streaming KV read outruns the weight GEMVs that fraction describes. 1.25 bounds the field
# (the peak at a device fraction of 0.8); expected.py holds the product with the device's fraction at 1
ATTENTION_DECODE_MAX = 1.25


def _number(v: Any, f: str, where: str, *, minimum: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < minimum:
        raise HardwareError(f"{where}: field '{f}' = {v!r} is not a number >= {minimum}", "fix the engine profile")
    return float(v)


def _whole(v: Any, f: str, where: str, *, minimum: int = 1, hint: str = "fix the engine profile") -> int:
    """A whole number >= ``minimum``, nothing else (2.5 would not read as 2)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise HardwareError(f"{where}: field '{f}' = {v!r} is not a whole number >= {minimum}", hint)
    return v


def _flag(v: Any, f: str, where: str) -> bool:
    """A YAML boolean (true / false), nothing else: a quoted "false" would read as true."""
    if not isinstance(v, bool):
        raise HardwareError(f"{where}: field '{f}' = {v!r} is not true or false", "fix the engine profile")
    return v


#: how an engine's scheduler admits a request against the KV pool (``EngineProfile.kv_admission``)
KV_ADMISSION = ("whole", "on_demand")


def _choice(v: Any, f: str, where: str, allowed: tuple[str, ...]) -> str:
    """One of ``allowed``, nothing else."""
    if not isinstance(v, str) or v not in allowed:
        raise HardwareError(f"{where}: field '{f}' = {v!r} is not one of {', '.join(allowed)}", "fix the engine profile")
    return v


def _batch_wait(v: Any, where: str) -> tuple[int, float] | None:
    """``scheduler.batch_wait``: ``{timeout_iters: N, max_tokens_ratio: R}`` (the engine's defaults), or absent."""
    if v is None:
        return None
    if not isinstance(v, dict) or set(v) != {"timeout_iters", "max_tokens_ratio"}:
        raise HardwareError(f"{where}: scheduler.batch_wait must map timeout_iters and max_tokens_ratio",
                            "fix the engine profile")
    iters = _number(v["timeout_iters"], "scheduler.batch_wait.timeout_iters", where)
    ratio = _number(v["max_tokens_ratio"], "scheduler.batch_wait.max_tokens_ratio", where)
    if iters != int(iters) or ratio > 1:
        raise HardwareError(f"{where}: scheduler.batch_wait needs a whole timeout_iters and a max_tokens_ratio "
                            "in [0, 1]", "fix the engine profile")
    return int(iters), ratio


def _by_device(tim: Mapping, key: str, where: str, example: str, parse) -> dict[str, float]:
    """``timing.<key>``: a map of hardware profile -> figure (none: empty), each figure read by ``parse(value,
    field)`` (the per-device decode and prefill attention fractions)."""
    d = tim.get(key, {})
    if not isinstance(d, Mapping):
        raise HardwareError(f"{where}: timing.{key} must map a hardware profile to a fraction", example)
    return {str(k): parse(v, f"{key}.{k}") for k, v in d.items()}


def _ratio(v: Any, f: str, where: str, *, maximum: float) -> float:
    """A number in (0, maximum]: ``_number``'s checks, then the bounds."""
    x = _number(v, f, where)
    if not 0 < x <= maximum:
        raise HardwareError(f"{where}: field '{f}' = {v!r} is not in (0, {maximum:g}]", "fix the engine profile")
    return x


@frozen
class Rule:
    """One row of a default that depends on the device (first matching row wins)."""

    value: float
    min_memory_bytes: int | None = None
    max_memory_bytes: int | None = None  # the row applies below this memory
    exclude: tuple[str, ...] = ()

    def matches(self, hw) -> bool:
        if self.min_memory_bytes is not None and hw.memory_bytes < self.min_memory_bytes:
            return False
        if self.max_memory_bytes is not None and hw.memory_bytes >= self.max_memory_bytes:
            return False
        return not any(x in hw.name for x in self.exclude)


def _rules(rows: Any, f: str, where: str) -> tuple[Rule, ...]:
    if not isinstance(rows, list) or not rows:
        raise HardwareError(f"{where}: field '{f}' must be a list of rules", "e.g. [{value: 8192}]")
    out = []
    for r in rows:
        if not isinstance(r, Mapping) or "value" not in r:
            raise HardwareError(f"{where}: a rule of '{f}' has no value", "e.g. {min_memory: 70 GiB, value: 8192}")
        out.append(Rule(_number(r["value"], f, where, minimum=1),
                        None if r.get("min_memory") is None else _bytes(r["min_memory"], f, where),
                        None if r.get("max_memory") is None else _bytes(r["max_memory"], f, where),
                        tuple(str(x).lower() for x in r.get("exclude") or ())))
    return tuple(out)


def _graph_rules(v: Any, where: str) -> tuple[Rule, ...]:
    """``cuda_graphs.max_tokens``: a number (0: no graphs), or rules by device memory like the scheduler's."""
    if isinstance(v, list):  # each rule's value at least 1 (_rules)
        return _rules(v, "cuda_graphs.max_tokens", where)
    return (Rule(_number(v, "cuda_graphs.max_tokens", where, minimum=0)),)


def _prefill_graph_max(v: Any, f: str, where: str) -> int | None:
    """``cuda_graphs.prefill_max_tokens`` / ``prefill_max_tokens_mla``: a token count (0: no prompt graphs), ``all``
    (every prompt step), or absent (None)."""
    if v is None:
        return None
    if v == "all":
        return 1 << 30
    return _whole(v, f, where, minimum=0, hint="give a number of tokens, or 'all'")


def _pick(rules: tuple[Rule, ...], hw) -> int:
    for r in rules:
        if r.matches(hw):
            return int(r.value)
    return int(rules[-1].value)


@frozen
class FractionRow:
    """SGLang's default mem_fraction_static: ``(gpu_mem − reserved) / gpu_mem`` by memory class."""

    below_bytes: int | None
    reserved_bytes: int
    reserved_per_gpu_bytes: int


@frozen
class EPComm:
    """How the engine's expert-parallel library moves the MoE all-to-all (the profile's optional
    ``expert_parallel`` block; without one, ``hardware.comm`` prices it as a flat ring all-to-all of
    activation-dtype copies after the compute). Sizes are per element of a routed token's hidden vector;
    a ``dispatch_scale_group`` of ``g`` adds one ``dispatch_scale_bytes`` scale per ``g`` channels."""

    library: str
    dispatch_bytes_per_element: float
    dispatch_scale_group: int  # channels per quantisation scale (0: no scales)
    dispatch_scale_bytes: int
    combine_bytes_per_element: float
    prefill_hierarchical: bool  # a token crosses the network once per destination node, then NVLink
    decode_hierarchical: bool
    direct: bool  # every peer written at once: one link latency per call, not n - 1 ring steps
    overlap: str  # "none" | "two_batch": communication overlapped with the other micro-batch's compute

    def copy_bytes(self, hidden: int, *, dispatch: bool) -> float:
        """Bytes of one routed token copy on the wire: dispatch (with its scales) or combine."""
        if not dispatch:
            return hidden * self.combine_bytes_per_element
        scales = -(-hidden // self.dispatch_scale_group) * self.dispatch_scale_bytes if self.dispatch_scale_group else 0
        return hidden * self.dispatch_bytes_per_element + scales


EP_OVERLAPS = ("none", "two_batch")
# ``sliding_window.default`` of an engine profile: whether it applies a model config's sliding window
SLIDING_WINDOW = ("applied", "ignored")


def _ep_comm(d: Any, where: str) -> EPComm | None:
    if d is None:
        return None
    if not isinstance(d, Mapping):
        raise HardwareError(f"{where}: expert_parallel must be a mapping", "see profiles/engines/sglang.yaml")
    w = f"{where} expert_parallel"
    overlap = str(d.get("overlap", "none"))
    if overlap not in EP_OVERLAPS:
        raise HardwareError(f"{w}: overlap {overlap!r} is not one of {', '.join(EP_OVERLAPS)}", "fix the engine profile")
    kernels = {}
    for phase in ("prefill", "decode"):
        k = _get(d, phase, w)
        if not isinstance(k, Mapping) or not isinstance(k.get("hierarchical"), bool):
            raise HardwareError(f"{w}: {phase}.hierarchical must be true or false", "fix the engine profile")
        kernels[phase] = k["hierarchical"]
    direct = d.get("direct", False)
    if not isinstance(direct, bool):
        raise HardwareError(f"{w}: direct must be true or false", "fix the engine profile")
    return EPComm(
        library=str(_get(d, "library", w)),
        dispatch_bytes_per_element=_number(_get(d, "dispatch_bytes_per_element", w), "dispatch_bytes_per_element", w,
                                           minimum=0.125),
        dispatch_scale_group=int(_number(d.get("dispatch_scale_group", 0), "dispatch_scale_group", w)),
        dispatch_scale_bytes=int(_number(d.get("dispatch_scale_bytes", 0), "dispatch_scale_bytes", w)),
        combine_bytes_per_element=_number(_get(d, "combine_bytes_per_element", w), "combine_bytes_per_element", w,
                                          minimum=0.125),
        prefill_hierarchical=kernels["prefill"], decode_hierarchical=kernels["decode"], direct=direct, overlap=overlap)


@frozen
class EngineProfile:
    name: str
    display_name: str
    version: str
    budget: str
    fraction: float | None  # default cap (None: from fraction_table)
    fraction_table: tuple[FractionRow, ...]
    driver_reserved_bytes: int
    non_torch_single_bytes: int
    non_torch_multi_gpu_bytes: int
    act_hidden_copies: float
    act_intermediate_copies: float
    act_sampler_copies: float
    cuda_graph_bytes: int
    cuda_graph_in_budget: bool
    block_size: int
    rope_cache: bool
    mxfp4_pad_hidden: int
    mxfp4_pad_intermediate: int
    kv_dtypes: tuple[str, ...]
    mla_fp8: Mapping[str, int] | None
    fp32_served_as: str | None
    max_num_batched_tokens_rules: tuple[Rule, ...]
    max_num_seqs_rules: tuple[Rule, ...]
    step_overhead_s: float
    step_overhead_per_sequence_s: float
    attention_decode_efficiency: float
    attention_prefill_efficiency: float
    weight_only_efficiency: Mapping[str, float] = field(hash=False)
    # host seconds per token the step's sequences hold (prompt + output so far) that the engine's sampler copies
    # into padded token tensors every step (``timing.sampler_token_cost``; ``hardware.expected.Factors.sampler_token_s``);
    # 0: none copied
    sampler_token_cost_s: float = 0.0
    # per peak column (fp4, ...): the fraction of the step model's rate the engine's MoE kernels reach (1: all)
    experts_efficiency: Mapping[str, float] = field(hash=False, default_factory=dict)
    # per routed-expert weight format (``hardware.expected.EXPERTS_FORMATS``) and hardware profile: the fraction
    # of the compute rate the engine's MoE GEMMs reach for that format on that device (none listed: all)
    experts_compute_efficiency: Mapping[str, Mapping[str, float]] = field(hash=False, default_factory=dict)
    # per weight-only format (``int4``): the FLOP per streaming multiprocessor per clock the engine's weight-only
    # kernel reaches where a dense GEMM is compute-bound, and the checkpoint methods (``awq``, ``gptq``, ...) it runs
    # for (``timing.weight_only_compute``; ``hardware.expected.Factors.weight_only_flops_per_s``); none: not priced
    weight_only_compute: Mapping[str, tuple[float, tuple[str, ...]]] = field(hash=False, default_factory=dict)
    # per hardware profile: the decode attention kernel's fraction of the achieved bandwidth on that device, in
    # place of ``attention_decode_efficiency`` there (``timing.attention_decode_efficiency_by_device``)
    attention_decode_by_device: Mapping[str, float] = field(hash=False, default_factory=dict)
    # per hardware profile: the prefill attention kernel's fraction of the achieved GEMM rate on that device, in
    # place of ``attention_prefill_efficiency`` there (``timing.attention_prefill_efficiency_by_device``)
    attention_prefill_by_device: Mapping[str, float] = field(hash=False, default_factory=dict)
    kernel_launches: str = "none"  # hardware.expected.KERNEL_LAUNCHES: how the host launches kernels
    # optional timing terms (0 / always graphed when a profile leaves them out)
    launch_overhead_per_op_s: float = 0.0
    # how many launches of that cost an op takes in a step launched op by op (``OP_LAUNCHES``): ``serving`` its
    # ``Op.launches`` (the kernels a Python serving engine's fused implementation launches for it, counted from
    # SGLang's prompt path), ``one`` one per op (TensorRT-LLM's engines fuse the quantization into the GEMM)
    op_launches: str = "one"
    min_op_time_s: float = 0.0
    # the largest step (tokens) the engine replays as a CUDA graph: one value, or rules by device memory
    cuda_graph_max_tokens_rules: tuple[Rule, ...] = (Rule(1 << 30),)
    cuda_graph_prefill: bool = True
    # prompt steps' own graph limits (``cuda_graphs.prefill_*``; SGLang's piecewise prefill graphs): the largest
    # prompt step replayed (None: ``cuda_graph_max_tokens``'s; 1 << 30 written ``all``), the cap for models with
    # MLA attention, the device vendors that capture them (empty: all), and the models that never do (their
    # ``model_type``, or ``multimodal``)
    cuda_graph_prefill_max_tokens: int | None = None
    cuda_graph_prefill_max_tokens_mla: int | None = None
    cuda_graph_prefill_vendors: tuple[str, ...] = ()
    cuda_graph_prefill_exclude: tuple[str, ...] = ()
    # prompt graphs only where the replica is tensor-parallel alone (no attention DP, pipeline or expert
    # parallelism): SGLang turns them off for each of those (``cuda_graphs.prefill_tp_only``)
    cuda_graph_prefill_tp_only: bool = False
    request_overhead_s: float = 0.0
    server_overhead_s: float = 0.0
    # the fixed cost of one tensor-parallel all-reduce call on this engine (its kernels and what a TP layer
    # adds around them), where it differs from the device default (``_device.yaml`` allreduce_latency);
    # None: the device's. A hardware profile's own figure (measured) still wins (``factors_for``).
    allreduce_latency_s: float | None = None
    # non-torch memory at tp > 1 on the platforms where NCCL uses NVLink SHARP (NVLS) buffers (None: the
    # same as non_torch_multi_gpu_bytes everywhere)
    non_torch_multi_gpu_nvls_bytes: int | None = None
    nvls_platforms: tuple[str, ...] = ()
    expert_parallel: EPComm | None = None  # the EP library's all-to-all (None: flat ring, activation dtype)
    # multi-step scheduling: decode steps per scheduling round (vLLM V0's --num-scheduler-steps; None: the
    # engine has no such setting)
    num_scheduler_steps: int | None = None
    # asynchronous scheduling: the scheduler builds step n + 1 while the device runs step n, so the
    # step overhead costs only what of it outlasts the step's device time (``Factors.async_scheduling``);
    # None: the engine has no such setting (its fitted step overhead is what a step pays)
    async_scheduling: bool | None = None
    # delayed batching of new prompts (TensorRT-LLM's PyTorch backend: ``batch_wait_timeout_iters``,
    # ``batch_wait_max_tokens_ratio``): the engine's defaults ``(iterations, ratio)``, both 0 (off); None:
    # the engine has no such setting (``hardware.serve.batch_wait_of``)
    batch_wait: tuple[int, float] | None = None
    # how often the scheduler takes new requests off its socket, in decode steps (SGLang's
    # --scheduler-recv-interval, default 1: every loop; ``hardware.serve.run_steps`` recv_interval); None: the
    # engine has no such setting
    recv_interval: int | None = None
    # a step that can take a prompt runs prompts alone, the decoding requests waiting for it (SGLang's "Run
    # prefill first if possible"); False: prompts and decodes share a step (chunked prefill, in-flight batching)
    prefill_first: bool = False
    # how the scheduler admits a request against the KV pool (KV_ADMISSION): ``whole``, it reserves the request's
    # whole sequence (prompt and every output token) when it admits it (TensorRT-LLM's default capacity policy,
    # GUARANTEED_NO_EVICT); ``on_demand``, it allocates blocks as the tokens come and preempts a running request
    # when none is left (vLLM), so that a running request holds on average its prompt and half its output.
    # serve's step-by-step paths admit by it (hardware.serve.run_steps: whole sequences, or the prompt with
    # vLLM's preemption simulated) and its static batches are sized by it (hardware.serve.held_output_of); plan's
    # request simulation admits by it (hardware.simulate.Scheduler.reserve_whole, or vLLM's preemption)
    kv_admission: str = "whole"
    # whether the engine caches prefixes by default (vLLM V1's automatic prefix caching): with ``on_demand``, a
    # preempted request's recompute reads back the blocks of its prefix that are still cached
    # (hardware.serve.run_steps' prefix_cache)
    prefix_caching: bool = False
    # whether the engine applies a model config's sliding window (``sliding_window.default``: applied or
    # ignored), and the model types whose window it applies where it ignores the others' (``applied_for``)
    sliding_window: str = "applied"
    sliding_window_applied_for: tuple[str, ...] = ()
    sliding_window_setting: str = ""  # the engine setting that would apply the window where it is ignored
    # checkpoint parts the engine does not load, by the model's ``model_type``: tensor name prefixes
    # (``memory.unloaded``; vLLM's TPU backend leaves Gemma 4's audio tower out)
    unloaded: Mapping[str, tuple[str, ...]] = field(hash=False, default_factory=dict)
    # the memory accounting on another device vendor's platform (``memory.platforms``: vLLM on TPU runs the
    # tpu-inference backend, which sizes its KV cache its own way), by vendor in lower case; ``on`` picks it
    platform_memory: Mapping[str, "EngineProfile"] = field(hash=False, default_factory=dict)
    # how the engine picks its KV page (block) size where it is not one number (``memory.page_size``): ``fixed``
    # (``block_size``), or ``tpu_inference`` (``tpu_page_size``: by max_model_len and max_num_seqs)
    page_size: str = "fixed"

    @property
    def reserves_whole(self) -> bool:
        """Whether the scheduler admits a request only where the pool holds its whole sequence (``kv_admission:
        whole``): serve sizes its batches by the whole sequence (hardware.serve.held_output_of) and plan's request
        simulation queues instead of preempting (hardware.simulate.Scheduler.reserve_whole)."""
        return self.kv_admission == "whole"

    def block_size_for(self, max_model_len: int, max_num_seqs: int) -> int:
        """The KV page (block) size the engine uses for these limits (``page_size``)."""
        if self.page_size == "tpu_inference":
            return tpu_page_size(max_model_len, max_num_seqs)
        return self.block_size

    def on(self, hw) -> "EngineProfile":
        """This profile as it sizes memory on ``hw``: its ``memory.platforms`` entry for the device's vendor
        (the same engine's other backend: vLLM on a TPU), else itself. Only memory terms differ."""
        return self.platform_memory.get(_vendor_key(hw), self)

    def applies_sliding_window(self, model_type: str) -> bool:
        """Whether this engine caches and attends to only a sliding-window layer's window for ``model_type``."""
        return self.sliding_window == "applied" or model_type in self.sliding_window_applied_for

    def default_fraction(self, hw, tp: int) -> float:
        if self.fraction is not None:
            return self.fraction
        mem = hw.memory_bytes
        for row in self.fraction_table:
            if row.below_bytes is None or mem < row.below_bytes:
                reserved = row.reserved_bytes + tp * row.reserved_per_gpu_bytes
                return round((mem - reserved) / mem, 3)
        raise AssertionError("fraction_table has no open-ended row")

    def max_num_batched_tokens(self, hw) -> int:
        return _pick(self.max_num_batched_tokens_rules, hw)

    def max_num_seqs(self, hw) -> int:
        return _pick(self.max_num_seqs_rules, hw)

    def cuda_graph_max_tokens(self, hw) -> int:
        """The largest step (batch × new tokens) this engine replays as a CUDA graph on ``hw``."""
        return _pick(self.cuda_graph_max_tokens_rules, hw)

    def non_torch_bytes(self, tp: int, hw=None) -> int:
        """Memory outside PyTorch's allocator that the engine counts (CUDA/cuBLAS workspaces; at tp > 1 the
        NCCL and all-reduce buffers, larger where NCCL sets up NVLink SHARP buffers on ``hw``'s platform)."""
        if tp == 1:
            return self.non_torch_single_bytes
        if self.non_torch_multi_gpu_nvls_bytes is not None and hw is not None and hw.name in self.nvls_platforms:
            return self.non_torch_multi_gpu_nvls_bytes
        return self.non_torch_multi_gpu_bytes


def load_engine(name: str | None) -> EngineProfile:
    """The engine profile ``name`` (vllm, sglang, trtllm, ideal); ``OptionError`` for any other."""
    key = (DEFAULT_ENGINE if name is None else name).strip().lower()
    if key not in ENGINES + BENCH_ENGINES + VERIFY_ENGINES:  # ('' too: an empty --engine is not the default)
        raise OptionError(f"unknown --engine {short(name, 60)}", f"choose one of: {', '.join(ENGINES)}")
    d = _read_yaml(key)
    w = f"engine profile {key}.yaml"
    mem = _get(d, "memory", w)
    platforms = mem.get("platforms") if isinstance(mem, Mapping) else None
    if platforms is None:
        return _parse_engine(key, d, w)
    if not isinstance(platforms, Mapping) or not all(isinstance(v, Mapping) for v in platforms.values()):
        raise HardwareError(f"{w}: memory.platforms must map a device vendor to memory fields",
                            "e.g. {Google: {driver_reserved: 0 B}}")
    base = {**d, "memory": {k: v for k, v in mem.items() if k != "platforms"}}
    own = {}
    for vendor, over in platforms.items():
        if "platforms" in over:
            raise HardwareError(f"{w}: memory.platforms.{short(vendor, 40)} cannot hold platforms of its own",
                                "fix the profile")
        own[str(vendor).lower()] = _parse_engine(key, _overlay(base, {"memory": over}),
                                                 f"{w} (memory.platforms.{short(vendor, 40)})")
    return replace(_parse_engine(key, base, w), platform_memory=own)


def _parse_engine(key: str, d: Any, w: str) -> EngineProfile:
    """An engine profile's data (inherited and overlaid already) checked and read."""
    mem = _get(d, "memory", w)
    sched = _get(d, "scheduler", w)
    tim = _get(d, "timing", w)
    budget = _get(mem, "budget", w)
    if budget not in BUDGETS:
        raise HardwareError(f"{w}: memory.budget {budget!r} is not one of {', '.join(BUDGETS)}", "fix the profile")
    table = tuple(FractionRow(None if r.get("below") is None else _bytes(r["below"], "fraction_table", w),
                              _bytes(r["reserved"], "fraction_table", w),
                              _bytes(r.get("reserved_per_gpu", "0 B"), "fraction_table", w))
                  for r in mem.get("fraction_table") or ())
    fraction = mem.get("fraction")
    if fraction is None and not table:
        raise HardwareError(f"{w}: memory needs a fraction or a fraction_table", "fix the profile")
    act = _get(mem, "activation", w)
    nt = _get(mem, "non_torch", w)
    graph = _get(mem, "cuda_graph", w)
    pad = mem.get("mxfp4_padding") or {}
    wo = _get(tim, "weight_only_efficiency", w)
    xe = tim.get("experts_efficiency", {})
    if not isinstance(xe, Mapping):
        raise HardwareError(f"{w}: timing.experts_efficiency must be a mapping of dtype to fraction",
                            "e.g. {fp4: 0.38}")
    from .expected import EXPERTS_FORMATS, KERNEL_LAUNCHES, OP_LAUNCHES

    xc = tim.get("experts_compute_efficiency", {})
    if not isinstance(xc, Mapping) or not all(isinstance(v, Mapping) for v in xc.values()):
        raise HardwareError(f"{w}: timing.experts_compute_efficiency must map a weight format to "
                            "{hardware profile: fraction}", "e.g. {fp8_block: {h100-sxm: 0.37}}")
    bad = [str(k) for k in xc if k not in EXPERTS_FORMATS]
    if bad:
        raise HardwareError(f"{w}: timing.experts_compute_efficiency: unknown weight format {bad[0]!r}",
                            f"use one of {', '.join(EXPERTS_FORMATS)}")
    woc = _weight_only_compute(tim.get("weight_only_compute") or {}, w)
    adb = _by_device(tim, "attention_decode_efficiency_by_device", w, "e.g. {mi300x: 0.125}",
                     lambda v, f: _ratio(v, f, w, maximum=ATTENTION_DECODE_MAX))
    apb = _by_device(tim, "attention_prefill_efficiency_by_device", w, "e.g. {h20: 0.81}", lambda v, f: _frac(v, f, w))
    launches = tim.get("kernel_launches", "none")
    if launches not in KERNEL_LAUNCHES:
        raise HardwareError(f"{w}: timing.kernel_launches {launches!r} is not one of {', '.join(KERNEL_LAUNCHES)}",
                            "fix the profile")
    op_launches = tim.get("op_launches", "one")
    if op_launches not in OP_LAUNCHES:
        raise HardwareError(f"{w}: timing.op_launches {op_launches!r} is not one of {', '.join(OP_LAUNCHES)}",
                            "fix the profile")
    graphs = tim.get("cuda_graphs") or {}
    if not isinstance(graphs, Mapping):
        raise HardwareError(f"{w}: timing.cuda_graphs must be a mapping", "e.g. {max_tokens: 512, prefill: false}")
    swa = d.get("sliding_window") or {}
    if not isinstance(swa, Mapping) or swa.get("default", "applied") not in SLIDING_WINDOW:
        raise HardwareError(f"{w}: sliding_window.default must be one of {', '.join(SLIDING_WINDOW)}",
                            "e.g. sliding_window: {default: ignored, applied_for: [gpt_oss]}")
    return EngineProfile(
        name=key, display_name=str(d.get("display_name", key)), version=str(d.get("version", "")),
        budget=budget, fraction=None if fraction is None else _frac(fraction, "memory.fraction", w),
        fraction_table=table,
        driver_reserved_bytes=_bytes(_get(mem, "driver_reserved", w), "driver_reserved", w),
        non_torch_single_bytes=_bytes(_get(nt, "single_gpu", w), "non_torch.single_gpu", w),
        non_torch_multi_gpu_bytes=_bytes(_get(nt, "multi_gpu", w), "non_torch.multi_gpu", w),
        act_hidden_copies=_number(_get(act, "hidden_copies", w), "activation.hidden_copies", w),
        act_intermediate_copies=_number(_get(act, "intermediate_copies", w), "activation.intermediate_copies", w),
        act_sampler_copies=_number(_get(act, "sampler_logits_copies", w), "activation.sampler_logits_copies", w),
        cuda_graph_bytes=_bytes(_get(graph, "bytes", w), "cuda_graph.bytes", w),
        cuda_graph_in_budget=bool(_get(graph, "in_budget", w)),
        block_size=int(_number(_get(mem, "block_size", w), "block_size", w, minimum=1)),
        rope_cache=bool(mem.get("rope_cache", False)),
        mxfp4_pad_hidden=int(pad.get("hidden", 1)), mxfp4_pad_intermediate=int(pad.get("intermediate", 1)),
        kv_dtypes=tuple(str(x) for x in _get(mem, "kv_dtypes", w)),
        mla_fp8=mem.get("mla_fp8") or None,
        fp32_served_as=mem.get("fp32_served_as"),
        max_num_batched_tokens_rules=_rules(_get(sched, "max_num_batched_tokens", w), "max_num_batched_tokens", w),
        max_num_seqs_rules=_rules(_get(sched, "max_num_seqs", w), "max_num_seqs", w),
        step_overhead_s=_time(_get(tim, "step_overhead", w), "step_overhead", w),
        step_overhead_per_sequence_s=_time(_get(tim, "step_overhead_per_sequence", w), "step_overhead_per_sequence", w),
        sampler_token_cost_s=_time(tim.get("sampler_token_cost", "0 s"), "sampler_token_cost", w),
        attention_decode_efficiency=_ratio(_get(tim, "attention_decode_efficiency", w), "attention_decode_efficiency",
                                           w, maximum=ATTENTION_DECODE_MAX),
        attention_prefill_efficiency=_frac(_get(tim, "attention_prefill_efficiency", w), "attention_prefill_efficiency", w),
        weight_only_efficiency={str(k): _frac(v, "weight_only_efficiency", w) for k, v in wo.items()},
        experts_efficiency={str(k): _frac(v, "experts_efficiency", w) for k, v in xe.items()},
        experts_compute_efficiency={str(k): {str(p): _frac(x, f"experts_compute_efficiency.{k}", w) for p, x in v.items()}
                                    for k, v in xc.items()},
        weight_only_compute=woc,
        attention_decode_by_device=adb,
        attention_prefill_by_device=apb,
        kernel_launches=launches,
        launch_overhead_per_op_s=_time(tim.get("launch_overhead_per_op", "0 s"), "launch_overhead_per_op", w),
        op_launches=op_launches,
        min_op_time_s=_time(tim.get("min_op_time", "0 s"), "min_op_time", w),
        cuda_graph_max_tokens_rules=_graph_rules(graphs.get("max_tokens", 1 << 30), w),
        cuda_graph_prefill=_flag(graphs.get("prefill", True), "cuda_graphs.prefill", w),
        cuda_graph_prefill_max_tokens=_prefill_graph_max(graphs.get("prefill_max_tokens"),
                                                         "cuda_graphs.prefill_max_tokens", w),
        cuda_graph_prefill_max_tokens_mla=_prefill_graph_max(graphs.get("prefill_max_tokens_mla"),
                                                             "cuda_graphs.prefill_max_tokens_mla", w),
        cuda_graph_prefill_vendors=tuple(x.lower() for x in _names(
            graphs.get("prefill_vendors"), "cuda_graphs.prefill_vendors", w, "device vendors", "[NVIDIA]")),
        cuda_graph_prefill_tp_only=_flag(graphs.get("prefill_tp_only", False), "cuda_graphs.prefill_tp_only", w),
        cuda_graph_prefill_exclude=tuple(x.lower() for x in _names(
            graphs.get("prefill_exclude"), "cuda_graphs.prefill_exclude", w, "model types or 'multimodal'",
            "[multimodal, qwen3_next]")),
        request_overhead_s=_time(tim.get("request_overhead", "0 s"), "request_overhead", w),
        server_overhead_s=_time(tim.get("server_overhead", "0 s"), "server_overhead", w),
        allreduce_latency_s=(None if tim.get("allreduce_latency") is None
                             else _time(tim["allreduce_latency"], "allreduce_latency", w)),
        non_torch_multi_gpu_nvls_bytes=(None if nt.get("multi_gpu_nvls") is None
                                        else _bytes(nt["multi_gpu_nvls"], "non_torch.multi_gpu_nvls", w)),
        nvls_platforms=_names(nt.get("nvls_platforms"), "non_torch.nvls_platforms", w),
        expert_parallel=_ep_comm(d.get("expert_parallel"), w),
        num_scheduler_steps=(None if sched.get("num_scheduler_steps") is None else
                             int(_number(sched["num_scheduler_steps"], "num_scheduler_steps", w, minimum=1))),
        async_scheduling=(None if sched.get("async_scheduling") is None else
                          _flag(sched["async_scheduling"], "scheduler.async_scheduling", w)),
        batch_wait=_batch_wait(sched.get("batch_wait"), w),
        recv_interval=(None if sched.get("recv_interval") is None else
                       _whole(sched["recv_interval"], "scheduler.recv_interval", w)),
        prefill_first=_flag(sched.get("prefill_first", False), "scheduler.prefill_first", w),
        kv_admission=_choice(sched.get("kv_admission", "whole"), "scheduler.kv_admission", w, KV_ADMISSION),
        prefix_caching=_flag(sched.get("prefix_caching", False), "scheduler.prefix_caching", w),
        sliding_window=str(swa.get("default", "applied")),
        sliding_window_applied_for=_names(swa.get("applied_for"), "sliding_window.applied_for", w,
                                          "config.json model_type values", "[gpt_oss]"),
        sliding_window_setting=str(swa.get("setting", "")),
        unloaded=_unloaded(mem.get("unloaded"), w),
        page_size=_choice(mem.get("page_size", "fixed"), "memory.page_size", w, PAGE_SIZES),
    )


#: how an engine profile's KV page size is chosen (``memory.page_size``)
PAGE_SIZES = ("fixed", "tpu_inference")


def tpu_page_size(max_model_len: int, max_num_seqs: int) -> int:
    """tpu-inference's KV page size (tpu_inference/layers/vllm/backends/flash_attn.py ``PallasAttentionBackend``,
    set by ``tpu_platform.check_and_update_config``): ``get_page_size``, 16 beyond 8,192 tokens of
    ``max_model_len``, else the next power of two of it over 16 within [16, 256]; raised to ``get_min_page_size``,
    the power of two that keeps one sequence's page table within half the 1 MiB of SMEM (4 bytes a page,
    ``max_num_seqs`` tables)."""
    if max_model_len > 8192:
        page = 16
    else:
        page = min(256, max(16, (1 << (max(max_model_len, 1) - 1).bit_length()) // 16))
    per_request = max(1, 1024 * 1024 // 2 // max(max_num_seqs, 1) // 4)
    least = -(-max_model_len // per_request)
    return max(page, 1 << (max(least, 1) - 1).bit_length())


def _unloaded(v: Any, w: str) -> dict[str, tuple[str, ...]]:
    """``memory.unloaded``: ``{model_type: [tensor name prefix, ...]}`` checked."""
    if v is None:
        return {}
    if not isinstance(v, Mapping) or not all(isinstance(x, list) and x and all(isinstance(n, str) and n for n in x)
                                             for x in v.values()):
        raise HardwareError(f"{w}: memory.unloaded must map a model_type to a list of tensor name prefixes",
                            "e.g. {gemma4_text: [model.audio_tower, model.embed_audio]}")
    return {str(k): tuple(x) for k, x in v.items()}


def engine_analysis(a, engine: EngineProfile):
    """``a`` as ``engine`` runs the model: where the engine does not apply the config's sliding window
    (``EngineProfile.applies_sliding_window``) the model is analysed again with full attention on those
    layers (a full-context KV cache per sequence, every cached token attended), with a note saying so;
    else ``a`` itself. (analysis, notes)."""
    spec = a.spec
    if engine.applies_sliding_window(spec.model_type):
        return a, ()
    from planner.analysis.analyze import analyze, without_sliding_windows

    full, windows = without_sliding_windows(spec)
    if not windows:
        return a, ()
    shown = ", ".join(f"{x:,}" for x in windows)
    asked = f" unless asked ({engine.sliding_window_setting})" if engine.sliding_window_setting else ""
    note = (f"{engine.display_name} does not apply this model's sliding window ({shown} tokens){asked}: priced "
            f"with full attention and a full-context KV cache (profiles/engines/{engine.name}.yaml sliding_window)")
    return analyze(full, a.options), (note,)


def _names(v: Any, f: str, where: str, what: str = "hardware profile names",
           example: str = "[h100-sxm, h200-sxm]") -> tuple[str, ...]:
    """A profile field that lists names (``what``); absent: none."""
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise HardwareError(f"{where}: field '{f}' must be a list of {what}", f"e.g. {example}")
    return tuple(v)


def check_kv_dtype(engine: EngineProfile, kv_dtype: str | None) -> None:
    """``--kv-dtype`` must be one the engine offers."""
    if kv_dtype is None:
        return
    from planner.analysis.dtypes import get_dtype

    d = get_dtype(kv_dtype, what="--kv-dtype")
    if d.name not in engine.kv_dtypes:
        raise OptionError(f"--kv-dtype {kv_dtype}: {engine.display_name} does not offer a KV cache in {d.name}",
                          f"choose one of: {', '.join(engine.kv_dtypes)}")


# ---- weights as loaded ---------------------------------------------------------------------------


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def mxfp4_padded_bytes(t, q, tp: int, pad_hidden: int, pad_inter: int) -> int:
    """Bytes of an MXFP4 expert tensor after the engine pads hidden and the per-rank intermediate
    (``(E, 2i, h)`` gate_up or ``(E, h, i)`` down), summed over ``tp`` ranks."""
    from planner.analysis.quant import quantized_bytes
    from planner.analysis.spec import Tensor

    e, n_out, n_in = t.shape
    if t.name.endswith("gate_up_proj"):
        i = n_out // 2
        i_rank = _round_up(-(-i // tp), pad_inter)
        shape = (e, 2 * i_rank * tp, _round_up(n_in, pad_hidden))
    else:
        i_rank = _round_up(-(-n_in // tp), pad_inter)
        shape = (e, _round_up(n_out, pad_hidden), i_rank * tp)
    return quantized_bytes(Tensor(t.name, shape, t.kind), q)


@frozen
class LoadedWeights:
    bytes_per_gpu: int  # the largest rank's share (replicated tensors counted on every rank)
    counted_bytes_per_gpu: int  # the same split of the checkpoint's counted bytes
    padding_bytes_per_gpu: int
    rope_cache_bytes: int
    notes: tuple[str, ...]


def rope_cache_bytes(spec, act_bytes: int) -> int:
    """vLLM's RotaryEmbedding keeps cos/sin for every position: ``max_position × rotary_dim`` values
    in the model dtype, one cache per distinct (rotary_dim, theta) (``get_rope`` caches instances); each
    mixer names the tables it uses (``MixerSpec.rope_tables``)."""
    if not spec.max_position_embeddings:
        return 0
    dims = {t for layer in spec.layers if layer.mixer is not None for t in layer.mixer.rope_tables()}
    return sum(spec.max_position_embeddings * d * act_bytes for d, _ in dims)


def loaded_weights(a, plan, engine: EngineProfile) -> LoadedWeights:
    """Weights on one GPU as ``engine`` loads them (TP split as ``analysis.parallel``)."""
    spec, fmt = a.spec, a.fmt
    tp = plan.tp
    replicated = counted_split = padding = unloaded = left = 0
    leaves = engine.unloaded.get(spec.model_type, ())
    for t, n in fmt.counted_tensors(spec):  # identical layers once, times their count
        b = n * fmt.tensor_bytes(t)
        if spec.engine_skips(t):
            unloaded += n * t.numel  # a checkpoint part the engines do not load (Qwen-Omni's talker)
            continue
        if leaves and t.name.startswith(leaves):
            left += n * t.numel  # a part this engine leaves out (vLLM's TPU backend: Gemma 4's audio tower)
            continue
        if t.kind == "norm":
            replicated += b
            continue
        counted_split += b
        q = fmt.quant
        if (engine.mxfp4_pad_hidden > 1 and q is not None and q.method == "mxfp4" and t.kind == "expert"
                and len(t.shape) == 3 and fmt.override is None):
            from planner.analysis.quant import is_converted

            if is_converted(t, q):
                padding += n * mxfp4_padded_bytes(t, q, tp, engine.mxfp4_pad_hidden, engine.mxfp4_pad_intermediate) - b
    counted = -(-counted_split // tp) + replicated
    notes = []
    if unloaded:
        notes.append(f"{engine.display_name} does not load the checkpoint's {' / '.join(spec.engine_unloaded)} "
                     f"models ({unloaded:,} parameters, counted in the total): it serves the text-output model alone")
    if left:
        notes.append(f"{engine.display_name} does not load {' / '.join(leaves)} of this checkpoint ({left:,} "
                     f"parameters, counted in the total)")
    pad = -(-padding // tp)
    if pad:
        notes.append(f"MXFP4 experts padded as {engine.display_name} loads them (hidden to a multiple of "
                     f"{engine.mxfp4_pad_hidden}, per-rank intermediate to {engine.mxfp4_pad_intermediate}): "
                     f"+{pad / 2**30:.2f} GiB per GPU")
    rope = rope_cache_bytes(spec, fmt.act.bits // 8) if engine.rope_cache else 0
    return LoadedWeights(counted + pad + rope, counted, pad, rope, tuple(notes))


# ---- KV bytes per token, as the engine lays them out ---------------------------------------------


def kv_bytes_per_token_per_gpu(a, plan, engine: EngineProfile) -> int:
    """KV bytes one token adds on one GPU: attention layers split over their KV heads (or replicated),
    MLA's latent on every rank; an engine's fp8 MLA layout (FlashMLA: 656 B per layer) where it has one.
    DeepSeek sparse attention adds its indexer's key cache, which vLLM and SGLang keep in fp8 with one fp32
    scale per 128 elements whatever the KV dtype (132 B per layer; ``analysis.mixers.dsa``), replicated."""
    total = 0
    for lk, layer in zip(a.kv.layers, a.spec.layers):
        m = layer.mixer
        if m is not None and m.tp_replicated_kv:  # a cache every rank holds whole (MLA's latent)
            latent = m.latent_kv()
            # the indexer key as engines store it, in place of the analysis' KV-dtype figure (0: no indexer)
            indexer = m.indexer_kv_bytes() - m.indexer_kv_bytes(a.kv.dtype)
            lay = m.fp8_latent_layout or engine.mla_fp8  # DSA: FlashMLA's sparse layout on every engine
            if latent is not None and lay and a.kv.dtype.name == "fp8":
                r, rope = latent
                total += (r * int(lay["latent_bytes"]) + -(-r // int(lay["scale_group"])) * int(lay["scale_bytes"])
                          + rope * int(lay["rope_bytes"])) + m.indexer_kv_bytes()
            else:
                total += lk.pool_bytes_per_token + indexer  # DeepSeek-V4: + compressed entries per token
        else:
            total += lk.bytes_per_token // plan.kv_divisor
    return total


# ---- the memory model ----------------------------------------------------------------------------


@frozen
class EngineMemory:
    """One GPU of one replica under ``engine`` (all bytes per GPU; tokens per replica)."""

    engine: str
    engine_name: str
    tp: int
    device_bytes: int  # as the device reports it (nvidia-smi, rocm-smi, JAX's bytes_limit: ``device_report``)
    visible_bytes: int  # minus the driver's reservation (cudaMemGetInfo total)
    fraction: float  # the cap the engine applies (gpu_memory_utilization, mem_fraction_static, ...)
    budget_bytes: int  # what the cap allows (see ``budget``)
    weights_bytes: int
    counted_weights_bytes: int
    padding_bytes: int
    rope_cache_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_pool_bytes: int  # may be negative: the model does not fit
    kv_bytes_per_token: int  # per GPU
    state_bytes_per_sequence: int  # recurrent state per sequence, per GPU
    block_size: int
    kv_capacity_tokens: int  # per replica, whole blocks
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    notes: tuple[str, ...]
    # where the weights come from: "checkpoint", or the --dtype what-if's format (e.g. "NVFP4 recipe (4-bit), rest
    # bf16"), which the breakdown names instead of the checkpoint
    weights_source: str = "checkpoint"
    # what reports the device's memory on its vendor's platform (``DEVICE_REPORT``), named in the breakdown
    device_report: str = "nvidia-smi"

    @property
    def token_bound(self) -> bool:
        """The pool is counted in tokens: the model caches keys and values (not a recurrent-only model,
        whose pool holds a fixed state per sequence whatever its length)."""
        return bool(self.kv_bytes_per_token) or not self.state_bytes_per_sequence

    @property
    def max_concurrency(self) -> float:
        """Sequences of ``max_model_len`` tokens the pool holds (vLLM's "Maximum concurrency"); a model
        with a recurrent state (hybrid or recurrent-only) also pays its state per sequence."""
        if not self.max_model_len:
            return 0.0
        if not self.state_bytes_per_sequence:
            return self.kv_capacity_tokens / self.max_model_len
        per = self.tokens_for(1, self.max_model_len) * self.kv_bytes_per_token + self.state_bytes_per_sequence
        return max(self.kv_pool_bytes, 0) / per

    @property
    def state_sequences(self) -> int | None:
        """Sequences whose recurrent state alone the pool holds (None: no recurrent state)."""
        if not self.state_bytes_per_sequence:
            return None
        return max(self.kv_pool_bytes, 0) // self.state_bytes_per_sequence

    @property
    def weights_fit(self) -> bool:
        return self.kv_pool_bytes > 0

    @property
    def fits(self) -> bool:
        """The engine starts: the pool holds at least one sequence of ``max_model_len`` tokens (and its
        recurrent state, where the model has one)."""
        if self.state_bytes_per_sequence:
            return self.max_batch(self.max_model_len) >= 1
        return self.kv_pool_bytes > 0 and self.kv_capacity_tokens >= self.max_model_len

    def tokens_for(self, sequences: int, context: int) -> int:
        """Pool tokens ``sequences`` sequences of ``context`` tokens occupy (whole blocks each)."""
        return sequences * _round_up(max(context, 1), self.block_size)

    def fits_batch(self, sequences: int, context: int) -> bool:
        """The one fit test: the engine starts and ``sequences`` sequences at ``context`` fit in its pool."""
        if self.kv_pool_bytes <= 0:
            return False
        need = self.tokens_for(sequences, context) * self.kv_bytes_per_token + sequences * self.state_bytes_per_sequence
        return need <= self.kv_pool_bytes

    def max_batch(self, context: int) -> int:
        if self.kv_pool_bytes <= 0:
            return 0
        per = self.tokens_for(1, context) * self.kv_bytes_per_token + self.state_bytes_per_sequence
        return self.kv_pool_bytes // per if per else self.max_num_seqs

    def breakdown(self) -> list[tuple[str, int, str]]:
        """(what, bytes per GPU, note) rows, in the order the engine accounts for them."""
        rows = [(f"device memory ({self.device_report})", self.device_bytes, "hardware profile")]
        if self.device_bytes != self.visible_bytes:
            rows.append(("driver reservation", self.device_bytes - self.visible_bytes, "not visible to CUDA"))
        rows.append((f"engine cap ({self.fraction:g})", self.budget_bytes, _BUDGET_WORDS.get(self.engine, "")))
        if self.weights_source == "checkpoint":
            rows.append(("weights (checkpoint)", self.counted_weights_bytes, "checkpoint bytes / tp"))
        else:
            rows.append(("weights (--dtype)", self.counted_weights_bytes, f"{self.weights_source}, bytes / tp"))
        if self.padding_bytes:
            rows.append(("  + padding", self.padding_bytes, "MXFP4 kernel alignment, loaded beside the weights"))
        if self.rope_cache_bytes:
            rows.append(("  + RoPE cos/sin cache", self.rope_cache_bytes, "max_position × rotary_dim, loaded beside the weights"))
        if self.activation_bytes:
            rows.append(("activation peak", self.activation_bytes,
                         f"profile run of {self.max_num_batched_tokens:,} tokens"))
        if self.non_torch_bytes:
            rows.append(("non-torch memory", self.non_torch_bytes, "CUDA context, cuBLAS, NCCL buffers"))
        if self.cuda_graph_bytes:
            rows.append(("CUDA graph pool", self.cuda_graph_bytes, "inside the cap" if self.engine == "trtllm" else "outside the cap"))
        if self.token_bound:
            pool = f"{self.kv_capacity_tokens:,} tokens × {self.kv_bytes_per_token:,} B per GPU"
            if self.state_bytes_per_sequence:  # hybrid: each sequence also holds its recurrent state
                pool += f", less {self.state_bytes_per_sequence:,} B of state per sequence"
        else:  # recurrent-only (RWKV, xLSTM, Mamba): no per-token cache, a fixed state per sequence
            pool = f"{self.state_sequences:,} sequences × {self.state_bytes_per_sequence:,} B of state per GPU"
        rows.append(("KV cache pool", self.kv_pool_bytes, pool))
        return rows


_BUDGET_WORDS = {
    "vllm": "gpu_memory_utilization × visible memory",
    "sglang": "mem_fraction_static × free memory before the weights",
    "trtllm": "free_gpu_memory_fraction × memory free after weights and activations",
    "ideal": "the whole device",
}


def activation_peak_bytes(a, plan, engine: EngineProfile, tokens: int, seqs: int) -> int:
    """Torch peak of the engine's profile/warm-up run: the larger of the forward over ``tokens`` tokens
    (hidden copies × hidden + intermediate copies × the widest FFN per rank, in the activation dtype)
    and the sampler over ``min(seqs, tokens)`` rows of fp32 logits."""
    from planner.analysis.spec import MLP, MoE

    spec = a.spec
    act = a.fmt.act.bits // 8
    widest = 0
    for layer in spec.layers:
        f = layer.ffn
        if isinstance(f, MLP):
            widest = max(widest, f.intermediate_size)
        elif isinstance(f, MoE):
            widest = max(widest, f.num_experts_per_tok * f.moe_intermediate_size + f.shared_intermediate_size)
    forward = tokens * act * (engine.act_hidden_copies * spec.hidden_size
                              + engine.act_intermediate_copies * widest / plan.tp)
    sampler = min(seqs, tokens) * spec.vocab_size * 4 * engine.act_sampler_copies
    return int(max(forward, sampler))


#: what reports a device's memory, by the hardware profile's vendor (the figure the profile's ``memory`` holds)
DEVICE_REPORT = {"nvidia": "nvidia-smi", "amd": "rocm-smi", "google": "JAX bytes_limit"}


def _vendor_key(hw) -> str:
    """The hardware profile's vendor in lower case ('' where it gives none): the key of ``DEVICE_REPORT`` and of
    an engine profile's ``memory.platforms``."""
    return str(getattr(hw, "vendor", "") or "").lower()


def pool_bytes(engine: EngineProfile, hw, frac: float, weights_bytes: int, act: int, non_torch: int) -> tuple[int, int]:
    """(the engine's budget, the KV pool) on one GPU holding ``weights_bytes`` of weights, by the
    engine's accounting (``budget``: what its memory cap covers)."""
    visible = hw.memory_bytes - engine.driver_reserved_bytes
    graph = engine.cuda_graph_bytes
    if engine.budget == "total_fraction":
        budget = int(frac * visible)
        pool = budget - weights_bytes - act - non_torch - (graph if engine.cuda_graph_in_budget else 0)
    elif engine.budget == "static_fraction":
        free_before = visible - non_torch
        budget = int(frac * free_before)
        pool = budget - weights_bytes
    elif engine.budget == "free_fraction":
        free_after = visible - non_torch - weights_bytes - act - graph
        budget = int(frac * free_after) + weights_bytes
        pool = int(frac * free_after) if free_after > 0 else free_after
    else:  # all
        budget = hw.memory_bytes
        pool = hw.memory_bytes - weights_bytes
    return budget, pool


def engine_memory(a, hw, engine: EngineProfile, plan, *, gpu_memory_utilization: float | None = None,
                  max_model_len: int | None = None, max_num_batched_tokens: int | None = None,
                  max_num_seqs: int | None = None) -> EngineMemory:
    """The memory of one GPU of a ``plan.tp``-GPU replica under ``engine`` (see the module docstring)."""
    spec = a.spec
    engine = engine.on(hw)  # the engine's memory accounting on this device's platform
    notes: list[str] = []
    tp = plan.tp
    if gpu_memory_utilization is not None and not (0 < gpu_memory_utilization <= 1):
        raise OptionError(f"--gpu-memory-utilization must be in (0, 1], got {gpu_memory_utilization}")
    frac = gpu_memory_utilization if gpu_memory_utilization is not None else engine.default_fraction(hw, tp)
    mpe = spec.max_position_embeddings
    if max_model_len is None:
        max_model_len = mpe or 8192
        if not mpe:
            notes.append("the config has no max_position_embeddings: --max-model-len 8192 assumed")
    elif max_model_len < 1:
        raise OptionError(f"--max-model-len must be >= 1, got {max_model_len}")
    elif mpe and max_model_len > mpe:
        raise OptionError(f"--max-model-len {max_model_len:,} is beyond the model's max_position_embeddings ({mpe:,})",
                          f"use --max-model-len {mpe} or less (engines refuse longer unless forced)")
    mnbt = max_num_batched_tokens if max_num_batched_tokens is not None else engine.max_num_batched_tokens(hw)
    if mnbt < 1:
        raise OptionError(f"--max-num-batched-tokens must be >= 1, got {mnbt}")
    seqs = max_num_seqs if max_num_seqs is not None else engine.max_num_seqs(hw)
    w = loaded_weights(a, plan, engine)
    notes.extend(w.notes)
    visible = hw.memory_bytes - engine.driver_reserved_bytes
    act = activation_peak_bytes(a, plan, engine, mnbt, seqs)
    non_torch = engine.non_torch_bytes(tp, hw)
    graph = engine.cuda_graph_bytes
    budget, pool = pool_bytes(engine, hw, frac, w.bytes_per_gpu, act, non_torch)
    per_token = kv_bytes_per_token_per_gpu(a, plan, engine)
    state = a.kv.state_bytes_per_sequence // tp
    block = engine.block_size_for(max_model_len, seqs)
    if pool > 0 and per_token:
        tokens = pool // per_token // block * block
    elif pool > 0:
        tokens = 1 << 40  # no KV at all (recurrent-only): capacity is not token-bound
    else:
        tokens = 0
    if any(lk.window for lk in a.kv.layers):
        notes.append("windowed layers are counted per token like full ones, as vLLM's reported KV cache size "
                     "does; the sequences that fit are a lower bound where a window is shorter than the context "
                     "(hybrid allocators keep about window + max_num_batched_tokens tokens of those layers)")
    return EngineMemory(engine.name, engine.display_name, tp, hw.memory_bytes, visible, frac, budget, w.bytes_per_gpu,
                        w.counted_bytes_per_gpu, w.padding_bytes_per_gpu, w.rope_cache_bytes, act, non_torch,
                        graph, pool, per_token, state, block, tokens, max_model_len, mnbt, seqs,
                        tuple(notes), a.fmt.describe() if a.fmt.source == "--dtype" else "checkpoint",
                        DEVICE_REPORT.get(_vendor_key(hw), "hardware profile"))


def fewest_gpus(a, hw, engine: EngineProfile, **kw) -> int | None:
    """The smallest tensor-parallel degree (power of two up to 64) on which ``engine`` starts, or None."""
    from planner.analysis.parallel import tp_plan

    for tp in (1, 2, 4, 8, 16, 32, 64):
        try:
            plan = tp_plan(a.spec, tp)
        except OptionError:
            continue
        if engine_memory(a, hw, engine, plan, **kw).fits:
            return tp
    return None


def memory_dict(m: EngineMemory) -> dict:
    return {
        "engine": m.engine,
        "tp": m.tp,
        # None for a recurrent-only model: its pool is not counted in tokens (state_sequences is its bound)
        "kv_capacity_tokens": m.kv_capacity_tokens if m.token_bound else None,
        "state_sequences": m.state_sequences,
        "max_model_len": m.max_model_len,
        "max_concurrency": m.max_concurrency,
        "fits": m.fits,
        "block_size": m.block_size,
        "fraction": m.fraction,
        "per_gpu": {
            "device_bytes": m.device_bytes,
            "visible_bytes": m.visible_bytes,
            "budget_bytes": m.budget_bytes,
            "weights_bytes": m.weights_bytes,
            "counted_weights_bytes": m.counted_weights_bytes,
            "padding_bytes": m.padding_bytes,
            "rope_cache_bytes": m.rope_cache_bytes,
            "activation_bytes": m.activation_bytes,
            "non_torch_bytes": m.non_torch_bytes,
            "cuda_graph_bytes": m.cuda_graph_bytes,
            "kv_pool_bytes": m.kv_pool_bytes,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "state_bytes_per_sequence": m.state_bytes_per_sequence,
        },
        "max_num_batched_tokens": m.max_num_batched_tokens,
        "max_num_seqs": m.max_num_seqs,
        "notes": list(m.notes),
    }


__all__ = ["ENGINES", "DEFAULT_ENGINE", "EPComm", "EngineProfile", "EngineMemory", "LoadedWeights", "load_engine",
           "check_kv_dtype", "loaded_weights", "engine_memory", "engine_analysis", "fewest_gpus", "memory_dict",
           "kv_bytes_per_token_per_gpu", "activation_peak_bytes", "rope_cache_bytes"]
