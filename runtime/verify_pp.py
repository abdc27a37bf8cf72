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

Prediction: each stage's eager time for one micro-batch (``hardware.timing.step_time`` of the stage's
groups, as ``verify --tp`` predicts a shard) plus its send (``hardware.comm.collective_s`` of the
``pipeline send``, on the profile's link), combined by ``hardware.deploy.pipeline_iteration_s`` (the
same bubble formula ``planner plan`` uses). On a profile without an interconnect (a CPU) the send has
no predicted bandwidth or latency: it is measured and shown, not predicted.
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
                        "predicted_send_s": s.predicted_send_s,
                        "measured_compute_s": s.measured_compute_s, "measured_send_s": s.measured_send_s}
                       for s in self.stages],
            "timing": {"predicted_s": self.predicted_s, "measured_s": self.measured_s, "error": self.error,
                       "predicted_bubble": self.predicted_bubble, "measured_bubble": self.measured_bubble,
                       "iteration_samples_s": list(self.iteration_samples_s), "send_rule": self.send_rule,
                       "error_definition": "predicted_s / measured_s - 1 (measured: the last stage's time between "
                                           "the ends of successive iterations, median)"},
            "notes": list(self.notes),
        }


def run_verify_pp(spec: ModelSpec, opts: VerifyOptions, pp: int, *, model_id: str = "", want_logits: bool = False,
                  progress=None) -> PPResult | None:
    import os

    from . import require_torch

    torch = require_torch()
    from planner.analysis.errors import RuntimeUnavailableError
    from planner.analysis.kv import kv_cache
    from planner.analysis.parallel import (Layout, layout_groups, layout_plan, stage_collectives,
                                           stage_kv_bytes_per_sequence, stage_params)
    from planner.analysis.trace import step_groups
    from planner.analysis.weights import weight_format
    from planner.hardware.comm import collective_s, links
    from planner.hardware.deploy import pipeline_iteration_s
    from planner.hardware.expected import device_defaults
    from planner.hardware.timing import step_time

    from .calibrate import device_name, total_memory_bytes
    from .model import check_supported
    from .parallel import launch, under_torchrun
    from .pipeline import check_pp_supported, microbatch_sizes, rank_main
    from .verify import choose_profile, default_dtype, profile_threads

    progress = progress or (lambda *a: None)
    opts.check()
    check_supported(spec)
    tp = opts.tp
    world = tp * pp
    check_pp_supported(spec, pp, tp)
    dev_type = opts.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev_type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}",
                                          "use --device cpu")
        if not under_torchrun() and torch.cuda.device_count() < world:
            raise RuntimeUnavailableError(f"--tp {tp} --pp {pp} needs {world} GPUs; this machine has "
                                          f"{torch.cuda.device_count()}",
                                          "lower --pp, or run under torchrun across nodes (see the README)")
    if opts.weights:
        raise RuntimeUnavailableError("verify --pp runs seeded random weights; --weights is not split by stage yet",
                                      "drop --weights, or use --pp 1")
    dtype_name = opts.dtype or default_dtype(spec, dev_type)
    B, C = opts.batch, opts.context
    fmt, _ = weight_format(spec, dtype_name)
    kvd = fmt.act
    act_bytes = fmt.act.bits // 8
    # where the ranks sit: one host when spawned here; torchrun's processes per node otherwise
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world)) if under_torchrun() else world
    plan = layout_plan(spec, Layout(tp=tp, pp=pp), per_node)
    sizes = microbatch_sizes(B, pp)
    m, mb = len(sizes), sizes[0]

    name = device_name(torch.device(dev_type))
    hw, hw_reason = choose_profile(opts.hardware, dev_type, name, total_memory_bytes(torch.device(dev_type)))
    threads = opts.threads or (profile_threads(hw) if dev_type == "cpu" else None)
    lk = links(hw)
    dd = device_defaults()
    e_ic = hw.interconnect_efficiency if hw.interconnect_efficiency is not None else dd["interconnect"]
    latency = hw.allreduce_latency_s if hw.allreduce_latency_s is not None else dd["allreduce_latency_s"]

    def allreduce_s(c) -> float:
        """A stage's all-reduces as verify --tp predicts them: calls × latency, + bytes / link where there is one."""
        bw = lk.inter_bytes_per_s if c.inter_node else lk.intra_bytes_per_s
        if bw:
            return collective_s(c, lk, hw.name, efficiency=e_ic, allreduce_call_s=latency)
        return c.count * latency

    want_params = stage_params(spec, plan)
    want_kv = [b * B for b in stage_kv_bytes_per_sequence(kv_cache(spec, kvd, fmt.act), plan, C + 1)]
    groups_b = step_groups(spec, fmt, kvd, batch=B, new_tokens=1, cached_tokens=C)
    groups_mb = groups_b if mb == B else step_groups(spec, fmt, kvd, batch=mb, new_tokens=1, cached_tokens=C)
    want_flops, pred_compute, pred_ar, pred_send, sends = [], [], [], [], []
    for s in range(pp):
        want_flops.append(sum(g.count * g.op.flops for g in layout_groups(groups_b, plan, s)))
        sg = layout_groups(groups_mb, plan, s)
        st, _ = step_time([g.op for g in sg], hw, fmt.compute.compute, counts=[g.count for g in sg], rows=mb)
        colls = stage_collectives(spec, plan, s, mb, act_bytes)
        pred_ar.append(sum(allreduce_s(c) for c in colls if c.kind == "all_reduce"))
        pred_compute.append(st.eager_s + pred_ar[-1])
        send = next((c for c in colls if c.kind == "send"), None)
        sends.append(send)
        if send is None:
            pred_send.append(None)
            continue
        bw = lk.inter_bytes_per_s if send.inter_node else lk.intra_bytes_per_s
        pred_send.append(collective_s(send, lk, hw.name, efficiency=e_ic) if bw else None)
    if any(s is not None for s in sends) and all(p is None for p, c in zip(pred_send, sends) if c is not None):
        send_rule = (f"profile '{hw.name}' has no interconnect: the {sends[0].bytes_per_gpu:,}-byte send is "
                     "measured, not predicted")
    else:
        where = "network between nodes" if any(c is not None and c.inter_node for c in sends) else "link inside a node"
        send_rule = (f"hardware.comm: 1 step × latency + {sends[0].bytes_per_gpu:,} bytes / (bandwidth × {e_ic:g}) "
                     f"on the {where} of '{hw.name}'")
    stage_s = [c + (p or 0.0) for c, p in zip(pred_compute, pred_send)]
    pred_it, pred_bubble = pipeline_iteration_s(stage_s, m)

    progress("ranks", 0, 1)
    gathered = launch(rank_main, world, (spec, tp, dtype_name, dev_type, B, C, opts.steps, opts.warmup, opts.seed,
                                         threads, want_logits), flag="--pp" if tp == 1 else "--tp × --pp =")
    progress("ranks", 1, 1)
    if gathered is None:  # a non-zero torchrun rank: rank 0 reports
        return None
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
        rows.append(StageRow(r.rank, s, r.tp_rank, r.layers, tuple(checks), pred_compute[s], pred_send[s],
                             statistics.median(r.compute_samples_s),
                             statistics.median(r.send_samples_s) if r.send_samples_s else None, pred_ar[s]))
    notes = list(plan.notes)
    notes.append(f"{m} micro-batch(es) of {', '.join(map(str, sizes))} sequence(s); each stage's tokens come back "
                 "from the last stage (a small send the prediction leaves out)")
    notes.append("random weights: each rank draws the single-process decoder's weights (same seed) and keeps its stage's")
    if tp > 1:
        notes.append(f"each of a stage's {tp} tensor-parallel ranks sends its 1/{tp} slice of the hidden state and the "
                     "next stage all-gathers them (vLLM's all_gather_group); the stage's all-reduces are predicted as "
                     "verify --tp predicts them, inside each stage's compute")
    return PPResult(model_id or spec.name, pp, tp, "nccl" if dev_type == "cuda" else "gloo", dev_type, dtype_name, opts,
                    hw.name, hw_reason, tuple(sizes), tuple(rows), gathered[-1].iteration_samples_s, pred_it,
                    pred_bubble, send_rule, tuple(notes), gathered[-1].logits)
