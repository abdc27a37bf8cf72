"""BharatGen Param2-MoE (``param2moe``) and Xiaomi MiMo-V2.5 / V2.6 (``mimo_v2``), remote-code MoE families that the
generic Llama+MoE reading used to take (param2moe: silently wrong, 17.40B with every layer MoE and no shared expert;
mimo_v2: an error about a missing num_experts). Param2 is counted from vLLM's
vllm/model_executor/models/param2moe.py (Param2MoEAttention, Param2MoEMLP, Param2MoEMoEBlock, Param2MoEDecoderLayer);
mimo_v2 is refused by name. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# bharatgenai/Param2-17B-A2.4B-Thinking's config.json as BharatGen's converter writes it (github.com/Bharatgen-Tech/
# nemo_to_hf nemo2hf.py gen_config: the field set, tie_word_embeddings true, num_shared_experts 2), with the 17B
# model's values from Megatron-Bridge's Param2ModelProvider / Param2Bridge and transformers' Param2MoEConfig
# (checkpoint bharatgenai/Param2-17B-A2.4B-Thinking): 21 layers, hidden 2048, dense 9216, 32 heads / 8 KV of 64,
# vocab 128008, 64 experts of 2048 top 6, shared width 4096, first layer dense, sigmoid + expert bias, scale 2.5
PARAM2 = {
    "architectures": ["Param2MoEForCausalLM"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_param2moe.Param2MoEConfig",
                 "AutoModel": "modeling_param2moe.Param2MoEModel",
                 "AutoModelForCausalLM": "modeling_param2moe.Param2MoEForCausalLM"},
    "model_type": "param2moe", "num_hidden_layers": 21, "hidden_size": 2048, "intermediate_size": 9216,
    "eos_token_id": 3, "pad_token_id": 0, "first_k_dense_replace": 1, "hidden_act": "silu",
    "max_position_embeddings": 4096, "moe_intermediate_size": 2048, "norm_topk_prob": True, "num_experts_per_tok": 6,
    "num_attention_heads": 32, "num_experts": 64, "num_key_value_heads": 8, "rope_theta": 1000000.0,
    "rope_scaling": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_bias": False,
    "use_rmsnorm": True, "rms_norm_eps": 1e-06, "head_dim": 64, "num_shared_experts": 2, "use_cache": True,
    "use_qkv_bias": False, "embedding_dropout": 0.0, "output_dropout": 0.0, "vocab_size": 128008,
    "partial_rotary_factor": 1.0, "router_dtype": "fp32", "moe_router_enable_expert_bias": True,
    "routed_scaling_factor": 2.5, "n_group": 1, "topk_group": 1, "use_qk_norm": True, "score_function": "sigmoid",
    "moe_shared_expert_intermediate_size": 4096}

TINY = dict(PARAM2, num_hidden_layers=3, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=320, num_experts=8,
            num_experts_per_tok=2, moe_shared_expert_intermediate_size=48, max_position_embeddings=512)
TINY.pop("auto_map")


def _param2_by_hand(h, L, dense_layers, heads, kv, hd, inter, moe_inter, E, k, shared, vocab, tied, qk_norm):
    """(total, active) from vLLM's param2moe.py shapes: qkv_proj (h x (heads + 2 kv)·hd), o_proj (heads·hd x h),
    q/k_layernorm (hd each) with use_qk_norm; two RMSNorms a layer; Param2MoEMLP (3·h·inter) on the first
    first_k_dense_replace layers, else gate (E x h; expert_bias a choice-only fp32 buffer), E experts of 3·h·moe_inter
    and ONE shared MLP of 3·h·shared (moe_shared_expert_intermediate_size, not multiplied); final norm; embedding,
    plus lm_head when untied."""
    attn = h * (heads + 2 * kv) * hd + heads * hd * h + (2 * hd if qk_norm else 0)
    dense = attn + 3 * h * inter + 2 * h
    moe = attn + E * h + E * 3 * h * moe_inter + 3 * h * shared + 2 * h
    total = vocab * h * (1 if tied else 2) + h + dense_layers * dense + (L - dense_layers) * moe
    active = total - (L - dense_layers) * (E - k) * 3 * h * moe_inter
    return total, active


def test_param2_17b_by_hand_and_published():
    p = count_params(parse_config(PARAM2))
    total, active = _param2_by_hand(2048, 21, 1, 32, 8, 64, 9216, 2048, 64, 6, 4096, 128008, True, True)
    assert (p.total, p.active) == (total, active) == (17_151_140_480, 2_554_962_560)
    # the card: "17B total parameters, 2.4B active"; ~34 GB of bf16 weights (17.15B x 2 bytes = 34.3 GB)
    assert round(p.total / 1e9) == 17
    assert 2.2e9 < p.active - 128008 * 2048 < 2.4e9 < p.active < 2.6e9  # 2.29B without the tied embedding
    assert p.shared_experts == 20 * 3 * 2048 * 4096 and p.mlp == 3 * 2048 * 9216


def test_param2_shared_width_is_not_multiplied():
    """vLLM reads moe_shared_expert_intermediate_size as the whole shared width (bailing.py multiplies it by
    num_shared_experts); without it, num_shared_experts x moe_intermediate_size."""
    base = count_params(parse_config(PARAM2)).total
    no_field = {k: v for k, v in PARAM2.items() if k != "moe_shared_expert_intermediate_size"}
    assert count_params(parse_config(no_field)).total == base + 20 * 3 * 2048 * (2 * 2048 - 4096)
    assert count_params(parse_config(dict(PARAM2, num_shared_experts=0))).total == base - 20 * 3 * 2048 * 4096
    # untied: a separate lm_head
    assert count_params(parse_config(dict(PARAM2, tie_word_embeddings=False))).total == base + 128008 * 2048


def test_param2_kv_cache_and_numerics():
    spec = parse_config(PARAM2)
    kv = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 21 * 2 * 8 * 64 * 2 == 43_008
    num = spec.numerics
    assert num.router.name == "SIGMOID" and num.score_correction_bias and num.norm_topk_prob
    assert num.routed_scaling_factor == 2.5 and num.n_group == 1 and num.rope_style.name == "HALF"
    # vLLM's defaults where the config is silent: sigmoid scores with an expert bias, one dense layer
    bare = {k: v for k, v in PARAM2.items() if k not in ("score_function", "moe_router_enable_expert_bias",
                                                          "first_k_dense_replace")}
    s2 = parse_config(bare)
    assert s2.numerics.router.name == "SIGMOID" and s2.numerics.score_correction_bias
    assert count_params(s2).total == count_params(spec).total


@pytest.mark.parametrize("extra,field", [
    ({"num_experts_per_tok": 65}, "num_experts_per_tok"),
    ({"num_key_value_heads": 5}, "num_key_value_heads"),
    ({"score_function": "relu"}, "score_function"),
    ({"n_group": 3, "topk_group": 1}, "n_group"),
    ({"num_nextn_predict_layers": 1}, "num_nextn_predict_layers"),
])
def test_param2_bad_or_unmodelled_configs_raise(extra, field):
    with pytest.raises((ConfigError, UnsupportedModelError), match=field):
        parse_config(dict(PARAM2, **extra))


def test_param2_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(PARAM2))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    d = r.json
    assert d["params"]["total"] == 17_151_140_480 and d["kv_cache"]["bytes_per_token"] == 43_008
    assert not any("not a known family" in c for c in d["caveats"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(PARAM2, num_experts_per_tok=65)))
    run("analyze", bad, "--json").assert_error("num_experts_per_tok")


def test_param2_verify_self_checks_pass(tmp_path):
    verify_self_checks(tmp_path, TINY, name="param2", batch=2)


# MiMo-V2.5-Pro / V2.6-Pro (MiMoV2ForCausalLM) geometry, as captured from a checkpoint's config.json (70 layers,
# hidden 6144, 128 heads / 8 KV, head 192 / v 128, SWA 8 KV, 384 experts of 2048 top 8, dense 16384, vocab 152576);
# the layer patterns here are illustrative; vision_config / audio_config as the checkpoints carry them
MIMO_V2 = {
    "architectures": ["MiMoV2ForCausalLM"], "model_type": "mimo_v2", "vocab_size": 152576, "hidden_size": 6144,
    "num_hidden_layers": 70, "max_position_embeddings": 1048576, "num_attention_heads": 128,
    "num_key_value_heads": 8, "head_dim": 192, "v_head_dim": 128, "swa_num_attention_heads": 128,
    "swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128, "partial_rotary_factor": 0.334,
    "rope_theta": 10000000, "swa_rope_theta": 10000, "sliding_window": 128, "sliding_window_size": 128,
    "hybrid_layer_pattern": [0 if i == 0 or (i + 1) % 6 == 0 else 1 for i in range(70)],
    "moe_layer_freq": [0] + [1] * 69, "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False,
    "intermediate_size": 16384, "n_routed_experts": 384, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
    "routed_scaling_factor": None, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "n_group": 1,
    "topk_group": 1, "norm_topk_prob": True, "layernorm_epsilon": 1e-5, "attention_value_scale": 0.612,
    "hidden_act": "silu", "vision_config": {"model_type": "mimo_v2_vision"},
    "audio_config": {"model_type": "mimo_v2_audio"}}


def test_mimo_v2_is_refused_by_name(tmp_path):
    with pytest.raises(UnsupportedModelError, match="MiMo-V2.5"):
        parse_config(MIMO_V2)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MIMO_V2))
    run("analyze", path, "--json").assert_error("mimo_v2", "vision tower", "audio encoder",
                                                "swa_num_key_value_heads")


def test_pangu_pro_moe_v2_fields_are_named_in_the_generic_caveat():
    """No Pangu Pro MoE V2 config (vLLM PanguProMoEV2ForCausalLM) was found to model; read generically, a config
    carrying its split nope / rope / v widths or sink parameters says that the counts may be wrong."""
    cfg = {"model_type": "PanguProMoEV2", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "qk_nope_dim": 128,
           "v_channels": 128, "param_sink_number": 128}
    caveat = next(c for c in parse_config(cfg).caveats if "does not model these fields" in c)
    assert all(k in caveat for k in ("qk_nope_dim", "v_channels", "param_sink_number"))
