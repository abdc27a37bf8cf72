"""Qwen-VL (2023; model_type ``qwen`` with a ``visual`` block, remote code): Qwen-1's language model plus the ViT and
resampler of the hub's visual.py (vLLM's qwen_vl.py builds the same shapes), checked against a hand count of those
module shapes and the Qwen-VL paper's parameter table (ViT 1.9B, adapter 0.08B, LLM 7.7B: 9.6B). No network, no
remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# Qwen/Qwen-VL-Chat config.json (Qwen/Qwen-VL's has the same shapes)
QWEN_VL_CHAT = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0,
    "auto_map": {"AutoConfig": "configuration_qwen.QWenConfig",
                 "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel"},
    "bf16": False, "emb_dropout_prob": 0.0, "fp16": False, "fp32": False, "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 22016, "kv_channels": 128, "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192,
    "model_type": "qwen", "no_bias": True, "num_attention_heads": 32, "num_hidden_layers": 32, "onnx_safe": None,
    "rotary_emb_base": 10000, "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 2048,
    "tie_word_embeddings": False, "tokenizer_type": "QWenTokenizer", "torch_dtype": "bfloat16",
    "transformers_version": "4.31.0", "use_cache": True, "use_dynamic_ntk": True, "use_flash_attn": False,
    "use_logn_attn": True,
    "visual": {"heads": 16, "image_size": 448, "image_start_id": 151857, "layers": 48, "mlp_ratio": 4.9231,
               "output_dim": 4096, "patch_size": 14, "width": 1664},
    "vocab_size": 151936}


def _vit_by_hand(w=1664, layers=48, mlp=8192, patch=14, out=4096) -> int:
    """conv1 (bias-free), positional_embedding (256, w), ln_pre; per block ln_1, in_proj, out_proj, ln_2, c_fc, c_proj
    (all biased); ln_post and proj (out x out)."""
    block = 2 * w + (3 * w * w + 3 * w) + (w * w + w) + 2 * w + (w * mlp + mlp) + (mlp * w + w)
    return w * 3 * patch * patch + 256 * w + 2 * w + layers * block + 2 * out + out * out


def _resampler_by_hand(w=1664, out=4096, nq=256) -> int:
    """pos_embed and query (nq x out), kv_proj (bias-free), MultiheadAttention (in_proj, out_proj), ln_q, ln_kv."""
    return 2 * nq * out + w * out + (3 * out * out + 3 * out) + (out * out + out) + 2 * 2 * out


def _qwen7b_by_hand(h=4096, layers=32, inter=22016, vocab=151936) -> int:
    """wte, lm_head; per layer ln_1, c_attn (biased), c_proj, ln_2, w1 / w2 / c_proj of inter / 2; ln_f."""
    return 2 * vocab * h + h + layers * (2 * h + (3 * h * h + 3 * h) + h * h + 3 * h * (inter // 2))


def test_qwen_vl_chat_by_hand_and_published():
    spec = parse_config(QWEN_VL_CHAT)
    p = count_params(spec)
    assert int(1664 * 4.9231) == 8192
    vit, pool, lm = _vit_by_hand(), _resampler_by_hand(), _qwen7b_by_hand()
    assert p.vision == vit + pool == 1_935_610_624
    assert p.total == lm + vit + pool == 9_656_935_168
    # the Qwen-VL paper's table: vision encoder 1.9B (ln_post and proj included), VL adapter 0.08B, LLM 7.7B, 9.6B in
    # all (the hub lists 9.66B)
    assert round(vit / 1e8) == 19 and round(pool / 1e7) == 8 and round(lm / 1e8) == 77
    assert int(p.total / 1e8) == 96 and round(p.total / 1e7) == 966
    # MHA cache of Qwen-7B: 32 layers x K and V of 4096, bf16
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 32 * 2 * 4096 * 2


def test_qwen_text_only_is_unchanged():
    text = {k: v for k, v in QWEN_VL_CHAT.items() if k != "visual"}
    p = count_params(parse_config(text))
    assert p.vision == 0 and p.total == _qwen7b_by_hand()


def test_qwen_vl_tensor_names_are_the_checkpoints():
    from planner.analysis.families.qwen_vl import _visual_tensors

    names = {t.name: t.shape for t in _visual_tensors(QWEN_VL_CHAT["visual"], "x", 4096)}
    assert names["transformer.visual.conv1.weight"] == (1664, 3, 14, 14)
    assert "transformer.visual.conv1.bias" not in names
    assert names["transformer.visual.transformer.resblocks.47.mlp.c_fc.weight"] == (8192, 1664)
    assert names["transformer.visual.attn_pool.kv_proj.weight"] == (4096, 1664)
    assert names["transformer.visual.attn_pool.attn.in_proj_weight"] == (12288, 4096)
    assert names["transformer.visual.attn_pool.pos_embed"] == (256, 4096)
    assert names["transformer.visual.proj"] == (4096, 4096)


@pytest.mark.parametrize("visual,match", [
    ("x", "'visual' must be an object"),
    (dict(QWEN_VL_CHAT["visual"], output_dim=2048), "output_dim"),
    (dict(QWEN_VL_CHAT["visual"], heads=15), "heads"),
    ({k: v for k, v in QWEN_VL_CHAT["visual"].items() if k != "width"}, "width"),
    (dict(QWEN_VL_CHAT["visual"], n_queries=200), "n_queries"),
])
def test_qwen_vl_bad_visual_raises(visual, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(dict(QWEN_VL_CHAT, visual=visual))


def test_qwen_vl_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN_VL_CHAT))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 9_656_935_168 and r.json["params"]["vision"] == 1_935_610_624
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(QWEN_VL_CHAT, visual=dict(QWEN_VL_CHAT["visual"], output_dim=1024))))
    run("analyze", str(bad)).assert_error("output_dim")


def test_qwen_vl_language_model_verifies(tmp_path):
    """verify builds the language model (the tower is counted apart): its exact self-checks pass."""
    tiny = dict(QWEN_VL_CHAT, hidden_size=64, intermediate_size=192, kv_channels=16, num_attention_heads=4,
                num_hidden_layers=2, vocab_size=256, seq_length=256, max_position_embeddings=256,
                visual=dict(QWEN_VL_CHAT["visual"], width=32, heads=2, layers=1, output_dim=64 * 2, mlp_ratio=2))
    tiny["hidden_size"] = 128
    tiny["kv_channels"] = 32
    verify_self_checks(tmp_path, tiny, name="qwenvl")
