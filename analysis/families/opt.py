"""OPT (facebook/opt-125m ... opt-66b), as transformers' modeling_opt.py builds it.

- Learned absolute positions: ``OPTLearnedPositionalEmbedding`` has ``max_position_embeddings + 2``
  rows and looks position ``p`` up at row ``p + 2``; no RoPE.
- ``word_embed_proj_dim`` (opt-350m: 512 against a hidden size of 1024): the token embedding and the
  LM head are that wide, and bias-free ``project_in`` / ``project_out`` linears adapt the width;
  neither exists when it equals ``hidden_size`` (the class default).
- ``do_layer_norm_before``: pre-LN blocks (true, the default) or post-LN blocks (opt-350m), where
  ``self_attn_layer_norm`` and ``final_layer_norm`` normalise the residual stream after each add.
  The model's final LayerNorm exists only with pre-LN and without ``_remove_final_layer_norm``.
- ``enable_bias`` on q/k/v/out_proj and fc1/fc2; ``layer_norm_elementwise_affine`` (LayerNorms with a
  weight and bias, or none); a plain ``fc2(act(fc1(x)))`` MLP of ``ffn_dim`` (ReLU by default); the
  LayerNorms use torch's default eps (1e-5: OPT's config has no eps field); tied embeddings.
"""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm
from .common import read_mha_shape, read_tie

#: OPTForCausalLM's names (``model.decoder.*``; checkpoints saved from ``OPTModel`` drop the ``model.``) -> ours
LAYOUT = CheckpointLayout(
    renames=(("model.decoder.final_layer_norm.", "model.norm."), ("decoder.final_layer_norm.", "model.norm."),
             ("model.decoder.", "model."), ("decoder.", "model.")),
    modules=((".self_attn.out_proj.", ".self_attn.o_proj."), (".fc1.", ".mlp.up_proj."), (".fc2.", ".mlp.down_proj.")))

POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding.offset
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default: OPT's LayerNorms are built without an eps


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    ffn_dim = f.int("ffn_dim")
    proj = f.int("word_embed_proj_dim", lambda: hidden, note="absent or null: hidden_size (no projection)")
    pre_ln = f.bool("do_layer_norm_before")
    final_ln = pre_ln and not f.bool("_remove_final_layer_norm", False)
    bias = f.bool("enable_bias")
    affine = f.bool("layer_norm_elementwise_affine")
    act = f.str("activation_function")
    positions = f.int("max_position_embeddings", hi=1 << 24)

    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True, affine=affine)  # noqa: E731
    roles = ("pre_mixer", "pre_ffn") if pre_ln else ("post_mixer_residual", "post_ffn_residual")
    norms = (PlacedNorm("self_attn_layer_norm", roles[0], ln()), PlacedNorm("final_layer_norm", roles[1], ln()))
    attn = Attention(hidden, heads, heads, hd, hd, bias, bias, bias, bias)
    layer = Layer(attn, MLP(hidden, ffn_dim, gated=False, bias=bias, act=act), norms)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln() if final_ln else None, hidden_act=act,
        norm_eps=f.derived("layer_norm_eps", LAYER_NORM_EPS, "torch's LayerNorm default (OPT has no eps field)"),
        position_embeddings=positions + POSITION_OFFSET, word_embed_proj_dim=proj if proj != hidden else 0,
        numerics=Numerics(position_offset=POSITION_OFFSET), checkpoint=LAYOUT,
    )
