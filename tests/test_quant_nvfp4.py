"""FP4 / FP8 serving formats of 2025-26: NVIDIA ModelOpt (NVFP4, FP8; config.json's ``quantization_config`` and
the older sidecar ``hf_quant_config.json``), compressed-tensors NVFP4 / MXFP4, AMD Quark (FP8, MXFP4) and Intel
auto-round. Stored bytes are checked against hand counts written from the tensors each format stores (the
layouts in ``analysis/quant.py``'s docstring, from vLLM's ``create_weights``), and against the tensor list of a
real checkpoint's safetensors header."""

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.hardware.profiles import load_profile
from planner.hardware.serve import StepModel
from tests.clirun import run
from tests.conftest import load_bundled_config

TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "torch_dtype": "bfloat16"}

# Llama-3.1-8B by hand: 32 layers of q, k, v, o, gate, up, down as (out, in); untied 128256 x 4096 embedding and
# lm_head; 8,030,261,248 parameters (meta-llama/Llama-3.1-8B's model card and safetensors: 16,060,522,496 bytes)
LLAMA8B_PARAMS = 8_030_261_248
LLAMA8B_LAYER = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]


def weights(cfg, **opts):
    return analyze(parse_config(cfg), Options(context=0, **opts))


def llama8b(qc):
    cfg = load_bundled_config("meta-llama/Llama-3.1-8B")
    assert cfg["hidden_size"] == 4096 and cfg["num_hidden_layers"] == 32 and cfg["vocab_size"] == 128256
    return dict(cfg, quantization_config=qc)


def llama8b_bytes(matrix, layers=range(32), skip_attn=()):
    """bf16 bytes of every parameter, with each quantized layer matrix replaced by ``matrix(out, in)``."""
    total = 2 * LLAMA8B_PARAMS
    for i in layers:
        for k, (o, n) in enumerate(LLAMA8B_LAYER):
            if k < 4 and i in skip_attn:
                continue
            total += matrix(o, n) - 2 * o * n
    return total


def nvfp4(extra):
    """ModelOpt / compressed-tensors NVFP4 matrix: uint8 [out, in/2] + fp8 [out, in/16] + ``extra`` fp32 scalars."""
    return lambda o, i: o * i // 2 + o * (i // 16) + 4 * extra


# ---- NVIDIA ModelOpt ------------------------------------------------------------------------------


def test_modelopt_nvfp4_by_hand_on_llama_8b():
    # config.json form written by ModelOpt >= 0.29 (nvidia/*-FP4): quant_method modelopt, quant_algo, group_size,
    # ignore; every matrix: weight, weight_scale, weight_scale_2 and input_scale
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "kv_cache_scheme": None,
          "ignore": ["lm_head"]}
    a = weights(llama8b(qc))
    assert a.weights_bytes == llama8b_bytes(nvfp4(2)) == 6_027_749_120
    assert a.fmt.compute.name == "fp4"
    # W4A16: no input_scale, matmuls in the activations' dtype
    a16 = weights(llama8b(dict(qc, quant_algo="W4A16_NVFP4")))
    assert a16.weights_bytes == llama8b_bytes(nvfp4(1)) == a.weights_bytes - 4 * 7 * 32
    assert a16.fmt.compute.name == "bf16"


def test_modelopt_fp8_variants_by_hand():
    fp8 = weights(llama8b({"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"]}))
    assert fp8.weights_bytes == llama8b_bytes(lambda o, i: o * i + 8)  # weight_scale + input_scale, fp32 scalars
    assert fp8.fmt.compute.name == "fp8"
    pc = weights(llama8b({"quant_method": "modelopt", "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"}))
    assert pc.weights_bytes == llama8b_bytes(lambda o, i: o * i + 4 * o)
    pb = weights(llama8b({"quant_method": "modelopt", "quant_algo": "fp8_pb_wo"}))  # lowercase as ModelOpt may write it
    assert pb.weights_bytes == llama8b_bytes(lambda o, i: o * i + -(-o // 128) * -(-i // 128) * 4)


def test_modelopt_exclude_wildcards_follow_vllm():
    # "model.layers.0.self_attn*" (fnmatch, as vLLM's ModelOptQuantConfigBase.is_layer_excluded) keeps layer 0's
    # attention in bf16, and nothing else
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
          "ignore": ["lm_head", "model.layers.0.self_attn*"]}
    assert weights(llama8b(qc)).weights_bytes == llama8b_bytes(nvfp4(2), skip_attn=(0,))


# nvidia/DeepSeek-R1-0528-FP4: a safetensors header listing of its layer 0 (a public repository's notes, found by
# find_string "layers.0.mlp.down_proj.weight_scale_2"): down_proj.weight [7168, 9216] U8, weight_scale
# [7168, 1152] F8_E4M3, weight_scale_2 [] F32, input_scale [] F32; gate_proj / up_proj weight [18432, 3584] U8,
# weight_scale [18432, 448] F8_E4M3 and the two scalars; every self_attn tensor BF16 (q_a_proj [1536, 7168], ...).
DSR1_FP4_QUANT = {"producer": {"name": "modelopt"},
                  "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                                   "exclude_modules": ["lm_head"] + [f"model.layers.{i}.self_attn*" for i in range(62)]}}


def dsr1_fp4_config():
    cfg = load_bundled_config("deepseek-ai/DeepSeek-R1")
    return {k: v for k, v in cfg.items() if k != "quantization_config"}


def test_deepseek_r1_fp4_layer0_matches_the_checkpoint_header(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(dsr1_fp4_config()))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(DSR1_FP4_QUANT))
    from planner.analysis.config import read_config_file

    a = analyze(parse_config(read_config_file(tmp_path)), Options(context=0))
    by_name = {t.name: a.fmt.tensor_bytes(t) for t in a.spec.layer_tensors(0)}
    assert by_name["model.layers.0.mlp.down_proj.weight"] == 7168 * 9216 + 7168 * 1152 + 4 + 4
    assert by_name["model.layers.0.mlp.gate_proj.weight"] == 18432 * 3584 + 18432 * 448 + 4 + 4
    assert by_name["model.layers.0.self_attn.q_a_proj.weight"] == 2 * 1536 * 7168


def test_deepseek_r1_fp4_total_by_hand_through_the_cli(tmp_path):
    cfg = dsr1_fp4_config()
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(DSR1_FP4_QUANT))
    r = run("analyze", str(tmp_path), "--json")
    assert r.code == 0, r.err
    j = r.json
    assert j["model"]["quantization"]["quant_method"] == "modelopt NVFP4"
    # by hand: every MLP matrix of the 61 decoder layers NVFP4 (3 dense layers of 18432, 58 MoE layers of 256
    # routed experts and one shared expert of 2048), everything else bf16 (the MTP layer is not in the total)
    h, f, m, e = 7168, 18432, 2048, 256
    mlp = lambda inter: [(inter, h), (inter, h), (h, inter)]  # noqa: E731
    quantized = 3 * mlp(f) + 58 * (e + 1) * mlp(m)
    bf16 = 2 * weights(cfg).params.total
    expected = bf16 + sum(nvfp4(2)(o, i) - 2 * o * i for o, i in quantized)
    assert j["memory"]["weights_bytes"] == expected == 396_678_147_512
    # before: config.json alone sized the same checkpoint at bf16
    assert weights(cfg).weights_bytes == bf16


def test_hf_quant_config_sidecar_equals_the_inline_form(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.23.0"},
         "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                          "exclude_modules": ["lm_head"]}}))
    side = run("analyze", str(tmp_path), "--json").json["memory"]["weights_bytes"]
    inline = weights(dict(TINY, quantization_config={"quant_method": "modelopt", "quant_algo": "NVFP4",
                                                     "group_size": 16, "ignore": ["lm_head"]})).weights_bytes
    assert side == inline
    # a config.json that has its own quantization_config keeps it
    (tmp_path / "config.json").write_text(json.dumps(dict(TINY, quantization_config={"quant_method": "fbgemm_fp8"})))
    assert run("analyze", str(tmp_path), "--json").json["model"]["quantization"]["method"] == "fp8_channel"


def test_modelopt_algorithms_not_sized_are_caveats():
    for algo in ("MIXED_PRECISION", "MXFP8", "W4A8_AWQ"):
        a = weights(dict(TINY, quantization_config={"quant_method": "modelopt", "quant_algo": algo}))
        assert any(algo in c for c in a.spec.caveats), algo
        assert a.weights_bytes == 2 * a.params.total


# ---- compressed-tensors NVFP4 / MXFP4 -------------------------------------------------------------

# llm-compressor's NVFP4 preset (W4A4), as RedHatAI/*-NVFP4 config.json carry it
CT_NVFP4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "quantization_status": "compressed",
            "ignore": ["lm_head"], "kv_cache_scheme": None,
            "config_groups": {"group_0": {
                "targets": ["Linear"], "format": "nvfp4-pack-quantized",
                "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                            "symmetric": True, "dynamic": False, "observer": "minmax"},
                "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                      "symmetric": True, "dynamic": "local", "observer": "minmax"},
                "output_activations": None}}}


def test_compressed_tensors_nvfp4_w4a4_and_w4a16():
    a = weights(llama8b(CT_NVFP4))
    # weight_packed + fp8 weight_scale per 16 + weight_global_scale + input_global_scale
    assert a.weights_bytes == llama8b_bytes(nvfp4(2))
    assert a.fmt.compute.name == "fp4"
    # before: strategy tensor_group read as one 16-bit scale per output channel
    assert a.weights_bytes - llama8b_bytes(lambda o, i: o * i // 2 + 2 * o) == 32 * sum(
        o * (i // 16) + 8 - 2 * o for o, i in LLAMA8B_LAYER)
    g = json.loads(json.dumps(CT_NVFP4))
    g["config_groups"]["group_0"]["input_activations"] = None  # W4A16 (e.g. the Qwen3-Next NVFP4 W4A16 configs)
    a16 = weights(llama8b(g))
    assert a16.weights_bytes == llama8b_bytes(nvfp4(1))
    assert a16.fmt.compute.name == "bf16"


def test_compressed_tensors_mxfp4():
    qc = json.loads(json.dumps(CT_NVFP4))
    qc["format"] = "mxfp4-pack-quantized"
    grp = qc["config_groups"]["group_0"]
    grp["format"] = "mxfp4-pack-quantized"
    grp["weights"].update(strategy="group", group_size=32)
    grp["input_activations"] = None
    a = weights(llama8b(qc))
    assert a.weights_bytes == llama8b_bytes(lambda o, i: o * i // 2 + o * (i // 32))  # uint8 E8M0 scales


def test_compressed_tensors_ignore_regex():
    qc = dict(CT_NVFP4, ignore=["lm_head", "re:.*self_attn\\..*"])
    assert weights(llama8b(qc)).weights_bytes == llama8b_bytes(nvfp4(2), skip_attn=range(32))
    qc = dict(CT_NVFP4, ignore=["re:model\\.layers\\.(0|31)\\.self_attn\\..+"])
    assert weights(llama8b(qc)).weights_bytes == llama8b_bytes(nvfp4(2), skip_attn=(0, 31))


def test_compressed_tensors_fp4_unknown_layouts_are_caveats():
    qc = json.loads(json.dumps(CT_NVFP4))
    qc["config_groups"]["group_0"]["weights"]["strategy"] = "channel"
    a = weights(dict(TINY, quantization_config=qc))
    assert any("float4" in c for c in a.spec.caveats)
    assert a.weights_bytes == 2 * a.params.total


# ---- AMD Quark, Intel auto-round -----------------------------------------------------------------


def quark(weight, inputs=None, **extra):
    return dict({"quant_method": "quark", "export": {"weight_format": "real_quantized", "pack_method": "reorder"},
                 "global_quant_config": {"weight": weight, "input_tensors": inputs, "output_tensors": None,
                                         "bias": None},
                 "exclude": ["lm_head"], "layer_quant_config": {}, "layer_type_quant_config": {}}, **extra)


FP8_PT = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False, "ch_axis": None, "group_size": None}
MX = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "ch_axis": -1, "scale_format": "e8m0",
      "is_dynamic": False}


def test_quark_fp8_and_mxfp4_by_hand():
    # amd/Llama-3.1-8B-Instruct-FP8-KV: fp8 weights and static per-tensor fp8 inputs
    a = weights(llama8b(quark(FP8_PT, FP8_PT)))
    assert a.weights_bytes == llama8b_bytes(lambda o, i: o * i + 8)
    assert a.fmt.compute.name == "fp8"
    pc = weights(llama8b(quark(dict(FP8_PT, qscheme="per_channel", ch_axis=0), dict(FP8_PT, qscheme="per_token",
                                                                                     is_dynamic=True))))
    assert pc.weights_bytes == llama8b_bytes(lambda o, i: o * i + 4 * o)
    # amd/*-MXFP4: OCP MX weights and (dynamic) activations
    mx = weights(llama8b(quark(MX, dict(MX, is_dynamic=True))))
    assert mx.weights_bytes == llama8b_bytes(lambda o, i: o * i // 2 + o * (i // 32))
    assert mx.fmt.compute.name == "fp4"


def test_quark_schemes_not_sized_are_caveats():
    a = weights(dict(TINY, quantization_config=quark({"dtype": "int4", "qscheme": "per_group", "group_size": 128})))
    assert any("quark weight scheme int4" in c for c in a.spec.caveats)
    assert a.weights_bytes == 2 * a.params.total
    b = weights(dict(TINY, quantization_config=quark(MX, layer_quant_config={"*mlp*": {"weight": FP8_PT}})))
    assert any("layer_quant_config" in c for c in b.spec.caveats)


@pytest.mark.parametrize("packing,other", [
    ("auto_round:auto_gptq", {"quant_method": "gptq", "bits": 4, "group_size": 128}),
    ("auto_gptq", {"quant_method": "gptq", "bits": 4, "group_size": 128}),
    ("auto_round:auto_awq", {"quant_method": "awq", "bits": 4, "group_size": 128}),
])
def test_auto_round_is_sized_as_its_packing(packing, other):
    qc = {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True, "packing_format": packing}
    assert weights(dict(TINY, quantization_config=qc)).weights_bytes == \
        weights(dict(TINY, quantization_config=other)).weights_bytes
    a = weights(dict(TINY, quantization_config=dict(qc, packing_format="auto_round")))
    assert any("auto_round" in c for c in a.spec.caveats)


# ---- timing: the dtype the matmuls run in --------------------------------------------------------


def test_nvfp4_is_weight_only_without_fp4_tensor_cores():
    a = weights(llama8b(CT_NVFP4))
    assert StepModel.weight_only_bits_of(a, load_profile("h100-sxm")) == 4  # Marlin W4A16 on Hopper
    assert StepModel.weight_only_bits_of(a, load_profile("b200")) is None  # FP4 tensor cores


def ct8(w_type, a_type, strategy="channel", dynamic=True):
    """A compressed-tensors 8-bit scheme as llm-compressor writes it: FP8-dynamic (float / float, channel + token),
    FP8 static (float / float, tensor + tensor), W8A8-INT8 (int / int); ``a_type`` None: no input activations
    (W8A16)."""
    grp = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": w_type, "strategy": strategy,
                                              "symmetric": True, "dynamic": False}}
    if a_type is not None:
        grp["input_activations"] = {"num_bits": 8, "type": a_type, "symmetric": True, "dynamic": dynamic,
                                    "strategy": "token" if dynamic else "tensor"}
    return {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {"group_0": grp}}


def test_compressed_tensors_w8a8_runs_8_bit_matmuls_and_w8a16_is_weight_only():
    """vLLM runs compressed-tensors W8A8 (CompressedTensorsW8A8Fp8 / W8A8Int8: cutlass_scaled_mm) in 8 bits; only
    without 8-bit input activations are the weights dequantized into 16-bit GEMMs. Before, every compressed-tensors
    8-bit checkpoint (RedHatAI's FP8-dynamic among them) was priced as a weight-only kernel."""
    h100 = load_profile("h100-sxm")
    fp8 = weights(llama8b(ct8("float", "float")))
    assert fp8.fmt.compute.name == "fp8" and StepModel.weight_only_bits_of(fp8, h100) is None
    int8 = weights(llama8b(ct8("int", "int")))
    assert int8.fmt.compute.name == "int8" and StepModel.weight_only_bits_of(int8, h100) is None
    w8a16 = weights(llama8b(ct8("int", None)))
    assert w8a16.fmt.compute.name == "bf16" and StepModel.weight_only_bits_of(w8a16, h100) == 8
    # the bundled RedHatAI Llama-4-Scout FP8-dynamic checkpoint, and the --dtype fp8 recipe it is the model of
    scout = analyze(parse_config(load_bundled_config("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")),
                    Options(context=0))
    assert scout.fmt.compute.name == "fp8" and StepModel.weight_only_bits_of(scout, h100) is None
    # one 16-bit scale per output channel, as the --dtype fp8 recipe (the same llm-compressor scheme) sizes it
    recipe = weights(load_bundled_config("meta-llama/Llama-3.1-8B"), dtype="fp8")
    assert fp8.weights_bytes == llama8b_bytes(lambda o, i: o * i + 2 * o) == recipe.weights_bytes


def test_compressed_tensors_per_tensor_scales_by_hand():
    """Strategy "tensor" (llm-compressor's static FP8 scheme) stores one weight_scale per matrix, and static input
    activations one input_scale per matrix, not one scale per output channel."""
    static = weights(llama8b(ct8("float", "float", strategy="tensor", dynamic=False)))
    assert static.weights_bytes == llama8b_bytes(lambda o, i: o * i + 2 + 2)
    dyn = weights(llama8b(ct8("float", "float", strategy="tensor")))
    assert dyn.weights_bytes == llama8b_bytes(lambda o, i: o * i + 2)


# ---- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("qc,fragment", [
    ({"quant_method": "modelopt"}, "quantization_config.quant_algo"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 0}, "quantization_config.group_size"),
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "exclude_modules": "lm_head"}},
     "quantization_config.quantization.exclude_modules"),
    (dict(CT_NVFP4, ignore=["re:(("]), "invalid regular expression"),
    ({**CT_NVFP4, "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group"}}}},
     "positive group_size"),
    ({"quant_method": "quark", "global_quant_config": [1]}, "global_quant_config"),
    (quark(dict(MX, group_size="x")), "weight.group_size"),
    ({"quant_method": "auto-round", "bits": 5, "packing_format": "auto_gptq"}, "quantization_config.bits"),
])
def test_bad_fields_are_one_error_line(tmp_path, qc, fragment):
    (tmp_path / "config.json").write_text(json.dumps(dict(TINY, quantization_config=qc)))
    run("analyze", str(tmp_path)).assert_error(fragment)


def test_bad_sidecar_is_one_error_line(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    (tmp_path / "hf_quant_config.json").write_text("{not json")
    run("analyze", str(tmp_path)).assert_error("hf_quant_config.json")


def test_fp8_weights_without_fp8_tensor_cores_are_weight_only_w8a16():
    """FP8 weights on a device whose profile has no fp8 peak (Ampere: A100, RTX 3090) run as weight-only W8A16 (vLLM
    docs, features/quantization/fp8: "FP8 models will run on compute capability >= 7.5 (Turing) as weight-only
    W8A16, utilizing FP8 Marlin"; vllm-project/vllm#5975), so they take the 8-bit weight-only price there; on
    Hopper they stay 8-bit matmuls. Before, an FP8 checkpoint on an A100 was priced at the bf16 compute rate with
    no weight-only term (read at the full 8-bit byte rate). The --dtype fp8 recipe and a compressed-tensors
    FP8-dynamic checkpoint take the same path; int8 W8A8 keeps its int8 matmuls on the A100 (it has int8 tensor
    cores)."""
    a100, h100 = load_profile("a100-80gb"), load_profile("h100-sxm")
    recipe = weights(load_bundled_config("meta-llama/Llama-3.1-8B"), dtype="fp8")
    ct = weights(llama8b(ct8("float", "float")))
    for a in (recipe, ct):
        assert a.fmt.compute.name == "fp8"
        assert StepModel.weight_only_bits_of(a, a100) == 8
        assert StepModel.weight_only_bits_of(a, h100) is None
    int8 = weights(llama8b(ct8("int", "int")))
    assert StepModel.weight_only_bits_of(int8, a100) is None
    nvfp4 = weights(llama8b(CT_NVFP4))
    assert StepModel.weight_only_bits_of(nvfp4, a100) == 4
    # through serve: the weight-only term and the note on the A100, neither on the H100
    out = {hw: run("serve", "meta-llama/Llama-3.1-8B", "--dtype", "fp8", "-H", hw, "--concurrency", "4", "--json").json
           for hw in ("a100-80gb", "h100-sxm")}
    assert out["a100-80gb"]["explain"]["tpot_s"]["weight-only kernels"] > 0
    assert out["h100-sxm"]["explain"]["tpot_s"]["weight-only kernels"] == 0
    assert any("no FP8 tensor cores" in n and "W8A16" in n for n in out["a100-80gb"]["notes"])
    assert not any("tensor cores" in n for n in out["h100-sxm"]["notes"])
