"""BioGPT (microsoft/biogpt, microsoft/BioGPT-Large), as transformers' modeling_biogpt.py builds it.

- The token embedding is scaled by sqrt(hidden_size) when ``scale_embedding`` (the default), else by 1.
- Learned absolute positions: ``BioGptLearnedPositionalEmbedding`` has ``max_position_embeddings + 2`` rows
  and looks position ``p`` up at row ``p + 2`` (OPT's offset); no RoPE.
- Pre-LN blocks: ``self_attn_layer_norm`` -> multi-head attention (biased q/k/v/out_proj, head_dim =
  hidden / heads); ``final_layer_norm`` -> ``fc1`` -> ``hidden_act`` (GELU) -> ``fc2``, both biased; a
  final ``layer_norm``. Every LayerNorm is built without an eps: torch's 1e-5, whatever
  ``layer_norm_eps`` (1e-12 by default) says.
- The LM head ``output_projection`` is bias-free and tied to the token embedding by default.
"""

from __future__ import annotations

import math

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm
from .common import read_mha_shape, read_tie

#: BioGptForCausalLM's names (``biogpt.*``, ``output_projection``) -> ours
LAYOUT = CheckpointLayout(
    renames=(("biogpt.layer_norm.", "model.norm."), ("biogpt.", "model."), ("output_projection.", "lm_head.")),
    modules=((".self_attn.out_proj.", ".self_attn.o_proj."), (".fc1.", ".mlp.up_proj."), (".fc2.", ".mlp.down_proj.")))

POSITION_OFFSET = 2  # BioGptLearnedPositionalEmbedding.offset
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default: BioGPT's LayerNorms are built without layer_norm_eps


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    act = f.str("hidden_act")
    positions = f.int("max_position_embeddings", hi=1 << 24)
    scale = math.sqrt(hidden) if f.bool("scale_embedding") else 1.0
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    norms = (PlacedNorm("self_attn_layer_norm", "pre_mixer", ln()), PlacedNorm("final_layer_norm", "pre_ffn", ln()))
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True)
    layer = Layer(attn, MLP(hidden, f.int("intermediate_size"), gated=False, bias=True, act=act), norms)
    config_eps = f.float("layer_norm_eps")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act,
        norm_eps=f.derived("block_layer_norm_eps", LAYER_NORM_EPS, "torch's LayerNorm default: BioGPT's LayerNorms "
                           f"are built without layer_norm_eps ({config_eps:g})"),
        embedding_multiplier=scale, position_embeddings=positions + POSITION_OFFSET,
        numerics=Numerics(position_offset=POSITION_OFFSET), checkpoint=LAYOUT,
    )
