"""Phi-4-mini-flash-reasoning (``phi4flash``: SambaY, remote code, no transformers class).

References (the public copy of the hub repository microsoft/Phi-4-mini-flash-reasoning in the code index:
franciskamande-ai/cloned_models, folder Phi-4-mini-flash-reasoning/):

- config.json (copied below);
- modeling_phi4flash.py: the module shapes the hand counts below are written from (``SambaYDecoderLayer``,
  ``Phi3Mamba``, ``SambaYAttention``, ``FlashDiffCustomAttention``, ``SambaYMLP``, ``nn.LayerNorm``) and the cache
  (``SambaYCache``: Mamba conv / SSM state on even layers of the first half + 2, sliding K/V on the odd ones, full K/V on
  layer L/2 + 1 only);
- model.safetensors.index.json: ``metadata.total_size`` 7,706,608,640 bytes and the tensor names of ``weight_map``;
- vLLM's vllm/model_executor/models/phi4flash.py (vllm-project/vllm): the cache the engine keeps (conv state
  d_inner x (d_conv - 1), SSM state d_inner x d_state for L/2 / mb_per_layer + 1 Mamba layers; the cross-attention
  layers' ``kv_sharing_target_layer_name`` = layer L/2 + 1).

Before this family the planner read the config as a generic Llama: 3,658,058,240 parameters, 32 sliding layers.
"""

from __future__ import annotations

import json
import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, OptionError
from planner.analysis.kv import kv_cache
from planner.analysis.parallel import tp_plan
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format
from tests.clirun import run

BF16 = get_dtype("bf16")

# microsoft/Phi-4-mini-flash-reasoning config.json (franciskamande-ai/cloned_models,
# Phi-4-mini-flash-reasoning/config.json), verbatim
CONFIG = {
    "architectures": ["Phi4FlashForCausalLM"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_phi4flash.Phi4FlashConfig",
                 "AutoModelForCausalLM": "modeling_phi4flash.Phi4FlashForCausalLM", "AutoTokenizer": "Xenova/gpt-4o"},
    "pad_token_id": 199999, "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999, "hidden_act": "silu",
    "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 10240, "layer_norm_eps": 1e-5,
    "max_position_embeddings": 262144, "_attn_implementation": "flash_attention_2", "mb_per_layer": 2,
    "model_type": "phi4flash", "num_attention_heads": 40, "num_hidden_layers": 32, "num_key_value_heads": 20,
    "resid_pdrop": 0.0, "sliding_window": 512, "torch_dtype": "bfloat16", "tie_word_embeddings": True,
    "transformers_version": "4.46.1", "use_cache": True, "mlp_bias": False, "lm_head_bias": False,
    "vocab_size": 200064}

#: model.safetensors.index.json metadata.total_size (bytes)
INDEX_TOTAL_SIZE = 7_706_608_640
#: the planner's reading before this family (generic Llama)
GENERIC_TOTAL = 3_658_058_240

# model.safetensors.index.json weight_map, by layer kind: the suffixes under model.layers.{i}. (copied from the index;
# every layer of the kind has exactly these), plus three model-level names; 434 names in all
COMMON = ["input_layernorm.bias", "input_layernorm.weight", "mlp.fc1.weight", "mlp.fc2.weight",
          "post_attention_layernorm.bias", "post_attention_layernorm.weight"]
INDEX_MAMBA = ["attn.A_log", "attn.D", "attn.conv1d.bias", "attn.conv1d.weight", "attn.dt_proj.bias",
               "attn.dt_proj.weight", "attn.in_proj.weight", "attn.out_proj.weight", "attn.x_proj.weight"] + COMMON
INDEX_ATTN = ["attn.Wqkv.bias", "attn.Wqkv.weight", "attn.inner_cross_attn.lambda_k1",
              "attn.inner_cross_attn.lambda_k2", "attn.inner_cross_attn.lambda_q1", "attn.inner_cross_attn.lambda_q2",
              "attn.inner_cross_attn.subln.weight", "attn.out_proj.bias", "attn.out_proj.weight"] + COMMON
INDEX_GMU = ["attn.in_proj.weight", "attn.out_proj.weight"] + COMMON
INDEX_MODEL = ["model.embed_tokens.weight", "model.final_layernorm.bias", "model.final_layernorm.weight"]
# layers 0, 2, ..., 16 carry the Mamba names, 18, ..., 30 the GMU names, every odd layer the attention names
INDEX_LAYERS = {i: INDEX_MAMBA if i % 2 == 0 and i <= 16 else INDEX_GMU if i % 2 == 0 else INDEX_ATTN
                for i in range(32)}


# ---- hand counts from modeling_phi4flash.py's module shapes -----------------------------------------


def shapes(c: dict) -> dict:
    """The widths modeling_phi4flash.py derives: head_dim = hidden / heads (SambaYAttention), d_inner = 2·hidden
    (Phi3Mamba expand 2), dt_rank = ceil(hidden / 16) ('auto'), d_state 16, d_conv 4 (Phi4FlashConfig defaults)."""
    D = c["hidden_size"]
    return dict(D=D, I=c["intermediate_size"], V=c["vocab_size"], H=c["num_attention_heads"],
                K=c["num_key_value_heads"], hd=D // c["num_attention_heads"], d=2 * D, r=math.ceil(D / 16), N=16, W=4,
                L=c["num_hidden_layers"])


def mamba_hand(s: dict) -> int:
    """Phi3Mamba: in_proj (D -> 2d, no bias), conv1d (d, 1, W) + bias, x_proj (d -> r + 2N), dt_proj (r -> d) + bias,
    A_log (d, N), D (d), out_proj (d -> D, no bias)."""
    D, d, r, N, W = s["D"], s["d"], s["r"], s["N"], s["W"]
    return D * 2 * d + d * W + d + d * (r + 2 * N) + r * d + d + d * N + d + d * D


def gmu_hand(s: dict) -> int:
    """Phi3Mamba with yoco_cross: in_proj (D -> d) and out_proj (d -> D), no biases."""
    return 2 * s["D"] * s["d"]


def attn_hand(s: dict, cross: bool) -> tuple[int, int]:
    """(attention parameters, subln) of SambaYAttention: Wqkv (D -> H·hd + 2·K·hd; cross: H·hd) with bias, out_proj
    with bias, FlashDiffCustomAttention's lambda_q1/k1/q2/k2 (hd each) and subln (an RMSNorm weight of 2·hd)."""
    D, H, K, hd = s["D"], s["H"], s["K"], s["hd"]
    rows = H * hd + (0 if cross else 2 * K * hd)
    return D * rows + rows + H * hd * D + D + 4 * hd, 2 * hd


def layer_counts(L: int) -> dict:
    """mb_per_layer 2: Mamba on even layers up to L/2, attention on odd layers up to L/2 + 1, then GMU / cross."""
    return dict(mamba=L // 4 + 1, attention=L // 4 + 1, gmu=L // 4 - 1, cross=L // 4 - 1)


def hand_components(c: dict) -> dict:
    s, n = shapes(c), layer_counts(c["num_hidden_layers"])
    D, L = s["D"], s["L"]
    self_attn, subln = attn_hand(s, False)
    cross, _ = attn_hand(s, True)
    return dict(
        embedding=s["V"] * D,  # tied lm_head: counted once
        attention=n["attention"] * self_attn + n["cross"] * cross,
        ssm=n["mamba"] * mamba_hand(s) + n["gmu"] * gmu_hand(s),
        mlp=L * (D * 2 * s["I"] + s["I"] * D),  # fc1 (D -> 2I), fc2 (I -> D), no biases
        # two LayerNorms (weight + bias) per layer, the final LayerNorm, subln in every attention layer
        norm=L * 4 * D + 2 * D + (n["attention"] + n["cross"]) * subln)


def test_total_equals_checkpoint_index():
    """3,852,562,944 = total_size / 2 less the float32 tensors: the checkpoint keeps A_log (Phi3Mamba creates it from
    a float32 arange, "Keep A_log in fp32") and the four λ vectors (created dtype=torch.float32) in float32, everything
    else (D included: torch.ones in the default dtype) in bf16. So bytes = 2·params + 2·(their count): 741,376 of the
    index's total_size / 2 = 3,853,304,320 "bf16 parameters" are the second half of those float32 words."""
    spec = parse_config(CONFIG)
    assert not spec.generic
    total = count_params(spec).total
    assert total == sum(hand_components(CONFIG).values()) == 3_852_562_944
    fp32 = sum(t.numel for t in spec.tensors() if t.name.endswith(("A_log", "lambda_q1", "lambda_k1", "lambda_q2",
                                                                     "lambda_k2")))
    assert fp32 == 9 * 5120 * 16 + 16 * 4 * 64 == 741_376
    assert 2 * total + 2 * fp32 == INDEX_TOTAL_SIZE
    assert INDEX_TOTAL_SIZE // 2 - total == fp32
    assert total != GENERIC_TOTAL


def test_components_equal_hand_counts():
    p = count_params(parse_config(CONFIG))
    hand = hand_components(CONFIG)
    assert (p.embedding, p.attention, p.ssm, p.mlp, p.norm) == (hand["embedding"], hand["attention"], hand["ssm"],
                                                                 hand["mlp"], hand["norm"])
    assert p.lm_head == 0 and p.experts == 0 and p.active == p.total
    kinds = {lp.kind: lp.count for lp in p.per_layer}
    assert kinds == {"mamba": 9, "sliding(512)": 8, "full-nope": 1, "gmu": 7, "full-nope+shared-kv": 7}


def test_tensor_names_match_the_index():
    """Every weight_map name, translated by the spec's checkpoint layout, is one of our tensors, and back."""
    spec = parse_config(CONFIG)
    index = INDEX_MODEL + [f"model.layers.{i}.{suffix}" for i, names in INDEX_LAYERS.items() for suffix in names]
    assert len(index) == len(set(index)) == 434

    def ours(name: str) -> str:
        for old, new in spec.checkpoint.renames:
            if name.startswith(old):
                name = new + name[len(old):]
        for old, new in spec.checkpoint.modules:
            name = name.replace(old, new)
        return name

    assert sorted(ours(n) for n in index) == sorted(t.name for t in spec.tensors())


def test_layer_layout():
    spec = parse_config(CONFIG)
    labels = [layer.kind for layer in spec.layers]
    assert labels[:16] == ["mamba", "sliding(512)"] * 8
    assert labels[16:18] == ["mamba", "full-nope"]  # layer 16 produces the memory, layer 17 the shared K/V
    assert labels[18:] == ["gmu", "full-nope+shared-kv"] * 7


def test_kv_and_state_bytes():
    """Per token: K and V of 20 heads x 64 in bf16 for the 8 sliding layers (kept to 512 tokens) and layer 17
    (SambaYCache's global_attn_idx = L/2 + 1); nothing for the 7 cross-attention and 7 GMU layers. Per sequence: the
    9 Mamba layers' conv window (5120 x 3) and SSM state (5120 x 16), as vLLM's _get_mamba_cache_shape."""
    cache = kv_cache(parse_config(CONFIG), BF16, BF16)
    per_layer = 20 * 2 * 64 * 2
    assert cache.bytes_per_token == 9 * per_layer == 46_080
    caching = [(lk.layer, lk.window) for lk in cache.layers if lk.bytes_per_token]
    assert caching == [(i, 512) for i in range(1, 16, 2)] + [(17, None)]
    assert [lk.layer for lk in cache.layers if lk.state_bytes] == list(range(0, 17, 2))
    assert sum(lk.state_bytes for lk in cache.layers) == 9 * (5120 * 3 + 5120 * 16) * 2 == 1_751_040
    # beyond the window only layer 17 grows
    assert cache.bytes_per_sequence(10_000) == 8 * 512 * per_layer + 10_000 * per_layer


def decode_flops_hand(c: dict, cached: int, window: int | None) -> int:
    """One decode token at ``cached`` earlier tokens: 2 FLOPs per weight of every matmul (biases aside; tied lm_head
    V x D), the attention of every attention layer (four flash calls of H/2 heads: 8·H·hd per key; the sliding layers
    see min(cached + 1, window) keys, layer L/2 + 1 and the cross layers cached + 1), Mamba's conv (2·d·W) and scan
    (4·d·N)."""
    s, n = shapes(c), layer_counts(c["num_hidden_layers"])
    D, d, r, N, H, K, hd = s["D"], s["d"], s["r"], s["N"], s["H"], s["K"], s["hd"]
    mamba_w = D * 2 * d + d * (r + 2 * N) + r * d + d * D
    attn_w, cross_w = D * (H * hd + 2 * K * hd) + H * hd * D, 2 * D * H * hd
    weights = (s["L"] * 3 * D * s["I"] + n["mamba"] * mamba_w + n["attention"] * attn_w + n["cross"] * cross_w
               + n["gmu"] * 2 * D * d + s["V"] * D)
    keys = cached + 1
    sliding = min(keys, window) if window else keys
    attention = 8 * H * hd * ((n["attention"] - 1) * sliding + (1 + n["cross"]) * keys)
    return 2 * weights + attention + n["mamba"] * (2 * d * s["W"] + 4 * d * N)


@pytest.mark.parametrize("cached", [100, 1000, 30_000])
def test_decode_flops(cached):
    spec = parse_config(CONFIG)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=cached)
    assert sum(o.flops for o in ops) == decode_flops_hand(CONFIG, cached, 512)


def test_trace_ops_per_layer_kind():
    spec = parse_config(CONFIG)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=2, new_tokens=1, cached_tokens=1000)
    by_layer = {i: [o.name for o in ops if o.layer == i] for i in (0, 1, 17, 18, 19)}
    assert "ssm_scan" in by_layer[0] and "conv1d" in by_layer[0]
    assert {"qkv_proj", "kv_append", "attention (4 calls)", "subln", "o_proj"} <= set(by_layer[1])
    assert {"in_proj", "memory_gate", "out_proj"} <= set(by_layer[18]) and "ssm_scan" not in by_layer[18]
    assert "kv_append" not in by_layer[19] and {"q_proj", "attention (4 calls)"} <= set(by_layer[19])
    # the cross layer reads layer 17's cache in full: four calls, each over half of K and half of V
    attn = {i: next(o for o in ops if o.layer == i and o.name == "attention (4 calls)") for i in (1, 17, 19)}
    per_key = 20 * 4 * 64 * 2
    assert attn[19].kv_read_bytes == attn[17].kv_read_bytes == 2 * 1001 * per_key
    assert attn[1].kv_read_bytes == 2 * 512 * per_key
    gate = next(o for o in ops if o.layer == 18 and o.name == "memory_gate")
    assert gate.state_read_bytes == gate.state_write_bytes == 0  # the memory is this step's, nothing carried


def test_mutated_config_stays_consistent():
    """16 layers, a narrower model, no window: 5 Mamba, 5 attention (all full now), 3 GMU, 3 cross layers."""
    cfg = {**CONFIG, "num_hidden_layers": 16, "hidden_size": 1024, "num_attention_heads": 16,
           "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 32000, "sliding_window": None}
    spec = parse_config(cfg)
    p = count_params(spec)
    hand = hand_components(cfg)
    assert p.total == sum(hand.values()) and p.ssm == hand["ssm"] and p.attention == hand["attention"]
    assert [layer.kind for layer in spec.layers] == ["mamba", "full-nope"] * 5 + ["gmu", "full-nope+shared-kv"] * 3
    cache = kv_cache(spec, BF16, BF16)
    assert cache.bytes_per_token == 5 * 4 * 2 * 64 * 2
    assert [lk.layer for lk in cache.layers if lk.bytes_per_token] == [1, 3, 5, 7, 9]
    assert sum(lk.state_bytes for lk in cache.layers) == 5 * (2048 * 3 + 2048 * 16) * 2
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=2000)
    assert sum(o.flops for o in ops) == decode_flops_hand(cfg, 2000, None)


def test_per_layer_sliding_window_list():
    """Newer configuration_phi4flash.py keeps a per-layer list (entries on the self-decoder's odd layers)."""
    windows = [256 if i < 16 and i % 2 else None for i in range(32)]
    cache = kv_cache(parse_config({**CONFIG, "sliding_window": windows}), BF16, BF16)
    assert [lk.window for lk in cache.layers if lk.bytes_per_token] == [256] * 8 + [None]
    with pytest.raises(ConfigError, match="sliding_window"):
        parse_config({**CONFIG, "sliding_window": [None, 256, None, 512] * 8})


def test_kv_heads_null_or_absent():
    """Phi4FlashConfig: num_key_value_heads None becomes num_attention_heads; absent, its default 4."""
    null = parse_config({**CONFIG, "num_key_value_heads": None})
    absent = parse_config({k: v for k, v in CONFIG.items() if k != "num_key_value_heads"})
    assert null.layers[1].mixer.num_key_value_heads == 40 and absent.layers[1].mixer.num_key_value_heads == 4


def test_tensor_parallel_refused():
    spec = parse_config(CONFIG)
    assert tp_plan(spec, 1).tp == 1
    with pytest.raises(OptionError, match="2j and 2j"):
        tp_plan(spec, 2)


@pytest.mark.parametrize("patch,fragment", [
    ({"num_hidden_layers": 30}, "num_hidden_layers"),
    ({"mb_per_layer": 3}, "mb_per_layer"),
    ({"num_key_value_heads": 5}, "num_key_value_heads"),
    ({"num_attention_heads": 5, "num_key_value_heads": 5}, "num_attention_heads"),
    ({"num_attention_heads": 48}, "num_attention_heads"),
    ({"sliding_window": "wide"}, "sliding_window"),
    ({"sliding_window": [512] * 31}, "sliding_window"),
    ({"sliding_window": [[512]] * 32}, "sliding_window"),
])
def test_broken_fields_give_one_error_line(tmp_path, patch, fragment):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**CONFIG, **patch}))
    run("analyze", p).assert_error(fragment)


def test_cli_analyze_trace_serve_and_verify(tmp_path):
    d = tmp_path / "phi4flash"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    r = run("analyze", d / "config.json", "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 3_852_562_944
    r = run("trace", d / "config.json", "--json")
    assert r.code == 0, r.err
    r = run("serve", d / "config.json", "--input-len", "512", "--output-len", "64", "--concurrency", "4", "--json")
    assert r.code == 0, r.err
    r = run("plan", d / "config.json", "--gpus", "1", "--rate", "1", "--input-len", "512", "--output-len", "64", "--json")
    assert r.code == 0, r.err
    assert r.json["cheapest"]["layout"]["tp"] == 1
    # the runtime builds no Mamba (nor GMU) layers: one Error line, no traceback
    run("verify", d, "--device", "cpu").assert_error("verify does not support Mamba layers")
