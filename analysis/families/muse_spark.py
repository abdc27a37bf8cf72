"""Muse Spark's language model (``muse_spark_text``), as transformers 5.24's modeling_muse_spark.py builds
MuseSparkTextModel (with the wrapper's untied ``lm_head``; the wrapper ``muse_spark`` is refused apart).

- Embedding then a weightless RMSNorm. Attention: GQA (``num_key_value_heads``, ``head_dim`` class default 64), q/k/v/o
  biased by ``attention_bias``, weightless RMSNorms of q and k (q times ``qk_scale_factor``) and of the attention
  output, then a sigmoid gate from a bias-free ``gate_proj`` (hidden -> heads x head_dim) per feature before
  ``o_proj``. ``layer_types`` (absent: full every fourth layer counted back from the last, the others sliding with
  ``sliding_window`` keys, 2048, cached only that far); RoPE at ``rope_parameters.rope_theta`` (500000) wherever
  ``layer_rope_theta`` is non-zero (absent: NoPE on those same full layers; transformers reads only zero / non-zero).
- Norms: a centred RMSNorm (1 + w) before attention and before the FFN, a weightless one after attention, an
  input-scaled one after the FFN; each residual add is a learned gate (``post_attention_residual_gate``,
  ``post_feedforward_residual_gate``: one hidden-size vector each).
- FFN per layer by ``mlp_layer_types`` (absent: all sparse): a SwiGLU of ``intermediate_size``, or a MoE whose router
  (``num_local_experts`` x hidden, sigmoid with a correction-bias buffer, always renormalised) reads hidden while the
  ``num_local_experts`` SwiGLU experts of ``moe_intermediate_size`` run at ``moe_hidden_size``: ``pre_expert_proj``
  and its centred ``pre_expert_norm`` before, one ``post_expert_norm`` on each expert's output, ``post_expert_proj``
  after. No shared expert.
- Final RMSNorm; an lm_head of its own (transformers never ties it, whatever ``tie_word_embeddings``); logits
  times ``output_multiplier`` then soft-capped by ``final_logit_softcapping``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.attention import GatedAttention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, RouterKind
from .common import Traits, per_layer_types, read_act, read_eps, read_tie, sparse_layers


def _never_tied(f: Fields) -> bool:
    """MuseSparkForConditionalGeneration declares no tied weights: its lm_head is its own whatever
    tie_word_embeddings says."""
    if read_tie(f, False):
        f.derived("tie_word_embeddings", False, "true in the config, but transformers' Muse Spark never ties its "
                                               "lm_head (no _tied_weights_keys)")
    return False

_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class AttentionLayout:
    """What Muse Spark and Muse Glimmer read alike for their attention (see ``attention_layout``)."""
    hidden: int
    n_layers: int
    heads: int
    kv: int
    head_dim: int
    vocab: int
    types: list
    theta: float
    roped: list
    window: int | None


def _theta(f: Fields, family: str, default: float, hint: str) -> float:
    params = f.raw("rope_parameters")
    if params is None:
        return f.float("rope_theta", default)
    if not isinstance(params, dict):
        raise f.error("rope_parameters", f"must be a mapping, got {params!r}")
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind != "default" or "partial_rotary_factor" in params:
        raise UnsupportedModelError(f"{f.where}: {family} with rope {params!r} is not supported yet", hint)
    theta = params.get("rope_theta", default)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise f.error("rope_parameters.rope_theta", f"must be a positive number, got {theta!r}")
    return float(theta)


def attention_layout(f: Fields, family: str, default_theta: float, rope_hint: str) -> AttentionLayout:
    """The shapes, layer types (absent: full every fourth layer counted back from the last, the others sliding),
    RoPE base and per-layer RoPE (``layer_rope_theta``; absent: NoPE on those full layers) and window of Muse
    Spark's and Muse Glimmer's gated attention (their configs' validate_architecture checks included)."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads, kv = f.int("num_attention_heads"), f.int("num_key_value_heads")
    if hidden % heads:  # the text config's validate_architecture
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    if heads % kv:
        raise f.error("num_attention_heads", f"({heads}) must be a multiple of num_key_value_heads ({kv})")
    hd = f.int("head_dim")
    vocab = f.int("vocab_size", hi=1 << 26)
    last_rule = [(n_layers - 1 - i) % 4 == 0 for i in range(n_layers)]
    if f.raw("layer_types") is None:
        types = f.derived("layer_types", ["full_attention" if x else "sliding_attention" for x in last_rule],
                          "absent: full every fourth layer counted back from the last, the others sliding")
    else:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    theta = _theta(f, family, default_theta, rope_hint)
    if f.raw("layer_rope_theta") is None:
        roped = f.derived("layer_rope_theta", [not x for x in last_rule],
                          "absent: NoPE every fourth layer counted back from the last, RoPE elsewhere")
    else:
        raw = f.list("layer_rope_theta")
        if len(raw) != n_layers or any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in raw):
            raise f.error("layer_rope_theta", f"must list a RoPE base >= 0 (0: NoPE) for each of the {n_layers} "
                                              "layers")
        roped = [x > 0 for x in raw]
    window = f.int("sliding_window", hi=1 << 30) if "sliding_attention" in types else None
    return AttentionLayout(hidden, n_layers, heads, kv, hd, vocab, types, theta, roped, window)


def build(f: Fields, model_type: str) -> ModelSpec:
    lo = attention_layout(f, "muse_spark_text", 500_000.0, "its released config uses plain RoPE")
    hidden, n_layers, heads, kv, hd, vocab = lo.hidden, lo.n_layers, lo.heads, lo.kv, lo.head_dim, lo.vocab
    types, theta, roped, window = lo.types, lo.theta, lo.roped, lo.window
    if f.raw("mlp_layer_types") is None:
        moe_at = set(range(n_layers))
        f.derived("mlp_layer_types", ["sparse"] * n_layers, "absent: every layer sparse")
    else:
        moe_at = sparse_layers(f, n_layers)
    bias = f.bool("attention_bias", False)
    act = read_act(f, Traits())
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if len(moe_at) < n_layers else None
    moe = None
    if moe_at:
        n_exp, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"), act=act,
                  expert_hidden_size=f.int("moe_hidden_size"))
    norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
             PlacedNorm("post_attention_layernorm", "post_mixer", Norm(hidden, affine=False)),
             PlacedNorm("pre_feedforward_layernorm", "pre_ffn", Norm(hidden)),
             PlacedNorm("post_feedforward_layernorm", "post_ffn", Norm(hidden)))
    layers = []
    for i, t in enumerate(types):
        attn = GatedAttention(hidden, heads, kv, hd, hd, bias, bias, bias, bias,
                              window=window if t == "sliding_attention" else None,
                              rotary_dim=hd if roped[i] else 0, rope_theta=theta, proj_gate=True)
        layers.append(Layer(attn, moe if i in moe_at else dense, norms, residual_gates=True))
    numerics = Numerics(router=RouterKind.SIGMOID, norm_topk_prob=True, score_correction_bias=True,
                        routed_scaling_factor=f.float("routed_scaling_factor", 1.0),
                        logit_scale=f.float("output_multiplier", 1.0))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=_never_tied(f), final_norm=Norm(hidden), embedding_norm=Norm(hidden, affine=False),
        hidden_act=act, norm_eps=read_eps(f), max_position_embeddings=f.int("max_position_embeddings", hi=1 << 30),
        final_logit_softcapping=f.float("final_logit_softcapping", 20.0), numerics=numerics,
    )
