"""MBZUAI-IFM K2-Horizon (``k2_horizon``, remote code ``K2HorizonForCausalLM``; vLLM's k2_horizon.py). Before: the
dense models read as the generic Llama-style decoder with a "not a known family" warning (grouped RMSNorm unseen, so
``verify`` would have run a plain RMSNorm); the MoVA model refused only as "experts on an unknown family".

Oracles: the published safetensors parameter counts (IFM/K2-Horizon-7B: 8,999,178,240, a GGUF card quoting its
safetensors, find_string id 67380155044; IFM/K2-Horizon-3.7B: 5,058,255,360 from the hub API, id 71051365341), a hand
count of vLLM's modules, and transformers' LlamaForCausalLM on the meta device (the grouped norm has Llama's weight
shape: one of hidden_size)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")

#: the shipped k2-horizon-7b config.json's geometry and grouped-norm fields, as a public Rust port's test mirrors it
#: (find_string id 68361776929, "Mirror of the shipped k2-horizon-7b-fp8 config.json"; its quantization block left out)
K2_7B = {"model_type": "k2_horizon", "architectures": ["K2HorizonForCausalLM"], "hidden_size": 4096,
         "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
         "head_dim": 128, "vocab_size": 250624, "max_position_embeddings": 524288, "layernorm_num_groups": 4,
         "rms_norm_eps": 1e-6, "rope_head_dim": 128,
         "rope_parameters": {"rope_theta": 10000000.0, "rope_type": "default"}, "query_key_norm": False,
         "tie_word_embeddings": False, "eos_token_id": 1, "bos_token_id": 0}

#: IFM/K2-Horizon-3.7B: the hub's config as a public fact-check quotes it (36 layers, hidden 2560, 32 / 8 heads,
#: dense, 524,288 context; id 71051365341), head_dim 128 (every K2 config); intermediate_size not quoted: 10240 is
#: the one width whose Llama count equals the hub API's 5,058,255,360
K2_3_7B = dict(K2_7B, hidden_size=2560, intermediate_size=10240, layernorm_num_groups=2)

#: IFM/K2-Horizon-MoVA-36B-A4B/config.json, verbatim excerpt in a public Swift port's test (id 60421109919)
K2_MOVA = {"architectures": ["K2HorizonForCausalLM"], "attention_bias": False, "attention_gate_func": "softplus",
           "bos_token_id": 0, "decoder_sparse_step": 1, "dtype": "bfloat16", "eos_token_id": 1, "head_dim": 128,
           "hidden_act": "silu", "hidden_size": 2560, "intermediate_size": 6144, "layernorm_num_groups": 2,
           "max_position_embeddings": 524288, "mlp_only_layers": [0, 1, 2], "model_type": "k2_horizon",
           "moe_gate_bias": True, "moe_intermediate_size": 768, "mova_num_experts": 64, "mova_num_experts_per_tok": 4,
           "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 100, "num_experts_per_tok": 8,
           "num_hidden_layers": 48, "num_key_value_heads": 8, "num_shared_experts": 1, "output_router_logits": False,
           "pad_token_id": None, "query_key_norm": False, "rms_norm_eps": 1e-06, "rope_head_dim": 128,
           "rope_parameters": {"rope_theta": 10000000.0, "rope_type": "default"}, "router_aux_loss_coef": 0.001,
           "router_scaling_factor": 2.5, "router_score_func": "sigmoid", "vocab_size": 250624}


def _hand(V, h, L, heads, kv, hd, inter) -> int:
    """vLLM's K2HorizonForCausalLM, dense: untied embedding and lm_head; per layer q / k / v / o (bias-free), a SwiGLU
    of ``inter``, two grouped RMSNorms of one hidden-wide weight each; the final norm."""
    return 2 * V * h + L * (2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter + 2 * h) + h


@pytest.mark.parametrize("cfg, published", [(K2_7B, 8_999_178_240), (K2_3_7B, 5_058_255_360)])
def test_dense_counts_equal_the_published_totals(cfg, published):
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == p.active == published == _hand(250624, cfg["hidden_size"], 36, 32, 8, 128,
                                                     cfg["intermediate_size"])
    assert not any("not a known family" in c for c in spec.caveats)
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456


def test_dense_equals_transformers_llama_on_meta():
    llama = {k: v for k, v in K2_7B.items() if k not in ("architectures", "rope_parameters")}
    llama.update(model_type="llama", num_hidden_layers=2, vocab_size=1000, rope_theta=10000000.0)
    ours = count_params(parse_config(dict(K2_7B, num_hidden_layers=2, vocab_size=1000))).total
    assert ours == unique_param_count(hf_model(llama))


def test_grouped_norm_is_refused_by_verify_and_one_group_runs():
    model = pytest.importorskip("planner.runtime.model", reason="the runtime needs torch")
    from planner.analysis.errors import RuntimeUnavailableError

    tiny = dict(K2_7B, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, rope_head_dim=16, vocab_size=128)
    with pytest.raises(RuntimeUnavailableError, match="grouped RMSNorm"):
        model.build_decoder(parse_config(tiny), seed=0)
    assert model.build_decoder(parse_config(dict(tiny, layernorm_num_groups=1)), seed=0) is not None


@pytest.mark.parametrize("change, fragment", [
    ({}, "MoVA"),
    ({"num_experts": 0, "mova_num_experts": 0}, "attention_gate_func"),
    ({"num_experts": 0, "mova_num_experts": 0, "attention_gate_func": None, "query_key_norm": True}, "query_key_norm"),
    ({"num_experts": 0, "mova_num_experts": 0, "attention_gate_func": None, "rope_head_dim": 64}, "rope_head_dim"),
])
def test_moe_mova_and_unmodelled_features_are_refused(tmp_path, change, fragment):
    cfg = dict(K2_MOVA, **change)
    with pytest.raises(UnsupportedModelError, match=fragment):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error(fragment)


def test_cli_and_bad_groups(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(K2_7B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_999_178_240
    path.write_text(json.dumps(dict(K2_7B, layernorm_num_groups=3)))
    run("analyze", str(path)).assert_error("layernorm_num_groups")
