"""StepFun Step-3.5-Flash (``step3p5``) and the Step-3.7 image-text wrapper (``step3p7``).

Oracles: (1) hand counts written from the module shapes of transformers 5.24's models/step3p7/modeling_step3p7.py
(Step3p7Attention: q_proj to heads·head_dim — 96 heads on sliding layers via per_layer_config —, k/v_proj to
kv·head_dim, o_proj, g_proj hidden -> heads, q_norm / k_norm of head_dim; Step3p7MLP gate / up / down;
Step3p7SparseMoeBlock: gate.weight (experts, hidden) with an e_score_correction_bias *buffer*, experts.gate_up_proj
(E, 2·I, H) / down_proj (E, H, I), shared_experts of share_expert_dim; two RMSNorms a layer, a final norm, embed_tokens
and an untied lm_head; the vision tower and projector), which are vLLM's step3p5.py / step_vl.py shapes too (less
vLLM's router_bias parameter); (2) transformers itself on the meta device; (3) the published sizes: the card's
"11B of its 196B parameters", the hub's safetensors figure "199B" (199.4B at llmrun.dev) with the MTP layers.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run

FULL, SLIDING = "full_attention", "sliding_attention"
_LIMITS = [0.0] * 48
_LIMITS[43] = _LIMITS[44] = 7
_SHARED_LIMITS = [0.0] * 48
_SHARED_LIMITS[44] = 16

#: stepfun-ai/Step-3.5-Flash config.json, verbatim as vendored in yevvonlim/Megatron-Bridge
#: tests/unit_tests/models/step3p5/_reference/config.json (the per-layer lists written as the 4-cycles they are)
STEP35_FLASH = {
    "architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5",
    "auto_map": {"AutoConfig": "configuration_step3p5.Step3p5Config",
                 "AutoModelForCausalLM": "modeling_step3p5.Step3p5ForCausalLM"},
    "rope_scaling": {"rope_type": "llama3", "factor": 2.0, "original_max_position_embeddings": 131072,
                     "low_freq_factor": 1.0, "high_freq_factor": 32.0},
    "yarn_only_types": ["full_attention"], "hidden_size": 4096, "intermediate_size": 11264, "num_hidden_layers": 45,
    "max_seq_len": 262144, "vocab_size": 128896, "torch_dtype": "bfloat16", "use_qk_norm": True,
    "moe_layers_enum": ",".join(str(i) for i in range(3, 45)), "num_attention_heads": 64, "num_attention_groups": 8,
    "head_dim": 128, "use_moe": True, "moe_num_experts": 288, "moe_top_k": 8, "moe_intermediate_size": 1280,
    "share_expert_dim": 1280, "moe_layer_offset": 0, "moe_every_n_layer": 1, "norm_expert_weight": True,
    "moe_router_activation": "sigmoid", "moe_router_scaling_factor": 3.0, "att_impl_type": "GQA",
    "tie_word_embeddings": False, "rope_theta": [5000000.0, 10000.0, 10000.0, 10000.0] * 12,
    "use_head_wise_attn_gate": True, "sliding_window": 512, "use_moe_router_bias": True, "need_fp32_gate": True,
    "sink": False, "layer_types": [FULL, SLIDING, SLIDING, SLIDING] * 12, "use_rope_layers": [],
    "num_nextn_predict_layers": 3, "partial_rotary_factors": [0.5, 1.0, 1.0, 1.0] * 12,
    "eos_token_id": [1, 2, 128007], "bos_token_id": 0,
    "attention_other_setting": {"attention_type": "sliding_attention", "num_attention_heads": 96,
                                "num_attention_groups": 8, "head_dim": 128, "true_head_dim": 128},
    "swiglu_limits": _LIMITS, "swiglu_limits_shared": _SHARED_LIMITS, "zero_centered": True,
    "max_position_embeddings": 262144,
}

#: the Step-3.7 wrapper's vision fields as its checkpoints spell them (the perception encoder: Megatron-Bridge's
#: Step37Config test, vLLM's Step5PreviewVisionConfig test); the text_config is Step-3.5-Flash's. Not a verbatim
#: Step-3.7-Flash config.json (none was at hand): no published figure is matched with it.
STEP37_VISION = {"model_type": "perception_encoder", "image_size": 728, "patch_size": 14, "width": 1536, "layers": 47,
                 "heads": 16, "output_dim": None, "use_cls_token": False, "ls_init_value": 0.1, "use_ln_post": False,
                 "hidden_act": "quick_gelu", "pool_type": "none"}
STEP37 = {"architectures": ["Step3p7ForConditionalGeneration"], "model_type": "step3p7", "image_token_id": 128001,
          "understand_projector_stride": 2, "projector_bias": False, "vision_config": STEP37_VISION,
          "text_config": STEP35_FLASH}


def hand(c: dict) -> dict:
    """Step-3.5's counts from the module shapes (module doc), with defaults as Step3p7TextConfig's."""
    h, n = c.get("hidden_size", 4096), c.get("num_hidden_layers", 45)
    heads, kv, hd = c.get("num_attention_heads", 64), c.get("num_attention_groups", 8), c.get("head_dim", 128)
    swa = c.get("attention_other_setting", {}).get("num_attention_heads", heads)
    vocab, inter = c.get("vocab_size", 128815), c.get("intermediate_size", 11264)
    e, k = c.get("moe_num_experts", 288), c.get("moe_top_k", 8)
    mi, si = c.get("moe_intermediate_size", 1280), c.get("share_expert_dim", 1280)
    nextn = c.get("num_nextn_predict_layers", 0)
    types = c.get("layer_types", [FULL] * n)
    moe_at = [int(x) for x in c["moe_layers_enum"].split(",")] if "moe_layers_enum" in c else list(range(3, n))

    def attn(q_heads: int) -> int:  # q, k, v, o, g_proj, q_norm, k_norm
        return 2 * h * q_heads * hd + 2 * h * kv * hd + h * q_heads + 2 * hd

    def layer(i: int) -> tuple[int, int]:
        a = attn(swa if types[i] == SLIDING else heads) + 2 * h
        if i in moe_at:
            return a + e * 3 * h * mi + 3 * h * si + e * h, a + k * 3 * h * mi + 3 * h * si + e * h
        return a + 3 * h * inter, a + 3 * h * inter

    per = [layer(i) for i in range(n)]
    outer = 2 * vocab * h + h
    mtp = sum(layer(i)[0] for i in range(n, n + nextn)) + nextn * (3 * h + 2 * h * h + vocab * h)
    return {"total": outer + sum(t for t, _ in per), "active": outer + sum(a for _, a in per), "mtp": mtp,
            "router_biases": len(moe_at) * e}


def test_step35_flash_equals_the_hand_count_and_the_published_sizes():
    spec = parse_config(STEP35_FLASH)
    p = count_params(spec)
    want = hand(STEP35_FLASH)
    assert (p.total, p.active, p.mtp) == (want["total"], want["active"], want["mtp"])
    assert (p.total, p.active, p.mtp) == (196_956_118_272, 11_987_311_872, 2_428_171_008)
    # the card: "selectively activates only 11B of its 196B parameters" (active less the embedding table: 11.46B;
    # less the lm_head too: 10.93B)
    assert int(p.total / 1e9) == 196 and round((p.active - p.embedding) / 1e9) == 11
    # the checkpoint also holds the 42 x 288 router biases (vLLM's router_bias, transformers' buffer) and the three
    # MTP layers: 199.38B, the hub's "199B" (llmrun.dev: 199.4B)
    stored = p.total + want["router_biases"] + p.mtp
    assert stored == 199_384_301_376 and round(stored / 1e9, 1) == 199.4
    assert len(spec.mtp_layers) == 3 and all(layer.kind == "sliding(512)" for layer in spec.mtp_layers)


def test_step35_flash_geometry_kv_and_decode_flops():
    spec = parse_config(STEP35_FLASH)
    kinds = [layer.kind for layer in spec.layers]
    assert kinds[:4] == ["full", "sliding(512)", "sliding(512)", "sliding(512)+moe"]
    assert kinds.count("full+moe") == 11 and kinds.count("sliding(512)+moe") == 31
    full, sliding = spec.layers[4].mixer, spec.layers[5].mixer
    assert (full.num_attention_heads, full.num_key_value_heads, full.rotary_dim, full.rope_theta) == (64, 8, 64, 5e6)
    assert (sliding.num_attention_heads, sliding.window, sliding.rotary_dim, sliding.rope_theta) == (96, 512, 128, 1e4)
    assert dict(spec.rope_scaling)["rope_type"] == "llama3" and spec.numerics.rope_plain_on_windows
    assert spec.norm_offset == 1.0 and not spec.tie_word_embeddings
    num = spec.numerics
    assert (num.router, num.norm_topk_prob, num.routed_scaling_factor, num.score_correction_bias) == \
        ("sigmoid", True, 3.0, True)
    # K and V of 8 heads x 128 per layer and token (bf16): 45 x 4 KiB; the sliding layers keep 512 tokens
    c = 1000
    a = analyze(spec, Options(context=c, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 45 * 2 * 8 * 128 * 2 == 184_320
    assert a.kv.bytes_per_sequence(c) == 12 * 4096 * c + 33 * 4096 * 512
    # decode: 2 FLOPs per multiplied weight (the embedding lookup and the norms multiply none) + attention's
    # 2·heads·(128 + 128) per attended key (c + 1 on full layers, 512 on sliding ones)
    want = hand(STEP35_FLASH)
    h, vocab = 4096, 128896
    matmul_weights = want["active"] - vocab * h - 45 * (2 * h + 2 * 128) - h
    attn = 12 * 2 * 64 * 256 * (c + 1) + 33 * 2 * 96 * 256 * 512
    assert a.decode_flops == 2 * matmul_weights + attn


def test_step35_equals_transformers_text_model_on_meta():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.step3p7.configuration_step3p7 import Step3p7TextConfig
    from transformers.models.step3p7.modeling_step3p7 import Step3p7TextModel

    for cfg in (STEP35_FLASH, {"model_type": "step3p5"}):
        kw = {k: v for k, v in cfg.items() if k != "model_type"}
        config = Step3p7TextConfig(**kw)
        with torch.device("meta"):
            model = Step3p7TextModel(config)
        n = sum(p.numel() for p in model.parameters()) + config.vocab_size * config.hidden_size  # + the lm_head
        assert count_params(parse_config(cfg)).total == n
    assert n == hand({"model_type": "step3p5"})["total"] == 195_843_833_088


def test_step37_default_config_equals_transformers_and_the_hand_count():
    from tests.oracle import hf_model, unique_param_count

    cfg = {"model_type": "step3p7", "text_config": {}, "vision_config": {}}
    p = count_params(parse_config(cfg))
    assert p.total == unique_param_count(hf_model(cfg, image_text=True)) == 197_824_847_872
    assert p.vision == hand_vision(STEP37_VISION) == 1_981_014_784
    assert p.total - p.vision == hand({})["total"]


def hand_vision(v: dict, text_hidden: int = 4096, projector_bias: bool = False) -> int:
    """Step3p7VisionModel (= vLLM's PerceptionEncoder) and multi_modal_projector, from their module shapes."""
    h, n = v.get("width", 1536), v.get("layers", 47)
    inter = int(h * v.get("mlp_ratio", 8960 / 1536))
    grid = v.get("image_size", 728) // v.get("patch_size", 14)
    emb = h * 3 * 14 * 14 + grid * grid * h + 2 * h  # bias-free patch conv, positions, pre_layernorm
    block = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h + 2 * h  # + LNs, lambda_1 / 2
    down = (2 * h * h * 9 + 2 * h) + (4 * h * 2 * h * 9 + 4 * h)
    return emb + n * block + down + 4 * h * text_hidden + (text_hidden if projector_bias else 0)


def test_step37_wrapper_counts_tower_projector_and_step35():
    p = count_params(parse_config(STEP37))
    assert p.vision == hand_vision(STEP37_VISION)
    assert p.total == hand(STEP35_FLASH)["total"] + p.vision == 198_937_133_056
    assert count_params(parse_config(dict(STEP37, projector_bias=True))).total == p.total + 4096
    # the wrapper's flag ties lm_head (Step3p7Config), text_config's is not read
    assert parse_config(dict(STEP37, tie_word_embeddings=True)).tie_word_embeddings
    text_tied = dict(STEP37, text_config=dict(STEP35_FLASH, tie_word_embeddings=True))
    assert not parse_config(text_tied).tie_word_embeddings


@pytest.mark.parametrize("change, match", [
    ({"num_attention_heads": 60}, "must divide num_attention_heads"),
    ({"moe_top_k": 300}, "exceeds the 288 routed experts"),
    ({"moe_layers_enum": "3,x"}, "not a layer index"),
    ({"moe_layers_enum": "3,60"}, "not a layer index below 48"),
    ({"layer_types": [FULL] * 44}, "must be a list of 45 entries"),
    ({"layer_types": ["chunked_attention"] * 45}, "expected one of"),
    ({"swiglu_limits": [-1.0] * 45}, "non-negative bound"),
    ({"partial_rotary_factors": [0.5, 1.0, 1.0, 1.0] * 11 + [1.0, 1.0, 1.0, 1.0]}, "differ"),
])
def test_bad_configs_are_refused(change, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(dict(STEP35_FLASH, **change))


@pytest.mark.parametrize("change, match", [
    ({"attention_other_setting": {"num_attention_heads": 96, "num_attention_groups": 4}},
     "attention_other_setting.num_attention_groups"),
    ({"use_head_wise_attn_gate": False}, "use_head_wise_attn_gate"),
    ({"norm_expert_weight": False}, "norm_expert_weight"),
    ({"moe_router_activation": "softmax"}, "moe_router_activation"),
    ({"use_rope_layers": [1, 0] * 22 + [1]}, "use_rope_layers"),
])
def test_fields_transformers_ignores_must_agree(change, match):
    with pytest.raises(UnsupportedModelError, match=match):
        parse_config(dict(STEP35_FLASH, **change))


@pytest.mark.parametrize("key, value", [("use_cls_token", True), ("use_ln_post", True), ("use_abs_posemb", False),
                                        ("output_dim", 1024), ("pool_type", "attn"), ("ls_init_value", None)])
def test_perception_encoder_switches_transformers_does_not_build_are_refused(key, value):
    with pytest.raises(UnsupportedModelError, match=key):
        parse_config(dict(STEP37, vision_config=dict(STEP37_VISION, **{key: value})))


def test_cli_analyze_end_to_end_and_one_error_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(STEP35_FLASH))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 196_956_118_272
    wrapper = tmp_path / "step37.json"
    wrapper.write_text(json.dumps(STEP37))
    r = run("analyze", str(wrapper), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 198_937_133_056
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(STEP35_FLASH, moe_top_k=300)))
    run("analyze", str(bad)).assert_error("moe_top_k", "exceeds the 288 routed experts")


def test_verify_refuses_with_one_error_line(tmp_path):
    pytest.importorskip("torch")
    from tests.test_runtime import assert_verify_refuses

    tiny = {"model_type": "step3p5", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_attention_groups": 2, "head_dim": 16, "vocab_size": 128, "intermediate_size": 96,
            "moe_num_experts": 4, "moe_top_k": 2, "moe_intermediate_size": 32, "share_expert_dim": 32,
            "moe_layers_enum": "1,2,3", "layer_types": [FULL, SLIDING, SLIDING, FULL], "sliding_window": 8,
            "attention_other_setting": {"num_attention_heads": 8}, "max_position_embeddings": 256}
    assert_verify_refuses(tmp_path, tiny, "verify does not support Step-3.5's decoder layer yet")
