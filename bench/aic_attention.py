"""planner's price of prompt (prefill) attention beside NVIDIA aiconfigurator's measured context-attention tables.

aiconfigurator (github.com/ai-dynamo/aiconfigurator) ships the latency of one layer's prompt attention kernel measured
on each GPU inside each engine's container (``aiconfigurator-core`` wheel, ``aiconfigurator_core/systems/data/
<system>/attention/<framework>/<version>/context_attention_perf.parquet``: batch_size, isl, num_heads,
num_key_value_heads, head_dim, kv_cache_dtype, latency in ms). This script takes each model's attention shape on one
rank of a tensor-parallel replica, one prompt of N tokens with nothing cached, and prints:

- the measured kernel's fraction of the device's dense 16-bit peak, and planner's (the ``attention`` op of the
  prompt step: ``hardware.serve.StepModel``, the engine profile's factors and the device's prompt attention ramp,
  ``hardware.expected.prefill_attention_ramp``);
- measured / planner for that op (above 1: the kernel takes longer than planner prices it);
- what pricing the attention op at the measured time would change in planner's whole prompt step of N tokens
  (every op of every layer, no launch floor): the share a TTFT would move by.

It is an independent check of the attention price (nothing is fitted on it here).

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic        # 82 MB; unzip its systems/data
    python bench/aic_attention.py --data /tmp/aic/aiconfigurator_core/systems/data  # needs pandas + pyarrow
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aic_gemm import SYSTEMS, data_tables, step_model_of, versions_with  # noqa: E402  (bench/ is this script's folder)

#: planner model (bundled config) -> tensor-parallel degree: 32 query / 8 KV heads a rank, and 8 / 1
MODELS = {"meta-llama/Llama-3.1-8B": 1, "meta-llama/Llama-3.1-70B": 8}
TOKENS = (512, 1024, 2048, 4096, 8192, 16384)


def planner_prompt(model: str, tp: int, system: str, framework: str) -> dict[int, tuple[float, float, float, float]]:
    """At each of TOKENS prompt tokens (one prompt, nothing cached), on one rank: (the attention op's FLOPs, its
    price in ms, the whole prompt step's ops in ms, the step's attention ops in ms)."""
    from planner.hardware.expected import ops_time_s, prompt_attention_work

    m, hw, f = step_model_of(model, tp, system, framework, max(TOKENS))
    peak, bw = hw.peak_flops_for(m.compute_key), hw.memory_bandwidth_bytes_per_s
    out = {}
    for t in TOKENS:
        groups = list(m._ops(1, t, 0))
        attn = [g for g in groups if g.op.kind == "attention"]
        # the prompt attention kernel's tiles and keys (its ramp: hardware.expected.prefill_attention_ramp)
        work = prompt_attention_work([attn], m.query_heads, [(t, 0, 1)])

        def ms(gs):
            return 1e3 * ops_time_s(gs, peak, bw, f, decode=False, rows=t, expert_rows=m._expert_rows(t),
                                    expert_inner=m.expert_inner, attention_work=work)
        out[t] = (attn[0].op.flops, ms([attn[0].op]), ms(groups), ms(attn))
    return out


def main(argv=None) -> int:
    got = data_tables(__doc__, "bench/aic_attention.py", argv)
    if got is None:
        return 2
    args, pd = got
    from planner.cli.common import load_model
    from planner.hardware.profiles import load_profile

    print("prompt attention, one prompt, nothing cached, one rank: measured (aiconfigurator) against planner's "
          "attention op; cells: measured / planner fraction of the 16-bit peak, measured / planner time, and the "
          "change of planner's whole prompt step were the op priced as measured")
    print(f"{'model':22} {'tp':>2} {'system':9} {'engine':17} " + " ".join(f"{t:>20}" for t in TOKENS))
    found = False
    for model, tp in MODELS.items():
        att = load_model(model).spec.layers[0].mixer
        heads, kv, hd = att.num_attention_heads // tp, max(1, att.num_key_value_heads // tp), att.head_dim
        for system in SYSTEMS:
            hw = load_profile(SYSTEMS[system])
            for framework in ("vllm", "sglang", "trtllm"):
                # the newest version that measured this shape
                for v in versions_with(args.data / system / "attention" / framework, "context_attention_perf.parquet"):
                    d = pd.read_parquet(v / "context_attention_perf.parquet")
                    sel = ((d.batch_size == 1) & (d.num_heads == heads) & (d.num_key_value_heads == kv)
                           & (d.head_dim == hd) & (d.kv_cache_dtype == "bfloat16") & (d.isl.isin(TOKENS)))
                    if "window_size" in d:
                        sel &= d.window_size == 0
                    if "step" in d:
                        sel &= d.step == 0
                    q = d[sel]
                    if not q.empty:
                        break
                else:
                    continue
                found = True
                pm = planner_prompt(model, tp, system, framework)
                meas = q.groupby("isl").latency.median()
                peak = hw.peak_flops_for("bf16")
                cells = []
                for t in TOKENS:
                    if t not in meas.index:
                        cells.append("-")
                        continue
                    flops, op_ms, step_ms, attn_ms = pm[t]
                    ratio = meas[t] / op_ms
                    moved = (attn_ms * (ratio - 1)) / step_ms
                    cells.append(f"{flops / (meas[t] * 1e-3) / peak:.2f}/{flops / (op_ms * 1e-3) / peak:.2f} "
                                 f"x{ratio:.2f} {moved:+.1%}")
                print(f"{model.split('/')[1][:22]:22} {tp:>2} {system:9} {framework + ' ' + v.name:17} "
                      + " ".join(f"{c:>20}" for c in cells))
    if not found:
        print(f"Error: no context_attention_perf.parquet with these shapes under {args.data}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
