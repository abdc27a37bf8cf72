"""What families share: the ``Traits`` of a plain decoder, the config-field aliases, and the readers
every builder uses (core shape, head_dim, RoPE, windows, activation, eps, tied embeddings, routing).

Every value is read through ``Fields`` (analysis/fields.py), so a wrong type is a ``ConfigError``
naming the field, and every read, default and derivation is recorded for ``analyze --fields``.
"""

from __future__ import annotations

from typing import Callable

from ..records import frozen
from ..fields import MAX_LAYERS, Fields, as_int, short
from ..spec import GroupScore, Layer, Norm, PlacedNorm, Provenance, RopeStyle, RouterKind


@frozen
class Traits:
    """What a family does differently from a Llama-style decoder."""

    qkv_bias: str | bool = "attention_bias"  # a config key, or a fixed value
    o_bias: str | bool = "attention_bias"
    mlp_bias: str | bool = "mlp_bias"
    bias_default: bool = False
    qk_norm: str | None = None  # "head": norm over head_dim; "full": over all heads' features
    qk_norm_key: str | None = None  # a config flag that switches qk_norm on (default off): GLM-4 MoE, StableLM
    qk_norm_per_head: bool = False  # StableLM: a bias-free LayerNorm per head (a (heads, head_dim) weight)
    norms: str = "pre"  # pre: input+post_attention; sandwich: +pre/post_feedforward; post: olmo2
    norm_kind: str = "rms"
    tie_default: bool = False
    head_dim_default: int | None = None  # None: hidden_size // num_attention_heads
    # layer_types | all | qwen | qwen2_moe | use_sliding_all | smollm3 | max_window_layers | alternate | pattern |
    # full_every_4 | full_every_4th | full_every_5 | flint | window_layout | none
    windows: str = "layer_types"
    act_key: str = "hidden_act"
    act_default: str = "silu"
    gated: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    norm_offset: float = 0.0
    embed_scale: bool = False
    moe: str | None = None  # mixtral | qwen | deepseek | gpt_oss | llama4 | ernie | hunyuan | generic
    sinks: bool = False
    intermediate_default: int | None = None
    parallel_key: str | None = None  # StableLM: a flag for the parallel block (one input norm feeds attention and MLP)
    lm_head_bias: str | bool = False  # a config key (PhiMoE's lm_head_bias), or a fixed value
    longrope_mscale: bool = False  # PhiMoE: longrope's cos/sin scaled by the config's short_mscale
    rotary_default: float = 1.0  # partial_rotary_factor when the config has none (StableLM: 0.25)
    # the layer's norm modules, in the order of the layout's roles (pre: pre_mixer, pre_ffn; sandwich: pre_mixer,
    # post_mixer, pre_ffn, post_ffn) where transformers names them otherwise: Apertus' attention_layernorm /
    # feedforward_layernorm, GLM-4-0414's post_self_attn_layernorm / post_mlp_layernorm, VaultGemma's
    # pre_feedforward_layernorm, HyperCLOVAX's post_norm1 / post_norm2
    norm_names: tuple[str, ...] | None = None
    post_norms_key: str | None = None  # HyperCLOVAX: a flag (use_post_norm) that, false, drops the post norms
    norm_affine: bool = True  # False: OLMo-1's LayerNorms have no weight and no bias (F.layer_norm(x, None, None))
    norm_eps_fixed: float | None = None  # OLMo-1: transformers hard-codes eps 1e-5 (the config has no eps field)
    clip_qkv: bool = False  # OLMo-1: q, k and v clamped to [-clip_qkv, clip_qkv] after the projections
    logits_multiply: bool = False  # HyperCLOVAX: logits_scaling multiplies the logits (Granite divides)
    o_from_hidden: bool = False  # Helium: o_proj is Linear(hidden, hidden), so heads x head_dim must equal hidden
    output_vocab_key: str | None = None  # Apertus 1.5: a pruned lm_head of output_vocab_size rows (embedding: vocab)
    # transformers' attribute_map of the config class (InternLM3: qkv_bias -> attention_bias, bias -> mlp_bias)
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the original checkpoint's names (transformers' conversion_mapping: EXAONE 3's transformer.h.N.attn.attention.*)
    renames: tuple[tuple[str, str], ...] = ()
    modules: tuple[tuple[str, str], ...] = ()
    # Ministral 3: queries scaled by 1 + beta·log(1 + floor(pos / original_max_position_embeddings)) after RoPE,
    # beta = rope_parameters.llama_4_scaling_beta
    llama4_query_scale: bool = False
    # Granite MoE Shared: the config key of a shared MLP's width (0: none) beside the experts, its gate and up fused
    # (shared_mlp.input_linear, gate rows first), output_linear its down projection
    shared_mlp_key: str | None = None
    # Flint: mlp_only_layers when the config has none (FlintConfig.__post_init__: [0, 1])
    mlp_only_default: tuple[int, ...] = ()
    # Kolibri-1: the LOGIT_SIGMOID router's choice adds its e_score_correction_bias buffer
    router_choice_bias: bool = False
    # Granite SWA: layer_rope_theta, one RoPE base per layer (transformers builds a rotary table per distinct
    # base; 0: that layer gets no position embeddings, NoPE); absent: rope_theta on every layer
    layer_rope_theta: bool = False
    # NanoChat: the (weightless) RMSNorm also runs on the embeddings before the first layer
    embed_norm: bool = False
    # NanoChat: weightless RMS norms of q and k over head_dim after RoPE (Llama 4's L2 norm), always on
    qk_l2_norm: bool = False
    # BitNet: RMSNorms inside the blocks: attn_sub_norm on the attention output before o_proj (hidden_size wide),
    # ffn_sub_norm on the MLP's intermediate features before down_proj
    sub_norms: bool = False


    # numerics and layout switches (what transformers' modeling file does differently)
    rope_style: RopeStyle = RopeStyle.HALF
    norm_topk_default: bool = True  # norm_topk_prob when neither config nor class default says
    norm_topk_fixed: bool | None = None  # the modeling code ignores norm_topk_prob (Qwen3-VL-MoE always renormalises)
    router: RouterKind = RouterKind.SOFTMAX  # SIGMOID: MiniMax-M2's (bias for the choice, renormalised, unscaled)
    nope_layers: bool = False  # no_rope_layers / no_rope_layer_interval (Llama 4, SmolLM3)
    chunked_rope_layers: bool = False  # Llama 4: chunked attention on the RoPE layers, NoPE global layers
    nope_global_with_sliding: bool = False  # EXAONE 4: with sliding layers present, global layers skip RoPE
    # EXAONE MoE: `if self.sliding_window is None or self.is_sliding: apply RoPE`: with sliding_window set
    # (its class default 4096 included), every full layer skips RoPE
    nope_global_if_window: bool = False
    # Solar Open: transformers builds a MoE block on every layer and no dense MLP (its config has no
    # intermediate_size); first_k_dense_replace / moe_layer_freq are not read
    dense_mlp: bool = True
    # Hunyuan: the per-head q/k RMSNorms (query_layernorm / key_layernorm) run after RoPE; its "dynamic" RoPE
    # with an alpha is NTK-alpha (base theta · alpha^(d / (d - 2)), static)
    qk_norm_after_rope: bool = False
    rope_ntk_alpha: bool = False
    local_rope: bool = False  # Gemma 3: sliding layers use rope_local_base_freq, unscaled
    q_norm_over_hidden: bool = False  # OLMoE: q_norm sized by hidden_size (q_proj must be as wide)
    shared_expert_gate: bool = False  # Qwen2-MoE: a gated shared expert, built whatever its size
    llama4: bool = False  # Llama 4: L2 q/k norm, attention temperature on NoPE layers, top-k sigmoid
    multipliers: bool = False  # Granite: embedding, residual, attention and logits multipliers
    gpt_oss_glu: bool = False  # gpt-oss: clamped SwiGLU, top-k softmax router

ALIASES = {
    "hidden_size": ("n_embd", "d_model", "n_embed", "dim"),
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv", "multi_query_group_num", "n_kv_heads"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim"),
    "max_position_embeddings": ("n_positions", "max_seq_len", "seq_length"),
    "rms_norm_eps": ("layer_norm_eps", "layer_norm_epsilon", "norm_eps"),
}


def generic_traits(cfg: dict) -> Traits:
    moe = None
    # an explicit is_moe: false (SmallDoge's Doge keeps num_experts beside it) is a dense model
    if cfg.get("is_moe") is not False and any(cfg.get(k) for k in ("num_local_experts", "num_experts",
                                                                      "n_routed_experts")):
        moe = "generic"
    return Traits(moe=moe, windows="layer_types" if "layer_types" in cfg else "all")




# ---- shared readers ------------------------------------------------------------------------------


def read_mha_shape(f: Fields) -> tuple[int, int, int, int]:
    """hidden, layers, heads, vocab of a multi-head family whose head width is hidden / heads
    (GPT-2, BLOOM, Falcon): the heads must divide the hidden size."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    return hidden, n_layers, heads, vocab


def read_core(f: Fields, traits: Traits) -> dict:
    hidden = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    head_dim = read_head_dim(f, hidden, heads, traits.head_dim_default)
    vocab = f.int("vocab_size", hi=1 << 26)
    return dict(hidden=hidden, layers=layers, heads=heads, kv=kv, head_dim=head_dim, vocab=vocab)


def nested_fields(f: Fields, key: str) -> Fields:
    """The fields of a block nested in the config (DBRX's ``attn_config`` / ``ffn_config``), read like
    the top level: the block's field, else its class default (``family_defaults`` under
    ``"<model_type>.<key>"``), else the builder's. Call ``merge_nested`` when done, so that ``analyze
    --fields`` lists them as ``<key>.<field>``."""
    raw = f.raw(key)
    if raw is None:
        raw = f.defaulted(key, {}, "absent: every field at its class default")
    if not isinstance(raw, dict):
        raise f.error(key, f"must be an object of fields, got {short(raw)}")
    from ..family_defaults import FAMILY_DEFAULTS

    return Fields(raw, f"{f.where}: {key}", defaults=FAMILY_DEFAULTS.get(f"{f.family}.{key}"), nested=True,
                  family=f"{f.family} {key}")


def merge_nested(f: Fields, key: str, sub: Fields) -> None:
    for name, p in sub.records.items():
        f.records[f"{key}.{name}"] = Provenance(f"{key}.{name}", p.status, p.value, p.note)


def read_mha_core(f: Fields, defaults: dict, head_width: str = "the head width is hidden_size / "
                                                                   "num_attention_heads") -> tuple[int, int, int, int, int]:
    """hidden, layers, heads, head_dim (hidden / heads), vocab, with a (remote) config class's defaults."""
    hidden = f.int("hidden_size", defaults["hidden_size"])
    n_layers = f.int("num_hidden_layers", defaults["num_hidden_layers"], hi=MAX_LAYERS)
    heads = f.int("num_attention_heads", defaults["num_attention_heads"])
    vocab = f.int("vocab_size", defaults["vocab_size"], hi=1 << 26)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): {head_width}")
    return hidden, n_layers, heads, hidden // heads, vocab


def read_kv_heads(f: Fields, heads: int) -> int:
    """num_key_value_heads (absent: num_attention_heads, no GQA); it must divide num_attention_heads."""
    kv = f.int("num_key_value_heads", heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    return kv


def read_head_dim(f: Fields, hidden: int, heads: int, family_default: int | None = None) -> int:
    if f.has("head_dim"):
        return f.int("head_dim")
    if family_default is not None:
        return f.defaulted("head_dim", family_default, "absent: the family's default")
    if hidden % heads:
        raise f.error("head_dim", f"is missing and hidden_size ({hidden}) is not divisible by "
                                  f"num_attention_heads ({heads})")
    return f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads")


def read_flag(f: Fields, key: str | bool, default: bool) -> bool:
    if isinstance(key, bool):
        return key
    return f.bool(key, default)


def read_rope(f: Fields, head_dim: int) -> tuple[float, int, tuple]:
    """(theta, rotary_dim, scaling items) from rope_theta / rope_parameters / rope_scaling."""
    params = f.raw("rope_parameters")
    scaling = f.raw("rope_scaling")
    theta = None
    if f.cfg.get("rope_theta") is not None:  # explicit in the config (family defaults come last)
        theta = f.float("rope_theta")
    factor = None
    for block in (params, scaling):
        if isinstance(block, dict):
            if theta is None and isinstance(block.get("rope_theta"), (int, float)) and not isinstance(block.get("rope_theta"), bool):
                theta = float(block["rope_theta"])
            if factor is None and isinstance(block.get("partial_rotary_factor"), (int, float)):
                factor = float(block["partial_rotary_factor"])
    if theta is None and isinstance(params, dict) and isinstance(params.get("full_attention"), dict):
        # rope_parameters per layer type (Mellum, Gemma 3 in transformers 5): the full layers' base
        v = params["full_attention"].get("rope_theta")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            theta = float(v)
    if theta is None:
        theta = f.float("rope_theta", 10000.0)  # the family's default, else 10000
    if f.has("partial_rotary_factor"):
        factor = f.float("partial_rotary_factor")
    elif f.has("rotary_pct"):
        factor = f.float("rotary_pct")
    if factor is not None and not (0 < factor <= 1):
        raise f.error("partial_rotary_factor", f"must be in (0, 1], got {factor}")
    rotary_dim = int(head_dim * factor) if factor is not None else head_dim
    if f.has("rotary_dim"):  # gpt-j / phi style absolute rotary dimension
        rotary_dim = f.int("rotary_dim")
    if rotary_dim > head_dim:
        raise f.error("rotary_dim" if f.has("rotary_dim") else "partial_rotary_factor",
                      f"gives {rotary_dim} rotary dimensions, more than head_dim ({head_dim})")
    items: tuple = ()
    src = scaling if isinstance(scaling, dict) else params if isinstance(params, dict) else None
    if isinstance(src, dict):
        if all(isinstance(v, dict) for v in src.values()) and src:
            src = src.get("full_attention", {})
        items = tuple(sorted((str(k), v) for k, v in src.items() if isinstance(v, (int, float, str, bool)) or v is None))
    return theta, rotary_dim, items


def read_ropes_by_type(f: Fields, types: list[str], hd: int, default: dict,
                       who: str) -> dict[str, tuple[float, int, tuple]]:
    """(theta, rotary_dim, scaling items) per layer type in use (``types``: each layer's), from ``rope_parameters``
    keyed by layer type (absent: ``default``, the per-layer-type defaults of ``who``'s config class, e.g.
    "LagunaConfig"); each type's ``partial_rotary_factor`` of ``hd`` (Laguna, Spark-X2.5)."""
    raw = f.raw("rope_parameters")
    if raw is None:
        params = f.derived("rope_parameters", default, f"absent: {who}'s per-layer-type defaults")
    else:
        params = raw
        # only the keys naming a layer type in use are read, as transformers' nested_rope_parameter_keys reads them:
        # a sibling scalar (poolside/Laguna-XS.2's "original_max_position_embeddings": 4096 beside the per-type
        # blocks) is ignored; a flat dict (no layer-type key) is not keyed by layer type at all
        used = set(types)
        if not isinstance(params, dict) or not any(k in used for k in params) \
                or not all(isinstance(v, dict) or v is None for k, v in params.items() if k in used):
            raise f.error("rope_parameters", "must be an object keyed by layer type (full_attention, "
                                             "sliding_attention), each that type's RoPE parameters")
        f.derived("rope_parameters", "per layer type", "read per layer type")
    out = {}
    for t in sorted(set(types)):
        block = params.get(t)
        if not isinstance(block, dict):
            raise f.error("rope_parameters", f"has no entry for {t}, a layer type of layer_types")
        theta = block.get("rope_theta")
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
            raise f.error(f"rope_parameters.{t}.rope_theta", f"must be a positive number, got {short(theta)}")
        factor = block.get("partial_rotary_factor", 1.0)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            raise f.error(f"rope_parameters.{t}.partial_rotary_factor", f"must be in (0, 1], got {short(factor)}")
        kind = block.get("rope_type", block.get("type", "default"))
        scaling = () if kind == "default" else tuple(sorted(
            (str(k), v) for k, v in block.items() if k not in ("rope_theta", "partial_rotary_factor")
            and (isinstance(v, (int, float, str, bool)) or v is None)))
        out[t] = (float(theta), int(hd * factor), scaling)
    return out


def read_rotary(f: Fields, head_dim: int, default_factor: float = 1.0) -> tuple[float, int, tuple]:
    """``read_rope`` with the family's default ``partial_rotary_factor`` when the config gives none
    (transformers sets it in the config class: 0.25 for StableLM and Qwen3-Next, 0.5 for Phi)."""
    theta, rotary_dim, scaling = read_rope(f, head_dim)
    given = any(f.has(k) for k in ("partial_rotary_factor", "rotary_pct", "rotary_dim"))
    for block in (f.raw("rope_parameters"), f.raw("rope_scaling")):
        if isinstance(block, dict) and "partial_rotary_factor" in block:
            given = True
    if not given and default_factor != 1.0:
        rotary_dim = f.derived("rotary_dim", int(head_dim * default_factor),
                               f"absent partial_rotary_factor: the family's {default_factor}")
    return theta, rotary_dim, scaling


def read_windows(f: Fields, n_layers: int, policy: str) -> list[tuple[int | None, int | None]]:
    """(sliding window, attention chunk) of every layer (None where absent)."""
    sliding = f.opt_int("sliding_window", lo=0, hi=1 << 30)
    if sliding == 0:
        sliding = None
    types = f.raw("layer_types")
    if types is not None and policy not in ("none", "use_sliding_all"):  # (Qwen3MoeConfig has no layer_types)
        types = check_layer_types(f, n_layers)
        chunk = f.opt_int("attention_chunk_size", hi=1 << 30)
        if policy in ("qwen", "qwen2_moe", "smollm3") and not f.bool("use_sliding_window", False):
            sliding = None
        out = []
        for i, t in enumerate(types):
            if t == "sliding_attention":
                out.append((sliding, None))
            elif t == "chunked_attention":
                if policy == "pattern":  # Gemma 3 / EXAONE 4 have no chunked layers; Rnj-1's block-local ones
                    from .rnj1 import block_local_refused
                    raise block_local_refused(f, i)
                if chunk is None:
                    raise f.error("attention_chunk_size", f"is missing but layer {i} is chunked_attention")
                out.append((None, chunk))
            elif t in ("full_attention", "attention"):
                out.append((None, None))
            else:  # a mamba / linear-attention layer: not something this decoder builds
                raise f.error("layer_types", f"says layer {i} is {short(t)}, but model_type '{f.family}' has attention "
                                             "layers only")
        return out
    if policy == "all":
        return [(sliding, None)] * n_layers
    if policy == "qwen":
        if sliding is None or not f.bool("use_sliding_window", False):
            return [(None, None)] * n_layers
        first = f.int("max_window_layers", 28, lo=0, hi=MAX_LAYERS)
        return [(sliding if i >= first else None, None) for i in range(n_layers)]
    if policy in ("qwen2_moe", "smollm3", "use_sliding_all"):
        if sliding is None or not f.bool("use_sliding_window", False):
            return [(None, None)] * n_layers
        if policy == "use_sliding_all":  # Qwen3MoeAttention: config.sliding_window on every layer
            return [(sliding, None)] * n_layers
        if policy == "smollm3":  # SmolLM3Config's default layer_types: its NoPE layers slide, the RoPE ones are full
            return [(None if rope else sliding, None) for rope in read_no_rope(f, n_layers)]
        # Qwen2MoeConfig's default layer_types: layers 0, 2, 4 ... below max_window_layers slide, the rest are full
        first = f.int("max_window_layers", 28, lo=0, hi=MAX_LAYERS)
        return [(sliding if i % 2 == 0 and i < first else None, None) for i in range(n_layers)]
    if policy == "max_window_layers":
        # Dots1Config: sliding from layer max_window_layers on whenever sliding_window is set (no use_sliding_window)
        if sliding is None:
            return [(None, None)] * n_layers
        first = f.int("max_window_layers", lo=0, hi=MAX_LAYERS)
        return [(sliding if i >= first else None, None) for i in range(n_layers)]
    if policy == "alternate":
        if sliding is None:
            return [(None, None)] * n_layers
        return [(sliding if (i + 1) % 2 else None, None) for i in range(n_layers)]
    if policy == "full_every_4":  # CWM's default layer_types: layers 0, 4, 8 ... full, the others sliding
        return [(None if i % 4 == 0 else sliding, None) for i in range(n_layers)]
    if policy == "full_every_4th":  # Olmo3Config's default layer_types: layers 3, 7, 11 ... full, the others sliding
        return [(None if (i + 1) % 4 == 0 else sliding, None) for i in range(n_layers)]
    if policy == "full_every_5":  # Kolibri-1's default layer_types: layers 4, 9, 14 ... full, the others sliding
        return [(None if (i + 1) % 5 == 0 else sliding, None) for i in range(n_layers)]
    if policy == "flint":  # Flint's default layer_types: full on layers 0, 1, every i % 4 == 1 and the last
        return [(None if i < 2 or i % 4 == 1 or i == n_layers - 1 else sliding, None) for i in range(n_layers)]
    if policy == "window_layout":  # SmallThinker: sliding_window_layout, one 0/1 per layer (1: sliding)
        layout = f.int_list("sliding_window_layout", n_layers, lo=0, hi=1) or [0] * n_layers
        return [(sliding if on else None, None) for on in layout]
    if policy == "pattern":
        if sliding is None:
            return [(None, None)] * n_layers
        raw = f.raw("sliding_window_pattern")
        if isinstance(raw, str):  # EXAONE's "LLLG": local (sliding) or global per layer, repeated
            if not raw or set(raw) - {"L", "G"}:
                raise f.error("sliding_window_pattern", f"is {short(raw)}; expected an int or a string of L and G")
            return [(sliding if raw[i % len(raw)] == "L" else None, None) for i in range(n_layers)]
        pattern = f.int("sliding_window_pattern", 6)
        return [(sliding if (i + 1) % pattern else None, None) for i in range(n_layers)]
    return [(None, None)] * n_layers


KNOWN_LAYER_TYPES = {
    "full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba", "attention",
    "conv", "hybrid", "moe", "dense",
}


def per_layer_types(f: Fields, key: str, n_layers: int | None, allowed, *, values: list | None = None,
                    at_least: bool = False) -> list:
    """A per-layer list of type names (``f``'s ``key``, or ``values`` read from it), one per layer
    (``at_least``: longer lists allowed and cut to ``n_layers``, as transformers does; ``n_layers`` None:
    any length), each a key of ``allowed``: a mapping gives the value each name stands for (legacy names
    included), any other collection the names themselves."""
    v = f.list(key) if values is None else values
    if n_layers is not None and (len(v) < n_layers or (len(v) > n_layers and not at_least)):
        raise f.error(key, f"has {len(v)} entries but num_hidden_layers is {n_layers}")
    v = v if n_layers is None else v[:n_layers]
    for i, t in enumerate(v):
        if not isinstance(t, str) or t not in allowed:
            raise f.error(key, f"entry {i} is {short(t)}; expected one of {', '.join(sorted(allowed))}")
    return [allowed[t] for t in v] if isinstance(allowed, dict) else list(v)


def sparse_layers(f: Fields, n_layers: int) -> set[int]:
    """The MoE layers ``mlp_layer_types`` names: "dense" or "sparse" per layer (Mellum, EXAONE MoE, DeepSeek-V3.2)."""
    return {i for i, t in enumerate(per_layer_types(f, "mlp_layer_types", n_layers, ("dense", "sparse")))
            if t == "sparse"}


def check_layer_types(f: Fields, n_layers: int) -> list[str]:
    types = f.list("layer_types")
    if len(types) != n_layers:
        raise f.error("layer_types", f"has {len(types)} entries but num_hidden_layers is {n_layers}")
    for t in types:
        if not isinstance(t, str) or t not in KNOWN_LAYER_TYPES:
            raise f.error("layer_types", f"has an unknown layer type {short(t)}")
    return types


def read_act(f: Fields, traits: Traits) -> str:
    if f.has(traits.act_key):
        return f.str(traits.act_key)
    for k in ("hidden_act", "activation_function", "hidden_activation"):
        if f.has(k):
            return f.str(k)
    return f.defaulted(traits.act_key, traits.act_default)


def read_eps(f: Fields) -> float:
    for k in ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"):
        if f.has(k):
            return f.float(k)
    return 1e-6


def read_tie(f: Fields, default: bool) -> bool:
    if f.has("tie_word_embeddings"):
        return f.bool("tie_word_embeddings")
    return f.defaulted("tie_word_embeddings", default, "absent: the family's default")



def read_no_rope(f: Fields, n_layers: int) -> list[int]:
    """1 where a layer uses RoPE (transformers' ``no_rope_layers`` naming), default: every
    ``no_rope_layer_interval``-th layer is NoPE."""
    raw = f.raw("no_rope_layers")
    if isinstance(raw, list) and raw:
        return f.int_list("no_rope_layers", n_layers, lo=0, hi=1)
    interval = f.int("no_rope_layer_interval", 4)
    return f.derived("no_rope_layers", [int((i + 1) % interval != 0) for i in range(n_layers)],
                     f"absent or empty: NoPE every {interval} layers")


def pre_norms(make: Callable[[], Norm]) -> tuple[PlacedNorm, ...]:
    """Llama's layout: input_layernorm before the mixer, post_attention_layernorm before the FFN."""
    return (PlacedNorm("input_layernorm", "pre_mixer", make()), PlacedNorm("post_attention_layernorm", "pre_ffn", make()))



def opt_float(f: Fields, key: str) -> float | None:
    return f.float(key) if f.has(key) else None



def mtp_layers(f: Fields, layers: list[Layer]) -> tuple[Layer, ...]:
    n = f.int("num_nextn_predict_layers", 0, lo=0, hi=64)
    if not n or not layers:
        return ()
    return tuple([layers[-1]] * n)


def mtp_extra(f: Fields, hidden: int) -> int:
    """Per MTP module besides its decoder block: enorm, hnorm, eh_proj (2H -> H), the head's norm, and
    the copies of the embedding and output head the checkpoint stores with it (``embed_tokens`` and
    ``shared_head.head``: shared with the main model at run time, stored again on disk)."""
    n = as_int(f.raw("num_nextn_predict_layers", 0)) or 0
    vocab = as_int(f.raw("vocab_size", 0)) or 0
    return n * (3 * hidden + 2 * hidden * hidden + 2 * vocab * hidden)




def read_rope_extra(f: Fields) -> tuple:
    """List-valued rope parameters (longrope's short/long factors), of the full-attention layers when
    ``rope_parameters`` is given per layer type."""
    src = f.raw("rope_scaling")
    if not isinstance(src, dict):
        src = f.raw("rope_parameters")
    if not isinstance(src, dict):
        return ()
    if src and all(isinstance(v, dict) for v in src.values()):
        src = src.get("full_attention", {})
    out = []
    for k, v in src.items():
        if isinstance(v, list):
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                raise f.error(f"rope_scaling.{k}", "must be a list of numbers")
            out.append((str(k), tuple(float(x) for x in v)))
    return tuple(sorted(out))


#: what a config translated onto another class's fields keeps as it is: how the checkpoint stores its weights
STORAGE_KEYS = ("torch_dtype", "dtype", "quantization_config")


def storage_fields(cfg: dict) -> dict:
    """The ``STORAGE_KEYS`` ``cfg`` sets, for a translated config (hf_olmo, phi-msft, mamba_ssm ...) to carry."""
    return {k: cfg[k] for k in STORAGE_KEYS if k in cfg}


def check_groups(f: Fields, n_exp: int, k: int, n_group: int, topk_group: int, experts: str, *,
                 top2: bool = False, top2_one_group: bool = False) -> None:
    """A grouped router's layout: ``k`` (num_experts_per_tok) at most the experts (``experts``: the field that counts
    them), ``n_group`` divides them, ``topk_group`` groups at most, and those hold ``k`` experts; with ``top2`` (a
    group scores by its two best, as transformers' DeepSeek-V3 router) every group of several holds two, with
    ``top2_one_group`` a lone group too (Beam's router ranks its groups whatever their number)."""
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds {experts} ({n_exp})")
    if n_exp % n_group:
        raise f.error("n_group", f"({n_group}) must divide {experts} ({n_exp})")
    if topk_group > n_group:
        raise f.error("topk_group", f"({topk_group}) exceeds n_group ({n_group})")
    if topk_group * (n_exp // n_group) < k:
        raise f.error("topk_group", f"({topk_group}) groups of {n_exp // n_group} experts hold fewer than "
                                    f"num_experts_per_tok ({k})")
    if top2 and (n_group > 1 or top2_one_group) and n_exp // n_group < 2:
        raise f.error("n_group", f"({n_group}) leaves fewer than 2 experts per group: transformers ranks groups by "
                                 "their two best experts")


def read_routing(f: Fields, router: RouterKind, *, norm_default: bool = True, norm_fixed: bool | None = None,
                 scale_default: float = 1.0,
                 n_group_default: int = 1, topk_group_default: int = 1,
                 group_score: GroupScore = GroupScore.NONE) -> dict:
    """A MoE router's numerics (``Numerics`` fields): the config's value, else transformers' class
    default (``family_defaults``), else the given builder default."""
    kw: dict = {"router": router}
    if router in (RouterKind.SOFTMAX, RouterKind.SIGMOID):
        # norm_fixed: the modeling code ignores the field (DeepSeek V2 never renormalises)
        kw["norm_topk_prob"] = norm_fixed if norm_fixed is not None else f.bool("norm_topk_prob", norm_default)
        kw["routed_scaling_factor"] = f.float("routed_scaling_factor", scale_default)
        n_group = f.int("n_group", n_group_default, lo=0) or 1  # null or 0 in some configs: one group
        topk_group = f.int("topk_group", topk_group_default, lo=0) or 1
        kw.update(n_group=n_group, topk_group=topk_group, group_score=group_score if n_group > 1 else GroupScore.NONE)
    return kw
