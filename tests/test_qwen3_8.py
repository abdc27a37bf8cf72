"""Qwen3.8 (session 27 vLLM-registry audit): its published configs are Qwen3.5's model_types, read as they were.

- Qwen/Qwen3.8-2.4T-A95B: a flat ``qwen3_5_moe_text`` (``Qwen3_5MoeForCausalLM``): 92 layers (69 Gated DeltaNet +
  23 gated attention), hidden 8192, 512 experts top-10 + a shared expert, one MTP layer. Oracles: the checkpoint's
  model.safetensors.index.json ``metadata.total_size`` 4,892,365,451,008 with every one of its 1609 tensors BF16
  (mudler/vllm.cpp tests/vllm/models/fixtures/qwen3_8_2_4t_a95b/model.safetensors.index.json and
  fixtures/qwen3_5_stacked_shapes.inc, the shard headers of revision 207bd685a7e3696cfaff12ded7c6a7ea0f88c996:
  names, dtypes, shapes); transformers' Qwen3_5MoeForCausalLM on the meta device (no MTP module).
- Qwen/Qwen3.8-27B: ``qwen3_5`` / ``Qwen3_5ForConditionalGeneration`` around ``qwen3_5_text``, Qwen3.5-27B's shape
  plus ``output_gate_type: "swish"``. Oracle: transformers on the meta device.

The one field Qwen3.8 adds, ``output_gate_type``, is the activation of the Gated DeltaNet's norm gate (vLLM's
qwen_gdn_linear_attn.py: absent -> silu, swish = silu, sigmoid; anything else fails its assert). The ``qwen3_8*``
model_types some engines give it (no transformers / vLLM / SGLang class) are read as Qwen3.5 with a caveat.
"""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, RuntimeUnavailableError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_model, hf_param_count, unique_param_count

BF16, FP32 = get_dtype("bf16"), get_dtype("fp32")

#: Qwen/Qwen3.8-2.4T-A95B config.json: the fields of the released -FP8 config as a public strict loader quotes them
#: (a Rust crate's qwen38 config.rs, official_config_value(): "The exact text-model config published with
#: Qwen3.8-2.4T-A95B-FP8", code index id 68733948009), without its quantization_config; the BF16 repository's
#: planning fields are the same (92 layers, 512 / 10 experts: other quotes, ids 68817362432 and 61347012476)
Q38_2P4T = {
    "architectures": ["Qwen3_5MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_output_gate": True, "bos_token_id": 248044, "dtype": "bfloat16", "eos_token_id": 248044,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 8192,
    "initializer_range": 0.02,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(92)],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 128, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144, "model_type": "qwen3_5_moe_text", "moe_intermediate_size": 2048,
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False, "num_attention_heads": 64,
    "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 92, "num_key_value_heads": 4,
    "output_gate_type": "swish", "output_router_logits": False, "pad_token_id": None, "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-6, "rope_parameters": {"partial_rotary_factor": 0.25, "rope_theta": 10000000,
                                              "rope_type": "default"},
    "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 2048, "tie_word_embeddings": False,
    "transformers_version": "4.57.3", "use_cache": True, "vocab_size": 248320,
}

#: the -FP8 release's quantization_config (same source): dynamic block FP8, and the 978 modules it leaves in BF16 —
#: embeddings, lm_head, every attention / Gated DeltaNet projection, router, shared expert and its gate, and the
#: MTP module's; only the routed experts are FP8
def _fp8_not_converted() -> list[str]:
    names = ["lm_head", "model.embed_tokens"]
    for i in range(92):
        root = f"model.layers.{i}"
        if (i + 1) % 4 == 0:
            names += [f"{root}.self_attn.{p}" for p in ("k_proj", "o_proj", "q_proj", "v_proj")]
        else:
            names += [f"{root}.linear_attn.{m}" for m in ("conv1d", "in_proj_a", "in_proj_b", "in_proj_qkv",
                                                          "in_proj_z", "out_proj")]
        names += [f"{root}.mlp.{m}" for m in ("gate", "shared_expert.down_proj", "shared_expert.gate_proj",
                                              "shared_expert.up_proj", "shared_expert_gate")]
    names += ["mtp.fc"] + [f"mtp.layers.0.mlp.{m}" for m in ("gate", "shared_expert.down_proj",
                                                             "shared_expert.gate_proj", "shared_expert.up_proj",
                                                             "shared_expert_gate")]
    return names + [f"mtp.layers.0.self_attn.{p}" for p in ("k_proj", "o_proj", "q_proj", "v_proj")]


Q38_2P4T_FP8 = dict(Q38_2P4T, quantization_config={
    "quant_method": "fp8", "activation_scheme": "dynamic", "weight_per_tensor": False, "act_per_tensor": False,
    "weight_block_size": [128, 128], "modules_to_not_convert": _fp8_not_converted()})

#: the index's metadata.total_size, all 1609 tensors BF16 (the shape manifest's dtypes)
INDEX_TOTAL_SIZE = 4_892_365_451_008

#: Qwen/Qwen3.8-27B config.json (revision 1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0): InternLM xtuner's
#: tests of its Qwen3.8-27B export assert these text_config / vision_config fields against the official file (code
#: index id 67487971817; wejoncy/sfllm tests/fixtures/qwen3_8 pins the same revision: architectures
#: Qwen3_5ForConditionalGeneration, text output_gate_type "swish"); the token ids as Qwen3.5's
Q38_27B = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "tie_word_embeddings": False,
    "image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
    "text_config": {
        "attention_bias": False, "attention_dropout": 0.0, "attn_output_gate": True, "bos_token_id": 248044,
        "dtype": "bfloat16", "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256,
        "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 17408,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(64)],
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 48, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 262144, "model_type": "qwen3_5_text", "mtp_num_hidden_layers": 1,
        "mtp_use_dedicated_embeddings": False, "num_attention_heads": 24, "num_hidden_layers": 64,
        "num_key_value_heads": 4, "output_gate_type": "swish", "pad_token_id": None, "partial_rotary_factor": 0.25,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10], "partial_rotary_factor": 0.25,
                            "rope_theta": 10_000_000.0, "rope_type": "default"},
        "tie_word_embeddings": False, "use_cache": True, "vocab_size": 248320},
    "vision_config": {
        "deepstack_visual_indexes": [], "depth": 27, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152,
        "in_channels": 3, "initializer_range": 0.02, "intermediate_size": 4304, "model_type": "qwen3_5_vision",
        "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 5120, "patch_size": 16,
        "spatial_merge_size": 2, "temporal_patch_size": 2},
}


def spec(cfg: dict):
    return parse_config(copy.deepcopy(cfg), where="config.json")


# ---- Qwen3.8-2.4T-A95B ----------------------------------------------------------------------------------------------

def mtp_from_manifest() -> int:
    """The 19 mtp.* tensors of the shape manifest (all BF16): fc [8192, 16384]; mtp.norm, pre_fc_norm_embedding,
    pre_fc_norm_hidden [8192]; mtp.layers.0: q_proj [32768, 8192], k_proj / v_proj [1024, 8192], o_proj
    [8192, 16384], q_norm / k_norm [256], input / post_attention layernorms [8192], experts.gate_up_proj
    [512, 4096, 8192], experts.down_proj [512, 8192, 2048], gate [512, 8192], shared_expert gate / up [2048, 8192],
    down [8192, 2048], shared_expert_gate [1, 8192]."""
    return (8192 * 16384 + 3 * 8192
            + 32768 * 8192 + 2 * 1024 * 8192 + 8192 * 16384 + 2 * 256 + 2 * 8192
            + 512 * 4096 * 8192 + 512 * 8192 * 2048 + 512 * 8192 + 3 * 2048 * 8192 + 8192)


def test_2p4t_equals_its_index_total_size():
    p = count_params(spec(Q38_2P4T))
    assert p.mtp == mtp_from_manifest() == 26_378_027_520
    # every tensor BF16: two bytes a parameter, the checkpoint's MTP module included
    assert 2 * (p.total + p.mtp) == INDEX_TOTAL_SIZE
    assert p.total == 2_419_804_697_984
    # "A95B": the card's 95B activated
    assert round(p.active / 1e9) == 95


def test_2p4t_equals_transformers():
    """transformers builds no MTP module: its count is the index's less the manifest's mtp.* tensors."""
    p = count_params(spec(Q38_2P4T))
    assert hf_param_count(Q38_2P4T) == p.total == INDEX_TOTAL_SIZE // 2 - mtp_from_manifest()


def test_2p4t_cache_and_state_by_hand():
    """23 full-attention layers cache K and V (4 heads of 256); each of the 69 Gated DeltaNet layers keeps a conv
    window of (2·16·128 + 128·128) channels × 3 and 128 value heads of 128 × 128 fp32 (mamba_ssm_dtype)."""
    s = spec(Q38_2P4T)
    assert [layer.mixer.kind.value for layer in s.layers].count("gated_deltanet") == 69
    cache = kv_cache(s, BF16, BF16)
    assert cache.bytes_per_token == 23 * 2 * 4 * 256 * 2 == 94_208
    conv, recurrent = (2 * 16 * 128 + 128 * 128) * 3 * 2, 128 * 128 * 128 * 4
    assert cache.state_bytes_per_sequence == 69 * (conv + recurrent) == 587_292_672


def test_2p4t_fp8_keeps_the_unconverted_deltanet_projections_in_bf16():
    """The -FP8 release leaves model.layers.N.linear_attn.* in BF16 (modules_to_not_convert names the checkpoint's
    module, ours is ``mixer``): only the routed experts are FP8, so the weights are the experts' FP8 bytes plus two
    bytes for every other parameter."""
    s = spec(Q38_2P4T_FP8)
    fmt, _ = weight_format(s)
    deltanet = [t for t in s.layer_tensors(0) if ".mixer." in t.name]
    assert {t.name.rsplit(".", 2)[-2] for t in deltanet} >= {"in_proj_qkv", "in_proj_z", "out_proj"}
    assert all(fmt.tensor_bytes(t) == 2 * t.numel for t in deltanet)
    p = count_params(s)
    experts = fmt.model_bytes(s, "expert")
    assert experts < 1.01 * p.experts  # one byte a weight and its block scales
    assert fmt.model_bytes(s) == experts + 2 * (p.total - p.experts)


# ---- Qwen3.8-27B ----------------------------------------------------------------------------------------------------

def test_27b_equals_transformers():
    s = spec(Q38_27B)
    p = count_params(s)
    assert p.total == unique_param_count(hf_model(Q38_27B)) == 27_356_728_560
    # the same model as Qwen3.5-27B: output_gate_type changes no parameter
    plain = copy.deepcopy(Q38_27B)
    del plain["text_config"]["output_gate_type"]
    assert count_params(spec(plain)).total == p.total
    assert s.numerics.runtime_unsupported == ""  # swish is silu: verify runs it


# ---- output_gate_type -----------------------------------------------------------------------------------------------

def test_sigmoid_gate_counts_the_same_and_verify_refuses_it():
    cfg = copy.deepcopy(Q38_27B)
    cfg["text_config"]["output_gate_type"] = "sigmoid"
    s = spec(cfg)
    assert count_params(s).total == count_params(spec(Q38_27B)).total
    assert "sigmoid" in s.numerics.runtime_unsupported
    model = pytest.importorskip("planner.runtime.model", reason="verify's refusal needs the runtime (torch)")
    with pytest.raises(RuntimeUnavailableError, match="sigmoid Gated DeltaNet output gate"):
        model.check_supported(s)


def test_unknown_gate_is_one_error(tmp_path):
    with pytest.raises(ConfigError, match="output_gate_type"):
        spec(dict(Q38_2P4T, output_gate_type="gelu"))
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps(dict(Q38_2P4T, output_gate_type="gelu")))
    run("analyze", str(bad)).assert_error("output_gate_type", "silu, swish or sigmoid")


# ---- the qwen3_8* names ---------------------------------------------------------------------------------------------

def renamed(cfg: dict, top: str, text: str | None = None) -> dict:
    cfg = copy.deepcopy(cfg)
    cfg["model_type"] = top
    if text is not None:
        cfg["text_config"]["model_type"] = text
    return cfg


@pytest.mark.parametrize("top,text", [("qwen3_8", "qwen3_8_text"), ("qwen3_8", None)])
def test_qwen3_8_wrapper_reads_as_qwen3_5(top, text):
    cfg = renamed(Q38_27B, top, text)
    if text is None:
        del cfg["text_config"]["model_type"]
    s = spec(cfg)
    assert count_params(s).total == count_params(spec(Q38_27B)).total
    assert count_params(s).mtp == count_params(spec(Q38_27B)).mtp
    assert any("qwen3_8" in c and "Qwen3.5" in c for c in s.caveats)


def test_qwen3_8_flat_reads_as_qwen3_5_text():
    flat = dict(Q38_27B["text_config"], model_type="qwen3_8", architectures=["Qwen3_8ForCausalLM"])
    ref = dict(Q38_27B["text_config"])
    assert count_params(spec(flat)).total == count_params(spec(ref)).total
    assert count_params(spec(flat)).vision == 0


@pytest.mark.parametrize("mt", ["qwen3_8_moe", "qwen3_8_moe_text"])
def test_qwen3_8_moe_flat_reads_as_qwen3_5_moe(mt):
    s = spec(dict(Q38_2P4T, model_type=mt, architectures=["Qwen3_8MoeForCausalLM"]))
    p = count_params(s)
    assert 2 * (p.total + p.mtp) == INDEX_TOTAL_SIZE
    # an absent field means what transformers' Qwen3.5-MoE class says (its defaults: 256 experts of 512)
    sparse = {k: v for k, v in Q38_2P4T.items() if k not in ("num_experts", "moe_intermediate_size")}
    assert count_params(spec(dict(sparse, model_type=mt))).total == \
        count_params(spec(dict(sparse, model_type="qwen3_5_moe_text"))).total


def test_qwen3_8_qad_is_refused_by_name():
    with pytest.raises(UnsupportedModelError, match="qwen3_8_qad.*qwen4_exp"):
        spec({"architectures": ["Qwen3_8ForCausalLM"], "model_type": "qwen3_8_qad", "hidden_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256})


def tiny(cfg: dict, **kw) -> dict:
    """``cfg`` shrunk to a CPU-sized model of the same structure (8 layers, 2 of them full attention)."""
    small = dict(cfg, hidden_size=64, num_hidden_layers=8, vocab_size=256, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                 linear_value_head_dim=16, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                 shared_expert_intermediate_size=32, max_position_embeddings=512,
                 layer_types=["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(8)])
    return dict(small, **kw)


def test_qwen3_8_moe_verify_self_checks_pass(tmp_path):
    pytest.importorskip("torch", reason="verify runs the model")
    out = verify_self_checks(tmp_path, tiny(Q38_2P4T, model_type="qwen3_8_moe"))
    assert out["checks"]["params"]["predicted"] == count_params(spec(tiny(Q38_2P4T))).total


def test_2p4t_trace_and_serve_run(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(Q38_2P4T))
    assert run("trace", str(path), "--context", "2000", "--hardware", "h100-sxm").code == 0
    r = run("serve", str(path), "--hardware", "h100-sxm", "--input-len", "1024", "--output-len", "128")
    assert r.code == 0, r.err
    assert "does not fit" in r.out + r.err  # 4.5 TiB of BF16 weights: no tensor-parallel degree on H100s holds it
