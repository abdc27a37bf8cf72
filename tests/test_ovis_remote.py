"""AIDC-AI Ovis2.5 in its hub remote-code format (model_type ``ovis2_5``): the whole checkpoint against the published
Ovis2.5-9B model.safetensors.index.json and a hand count written from the module shapes of the hub's
modeling_ovis2_5.py / configuration_ovis2_5.py; the language model equal to its bare Qwen3 config; the CLI end to end;
broken configs give one Error line. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# AIDC-AI/Ovis2.5-9B config.json, as copied into github.com/Theo-Yim/VLMs Ovis/HF_Repo/config.json (commit 42837fe,
# "Ovis/HF_Repo from HuggingFace"); shape fields as published, generation fields left out.
VIT = {"_name_or_path": "google/siglip2-so400m-patch16-512", "attention_dropout": 0.0, "fullatt_block_indexes": None,
       "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152, "hidden_stride": 2, "image_size": 512,
       "intermediate_size": 4304, "layer_norm_eps": 1e-06, "model_type": "siglip2_navit", "num_attention_heads": 16,
       "num_channels": 3, "num_hidden_layers": 27, "num_patches": -1, "patch_size": 16, "preserve_original_pe": True,
       "temporal_patch_size": 1, "torch_dtype": "float32", "use_rope": True, "window_size": 112}
OVIS2_5_9B = {
    "architectures": ["Ovis2_5"],
    "auto_map": {"AutoConfig": "configuration_ovis2_5.Ovis2_5_Config",
                 "AutoModelForCausalLM": "modeling_ovis2_5.Ovis2_5"},
    "conversation_formatter_class": "Qwen3ConversationFormatter", "hidden_size": 4096, "vocab_size": 151936,
    "num_attention_heads": 32, "max_position_embeddings": 40960,
    "llm_config": {
        "_name_or_path": "Qwen/Qwen3-8B", "architectures": ["Qwen3ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 40960,
        "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
        "sliding_window": None, "torch_dtype": "float32", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 151936},
    "model_type": "ovis2_5", "torch_dtype": "bfloat16", "use_cache": True, "visual_vocab_size": 65536,
    "vit_config": VIT}

# the same repository's Ovis/HF_Repo/model.safetensors.index.json: metadata.total_size (all tensors bf16; the four
# shards' LFS sizes 4,905,356,464 / 4,915,960,936 / 4,974,672,744 / 3,553,737,368 bytes fit these shapes exactly,
# safetensors headers included)
OVIS2_5_9B_TOTAL_SIZE = 18_349_615_568

# Ovis2.5-2B: the released 2B layout as transformers' ovis2_5 conversion test writes its source config
# (CHECKPOINT_SPECS["2b"].text_signature = (hidden 2048, 28 layers, 16 heads, 8 KV heads, intermediate 6144), the
# language model tied, the same vit_config and visual_vocab_size 65536)
OVIS2_5_2B = dict(OVIS2_5_9B, hidden_size=2048, llm_config=dict(
    OVIS2_5_9B["llm_config"], hidden_size=2048, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
    intermediate_size=6144, tie_word_embeddings=True))


def navit_by_hand(h: int, inter: int, layers: int, patch: int, image: int, channels: int = 3,
                  num_patches: int = -1, pe: bool = True) -> int:
    """Siglip2NavitModel.vision_model (hub modeling_ovis2_5.py): biased patch embedding (Conv2d when num_patches <= 0,
    else Linear, the same numel), positions ((image // patch)^2 or num_patches rows, when preserve_original_pe); per
    layer LayerNorms layer_norm1 / layer_norm2, biased q/k/v/out_proj, biased fc1 / fc2; post_layernorm."""
    rows = (image // patch) ** 2 if num_patches <= 0 else num_patches
    embeddings = h * channels * patch * patch + h + (rows * h if pe else 0)
    layer = 4 * h + 4 * (h * h + h) + (inter * h + inter) + (h * inter + h)
    return embeddings + layers * layer + 2 * h


def head_and_vte_by_hand(vit_h: int, stride: int, vocab: int, hidden: int) -> int:
    """VisualTokenizer.head: Linear(vit_h * stride^2 -> vocab - 4, no bias) + LayerNorm(vocab - 4) (INDICATOR_IDS
    holds 4 ids); vte: Embedding(visual_vocab_size, hidden_size)."""
    head = vocab - 4
    return head * vit_h * stride * stride + 2 * head + vocab * hidden


def qwen3_by_hand(h: int, layers: int, heads: int, kv: int, inter: int, vocab: int = 151936, hd: int = 128,
                  tied: bool = False) -> int:
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd + 3 * h * inter + 2 * h
    return vocab * h * (1 if tied else 2) + layers * layer + h


def test_ovis2_5_9b_equals_the_published_index():
    spec = parse_config(OVIS2_5_9B)
    p = count_params(spec)
    vision = navit_by_hand(1152, 4304, 27, 16, 512) + head_and_vte_by_hand(1152, 2, 65536, 4096)
    text = qwen3_by_hand(4096, 36, 32, 8, 12288)
    assert text == 8_190_735_360  # Qwen3-8B's published count
    assert p.vision == vision
    assert p.total == vision + text == OVIS2_5_9B_TOTAL_SIZE // 2 == 9_174_807_784
    assert p.active == p.total
    # the language model alone: the same count as its bare Qwen3 config
    bare = count_params(parse_config(OVIS2_5_9B["llm_config"])).total
    assert p.total - p.vision == bare == text
    # GQA cache of the language model: 36 layers x K and V of 8 heads x 128, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456
    assert spec.tie_word_embeddings is False


def test_ovis2_5_tensor_names_are_the_checkpoints():
    from planner.analysis.families.ovis_remote import ovis2_5_vision

    names = {t.name: t.shape for t in ovis2_5_vision(OVIS2_5_9B, 4096, "x")}
    # the published weight_map's keys outside llm.*: 3 embedding tensors, 16 per encoder layer, post_layernorm,
    # head.0.weight, head.1.weight / bias, vte.weight
    p = "visual_tokenizer.vit.vision_model"
    per_layer = [f"{m}.{w}" for m in ("layer_norm1", "layer_norm2", "mlp.fc1", "mlp.fc2", "self_attn.k_proj",
                                      "self_attn.out_proj", "self_attn.q_proj", "self_attn.v_proj")
                 for w in ("bias", "weight")]
    expected = {f"{p}.embeddings.patch_embedding.bias", f"{p}.embeddings.patch_embedding.weight",
                f"{p}.embeddings.position_embedding.weight", f"{p}.post_layernorm.bias", f"{p}.post_layernorm.weight",
                "visual_tokenizer.head.0.weight", "visual_tokenizer.head.1.bias", "visual_tokenizer.head.1.weight",
                "vte.weight"}
    expected |= {f"{p}.encoder.layers.{i}.{k}" for i in range(27) for k in per_layer}
    assert set(names) == expected and len(expected) == 441
    assert names["visual_tokenizer.head.0.weight"] == (65532, 4608)
    assert names[f"{p}.embeddings.patch_embedding.weight"] == (1152, 3, 16, 16)
    assert names[f"{p}.embeddings.position_embedding.weight"] == (1024, 1152)
    assert names["vte.weight"] == (65536, 4096)


def test_ovis2_5_2b_tied_by_hand():
    p = count_params(parse_config(OVIS2_5_2B))
    vision = navit_by_hand(1152, 4304, 27, 16, 512) + head_and_vte_by_hand(1152, 2, 65536, 2048)
    text = qwen3_by_hand(2048, 28, 16, 8, 6144, tied=True)
    assert p.total == vision + text
    assert p.total - p.vision == count_params(parse_config(OVIS2_5_2B["llm_config"])).total


@pytest.mark.parametrize("vit, hand", [
    # a Linear patch embedding with num_patches learned positions (num_patches > 0)
    ({"num_patches": 256}, navit_by_hand(1152, 4304, 27, 16, 512, num_patches=256)),
    # no position table without preserve_original_pe
    ({"preserve_original_pe": False}, navit_by_hand(1152, 4304, 27, 16, 512, pe=False)),
    ({"num_patches": 64, "preserve_original_pe": False}, navit_by_hand(1152, 4304, 27, 16, 512, pe=False)),
])
def test_ovis2_5_tower_variants(vit, hand):
    p = count_params(parse_config(dict(OVIS2_5_9B, vit_config=dict(VIT, **vit))))
    assert p.vision == hand + head_and_vte_by_hand(1152, 2, 65536, 4096)


def test_ovis2_5_class_defaults():
    """Absent fields take Siglip2NavitConfig's / Ovis2_5_Config's defaults: hidden 1024, intermediate 4096, 24 layers,
    16 heads, image 512, patch 16, hidden_stride 2; visual_vocab_size 65536."""
    cfg = {k: v for k, v in OVIS2_5_9B.items() if k != "visual_vocab_size"}
    p = count_params(parse_config(dict(cfg, vit_config={"hidden_stride": 1})))
    assert p.vision == navit_by_hand(1024, 4096, 24, 16, 512) + head_and_vte_by_hand(1024, 1, 65536, 4096)


def test_ovis2_5_refuses_what_it_cannot_read():
    with pytest.raises(ConfigError, match="'vit_config' is missing"):
        parse_config({k: v for k, v in OVIS2_5_9B.items() if k != "vit_config"})
    with pytest.raises(ConfigError, match="'llm_config' is missing"):
        parse_config({k: v for k, v in OVIS2_5_9B.items() if k != "llm_config"})
    with pytest.raises(ConfigError, match="hidden size mismatch"):
        parse_config(dict(OVIS2_5_9B, hidden_size=2048))
    with pytest.raises(ConfigError, match="'hidden_size' is missing"):
        parse_config({k: v for k, v in OVIS2_5_9B.items() if k != "hidden_size"})
    with pytest.raises(UnsupportedModelError, match="Qwen3"):
        parse_config(dict(OVIS2_5_9B, llm_config=dict(OVIS2_5_9B["llm_config"], model_type="qwen2")))
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(OVIS2_5_9B, vit_config=dict(VIT, num_attention_heads=7)))
    with pytest.raises(ConfigError, match="visual_vocab_size"):
        parse_config(dict(OVIS2_5_9B, visual_vocab_size=4))


def test_ovis2_5_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OVIS2_5_9B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 9_174_807_784
    assert r.json["kv_cache"]["bytes_per_token"] == 147_456
    s = run("serve", str(path), "--json")
    assert s.code == 0, s.err
    assert s.json["memory"]["per_gpu"]["counted_weights_bytes"] == OVIS2_5_9B_TOTAL_SIZE
    assert s.json["memory"]["per_gpu"]["kv_bytes_per_token"] == 147_456
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({k: v for k, v in OVIS2_5_9B.items() if k != "vit_config"}))
    run("analyze", str(bad)).assert_error("vit_config")
    bad.write_text(json.dumps(dict(OVIS2_5_9B, hidden_size=1024)))
    run("analyze", str(bad)).assert_error("hidden size mismatch")


def test_ovis2_5_language_model_verifies(tmp_path):
    """verify builds the language model (Qwen3; the visual tokenizer is counted apart): its exact self-checks pass."""
    tiny = dict(OVIS2_5_9B, hidden_size=64, visual_vocab_size=40,
                llm_config=dict(OVIS2_5_9B["llm_config"], hidden_size=64, intermediate_size=96, head_dim=16,
                                num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, vocab_size=256,
                                max_position_embeddings=256),
                vit_config=dict(VIT, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                                image_size=64))
    verify_self_checks(tmp_path, tiny, name="ovis2_5")
