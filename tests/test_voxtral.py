"""Voxtral (``voxtral``, VoxtralForConditionalGeneration): the whole checkpoint (Whisper-style audio tower, the
two-Linear projector, the Llama language model and its untied lm_head), checked against transformers on the meta
device, against a hand count written from modeling_voxtral.py's module shapes, and against the model cards' figures."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import unique_param_count

_AUDIO = {"activation_dropout": 0.0, "activation_function": "gelu", "attention_dropout": 0.0, "dropout": 0.0,
          "head_dim": 64, "hidden_size": 1280, "initializer_range": 0.02, "intermediate_size": 5120, "layerdrop": 0.0,
          "max_source_positions": 1500, "model_type": "voxtral_encoder", "num_attention_heads": 20,
          "num_hidden_layers": 32, "num_key_value_heads": 20, "num_mel_bins": 128, "scale_embedding": False,
          "vocab_size": 51866}

# mistralai/Voxtral-Mini-3B-2507 config.json (the released file; the same schema is quoted by conversion scripts)
VOXTRAL_MINI = {
    "architectures": ["VoxtralForConditionalGeneration"], "audio_config": _AUDIO, "audio_token_id": 24,
    "hidden_size": 3072, "model_type": "voxtral", "projector_hidden_act": "gelu",
    "text_config": {"attention_bias": False, "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu",
                    "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
                    "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
                    "num_attention_heads": 32, "num_hidden_layers": 30, "num_key_value_heads": 8, "pretraining_tp": 1,
                    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 100000000.0, "use_cache": True,
                    "vocab_size": 131072},
    "torch_dtype": "bfloat16"}

# mistralai/Voxtral-Small-24B-2507: the same audio block; text_config is Mistral-Small-3.1-24B's decoder (hidden 5120,
# 40 layers, 32 heads / 8 KV heads of 128, intermediate 32768, vocab 131072, rope_theta 1e8)
VOXTRAL_SMALL = dict(VOXTRAL_MINI, hidden_size=5120, text_config=dict(
    VOXTRAL_MINI["text_config"], hidden_size=5120, intermediate_size=32768, num_hidden_layers=40))


def hand_count(audio_layers=32, d=1280, ffn=5120, mels=128, positions=1500, *, hidden, layers, heads, kv_heads,
               head_dim, inter, vocab):
    """From modeling_voxtral.py's modules: VoxtralEncoder, VoxtralMultiModalProjector, LlamaModel, lm_head."""
    conv = d * mels * 3 + d + d * d * 3 + d
    block = 4 * d * d + 3 * d + 2 * 2 * d + ffn * d + ffn + d * ffn + d
    audio = conv + positions * d + audio_layers * block + 2 * d
    projector = ffn * hidden + hidden * hidden
    attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    text_layer = attn + 3 * hidden * inter + 2 * hidden
    text = vocab * hidden + layers * text_layer + hidden + vocab * hidden  # embedding, layers, norm, untied lm_head
    return audio, projector, text


def _meta_count(cfg: dict) -> int:
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch")
    transformers = pytest.importorskip("transformers", reason="the transformers oracle needs transformers")
    d = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures", "torch_dtype")}
    config = transformers.VoxtralConfig(**d)
    with torch.device("meta"):
        model = transformers.VoxtralForConditionalGeneration(config)
    return unique_param_count(model)


def test_voxtral_mini_whole_checkpoint():
    p = count_params(parse_config(VOXTRAL_MINI))
    audio, projector, text = hand_count(hidden=3072, layers=30, heads=32, kv_heads=8, head_dim=128, inter=8192,
                                        vocab=131072)
    assert (audio, projector) == (636_968_960, 25_165_824)
    assert p.total == audio + projector + text == 4_676_271_104  # the model card: 4.68B
    assert p.audio == audio + projector and p.vision == 0
    assert p.lm_head == p.embedding == 131072 * 3072  # untied
    assert p.total == _meta_count(VOXTRAL_MINI)
    # the decode trace is the language model's: 30 layers x 8 KV heads x 128 x (K, V) x 2 bytes
    assert kv_cache(parse_config(VOXTRAL_MINI), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 30 * 8 * 128 * 2 * 2


def test_voxtral_small_whole_checkpoint():
    p = count_params(parse_config(VOXTRAL_SMALL))
    audio, projector, text = hand_count(hidden=5120, layers=40, heads=32, kv_heads=8, head_dim=128, inter=32768,
                                        vocab=131072)
    assert p.total == audio + projector + text == 24_261_800_960  # the model card: 24.3B
    assert round(p.total / 1e8) == 243
    assert p.total == _meta_count(VOXTRAL_SMALL)
    assert kv_cache(parse_config(VOXTRAL_SMALL), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 40 * 8 * 128 * 2 * 2


def test_voxtral_class_defaults_and_text_defaults_laid_under():
    """VoxtralConfig() (no sub-configs): Ministral-3B's shape and the 32-layer encoder; a partial text_config keeps
    VoxtralConfig's own defaults (head_dim 128, vocab 131072 ...), not Llama's; lm_head untied even when flagged."""
    default = {"model_type": "voxtral"}
    assert count_params(parse_config(default)).total == 4_676_271_104 == _meta_count(default)
    tiny = {"model_type": "voxtral", "tie_word_embeddings": True,
            "text_config": {"num_hidden_layers": 2, "hidden_size": 256, "intermediate_size": 512,
                            "tie_word_embeddings": True},
            "audio_config": {"d_model": 64, "encoder_layers": 2, "encoder_attention_heads": 4, "encoder_ffn_dim": 256,
                             "num_mel_bins": 16, "max_source_positions": 30}}
    audio, projector, text = hand_count(2, 64, 256, 16, 30, hidden=256, layers=2, heads=32, kv_heads=8, head_dim=128,
                                        inter=512, vocab=131072)
    p = count_params(parse_config(tiny))
    assert p.total == audio + projector + text == _meta_count(tiny)


def test_voxtral_bad_audio_configs():
    with pytest.raises(ConfigError, match="audio_config"):
        parse_config(dict(VOXTRAL_MINI, audio_config=[1]))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(VOXTRAL_MINI, audio_config=dict(_AUDIO, num_attention_heads=7)))
    with pytest.raises(ConfigError, match="voxtral_encoder"):
        parse_config(dict(VOXTRAL_MINI, audio_config=dict(_AUDIO, model_type="whisper")))


def test_voxtral_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(VOXTRAL_MINI))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 4_676_271_104
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(VOXTRAL_MINI, audio_config=dict(_AUDIO, num_hidden_layers=0))))
    run("analyze", str(bad)).assert_error("audio_config", "num_hidden_layers")

