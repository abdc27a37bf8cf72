"""Pipeline parallelism for ``planner verify --pp N``: each rank builds only its stage of the decoder
from the ``ModelSpec`` and passes the hidden states on to the next stage with point-to-point sends.

Placement is ``analysis.parallel``'s (``layout_plan(spec, Layout(pp=N)).stages``, the split plan and
deploy price): stage ``s`` holds a contiguous run of layers, the first stage the embedding, the last
the final norm and LM head (and, with tied embeddings, its own copy of the embedding as the head, as
vLLM builds it). The other layers are empty modules (``nn.Identity``), so a rank allocates only its
stage; parameter names stay the full model's, so each rank draws the single-process decoder's random
weights in the same order (``runtime.parallel.init_shard_random_``) and keeps its own.

A decode iteration runs as ``m = min(pp, batch)`` micro-batches (the batch shared out as evenly as it
goes, each with its own KV cache of the stage's layers), as ``hardware.deploy`` prices it:

    stage 0:      recv tokens_j (from the last stage, after the first iteration) → embed → layers → isend h_j
    stage s:      recv h_j → layers → isend h_j
    stage pp-1:   recv h_j → layers → norm → lm_head → argmax → isend tokens_j to stage 0

so in steady state the stages overlap (micro-batch ``j`` of the next iteration enters stage 0 while
``j+1`` is still on the last stage). Every send is an ``isend`` and every receive a blocking ``recv``,
so no cycle of waits can form. Measured: the last stage's time between the ends of successive
iterations (the steady-state iteration), each stage's compute per micro-batch (between its receive
and its send), and the send apart: a ping-pong of one micro-batch's hidden state between the two
ranks of each boundary (one way = half the round trip).

With ``--tp T`` as well, each stage is ``T`` ranks (GPUs numbered stage by stage, as
``analysis.parallel`` places them): every rank builds its tensor-parallel shard of its stage
(``runtime.parallel.shard_spec``, the same collectives hooked in, on the stage's own process group),
sends its ``1/T`` slice of the hidden state to its peer of the next stage, and the next stage
all-gathers the slices (vLLM's ``all_gather_group``), so the send is the analysis' ``pipeline send``.

Shape suffixes as in ``runtime.model`` (B batch, T new tokens, D hidden).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn

from planner.analysis.errors import RuntimeUnavailableError
from planner.analysis.parallel import Layout, LayoutPlan, layout_plan
from planner.analysis.spec import ModelSpec, MoE


def check_pp_supported(spec: ModelSpec, pp: int, tp: int) -> LayoutPlan:
    """The layout of ``pp`` stages of ``tp`` ranks each, or one error saying what does not run."""
    if spec.numerics.layer_scalar:  # shared-KV layers and per-layer inputs cross the stages
        raise RuntimeUnavailableError(f"verify --pp does not split Gemma 4 ({spec.label}) yet", "use --pp 1")
    if spec.head_transform and pp > 1:
        raise RuntimeUnavailableError(f"verify --pp does not split a model with a prediction head before the LM head "
                                      f"(ModernBERT decoder: {spec.label}) yet", "use --pp 1")
    plan = layout_plan(spec, Layout(tp=tp, pp=pp))
    for i, layer in enumerate(spec.layers):
        m = layer.mixer
        if m is not None and any(m.state_elements()):  # the stages' exact cache check counts K/V only
            raise RuntimeUnavailableError(f"verify --pp does not run {m.title} layers yet (layer {i})",
                                          "use --pp 1")
    if tp > 1:
        from planner.analysis.errors import OptionError

        from .parallel import check_tp_supported

        check_tp_supported(spec, tp)
        if spec.hidden_size % tp:
            raise OptionError(f"--tp {tp} --pp {pp}: the hidden size {spec.hidden_size} does not split {tp} ways "
                              "(each tensor-parallel rank sends its slice to the next stage)")
    if spec.cross_attention is not None:
        raise RuntimeUnavailableError(f"verify --pp does not build the {len(spec.cross_attention.layers)} "
                                      "cross-attention layers its stages' parameters count yet", "use --pp 1")
    return plan


def microbatch_sizes(batch: int, pp: int) -> list[int]:
    """The sequences of each of the ``min(pp, batch)`` micro-batches, the larger first."""
    from planner.analysis.parallel import batch_shares

    return [s for s, n in batch_shares(batch, max(1, min(pp, batch))) for _ in range(n)]


def build_stage(spec: ModelSpec, plan: LayoutPlan, stage: int, *, dtype, device, seed: int, tp: int = 1,
                tp_rank: int = 0) -> nn.Module:
    """The decoder with only ``stage``'s modules allocated on ``device`` (tensor-parallel rank
    ``tp_rank``'s shard of them when ``tp > 1``, ``runtime.parallel.shard_spec``) and filled with its
    share of the single-process decoder's seeded random weights."""
    from .model import Decoder, default_moe_impl
    from .parallel import init_shard_random_, shard_spec

    with torch.device("meta"):
        model = Decoder(shard_spec(spec, tp), dtype)
        full = Decoder(spec, dtype)  # shapes and draw order only
    a, b = plan.stages[stage]
    first, last = stage == 0, stage == len(plan.stages) - 1
    body = model.model
    for i in range(spec.num_layers):
        if not a <= i < b:
            body.layers[i] = nn.Identity()
    if not first:
        for name in ("embed_positions", "embed_layernorm", "project_in"):
            if hasattr(body, name):
                delattr(body, name)
        if not (last and spec.tie_word_embeddings):
            del body.embed_tokens
    if not last:
        for name in ("norm", "project_out", "relative_pe"):  # (Jais's relative_pe: with the model-level norms)
            if hasattr(body, name):
                delattr(body, name)
        if hasattr(model, "lm_head"):
            del model.lm_head
    model = model.to_empty(device=device)
    model.reset_buffers()
    init_shard_random_(model, full, spec, tp, tp_rank, seed)
    del full
    model.eval().requires_grad_(False)
    if any(isinstance(layer.ffn, MoE) for layer in spec.layers):
        model.set_moe_impl(default_moe_impl(device, dtype))
    return model


def stage_forward(model: nn.Module, layers: tuple[int, int], first: bool, last: bool, inp: torch.Tensor, pos0: int,
                  cache) -> torch.Tensor:
    """One stage on one micro-batch: token ids (B, T) on the first stage, hidden states (B, T, D) on the
    others; returns hidden states (B, T, D), or the last position's logits (B, V) on the last stage."""
    T = inp.shape[1]
    pos_T = torch.arange(pos0, pos0 + T, device=inp.device)
    x_BTD = model.embed(inp, pos_T) if first else inp
    for i in range(*layers):
        x_BTD = model.model.layers[i](x_BTD, pos_T, pos0, None if cache is None else cache.layers[i])
    if last:
        return model.head(x_BTD[:, -1:])[:, 0]
    return x_BTD


@dataclass(frozen=True)
class StageResult:
    rank: int
    stage: int
    tp_rank: int
    layers: tuple[int, int]
    params: int
    flops: int
    kv_bytes: int
    send_bytes: int | None  # one micro-batch's hidden state sent on (None: the last stage)
    compute_samples_s: tuple[float, ...]  # per micro-batch, receive to send
    iteration_samples_s: tuple[float, ...]  # the last stage: between the ends of successive iterations
    send_samples_s: tuple[float, ...]  # one way to the next stage (half a ping-pong round trip)
    logits: list | None  # the last stage: the last position's logits of a short prompt (tests)
    kernels: int = 0  # aten ops a micro-batch's compute dispatches (timing.count_kernels), the micro-batches' most


def rank_main(rank: int, world: int, init: str, spec: ModelSpec, tp: int, dtype_name: str, device_type: str,
              batch: int, context: int, steps: int, warmup: int, seed: int, threads: int | None, want_logits: bool):
    from .cache import KVCache
    from .model import parameter_count
    from .parallel import Collectives, attach_collectives, gather_ranks, gather_vocab, init_rank, shard_spec
    from .timing import count_flops, count_kernels

    device = init_rank(rank, world, init, device_type, threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    pp = world // tp
    stage, t = divmod(rank, tp)  # ranks numbered stage by stage, as analysis.parallel places GPUs
    plan = layout_plan(spec, Layout(tp=tp, pp=pp))
    a, b = plan.stages[stage]
    first, last = stage == 0, stage == pp - 1
    # every rank creates every group, in the same order
    tp_groups = [dist.new_group(list(range(s * tp, (s + 1) * tp))) for s in range(pp)] if tp > 1 else [None] * pp
    mine = tp_groups[stage]
    # the tokens fed back travel on their own group: with pp 2 they go between the same two ranks as the
    # hidden states, and NCCL runs one pair's point-to-point calls in order on one stream
    back = dist.new_group(list(range(world)))
    model = build_stage(spec, plan, stage, dtype=dtype, device=device, seed=seed, tp=tp, tp_rank=t)
    sspec = shard_spec(spec, tp)
    rec = Collectives(device=device)
    if tp > 1:
        attach_collectives(model, sspec, tp, t, rec, group=mine, layers=range(a, b), embedding=first, logits=False)
    params = parameter_count(model)
    sizes = microbatch_sizes(batch, pp)
    caches = [KVCache(sspec, n, context + 1, dtype, device, only=range(a, b)) for n in sizes]
    for j, c in enumerate(caches):
        c.fill_random_(seed + 7919 * j)
    D = spec.hidden_size
    Dt = D // tp  # the slice of the hidden state each tensor-parallel rank sends on
    g = torch.Generator(device="cpu").manual_seed(seed)
    tokens = torch.randint(0, spec.vocab_size, (batch, 1), generator=g).to(device)
    toks = [x.clone() for x in tokens.split(sizes)]
    pending: list = []
    prev, nxt = rank - tp, rank + tp

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def isend(x: torch.Tensor, dst: int, group=None) -> None:
        x = x.contiguous()
        pending.append((dist.isend(x, dst, group=group), x))

    def flush() -> None:
        for w, _ in pending:
            w.wait()
        pending.clear()

    def send_hidden(x_BTD: torch.Tensor) -> None:
        isend(x_BTD[..., t * Dt:(t + 1) * Dt], nxt)

    def recv_hidden(n: int, T: int) -> torch.Tensor:
        """This rank's slice from the previous stage, all-gathered over the stage's tensor-parallel ranks."""
        part = torch.empty(n, T, Dt, dtype=dtype, device=device)
        dist.recv(part, src=prev)
        if tp == 1:
            return part
        parts = [torch.empty_like(part) for _ in range(tp)]
        dist.all_gather(parts, part, group=mine)
        return torch.cat(parts, dim=-1)

    def logits_of(x):
        return gather_vocab(x, tp, rec, mine) if tp > 1 else x

    busy: list[float] = []
    ends: list[float] = []

    def compute(j: int, inp: torch.Tensor) -> torch.Tensor:
        """Micro-batch ``j`` through this stage (the timed part): hidden states on, or sampled tokens."""
        out = stage_forward(model, (a, b), first, last, inp, context, caches[j])
        return logits_of(out).argmax(dim=-1, keepdim=True) if last else out

    def iteration(feedback_in: bool, feedback_out: bool, record: bool, kernels: list | None = None) -> None:
        """Every micro-batch through this stage once. ``feedback_in``: stage 0 receives each micro-batch's
        tokens from the last stage first; ``feedback_out``: the last stage sends them back. ``kernels``:
        collects the aten ops each micro-batch's compute dispatches."""
        for j, n in enumerate(sizes):
            if first:
                if feedback_in:
                    dist.recv(toks[j], src=(pp - 1) * tp + t, group=back)
                inp = toks[j]
            else:
                inp = recv_hidden(n, 1)
            t0 = time.perf_counter()
            if kernels is None:
                out = compute(j, inp)
            else:
                held: list = []
                kernels.append(count_kernels(lambda: held.append(compute(j, inp)))[0])
                out = held[0]
            sync()
            if record:
                busy.append(time.perf_counter() - t0)
            if not last:
                send_hidden(out)
            elif feedback_out:
                isend(out, t, group=back)
        if last and record:
            ends.append(time.perf_counter())

    logits = None
    with torch.inference_mode():
        if want_logits:
            prompt = torch.randint(0, spec.vocab_size, (batch, 8), generator=torch.Generator().manual_seed((seed + 1) % 2**64)).to(device)
            inp = prompt if first else recv_hidden(batch, 8)
            out = stage_forward(model, (a, b), first, last, inp, 0, None)
            if last:
                logits = logits_of(out).float().cpu().tolist()
            else:
                send_hidden(out)
                flush()
        dist.barrier()
        flops, _ = count_flops(lambda: iteration(False, False, False))
        flush()
        dist.barrier()
        kernels: list[int] = []  # what the eager compute dispatches, priced at the profile's launch cost
        iteration(False, False, False, kernels)
        flush()
        dist.barrier()
        # the timed run: one continuous loop, tokens fed back, the first `warmup` iterations not kept
        total = warmup + steps + 1
        for k in range(total):
            iteration(k > 0, k < total - 1, k >= warmup)
        flush()
        dist.barrier()
        # the send alone: a ping-pong of one micro-batch's hidden state across each boundary
        pings: list[float] = []
        for s in range(pp - 1):  # each tensor-parallel rank of stage s with its peer of stage s + 1
            dist.barrier()
            if stage in (s, s + 1):
                buf = torch.zeros(sizes[0], 1, Dt, dtype=dtype, device=device)
                for r in range(min(steps, 16) + 2):
                    if stage == s:
                        sync()
                        t0 = time.perf_counter()
                        dist.send(buf, nxt)
                        dist.recv(buf, nxt)
                        sync()
                        if r >= 2:
                            pings.append((time.perf_counter() - t0) / 2)
                    else:
                        dist.recv(buf, prev)
                        dist.send(buf, prev)
        dist.barrier()
    send_bytes = None if last else sizes[0] * Dt * torch.empty((), dtype=dtype).element_size()
    return gather_ranks(StageResult(rank, stage, t, (a, b), params, flops, sum(c.nbytes for c in caches), send_bytes,
                                    tuple(busy), tuple(y - x for x, y in zip(ends, ends[1:])), tuple(pings), logits,
                                    max(kernels)), rank, world)


def median_or_none(xs) -> float | None:
    return statistics.median(xs) if xs else None
