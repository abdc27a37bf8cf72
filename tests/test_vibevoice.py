"""VibeVoice TTS (``vibevoice``) counted whole: the Qwen2 language model and lm_head, the acoustic tokenizer's encoder
and decoder, the semantic encoder, the two connectors and the diffusion head (kind ``audio``), checked against a hand
count written from modeling_vibevoice.py / modeling_vibevoice_acoustic_tokenizer.py module shapes, against
transformers' VibeVoiceForConditionalGeneration on the meta device and against the published checkpoint sizes; the
decode trace and K/V stay the language model's, with a caveat naming what generate() runs beside it."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import vibevoice
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

_TOKENIZER = {"channels": 1, "depths": [3, 3, 3, 3, 3, 3, 8], "downsampling_ratios": [2, 2, 4, 5, 5, 8],
              "ffn_expansion": 4, "hidden_act": "gelu", "initializer_range": 0.01, "kernel_size": 7,
              "layer_scale_init_value": 1e-6, "num_filters": 32, "rms_norm_eps": 1e-5, "vae_std": 0.625,
              "weight_init_value": 0.01}

# vibevoice/VibeVoice-1.5B-hf config.json, the converted checkpoint (transformers 5.13.0.dev0), as vllm-omni's
# tests/.../test_vibevoice_config.py quotes its structural fields: the diffusion-head fields still flat at the top
# level (intermediate_size 4608 = head_ffn_ratio 3.0 x 1536, num_head_layers 4: what transformers 5.24 builds from
# its diffusion_head_config defaults)
VIBEVOICE_15B_HF = {
    "architectures": ["VibeVoiceForConditionalGeneration"], "model_type": "vibevoice", "audio_bos_token_id": 151652,
    "audio_eos_token_id": 151653, "audio_token_id": 151654,
    "audio_config": dict(_TOKENIZER, hidden_size=64, model_type="vibevoice_acoustic_tokenizer"),
    "ddpm_beta_schedule": "squaredcos_cap_v2", "ddpm_num_inference_steps": 20, "ddpm_num_steps": 1000,
    "diffusion_max_period": 10000, "dtype": "bfloat16", "eos_token_id": 151643, "frequency_embedding_size": 256,
    "hidden_act": "silu", "intermediate_size": 4608, "mlp_bias": False, "num_head_layers": 4, "pad_token_id": 151643,
    "prediction_type": "v_prediction", "rms_norm_eps": 1e-5,
    "semantic_model_config": dict(_TOKENIZER, hidden_size=128, model_type="vibevoice_acoustic_tokenizer_encoder"),
    "text_config": {"attention_dropout": 0.0, "dtype": "bfloat16", "hidden_act": "silu", "hidden_size": 1536,
                    "initializer_range": 0.02, "intermediate_size": 8960, "max_position_embeddings": 65536,
                    "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 12,
                    "num_hidden_layers": 28, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
                    "rope_parameters": {"rope_theta": 1_000_000.0, "rope_type": "default"}, "sliding_window": None,
                    "tie_word_embeddings": True, "use_cache": True, "use_sliding_window": False,
                    "vocab_size": 151936},
    "tie_word_embeddings": True, "transformers_version": "5.13.0.dev0", "vocab_size": 151936,
}

# vibevoice/VibeVoice-7B-hf: transformers' convert_vibevoice_to_hf.py from VibeVoice-Large, whose decoder_config is
# Qwen2.5-7B's (hidden 3584, 28 layers, 28 / 4 heads, intermediate 18944, vocab 152064, untied; as the
# VibeVoice-7B-derived KugelAudio config.json quotes it) and whose diffusion head is head_layers 4, head_ffn_ratio
# 3.0: intermediate_size 3.0 x 3584 = 10752, under diffusion_head_config as transformers 5.24 reads it
VIBEVOICE_7B_HF = {
    "architectures": ["VibeVoiceForConditionalGeneration"], "model_type": "vibevoice", "dtype": "bfloat16",
    "audio_config": dict(_TOKENIZER, hidden_size=64, model_type="vibevoice_acoustic_tokenizer"),
    "semantic_model_config": dict(_TOKENIZER, hidden_size=128, model_type="vibevoice_acoustic_tokenizer_encoder"),
    "diffusion_head_config": {"model_type": "vibevoice_diffusion", "num_hidden_layers": 4, "intermediate_size": 10752,
                              "frequency_embedding_size": 256, "mlp_bias": False, "rms_norm_eps": 1e-5},
    "text_config": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
                    "max_position_embeddings": 32768, "num_attention_heads": 28, "num_hidden_layers": 28,
                    "num_key_value_heads": 4, "rms_norm_eps": 1e-6,
                    "rope_parameters": {"rope_theta": 1_000_000.0, "rope_type": "default"},
                    "tie_word_embeddings": False, "vocab_size": 152064},
}

TINY_TEXT = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256}
TINY = {"model_type": "vibevoice", "text_config": TINY_TEXT,
        "audio_config": {"hidden_size": 16, "num_filters": 8, "downsampling_ratios": [2, 3], "depths": [1, 2, 1],
                         "kernel_size": 5, "ffn_expansion": 2, "channels": 2},
        "semantic_model_config": {"hidden_size": 8, "num_filters": 8, "downsampling_ratios": [2], "depths": [1, 1]},
        "diffusion_head_config": {"intermediate_size": 96, "num_hidden_layers": 2, "frequency_embedding_size": 32,
                                  "mlp_bias": True}}


def _meta(cfg: dict) -> int:
    return unique_param_count(hf_class_model(cfg, "VibeVoiceForConditionalGeneration"))


def _same(cfg: dict) -> int:
    total = count_params(parse_config(copy.deepcopy(cfg))).total
    assert total == _meta(cfg)
    return total


def _convnext(c, k, e):
    return 4 * c + (e * c * c + e * c) + (c * e * c + c) + (c * k + c)  # norms and scales, FFN, depthwise conv


def encoder_hand(hidden, nf=32, ratios=(2, 2, 4, 5, 5, 8), depths=(3, 3, 3, 3, 3, 3, 8), k=7, e=4, ch=1):
    total = nf * ch * k + nf + depths[0] * _convnext(nf, k, e)
    for s, r in enumerate(ratios):
        c_in, c = nf * 2 ** s, nf * 2 ** (s + 1)
        total += c * c_in * 2 * r + c + depths[s + 1] * _convnext(c, k, e)
    return total + hidden * nf * 2 ** len(ratios) * k + hidden


def decoder_hand(hidden, nf=32, ratios=(2, 2, 4, 5, 5, 8), depths=(3, 3, 3, 3, 3, 3, 8), k=7, e=4, ch=1):
    d, r, n = depths[::-1], ratios[::-1], len(depths)
    c0 = nf * 2 ** (n - 1)
    total = c0 * hidden * k + c0 + d[0] * _convnext(c0, k, e)
    for s in range(len(r)):
        c_in, c = nf * 2 ** (n - 1 - s), nf * 2 ** (n - 2 - s)
        total += c_in * c * 2 * r[s] + c + d[s + 1] * _convnext(c, k, e)  # ConvTranspose1d (in, out, 2 x ratio)
    return total + ch * nf * k + ch


def diffusion_hand(h, latent, inter, layers=4, freq=256, bias=False):
    mlp = 3 * h * inter + (2 * inter + h if bias else 0)
    return latent * h + h * h + freq * h + h * h + layers * (mlp + h + 3 * h * h) + 2 * h * h + h * latent


def connector_hand(n_in, h):
    return n_in * h + h + h + h * h + h


def qwen2_hand(h, layers, heads, kv, inter, vocab, tied):
    hd = h // heads
    layer = (h * h + h) + 2 * (h * kv * hd + kv * hd) + h * h + 3 * h * inter + 2 * h  # biased q / k / v
    return vocab * h + layers * layer + h + (0 if tied else vocab * h)


def test_class_defaults_match_the_installed_transformers():
    pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.models.vibevoice.configuration_vibevoice import VibeVoiceDiffusionHeadConfig

    c = VibeVoiceDiffusionHeadConfig()
    for key, value in vibevoice.DIFFUSION_DEFAULTS.items():
        assert getattr(c, key) == value, key


def test_vibevoice_15b_hf():
    spec = parse_config(copy.deepcopy(VIBEVOICE_15B_HF))
    p = count_params(spec)
    enc, dec, sem = encoder_hand(64), decoder_hand(64), encoder_hand(128)
    assert (enc, dec, sem) == (343_696_032, 343_695_969, 344_613_600)  # the original checkpoint's decoder too
    head = diffusion_hand(1536, 64, 4608)
    conn = connector_hand(64, 1536) + connector_hand(128, 1536)
    assert (head, conn) == (123_279_360, 5_022_720)
    lm = qwen2_hand(1536, 28, 12, 2, 8960, 151936, tied=True)
    assert p.audio == enc + dec + sem + head + conn + 2 == 1_160_307_683
    # microsoft/VibeVoice-1.5B: 2704.0 M parameters in bf16 (5.41 GB)
    assert p.total == lm + p.audio == 2_704_021_987 == _same(VIBEVOICE_15B_HF)
    assert p.lm_head == 0 and p.vision == 0
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 128 * 2 * 2 == 28_672
    assert len(spec.layers) == 28 and spec.model_type == "qwen2"
    assert any("classifier-free-guidance negative branch" in c and "diffusion head" in c for c in spec.caveats)


def test_vibevoice_7b_hf():
    spec = parse_config(copy.deepcopy(VIBEVOICE_7B_HF))
    p = count_params(spec)
    towers = encoder_hand(64) + decoder_hand(64) + encoder_hand(128) + diffusion_hand(3584, 64, 10752) + \
        connector_hand(64, 3584) + connector_hand(128, 3584) + 2
    lm = qwen2_hand(3584, 28, 28, 4, 18944, 152064, tied=False)
    assert p.audio == towers == 1_727_738_851
    # VibeVoice-Large: 18.7 GB in bf16
    assert p.total == lm + towers == 9_343_355_363 == _same(VIBEVOICE_7B_HF)
    assert p.lm_head == 152064 * 3584
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 4 * 128 * 2 * 2 == 57_344


def test_small_variants_and_tie_flags():
    """A tiny model (two channels, a biased diffusion MLP, uneven depths), the class defaults, and each tie-flag
    combination: text_config's flag alone ties (VibeVoiceConfig.__post_init__)."""
    p = count_params(parse_config(copy.deepcopy(TINY)))
    a = dict(nf=8, ratios=(2, 3), depths=(1, 2, 1), k=5, e=2, ch=2)
    assert p.audio == encoder_hand(16, **a) + decoder_hand(16, **a) + \
        encoder_hand(8, nf=8, ratios=(2,), depths=(1, 1)) + diffusion_hand(64, 16, 96, 2, 32, bias=True) + \
        connector_hand(16, 64) + connector_hand(8, 64) + 2
    _same(TINY)
    _same({"model_type": "vibevoice"})
    _same({"model_type": "vibevoice", "text_config": TINY_TEXT})  # the semantic encoder's hidden 128 (init_kwargs)
    for top in (None, True, False):
        for txt in (None, True, False):
            text = dict(TINY_TEXT) if txt is None else dict(TINY_TEXT, tie_word_embeddings=txt)
            cfg = dict(TINY, text_config=text)
            if top is not None:
                cfg["tie_word_embeddings"] = top
            _same(cfg)


def test_bad_configs():
    with pytest.raises(UnsupportedModelError, match="num_head_layers"):
        parse_config(dict(VIBEVOICE_15B_HF, num_head_layers=6))
    with pytest.raises(UnsupportedModelError, match="intermediate_size"):  # the 7B's flat field of the old format
        parse_config(dict(VIBEVOICE_15B_HF, intermediate_size=10752))
    with pytest.raises(ConfigError, match="frequency_embedding_size"):
        parse_config(dict(TINY, diffusion_head_config={"frequency_embedding_size": 33}))
    with pytest.raises(ConfigError, match="depths"):
        parse_config(dict(TINY, audio_config=dict(TINY["audio_config"], depths=[1, 1])))
    with pytest.raises(ConfigError, match="audio_config"):
        parse_config(dict(TINY, audio_config=[1]))
    with pytest.raises(UnsupportedModelError, match="vibevoice_acoustic_tokenizer"):
        parse_config(dict(TINY, audio_config={"model_type": "dac"}))
    with pytest.raises(UnsupportedModelError, match="semantic_model_config"):
        parse_config(dict(TINY, semantic_model_config={"model_type": "hubert"}))
    with pytest.raises(UnsupportedModelError, match="qwen2"):
        parse_config(dict(TINY, text_config=dict(TINY_TEXT, model_type="llama")))
    with pytest.raises(UnsupportedModelError, match="inside a whole VibeVoice config"):
        parse_config(dict(TINY_TEXT, model_type="vibevoice_text"))


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(VIBEVOICE_7B_HF))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 9_343_355_363 and r.json["params"]["audio"] == 1_727_738_851
    path.write_text(json.dumps(dict(VIBEVOICE_15B_HF, num_head_layers=6)))
    run("analyze", path).assert_error("num_head_layers", "diffusion_head_config")


def test_verify_runs_the_language_model(tmp_path):
    """verify builds the language model (the TTS modules take no part in its decode step): its self-checks pass."""
    pytest.importorskip("torch", reason="verify needs torch")
    out = verify_self_checks(tmp_path, TINY)
    assert out["model"]["num_layers"] == 2
