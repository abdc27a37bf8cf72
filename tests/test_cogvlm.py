"""THUDM CogVLM (``cogvlm``) and CogVLM2 (``cogvlm2``), remote code (the hub's modeling_cogvlm.py and visual.py;
CogAgent, ``cogagent``, refused by name): the whole checkpoint against hand counts written from the module shapes
(VisionExpertAttention, VisionExpertMLP, EVA2CLIPModel, GLU) and against the published checkpoint size; the text
decode trace reads the language expert only. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run

# THUDM/cogvlm2-llama3-chat-19B config.json as published (mirrored in yongchenglai/llm-research,
# model/model_cogvlm2/config.json); the hub config names no model_type: the family's is added
COGVLM2 = {
    "architectures": ["CogVLMForCausalLM"], "model_type": "cogvlm2",
    "auto_map": {"AutoConfig": "configuration_cogvlm.CogVLMConfig",
                 "AutoModelForCausalLM": "modeling_cogvlm.CogVLMForCausalLM"},
    "vision_config": {"dropout_prob": 0.0, "hidden_act": "gelu", "in_channels": 3, "num_hidden_layers": 63,
                      "hidden_size": 1792, "patch_size": 14, "num_heads": 16, "intermediate_size": 15360,
                      "layer_norm_eps": 1e-06, "num_positions": 9217, "image_size": 1344},
    "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-05, "template_version": "chat", "initializer_range": 0.02, "bos_token_id": 128000,
    "eos_token_id": [128001, 128009], "pad_token_id": 128002, "vocab_size": 128256, "num_hidden_layers": 32,
    "hidden_act": "silu", "use_cache": True}

# THUDM/cogvlm-chat-hf: the fields of its CogVLMConfig (configuration_cogvlm.py, whose defaults and vision_config are
# the published model's; copied in mindspore-lab/mindnlp transformers/models/cogvlm/configuration_cogvlm.py)
COGVLM = {
    "architectures": ["CogVLMForCausalLM"], "model_type": "cogvlm", "vocab_size": 32000, "hidden_size": 4096,
    "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_act": "silu",
    "max_position_embeddings": 2048, "initializer_range": 0.02, "rms_norm_eps": 1e-06, "template_version": "chat",
    "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False, "use_cache": True,
    "vision_config": {"dropout_prob": 0.0, "hidden_act": "gelu", "hidden_size": 1792, "image_size": 490,
                      "in_channels": 3, "intermediate_size": 15360, "layer_norm_eps": 1e-06, "num_heads": 16,
                      "num_hidden_layers": 63, "num_positions": 1226, "patch_size": 14}}


def _eva2clip(w=1792, layers=63, inter=15360, positions=1226, patch=14, conv=False) -> int:
    """visual.py's PatchEmbedding (biased Conv2d, cls_embedding (1, w), position_embedding), 63 TransformerLayers
    (biased query_key_value 3w x w, dense, fc1, fc2; two biased LayerNorms), CogVLM2's conv (w -> w, 2x2, biased)."""
    n = w * 3 * patch * patch + w + w + positions * w
    n += layers * ((3 * w * w + 3 * w) + (w * w + w) + (inter * w + inter) + (w * inter + w) + 4 * w)
    return n + (w * w * 4 + w if conv else 0)


def _glu(w: int, h: int, inter: int) -> int:
    """GLU: linear_proj (w -> h, no bias), norm1 (LayerNorm h), gate_proj / dense_h_to_4h (h -> inter), dense_4h_to_h;
    then boi and eoi (1, 1, h)."""
    return w * h + 2 * h + 3 * h * inter + 2 * h


def _layers(h: int, L: int, inter: int, kv_width: int, vision_bias: bool) -> tuple[int, int]:
    """(all, vision expert) parameters of the decoder layers: language and vision fused qkv (h + 2 kv_width rows),
    language and vision dense (h x h), language_mlp and vision_mlp (SwiGLU of inter), two RMSNorms."""
    qkv = h + 2 * kv_width
    expert = qkv * h + h * h + 3 * h * inter
    vision = expert + (qkv if vision_bias else 0)
    return L * (expert + vision + 2 * h), L * vision


def test_cogvlm2_equals_the_hand_count_and_the_published_checkpoint():
    spec = parse_config(COGVLM2)
    p = count_params(spec)
    h, V = 4096, 128256
    layers, vision_expert = _layers(h, 32, 14336, 8 * 128, True)
    tower = _eva2clip(positions=9217, conv=True) + _glu(1792, h, 14336)
    assert p.vision == tower == 4_493_325_568
    assert p.total == layers + 2 * V * h + h + tower == 19_503_105_280
    # model.safetensors.index.json: total_size 39,006,214,656 bytes = bf16 parameters + the 32 layers' persisted
    # rotary_emb.inv_freq buffers (64 bf16 each), which are not parameters
    assert 2 * p.total + 32 * 64 * 2 == 39_006_214_656
    # a text token: everything but the vision experts (the tower counts as every wrapper's does)
    assert p.active == p.total - vision_expert == 12_523_586_816
    # the language model a text token runs is Llama-3-8B's (8,030,261,248 parameters)
    assert p.active - p.vision == 8_030_261_248
    # one K/V set per layer (both experts write it): 8 KV heads x 128, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072


def test_cogvlm_equals_the_hand_count_and_the_card():
    spec = parse_config(COGVLM)
    p = count_params(spec)
    h, V = 4096, 32000
    layers, vision_expert = _layers(h, 32, 11008, h, False)
    tower = _eva2clip() + _glu(1792, h, 11008)
    assert p.vision == tower == 4_425_264_384
    assert p.total == layers + 2 * V * h + h + tower == 17_639_685_376
    # the card: "CogVLM-17B has 10 billion vision parameters and 7 billion language parameters"
    language = p.total - tower - vision_expert
    assert language == 6_738_415_616 and p.total - language == 10_901_269_760
    assert p.active == p.total - vision_expert
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524_288


def test_decode_reads_and_computes_the_language_expert_only():
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(COGVLM2)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, get_dtype("bf16"), cached_tokens=10)
    h, inter, V = 4096, 14336, 128256
    matmuls = 32 * ((h + 2 * 1024) * h + h * h + 3 * h * inter) + V * h  # language expert + lm_head
    # weights read: the language expert's matmuls and norms, final norm, lm_head, and one embedding row (bf16)
    assert sum(o.weight_bytes for o in ops) == 2 * (matmuls + 32 * 2 * h + h) + 2 * h
    # FLOPs: 2 per weight of every matmul, attention over 11 keys (32 heads, q.k and p.v of 128)
    assert sum(o.flops for o in ops) == 2 * matmuls + 32 * 32 * 2 * (128 + 128) * 11
    names = {o.name for o in ops if o.layer == 0}
    assert "qkv_proj" in names and not any("vision" in n for n in names)


def test_tensor_names_are_the_checkpoints():
    spec = parse_config(COGVLM2)
    names = {t.name: t.shape for t in spec.tensors()}
    lay = "model.layers.0"
    assert names[f"{lay}.self_attn.vision_expert_query_key_value.weight"] == (6144, 4096)
    assert names[f"{lay}.self_attn.vision_expert_query_key_value.bias"] == (6144,)
    assert names[f"{lay}.self_attn.vision_expert_dense.weight"] == (4096, 4096)
    assert names[f"{lay}.mlp.vision_mlp.down_proj.weight"] == (4096, 14336)
    assert names["model.vision.conv.weight"] == (1792, 1792, 2, 2)
    assert names["model.vision.linear_proj.linear_proj.weight"] == (4096, 1792)
    assert names["model.vision.patch_embedding.position_embedding.weight"] == (9217, 1792)
    assert names["model.vision.transformer.layers.62.mlp.fc2.bias"] == (1792,)
    # the language expert under our names; the checkpoint's are rewritten to them
    assert names[f"{lay}.self_attn.qkv_proj.weight"] == (6144, 4096)
    assert (".self_attn.language_expert_query_key_value.", ".self_attn.qkv_proj.") in spec.checkpoint.modules
    v1 = {t.name for t in parse_config(COGVLM).tensors()}
    assert "model.vision.conv.weight" not in v1 and f"{lay}.self_attn.vision_expert_query_key_value.bias" not in v1


def test_class_defaults_fill_absent_fields():
    """CogVLM's config class sets its vision_config; CogVLM2's num_multi_query_heads defaults to 8."""
    bare = {"model_type": "cogvlm"}
    assert count_params(parse_config(bare)).total == count_params(parse_config(COGVLM)).total
    spec = parse_config(COGVLM2)
    assert spec.layers[0].mixer.num_key_value_heads == 8
    assert spec.layers[0].mixer.rope_theta == 500000.0 and parse_config(COGVLM).layers[0].mixer.rope_theta == 10000.0


@pytest.mark.parametrize("cfg,error,match", [
    (dict(COGVLM, num_multi_query_heads=8), ConfigError, "num_multi_query_heads"),
    (dict(COGVLM2, num_key_value_heads=8), ConfigError, "num_key_value_heads"),
    (dict(COGVLM2, num_multi_query_heads=5), ConfigError, "must divide num_attention_heads"),
    (dict(COGVLM2, num_attention_heads=30), ConfigError, "must divide hidden_size"),
    ({k: v for k, v in COGVLM2.items() if k != "vision_config"}, ConfigError, "vision_config"),
    (dict(COGVLM2, vision_config=dict(COGVLM2["vision_config"], num_positions=1226)), ConfigError, "num_positions"),
    (dict(COGVLM, cross_hidden_size=1024, cross_compute_hidden_size=1024), UnsupportedModelError, "CogAgent"),
    (dict(COGVLM, model_type="cogagent", cross_hidden_size=1024), UnsupportedModelError, "CogAgent"),
])
def test_bad_configs_are_refused(cfg, error, match):
    with pytest.raises(error, match=match):
        parse_config(cfg)


def test_cli_end_to_end(tmp_path):
    good = tmp_path / "cogvlm2.json"
    good.write_text(json.dumps(COGVLM2))
    r = run("analyze", good, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 19_503_105_280
    assert r.json["kv_cache"]["bytes_per_token"] == 131_072
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(COGVLM, num_multi_query_heads=8)))
    run("analyze", bad).assert_error("num_multi_query_heads")
    agent = tmp_path / "cogagent.json"
    agent.write_text(json.dumps(dict(COGVLM, model_type="cogagent")))
    run("analyze", agent).assert_error("CogAgent")
    # the published config.json names no model_type (its config class sets none): the error names the two choices
    hub = tmp_path / "hub.json"
    hub.write_text(json.dumps({k: v for k, v in COGVLM2.items() if k != "model_type"}))
    run("analyze", hub).assert_error("architectures: CogVLMForCausalLM", '"model_type": "cogvlm"', '"cogvlm2"')


def test_verify_refuses_the_visual_expert_layers(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(COGVLM))
    run("verify", tmp_path, "--device", "cpu").assert_error("CogVLM visual-expert attention")
