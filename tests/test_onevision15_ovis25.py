"""transformers 5.25's LLaVA-OneVision-1.5 (``llava_onevision1_5``: RICE ViT + merger) and Ovis2.5 in transformers'
format (``ovis2_5`` with text_config / vision_config: NaViT SigLIP + visual tokenizer + visual embedding table), and
pi0.5 (``pi05``) refused by name (analysis/families/onevision15_ovis25.py).

Oracles: the whole ``*ForConditionalGeneration`` on the meta device (tests/oracle.py; the towers as every parameter
outside ``language_model`` and ``lm_head``, and their names), and for Ovis2.5-9B the published checkpoint's
model.safetensors.index.json total_size (the same tensors under the remote-code names: tests/test_ovis_remote.py).
No expected count is copied from planner's output."""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_model, unique_param_count
from tests.test_ovis_remote import OVIS2_5_2B, OVIS2_5_9B, OVIS2_5_9B_TOTAL_SIZE

BF16 = get_dtype("bf16")


def _class_default(model_type: str) -> dict:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return json.loads(json.dumps(CONFIG_MAPPING[model_type]().to_dict(), default=str))


# LLaVA-OneVision-1.5-8B's shape as a transformers pull request's model test writes it
# (tests/models/llava_onevision1_5/test_modeling_llava_onevision1_5.py, LlavaOnevisionVision1_5Text2TextModelTester
# defaults; code index id 3518272345): the Qwen3-8B text_config and the RICE ViT-L/14 vision_config in the
# published checkpoints' spelling (model_type rice_vit, text_hidden_size, an unread embed_dim), verbatim except the
# per-layer layer_types list, written as a product. Its spatial_merge_size is 1 (the test's; the released towers
# merge 2 x 2, as LlavaOnevision15VisionConfig's default).
ONEVISION15_8B_SHAPE = {
    "model_type": "llava_onevision1_5", "image_token_id": 151655, "video_token_id": 151656,
    "vision_start_token_id": 3,
    "text_config": {
        "attention_bias": False, "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
        "image_token_id": None, "initializer_range": 0.02, "intermediate_size": 12288, "tie_word_embeddings": False,
        "layer_types": ["full_attention"] * 36, "max_position_embeddings": 32768, "max_window_layers": 36,
        "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None,
        "use_cache": True, "use_sliding_window": False, "video_token_id": None, "vocab_size": 151936},
    "vision_config": {
        "depth": 24, "embed_dim": 1024, "hidden_act": "gelu", "hidden_size": 1024, "in_channels": 3,
        "initializer_range": 0.02, "intermediate_size": 4096, "layer_norm_eps": 1e-05, "model_type": "rice_vit",
        "num_heads": 16, "patch_size": 14, "spatial_merge_size": 1, "temporal_patch_size": 1,
        "text_hidden_size": 4096},
}

TINY_TEXT = dict(model_type="qwen3", hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, vocab_size=320, max_position_embeddings=256)
# varied: tied by the wrapper, a 3 x 3 merge, 16-pixel patches, 2 channels, the standard field names
# (LlavaOnevision15VisionConfig.attribute_map) and the wrapper's own vision model_type spelling
ONEVISION15_VARIED = {
    "model_type": "llava_onevision1_5", "tie_word_embeddings": True, "text_config": dict(TINY_TEXT),
    "vision_config": {"model_type": "llava_onevision1_5", "hidden_size": 48, "intermediate_size": 80,
                      "num_hidden_layers": 3, "num_attention_heads": 4, "in_channels": 2, "patch_size": 16,
                      "spatial_merge_size": 3, "out_hidden_size": 64}}
# text_config asks for a tie the wrapper does not make (transformers ties by the wrapper's flag alone)
ONEVISION15_TEXT_TIE = dict(ONEVISION15_VARIED, tie_word_embeddings=False,
                            text_config=dict(TINY_TEXT, tie_word_embeddings=True))


def _ovis_native(remote: dict, tie: bool) -> dict:
    """A remote-code Ovis2.5 config in transformers' format, field for field as Ovis2_5Config / Ovis2_5VisionConfig
    name them: llm_config -> text_config, vit_config -> vision_config (hidden_stride -> spatial_merge_size,
    visual_vocab_size -> vocab_size with its 4 indicator tokens), the language model's tie -> the wrapper's flag."""
    vit = remote["vit_config"]
    text = {k: v for k, v in remote["llm_config"].items() if k not in ("architectures", "_name_or_path")}
    return {"model_type": "ovis2_5", "tie_word_embeddings": tie, "text_config": text,
            "vision_config": {"model_type": "ovis2_5_vision", "hidden_size": vit["hidden_size"],
                              "intermediate_size": vit["intermediate_size"],
                              "num_hidden_layers": vit["num_hidden_layers"],
                              "num_attention_heads": vit["num_attention_heads"], "num_channels": vit["num_channels"],
                              "patch_size": vit["patch_size"], "image_size": vit["image_size"],
                              "hidden_act": vit["hidden_act"], "layer_norm_eps": vit["layer_norm_eps"],
                              "spatial_merge_size": vit["hidden_stride"], "window_size": vit["window_size"],
                              "temporal_patch_size": vit["temporal_patch_size"],
                              "vocab_size": remote["visual_vocab_size"], "num_visual_indicator_tokens": 4}}


OVIS2_5_9B_NATIVE = _ovis_native(OVIS2_5_9B, tie=False)
OVIS2_5_2B_NATIVE = _ovis_native(OVIS2_5_2B, tie=True)
# varied: tied, 6 indicator tokens, a 3 x 3 merge, 448-pixel images in 14-pixel patches, a smaller tower
OVIS2_5_VARIED = {
    "model_type": "ovis2_5", "tie_word_embeddings": True, "text_config": dict(TINY_TEXT),
    "vision_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 3, "num_attention_heads": 4,
                      "patch_size": 14, "image_size": 448, "spatial_merge_size": 3, "vocab_size": 500,
                      "num_visual_indicator_tokens": 6}}
OVIS2_5_TEXT_TIE = dict(OVIS2_5_VARIED, text_config=dict(TINY_TEXT, tie_word_embeddings=True))
del OVIS2_5_TEXT_TIE["tie_word_embeddings"]

CASES = {
    "onevision15-default": lambda: _class_default("llava_onevision1_5"),
    "onevision15-8b-shape": lambda: ONEVISION15_8B_SHAPE,
    "onevision15-varied": lambda: ONEVISION15_VARIED,
    "onevision15-text-tie": lambda: ONEVISION15_TEXT_TIE,
    "ovis2_5-default": lambda: _class_default("ovis2_5"),
    "ovis2_5-9b": lambda: OVIS2_5_9B_NATIVE,
    "ovis2_5-2b": lambda: OVIS2_5_2B_NATIVE,
    "ovis2_5-varied": lambda: OVIS2_5_VARIED,
    "ovis2_5-text-tie": lambda: OVIS2_5_TEXT_TIE,
}


def _tower_params(model) -> dict[str, tuple[int, ...]]:
    """transformers' parameters outside the language model and lm_head, by name (the towers and projectors)."""
    return {n: tuple(p.shape) for n, p in model.named_parameters()
            if not ("language_model." in n or n.startswith("lm_head."))}


def _hf_kv_per_token(cfg: dict) -> int:
    transformers = pytest.importorskip("transformers")
    d = copy.deepcopy(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conf = transformers.AutoConfig.for_model(d.pop("model_type"), **d).get_text_config(decoder=True)
    head_dim = getattr(conf, "head_dim", None) or conf.hidden_size // conf.num_attention_heads
    return conf.num_hidden_layers * 2 * conf.num_key_value_heads * head_dim * 2


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_model_and_towers_equal_transformers(name):
    cfg = CASES[name]()
    model = hf_model(copy.deepcopy(cfg), image_text=True)
    spec = parse_config(copy.deepcopy(cfg))
    p = count_params(spec)
    hf_towers = _tower_params(model)
    assert (p.total, p.vision, p.audio) == (unique_param_count(model), sum(map(_numel, hf_towers.values())), 0)
    # tensor for tensor: planner's vision tensors are transformers' names and shapes
    assert {t.name: tuple(t.shape) for t in spec.vision} == hf_towers
    assert kv_cache(spec, BF16, BF16).bytes_per_token == _hf_kv_per_token(cfg)
    assert not any("not counted" in c or "not a known family" in c for c in spec.caveats)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_ovis2_5_9b_native_equals_the_published_index():
    """The transformers-format Ovis2.5-9B is the released checkpoint's tensors renamed: bf16 bytes = the published
    model.safetensors.index.json total_size, and the same count as the remote-code format."""
    total = count_params(parse_config(copy.deepcopy(OVIS2_5_9B_NATIVE))).total
    assert 2 * total == OVIS2_5_9B_TOTAL_SIZE
    assert total == count_params(parse_config(copy.deepcopy(OVIS2_5_9B))).total
    assert count_params(parse_config(copy.deepcopy(OVIS2_5_2B_NATIVE))).total == \
        count_params(parse_config(copy.deepcopy(OVIS2_5_2B))).total


def test_ovis2_5_projector_by_hand():
    """Ovis2_5VisualTokenProjector: Linear(hidden * m^2 -> vocab - indicators, no bias) + LayerNorm(vocab - indicators);
    Ovis2_5VisualEmbeddingProjection: Linear(vocab -> text hidden, no bias) (modeling_ovis2_5.py)."""
    spec = parse_config(copy.deepcopy(OVIS2_5_VARIED))
    proj = sum(t.numel for t in spec.vision if t.name.startswith("model.multi_modal_projector."))
    rows = 500 - 6
    assert proj == rows * 48 * 9 + 2 * rows + 500 * 64


def test_onevision15_rice_embeddings_by_hand():
    """LlavaOnevision15VisionModel: a bias-free patch conv, class_embedding (hidden), class_pos_emb
    (1, hidden // heads // 2), a LayerNorm pre_layernorm; the merger LayerNorm(hidden) + two biased Linears."""
    spec = parse_config(copy.deepcopy(ONEVISION15_VARIED))
    v = {t.name: t.numel for t in spec.vision}
    assert v["model.visual.patch_embed.proj.weight"] == 48 * 2 * 16 * 16
    assert v["model.visual.cls_embeddings.class_pos_emb"] == 48 // 4 // 2
    merged = 48 * 9
    merger = sum(n for k, n in v.items() if k.startswith("model.visual.merger."))
    assert merger == 2 * 48 + merged * merged + merged + 64 * merged + 64


def test_tie_is_the_wrappers_flag():
    tied = count_params(parse_config(copy.deepcopy(ONEVISION15_VARIED)))
    untied = count_params(parse_config(copy.deepcopy(ONEVISION15_TEXT_TIE)))
    assert untied.total - tied.total == 320 * 64
    o_tied = count_params(parse_config(copy.deepcopy(OVIS2_5_VARIED)))
    o_text = count_params(parse_config(copy.deepcopy(OVIS2_5_TEXT_TIE)))
    assert o_text.total - o_tied.total == 320 * 64


def test_bad_configs_are_refused():
    with pytest.raises(ConfigError, match="out_hidden_size"):
        parse_config(dict(ONEVISION15_VARIED, vision_config=dict(ONEVISION15_VARIED["vision_config"],
                                                                 out_hidden_size=32)))
    with pytest.raises(ConfigError, match="num_heads"):
        parse_config(dict(ONEVISION15_VARIED, vision_config=dict(ONEVISION15_VARIED["vision_config"],
                                                                 num_attention_heads=8)))
    with pytest.raises(UnsupportedModelError, match="siglip_vision_model"):
        parse_config(dict(ONEVISION15_VARIED, vision_config=dict(ONEVISION15_VARIED["vision_config"],
                                                                 model_type="siglip_vision_model")))
    with pytest.raises(ConfigError, match="num_visual_indicator_tokens"):
        parse_config(dict(OVIS2_5_VARIED, vision_config=dict(OVIS2_5_VARIED["vision_config"],
                                                             num_visual_indicator_tokens=500)))
    with pytest.raises(ConfigError, match="both vision_config"):
        parse_config(dict(OVIS2_5_9B_NATIVE, vit_config=OVIS2_5_9B["vit_config"]))
    with pytest.raises(UnsupportedModelError, match="siglip2_navit"):
        parse_config(dict(OVIS2_5_VARIED, vision_config=dict(OVIS2_5_VARIED["vision_config"],
                                                             model_type="siglip2_navit")))
    # a text_config that is not an object: one ConfigError, not a TypeError from dict() (found by mutation fuzzing)
    for bad in ("float8_e4m3fn", -1, [0, -1]):
        with pytest.raises(ConfigError, match="'text_config' must be an object"):
            parse_config(dict(OVIS2_5_VARIED, text_config=bad))


def test_cli_and_pi05_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OVIS2_5_9B_NATIVE))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert 2 * r.json["params"]["total"] == OVIS2_5_9B_TOTAL_SIZE
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(ONEVISION15_VARIED, vision_config=dict(ONEVISION15_VARIED["vision_config"],
                                                                          out_hidden_size=32))))
    run("analyze", str(bad)).assert_error("out_hidden_size")
    pi = tmp_path / "pi05.json"
    pi.write_text(json.dumps(_class_default("pi05")))
    run("analyze", str(pi)).assert_error("pi0.5")
    pi.write_text(json.dumps(_class_default("pi0")))  # pi0.5's predecessor (transformers 5.24), before: "unsupported"
    run("analyze", str(pi)).assert_error("vision-language-action policy")
    # lmms-lab's remote-code format: the model_types its config classes set (lmms_engine's Llavaonevision1_5Config
    # test: llavaonevision1_5 / llavaonevision1_5_text / rice_vit; code index id 58725885640), the 8B's shape
    remote = dict(ONEVISION15_8B_SHAPE, model_type="llavaonevision1_5",
                  text_config=dict(ONEVISION15_8B_SHAPE["text_config"], model_type="llavaonevision1_5_text"))
    pi.write_text(json.dumps(remote))
    run("analyze", str(pi)).assert_error("llavaonevision1_5_text")


@pytest.mark.parametrize("cfg", [ONEVISION15_VARIED, OVIS2_5_VARIED], ids=["onevision15", "ovis2_5"])
def test_language_model_verifies(tmp_path, cfg):
    """verify builds the language model (the towers are counted apart): its exact self-checks pass."""
    verify_self_checks(tmp_path, copy.deepcopy(cfg), name=cfg["model_type"])
