"""NVIDIA Nemotron-H Puzzle (``nemotron_h_puzzle``, ``NemotronHPuzzleForCausalLM``): per-layer shapes from
``block_configs``. Oracle: transformers' NemotronH on the meta device, one single-layer model per layer, built from
the top-level config with that layer's block_configs items set over it, as vLLM's ``NemotronHPuzzleConfig
.get_nemotron_h_config_for_layer`` does (Mamba-2 layers read the top-level config only: vLLM's
NemotronHMambaDecoderLayer takes no layer config); embedding, final norm and head counted once."""

from __future__ import annotations

import re

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.oracle import hf_model

#: small, in the shape of the Puzzle configs quoted in ports' parser tests (find_string ids 59288764765,
#: 55560618427: layers_block_type at the top, block_configs overriding moe_intermediate_size / num_experts_per_tok /
#: n_routed_experts, a latent MoE); one attention block with its own KV heads and sliding window
PUZ = {"model_type": "nemotron_h_puzzle", "architectures": ["NemotronHPuzzleForCausalLM"], "hidden_size": 64,
       "vocab_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
       "intermediate_size": 96, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
       "moe_latent_size": 32, "moe_shared_expert_intermediate_size": 48, "mamba_num_heads": 4, "mamba_head_dim": 16,
       "ssm_state_size": 8, "n_groups": 2, "conv_kernel": 4,
       "layers_block_type": ["mamba", "moe", "attention", "moe", "mlp", "attention"],
       "block_configs": [{"block_type": "mamba", "mamba_num_heads": 99},  # ignored: Mamba-2 reads the top level
                         {"block_type": "moe", "moe_intermediate_size": 16, "num_experts_per_tok": 1},
                         {"block_type": "attention", "num_key_value_heads": 1, "sliding_window": 32},
                         {"block_type": "moe", "n_routed_experts": 6, "moe_intermediate_size": 40,
                          "num_experts_per_tok": 3, "moe_latent_size": None},
                         {"block_type": "mlp", "intermediate_size": 72},
                         {"block_type": "attention"}]}


def _oracle(cfg: dict) -> tuple[int, int]:
    """(total, active) from single-layer transformers models; active counts top-k experts per MoE layer."""
    base = {k: v for k, v in cfg.items() if k not in ("block_configs", "layers_block_type", "architectures")}
    total = active = 0
    for i, (kind, block) in enumerate(zip(cfg["layers_block_type"], cfg["block_configs"])):
        over = {} if kind == "mamba" else {k: v for k, v in block.items() if k != "block_type"}
        layer_cfg = {**base, **over, "model_type": "nemotron_h", "layers_block_type": [kind]}
        model = hf_model(layer_cfg)
        for name, p in model.named_parameters():
            if ".layers." not in name:
                if i == 0:
                    total += p.numel()
                    active += p.numel()
                continue
            total += p.numel()
            if ".experts." in name:  # one slice (or module) per expert
                n_exp = layer_cfg["n_routed_experts"]
                active += p.numel() * layer_cfg["num_experts_per_tok"] // n_exp
            else:
                active += p.numel()
    return total, active


def test_total_and_active_equal_transformers_layer_by_layer():
    p = count_params(parse_config(PUZ))
    assert (p.total, p.active) == _oracle(PUZ)


def test_layers_take_their_block_shapes():
    spec = parse_config(PUZ)
    moe1, moe2 = spec.layers[1].ffn, spec.layers[3].ffn
    assert (moe1.num_experts, moe1.num_experts_per_tok, moe1.moe_intermediate_size, moe1.latent_size) == (8, 1, 16, 32)
    assert (moe2.num_experts, moe2.num_experts_per_tok, moe2.moe_intermediate_size, moe2.latent_size) == (6, 3, 40, 0)
    a1, a2 = spec.layers[2].mixer, spec.layers[5].mixer
    assert (a1.num_key_value_heads, a1.window) == (1, 32) and (a2.num_key_value_heads, a2.window) == (2, None)
    assert spec.layers[4].ffn.intermediate_size == 72
    assert spec.layers[0].mixer.num_heads == 4  # the top-level mamba_num_heads, not the block's 99


def test_kv_per_token_follows_each_attention_layer():
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    bf16 = get_dtype("bf16")
    kv = kv_cache(parse_config(PUZ), bf16, bf16).layers
    attn = [layer.bytes_per_token for layer in kv if layer.bytes_per_token]
    assert attn == [2 * 1 * 16 * 2, 2 * 2 * 16 * 2]  # K and V, 1 then 2 KV heads of 16, bf16


def test_types_from_block_type_without_a_pattern():
    cfg = {k: v for k, v in PUZ.items() if k != "layers_block_type"}
    assert count_params(parse_config(cfg)) == count_params(parse_config(PUZ))


@pytest.mark.parametrize("change,field", [
    ({"block_configs": PUZ["block_configs"][:5]}, "block_configs"),
    ({"block_configs": [*PUZ["block_configs"][:5], 3]}, "block_configs"),
    ({"layers_block_type": None, "block_configs": [{"block_type": "noop"}]}, "block_configs"),
    # an MTP block's bad type is named under its own field, not block_configs
    ({"num_nextn_predict_layers": 1, "mtp_block_configs": [{"block_type": "noop"}]},
     "field 'mtp_block_configs' entry 0 has block_type 'noop'"),
])
def test_bad_block_configs_are_config_errors(change, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        parse_config(dict(PUZ, **change))


def test_mtp_layers_read_mtp_block_configs():
    """the MTP step's blocks (mtp_hybrid_override_pattern) take mtp_block_configs' shapes, as vLLM's get_mtp_config;
    its blocks counted as transformers builds such layers, plus enorm, hnorm, final_layernorm (3 x hidden) and
    eh_proj (2 hidden -> hidden), vLLM's nemotron_h_mtp.py"""
    cfg = dict(PUZ, num_nextn_predict_layers=1, mtp_hybrid_override_pattern="*E",
               mtp_block_configs=[{"block_type": "attention", "num_key_value_heads": 4},
                                  {"block_type": "moe", "moe_intermediate_size": 24, "num_experts_per_tok": 1}])
    base = {k: v for k, v in cfg.items() if k not in ("block_configs", "layers_block_type", "architectures",
                                                      "mtp_block_configs", "mtp_hybrid_override_pattern",
                                                      "num_nextn_predict_layers")}
    blocks = 0
    for kind, block in zip(("attention", "moe"), cfg["mtp_block_configs"]):
        over = {k: v for k, v in block.items() if k != "block_type"}
        model = hf_model({**base, **over, "model_type": "nemotron_h", "layers_block_type": [kind]})
        blocks += sum(p.numel() for n, p in model.named_parameters() if ".layers." in n)
    h = PUZ["hidden_size"]
    assert count_params(parse_config(cfg)).mtp == blocks + 3 * h + 2 * h * h
    assert count_params(parse_config(cfg)).total == count_params(parse_config(PUZ)).total
