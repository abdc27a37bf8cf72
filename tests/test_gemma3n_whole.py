"""Gemma 3n whole (``gemma3n``, Gemma3nForConditionalGeneration): the language model (gemma3n_text), timm's
MobileNet-V5 vision tower, the conformer audio encoder and the embed_vision / embed_audio embedders
(analysis/families/gemma3n_towers.py), against a hand count written from the modules' shapes, against the totals
transformers 5.24 + timm 1.0.31 build on the meta device, and against the model cards' "5B" / "8B raw parameters".

The recorded totals are ``sum(p.numel() for p in model.parameters())`` (and per ``model.<child>``) of
``Gemma3nForConditionalGeneration(Gemma3nConfig.from_dict(cfg))`` built under ``torch.device("meta")`` for E2B_CONFIG,
E4B_CONFIG and ``{"model_type": "gemma3n", "text_config": {}}``, in a separate environment with timm (torch 2.14.1,
transformers 5.24.0, timm 1.0.31; the test environment has no timm). ``test_live_transformers_and_timm`` repeats that
comparison tensor by tensor where timm is importable; it passed there, run from the repository root as

    /work/venv_timm/bin/python -c "import sys; sys.path.append('/work/venv/lib/python3.11/site-packages'); \
        import pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_gemma3n_whole.py']))"

(that venv's torch / transformers / timm first on the path, pytest from the main venv): E2B 5,418,464,192; E4B and the
class defaults 7,818,517,072; vision_tower 294,126,912, audio_tower 681,348,640, embed_vision 4,460,544, embed_audio
3,345,408 in all three.
"""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run

_SLIDING5 = ["sliding_attention"] * 4 + ["full_attention"]

# google/gemma-3n-E2B config.json as published (transcribed from the unsloth/gemma-3n-E2B mirror in
# AshishKumar4/dew tests/fixtures/hf/gemma-3n-e2b/config.json; the -it checkpoint has the same shapes)
E2B_CONFIG = {
    "architectures": ["Gemma3nForConditionalGeneration"],
    "audio_config": {
        "conf_attention_chunk_size": 12, "conf_attention_context_left": 13, "conf_attention_context_right": 0,
        "conf_attention_logit_cap": 50.0, "conf_conv_kernel_size": 5, "conf_num_attention_heads": 8,
        "conf_num_hidden_layers": 12, "conf_reduction_factor": 4, "conf_residual_weight": 0.5,
        "gradient_clipping": 10000000000.0, "hidden_size": 1536, "input_feat_size": 128, "model_type": "gemma3n_audio",
        "rms_norm_eps": 1e-06, "sscp_conv_channel_size": [128, 32], "sscp_conv_group_norm_eps": 0.001,
        "sscp_conv_kernel_size": [[3, 3], [3, 3]], "sscp_conv_stride_size": [[2, 2], [2, 2]],
        "torch_dtype": "bfloat16", "vocab_offset": 262272, "vocab_size": 128},
    "audio_soft_tokens_per_image": 188, "audio_token_id": 262273, "boa_token_id": 256000, "boi_token_id": 255999,
    "bos_token_id": 2, "eoa_token_id": 262272, "eoi_token_id": 262144, "eos_token_id": 1, "image_token_id": 262145,
    "initializer_range": 0.02, "model_type": "gemma3n", "pad_token_id": 0,
    "text_config": {
        "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 20, "altup_active_idx": 0, "altup_coef_clip": 120.0,
        "altup_correct_scale": True, "altup_num_inputs": 4, "attention_bias": False, "attention_dropout": 0.0,
        "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 2048, "hidden_size_per_layer_input": 256, "initializer_range": 0.02,
        "intermediate_size": [8192] * 30, "laurel_rank": 64, "layer_types": _SLIDING5 * 6,
        "max_position_embeddings": 32768, "model_type": "gemma3n_text", "num_attention_heads": 8,
        "num_hidden_layers": 30, "num_key_value_heads": 2, "num_kv_shared_layers": 10, "rms_norm_eps": 1e-06,
        "rope_local_base_freq": 10000.0, "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 512,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 262400, "vocab_size_per_layer_input": 262144},
    "torch_dtype": "bfloat16", "transformers_version": "4.53.1",
    "vision_config": {
        "architecture": "mobilenetv5_300m_enc", "do_pooling": False, "hidden_size": 2048, "initializer_range": 0.02,
        "label_names": ["LABEL_0", "LABEL_1"], "model_args": None, "model_type": "gemma3n_vision", "num_classes": 2,
        "rms_norm_eps": 1e-06, "torch_dtype": "bfloat16", "vocab_offset": 262144, "vocab_size": 128},
    "vision_soft_tokens_per_image": 256}

# google/gemma-3n-E4B: the same audio / vision configs; its text_config has 35 layers of intermediate 16384, the last
# 15 KV-shared, sparsity on the first 10 (the published values, quoted by DotLLM's Gemma3nConfigExtractorTests and
# ai-edge-torch's gemma3n builder; they equal Gemma3nTextConfig's defaults)
E4B_CONFIG = copy.deepcopy(E2B_CONFIG)
E4B_CONFIG["text_config"].update(num_hidden_layers=35, intermediate_size=[16384] * 35, num_kv_shared_layers=15,
                                 activation_sparsity_pattern=[0.95] * 10 + [0.0] * 25, layer_types=_SLIDING5 * 7)

#: transformers 5.24 + timm 1.0.31 on the meta device (module docstring)
HF_TOTAL = {"e2b": 5_418_464_192, "e4b": 7_818_517_072, "defaults": 7_818_517_072}
HF_VISION_TOWER, HF_AUDIO_TOWER, HF_EMBED_VISION, HF_EMBED_AUDIO = 294_126_912, 681_348_640, 4_460_544, 3_345_408
HF_LANGUAGE_MODEL = {"e2b": 4_435_182_688, "e4b": 6_835_235_568}  # model.language_model (lm_head tied to it)


# ---- the hand count, from the modules' shapes (timm 1.0.31, modeling_gemma3n.py) -------------------------------

def _er(cin, cout, mid, k=3):
    """EdgeResidual: conv_exp (mid, cin, k, k), bn1 (mid), conv_pwl (cout, mid, 1, 1), bn2 (cout)."""
    return mid * cin * k * k + mid + cout * mid + cout


def _uir(cin, cout, mid, a=0, k=0, scale=True):
    """UniversalInvertedResidual: [dw_start (cin, 1, a, a) + norm], pw_exp + norm, [dw_mid (mid, 1, k, k) + norm],
    pw_proj + norm, [layer_scale.gamma (cout)]."""
    return ((cin * a * a + cin) if a else 0) + mid * cin + mid + ((mid * k * k + mid) if k else 0) \
        + cout * mid + cout + (cout if scale else 0)


def _mqa(c, heads, dim, kv_stride):
    """MobileAttention + MultiQueryAttention2d: norm (c), query (heads * dim, c), key / value: [down_conv (c, 1, 3, 3)
    + norm (c) when strided] + proj (dim, c), output (c, heads * dim), layer_scale (c)."""
    kv = ((c * 9 + c) if kv_stride > 1 else 0) + dim * c
    return c + heads * dim * c + 2 * kv + c * heads * dim + c


def hand_vision_tower_300m():
    stem = 64 * 3 * 3 * 3 + 64 + 64  # conv (with its bias) + RmsNorm2d
    stage0 = _er(64, 128, 256) + 2 * _er(128, 128, 512)
    stage1 = _uir(128, 256, 768, a=3, k=5) + 2 * _uir(256, 256, 1024, a=5) + 2 * _uir(256, 256, 1024, a=3)
    stage2 = _uir(256, 640, 1536, a=5, k=5) + 7 * _uir(640, 640, 2560, a=5) + _uir(640, 640, 640) \
        + 14 * (_mqa(640, 12, 64, 2) + _uir(640, 640, 1280))
    stage3 = _uir(640, 1280, 3840, a=5, k=5) + 19 * (_mqa(1280, 16, 96, 1) + _uir(1280, 1280, 2560))
    msfa = _uir(640 + 1280, 2048, 3840, scale=False) + 2048
    return stem + stage0 + stage1 + stage2 + stage3 + msfa


def hand_audio_tower(h=1536, layers=12, conv_k=5, heads=8):
    sscp = 128 * 1 * 3 * 3 + 128 + 32 * 128 * 3 * 3 + 32 + h * (32 * 32)  # 128 mel bins -> 64 -> 32 frequencies
    ffw = h + 4 * h * h + 4 * h * h + h
    attn = h + h // heads + 4 * h * h + h * h + h  # norm, per_dim_scale, pos_proj + q/k/v, post, post_norm
    lconv = h + 2 * h * h + h * conv_k + h + h * h
    return sscp + layers * (2 * ffw + attn + lconv + h)


def hand_embedder(vocab, h, text_hidden=2048):
    return vocab * h + 2 * h + text_hidden * h


def hand_towers():
    return hand_vision_tower_300m() + hand_embedder(128, 2048) + hand_audio_tower() + hand_embedder(128, 1536)


# ---- tests -----------------------------------------------------------------------------------------------------

def test_hand_count_matches_the_recorded_transformers_modules():
    """The hand count above is the recorded transformers + timm figure, part by part."""
    assert hand_vision_tower_300m() == HF_VISION_TOWER
    assert hand_audio_tower() == HF_AUDIO_TOWER
    assert (hand_embedder(128, 2048), hand_embedder(128, 1536)) == (HF_EMBED_VISION, HF_EMBED_AUDIO)


@pytest.mark.parametrize("name, cfg", [("e2b", E2B_CONFIG), ("e4b", E4B_CONFIG)])
def test_whole_checkpoint_counts(name, cfg):
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.vision == hand_vision_tower_300m() + hand_embedder(128, 2048) == HF_VISION_TOWER + HF_EMBED_VISION
    assert p.audio == hand_audio_tower() + hand_embedder(128, 1536) == HF_AUDIO_TOWER + HF_EMBED_AUDIO
    assert p.total == HF_LANGUAGE_MODEL[name] + hand_towers() == HF_TOTAL[name]
    assert p.active == p.total  # dense: every parameter runs (the towers on their inputs)
    text_only = count_params(parse_config(cfg["text_config"]))
    assert text_only.total == HF_LANGUAGE_MODEL[name]  # the language model alone is unchanged


def test_published_raw_parameter_figures():
    """The model cards: "the raw parameter count of this model is 5B" (E2B) and "8B" (E4B)."""
    assert round(count_params(parse_config(E2B_CONFIG)).total / 1e9) == 5
    assert round(count_params(parse_config(E4B_CONFIG)).total / 1e9) == 8


def test_class_defaults_build_both_towers():
    """No vision_config / audio_config: Gemma3nConfig builds both from their class defaults (E4B's shapes)."""
    p = count_params(parse_config({"model_type": "gemma3n", "text_config": {}}))
    assert p.total == HF_TOTAL["defaults"]
    assert (p.vision, p.audio) == (HF_VISION_TOWER + HF_EMBED_VISION, HF_AUDIO_TOWER + HF_EMBED_AUDIO)
    nulls = dict(E4B_CONFIG, vision_config=None, audio_config=None)
    assert count_params(parse_config(nulls)).total == HF_TOTAL["e4b"]


def test_decode_trace_and_kv_stay_the_language_models():
    """The towers change the parameters, not the text decode: KV bytes per token are E2B's 20 caching layers."""
    whole = analyze(parse_config(E2B_CONFIG), Options(context=4096, dtype="bf16", kv_dtype="bf16"))
    text = analyze(parse_config(E2B_CONFIG["text_config"]), Options(context=4096, dtype="bf16", kv_dtype="bf16"))
    assert whole.kv.bytes_per_token == text.kv.bytes_per_token == 20 * (2 * 2 * 256 * 2)
    assert (whole.decode_flops, whole.prefill_flops) == (text.decode_flops, text.prefill_flops)


def test_wrapper_flag_alone_ties_lm_head():
    """Gemma3nForConditionalGeneration ties lm_head by the top-level flag (default true), whatever text_config says
    (checked on the meta device: top false / text true is untied, top absent / text false is tied)."""
    vocab_hidden = 262400 * 2048
    untied = dict(E2B_CONFIG, tie_word_embeddings=False)
    untied["text_config"] = dict(E2B_CONFIG["text_config"], tie_word_embeddings=True)
    assert count_params(parse_config(untied)).total == HF_TOTAL["e2b"] + vocab_hidden
    tied = dict(E2B_CONFIG, text_config=dict(E2B_CONFIG["text_config"], tie_word_embeddings=False))
    assert count_params(parse_config(tied)).total == HF_TOTAL["e2b"]


def test_other_timm_architectures():
    """mobilenetv5_300m (the classifier variant, no head at num_classes=0) has the encoder's parameters;
    mobilenetv5_base its own (timm 1.0.31: 80,598,976); anything else is refused by name."""
    def vision(arch):
        cfg = dict(E2B_CONFIG, vision_config=dict(E2B_CONFIG["vision_config"], architecture=arch))
        return count_params(parse_config(cfg)).vision - hand_embedder(128, 2048)

    assert vision("mobilenetv5_300m") == HF_VISION_TOWER
    assert vision("mobilenetv5_base") == 80_598_976
    with pytest.raises(UnsupportedModelError, match="vision architecture 'resnet50' is not modelled"):
        vision("resnet50")


def test_refusals_and_bad_fields():
    with pytest.raises(UnsupportedModelError, match=r"model_args \['depth'\] are not modelled"):
        parse_config(dict(E2B_CONFIG, vision_config=dict(E2B_CONFIG["vision_config"], model_args={"depth": 3})))
    audio = E2B_CONFIG["audio_config"]
    for bad, match in (({"conf_num_attention_heads": 7}, "must divide hidden_size"),
                       ({"sscp_conv_channel_size": [128, 32, 8]}, "sscp_conv_channel_size"),
                       ({"sscp_conv_kernel_size": [[3, 3]]}, "sscp_conv_kernel_size"),
                       ({"input_feat_size": 1, "sscp_conv_kernel_size": [[3, 9], [3, 9]]}, "no frequency bins")):
        with pytest.raises(ConfigError, match=match):
            parse_config(dict(E2B_CONFIG, audio_config=dict(audio, **bad)))


def test_cli_analyze_shows_vision_and_audio(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(E2B_CONFIG))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    params = r.json["params"]
    assert (params["total"], params["vision"], params["audio"]) == (
        HF_TOTAL["e2b"], HF_VISION_TOWER + HF_EMBED_VISION, HF_AUDIO_TOWER + HF_EMBED_AUDIO)
    assert r.json["kv_cache"]["bytes_per_token"] == 20 * (2 * 2 * 256 * 2)
    text = run("analyze", path)
    assert text.code == 0 and "vision encoder" in text.out and "audio encoder" in text.out


def test_cli_errors(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(E2B_CONFIG, vision_config={"architecture": "resnet50"})))
    run("analyze", path).assert_error("Gemma 3n vision architecture 'resnet50' is not modelled")
    good = tmp_path / "good"
    good.mkdir()
    (good / "config.json").write_text(json.dumps(E2B_CONFIG))
    run("verify", good / "config.json").assert_error("verify does not support Gemma 3n")


def test_live_transformers_and_timm():
    """Where timm is importable: every non-language-model tensor's name and shape, and the totals, equal
    Gemma3nForConditionalGeneration on the meta device (E2B, E4B, the class defaults, the other timm names)."""
    pytest.importorskip("timm", reason="timm is not installed here (the recorded totals above stand in for it)")
    import torch
    from transformers import Gemma3nConfig, Gemma3nForConditionalGeneration

    base = copy.deepcopy(E2B_CONFIG)
    base["vision_config"]["architecture"] = "mobilenetv5_base"
    cases = [E2B_CONFIG, E4B_CONFIG, {"model_type": "gemma3n", "text_config": {}}, base]
    for cfg in cases:
        with torch.device("meta"):
            model = Gemma3nForConditionalGeneration(Gemma3nConfig.from_dict(copy.deepcopy(cfg)))
        spec = parse_config(cfg)
        ours = {t.name: tuple(t.shape) for t in spec.vision}
        theirs = {n: tuple(p.shape) for n, p in model.named_parameters() if not n.startswith("model.language_model.")
                  and n != "lm_head.weight"}
        assert ours == theirs
        assert count_params(spec).total == sum(p.numel() for p in model.parameters())
