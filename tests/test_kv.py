"""KV bytes per token and per sequence, derived per family from the published definitions."""


import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.kv import kv_cache
from tests.conftest import load_bundled_config

BF16 = get_dtype("bf16")


def kv_of(model_id, context, kv_dtype="bf16", **opts):
    spec = parse_config(load_bundled_config(model_id))
    return analyze(spec, Options(context=context, kv_dtype=kv_dtype, dtype="bf16", **opts))


def test_llama3_8b_per_token():
    cfg = load_bundled_config("meta-llama/Meta-Llama-3-8B")
    a = kv_of("meta-llama/Meta-Llama-3-8B", 2000)
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    assert a.kv.bytes_per_token == cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * hd * 2 == 131_072
    assert a.kv_bytes_per_sequence == 2000 * 131_072


def test_head_dim_from_config_not_hidden_over_heads():
    """Gemma-2-2B: 2304 hidden, 8 heads × 256 (head_dim explicit; 2304 / 8 would be 288)."""
    cfg = load_bundled_config("google/gemma-2-2b")
    a = kv_of("google/gemma-2-2b", 100)
    assert cfg["head_dim"] != cfg["hidden_size"] // cfg["num_attention_heads"]
    assert a.kv.bytes_per_token == cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2


def test_gemma2_alternating_windows():
    cfg = load_bundled_config("google/gemma-2-9b")
    L, kv, hd, w = cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["sliding_window"]
    per_layer = 2 * kv * hd * 2
    for ctx in (100, w, 3 * w):
        a = kv_of("google/gemma-2-9b", ctx)
        sliding = (L + 1) // 2  # layers 0, 2, 4 ... (transformers: (i + 1) % 2 != 0)
        assert a.kv_bytes_per_sequence == per_layer * (sliding * min(ctx, w) + (L - sliding) * ctx)
    assert a.kv.bytes_per_token == L * per_layer


def test_gemma3_pattern_of_six():
    cfg = load_bundled_config("google/gemma-3-1b-it")
    spec = parse_config(cfg)
    full = [i for i, layer in enumerate(spec.layers) if not layer.mixer.window]
    assert full == [i for i in range(cfg["num_hidden_layers"]) if (i + 1) % 6 == 0] or \
        full == [i for i, t in enumerate(cfg.get("layer_types", [])) if t == "full_attention"]


def test_mistral_window_halves_kv_at_8k():
    a = kv_of("mistralai/Mistral-7B-v0.1", 8192)
    assert a.kv_bytes_per_sequence * 2 == a.kv.bytes_per_token * 8192


def test_qwen2_use_sliding_window_false_is_honoured():
    cfg = load_bundled_config("Qwen/Qwen2.5-7B")
    assert cfg.get("use_sliding_window") is False and cfg.get("sliding_window")
    a = kv_of("Qwen/Qwen2.5-7B", 100_000)
    assert a.kv_bytes_per_sequence == a.kv.bytes_per_token * 100_000


def test_qwen2_sliding_window_from_max_window_layers():
    cfg = dict(load_bundled_config("Qwen/Qwen2.5-0.5B"), use_sliding_window=True, sliding_window=1024,
               max_window_layers=20)
    spec = parse_config(cfg)
    assert [layer.mixer.window for layer in spec.layers] == [None] * 20 + [1024] * 4


def test_mla_latent_cache_and_naive_expansion():
    cfg = load_bundled_config("deepseek-ai/DeepSeek-V3")
    a = kv_of("deepseek-ai/DeepSeek-V3", 4096)
    L = cfg["num_hidden_layers"]
    assert a.kv.bytes_per_token == L * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * 2
    naive = L * cfg["num_attention_heads"] * (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"] + cfg["v_head_dim"]) * 2
    assert a.kv.naive_bytes_per_token == naive
    assert a.kv.naive_bytes_per_token > 50 * a.kv.bytes_per_token


def test_gpt_oss_alternating_128_windows():
    cfg = load_bundled_config("openai/gpt-oss-20b")
    a = kv_of("openai/gpt-oss-20b", 10_000)
    per_layer = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    types = cfg["layer_types"]
    expect = sum(per_layer * (128 if t == "sliding_attention" else 10_000) for t in types)
    assert cfg["sliding_window"] == 128 and a.kv_bytes_per_sequence == expect


def test_llama4_chunked_layers_capped_at_chunk():
    cfg = load_bundled_config("meta-llama/Llama-4-Scout-17B-16E-Instruct")["text_config"]
    a = kv_of("meta-llama/Llama-4-Scout-17B-16E-Instruct", 100_000)
    per_layer = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    chunk, L = cfg["attention_chunk_size"], cfg["num_hidden_layers"]
    nope = L // 4  # every 4th layer is a global NoPE layer
    assert a.kv_bytes_per_sequence == per_layer * (nope * 100_000 + (L - nope) * chunk)


@pytest.mark.parametrize("kv_dtype,bytes_", [("fp8", 1), ("fp32", 4), ("bf16", 2)])
def test_kv_dtype_scales_bytes(kv_dtype, bytes_):
    a = kv_of("meta-llama/Llama-3.1-8B", 1000, kv_dtype=kv_dtype)
    assert a.kv.bytes_per_token == 32 * 2 * 8 * 128 * bytes_


def test_sliding_window_what_if_on_llama_32k():
    """Issue 5: a 4096 window cuts Llama-3.1-8B's KV per sequence at 32k from 4 GiB to 512 MiB."""
    base = kv_of("meta-llama/Llama-3.1-8B", 32768)
    win = kv_of("meta-llama/Llama-3.1-8B", 32768, sliding_window=4096)
    assert base.kv_bytes_per_sequence == 4 * 2**30
    assert win.kv_bytes_per_sequence == 512 * 2**20


def test_gqa_is_mha_times_ratio():
    cfg = load_bundled_config("meta-llama/Llama-3.1-8B")
    gqa = kv_cache(parse_config(cfg), BF16, BF16).bytes_per_token
    mha = kv_cache(parse_config(dict(cfg, num_key_value_heads=cfg["num_attention_heads"])), BF16, BF16).bytes_per_token
    assert gqa * cfg["num_attention_heads"] == mha * cfg["num_key_value_heads"]
