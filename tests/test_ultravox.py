"""Ultravox (``ultravox``, remote code): the Whisper encoder, the stacked-frame projector and the language model, counted
from the module shapes of vLLM's vllm/model_executor/models/ultravox.py (UltravoxWhisperEncoder,
UltravoxFeedForwardProjector, UltravoxTransformerProjector) and the hub's ultravox_model.py; the encoder checked
against transformers' WhisperEncoder and the language model against LlamaForCausalLM on the meta device. No network,
no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_param_count

# openai/whisper-large-v3-turbo's config.json (the encoder fields; Ultravox v0.5 inlines it as audio_config)
WHISPER_TURBO = {"model_type": "whisper", "d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20,
                 "encoder_ffn_dim": 5120, "decoder_layers": 4, "decoder_attention_heads": 20, "decoder_ffn_dim": 5120,
                 "num_mel_bins": 128, "max_source_positions": 1500, "max_target_positions": 448,
                 "vocab_size": 51866, "activation_function": "gelu", "scale_embedding": False}

# fixie-ai/ultravox-v0_5-llama-3_2-1b config.json (the fields a pinned reference script checks: text_model_id,
# hidden_size 4096, stack_factor 8, swiglu, projector_ln_mid, vocab 128256, audio_model_id null, whisper audio_config)
ULTRAVOX_V05_1B = {"architectures": ["UltravoxModel"], "model_type": "ultravox", "audio_config": WHISPER_TURBO,
                   "audio_model_id": None, "text_model_id": "meta-llama/Llama-3.2-1B-Instruct", "hidden_size": 4096,
                   "stack_factor": 8, "norm_init": 0.4, "projector_act": "swiglu", "projector_ln_mid": True,
                   "vocab_size": 128256, "ignore_index": -100, "torch_dtype": "bfloat16",
                   "auto_map": {"AutoConfig": "ultravox_config.UltravoxConfig",
                                "AutoModel": "ultravox_model.UltravoxModel"}}

_LLAMA3 = {"model_type": "llama", "vocab_size": 128256, "num_key_value_heads": 8, "rope_theta": 500000.0,
           "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "hidden_act": "silu",
           "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
# the language models the v0.5 checkpoints name by text_model_id (their config.json shape fields)
LLAMA_32_1B = dict(_LLAMA3, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                   head_dim=64, rope_scaling=dict(_LLAMA3["rope_scaling"], factor=32.0), tie_word_embeddings=True)
LLAMA_31_8B = dict(_LLAMA3, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                   tie_word_embeddings=False)
LLAMA_33_70B = dict(_LLAMA3, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                    tie_word_embeddings=False)

WHOLE = {
    "v0_5-llama-3_2-1b": dict(ULTRAVOX_V05_1B, text_config=LLAMA_32_1B),
    "v0_5-llama-3_1-8b": dict(ULTRAVOX_V05_1B, text_model_id="meta-llama/Llama-3.1-8B-Instruct",
                              text_config=LLAMA_31_8B),
    "v0_5-llama-3_3-70b": dict(ULTRAVOX_V05_1B, text_model_id="meta-llama/Llama-3.3-70B-Instruct",
                               text_config=LLAMA_33_70B),
}


def whisper_encoder_count(d, layers, ffn, mels, positions):
    conv = d * mels * 3 + d + d * d * 3 + d
    return conv + positions * d + layers * whisper_layer_count(d, ffn) + 2 * d


def whisper_layer_count(d, ffn):
    return 4 * d * d + 3 * d + 4 * d + 2 * ffn * d + ffn + d


def projector_count(d, stack, hidden, text_hidden, ln_mid=True):
    dim_in, mid = d * stack, hidden // 2  # swiglu halves linear_1's output
    return dim_in + dim_in * hidden + mid * text_hidden + (mid if ln_mid else text_hidden)


def test_whisper_encoder_count_is_transformers():
    torch = pytest.importorskip("torch", reason="the oracle needs torch")
    transformers = pytest.importorskip("transformers", reason="the oracle needs transformers")
    cfg = {k: v for k, v in WHISPER_TURBO.items() if k != "model_type"}
    with torch.device("meta"):
        enc = transformers.WhisperModel(transformers.WhisperConfig(**cfg)).encoder
    n = sum(p.numel() for p in enc.parameters())
    assert n == whisper_encoder_count(1280, 32, 5120, 128, 1500) == 636_968_960


@pytest.mark.parametrize("name,text_hidden,own", [("v0_5-llama-3_2-1b", 2048, 683_118_592),
                                                  ("v0_5-llama-3_1-8b", 4096, 687_312_896),
                                                  ("v0_5-llama-3_3-70b", 8192, 695_701_504)])
def test_ultravox_v0_5_whole(name, text_hidden, own):
    cfg = WHOLE[name]
    p = count_params(parse_config(cfg))
    checkpoint = whisper_encoder_count(1280, 32, 5120, 128, 1500) + projector_count(1280, 8, 4096, text_hidden)
    assert p.audio == checkpoint == own  # what the checkpoint's own safetensors hold: tower + projector
    if name != "v0_5-llama-3_3-70b":  # (70B on meta is slow; its text part is the Llama rows' business)
        assert p.total - p.audio == hf_param_count(cfg["text_config"])
    text = {"v0_5-llama-3_2-1b": 1_235_814_400, "v0_5-llama-3_1-8b": 8_030_261_248,
            "v0_5-llama-3_3-70b": 70_553_706_496}[name]
    assert p.total == own + text
    # the decode trace and KV are the language model's
    spec = parse_config(cfg)
    layers, kv = {"v0_5-llama-3_2-1b": (16, 64), "v0_5-llama-3_1-8b": (32, 128), "v0_5-llama-3_3-70b": (80, 128)}[name]
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == layers * 8 * kv * 2 * 2


def test_ultravox_published_config_without_text_config_is_refused_by_id():
    with pytest.raises(UnsupportedModelError, match="meta-llama/Llama-3.2-1B-Instruct"):
        parse_config(ULTRAVOX_V05_1B)
    with pytest.raises(UnsupportedModelError, match="openai/whisper-medium"):
        parse_config(dict(WHOLE["v0_5-llama-3_1-8b"], audio_config=None, audio_model_id="openai/whisper-medium"))


def test_ultravox_v0_4_ln_post_and_transformer_projector():
    """v0.4.1 and before: RMSNorm after linear_2 (ln_post, text-hidden wide); a transformer projector (vLLM's
    UltravoxTransformerProjector) with num_projector_layers Whisper layers; whisper-medium's class-default fields."""
    medium = {"model_type": "whisper", "d_model": 1024, "encoder_layers": 24, "encoder_attention_heads": 16,
              "encoder_ffn_dim": 4096}
    cfg = dict(WHOLE["v0_5-llama-3_1-8b"], audio_config=medium, projector_ln_mid=False)
    p = count_params(parse_config(cfg))
    assert p.audio == whisper_encoder_count(1024, 24, 4096, 80, 1500) + projector_count(1024, 8, 4096, 4096, False)
    tiny = {"model_type": "ultravox", "stack_factor": 2, "num_projector_layers": 2,
            "audio_config": {"d_model": 32, "encoder_layers": 1, "encoder_attention_heads": 4, "encoder_ffn_dim": 64,
                             "num_mel_bins": 16, "max_source_positions": 10},
            "text_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                            "num_attention_heads": 4, "vocab_size": 100}}
    proj = 64 + (64 * 32 + 32) + 10 * 32 + 2 * whisper_layer_count(32, 64) + 32 + (32 * 64 + 64)
    assert count_params(parse_config(tiny)).audio == whisper_encoder_count(32, 1, 64, 16, 10) + proj


def test_ultravox_bad_configs():
    with pytest.raises(UnsupportedModelError, match="wav2vec2"):
        parse_config(dict(WHOLE["v0_5-llama-3_1-8b"], audio_config={"model_type": "wav2vec2"}))
    with pytest.raises(ConfigError, match="hidden_size"):
        parse_config(dict(WHOLE["v0_5-llama-3_1-8b"], hidden_size=4095))
    with pytest.raises(ConfigError, match="audio_config"):
        parse_config(dict(WHOLE["v0_5-llama-3_1-8b"], audio_config=[1]))


def test_ultravox_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(WHOLE["v0_5-llama-3_1-8b"]))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_717_574_144
    bare = tmp_path / "published.json"
    bare.write_text(json.dumps(ULTRAVOX_V05_1B))
    run("analyze", str(bare)).assert_error("text_model_id", "meta-llama/Llama-3.2-1B-Instruct")
