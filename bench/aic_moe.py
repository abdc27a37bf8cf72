"""planner's price of one routed-expert (MoE) layer beside NVIDIA aiconfigurator's measured MoE tables.

aiconfigurator (github.com/ai-dynamo/aiconfigurator) ships the latency of one MoE layer (routing, the grouped expert
GEMMs, the combine) measured on each GPU inside each engine's container (``aiconfigurator-core`` wheel,
``aiconfigurator_core/systems/data/<system>/moe/<framework>/<version>/moe_perf.parquet``: num_tokens, hidden_size,
inter_size, topk, num_experts, moe_tp_size, moe_ep_size, moe_dtype, distribution, latency in ms). This script prices
the same layer with planner's step model (the ``experts`` op of a prompt step of N tokens on one rank of a
tensor-parallel replica: ``hardware.serve.StepModel``, the engine profile's factors, no launch floor) and prints
measured / planner by token count, for balanced routing and expert tensor parallelism (EP 1), the layout
``planner serve`` models. It is an independent check of the MoE price (nothing is fitted on it here).

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic        # 82 MB; unzip its systems/data
    python bench/aic_moe.py --data /tmp/aic/aiconfigurator_core/systems/data  # needs pandas + pyarrow

A ratio above 1: the measured layer takes longer than planner prices it. Where ``moe_perf.parquet`` times the layer
op by op (it does: the 1-token rows hold the launches), the smallest token counts include a per-call cost that a
CUDA-graph replay of a decode step does not pay; the prompt range (256 tokens and up) is what a prefill step runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aic_gemm import SYSTEMS, data_tables, step_model_of, versions_with  # noqa: E402  (bench/ is this script's folder)

#: planner model (bundled config) -> (tensor-parallel degree, the checkpoint's expert format in aiconfigurator)
MODELS = {"deepseek-ai/DeepSeek-R1": (8, "fp8_block"), "Qwen/Qwen3-235B-A22B": (8, "bfloat16"),
          "Qwen/Qwen3-30B-A3B": (1, "bfloat16"), "mistralai/Mixtral-8x7B-v0.1": (2, "bfloat16")}
TOKENS = (64, 256, 512, 1024, 2048, 4096, 8192)


def versions(folder: Path) -> list[Path]:
    """The engine versions measured, newest first."""
    return versions_with(folder, "moe_perf.parquet")


def planner_ms(model: str, tp: int, system: str, framework: str, dtype: str) -> dict[int, float] | None:
    """The step model's experts op of one rank, in ms, at each of TOKENS prompt tokens (None: no profile)."""
    from planner.hardware.expected import ops_time_s

    m, hw, f = step_model_of(model, tp, system, framework, 1024)  # the checkpoint as stored (DeepSeek: block FP8)
    out = {}
    for t in TOKENS:
        one = next(g.op for g in m._ops(1, t, 0) if g.op.kind == "experts")  # one layer's
        out[t] = 1e3 * ops_time_s([one], hw.peak_flops_for(m.compute_key), hw.memory_bandwidth_bytes_per_s, f,
                                  decode=False, rows=t, expert_rows=m._expert_rows(t), expert_inner=m.expert_inner)
    return out


def main(argv=None) -> int:
    got = data_tables(__doc__, "bench/aic_moe.py", argv)
    if got is None:
        return 2
    args, pd = got
    from planner.cli.common import load_model

    print("measured MoE layer (aiconfigurator) / planner's experts op, one rank, balanced routing, EP 1 "
          "(above 1: the layer takes longer than planner prices it)")
    print(f"{'model':28} {'system':9} {'engine':16} {'dtype':9} " + " ".join(f"{t:>11}" for t in TOKENS))
    for model, (tp, dtype) in MODELS.items():
        spec = load_model(model).spec
        moe = spec.first_moe
        for system in SYSTEMS:
            for framework in ("vllm", "sglang", "trtllm"):
                for v in versions(args.data / system / "moe" / framework):  # the newest that measured this shape
                    d = pd.read_parquet(v / "moe_perf.parquet")
                    q = d[(d.hidden_size == spec.hidden_size) & (d.inter_size == moe.moe_intermediate_size)
                          & (d.num_experts == moe.num_experts) & (d.topk == moe.num_experts_per_tok)
                          & (d.moe_tp_size == tp) & (d.moe_ep_size == 1) & (d.distribution == "balanced")
                          & (d.moe_dtype == dtype) & (d.num_tokens.isin(TOKENS))]
                    if not q.empty:
                        break
                else:
                    continue
                pm = planner_ms(model, tp, system, framework, dtype)
                for source, g in q.groupby("kernel_source"):
                    meas = g.groupby("num_tokens").latency.median()
                    cells = [f"{meas[t]:.3f}/{pm[t]:.3f}={meas[t] / pm[t]:.2f}" if t in meas.index else "-"
                             for t in TOKENS]
                    print(f"{model.split('/')[1][:28]:28} {system:9} {framework + ' ' + v.name:16} {dtype:9} "
                          + " ".join(f"{c:>11}" for c in cells) + f"  {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
