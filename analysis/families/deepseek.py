"""DeepSeek V2 / V3 (and Kimi K2, a DeepSeek V3): multi-head latent attention, MoE with shared
experts after ``first_k_dense_replace`` dense layers, multi-token-prediction layers.

V2 routes with a softmax (``topk_method: group_limited_greedy`` limits the choice to the best
groups by their best expert); V3 with sigmoid scores plus a choice-only correction bias, groups
ranked by their two best experts. RoPE runs on interleaved pairs (V3: unless ``rope_interleave``
is false).
"""

from __future__ import annotations

from functools import partial

from ..fields import MAX_LAYERS, Fields
from ..spec import MLA, MLP, GroupScore, Layer, ModelSpec, Norm, Numerics, RopeStyle, RouterKind
from .common import Traits, mtp_extra, mtp_layers, pre_norms, read_act, read_eps, read_rope, read_rope_extra, read_routing, read_tie
from .decoder import moe_plan

TRAITS = Traits(moe="deepseek")


def build(f: Fields, model_type: str, *, version: int, interleave_fixed: bool = False) -> ModelSpec:
    t = TRAITS
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    q_lora = f.opt_int("q_lora_rank")
    kv_lora = f.int("kv_lora_rank")
    nope = f.int("qk_nope_head_dim")
    rope = f.int("qk_rope_head_dim")
    v_hd = f.int("v_head_dim")
    bias = f.bool("attention_bias", False)
    theta, _, scaling = read_rope(f, rope)
    act = read_act(f, t)
    intermediate = f.int("intermediate_size")
    mla = MLA(hidden, heads, q_lora, kv_lora, nope, rope, v_hd, bias=bias, rope_theta=theta)
    moe_at, make_moe, dense = moe_plan(f, t, hidden, n_layers, intermediate, act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(mla, make_moe(i) if i in moe_at else MLP(hidden, dense, act=act), norms) for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, mtp_layers=mtp_layers(f, list(layers)), mtp_extra_params=mtp_extra(f, hidden),
        numerics=numerics(f, version, interleave_fixed),
    )


def numerics(f: Fields, version: int, interleave_fixed: bool) -> Numerics:
    if version == 2:
        method = f.str("topk_method", "greedy")
        routing = read_routing(f, RouterKind.SOFTMAX, norm_fixed=False,
                               group_score=GroupScore.MAX if method == "group_limited_greedy" else GroupScore.NONE)
        return Numerics(rope_style=RopeStyle.PAIRS, **routing)
    interleave = interleave_fixed or f.bool("rope_interleave", True)
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=2.5, n_group_default=8, topk_group_default=4,
                           group_score=GroupScore.TOP2)
    return Numerics(rope_style=RopeStyle.PAIRS if interleave else RopeStyle.HALF, score_correction_bias=True,
                    **routing)


build_v2 = partial(build, version=2)
build_v3 = partial(build, version=3)
build_kimi_k2 = partial(build, version=3, interleave_fixed=True)  # a DeepSeek V3 that always interleaves


