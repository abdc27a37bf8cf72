"""``planner verify MODEL --tp N``: every rank's shard checked against the analysis of that shard, the
step timed on every rank, and the all-reduces timed apart against the predicted collective term.

Per rank (exact): the shard's parameters (from the model itself) equal the analysis' per-rank count
(``analysis.parallel.shard_params``: norms whole, replicated KV heads' projections whole per head,
everything else split ``tp`` ways); the FLOPs ``FlopCounterMode`` counts over the rank's decode step equal the sum of
``analysis.parallel.shard_ops`` over the trace; the rank's KV cache equals ``bytes_per_sequence //
kv_divisor × batch``.

Time: the eager decode step on every rank (ranks start each step together, after a barrier), the
prediction being the sharded trace's step on the step model (``runtime.verify.expected_ops_cost``:
``hardware.expected.step_cost`` on the torch engine profile, the rank's dispatched ops as launches) plus the collective
term. Collective term, as ``hardware.expected`` writes it: ``calls × allreduce_latency + ring bytes /
(interconnect × interconnect efficiency)``, the two per-layer all-reduces of ``analysis.parallel``
(device factors from the profile, else ``profiles/engines/_device.yaml``); the bandwidth part is
absent when the profile has no interconnect (a CPU). Each collective is timed alone over a few
recorded steps (a synchronise before and after), so its time includes waiting for the slowest rank.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from planner.analysis.spec import ModelSpec

from .verify import Check, VerifyOptions


@dataclass(frozen=True)
class CollectiveRow:
    kind: str
    calls_per_step: float
    bytes_per_call: int
    time_per_call_s: float  # median over ranks of each rank's mean
    time_per_step_s: float
    predicted_per_step_s: float | None
    in_prediction: bool


@dataclass(frozen=True)
class TPResult:
    model_id: str
    tp: int
    backend: str
    device_type: str
    dtype: str
    options: VerifyOptions
    hardware_name: str
    hardware_reason: str
    rank_checks: tuple[tuple[Check, ...], ...]
    step_samples_s: tuple[tuple[float, ...], ...]  # per rank
    predicted_compute_s: float  # the sharded trace's eager step, no collectives
    predicted_collective_s: float
    collective_rule: str
    collectives: tuple[CollectiveRow, ...]
    notes: tuple[str, ...]
    logits: list | None
    step_bytes: int = 0  # one rank's share of the step's bytes (the sharded trace)

    @property
    def measured_s(self) -> float:
        """The slowest rank's median step (a step ends when every rank has its logits)."""
        return max(statistics.median(s) for s in self.step_samples_s)

    @property
    def predicted_s(self) -> float:
        return self.predicted_compute_s + self.predicted_collective_s

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    @property
    def checks_ok(self) -> bool:
        return all(c.ok for checks in self.rank_checks for c in checks)

    def to_dict(self, schema_version: int = 1) -> dict:
        return {
            "schema_version": schema_version, "model": self.model_id, "tp": self.tp, "backend": self.backend,
            "device": self.device_type, "dtype": self.dtype, "batch": self.options.batch, "context": self.options.context,
            "hardware": self.hardware_name, "hardware_choice": self.hardware_reason,
            "ranks": [{"rank": r, "checks": {c.name: {"predicted": c.predicted, "measured": c.measured, "ok": c.ok,
                                                       "unit": c.unit} for c in checks},
                       "step_median_s": statistics.median(self.step_samples_s[r]),
                       "step_samples_s": list(self.step_samples_s[r])}
                      for r, checks in enumerate(self.rank_checks)],
            "timing": {"predicted_s": self.predicted_s, "predicted_compute_s": self.predicted_compute_s,
                       "predicted_collective_s": self.predicted_collective_s, "collective_rule": self.collective_rule,
                       "measured_s": self.measured_s, "error": self.error, "step_bytes_per_rank": self.step_bytes,
                       "achieved_bytes_per_s_per_rank": self.step_bytes / self.measured_s,
                       "error_definition": "predicted_s / measured_s - 1 (measured: the slowest rank's median step)"},
            "collectives": [{"kind": c.kind, "calls_per_step": c.calls_per_step, "bytes_per_call": c.bytes_per_call,
                             "time_per_call_s": c.time_per_call_s, "time_per_step_s": c.time_per_step_s,
                             "predicted_per_step_s": c.predicted_per_step_s, "in_prediction": c.in_prediction}
                            for c in self.collectives],
            "notes": list(self.notes),
        }


def run_verify_tp(spec: ModelSpec, opts: VerifyOptions, *, model_id: str = "", want_logits: bool = False,
                  progress=None) -> TPResult:
    from . import require_torch

    require_torch()
    from planner.analysis.kv import kv_cache
    from planner.analysis.parallel import allreduce_bytes_per_gpu, shard_ops, shard_params, tp_plan
    from planner.analysis.trace import Totals, step_ops
    from planner.analysis.weights import weight_format

    from .model import check_supported
    from .parallel import LAYER_AR, check_tp_supported, launch, rank_main, rank_setup
    from .verify import expected_ops_cost, verify_factors

    opts.check()
    tp = opts.tp
    check_supported(spec)
    plan = tp_plan(spec, tp)
    check_tp_supported(spec, tp)
    setup = rank_setup(spec, opts, tp, option="--tp", needs=f"--tp {tp}", weights_note="sharded")
    dev_type, dtype_name, hw = setup.device_type, setup.dtype_name, setup.hw
    B, C = opts.batch, opts.context
    fmt, _ = weight_format(spec, dtype_name)
    kvd = fmt.act
    want_params = shard_params(spec, plan)
    ops = shard_ops(step_ops(spec, fmt, kvd, batch=B, new_tokens=1, cached_tokens=C), plan)
    shard_totals = Totals.of(ops)
    want_flops = shard_totals.flops
    want_kv = kv_cache(spec, kvd, fmt.act).bytes_per_sequence(C + 1) // plan.kv_divisor * B

    notes = list(plan.notes)
    # the collective term (hardware/expected.py's all-reduce cost), the device factors of the step model's
    f = verify_factors(hw, spec, dev_type, batch=B, tp=tp)
    latency, e_ic = f.allreduce_latency_s, f.interconnect
    calls = sum((layer.mixer is not None) + (layer.ffn is not None) for layer in spec.layers)
    ring_bytes = allreduce_bytes_per_gpu(spec, B, fmt.act.bits // 8, tp)
    pred_ar = calls * latency
    rule = f"{calls} calls × {latency * 1e6:.3g} µs latency"
    if hw.interconnect_bytes_per_s:
        pred_ar += ring_bytes / (hw.interconnect_bytes_per_s * e_ic)
        rule += f" + {ring_bytes:,} ring bytes / ({hw.interconnect_bytes_per_s / 1e9:.3g} GB/s × {e_ic:g})"
    else:
        rule += f" (profile '{hw.name}' has no interconnect: the {ring_bytes:,}-byte bandwidth term is not predicted)"

    gathered = launch(rank_main, tp, (spec, dtype_name, dev_type, B, C, opts.steps, opts.warmup, opts.seed,
                                      setup.threads, want_logits), progress=progress)
    if gathered is None:  # a non-zero torchrun rank: rank 0 prints
        return None
    rank_checks = tuple(
        (Check("params", want_params, r.params, "parameters", "analysis.parallel.shard_params"),
         Check("flops", want_flops, r.flops, "FLOPs", "Σ shard_ops of the decode step"),
         Check("kv_bytes", want_kv, r.kv_bytes, "bytes", f"bytes_per_sequence // {plan.kv_divisor} × {B}"))
        for r in gathered)
    rows = []
    kinds = dict.fromkeys(k for r in gathered for k, _, _ in r.collectives)
    for kind in kinds:
        per_rank_mean, per_rank_step, n_calls, nbytes = [], [], 0, 0
        for r in gathered:
            mine = [(b, t) for k, b, t in r.collectives if k == kind]
            if not mine:
                continue
            per_rank_mean.append(sum(t for _, t in mine) / len(mine))
            per_rank_step.append(sum(t for _, t in mine) / r.recorded_steps)
            n_calls = len(mine) / r.recorded_steps
            nbytes = mine[0][0]
        layer = kind == LAYER_AR
        rows.append(CollectiveRow(kind, n_calls, nbytes, statistics.median(per_rank_mean), statistics.median(per_rank_step),
                                  pred_ar if layer else None, layer))
    # the shard's step on planner's step model (torch engine profile), at the busiest rank's dispatched ops
    pred_compute_s = expected_ops_cost(ops, spec, fmt, hw, rows=B, device_type=dev_type,
                                       kernels=max(r.kernels for r in gathered) or None, factors=f, tp=tp).expected_s
    notes.append("the embedding all-reduce and the logits all-gather run once per step and are not in the "
                 "analysis' collective term (two all-reduces per layer)")
    notes.append("random weights: each rank draws the single-process decoder's weights (same seed) and keeps its slices")
    return TPResult(model_id or spec.name, tp, setup.backend, dev_type, dtype_name, opts, hw.name, setup.hw_reason,
                    rank_checks, tuple(r.step_samples_s for r in gathered), pred_compute_s, pred_ar, rule, tuple(rows),
                    tuple(notes), gathered[0].logits, shard_totals.bytes)
