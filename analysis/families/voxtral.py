"""Mistral's Voxtral (``voxtral``, VoxtralForConditionalGeneration), as transformers' modeling_voxtral.py builds it:
a Whisper-style audio encoder (``model.audio_tower``), a two-Linear projector over four stacked encoder frames
(``model.multi_modal_projector``) and a Llama language model (``model.language_model``, its own untied lm_head).

Audio (``voxtral_encoder``, VoxtralEncoder): two biased Conv1d (num_mel_bins -> hidden, kernel 3; hidden -> hidden,
kernel 3 stride 2), ``embed_positions`` (an Embedding of max_source_positions x hidden: a parameter, kept in fp32,
frozen but stored in the checkpoint), ``num_hidden_layers`` pre-LayerNorm blocks (q / v / out_proj biased, k_proj
bias-free, biased fc1 / fc2 of intermediate_size) and a final ``layer_norm``. The AvgPool1d has no weights. The
config's attribute_map names (d_model, encoder_layers, encoder_attention_heads, encoder_ffn_dim) are read as aliases.

Projector (VoxtralMultiModalProjector): ``linear_1`` from the audio config's intermediate_size (the encoder output
reshaped four frames to a row: 4 x 1280 = 5120 in the released checkpoints) to the text hidden size and ``linear_2``
hidden -> hidden, both bias-free.

Language model: VoxtralConfig.__post_init__ lays a dict text_config over its own defaults (Ministral-3B's shape:
vocab 131072, hidden 3072, 30 layers, 8 KV heads, head_dim 128, rope_theta 1e8) before AutoConfig reads it as
Llama, so :func:`voxtral_text_config` does the same. VoxtralForConditionalGeneration has no ``_tied_weights_keys``:
lm_head is never tied (WRAPPER_TIE "never"), whatever the flags say.

Checked against transformers on the meta device (tests/test_voxtral.py): VoxtralConfig() and Voxtral-Mini-3B-2507 are
4,676,271,104 parameters (the model card: 4.68B; audio tower 636,968,960 + projector 25,165,824), Voxtral-Small-24B-2507
24,261,800,960 (the card: 24.3B).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor


#: VoxtralConfig.sub_configs_defaults["text_config"].init_kwargs: laid under a dict text_config (model_type llama)
TEXT_DEFAULTS = {"model_type": "llama", "vocab_size": 131072, "hidden_size": 3072, "intermediate_size": 8192,
                 "num_hidden_layers": 30, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                 "rms_norm_eps": 1e-05, "use_cache": True, "rope_theta": 100000000.0, "head_dim": 128}

_AUDIO_ALIASES = {"hidden_size": ("d_model",), "num_hidden_layers": ("encoder_layers",),
                  "num_attention_heads": ("encoder_attention_heads",), "intermediate_size": ("encoder_ffn_dim",)}


def text_config_dict(cfg: dict, where: str) -> dict:
    """A wrapper's ``text_config`` as a dict: ``{}`` when absent (null: transformers builds its class defaults), a
    ConfigError when not an object."""
    text = cfg.get("text_config")
    if text is None:
        return {}
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {short(text)}")
    return text


def required_sub_config(top: dict, key: str, where: str, hint: str, what: str = "the language model") -> dict:
    """A wrapper's required sub-config ``top[key]`` (``llm_config``, ``text_config`` ...) as a new dict: absent or
    null is a missing field (``hint`` says where the wrapper keeps ``what``), any non-object a type error."""
    sub = top.get(key)
    if sub is None:
        raise ConfigError(f"{where}: required field '{key}' is missing", hint)
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object of {what}'s fields, got {short(sub)}")
    return dict(sub)


def sub_config_dict(top: dict, key: str, where: str, model_type: str, name: str, *, label: str | None = None,
                    untyped: bool = False) -> dict:
    """A wrapper's sub-config ``top[key]`` as a dict (``{}`` when absent or null: transformers builds its class
    defaults), checked to name ``model_type`` (absent: taken as it); ``label`` names it in messages (a dotted path
    for a nested one), ``untyped`` accepts the empty model_type a sub-config class without one writes."""
    label = label or key
    sub = top.get(key)
    if sub is None:
        return {}
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{label}' must be an object of fields, got {short(sub)}")
    mt = sub.get("model_type", model_type)
    if mt != model_type and not (untyped and mt == ""):
        raise UnsupportedModelError(f"{where}: field '{label}.model_type' is {short(mt)}: {name} is modelled with its "
                                    f"'{model_type}' (every released checkpoint)",
                                    f"a {name} config.json names {label}.model_type '{model_type}'")
    return sub


def voxtral_text_config(cfg: dict, where: str) -> dict:
    """The text_config transformers builds: VoxtralConfig's defaults under the given fields (all of them when the
    config has no text_config)."""
    return {**TEXT_DEFAULTS, **text_config_dict(cfg, where)}


def _audio_fields(top: dict, where: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    ac = sub_config_dict(top, "audio_config", where, "voxtral_encoder", "Voxtral's audio tower")
    return Fields(ac, f"{where} (audio_config)", aliases=_AUDIO_ALIASES,
                  defaults=FAMILY_DEFAULTS.get("voxtral_encoder"), nested=True, family="voxtral_encoder")


def whisper_encoder(p: str, d: int, layers: int, ffn: int, mels: int, positions: int) -> list[Tensor]:
    """Whisper's encoder (kind ``audio``) under prefix ``p``, as transformers' WhisperEncoder / VoxtralEncoder and
    vLLM's WhisperEncoder build it: two biased Conv1d (mels -> d, kernel 3; d -> d, kernel 3 stride 2), the
    ``embed_positions`` Embedding (positions x d), ``layers`` pre-LayerNorm blocks (q / v / out_proj biased, k_proj
    bias-free, biased fc1 / fc2 of ``ffn``) and the final ``layer_norm``."""
    a = "audio"
    out = [Tensor(f"{p}.conv1.weight", (d, mels, 3), a), Tensor(f"{p}.conv1.bias", (d,), a),
           Tensor(f"{p}.conv2.weight", (d, d, 3), a), Tensor(f"{p}.conv2.bias", (d,), a),
           Tensor(f"{p}.embed_positions.weight", (positions, d), a)]
    for i in range(layers):
        out += whisper_layer(f"{p}.layers.{i}", d, ffn)
    out += [Tensor(f"{p}.layer_norm.weight", (d,), a), Tensor(f"{p}.layer_norm.bias", (d,), a)]
    return out


def whisper_layer(b: str, d: int, ffn: int) -> list[Tensor]:
    """One Whisper encoder block (kind ``audio``)."""
    a = "audio"
    out = [Tensor(f"{b}.self_attn.k_proj.weight", (d, d), a)]
    for name in ("v_proj", "q_proj", "out_proj"):
        out += [Tensor(f"{b}.self_attn.{name}.weight", (d, d), a), Tensor(f"{b}.self_attn.{name}.bias", (d,), a)]
    return out + [Tensor(f"{b}.self_attn_layer_norm.weight", (d,), a), Tensor(f"{b}.self_attn_layer_norm.bias", (d,), a),
                  Tensor(f"{b}.fc1.weight", (ffn, d), a), Tensor(f"{b}.fc1.bias", (ffn,), a),
                  Tensor(f"{b}.fc2.weight", (d, ffn), a), Tensor(f"{b}.fc2.bias", (d,), a),
                  Tensor(f"{b}.final_layer_norm.weight", (d,), a), Tensor(f"{b}.final_layer_norm.bias", (d,), a)]


def voxtral_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The audio tower and the projector (kind ``audio``), as VoxtralModel builds them."""
    f = _audio_fields(top, where)
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d}): VoxtralAttention splits "
                                             "hidden_size into heads")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    ffn = f.int("intermediate_size")
    mels = f.int("num_mel_bins", hi=1 << 16)
    positions = f.int("max_source_positions", hi=1 << 24)
    out = whisper_encoder("model.audio_tower", d, layers, ffn, mels, positions)
    m = "model.multi_modal_projector"
    out += [Tensor(f"{m}.linear_1.weight", (text_hidden, ffn), "audio"),
            Tensor(f"{m}.linear_2.weight", (text_hidden, text_hidden), "audio")]
    return tuple(out)
