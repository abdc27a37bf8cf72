"""``planner compare`` and the capacity what-ifs (sliding window, tensor parallelism, max batch)."""

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.parallel import allreduce_bytes_per_gpu, tp_plan
from tests.clirun import run
from tests.conftest import load_bundled_config

FIVE = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b",
        "Qwen/Qwen3-30B-A3B"]


def closed_form_kv_per_token(cfg):
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * hd * 2  # bf16 K and V


def test_five_models_rows_equal_closed_forms():
    r = run("compare", *FIVE, "--context", "8192", "--batch", "32", "--hardware", "h100-sxm", "--dtype", "bf16", "--json")
    assert r.code == 0, r.err
    d = r.json
    assert d["schema_version"] == 1 and len(d["models"]) == 5
    assert sorted(d["ranking"]) == sorted(FIVE) and set(d["reasons"]) == set(FIVE)
    assert "lowest first" in d["criterion"]
    for m in d["models"]:
        cfg = load_bundled_config(m["model"]["id"])
        spec = parse_config(cfg)
        a = analyze(spec, Options(context=8192, batch=32, dtype="bf16"))
        assert m["params"]["total"] == a.params.total
        assert m["kv_cache"]["bytes_per_token"] == closed_form_kv_per_token(cfg)
        assert m["memory"]["weights_bytes"] == 2 * a.params.total  # bf16, no quantization in these
        assert m["memory"]["total_bytes"] == m["memory"]["weights_bytes"] + 32 * m["kv_cache"]["bytes_per_sequence"]
        for key in ("decode_tokens_per_s", "max_batch", "ttft_s", "cost_per_million_tokens"):
            assert key in m
    mistral = next(m for m in d["models"] if m["model"]["id"] == "mistralai/Mistral-7B-v0.1")
    assert mistral["kv_cache"]["bytes_per_sequence"] * 2 == mistral["kv_cache"]["bytes_per_token"] * 8192


def test_smaller_is_not_cheaper_mha_vs_gqa():
    """Llama-2-7B (MHA, 6.74 B) against Mistral-7B (GQA with 8 KV heads, 7.24 B)."""
    d = run("compare", "meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1", "--context", "4096",
            "--batch", "32", "--json").json
    assert d["smallest"] == "meta-llama/Llama-2-7b-hf"
    assert d["cheapest"] == d["ranking"][0] == "mistralai/Mistral-7B-v0.1"
    assert "not the smallest" in d["summary"]
    assert "more KV read per step" in d["reasons"]["meta-llama/Llama-2-7b-hf"]


def test_table_states_the_criterion():
    r = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--context", "2048", "--batch", "8")
    assert r.code == 0, r.err
    assert "ranked by" in r.out and "Cheapest to serve" in r.out


def test_price_gives_cost_and_ranks_by_it():
    d = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--price-per-hour", "2.5", "--json").json
    for m in d["models"]:
        tps = m["decode_tokens_per_s"]
        assert m["cost_per_million_tokens"] == pytest.approx(2.5 / (tps * 3600) * 1e6)
    assert d["criterion"].startswith("cost per million")
    costs = {m["model"]["id"]: m["cost_per_million_tokens"] for m in d["models"]}
    assert d["ranking"] == sorted(costs, key=costs.get)


def test_csv_and_markdown():
    r = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--format", "csv")
    lines = r.out.strip().splitlines()
    assert lines[0].startswith("rank,") and "model.id" in lines[0].split(",") and len(lines) == 3
    assert "| " in run("compare", "llama-3.1-8b", "qwen2.5-7b", "--format", "markdown").out


def test_unloadable_model_names_it():
    r = run("compare", "llama-3.1-8b", "no-such-model-xyz")
    r.assert_error("no-such-model-xyz")


def test_model_that_does_not_fit_is_ranked_last():
    d = run("compare", "llama-3.1-8b", "meta-llama/Llama-3.1-70B", "--hardware", "l4", "--json").json
    assert d["ranking"][-1] == "meta-llama/Llama-3.1-70B"
    assert "does not fit" in d["reasons"]["meta-llama/Llama-3.1-70B"]


# ---- what-ifs ------------------------------------------------------------------------------------

def test_sliding_window_what_if_reports_concurrency_gain():
    d = run("analyze", "llama-3.1-8b", "--context", "32768", "--sliding-window", "4096", "--json").json
    w = d["what_if"]
    assert w["kv_bytes_per_sequence_without"] == 4 * 2**30 and w["kv_bytes_per_sequence_with"] == 512 * 2**20
    assert w["max_batch_with"] > 7 * w["max_batch_without"] and w["concurrency_gain"] > 7


def test_tp_splits_weights_and_kv_heads():
    one = run("analyze", "llama-3.1-8b", "--json", "--context", "8192").json["memory"]
    two = run("analyze", "llama-3.1-8b", "--json", "--context", "8192", "--gpus", "2", "--tp", "2").json["memory"]
    assert two["tp"] == 2
    norms = 266_240 * 2  # replicated on every rank (bf16)
    rope = 131_072 * 128 * 2  # vLLM's cos/sin cache, replicated (max_position x rotary_dim, bf16)
    assert two["per_gpu"]["weights_bytes"] == (one["weights_bytes"] - norms) // 2 + norms + rope
    assert two["per_gpu"]["kv_bytes"] * 2 == one["per_gpu"]["kv_bytes"]


def test_tp_heads_must_divide():
    line = run("analyze", "llama-3.1-8b", "--gpus", "3", "--tp", "3").assert_error("--tp 3", "32 attention heads")
    assert "divides" in line


def test_tp_beyond_kv_heads_replicates():
    spec = parse_config(load_bundled_config("meta-llama/Llama-3.1-8B"))  # 8 KV heads
    plan = tp_plan(spec, 16)
    assert plan.kv_divisor == 8 and plan.kv_replication == 2 and plan.notes


def test_tp_adds_allreduce_time():
    spec = parse_config(load_bundled_config("meta-llama/Llama-3.1-8B"))
    assert allreduce_bytes_per_gpu(spec, tokens=4, act_bytes=2, tp=1) == 0
    assert allreduce_bytes_per_gpu(spec, tokens=4, act_bytes=2, tp=4) == 32 * 2 * (4 * 4096 * 2) * 2 * 3 // 4
    d1 = run("compare", "llama-3.1-70b", "--gpus", "4", "--tp", "4", "--json").json["models"][0]["serving"]
    assert d1["allreduce_s"] > 0 and d1["tp"] == 4


def test_mla_cache_replicated_under_tp():
    spec = parse_config(load_bundled_config("deepseek-ai/DeepSeek-V3"))
    plan = tp_plan(spec, 8)
    assert plan.kv_divisor == 1 and any("MLA" in n for n in plan.notes)
