"""``planner verify``: the analysis checked against a real torch decode loop on this machine.

torch is imported only inside the command (``planner --help`` and the other commands never load it).
"""

from __future__ import annotations

import statistics
import sys
from contextlib import contextmanager
from typing import Annotated, Iterator, Optional

import typer

from planner.analysis.dtypes import dtype_key

from .analyze_cmd import ModelArg, RevisionOpt
from .options import DEFAULT_BATCH, DEFAULT_CONTEXT
from .options import BatchOpt, ContextOpt, FormatOpt, JsonOpt, PlotOpt, RefreshOpt
from .render import SCHEMA_VERSION, OutputFormat, fmt_int, fmt_si, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit

DeviceOpt = Annotated[Optional[str], typer.Option("--device", help="cuda or cpu; default: cuda when available, else cpu.",
                                                  show_default=False)]
RuntimeDtypeOpt = Annotated[Optional[str], typer.Option(
    "--dtype", help="Weights, activations and KV cache dtype: fp32, bf16 or fp16; default: fp32 on CPU, the config's dtype on CUDA.")]
StepsOpt = Annotated[int, typer.Option("--steps", min=1, max=100000, help="Timed decode steps (count); the median is reported.")]
WarmupOpt = Annotated[int, typer.Option("--warmup", min=0, max=100000, help="Untimed decode steps before timing (count).")]
GraphsOpt = Annotated[bool, typer.Option("--graphs/--no-graphs", help="CUDA: time CUDA-graph replays (default) or eager steps. CPU is always eager.")]
VerifyHardwareOpt = Annotated[Optional[str], typer.Option(
    "--hardware", "-H", help="Profile the prediction uses: a name, a YAML path, or 'calibrated' (see 'planner calibrate'); "
                             "default: the calibrated profile of this device, else 'cpu' / the bundled GPU profile.")]
WeightsOpt = Annotated[Optional[str], typer.Option("--weights", help="Local folder of Hugging Face *.safetensors to load; default: seeded random weights.")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, max=(1 << 64) - 1, help="Seed of the random weights, KV cache and tokens.")]
ProfileOpt = Annotated[bool, typer.Option("--profile/--no-profile", help="Per-op-kind times from the torch profiler (a few extra eager steps).")]
ReferenceOpt = Annotated[Optional[str], typer.Option(
    "--reference", help="Compare the --weights checkpoint's logits and greedy tokens with another implementation: "
                        "'transformers' (local files only, no remote code). Replaces the timing run.")]
PromptOpt = Annotated[Optional[str], typer.Option("--prompt", help="Prompt text for --reference (tokenized with the folder's tokenizer).")]
TPVerifyOpt = Annotated[int, typer.Option(
    "--tp", min=1, max=1024, help="Tensor-parallel ranks (count): torch.distributed processes, NCCL on GPUs, gloo on CPU; "
                                  "under torchrun, the ranks torchrun started (multi-node).")]
PPVerifyOpt = Annotated[int, typer.Option(
    "--pp", min=1, max=1024, help="Pipeline stages (count): one torch.distributed process per stage, NCCL on GPUs, gloo on CPU, "
                                  "hidden states sent stage to stage; under torchrun, the ranks torchrun started.")]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", min=1, max=4096, help="CPU threads for torch (count); default: torch's.")]


@contextmanager
def progress_bar(enabled: bool) -> Iterator:
    """A ``rich.progress`` bar on stderr (only on a terminal), as a ``(phase, done, total)`` callback."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .render import stderr_console

    with Progress(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr_console(), transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=max(total, 1))
            bar.update(tasks[phase], completed=done, total=max(total, 1))

        yield update


def verify(
    model: ModelArg,
    device: DeviceOpt = None,
    dtype: RuntimeDtypeOpt = None,
    batch: BatchOpt = DEFAULT_BATCH,
    context: ContextOpt = DEFAULT_CONTEXT,
    steps: StepsOpt = 32,
    warmup: WarmupOpt = 5,
    graphs: GraphsOpt = True,
    hardware: VerifyHardwareOpt = None,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    profile: ProfileOpt = True,
    threads: ThreadsOpt = None,
    tp: TPVerifyOpt = 1,
    pp: PPVerifyOpt = 1,
    reference: ReferenceOpt = None,
    prompt: PromptOpt = None,
    revision: RevisionOpt = None,
    refresh: RefreshOpt = False,
    plot: PlotOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the analysis against a real torch decode loop: exact checks, measured vs predicted step time, where the time went.

    Builds a decoder of MODEL's exact shape (seeded random weights unless --weights), fills a KV cache of --context tokens and times the decode step that follows. Exact checks: parameters, decode FLOPs (FlopCounterMode) and allocated KV bytes equal the analysis. Needs torch (the package's runtime extra).

    Example: planner verify Qwen/Qwen2.5-0.5B --device cpu --hardware calibrated --context 512 --steps 8

    Predicted vs measured time by op kind as a picture: add --plot verify.png

    Pipeline stages (gloo on CPU, NCCL on GPUs): planner verify qwen2.5-0.5b --device cpu --pp 2 --context 256 --steps 8

    Real weights against transformers (max |Δlogit| with pass/fail, top-1 agreement, 20 greedy tokens side by side): planner verify ./SmolLM2-135M --weights ./SmolLM2-135M --reference transformers --device cpu
    """
    from planner.runtime import require_torch

    from .common import load_model

    out_fmt = resolve_format(fmt, as_json)
    for opt, value in (("--device", device), ("--dtype", dtype), ("--hardware", hardware), ("--reference", reference)):
        if value is not None and not value.strip():  # an empty value is not the default
            from planner.analysis.errors import OptionError

            raise OptionError(f"{opt} is empty", f"give a value, or leave {opt} out for the default")
    _check_device_dtype(device, dtype)  # before the model, torch and the run ('bf16 ' failed there, 10 s in)
    device = device.strip().lower() if device else None
    dtype = dtype_key(dtype) if dtype else None
    if plot is not None:
        from .plots import check_plot_path

        plot = check_plot_path(plot)
    loaded = load_model(model, revision, refresh)
    if reference is not None or prompt is not None:
        from planner.analysis.errors import OptionError, short

        if reference is None:
            raise OptionError("--prompt is used only with --reference", "add --reference transformers")
        if reference.lower() != "transformers":
            raise OptionError(f"--reference {short(reference)} is not a known reference", "use --reference transformers")
        if not weights:
            raise OptionError("--reference needs the checkpoint to compare", "add --weights DIR (a local folder)")
        if plot is not None:
            raise OptionError("--plot draws the timing run; --reference replaces it", "drop --plot")
    if weights is not None:
        _check_weights(weights)
    torch = require_torch()
    if reference is not None:
        _reference(loaded, weights, device, dtype, threads, prompt, out_fmt, torch)
        return
    from planner.runtime.verify import VerifyOptions, run_verify

    opts = VerifyOptions(device=device, dtype=dtype, batch=batch,
                         context=context, steps=steps, warmup=warmup, graphs=graphs, hardware=hardware, weights=weights,
                         seed=seed, profile=profile, threads=threads, tp=tp)
    if tp > 1 or pp > 1:
        if plot is not None:
            from planner.analysis.errors import OptionError

            raise OptionError("--plot draws a single-device run", f"drop --plot with --{'tp' if tp > 1 else 'pp'}")
        if pp > 1:
            _pipeline(loaded, opts, pp, out_fmt)
        else:
            _tensor_parallel(loaded, opts, out_fmt)
        return
    with progress_bar(out_fmt != OutputFormat.json) as cb:
        r = run_verify(loaded.spec, opts, model_id=loaded.id, progress=cb)
    from planner.runtime.verify import result_dict

    data = result_dict(r, SCHEMA_VERSION)
    if plot is not None:
        from .plots import plot_verify

        plot_verify(data, plot)
    if out_fmt == OutputFormat.json:
        print_json(data)
    elif out_fmt == OutputFormat.csv:
        print_csv([data])
    else:
        secs, lines = verify_sections(r)
        emit(secs, out_fmt, lines=lines)
    if not r.checks_ok:
        bad = ", ".join(c.name for c in r.checks if not c.ok)
        sys.stderr.write(f"Error: exact check(s) failed: {bad} (the analysis and the decoder disagree; please report it)\n")
        raise typer.Exit(1)


def _check_weights(weights: str) -> None:
    """--weights names a folder (or one .safetensors file) that exists, checked before torch loads: a name too
    long for the file system or a '~nosuchuser' is that error, not an OSError or RuntimeError from pathlib."""
    import os

    from planner.analysis.errors import OptionError, short

    path = os.path.expanduser(weights)  # (os.path.isdir / isfile answer False for any OSError or ValueError)
    if not (os.path.isdir(path) or (path.endswith(".safetensors") and os.path.isfile(path))):
        raise OptionError(f"--weights {short(weights, 200)}: no such folder",
                          "pass the local folder of a Hugging Face model (with *.safetensors)")


def _check_device_dtype(device: str | None, dtype: str | None) -> None:
    """--device and --dtype as the runtime takes them (the dtype by any of its names: bf16, bfloat16, BF16)."""
    from planner.analysis.errors import OptionError, short
    from planner.runtime.verify import RUNTIME_DTYPES

    if device is not None and device.strip().lower() not in ("cpu", "cuda"):
        raise OptionError(f"--device must be cuda or cpu, got {short(device)}")
    key = dtype_key(dtype) if dtype is not None else None
    if key is not None and key not in RUNTIME_DTYPES:
        shown = key if len(key) <= 60 else short(key, 60)
        raise OptionError(f"--dtype {shown} is not a dtype the torch runtime computes in",
                          f"choose one of {', '.join(RUNTIME_DTYPES)}")


def _reference(loaded, weights: str, device: str | None, dtype: str | None, threads: int | None, prompt: str | None,
               out_fmt, torch) -> None:
    from planner.analysis.errors import OptionError, RuntimeUnavailableError, short
    from planner.runtime.reference import DEFAULT_PROMPT, run_reference
    from planner.runtime.verify import RUNTIME_DTYPES

    dev = (device or ("cuda" if torch.cuda.is_available() else "cpu")).lower()
    if dev not in ("cpu", "cuda"):
        raise OptionError(f"--device must be cuda or cpu, got {short(device)}")
    if dev == "cuda" and not torch.cuda.is_available():
        raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}", "use --device cpu")
    dt = (dtype or "fp32").lower()
    if dt not in RUNTIME_DTYPES:
        raise OptionError(f"--dtype {short(dt)} is not a dtype the torch runtime computes in", f"choose one of {', '.join(RUNTIME_DTYPES)}")
    if threads and dev == "cpu":
        from planner.runtime.verify import set_cpu_threads

        set_cpu_threads(threads)
    with progress_bar(out_fmt != OutputFormat.json) as cb:
        r = run_reference(loaded.spec, weights, config=loaded.resolved.config, dtype=dt, device=dev,
                          prompt=prompt if prompt is not None else DEFAULT_PROMPT, progress=cb)
    if out_fmt == OutputFormat.json:
        print_json({"schema_version": SCHEMA_VERSION, "model": loaded.id, "weights": weights, "device": dev, **r.to_dict()})
    else:
        head = Section(f"verify {loaded.id} against {r.reference}", ["", ""])
        head.add("weights", f"{weights} ({r.loaded_tensors} tensors)")
        head.add("device / dtype", f"{dev} / {r.dtype}")
        head.add("prompt", f"{r.prompt!r} ({r.prompt_tokens} tokens, the folder's tokenizer)")
        head.add("max |Δlogit|", f"{r.max_abs_diff:.3g} (largest |logit| {r.max_abs_logit:.3g})")
        head.add("tolerance", r.tolerance_rule)
        head.add("result", "PASS" if r.passed else "FAIL")
        head.add("top-1 agreement", f"{r.top1_agree}/{r.prompt_tokens} prompt positions ({100 * r.top1_fraction:.0f}%)")
        greedy = Section(f"{len(r.ours_tokens)} greedy tokens", ["#", "planner decoder", "transformers", "same"], right=(0,))
        for i, (a, b, ta, tb) in enumerate(zip(r.ours_tokens, r.ref_tokens, r.ours_text, r.ref_text)):
            greedy.add(str(i + 1), f"{a} {ta!r}", f"{b} {tb!r}", "yes" if a == b else "NO")
        div = r.first_divergence
        emit([head, greedy], out_fmt, lines=[
            "greedy: every token agrees" if div is None else f"greedy: the two diverge at token {div + 1}",
            "ours decodes through its KV cache (prefill, then one step per token); transformers recomputes the prefix"])
    if not r.passed:
        sys.stderr.write(f"Error: logits differ from {r.reference} by {r.max_abs_diff:.3g}, above the tolerance "
                         f"{r.tolerance:.3g} ({r.tolerance_rule})\n")
        raise typer.Exit(1)


def _tensor_parallel(loaded, opts, out_fmt) -> None:
    from planner.runtime.verify_tp import run_verify_tp

    with progress_bar(out_fmt != OutputFormat.json) as cb:
        r = run_verify_tp(loaded.spec, opts, model_id=loaded.id, progress=cb)
    if r is None:  # a torchrun rank other than 0: rank 0 reports
        return
    if out_fmt == OutputFormat.json:
        print_json(r.to_dict(SCHEMA_VERSION))
    else:
        head = Section(f"verify {r.model_id} --tp {r.tp}", ["", ""])
        head.add("ranks", f"{r.tp} × {r.device_type} ({r.backend}), {r.dtype}")
        head.add("shape", f"batch {r.options.batch}, context {r.options.context:,}")
        head.add("prediction from", f"{r.hardware_name}: {r.hardware_reason}")
        checks = Section("Per-rank checks (shard vs the analysis of that shard)",
                         ["rank", "params", "FLOPs", "KV bytes", "ok", "step (median)"], right=(0, 1, 2, 3, 5))
        for i, cs in enumerate(r.rank_checks):
            c = {x.name: x for x in cs}
            checks.add(str(i), fmt_int(c["params"].measured), fmt_int(c["flops"].measured), fmt_int(c["kv_bytes"].measured),
                       "ok" if all(x.ok for x in cs) else "MISMATCH: " + ", ".join(
                           f"{x.name} predicted {fmt_int(x.predicted)}" for x in cs if not x.ok),
                       fmt_time(statistics.median(r.step_samples_s[i])))
        coll = Section("Collectives (timed apart, per step)", ["kind", "calls", "bytes / call", "time / call",
                                                               "measured / step", "predicted / step"], right=(1, 2, 3, 4, 5))
        for c in r.collectives:
            coll.add(c.kind, f"{c.calls_per_step:g}", fmt_int(c.bytes_per_call), fmt_time(c.time_per_call_s),
                     fmt_time(c.time_per_step_s), fmt_time(c.predicted_per_step_s) if c.predicted_per_step_s is not None
                     else "not predicted")
        coll.caption = f"predicted collective term: {r.collective_rule}"
        timing = Section("Decode step (eager, slowest rank)", ["", "value"], right=(1,))
        timing.add("predicted (shard trace + collectives)", f"{fmt_time(r.predicted_s)} "
                   f"({fmt_time(r.predicted_compute_s)} + {fmt_time(r.predicted_collective_s)})")
        timing.add("measured (median)", fmt_time(r.measured_s))
        timing.add("error (predicted / measured - 1)", _signed_pct(r.error))
        emit([head, checks, coll, timing], out_fmt, lines=[f"note: {n}" for n in r.notes])
    if not r.checks_ok:
        sys.stderr.write("Error: per-rank exact check(s) failed (the shard and the analysis disagree; please report it)\n")
        raise typer.Exit(1)


def _pipeline(loaded, opts, pp: int, out_fmt) -> None:
    from planner.runtime.verify_pp import run_verify_pp

    with progress_bar(out_fmt != OutputFormat.json) as cb:
        r = run_verify_pp(loaded.spec, opts, pp, model_id=loaded.id, progress=cb)
    if r is None:  # a torchrun rank other than 0: rank 0 reports
        return
    if out_fmt == OutputFormat.json:
        print_json(r.to_dict(SCHEMA_VERSION))
    else:
        head = Section(f"verify {r.model_id} --pp {r.pp}" + (f" --tp {r.tp}" if r.tp > 1 else ""), ["", ""])
        head.add("layout", f"TP{r.tp} PP{r.pp}: {r.pp} stages × {r.tp} {r.device_type} rank(s) ({r.backend}), {r.dtype}")
        head.add("shape", f"batch {r.options.batch} as {len(r.microbatches)} micro-batch(es) of "
                 f"{', '.join(map(str, r.microbatches))}, context {r.options.context:,}")
        head.add("prediction from", f"{r.hardware_name}: {r.hardware_reason}")
        checks = Section("Per-stage checks (stage vs the analysis of that stage)",
                         ["rank", "stage", "layers", "params", "FLOPs", "KV bytes", "send bytes", "ok"], right=(0, 1, 3, 4, 5, 6))
        for s in r.stages:
            c = {x.name: x for x in s.checks}
            checks.add(str(s.rank), str(s.stage), f"{s.layers[0]}-{s.layers[1] - 1}", fmt_int(c["params"].measured),
                       fmt_int(c["flops"].measured), fmt_int(c["kv_bytes"].measured),
                       fmt_int(c["send_bytes"].measured) if "send_bytes" in c else "-",
                       "ok" if all(x.ok for x in s.checks) else "MISMATCH: " + ", ".join(
                           f"{x.name} predicted {fmt_int(x.predicted)}" for x in s.checks if not x.ok))
        times = Section("Per rank, one micro-batch", ["rank", "stage", "compute ideal", "compute predicted",
                                                       "compute measured", "send predicted", "send measured (one way)"],
                        right=(0, 1, 2, 3, 4, 5, 6))
        for s in r.stages:
            times.add(str(s.rank), str(s.stage), fmt_time(s.ideal_compute_s), fmt_time(s.predicted_compute_s),
                      fmt_time(s.measured_compute_s),
                      fmt_time(s.predicted_send_s) if s.predicted_send_s is not None else ("-" if s.measured_send_s is None
                                                                                            else "not predicted"),
                      fmt_time(s.measured_send_s) if s.measured_send_s is not None else "-")
        times.caption = f"send: {r.send_rule}"
        timing = Section("Decode iteration (eager, steady state)", ["", "value"], right=(1,))
        timing.add("predicted (pipeline of the stages)", fmt_time(r.predicted_s))
        timing.add("measured (median)", fmt_time(r.measured_s))
        timing.add("error (predicted / measured - 1)", _signed_pct(r.error))
        timing.add("bubble predicted / measured", f"{100 * r.predicted_bubble:.0f}% / {100 * r.measured_bubble:.0f}%")
        emit([head, checks, times, timing], out_fmt, lines=[f"note: {n}" for n in r.notes])
    if not r.checks_ok:
        sys.stderr.write("Error: per-stage exact check(s) failed (the stage and the analysis disagree; please report it)\n")
        raise typer.Exit(1)


def _signed_pct(x: float) -> str:
    return f"{'+' if x >= 0 else ''}{100 * x:.1f}%"


def verify_sections(r) -> tuple[list[Section], list[str]]:
    o, t, st = r.options, r.times, r.step
    head = Section(f"verify {r.model_id}", ["", ""])
    head.add("device", f"{r.device_type}: {r.device_name}" + (f" ({r.threads} threads)" if r.threads else ""))
    head.add("dtype", f"{r.dtype} weights and activations, {r.kv_dtype} KV cache, matmuls at the {r.compute_dtype} rate")
    head.add("shape", f"batch {o.batch}, context {o.context:,} (cache capacity {r.capacity:,} tokens)")
    head.add("weights", r.weights)
    if r.moe_impl:
        head.add("MoE experts", f"{r.moe_impl} ({'one grouped GEMM per projection' if r.moe_impl == 'grouped' else 'a loop over the hit experts'})")
    head.add("prediction from", f"{r.hardware.name}: {r.hardware_reason}")

    checks = Section("Exact checks", ["check", "predicted", "measured", "ok"], right=(1, 2))
    for c in r.checks:
        checks.add(f"{c.name} ({c.unit})", fmt_int(c.predicted), fmt_int(c.measured), "ok" if c.ok else "MISMATCH")
    checks.caption = "; ".join(f"{c.name}: {c.note}" for c in r.checks if c.note)

    mode = "CUDA-graph replay" if r.graphs else "eager"
    timing = Section(f"Decode step ({mode}, median of {len(t.samples_s)} after {t.warmup} warm-up)", ["", "value"], right=(1,))
    timing.add("predicted (expected)", f"{fmt_time(r.predicted_s)} (ideal {fmt_time(r.ideal_s)})")
    timing.add("measured (median)", fmt_time(r.measured_s))
    timing.add("error (predicted / measured - 1)", _signed_pct(r.error))
    timing.add("spread (interquartile)", fmt_time(t.spread_s))
    timing.add("min / max", f"{fmt_time(t.min_s)} / {fmt_time(t.max_s)}")
    if r.eager_times is not None:
        timing.add("eager step (measured)", fmt_time(r.eager_times.median_s))
    timing.add("achieved bandwidth", f"{fmt_si(r.achieved_bytes_per_s, 'B/s')} ({100 * r.achieved_bytes_per_s / r.rates[1]:.0f}% of {fmt_si(r.rates[1], 'B/s')})")
    timing.add("achieved compute", f"{fmt_si(r.achieved_flops_per_s, 'FLOP/s')} ({100 * r.achieved_flops_per_s / r.rates[0]:.2g}% of {fmt_si(r.rates[0], 'FLOP/s')})")
    timing.add("tokens/s", f"{o.batch / r.measured_s:,.1f}")

    pred = r.prediction
    roof = Section(f"Prediction: planner's step model on {pred.engine.display_name} with {r.hardware.name}",
                   ["", "value"], right=(1,))
    roof.add("expected step", fmt_time(st.expected_s))
    roof.add("ideal step (roofline)", fmt_time(st.ideal_s))
    for k, v in st.parts.items():
        if v:
            label = k
            if k == "step overhead" and pred.factors.kernel_launches == "serial":
                label = f"step overhead ({pred.kernels:,} kernels × {fmt_time(pred.factors.kernel_launch_s)})"
            roof.add(f"  {label}", f"{'+' if v >= 0 else '−'}{fmt_time(abs(v))}")
    roof.add("kernels", f"{pred.kernels:,} dispatched by the decoder ({pred.trace_kernels:,} in the trace)")
    roof.add("bytes / FLOPs", f"{fmt_si(r.totals.bytes, 'B')} / {fmt_si(r.totals.flops, 'FLOP')}")

    kinds = Section("Time by op kind (expected vs torch profiler)", ["kind", "predicted", "share", "measured share"],
                    right=(1, 2, 3))
    for k in sorted(r.kinds, key=lambda k: -(k.measured_share or k.predicted_share)):
        kinds.add(k.kind, fmt_time(k.predicted_s) if k.predicted_s else "-", f"{100 * k.predicted_share:.1f}%",
                  "-" if k.measured_share is None else f"{100 * k.measured_share:.1f}%")
    if r.profiled_step_s:
        kinds.caption = f"profiled eager step: {fmt_time(r.profiled_step_s)} (profiling slows steps; compare shares)"
    lines = [f"→ {e}" for e in r.explanation] + [f"note: {n}" for n in r.notes]
    return [head, checks, timing, roof, kinds], lines
