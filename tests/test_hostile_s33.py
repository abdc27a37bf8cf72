"""Hostile inputs against the features of session 33: compressed-tensors configs with several config_groups (their
``re:`` targets and ignore lists), the other regular expressions a config holds (Phi-4-multimodal's LoRA ``layer``),
token counts with suffixes, and plan's simulation size. Each gets one ``Error:`` line, quickly."""

from __future__ import annotations

import json
import time

import pytest

from tests.clirun import run
from tests.test_phi4mm import _tiny_remote

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 2,
         "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "torch_dtype": "bfloat16",
         "max_position_embeddings": 4096}
FP8 = {"format": "float-quantized", "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
       "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}
NVFP4 = {"format": "nvfp4-pack-quantized",
         "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}


def _mixed(tmp_path, targets: list, ignore=None):
    q = {"quant_method": "compressed-tensors",
         "config_groups": {"g0": {**FP8, "targets": targets}, "g1": {**NVFP4, "targets": ["Linear"]}}}
    if ignore is not None:
        q["ignore"] = ignore
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": q}))
    return path


# Python's re has no timeout: '(.*)*x$' against 'model.layers.0.self_attn.q_proj' backtracks 2^31 ways (analyze hung
# for ever). The patterns below are of that class (or a polynomial of degree 5) but fast against these module
# names, so that on the old code the tests fail rather than hang
SLOW = ["re:(a+)+$", "re:(x*)*y", "re:(?:[xyz]+)*!", "re:(q|qq)*!", "re:(a|ab)*c", "re:.*.*.*.*.*!",
        "re:.*e.*e.*e.*e.*e!"]  # (the last: a literal its '.' can match pins nothing; minutes on a long name)


@pytest.mark.parametrize("pattern", SLOW)
def test_mixed_group_targets_that_backtrack_without_bound_are_refused(tmp_path, pattern):
    r = run("analyze", _mixed(tmp_path, [pattern]), "--json")
    r.assert_error("config_groups.'g0'.targets", "exponential time")


@pytest.mark.parametrize("pattern", SLOW[:3])
def test_ignore_patterns_that_backtrack_without_bound_are_refused(tmp_path, pattern):
    r = run("analyze", _mixed(tmp_path, ["Linear"], ignore=[pattern]), "--json")
    r.assert_error("quantization_config.ignore", "exponential time")


@pytest.mark.parametrize("pattern", ["re:" + "(" * 1000 + "a" + ")" * 1000, "re:a{4294967296}"])
def test_regexes_too_deep_or_too_large_for_re_are_config_errors(tmp_path, pattern):
    """RecursionError / OverflowError from re.compile were 'internal error' lines."""
    r = run("analyze", _mixed(tmp_path, [pattern]), "--json")
    r.assert_error("invalid regular expression")
    assert "internal error" not in r.err


def test_ignore_patterns_with_inline_flags_are_matched_each_on_its_own(tmp_path):
    """Two 're:' ignore entries with inline global flags were joined into one regex ('(?:(?i)x)|(?:(?s)y)'), which
    Python 3.11 refuses: an internal error. Each is its own regex now, its flags at its start."""
    r = run("analyze", _mixed(tmp_path, ["Linear"], ignore=["re:(?i)MODEL\\.LAYERS\\.0\\..*", "re:(?s)lm_head"]),
            "--json")
    assert r.code == 0, r.err
    plain = run("analyze", _mixed(tmp_path, ["Linear"]), "--json")
    assert r.json["memory"]["weights_bytes"] > plain.json["memory"]["weights_bytes"]  # layer 0 left in bf16


def test_realistic_patterns_still_accepted(tmp_path):
    r = run("analyze", _mixed(tmp_path, ["re:.*self_attn\\.(q|k|v|o)_proj$", "re:model\\.layers\\.\\d+\\.mlp\\..*"],
                              ignore=["re:.*lm_head", "re:.*mlp\\.experts\\.\\d+\\.(gate|up|down)_proj$"]), "--json")
    assert r.code == 0, r.err
    # five repetitions of variable width, the two digit runs pinned by the '.' after them
    r = run("analyze", _mixed(tmp_path, ["re:.*layers\\.[0-9]+\\..*mlp\\.[a-z]+_proj.*"],
                              ignore=[r"re:.*layers\.[0-9]+\..*experts\.[0-9]+\..*"]), "--json")
    assert r.code == 0, r.err


@pytest.mark.parametrize("layer", ["(x+)+y", "(" * 1000 + "a" + ")" * 1000, "a{4294967296}"])
def test_phi4mm_lora_layer_regex_is_checked_as_the_quant_patterns_are(tmp_path, layer):
    """vision_lora.layer is full-matched against every layer's modules: '(.*)*!' took 30 s on a two-layer model
    (minutes on the real 32; '(x+)+y' is of its class, fast on these names), too deep / too large ones were
    internal errors."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_tiny_remote(vision_lora={"r": 4, "layer": layer})))
    t = time.monotonic()
    run("analyze", path).assert_error("vision_lora.layer")
    assert time.monotonic() - t < 10


@pytest.mark.parametrize("value", ["0." + "0" * 400 + "1k", "1." + "0" * 400 + "1k", "2.00000000000000000001k"])
def test_token_counts_are_whole_exactly_not_by_float_rounding(value):
    """float('1.000…01') * 1024 rounds to 1024.0, and '0.000…01k' to 0.0: accepted as whole token counts."""
    run("analyze", "llama-3.1-8b", "--context", value).assert_error("--context", code=2)
    run("serve", "llama-3.1-8b", "-i", value).assert_error("--input-len", code=2)
    run("trace", "llama-3.1-8b", "--sweep", f"context=1k,{value}").assert_error("--sweep context")


def test_token_counts_exact_values_still_parse():
    for value in ("1.5k", "0.5k", "2.0k", "1M"):
        assert run("analyze", "llama-3.1-8b", "--context", value).code == 0
    assert run("trace", "llama-3.1-8b", "--sweep", "context=1.5k,2k").code == 0
