"""Granite Speech Plus (``granite_speech_plus``), OmniASR's LLM variant (``omniasr``) and Nemotron 3.5 Transcribe
(``nemo_speechlm``): the whole checkpoint (audio encoders, projector and heads as kind ``audio``, the language model,
lm_head), checked against transformers on the meta device, against hand counts written from the module shapes of
modeling_granite_speech_plus.py / modeling_omniasr.py / modeling_nemotron3_5_transcribe.py (and
modeling_nemotron3_diarization.py), and against the published figures; the decode trace and K/V stay the language
model's."""

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
from tests.clirun import check_whole_checkpoint_cli, run
from tests.test_audio_llm import _meta, conformer_hand, decoder_hand, qformer_hand

# ibm-granite/granite-speech-4.1-2b-plus config.json (transformers format), as quoted by a Rust port's config fixture
# (transcribe.cpp granite_speech config.rs) and its porting notes: the 16-layer conformer (output_dim 348) whose layer-3
# output is concatenated with the last (cat_hidden_layers [3], so the Q-Former reads 2048 wide), the 2-layer Q-Former,
# Granite-4.0-1B-base's decoder (100,353 vocab, tied)
GRANITE_SPEECH_41_2B_PLUS = {
    "architectures": ["GraniteSpeechPlusForConditionalGeneration"], "model_type": "granite_speech_plus",
    "audio_token_index": 100352, "downsample_rate": 5, "window_size": 15, "has_lora_adapter": False,
    "torch_dtype": "bfloat16",
    "encoder_config": {"model_type": "granite_speech_plus_encoder", "cat_hidden_layers": [3], "context_size": 200,
                       "conv_expansion_factor": 2, "conv_kernel_size": 15, "dim_head": 128, "dropout": 0.0,
                       "feedforward_mult": 4, "hidden_dim": 1024, "input_dim": 160, "max_pos_emb": 512, "num_heads": 8,
                       "num_layers": 16, "output_dim": 348},
    "projector_config": {"model_type": "blip_2_qformer", "attention_probs_dropout_prob": 0.1,
                         "encoder_hidden_size": 2048, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                         "hidden_size": 1024, "intermediate_size": 4096, "layer_norm_eps": 1e-12,
                         "max_position_embeddings": 512, "num_attention_heads": 16, "num_hidden_layers": 2,
                         "pad_token_id": 0, "use_qformer_text_input": False, "cross_attention_frequency": 1},
    "text_config": {"model_type": "granite", "attention_multiplier": 0.0078125, "bos_token_id": 100257,
                    "embedding_multiplier": 12.0, "eos_token_id": 100257, "hidden_size": 2048,
                    "intermediate_size": 4096, "logits_scaling": 8.0, "max_position_embeddings": 4096,
                    "num_attention_heads": 16, "num_hidden_layers": 40, "num_key_value_heads": 4,
                    "pad_token_id": 100256, "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                    "tie_word_embeddings": True, "vocab_size": 100353}}

# OmniASR LLM checkpoints: OmniASRConfig's class defaults are hf-audio/omniasr-llm-300m-v2 (the checkpoint its config
# class names); the 1B / 3B / 7B encoders as the original's wav2vec 2.0 configs set them (transformers'
# convert_omniasr_to_hf.py: model_dim / layers / ffn 1280 / 48 / 5120, 2048 / 60 / 8192, 2048 / 128 / 8192), the same
# Llama decoder. No transformers-format config.json of theirs was at hand.
OMNIASR_ENCODERS = {"300m": (1024, 24, 4096), "1b": (1280, 48, 5120), "3b": (2048, 60, 8192), "7b": (2048, 128, 8192)}
#: facebookresearch/omnilingual-asr README, "Model Architectures": omniASR_LLM_{300M,1B,3B,7B} (v1) parameters
OMNIASR_PUBLISHED = {"300m": 1_627_603_584, "1b": 2_275_710_592, "3b": 4_376_679_040, "7b": 7_801_041_536}

_CLS = {"granite_speech_plus": "GraniteSpeechPlusForConditionalGeneration",
        "omniasr": "OmniASRForConditionalGeneration",
        "nemo_speechlm": "Nemotron3_5TranscribeForConditionalGeneration"}


def _same(cfg: dict) -> int:
    total = count_params(parse_config(copy.deepcopy(cfg))).total
    assert total == _meta(copy.deepcopy(cfg), _CLS[cfg["model_type"]])
    return total


def _kv(cfg: dict) -> int:
    return kv_cache(parse_config(cfg), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token


def omniasr_tower_hand(d=1024, layers=24, ffn=4096, convs=((512, 10),) + ((512, 3),) * 4 + ((512, 2),) * 2,
                       pos_kernel=128, groups=16, conv_bias=True):
    total, c_in = 0, 1
    for c, k in convs:
        total += c * c_in * k + (c if conv_bias else 0) + 2 * c  # Conv1d + its LayerNorm
        c_in = c
    total += 2 * c_in + c_in * d + d  # layer_norm, projection
    total += d * (d // groups) * pos_kernel + d  # grouped positional conv
    block = 4 * (d * d + d) + 2 * d + (ffn * d + ffn) + (d * ffn + d) + 2 * d
    return total + layers * block + 2 * d


def nemotron_audio_block(d, heads, kv, hd, ffn, qk_norm):
    return (heads * hd * d + kv * hd * d + heads * hd * d + d * heads * hd + d + (4 * hd if qk_norm else 0)
            + 2 * d + (ffn * d + ffn) + (d * ffn + d) + 2 * d)


# ---- Granite Speech Plus ---------------------------------------------------------------------------------------------


def test_granite_speech_41_2b_plus_whole_checkpoint():
    cfg = GRANITE_SPEECH_41_2B_PLUS
    p = count_params(parse_config(cfg))
    encoder = conformer_hand(out=348)
    projector = qformer_hand(kv_in=2048)
    text = decoder_hand(2048, 40, 16, 4, 4096, 100353, qkv_bias=False, tied=True)
    assert (encoder, projector) == (440_168_796, 39_891_968)
    assert p.audio == encoder + projector and p.vision == 0
    assert p.total == encoder + projector + text == 2_111_812_956 == _same(cfg)  # the hub's "2.1B params"
    assert p.lm_head == 0  # tied: the wrapper's tie_word_embeddings (class default true)
    assert _kv(cfg) == 40 * 4 * 128 * 2 * 2


def test_granite_speech_plus_defaults_and_tie():
    """GraniteSpeechPlusConfig(): Granite Speech's defaults (no cat_hidden_layers); the wrapper's flag ties lm_head,
    whatever text_config says."""
    default = {"model_type": "granite_speech_plus"}
    assert _same(default) == _meta({"model_type": "granite_speech"}, "GraniteSpeechForConditionalGeneration")
    for top in (None, True, False):
        for txt in (True, False):
            cfg = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
            cfg["text_config"]["tie_word_embeddings"] = txt
            if top is None:
                cfg.pop("tie_word_embeddings", None)
            else:
                cfg["tie_word_embeddings"] = top
            total = _same(cfg)
            assert total == 2_111_812_956 + (0 if top in (None, True) else 100353 * 2048)
    # cat_hidden_layers [0, 5] with the projector three encoder widths wide
    cfg = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    cfg["encoder_config"]["cat_hidden_layers"] = [0, 5]
    cfg["projector_config"]["encoder_hidden_size"] = 3072
    assert count_params(parse_config(cfg)).audio == conformer_hand(out=348) + qformer_hand(kv_in=3072)
    _same(cfg)


def test_granite_speech_plus_bad_configs():
    bad = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    bad["projector_config"]["encoder_hidden_size"] = 1024
    with pytest.raises(ConfigError, match="encoder_hidden_size.*2048"):
        parse_config(bad)
    bad = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    bad["encoder_config"]["cat_hidden_layers"] = [16]
    with pytest.raises(ConfigError, match="cat_hidden_layers.*out of range"):
        parse_config(bad)
    bad["encoder_config"]["cat_hidden_layers"] = [-1]
    with pytest.raises(ConfigError, match="cat_hidden_layers"):
        parse_config(bad)
    bad = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    bad["encoder_config"]["model_type"] = "granite_speech_encoder"
    with pytest.raises(UnsupportedModelError, match="granite_speech_plus_encoder"):
        parse_config(bad)


# ---- OmniASR ---------------------------------------------------------------------------------------------------------


def _omniasr(size: str) -> dict:
    d, layers, ffn = OMNIASR_ENCODERS[size]
    return {"model_type": "omniasr", "audio_config": {"model_type": "omniasr_audio", "hidden_size": d,
                                                      "num_hidden_layers": layers, "intermediate_size": ffn}}


def test_omniasr_class_defaults_are_the_300m_v2():
    cfg = {"model_type": "omniasr"}
    p = count_params(parse_config(cfg))
    tower = omniasr_tower_hand()
    projector = 1024 * 4096 + 4096
    text = decoder_hand(4096, 12, 8, 8, 2816, 11984, qkv_bias=False, tied=False)
    assert tower == 315_437_568
    assert p.audio == tower + projector
    assert p.total == tower + projector + text == 1_638_453_760 == _same(cfg)
    assert p.lm_head == p.embedding == 11984 * 4096  # never tied
    # head_dim 4096 / 8 = 512: 12 layers x 8 KV heads x 512 x (K, V) x 2 bytes
    assert _kv(cfg) == 12 * 8 * 512 * 2 * 2


@pytest.mark.parametrize("size", sorted(OMNIASR_ENCODERS))
def test_omniasr_sizes_match_the_published_counts(size):
    """Each size equals transformers, and its encoder / projector / decoder body equals the original fairseq2
    checkpoint's: the README figure is that body plus the positional conv's weight-norm g (128, folded away in
    transformers) and the original's vocabulary tables (v1: text_frontend 9,813 rows, final_proj 9,812,
    lang_embeddings 1,694) in place of transformers' two 11,984-row tables."""
    cfg = _omniasr(size)
    d, layers, ffn = OMNIASR_ENCODERS[size]
    total = _same(cfg)
    tower = omniasr_tower_hand(d, layers, ffn)
    assert count_params(parse_config(cfg)).audio == tower + d * 4096 + 4096
    assert total == tower + d * 4096 + 4096 + decoder_hand(4096, 12, 8, 8, 2816, 11984, qkv_bias=False, tied=False)
    body = total - 2 * 11984 * 4096
    assert body + 128 + (9813 + 9812 + 1694) * 4096 == OMNIASR_PUBLISHED[size]


def test_omniasr_variants_and_tie():
    """A small encoder (two convs, bias-free, grouped positions) under a Llama text_config read over LlamaConfig's
    defaults; lm_head never tied whatever either flag says."""
    tiny = {"model_type": "omniasr",
            "audio_config": {"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128,
                             "num_attention_heads": 4, "num_conv_pos_embeddings": 16,
                             "num_conv_pos_embedding_groups": 4, "conv_dim": [32, 48], "conv_kernel": [5, 3],
                             "conv_stride": [2, 2], "conv_bias": False},
            "text_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300}}
    p = count_params(parse_config(tiny))
    assert p.audio == omniasr_tower_hand(64, 2, 128, ((32, 5), (48, 3)), 16, 4, conv_bias=False) + 64 * 64 + 64
    _same(tiny)
    for top in (True, False):
        cfg = copy.deepcopy(tiny)
        cfg["tie_word_embeddings"] = top
        cfg["text_config"]["tie_word_embeddings"] = True
        assert _same(cfg) == p.total
    _same({"model_type": "omniasr", "text_config": {"num_hidden_layers": 2}})  # LlamaConfig's defaults under it


def test_omniasr_bad_configs():
    with pytest.raises(ConfigError, match="conv_dim.*conv_kernel"):
        parse_config({"model_type": "omniasr", "audio_config": {"conv_dim": [512, 512]}})
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config({"model_type": "omniasr", "audio_config": {"num_attention_heads": 7}})
    with pytest.raises(ConfigError, match="num_conv_pos_embedding_groups"):
        parse_config({"model_type": "omniasr", "audio_config": {"num_conv_pos_embedding_groups": 3}})
    with pytest.raises(UnsupportedModelError, match="omniasr_audio"):
        parse_config({"model_type": "omniasr", "audio_config": {"model_type": "wav2vec2"}})


# ---- Nemotron 3.5 Transcribe -----------------------------------------------------------------------------------------

_PATTERN = audio_llm.NEMO_SPEECHLM_TEXT_DEFAULTS["hybrid_override_pattern"]


def test_nemotron_35_transcribe_class_defaults():
    """Nemotron3_5TranscribeConfig() — the shapes of nvidia/NVIDIA-Nemotron-3.5-Transcribe-30B-A4B, the checkpoint its
    config class names (no config.json of it was at hand)."""
    cfg = {"model_type": "nemo_speechlm"}
    p = count_params(parse_config(cfg))
    asr = 8 * 128 * 1280 + 2 * 1280 + 32 * nemotron_audio_block(1280, 10, 10, 128, 5120, True) + 2 * 1280
    diar = (8 * 128 * 512 + 2 * 512 + 31 * nemotron_audio_block(512, 8, 8, 64, 2048, False) + 2 * 512  # encoder
            + (192 * 512 + 192) + (192 * 8 * 192 * 3 + 192 * 8)  # proj, sub-pixel upsampler
            + (192 * 192 + 192) + (8 * 192 + 8) + 512)  # classifier dense / out_proj, silence_embeds
    norms = 2 * 1280 + 2 * 8  # asr_norm, speaker_norm (the speaker embedding is a buffer)
    projector = 1280 * 2688 + 2688
    words = (1280 * 1280 * 2 + 1280) + 2 * 1280 + 2 * nemotron_audio_block(1280, 16, 16, 80, 640, True) + 2 * 1280
    head = 23863 * 1280 + 23863
    assert asr + diar + norms + projector + words + head == p.audio == 783_812_815
    assert p.total == 32_361_750_159 == _same(cfg)  # the name's 30B class
    assert p.lm_head == p.embedding == 131072 * 2688  # never tied
    # routed experts (relu2, up and down): 122 of 128 idle per MoE layer
    assert p.active == p.total - _PATTERN.count("E") * 122 * 2 * 1856 * 2688 == 4_363_886_223  # the name's A4B
    # K/V only in the six attention layers ('*'): 2 KV heads x head_dim 128 x (K, V) x 2 bytes
    assert _PATTERN.count("*") == 6
    assert _kv(cfg) == 6 * 2 * 128 * 2 * 2


_TINY_NEMO = {
    "model_type": "nemo_speechlm",
    "audio_config": {
        "asr_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "num_mel_bins": 16, "subsampling_factor": 4, "head_dim": 24},
        "diarization_config": {
            "audio_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 3,
                             "num_attention_heads": 4, "num_mel_bins": 16, "subsampling_factor": 4},
            "head_config": {"model_type": "", "hidden_size": 24, "num_speakers": 4, "audio_hidden_size": 48,
                            "subsampling_factor": 4},
            "streaming_config": {"num_speakers": 4, "subsampling_factor": 4, "speaker_cache_length": 8}}},
    "word_timestamp_config": {"hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 1,
                              "num_attention_heads": 2, "vocab_size": 50, "blank_token_id": 49,
                              "upsampling_factor": 3},
    "text_config": {"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "head_dim": 16, "intermediate_size": 96, "hybrid_override_pattern": "M*E", "mamba_num_heads": 4,
                    "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "n_routed_experts": 4,
                    "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 48,
                    "vocab_size": 320}}


def test_nemotron_35_transcribe_variants():
    """GQA with an explicit head_dim in the ASR encoder, a small diarization model with 4 speakers, a word timestamp
    head upsampling by 3, a tiny Nemotron-H; lm_head never tied."""
    p = count_params(parse_config(_TINY_NEMO))
    hand = (4 * 16 * 64 + 2 * 64 + 2 * nemotron_audio_block(64, 4, 2, 24, 96, True) + 2 * 64
            + 4 * 16 * 48 + 2 * 48 + 3 * nemotron_audio_block(48, 4, 4, 12, 80, False) + 2 * 48
            + (24 * 48 + 24) + (24 * 4 * 24 * 3 + 24 * 4) + (24 * 24 + 24) + (4 * 24 + 4) + 48
            + 2 * 64 + 2 * 4 + (64 * 64 + 64)
            + (32 * 32 * 3 + 32) + 2 * 32 + nemotron_audio_block(32, 2, 2, 16, 40, True) + 2 * 32 + (50 * 32 + 50))
    assert p.audio == hand
    _same(_TINY_NEMO)
    for top in (True, False):
        cfg = copy.deepcopy(_TINY_NEMO)
        cfg["tie_word_embeddings"] = top
        cfg["text_config"]["tie_word_embeddings"] = True
        assert _same(cfg) == p.total
    _same({"model_type": "nemo_speechlm", "text_config": dict(_TINY_NEMO["text_config"])})


def test_nemotron_35_transcribe_bad_configs():
    def with_(path: tuple[str, ...], value):
        cfg = copy.deepcopy(_TINY_NEMO)
        d = cfg
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        return cfg

    diar = ("audio_config", "diarization_config")
    with pytest.raises(ConfigError, match="head_config.audio_hidden_size' is 64"):
        parse_config(with_((*diar, "head_config", "audio_hidden_size"), 64))
    with pytest.raises(ConfigError, match="streaming_config.num_speakers"):
        parse_config(with_((*diar, "streaming_config", "num_speakers"), 8))
    with pytest.raises(ConfigError, match="audio_config.subsampling_factor' is 8"):
        cfg = with_((*diar, "audio_config", "subsampling_factor"), 8)
        parse_config(cfg)
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        parse_config(with_(("audio_config", "asr_config", "num_key_value_heads"), 3))
    with pytest.raises(UnsupportedModelError, match="audio_config.asr_config.model_type"):
        parse_config(with_(("audio_config", "asr_config", "model_type"), "parakeet_encoder"))
    with pytest.raises(UnsupportedModelError, match="head_config.model_type"):
        parse_config(with_((*diar, "head_config", "model_type"), "sortformer"))


# ---- shared ----------------------------------------------------------------------------------------------------------


def test_module_defaults_are_transformers_class_defaults():
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    from transformers.models.nemotron3_diarization.configuration_nemotron3_diarization import (
        Nemotron3DiarizationHeadConfig, Nemotron3DiarizationStreamingConfig)

    def same(obj, defaults):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(obj, k)) for k in defaults)} == \
            {k: list(v) if isinstance(v, tuple) else v for k, v in defaults.items()}

    assert same(transformers.GraniteSpeechPlusEncoderConfig(), audio_llm.GRANITE_SPEECH_ENCODER_DEFAULTS)
    assert same(transformers.GraniteSpeechPlusConfig(), audio_llm.GRANITE_SPEECH_DEFAULTS)
    assert same(transformers.OmniASRAudioConfig(), audio_llm.OMNIASR_AUDIO_DEFAULTS)
    assert same(transformers.Nemotron3_5TranscribeAsrAudioConfig(), audio_llm.NEMO_ASR_DEFAULTS)
    assert same(transformers.Nemotron3DiarizationConfig().audio_config, audio_llm.DIARIZATION_AUDIO_DEFAULTS)
    assert same(Nemotron3DiarizationHeadConfig(), audio_llm.DIARIZATION_HEAD_DEFAULTS)
    assert same(Nemotron3DiarizationStreamingConfig(), audio_llm.DIARIZATION_STREAMING_DEFAULTS)
    assert same(transformers.Nemotron3_5TranscribeWordTimestampConfig(), audio_llm.NEMO_WORD_TIMESTAMP_DEFAULTS)
    for cls, defaults in ((transformers.OmniASRConfig, audio_llm.OMNIASR_TEXT_DEFAULTS),
                          (transformers.Nemotron3_5TranscribeConfig, audio_llm.NEMO_SPEECHLM_TEXT_DEFAULTS)):
        spec = cls.sub_configs_defaults["text_config"]
        assert dict(spec.init_kwargs, model_type=spec.model_type) == defaults, cls.__name__


def test_cli(tmp_path):
    """analyze counts the whole checkpoint with no 'not counted' caveat; trace and serve run on the language model;
    a bad sub-config gives one Error line."""
    cases = ((GRANITE_SPEECH_41_2B_PLUS, 2_111_812_956, 81_920), ({"model_type": "omniasr"}, 1_638_453_760, 196_608),
             ({"model_type": "nemo_speechlm"}, 32_361_750_159, 6_144))
    for cfg, total, kv in cases:
        path = tmp_path / f"{cfg['model_type']}.json"
        path.write_text(json.dumps(cfg))
        check_whole_checkpoint_cli(path, total, kv)
    bad = tmp_path / "bad.json"
    cfg = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    cfg["projector_config"]["encoder_hidden_size"] = 1024
    bad.write_text(json.dumps(cfg))
    run("analyze", str(bad)).assert_error("projector_config", "encoder_hidden_size", "2048")
    bad.write_text(json.dumps({"model_type": "nemo_speechlm",
                               "audio_config": {"diarization_config": {"head_config": {"num_speakers": 4}}}}))
    run("analyze", str(bad)).assert_error("streaming_config.num_speakers")
    bad.write_text(json.dumps({"model_type": "omniasr", "audio_config": {"conv_stride": [5, 2]}}))
    run("analyze", str(bad)).assert_error("audio_config", "conv_dim")


def test_verify_runs_the_language_model(tmp_path):
    """verify builds the language model alone: its exact self-checks pass for tiny Granite Speech Plus and OmniASR
    configs (Nemotron 3.5 Transcribe's Nemotron-H has Mamba layers, which verify refuses generically)."""
    pytest.importorskip("torch", reason="verify needs torch")
    from tests.clirun import verify_self_checks

    gsp = copy.deepcopy(GRANITE_SPEECH_41_2B_PLUS)
    gsp["text_config"].update(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, vocab_size=300)
    out = verify_self_checks(tmp_path, gsp, name="gsp")
    assert out["checks"]["params"]["measured"] == count_params(parse_config(gsp)).total - \
        count_params(parse_config(gsp)).audio
    omni = {"model_type": "omniasr", "text_config": dict(_TINY_NEMO["text_config"], model_type="llama")}
    for k in ("hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups",
              "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "moe_shared_expert_intermediate_size"):
        omni["text_config"].pop(k)
    omni["text_config"]["num_hidden_layers"] = 2
    verify_self_checks(tmp_path, omni, name="omni")
    d = tmp_path / "nemo"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(_TINY_NEMO))
    run("verify", d, "--device", "cpu", "--context", "16", "--steps", "2", "--hardware", "cpu").assert_error("Mamba")
