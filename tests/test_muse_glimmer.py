"""Muse Glimmer (muse_glimmer_text and the muse_glimmer wrapper with its vision tower): exact counts against a hand
count from transformers 5.24's modeling_muse_glimmer.py and against transformers on the meta device."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: MuseGlimmerTextConfig's class defaults (transformers 5.24, documented as meta-models/Muse-Glimmer-30B's shape)
GLIMMER_30B_TEXT = {"model_type": "muse_glimmer_text", "vocab_size": 202048, "hidden_size": 6656,
                    "intermediate_size": 19968, "num_hidden_layers": 52, "num_attention_heads": 32,
                    "num_key_value_heads": 2, "head_dim": 128, "hidden_activation": "silu",
                    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
                    "attention_bias": False, "sliding_window": 2048, "final_logit_softcapping": 20.0,
                    "qk_scale_factor": 3.87, "output_multiplier": 0.19611613513818404, "post_norm_eps": 1e-8}
#: MuseGlimmerVisionConfig's and MuseGlimmerConfig's class defaults
GLIMMER_30B_VISION = {"model_type": "muse_glimmer_vision", "patch_size": 14, "pos_emb_height": 32, "pos_emb_width": 32,
                      "num_attention_heads": 16, "num_hidden_layers": 50, "hidden_size": 1536,
                      "intermediate_size": 8960, "hidden_act": "gelu", "patch_temporal": 2, "merge_size": 2}
GLIMMER_30B = {"model_type": "muse_glimmer", "text_config": GLIMMER_30B_TEXT, "vision_config": GLIMMER_30B_VISION,
               "out_hidden_size": 6144, "projector_hidden_size": 4096, "projector_hidden_act": "gelu"}

SMALL_TEXT = {"model_type": "muse_glimmer_text", "vocab_size": 500, "hidden_size": 128, "intermediate_size": 320,
              "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 48,
              "sliding_window": 16, "attention_bias": True}
SMALL_VISION = {"model_type": "muse_glimmer_vision", "patch_size": 4, "pos_emb_height": 6, "pos_emb_width": 5,
                "num_attention_heads": 4, "num_hidden_layers": 3, "hidden_size": 32, "intermediate_size": 80,
                "patch_temporal": 2, "merge_size": 2}
SMALL = {"model_type": "muse_glimmer", "text_config": SMALL_TEXT, "vision_config": SMALL_VISION,
         "out_hidden_size": 128, "projector_hidden_size": 72}


def text_by_hand(h, layers, heads, kv, hd, inter, vocab, *, bias=False, tied=False) -> int:
    q = h * heads * hd + (heads * hd if bias else 0)
    k = v = h * kv * hd + (kv * hd if bias else 0)
    o = heads * hd * h + (h if bias else 0)
    gate = h * heads * hd  # the bias-free sigmoid gate_proj
    mlp = 3 * h * inter
    norms = 4 * h  # four centred RMSNorms (the q/k norm has no weight)
    return vocab * h * (1 if tied else 2) + layers * (q + k + v + o + gate + mlp + norms) + h  # + final norm


def vision_by_hand(h, layers, inter, patch, temporal, rows, out_hidden, proj, text_h) -> int:
    block = 2 * 2 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h)
    tower = temporal * 3 * patch * patch * h + rows * h + 2 * 2 * h + layers * block
    return tower + out_hidden * proj + proj * proj + proj * text_h


def test_glimmer_30b_by_hand_and_kv():
    total = text_by_hand(6656, 52, 32, 2, 128, 19968, 202048)
    vision = vision_by_hand(1536, 50, 8960, 14, 2, 32 * 32, 6144, 4096, 6656)
    assert total == 27_854_780_928 and vision == 1_921_845_760
    p = count_params(parse_config(GLIMMER_30B))
    assert (p.total, p.vision) == (total + vision, vision) == (29_776_626_688, 1_921_845_760)
    spec = parse_config(GLIMMER_30B_TEXT)
    assert count_params(spec).total == total
    # 39 sliding layers (2048 keys) and 13 full NoPE layers, 2 KV heads of 128, K and V, bf16: 1 KiB a layer
    kinds = [layer.mixer.window for layer in spec.layers]
    assert kinds.count(2048) == 39 and kinds.count(None) == 13 and kinds[-1] is None and kinds[3] is None
    assert [layer.mixer.rotary_dim for layer in spec.layers][3::4] == [0] * 13
    assert sum(layer.mixer.kv_elements_per_token() for layer in spec.layers) * 2 == 52 * 2 * 2 * 128 * 2 == 53_248


def test_glimmer_30b_equals_transformers():
    model = hf_model(GLIMMER_30B)
    assert unique_param_count(model) == 29_776_626_688 == count_params(parse_config(GLIMMER_30B)).total


@pytest.mark.parametrize("tie, text_tie", [(None, None), (None, True), (True, None), (True, False), (False, True)])
def test_small_wrapper_equals_transformers_and_hand(tie, text_tie):
    """The wrapper's tie_word_embeddings decides (MuseGlimmerConfig has no such field: absent, untied); the
    text_config's flag is not read."""
    cfg = json.loads(json.dumps(SMALL))
    if tie is not None:
        cfg["tie_word_embeddings"] = tie
    if text_tie is not None:
        cfg["text_config"]["tie_word_embeddings"] = text_tie
    model = hf_model(cfg)
    p = count_params(parse_config(cfg))
    text = text_by_hand(128, 6, 4, 2, 48, 320, 500, bias=True, tied=bool(tie))
    vision = vision_by_hand(32, 3, 80, 4, 2, 30, 128, 72, 128)
    assert p.vision == vision
    assert p.total == text + vision == unique_param_count(model)
    lm = sum(x.numel() for n, x in model.named_parameters() if "language_model." in n or n.startswith("lm_head."))
    assert p.total - p.vision == lm == text


def test_layer_types_and_rope_theta_are_read():
    cfg = dict(SMALL_TEXT, layer_types=["full_attention"] * 6, layer_rope_theta=[0, 1e4, 1e4, 0, 1e4, 1e4])
    spec = parse_config(cfg)
    assert [m.mixer.window for m in spec.layers] == [None] * 6
    assert [m.mixer.rotary_dim for m in spec.layers] == [0, 48, 48, 0, 48, 48]


@pytest.mark.parametrize("change, error", [
    ({"num_attention_heads": 5}, "num_attention_heads"),
    ({"layer_types": ["full_attention"] * 5}, "layer_types"),
    ({"layer_types": ["chunked_attention"] * 6}, "layer_types"),
    ({"layer_rope_theta": [1.0] * 5}, "layer_rope_theta"),
])
def test_bad_text_configs_are_refused(change, error):
    with pytest.raises(ConfigError, match=error):
        parse_config(dict(SMALL_TEXT, **change))


def test_other_vision_tower_is_refused():
    cfg = dict(SMALL, vision_config=dict(SMALL_VISION, model_type="siglip_vision_model"))
    with pytest.raises(UnsupportedModelError, match="muse_glimmer's vision tower 'siglip_vision_model'"):
        parse_config(cfg)


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GLIMMER_30B))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 29_776_626_688 and r.json["params"]["vision"] == 1_921_845_760
    assert r.json["kv_cache"]["bytes_per_token"] == 53_248
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(GLIMMER_30B, text_config=dict(GLIMMER_30B_TEXT, num_attention_heads=33))))
    run("analyze", bad).assert_error("num_attention_heads")


def test_verify_refuses(tmp_path):
    """Its centred norms (1 + w) beside a plain final norm, weightless q/k norms with a query scale: not run."""
    (tmp_path / "config.json").write_text(json.dumps(SMALL_TEXT))
    run("verify", tmp_path, "--device", "cpu", "--steps", "1").assert_error("verify does not support")
