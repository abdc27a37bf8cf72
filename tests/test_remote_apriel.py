"""ServiceNow Apriel-5B (``apriel``, remote code: AprielForCausalLM, Llama with its own head_dim and YaRN RoPE) read as
transformers' llama row, against a hand count and the model card's bf16 memory footprint (9664.14 MB); Baichuan-M1's
published attention fields alone (``baichuan_m1``, modelled in tests/test_baichuan_m1.py) give one Error line."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run

#: Apriel-5B's shape, not a verbatim config.json (none was at hand): the fields chatllm.cpp's AprielConverter reads
#: (head_dim, num_key_value_heads, mlp_bias false; a YaRN rope_scaling, left out here: the counts do not depend on it)
#: with the sizes whose count reproduces the card's 9664.14 MB bf16 footprint to its last digit
APRIEL_5B = {
    "model_type": "apriel", "architectures": ["AprielForCausalLM"], "hidden_size": 4096, "intermediate_size": 8192,
    "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 131072, "tie_word_embeddings": False, "mlp_bias": False, "attention_bias": False,
    "hidden_act": "silu",
}


def test_apriel_5b_count_matches_the_cards_footprint():
    h, i, n, heads, kv, hd, v = 4096, 8192, 28, 24, 8, 128, 131072
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * i + 2 * h
    total = 2 * v * h + n * layer + h  # untied embedding and head, layers, final norm
    assert total == 4_832_071_680
    spec = parse_config(APRIEL_5B)
    assert count_params(spec).total == total
    assert not any("not a known family" in c for c in spec.caveats)
    # the card: "Memory footprint: 9664.14 MB" in bf16 (get_memory_footprint, 1e6 bytes a MB)
    assert round(2 * total / 1e6, 2) == 9664.14
    bf16 = weight_format(spec, "bf16")[0].act
    assert kv_cache(spec, bf16, bf16).bytes_per_token == n * 2 * kv * hd * 2 == 114_688


def test_apriel_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(APRIEL_5B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 4_832_071_680
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(APRIEL_5B, num_experts=8)))
    run("analyze", str(bad)).assert_error("num_experts")


#: Baichuan-M1-14B's attention fields as published (a public capacity tool's pinned copy of its config.json)
BAICHUAN_M1 = {
    "model_type": "baichuan_m1", "architectures": ["BaichuanM1ForCausalLM"], "num_hidden_layers": 40,
    "hidden_size": 5120, "num_attention_heads": 20, "num_key_value_heads": 2, "num_swa_attention_heads": 40,
    "num_swa_key_value_heads": 8, "sliding_window": 8192, "sliding_window_layers": list(range(1, 40, 2)),
    "conv_window": 2, "max_position_embeddings": 32768,
}


def test_baichuan_m1_without_its_widths_is_one_error(tmp_path):
    """Modelled now (analysis/families/baichuan_m1.py); without vocab_size / intermediate_size it is not guessed."""
    with pytest.raises(ConfigError, match="vocab_size"):
        parse_config(BAICHUAN_M1)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(BAICHUAN_M1))
    run("analyze", str(path)).assert_error("vocab_size")
