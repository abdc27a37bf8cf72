"""Exact parameter counts, by component, from a ``ModelSpec``'s tensor list.

Conventions (those of ``transformers`` built on the meta device, and of ``expected_params.json``):
tied embeddings are counted once; buffers (rotary tables, DeepSeek's ``e_score_correction_bias``)
are not parameters; DeepSeek's multi-token-prediction layers are reported apart, not in ``total``.
``active`` is what one token uses: embedding, lm_head, every dense part, the router, shared experts
and ``num_experts_per_tok`` routed experts of each MoE layer. OPT's ``project_in`` is counted with
the embedding and its ``project_out`` with the LM head (the linears that adapt their width).
"""

from __future__ import annotations

from collections import Counter

from .records import frozen
from .spec import NGRAM_EMBEDDINGS, Layer, ModelSpec, MoE, Tensor


def category(t: Tensor) -> str:
    """attention | mlp | experts | shared_experts | router | norm | embedding | lm_head | ssm | vision | audio."""
    if t.kind in ("embedding", "lm_head", "vision", "audio"):
        return t.kind
    if t.name.startswith(NGRAM_EMBEDDINGS):  # LongCat-Flash-Lite's n-gram projections: part of the embedding
        return "embedding"
    if t.kind == "norm":
        return "norm"
    if t.kind == "router":
        return "router"
    if ".mlp.experts." in t.name or ".mlp.vision_experts." in t.name:  # (ERNIE-4.5-VL's vision experts too)
        return "experts"
    if ".mlp.shared_expert." in t.name:
        return "shared_experts"
    # Gemma 4's per-layer input gate and projection; Gemma 3n's AltUp (per layer and model-level); Voxtral Realtime's
    # ada_rms_norm (it scales the FFN's input); Higgs Audio v2's audio_mlp (the DualFFN's audio path)
    if ".mlp." in t.name or ".per_layer_" in t.name or ".altup" in t.name or ".ada_rms_norm." in t.name \
            or ".audio_mlp." in t.name:
        return "mlp"
    if ".mixer." in t.name:
        return "ssm"
    return "attention"


@frozen
class LayerParams:
    kind: str
    count: int  # how many layers have exactly this shape
    first_layer: int
    attention: int
    mlp: int  # dense MLP, or all routed + shared experts + router of a MoE layer
    norm: int
    total: int
    active: int


@frozen
class ParamCounts:
    total: int
    active: int
    embedding: int
    lm_head: int
    attention: int
    mlp: int
    experts: int
    shared_experts: int
    router: int
    norm: int
    ssm: int
    mtp: int
    per_layer: tuple[LayerParams, ...]
    vision: int = 0
    audio: int = 0
    cross_attention: int = 0  # mllama's cross-attention layers (also in attention, mlp and norm)

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding - self.lm_head

    @property
    def non_embedding_active(self) -> int:
        return self.active - self.embedding - self.lm_head

    def to_dict(self) -> dict:
        return {
            "total": self.total,
            "active": self.active,
            "embedding": self.embedding,
            "lm_head": self.lm_head,
            "non_embedding": self.non_embedding,
            "non_embedding_active": self.non_embedding_active,
            "attention": self.attention,
            "mlp": self.mlp,
            "moe_experts": self.experts,
            "moe_shared_experts": self.shared_experts,
            "router": self.router,
            "norm": self.norm,
            "ssm": self.ssm,
            "vision": self.vision,
            "audio": self.audio,
            "cross_attention_layers": self.cross_attention,
            "mtp": self.mtp,
            "per_layer": [
                {"kind": p.kind, "count": p.count, "first_layer": p.first_layer, "attention": p.attention,
                 "mlp": p.mlp, "norm": p.norm, "total": p.total, "active": p.active}
                for p in self.per_layer
            ],
        }


def layer_active(layer: Layer, tensors: list[Tensor]) -> int:
    """Parameters one token uses in this layer: all of them but the unused routed experts."""
    total = sum(t.numel for t in tensors)
    if layer.mixer is not None:  # JetMoE: the attention experts a token is not routed to
        total -= layer.mixer.inactive_params()
    if isinstance(layer.ffn, MoE):
        moe = layer.ffn
        routed = sum(t.numel for t in tensors if category(t) == "experts")
        total -= routed
        total += moe.num_experts_per_tok * moe.expert_params
        if moe.expert_norms:  # Ergo: a token reads the norm rows of its top-k experts only
            total -= (moe.num_experts - moe.num_experts_per_tok) * moe.expert_dim
        total -= moe.vision_router_params  # ERNIE-4.5-VL: the vision experts' router runs on image tokens only
    return total


def count_params(spec: ModelSpec) -> ParamCounts:
    by_cat: Counter = Counter()
    for t in spec.embedding_tensors():
        by_cat["embedding"] += t.numel
    for t in spec.lm_head_tensors() + list(spec.head_transform):  # (ModernBERT decoder's prediction head)
        by_cat["lm_head"] += t.numel
    proj = spec.projection_tensors()  # [project_in, project_out] or []
    by_cat["embedding"] += sum(t.numel for t in proj[:1])
    by_cat["lm_head"] += sum(t.numel for t in proj[1:])
    for t in spec.final_norm_tensors():
        by_cat["norm"] += t.numel
    for t in spec.vision:
        by_cat[t.kind] += t.numel
    for t in spec.input_tensors():
        by_cat[category(t)] += t.numel
    cross = 0
    for t in spec.cross_tensors():  # mllama's cross-attention layers: dense, by their module's category
        by_cat[category(t)] += t.numel
        cross += t.numel
    active = sum(by_cat.values())  # every model-level tensor is used by every token
    per_layer = []
    for idx in spec.layer_groups:  # identical layers counted once, times their number
        layer = spec.layers[idx[0]]
        tensors = layer.stored_tensors(f"model.layers.{idx[0]}")  # a looped pass: its weights counted once, not here
        cats: Counter = Counter()
        for t in tensors:
            cats[category(t)] += t.numel
        n = len(idx)
        for k, v in cats.items():
            by_cat[k] += v * n
        act = layer_active(layer, tensors) if layer.stored else 0
        active += act * n
        ffn = cats["mlp"] + cats["experts"] + cats["shared_experts"] + cats["router"]
        per_layer.append(LayerParams(layer.kind, n, idx[0], cats["attention"] + cats["ssm"], ffn, cats["norm"],
                                     sum(cats.values()), act))
    total = sum(by_cat.values())
    mtp = 0
    for i, layer in enumerate(spec.mtp_layers):
        mtp += sum(t.numel for t in layer.tensors(f"model.mtp.{i}"))
    mtp += spec.mtp_extra_params + sum(t.numel for t in spec.mtp_extra_tensors)
    return ParamCounts(
        total=total, active=active, embedding=by_cat["embedding"], lm_head=by_cat["lm_head"],
        attention=by_cat["attention"], mlp=by_cat["mlp"], experts=by_cat["experts"],
        shared_experts=by_cat["shared_experts"], router=by_cat["router"], norm=by_cat["norm"], ssm=by_cat["ssm"],
        mtp=mtp, per_layer=tuple(per_layer), vision=by_cat["vision"], audio=by_cat["audio"],
        cross_attention=cross,
    )
