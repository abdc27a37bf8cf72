"""compressed-tensors checkpoints with several config_groups (llm-compressor's ``mixed-precision`` format: FP8
attention beside NVFP4 experts, a few layers kept in FP8, ...): each matrix is sized in the format of the group whose
targets name it. The oracle walks the transformers model's parameters, splits stacked experts into the per-expert
modules a checkpoint stores, assigns each module a group by compressed-tensors' matching rules (``ignore`` first, a
target that names the module exactly or as a ``re:`` pattern matching at its start, then a class-name target
``Linear``; vLLM's ``find_matched_target`` tries names before classes), and sizes it from the formats' published
layouts (vLLM's compressed-tensors schemes' ``create_weights``)."""

from __future__ import annotations

import json
import re

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from tests.clirun import run
from tests.oracle import hf_model

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 2,
         "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "torch_dtype": "bfloat16"}
MOE = {"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000,
       "num_experts": 8, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}

FP8_CHANNEL = {"format": "float-quantized", "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
               "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}
NVFP4_W4A16 = {"format": "nvfp4-pack-quantized",
               "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}
NVFP4_W4A4 = {"format": "nvfp4-pack-quantized",
              "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
              "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                    "dynamic": "local"}}


def fmt_bytes(group: dict, n_out: int, n_in: int) -> int:
    """One stored matrix of ``group``'s format (vLLM's compressed-tensors schemes): FP8 channel: e4m3 weight + a
    16-bit scale per output row; NVFP4: two values a byte + an e4m3 scale per 16 inputs + the fp32
    weight_global_scale (+ the fp32 input_global_scale when activations are 4-bit too)."""
    w = group["weights"]
    if w["num_bits"] == 8:
        return n_out * n_in + 2 * n_out
    a4 = (group.get("input_activations") or {}).get("num_bits") == 4
    return n_out * n_in // 2 + n_out * n_in // 16 + 4 + (4 if a4 else 0)


def matches(name: str, target: str) -> bool:
    return re.match(target[3:], name) is not None if target.startswith("re:") else target == name


def stored_modules(model):
    """(module name, out, in, is nn.Linear) of each stored matrix, the stacked experts split as a checkpoint stores
    them; and the bytes of everything else in bf16."""
    rest, out = 0, []
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        base = name.removesuffix(".weight")
        if name.endswith("experts.gate_up_proj"):
            e, rows, cols = shape
            for i in range(e):
                out += [(f"{base.rpartition('.')[0]}.{i}.gate_proj", rows // 2, cols, True),
                        (f"{base.rpartition('.')[0]}.{i}.up_proj", rows // 2, cols, True)]
        elif name.endswith("experts.up_proj"):  # a non-gated expert (relu²: Nemotron-H): one matrix each
            e, rows, cols = shape
            out += [(f"{base.rpartition('.')[0]}.{i}.up_proj", rows, cols, True) for i in range(e)]
        elif name.endswith("experts.down_proj"):
            e, rows, cols = shape
            out += [(f"{base.rpartition('.')[0]}.{i}.down_proj", rows, cols, True) for i in range(e)]
        elif len(shape) == 2 and name.endswith(".weight") and "embed" not in name:  # (nn.Embedding: not Linear)
            out.append((base, shape[0], shape[1], True))  # every 2-D weight here is an nn.Linear's
        else:
            rest += 2 * p.numel()
    return out, rest


def oracle(cfg: dict) -> tuple[int, list[int]]:
    """Total stored bytes and the parameters each group holds, by compressed-tensors' rules."""
    q = cfg["quantization_config"]
    groups = list(q["config_groups"].values())
    ignore = q.get("ignore", [])
    modules, total = stored_modules(hf_model({k: v for k, v in cfg.items() if k != "quantization_config"}))
    params = [0] * len(groups)
    for name, n_out, n_in, linear in modules:
        g = None
        if not any(matches(name, t) for t in ignore):
            g = next((i for i, grp in enumerate(groups) for t in grp["targets"]
                      if not t == "Linear" and matches(name, t)), None)
            if g is None and linear:
                g = next((i for i, grp in enumerate(groups) if "Linear" in grp["targets"]), None)
        if g is None:
            total += 2 * n_out * n_in
        else:
            total += fmt_bytes(groups[g], n_out, n_in)
            params[g] += n_out * n_in
    return total, params


def mixed(base: dict, *groups: tuple[list[str], dict], ignore=("lm_head", "re:.*mlp.gate$")) -> dict:
    cg = {f"group_{i}": {"targets": targets, **fmt} for i, (targets, fmt) in enumerate(groups)}
    return dict(base, quantization_config={"quant_method": "compressed-tensors", "format": "mixed-precision",
                                           "config_groups": cg, "ignore": list(ignore)})


def weights(cfg):
    return analyze(parse_config(cfg), Options(context=0))


@pytest.mark.parametrize("experts", [
    "re:.*mlp.experts.*",
    r"re:.*mlp\.experts\.\d+\.(gate|up|down)_proj$",  # per-expert modules, as a checkpoint stores them
])
def test_fp8_attention_beside_nvfp4_experts_equals_the_oracle(experts):
    """The common MoE recipe (RedHatAI's *-NVFP4-FP8, unsloth's NVFP4 MoE exports): attention in FP8, routed experts
    in NVFP4 W4A4, router and lm_head ignored. Before, the first group's FP8 sized every matrix."""
    cfg = mixed(MOE, (["re:.*self_attn.*"], FP8_CHANNEL), ([experts], NVFP4_W4A4))
    total, params = oracle(cfg)
    a = weights(cfg)
    assert a.weights_bytes == total
    first_only = weights(mixed(MOE, (["Linear"], FP8_CHANNEL)))
    assert first_only.weights_bytes > 1.3 * total  # what sizing everything in group_0's format gave
    # the GEMMs are priced in the format holding the most parameters: the experts' 4-bit one
    assert params[1] > params[0] and a.fmt.compute.name == "fp4"
    cav = [c for c in a.spec.caveats if "mixed precision" in c]
    assert len(cav) == 1 and f"{params[0]:,} parameters" in cav[0] and f"{params[1]:,} parameters" in cav[0]


def test_a_name_target_wins_over_a_class_target_whatever_the_group_order():
    """unsloth's Qwen3.8-27B-NVFP4 keeps its last layers' MLPs in FP8 by name beside an NVFP4 group for the rest.
    Here the class-name group (``Linear``) comes first; the modules named by the second group still take its format
    (vLLM resolves names before classes), and the layers so split are stored apart."""
    named = [f"model.layers.1.mlp.{m}" for m in ("gate_proj", "up_proj", "down_proj")] + ["re:.*self_attn.*"]
    cfg = mixed(LLAMA, (["Linear"], NVFP4_W4A16), (named, FP8_CHANNEL))
    total, params = oracle(cfg)
    a = weights(cfg)
    assert a.weights_bytes == total
    assert params[0] and params[1]  # both groups hold matrices: layer 0's MLP in NVFP4, the rest in FP8
    all_nvfp4 = weights(mixed(LLAMA, (["Linear"], NVFP4_W4A16)))
    assert all_nvfp4.weights_bytes < total
    best = 0 if params[0] > params[1] else 1
    assert a.fmt.compute.name == ("bf16" if best == 0 else "fp8")  # W4A16 dequantizes into 16-bit GEMMs


def test_lm_head_is_converted_only_where_a_target_names_it():
    plain = mixed(LLAMA, (["re:.*self_attn.*"], FP8_CHANNEL), (["Linear"], NVFP4_W4A16), ignore=())
    named = mixed(LLAMA, (["re:.*self_attn.*", "lm_head"], FP8_CHANNEL), (["Linear"], NVFP4_W4A16), ignore=())
    vocab, h = LLAMA["vocab_size"], LLAMA["hidden_size"]
    assert weights(named).weights_bytes - weights(plain).weights_bytes == fmt_bytes(FP8_CHANNEL, vocab, h) - 2 * vocab * h
    assert weights(named).weights_bytes == oracle(named)[0]


def test_targets_written_for_a_multimodal_checkpoint_match_its_text_model():
    """Qwen3.5/3.6, Gemma 3/4 and Mistral 3 checkpoints name the text model's modules model.language_model.*."""
    cfg = mixed(LLAMA, ([r"re:model\.language_model\.layers\.\d+\.self_attn\..*"], FP8_CHANNEL),
                ([r"re:model\.language_model\.layers\.\d+\.mlp\..*"], NVFP4_W4A16))
    ours = mixed(LLAMA, ([r"re:model\.layers\.\d+\.self_attn\..*"], FP8_CHANNEL),
                 ([r"re:model\.layers\.\d+\.mlp\..*"], NVFP4_W4A16))
    assert weights(cfg).weights_bytes == weights(ours).weights_bytes == oracle(ours)[0]


def test_a_group_that_matches_nothing_is_said_and_its_matrices_stay_16_bit():
    # DeepSeek-V4 checkpoints written with the original module names (layers.X.ffn.experts.Y.w1) match none of ours
    cfg = mixed(MOE, (["re:.*self_attn.*"], FP8_CHANNEL), (["re:layers\\.\\d+\\.ffn\\.experts\\..*"], NVFP4_W4A4))
    a = weights(cfg)
    assert a.weights_bytes == oracle(cfg)[0]
    assert any("group_1: no matrix of this model matches" in c for c in a.spec.caveats)


def test_serve_splits_mixed_weights_across_tensor_parallel_ranks(tmp_path):
    cfg = mixed(MOE, (["re:.*self_attn.*"], FP8_CHANNEL), (["re:.*mlp.experts.*"], NVFP4_W4A4))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    one = run("serve", str(tmp_path), "--hardware", "b200", "--engine", "vllm", "--json", "-i", "128", "-o", "16")
    two = run("serve", str(tmp_path), "--hardware", "b200", "--engine", "vllm", "--gpus", "2", "--json", "-i", "128",
              "-o", "16")
    assert one.code == 0 and two.code == 0, (one.err, two.err)
    w1, w2 = one.json["memory"]["per_gpu"]["weights_bytes"], two.json["memory"]["per_gpu"]["weights_bytes"]
    assert w2 < w1 < 2.2 * w2  # the matrices split, embeddings and norms as the engine lays them out
    groups = run("analyze", str(tmp_path), "--json").json["model"]["quantization"]["groups"]
    assert [g["targets"] for g in groups] == [["re:.*self_attn.*"], ["re:.*mlp.experts.*"]]
    assert [g["params"] for g in groups] == oracle(cfg)[1]


@pytest.mark.parametrize("targets, fragment", [
    ("re:.*self_attn.*", "targets' must be a non-empty list"),
    ([], "targets' must be a non-empty list"),
    ([3], "targets' must be a non-empty list"),
    (["re:(unclosed"], "invalid regular expression"),
])
def test_bad_group_targets_are_one_error_line(tmp_path, targets, fragment):
    cfg = mixed(LLAMA, (["Linear"], FP8_CHANNEL), (["re:.*mlp.*"], NVFP4_W4A16))
    cfg["quantization_config"]["config_groups"]["group_1"]["targets"] = targets
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    run("analyze", str(tmp_path)).assert_error(fragment)


def test_a_group_not_understood_leaves_the_weights_at_torch_dtype():
    odd = {"format": "float4-packed-unknown",  # a packing no compressor writes
           "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}
    a = weights(mixed(LLAMA, (["re:.*self_attn.*"], FP8_CHANNEL), (["re:.*mlp.*"], odd)))
    assert a.spec.quant is None
    assert a.weights_bytes == weights(LLAMA).weights_bytes
    assert any("group_1 is not understood, so none of the config's groups is applied" in c for c in a.spec.caveats)


# ---- NVIDIA ModelOpt MIXED_PRECISION: a quantized_layers table, one algorithm per module ----------------------

def modelopt_bytes(algo: str, n_out: int, n_in: int) -> int:
    """One stored matrix of a ModelOpt algorithm (vLLM modelopt.py ``create_weights``): FP8: e4m3 weight + fp32
    weight_scale and input_scale scalars; NVFP4: two values a byte + an e4m3 scale per 16 inputs + fp32
    weight_scale_2 and input_scale; W4A16_NVFP4: the same without input_scale."""
    if algo == "FP8":
        return n_out * n_in + 8
    return n_out * n_in // 2 + n_out * n_in // 16 + (8 if algo == "NVFP4" else 4)


def modelopt_oracle(cfg: dict) -> int:
    """Stored bytes by the table: a module takes its own entry; an expert matrix its experts module's entry."""
    layers = cfg["quantization_config"]["quantized_layers"]
    modules, total = stored_modules(hf_model({k: v for k, v in cfg.items() if k != "quantization_config"}))
    for name, n_out, n_in, _ in modules:
        experts = name.rpartition(".")[0].rpartition(".")[0] if ".experts." in name else None
        entry = layers.get(name) or (layers.get(experts) if experts else None)
        algo = entry["quant_algo"] if entry else "UNQUANTIZED"
        total += 2 * n_out * n_in if algo == "UNQUANTIZED" else modelopt_bytes(algo, n_out, n_in)
    return total


def modelopt_mixed(base: dict, table: dict) -> dict:
    return dict(base, quantization_config={"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                           "kv_cache_quant_algo": "FP8", "quantized_layers": table})


def test_modelopt_mixed_precision_sizes_each_module_in_its_own_algorithm():
    """NVIDIA's NVFP4 releases (nvidia/Qwen3.6-35B-A3B-NVFP4, Nemotron) are MIXED_PRECISION: FP8 attention, NVFP4
    experts named as whole modules ("model.layers.0.mlp.experts"), some modules left out. Before, a caveat and
    every weight in bf16."""
    table = {}
    for i in range(MOE["num_hidden_layers"]):
        for m in ("q_proj", "k_proj", "v_proj", "o_proj"):
            table[f"model.layers.{i}.self_attn.{m}"] = {"quant_algo": "FP8"}
        table[f"model.layers.{i}.mlp.experts"] = {"quant_algo": "NVFP4", "group_size": 16}
    table["model.layers.1.self_attn.o_proj"] = {"quant_algo": "UNQUANTIZED"}
    table["lm_head"] = {"quant_algo": "W4A16_NVFP4", "group_size": 16}
    cfg = modelopt_mixed(MOE, table)
    a = weights(cfg)
    assert a.weights_bytes == modelopt_oracle(cfg)
    assert a.weights_bytes < weights(MOE).weights_bytes / 2  # (the tiny model's bf16 embeddings weigh in)
    assert a.fmt.compute.name == "fp4"  # the experts' algorithm holds the most parameters
    assert not any("not sized" in c for c in a.spec.caveats)


def test_modelopt_mixed_precision_bad_tables_are_one_error_line(tmp_path):
    for table, fragment in (({"model.layers.0.mlp.experts": "NVFP4"}, "must be an object with a 'quant_algo'"),
                            ({"model.layers.0.mlp.experts": {"quant_algo": 4}}, "must be an object with a 'quant_algo'"),
                            ({"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": [16]}},
                             "mlp.experts'.group_size' must be a positive integer"),
                            ({"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 0}},
                             "mlp.experts'.group_size' must be a positive integer")):
        (tmp_path / "config.json").write_text(json.dumps(modelopt_mixed(MOE, table)))
        run("analyze", str(tmp_path)).assert_error(fragment)
    odd = weights(modelopt_mixed(MOE, {"model.layers.0.mlp.experts": {"quant_algo": "W4A8_AWQ"}}))
    assert odd.spec.quant is None and any("W4A8_AWQ" in c for c in odd.spec.caveats)


NEMOTRON_H_MOE = {"model_type": "nemotron_h", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 1000,
                  "hybrid_override_pattern": "*E", "head_dim": 64, "intermediate_size": 512, "mamba_head_dim": 32,
                  "mamba_num_heads": 8, "moe_intermediate_size": 128, "moe_shared_expert_intermediate_size": 256,
                  "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "ssm_state_size": 16, "n_groups": 2, "n_group": 1, "topk_group": 1,
                  "mlp_hidden_act": "relu2", "torch_dtype": "bfloat16", "tie_word_embeddings": False}


@pytest.mark.parametrize("groups", [
    [(["Linear"], NVFP4_W4A16)],  # one format: the single-group path
    [([r"re:.*experts\.\d+\.up_proj$"], NVFP4_W4A4), (["Linear"], FP8_CHANNEL)],  # the experts' up_proj by name
    [([r"re:.*experts\.\d+\.gate_proj$"], NVFP4_W4A4), (["Linear"], FP8_CHANNEL)],  # no gate_proj to match
])
def test_a_non_gated_experts_up_proj_is_one_matrix(groups):
    """Nemotron-H's relu² experts have no gate: the stacked tensor planner calls gate_up_proj is each expert's one
    up_proj, stored with one set of scales (it was sized as a gate and an up half, a second fp32 global scale each),
    and a target naming experts.N.up_proj must find it."""
    cfg = mixed(NEMOTRON_H_MOE, *groups, ignore=("lm_head", "re:.*gate$"))
    if len(groups) == 1:
        cfg["quantization_config"].pop("format")
    assert weights(cfg).weights_bytes == oracle(cfg)[0]

