"""Tensor parallelism: how weights, KV cache and a decode step split over ``tp`` GPUs.

Megatron-style sharding, as vLLM and SGLang do it:

- matmul weights, embeddings and lm_head are split ``tp`` ways; norms are replicated;
- attention heads split ``tp`` ways (``num_attention_heads % tp == 0`` is required); KV heads split
  when ``num_key_value_heads % tp == 0``, and are replicated (one per GPU) when ``tp`` is a multiple
  of them; any other ratio is refused;
- MLA's latent cache is not split by head: every rank holds all of it;
- recurrent state splits with the heads of its layer;
- each layer does two all-reduces of the hidden state per token (after attention and after the
  FFN); a ring all-reduce moves ``2·(tp-1)/tp`` times the message per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .errors import OptionError
from .spec import MLA, Attention, GatedDeltaNet, Mamba, ModelSpec
from .trace import Op, OpGroup, Parallel


@dataclass(frozen=True)
class TPPlan:
    tp: int
    kv_divisor: int  # how many ways the attention KV cache splits (1 when it is replicated)
    kv_replication: int  # copies of each KV head across ranks (tp // kv_heads when kv_heads < tp)
    notes: tuple[str, ...]


def tp_plan(spec: ModelSpec, tp: int) -> TPPlan:
    if tp < 1:
        raise OptionError(f"--tp must be >= 1, got {tp}")
    if tp == 1:
        return TPPlan(1, 1, 1, ())
    notes: list[str] = []
    kv_div = tp
    repl = 1
    for i, layer in enumerate(spec.layers):
        m = layer.mixer
        if isinstance(m, Attention):
            if m.num_attention_heads % tp:
                raise OptionError(f"--tp {tp}: {m.num_attention_heads} attention heads do not split {tp} ways "
                                  f"(layer {i}); choose a tp that divides {m.num_attention_heads}")
            kv = m.num_key_value_heads
            if kv % tp == 0:
                pass
            elif tp % kv == 0:
                kv_div = min(kv_div, kv)
                repl = max(repl, tp // kv)
            else:
                raise OptionError(f"--tp {tp}: {kv} KV heads neither split {tp} ways nor replicate evenly "
                                  f"(layer {i}); choose a tp that divides or is a multiple of {kv}")
        elif isinstance(m, MLA):
            if m.num_attention_heads % tp:
                raise OptionError(f"--tp {tp}: {m.num_attention_heads} MLA heads do not split {tp} ways")
            kv_div = 1
        elif isinstance(m, (Mamba, GatedDeltaNet)):
            heads = m.num_heads if isinstance(m, Mamba) else m.num_v_heads
            if heads and heads % tp:
                raise OptionError(f"--tp {tp}: {heads} recurrent heads do not split {tp} ways (layer {i})")
    if repl > 1:
        notes.append(f"--tp {tp} exceeds the KV heads: each KV head is replicated on {repl} GPUs")
    if any(isinstance(layer.mixer, MLA) for layer in spec.layers):
        notes.append("MLA's latent cache is replicated on every tensor-parallel rank")
    return TPPlan(tp, kv_div, repl, tuple(notes))


def allreduce_bytes_per_gpu(spec: ModelSpec, tokens: int, act_bytes: int, tp: int) -> int:
    """Bytes each GPU sends in one step's all-reduces (two per layer, ring algorithm)."""
    if tp == 1:
        return 0
    message = tokens * spec.hidden_size * act_bytes
    per_layer = 2 * message * 2 * (tp - 1) // tp
    return per_layer * spec.num_layers


def shard_op(o: Op, plan: TPPlan) -> Op:
    """The share of ``o`` one rank runs, by the op's ``Parallel`` role (set where the trace builds it):
    FLOPs, weights and the split side of the activations divided by ``tp`` (column: the output;
    row: the input, its output is whole before the all-reduce); attention KV traffic divided by
    how many ways the cache splits; replicated ops (norms, residuals) unchanged."""
    tp = plan.tp
    if tp == 1:
        return o
    if o.parallel == Parallel.COLUMN:
        return replace(o, flops=o.flops // tp, weight_bytes=o.weight_bytes // tp, act_write_bytes=o.act_write_bytes // tp,
                       state_read_bytes=o.state_read_bytes // tp, state_write_bytes=o.state_write_bytes // tp)
    if o.parallel == Parallel.ROW:
        return replace(o, flops=o.flops // tp, weight_bytes=o.weight_bytes // tp, act_read_bytes=o.act_read_bytes // tp,
                       state_read_bytes=o.state_read_bytes // tp, state_write_bytes=o.state_write_bytes // tp)
    if o.parallel == Parallel.HEADS:
        div = plan.kv_divisor
        return replace(o, flops=o.flops // tp, act_read_bytes=o.act_read_bytes // tp,
                       act_write_bytes=o.act_write_bytes // tp, kv_read_bytes=o.kv_read_bytes // div,
                       kv_write_bytes=o.kv_write_bytes // div)
    return o


def shard_ops(ops: list[Op], plan: TPPlan) -> list[Op]:
    """The ops one rank runs (``shard_op`` of each)."""
    return ops if plan.tp == 1 else [shard_op(o, plan) for o in ops]


def shard_groups(groups: list[OpGroup], plan: TPPlan) -> list[OpGroup]:
    """A collapsed step's share on one rank (``shard_op`` of each group's op)."""
    return groups if plan.tp == 1 else [OpGroup(shard_op(g.op, plan), g.layers) for g in groups]
