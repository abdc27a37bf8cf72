"""Meituan LongCat-Flash (``longcat_flash``): parameters against transformers on the meta device (since 5.25 its
experts hold the routed experts' rows only, as the checkpoints do), active parameters with every top-k pick a real
expert, KV against transformers' own cache, and the runtime's refusal."""

from __future__ import annotations

import re

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.oracle import hf_model

#: a small LongCat-Flash: 2 checkpoint layers (4 sublayers), 8 routed experts + 4 zero-computation ones, top-3
LC = {"model_type": "longcat_flash", "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4, "vocab_size": 256,
      "ffn_hidden_size": 96, "q_lora_rank": 32, "kv_lora_rank": 24, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
      "head_dim": 8, "v_head_dim": 12, "n_routed_experts": 8, "zero_expert_num": 4, "moe_topk": 3,
      "expert_ffn_hidden_size": 20}

CASES = {
    "longcat_flash": LC,
    "longcat_flash-bias-tied": dict(LC, attention_bias=True, router_bias=True, tie_word_embeddings=True),
    "longcat_flash-no-zero-experts": dict(LC, zero_expert_num=0, moe_topk=2),
    # the generic names of LongcatFlashConfig.attribute_map; num_hidden_layers (sublayers) sets num_layers to its half
    "longcat_flash-generic-names": {k: v for k, v in LC.items() if k not in ("n_routed_experts", "moe_topk",
                                                                             "ffn_hidden_size", "expert_ffn_hidden_size",
                                                                             "num_layers")}
                                   | {"num_local_experts": 6, "num_experts_per_tok": 2, "intermediate_size": 80,
                                      "moe_intermediate_size": 24, "num_hidden_layers": 6},
}


def _hf_counts(cfg: dict) -> tuple[int, int]:
    """(transformers' total on meta, active: each stacked expert tensor counted for moe_topk experts)."""
    model = hf_model(cfg)
    conf = model.config
    total = active = 0
    for name, p in model.named_parameters():
        total += p.numel()
        if ".experts." in name and p.dim() == 3:
            # one slice per routed expert: the zero-computation experts hold no weights (transformers 5.24 still
            # allocated gate_up_proj rows for them, which no checkpoint stores; 5.25's LongcatFlashExperts has
            # n_routed_experts slices in gate_up_proj and down_proj alike, as the checkpoints)
            assert p.shape[0] == conf.n_routed_experts, name
            active += p.numel() // p.shape[0] * conf.moe_topk
        else:
            active += p.numel()
    return total, active


@pytest.mark.parametrize("name", sorted(CASES))
def test_total_and_active_equal_transformers(name):
    cfg = CASES[name]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == _hf_counts(cfg)


def test_published_longcat_flash_chat_sizes():
    """LongCat-Flash-Chat (transformers' class defaults are its config): 560B total as published; active, all twelve
    picks real experts, 32.18B (31.38B without the input embedding: Meituan's 18.6B-31.3B range tops out there;
    with no real expert picked, 19.50B / 18.69B)."""
    spec = parse_config({"model_type": "longcat_flash", "hidden_size": 6144, "num_attention_heads": 64,
                         "vocab_size": 131072})
    p = count_params(spec)
    h, v = 6144, 131072
    # per sublayer: MLA (q LoRA 1536 with its norm, 64 heads of 128 + 64, latent 512 + 64 with its norm, v 128),
    # its dense MLP (12288) and two norms; per checkpoint layer one router over 512 + 256 experts
    mla = h * 1536 + 1536 + 1536 * 64 * 192 + h * 576 + 512 + 512 * 64 * 256 + 64 * 128 * h
    dense = 2 * v * h + 56 * (mla + 3 * h * 12288 + 2 * h) + 28 * 768 * h + h
    expert = 3 * h * 2048
    assert p.total == dense + 28 * 512 * expert == 560_664_958_976
    assert p.active == dense + 28 * 12 * expert == 32_182_654_976
    assert (dense - v * h, p.active - v * h) == (18_693_773_312, 31_377_348_608)
    assert len(spec.layers) == 56 and any("zero-computation" in c for c in spec.caveats)


def test_kv_equals_transformers_cache():
    """transformers' cache after a prefill: two MLA caches per checkpoint layer (cache layers 2i and 2i + 1), each
    the scaled latent (kv_lora_rank) and the rotated shared key (qk_rope_head_dim) per token."""
    torch = pytest.importorskip("torch")
    from transformers import AutoConfig, AutoModelForCausalLM

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    d = dict(LC)
    conf = AutoConfig.for_model(d.pop("model_type"), **d, attn_implementation="eager")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(conf).eval()
    n = 12
    with torch.no_grad():
        cache = model(torch.randint(1, 256, (1, n)), use_cache=True).cache
    fp32 = get_dtype("fp32")
    ours = kv_cache(parse_config(LC), fp32, fp32).layers
    assert len(cache.layers) == len(ours) == 4
    for lc, lk in zip(cache.layers, ours):
        assert lk.bytes_per_token == (lc.keys.numel() + lc.values.numel()) * 4 // n == (24 + 8) * 4
    a = analyze(parse_config(LC), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * (24 + 8) * 2


def test_router_scores_the_zero_experts_and_experts_are_the_routed_ones():
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(LC)
    moe = spec.layers[0].ffn
    assert (moe.num_experts, moe.zero_experts, moe.num_experts_per_tok) == (8, 4, 3)
    assert spec.layers[1].ffn.intermediate_size == 96 and moe.shared_intermediate_size == 96
    fmt, _ = weight_format(spec, "bf16")
    ops = {o.name: o for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=10) if o.layer == 0}
    assert ops["router"].flops == 2 * 64 * (8 + 4)
    experts = next(o for n, o in ops.items() if n.startswith("experts"))
    assert experts.flops == 2 * 3 * 3 * 64 * 20
    num = spec.numerics
    assert (num.router, num.norm_topk_prob, num.routed_scaling_factor, num.score_correction_bias,
            num.shortcut_moe) == ("softmax", False, 6.0, True, True)


@pytest.mark.parametrize("change,field", [
    ({"qk_head_dim": 20}, "qk_head_dim"),
    ({"head_dim": 16}, "head_dim"),
    ({"moe_topk": 9}, "experts per token"),
    ({"n_routed_experts": 0}, "n_routed_experts"),
    ({"num_hidden_layers": 1}, "num_hidden_layers"),
    ({"q_lora_rank": None}, "q_lora_rank"),
    ({"zero_expert_num": -1}, "zero_expert_num"),
])
def test_bad_configs_are_config_errors(change, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        parse_config(dict(LC, **change))


def test_runtime_refuses_it_clearly(tmp_path):
    pytest.importorskip("torch")
    from tests.test_runtime import assert_verify_refuses

    message = "verify does not support LongCat-Flash's shortcut MoE yet"
    for i, cfg in enumerate((LC, CASES["longcat_flash-no-zero-experts"])):
        (tmp_path / str(i)).mkdir()
        assert_verify_refuses(tmp_path / str(i), cfg, message)
