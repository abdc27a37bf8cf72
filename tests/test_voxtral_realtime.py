"""Voxtral Realtime (``voxtral_realtime``, VoxtralRealtimeForConditionalGeneration) and its language model
(``voxtral_realtime_text``): the whole checkpoint (causal streaming audio encoder, the two-Linear projector, the
Mistral language model with its per-layer ada_rms_norm, the tied lm_head), checked against transformers on the meta
device, a hand count written from modeling_voxtral_realtime.py's module shapes, and the published figures; the
per-step ada_rms_norm ops of the decode trace (vLLM's MistralDecoderLayer); verify refusing it."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_class_model, unique_param_count

# mistralai/Voxtral-Mini-4B-Realtime-2602 config.json (transformers format), as quoted field for field by a Rust
# port's test fixture (REALTIME_HF_CONFIG_JSON); params.json's Mistral-format fields say the same shapes (encoder dim
# 1280, 32 layers, 32 heads of 64, hidden_dim 5120, sliding_window 750; decoder dim 3072, 26 layers, 32 / 8 heads of
# 128, hidden_dim 9216, vocab 131072, tied; ada_rms_norm_t_cond_dim 32; downsample_factor 4)
REALTIME = {
    "architectures": ["VoxtralRealtimeForConditionalGeneration"],
    "audio_config": {"head_dim": 64, "hidden_size": 1280, "intermediate_size": 5120,
                     "model_type": "voxtral_realtime_encoder", "num_attention_heads": 32, "num_hidden_layers": 32,
                     "num_key_value_heads": 32, "num_mel_bins": 128, "rms_norm_eps": 1e-05, "sliding_window": 750,
                     "vocab_size": 131072},
    "audio_length_per_tok": 8, "default_num_delay_tokens": 6, "downsample_factor": 4, "dtype": "bfloat16",
    "hidden_size": 3072, "model_type": "voxtral_realtime",
    "text_config": {"bos_token_id": 1, "eos_token_id": 2, "head_dim": 128, "hidden_size": 3072,
                    "intermediate_size": 9216, "max_position_embeddings": 131072,
                    "model_type": "voxtral_realtime_text", "num_attention_heads": 32, "num_hidden_layers": 26,
                    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "sliding_window": 8192,
                    "tie_word_embeddings": True, "use_cache": True, "vocab_size": 131072}}

# a small config in the shape of transformers' own tests (tests/models/voxtral_realtime): the encoder's
# num_key_value_heads (an alias of num_attention_heads) and encoder_layers (of num_hidden_layers) set those fields
TINY = {"model_type": "voxtral_realtime", "downsample_factor": 2, "tie_word_embeddings": False,
        "text_config": {"model_type": "voxtral_realtime_text", "vocab_size": 99, "hidden_size": 32,
                        "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 8},
        "audio_config": {"model_type": "voxtral_realtime_encoder", "hidden_size": 16, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "intermediate_size": 64, "encoder_layers": 2, "num_mel_bins": 80,
                         "head_dim": 4}}


def hand_count(*, d, enc_layers, enc_heads, enc_head_dim, enc_ffn, mels, ds, hidden, layers, heads, kv_heads,
               head_dim, inter, vocab, tied):
    """From modeling_voxtral_realtime.py's modules: VoxtralRealtimeEncoder, VoxtralRealtimeMultiModalProjector,
    VoxtralRealtimeTextModel (Mistral + ada_rms_norm), lm_head."""
    w = enc_heads * enc_head_dim
    conv = d * mels * 3 + d + d * d * 3 + d  # embedder.conv1 / conv2, biased
    attn = (w * d + w) + w * d + (w * d + w) + (d * w + d)  # q (bias), k (no bias), v (bias), o (bias)
    block = attn + 2 * d + 2 * enc_ffn * d + d * enc_ffn + d  # two RMSNorms; gate / up bias-free, down biased
    audio = conv + enc_layers * block + d  # final norm
    projector = d * ds * hidden + hidden * hidden
    text_attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    ada = 32 * hidden + hidden * 32  # ada_rms_norm.linear1 / linear2
    text_layer = text_attn + 3 * hidden * inter + 2 * hidden + ada
    text = vocab * hidden + layers * text_layer + hidden + (0 if tied else vocab * hidden)
    return audio, projector, text


def _meta(cfg: dict):
    return hf_class_model(cfg, "VoxtralRealtimeForConditionalGeneration")


def test_released_checkpoint_whole():
    p = count_params(parse_config(REALTIME))
    audio, projector, text = hand_count(d=1280, enc_layers=32, enc_heads=32, enc_head_dim=64, enc_ffn=5120, mels=128,
                                        ds=4, hidden=3072, layers=26, heads=32, kv_heads=8, head_dim=128, inter=9216,
                                        vocab=131072, tied=True)
    assert (audio, projector, text) == (970_395_392, 25_165_824, 3_434_118_144)  # the card: "≈3.4B Language Model"
    assert p.total == audio + projector + text == 4_429_679_360  # the card: 4B
    # consolidated.safetensors: 711 BF16 tensors, 8.3 GB: 4,429,679,360 x 2 bytes = 8.25 GiB
    assert round(p.total * 2 / 2**30, 2) == 8.25
    assert p.audio == audio + projector and p.vision == 0
    assert p.lm_head == 0 and p.embedding == 131072 * 3072  # tied
    assert p.mlp == 26 * (3 * 3072 * 9216 + 2 * 32 * 3072)  # the ada_rms_norm with the FFN it scales
    model = _meta(REALTIME)
    assert p.total == unique_param_count(model)
    towers = model.model.audio_tower, model.model.multi_modal_projector
    assert p.audio == sum(unique_param_count(m) for m in towers)


def test_class_defaults_equal_the_released_shape():
    default = {"model_type": "voxtral_realtime"}
    p = count_params(parse_config(default))
    assert p.total == 4_429_679_360 == unique_param_count(_meta(default))
    # the laid-under rope_theta 1e6 yields to a given rope_parameters, as transformers' config keeps it
    assert parse_config(REALTIME).layers[0].mixer.rope_theta == 1e6
    given = dict(REALTIME, text_config=dict(REALTIME["text_config"],
                                            rope_parameters={"rope_type": "default", "rope_theta": 2e6}))
    assert parse_config(given).layers[0].mixer.rope_theta == 2e6
    assert _meta(given).config.text_config.rope_parameters["rope_theta"] == 2e6


def test_kv_is_the_language_models_sliding_window_cache():
    """26 layers x 8 KV heads x 128 x (K, V) x 2 bytes a token, every layer windowed at 8192 (vLLM's Mistral)."""
    spec = parse_config(REALTIME)
    kv = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 26 * 8 * 128 * 2 * 2 == 106_496
    assert {layer.mixer.window for layer in spec.layers} == {8192}
    assert kv.bytes_per_sequence(20_000) == 8192 * 106_496  # the window caps what a sequence holds
    assert any("encoder's K/V" in c and "1,048,576 bytes" in c for c in spec.caveats)


def test_tiny_config_aliases_and_untied_head():
    p = count_params(parse_config(TINY))
    audio, projector, text = hand_count(d=16, enc_layers=2, enc_heads=2, enc_head_dim=4, enc_ffn=64, mels=80, ds=2,
                                        hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8, inter=37, vocab=99,
                                        tied=False)
    assert p.total == audio + projector + text == 37_872 == unique_param_count(_meta(TINY))
    assert p.audio == audio + projector == 14_032
    # the wrapper's flag ties, text_config's is not read
    flagged = dict(TINY, tie_word_embeddings=True, text_config=dict(TINY["text_config"], tie_word_embeddings=False))
    assert count_params(parse_config(flagged)).total == 37_872 - 99 * 32 == unique_param_count(_meta(flagged))


def test_decode_trace_has_the_per_step_ada_norm():
    """vLLM computes each layer's gain 1 + ada_rms_norm(t_cond) every forward from one (1, hidden) vector, whatever
    the batch: 2 x 32 x hidden FLOPs and weights per linear; the scale reads every token's normed FFN input."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(REALTIME)
    fmt, _ = weight_format(spec, "bf16")
    h = 3072
    for batch in (1, 8):
        ops = [o for o in step_ops(spec, fmt, get_dtype("bf16"), batch=batch, cached_tokens=10) if o.layer == 0]
        ada = {o.name: o for o in ops if o.name.startswith("ada_rms_norm.")}
        assert list(ada) == ["ada_rms_norm.linear1", "ada_rms_norm.act", "ada_rms_norm.linear2", "ada_rms_norm.scale"]
        assert ada["ada_rms_norm.linear1"].flops == ada["ada_rms_norm.linear2"].flops == 2 * 32 * h
        assert ada["ada_rms_norm.linear1"].weight_bytes == 32 * h * 2
        assert ada["ada_rms_norm.scale"].act_read_bytes == (batch * h + h) * 2
        names = [o.name for o in ops]
        assert names.index("post_attention_layernorm") < names.index("ada_rms_norm.linear1") < names.index("gate_proj")


def test_bad_configs():
    with pytest.raises(ConfigError, match="voxtral_realtime_text"):
        parse_config(dict(REALTIME, text_config=dict(REALTIME["text_config"], model_type="mistral")))
    with pytest.raises(ConfigError, match="voxtral_realtime_encoder"):
        parse_config(dict(REALTIME, audio_config=dict(REALTIME["audio_config"], model_type="voxtral_encoder")))
    with pytest.raises(ConfigError, match="audio_config"):
        parse_config(dict(REALTIME, audio_config=[1]))
    with pytest.raises(ConfigError, match="tie_word_embeddings"):
        parse_config(dict(REALTIME, tie_word_embeddings="yes"))
    with pytest.raises(ConfigError, match="downsample_factor"):
        parse_config(dict(REALTIME, downsample_factor=0))


def test_cli_analyze_and_verify_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(REALTIME))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 4_429_679_360
    assert r.json["params"]["audio"] == 995_561_216
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(REALTIME, audio_config=dict(REALTIME["audio_config"], num_hidden_layers=0))))
    run("analyze", str(bad)).assert_error("audio_config", "num_hidden_layers")
    run("verify", str(path)).assert_error("verify does not support Voxtral Realtime", "ada_rms_norm")


def test_the_language_model_alone_is_refused_naming_the_wrapper(tmp_path):
    """transformers builds voxtral_realtime_text only as VoxtralRealtimeTextModel inside the wrapper (no lm_head, no
    causal-LM class: the head and its tie are the wrapper's), so a config of it alone is refused by name rather than
    given a guessed head (before: 7,250,120,704 with an untied lm_head for the class defaults)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(REALTIME["text_config"]))
    run("analyze", str(path)).assert_error("'voxtral_realtime_text'", "VoxtralRealtimeForConditionalGeneration",
                                           "model_type voxtral_realtime")
