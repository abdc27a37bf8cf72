"""Apple OpenELM (``openelm``: apple/OpenELM-270M / 450M / 1_1B / 3B and their -Instruct twins), a remote-code
family (transformers ships none, vLLM serves none), counted from the hub's ``configuration_openelm.py`` and
``modeling_openelm.py``.

Layer-wise scaling: ``OpenELMConfig.__post_init__`` recomputes the per-layer shapes from the multipliers every
time a config is loaded (the ``num_query_heads`` / ``num_kv_heads`` lists a saved config.json carries are
overwritten), so they are recomputed here the same way:

- ``qkv_multipliers`` (a number, or two numbers ``[lo, hi]`` spread by ``numpy.linspace`` over
  ``num_transformer_layers`` and rounded to 2 decimals); layer i's query width is
  ``make_divisible(model_dim · m_i, divisor=head_dim · num_gqa_groups)``, its query heads that / ``head_dim``,
  its K/V heads those / ``num_gqa_groups``;
- ``ffn_multipliers`` (a number, two numbers spread the same way, or one per layer as the saved configs hold
  them): layer i's FFN width is ``make_divisible(m_i · model_dim, divisor=ffn_dim_divisor)``.

A layer: ``attn_norm`` (RMSNorm), ``attn.qkv_proj`` (one bias-free Linear to (q + 2·kv) · head_dim rows, [q; k; v]
by heads), q / k RMSNorms over head_dim with ``normalize_qk_projections``, RoPE (``rope_freq_constant``) over the
whole head, ``attn.out_proj``; ``ffn_norm`` then ``ffn.proj_1`` (model_dim -> 2 · width, the first half through
the activation, times the second: a fused [gate; up]) and ``ffn.proj_2``. ``transformer.token_embeddings``, a
final ``transformer.norm``, the head shares the embedding (``share_input_output_layers``; every published config).
All norms are OpenELMRMSNorm(eps 1e-6). The cache holds each layer's own K/V heads (the hub's code caches the keys
before RoPE; the bytes are the same).

Counted and matched: OpenELM-270M 271,527,168 (the hub's 272M), 450M 457,179,136 (457M), 1_1B 1,079,891,456
(1.08B), 3B 3,036,647,424 (3.04B); the paper's 0.27 / 0.45 / 1.08 / 3.04 B. ``ffn_with_glu`` false (a plain
proj_1 / proj_2 FFN) is read. Refused: an untied head (the hub's OpenELMModel then also builds an unused
``transformer.classifier`` beside ``lm_head``; no checkpoint unties), a ``qkv_multipliers`` list of other than two
numbers (the hub's code raises), a normalization other than ``rms_norm``.
"""

from __future__ import annotations

from numbers import Real

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, PlacedNorm

#: OpenELMForCausalLM's checkpoint names -> ours; qkv_proj's rows are [q; k; v] by heads, proj_1's [gate; up]
OPENELM_LAYOUT = CheckpointLayout(
    renames=(("transformer.token_embeddings.", "model.embed_tokens."), ("transformer.layers.", "model.layers."),
             ("transformer.norm.", "model.norm.")),
    modules=((".attn.qkv_proj.", ".self_attn.qkv_proj."), (".attn.out_proj.", ".self_attn.o_proj."),
             (".attn.q_norm.", ".self_attn.q_norm."), (".attn.k_norm.", ".self_attn.k_norm."),
             (".ffn.proj_1.", ".mlp.gate_up_proj."), (".ffn.proj_2.", ".mlp.down_proj."),
             (".attn_norm.", ".input_layernorm."), (".ffn_norm.", ".post_attention_layernorm.")))


def make_divisible(v: float, divisor: int) -> int:
    """configuration_openelm.make_divisible (min_value = divisor): round to the nearest multiple, never down by
    more than 10 %."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _linspace_round2(lo: float, hi: float, n: int) -> list[float]:
    """``[round(v, 2) for v in numpy.linspace(lo, hi, num=n)]`` in pure Python, bit for bit: numpy's linspace is
    ``arange(n) · step + lo`` with the last entry set to ``hi``, and numpy's float64 round is rint(v · 100) / 100
    (Python's ``round`` to an integer is round-half-even, as rint)."""
    if n == 1:
        vals = [float(lo)]
    else:
        step = (hi - lo) / (n - 1)
        vals = [i * step + lo for i in range(n)]
        vals[-1] = float(hi)
    return [round(v * 100) / 100 for v in vals]


def _multipliers(f: Fields, key: str, default: float, n_layers: int, per_layer_ok: bool) -> list[float]:
    raw = f.raw(key)
    if raw is None:
        f.defaulted(key, default, "OpenELMConfig's default")
        raw = default
    if isinstance(raw, Real) and not isinstance(raw, bool):
        vals = [float(raw)] * n_layers
    elif isinstance(raw, (list, tuple)) and all(isinstance(v, Real) and not isinstance(v, bool) for v in raw):
        if len(raw) == 2:
            vals = _linspace_round2(float(raw[0]), float(raw[1]), n_layers)
        elif per_layer_ok and len(raw) == n_layers:
            vals = [float(v) for v in raw]
        else:
            want = f"two numbers or {n_layers} (one per layer)" if per_layer_ok else "exactly two numbers"
            raise f.error(key, f"has {len(raw)} entries: OpenELMConfig takes a number, {want}")
    else:
        raise f.error(key, f"must be a number or a list of numbers, got {raw!r}")
    if any(v <= 0 for v in vals):
        raise f.error(key, f"must be positive, got {raw!r}")
    return vals


def build(f: Fields, model_type: str) -> ModelSpec:
    # OpenELMConfig (the hub's configuration_openelm.py) defaults
    hidden = f.int("model_dim", 2048, note="OpenELMConfig's default")
    n_layers = f.int("num_transformer_layers", 12, hi=MAX_LAYERS, note="OpenELMConfig's default")
    hd = f.int("head_dim", 128, note="OpenELMConfig's default")
    vocab = f.int("vocab_size", 32000, hi=1 << 26)
    groups = f.int("num_gqa_groups", 1, note="OpenELMConfig's default")
    if hidden % hd:
        raise f.error("head_dim", f"({hd}) must divide model_dim ({hidden}) (configuration_openelm.compute_heads)")
    qkv_m = _multipliers(f, "qkv_multipliers", 1.0, n_layers, per_layer_ok=False)
    ffn_m = _multipliers(f, "ffn_multipliers", 4.0, n_layers, per_layer_ok=True)
    glu = f.bool("ffn_with_glu", True, note="OpenELMConfig's default")
    divisor = f.int("ffn_dim_divisor", 256, note="OpenELMConfig's default")
    act = f.str("activation_fn_name", "swish", note="OpenELMConfig's default")
    norm_name = f.str("normalization_layer_name", "rms_norm", note="OpenELMConfig's default")
    if norm_name != "rms_norm":
        raise f.error("normalization_layer_name", f"({norm_name!r}): the hub's modeling_openelm.py builds only "
                                                  "OpenELMRMSNorm ('rms_norm')")
    qk_norm = f.bool("normalize_qk_projections", False, note="OpenELMConfig's default")
    if not f.bool("share_input_output_layers", False, note="OpenELMConfig's default"):
        raise f.error("share_input_output_layers", "is false: the hub's modeling_openelm.py then builds both "
                                                   "lm_head and an unused transformer.classifier; not modelled (every "
                                                   "published OpenELM shares the embedding)")
    theta = f.float("rope_freq_constant", 10000.0, note="OpenELMConfig's default")
    q_heads = [make_divisible(hidden * m, hd * groups) // hd for m in qkv_m]
    f.derived("num_query_heads", q_heads, "make_divisible(model_dim x qkv_multiplier, head_dim x num_gqa_groups) / "
                                          "head_dim per layer (OpenELMConfig.__post_init__; a saved list is ignored)")
    kv_heads = [q // groups for q in q_heads]
    if any(kv < 1 or q % kv for q, kv in zip(q_heads, kv_heads)):
        raise f.error("num_gqa_groups", f"({groups}) leaves a layer without whole K/V heads ({q_heads})")
    widths = [make_divisible(m * hidden, divisor) for m in ffn_m]
    f.derived("ffn_widths", widths, "make_divisible(ffn_multiplier x model_dim, ffn_dim_divisor) per layer")

    def norm() -> Norm:
        return Norm(hidden)

    layers = []
    for q, kv, width in zip(q_heads, kv_heads, widths):
        attn = Attention(hidden, q, kv, hd, hd, fused_qkv=True, q_norm_dim=hd if qk_norm else 0,
                         k_norm_dim=hd if qk_norm else 0, rotary_dim=hd, rope_theta=theta)
        mlp = MLP(hidden, width, gated=glu, fused_gate_up=glu, act=act)
        layers.append(Layer(attn, mlp, (PlacedNorm("input_layernorm", "pre_mixer", norm()),
                                        PlacedNorm("post_attention_layernorm", "pre_ffn", norm()))))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=True, final_norm=norm(), hidden_act=act, norm_eps=1e-6, checkpoint=OPENELM_LAYOUT,
    )
