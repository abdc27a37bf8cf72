"""MOSS-Transcribe-Diarize (``moss_transcribe_diarize``) and Fun-ASR-Nano (``fun_asr_nano``): the whole checkpoint
(audio encoder and projector as kind ``audio``, the Qwen3 language model, lm_head), checked against transformers on the
meta device, against hand counts written from modeling_moss_transcribe_diarize.py / modeling_fun_asr_nano.py module
shapes, and against the published figures; the decode trace and K/V stay the language model's."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import speech_asr
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

# OpenMOSS-Team/MOSS-Transcribe-Diarize config.json, its shape fields as quoted by ports' fixtures (a Rust and a Swift
# port; their quantization block left out). Its original remote-code layout: audio_config is a WhisperConfig
# ("model_type": "whisper"), and it names adaptor_input_dim (hidden x audio_merge_size), which transformers derives.
MOSS_ORIGINAL = {
    "architectures": ["MossTranscribeDiarizeForConditionalGeneration"], "model_type": "moss_transcribe_diarize",
    "text_config": {"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
                    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
                    "hidden_act": "silu", "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "rope_theta": 1000000,
                    "attention_bias": False},
    "audio_config": {"model_type": "whisper", "num_mel_bins": 80, "d_model": 1024, "encoder_layers": 24,
                     "encoder_attention_heads": 16, "encoder_ffn_dim": 4096, "max_source_positions": 1500,
                     "activation_function": "gelu"},
    "audio_token_id": 151671, "audio_merge_size": 4, "adaptor_input_dim": 4096, "tie_word_embeddings": True}
# the transformers-format conversion (convert_moss_transcribe_diarize_to_hf.py pops adaptor_input_dim; the audio
# config class is fixed, so it reads the same fields)
MOSS_HF = {k: v for k, v in MOSS_ORIGINAL.items() if k != "adaptor_input_dim"}

_TINY_TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256}

_CLS = {"moss_transcribe_diarize": "MossTranscribeDiarizeForConditionalGeneration",
        "fun_asr_nano": "FunAsrNanoForConditionalGeneration"}


def _meta_model(cfg: dict):
    return hf_class_model(cfg, _CLS[cfg["model_type"]])


def _meta(cfg: dict) -> int:
    return unique_param_count(_meta_model(cfg))


def _same(cfg: dict) -> int:
    total = count_params(parse_config(copy.deepcopy(cfg))).total
    assert total == _meta(cfg)
    return total


def whisper_hand(d=1024, layers=24, ffn=4096, mels=80, positions=1500):
    conv = (d * mels * 3 + d) + (d * d * 3 + d)
    block = 4 * d * d + 3 * d + 2 * 2 * d + (ffn * d + ffn) + (d * ffn + d)  # k_proj bias-free
    return conv + positions * d + layers * block + 2 * d


def qwen3_hand(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, inter=3072, vocab=151936, tied=True):
    attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2 + 2 * head_dim  # q / o, k / v, q / k norms
    layer = attn + 3 * hidden * inter + 2 * hidden
    return vocab * hidden * (1 if tied else 2) + layers * layer + hidden


def san_layer_hand(d_in, d, ffn, kernel, final_norm):
    attn = 3 * (d * d_in + d) + (d * d + d) + (d * kernel if kernel else 0)
    return attn + (ffn * d + ffn) + (d * ffn + d) + 2 * d_in + 2 * d + (2 * d if final_norm else 0)


def fun_asr_tower_hand(d=512, layers=70, ts=20, ffn=2048, mels=80, stacked=7, kernel=11, proj=2048, ah=1024,
                       a_ffn=256, a_layers=2):
    d_in = mels * stacked
    enc = sum(san_layer_hand(d_in if i == 0 else d, d, ffn, kernel, i in (layers - ts - 1, layers - 1))
              for i in range(layers))
    projector = (proj * d + proj) + (ah * proj + ah) + a_layers * san_layer_hand(ah, ah, a_ffn, 0, False)
    return enc, projector


def test_moss_transcribe_diarize_checkpoint():
    """OpenMOSS-Team/MOSS-Transcribe-Diarize: 908,513,280, the hub's num_parameters for it."""
    audio = whisper_hand()
    projector = (1024 * 4096 + 1024) + (1024 * 1024 + 1024) + 2 * 1024
    text = qwen3_hand()
    assert (audio, projector, text) == (307_216_384, 5_246_976, 596_049_920)
    for cfg in (MOSS_ORIGINAL, MOSS_HF, {"model_type": "moss_transcribe_diarize"}):
        spec = parse_config(copy.deepcopy(cfg))
        p = count_params(spec)
        assert p.total == audio + projector + text == 908_513_280
        assert p.audio == audio + projector and p.vision == 0 and p.lm_head == 0  # tied
        # the decode K/V is Qwen3-0.6B's: 28 layers x 8 KV heads x 128 x (K, V) x 2 bytes
        assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 8 * 128 * 2 * 2
    assert _meta(MOSS_HF) == _meta({"model_type": "moss_transcribe_diarize"}) == 908_513_280


def test_moss_auto_class_is_the_whole_wrapper():
    """AutoModelForCausalLM maps moss_transcribe_diarize to the whole wrapper the checkpoint's architectures name."""
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    assert MODEL_FOR_CAUSAL_LM_MAPPING_NAMES["moss_transcribe_diarize"] == MOSS_HF["architectures"][0]
    assert hasattr(transformers, _CLS["fun_asr_nano"])


@pytest.mark.parametrize("mt", ["moss_transcribe_diarize", "fun_asr_nano"])
def test_tie_is_the_wrappers_flag(mt):
    """lm_head ties as the wrapper's own flag says (class default true), whatever text_config's flag says."""
    extra = {"adaptor_config": {"hidden_size": 64, "intermediate_size": 16}} if mt == "fun_asr_nano" else {}
    for top in (None, True, False):
        for txt in (True, False):
            cfg = {"model_type": mt, "text_config": dict(_TINY_TEXT, tie_word_embeddings=txt), **extra}
            if top is not None:
                cfg["tie_word_embeddings"] = top
            p = count_params(parse_config(copy.deepcopy(cfg)))
            assert (p.lm_head == 0) == (top is not False)
            assert p.total == _meta(cfg)


def test_moss_variants():
    # bias-free projector, merge 2, a small Whisper tower under its own model_type and attribute names
    cfg = {"model_type": "moss_transcribe_diarize", "projector_bias": False, "audio_merge_size": 2,
           "text_config": dict(_TINY_TEXT),
           "audio_config": {"model_type": "moss_transcribe_diarize_audio", "hidden_size": 48, "num_hidden_layers": 2,
                            "num_attention_heads": 4, "intermediate_size": 96, "num_mel_bins": 16,
                            "max_source_positions": 30}}
    p = count_params(parse_config(copy.deepcopy(cfg)))
    assert p.audio == whisper_hand(48, 2, 96, 16, 30) + 64 * 96 + 64 * 64 + 2 * 64
    assert p.total == _meta(cfg)
    # a partial text_config is read over Qwen3Config's defaults (not the wrapper's init_kwargs)
    _same({"model_type": "moss_transcribe_diarize", "text_config": {"num_hidden_layers": 2}})
    # an original-layout Whisper audio_config with a few fields: the rest are MossTranscribeDiarizeAudioConfig's
    _same({"model_type": "moss_transcribe_diarize", "text_config": dict(_TINY_TEXT),
           "audio_config": {"model_type": "whisper", "d_model": 64, "encoder_layers": 1}})


def test_fun_asr_nano_checkpoint():
    """FunAudioLLM/Fun-ASR-Nano-2512(-hf): FunAsrNanoConfig()'s shapes, 829,791,840 (the model card's 800M)."""
    enc, projector = fun_asr_tower_hand()
    text = qwen3_hand()
    assert (enc, projector) == (221_136_992, 12_604_928)
    cfg = {"model_type": "fun_asr_nano", "architectures": ["FunAsrNanoForConditionalGeneration"]}
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == enc + projector + text == 829_791_840 == _meta(cfg)
    assert p.audio == enc + projector and p.lm_head == 0
    assert round(p.total / 1e8) == 8  # "800M"
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 8 * 128 * 2 * 2
    # the same shapes spelled out, as the -hf config.json names them
    explicit = dict(cfg, audio_config=dict(speech_asr.FUN_ASR_ENCODER_DEFAULTS, model_type="fun_asr_nano_encoder"),
                    adaptor_config=dict(speech_asr.FUN_ASR_ADAPTOR_DEFAULTS),
                    text_config=dict(speech_asr.FUN_ASR_TEXT_DEFAULTS, vocab_size=151936, head_dim=128))
    assert count_params(parse_config(explicit)).total == 829_791_840 == _meta(explicit)


def test_fun_asr_variants():
    adaptor = {"hidden_size": 64, "intermediate_size": 16, "num_attention_heads": 4, "projector_hidden_size": 40}
    base = {"model_type": "fun_asr_nano", "text_config": dict(_TINY_TEXT), "adaptor_config": adaptor,
            "audio_config": {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 48,
                             "num_hidden_layers": 5, "num_timestamp_prediction_layers": 2, "num_mel_bins": 8,
                             "num_stacked_frames": 3, "fsmn_kernel_size": 5}}
    p = count_params(parse_config(copy.deepcopy(base)))
    enc, projector = fun_asr_tower_hand(32, 5, 2, 48, 8, 3, 5, 40, 64, 16, 2)
    assert p.audio == enc + projector
    assert p.total == _meta(base)
    for ts, layers in ((0, 3), (2, 3), (0, 1)):  # one final norm when both indices meet (no timestamp layers)
        _same(dict(base, audio_config=dict(base["audio_config"], num_timestamp_prediction_layers=ts,
                                           num_hidden_layers=layers)))
    for n in (0, 3):
        _same(dict(base, adaptor_config=dict(adaptor, num_hidden_layers=n)))


def test_module_defaults_are_transformers_class_defaults():
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    for cls, defaults in ((transformers.MossTranscribeDiarizeAudioConfig, speech_asr.MOSS_AUDIO_DEFAULTS),
                          (transformers.MossTranscribeDiarizeConfig, speech_asr.MOSS_DEFAULTS),
                          (transformers.FunAsrNanoEncoderConfig, speech_asr.FUN_ASR_ENCODER_DEFAULTS),
                          (transformers.FunAsrNanoAdaptorConfig, speech_asr.FUN_ASR_ADAPTOR_DEFAULTS)):
        c = cls()
        assert {k: getattr(c, k) for k in defaults} == defaults, cls.__name__
    for cls, defaults in ((transformers.MossTranscribeDiarizeConfig, speech_asr.MOSS_TEXT_DEFAULTS),
                          (transformers.FunAsrNanoConfig, speech_asr.FUN_ASR_TEXT_DEFAULTS)):
        spec = cls.sub_configs_defaults["text_config"]
        assert dict(spec.init_kwargs, model_type=spec.model_type) == defaults, cls.__name__
    spec = transformers.FunAsrNanoConfig.sub_configs_defaults["adaptor_config"]
    assert spec.init_kwargs.items() <= speech_asr.FUN_ASR_ADAPTOR_DEFAULTS.items()


def test_bad_configs():
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(MOSS_HF, audio_config=dict(MOSS_HF["audio_config"], encoder_attention_heads=7)))
    with pytest.raises(ConfigError, match="adaptor_input_dim"):
        parse_config(dict(MOSS_ORIGINAL, adaptor_input_dim=2048))
    with pytest.raises(UnsupportedModelError, match="moss_transcribe_diarize_audio"):
        parse_config(dict(MOSS_HF, audio_config=dict(MOSS_HF["audio_config"], model_type="qwen2_audio_encoder")))
    with pytest.raises(ConfigError, match="tie_word_embeddings"):
        parse_config(dict(MOSS_HF, tie_word_embeddings="yes"))
    with pytest.raises(ConfigError, match="audio_merge_size"):
        parse_config(dict(MOSS_HF, audio_merge_size=0))
    fun = {"model_type": "fun_asr_nano"}
    with pytest.raises(ConfigError, match="adaptor_config.*hidden_size.*must equal"):
        parse_config(dict(fun, text_config={"hidden_size": 2048}))
    with pytest.raises(ConfigError, match="intermediate_size.*hidden_size // 4"):
        parse_config(dict(fun, adaptor_config={"intermediate_size": 512}))
    with pytest.raises(ConfigError, match="num_timestamp_prediction_layers"):
        parse_config(dict(fun, audio_config={"num_hidden_layers": 20}))
    with pytest.raises(ConfigError, match="even"):
        parse_config(dict(fun, audio_config={"num_mel_bins": 81}))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(fun, audio_config={"num_attention_heads": 5}))
    with pytest.raises(UnsupportedModelError, match="fun_asr_nano_encoder"):
        parse_config(dict(fun, audio_config={"model_type": "whisper"}))
    with pytest.raises(UnsupportedModelError, match="first -hf revision"):
        parse_config(dict(fun, encoder_config={"d_model": 512, "num_timestamp_prediction_blocks": 20},
                          adaptor_intermediate_size=2048))
    with pytest.raises(ConfigError, match="adaptor_config"):
        parse_config(dict(fun, adaptor_config=[1]))


def test_cli(tmp_path):
    for cfg, total in ((MOSS_ORIGINAL, 908_513_280), ({"model_type": "fun_asr_nano"}, 829_791_840)):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(cfg))
        r = run("analyze", str(path), "--json")
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == total
        assert not any("not counted" in c for c in r.json["caveats"])
        # serve counts the whole checkpoint's weights; trace is the language model's decode step
        r = run("serve", str(path), "--json")
        assert r.code == 0, r.err
        assert r.json["memory"]["per_gpu"]["counted_weights_bytes"] == 2 * total
        assert r.json["memory"]["per_gpu"]["kv_bytes_per_token"] == 28 * 8 * 128 * 2 * 2
        r = run("trace", str(path), "--json")
        assert r.code == 0, r.err
        assert r.json["totals"]["weight_bytes"] < 2 * 600_000_000  # Qwen3-0.6B's weights, not the audio tower's
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MOSS_ORIGINAL, adaptor_input_dim=1000)))
    run("analyze", str(bad)).assert_error("adaptor_input_dim", "4096")
    bad.write_text(json.dumps({"model_type": "fun_asr_nano", "encoder_config": {}}))
    run("analyze", str(bad)).assert_error("Fun-ASR-Nano", "encoder_config")


@pytest.mark.parametrize("mt", ["moss_transcribe_diarize", "fun_asr_nano"])
def test_verify_runs_the_language_model(tmp_path, mt):
    """verify builds the text decoder alone; its exact checks hold (params: the total less the audio parts)."""
    cfg = {"model_type": mt, "text_config": dict(_TINY_TEXT, model_type="qwen3"), "tie_word_embeddings": False}
    if mt == "fun_asr_nano":
        cfg["adaptor_config"] = {"hidden_size": 64, "intermediate_size": 16}
        cfg["audio_config"] = {"num_hidden_layers": 2, "num_timestamp_prediction_layers": 1}
    else:
        cfg["audio_config"] = {"num_hidden_layers": 1}
    out = verify_self_checks(tmp_path, cfg)
    p = count_params(parse_config(copy.deepcopy(cfg)))
    assert out["checks"]["params"]["measured"] == p.total - p.audio
