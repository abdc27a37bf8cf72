"""Quantized checkpoints: stored weight bytes module by module, checked against an independent walk of
the transformers model's parameters, and against a published checkpoint size."""

import json
import math
import struct

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from tests.clirun import run
from tests.conftest import load_bundled_config
from tests.oracle import hf_model

TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "torch_dtype": "bfloat16"}


def weights(cfg, **opts):
    return analyze(parse_config(cfg), Options(context=0, **opts))


def cdiv(a, b):
    return -(-a // b)


def walk(cfg, convert, matrix_bytes):
    """Σ over the transformers model's parameters: matrix_bytes(out, in) for converted 2-D weights (each
    expert's gate and up apart), 2 bytes per element otherwise."""
    model = hf_model({k: v for k, v in cfg.items() if k != "quantization_config"})
    total = 0
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        if name.endswith("experts.gate_up_proj") and convert(name):
            e, rows, cols = shape
            if cfg.get("model_type") == "gpt_oss":  # stored (E, H, 2I): in = H
                rows, cols = cols, rows
            total += e * 2 * matrix_bytes(rows // 2, cols)
        elif name.endswith("experts.down_proj") and convert(name):
            e, rows, cols = shape
            if cfg.get("model_type") == "gpt_oss":
                rows, cols = cols, rows
            total += e * matrix_bytes(rows, cols)
        elif len(shape) == 2 and convert(name):
            total += matrix_bytes(*shape)
        else:
            total += 2 * p.numel()
    return total


def linear_in_layers(name):
    return ".layers." in name and name.endswith("_proj.weight") or name.endswith("experts.gate_up_proj") \
        or name.endswith("experts.down_proj")


def test_fp8_block_scales_with_modules_to_not_convert():
    cfg = load_bundled_config("Qwen/Qwen3-30B-A3B-FP8")
    q = cfg["quantization_config"]
    assert q["quant_method"] == "fp8" and q["weight_block_size"] == [128, 128]
    skip = set(q["modules_to_not_convert"])

    def convert(name):
        module = name.rsplit(".", 1)[0]
        return linear_in_layers(name) and module not in skip

    # Qwen's FP8 releases store weight_scale_inv in 16 bits (tests/test_quant_real_audit2.py): 2 bytes a block
    expected = walk(cfg, convert, lambda o, i: o * i + cdiv(o, 128) * cdiv(i, 128) * 2)
    assert weights(cfg).weights_bytes == expected


def test_mxfp4_gpt_oss_matches_published_checkpoint():
    cfg = load_bundled_config("openai/gpt-oss-20b")
    expected = walk(cfg, lambda n: "experts" in n and not n.endswith("_bias"),
                    lambda o, i: o * i // 2 + o * i // 32)
    a = weights(cfg)
    assert a.weights_bytes == expected
    # model.safetensors.index.json metadata.total_size of openai/gpt-oss-20b
    assert a.weights_bytes == 13_761_264_768


@pytest.mark.parametrize("method,qc,matrix", [
    ("awq", {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
     lambda o, i: o * i // 2 + cdiv(i, 128) * o * 2 + cdiv(i, 128) * o // 2),
    ("awq-symmetric", {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": False},
     lambda o, i: o * i // 2 + cdiv(i, 64) * o * 2),
    ("gptq", {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
     lambda o, i: o * i // 2 + cdiv(i, 128) * o * 2 + cdiv(i, 128) * o // 2 + 4 * i),
    ("gptq-8bit-one-group", {"quant_method": "gptq", "bits": 8, "group_size": -1},
     lambda o, i: o * i + o * 2 + o + 4 * i),
    ("bnb-nf4-double", {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                        "bnb_4bit_use_double_quant": True},
     # packed + uint8 absmax + fp32 nested_absmax + 256-entry nested_quant_map + 16-entry quant_map (nested_offset
     # lives in the quant_state JSON: tests/test_quant_real_audit2.py)
     lambda o, i: o * i // 2 + cdiv(o * i, 64) + cdiv(cdiv(o * i, 64), 256) * 4 + 256 * 4 + 64),
    ("bnb-int8", {"quant_method": "bitsandbytes", "load_in_8bit": True}, lambda o, i: o * i + 4 * o),
    ("fbgemm-fp8", {"quant_method": "fbgemm_fp8"}, lambda o, i: o * i + 4 * o),
])
def test_int_and_fp8_formats_on_a_tiny_llama(method, qc, matrix):
    cfg = dict(TINY, quantization_config=qc)
    expected = walk(cfg, linear_in_layers, matrix)
    assert weights(cfg).weights_bytes == expected


def test_modules_to_not_convert_with_wildcards():
    qc = {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["model.layers.*.self_attn"]}
    cfg = dict(TINY, quantization_config=qc)
    expected = walk(cfg, lambda n: linear_in_layers(n) and "self_attn" not in n,
                    lambda o, i: o * i // 2 + cdiv(i, 128) * o * 2 + cdiv(i, 128) * o // 2)
    assert weights(cfg).weights_bytes == expected


def test_unknown_method_is_a_caveat_not_a_silent_number():
    cfg = dict(TINY, quantization_config={"quant_method": "hqq_super", "bits": 3})
    a = weights(cfg)
    assert any("hqq_super" in c for c in a.spec.caveats)
    assert a.weights_bytes == 2 * a.params.total


def test_bad_quantization_fields_are_errors(tmp_path):
    cfg = dict(TINY, quantization_config={"quant_method": "awq", "bits": 5})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    run("analyze", str(tmp_path)).assert_error("quantization_config.bits")


def test_dtype_overrides_quantization_and_says_so():
    cfg = load_bundled_config("openai/gpt-oss-20b")
    a = weights(cfg, dtype="bf16")
    assert a.weights_bytes == 2 * a.params.total
    assert any("overrides" in n for n in a.notes)


def test_gptq_moe_reconstruction_keeps_routers_in_fp16():
    from tests.conftest import DATA

    cfg = json.loads((DATA / "Qwen--Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4.json").read_text())
    a = weights(cfg)
    q = cfg["quantization_config"]
    g = q["group_size"]

    def convert(name):
        return linear_in_layers(name) and "shared_expert_gate" not in name

    expected = walk(cfg, convert, lambda o, i: o * i // 2 + cdiv(i, g) * o * 2 + cdiv(i, g) * o // 2 + 4 * i)
    assert a.weights_bytes == expected


# ---- checkpoint reconciliation -------------------------------------------------------------------

def write_safetensors(path, tensors):
    """A safetensors file with the given {name: (dtype, shape)} headers and zero data."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = math.prod(shape) * {"BF16": 2, "F32": 4, "U8": 1}[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)


def test_checkpoint_reconciliation(tmp_path):
    cfg = dict(TINY)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = hf_model(cfg)
    tensors = {n: ("BF16", tuple(p.shape)) for n, p in model.named_parameters()}
    write_safetensors(tmp_path / "model.safetensors", tensors)
    d = run("analyze", str(tmp_path), "--json").json
    assert d["checkpoint"]["bytes"] == d["memory"]["weights_bytes"] and d["checkpoint"]["difference"] == 0
    assert d["checkpoint"]["dtypes"] == {"BF16": d["memory"]["weights_bytes"]}
    assert not any("checkpoint" in c for c in d["caveats"])
    # a checkpoint in fp32 is twice the computed bf16 bytes: a caveat
    write_safetensors(tmp_path / "model.safetensors", {n: ("F32", s) for n, (_, s) in tensors.items()})
    d = run("analyze", str(tmp_path), "--json").json
    assert d["checkpoint"]["difference"] == pytest.approx(1.0)
    assert any("checkpoint" in c for c in d["caveats"])


def test_checkpoint_index_only(tmp_path):
    cfg = dict(TINY)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    a = weights(cfg)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": a.weights_bytes},
                                                                       "weight_map": {}}))
    d = run("analyze", str(tmp_path), "--json").json
    assert d["checkpoint"]["bytes"] == a.weights_bytes


def test_corrupt_safetensors_is_ignored(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 20)
    r = run("analyze", str(tmp_path), "--json")
    assert r.code == 0 and "checkpoint" not in r.json
