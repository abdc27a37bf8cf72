"""Cohere Compass (``cohere_compass_text``, and the ``cohere_compass`` wrapper: North-Micro-Vision), as transformers
5.24's modeling_cohere_compass.py builds CohereCompassForCausalLM and CohereCompassForConditionalGeneration.

The language model is Cohere 2's block (``analysis.families.cohere``): one bias-free LayerNorm feeding attention and
a SwiGLU MLP in parallel, head_dim hidden_size / num_attention_heads (the config class sets it), GQA, q/k/v/o biased
by ``attention_bias``, a final bias-free LayerNorm, tied by default. What differs from Cohere 2:

- ``layer_types`` absent means every layer full (not three sliding then one full); sliding layers keep
  ``sliding_window`` keys.
- RoPE per layer type: ``rope_parameters`` maps each layer type to its own parameters (``rope_theta``) or to null
  (NoPE on that type). CohereCompassRotaryEmbedding reads ``rope_parameters[layer_type]`` for every type in
  ``layer_types``, so a config without that mapping (the class default, whose rope_parameters standardise to one
  flat dict) does not build in transformers (KeyError 'full_attention'): it is refused here with that reason.
- Qwen3's rotate-half RoPE with interleaved M-RoPE sections: for text positions every section sees the same
  position, which is plain half-split RoPE (not Cohere 2's interleaved pairs).
- Logits times ``logit_scale`` only when it is set (class default None: unscaled).

The wrapper is Qwen3-VL's (Qwen3VLForConditionalGeneration): its vision tower is Qwen3-VL's with the DeepStack
mergers (``analysis.vision.qwen3_vl_vision``, CohereCompassVisionConfig's defaults are Qwen3-VL's) and the wrapper's
``tie_word_embeddings`` (class default false) decides the lm_head.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm, RopeStyle, Tensor
from .common import per_layer_types, read_act, read_eps, read_kv_heads, read_tie
from .cohere import TRAITS


def _rope_by_type(f: Fields, types: list[str]) -> dict[str, float | None]:
    """Each layer type's RoPE base, None for NoPE (rope_parameters[layer_type] is null)."""
    params = f.raw("rope_parameters")
    if not isinstance(params, dict) or not all(t in params for t in set(types)):
        raise ConfigError(f"{f.where}: field 'rope_parameters' must map each layer type in layer_types "
                          f"({', '.join(sorted(set(types)))}) to its RoPE parameters or null (NoPE), got "
                          f"{params!r}",
                          "transformers' CohereCompassRotaryEmbedding reads rope_parameters[layer_type] and fails "
                          "on anything else (the class default included); copy rope_parameters from the "
                          "checkpoint's config.json")
    out: dict[str, float | None] = {}
    for t in sorted(set(types)):
        p = params[t]
        if p is None:
            out[t] = None
            continue
        if not isinstance(p, dict):
            raise f.error(f"rope_parameters.{t}", f"must be a mapping or null, got {p!r}")
        kind = p.get("rope_type") or p.get("type") or "default"
        if kind != "default" or "partial_rotary_factor" in p:
            raise UnsupportedModelError(f"{f.where}: cohere_compass_text with rope {p!r} on its {t} layers is not "
                                        "supported yet", "North-Micro-Vision's layers use plain (M-)RoPE")
        theta = p.get("rope_theta")
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
            raise f.error(f"rope_parameters.{t}.rope_theta", f"must be a positive number, got {theta!r}")
        out[t] = float(theta)
    return out


def build_text(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = read_kv_heads(f, heads)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    hd = f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads (the config class sets it)")
    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n_layers, ("full_attention", "sliding_attention"))
    else:
        types = f.derived("layer_types", ["full_attention"] * n_layers, "absent: every layer full attention")
    theta = _rope_by_type(f, types)
    sliding = f.opt_int("sliding_window", lo=1, hi=1 << 30) if "sliding_attention" in types else None
    bias = f.bool("attention_bias", False)
    act = read_act(f, TRAITS)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=False)  # noqa: E731
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    layers = []
    for t in types:
        attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias,
                         window=sliding if t == "sliding_attention" else None,
                         rotary_dim=hd if theta[t] is not None else 0, rope_theta=theta[t] or 10_000.0)
        layers.append(Layer(attn, mlp, (PlacedNorm("input_layernorm", "pre_mixer", ln()),), parallel=True))
    scale = f.raw("logit_scale")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        numerics=Numerics(rope_style=RopeStyle.HALF,
                          logit_scale=1.0 if scale is None else f.float("logit_scale")),
    )


def cohere_compass_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..vision import _qwen3_vision
    from ..vision_wrappers import _tower_type

    _tower_type(top, where, "cohere_compass", ("cohere_compass_vision", "cohere_compass"))
    return _qwen3_vision(top, where, "cohere_compass_vision")
