"""BLOOM: ALiBi instead of RoPE (a per-head linear bias on the scores, slope × key position), a
LayerNorm right after the word embedding (``word_embeddings_layernorm``), a fused QKV projection with
biases whose rows are interleaved per head, a plain GELU MLP of 4 × hidden, tied embeddings."""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind
from .common import pre_norms, read_eps, read_mha_shape, read_tie

LAYOUT = CheckpointLayout(renames=(("transformer.word_embeddings.", "model.embed_tokens."),
                                   ("transformer.word_embeddings_layernorm.", "model.embed_layernorm."),
                                   ("transformer.h.", "model.layers."), ("transformer.ln_f.", "model.norm.")),
                          qkv_grouped=True)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    if f.bool("apply_residual_connection_post_layernorm", False):
        raise f.error("apply_residual_connection_post_layernorm", "is true (residual taken after the norm): "
                                                                  "not supported")
    hd = hidden // heads
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True, fused_qkv=True, alibi=True)
    act = "gelu_pytorch_tanh"  # BloomGelu: the tanh approximation
    layer = Layer(attn, MLP(hidden, 4 * hidden, gated=False, bias=True, act=act), pre_norms(ln))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), embedding_norm=ln(), hidden_act=act,
        norm_eps=read_eps(f), checkpoint=LAYOUT,
    )
