"""Audit of the stored bytes of real quantized checkpoints: planner's weights bytes against published
``model.safetensors.index.json`` ``metadata.total_size`` figures (the exact bytes of all stored tensors), and the
compressed-tensors layouts of real hub ``quantization_config`` blocks against the bytes compressed-tensors itself
writes.

Each residual between planner's figure and a ``total_size`` is a tensor planner does not count, computed here
from its definition (never fitted):

- bitsandbytes 4-bit: each quantized matrix also stores ``weight.quant_state.bitsandbytes__<type>``, a uint8
  tensor holding ``json.dumps`` of the non-tensor fields of ``QuantState.as_dict(packed=True)``
  (bitsandbytes/functional.py: ``{"quant_type", "blocksize", "dtype", "shape"}``), 80 to 82 bytes a matrix.
- DeepSeek-V3: the routers' ``e_score_correction_bias`` buffers (256 values in each of the 58 MoE layers), which
  planner, like transformers' parameter count, leaves out.
"""

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from tests.clirun import run
from tests.conftest import load_bundled_config
from tests.oracle import hf_model


def analysed(cfg):
    return analyze(parse_config(cfg), Options(context=0))


def cdiv(a, b):
    return -(-a // b)


# ---- bitsandbytes NF4: reubzdubz/Molmo7B_D_NF4Quant ------------------------------------------------------------

# github reubzdubz/Molmo7B_D_NF4Quant config.json @ edf464b955f389104b80bd57a9ecf52ce5530552 (verbatim)
MOLMO_NF4 = {
    "architectures": ["MolmoForCausalLM"], "attention_layer_norm": False,
    "auto_map": {"AutoConfig": "config_molmo.MolmoConfig", "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM"},
    "clip_qkv": None, "embedding_size": 152064, "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 37888, "layer_norm_eps": 1e-06, "layer_norm_type": "rms", "max_position_embeddings": 4096,
    "model_type": "molmo", "norm_after": False, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "qkv_bias": True,
    "quantization_config": {
        "_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "float16",
        "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": False,
        "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False,
        "llm_int8_skip_modules": ["model.vision_backbone", "model.transformer.ff_out", "model.transformer.ln_f"],
        "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False, "quant_method": "bitsandbytes"},
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.55.0",
    "use_cache": True, "use_position_ids": True, "vocab_size": 152064, "weight_tying": False,
}
# the same repository's model.safetensors.index.json: metadata
MOLMO_NF4_TOTAL_SIZE = 6_661_964_712
MOLMO_NF4_TOTAL_PARAMETERS = 8_021_025_280


def bnb_quant_state_bytes(shape, dtype="float16", quant_type="nf4", blocksize=64):
    """len of the packed QuantState JSON (bitsandbytes QuantState.as_dict(packed=True), no nested quantization)."""
    return len(json.dumps({"quant_type": quant_type, "blocksize": blocksize, "dtype": dtype, "shape": list(shape)}))


def test_molmo_nf4_matches_total_size_plus_quant_state_blobs():
    a = analysed(MOLMO_NF4)
    assert a.params.total == MOLMO_NF4_TOTAL_PARAMETERS
    h, heads, kv, hd, inter = 3584, 28, 4, 128, 37888
    # Molmo's four quantized matrices a block (modeling_molmo.py: att_proj fused qkv, attn_out, ff_proj fused
    # gate+up, ff_out); the output head (model.transformer.ff_out) and the vision backbone are skipped
    shapes = [((heads + 2 * kv) * hd, h), (h, h), (inter, h), (h, inter // 2)]
    blobs = 28 * sum(bnb_quant_state_bytes(s) for s in shapes)
    assert blobs == 9_128
    assert a.weights_bytes + blobs == MOLMO_NF4_TOTAL_SIZE


# ---- MXFP4: openai/gpt-oss-20b, through the CLI's checkpoint reconciliation ---------------------------------------

def test_gpt_oss_20b_checkpoint_reconciles_to_zero(tmp_path):
    # profiles/models/openai--gpt-oss-20b.json (see profiles/models/SOURCES.md); openai/gpt-oss-20b's
    # model.safetensors.index.json metadata.total_size is 13,761,264,768 (also in tests/test_quant.py)
    (tmp_path / "config.json").write_text(json.dumps(load_bundled_config("openai/gpt-oss-20b")))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 13_761_264_768}, "weight_map": {}}))
    d = run("analyze", str(tmp_path), "--json").json
    assert d["checkpoint"]["bytes"] == 13_761_264_768 == d["memory"]["weights_bytes"]
    assert d["checkpoint"]["difference"] == 0
    # serve's loaded view starts from the same counted bytes (then adds the engine's expert padding and rope cache)
    per_gpu = run("serve", str(tmp_path), "--json").json["memory"]["per_gpu"]
    assert per_gpu["counted_weights_bytes"] == 13_761_264_768
    assert per_gpu["weights_bytes"] >= per_gpu["counted_weights_bytes"]


# ---- AWQ GEMM on DeepSeek-V3 (kvcache-ai/sglang_awq's vendored index) ---------------------------------------------

# github kvcache-ai/sglang_awq model.safetensors.index.json @ 1e697f11a5dac8564650be2d763c77240e6812c9:
# "total_size": 364589799936; qweight / qzeros / scales for every projection of layers 0..60 (the MTP layer 61 is
# listed in separate "mtp_float-*" shards, which that total leaves out). The repository does not carry the
# config.json: it is DeepSeek-V3's (profiles/models/deepseek-ai--DeepSeek-V3.json) with an AutoAWQ GEMM
# quantization_config. Of group sizes 32 / 64 / 128 only 64 comes within a few kilobytes of the total; the
# remaining 29,696 bytes are exactly the 58 MoE layers' e_score_correction_bias buffers (256 values, 16-bit).
DSV3_AWQ_TOTAL_SIZE = 364_589_799_936


def test_deepseek_v3_awq_g64_matches_total_size_plus_router_buffers():
    cfg = dict(load_bundled_config("deepseek-ai/DeepSeek-V3"))
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True,
                                  "version": "gemm"}
    a = analysed(cfg)
    moe_layers = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
    buffers = moe_layers * cfg["n_routed_experts"] * 2
    assert buffers == 29_696
    assert a.weights_bytes + buffers == DSV3_AWQ_TOTAL_SIZE


# ---- GPTQ 4-bit group 128 (AutoGPTQ): Qwen-VL-Chat-Int4 ---------------------------------------------------------

# github x1ngzai/Qwen-VL-Chat-Int4 config.json @ 1cd721a27dd000fc4cf688c6ad58e614da1d600d (verbatim, a copy of
# Qwen/Qwen-VL-Chat-Int4)
QWEN_VL_INT4 = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0,
    "auto_map": {"AutoConfig": "configuration_qwen.QWenConfig", "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel"},
    "bf16": False, "emb_dropout_prob": 0.0, "fp16": True, "fp32": False, "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 22016, "kv_channels": 128, "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192,
    "model_type": "qwen", "no_bias": True, "num_attention_heads": 32, "num_hidden_layers": 32, "onnx_safe": None,
    "quantization_config": {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False,
                            "static_groups": False, "sym": True, "true_sequential": True, "model_name_or_path": None,
                            "model_file_base_name": "model", "quant_method": "gptq"},
    "rotary_emb_base": 10000, "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 2048,
    "tie_word_embeddings": False, "tokenizer_type": "QWenTokenizer", "torch_dtype": "float16",
    "transformers_version": "4.32.0", "use_cache": True, "use_dynamic_ntk": True, "use_flash_attn": "auto",
    "use_logn_attn": True,
    "visual": {"heads": 16, "image_size": 448, "image_start_id": 151857, "layers": 48, "mlp_ratio": 4.9231,
               "output_dim": 4096, "patch_size": 14, "width": 1664},
    "vocab_size": 151936,
}
# the same repository's model.safetensors.index.json: metadata.total_size
QWEN_VL_INT4_TOTAL_SIZE = 9_731_786_240


def test_qwen_vl_gptq_matches_total_size_plus_autogptq_biases():
    """The index lists a bias for every quantized projection (transformer.h.N.mlp.w1.bias, .w2.bias, attn.c_proj.bias,
    mlp.c_proj.bias) although the model has none but c_attn's ("no_bias": true): AutoGPTQ's QuantLinear of that era
    always allocated an fp16 bias. Those 4096 + 11008 + 11008 + 4096 values a layer are the whole residual."""
    a = analysed(QWEN_VL_INT4)
    h, half_inter = 4096, 22016 // 2
    extra_bias = 32 * (h + half_inter + half_inter + h) * 2
    assert extra_bias == 1_933_312
    assert a.weights_bytes + extra_bias == QWEN_VL_INT4_TOTAL_SIZE


# ---- compressed-tensors layouts of real quantization_config blocks ------------------------------------------------

TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16"}


def group(weights, inputs=None, fmt=None):
    g = {"targets": ["Linear"], "weights": weights, "input_activations": inputs, "output_activations": None}
    if fmt:
        g["format"] = fmt
    return g


def ct(g, fmt):
    return {"config_groups": {"group_0": g}, "format": fmt, "ignore": ["lm_head"], "quant_method": "compressed-tensors",
            "quantization_status": "compressed"}


# Sources of the quantization_config blocks (each applied to TINY with ignore ["lm_head"]):
# - GLM-5 W4A16 symmetric group 64, pack-quantized: the config.json pasted in vllm-project/llm-compressor issue #2512
# - W4A16 asymmetric group 128 (int8 zero points), pack-quantized: github fantasylord/Qwen36 config.json
#   @ 2b66ce3136161b757f2edccecb0c31904296c98c, config_groups.group_0
# - FP8-dynamic (channel weights, per-token dynamic inputs), float-quantized: profiles/models/
#   RedHatAI--Llama-4-Scout-17B-16E-Instruct-FP8-dynamic.json
# - INT8_W8A8, FP8_BLOCK, NVFP4, NVFP4A16, MXFP4A16, W8A16 and the static FP8 (FP8 preset): compressed-tensors
#   0.20.1 compressed_tensors/quantization/quant_scheme.py PRESET_SCHEMES, with the format llm-compressor gives them
# expected: the bytes of model.state_dict() after compressed_tensors 0.20.1 ModelCompressor.compress_model on
# transformers' LlamaForCausalLM(TINY) in bf16 (run outside the suite: compressed-tensors is not a dependency),
# and the same figure by hand from the per-matrix layout below.
CT_CASES = {
    "w4a16-sym-g64 (GLM-5 issue)": (
        ct(group({"num_bits": 4, "type": "int", "symmetric": True, "group_size": 64, "strategy": "group",
                  "dynamic": False, "actorder": None, "block_structure": None, "observer": "memoryless_minmax"},
                 fmt="pack-quantized"), "pack-quantized"),
        # weight_packed int32 [o, i/8] + weight_scale bf16 [o, i/64] + weight_shape int64 [2]
        lambda o, i: o * i // 2 + o * (i // 64) * 2 + 16, 1_827_552),
    "w4a16-asym-g128 (Qwen36)": (
        ct(group({"num_bits": 4, "type": "int", "symmetric": False, "group_size": 128, "strategy": "group",
                  "dynamic": False, "zp_dtype": "torch.int8", "observer": "mse"}, fmt="pack-quantized"),
           "pack-quantized"),
        # + weight_zero_point int32 [o/8, i/128] (zero points packed along the output dimension)
        lambda o, i: o * i // 2 + o * (i // 128) * 2 + (o // 8) * (i // 128) * 4 + 16, 1_809_888),
    "fp8-dynamic (Llama-4-Scout)": (
        ct(group({"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel", "dynamic": False},
                 {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "token", "dynamic": True}),
           "float-quantized"),
        lambda o, i: o * i + o * 2, 2_543_616),
    "int8-w8a8": (
        ct(group({"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False},
                 {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}),
           "int-quantized"),
        lambda o, i: o * i + o * 2, 2_543_616),
    "fp8-static-tensor": (
        ct(group({"num_bits": 8, "type": "float", "symmetric": True, "strategy": "tensor", "dynamic": False},
                 {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "tensor", "dynamic": False}),
           "float-quantized"),
        # weight_scale bf16 [1] + input_scale bf16 [1]
        lambda o, i: o * i + 2 + 2, 2_533_944),
    "fp8-block-128": (
        ct(group({"num_bits": 8, "type": "float", "symmetric": True, "strategy": "block", "block_structure": [128, 128],
                  "dynamic": False},
                 {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "group", "group_size": 128,
                  "dynamic": True}), "float-quantized"),
        lambda o, i: o * i + cdiv(o, 128) * cdiv(i, 128) * 2, 2_534_080),
    "nvfp4-w4a4": (
        ct(group({"num_bits": 4, "type": "float", "symmetric": True, "group_size": 16, "strategy": "tensor_group",
                  "dynamic": False, "scale_dtype": "torch.float8_e4m3fn"},
                 {"num_bits": 4, "type": "float", "symmetric": True, "group_size": 16, "strategy": "tensor_group",
                  "dynamic": "local", "scale_dtype": "torch.float8_e4m3fn"}), "nvfp4-pack-quantized"),
        # weight_packed uint8 [o, i/2] + weight_scale fp8 [o, i/16] + weight_global_scale and input_global_scale fp32
        lambda o, i: o * i // 2 + o * i // 16 + 4 + 4, 1_874_544),
    "nvfp4a16": (
        ct(group({"num_bits": 4, "type": "float", "symmetric": True, "group_size": 16, "strategy": "tensor_group",
                  "dynamic": False, "scale_dtype": "torch.float8_e4m3fn"}), "nvfp4-pack-quantized"),
        lambda o, i: o * i // 2 + o * i // 16 + 4, 1_874_488),
    "mxfp4a16": (
        ct(group({"num_bits": 4, "type": "float", "symmetric": True, "group_size": 32, "strategy": "group",
                  "dynamic": False, "scale_dtype": "torch.uint8"}), "mxfp4-pack-quantized"),
        # weight_packed uint8 [o, i/2] + weight_scale uint8 (E8M0) [o, i/32]
        lambda o, i: o * i // 2 + o * i // 32, 1_827_328),
    "w8a16-pack-channel": (
        ct(group({"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}),
           "pack-quantized"),
        lambda o, i: o * i + o * 2 + 16, 2_543_840),
}


def by_hand(matrix):
    """Σ over transformers' LlamaForCausalLM(TINY) parameters: matrix(out, in) for the decoder's projections, 2 bytes
    an element for the rest (embeddings, norms, lm_head)."""
    total = 0
    for name, p in hf_model(TINY).named_parameters():
        if ".layers." in name and name.endswith("_proj.weight"):
            total += matrix(*p.shape)
        else:
            total += 2 * p.numel()
    return total


@pytest.mark.parametrize("case", list(CT_CASES))
def test_compressed_tensors_layouts(case):
    qc, matrix, library_bytes = CT_CASES[case]
    assert by_hand(matrix) == library_bytes
    assert analysed(dict(TINY, quantization_config=qc)).weights_bytes == library_bytes


def test_pack_quantized_counts_the_weight_shape_tensors():
    """Fourteen projections, 16 bytes of weight_shape each: the difference between pack-quantized and the same
    8-bit channel weights in int-quantized format (no weight_shape)."""
    w = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}
    packed = analysed(dict(TINY, quantization_config=ct(group(w), "pack-quantized"))).weights_bytes
    plain = analysed(dict(TINY, quantization_config=ct(group(w), "int-quantized"))).weights_bytes
    assert packed - plain == 14 * 16
