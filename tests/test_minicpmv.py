"""The hub's remote-code MiniCPM-V (model_type ``minicpmv``: MiniCPM-Llama3-V 2.5, MiniCPM-V 2.6 / 4.0 / 4.5), checked
against a hand count written from the module shapes of vLLM's vllm/model_executor/models/minicpmv.py (MiniCPMV2_5 /
2_6 / 4_0 / 4_5: Idefics2VisionTransformer ``vpm``, Resampler2_5 / Resampler4_5 ``resampler``, the language model
``llm`` by version) and against published figures. MiniCPM-o 2.6 (``minicpmo``) is refused by name. No network, no
remote code.

The configs below carry the shape fields of the hub checkpoints (the flat MiniCPMVConfig: the language model's fields
at the top level, ``vision_config``, ``query_num``, ``drop_vision_last_layer``, ``version``), the language model's
fields being those of the base model each model card names (Llama-3-8B-Instruct, Qwen2-7B, Qwen3-8B). The hub's
config.json files themselves could not be read here.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

SIGLIP_400M = {"hidden_size": 1152, "image_size": 980, "intermediate_size": 4304, "model_type": "siglip_vision_model",
               "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14}
_WRAPPER = {"architectures": ["MiniCPMV"], "model_type": "minicpmv", "image_size": 448, "patch_size": 14,
            "batch_vision_input": True, "slice_mode": True, "drop_vision_last_layer": False, "torch_dtype": "bfloat16",
            "auto_map": {"AutoConfig": "configuration_minicpm.MiniCPMVConfig",
                         "AutoModel": "modeling_minicpmv.MiniCPMV"},
            "slice_config": {"max_slice_nums": 9, "model_type": "minicpmv", "patch_size": 14, "scale_resolution": 448},
            "vision_config": SIGLIP_400M}

# openbmb/MiniCPM-Llama3-V-2_5: no version field (vLLM reads it as 2.5), 96 queries, Llama-3-8B
MINICPM_LLAMA3_V_2_5 = dict(
    _WRAPPER, query_num=96, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-05,
    hidden_act="silu", attention_bias=False, tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001)
# openbmb/MiniCPM-V-2_6: version 2.6, Qwen2-7B with the vocabulary resized to 151,666
MINICPM_V_2_6 = dict(
    _WRAPPER, version=2.6, query_num=64, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
    num_attention_heads=28, num_key_value_heads=4, vocab_size=151666, max_position_embeddings=32768,
    rope_theta=1000000.0, rms_norm_eps=1e-06, hidden_act="silu", tie_word_embeddings=False, use_sliding_window=False,
    sliding_window=131072, max_window_layers=28)
# openbmb/MiniCPM-V-4_5: version 4.5, Qwen3-8B (head_dim 128, q/k norms)
MINICPM_V_4_5 = dict(
    _WRAPPER, version=4.5, query_num=64, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
    rope_theta=1000000.0, rms_norm_eps=1e-06, hidden_act="silu", attention_bias=False, tie_word_embeddings=False)


def _vpm(layers: int = 27, h: int = 1152, inter: int = 4304) -> int:
    """Idefics2VisionTransformer: biased 14x14 patch conv, 70 x 70 learned positions, SigLIP blocks, post LayerNorm."""
    block = 2 * 2 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h)
    return (h * 3 * 14 * 14 + h) + 70 * 70 * h + layers * block + 2 * h


def _resampler(e: int, queries: int, kv: int = 1152) -> int:
    """query, bias-free kv_proj, MultiheadAttention (in_proj 3E x E + bias, out_proj), ln_q / ln_kv / ln_post, proj."""
    return queries * e + kv * e + (3 * e * e + 3 * e) + (e * e + e) + 3 * 2 * e + e * e


def _decoder(V, h, L, heads, kv, hd, inter, qk_norm=False, qkv_bias=False) -> int:
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h + (heads * hd + 2 * kv * hd if qkv_bias else 0)
    return 2 * V * h + h + L * (attn + 3 * h * inter + 2 * h + (2 * hd if qk_norm else 0))


def test_minicpm_v_2_6_by_hand_and_published():
    spec = parse_config(MINICPM_V_2_6)
    p = count_params(spec)
    vision = _vpm() + _resampler(3584, 64)
    assert p.vision == vision == 486_411_504
    # ollama's minicpm-v:8b (this checkpoint converted by llama.cpp) shows its projector as 503.97M parameters: the
    # tower and resampler above plus the resampler's 70 x 70 x 3584 sincos table, which the GGUF stores as a tensor
    assert vision + 70 * 70 * 3584 == 503_973_104
    lm = _decoder(151666, 3584, 28, 28, 4, 128, 18944, qkv_bias=True)
    assert p.total == lm + vision == 8_099_175_152  # the model card's 8B; OpenBMB's tables: 8.1B
    assert p.active == p.total
    assert spec.model_type == "qwen2"
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 4 * 128 * 2


def test_minicpm_llama3_v_2_5_by_hand():
    spec = parse_config(MINICPM_LLAMA3_V_2_5)
    p = count_params(spec)
    vision = _vpm() + _resampler(4096, 96)
    assert p.vision == vision == 506_831_088
    lm = _decoder(128256, 4096, 32, 32, 8, 128, 14336)
    assert lm == 8_030_261_248  # Llama-3-8B
    assert p.total == lm + vision == 8_537_092_336  # the model card: 8B (the hub's file list: 8.54B)
    assert spec.model_type == "llama"
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 8 * 128 * 2


def test_minicpm_v_4_5_by_hand():
    spec = parse_config(MINICPM_V_4_5)
    p = count_params(spec)
    vision = _vpm() + _resampler(4096, 64)  # Resampler4_5: Resampler2_5's parameters, its temporal table a buffer
    assert p.vision == vision == 506_700_016
    lm = _decoder(151936, 4096, 36, 32, 8, 128, 12288, qk_norm=True)
    assert lm == 8_190_735_360  # Qwen3-8B
    assert p.total == lm + vision == 8_697_435_376
    assert spec.model_type == "qwen3"
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 36 * 2 * 8 * 128 * 2


def test_minicpm_v_4_0_builds_llama_and_the_same_towers():
    """MiniCPMV4_0: LlamaForCausalLM, Idefics2VisionTransformer, Resampler2_5 (E = the LM's hidden size)."""
    cfg = dict(_WRAPPER, version=4.0, query_num=64, hidden_size=2560, intermediate_size=10240, num_hidden_layers=4,
               num_attention_heads=32, num_key_value_heads=2, vocab_size=73448, tie_word_embeddings=True)
    spec = parse_config(cfg)
    p = count_params(spec)
    assert spec.model_type == "llama"
    assert p.vision == _vpm() + _resampler(2560, 64)
    assert p.total == p.vision + _decoder(73448, 2560, 4, 32, 2, 80, 10240) - 73448 * 2560  # tied head


def test_drop_vision_last_layer_and_defaults():
    # MiniCPMVConfig's defaults: drop_vision_last_layer true, query_num 64, its default SigLIP-400M vision config
    cfg = {k: v for k, v in MINICPM_V_2_6.items() if k not in ("drop_vision_last_layer", "query_num", "vision_config")}
    p = count_params(parse_config(cfg))
    assert p.vision == _vpm(layers=26) + _resampler(3584, 64)


def test_tensor_names_are_the_checkpoints():
    from planner.analysis.families.minicpmv import minicpmv_vision

    names = {t.name: t.shape for t in minicpmv_vision(MINICPM_V_2_6, 3584, "x")}
    assert names["vpm.embeddings.patch_embedding.weight"] == (1152, 3, 14, 14)
    assert names["vpm.embeddings.position_embedding.weight"] == (4900, 1152)
    assert names["vpm.encoder.layers.26.mlp.fc1.weight"] == (4304, 1152)
    assert names["resampler.query"] == (64, 3584)
    assert names["resampler.kv_proj.weight"] == (3584, 1152)
    assert names["resampler.attn.in_proj_weight"] == (3 * 3584, 3584)
    assert names["resampler.proj"] == (3584, 3584)
    assert "resampler.pos_embed" not in names and not any(n.startswith("vpm.head") for n in names)
    # no kv_proj when the vision width equals the language model's (BaseResampler's Identity)
    same = minicpmv_vision(dict(MINICPM_V_2_6, vision_config=dict(SIGLIP_400M, hidden_size=3584)), 3584, "x")
    assert "resampler.kv_proj.weight" not in {t.name for t in same}


@pytest.mark.parametrize("patch,error,match", [
    ({"version": None, "hidden_size": 2304, "query_num": 64}, UnsupportedModelError, "MiniCPM-V 2.0"),
    ({"version": 3.0}, UnsupportedModelError, "version 3.0"),
    ({"version": "two"}, ConfigError, "version"),
    ({"version": True}, ConfigError, "version"),
    ({"vision_config": [1]}, ConfigError, "vision_config"),
    ({"query_num": 0}, ConfigError, "query_num"),
])
def test_bad_configs_raise_clear_errors(patch, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(MINICPM_V_2_6, **patch))


def test_minicpmo_is_refused_by_name():
    cfg = dict(MINICPM_V_2_6, model_type="minicpmo", architectures=["MiniCPMO"], audio_config={"d_model": 1024},
               tts_config={"hidden_size": 768})
    with pytest.raises(UnsupportedModelError, match="MiniCPM-o 2.6.*Whisper"):
        parse_config(cfg)


def test_cli_end_to_end(tmp_path):
    good = tmp_path / "MiniCPM-V-2_6"
    good.mkdir()
    (good / "config.json").write_text(json.dumps(MINICPM_V_2_6))
    r = run("analyze", str(good), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_099_175_152
    assert r.json["params"]["vision"] == 486_411_504
    assert r.json["kv_cache"]["bytes_per_token"] == 57_344
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MINICPM_V_2_6, version=2.0, hidden_size=2304)))
    run("analyze", str(bad)).assert_error("MiniCPM-V 2.0", "not modelled")
    omni = tmp_path / "omni.json"
    omni.write_text(json.dumps(dict(MINICPM_V_2_6, model_type="minicpmo")))
    run("analyze", str(omni)).assert_error("MiniCPM-o 2.6")


def test_language_model_verifies(tmp_path):
    """verify builds the language model (the towers are counted apart): its exact self-checks pass."""
    tiny = dict(MINICPM_V_2_6, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=256, max_position_embeddings=256, max_window_layers=2)
    verify_self_checks(tmp_path, tiny, name="tiny")
