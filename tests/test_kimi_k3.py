"""Kimi K3 (model_type kimi_k3 around a kimi_linear text_config; analysis/families/kimi_k3.py).

Oracles (none of them planner output):

- the released config.json of moonshotai/Kimi-K3 (quoted below, its fields as the hub file has them) and its
  checkpoint's tensor listing: a model-info report over the 96 shards' safetensors headers (public index record
  find_string id 62826164383: "权重张量数 497,220 / 参数总量 1,503,647,073,024 / 张量累计大小 1453.66 GB", one row
  per tensor pattern with shape and dtype), transcribed as ``RELEASE_TENSORS``;
- model.safetensors.index.json ``metadata.total_size`` 1,560,860,324,864 (quoted by several public repos: records
  57694383931 "index.json metadata.total_size", 69087392795 ``MODEL_INDEX_TOTAL_SIZE``) and the hub's parameter
  count 2,779,931,837,184 (record 61569586300 ``KIMI_K3_TOTAL_PARAMS``; BF16 57,179,884,544 and F32 11,122,432 in
  57694383931's ``safetensors.parameters``);
- the tiny synthetic checkpoint of an exporter's self-test (record 62410110535, ``selftest_export_real.py``:
  "a tiny checkpoint in the REAL HuggingFace layout"), its tensors hand-counted in ``test_tiny_k3_equals_its_
  synthetic_checkpoint``;
- the module shapes of SGLang's python/sglang/srt/models/kimi_k3.py (sgl-project/sglang): KimiK3MoE's latent
  projections and norm, KimiK3DeltaAttention's full-rank g_proj and head_dim A_log, KimiK3MLAAttention's g_proj
  (heads x v_head_dim), KimiK3DecoderLayer's attn-res tensors and block bookkeeping.
"""

from __future__ import annotations

import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

FULL = [*range(4, 93, 4), 93]
KDA = [i for i in range(1, 94) if i not in FULL]

#: moonshotai/Kimi-K3 config.json (record 62826164383), the fields that are not generation/bookkeeping defaults
RELEASE = {
    "architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3", "dtype": "bfloat16",
    "auto_map": {"AutoConfig": "configuration_kimi_k3.KimiK3Config"},
    "bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839, "media_placeholder_token_id": 163605,
    "tie_word_embeddings": False,
    "text_config": {
        "activation_situ_beta": 4.0, "activation_situ_linear_beta": 25.0, "architectures": ["KimiLinearForCausalLM"],
        "attn_res_block_size": 12, "dtype": "bfloat16", "first_k_dense_replace": 1, "hidden_act": "situ",
        "hidden_size": 7168, "intermediate_size": 33792, "kv_lora_rank": 512, "latent_moe_use_norm": True,
        "linear_attn_config": {"full_attn_layers": FULL, "gate_lower_bound": -5.0, "head_dim": 128, "kda_layers": KDA,
                               "num_heads": 96, "short_conv_kernel_size": 4, "use_full_rank_gate": True},
        "max_position_embeddings": 1048576, "mla_use_nope": True, "mla_use_output_gate": True,
        "model_type": "kimi_linear", "moe_intermediate_size": 3072, "moe_layer_freq": 1, "moe_renormalize": True,
        "moe_router_activation_func": "sigmoid", "num_attention_heads": 96, "num_expert_group": 1, "num_experts": 896,
        "num_experts_per_token": 16, "num_hidden_layers": 93, "num_key_value_heads": 96,
        "num_nextn_predict_layers": 0, "num_shared_experts": 2, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "quantization_config": {
            "config_groups": {"group_0": {"format": "mxfp4-pack-quantized", "input_activations": None,
                                          "output_activations": None, "targets": ["Linear"],
                                          "weights": {"actorder": None, "block_structure": None, "dynamic": False,
                                                      "group_size": 32, "num_bits": 4, "observer": "minmax",
                                                      "observer_kwargs": {}, "scale_dtype": "torch.uint8",
                                                      "strategy": "group", "symmetric": True, "type": "float",
                                                      "zp_dtype": None}}},
            "format": "mxfp4-pack-quantized", "global_compression_ratio": None,
            "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                       "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*"],
            "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"},
        "rms_norm_eps": 1e-05, "routed_expert_hidden_size": 3584, "routed_scaling_factor": 1.0,
        "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc", "use_grouped_topk": True,
        "v_head_dim": 128, "vocab_size": 163840},
    "vision_config": {
        "activation_func": "gelu_pytorch_tanh", "attn_bias": False, "init_pos_emb_height": 64, "init_pos_emb_time": 4,
        "init_pos_emb_width": 64, "linear_bias": False, "merge_kernel_size": [2, 2], "merge_type": "sd2_tpool",
        "mlp_type": "mlp2", "mm_hidden_size": 1024, "mm_projector_type": "patchmergerv2", "norm_type": "rmsnorm",
        "patch_embed_proj_bias": False, "patch_size": 14, "pos_emb_interpolation_mode": "bilinear",
        "pos_emb_type": "divided_fixed", "projector_hidden_act": "gelu", "projector_ln_eps": 1e-05,
        "qkv_hidden_size": 1536, "text_hidden_size": 7168, "vt_hidden_size": 1024, "vt_intermediate_size": 4096,
        "vt_num_attention_heads": 12, "vt_num_hidden_layers": 27},
}

# The release's tensors (record 62826164383): (pattern, copies, shape, dtype). Layers: 69 KDA, 24 MLA, 92 MoE
# (1-92), layer 0 dense; experts.0-895 under each MoE layer; U8 = compressed-tensors MXFP4 packed / E8M0 scales.
K, M, E = 69, 24, 92 * 896
RELEASE_TENSORS = [
    ("lm_head", 1, (163840, 7168), "BF16"), ("embed_tokens", 1, (163840, 7168), "BF16"),
    ("kda.A_log", K, (128,), "F32"), ("kda.b_proj", K, (96, 7168), "BF16"), ("kda.dt_bias", K, (12288,), "F32"),
    ("kda.f_a_proj", K, (128, 7168), "BF16"), ("kda.f_b_proj", K, (12288, 128), "BF16"),
    ("kda.k_conv1d", K, (12288, 1, 4), "F32"), ("kda.k_proj", K, (12288, 7168), "BF16"),
    ("kda.o_norm", K, (128,), "F32"), ("kda.q_conv1d", K, (12288, 1, 4), "F32"),
    ("kda.q_proj", K, (12288, 7168), "BF16"), ("kda.v_conv1d", K, (12288, 1, 4), "F32"),
    ("kda.v_proj", K, (12288, 7168), "BF16"),
    ("input_layernorm", 93, (7168,), "BF16"), ("mlp_res_norm", 93, (7168,), "BF16"),
    ("mlp_res_proj", 93, (1, 7168), "BF16"), ("post_attention_layernorm", 93, (7168,), "BF16"),
    ("self_attention_res_norm", 93, (7168,), "BF16"), ("self_attention_res_proj", 93, (1, 7168), "BF16"),
    ("self_attn.g_proj", 93, (12288, 7168), "BF16"), ("self_attn.o_proj", 93, (7168, 12288), "BF16"),
    ("layers.0.mlp.down_proj", 1, (7168, 33792), "BF16"), ("layers.0.mlp.gate_proj", 1, (33792, 7168), "BF16"),
    ("layers.0.mlp.up_proj", 1, (33792, 7168), "BF16"),
    ("experts.w1.weight_packed", E, (3072, 1792), "U8"), ("experts.w1.weight_scale", E, (3072, 112), "U8"),
    ("experts.w2.weight_packed", E, (3584, 1536), "U8"), ("experts.w2.weight_scale", E, (3584, 96), "U8"),
    ("experts.w3.weight_packed", E, (3072, 1792), "U8"), ("experts.w3.weight_scale", E, (3072, 112), "U8"),
    ("gate.e_score_correction_bias", 92, (896,), "F32"), ("gate.weight", 92, (896, 7168), "BF16"),
    ("routed_expert_down_proj", 92, (3584, 7168), "BF16"), ("routed_expert_norm", 92, (3584,), "BF16"),
    ("routed_expert_up_proj", 92, (7168, 3584), "BF16"), ("shared_experts.down_proj", 92, (7168, 6144), "BF16"),
    ("shared_experts.gate_proj", 92, (6144, 7168), "BF16"), ("shared_experts.up_proj", 92, (6144, 7168), "BF16"),
    ("mla.kv_a_layernorm", M, (512,), "BF16"), ("mla.kv_a_proj_with_mqa", M, (576, 7168), "BF16"),
    ("mla.kv_b_proj", M, (24576, 512), "BF16"), ("mla.q_a_layernorm", M, (1536,), "BF16"),
    ("mla.q_a_proj", M, (1536, 7168), "BF16"), ("mla.q_b_proj", M, (18432, 1536), "BF16"),
    ("norm", 1, (7168,), "BF16"), ("output_attn_res_norm", 1, (7168,), "BF16"),
    ("output_attn_res_proj", 1, (1, 7168), "BF16"),
    ("mm_projector.post_norm", 1, (7168,), "BF16"), ("mm_projector.proj.0", 1, (4096, 4096), "BF16"),
    ("mm_projector.proj.2", 1, (7168, 4096), "BF16"),
    ("vision.mlp.fc0", 27, (4096, 1024), "BF16"), ("vision.mlp.fc1", 27, (1024, 4096), "BF16"),
    ("vision.norm0", 27, (1024,), "BF16"), ("vision.norm1", 27, (1024,), "BF16"),
    ("vision.wo", 27, (1024, 1536), "BF16"), ("vision.wqkv", 27, (4608, 1024), "BF16"),
    ("vision.final_layernorm", 1, (1024,), "BF16"), ("vision.pos_emb", 1, (64, 64, 1024), "BF16"),
    ("vision.patch_embed", 1, (1024, 3, 14, 14), "BF16"),
]
BYTES = {"BF16": 2, "F32": 4, "U8": 1}


def _numel(dtype: str | None = None, where=lambda name: True) -> int:
    return sum(n * math.prod(s) for name, n, s, d in RELEASE_TENSORS if (dtype in (None, d)) and where(name))


def test_the_transcribed_listing_is_the_reports_and_the_index():
    """The transcription itself against the report's totals and the index: 497,220 tensors' elements and bytes."""
    assert _numel() == 1_503_647_073_024
    assert sum(n * math.prod(s) * BYTES[d] for _, n, s, d in RELEASE_TENSORS) == 1_560_860_324_864
    assert _numel("BF16") == 57_179_884_544 and _numel("F32") == 11_122_432


@pytest.fixture(scope="module")
def k3():
    return parse_config(RELEASE)


def test_release_parameters_equal_the_checkpoint(k3):
    """Every packed byte holds two fp4 weights; the E8M0 scales are no parameters: 2,779,931,837,184 (the hub's
    count). Before: read as Kimi Linear, 5,489,475,592,288 (experts at hidden 7168, no gates, no attn-res, no tower)."""
    p = count_params(k3)
    packed = _numel("U8", lambda n: n.endswith("packed"))
    assert p.total == _numel("BF16") + _numel("F32") + 2 * packed == 2_779_931_837_184
    assert p.experts == 2 * packed
    assert p.vision == _numel(where=lambda n: n.startswith(("vision.", "mm_projector."))) == 447_358_976
    # active: the text model and tower less 880 of each MoE layer's 896 experts (3 x 3584 x 3072 each)
    assert p.active == p.total - 92 * (896 - 16) * 3 * 3584 * 3072


def test_release_weights_as_stored(k3):
    """BF16 except KDA's A_log / dt_bias / convs / o_norm and the correction bias (F32); the routed experts MXFP4
    (the latent projections and attn-res projections BF16 though the ignore list does not name them)."""
    fmt, _ = weight_format(k3)
    assert fmt.bytes_of(k3.tensors()) == 1_560_860_324_864
    f32 = sum(t.numel for t in k3.tensors() if any(p in t.name for p in k3.fp32_names))
    assert f32 == _numel("F32")


def test_release_cache_and_state(k3):
    """24 MLA layers cache the latent and the shared key (512 + 64, bf16); 69 KDA layers keep the q/k/v conv window
    (3 x 96 x 128 x 3, bf16) and 96 heads of a 128 x 128 fp32 state (vLLM's kda_state_dtype)."""
    fmt, _ = weight_format(k3)
    kv = kv_cache(k3, fmt.act, fmt.act)
    assert sum(lk.bytes_per_token for lk in kv.layers) == 24 * (512 + 64) * 2 == 27_648
    assert kv.state_bytes_per_sequence == 69 * (3 * 96 * 128 * 3 * 2 + 96 * 128 * 128 * 4) == 449_372_160


def test_attention_residual_flops_in_the_decode_step(k3):
    """The two mixes per layer and the output mix, 4 x hidden FLOPs per candidate (SGLang's KimiK3DecoderLayer:
    ceil(i / 12) snapshots before layer i, one written when i % 12 == 0; the attention side skipped at layer 0)."""
    fmt, _ = weight_format(k3)
    ops = step_ops(k3, fmt, fmt.act, cached_tokens=100)
    got = sum(o.flops for o in ops if o.name.endswith("_attn_res") or o.name == "final_input")
    h, want = 7168, 0
    for i in range(93):
        closed = -(-i // 12)
        want += 4 * h * ((closed + 1 if closed else 0) + closed + (i % 12 == 0) + 1)
    assert got == want + 4 * h * (-(-93 // 12) + 1) > 0
    names = {o.name for o in ops}
    assert {"latent_norm", "fc1_latent_proj", "fc2_latent_proj", "output_gate", "g_proj"} <= names


def test_verify_refuses_it(k3):
    from planner.analysis.errors import RuntimeUnavailableError
    from planner.runtime.model import check_supported

    with pytest.raises(RuntimeUnavailableError):
        check_supported(k3)
    assert "Kimi K3" in k3.numerics.runtime_unsupported


def test_analyze_table_sums_layers_that_differ_only_where_no_column_shows_it(k3, tmp_path):
    """The attention-residual block boundaries make 24 distinct layer specs out of three shapes; the table prints
    the three (layer_types: 1 dense KDA layer, 68 KDA + MoE, 24 MLA + MoE), their counts summed."""
    import json

    from tests.clirun import run

    assert len(k3.layer_groups) > 3  # the distinct specs the table folds
    path = tmp_path / "config.json"
    path.write_text(json.dumps(RELEASE))
    r = run("analyze", path, env={"COLUMNS": "200"})  # wide enough that no row wraps
    assert r.code == 0, r.err
    table = r.out.split("Per layer", 1)[1].split("FLOPs", 1)[0]
    rows = [line.split("│")[1:3] for line in table.splitlines() if line.startswith("│")]
    assert [(kind.strip(), int(n)) for kind, n in rows] == [("kda", 1), ("kda+moe", 68), ("mla+moe", 24)]


# ---- the exporter self-test's tiny checkpoint (record 62410110535) --------------------------------------------------

H, NL, NE, LAT, MI, HD, NH = 64, 6, 8, 32, 32, 16, 4
QL, KVL, NOPE, ROPE, VH, DENSE, VOCAB = 24, 16, 16, 8, 16, 48, 33
TINY_KDA = [1, 2, 4, 5]  # 0-indexed


def _tiny() -> dict:
    """selftest_export_real.py's tiny_config(), verbatim but for the Python constants spelled out."""
    return {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3", "text_config": {
        "model_type": "kimi_linear", "hidden_size": H, "num_hidden_layers": NL, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "intermediate_size": DENSE, "vocab_size": VOCAB, "rms_norm_eps": 1e-5,
        "hidden_act": "situ", "activation_situ_beta": 4.0, "activation_situ_linear_beta": 25.0,
        "attn_res_block_size": 2, "num_experts": NE, "num_experts_per_token": 2, "num_shared_experts": 2,
        "moe_intermediate_size": MI, "routed_expert_hidden_size": LAT, "latent_moe_use_norm": True,
        "moe_router_activation_func": "sigmoid", "moe_renormalize": True, "routed_scaling_factor": 1.0,
        "num_expert_group": 1, "topk_group": 1, "num_nextn_predict_layers": 0, "num_attention_heads": NH,
        "q_lora_rank": QL, "kv_lora_rank": KVL, "qk_nope_head_dim": NOPE, "qk_rope_head_dim": ROPE,
        "v_head_dim": VH, "mla_use_nope": True, "mla_use_output_gate": True, "eos_token_id": 7,
        "linear_attn_config": {"num_heads": NH, "head_dim": HD, "short_conv_kernel_size": 4, "gate_lower_bound": -5.0,
                               "use_full_rank_gate": True, "kda_layers": [i + 1 for i in TINY_KDA],
                               "full_attn_layers": [i + 1 for i in range(NL) if i not in TINY_KDA]}}}


def test_tiny_k3_equals_its_synthetic_checkpoint():
    """build_checkpoint()'s tensors (the release's names and shapes at tiny sizes), counted by hand; expert packed
    bytes x 2 as logical weights, scales not counted. No vision_config: the text model alone."""
    want = 2 * VOCAB * H + 3 * H  # embed, lm_head; norm, output_attn_res_proj, output_attn_res_norm
    for li in range(NL):
        kda = li in TINY_KDA
        want += 6 * H  # input / post norms, two res projs (1 x H), two res norms
        want += 2 * NH * (HD if kda else VH) * H  # g_proj, o_proj
        if kda:
            want += 3 * NH * HD * H + 3 * NH * HD * 4 + HD * H + NH * HD * HD + NH * H + HD + HD + NH * HD
        else:
            want += QL * H + QL + NH * (NOPE + ROPE) * QL + (KVL + ROPE) * H + KVL + NH * (NOPE + VH) * KVL
        if li >= 1:
            want += NE * H + NE + LAT * H + H * LAT + LAT + 3 * (MI * 2) * H + NE * 3 * MI * LAT
        else:
            want += 3 * DENSE * H
    spec = parse_config(_tiny())
    assert count_params(spec).total == want
    assert not spec.vision


def test_kimi_linear_without_k3_fields_is_unchanged():
    """Kimi-Linear-48B-A3B's shape (moonshotai/Kimi-Linear-48B-A3B-Instruct config.json) keeps Kimi Linear's reading:
    low-rank output gate, A_log per head, no attn-res, no latent."""
    text = {k: v for k, v in _tiny()["text_config"].items()
            if k not in ("attn_res_block_size", "routed_expert_hidden_size", "latent_moe_use_norm",
                         "mla_use_output_gate", "activation_situ_beta", "activation_situ_linear_beta")}
    text.update(hidden_act="silu", linear_attn_config={**text["linear_attn_config"], "use_full_rank_gate": False})
    spec = parse_config(text)
    names = [t.name for t in spec.tensors()]
    assert any(".g_a_proj." in n for n in names) and not any("_res_" in n or "latent" in n for n in names)
    a_log = next(t for t in spec.tensors() if t.name.endswith("A_log"))
    assert a_log.shape == (NH,)


def test_a_vision_tower_we_have_not_seen_is_refused():
    cfg = dict(RELEASE, vision_config=dict(RELEASE["vision_config"], norm_type="layernorm"))
    with pytest.raises(UnsupportedModelError, match="norm_type"):
        parse_config(cfg)


def test_kimi_k3_040b_hand_count():
    """inference-optimization/Kimi-K3-0.40B's text_config (quoted in vLLM's tests for issue 52008, record
    57591030978; v_head_dim 64 for MLA beside a 32-wide KDA head, whose v stays at head_dim as in transformers'
    KimiLinearDeltaAttention), hand-counted from SGLang's kimi_k3.py module shapes; no vision_config."""
    text = {"attn_res_block_size": 4, "first_k_dense_replace": 1, "head_dim": 74, "hidden_act": "situ",
            "hidden_size": 1024, "intermediate_size": 2048, "kv_lora_rank": 128, "latent_moe_use_norm": True,
            "linear_attn_config": {"full_attn_layers": [4, 8], "head_dim": 32, "kda_layers": [1, 2, 3, 5, 6, 7],
                                   "num_heads": 8, "short_conv_kernel_size": 4, "use_full_rank_gate": True},
            "max_position_embeddings": 4096, "mla_use_nope": True, "mla_use_output_gate": True,
            "model_type": "kimi_linear", "moe_intermediate_size": 256, "moe_layer_freq": 1, "moe_renormalize": True,
            "moe_router_activation_func": "sigmoid", "num_attention_heads": 8, "num_expert_group": 1,
            "num_experts": 8, "num_experts_per_token": 2, "num_hidden_layers": 8, "num_key_value_heads": 8,
            "num_nextn_predict_layers": 0, "num_shared_experts": 1, "q_lora_rank": 256, "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 32, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "routed_expert_hidden_size": 512,
            "routed_scaling_factor": 1.0, "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc",
            "use_grouped_topk": True, "v_head_dim": 64, "vocab_size": 163840}
    spec = parse_config({"architectures": ["KimiK3ForConditionalGeneration"], "dtype": "float32",
                         "model_type": "kimi_k3", "text_config": text})
    h, v, p, hd, n = 1024, 163840, 8 * 32, 32, 8
    kda = 3 * p * h + 3 * p * 4 + hd * h + p * hd + n * h + p * h + hd + p + hd + h * p
    mla = 256 * h + 256 + n * 96 * 256 + 160 * h + 128 + n * 128 * 128 + h * n * 64 + n * 64 * h
    moe = 8 * h + 8 + 2 * 512 * h + 512 + 3 * 256 * h + 8 * 3 * 256 * 512
    want = 2 * v * h + 3 * h + 8 * 6 * h + 6 * kda + 2 * mla + 3 * 2048 * h + 7 * moe
    assert count_params(spec).total == want


def test_the_dspark_draft_is_refused_by_name():
    """Kimi K3's DSpark draft (model_type k3_dspark, architectures K3DSparkModel: a vLLM preflight asserts both,
    record 60264777286) is no causal LM of its own: refused, not read as a generic Llama."""
    cfg = {"architectures": ["K3DSparkModel"], "model_type": "k3_dspark", "hidden_size": 7168,
           "num_hidden_layers": 5, "num_attention_heads": 64, "vocab_size": 163840, "intermediate_size": 18432,
           "target_layer_ids": [2, 23, 47, 71, 89]}
    with pytest.raises(UnsupportedModelError, match="DSpark"):
        parse_config(cfg)
