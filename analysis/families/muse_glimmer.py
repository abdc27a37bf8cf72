"""Muse Glimmer (``muse_glimmer_text``, and the ``muse_glimmer`` wrapper with its vision tower), as transformers
5.24's modeling_muse_glimmer.py builds MuseGlimmerTextModel and MuseGlimmerForConditionalGeneration.

The language model is Muse Spark's attention (``analysis.families.muse_spark``) on a dense decoder:

- Embedding then a weightless RMSNorm. Attention: GQA (``num_key_value_heads``, ``head_dim`` class default 128),
  q/k/v/o biased by ``attention_bias``, one weightless RMSNorm for q and k (q times ``qk_scale_factor``), then a
  sigmoid gate from a bias-free ``gate_proj`` (hidden -> heads x head_dim) per feature before ``o_proj``.
  ``layer_types`` (absent: full every fourth layer counted back from the last, the others sliding with
  ``sliding_window`` keys, 2048, cached only that far); RoPE at ``rope_parameters.rope_theta`` wherever
  ``layer_rope_theta`` is non-zero (absent: NoPE on those same full layers; transformers reads only zero / non-zero).
- Four centred RMSNorms a layer (1 + w: input, post-attention, pre- and post-feedforward, Gemma 2's sandwich), a
  SwiGLU MLP of ``intermediate_size``; a final plain RMSNorm (w). No residual gates, no experts (unlike Muse Spark).
- Logits times ``output_multiplier`` then soft-capped by ``final_logit_softcapping``. The wrapper declares
  ``lm_head`` tied to the embedding: the wrapper's ``tie_word_embeddings`` decides (MuseGlimmerConfig has no such
  field: absent, untied; the text_config's flag is not read). ``muse_glimmer_text`` alone (MuseGlimmerTextModel, no
  head of its own) is counted with the wrapper's lm_head, tied by its own ``tie_word_embeddings`` (default false).

The wrapper's vision tower (MuseGlimmerVisionModel) and projector, counted whole: a bias-free Linear patch embedding
(``patch_temporal`` x 3 x ``patch_size``^2 -> hidden), a learned position table of ``pos_emb_height`` x
``pos_emb_width`` rows, LayerNorms before and after the layers, ``num_hidden_layers`` pre-norm blocks (LayerNorms,
biased q/k/v/proj, biased fc1 / fc2 of ``intermediate_size``; windowed or full attention changes no weight); then
``vision_adapter`` (bias-free fc1 ``out_hidden_size`` -> ``projector_hidden_size``, fc2 square), a bias-free
``vision_projection`` to the text hidden size and a weightless RMSNorm. The class defaults
(Muse-Glimmer-30B's shape) come to 29,776,626,688 parameters, equal to transformers on the meta device: the language
model 27,854,780,928 (lm_head untied) and the vision tower with its projector 1,921,845,760.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.attention import GatedAttention
from ..spec import MLP, Layer, ModelSpec, Norm, Numerics, PlacedNorm, Tensor
from ..vision import _ln, _qkv_block, _vision_fields
from .common import Traits, read_act, read_eps, read_tie
from .muse_spark import attention_layout

_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
#: each layer norm scales by (1 + w) (MuseGlimmerTextCenteredRMSNorm), the final norm by w (MuseGlimmerRMSNorm)
_OFFSETS = tuple((name, 1.0) for name in _NORMS) + (("norm", 0.0),)


def build_text(f: Fields, model_type: str) -> ModelSpec:
    lo = attention_layout(f, "muse_glimmer_text", 10_000.0, "Muse Glimmer's class default is plain RoPE")
    hidden, heads, kv, hd, vocab = lo.hidden, lo.heads, lo.kv, lo.head_dim, lo.vocab
    types, theta, roped, window = lo.types, lo.theta, lo.roped, lo.window
    bias = f.bool("attention_bias", False)
    act = read_act(f, Traits(act_key="hidden_activation"))
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    norms = tuple(PlacedNorm(name, role, Norm(hidden))
                  for name, role in zip(_NORMS, ("pre_mixer", "post_mixer", "pre_ffn", "post_ffn")))
    layers = []
    for i, t in enumerate(types):
        attn = GatedAttention(hidden, heads, kv, hd, hd, bias, bias, bias, bias,
                              window=window if t == "sliding_attention" else None,
                              rotary_dim=hd if roped[i] else 0, rope_theta=theta, proj_gate=True)
        layers.append(Layer(attn, mlp, norms))
    numerics = Numerics(logit_scale=f.float("output_multiplier", 1.0), norm_offsets=_OFFSETS)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), embedding_norm=Norm(hidden, affine=False),
        hidden_act=act, norm_eps=read_eps(f), max_position_embeddings=f.int("max_position_embeddings", hi=1 << 30),
        final_logit_softcapping=f.float("final_logit_softcapping", 20.0), numerics=numerics,
    )


def _bare(out: list[Tensor], name: str, n_out: int, n_in: int) -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), "vision"))


def muse_glimmer_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """MuseGlimmerVisionModel, vision_adapter and vision_projection (perception_emb_norm has no weight)."""
    from ..family_defaults import FAMILY_DEFAULTS

    vc = top.get("vision_config")
    mt = vc.get("model_type", "muse_glimmer_vision") if isinstance(vc, dict) else "muse_glimmer_vision"
    if mt != "muse_glimmer_vision":
        raise UnsupportedModelError(f"{where}: muse_glimmer's vision tower '{mt}' is not one we can count",
                                    "modelled here: muse_glimmer_vision")
    f = _vision_fields(vc, where, "muse_glimmer_vision")
    h, inter = f.int("hidden_size"), f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    if h % f.int("num_attention_heads"):
        raise f.error("num_attention_heads", f"({f.int('num_attention_heads')}) must divide hidden_size ({h})")
    patch = f.int("patch_size", hi=1024)
    p = "model.vision_tower"
    out: list[Tensor] = []
    _bare(out, f"{p}.patch_embedder.patch_embedding", h, f.int("patch_temporal", hi=64) * 3 * patch * patch)
    rows = f.int("pos_emb_height", hi=1 << 12) * f.int("pos_emb_width", hi=1 << 12)
    out.append(Tensor(f"{p}.patch_embedder.position_embedding_table.weight", (rows, h), "vision"))
    _ln(out, f"{p}.ln_pre", h)
    for i in range(layers):
        q = f"{p}.layers.{i}"
        _qkv_block(out, q, h, inter, split=True)
    _ln(out, f"{p}.ln_post", h)
    t = Fields(top, where, defaults=FAMILY_DEFAULTS.get("muse_glimmer"), family="muse_glimmer")
    proj = t.int("projector_hidden_size")
    _bare(out, "model.vision_adapter.fc1", proj, t.int("out_hidden_size"))
    _bare(out, "model.vision_adapter.fc2", proj, proj)
    _bare(out, "model.vision_projection", text_hidden, proj)
    return tuple(out)
