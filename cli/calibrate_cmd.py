"""``planner calibrate``: measure this machine's device and save it as the ``calibrated`` profile.

torch is imported only inside the command.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import FormatOpt, JsonOpt
from .render import SCHEMA_VERSION, OutputFormat, fmt_si, fmt_time, print_json, resolve_format
from .sections import Section, emit
from .verify_cmd import DeviceOpt, ThreadsOpt, progress_bar

CalDtypeOpt = Annotated[Optional[list[str]], typer.Option(
    "--dtype", help="GEMM dtype(s) to measure (repeatable): fp32, bf16, fp16; default: bf16 and fp32 on CUDA, fp32 on CPU "
                    "(the dtype verify uses there).")]
NameOpt = Annotated[str, typer.Option("--name", help="Profile name to write (a user profile; 'calibrated' is what --hardware calibrated reads).")]
NoSaveOpt = Annotated[bool, typer.Option("--no-save", help="Measure and print only; write no profile.")]


def calibrate(
    device: DeviceOpt = None,
    dtype: CalDtypeOpt = None,
    threads: ThreadsOpt = None,
    name: NameOpt = "calibrated",
    no_save: NoSaveOpt = False,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure this device's bandwidth, matmul FLOP/s and launch overhead; save them as a hardware profile.

    The profile is written atomically to the user profile folder; 'planner verify --hardware calibrated' uses it.

    Copy bandwidth counts read + write; matmul FLOP/s come from large square GEMMs; the launch overhead is an eager decode step of a tiny decoder divided by its kernels. On a CPU the profile's bandwidth is the streaming read rate of matrix-vector products (a copy pays an extra write-allocate read there); the copy rate is kept in its notes. Takes under a minute.

    Example: planner calibrate --device cpu
    """
    from planner.hardware.profiles import check_profile_name
    from planner.runtime import require_torch

    from .render import warn

    out_fmt = resolve_format(fmt, as_json)
    if not no_save:
        check_profile_name(name)  # before a minute of measuring, not after
    torch = require_torch()
    from planner.analysis.errors import OptionError, RuntimeUnavailableError
    from planner.hardware.profiles import save_user_profile
    from planner.runtime.calibrate import calibrate as run_calibrate
    from planner.runtime.calibrate import calibration_profile

    dev = (device or ("cuda" if torch.cuda.is_available() else "cpu")).lower()
    if dev not in ("cpu", "cuda"):
        raise OptionError(f"--device must be cuda or cpu, got {device!r}")
    if dev == "cuda" and not torch.cuda.is_available():
        raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}", "use --device cpu")
    dtypes = tuple(d.lower() for d in dtype) if dtype else None
    for d in dtypes or ():
        if d not in ("fp32", "bf16", "fp16"):
            raise OptionError(f"--dtype {d} cannot be calibrated", "choose fp32, bf16 or fp16")
    if threads and dev == "cpu":
        torch.set_num_threads(threads)
    from planner.runtime.verify import machine_load

    busy = machine_load(dev)
    if busy:
        warn(busy.replace("CPU timings vary", "the measured rates vary"))
    with progress_bar(out_fmt != OutputFormat.json) as cb:
        cal = run_calibrate(dev, dtypes=dtypes, progress=cb or (lambda *a: None))
    data = calibration_profile(cal, name)
    path = None if no_save else save_user_profile(data, name)
    if cal.device_type == "cpu" and cal.read_bytes_per_s and cal.copy_bytes_per_s < 0.8 * cal.read_bytes_per_s:
        warn(f"the copy rate ({fmt_si(cal.copy_bytes_per_s, 'B/s')}, read + write counted) is well below the read rate "
             f"({fmt_si(cal.read_bytes_per_s, 'B/s')}); the profile uses the read rate, which decode steps achieve")
    if out_fmt == OutputFormat.json:
        print_json({"schema_version": SCHEMA_VERSION, "profile": name, "path": None if path is None else str(path),
                    "measured": cal.to_dict(), "profile_data": data})
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
    if cal.threads:
        s.add("threads", str(cal.threads))
    s.add("took", fmt_time(cal.seconds))
    lines = [f"saved profile '{name}' to {path}" if path else "not saved (--no-save)",
             "use it with: planner verify MODEL --hardware calibrated"]
    emit([s], out_fmt, lines=lines)
