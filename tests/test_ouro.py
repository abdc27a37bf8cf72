"""ByteDance Ouro (``ouro``, remote code): the looped decoder counted against a hand count from the module shapes of
vLLM's ouro.py / the hub's modeling_ouro.py, and against the released checkpoints' model.safetensors sizes to the
byte (the parameters at 2 bytes each plus the safetensors header those tensors make)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run

#: ByteDance/Ouro-1.4B's config.json fields (the hub card's table: 24 layers, hidden 2048, MHA, 4 recurrent steps;
#: the values as pinned by a downstream validator of the hub snapshot 574fa66 and as mlx-community/Ouro-2.6B-4bit's
#: config.json carries them; vLLM and mlx-lm read no other shape field)
OURO_1_4B = {
    "architectures": ["OuroForCausalLM"], "model_type": "ouro",
    "auto_map": {"AutoConfig": "configuration_ouro.OuroConfig", "AutoModel": "modeling_ouro.OuroModel",
                 "AutoModelForCausalLM": "modeling_ouro.OuroForCausalLM"},
    "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_key_value_heads": 16, "head_dim": 128, "hidden_act": "silu", "rms_norm_eps": 1e-06, "vocab_size": 49152,
    "max_position_embeddings": 65536, "rope_theta": 1000000.0, "rope_scaling": None, "tie_word_embeddings": False,
    "layer_types": ["full_attention"] * 24, "use_sliding_window": False, "total_ut_steps": 4,
    "early_exit_threshold": 1.0, "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "bfloat16",
}
#: ByteDance/Ouro-2.6B: the same with 48 layers (mlx-community/Ouro-2.6B-4bit's config.json)
OURO_2_6B = dict(OURO_1_4B, num_hidden_layers=48, layer_types=["full_attention"] * 48)

#: the released single-file checkpoints' model.safetensors sizes in bytes (Ouro-1.4B at 574fa66, Ouro-2.6B at 1ed0425;
#: the -Thinking variants are the same shapes)
CHECKPOINT_BYTES = {24: 2_869_336_434, 48: 5_336_011_242}
EXPECTED = {24: 1_434_652_673, 48: 2_667_974_657}


def _tensors(cfg: dict) -> dict[str, list[int]]:
    """The checkpoint's tensors, from modeling_ouro.py's modules (OuroForCausalLM: model.embed_tokens, per layer
    self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj and the four sandwich RMSNorms, model.norm,
    model.early_exit_gate Linear(hidden, 1) with its bias, lm_head)."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    t = {"model.embed_tokens.weight": [v, h], "lm_head.weight": [v, h], "model.norm.weight": [h],
         "model.early_exit_gate.weight": [1, h], "model.early_exit_gate.bias": [1]}
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        t |= {p + "self_attn.q_proj.weight": [q, h], p + "self_attn.k_proj.weight": [kv, h],
              p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, q],
              p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h], p + "mlp.down_proj.weight": [h, i]}
        for norm in ("input_layernorm", "input_layernorm_2", "post_attention_layernorm", "post_attention_layernorm_2"):
            t[p + norm + ".weight"] = [h]
    return t


def _numel(shape: list[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def _safetensors_bytes(tensors: dict[str, list[int]]) -> int:
    """The size of a bf16 safetensors file holding ``tensors``: the 8-byte header length, the JSON header (name ->
    dtype, shape, data offsets, in the file's name order; no metadata) padded with spaces to 8 bytes, the data."""
    header, offset = {}, 0
    for name in sorted(tensors):
        size = 2 * _numel(tensors[name])
        header[name] = {"dtype": "BF16", "shape": tensors[name], "data_offsets": [offset, offset + size]}
        offset += size
    length = len(json.dumps(header, separators=(",", ":")).encode())
    return 8 + (length + 7) // 8 * 8 + offset


def _kv_bf16(spec) -> int:
    bf16 = weight_format(spec, "bf16")[0].act
    return kv_cache(spec, bf16, bf16).bytes_per_token


@pytest.mark.parametrize("cfg", [OURO_1_4B, OURO_2_6B], ids=["1.4B", "2.6B"])
def test_ouro_checkpoints_match_hand_count_and_safetensors_size(cfg):
    n = cfg["num_hidden_layers"]
    tensors = _tensors(cfg)
    hand = sum(_numel(s) for s in tensors.values())
    assert hand == EXPECTED[n]
    assert _safetensors_bytes(tensors) == CHECKPOINT_BYTES[n]  # the released file, to the byte
    p = count_params(parse_config(cfg))
    assert p.total == p.active == hand
    assert round(hand / 1e9, 1) == {24: 1.4, 48: 2.7}[n]  # the cards' "1.4B" (and "2.6B" for 2.67B: rounded down)


@pytest.mark.parametrize("cfg", [OURO_1_4B, OURO_2_6B], ids=["1.4B", "2.6B"])
def test_ouro_cache_per_layer_per_pass(cfg):
    """vLLM: total_ut_steps Attention modules per layer (cache slot ut_step x layers + layer): 4 x the K/V."""
    spec = parse_config(cfg)
    n, steps = cfg["num_hidden_layers"], cfg["total_ut_steps"]
    assert spec.num_layers == n * steps
    assert sum(layer.stored for layer in spec.layers) == n
    assert _kv_bf16(spec) == steps * n * 2 * 16 * 128 * 2  # K and V, 16 heads x 128, bf16: 786,432 B for 1.4B
    assert _kv_bf16(parse_config(OURO_1_4B)) == 786_432


def test_ouro_decode_flops_every_pass(tmp_path):
    """Decode FLOPs at context 8,192 (analyze's convention: matmuls only, context + 1 keys): every pass runs every
    layer's projections and attention, the LM head once."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OURO_1_4B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    h, i, v, ctx = 2048, 5632, 49152, 8192
    per_layer = 2 * (4 * h * h + 3 * h * i) + 2 * 2 * 16 * 128 * (ctx + 1)
    assert r.json["flops_per_token"]["context"] == ctx
    assert r.json["flops_per_token"]["decode"] == 96 * per_layer + 2 * v * h == 16_509_566_976
    assert r.json["params"]["total"] == 1_434_652_673
    assert r.json["kv_cache"]["bytes_per_token"] == 786_432
    assert any(c.startswith("Ouro: the 24 layers run 4 times") for c in r.json["caveats"])


def test_ouro_total_ut_steps_scales_compute_not_parameters():
    one = parse_config(dict(OURO_1_4B, total_ut_steps=1))
    three = parse_config(dict(OURO_1_4B, total_ut_steps=3))
    assert count_params(one).total == count_params(three).total == 1_434_652_673
    assert 3 * _kv_bf16(one) == _kv_bf16(three) == 3 * 24 * 8192
    absent = {k: v for k, v in OURO_1_4B.items() if k != "total_ut_steps"}  # vLLM's default: 4
    assert parse_config(absent).num_layers == 96


def test_ouro_gqa_and_tied():
    cfg = dict(OURO_1_4B, num_key_value_heads=4, tie_word_embeddings=True, total_ut_steps=2)
    h, i, v = 2048, 5632, 49152
    layer = h * h * 2 + 2 * h * 512 + 3 * h * i + 4 * h  # q, o; k, v (4 x 128); MLP; norms
    assert count_params(parse_config(cfg)).total == v * h + 24 * layer + h + h + 1
    assert _kv_bf16(parse_config(cfg)) == 2 * 24 * 2 * 512 * 2


@pytest.mark.parametrize("change,match", [
    (dict(head_dim=64), "head_dim"),
    (dict(num_attention_heads=24), "num_attention_heads"),
    (dict(num_key_value_heads=5), "num_key_value_heads"),
    (dict(use_sliding_window=True), "use_sliding_window"),
    (dict(layer_types=["sliding_attention"] * 24), "layer_types"),
    (dict(total_ut_steps=0), "total_ut_steps"),
])
def test_ouro_bad_configs(change, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(dict(OURO_1_4B, **change))


def test_ouro_cli_errors_and_verify_refuses(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(OURO_1_4B, head_dim=64)))
    run("analyze", str(bad)).assert_error("head_dim")
    good = tmp_path / "ouro"
    good.mkdir()
    (good / "config.json").write_text(json.dumps(OURO_1_4B))
    r = run("trace", str(good / "config.json"), "--json")
    assert r.code == 0, r.err
    run("verify", str(good), "--device", "cpu").assert_error("looped layers")
