"""Speech-in LLM wrappers transformers ships around a Qwen3 language model, counted whole (audio encoder and projector
as kind ``audio``; the text decode trace, FLOPs and K/V are the language model's, read from ``text_config`` by the
qwen3 registry entry): MOSS-Transcribe-Diarize and Fun-ASR-Nano.

MOSS-Transcribe-Diarize (``moss_transcribe_diarize``, MossTranscribeDiarizeForConditionalGeneration,
modeling_moss_transcribe_diarize.py; AutoModelForCausalLM maps the model_type to it, and the checkpoints'
``architectures`` name it): ``model.audio_tower`` is MossTranscribeDiarizeAudioModel — Whisper's encoder
(analysis.families.voxtral.whisper_encoder: two biased Conv1d, the frozen ``embed_positions`` Embedding of
max_source_positions rows, pre-LayerNorm blocks with a bias-free k_proj, the final ``layer_norm``). Its config class is
fixed (MossTranscribeDiarizeAudioConfig, attribute_map d_model / encoder_layers / encoder_attention_heads /
encoder_ffn_dim), so the original release's ``audio_config.model_type`` "whisper" is read the same way.
``model.multi_modal_projector``: ``linear_1`` from audio_merge_size stacked encoder frames (hidden x merge) to the text
hidden, ``linear_2`` text hidden square (both biased as ``projector_bias`` says, default true) and a biased LayerNorm.
Qwen3 language model: MossTranscribeDiarizeConfig's text init_kwargs (Qwen3-0.6B's shape) only when text_config is
absent, a dict is read over Qwen3Config's own defaults; lm_head ties as the wrapper's own ``tie_word_embeddings`` says
(class default true; text_config's flag is not read — PreTrainedModel ties by the top-level config). The original
remote-code config also names ``adaptor_input_dim`` (its VQAdaptor's input width); transformers derives it (a property
it cannot set: the config is refused), so it is accepted here only when it equals hidden x audio_merge_size.

Fun-ASR-Nano (``fun_asr_nano``, FunAsrNanoForConditionalGeneration, modeling_fun_asr_nano.py):
``model.audio_tower`` is FunAsrNanoEncoder (``fun_asr_nano_encoder``, SenseVoice's SAN-M encoder): num_hidden_layers
blocks, the first reading the low-frame-rate input (num_mel_bins x num_stacked_frames wide: its q / k / v projections
and input LayerNorm take that width, and it has no residual); every block: an input LayerNorm, biased q / k / v / o
projections (hidden square, no GQA), the FSMN memory (a bias-free depthwise Conv1d of fsmn_kernel_size on the values),
a post-attention LayerNorm, a biased fc1 / fc2 MLP of intermediate_size; a ``final_layernorm`` only on the last
transcription block (num_hidden_layers - num_timestamp_prediction_layers - 1) and the last block. Positions are a
sinusoidal buffer (no parameters). ``model.multi_modal_projector``: ``linear_1`` (audio hidden -> adaptor
projector_hidden_size) and ``linear_2`` (-> adaptor hidden), biased, then adaptor num_hidden_layers of the same block
without FSMN (adaptor intermediate_size MLP). FunAsrNanoConfig requires adaptor hidden == text hidden and adaptor
intermediate == text hidden // 4. Qwen3 language model (text init_kwargs, tie true, only when text_config is absent);
lm_head ties as the wrapper's own flag says (class default true). The first -hf revision's layout (``encoder_config``,
``num_timestamp_prediction_blocks``, ``adaptor_*`` fields at the top level) is refused: FunAsrNanoConfig does not read
it and would build its class defaults.

Checked against transformers on the meta device (tests/test_speech_asr.py): MOSS-Transcribe-Diarize
(OpenMOSS-Team/MOSS-Transcribe-Diarize, whose shapes are MossTranscribeDiarizeConfig()'s) 908,513,280 — the hub's
``num_parameters`` for the checkpoint, 908,513,280 (audio tower 307,216,384, projector 5,246,976, Qwen3-0.6B's tied
decoder 596,049,920). Fun-ASR-Nano-2512 (FunAudioLLM/Fun-ASR-Nano-2512-hf, whose shapes are FunAsrNanoConfig()'s:
70 SAN-M blocks of 512 with 20 timestamp blocks, a 2-layer adaptor, Qwen3-0.6B) 829,791,840 (encoder 221,136,992,
projector 12,604,928): the model card's "800M"; no transformers-format config.json nor safetensors index of it was at
hand, its shapes are the class defaults, which the transformers docs attribute to that checkpoint, and the original
release's encoder / adaptor sizes (Fun-ASR's runtime/llama.cpp export: output_size 512, 4 heads, linear_units 2048,
50 + 20 blocks, kernel 11, adaptor ffn_dim 2048, 2 layers, 8 heads, llm_dim 1024).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import Tensor
from .audio_llm import WHISPER_HF_ALIASES, _linear, _norm, _sub, whisper_tower
from .voxtral import text_config_dict

# ---- MOSS-Transcribe-Diarize ---------------------------------------------------------------------------------------

#: MossTranscribeDiarizeAudioConfig's class defaults
MOSS_AUDIO_DEFAULTS = {"num_mel_bins": 80, "num_hidden_layers": 24, "num_attention_heads": 16,
                       "intermediate_size": 4096, "hidden_size": 1024, "max_source_positions": 1500}
#: MossTranscribeDiarizeConfig's own class defaults
MOSS_DEFAULTS = {"audio_merge_size": 4, "projector_bias": True, "tie_word_embeddings": True}
#: MossTranscribeDiarizeConfig.sub_configs_defaults["text_config"].init_kwargs: used only when text_config is absent
MOSS_TEXT_DEFAULTS = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
                      "num_attention_heads": 16, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                      "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}}


def _tied(cfg: dict, where: str) -> bool:
    tie = cfg.get("tie_word_embeddings", True)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
    return tie


def _text(cfg: dict, where: str, defaults: dict) -> dict:
    """The wrapper's text_config: its init_kwargs when absent, else Qwen3's defaults under the given fields; lm_head
    tied as the wrapper's own flag says (class default true)."""
    text = defaults if cfg.get("text_config") is None else {"model_type": "qwen3", **text_config_dict(cfg, where)}
    return dict(text, tie_word_embeddings=_tied(cfg, where))


def moss_text_config(cfg: dict, where: str) -> dict:
    """MossTranscribeDiarizeConfig's text_config (see the module docstring)."""
    return _text(cfg, where, MOSS_TEXT_DEFAULTS)


def moss_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """MOSS-Transcribe-Diarize's Whisper-shaped audio tower and its projector (kind ``audio``)."""
    ac = top.get("audio_config")
    if isinstance(ac, dict) and ac.get("model_type") == "whisper":
        # the original release's layout: MossTranscribeDiarizeAudioConfig reads it whatever model_type says
        top = dict(top, audio_config=dict(ac, model_type="moss_transcribe_diarize_audio"))
    f = _sub(top, "audio_config", where, "moss_transcribe_diarize_audio", "MOSS-Transcribe-Diarize's audio tower",
             MOSS_AUDIO_DEFAULTS, WHISPER_HF_ALIASES)
    out, d = whisper_tower(f)
    wf = Fields(top, where, defaults=MOSS_DEFAULTS, family="moss_transcribe_diarize")
    merge = wf.int("audio_merge_size", hi=1 << 10)
    if wf.has("adaptor_input_dim") and wf.raw("adaptor_input_dim") != d * merge:
        raise wf.error("adaptor_input_dim", f"is {short(wf.raw('adaptor_input_dim'))}, not hidden_size x "
                                            f"audio_merge_size ({d} x {merge} = {d * merge}): transformers derives "
                                            "the projector's input width and cannot set it (the original remote code "
                                            "would build a different projector)")
    bias = wf.bool("projector_bias")
    p = "model.multi_modal_projector"
    _linear(out, f"{p}.linear_1", text_hidden, d * merge, bias)
    _linear(out, f"{p}.linear_2", text_hidden, text_hidden, bias)
    _norm(out, f"{p}.norm", text_hidden)
    return tuple(out)


# ---- Fun-ASR-Nano --------------------------------------------------------------------------------------------------

#: FunAsrNanoEncoderConfig's class defaults
FUN_ASR_ENCODER_DEFAULTS = {"num_mel_bins": 80, "hidden_size": 512, "num_attention_heads": 4,
                            "intermediate_size": 2048, "num_hidden_layers": 70, "num_stacked_frames": 7,
                            "num_timestamp_prediction_layers": 20, "fsmn_kernel_size": 11}
#: FunAsrNanoAdaptorConfig's class defaults (the same as FunAsrNanoConfig's adaptor_config init_kwargs)
FUN_ASR_ADAPTOR_DEFAULTS = {"hidden_size": 1024, "num_attention_heads": 8, "intermediate_size": 256,
                            "num_hidden_layers": 2, "projector_hidden_size": 2048}
#: FunAsrNanoConfig.sub_configs_defaults["text_config"].init_kwargs: used only when text_config is absent
FUN_ASR_TEXT_DEFAULTS = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
                         "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                         "max_position_embeddings": 40960, "tie_word_embeddings": True}
#: fields of the first -hf revision's layout, which FunAsrNanoConfig does not read
_FUN_ASR_SPLIT = ("encoder_config", "adaptor_intermediate_size", "adaptor_num_attention_heads",
                  "adaptor_num_hidden_layers")


def fun_asr_text_config(cfg: dict, where: str) -> dict:
    """FunAsrNanoConfig's text_config (see the module docstring); refuses the first -hf revision's layout."""
    split = [k for k in _FUN_ASR_SPLIT if k in cfg]
    ac = cfg.get("audio_config")
    if isinstance(ac, dict) and "num_timestamp_prediction_blocks" in ac:
        split.append("audio_config.num_timestamp_prediction_blocks")
    if split:
        raise UnsupportedModelError(f"{where}: Fun-ASR-Nano config in the first -hf revision's layout "
                                    f"({', '.join(split)}): transformers' FunAsrNanoConfig does not read those fields "
                                    "(it would build its class defaults whatever they say), so they are not counted "
                                    "here",
                                    "pass the current config.json (audio_config with num_hidden_layers and "
                                    "num_timestamp_prediction_layers, adaptor_config)")
    return _text(cfg, where, FUN_ASR_TEXT_DEFAULTS)


def _heads_divide(f: Fields, d: int) -> None:
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({d}): the attention splits "
                                             "hidden_size into heads")


def _san_layer(out: list[Tensor], b: str, d_in: int, d: int, ffn: int, kernel: int | None, final_norm: bool) -> None:
    """One FunAsrNanoEncoderLayer: ``d_in``-wide input (the first encoder block reads the stacked frames), biased
    q / k / v (d_in -> d) and o (d -> d), FSMN's bias-free depthwise conv when ``kernel``, the MLP and LayerNorms."""
    a = f"{b}.self_attn"
    for name in ("q_proj", "k_proj", "v_proj"):
        _linear(out, f"{a}.{name}", d, d_in)
    _linear(out, f"{a}.o_proj", d, d)
    if kernel is not None:
        out.append(Tensor(f"{a}.fsmn.conv.weight", (d, 1, kernel), "audio"))
    _linear(out, f"{b}.mlp.fc1", ffn, d)
    _linear(out, f"{b}.mlp.fc2", d, ffn)
    _norm(out, f"{b}.input_layernorm", d_in)
    _norm(out, f"{b}.post_attention_layernorm", d)
    if final_norm:
        _norm(out, f"{b}.final_layernorm", d)


def fun_asr_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Fun-ASR-Nano's SAN-M encoder and its projector with the adaptor layers (kind ``audio``)."""
    f = _sub(top, "audio_config", where, "fun_asr_nano_encoder", "Fun-ASR-Nano's audio tower",
             FUN_ASR_ENCODER_DEFAULTS)
    d = f.int("hidden_size")
    _heads_divide(f, d)
    d_in = f.int("num_mel_bins", hi=1 << 16) * f.int("num_stacked_frames", hi=1 << 10)
    if d_in % 2:
        raise f.error("num_stacked_frames", f"gives an odd input width (num_mel_bins x num_stacked_frames = {d_in}): "
                                            "the sinusoidal position table needs an even one")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    ts = f.int("num_timestamp_prediction_layers", lo=0, hi=MAX_LAYERS)
    if ts >= layers:
        raise f.error("num_timestamp_prediction_layers", f"({ts}) leaves no transcription layer of the "
                                                         f"{layers} (num_hidden_layers)")
    ffn = f.int("intermediate_size")
    kernel = f.int("fsmn_kernel_size", hi=1 << 12)
    normed = {layers - ts - 1, layers - 1}
    out: list[Tensor] = []
    for i in range(layers):
        _san_layer(out, f"model.audio_tower.layers.{i}", d_in if i == 0 else d, d, ffn, kernel, i in normed)
    adaptor = top.get("adaptor_config")
    af = Fields({} if adaptor is None else adaptor, f"{where} (adaptor_config)", defaults=FUN_ASR_ADAPTOR_DEFAULTS,
                nested=True, family="fun_asr_nano")
    ah = af.int("hidden_size")
    if ah != text_hidden:
        raise af.error("hidden_size", f"({ah}) must equal text_config.hidden_size ({text_hidden}): FunAsrNanoConfig "
                                      "requires it")
    a_ffn = af.int("intermediate_size")
    if a_ffn != text_hidden // 4:
        raise af.error("intermediate_size", f"({a_ffn}) must equal text_config.hidden_size // 4 "
                                            f"({text_hidden // 4}): FunAsrNanoConfig requires it")
    _heads_divide(af, ah)
    proj = af.int("projector_hidden_size")
    p = "model.multi_modal_projector"
    _linear(out, f"{p}.linear_1", proj, d)
    _linear(out, f"{p}.linear_2", ah, proj)
    for i in range(af.int("num_hidden_layers", lo=0, hi=MAX_LAYERS)):
        _san_layer(out, f"{p}.layers.{i}", ah, ah, a_ffn, None, False)
    return tuple(out)
