"""Meituan LongCat-Flash-Lite (``longcat_flash_ngram``, ``LongcatFlashNgramForCausalLM``): LongCat-Flash plus hashed
n-gram embeddings. Oracles: transformers' LongcatFlashForCausalLM on the meta device for the LongCat-Flash part, and a
hand count of the n-gram module from its shapes in vLLM's vllm/model_executor/models/longcat_flash_ngram.py
(``NgramEmbedding._init_ngram_embeddings``: ``k·(n - 1)`` tables of ``int(m + 2i + 1)`` rows, ``m =
ngram_vocab_size_ratio · vocab_size``, ``hidden // (k·(n - 1))`` wide, each with a bias-free projection to hidden;
the HF remote code's ``NgramEmbedding`` and the llama.cpp / MLX ports build the same)."""

from __future__ import annotations

import re

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.oracle import hf_model
from tests.test_longcat import LC

#: a small LongCat-Flash-Lite: LongCat-Flash's test model (2 checkpoint layers) with 2 x 3 n-gram tables of 10 wide
NG = dict(LC, model_type="longcat_flash_ngram", ngram_vocab_size_ratio=3, emb_neighbor_num=4, emb_split_num=2)

#: meituan-longcat/LongCat-Flash-Lite config.json (the fields that shape the model), as quoted "verified against the HF
#: repo @ main" in a Rust port's parser test (find_string id 57423646150) and as the defaults of vLLM's
#: LongcatFlashNgramConfig ("Defaults match LongCat-Flash-Lite config.json", find_string id 54708886835)
LITE = {"architectures": ["LongcatFlashNgramForCausalLM"], "model_type": "longcat_flash_ngram", "vocab_size": 131072,
        "hidden_size": 3072, "ffn_hidden_size": 6144, "expert_ffn_hidden_size": 1024, "num_layers": 14,
        "num_attention_heads": 32, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "n_routed_experts": 256, "moe_topk": 12,
        "routed_scaling_factor": 6.0, "zero_expert_num": 128, "ngram_vocab_size_ratio": 78, "emb_neighbor_num": 4,
        "emb_split_num": 4, "rope_theta": 5000000.0, "rms_norm_eps": 1e-5, "max_position_embeddings": 327680,
        "eos_token_id": 2, "torch_dtype": "bfloat16"}


def _ngram_by_hand(cfg: dict) -> tuple[int, int]:
    """(n-gram table parameters, projection parameters), vLLM's / the remote code's shapes."""
    tables = cfg["emb_split_num"] * (cfg["emb_neighbor_num"] - 1)
    dim = cfg["hidden_size"] // tables
    m = cfg["ngram_vocab_size_ratio"] * cfg["vocab_size"]
    return sum(int(m + i * 2 + 1) * dim for i in range(tables)), tables * dim * cfg["hidden_size"]


def _flash_part(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k not in ("ngram_vocab_size_ratio", "emb_neighbor_num", "emb_split_num",
                                                      "architectures")} | {"model_type": "longcat_flash"}


@pytest.mark.parametrize("change", [{}, {"ngram_vocab_size_ratio": 2.7, "emb_split_num": 3, "emb_neighbor_num": 3},
                                    {"tie_word_embeddings": True, "emb_neighbor_num": 2, "emb_split_num": 7}])
def test_total_equals_transformers_flash_plus_ngram_by_hand(change):
    """a fractional ratio: each table's rows truncated as the reference's int(m + 2i + 1); 7 tables of 64 // 7 = 9"""
    cfg = dict(NG, **change)
    flash = sum(p.numel() for p in hf_model(_flash_part(cfg)).parameters())
    tables, proj = _ngram_by_hand(cfg)
    p = count_params(parse_config(cfg))
    assert p.total == flash + tables + proj
    plain = count_params(parse_config(_flash_part(cfg)))
    assert p.embedding - plain.embedding == tables + proj and p.active - plain.active == tables + proj


def test_published_longcat_flash_lite_by_hand():
    """LongCat-Flash-Lite, counted from the module shapes: LongCat-Flash's (as tests/test_longcat.py counts
    LongCat-Flash-Chat) at hidden 3072, plus 12 n-gram tables of 78 x 131072 + 2i + 1 rows of 256 and their
    projections. Meituan publishes 68.5B total (the n-gram tables ~31.4B: "over 30B" in arXiv:2601.21204)."""
    spec = parse_config(LITE)
    p = count_params(spec)
    h, v = 3072, 131072
    mla = h * 1536 + 1536 + 1536 * 32 * 192 + h * 576 + 512 + 512 * 32 * 256 + 32 * 128 * h
    dense = 2 * v * h + 28 * (mla + 3 * h * 6144 + 2 * h) + 14 * (256 + 128) * h + h
    expert = 3 * h * 1024
    tables = sum((78 * v + 2 * i + 1) * 256 for i in range(12))
    proj = 12 * 256 * h
    assert p.total == dense + 14 * 256 * expert + tables + proj
    assert p.active == dense + 14 * 12 * expert + tables + proj
    assert p.embedding == v * h + tables + proj
    assert abs(p.total - 68.5e9) < 0.1e9
    assert len(spec.layers) == 28 and len(spec.ngram_rows) == 12 and spec.ngram_dim == 256
    names = {t.name for t in spec.tensors()}
    assert {f"model.ngram_embeddings.{m}.{i}.weight" for m in ("embedders", "post_projs") for i in range(12)} <= names
    assert any("n-gram" in c for c in spec.caveats)


def test_without_the_ratio_it_is_longcat_flash():
    """vLLM's uses_ngram_embedding: no ngram_vocab_size_ratio, no n-gram module (the other two fields ignored)"""
    cfg = {k: v for k, v in NG.items() if k != "ngram_vocab_size_ratio"}
    assert count_params(parse_config(cfg)) == count_params(parse_config(LC))
    assert parse_config(cfg).ngram_rows == ()


def test_num_layers_counts_the_checkpoint_layers():
    """vLLM's FlashNgramModel builds num_layers decoder layers and resets num_hidden_layers (the remote config's
    default of 56 counts attention sublayers of LongCat-Flash-Chat); without num_layers, half of num_hidden_layers"""
    assert len(parse_config(dict(NG, num_hidden_layers=56)).layers) == 4
    no_layers = {k: v for k, v in NG.items() if k != "num_layers"}
    assert len(parse_config(dict(no_layers, num_hidden_layers=6)).layers) == 6


def test_kv_unchanged_and_decode_ops_read_a_row_of_each_table():
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec, plain = parse_config(NG), parse_config(_flash_part(NG))
    opts = Options(context=100, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, opts).kv.bytes_per_token == analyze(plain, opts).kv.bytes_per_token == 4 * (24 + 8) * 2
    fmt, _ = weight_format(spec, "bf16")
    n = 3
    ops = {o.name: o for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=n, cached_tokens=10)
           if o.layer is None}
    # 6 tables of 64 // 6 = 10: per token the word row (64) and one row of each table, bf16
    assert ops["embedding"].weight_bytes == n * (64 + 6 * 10) * 2
    assert ops["ngram_projection"].flops == 2 * n * 6 * 10 * 64
    assert ops["ngram_projection"].weight_bytes == 6 * 10 * 64 * 2


@pytest.mark.parametrize("change,field", [
    ({"emb_split_num": None}, "emb_split_num"),
    ({"emb_neighbor_num": 1}, "emb_neighbor_num"),
    ({"emb_split_num": 40, "emb_neighbor_num": 3}, "emb_split_num"),
    ({"ngram_vocab_size_ratio": -1}, "ngram_vocab_size_ratio"),
])
def test_bad_ngram_fields_are_config_errors(change, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        parse_config(dict(NG, **change))


def test_runtime_refuses_the_ngram_embedding(tmp_path):
    pytest.importorskip("torch")
    from planner.analysis.errors import RuntimeUnavailableError
    from planner.runtime.model import build_decoder

    with pytest.raises(RuntimeUnavailableError, match="hashed n-gram embeddings"):
        build_decoder(parse_config(NG), device="meta")


def test_analyze_shows_the_active_parameters_without_the_tables(tmp_path):
    """With 31.8B of tables and 4.1B of everything else a token computes with, 'active per token' (which counts
    every table whole, by planner's convention) is followed by the figure without embedding and lm_head: LongCat-
    Flash-Lite's own (Meituan: ~2.9-4.5B activated, arXiv:2601.21204). A model whose tables are the smaller part
    (Llama-3.1-8B) shows no such row."""
    import json

    from tests.clirun import run

    p = count_params(parse_config(LITE))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LITE))
    r = run("analyze", path, env={"COLUMNS": "200"})  # wide enough that no row wraps
    assert r.code == 0, r.err
    row = next(line for line in r.out.splitlines() if "active without embedding / lm_head" in line)
    assert f"{p.active - p.embedding - p.lm_head:,}" in row
    assert 2.9e9 <= p.active - p.embedding - p.lm_head <= 4.5e9
    r = run("analyze", "llama-3.1-8b")
    assert r.code == 0 and "active without embedding" not in r.out
