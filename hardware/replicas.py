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

Only tensor-parallel replicas are priced here so far: a layout with --pp or --ep is checked against
the model and then refused with an error that names ``planner plan``, which prices them.
"""

from __future__ import annotations

from planner.analysis.errors import OptionError
from planner.analysis.parallel import Layout, TPPlan, batch_shares, layout_plan, tp_plan
from planner.analysis.records import frozen


@frozen
class Deployment:
    layout: Layout
    plan: TPPlan  # one replica's tensor-parallel split
    memory: object  # hardware.serving.Memory: one GPU of a replica
    batch: int  # sequences over all replicas
    chosen: str | None  # how the layout was chosen when only --gpus was given; None: the options named it

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
        if self.chosen:
            text += f" ({self.chosen})"
        return text

    def to_dict(self) -> dict:
        return {**self.layout.to_dict(), "replicas": self.layout.dp, "batch": self.batch,
                "batch_per_replica": [{"sequences": s, "replicas": n} for s, n in self.shares],
                "busiest_replica_batch": self.share, "chosen": self.chosen}


def _check_priced(spec, layout: Layout) -> None:
    layout_plan(spec, layout)  # the model splits this way (its own error otherwise)
    if layout.pp > 1 or layout.ep > 1 or layout.attn_dp > 1:
        raise OptionError(f"{layout.label}: analyze and compare price tensor-parallel replicas only "
                          "(--tp and --dp); pipeline and expert parallelism are not priced here yet",
                          f"planner plan MODEL --gpus {layout.gpus} prices them")


def deployment(a, hw, layout: Layout, *, chosen: str | None = None) -> Deployment:
    """``a`` analysed at its context (the batch is ``a.options.batch``, over all replicas)."""
    from .serving import per_gpu_memory

    _check_priced(a.spec, layout)
    plan = tp_plan(a.spec, layout.tp)
    return Deployment(layout, plan, per_gpu_memory(a, plan, hw), a.options.batch, chosen)


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

    def est(b: int):
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
    return Served(dep, busiest, total or None, cost)


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
