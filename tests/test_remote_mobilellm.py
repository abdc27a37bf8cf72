"""Meta MobileLLM (``mobilellm``, remote code: the hub's modeling_mobilellm.py builds transformers' Llama layers and
ties lm_head to the embedding by ``share_embedding``): counted against a hand count of Llama's module shapes and the
model cards' parameter table (124.6M / 345.3M / 603.1M / 1.01B / 1.51B: the counts less the RMSNorm weights,
rounded)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run, verify_self_checks

#: facebook/MobileLLM-125M's hub config.json (MobileLLMConfig as printed by transformers 4.56; a copy kept in a
#: public C# port's comments)
MOBILELLM_125M = {
    "architectures": ["MobileLLMForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_mobilellm.MobileLLMConfig",
                 "AutoModelForCausalLM": "modeling_mobilellm.MobileLLMForCausalLM"},
    "bos_token_id": 1, "dtype": "float32", "eos_token_id": 2, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 576, "initializer_range": 0.02, "intermediate_size": 1536, "layer_sharing": False,
    "max_position_embeddings": 2048, "mlp_bias": False, "model_type": "mobilellm", "num_attention_heads": 9,
    "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 10000.0, "share_embedding": True, "tie_word_embeddings": False,
    "transformers_version": "4.56.0", "use_cache": True, "vocab_size": 32000,
}

#: the other sizes: facebookresearch/MobileLLM's configs/<size>/config.json shapes (hidden, intermediate, layers,
#: heads, KV heads) in the hub's MobileLLM format; the model cards' parameter counts; bf16 KV bytes per token
SIZES = {
    "125M": ((576, 1536, 30, 9, 3), 124_635_456, 124.6e6, 23_040),
    "350M": ((960, 2560, 32, 15, 5), 345_355_200, 345.3e6, 40_960),
    "600M": ((1152, 3072, 40, 18, 6), 603_188_352, 603.1e6, 61_440),
    "1B": ((1280, 3584, 54, 20, 5), 1_005_461_760, 1.01e9, 69_120),
    "1.5B": ((1600, 4352, 54, 25, 5), 1_511_188_800, 1.51e9, 69_120),
}


def _config(h, inter, layers, heads, kv) -> dict:
    return dict(MOBILELLM_125M, hidden_size=h, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv)


def _hand(h, inter, layers, heads, kv, vocab=32000, hd=64) -> int:
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h  # q, k, v, o, MLP, 2 norms
    return vocab * h + layers * layer + h  # embedding (the head shares it), layers, final norm


@pytest.mark.parametrize("name", list(SIZES))
def test_mobilellm_sizes(name):
    shape, total, published, kv_bytes = SIZES[name]
    assert _hand(*shape) == total
    spec = parse_config(_config(*shape))
    p = count_params(spec)
    assert p.total == p.active == total and spec.tie_word_embeddings
    # the cards' figures are the count less the RMSNorm weights (2 a layer and the final norm), rounded
    h, layers = shape[0], shape[2]
    scale, digits = (1e9, 2) if published >= 1e9 else (1e6, 1)
    assert round((total - (2 * layers + 1) * h) / scale, digits) == round(published / scale, digits)
    bf16 = weight_format(spec, "bf16")[0].act
    assert kv_cache(spec, bf16, bf16).bytes_per_token == kv_bytes == shape[2] * 2 * shape[4] * 64 * 2


def test_mobilellm_share_embedding_decides_the_head():
    untied = dict(MOBILELLM_125M, share_embedding=False)
    assert count_params(parse_config(untied)).total == 124_635_456 + 32000 * 576
    absent = {k: v for k, v in MOBILELLM_125M.items() if k != "share_embedding"}
    assert count_params(parse_config(absent)).total == 124_635_456 + 32000 * 576  # tie_word_embeddings: false


def test_mobilellm_layer_sharing_refused():
    with pytest.raises(ConfigError, match="layer_sharing"):
        parse_config(dict(MOBILELLM_125M, layer_sharing=True))


def test_mobilellm_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MOBILELLM_125M))
    r = run("analyze", str(path), "--json", "--context", "2048")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 124_635_456 and r.json["params"]["lm_head"] == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MOBILELLM_125M, layer_sharing=True)))
    run("analyze", str(bad)).assert_error("layer_sharing")


def test_mobilellm_verifies(tmp_path):
    """verify runs the decoder (Llama layers, the tied head): its exact self-checks pass."""
    verify_self_checks(tmp_path, dict(_config(64, 96, 3, 4, 2), head_dim=16, vocab_size=128), name="mobilellm")
