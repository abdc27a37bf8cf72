"""PLaMo 3 (``plamo3``, Preferred Networks; remote code, no transformers oracle). Totals are checked against hand counts
written from vLLM's weight shapes (vllm/model_executor/models/plamo3.py: every parameter its load_weights fills), the
layer pattern against configuration_plamo3.py's ``is_full_attn``, and the KV cache against vLLM's per-layer sliding
windows. The checkpoints' config.json files (gated on the hub) were not reachable, so the configs here are
Plamo3Config's class defaults (with an explicit window) and a tiny one; no published total is matched. Before this
family was registered, the generic Llama fallback read the class-default config as 6,573,789,184 parameters (the
two extra sandwich norms and the q/k norms missing: 270,336 short) and every layer as full attention (KV per
sequence 7.2x too large at 8,192 tokens)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run

BF16 = get_dtype("bf16")

# Plamo3Config's defaults (configuration_plamo3.py), window_size given explicitly
DEFAULTS = {"architectures": ["Plamo3ForCausalLM"], "model_type": "plamo3", "hidden_size": 4096,
            "num_hidden_layers": 32, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "num_attention_heads": 32,
            "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 2048, "window_size": 2048,
            "sliding_window_pattern": 8, "rope_theta": 1000000, "rope_local_theta": 10000,
            "intermediate_size": 13312, "vocab_size": 32000}
TINY = {"model_type": "plamo3", "hidden_size": 64, "num_hidden_layers": 8, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 128, "window_size": 32,
        "sliding_window_pattern": 4, "intermediate_size": 128, "vocab_size": 64, "tie_word_embeddings": False}


def plamo3_hand(c: dict) -> int:
    """plamo3.py: embed (V, D); per layer pre_mixer / post_mixer / pre_mlp / post_mlp RMSNorms (D each), qkv_proj
    (D -> (H + 2K)·d), o_proj (H·d -> D), q_norm and k_norm (d each), DenseMLP gate_up (D -> 2I) and down (I -> D),
    no biases; the final norm; lm_head (V, D) unless tied."""
    D, L, V, I = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    H, K, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    layer = 4 * D + D * (H + 2 * K) * d + H * d * D + 2 * d + 3 * D * I
    return V * D + L * layer + D + (0 if c.get("tie_word_embeddings", True) else V * D)


@pytest.mark.parametrize("cfg", [DEFAULTS, TINY])
def test_total_equals_vllm_hand_count(cfg):
    spec = parse_config(cfg)
    assert not spec.generic
    assert count_params(spec).total == plamo3_hand(cfg)


def test_class_defaults_exact_numbers():
    spec = parse_config(DEFAULTS)
    assert count_params(spec).total == 6_574_059_520
    kinds = [lk.window for lk in kv_cache(spec, BF16, BF16).layers]
    assert kinds == ([2048] * 7 + [None]) * 4  # is_full_attn: (i + 1) % 8 == 0
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 32 * 2 * 4 * 128 * 2


def test_tiny_pattern_and_windows():
    cache = kv_cache(parse_config(TINY), BF16, BF16)
    assert [lk.window for lk in cache.layers] == [32, 32, 32, None, 32, 32, 32, None]
    assert all(lk.bytes_per_token == 2 * 2 * 16 * 2 for lk in cache.layers)


def test_rope_bases_per_layer_kind():
    spec = parse_config(DEFAULTS)
    assert {layer.mixer.rope_theta for layer in spec.layers if layer.mixer.window} == {10000.0}
    assert {layer.mixer.rope_theta for layer in spec.layers if not layer.mixer.window} == {1000000.0}


@pytest.mark.parametrize("legacy,window", [({"sliding_window": 512}, 512),
                                           ({"sliding_window": [256, 256, 256, None] * 2}, 256)])
def test_legacy_window_keys(legacy, window):
    cfg = {k: v for k, v in TINY.items() if k != "window_size"} | legacy
    assert [lk.window for lk in kv_cache(parse_config(cfg), BF16, BF16).layers][:4] == [window] * 3 + [None]


@pytest.mark.parametrize("patch,fragment", [
    ({"window_size": None}, "window_size"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"attention_bias": True}, "attention_bias"),
    ({"rope_scaling_factor": 4.0}, "initial_context_length"),
    ({"hidden_activation": "gelu"}, "hidden_activation"),
])
def test_bad_configs(patch, fragment):
    cfg = {k: v for k, v in {**TINY, **patch}.items() if v is not None}
    with pytest.raises(ConfigError, match=fragment):
        parse_config(cfg)


def test_cli(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(DEFAULTS))
    r = run("analyze", p, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 6_574_059_520
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({k: v for k, v in DEFAULTS.items() if k != "window_size"}))
    run("analyze", bad).assert_error("window_size")
    run("verify", p, "--device", "cpu").assert_error()
