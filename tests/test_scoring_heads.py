"""A known decoder family whose ``architectures`` name only scoring heads (a reward model or classifier:
``...ForSequenceClassification``, ``...ForRewardModel`` ...) is refused whatever its model_type: its head replaces
lm_head and it generates nothing, so a decode / KV / serving analysis of it would describe a model nobody runs. The
names SGLang, LMDeploy and TensorRT-LLM register are refused with their own reasons (tests/test_audit_s28b.py,
test_audit_s28d.py); this is the general rule for the rest (Skywork-Reward-Gemma-2-27B's
Gemma2ForSequenceClassification, a Mistral classifier ...)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import run

#: the bundled mistralai/Mistral-7B-v0.1 config.json (architectures MistralForCausalLM)
MISTRAL_7B = json.loads((Path(__file__).resolve().parents[1] / "profiles" / "models" /
                         "mistralai--Mistral-7B-v0.1.json").read_text())


def _analyze(tmp_path, cfg):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return run("analyze", str(path), "--json")


@pytest.mark.parametrize("head", ["MistralForSequenceClassification", "MistralForTokenClassification",
                                  "MistralForQuestionAnswering"])
def test_a_scoring_head_is_refused(tmp_path, head):
    r = _analyze(tmp_path, dict(MISTRAL_7B, architectures=[head], num_labels=1))
    r.assert_error(head, "model_type 'mistral'", "generates no tokens")


def test_the_same_body_with_its_lm_head_is_counted(tmp_path):
    """The refusal is the head's: the config as published, and one that lists a scoring head beside the causal LM,
    are counted (transformers' MistralForCausalLM: 7,241,732,096)."""
    for archs in (["MistralForCausalLM"], ["MistralForCausalLM", "MistralForSequenceClassification"]):
        r = _analyze(tmp_path, dict(MISTRAL_7B, architectures=archs))
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == 7_241_732_096


def test_an_unknown_family_with_a_scoring_head_is_named_an_encoder(tmp_path):
    """For a model_type planner does not know, the older rule speaks: a config whose heads are all classifiers is
    taken for an encoder (BERT lineage), not read as a generic decoder."""
    r = _analyze(tmp_path, dict(MISTRAL_7B, model_type="roberta_like",
                                architectures=["RobertaForSequenceClassification"]))
    r.assert_error("an encoder (architectures: RobertaForSequenceClassification)")
