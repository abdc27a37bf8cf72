"""``planner calibrate``: measure this machine's device and save it as the ``calibrated`` profile.

torch is imported only inside the command.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import FormatOpt, JsonOpt
from .render import SCHEMA_VERSION, OutputFormat, fmt_si, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit
from .verify_cmd import DeviceOpt, ThreadsOpt, progress_bar

CalDtypeOpt = Annotated[Optional[list[str]], typer.Option(
    "--dtype", help="GEMM dtype(s) to measure (repeatable): fp32, bf16, fp16; default: bf16 and fp32 on CUDA, fp32 on CPU "
                    "(the dtype verify uses there).")]
NameOpt = Annotated[str, typer.Option("--name", help="Profile name to write (a user profile); verify then uses it by default on this device.")]
NoSaveOpt = Annotated[bool, typer.Option("--no-save", help="Measure and print only; write no profile.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Save even when the figures disagree with each other or are unstable.")]
ShapesModelOpt = Annotated[Optional[str], typer.Option(
    "--model", help="Model whose weight shapes the skinny-matmul rates (1, 4, 16, 64 rows) are measured at, and on a "
                    "GPU whose width the per-op graph cost is; default: Qwen/Qwen2.5-0.5B (bundled).")]


def calibrate(
    device: DeviceOpt = None,
    dtype: CalDtypeOpt = None,
    threads: ThreadsOpt = None,
    name: NameOpt = "calibrated",
    no_save: NoSaveOpt = False,
    force: ForceOpt = False,
    model: ShapesModelOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure this device's bandwidth, matmul FLOP/s and launch overhead; save them as a hardware profile.

    The profile is written atomically to the user profile folder and recorded as the last calibration: 'planner verify' uses it by default on this device (and for '--hardware calibrated').

    Copy bandwidth counts read + write; matmul FLOP/s come from large square GEMMs; skinny matmuls (1, 4, 16, 64 rows against --model's weight shapes) give the profile's matmul_efficiency_by_rows; the launch overhead is an eager decode step of a tiny decoder divided by its kernels. On a GPU it also measures what the decoder verify times pays in a CUDA-graph replay: per dispatched op (the tiny decoder's, and --model's small ops at its own width by batch), per decode attention call and per KV-head program, and per routed-expert layer (grouped GEMMs of --model's MoE layer, else Qwen3-30B-A3B's). On a CPU the profile's bandwidth is the streaming read rate of matrix-vector products (a copy pays an extra write-allocate read there); the copy rate is kept in its notes. Every figure is repeated until stable; on a CPU the thread count (1 or torch's default) with the stable, fastest read is chosen unless --threads. A profile whose figures disagree (per-kernel overhead vs bare dispatch, read vs copy) or are unstable is not saved without --force. Takes about a minute.

    Example: planner calibrate --device cpu
    """
    from planner.hardware.profiles import check_user_profile_writable
    from planner.runtime import require_torch

    from .render import warn

    from planner.analysis.errors import OptionError, RuntimeUnavailableError, short

    out_fmt = resolve_format(fmt, as_json)
    # the options first, before torch loads and a minute of measuring (an empty value is not the default)
    if device is not None and device.lower() not in ("cpu", "cuda"):
        raise OptionError(f"--device must be cuda or cpu, got {short(device)}")
    from planner.analysis.dtypes import dtype_key

    dtypes = tuple(dtype_key(d) for d in dtype) if dtype else None
    for d in dtypes or ():
        if d not in ("fp32", "bf16", "fp16"):
            raise OptionError(f"--dtype {short(d)} cannot be calibrated", "choose fp32, bf16 or fp16")
    if model is not None and not model.strip():
        raise OptionError("--model is empty", "name a model, or leave --model out for the default")
    if not no_save:
        check_user_profile_writable(name)  # name and folder checked before a minute of measuring, not after
    torch = require_torch()
    from planner.hardware.profiles import save_user_profile
    from planner.runtime.calibrate import calibrate as run_calibrate
    from planner.runtime.calibrate import calibration_profile

    dev = (device or ("cuda" if torch.cuda.is_available() else "cpu")).lower()
    if dev == "cuda" and not torch.cuda.is_available():
        raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}", "use --device cpu")
    from planner.runtime.calibrate import DEFAULT_SHAPES_MODEL, calibration_problems, machine_busy, model_matmul_shapes

    from .common import load_model

    shapes_model = load_model(model or DEFAULT_SHAPES_MODEL, None)
    shapes = model_matmul_shapes(shapes_model.spec)
    with progress_bar(out_fmt != OutputFormat.json) as cb:
        cal = run_calibrate(dev, dtypes=dtypes, progress=cb or (lambda *a: None), threads=threads if dev == "cpu" else None,
                            shapes=shapes, shapes_from=shapes_model.id, spec=shapes_model.spec)
    busy = machine_busy(cal) if dev == "cpu" else None
    if busy:
        warn(busy + "; the figures may not repeat")
    problems = calibration_problems(cal)
    for p in problems:
        warn(p)
    data = calibration_profile(cal, name)
    if problems and not no_save and not force:
        from planner.analysis.errors import HardwareError

        raise HardwareError(f"not saved: {len(problems)} check(s) of this calibration failed ({problems[0]})",
                            "run it again on a quieter machine, fix --threads, or pass --force to save it anyway")
    path = None
    if not no_save:
        from planner.hardware.profiles import record_last_calibration

        path = save_user_profile(data, name)
        record_last_calibration(name)
    if cal.device_type == "cpu" and cal.read_bytes_per_s and cal.copy_bytes_per_s < 0.8 * cal.read_bytes_per_s:
        warn(f"the copy rate ({fmt_si(cal.copy_bytes_per_s, 'B/s')}, read + write counted) is well below the read rate "
             f"({fmt_si(cal.read_bytes_per_s, 'B/s')}); the profile uses the read rate, which decode steps achieve")
    if out_fmt in (OutputFormat.json, OutputFormat.csv):
        d = {"schema_version": SCHEMA_VERSION, "profile": name, "path": None if path is None else str(path),
             "problems": problems, "busy": busy, "measured": cal.to_dict(), "profile_data": data}
        print_json(d) if out_fmt == OutputFormat.json else print_csv([d])
        return
    s = Section(f"calibrated {cal.device_type}: {cal.device_name}", ["", "value"], right=(1,))
    s.add("copy bandwidth (read + write)", fmt_si(cal.copy_bytes_per_s, "B/s"))
    if cal.read_bytes_per_s:
        s.add("read bandwidth (GEMV stream)", fmt_si(cal.read_bytes_per_s, "B/s"))
    s.add("profile memory_bandwidth", fmt_si(cal.memory_bandwidth_bytes_per_s, "B/s"))
    for d, v in cal.matmul_flops_per_s.items():
        s.add(f"matmul {d}", fmt_si(v, "FLOP/s"))
    s.add("per-kernel overhead (eager step)", fmt_time(cal.launch_s))
    if cal.details.get("op_launch_s"):
        s.add("bare op dispatch / launch", fmt_time(cal.details["op_launch_s"]))
    for r, e in cal.matmul_efficiency_by_rows.items():
        s.add(f"matmul at {r} row{'s' if r > 1 else ''} (x peak)", f"{e:.3g}")
    for r, row in cal.matmul_efficiency_by_shape.items():
        s.add(f"matmul at {r} row{'s' if r > 1 else ''} by K (x peak)", ", ".join(f"{k}: {e:.3g}" for k, e in row.items()))
    for r, row in cal.matmul_efficiency_by_out.items():
        s.add(f"matmul at {r} row{'s' if r > 1 else ''} by N (x peak)", ", ".join(f"{n}: {e:.3g}" for n, e in row.items()))
    for d, row in cal.attention_decode_efficiency.items():
        s.add(f"attention decode, head_dim {d}, by group (x bandwidth)", ", ".join(f"{g}: {e:.2g}" for g, e in row.items()))
    if cal.threads:
        s.add("threads", f"{cal.threads} ({cal.details.get('threads_chosen_by', '')})")
    for key in ("load_before", "load_after"):
        lv = cal.details.get(key)
        if lv:
            s.add(f"load average {key.split('_')[1]}", f"{lv[0]:.2f} {lv[1]:.2f} {lv[2]:.2f} on {cal.details.get('cpus')} CPUs")
    unstable = [k for k, f in cal.figures.items() if not f.stable]
    s.add("stable", "yes" if not unstable else "no: " + ", ".join(unstable))
    s.add("took", fmt_time(cal.seconds))
    lines = [f"saved profile '{name}' to {path}" if path else "not saved (--no-save)"]
    if path:
        lines.append(f"verify uses it by default on this device: planner verify MODEL --hardware {name}")
    emit([s], out_fmt, lines=lines)
