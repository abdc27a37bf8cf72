"""A fixed batch on a layout of several GPUs: what ``analyze`` and ``compare`` report.

``--gpus N --tp T`` is ``N / T`` data-parallel replicas of ``T`` tensor-parallel GPUs each, and the
batch is shared out among them as evenly as it goes (``analysis.parallel.batch_shares``): every
replica holds its own copy of the weights and the KV of its own sequences. The replicas are
configured alike, so a layout fits when one replica holds the largest share; every memory figure
is sized that way (``needed_bytes`` is every GPU loaded as the busiest replica's), so it agrees
with ``fits``: ``fits == (needed_bytes <= usable_bytes) == (batch <= max_batch)``.

With ``--gpus N`` alone the layout is searched (``candidates``): every tensor-parallel degree that
divides N and splits the model, the rest of the GPUs as replicas. ``analyze`` takes the fewest GPUs
per replica whose share fits (the most replicas: the per-GPU memory use it reports has no timing);
``compare`` the fitting one with the most decode tokens/s in total. planner plan's search
(``hardware.planning``) answers a different question (a request rate against latency targets, by
simulation) and is not reused here.

A layout with ``--pp`` or ``--ep`` is priced by the code ``planner plan`` uses (``hardware.deploy``
on ``analysis.parallel.Layout``): memory per GPU of every pipeline stage under the engine's accounting
(``layout_memory``: the stage's weights, its KV pool; ``Deployment.stages``), the tightest stage
deciding what fits; the decode step and the time to first token from ``replica_step`` (each stage's
share on the step model, its collectives on their link, the pipeline's micro-batches and bubble).
Tensor-parallel replicas alone keep ``hardware.serving``'s estimate (``planner serve``'s StepModel).
"""

from __future__ import annotations

from planner.analysis.errors import OptionError
from planner.analysis.parallel import Layout, LayoutPlan, TPPlan, batch_shares, layout_plan, tp_plan
from planner.analysis.records import frozen


@frozen
class Deployment:
    layout: Layout
    plan: TPPlan  # one replica's tensor-parallel split
    memory: object  # hardware.serving.Memory: one GPU of a replica
    batch: int  # sequences over all replicas
    chosen: str | None  # how the layout was chosen when only --gpus was given; None: the options named it
    layout_plan: LayoutPlan | None = None  # set when the layout has pipeline or expert parallelism (deploy prices it)
    stages: tuple = ()  # hardware.serving.Memory of one GPU of each stage (layout_plan set); memory is the tightest

    @property
    def shares(self) -> tuple[tuple[int, int], ...]:
        return batch_shares(self.batch, self.layout.dp)

    @property
    def share(self) -> int:
        """Sequences on the busiest replica."""
        return self.shares[0][0]

    @property
    def fits(self) -> bool:
        return self.memory.fits(self.share)

    @property
    def max_batch(self) -> int:
        """Sequences the whole layout holds (each replica its largest batch)."""
        return self.layout.dp * self.memory.max_batch()

    @property
    def needed_bytes(self) -> int:
        return self.layout.gpus * self.memory.needed_bytes(self.share)

    @property
    def usable_bytes(self) -> int:
        return self.layout.gpus * self.memory.usable_bytes

    @property
    def capacity_bytes(self) -> int:
        return self.layout.gpus * self.memory.capacity_bytes

    def describe(self) -> str:
        """The layout in words, with the batch's shares: what every output states."""
        lo = self.layout
        text = f"{lo.label}: {lo.dp} replica(s) of {lo.gpus_per_replica} GPU(s)"
        if lo.dp > 1:
            text += ", batch " + " + ".join(f"{n}×{s}" for s, n in self.shares) + " sequences per replica"
        if self.layout_plan is not None and lo.pp > 1:
            text += (f", {lo.pp} stages of layers " + ", ".join(f"{a}-{b - 1}" for a, b in self.layout_plan.stages)
                     + f", memory of the tightest (stage {self.tightest_stage})")
        if self.chosen:
            text += f" ({self.chosen})"
        return text

    @property
    def tightest_stage(self) -> int:
        return self.stages.index(self.memory) if self.stages else 0

    def max_context(self, a, limit: int = 1 << 24) -> int:
        """The longest context at which the busiest replica's share fits on every GPU (-1 if none)."""
        from .serving import max_context_per_gpu

        if self.layout_plan is None:
            return max_context_per_gpu(a, self.memory, self.plan, self.share, limit)
        from planner.analysis.capacity import largest
        from planner.analysis.parallel import stage_kv_bytes_per_sequence

        if a.spec.max_position_embeddings:
            limit = min(limit, a.spec.max_position_embeddings)
        b = self.share

        def fits(ctx: int) -> bool:
            kv = stage_kv_bytes_per_sequence(a.kv, self.layout_plan, ctx)
            return all(m.weights_bytes + b * (kv[s] + m.state_bytes_per_sequence) <= m.usable_bytes
                       for s, m in enumerate(self.stages))

        return largest(fits, 0, limit)

    def to_dict(self) -> dict:
        d = {**self.layout.to_dict(), "replicas": self.layout.dp, "batch": self.batch,
             "batch_per_replica": [{"sequences": s, "replicas": n} for s, n in self.shares],
             "busiest_replica_batch": self.share, "chosen": self.chosen, "priced_by": "hardware.serving"}
        if self.layout_plan is not None:
            d["priced_by"] = "hardware.deploy"
            d["tightest_stage"] = self.tightest_stage
            d["stages"] = [{"stage": s, "layers": list(self.layout_plan.stages[s]), "weights_bytes": m.weights_bytes,
                            "kv_bytes_per_sequence": m.kv_bytes_per_sequence, "usable_bytes": m.usable_bytes,
                            "needed_bytes": m.needed_bytes(self.share), "max_batch": m.max_batch()}
                           for s, m in enumerate(self.stages)]
        return d


def _needs_layout_pricing(layout: Layout) -> bool:
    return layout.pp > 1 or layout.ep > 1 or layout.attn_dp > 1


def stage_memories(a, hw, lp: LayoutPlan) -> tuple:
    """``hardware.serving.Memory`` of one GPU of each stage: weights and KV pool by vLLM's accounting
    on the layout (``hardware.deploy.layout_memory``, what ``planner plan`` sizes), KV and state per
    sequence of the stage's layers at the analysed context."""
    from planner.analysis.parallel import stage_kv_bytes_per_sequence, stage_state_bytes_per_sequence

    from .deploy import engine_model, layout_memory
    from .engine import DEFAULT_ENGINE
    from .serving import Memory

    em = engine_model(hw, DEFAULT_ENGINE)
    eng = em.profile
    lm = layout_memory(a, hw, lp, em, max_num_batched_tokens=eng.max_num_batched_tokens(hw),
                       max_num_seqs=eng.max_num_seqs(hw))
    kv = stage_kv_bytes_per_sequence(a.kv, lp, a.options.context)
    state = stage_state_bytes_per_sequence(a.kv, lp)
    cap = hw.memory_bytes
    return tuple(Memory(w, kv[s], state[s], 0, cap - (w + pool), cap)
                 for s, (w, pool) in enumerate(zip(lm.stage_weights_bytes, lm.stage_pool_bytes)))


def deployment(a, hw, layout: Layout, *, chosen: str | None = None) -> Deployment:
    """``a`` analysed at its context (the batch is ``a.options.batch``, over all replicas)."""
    from .serving import per_gpu_memory

    if _needs_layout_pricing(layout):
        from .deploy import plan_for

        lp = plan_for(a, hw, layout)
        stages = stage_memories(a, hw, lp)
        share = batch_shares(a.options.batch, layout.dp)[0][0]
        tight = min(stages, key=lambda m: (m.max_batch(), -m.needed_bytes(share)))
        return Deployment(layout, lp.attn, tight, a.options.batch, chosen, lp, stages)
    layout_plan(a.spec, layout)  # the model splits this way (its own error otherwise)
    plan = tp_plan(a.spec, layout.tp)
    return Deployment(layout, plan, per_gpu_memory(a, plan, hw), a.options.batch, chosen)


def layout_estimate(a, hw, dep: Deployment, batch: int, price_per_hour: float | None):
    """``hardware.serving.Estimate`` of one replica of a pipeline/expert-parallel ``dep`` at ``batch``
    sequences, from ``hardware.deploy.replica_step`` on vLLM's factors: the decode iteration (stages,
    collectives, micro-batches, bubble, the engine's per-step overhead) at the analysed context, and the
    time to first token as the chunked prefill of one prompt (one micro-batch: the stages in turn).
    Returns (estimate, the decode step's ``StepBreakdown`` or None)."""
    from .deploy import engine_model, replica_step
    from .engine import DEFAULT_ENGINE
    from .serving import Estimate

    lp, mem, lo = dep.layout_plan, dep.memory, dep.layout
    em = engine_model(hw, DEFAULT_ENGINE)
    ctx = a.options.context
    notes = list(lp.notes)
    mb = mem.max_batch()
    fits = all(m.fits(batch) for m in dep.stages)
    b = batch if fits else mb
    if not fits and mb >= 1:
        notes.append(f"batch {batch} does not fit at context {ctx:,}: throughput at batch {mb}, the largest that fits")
    price = price_per_hour if price_per_hour is not None else hw.price_per_hour
    step = step_s = tps = per_gpu = ttft = cost = None
    comm = 0.0
    if b >= 1:
        step = replica_step(a, hw, lp, em, batch=b, new_tokens=1, cached=ctx)
        step_s, comm = step.iteration_s, step.comm_s
        tps = b / step_s
        per_gpu = tps / lo.gpus_per_replica
        if price is not None:
            cost = price * lo.gpus_per_replica / (tps * 3600) * 1e6
        if lo.pp > 1:
            notes.append(f"{lo.label}: decode as {step.microbatches} micro-batch(es) through {lo.pp} stages, "
                         f"pipeline bubble {100 * step.bubble:.0f}%")
    if mem.weights_bytes <= mem.usable_bytes and ctx > 0:
        chunk, done, ttft = em.profile.max_num_batched_tokens(hw), 0, 0.0
        while done < ctx:
            n = min(chunk, ctx - done)
            ttft += replica_step(a, hw, lp, em, batch=1, new_tokens=n, cached=done).iteration_s
            done += n
    est = Estimate(lo.tp, dep.plan, mem, batch, max(b, 0), fits, mb, step_s, comm, None, tps, per_gpu, ttft, price, cost,
                   tuple(notes))
    return est, step


def candidates(a, hw, gpus: int) -> list[Deployment]:
    """Every tensor-parallel replica layout of ``gpus`` GPUs that splits the model, fewest GPUs per
    replica first."""
    out = []
    for tp in range(1, gpus + 1):
        if gpus % tp:
            continue
        try:
            out.append(deployment(a, hw, Layout(tp=tp, dp=gpus // tp)))
        except OptionError:
            continue
    if not out:
        raise OptionError(f"--gpus {gpus}: no tensor-parallel degree dividing {gpus} splits the model's heads",
                          "give --tp (a divisor of the attention heads) and --gpus a multiple of it")
    return out


@frozen
class Served:
    """Decode throughput and cost of a ``Deployment``: each replica priced at its share of the batch
    (``hardware.serving.estimate``); a layout that does not fit is priced with every replica at the
    largest batch it holds, as ``estimate`` does for one replica."""

    dep: Deployment
    busiest: object  # hardware.serving.Estimate of the busiest replica
    tokens_per_s: float | None  # decode tokens/s of all replicas together
    cost_per_million_tokens: float | None
    step: object = None  # hardware.deploy.StepBreakdown of the busiest replica (pipeline/expert layouts)

    @property
    def tokens_per_s_per_gpu(self) -> float | None:
        return self.tokens_per_s / self.dep.layout.gpus if self.tokens_per_s else None

    @property
    def fits(self) -> bool:
        return self.dep.fits

    @property
    def max_batch(self) -> int:
        return self.dep.max_batch

    @property
    def price_per_hour(self) -> float | None:
        return self.busiest.price_per_hour

    # the busiest replica's figures
    memory = property(lambda self: self.busiest.memory)
    step_s = property(lambda self: self.busiest.step_s)
    ttft_s = property(lambda self: self.busiest.ttft_s)
    ideal_step_s = property(lambda self: self.busiest.ideal_step_s)
    ideal_ttft_s = property(lambda self: self.busiest.ideal_ttft_s)
    batch = property(lambda self: self.busiest.batch)
    requested_batch = property(lambda self: self.busiest.requested_batch)


def served(dep: Deployment, a, analyze_at, hw, price_per_hour: float | None) -> Served:
    """``analyze_at(b)``: the model analysed at batch ``b`` (one replica's), the rest as ``a``."""
    from .serving import estimate

    steps = {}

    def est(b: int):
        if dep.layout_plan is not None:
            e, steps[b] = layout_estimate(a, hw, dep, b, price_per_hour)
            return e
        return estimate(a if b == a.options.batch else analyze_at(b), hw, tp=dep.layout.tp, price_per_hour=price_per_hour)

    if dep.fits:
        parts = [(n, est(s)) for s, n in dep.shares if s > 0]
        busiest = parts[0][1]
        total = sum(n * e.decode_tokens_per_s for n, e in parts)
    else:
        busiest = est(dep.share)  # priced at the largest batch a replica holds, if any
        total = dep.layout.dp * busiest.decode_tokens_per_s if busiest.decode_tokens_per_s else None
    price = busiest.price_per_hour
    cost = price * dep.layout.gpus / (total * 3600) * 1e6 if price is not None and total else None
    return Served(dep, busiest, total or None, cost, steps.get(dep.share))


RULE_FEWEST = "searched: the most replicas whose share of the batch fits"
RULE_FASTEST = "searched: the fitting layout with the most decode tokens/s in total"
RULE_NONE_FITS = "searched: none fits; the layout that holds the largest batch"


def fallback(deps: list[Deployment]) -> Deployment:
    """When no layout fits: the one that holds the most sequences (then the most GPUs per replica)."""
    from dataclasses import replace

    best = max(deps, key=lambda d: (d.max_batch, d.layout.tp))
    return replace(best, chosen=RULE_NONE_FITS)


def fewest_gpus_note(a, hw, dep: Deployment) -> str | None:
    """When ``dep`` does not fit: the fewest GPUs (a tensor-parallel replica, ``hardware.engine.fewest_gpus``)
    that hold the model, and one more sentence when those hold its share of the batch too."""
    from .engine import DEFAULT_ENGINE, fewest_gpus, load_engine

    if dep.fits:
        return None
    ctx = a.options.context
    mpe = a.spec.max_position_embeddings
    mml = max(1, min(ctx, mpe) if mpe else ctx)
    n = fewest_gpus(a, hw, load_engine(DEFAULT_ENGINE), max_model_len=mml)
    if n is None:
        return f"no tensor-parallel replica of up to 64× {hw.display_name} holds the model"
    return (f"the model needs at least {n}× {hw.display_name} per replica (tensor parallel) to load at context "
            f"{ctx:,}; this layout's replicas have {dep.layout.gpus_per_replica}")


__all__ = ["Served", "served", "Deployment", "deployment", "candidates", "fallback", "fewest_gpus_note", "RULE_FEWEST", "RULE_FASTEST",
           "RULE_NONE_FITS"]
