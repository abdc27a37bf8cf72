"""Three remote-code families the generic Llama reading got wrong: Upstage Solar Pro (``solar``, a Llama block whose
config's sliding_window vLLM never reads), StepFun Step1 (``step1``, GQA through num_attention_groups, ALiBi, no RoPE)
and IQuest-Coder-V1-Loop (``iquestloopcoder``, two passes over the layers, the second gated between the first pass's
cache and a 64-token window of its own). Each checkpoint's total, K/V and decode FLOPs against a hand count from the
module shapes of vLLM's solar.py / step1.py / iquest_loopcoder.py, and the published size."""

from __future__ import annotations

import json

import pytest

from tests.clirun import analyze_json, run

#: upstage/solar-pro-preview-instruct's config.json (SolarForCausalLM; its bskcn lists are configuration_solar.py's
#: defaults, as vLLM's solar.py and the Rust port read them)
SOLAR_PRO = {
    "architectures": ["SolarForCausalLM"], "model_type": "solar", "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": 32007, "bskcn_1": [12, 20, 32, 44], "bskcn_2": [20, 32],
    "bskcn_3": [16, 24, 36, 48], "bskcn_4": [28, 40], "bskcn_tv": [0.9, 0.8], "hidden_act": "silu",
    "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 17920, "max_position_embeddings": 4096,
    "mlp_bias": False, "num_attention_heads": 40, "num_hidden_layers": 64, "num_key_value_heads": 10,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0, "sliding_window": 2047,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 32128,
}
#: stepfun-ai/Step-Audio-EditX's language model (Step1ForCausalLM), as its MLX port pins the shipped checkpoint's
#: config.json (vLLM's Step1Config has the same shape defaults)
STEP_AUDIO_EDITX = {
    "architectures": ["Step1ForCausalLM"], "model_type": "step1", "hidden_size": 3072, "intermediate_size": 8192,
    "num_attention_heads": 48, "num_attention_groups": 4, "num_hidden_layers": 32, "vocab_size": 74752,
    "rms_norm_eps": 1e-5, "bos_token_id": 1, "pad_token_id": 0, "eos_token_id": 3, "tie_word_embeddings": False,
    "use_cache": True, "max_seq_len": 32768, "torch_dtype": "bfloat16",
}
#: IQuestLab/IQuest-Coder-V1-40B-Loop-Instruct's config.json fields (as a downstream port's test pins them)
IQUEST_LOOP_40B = {
    "architectures": ["IQuestLoopCoderForCausalLM"], "model_type": "iquestloopcoder", "hidden_size": 5120,
    "num_hidden_layers": 80, "intermediate_size": 27648, "num_attention_heads": 40, "rms_norm_eps": 1e-6,
    "vocab_size": 76800, "head_dim": 128, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "attention_bias": False, "mlp_bias": False, "rope_theta": 500000, "tie_word_embeddings": False, "loop_num": 2,
    "loop_window_size": 64,
}
CONTEXT = 8192


_analyze = analyze_json  # at CONTEXT (8,192)


def _llama_layer(h: int, heads: int, kv: int, inter: int) -> int:
    """q, k, v, o (bias-free, head_dim h / heads), gate/up/down, two RMSNorms."""
    hd = h // heads
    return h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h


def _matmuls(h: int, heads: int, kv: int, inter: int) -> int:
    hd = h // heads
    return 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter


def test_solar_pro_counts_full_attention(tmp_path):
    c = SOLAR_PRO
    h, v, n = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    total = n * _llama_layer(h, 40, 10, 17920) + 2 * v * h + h
    assert total == 22_140_032_000  # the card's "22B" (22.1B)
    d = _analyze(tmp_path, c)
    assert d["params"]["total"] == d["params"]["active"] == total
    kv_token = n * 2 * 10 * 128 * 2
    assert d["kv_cache"]["bytes_per_token"] == kv_token == 327_680
    # vLLM's SolarAttention has no window: every position cached (the generic reading windowed 2047)
    assert d["kv_cache"]["bytes_per_sequence"] == kv_token * CONTEXT
    assert d["model"]["layer_kinds"] == {"full": 64}
    attn = n * 40 * 2 * 256 * (CONTEXT + 1)
    assert d["flops_per_token"]["decode"] == 2 * (n * _matmuls(h, 40, 10, 17920) + v * h) + attn
    assert not any("not a known family" in x for x in d["caveats"])


def test_step1_gqa_alibi(tmp_path):
    c = STEP_AUDIO_EDITX
    h, v, n = 3072, 74752, 32
    total = n * _llama_layer(h, 48, 4, 8192) + 2 * v * h + h
    assert total == 3_529_706_496  # the card's "3B parameters" LLM
    d = _analyze(tmp_path, c)
    assert d["params"]["total"] == total
    assert d["model"]["attention"] == "GQA (4 KV heads), head_dim 64"
    assert d["model"]["layer_kinds"] == {"full-nope": 32}  # ALiBi, no RoPE
    assert d["kv_cache"]["bytes_per_token"] == n * 2 * 4 * 64 * 2 == 32_768
    attn = n * 48 * 2 * 128 * (CONTEXT + 1)
    assert d["flops_per_token"]["decode"] == 2 * (n * _matmuls(h, 48, 4, 8192) + v * h) + attn
    # num_key_value_heads only where the config has no num_attention_groups (vLLM's StepAttention)
    alt = {k: x for k, x in c.items() if k != "num_attention_groups"} | {"num_key_value_heads": 8}
    assert _analyze(tmp_path, alt, "alt.json")["model"]["attention"] == "GQA (8 KV heads), head_dim 64"
    # tie_word_embeddings absent: tied, as vLLM's getattr(config, "tie_word_embeddings", True)
    tied = {k: x for k, x in c.items() if k != "tie_word_embeddings"}
    assert _analyze(tmp_path, tied, "tied.json")["params"]["total"] == total - v * h


def test_iquest_loop_40b(tmp_path):
    c = IQUEST_LOOP_40B
    h, v, n, heads, hd = 5120, 76800, 80, 40, 128
    gates = n * (heads * hd + heads)  # model.gate_projections.N: Linear(head_dim, heads) with a bias
    total = n * _llama_layer(h, heads, 8, 27648) + gates + 2 * v * h + h
    assert gates == 412_800 and total == 39_794_696_320  # the card's 40B
    d = _analyze(tmp_path, c)
    assert d["params"]["total"] == d["params"]["active"] == total
    assert d["model"]["layer_kinds"] == {"full": 80, "sliding(64)": 80}
    per_layer = 2 * 8 * hd * 2
    # first pass: every position; second pass: its own 64-token window (the first pass's cache only read)
    assert d["kv_cache"]["bytes_per_sequence"] == n * per_layer * CONTEXT + n * per_layer * 64 == 2_705_326_080
    full = heads * 2 * 2 * hd * (CONTEXT + 1)  # one layer's attention over every key
    local = heads * 2 * 2 * hd * 64
    gate = 2 * heads * heads * hd  # vLLM: every head's query through the whole gate, the diagonal kept
    decode = 2 * (2 * n * _matmuls(h, heads, 8, 27648) + v * h) + n * (2 * full + local + gate)
    assert d["flops_per_token"]["decode"] == decode == 183_798_988_800
    assert d["memory"]["weights_bytes"] == 2 * total  # the passes share weights: stored once


def test_cli_errors_and_verify(tmp_path):
    bad = tmp_path / "bad_step1.json"
    bad.write_text(json.dumps(dict(STEP_AUDIO_EDITX, num_attention_groups=5)))
    run("analyze", str(bad)).assert_error("num_attention_groups")
    bad.write_text(json.dumps(dict(STEP_AUDIO_EDITX, hidden_act="gelu")))
    run("analyze", str(bad)).assert_error("hidden_act")
    bad_loop = tmp_path / "bad_loop.json"
    bad_loop.write_text(json.dumps(dict(IQUEST_LOOP_40B, head_dim=64)))
    run("analyze", str(bad_loop)).assert_error("head_dim")
    step = tmp_path / "step1"
    step.mkdir()
    (step / "config.json").write_text(json.dumps(STEP_AUDIO_EDITX))
    run("verify", str(step), "--device", "cpu").assert_error("square root")
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "config.json").write_text(json.dumps(IQUEST_LOOP_40B))
    r = run("trace", str(loop / "config.json"), "--json")
    assert r.code == 0, r.err
    run("verify", str(loop), "--device", "cpu").assert_error("looped layers")


@pytest.mark.parametrize("cfg", [SOLAR_PRO, STEP_AUDIO_EDITX, IQUEST_LOOP_40B])
def test_no_generic_caveat(tmp_path, cfg):
    d = _analyze(tmp_path, cfg)
    assert not any("not a known family" in x for x in d["caveats"])
