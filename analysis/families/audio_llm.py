"""Speech / audio-in LLM wrappers transformers ships (Qwen2-Audio, Granite Speech, Audio Flamingo 3, Music Flamingo,
GLM-ASR, Qwen3-ASR, VibeVoice-ASR), counted whole (audio encoder and projector as kind ``audio``; the
text decode trace, FLOPs and K/V are the language model's, read from ``text_config`` by its own registry entry).

Qwen2-Audio (``qwen2_audio``, Qwen2AudioForConditionalGeneration, modeling_qwen2_audio.py): ``model.audio_tower`` is
AutoModel of ``audio_config`` (Qwen2AudioEncoder, model_type ``qwen2_audio_encoder``): Whisper's encoder
(analysis.families.voxtral.whisper_encoder: two biased Conv1d, the ``embed_positions`` table of max_source_positions
rows, pre-LayerNorm blocks with a bias-free k_proj, the final layer_norm; its AvgPool1d has no weights), then
``model.multi_modal_projector.linear`` (biased, d_model -> text hidden). The language model is ``text_config`` (Qwen2's
class defaults under it: Qwen2-Audio-7B's text_config names only intermediate_size 11008, vocab 156032 and a few
more, so hidden 4096, 32 layers and 32 KV heads are Qwen2Config's defaults). The class has no ``_tied_weights_keys``:
lm_head is never tied (WRAPPER_TIE "never").

Granite Speech (``granite_speech``, GraniteSpeechForConditionalGeneration, modeling_granite_speech.py):
``model.encoder`` (GraniteSpeechCTCEncoder, ``encoder_config``): ``input_linear`` (input_dim -> hidden_dim, biased),
num_layers conformer blocks — two macaron feed-forwards (LayerNorm, biased up_proj to hidden_dim x feedforward_mult,
biased down_proj), attention (LayerNorm; bias-free to_q (heads x dim_head) and to_kv (2 x that), biased to_out, a Shaw
``rel_pos_emb`` Embedding(2 x max_pos_emb + 1, dim_head)), a conv module (LayerNorm; biased pointwise up_conv
Conv1d(hidden, 2E, 1); bias-free depthwise Conv1d(E, E, conv_kernel_size, groups E); BatchNorm1d(E) — weight and
bias are parameters, its running mean / var buffers are not counted —; biased pointwise down_conv Conv1d(E, hidden,
1); E = hidden_dim x conv_expansion_factor) and a post LayerNorm —, then the self-conditioning CTC pair ``out``
(hidden -> output_dim) and ``out_mid`` (output_dim -> hidden), both biased. ``model.projector``: ``query`` (1,
window_size // downsample_rate, Q-Former hidden), ``qformer`` = AutoModel of ``projector_config`` (Blip2QFormerModel:
a LayerNorm, then per layer self-attention (biased query / key / value, output dense + LayerNorm), a cross-attention
every ``cross_attention_frequency``-th layer whose key / value read ``encoder_hidden_size``, the query feed-forward
(intermediate_query / output_query + LayerNorm), and the text feed-forward only with use_qformer_text_input), and
``linear`` (biased, Q-Former hidden -> text hidden). Its language model is Granite (text_config; GraniteConfig's
defaults). lm_head ties as the wrapper's own ``tie_word_embeddings`` says (class default true), whatever text_config
says (checked on the meta device): :func:`granite_speech_text_config` writes that flag into the text_config read.
The checkpoints' speech LoRA adapter (has_lora_adapter) is a separate PEFT adapter (adapter_model.safetensors), not
part of GraniteSpeechForConditionalGeneration, so it is not counted here.

Audio Flamingo 3 / Music Flamingo (``audioflamingo3``, ``musicflamingo``; modeling_audioflamingo3.py /
modeling_musicflamingo.py): ``model.audio_tower`` is AudioFlamingo3Encoder (``audioflamingo3_encoder``; Music
Flamingo's config renames a ``musicflamingo_encoder``): Whisper's encoder again; the projector ``linear_1`` (audio
hidden -> text hidden) and ``linear_2`` (text hidden square), biased as ``projector_bias`` says (default true). Music
Flamingo's rotary time embedding holds buffers only. Qwen2 language model; ``_tied_weights_keys = None``: never tied.

GLM-ASR (``glmasr``, modeling_glmasr.py): GlmAsrEncoder (two biased Conv1d, blocks of biased q / v / o and bias-free k
(num_key_value_heads x head_dim, head_dim = hidden // heads unless the config names one), partial RoPE (no table),
LayerNorms, a biased fc1 / fc2 MLP, a final ``norm``) and the projector (``linear_1`` from the audio intermediate_size
— four stacked frames — to 2 x text hidden, ``linear_2`` back, biased). GlmAsrConfig lays a dict text_config over its
own Llama defaults (GLM-ASR-Nano's: vocab 59264, hidden 2048, 28 layers, 16 / 4 heads, intermediate 6144);
lm_head ties as the wrapper's flag says (default true). The hub's original remote-code layout (``whisper_config`` /
``lm_config``) is refused: GlmAsrConfig ignores those fields.

Qwen3-ASR (``qwen3_asr``, modeling_qwen3_asr.py): Qwen3ASREncoder (three biased stride-2 3x3 Conv2d, a bias-free
``conv_out``, sinusoidal positions as a buffer, Whisper-style blocks with all four attention projections biased,
``ln_post``) and the projector ``linear_1`` (d_model square) / ``linear_2`` (d_model -> output_dim), biased. Qwen3's
language model: Qwen3ASRConfig's init_kwargs only when text_config is absent (a dict is read over Qwen3Config's own
defaults); lm_head ties as the wrapper's flag says (default true).

VibeVoice-ASR (``vibevoice_asr``, modeling_vibevoice_asr.py): two VibeVoiceAcousticTokenizerEncoderModel
(``acoustic_tokenizer_encoder_config``, ``semantic_tokenizer_encoder_config``; the semantic one's hidden_size is 128
only when its config is absent): a causal-conv stem, one strided causal conv (kernel 2 x ratio, channels doubling) per
downsampling ratio, ConvNeXt-1d stages of ``depths`` layers (RMSNorms, depthwise causal conv, biased FFN of
ffn_expansion, two layer-scale vectors) and a causal-conv head to hidden_size; the projector per path: a biased
Linear to the text hidden, an RMSNorm, a biased square Linear. Qwen2 language model, never tied.

Checked against transformers on the meta device (tests/test_audio_llm.py): Qwen2-Audio-7B / -7B-Instruct
8,397,094,912 (the hub's 8.4B; audio tower 636,968,960 + projector 5,246,976), granite-speech-3.3-2b 3,009,219,840
(the hub's 3B class: encoder 439,980,288, projector 35,697,664, Granite-3.3-2B 2,533,541,888 tied), granite-speech-3.3-8b
8,648,645,888 (the hub's 9B class: projector 37,796,864, Granite-3.3-8B 8,170,868,736 tied). The configs are the hub's
as quoted by ports (the Granite 3.3 2B / 8B text shapes, the 16-layer encoder with output_dim 256, the 2-layer
Q-Former); no safetensors index was at hand to compare byte totals. Qwen3-ASR-0.6B-hf 782,426,112 and -1.7B-hf
2,038,052,480 (the hub's 0.8B / 2B class), VibeVoice-ASR-HF 8,330,325,888 (encoders and projectors 714,709,376 +
Qwen2.5-7B's decoder, untied), from their transformers-format config.json. Audio Flamingo 3, Music Flamingo and GLM-ASR
are checked on their class defaults and variants only (AudioFlamingo3Config() / MusicFlamingoConfig()
12,708,843,520, GlmAsrConfig() — GLM-ASR-Nano-2512's shapes — 2,136,470,528): no published transformers-format
config.json of theirs was at hand.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from .ocr_vl import qformer_layers, qformer_width
from .voxtral import text_config_dict, whisper_encoder

#: Qwen2AudioEncoderConfig's class defaults (the same as Qwen2AudioConfig's audio_config init_kwargs)
QWEN2_AUDIO_ENCODER_DEFAULTS = {"num_mel_bins": 128, "encoder_layers": 32, "encoder_attention_heads": 20,
                                "encoder_ffn_dim": 5120, "d_model": 1280, "max_source_positions": 1500}
#: GraniteSpeechEncoderConfig's class defaults (dim_head: hidden_dim // num_heads when absent)
GRANITE_SPEECH_ENCODER_DEFAULTS = {"input_dim": 160, "num_layers": 10, "hidden_dim": 1024, "feedforward_mult": 4,
                                   "num_heads": 8, "output_dim": 42, "max_pos_emb": 512, "conv_kernel_size": 15,
                                   "conv_expansion_factor": 2}
#: GraniteSpeechConfig's own class defaults
GRANITE_SPEECH_DEFAULTS = {"downsample_rate": 5, "window_size": 15, "tie_word_embeddings": True}

_WHISPER_ALIASES = {"d_model": ("hidden_size",), "encoder_layers": ("num_hidden_layers",),
                    "encoder_attention_heads": ("num_attention_heads",), "encoder_ffn_dim": ("intermediate_size",)}


def _sub(top: dict, key: str, where: str, model_type: str, name: str, defaults: dict,
         aliases: dict | None = None) -> Fields:
    sub = top.get(key)
    if sub is None:
        sub = {}  # transformers builds the class-default sub-model
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object of fields, got {short(sub)}")
    mt = sub.get("model_type", model_type)
    if mt != model_type:
        raise UnsupportedModelError(f"{where}: field '{key}.model_type' is {short(mt)}: {name} is modelled with its "
                                    f"'{model_type}' (every released checkpoint)",
                                    f"a {name} config.json names {key}.model_type '{model_type}'")
    return Fields(sub, f"{where} ({key})", aliases=aliases, defaults=defaults, nested=True, family=model_type)


def _text(top: dict, where: str, default_type: str) -> dict:
    return {"model_type": default_type, **text_config_dict(top, where)}


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool = True) -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), "audio"))
    if bias:
        out.append(Tensor(f"{name}.bias", (n_out,), "audio"))


def _norm(out: list[Tensor], name: str, dim: int) -> None:
    out += [Tensor(f"{name}.weight", (dim,), "audio"), Tensor(f"{name}.bias", (dim,), "audio")]


# ---- Qwen2-Audio ---------------------------------------------------------------------------------------------------


def qwen2_audio_text_config(cfg: dict, where: str) -> dict:
    """Qwen2AudioConfig's text_config: Qwen2 (its class defaults) when absent or unnamed."""
    return _text(cfg, where, "qwen2")


def qwen2_audio_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The Whisper-shaped audio tower and the one-Linear projector (kind ``audio``)."""
    f = _sub(top, "audio_config", where, "qwen2_audio_encoder", "Qwen2-Audio's audio tower",
             QWEN2_AUDIO_ENCODER_DEFAULTS, _WHISPER_ALIASES)
    d = f.int("d_model")
    heads = f.int("encoder_attention_heads")
    if d % heads:
        raise f.error("encoder_attention_heads", f"({heads}) must divide d_model ({d}): Qwen2AudioAttention splits "
                                                 "d_model into heads")
    out = whisper_encoder("model.audio_tower", d, f.int("encoder_layers", hi=MAX_LAYERS), f.int("encoder_ffn_dim"),
                          f.int("num_mel_bins", hi=1 << 16), f.int("max_source_positions", hi=1 << 24))
    _linear(out, "model.multi_modal_projector.linear", text_hidden, d)
    return tuple(out)


# ---- Granite Speech ------------------------------------------------------------------------------------------------


def granite_speech_text_config(cfg: dict, where: str) -> dict:
    """GraniteSpeechConfig's text_config (Granite's class defaults), lm_head tied as the wrapper's own flag says."""
    tie = cfg.get("tie_word_embeddings", GRANITE_SPEECH_DEFAULTS["tie_word_embeddings"])
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
    return dict(_text(cfg, where, "granite"), tie_word_embeddings=tie)


def _conformer(f: Fields, p: str) -> list[Tensor]:
    d = f.int("hidden_dim")
    heads = f.int("num_heads")
    dim_head = f.int("dim_head") if f.has("dim_head") else d // heads
    if dim_head < 1:
        raise f.error("num_heads", f"({heads}) is larger than hidden_dim ({d}): dim_head would be 0")
    inner = heads * dim_head
    ff = d * f.int("feedforward_mult", hi=1 << 10)
    conv = d * f.int("conv_expansion_factor", hi=1 << 10)
    kernel = f.int("conv_kernel_size", hi=1 << 12)
    rel = 2 * f.int("max_pos_emb", hi=1 << 24) + 1
    out_dim = f.int("output_dim")
    out: list[Tensor] = []
    _linear(out, f"{p}.input_linear", d, f.int("input_dim"))
    for i in range(f.int("num_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for name in ("ff1", "ff2"):
            _norm(out, f"{b}.{name}.pre_norm", d)
            _linear(out, f"{b}.{name}.up_proj", ff, d)
            _linear(out, f"{b}.{name}.down_proj", d, ff)
        _norm(out, f"{b}.attn.pre_norm", d)
        _linear(out, f"{b}.attn.to_q", inner, d, bias=False)
        _linear(out, f"{b}.attn.to_kv", 2 * inner, d, bias=False)
        _linear(out, f"{b}.attn.to_out", d, inner)
        out.append(Tensor(f"{b}.attn.rel_pos_emb.weight", (rel, dim_head), "audio"))
        _norm(out, f"{b}.conv.norm", d)
        out += [Tensor(f"{b}.conv.up_conv.weight", (2 * conv, d, 1), "audio"),
                Tensor(f"{b}.conv.up_conv.bias", (2 * conv,), "audio"),
                Tensor(f"{b}.conv.depth_conv.conv.weight", (conv, 1, kernel), "audio")]
        _norm(out, f"{b}.conv.batch_norm", conv)
        out += [Tensor(f"{b}.conv.down_conv.weight", (d, conv, 1), "audio"),
                Tensor(f"{b}.conv.down_conv.bias", (d,), "audio")]
        _norm(out, f"{b}.post_norm", d)
    _linear(out, f"{p}.out", out_dim, d)
    _linear(out, f"{p}.out_mid", d, out_dim)
    return out


def granite_speech_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The conformer CTC encoder and the windowed Q-Former projector (kind ``audio``)."""
    from ..family_defaults import FAMILY_DEFAULTS

    ef = _sub(top, "encoder_config", where, "granite_speech_encoder", "Granite Speech's encoder",
              GRANITE_SPEECH_ENCODER_DEFAULTS)
    out = _conformer(ef, "model.encoder")
    qf = _sub(top, "projector_config", where, "blip_2_qformer", "Granite Speech's projector",
              FAMILY_DEFAULTS.get("blip_2_qformer", {}))
    wf = Fields(top, where, defaults=GRANITE_SPEECH_DEFAULTS, family="granite_speech")
    window = wf.int("window_size", hi=1 << 16)
    rate = wf.int("downsample_rate", hi=1 << 16)
    if window < rate:
        raise wf.error("window_size", f"({window}) is smaller than downsample_rate ({rate}): the projector would "
                                      "have no queries")
    qh, q_inter = qformer_width(qf)
    kv_in = qf.int("encoder_hidden_size")
    freq = qf.int("cross_attention_frequency", 2, hi=MAX_LAYERS, note="absent: Blip2QFormerConfig's class default")
    text_ffn = qf.bool("use_qformer_text_input")
    p = "model.projector"
    out.append(Tensor(f"{p}.query", (1, window // rate, qh), "audio"))
    _norm(out, f"{p}.qformer.layernorm", qh)
    qformer_layers(out, f"{p}.qformer", qf.int("num_hidden_layers", hi=MAX_LAYERS), qh, q_inter, kv_in, freq,
                   text_ffn, kind="audio")
    _linear(out, f"{p}.linear", text_hidden, qh)
    return tuple(out)


# ---- Audio Flamingo 3 / Music Flamingo -----------------------------------------------------------------------------

#: AudioFlamingo3EncoderConfig's class defaults (its attribute_map: d_model, encoder_layers, ... are aliases)
AF3_ENCODER_DEFAULTS = {"num_mel_bins": 128, "num_hidden_layers": 32, "num_attention_heads": 20,
                        "intermediate_size": 5120, "hidden_size": 1280, "max_source_positions": 1500}
_AF3_ALIASES = {"hidden_size": ("d_model",), "num_hidden_layers": ("encoder_layers",),
                "num_attention_heads": ("encoder_attention_heads",), "intermediate_size": ("encoder_ffn_dim",)}


def flamingo_text_config(cfg: dict, where: str) -> dict:
    """AudioFlamingo3Config's / MusicFlamingoConfig's text_config: Qwen2 (its class defaults) when absent or unnamed."""
    return _text(cfg, where, "qwen2")


def _flamingo_towers(top: dict, text_hidden: int, where: str, name: str) -> tuple[Tensor, ...]:
    ac = top.get("audio_config")
    if isinstance(ac, dict) and name == "Music Flamingo" and ac.get("model_type", None) in (None, "musicflamingo_encoder"):
        ac = dict(ac, model_type="audioflamingo3_encoder")  # MusicFlamingoConfig.__post_init__ renames it
        top = dict(top, audio_config=ac)
    f = _sub(top, "audio_config", where, "audioflamingo3_encoder", f"{name}'s audio tower", AF3_ENCODER_DEFAULTS,
             _AF3_ALIASES)
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d}): the encoder's attention "
                                             "splits hidden_size into heads")
    out = whisper_encoder("model.audio_tower", d, f.int("num_hidden_layers", hi=MAX_LAYERS),
                          f.int("intermediate_size"), f.int("num_mel_bins", hi=1 << 16),
                          f.int("max_source_positions", hi=1 << 24))
    bias = Fields(top, where, defaults={"projector_bias": True}).bool("projector_bias")
    _linear(out, "model.multi_modal_projector.linear_1", text_hidden, d, bias)
    _linear(out, "model.multi_modal_projector.linear_2", text_hidden, text_hidden, bias)
    return tuple(out)


def audioflamingo3_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Audio Flamingo 3: the Whisper-shaped encoder and the two-Linear projector (kind ``audio``)."""
    return _flamingo_towers(top, text_hidden, where, "Audio Flamingo 3")


def musicflamingo_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Music Flamingo: Audio Flamingo 3's encoder and projector (its rotary time embedding holds only buffers)."""
    return _flamingo_towers(top, text_hidden, where, "Music Flamingo")


# ---- GLM-ASR -------------------------------------------------------------------------------------------------------

#: GlmAsrConfig.sub_configs_defaults["text_config"].init_kwargs: laid under a dict text_config (model_type llama)
GLMASR_TEXT_DEFAULTS = {"model_type": "llama", "vocab_size": 59264, "hidden_size": 2048, "intermediate_size": 6144,
                        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 4,
                        "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "use_cache": True,
                        "eos_token_id": [59246, 59253, 59255],
                        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}}
#: GlmAsrEncoderConfig's class defaults (num_key_value_heads: num_attention_heads when absent)
GLMASR_ENCODER_DEFAULTS = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
                           "num_attention_heads": 20, "num_mel_bins": 128}


def glmasr_text_config(cfg: dict, where: str) -> dict:
    """GlmAsrConfig's text_config: its defaults under the given fields; lm_head tied as the wrapper's own flag says
    (class default true)."""
    legacy = [k for k in ("whisper_config", "lm_config") if k in cfg]
    if legacy and "text_config" not in cfg and "audio_config" not in cfg:
        raise UnsupportedModelError(f"{where}: GLM-ASR config in the original remote-code layout ({', '.join(legacy)}): "
                                    "transformers' GlmAsrConfig does not read those fields (it would build its class "
                                    "defaults whatever they say), so they are not counted here",
                                    "pass the transformers-format config.json (audio_config / text_config)")
    text = text_config_dict(cfg, where)
    tie = cfg.get("tie_word_embeddings", True)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
    return {**GLMASR_TEXT_DEFAULTS, **text, "tie_word_embeddings": tie}


def glmasr_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """GLM-ASR's encoder (``model.audio_tower``, GlmAsrEncoder: two biased Conv1d, pre-LayerNorm blocks with partial
    RoPE (no position table), biased q / v / o and bias-free k projections (num_key_value_heads x head_dim), a biased
    fc1 / fc2 MLP, a final ``norm``) and the projector (``linear_1`` from the audio intermediate_size — four stacked
    encoder frames — to 2 x text hidden, ``linear_2`` back to text hidden, both biased), kind ``audio``."""
    f = _sub(top, "audio_config", where, "glmasr_encoder", "GLM-ASR's audio tower", GLMASR_ENCODER_DEFAULTS)
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads") if f.has("num_key_value_heads") else heads
    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = f.int("head_dim") if f.has("head_dim") else d // heads
    if hd < 1:
        raise f.error("num_attention_heads", f"({heads}) is larger than hidden_size ({d})")
    ffn = f.int("intermediate_size")
    mels = f.int("num_mel_bins", hi=1 << 16)
    p = "model.audio_tower"
    out = [Tensor(f"{p}.conv1.weight", (d, mels, 3), "audio"), Tensor(f"{p}.conv1.bias", (d,), "audio"),
           Tensor(f"{p}.conv2.weight", (d, d, 3), "audio"), Tensor(f"{p}.conv2.bias", (d,), "audio")]
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        _linear(out, f"{b}.self_attn.q_proj", heads * hd, d)
        _linear(out, f"{b}.self_attn.k_proj", kv * hd, d, bias=False)
        _linear(out, f"{b}.self_attn.v_proj", kv * hd, d)
        _linear(out, f"{b}.self_attn.o_proj", d, heads * hd)
        _linear(out, f"{b}.mlp.fc1", ffn, d)
        _linear(out, f"{b}.mlp.fc2", d, ffn)
        _norm(out, f"{b}.input_layernorm", d)
        _norm(out, f"{b}.post_attention_layernorm", d)
    _norm(out, f"{p}.norm", d)
    _linear(out, "model.multi_modal_projector.linear_1", 2 * text_hidden, ffn)
    _linear(out, "model.multi_modal_projector.linear_2", text_hidden, 2 * text_hidden)
    return tuple(out)


# ---- Qwen3-ASR -----------------------------------------------------------------------------------------------------

#: Qwen3ASRConfig.sub_configs_defaults["text_config"].init_kwargs: used only when text_config is absent (a dict
#: text_config is read over Qwen3Config's own defaults)
QWEN3_ASR_TEXT_DEFAULTS = {"model_type": "qwen3", "hidden_size": 2048, "intermediate_size": 6144,
                           "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                           "head_dim": 128, "max_position_embeddings": 65536, "tie_word_embeddings": True}
#: Qwen3ASREncoderConfig's class defaults
QWEN3_ASR_ENCODER_DEFAULTS = {"num_mel_bins": 128, "encoder_layers": 24, "encoder_attention_heads": 16,
                              "encoder_ffn_dim": 4096, "d_model": 1024, "output_dim": 3584,
                              "downsample_hidden_size": 480}


def qwen3_asr_text_config(cfg: dict, where: str) -> dict:
    """Qwen3ASRConfig's text_config (its init_kwargs when absent, else Qwen3's defaults under it); lm_head tied as the
    wrapper's own flag says (class default true)."""
    text = QWEN3_ASR_TEXT_DEFAULTS if cfg.get("text_config") is None else _text(cfg, where, "qwen3")
    tie = cfg.get("tie_word_embeddings", True)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
    return dict(text, tie_word_embeddings=tie)


def qwen3_asr_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Qwen3-ASR's encoder (``model.audio_tower``, Qwen3ASREncoder: three biased stride-2 3x3 Conv2d (1 ->
    downsample_hidden_size -> itself -> itself), a bias-free ``conv_out`` (downsample_hidden_size x the mel bins
    halved three times, rounding up -> d_model), sinusoidal positions (a buffer), Whisper-style blocks whose q / k / v
    / out projections are all biased, and ``ln_post``) and the projector (``linear_1`` d_model -> d_model,
    ``linear_2`` d_model -> audio output_dim, both biased), kind ``audio``."""
    f = _sub(top, "audio_config", where, "qwen3_asr_encoder", "Qwen3-ASR's audio tower", QWEN3_ASR_ENCODER_DEFAULTS,
             _WHISPER_ALIASES)
    d = f.int("d_model")
    heads = f.int("encoder_attention_heads")
    if d % heads:
        raise f.error("encoder_attention_heads", f"({heads}) must divide d_model ({d})")
    ffn = f.int("encoder_ffn_dim")
    ds = f.int("downsample_hidden_size")
    mels = f.int("num_mel_bins", hi=1 << 16)
    freq = (((mels + 1) // 2 + 1) // 2 + 1) // 2
    p = "model.audio_tower"
    out: list[Tensor] = []
    for i, c_in in enumerate((1, ds, ds), start=1):
        out += [Tensor(f"{p}.conv2d{i}.weight", (ds, c_in, 3, 3), "audio"), Tensor(f"{p}.conv2d{i}.bias", (ds,), "audio")]
    _linear(out, f"{p}.conv_out", d, ds * freq, bias=False)
    for i in range(f.int("encoder_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
            _linear(out, f"{b}.self_attn.{name}", d, d)
        _norm(out, f"{b}.self_attn_layer_norm", d)
        _linear(out, f"{b}.fc1", ffn, d)
        _linear(out, f"{b}.fc2", d, ffn)
        _norm(out, f"{b}.final_layer_norm", d)
    _norm(out, f"{p}.ln_post", d)
    _linear(out, "model.multi_modal_projector.linear_1", d, d)
    _linear(out, "model.multi_modal_projector.linear_2", f.int("output_dim"), d)
    return tuple(out)


# ---- VibeVoice-ASR -------------------------------------------------------------------------------------------------

#: VibeVoiceAcousticTokenizerEncoderConfig's class defaults (the semantic encoder: hidden_size 128 when absent)
VIBEVOICE_ENCODER_DEFAULTS = {"channels": 1, "hidden_size": 64, "kernel_size": 7, "num_filters": 32,
                              "downsampling_ratios": [2, 2, 4, 5, 5, 8], "depths": [3, 3, 3, 3, 3, 3, 8],
                              "ffn_expansion": 4}


def vibevoice_asr_text_config(cfg: dict, where: str) -> dict:
    """VibeVoiceAsrConfig's text_config: Qwen2 (its class defaults) when absent or unnamed."""
    return _text(cfg, where, "qwen2")


def _convnext(out: list[Tensor], b: str, c: int, kernel: int, ffn: int) -> None:
    out += [Tensor(f"{b}.gamma", (c,), "audio"), Tensor(f"{b}.ffn_gamma", (c,), "audio"),
            Tensor(f"{b}.norm.weight", (c,), "audio"), Tensor(f"{b}.ffn_norm.weight", (c,), "audio")]
    _linear(out, f"{b}.ffn.linear1", ffn * c, c)
    _linear(out, f"{b}.ffn.linear2", c, ffn * c)
    out += [Tensor(f"{b}.mixer.conv.weight", (c, 1, kernel), "audio"), Tensor(f"{b}.mixer.conv.bias", (c,), "audio")]


def _tokenizer_encoder(top: dict, key: str, where: str, defaults: dict) -> tuple[list[Tensor], int]:
    """One VibeVoiceAcousticTokenizerEncoderModel under ``model.<key minus _config>``: a causal-conv stem and its
    ConvNeXt-1d stage, one strided causal conv (kernel 2 x ratio, channels doubling) and stage per downsampling ratio,
    and a causal-conv head to hidden_size; each ConvNeXt layer: RMSNorms (weight only), a depthwise causal conv
    (biased), a biased Linear FFN of ffn_expansion, and two layer-scale vectors."""
    f = _sub(top, key, where, "vibevoice_acoustic_tokenizer_encoder", "VibeVoice-ASR's tokenizer encoder", defaults)
    ratios = f.int_list("downsampling_ratios")
    ratios = list(defaults["downsampling_ratios"]) if ratios is None else ratios
    depths = f.int_list("depths", hi=MAX_LAYERS)
    depths = list(defaults["depths"]) if depths is None else depths
    if len(depths) < len(ratios) + 1:
        raise f.error("depths", f"has {len(depths)} entries; the stem and {len(ratios)} downsampling stages need "
                                f"{len(ratios) + 1}")
    if not ratios or min(ratios) < 1 or len(ratios) > 16:
        raise f.error("downsampling_ratios", "must be a list of 1 to 16 positive integers (each stage doubles the "
                                             "channels)")
    nf = f.int("num_filters")
    kernel = f.int("kernel_size", hi=1 << 12)
    ffn = f.int("ffn_expansion", hi=1 << 10)
    hidden = f.int("hidden_size")
    p = f"model.{key[:-len('_config')]}"
    out: list[Tensor] = []
    out += [Tensor(f"{p}.stem.conv.conv.weight", (nf, f.int("channels", hi=1 << 10), kernel), "audio"),
            Tensor(f"{p}.stem.conv.conv.bias", (nf,), "audio")]
    for j in range(depths[0]):
        _convnext(out, f"{p}.stem.stage.{j}", nf, kernel, ffn)
    for s, ratio in enumerate(ratios):
        c_in, c = nf * 2 ** s, nf * 2 ** (s + 1)
        out += [Tensor(f"{p}.conv_layers.{s}.conv.conv.weight", (c, c_in, 2 * ratio), "audio"),
                Tensor(f"{p}.conv_layers.{s}.conv.conv.bias", (c,), "audio")]
        for j in range(depths[s + 1]):
            _convnext(out, f"{p}.conv_layers.{s}.stage.{j}", c, kernel, ffn)
    out += [Tensor(f"{p}.head.conv.weight", (hidden, nf * 2 ** len(ratios), kernel), "audio"),
            Tensor(f"{p}.head.conv.bias", (hidden,), "audio")]
    return out, hidden


def vibevoice_asr_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """VibeVoice-ASR's acoustic and semantic tokenizer encoders (kind ``audio``) and the projector: per path a biased
    Linear from that encoder's hidden_size to the text hidden, an RMSNorm (weight only) and a biased hidden square
    Linear."""
    out, acoustic = _tokenizer_encoder(top, "acoustic_tokenizer_encoder_config", where, VIBEVOICE_ENCODER_DEFAULTS)
    semantic_defaults = VIBEVOICE_ENCODER_DEFAULTS if top.get("semantic_tokenizer_encoder_config") is not None else \
        dict(VIBEVOICE_ENCODER_DEFAULTS, hidden_size=128)  # VibeVoiceAsrConfig's init_kwargs, used only when absent
    sem, semantic = _tokenizer_encoder(top, "semantic_tokenizer_encoder_config", where, semantic_defaults)
    out += sem
    for path, n_in in (("acoustic", acoustic), ("semantic", semantic)):
        m = f"model.multi_modal_projector.{path}"
        _linear(out, f"{m}_linear_1", text_hidden, n_in)
        out.append(Tensor(f"{m}_norm.weight", (text_hidden,), "audio"))
        _linear(out, f"{m}_linear_2", text_hidden, text_hidden)
    return tuple(out)
