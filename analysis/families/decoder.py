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
from .common import (Traits, sparse_layers, mtp_extra, mtp_layers, opt_float, pre_norms, read_act, read_core, read_eps, read_flag,
                     read_no_rope, read_rotary, read_routing, read_tie, read_windows)


def build(f: Fields, model_type: str, t: Traits, generic: bool = False) -> ModelSpec:
    c = read_core(f, t)
    hidden, n_layers, heads, kv, hd, vocab = c["hidden"], c["layers"], c["heads"], c["kv"], c["head_dim"], c["vocab"]
    theta, rotary_dim, scaling = read_rotary(f, hd, t.rotary_default)
    if t.rope_ntk_alpha:
        theta, scaling = ntk_alpha(f, hd, theta, scaling)
    qkv_bias = read_flag(f, t.qkv_bias, t.bias_default)
    o_bias = read_flag(f, t.o_bias, t.bias_default)
    mlp_bias = read_flag(f, t.mlp_bias, False)
    act = read_act(f, t)
    windows = read_windows(f, n_layers, t.windows)
    q_norm = k_norm = 0
    if t.q_norm_over_hidden and hd * heads != hidden:
        # transformers sizes OLMoE's q_norm by hidden_size, so its q_proj must be hidden_size wide too
        raise f.error("head_dim", f"({hd}) x num_attention_heads ({heads}) must equal hidden_size ({hidden}) for {model_type}")
    if t.sub_norms and hd * heads != hidden:
        # transformers builds BitNet's attn_sub_norm over hidden_size features and applies it to heads x head_dim
        raise f.error("head_dim", f"({hd}) x num_attention_heads ({heads}) must equal hidden_size ({hidden}) for "
                                  f"{model_type}: its attn_sub_norm is hidden_size wide")
    if t.o_from_hidden and hd * heads != hidden:
        # transformers builds Helium's o_proj as Linear(hidden_size, hidden_size): wider or narrower heads do not run
        raise f.error("head_dim", f"({hd}) x num_attention_heads ({heads}) must equal hidden_size ({hidden}) for "
                                  f"{model_type}: its o_proj is hidden_size wide")
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
    norm = lambda: Norm(hidden, t.norm_kind, bias=t.norm_kind == NormKind.LAYER, affine=t.norm_affine)  # noqa: E731
    layout_norms = t.norms
    if t.post_norms_key is not None and not f.bool(t.post_norms_key, True):
        layout_norms = "pre"  # HyperCLOVAX without use_post_norm: nn.Identity in place of post_norm1 / post_norm2
    if t.intermediate_default:
        default_inter: Any = t.intermediate_default
    elif not t.gated:
        default_inter = lambda: 4 * hidden  # noqa: E731
    else:
        default_inter = REQUIRED
    if t.dense_mlp:
        intermediate = f.int("intermediate_size", default_inter)
    else:  # Solar Open: no dense MLP anywhere (every layer MoE), so no intermediate_size to read
        intermediate = f.derived("intermediate_size", 0, "unused: every layer is a mixture of experts")
    moe_at, make_moe, dense_intermediate = moe_plan(f, t, hidden, n_layers, intermediate, act)
    # StableLM's parallel block: x + attn(ln(x)) + mlp(ln(x)), one input LayerNorm and no other
    parallel = t.parallel_key is not None and f.bool(t.parallel_key, False)

    thetas = read_layer_thetas(f, n_layers) if t.layer_rope_theta else None
    layers = []
    for i in range(n_layers):
        window, chunk = windows[i]
        uses_rope = bool(no_rope[i]) if no_rope is not None else True
        base = theta
        if thetas is not None:  # Granite SWA: this layer's base, 0 for NoPE
            uses_rope, base = thetas[i] > 0, thetas[i] or theta
        if t.nope_global_with_sliding and any(w for w, _ in windows) and not window:
            uses_rope = False  # transformers: with sliding layers present, global layers skip RoPE
        if t.nope_global_if_window and f.has("sliding_window") and not window:
            uses_rope = False  # EXAONE MoE: with sliding_window set, full layers skip RoPE (sliding layers or not)
        attn = Attention(
            hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, v_head_dim=v_head_dim,
            q_bias=qkv_bias, k_bias=qkv_bias, v_bias=qkv_bias, o_bias=o_bias, fused_qkv=t.fused_qkv,
            q_norm_dim=q_norm, k_norm_dim=k_norm, window=window, chunk=chunk,
            rotary_dim=rotary_dim if uses_rope else 0, rope_theta=local_theta(f, t, window, base),
            sinks=t.sinks, qk_norm_per_head=t.qk_norm_per_head and bool(q_norm), o_norm=t.sub_norms,
        )
        if i in moe_at:
            ffn = make_moe(i)
        else:
            ffn = MLP(hidden, dense_intermediate, gated=t.gated, bias=mlp_bias, fused_gate_up=t.fused_gate_up, act=act,
                      inner_norm=t.sub_norms)
        if t.norm_names is not None and layout_norms in ("pre", "sandwich") and not parallel:
            roles = ("pre_mixer", "pre_ffn") if layout_norms == "pre" else \
                ("pre_mixer", "post_mixer", "pre_ffn", "post_ffn")
            names = t.norm_names if layout_norms == t.norms else (t.norm_names[0], t.norm_names[2])
            norms = tuple(PlacedNorm(n, r, norm()) for n, r in zip(names, roles))
        elif t.norms == "sandwich":
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
        raise f.error(t.lm_head_bias if isinstance(t.lm_head_bias, str) else "lm_head_bias",
                      "is true with tied embeddings: the tied head's bias is not modelled")
    if t.longrope_mscale:
        scaling = longrope_mscale(scaling)
    head_rows = 0
    if t.output_vocab_key is not None and f.raw(t.output_vocab_key) is not None:
        head_rows = f.int(t.output_vocab_key, hi=1 << 26)
        if head_rows > vocab:
            raise f.error(t.output_vocab_key, f"({head_rows}) exceeds vocab_size ({vocab})")
        if head_rows == vocab:  # transformers: the canonical unpruned head
            head_rows = 0
        elif tie:
            raise f.error(t.output_vocab_key, f"({head_rows}) is a pruned lm_head, which cannot be tied to the "
                                              f"{vocab}-row embedding")
    spec = ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers), tie_word_embeddings=tie,
        lm_head_bias=lm_head_bias, final_norm=norm(), hidden_act=act,
        norm_eps=t.norm_eps_fixed if t.norm_eps_fixed is not None else read_eps(f), norm_offset=t.norm_offset,
        embedding_multiplier=hidden ** 0.5 if t.embed_scale else 1.0, rope_scaling=scaling,
        attn_logit_softcapping=opt_float(f, "attn_logit_softcapping"),
        final_logit_softcapping=opt_float(f, "final_logit_softcapping"),
        query_pre_attn_scalar=opt_float(f, "query_pre_attn_scalar"),
        numerics=read_numerics(f, t, hidden), checkpoint=layout(t),
    )
    if t.multipliers:  # Granite scales the embeddings by embedding_multiplier (Gemma's sqrt(hidden) above)
        spec = replace(spec, embedding_multiplier=f.float("embedding_multiplier", 1.0))
    if t.embed_norm:  # NanoChat: the embeddings normed (its weightless final norm) before the first layer
        spec = replace(spec, embedding_norm=norm())
    if head_rows:  # Apertus 1.5's pruned head: lm_head (and the logits) output_vocab_size wide, the embedding vocab
        spec = replace(spec, vocab_size=head_rows, embedding_rows=vocab)
    if t.moe == "deepseek":
        spec = replace(spec, mtp_layers=mtp_layers(f, layers), mtp_extra_params=mtp_extra(f, hidden))
    return spec




def read_layer_thetas(f: Fields, n_layers: int) -> list[float | None] | None:
    """Granite SWA's ``layer_rope_theta``: a RoPE base per layer, 0 meaning NoPE (None when absent)."""
    raw = f.raw("layer_rope_theta")
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != n_layers or \
            any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in raw):
        raise f.error("layer_rope_theta", f"must list a RoPE base >= 0 (0: NoPE) for each of the {n_layers} layers")
    f.derived("layer_rope_theta", f"list[{n_layers}]", "a RoPE base per layer, 0: NoPE")
    return [float(x) for x in raw]


def ntk_alpha(f: Fields, hd: int, theta: float, scaling: tuple) -> tuple[float, tuple]:
    """Hunyuan's "dynamic" RoPE with an ``alpha`` (transformers' ntk_alpha): static frequencies of the base
    ``rope_theta · alpha^(head_dim / (head_dim - 2))``, no other scaling; the plain RoPE of that base."""
    items = dict(scaling)
    kind = items.get("rope_type") or items.get("type")
    if kind == "dynamic" and items.get("alpha"):
        alpha = items["alpha"]
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0 or hd <= 2:
            raise f.error("rope_scaling.alpha", f"must be a positive number, got {alpha!r}")
        return f.derived("rope_theta", theta * alpha ** (hd / (hd - 2)), "NTK-alpha: rope_theta x alpha^(d/(d-2))"), ()
    return theta, scaling


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
        shared = f.int(t.shared_mlp_key, 0, lo=0) if t.shared_mlp_key else 0
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared, shared_fused_gate_up=bool(shared), act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "qwen":
        n_exp = f.int("num_experts", lo=0 if t.dense_mlp else 1)  # Kolibri-1: experts on every layer
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        step = f.int("decoder_sparse_step", 1)
        if t.mlp_only_default and f.raw("mlp_only_layers") is None:  # Flint: [0, 1] when absent
            only = set(f.derived("mlp_only_layers", list(t.mlp_only_default), "absent: the family's dense layers"))
        else:
            only = set(f.int_list("mlp_only_layers", lo=0, hi=MAX_LAYERS) or [])
        # transformers builds qwen2_moe's shared expert and its gate whatever the size: 0 is not "none"
        shared = f.int("shared_expert_intermediate_size", 0, lo=1) if t.shared_expert_gate else 0
        if t.shared_mlp_key:  # Kolibri-1, Flint: an ungated shared expert, always added in full
            shared = f.int(t.shared_mlp_key, lo=1)
        if n_exp and k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        at = {i for i in range(n_layers) if i not in only and n_exp > 0 and (i + 1) % step == 0}
        if isinstance(f.raw("mlp_layer_types"), list):  # Mellum: "dense" | "sparse" per layer (no sparse step)
            at = {i for i in sparse_layers(f, n_layers) if n_exp > 0}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared,
                  shared_expert_gate=bool(shared) and t.shared_expert_gate, act=act) if at else None
        return at, (lambda i: moe), intermediate
    if kind == "deepseek":
        # EXAONE MoE names them num_experts / num_shared_experts (its class has no n_routed_experts)
        n_exp = f.int("n_routed_experts" if f.has("n_routed_experts") or not f.has("num_experts") else "num_experts")
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts" if f.has("n_shared_experts") or not f.has("num_shared_experts")
                         else "num_shared_experts", 0, lo=0)
        first = f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS)
        freq = f.int("moe_layer_freq", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        at = {i for i in range(n_layers) if i >= first and i % freq == 0}
        if not t.dense_mlp:  # Solar Open: every layer MoE (first_k_dense_replace, moe_layer_freq unread)
            at = set(range(n_layers))
        elif isinstance(f.raw("mlp_layer_types"), list):  # EXAONE MoE: "dense" | "sparse" per layer, when given
            at = sparse_layers(f, n_layers)
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=n_shared * size, act=act)
        return at, (lambda i: moe), intermediate
    if kind == "ernie":
        # ERNIE 4.5 MoE: MoE on layers start <= i <= end (end -1: the last) with (i + 1) % interval == 0;
        # moe_num_shared_experts shared experts of moe_intermediate_size, biased like the dense MLP (use_bias)
        # transformers' attribute_map: num_experts -> moe_num_experts, num_experts_per_tok -> moe_k
        n_exp = f.int("num_experts" if "num_experts" in f.cfg and "moe_num_experts" not in f.cfg else "moe_num_experts")
        k = f.int("num_experts_per_tok" if "num_experts_per_tok" in f.cfg and "moe_k" not in f.cfg else "moe_k")
        if k > n_exp:
            raise f.error("moe_k", f"({k}) exceeds moe_num_experts ({n_exp})")
        size = f.int("moe_intermediate_size")
        n_shared = f.int("moe_num_shared_experts", 0, lo=0)
        start = f.int("moe_layer_start_index", 0, lo=0, hi=MAX_LAYERS)
        end = f.int("moe_layer_end_index", -1, lo=-1, hi=MAX_LAYERS)
        end = n_layers - 1 if end == -1 else end
        step = f.int("moe_layer_interval", 1)
        bias = read_flag(f, t.mlp_bias, False)
        at = {i for i in range(n_layers) if (i + 1) % step == 0 and start <= i <= end}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=n_shared * size, shared_bias=bias,
                  correction_bias_param=True, act=act)
        return at, (lambda i: moe), intermediate
    if kind == "hunyuan":
        # Hunyuan-A13B as transformers 5 builds it: every layer MoE; num_experts experts of intermediate_size
        # and one shared MLP of intermediate_size (shared_mlp); moe_topk an int or one per layer
        if isinstance(f.raw("num_experts"), list):
            raise f.error("num_experts", "is a list: transformers' Hunyuan MoE takes one expert count for all layers")
        n_exp = f.int("num_experts")
        key = "num_experts_per_tok" if "num_experts_per_tok" in f.cfg and "moe_topk" not in f.cfg else "moe_topk"
        ks = f.int_list(key, n_layers) if isinstance(f.raw(key), list) else [f.int(key)] * n_layers
        for name, want in (("moe_intermediate_size", intermediate), ("num_shared_expert", 1)):
            v = f.raw(name)
            if v is not None and any(x != want for x in (v if isinstance(v, list) else [v])):
                raise f.error(name, f"is {v}: transformers' Hunyuan MoE builds experts of intermediate_size and one "
                                    "shared MLP, which this checkpoint would not match")
        if f.bool("use_cla", False):
            raise f.error("use_cla", "is true: cross-layer attention (CLA) is not modelled by transformers' Hunyuan")
        for k in ks:
            if k > n_exp:
                raise f.error(key, f"({k}) exceeds num_experts ({n_exp})")
        moes = {k: MoE(hidden, n_exp, k, intermediate, shared_intermediate_size=intermediate, act=act) for k in set(ks)}
        return set(range(n_layers)), (lambda i: moes[ks[i]]), intermediate
    if kind == "gpt_oss":
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", f.raw("experts_per_token", 4))
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, intermediate, expert_bias=True, router_bias=True, act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "llama4":
        layers_list = f.int_list("moe_layers", lo=0, hi=MAX_LAYERS)
        dense = f.int("intermediate_size_mlp", intermediate)
        if layers_list == []:
            # a dense Llama 4 (Llama Guard 4): transformers' convert_llama4_weights_to_hf.py writes num_local_experts
            # 0, interleave_moe_layer_step 0 and moe_layers [] when params.json has no moe_args
            return set(), None, dense
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        if layers_list is None:
            step = f.int("interleave_moe_layer_step", 1)
            layers_list = list(range(step - 1, n_layers, step))
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
    elif t.router == RouterKind.LOGIT_SIGMOID:
        # Kolibri-1, Flint: the top-k of the logits (Kolibri: plus its e_score_correction_bias buffer), weighted by
        # their sigmoids, renormalised by norm_topk_prob, never scaled (neither config has routed_scaling_factor)
        kw.update(router=RouterKind.LOGIT_SIGMOID, norm_topk_prob=f.bool("norm_topk_prob", t.norm_topk_default),
                  score_correction_bias=t.router_choice_bias)
    elif t.moe == "ernie":
        # ERNIE 4.5 MoE: softmax scores (fp32), the choice by scores + e_score_correction_bias, the chosen
        # scores renormalised (clamped at moe_norm_min) whatever norm_topk_prob says, never scaled
        kw.update(router=RouterKind.SOFTMAX, norm_topk_prob=True, score_correction_bias=True)
    elif t.moe == "hunyuan":  # softmax (fp32), top-k renormalised, unscaled; no routing field is read
        kw.update(router=RouterKind.SOFTMAX, norm_topk_prob=True)
    elif t.moe is not None:
        kw.update(read_routing(f, t.router, norm_default=t.norm_topk_default, norm_fixed=t.norm_topk_fixed))
    if t.qk_norm_after_rope:
        kw["qk_norm_after_rope"] = True
    if t.qk_l2_norm:
        kw["qk_l2_norm"] = True
    if t.llama4:
        kw["qk_l2_norm"] = f.bool("use_qk_norm", True)
        if f.bool("attn_temperature_tuning", True):
            kw["attn_temperature"] = (f.float("attn_scale", 0.1), f.float("floor_scale", 8192.0))
    if t.multipliers:
        # null (HyperCLOVAX's class default) means head_dim^-0.5, the runtime's default scale
        att = None if f.raw("attention_multiplier") is None else f.float("attention_multiplier")
        kw.update(residual_multiplier=f.float("residual_multiplier", 1.0), attention_multiplier=att)
        if t.logits_multiply:  # HyperCLOVAX multiplies the logits by logits_scaling; Granite divides
            kw["logit_scale"] = f.float("logits_scaling", 1.0)
        else:
            kw["logits_scaling"] = f.float("logits_scaling", 1.0)
    if t.clip_qkv and f.raw("clip_qkv") is not None:
        kw["clip_qkv"] = f.float("clip_qkv")
    if t.llama4_query_scale:
        params = f.raw("rope_parameters")
        params = params if isinstance(params, dict) else f.raw("rope_scaling")
        beta = params.get("llama_4_scaling_beta") if isinstance(params, dict) else None
        if beta is not None:
            orig = params.get("original_max_position_embeddings")
            if not isinstance(beta, (int, float)) or not isinstance(orig, (int, float)) or orig <= 0:
                raise f.error("rope_parameters", "llama_4_scaling_beta needs a numeric beta and a positive "
                                                 "original_max_position_embeddings")
            kw["query_position_scale"] = (float(beta), float(orig))
    return Numerics(**kw)


def layout(t: Traits):
    from ..spec import CheckpointLayout

    if t.gpt_oss_glu:
        return CheckpointLayout(experts=ExpertLayout.GPT_OSS)
    if t.llama4:
        return CheckpointLayout(experts=ExpertLayout.STACKED_IN_OUT)
    return CheckpointLayout(renames=t.renames, modules=t.modules)
