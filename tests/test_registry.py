"""The family registry and what it hands the rest of the planner: numerics and checkpoint layout in
the spec (read through the validated field reader), and each op's tensor-parallel role."""

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.families import REGISTRY, TEXT_WRAPPERS
from planner.analysis.parallel import shard_ops, tp_plan
from planner.analysis.spec import ExpertLayout, GroupScore, RopeStyle, RouterKind
from planner.analysis.trace import Parallel, step_ops
from planner.analysis.weights import weight_format
from tests.test_families import CASES
from tests.test_hybrid import SYNTHETIC


def test_wrappers_name_registered_families():
    for wrapper, inner in TEXT_WRAPPERS.items():
        assert inner is None or inner in REGISTRY, wrapper


# ---- numerics: read from the config, then transformers' class default, then the builder's ----------


def test_deepseek_v3_numerics_from_class_defaults():
    num = parse_config(dict(CASES["deepseek_v3"], n_group=None, topk_group=None)).numerics
    assert num.rope_style == RopeStyle.PAIRS and num.router == RouterKind.SIGMOID
    # n_group 8 / topk_group 4 / routed_scaling_factor 2.5: DeepseekV3Config's defaults
    assert (num.n_group, num.topk_group, num.routed_scaling_factor) == (8, 4, 2.5)
    assert num.group_score == GroupScore.TOP2 and num.score_correction_bias


def test_deepseek_v3_rope_interleave_false_is_rotate_half():
    assert parse_config(dict(CASES["deepseek_v3"], rope_interleave=False)).numerics.rope_style == RopeStyle.HALF


def test_deepseek_v2_group_limited_greedy():
    num = parse_config(dict(CASES["deepseek_v2-lite"], topk_method="group_limited_greedy", n_group=2,
                            topk_group=1, norm_topk_prob=True)).numerics
    assert num.router == RouterKind.SOFTMAX and num.group_score == GroupScore.MAX
    assert num.norm_topk_prob is False  # DeepSeek V2's modeling code never renormalises


@pytest.mark.parametrize("name,norm", [("mixtral", True), ("qwen3_moe", False), ("olmoe", False)])
def test_norm_topk_prob_defaults(name, norm):
    assert parse_config(CASES[name]).numerics.norm_topk_prob is norm
    assert parse_config(dict(CASES[name], norm_topk_prob=not norm)).numerics.norm_topk_prob is (not norm)


def test_granite_multipliers_in_the_spec():
    spec = parse_config(dict(CASES["granite"], embedding_multiplier=12.0, residual_multiplier=0.22,
                             attention_multiplier=0.0078125, logits_scaling=8.0))
    assert spec.embedding_multiplier == 12.0
    num = spec.numerics
    assert (num.residual_multiplier, num.attention_multiplier, num.logits_scaling) == (0.22, 0.0078125, 8.0)


def test_llama4_numerics():
    spec = parse_config(dict(CASES["llama4_text"], attn_scale=0.2))
    num = spec.numerics
    assert num.rope_style == RopeStyle.PAIRS and num.router == RouterKind.TOPK_SIGMOID and num.qk_l2_norm
    assert num.attn_temperature == (0.2, 8192.0)
    assert spec.checkpoint.experts == ExpertLayout.STACKED_IN_OUT


@pytest.mark.parametrize("key,value", [("routed_scaling_factor", "big"), ("norm_topk_prob", "yes"),
                                       ("rope_interleave", 3)])
def test_numerics_go_through_the_validated_reader(key, value):
    with pytest.raises(ConfigError, match=key):
        parse_config(dict(CASES["deepseek_v3"], **{key: value}))


def test_longrope_factors_are_numbers():
    cfg = dict(CASES["phi3"], rope_scaling={"type": "longrope", "short_factor": [1.0] * 4, "long_factor": ["x"] * 4})
    with pytest.raises(ConfigError, match="long_factor"):
        parse_config(cfg)


def test_checkpoint_layouts():
    neox = parse_config(CASES["gpt_neox"]).checkpoint
    assert neox.qkv_grouped and ("gpt_neox.embed_in.", "model.embed_tokens.") in neox.renames
    assert parse_config(CASES["falcon-mqa"]).checkpoint.qkv_grouped
    assert parse_config(CASES["gpt_oss"]).checkpoint.experts == ExpertLayout.GPT_OSS
    llama = parse_config(CASES["llama"]).checkpoint
    assert not llama.qkv_grouped and llama.renames == () and llama.experts == ExpertLayout.PER_EXPERT


# ---- tensor-parallel roles -------------------------------------------------------------------------


def ops_of(cfg):
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "bf16")
    return spec, step_ops(spec, fmt, fmt.act, batch=2, new_tokens=3, cached_tokens=5)


ROW_CASES = [
    ("nemotron_h/pattern", "out_proj"),  # Mamba-2
    ("qwen3_next/base", "out_proj"),  # Gated DeltaNet
    ("lfm2/layer_types", "out_proj"),  # short conv
    ("qwen3_next/base", "shared_expert.down_proj"),
]


@pytest.mark.parametrize("case,name", ROW_CASES)
def test_row_parallel_ops_keep_their_output_whole(case, name):
    spec, ops = ops_of(SYNTHETIC[case])
    rows = [o for o in ops if o.name == name]
    assert rows and all(o.parallel == Parallel.ROW for o in rows)
    sharded = shard_ops(ops, tp_plan(spec, 2))
    for full, one in zip(ops, sharded):
        if full.name == name:
            assert one.act_write_bytes == full.act_write_bytes  # a partial sum of the whole output
            assert one.act_read_bytes == full.act_read_bytes // 2  # this rank's share of the input
            assert one.weight_bytes == full.weight_bytes // 2 and one.flops == full.flops // 2


def test_every_layer_has_a_row_parallel_op_per_all_reduce():
    """Two all-reduces per layer (after the mixer, after the FFN): each closes a row-parallel op."""
    for cfg in (CASES["llama"], CASES["qwen2_moe"], CASES["deepseek_v3"], SYNTHETIC["nemotron_h/pattern"]):
        spec, ops = ops_of(cfg)
        for i, layer in enumerate(spec.layers):
            rows = {o.name for o in ops if o.layer == i and o.parallel == Parallel.ROW}
            if layer.mixer is not None:
                assert rows & {"o_proj", "out_proj"}, (spec.model_type, i, rows)
            if layer.ffn is not None and layer.ffn.kind == "mlp":
                assert "down_proj" in rows, (spec.model_type, i, rows)


def test_column_parallel_ops_split_their_output():
    spec, ops = ops_of(CASES["llama"])
    sharded = shard_ops(ops, tp_plan(spec, 2))
    for full, one in zip(ops, sharded):
        if full.name in ("q_proj", "gate_proj", "up_proj"):
            assert full.parallel == Parallel.COLUMN
            assert one.act_write_bytes == full.act_write_bytes // 2 and one.act_read_bytes == full.act_read_bytes
        if full.kind == "norm":
            assert full.parallel == Parallel.REPLICATED and one == full
