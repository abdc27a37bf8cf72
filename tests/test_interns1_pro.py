"""Intern-S1-Pro (``interns1_pro``, remote code; analysis/families/interns1_pro.py).

The config below is internlm/Intern-S1-Pro's config.json as copied in muyaostudio/intern-s1-pro-vs-qwen3-235b-a22b
(checkpoints/Intern-S1-Pro/config.json, commit 4591d649), its quantization_config's 623-entry modules_to_not_convert
list left out (it names model.language_model.rotary_emb among the modules kept in bf16: the FoPE buffers are stored
tensors of the checkpoint). The modules are those of that repository's modeling_interns1_pro.py (the hub's remote
code) and vLLM's vllm/model_executor/models/interns1_pro.py: Qwen3-VL-MoE's text model and tower (no DeepStack
mergers), plus the FoPE buffers ``sin_coef`` / ``cos_coef`` (InternS1ProMoeTextFourierEmbedding, persistent) and a
grouped router.

Oracle: transformers' Qwen3VLMoeForConditionalGeneration on the meta device, built with the same text and vision
shapes and ``deepstack_visual_indexes`` empty (no transformers class holds FoPE), plus the FoPE buffers counted by hand
from their registered shapes. Before: read as a generic Llama ('interns1_pro_text' not a known family), without the
per-head q/k norms, the tower and the FoPE buffers (916,555,812,864)."""

from __future__ import annotations

import copy

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

INTERN_S1_PRO = {
    "architectures": ["InternS1ProForConditionalGeneration"], "image_token_id": 151655, "model_type": "interns1_pro",
    "text_config": {
        "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
        "dtype": "bfloat16", "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
        "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 262144,
        "mlp_only_layers": [], "model_type": "interns1_pro_text", "moe_intermediate_size": 1536,
        "norm_topk_prob": True, "num_attention_heads": 64, "num_experts": 512, "num_experts_per_tok": 8,
        "num_hidden_layers": 94, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
        "rope_scaling": {"rope_type": "default", "fope_init_factor": 0.5, "fope_sep_head": True, "num_inv_freq": None},
        "rope_theta": 5000000, "router_n_groups": 8, "use_cache": True, "vocab_size": 155008},
    "tie_word_embeddings": False, "transformers_version": "4.57.0.dev0", "video_token_id": 151656,
    "vision_config": {
        "depth": 24, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1024, "in_channels": 3,
        "initializer_range": 0.02, "intermediate_size": 4096, "model_type": "interns1_pro_vision", "num_heads": 16,
        "num_position_embeddings": 2304, "out_hidden_size": 4096, "patch_size": 16, "spatial_merge_size": 2,
        "temporal_patch_size": 2},
    "vision_end_token_id": 151653, "vision_start_token_id": 151652,
    "auto_map": {"AutoConfig": "configuration_interns1_pro.InternS1ProConfig",
                 "AutoModel": "modeling_interns1_pro.InternS1ProModel",
                 "AutoModelForCausalLM": "modeling_interns1_pro.InternS1ProForConditionalGeneration"},
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "scale_fmt": "ue8m0", "weight_block_size": [128, 128]},
}

#: FoPE with fope_sep_head: sin_coef and cos_coef, each (num_key_value_heads, head_dim / 2, head_dim / 2)
FOPE = 2 * 4 * 64 * 64


def _with_text(**changes) -> dict:
    cfg = copy.deepcopy(INTERN_S1_PRO)
    cfg["text_config"].update(changes)
    return cfg


def _qwen3_vl_moe(cfg: dict) -> dict:
    """The transformers Qwen3-VL-MoE config of the same shapes (its class defaults where Intern-S1-Pro's differ are
    overridden: untied, rope_theta), without FoPE, the grouped router or DeepStack mergers."""
    t = {k: v for k, v in cfg["text_config"].items() if k not in ("rope_scaling", "router_n_groups", "dtype")}
    t.update(model_type="qwen3_vl_moe_text", rope_parameters={"rope_type": "default", "rope_theta": 5000000.0})
    v = dict(cfg["vision_config"], model_type="qwen3_vl_moe", deepstack_visual_indexes=[])
    return {"model_type": "qwen3_vl_moe", "text_config": t, "vision_config": v, "tie_word_embeddings": False}


def test_intern_s1_pro_against_transformers_qwen3_vl_moe_plus_fope():
    model = hf_model(_qwen3_vl_moe(INTERN_S1_PRO))
    hf_total = unique_param_count(model)
    hf_vision = sum(p.numel() for n, p in model.named_parameters() if ".visual." in n)
    hf_experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    spec = parse_config(INTERN_S1_PRO)
    p = count_params(spec)
    assert p.total == hf_total + FOPE == 916_895_676_928
    assert p.vision == hf_vision == 339_807_232
    # 8 of 512 experts a token (one per group of 64): the experts' other 504 / 512 are idle
    assert p.active == p.total - hf_experts * 504 // 512 == 22_703_618_560
    assert spec.tie_word_embeddings is False
    # 94 GQA layers, K and V of 4 heads x 128 in bf16 (FoPE changes the rotation, not the cache)
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 94 * 2 * 4 * 128 * 2 == 192_512


def test_vision_hand_count():
    """The tower from modeling_interns1_pro.py's module shapes: Conv3d patch embedding (biased), 2304 learned
    positions, 24 blocks (two biased LayerNorms, biased fused qkv and proj, biased linear_fc1 / linear_fc2) and the
    merger (LayerNorm over the vision width, two biased Linears over 4 x 1024)."""
    h, inter, m = 1024, 4096, 4 * 1024
    block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    tower = (h * 3 * 2 * 16 * 16 + h) + 2304 * h + 24 * block + (2 * h + (m * m + m) + (m * 4096 + 4096))
    assert count_params(parse_config(INTERN_S1_PRO)).vision == tower


def test_fope_and_grouped_router_are_read():
    spec = parse_config(INTERN_S1_PRO)
    names = {t.name: t.shape for t in spec.model_params}
    assert names == {"model.rotary_emb.sin_coef": (4, 64, 64), "model.rotary_emb.cos_coef": (4, 64, 64)}
    assert "grouped router" in spec.numerics.runtime_unsupported and "FoPE" in spec.numerics.runtime_unsupported
    # one shared coefficient matrix pair without fope_sep_head
    shared = parse_config(_with_text(rope_scaling={"rope_type": "default", "fope_init_factor": 0.5,
                                                   "fope_sep_head": False}))
    assert [t.shape for t in shared.model_params] == [(64, 64), (64, 64)]
    # no FoPE key and no groups: Qwen3-VL-MoE's text model exactly, which verify runs
    plain = parse_config(_with_text(rope_scaling=None, router_n_groups=None))
    assert plain.model_params == () and plain.numerics.runtime_unsupported == ""
    assert count_params(plain).total == count_params(spec).total - FOPE


def test_bad_fields_are_refused():
    with pytest.raises(ConfigError, match="router_n_groups"):
        parse_config(_with_text(router_n_groups=3))
    with pytest.raises(UnsupportedModelError, match="num_inv_freq"):
        parse_config(_with_text(rope_scaling={"rope_type": "default", "fope_sep_head": True, "num_inv_freq": 32}))
    cfg = copy.deepcopy(INTERN_S1_PRO)
    cfg["vision_config"]["out_hidden_size"] = 2048
    with pytest.raises(UnsupportedModelError, match="out_hidden_size"):
        parse_config(cfg)


def test_cli_verify_refuses_fope_with_one_error_line(tmp_path):
    import json

    d = tmp_path / "s1pro"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(INTERN_S1_PRO))
    run("verify", d, "--device", "cpu").assert_error("verify does not support", "FoPE", "grouped router")
    r = run("analyze", d / "config.json", "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 916_895_676_928


def test_verify_runs_without_fope_or_groups(tmp_path):
    """Without FoPE keys and router groups the language model is Qwen3-VL-MoE's: verify's self-checks pass on a tiny
    one (parameters, decode FLOPs and KV bytes measured == predicted)."""
    from tests.clirun import verify_self_checks

    tiny = {"model_type": "interns1_pro", "architectures": ["InternS1ProForConditionalGeneration"],
            "tie_word_embeddings": False,
            "text_config": {"model_type": "interns1_pro_text", "hidden_size": 64, "num_hidden_layers": 2,
                            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                            "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 8,
                            "num_experts_per_tok": 2, "vocab_size": 256, "rope_scaling": None,
                            "max_position_embeddings": 512},
            "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                              "out_hidden_size": 64, "num_position_embeddings": 16}}
    verify_self_checks(tmp_path, tiny)
