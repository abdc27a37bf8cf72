"""The per-op trace: figures derived from the published formulas, internal consistency, one function
for prefill and decode."""


import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.params import count_params
from planner.analysis.trace import Totals, attended_keys, distinct_keys, expected_experts, group_ops, step_ops
from planner.analysis.weights import weight_format
from tests.conftest import load_bundled_config

BF16 = get_dtype("bf16")


def _setup(model_id, dtype="bf16"):
    cfg = load_bundled_config(model_id)
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, dtype)
    return cfg, spec, fmt


def test_llama3_8b_decode_rows_from_formulas():
    """Meta-Llama-3-8B, context 2000, batch 1, bf16 (the worked example of the trace issue)."""
    cfg, spec, fmt = _setup("meta-llama/Meta-Llama-3-8B")
    h, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, inter, vocab, n_layers = h // heads, cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    ctx = 2000
    ops = step_ops(spec, fmt, BF16, batch=1, new_tokens=1, cached_tokens=ctx)
    layer0 = {o.name: o for o in ops if o.layer == 0}
    assert layer0["q_proj"].flops == 2 * h * heads * hd == 33_554_432
    assert layer0["q_proj"].weight_bytes == 2 * h * heads * hd
    assert layer0["k_proj"].flops == layer0["v_proj"].flops == 2 * h * kv * hd == 8_388_608
    ffn = sum(layer0[n].flops for n in ("gate_proj", "up_proj", "down_proj"))
    assert ffn == 3 * 2 * h * inter == 352_321_536
    attn = layer0["attention"]
    assert attn.kv_read_bytes == (ctx + 1) * kv * hd * 2 * 2 == 8_196_096  # K and V, bf16, context+1 keys
    assert attn.flops == 2 * heads * hd * (ctx + 1) * 2 == 32_784_384  # q·k and p·v
    lm_head = next(o for o in ops if o.name == "lm_head")
    assert lm_head.flops == 2 * h * vocab == 1_050_673_152
    total_flops = sum(o.flops for o in ops)
    p = count_params(spec)
    matmul_params = p.total - p.embedding - p.norm
    assert total_flops == 2 * matmul_params + n_layers * attn.flops == 16_058_417_152
    # bytes: every weight but the embedding table once, one embedding row, the KV of 32 layers
    t = Totals.of(ops)
    assert t.weight_bytes == 2 * (p.total - p.embedding) + 2 * h
    assert t.kv_bytes == n_layers * (attn.kv_read_bytes + kv * hd * 2 * 2)
    assert 15.27e9 < t.bytes < 15.3e9


def test_llama3_8b_roofline_on_h100():
    from planner.hardware.profiles import load_profile
    from planner.hardware.timing import step_time

    _, spec, fmt = _setup("meta-llama/Meta-Llama-3-8B")
    ops = step_ops(spec, fmt, BF16, batch=1, new_tokens=1, cached_tokens=2000)
    hw = load_profile("h100-sxm")
    st, _ = step_time(ops, hw, "bf16")
    assert st.memory_s == pytest.approx(Totals.of(ops).bytes / 3.35e12)
    assert st.compute_s == pytest.approx(16_058_417_152 / 989.4e12)
    assert st.memory_s == pytest.approx(4.56e-3, rel=2e-3)
    assert st.bound == "memory" and 270 < st.ratio < 290


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-8B", "google/gemma-2-9b", "deepseek-ai/DeepSeek-V3",
                                      "openai/gpt-oss-20b", "mistralai/Mixtral-8x7B-v0.1", "EleutherAI/pythia-410m"])
@pytest.mark.parametrize("batch,ctx", [(1, 0), (3, 777), (16, 5000)])
def test_grouped_rows_times_count_sum_to_totals(model_id, batch, ctx):
    _, spec, fmt = _setup(model_id)
    ops = step_ops(spec, fmt, BF16, batch=batch, new_tokens=1, cached_tokens=ctx)
    groups = group_ops(spec, ops)
    t = Totals.of(ops)
    assert sum(g.op.flops * g.count for g in groups) == t.flops
    assert sum(g.op.bytes * g.count for g in groups) == t.bytes
    assert len(group_ops(spec, ops, all_layers=True)) == len(ops)


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-8B", "google/gemma-3-1b-it", "deepseek-ai/DeepSeek-V3",
                                      "Qwen/Qwen3-30B-A3B", "microsoft/Phi-3-mini-4k-instruct"])
def test_prefill_of_one_token_is_decode_at_context_zero(model_id):
    _, spec, fmt = _setup(model_id)
    assert analyze(spec, Options(context=1)).prefill_flops == analyze(spec, Options(context=0)).decode_flops


def test_prefill_is_the_exact_causal_triangle():
    _, spec, fmt = _setup("meta-llama/Llama-3.2-1B")
    T = 1000
    pre = {o.name: o for o in step_ops(spec, fmt, BF16, new_tokens=T, cached_tokens=0) if o.layer == 0}
    m = spec.layers[0].mixer
    assert pre["attention"].flops == m.num_attention_heads * 2 * (m.head_dim + m.v_head_dim) * T * (T + 1) // 2
    assert pre["q_proj"].flops == 2 * T * spec.hidden_size * m.q_dim


def test_attended_keys_closed_forms_match_brute_force():
    for cached in (0, 1, 5, 17, 100):
        for new in (1, 2, 9, 40):
            for window in (None, 1, 4, 16):
                for chunk in (None, 3, 8):
                    if window and chunk:
                        continue
                    brute, first = 0, cached + new
                    for p in range(cached, cached + new):
                        if window:
                            lo = max(0, p - window + 1)
                        elif chunk:
                            lo = (p // chunk) * chunk
                        else:
                            lo = 0
                        brute += p - lo + 1
                        first = min(first, lo)
                    assert attended_keys(cached, new, window, chunk) == brute
                    assert distinct_keys(cached, new, window, chunk) == cached + new - first


def test_sliding_window_caps_attention_reads():
    _, spec, fmt = _setup("mistralai/Mistral-7B-v0.1")
    ops = step_ops(spec, fmt, BF16, cached_tokens=10000)
    attn = next(o for o in ops if o.name == "attention")
    m = spec.layers[0].mixer
    assert m.window == 4096
    assert attn.kv_read_bytes == 4096 * m.num_key_value_heads * (m.head_dim + m.v_head_dim) * 2


def test_moe_expected_experts_and_weight_bytes():
    _, spec, fmt = _setup("Qwen/Qwen3-30B-A3B")
    moe = next(layer.ffn for layer in spec.layers)
    E, k = moe.num_experts, moe.num_experts_per_tok
    assert expected_experts(E, k, 1) == pytest.approx(k)
    assert expected_experts(E, k, 10_000) == pytest.approx(E)
    for batch in (1, 8, 64):
        ops = step_ops(spec, fmt, BF16, batch=batch, cached_tokens=100)
        ex = next(o for o in ops if o.kind == "experts" and o.layer == 0)
        per_expert = 2 * 3 * spec.hidden_size * moe.moe_intermediate_size
        assert ex.weight_bytes == round(per_expert * expected_experts(E, k, batch))
        assert ex.flops == 2 * batch * k * 3 * spec.hidden_size * moe.moe_intermediate_size


def test_mla_decode_absorbed_and_kv_latent():
    _, spec, fmt = _setup("deepseek-ai/DeepSeek-V3")
    m = spec.layers[0].mixer
    ops = {o.name: o for o in step_ops(spec, fmt, BF16, cached_tokens=999) if o.layer == 0}
    keys = 1000
    assert ops["attention"].kv_read_bytes == keys * (m.kv_lora_rank + m.qk_rope_head_dim) * 2
    per_key = 2 * (m.kv_lora_rank + m.qk_rope_head_dim) + 2 * m.kv_lora_rank
    assert ops["attention"].flops == m.num_attention_heads * per_key * keys
    # absorbed: kv_b_proj's weights are read once, split between q_absorb and v_up
    kv_b = m.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim) * m.kv_lora_rank
    assert ops["q_absorb"].weight_bytes + ops["v_up"].weight_bytes == 2 * kv_b
    assert ops["q_absorb"].flops + ops["v_up"].flops == 2 * kv_b
