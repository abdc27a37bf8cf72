"""Granite 4 Vision (``granite4_vision``): the whole checkpoint (SigLIP tower, image_newline, the layerwise and spatial
window Q-Former downsamplers, Granite's dense language model) against a hand count written from the module shapes of
transformers' modeling_granite4_vision.py (Granite4VisionWindowQFormerDownsampler, Blip2QFormerModel,
SiglipVisionModel, Granite4VisionTextModel), against transformers on the meta device and against the model card's
figures. ``granite4_vision_text`` alone stays refused. No network, no remote code."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

# ibm-granite/granite-4.0-3b-vision config.json at revision bf108f36960fb4df79bf035e506c592f4ee3c2d3, less
# image_grid_pinpoints and auto_map (they build nothing), as a public HF-reference probe script copies it
GRANITE_4_0_3B_VISION = dict(
    model_type="granite4_vision",
    architectures=["Granite4VisionForConditionalGeneration"], spatial_target_layers=[12, 15, 18, 21],
    spatial_stride=2, spatial_vision_layer=-1, downsample_rate="4/8", dtype="bfloat16",
    image_seq_length=576, image_token_index=100352, initializer_range=0.02,
    projector_dropout=0.1, projector_hidden_act="gelu", tie_word_embeddings=True,
    use_spatial_sampling=True, use_image_newline_parameter=True,
    vision_feature_select_strategy="full", deepstack_layer_map=[[-19, 9], [-13, 6], [-7, 3], [-1, 0]],
    text_config=dict(
        architectures=["GraniteMoeHybridForCausalLM"], model_type="granitemoehybrid",
        attention_bias=False, attention_dropout=0.0, attention_multiplier=0.015625,
        bos_token_id=100257, eos_token_id=100257, pad_token_id=100256, embedding_multiplier=12,
        hidden_act="silu", hidden_size=2560, initializer_range=0.1, intermediate_size=8192,
        layer_types=["attention"] * 40, logits_scaling=10, mamba_chunk_size=256,
        mamba_conv_bias=True, mamba_d_conv=4, mamba_d_head=40, mamba_d_state=256, mamba_expand=2,
        mamba_n_groups=1, mamba_n_heads=128, mamba_proj_bias=False,
        max_position_embeddings=131072, normalization_function="rmsnorm", num_attention_heads=40,
        num_experts_per_tok=0, num_hidden_layers=40, num_key_value_heads=8, num_local_experts=0,
        output_router_logits=False, position_embedding_type="rope", residual_multiplier=0.22,
        rms_norm_eps=1e-5, rope_scaling=None, rope_theta=10000000, router_aux_loss_coef=0.01,
        shared_intermediate_size=8192, tie_word_embeddings=True, use_cache=False, vocab_size=100353),
    vision_config=dict(
        model_type="siglip_vision_model", attention_dropout=0.0, hidden_act="gelu_pytorch_tanh",
        hidden_size=1152, image_size=384, intermediate_size=4304, layer_norm_eps=1e-6,
        num_attention_heads=16, num_channels=3, num_hidden_layers=27, patch_size=16),
)

TINY = {"model_type": "granite4_vision", "downsample_rate": "1/2", "deepstack_layer_map": [[-1, 0], [-2, 1]],
        "tie_word_embeddings": True,
        "text_config": {"model_type": "granite", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
                        "max_position_embeddings": 256, "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                        "attention_multiplier": 0.015625, "logits_scaling": 10.0},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 160,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 32, "patch_size": 8}}


def _lin(n_out: int, n_in: int) -> int:
    return n_out * n_in + n_out


def _siglip(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    """SiglipVisionModel: biased patch conv, learned positions, blocks (2 LayerNorms, biased q/k/v/out, fc1/fc2),
    post LayerNorm, attention-pooling head (probe, in_proj 3h x h + bias, out_proj, LayerNorm, MLP)."""
    block = 4 * h + 4 * _lin(h, h) + _lin(inter, h) + _lin(h, inter)
    head = h + 3 * h * h + 3 * h + _lin(h, h) + 2 * h + _lin(inter, h) + _lin(h, inter)
    return h * 3 * patch * patch + h + (image // patch) ** 2 * h + layers * block + 2 * h + head


def _downsampler(vh: int, text_h: int, q: int, w: int, q_inter: int = 3072) -> int:
    """Granite4VisionWindowQFormerDownsampler: query (q², vh), image_positions (w², vh), the Q-Former (a LayerNorm;
    one layer: self- and cross-attention, each biased query/key/value/output.dense + LayerNorm, the query
    feed-forward), norm, out_linear."""
    attention = 4 * _lin(vh, vh) + 2 * vh
    qformer = 2 * vh + 2 * attention + _lin(q_inter, vh) + _lin(vh, q_inter) + 2 * vh
    return q * q * vh + w * w * vh + qformer + 2 * vh + _lin(text_h, vh)


def _granite(v: int, h: int, inter: int, layers: int, heads: int, kv: int, tied: bool) -> int:
    hd = h // heads
    layer = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter + 2 * h
    return v * h * (1 if tied else 2) + layers * layer + h


def test_granite_4_0_3b_vision_by_hand_transformers_and_published():
    spec = parse_config(GRANITE_4_0_3B_VISION)
    p = count_params(spec)
    lm = _granite(100353, 2560, 8192, 40, 40, 8, tied=True)
    vision = _siglip(1152, 4304, 27, 384, 16) + 2560 + 8 * _downsampler(1152, 2560, 4, 8)
    assert _siglip(1152, 4304, 27, 384, 16) == 428_256_704
    assert 8 * _downsampler(1152, 2560, 4, 8) == 166_108_160
    assert p.vision == vision == 594_367_424
    assert p.total == p.active == lm + vision == 3_997_206_464
    # the model card: "a 3.4B LLM and 0.6B Vision Encoder and Projectors" (granite-vision-4.1-4b, the same shapes)
    assert round((p.total - p.vision) / 1e9, 1) == 3.4 and round(p.vision / 1e9, 1) == 0.6
    assert p.lm_head == 0  # tied by the wrapper's own flag
    # the cache is the language model's: 40 layers x K and V of 8 heads x 64, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 40 * 2 * 8 * 64 * 2 == 81_920
    hf = hf_class_model(GRANITE_4_0_3B_VISION, "Granite4VisionForConditionalGeneration")
    assert unique_param_count(hf) == p.total


def test_tensor_names_are_the_checkpoints():
    from planner.analysis.families.granite4_vision import granite4_vision_towers

    # the checkpoint's tower keys keep SiglipVisionModel's ``vision_model.`` level, which transformers 5's module
    # tree (and its load-time renaming) drops
    names = {t.name.replace("vision_tower.vision_model.", "vision_tower."): t.shape
             for t in granite4_vision_towers(GRANITE_4_0_3B_VISION, 2560, "x")}
    hf = hf_class_model(GRANITE_4_0_3B_VISION, "Granite4VisionForConditionalGeneration")
    ours = {n: tuple(s.shape) for n, s in hf.named_parameters() if not n.startswith(("model.language_model.",
                                                                                      "lm_head."))}
    assert names == ours


def test_tie_is_the_wrappers_flag():
    """transformers ties lm_head when the wrapper's tie_word_embeddings is true (absent: false); text_config's flag
    is not read."""
    cfg = copy.deepcopy(GRANITE_4_0_3B_VISION)
    del cfg["tie_word_embeddings"]
    p = count_params(parse_config(cfg))
    assert p.total == 3_997_206_464 + 100353 * 2560 == unique_param_count(
        hf_class_model(cfg, "Granite4VisionForConditionalGeneration"))


@pytest.mark.parametrize("change", [
    {},
    {"vision_config": None},  # CLIPVisionConfig's class defaults (the wrapper's default tower)
    {"vision_config": {"model_type": "clip_vision_model", "hidden_size": 128, "intermediate_size": 160,
                       "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 32, "patch_size": 8}},
    {"qformer_config": {"num_hidden_layers": 3, "intermediate_size": 48, "cross_attention_frequency": 2,
                        "use_qformer_text_input": True}},
    {"qformer_config": {}},  # given: Blip2QFormerConfig's class defaults (12 layers), not the init_kwargs
    {"deepstack_layer_map": [], "downsample_rate": "3/8", "tie_word_embeddings": False},
    {"text_config": {"model_type": "granite", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "head_dim": 32, "attention_bias": True, "mlp_bias": True,
                     "vocab_size": 256}},
], ids=["tiny", "clip_default", "clip", "qformer", "qformer_class_defaults", "no_layerwise", "text_head_dim_bias"])
def test_variants_equal_transformers(change):
    cfg = {**TINY, **change}
    assert count_params(parse_config(cfg)).total == unique_param_count(
        hf_class_model(cfg, "Granite4VisionForConditionalGeneration"))


def test_tiny_by_hand():
    p = count_params(parse_config(TINY))
    vision = _siglip(128, 160, 2, 32, 8) + 64 + 6 * _downsampler(128, 64, 1, 2)
    assert p.vision == vision
    assert p.total == _granite(256, 64, 96, 2, 4, 2, tied=True) + vision


def test_decode_is_the_language_models(tmp_path):
    """The deepstack additions cost only at prefill of image tokens: decode FLOPs and KV equal Granite's alone."""
    text = {**GRANITE_4_0_3B_VISION["text_config"], "model_type": "granite", "tie_word_embeddings": True}
    for k in [k for k in text if k.startswith("mamba_") or k == "layer_types"]:
        del text[k]
    out = {}
    for name, cfg in (("wrapper", GRANITE_4_0_3B_VISION), ("text", text)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(cfg))
        r = run("analyze", str(path), "--json")
        assert r.code == 0, r.err
        out[name] = r.json
    assert out["wrapper"]["flops_per_token"]["decode"] == out["text"]["flops_per_token"]["decode"]
    assert out["wrapper"]["params"]["total"] == out["text"]["params"]["total"] + 594_367_424


@pytest.mark.parametrize("change,error,match", [
    ({"downsample_rate": None}, ConfigError, "downsample_rate' is required"),
    ({"downsample_rate": "4-8"}, ConfigError, "downsample_rate"),
    ({"downsample_rate": "0/8"}, ConfigError, "two positive integers"),
    ({"downsample_rate": 0.5}, ConfigError, "downsample_rate"),
    ({"deepstack_layer_map": None}, ConfigError, "deepstack_layer_map' is required"),
    ({"deepstack_layer_map": [[1, 2, 3]]}, ConfigError, "integer pairs"),
    ({"vision_config": {"model_type": "siglip2_vision_model"}}, UnsupportedModelError, "siglip2_vision_model"),
    ({"qformer_config": {"model_type": "instructblip_qformer"}}, UnsupportedModelError, "blip_2_qformer"),
    ({"vision_config": dict(TINY["vision_config"], hidden_size=1000, num_attention_heads=4)}, ConfigError,
     "Q-Former heads"),
])
def test_bad_configs_raise_one_clear_error(change, error, match):
    with pytest.raises(error, match=match):
        parse_config({**TINY, **change})


def test_granite4_vision_text_alone_is_refused():
    with pytest.raises(UnsupportedModelError, match="granite4_vision wrapper"):
        parse_config({"model_type": "granite4_vision_text", "hidden_size": 64, "num_hidden_layers": 2,
                      "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128})


def test_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GRANITE_4_0_3B_VISION))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 3_997_206_464
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_type": "granite4_vision", "text_config": {}}))
    run("analyze", str(bad)).assert_error("downsample_rate")


def test_language_model_verifies(tmp_path):
    """verify builds the language model (the towers are counted apart): its exact self-checks pass."""
    verify_self_checks(tmp_path, TINY, name="g4v")
