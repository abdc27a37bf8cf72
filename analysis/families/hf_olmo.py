"""AI2's original OLMo checkpoints (``hf_olmo``, ``OLMoForCausalLM``; the ai2-olmo package's config, llama.cpp's
convert_hf_to_gguf.py registers the architecture): allenai/OLMo-1B, OLMo-7B, OLMo-7B-Twin-2T before their ``-hf``
conversions (model_type ``olmo``).

The config names OLMo's own fields (``d_model``, ``n_heads``, ``n_layers``, ``mlp_ratio`` / ``mlp_hidden_size``,
``embedding_size``, ``weight_tying``, ``max_sequence_length``); transformers' convert_olmo_weights_to_hf.py maps them
onto OlmoConfig: hidden_size, heads, layers, ``intermediate_size`` = half the fused SwiGLU projection (``ff_proj``:
``mlp_hidden_size``, else ``mlp_ratio`` x ``d_model``), ``vocab_size`` = ``embedding_size`` (the padded embedding's
rows), ``tie_word_embeddings`` = ``weight_tying``, ``clip_qkv``. That translation is read here with transformers'
``olmo`` row (weightless LayerNorms, bias-free projections, RoPE).

Only the OLMo-1 block is read: weightless LayerNorm (``layer_norm_type`` default, ``layer_norm_with_affine`` false),
no q/k norms, no biases, SwiGLU, RoPE, the sequential block, norms before the sublayers. The other switches of the
ai2-olmo config (RMS / affine norms, ``attention_layer_norm``, ``include_bias``, ALiBi, the parallel block,
``norm_after``, ``embedding_layer_norm``, ``scale_logits``, multi-query / grouped K/V) are refused by name.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..spec import ModelSpec
from .common import storage_fields

_HINT = "a generic Llama-style analysis would miscount it, so none is given"

#: the switches this reader checks: the values the OLMo-1 block needs, and the ai2-olmo ModelConfig default an absent
#: one takes (olmo/config.py: affine LayerNorms, biases and no RoPE by default, so a config that leaves them out is
#: not the released block)
_EXPECTED = {"layer_norm_type": ("default", "default"), "layer_norm_with_affine": (False, True),
             "attention_layer_norm": (False, False), "include_bias": (False, True), "alibi": (False, False),
             "rope": (True, False), "block_type": ("sequential", "sequential"),
             "activation_type": ("swiglu", "swiglu"), "norm_after": (False, False),
             "embedding_layer_norm": (False, False), "scale_logits": (False, False),
             "bias_for_layer_norm": (False, None)}  # None: include_bias's value


def olmo_config(f: Fields) -> dict:
    """The hf_olmo config as transformers' OlmoConfig (convert_olmo_weights_to_hf.py's mapping)."""
    cfg = f.cfg
    for key, (want, default) in _EXPECTED.items():
        got = cfg.get(key, default)
        if got != want and not (want is False and got is None):
            raise UnsupportedModelError(
                f"{f.where}: OLMo (hf_olmo) with {key} {got!r}: only the OLMo-1 block is read (weightless LayerNorm, "
                "no q/k norms or biases, SwiGLU, RoPE, the sequential block); this variant is not modelled", _HINT)
    if cfg.get("multi_query_attention"):
        raise UnsupportedModelError(f"{f.where}: OLMo (hf_olmo) with multi_query_attention true is not modelled", _HINT)
    heads = f.int("n_heads")
    kv = cfg.get("n_kv_heads")
    if kv not in (None, heads):
        raise UnsupportedModelError(f"{f.where}: OLMo (hf_olmo) with n_kv_heads {kv!r} below n_heads {heads} (grouped "
                                    "K/V) is not modelled", _HINT)
    d_model = f.int("d_model")
    fused = f.int("mlp_hidden_size") if cfg.get("mlp_hidden_size") is not None else f.int("mlp_ratio", 4) * d_model
    if fused % 2:
        raise f.error("mlp_hidden_size", f"({fused}) must be even: SwiGLU splits ff_proj into two halves")
    # absent: ModelConfig's 50304; null: no padding, the vocabulary itself
    vocab = f.int("embedding_size", 50304) if "embedding_size" not in cfg or cfg["embedding_size"] is not None \
        else f.int("vocab_size")
    out = {"model_type": "olmo", "hidden_size": d_model, "num_attention_heads": heads, "num_key_value_heads": heads,
           "num_hidden_layers": f.int("n_layers"), "intermediate_size": fused // 2, "vocab_size": vocab,
           "tie_word_embeddings": f.bool("weight_tying", True), "hidden_act": "silu",
           "max_position_embeddings": f.int("max_sequence_length", 1024), "attention_bias": False,
           "rope_theta": cfg.get("rope_theta", 10000.0), "clip_qkv": cfg.get("clip_qkv")}
    return {**out, **storage_fields(cfg)}


def build(f: Fields, model_type: str) -> ModelSpec:
    from . import REGISTRY, decoder
    from ..family_defaults import FAMILY_DEFAULTS

    g = Fields(olmo_config(f), f"{f.where} (as OlmoConfig)", defaults=FAMILY_DEFAULTS.get("olmo"), family="olmo")
    spec = decoder.build(g, "olmo", REGISTRY["olmo"])
    f.records.update(g.records)
    return spec
