"""OpenBMB MiniCPM5 MoE (``minicpm5_moe``) and BharatGen Param2-MoE (``param2moe``), both new in transformers 5.25.

MiniCPM5 (transformers ``models/minicpm5_moe/modeling_minicpm5_moe.py``): gated GQA (``q_gate_proj``: 2 x heads x
head_dim rows, per head [q | gate]), DeepSeek-V3's MoE (sigmoid router with a choice-only correction bias, group
top-2, one shared MLP of n_shared_experts x moe_intermediate_size) on the layers ``mlp_layer_types`` marks sparse.
Before it was refused as an unknown MoE layout. Param2 (``models/param2moe/configuration_param2moe.py``): a config
class only; AutoModelForCausalLM builds ``Glm4MoeForCausalLM``; its attribute_map reads the original bharatgenai
names. Before a transformers-named config failed with "required field 'num_experts' is missing".

Oracles: transformers 5.25 on the meta device (tests/oracle.py) for totals; hand counts from the modeling files'
module shapes for active parameters and KV bytes; transformers' own forward (random fp32 weights) for the runtime.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_model, unique_param_count
from tests.test_remote_param2moe_mimo_v2 import PARAM2


def _defaults(model_type: str) -> dict:
    """transformers' default config of ``model_type`` as ``save_pretrained`` would write it (every field)."""
    transformers = pytest.importorskip("transformers", reason="the class defaults come from transformers")
    d = transformers.AutoConfig.for_model(model_type).to_dict()
    d.pop("transformers_version", None)
    return d


def _hf_total(cfg: dict) -> int:
    return unique_param_count(hf_model(cfg))


# ---- MiniCPM5 MoE ------------------------------------------------------------------------------------------------


def _minicpm5_by_hand(h, L, sparse, heads, kv, hd, inter, moe_inter, E, k, n_shared, vocab, tied, bias):
    """(total, active) from modeling_minicpm5_moe.py's shapes: q_gate_proj (h -> 2·heads·hd), k_proj / v_proj
    (h -> kv·hd), o_proj (heads·hd -> h), all biased by attention_bias; two RMSNorms a layer; MiniCPM5MoeMLP
    (3·h·inter) on dense layers; on sparse ones the router (E x h, fp32; its e_score_correction_bias is a buffer),
    E experts (gate_up 2·moe_inter x h, down h x moe_inter) and shared_experts (3·h·n_shared·moe_inter); final norm;
    embedding, plus lm_head when untied."""
    attn = h * 2 * heads * hd + 2 * h * kv * hd + heads * hd * h
    if bias:
        attn += 2 * heads * hd + 2 * kv * hd + h
    dense = attn + 3 * h * inter + 2 * h
    moe = attn + E * h + E * 3 * h * moe_inter + 3 * h * n_shared * moe_inter + 2 * h
    total = vocab * h * (1 if tied else 2) + h + (L - sparse) * dense + sparse * moe
    return total, total - sparse * (E - k) * 3 * h * moe_inter


# A MiniCPM5 "16A3B" checkpoint's config.json fields as a public Megatron training script checks them before training
# (found with find_string '"model_type": "minicpm5_moe"', file id 58715677803, whose repository the index does not
# name; a MUSA pretrain_minicpm5 launcher whose python block asserts
# these values, and whose MODEL_ARGS / MOE_ARGS agree: 28 layers, hidden 2048, 32 heads / 2 query groups of 128,
# ffn 8192, vocab 130560, 160 experts of 512 top 16, shared 512, moe_layer_freq [0]+[1]*27, sigmoid + expert bias,
# scale 3.66, untied); the rest of the file is left to MiniCPM5MoeConfig's defaults (the openbmb/MiniCPM5-15B-A2.5B
# checkpoint its docstring names), with the checkpoint's original architecture name
MINICPM5_16A3B = {
    "architectures": ["MiniCPM5MoEForCausalLM"], "model_type": "minicpm5_moe", "num_hidden_layers": 28,
    "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 2, "intermediate_size": 8192,
    "vocab_size": 130560, "max_position_embeddings": 4096, "head_dim": 128, "moe_intermediate_size": 512,
    "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 16, "first_k_dense_replace": 1,
    "routed_scaling_factor": 3.66, "torch_dtype": "bfloat16"}

MINICPM5_VARIED = {
    # every MLP kind by mlp_layer_types, biases, tied, grouped routing, two shared widths, head_dim != hidden / heads
    "mixed": {"model_type": "minicpm5_moe", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
              "num_key_value_heads": 4, "head_dim": 48, "vocab_size": 1000, "intermediate_size": 640,
              "moe_intermediate_size": 96, "n_routed_experts": 12, "num_experts_per_tok": 3, "n_shared_experts": 2,
              "mlp_layer_types": ["dense", "sparse", "dense", "sparse"], "attention_bias": True,
              "tie_word_embeddings": True, "n_group": 4, "topk_group": 2},
    # first_k_dense_replace 2 (no mlp_layer_types), no shared expert, MHA (kv null) and head_dim null
    "first-k": {"model_type": "minicpm5_moe", "hidden_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                "num_key_value_heads": None, "head_dim": None, "vocab_size": 500, "intermediate_size": 320,
                "moe_intermediate_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 0,
                "first_k_dense_replace": 2},
    # every layer dense
    "all-dense": {"model_type": "minicpm5_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "vocab_size": 300, "intermediate_size": 96,
                  "mlp_layer_types": ["dense", "dense"]},
}


def test_minicpm5_defaults_equal_transformers_and_the_hand_count():
    cfg = _defaults("minicpm5_moe")
    p = count_params(parse_config(cfg))
    total, active = _minicpm5_by_hand(2048, 28, 27, 32, 2, 128, 8192, 512, 160, 16, 1, 130560, False, False)
    assert p.total == _hf_total(cfg) == total == 15_002_552_320
    assert p.active == active == 2_771_961_856
    # KV: 28 layers x (K + V) x 2 KV heads x 128 x 2 bytes (bf16); the output gate caches nothing
    spec = parse_config(cfg)
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 28 * 2 * 2 * 128 * 2 == 28_672
    num = spec.numerics
    assert num.router.name == "SIGMOID" and num.score_correction_bias and num.norm_topk_prob
    assert num.routed_scaling_factor == 3.66 and num.n_group == 1 and num.rope_style.name == "HALF"
    assert spec.layers[0].mixer.output_gate and spec.layers[0].mixer.rotary_dim == 128
    assert not spec.tie_word_embeddings


def test_minicpm5_16a3b_config():
    p = count_params(parse_config(MINICPM5_16A3B))
    total, active = _minicpm5_by_hand(2048, 28, 27, 32, 2, 128, 8192, 512, 160, 16, 1, 130560, False, False)
    assert (p.total, p.active) == (total, active) and p.total == _hf_total(MINICPM5_16A3B)
    # the script's name: "16 routed experts active per token, about 3B active parameters"; ~15B total
    assert round(p.total / 1e9) == 15 and 2.5e9 < p.active < 3.0e9


@pytest.mark.parametrize("name", sorted(MINICPM5_VARIED))
def test_minicpm5_varied_configs_equal_transformers(name):
    cfg = MINICPM5_VARIED[name]
    assert count_params(parse_config(cfg)).total == _hf_total(cfg)


def test_minicpm5_varied_by_hand():
    mixed = count_params(parse_config(MINICPM5_VARIED["mixed"]))
    assert (mixed.total, mixed.active) == _minicpm5_by_hand(256, 4, 2, 8, 4, 48, 640, 96, 12, 3, 2, 1000, True, True)
    first_k = count_params(parse_config(MINICPM5_VARIED["first-k"]))
    assert (first_k.total, first_k.active) == _minicpm5_by_hand(128, 3, 1, 4, 4, 32, 320, 64, 8, 2, 0, 500, False,
                                                                False)
    spec = parse_config(MINICPM5_VARIED["mixed"])
    assert spec.numerics.n_group == 4 and spec.numerics.topk_group == 2 and spec.numerics.group_score.name == "TOP2"


@pytest.mark.parametrize("extra,err,field", [
    ({"use_gated_attention": False}, UnsupportedModelError, "use_gated_attention"),
    ({"num_experts_per_tok": 200}, ConfigError, "num_experts_per_tok"),
    ({"n_group": 3}, ConfigError, "n_group"),
    ({"n_group": 8, "topk_group": 9}, ConfigError, "topk_group"),
    ({"mlp_layer_types": ["dense"] * 27}, ConfigError, "mlp_layer_types"),
    ({"mlp_layer_types": ["dense"] + ["moe"] * 27}, ConfigError, "mlp_layer_types"),
    ({"num_key_value_heads": 5}, ConfigError, "num_key_value_heads"),
])
def test_minicpm5_bad_configs_raise(extra, err, field):
    with pytest.raises(err, match=field):
        parse_config(dict(MINICPM5_16A3B, **extra))


def test_minicpm5_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MINICPM5_16A3B))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == count_params(parse_config(MINICPM5_16A3B)).total
    assert not any("not a known family" in c for c in r.json["caveats"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MINICPM5_16A3B, use_gated_attention=False)))
    run("analyze", bad, "--json").assert_error("use_gated_attention")


TINY_MINICPM5 = {"model_type": "minicpm5_moe", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "intermediate_size": 96,
                 "moe_intermediate_size": 32, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1,
                 "n_group": 2, "topk_group": 1, "max_position_embeddings": 256, "rope_theta": 10000.0,
                 "torch_dtype": "float32"}


def test_minicpm5_verify_self_checks_pass(tmp_path):
    verify_self_checks(tmp_path, TINY_MINICPM5, name="minicpm5", batch=2)


# ---- Param2-MoE --------------------------------------------------------------------------------------------------


def test_param2_transformers_named_defaults_equal_transformers():
    """A config as transformers 5.25 writes it (n_routed_experts, n_shared_experts, attention_bias, rope_parameters)."""
    cfg = _defaults("param2moe")
    assert "num_experts" not in cfg and cfg["n_routed_experts"] == 64
    p = count_params(parse_config(cfg))
    # PARAM2's hand count (tests/test_remote_param2moe_mimo_v2.py: vLLM's shapes) with transformers' vocab 128000:
    # Glm4MoeForCausalLM, tied, 20 MoE layers of 64 experts of 3 x 2048 x 2048 and a shared MLP of 2 x 2048
    h, vocab = 2048, 128000
    attn = h * (32 + 16) * 64 + 32 * 64 * h + 2 * 64
    total = vocab * h + h + (attn + 3 * h * 9216 + 2 * h) + 20 * (attn + 64 * h + 64 * 3 * h * 2048
                                                                    + 3 * h * 4096 + 2 * h)
    assert p.total == _hf_total(cfg) == total == 17_151_124_096
    assert p.active == total - 20 * (64 - 6) * 3 * h * 2048
    assert kv_cache(parse_config(cfg), get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == 21 * 2 * 8 * 64 * 2


def test_param2_released_config_equals_transformers():
    """The bharatgenai config (original names; quoted with its source in test_remote_param2moe_mimo_v2.py) built by
    transformers 5.25's Param2MoeConfig / Glm4MoeForCausalLM: the same 17,151,140,480 parameters."""
    cfg = {k: v for k, v in PARAM2.items() if k != "auto_map"}
    assert count_params(parse_config(cfg)).total == _hf_total(cfg) == 17_151_140_480


PARAM2_VARIED = {
    # q/k/v bias, no q/k norm, untied, grouped routing, three shared experts, a partial rotary, two dense layers
    "biased": {"model_type": "param2moe", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 40, "vocab_size": 700, "intermediate_size": 256,
               "moe_intermediate_size": 48, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 3,
               "attention_bias": True, "use_qk_norm": False, "tie_word_embeddings": False, "n_group": 2,
               "topk_group": 1, "first_k_dense_replace": 2, "partial_rotary_factor": 0.5},
    # the original names, absent fields at Param2MoeConfig's defaults (tied, two shared experts, q/k norms)
    "original-names": {"model_type": "param2moe", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
                       "num_key_value_heads": 1, "vocab_size": 300, "intermediate_size": 96,
                       "moe_intermediate_size": 32, "num_experts": 6, "num_experts_per_tok": 2,
                       "use_qkv_bias": True},
}


@pytest.mark.parametrize("name", sorted(PARAM2_VARIED))
def test_param2_varied_configs_equal_transformers(name):
    cfg = PARAM2_VARIED[name]
    assert count_params(parse_config(cfg)).total == _hf_total(cfg)


def test_param2_reads_both_names_alike():
    orig = PARAM2_VARIED["original-names"]
    renamed = {k: v for k, v in orig.items() if k not in ("num_experts", "use_qkv_bias")}
    renamed.update(n_routed_experts=6, attention_bias=True, n_shared_experts=2, tie_word_embeddings=True,
                   use_qk_norm=True)
    a, b = parse_config(orig), parse_config(renamed)
    assert count_params(a).total == count_params(b).total
    assert a.layers[1].mixer.q_bias and a.layers[1].ffn.shared_intermediate_size == 2 * 32
    with pytest.raises(UnsupportedModelError, match="num_nextn_predict_layers"):
        parse_config(dict(orig, num_mtp_layers=1))


def test_param2_transformers_named_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_defaults("param2moe")))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 17_151_124_096


# ---- the runtime against transformers' forward --------------------------------------------------------------------


TINY_PARAM2 = {"model_type": "param2moe", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "intermediate_size": 96,
               "moe_intermediate_size": 32, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 2,
               "attention_bias": True, "n_group": 2, "topk_group": 1, "max_position_embeddings": 256,
               "rope_theta": 10000.0, "torch_dtype": "float32"}


def test_minicpm5_logits_equal_transformers_and_its_checkpoint_names_load():
    """transformers' module names (q_gate_proj) and the hub checkpoint's (q_proj, which transformers' conversion
    mapping renames) both load; logits equal transformers' at 1e-4 and cached decode equals recomputation."""
    rt = pytest.importorskip("tests.test_runtime", reason="the runtime parity helpers need torch")
    hf = rt.hf_model(TINY_MINICPM5)
    spec, ours = rt.ours_from_hf(TINY_MINICPM5, hf)
    rt.assert_logits_and_cached_decode(spec, ours, hf)
    items = [(n.replace(".self_attn.q_gate_proj.", ".self_attn.q_proj."), t) for n, t in hf.state_dict().items()]
    assert any(".self_attn.q_proj.weight" in n for n, _ in items)
    rt.assert_loads_and_matches(TINY_MINICPM5, items, hf)


#: transformers 5.25 conversion_mapping.py: mapping["param2moe"] = mapping["sarvam_moe"] (its WeightRenaming entries,
#: original name -> transformers'), inverted here to write a checkpoint as the hub stores it
ORIGINAL_NAMES = {"model.embed_tokens.": "model.word_embeddings.", ".self_attn.o_proj.": ".attention.dense.",
                  ".self_attn.q_norm.": ".attention.query_layernorm.", ".self_attn.k_norm.": ".attention.key_layernorm.",
                  ".mlp.gate.e_score_correction_bias": ".mlp.gate.expert_bias"}


def _as_hub_checkpoint(sd: dict, torch) -> list:
    """transformers' state dict in the original layout: q / k / v fused into query_key_value (rows [q | k | v], as
    the converter's Split(dim=0) undoes), names per ORIGINAL_NAMES, the tied lm_head not stored."""
    out = []
    for name, t in sd.items():
        if name == "lm_head.weight" or any(f".self_attn.{x}_proj." in name for x in "kv"):
            continue
        if ".self_attn.q_proj." in name:
            t = torch.cat([sd[name.replace("q_proj", x)] for x in ("q_proj", "k_proj", "v_proj")])
            name = name.replace(".self_attn.q_proj.", ".attention.query_key_value.")
        for new, old in ORIGINAL_NAMES.items():
            name = name.replace(new, old)
        out.append((name, t))
    return out


def test_param2_checkpoint_with_its_original_names_equals_transformers():
    """Param2's checkpoint keeps the bharatgenai names (fused query_key_value, attention.dense, query_layernorm /
    key_layernorm, mlp.gate.expert_bias, model.word_embeddings): loaded so, our decoder's logits equal those of
    transformers' Glm4MoeForCausalLM."""
    torch = pytest.importorskip("torch", reason="the runtime needs torch")
    rt = pytest.importorskip("tests.test_runtime", reason="the runtime parity helpers need torch")
    hf = rt.hf_model(TINY_PARAM2)
    items = _as_hub_checkpoint(hf.state_dict(), torch)
    assert any(n.endswith(".attention.query_key_value.bias") for n, _ in items)
    assert any(n.endswith(".mlp.gate.expert_bias") for n, _ in items)
    assert not any(".self_attn." in n for n, _ in items)
    rt.assert_loads_and_matches(TINY_PARAM2, items, hf)


def test_param2_transformers_named_verify_self_checks_pass(tmp_path):
    verify_self_checks(tmp_path, TINY_PARAM2, name="param2-hf-names", batch=2)
