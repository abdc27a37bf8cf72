"""inclusionAI's Ling / Ring MoE models (the remote-code ``bailing_moe`` model type, which transformers does not ship).

No transformers oracle for the config: the counts are checked against (1) hand counts written from the module
shapes of the remote code (github.com/inclusionAI/Ling models/modeling_bailing_moe.py, github.com/inclusionAI/Ling-V2
models/modeling_bailing_moe_v2.py: query_key_value = Linear(hidden, (heads + 2·kv)·head_dim, bias=use_qkv_bias),
dense = Linear(heads·head_dim, hidden, bias=use_bias), query_layernorm / key_layernorm RMSNorm(head_dim) when
use_qk_norm, bias-free SwiGLU MLPs (dense layers intermediate_size, experts moe_intermediate_size, shared experts
moe_intermediate_size·num_shared_experts), gate.weight (num_experts, hidden), word_embeddings, lm_head) and vLLM's
vllm/model_executor/models/bailing_moe.py (the same shapes); (2) the published totals of real checkpoints. The
runtime is checked against transformers' ``glm4_moe`` (Ling 2.0's block: GQA with per-head q/k RMSNorms before a
half-head rotate-half RoPE, DeepSeek-V3's sigmoid group-limited router with a choice bias, shared experts, dense
first layers) and ``mixtral`` (Ling 1 without shared experts: softmax top-k renormalised), their weights saved
under the Bailing checkpoint names.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params

#: inclusionAI/Ling-flash-2.0 config.json (its shape fields; architectures BailingMoeV2ForCausalLM, model_type
#: "bailing_moe" as the hub API reports it)
LING_FLASH_2 = {
    "model_type": "bailing_moe", "architectures": ["BailingMoeV2ForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 9216, "moe_intermediate_size": 1024, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 157184, "num_experts": 256, "num_shared_experts": 1,
    "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "first_k_dense_replace": 1, "score_function": "sigmoid",
    "moe_router_enable_expert_bias": True, "routed_scaling_factor": 2.5, "norm_topk_prob": True, "use_qk_norm": True,
    "partial_rotary_factor": 0.5, "use_bias": False, "use_qkv_bias": False, "tie_word_embeddings": False,
    "rms_norm_eps": 1e-06, "rope_theta": 600000, "max_position_embeddings": 32768, "hidden_act": "silu",
    "num_nextn_predict_layers": 0, "torch_dtype": "bfloat16",
}
#: inclusionAI/Ling-mini-2.0: Ling-flash-2.0's design at hidden 2048, 20 layers, 16 heads, 512-wide experts
LING_MINI_2 = dict(LING_FLASH_2, hidden_size=2048, intermediate_size=5120, moe_intermediate_size=512,
                   num_hidden_layers=20, num_attention_heads=16)
#: inclusionAI/Ling (GitHub) inference/mindie/plus/model_chat_config.json: Ling-plus
LING_PLUS = {
    "model_type": "bailing_moe", "architectures": ["BailingMoeForCausalLM"], "first_k_dense_replace": 0,
    "hidden_act": "silu", "hidden_size": 5376, "intermediate_size": 12288, "max_position_embeddings": 16384,
    "moe_intermediate_size": 3072, "num_experts": 64, "num_shared_experts": 1, "norm_topk_prob": True,
    "num_attention_heads": 42, "num_experts_per_tok": 4, "num_hidden_layers": 88, "num_key_value_heads": 6,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 600000, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_bias": False, "use_qkv_bias": False, "vocab_size": 126464, "norm_head": True,
    "embedding_dropout": 0.0, "output_dropout": 0.0,
}
#: inclusionAI/Ling-lite: 28 layers of hidden 2048, 64 experts of 1408 (top 6) and 2 shared, no dense layer
LING_LITE = dict(LING_PLUS, hidden_size=2048, intermediate_size=5632, moe_intermediate_size=1408, num_experts=64,
                 num_shared_experts=2, num_experts_per_tok=6, num_attention_heads=16, num_key_value_heads=4,
                 num_hidden_layers=28, norm_head=False)


def hand_count(c: dict) -> tuple[int, int]:
    """(total, active per token) of the remote modeling code's parameters, from its module shapes (BailingMoeConfig's
    defaults where ``c`` is silent). expert_bias is a registered buffer, not a parameter."""
    h, heads, kv, vocab = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]
    hd = c.get("head_dim") or h // heads
    qkv = h * (heads + 2 * kv) * hd + ((heads + 2 * kv) * hd if c.get("use_qkv_bias", False) else 0)
    dense = heads * hd * h + (h if c.get("use_bias", True) else 0)
    attn = qkv + dense + (2 * hd if c.get("use_qk_norm", False) else 0) + 2 * h  # + input / post-attention norms
    mlp = lambda inter: 3 * h * inter  # noqa: E731  gate_proj, up_proj, down_proj, bias-free
    e, k, m = c.get("num_experts", 16), c.get("num_experts_per_tok", 2), c["moe_intermediate_size"]
    shared = mlp(c.get("moe_shared_expert_intermediate_size", m) * c.get("num_shared_experts", 0))  # vLLM's reading
    router = e * h
    first = c.get("first_k_dense_replace", 0)
    n = c["num_hidden_layers"]
    dense_layer = attn + mlp(c["intermediate_size"]) if first else 0
    total_moe = attn + e * mlp(m) + shared + router
    active_moe = attn + k * mlp(m) + shared + router
    outer = vocab * h * (1 if c.get("tie_word_embeddings", False) else 2) + h  # embedding, head, final norm
    return (first * dense_layer + (n - first) * total_moe + outer,
            first * dense_layer + (n - first) * active_moe + outer)


def test_ling_flash_2_total_is_the_published_checkpoint_count():
    # the hub API's safetensors summary of inclusionAI/Ling-flash-2.0: BF16 102,889,697,280 + F32 7,936 (the
    # expert_bias buffers, 31 MoE layers x 256: in the checkpoint, not parameters); the card: "100B total
    # parameters and 6.1B activated parameters (4.8B non-embedding)"
    p = count_params(parse_config(LING_FLASH_2))
    assert (p.total, p.active) == hand_count(LING_FLASH_2)
    assert p.total == 102_889_697_280 and 31 * 256 == 7_936
    assert round(p.active / 1e8) == 62 and round((p.active - p.embedding - p.lm_head) / 1e8) == 49
    assert p.mtp == 0


def test_ling_mini_2_is_the_published_16_26b_with_1_43b_active():
    # Ling-V2 README: "1.43B activated of 16.26B total params", "non-embedding 789M" activated
    p = count_params(parse_config(LING_MINI_2))
    assert (p.total, p.active) == hand_count(LING_MINI_2)
    assert round(p.total / 1e7) == 1626 and round(p.active / 1e7) == 143
    assert round((p.active - p.embedding - p.lm_head) / 1e6) == 789


def test_ling_1_totals_are_the_published_sizes():
    # Ling README: "Ling-Lite has 16.8 billion parameters with 2.75 billion activated parameters, while Ling-Plus
    # has 290 billion parameters with 28.8 billion activated parameters"
    lite = count_params(parse_config(LING_LITE))
    assert (lite.total, lite.active) == hand_count(LING_LITE)
    assert round(lite.total / 1e8) == 168 and round(lite.active / 1e7) == 275
    plus = count_params(parse_config(LING_PLUS))
    assert (plus.total, plus.active) == hand_count(LING_PLUS)
    # 290.6B and 29.0B: within 1% of the card's rounded 290B / 28.8B
    assert abs(plus.total / 290e9 - 1) < 0.01 and abs(plus.active / 28.8e9 - 1) < 0.01


def test_kv_cache_routing_and_rope_geometry():
    bf16 = Options(context=1000, dtype="bf16", kv_dtype="bf16")
    spec = parse_config(LING_FLASH_2)
    # the remote code's DynamicCache: K and V of the kv heads at head_dim, per layer and token
    assert analyze(spec, bf16).kv.bytes_per_token == 32 * 2 * 4 * 128 * 2 == 65536
    assert analyze(parse_config(LING_PLUS), bf16).kv.bytes_per_token == 88 * 2 * 6 * 128 * 2
    a = spec.layers[0].mixer
    assert (a.head_dim, a.rotary_dim, a.q_norm_dim, a.k_norm_dim, a.rope_theta) == (128, 64, 128, 128, 600000.0)
    assert a.fused_qkv and not (a.q_bias or a.o_bias)
    num = spec.numerics
    assert (num.router, num.n_group, num.topk_group, num.group_score, num.routed_scaling_factor) == \
        ("sigmoid", 8, 4, "top2", 2.5)
    assert num.score_correction_bias and num.norm_topk_prob and not num.lm_head_l2_norm
    # vLLM groups a softmax router too when n_group / topk_group are set: a group scores its best expert
    grouped = parse_config(dict(LING_PLUS, n_group=8, topk_group=2)).numerics
    assert (grouped.router, grouped.n_group, grouped.topk_group, grouped.group_score) == ("softmax", 8, 2, "max")
    plus = parse_config(LING_PLUS)
    assert plus.numerics.router == "softmax" and plus.numerics.n_group == 1 and not plus.numerics.score_correction_bias
    assert plus.numerics.lm_head_l2_norm  # norm_head
    b = plus.layers[0].mixer
    assert b.rotary_dim == b.head_dim == 128 and b.q_norm_dim == 0
    # Ling 1's remote code: use_bias (class default true) biases only the attention's dense projection
    biased = dict(LING_LITE, use_bias=True, use_qkv_bias=True)
    assert count_params(parse_config(biased)).total == hand_count(biased)[0] == \
        hand_count(LING_LITE)[0] + 28 * (2048 + (16 + 8) * 128)


def test_mtp_layers_are_reported_apart():
    # Ling 2.0 base checkpoints: model.layers.{num_hidden_layers} = enorm, hnorm, eh_proj (2h -> h), a MoE block,
    # final_layernorm (sglang's bailing_moe_nextn.py, llama.cpp's BailingMoeV2 conversion)
    cfg = dict(LING_MINI_2, num_nextn_predict_layers=1)
    p = count_params(parse_config(cfg))
    h = 2048
    moe_block = 10_485_760 + 2 * 128 + 2 * h + 256 * 3 * h * 512 + 3 * h * 512 + 256 * h
    assert p.total == count_params(parse_config(LING_MINI_2)).total
    assert p.mtp == 3 * h + 2 * h * h + moe_block


VARIANTS = {
    "class-defaults": dict(moe_intermediate_size=64, num_key_value_heads=4),  # BailingMoeConfig's defaults otherwise
    "dense-only": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                       vocab_size=100, intermediate_size=96, moe_intermediate_size=16, first_k_dense_replace=2,
                       tie_word_embeddings=True),
    "head-dim-and-shared": dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                head_dim=32, vocab_size=90, intermediate_size=80, moe_intermediate_size=24,
                                num_experts=6, num_experts_per_tok=1, num_shared_experts=3, first_k_dense_replace=1,
                                use_qk_norm=True, use_qkv_bias=True, partial_rotary_factor=0.25),
    "shared-width": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         vocab_size=64, moe_intermediate_size=16, num_experts=4, num_shared_experts=2,
                         moe_shared_expert_intermediate_size=40, use_bias=False),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_equal_the_hand_count(name):
    cfg = dict(VARIANTS[name], model_type="bailing_moe")
    full = dict({"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "vocab_size": 30592}, **cfg)
    assert (lambda p: (p.total, p.active))(count_params(parse_config(cfg))) == hand_count(full)
    v2 = dict(cfg, model_type="bailing_moe_v2")
    assert count_params(parse_config(v2)).total == hand_count(full)[0]


@pytest.mark.parametrize("change, match", [
    ({"num_key_value_heads": None}, "num_key_value_heads"),
    ({"num_key_value_heads": 0}, "divides num_attention_heads by it"),
    ({"num_key_value_heads": 5}, "must divide num_attention_heads"),
    ({"moe_intermediate_size": None}, "moe_intermediate_size"),
    ({"num_experts_per_tok": 300}, "exceeds num_experts"),
    ({"score_function": "relu"}, "score_function"),
    ({"moe_router_enable_expert_bias": False}, "pairs softmax"),
    ({"n_group": 7}, "must divide num_experts"),
    ({"topk_group": 9}, "exceeds n_group"),
    ({"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    ({"hidden_size": "big"}, "hidden_size"),
])
def test_bad_configs_are_refused(change, match):
    cfg = dict(LING_FLASH_2, **change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(ConfigError, match=match):
        parse_config(cfg)


# ---- runtime: transformers' glm4_moe / mixtral under the Bailing checkpoint names --------------------------------

TINY_V2 = {"model_type": "bailing_moe", "hidden_size": 48, "intermediate_size": 96, "moe_intermediate_size": 32,
           "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "vocab_size": 128, "num_experts": 8, "num_shared_experts": 1, "num_experts_per_tok": 2, "n_group": 4,
           "topk_group": 2, "first_k_dense_replace": 1, "score_function": "sigmoid",
           "moe_router_enable_expert_bias": True, "routed_scaling_factor": 2.5, "norm_topk_prob": True,
           "use_qk_norm": True, "partial_rotary_factor": 0.5, "use_bias": False, "use_qkv_bias": False,
           "tie_word_embeddings": False, "rms_norm_eps": 1e-6, "rope_theta": 600000.0, "max_position_embeddings": 256,
           "num_nextn_predict_layers": 1, "torch_dtype": "float32"}
TINY_GLM4_MOE = {"model_type": "glm4_moe", "hidden_size": 48, "intermediate_size": 96, "moe_intermediate_size": 32,
                 "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                 "vocab_size": 128, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
                 "n_group": 4, "topk_group": 2, "first_k_dense_replace": 1, "routed_scaling_factor": 2.5,
                 "norm_topk_prob": True, "use_qk_norm": True, "partial_rotary_factor": 0.5, "attention_bias": False,
                 "tie_word_embeddings": False, "rms_norm_eps": 1e-6, "rope_theta": 600000.0,
                 "max_position_embeddings": 256, "torch_dtype": "float32", "pad_token_id": 0}
TINY_V1 = {"model_type": "bailing_moe", "hidden_size": 48, "moe_intermediate_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "num_experts": 4,
           "num_experts_per_tok": 2, "norm_topk_prob": True, "use_bias": False, "use_qkv_bias": False,
           "tie_word_embeddings": False, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256,
           "norm_head": True, "torch_dtype": "float32"}
TINY_MIXTRAL = {"model_type": "mixtral", "hidden_size": 48, "intermediate_size": 32, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
                "num_local_experts": 4, "num_experts_per_tok": 2, "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
                "rope_theta": 10000.0, "max_position_embeddings": 256, "sliding_window": None,
                "torch_dtype": "float32", "pad_token_id": 0}


def bailing_checkpoint(hf, inter: int):
    """transformers' state dict under the Bailing remote code's names: q, k, v fused in that order, experts one
    module each (gate rows first in transformers' fused gate_up_proj), expert_bias for the correction bias."""
    import torch

    sd = hf.state_dict()
    out = []
    for n, t in sd.items():
        if ".self_attn.k_proj." in n or ".self_attn.v_proj." in n:
            continue
        if ".self_attn.q_proj." in n:
            t = torch.cat([t, sd[n.replace("q_proj", "k_proj")], sd[n.replace("q_proj", "v_proj")]])
        if n.endswith("mlp.experts.gate_up_proj"):
            for e in range(t.shape[0]):
                out.append((n.replace("gate_up_proj", f"{e}.gate_proj.weight"), t[e, :inter]))
                out.append((n.replace("gate_up_proj", f"{e}.up_proj.weight"), t[e, inter:]))
            continue
        if n.endswith("mlp.experts.down_proj"):
            out.extend((n.replace("down_proj", f"{e}.down_proj.weight"), t[e]) for e in range(t.shape[0]))
            continue
        for ours, orig in (("model.embed_tokens.", "model.word_embeddings."),
                           (".self_attn.q_proj.", ".attention.query_key_value."),
                           (".self_attn.o_proj.", ".attention.dense."),
                           (".self_attn.q_norm.", ".attention.query_layernorm."),
                           (".self_attn.k_norm.", ".attention.key_layernorm."),
                           (".mlp.gate.e_score_correction_bias", ".mlp.gate.expert_bias"),
                           (".block_sparse_moe.", ".mlp.")):
            n = n.replace(ours, orig)
        out.append((n, t))
    return out


def _parity(cfg: dict, hf, items):
    from planner.runtime.load import load_tensors
    from planner.runtime.model import build_decoder
    from tests.test_runtime import assert_logits_and_cached_decode

    assert not any("self_attn" in n or "embed_tokens" in n for n, _ in items)
    spec = parse_config(cfg)
    ours = build_decoder(spec, seed=None)
    report = load_tensors(ours, items)
    assert report.missing == []
    assert sum(p.numel() for p in ours.parameters()) == count_params(spec).total == hand_count(cfg)[0]
    assert_logits_and_cached_decode(spec, ours, hf)


def test_runtime_ling_2_logits_equal_transformers_glm4_moe_loaded_from_bailing_names():
    torch = pytest.importorskip("torch")
    from tests.test_runtime import hf_model

    hf = hf_model(TINY_GLM4_MOE)
    with torch.no_grad():  # a choice bias that steers the routing (transformers initialises it to zeros)
        for layer in hf.model.layers[1:]:
            layer.mlp.gate.e_score_correction_bias.copy_(torch.randn(8, generator=torch.Generator().manual_seed(3)))
    items = bailing_checkpoint(hf, 32)
    assert any(n.endswith("mlp.gate.expert_bias") for n, _ in items)
    assert any(n.endswith("attention.query_layernorm.weight") for n, _ in items)
    # an MTP layer after the decoder (model.layers.3, as Ling 2.0 base checkpoints store it) is not loaded
    items.append(("model.layers.3.eh_proj.weight", torch.zeros(48, 96)))
    _parity(TINY_V2, hf, items)


def test_runtime_ling_1_logits_equal_transformers_mixtral_with_norm_head():
    torch = pytest.importorskip("torch")
    from tests.test_runtime import hf_model

    hf = hf_model(TINY_MIXTRAL)
    items = bailing_checkpoint(hf, 32)
    assert any(n.endswith("mlp.experts.3.down_proj.weight") for n, _ in items)
    with torch.no_grad():  # norm_head: vLLM loads lm_head with its columns L2-normalised
        w = hf.lm_head.weight
        w.copy_(w / (w.norm(dim=0, keepdim=True) + 1e-7))
    _parity(TINY_V1, hf, items)
