"""Qwen2.5-Omni's thinker (``qwen2_5_omni_thinker``, Qwen2_5OmniThinkerForConditionalGeneration) towers, as
transformers' modeling_qwen2_5_omni.py builds them. Its language model is Qwen2's (``qwen2_5_omni_text``).

Vision (``qwen2_5_omni_vision_encoder``, ``model.visual``): the Qwen2.5-VL tower (a bias-free Conv3d patch
embedding, RMSNorm blocks with a biased gated MLP, the RMSNorm + two-Linear PatchMerger to ``out_hidden_size``),
except that its attention has separate biased ``q``, ``k`` and ``v`` projections (hidden × hidden each) where
Qwen2.5-VL fuses them in one ``qkv``: the same parameters.

Audio (``qwen2_5_omni_audio_encoder``, ``model.audio_tower``; Whisper's encoder): two biased Conv1d (num_mel_bins →
d_model, kernel 3; d_model → d_model, kernel 3 stride 2), sinusoidal positions (a buffer), ``audio_bos_eos_token``
(an Embedding of 2 × output_dim), ``encoder_layers`` pre-LayerNorm blocks (q / v / out_proj biased, k_proj bias-free,
biased fc1 / fc2 of encoder_ffn_dim), ``ln_post`` and a biased ``proj`` to output_dim. The config's attribute_map
names (num_hidden_layers, hidden_size, num_attention_heads, intermediate_size) are read as aliases.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import qwen2_5_vl_vision


def _vision(top: dict, text_hidden: int, where: str) -> list[Tensor]:
    out: list[Tensor] = []
    for t in qwen2_5_vl_vision(top, text_hidden, where, family="qwen2_5_omni_vision_encoder"):
        if ".attn.qkv." not in t.name:
            out.append(t)
            continue
        rows = t.shape[0] // 3
        for part in ("q", "k", "v"):
            out.append(Tensor(t.name.replace(".attn.qkv.", f".attn.{part}."), (rows, *t.shape[1:]), t.kind))
    return out


def _audio_fields(top: dict, where: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    ac = top.get("audio_config")
    if ac is None:
        ac = {}  # transformers builds the class-default encoder
    if not isinstance(ac, dict):
        raise ConfigError(f"{where}: field 'audio_config' must be an object")
    return Fields(ac, f"{where} (audio_config)",
                  aliases={"encoder_layers": ("num_hidden_layers",), "d_model": ("hidden_size",),
                           "encoder_attention_heads": ("num_attention_heads",),
                           "encoder_ffn_dim": ("intermediate_size",)},
                  defaults=FAMILY_DEFAULTS.get("qwen2_5_omni_audio_encoder"), nested=True,
                  family="qwen2_5_omni_audio_encoder")


def _audio(top: dict, where: str) -> list[Tensor]:
    f = _audio_fields(top, where)
    d = f.int("d_model")
    if d % 2:
        raise f.error("d_model", f"({d}) must be even: the sinusoidal positions need even channels")
    heads = f.int("encoder_attention_heads")
    if d % heads:
        raise f.error("encoder_attention_heads", f"({heads}) must divide d_model ({d})")
    layers = f.int("encoder_layers", hi=MAX_LAYERS)
    ffn = f.int("encoder_ffn_dim")
    mels = f.int("num_mel_bins", hi=1 << 16)
    # Qwen2_5OmniAudioEncoderConfig.output_dim defaults to 3584 (tools/gen_family_defaults.py skips output_* names)
    out_dim = f.int("output_dim", 3584, note="absent: the qwen2_5_omni_audio_encoder class default in transformers")
    p = "model.audio_tower"
    a = "audio"
    out = [Tensor(f"{p}.conv1.weight", (d, mels, 3), a), Tensor(f"{p}.conv1.bias", (d,), a),
           Tensor(f"{p}.conv2.weight", (d, d, 3), a), Tensor(f"{p}.conv2.bias", (d,), a),
           Tensor(f"{p}.audio_bos_eos_token.weight", (2, out_dim), a)]
    for i in range(layers):
        b = f"{p}.layers.{i}"
        out.append(Tensor(f"{b}.self_attn.k_proj.weight", (d, d), a))
        for name in ("v_proj", "q_proj", "out_proj"):
            out += [Tensor(f"{b}.self_attn.{name}.weight", (d, d), a), Tensor(f"{b}.self_attn.{name}.bias", (d,), a)]
        out += [Tensor(f"{b}.self_attn_layer_norm.weight", (d,), a), Tensor(f"{b}.self_attn_layer_norm.bias", (d,), a),
                Tensor(f"{b}.fc1.weight", (ffn, d), a), Tensor(f"{b}.fc1.bias", (ffn,), a),
                Tensor(f"{b}.fc2.weight", (d, ffn), a), Tensor(f"{b}.fc2.bias", (d,), a),
                Tensor(f"{b}.final_layer_norm.weight", (d,), a), Tensor(f"{b}.final_layer_norm.bias", (d,), a)]
    out += [Tensor(f"{p}.ln_post.weight", (d,), a), Tensor(f"{p}.ln_post.bias", (d,), a),
            Tensor(f"{p}.proj.weight", (out_dim, d), a), Tensor(f"{p}.proj.bias", (out_dim,), a)]
    return out


def thinker_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The thinker's vision tower (kind ``vision``) and audio encoder (kind ``audio``); transformers builds both
    whether or not the config gives them (class defaults)."""
    return tuple(_vision(top, text_hidden, where) + _audio(top, where))

