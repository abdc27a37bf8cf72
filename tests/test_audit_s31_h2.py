"""Session 31, helper H2: real config.json files of families not audited before, against transformers on the meta
device (tests/oracle.py).

- DeepSeek-V4 under ``model_type: "deepseek_ref"`` (tests/data/sgl-project--DeepSeek-V4-Flash-FP8.json: the config
  of sgl-project/DeepSeek-V4-Flash-FP8 as aiconfigurator keeps it, ai-dynamo/aiconfigurator
  aic-core/src/aiconfigurator_core/model_configs/sgl-project--DeepSeek-V4-Flash-FP8_config.json at 0b077da5;
  architectures DeepseekV4ForCausalLM). The name is DeepSeek-V4's release / SGLang's: "The DSV4 release artifacts
  tag model_type "deepseek_ref"" (aiconfigurator's own loader, which rewrites it to deepseek_v4 for TensorRT-LLM's
  class; code-index file 57975977898), SGLang's DeepSeekV4Config advertises it (63052233667), vLLM 0.24 serves
  "DeepSeek V4 (model_type "deepseek_ref")" (55283120335), miles / slime patch deepseek_ref <-> deepseek_v4 in their
  scripts (68831503475). planner refused it: "n_shared_experts set, but model_type 'deepseek_ref' is not a known
  family: the generic decoder would read every layer as the same routed-experts MoE ...". Now read as deepseek_v4
  (analysis/families/__init__.py MODEL_TYPE_RENAMES), with a caveat naming the rename. Oracle: transformers'
  DeepseekV4ForCausalLM of the same config on the meta device (its quantization_config left out: counts are of
  parameters), total and active (the routed experts' tensors scaled by top-k / experts).
"""

from __future__ import annotations

import json

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.clirun import run
from tests.conftest import DATA
from tests.oracle import hf_model, unique_param_count

V4_REF = DATA / "sgl-project--DeepSeek-V4-Flash-FP8.json"


def _v4_oracle(cfg: dict) -> tuple[int, int]:
    """(total, active) of transformers' DeepseekV4ForCausalLM built from ``cfg`` as deepseek_v4 on the meta device."""
    model = hf_model({k: v for k, v in cfg.items() if k != "quantization_config"} | {"model_type": "deepseek_v4"})
    routed = {id(p) for m in model.modules() if type(m).__name__.endswith("Experts") for p in m.parameters()}
    assert routed, "the oracle must find the routed experts"
    unique = {id(p): p for p in model.parameters()}.values()
    dense = sum(p.numel() for p in unique if id(p) not in routed)
    sparse = sum(p.numel() for p in unique if id(p) in routed)
    k, e = cfg["num_experts_per_tok"], cfg["n_routed_experts"]
    assert sparse * k % e == 0
    assert dense + sparse == unique_param_count(model)
    return dense + sparse, dense + sparse * k // e


def test_deepseek_ref_is_read_as_deepseek_v4_and_equals_transformers():
    cfg = json.loads(V4_REF.read_text())
    assert cfg["model_type"] == "deepseek_ref" and cfg["architectures"] == ["DeepseekV4ForCausalLM"]
    r = run("analyze", str(V4_REF), "--json")
    assert r.code == 0, r.err
    out = r.json
    total, active = _v4_oracle(cfg)
    assert (out["params"]["total"], out["params"]["active"]) == (total, active)
    assert out["model"]["model_type"] == "deepseek_v4"
    assert any("'deepseek_ref'" in c and "'deepseek_v4'" in c for c in out["caveats"])
    # the FP8 checkpoint's block quantization is read (quant_method fp8, 128 x 128 blocks)
    assert out["model"]["quantization"]["bits"] == 8


def test_deepseek_ref_reads_exactly_as_its_deepseek_v4_spelling():
    """The rename changes nothing else: the spec equals the one of the same config spelled deepseek_v4 (its caveat
    aside), KV cache and MTP layer included."""
    cfg = json.loads(V4_REF.read_text())
    ref, v4 = parse_config(cfg), parse_config(dict(cfg, model_type="deepseek_v4"))
    assert count_params(ref) == count_params(v4)
    assert ref.layers == v4.layers and ref.mtp_layers == v4.mtp_layers
    assert [c for c in ref.caveats if "deepseek_ref" not in c] == list(v4.caveats)
