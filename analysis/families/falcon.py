"""Falcon (and its older RefinedWeb names): multi-query or grouped K/V in one fused QKV projection
whose rows are interleaved per KV group, parallel attention and MLP with one or two LayerNorms
(``new_decoder_architecture``, ``num_ln_in_parallel_attn``), optional ALiBi instead of RoPE."""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, PlacedNorm
from .common import pre_norms, read_eps, read_mha_shape, read_rope, read_tie

#: transformers' module names -> ours
LAYOUT = CheckpointLayout(renames=(("transformer.word_embeddings.", "model.embed_tokens."),
                                   ("transformer.ln_f.", "model.norm."), ("transformer.h.", "model.layers.")),
                          qkv_grouped=True)


# ---- Falcon --------------------------------------------------------------------------------------


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    # tiiuae's remote-code format (RefinedWeb / RefinedWebModel, modelling_RW.py): a config with n_head_kv
    # (Falcon-40B) is the new decoder architecture (ln_attn + ln_mlp, n_head_kv K/V groups in query_key_value),
    # one without it (Falcon-7B) the old; transformers' convert_custom_code_checkpoint.py decides the same way
    new_arch = f.bool("new_decoder_architecture",
                      model_type in ("RefinedWeb", "RefinedWebModel") and f.has("n_head_kv"))
    multi_query = f.bool("multi_query", True)
    if new_arch:
        kv = f.int("num_kv_heads" if f.has("num_kv_heads") or not f.has("n_head_kv") else "n_head_kv", heads)
        if heads % kv:
            raise f.error("num_kv_heads", f"({kv}) must divide num_attention_heads ({heads})")
    elif multi_query:
        kv = f.derived("num_kv_heads", 1, "multi_query: one K/V head")
    else:
        kv = f.derived("num_kv_heads", heads, "neither new_decoder_architecture nor multi_query: MHA")
    bias = f.bool("bias", False)
    parallel = f.bool("parallel_attn", True)
    alibi = f.bool("alibi", False)
    theta, rotary_dim, scaling = read_rope(f, hd)
    inter = f.int("ffn_hidden_size", lambda: 4 * hidden, note="absent: 4 x hidden_size")
    n_ln = f.int("num_ln_in_parallel_attn", 2 if new_arch else 1, hi=2)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    if not parallel:
        norms = pre_norms(ln)
    elif n_ln == 2:
        norms = (PlacedNorm("ln_attn", "pre_mixer", ln()), PlacedNorm("ln_mlp", "pre_ffn", ln()))
    else:  # one norm whose output feeds both the attention and the MLP
        norms = (PlacedNorm("input_layernorm", "pre_mixer", ln()),)
    attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, fused_qkv=True,
                     rotary_dim=0 if alibi else rotary_dim, rope_theta=theta)
    act = f.str("activation", "gelu")
    layer = Layer(attn, MLP(hidden, inter, gated=False, bias=bias, act=act), norms, parallel=parallel)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, checkpoint=LAYOUT,
    )


