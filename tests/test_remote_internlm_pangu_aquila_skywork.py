"""InternLM v1 (``internlm``), openPangu-Embedded (``PanguEmbedded`` / ``openpangu_dense``), Aquila / Aquila2
(``aquila``) and Skywork-13B (``skywork``): remote-code model_types the generic Llama fallback used to read (with a
warning). No transformers oracle: totals are checked against hand counts written from vLLM's weight shapes
(vllm/model_executor/models/llama.py for InternLMForCausalLM / AquilaForCausalLM, whose attention bias is
``attention_bias or bias``; openpangu.py's OpenPanguEmbeddedAttention / OpenPanguMLP; the hub's
modeling_internlm.py q/k/v/o ``bias=config.bias``) and the published sizes; the generic reading's numbers are
kept to say how far off it was."""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params

# internlm/internlm-7b: InternLMConfig's defaults (configuration_internlm.py of internlm-7b@96e127d), as its
# config.json states them (bias true, rotary dynamic base 10000)
INTERNLM_7B = {"architectures": ["InternLMForCausalLM"], "model_type": "internlm", "bias": True, "hidden_act": "silu",
               "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 2048,
               "num_attention_heads": 32, "num_hidden_layers": 32, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
               "vocab_size": 103168, "rotary": {"base": 10000, "type": "dynamic"}}
# internlm/internlm-20b config.json (as printed from the hub download in an InternLM tutorial)
INTERNLM_20B = {"architectures": ["InternLMForCausalLM"], "bias": False, "bos_token_id": 1, "eos_token_id": 2,
                "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13824,
                "max_position_embeddings": 4096, "model_type": "internlm", "num_attention_heads": 40,
                "num_hidden_layers": 60, "num_key_value_heads": 40, "pad_token_id": 2, "pretraining_tp": 1,
                "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 103168,
                "rotary": {"base": 10000, "type": "dynamic"}}
# FreedomIntelligence/openPangu-Embedded-7B config.json (the fields quoted by verl's realias_openpangu_to_llama test)
PANGU_7B = {"architectures": ["PanguEmbeddedForCausalLM"], "model_type": "PanguEmbedded", "bias": True,
            "attention_dropout": 0.0, "bos_token_id": 1, "pad_token_id": 0, "eos_token_id": 45892, "hidden_act": "silu",
            "hidden_size": 4096, "intermediate_size": 12800, "max_position_embeddings": 32768,
            "num_attention_heads": 32, "num_hidden_layers": 34, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
            "rope_theta": 16000000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 153376}
# BAAI/Aquila2-7B config.json's shape fields
AQUILA2_7B = {"architectures": ["AquilaForCausalLM"], "model_type": "aquila", "hidden_act": "silu", "hidden_size": 4096,
              "intermediate_size": 11008, "max_position_embeddings": 2048, "num_attention_heads": 32,
              "num_hidden_layers": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
              "vocab_size": 100008}
# Skywork/Skywork-13B-base config.json's shape fields (tech report: 52 layers, hidden 4608, FFN 12288, 36 heads)
SKYWORK_13B = {"architectures": ["SkyworkForCausalLM"], "model_type": "skywork", "hidden_act": "silu",
               "hidden_size": 4608, "intermediate_size": 12288, "max_position_embeddings": 131072,
               "num_attention_heads": 36, "num_hidden_layers": 52, "num_key_value_heads": 36, "rms_norm_eps": 1e-06,
               "rope_theta": 10000, "tie_word_embeddings": False, "vocab_size": 65519}


def llama_hand(c: dict, attn_bias: bool = False) -> int:
    """vLLM llama.py: embed (V, D); per layer qkv (D -> (H + 2K)·d, bias if attention_bias / bias), o (H·d -> D,
    same bias), gate_up (D -> 2I), down (I -> D), two RMSNorms; final norm; untied lm_head (V, D)."""
    D, L, H, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["intermediate_size"],
                     c["vocab_size"])
    K = c.get("num_key_value_heads", H)
    d = D // H
    qkv = D * (H + 2 * K) * d + ((H + 2 * K) * d if attn_bias else 0)
    o = H * d * D + (D if attn_bias else 0)
    layer = qkv + o + 3 * D * I + 2 * D
    return V * D + L * layer + D + V * D


def test_internlm_totals_hand_count_and_published_sizes():
    p7 = count_params(parse_config(INTERNLM_7B))
    assert p7.total == llama_hand(INTERNLM_7B, attn_bias=True) == 7_321_948_160
    assert round(p7.total / 1e9) == 7  # published: InternLM-7B, "7 billion parameters"
    p20 = count_params(parse_config(INTERNLM_20B))
    assert p20.total == llama_hand(INTERNLM_20B) == 20_088_714_240
    assert round(p20.total / 1e9) == 20  # published: InternLM-20B
    # the biases sit on q, k, v and o, never on the MLP
    biases = {x.name for x in parse_config(INTERNLM_7B).layers[0].tensors("m") if x.name.endswith(".bias")}
    assert biases == {f"m.self_attn.{p}_proj.bias" for p in "qkvo"}


def test_pangu_embedded_total_hand_count_and_published_size():
    p = count_params(parse_config(PANGU_7B))
    assert p.total == llama_hand(PANGU_7B, attn_bias=True) == 8_030_887_936
    # published: openPangu-Embedded-7B, 7B parameters without the (untied) embedding and head
    assert round((p.total - 2 * 153376 * 4096) / 1e9) == 7
    port = dict(PANGU_7B, model_type="openpangu_dense")
    assert count_params(parse_config(port)).total == p.total
    # vLLM: qkv_bias, when given, decides q/k/v alone; o keeps `bias`
    spec = parse_config(dict(PANGU_7B, qkv_bias=False))
    biases = {x.name for x in spec.layers[0].tensors("m") if x.name.endswith(".bias")}
    assert biases == {"m.self_attn.o_proj.bias"}
    # an explicit head_dim (vLLM reads it) changes q/k/v/o widths
    wide = count_params(parse_config(dict(PANGU_7B, head_dim=160))).total
    D, L, H, K, d = 4096, 34, 32, 8, 160
    assert wide - p.total == L * ((D + 1) * (H + 2 * K) * d + H * d * D - ((D + 1) * (H + 2 * K) * 128 + H * 128 * D))


def test_aquila_and_skywork_totals_hand_count_and_published_sizes():
    pa = count_params(parse_config(AQUILA2_7B))
    assert pa.total == llama_hand(AQUILA2_7B) == 7_295_537_152
    assert round(pa.total / 1e9, 1) == 7.3  # published: Aquila2-7B
    ps = count_params(parse_config(SKYWORK_13B))
    assert ps.total == llama_hand(SKYWORK_13B) == 13_854_113_280
    assert round(ps.total / 1e9, 2) == 13.85  # published: Skywork-13B, 13.85B
    gqa = dict(AQUILA2_7B, num_key_value_heads=8)  # Aquila2-34B is GQA
    assert count_params(parse_config(gqa)).total == llama_hand(gqa)


@pytest.mark.parametrize("cfg, generic_total", [
    # the generic fallback ignored `bias`: 4 x 4096 q/k/v/o biases x 32 layers = 524,288 short (and a caveat)
    (INTERNLM_7B, 7_321_423_872),
    # exact: internlm-20b is bias-free
    (INTERNLM_20B, 20_088_714_240),
    # the generic fallback ignored `bias`: (4096 + 2 x 1024 + 4096) x 34 layers = 348,160 short
    (PANGU_7B, 8_030_539_776),
    # exact (vLLM serves them as Llama): the family only removes the warning
    (AQUILA2_7B, 7_295_537_152),
    (SKYWORK_13B, 13_854_113_280),
])
def test_generic_fallback_reading_before(cfg, generic_total):
    generic = parse_config(dict(cfg, model_type="not_a_family_xyz"))
    assert generic.generic
    assert count_params(generic).total == generic_total
    spec = parse_config(cfg)
    assert not spec.generic and spec.model_type == cfg["model_type"]


@pytest.mark.parametrize("cfg, kv_heads", [(INTERNLM_7B, 32), (INTERNLM_20B, 40), (PANGU_7B, 8), (AQUILA2_7B, 32),
                                           (SKYWORK_13B, 36)])
def test_kv_per_token(cfg, kv_heads):
    a = analyze(parse_config(cfg), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    assert a.kv.bytes_per_token == cfg["num_hidden_layers"] * 2 * kv_heads * d * 2


def test_class_defaults_and_rope():
    """InternLMConfig: internlm-7b's shape with bias; PanguEmbeddedConfig: openPangu-Embedded-7B's."""
    assert count_params(parse_config({"model_type": "internlm"})).total == llama_hand(INTERNLM_7B, attn_bias=True)
    assert count_params(parse_config({"model_type": "PanguEmbedded"})).total == llama_hand(PANGU_7B, attn_bias=True)
    assert parse_config(PANGU_7B).layers[0].mixer.rope_theta == 16000000.0
    spec = parse_config(dict(INTERNLM_7B, rotary={"base": 50000, "type": "origin"}))
    assert spec.layers[0].mixer.rope_theta == 50000.0
    assert not any("dynamic" in c for c in spec.caveats)


@pytest.mark.parametrize("cfg, change, field", [
    (INTERNLM_7B, {"num_key_value_heads": 8}, "num_key_value_heads"),
    (INTERNLM_7B, {"rotary": {"base": 10000, "type": "linear"}}, "rotary"),
    (INTERNLM_7B, {"rotary": "dynamic"}, "rotary"),
    (INTERNLM_7B, {"rotary": {"base": "x"}}, "rotary"),
    (PANGU_7B, {"sandwich_norm": True}, "sandwich_norm"),
    (PANGU_7B, {"n_routed_experts": 64}, "n_routed_experts"),
    (PANGU_7B, {"kv_lora_rank": 512}, "kv_lora_rank"),
    (PANGU_7B, {"hidden_act": "gelu"}, "hidden_act"),
    (PANGU_7B, {"num_key_value_heads": 7}, "num_key_value_heads"),
    (AQUILA2_7B, {"num_experts": 8}, "num_experts"),
    (SKYWORK_13B, {"hidden_size": "big"}, "hidden_size"),
])
def test_bad_configs(cfg, change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(cfg, **change))


@pytest.mark.parametrize("cfg", [INTERNLM_7B, PANGU_7B, AQUILA2_7B, SKYWORK_13B])
def test_runtime_builds_the_tiny_model_with_the_biases_it_counts(cfg):
    """`planner verify` runs these families from the ModelSpec: the torch decoder holds exactly the counted
    parameters, InternLM's and openPangu's q/k/v/o biases included."""
    torch = pytest.importorskip("torch")
    from planner.runtime.model import build_decoder, parameter_count

    tiny = dict(cfg, hidden_size=64, vocab_size=128, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=96, num_key_value_heads=2 if cfg is PANGU_7B else 4)
    spec = parse_config(tiny)
    model = build_decoder(spec)
    assert parameter_count(model) == count_params(spec).total
    names = {n for n, _ in model.named_parameters()}
    assert any(n.endswith("o_proj.bias") for n in names) == bool(cfg.get("bias"))
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3]]))
    assert torch.isfinite(out if isinstance(out, torch.Tensor) else out[0]).all()


def test_telechat2_port_model_type_is_telechat_untied():
    """A transformers port's TeleChat2Config(LlamaConfig) (model_type telechat2, Llama's field names, untied by
    default) is vLLM's TeleChat2ForCausalLM (telechat2.py): o_proj (dense) and down_proj biased only. Hand count
    from those shapes, TeleChat2-7B-sized (the hub's TeleChat2 configs say model_type telechat)."""
    c = {"model_type": "telechat2", "architectures": ["TeleChat2ForCausalLM"], "hidden_size": 4096,
         "intermediate_size": 12288, "num_hidden_layers": 30, "num_attention_heads": 32, "vocab_size": 131072,
         "rms_norm_eps": 1e-5}
    D, L, I, V = 4096, 30, 12288, 131072
    hand = V * D + L * (3 * D * D + (D * D + D) + 2 * D * I + (I * D + D) + 2 * D) + D + V * D
    spec = parse_config(c)
    assert not spec.generic and count_params(spec).total == hand
    # the generic reading missed the two biases per layer (30 x 2 x 4096 = 245,760 short)
    assert count_params(parse_config(dict(c, model_type="not_a_family_xyz"))).total == hand - 245_760


# openPangu-Ultra-MoE (pangu_ultra_moe) is modelled now: tests/test_remote_pangu_moe.py
