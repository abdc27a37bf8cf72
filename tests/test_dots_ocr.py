"""dots.ocr (``dots_ocr``, remote code): the flat Qwen2 language model and the DotsVisionTransformer tower, counted
from the module shapes of vLLM's vllm/model_executor/models/dots_ocr.py (DotsPatchEmbed, DotsVisionBlock,
PatchMerger) and the hub's modeling_dots_vision.py; the language model checked against transformers' Qwen2 on the
meta device. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_param_count

# rednote-hilab/dots.ocr config.json (shape fields as published; auto_map and token ids beside them)
DOTS_OCR = {
    "architectures": ["DotsOCRForCausalLM"], "model_type": "dots_ocr", "attention_bias": True,
    "attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": 1536, "intermediate_size": 8960,
    "max_position_embeddings": 131072, "max_window_layers": 28, "num_attention_heads": 12, "num_hidden_layers": 28,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936, "image_token_id": 151665, "video_token_id": 151656,
    "auto_map": {"AutoConfig": "configuration_dots.DotsOCRConfig",
                 "AutoModelForCausalLM": "modeling_dots_ocr.DotsOCRForCausalLM"},
    "vision_config": {"embed_dim": 1536, "hidden_size": 1536, "intermediate_size": 4224, "num_hidden_layers": 42,
                      "num_attention_heads": 12, "num_channels": 3, "patch_size": 14, "post_norm": True,
                      "rms_norm_eps": 1e-05, "spatial_merge_size": 2, "temporal_patch_size": 1, "use_bias": False,
                      "attn_implementation": "flash_attention_2", "init_merger_std": 0.02, "initializer_range": 0.02,
                      "is_causal": False}}


def vision_count(e=1536, inter=4224, layers=42, channels=3, patch=14, merge=2, out=1536, bias=False, post_norm=True):
    b = 1 if bias else 0
    block = e + (3 * e * e + b * 3 * e) + (e * e + b * e) + e + 2 * (inter * e + b * inter) + (e * inter + b * e)
    wide = e * merge * merge
    return (e * channels * patch * patch + e + e) + layers * block + (e if post_norm else 0) \
        + 2 * e + (wide * wide + wide) + (out * wide + out)


def test_dots_ocr_whole_checkpoint():
    p = count_params(parse_config(DOTS_OCR))
    assert p.vision == vision_count() == 1_262_091_264
    text = {k: v for k, v in DOTS_OCR.items() if k not in ("vision_config", "auto_map", "architectures")}
    text["model_type"] = "qwen2"
    assert p.total - p.vision == hf_param_count(text) == 1_777_088_000
    assert p.total == 3_039_179_264  # the checkpoint's 3.04B (1.7B language model + 1.2B vision encoder)
    # Qwen2's decode: 28 layers x 2 KV heads x 128 x (K, V) x 2 bytes
    assert kv_cache(parse_config(DOTS_OCR), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 128 * 4


def test_dots_ocr_vision_defaults_and_biases():
    """Absent vision fields take DotsVisionConfig's defaults; use_bias puts biases on every tower Linear; post_norm
    false drops post_trunk_norm."""
    cfg = dict(DOTS_OCR, vision_config={})
    assert count_params(parse_config(cfg)).vision == vision_count()
    small = {"embed_dim": 64, "hidden_size": 1536, "intermediate_size": 96, "num_hidden_layers": 2,
             "num_attention_heads": 4, "patch_size": 4, "spatial_merge_size": 1, "use_bias": True, "post_norm": False}
    cfg = dict(DOTS_OCR, vision_config=small)
    assert count_params(parse_config(cfg)).vision == vision_count(64, 96, 2, 3, 4, 1, 1536, True, False)


def test_dots_ocr_bad_vision_config():
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(DOTS_OCR, vision_config=dict(DOTS_OCR["vision_config"], num_attention_heads=7)))
    with pytest.raises(ConfigError, match="vision_config"):
        parse_config(dict(DOTS_OCR, vision_config=[1]))


def test_dots_ocr_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DOTS_OCR))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 3_039_179_264
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(DOTS_OCR, vision_config=dict(DOTS_OCR["vision_config"], num_hidden_layers=0))))
    run("analyze", str(bad)).assert_error("vision_config", "num_hidden_layers")
