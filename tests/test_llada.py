"""LLaDA2 (``llada2_moe``) and LLaDA / LLaDA-MoE (``llada``), masked-diffusion LMs (remote code): refused by name,
with the reason (block-wise iterative denoising with bidirectional attention, which planner's one-causal-token decode
step does not describe), by every command; never read generically. The refusal's pointer (Ling 2.0's body under
model_type bailing_moe) is checked against a hand count of modeling_llada2_moe.py's modules and the published size."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run

#: inclusionAI/LLaDA2.1-mini's config.json (hub) up to "transformers_version", the LLaDA2.0-mini shape
#: (Zigeng/DMax-Math-16B, a LLaDA2.0-mini fine-tune, carries the same fields); the fields after it as DMax-Math-16B's
#: and LLaDA2.0-Uni's config.json give them, vocab_size as xLLM's llada2_moe loader test copies the mini config
LLADA2_MINI = {
    "architectures": ["LLaDA2MoeModelLM"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                 "AutoModel": "modeling_llada2_moe.LLaDA2MoeModel",
                 "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"},
    "dtype": "bfloat16", "embedding_dropout": 0.0, "first_k_dense_replace": 1, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5120, "max_position_embeddings": 32768,
    "max_window_layers": 28, "model_type": "llada2_moe", "moe_intermediate_size": 512,
    "moe_router_enable_expert_bias": True, "n_group": 8, "norm_head": False, "norm_softmax": False,
    "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 256, "num_experts_per_tok": 8,
    "num_hidden_layers": 20, "num_key_value_heads": 4, "num_shared_experts": 1, "output_dropout": 0.0,
    "output_router_logits": False, "pad_token_id": 156892, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 600000, "rotary_dim": 64, "routed_scaling_factor": 2.5, "router_dtype": "fp32",
    "score_function": "sigmoid", "sliding_window": 4096, "tie_word_embeddings": False, "topk_group": 4,
    "transformers_version": "4.57.1", "use_bias": False, "use_cache": False, "use_qk_norm": True,
    "use_qkv_bias": False, "vocab_size": 157184,
}
#: GSAI-ML/LLaDA-8B-style and inclusionAI/LLaDA-MoE-7B-A1B-style configs: model_type "llada" (their fields are not read)
LLADA_8B = {"architectures": ["LLaDAModelLM"], "model_type": "llada", "d_model": 4096, "n_heads": 32, "n_layers": 32,
            "mlp_hidden_size": 12288, "vocab_size": 126464}
LLADA_MOE = {"architectures": ["LLaDAMoEModelLM"], "model_type": "llada", "hidden_size": 2048,
             "num_hidden_layers": 16, "num_attention_heads": 16, "vocab_size": 157184}


@pytest.mark.parametrize("cfg,title", [(LLADA2_MINI, "LLaDA2"), (LLADA_8B, "LLaDA / LLaDA-MoE"),
                                       (LLADA_MOE, "LLaDA / LLaDA-MoE")])
def test_llada_refused_by_name(cfg, title):
    with pytest.raises(UnsupportedModelError, match="masked-diffusion") as exc:
        parse_config(cfg)
    assert title in str(exc.value) and "bidirectional" in str(exc.value)


@pytest.mark.parametrize("command", ["analyze", "trace", "serve"])
def test_llada2_every_command_one_error_line(tmp_path, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLADA2_MINI))
    run(command, str(path)).assert_error("llada2_moe", "masked-diffusion", "iterative denoising", "bailing_moe")


def test_llada_verify_refused(tmp_path):
    d = tmp_path / "llada"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLADA_8B))
    run("verify", str(d), "--device", "cpu").assert_error("'llada'", "masked-diffusion")


def test_llada2_body_is_ling2_hand_count():
    """The refusal's pointer: read as Ling 2.0 (bailing_moe), LLaDA2.0-mini's body counts as modeling_llada2_moe.py
    builds it: word_embeddings; per layer a fused query_key_value (no bias), per-head query/key RMSNorms, dense
    (use_bias false), input / post-attention RMSNorms; layer 0 a SwiGLU MLP of intermediate_size, the rest a sigmoid
    router gate (num_experts x hidden; its expert_bias is a buffer), 256 SwiGLU experts of moe_intermediate_size and
    one shared expert; the final norm and an untied lm_head."""
    h, v, n, inter, moe, e, k = 2048, 157184, 20, 5120, 512, 256, 8
    q, kv = 16 * 128, 4 * 128
    attn = h * (q + 2 * kv) + 2 * 128 + q * h
    moe_layer = e * 3 * h * moe + 3 * h * moe + e * h
    total = 2 * v * h + n * (attn + 2 * h) + 3 * h * inter + (n - 1) * moe_layer + h
    active = total - (n - 1) * (e - k) * 3 * h * moe
    spec = parse_config(dict(LLADA2_MINI, model_type="bailing_moe"))
    p = count_params(spec)
    assert (p.total, p.active) == (total, active) == (16_255_638_528, 1_432_968_192)
    assert round(total / 1e9) == 16 and round(active / 1e9, 1) == 1.4  # SGLang's LLaDA cookbook: "Mini (16B)"
    bf16 = weight_format(spec, "bf16")[0].act
    assert kv_cache(spec, bf16, bf16).bytes_per_token == n * 2 * kv * 2 == 40_960
