"""Kosmos-2 (``kosmos-2``: microsoft/kosmos-2-patch14-224) and Kosmos-2.5 (``kosmos-2.5``: microsoft/kosmos-2.5), as
transformers' modeling_kosmos2.py / modeling_kosmos2_5.py build them (``Kosmos2ForConditionalGeneration``,
``Kosmos2_5ForConditionalGeneration``), the whole checkpoint counted.

Language model (``kosmos_2_text_model`` / ``kosmos_2_5_text_model``): XGLM's pre-LN decoder (``analysis.families.
xglm``: embedding scaled by sqrt(embed_dim) when ``scale_embedding``, fairseq's sinusoidal positions, a buffer with
no parameters, row p + 2 for position p; biased q/k/v/out_proj, head_dim = embed_dim / attention_heads; biased
fc1 / fc2 with ``activation_function``; a final ``layer_norm``; lm_head bias-free and tied) with Magneto's
sub-LayerNorms: ``ffn.ffn_layernorm`` (a biased LayerNorm over ffn_dim between the activation and fc2) in both, and
in Kosmos-2 ``self_attn.inner_attn_ln`` (a biased LayerNorm over embed_dim on the attention output before
out_proj). They are BitNet's ``attn_sub_norm`` / ``ffn_sub_norm`` places with a bias (``SubLNAttention``,
``SubLNMLP``). Kosmos-2.5 adds ``segment_emb`` (2 x embed_dim), added to the positions (row 0 on text tokens):
counted with the model-level parameters. KV: every layer's K and V, embed_dim each, per token.

Kosmos-2's vision tower (``vision_model.model``) is CLIP's ViT (class embedding, bias-free conv patches, patches + 1
positions, pre_layrnorm, biased blocks, post_layernorm; ViT-L/14 at 224 by default). Kosmos-2.5's is Pix2Struct's:
a biased ``patch_projection`` (patch_embed_hidden_size -> hidden), ``row_embedder`` / ``column_embedder``
(max_num_patches x hidden each), bias-free query / key / value / output (heads x head_dim wide) and gated
``wi_0`` / ``wi_1`` / ``wo``, weight-only T5 LayerNorms before attention and MLP, a final ``layernorm``. Both end in
``image_to_text_projection``: a biased ``dense`` (vision hidden -> embed_dim), ``latent_query`` (latent_query_num x
embed_dim) and ``x_attn``, a biased q/k/v/out_proj attention at embed_dim (no inner LayerNorm).

Counts (equal to transformers on the meta device; the config classes' defaults are these checkpoints' shapes):
kosmos-2-patch14-224 1,664,485,376 (text 1,342,289,920, CLIP 303,179,776, projection 19,015,680; the hub's
1.66B), kosmos-2.5 1,374,646,272 (text 846,884,352, vision 512,812,032, projection 14,949,888; the card's 1.37B).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.attention import Attention
from ..records import frozen
from ..spec import MLP, CheckpointLayout, ModelSpec, Tensor
from ..vision import _lin, _vision_fields, clip_tensors, vision_config_dict
from . import xglm


@frozen
class SubLNAttention(Attention):
    """Attention with Magneto's sub-LayerNorm: with ``o_norm`` the output normed before o_proj by a biased
    LayerNorm (Kosmos-2's ``inner_attn_ln``, our ``attn_sub_norm``). ``sub_layernorms`` marks a block whose sub-norms
    are LayerNorms (the runtime runs BitNet's RMS sub-norms only, so it refuses it)."""

    sub_layernorms: bool = True

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        if self.o_norm:
            out.append(Tensor(f"{prefix}.attn_sub_norm.bias", (self.o_in,), "norm"))
        return out


@frozen
class SubLNMLP(MLP):
    """A plain MLP with a biased LayerNorm over the intermediate features before down_proj (Kosmos's
    ``ffn.ffn_layernorm``, our ``ffn_sub_norm``)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        if self.inner_norm:
            out.append(Tensor(f"{prefix}.ffn_sub_norm.bias", (self.intermediate_size,), "norm"))
        return out


#: Kosmos2(_5)TextForCausalLM's names (under the wrapper's ``text_model.``) -> ours
LAYOUT = CheckpointLayout(
    renames=(("text_model.model.layer_norm.", "model.norm."), ("text_model.model.", "model."),
             ("text_model.lm_head.", "lm_head.")),
    modules=((".self_attn.out_proj.", ".self_attn.o_proj."), (".self_attn.inner_attn_ln.", ".self_attn.attn_sub_norm."),
             (".ffn.fc1.", ".mlp.up_proj."), (".ffn.fc2.", ".mlp.down_proj."),
             (".ffn.ffn_layernorm.", ".mlp.ffn_sub_norm.")))

#: Kosmos2TextConfig.attribute_map (Kosmos2_5TextConfig's is the same)
_ATTRIBUTE_MAP = {"embed_dim": ("hidden_size",), "layers": ("num_hidden_layers",),
                  "attention_heads": ("num_attention_heads",)}


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """``kosmos_2_text_model`` (inner_attn_ln) or ``kosmos_2_5_text_model`` (no inner_attn_ln, segment_emb)."""
    v2_5 = model_type == "kosmos_2_5_text_model"
    f.aliases = {**f.aliases, **_ATTRIBUTE_MAP}
    hidden, n_layers, heads, vocab, ffn_dim, act = xglm.read_shape(
        f, "embed_dim", "layers", "Kosmos-2's text model",
        None if v2_5 else "each Kosmos-2 text layer would also attend to encoder states (an encoder-decoder's "
        "decoder), which planner does not model; the Kosmos-2 checkpoints set it false")
    hd = hidden // heads
    attn = SubLNAttention(hidden, heads, heads, hd, hd, True, True, True, True, o_norm=not v2_5)
    mlp = SubLNMLP(hidden, ffn_dim, gated=False, bias=True, act=act, inner_norm=True)
    extra = (Tensor("model.segment_emb.weight", (2, hidden), "embedding"),) if v2_5 else ()
    return xglm.decoder_spec(f, model_type, hidden, n_layers, attn, mlp, act, vocab, pad_default=1,
                             eps=f.float("layer_norm_eps"), layout=LAYOUT, extra=extra)


def _projection(out: list[Tensor], top: dict, where: str, wrapper: str, vision_hidden: int, text_hidden: int) -> None:
    """image_to_text_projection: dense, latent_query and x_attn (biased q/k/v/out_proj at the text width)."""
    from ..family_defaults import FAMILY_DEFAULTS

    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get(wrapper), family=wrapper)
    p = "image_to_text_projection"
    _lin(out, f"{p}.dense", text_hidden, vision_hidden)
    out.append(Tensor(f"{p}.latent_query", (f.int("latent_query_num", hi=1 << 20), text_hidden), "vision"))
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        _lin(out, f"{p}.x_attn.{name}", text_hidden, text_hidden)


def kosmos2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Kosmos-2's CLIP ViT and its image-to-text projection."""
    vc = vision_config_dict(top.get("vision_config"), where)
    out = clip_tensors(vc, where, prefix="vision_model.model", family="kosmos_2_vision_model")
    vf = _vision_fields(vc, where, "kosmos_2_vision_model")
    _projection(out, top, where, "kosmos-2", vf.int("hidden_size"), text_hidden)
    return tuple(out)


def kosmos2_5_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Kosmos-2.5's Pix2Struct-style tower and its image-to-text projection."""
    f = _vision_fields(top.get("vision_config"), where, "kosmos_2_5_vision_model")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    inner = f.int("num_attention_heads") * f.int("head_dim")
    rows = f.int("max_num_patches", hi=1 << 24)
    out: list[Tensor] = []
    _lin(out, "vision_model.embeddings.patch_projection", h, f.int("patch_embed_hidden_size"))
    out.append(Tensor("vision_model.embeddings.row_embedder.weight", (rows, h), "vision"))
    out.append(Tensor("vision_model.embeddings.column_embedder.weight", (rows, h), "vision"))
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        p = f"vision_model.encoder.layer.{i}"
        for name in ("query", "key", "value"):
            out.append(Tensor(f"{p}.attention.{name}.weight", (inner, h), "vision"))
        out.append(Tensor(f"{p}.attention.output.weight", (h, inner), "vision"))
        out.append(Tensor(f"{p}.mlp.wi_0.weight", (inter, h), "vision"))
        out.append(Tensor(f"{p}.mlp.wi_1.weight", (inter, h), "vision"))
        out.append(Tensor(f"{p}.mlp.wo.weight", (h, inter), "vision"))
        out.append(Tensor(f"{p}.pre_mlp_layer_norm.weight", (h,), "vision"))
        out.append(Tensor(f"{p}.pre_attention_layer_norm.weight", (h,), "vision"))
    out.append(Tensor("vision_model.layernorm.weight", (h,), "vision"))
    _projection(out, top, where, "kosmos-2.5", h, text_hidden)
    return tuple(out)


def text_config(cfg: dict, where: str) -> object:
    """The text_config as Kosmos2Config / Kosmos2_5Config build it (``{}``: the text class's defaults when absent),
    its own tie flag made explicit (the text class's default, true), so the wrapper's flag is not copied over it:
    Kosmos-2 ties lm_head when the wrapper's or the text model's flag is set; Kosmos2_5ForConditionalGeneration has
    no ``_tied_weights_keys`` of its own, so the text model's flag alone ties it (both checked on the meta device)."""
    text = cfg.get("text_config")
    if text is None:
        text = {}
    if not isinstance(text, dict):
        return text  # parse_config refuses it with its own message
    return {"tie_word_embeddings": True, **text}
