"""vLLM's Rnj1ForCausalLM (vllm/model_executor/models/rnj1.py, vLLM PR #39823 for "an upcoming model ... in the
Rnj-1 series"): Gemma 3's block read from a Gemma3TextConfig whose ``layer_types`` name ``chunked_attention`` layers,
block-local attention over ``sliding_window``-token blocks with one block of lookback (``chunk_lookback = 1`` in
Rnj1Attention). Before: with ``attention_chunk_size`` set, planner read those layers as Llama 4's chunks (no
lookback: half the receptive field and cache); without it, an error about the wrong field. Now: refused by name.
Released Rnj-1 (every layer full_attention) is unchanged: tests/test_rnj1.py pins it (8,310,501,376)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.test_rnj1 import RNJ_1

#: Rnj-1's published shape (tests/test_rnj1.py) with the fields rnj1.py reads for its block-local layers; the layer
#: pattern and block size are illustrative (no such config.json is public)
BLOCK_LOCAL = dict(RNJ_1, architectures=["Rnj1ForCausalLM"], sliding_window=512,
                   layer_types=(["chunked_attention"] * 3 + ["full_attention"]) * 8)


@pytest.mark.parametrize("chunk", [None, 512])
def test_block_local_layers_are_refused_by_name(tmp_path, chunk):
    cfg = dict(BLOCK_LOCAL) if chunk is None else dict(BLOCK_LOCAL, attention_chunk_size=chunk)
    with pytest.raises(UnsupportedModelError, match="Rnj-1 block-local attention"):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("chunked_attention", "Rnj1ForCausalLM")


def test_exaone4_chunked_layer_is_refused_and_full_rnj1_still_reads():
    exaone = {"model_type": "exaone4", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128, "sliding_window": 8,
              "attention_chunk_size": 8, "layer_types": ["chunked_attention", "full_attention"]}
    with pytest.raises(UnsupportedModelError, match="sliding and full attention layers only") as e:
        parse_config(exaone)
    assert "Rnj-1" not in str(e.value)
    assert count_params(parse_config(RNJ_1)).total == 8_310_501_376
