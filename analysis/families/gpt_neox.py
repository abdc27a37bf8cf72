"""GPT-NeoX (Pythia): LayerNorms with bias, one fused QKV projection whose rows are interleaved per
head, partial rotary (``rotary_pct``), a plain GELU MLP, and (``use_parallel_residual``) attention and
MLP reading the same input."""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind
from .common import Traits, pre_norms, read_act, read_core, read_eps, read_rope, read_tie

#: transformers' module names -> ours
LAYOUT = CheckpointLayout(renames=(("gpt_neox.embed_in.", "model.embed_tokens."),
                                   ("gpt_neox.final_layer_norm.", "model.norm."),
                                   ("embed_out.", "lm_head."), ("gpt_neox.layers.", "model.layers.")),
                          qkv_grouped=True)


# ---- GPT-NeoX ------------------------------------------------------------------------------------


def build(f: Fields, model_type: str) -> ModelSpec:
    t = Traits(norm_kind=NormKind.LAYER, gated=False, act_default="gelu")
    c = read_core(f, t)
    hidden, n_layers, heads, hd, vocab = c["hidden"], c["layers"], c["heads"], c["head_dim"], c["vocab"]
    theta, rotary_dim, scaling = read_rope(f, hd)
    bias = f.bool("attention_bias", True)
    act = read_act(f, t)
    inter = f.int("intermediate_size")
    parallel = f.bool("use_parallel_residual", True)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, bias, bias, bias, bias, fused_qkv=True,
                     rotary_dim=rotary_dim, rope_theta=theta)
    mlp = MLP(hidden, inter, gated=False, bias=True, act=act)
    layer = Layer(attn, mlp, pre_norms(ln), parallel=parallel)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, checkpoint=LAYOUT,
    )


