"""TeleChat / TeleChat2 (``telechat``), Orion-14B (``orion``) and XVERSE (``xverse``): remote-code families with
no transformers oracle. Totals are checked against hand counts written from vLLM's weight shapes
(vllm/model_executor/models/telechat2.py, orion.py; XverseForCausalLM is vLLM's LlamaForCausalLM) and against the
published sizes; the generic Llama fallback's reading (what these model_types got before) is kept as a number."""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params

# Tele-AI/telechat-7B: the model card's structure table (layer_num 30, hidden_size 4096, ffn_hidden_size 12288,
# head_num 32, no embed-layernorm); vocab_size is TelechatConfig's default (160256), and its config leaves
# tie_word_embeddings to PretrainedConfig (true: the card says only the 12B unties embedding and head)
TELECHAT_7B = {"architectures": ["TeleChatForCausalLM"], "model_type": "telechat", "hidden_size": 4096,
               "n_layer": 30, "n_head": 32, "ffn_hidden_size": 12288, "vocab_size": 160256,
               "layer_norm_epsilon": 1e-5, "embed_layernorm": False,
               "apply_residual_connection_post_layernorm": False, "training_seqlen": 8192, "logn": True}
# OrionStarAI/Orion-14B-Base config.json's shape fields
ORION_14B = {"architectures": ["OrionForCausalLM"], "model_type": "orion", "hidden_size": 5120,
             "intermediate_size": 15360, "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 40,
             "vocab_size": 84608, "hidden_act": "silu", "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
             "rope_theta": 10000.0, "tie_word_embeddings": False}
# xverse/XVERSE-13B config.json's shape fields
XVERSE_13B = {"architectures": ["XverseForCausalLM"], "model_type": "xverse", "hidden_size": 5120,
              "intermediate_size": 13824, "num_attention_heads": 40, "num_hidden_layers": 40, "vocab_size": 100278,
              "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "hidden_act": "silu",
              "tie_word_embeddings": False}


def telechat_hand(c: dict, tied: bool) -> int:
    """telechat2.py (LlamaModel with bias, then qkv_proj and gate_up_proj biases removed): embed (V, D); per layer
    query + key_value (D -> 3D, no bias), dense (D -> D, bias), gate_up (D -> 2I, no bias), down (I -> D, bias),
    two RMSNorms; ln_f; lm_head (V, D) unless tied."""
    D, L, I, V = c["hidden_size"], c["n_layer"], c["ffn_hidden_size"], c["vocab_size"]
    layer = 3 * D * D + (D * D + D) + 2 * D * I + (I * D + D) + 2 * D
    return V * D + L * layer + D + (0 if tied else V * D)


def orion_hand(c: dict) -> int:
    """orion.py: embed (V, D); per layer qkv (D -> (H + 2K)·d), o (D -> D), gate_up (D -> 2I), down, all bias-free;
    input / post-attention nn.LayerNorm (weight + bias); final nn.LayerNorm; lm_head (V, D)."""
    D, L, H, K, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                        c["num_key_value_heads"], c["intermediate_size"], c["vocab_size"])
    d = D // H
    layer = D * (H + 2 * K) * d + D * D + 3 * D * I + 2 * 2 * D
    return V * D + L * layer + 2 * D + V * D


def xverse_hand(c: dict) -> int:
    """llama.py (vLLM serves XverseForCausalLM as Llama): bias-free MHA, SwiGLU, RMSNorms, untied head."""
    D, L, I, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    return V * D + L * (4 * D * D + 3 * D * I + 2 * D) + D + V * D


def test_telechat_total_hand_count_and_published_size():
    p = count_params(parse_config(TELECHAT_7B))
    assert p.total == p.active == telechat_hand(TELECHAT_7B, tied=True) == 7_200_018_432
    assert round(p.total / 1e9) == 7  # published: "TeleChat-7B"
    untied = dict(TELECHAT_7B, tie_word_embeddings=False)  # TeleChat-12B / TeleChat2 untie the head
    assert count_params(parse_config(untied)).total == telechat_hand(untied, tied=False)


def test_orion_total_hand_count_and_published_size():
    p = count_params(parse_config(ORION_14B))
    assert p.total == orion_hand(ORION_14B) == 14_498_703_360
    assert round(p.total / 1e9, 1) == 14.5  # Orion-14B model card / technical report: 14.5B parameters
    gqa = dict(ORION_14B, num_key_value_heads=8)
    assert count_params(parse_config(gqa)).total == orion_hand(gqa)


def test_xverse_total_hand_count():
    p = count_params(parse_config(XVERSE_13B))
    assert p.total == xverse_hand(XVERSE_13B) == 13_715_031_040
    assert round(p.total / 1e9) in (13, 14)  # published as "XVERSE-13B" (13.7B on the hub)


@pytest.mark.parametrize("cfg, generic_total", [
    # the generic Llama fallback: untied head and no dense / down_proj biases -> +656,162,816 (+9.1%)
    (TELECHAT_7B, 7_856_181_248),
    # the generic fallback: RMSNorms without bias -> 414,720 short (81 norm biases of 5120), and RMSNorm numerics
    (ORION_14B, 14_498_288_640),
    # the generic fallback was exact for XVERSE (vLLM serves it as Llama); the family only removes the caveat
    (XVERSE_13B, 13_715_031_040),
])
def test_generic_fallback_reading_before(cfg, generic_total):
    generic = parse_config(dict(cfg, model_type="not_a_family_xyz"))
    assert generic.generic
    assert count_params(generic).total == generic_total
    spec = parse_config(cfg)
    assert not spec.generic and spec.model_type == cfg["model_type"]


@pytest.mark.parametrize("cfg, kv_heads, layers_key", [(TELECHAT_7B, 32, "n_layer"), (ORION_14B, 40, "num_hidden_layers"),
                                                        (XVERSE_13B, 40, "num_hidden_layers")])
def test_kv_per_token(cfg, kv_heads, layers_key):
    a = analyze(parse_config(cfg), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    d = cfg["hidden_size"] // cfg.get("n_head", cfg.get("num_attention_heads"))
    assert a.kv.bytes_per_token == cfg[layers_key] * 2 * kv_heads * d * 2


def test_orion_norms_are_biased_layernorms_and_telechat_biases_sit_on_dense_and_down():
    o = parse_config(ORION_14B)
    assert all(n.norm.kind == "layer" and n.norm.bias for n in o.layers[0].norms) and o.final_norm.bias
    t = parse_config(TELECHAT_7B)
    biases = {x.name for x in t.layers[0].tensors("model.layers.0") if x.name.endswith(".bias")}
    assert biases == {"model.layers.0.self_attn.o_proj.bias", "model.layers.0.mlp.down_proj.bias"}


def test_class_defaults():
    """TelechatConfig: vocab 160256, 4096 x 30 layers, 32 heads, ffn 12288, tied (PretrainedConfig);
    Orion: Orion-14B's shape; XVERSE: LlamaConfig's non-shape defaults (shape fields required)."""
    t = {"model_type": "telechat", "n_layer": 30, "n_head": 32, "ffn_hidden_size": 12288, "vocab_size": 160256,
         "hidden_size": 4096}
    assert count_params(parse_config({"model_type": "telechat"})).total == telechat_hand(t, tied=True)
    assert count_params(parse_config({"model_type": "orion"})).total == orion_hand(ORION_14B)
    # XVERSE's shape fields are required (as for any transformers-row family whose saved config lists them all)
    with pytest.raises(ConfigError, match="hidden_size"):
        parse_config({"model_type": "xverse"})
    # LlamaConfig's defaults fill the rest: rope_theta 10000, untied, bias-free
    assert count_params(parse_config({k: v for k, v in XVERSE_13B.items() if k != "tie_word_embeddings"})).total == \
        xverse_hand(XVERSE_13B)


@pytest.mark.parametrize("cfg, change, field", [
    (TELECHAT_7B, {"embed_layernorm": True}, "embed_layernorm"),
    (TELECHAT_7B, {"apply_residual_connection_post_layernorm": True}, "apply_residual_connection_post_layernorm"),
    (TELECHAT_7B, {"n_head": 31}, "num_attention_heads"),
    (ORION_14B, {"num_key_value_heads": 7}, "num_key_value_heads"),
    (XVERSE_13B, {"num_experts": 64, "moe_top_k": 6}, "num_experts"),
    (ORION_14B, {"hidden_size": "big"}, "hidden_size"),
])
def test_bad_configs(cfg, change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(cfg, **change))


@pytest.mark.parametrize("cfg", [TELECHAT_7B, ORION_14B, XVERSE_13B])
def test_runtime_builds_the_tiny_model_with_the_biases_it_counts(cfg):
    """`planner verify` runs these families from the ModelSpec: the torch decoder holds exactly the counted
    parameters, TeleChat's down_proj / o_proj biases and Orion's LayerNorm biases included."""
    torch = pytest.importorskip("torch")
    from planner.runtime.model import build_decoder, parameter_count

    tiny = dict(cfg, hidden_size=64, vocab_size=128)
    for k, v in (("n_layer", 2), ("num_hidden_layers", 2), ("n_head", 4), ("num_attention_heads", 4),
                 ("ffn_hidden_size", 96), ("intermediate_size", 96), ("num_key_value_heads", 2)):
        if k in tiny:
            tiny[k] = v
    spec = parse_config(tiny)
    model = build_decoder(spec)
    assert parameter_count(model) == count_params(spec).total
    names = {n for n, _ in model.named_parameters()}
    if cfg is TELECHAT_7B:
        assert any(n.endswith("down_proj.bias") for n in names) and not any(n.endswith("up_proj.bias") for n in names)
    if cfg is ORION_14B:
        assert any(n.endswith("input_layernorm.bias") for n in names)
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3]]))
    assert torch.isfinite(out if isinstance(out, torch.Tensor) else out[0]).all()
