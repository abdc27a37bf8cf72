"""Xiaomi MiMo-V2-Flash (``mimo_v2_flash``), as transformers 5.24's modeling_mimo_v2_flash.py builds it
(``MiMoV2FlashForCausalLM``).

Attention per ``layer_types`` (default: full on layer 0 and every 6th layer, ``(i + 1) % 6 == 0``, sliding
elsewhere): q/k of ``head_dim``, v of ``v_head_dim`` (o_proj reads heads x v_head_dim, never biased; q/k/v biased
by ``attention_bias``); full layers ``num_key_value_heads`` KV heads, sliding layers twice as many and a learned
sink per query head (``sinks``), over a window of ``sliding_window`` keys (the checkpoint's
``sliding_window_size`` plus the query, as MiMoV2FlashConfig.__post_init__). V is scaled by
``attention_value_scale`` before it is cached. RoPE per layer type (``rope_parameters``, default 5e6 on full and
1e4 on sliding layers) on the first ``int(head_dim x partial_rotary_factor)`` channels (default 0.334: 64 of 192).

FFN per ``mlp_layer_types`` (default: layer 0 dense, the rest sparse): a SwiGLU MLP of ``intermediate_size``, or
``n_routed_experts`` experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``) behind DeepSeek-V3's
sigmoid router (``e_score_correction_bias`` a buffer, for the choice only; groups by the sum of their top two),
no shared expert. lm_head untied by default.

The checkpoint's own fields (``hybrid_layer_pattern``, ``moe_layer_freq``, ``swa_*`` head shapes, sink flags,
``rope_theta`` / ``swa_rope_theta`` / ``partial_rotary_factor``) are not read by transformers: where one
disagrees with what transformers builds, the config is refused rather than counted as something else. Its MTP
layers (``model.mtp.*``) are dropped by transformers on load: not counted.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle, RouterKind
from .common import check_groups, per_layer_types, pre_norms, read_routing

FULL, SLIDING = "full_attention", "sliding_attention"
#: MiMoV2FlashConfig.__post_init__'s rope_parameters when the config has none
ROPE_DEFAULTS = {FULL: 5_000_000.0, SLIDING: 10_000.0}
ROTARY_DEFAULT = 0.334


def _refuse(f: Fields, key: str, value, built) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"{f.where}: field '{key}' is {value!r}, but transformers' MiMo-V2-Flash does not read it and builds "
        f"{built!r} there; counting either would misdescribe this checkpoint",
        "make the checkpoint's field agree with what transformers builds (or drop it)")


def _rope(f: Fields, kind: str, head_dim: int) -> tuple[float, int, tuple]:
    """(theta, rotary_dim, scaling items) of one layer type, as MiMoV2FlashRotaryEmbedding reads them."""
    params = f.raw("rope_parameters")
    if params is None:
        theta, factor, items = ROPE_DEFAULTS[kind], ROTARY_DEFAULT, ()
    else:
        if not isinstance(params, dict) or not isinstance(params.get(kind), dict):
            raise f.error("rope_parameters", f"must map each layer type ({FULL}, {SLIDING}) to its RoPE "
                                             f"parameters; {kind!r} has none")
        block = params[kind]
        theta, factor = block.get("rope_theta"), block.get("partial_rotary_factor", ROTARY_DEFAULT)
        for name, v in (("rope_theta", theta), ("partial_rotary_factor", factor)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise f.error("rope_parameters", f"{kind}.{name} must be a positive number, got {v!r}")
        if factor > 1:
            raise f.error("rope_parameters", f"{kind}.partial_rotary_factor must be in (0, 1], got {factor}")
        rope_type = block.get("rope_type", block.get("type", "default"))
        if kind == SLIDING and rope_type != "default":
            raise UnsupportedModelError(f"{f.where}: rope_parameters.{SLIDING} has rope_type {rope_type!r}; "
                                        "only plain RoPE on the sliding layers is modelled")
        items = tuple(sorted((str(k), v) for k, v in block.items() if isinstance(v, (int, float, str, bool))))
    rotary_dim = int(head_dim * float(factor))
    f.derived(f"rotary_dim.{kind}", rotary_dim, f"int(head_dim x partial_rotary_factor {factor})")
    return float(theta), rotary_dim, items


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    head_dim = f.int("head_dim")  # transformers reads it as is (class default 192)
    v_head_dim = f.int("v_head_dim")
    vocab = f.int("vocab_size", hi=1 << 26)
    inter = f.int("intermediate_size")

    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n_layers, (FULL, SLIDING))
    else:
        types = f.derived("layer_types", [FULL if i == 0 or (i + 1) % 6 == 0 else SLIDING for i in range(n_layers)],
                          "absent: full on layer 0 and every 6th layer, sliding elsewhere (the config class)")
    if f.raw("mlp_layer_types") is not None:
        mlp_types = per_layer_types(f, "mlp_layer_types", n_layers, ("dense", "sparse"))
    else:
        mlp_types = f.derived("mlp_layer_types", ["dense"] + ["sparse"] * (n_layers - 1),
                              "absent: layer 0 dense, the rest sparse (the config class)")

    # checkpoint fields transformers never reads: they must describe what it builds
    for key, built in (("hybrid_layer_pattern", [int(t == SLIDING) for t in types]),
                       ("moe_layer_freq", [int(t == "sparse") for t in mlp_types])):
        raw = f.cfg.get(key)
        if raw is not None and raw != built:
            if not isinstance(raw, list):
                raise f.error(key, "must be a list of 0 / 1, one per layer")
            raise _refuse(f, key, raw, built)
    sliding_any = SLIDING in types
    same = {"swa_num_attention_heads": heads, "swa_head_dim": head_dim, "swa_v_head_dim": v_head_dim,
            "swa_num_key_value_heads": 2 * kv, "add_swa_attention_sink_bias": True,
            "add_full_attention_sink_bias": False}
    for key, built in same.items():
        raw = f.cfg.get(key)
        if raw is not None and raw != built and (sliding_any or not key.startswith(("swa_", "add_swa"))):
            raise _refuse(f, key, raw, built)
    if f.cfg.get("n_shared_experts") not in (None, 0):
        raise _refuse(f, "n_shared_experts", f.cfg["n_shared_experts"], None)

    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    if sliding_any and heads % (2 * kv):
        raise f.error("num_key_value_heads", f"({kv}) x 2 (the sliding layers' KV heads) must divide "
                                             f"num_attention_heads ({heads})")
    window = None
    if sliding_any:
        if f.raw("sliding_window_size") is not None:
            window = f.derived("sliding_window", f.int("sliding_window_size", hi=1 << 30) + 1,
                               "sliding_window_size + 1 (the window's keys and the query)")
        else:
            window = f.int("sliding_window", hi=1 << 30)
    rope = {kind: _rope(f, kind, head_dim) for kind in sorted(set(types))}
    for key, kind in (("rope_theta", FULL), ("swa_rope_theta", SLIDING)):
        raw = f.cfg.get(key)  # (the config's own: the family defaults carry a generic rope_theta)
        if raw is not None and kind in rope and raw != rope[kind][0]:
            raise _refuse(f, key, raw, rope[kind][0])
    raw = f.cfg.get("partial_rotary_factor")
    if raw is not None:  # the rotary width it would give every layer
        number = isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 < raw <= 1
        width = int(head_dim * raw) if number else None
        if any(width != r[1] for r in rope.values()):
            raise _refuse(f, "partial_rotary_factor", raw, {kind: r[1] for kind, r in rope.items()})

    bias = f.bool("attention_bias")
    act = f.str("hidden_act")
    experts = "n_routed_experts" if f.raw("num_local_experts") is None else "num_local_experts"
    n_exp, k = f.int(experts), f.int("num_experts_per_tok")
    moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"), act=act) if "sparse" in mlp_types else None
    mlp = MLP(hidden, inter, act=act) if "dense" in mlp_types else None

    # a null routed_scaling_factor (the hub config's) is 1.0, as MiMoV2FlashConfig.__post_init__
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=1.0)
    n_group, topk_group = routing["n_group"], routing["topk_group"]
    check_groups(f, n_exp, k, n_group, topk_group, experts, top2=True)
    if n_group > 1:
        routing["group_score"] = GroupScore.TOP2
    value_scale = 1.0 if f.raw("attention_value_scale", 0) is None else f.float("attention_value_scale")

    eps = f.float("rms_norm_eps")
    norms = pre_norms(lambda: Norm(hidden))
    layers = []
    for i in range(n_layers):
        sliding = types[i] == SLIDING
        theta, rotary_dim, _ = rope[types[i]]
        mixer = Attention(hidden, heads, 2 * kv if sliding else kv, head_dim, v_head_dim, q_bias=bias, k_bias=bias,
                          v_bias=bias, window=window if sliding else None, rotary_dim=rotary_dim, rope_theta=theta,
                          sinks=sliding)
        layers.append(Layer(mixer, moe if mlp_types[i] == "sparse" else mlp, norms))
    scaling = rope[FULL][2] if FULL in rope else ()
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=f.bool("tie_word_embeddings"), final_norm=Norm(hidden), hidden_act=act, norm_eps=eps,
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40), rope_scaling=scaling,
        numerics=Numerics(rope_style=RopeStyle.HALF, rope_plain_on_windows=True, score_correction_bias=True,
                          value_scale=value_scale, **routing),
        caveats=("MiMo-V2-Flash's MTP layers (model.mtp.* in the checkpoint) are dropped by transformers on load "
                 "and not counted",),
    )
