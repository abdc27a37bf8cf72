"""Speech / audio-in LLM wrappers transformers ships (Qwen2-Audio, Granite Speech, Granite Speech Plus, Audio Flamingo
3, Music Flamingo, GLM-ASR, Qwen3-ASR, VibeVoice-ASR, OmniASR's LLM variant, Nemotron 3.5 Transcribe), counted whole
(audio encoder and projector as kind ``audio``; the text decode trace, FLOPs and K/V are the language model's, read
from ``text_config`` by its own registry entry).

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

Granite Speech Plus (``granite_speech_plus``, modeling_granite_speech_plus.py): Granite Speech's classes with the
encoder config renamed (``granite_speech_plus_encoder``) and ``cat_hidden_layers``: the outputs of those encoder
layers are concatenated with the last one (no weights), so the Q-Former's cross-attention key / value read
``projector_config.encoder_hidden_size`` = hidden_dim x (len(cat_hidden_layers) + 1), which GraniteSpeechPlusConfig
checks (so do we, with its range check). Same tie rule (the wrapper's flag, default true).

OmniASR, LLM variant (``omniasr``, OmniASRForConditionalGeneration, modeling_omniasr.py; the CTC variant
``omniasr_ctc`` is not a language model): ``model.audio_tower`` (OmniASRAudioModel, ``omniasr_audio``) is a wav2vec 2.0
encoder: per ``conv_dim`` entry a Conv1d (biased as ``conv_bias`` says) and a LayerNorm, a LayerNorm and a biased
Linear to hidden_size, a grouped positional Conv1d (no weight norm left in this class), pre-LayerNorm blocks with
biased q / k / v / out_proj and a biased two-Linear feed-forward, a final LayerNorm; ``model.multi_modal_projector`` is
one biased Linear. Llama language model: OmniASRConfig's init_kwargs only when text_config is absent (12 layers, hidden
4096, 8 heads of 512, intermediate 2816, vocab 11984 — the language tokens are rows of it); lm_head never tied (no
_tied_weights_keys, checked on the meta device).

Nemotron 3.5 Transcribe (``nemo_speechlm``, Nemotron3_5TranscribeForConditionalGeneration,
modeling_nemotron3_5_transcribe.py; the model_type transformers maps to it, not NeMo's Canary-Qwen SALM, whose hub
config is NeMo's own): ``model.audio_tower`` runs two encoders on the spectrogram — ``asr_encoder`` (a bias-free
frame-stacking Linear of subsampling_factor x num_mel_bins, input_layer_norm, blocks of bias-free q / k / v (v has
num_attention_heads heads, as the code builds it), a biased o_proj, LayerNorm(head_dim) q_norm / k_norm, LayerNorms
and a biased fc1 / fc2 MLP, a final layer_norm; partial RoPE without weights) and ``diarization_model`` (Nemotron 3
Diarization's Nemotron3DiarizationForAudioFrameClassification: the same encoder without q / k norms, a biased ``proj``
to the head width, a sub-pixel upsampling Conv1d(head, head x subsampling_factor, 3), the classifier's ``dense`` /
``out_proj`` to num_speakers, ``silence_embeds``) — then ``asr_norm`` and ``speaker_norm`` (the sinusoidal speaker
embedding is a buffer). ``model.multi_modal_projector`` is one biased Linear; ``model.word_timestamp_encoder`` (a biased
ConvTranspose1d upsampler, input_layer_norm, ASR-style blocks, layer_norm) and ``word_timestamp_head`` (a biased 1x1
Conv1d to the alignment vocabulary) are built and counted too. The language model is Nemotron-H (text_config; the
config class's init_kwargs only when absent), never tied (AudioFlamingo3's ``_tied_weights_keys = None``). transformers
keeps the audio tower and projector in float32 (_keep_in_fp32_modules_strict); they are counted here at the model's
dtype. The original checkpoint's MTP weights are ignored on load (not built), so not counted.

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
config.json of theirs was at hand. granite-speech-4.1-2b-plus 2,111,812,956 (the hub's "2.1B params": encoder
440,168,796, projector 39,891,968 reading 2048 wide, Granite-4.0-1B-base's decoder tied), from its config.json as a
Rust port quotes it. OmniASR: OmniASRConfig() (omniasr-llm-300m-v2's shapes) 1,638,453,760; the 1B / 3B / 7B encoders
(the original's wav2vec 2.0 sizes) 2,286,560,768 / 4,387,529,216 / 7,811,891,712; each one's encoder + projector +
decoder body plus the original's weight-norm g (128) and vocabulary tables (9,813 + 9,812 + 1,694 language rows of 4096)
equals the omnilingual-asr README's omniASR_LLM_{300M,1B,3B,7B} count exactly (1,627,603,584 / 2,275,710,592 /
4,376,679,040 / 7,801,041,536). Nemotron 3.5 Transcribe: Nemotron3_5TranscribeConfig() (the shapes of
NVIDIA-Nemotron-3.5-Transcribe-30B-A4B, which its config class names) 32,361,750,159, 4,363,886,223 active (audio side
783,812,815); no config.json of it was at hand.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from .ocr_vl import qformer_layers, qformer_width
from .voxtral import sub_config_dict, text_config_dict, whisper_encoder

#: Qwen2AudioEncoderConfig's class defaults (the same as Qwen2AudioConfig's audio_config init_kwargs)
QWEN2_AUDIO_ENCODER_DEFAULTS = {"num_mel_bins": 128, "encoder_layers": 32, "encoder_attention_heads": 20,
                                "encoder_ffn_dim": 5120, "d_model": 1280, "max_source_positions": 1500}
#: GraniteSpeechEncoderConfig's class defaults (dim_head: hidden_dim // num_heads when absent); Granite Speech Plus's
#: encoder config subclasses it (adding cat_hidden_layers, default None)
GRANITE_SPEECH_ENCODER_DEFAULTS = {"input_dim": 160, "num_layers": 10, "hidden_dim": 1024, "feedforward_mult": 4,
                                   "num_heads": 8, "output_dim": 42, "max_pos_emb": 512, "conv_kernel_size": 15,
                                   "conv_expansion_factor": 2}
#: GraniteSpeechConfig's own class defaults
GRANITE_SPEECH_DEFAULTS = {"downsample_rate": 5, "window_size": 15, "tie_word_embeddings": True}

_WHISPER_ALIASES = {"d_model": ("hidden_size",), "encoder_layers": ("num_hidden_layers",),
                    "encoder_attention_heads": ("num_attention_heads",), "encoder_ffn_dim": ("intermediate_size",)}


def _sub(top: dict, key: str, where: str, model_type: str, name: str, defaults: dict,
         aliases: dict | None = None, *, label: str | None = None, untyped: bool = False) -> Fields:
    """The sub-config ``top[key]`` read over its class ``defaults`` (absent or null: all of them); ``label`` names it
    in messages (a dotted path for a nested one), ``untyped`` accepts the empty model_type that a sub-config class
    without one (Nemotron 3 Diarization's head_config) writes."""
    label = label or key
    sub = sub_config_dict(top, key, where, model_type, name, label=label, untyped=untyped)
    return Fields(sub, f"{where} ({label})", aliases=aliases, defaults=defaults, nested=True, family=model_type)


def _text(top: dict, where: str, default_type: str) -> dict:
    return {"model_type": default_type, **text_config_dict(top, where)}


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, bias: bool = True) -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), "audio"))
    if bias:
        out.append(Tensor(f"{name}.bias", (n_out,), "audio"))


def _conv1d(out: list[Tensor], name: str, n_out: int, n_in: int, k: int, bias: bool = True) -> None:
    """An audio Conv1d: weight (n_out, n_in, k) and, when biased, its bias."""
    out.append(Tensor(f"{name}.weight", (n_out, n_in, k), "audio"))
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


def _granite_speech_towers(top: dict, text_hidden: int, where: str, wrapper: str, name: str) -> tuple[Tensor, ...]:
    """Granite Speech's / Granite Speech Plus's conformer CTC encoder and windowed Q-Former projector (kind
    ``audio``); Plus's encoder config names its own model_type and may concatenate the outputs of the
    ``cat_hidden_layers`` with the last one (no weights: the Q-Former's cross-attention key / value read that
    width, ``projector_config.encoder_hidden_size``, which GraniteSpeechPlusConfig checks)."""
    from ..family_defaults import FAMILY_DEFAULTS

    ef = _sub(top, "encoder_config", where, f"{wrapper}_encoder", f"{name}'s encoder", GRANITE_SPEECH_ENCODER_DEFAULTS)
    out = _conformer(ef, "model.encoder")
    qf = _sub(top, "projector_config", where, "blip_2_qformer", f"{name}'s projector",
              FAMILY_DEFAULTS.get("blip_2_qformer", {}))
    wf = Fields(top, where, defaults=GRANITE_SPEECH_DEFAULTS, family=wrapper)
    window = wf.int("window_size", hi=1 << 16)
    rate = wf.int("downsample_rate", hi=1 << 16)
    if window < rate:
        raise wf.error("window_size", f"({window}) is smaller than downsample_rate ({rate}): the projector would "
                                      "have no queries")
    qh, q_inter = qformer_width(qf)
    kv_in = qf.int("encoder_hidden_size")
    cat = ef.int_list("cat_hidden_layers", hi=MAX_LAYERS) if wrapper == "granite_speech_plus" else None
    if cat is not None:  # GraniteSpeechPlusConfig.__post_init__'s checks
        n_layers = ef.int("num_layers", hi=MAX_LAYERS)
        late = [i for i in cat if i >= n_layers]
        if late:
            raise ef.error("cat_hidden_layers", f"names layer {late[0]}, out of range [0, {n_layers}) (num_layers "
                                                f"{n_layers})")
        width = ef.int("hidden_dim") * (len(cat) + 1)
        if kv_in != width:
            raise qf.error("encoder_hidden_size", f"({kv_in}) must equal encoder_config.hidden_dim x "
                                                  f"(len(cat_hidden_layers) + 1) = {width}: the projector reads the "
                                                  "concatenated encoder outputs")
    freq = qf.int("cross_attention_frequency", 2, hi=MAX_LAYERS, note="absent: Blip2QFormerConfig's class default")
    text_ffn = qf.bool("use_qformer_text_input")
    p = "model.projector"
    out.append(Tensor(f"{p}.query", (1, window // rate, qh), "audio"))
    _norm(out, f"{p}.qformer.layernorm", qh)
    qformer_layers(out, f"{p}.qformer", qf.int("num_hidden_layers", hi=MAX_LAYERS), qh, q_inter, kv_in, freq,
                   text_ffn, kind="audio")
    _linear(out, f"{p}.linear", text_hidden, qh)
    return tuple(out)


def granite_speech_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The conformer CTC encoder and the windowed Q-Former projector (kind ``audio``)."""
    return _granite_speech_towers(top, text_hidden, where, "granite_speech", "Granite Speech")


def granite_speech_plus_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Granite Speech Plus: Granite Speech's encoder and projector, the projector reading the concatenated
    ``cat_hidden_layers`` outputs (kind ``audio``)."""
    return _granite_speech_towers(top, text_hidden, where, "granite_speech_plus", "Granite Speech Plus")


# ---- Audio Flamingo 3 / Music Flamingo -----------------------------------------------------------------------------

#: AudioFlamingo3EncoderConfig's class defaults (its attribute_map: d_model, encoder_layers, ... are aliases)
AF3_ENCODER_DEFAULTS = {"num_mel_bins": 128, "num_hidden_layers": 32, "num_attention_heads": 20,
                        "intermediate_size": 5120, "hidden_size": 1280, "max_source_positions": 1500}
#: hidden_size-named Whisper encoder fields and their aliases (AudioFlamingo3EncoderConfig's attribute_map; the
#: MOSS-Transcribe-Diarize audio config's alike)
WHISPER_HF_ALIASES = {"hidden_size": ("d_model",), "num_hidden_layers": ("encoder_layers",),
                      "num_attention_heads": ("encoder_attention_heads",), "intermediate_size": ("encoder_ffn_dim",)}


def whisper_tower(f: Fields, prefix: str = "model.audio_tower") -> tuple[list[Tensor], int]:
    """A Whisper-shaped audio encoder read from hidden_size-named fields (WHISPER_HF_ALIASES): the tensors of
    voxtral.whisper_encoder and the encoder width, the heads checked to split it."""
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d}): the encoder's attention "
                                             "splits hidden_size into heads")
    return whisper_encoder(prefix, d, f.int("num_hidden_layers", hi=MAX_LAYERS), f.int("intermediate_size"),
                           f.int("num_mel_bins", hi=1 << 16), f.int("max_source_positions", hi=1 << 24)), d


def flamingo_text_config(cfg: dict, where: str) -> dict:
    """AudioFlamingo3Config's / MusicFlamingoConfig's text_config: Qwen2 (its class defaults) when absent or unnamed."""
    return _text(cfg, where, "qwen2")


def _flamingo_towers(top: dict, text_hidden: int, where: str, name: str) -> tuple[Tensor, ...]:
    ac = top.get("audio_config")
    if isinstance(ac, dict) and name == "Music Flamingo" and ac.get("model_type", None) in (None, "musicflamingo_encoder"):
        ac = dict(ac, model_type="audioflamingo3_encoder")  # MusicFlamingoConfig.__post_init__ renames it
        top = dict(top, audio_config=ac)
    f = _sub(top, "audio_config", where, "audioflamingo3_encoder", f"{name}'s audio tower", AF3_ENCODER_DEFAULTS,
             WHISPER_HF_ALIASES)
    out, d = whisper_tower(f)
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


def qwen3_asr_hub(cfg: dict, where: str) -> dict:
    """Qwen/Qwen3-ASR-*'s own config.json (the format vLLM's Qwen3ASRForConditionalGeneration and
    Qwen3ASRRealtimeGeneration read: ``thinker_config.audio_config`` / ``thinker_config.text_config``, weights under
    ``thinker.``) laid out as transformers' qwen3_asr: the same encoder and projector (proj1 / proj2 are linear_1 /
    linear_2) and Qwen3 decoder, lm_head tied as the thinker's text_config says (vLLM builds Qwen3ForCausalLM from
    it; PretrainedConfig's default: untied). Sub-configs already in transformers' layout are kept."""
    thinker = cfg.get("thinker_config")
    if thinker is None:
        return cfg
    if not isinstance(thinker, dict):
        raise ConfigError(f"{where}: field 'thinker_config' must be an object (the audio_config and text_config of "
                          "the original Qwen3-ASR format)")
    out = {k: v for k, v in cfg.items() if k != "thinker_config"}
    for key, mt in (("audio_config", "qwen3_asr_encoder"), ("text_config", "qwen3")):
        sub = thinker.get(key)
        if sub is not None and not isinstance(sub, dict):
            raise ConfigError(f"{where}: field 'thinker_config.{key}' must be an object")
        if sub is not None and key not in cfg:
            out[key] = dict(sub, model_type=mt)
            if key == "text_config":
                out["tie_word_embeddings"] = sub.get("tie_word_embeddings", False)
    return out


def qwen3_asr_text_config(cfg: dict, where: str) -> dict:
    """Qwen3ASRConfig's text_config (its init_kwargs when absent, else Qwen3's defaults under it); lm_head tied as the
    wrapper's own flag says (class default true). The original format is read through qwen3_asr_hub."""
    cfg = qwen3_asr_hub(cfg, where)
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
    top = qwen3_asr_hub(top, where)
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


# ---- OmniASR (LLM variant) -----------------------------------------------------------------------------------------

#: OmniASRConfig.sub_configs_defaults["text_config"].init_kwargs: used only when text_config is absent (a dict
#: text_config is read over LlamaConfig's own defaults)
OMNIASR_TEXT_DEFAULTS = {"model_type": "llama", "vocab_size": 11984, "hidden_size": 4096, "intermediate_size": 2816,
                         "max_position_embeddings": 8192, "num_hidden_layers": 12, "num_attention_heads": 8,
                         "num_key_value_heads": 8, "rms_norm_eps": 1e-05}
#: OmniASRAudioConfig's class defaults (the 300M wav2vec 2.0 encoder)
OMNIASR_AUDIO_DEFAULTS = {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24,
                          "intermediate_size": 4096, "num_conv_pos_embeddings": 128,
                          "num_conv_pos_embedding_groups": 16, "conv_bias": True, "conv_dim": (512,) * 7,
                          "conv_kernel": (10, 3, 3, 3, 3, 2, 2),
                          "conv_stride": (5, 2, 2, 2, 2, 2, 2)}


def omniasr_text_config(cfg: dict, where: str) -> dict:
    """OmniASRConfig's text_config: its init_kwargs when absent, else Llama's class defaults under the given fields
    (lm_head is never tied: WRAPPER_TIE)."""
    return dict(OMNIASR_TEXT_DEFAULTS) if cfg.get("text_config") is None else _text(cfg, where, "llama")


def omniasr_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """OmniASR's wav2vec 2.0 encoder (``model.audio_tower``, OmniASRAudioModel) and its one-Linear projector (kind
    ``audio``): per ``conv_dim`` entry a Conv1d (from 1 channel, then the previous width; biased as ``conv_bias``
    says) with a LayerNorm, a LayerNorm and a biased Linear to hidden_size, the positional Conv1d (hidden -> hidden,
    kernel num_conv_pos_embeddings, num_conv_pos_embedding_groups groups, biased; no weight norm in this class),
    pre-LayerNorm blocks (biased q / k / v / out_proj, biased intermediate_dense / output_dense), a final LayerNorm;
    then ``model.multi_modal_projector`` (biased, hidden -> text hidden)."""
    f = _sub(top, "audio_config", where, "omniasr_audio", "OmniASR's audio tower", OMNIASR_AUDIO_DEFAULTS)
    convs = {}
    for key in ("conv_dim", "conv_kernel", "conv_stride"):
        got = f.int_list(key, lo=1, hi=1 << 16)
        convs[key] = list(OMNIASR_AUDIO_DEFAULTS[key]) if got is None else got
    n_conv = len(convs["conv_dim"])
    if not n_conv or len(convs["conv_kernel"]) != n_conv or len(convs["conv_stride"]) != n_conv:
        raise f.error("conv_dim", f"has {n_conv} entries, conv_kernel {len(convs['conv_kernel'])} and conv_stride "
                                  f"{len(convs['conv_stride'])}: OmniASRAudioConfig needs one (non-zero) count for all "
                                  "three")
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d}): OmniASRAttention splits it "
                                             "into heads")
    groups = f.int("num_conv_pos_embedding_groups", hi=1 << 16)
    if d % groups:
        raise f.error("num_conv_pos_embedding_groups", f"({groups}) must divide hidden_size ({d}): the positional "
                                                       "Conv1d groups its channels")
    kernel = f.int("num_conv_pos_embeddings", hi=1 << 16)
    conv_bias = f.bool("conv_bias")
    ffn = f.int("intermediate_size")
    p = "model.audio_tower"
    out: list[Tensor] = []
    c_in = 1
    for i, (c, k) in enumerate(zip(convs["conv_dim"], convs["conv_kernel"])):
        b = f"{p}.subsampling.conv_layers.{i}"
        _conv1d(out, f"{b}.conv", c, c_in, k, conv_bias)
        _norm(out, f"{b}.layer_norm", c)
        c_in = c
    _norm(out, f"{p}.subsampling.layer_norm", c_in)
    _linear(out, f"{p}.subsampling.projection", d, c_in)
    out += [Tensor(f"{p}.encode_positions.conv.weight", (d, d // groups, kernel), "audio"),
            Tensor(f"{p}.encode_positions.conv.bias", (d,), "audio")]
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
            _linear(out, f"{b}.attention.{name}", d, d)
        _norm(out, f"{b}.layer_norm", d)
        _linear(out, f"{b}.feed_forward.intermediate_dense", ffn, d)
        _linear(out, f"{b}.feed_forward.output_dense", d, ffn)
        _norm(out, f"{b}.final_layer_norm", d)
    _norm(out, f"{p}.layer_norm", d)
    _linear(out, "model.multi_modal_projector", text_hidden, d)
    return tuple(out)


# ---- Nemotron 3.5 Transcribe (nemo_speechlm) -----------------------------------------------------------------------

#: Nemotron3_5TranscribeConfig.sub_configs_defaults["text_config"].init_kwargs (over NemotronHConfig's defaults): used
#: only when text_config is absent
NEMO_SPEECHLM_TEXT_DEFAULTS = {"model_type": "nemotron_h", "hidden_size": 2688, "intermediate_size": 1856,
                               "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                               "mamba_num_heads": 64, "max_position_embeddings": 262144, "moe_intermediate_size": 1856,
                               "moe_shared_expert_intermediate_size": 3712, "n_routed_experts": 128,
                               "num_experts_per_tok": 6, "num_key_value_heads": 2, "routed_scaling_factor": 2.5}
#: Nemotron3_5TranscribeAsrAudioConfig's class defaults (num_key_value_heads: num_attention_heads when absent)
NEMO_ASR_DEFAULTS = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32, "num_attention_heads": 10,
                     "num_mel_bins": 128, "subsampling_factor": 8}
#: Nemotron3DiarizationAudioConfig's / Nemotron3DiarizationHeadConfig's / Nemotron3DiarizationStreamingConfig's
DIARIZATION_AUDIO_DEFAULTS = {"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 31,
                              "num_attention_heads": 8, "num_mel_bins": 128, "subsampling_factor": 8}
DIARIZATION_HEAD_DEFAULTS = {"hidden_size": 192, "num_speakers": 8, "audio_hidden_size": 512, "subsampling_factor": 8}
DIARIZATION_STREAMING_DEFAULTS = {"num_speakers": 8, "subsampling_factor": 8}
#: Nemotron3_5TranscribeWordTimestampConfig's class defaults
NEMO_WORD_TIMESTAMP_DEFAULTS = {"hidden_size": 1280, "intermediate_size": 640, "num_hidden_layers": 2,
                                "num_attention_heads": 16, "vocab_size": 23863, "upsampling_factor": 2}


def nemo_speechlm_text_config(cfg: dict, where: str) -> dict:
    """Nemotron3_5TranscribeConfig's text_config: its init_kwargs when absent, else NemotronHConfig's defaults under
    the given fields (lm_head is never tied: WRAPPER_TIE)."""
    return dict(NEMO_SPEECHLM_TEXT_DEFAULTS) if cfg.get("text_config") is None else _text(cfg, where, "nemotron_h")


def _nemotron_audio_layers(out: list[Tensor], p: str, f: Fields, qk_norm: bool) -> int:
    """Nemotron 3 Diarization's transformer blocks under ``p`` (Nemotron3DiarizationAudioLayer: bias-free q_proj
    (heads x head_dim), k_proj (KV heads x head_dim) and v_proj (heads x head_dim, as the code has it), a biased
    o_proj, LayerNorms layer_norm1 / layer_norm2, a biased fc1 / fc2 MLP; Nemotron 3.5 Transcribe's add a
    LayerNorm(head_dim) q_norm / k_norm); rotary positions hold no weights. Returns the width."""
    d = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads") if f.has("num_key_value_heads") else heads
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d})")
    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = f.int("head_dim") if f.has("head_dim") else d // heads  # getattr(config, "head_dim", ...)
    ffn = f.int("intermediate_size")
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        _linear(out, f"{b}.self_attn.q_proj", heads * hd, d, bias=False)
        _linear(out, f"{b}.self_attn.k_proj", kv * hd, d, bias=False)
        _linear(out, f"{b}.self_attn.v_proj", heads * hd, d, bias=False)
        _linear(out, f"{b}.self_attn.o_proj", d, heads * hd)
        if qk_norm:
            _norm(out, f"{b}.self_attn.q_norm", hd)
            _norm(out, f"{b}.self_attn.k_norm", hd)
        _norm(out, f"{b}.layer_norm1", d)
        _linear(out, f"{b}.mlp.fc1", ffn, d)
        _linear(out, f"{b}.mlp.fc2", d, ffn)
        _norm(out, f"{b}.layer_norm2", d)
    return d


def _nemotron_audio_model(out: list[Tensor], p: str, f: Fields, qk_norm: bool) -> tuple[int, int]:
    """Nemotron3DiarizationAudioModel (or Nemotron 3.5 Transcribe's ASR encoder, with q / k norms): a bias-free
    frame-stacking projection (subsampling_factor x num_mel_bins -> hidden), input_layer_norm, the blocks, a final
    layer_norm. Returns (hidden, subsampling_factor)."""
    d = f.int("hidden_size")
    sub = f.int("subsampling_factor", hi=1 << 10)
    _linear(out, f"{p}.embedder.projection", d, sub * f.int("num_mel_bins", hi=1 << 16), bias=False)
    _norm(out, f"{p}.input_layer_norm", d)
    _nemotron_audio_layers(out, p, f, qk_norm)
    _norm(out, f"{p}.layer_norm", d)
    return d, sub


def nemo_speechlm_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Nemotron 3.5 Transcribe's audio model, projector and word timestamp head (kind ``audio``): see the module
    docstring."""
    af = _sub(top, "audio_config", where, "nemotron3_5_transcribe_audio", "Nemotron 3.5 Transcribe's audio model", {})
    ac = af.cfg
    asr = _sub(ac, "asr_config", where, "nemotron3_5_transcribe_asr_audio", "Nemotron 3.5 Transcribe's ASR encoder",
               NEMO_ASR_DEFAULTS, label="audio_config.asr_config")
    dz = _sub(ac, "diarization_config", where, "nemotron3_diarization", "Nemotron 3.5 Transcribe's diarization model",
              {}, label="audio_config.diarization_config")
    daf = _sub(dz.cfg, "audio_config", where, "nemotron3_diarization_audio", "Nemotron 3 Diarization's encoder",
               DIARIZATION_AUDIO_DEFAULTS, label="audio_config.diarization_config.audio_config")
    dhf = _sub(dz.cfg, "head_config", where, "", "Nemotron 3 Diarization's speaker head", DIARIZATION_HEAD_DEFAULTS,
               label="audio_config.diarization_config.head_config", untyped=True)
    dsf = _sub(dz.cfg, "streaming_config", where, "", "Nemotron 3 Diarization's speaker cache",
               DIARIZATION_STREAMING_DEFAULTS, label="audio_config.diarization_config.streaming_config", untyped=True)
    wf = _sub(top, "word_timestamp_config", where, "nemotron3_5_transcribe_word_timestamp",
              "Nemotron 3.5 Transcribe's word timestamp head", NEMO_WORD_TIMESTAMP_DEFAULTS)
    out: list[Tensor] = []
    a = "model.audio_tower"
    d, sub = _nemotron_audio_model(out, f"{a}.asr_encoder", asr, qk_norm=True)
    m = f"{a}.diarization_model"
    dd, dsub = _nemotron_audio_model(out, f"{m}.model.audio_tower", daf, qk_norm=False)
    hh = dhf.int("hidden_size")
    speakers = dhf.int("num_speakers", hi=1 << 10)
    # the validate_architecture checks of Nemotron3_5TranscribeAudioConfig and Nemotron3DiarizationConfig
    for field_name, got, want, what in (
            ("audio_config.subsampling_factor", dsub, sub, "the ASR encoder's (asr_config.subsampling_factor)"),
            ("head_config.audio_hidden_size", dhf.int("audio_hidden_size"), dd, "its encoder's hidden_size"),
            ("head_config.subsampling_factor", dhf.int("subsampling_factor", hi=1 << 10), dsub,
             "its encoder's subsampling_factor"),
            ("streaming_config.num_speakers", dsf.int("num_speakers", hi=1 << 10), speakers,
             "head_config.num_speakers"),
            ("streaming_config.subsampling_factor", dsf.int("subsampling_factor", hi=1 << 10), dsub,
             "its encoder's subsampling_factor")):
        if got != want:
            raise ConfigError(f"{where}: field 'audio_config.diarization_config.{field_name}' is {got}, but must equal "
                              f"{what} ({want})")
    _linear(out, f"{m}.model.proj", hh, dd)
    out += [Tensor(f"{m}.model.upsampler.conv.weight", (hh * dsub, hh, 3), "audio"),
            Tensor(f"{m}.model.upsampler.conv.bias", (hh * dsub,), "audio")]
    _linear(out, f"{m}.classifier.dense", hh, hh)
    _linear(out, f"{m}.classifier.out_proj", speakers, hh)
    out.append(Tensor(f"{m}.silence_embeds", (dd,), "audio"))
    _norm(out, f"{a}.asr_norm", d)
    _norm(out, f"{a}.speaker_norm", speakers)  # the sinusoidal speaker_embedding is a buffer
    _linear(out, "model.multi_modal_projector", text_hidden, d)
    w = "model.word_timestamp_encoder"
    wd = wf.int("hidden_size")
    up = wf.int("upsampling_factor", hi=1 << 10)
    out += [Tensor(f"{w}.upsampler.weight", (wd, wd, up), "audio"), Tensor(f"{w}.upsampler.bias", (wd,), "audio")]
    _norm(out, f"{w}.input_layer_norm", wd)
    _nemotron_audio_layers(out, w, wf, qk_norm=True)
    _norm(out, f"{w}.layer_norm", wd)
    vocab = wf.int("vocab_size")
    out += [Tensor("word_timestamp_head.weight", (vocab, wd, 1), "audio"),
            Tensor("word_timestamp_head.bias", (vocab,), "audio")]
    return tuple(out)
