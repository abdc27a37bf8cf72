"""Muse Spark whole (``muse_spark``, MuseSparkForConditionalGeneration): the language model (muse_spark_text, counted
in tests/test_families.py), the vision tower, vision adapter and projection (kind ``vision``) and the convolutional
audio tower (kind ``audio``) of analysis/families/muse_spark_towers.py, against a hand count written from
transformers 5.24's modeling_muse_spark.py module shapes, against the model transformers builds on the meta device
(the class defaults, Muse-Spark-Open-816B-A42B's shape, and small custom towers), and against the published
"816B total / 42B active" (which leaves out the embedding and head and, as the language model's, the towers).
No released config.json was at hand (no mirror of the checkpoint or of a vLLM / SGLang port was found).
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
from tests.test_families import MUSE_SPARK_TEXT

CLASS_DEFAULTS = {"model_type": "muse_spark", "text_config": {}}
TEXT_DEFAULT_TOTAL = 819_990_536_192  # muse_spark_text's class defaults + lm_head (tests/test_families.py)
TEXT_DEFAULT_ACTIVE = 46_091_116_544
# MuseSparkTextConfig's core fields, spelt out for the language model read on its own (a top-level config gets no
# core-field defaults)
DEFAULT_TEXT = {"hidden_size": 8192, "num_hidden_layers": 62, "num_attention_heads": 128, "num_key_value_heads": 16,
                "vocab_size": 202048}

# small towers around the small language model (hidden 128): 3 vision layers of 64 (4 heads), 4x4 positions, merge 2
# (so out_hidden_size 64 x 2^2 = 256), a three-stage audio pyramid with a conv-less middle stage and mlp_ratio 2.5
SMALL = {"model_type": "muse_spark", "text_config": MUSE_SPARK_TEXT, "out_hidden_size": 256,
         "projector_hidden_size": 80,
         "vision_config": {"model_type": "muse_spark_vision", "hidden_size": 64, "intermediate_size": 96,
                           "num_hidden_layers": 3, "num_attention_heads": 4, "patch_size": 4, "patch_temporal": 2,
                           "pos_emb_height": 4, "pos_emb_width": 4, "merge_size": 2,
                           "layer_types": ["window_attention", "full_attention", "window_attention"]},
         "audio_config": {"model_type": "muse_spark_audio", "num_hidden_layers": 3, "patch_sizes": [4, 3, 2],
                          "hidden_sizes": [16, 24, 32], "depths": [1, 0, 2], "mlp_ratio": 2.5,
                          "conv_kernel_size": 5, "out_hidden_size": 128}}
# the same with merge 3 and a single-stage audio tower of the default kernel
SMALL_MERGE3 = copy.deepcopy(SMALL)
SMALL_MERGE3["vision_config"].update(merge_size=3, layer_types=None)
SMALL_MERGE3["out_hidden_size"] = 64 * 9
SMALL_MERGE3["audio_config"] = {"num_hidden_layers": 1, "patch_sizes": [8], "hidden_sizes": [40], "depths": [3],
                                "out_hidden_size": 128}


def vision_by_hand(h: int, inter: int, layers: int, patch: int, temporal: int, rows: int, merge: int, proj: int,
                   text_hidden: int) -> tuple[int, int, int]:
    """(vision tower, vision_adapter, vision_projection) from the module shapes."""
    layer = 2 * 2 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h)  # norm1/2, q/k/v/proj, fc1, fc2
    # patch embedding, position table, ln_pre, the layers, ln_post
    tower = temporal * 3 * patch * patch * h + rows * h + 2 * h + layers * layer + 2 * h
    return tower, h * merge * merge * proj + proj * proj, proj * text_hidden


def audio_by_hand(patches, widths, depths, ratio: float, kernel: int, out: int) -> int:
    n, prev = 0, 1
    for p, w, d in zip(patches, widths, depths):
        i = int(w * ratio)
        n += prev * p * w + w + w  # patch_embedder.proj (biased) + its RMSNorm
        n += d * ((w * kernel + w) + w + (w * i + i) + (i * w + w))  # depthwise conv, norm, fc1, fc2
        prev = w
    return n + prev + (prev * out + out) + out  # norm, proj, post_proj_norm


def _kinds(spec) -> tuple[int, int]:
    return (sum(t.numel for t in spec.vision if t.kind == "vision"),
            sum(t.numel for t in spec.vision if t.kind == "audio"))


def test_class_defaults_by_hand_and_published():
    """MuseSparkConfig()'s towers (Muse-Spark-Open-816B-A42B): 50 vision layers of 1536 (fc 8960, 16 heads), 14-pixel
    patches over 2 frames, 32 x 32 positions, merge 2 -> a 6144 -> 4096 -> 4096 adapter and a 4096 -> 8192
    projection; the audio pyramid (16, 6, 5, 4) x (256, 512, 1024, 2048), two conv blocks a stage, kernel 7, MLP x4,
    to 8192. The towers ride on the language model; published 816B / 42B are the language model's without the
    embedding and head."""
    tower, adapter, projection = vision_by_hand(1536, 8960, 50, 14, 2, 32 * 32, 2, 4096, 8192)
    assert (tower, adapter, projection) == (1_852_639_744, 41_943_040, 33_554_432)
    audio = audio_by_hand((16, 6, 5, 4), (256, 512, 1024, 2048), (2, 2, 2, 2), 4.0, 7, 8192)
    assert audio == 117_840_384
    spec = parse_config(CLASS_DEFAULTS)
    p = count_params(spec)
    assert _kinds(spec) == (tower + adapter + projection, audio)
    assert p.total == TEXT_DEFAULT_TOTAL + tower + adapter + projection + audio == 822_036_513_792
    assert p.active == TEXT_DEFAULT_ACTIVE + tower + adapter + projection + audio
    embed_and_head = 2 * 202048 * 8192
    assert 816e9 < TEXT_DEFAULT_TOTAL - embed_and_head < 817e9 and 42e9 < TEXT_DEFAULT_ACTIVE - embed_and_head < 43e9


@pytest.mark.parametrize("cfg", [SMALL, SMALL_MERGE3], ids=["small", "merge3"])
def test_small_towers_by_hand(cfg):
    v, a, t = cfg["vision_config"], cfg["audio_config"], cfg["text_config"]
    tower, adapter, projection = vision_by_hand(v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"],
                                                v["patch_size"], v["patch_temporal"],
                                                v["pos_emb_height"] * v["pos_emb_width"], v["merge_size"],
                                                cfg["projector_hidden_size"], t["hidden_size"])
    audio = audio_by_hand(a["patch_sizes"], a["hidden_sizes"], a["depths"], a.get("mlp_ratio", 4.0),
                          a.get("conv_kernel_size", 7), a["out_hidden_size"])
    spec = parse_config(cfg)
    assert _kinds(spec) == (tower + adapter + projection, audio)
    assert count_params(spec).total == count_params(parse_config(t)).total + tower + adapter + projection + audio


@pytest.mark.parametrize("cfg", [CLASS_DEFAULTS, SMALL, SMALL_MERGE3], ids=["class-defaults", "small", "merge3"])
def test_total_and_towers_equal_transformers(cfg):
    """MuseSparkForConditionalGeneration on the meta device: the whole total, and model.vision_tower +
    vision_adapter + vision_projection (kind vision), model.audio_tower (kind audio), each."""
    from tests.oracle import hf_class_model

    model = hf_class_model(cfg, "MuseSparkForConditionalGeneration")
    by_child: dict[str, int] = {}
    for name, prm in model.named_parameters():
        child = name.split(".")[1] if name.startswith("model.") else name.split(".")[0]
        by_child[child] = by_child.get(child, 0) + prm.numel()
    spec = parse_config(cfg)
    assert count_params(spec).total == sum(by_child.values())
    assert _kinds(spec) == (by_child["vision_tower"] + by_child["vision_adapter"] + by_child["vision_projection"],
                            by_child["audio_tower"])
    names = {name: tuple(prm.shape) for name, prm in model.named_parameters()
             if name.startswith(("model.vision", "model.audio"))}
    assert {t.name: tuple(t.shape) for t in spec.vision} == names


def test_audio_tuple_defaults_are_transformers():
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import MuseSparkAudioConfig

    from planner.analysis.families import muse_spark_towers as towers

    c = MuseSparkAudioConfig()
    assert (tuple(c.patch_sizes), tuple(c.hidden_sizes), tuple(c.depths)) == \
        (towers.AUDIO_PATCH_SIZES, towers.AUDIO_HIDDEN_SIZES, towers.AUDIO_DEPTHS)


@pytest.mark.parametrize("cfg", [CLASS_DEFAULTS, SMALL], ids=["class-defaults", "small"])
def test_decode_trace_and_kv_stay_the_language_model(cfg):
    """The towers change the parameter count only: KV bytes per token and the decode FLOPs are the text_config's
    (class defaults: 62 layers x 2 x 16 KV heads x 64 x 2 bytes = 248 KiB a token in bf16)."""
    text = dict(cfg["text_config"] or DEFAULT_TEXT, model_type="muse_spark_text")
    opts = Options(context=100, dtype="bf16", kv_dtype="bf16")
    whole, alone = analyze(parse_config(cfg), opts), analyze(parse_config(text), opts)
    assert whole.kv.bytes_per_token == alone.kv.bytes_per_token
    assert (whole.decode_flops, whole.prefill_flops) == (alone.decode_flops, alone.prefill_flops)
    if cfg is CLASS_DEFAULTS:
        assert whole.kv.bytes_per_token == 62 * 2 * 16 * 64 * 2 == 248 * 1024


@pytest.mark.parametrize("change,field", [
    ({"out_hidden_size": 512}, "out_hidden_size"),
    ({"vision_config": {"hidden_size": 64, "num_attention_heads": 5}}, "num_attention_heads"),
    ({"vision_config": {"layer_types": ["full_attention"]}}, "layer_types"),
    ({"vision_config": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}}, "rope_parameters"),
    ({"audio_config": {"out_hidden_size": 64}}, "out_hidden_size"),
    ({"audio_config": {"patch_sizes": [4, 3]}}, "patch_sizes"),
    ({"audio_config": {"num_hidden_layers": 2, "patch_sizes": None, "hidden_sizes": None, "depths": None}},
     "num_hidden_layers"),
    ({"audio_config": {"mlp_ratio": 0.01}}, "mlp_ratio"),
    ({"audio_config": [1]}, "audio_config"),
])
def test_bad_towers_are_config_errors(change, field):
    cfg = copy.deepcopy(SMALL)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key].update(value)
        else:
            cfg[key] = value
    with pytest.raises(ConfigError, match=field):
        parse_config(cfg)


def test_default_audio_tower_needs_the_default_text_width():
    """An absent audio_config is the class default (out_hidden_size 8192): with a narrower language model
    transformers' validate_architecture refuses it, and so do we."""
    with pytest.raises(ConfigError, match="out_hidden_size"):
        parse_config({"model_type": "muse_spark", "text_config": MUSE_SPARK_TEXT,
                      "vision_config": SMALL["vision_config"], "out_hidden_size": 256})


@pytest.mark.parametrize("key,tower", [("vision_config", "siglip_vision_model"), ("audio_config", "whisper")])
def test_other_towers_are_refused_by_name(key, tower):
    cfg = copy.deepcopy(SMALL)
    cfg[key]["model_type"] = tower
    with pytest.raises(UnsupportedModelError, match=tower):
        parse_config(cfg)


def test_cli_end_to_end(tmp_path):
    good = tmp_path / "config.json"
    good.write_text(json.dumps(SMALL))
    r = run("analyze", good, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == count_params(parse_config(SMALL)).total
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(SMALL, out_hidden_size=100)))
    run("analyze", bad).assert_error("out_hidden_size")


def test_verify_refuses_with_one_error_line(tmp_path):
    """The language model's residual gates and projected experts are not in the torch runtime: verify refuses."""
    (tmp_path / "config.json").write_text(json.dumps(SMALL))
    run("verify", tmp_path / "config.json", "--device", "cpu", "--steps", "1").assert_error(
        "verify does not support Muse Spark's decoder layer")


@pytest.mark.parametrize("form", ["to_dict", "to_diff_dict"])
def test_saved_config_forms_read_the_same(form):
    """A config.json as transformers saves MuseSparkConfig() (every field, or the diff against the class defaults:
    nested tower configs with their model_types, axial rope_parameters, tuple fields as lists) reads to the same
    822,036,513,792."""
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import MuseSparkConfig

    saved = json.loads(json.dumps(getattr(MuseSparkConfig(), form)()))
    assert count_params(parse_config(saved)).total == count_params(parse_config(CLASS_DEFAULTS)).total \
        == 822_036_513_792
