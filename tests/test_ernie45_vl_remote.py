"""ERNIE-4.5-VL's hub remote-code config (``ernie4_5_moe_vl``: baidu/ERNIE-4.5-VL-28B-A3B-PT, -Base-PT, -Thinking,
ERNIE-4.5-VL-424B-A47B-PT), read by translating it into the transformers format (``ernie4_5_vl_moe``) as transformers'
src/transformers/models/ernie4_5_vl_moe/convert_ernie4_5_vl_moe_to_hf.py does (convert_text_config_to_hf /
convert_vision_config_to_hf). Checked: the remote config counts exactly as the hand-written transformers-format config
of the same model; both equal transformers 5.24's Ernie4_5_VLMoeForConditionalGeneration built on the meta device;
the published card totals (28B / 3B active, 424B / 47B active); K/V bytes; the CLI; one Error line for malformed
list-valued fields. No network, no remote code.

Where the configs come from. No verbatim copy of the hub's config.json (nor of its model.safetensors.index.json)
was reachable offline, so each value's source is named:

- 28B-A3B: hidden 2560, intermediate 12288, 28 layers, 20 heads, 4 KV heads, vocab 103424, moe_num_experts [64, 64],
  moe_intermediate_size [1536, 512], moe_k 6, moe_layer_start_index [1, 1], moe_layer_end_index [29, 28],
  moe_layer_interval 1, moe_num_shared_experts 2 are quoted as "the 28B-A3B checkpoint" by an MLX port's Rust test
  (find_string '"moe_layer_end_index": ['), and are transformers' Ernie4_5_VLMoeTextConfig defaults (its
  @auto_docstring(checkpoint="baidu/ERNIE-4.5-VL-28B-A3B-PT")); the vision tower (depth 32, embed_dim = hidden_size
  1280, mlp_ratio 4, 16 heads, patch 14, 3 channels, spatial_merge_size 2) is the hub's DFNRopeVisionTransformerConfig
  default and Ernie4_5_VLMoeVisionConfig's; im_patch_id 100295, pixel_hidden_size, spatial / temporal_conv_size 2,
  freq_allocation 20, tie_word_embeddings true: PaddleFormers' Ernie4_5_VLModelTester (find_string '"moe_multimodal_dispatch_use_allgather"')
  and the flat-config field names of the hub's configuration (Ernie4_5_VLMoEConfig.__init__, PaddleFormers' copy).
- 424B-A47B: 54 layers, 64 heads, 8 KV heads, 64 text + 64 vision experts, 8 routed per token (the model card /
  apxml.com/models/ernie-45-vl-424b-a47b); MoE from layer 3 to 53 (the hub modeling code's own comments
  "layer_idx >= moe_layer_start_index  # 3", "<= moe_layer_end_index  # 53", quoted in transformers' draft port
  src/transformers/models/ernie4_5_vl/modeling_ernie4_5_vl.py); hidden 8192, intermediate 28672,
  moe_intermediate_size [3584, 1536], no shared experts, untied head: the hub config as recalled, checked below
  against the card's published totals (424B total, 47B activated), which other values miss.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import REFUSED, TEXT_WRAPPERS
from planner.analysis.families.ernie4_5_vl_remote import to_transformers
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.conftest import DROP, edited

_VISION = {"attn_implementation": "eager", "depth": 32, "embed_dim": 1280, "hidden_act": "quick_gelu",
           "hidden_size": 1280, "in_channels": 3, "mlp_ratio": 4, "num_heads": 16, "patch_size": 14,
           "spatial_merge_size": 2}

REMOTE_28B = {
    "architectures": ["Ernie4_5_VLMoeForConditionalGeneration"],
    "auto_map": {"AutoConfig": "configuration_ernie_45t_vl.Ernie4_5_VLMoEConfig",
                 "AutoModelForCausalLM": "modeling_ernie_45t_vl.Ernie4_5_VLMoeForConditionalGeneration"},
    "model_type": "ernie4_5_moe_vl", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
    "hidden_act": "silu", "hidden_size": 2560, "intermediate_size": 12288, "im_patch_id": 100295,
    "max_position_embeddings": 131072, "moe_capacity": [128, 128, 128], "moe_gate": "topk",
    "moe_intermediate_size": [1536, 512], "moe_k": 6, "moe_layer_end_index": [29, 28], "moe_layer_interval": 1,
    "moe_layer_start_index": [1, 1], "moe_multimodal_dispatch_use_allgather": "v2-alltoall-unpad-text",
    "moe_num_experts": [64, 64], "moe_num_shared_experts": 2, "moe_use_aux_free": True,
    "num_attention_heads": 20, "num_hidden_layers": 28, "num_key_value_heads": 4, "pixel_hidden_size": 1280,
    "rms_norm_eps": 1e-05, "rope_3d": True, "freq_allocation": 20, "rope_theta": 500000, "spatial_conv_size": 2,
    "temporal_conv_size": 2, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_bias": False,
    "use_cache": True, "use_rmsnorm": True, "vision_config": _VISION, "vocab_size": 103424,
}
REMOTE_424B = dict(
    REMOTE_28B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=54, num_attention_heads=64,
    num_key_value_heads=8, moe_intermediate_size=[3584, 1536], moe_k=8, moe_layer_start_index=[3, 3],
    moe_layer_end_index=[53, 53], moe_num_shared_experts=0, tie_word_embeddings=False)

_ROPE = {"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [22, 22, 20]}
_HF_VISION = {"depth": 32, "hidden_size": 1280, "hidden_act": "quick_gelu", "intermediate_size": 5120,
              "num_heads": 16, "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2, "temporal_merge_size": 2}
# the same models in transformers' format, written by hand as convert_ernie4_5_vl_moe_to_hf.py writes them: the text
# fields carried over, moe_num_experts[0], mlp_layer_types by (i + 1) % interval == 0 and min(start) <= i <= max(end),
# rope_parameters {default, 500000, [22, 22, 20]}; the vision fields, intermediate_size = hidden_size * mlp_ratio,
# spatial / temporal_conv_size as spatial / temporal_merge_size
HF_28B = {
    "model_type": "ernie4_5_vl_moe", "image_token_id": 100295, "tie_word_embeddings": True,
    "text_config": {"hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28, "num_attention_heads": 20,
                    "num_key_value_heads": 4, "vocab_size": 103424, "moe_num_experts": 64, "moe_k": 6,
                    "moe_intermediate_size": [1536, 512], "moe_num_shared_experts": 2, "use_bias": False,
                    "tie_word_embeddings": True, "hidden_act": "silu", "rms_norm_eps": 1e-05,
                    "max_position_embeddings": 131072, "mlp_layer_types": ["dense"] + ["sparse"] * 27,
                    "rope_parameters": _ROPE},
    "vision_config": _HF_VISION}
HF_424B = {
    "model_type": "ernie4_5_vl_moe", "image_token_id": 100295, "tie_word_embeddings": False,
    "text_config": dict(HF_28B["text_config"], hidden_size=8192, intermediate_size=28672, num_hidden_layers=54,
                        num_attention_heads=64, num_key_value_heads=8, moe_k=8, moe_intermediate_size=[3584, 1536],
                        moe_num_shared_experts=0, tie_word_embeddings=False,
                        mlp_layer_types=["dense"] * 3 + ["sparse"] * 51),
    "vision_config": _HF_VISION}

# a tiny remote config: head_dim 16, freq_allocation 4 -> sections [2, 2, 4]; MoE on layers 1..2; a 1.5 mlp_ratio;
# the text range given as one integer, the vision range per modality
TINY = {"model_type": "ernie4_5_moe_vl", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "moe_num_experts": [4, 4], "moe_k": 2,
        "moe_intermediate_size": [32, 16], "moe_num_shared_experts": 1, "moe_layer_start_index": 1,
        "moe_layer_end_index": [2, 5], "moe_layer_interval": 1, "freq_allocation": 4, "rope_theta": 10000.0,
        "pixel_hidden_size": 32, "spatial_conv_size": 2, "temporal_conv_size": 2, "tie_word_embeddings": False,
        "hidden_act": "silu", "rms_norm_eps": 1e-5,
        "vision_config": {"depth": 2, "embed_dim": 32, "hidden_size": 32, "mlp_ratio": 1.5, "num_heads": 2,
                          "patch_size": 4, "in_channels": 3}}
HF_TINY = {"model_type": "ernie4_5_vl_moe", "tie_word_embeddings": False,
           "text_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
                           "num_key_value_heads": 2, "vocab_size": 300, "moe_num_experts": 4, "moe_k": 2,
                           "moe_intermediate_size": [32, 16], "moe_num_shared_experts": 1,
                           "tie_word_embeddings": False, "mlp_layer_types": ["dense", "sparse", "sparse"],
                           "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                               "mrope_section": [2, 2, 4]}},
           "vision_config": {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "patch_size": 4,
                             "in_channels": 3, "spatial_merge_size": 2, "temporal_merge_size": 2}}

PAIRS = [(REMOTE_28B, HF_28B), (REMOTE_424B, HF_424B), (TINY, HF_TINY)]


_edit, _DROP = edited, DROP


def test_the_refusal_is_gone():
    assert "ernie4_5_moe_vl" not in REFUSED
    assert TEXT_WRAPPERS["ernie4_5_moe_vl"] == "ernie4_5_vl_moe_text"


@pytest.mark.parametrize("remote,hf", PAIRS, ids=["28B", "424B", "tiny"])
def test_remote_format_counts_as_the_transformers_format(remote, hf):
    """Every count, tensor and the cache are the transformers-format config's: the same checkpoint."""
    a, b = parse_config(remote), parse_config(hf)
    assert count_params(a).to_dict() == count_params(b).to_dict()
    assert [(t.name, t.shape) for t in a.vision] == [(t.name, t.shape) for t in b.vision]
    assert a.layers == b.layers and a.tie_word_embeddings == b.tie_word_embeddings
    ka, kb = analyze(a, Options()), analyze(b, Options())
    assert ka.kv.bytes_per_token == kb.kv.bytes_per_token and ka.weights_bytes == kb.weights_bytes


def test_translation_is_the_conversion_scripts():
    """to_transformers writes what convert_ernie4_5_vl_moe_to_hf.py writes (the fields the builder reads)."""
    out = to_transformers(REMOTE_28B)
    for key, value in HF_28B["text_config"].items():
        assert out["text_config"][key] == value, key
    for key, value in _HF_VISION.items():
        assert out["vision_config"][key] == value, key
    assert out["image_token_id"] == 100295 and out["tie_word_embeddings"] is True
    assert to_transformers(REMOTE_424B)["text_config"]["mlp_layer_types"] == HF_424B["text_config"]["mlp_layer_types"]


@pytest.mark.parametrize("remote,hf", PAIRS, ids=["28B", "424B", "tiny"])
def test_equals_transformers_on_the_meta_device(remote, hf):
    """transformers 5.24's Ernie4_5_VLMoeForConditionalGeneration of the hand-written transformers-format config."""
    from tests.oracle import hf_model, unique_param_count

    assert count_params(parse_config(remote)).total == unique_param_count(hf_model(hf))


def test_counts_and_the_published_card_totals():
    """28B-A3B: 29,399,294,336 (transformers' count above), 3B activated per text token without the tower and the
    input embedding (a lookup); 424B-A47B: 423,526,285,184, i.e. the card's 424B, and its 47B activated the same way
    (a 512-wide vision expert, or a shared expert, or a start at layer 1 would miss one of them)."""
    p28, p424 = count_params(parse_config(REMOTE_28B)), count_params(parse_config(REMOTE_424B))
    assert p28.total == 29_399_294_336 and p28.vision == 774_658_560
    assert p424.total == 423_526_285_184 and p424.vision == 803_505_664
    assert round(p424.total / 1e9) == 424
    assert round((p424.active - p424.vision - p424.embedding) / 1e9) == 47
    assert round((p28.active - p28.vision - p28.embedding) / 1e9) == 3
    # the vision experts count in the total, never in a text token's active parameters
    assert p28.total - p28.active > 27 * 64 * 3 * 2560 * 512


def test_kv_bytes_per_token():
    # K and V per layer: num_key_value_heads x head_dim (hidden / heads = 128) x 2 bytes (bf16)
    assert analyze(parse_config(REMOTE_28B), Options()).kv.bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57_344
    assert analyze(parse_config(REMOTE_424B), Options()).kv.bytes_per_token == 54 * 2 * 8 * 128 * 2 == 221_184


def test_cli_analyze_and_serve(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(REMOTE_28B))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 29_399_294_336
    r = run("serve", path, "--json")
    assert r.code == 0, r.err
    assert r.json["memory"]["per_gpu"]["kv_bytes_per_token"] == 57_344


def test_verify_runs_the_tiny_remote_config(tmp_path):
    out = verify_self_checks(tmp_path, TINY)
    spec = parse_config(TINY)
    assert out["checks"]["params"]["predicted"] == count_params(spec).total - sum(t.numel for t in spec.vision)


@pytest.mark.parametrize("key,value,fragments", [
    ("moe_num_experts", [64], ("moe_num_experts", "pair")),
    ("moe_num_experts", 64, ("moe_num_experts", "pair")),
    ("moe_num_experts", [64, "64"], ("moe_num_experts", "pair")),
    ("moe_num_experts", [64, 32], ("moe_num_experts", "equal")),
    ("moe_num_experts", _DROP, ("moe_num_experts", "missing")),
    ("moe_intermediate_size", [1536], ("moe_intermediate_size", "pair")),
    ("moe_intermediate_size", [1536, True], ("moe_intermediate_size", "pair")),
    ("moe_intermediate_size", 1536, ("moe_intermediate_size", "pair")),
    ("moe_layer_start_index", [1, "a"], ("moe_layer_start_index", "pair")),
    ("moe_layer_start_index", [1, 1, 1], ("moe_layer_start_index", "pair")),
    ("moe_layer_end_index", [-1, 28], ("moe_layer_end_index", "non-negative")),
    ("moe_layer_end_index", [29, 20], ("moe_layer_end_index", "different layers")),
    ("moe_layer_interval", 0, ("moe_layer_interval",)),
    ("freq_allocation", 21, ("freq_allocation",)),
    ("num_nextn_predict_layers", 1, ("num_nextn_predict_layers",)),
    ("use_temporal_conv", False, ("use_temporal_conv",)),
    ("pixel_hidden_size", 1152, ("pixel_hidden_size", "embed_dim")),
    ("vision_config.hidden_size", 3584, ("hidden_size", "embed_dim")),
    ("vision_config.num_heads", 7, ("num_heads",)),
    ("vision_config", [1], ("vision_config",)),
])
def test_malformed_fields_give_one_error_line(tmp_path, key, value, fragments):
    cfg = _edit(REMOTE_28B, key, value)
    with pytest.raises(ConfigError):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", path).assert_error(*fragments)


def test_differing_modality_ranges_are_refused_by_name():
    with pytest.raises(UnsupportedModelError, match="vLLM a dense MLP"):
        parse_config(_edit(REMOTE_28B, "moe_layer_start_index", [1, 5]))
