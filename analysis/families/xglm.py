"""XGLM (facebook/xglm-564M, 1.7B, 2.9B, 4.5B, 7.5B), as transformers' modeling_xglm.py builds it.

- Field names: ``d_model``, ``num_layers``, ``attention_heads``, ``ffn_dim`` (XGLMConfig's attribute_map
  also accepts hidden_size, num_hidden_layers and num_attention_heads).
- The token embedding is scaled by sqrt(d_model) when ``scale_embedding`` (the default), else by 1.
- Fixed sinusoidal positions (fairseq's table, a buffer, no parameters): position ``p`` is row ``p + 2``
  of ``[sin(n·r_j) | cos(n·r_j)]``, ``r_j = exp(-j·ln(10000) / (d/2 - 1))``, ``j < d/2`` (a zero column
  when d is odd), the row ``pad_token_id`` zeroed; no RoPE.
- Pre-LN blocks: ``self_attn_layer_norm`` -> multi-head attention (biased q/k/v/out_proj, head_dim =
  d_model / heads); ``final_layer_norm`` -> ``fc1`` -> ``activation_function`` (GELU) -> ``fc2``, both
  biased; a final ``layer_norm``. Every LayerNorm at torch's default eps (1e-5): XGLM has no eps field.
- The LM head is bias-free and tied to the token embedding by default.
- ``add_cross_attention`` (an encoder-decoder's decoder) is refused: not a decoder-only LM.
"""

from __future__ import annotations

import math

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm
from .common import read_tie

#: XGLMForCausalLM's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("model.layer_norm.", "model.norm."),),
    modules=((".self_attn.out_proj.", ".self_attn.o_proj."), (".fc1.", ".mlp.up_proj."), (".fc2.", ".mlp.down_proj.")))

POSITION_OFFSET = 2  # XGLMSinusoidalPositionalEmbedding.offset
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default: XGLM's LayerNorms are built without an eps

#: XGLMConfig.attribute_map: the standard names a config may use for XGLM's own fields
_ATTRIBUTE_MAP = {"d_model": ("hidden_size",), "num_layers": ("num_hidden_layers",),
                  "attention_heads": ("num_attention_heads",)}


def read_shape(f: Fields, hidden_key: str, layers_key: str, what: str,
               cross_note: str | None) -> tuple[int, int, int, int, int, str]:
    """The fields of a fairseq-style pre-LN decoder (XGLM, Kosmos-2's text model): width, layers, heads, vocab,
    ffn_dim and activation, checked; ``add_cross_attention`` (an encoder-decoder's decoder) refused with
    ``cross_note`` (None: the model has no cross-attention to add, the field is not read)."""
    hidden = f.int(hidden_key)
    if hidden < 4:  # get_embedding divides by hidden // 2 - 1
        raise f.error(hidden_key, f"({hidden}) must be at least 4: {what}'s sinusoidal table divides by {hidden_key} / 2 - 1")
    n_layers = f.int(layers_key, hi=MAX_LAYERS)
    heads = f.int("attention_heads")
    if hidden % heads:
        raise f.error("attention_heads", f"({heads}) must divide {hidden_key} ({hidden})")
    vocab = f.int("vocab_size", hi=1 << 26)
    ffn_dim = f.int("ffn_dim")
    act = f.str("activation_function")
    if cross_note is not None and f.bool("add_cross_attention", False):
        raise UnsupportedModelError(
            f"{f.where}: field 'add_cross_attention' is true: {cross_note}", "planner analyses decoder-only language models")
    return hidden, n_layers, heads, vocab, ffn_dim, act


def decoder_spec(f: Fields, model_type: str, hidden: int, n_layers: int, attn, mlp, act: str, vocab: int, *,
                 pad_default: int | None, eps: float, layout: CheckpointLayout,
                 extra: tuple = ()) -> ModelSpec:
    """The ModelSpec of a fairseq-style pre-LN decoder: biased LayerNorms before the mixer and the MLP and at the
    end, the embedding scaled by sqrt(hidden) when ``scale_embedding``, fairseq's sinusoidal positions (row p + 2,
    the ``pad_token_id`` row zeroed), lm_head tied by default."""
    scale = math.sqrt(hidden) if f.bool("scale_embedding") else 1.0
    pad = f.raw("pad_token_id", pad_default)
    pad = pad if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0 else None
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    norms = (PlacedNorm("self_attn_layer_norm", "pre_mixer", ln()), PlacedNorm("final_layer_norm", "pre_ffn", ln()))
    f.int("max_position_embeddings", hi=1 << 24)  # the table's initial size (a buffer that grows): no parameters
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(Layer(attn, mlp, norms),) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=eps,
        embedding_multiplier=scale, model_params=extra,
        numerics=Numerics(sinusoidal_positions=True, sinusoid_fairseq=True, position_offset=POSITION_OFFSET,
                          sinusoid_padding_row=pad),
        checkpoint=layout,
    )


def build(f: Fields, model_type: str) -> ModelSpec:
    f.aliases = {**f.aliases, **_ATTRIBUTE_MAP}
    hidden, n_layers, heads, vocab, ffn_dim, act = read_shape(
        f, "d_model", "num_layers", "XGLM",
        "this XGLM is the decoder of an encoder-decoder (each layer also attends to encoder states), not a "
        "decoder-only causal LM")
    hd = hidden // heads
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True)
    return decoder_spec(f, model_type, hidden, n_layers, attn, MLP(hidden, ffn_dim, gated=False, bias=True, act=act),
                        act, vocab, pad_default=None, layout=LAYOUT,
                        eps=f.derived("layer_norm_eps", LAYER_NORM_EPS, "torch's LayerNorm default (XGLM has no eps field)"))
