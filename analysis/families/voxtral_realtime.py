"""Mistral's Voxtral Realtime (``voxtral_realtime``, VoxtralRealtimeForConditionalGeneration) and its language model
(``voxtral_realtime_text``), as transformers 5.24's modeling_voxtral_realtime.py builds them and vLLM's
voxtral_realtime.py / whisper_causal.py / mistral.py run them.

Audio (``model.audio_tower``, VoxtralRealtimeEncoder, kind ``audio``): a causal streaming encoder. ``embedder``: two
biased causal Conv1d (num_mel_bins -> hidden, kernel 3; hidden -> hidden, kernel 3 stride 2); ``num_hidden_layers``
blocks of RMSNorm -> attention (RoPE, a sliding window of ``sliding_window`` frames; q_proj / v_proj / o_proj biased,
k_proj bias-free, ``num_attention_heads`` x ``head_dim`` wide, 32 x 64 = 2048 for a 1280-wide encoder: no GQA) ->
RMSNorm -> gated SiLU MLP (gate / up bias-free, down_proj biased); a final ``norm``. No position table. The config's
attribute_map names (d_model, encoder_layers, encoder_attention_heads, encoder_ffn_dim, and num_key_value_heads,
which sets num_attention_heads) are read as transformers reads them: over the field's own key.

Projector (``model.multi_modal_projector``, kind ``audio``): ``linear_1`` from ``downsample_factor`` stacked encoder
frames (4 x 1280 = 5120) to the text width, GELU, ``linear_2`` hidden -> hidden, both bias-free.
``model.time_embedding`` holds only a non-persistent ``inv_freq`` buffer: no parameters.

Language model (VoxtralRealtimeTextModel): Mistral's decoder (bias-free GQA attention with a sliding window, SwiGLU,
RMSNorms) whose every layer scales the normed FFN input by 1 + ``ada_rms_norm(t_cond)``: a bias-free Linear(hidden,
32) -> GELU -> Linear(32, hidden) (``Layer.ada_norm_rank``) of t_cond, the sinusoidal embedding of the request's
delay (num_delay_tokens). vLLM (VoxtralRealtimeGeneration.forward, MistralDecoderLayer) computes t_cond and each
layer's gain at every forward, from one (1, hidden) vector whatever the batch: the trace has them as their own ops
(``ada_rms_norm.*``: 4 x 32 x hidden FLOPs and the 2 x 32 x hidden weights per layer per step). The sinusoid itself
(cos / sin of hidden / 2 values, no weights) is not traced. VoxtralRealtimeConfig lays its text defaults (Ministral-3B's
shape: vocab 131072, hidden 3072, 26 layers, 8 KV heads of 128, intermediate 9216, rope_theta 1e6, window 8192) under
a dict text_config (:func:`voxtral_realtime_text_config`); lm_head is tied to the embedding by the wrapper's
``tie_word_embeddings`` (default true), text_config's flag is not read.

Not in the decode figures (a caveat says so): in streaming, vLLM runs the audio encoder and the projector at every
step on the ``downsample_factor`` new frames of each text token, and caches the encoder's K/V in the same paged cache
(WhisperCausalAttentionWithBlockPooling: 4 frames of heads x head_dim per text-token slot, windowed by the encoder's
sliding_window). trace / serve / plan describe the language model.

Checked against transformers on the meta device (tests/test_voxtral_realtime.py): VoxtralRealtimeConfig() and
Voxtral-Mini-4B-Realtime-2602's config.json are 4,429,679,360 parameters (audio tower 970,395,392, projector
25,165,824, language model 3,434,118,144 with the tied head); the model card: "4B", "≈3.4B Language Model"; the
Mistral-format consolidated.safetensors holds 711 BF16 tensors, 8.3 GB (4,429,679,360 x 2 bytes = 8.25 GiB), and the
same count of tensors: 288 of the language model (26 x 11 + embedding + norm), 421 of the encoder, 2 of the adapter.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor
from . import decoder
from .common import Traits
from .voxtral import sub_config_dict, text_config_dict

#: VoxtralRealtimeConfig.sub_configs_defaults["text_config"].init_kwargs: laid under a dict text_config
TEXT_DEFAULTS = {"model_type": "voxtral_realtime_text", "vocab_size": 131072, "hidden_size": 3072,
                 "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "use_cache": True,
                 "rope_theta": 1000000.0, "head_dim": 128, "sliding_window": 8192}

#: VoxtralRealtimeEncoderConfig's class defaults (the fields the count reads)
ENCODER_DEFAULTS = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_mel_bins": 128, "head_dim": 64, "sliding_window": 750,
                    "rms_norm_eps": 1e-05}

_ENCODER_ALIASES = {"hidden_size": ("d_model",), "num_hidden_layers": ("encoder_layers",),
                    "num_attention_heads": ("encoder_attention_heads", "num_key_value_heads"),
                    "intermediate_size": ("encoder_ffn_dim",)}

#: VoxtralRealtimeTextAdaRmsNorm: Linear(hidden_size, 32) and Linear(32, hidden_size), the width fixed in the code
ADA_RANK = 32

#: VoxtralRealtimeTextConfig (MistralConfig's layout): bias-free attention and MLP, every layer windowed
_TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all")


def voxtral_realtime_text_config(cfg: dict, where: str) -> dict:
    """The text_config transformers builds: VoxtralRealtimeConfig's defaults under the given fields, tied as the
    wrapper's own ``tie_word_embeddings`` says (default true; VoxtralRealtimeTextConfig has no such field)."""
    given = text_config_dict(cfg, where)
    defaults = dict(TEXT_DEFAULTS)
    if given.get("rope_parameters") is not None:
        del defaults["rope_theta"]  # transformers keeps the given rope_parameters over the laid-under rope_theta
    text = {**defaults, **given}
    mt = text.get("model_type")
    if mt != "voxtral_realtime_text":
        raise ConfigError(f"{where}: field 'text_config.model_type' is {short(mt)}; Voxtral Realtime's language model "
                          "is 'voxtral_realtime_text' (VoxtralRealtimeTextModel, with its per-layer ada_rms_norm)")
    tie = cfg.get("tie_word_embeddings", True)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
    text["tie_word_embeddings"] = tie
    return text


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """Mistral's decoder with each layer's ada_rms_norm (``Layer.ada_norm_rank``), read inside a voxtral_realtime
    config only (``families.WRAPPER_ONLY``: transformers builds voxtral_realtime_text as VoxtralRealtimeTextModel,
    with no lm_head, no causal-LM class; its head and its tie are the wrapper's)."""
    spec = decoder.build(f, model_type, _TRAITS)
    layers = tuple(replace(layer, ada_norm_rank=ADA_RANK) for layer in spec.layers)
    caveat = ("Voxtral Realtime: the decode figures are the language model's. In streaming, vLLM also runs the audio "
              "encoder and projector at every step on the downsample_factor (4) new frames of each text token, and "
              "caches the encoder's K/V in the same paged cache (2 x encoder layers x 4 frames x heads x head_dim "
              "values per text token, windowed by audio_config.sliding_window: 524,288 values, 1,048,576 bytes at "
              "bf16, for Voxtral-Mini-4B-Realtime-2602's 32 layers of 32 x 64); neither is in trace, serve or plan. "
              "The per-step ada_rms_norm gains (one t_cond row per step) are traced; the sinusoidal delay-time "
              "embedding (no weights) is not")
    return replace(spec, layers=layers, caveats=spec.caveats + (caveat,))


def _audio_fields(top: dict, where: str) -> Fields:
    ac = sub_config_dict(top, "audio_config", where, "voxtral_realtime_encoder", "Voxtral Realtime's audio tower")
    # VoxtralRealtimeEncoderConfig.attribute_map: an alias, when given, sets the field it names (over the field's own
    # key; among several aliases of one field, the last in the file wins), as transformers reads the config
    ac = dict(ac)
    for key, names in _ENCODER_ALIASES.items():
        for name in [n for n in ac if n in names]:
            ac[key] = ac.pop(name)
    return Fields(ac, f"{where} (audio_config)", defaults=ENCODER_DEFAULTS, nested=True,
                  family="voxtral_realtime_encoder")


def encoder_tensors(p: str, d: int, layers: int, heads: int, head_dim: int, ffn: int, mels: int) -> list[Tensor]:
    """VoxtralRealtimeEncoder (kind ``audio``) under prefix ``p``."""
    a, w = "audio", heads * head_dim
    out = [Tensor(f"{p}.embedder.conv1.weight", (d, mels, 3), a), Tensor(f"{p}.embedder.conv1.bias", (d,), a),
           Tensor(f"{p}.embedder.conv2.weight", (d, d, 3), a), Tensor(f"{p}.embedder.conv2.bias", (d,), a)]
    for i in range(layers):
        b = f"{p}.layers.{i}"
        out += [Tensor(f"{b}.self_attn.q_proj.weight", (w, d), a), Tensor(f"{b}.self_attn.q_proj.bias", (w,), a),
                Tensor(f"{b}.self_attn.k_proj.weight", (w, d), a),
                Tensor(f"{b}.self_attn.v_proj.weight", (w, d), a), Tensor(f"{b}.self_attn.v_proj.bias", (w,), a),
                Tensor(f"{b}.self_attn.o_proj.weight", (d, w), a), Tensor(f"{b}.self_attn.o_proj.bias", (d,), a),
                Tensor(f"{b}.self_attn_layer_norm.weight", (d,), a), Tensor(f"{b}.final_layer_norm.weight", (d,), a),
                Tensor(f"{b}.mlp.gate_proj.weight", (ffn, d), a), Tensor(f"{b}.mlp.up_proj.weight", (ffn, d), a),
                Tensor(f"{b}.mlp.down_proj.weight", (d, ffn), a), Tensor(f"{b}.mlp.down_proj.bias", (d,), a)]
    return out + [Tensor(f"{p}.norm.weight", (d,), a)]


def voxtral_realtime_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The streaming audio encoder and the projector (kind ``audio``), as VoxtralRealtimeModel builds them."""
    f = _audio_fields(top, where)
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    # VoxtralRealtimeEncoderConfig: head_dim 64 unless set null, then hidden_size // num_attention_heads
    head_dim = f.int("head_dim") if f.raw("head_dim") is not None or "head_dim" not in f.cfg else d // heads
    if head_dim < 1:
        raise f.error("num_attention_heads", f"({heads}) exceeds hidden_size ({d}): head_dim would be 0")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    ffn = f.int("intermediate_size")
    mels = f.int("num_mel_bins", hi=1 << 16)
    ds = Fields(top, where, defaults={"downsample_factor": 4}, nested=True).int("downsample_factor", hi=1 << 10)
    out = encoder_tensors("model.audio_tower", d, layers, heads, head_dim, ffn, mels)
    m = "model.multi_modal_projector"
    out += [Tensor(f"{m}.linear_1.weight", (text_hidden, d * ds), "audio"),
            Tensor(f"{m}.linear_2.weight", (text_hidden, text_hidden), "audio")]
    return tuple(out)
