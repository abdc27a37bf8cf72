"""CTRL (Salesforce/ctrl), as transformers' modeling_ctrl.py builds it.

- The token embedding ``w`` is scaled by sqrt(n_embd) and a fixed sinusoidal table (a buffer of
  ``n_positions`` rows, not a parameter) is added: no position parameters, no RoPE.
- Pre-LN blocks: ``layernorm1`` -> multi-head attention with separate biased ``Wq`` / ``Wk`` / ``Wv`` and a
  biased ``dense``; ``layernorm2`` -> ``ffn`` (Linear(n_embd, dff), ReLU, Linear(dff, n_embd), biased). The
  block's LayerNorms use eps 1e-6 whatever the config says; the final ``layernorm`` uses
  ``layer_norm_epsilon`` (1e-6 by default).
- The LM head is tied to ``w`` by default and always has a bias of its own (counted, tied or not).
"""

from __future__ import annotations

import math

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics
from .common import pre_norms, read_mha_shape, read_tie

#: CTRLLMHeadModel's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("transformer.w.", "model.embed_tokens."), ("transformer.h.", "model.layers."),
             ("transformer.layernorm.", "model.norm.")),
    modules=((".multi_head_attention.Wq.", ".self_attn.q_proj."), (".multi_head_attention.Wk.", ".self_attn.k_proj."),
             (".multi_head_attention.Wv.", ".self_attn.v_proj."),
             (".multi_head_attention.dense.", ".self_attn.o_proj."),
             (".layernorm1.", ".input_layernorm."), (".layernorm2.", ".post_attention_layernorm."),
             (".ffn.0.", ".mlp.up_proj."), (".ffn.2.", ".mlp.down_proj.")))

BLOCK_EPS = 1e-6  # EncoderLayer's LayerNorms: eps fixed


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    dff = f.int("dff")
    final_eps = f.float("layer_norm_epsilon")
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True)
    layer = Layer(attn, MLP(hidden, dff, gated=False, bias=True, act="relu"), pre_norms(ln))
    eps = f.derived("block_layer_norm_eps", BLOCK_EPS, "CTRL's block LayerNorms use 1e-6 whatever "
                    f"layer_norm_epsilon ({final_eps:g}, the final norm's) says")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act="relu", norm_eps=eps,
        lm_head_bias=True, embedding_multiplier=math.sqrt(hidden),
        numerics=Numerics(sinusoidal_positions=True), checkpoint=LAYOUT,
    )
