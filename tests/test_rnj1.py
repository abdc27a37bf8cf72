"""Essential AI's Rnj-1 (EssentialAI/rnj-1, rnj-1-instruct): its hub config.json is Gemma 3's text model
(architectures ``Gemma3ForCausalLM``, model_type ``gemma3_text``: llama.cpp PR #17811 by Essential AI, "our huggingface
config.json uses Gemma3ForCausalLM as the architecture"; vLLM PR #39823, "no code changes were needed"), so planner
reads it with the gemma3_text family: sandwich norms, (1 + w) RMSNorms, q/k norms, the embedding scaled by
sqrt(hidden). What differs from Gemma 3 is in the fields: every layer ``full_attention`` (no sliding layers, so no
window shrinks the cache) and YaRN on the global layers.

No verbatim config.json was at hand: the shape fields are the model card's table (32 layers, model dimension 4096,
MLP 16384, 32 heads, 8 K/V heads, head dim 128, vocabulary 128K = Llama 3's 128,256, tied embeddings, 8K pretraining
context extended to 32K with YaRN, GeGLU) in Gemma3TextConfig's names. Published: "Total Parameters 8.3B"."""

from __future__ import annotations

import json

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")

RNJ_1 = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "attention_bias": False,
         "final_logit_softcapping": 30.0, "head_dim": 128, "hidden_activation": "gelu_pytorch_tanh",
         "hidden_size": 4096, "intermediate_size": 16384, "layer_types": ["full_attention"] * 32,
         "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "query_pre_attn_scalar": 128, "rms_norm_eps": 1e-6,
         "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192},
         "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
         "vocab_size": 128256}


def _hand(V=128256, h=4096, L=32, heads=32, kv=8, hd=128, inter=16384) -> int:
    """Gemma3TextModel, tied lm_head: embedding, per layer q / k / v / o (bias-free), q_norm / k_norm (head_dim),
    four RMSNorms (input, post-attention, pre- and post-feedforward), a GeGLU of ``inter``; the final norm."""
    per = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd + 4 * h + 3 * h * inter
    return V * h + L * per + h


def test_rnj1_by_hand_transformers_and_published():
    spec = parse_config(RNJ_1)
    p = count_params(spec)
    assert p.total == p.active == _hand() == unique_param_count(hf_model(RNJ_1)) == 8_310_501_376
    assert round(p.total / 1e9, 1) == 8.3  # the model card's "Total Parameters 8.3B"


def test_rnj1_caches_every_layer_whole():
    """layer_types all full_attention: sliding_window (Gemma3TextConfig's 4096) applies to no layer."""
    spec = parse_config(RNJ_1)
    assert {layer.kind for layer in spec.layers} == {"full"}
    kv = kv_cache(spec, BF16, BF16)
    assert kv.bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072
    assert kv.bytes_per_sequence(32768) == 32768 * 131_072


def test_cli_analyze(tmp_path):
    d = tmp_path / "rnj1"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(RNJ_1))
    r = run("analyze", d, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 8_310_501_376 and r.json["kv_cache"]["bytes_per_token"] == 131_072
    bad = dict(RNJ_1, layer_types=["full_attention"] * 31)
    (d / "config.json").write_text(json.dumps(bad))
    run("analyze", d).assert_error("layer_types")
