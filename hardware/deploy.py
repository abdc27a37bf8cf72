"""A model on a parallel layout (``analysis.parallel.Layout``): memory per GPU, the KV pool of a
replica, the time of a step with its collectives and pipeline, and the step-cost table the serving
simulation (``hardware.simulate``) runs on.

- Memory per GPU is taken on the heaviest stage: weights (``stage_weights_bytes``), the runtime
  reserve, the activation of the largest step (``max_num_batched_tokens`` tokens), and what is left
  for the KV pool. The pool of a replica holds ``min over stages (free / KV bytes per token)`` tokens
  per attention-DP rank, times ``attn_dp``.
- A stage's step is its ops on one GPU (``layout_groups``) timed by the one step model
  (``_device_s``, the only call into it) plus its collectives (``hardware.comm``) on their link. An
  expert-parallel layout's MoE dispatch and combine are priced as the engine's EP library moves them
  where its profile has an ``expert_parallel`` block (``ep_collective_s``), and under its two-batch
  overlap the stage costs ``two_batch_overlap_s`` of its attention, MoE, dispatch and combine instead
  of their sum.
- Pipeline: a step of ``B`` sequences runs as ``m = min(pp, B)`` micro-batches. Each stage takes
  ``t_s`` per micro-batch; an iteration (every sequence advancing one token) takes
  ``max(m · max_s t_s, Σ_s t_s)``: the stages are busy when there are at least ``pp`` micro-batches,
  else a token waits for the whole pipeline and the stages idle (the bubble,
  ``1 - m · Σ_s t_s / (pp · iteration)``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.analysis.errors import OptionError
from planner.analysis.parallel import (Layout, LayoutPlan, layout_groups, layout_plan, stage_collectives,
                                       stage_kv_bytes_per_token, stage_state_bytes_per_sequence,
                                       stage_weights_bytes)
from planner.analysis.trace import step_groups

from .comm import collective_s, links


# ---- the one step model, behind one function ------------------------------------------------------


@dataclass(frozen=True)
class EngineModel:
    """The engine a deployment runs: its profile (memory accounting, scheduler defaults) and the
    factors of the expected step time (``hardware.expected``), or the ideal roofline."""

    profile: object  # hardware.engine.EngineProfile
    factors: object  # hardware.expected.Factors

    @property
    def name(self) -> str:
        return self.profile.name


def engine_model(hw, name: str | None = None) -> EngineModel:
    from .engine import load_engine
    from .expected import factors_for

    eng = load_engine(name)
    return EngineModel(eng, factors_for(hw, eng))


def _device_s(groups, hw, a, em: EngineModel, *, decode: bool, rows: int | None = None,
              expert_rows: float | None = None, expert_inner: tuple | None = None, graph: bool = True,
              attention_work: dict | None = None) -> float:
    """Seconds one GPU spends on its share of a step (``groups``, already sharded), by the project's
    step model (``hardware.expected.ops_time_s``: the roofline with the engine's and the device's
    factors, as ``planner serve``'s ``StepModel`` prices a step). Every op time in this module and in
    ``planner plan`` goes through here; the engine's per-step overhead is added once per iteration
    (``replica_step``). ``rows``: the tokens each matmul multiplies, and ``expert_rows`` the rows each
    touched expert multiplies (``hardware.expected.expert_rows``), for a calibrated rows table, and
    ``expert_inner`` their GEMMs' inner dimensions (``hardware.expected.expert_inner``);
    each op takes at least the engine's least op time (``min_op_time``) and, where ``graph=False`` (the
    step is not a CUDA-graph replay), its host launch time (``launch_overhead_per_op``; ``op_floor_s``);
    plus the host's kernel launches where the engine profile says how it launches them
    (``hardware.expected.launch_time_s``); ``attention_work``: a prompt step's attention tiles and keys
    (``hardware.expected.prompt_attention_work``)."""
    from .expected import experts_format, for_column, for_weights, launch_time_s, op_floor_s, ops_time_s

    if not groups:
        return 0.0
    peak, bw, wob = hw.peak_flops_for(a.fmt.compute.compute), hw.memory_bandwidth_bytes_per_s, _weight_only_bits(a, hw)
    f = for_weights(for_column(em.factors, hw, a.fmt.compute.compute, experts_format(a.fmt)), a.fmt, wob)
    floor, launch = op_floor_s(f, graph=graph)
    dev = ops_time_s(groups, peak, bw, f, decode=decode, weight_only_bits=wob, rows=rows, floor_s=floor,
                     expert_rows=expert_rows, expert_inner=expert_inner, launch_s=launch,
                     attention_work=attention_work)
    return dev + launch_time_s(f, groups, None, dev)


def _moe_shape(a) -> tuple[int, int] | None:
    moe = a.spec.first_moe
    return (moe.num_experts, moe.num_experts_per_tok) if moe is not None else None


def _weight_only_bits(a, hw) -> int | None:
    from .serve import StepModel

    return StepModel.weight_only_bits_of(a, hw)


# ---- memory ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutMemory:
    """One GPU of the tightest stage under the engine's accounting, and the replica's KV pool."""

    layout: Layout
    engine: str
    weights_bytes: int  # the heaviest stage's weights on one GPU, as the engine loads them
    kv_bytes_per_token: int  # KV of one cached token on one GPU of the tightest stage
    activation_bytes: int
    non_torch_bytes: int
    capacity_bytes: int
    budget_bytes: int
    kv_pool_bytes: int  # on the tightest stage's GPU (negative: the weights do not fit)
    kv_capacity_tokens: int  # tokens the replica's pool holds (all attention-DP ranks; whole blocks)
    block_size: int
    stage_weights_bytes: tuple[int, ...]
    stage_pool_bytes: tuple[int, ...] = ()  # the KV pool on one GPU of each stage (every stage's, for analyze)
    # on one GPU of each stage: KV bytes per cached token (the engine's layout) and recurrent state per sequence
    stage_kv_bytes_per_token: tuple[int, ...] = ()
    stage_state_bytes: tuple[int, ...] = ()
    attn_dp: int = 1

    @property
    def fits(self) -> bool:
        return self.kv_capacity_tokens >= 1

    @property
    def token_bound(self) -> bool:
        """False for a recurrent-only model: its pool holds a state per sequence, not tokens."""
        return any(self.stage_kv_bytes_per_token) or not any(self.stage_state_bytes)

    def max_batch(self, context: int) -> int:
        """Sequences of ``context`` tokens the replica's pool holds: on each stage's GPU, each takes its
        whole blocks of KV and its recurrent state (the tightest stage bounds; each attention-DP rank
        holds its own sequences). A model with neither (no stage bounds it) gets ``1 << 30``. Without a
        recurrent state: the replica's KV tokens over ``context`` (as the scheduler admits by tokens)."""
        if not any(self.stage_state_bytes):  # KV only: the replica's tokens over the sequence's
            return self.kv_capacity_tokens // max(context, 1)
        blocks = -(-max(context, 1) // self.block_size) * self.block_size
        n = None
        for pool, tok, state in zip(self.stage_pool_bytes, self.stage_kv_bytes_per_token, self.stage_state_bytes):
            if pool <= 0:
                return 0
            per = blocks * tok + state
            if per:
                n = pool // per if n is None else min(n, pool // per)
        return (1 << 30) if n is None else n * self.attn_dp

    def to_dict(self) -> dict:
        return {"engine": self.engine, "weights_bytes": self.weights_bytes, "kv_bytes_per_token": self.kv_bytes_per_token,
                "activation_bytes": self.activation_bytes, "non_torch_bytes": self.non_torch_bytes,
                "capacity_bytes": self.capacity_bytes, "budget_bytes": self.budget_bytes,
                "kv_pool_bytes": self.kv_pool_bytes,
                "kv_capacity_tokens": self.kv_capacity_tokens if self.token_bound else None,
                "state_bytes_per_sequence": max(self.stage_state_bytes, default=0),
                "block_size": self.block_size, "stage_weights_bytes": list(self.stage_weights_bytes), "fits": self.fits}


def layout_memory(a, hw, plan: LayoutPlan, em: EngineModel, *, max_num_batched_tokens: int,
                  max_num_seqs: int, fraction: float | None = None) -> LayoutMemory:
    """The engine's accounting (``hardware.engine``: its cap, activation peak of the profiling run,
    non-torch memory of a ``tp``-GPU group, graph pool, block size, KV layout) applied to each stage's
    weights (``stage_weights_bytes`` plus the engine's padding and RoPE cache) and KV bytes per token
    (the engine's layout, shared out by each stage's layers). ``fraction``: the engine's memory
    fraction where the deployment sets one (vLLM ``gpu_memory_utilization``, SGLang
    ``mem_fraction_static``, TensorRT-LLM ``free_gpu_memory_fraction``), else its default."""
    from planner.analysis.parallel import TPPlan

    from .engine import activation_peak_bytes, kv_bytes_per_token_per_gpu, loaded_weights, pool_bytes

    lo = plan.layout
    eng = em.profile.on(hw)  # its memory accounting on this device's platform (vLLM on TPU: tpu-inference)
    weights = stage_weights_bytes(a.spec, a.fmt, plan, eng.unloaded.get(a.spec.model_type, ()))
    mine_tok = stage_kv_bytes_per_token(a.kv, plan)
    state = stage_state_bytes_per_sequence(a.kv, plan)
    lw = loaded_weights(a, plan.attn, eng)
    extra = lw.padding_bytes_per_gpu + lw.rope_cache_bytes  # padding is per expert shard; RoPE cache on every GPU
    eng_tok = kv_bytes_per_token_per_gpu(a, plan.attn, eng)
    total_mine = sum(mine_tok)
    act = activation_peak_bytes(a, TPPlan(lo.tp, 1, 1, ()), eng, max_num_batched_tokens, max_num_seqs)
    non_torch = eng.non_torch_bytes(lo.tp, hw)
    frac = eng.default_fraction(hw, lo.tp) if fraction is None else fraction
    per_rank = None
    tight = (0, 0, 0)  # (pool, per token, budget) of the tightest stage
    pools = tuple(pool_bytes(eng, hw, frac, w + extra, act, non_torch)[1] for w in weights)
    toks = tuple(eng_tok * mine_tok[s] // total_mine if total_mine else 0 for s in range(lo.pp))
    for s in range(lo.pp):
        budget, pool = pool_bytes(eng, hw, frac, weights[s] + extra, act, non_torch)
        tok = toks[s]
        if pool <= 0:
            per_rank, tight = 0, (pool, tok, budget)
            break
        if tok == 0:
            continue
        # tokens as the engine counts its pool (KV blocks); a recurrent state per sequence is charged by
        # max_batch, per sequence, not per token
        n = pool // tok // eng.block_size * eng.block_size
        if per_rank is None or n < per_rank:
            per_rank, tight = n, (pool, tok, budget)
    if per_rank is None:  # no KV at all (a pure recurrent model): the pool is not token-bound (see max_batch)
        per_rank = 1 << 30
        low = min(range(lo.pp), key=lambda s: pools[s])
        tight = (pools[low], 0, pool_bytes(eng, hw, frac, weights[low] + extra, act, non_torch)[0])
    return LayoutMemory(lo, eng.name, max(weights) + extra, tight[1], act, non_torch, hw.memory_bytes, tight[2],
                        tight[0], per_rank * lo.attn_dp, eng.block_size, tuple(w + extra for w in weights), pools,
                        toks, tuple(state), lo.attn_dp)


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
    overhead_s: float = 0.0  # the engine's per-step host cost (scheduler, sampling), in iteration_s

    def to_dict(self) -> dict:
        return {"iteration_s": self.iteration_s, "stage_s": list(self.stage_s), "compute_s": self.compute_s,
                "comm_s": self.comm_s, "microbatches": self.microbatches, "bubble": self.bubble,
                "overhead_s": self.overhead_s}


def replica_step(a, hw, plan: LayoutPlan, em: EngineModel, *, batch: int, new_tokens: int,
                 cached: int, host_sequences: int | None = None) -> StepBreakdown:
    """One iteration of a replica: ``batch`` sequences each with ``new_tokens`` new and ``cached``
    cached, plus the engine's per-step overhead (once per iteration). ``host_sequences``: the sequences
    its per-sequence host work counts, where not ``batch`` (``step_cost`` leaves it to the simulation)."""
    lo = plan.layout
    lk = links(hw)
    m = max(1, min(lo.pp, batch))
    mb = -(-batch // m)
    rank_b = -(-mb // lo.attn_dp)  # sequences on the busiest attention-DP rank
    groups = _groups(a, rank_b, new_tokens, cached)
    full = _groups(a, mb, new_tokens, cached) if lo.attn_dp > 1 else groups
    act = a.fmt.act.bits // 8 if a.fmt.act.bits >= 8 else 2
    from .expected import expert_inner, expert_rows, for_model, graphed, prompt_attention_work, query_heads

    f = for_model(em.factors, a.spec)  # the engine's prompt graphs for this model (SGLang's MLA cap, exclusions)
    if em.profile.cuda_graph_prefill_tp_only and (lo.attn_dp > 1 or lo.pp > 1 or lo.ep > 1):
        f = replace(f, cuda_graph_prefill=False)  # SGLang: no prompt graphs with attention DP, PP or EP

    shape = _moe_shape(a)
    # every attention-DP rank's tokens meet in the experts: rows per touched expert of the micro-batch
    e_rows = expert_rows(mb * new_tokens, *shape) if shape else None
    e_inner = expert_inner(a.spec, lo.tp)  # the routed experts split tp ways (layout_groups)
    # a rank replays a captured graph when its own step is small enough (each rank captures its own)
    graph = graphed(f, tokens=rank_b * new_tokens, prefill=new_tokens > 1)
    ep = em.profile.expert_parallel if lo.ep > 1 and shape else None
    overlap = ep is not None and ep.overlap == "two_batch" and rank_b * new_tokens >= 2
    heads = query_heads(a.spec, lo.tp) if new_tokens > 1 else None  # a prompt step's attention tiles on one rank
    stage_s, comp, comm = [], [], []
    for s in range(lo.pp):
        lg = layout_groups(groups, plan, s, full)
        kw = dict(decode=new_tokens == 1, rows=rank_b * new_tokens, expert_rows=e_rows, graph=graph,
                  expert_inner=e_inner)
        if heads:
            kw["attention_work"] = prompt_attention_work([[g for g in lg if g.op.kind == "attention"]], heads,
                                                         [(new_tokens, cached, rank_b)])
        dev = _device_s(lg, hw, a, em, **kw)
        parts = {"dispatch": 0.0, "combine": 0.0, "other": 0.0}
        for c in stage_collectives(a.spec, plan, s, mb * new_tokens, act):
            if c.kind == "all_to_all" and ep is not None:
                parts["dispatch" if "dispatch" in c.name else "combine"] += ep_collective_s(
                    c, a, plan, em, lk, tokens=mb * new_tokens, prefill=new_tokens > 1)
            else:
                parts["other"] += stage_collective_s(c, hw, f, lk)
        col = sum(parts.values())
        if overlap:
            from planner.analysis.trace import OpKind

            moe_s = _device_s([g for g in lg if g.op.kind == OpKind.EXPERTS], hw, a, em, **kw)
            stage_s.append(two_batch_overlap_s(dev - moe_s, moe_s, parts["dispatch"], parts["combine"]) + parts["other"])
        else:
            stage_s.append(dev + col)
        comp.append(dev)
        comm.append(col)
    slow = max(range(lo.pp), key=lambda s: stage_s[s])
    # the host's per-sequence work runs on each attention-DP rank's own scheduler, in parallel
    rank_seqs = -(-batch // lo.attn_dp)
    host_seqs = rank_seqs if host_sequences is None else -(-host_sequences // lo.attn_dp)
    it, bubble, overhead = pipeline_step_s(stage_s, m, f, host_seqs, held_tokens=rank_seqs * (cached + new_tokens))
    return StepBreakdown(it, tuple(stage_s), comp[slow], comm[slow], m, bubble, overhead)


def two_batch_overlap_s(attention_s: float, moe_s: float, dispatch_s: float, combine_s: float) -> float:
    """Seconds of a step split into two micro-batches whose MoE communication runs under the other's
    compute (SGLang's two-batch overlap on DeepEP; DeepEP README, "two-micro-batch overlapping": the
    layer's four parts attention / dispatch / MoE / combine of one micro-batch interleave with the
    other's). Each argument is the whole step's (both micro-batches, every layer); each micro-batch
    takes half. Per layer the four slots pair a compute part of one micro-batch with a communication
    part of the other: (attention, combine), (attention, dispatch), (MoE, dispatch), (MoE, combine),
    each costing the longer of the two:
    ``(max(a, k) + max(a, d) + max(m, d) + max(m, k)) / 2``. It lies between ``max(compute, comm)``
    and ``compute + comm``; the pipeline's fill and the lower GEMM efficiency of half-size
    micro-batches are not priced."""
    a, m, d, k = attention_s, moe_s, dispatch_s, combine_s
    return (max(a, k) + max(a, d) + max(m, d) + max(m, k)) / 2


def ep_collective_s(c, a, plan: LayoutPlan, em: EngineModel, lk, *, tokens: int, prefill: bool) -> float:
    """Seconds of a MoE all-to-all ``c`` (``stage_collectives``: ``c.count`` dispatches or combines over
    the layout's ``tp`` GPUs, ``tokens`` the replica's tokens of the micro-batch) as the engine's
    expert-parallel library moves it (``EngineProfile.expert_parallel``, ``hardware.comm.ep_exchange``):
    its dispatch or combine element size, hierarchical or flat kernels for a prefill or a decode step,
    direct writes or ring steps, at the factors' interconnect efficiency."""
    from .comm import ep_exchange

    ep = em.profile.expert_parallel
    num_experts, topk = _moe_shape(a)
    h = a.spec.hidden_size
    group = plan.layout.tp
    dispatch = "dispatch" in c.name
    x = ep_exchange(-(-tokens // group), h, topk, num_experts, group, ep.copy_bytes(h, dispatch=dispatch), lk,
                    hierarchical=ep.prefill_hierarchical if prefill else ep.decode_hierarchical, direct=ep.direct,
                    efficiency=em.factors.interconnect)
    return c.count * x.seconds


def stage_collective_s(c, hw, f, lk=None) -> float:
    """Seconds of a stage's collective ``c`` (``stage_collectives``) as ``planner plan`` prices it:
    ``hardware.comm`` on its link at the factors' interconnect efficiency, an all-reduce inside a node
    at their fixed per-call latency. ``lk``: the profile's links (``hardware.comm.links``), when held."""
    return collective_s(c, lk or links(hw), hw.name, efficiency=f.interconnect, allreduce_call_s=f.allreduce_latency_s)


def pipeline_step_s(stage_s, microbatches: int, f, sequences: int, held_tokens: int = 0) -> tuple[float, float, float]:
    """(seconds, bubble, overhead) of one iteration: the pipeline of ``microbatches`` micro-batches
    through stages of ``stage_s`` each (``pipeline_iteration_s``) plus the engine's per-step overhead
    under factors ``f``, paid once per iteration for the ``sequences`` one scheduler handles; where ``f``
    schedules asynchronously (vLLM from v0.14.0, which turns it off under pipeline parallelism: its release
    notes), without pipeline stages only what of that overhead outlasts the iteration. ``held_tokens``: the tokens
    those sequences hold, for the engine's ``sampler_token_s``."""
    from .expected import host_step_overhead_s

    it, bubble = pipeline_iteration_s(stage_s, microbatches)
    overhead = host_step_overhead_s(f, sequences, it, overlap=len(stage_s) == 1, held_tokens=held_tokens)
    return it + overhead, bubble, overhead


def pipeline_iteration_s(stage_s, microbatches: int) -> tuple[float, float]:
    """(seconds, bubble) of one iteration of ``microbatches`` micro-batches through stages that take
    ``stage_s`` each per micro-batch: ``max(m · max_s t_s, Σ_s t_s)`` (see the module doc), and the
    idle fraction ``1 - m · Σ_s t_s / (pp · iteration)``."""
    m, pp = microbatches, len(stage_s)
    it = max(m * max(stage_s), sum(stage_s))
    bubble = 1.0 - m * sum(stage_s) / (pp * it) if it > 0 else 0.0
    return it, max(0.0, bubble)


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


def step_cost(a, hw, plan: LayoutPlan, em: EngineModel, *, ref_batch: int, ref_context: int, ref_prompt: int):
    """The four terms of ``hardware.simulate.StepCost`` from the step model: the iteration time of
    ``N`` decode tokens at no context (weights, activations, collectives, pipeline) on
    ``TOKENS_GRID``; the engine's host work per sequence the step runs; the extra time per cached token a
    decode reads (slope between context 0 and ``ref_context`` at ``ref_batch`` sequences); the extra time
    per (query, key) pair of a prefill (a ``ref_prompt``-token prompt against ``ref_prompt`` decode tokens).

    The host work per sequence (``step_overhead_per_sequence``) is its own term (``sigma_s``), counted by the
    simulation over the sequences a step runs, so a prompt chunk of N tokens pays it once, not N times. Where
    the engine schedules asynchronously (vLLM from v0.14.0) the host work runs beside the device's step and
    adds only what outlasts it, which is not a sum: there the table holds it, a step of N tokens priced as N
    decode sequences (a prompt step's device time is long enough to hide it)."""
    from .simulate import StepCost

    f = em.factors
    # (vLLM turns async scheduling off under pipeline parallelism: pipeline_step_s then adds the host work whole)
    own = f.step_overhead_per_sequence_s > 0 and (not f.async_scheduling or plan.layout.pp > 1)
    hs = 0 if own else None  # the sequences the table's host work counts: none where sigma counts them
    t = tuple(replica_step(a, hw, plan, em, batch=n, new_tokens=1, cached=0, host_sequences=hs).iteration_s
              for n in TOKENS_GRID)
    b = max(1, ref_batch)
    t0 = replica_step(a, hw, plan, em, batch=b, new_tokens=1, cached=0, host_sequences=hs).iteration_s
    tc = replica_step(a, hw, plan, em, batch=b, new_tokens=1, cached=max(1, ref_context),
                      host_sequences=hs).iteration_s
    kappa = max(0.0, (tc - t0) / (b * max(1, ref_context)))
    n = max(1, min(ref_prompt, TOKENS_GRID[-1]))
    tp_ = replica_step(a, hw, plan, em, batch=1, new_tokens=n, cached=0, host_sequences=hs).iteration_s
    import numpy as np

    tn = float(np.interp(n, TOKENS_GRID, t))
    pi = max(0.0, (tp_ - tn) / (n * (n + 1) / 2))
    # one attention-DP rank's scheduler runs its share of the sequences (replica_step's busiest rank)
    sigma = f.step_overhead_per_sequence_s / plan.layout.attn_dp if own else 0.0
    return StepCost(TOKENS_GRID, t, kappa, pi, sigma)


__all__ = ["EngineModel", "engine_model", "ep_collective_s", "LayoutMemory", "StepBreakdown", "TOKENS_GRID", "check_links", "layout_memory", "plan_for",
           "pipeline_iteration_s", "pipeline_step_s", "replica_step", "stage_collective_s", "step_cost", "two_batch_overlap_s"]
