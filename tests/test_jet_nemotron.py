"""Jet-Nemotron (``jet_nemotron``, NVIDIA; remote code, no transformers oracle for the JetBlock). Totals are checked
against hand counts written from NVlabs/Jet-Nemotron's module shapes (jetai/modeling/hf/modeling_jet_nemotron.py,
jet_block.py, dynamic_conv.py), and against an independent route: the Qwen2.5 model it was cut from (transformers'
Qwen2 on the meta device, same widths) with each JetBlock layer's Qwen2 attention swapped for the JetBlock. The
published sizes are the cards' rounded "2B" / "4B" (no exact safetensors total was reachable). Before this family
was registered, the generic fallback refused the configs (``layer_types`` entry 'jet' unknown)."""

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

# jet-ai/Jet-Nemotron-2B config.json (NVlabs/Jet-Nemotron jetai/modeling/configs/jetlm_2B.json), shape fields
JET_2B = {"architectures": ["JetNemotronForCausalLM"], "model_type": "jet_nemotron", "hidden_size": 1536,
          "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
          "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_scaling": None, "rope_theta": 1000000.0,
          "max_position_embeddings": 131072, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
          "vocab_size": 151936,
          "efficient_attention_config": {
              "jet": {"conv_size": 4, "dconv_generator_reduction": 8, "dconv_implementation": "triton",
                      "expand_v": 2.6666666667, "head_dim": 96, "mode": "chunk", "norm_eps": "1e-5",
                      "num_heads": 12},
              "swa": {"window_size": 1152}},
          "layer_types": ["jet"] * 14 + ["attn"] + ["jet"] * 4 + ["attn", "swa", "swa"] + ["jet"] * 6}
# jet-ai/Jet-Nemotron-4B (jetlm_4B.json)
JET_4B = {**JET_2B, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
          "num_attention_heads": 16, "max_position_embeddings": 32768,
          "efficient_attention_config": {
              "jet": {"conv_size": 4, "dconv_generator_reduction": 8, "dconv_implementation": "triton",
                      "expand_v": 2, "head_dim": 128, "mode": "chunk", "norm_eps": "1e-5", "num_heads": 16},
              "swa": {"window_size": 2048}},
          "layer_types": ["jet"] * 5 + ["swa"] + ["jet"] * 10 + ["swa", "attn", "jet", "swa", "attn", "swa", "swa",
                                                                  "jet", "jet", "swa", "jet", "swa"]
          + ["jet"] * 4 + ["attn"] + ["jet"] * 3}


def jet_block_hand(c: dict) -> int:
    """jet_block.py: q_proj, k_proj (D -> H·dk), v_proj (D -> H·dv), b_proj, a_proj (D -> H), A_log and dt_bias (H),
    dynamic_conv1d.kernel_generator w1 (D -> H·dv // reduction, no bias) and w2 (-> H·dv·W, biased), g_proj
    (D -> H·dv), o_norm (dv), o_proj (H·dv -> D); dv = int(dk · expand_v)."""
    j = c["efficient_attention_config"]["jet"]
    D, H, dk, W, r = c["hidden_size"], j["num_heads"], j["head_dim"], j["conv_size"], j["dconv_generator_reduction"]
    dv = int(dk * j["expand_v"])
    vd, g = H * dv, H * dv // r
    return 2 * D * H * dk + D * vd + 2 * D * H + 2 * H + D * g + g * vd * W + vd * W + D * vd + dv + vd * D


def attention_hand(c: dict) -> int:
    """Qwen2 attention (JetNemotronAttention): q/k/v biased, o not; head_dim = hidden / heads."""
    D, H, K = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d = D // H
    return D * H * d + H * d + 2 * (D * K * d + K * d) + H * d * D


def jet_hand(c: dict) -> int:
    D, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    layers = sum(3 * D * I + 2 * D + (jet_block_hand(c) if t == "jet" else attention_hand(c)) for t in c["layer_types"])
    return V * D + layers + D  # tied lm_head


@pytest.mark.parametrize("cfg,exact,published", [(JET_2B, 1_964_806_208, 2e9), (JET_4B, 3_960_424_768, 4e9)])
def test_totals_equal_hand_count(cfg, exact, published):
    spec = parse_config(cfg)
    assert not spec.generic
    total = count_params(spec).total
    assert total == jet_hand(cfg) == exact
    assert abs(total / published - 1) < 0.04  # the cards' rounded sizes
    assert [layer.mixer.kind.value for layer in spec.layers].count("jet_block") == cfg["layer_types"].count("jet")


@pytest.mark.parametrize("cfg", [JET_2B, JET_4B])
def test_total_equals_qwen2_oracle_with_jetblocks_swapped_in(cfg):
    """The Qwen2.5 model of the same widths (transformers on the meta device), each 'jet' layer's attention
    replaced by a JetBlock."""
    from tests.oracle import hf_model, unique_param_count

    qwen = {k: cfg[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                "num_key_value_heads", "vocab_size", "tie_word_embeddings")}
    base = unique_param_count(hf_model({"model_type": "qwen2", **qwen}))
    n_jet = cfg["layer_types"].count("jet")
    assert count_params(parse_config(cfg)).total == base + n_jet * (jet_block_hand(cfg) - attention_hand(cfg))


def test_kv_and_recurrent_state_2b():
    """2 full + 2 SWA layers of 2 KV heads × 128 (K and V, bf16); per JetBlock the conv cache H·dv × conv_size
    (the reference cache keeps the whole kernel width) plus H × dk × dv."""
    cache = kv_cache(parse_config(JET_2B), BF16, BF16)
    assert cache.bytes_per_token == 4 * 2 * 2 * 128 * 2
    assert [lk.window for lk in cache.layers if lk.bytes_per_token] == [None, None, 1152, 1152]
    per_jet = (12 * 256 * 4 + 12 * 96 * 256) * 2
    assert [lk.state_bytes for lk in cache.layers if lk.state_bytes] == [per_jet] * 24
    assert sum(lk.state_bytes for lk in cache.layers) == 14_745_600


def test_kv_4b():
    cache = kv_cache(parse_config(JET_4B), BF16, BF16)
    assert cache.bytes_per_token == 10 * 2 * 2 * 128 * 2  # 3 full + 7 SWA layers
    assert sum(lk.window == 2048 for lk in cache.layers) == 7
    assert sum(lk.state_bytes for lk in cache.layers) == 26 * (16 * 256 * 4 + 16 * 128 * 256) * 2


def test_jetblock_decode_flops():
    """One decode token through a JetBlock layer's mixer: the projections (2 FLOPs per weight, biases aside), the
    dynamic conv taps (2·H·dv·W) and the delta rule's recurrent form (6·dk·dv per head)."""
    spec = parse_config(JET_2B)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=7)
    D, H, dk, dv, W = 1536, 12, 96, 256, 4
    vd, g = H * dv, H * dv // 8
    proj = 2 * D * H * dk + D * vd + 2 * D * H + D * g + g * vd * W + D * vd + vd * D
    assert sum(o.flops for o in ops if o.layer == 0 and o.category == "ssm") == 2 * proj + 2 * vd * W + 6 * H * dk * dv
    conv = next(o for o in ops if o.layer == 0 and o.name == "dynamic_conv")
    assert conv.state_read_bytes == conv.state_write_bytes == vd * W * 2


@pytest.mark.parametrize("patch,fragment", [
    ({"layer_types": ["jet"] * 27 + ["mamba"]}, "layer_types"),
    ({"layer_types": ["jet"] * 27}, "layer_types"),
    ({"efficient_attention_config": {"jet": {"num_heads": 12, "head_dim": 96, "expand_v": 2.7}, "swa": {"window_size": 8}}},
     "expand_v"),
    ({"efficient_attention_config": {"jet": {"num_heads": 12, "head_dim": 96, "mode": "parallel"},
                                     "swa": {"window_size": 8}}}, "mode"),
    ({"efficient_attention_config": {"jet": {"num_heads": 12, "head_dim": 96}}}, "window_size"),
])
def test_bad_configs(patch, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_config({**JET_2B, **patch})


def test_cli(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(JET_2B))
    r = run("analyze", p, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 1_964_806_208
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**JET_2B, "layer_types": ["jet"] * 28,
                               "efficient_attention_config": {"jet": {"expand_v": 2.7, "head_dim": 96}}}))
    run("analyze", bad).assert_error("expand_v")
    run("verify", p, "--device", "cpu").assert_error()
