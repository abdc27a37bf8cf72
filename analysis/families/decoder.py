"""The plain decoder: one builder for every family that is a row of ``Traits`` in the registry.

It reads the standard fields (``hidden_size``, ``num_key_value_heads``, ``head_dim``,
``layer_types``, ``sliding_window`` ...) and the ``Traits`` row says what the family does
differently (biases, norm layout, fused projections, MoE placement, RoPE layout, routing).
Nothing here branches on ``model_type``: a difference is a trait, set in the family's row.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..fields import MAX_LAYERS, REQUIRED, Fields
from ..spec import (GLU, MLP, Attention, ExpertLayout, GroupScore, Layer, ModelSpec, MoE, Norm, NormKind, Numerics,
                    PlacedNorm, RouterKind)
from .common import (Traits, mtp_extra, mtp_layers, opt_float, pre_norms, read_act, read_core, read_eps, read_flag,
                     read_no_rope, read_rotary, read_routing, read_tie, read_windows)


def build(f: Fields, model_type: str, t: Traits, generic: bool = False) -> ModelSpec:
    c = read_core(f, t)
    hidden, n_layers, heads, kv, hd, vocab = c["hidden"], c["layers"], c["heads"], c["kv"], c["head_dim"], c["vocab"]
    theta, rotary_dim, scaling = read_rotary(f, hd, t.rotary_default)
    qkv_bias = read_flag(f, t.qkv_bias, t.bias_default)
    o_bias = read_flag(f, t.o_bias, t.bias_default)
    mlp_bias = read_flag(f, t.mlp_bias, False)
    act = read_act(f, t)
    windows = read_windows(f, n_layers, t.windows)
    q_norm = k_norm = 0
    if t.q_norm_over_hidden and hd * heads != hidden:
        # transformers sizes OLMoE's q_norm by hidden_size, so its q_proj must be hidden_size wide too
        raise f.error("head_dim", f"({hd}) x num_attention_heads ({heads}) must equal hidden_size ({hidden}) for {model_type}")
    qk_norm = t.qk_norm if t.qk_norm_key is None or f.bool(t.qk_norm_key, False) else None
    if qk_norm == "head":
        q_norm = k_norm = hd
    elif qk_norm == "full":
        q_norm, k_norm = heads * hd, kv * hd
    v_head_dim = f.int("v_head_dim", hd) if generic and f.has("v_head_dim") else hd

    no_rope = read_no_rope(f, n_layers) if t.nope_layers else None
    if t.chunked_rope_layers and f.raw("layer_types") is None:
        # transformers: chunked attention on the RoPE layers, global NoPE layers in between
        chunk = f.opt_int("attention_chunk_size", hi=1 << 30)
        windows = [(None, chunk if (chunk and no_rope[i]) else None) for i in range(n_layers)]
    norm = lambda: Norm(hidden, t.norm_kind, bias=t.norm_kind == NormKind.LAYER)  # noqa: E731
    if t.intermediate_default:
        default_inter: Any = t.intermediate_default
    elif not t.gated:
        default_inter = lambda: 4 * hidden  # noqa: E731
    else:
        default_inter = REQUIRED
    intermediate = f.int("intermediate_size", default_inter)
    moe_at, make_moe, dense_intermediate = moe_plan(f, t, hidden, n_layers, intermediate, act)
    # StableLM's parallel block: x + attn(ln(x)) + mlp(ln(x)), one input LayerNorm and no other
    parallel = t.parallel_key is not None and f.bool(t.parallel_key, False)

    layers = []
    for i in range(n_layers):
        window, chunk = windows[i]
        uses_rope = bool(no_rope[i]) if no_rope is not None else True
        if t.nope_global_with_sliding and any(w for w, _ in windows) and not window:
            uses_rope = False  # transformers: with sliding layers present, global layers skip RoPE
        attn = Attention(
            hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, v_head_dim=v_head_dim,
            q_bias=qkv_bias, k_bias=qkv_bias, v_bias=qkv_bias, o_bias=o_bias, fused_qkv=t.fused_qkv,
            q_norm_dim=q_norm, k_norm_dim=k_norm, window=window, chunk=chunk,
            rotary_dim=rotary_dim if uses_rope else 0, rope_theta=local_theta(f, t, window, theta),
            sinks=t.sinks, qk_norm_per_head=t.qk_norm_per_head and bool(q_norm),
        )
        if i in moe_at:
            ffn = make_moe(i)
        else:
            ffn = MLP(hidden, dense_intermediate, gated=t.gated, bias=mlp_bias, fused_gate_up=t.fused_gate_up, act=act)
        if t.norms == "sandwich":
            norms = (PlacedNorm("input_layernorm", "pre_mixer", norm()),
                     PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                     PlacedNorm("pre_feedforward_layernorm", "pre_ffn", norm()),
                     PlacedNorm("post_feedforward_layernorm", "post_ffn", norm()))
        elif t.norms == "post":
            norms = (PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                     PlacedNorm("post_feedforward_layernorm", "post_ffn", norm()))
        elif parallel:
            norms = (PlacedNorm("input_layernorm", "pre_mixer", norm()),)
        else:
            norms = pre_norms(norm)
        layers.append(Layer(attn, ffn, norms, parallel=parallel))
    tie = read_tie(f, t.tie_default)
    lm_head_bias = read_flag(f, t.lm_head_bias, False)
    if tie and lm_head_bias:
        raise f.error("lm_head_bias", "is true with tied embeddings: the tied head's bias is not modelled")
    if t.longrope_mscale:
        scaling = longrope_mscale(scaling)
    spec = ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers), tie_word_embeddings=tie,
        lm_head_bias=lm_head_bias, final_norm=norm(), hidden_act=act, norm_eps=read_eps(f), norm_offset=t.norm_offset,
        embedding_multiplier=hidden ** 0.5 if t.embed_scale else 1.0, rope_scaling=scaling,
        attn_logit_softcapping=opt_float(f, "attn_logit_softcapping"),
        final_logit_softcapping=opt_float(f, "final_logit_softcapping"),
        query_pre_attn_scalar=opt_float(f, "query_pre_attn_scalar"),
        numerics=read_numerics(f, t, hidden), checkpoint=layout(t),
    )
    if t.multipliers:  # Granite scales the embeddings by embedding_multiplier (Gemma's sqrt(hidden) above)
        spec = replace(spec, embedding_multiplier=f.float("embedding_multiplier", 1.0))
    if t.moe == "deepseek":
        spec = replace(spec, mtp_layers=mtp_layers(f, layers), mtp_extra_params=mtp_extra(f, hidden))
    return spec




def longrope_mscale(scaling: tuple) -> tuple:
    """PhiMoE's rotary embedding scales cos and sin by the config's ``short_mscale`` (``long_mscale`` once
    the sequence passes original_max_position_embeddings; the published configs set both equal) where
    Phi-3's longrope derives the factor: pass it on as longrope's ``attention_factor``."""
    items = dict(scaling)
    kind = items.get("rope_type") or items.get("type")
    if kind in ("longrope", "su") and items.get("attention_factor") is None and items.get("short_mscale") is not None:
        items["attention_factor"] = items["short_mscale"]
    return tuple(sorted(items.items()))


def local_theta(f: Fields, t: Traits, window: int | None, theta: float) -> float:
    """Gemma 3 runs its sliding layers with a different RoPE base (rope_local_base_freq)."""
    if t.local_rope and window:
        if f.has("rope_local_base_freq"):
            return f.float("rope_local_base_freq")
        params = f.raw("rope_parameters")
        if isinstance(params, dict) and isinstance(params.get("sliding_attention"), dict):
            v = params["sliding_attention"].get("rope_theta")
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
        return 10000.0
    return theta


# ---- mixture of experts --------------------------------------------------------------------------


def moe_plan(f: Fields, t: Traits, hidden: int, n_layers: int, intermediate: int, act: str):
    """(layers that are MoE, a factory for the MoE of a layer, the dense layers' intermediate size)."""
    if t.moe is None:
        return set(), None, intermediate
    kind = t.moe
    if kind == "mixtral" or kind == "generic":
        n_exp = f.int("num_local_experts") if f.has("num_local_experts") or kind == "mixtral" and not f.has("num_experts") \
            else f.int("num_experts")
        k = f.int("num_experts_per_tok", 2)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        size = f.int("moe_intermediate_size") if kind == "generic" and f.has("moe_intermediate_size") else intermediate
        moe = MoE(hidden, n_exp, k, size, act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "qwen":
        n_exp = f.int("num_experts", lo=0)
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        step = f.int("decoder_sparse_step", 1)
        only = set(f.int_list("mlp_only_layers", lo=0, hi=MAX_LAYERS) or [])
        # transformers builds qwen2_moe's shared expert and its gate whatever the size: 0 is not "none"
        shared = f.int("shared_expert_intermediate_size", 0, lo=1) if t.shared_expert_gate else 0
        if n_exp and k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        at = {i for i in range(n_layers) if i not in only and n_exp > 0 and (i + 1) % step == 0}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared, shared_expert_gate=bool(shared), act=act) if at else None
        return at, (lambda i: moe), intermediate
    if kind == "deepseek":
        n_exp = f.int("n_routed_experts")
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts", 0, lo=0)
        first = f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS)
        freq = f.int("moe_layer_freq", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds n_routed_experts ({n_exp})")
        at = {i for i in range(n_layers) if i >= first and i % freq == 0}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=n_shared * size, act=act)
        return at, (lambda i: moe), intermediate
    if kind == "gpt_oss":
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", f.raw("experts_per_token", 4))
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, intermediate, expert_bias=True, router_bias=True, act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "llama4":
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        layers_list = f.int_list("moe_layers", lo=0, hi=MAX_LAYERS)
        if layers_list is None:
            step = f.int("interleave_moe_layer_step", 1)
            layers_list = list(range(step - 1, n_layers, step))
        dense = f.int("intermediate_size_mlp", intermediate)
        moe = MoE(hidden, n_exp, k, intermediate, shared_intermediate_size=intermediate, act=act)
        return set(layers_list), (lambda i: moe), dense
    raise AssertionError(kind)




# ---- numerics and checkpoint layout --------------------------------------------------------------


def read_numerics(f: Fields, t: Traits, hidden: int) -> Numerics:
    """The runtime's arithmetic for a plain decoder: RoPE layout, routing, multipliers."""
    kw: dict = {"rope_style": t.rope_style, "rope_plain_on_windows": t.local_rope}
    if t.moe == "deepseek":  # GLM-4 MoE: DeepSeek V3's sigmoid router with its own class defaults
        kw.update(read_routing(f, RouterKind.SIGMOID, scale_default=2.5, n_group_default=8, topk_group_default=4,
                               group_score=GroupScore.TOP2), score_correction_bias=True)
    elif t.gpt_oss_glu:
        kw.update(router=RouterKind.TOPK_SOFTMAX, glu=GLU.GPT_OSS, swiglu_alpha=f.float("swiglu_alpha", 1.702),
                  swiglu_limit=f.float("swiglu_limit", 7.0))
    elif t.llama4:
        kw.update(router=RouterKind.TOPK_SIGMOID, scale_expert_input=True)
    elif t.router == RouterKind.SPARSEMIXER:
        # PhiMoE (transformers' sparsemixer at inference): exactly two experts, whatever num_experts_per_tok says
        if f.int("num_experts_per_tok", 2) != 2:
            raise f.error("num_experts_per_tok", "must be 2: PhiMoE's SparseMixer routes exactly two experts")
        kw.update(router=RouterKind.SPARSEMIXER, router_jitter_noise=f.float("router_jitter_noise", 0.01))
    elif t.router == RouterKind.SIGMOID:
        # MiniMax-M2: sigmoid scores, e_score_correction_bias for the choice only, the top-k renormalised, no
        # scaling; transformers reads no routing field (norm_topk_prob, routed_scaling_factor) for it
        kw.update(router=RouterKind.SIGMOID, norm_topk_prob=True, score_correction_bias=True)
    elif t.moe is not None:
        kw.update(read_routing(f, t.router, norm_default=t.norm_topk_default, norm_fixed=t.norm_topk_fixed))
    if t.llama4:
        kw["qk_l2_norm"] = f.bool("use_qk_norm", True)
        if f.bool("attn_temperature_tuning", True):
            kw["attn_temperature"] = (f.float("attn_scale", 0.1), f.float("floor_scale", 8192.0))
    if t.multipliers:
        kw.update(residual_multiplier=f.float("residual_multiplier", 1.0),
                  attention_multiplier=f.float("attention_multiplier", 1.0),
                  logits_scaling=f.float("logits_scaling", 1.0))
    return Numerics(**kw)


def layout(t: Traits):
    from ..spec import CheckpointLayout

    if t.gpt_oss_glu:
        return CheckpointLayout(experts=ExpertLayout.GPT_OSS)
    if t.llama4:
        return CheckpointLayout(experts=ExpertLayout.STACKED_IN_OUT)
    return CheckpointLayout()
