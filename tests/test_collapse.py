"""Identical layers computed once: the collapsed step (``step_groups``), weights, parameters and KV
equal the layer-by-layer sums of ``step_ops`` and ``spec.tensors()`` exactly, on models that mix
layer kinds (sliding and full attention, dense and MoE FFNs, attention and state-space mixers)."""

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.kv import kv_cache
from planner.analysis.trace import NUMERIC_FIELDS, Totals, per_layer, step_groups, step_ops
from planner.analysis.weights import weight_format
from planner.hardware.profiles import load_profile
from planner.hardware.timing import groups_time, step_time
from tests.conftest import load_bundled_config

MIXED = [
    "google/gemma-3-1b-it",  # sliding 5 : full 1
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",  # chunked RoPE / global NoPE layers, every layer MoE
    "ai21labs/AI21-Jamba-1.5-Mini",  # Mamba / attention hybrid, dense / MoE every other layer
    "nvidia/Nemotron-H-56B-Base-8K",  # Mamba-2, attention and MLP-only layers
    "deepseek-ai/DeepSeek-V3",  # 3 dense layers then MoE, MLA
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic",  # quantized, with an ignore list
]
STEPS = [dict(batch=1, new_tokens=1, cached_tokens=3000), dict(batch=7, new_tokens=1, cached_tokens=70000),
         dict(batch=1, new_tokens=600, cached_tokens=0)]


def _spec(model_id):
    return parse_config(load_bundled_config(model_id))


@pytest.mark.parametrize("model_id", MIXED)
def test_collapsed_step_equals_the_per_layer_sum(model_id):
    spec = _spec(model_id)
    assert len(spec.layer_groups) < spec.num_layers  # there is something to collapse
    fmt, _ = weight_format(spec)
    hw = load_profile("h100-sxm")
    for shape in STEPS:
        ops = step_ops(spec, fmt, fmt.act, **shape)
        groups = step_groups(spec, fmt, fmt.act, **shape)
        assert len(groups) < len(ops)
        assert Totals.of_groups(groups) == Totals.of(ops)
        for name in NUMERIC_FIELDS:
            assert sum(getattr(g.op, name) * g.count for g in groups) == sum(getattr(o, name) for o in ops)
        # expanded again, the collapsed step is step_ops row for row, layer indices included
        assert [(o.name, layer) + tuple(getattr(o, f) for f in NUMERIC_FIELDS) for o, layer in per_layer(groups)] \
            == [(o.name, o.layer) + tuple(getattr(o, f) for f in NUMERIC_FIELDS) for o in ops]
        a, _ = step_time(ops, hw, fmt.compute.compute)
        b, _ = groups_time(groups, hw, fmt.compute.compute)
        assert b.kernels == a.kernels and b.bound == a.bound
        for f in ("compute_s", "memory_s", "device_s", "launch_s", "eager_s", "graph_s"):
            assert getattr(b, f) == pytest.approx(getattr(a, f), rel=1e-12)


@pytest.mark.parametrize("model_id", MIXED)
def test_collapsed_weights_and_kv_equal_the_per_layer_sum(model_id):
    spec = _spec(model_id)
    for dtype in (None, "int4"):
        fmt, _ = weight_format(spec, dtype)
        assert fmt.model_bytes(spec) == fmt.bytes_of(spec.tensors())
        assert fmt.model_bytes(spec, kind="norm") == fmt.bytes_of([t for t in spec.tensors() if t.kind == "norm"])
    fmt, _ = weight_format(spec)
    kv = kv_cache(spec, fmt.act, fmt.act)
    for ctx in (0, 1, 511, 512, 513, 8192, 10**6):
        assert kv.bytes_per_sequence(ctx) == sum(lk.bytes_at(ctx) for lk in kv.layers)


def test_layers_named_in_modules_to_not_convert_are_not_collapsed_with_the_rest(config_dir):
    """Layers 0 and 5 keep bf16 MLPs (their module names are listed): equal specs, different bytes."""
    cfg = dict(load_bundled_config("meta-llama/Llama-3.2-1B"))
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128,
                                  "modules_to_not_convert": ["model.layers.0.mlp", "model.layers.5.mlp.down_proj"]}
    spec = parse_config(json.loads(json.dumps(cfg)))
    assert len(spec.layer_groups) == 1
    assert spec.storage_layer_groups == ((0,), tuple(i for i in range(spec.num_layers) if i not in (0, 5)), (5,))
    fmt, _ = weight_format(spec)
    assert fmt.model_bytes(spec) == fmt.bytes_of(spec.tensors())
    ops = step_ops(spec, fmt, fmt.act, batch=3, cached_tokens=1000)
    assert Totals.of_groups(step_groups(spec, fmt, fmt.act, batch=3, cached_tokens=1000)) == Totals.of(ops)
    down = {o.layer: o.weight_bytes for o in ops if o.name == "down_proj"}
    assert down[0] == down[5] > down[1]  # the bf16 copies are larger
