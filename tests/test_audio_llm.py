"""Qwen2-Audio (``qwen2_audio``) and Granite Speech (``granite_speech``): the whole checkpoint (audio encoder and
projector as kind ``audio``, the language model, lm_head), checked against transformers on the meta device, against
hand counts written from modeling_qwen2_audio.py / modeling_granite_speech.py module shapes, and against the hub's
figures; the decode trace and K/V stay the language model's."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import audio_llm
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_class_model, unique_param_count

# Qwen/Qwen2-Audio-7B (and -7B-Instruct, the same shapes) config.json as published (quoted in public test fixtures);
# the text_config names only a few fields: hidden 4096, 32 layers, 32 heads / 32 KV heads are Qwen2Config's defaults
QWEN2_AUDIO_7B = {
    "architectures": ["Qwen2AudioForConditionalGeneration"], "model_type": "qwen2_audio", "audio_token_index": 151646,
    "ignore_index": -100, "vocab_size": 156032, "torch_dtype": "bfloat16",
    "audio_config": {"model_type": "qwen2_audio_encoder", "num_mel_bins": 128, "encoder_layers": 32,
                     "encoder_attention_heads": 20, "encoder_ffn_dim": 5120, "d_model": 1280,
                     "activation_function": "gelu", "max_source_positions": 1500, "scale_embedding": False},
    "text_config": {"bos_token_id": 151643, "eos_token_id": 151645, "intermediate_size": 11008,
                    "max_position_embeddings": 8192, "model_type": "qwen2", "rms_norm_eps": 1e-05, "rope_theta": 10000,
                    "sliding_window": 32768, "torch_dtype": "bfloat16", "use_mrope": False, "vocab_size": 156032}}

# ibm-granite/granite-speech-3.3-2b: Granite-3.3-2B-Instruct's decoder, the 16-layer conformer (output_dim 256) and the
# 2-layer Q-Former projector (the hub config as ported by KerasFormers' granite_speech recipes)
GRANITE_SPEECH_2B = {
    "architectures": ["GraniteSpeechForConditionalGeneration"], "model_type": "granite_speech",
    "audio_token_index": 49159, "downsample_rate": 5, "window_size": 15, "has_lora_adapter": True,
    "initializer_range": 0.02, "torch_dtype": "bfloat16", "tie_word_embeddings": True,
    "encoder_config": {"model_type": "granite_speech_encoder", "context_size": 200, "conv_expansion_factor": 2,
                       "conv_kernel_size": 15, "dim_head": 128, "dropout": 0.1, "feedforward_mult": 4,
                       "hidden_dim": 1024, "input_dim": 160, "num_heads": 8, "num_layers": 16, "output_dim": 256,
                       "max_pos_emb": 512},
    "projector_config": {"model_type": "blip_2_qformer", "attention_probs_dropout_prob": 0.1,
                         "cross_attention_frequency": 1, "encoder_hidden_size": 1024, "hidden_act": "gelu",
                         "hidden_dropout_prob": 0.1, "hidden_size": 1024, "initializer_range": 0.02,
                         "intermediate_size": 4096, "layer_norm_eps": 1e-12, "max_position_embeddings": 2048,
                         "num_attention_heads": 16, "num_hidden_layers": 2, "position_embedding_type": "absolute",
                         "use_qformer_text_input": False, "vocab_size": 30522},
    "text_config": {"model_type": "granite", "attention_bias": False, "attention_multiplier": 0.015625,
                    "embedding_multiplier": 12.0, "hidden_act": "silu", "hidden_size": 2048,
                    "intermediate_size": 8192, "logits_scaling": 8.0, "max_position_embeddings": 131072,
                    "mlp_bias": False, "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
                    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_theta": 10000000.0,
                    "tie_word_embeddings": True, "vocab_size": 49160}}

# ibm-granite/granite-speech-3.3-8b: the same encoder and projector around Granite-3.3-8B-Instruct
GRANITE_SPEECH_8B = copy.deepcopy(GRANITE_SPEECH_2B)
GRANITE_SPEECH_8B["text_config"].update(hidden_size=4096, intermediate_size=12800, attention_multiplier=0.0078125,
                                        logits_scaling=16.0)


def _meta(cfg: dict, cls: str) -> int:
    return unique_param_count(hf_class_model(cfg, cls))


def whisper_hand(d=1280, layers=32, ffn=5120, mels=128, positions=1500):
    conv = d * mels * 3 + d + d * d * 3 + d
    block = 4 * d * d + 3 * d + 2 * 2 * d + 2 * ffn * d + ffn + d
    return conv + positions * d + layers * block + 2 * d


def decoder_hand(hidden, layers, heads, kv_heads, inter, vocab, *, qkv_bias, tied):
    hd = hidden // heads
    attn = 2 * hidden * heads * hd + 2 * hidden * kv_heads * hd + (heads * hd + 2 * kv_heads * hd if qkv_bias else 0)
    layer = attn + 3 * hidden * inter + 2 * hidden
    return vocab * hidden * (1 if tied else 2) + layers * layer + hidden


def conformer_hand(d=1024, layers=16, inp=160, out=256, heads=8, dh=128, mult=4, exp=2, k=15, maxpos=512):
    ff = 2 * d + d * mult * d + mult * d + mult * d * d + d
    inner = heads * dh
    attn = 2 * d + 3 * d * inner + inner * d + d + (2 * maxpos + 1) * dh
    e = d * exp
    conv = 2 * d + d * 2 * e + 2 * e + e * k + 2 * e + e * d + d
    block = 2 * ff + attn + conv + 2 * d
    return inp * d + d + layers * block + d * out + out + out * d + d


def qformer_hand(qh=1024, layers=2, inter=4096, kv_in=1024, window=15, rate=5, text_hidden=2048):
    att_self = 3 * (qh * qh + qh) + qh * qh + qh + 2 * qh
    att_cross = qh * qh + qh + 2 * (kv_in * qh + qh) + qh * qh + qh + 2 * qh
    ffn = qh * inter + inter + inter * qh + qh + 2 * qh
    return window // rate * qh + 2 * qh + layers * (att_self + att_cross + ffn) + qh * text_hidden + text_hidden


def test_qwen2_audio_7b_whole_checkpoint():
    spec = parse_config(QWEN2_AUDIO_7B)
    p = count_params(spec)
    audio = whisper_hand()
    projector = 1280 * 4096 + 4096
    text = decoder_hand(4096, 32, 32, 32, 11008, 156032, qkv_bias=True, tied=False)
    assert (audio, projector) == (636_968_960, 5_246_976)
    assert p.total == audio + projector + text == 8_397_094_912  # the hub's 8.4B
    assert p.audio == audio + projector and p.vision == 0
    assert p.lm_head == p.embedding == 156032 * 4096  # never tied
    assert p.total == _meta(QWEN2_AUDIO_7B, "Qwen2AudioForConditionalGeneration")
    # the decode trace is Qwen2-7B-shaped MHA: 32 layers x 32 KV heads x 128 x (K, V) x 2 bytes
    kv = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 32 * 32 * 128 * 2 * 2


def test_qwen2_audio_defaults_and_never_tied():
    """Qwen2AudioConfig() (no sub-configs): the 32-layer Whisper tower and Qwen2Config's defaults; lm_head stays untied
    whatever either flag says (no _tied_weights_keys)."""
    default = {"model_type": "qwen2_audio"}
    assert count_params(parse_config(default)).total == _meta(default, "Qwen2AudioForConditionalGeneration")
    tied = dict(QWEN2_AUDIO_7B, tie_word_embeddings=True,
                text_config=dict(QWEN2_AUDIO_7B["text_config"], tie_word_embeddings=True))
    assert count_params(parse_config(tied)).total == 8_397_094_912 == _meta(tied, "Qwen2AudioForConditionalGeneration")
    tiny = {"model_type": "qwen2_audio",
            "audio_config": {"d_model": 64, "encoder_layers": 2, "encoder_attention_heads": 4,
                             "encoder_ffn_dim": 128, "num_mel_bins": 16, "max_source_positions": 30},
            "text_config": {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
                            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                            "vocab_size": 256}}
    p = count_params(parse_config(tiny))
    hand = whisper_hand(64, 2, 128, 16, 30) + 64 * 64 + 64
    assert p.audio == hand
    assert p.total == _meta(tiny, "Qwen2AudioForConditionalGeneration")


def test_granite_speech_2b_whole_checkpoint():
    spec = parse_config(GRANITE_SPEECH_2B)
    p = count_params(spec)
    encoder = conformer_hand()
    projector = qformer_hand()
    text = decoder_hand(2048, 40, 32, 8, 8192, 49160, qkv_bias=False, tied=True)
    assert (encoder, projector, text) == (439_980_288, 35_697_664, 2_533_541_888)
    assert p.total == encoder + projector + text == 3_009_219_840  # the hub's 3B class
    assert p.audio == encoder + projector and p.lm_head == 0  # tied
    assert p.total == _meta(GRANITE_SPEECH_2B, "GraniteSpeechForConditionalGeneration")
    kv = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 40 * 8 * 64 * 2 * 2  # head_dim 2048 / 32


def test_granite_speech_8b_whole_checkpoint():
    spec = parse_config(GRANITE_SPEECH_8B)
    p = count_params(spec)
    text = decoder_hand(4096, 40, 32, 8, 12800, 49160, qkv_bias=False, tied=True)
    total = conformer_hand() + qformer_hand(text_hidden=4096) + text
    assert p.total == total == 8_648_645_888  # the hub's 9B class
    assert p.total == _meta(GRANITE_SPEECH_8B, "GraniteSpeechForConditionalGeneration")
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 40 * 8 * 128 * 2 * 2


def test_granite_speech_tie_is_the_wrappers_flag():
    """The wrapper's flag alone ties lm_head (class default true); text_config's flag is not read."""
    untied = dict(GRANITE_SPEECH_2B, tie_word_embeddings=False)
    p = count_params(parse_config(untied))
    assert p.total == 3_009_219_840 + 49160 * 2048 == _meta(untied, "GraniteSpeechForConditionalGeneration")
    absent = {k: v for k, v in GRANITE_SPEECH_2B.items() if k != "tie_word_embeddings"}
    absent["text_config"] = dict(absent["text_config"], tie_word_embeddings=False)
    assert count_params(parse_config(absent)).total == 3_009_219_840 == _meta(absent,
                                                                               "GraniteSpeechForConditionalGeneration")


def test_granite_speech_class_defaults_and_variants():
    """GraniteSpeechConfig() (10-layer encoder, dim_head from hidden_dim // num_heads, Blip2QFormerConfig's defaults:
    12 layers, cross-attention every 2nd, encoder_hidden_size 1408) and a Q-Former with the text feed-forward."""
    default = {"model_type": "granite_speech"}
    assert count_params(parse_config(default)).total == _meta(default, "GraniteSpeechForConditionalGeneration")
    variant = copy.deepcopy(GRANITE_SPEECH_2B)
    variant["encoder_config"].pop("dim_head")
    variant["encoder_config"].update(num_heads=4, num_layers=3, conv_kernel_size=8)
    variant["projector_config"].update(use_qformer_text_input=True, cross_attention_frequency=2, num_hidden_layers=3,
                                       encoder_hidden_size=1024)
    variant.update(window_size=20, downsample_rate=4)
    assert count_params(parse_config(variant)).total == _meta(variant, "GraniteSpeechForConditionalGeneration")


def test_bad_configs():
    with pytest.raises(ConfigError, match="audio_config"):
        parse_config(dict(QWEN2_AUDIO_7B, audio_config=[1]))
    with pytest.raises(ConfigError, match="encoder_attention_heads"):
        parse_config(dict(QWEN2_AUDIO_7B, audio_config=dict(QWEN2_AUDIO_7B["audio_config"],
                                                            encoder_attention_heads=7)))
    with pytest.raises(UnsupportedModelError, match="qwen2_audio_encoder"):
        parse_config(dict(QWEN2_AUDIO_7B, audio_config=dict(QWEN2_AUDIO_7B["audio_config"], model_type="whisper")))
    with pytest.raises(ConfigError, match="tie_word_embeddings"):
        parse_config(dict(GRANITE_SPEECH_2B, tie_word_embeddings="yes"))
    with pytest.raises(ConfigError, match="window_size"):
        parse_config(dict(GRANITE_SPEECH_2B, window_size=3))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(GRANITE_SPEECH_2B, projector_config=dict(GRANITE_SPEECH_2B["projector_config"],
                                                                   num_attention_heads=7)))
    with pytest.raises(ConfigError, match="text_config"):
        parse_config(dict(GRANITE_SPEECH_2B, text_config=[1]))


def test_module_defaults_are_transformers_class_defaults():
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    enc = transformers.Qwen2AudioEncoderConfig()
    assert {k: getattr(enc, k) for k in audio_llm.QWEN2_AUDIO_ENCODER_DEFAULTS} == audio_llm.QWEN2_AUDIO_ENCODER_DEFAULTS
    genc = transformers.GraniteSpeechEncoderConfig()
    assert {k: getattr(genc, k) for k in audio_llm.GRANITE_SPEECH_ENCODER_DEFAULTS} == \
        audio_llm.GRANITE_SPEECH_ENCODER_DEFAULTS
    gs = transformers.GraniteSpeechConfig()
    assert {k: getattr(gs, k) for k in audio_llm.GRANITE_SPEECH_DEFAULTS} == audio_llm.GRANITE_SPEECH_DEFAULTS
    for cls, defaults in ((transformers.AudioFlamingo3EncoderConfig, audio_llm.AF3_ENCODER_DEFAULTS),
                          (transformers.GlmAsrEncoderConfig, audio_llm.GLMASR_ENCODER_DEFAULTS),
                          (transformers.Qwen3ASREncoderConfig, audio_llm.QWEN3_ASR_ENCODER_DEFAULTS),
                          (transformers.VibeVoiceAcousticTokenizerEncoderConfig, audio_llm.VIBEVOICE_ENCODER_DEFAULTS)):
        c = cls()
        assert {k: list(v) if isinstance(v, tuple) else v for k, v in
                ((k, getattr(c, k)) for k in defaults)} == defaults, cls.__name__
    for cls, defaults in ((transformers.GlmAsrConfig, audio_llm.GLMASR_TEXT_DEFAULTS),
                          (transformers.Qwen3ASRConfig, audio_llm.QWEN3_ASR_TEXT_DEFAULTS)):
        spec = cls.sub_configs_defaults["text_config"]
        assert dict(spec.init_kwargs, model_type=spec.model_type) == defaults, cls.__name__
    spec = transformers.VibeVoiceAsrConfig.sub_configs_defaults["semantic_tokenizer_encoder_config"]
    assert spec.init_kwargs == {"hidden_size": 128}


def test_cli(tmp_path):
    for cfg, total in ((QWEN2_AUDIO_7B, 8_397_094_912), (GRANITE_SPEECH_2B, 3_009_219_840)):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(cfg))
        r = run("analyze", str(path), "--json")
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == total
        assert not any("not counted" in c for c in r.json["caveats"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(QWEN2_AUDIO_7B, audio_config=dict(QWEN2_AUDIO_7B["audio_config"],
                                                                     encoder_layers=0))))
    run("analyze", str(bad)).assert_error("audio_config", "encoder_layers")
    bad.write_text(json.dumps(dict(GRANITE_SPEECH_2B, encoder_config=dict(GRANITE_SPEECH_2B["encoder_config"],
                                                                          model_type="conformer"))))
    run("analyze", str(bad)).assert_error("encoder_config.model_type", "granite_speech_encoder")


# ---- Audio Flamingo 3 / Music Flamingo / GLM-ASR / Qwen3-ASR / VibeVoice-ASR ----------------------------------------

_TINY_TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 256}

# Qwen/Qwen3-ASR-0.6B-hf / -1.7B-hf config.json (transformers format, as quoted by a Rust port's fixtures)
_Q3A_AUDIO_06B = {"activation_dropout": 0, "activation_function": "gelu", "attention_dropout": 0, "conv_chunksize": 500,
                  "d_model": 896, "downsample_hidden_size": 480, "dropout": 0, "encoder_attention_heads": 14,
                  "encoder_ffn_dim": 3584, "encoder_layers": 18, "initializer_range": 0.02,
                  "max_position_embeddings": 13, "model_type": "qwen3_asr_encoder", "n_window": 50,
                  "n_window_infer": 800, "num_key_value_heads": 14, "num_mel_bins": 128, "output_dim": 1024,
                  "scale_embedding": False}
_Q3A_TEXT_06B = {"attention_bias": False, "attention_dropout": 0.0, "bos_token_id": None, "eos_token_id": None,
                 "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02,
                 "intermediate_size": 3072, "max_position_embeddings": 65536, "max_window_layers": 28,
                 "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
                 "pad_token_id": None, "rms_norm_eps": 1e-06,
                 "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"}, "sliding_window": None,
                 "tie_word_embeddings": True, "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
QWEN3_ASR_06B = {"architectures": ["Qwen3ASRForConditionalGeneration"], "audio_config": _Q3A_AUDIO_06B,
                 "audio_token_id": 151676, "dtype": "bfloat16", "eos_token_id": [151643, 151645],
                 "initializer_range": 0.02, "model_type": "qwen3_asr", "pad_token_id": 151645,
                 "text_config": _Q3A_TEXT_06B, "tie_word_embeddings": True, "timestamp_token_id": 151705,
                 "token_classification_bias": False}
QWEN3_ASR_17B = dict(QWEN3_ASR_06B,
                     audio_config=dict(_Q3A_AUDIO_06B, d_model=1024, encoder_attention_heads=16, encoder_ffn_dim=4096,
                                       encoder_layers=24, num_key_value_heads=16, output_dim=2048),
                     text_config=dict(_Q3A_TEXT_06B, hidden_size=2048, intermediate_size=6144))

# microsoft/VibeVoice-ASR-HF config.json (transformers format, as quoted by an MLX port's fixtures; Qwen2.5-7B's decoder)
_VV_ENC = {"channels": 1, "depths": [3, 3, 3, 3, 3, 3, 8], "downsampling_ratios": [2, 2, 4, 5, 5, 8], "hidden_size": 64,
           "num_filters": 32, "kernel_size": 7, "ffn_expansion": 4, "rms_norm_eps": 1e-05, "vae_std": 0.625}
VIBEVOICE_ASR = {"model_type": "vibevoice_asr", "audio_bos_token_id": 151646, "audio_eos_token_id": 151647,
                 "audio_token_id": 151648, "acoustic_tokenizer_chunk_size": 1440000,
                 "acoustic_tokenizer_encoder_config": _VV_ENC,
                 "semantic_tokenizer_encoder_config": dict(_VV_ENC, hidden_size=128),
                 "text_config": {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
                                 "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4,
                                 "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "vocab_size": 152064}}

_CLS = {"audioflamingo3": "AudioFlamingo3ForConditionalGeneration", "musicflamingo": "MusicFlamingoForConditionalGeneration",
        "glmasr": "GlmAsrForConditionalGeneration", "qwen3_asr": "Qwen3ASRForConditionalGeneration",
        "vibevoice_asr": "VibeVoiceAsrForConditionalGeneration"}


def _same(cfg: dict) -> int:
    total = count_params(parse_config(copy.deepcopy(cfg))).total
    assert total == _meta(copy.deepcopy(cfg), _CLS[cfg["model_type"]])
    return total


def qwen3_asr_tower_hand(d, layers, ffn, out_dim, ds=480, mels=128):
    freq = (((mels + 1) // 2 + 1) // 2 + 1) // 2
    convs = (ds * 9 + ds) + 2 * (ds * ds * 9 + ds) + d * ds * freq
    block = 4 * (d * d + d) + 2 * d + d * ffn + ffn + ffn * d + d + 2 * d
    return convs + layers * block + 2 * d + (d * d + d) + (out_dim * d + out_dim)


def vibevoice_encoder_hand(hidden, nf=32, ratios=(2, 2, 4, 5, 5, 8), depths=(3, 3, 3, 3, 3, 3, 8), k=7, e=4):
    def convnext(c):
        return 4 * c + (e * c * c + e * c) + (c * e * c + c) + (c * k + c)
    total = nf * k + nf + depths[0] * convnext(nf)
    for s, r in enumerate(ratios):
        c = nf * 2 ** (s + 1)
        total += c * (c // 2) * 2 * r + c + depths[s + 1] * convnext(c)
    return total + hidden * nf * 2 ** len(ratios) * k + hidden


def test_qwen3_asr_checkpoints():
    for cfg, total in ((QWEN3_ASR_06B, 782_426_112), (QWEN3_ASR_17B, 2_038_052_480)):
        a, t = cfg["audio_config"], cfg["text_config"]
        tower = qwen3_asr_tower_hand(a["d_model"], a["encoder_layers"], a["encoder_ffn_dim"], a["output_dim"])
        h, inter = t["hidden_size"], t["intermediate_size"]
        layer = h * 16 * 128 * 2 + h * 8 * 128 * 2 + 2 * 128 + 3 * h * inter + 2 * h  # q / k / v / o, q / k norms
        text = 151936 * h + 28 * layer + h  # tied
        p = count_params(parse_config(cfg))
        assert p.total == tower + text == total == _same(cfg)  # the hub's 0.8B / 2B class
        assert p.audio == tower and p.lm_head == 0
        kv = kv_cache(parse_config(cfg), get_dtype("bf16"), get_dtype("bf16"))
        assert kv.bytes_per_token == 28 * 8 * 128 * 2 * 2


def test_vibevoice_asr_checkpoint():
    p = count_params(parse_config(VIBEVOICE_ASR))
    encoders = vibevoice_encoder_hand(64) + vibevoice_encoder_hand(128)
    projector = (3584 * 64 + 3584) + (3584 * 128 + 3584) + 2 * (3584 + 3584 * 3584 + 3584)
    text = decoder_hand(3584, 28, 28, 4, 18944, 152064, qkv_bias=True, tied=False)
    assert p.audio == encoders + projector == 714_709_376
    assert p.total == encoders + projector + text == 8_330_325_888 == _same(VIBEVOICE_ASR)
    assert kv_cache(parse_config(VIBEVOICE_ASR), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == \
        28 * 4 * 128 * 2 * 2


@pytest.mark.parametrize("mt", ["audioflamingo3", "musicflamingo", "glmasr", "qwen3_asr", "vibevoice_asr"])
def test_class_defaults_and_tie_flags(mt):
    """The class-default model and both tie flags, each way, equal transformers on the meta device (Audio Flamingo 3,
    Music Flamingo and VibeVoice-ASR never tie; GLM-ASR and Qwen3-ASR tie by the wrapper's own flag)."""
    _same({"model_type": mt})
    for top in (None, True, False):
        for txt in (True, False):
            cfg = {"model_type": mt, "text_config": dict(_TINY_TEXT, tie_word_embeddings=txt)}
            if top is not None:
                cfg["tie_word_embeddings"] = top
            _same(cfg)


def test_small_variants():
    enc = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
           "num_mel_bins": 16, "max_source_positions": 30}
    # Audio Flamingo 3 with bias-free projectors, its Whisper aliases; Music Flamingo's own encoder model_type renamed
    af3 = {"model_type": "audioflamingo3", "projector_bias": False, "text_config": dict(_TINY_TEXT),
           "audio_config": {"model_type": "audioflamingo3_encoder", "d_model": 64, "encoder_layers": 2,
                            "encoder_attention_heads": 4, "encoder_ffn_dim": 96, "num_mel_bins": 16,
                            "max_source_positions": 30}}
    assert count_params(parse_config(af3)).audio == whisper_hand(64, 2, 96, 16, 30) + 64 * 64 + 64 * 64
    _same(af3)
    _same({"model_type": "musicflamingo", "text_config": dict(_TINY_TEXT),
           "audio_config": dict(enc, model_type="musicflamingo_encoder")})
    # GLM-ASR: GQA encoder with an explicit head_dim; a partial text_config keeps GlmAsrConfig's text defaults
    _same({"model_type": "glmasr", "text_config": dict(_TINY_TEXT),
           "audio_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                            "num_key_value_heads": 2, "intermediate_size": 256, "num_mel_bins": 16, "head_dim": 32}})
    _same({"model_type": "glmasr", "text_config": {"num_hidden_layers": 3}})
    _same({"model_type": "qwen3_asr", "tie_word_embeddings": False, "text_config": dict(_TINY_TEXT),
           "audio_config": {"num_mel_bins": 80, "d_model": 64, "encoder_layers": 2, "encoder_attention_heads": 4,
                            "encoder_ffn_dim": 96, "downsample_hidden_size": 8, "output_dim": 64}})
    _same({"model_type": "vibevoice_asr", "text_config": dict(_TINY_TEXT), "acoustic_tokenizer_chunk_size": 600,
           "acoustic_tokenizer_encoder_config": {"hidden_size": 16, "num_filters": 8, "downsampling_ratios": [2, 3],
                                                 "depths": [1, 2, 1], "kernel_size": 5, "ffn_expansion": 2,
                                                 "channels": 2},
           "semantic_tokenizer_encoder_config": {"model_type": "vibevoice_acoustic_tokenizer_encoder"}})


def test_more_bad_configs(tmp_path):
    with pytest.raises(UnsupportedModelError, match="whisper_config"):
        parse_config({"model_type": "glmasr", "whisper_config": {"d_model": 1280}, "lm_config": {"hidden_size": 2048}})
    with pytest.raises(ConfigError, match="depths"):
        parse_config(dict(VIBEVOICE_ASR, acoustic_tokenizer_encoder_config=dict(_VV_ENC, depths=[3, 3])))
    with pytest.raises(ConfigError, match="downsampling_ratios"):
        parse_config(dict(VIBEVOICE_ASR, acoustic_tokenizer_encoder_config=dict(_VV_ENC, downsampling_ratios=[2, 0])))
    with pytest.raises(ConfigError, match="encoder_attention_heads"):
        parse_config(dict(QWEN3_ASR_17B, audio_config=dict(QWEN3_ASR_17B["audio_config"], encoder_attention_heads=7)))
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        parse_config({"model_type": "glmasr", "audio_config": {"num_key_value_heads": 3}})
    with pytest.raises(UnsupportedModelError, match="audioflamingo3_encoder"):
        parse_config({"model_type": "audioflamingo3", "audio_config": {"model_type": "whisper"}})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_ASR_17B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 2_038_052_480
    path.write_text(json.dumps({"model_type": "glmasr", "whisper_config": {}, "lm_config": {}}))
    run("analyze", str(path)).assert_error("GLM-ASR", "whisper_config")
