"""LMDeploy / MLC-LLM registry audit (wave s28 D; analysis/families/s28d_lmdeploy_mlc.py).

LMDeploy's PyTorch engine (lmdeploy/pytorch/models/module_map.py, architecture -> module) and TurboMind
(lmdeploy/turbomind/supported_models.py), and MLC-LLM's MODELS (python/mlc_llm/model/model.py, keyed by model_type),
mapped onto what planner reads. Most entries were already counted (Llama ... Qwen3.5, InternVL, CogVLM,
DeepSeek-VL2, Phi-3-vision, MiniCPM-V 2.5 / 2.6 / 4.x, Qwen-VL, Gemma 3, RWKV-5 / 6, Orion ...) or refused by name
(InternLM-XComposer2, GLM-4V-9B's EVA2-CLIP tower, Mono-InternVL, Intern-S2-Mobius / -Preview, SDAR; a BERT config is
refused as an encoder by its type_vocab_size). What changed:

- MLC's ``phi-msft`` (microsoft/phi-2 and phi-1_5 before their transformers conversion) ended in "unknown model_type
  'phi-msft', read as a generic Llama-style decoder: field 'intermediate_size' is null but required"; it is now read as
  transformers' Phi (its PhiConfig fields translated) and equals transformers' PhiForCausalLM, 2,779,683,840 for Phi-2.
  Phixtral (the same model_type with num_local_experts) goes to wave s28 A's MoE builder (analysis/families/s28a_mlx.py).
  ``mixformer-sequential`` (phi-1 / phi-1_5's first format, which MLC reads as phi-msft) ended in the same error; it
  is read the same way when its block is the released one.
- LMDeploy's reward models (InternLM2ForRewardModel, Qwen2ForRewardModel; Qwen2ForProcessRewardModel beside them) were
  counted as InternLM2 / Qwen2 generative models (a vocabulary head, the reward head left out); refused by
  architecture.
- EAGLE drafts (LlamaForCausalLMEagle3 / LlamaForCausalLMEagle, LMDeploy's Eagle3LlamaForCausalLM /
  EagleLlamaForCausalLM) were read as a whole 1-layer Llama, and MLC's eagle / medusa model_types as generic Llamas;
  LMDeploy's MetaMoE (shared expert banks) and Intern-S1.1 (interns1_1: "not a known family") are refused by name, and
  an Intern-S1-Pro config with a ts_config (LMDeploy's time-series encoder, left uncounted before) is refused.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.clirun import run, verify_self_checks
from tests.oracle import hf_model, unique_param_count

#: microsoft/phi-2's config.json in its phi-msft (remote-code) revision: the fields mlabonne/phixtral-4x2_8's
#: config.json repeats (quoted field for field in mlxcel's phixtral loader tests) without its two MoE fields; a
#: copy of phi-2's own config quotes the same _name_or_path, auto_map, model_type and transformers_version
PHI2_MSFT = {
    "_name_or_path": "microsoft/phi-2", "activation_function": "gelu_new", "architectures": ["PhiForCausalLM"],
    "attn_pdrop": 0.0, "auto_map": {"AutoConfig": "configuration_phi.PhiConfig",
                                    "AutoModelForCausalLM": "modeling_phi.PhiForCausalLM"},
    "embd_pdrop": 0.0, "flash_attn": False, "flash_rotary": False, "fused_dense": False, "img_processor": None,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "phi-msft", "n_embd": 2560, "n_head": 32,
    "n_head_kv": None, "n_inner": None, "n_layer": 32, "n_positions": 2048, "resid_pdrop": 0.1, "rotary_dim": 32,
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.35.2", "vocab_size": 51200}
#: mlabonne/phixtral-4x2_8's config.json (as mlxcel's phixtral tests quote it; its mlx quantization blocks left out)
PHIXTRAL_4X2_8 = dict(PHI2_MSFT, num_experts_per_tok=2, num_local_experts=4)
PHIXTRAL_4X2_8.pop("_name_or_path")
#: phi-1_5 in the mixformer-sequential format: no published config.json of it was at hand, so its widths (n_embd 2048,
#: 24 layers, 32 heads, rotary_dim 32, vocab 51200: litgpt's "phi-1_5" Config, MLC's Phi1Config defaults) in the fields
#: MLC's PhiConfig reads, with the architecture block litgpt's parity test builds MixFormerSequentialForCausalLM with
PHI15_MIXFORMER = {
    "activation_function": "gelu_new",
    "architecture": {"block_cls": "parallel", "mixer": {}, "mlp": {"mlp_cls": "mlp"}},
    "architectures": ["MixFormerSequentialForCausalLM"], "model_type": "mixformer-sequential", "n_embd": 2048,
    "n_head": 32, "n_inner": None, "n_layer": 24, "n_positions": 2048, "rotary_dim": 32, "vocab_size": 51200,
    "layer_norm_epsilon": 1e-05, "tie_word_embeddings": False}

#: internlm/internlm2-chat-1_8b's config.json fields (tests/test_real_configs_remote_audit.py), the base
#: internlm/internlm2-1_8b-reward is trained from (its model card), under the reward checkpoint's architecture
INTERNLM2_1_8B_REWARD = {
    "architectures": ["InternLM2ForRewardModel"], "bias": False, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
    "max_position_embeddings": 32768, "model_type": "internlm2", "num_attention_heads": 16, "num_hidden_layers": 24,
    "num_key_value_heads": 8, "pad_token_id": 2, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
    "tie_word_embeddings": False, "torch_dtype": "float16", "use_cache": True, "vocab_size": 92544}
#: sgl-project/SpecForge configs/llama3-70B-ealge3.json: the EAGLE-3 draft config format (LlamaForCausalLMEagle3)
EAGLE3_LLAMA3_70B = {
    "architectures": ["LlamaForCausalLMEagle3"], "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 28672,
    "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 64, "num_key_value_heads": 8,
    "num_hidden_layers": 1, "pad_token_id": 0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 4096, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.28.1",
    "use_cache": True, "vocab_size": 128256, "draft_vocab_size": 32000}


def _write(tmp_path, cfg: dict, name: str = "config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def _analyze(tmp_path, cfg: dict, name: str = "config.json") -> dict:
    r = run("analyze", str(_write(tmp_path, cfg, name)), "--json", "--context", "2048")
    assert r.code == 0, r.err
    return r.json


def _hf_phi(hidden, layers, heads, kv, inter, vocab, rotary) -> int:
    """transformers' PhiForCausalLM of those shapes on the meta device (n_embd -> hidden_size, n_inner ->
    intermediate_size, rotary_dim -> partial_rotary_factor x head_dim)."""
    return unique_param_count(hf_model({
        "model_type": "phi", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "intermediate_size": inter, "vocab_size": vocab,
        "partial_rotary_factor": rotary / (hidden // heads), "tie_word_embeddings": False}))


# ---- MLC's phi-msft: Phi-2's remote-code config -------------------------------------------------------------------


def test_phi2_msft_equals_transformers_phi(tmp_path):
    oracle = _hf_phi(2560, 32, 32, 32, 4 * 2560, 51200, 32)
    # by hand from modeling_phi.py (phi-msft): wte; per block ln (w, b), Wqkv (3 x 2560 rows, biased), out_proj, fc1 /
    # fc2 (biased, n_inner 4 x n_embd); lm_head.ln and the biased lm_head.linear
    h, v = 2560, 51200
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h)
    assert oracle == v * h + 32 * block + 2 * h + v * h + v == 2_779_683_840
    d = _analyze(tmp_path, PHI2_MSFT)
    assert d["params"]["total"] == d["params"]["active"] == oracle
    # 32 layers of K and V, 32 heads x 80, fp16
    assert d["kv_cache"]["bytes_per_token"] == 32 * 2 * 32 * 80 * 2 == 327_680
    assert any("read as transformers' Phi" in c for c in d["caveats"])
    assert not any("not a known family" in c for c in d["caveats"])


def test_phi_msft_config_rules_match_transformers(tmp_path):
    # PhiConfig pads vocab_size to a multiple of pad_vocab_size_multiple (64), takes n_inner and n_head_kv when set,
    # caps rotary_dim at the head width
    cfg = dict(PHI2_MSFT, n_embd=256, n_layer=2, n_head=4, n_head_kv=2, n_inner=700, vocab_size=1000, rotary_dim=128)
    d = _analyze(tmp_path, cfg)
    assert d["params"]["total"] == _hf_phi(256, 2, 4, 2, 700, 1024, 64)
    assert d["model"]["vocab_size"] == 1024
    assert d["kv_cache"]["bytes_per_token"] == 2 * 2 * 2 * 64 * 2


def test_phi_1_5_mixformer_sequential_equals_transformers_phi(tmp_path):
    oracle = _hf_phi(2048, 24, 32, 32, 4 * 2048, 51200, 32)
    assert oracle == 1_418_270_720  # microsoft/phi-1_5's published 1.42B
    assert _analyze(tmp_path, PHI15_MIXFORMER)["params"]["total"] == oracle
    assert _analyze(tmp_path, dict(PHI15_MIXFORMER, architecture=None), "null.json")["params"]["total"] == oracle
    glu = dict(PHI15_MIXFORMER, architecture={"block_cls": "parallel", "mixer": {}, "mlp": {"mlp_cls": "glu"}})
    run("analyze", _write(tmp_path, glu, "glu.json")).assert_error("architecture", "not the released parallel block")
    per_layer = dict(PHI15_MIXFORMER, architecture=[PHI15_MIXFORMER["architecture"]] * 24)
    run("analyze", _write(tmp_path, per_layer, "list.json")).assert_error("architecture", "per-layer")


def test_phi_msft_verifies(tmp_path):
    """verify's exact self-checks (parameters, decode FLOPs, KV bytes: predicted == measured) on a tiny phi-msft."""
    verify_self_checks(tmp_path, dict(PHI2_MSFT, n_embd=64, n_layer=2, n_head=4, vocab_size=256, rotary_dim=8))


def test_phixtral_goes_to_the_moe_builder(tmp_path):
    # the hub's modeling_phi.py of mlabonne/phixtral-*: phi-2's block with the MLP replaced by 4 biased fc1 / fc2
    # experts (n_inner 4 x n_embd) behind a bias-free gate (experts x n_embd); 2 routed per token
    h, v, e, k = 2560, 51200, 4, 2
    expert = 2 * h * 4 * h + 4 * h + h
    layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + e * h + e * expert
    total = v * h + 32 * layer + 2 * h + h * v + v
    d = _analyze(tmp_path, PHIXTRAL_4X2_8)
    assert d["params"]["total"] == total == 7_814_405_120
    assert d["params"]["active"] == total - 32 * (e - k) * expert
    # one expert is the dense block
    assert _analyze(tmp_path, dict(PHI2_MSFT, num_local_experts=1), "one.json")["params"]["total"] == 2_779_683_840
    # the Phi fields both read are checked alike (phi_config): an odd rotary width is refused with experts too
    for cfg in (dict(PHI2_MSFT, rotary_dim=31), dict(PHIXTRAL_4X2_8, rotary_dim=31)):
        run("analyze", _write(tmp_path, cfg)).assert_error("rotary_dim", "positive even number")


@pytest.mark.parametrize("patch, fragment", [
    ({"n_head": 33}, "field 'n_head' (33) must divide n_embd"),
    ({"rotary_dim": 33}, "field 'rotary_dim' (33) must be a positive even number"),
    ({"n_head_kv": 5}, "field 'n_head_kv' (5) must divide n_head"),
    ({"n_layer": "x"}, "field 'n_layer' must be an integer"),
    ({"n_embd": None}, "n_embd"),
])
def test_phi_msft_bad_fields_are_one_error_line(tmp_path, patch, fragment):
    run("analyze", _write(tmp_path, dict(PHI2_MSFT, **patch))).assert_error(fragment)


# ---- refused: reward models, drafts, MetaMoE, Intern-S1.1 ---------------------------------------------------------


def test_reward_models_are_refused_by_architecture(tmp_path):
    run("analyze", _write(tmp_path, INTERNLM2_1_8B_REWARD)).assert_error(
        "InternLM2ForRewardModel", "reward model", "v_head Linear(hidden, 1)")
    # the same fields as a causal LM are counted (the reward head was miscounted as this vocabulary head)
    lm = dict(INTERNLM2_1_8B_REWARD, architectures=["InternLM2ForCausalLM"])
    assert _analyze(tmp_path, lm, "lm.json")["params"]["total"] == 3_778_220_032 // 2
    for arch in ("Qwen2ForRewardModel", "Qwen2ForProcessRewardModel"):
        # Qwen2.5-72B's widths (Qwen2.5-Math-RM-72B's base) under the reward architecture
        qwen = {"architectures": [arch], "model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568,
                "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 152064,
                "num_labels": 1}
        run("analyze", _write(tmp_path, qwen, f"{arch}.json")).assert_error(arch, "reward model", "score head")


def test_eagle_drafts_are_refused(tmp_path):
    run("analyze", _write(tmp_path, EAGLE3_LLAMA3_70B)).assert_error(
        "LlamaForCausalLMEagle3", "speculative-decoding draft", "draft_vocab_size")
    for arch in ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle", "EagleLlamaForCausalLM"):
        run("analyze", _write(tmp_path, dict(EAGLE3_LLAMA3_70B, architectures=[arch]), f"{arch}.json")).assert_error(
            arch, "speculative-decoding draft")
    base = {k: v for k, v in EAGLE3_LLAMA3_70B.items() if k not in ("architectures", "draft_vocab_size")}
    for mt, fragment in (("eagle", "EAGLE draft"), ("medusa", "medusa_num_heads")):
        run("analyze", _write(tmp_path, dict(base, model_type=mt), f"{mt}.json")).assert_error(
            f"model_type '{mt}'", fragment)


def test_meta_moe_and_interns1_1_are_refused(tmp_path):
    # LMDeploy's MetaMoE is a qwen3_5_moe config under this architecture (lmdeploy/pytorch/configurations/meta_moe.py)
    meta = {"architectures": ["MetaMoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
            "text_config": {"model_type": "qwen3_5_moe_text", "num_experts": 2560, "mtp_num_experts": 256}}
    run("analyze", _write(tmp_path, meta)).assert_error("MetaMoeForConditionalGeneration", "num_meta_moe_blocks")
    s11 = {"architectures": ["InternS1_1_ForConditionalGeneration"], "model_type": "interns1_1",
           "text_config": {"model_type": "interns1_pro_text"}, "vision_config": {}}
    run("analyze", _write(tmp_path, copy.deepcopy(s11), "s11.json")).assert_error(
        "model_type 'interns1_1'", "Intern-S1-Pro", "ts_config")


def test_intern_s1_pro_with_a_time_series_encoder_is_refused(tmp_path):
    from tests.test_interns1_pro import INTERN_S1_PRO

    # LMDeploy's InternS1ProForConditionalGeneration builds InternS1ProTimeSeriesModel from a ts_config (Whisper-style
    # encoder_layers of d_model, subsampling, a projector); the published config has none and stays counted
    ts = {"d_model": 768, "encoder_layers": 12, "num_mel_bins": 80, "ts_adapt_in_dim": 256, "ts_adapt_out_dim": 1024}
    run("analyze", _write(tmp_path, dict(INTERN_S1_PRO, ts_config=ts))).assert_error(
        "ts_config", "time-series encoder")
    r = run("analyze", str(_write(tmp_path, INTERN_S1_PRO, "pro.json")), "--json")
    assert r.code == 0, r.err
