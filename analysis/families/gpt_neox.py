"""GPT-NeoX (Pythia): LayerNorms with bias, one fused QKV projection whose rows are interleaved per
head, partial rotary (``rotary_pct``), a plain GELU MLP, and (``use_parallel_residual``) attention and
MLP reading the same input. GPT-NeoX Japanese (``build_japanese``): the same fused rows, bias-free, in serial
blocks, with an output bias on the last layer only."""

from __future__ import annotations

from ..fields import MAX_DIM, Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind
from .common import Traits, pre_norms, read_act, read_core, read_eps, read_mha_shape, read_rope, read_tie

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


# ---- GPT-NeoX Japanese -----------------------------------------------------------------------------

#: GPTNeoXJapaneseForCausalLM's names -> ours; only the last layer's attention has an output bias, a bare parameter
#: (``attention.dense_bias``) added after ``dense``
JAPANESE_LAYOUT = CheckpointLayout(renames=(("gpt_neox_japanese.embed_in.", "model.embed_tokens."),
                                            ("gpt_neox_japanese.final_layer_norm.", "model.norm."),
                                            ("embed_out.", "lm_head."), ("gpt_neox_japanese.layers.", "model.layers.")),
                                   modules=((".attention.dense_bias", ".self_attn.o_proj.bias"),),
                                   qkv_grouped=True)


def build_japanese(f: Fields, model_type: str) -> ModelSpec:
    """GPT-NeoX Japanese (abeja/gpt-neox-japanese-2.7b): serial pre-LN blocks (LayerNorms with bias), a bias-free
    fused ``query_key_value`` whose rows are (heads, 3, head_dim), RoPE (rotate_half) on ``rotary_pct`` of each
    head, a bias-free ``dense`` with a bias on the last layer only, a bias-free plain MLP of
    ``hidden_size × intermediate_multiple_size``, tied by default."""
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    theta, rotary_dim, scaling = read_rope(f, hd)
    params = f.raw("rope_parameters")
    explicit = (f.cfg.get("rope_theta") is not None
                or (isinstance(params, dict) and params.get("rope_theta") is not None))
    if not explicit and f.has("rotary_emb_base"):  # the config class's name for it (rope_parameters' wins)
        theta = f.float("rotary_emb_base")
    mult = f.float("intermediate_multiple_size")
    if not 1 <= hidden * mult <= MAX_DIM:
        raise f.error("intermediate_multiple_size", f"({mult:g}) gives an MLP of {hidden * mult:g} features")
    inter = int(hidden * mult)
    t = Traits(norm_kind=NormKind.LAYER, gated=False, act_default="gelu")
    act = read_act(f, t)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    mlp = MLP(hidden, inter, gated=False, bias=False, act=act)
    layers = tuple(Layer(Attention(hidden, heads, heads, hd, hd, o_bias=i == n_layers - 1, fused_qkv=True,
                                   rotary_dim=rotary_dim, rope_theta=theta), mlp, pre_norms(ln))
                   for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, checkpoint=JAPANESE_LAYOUT,
    )
