"""Tensor parallelism for ``planner verify --tp N``: each rank builds only its shard of the decoder from
the ``ModelSpec``, runs it under ``torch.distributed``, and measures its shard and its collectives.

Sharding (Megatron-style, as ``analysis.parallel`` predicts it):

- the shard is the decoder of a *shard spec* (``shard_spec``): attention heads ``H/tp``; KV heads
  ``K/tp``, or one KV head per rank when ``tp`` is a multiple of ``K`` (rank r holds head
  ``r // (tp/K)``: KV heads replicated); MLA heads ``H/tp`` with its latent projections and cache
  whole on every rank; MLP intermediate ``I/tp``; vocabulary ``V/tp``. Its parameters have the
  shard's shapes, so a rank allocates only its share;
- column-parallel linears (q/k/v, gate/up, the LM head, the embedding rows) hold a block of output
  rows; row-parallel ones (o_proj, down_proj) a block of input columns, their outputs summed by an
  all-reduce (a forward hook); a row-parallel bias is kept on rank 0 only (added once);
- MoE layers as engines shard them under TP (vLLM's ``FusedMoE`` without EP): the router replicated,
  every routed expert's gate/up column-parallel (``I/tp`` features: the gate block and the same up
  block, ``slice_gate_up``) and its down row-parallel, the shared expert like a dense MLP; the routed
  and shared partial sums leave the layer in one all-reduce;
- the embedding is vocabulary-parallel: each rank looks up the ids in its rows (zeros elsewhere) and
  an all-reduce sums them; the LM head's logits shards are all-gathered. These two collectives run
  once per step and are not in the analysis' collective term (two all-reduces per layer); they are
  timed and reported apart;
- random weights are drawn exactly as the single-process decoder draws them (same seed, same order,
  one full tensor at a time, then sliced), so a tp run's logits equal the single-process decoder's.

Launch: ``launch`` spawns ``tp`` processes (``torch.multiprocessing``) that rendezvous over TCP on this
host (``init_process_group``; NCCL on CUDA, gloo on CPU). Under ``torchrun`` (``WORLD_SIZE`` set in the
environment) nothing is spawned: each process joins the ``env://`` rendezvous torchrun set up, which
is how multi-node runs work (see the README).
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from dataclasses import dataclass, field, replace

import torch
import torch.distributed as dist
import torch.nn as nn

from planner.analysis.errors import OptionError, RuntimeUnavailableError
from planner.analysis.spec import MLP, ModelSpec, MoE


# ---- the shard spec ------------------------------------------------------------------------------


def check_tp_supported(spec: ModelSpec, tp: int) -> None:
    """Refuse, with one message, what the tensor-parallel runtime does not shard yet."""
    from .model import MIXERS

    if spec.numerics.layer_scalar:  # K = V, shared-KV layers, per-layer inputs, the MoE beside the MLP
        raise RuntimeUnavailableError(f"verify --tp does not shard Gemma 4 ({spec.label}) yet", "use --tp 1")
    if spec.embedding_rows:
        raise RuntimeUnavailableError(f"verify --tp does not shard an embedding of {spec.embedding_rows} rows for a "
                                      f"vocabulary of {spec.vocab_size} yet", "use --tp 1")
    if spec.head_transform:
        raise RuntimeUnavailableError(f"verify --tp does not shard the prediction head before the LM head (ModernBERT "
                                      f"decoder: {spec.label}) yet", "use --tp 1")
    if spec.tie_word_embeddings and spec.lm_head_bias:
        raise RuntimeUnavailableError(f"verify --tp does not shard a tied LM head's own bias (CTRL: {spec.label}) yet",
                                      "use --tp 1")
    if spec.vocab_size % tp:
        raise OptionError(f"--tp {tp}: the vocabulary ({spec.vocab_size}) does not split {tp} ways",
                          "choose a tp that divides the vocabulary size")
    for i, layer in enumerate(spec.layers):
        m, f = layer.mixer, layer.ffn
        if isinstance(f, MoE):
            for what, n in (("routed experts'", f.moe_intermediate_size), ("shared experts'", f.shared_intermediate_size),
                            ("vision experts'", f.vision_intermediate_size)):  # (ERNIE-4.5-VL's; 0 elsewhere)
                if n % tp:
                    raise OptionError(f"--tp {tp}: the {what} {n} features do not split {tp} ways (layer {i})")
        if isinstance(f, MLP) and f.intermediate_size % tp:
            raise OptionError(f"--tp {tp}: the MLP's {f.intermediate_size} features do not split {tp} ways (layer {i})")
        if m is not None:  # what the mixer kind's module shards (runtime.model.MIXERS)
            run = MIXERS.get(m.kind)
            if run is None:
                raise RuntimeUnavailableError(f"verify --tp does not shard {m.title} layers (layer {i})", "use --tp 1")
            run.module.check_tp(m, i)
        if (isinstance(f, MLP) and f.inner_norm) or getattr(m, "o_norm", False):
            raise RuntimeUnavailableError(f"verify --tp: BitNet's sub-layer norms over split features (layer {i}) need "
                                          "a cross-rank reduction the runtime does not do", "use --tp 1")
        if (isinstance(f, MLP) and f.fused_gate_up) or (isinstance(f, MoE) and f.shared_fused_gate_up):
            raise RuntimeUnavailableError(f"verify --tp does not shard fused gate/up projections yet (layer {i})",
                                          "use --tp 1")


def shard_spec(spec: ModelSpec, tp: int) -> ModelSpec:
    """The spec of one rank's shard (see the module doc); the same for every rank."""
    if tp == 1:
        return spec
    layers = []
    for layer in spec.layers:
        m, f = layer.mixer, layer.ffn
        if m is not None:
            m = m.tp_shard(tp)  # the mixer's own share (analysis.mixers)
        if isinstance(f, MLP):
            f = replace(f, intermediate_size=f.intermediate_size // tp)
        elif isinstance(f, MoE):  # every expert (and the shared one) split tp ways; the router whole
            f = replace(f, moe_intermediate_size=f.moe_intermediate_size // tp,
                        shared_intermediate_size=f.shared_intermediate_size // tp,
                        vision_intermediate_size=f.vision_intermediate_size // tp)
        layers.append(replace(layer, mixer=m, ffn=f))
    return replace(spec, layers=tuple(layers), vocab_size=spec.vocab_size // tp)


# ---- weights: the single-process draw, sliced ----------------------------------------------------


def _block(full: int, part: int, index: int) -> slice:
    return slice(index * part, (index + 1) * part)


@torch.no_grad()
def init_shard_random_(shard: nn.Module, full: nn.Module, spec: ModelSpec, tp: int, rank: int, seed: int,
                       std: float = 0.02) -> None:
    """Fill ``shard``'s parameters with its slices of the weights ``init_random_`` would give ``full``
    (a meta-device model of the whole spec: shapes and order only). A parameter ``shard`` does not
    have (another pipeline stage's) is still drawn, so that the draws after it stay the same."""
    from .model import HeadLayerNorm, LayerNorm, RMSNorm, unique_parameters

    device = next(shard.parameters()).device
    g = torch.Generator(device=device).manual_seed(seed)
    kv_index = {}  # id of a full k/v projection -> which KV-head block this rank holds
    for i, layer in enumerate(spec.layers):
        m = layer.mixer
        if m is None or not m.tp_kv_modules:  # the projections whose output is the KV heads (attention's k/v)
            continue
        _, repl = m.tp_kv_split(tp, i)
        mixer = getattr(full.model.layers[i], m.module)
        for name in m.tp_kv_modules:
            mod = getattr(mixer, name, None)  # (none in a fused QKV projection: refused under tp > 1)
            if mod is None:
                continue
            kv_index[id(mod.weight)] = rank // repl
            if mod.bias is not None:
                kv_index[id(mod.bias)] = rank // repl
    shard_params = dict(unique_parameters(shard))
    for name, p in unique_parameters(full):
        mod_name = name.rsplit(".", 1)[0]
        mod = full.get_submodule(mod_name) if mod_name else full
        target = shard_params.get(name)
        if target is None and isinstance(mod, (RMSNorm, LayerNorm, HeadLayerNorm)):
            continue
        if target is None:  # not on this rank: drawn for the generator's sake only
            torch.empty(p.shape, dtype=p.dtype, device=device).normal_(0.0, std, generator=g)
            continue
        if isinstance(mod, (RMSNorm, LayerNorm, HeadLayerNorm)):
            if name.endswith(".bias"):
                target.zero_()
            else:
                target.fill_(1.0 - getattr(mod, "offset", 0.0))
            continue
        whole = torch.empty(p.shape, dtype=target.dtype, device=device).normal_(0.0, std, generator=g)
        if name.endswith((".experts.gate_up_proj", ".experts.gate_up_proj_bias")) and mod.m.gated:
            target.copy_(slice_gate_up(whole, tuple(target.shape), rank))
        else:
            target.copy_(slice_for(whole, tuple(target.shape), kv_index.get(id(p), rank)))
        del whole


def slice_for(whole: torch.Tensor, shape: tuple[int, ...], index: int) -> torch.Tensor:
    """The block ``index`` of ``whole`` along the one dimension where ``shape`` is smaller (itself when
    the shapes agree: a replicated tensor)."""
    if tuple(whole.shape) == shape:
        return whole
    dims = [d for d, (a, b) in enumerate(zip(whole.shape, shape)) if a != b]
    if len(dims) != 1 or whole.shape[dims[0]] % shape[dims[0]]:
        raise RuntimeUnavailableError(f"cannot shard a {tuple(whole.shape)} tensor into {shape}")
    d = dims[0]
    return whole.narrow(d, index * shape[d], shape[d])


def slice_gate_up(whole: torch.Tensor, shape: tuple[int, ...], index: int) -> torch.Tensor:
    """Rank ``index``'s share of stacked experts' ``gate_up_proj`` (E, 2I, D) (or its bias (E, 2I)),
    whose gate rows come first: block ``index`` of the gate rows, then the same block of the up rows
    (each expert column-parallel, as vLLM's ``FusedMoE`` loads ``w13``)."""
    if tuple(whole.shape) == shape:
        return whole
    part = shape[1] // 2
    gate, up = whole.chunk(2, dim=1)
    return torch.cat((gate.narrow(1, index * part, part), up.narrow(1, index * part, part)), dim=1)


# ---- collectives, hooked into the shard ----------------------------------------------------------


@dataclass
class Collectives:
    """Every collective a rank ran while ``recording``: (kind, bytes, seconds) each."""

    recording: bool = False
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    calls: list = field(default_factory=list)

    def run(self, kind: str, fn, nbytes: int) -> None:
        if not self.recording:
            fn()
            return
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        fn()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.calls.append((kind, nbytes, time.perf_counter() - t0))


LAYER_AR = "all-reduce (layers)"
EMBED_AR = "all-reduce (embedding)"
LOGITS_AG = "all-gather (logits)"


def attach_collectives(model: nn.Module, spec: ModelSpec, tp: int, rank: int, rec: Collectives, *, group=None,
                       layers: range | None = None, embedding: bool = True, logits: bool = True) -> None:
    """Forward hooks on a shard (``spec`` is the shard spec): all-reduce after each row-parallel linear,
    the vocabulary-parallel embedding, the logits all-gather; a row-parallel bias stays on rank 0 only.
    ``rank``: the tensor-parallel rank in ``group`` (None: every process). A pipeline stage
    (``runtime.pipeline``) hooks only its ``layers``, its embedding when it has one, and gathers its
    logits itself (``logits=False``)."""
    def all_reduce_out(kind):
        def hook(mod, args, out):
            rec.run(kind, lambda: dist.all_reduce(out, group=group), out.numel() * out.element_size())
            return out
        return hook

    for i, layer in enumerate(spec.layers):
        if layers is not None and i not in layers:
            continue
        block = model.model.layers[i]
        rows = []
        if layer.mixer is not None:
            rows.append(getattr(block, layer.mixer.module).o_proj)  # (attention and MLA: the kinds --tp shards)
        if isinstance(layer.ffn, MLP):
            rows.append(block.mlp.down_proj)
        for lin in rows:
            if lin.bias is not None and rank != 0:
                with torch.no_grad():
                    lin.bias.zero_()
            lin.register_forward_hook(all_reduce_out(LAYER_AR))
        if isinstance(layer.ffn, MoE):
            # each rank's routed experts and shared expert give partial sums: one all-reduce of the MoE's
            # output (vLLM's FusedMoE reduces once); row-parallel biases added on rank 0 only
            moe = block.mlp
            if rank != 0:
                with torch.no_grad():
                    if moe.experts.down_proj_bias is not None:
                        moe.experts.down_proj_bias.zero_()
                    shared = getattr(moe, "shared_expert", None)
                    if shared is not None and shared.down_proj.bias is not None:
                        shared.down_proj.bias.zero_()
            moe.register_forward_hook(all_reduce_out(LAYER_AR))

    if embedding:
        attach_vocab_parallel_embedding(model.model.embed_tokens, spec, rank, rec, group)
    if not logits:
        return

    def gather_logits(mod, args, out):
        return gather_vocab(out, tp, rec, group)

    model.register_forward_hook(gather_logits)


def gather_vocab(out: torch.Tensor, tp: int, rec: Collectives, group=None) -> torch.Tensor:
    """The whole vocabulary's logits from each rank's shard (an all-gather over the last dimension)."""
    parts = [torch.empty_like(out) for _ in range(tp)]
    rec.run(LOGITS_AG, lambda: dist.all_gather(parts, out.contiguous(), group=group),
            out.numel() * out.element_size() * (tp - 1))
    return torch.cat(parts, dim=-1)


def attach_vocab_parallel_embedding(emb: nn.Module, spec: ModelSpec, rank: int, rec: Collectives, group=None) -> None:
    """Each rank looks up the ids in its rows of the vocabulary (zeros elsewhere); an all-reduce sums them."""
    part = spec.vocab_size  # the shard's rows
    start = rank * part

    def emb_pre(mod, args):
        ids = args[0]
        mod._tp_mask = (ids < start) | (ids >= start + part)
        return ((ids - start).clamp(0, part - 1),)

    def emb_post(mod, args, out):
        out = out.masked_fill(mod._tp_mask[..., None], 0)
        rec.run(EMBED_AR, lambda: dist.all_reduce(out, group=group), out.numel() * out.element_size())
        return out

    emb.register_forward_pre_hook(emb_pre)
    emb.register_forward_hook(emb_post)


# ---- launching -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def under_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


@dataclass(frozen=True)
class RankSetup:
    """What a multi-rank verify (``--tp``, ``--pp``) settles before it starts its ranks."""

    device_type: str
    dtype_name: str
    hw: object  # the hardware profile of the prediction
    hw_reason: str  # why that profile
    threads: int | None  # CPU threads per rank (None: the cores shared out)

    @property
    def backend(self) -> str:
        return "nccl" if self.device_type == "cuda" else "gloo"


def rank_setup(spec: ModelSpec, opts, world: int, *, option: str, needs: str, weights_note: str) -> RankSetup:
    """The device, dtype, profile and threads of a ``world``-rank verify run of ``spec`` under
    ``opts`` (``runtime.verify.VerifyOptions``), or one error: CUDA asked for but absent, fewer GPUs
    than ranks on one host (torchrun can spread them over nodes), ``--weights`` (the ranks draw seeded
    random weights). ``option``: the flag the hints name (``--tp``, ``--pp``); ``needs``: the flags as
    the GPU-count error quotes them; ``weights_note``: what the ranks do not do with a checkpoint yet."""
    from .calibrate import device_name, total_memory_bytes
    from .verify import choose_profile, default_dtype, profile_threads

    dev_type = opts.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev_type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeUnavailableError(f"--device cuda: CUDA is not available to torch {torch.__version__}",
                                          "use --device cpu")
        if not under_torchrun() and torch.cuda.device_count() < world:
            raise RuntimeUnavailableError(f"{needs} needs {world} GPUs; this machine has {torch.cuda.device_count()}",
                                          f"lower {option}, or run under torchrun across nodes (see the README)")
    if opts.weights:
        raise RuntimeUnavailableError(f"verify {option} runs seeded random weights; --weights is not "
                                      f"{weights_note} yet", f"drop --weights, or use {option} 1")
    dtype_name = opts.dtype or default_dtype(spec, dev_type)
    if dev_type == "cpu" and not under_torchrun():  # the spawned ranks share this host's memory
        host_memory_guard(spec, dtype_name, opts.batch, opts.context, world)
    device = torch.device(dev_type)
    hw, hw_reason = choose_profile(opts.hardware, dev_type, device_name(device), total_memory_bytes(device))
    threads = opts.threads or (profile_threads(hw) if dev_type == "cpu" else None)
    return RankSetup(dev_type, dtype_name, hw, hw_reason, threads)


def host_memory_guard(spec: ModelSpec, dtype_name: str, batch: int, context: int, world: int) -> None:
    """``runtime.verify.memory_guard`` for ``world`` CPU ranks on this host, before any of them allocates: their
    shards add up to the whole model and KV cache; each rank also draws whole tensors one at a time
    (``init_shard_random_``) and needs its own workspace."""
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    from .calibrate import free_memory_bytes
    from .verify import memory_guard, workspace_bytes

    fmt, _ = weight_format(spec, dtype_name)
    kvc = kv_cache(spec, fmt.act, fmt.act)
    ops = step_ops(spec, fmt, fmt.act, batch=batch, new_tokens=1, cached_tokens=context)
    largest = max((fmt.tensor_bytes(t) for t in spec.tensors()), default=0)
    memory_guard(weights_bytes=fmt.bytes_of(spec.tensors()) + world * largest,
                 kv_bytes_at=kvc.seq_bytes, batch=batch,
                 context=context, workspace=world * workspace_bytes(ops, batch, spec.vocab_size, fmt.act.bits // 8),
                 free_bytes=free_memory_bytes(torch.device("cpu")), device="cpu")


def launch(fn, tp: int, args: tuple, *, timeout_s: float = 600.0, flag: str = "--tp", progress=None) -> list:
    """Run ``fn(rank, tp, init_method, *args)`` on ``tp`` ranks and return rank 0's value (a list of the
    ranks' results, ``gather_ranks``). Spawned here over a local TCP rendezvous, or, under torchrun,
    this process is one rank of the ``env://`` rendezvous (every rank runs the command; rank 0 returns
    the results, the others None). A rank's ``PlannerError`` is raised here as itself, any other
    failure as one ``RuntimeUnavailableError``. ``progress``: told when the ranks start and finish."""
    progress = progress or (lambda *a: None)
    progress("ranks", 0, 1)
    out = _launch(fn, tp, args, timeout_s=timeout_s, flag=flag)
    progress("ranks", 1, 1)
    return out


def _launch(fn, tp: int, args: tuple, *, timeout_s: float, flag: str) -> list:
    import torch.multiprocessing as mp

    if under_torchrun():
        world = int(os.environ["WORLD_SIZE"])
        if world != tp:
            raise OptionError(f"{flag} {tp} but torchrun started {world} processes", f"pass {flag} {world}")
        return fn(int(os.environ["RANK"]), tp, "env://", *args)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    init = f"tcp://127.0.0.1:{free_port()}"
    procs = [ctx.Process(target=_child, args=(fn, r, tp, init, args, queue), daemon=True) for r in range(tp)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    result, error = None, None
    while True:
        if not queue.empty():
            kind, value = queue.get()
            if kind == "ok":
                result = value
            else:
                error = error or value
            if result is not None or error is not None:
                break
        if all(not p.is_alive() for p in procs) and queue.empty():
            codes = [p.exitcode for p in procs]
            error = error or f"the ranks exited without a result (exit codes {codes})"
            break
        if time.monotonic() > deadline:
            error = f"the {tp} ranks did not finish within {timeout_s:.0f} s"
            break
        time.sleep(0.05)
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()
            p.join(timeout=5)
    if error is not None:
        if isinstance(error, tuple):  # a PlannerError raised on a rank: (class name, message, hint)
            from planner.analysis import errors

            cls = getattr(errors, error[0], errors.PlannerError)
            raise cls(error[1], error[2]) if error[2] else cls(error[1])
        raise RuntimeUnavailableError(f"{'tensor' if flag == '--tp' else 'pipeline'}-parallel run failed: {error}")
    return result


def _child(fn, rank, tp, init, args, queue) -> None:
    from planner.analysis.errors import PlannerError

    try:
        out = fn(rank, tp, init, *args)
        if rank == 0:
            queue.put(("ok", out))
    except PlannerError as exc:
        queue.put(("error", (type(exc).__name__, str(getattr(exc, "message", exc)), getattr(exc, "hint", None))))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        queue.put(("error", f"rank {rank}: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"))
    finally:
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001
                pass


# ---- one rank's run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankResult:
    rank: int
    params: int
    flops: int
    kv_bytes: int
    step_samples_s: tuple[float, ...]
    collectives: tuple[tuple[str, int, float], ...]  # (kind, bytes, seconds) over the recorded steps
    recorded_steps: int
    logits: list | None  # rank 0, tests: the last position's logits of a short prompt
    kernels: int = 0  # aten ops one step dispatches on this rank (timing.count_kernels), collectives included

    @property
    def step_s(self) -> float:
        return statistics.median(self.step_samples_s)


def gather_ranks(result, rank: int, world: int) -> list | None:
    """Every rank's ``result`` on rank 0, as a list by rank (None on the other ranks), then a barrier so
    that no rank leaves the group while another still gathers: the value a rank function returns to
    ``launch``."""
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(result, gathered, dst=0)
    dist.barrier()
    return gathered


def init_rank(rank: int, world: int, init: str, device_type: str, threads: int | None):
    """Join the process group (NCCL on CUDA, gloo on CPU) and return this rank's device; on CPU each
    rank gets ``threads`` threads (default: the cores shared out)."""
    from datetime import timedelta

    if device_type == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
        torch.set_num_threads(threads or max(1, (os.cpu_count() or 1) // world))
    if init == "env://":
        dist.init_process_group(backend, timeout=timedelta(seconds=300))
    else:
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world, timeout=timedelta(seconds=300))
    return device


def rank_main(rank: int, tp: int, init: str, spec: ModelSpec, dtype_name: str, device_type: str, batch: int,
              context: int, steps: int, warmup: int, seed: int, threads: int | None, want_logits: bool):
    from .cache import KVCache
    from .model import build_decoder, parameter_count
    from .timing import count_flops, count_kernels

    device = init_rank(rank, tp, init, device_type, threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    sspec = shard_spec(spec, tp)
    model = build_decoder(sspec, dtype=dtype, device=device, seed=None)
    with torch.device("meta"):
        from .model import Decoder

        full = Decoder(spec, dtype=dtype)
    init_shard_random_(model, full, spec, tp, rank, seed)
    del full
    rec = Collectives(device=device)
    attach_collectives(model, sspec, tp, rank, rec)
    params = parameter_count(model)
    cache = KVCache(sspec, batch, context + 1, dtype, device)
    cache.fill_random_(seed)  # same values on every rank: the shard's KV heads are random either way
    g = torch.Generator(device="cpu").manual_seed(seed)
    tokens = torch.randint(0, spec.vocab_size, (batch, 1), generator=g).to(device)

    def step():
        return model.decode(tokens, context, cache)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()

    logits = None
    with torch.inference_mode():
        if want_logits:
            prompt = torch.randint(0, spec.vocab_size, (batch, 8), generator=torch.Generator().manual_seed((seed + 1) % 2**64)).to(device)
            logits = model(prompt, 0, None).float().cpu().tolist()
        flops, _ = count_flops(step)
        kernels, _ = count_kernels(step)
        for _ in range(warmup):
            step()
        samples = []
        for _ in range(steps):
            sync()
            t0 = time.perf_counter()
            step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            samples.append(time.perf_counter() - t0)
        rec.recording = True
        rec_steps = min(steps, 8)
        for _ in range(rec_steps):
            sync()
            step()
        rec.recording = False
    return gather_ranks(RankResult(rank, params, flops, cache.nbytes, tuple(samples), tuple(rec.calls), rec_steps,
                                   logits, kernels), rank, tp)
