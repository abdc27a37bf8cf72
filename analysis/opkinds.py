"""The kinds of trace ops and their tensor-parallel roles (a leaf module: ``analysis.trace`` builds the
ops, and each mixer in ``analysis.mixers`` sets the roles of the ops it builds)."""

from __future__ import annotations

from enum import StrEnum


class OpKind(StrEnum):
    EMBEDDING = "embedding"
    NORM = "norm"
    MATMUL = "matmul"
    ROPE = "rope"
    KV_APPEND = "kv_append"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    ROUTER = "router"
    EXPERTS = "experts"
    CONV = "conv"
    SCAN = "scan"
    SAMPLING = "sampling"


class OpCategory(StrEnum):
    """What part of the model an op belongs to (the trace's and the plots' grouping)."""

    ATTENTION = "attention"
    FFN = "ffn"
    LM_HEAD = "lm_head"
    NORM = "norm"
    EMBEDDING = "embedding"
    SSM = "ssm"
    OTHER = "other"


class Parallel(StrEnum):
    """How an op splits over tensor-parallel ranks (Megatron-style, as vLLM and SGLang shard):

    - ``column``: the weight's output features split; each rank reads the whole input and writes its
      share of the output (q/k/v, gate/up, in_proj, the embedding and lm_head, conv and scan
      channels, routed experts);
    - ``row``: the weight's input features split; each rank reads its share of the input and writes
      a whole partial output, summed by the all-reduce (o_proj, down_proj, out_proj);
    - ``heads``: attention over each rank's heads; KV traffic splits with the KV heads;
    - ``replicated``: every rank does all of it (norms, residual adds, sampling, the MoE router and
      Qwen's one-output shared-expert gate: vLLM's ``ReplicatedLinear``)."""

    COLUMN = "column"
    ROW = "row"
    HEADS = "heads"
    REPLICATED = "replicated"


#: The role an op has unless its builder says otherwise.
DEFAULT_PARALLEL = {
    OpKind.MATMUL: Parallel.COLUMN, OpKind.EXPERTS: Parallel.COLUMN, OpKind.ROUTER: Parallel.REPLICATED,
    OpKind.CONV: Parallel.COLUMN, OpKind.SCAN: Parallel.COLUMN, OpKind.EMBEDDING: Parallel.COLUMN,
    OpKind.ATTENTION: Parallel.HEADS, OpKind.KV_APPEND: Parallel.HEADS, OpKind.ROPE: Parallel.HEADS,
}
