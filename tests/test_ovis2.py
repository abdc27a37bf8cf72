"""Ovis2 in transformers' format (``ovis2``): the whole checkpoint against a hand count from modeling_ovis2.py's
module shapes and against transformers on the meta device; the lm_head tie rule; the CLI end to end. The AIDC-AI
remote-code format (``ovis``) stays refused by name."""

from __future__ import annotations

import itertools
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: Ovis2Config's defaults (transformers documents them as Ovis2-2B-style; the language model Qwen2Config's defaults)
DEFAULT = {"model_type": "ovis2", "architectures": ["Ovis2ForConditionalGeneration"],
           "text_config": {"model_type": "qwen2"}}


def vision_count(h: int, inter: int, layers: int, image: int, patch: int, vocab: int, stride: int = 1,
                 indicators: int = 5, qkv_bias: bool = False, mlp_bias: bool = False, channels: int = 3) -> int:
    """Ovis2VisionModel: biased conv patches, positions, RMSNorm; per layer q/k/v/out_proj, SwiGLU gate/up/down,
    two RMSNorms; a final RMSNorm; head_linear (no bias) and head_norm (LayerNorm) over vocab - indicators."""
    embeddings = h * channels * patch * patch + h + (image // patch) ** 2 * h + h
    layer = 4 * (h * h + (h if qkv_bias else 0)) + 2 * (inter * h + (inter if mlp_bias else 0)) \
        + (h * inter + (h if mlp_bias else 0)) + 2 * h
    head = (vocab - indicators) * h * stride * stride + 2 * (vocab - indicators)
    return embeddings + layers * layer + h + head


def qwen2_count(h: int, layers: int, heads: int, kv: int, inter: int, vocab: int, tied: bool) -> int:
    """Qwen2Model (+ lm_head when untied): biased q/k/v, bias-free o_proj, SwiGLU, two RMSNorms a layer."""
    hd = h // heads
    layer = (h * h + h) + 2 * (kv * hd * h + kv * hd) + h * h + 3 * inter * h + 2 * h
    return vocab * h + layers * layer + h + (0 if tied else vocab * h)


def test_default_config_by_hand_and_transformers():
    vision = vision_count(1024, 2816, 24, 224, 14, 16384)
    table = 16384 * 1536  # visual_embeddings_table: vision vocab x the wrapper's hidden_size (1536)
    text = qwen2_count(4096, 32, 32, 32, 22016, 151936, tied=True)  # Qwen2Config's defaults; the wrapper ties
    assert vision == 326_002_678
    p = count_params(parse_config(DEFAULT))
    assert p.total == vision + table + text == 11_778_684_918
    assert p.active == p.total
    assert p.total == unique_param_count(hf_model(DEFAULT, image_text=True))


_TEXT = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 300}
_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
           "image_size": 28, "patch_size": 14, "vocab_size": 50}


@pytest.mark.parametrize("wrapper_tie, text_tie, qkv_bias, mlp_bias, stride",
                         list(itertools.product((True, False, None), (True, False, None), (True, False),
                                                (True, False), (1, 2)))[::3])
def test_variants_equal_transformers(wrapper_tie, text_tie, qkv_bias, mlp_bias, stride):
    text = dict(_TEXT) if text_tie is None else dict(_TEXT, tie_word_embeddings=text_tie)
    cfg = {"model_type": "ovis2", "hidden_size": 64, "vocab_size": 300, "text_config": text,
           "vision_config": dict(_VISION, qkv_bias=qkv_bias, mlp_bias=mlp_bias, hidden_stride=stride)}
    if wrapper_tie is not None:
        cfg["tie_word_embeddings"] = wrapper_tie
    total = count_params(parse_config(cfg)).total
    tied = wrapper_tie is not False  # the wrapper's flag alone (default true)
    hand = (vision_count(32, 48, 2, 28, 14, 50, stride, qkv_bias=qkv_bias, mlp_bias=mlp_bias) + 50 * 64
            + qwen2_count(64, 2, 4, 2, 96, 300, tied))
    assert total == hand
    assert total == unique_param_count(hf_model(cfg, image_text=True))


def test_untied_head_of_another_shape_refused(tmp_path):
    cfg = {"model_type": "ovis2", "hidden_size": 64, "vocab_size": 299, "tie_word_embeddings": False,
           "text_config": _TEXT, "vision_config": _VISION}
    with pytest.raises(UnsupportedModelError, match="untied lm_head"):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", path).assert_error("Ovis2", "untied lm_head", "(299, 64)")


def test_cli_kv_and_bad_config(tmp_path):
    cfg = {"model_type": "ovis2", "hidden_size": 64, "vocab_size": 300, "text_config": _TEXT, "vision_config": _VISION}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == count_params(parse_config(cfg)).total
    assert r.json["kv_cache"]["bytes_per_token"] == 2 * 2 * 2 * 16 * 2  # layers x (K, V) x kv heads x head_dim, bf16
    bad = dict(cfg, vision_config=dict(_VISION, num_attention_heads=3))
    path.write_text(json.dumps(bad))
    run("analyze", path).assert_error("num_attention_heads", "must divide hidden_size")
    with pytest.raises(ConfigError, match="vocab_size"):
        parse_config(dict(cfg, vision_config=dict(_VISION, vocab_size=5)))


def test_remote_code_ovis_still_refused():
    with pytest.raises(UnsupportedModelError, match="AIDC-AI Ovis"):
        parse_config({"model_type": "ovis", "llm_config": _TEXT})
