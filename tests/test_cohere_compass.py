"""Cohere Compass (cohere_compass_text, the cohere_compass wrapper): exact counts against a hand count from
transformers 5.24's modeling_cohere_compass.py (Cohere 2's parallel block, Qwen3-VL's tower) and against transformers'
CohereCompassForCausalLM / CohereCompassForConditionalGeneration built on the meta device."""

from __future__ import annotations

import json
import warnings

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from planner.analysis.spec import RopeStyle
from tests.clirun import run
from tests.oracle import unique_param_count

#: a small config laid out as North-Micro-Vision's text_config is (three sliding layers with M-RoPE, then a NoPE full
#: layer; rope_parameters keyed by layer type, as the hub config and the cohere_compass converter tests have it)
TEXT = {"model_type": "cohere_compass_text", "vocab_size": 1000, "hidden_size": 128, "intermediate_size": 352,
        "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 16,
        "logit_scale": 0.25, "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 50000.0,
                                                  "mrope_interleaved": True, "mrope_section": [8, 4, 4]},
                            "full_attention": None}}
VISION = {"model_type": "cohere_compass_vision", "depth": 3, "hidden_size": 64, "intermediate_size": 96,
          "num_heads": 4, "out_hidden_size": 128, "num_position_embeddings": 64, "deepstack_visual_indexes": [0, 1]}
WRAPPER = {"model_type": "cohere_compass", "text_config": TEXT, "vision_config": VISION}


def hf(cfg: dict):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.cohere_compass import configuration_cohere_compass as C
    from transformers.models.cohere_compass import modeling_cohere_compass as M

    transformers.logging.set_verbosity_error()
    d = {k: v for k, v in cfg.items() if k != "model_type"}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        if cfg["model_type"] == "cohere_compass_text":  # AutoModelForCausalLM's class
            return M.CohereCompassForCausalLM(C.CohereCompassTextConfig(**d))
        return M.CohereCompassForConditionalGeneration(C.CohereCompassConfig(**d))


def text_by_hand(h, layers, heads, kv, inter, vocab, *, tied=True) -> int:
    hd = h // heads
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    return vocab * h * (1 if tied else 2) + layers * (attn + 3 * h * inter + h) + h  # one LayerNorm weight a layer


def vision_by_hand(h, depth, inter, out, pos, deepstack, patch=16, temporal=2, merge=2) -> int:
    merged = h * merge * merge
    block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merger = lambda norm: 2 * norm + (merged * merged + merged) + (merged * out + out)  # noqa: E731
    return (3 * temporal * patch * patch * h + h + pos * h + depth * block + merger(h)
            + deepstack * merger(merged))


@pytest.mark.parametrize("tie", [None, True, False])
def test_text_equals_transformers_and_hand(tie):
    cfg = dict(TEXT) if tie is None else dict(TEXT, tie_word_embeddings=tie)
    spec = parse_config(cfg)
    total = text_by_hand(128, 8, 4, 2, 352, 1000, tied=tie is not False)
    assert count_params(spec).total == total == unique_param_count(hf(cfg))
    assert [m.mixer.window for m in spec.layers] == [16, 16, 16, None] * 2
    assert [m.mixer.rotary_dim for m in spec.layers] == [32, 32, 32, 0] * 2
    assert {m.mixer.rope_theta for m in spec.layers if m.mixer.rotary_dim} == {50000.0}
    assert spec.numerics.rope_style == RopeStyle.HALF and spec.numerics.logit_scale == 0.25
    # K and V of 2 heads x 32 features a layer, bf16
    assert sum(m.mixer.kv_elements_per_token() for m in spec.layers) * 2 == 8 * 2 * 2 * 32 * 2


@pytest.mark.parametrize("tie, text_tie", [(None, None), (True, None), (None, True), (False, True), (True, False)])
def test_wrapper_equals_transformers_and_hand(tie, text_tie):
    """The wrapper's tie_word_embeddings decides (CohereCompassConfig: default false), not the text_config's."""
    cfg = json.loads(json.dumps(WRAPPER))
    if tie is not None:
        cfg["tie_word_embeddings"] = tie
    if text_tie is not None:
        cfg["text_config"]["tie_word_embeddings"] = text_tie
    p = count_params(parse_config(cfg))
    vision = vision_by_hand(64, 3, 96, 128, 64, 2)
    text = text_by_hand(128, 8, 4, 2, 352, 1000, tied=bool(tie))
    assert p.vision == vision
    assert p.total == text + vision == unique_param_count(hf(cfg))


def test_layer_types_absent_is_all_full():
    cfg = {k: v for k, v in TEXT.items() if k != "layer_types"}
    cfg["rope_parameters"] = {"full_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    spec = parse_config(cfg)
    assert [m.mixer.window for m in spec.layers] == [None] * 8
    assert [m.mixer.rotary_dim for m in spec.layers] == [32] * 8
    assert count_params(spec).total == unique_param_count(hf(cfg))


def test_class_default_is_refused_as_transformers_cannot_build_it():
    """CohereCompassRotaryEmbedding reads rope_parameters[layer_type]: the class default's flat rope_parameters
    makes transformers raise KeyError 'full_attention'; planner refuses it with that reason."""
    cfg = {k: v for k, v in TEXT.items() if k not in ("layer_types", "rope_parameters")}
    with pytest.raises(KeyError, match="full_attention"):
        hf(cfg)
    with pytest.raises(ConfigError, match="rope_parameters' must map each layer type"):
        parse_config(cfg)
    with pytest.raises(ConfigError, match="rope_parameters"):
        parse_config({"model_type": "cohere_compass", "text_config": {"model_type": "cohere_compass_text"}})


@pytest.mark.parametrize("change, error", [
    ({"num_attention_heads": 5}, "num_attention_heads"),
    ({"layer_types": ["sliding_attention"] * 7}, "layer_types"),
    ({"layer_types": ["linear_attention"] * 8}, "layer_types"),
    ({"rope_parameters": {"sliding_attention": {"rope_theta": 1e4}}}, "rope_parameters"),
    ({"rope_parameters": {"sliding_attention": {"rope_theta": -1}, "full_attention": None}}, "rope_theta"),
])
def test_bad_configs_are_refused(change, error):
    with pytest.raises(ConfigError, match=error):
        parse_config(dict(TEXT, **change))


def test_scaled_rope_is_refused_by_name():
    rope = {"sliding_attention": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}, "full_attention": None}
    with pytest.raises(UnsupportedModelError, match="cohere_compass_text with rope"):
        parse_config(dict(TEXT, rope_parameters=rope))


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(WRAPPER))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == text_by_hand(128, 8, 4, 2, 352, 1000, tied=False) + vision_by_hand(
        64, 3, 96, 128, 64, 2)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_type": "cohere_compass", "text_config": {"model_type": "cohere_compass_text"}}))
    run("analyze", bad).assert_error("rope_parameters")
