"""Gemma 4 (``gemma4_text``; the ``gemma4`` wrapper's language model), as transformers 5.24's
modeling_gemma4.py builds it.

- Layers: ``layer_types`` (default: five sliding layers, then one full; the last layer is always full).
  Sliding layers: ``num_key_value_heads`` heads of ``head_dim``, window ``sliding_window``, RoPE at the
  sliding theta. Full layers: heads of ``global_head_dim`` (default 512), ``num_global_key_value_heads``
  of them when ``attention_k_eq_v`` (else ``num_key_value_heads``), proportional RoPE.
- ``attention_k_eq_v``: full layers have no v_proj; V is the K projection, v-normed (a weightless RMSNorm)
  where K is k-normed and roped, so K and V are still two cached tensors.
- q_norm and k_norm over head_dim (weights applied as is, no +1), a weightless v_norm, softmax scale 1.
- ``num_kv_shared_layers``: the last that many layers have no K/V projections (nor k_norm) and no cache:
  they attend over the K/V of the last earlier layer of their type. ``use_double_wide_mlp`` doubles the
  MLP of those layers.
- ``enable_moe_block``: every layer has the dense MLP (``intermediate_size``) AND a routed MoE beside it
  (``num_experts`` of ``moe_intermediate_size``, ``top_k_experts`` per token), summed after their own
  post-norms. Here the dense MLP is the MoE's always-on shared part (``shared_expert``); the router has a
  weightless RMSNorm, a learned input scale (hidden) and a per-expert output scale.
- Per-layer inputs (PLE, ``hidden_size_per_layer_input`` > 0): ``embed_tokens_per_layer``
  (``vocab_size_per_layer_input`` x layers·width), ``per_layer_model_projection`` and its norm at model
  level; per layer ``per_layer_input_gate``, ``per_layer_projection`` and ``post_per_layer_input_norm``.
- ``layer_scalar`` (one per layer) is a buffer, not a parameter. Embeddings scaled by sqrt(hidden),
  tied by default; ``final_logit_softcapping``.

The torch decoder (runtime/model.py) runs all of it from the spec: ``Numerics.proportional_rope`` and
``layer_scalar``, the ``Attention`` flags, ``Layer.per_layer_input``, ``MoE.router_scales``; the
checkpoint's MoE names map onto ours through ``MOE_MODULES``.

Gemma 4 unified (``gemma4_unified_text``, ``build_unified``): the same layers (Gemma4UnifiedTextDecoderLayer is
Gemma 2's sandwich block around Gemma 4's attention and MLP, scaled by ``layer_scalar``) without per-layer inputs or
the MoE block; its wrapper's encoder-free embedders are counted in analysis/vision.py.

A ``per_layer_config`` is read in the form transformers 5 derives and saves (the full layers' head_dim and KV
heads); any other per-layer override, or ``use_bidirectional_attention: "all"`` (not a causal decoder), is
refused rather than counted wrong.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm
from .common import check_layer_types, read_act, read_eps, read_tie, Traits

TRAITS = Traits(act_key="hidden_activation", act_default="gelu_pytorch_tanh")


def sliding_full_layer_types(f: Fields, n_layers: int, family: str, period: int) -> list[str]:
    """``layer_types`` of a Gemma 3n / Gemma 4 text config: sliding and full attention only; absent,
    ``period - 1`` sliding layers then one full, repeated (their config classes' default)."""
    if f.raw("layer_types") is not None:
        types = list(check_layer_types(f, n_layers))
        for i, t in enumerate(types):
            if t not in ("sliding_attention", "full_attention"):
                raise f.error("layer_types", f"says layer {i} is {t}; {family} has sliding and full attention only")
        return types
    return f.derived("layer_types", ["sliding_attention" if (i + 1) % period else "full_attention"
                                     for i in range(n_layers)], f"absent: {period - 1} sliding layers, then one full")


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    types = sliding_full_layer_types(f, n_layers, "Gemma 4", 6)
    if types[-1] != "full_attention":  # Gemma4TextConfig forces it
        types[-1] = f.derived("layer_types[-1]", "full_attention", "the last layer is always full attention")
    return types


def _rope(f: Fields, kind: str, default_theta: float) -> tuple[float, float]:
    """(theta, partial_rotary_factor) of one layer type from ``rope_parameters``."""
    params = f.raw("rope_parameters")
    block = params.get(kind) if isinstance(params, dict) else None
    theta, factor = default_theta, 1.0
    if isinstance(block, dict):
        v = block.get("rope_theta")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            theta = float(v)
        v = block.get("partial_rotary_factor")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if not 0 < v <= 1:
                raise f.error(f"rope_parameters.{kind}.partial_rotary_factor", f"must be in (0, 1], got {v}")
            factor = float(v)
    elif params is None:
        factor = 0.25 if kind == "full_attention" else 1.0  # Gemma4TextConfig's default rope_parameters
    return theta, factor


def _full_layer_overrides(f: Fields, types: list[str]) -> dict:
    """What a saved ``per_layer_config`` says of the full-attention layers. transformers 5 derives it in
    Gemma4TextConfig.__post_init__ ({full layer index: {"head_dim": global_head_dim[, "num_key_value_heads":
    num_global_key_value_heads]}}) and saves it *instead of* global_head_dim / num_global_key_value_heads, so a
    re-saved checkpoint's config carries only this. That form is read; any other per-layer override is refused."""
    plc = f.raw("per_layer_config")
    if plc is None:
        return {}
    bad = f.error("per_layer_config", "overrides layers other than the full-attention ones, or differently per "
                  "layer: not supported (only the form Gemma4TextConfig derives)")
    if not isinstance(plc, dict):
        raise bad
    full = {i for i, t in enumerate(types) if t == "full_attention"}
    keys, values = set(), []
    for k, v in plc.items():
        try:
            keys.add(int(k))
        except (TypeError, ValueError):
            raise bad from None
        if not isinstance(v, dict) or not set(v) <= {"head_dim", "num_key_value_heads"}:
            raise bad
        values.append(v)
    if keys != full or any(v != values[0] for v in values):
        raise bad
    out = dict(values[0]) if values else {}
    for k, v in out.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise f.error("per_layer_config", f"gives {k} {v!r}: must be a positive integer")
    return out


def build_unified(f: Fields, model_type: str) -> ModelSpec:
    """Gemma 4 unified's language model (``gemma4_unified_text``): Gemma 4's layers without per-layer inputs
    or the MoE block. Gemma4UnifiedTextModel never builds them, whatever the config says
    (``hidden_size_per_layer_input``, ``enable_moe_block`` ... are not read); sliding_window defaults to 1024."""
    return build(f, model_type, ple_and_moe=False)


def build(f: Fields, model_type: str, *, ple_and_moe: bool = True) -> ModelSpec:
    if f.raw("use_bidirectional_attention") == "all":
        raise f.error("use_bidirectional_attention", "is 'all': not a causal decoder, not supported")
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = f.int("num_key_value_heads", heads)
    hd = f.int("head_dim", 256)
    types = _layer_types(f, n_layers)
    derived = _full_layer_overrides(f, types)
    k_eq_v = f.bool("attention_k_eq_v", False)
    if derived:
        # a re-saved config: per_layer_config stands for global_head_dim / num_global_key_value_heads
        for key, field in (("head_dim", "global_head_dim"), ("num_key_value_heads", "num_global_key_value_heads")):
            given = f.raw(field)
            if given is not None and key in derived and given != derived[key]:
                raise f.error(field, f"({given}) disagrees with per_layer_config's {key} ({derived[key]})")
        global_hd = derived.get("head_dim", f.int("global_head_dim", 512, note="absent: Gemma4TextConfig's default"))
        global_kv = derived.get("num_key_value_heads", f.int("num_global_key_value_heads", None)) if k_eq_v else None
    else:
        global_hd = f.int("global_head_dim", 512, note="absent: Gemma4TextConfig's default")
        global_kv = f.int("num_global_key_value_heads", None) if k_eq_v else None
    full_kv = global_kv if global_kv is not None else kv
    for key, n in (("num_key_value_heads", kv), ("num_global_key_value_heads", full_kv)):
        if n > heads or heads % n:
            raise f.error(key, f"({n}) must divide num_attention_heads ({heads})")
    bias = f.bool("attention_bias", False)
    act = read_act(f, TRAITS)
    inter = f.int("intermediate_size")
    window = f.int("sliding_window", 512, hi=1 << 30)
    n_shared = f.int("num_kv_shared_layers", 0, lo=0, hi=MAX_LAYERS)
    first_shared = n_layers - n_shared
    if n_shared and (n_shared >= n_layers or set(types[:first_shared]) != set(types)):
        raise f.error("num_kv_shared_layers", f"({n_shared}) leaves no earlier layer of every type to share K/V from")
    double_wide = f.bool("use_double_wide_mlp", False)
    moe = None
    if ple_and_moe and f.bool("enable_moe_block", False):
        n_exp = f.int("num_experts")
        k = f.int("top_k_experts")
        if k > n_exp:
            raise f.error("top_k_experts", f"({k}) exceeds num_experts ({n_exp})")
        moe = (n_exp, k, f.int("moe_intermediate_size"))
    ple = f.int("hidden_size_per_layer_input", 0, lo=0) if ple_and_moe else 0
    ple_vocab = f.int("vocab_size_per_layer_input", vocab, hi=1 << 26) if ple else 0
    s_theta, _ = _rope(f, "sliding_attention", 10000.0)
    g_theta, g_factor = _rope(f, "full_attention", 1_000_000.0)

    norm = lambda: Norm(hidden)  # noqa: E731
    layers = []
    for i, t in enumerate(types):
        full = t == "full_attention"
        d, n_kv = (global_hd, full_kv) if full else (hd, kv)
        shared = i >= first_shared
        attn = Attention(hidden, heads, n_kv, d, d, bias, bias, bias, bias, q_norm_dim=d, k_norm_dim=d,
                         window=None if full else window, rotary_dim=d, rope_theta=g_theta if full else s_theta,
                         k_eq_v=k_eq_v and full, v_norm=True, kv_shared=shared)
        dense = inter * (2 if double_wide and shared else 1)
        norms = [PlacedNorm("input_layernorm", "pre_mixer", norm()),
                 PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                 PlacedNorm("pre_feedforward_layernorm", "pre_ffn", norm()),
                 PlacedNorm("post_feedforward_layernorm", "post_ffn", norm())]
        if moe is not None:
            ffn: MLP | MoE = MoE(hidden, moe[0], moe[1], moe[2], shared_intermediate_size=dense, act=act,
                                 router_scales=True)
            norms += [PlacedNorm("post_feedforward_layernorm_1", "post_ffn_shared", norm()),
                      PlacedNorm("pre_feedforward_layernorm_2", "pre_experts", norm()),
                      PlacedNorm("post_feedforward_layernorm_2", "post_experts", norm())]
        else:
            ffn = MLP(hidden, dense, act=act)
        if ple:
            norms.append(PlacedNorm("post_per_layer_input_norm", "post_per_layer_input", norm()))
        layers.append(Layer(attn, ffn, tuple(norms), per_layer_input=ple))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), final_norm=norm(), hidden_act=act, norm_eps=read_eps(f),
        embedding_multiplier=hidden ** 0.5, query_pre_attn_scalar=1.0,  # softmax scale 1 (q/k are normed)
        final_logit_softcapping=f.float("final_logit_softcapping") if f.has("final_logit_softcapping") else None,
        per_layer_input_size=ple, per_layer_vocab_size=ple_vocab,
        numerics=Numerics(proportional_rope=g_factor, layer_scalar=True),
        checkpoint=CheckpointLayout(modules=MOE_MODULES) if moe is not None else CheckpointLayout(),
    )


#: transformers' names of the MoE beside the dense MLP -> ours (the dense MLP is our shared_expert)
MOE_MODULES = ((".mlp.gate_proj.", ".mlp.shared_expert.gate_proj."), (".mlp.up_proj.", ".mlp.shared_expert.up_proj."),
               (".mlp.down_proj.", ".mlp.shared_expert.down_proj."), (".router.proj.", ".mlp.router."),
               (".router.scale", ".mlp.router.scale"), (".router.per_expert_scale", ".mlp.router.per_expert_scale"),
               (".experts.gate_up_proj", ".mlp.experts.gate_up_proj"), (".experts.down_proj", ".mlp.experts.down_proj"))
