"""``planner serve``: one deployment on a named engine -- memory as the engine sizes it, TTFT, TPOT,
end-to-end latency and throughput, expected beside the ideal roofline, the gap explained by factor."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .analyze_cmd import ModelArg, RevisionOpt
from .options import DEFAULT_BATCH, DEFAULT_GPUS, DtypeOpt, FormatOpt, GpusOpt, HardwareOpt, JsonOpt, KvDtypeOpt
from .options import TOKENS_HELP, tokens
from .render import OutputFormat, fmt_gib, fmt_time, print_csv, print_json, resolve_format
from .sections import Section, emit

EngineOpt = Annotated[str, typer.Option("--engine", "-e", help="Serving engine whose memory accounting and step costs to use: vllm, sglang, trtllm or ideal (the roofline).")]
TpOpt = Annotated[Optional[int], typer.Option("--tp", min=1, max=1024, help="Tensor-parallel degree (GPUs per replica); default: --gpus.")]
GmuOpt = Annotated[Optional[float], typer.Option("--gpu-memory-utilization", help="The engine's memory cap as a fraction (vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction); default: the engine's.")]
MaxLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", click_type=tokens(1, 1 << 30), help=f"Longest sequence in tokens the engine admits ({TOKENS_HELP}); default: the model's max_position_embeddings.")]
MnbtOpt = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", click_type=tokens(1, 1 << 24), help=f"Tokens per engine step (the prefill chunk; {TOKENS_HELP}); default: the engine's for this GPU.")]
InputOpt = Annotated[int, typer.Option("--input-len", "-i", click_type=tokens(1, 1 << 24), help=f"Prompt tokens per request ({TOKENS_HELP}).")]
OutputOpt = Annotated[int, typer.Option("--output-len", "-o", click_type=tokens(1, 1 << 24), help=f"Generated tokens per request ({TOKENS_HELP}).")]
ConcOpt = Annotated[int, typer.Option("--concurrency", "-C", min=1, max=1 << 20, help="Requests running together (count), split evenly over the replicas.")]
StepsOpt = Annotated[Optional[int], typer.Option("--num-scheduler-steps", min=1, max=1024, help="Decode steps per scheduling round (vLLM V0's multi-step scheduling, 0.6.x; V1 has none): a request waits for the round in flight and tokens stream once per round; default: the engine's (1).")]
RequestsOpt = Annotated[Optional[int], typer.Option("--requests", min=1, max=1 << 40, help="Closed loop: requests the clients send in all (vllm bench serve --num-prompts); the means are over all of them, the start-up burst included. Default: 8 per client.")]
MeanOutOpt = Annotated[Optional[float], typer.Option("--mean-output-len", help="Requests stop at end-of-sequence with this mean output length (a benchmark without --ignore-eos): each request stops with the same chance after every token, cut at --output-len (geometric lengths with this mean), so closed-loop clients drift apart. Default: every request generates --output-len tokens.")]
InDistOpt = Annotated[Optional[str], typer.Option("--input-len-dist", help="Each request's prompt length drawn from this distribution, in place of --input-len (then their mean): uniform:A:B (whole tokens A to B), normal:MEAN:SD, lognormal:MEAN:SD or const:N. A random-dataset benchmark's spread: vllm bench serve --random-range-ratio R (vLLM 0.10 and later) is uniform:L(1-R):L(1+R); sglang.bench_serving's (its default ratio 0) and vLLM's older benchmark_serving.py draw uniform:max(1,R*L):L. Requests take evenly spread quantiles (the same lengths every run), so closed-loop clients drift apart as they do in the benchmark.")]
OutDistOpt = Annotated[Optional[str], typer.Option("--output-len-dist", help="Each request's output length drawn from this distribution, in place of --output-len (then their mean); the syntax of --input-len-dist. Not with --mean-output-len.")]
GraphOpt = Annotated[Optional[int], typer.Option("--cuda-graph-max-tokens", click_type=tokens(0, 1 << 24), help="The largest engine step replayed as a CUDA graph, in tokens (a decode step's are its sequences; k = 1024); larger steps are launched op by op. vLLM max_cudagraph_capture_size, SGLang --cuda-graph-max-bs, TensorRT-LLM cuda_graph_config.max_batch_size; 0: no graphs (vLLM --enforce-eager). Default: the engine's.")]
AsyncOpt = Annotated[Optional[bool], typer.Option("--async-scheduling/--no-async-scheduling", help="vLLM schedules the next step while the GPU runs this one, so its per-step host work costs only what outlasts the step (the default from vLLM 0.14.0; --no-async-scheduling for 0.8-0.13 or a run that turned it off). Default: the engine's (vLLM: on).")]
WaitItersOpt = Annotated[Optional[int], typer.Option("--batch-wait-iters", min=0, max=1 << 20, help="TensorRT-LLM's delayed batching (batch_wait_timeout_iters): while requests decode, a step takes no new prompt until this many steps have waited or the step reaches --batch-wait-tokens-ratio of max_num_tokens. 0: off; default: the engine's (0). Only --engine trtllm.")]
WaitRatioOpt = Annotated[Optional[float], typer.Option("--batch-wait-tokens-ratio", help="TensorRT-LLM's batch_wait_max_tokens_ratio: the fraction of max_num_tokens (--max-num-batched-tokens) a step's tokens must reach before new prompts stop waiting (with --batch-wait-iters). 0: off; default: the engine's (0). Only --engine trtllm.")]
RecvOpt = Annotated[Optional[int], typer.Option("--scheduler-recv-interval", min=1, max=1 << 20, help="SGLang's --scheduler-recv-interval: the scheduler takes new requests off its socket once every N decode steps (after a prefill step at once), so while requests decode a new one waits for up to N steps. Default: the engine's (1). Only --engine sglang.")]
ArrivalOpt = Annotated[str, typer.Option("--arrival", help="How the --concurrency requests arrive: 'together' (all at once, a static batch or an offline run) or 'closed-loop' (C clients that start together, each sending its next request when the last ends, simulated step by step with the engine's scheduler; what benchmark_serving --max-concurrency and genai-perf --concurrency measure).")]


def serve(
    model: ModelArg,
    hardware: HardwareOpt = None,
    gpus: GpusOpt = DEFAULT_GPUS,
    tp: TpOpt = None,
    dtype: DtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    engine: EngineOpt = "vllm",
    gpu_memory_utilization: GmuOpt = None,
    max_model_len: MaxLenOpt = None,
    max_num_batched_tokens: MnbtOpt = None,
    input_len: InputOpt = 1024,
    output_len: OutputOpt = 128,
    concurrency: ConcOpt = DEFAULT_BATCH,
    arrival: ArrivalOpt = "together",
    num_scheduler_steps: StepsOpt = None,
    requests: RequestsOpt = None,
    mean_output_len: MeanOutOpt = None,
    input_len_dist: InDistOpt = None,
    output_len_dist: OutDistOpt = None,
    cuda_graph_max_tokens: GraphOpt = None,
    async_scheduling: AsyncOpt = None,
    batch_wait_iters: WaitItersOpt = None,
    batch_wait_tokens_ratio: WaitRatioOpt = None,
    scheduler_recv_interval: RecvOpt = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Serve MODEL on a named engine: KV capacity, TTFT, time per output token, end-to-end latency and
    throughput, expected (sourced engine and device factors) beside the ideal roofline.

    Example: planner serve llama-3.1-8b --hardware h100-sxm --engine vllm --input-len 1024 --output-len 128 --concurrency 8
    """
    import math

    from planner.analysis.errors import OptionError
    from planner.hardware.serve import deployment_dict, serve as run_serve

    from .common import load_hardware, load_model

    if gpu_memory_utilization is not None and not (math.isfinite(gpu_memory_utilization) and 0 < gpu_memory_utilization <= 1):
        raise OptionError(f"--gpu-memory-utilization must be a fraction in (0, 1], got {gpu_memory_utilization}")
    out_fmt = resolve_format(fmt, as_json)
    hw = load_hardware(hardware)
    lm = load_model(model, revision)
    d = run_serve(lm.spec, hw, engine=engine, gpus=gpus, tp=tp, dtype=dtype, kv_dtype=kv_dtype,
                  gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                  max_num_batched_tokens=max_num_batched_tokens, input_len=input_len, output_len=output_len,
                  concurrency=concurrency, arrival=arrival.strip().lower(), num_scheduler_steps=num_scheduler_steps,
                  requests=requests, mean_output_len=mean_output_len, cuda_graph_max_tokens=cuda_graph_max_tokens,
                  async_scheduling=async_scheduling, input_len_dist=input_len_dist, output_len_dist=output_len_dist,
                  batch_wait_iters=batch_wait_iters, batch_wait_tokens_ratio=batch_wait_tokens_ratio,
                  scheduler_recv_interval=scheduler_recv_interval)
    data = deployment_dict(d, model_id=lm.id)
    if out_fmt == OutputFormat.json:
        print_json(data)
        return
    if out_fmt == OutputFormat.csv:
        print_csv([data])
        return
    emit(sections(d, lm.id), out_fmt, lines=summary_lines(d, data["accuracy"], data["accuracy_blind"],
                                                        data["accuracy_bias"]))


def _ms(s: float) -> str:
    return fmt_time(s)


def explain_words(d, key: str = "tpot_s", top: int = 4) -> str:
    """'bandwidth efficiency +2.6 ms, step overhead +2.0 ms, all-reduce latency 160 × 20 µs +3.2 ms'."""
    r = d.result
    parts = r.explain.get(key) or {}
    items = sorted(((k, v) for k, v in parts.items() if abs(v) > 0), key=lambda kv: -abs(kv[1]))[:top]
    words = []
    for k, v in items:
        label = k
        if k == "all-reduce latency":
            calls = r.decode_step.allreduce_calls if r.decode_step is not None else 0
            if key == "tpot_s" and calls:  # (a group across nodes pays the network's ring, not the fitted call)
                label = f"all-reduce latency {calls} × {fmt_time(r.decode_step.parts['all-reduce latency'] / calls)}"
        words.append(f"{label} {'+' if v >= 0 else '−'}{_ms(abs(v))}")
    return ", ".join(words)


def summary_lines(d, accuracy: dict | None = None, blind: dict | None = None, bias: dict | None = None) -> list[str]:
    """The lines under the tables; ``accuracy``, ``blind`` and ``bias``: ``deployment_dict``'s records of the held-out
    (k-fold) and blind error, and of the signed error of this model family's and this vendor's published runs."""
    from planner.hardware.accuracy import accuracy_line, bias_lines

    m, r = d.memory, d.result
    eng = d.engine.display_name
    lines = []
    if r is None:
        lines.extend(d.notes)
        return lines
    if r.expected.tpot_s is not None:
        lines.append(f"expected {_ms(r.expected.tpot_s)} per token on {eng} (ideal {_ms(r.ideal.tpot_s)}): "
                     + explain_words(d, "tpot_s"))
    lines.append(f"expected time to first token {_ms(r.expected.ttft_s)} (ideal {_ms(r.ideal.ttft_s)}): "
                 + explain_words(d, "ttft_s"))
    if not m.token_bound:  # recurrent-only: a fixed state per sequence, no per-token cache
        lines.append(f"state pool: {m.state_sequences:,} sequences per replica, of any length (a recurrent state of "
                     f"{m.state_bytes_per_sequence:,} B per sequence per GPU, no per-token KV cache)")
    else:
        lines.append(f"KV pool: {m.kv_capacity_tokens:,} tokens per replica; {m.max_concurrency:.2f} sequences of "
                     f"{m.max_model_len:,} tokens (--max-model-len)"
                     + (" with their recurrent state" if m.state_bytes_per_sequence else ""))
    for rec in (accuracy, blind):
        acc = accuracy_line(rec, eng)
        if acc:
            lines.append(acc)
    lines.extend(bias_lines(bias))
    lines.extend(f"note: {n}" for n in d.notes)
    return lines


def sections(d, model_id: str) -> list[Section]:
    m, r = d.memory, d.result
    title = (f"{model_id} on {d.tp * d.replicas}× {d.hardware.display_name} with {d.engine.display_name} "
             f"(tp {d.tp}, {d.replicas} replica{'s' if d.replicas > 1 else ''})")
    mem = Section(f"Memory per GPU -- {title}", ["", "GiB", "note"], right=(1,))
    for what, b, note in m.breakdown():
        mem.add(what, fmt_gib(b), note)
    mem.add("fits", "yes" if m.fits else "NO", "" if m.fits else
            (f"fewest GPUs that hold it: {d.fewest_gpus}" if d.fewest_gpus else "no tp up to 64 holds it"))
    out = [mem]
    if r is not None:
        s = r.scenario
        mode = " arriving together" if s.arrival == "together" else " (closed loop, clients starting together)"
        lat = Section(f"{s.concurrency} request(s) of {s.input_len:,} in / {s.output_len:,} out{mode}",
                      ["", "expected", "ideal", "expected / ideal"], right=(1, 2, 3))

        def row(label, e, i, fmt=_ms):
            lat.add(label, fmt(e) if e is not None else "-", fmt(i) if i is not None else "-",
                    f"{e / i:.2f}×" if e and i else "-")

        row("time to first token (mean)", r.expected.ttft_s, r.ideal.ttft_s)
        row("time per output token (mean)", r.expected.tpot_s, r.ideal.tpot_s)
        row("end-to-end latency (mean)", r.expected.e2e_s, r.ideal.e2e_s)
        row("output tokens/s (all replicas)", r.expected.output_tokens_per_s, r.ideal.output_tokens_per_s,
            fmt=lambda x: f"{x:,.0f}")
        out.append(lat)
        ex = Section("Where the time goes beyond the roofline (seconds each factor adds)",
                     ["factor", "TTFT", "TPOT", "e2e"], right=(1, 2, 3))
        for k in r.explain["e2e_s"]:
            tp_ = r.explain["tpot_s"][k] if r.explain.get("tpot_s") else None
            ex.add(k, _ms(r.explain["ttft_s"][k]), _ms(tp_) if tp_ is not None else "-", _ms(r.explain["e2e_s"][k]))
        out.append(ex)
    return out
