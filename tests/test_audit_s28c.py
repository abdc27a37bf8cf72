"""TensorRT-LLM registry audit (session 28, helper C): the architectures ``tensorrt_llm/_torch/models`` registers
(``_arch_index.py``'s MODEL_ARCH_TO_MODULE / MULTIMODAL_MODEL_TYPE_TO_MODULE, the older backend's MODEL_MAP) mapped to
their config.json layouts and checked against planner.

Most were already registered in planner, with real-config tests from earlier audits (Llama 4, DeepSeek-V3 / V3.2 /
V4, Nemotron-H and its Puzzle variant, NemotronNAS / DeciLM, EXAONE 4 / 4.5 / MoE, Phi-4-MM, Qwen3-Next, Qwen3.5,
Gemma 3 / 4, GLM-4 MoE / DSA, Kimi K2.5 / K3 / Linear, MiniMax M2 / M3, Step 3.5, Laguna, Seed-OSS ...).
What changed (analysis/families/s28c_trtllm.py):

- Speculative drafters shipped with a Llama / Qwen3 / DeepSeek-V3 model_type (DFlash and DSpark block drafters,
  TRT-LLM's EAGLE3LlamaForCausalLM / Eagle3DeepSeekV3ForCausalLM / MistralLarge3EagleForCausalLM /
  MTPDraftModelForCausalLM, the MLA EAGLE-3 heads) were counted as whole decoders with a full vocabulary embedding
  and lm_head (SpecForge's Qwen3-8B DFlash config: a 5-layer Qwen3); now refused by architectures[0].
- The hub's EAGLE-3 heads (LlamaForCausalLMEagle3: SpecForge's Llama-3.3-70B config came out at 2,957,008,896 as a
  1-layer Llama) and Qwen2ForRewardModel / Qwen2ForProcessRewardModel (counted as Qwen2 causal LMs with a vocabulary
  lm_head) are refused by the same wave's LMDeploy audit (analysis/families/s28d_lmdeploy_mlc.py); checked here on
  the TensorRT-LLM examples with fragments of the reason that do not depend on its wording.
- ``hyperclovax_vlm`` (HyperCLOVAX-SEED-Vision) ended in "standard decoder fields ... missing"; ``cosmos3`` (Cosmos3's
  unified layout) was read as its text_config alone; both now refused by name.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_class_model, hf_model, unique_param_count
from tests.test_audit_s28d import EAGLE3_LLAMA3_70B

#: sgl-project/SpecForge configs/llama3-70B-ealge3.json (commit 82b62f6e), verbatim: the EAGLE-3 draft head SpecForge
#: trains for Llama-3.3-70B (ModelOpt's export template writes the same architectures / model_type pair)
SPECFORGE_LLAMA3_70B_EAGLE3 = EAGLE3_LLAMA3_70B  # the same SpecForge config, quoted in tests/test_audit_s28d.py
#: sgl-project/SpecForge configs/deepseek-v3-671b-eagle3.json (commit c02a09a6), verbatim: an EAGLE-3 head for
#: DeepSeek-V3 written as a Llama layer, with its eagle_config
SPECFORGE_DSV3_EAGLE3 = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_aux_hidden_state": True},
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 7168,
    "initializer_range": 0.02, "intermediate_size": 40960, "max_position_embeddings": 163840, "model_type": "llama",
    "num_attention_heads": 56, "num_key_value_heads": 8, "num_hidden_layers": 1, "pad_token_id": 0,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.28.1",
    "use_cache": True, "vocab_size": 129280, "draft_vocab_size": 32000,
}
#: sgl-project/SpecForge configs/qwen3-8b-dflash.json (commit b3d2401f), verbatim: a 5-layer DFlash block drafter for
#: Qwen3-8B (z-lab's published DFlash drafters ship the same layout)
SPECFORGE_QWEN3_8B_DFLASH = {
    "architectures": ["DFlashDraftModel"], "attention_bias": False, "attention_dropout": 0.0,
    "auto_map": {"AutoModel": "modeling_dflash.DFlashDraftModel"}, "block_size": 16, "bos_token_id": 151643,
    "dtype": "bfloat16", "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 12288, "layer_types": ["full_attention"] * 5,
    "max_position_embeddings": 40960, "max_window_layers": 5, "model_type": "qwen3", "num_attention_heads": 32,
    "num_hidden_layers": 5, "num_key_value_heads": 8, "num_target_layers": 36, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": False,
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}
#: Qwen/Qwen2.5-Math-PRM-7B's config.json as a public note quotes it in full (find_string id 3946385282; its
#: per-line comments left out); TensorRT-LLM's supported-model table names it for Qwen2ForProcessRewardModel
QWEN25_MATH_PRM_7B = {
    "architectures": ["Qwen2ForProcessRewardModel"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_qwen2_rm.Qwen2RMConfig",
                 "AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"},
    "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584,
    "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 4096, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.37.0", "use_cache": True, "use_mrope": False,
    "use_sliding_window": False, "vocab_size": 152064,
}
#: TensorRT-LLM's own minimal Cosmos3 config (tests/unittest/_torch/..., _COSMOS3_MIN_CONFIG, find_string id
#: 56164453475), verbatim: the unified layout's root config, which TRT-LLM registers as model_type cosmos3
TRTLLM_COSMOS3_MIN = {
    "architectures": ["Cosmos3ForConditionalGeneration"], "model_type": "cosmos3",
    "model": {"_target": "omni_mot_model"},
    "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 1024, "intermediate_size": 2048,
                    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
                    "max_position_embeddings": 8192, "vocab_size": 151936},
    "vision_config": {"model_type": "qwen3_vl", "depth": 2, "hidden_size": 256, "intermediate_size": 512,
                      "num_heads": 4, "out_hidden_size": 1024},
}
#: HyperCLOVAX-SEED-Vision-Instruct-3B: no copy of its config.json was in the index. The keys below are the ones
#: TensorRT-LLM's modeling_hyperclovax.py reads (model_type hyperclovax_vlm, language_config["vocab_size"], a SigLIP
#: vision_config with image_size / patch_size, num_queries_vis_abstractor, proj_pos_emb, proj_prenorm, anyres,
#: img_start_id 100009 as vLLM's vendored HCXVisionConfig defaults it); the sizes are placeholders, the refusal is by
#: model_type and reads none of them
HCX_VISION_LAYOUT = {
    "architectures": ["HCXVisionForCausalLM"], "model_type": "hyperclovax_vlm",
    "language_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                      "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 28, "patch_size": 14},
    "anyres": True, "num_queries_vis_abstractor": 81, "proj_pos_emb": True, "proj_prenorm": False,
    "img_start_id": 100009,
}


def _refusal(tmp_path, cfg: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--json")
    assert r.code != 0
    err = r.err.strip()
    assert err.startswith("Error: ") and "Traceback" not in err
    return err


# ---- speculative drafters: refused by architecture -----------------------------------------------------------------


@pytest.mark.parametrize("cfg", [SPECFORGE_LLAMA3_70B_EAGLE3, SPECFORGE_DSV3_EAGLE3], ids=["llama3-70b", "dsv3"])
def test_eagle3_draft_heads_are_refused_not_counted_as_a_llama(tmp_path, cfg):
    err = _refusal(tmp_path, cfg)  # (refused by analysis/families/s28d_lmdeploy_mlc.py's table)
    assert "architecture LlamaForCausalLMEagle3" in err and "model_type 'llama'" in err
    assert "speculative-decoding draft" in err and "draft_vocab_size" in err


def test_dflash_block_drafter_is_refused(tmp_path):
    err = _refusal(tmp_path, SPECFORGE_QWEN3_8B_DFLASH)
    assert "architecture DFlashDraftModel" in err and "model_type 'qwen3'" in err
    assert "block_size tokens in one pass" in err and "target_layer_ids" in err


@pytest.mark.parametrize("arch,model_type,fragment", [
    # the MLA heads (vLLM's Eagle3DeepseekV2ForCausalLM: lightseekorg's Kimi-K3 EAGLE-3.1 head, model_type deepseek_v3)
    ("Eagle3DeepseekV2ForCausalLM", "deepseek_v3", "one MLA layer"),
    ("Eagle3DeepseekV3ForCausalLM", "deepseek_v3", "one MLA layer"),
    # TensorRT-LLM's registered names (_arch_index.py)
    ("EAGLE3LlamaForCausalLM", "llama", "draft_vocab_size"),
    ("Eagle3DeepSeekV3ForCausalLM", "deepseek_v3", "one MLA layer"),
    ("MistralLarge3EagleForCausalLM", "deepseek_v3", "fc (2 x hidden -> hidden)"),
    ("MTPDraftModelForCausalLM", "deepseek_v3", "eh_proj"),
    # RadixArk/Qwen3.8-27B-DSpark declares DSparkDraftModel with model_type qwen3 (a serving note, id 57820992615)
    ("DSparkDraftModel", "qwen3", "Markov and confidence heads"),
])
def test_drafter_architectures_are_refused_whatever_the_model_type(tmp_path, arch, model_type, fragment):
    cfg = dict(SPECFORGE_QWEN3_8B_DFLASH, architectures=[arch], model_type=model_type)
    cfg.pop("auto_map")
    err = _refusal(tmp_path, cfg)
    assert f"architecture {arch}" in err and f"model_type '{model_type}'" in err
    assert "speculative-decoding drafter" in err and fragment in err and "Analyse the target model" in err


def test_the_same_fields_as_a_plain_llama_are_still_counted():
    # the refusal keys on architectures[0] only: the draft's fields under LlamaForCausalLM are a 1-layer Llama,
    # counted as transformers' LlamaForCausalLM builds it on the meta device
    cfg = dict(SPECFORGE_LLAMA3_70B_EAGLE3, architectures=["LlamaForCausalLM"])
    cfg.pop("draft_vocab_size")
    oracle = unique_param_count(hf_model(cfg))
    assert count_params(parse_config(cfg)).total == oracle == 2_957_008_896


# ---- reward models: refused by architecture (the LMDeploy audit's table) --------------------------------------------


@pytest.mark.parametrize("arch", ["Qwen2ForProcessRewardModel", "Qwen2ForRewardModel"])
def test_qwen2_reward_models_are_refused(tmp_path, arch):
    # TRT-LLM's examples: Qwen/Qwen2.5-Math-PRM-7B and Qwen/Qwen2.5-Math-RM-72B (the same layout, a score head of
    # num_labels 2 / 1); refused by analysis/families/s28d_lmdeploy_mlc.py's table
    err = _refusal(tmp_path, dict(QWEN25_MATH_PRM_7B, architectures=[arch]))
    assert f"architecture {arch}" in err and "model_type 'qwen2'" in err
    assert "reward model" in err and "score" in err


def test_the_reward_models_fields_as_qwen2_for_causal_lm_match_transformers():
    cfg = {k: v for k, v in QWEN25_MATH_PRM_7B.items() if k != "auto_map"}
    cfg["architectures"] = ["Qwen2ForCausalLM"]
    oracle = unique_param_count(hf_model(cfg))
    assert count_params(parse_config(cfg)).total == oracle


# ---- refused by model_type -----------------------------------------------------------------------------------------


def test_cosmos3_unified_layout_is_refused_naming_the_transformers_format(tmp_path):
    err = _refusal(tmp_path, TRTLLM_COSMOS3_MIN)
    assert "model_type 'cosmos3'" in err and "mixture-of-transformers expert" in err
    assert "model_type cosmos3_omni" in err


def test_cosmos3_omni_of_the_same_sub_configs_matches_transformers():
    # transformers' format of the model: Cosmos3OmniConfig re-types vision_config as qwen3_vl_vision; the whole
    # Cosmos3OmniForConditionalGeneration (Qwen3-VL tower with DeepStack mergers + Qwen3-VL text model) on meta
    cfg = dict(TRTLLM_COSMOS3_MIN, model_type="cosmos3_omni", architectures=["Cosmos3OmniForConditionalGeneration"])
    cfg.pop("model")
    cfg["vision_config"] = dict(cfg["vision_config"], model_type="qwen3_vl_vision")
    oracle = unique_param_count(hf_class_model(cfg, "Cosmos3OmniForConditionalGeneration"))
    assert count_params(parse_config(cfg)).total == oracle


def test_hyperclovax_seed_vision_is_refused_by_name(tmp_path):
    err = _refusal(tmp_path, HCX_VISION_LAYOUT)
    assert "model_type 'hyperclovax_vlm'" in err and "C-Abstractor" in err and "language_config" in err
    assert "standard decoder fields" not in err


def test_refusals_raise_unsupported_model_error():
    for cfg in (SPECFORGE_LLAMA3_70B_EAGLE3, QWEN25_MATH_PRM_7B, TRTLLM_COSMOS3_MIN, HCX_VISION_LAYOUT):
        with pytest.raises(UnsupportedModelError):
            parse_config(cfg)
