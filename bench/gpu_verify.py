"""Run ``planner verify`` over models × batches × contexts on one device and print one table.

The default grid is the GPU acceptance grid: Llama-3.1-8B, Qwen2.5-7B, Mistral-7B-v0.1, gemma-2-9b and
Qwen3-30B-A3B × batch {1, 16, 64} × context {2k, 32k}, CUDA-graph replays, predicted by the calibrated
profile (measured first with ``planner calibrate`` unless ``--no-calibrate``). Runs that do not fit
are refused by verify's memory guard and listed as such. A time budget (``--budget-s``) stops
launching new runs in time; what was skipped is listed.

Tensor-parallel rows (``--tp``, default 1 2 4 8 on CUDA): ``planner verify --tp N`` of ``--tp-model``
(batch 1, the first context) for each N the GPUs allow (the others are listed as skipped); the table
gains a ``tp`` column, and a TP row's achieved bandwidth is one rank's share of the bytes over the
slowest rank's step.

Logits check (``--logits``, on by default): a random checkpoint of ``--logits-model``'s shape written
with transformers' ``save_pretrained`` and a word-level tokenizer built in memory (nothing downloaded),
then ``planner verify --weights DIR --reference transformers`` in fp32 and bf16 on the device.

Summary lines: the median |error| over the runs, and the achieved bandwidth of batch-1 decode of the
first model as a fraction of the calibrated copy bandwidth (the targets on an H200: ≤ 5 % and ≥ 85 %).

    bench/gpu_verify.sh                                  # the GPU grid, TP rows and the logits check
    bench/gpu_verify.sh --device cpu --models path/to/tiny --batches 1 2 --contexts 16 64 --steps 2 --tp 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b",
          "Qwen/Qwen3-30B-A3B"]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--models", nargs="+", default=MODELS, help="bundled ids, hub ids or local config folders")
    p.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64])
    p.add_argument("--contexts", nargs="+", type=int, default=[2048, 32768])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dtype", default=None, help="default: bf16 on CUDA (gemma-2-9b's config says float32), fp32 on CPU")
    p.add_argument("--hardware", default=None, help="profile for the predictions (default: calibrated)")
    p.add_argument("--no-calibrate", action="store_true", help="use the existing profile; do not calibrate first")
    p.add_argument("--no-graphs", action="store_true")
    p.add_argument("--budget-s", type=float, default=360.0,
                   help="stop starting new grid runs after this many seconds (TP rows: 60 s more; then the logits check)")
    p.add_argument("--json", dest="json_out", default=None, help="also write every result to this JSON file")
    p.add_argument("--tp", nargs="*", type=int, default=None,
                   help="tensor-parallel sizes for the TP rows (default: 1 2 4 8 on CUDA, none on CPU)")
    p.add_argument("--tp-model", default="meta-llama/Llama-3.1-8B", help="the model of the TP rows")
    p.add_argument("--logits", action=argparse.BooleanOptionalAction, default=None,
                   help="run the logits check against transformers (default: on for CUDA)")
    p.add_argument("--logits-model", default="Qwen/Qwen2.5-0.5B", help="the shape of the logits check's random checkpoint")
    return p.parse_args(argv)


WORDS = ("the capital of france is paris . germany berlin italy rome spain madrid a an city country river big "
         "small north south east west").split()


def save_word_tokenizer(folder) -> None:
    """A word-level tokenizer (``WORDS`` plus [UNK] and [EOS]) built in memory and saved to ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[EOS]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]").save_pretrained(folder)


def logits_check(model_id: str, device: str, folder: Path) -> list[str]:
    """Random checkpoint of ``model_id``'s shape (save_pretrained) + in-memory tokenizer, then the
    reference check in fp32 and bf16; one line per dtype."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    from planner.cli.common import load_model
    from planner.runtime.reference import run_reference

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    loaded = load_model(model_id)
    cfg = {k: v for k, v in loaded.resolved.config.items() if not k.startswith("_")}
    config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(folder)
    del model
    save_word_tokenizer(folder)
    ckpt = load_model(str(folder))
    out = []
    for dtype in ("fp32", "bf16"):
        r = run_reference(ckpt.spec, str(folder), config=ckpt.resolved.config, dtype=dtype, device=device,
                          prompt="the capital of france is paris . the capital of germany is")
        out.append(f"logits check {model_id} (random weights, save_pretrained) {dtype} on {device}: max |dlogit| "
                   f"{r.max_abs_diff:.3g} (tolerance {r.tolerance:.3g}: {r.tolerance_rule}) "
                   f"{'PASS' if r.passed else 'FAIL'}; top-1 {r.top1_agree}/{r.prompt_tokens}; greedy "
                   f"{'all 20 agree' if r.first_divergence is None else f'diverge at token {r.first_divergence + 1}'}")
        if device == "cuda":
            torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    args = parse(argv)
    t_start = time.perf_counter()
    import torch

    from planner.analysis.errors import PlannerError
    from planner.cli.common import load_model
    from planner.hardware.profiles import save_user_profile
    from planner.runtime.calibrate import calibrate, calibration_profile
    from planner.runtime.verify import VerifyOptions, result_dict, run_verify

    if args.device == "cuda" and not torch.cuda.is_available():
        print("Error: --device cuda but torch sees no GPU (use --device cpu to test the script)", file=sys.stderr)
        return 1
    hardware = args.hardware
    cal = None
    if not args.no_calibrate:
        from planner.runtime.calibrate import model_matmul_shapes

        # as 'planner calibrate --model MODELS[0]' measures: the skinny-GEMM tables against that model's shapes
        first = load_model(args.models[0]).spec
        cal = calibrate(args.device, shapes=model_matmul_shapes(first), shapes_from=args.models[0], spec=first)
        path = save_user_profile(calibration_profile(cal), "calibrated")
        print(f"calibrated {cal.device_type}: {cal.device_name}: copy {cal.copy_bytes_per_s / 1e9:.1f} GB/s, "
              f"profile bandwidth {cal.memory_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
              + ", ".join(f"{d} {v / 1e12:.1f} TFLOP/s" for d, v in cal.matmul_flops_per_s.items())
              + f", launch {cal.launch_s * 1e6:.2f} us"
              + (f", graph node {cal.graph_node_s * 1e6:.2f} us" if cal.graph_node_s else "")
              + (", at the model's width " + ", ".join(f"batch {r} {v * 1e6:.2f} us" for r, v in cal.graph_node_by_rows_s.items())
                 if cal.graph_node_by_rows_s else "")
              + (f", attention {cal.attention_head_bytes_per_s / 1e9:.1f} GB/s per KV-head program"
                 if cal.attention_head_bytes_per_s else "")
              + (f" + {cal.attention_decode_overhead_s * 1e6:.2f} us a call" if cal.attention_decode_overhead_s is not None else "")
              + (f", grouped experts {cal.experts_grouped_bytes_per_s / 1e12:.3f} TB/s + "
                 f"{(cal.experts_grouped_overhead_s or 0) * 1e6:.1f} us a layer" if cal.experts_grouped_bytes_per_s else "")
              + f" ({cal.seconds:.0f} s) -> {path}", flush=True)
        if args.json_out:
            Path(args.json_out).with_suffix(".calibration.json").write_text(json.dumps(cal.to_dict(), indent=1, default=str))
        hardware = hardware or "calibrated"

    rows, results = [], []
    for model_id in args.models:
        loaded = None
        for batch in args.batches:
            for context in args.contexts:
                tag = (model_id, batch, context)
                if time.perf_counter() - t_start > args.budget_s:
                    rows.append((*tag, None, "skipped: time budget", None))
                    continue
                try:
                    loaded = loaded or load_model(model_id)
                    dtype = args.dtype or ("bf16" if args.device == "cuda" else None)
                    opts = VerifyOptions(device=args.device, dtype=dtype, batch=batch, context=context,
                                         steps=args.steps, warmup=args.warmup, graphs=not args.no_graphs,
                                         hardware=hardware, profile=False)
                    r = run_verify(loaded.spec, opts, model_id=loaded.id)
                    rows.append((*tag, r, "", None))
                    results.append(result_dict(r))
                except PlannerError as exc:
                    fits = "not enough" in exc.message and "memory" in exc.message
                    rows.append((*tag, None, f"does not fit: {exc.hint}" if fits else str(exc), None))
                except Exception as exc:  # keep going: one failure must not hide the table
                    rows.append((*tag, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}", None))
                finally:
                    if args.device == "cuda":
                        torch.cuda.empty_cache()
                print(_row_text(rows[-1]), file=sys.stderr, flush=True)

    tp_sizes = args.tp if args.tp is not None else ([1, 2, 4, 8] if args.device == "cuda" else [])
    if tp_sizes:
        from planner.runtime.verify_tp import run_verify_tp

        gpus = torch.cuda.device_count() if args.device == "cuda" else None
        for tp in tp_sizes:
            tag = (args.tp_model, 1, args.contexts[0])
            if gpus is not None and tp > gpus:
                rows.append((*tag, None, f"skipped: --tp {tp} needs {tp} GPUs, this machine has {gpus}", tp))
            elif time.perf_counter() - t_start > args.budget_s + 60:
                rows.append((*tag, None, "skipped: time budget", tp))
            else:
                try:
                    loaded = load_model(args.tp_model)
                    opts = VerifyOptions(device=args.device, dtype=args.dtype or ("bf16" if args.device == "cuda" else None),
                                         batch=1, context=args.contexts[0], steps=args.steps, warmup=args.warmup,
                                         hardware=hardware, profile=False, tp=tp)
                    if tp == 1:
                        r = run_verify(loaded.spec, opts, model_id=loaded.id)
                        results.append(result_dict(r))
                    else:
                        r = run_verify_tp(loaded.spec, opts, model_id=loaded.id)
                        results.append(r.to_dict())
                    rows.append((*tag, r, "", tp))
                except PlannerError as exc:
                    rows.append((*tag, None, str(exc), tp))
                except Exception as exc:  # keep going: one failure must not hide the table
                    rows.append((*tag, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}", tp))
                finally:
                    if args.device == "cuda":
                        torch.cuda.empty_cache()
            print(_row_text(rows[-1]), file=sys.stderr, flush=True)

    print(table(rows))
    if args.logits if args.logits is not None else args.device == "cuda":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                for line in logits_check(args.logits_model, args.device, Path(tmp)):
                    print(line)
            except ImportError as exc:
                print(f"logits check: skipped, {exc.name or exc} is not installed (pip install transformers)")
            except PlannerError as exc:
                print(f"logits check: {exc}")
    errors = [abs(r.error) for _, _, _, r, _, tp in rows if r is not None and tp is None]
    if errors:
        print(f"median |error| over {len(errors)} runs: {100 * statistics.median(errors):.1f}%   (target ≤ 5% on an H200)")
    first = next((r for m, b, c, r, _, tp in rows if r is not None and m == args.models[0] and b == 1 and tp is None), None)
    if first is not None:
        ref = cal.copy_bytes_per_s if cal is not None else first.rates[1]
        label = "calibrated copy bandwidth" if cal is not None else f"'{first.hardware.name}' bandwidth"
        print(f"batch-1 decode of {first.model_id} at context {first.options.context:,}: "
              f"{first.achieved_bytes_per_s / 1e9:.1f} GB/s = {100 * first.achieved_bytes_per_s / ref:.0f}% of the "
              f"{label} ({ref / 1e9:.1f} GB/s)   (target ≥ 85% on an H200)")
    bad = [r for _, _, _, r, _, _ in rows if r is not None and not r.checks_ok]
    print(f"exact checks: {len([r for _, _, _, r, _, _ in rows if r is not None]) - len(bad)} ok, {len(bad)} failed; "
          f"total {time.perf_counter() - t_start:.0f} s")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1, default=str))
    return 1 if bad else 0


def _row_text(row) -> str:
    m, b, c, r, why, tp = row
    if r is None:
        return f"{m} b={b} c={c} tp={tp or 1}: {why}"
    return (f"{m} b={b} c={c} tp={tp or 1}: predicted {r.predicted_s * 1e3:.3f} ms, measured {r.measured_s * 1e3:.3f} ms, "
            f"error {100 * r.error:+.1f}%")


def table(rows) -> str:
    head = ["model", "tp", "batch", "context", "predicted ms", "measured ms", "error", "spread ms", "achieved GB/s",
            "% of profile BW", "checks"]
    lines = []
    for m, b, c, r, why, tp in rows:
        tps = str(tp or 1)
        if r is None:
            lines.append([m, tps, str(b), str(c), "-", "-", "-", "-", "-", "-", why])
            continue
        if hasattr(r, "rank_checks"):  # a tensor-parallel run (runtime.verify_tp.TPResult)
            spread = max(r.step_samples_s[0]) - min(r.step_samples_s[0])
            ach = r.step_bytes / r.measured_s
            lines.append([m, tps, str(b), str(c), f"{r.predicted_s * 1e3:.3f}", f"{r.measured_s * 1e3:.3f}",
                          f"{100 * r.error:+.1f}%", f"{spread * 1e3:.3f}", f"{ach / 1e9:.1f} per rank", "-",
                          "ok" if r.checks_ok else "FAILED"])
            continue
        lines.append([m, tps, str(b), str(c), f"{r.predicted_s * 1e3:.3f}", f"{r.measured_s * 1e3:.3f}",
                      f"{100 * r.error:+.1f}%", f"{r.times.spread_s * 1e3:.3f}", f"{r.achieved_bytes_per_s / 1e9:.1f}",
                      f"{100 * r.achieved_bytes_per_s / r.rates[1]:.0f}%",
                      "ok" if r.checks_ok else "FAILED: " + ",".join(x.name for x in r.checks if not x.ok)])
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for line in lines:
        out.append("| " + " | ".join(v.ljust(w) for v, w in zip(line, widths)) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
