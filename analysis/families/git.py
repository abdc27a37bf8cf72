"""GIT (GenerativeImage2Text: microsoft/git-base, -large and their COCO / TextCaps / VQA fine-tunes), as
transformers' ``GitForCausalLM`` builds it (models/git/modeling_git.py).

A flat config: the text decoder's fields at the top level, ``vision_config`` (GitVisionConfig) nested.

* The text decoder: BERT's post-LayerNorm blocks made causal. Embeddings: a word table, a learned absolute
  position table (``max_position_embeddings`` rows, position p at row p, no offset) summed, then a LayerNorm
  (``git.embeddings.LayerNorm``). Per layer: biased query / key / value / output projections with as many K/V heads
  as query heads, ``LayerNorm(x + attention)``, a biased ``hidden_act`` MLP (intermediate.dense / output.dense,
  not gated) and ``LayerNorm(x + mlp)``; no final norm. The head (``output``) is a biased Linear, its weight tied
  to the word table when ``tie_word_embeddings`` (its bias is its own). All LayerNorms use ``layer_norm_eps``.
* The image encoder (``git.image_encoder.vision_model``): CLIP's ViT (class embedding, bias-free patch conv,
  learned positions, pre / post LayerNorms, biased attention and fc1 / fc2) with GitVisionConfig's defaults.
* ``git.visual_projection``: a biased Linear from the vision width to hidden_size and a LayerNorm (the vision
  config's eps); with ``num_image_with_embedding`` (video checkpoints), one (1, 1, vision hidden) temporal
  embedding per frame.

The image tokens (patches + 1 per image, per frame for video) are prepended to the text in the decoder's own
sequence: they attend to each other bidirectionally and sit in transformers' cache like text tokens, so the KV
per token is the decoder's (MHA: 2 · hidden per layer) and an image costs its tokens of context.
"""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, PlacedNorm, Tensor
from ..vision import _lin, _ln, clip_tensors, vision_config_dict
from .common import read_mha_shape, read_tie

#: GitForCausalLM's names -> ours (the module renames after the prefixes)
LAYOUT = CheckpointLayout(
    renames=(("git.embeddings.word_embeddings.", "model.embed_tokens."),
             ("git.embeddings.position_embeddings.", "model.embed_positions."),
             ("git.embeddings.LayerNorm.", "model.embed_layernorm."), ("git.encoder.layer.", "model.layers."),
             ("output.", "lm_head.")),
    modules=((".attention.self.query.", ".self_attn.q_proj."), (".attention.self.key.", ".self_attn.k_proj."),
             (".attention.self.value.", ".self_attn.v_proj."), (".attention.output.dense.", ".self_attn.o_proj."),
             (".attention.output.LayerNorm.", ".attention_layer_norm."), (".intermediate.dense.", ".mlp.up_proj."),
             (".output.dense.", ".mlp.down_proj."), (".output.LayerNorm.", ".output_layer_norm.")))


def git_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vc = vision_config_dict(top.get("vision_config"), where)
    out = clip_tensors(vc, where, prefix="git.image_encoder.vision_model", family="git_vision_model")
    vh = out[0].shape[0]
    _lin(out, "git.visual_projection.visual_projection.0", text_hidden, vh)
    _ln(out, "git.visual_projection.visual_projection.1", text_hidden)
    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("git"), family="git")
    frames = f.raw("num_image_with_embedding")
    if frames is not None:
        for i in range(f.int("num_image_with_embedding", hi=1 << 16)):
            out.append(Tensor(f"git.img_temporal_embedding.{i}", (1, 1, vh), "vision"))
    return tuple(out)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    for key in ("num_key_value_heads", "head_dim"):
        if f.has(key):
            raise f.error(key, "is not a field of GIT (GitConfig): its attention has num_attention_heads K/V heads "
                               "of hidden_size / num_attention_heads")
    hd = hidden // heads
    inter = f.int("intermediate_size")
    act = f.str("hidden_act")
    positions = f.int("max_position_embeddings", hi=1 << 24)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    norms = (PlacedNorm("attention_layer_norm", "post_mixer_residual", ln()),
             PlacedNorm("output_layer_norm", "post_ffn_residual", ln()))
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True)
    layer = Layer(attn, MLP(hidden, inter, gated=False, bias=True, act=act), norms)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=None, embedding_norm=ln(), hidden_act=act,
        norm_eps=f.float("layer_norm_eps"), position_embeddings=positions, lm_head_bias=True,
        vision=git_vision(f.cfg, hidden, f.where), checkpoint=LAYOUT,
        caveats=("GIT: the image encoder and visual projection are counted in the parameters and weights but take no "
                 "part in the text decode trace; each image's patches + 1 tokens are prepended to the decoder's own "
                 "sequence and cached like text tokens (count them in --context)",),
    )
