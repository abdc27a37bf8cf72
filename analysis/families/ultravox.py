"""Fixie's Ultravox (``ultravox``, remote code: the hub's ultravox_config.py / ultravox_model.py; vLLM's
vllm/model_executor/models/ultravox.py serves it): a Whisper encoder, a projector over stacked encoder frames and a
causal language model (Llama 3.x in the released checkpoints), counted whole, as vLLM builds UltravoxModel.

Audio (``audio_tower``; vLLM's UltravoxWhisperEncoder, the hub's ModifiedWhisperEncoder): Whisper's encoder
(analysis.families.voxtral.whisper_encoder), read from ``audio_config`` (WhisperConfig: d_model, encoder_layers,
encoder_attention_heads, encoder_ffn_dim, num_mel_bins, max_source_positions; its class defaults when a field is
absent). Other towers (wav2vec2, HuBERT) are refused.

Projector (``multi_modal_projector``), with ``dim_in = d_model x stack_factor`` (default 8):

- ``num_projector_layers`` 0 (every released checkpoint; UltravoxFeedForwardProjector): RMSNorm ``ln_pre`` (dim_in),
  bias-free ``linear_1`` dim_in -> ``hidden_size`` (the wrapper's, default 4096), the activation (``swiglu`` halves
  the width: dim_mid = hidden_size / 2), bias-free ``linear_2`` dim_mid -> the text hidden size, and one RMSNorm:
  ``ln_mid`` (dim_mid) when ``projector_ln_mid`` (v0.5 on), else ``ln_post`` (text hidden; v0.4.1 and before).
- ``num_projector_layers`` N > 0 (UltravoxTransformerProjector): RMSNorm ``ln_pre`` (dim_in), biased ``linear_in``
  dim_in -> d_model, ``embed_positions`` (max_source_positions x d_model), N Whisper encoder layers, RMSNorm
  ``ln_post`` (d_model), biased ``linear_out`` d_model -> text hidden.

Language model: UltravoxConfig builds ``text_config`` with the class its model_type names (default ``llama``), or
loads it from ``text_model_id``. A published config.json with a ``text_model_id`` leaves text_config out
(UltravoxConfig.to_diff_dict), and its safetensors hold only the audio tower and projector: the language model's
weights are read from that repository at load time. planner needs the language model's fields, so such a config is
refused with the id named, until text_config holds that model's config.json. The count is then the whole served model
(checkpoint + referenced language model). lm_head ties as the text_config says (AutoModelForCausalLM.from_config),
never by the wrapper's flag.

Checked (tests/test_ultravox.py) against a hand count from these module shapes: ultravox-v0_5-llama-3_2-1b /
-3_1-8b / -3_3-70b hold 683,118,592 / 687,312,896 / 695,701,504 parameters in their own safetensors
(whisper-large-v3-turbo's encoder, 636,968,960, equal to transformers' WhisperEncoder on the meta device, plus the
projector); with their Llama language models, 1,918,932,992 / 8,717,574,144 / 71,249,408,000 in all. (The hub's
safetensors metadata could not be read offline: the checkpoint-only figures are hand counts, not a matched total.)
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from .voxtral import whisper_encoder, whisper_layer

_WHISPER_ALIASES = {"d_model": ("hidden_size",), "encoder_layers": ("num_hidden_layers",),
                    "encoder_attention_heads": ("num_attention_heads",)}


def ultravox_text_config(cfg: dict, where: str) -> dict:
    """The language model's config: text_config as given (its class defaults apply), refused when only a
    text_model_id names it."""
    from ..family_defaults import FAMILY_DEFAULTS

    text = cfg.get("text_config")
    if text is None:
        ref = cfg.get("text_model_id")
        if ref is not None:
            raise UnsupportedModelError(
                f"{where}: ultravox config names its language model by text_model_id {short(ref)} and has no "
                "text_config: that model's fields (and weights) are in its own repository",
                f"add the config.json of {ref} as text_config to count the whole model")
        text = {}  # UltravoxConfig builds LlamaConfig()
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {short(text)}")
    text = dict(text)
    inner = text.setdefault("model_type", "llama")
    if "tie_word_embeddings" not in text and isinstance(inner, str):
        # the text model's own class default decides (not the wrapper's flag, which config.py would copy in)
        tie = FAMILY_DEFAULTS.get(inner, {}).get("tie_word_embeddings")
        if isinstance(tie, bool):
            text["tie_word_embeddings"] = tie
    return text


def _audio_fields(top: dict, where: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    ac = top.get("audio_config")
    if ac is None:
        ref = top.get("audio_model_id")
        if ref is not None:
            raise UnsupportedModelError(
                f"{where}: ultravox config names its audio tower by audio_model_id {short(ref)} and has no "
                "audio_config: the encoder's fields are in that repository",
                f"add the config.json of {ref} as audio_config to count the whole model")
        ac = {}  # UltravoxConfig builds WhisperConfig()
    if not isinstance(ac, dict):
        raise ConfigError(f"{where}: field 'audio_config' must be an object, got {short(ac)}")
    mt = ac.get("model_type", "whisper")
    if mt != "whisper":
        raise UnsupportedModelError(f"{where}: ultravox with audio_config.model_type {short(mt)} is not modelled",
                                    "modelled here: a Whisper encoder (every released Ultravox checkpoint)")
    return Fields(ac, f"{where} (audio_config)", aliases=_WHISPER_ALIASES, defaults=FAMILY_DEFAULTS.get("whisper"),
                  nested=True, family="whisper")


def ultravox_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The Whisper encoder and the projector (kind ``audio``), as vLLM's UltravoxModel builds them."""
    f = _audio_fields(top, where)
    d = f.int("d_model")
    heads = f.int("encoder_attention_heads")
    if d % heads:
        raise f.error("encoder_attention_heads", f"({heads}) must divide d_model ({d})")
    layers = f.int("encoder_layers", hi=MAX_LAYERS)
    ffn = f.int("encoder_ffn_dim")
    mels = f.int("num_mel_bins", hi=1 << 16)
    positions = f.int("max_source_positions", hi=1 << 24)
    out = whisper_encoder("audio_tower", d, layers, ffn, mels, positions)

    t = Fields(top, where, family="ultravox")
    stack = t.int("stack_factor", 8, hi=1 << 10)
    dim_in = d * stack
    p = "multi_modal_projector"
    a = "audio"
    out.append(Tensor(f"{p}.ln_pre.weight", (dim_in,), a))
    n_layers = t.int("num_projector_layers", 0, lo=0, hi=MAX_LAYERS)
    if n_layers:
        out += [Tensor(f"{p}.linear_in.weight", (d, dim_in), a), Tensor(f"{p}.linear_in.bias", (d,), a),
                Tensor(f"{p}.embed_positions.weight", (positions, d), a)]
        for i in range(n_layers):
            out += whisper_layer(f"{p}.layers.{i}", d, ffn)
        out += [Tensor(f"{p}.ln_post.weight", (d,), a), Tensor(f"{p}.linear_out.weight", (text_hidden, d), a),
                Tensor(f"{p}.linear_out.bias", (text_hidden,), a)]
        return tuple(out)
    hidden = t.int("hidden_size", 4096)
    act = t.str("projector_act", "swiglu")
    mid = hidden
    if act == "swiglu":
        if hidden % 2:
            raise t.error("hidden_size", f"({hidden}) must be even: the swiglu projector halves it")
        mid = hidden // 2
    out += [Tensor(f"{p}.linear_1.weight", (hidden, dim_in), a), Tensor(f"{p}.linear_2.weight", (text_hidden, mid), a)]
    if t.bool("projector_ln_mid", False):
        out.append(Tensor(f"{p}.ln_mid.weight", (mid,), a))
    else:
        out.append(Tensor(f"{p}.ln_post.weight", (text_hidden,), a))
    return tuple(out)
