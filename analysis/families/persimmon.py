"""Adept Persimmon (adept/persimmon-8b-*) and Fuyu (adept/fuyu-8b), as transformers' modeling_persimmon.py and
modeling_fuyu.py build them.

- Persimmon: serial pre-LN blocks (``input_layernorm``, ``post_attention_layernorm``: LayerNorms with bias,
  ``layer_norm_eps``); multi-head attention (no GQA: head_dim = hidden / heads) with one biased fused
  ``query_key_value`` whose rows are (heads, 3, head_dim), like GPT-NeoX's; with ``qk_layernorm`` (the
  default) one LayerNorm with bias over head_dim on q and one on k (shared by the heads), before RoPE;
  RoPE (rotate_half) on the first ``int(head_dim × partial_rotary_factor)`` channels of each head (0.5 by
  default); a biased ``dense`` output; a plain biased MLP ``dense_h_to_4h`` -> ``hidden_act`` (relu2, squared
  ReLU, by default) -> ``dense_4h_to_h``; a final LayerNorm (``final_layernorm``); a bias-free lm_head, untied
  by default. Its cache: K and V of every head, head_dim each, per layer and token (a DynamicCache).
- Fuyu (FuyuForCausalLM, the whole checkpoint): Persimmon's model (``model.language_model``) and lm_head, plus
  ``vision_embed_tokens``: one biased Linear from a flattened patch (patch_size² × num_channels pixels) to the
  text hidden size; no vision tower. Its published config is flat (the text fields at the top level, which
  FuyuConfig moves into its text_config), counted through the wrapper machinery (``TEXT_WRAPPERS``,
  ``FLAT_TEXT_WRAPPERS``, ``VISION_COUNTED``: ``fuyu_vision`` below).
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers import GatedAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, NormKind
from ..tensors import Tensor
from .common import Traits, pre_norms, read_act, read_eps, read_mha_shape, read_rotary, read_tie

#: PersimmonForCausalLM's names -> ours (the MLP's dense_h_to_4h / dense_4h_to_h are renamed for every family)
LAYOUT = CheckpointLayout(renames=(("model.final_layernorm.", "model.norm."),),
                          modules=((".self_attn.query_key_value.", ".self_attn.qkv_proj."),
                                   (".self_attn.dense.", ".self_attn.o_proj."),
                                   (".self_attn.q_layernorm.", ".self_attn.q_norm."),
                                   (".self_attn.k_layernorm.", ".self_attn.k_norm.")),
                          qkv_grouped=True)

TRAITS = Traits(norm_kind=NormKind.LAYER, gated=False, act_default="relu2")
PARTIAL_ROTARY_DEFAULT = 0.5  # PersimmonConfig.__post_init__: partial_rotary_factor defaults to 0.5


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads  # PersimmonAttention: hidden / heads, whatever a head_dim field says
    kv = f.opt_int("num_key_value_heads")
    if kv is not None and kv != heads:
        raise f.error("num_key_value_heads", f"({kv}) differs from num_attention_heads ({heads}): Persimmon's fused "
                                             "query_key_value has K and V for every head (no GQA); not supported")
    theta, rotary_dim, scaling = read_rotary(f, hd, PARTIAL_ROTARY_DEFAULT)
    qk_ln = f.bool("qk_layernorm")
    act = read_act(f, TRAITS)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = GatedAttention(hidden, heads, heads, hd, hd, True, True, True, True, fused_qkv=True,
                          q_norm_dim=hd if qk_ln else 0, k_norm_dim=hd if qk_ln else 0,
                          rotary_dim=rotary_dim, rope_theta=theta, qk_norm_bias=qk_ln)
    layer = Layer(attn, MLP(hidden, f.int("intermediate_size"), gated=False, bias=True, act=act), pre_norms(ln))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, checkpoint=LAYOUT,
    )


def fuyu_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """FuyuModel.vision_embed_tokens: a biased Linear(patch_size² × num_channels, text hidden size), read from
    the wrapper's own patch_size / num_channels (FuyuConfig's defaults 30 and 3)."""
    from ..family_defaults import FAMILY_DEFAULTS

    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("fuyu"), family="fuyu")
    patch = f.int("patch_size", hi=4096)
    pixels = patch * patch * f.int("num_channels", hi=64)
    return (Tensor("model.vision_embed_tokens.weight", (text_hidden, pixels), "vision"),
            Tensor("model.vision_embed_tokens.bias", (text_hidden,), "vision"))
