"""Meituan LongCat-Flash (``longcat_flash``: LongCat-Flash-Chat, 560B), as transformers builds it
(models/longcat_flash/modeling_longcat_flash.py).

Each of its ``num_layers`` checkpoint layers holds two sublayers: two MLA attention blocks (DeepSeek V3's, always
with a query LoRA, interleaved RoPE, the latents scaled by sqrt(hidden / rank)), two dense SwiGLU MLPs
(``ffn_hidden_size``) and one "shortcut" MoE. The MoE reads the first sublayer's post-attention norm, beside the
first MLP, and its output joins the residual after the second MLP. Its softmax router scores the
``n_routed_experts`` experts (``expert_ffn_hidden_size``) plus ``zero_expert_num`` zero-computation (identity)
experts, top ``moe_topk`` (choice biased by the ``e_score_correction_bias`` buffer, weights scaled by
``routed_scaling_factor``, never renormalised).

Here a checkpoint layer is two spec layers (``num_hidden_layers`` = 2 x ``num_layers``, as LongcatFlashConfig
derives it and as its cache is indexed: two MLA latent caches per checkpoint layer): the first is MLA + the MoE with
the first MLP as its shared expert (the same input, so parameters and FLOPs are exact), the second MLA + the second
MLP. ``Numerics.shortcut_moe`` marks the later residual join, which only the runtime would need (it refuses).

Parameters are the checkpoint's: ``n_routed_experts`` experts. transformers 5.24 allocates ``gate_up_proj`` for the
zero-computation experts too (``total_experts`` rows: 2 x ``expert_ffn_hidden_size`` x hidden each, never loaded
nor used; 180B of its 741B for LongCat-Flash-Chat), which is not counted. Active parameters are the most a token
can use: all ``moe_topk`` routed to real experts; a token routed to zero-computation experts uses fewer (Meituan
reports 18.6B-31.3B, about 27B on average). The checkpoint's MTP layer (``model.mtp.*``, ignored by transformers)
is not counted.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import MLA, MLP, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle, RouterKind
from .common import pre_norms, read_act, read_eps, read_rope, read_routing, read_tie, Traits

TRAITS = Traits()

#: LongcatFlashConfig.attribute_map: the generic names a config may use for LongCat's own
ALIASES = {"n_routed_experts": ("num_local_experts",), "moe_topk": ("num_experts_per_tok",),
           "ffn_hidden_size": ("intermediate_size",), "expert_ffn_hidden_size": ("moe_intermediate_size",)}


def read_num_layers(f: Fields) -> int:
    """LongcatFlashConfig: ``num_hidden_layers``, when given, sets ``num_layers`` to its half (rounded down), whatever
    ``num_layers`` says; else ``num_layers`` (28 by default)."""
    if f.raw("num_hidden_layers") is not None:
        total = f.int("num_hidden_layers", hi=2 * MAX_LAYERS)
        if total < 2:
            raise f.error("num_hidden_layers", f"is {total}: LongCat-Flash counts two sublayers per layer, so it "
                                               "must be at least 2")
        return f.derived("num_layers", total // 2, "num_hidden_layers / 2 (LongcatFlashConfig's setter)")
    return f.int("num_layers", hi=MAX_LAYERS)


def build(f: Fields, model_type: str, n_layers: int | None = None) -> ModelSpec:
    """``n_layers``: the checkpoint layers where the caller has read them (LongCat-Flash-Lite)."""
    # num_layers is LongCat's own field (half of num_hidden_layers), not an alias of it as elsewhere
    f.aliases = {**f.aliases, **ALIASES, "num_hidden_layers": ()}
    hidden = f.int("hidden_size")
    n_layers = read_num_layers(f) if n_layers is None else n_layers
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    q_lora = f.int("q_lora_rank")  # LongcatFlashMLA always has a query LoRA
    kv_lora = f.int("kv_lora_rank")
    nope = f.int("qk_nope_head_dim")
    rope = f.int("qk_rope_head_dim")
    v_hd = f.int("v_head_dim")
    qk = f.int("qk_head_dim", lambda: nope + rope, note="absent: qk_nope_head_dim + qk_rope_head_dim")
    if qk != nope + rope:  # q_b_proj is heads x qk_head_dim wide, split into the nope and rope parts
        raise f.error("qk_head_dim", f"is {qk}, but the query splits into qk_nope_head_dim + qk_rope_head_dim "
                                     f"({nope} + {rope}): transformers cannot run it")
    # LongcatFlashRotaryEmbedding rotates head_dim dimensions: they must be the rope part of q and k
    rot = f.int("head_dim", rope)
    if rot != rope:
        raise f.error("head_dim", f"is {rot}, but LongCat-Flash's RoPE (head_dim wide) rotates the "
                                  f"qk_rope_head_dim ({rope}) part of q and k: transformers cannot run it")
    bias = f.bool("attention_bias", False)
    theta, _, scaling = read_rope(f, rope)
    act = read_act(f, TRAITS)
    ffn = f.int("ffn_hidden_size")
    experts = f.int("n_routed_experts")
    zero = f.int("zero_expert_num", 0, lo=0)
    topk = f.int("moe_topk")
    moe_ffn = f.int("expert_ffn_hidden_size")
    mla = MLA(hidden, heads, q_lora, kv_lora, nope, rope, v_hd, bias=bias, rope_theta=theta)
    # the first sublayer's MLP reads the MoE's input: the MoE's shared expert here
    moe = MoE(hidden, experts, topk, moe_ffn, router_bias=f.bool("router_bias", False), shared_intermediate_size=ffn,
              act=act, zero_experts=zero)
    norms = pre_norms(lambda: Norm(hidden))
    first, second = Layer(mla, moe, norms), Layer(mla, MLP(hidden, ffn, act=act), norms)
    layers = tuple(layer for _ in range(n_layers) for layer in (first, second))
    routing = read_routing(f, RouterKind.SOFTMAX, norm_fixed=False, scale_default=6.0)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling,
        numerics=Numerics(rope_style=RopeStyle.PAIRS, score_correction_bias=True, shortcut_moe=True, **routing),
        caveats=(caveat(topk, zero),),
    )


def caveat(topk: int, zero: int) -> str:
    out = "LongCat-Flash: each checkpoint layer is two layers here (two MLA latent caches); "
    if zero:
        out += (f"active parameters are the most a token uses (all top-{topk} routed to real experts): the router also "
                f"picks among {zero} zero-computation experts, so the average is lower (Meituan: 18.6B-31.3B, ~27B "
                "for LongCat-Flash-Chat); transformers' own model allocates unused gate/up weights for the "
                "zero-computation experts too, not counted (the checkpoint has none); ")
    return out + "the checkpoint's MTP layer is not counted"
