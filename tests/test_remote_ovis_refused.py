"""AIDC-AI Ovis's remote-code format for Ovis1.6 / Ovis2 (model_type ovis) is refused by name with its reason: one
Error line, never a generic reading of its llm_config."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from tests.clirun import run

# the shape of an Ovis2 config.json (AIDC-AI/Ovis2-8B: llm_config Qwen2.5-7B, AIMv2-huge visual tokenizer)
OVIS2 = {"model_type": "ovis", "architectures": ["Ovis"], "hidden_size": 3584,
         "llm_config": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064},
         "visual_tokenizer_config": {"model_type": "aimv2_visual_tokenizer", "vocab_size": 65536, "hidden_stride": 2,
                                     "backbone_config": {"model_type": "aimv2", "hidden_size": 1536}}}


@pytest.mark.parametrize("model_type", ["ovis"])  # Ovis2.5 (ovis2_5) is counted: tests/test_ovis_remote.py
def test_ovis_is_refused_by_name(model_type, tmp_path):
    with pytest.raises(UnsupportedModelError, match="visual tokenizer is not modelled"):
        parse_config(dict(OVIS2, model_type=model_type))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(OVIS2, model_type=model_type)))
    run("analyze", str(path)).assert_error(f"model_type '{model_type}'", "Ovis")
