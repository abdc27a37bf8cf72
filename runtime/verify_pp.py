"""``planner verify MODEL --pp N``: every rank's pipeline stage checked against the analysis of that
stage, the steady-state decode iteration timed beside the pipeline model's prediction, and the
stage-to-stage send timed apart beside its predicted term.

Per rank (exact), on ``analysis.parallel``'s split (``layout_plan(spec, Layout(pp=N))``):

- parameters from the stage itself equal ``stage_params`` (embedding first, norm and head last, the
  embedding again on the last stage when tied);
- the FLOPs ``FlopCounterMode`` counts over the rank's share of one iteration (all its micro-batches)
  equal the sum of ``layout_groups`` of the decode step over the stage (what ``hardware.deploy`` times);
- the stage's KV caches equal ``stage_kv_bytes_per_sequence`` at the cache's capacity × batch;
- the hidden state a stage sends equals the ``pipeline send`` collective of ``stage_collectives``.

Prediction (``predict_pipeline``, pure arithmetic): each stage's expected time for one micro-batch on
the project's one step model, as ``verify`` and ``verify --tp`` price a step
(``runtime.verify.expected_ops_cost``: ``hardware.expected.step_cost`` of the stage's ``layout_groups``
on the torch runtime's engine profile, the stage's busiest rank's dispatched ops as its kernel
launches), plus the stage's collectives -- its tensor-parallel all-reduces and its send to the next
stage -- priced as ``planner plan`` prices them (``hardware.deploy.stage_collective_s``), combined
into an iteration by ``hardware.deploy.pipeline_step_s`` (plan's bubble formula and the engine's
per-step overhead once per iteration). On a profile without an interconnect (a CPU) a collective
has no predicted bandwidth: an all-reduce is its calls × the all-reduce latency (as ``verify --tp``
says), and the send is measured and shown, not predicted.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from planner.analysis.spec import ModelSpec

from .verify import Check, VerifyOptions


@dataclass(frozen=True)
class StageRow:
    rank: int
    stage: int
    tp_rank: int
    layers: tuple[int, int]
    checks: tuple[Check, ...]
    predicted_compute_s: float  # one micro-batch, eager (with the stage's all-reduces under --tp)
    predicted_send_s: float | None  # None: the last stage, or a profile with no link
    measured_compute_s: float  # median over micro-batches of the timed iterations
    measured_send_s: float | None  # one way, median of the ping-pong
    predicted_allreduce_s: float = 0.0  # the stage's tensor-parallel all-reduces, in predicted_compute_s
    ideal_compute_s: float = 0.0  # the stage's roofline at the profile's peaks (no factors, no collectives)
    compute_parts: tuple[tuple[str, float], ...] = ()  # seconds each factor adds to the ideal (StepCost.parts)
    kernels: int = 0  # aten ops this rank dispatches for one micro-batch (the prediction takes its stage's most)

    @property
    def predicted_stage_s(self) -> float:
        return self.predicted_compute_s + (self.predicted_send_s or 0.0)


@dataclass(frozen=True)
class PPResult:
    model_id: str
    pp: int
    tp: int
    backend: str
    device_type: str
    dtype: str
    options: VerifyOptions
    hardware_name: str
    hardware_reason: str
    microbatches: tuple[int, ...]
    stages: tuple[StageRow, ...]
    iteration_samples_s: tuple[float, ...]
    predicted_s: float
    predicted_bubble: float
    send_rule: str
    notes: tuple[str, ...]
    logits: list | None
    engine: str = ""  # the engine profile of the step model's price (profiles/engines/torch-*.yaml)

    @property
    def measured_s(self) -> float:
        return statistics.median(self.iteration_samples_s)

    @property
    def measured_bubble(self) -> float:
        """Idle fraction of the stages in a measured iteration: ``1 - m · Σ_s t_s / (pp · iteration)``
        with the measured per-micro-batch compute ``t_s``."""
        per_stage = {}
        for s in self.stages:  # the slowest tensor-parallel rank of each stage
            per_stage[s.stage] = max(per_stage.get(s.stage, 0.0), s.measured_compute_s)
        busy = sum(per_stage.values()) * len(self.microbatches)
        return max(0.0, 1.0 - busy / (self.pp * self.measured_s))

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    @property
    def checks_ok(self) -> bool:
        return all(c.ok for s in self.stages for c in s.checks)

    def to_dict(self, schema_version: int = 1) -> dict:
        return {
            "schema_version": schema_version, "model": self.model_id, "pp": self.pp, "tp": self.tp, "backend": self.backend,
            "device": self.device_type, "dtype": self.dtype, "batch": self.options.batch, "context": self.options.context,
            "layout": {"tp": self.tp, "pp": self.pp, "ep": 1, "dp": 1, "label": f"TP{self.tp} PP{self.pp}"},
            "microbatches": list(self.microbatches),
            "hardware": self.hardware_name, "hardware_choice": self.hardware_reason,
            "stages": [{"rank": s.rank, "stage": s.stage, "tp_rank": s.tp_rank, "layers": list(s.layers),
                        "checks": {c.name: {"predicted": c.predicted, "measured": c.measured, "ok": c.ok, "unit": c.unit}
                                   for c in s.checks},
                        "predicted_compute_s": s.predicted_compute_s, "predicted_allreduce_s": s.predicted_allreduce_s,
                        "ideal_compute_s": s.ideal_compute_s, "compute_explain": dict(s.compute_parts),
                        "kernels": s.kernels, "predicted_send_s": s.predicted_send_s,
                        "measured_compute_s": s.measured_compute_s, "measured_send_s": s.measured_send_s}
                       for s in self.stages],
            "timing": {"predicted_s": self.predicted_s, "measured_s": self.measured_s, "error": self.error,
                       "predicted_bubble": self.predicted_bubble, "measured_bubble": self.measured_bubble,
                       "iteration_samples_s": list(self.iteration_samples_s), "send_rule": self.send_rule,
                       "engine": self.engine,
                       "error_definition": "predicted_s / measured_s - 1 (measured: the last stage's time between "
                                           "the ends of successive iterations, median)"},
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class StagePrediction:
    """One micro-batch on one stage (one GPU of it)."""

    cost: object  # hardware.expected.StepCost of the stage's ops (ideal, expected, seconds by factor)
    compute_s: float  # cost.expected_s less the engine's fixed per-step overhead (paid once per iteration)
    allreduce_s: float  # the stage's tensor-parallel all-reduces
    send_s: float | None  # the send to the next stage (None: the last stage, or no link to price it on)
    send: object | None  # analysis.parallel.Collective of that send (None: the last stage)

    @property
    def stage_s(self) -> float:
        return self.compute_s + self.allreduce_s + (self.send_s or 0.0)


@dataclass(frozen=True)
class PipelinePrediction:
    stages: tuple[StagePrediction, ...]
    microbatches: int
    iteration_s: float  # pipeline of the stages + the engine's per-step overhead
    bubble: float
    overhead_s: float
    send_rule: str
    engine: str


def predict_pipeline(spec: ModelSpec, fmt, hw, plan, *, batch: int, context: int, device_type: str,
                     kernels=None) -> PipelinePrediction:
    """The steady-state decode iteration of ``batch`` sequences at ``context`` cached tokens on ``plan``
    (``analysis.parallel.layout_plan``), each stage's micro-batch on the step model and the stages
    combined as ``hardware.deploy`` combines them for ``planner plan`` (see the module doc).
    ``kernels``: per stage, the aten ops its busiest rank dispatches for one micro-batch (None, or a
    None entry: the trace's kernels). Pure arithmetic: no torch."""
    from planner.analysis.parallel import layout_groups, stage_collectives
    from planner.analysis.trace import step_groups
    from planner.hardware.comm import links
    from planner.hardware.deploy import pipeline_step_s, stage_collective_s

    from .verify import expected_ops_cost, verify_engine_name, verify_factors

    pp = plan.layout.pp
    m = max(1, min(pp, batch))  # micro-batches, as hardware.deploy.replica_step splits a batch
    mb = -(-batch // m)  # sequences of the largest
    f = verify_factors(hw, spec, device_type, batch=mb)
    lk = links(hw)
    act_bytes = fmt.act.bits // 8
    groups = step_groups(spec, fmt, fmt.act, batch=mb, new_tokens=1, cached_tokens=context)
    kernels = list(kernels) if kernels is not None else [None] * pp

    def on_link(c) -> bool:
        return bool(lk.inter_bytes_per_s if c.inter_node else lk.intra_bytes_per_s)

    stages = []
    for s in range(pp):
        cost = expected_ops_cost(layout_groups(groups, plan, s), spec, fmt, hw, rows=mb, device_type=device_type,
                                 kernels=kernels[s], factors=f, tp=plan.layout.tp)
        compute = cost.expected_s - (f.step_overhead_s + f.step_overhead_per_sequence_s * mb)
        colls = stage_collectives(spec, plan, s, mb, act_bytes)
        # without a link (a CPU profile) an all-reduce is its calls × latency, as verify --tp predicts it
        ar = sum(stage_collective_s(c, hw, f, lk) if on_link(c) else c.count * f.allreduce_latency_s
                 for c in colls if c.kind == "all_reduce")
        send = next((c for c in colls if c.kind == "send"), None)
        send_s = stage_collective_s(send, hw, f, lk) if send is not None and on_link(send) else None
        stages.append(StagePrediction(cost, compute, ar, send_s, send))
    it, bubble, overhead = pipeline_step_s([st.stage_s for st in stages], m, f, batch)
    sends = [st.send for st in stages if st.send is not None]
    if sends and all(st.send_s is None for st in stages):
        send_rule = (f"profile '{hw.name}' has no interconnect: the {sends[0].bytes_per_gpu:,}-byte send is "
                     "measured, not predicted")
    elif sends:
        where = "network between nodes" if any(c.inter_node for c in sends) else "link inside a node"
        send_rule = (f"hardware.comm as plan prices it: 1 step × latency + {sends[0].bytes_per_gpu:,} bytes / "
                     f"(bandwidth × {f.interconnect:g}) on the {where} of '{hw.name}'")
    else:
        send_rule = "one stage: no send"
    return PipelinePrediction(tuple(stages), m, it, bubble, overhead, send_rule, verify_engine_name(device_type, False))


def run_verify_pp(spec: ModelSpec, opts: VerifyOptions, pp: int, *, model_id: str = "", want_logits: bool = False,
                  progress=None) -> PPResult | None:
    import os

    from . import require_torch

    require_torch()
    from planner.analysis.kv import kv_cache
    from planner.analysis.parallel import (Layout, layout_groups, layout_plan, stage_collectives,
                                           stage_kv_bytes_per_sequence, stage_params)
    from planner.analysis.trace import step_groups
    from planner.analysis.weights import weight_format

    from .model import check_supported
    from .parallel import launch, rank_setup, under_torchrun
    from .pipeline import check_pp_supported, microbatch_sizes, rank_main

    opts.check()
    check_supported(spec)
    tp = opts.tp
    world = tp * pp
    check_pp_supported(spec, pp, tp)
    setup = rank_setup(spec, opts, world, option="--pp", needs=f"--tp {tp} --pp {pp}", weights_note="split by stage")
    dev_type, dtype_name, hw = setup.device_type, setup.dtype_name, setup.hw
    B, C = opts.batch, opts.context
    fmt, _ = weight_format(spec, dtype_name)
    kvd = fmt.act
    act_bytes = fmt.act.bits // 8
    # where the ranks sit: one host when spawned here; torchrun's processes per node otherwise
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world)) if under_torchrun() else world
    plan = layout_plan(spec, Layout(tp=tp, pp=pp), per_node)
    sizes = microbatch_sizes(B, pp)

    want_params = stage_params(spec, plan)
    want_kv = [b * B for b in stage_kv_bytes_per_sequence(kv_cache(spec, kvd, fmt.act), plan, C + 1)]
    groups_b = step_groups(spec, fmt, kvd, batch=B, new_tokens=1, cached_tokens=C)
    want_flops = [sum(g.count * g.op.flops for g in layout_groups(groups_b, plan, s)) for s in range(pp)]
    sends = [next((c for c in stage_collectives(spec, plan, s, sizes[0], act_bytes) if c.kind == "send"), None)
             for s in range(pp)]

    gathered = launch(rank_main, world, (spec, tp, dtype_name, dev_type, B, C, opts.steps, opts.warmup, opts.seed,
                                         setup.threads, want_logits), flag="--pp" if tp == 1 else "--tp × --pp =",
                      progress=progress)
    if gathered is None:  # a non-zero torchrun rank: rank 0 reports
        return None
    # each stage priced at the dispatched ops of its busiest rank, as verify --tp prices a shard
    pred = predict_pipeline(spec, fmt, hw, plan, batch=B, context=C, device_type=dev_type,
                            kernels=[max(r.kernels for r in gathered if r.stage == s) or None for s in range(pp)])
    rows = []
    for r in gathered:
        s = r.stage
        checks = [Check("params", want_params[s], r.params, "parameters", "analysis.parallel.stage_params"),
                  Check("flops", want_flops[s], r.flops, "FLOPs", "Σ layout_groups of the decode step over the stage"),
                  Check("kv_bytes", want_kv[s], r.kv_bytes, "bytes",
                        f"stage_kv_bytes_per_sequence({C + 1}) × {B}")]
        if sends[s] is not None:
            checks.append(Check("send_bytes", sends[s].bytes_per_gpu, r.send_bytes, "bytes",
                                "the pipeline send of stage_collectives"))
        ps = pred.stages[s]
        rows.append(StageRow(r.rank, s, r.tp_rank, r.layers, tuple(checks), ps.compute_s + ps.allreduce_s, ps.send_s,
                             statistics.median(r.compute_samples_s),
                             statistics.median(r.send_samples_s) if r.send_samples_s else None, ps.allreduce_s,
                             ps.cost.ideal_s, tuple(ps.cost.parts.items()), r.kernels))
    notes = list(plan.notes)
    notes.append(f"{len(sizes)} micro-batch(es) of {', '.join(map(str, sizes))} sequence(s); each stage's tokens come "
                 "back from the last stage (a small send the prediction leaves out)")
    notes.append(f"each stage's compute is the step model's expected time of its ops on {pred.engine}, its busiest "
                 "rank's dispatched ops as the launches (the gap to the ideal by factor in --json); the stages are "
                 "combined by plan's pipeline formula (hardware.deploy)")
    notes.append("random weights: each rank draws the single-process decoder's weights (same seed) and keeps its stage's")
    if tp > 1:
        notes.append(f"each of a stage's {tp} tensor-parallel ranks sends its 1/{tp} slice of the hidden state and the "
                     "next stage all-gathers them (vLLM's all_gather_group); the stage's all-reduces are predicted as "
                     "plan prices them, inside each stage's compute")
    return PPResult(model_id or spec.name, pp, tp, setup.backend, dev_type, dtype_name, opts, hw.name, setup.hw_reason,
                    tuple(sizes), tuple(rows), gathered[-1].iteration_samples_s, pred.iteration_s, pred.bubble,
                    pred.send_rule, tuple(notes), gathered[-1].logits, pred.engine)
