"""``planner plan``: the cheapest deployment that meets a latency target at a request rate.

The search, in order (every rejected family keeps its reason):

1. layout families: ``TP t × PP p`` replicas (t a power of two, p in 1, 2, 4) within ``max_gpus``;
   MoE models also with experts split ``t`` ways (``EP t``), MLA models also with attention-DP over the
   stage (``ADP t``, DeepSeek-style). A family that does not split (heads, experts), does not fit
   (the engine's memory accounting, ``hardware.deploy.layout_memory``), needs a network the profile
   does not describe, or cannot reach the target even alone (TPOT of one sequence, TTFT of one prompt)
   is rejected with the figure that rules it out;
2. for each family left: the replicas it needs at the rate (a capacity estimate from the step model:
   requests per second one replica sustains at its largest batch), then a few replica counts from that
   one up, and a few ``max_num_seqs`` limits (the engine's default and smaller ones, which trade
   throughput for TPOT);
3. every candidate is simulated under load (``hardware.simulate``: Poisson arrivals at ``rate / replicas``
   per replica, continuous batching with chunked prefill, KV admission as the engine profile's
   ``scheduler.kv_admission`` says -- vLLM's blocks on demand with recompute preemption, or a reservation of
   each request's whole sequence (TensorRT-LLM's GUARANTEED_NO_EVICT; SGLang as serve counts it) -- and the
   engine's step rules) in one vectorised run; a candidate meets the target when its p90 TTFT and p90 TPOT do;
4. disaggregated prefill/decode (``xPyD``): a prefill pool of ``x`` replicas of one surviving family
   and a decode pool of ``y`` replicas of another (the two with the most prefill and decode throughput
   per GPU, and the two fastest alone), ``x`` and ``y`` sized from each pool's capacity at the rate.
   A request's KV crosses from its prefill to its decode GPUs (``kv_transfer_s``: each prefill GPU sends
   its shard, a ``send`` on NVLink when the whole deployment fits one node, else on the network
   between nodes, ``hardware.comm``). Each candidate is simulated in two vectorised runs: one prefill
   replica at ``rate / x`` (TTFT = its prefill plus the transfer), then one decode replica fed that
   replica's ready times stretched to ``rate / y`` (TPOT counts the wait for a decode slot);
5. the answer is the candidate meeting the target with the fewest GPUs; of those, the one of the most headroom
   (``headrooms``: the highest rate, up to ``HEADROOM_MAX`` times the asked one, at which the same deployment still
   meets the target), then the lowest TPOT p90. Its headroom is reported beside the serve model's held-out error of
   throughput on the engine. The Pareto front is over all simulated candidates, output tokens/s per GPU (the
   served rate's tokens over the GPUs) against tokens/s per user (1 / median TPOT).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from planner.analysis.errors import OptionError, PlannerError
from planner.analysis.parallel import Layout

from .comm import collective_s, links
from .deploy import engine_model, layout_memory, plan_for, replica_step, step_cost
from .expected import async_note, with_async_scheduling
from .engine import engine_analysis

GiB = 2**30


@dataclass(frozen=True)
class Workload:
    rate_per_s: float
    input_len: int  # (the mean where the lengths are drawn from a distribution)
    output_len: int
    requests: int = 300  # simulated per replica
    seed: int = 0
    # each request's lengths drawn from these distributions (``hardware.simulate.length_dist``: "uniform:A:B",
    # ...; seeded random draws, as the arrivals) in place of input_len / output_len; None: every request has those
    input_len_dist: str | None = None
    output_len_dist: str | None = None

    @property
    def input_lengths(self):
        """What the simulation draws each request's prompt length from (``draw_lengths``)."""
        return self.input_len_dist or self.input_len

    @property
    def output_lengths(self):
        return self.output_len_dist or self.output_len


@dataclass(frozen=True)
class Target:
    ttft_p90_s: float
    tpot_p90_s: float


@dataclass(frozen=True)
class Disagg:
    """The prefill pool of a disaggregated candidate (its decode pool is the candidate's ``layout``)."""

    prefill: Layout  # dp = prefill replicas
    prefill_memory: object
    prefill_cost: object  # simulate.StepCost
    prefill_max_num_seqs: int
    kv_transfer_s: float  # one request's KV from its prefill GPUs to its decode GPUs
    kv_transfer_bytes_per_gpu: int  # what each prefill GPU sends for one request
    link: str  # "intra_node" | "inter_node"


def disagg_family(prefill: Layout, decode: Layout) -> str:
    return f"disagg {prefill.family} prefill + {decode.family} decode"


@dataclass
class Candidate:
    layout: Layout  # the replicas (aggregated) or the decode pool (disaggregated)
    max_num_seqs: int
    max_num_batched_tokens: int
    memory: object
    cost: object  # simulate.StepCost
    metrics: dict = field(default_factory=dict)
    meets: bool = False
    bubble: float = 0.0
    disagg: Disagg | None = None

    @property
    def gpus(self) -> int:
        return self.layout.gpus + (self.disagg.prefill.gpus if self.disagg else 0)

    @property
    def family(self) -> str:
        return disagg_family(self.disagg.prefill, self.layout) if self.disagg else self.layout.family

    @property
    def label(self) -> str:
        if self.disagg is None:
            return self.layout.label
        return (f"{self.disagg.prefill.dp}P {self.disagg.prefill.family} + "
                f"{self.layout.dp}D {self.layout.family}")


@dataclass
class PlanResult:
    model: str
    hardware: str
    engine: str
    workload: Workload
    target: Target
    max_gpus: int
    fixed_gpus: int | None
    price_per_hour: float | None
    candidates: list[Candidate]
    best: Candidate | None
    pareto: list[Candidate]
    rejected: dict[str, str]  # family -> reason
    needs_at_least_gpus: int | None
    notes: list[str]
    async_scheduling: bool = False  # the engine's step overhead ran beside the device's step (vLLM from v0.14)
    headroom: "Headroom | None" = None  # how far the cheapest deployment's rate can rise before it misses the target


def _pow2_upto(n: int) -> list[int]:
    out, t = [], 1
    while t <= n:
        out.append(t)
        t *= 2
    return out


def families(spec, max_gpus: int) -> list[Layout]:
    from planner.analysis.spec import MoE

    moe = any(isinstance(layer.ffn, MoE) for layer in spec.layers)
    # attention data parallelism pays where every tensor-parallel rank holds the whole cache (MLA)
    mla = any(layer.mixer is not None and layer.mixer.tp_replicated_kv for layer in spec.layers)
    out = []
    for pp in (1, 2, 4):
        for tp in _pow2_upto(max_gpus // pp):
            out.append(Layout(tp=tp, pp=pp))
            if moe and tp > 1:
                out.append(Layout(tp=tp, pp=pp, ep=tp))
            if mla and tp > 1:
                out.append(Layout(tp=tp, pp=pp, ep=tp if moe else 1, attn_dp=tp))
    return out


def _capacity_rps(a, hw, plan, em, mem, w: Workload, seqs: int) -> float:
    """Requests per second one replica sustains: at its largest batch ``b`` (sequences limit or KV pool),
    a request costs its prompt's share of prefill steps plus ``output_len / b`` decode steps."""
    per_seq = w.input_len + w.output_len
    b = max(1, min(seqs, mem.max_batch(per_seq)))
    dec = replica_step(a, hw, plan, em, batch=b, new_tokens=1, cached=w.input_len + w.output_len // 2).iteration_s
    chunk = min(w.input_len, 8192)
    pre = replica_step(a, hw, plan, em, batch=1, new_tokens=chunk, cached=0).iteration_s * w.input_len / chunk
    return 1.0 / (pre + w.output_len * dec / b)


#: The most prefill steps a simulated replica may need (--requests × the chunks of one prompt): the lock-step
#: simulation runs at least that many iterations, each about 1-1.5 ms over all the candidates (Llama-3.1-8B,
#: 5,000 requests of 3,000 tokens: 36,000 iterations over its three simulations, 26 s; 1,000 prompts of 100,000
#: tokens in chunks of 8,192: 12,000 prefill steps, 22 s; 5,000 of them did not finish in two minutes). It admits
#: the default 300 requests of a 131,072-token prompt in 2,048-token chunks (vLLM on an A100, SGLang below 35 GiB:
#: 19,200 steps; 130,000 tokens on A100s, 72 candidates simulated, took 18 s on 2026-12-04); 15,000 refused them.
PLAN_MAX_PREFILL_STEPS = 20_000


def check_prefill_steps(w: Workload, max_num_batched_tokens: int, engine: str) -> None:
    """Refuse a plan whose simulation needs more than ``PLAN_MAX_PREFILL_STEPS`` prefill steps per replica: a
    prompt of ``input_len`` tokens takes at least ``⌈input_len / max_num_batched_tokens⌉`` steps (chunked
    prefill), and every one of the ``requests`` is prefilled."""
    chunks = -(-w.input_len // max(max_num_batched_tokens, 1))
    steps = w.requests * chunks
    if steps > PLAN_MAX_PREFILL_STEPS:
        raise OptionError(f"--requests {w.requests:,} prompts of {w.input_len:,} tokens, each prefilled in {chunks:,} "
                          f"steps of {max_num_batched_tokens:,} tokens ({engine}), are {steps:,} simulated steps; plan "
                          f"simulates at most {PLAN_MAX_PREFILL_STEPS:,}",
                          f"lower --requests to {PLAN_MAX_PREFILL_STEPS // chunks:,} or fewer, or --input-len")


def plan(a, hw, *, model_id: str, workload: Workload, target: Target, engine: str | None = None,
         max_gpus: int = 64, gpus: int | None = None, price_per_hour: float | None = None,
         disaggregated: bool = True, async_scheduling: bool | None = None) -> PlanResult:
    w, tg = workload, target
    if not (w.rate_per_s > 0 and math.isfinite(w.rate_per_s)):
        raise OptionError(f"--rate must be a positive number of requests/s, got {w.rate_per_s}")
    for name, v in (("--ttft-p90", tg.ttft_p90_s), ("--tpot-p90", tg.tpot_p90_s)):
        if not (v > 0 and math.isfinite(v)):
            raise OptionError(f"{name} must be a positive number of seconds, got {v}")
    if gpus is not None:
        max_gpus = gpus
    em = engine_model(hw, engine)
    eng = em.profile
    if async_scheduling is not None:  # --[no-]async-scheduling: vLLM before 0.14 (or a run that set it)
        em = replace(em, factors=with_async_scheduling(em.factors, eng, async_scheduling))
    mnbt = eng.max_num_batched_tokens(hw)
    check_prefill_steps(w, mnbt, eng.display_name)
    default_seqs = eng.max_num_seqs(hw)
    per_seq = w.input_len + w.output_len
    rejected: dict[str, str] = {}
    notes: list[str] = []
    note = async_note(em.factors, eng)
    if note:
        notes.append(note + " (not under pipeline parallelism, where vLLM turns it off)")
    a, engine_notes = engine_analysis(a, eng)  # the model as the engine runs it
    notes.extend(engine_notes)
    alive: list[tuple[Layout, object, object, object]] = []
    for lo in families(a.spec, max_gpus):
        fam = lo.family
        try:
            p = plan_for(a, hw, lo)
        except PlannerError as exc:
            rejected[fam] = str(exc)
            continue
        mem = layout_memory(a, hw, p, em, max_num_batched_tokens=mnbt, max_num_seqs=default_seqs)
        if not mem.fits:
            rejected[fam] = (f"does not fit: {mem.weights_bytes / GiB:.1f} GiB of weights per GPU leave no KV pool "
                             f"({eng.display_name} budget {mem.budget_bytes / GiB:.1f} GiB of {hw.memory_bytes / GiB:.1f} GiB)")
            continue
        if mem.max_batch(per_seq) < 1:
            rejected[fam] = (f"does not fit: the KV pool holds {mem.kv_capacity_tokens:,} tokens, less than one request "
                             f"({per_seq:,})" if not any(mem.stage_state_bytes) else
                             f"does not fit: the pool ({mem.kv_pool_bytes / GiB:.2f} GiB per GPU) holds less than one "
                             f"request of {per_seq:,} tokens with its recurrent state "
                             f"({max(mem.stage_state_bytes) / GiB:.2f} GiB per GPU)")
            continue
        alone = replica_step(a, hw, p, em, batch=1, new_tokens=1, cached=w.input_len + w.output_len // 2)
        if alone.iteration_s > tg.tpot_p90_s:
            rejected[fam] = (f"TPOT of a single sequence is {alone.iteration_s * 1e3:.1f} ms > {tg.tpot_p90_s * 1e3:g} ms"
                             + (f" (pipeline bubble {alone.bubble:.0%})" if lo.pp > 1 else ""))
            continue
        chunk = min(w.input_len, mnbt)
        first = replica_step(a, hw, p, em, batch=1, new_tokens=chunk, cached=0).iteration_s * w.input_len / chunk
        alone_ttft = first + request_overhead_s(em)
        if alone_ttft > tg.ttft_p90_s:
            rejected[fam] = f"TTFT of a single prompt is {alone_ttft:.2f} s > {tg.ttft_p90_s:g} s"
            continue
        alive.append((lo, p, mem, first))

    cands: list[Candidate] = []
    for lo, p, mem, _ in alive:
        fam = lo.family
        cost = step_cost(a, hw, p, em, ref_batch=min(64, default_seqs), ref_context=w.input_len + w.output_len // 2,
                         ref_prompt=min(w.input_len, mnbt))
        gpr = lo.gpus_per_replica
        cap = _capacity_rps(a, hw, p, em, mem, w, default_seqs)
        need = max(1, math.ceil(w.rate_per_s / cap))
        if gpus is not None:
            if gpus % gpr:
                rejected[fam] = f"{gpus} GPUs are not a whole number of {gpr}-GPU replicas"
                continue
            dps = [gpus // gpr]
        else:
            most = max_gpus // gpr
            # ``cap`` prices a request as its prompt's steps plus its decode steps, one after the other; the
            # engines run prompt chunks inside decode steps, so it can be low by about 2x (Llama-3.1-8B on one
            # H100, 2,000 / 300 tokens: 9.95 req/s estimated, 19.2 met in the simulation). The search starts
            # at half of it, and the simulation decides (round 2 fills in between a miss and a pass).
            dps = sorted({d for d in (math.ceil(need / 2), math.ceil(need * 0.75), need, math.ceil(need * 1.25),
                                      math.ceil(need * 1.6)) if d <= most})
            if not dps:
                rejected[fam] = (f"needs about {need} replicas ({need * gpr} GPUs) for {w.rate_per_s:g} req/s "
                                 f"(one sustains {cap:.2f} req/s); --max-gpus {max_gpus}")
                continue
        for dp in dps:
            # a recurrent state per sequence (hybrid and recurrent-only models) bounds the running sequences
            # besides the KV tokens: the engine runs no more than its pool holds, with their states
            held = mem.max_batch(per_seq) if any(mem.stage_state_bytes) else default_seqs
            for seqs in sorted({min(default_seqs, held), min(64, held)}):
                if seqs > default_seqs:
                    continue
                cands.append(Candidate(Layout(lo.tp, lo.pp, lo.ep, dp, lo.attn_dp), seqs, mnbt, mem, cost))
    if cands:
        _simulate_into(cands, a, hw, em, w, tg, notes)
        # round 2: the replica counts between a family's largest miss and its smallest pass
        extra = []
        for fam, cs in _by_family(cands).items():
            for seqs in {c.max_num_seqs for c in cs}:
                mine = [c for c in cs if c.max_num_seqs == seqs]
                passing = [c.layout.dp for c in mine if c.meets]
                failing = [c.layout.dp for c in mine if not c.meets and (not passing or c.layout.dp < min(passing))]
                if passing and failing and min(passing) - max(failing) > 1:
                    lo0 = mine[0].layout
                    for dp in range(max(failing) + 1, min(passing)):
                        extra.append(Candidate(Layout(lo0.tp, lo0.pp, lo0.ep, dp, lo0.attn_dp), seqs,
                                               mine[0].max_num_batched_tokens, mine[0].memory, mine[0].cost))
        if extra:
            _simulate_into(extra, a, hw, em, w, tg, notes)
            cands.extend(extra)
    if disaggregated and alive:
        dis = _disagg_candidates(a, hw, em, w, alive, max_gpus, gpus, default_seqs, mnbt, rejected)
        if dis:
            _simulate_disagg_into(dis, a, hw, em, w, tg, notes)
            cands.extend(dis)
    ok = [c for c in cands if c.meets]
    best, room = None, None
    if ok:
        # of the deployments with the fewest GPUs that meet the target, the one that keeps meeting it to the
        # highest rate (the most margin for what the model does not see), then the lowest TPOT p90
        fewest = min(c.gpus for c in ok)
        tied = sorted((c for c in ok if c.gpus == fewest), key=lambda c: c.metrics["tpot_p90_s"])
        rooms = headrooms(tied, a, hw, em, w, tg, _tokens_per_s_error(eng.name))
        best, room = max(zip(tied, rooms), key=lambda x: x[1].ratio)  # the first of equal headroom: lowest TPOT
    # families with candidates that all miss: the closest miss explains why
    for fam, cs in _by_family(cands).items():
        if any(c.meets for c in cs):
            cheapest = min(c.gpus for c in cs if c.meets)
            if best is not None and fam != best.family:
                rejected[fam] = f"meets the target with {cheapest} GPUs; the cheapest needs {best.gpus}"
            continue
        near = min(cs, key=lambda c: max(c.metrics["ttft_p90_s"] / tg.ttft_p90_s, c.metrics["tpot_p90_s"] / tg.tpot_p90_s))
        m = near.metrics
        why = []
        if m["ttft_p90_s"] > tg.ttft_p90_s:
            why.append(f"TTFT p90 {m['ttft_p90_s']:.2f} s > {tg.ttft_p90_s:g} s")
        if m["tpot_p90_s"] > tg.tpot_p90_s:
            why.append(f"TPOT p90 {m['tpot_p90_s'] * 1e3:.1f} ms > {tg.tpot_p90_s * 1e3:g} ms")
        if m["rejected_requests"]:
            why.append(f"{m['rejected_requests']} requests do not fit the KV pool")
        text = f"{near.label} with {near.gpus} GPUs (max_num_seqs {near.max_num_seqs}): " + "; ".join(why)
        if near.bubble > 0.05:
            text = f"bubble costs {near.bubble:.0%} at this rate; " + text
        rejected[fam] = text
    if best is not None:
        best.metrics["kv_occupancy_series"] = _kv_series(best, w, em)
    pareto = _pareto([c for c in cands if c.metrics.get("output_tokens_per_s_per_user")])
    least = None
    if not alive and not cands:
        least = fewest_gpus(a, hw, em, w, max_search=1024)
    if price_per_hour is None:
        price_per_hour = hw.price_per_hour
    if price_per_hour is None:
        notes.append("no price per GPU-hour (give --price-per-hour): cost per million tokens left null")
    return PlanResult(model_id, hw.name, eng.name, w, tg, max_gpus, gpus, price_per_hour, cands, best, pareto,
                      rejected, least, notes, async_scheduling=em.factors.async_scheduling, headroom=room)


def _tokens_per_s_error(engine: str) -> float | None:
    """The engine's held-out median |error| of steady output tokens/s (``profiles/engines/_accuracy.yaml``; the
    all-engine figure where the engine has few points), None where there is no record or the engine is ``ideal``."""
    from .accuracy import load

    acc = load()
    if acc is None or engine == "ideal":
        return None
    e = acc.for_engine(engine).get("output_tokens_per_s")
    return None if e is None else e[0].median


#: the headroom search (``headrooms``): rates from the asked one up to this multiple of it, bisected (geometrically)
#: this many times, which finds the limit to within 4^(1/64), about 2 %, of it
HEADROOM_MAX = 4.0
HEADROOM_STEPS = 6


@dataclass(frozen=True)
class Headroom:
    """How far the request rate can rise before the cheapest deployment (its layouts, replicas and batch limits as
    chosen) misses the target, simulated as the plan simulates it (the same seed, so the same arrivals at a
    proportionally shorter spacing and the same lengths)."""

    max_rate_per_s: float  # the highest rate found that still meets the target (at least the asked rate)
    ratio: float  # max_rate_per_s / the asked rate
    searched_up_to_per_s: float  # HEADROOM_MAX x the asked rate: "at least" where the deployment meets even that
    misses: tuple[str, ...]  # what the least failing rate found misses ("TTFT p90", "TPOT p90", "KV pool"); () if none
    tokens_per_s_error: float | None = None  # the engine's held-out median |error| of steady tokens/s (k-fold record)

    @property
    def within_error(self) -> bool:
        """Whether the margin is within the serve model's held-out error of throughput: a deployment whose real steps
        run that much slower than priced reaches its limit at the asked rate."""
        return self.tokens_per_s_error is not None and self.ratio - 1.0 < self.tokens_per_s_error

    def to_dict(self) -> dict:
        return {"max_rate_per_s": self.max_rate_per_s, "ratio": self.ratio,
                "searched_up_to_per_s": self.searched_up_to_per_s, "limited_by": list(self.misses),
                "tokens_per_s_held_out_median_error": self.tokens_per_s_error, "within_model_error": self.within_error}


def _misses(c: Candidate, tg: Target) -> tuple[str, ...]:
    """What of the target a simulated candidate misses (none: it meets it): its p90 TTFT or TPOT not within the
    target (a percentile of no finished request, NaN, is not within it), or requests its KV pool rejected."""
    m = c.metrics
    return tuple(name for name, bad in (("TTFT p90", not m["ttft_p90_s"] <= tg.ttft_p90_s),
                                        ("TPOT p90", not m["tpot_p90_s"] <= tg.tpot_p90_s),
                                        ("KV pool", m["rejected_requests"] != 0)) if bad)


def headrooms(cands: list[Candidate], a, hw, em, w: Workload, tg: Target,
              tokens_per_s_error: float | None = None) -> list[Headroom]:
    """Each deployment's headroom: the highest request rate, between the asked one and ``HEADROOM_MAX`` times it, at
    which ``c`` (which meets the target at the asked rate) still meets it. ``HEADROOM_STEPS`` geometric bisections
    after a first run at the top; each round simulates every candidate still searched at its own rate, the
    aggregated ones in one vectorised run and the disaggregated ones in another, as the plan simulated them. A
    deployment whose margin is thin sits near a knee where queueing grows fast: there a few per cent of step
    time the model does not see decide whether the target holds."""
    rate = w.rate_per_s
    n = len(cands)

    def run(idx: list[int], mults: list[float]) -> dict[int, Candidate]:
        out = {}
        for disagg, sim in ((False, _simulate_into), (True, _simulate_disagg_into)):
            mine = [(i, m) for i, m in zip(idx, mults) if (cands[i].disagg is not None) == disagg]
            if not mine:
                continue
            xs = [replace(cands[i], metrics={}, meets=False, bubble=0.0) for i, _ in mine]
            sim(xs, a, hw, em, w, tg, [], rates=[rate * m for _, m in mine])
            out.update({i: x for (i, _), x in zip(mine, xs)})
        return out

    lo, hi = [1.0] * n, [HEADROOM_MAX] * n
    fail: list[Candidate | None] = [None] * n
    top = run(list(range(n)), hi)
    live = [i for i in range(n) if not top[i].meets]
    for i in live:
        fail[i] = top[i]
    for _ in range(HEADROOM_STEPS):
        if not live:
            break
        mids = [math.sqrt(lo[i] * hi[i]) for i in live]
        got = run(live, mids)
        for i, m in zip(live, mids):
            if got[i].meets:
                lo[i] = m
            else:
                hi[i], fail[i] = m, got[i]
    return [Headroom(rate * (HEADROOM_MAX if fail[i] is None else lo[i]), HEADROOM_MAX if fail[i] is None else lo[i],
                     rate * HEADROOM_MAX, () if fail[i] is None else _misses(fail[i], tg), tokens_per_s_error)
            for i in range(n)]


def request_overhead_s(em) -> float:
    """What a request alone adds to its TTFT (and e2e): the engine's admission and first sampling
    (``request_overhead``) and its HTTP front end's time (``server_overhead``: a deployment's users stream
    through the server). Under load the front end is a serial queue (``_through_front_end``), as in
    ``planner serve``."""
    return em.factors.request_overhead_s + em.factors.server_overhead_s


def _through_front_end(arr, em):
    """(engine arrivals, seconds each request spends before the engine sees it plus the engine's own
    per-request cost): each replica's requests queue at its HTTP front end (``server_overhead`` per
    request, one after another, as ``planner serve`` runs them: ``simulate.front_end_arrivals``), then
    pay ``request_overhead`` once."""
    from .simulate import front_end_arrivals

    eng = front_end_arrivals(arr, em.factors.server_overhead_s)
    return eng, eng - arr + em.factors.request_overhead_s


def _by_family(cands: list[Candidate]) -> dict[str, list[Candidate]]:
    out: dict[str, list[Candidate]] = {}
    for c in cands:
        out.setdefault(c.family, []).append(c)
    return out


def keeps_up(arrivals, finish) -> bool:
    """Whether a replica keeps up with its arrivals: over the last three quarters of the arrival window,
    requests finish (shifted by the median time in the system) at least 90 % as fast as they arrive. A
    finite run's ramp and drain do not count against it; a queue that grows does."""
    import numpy as np

    R = len(arrivals)
    a0, a1 = float(arrivals[R // 4]), float(arrivals[-1])
    ok = ~np.isnan(finish)
    if a1 <= a0 or not ok.any():
        return bool(ok.all())
    lag = float(np.median(finish[ok] - arrivals[ok]))
    n_arr = int(np.count_nonzero((arrivals >= a0) & (arrivals <= a1)))
    n_fin = int(np.count_nonzero((finish[ok] >= a0 + lag) & (finish[ok] <= a1 + lag)))
    return n_fin >= 0.9 * n_arr


def _simulate_into(cands: list[Candidate], a, hw, em, w: Workload, tg: Target, notes: list[str],
                   rates: list[float] | None = None) -> None:
    """Simulate ``cands`` in one vectorised run and fill their metrics; each at ``w``'s rate, or at its own of
    ``rates``."""
    import numpy as np

    from .simulate import draw_lengths, poisson_arrivals, row_percentiles, simulate

    R = w.requests
    inp = draw_lengths(w.input_lengths, R, seed=w.seed + 1)
    out = draw_lengths(w.output_lengths, R, seed=w.seed + 2)
    rates = rates or [w.rate_per_s] * len(cands)
    arr = np.concatenate([poisson_arrivals(rt / c.layout.dp, R, seed=w.seed) for c, rt in zip(cands, rates)])
    scheds = [_scheduler(c, em) for c in cands]
    eng_arr, before = _through_front_end(arr, em)
    r = simulate([c.cost for c in cands], scheds, eng_arr, inp, out)
    notes.append(f"simulation: {len(cands)} candidates × {R} requests, {r.steps} lock-step iterations")
    pct = (row_percentiles(r.ttft_s + before), r.percentiles("tpot_s"), row_percentiles(r.e2e_s + before))
    for i, c in enumerate(cands):
        offered = rates[i] * float(np.mean(out))
        _record(c, i, pct, r, offered, keeps_up(arr[i], r.finish_s[i]), int(r.preemptions[i]), int(r.rejected[i]),
                a, hw, em, w, tg)


def _record(c: Candidate, i: int, pct, r, offered_tps: float, kept_up: bool, preemptions: int, rejected: int,
            a, hw, em, w: Workload, tg: Target) -> None:
    """Fill ``c.metrics``, ``c.meets`` and (pipelines) ``c.bubble`` from row ``i`` of a simulation: ``pct``
    the (TTFT, TPOT, e2e) percentile tables (C, 3), ``r`` the run that generated the tokens (the decode
    pool's when disaggregated). Tokens/s: the offered load when the replicas keep up (ramp and drain of a
    finite run cost a few %), what they produced when they fall behind."""
    ttft, tpot, e2e = pct
    served_tps = offered_tps if kept_up else float(r.output_tokens_per_s[i]) * c.layout.dp
    med_tpot = float(tpot[i, 0])
    c.metrics = {
        "ttft_p50_s": float(ttft[i, 0]), "ttft_p90_s": float(ttft[i, 1]), "ttft_p99_s": float(ttft[i, 2]),
        "tpot_p50_s": med_tpot, "tpot_p90_s": float(tpot[i, 1]), "tpot_p99_s": float(tpot[i, 2]),
        "e2e_p50_s": float(e2e[i, 0]), "e2e_p90_s": float(e2e[i, 1]), "e2e_p99_s": float(e2e[i, 2]),
        "output_tokens_per_s": served_tps,
        "replica_output_tokens_per_s_simulated": float(r.output_tokens_per_s[i]),
        "output_tokens_per_s_per_gpu": served_tps / c.gpus,
        "output_tokens_per_s_per_user": 1.0 / med_tpot if med_tpot > 0 else None,
        "kv_mean_occupancy": float(r.kv_mean_occupancy[i]), "kv_peak_occupancy": float(r.kv_peak_occupancy[i]),
        "mean_requests_in_system": float(r.mean_in_system[i]), "preemptions": preemptions,
        "rejected_requests": rejected,
    }
    c.meets = not _misses(c, tg)
    if c.layout.pp > 1:
        busy = max(1, min(c.max_num_seqs, round(c.metrics["mean_requests_in_system"])))
        c.bubble = replica_step(a, hw, plan_for(a, hw, c.layout), em, batch=busy, new_tokens=1,
                                cached=w.input_len + w.output_len // 2).bubble


def kv_transfer(a, hw, em, prefill_plan, total_gpus: int, input_len: int) -> tuple[float, int, str]:
    """Seconds, bytes each prefill GPU sends, and the link, for one request's KV (``input_len`` tokens)
    to go from its prefill replica to its decode replica: every prefill GPU sends the shard it holds
    (``analysis.parallel.stage_kv_bytes_per_token``, the busiest stage) at once, a ``send`` on NVLink when
    the whole deployment fits one node, else on the network between nodes."""
    from planner.analysis.parallel import Collective, stage_kv_bytes_per_token

    lk = links(hw)
    per_gpu = max(stage_kv_bytes_per_token(a.kv, prefill_plan)) * input_len
    inter = total_gpus > lk.gpus_per_node
    c = Collective("kv_transfer", "send", 2, per_gpu, 1, inter)
    return collective_s(c, lk, hw.name, efficiency=em.factors.interconnect), per_gpu, \
        "inter_node" if inter else "intra_node"


def _disagg_candidates(a, hw, em, w: Workload, alive, max_gpus: int, gpus: int | None, default_seqs: int,
                       mnbt: int, rejected: dict[str, str]) -> list[Candidate]:
    """xPyD candidates over the families that survived alone: the prefill pools with the most prompts/s
    per GPU and the fastest prompt, the decode pools with the most decode tokens/s per GPU (at their
    largest batch) and the fastest sequence; ``x`` and ``y`` from each pool's capacity at the rate."""
    per_seq = w.input_len + w.output_len
    ctx = w.input_len + w.output_len // 2
    pre, dec = [], []
    for lo, p, mem, first in alive:
        pre.append((first * lo.gpus_per_replica, first, lo, p, mem))
        b = max(1, min(default_seqs, mem.max_batch(per_seq)))
        step_b = replica_step(a, hw, p, em, batch=b, new_tokens=1, cached=ctx).iteration_s
        alone = replica_step(a, hw, p, em, batch=1, new_tokens=1, cached=ctx).iteration_s
        dec.append((step_b * lo.gpus_per_replica / b, alone, b / step_b, lo, p, mem))
    pick_p = {id(x[2]): x for x in (min(pre, key=lambda x: x[0]), min(pre, key=lambda x: x[1]))}.values()
    pick_d = {id(x[3]): x for x in (min(dec, key=lambda x: x[0]), min(dec, key=lambda x: x[1]))}.values()
    out: list[Candidate] = []
    for _, first, lp, pp_, mp in pick_p:
        cost_p = step_cost(a, hw, pp_, em, ref_batch=1, ref_context=w.input_len, ref_prompt=min(w.input_len, mnbt))
        for _, _, dec_tps, ld, pd, md in pick_d:
            fam = disagg_family(lp, ld)
            gp, gd = lp.gpus_per_replica, ld.gpus_per_replica
            # a prefill replica serves about 1 / first prompts/s; keep it under 85 %, 60 % or 40 % busy
            xs = sorted({max(1, math.ceil(w.rate_per_s * first / u)) for u in (0.85, 0.6, 0.4)})
            y0 = max(1, math.ceil(w.rate_per_s * w.output_len / dec_tps))
            ys = sorted({y0, math.ceil(y0 * 1.25), math.ceil(y0 * 1.6)})
            if gpus is not None:
                pairs = [(x, (gpus - x * gp) // gd) for x in range(1, gpus // gp + 1)
                         if gpus - x * gp >= gd and (gpus - x * gp) % gd == 0]
                share = xs[0] * gp / (xs[0] * gp + y0 * gd)
                pairs = sorted(pairs, key=lambda xy: abs(xy[0] * gp / gpus - share))[:3]
            else:
                pairs = [(x, y) for x in xs for y in ys if x * gp + y * gd <= max_gpus]
            if not pairs:
                need = xs[0] * gp + y0 * gd
                rejected[fam] = (f"needs about {xs[0]} prefill + {y0} decode replicas ({need} GPUs) for "
                                 f"{w.rate_per_s:g} req/s; " + (f"--gpus {gpus}" if gpus else f"--max-gpus {max_gpus}"))
                continue
            for x, y in pairs:
                try:
                    kv_s, kv_b, link = kv_transfer(a, hw, em, pp_, x * gp + y * gd, w.input_len)
                except PlannerError as exc:
                    rejected[fam] = f"the KV transfer has no link: {exc}"
                    break
                dg = Disagg(Layout(lp.tp, lp.pp, lp.ep, x, lp.attn_dp), mp, cost_p, default_seqs, kv_s, kv_b, link)
                cost_d = step_cost(a, hw, pd, em, ref_batch=min(64, default_seqs), ref_context=ctx, ref_prompt=1)
                for seqs in sorted({default_seqs, 64}):
                    if seqs <= default_seqs:
                        out.append(Candidate(Layout(ld.tp, ld.pp, ld.ep, y, ld.attn_dp), seqs, mnbt, md, cost_d,
                                             disagg=dg))
    return out


def _disagg_streams(cands: list[Candidate], w: Workload, record_kv: bool = False, intake_s: float = 0.0,
                    reserve_whole: bool = False, rates: list[float] | None = None):
    """The two runs of disaggregated candidates: one prefill replica each at ``rate / x`` (its requests
    through its HTTP front end first, ``intake_s`` each, one after another), then one
    decode replica each fed that replica's ready times (prefill done + KV transfer) stretched by
    ``y / x`` to its ``rate / y``; ``reserve_whole``: the decode pool admits a request only while it holds its whole
    sequence (the engine profile's ``scheduler.kv_admission: whole``). Returns (prefill result, decode result,
    arrivals, ready, decode arrivals, the order of the decode run's requests)."""
    import numpy as np

    from .simulate import Scheduler, draw_lengths, front_end_arrivals, poisson_arrivals, simulate

    R = w.requests
    inp = draw_lengths(w.input_lengths, R, seed=w.seed + 1)
    out = draw_lengths(w.output_lengths, R, seed=w.seed + 2)
    rates = rates or [w.rate_per_s] * len(cands)
    arr = np.concatenate([poisson_arrivals(rt / c.disagg.prefill.dp, R, seed=w.seed) for c, rt in zip(cands, rates)])
    p = simulate([c.disagg.prefill_cost for c in cands],
                 [Scheduler(c.disagg.prefill_max_num_seqs, c.max_num_batched_tokens,
                            c.disagg.prefill_memory.kv_capacity_tokens) for c in cands],
                 front_end_arrivals(arr, intake_s), inp, np.ones(R, dtype=np.int64))
    ready = p.finish_s + np.array([c.disagg.kv_transfer_s for c in cands])[:, None]
    stretch = np.array([c.layout.dp / c.disagg.prefill.dp for c in cands])[:, None]
    ok = ~np.isnan(ready)
    last = np.nanmax(np.where(ok, ready, -np.inf), axis=1, keepdims=True)
    darr = np.where(ok, ready, last) * stretch
    order = np.argsort(darr, axis=1, kind="stable")
    darr_sorted = np.take_along_axis(darr, order, axis=1)
    d = simulate([c.cost for c in cands],
                 [_scheduler(c, reserve_whole=reserve_whole) for c in cands],
                 darr_sorted, inp[order], out[order], prefilled=np.ones_like(order, dtype=bool), record_kv=record_kv)
    return p, d, arr, ready, darr_sorted, order, out


def _simulate_disagg_into(cands: list[Candidate], a, hw, em, w: Workload, tg: Target, notes: list[str],
                          rates: list[float] | None = None) -> None:
    import numpy as np

    from .simulate import row_percentiles

    rates = rates or [w.rate_per_s] * len(cands)
    p, d, arr, ready, darr, order, out = _disagg_streams(cands, w, intake_s=em.factors.server_overhead_s,
                                                         reserve_whole=em.profile.reserves_whole, rates=rates)
    out_o = out[order]
    ttft = ready - arr + em.factors.request_overhead_s  # (C, R) in send order; ready includes the front end
    with np.errstate(all="ignore"):
        tpot = np.where(out_o > 1, (d.finish_s - darr) / (out_o - 1), np.nan)
        back = np.argsort(order, axis=1)
        e2e = ttft + np.take_along_axis(d.finish_s - darr, back, axis=1)
    notes.append(f"simulation: {len(cands)} disaggregated candidates × {w.requests} requests, "
                 f"{p.steps} + {d.steps} lock-step iterations (prefill, decode pools)")

    # a candidate none of whose requests finished gets 0 s percentiles (its rejected requests fail it)
    pct = tuple(row_percentiles(x, empty=0.0) for x in (ttft, tpot, e2e))
    for i, c in enumerate(cands):
        offered = rates[i] * float(np.mean(out))
        _record(c, i, pct, d, offered, keeps_up(darr[i], d.finish_s[i]), int(d.preemptions[i] + p.preemptions[i]),
                int(d.rejected[i] + p.rejected[i]), a, hw, em, w, tg)


def _scheduler(c: Candidate, em=None, *, reserve_whole: bool | None = None):
    """The request simulation's scheduler of one replica of ``c``, with the step rules of the engine model ``em``
    (``EngineModel``): its profile's ``scheduler.prefill_first`` (SGLang's steps of prompts alone) and, from its
    factors' ``async_scheduling``, ``lookahead`` (vLLM schedules the next step as this one starts). ``em`` None:
    neither (a disaggregated deployment's decode pool, where no prompt runs). ``reserve_whole``: whether a request
    is admitted only while the pool holds its whole sequence (None: where ``em``'s profile sets
    ``scheduler.kv_admission: whole``, as TensorRT-LLM's GUARANTEED_NO_EVICT does; else vLLM's blocks on demand)."""
    from .simulate import Scheduler

    if reserve_whole is None:
        reserve_whole = bool(em and em.profile.reserves_whole)
    return Scheduler(c.max_num_seqs, c.max_num_batched_tokens, c.memory.kv_capacity_tokens,
                     prefill_first=bool(em and em.profile.prefill_first),
                     lookahead=bool(em and em.factors.async_scheduling), reserve_whole=reserve_whole)


def _kv_series(c: Candidate, w: Workload, em, points: int = 100) -> list[list[float]]:
    """The KV pool's occupancy over time of one replica of ``c`` (its simulation again, recorded, its
    requests through the front end as ``_simulate_into`` sends them, with ``em``'s front end and step rules):
    ``[[t_s, fraction], ...]``, at most ``points`` samples evenly spaced in time."""
    import numpy as np

    from .simulate import draw_lengths, front_end_arrivals, poisson_arrivals, simulate

    R = w.requests
    intake_s = em.factors.server_overhead_s
    if c.disagg is not None:  # the decode pool's
        r = _disagg_streams([c], w, record_kv=True, intake_s=intake_s,
                            reserve_whole=em.profile.reserves_whole)[1]
    else:
        r = simulate([c.cost], [_scheduler(c, em)],
                     front_end_arrivals(poisson_arrivals(w.rate_per_s / c.layout.dp, R, seed=w.seed), intake_s),
                     draw_lengths(w.input_lengths, R, seed=w.seed + 1), draw_lengths(w.output_lengths, R, seed=w.seed + 2),
                     record_kv=True)
    t = np.array([x[0][0] for x in r.kv_series])
    occ = np.array([x[1][0] for x in r.kv_series])
    if len(t) == 0:
        return []
    grid = np.linspace(t[0], t[-1], min(points, len(t)))
    idx = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1)
    return [[float(a), float(b)] for a, b in zip(grid, occ[idx])]


def _pareto(cs: list[Candidate]) -> list[Candidate]:
    pts = sorted(cs, key=lambda c: (-c.metrics["output_tokens_per_s_per_gpu"], -c.metrics["output_tokens_per_s_per_user"]))
    front, best_user = [], -1.0
    for c in pts:
        u = c.metrics["output_tokens_per_s_per_user"]
        if u > best_user:
            front.append(c)
            best_user = u
    return front


def fewest_gpus(a, hw, em, w: Workload, max_search: int = 1024) -> int | None:
    """The fewest GPUs of any layout family whose memory holds the model and one request."""
    best = None
    eng = em.profile
    for lo in families(a.spec, max_search):
        if best is not None and lo.gpus_per_replica >= best:
            continue
        try:
            p = plan_for(a, hw, lo)
        except PlannerError:
            continue
        mem = layout_memory(a, hw, p, em, max_num_batched_tokens=eng.max_num_batched_tokens(hw),
                            max_num_seqs=eng.max_num_seqs(hw))
        if mem.max_batch(w.input_len + w.output_len) >= 1:
            best = lo.gpus_per_replica
    return best


def cost_per_million(c: Candidate, price_per_hour: float | None) -> float | None:
    if price_per_hour is None or not c.metrics.get("output_tokens_per_s"):
        return None
    return price_per_hour * c.gpus / (c.metrics["output_tokens_per_s"] * 3600) * 1e6


def candidate_dict(c: Candidate, price_per_hour: float | None) -> dict:
    """One candidate. ``layout`` is the replicas' layout (aggregated) or the decode pool's (disaggregated,
    with the prefill pool under ``prefill``); ``label`` names the whole deployment either way."""
    dg = c.disagg
    return {"mode": "disaggregated" if dg else "aggregated", "label": c.label,
            "layout": c.layout.to_dict(), "gpus": c.gpus, "replicas": c.layout.dp, "max_num_seqs": c.max_num_seqs,
            "prefill": None if dg is None else {
                "layout": dg.prefill.to_dict(), "replicas": dg.prefill.dp, "max_num_seqs": dg.prefill_max_num_seqs,
                "memory_per_gpu": dg.prefill_memory.to_dict(), "kv_transfer_s": dg.kv_transfer_s,
                "kv_transfer_bytes_per_gpu": dg.kv_transfer_bytes_per_gpu, "kv_transfer_link": dg.link},
            "max_num_batched_tokens": c.max_num_batched_tokens, "memory_per_gpu": c.memory.to_dict(),
            "meets_target": c.meets, "pipeline_bubble": c.bubble if c.layout.pp > 1 else None,
            "cost_per_million_tokens": cost_per_million(c, price_per_hour),
            **{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in c.metrics.items()}}


def plan_dict(r: PlanResult) -> dict:
    p = r.price_per_hour
    return {
        "schema_version": 1,
        "model": r.model, "hardware": r.hardware, "engine": r.engine,
        "workload": {"rate_per_s": r.workload.rate_per_s, "input_len": r.workload.input_len,
                     "output_len": r.workload.output_len, "input_len_dist": r.workload.input_len_dist,
                     "output_len_dist": r.workload.output_len_dist, "requests_simulated_per_replica": r.workload.requests,
                     "seed": r.workload.seed},
        "target": {"ttft_p90_s": r.target.ttft_p90_s, "tpot_p90_s": r.target.tpot_p90_s},
        "search": {"max_gpus": r.max_gpus, "gpus": r.fixed_gpus, "candidates_simulated": len(r.candidates),
                   "async_scheduling": r.async_scheduling},
        "price_per_hour": p,
        "cheapest": None if r.best is None else candidate_dict(r.best, p),
        "gpus_needed": None if r.best is None else r.best.gpus,
        "headroom": None if r.headroom is None else r.headroom.to_dict(),
        "needs_at_least_gpus": r.needs_at_least_gpus,
        "pareto": [candidate_dict(c, p) for c in r.pareto],
        "rejected": [{"family": k, "reason": v} for k, v in r.rejected.items()],
        "notes": r.notes,
    }


__all__ = ["Candidate", "Disagg", "Headroom", "PlanResult", "Target", "Workload", "candidate_dict", "families", "fewest_gpus", "headrooms", "plan",
           "plan_dict"]
