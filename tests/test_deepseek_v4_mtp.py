"""DeepSeek-V4's multi-token-prediction (MTP) row ("MTP layers (not in total)", params.mtp, mtp_weights_bytes).

The module, as the engines build it and DeepSeek's own code defines it:

- vLLM vllm/model_executor/models/deepseek_v4_mtp.py (vllm-project/vllm, DeepSeekV4MultiTokenPredictorLayer): enorm and
  hnorm (RMSNorm, hidden), ``e_proj`` and ``h_proj`` (ReplicatedLinear hidden -> hidden, no bias, "with fp8 linear
  quantization (instead of the fused eh_proj)"), ``hc_head_fn`` (hc_mult, hc_mult x hidden), ``hc_head_base`` (hc_mult)
  and ``hc_head_scale`` (1), all float32, and one DeepseekV4DecoderLayer at index num_hidden_layers + i; the
  checkpoint's ``mtp.{i}.norm.weight`` is its shared_head's norm, the head and embedding are the main model's.
- vLLM vllm/model_executor/models/deepseek_v4.py (DeepseekV4Attention): "if layer_id < config.num_hidden_layers:
  compress_ratio = max(1, config.compress_ratios[layer_id]) else: compress_ratio = 1" (the MTP layer is sliding-window
  attention only: no compressor, no indexer, which only compress_ratio == 4 builds).
- DeepSeek's inference/model.py ``class MTPBlock(Block)`` (as copies of it in public repositories quote it): e_proj,
  h_proj (Linear(dim, dim)), enorm, hnorm, norm, hc_head_fn / base / scale under float32; ``self.embed`` and
  ``self.head`` set to the main model's. Its Attention reads ``compress_ratios[layer_id]``: 0 (sliding) at index 61 of
  deepseek-ai/DeepSeek-V4-Pro's 62-entry compress_ratios.

Oracles: DeepSeek-V4-Pro's safetensors dtype census (huggingface.js, the hand count of tests/test_quant_real_audit3.py
split main / MTP / buffers: 25,840,145,595 MTP parameters stored in 13,956,586,156 bytes), and transformers'
own sliding-attention DeepseekV4DecoderLayer on the meta device for the block, plus the module shapes above.
Before: planner copied the last layer (a compressed-sparse-attention layer with compressor and indexer) and DeepSeek
V3's extras (eh_proj, and a bf16 copy of the embedding and the head): 27,724,786,486 parameters, 17,815,820,824 bytes.
"""

from __future__ import annotations

import copy

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count
from tests.test_families import V4_BASE
from tests.test_quant_real_audit3 import v4_by_hand, v4_bytes
from tests.test_real_configs_audit import REAL

PRO = REAL["DeepSeek-V4-Pro"]  # deepseek-ai/DeepSeek-V4-Pro config.json (see tests/test_real_configs_audit.py)

#: a small DeepSeek-V4 whose last layer is CSA (the MTP layer is not a copy of it) and whose MoE layers are all
#: learned-routed (mlp_layer_types), so transformers' layer 0 is exactly the MTP's block
SMALL = dict(V4_BASE, model_type="deepseek_v4", num_hidden_layers=2, num_key_value_heads=1, head_dim=32, q_lora_rank=48,
             o_groups=4, o_lora_rank=24, moe_intermediate_size=64, n_routed_experts=8, num_experts_per_tok=2,
             index_n_heads=4, index_head_dim=16, index_topk=4, sliding_window=16, hc_mult=3,
             layer_types=["sliding_attention", "compressed_sparse_attention"], mlp_layer_types=["moe", "moe"],
             num_nextn_predict_layers=1)


def analysed(cfg: dict):
    return analyze(parse_config(copy.deepcopy(cfg)), Options(context=4096))


def extras(h: int, hc: int) -> int:
    """vLLM's DeepSeekV4MultiTokenPredictorLayer besides its block: e_proj, h_proj, enorm, hnorm, the shared
    head's norm, hc_head_fn / base / scale."""
    return 2 * h * h + 3 * h + hc * hc * h + hc + 1


def test_pro_mtp_row_is_the_census_block():
    _, mtp, _ = v4_by_hand()
    a = analysed(PRO)
    assert a.params.mtp == sum(mtp.values()) == 25_840_145_595
    assert a.mtp_weights_bytes == v4_bytes(mtp) == 13_956_586_156
    assert [layer.kind for layer in a.spec.mtp_layers] == ["swa(128)+moe"]
    assert not any("MTP" in c for c in a.spec.caveats)


def test_mtp_block_equals_transformers_sliding_layer():
    """The block: transformers' sliding-attention DeepseekV4DecoderLayer (layer 0 here), not the last layer (CSA)."""
    model = hf_model({k: v for k, v in SMALL.items() if k != "num_nextn_predict_layers"})
    block = unique_param_count(model.model.layers[0])
    assert unique_param_count(model.model.layers[1]) != block
    p = count_params(parse_config(copy.deepcopy(SMALL)))
    assert p.mtp == block + extras(SMALL["hidden_size"], SMALL["hc_mult"])
    two = count_params(parse_config(dict(SMALL, num_nextn_predict_layers=2)))
    assert two.mtp == 2 * p.mtp


def test_main_model_unchanged_by_mtp():
    """MTP stays out of total, active, weights, the KV cache and the decode FLOPs."""
    with_mtp, without = analysed(PRO), analysed(dict(PRO, num_nextn_predict_layers=0))
    assert without.params.mtp == 0 and without.mtp_weights_bytes == 0
    for get in (lambda a: a.params.total, lambda a: a.params.active, lambda a: a.weights_bytes,
                lambda a: a.kv.bytes_per_sequence(4096), lambda a: a.decode_flops, lambda a: a.prefill_flops):
        assert get(with_mtp) == get(without)


def test_mtp_ratio_listed_nonzero_is_a_caveat():
    """vLLM builds the MTP layer sliding whatever compress_ratios lists past num_hidden_layers; DeepSeek's
    reference would read it: a nonzero entry is said, and counted as vLLM builds it."""
    ratios = list(PRO["compress_ratios"])
    ratios[61] = 4
    a = analysed(dict(PRO, compress_ratios=ratios))
    assert any("compress_ratios lists [4] for the MTP layers" in c for c in a.spec.caveats)
    assert a.params.mtp == analysed(PRO).params.mtp


def test_cli_row(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(PRO))
    r = run("analyze", str(tmp_path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["mtp"] == 25_840_145_595
    assert r.json["memory"]["mtp_weights_bytes"] == 13_956_586_156
    r = run("analyze", str(tmp_path))
    assert r.code == 0 and "MTP layers (not in total)" in r.out and "25,840,145,595" in r.out
