"""Qwen2.5-Omni whole (``qwen2_5_omni``): the thinker (Qwen2 language model, Qwen2.5-VL vision tower, Whisper-style
audio encoder), the talker and token2wav (DiT + BigVGAN), checked against a hand count written from
modeling_qwen2_5_omni.py's module shapes, against transformers' Qwen2_5OmniForConditionalGeneration on the meta device
and against the Qwen2.5-Omni-7B checkpoint's safetensors total_size; the decode trace and K/V stay the thinker language
model's, with a caveat giving what vLLM (thinker only) does not load."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import qwen25_omni
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

# Qwen/Qwen2.5-Omni-7B config.json (revision ae9e1690543ffd5c0221dc27f79834d0294cba00, transformers 4.50.0.dev0): the
# fields that size its weights. No verbatim copy of the file was at hand: the thinker's, the talker's hidden / layers /
# heads / vocab and the token2wav fields below are those a fail-closed inspection of that snapshot checks exactly
# (vokra's qwen2_5_omni_7b_inspect.py validate_config); the talker's embedding_size 3584, head_dim 128 and
# intermediate_size 18944 are as its fine-tunes' saved configs carry them (ACE-Step/acestep-captioner,
# Duofu/EmotionThinker: "_name_or_path": "Qwen2.5-Omni-7B/talker"); the thinker's vision intermediate_size 3420 and
# audio encoder_ffn_dim 5120 are Qwen2.5-VL's / Whisper-large-v3's (the thinker test's figures). The DiT keeps the
# original code's names (dim, depth, heads), which transformers 5.24 does not read (its defaults are the same values).
OMNI_7B = {
    "architectures": ["Qwen2_5OmniModel"], "model_type": "qwen2_5_omni", "enable_audio_output": True,
    "enable_talker": True, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "thinker_config": {
        "model_type": "qwen2_5_omni_thinker",
        "audio_config": {"d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
                         "num_mel_bins": 128, "output_dim": 3584},
        "text_config": {"hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
                        "num_key_value_heads": 4, "vocab_size": 152064, "intermediate_size": 18944},
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                          "out_hidden_size": 3584, "patch_size": 14, "temporal_patch_size": 2, "window_size": 112}},
    "talker_config": {"model_type": "qwen2_5_omni_talker", "hidden_size": 896, "num_hidden_layers": 24,
                      "num_attention_heads": 12, "num_key_value_heads": 4, "vocab_size": 8448, "embedding_size": 3584,
                      "head_dim": 128, "intermediate_size": 18944},
    "token2wav_config": {"model_type": "qwen2_5_omni_token2wav",
                         "dit_config": {"dim": 1024, "depth": 22, "heads": 16, "num_embeds": 8193},
                         "bigvgan_config": {"mel_dim": 80, "upsample_initial_channel": 1536,
                                            "upsample_rates": [5, 3, 2, 2, 2, 2]}},
}
#: Qwen/Qwen2.5-Omni-7B's model.safetensors.index.json metadata.total_size (5 shards, 2,448 tensors)
OMNI_7B_TOTAL_SIZE = 22_366_403_936
#: the thinker's towers as the thinker test counts them (README: Qwen2.5-Omni-7B's thinker 8,931,813,888)
VISION_7B, AUDIO_7B, THINKER_7B = 676_550_144, 639_647_232, 8_931_813_888

_TINY_TEXT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "vocab_size": 320, "intermediate_size": 96}
TINY = {
    "model_type": "qwen2_5_omni",
    "thinker_config": {
        "model_type": "qwen2_5_omni_thinker", "text_config": dict(_TINY_TEXT),
        "vision_config": {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "out_hidden_size": 64,
                          "fullatt_block_indexes": [1]},
        "audio_config": {"d_model": 32, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 48,
                         "num_mel_bins": 16, "output_dim": 64}},
    "talker_config": {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 1,
                      "head_dim": 16, "vocab_size": 100, "embedding_size": 64, "intermediate_size": 80},
    "token2wav_config": {
        "dit_config": {"hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2, "head_dim": 24,
                       "ff_mult": 3, "emb_dim": 16, "num_embeds": 50, "mel_dim": 8, "enc_emb_dim": 12, "enc_dim": 10,
                       "enc_channels": [16, 16, 32, 48], "enc_kernel_sizes": [5, 3, 3, 1],
                       "enc_dilations": [1, 2, 3, 1],
                       "enc_attention_channels": 8, "enc_res2net_scale": 4, "enc_se_channels": 6,
                       "look_ahead_layers": [1], "look_backward_layers": [0]},
        "bigvgan_config": {"mel_dim": 8, "upsample_initial_channel": 32, "resblock_kernel_sizes": [3, 5],
                           "resblock_dilation_sizes": [[1, 3, 5], [1, 2, 3]], "upsample_rates": [3, 2],
                           "upsample_kernel_sizes": [7, 4]}},
}


def _hf(cfg: dict) -> int:
    return unique_param_count(hf_class_model(cfg, "Qwen2_5OmniForConditionalGeneration"))


def _same(cfg: dict) -> int:
    ours = count_params(parse_config(copy.deepcopy(cfg))).total
    assert ours == _hf(cfg)
    return ours


def qwen2_hand(h: int, layers: int, heads: int, kv: int, inter: int, vocab: int, *, tied: bool, hd: int = 0) -> int:
    hd = hd or h // heads
    attn = (h * heads * hd + heads * hd) + 2 * (h * kv * hd + kv * hd) + heads * hd * h  # biased q / k / v, bare o
    return vocab * h + layers * (attn + 3 * h * inter + 2 * h) + h + (0 if tied else vocab * h)


def talker_hand(hidden: int, layers: int, heads: int, kv: int, hd: int, inter: int, vocab: int, emb: int) -> int:
    proj = emb * hidden + hidden  # thinker_to_talker_proj
    body = qwen2_hand(hidden, layers, heads, kv, inter, vocab, tied=True, hd=hd) - vocab * hidden  # no embedding here
    return proj + vocab * emb + body + hidden * vocab  # embed_tokens (embedding_size wide) and codec_head


def dit_hand(d: int, layers: int, heads: int, hd: int, ff_mult: int, emb: int, num_embeds: int, mel: int, enc_emb: int,
             enc_dim: int, chans: list[int], kernels: list[int], att: int, scale: int, se: int) -> int:
    def conv(o, i, k):
        return o * i * k + o

    inner, ff = heads * hd, ff_mult * d
    n = (256 * d + d) + (d * d + d) + (num_embeds + 1) * emb + (mel + enc_dim + enc_emb + emb) * d + d
    n += conv(chans[0], mel, kernels[0])
    for i in range(1, len(chans) - 1):
        c = chans[i]
        n += conv(c, chans[i - 1], 1) + (scale - 1) * conv(c // scale, c // scale, kernels[i]) + conv(c, c, 1)
        n += conv(se, c, 1) + conv(c, se, 1)
    last = chans[-1]
    n += conv(last, last, kernels[-1]) + conv(att, 3 * last, 1) + conv(last, att, 1) + conv(enc_dim, 2 * last, 1)
    block = (6 * d * d + 6 * d) + 3 * (inner * d + inner) + (d * inner + d) + (ff * d + ff) + (d * ff + d)
    return n + layers * block + (2 * d * d + 2 * d) + (mel * d + mel)


def bigvgan_hand(mel: int, c0: int, res_k: list[int], rates_k: list[int]) -> int:
    n = c0 * mel * 7 + c0
    c = c0
    for k in rates_k:
        n += c * (c // 2) * k + c // 2  # ConvTranspose1d
        c //= 2
        n += sum(6 * (c * c * rk + c) + 12 * c for rk in res_k)  # six convs, six SnakeBeta alpha / beta pairs
    return n + 2 * c + c * 7  # activation_post, conv_post (bias-free)


TALKER_7B = talker_hand(896, 24, 12, 4, 128, 18944, 8448, 3584)
DIT_7B = dit_hand(1024, 22, 16, 64, 2, 512, 8193, 80, 192, 128, [256, 256, 256, 256, 768], [5, 3, 3, 3, 1], 64, 2, 64)
BIGVGAN_7B = bigvgan_hand(80, 1536, [3, 7, 11], [11, 7, 4, 4, 4, 4])


def test_class_defaults_match_the_installed_transformers():
    pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.models.qwen2_5_omni import configuration_qwen2_5_omni as c

    for cls, defaults in ((c.Qwen2_5OmniTalkerConfig, qwen25_omni.TALKER_DEFAULTS),
                          (c.Qwen2_5OmniDiTConfig, qwen25_omni.DIT_DEFAULTS),
                          (c.Qwen2_5OmniBigVGANConfig, qwen25_omni.BIGVGAN_DEFAULTS)):
        made = cls()
        for key, value in defaults.items():
            got = getattr(made, key)
            assert (list(map(list, got)) if key == "resblock_dilation_sizes" else
                    list(got) if isinstance(got, (list, tuple)) else got) == value, (cls.__name__, key)
        for legacy in qwen25_omni.LEGACY_DIT:
            assert legacy not in {f.name for f in dataclasses.fields(c.Qwen2_5OmniDiTConfig)}


def test_qwen25_omni_7b():
    spec = parse_config(copy.deepcopy(OMNI_7B))
    p = count_params(spec)
    assert (TALKER_7B, DIT_7B, BIGVGAN_7B) == (1_351_360_256, 333_607_760, 115_443_504)
    lm = qwen2_hand(3584, 28, 28, 4, 18944, 152064, tied=False)
    assert lm + VISION_7B + AUDIO_7B == THINKER_7B
    assert p.vision == VISION_7B
    assert p.audio == AUDIO_7B + TALKER_7B + DIT_7B + BIGVGAN_7B == 2_440_058_752
    assert p.total == THINKER_7B + TALKER_7B + DIT_7B + BIGVGAN_7B == 10_732_225_408
    assert round(p.total / 1e9, 1) == 10.7  # the published "10.7B"
    assert p.lm_head == 152064 * 3584 and p.embedding == 152064 * 3584
    # the checkpoint: thinker and talker in bf16, token2wav in float32 (Qwen2_5OmniForConditionalGeneration's
    # token2wav.float()): 22,362,553,344 bytes here against total_size 22,366,403,936 (one tensor more there)
    stored = 2 * (THINKER_7B + TALKER_7B) + 4 * (DIT_7B + BIGVGAN_7B)
    assert stored == 22_362_553_344 and 0 < OMNI_7B_TOTAL_SIZE - stored < 2e-4 * OMNI_7B_TOTAL_SIZE
    # the decode step is the thinker language model's: 28 layers, 4 KV heads of 128, K and V in bf16
    assert len(spec.layers) == 28 and spec.model_type == "qwen2_5_omni_text"
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57_344
    unloaded = TALKER_7B + DIT_7B + BIGVGAN_7B
    assert any(f"talker. / token2wav. models ({unloaded:,} parameters)" in c and "not loaded by the serving engines" in c
               for c in spec.caveats)


def test_the_engine_loads_the_thinker_alone():
    """vLLM serves Qwen2.5-Omni as Qwen2_5OmniThinkerForConditionalGeneration, which skips the talker. and token2wav.
    weights: the engine's weights at bf16 are the thinker's 8,931,813,888 parameters (the same bytes as the
    enable_audio_output false checkpoint), while the parameter total stays the whole checkpoint's."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import load_engine, loaded_weights

    eng = load_engine("vllm")
    full = analyze(parse_config(copy.deepcopy(OMNI_7B)), Options(dtype="bf16"))
    thinker = analyze(parse_config(dict(OMNI_7B, enable_audio_output=False)), Options(dtype="bf16"))
    assert full.spec.engine_unloaded == ("talker.", "token2wav.")
    lw = loaded_weights(full, tp_plan(full.spec, 1), eng)
    assert lw.counted_bytes_per_gpu == 2 * THINKER_7B == loaded_weights(thinker, tp_plan(thinker.spec, 1),
                                                                        eng).counted_bytes_per_gpu
    assert any(f"talker. / token2wav. models ({TALKER_7B + DIT_7B + BIGVGAN_7B:,} parameters" in n for n in lw.notes)
    assert count_params(full.spec).total == 10_732_225_408


def test_qwen25_omni_7b_against_transformers():
    assert _same(OMNI_7B) == 10_732_225_408


def test_audio_output_disabled_is_the_thinker():
    cfg = dict(OMNI_7B, enable_audio_output=False)
    spec = parse_config(copy.deepcopy(cfg))
    assert count_params(spec).total == THINKER_7B == _hf(cfg)
    assert not any("not loaded by the serving engines" in c for c in spec.caveats)


def test_small_variants_and_tie_flags():
    """A tiny model (GQA talker with its own head_dim, a four-stage ECAPA, two-rate BigVGAN), the class defaults, and
    the tie flags: the thinker's own flag ties its lm_head (text_config's does not)."""
    p = count_params(parse_config(copy.deepcopy(TINY)))
    out = talker_hand(48, 2, 3, 1, 16, 80, 100, 64) + \
        dit_hand(64, 3, 2, 24, 3, 16, 50, 8, 12, 10, [16, 16, 32, 48], [5, 3, 3, 1], 8, 4, 6) + \
        bigvgan_hand(8, 32, [3, 5], [7, 4])
    lm = qwen2_hand(64, 2, 4, 2, 96, 320, tied=False)
    assert p.total == _same(TINY) and p.total - p.vision - p.audio == lm
    assert p.audio - out == count_params(parse_config(dict(TINY, enable_audio_output=False))).audio
    _same({"model_type": "qwen2_5_omni"})
    for thinker_tie in (None, True, False):
        for text_tie in (None, True, False):
            cfg = copy.deepcopy(TINY)
            if thinker_tie is not None:
                cfg["thinker_config"]["tie_word_embeddings"] = thinker_tie
            if text_tie is not None:
                cfg["thinker_config"]["text_config"]["tie_word_embeddings"] = text_tie
            assert count_params(parse_config(copy.deepcopy(cfg))).lm_head == (320 * 64 if not thinker_tie else 0)
            _same(cfg)


def test_bad_configs():
    bad = copy.deepcopy(OMNI_7B)
    bad["token2wav_config"]["dit_config"]["dim"] = 2048  # transformers would build 1024 wide: not this checkpoint
    with pytest.raises(UnsupportedModelError, match="'dim'.*disagrees with 'hidden_size'"):
        parse_config(bad)
    with pytest.raises(ConfigError, match="enable_audio_output"):
        parse_config(dict(TINY, enable_audio_output="yes"))
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        parse_config(dict(TINY, talker_config=dict(TINY["talker_config"], num_key_value_heads=2)))
    t2w = copy.deepcopy(TINY["token2wav_config"])
    t2w["bigvgan_config"]["resblock_dilation_sizes"] = [[1, 3, 5]]
    with pytest.raises(ConfigError, match="resblock_dilation_sizes"):
        parse_config(dict(TINY, token2wav_config=t2w))
    t2w = copy.deepcopy(TINY["token2wav_config"])
    t2w["dit_config"]["enc_kernel_sizes"] = [5, 3]
    with pytest.raises(ConfigError, match="enc_kernel_sizes"):
        parse_config(dict(TINY, token2wav_config=t2w))
    with pytest.raises(ConfigError, match="token2wav_config"):
        parse_config(dict(TINY, token2wav_config=[1]))
    with pytest.raises(UnsupportedModelError, match="qwen2_5_omni_talker"):
        parse_config(dict(TINY, talker_config=dict(TINY["talker_config"], model_type="qwen3_omni_moe_talker")))
    thinker = copy.deepcopy(TINY["thinker_config"])
    thinker["text_config"]["model_type"] = "llama"
    with pytest.raises(UnsupportedModelError, match="qwen2_5_omni_text"):
        parse_config(dict(TINY, thinker_config=thinker))
    with pytest.raises(UnsupportedModelError, match="inside a whole qwen2_5_omni config"):
        parse_config(dict(_TINY_TEXT, model_type="qwen2_5_omni_whole_text"))


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OMNI_7B))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 10_732_225_408 and r.json["params"]["audio"] == 2_440_058_752
    bad = copy.deepcopy(OMNI_7B)
    bad["token2wav_config"]["dit_config"]["heads"] = 8
    path.write_text(json.dumps(bad))
    run("analyze", path).assert_error("heads", "num_attention_heads")


def test_verify_runs_the_thinker_language_model(tmp_path):
    """verify builds the thinker's language model (the towers, talker and token2wav take no part in its text decode
    step): its self-checks pass on the language model's parameters alone."""
    pytest.importorskip("torch", reason="verify needs torch")
    out = verify_self_checks(tmp_path, TINY)
    assert out["model"]["num_layers"] == 2
    assert out["checks"]["params"]["predicted"] == qwen2_hand(64, 2, 4, 2, 96, 320, tied=False)
