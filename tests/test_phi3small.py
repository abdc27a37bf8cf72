"""Phi-3-small (``phi3small``): a remote-code family with no transformers oracle. Totals are checked against a hand
count written from vLLM's weight shapes (vllm/model_executor/models/phi3_small.py) and the published size (7.39B,
"Phi-3-small 7B"); the block-sparse layers' attention FLOPs and KV reads against a brute-force mask written from
vLLM's vllm/attention/ops/blocksparse_attention/utils.py (get_sparse_attn_mask). No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

# microsoft/Phi-3-small-8k-instruct config.json (its shape, attention, MLP, muP and RoPE fields)
PHI3_SMALL_8K = {
    "architectures": ["Phi3SmallForCausalLM"], "model_type": "phi3small", "attention_dropout_prob": 0.0,
    "blocksparse_block_size": 64, "blocksparse_homo_head_pattern": False, "blocksparse_num_local_blocks": 16,
    "blocksparse_triton_kernel_block_size": 64, "blocksparse_vert_stride": 8, "bos_token_id": 100257,
    "dense_attention_every_n_layers": 2, "embedding_dropout_prob": 0.1, "eos_token_id": 100257,
    "ff_dim_multiplier": None, "ff_intermediate_size": 14336, "ffn_dropout_prob": 0.1, "gegelu_limit": 20.0,
    "gegelu_pad_to_256": True, "hidden_act": "gegelu", "hidden_size": 4096, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "max_position_embeddings": 8192, "mup_attn_multiplier": 1.0,
    "mup_embedding_multiplier": 10.0, "mup_use_scaling": True, "mup_width_multiplier": 8.0,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pad_sequence_to_multiple_of_64": True, "reorder_and_upcast_attn": False, "rope_embedding_base": 1000000,
    "rope_position_scale": 1.0, "rope_scaling": None, "torch_dtype": "bfloat16", "use_cache": True,
    "vocab_size": 100352}
# microsoft/Phi-3-small-128k-instruct: the same shape; a 131072-token window by LongRoPE ("su"; 64 short and long
# factors per head_dim / 2, values here illustrative: they change no count)
PHI3_SMALL_128K = dict(PHI3_SMALL_8K, max_position_embeddings=131072, rope_scaling={
    "type": "su", "original_max_position_embeddings": 8192, "short_mscale": 1.0, "long_mscale": 1.19,
    "short_factor": [1.0] * 64, "long_factor": [1.5] * 64})


def vllm_hand(c: dict, inner: int | None = None) -> int:
    """phi3_small.py: embed_tokens (V, D); per layer query_key_value (D -> (H + 2K) d, bias), dense (D -> D, bias),
    up_proj (D -> 2I, bias), down_proj (I -> D, bias), input / post_attention LayerNorms (weight and bias);
    final_layernorm; lm_head is a copy of embed_tokens (load_weights), so it adds nothing."""
    D, L, H, K, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"],
                     c["vocab_size"])
    d, i = D // H, inner or c["ff_intermediate_size"]
    qkv = (H + 2 * K) * d * D + (H + 2 * K) * d
    layer = qkv + (D * D + D) + (2 * i * D + 2 * i) + (i * D + D) + 2 * 2 * D
    return V * D + L * layer + 2 * D


@pytest.mark.parametrize("cfg", [PHI3_SMALL_8K, PHI3_SMALL_128K])
def test_published_configs_by_hand_and_published_size(cfg):
    total = count_params(parse_config(cfg)).total
    assert total == vllm_hand(cfg) == 7_392_272_384
    assert round(total / 1e9, 2) == 7.39  # the model card: 7.39B parameters


def test_class_defaults_are_the_8k_model():
    """Phi3SmallConfig's defaults (configuration_phi3_small.py) are Phi-3-small-8k's shape."""
    spec = parse_config({"model_type": "phi3small"})
    assert count_params(spec).total == 7_392_272_384
    assert [type(layer.mixer).__name__ for layer in spec.layers[:4]] == \
        ["LocalStridedAttention", "Attention", "LocalStridedAttention", "Attention"]


def test_layer_pattern_norms_biases_and_numerics():
    spec = parse_config(PHI3_SMALL_8K)
    # vLLM: layer i dense when (i + 1) % dense_attention_every_n_layers == 0
    assert [layer.mixer.kind.value for layer in spec.layers[:3]] == ["local_strided", "attention", "local_strided"]
    assert all(n.norm.kind == "layer" and n.norm.bias for n in spec.layers[0].norms) and spec.final_norm.bias
    names = {t.name for t in spec.layers[0].tensors("model.layers.0")}
    assert {"model.layers.0.self_attn.qkv_proj.bias", "model.layers.0.self_attn.o_proj.bias",
            "model.layers.0.mlp.gate_up_proj.bias", "model.layers.0.mlp.down_proj.bias"} <= names
    assert spec.embedding_multiplier == 10.0 and spec.numerics.logits_scaling == 8.0
    assert spec.numerics.attention_multiplier == 1.0 / 128  # mup_attn_multiplier / head_dim
    # null / 0: every layer block-sparse; 1: every layer dense
    for every, kinds in ((None, {"local_strided"}), (0, {"local_strided"}), (1, {"attention"})):
        s = parse_config(dict(PHI3_SMALL_8K, dense_attention_every_n_layers=every))
        assert {layer.mixer.kind.value for layer in s.layers} == kinds
        assert count_params(s).total == 7_392_272_384


def test_ff_dim_multiplier_path():
    """Phi3SmallConfig.intermediate_size: ff_dim_multiplier x (hidden // 3) x 2, rounded up to 256 (pad_to_256)."""
    c = dict(PHI3_SMALL_8K, ff_intermediate_size=None, ff_dim_multiplier=3)
    assert count_params(parse_config(c)).total == vllm_hand(c, inner=8192)  # 3 * 1365 * 2 = 8190 -> 8192
    c = dict(c, gegelu_pad_to_256=False)
    assert count_params(parse_config(c)).total == vllm_hand(c, inner=8190)


def test_kv_cache_holds_every_position_of_every_layer():
    """vLLM's paged cache stores K and V of all positions in all 32 layers, block-sparse ones included."""
    bf16 = get_dtype("bf16")
    assert kv_cache(parse_config(PHI3_SMALL_8K), bf16, bf16).bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072


def _mask_keys(p: int, h: int, block: int, local: int, stride: int, step: int) -> set[int]:
    """vLLM's block mask, position by position: key k <= p of query p, head h, when its block kb is within
    local_blocks of the query's block qb, or (kb + h * step + 1) % vert_stride == 0."""
    qb = p // block
    return {k for k in range(p + 1) if qb - k // block < local or (k // block + h * step + 1) % stride == 0}


TINY = dict(PHI3_SMALL_8K, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            ff_intermediate_size=96, vocab_size=256, blocksparse_block_size=4, blocksparse_triton_kernel_block_size=4,
            blocksparse_num_local_blocks=2, blocksparse_vert_stride=3, max_position_embeddings=256)


@pytest.mark.parametrize("change, step", [({}, 1), ({"blocksparse_homo_head_pattern": True}, 0),
                                          ({"blocksparse_vert_stride": 8, "num_attention_heads": 2,
                                            "num_key_value_heads": 1}, 4)])
@pytest.mark.parametrize("cached, new", [(0, 1), (0, 37), (5, 1), (23, 1), (40, 9), (17, 30), (63, 1), (100, 3)])
def test_block_sparse_flops_and_kv_reads_equal_the_mask(change, step, cached, new):
    cfg = dict(TINY, **change)
    spec = parse_config(cfg)
    H, K = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, B, L, S = 64 // H, 4, 2, cfg["blocksparse_vert_stride"]
    assert step == (0 if cfg["blocksparse_homo_head_pattern"] else max(1, int(S / H)))  # get_head_sliding_step
    masks = {(p, h): _mask_keys(p, h, B, L, S, step) for p in range(cached, cached + new) for h in range(H)}
    pairs = sum(len(m) for m in masks.values())
    g = H // K
    read = sum(len(set().union(*(masks[p, h] for p in range(cached, cached + new) for h in range(k * g, k * g + g))))
               for k in range(K))
    bf16 = get_dtype("bf16")
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, bf16, batch=3, new_tokens=new, cached_tokens=cached)
    sparse = [o for o in ops if o.layer == 0 and o.kind == "attention"]
    dense = [o for o in ops if o.layer == 1 and o.kind == "attention"]
    assert len(sparse) == 1 and sparse[0].flops == 3 * 2 * (d + d) * pairs
    assert sparse[0].kv_read_bytes == 3 * read * 2 * d * 2
    # the dense layer: the causal triangle over every head, every cached position read
    assert dense[0].flops == 3 * 2 * 2 * d * H * sum(p + 1 for p in range(cached, cached + new))


def test_decode_at_8k_by_hand():
    """Query at position 8192 (block 128, first in its block): 16 local blocks (113..128, one key of the last) and
    the vertical blocks j <= 112 of its residue; heads h see j = -(h + 1) mod 8: 15 blocks for j = 0 mod 8 (4 heads),
    14 for the other residues (28 heads)."""
    spec = parse_config(PHI3_SMALL_8K)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, get_dtype("bf16"), batch=1, new_tokens=1, cached_tokens=8192)
    keys = 4 * (15 * 64 + 15 * 64 + 1) + 28 * (15 * 64 + 14 * 64 + 1)
    att = {o.layer: o.flops for o in ops if o.kind == "attention"}
    assert att[0] == 2 * 256 * keys == 30_556_160
    assert att[1] == 2 * 256 * 32 * 8193  # dense


@pytest.mark.parametrize("change, field", [
    ({"hidden_act": "silu"}, "hidden_act"),
    ({"ff_dim_multiplier": 4}, "ff_intermediate_size"),  # both set (Phi3SmallConfig raises)
    ({"ff_intermediate_size": None}, "ff_intermediate_size"),  # neither
    ({"blocksparse_triton_kernel_block_size": 128}, "blocksparse_triton_kernel_block_size"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
    ({"num_key_value_heads": 7}, "num_key_value_heads"),
    ({"num_attention_heads": 30}, "num_attention_heads"),
    ({"rope_scaling": "long"}, "rope_scaling"),
    ({"blocksparse_vert_stride": 0}, "blocksparse_vert_stride"),
    ({"hidden_size": "big"}, "hidden_size"),
])
def test_bad_configs(change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(PHI3_SMALL_8K, **change))


def test_cli_analyze_trace_serve(tmp_path):
    from tests.clirun import run

    (tmp_path / "config.json").write_text(json.dumps(PHI3_SMALL_8K))
    r = run("analyze", str(tmp_path))
    assert r.code == 0 and "7,392,272,384" in r.out and "blocksparse(16x64/8)" in r.out
    r = run("trace", str(tmp_path), "--context", "8192", "--hardware", "h100-sxm", "--json")
    assert r.code == 0 and any(op["name"] == "attention (block-sparse)" for op in r.json["ops"]), r.json["ops"]
    r = run("serve", str(tmp_path), "--hardware", "h100-sxm", "--input-len", "1024", "--output-len", "64")
    assert r.code == 0, r.err


def test_verify_refuses_block_sparse_layers(tmp_path):
    pytest.importorskip("torch")
    from tests.test_runtime import assert_verify_refuses

    assert_verify_refuses(tmp_path, TINY, "verify does not support Phi-3-small block-sparse attention layers yet")
