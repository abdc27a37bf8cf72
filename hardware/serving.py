"""Serving estimate of one model on one deployment: memory per GPU, the batch that fits, decode
throughput, time to first token and cost per million generated tokens.

Model (each figure's assumptions, stated in the output):

- a replica is ``tp`` GPUs in tensor parallel (``analysis.parallel``); each GPU holds its share of
  the weights (as the engine loads them) and of the KV cache and state of ``batch`` sequences at
  ``context``; the rest is the engine's own (``per_gpu_memory``: vLLM's accounting by default, the
  one fit test every command uses);
- the decode step time is the project's one step model (``hardware.serve.StepModel``, the step of
  ``planner serve`` and ``trace``) on vLLM's factors: one rank's share of the step at the expected
  rates, its all-reduces (latency × calls + bytes / achieved bandwidth) and the engine's per-step
  overhead; the ideal roofline (datasheet peaks, all-reduce bytes / bandwidth) is kept beside it as
  ``ideal_*``; the roofline's bound names which side of the ridge the step is on;
- decode throughput is ``batch / step time`` per replica, divided by ``tp`` per GPU;
- time to first token is the same model applied to the prefill of one ``context``-token prompt, in
  chunks of the engine's ``max_num_batched_tokens`` (chunked prefill, one step each);
- cost per million generated tokens is ``price per GPU-hour × tp / (tokens/s × 3600) × 10^6``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Mapping

from planner.analysis.records import frozen
from planner.analysis.analyze import Analysis
from planner.analysis.parallel import TPPlan, allreduce_bytes_per_gpu, shard_groups, tp_plan
from planner.analysis.trace import step_groups

from .timing import groups_time


@frozen
class Memory:
    """Bytes on one GPU of a replica."""

    weights_bytes: int
    kv_bytes_per_sequence: int
    state_bytes_per_sequence: int
    activation_bytes_per_sequence: int
    reserve_bytes: int
    capacity_bytes: int

    @property
    def usable_bytes(self) -> int:
        return self.capacity_bytes - self.reserve_bytes

    def needed_bytes(self, batch: int) -> int:
        return self.weights_bytes + batch * (self.kv_bytes_per_sequence + self.state_bytes_per_sequence
                                             + self.activation_bytes_per_sequence)

    def fits(self, batch: int) -> bool:
        return self.needed_bytes(batch) <= self.usable_bytes

    def max_batch(self) -> int:
        per_seq = self.kv_bytes_per_sequence + self.state_bytes_per_sequence + self.activation_bytes_per_sequence
        room = self.usable_bytes - self.weights_bytes
        if room < 0:
            return 0
        return room // per_seq if per_seq else 1 << 30


@frozen
class Estimate:
    tp: int
    plan: TPPlan
    memory: Memory
    requested_batch: int
    batch: int  # the batch the throughput is computed at (requested, or the largest that fits)
    fits: bool  # the requested batch fits
    max_batch: int
    step_s: float | None  # expected
    allreduce_s: float  # expected
    bound: str | None
    decode_tokens_per_s: float | None  # per replica, expected
    tokens_per_s_per_gpu: float | None
    ttft_s: float | None  # expected
    price_per_hour: float | None
    cost_per_million_tokens: float | None
    notes: tuple[str, ...]
    ideal_step_s: float | None = None
    ideal_ttft_s: float | None = None
    gap_by_factor: Mapping[str, float] | None = field(default=None, hash=False)  # decode step, Σ = expected − ideal


def per_gpu_memory(a: Analysis, plan: TPPlan, hw, engine=None) -> Memory:
    """Memory of one GPU as ``engine`` (default vLLM, ``hardware.engine``) accounts for it: the one fit
    test of analyze, compare, trace and serve. Weights are as the engine loads them; everything the
    engine keeps for itself (the part of the device above its cap, the driver's reservation, the
    activation peak of its profile run, non-torch memory) is the reserve; what remains is its KV pool.
    ``engine`` may be the name ``"ideal"`` for the whole device."""
    from .engine import DEFAULT_ENGINE, engine_memory, load_engine

    eng = engine if hasattr(engine, "budget") else load_engine(engine or DEFAULT_ENGINE)
    ctx = a.options.context
    mpe = a.spec.max_position_embeddings
    mml = max(1, min(ctx, mpe) if mpe else ctx)
    em = engine_memory(a, hw, eng, plan, max_model_len=mml)
    kv = a.kv.bytes_per_sequence(ctx) // plan.kv_divisor
    state = a.kv.state_bytes_per_sequence // plan.tp
    usable = em.weights_bytes + em.kv_pool_bytes
    return Memory(em.weights_bytes, kv, state, 0, hw.memory_bytes - usable, hw.memory_bytes)


def max_context_per_gpu(a: Analysis, mem: Memory, plan: TPPlan, batch: int, limit: int = 1 << 24) -> int:
    """The longest context at which ``batch`` sequences fit on each GPU (capped at ``limit`` and at the
    model's ``max_position_embeddings``); -1 if none."""
    from planner.analysis.capacity import largest

    if a.spec.max_position_embeddings:
        limit = min(limit, a.spec.max_position_embeddings)

    fixed = mem.weights_bytes + batch * (mem.state_bytes_per_sequence + mem.activation_bytes_per_sequence)

    def fits(ctx: int) -> bool:
        return fixed + batch * (a.kv.bytes_per_sequence(ctx) // plan.kv_divisor) <= mem.usable_bytes

    return largest(fits, 0, limit)


def _step_model(a: Analysis, hw, plan: TPPlan):
    """(engine profile, ``StepModel``) of vLLM, the engine whose memory ``per_gpu_memory`` sizes."""
    from .engine import DEFAULT_ENGINE, load_engine
    from .expected import factors_for
    from .serve import StepModel

    eng = load_engine(DEFAULT_ENGINE)
    return eng, StepModel(a, hw, plan, factors_for(hw, eng), detail=False)


def _decode(a: Analysis, hw, plan: TPPlan, model, *, batch: int, context: int):
    """(step cost, expected all-reduce seconds, roofline bound) of one rank's decode step."""
    cost = model.decode(batch, context)
    ar_bytes = allreduce_bytes_per_gpu(a.spec, batch, a.fmt.act.bits // 8, plan.tp)
    ar_s = (ar_bytes / hw.interconnect_bytes_per_s + cost.parts["all-reduce bandwidth"]
            + cost.parts["all-reduce latency"]) if ar_bytes else 0.0
    groups = step_groups(a.spec, a.fmt, a.kv.dtype, batch=batch, new_tokens=1, cached_tokens=context,
                         state_dtype=a.kv.state_dtype)
    st, _ = groups_time(shard_groups(groups, plan), hw, a.fmt.compute.compute, rows=batch)
    return cost, ar_s, st.bound


#: The most chunks ``_prefill`` prices one by one (each holds a new number of cached tokens, so each is a step
#: priced from the trace, about 1 ms): 33.5 M tokens in vLLM's chunks of 8,192, past any model's context;
#: a longer prompt's TTFT is left out with a note (a --context of 2^30 was 131,072 chunks, minutes).
PREFILL_MAX_CHUNKS = 4096


def _prefill(model, tokens: int, chunk: int):
    """Σ of the steps that prefill one ``tokens``-token prompt in chunks of ``chunk`` tokens; None beyond
    ``PREFILL_MAX_CHUNKS`` chunks."""
    from .expected import ZERO

    if -(-tokens // max(chunk, 1)) > PREFILL_MAX_CHUNKS:
        return None

    total, done = ZERO, 0
    while done < tokens:
        n = min(chunk, tokens - done)
        total = total + model.prefill({(n, done): 1})
        done += n
    return total


def estimate(a: Analysis, hw, *, tp: int = 1, price_per_hour: float | None = None) -> Estimate:
    plan = tp_plan(a.spec, tp)
    mem = per_gpu_memory(a, plan, hw)
    notes = list(plan.notes)
    req = a.options.batch
    mb = mem.max_batch()
    fits = mem.fits(req)
    batch = req if fits else mb
    if not fits and mb >= 1:
        notes.append(f"batch {req} does not fit at context {a.options.context:,}: throughput at batch {mb}, "
                     "the largest that fits")
    price = price_per_hour if price_per_hour is not None else hw.price_per_hour
    step_s = tps = per_gpu = ttft = cost = bound = ideal_step = ideal_ttft = gap = None
    ar_s = 0.0
    eng, model = _step_model(a, hw, plan)
    if batch >= 1:
        step, ar_s, bound = _decode(a, hw, plan, model, batch=batch, context=a.options.context)
        step_s, ideal_step, gap = step.expected_s, step.ideal_s, dict(step.parts)
        tps = batch / step_s
        per_gpu = tps / plan.tp
        if price is not None:
            cost = price * plan.tp / (tps * 3600) * 1e6
    if mem.weights_bytes <= mem.usable_bytes and a.options.context > 0:
        chunk = eng.max_num_batched_tokens(hw)
        first = _prefill(model, a.options.context, chunk)
        if first is None:
            notes.append(f"time to first token not priced: a prompt of {a.options.context:,} tokens is more than "
                         f"{PREFILL_MAX_CHUNKS:,} prefill steps of {chunk:,} tokens")
        else:
            # one request as ``serve`` prices it: its prefill, the engine's per-request overhead and, through the
            # HTTP server, the front end's time for it (it waits for no other request)
            ttft = first.expected_s + model.f.request_overhead_s + model.f.server_overhead_s
            ideal_ttft = first.ideal_s
    return Estimate(plan.tp, plan, mem, req, max(batch, 0), fits, mb, step_s, ar_s, bound, tps, per_gpu, ttft,
                    price, cost, tuple(notes), ideal_step, ideal_ttft, gap)


def estimate_dict(e: Estimate) -> dict:
    m = e.memory
    return {
        "tp": e.tp,
        "batch": e.batch,
        "requested_batch": e.requested_batch,
        "fits": e.fits,
        "max_batch": e.max_batch,
        "memory_per_gpu": {
            "weights_bytes": m.weights_bytes,
            "kv_bytes": e.batch * m.kv_bytes_per_sequence,
            "state_bytes": e.batch * m.state_bytes_per_sequence,
            "activation_bytes": e.batch * m.activation_bytes_per_sequence,
            "runtime_reserve_bytes": m.reserve_bytes,
            "capacity_bytes": m.capacity_bytes,
            "needed_bytes": m.needed_bytes(e.requested_batch),
        },
        "step_s": e.step_s,
        "allreduce_s": e.allreduce_s,
        "bound": e.bound,
        "decode_tokens_per_s": e.decode_tokens_per_s,
        "decode_tokens_per_s_per_gpu": e.tokens_per_s_per_gpu,
        "ttft_s": e.ttft_s,
        "ideal": {"step_s": e.ideal_step_s, "ttft_s": e.ideal_ttft_s,
                  "decode_tokens_per_s": e.batch / e.ideal_step_s if e.ideal_step_s else None},
        "gap_by_factor": dict(e.gap_by_factor) if e.gap_by_factor is not None else None,
        "price_per_hour": e.price_per_hour,
        "cost_per_million_tokens": e.cost_per_million_tokens,
        "notes": list(e.notes),
    }


__all__ = ["Estimate", "Memory", "estimate", "estimate_dict", "per_gpu_memory"]
