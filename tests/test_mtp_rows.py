"""Multi-token-prediction (MTP) modules reported as their own row ("MTP layers (not in total)", params.mtp,
mtp_weights_bytes), never in params.total, active, the KV cache or the decode FLOPs.

Qwen3-Next / Qwen3.5 / Qwen3.5-MoE: the module shapes of vLLM's vllm/model_executor/models/qwen3_next_mtp.py
(Qwen3NextMultiTokenPredictor) and qwen3_5_mtp.py (Qwen3_5MultiTokenPredictor), which load the checkpoint's mtp.*
tensors: ``fc`` = ColumnParallelLinear(2·hidden -> hidden, bias=False), RMSNorms ``pre_fc_norm_hidden``,
``pre_fc_norm_embedding`` and ``norm`` (hidden each), and ``mtp_num_hidden_layers`` decoder layers built with
``layer_type="full_attention"`` whose FFN follows the main model's rule at the index in their prefix
(``mtp.layers.{i}``: vllm qwen3_next.py Qwen3NextDecoderLayer, extract_layer_index); embed_tokens and lm_head are
shared with the main model. Oracles: those shapes written out by hand below, and transformers' own
full-attention decoder layer (on the meta device) for the block.

A structural cross-check: the GPTQ export btbtyler09/Qwen3.5-35B-A3B-GPTQ-8bit states on its model card "MTP module
(mtp.*) BF16 785 tensors": 256 experts x 3 + router + shared expert (3) + shared gate + q/k/v/o + q/k norms + 2
layer norms + fc + 3 norms = 785 (per-expert tensors), no embedding or head among them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

DATA = Path(__file__).parent / "data"
#: Qwen/Qwen3.5-27B and Qwen/Qwen3.5-35B-A3B config.json as the repository keeps them (tests/data; quoted from
#: public code, see tests/test_hybrid.py QWEN35_REAL): both carry "mtp_num_hidden_layers": 1
Q27 = json.loads((DATA / "Qwen--Qwen3.5-27B.json").read_text())
Q35 = json.loads((DATA / "Qwen--Qwen3.5-35B-A3B.json").read_text())

#: Qwen/Qwen3-Next-80B-A3B's shapes (AI-Hypercomputer/maxtext src/maxtext/checkpoint_conversion/utils/
#: hf_model_configs.py @ e591f30cbbf217ed67ef71263ec0538239f9c3b8, qwen3_next_80b_a3b_dict, the shape fields), with
#: vLLM's count field (qwen3_next_mtp.py reads num_nextn_predict_layers) added
NEXT = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "decoder_sparse_step": 1,
        "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
        "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 512,
        "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10,
        "num_hidden_layers": 48, "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
        "rope_theta": 10000000, "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 151936, "num_nextn_predict_layers": 1}


def spec(cfg: dict):
    return parse_config(copy.deepcopy(cfg), where="config.json")


def without_mtp(cfg: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    for d in (cfg, cfg.get("text_config") or {}):
        d.pop("mtp_num_hidden_layers", None)
        d.pop("num_nextn_predict_layers", None)
    return cfg


def gated_attention(h: int, heads: int, kv: int, hd: int) -> int:
    """q_proj with the output gate (2 x heads x hd rows), k / v, o_proj, q / k norms (head_dim each)."""
    return h * 2 * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd


def qwen_moe(h: int, experts: int, inter: int, shared: int) -> int:
    """Routed experts (gate / up / down), router, shared expert, its sigmoid gate (hidden -> 1)."""
    return experts * 3 * h * inter + experts * h + 3 * h * shared + h


def predictor(h: int) -> int:
    """fc (2h -> h, no bias), pre_fc_norm_hidden, pre_fc_norm_embedding, norm."""
    return 2 * h * h + 3 * h


# ---- hand counts from vLLM's module shapes ----

def test_qwen35_moe_mtp_by_hand():
    h = 2048  # text_config: 16 heads / 2 KV of 256, 256 experts of 512, shared 512
    block = gated_attention(h, 16, 2, 256) + 2 * h + qwen_moe(h, 256, 512, 512)
    assert count_params(spec(Q35)).mtp == predictor(h) + block == 844_640_768
    # the card's 785 mtp.* tensors, from the same structure (per-expert tensors)
    assert 256 * 3 + 1 + 3 + 1 + 4 + 2 + 2 + 1 + 3 == 785


def test_qwen35_dense_mtp_by_hand():
    h = 5120  # text_config: 24 heads / 4 KV of 256, intermediate 17408
    block = gated_attention(h, 24, 4, 256) + 2 * h + 3 * h * 17408
    assert count_params(spec(Q27)).mtp == predictor(h) + block


def test_qwen3_next_mtp_by_hand():
    h = 2048
    block = gated_attention(h, 16, 2, 256) + 2 * h + qwen_moe(h, 512, 512, 512)
    assert count_params(spec(NEXT)).mtp == predictor(h) + block
    # mtp_num_hidden_layers (Qwen3.5's name) counts the same
    alt = dict(without_mtp(NEXT), mtp_num_hidden_layers=1)
    assert count_params(spec(alt)).mtp == predictor(h) + block
    # two MTP layers: two blocks, one fc and one set of predictor norms (vLLM builds them once)
    assert count_params(spec(dict(NEXT, num_nextn_predict_layers=2))).mtp == predictor(h) + 2 * block


def test_qwen3_next_mtp_layer_follows_the_ffn_rule_at_its_index():
    """vLLM's Qwen3NextDecoderLayer picks MoE / dense from the index in its prefix: mtp.layers.0 is index 0."""
    h = 2048
    dense = dict(NEXT, mlp_only_layers=[0])
    assert count_params(spec(dense)).mtp == predictor(h) + gated_attention(h, 16, 2, 256) + 2 * h + 3 * h * 5120
    # decoder_sparse_step 2: index 0 is dense ((0 + 1) % 2 != 0), index 1 sparse
    two = dict(NEXT, decoder_sparse_step=2, num_nextn_predict_layers=2)
    attn = gated_attention(h, 16, 2, 256) + 2 * h
    assert count_params(spec(two)).mtp == predictor(h) + 2 * attn + 3 * h * 5120 + qwen_moe(h, 512, 512, 512)


def test_no_count_field_no_mtp_row():
    assert count_params(spec(without_mtp(NEXT))).mtp == 0
    assert count_params(spec(without_mtp(Q35))).mtp == 0
    assert count_params(spec(dict(NEXT, num_nextn_predict_layers=0))).mtp == 0


# ---- the block against transformers' own full-attention decoder layer ----

def _hf_layer0(text_cfg: dict) -> int:
    cfg = dict(copy.deepcopy(text_cfg), num_hidden_layers=1, layer_types=["full_attention"])
    model = hf_model(cfg)
    layer = next(m for name, m in model.named_modules() if name.endswith("layers.0"))
    return unique_param_count(layer)


TINY = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
        "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4, "num_hidden_layers": 4,
        "tie_word_embeddings": False, "mtp_num_hidden_layers": 1}


@pytest.mark.parametrize("cfg", [
    dict(TINY, model_type="qwen3_5_text", intermediate_size=96),
    dict(TINY, model_type="qwen3_5_moe_text", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
         shared_expert_intermediate_size=48),
    dict(TINY, model_type="qwen3_next", intermediate_size=96, num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=32, shared_expert_intermediate_size=48, decoder_sparse_step=1, mlp_only_layers=[]),
    dict(TINY, model_type="qwen3_next", intermediate_size=96, num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=32, shared_expert_intermediate_size=48, decoder_sparse_step=1, mlp_only_layers=[0]),
], ids=["qwen3_5_text", "qwen3_5_moe_text", "qwen3_next", "qwen3_next-dense-mtp"])
def test_mtp_block_equals_transformers_full_attention_layer(cfg):
    h = cfg["hidden_size"]
    assert count_params(spec(cfg)).mtp == _hf_layer0(cfg) + predictor(h)


# ---- MTP changes nothing of the main model ----

@pytest.mark.parametrize("cfg", [Q27, Q35, NEXT], ids=["Qwen3.5-27B", "Qwen3.5-35B-A3B", "Qwen3-Next-80B-A3B"])
def test_mtp_changes_nothing_of_the_main_model(cfg):
    o = Options(context=8192, dtype="bf16", kv_dtype="bf16")
    a, b = analyze(spec(cfg), o), analyze(spec(without_mtp(cfg)), o)
    pa, pb = count_params(spec(cfg)), count_params(spec(without_mtp(cfg)))
    assert pa.mtp > 0 and pb.mtp == 0
    assert (pa.total, pa.active) == (pb.total, pb.active)
    assert a.weights_bytes == b.weights_bytes
    assert (a.kv.bytes_per_token, a.kv.state_bytes_per_sequence) == (b.kv.bytes_per_token, b.kv.state_bytes_per_sequence)
    assert a.decode_totals == b.decode_totals
    assert a.mtp_weights_bytes == 2 * pa.mtp and b.mtp_weights_bytes == 0  # bf16


# ---- the CLI: the row, and serve / plan still run ----

def test_cli_analyze_reports_the_mtp_row(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(Q35))
    r = run("analyze", p, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["mtp"] == 844_640_768
    assert r.json["memory"]["mtp_weights_bytes"] == 2 * 844_640_768
    r = run("analyze", p)
    assert r.code == 0 and "MTP layers (not in total)" in r.out


@pytest.mark.parametrize("cfg", [Q35, NEXT], ids=["Qwen3.5-35B-A3B", "Qwen3-Next-80B-A3B"])
def test_serve_and_plan_run_and_ignore_mtp(tmp_path, cfg):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(cfg))
    b.write_text(json.dumps(without_mtp(cfg)))
    ra = run("serve", a, "--hardware", "h100-sxm", "--gpus", "4", "--tp", "4", "--json")
    rb = run("serve", b, "--hardware", "h100-sxm", "--gpus", "4", "--tp", "4", "--json")
    assert ra.code == 0 and rb.code == 0, (ra.err, rb.err)
    assert ra.json["memory"]["per_gpu"]["weights_bytes"] == rb.json["memory"]["per_gpu"]["weights_bytes"]
    r = run("plan", a, "--hardware", "h100-sxm", "--json")
    assert r.code == 0, r.err


# ---- families whose MTP shapes are not modelled: a caveat, not a silent omission ----

def test_minimax_m3_mtp_modules_caveat():
    from tests.test_real_configs_text_audit2 import REAL
    s = spec(REAL["MiniMax-M3"])  # num_mtp_modules 7, num_nextn_predict_layers 1
    assert count_params(s).mtp == 0
    assert any("multi-token-prediction modules" in c and ": 7)" in c for c in s.caveats)
    assert not any("multi-token" in c for c in spec(dict(REAL["MiniMax-M3"], num_mtp_modules=0,
                                                         num_nextn_predict_layers=0)).caveats)


def test_ring_linear_mtp_layers_caveat():
    from tests.test_bailing_linear import RING_MINI  # inclusionAI/Ring-mini-linear-2.0's config, quoted there
    s = spec(dict(RING_MINI, num_nextn_predict_layers=1))
    assert count_params(s).mtp == 0 and not s.mtp_layers
    assert any("1 MTP layer(s)" in c and "not counted" in c for c in s.caveats)
    assert not any("MTP" in c for c in spec(RING_MINI).caveats)


def test_dedicated_mtp_embeddings_are_a_caveat():
    s = spec(dict(NEXT, mtp_use_dedicated_embeddings=True))
    assert count_params(s).mtp == count_params(spec(NEXT)).mtp
    assert any("mtp_use_dedicated_embeddings" in c for c in s.caveats)
    assert not any("mtp_use_dedicated_embeddings" in c for c in spec(Q35).caveats)  # false in the published config
