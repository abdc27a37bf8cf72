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
- poolside/Laguna-XS.2-FP8 (``laguna``; tests/data/poolside--Laguna-XS.2-FP8.json, aiconfigurator's copy at d063594d,
  "added laguna-xs"): its ``rope_parameters`` holds the per-layer-type blocks and, beside them, a scalar
  ``"original_max_position_embeddings": 4096``. planner refused it ("field 'rope_parameters' must be an object keyed by
  layer type ..."), though transformers reads only the keys naming a layer type (modeling_rope_utils.py
  ``nested_rope_parameter_keys``; LagunaRotaryEmbedding reads ``rope_parameters[layer_type]``) and builds it. Now the
  keys naming a layer type in use are read and a sibling scalar is ignored (analysis/families/common.py
  ``read_ropes_by_type``); a flat dict is still refused. Oracle: transformers' LagunaForCausalLM on the meta device
  (total, active) and its attention modules' K/V widths per layer (the KV bytes per token).
"""

from __future__ import annotations

import json

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.clirun import run
from tests.conftest import DATA
from tests.oracle import hf_model, unique_param_count

V4_REF = DATA / "sgl-project--DeepSeek-V4-Flash-FP8.json"
LAGUNA_XS2 = DATA / "poolside--Laguna-XS.2-FP8.json"


def _total_active(model, k: int, e: int) -> tuple[int, int]:
    """(total, active) of a transformers MoE model: every tensor of its ``*Experts`` modules scaled by k / e."""
    routed = {id(p) for m in model.modules() if type(m).__name__.endswith("Experts") for p in m.parameters()}
    assert routed, "the oracle must find the routed experts"
    unique = {id(p): p for p in model.parameters()}.values()
    dense = sum(p.numel() for p in unique if id(p) not in routed)
    sparse = sum(p.numel() for p in unique if id(p) in routed)
    assert sparse * k % e == 0
    assert dense + sparse == unique_param_count(model)
    return dense + sparse, dense + sparse * k // e


def _v4_oracle(cfg: dict) -> tuple[int, int]:
    """(total, active) of transformers' DeepseekV4ForCausalLM built from ``cfg`` as deepseek_v4 on the meta device."""
    model = hf_model({k: v for k, v in cfg.items() if k != "quantization_config"} | {"model_type": "deepseek_v4"})
    return _total_active(model, cfg["num_experts_per_tok"], cfg["n_routed_experts"])


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


def test_laguna_xs2_rope_parameters_with_a_sibling_scalar_equals_transformers():
    cfg = json.loads(LAGUNA_XS2.read_text())
    assert cfg["rope_parameters"]["original_max_position_embeddings"] == 4096  # the sibling scalar
    r = run("analyze", str(LAGUNA_XS2), "--json")
    assert r.code == 0, r.err
    out = r.json
    model = hf_model({k: v for k, v in cfg.items() if k not in ("quantization_config", "auto_map")})
    assert type(model).__name__ == "LagunaForCausalLM"
    assert (out["params"]["total"], out["params"]["active"]) == _total_active(model, cfg["num_experts_per_tok"],
                                                                               cfg["num_experts"])
    # K/V per token: each layer's k_proj and v_proj widths in bf16; sliding layers keep sliding_window positions
    per_layer = [(a.k_proj.out_features + a.v_proj.out_features) * 2
                 for a in (layer.self_attn for layer in model.model.layers)]
    assert [x["bytes_per_token"] for x in out["kv_cache"]["per_layer"]] == per_layer
    assert [x["window"] for x in out["kv_cache"]["per_layer"]] == [
        cfg["sliding_window"] if t == "sliding_attention" else None for t in cfg["layer_types"]]


def test_laguna_rope_parameters_still_refused_flat(tmp_path):
    """The scalar is ignored only beside per-layer-type blocks: a flat rope_parameters (no layer-type key, which
    LagunaRotaryEmbedding's rope_parameters[layer_type] cannot read) stays one ConfigError."""
    cfg = json.loads(LAGUNA_XS2.read_text())
    cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4, "original_max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--json")
    r.assert_error("rope_parameters", "keyed by layer type")
