"""A model on a parallel layout (``analysis.parallel.Layout``): memory per GPU, the KV pool of a
replica, the time of a step with its collectives and pipeline, and the step-cost table the serving
simulation (``hardware.simulate``) runs on.

- Memory per GPU is taken on the heaviest stage: weights (``stage_weights_bytes``), the runtime
  reserve, the activation of the largest step (``max_num_batched_tokens`` tokens), and what is left
  for the KV pool. The pool of a replica holds ``min over stages (free / KV bytes per token)`` tokens
  per attention-DP rank, times ``attn_dp``.
- A stage's step is its ops on one GPU (``layout_groups``) timed by the one step model
  (``_device_s``, the only call into it) plus its collectives (``hardware.comm``) on their link.
- Pipeline: a step of ``B`` sequences runs as ``m = min(pp, B)`` micro-batches. Each stage takes
  ``t_s`` per micro-batch; an iteration (every sequence advancing one token) takes
  ``max(m · max_s t_s, Σ_s t_s)``: the stages are busy when there are at least ``pp`` micro-batches,
  else a token waits for the whole pipeline and the stages idle (the bubble,
  ``1 - m · Σ_s t_s / (pp · iteration)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.analysis.errors import OptionError
from planner.analysis.parallel import (Layout, LayoutPlan, layout_groups, layout_plan, stage_collectives,
                                       stage_kv_bytes_per_token, stage_state_bytes_per_sequence,
                                       stage_weights_bytes)
from planner.analysis.trace import step_groups

from .comm import collective_s, links


# ---- the one step model, behind one function ------------------------------------------------------


def _device_s(groups, hw, a) -> float:
    """Seconds one GPU spends on its share of a step (``groups``, already sharded), by the project's
    step model (``hardware.timing``: per-op roofline with the profile's efficiencies, CUDA-graph
    replay). Every time in this module and in ``planner plan`` goes through here."""
    from .timing import groups_time

    if not groups:
        return 0.0
    st, _ = groups_time(groups, hw, a.fmt.compute.compute)
    return st.graph_s


# ---- memory ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutMemory:
    """Bytes on one GPU of the tightest stage, and the replica's KV pool."""

    layout: Layout
    weights_bytes: int  # the heaviest stage's weights on one GPU
    kv_bytes_per_token: int  # KV of one cached token on one GPU of the tightest stage
    reserve_bytes: int
    activation_bytes: int
    capacity_bytes: int
    kv_capacity_tokens: int  # tokens the replica's pool holds (all attention-DP ranks)
    stage_weights_bytes: tuple[int, ...]

    @property
    def fits(self) -> bool:
        return self.kv_capacity_tokens >= 1

    @property
    def kv_pool_bytes(self) -> int:
        return self.kv_capacity_tokens // self.layout.attn_dp * self.kv_bytes_per_token

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "kv_bytes_per_token": self.kv_bytes_per_token,
                "runtime_reserve_bytes": self.reserve_bytes, "activation_bytes": self.activation_bytes,
                "capacity_bytes": self.capacity_bytes, "kv_capacity_tokens": self.kv_capacity_tokens,
                "kv_pool_bytes": self.kv_pool_bytes, "stage_weights_bytes": list(self.stage_weights_bytes),
                "fits": self.fits}


def layout_memory(a, hw, plan: LayoutPlan, *, max_batched_tokens: int) -> LayoutMemory:
    lo = plan.layout
    weights = stage_weights_bytes(a.spec, a.fmt, plan)
    kv_tok = stage_kv_bytes_per_token(a.kv, plan)
    state = stage_state_bytes_per_sequence(a.kv, plan)
    act = _activation_bytes(a, plan, max_batched_tokens)
    usable = hw.memory_bytes - hw.runtime_reserve_bytes - act
    per_rank = None
    for s in range(lo.pp):
        free = usable - weights[s]
        if free <= 0:
            per_rank = 0
            break
        if kv_tok[s] == 0:
            continue
        # recurrent state: charged as if every sequence were one token longer per state-token-equivalent
        n = free // (kv_tok[s] + (state[s] if state[s] else 0))
        per_rank = n if per_rank is None else min(per_rank, n)
    if per_rank is None:  # no KV at all (a pure recurrent model): the pool is bounded by sequences
        per_rank = 1 << 30
    tight = max(range(lo.pp), key=lambda s: kv_tok[s])
    return LayoutMemory(lo, max(weights), kv_tok[tight], hw.runtime_reserve_bytes, act, hw.memory_bytes,
                        per_rank * lo.attn_dp, tuple(weights))


def _activation_bytes(a, plan: LayoutPlan, tokens: int) -> int:
    """The largest activation buffer of a step of ``tokens`` tokens on one GPU (the op with the most
    bytes read and written), on any stage."""
    groups = _groups(a, max(1, -(-tokens // plan.layout.attn_dp)), 1, 0)
    full = _groups(a, max(1, tokens), 1, 0)
    best = 0
    for s in range(plan.layout.pp):
        for g in layout_groups(groups, plan, s, full):
            best = max(best, g.op.act_read_bytes + g.op.act_write_bytes)
    return best


# ---- step time ------------------------------------------------------------------------------------


_TRACES: dict[int, tuple[object, dict]] = {}


def _groups(a, batch: int, new: int, cached: int):
    """The replica's collapsed step, traced once per (analysis, shape): layouts share it."""
    held = _TRACES.get(id(a))
    if held is None or held[0] is not a:
        if len(_TRACES) > 16:
            _TRACES.clear()
        held = _TRACES[id(a)] = (a, {})  # the analysis is held, so its id is not reused
    cache = held[1]
    key = (batch, new, cached)
    if key not in cache:
        cache[key] = step_groups(a.spec, a.fmt, a.kv.dtype, batch=batch, new_tokens=new, cached_tokens=cached,
                                 state_dtype=a.kv.state_dtype)
    return cache[key]


@dataclass(frozen=True)
class StepBreakdown:
    iteration_s: float  # every sequence of the step advances by its new tokens
    stage_s: tuple[float, ...]  # one micro-batch on each stage (compute + collectives)
    compute_s: float  # the slowest stage's device time (one micro-batch)
    comm_s: float  # the slowest stage's collectives (one micro-batch)
    microbatches: int
    bubble: float  # fraction of stage time idle in the pipeline

    def to_dict(self) -> dict:
        return {"iteration_s": self.iteration_s, "stage_s": list(self.stage_s), "compute_s": self.compute_s,
                "comm_s": self.comm_s, "microbatches": self.microbatches, "bubble": self.bubble}


def replica_step(a, hw, plan: LayoutPlan, *, batch: int, new_tokens: int, cached: int) -> StepBreakdown:
    """One iteration of a replica: ``batch`` sequences each with ``new_tokens`` new and ``cached`` cached."""
    lo = plan.layout
    lk = links(hw)
    m = max(1, min(lo.pp, batch))
    mb = -(-batch // m)
    rank_b = -(-mb // lo.attn_dp)  # sequences on the busiest attention-DP rank
    groups = _groups(a, rank_b, new_tokens, cached)
    full = _groups(a, mb, new_tokens, cached) if lo.attn_dp > 1 else groups
    act = a.fmt.act.bits // 8 if a.fmt.act.bits >= 8 else 2
    stage_s, comp, comm = [], [], []
    for s in range(lo.pp):
        dev = _device_s(layout_groups(groups, plan, s, full), hw, a)
        col = sum(collective_s(c, lk, hw.name) for c in stage_collectives(a.spec, plan, s, mb * new_tokens, act))
        stage_s.append(dev + col)
        comp.append(dev)
        comm.append(col)
    slow = max(range(lo.pp), key=lambda s: stage_s[s])
    it = max(m * stage_s[slow], sum(stage_s))
    bubble = 1.0 - m * sum(stage_s) / (lo.pp * it) if it > 0 else 0.0
    return StepBreakdown(it, tuple(stage_s), comp[slow], comm[slow], m, max(0.0, bubble))


def check_links(hw, layout: Layout) -> None:
    """A layout that spans nodes needs the profile's network between nodes."""
    lk = links(hw)
    if layout.gpus_per_replica > lk.gpus_per_node and not lk.inter_bytes_per_s:
        raise OptionError(f"{layout.label} needs {layout.gpus_per_replica} GPUs per replica but hardware profile "
                          f"'{hw.name}' describes {lk.gpus_per_node}-GPU nodes and no network between them",
                          "add a node block with inter_node_bandwidth to the profile, or use fewer GPUs per replica")


def plan_for(a, hw, layout: Layout) -> LayoutPlan:
    check_links(hw, layout)
    return layout_plan(a.spec, layout, links(hw).gpus_per_node)


# ---- the simulation's step cost -------------------------------------------------------------------

#: tokens of a step at which the step model is evaluated for the simulation (interpolated between)
TOKENS_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def step_cost(a, hw, plan: LayoutPlan, *, ref_batch: int, ref_context: int, ref_prompt: int):
    """The three terms of ``hardware.simulate.StepCost`` from the step model: the iteration time of
    ``N`` decode tokens at no context (weights, activations, collectives, pipeline) on
    ``TOKENS_GRID``; the extra time per cached token a decode reads (slope between context 0 and
    ``ref_context`` at ``ref_batch`` sequences); the extra time per (query, key) pair of a prefill
    (a ``ref_prompt``-token prompt against ``ref_prompt`` decode tokens)."""
    from .simulate import StepCost

    t = tuple(replica_step(a, hw, plan, batch=n, new_tokens=1, cached=0).iteration_s for n in TOKENS_GRID)
    b = max(1, ref_batch)
    t0 = replica_step(a, hw, plan, batch=b, new_tokens=1, cached=0).iteration_s
    tc = replica_step(a, hw, plan, batch=b, new_tokens=1, cached=max(1, ref_context)).iteration_s
    kappa = max(0.0, (tc - t0) / (b * max(1, ref_context)))
    n = max(1, min(ref_prompt, TOKENS_GRID[-1]))
    tp_ = replica_step(a, hw, plan, batch=1, new_tokens=n, cached=0).iteration_s
    import numpy as np

    tn = float(np.interp(n, TOKENS_GRID, t))
    pi = max(0.0, (tp_ - tn) / (n * (n + 1) / 2))
    return StepCost(TOKENS_GRID, t, kappa, pi)


__all__ = ["LayoutMemory", "StepBreakdown", "TOKENS_GRID", "check_links", "layout_memory", "plan_for",
           "replica_step", "step_cost"]
