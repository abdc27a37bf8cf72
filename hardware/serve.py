"""``serve``: one deployment scenario on a named engine -- memory, time to first token, time per output
token, end-to-end latency and throughput, expected beside ideal, with the gap explained by factor.

The step model (``StepModel``) is the one every command uses: it prices one engine step of any shape
(prefill pieces and decode sequences) on one rank of a tensor-parallel replica, as
``hardware.expected.step_cost`` of the sharded ``analysis.trace.step_ops``. ``simulate`` runs the
scenario the issue defines:

- ``concurrency`` requests of ``input_len`` prompt tokens arrive together on each replica (``--gpus N
  --tp T``: ``N/T`` replicas share the requests evenly);
- they run in waves of at most ``max_num_seqs`` sequences and of as many as the KV pool holds at
  ``input_len + output_len`` tokens each (vLLM would preempt instead; waves are the simple bound);
- a wave's prompts are prefilled first come first served in chunks of ``max_num_batched_tokens``
  tokens (chunked prefill; a step may hold the end of one prompt and the start of the next); a
  request's first token comes at the end of the step that completes its prompt;
- then ``output_len − 1`` decode steps of the whole wave, the context growing by one each step,
  summed step by step (the sum is taken over at most 16 equal segments at their middle context,
  exact for the linear parts of a step);
- TTFT and TPOT are means over requests: ``tpot = (e2e − ttft) / (output_len − 1)``;
- throughput is every output token of every replica over the time the last wave ends.

That is ``arrival="together"`` (a static batch, or an offline run that queues every request at once:
gptSessionBenchmark, trtllm-bench, vLLM's benchmark_latency). ``arrival="closed-loop"`` is ``concurrency``
clients that each send their next request when the last one finishes (vLLM's ``benchmark_serving
--max-concurrency``, genai-perf/AIPerf ``--concurrency``, LLMPerf ``--num-concurrent-requests``,
TensorRT-LLM's gptManagerBenchmark with a concurrency), simulated step by step as vLLM V1's scheduler
runs them (``run_steps``, the one scheduler loop; ``closed_loop_schedule``):

- every client sends its first request at once (as those benchmarks do: ``vllm bench serve`` creates one
  task per prompt at ``--request-rate inf`` and an ``asyncio.Semaphore(max_concurrency)`` lets
  ``max_concurrency`` of them send, the next one when one ends) and a finished request's client sends the
  next one for the next step, until ``requests`` have been sent (``--num-prompts``; default
  ``CLOSED_LOOP_ROUNDS`` per client): the start-up burst weighs in the means as it does in the run's;
- each step takes one token of every decoding request first, then the rest of the oldest partly
  prefilled prompt, then waiting prompts in arrival order while ``max_num_batched_tokens`` tokens and
  ``n = min(clients per replica, max_num_seqs, what the KV pool holds)`` running requests allow (a
  prompt larger than the budget left is cut: chunked prefill); clients beyond ``n`` wait in the queue
  (SGLang, whose profile sets ``scheduler.prefill_first``: a step that can take a prompt runs prompts alone,
  the decodes waiting for it; TensorRT-LLM with ``--batch-wait-iters``: new prompts wait while requests decode);
- each distinct step shape (decodes at their mean context, the prompt pieces) is priced once by the
  step model; TTFT and e2e are means over the requests of the steps inside each one's window;
  throughput is every output token over the time the run takes.

With fixed request lengths (a benchmark with ``--ignore-eos``) the clients stay in step with how they
started: prompts that arrived together are prefilled in the same steps and finish together, so the run
is neither one static batch nor the perfectly staggered steady state. Requests that stop at the model's
end-of-sequence token (``mean_output_len``: ``vllm bench serve`` without ``--ignore-eos`` sends
``max_tokens = output_len``) end at different steps, so their clients drift apart after the first
request: then each request stops with the same chance after every token, cut at ``output_len``
(``output_lengths``: geometric lengths with the run's mean, the requests that reach ``max_tokens`` all
ending there), and the run is simulated request by request (``_clocked``). So are requests whose
benchmark draws each one's lengths (``input_len_dist`` / ``output_len_dist``: a random dataset with a range
ratio, e.g. ``uniform:819:1024`` for 1,024 tokens at ratio 0.8 in ``benchmark_serving.py``'s older draw
``randint(L × ratio, L)``): request k takes evenly spread quantiles of each (``scenario_lengths``), and
clients whose requests end at different steps drift apart as the benchmark's do. Front-end jitter that
pulls real clients apart is not modelled (``bench/published.md``).

Both modes add the engine's per-request ``request overhead`` to TTFT and e2e once per request. Where the
client streams through the HTTP server (``server=True``, what a deployment's users see; ``False`` for
benchmarks that call the engine in-process), the front end is a serial intake (``intake_arrivals``):
one process takes ``server_overhead`` per request, one after another, before the request reaches the
scheduler (vLLM's API server tokenizes, builds the request and hands it to the engine core over ZMQ
in one asyncio process: vLLM PR #17546 added ``--api-server-count`` because that process limits
throughput; issue #580 measured the single server at half the GPU utilisation of the in-process
``LLM``). A burst of N requests then reaches the engine spread over N × ``server_overhead``, and
closed-loop clients drift apart; both are simulated on the clock (``_clocked``: the same loop,
``run_steps``, each step priced as it is built). One request through the server waits ``server_overhead``
once, as a constant would; with ``server_overhead`` 0 the step schedules above are used unchanged
(requests that stop at end-of-sequence are simulated the same way, without a front end).
"""

from __future__ import annotations

import math
from dataclasses import field, replace
from functools import lru_cache
from itertools import repeat
from typing import Mapping, NamedTuple

from planner.analysis.records import frozen

from .expected import (FACTORS, ZERO, Factors, StepCost, expert_inner, experts_format, for_model, for_weights, graphed,
                       prompt_attention_work, query_heads, step_cost)

DECODE_SEGMENTS = 16
ARRIVALS = ("together", "closed-loop")


def allreduce_link_of(hw, tp: int) -> tuple[float, float] | None:
    """``(bytes/s, seconds per call)`` of a tensor-parallel all-reduce over ``tp`` GPUs that do not fit one
    node (the profile's ``node.gpus_per_node``, or 8 GPUs of its ``interconnect`` without a node block): the
    network between nodes, whose per-step latency bounds each of the ring's ``2(tp − 1)`` steps and whose NICs,
    all of a node's together (``hardware.comm.ring_bytes_per_s``: NCCL's channels spread over them), carry its
    bytes, as ``hardware.comm.collective_s`` prices a planned layout's. None inside one node (the engine's
    fitted per-call latency on the device's interconnect). Refused where the profile describes no network."""
    from planner.analysis.errors import OptionError

    from .comm import links, ring_bytes_per_s

    lk = links(hw)
    if tp <= lk.gpus_per_node:
        return None
    nodes = -(-tp // lk.gpus_per_node)
    if not lk.inter_bytes_per_s:
        raise OptionError(f"tensor parallel {tp} spans {nodes} nodes of {lk.gpus_per_node} GPUs, and hardware profile "
                          f"'{hw.name}' describes no network between nodes",
                          f"use --tp {lk.gpus_per_node} or less (the other GPUs as replicas), or add "
                          "node.inter_node_bandwidth and node.inter_node_latency to the profile")
    return ring_bytes_per_s(lk, tp), 2 * (tp - 1) * lk.inter_latency_s


def prefill_graph_note(eng, f: Factors, spec, hw) -> str | None:
    """A note on how an engine with its own prompt-graph limits (SGLang's piecewise prefill graphs) runs this
    model's prompt steps on ``hw``: as graphs (up to how many tokens), or op by op and why; None for an engine
    without such limits (vLLM's prompt graphs follow its decode limit, shown nowhere else either)."""
    if eng.cuda_graph_prefill_max_tokens is None or not eng.cuda_graph_prefill:
        return None
    g = for_model(f, spec)
    name = eng.display_name
    if not f.cuda_graph_prefill:
        return (f"{name} runs prompt steps op by op on {hw.name} (its piecewise prompt graphs are CUDA-only; "
                f"each op pays the host's launches)")
    if not g.cuda_graph_prefill:
        return (f"{name} runs this model's prompt steps op by op (it captures no piecewise prompt graphs for "
                f"{'multimodal models' if getattr(spec, 'vision', ()) else spec.model_type}; each op pays the "
                f"host's launches)")
    cap = g.cuda_graph_prefill_max_tokens
    if cap is not None and cap < (1 << 30):
        return (f"{name} replays prompt steps of up to {cap:,} tokens as piecewise CUDA graphs (its default for "
                f"MLA models since v0.5.10); larger ones run op by op")
    return f"{name} replays prompt steps as piecewise CUDA graphs (its default since v0.5.10)"


class StepModel:
    """Prices engine steps of one model on one rank of a ``plan.tp``-GPU replica."""

    def __init__(self, a, hw, plan, factors: Factors, *, ops_cache: dict | None = None, detail: bool = True):
        from planner.analysis.parallel import allreduces_per_pass

        # the engine's prompt graphs as they apply to this model (hardware.expected.for_model: SGLang's MLA cap, the
        # models it captures none for)
        self.a, self.hw, self.plan, self.f = a, hw, plan, for_model(factors, a.spec)
        self.compute_key = a.fmt.compute.compute
        self.weight_only_bits = self.weight_only_bits_of(a, hw)
        # the engine's weight-only kernel rate for this checkpoint's method, where it prices one
        self.f = for_weights(self.f, a.fmt, self.weight_only_bits)
        # one after each sub-block (two per standard layer: parallel.allreduces_per_pass), the embedding, the logits
        self.allreduce_calls = allreduces_per_pass(a.spec) + 2 if plan.tp > 1 else 0
        moe = a.spec.first_moe
        self.moe_shape = (moe.num_experts, moe.num_experts_per_tok) if moe is not None else None
        self.expert_inner = expert_inner(a.spec, plan.tp)
        self.experts_format = experts_format(a.fmt)
        self.allreduce_link = allreduce_link_of(hw, plan.tp)
        # query heads on one rank, for the prompt attention kernel's tiles (hardware.expected.prefill_attention_ramp)
        self.query_heads = query_heads(a.spec, plan.tp)
        self._cache: dict = {}
        self._ops_cache = ops_cache if ops_cache is not None else {}  # shareable between factor sets
        self.detail = detail

    @staticmethod
    def weight_only_bits_of(a, hw) -> int | None:
        """The weight bits of a weight-only quantized model (int4/int8 weights, 16-bit compute), else None.

        MXFP4 weights (gpt-oss's experts) are weight-only only where the device has no FP4 tensor cores:
        Ampere and Hopper dequantize them in the GEMM's main loop (vLLM: Marlin on Ampere, Triton's
        ``matmul_ogs`` on Hopper; SGLang and TensorRT-LLM likewise), the path the engine profiles'
        ``weight_only_efficiency`` prices. Blackwell's tensor cores take the OCP MX block-scaled formats as
        they are stored (``tcgen05.mma`` kinds ``mxf4`` / ``mxf8f6f4``; NVIDIA Blackwell architecture
        technical brief), and the engines run gpt-oss there through FP4 MoE kernels that read the 4-bit
        weights at the full byte rate (vLLM's gpt-oss recipe: FlashInfer's TRT-LLM-gen MXFP4 MoE on
        Blackwell). A device has them where its profile gives an ``fp4`` peak.

        FP8 weights (an FP8 checkpoint, ``--dtype fp8``) on a device without FP8 tensor cores (Ampere: its
        profile gives no ``fp8`` peak) run as weight-only W8A16: "FP8 models will run on compute capability
        >= 7.5 (Turing) as weight-only W8A16, utilizing FP8 Marlin" (vLLM docs, features/quantization/fp8;
        vllm-project/vllm#5975, "Expand FP8 support to Ampere GPUs using FP8 Marlin"), so they take the 8-bit
        weight-only price, as NVFP4 / MXFP4 W4A4 takes the 4-bit one without FP4 tensor cores."""
        q = a.fmt.quant
        if (q is not None and (q.bits, a.fmt.compute.name) in ((4, "fp4"), (8, "fp8"))
                and a.fmt.compute.name not in hw.peak_flops_per_s):
            return q.bits  # W4A4 / W8A8 float without those tensor cores: the engines dequantize (Marlin W4A16 / W8A16)
        if q is None or q.bits > 8 or a.fmt.compute.name not in ("bf16", "fp16", "fp32"):
            return None
        if q.method == "mxfp4" and "fp4" in hw.peak_flops_per_s:
            return None
        return q.bits

    def _build(self, batch: int, new: int, cached: int) -> list:
        """The ops of a step of ``batch`` sequences, each ``new`` tokens on ``cached`` (identical layers collapsed:
        OpGroup, an op and its layer count), sharded by the plan."""
        from planner.analysis.parallel import shard_groups
        from planner.analysis.trace import step_groups

        a = self.a
        return shard_groups(step_groups(a.spec, a.fmt, a.kv.dtype, batch=batch, new_tokens=new, cached_tokens=cached,
                                        state_dtype=a.kv.state_dtype), self.plan)

    def _ops(self, batch: int, new: int, cached: int) -> list:
        key = (batch, new, cached)
        if key not in self._ops_cache:
            self._ops_cache[key] = self._build(batch, new, cached)
        return self._ops_cache[key]

    def _part(self, attention: bool, batch: int, new: int, cached: int) -> list:
        """The attention ops (``attention``) or all the others of a step of ``batch`` sequences, each ``new`` tokens on
        ``cached``, kept apart in ``ops_cache``: a prompt step takes its weights' ops once over all its tokens and each
        piece's attention alone, and a closed loop's steps bring thousands of distinct pieces, whose full ops would
        hold memory for ops never priced (a k-fold's workers grew to 9 GB). Taken from the step's full ops where
        those are kept already."""
        key = ("attention" if attention else "other", batch, new, cached)
        got = self._ops_cache.get(key)
        if got is None:
            # a piece of decode tokens: the shape of a decode step too, whose full ops are kept (``_ops``)
            full = self._ops(batch, new, cached) if new == 1 else self._ops_cache.get((batch, new, cached))
            if full is None:
                full = self._build(batch, new, cached)
            # one sequence's whole prompt: its step prices both parts (the weights' ops over its tokens, its attention)
            for part in ((True, False) if batch == 1 and cached == 0 else (attention,)):
                self._ops_cache[("attention" if part else "other", batch, new, cached)] = \
                    [g for g in full if (g.op.kind == "attention") == part]
            got = self._ops_cache[key]
        return got

    def _ideal(self, key: tuple, ops: list, decode: bool, rows: int) -> float:
        """The roofline time of a step's ops (``ops_time_s`` under ``IDEAL``), which no factor moves: kept beside
        the ops (``ops_cache``, shared between factor sets), keyed by the device and the step."""
        from .expected import IDEAL, ops_time_s

        k = ("ideal", self.hw.name, self.compute_key, key)
        if k not in self._ops_cache:
            self._ops_cache[k] = ops_time_s(ops, self.hw.peak_flops_for(self.compute_key),
                                            self.hw.memory_bandwidth_bytes_per_s, IDEAL, decode=decode, rows=rows,
                                            expert_rows=self._expert_rows(rows), expert_inner=self.expert_inner)
        return self._ops_cache[k]

    def _expert_rows(self, tokens: int) -> float | None:
        from .expected import expert_rows

        return expert_rows(tokens, *self.moe_shape) if self.moe_shape else None

    def _ar_bytes(self, tokens: int) -> int:
        from planner.analysis.parallel import allreduce_bytes_per_gpu

        return allreduce_bytes_per_gpu(self.a.spec, tokens, self.a.fmt.act.bits // 8, self.plan.tp)

    def decode(self, batch: int, context: int, *, kernels: int | None = None) -> StepCost:
        """One decode step of ``batch`` sequences that hold ``context`` tokens each. ``kernels``: the
        kernels the step launches where the caller counted them (``verify``), else the trace's."""
        key = ("d", batch, context, kernels)
        if key not in self._cache:
            ops = self._ops(batch, 1, context)
            self._cache[key] = step_cost(ops, self.hw, self.compute_key, self.f, decode=True, sequences=batch,
                                         ideal_ops_s=self._ideal(key[:3], ops, True, batch),
                                         allreduce_bytes=self._ar_bytes(batch), allreduce_calls=self.allreduce_calls,
                                         weight_only_bits=self.weight_only_bits, detail=self.detail, rows=batch,
                                         kernels=kernels, graph=graphed(self.f, tokens=batch, prefill=False),
                                         expert_rows=self._expert_rows(batch), expert_inner=self.expert_inner,
                                         experts_format=self.experts_format, allreduce_link=self.allreduce_link,
                                         held_tokens=batch * (context + 1))
        return self._cache[key]

    def prefill(self, pieces: Mapping[tuple[int, int], int]) -> StepCost:
        """One step of prompt pieces: ``{(new tokens, cached tokens): sequences}``. Weights, FFN and
        projections run once over all the step's tokens; attention per piece."""
        key = ("p", tuple(sorted(pieces.items())))
        if key in self._cache:
            return self._cache[key]
        tokens = sum(n * k for (n, _), k in pieces.items())
        seqs = sum(pieces.values())
        prompt = any(n > 1 for (n, _) in pieces) or all(c == 0 for (_, c) in pieces)
        ops = list(self._part(False, 1, tokens, 0))
        parts = [self._part(True, k, n, c) for (n, c), k in pieces.items()]
        for part in parts:
            ops.extend(part)
        work = prompt_attention_work(parts, self.query_heads, [(n, c, k) for (n, c), k in pieces.items()])
        cost = step_cost(ops, self.hw, self.compute_key, self.f, decode=False, sequences=seqs,
                         ideal_ops_s=self._ideal(key, ops, False, tokens),
                         allreduce_bytes=self._ar_bytes(tokens), allreduce_calls=self.allreduce_calls,
                         weight_only_bits=self.weight_only_bits, detail=self.detail, rows=tokens,
                         graph=graphed(self.f, tokens=tokens, prefill=prompt),
                         expert_rows=self._expert_rows(tokens), expert_inner=self.expert_inner,
                         experts_format=self.experts_format, allreduce_link=self.allreduce_link,
                         held_tokens=sum(k * (n + c) for (n, c), k in pieces.items()), attention_work=work)
        self._cache[key] = cost
        return cost

    def decode_run(self, batch: int, first_context: int, steps: int) -> StepCost:
        """Σ of ``steps`` decode steps at contexts first_context .. first_context + steps − 1."""
        if steps <= 0:
            return ZERO
        segs = min(steps, DECODE_SEGMENTS)
        total = ZERO
        start = 0
        for i in range(segs):
            end = steps * (i + 1) // segs
            n = end - start
            mid = first_context + (start + end - 1) // 2
            total = total + self.decode(batch, mid).scaled(n)
            start = end
        return total


@frozen
class Scenario:
    input_len: int
    output_len: int
    concurrency: int
    arrival: str = "together"  # ARRIVALS
    # closed loop: requests the clients send in all (``vllm bench serve --num-prompts``); None:
    # CLOSED_LOOP_ROUNDS per client
    requests: int | None = None
    # requests stop at end-of-sequence: their mean output tokens (None: every one runs to output_len)
    mean_output_len: float | None = None
    # each request's prompt / output length drawn from a distribution (``hardware.simulate.length_dist``:
    # "uniform:A:B", ...; ``scenario_lengths``) where the benchmark spreads them (a random dataset with a
    # range ratio); input_len / output_len are then their means. None: every request has input_len / output_len
    input_len_dist: str | None = None
    output_len_dist: str | None = None

    @property
    def spread(self) -> bool:
        """Whether requests differ in length (end-of-sequence stops or drawn lengths)."""
        return self.mean_output_len is not None or self.input_len_dist is not None or self.output_len_dist is not None

    def check(self) -> None:
        from planner.analysis.errors import OptionError, short

        if self.arrival not in ARRIVALS:
            raise OptionError(f"--arrival must be one of {', '.join(ARRIVALS)}, got {short(self.arrival, 60)}")
        if self.input_len < 1:
            raise OptionError(f"--input-len must be >= 1, got {self.input_len}")
        if self.output_len < 1:
            raise OptionError(f"--output-len must be >= 1, got {self.output_len}")
        if self.concurrency < 1:
            raise OptionError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.requests is not None and self.requests < 1:
            raise OptionError(f"--requests must be >= 1, got {self.requests}")
        m = self.mean_output_len
        if m is not None and not (isinstance(m, (int, float)) and 1 <= m <= self.output_len):
            raise OptionError(f"--mean-output-len must lie between 1 and --output-len = {self.output_len}, got {m}",
                              "it is the mean of output lengths cut at --output-len")
        from .simulate import length_dist

        if self.input_len_dist is not None:
            length_dist(self.input_len_dist, "--input-len-dist")
        if self.output_len_dist is not None:
            length_dist(self.output_len_dist, "--output-len-dist")
            if m is not None:
                raise OptionError("--mean-output-len and --output-len-dist both set the output lengths",
                                  "give one of them")


#: the golden ratio's fractional part: k × GOLDEN mod 1 spreads any run of consecutive k evenly over [0, 1)
GOLDEN = (5 ** 0.5 - 1) / 2


def eos_continue_probability(output_len: int, mean_output_len: float) -> float:
    """The probability ``r`` that a request goes on after each generated token when it stops at
    end-of-sequence with a constant chance ``1 − r`` per token and is cut at ``max_tokens = output_len``:
    its length ``L`` has ``P(L ≥ j) = r^(j−1)`` for ``j ≤ output_len``, so ``E[L] = (1 − r^output_len) / (1 −
    r)``, which rises from 1 (``r = 0``) to ``output_len`` (``r → 1``); ``r`` is found by bisection."""
    if mean_output_len <= 1:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        r = (lo + hi) / 2
        mean = (1 - r ** output_len) / (1 - r) if r < 1.0 else float(output_len)
        if mean < mean_output_len:
            lo = r
        else:
            hi = r
    return (lo + hi) / 2


def output_lengths(output_len: int, mean_output_len: float | None, n: int) -> list[int]:
    """Output tokens of requests 0 .. n − 1 (in send order): ``output_len`` each, or, for requests that stop
    at end-of-sequence with mean ``mean_output_len``, lengths of a geometric distribution cut at
    ``output_len`` (a constant end-of-sequence chance per token, ``eos_continue_probability``; the requests
    that reach ``output_len`` are those ``max_tokens`` cut): request k takes the quantile ``u_k = k × GOLDEN
    mod 1``, ``min(output_len, 1 + ⌊ln(1 − u_k) / ln r⌋)``, so consecutive requests differ and any run of
    them follows the distribution (deterministic)."""
    if mean_output_len is None or mean_output_len >= output_len:
        return [output_len] * n
    r = eos_continue_probability(output_len, mean_output_len)
    if r <= 0.0:
        return [1] * n
    if r >= 1.0:  # a mean within float resolution of the cap
        return [output_len] * n
    log_r = math.log(r)
    return [min(output_len, 1 + math.floor(math.log1p(-(k * GOLDEN % 1.0)) / log_r)) for k in range(n)]


@lru_cache(maxsize=16)
def scenario_lengths(scenario: Scenario, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Prompt and output tokens of the scenario's requests 0 .. n − 1 (in send order): drawn from its
    ``input_len_dist`` / ``output_len_dist`` (``hardware.simulate.length_quantiles``: evenly spread
    quantiles, two independent sequences), else ``input_len`` each and ``output_lengths`` (end-of-sequence
    stops). Cached: the admission check and the simulation of one run ask for the same lengths."""
    from .simulate import length_quantiles

    ins = (length_quantiles(scenario.input_len_dist, n, "input", "--input-len-dist")
           if scenario.input_len_dist is not None else [scenario.input_len] * n)
    outs = (length_quantiles(scenario.output_len_dist, n, "output", "--output-len-dist")
            if scenario.output_len_dist is not None else output_lengths(scenario.output_len, scenario.mean_output_len, n))
    return tuple(ins), tuple(outs)


@frozen
class Latency:
    ttft_s: float
    tpot_s: float | None
    e2e_s: float
    output_tokens_per_s: float

    def to_dict(self) -> dict:
        return {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "e2e_s": self.e2e_s,
                "output_tokens_per_s": self.output_tokens_per_s}


@frozen
class ServeResult:
    scenario: Scenario
    replicas: int
    per_replica: int  # requests each replica serves
    wave: int  # sequences running together
    waves: int
    prefill_steps: int
    expected: Latency
    ideal: Latency
    explain: Mapping[str, Mapping[str, float]] = field(hash=False)  # latency key -> factor -> seconds
    decode_step: StepCost | None = None  # the first decode step of a full wave
    notes: tuple[str, ...] = ()
    # the preemptions the step-by-step simulation made (run_steps' preempt); None where it did not simulate them
    preemptions: int | None = None


def _mean_cost(costs: list[StepCost]) -> StepCost:
    total = ZERO
    for c in costs:
        total = total + c
    return total.scaled(1 / len(costs))


def _request_cost(f: Factors) -> StepCost:
    """The engine's per-request cost (admission, input preparation, first sampling) as a StepCost (not in
    the ideal). The HTTP front end's is not a constant added here: it delays each request's arrival
    (``intake_arrivals``, ``_clocked``)."""
    s = f.request_overhead_s
    parts = {k: 0.0 for k in FACTORS}
    parts["request overhead"] = s
    return StepCost(0.0, s, parts, 0)


def _explain(ttft: StepCost, e2e: StepCost, O: float, tpot: StepCost | None = None) -> dict:
    """The seconds each factor adds to TTFT, TPOT and e2e; TPOT's from ``tpot`` where it is priced apart
    (requests of different lengths), else ``(e2e − ttft) / (O − 1)``."""
    return {
        "ttft_s": dict(ttft.parts),
        "tpot_s": dict(tpot.parts) if tpot is not None else
        ({k: (e2e.parts[k] - ttft.parts[k]) / (O - 1) for k in FACTORS} if O > 1 else None),
        "e2e_s": dict(e2e.parts),
    }


class StepRules(NamedTuple):
    """How an engine's scheduler builds a step beyond vLLM V1's rules (``run_steps``): ``prefill_first``, a step
    that can take a prompt runs prompts alone (SGLang; vLLM V0 without chunked prefill); ``whole_prompts``, a
    prompt is never cut at the budget (vLLM V0 without chunked prefill, whose budget holds the longest);
    ``batch_wait``, TensorRT-LLM's delayed batching ``(iterations, tokens)`` (``batch_wait_of``); ``lookahead``,
    vLLM's asynchronous scheduling, whose engine schedules the next step while the device runs this one (a request
    that arrives while requests run joins the step after next: ``run_steps``); ``held_output``, the share of a
    running request's output tokens that the KV pool counts when it sizes the batch (``held_output_of``: 1 where
    the engine reserves the whole sequence at admission, 0.5 where it allocates blocks as tokens come, as vLLM does;
    the default, 1, is not vLLM's: the callers that price an engine pass its own); ``preempt``, the engine allocates
    blocks as tokens come and preempts the newest request when none is left (``kv_admission: on_demand``): the
    step-by-step paths then admit a prompt where the pool holds it and simulate the preemptions (``run_steps``),
    and ``held_output`` sizes only the static batches; ``prefix_cache``, a preempted request's recompute reads back
    the prefix blocks still cached (vLLM V1's automatic prefix caching, ``run_steps``); ``recv_interval``, SGLang's
    ``--scheduler-recv-interval`` (``run_steps``: while requests decode, arrivals wait for up to that many decode
    steps; 1, every step)."""

    prefill_first: bool = False
    whole_prompts: bool = False
    batch_wait: tuple[int, float] | None = None
    lookahead: bool = False
    held_output: float = 1.0
    preempt: bool = False
    prefix_cache: bool = False
    recv_interval: int = 1

    @classmethod
    def of(cls, engine, **rules) -> "StepRules":
        """The rules with the engine profile's KV admission (``held_output``, ``preempt``, ``prefix_cache``) beside
        ``rules``: what ``serve`` and ``bench/published.py`` both price an engine with."""
        return cls(held_output=held_output_of(engine), preempt=not engine.reserves_whole,
                   prefix_cache=engine.prefix_caching, **rules)


def pool_tokens(mem) -> tuple[int, int] | None:
    """The KV pool as ``run_steps``' ``preempt`` counts it: ``(tokens it holds, tokens each running request adds
    beside its own)``, the second its part-filled last block on average (``(block_size − 1) / 2``) and a hybrid
    model's recurrent state in tokens. None where the pool is not counted in tokens (a recurrent-only model:
    the batch is then its count of states)."""
    if not mem.kv_bytes_per_token:
        return None
    return (max(mem.kv_pool_bytes, 0) // mem.kv_bytes_per_token,
            -(-mem.state_bytes_per_sequence // mem.kv_bytes_per_token) + (mem.block_size - 1) // 2)


def preemption_note(stats: dict, per_replica: int, who: str) -> list[str]:
    """What the simulated preemptions did (``run_steps``' ``stats``), where the pool held back or preempted."""
    if not stats.get("preempted") and stats.get("peak", per_replica) >= per_replica:
        return []
    out = (f"the KV pool held at most {stats['peak']:,} of {per_replica:,} {who} per replica at once: the engine "
           f"admits a request once its prompt fits and allocates blocks as tokens come")
    if stats.get("preempted"):
        out += (f"; {stats['preempted']:,} preemption(s) when the pool filled, each request recomputed from its "
                f"prompt and the tokens it had made")
    return [out]


def held_output_of(engine) -> float:
    """``StepRules.held_output`` for an engine profile's ``scheduler.kv_admission``: ``whole`` (the request's whole
    sequence is reserved when it is admitted: TensorRT-LLM's GUARANTEED_NO_EVICT) 1; ``on_demand`` (vLLM's
    ``kv_cache_manager.allocate_slots`` gives a request blocks as its tokens come and the scheduler preempts the
    newest request when none is left) 0.5: over its life a running request holds its prompt and, on average, half
    its output, and a static batch (``simulate``'s waves) is sized by that mean. The step-by-step paths (closed
    loop, the front end, request rates) simulate the preemptions instead where ``pool_tokens`` counts the pool
    (``StepRules.preempt``, ``run_steps``); ``hardware.simulate``, which ``plan`` runs, does too."""
    return 1.0 if engine.reserves_whole else 0.5


def held_tokens(prompt: int, output: int, held_output: float) -> int:
    """The KV tokens a running request of ``prompt`` + ``output`` tokens is counted at when a batch is sized: its
    prompt and ``held_output`` of its output (``StepRules.held_output``; 1: the whole sequence)."""
    return prompt + math.ceil(held_output * output)


def simulate(model: StepModel, mem, scenario: Scenario, *, replicas: int = 1, server: bool = True,
             scheduler_steps: int = 1, rules: StepRules = StepRules()) -> ServeResult:
    """The scenario of the module docstring on ``model`` with the engine memory ``mem`` (``EngineMemory``).
    ``scheduler_steps``: vLLM V0's ``--num-scheduler-steps`` (``run_steps``); above 1 every arrival mode is
    simulated step by step on the clock. ``rules``: the engine's own step rules (``StepRules``), for the
    step-by-step paths."""
    scenario.check()
    intake = model.f.server_overhead_s if server else 0.0
    if intake > 0 or scheduler_steps > 1 or scenario.spread:
        return _clocked(model, mem, scenario, replicas=replicas, intake_s=intake, scheduler_steps=scheduler_steps,
                        rules=rules)
    if scenario.arrival == "closed-loop":
        return _closed_loop(model, mem, scenario, replicas=replicas, server=server, rules=rules)
    if rules.batch_wait is not None:  # a static batch larger than a step: its later prompts wait behind decodes
        return _clocked(model, mem, scenario, replicas=replicas, intake_s=0.0, rules=rules)
    I, O, C = scenario.input_len, scenario.output_len, scenario.concurrency
    per_replica, wave, notes = _replica_admission(mem, scenario, replicas, closed=False, wait_note=False,
                                                  held_output=rules.held_output)
    waves = -(-per_replica // wave)
    if waves > 1:
        why = "max_num_seqs" if wave == mem.max_num_seqs else "the KV pool"
        notes.append(f"{per_replica} requests run in {waves} waves of at most {wave} ({why} limits them)")
    chunk = mem.max_num_batched_tokens
    # run_wave prices one full wave and the rest (identical waves priced once), not every request
    check_simulated_steps(scenario, min(per_replica, wave + per_replica % wave), wave, chunk, decodes=False,
                          sent=per_replica)

    def run_wave(n: int) -> tuple[StepCost, StepCost, StepCost | None, int]:
        """(Σ of the wave's requests' TTFT, the wave's length, its first decode step, prefill steps)."""
        remaining = [I] * n
        done = [0] * n
        t = ZERO
        ttft_sum = ZERO
        steps = 0
        r = 0
        while r < n:
            budget = chunk
            pieces: dict[tuple[int, int], int] = {}
            completed = 0
            j = r
            while budget > 0 and j < n:
                take = min(remaining[j], budget)
                pieces[(take, done[j])] = pieces.get((take, done[j]), 0) + 1
                remaining[j] -= take
                done[j] += take
                budget -= take
                if remaining[j] == 0:
                    completed += 1
                    j += 1
                else:
                    break
            t = t + model.prefill(pieces)
            steps += 1
            if completed:
                ttft_sum = ttft_sum + t.scaled(completed)
            while r < n and remaining[r] == 0:
                r += 1
        first = model.decode(n, I) if O > 1 else None
        return ttft_sum, t + model.decode_run(n, I, O - 1), first, steps

    # identical full waves are priced once; wave k starts when wave k-1 ends
    full, rest = divmod(per_replica, wave)
    ttft_a, len_a, decode_first, steps_a = run_wave(wave)
    ttft_total = ttft_a.scaled(full) + len_a.scaled(wave * full * (full - 1) / 2)
    e2e_total = len_a.scaled(wave * full * (full + 1) / 2)
    makespan = len_a.scaled(full)
    prefill_steps = steps_a * full
    if rest:
        ttft_b, len_b, _, steps_b = run_wave(rest)
        ttft_total = ttft_total + ttft_b + makespan.scaled(rest)
        e2e_total = e2e_total + (makespan + len_b).scaled(rest)
        makespan = makespan + len_b
        prefill_steps += steps_b
    ttft = ttft_total.scaled(1 / per_replica)
    e2e = e2e_total.scaled(1 / per_replica)
    ttft, e2e = ttft + _request_cost(model.f), e2e + _request_cost(model.f)
    total_tokens = C * O

    def lat(pick) -> Latency:
        tt, ee, ms = pick(ttft), pick(e2e), pick(makespan)
        return Latency(tt, (ee - tt) / (O - 1) if O > 1 else None, ee, total_tokens / ms if ms else 0.0)

    expected = lat(lambda c: c.expected_s)
    ideal = lat(lambda c: c.ideal_s)
    return ServeResult(scenario, replicas, per_replica, wave, waves, prefill_steps, expected, ideal,
                       _explain(ttft, e2e, O), decode_first, tuple(notes))


# ---- the one scheduler loop ----------------------------------------------------------------------


class Finished(NamedTuple):
    """A group of requests that finished together in ``run_steps``."""

    start_step: int  # the first step it could join (the first to start after it arrived)
    first_step: int  # the step that made its first token
    end_step: int  # the step that made (or, multi-step, delivered) its last token
    count: int
    send_s: float
    first_s: float  # when its first token came
    end_s: float
    input_len: int
    output_len: int


def run_steps(sends, budget: int, slots: int, *, price, intake_s: float = 0.0, ctx_step: int = 1,
              resend=None, scheduler_steps: int = 1, kv_tokens: int | None = None, kv_held_output: float = 1.0,
              step_ends: list | None = None, batch_wait: tuple[int, float] | None = None,
              prefill_first: bool = False, whole_prompts: bool = False,
              lookahead: bool = False, preempt: bool = False, kv_seq_tokens: int = 0,
              prefix_cache: bool = False, recv_interval: int = 1,
              stats: dict | None = None, stretch: bool = True) -> tuple[list, list]:
    """The steps one engine replica runs, as vLLM's scheduler builds them, on the clock: the one scheduler
    loop of ``planner serve``.

    ``sends``: the requests sent at the start, ``[(send time, count, input_len, output_len)]`` in send order.
    They reach the scheduler through the front end (``intake_arrivals``, ``intake_s`` per request; 0: at
    their send time, a group of requests sent together arriving as one). Each step (vLLM V1), within
    ``budget`` tokens (``max_num_batched_tokens``), takes:

    1. one token of every decoding request (their context: the mean over them, rounded to ``ctx_step``);
    2. the rest of the one prompt cut at the end of the last step (chunked prefill), as far as the budget goes;
    3. prompts that have arrived, first come first served, while fewer than ``slots`` requests run (and,
       with ``kv_tokens``, while the pool can hold every running request's prompt and ``kv_held_output`` of its
       output: 1, its whole sequence; ``StepRules.held_output``); the last
       one taken is cut where the budget ends.

    ``scheduler_steps`` N > 1 is vLLM V0's multi-step scheduling (``--num-scheduler-steps``, v0.6.0; PR
    #7000, removed with V0). The scheduler runs once per round, and a round is either one step of
    prompts alone or N decode steps. V0.6.0 refuses chunked prefill with multi-step (``ValueError: Chunked
    prefill is not supported with multi-step``, vLLM issue #8274), and V0's default scheduler then runs
    waiting prompts first, in a step without decodes (``_schedule_default``: decodes only when no prefill
    was scheduled). A prefill is a single step (``init_multi_step_from_lookahead_slots``: no lookahead
    slots for a prompt without chunking, so ``num_steps`` 1). Prompts are whole: V0 without chunked
    prefill needs ``max_num_batched_tokens`` ≥ ``max_model_len``, and a prompt longer than ``budget`` is
    taken alone. The N decode steps run the same batch: a request that makes its last token inside a
    round keeps its place until the round ends, and its tokens are handed out when the round ends
    (``llm_engine.step`` processes outputs only when no step of the round remains). So a request that
    arrives during a round waits for its end, and tokens stream in chunks of up to N.

    ``prefill_first``: SGLang's scheduling (``Scheduler.get_next_batch_to_run``: "Run prefill first if possible";
    a prefill batch takes no decode unless ``--enable-mixed-chunk``, off by default): a step that can take a
    prompt (or goes on with a cut one) runs prompts alone, within the whole budget, and the decoding requests
    wait for it; a step with none to take is a decode step. ``whole_prompts``: no prompt is cut at the budget
    (vLLM V0 without chunked prefill, ``_schedule_prefills(enable_chunking=False)``); one longer than the whole
    budget runs alone.

    ``batch_wait`` ``(N, T)``: TensorRT-LLM's delayed batching (``batch_wait_timeout_iters`` N,
    ``batch_wait_max_tokens_ratio`` × ``max_num_tokens`` = T; PyExecutor._schedule and _waiting_requests).
    Where requests are decoding and prompts have arrived, a step takes no new prompt while the tokens it would
    run (the prompts it would take, whole, and one per decoding request) stay below T and fewer than N steps
    have waited so; the step that takes them resets the count. Without decoding requests nothing waits.

    ``preempt`` (with ``kv_tokens``): vLLM's blocks on demand with recompute preemption (``kv_held_output`` is
    then unused). A prompt is admitted where the pool holds it (V1 ``Scheduler.schedule``:
    ``kv_cache_manager.allocate_slots`` for the tokens it computes, nothing reserved for its output; running
    requests are served first, so the step's decode tokens come off the pool before new prompts), and a running
    request holds its prompt and the tokens it has made so far, plus ``kv_seq_tokens`` (its part-filled last
    block, a hybrid model's state, in tokens). Where a decode step's tokens do not fit, the newest running
    requests are preempted (``self.running.pop()`` while ``allocate_slots`` fails: the cut prompt first, then the
    requests whose first token came last) until they do: their KV is freed, they go back to the front of the
    waiting queue, and that step admits no new request (``if not preempted_reqs``). A preempted request is
    recomputed as a prompt of its prompt and the tokens it had made (``PreemptionMode.RECOMPUTE``); that prefill
    makes its next token, and its first token and lengths stay those it was sent with. Multi-step: the check is
    made for a whole round. ``prefix_cache`` (vLLM V1's automatic prefix caching, on by default): a preempted
    request's freed blocks keep their hashes until they are handed out again, and the recompute reads back those
    still there. The free blocks are a queue: freed blocks join its tail, a request's in reverse order
    (``BlockPool.free_blocks``: its last block first), and new ones come off its head; so the prefix of a
    preempted request is what survives longest, and the tokens the pool has handed out since it was freed say how
    much of it is left (``cached`` tokens: the recompute's piece is ``(prompt − cached, cached)``, rounded down to
    ``ctx_step``). ``stats``: a dict that receives ``peak``, the most requests running at once, and ``preempted``,
    how many preemptions.

    ``lookahead``: vLLM's asynchronous scheduling, which keeps two batches in flight (``max_concurrent_batches``
    2; ``EngineCore.step_with_batch_queue`` schedules step n + 1 as step n starts). While requests run, a step
    takes only the requests that had arrived when the step before it started: one that arrives during step n
    joins step n + 2. An idle engine takes a request at once.

    ``recv_interval`` N > 1: SGLang's ``--scheduler-recv-interval`` (``SchedulerRecvSkipper``,
    python/sglang/srt/managers/scheduler_recv_skipper.py). The scheduler takes the requests that have arrived
    off its socket only when a count reaches N: each step adds its weight to the count, a decode step 1 and
    any other (a prefill) 1000, and a receive sets it back to 0. So after a prefill step the next step sees
    every arrival, and while requests decode an arrival waits for up to N decode steps. An idle engine's loop
    (weight 1 a turn) spins in microseconds: it takes a request at once.

    ``price(pieces)`` gives the step's seconds (``pieces``: ``{(new tokens, cached tokens): sequences}``
    in the order above); the clock moves by it. A request's first token comes at the end of the step that
    completes its prompt; it finishes at the end of the step that makes its ``output_len``-th token (the
    first came with the prompt; multi-step: at the end of that round). When nothing runs and nothing has
    arrived, the engine idles until the next arrival. ``resend(time, finished)``: the ``[(count,
    input_len, output_len)]`` sent when ``finished`` requests end at ``time`` (closed-loop clients); None:
    nothing more is sent. ``step_ends``: a list to which each step appends ``(end time, whether it handed
    out the decoding requests' tokens)`` (every decode step; multi-step: the last of a round).

    ``stretch``: decode stretches on a short path (the same steps, clock and counts, several times faster: most of
    a run's steps are decode steps in which nothing else happens); False: every step through the general path,
    the reference that the tests compare the short path with.

    Returns ``(steps, finished)``: ``steps`` the pieces of each step in order, ``finished`` one ``Finished``
    per group of requests that finished together, in finish order."""
    import bisect
    import heapq
    from collections import deque

    from planner.analysis.errors import OptionError

    pending: deque = deque()  # [arrival time, count, I, O, send time], in arrival order
    free = 0.0

    def send(t_send: float, n: int, I: int, O: int) -> None:
        nonlocal free
        if intake_s > 0:  # one after another through the front end
            arrivals, free = intake_arrivals([t_send] * n, intake_s, free)
            pending.extend([a, 1, I, O, t_send] for a in arrivals)
        else:
            pending.append([t_send, n, I, O, t_send])

    for t_send, n, I, O in sends:
        send(t_send, n, I, O)
    multi = scheduler_steps > 1
    waiting: deque = deque()  # [tag, count]: arrived, not yet started
    groups: dict = {}  # tag -> (start step, I, O, send time)
    partial = None  # (tag, prompt tokens done) of the one prompt cut at the end of a step
    # (tag, first-token step) -> [count, decode steps run by the end of the step that made its first token]: a
    # request has made 1 + (decode steps run) − that tokens; the sums over them are kept as they change
    decoding: dict = {}
    n_dec = 0  # requests decoding
    ctx_sum = 0  # Σ count × (I + tokens made − 1) over them: their contexts
    decode_steps = 0  # decode steps run
    due: list = []  # heap of (decode steps after which the entry has made its O-th token, insertion order, key)
    inserted = 0
    first_t: dict = {}  # (tag, first-token step) -> time of the first token
    running = 0
    kv_held = 0  # tokens the running requests hold in the pool (with kv_tokens): prompt + held share of the output

    def held(I: int, O: int) -> int:
        return held_tokens(I, O, kv_held_output)

    # preempt: the tokens the running requests hold now (prompt, tokens made, kv_seq_tokens each); the groups
    # preempted and recomputed, tag -> (first-token step, its time, prompt and output as sent)
    on_demand = preempt and kv_tokens is not None
    held_now = 0
    resumed: dict = {}
    preempted = peak = 0
    # prefix_cache: positions in the free-block queue, in tokens (handed out from its head, freed onto its tail;
    # at the start the whole pool is free), and where each recomputed group's prefix ends in it (their mean)
    alloc_pos, free_pos = 0, kv_tokens or 0
    prefix_end: dict = {}

    def cached_of(tag: int) -> int:
        """The tokens of group ``tag``'s prompt still in the prefix cache (0 unless it is a recompute)."""
        end = prefix_end.get(tag)
        if end is None:
            return 0
        c = min(max(int(end - alloc_pos), 0), groups[tag][1] - 1)  # (the last token is always computed)
        return c - c % ctx_step

    def preempt_for(need: int, per_decode: int) -> None:
        """Preempt the newest running requests until ``need`` pool tokens are free (each decoding one preempted
        also frees its ``per_decode`` tokens of this step): the cut prompt, then the decoding groups whose first
        token came last; each goes back to the front of the waiting queue."""
        nonlocal running, held_now, n_dec, ctx_sum, partial, preempted, free_pos
        if partial is not None:
            tag = partial[0]
            size = groups[tag][1] + kv_seq_tokens
            held_now -= size
            free_pos += size
            need -= size
            running -= 1
            preempted += 1
            partial = None
            waiting.appendleft([tag, 1])  # its prompt starts again
        while need > 0 and decoding:
            key = next(reversed(decoding))
            tag, f = key
            entry = decoding[key]
            start, I, O, t_send = groups[tag]
            made = 1 + decode_steps - entry[1]  # tokens made: the first and one per decode step since
            ctx = I + made - 1  # in the pool: the prompt and every token made but the last
            # the oldest running request always keeps its place, so the run goes on (a request alone fits the pool)
            k = min(entry[0] - (len(decoding) == 1), -(-need // (ctx + kv_seq_tokens + per_decode)))
            if k <= 0:
                break
            need -= k * (ctx + kv_seq_tokens + per_decode)
            entry[0] -= k
            n_dec -= k
            ctx_sum -= k * ctx
            running -= k
            held_now -= k * (ctx + kv_seq_tokens)
            preempted += k
            new = len(groups)
            if prefix_cache:  # the k freed one after another onto the tail, each with its prefix last
                prefix_end[new] = free_pos + (k + 1) / 2 * (ctx + kv_seq_tokens)
            free_pos += k * (ctx + kv_seq_tokens)
            groups[new] = (start, I + made, O - made, t_send)  # recomputed: the prompt and what it had made
            resumed[new] = resumed.get(tag) or (f, first_t[key], I, O)
            if not entry[0]:
                del decoding[key]  # (its entry in ``due`` is skipped when it comes up)
                first_t.pop(key)
            waiting.appendleft([new, k])
    dec_room = 0  # preempt: the pool this step's decode tokens take before new prompts (set each step)

    def fits_now(I: int, O: int) -> int:
        """How many requests of I + O the KV pool admits now."""
        if kv_tokens is None:
            return 1 << 62
        if on_demand:
            return max(kv_tokens - held_now - dec_room, 0) // (I + kv_seq_tokens)
        return (kv_tokens - kv_held) // held(I, O)
    round_left = 0  # multi-step: decode steps left in the round in flight
    waited = 0  # batch_wait: steps that have held back new prompts since the last that took them
    if batch_wait is not None and multi:
        raise ValueError("batch_wait is TensorRT-LLM's and multi-step scheduling vLLM V0's: not both")
    if recv_interval > 1 and (multi or lookahead):
        raise ValueError("recv_interval is SGLang's; multi-step and asynchronous scheduling vLLM's: not both")
    recv_count = recv_interval  # SGLang's count starts at the threshold (the first turn receives)
    step_starts: list = []  # recv_interval: when each step started
    last_prefill = True  # the last step's kind for the count: a prefill (or none yet) fills it, a decode adds 1
    steps: list = []
    marks: list = []
    t = 0.0
    s = 0
    prev_start = None  # lookahead: when the step before this one started (None: the engine was idle)
    # decode stretches run on a short path: one scheduler turn at a time, without multi-step rounds or the receive
    # count, where nothing waits and no prompt is cut, so that each step only takes every decoding request's token
    stretch = stretch and not multi and recv_interval == 1
    again = getattr(price, "again", None)  # (StepPricer: the step just priced, once more)
    while pending or waiting or running:
        if stretch and decoding and not waiting and partial is None:
            # The steps the loop below would build while no request arrives (``limit`` as below), no request
            # finishes (``due``) and the pool holds the step's tokens (``preempt_for`` would not run): one
            # decode piece each, the same sums moved the same way, in the same order (so the clock is the same
            # float). A step that is the one before it again is priced as that one. (Nothing is admitted here, so
            # ``peak`` stands; the receive count that ``last_prefill`` feeds is off: recv_interval 1.)
            last = None
            while not (pending and pending[0][0] <= (prev_start if lookahead and prev_start is not None else t)
                       or due[0][0] <= decode_steps + 1 or on_demand and held_now + n_dec > kv_tokens):
                key = (1, max(1, round(ctx_sum / n_dec / ctx_step) * ctx_step))
                prev_start = t
                if key == last and again is not None:
                    t += again()
                else:
                    pieces = {key: n_dec}
                    last = key
                    t += price(pieces)
                steps.append(pieces)
                if step_ends is not None:
                    step_ends.append((t, True))
                decode_steps += 1
                ctx_sum += n_dec
                held_now += n_dec
                alloc_pos += n_dec
                s += 1
        idle = not (waiting or running)
        if idle and pending[0][0] > t:
            t = pending[0][0]  # the engine idles until the next request arrives
        # recv_interval: while the engine works, arrivals are taken off the socket only when the count is full
        recv_count = recv_interval if idle else recv_count + (recv_interval if last_prefill else 1)
        receive = recv_count >= recv_interval
        if receive:
            recv_count = 0
        # lookahead (asynchronous scheduling): while requests run, this step was scheduled when the one before it
        # started, so it takes only the requests that had arrived by then
        limit = prev_start if lookahead and running and prev_start is not None else t
        while receive and pending and pending[0][0] <= limit:
            arrived, n, I, O, t_send = pending.popleft()
            tag = len(groups)
            # recv_interval: the request could have joined the first step that started after it arrived (its wait
            # for the receive is decode steps, not the front end)
            groups[tag] = (bisect.bisect_left(step_starts, arrived) if recv_interval > 1 else s, I, O, t_send)
            waiting.append([tag, n])
        b = budget
        pieces: dict = {}
        completed: list = []  # (tag, count) whose prompt completes this step
        # preempt: the decode tokens of this step come off the pool before new prompts (where it may decode)
        dec_room = n_dec if decoding and not multi and not prefill_first else 0
        head_fits = bool(waiting) and running < slots and fits_now(*groups[waiting[0][0]][1:3]) > 0
        if multi:  # multi-step: a round of prompts alone
            alone = not round_left and head_fits
        else:  # prefill first: prompts alone whenever one can start or a cut one goes on
            alone = prefill_first and (head_fits or partial is not None)
        decoded = not alone and bool(decoding)
        cut_back = False  # preempt: this step preempted, so it admits no new request
        if on_demand and decoded and not round_left:
            per = scheduler_steps if multi else 1  # the tokens each decoding request adds (multi-step: a round's)
            if held_now + n_dec * per > kv_tokens:
                preempt_for(held_now + n_dec * per - kv_tokens, per)
                cut_back = True
                decoded = bool(decoding)
        if decoded:
            if multi and not round_left:
                round_left = scheduler_steps
            key = (1, max(1, round(ctx_sum / n_dec / ctx_step) * ctx_step))
            pieces[key] = n_dec
            b -= n_dec
        if partial is not None and b > 0:  # (only without multi-step: there prompts are whole)
            tag, done = partial
            I = groups[tag][1]
            take = min(I - done, b)
            pieces[(take, done)] = pieces.get((take, done), 0) + 1
            b -= take
            partial = None if done + take == I else (tag, done + take)
            if partial is None:
                completed.append((tag, 1))
        hold = False
        if batch_wait is not None and waiting and n_dec and partial is None and running < slots:
            # the tokens of the prompts this step would take (whole), and one per decoding request
            take_tokens, free = 0, slots - running
            for tag, n in waiting:
                k = min(n, free)
                take_tokens += k * groups[tag][1]
                free -= k
                if take_tokens >= b or free <= 0:
                    break
            hold = waited < batch_wait[0] and min(take_tokens, b) + n_dec < batch_wait[1]
            waited = waited + 1 if hold else 0
        while (not hold and not cut_back and (alone or not multi) and b > 0 and waiting and running < slots
               and partial is None):
            tag, n = waiting[0]
            I, O = groups[tag][1:3]
            c = cached_of(tag) if prefix_end else 0  # a recompute's prefix still cached: not computed again
            new = I - c
            # (multi-step: the first prompt of the step is taken even where it is longer than the budget)
            full = min(n, max(b // new, 1) if (multi or whole_prompts) and alone and not pieces else b // new,
                       slots - running)
            fits = min(n, fits_now(I, O))
            full = min(full, fits)
            if full:
                pieces[(new, c)] = pieces.get((new, c), 0) + full
                b -= full * new
                running += full
                kv_held += full * held(I, O) if kv_tokens is not None else 0
                held_now += full * (I + kv_seq_tokens)
                alloc_pos += full * (new + kv_seq_tokens)
                completed.append((tag, full))
                n -= full
            if not multi and not whole_prompts and n and b > 0 and running < slots and fits > full:  # cut
                pieces[(b, c)] = pieces.get((b, c), 0) + 1
                partial = (tag, c + b)
                running += 1
                kv_held += held(I, O) if kv_tokens is not None else 0
                held_now += I + kv_seq_tokens
                alloc_pos += new + kv_seq_tokens
                n -= 1
                b = 0
            if n:
                waiting[0][1] = n
                break
            waiting.popleft()
        peak = max(peak, running)
        if not pieces and cut_back:  # every running request was preempted: the next step takes them back
            continue
        if not pieces:  # nothing to run: wait for the next arrival
            if not pending:
                raise OptionError("the step-by-step simulation cannot make progress: a request does not fit "
                                  "the KV pool", "use more GPUs or shorter requests")
            t = max(t, pending[0][0])
            prev_start = None
            continue
        steps.append(pieces)
        prev_start = t
        if recv_interval > 1:
            step_starts.append(t)
        last_prefill = not decoded or len(pieces) > 1  # a decode step's one piece is its decoding requests
        t += price(pieces)
        if round_left:
            round_left -= 1
        if step_ends is not None:
            step_ends.append((t, decoded and not round_left))
        if decoded:  # every decoding request made a token
            decode_steps += 1
            ctx_sum += n_dec
            held_now += n_dec
            alloc_pos += n_dec
        for tag, n in completed:  # (the cut prompt and whole ones of one group may complete together)
            entry = decoding.get((tag, s))
            if entry is None:
                entry = decoding[(tag, s)] = [0, decode_steps]
                heapq.heappush(due, (decode_steps + groups[tag][2] - 1, inserted, (tag, s)))
                inserted += 1
            entry[0] += n
            n_dec += n
            ctx_sum += n * groups[tag][1]  # its first token: context I
            first_t[(tag, s)] = t
        finished = 0
        if not round_left and due and due[0][0] <= decode_steps:  # (multi-step: a round's tokens are
            done = []  # handed out when it ends) the requests that made their O-th token, in insertion order
            while due and due[0][0] <= decode_steps:
                done.append(heapq.heappop(due))
            for _, _, (tag, f) in sorted(done, key=lambda d: d[1]):
                if (tag, f) not in decoding:  # preempted, every one of them
                    continue
                n, d0 = decoding.pop((tag, f))
                start, I, O, t_send = groups[tag]
                first_s = first_t.pop((tag, f))
                n_dec -= n
                ctx_sum -= n * (I + decode_steps - d0)  # I + tokens made − 1
                if on_demand:
                    held_now -= n * (I + decode_steps - d0 + kv_seq_tokens)
                    free_pos += n * (I + decode_steps - d0 + kv_seq_tokens)
                running -= n
                kv_held -= n * held(I, O) if kv_tokens is not None else 0
                finished += n
                if tag in resumed:  # recomputed after a preemption: its first token and lengths as sent
                    f, first_s, I, O = resumed[tag]
                marks.append(Finished(start, f, s, n, t_send, first_s, t, I, O))
        if finished and resend is not None:
            for n, I, O in resend(t, finished):
                send(t, n, I, O)
        s += 1
    if stats is not None:
        stats.update(peak=peak, preempted=preempted)
    return steps, marks


#: requests each closed-loop client sends in the simulated run where the scenario does not say how many
#: (``vllm bench serve`` runs num_prompts, often a few to a few tens per client; the run includes its start,
#: when every client sends at once)
CLOSED_LOOP_ROUNDS = 8


def closed_loop_requests(scenario: Scenario, per_replica: int, replicas: int) -> int:
    """Requests one replica serves in a closed-loop run: the scenario's ``requests`` shared evenly over the
    replicas (rounded up), else ``CLOSED_LOOP_ROUNDS`` per client. Refused beyond what the default allows
    the most clients (``STEP_SIM_MAX_PER_REPLICA × CLOSED_LOOP_ROUNDS`` per replica)."""
    if scenario.requests is None:
        return per_replica * CLOSED_LOOP_ROUNDS
    n = -(-scenario.requests // replicas)
    most = STEP_SIM_MAX_PER_REPLICA * CLOSED_LOOP_ROUNDS
    if n > most:
        from planner.analysis.errors import OptionError

        raise OptionError(f"--requests {scenario.requests:,} puts {n:,} on each of {replicas} replica(s); the "
                          f"step-by-step simulation takes at most {most:,} per replica", "lower --requests")
    return n


def window_counts(marks, steps: int) -> tuple[list[int], list[int]]:
    """For each of ``steps`` steps of ``run_steps``, how many requests have it inside their TTFT window (from
    the step they could join to the one that made their first token) and inside their e2e window (to the
    one that made their last): ``marks`` are its ``Finished`` groups (a difference array over the steps)."""
    dt, de = [0] * (steps + 1), [0] * (steps + 1)
    for m in marks:
        dt[m.start_step] += m.count
        dt[m.first_step + 1] -= m.count
        de[m.start_step] += m.count
        de[m.end_step + 1] -= m.count
    ct, ce = [0] * steps, [0] * steps
    acc_t = acc_e = 0
    for j in range(steps):
        acc_t += dt[j]
        acc_e += de[j]
        ct[j], ce[j] = acc_t, acc_e
    return ct, ce


def tpot_weights(marks, steps: int) -> tuple[list[float], int, float]:
    """TPOT as the benchmarks report it where requests differ in length: the mean over the requests that made
    more than one token of each one's ``(e2e − TTFT) / (its output tokens − 1)`` (``vllm bench serve``
    ``calculate_metrics``; ``sglang.bench_serving`` the same), not the ratio of the means: a short request
    decodes while the batch is full, a long one also through the run's thinning tail, and each counts once.
    Returns, for each of ``steps`` steps of ``run_steps``, Σ count / (output − 1) over the ``marks`` whose
    decode window (after the step of their first token, to the step of their last) holds it (a difference
    array, as ``window_counts``); the number of those requests; and their mean TPOT on the clock."""
    diff = [0.0] * (steps + 1)
    n = 0
    clock = 0.0
    for m in marks:
        if m.output_len > 1:
            w = m.count / (m.output_len - 1)
            diff[m.first_step + 1] += w
            diff[m.end_step + 1] -= w
            n += m.count
            clock += w * (m.end_s - m.first_s)
    out = [0.0] * steps
    acc = 0.0
    for j in range(steps):
        acc += diff[j]
        out[j] = acc
    return out, n, clock / n if n else 0.0


@lru_cache(maxsize=256)
def closed_loop_schedule(I: int, O: int, clients: int, requests: int, budget: int, slots: int,
                         ctx_step: int, rules: StepRules = StepRules(),
                         kv: tuple[int, int] | None = None) -> tuple[tuple[tuple, int, int, int], ...]:
    """The steps of ``clients`` closed-loop clients on one engine replica (``run_steps``): every client
    sends its first request at step 0 and its next one when the last has produced its ``O``-th token (it
    is scheduled from the next step on), until ``requests`` requests have run.

    Arrivals fall on step boundaries, so the schedule does not depend on how long steps take: it is
    computed once (on a clock where each step takes 1) and priced for any factors. Returned: ``(shape,
    steps, ttft_weight, e2e_weight)`` per distinct step shape, where ``shape`` is the step's pieces
    ``((new tokens, cached tokens), sequences)`` (decodes at their mean context, rounded to ``ctx_step``),
    ``steps`` how many steps have it, and the weights how many (request, step) pairs fall inside a
    request's TTFT and e2e windows: the mean TTFT is Σ ttft_weight × step time / requests. ``rules``: the
    engine's step rules (``StepRules``; delayed batching counts steps, so the schedule is still the clock's).
    ``kv``: ``pool_tokens`` where ``rules.preempt`` (the pool admits by the prompt and preempts; the last item is
    then ``("stats", peak, preemptions)``, as ``run_steps``' ``stats``)."""
    sent = min(clients, requests)

    def resend(_t: float, finished: int) -> list:  # each finished request's client sends its next one
        nonlocal sent
        more = min(finished, requests - sent)
        sent += more
        return [(more, I, O)] if more else []

    stats: dict = {}
    steps, marks = run_steps([(0.0, sent, I, O)], budget, slots, price=lambda _: 1.0, ctx_step=ctx_step,
                             resend=resend, batch_wait=rules.batch_wait, prefill_first=rules.prefill_first,
                             whole_prompts=rules.whole_prompts, lookahead=rules.lookahead,
                             kv_tokens=kv[0] if kv else None, kv_seq_tokens=kv[1] if kv else 0,
                             preempt=kv is not None, prefix_cache=rules.prefix_cache,
                             recv_interval=rules.recv_interval, stats=stats)
    shapes: dict = {}
    for s, pieces in enumerate(steps):
        shapes.setdefault(tuple(sorted(pieces.items())), []).append(s)
    ct, ce = window_counts(marks, len(steps))
    out = tuple((key, len(steps), sum(ct[j] for j in steps), sum(ce[j] for j in steps))
                for key, steps in shapes.items())
    return out + ((("stats", stats["peak"], stats["preempted"]),) if kv is not None else ())


#: The most requests (or closed-loop clients) per replica the step-by-step paths (closed loop, the HTTP
#: front end) simulate: their time grows faster than linearly (16,384 closed-loop clients of 100 + 100
#: tokens take 0.6-2 s, 131,072 take 16 s, a million did not finish in two minutes).
STEP_SIM_MAX_PER_REPLICA = 16_384

#: The most engine steps per replica a simulation runs one by one (the scheduler loop, or a prompt's prefill
#: chunks): each costs about 4-10 µs and 400 B (one closed-loop client of --output-len 131,072 × 8 requests,
#: 1,048,568 steps, took 4-10.5 s and 400 MB; 8 M steps took 92 s and 3.1 GB), so this is about 16-40 s and
#: 1.6 GB. It admits 256 requests of 98,304 + 32,768 tokens on one H100 with three in the KV pool at once (vLLM,
#: Llama-3.1-8B: 2,796,118 steps, 11 s and 1.0 GB on 2026-12-04), DeepSeek-V3's 131,072 + 32,768 on 8 H200s
#: (2,097,088, 9 s); a limit of 2 M refused both.
STEP_SIM_MAX_STEPS = 4_000_000
#: The most prompt chunks after a prompt's first (``requests × (⌈--input-len / --max-num-batched-tokens⌉ − 1)``)
#: a simulation prices: each holds a new number of cached tokens, so each is a step shape priced from the trace,
#: about 0.7-0.9 ms (10,000 chunks of one 1,000,000-token prompt took 7-8 s; 64 closed-loop clients of them,
#: 62,976 chunks, 55 s); this is about 15 s. (One 10 M-token prompt in chunks of 2,048 is 4,882.)
STEP_SIM_MAX_LATER_CHUNKS = 16_384


def check_simulated_steps(scenario: Scenario, requests: int, slots: int, budget: int, *, decodes: bool = True,
                          sent: int | None = None) -> None:
    """Refuse, before it runs, a simulation of more than ``STEP_SIM_MAX_STEPS`` engine steps per replica or
    more than ``STEP_SIM_MAX_LATER_CHUNKS`` prompt chunks after each prompt's first (each may be a step shape
    of its own, priced from the trace). Steps are counted from below: a step makes at most ``slots`` decode
    tokens (one per running request) and takes at most ``budget`` tokens (``max_num_batched_tokens``), so
    ``requests`` requests of ``input_len`` in and ``output_len`` out (their mean where they stop at
    end-of-sequence) need at least the larger of ``requests × (output − 1) / slots`` and
    ``requests × input_len / budget`` steps. The step count is checked first: past it the run cannot be
    simulated whatever the chunks, so the refusal names it (2,048 closed-loop requests of 98,304 + 32,768 tokens,
    three at once, are 22 M decode steps, and only 111 distinct step shapes). ``decodes`` False: the decode steps
    are priced in closed form (only the prefill chunks run one by one). ``sent``: the prompts per replica where
    the simulation runs fewer (``simulate``'s waves: one full wave and the rest stand for them all)."""
    from planner.analysis.errors import OptionError

    I, O, m = scenario.input_len, scenario.output_len, scenario.mean_output_len
    if sent is not None and sent != requests:
        prompts = (f"{requests:,} prompt(s) simulated per replica (of {sent:,} sent: one wave of at most {slots:,} "
                   f"and the rest, identical waves priced once)")
    else:
        prompts = f"{requests:,} prompt(s) per replica"
    out = min(O, m) if m is not None else O
    prefill = math.ceil(requests * I / max(budget, 1))
    decode = math.ceil(requests * (out - 1) / max(slots, 1)) if decodes else 0
    steps = max(prefill, decode)
    if steps > STEP_SIM_MAX_STEPS:
        if decode >= prefill:
            what = (f"{requests:,} request(s) per replica of {out:,.0f} output tokens, at most {slots:,} running at "
                    f"once, need at least {steps:,} engine steps, each run one by one")
            how = "lower --output-len" + (" or --requests" if scenario.arrival == "closed-loop" else "")
        else:
            what = (f"{prompts} of {I:,} tokens in steps of at most {budget:,} tokens (--max-num-batched-tokens) "
                    f"need at least {steps:,} engine steps, each run one by one")
            how = "raise --max-num-batched-tokens or lower --input-len"
        raise OptionError(f"{what}; the simulation runs at most {STEP_SIM_MAX_STEPS:,} engine steps per replica "
                          "(about 20-40 s)", how)
    later = requests * (-(-I // max(budget, 1)) - 1)
    if later > STEP_SIM_MAX_LATER_CHUNKS:
        raise OptionError(f"{prompts} of {I:,} tokens, in steps of at most {budget:,} tokens "
                          f"(--max-num-batched-tokens), are {later:,} prefill steps past each prompt's first, each "
                          f"holding a new number of cached tokens (a step shape priced on its own); the simulation "
                          f"prices at most {STEP_SIM_MAX_LATER_CHUNKS:,} (about 15 s)",
                          "raise --max-num-batched-tokens, or lower --input-len"
                          + (" or --requests" if scenario.arrival == "closed-loop" else " or --concurrency"))


def _replica_admission(mem, scenario: Scenario, replicas: int, *, closed: bool, wait_note: bool = True,
                       step_by_step: bool = False, held_output: float = 1.0,
                       preempt: bool = False) -> tuple[int, int, list[str]]:
    """(requests or clients per replica, how many of them run at once, notes) for ``scenario`` on
    ``replicas`` replicas: refused when a request exceeds ``max_model_len`` or none fits in the KV pool,
    and, for a ``step_by_step`` simulation, when a replica has more than ``STEP_SIM_MAX_PER_REPLICA``.
    ``wait_note``: say when the limit makes the rest wait. ``held_output``: the share of its output tokens a
    running request holds in the KV pool on average (``StepRules.held_output``). ``preempt``: a step-by-step
    simulation that admits by the prompt and preempts (``StepRules.preempt`` where ``pool_tokens`` counts the pool:
    the caller's ``kv``): the pool does not limit the count here, ``run_steps`` applies it."""
    from planner.analysis.errors import OptionError

    I, O, C = scenario.input_len, scenario.output_len, scenario.concurrency
    who = "clients" if closed else "requests"
    per_replica = -(-C // replicas)
    if step_by_step and per_replica > STEP_SIM_MAX_PER_REPLICA:
        how = "closed-loop clients" if closed else "requests through the HTTP front end"
        raise OptionError(f"--concurrency {C:,} puts {per_replica:,} {how} on each of {replicas} replica(s); the "
                          f"step-by-step simulation takes at most {STEP_SIM_MAX_PER_REPLICA:,} per replica",
                          "lower --concurrency or add replicas (--gpus)" + ("" if not closed else
                                                                            ", or use --arrival together"))
    notes = []
    if closed:
        n = scenario.requests if scenario.requests is not None else C * CLOSED_LOOP_ROUNDS
        notes.append(f"closed loop: {C} clients start together and each sends its next request when the last "
                     f"ends ({n:,} requests in all, simulated step by step)")
    if scenario.mean_output_len is not None and scenario.mean_output_len < O:
        r = eos_continue_probability(O, scenario.mean_output_len)
        notes.append(f"requests stop at end-of-sequence: a {1 - r:.3g} chance per token (geometric lengths, mean "
                     f"{scenario.mean_output_len:g}); {r ** (O - 1):.0%} run to the {O}-token cap")
    if replicas > 1:
        notes.append(f"{C} {who} over {replicas} replicas: {per_replica} per replica")
    drawn = scenario.input_len_dist is not None or scenario.output_len_dist is not None
    if not drawn and I + O > mem.max_model_len:
        raise OptionError(f"--input-len + --output-len ({I + O:,}) exceed --max-model-len ({mem.max_model_len:,})",
                          "raise --max-model-len or shorten the request")
    if drawn:  # the longest request drawn, not the means, must fit
        n = closed_loop_requests(scenario, per_replica, replicas) if closed else per_replica
        ins, outs = scenario_lengths(scenario, n)
        k = max(range(n), key=lambda j: ins[j] + outs[j])
        if ins[k] + outs[k] > mem.max_model_len:
            raise OptionError(f"request {k + 1:,} of the drawn lengths has {ins[k]:,} + {outs[k]:,} tokens, more than "
                              f"--max-model-len ({mem.max_model_len:,})",
                              "raise --max-model-len or narrow --input-len-dist / --output-len-dist")
        notes.append("lengths drawn per request (evenly spread quantiles): input "
                     + (f"{scenario.input_len_dist} (mean {sum(ins) / n:,.0f})" if scenario.input_len_dist else f"{I:,}")
                     + ", output " + (f"{scenario.output_len_dist} (mean {sum(outs) / n:,.0f})"
                                      if scenario.output_len_dist else f"{O:,}"))
    # requests that stop at end-of-sequence hold their own length, not the cap; an engine that allocates blocks as
    # tokens come (vLLM V1's kv_cache_manager.allocate_slots, preempting when none is left) has each running
    # request hold its prompt and on average ``held_output`` of its output, one that reserves the whole sequence
    # at admission all of it (held_output_of); a step-by-step simulation with ``preempt`` admits by the prompt and
    # preempts in ``run_steps`` instead, so the pool does not limit the count here. At least one whole request
    # must fit (a request that cannot finish alone is refused)
    m = scenario.mean_output_len
    out = math.ceil(m) if m is not None and m < O else O
    if mem.max_batch(I + out) < 1:
        raise OptionError("not even one request fits in the KV pool", "use more GPUs or a shorter request")
    held = held_tokens(I, out, held_output)
    if preempt and step_by_step:
        slots = min(per_replica, mem.max_num_seqs)
    else:
        slots = min(per_replica, mem.max_num_seqs, mem.max_batch(held))
    if wait_note and slots < per_replica:
        why = "max_num_seqs" if slots == mem.max_num_seqs else "the KV pool"
        # the pool limits a batch counted at each running request's mean held tokens (an on-demand engine's)
        on_demand_pool = why == "the KV pool" and held_output < 1
        if on_demand_pool:
            why += (f", each running request counted at its prompt and {held_output:.0%} of its output: the engine "
                    f"allocates blocks as tokens come and preempts when none is left")
        notes.append(f"{per_replica} {who} per replica but {slots} run at once ({why} limits them): the rest wait")
        if on_demand_pool:
            # the engine admits by the prompt and preempts later; the batch here is sized by the mean held instead
            notes.append("the engine itself admits a request once its prompt fits and preempts a running one when "
                         "the pool fills: more requests may start at once than this, their first tokens sooner and "
                         "their later tokens slower than simulated here (bench/published.md, session 50)")
    return per_replica, slots, notes


def _closed_loop(model: StepModel, mem, scenario: Scenario, *, replicas: int, server: bool,
                 rules: StepRules = StepRules()) -> ServeResult:
    """``concurrency`` closed-loop clients that start together, step by step (``closed_loop_schedule``)."""
    I, O = scenario.input_len, scenario.output_len
    kv = pool_tokens(mem) if rules.preempt else None
    per_replica, n, notes = _replica_admission(mem, scenario, replicas, closed=True, step_by_step=True,
                                               held_output=rules.held_output, preempt=kv is not None)
    requests = closed_loop_requests(scenario, per_replica, replicas)
    budget = mem.max_num_batched_tokens
    # (the step bound counts at most the batch of the mean held tokens: the preemptions add steps to it)
    check_simulated_steps(scenario, requests, min(n, mem.max_batch(held_tokens(I, O, rules.held_output)))
                          if kv else n, budget)
    sched = closed_loop_schedule(I, O, per_replica, requests, budget, n, max(1, (I + O) // 64), rules, kv)
    preempted = None
    if kv:
        *sched, (_, peak, preempted) = sched
        notes.extend(preemption_note({"peak": peak, "preempted": preempted}, per_replica, "clients"))
        n = peak
    ttft = e2e = span = ZERO
    prefill_steps = 0
    decode_step = None
    for key, steps, wt, we in sched:
        pieces = dict(key)
        if all(t == 1 for (t, _) in pieces) and len(pieces) == 1:
            (_, ctx), k = next(iter(pieces.items()))
            cost = model.decode(k, ctx)
            if decode_step is None or k > decode_step[0]:
                decode_step = (k, cost)
        else:
            cost = model.prefill(pieces)
            prefill_steps += steps
        ttft = ttft + cost.scaled(wt / requests)
        e2e = e2e + cost.scaled(we / requests)
        span = span + cost.scaled(steps)
    over = _request_cost(model.f)
    ttft, e2e = ttft + over, e2e + over
    span = span + over.scaled(requests / min(per_replica, requests))  # each client pays it once per request
    # the replicas' worth of clients: C clients over the replicas, ``per_replica`` on the one simulated (the larger
    # share); fewer clients than replicas leave the rest idle (C = 1 on 8 replicas: one replica's tokens, not 8)
    tokens = requests * O * scenario.concurrency / per_replica

    def lat(pick) -> Latency:
        tt, ee, ms = pick(ttft), pick(e2e), pick(span)
        return Latency(tt, (ee - tt) / (O - 1) if O > 1 else None, ee, tokens / ms if ms else 0.0)

    expected = lat(lambda c: c.expected_s)
    ideal = lat(lambda c: c.ideal_s)
    return ServeResult(scenario, replicas, per_replica, n, 1, prefill_steps, expected, ideal,
                       _explain(ttft, e2e, O), decode_step[1] if decode_step else None, tuple(notes), preempted)


# ---- the HTTP front end as a serial intake -------------------------------------------------------


def intake_arrivals(sends_s, intake_s: float, free_s: float = 0.0) -> tuple[list[float], float]:
    """When requests sent at ``sends_s`` (in send order) reach the engine through one front-end process
    that takes ``intake_s`` per request, one after another (vLLM's API server tokenizes each request,
    builds it and hands it to the engine core over ZMQ in one asyncio process): request k leaves the
    front end at ``max(send_k, when request k − 1 left) + intake_s``. ``free_s``: when the front end is
    next free. Returns (arrival times, when it is free again). A burst of N at t = 0 arrives at
    intake_s, 2 × intake_s, ..., N × intake_s."""
    out = []
    for s in sends_s:
        free_s = max(s, free_s) + intake_s
        out.append(free_s)
    return out, free_s


def _clocked(model: StepModel, mem, scenario: Scenario, *, replicas: int, intake_s: float,
             scheduler_steps: int = 1, rules: StepRules = StepRules()) -> ServeResult:
    """Requests that reach the engine through its HTTP front end (``intake_arrivals``, ``intake_s`` per
    request; 0: in-process), then run step by step under the engine's scheduler rules (``run_steps``, as
    ``closed_loop_schedule``; ``scheduler_steps`` > 1: multi-step rounds), each step priced by the step
    model as it is built: arrivals now fall inside steps, so the schedule depends on the step times. ``together``: every request is sent at t = 0; ``closed-loop``: each client
    sends its next request when its last one ends (``closed_loop_requests`` in all). Each replica has
    its own front end. TTFT and e2e run from the send; the time a request spends in the front end (and
    waiting for the step after its arrival) is the ``request overhead`` part of the explanation. Request
    k produces ``output_lengths(...)[k]`` tokens (all ``output_len`` unless the scenario's requests stop
    at end-of-sequence; then each is sent as its own group); TPOT is then the mean of each request's
    ``(e2e − ttft) / (its output − 1)``, as the benchmarks report it (``tpot_weights``). ``intake_s`` 0:
    requests reach the scheduler when they are sent."""
    I, O, C = scenario.input_len, scenario.output_len, scenario.concurrency
    closed = scenario.arrival == "closed-loop"
    kv = pool_tokens(mem) if rules.preempt else None
    per_replica, slots, notes = _replica_admission(mem, scenario, replicas, closed=closed, step_by_step=True,
                                                   held_output=rules.held_output, preempt=kv is not None)
    c = intake_s
    if c > 0:
        notes.append(f"through the HTTP front end: {c * 1e3:.3g} ms per request, one after another "
                     f"(a burst of {per_replica} reaches the engine over {per_replica * c:.3g} s)")
    if scheduler_steps > 1:
        notes.append(f"multi-step scheduling (vLLM V0 --num-scheduler-steps {scheduler_steps}): the scheduler runs "
                     f"once per round, a round is one step of prompts alone or {scheduler_steps} decode steps; a "
                     f"request waits for the round in flight, and tokens stream once per round")
    requests = closed_loop_requests(scenario, per_replica, replicas) if closed else per_replica
    check_simulated_steps(scenario, requests, min(slots, mem.max_batch(held_tokens(I, O, rules.held_output)))
                          if kv else slots, mem.max_num_batched_tokens)
    sent = min(per_replica, requests)
    spread = scenario.spread
    in_len, out_len = scenario_lengths(scenario, requests)
    price = StepPricer(model)

    stats: dict = {}

    def batch(first: int, n: int) -> list:
        """Requests first .. first + n − 1 as sends: one group, or one each where their lengths differ."""
        return [(1, in_len[k], out_len[k]) for k in range(first, first + n)] if spread else [(n, I, O)]

    def resend(_t: float, finished: int) -> list:  # closed loop: each client sends its next request
        nonlocal sent
        more = min(finished, requests - sent) if closed else 0
        sent += more
        return batch(sent - more, more) if more else []

    _, marks = run_steps([(0.0, *g) for g in batch(0, sent)], mem.max_num_batched_tokens, slots, price=price,
                         intake_s=c, ctx_step=max(1, (I + O) // 64), resend=resend, scheduler_steps=scheduler_steps,
                         batch_wait=rules.batch_wait, prefill_first=rules.prefill_first,
                         whole_prompts=rules.whole_prompts, lookahead=rules.lookahead,
                         kv_tokens=kv[0] if kv else None, kv_seq_tokens=kv[1] if kv else 0, preempt=kv is not None,
                         prefix_cache=rules.prefix_cache, recv_interval=rules.recv_interval, stats=stats)
    if kv:
        notes.extend(preemption_note(stats, per_replica, "clients" if closed else "requests"))
        slots = stats["peak"]
    costs = price.costs
    ct, ce = window_counts(marks, len(costs))
    # requests of different lengths: TPOT is the mean of each one's (``tpot_weights``)
    cp, n_tpot, clock_tpot = tpot_weights(marks, len(costs)) if spread else (repeat(0.0), 0, 0.0)
    # each distinct step (the step model returns one object per shape) weighted by the requests whose TTFT,
    # e2e and TPOT windows hold it, and by how often it ran
    weights: dict = {}  # id(cost) -> [cost, TTFT weight, e2e weight, TPOT weight, steps]
    for cost, acc_t, acc_e, acc_p in zip(costs, ct, ce, cp):
        w = weights.get(id(cost))
        if w is None:
            weights[id(cost)] = [cost, acc_t, acc_e, acc_p, 1]
        else:
            w[1] += acc_t
            w[2] += acc_e
            w[3] += acc_p
            w[4] += 1
    ttft = e2e = span = tpot = ZERO
    for cost, w_t, w_e, w_p, n in weights.values():
        ttft = ttft + cost.scaled(w_t)
        e2e = e2e + cost.scaled(w_e)
        if n_tpot:
            tpot = tpot + cost.scaled(w_p)
        span = span + cost.scaled(n)
    ttft, e2e = ttft.scaled(1 / requests), e2e.scaled(1 / requests)
    # the front end and the wait for the next step: the rest of each window (not in the ideal)
    mean_ttft = sum(m.count * (m.first_s - m.send_s) for m in marks) / requests
    mean_e2e = sum(m.count * (m.end_s - m.send_s) for m in marks) / requests
    makespan = max(m.end_s for m in marks)

    def queue(x: float) -> StepCost:
        x = 0.0 if abs(x) < 1e-12 else x  # rounding left by Σ steps − the clock (no front end, no wait)
        parts = {k: 0.0 for k in FACTORS}
        parts["request overhead"] = x
        return StepCost(0.0, x, parts, 0)

    ttft = ttft + queue(mean_ttft - ttft.expected_s)
    e2e = e2e + queue(mean_e2e - e2e.expected_s)
    span = span + queue(makespan - span.expected_s)
    over = _request_cost(model.f)
    ttft, e2e = ttft + over, e2e + over
    if closed:
        span = span + over.scaled(requests / min(per_replica, requests))
    mean_o = sum(out_len) / requests if spread else O
    tokens = (requests * C / per_replica if closed else C) * mean_o  # (closed: as ``_closed_loop``'s)
    if n_tpot:
        tpot = tpot.scaled(1 / n_tpot)
        tpot = tpot + queue(clock_tpot - tpot.expected_s)
    else:
        tpot = None

    def lat(pick) -> Latency:
        tt, ee, ms = pick(ttft), pick(e2e), pick(span)
        if spread:  # the mean of each request's TPOT (None: no request made two tokens)
            tp = pick(tpot) if tpot is not None else None
        else:
            tp = (ee - tt) / (mean_o - 1) if mean_o > 1 else None
        return Latency(tt, tp, ee, tokens / ms if ms else 0.0)

    return ServeResult(scenario, replicas, per_replica, slots, 1, price.prefill_steps, lat(lambda x: x.expected_s),
                       lat(lambda x: x.ideal_s), _explain(ttft, e2e, mean_o, tpot),
                       price.decode_step[1] if price.decode_step else None, tuple(notes),
                       stats["preempted"] if kv else None)


def simulate_requests(model: StepModel, mem, sends_s, input_lens, output_lens, *, intake_s: float = 0.0,
                      scheduler_steps: int = 1, max_num_batched_tokens: int | None = None,
                      step_ends: list | None = None, prefill_first: bool = False, held_output: float = 1.0,
                      preempt: bool = False, prefix_cache: bool = False) -> list:
    """Requests of their own lengths sent at ``sends_s`` (sorted; a request-rate benchmark's arrivals) to one
    replica, step by step (``run_steps``, each step priced by ``model``): one ``Finished`` per request, in
    finish order (requests sent at the same time may share one). At most ``mem.max_num_seqs`` run at
    once, and the KV pool holds each running request's prompt and ``held_output`` of its output (1: its whole
    sequence; ``StepRules.held_output``; no preemption), or, with ``preempt``, admits a prompt where it holds it
    and preempts the newest when a decode step's tokens do not fit (``run_steps``; ``prefix_cache``: its
    recompute reads back the prefix still cached);
    ``max_num_batched_tokens``: the step's token budget where it is not the engine memory's; ``step_ends``
    and ``prefill_first``: as ``run_steps``'."""
    from planner.analysis.errors import OptionError

    reqs = list(zip(sends_s, input_lens, output_lens))
    if not reqs:
        return []
    longest = max(int(i) + int(o) for _, i, o in reqs)
    if longest > mem.kv_capacity_tokens:
        raise OptionError(f"a request of {longest:,} tokens does not fit the KV pool ({mem.kv_capacity_tokens:,} tokens)",
                          "use more GPUs or shorter requests")
    sends = [(float(t), 1, int(i), int(o)) for t, i, o in reqs]
    mean_len = sum(i + o for _, _, i, o in sends) / len(sends)
    kv = pool_tokens(mem) if preempt else None
    _, marks = run_steps(sends, max_num_batched_tokens or mem.max_num_batched_tokens, mem.max_num_seqs,
                         price=StepPricer(model), intake_s=intake_s, ctx_step=max(1, int(mean_len) // 64),
                         scheduler_steps=scheduler_steps, kv_tokens=kv[0] if kv else mem.kv_capacity_tokens,
                         step_ends=step_ends, prefill_first=prefill_first, lookahead=model.f.async_scheduling,
                         kv_held_output=held_output, preempt=kv is not None, kv_seq_tokens=kv[1] if kv else 0,
                         prefix_cache=prefix_cache)
    return marks


class StepPricer:
    """``run_steps``' ``price``: each step's cost from the step model (a decode step where every piece is
    one decode token, else a prefill step of the pieces), kept in ``costs``, its expected seconds returned."""

    def __init__(self, model: StepModel):
        self.model = model
        self.costs: list = []
        self.prefill_steps = 0
        self.decode_step = None  # (sequences, cost) of the widest decode step

    def __call__(self, pieces: dict) -> float:
        if len(pieces) == 1:
            for (n, ctx), k in pieces.items():
                if n == 1:  # a decode step (a loop of one: the cheapest way to read the one item)
                    cost = self.model.decode(k, ctx)
                    if self.decode_step is None or k > self.decode_step[0]:
                        self.decode_step = (k, cost)
                    self.costs.append(cost)
                    return cost.expected_s
        cost = self.model.prefill(dict(pieces))
        self.prefill_steps += 1
        self.costs.append(cost)
        return cost.expected_s

    def again(self) -> float:
        """The step priced last, run once more (``run_steps``' decode stretches: the same pieces again)."""
        cost = self.costs[-1]
        self.costs.append(cost)
        return cost.expected_s


__all__ = ["ARRIVALS", "StepModel", "Scenario", "Latency", "ServeResult", "simulate", "intake_arrivals", "run_steps",
           "Finished", "simulate_requests", "StepPricer", "StepRules", "held_output_of", "pool_tokens"]


# ---- one call for the CLI, the benchmark and other commands ---------------------------------------


@frozen
class Deployment:
    """Everything ``planner serve`` answers: the analysis, the engine's memory, the simulation
    (None when the model does not fit), the fewest GPUs that would hold it, and notes."""

    analysis: object
    engine: object
    hardware: object
    tp: int
    replicas: int
    memory: object  # EngineMemory
    factors: Factors
    result: ServeResult | None
    fewest_gpus: int | None
    notes: tuple[str, ...]
    num_scheduler_steps: int = 1
    batch_wait: tuple[int, float] | None = None  # (iterations, tokens) of TensorRT-LLM's delayed batching
    recv_interval: int = 1  # SGLang's --scheduler-recv-interval (decode steps between receives)


def serve(spec, hw, *, engine: str | None = None, gpus: int = 1, tp: int | None = None, dtype: str | None = None,
          kv_dtype: str | None = None, gpu_memory_utilization: float | None = None, max_model_len: int | None = None,
          max_num_batched_tokens: int | None = None, input_len: int = 1024, output_len: int = 128,
          concurrency: int = 1, arrival: str = "together", requests: int | None = None,
          mean_output_len: float | None = None, factors: Factors | None = None,
          num_scheduler_steps: int | None = None, cuda_graph_max_tokens: int | None = None,
          async_scheduling: bool | None = None, input_len_dist: str | None = None,
          output_len_dist: str | None = None, batch_wait_iters: int | None = None,
          batch_wait_tokens_ratio: float | None = None,
          scheduler_recv_interval: int | None = None) -> Deployment:
    """Plan one deployment of ``spec`` on ``gpus`` × ``hw`` under ``engine`` (see the module docstring).
    ``num_scheduler_steps``: multi-step scheduling (``run_steps``); default: the engine's.
    ``cuda_graph_max_tokens``: the largest step the engine replays as a CUDA graph (tokens; a decode step's
    are its sequences; 0: none); default: the engine profile's. ``async_scheduling``: the engine schedules
    the next step while the device runs this one (vLLM's, the default from v0.14.0; ``Factors.async_scheduling``);
    default: the engine profile's, off with multi-step scheduling (vLLM V0's, which had none).
    ``input_len_dist`` / ``output_len_dist``: each request's length drawn from this distribution
    (``hardware.simulate.length_dist``; ``scenario_lengths``) in place of ``input_len`` / ``output_len``, which
    become the distribution's mean. ``batch_wait_iters`` / ``batch_wait_tokens_ratio``: TensorRT-LLM's delayed
    batching (``batch_wait_of``); default: the engine's (off). ``scheduler_recv_interval``: SGLang's
    ``--scheduler-recv-interval`` (``recv_interval_of``); default: the engine's (1)."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import tp_plan

    from .engine import check_kv_dtype, engine_analysis, engine_memory, fewest_gpus, load_engine
    from .expected import async_note, factors_for, with_async_scheduling

    eng = load_engine(engine)
    check_kv_dtype(eng, kv_dtype)
    notes: list[str] = []
    context = input_len + output_len
    if output_len_dist is not None and mean_output_len is not None:
        raise OptionError("--mean-output-len and --output-len-dist both set the output lengths", "give one of them")
    if input_len_dist is not None or output_len_dist is not None:  # the lengths' means stand for the requests
        from .simulate import drawn_length_summary

        input_len, output_len, context = drawn_length_summary(input_len, output_len, input_len_dist, output_len_dist)
    steps = num_scheduler_steps
    if steps is None:
        steps = eng.num_scheduler_steps or 1
    elif steps < 1:
        raise OptionError(f"--num-scheduler-steps must be >= 1, got {steps}")
    elif steps > 1 and eng.num_scheduler_steps is None:
        raise OptionError(f"--num-scheduler-steps: {eng.display_name} has no multi-step scheduling",
                          "it is vLLM V0's (--engine vllm)")
    if tp is None:  # the widest tensor-parallel degree the model's heads allow; the rest are replicas
        tp = gpus
        for cand in sorted((t for t in range(1, gpus + 1) if gpus % t == 0), reverse=True):
            try:
                tp_plan(spec, cand)
            except OptionError:
                continue
            tp = cand
            break
        if tp != gpus:
            notes.append(f"--gpus {gpus}: tensor parallel {tp} (the widest the model allows: see --tp {gpus} for why) × {gpus // tp} replicas")
    if tp < 1 or gpus < 1 or gpus % tp:
        raise OptionError(f"--gpus {gpus} is not a multiple of --tp {tp}")
    replicas = gpus // tp
    if dtype is None and eng.fp32_served_as and spec.quant is None and (spec.torch_dtype or "").lower() in (
            "float32", "fp32", "float"):
        dtype = eng.fp32_served_as
        notes.append(f"{eng.display_name} serves this fp32 checkpoint in {dtype} (dtype auto)")
    a = analyze(spec, Options(context=context, batch=1, dtype=dtype, kv_dtype=kv_dtype))
    a, swa_notes = engine_analysis(a, eng)
    notes.extend(swa_notes)
    notes.extend(n for n in a.notes if not n.startswith("--context"))
    plan = tp_plan(spec, tp)
    notes.extend(plan.notes)
    link = allreduce_link_of(hw, tp)
    if link is not None:
        from .comm import links

        lk = links(hw)
        node = getattr(getattr(hw, "node", None), "name", "") or ""
        notes.append(f"tensor parallel {tp} spans {-(-tp // lk.gpus_per_node)} nodes of {lk.gpus_per_node} GPUs"
                     f"{f' ({node})' if node else ''}: each all-reduce crosses the link between them "
                     f"({2 * (tp - 1)} ring steps of {lk.inter_latency_s * 1e6:g} µs = {link[1] * 1e6:g} µs a call; its bytes "
                     f"at {link[0] / 1e9:g} GB/s per GPU, NCCL's rings spread over each GPU's link out of the node, "
                     f"{lk.inter_bytes_per_s / 1e9:g} GB/s), as plan prices it")
    low = a.fmt.compute.name
    if low in ("fp8", "fp4") and StepModel.weight_only_bits_of(a, hw):
        notes.append(f"{hw.name} has no {low.upper()} tensor cores: the {low} weights run through weight-only "
                     f"W{a.fmt.quant.bits}A16 kernels (dequantized into 16-bit GEMMs, as vLLM's Marlin does), "
                     f"at the bf16 compute rate")
    kw = dict(gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
              max_num_batched_tokens=max_num_batched_tokens)
    mem = engine_memory(a, hw, eng, plan, **kw)
    f = factors if factors is not None else factors_for(hw, eng)
    if cuda_graph_max_tokens is not None:
        if cuda_graph_max_tokens < 0:
            raise OptionError(f"--cuda-graph-max-tokens must be >= 0, got {cuda_graph_max_tokens}")
        f = replace(f, cuda_graph_max_tokens=int(cuda_graph_max_tokens))
    f = with_async_scheduling(f, eng, async_scheduling, scheduler_steps=steps)
    note = async_note(f, eng)
    if note:
        notes.append(note)
    result = None
    fewest = None
    wait = batch_wait_of(eng, batch_wait_iters, batch_wait_tokens_ratio, mem.max_num_batched_tokens)
    recv = recv_interval_of(eng, scheduler_recv_interval)
    if not mem.fits:
        fewest = fewest_gpus(a, hw, eng, **kw)
        if mem.kv_pool_bytes <= 0:
            notes.append(f"does not fit: the weights and the engine's own memory exceed its cap on each of {tp} GPU(s)")
        else:
            notes.append(f"does not fit: the KV pool holds {mem.kv_capacity_tokens:,} tokens, less than one "
                         f"--max-model-len sequence ({mem.max_model_len:,}); lower --max-model-len or add GPUs")
        if fewest is not None:
            notes.append(f"the fewest GPUs that hold it on {hw.name}: {fewest} (tensor parallel {fewest})")
        else:
            notes.append(f"no tensor-parallel degree up to 64 holds it on {hw.name}")
    else:
        scenario = Scenario(input_len, output_len, concurrency, arrival, requests=requests,
                            mean_output_len=mean_output_len, input_len_dist=input_len_dist,
                            output_len_dist=output_len_dist)
        if eng.prefill_first:
            notes.append(f"{eng.display_name} runs prompts in steps of their own (a prefill batch first whenever one "
                         f"can start; the decoding requests wait for it)")
        note = prefill_graph_note(eng, f, a.spec, hw)
        if note:
            notes.append(note)
        if wait is not None:
            notes.append(f"delayed batching ({eng.display_name} batch_wait_timeout_iters {wait[0]}, "
                         f"batch_wait_max_tokens_ratio {wait[1] / mem.max_num_batched_tokens:g}): "
                         f"while requests decode, new prompts wait up to {wait[0]} steps for a step of "
                         f"{math.ceil(wait[1]):,} tokens")
        if recv > 1:
            notes.append(f"{eng.display_name} takes new requests off its socket once every {recv} decode steps "
                         f"(--scheduler-recv-interval {recv}): while requests decode, a new one waits for up to "
                         f"{recv} steps before it can start")
        result = simulate(StepModel(a, hw, plan, f), mem, scenario, replicas=replicas, scheduler_steps=steps,
                          rules=StepRules.of(eng, prefill_first=eng.prefill_first, batch_wait=wait,
                                             lookahead=f.async_scheduling, recv_interval=recv))
        notes.extend(result.notes)
    notes.extend(mem.notes)
    return Deployment(a, eng, hw, tp, replicas, mem, f, result, fewest, tuple(dict.fromkeys(notes)), steps, wait,
                      recv)


def recv_interval_of(eng, interval: int | None) -> int:
    """SGLang's ``--scheduler-recv-interval`` as ``run_steps`` takes it (``recv_interval``), from the option (None:
    the engine profile's ``scheduler.recv_interval``, else 1). Refused on an engine without the setting and below
    1 (SGLang's server_args takes any int, and at 1 or less receives every turn: ``maybe_create`` returns None)."""
    from planner.analysis.errors import OptionError

    if interval is None:
        return eng.recv_interval or 1
    if eng.recv_interval is None:
        raise OptionError(f"--scheduler-recv-interval: {eng.display_name} has no such setting",
                          "it is SGLang's (--engine sglang)")
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise OptionError(f"--scheduler-recv-interval must be a whole number >= 1, got {interval!r}")
    return interval


def batch_wait_of(eng, iters: int | None, ratio: float | None, max_num_tokens: int) -> tuple[int, float] | None:
    """TensorRT-LLM's delayed batching as ``run_steps`` takes it, ``(timeout iterations, ratio ×
    max_num_tokens)``, from the options (None: the engine profile's ``scheduler.batch_wait``). None where it
    is off: ``_waiting_requests`` stops waiting once ``iters_count >= batch_wait_timeout_iters`` or the tokens
    reach the threshold, so either at 0 turns it off. Refused on an engine without the setting."""
    from planner.analysis.errors import OptionError

    if eng.batch_wait is None:
        if iters is not None or ratio is not None:
            raise OptionError(f"--batch-wait-iters / --batch-wait-tokens-ratio: {eng.display_name} has no delayed "
                              "batching", "it is TensorRT-LLM's (--engine trtllm)")
        return None
    if iters is not None and (isinstance(iters, bool) or iters != int(iters) or iters < 0):
        raise OptionError(f"--batch-wait-iters must be a whole number >= 0, got {iters}")
    if ratio is not None and not (math.isfinite(ratio) and 0 <= ratio <= 1):
        raise OptionError(f"--batch-wait-tokens-ratio must be a fraction in [0, 1], got {ratio}")
    n = eng.batch_wait[0] if iters is None else int(iters)
    r = eng.batch_wait[1] if ratio is None else float(ratio)
    return (n, r * max_num_tokens) if n > 0 and r > 0 else None


def deployment_dict(d: Deployment, *, model_id: str = "") -> dict:
    from .accuracy import accuracy_dict, bias_dict, load_bias, load_blind, regime_of
    from .accuracy import load as load_accuracy
    from .engine import memory_dict

    r = d.result
    null_lat = {"ttft_s": None, "tpot_s": None, "e2e_s": None}
    # the regime of the accuracy records: serve's clients always stream through the engine's HTTP server
    regime = regime_of(True, r.scenario.concurrency, d.replicas) if r else None
    return {
        "schema_version": 1,
        "model": model_id or d.analysis.spec.name,
        "engine": {"name": d.engine.name, "display_name": d.engine.display_name, "version": d.engine.version},
        "hardware": d.hardware.name,
        "layout": {"gpus": d.tp * d.replicas, "tp": d.tp, "replicas": d.replicas},
        "settings": {
            "weights_dtype": d.analysis.fmt.describe(), "kv_dtype": d.analysis.kv.dtype.name,
            "gpu_memory_utilization": d.memory.fraction, "max_model_len": d.memory.max_model_len,
            "max_num_batched_tokens": d.memory.max_num_batched_tokens, "max_num_seqs": d.memory.max_num_seqs,
            "num_scheduler_steps": d.num_scheduler_steps,
            "cuda_graph_max_tokens": d.factors.cuda_graph_max_tokens,
            "async_scheduling": d.factors.async_scheduling,
            # how the engine admits a request against the KV pool (EngineProfile.kv_admission: "whole" reserves the
            # whole sequence; "on_demand" allocates blocks as tokens come and preempts: the step-by-step paths simulate
            # that, a static batch is sized by prompt + half the output), and whether a recompute reads back the prefix
            # still cached (EngineProfile.prefix_caching)
            "kv_admission": d.engine.kv_admission,
            "prefix_caching": d.engine.prefix_caching,
            "batch_wait": (None if d.batch_wait is None else
                           {"timeout_iters": d.batch_wait[0], "min_step_tokens": math.ceil(d.batch_wait[1])}),
            "scheduler_recv_interval": d.recv_interval,
            "input_len": r.scenario.input_len if r else None, "output_len": r.scenario.output_len if r else None,
            "concurrency": r.scenario.concurrency if r else None,
            "arrival": r.scenario.arrival if r else None,
            "requests": r.scenario.requests if r else None,
            "mean_output_len": r.scenario.mean_output_len if r else None,
            "input_len_dist": r.scenario.input_len_dist if r else None,
            "output_len_dist": r.scenario.output_len_dist if r else None,
        },
        "fits": d.memory.fits,
        "fewest_gpus": d.fewest_gpus,
        "memory": memory_dict(d.memory),
        "latency": {k: v for k, v in r.expected.to_dict().items() if k != "output_tokens_per_s"} if r else null_lat,
        "throughput": {"output_tokens_per_s": r.expected.output_tokens_per_s if r else None},
        "ideal": ({k: v for k, v in r.ideal.to_dict().items()} if r else {**null_lat, "output_tokens_per_s": None}),
        "explain": dict(r.explain) if r else None,
        "waves": r.waves if r else None,
        "wave_sequences": r.wave if r else None,
        # the preemptions the step-by-step simulation made (an on-demand engine's; null where none was simulated)
        "preemptions": r.preemptions if r else None,
        "prefill_steps": r.prefill_steps if r else None,
        "factors": d.factors.to_dict(),
        "accuracy": accuracy_dict(load_accuracy(), d.engine.name, regime) if r else None,
        # the same error over the published runs each session scored before anything was fitted on them
        "accuracy_blind": accuracy_dict(load_blind(), d.engine.name, regime, kind="blind") if r else None,
        # the signed error of the steady published runs of this model family and of this vendor's GPUs
        "accuracy_bias": bias_dict(load_bias(), d.analysis.spec.model_type, d.hardware.vendor, d.engine.name) if r else None,
        "notes": list(d.notes),
    }


__all__ += ["Deployment", "serve", "deployment_dict"]
