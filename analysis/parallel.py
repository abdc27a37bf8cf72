"""Tensor parallelism: how weights, KV cache and a decode step split over ``tp`` GPUs.

Megatron-style sharding, as vLLM and SGLang do it:

- matmul weights, embeddings and lm_head are split ``tp`` ways; norms are replicated;
- attention heads split ``tp`` ways (``num_attention_heads % tp == 0`` is required); KV heads split
  when ``num_key_value_heads % tp == 0``, and are replicated (one per GPU) when ``tp`` is a multiple
  of them; any other ratio is refused;
- MLA's latent cache is not split by head: every rank holds all of it, and computes the latent
  projections (``q_a_proj``, ``kv_a_proj_with_mqa``) whole;
- recurrent state splits with the heads of its layer;
- with replicated KV heads each rank computes a whole KV head: the k/v projections split ``kv_divisor``
  ways, not ``tp`` (``KV_PROJECTIONS``);
- each layer does two all-reduces of the hidden state per token (after attention and after the
  FFN); a ring all-reduce moves ``2·(tp-1)/tp`` times the message per GPU.

Each mixer states its own split and limits (``MixerSpec.tp_kv_split``, ``tp_kv_modules``,
``tp_replicated_modules`` in ``analysis.mixers``); the ops carry their role from the trace.
"""

from __future__ import annotations

from dataclasses import replace

from .records import frozen
from .errors import OptionError
from .mixers import MIXER_TYPES
from .spec import NGRAM_EMBEDDINGS, ModelSpec
from .trace import Op, OpGroup, OpKind, Parallel


@frozen
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
    mixer_notes: dict[str, None] = {}
    for i, layer in enumerate(spec.layers):
        m = layer.mixer
        if m is None:
            continue
        div, copies = m.tp_kv_split(tp, i)  # each mixer's own split, or its refusal (analysis.mixers)
        kv_div, repl = min(kv_div, div), max(repl, copies)
        if m.tp_note:
            mixer_notes[m.tp_note] = None
    if repl > 1:
        notes.append(f"--tp {tp} exceeds the KV heads: each KV head is replicated on {repl} GPUs")
    notes.extend(mixer_notes)
    return TPPlan(tp, kv_div, repl, tuple(notes))


def allreduces_per_pass(spec: ModelSpec) -> int:
    """All-reduces one forward pass of the decoder layers runs under tensor parallelism: one after each sub-block
    that ends in a row-parallel projection (the mixer's output projection, the FFN's or MoE's down projection),
    so two per standard layer; a hybrid's mixer-only or MLP-only layer runs one, a NAS model's no-op block none,
    and a mixer its ``tp_allreduces`` (RWKV-4's two: time mix and channel mix)."""
    return sum((layer.mixer.tp_allreduces if layer.mixer is not None else 0) + (layer.ffn is not None)
               for layer in spec.layers)


def allreduce_bytes_per_gpu(spec: ModelSpec, tokens: int, act_bytes: int, tp: int) -> int:
    """Bytes each GPU sends in one step's all-reduces (``allreduces_per_pass`` of them, ring algorithm)."""
    if tp == 1:
        return 0
    message = tokens * spec.hidden_size * act_bytes
    return allreduces_per_pass(spec) * (message * 2 * (tp - 1) // tp)


#: The attention projections whose output is the KV heads: when ``tp`` exceeds the KV heads, each rank
#: computes a whole KV head (the heads are replicated), so these split ``kv_divisor`` ways, not ``tp``
#: (each mixer's ``tp_kv_modules``: attention's k_proj and v_proj).
KV_PROJECTIONS = tuple(dict.fromkeys(n for cls in MIXER_TYPES for n in cls.tp_kv_modules))
#: Projections whole on every rank (each mixer's ``tp_replicated_modules``: MLA's latent projections,
#: vLLM's ReplicatedLinear, as the trace marks them).
REPLICATED_PROJECTIONS = tuple(dict.fromkeys(n for cls in MIXER_TYPES for n in cls.tp_replicated_modules))


#: Row-parallel projections: each rank holds the whole bias and only rank 0 adds it (vLLM's
#: ``RowParallelLinear``: ``bias_ = None if self.tp_rank > 0``); a routed expert's down bias alike.
ROW_PROJECTIONS = ("o_proj", "down_proj")


def replicated_tensor(t) -> bool:
    """Whether every tensor-parallel rank holds ``t`` whole: norms, MLA's latent projections, the MoE
    router (and Qwen's one-output shared-expert gate), the bias of a row-parallel projection."""
    module = t.name.rsplit(".", 2)[-2] if t.name.count(".") >= 2 else ""
    if t.kind in ("norm", "router") or module in REPLICATED_PROJECTIONS or module in ("router", "act_fn"):
        return True
    if module in ("fc1_latent_proj", "fc2_latent_proj"):  # Nemotron 3's latent MoE projections: vLLM's ReplicatedLinear
        return True
    # (JetMoE's MoE output bias, ``mlp.bias``, is added after the experts' reduction: whole on every rank)
    return t.kind == "bias" and (module in ROW_PROJECTIONS or t.name.endswith((".experts.down_proj_bias", ".mlp.bias")))


def shard_params(spec: ModelSpec, plan: TPPlan, tensors=None) -> int:
    """Parameters one rank holds: ``replicated_tensor``s whole, k/v projections split ``kv_divisor``
    ways (replicated KV heads), everything else ``tp`` ways (the vision encoder of a multimodal
    wrapper not counted). ``tensors``: count these (a pipeline stage's) instead of the model's."""
    total = 0
    for t in spec.tensors() if tensors is None else tensors:
        if t.kind in ("vision", "audio"):
            continue
        module = t.name.rsplit(".", 2)[-2] if t.name.count(".") >= 2 else ""
        if replicated_tensor(t):
            total += t.numel
        elif plan.kv_divisor < plan.tp and module in KV_PROJECTIONS:
            total += t.numel // plan.kv_divisor
        else:
            total += t.numel // plan.tp
    return total


def shard_op(o: Op, plan: TPPlan) -> Op:
    """The share of ``o`` one rank runs, by the op's ``Parallel`` role (set where the trace builds it):
    FLOPs, weights and the split side of the activations divided by ``tp`` (column: the output;
    row: the input, its output is whole before the all-reduce); attention KV traffic divided by
    how many ways the cache splits; replicated ops (norms, residuals) unchanged."""
    tp = plan.tp
    if tp == 1:
        return o
    if o.parallel == Parallel.COLUMN and o.name in KV_PROJECTIONS and plan.kv_divisor < tp:
        div = plan.kv_divisor  # one whole KV head per rank
        return replace(o, flops=o.flops // div, weight_bytes=o.weight_bytes // div, act_write_bytes=o.act_write_bytes // div)
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


# ==== the parallel layout: TP, PP, EP, attention-DP and DP replicas as one object ==================
#
# A deployment of ``gpus = tp × pp × dp`` GPUs:
#
# - ``dp`` replicas, each a full copy of the model serving its share (1/dp) of the requests;
# - a replica is ``pp`` pipeline stages; stage ``s`` holds a contiguous run of layers (balanced:
#   the first ``L mod pp`` stages take one more), the first stage also the embedding, the last the
#   final norm and lm_head; activations go from stage to stage once per step (a point-to-point send);
# - a stage is ``tp`` GPUs. Inside a stage:
#   - attention (and the dense FFN, embedding and lm_head) runs ``attn_dp`` ways data parallel and
#     ``attn_tp = tp / attn_dp`` ways tensor parallel: each attention-DP rank holds the KV cache of
#     its own sequences only (DeepSeek-style DP attention, SGLang ``--enable-dp-attention``), so a
#     latent MLA cache is no longer replicated on every GPU;
#   - routed experts are split ``ep`` ways (each GPU holds ``E / ep`` experts) and each expert
#     ``tp / ep`` ways tensor parallel, so expert weights per GPU are ``1 / tp`` whatever ``ep``;
#     tokens reach their experts by an all-to-all dispatch and come back by an all-to-all combine
#     (``ep > 1``), or by an all-reduce (``ep = 1``, tensor-parallel experts).
# - the GPUs of a replica are numbered stage by stage; GPU ``i`` sits in node ``i // gpus_per_node``.
#   A collective whose group spans nodes is priced on the network between nodes (its bandwidth and
#   latency), one inside a node on the scale-up fabric (``hardware.comm``).


@frozen
class Layout:
    tp: int = 1  # GPUs per pipeline stage
    pp: int = 1  # pipeline stages per replica
    ep: int = 1  # expert-parallel ways of MoE layers inside a stage (divides tp)
    dp: int = 1  # replicas
    attn_dp: int = 1  # attention data-parallel ways inside a stage (divides tp)

    @property
    def attn_tp(self) -> int:
        return self.tp // self.attn_dp

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def label(self) -> str:
        parts = [f"TP{self.tp}"]
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.attn_dp > 1:
            parts.append(f"ADP{self.attn_dp}")
        if self.dp > 1:
            parts.append(f"DP{self.dp}")
        return " ".join(parts)

    @property
    def family(self) -> str:
        """The layout without its replica count: what a rejection reason is about."""
        return replace(self, dp=1).label

    def to_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "dp": self.dp, "attn_dp": self.attn_dp,
                "attn_tp": self.attn_tp, "gpus": self.gpus, "gpus_per_replica": self.gpus_per_replica,
                "label": self.label}


def batch_shares(batch: int, replicas: int) -> tuple[tuple[int, int], ...]:
    """How ``batch`` sequences spread over ``replicas`` identical replicas as evenly as they go:
    ``(sequences per replica, replicas with that many)`` pairs, the largest share first; replicas
    left without a sequence (``batch < replicas``) are the pair with share 0."""
    if batch < 0 or replicas < 1:
        raise ValueError(f"batch {batch} over {replicas} replicas")
    q, r = divmod(batch, replicas)
    out = []
    if r:
        out.append((q + 1, r))
    if replicas - r:
        out.append((q, replicas - r))
    return tuple(out)


@frozen
class LayoutPlan:
    layout: Layout
    attn: TPPlan  # attention's tensor-parallel split (over attn_tp GPUs)
    stages: tuple[tuple[int, int], ...]  # [first, last) layer of each stage
    gpus_per_node: int
    notes: tuple[str, ...]

    def stage_of(self, layer: int | None, category: str) -> int:
        if layer is None:
            return 0 if category == "embedding" else len(self.stages) - 1
        for s, (a, b) in enumerate(self.stages):
            if a <= layer < b:
                return s
        raise ValueError(f"layer {layer} is in no stage")

    def spans_nodes(self, group: int) -> bool:
        """Whether a group of ``group`` consecutive GPUs (starting on a node boundary) leaves a node."""
        return group > self.gpus_per_node

    def send_crosses_node(self, stage: int) -> bool:
        """Whether the send from ``stage`` to ``stage + 1`` leaves a node."""
        last = (stage + 1) * self.layout.tp - 1
        return last // self.gpus_per_node != (last + 1) // self.gpus_per_node


def _is_moe(spec: ModelSpec) -> bool:
    from .spec import MoE

    return any(isinstance(layer.ffn, MoE) for layer in spec.layers)


def _num_experts(spec: ModelSpec) -> int:
    from .spec import MoE

    return max((layer.ffn.num_experts for layer in spec.layers if isinstance(layer.ffn, MoE)), default=0)


def layout_plan(spec: ModelSpec, layout: Layout, gpus_per_node: int = 1 << 30) -> LayoutPlan:
    """Check ``layout`` against the model and place it; ``OptionError`` says what does not split."""
    lo = layout
    for name in ("tp", "pp", "ep", "dp", "attn_dp"):
        v = getattr(lo, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise OptionError(f"--{name.replace('_', '-')} must be a whole number >= 1, got {v!r}")
    if lo.tp % lo.attn_dp:
        raise OptionError(f"--attn-dp {lo.attn_dp} does not divide --tp {lo.tp}",
                          "attention data parallelism splits the tp GPUs of a stage; choose a divisor of tp")
    if lo.tp % lo.ep:
        raise OptionError(f"--ep {lo.ep} does not divide --tp {lo.tp}",
                          "expert parallelism splits the experts over the tp GPUs of a stage; choose a divisor of tp")
    if lo.ep > 1:
        if not _is_moe(spec):
            raise OptionError(f"--ep {lo.ep}: the model has no mixture-of-experts layers", "use --ep 1")
        e = _num_experts(spec)
        if e % lo.ep:
            raise OptionError(f"--ep {lo.ep}: {e} experts do not split {lo.ep} ways", f"choose an ep that divides {e}")
    n = spec.num_layers
    if lo.pp > n:
        raise OptionError(f"--pp {lo.pp}: more pipeline stages than the model's {n} layers")
    attn = tp_plan(spec, lo.attn_tp)
    q, r = divmod(n, lo.pp)
    stages, start = [], 0
    for s in range(lo.pp):
        size = q + (1 if s < r else 0)
        stages.append((start, start + size))
        start += size
    notes = list(attn.notes)
    if lo.attn_dp > 1:
        notes.append(f"attention data parallel {lo.attn_dp} ways: each rank keeps the KV of its own sequences")
    if r:
        notes.append(f"{n} layers over {lo.pp} stages: the first {r} stage(s) hold {q + 1} layers, the rest {q}")
    return LayoutPlan(lo, attn, tuple(stages), gpus_per_node, tuple(notes))


def stage_tensors(spec: ModelSpec, plan: LayoutPlan):
    """``(stage, tensor, ways)`` for every tensor one GPU of a stage holds a ``1/ways`` share of:
    attention, dense FFN, embedding and lm_head split ``attn_tp`` ways (replicated over attention-DP
    ranks), routed experts ``tp`` ways (``E/ep`` experts of ``1/(tp/ep)`` each), norms whole (1).

    Placement (vLLM's pipeline split, ``vllm/model_executor/models/llama.py``): the embedding (and its
    norm, BLOOM's ``word_embeddings_layernorm``) on the first stage; the final norm and lm_head on the
    last; with tied embeddings and ``pp > 1`` the last stage holds its own copy of the embedding as the
    lm_head (``embed_tokens`` is built ``if is_first_rank or (tie_word_embeddings and is_last_rank)``)."""
    from .spec import MoE

    lo = plan.layout
    last = lo.pp - 1
    for t in spec.embedding_tensors():
        yield 0, t, lo.attn_tp
    for t in spec.input_tensors():  # Gemma 4's per-layer input projection and its norm
        # (LongCat-Flash-Lite's n-gram projections: replicated, vLLM's oe_projection)
        yield 0, t, 1 if t.kind == "norm" or t.name.startswith(NGRAM_EMBEDDINGS) else lo.attn_tp
    emb_norm = spec.embedding_norm.tensors("model.embed_layernorm") if spec.embedding_norm else []
    for t in emb_norm:
        yield 0, t, 1
    proj = spec.projection_tensors()  # OPT's project_in / project_out: replicated (vLLM's ReplicatedLinear)
    for t in proj[:1]:
        yield 0, t, 1
    for i, layer in enumerate(spec.layers):
        s = plan.stage_of(i, "layer")
        for t in layer.stored_tensors(f"model.layers.{i}"):  # a looped pass's weights where they are stored
            if t.kind == "norm":  # (the engine's loaded weights split everything else: hardware.engine.loaded_weights)
                yield s, t, 1
            elif t.kind == "expert" and isinstance(layer.ffn, MoE) and ".mlp." in t.name:  # (not JetMoE's attention experts)
                yield s, t, lo.tp
            else:
                yield s, t, lo.attn_tp
    x = spec.cross_attention
    if x is not None:  # mllama: each cross-attention layer on the stage of the self-attention layer before it
        tensors = x.tensors()
        per = len(tensors) // len(x.layers)
        for k, i in enumerate(x.layers):
            s = plan.stage_of(max(0, i - k - 1), "layer")  # i - k self-attention layers come before it
            for t in tensors[k * per:(k + 1) * per]:
                yield s, t, 1 if t.kind == "norm" else lo.attn_tp
    names = {t.name for t in emb_norm}
    for t in spec.final_norm_tensors():
        if t.name not in names:
            yield last, t, 1
    for t in proj[1:]:
        yield last, t, 1
    for t in spec.head_transform:  # ModernBERT decoder's prediction head: replicated
        yield last, t, 1
    for t in spec.lm_head_tensors():
        yield last, t, lo.attn_tp
    if spec.tie_word_embeddings and last > 0:
        yield last, spec.embedding_tensors()[0], lo.attn_tp


def stage_weights_bytes(spec: ModelSpec, fmt, plan: LayoutPlan, leave: tuple[str, ...] = ()) -> list[int]:
    """Weight bytes on one GPU of each stage (``stage_tensors``; a split tensor's share rounded up), and a
    multimodal wrapper's encoders and projectors (``spec.vision``, less what the engines do not load:
    ``spec.engine_unloaded``, and less the tensors named under ``leave``: prefixes one engine leaves out) on the
    first stage, split ``attn_tp`` ways (norms whole), as the engine's loaded weights
    (``hardware.engine.loaded_weights``) hold them."""
    out = [0] * plan.layout.pp
    for s, t, ways in stage_tensors(spec, plan):
        out[s] += -(-fmt.tensor_bytes(t) // ways)
    for t in spec.vision:
        if not spec.engine_skips(t) and not (leave and t.name.startswith(leave)):
            out[0] += -(-fmt.tensor_bytes(t) // (1 if t.kind == "norm" else plan.layout.attn_tp))
    return out


def stage_params(spec: ModelSpec, plan: LayoutPlan) -> list[int]:
    """Parameters on one GPU of each stage: the stage's tensors (``stage_tensors``), each rank's
    tensor-parallel share as ``shard_params`` counts it (over ``attn_tp`` GPUs; the vision encoder of a
    multimodal wrapper not counted): what ``planner verify --pp`` checks each rank against."""
    per: list[list] = [[] for _ in range(plan.layout.pp)]
    for s, t, _ in stage_tensors(spec, plan):
        per[s].append(t)
    return [shard_params(spec, plan.attn, ts) for ts in per]


def stage_kv_bytes_per_sequence(kv, plan: LayoutPlan, context: int) -> list[int]:
    """KV bytes one sequence of ``context`` cached tokens takes on one GPU of each stage (windowed
    layers capped at their window, as ``KVCache.bytes_per_sequence``; recurrent state apart, in
    ``stage_state_bytes_per_sequence``)."""
    out = [0] * plan.layout.pp
    for lk in kv.layers:
        out[plan.stage_of(lk.layer, "layer")] += (-(-lk.bytes_per_token // plan.attn.kv_divisor) * lk.tokens_cached(context)
                                                  + lk.compressed_bytes(context))  # compressed entries: replicated
    return out


def stage_kv_bytes_per_token(kv, plan: LayoutPlan) -> list[int]:
    """KV bytes one cached token of one sequence takes on the GPU that holds it, per stage (its
    attention-DP rank; split ``kv_divisor`` ways over the attention-TP GPUs, full-context layers only)."""
    out = [0] * plan.layout.pp
    for lk in kv.layers:
        out[plan.stage_of(lk.layer, "layer")] += (-(-lk.bytes_per_token // plan.attn.kv_divisor)
                                                  + lk.pool_bytes_per_token - lk.bytes_per_token)
    return out


def stage_state_bytes_per_sequence(kv, plan: LayoutPlan) -> list[int]:
    out = [0] * plan.layout.pp
    for lk in kv.layers:
        out[plan.stage_of(lk.layer, "layer")] += -(-lk.state_bytes // plan.layout.attn_tp)
    return out


def layout_groups(groups: list[OpGroup], plan: LayoutPlan, stage: int,
                  expert_groups: list[OpGroup] | None = None) -> list[OpGroup]:
    """The collapsed step one GPU of ``stage`` runs; each group keeps the layers that are in the stage.

    ``groups`` is the step of one attention-DP rank (traced at its ``ceil(batch / attn_dp)``
    sequences): every op but the routed experts splits ``attn_tp`` ways by its parallel role
    (``shard_op``); the router is replicated, so each rank routes its own tokens (SGLang and vLLM
    compute the gate on the attention-DP rank, before the dispatch). ``expert_groups`` is the step of
    the whole replica (every attention-DP rank's tokens meet in the experts; the same as ``groups``
    when ``attn_dp == 1``): its routed experts split ``tp`` ways (FLOPs, weights and outputs ``1/tp``),
    and with ``ep > 1`` each GPU multiplies only the rows routed to its ``E / ep`` experts, so it reads
    ``1/ep`` of the routed inputs (without EP every rank reads every routed row)."""
    lo = plan.layout
    a, b = plan.stages[stage]
    expert_plan = TPPlan(lo.tp, 1, 1, ())
    full = groups if expert_groups is None else expert_groups
    if len(full) != len(groups):
        raise ValueError("expert_groups must be the same step as groups at another batch")
    out = []
    for g, gf in zip(groups, full):
        if g.layers:
            layers = tuple(i for i in g.layers if a <= i < b)
            if not layers:
                continue
        else:
            cat = "embedding" if g.op.name == "embed_layernorm" else g.op.category  # runs on the first stage
            if plan.stage_of(None, cat) != stage:
                continue
            layers = ()
        if g.op.kind == OpKind.EXPERTS:
            o = shard_op(gf.op, expert_plan)
            if lo.ep > 1:
                o = replace(o, act_read_bytes=o.act_read_bytes // lo.ep)
        else:
            o = shard_op(g.op, plan.attn)
        out.append(OpGroup(o, layers))
    return out


@frozen
class Collective:
    """One kind of collective a stage runs in a step, ``count`` times."""

    name: str
    kind: str  # all_reduce | all_gather | reduce_scatter | all_to_all | send
    group: int  # GPUs taking part
    bytes_per_gpu: int  # all_reduce: the buffer; all_gather/reduce_scatter: the full gathered buffer;
    #                     all_to_all: what one GPU sends in total; send: the message
    count: int
    inter_node: bool  # priced on the network between nodes

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "group": self.group, "bytes_per_gpu": self.bytes_per_gpu,
                "count": self.count, "inter_node": self.inter_node}


def stage_collectives(spec: ModelSpec, plan: LayoutPlan, stage: int, tokens: int, act_bytes: int) -> list[Collective]:
    """The collectives one stage runs in a step of ``tokens`` tokens (the replica's, all attention-DP
    ranks together; the busiest rank holds ``ceil(tokens / attn_dp)``). Per layer: attention's all-reduce over attn_tp (after o_proj); the FFN's all-reduce
    over attn_tp (dense) or the MoE's exchange over the stage; then the send to the next stage."""
    from .spec import MoE

    lo = plan.layout
    a, b = plan.stages[stage]
    h = spec.hidden_size
    local = -(-tokens // lo.attn_dp)  # tokens one attention-DP rank holds
    cross = plan.spans_nodes(lo.tp)
    mixers = dense = moe = 0
    topk = 0
    for layer in spec.layers[a:b]:
        if layer.mixer is not None:
            mixers += 1
        if isinstance(layer.ffn, MoE):
            moe += 1
            topk = layer.ffn.num_experts_per_tok
        elif layer.ffn is not None:
            dense += 1
    out: list[Collective] = []
    msg = local * h * act_bytes
    if lo.attn_tp > 1 and mixers + dense:
        out.append(Collective("attention/dense all-reduce", "all_reduce", lo.attn_tp, msg, mixers + dense,
                              plan.spans_nodes(lo.attn_tp)))
    if moe and lo.tp > 1:
        if lo.ep > 1:
            # each GPU dispatches its 1/tp share of the tokens to their top-k experts and gets them back
            per_gpu = -(-tokens // lo.tp) * topk * h * act_bytes
            out.append(Collective("MoE all-to-all dispatch", "all_to_all", lo.tp, per_gpu, moe, cross))
            out.append(Collective("MoE all-to-all combine", "all_to_all", lo.tp, per_gpu, moe, cross))
        elif lo.attn_dp > 1:
            full = tokens * h * act_bytes
            out.append(Collective("MoE all-gather", "all_gather", lo.tp, full, moe, cross))
            out.append(Collective("MoE reduce-scatter", "reduce_scatter", lo.tp, full, moe, cross))
        else:
            out.append(Collective("MoE all-reduce", "all_reduce", lo.tp, tokens * h * act_bytes, moe, cross))
    if stage < lo.pp - 1:
        # each GPU sends its 1/attn_tp slice of its rank's hidden states (the receiver all-gathers them)
        out.append(Collective("pipeline send", "send", 2, -(-local * h * act_bytes // lo.attn_tp), 1,
                              plan.send_crosses_node(stage)))
    return out
