"""Baichuan-M1 (``baichuan_m1``, baichuan-inc/Baichuan-M1-14B-Base / -Instruct; remote code, no transformers class).

Sources (public code index):
- the hub's modeling_baichuan.py (``BaichuanAttention``: W_pack of hidden + 2·kv·head_dim rows, o_proj, conv_k /
  conv_v of shape (1, 1, kv_heads, 1, conv_window), head_dim = hidden / heads of the layer's type; the decode step
  ``conv[..., :1] · last_k + conv[..., 1:] · k``; the SWA cache trimmed to sliding_window; ``NormHead``); vLLM's
  baichuan_m1 port (``LastKVCacheManager``: one K and one V row per sequence and layer) and mlx-lm's
  mlx_lm/models/baichuan_m1.py (``MambaCache`` of the previous K and V rows beside ``KVCache`` /
  ``RotatingKVCache(sliding_window)``);
- Baichuan-M1-14B's attention fields as published, from a public Swift capacity tool's test pinned to the real
  config.json (``testBaichuanM1_dualGeometrySWA_realConfig``): 40 layers, hidden 5120, 20 / 2 heads on full layers,
  40 / 8 on the 20 odd (sliding) layers, window 8192, conv_window 2, max_position_embeddings 32768. Its catalog
  hand-derives 122,880 bytes of conv state per sequence and 2,013,388,800 bytes of KV at 32K tokens (fp16, state
  included), and quotes the dtype breakdown of the published mlx-community/Baichuan-M1-14B-Instruct-4bit
  safetensors: BF16 452,613,920 and U32 1,808,793,600 elements.

The exact total comes from that 4-bit artifact: mlx-lm's default 4-bit quantization (group 64) stores each
quantized weight of N elements (every Linear and the embedding) as N/8 uint32 plus N/64 bf16 scales and N/64 bf16
biases; the RMSNorm weights and conv_k / conv_v stay bf16. So N = 8 · U32 and the unquantized residue is
BF16 − N/32: 14,470,348,800 + 415,520 = 14,470,764,320 parameters. The residue (norms and convs) checks those
terms exactly; the quantized part pins the projections and 5120 · (2 · vocab + 120 · intermediate).
vocab_size 133,120 (a secondary architecture summary; no verbatim config.json was reachable) with that sum gives
intermediate_size 17,408: the 14B config below is reconstructed from these, not copied.
"""

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
from tests.clirun import run

BF16 = get_dtype("bf16")

#: the published attention fields (the Swift tool's pinned copy of config.json) + the reconstructed widths
M1_14B = {
    "model_type": "baichuan_m1", "architectures": ["BaichuanM1ForCausalLM"], "num_hidden_layers": 40,
    "hidden_size": 5120, "num_attention_heads": 20, "num_key_value_heads": 2, "num_swa_attention_heads": 40,
    "num_swa_key_value_heads": 8, "sliding_window": 8192, "sliding_window_layers": list(range(1, 40, 2)),
    "conv_window": 2, "max_position_embeddings": 32768,
    "vocab_size": 133120, "intermediate_size": 17408, "tie_word_embeddings": False,  # reconstructed (module doc)
}
#: mlx-community/Baichuan-M1-14B-Instruct-4bit, elements by dtype (the Swift tool's catalog)
MLX4_BF16, MLX4_U32 = 452_613_920, 1_808_793_600

#: a small config of the same shape: sliding layers 0 and 2 with more (narrower) heads than the full ones
TINY = {"model_type": "baichuan_m1", "vocab_size": 1000, "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "num_swa_attention_heads": 8,
        "num_swa_key_value_heads": 4, "rope_theta": 10000.0, "sliding_window": 16, "sliding_window_layers": [0, 2],
        "conv_window": 2, "rms_norm_eps": 1e-6}


def attention_hand(hidden: int, heads: int, kv: int, w: int = 2) -> int:
    """modeling_baichuan.py's BaichuanAttention: W_pack (hidden -> hidden + 2·kv·d), o_proj (heads·d -> hidden),
    conv_k and conv_v (kv·w each); d = hidden / heads; no biases."""
    d = hidden // heads
    return hidden * (hidden + 2 * kv * d) + heads * d * hidden + 2 * kv * w


def model_hand(c: dict) -> int:
    """embed_tokens + layers (attention of the layer's type, gate/up/down, two RMSNorms) + norm + NormHead."""
    D, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    total = 2 * V * D + D
    for i in range(c["num_hidden_layers"]):
        swa = i in c["sliding_window_layers"]
        heads = c["num_swa_attention_heads"] if swa else c["num_attention_heads"]
        kv = c["num_swa_key_value_heads"] if swa else c["num_key_value_heads"]
        total += attention_hand(D, heads, kv) + 3 * D * I + 2 * D
    return total


def test_14b_total_equals_the_4bit_artifact():
    spec = parse_config(M1_14B)
    assert not spec.generic
    quantized = 8 * MLX4_U32
    residue = MLX4_BF16 - quantized // 32  # the bf16 tensors left unquantized
    total = count_params(spec).total
    assert total == quantized + residue == model_hand(M1_14B) == 14_470_764_320
    assert abs(total / 14e9 - 1) < 0.04  # the card's "14B"


def test_14b_norms_and_convs_equal_the_artifacts_unquantized_residue():
    """Independent of vocab_size / intermediate_size: the RMSNorm weights and conv taps the spec lists are exactly
    the artifact's bf16 elements that are not quantization scales and biases."""
    spec = parse_config(M1_14B)
    small = sum(t.numel for t in spec.tensors() if t.kind in ("norm", "conv"))
    assert small == MLX4_BF16 - 8 * MLX4_U32 // 32 == 415_520
    assert small == 2 * 40 * 5120 + 5120 + 20 * 2 * 2 * 2 + 20 * 2 * 8 * 2


def test_hand_counts_per_layer_type():
    spec = parse_config(M1_14B)
    full, sliding = spec.layers[0].mixer, spec.layers[1].mixer

    def numel(m):
        return sum(t.numel for t in m.tensors("model.layers.0.self_attn"))

    # full: W_pack 5120 x (5120 + 2·2·256), o_proj 5120 x 5120, conv 2 x (2 heads x 2 taps)
    assert numel(full) == 5120 * 6144 + 5120 * 5120 + 8 == attention_hand(5120, 20, 2) == 57_671_688
    # sliding: W_pack 5120 x (5120 + 2·8·128), o_proj, conv 2 x (8 x 2)
    assert numel(sliding) == 5120 * 7168 + 5120 * 5120 + 32 == attention_hand(5120, 40, 8) == 62_914_592
    assert (full.head_dim, full.num_key_value_heads, full.window) == (256, 2, None)
    assert (sliding.head_dim, sliding.num_key_value_heads, sliding.window) == (128, 8, 8192)
    assert [i for i, layer in enumerate(spec.layers) if layer.mixer.window] == M1_14B["sliding_window_layers"]
    names = {t.name for t in spec.layers[1].tensors("model.layers.1")}
    assert {"model.layers.1.self_attn.qkv_proj.weight", "model.layers.1.self_attn.conv_k",
            "model.layers.1.self_attn.conv_v"} <= names
    tiny = parse_config(TINY)
    assert count_params(tiny).total == model_hand(TINY)
    assert [layer.mixer.head_dim for layer in tiny.layers] == [16, 32, 16, 32]


def test_kv_bytes_and_conv_state_14b():
    cache = kv_cache(parse_config(M1_14B), BF16, BF16)
    full = [lk for lk in cache.layers if lk.window is None]
    sliding = [lk for lk in cache.layers if lk.window == 8192]
    assert len(full) == len(sliding) == 20
    assert {lk.bytes_per_token for lk in full} == {2 * 2 * 256 * 2}  # K and V, 2 heads x 256, bf16
    assert {lk.bytes_per_token for lk in sliding} == {2 * 8 * 128 * 2}
    # per sequence: the previous token's pre-conv K and V row of each layer
    assert {lk.state_bytes for lk in full} == {2 * 2 * 256 * 2} and {lk.state_bytes for lk in sliding} == {2 * 8 * 128 * 2}
    assert cache.state_bytes_per_sequence == 122_880  # the Swift catalog's hand-derived figure
    ctx = 32768
    kv32k = sum(lk.bytes_per_token * (min(ctx, lk.window) if lk.window else ctx) for lk in cache.layers)
    assert kv32k + cache.state_bytes_per_sequence == 2_013_388_800  # its KV@32K (fp16, the same 2 bytes)


def test_decode_flops_include_the_conv_taps():
    spec = parse_config(M1_14B)
    cached = 10_000
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=cached)
    for layer, kv, d, heads, keys in ((0, 2, 256, 20, cached + 1), (1, 8, 128, 40, 8192)):
        conv = {o.name: o for o in ops if o.layer == layer and o.name in ("conv_k", "conv_v")}
        assert {o.flops for o in conv.values()} == {2 * kv * d * 2}  # 2 taps per K / V channel
        assert conv["conv_k"].state_read_bytes == conv["conv_k"].state_write_bytes == kv * d * 2
        mixer = sum(o.flops for o in ops if o.layer == layer and o.category in ("attention", "ssm"))
        proj = 5120 * (5120 + 2 * kv * d) + 5120 * 5120
        assert mixer == 2 * proj + 2 * 2 * kv * d * 2 + heads * 2 * 2 * d * keys
        names = [o.name for o in ops if o.layer == layer and o.category in ("attention", "ssm")]
        assert names[:3] == ["qkv_proj", "conv_k", "conv_v"]  # the convs before RoPE and the cache


@pytest.mark.parametrize("patch,fragment", [
    ({"conv_window": 3}, "conv_window"),
    ({"num_swa_attention_heads": 48}, "num_swa_attention_heads"),
    ({"num_swa_key_value_heads": 3}, "num_swa_key_value_heads"),
    ({"sliding_window_layers": [1, 1]}, "sliding_window_layers"),
    ({"sliding_window_layers": [40]}, "sliding_window_layers"),
    ({"sliding_window": None}, "sliding_window"),
    ({"tie_word_embeddings": True}, "tie_word_embeddings"),
    ({"intermediate_size": None}, "intermediate_size"),
])
def test_bad_configs(patch, fragment):
    cfg = {k: v for k, v in {**M1_14B, **patch}.items() if v is not None}
    with pytest.raises(ConfigError, match=fragment):
        parse_config(cfg)


def test_cli(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(M1_14B))
    r = run("analyze", p, "--context", "32768", "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 14_470_764_320
    r = run("trace", p, "--context", "1024", "--json")
    assert r.code == 0, r.err
    assert "conv_k" in r.out
    r = run("serve", p, "--json")
    assert r.code == 0, r.err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**M1_14B, "conv_window": 4}))
    run("analyze", bad).assert_error("conv_window")
    # the published attention fields alone (no vocab_size / intermediate_size): one Error line, no Llama guess
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({k: v for k, v in M1_14B.items() if k not in ("vocab_size", "intermediate_size")}))
    run("analyze", partial).assert_error("vocab_size")
    run("verify", p, "--device", "cpu").assert_error("Baichuan-M1 conv-K/V attention")
