"""openPangu-Ultra-MoE (``pangu_ultra_moe``), a remote-code family with no transformers class. Counts are checked
against hand counts written from the shapes of the hub's modeling_openpangu_moe.py (OpenPanguMoEAttention,
OpenPanguMoE, OpenPanguMoEDecoderLayer) and vLLM's vllm/model_executor/models/openpangu.py (OpenPanguMLAAttention,
OpenPanguMoE, OpenPanguDecoderLayer), and the published 718B total / 39B active; no network, no remote code."""

from __future__ import annotations

import pytest
import torch

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import verify_self_checks

# openPangu-Ultra-MoE-718B: the hub's configuration_openpangu_moe.py (OpenPanguMoEConfig) defaults, which are the
# 718B model's, in its own field names, with sandwich_norm true (the model's depth-scaled sandwich norm)
ULTRA = {
    "architectures": ["PanguUltraMoEForCausalLM"], "model_type": "pangu_ultra_moe", "vocab_size": 153600,
    "hidden_size": 7680, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_mtp_layers": 1, "num_attention_heads": 128, "num_key_value_heads": 128, "num_shared_experts": 1,
    "num_routed_experts": 256, "routed_scaling_factor": 2.5, "attention_kv_lora_dim": 512,
    "attention_q_lora_dim": 1536, "attention_qk_rope_dim": 64, "attention_v_dim": 128, "attention_qk_dim": 128,
    "num_experts_per_tok": 8, "num_dense_layers": 3, "norm_topk_prob": True, "hidden_act": "silu",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "rope_theta": 25600000,
    "sandwich_norm": True, "torch_dtype": "bfloat16"}

#: the same model in the DeepSeek-V3 names vLLM's openpangu.py reads
ULTRA_DS = {k: v for k, v in ULTRA.items() if not k.startswith(("attention_", "num_routed", "num_shared",
                                                                 "num_dense", "num_mtp"))}
ULTRA_DS.update(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                n_routed_experts=256, n_shared_experts=1, first_k_dense_replace=3, num_nextn_predict_layers=1)

TINY = dict(ULTRA, vocab_size=320, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, num_routed_experts=8,
            attention_kv_lora_dim=32, attention_q_lora_dim=48, attention_qk_rope_dim=8, attention_v_dim=16,
            attention_qk_dim=16, num_experts_per_tok=2, num_dense_layers=1, max_position_embeddings=512)


def _by_hand(h, L, dense_layers, heads, q_lora, kv_lora, nope, rope, v, inter, moe_inter, E, shared, k, vocab,
             sandwich) -> tuple[int, int, int]:
    """(total, active, one MTP module) from modeling_openpangu_moe.py's shapes: q_a_proj (h x q_lora), q_a_layernorm,
    q_b_proj (q_lora x heads·(nope+rope)), kv_a_proj_with_mqa (h x kv_lora+rope), kv_a_layernorm, kv_b_proj
    (kv_lora x heads·(nope+v)), o_proj (heads·v x h); dense OpenPanguMoEMLP (3·h·inter) on layers < num_dense_layers,
    else gate.weight (E x h), E experts and a shared MLP of shared·moe_inter; RMSNorms: 2 a layer, 4 with
    sandwich_norm; final norm; untied embed_tokens and lm_head. The MTP module (vLLM's DeepSeek-style MTP): a MoE
    block, enorm, hnorm, eh_proj (2h x h), shared_head norm and its stored embedding / head copies."""
    attn = h * q_lora + q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope) + kv_lora \
        + kv_lora * heads * (nope + v) + heads * v * h
    norms = (4 if sandwich else 2) * h
    dense = attn + 3 * h * inter + norms
    moe = attn + E * h + E * 3 * h * moe_inter + 3 * h * shared * moe_inter + norms
    total = 2 * vocab * h + h + dense_layers * dense + (L - dense_layers) * moe
    active = total - (L - dense_layers) * (E - k) * 3 * h * moe_inter
    mtp = moe + 3 * h + 2 * h * h + 2 * vocab * h
    return total, active, mtp


def test_ultra_718b_by_hand_and_published():
    spec = parse_config(ULTRA)
    p = count_params(spec)
    total, active, mtp = _by_hand(7680, 61, 3, 128, 1536, 512, 128, 64, 128, 18432, 2048, 256, 1, 8, 153600, True)
    assert (p.total, p.active) == (total, active) == (719_093_767_680, 40_371_494_400)
    # published 718B total / 39B active: both fit the count without the 1.18B input embedding (717.9B / 39.2B)
    emb = 153600 * 7680
    assert round((p.total - emb) / 1e9) == 718 and round((p.active - emb) / 1e9) == 39
    # the MTP module, reported apart from the total (vLLM's loader skips it unless it drafts)
    assert len(spec.mtp_layers) == 1 and p.mtp == mtp == 14_802_639_360
    # the DeepSeek-V3 spellings vLLM reads give the same model
    assert (count_params(parse_config(ULTRA_DS)).total, count_params(parse_config(ULTRA_DS)).active) == (total, active)
    # without sandwich_norm: two RMSNorms a layer
    assert count_params(parse_config(dict(ULTRA, sandwich_norm=False))).total == total - 61 * 2 * 7680


def test_ultra_class_defaults_are_read():
    """Absent fields take OpenPanguMoEConfig's defaults (the 718B model's): only the core geometry is given."""
    core = {k: ULTRA[k] for k in ("model_type", "vocab_size", "hidden_size", "intermediate_size",
                                  "num_hidden_layers", "num_attention_heads")}
    p = count_params(parse_config(core))
    total, active, _ = _by_hand(7680, 61, 3, 128, 1536, 512, 128, 64, 128, 18432, 2048, 256, 1, 8, 153600, False)
    assert (p.total, p.active) == (total, active)


def test_ultra_kv_cache_is_the_mla_latent():
    """vLLM's MLA caches the normed latent and the rotated key part: (512 + 64) x 61 layers, bf16."""
    kv = kv_cache(parse_config(ULTRA), get_dtype("bf16"), get_dtype("bf16"))
    assert kv.bytes_per_token == 61 * (512 + 64) * 2 == 70_272


def test_ultra_numerics_and_norm_names():
    spec = parse_config(ULTRA)
    num = spec.numerics
    assert num.router.name == "SIGMOID" and num.n_group == 1 and num.topk_group == 1
    assert num.routed_scaling_factor == 2.5 and num.norm_topk_prob and not num.score_correction_bias
    assert num.rope_style.name == "PAIRS"
    assert [(n.name, n.role) for n in spec.layers[0].norms] == [
        ("input_layernorm", "pre_mixer"), ("post_attention_layernorm", "post_mixer"),
        ("pre_mlp_layernorm", "pre_ffn"), ("post_mlp_layernorm", "post_ffn")]
    assert parse_config(dict(ULTRA, router_enable_expert_bias=True)).numerics.score_correction_bias
    # vLLM's openpangu.py routes in one group whatever n_group says
    assert parse_config(dict(ULTRA, n_group=8, topk_group=4)).numerics.n_group == 1


@pytest.mark.parametrize("extra,field", [
    ({"param_sink_number": 128}, "param_sink_number"),
    ({"use_mhc": True}, "use_mhc"),
    ({"use_mome": True}, "use_mome"),
    ({"index_topk": 2048}, "index_topk"),
    ({"swa_layers": [1, 2]}, "swa_layers"),
    ({"block_post_layernorm_idx": [0]}, "block_post_layernorm_idx"),
    ({"moe_layer_freq": 2}, "moe_layer_freq"),
    ({"num_routed_experts": None}, "n_routed_experts"),
    ({"num_experts_per_tok": 300}, "num_experts_per_tok"),
    ({"attention_kv_lora_dim": 0}, "attention_kv_lora_dim"),
])
def test_ultra_bad_or_unmodelled_configs_raise_config_errors(extra, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(ULTRA, **extra))


def test_ultra_router_matches_the_hub_gate():
    """The runtime's routing equals the hub's OpenPanguMoEGate, rewritten here: sigmoid scores, top-k, weights
    renormalised (+1e-20) and times routed_scaling_factor."""
    from planner.runtime.model import SparseMoE, build_decoder

    model = build_decoder(parse_config(TINY))
    moe = next(m for m in model.modules() if isinstance(m, SparseMoE))
    logits = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    w, idx = moe.route(logits)
    scores = logits.float().sigmoid()
    _, ref_idx = torch.topk(scores, k=2, dim=-1, sorted=False)
    ref_w = scores.gather(1, ref_idx)
    ref_w = ref_w / (ref_w.sum(dim=-1, keepdim=True) + 1e-20) * 2.5
    order, ref_order = idx.sort(dim=-1), ref_idx.sort(dim=-1)
    assert torch.equal(order.values, ref_order.values)
    assert torch.allclose(w.gather(1, order.indices), ref_w.gather(1, ref_order.indices))


def test_ultra_verify_self_checks_pass(tmp_path):
    verify_self_checks(tmp_path, TINY, name="pangu", batch=2)
