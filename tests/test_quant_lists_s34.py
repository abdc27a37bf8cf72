"""quantization_config's skip lists (modules_to_not_convert, llm_int8_skip_modules, ignore, ignored_layers): a
module name or a list of them; any other entry is refused naming its field (before, a non-string entry or a
mapping was dropped and the module it meant was sized as quantized)."""

from __future__ import annotations

import json

import pytest

from tests.clirun import run

BASE = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 128,
        "torch_dtype": "bfloat16"}


def _analyze(tmp_path, qc):
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "quantization_config": qc}))
    return run("analyze", str(tmp_path), "--json")


@pytest.mark.parametrize("key", ["modules_to_not_convert", "llm_int8_skip_modules", "ignore", "ignored_layers"])
@pytest.mark.parametrize("value, shown", [(["lm_head", 3], "got 3 in the list"), (["lm_head", None], "got None in the list"),
                                          ({"lm_head": True}, "got {'lm_head': True}"), (7, "got 7")])
def test_a_skip_list_with_a_non_name_is_refused_naming_the_field(tmp_path, key, value, shown):
    r = _analyze(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 32, key: value})
    assert r.code != 0 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("Error: ")
    assert f"quantization_config.{key}' must be a module name or a list of them" in r.err and shown in r.err


@pytest.mark.parametrize("value", [None, [], "lm_head", ["lm_head"]])
def test_absent_null_a_name_or_a_list_of_names_are_taken(tmp_path, value):
    r = _analyze(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 32, "modules_to_not_convert": value})
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["params"]["total"] > 0 and d["memory"]["weights_bytes"] > 0


def test_a_listed_module_stays_unquantized(tmp_path):
    """The same checkpoint with and without 'model.layers.0.mlp' in the list: its three 64x128 projections are stored
    in bf16 (2 bytes a weight) instead of 4-bit with scales, so the weights grow."""
    a = json.loads(_analyze(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 32}).out)
    b = json.loads(_analyze(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 32,
                                       "modules_to_not_convert": ["model.layers.0.mlp"]}).out)
    assert b["memory"]["weights_bytes"] > a["memory"]["weights_bytes"]
