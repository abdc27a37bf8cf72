"""planner's price of one GEMM beside NVIDIA aiconfigurator's measured GEMM tables.

aiconfigurator (github.com/ai-dynamo/aiconfigurator) ships per-kernel latencies measured on each GPU inside each
engine's container (``aiconfigurator-core`` wheel, ``aiconfigurator_core/systems/data/<system>/gemm/<framework>/
<version>/gemm_perf.parquet``: m, n, k, dtype, latency in ms). This script prices the same GEMMs with planner's step
model (``hardware.expected``: the device's bandwidth and compute fractions, its MAMF, the K-dependent compute
scaling, the engine's least op time of a CUDA-graph replay) and prints predicted / measured by dtype and by rows m:
an independent check of the per-op model, measured by NVIDIA, that no factor was fitted on.

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic        # 82 MB; unzip its systems/data
    python bench/aic_gemm.py --data /tmp/aic/aiconfigurator_core/systems/data  # needs pandas + pyarrow

Weights are the B operand (n × k), activations m × k in, m × n out (2 bytes; fp8 1 byte in); fp8_block adds one
fp32 scale per 128 × 128 weight block. Only square-ish serving shapes matter, so rows with n or k below 256 are left
out (aiconfigurator sweeps n, k down to 32).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: aiconfigurator system -> planner hardware profile
SYSTEMS = {"a100_sxm": "a100-80gb", "h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200",
           "gb200": "gb200", "l40s": "l40s"}
#: aiconfigurator gemm_dtype -> (planner compute column, weight bytes, activation-in bytes, block scales)
DTYPES = {"bfloat16": ("bf16", 2, 2, False), "fp8": ("fp8", 1, 1, False), "fp8_block": ("fp8", 1, 1, True)}
M_BUCKETS = ((1, 16), (17, 128), (129, 1024), (1025, 8192), (8193, 1 << 30))


def versions_with(folder: Path, table: str) -> list[Path]:
    """The engine versions under ``folder`` that hold ``table`` (a parquet file name), newest first."""
    found = [p for p in folder.iterdir() if (p / table).is_file()] if folder.is_dir() else []

    def key(p: Path):
        return tuple(int(x) if x.isdigit() else 0 for x in p.name.replace("rc", ".").replace("post", ".").split("."))
    return sorted(found, key=key, reverse=True)


def latest_version(folder: Path) -> Path | None:
    found = versions_with(folder, "gemm_perf.parquet")
    return found[0] if found else None


def step_model_of(model: str, tp: int, system: str, framework: str, context: int):
    """planner's step model of one rank of ``model`` at ``tp``-way tensor parallelism on aiconfigurator's ``system``
    under the engine profile ``framework``, the checkpoint as stored: ``(StepModel, hardware profile, its factors for
    the model's compute column and expert format)`` (bench/aic_attention.py and bench/aic_moe.py price one op of a
    prompt step with them)."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan
    from planner.cli.common import load_model
    from planner.hardware.engine import engine_analysis, load_engine
    from planner.hardware.expected import factors_for, for_column
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import StepModel

    hw = load_profile(SYSTEMS[system])
    eng = load_engine(framework)
    spec = load_model(model).spec
    a, _ = engine_analysis(analyze(spec, Options(context=context)), eng)
    m = StepModel(a, hw, tp_plan(spec, tp), factors_for(hw, eng))
    return m, hw, for_column(m.f, hw, m.compute_key, m.experts_format)


def data_tables(doc: str, script: str, argv=None):
    """``(args, pandas)`` for a script (``doc``: its docstring) that reads only the tables under ``--data``
    (aiconfigurator_core/systems/data); None after one ``Error:`` line where pandas or the folder is missing (the
    script exits 2)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="aiconfigurator_core/systems/data")
    args = ap.parse_args(argv)
    pd = tables_reader(args.data, script)
    return None if pd is None else (args, pd)


def tables_reader(data: Path, script: str):
    """pandas, to read the parquet tables under ``data`` (aiconfigurator_core/systems/data); None after one
    ``Error:`` line on stderr where pandas is missing or ``data`` is not a folder (the script exits 2)."""
    try:
        import pandas as pd
    except ImportError:
        print(f"Error: {script} reads parquet tables: pip install pandas pyarrow", file=sys.stderr)
        return None
    if not data.is_dir():
        print(f"Error: --data {data}: not a folder (aiconfigurator_core/systems/data)", file=sys.stderr)
        return None
    return pd


def predict(m: int, n: int, k: int, dtype: str, hw, f) -> float:
    from planner.analysis.trace import Op
    from planner.hardware.expected import for_column, op_floor_s, ops_time_s

    column, wb, ab, block = DTYPES[dtype]
    weight = n * k * wb + (math.ceil(n / 128) * math.ceil(k / 128) * 4 if block else 0)
    op = Op(name="gemm", kind="matmul", category="attention", layer=0, flops=2 * m * n * k, weight_bytes=weight,
            act_read_bytes=m * k * ab, act_write_bytes=m * n * 2)
    fc = for_column(f, hw, column)
    return ops_time_s([op], hw.peak_flops_for(column), hw.memory_bandwidth_bytes_per_s, fc, decode=False, rows=m,
                      floor_s=op_floor_s(fc, graph=True)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="aiconfigurator_core/systems/data")
    ap.add_argument("--framework", default="vllm", choices=("vllm", "sglang", "trtllm"))
    ap.add_argument("--min-dim", type=int, default=256, help="leave out rows with n or k below this")
    args = ap.parse_args(argv)
    pd = tables_reader(args.data, "bench/aic_gemm.py")
    if pd is None:
        return 2

    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for
    from planner.hardware.profiles import load_profile

    engine = load_engine(args.framework)
    print(f"planner's GEMM price / aiconfigurator's measured latency, engine profile {args.framework} "
          f"(ratio < 1: planner faster than measured)")
    print(f"{'system':10} {'dtype':10} {'m':>12} {'n':>6} {'median':>7} {'p10':>6} {'p90':>6}  {'kernel':40}")
    summary = []
    for system, profile in SYSTEMS.items():
        folder = latest_version(args.data / system / "gemm" / args.framework)
        if folder is None:
            continue
        d = pd.read_parquet(folder / "gemm_perf.parquet")
        d = d[(d.n >= args.min_dim) & (d.k >= args.min_dim)]
        hw = load_profile(profile)
        f = factors_for(hw, engine)
        for dtype in DTYPES:
            rows = d[d.gemm_dtype == dtype]
            if rows.empty or DTYPES[dtype][0] not in hw.peak_flops_per_s:
                continue
            kernels = ", ".join(sorted(rows.kernel_source.unique()))[:40]
            for lo, hi in M_BUCKETS:
                b = rows[(rows.m >= lo) & (rows.m <= hi)]
                if b.empty:
                    continue
                r = sorted(predict(int(m), int(n), int(k), dtype, hw, f) / (lat * 1e-3)
                           for m, n, k, lat in zip(b.m, b.n, b.k, b.latency))
                q = statistics.quantiles(r, n=10) if len(r) > 1 else [r[0]] * 9
                summary.append((system, dtype, lo, hi, len(r), statistics.median(r)))
                print(f"{system:10} {dtype:10} {f'{lo}-{hi}' if hi < 1 << 30 else f'{lo}+':>12} {len(r):>6} "
                      f"{statistics.median(r):>7.2f} {q[0]:>6.2f} {q[-1]:>6.2f}  {kernels:40}"
                      f"  ({folder.name})")
    if not summary:
        print(f"Error: no gemm_perf.parquet for {args.framework} under {args.data}", file=sys.stderr)
        return 1
    logs = [abs(math.log(s[5])) for s in summary]
    print(f"median over the buckets of |log(predicted / measured)|: {statistics.median(logs):.3f} "
          f"(x{math.exp(statistics.median(logs)):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
