"""Gemma 3n (``gemma3n_text``; the ``gemma3n`` wrapper's language model: google/gemma-3n-E2B, E4B), as
transformers 5.24's modeling_gemma3n.py builds it.

- Layers: ``layer_types`` (default: four sliding layers, then one full). Every layer has
  ``num_key_value_heads`` heads of ``head_dim`` (256); sliding ones a window of ``sliding_window``; RoPE on
  the whole head at the sliding / full base (``rope_parameters``, else ``rope_local_base_freq`` /
  ``rope_theta``: 10000 / 1000000).
- q_norm and k_norm over head_dim (weights applied as is), a weightless v_norm, softmax scale 1, sandwich
  norms (input / post_attention / pre_feedforward / post_feedforward), embeddings scaled by sqrt(hidden),
  ``final_logit_softcapping`` (30), tied by default.
- ``num_kv_shared_layers`` (15): the last that many layers have no k/v projections, no k_norm and no cache:
  they attend over the K/V of the last earlier layer of their type (Gemma 4's ``kv_shared``).
- ``intermediate_size``: one width for all layers or one per layer; a gated GELU MLP.
  ``activation_sparsity_pattern`` (0.95 on the first 10 layers by default) keeps only the gate activations
  above a Gaussian quantile of their row: parameter- and matmul-free, not modelled beyond that.
- Per-layer inputs (PLE, ``hidden_size_per_layer_input``): Gemma 4's, always present.
- AltUp (``altup_num_inputs`` residual streams, 4): ``altup_projections`` make streams 1.. from the
  embedding, ``altup_unembed_projections`` fold them back before the final norm; every layer predicts the
  streams (its router, run twice a layer, and its coefficients) and corrects them after the block.
- LAuReL: a rank-``laurel_rank`` (64) residual beside attention, normed.

The torch decoder does not run AltUp or LAuReL: it refuses the model (``RuntimeUnavailableError``).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, Layer, ModelSpec, Norm, Numerics, PlacedNorm
from .common import read_act, read_eps, read_tie
from .gemma4 import TRAITS, sliding_full_layer_types


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    return sliding_full_layer_types(f, n_layers, "Gemma 3n", 5)


def _theta(f: Fields, kind: str, legacy_key: str, default: float) -> float:
    params = f.raw("rope_parameters")
    block = params.get(kind) if isinstance(params, dict) else None
    if isinstance(block, dict):
        v = block.get("rope_theta")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v)
    return f.float(legacy_key, default)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = f.int("num_key_value_heads", heads)
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = f.int("head_dim", 256)
    bias = f.bool("attention_bias", False)
    act = read_act(f, TRAITS)
    if isinstance(f.raw("intermediate_size"), list):
        inters = f.int_list("intermediate_size", n_layers, lo=1)
    else:
        inters = [f.int("intermediate_size")] * n_layers
    sparsity = f.raw("activation_sparsity_pattern")
    if isinstance(sparsity, list) and len(sparsity) != n_layers:
        raise f.error("activation_sparsity_pattern", f"has {len(sparsity)} entries but num_hidden_layers is {n_layers}")
    types = _layer_types(f, n_layers)
    window = f.int("sliding_window", 512, hi=1 << 30)
    n_shared = f.int("num_kv_shared_layers", 15, lo=0, hi=MAX_LAYERS)
    first_shared = n_layers - n_shared
    if n_shared and (n_shared >= n_layers or set(types[:first_shared]) != set(types)):
        raise f.error("num_kv_shared_layers", f"({n_shared}) leaves no earlier layer of every type to share K/V from")
    ple = f.int("hidden_size_per_layer_input", 256, lo=0)
    ple_vocab = f.int("vocab_size_per_layer_input", 262_144, hi=1 << 26)
    altup = f.int("altup_num_inputs", 4, hi=64)
    active = f.int("altup_active_idx", 0, lo=0)
    if active >= altup:
        raise f.error("altup_active_idx", f"({active}) must be below altup_num_inputs ({altup})")
    rank = f.int("laurel_rank", 64)
    s_theta = _theta(f, "sliding_attention", "rope_local_base_freq", 10_000.0)
    g_theta = _theta(f, "full_attention", "rope_theta", 1_000_000.0)

    norm = lambda: Norm(hidden)  # noqa: E731
    layers = []
    for i, t in enumerate(types):
        full = t == "full_attention"
        attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, q_norm_dim=hd, k_norm_dim=hd,
                         window=None if full else window, rotary_dim=hd, rope_theta=g_theta if full else s_theta,
                         v_norm=True, kv_shared=i >= first_shared)
        norms = (PlacedNorm("input_layernorm", "pre_mixer", norm()),
                 PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                 PlacedNorm("pre_feedforward_layernorm", "pre_ffn", norm()),
                 PlacedNorm("post_feedforward_layernorm", "post_ffn", norm()),
                 PlacedNorm("post_per_layer_input_norm", "post_per_layer_input", norm()))
        layers.append(Layer(attn, MLP(hidden, inters[i], act=act), norms, per_layer_input=ple,
                            altup_inputs=altup, laurel_rank=rank))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), final_norm=norm(), hidden_act=act, norm_eps=read_eps(f),
        embedding_multiplier=hidden ** 0.5, query_pre_attn_scalar=1.0,  # softmax scale 1 (q/k are normed)
        final_logit_softcapping=f.float("final_logit_softcapping") if f.has("final_logit_softcapping") else None,
        per_layer_input_size=ple, per_layer_vocab_size=ple_vocab, altup_inputs=altup,
        numerics=Numerics(),
    )
