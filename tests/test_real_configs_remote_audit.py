"""Real hub configs of remote-code families (trust_remote_code: no transformers class, or a hub format that differs
from transformers' port), audited without running any remote code.

The oracle is the checkpoint itself: the ``metadata.total_size`` of its model.safetensors.index.json /
pytorch_model.bin.index.json divided by the bytes per element (bf16 / fp16: 2), with what the index counts beyond
the model's parameters named where it applies (a tied head stored twice by transformers < 4.30's .bin sharding; a
MiMo MTP layer; InternLM v1's fp32 rotary inv_freq buffers; AutoGPTQ's zero biases). Where no index is in the code index, a hand count from the module shapes
the remote modeling code builds (or prints) is written here. Each config is quoted from its source, named above it.
KV-cache bytes per token are checked against the remote code's cache shapes.

Bugs this audit found and fixed (the marked tests fail on the code before the fix):
- AutoGPTQ folders of 2023 whose config.json has no quantization_config (bits / group_size only in a sidecar
  quantize_config.json: Tele-AI's TeleChat 7B_4bit / 12B_8bit) were priced as fp16: TeleChat-7B-int4's weights
  14,400,036,864 bytes instead of 4,717,584,384. The sidecar is now read as the GPTQ quantization_config.
- model_type ``minicpm_sala`` (MiniCPM-SALA: sparse + lightning-attention layers) fell to the generic Llama reading
  with a warning; it is refused by name.
- tiiuae's remote-code Falcon format (model_type RefinedWeb / RefinedWebModel, modelling_RW.py) was always read as
  Falcon-7B's old architecture: Falcon-40B's ``n_head_kv`` ignored (one K/V head instead of 8) and one LayerNorm per
  block instead of ln_attn + ln_mlp: 40,861,908,992 parameters instead of 41,303,293,952 and a KV cache of 15,360
  instead of 122,880 B/token (8x under). A config with n_head_kv is now the new decoder architecture, one without it
  the old, as transformers' convert_custom_code_checkpoint.py converts them.
- InternLM2's first hub revisions (internlm2-chat-7b and fine-tunes cut from it) say ``model_type: internlm`` with
  ``architectures: [InternLM2ForCausalLM]``; planner read them as InternLM v1 and refused the config (v1 is
  multi-head only) instead of reading the InternLM2 its auto_map / vLLM load.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config, read_config_file
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params

from .oracle import hf_param_count
from .test_chatglm import hand_count as chatglm_hand
from .test_remote import qwen_hand

BF16 = 2

# ---- configs, quoted from their sources ------------------------------------------------------------------------

# Qwen/Qwen-72B: config.json of the hub mirror mapengAdam/qianwen-72B (config.json; auto_map left out)
QWEN_72B = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.1, "bf16": True, "emb_dropout_prob": 0.1,
    "fp16": False, "fp32": False, "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 49152,
    "kv_channels": 128, "layer_norm_epsilon": 1e-05, "max_position_embeddings": 8192, "model_type": "qwen",
    "no_bias": True, "num_attention_heads": 64, "num_hidden_layers": 80, "onnx_safe": None,
    "padded_vocab_size": 152064, "params_dtype": "torch.bfloat16", "rope_theta": 1000000, "rotary_emb_base": 1000000,
    "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192, "softmax_in_fp32": False,
    "tie_word_embeddings": False, "tokenizer_type": "QWenTokenizer", "torch_dtype": "bfloat16",
    "transformers_version": "4.29.2", "use_cache": True, "use_cache_kernel": False, "use_cache_quantization": False,
    "use_dynamic_ntk": False, "use_flash_attn": False, "use_logn_attn": False, "vocab_size": 152064}
# mapengAdam/qianwen-72B model.safetensors.index.json: "total_size": 144575840256 (bf16)
QWEN_72B_TOTAL_SIZE = 144_575_840_256

# internlm/internlm2-chat-1_8b (an XTuner fine-tune's copy: xiaoluo333/-Xtuner config.json; auto_map left out)
INTERNLM2_1_8B = {
    "architectures": ["InternLM2ForCausalLM"], "attn_implementation": "eager", "bias": False, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 32768, "model_type": "internlm2",
    "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 8, "pad_token_id": 2,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000, "tie_word_embeddings": False,
    "torch_dtype": "float16", "transformers_version": "4.39.3", "use_cache": True, "vocab_size": 92544}
# xiaoluo333/-Xtuner pytorch_model.bin.index.json: "total_size": 3778220032 (fp16; tok_embeddings and output
# untied, both listed)
INTERNLM2_1_8B_TOTAL_SIZE = 3_778_220_032

# internlm/internlm2-chat-7b as first published (model_type "internlm", InternLM2ForCausalLM, auto_map into
# modeling_internlm2.py): a fine-tune's copy, NanSang2000/S1mpleAgent config.json (auto_map kept: it is the point)
INTERNLM2_7B_OLD = {
    "architectures": ["InternLM2ForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_internlm.InternLMConfig",
                 "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM",
                 "AutoModel": "modeling_internlm2.InternLM2ForCausalLM"},
    "bias": False, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "internlm",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pad_token_id": 2,
    "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 1.0, "type": "dynamic"}, "rope_theta": 1000000,
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.33.2", "use_cache": True,
    "vocab_size": 92544}
# NanSang2000/S1mpleAgent model.safetensors.index.json: "total_size": 15475417088 (fp16; attention.wqkv, wo,
# feed_forward.w1/w2/w3, tok_embeddings, output)
INTERNLM2_7B_OLD_TOTAL_SIZE = 15_475_417_088

# tiiuae/falcon-40b (remote-code RefinedWeb format): config.json of the hub mirror Decentralised-AI/falcon-40b
# (auto_map left out)
FALCON_40B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["RWForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0,
    "hidden_size": 8192, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "RefinedWeb",
    "n_head": 128, "n_head_kv": 8, "n_layer": 60, "parallel_attn": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024}
# Decentralised-AI/falcon-40b pytorch_model.bin.index.json: "total_size": 83671941120 (bf16). Saved by transformers
# 4.27 (shard_checkpoint before storage de-duplication), it lists lm_head.weight beside transformer.word_embeddings
# and counts the tied matrix twice: parameters = total_size / 2 - vocab x hidden.
FALCON_40B_TOTAL_SIZE = 83_671_941_120

# tiiuae/falcon-7b (remote-code RefinedWebModel format) config.json as tenstorrent's Falcon-7B demo copies it
# (code-index file 3503026307; its own "padded_heads" field and auto_map left out)
FALCON_7B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["RWForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "RefinedWebModel",
    "multi_query": True, "n_head": 71, "n_layer": 32, "parallel_attn": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024}

# tiiuae/falcon-7b's shapes under model_type "RefinedWeb" (no n_head_kv, multi_query): christokt/FalconLLM
# config.json, as it ships it
FALCON_7B_AS_REFINEDWEB = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["RWForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "RefinedWeb",
    "multi_query": True, "n_head": 71, "n_layer": 32, "parallel_attn": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024}

# mosaicml/mpt-7b-instruct config.json (mikeybellissimo/LoRA-MPT SavedModels/MPT-7B-Instruct/config.json; its
# init_config block and auto_map left out)
MPT_7B = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                    "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
                    "prefix_lm": False, "qk_ln": False, "softmax_scale": None},
    "d_model": 4096, "emb_pdrop": 0, "embedding_fraction": 1.0, "expansion_ratio": 4, "init_device": "cpu",
    "learned_pos_emb": True, "logit_scale": None, "max_seq_len": 2048, "model_type": "mpt", "n_heads": 32,
    "n_layers": 32, "no_bias": True, "norm_type": "low_precision_layernorm", "resid_pdrop": 0,
    "tokenizer_name": "EleutherAI/gpt-neox-20b", "torch_dtype": "float16", "transformers_version": "4.30.0.dev0",
    "use_cache": False, "verbose": 0, "vocab_size": 50432}
# mikeybellissimo/LoRA-MPT pytorch_model.bin.index.json: "total_size": 13298573312 (fp16; transformer.wte tied,
# no lm_head entry)
MPT_7B_TOTAL_SIZE = 13_298_573_312

# XiaomiMiMo/MiMo-7B (remote code, model_type mimo): a fine-tune's copy, jj8127/mimo_kor config.json (auto_map left
# out)
MIMO_7B = {
    "architectures": ["MiMoForCausalLM"], "tokenizer_class": "Qwen2Tokenizer", "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 32768, "max_window_layers": 36,
    "model_type": "mimo", "num_attention_heads": 32, "head_dim": 128, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 640000, "sliding_window": 32768,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
    "use_mrope": False, "use_sliding_window": False, "vocab_size": 151680, "attention_bias": True,
    "num_nextn_predict_layers": 1}
# jj8127/mimo_kor model.safetensors.index.json: "total_size": 15666819072 (bf16), model.mtp_layers.0.* included
MIMO_7B_TOTAL_SIZE = 15_666_819_072

# LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct: the ExaoneConfig a model note prints (code-index file 46001266965;
# _name_or_path and auto_map left out), beside the module tree the hub's modeling_exaone.py built from it
EXAONE_3_7_8B = {
    "activation_function": "silu", "architectures": ["ExaoneForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 1, "embed_dropout": 0.0, "eos_token_id": 361, "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "layer_norm_epsilon": 1e-05, "max_position_embeddings": 4096, "model_type": "exaone",
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_layers": 32, "pad_token_id": 0, "rope_scaling": None,
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.45.2",
    "use_cache": True, "vocab_size": 102400}


# THUDM/codegeex2-6b config.json (the hub mirror Lionelpang/codegeex2-6b; auto_map left out): ChatGLM2's shapes
# with rotary_percent and interleaved_qkv written out
CODEGEEX2_6B = {
    "model_type": "chatglm", "architectures": ["ChatGLMModel"], "add_bias_linear": False, "add_qkv_bias": True,
    "apply_query_key_layer_scaling": True, "apply_residual_connection_post_layernorm": False,
    "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
    "ffn_hidden_size": 13696, "fp32_residual_connection": False, "hidden_dropout": 0.0, "hidden_size": 4096,
    "interleaved_qkv": False, "kv_channels": 128, "layernorm_epsilon": 1e-05, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 28, "original_rope": True,
    "padded_vocab_size": 65024, "post_layer_norm": True, "rmsnorm": True, "rotary_percent": 0.5, "seq_length": 8192,
    "use_cache": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.1", "tie_word_embeddings": False,
    "eos_token_id": 2}

# THUDM/glm-4-9b-chat-1m config.json as a vLLM GLM-4 test quotes it ("as published ... Its multi_query_group_num is 4;
# glm-4-9b-chat's is 2"; code-index file 68859437993)
GLM4_9B_CHAT_1M = {
    "model_type": "chatglm", "add_bias_linear": False, "add_qkv_bias": True,
    "apply_residual_connection_post_layernorm": False, "ffn_hidden_size": 13696, "hidden_size": 4096,
    "kv_channels": 128, "layernorm_epsilon": 1.5625e-07, "multi_query_attention": True, "multi_query_group_num": 4,
    "num_attention_heads": 32, "num_layers": 40, "original_rope": True, "padded_vocab_size": 151552,
    "post_layer_norm": True, "rmsnorm": True, "rope_ratio": 10000, "seq_length": 1048576, "tie_word_embeddings": False}

# Qwen/Qwen-1_8B-Chat config.json (a fine-tune's copy: CCKS2024/CCKS2024-Summary-of-incidents
# qwen-1_8b-chat_model/config.json; _name_or_path and auto_map left out)
QWEN_1_8B = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0, "bf16": True, "emb_dropout_prob": 0.0,
    "fp16": False, "fp32": False, "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 11008,
    "kv_channels": 128, "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192, "model_type": "qwen",
    "no_bias": True, "num_attention_heads": 16, "num_hidden_layers": 24, "onnx_safe": None, "rotary_emb_base": 10000,
    "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192, "softmax_in_fp32": False,
    "tie_word_embeddings": False, "tokenizer_class": "QWenTokenizer", "torch_dtype": "bfloat16",
    "transformers_version": "4.37.2", "use_cache": True, "use_cache_kernel": False, "use_cache_quantization": False,
    "use_dynamic_ntk": True, "use_flash_attn": True, "use_logn_attn": True, "vocab_size": 151936}

# Qwen/Qwen-7B-Chat-Int4 (AutoGPTQ, 4 bits, group 128): config.json of gaoqinqinshan/qingshanyiliao (auto_map left
# out)
QWEN_7B_INT4 = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0, "bf16": False, "emb_dropout_prob": 0.0,
    "fp16": True, "fp32": False, "hidden_size": 4096, "intermediate_size": 22016, "initializer_range": 0.02,
    "kv_channels": 128, "layer_norm_epsilon": 1e-06, "max_position_embeddings": 32768, "model_type": "qwen",
    "no_bias": True, "num_attention_heads": 32, "num_hidden_layers": 32, "onnx_safe": None,
    "quantization_config": {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False,
                            "static_groups": False, "sym": True, "true_sequential": True, "model_name_or_path": None,
                            "model_file_base_name": "model", "quant_method": "gptq"},
    "rotary_emb_base": 10000, "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192,
    "tie_word_embeddings": False, "tokenizer_class": "QWenTokenizer", "transformers_version": "4.32.0",
    "use_cache": True, "use_dynamic_ntk": True, "use_flash_attn": "auto", "use_logn_attn": True, "vocab_size": 151936}
# gaoqinqinshan/qingshanyiliao model.safetensors.index.json: "total_size": 5860564992 bytes; every quantized
# projection (c_attn, attn.c_proj, w1, w2, mlp.c_proj) lists qweight, qzeros, scales, g_idx and a bias
QWEN_7B_INT4_TOTAL_SIZE = 5_860_564_992

# openbmb/MiniCPM-SALA config.json as a GPTQModel quantisation log prints it (code-index file 53941575406: the shape
# fields shown, its quantization_config left out); the print is cut at "num_attent...": num_attention_heads,
# num_hidden_layers and num_key_value_heads are those of the same config as an MLX port's test quotes it (code-index
# file 4232055247, which also lists the sparse layers 0, 9, 16, 17, 22, 29, 30, 31)
MINICPM_SALA = {
    "architectures": ["MiniCPMSALAForCausalLM"], "attention_bias": False, "attn_use_output_gate": True,
    "attn_use_rope": False, "dim_model_base": 256, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 16384, "lightning_head_dim": 128, "lightning_nh": 32, "lightning_nkv": 32,
    "lightning_scale": "1/sqrt(d)", "lightning_use_rope": True, "max_position_embeddings": 524288,
    "mixer_types": (["minicpm4"] + ["lightning-attn"] * 8 + ["minicpm4"] + ["lightning-attn"] * 6
                    + ["minicpm4"] * 2 + ["lightning-attn"] * 4 + ["minicpm4"] + ["lightning-attn"] * 6
                    + ["minicpm4"] * 3),
    "model_type": "minicpm_sala", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "scale_depth": 1.4, "scale_emb": 12,
    "sparse_config": {"block_size": 64, "dense_len": 8192, "init_blocks": 1, "kernel_size": 32, "kernel_stride": 16,
                      "topk": 64, "use_nope": False, "window_size": 2048},
    "tie_word_embeddings": False, "use_output_gate": True, "use_output_norm": True, "vocab_size": 73448}


# Tele-AI/TeleChat-7B: config.json of the model folder Tele-AI/Telechat ships in its GitHub repository
# (models/7B/config.json; auto_map left out)
TELECHAT_7B = {
    "apply_residual_connection_post_layernorm": False, "architectures": ["TelechatForCausalLM"],
    "attention_dropout": 0.1, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_dropout": 0.1, "hidden_size": 4096, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True, "model_type": "telechat", "n_head": 32,
    "n_inner": None, "n_layer": 30, "pad_token_id": 3, "seq_length": 8192, "skip_bias_add": True,
    "skip_bias_add_qkv": False, "slow_but_exact": False, "transformers_version": "4.30.0", "unk_token_id": 0,
    "use_cache": True, "vocab_size": 160256, "ffn_hidden_size": 12288, "flash_attn": True, "training_seqlen": 8192,
    "embed_layernorm": False}
# Tele-AI/Telechat models/7B/pytorch_model.bin.index.json: "total_size": 14400036864 (fp16; h.N.self_attention
# query / key_value / dense (+bias), mlp gate / up / down (+bias); no lm_head entry: tied to word_embeddings)
TELECHAT_7B_TOTAL_SIZE = 14_400_036_864

# Tele-AI/TeleChat-12B: Tele-AI/Telechat models/12B_8bit/config.json (the 12B's shapes; its int8 packing is in the
# folder's quantize_config.json, not here; auto_map left out)
TELECHAT_12B = {
    "apply_residual_connection_post_layernorm": False, "architectures": ["TelechatForCausalLM"],
    "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 5120, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True, "model_type": "telechat", "n_head": 32,
    "n_inner": None, "n_layer": 38, "offset_alibi": 100, "pad_token_id": 3, "pretraining_tp": 2, "seq_length": 8192,
    "skip_bias_add": True, "skip_bias_add_qkv": False, "slow_but_exact": False, "transformers_version": "4.24.0",
    "unk_token_id": 0, "use_cache": True, "vocab_size": 120000, "ffn_hidden_size": 12288, "flash_attn": True,
    "tie_word_embeddings": False, "training_seqlen": 8192, "logn": False, "semi_causal": False,
    "embed_layernorm": False}
# Tele-AI/Telechat models/12B-V2/pytorch_model.bin.index.json: "total_size": 24772864000 (16-bit; lm_head listed)
TELECHAT_12B_TOTAL_SIZE = 24_772_864_000

# Tele-AI/Telechat models/7B_4bit: config.json (auto_map left out) and the folder's quantize_config.json
TELECHAT_7B_INT4 = dict(TELECHAT_7B, _name_or_path="../models/7B", logn=False, torch_dtype="float16")
TELECHAT_7B_INT4_QUANTIZE_CONFIG = {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False,
                                    "sym": True, "true_sequential": True, "model_name_or_path": None,
                                    "model_file_base_name": None}

# internlm/internlm-chat-7b (v1): a fine-tune's copy, wangyantong2000/MLLM config.json (auto_map and _name_or_path
# left out)
INTERNLM_CHAT_7B = {
    "architectures": ["InternLMForCausalLM"], "bias": True, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 2048, "model_type": "internlm", "num_attention_heads": 32, "num_hidden_layers": 32,
    "pad_token_id": 2, "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "torch_dtype": "float16",
    "transformers_version": "4.34.0", "use_cache": True, "vocab_size": 103168}
# wangyantong2000/MLLM pytorch_model.bin.index.json: "total_size": 14643904512 bytes; it lists
# model.layers.N.self_attn.rotary_emb.inv_freq (modeling_internlm.py registers it as a persistent buffer), head_dim
# / 2 = 64 values in each of 32 layers, kept in fp32 (4 bytes) beside the fp16 parameters
INTERNLM_CHAT_7B_TOTAL_SIZE = 14_643_904_512


# internlm/internlm-20b config.json (the hub mirror yangulei/internlm-20b; auto_map left out): InternLM v1, bias-free
INTERNLM_20B = {
    "architectures": ["InternLMForCausalLM"], "bias": False, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13824,
    "max_position_embeddings": 4096, "model_type": "internlm", "num_attention_heads": 40, "num_hidden_layers": 60,
    "num_key_value_heads": 40, "pad_token_id": 0, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.33.1",
    "use_cache": True, "vocab_size": 103168}
# yangulei/internlm-20b pytorch_model.bin.index.json: "total_size": 40177428480 (bf16; Llama names, no rotary buffer)
INTERNLM_20B_TOTAL_SIZE = 40_177_428_480


# ---- hand counts from the remote modelling code ----------------------------------------------------------------


def rw_hand(c: dict) -> int:
    """modelling_RW.py (tiiuae/falcon-40b, Decentralised-AI/falcon-40b's copy; falcon-7b's has the MQA form):
    word_embeddings (V, D), lm_head tied; per DecoderLayer: query_key_value D -> (n_head + 2 n_head_kv) x 64
    (falcon-7b: D + 2 x 64, multi_query), dense D -> D, MLP dense_h_to_4h D -> 4D and dense_4h_to_h back, all
    bias-free (``bias`` false); LayerNorms with bias: ln_attn + ln_mlp (the 40B code, configs with n_head_kv) or
    input_layernorm (the 7B code); ln_f. RotaryEmbedding's inv_freq is registered with persistent=False (not saved)."""
    D, L, H, V = c["hidden_size"], c["n_layer"], c["n_head"], c["vocab_size"]
    d = D // H
    kv = c.get("n_head_kv", 1)
    n_ln = 2 if "n_head_kv" in c else 1
    layer = D * (H + 2 * kv) * d + D * D + 2 * D * 4 * D + n_ln * 2 * D
    return V * D + L * layer + 2 * D


def exaone_hand(c: dict) -> int:
    """The printed ExaoneForCausalLM tree (code-index file 46001266965): wte Embedding(102400, 4096); per
    ExaoneBlock q_proj 4096 -> 4096, k_proj / v_proj 4096 -> 1024, out_proj 4096 -> 4096 (all bias=False), c_fc_0 /
    c_fc_1 4096 -> 14336, c_proj 14336 -> 4096 (bias=False), ln_1 / ln_2 ExaoneRMSNorm (weight only); ln_f;
    lm_head Linear(4096, 102400, bias=False)."""
    D, L, I, V = c["hidden_size"], c["num_layers"], c["intermediate_size"], c["vocab_size"]
    kv_width = c["num_key_value_heads"] * D // c["num_attention_heads"]
    layer = D * D + 2 * D * kv_width + D * D + 3 * D * I + 2 * D
    return V * D + L * layer + D + V * D


# ---- the audit -------------------------------------------------------------------------------------------------


def _params(cfg: dict):
    return count_params(parse_config(cfg))


def _kv(cfg: dict) -> int:
    return analyze(parse_config(cfg), Options(context=4096, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token


@pytest.mark.parametrize("cfg, total_size, less", [
    (QWEN_72B, QWEN_72B_TOTAL_SIZE, 0),
    (INTERNLM2_1_8B, INTERNLM2_1_8B_TOTAL_SIZE, 0),
    (INTERNLM2_7B_OLD, INTERNLM2_7B_OLD_TOTAL_SIZE, 0),  # fails before the fix: a ConfigError
    (MPT_7B, MPT_7B_TOTAL_SIZE, 0),
    # the tied word_embeddings / lm_head matrix counted twice by the 4.27-era .bin index
    (FALCON_40B, FALCON_40B_TOTAL_SIZE, 65024 * 8192),  # fails before the fix: 40,861,908,992
    (TELECHAT_7B, TELECHAT_7B_TOTAL_SIZE, 0),
    (TELECHAT_12B, TELECHAT_12B_TOTAL_SIZE, 0),
    (INTERNLM_20B, INTERNLM_20B_TOTAL_SIZE, 0),
], ids=["Qwen-72B", "InternLM2-chat-1.8B", "InternLM2-chat-7B-first-revision", "MPT-7B", "Falcon-40B", "TeleChat-7B",
        "TeleChat-12B", "InternLM-20B"])
def test_total_equals_the_checkpoint_index(cfg, total_size, less):
    p = _params(cfg)
    assert total_size % BF16 == 0
    assert p.total == total_size // BF16 - less
    assert p.active == p.total


def test_mimo_total_plus_its_mtp_layer_equals_the_checkpoint_index():
    """MiMo-7B's checkpoint carries one MTP layer (model.mtp_layers.0: input_proj 2D -> D, token / hidden /
    final layernorms, a Qwen2 attention and MLP); planner reports it apart from the served total."""
    p = _params(MIMO_7B)
    assert p.mtp > 0
    assert p.total + p.mtp == MIMO_7B_TOTAL_SIZE // BF16


@pytest.mark.parametrize("cfg, hand", [(FALCON_7B, rw_hand), (FALCON_40B, rw_hand), (FALCON_7B_AS_REFINEDWEB, rw_hand),
                                       (EXAONE_3_7_8B, exaone_hand)],
                         ids=["Falcon-7B", "Falcon-40B", "Falcon-7B-as-RefinedWeb", "EXAONE-3.0-7.8B"])
def test_total_equals_the_remote_module_shapes(cfg, hand):
    assert _params(cfg).total == hand(cfg)


def test_hand_counts_agree_with_the_published_sizes():
    """The hand counts evaluated: Falcon-7B 6,921,720,704 (the model card's "7B"); Falcon-40B 41,303,293,952 (the
    index's total_size / 2 less the second copy of the tied head, 65,024 x 8,192); EXAONE-3.0 7,818,448,896
    ("7.8B")."""
    assert rw_hand(FALCON_7B) == 6_921_720_704
    assert rw_hand(FALCON_40B) == FALCON_40B_TOTAL_SIZE // BF16 - 65024 * 8192 == 41_303_293_952
    assert round(exaone_hand(EXAONE_3_7_8B) / 1e9, 1) == 7.8


@pytest.mark.parametrize("cfg, layers, kv_heads, head_dim", [
    (QWEN_72B, 80, 64, 128),  # modeling_qwen.py: MHA, kv_channels 128
    (INTERNLM2_1_8B, 24, 8, 128),  # modeling_internlm2.py: num_key_value_heads 8 (GQA)
    (INTERNLM2_7B_OLD, 32, 8, 128),  # fails before the fix (a ConfigError)
    (MPT_7B, 32, 32, 128),  # modeling_mpt.py: MHA, ALiBi (no RoPE)
    (FALCON_7B, 32, 1, 64),  # modelling_RW.py (7B): multi_query, one K/V head
    (FALCON_7B_AS_REFINEDWEB, 32, 1, 64),
    (FALCON_40B, 60, 8, 64),  # vLLM / transformers' Falcon: n_head_kv = 8 groups; fails before the fix (1 head)
    (MIMO_7B, 36, 8, 128),  # Qwen2 GQA; the MTP layer's cache is not part of the served model
    (EXAONE_3_7_8B, 32, 8, 128),  # k_proj / v_proj 4096 -> 1024: 8 heads of 128
    (TELECHAT_7B, 30, 32, 128),  # modeling_telechat.py: key_value D -> 2D, MHA
    (TELECHAT_12B, 38, 32, 160),  # 5120 / 32 heads: head_dim 160
    (QWEN_1_8B, 24, 16, 128),
], ids=["Qwen-72B", "InternLM2-1.8B", "InternLM2-7B-old", "MPT-7B", "Falcon-7B", "Falcon-7B-as-RefinedWeb",
        "Falcon-40B", "MiMo-7B", "EXAONE-3.0", "TeleChat-7B", "TeleChat-12B", "Qwen-1.8B"])
def test_kv_cache_bytes_per_token(cfg, layers, kv_heads, head_dim):
    assert _kv(cfg) == layers * 2 * kv_heads * head_dim * 2


def test_falcon_40b_reads_the_new_decoder_block():
    """RefinedWeb's DecoderLayer has ln_attn and ln_mlp (two LayerNorms with bias) feeding the parallel attention
    and MLP; before the fix one input_layernorm was counted (16,384 parameters per layer short) and the
    query_key_value was one K/V head wide (7,340,032 per layer short)."""
    spec = parse_config(FALCON_40B)
    layer = spec.layers[0]
    assert layer.mixer.num_key_value_heads == 8
    assert len(layer.norms) == 2
    # an explicit new_decoder_architecture / num_kv_heads (transformers' converted names) still wins
    conv = dict(FALCON_40B, new_decoder_architecture=False, multi_query=True)
    assert parse_config(conv).layers[0].mixer.num_key_value_heads == 1
    # Falcon-7B keeps the old block: one LayerNorm, multi-query
    for cfg in (FALCON_7B, FALCON_7B_AS_REFINEDWEB):  # no n_head_kv: the 7B block whatever the model_type says
        spec7 = parse_config(cfg)
        assert spec7.layers[0].mixer.num_key_value_heads == 1 and len(spec7.layers[0].norms) == 1


@pytest.mark.parametrize("cfg, hand", [(CODEGEEX2_6B, chatglm_hand), (GLM4_9B_CHAT_1M, chatglm_hand),
                                       (QWEN_1_8B, qwen_hand)],
                         ids=["CodeGeeX2-6B", "GLM-4-9B-Chat-1M", "Qwen-1.8B-Chat"])
def test_total_equals_the_family_hand_count(cfg, hand):
    """The module-shape hand counts of tests/test_chatglm.py (modeling_chatglm.py) and tests/test_remote.py (Qwen's
    c_attn / w1 / w2 / c_proj), applied to these configs."""
    assert _params(cfg).total == hand(cfg)


def test_glm4_9b_chat_1m_has_four_kv_groups():
    """glm-4-9b-chat-1m is not glm-4-9b-chat with a longer RoPE: its query_key_value carries 4 K/V groups, not 2
    (83,906,560 more parameters: 40 layers x 2 x 2 groups x 128 x (4096 + 1), the hub's "9.48B"), and its cache is
    twice as wide."""
    total = _params(GLM4_9B_CHAT_1M).total
    assert total == 9_399_951_360 + 40 * 2 * 2 * 128 * (4096 + 1) == 9_483_857_920
    assert round(total / 1e9, 2) == 9.48
    assert _kv(GLM4_9B_CHAT_1M) == 40 * 2 * 4 * 128 * 2
    assert _kv(CODEGEEX2_6B) == 28 * 2 * 2 * 128 * 2  # ChatGLM2: multi_query_group_num 2


def test_qwen_7b_int4_weights_are_the_gptq_index_less_autogptq_zero_biases():
    """AutoGPTQ's QuantLinear of that era always stored an fp16 bias; Qwen has one on c_attn only ("no_bias": true),
    which vLLM's qwen.py loads, and skips the others. The index's extra bytes are exactly those zero biases:
    attn.c_proj (4096), w1 and w2 (11008 each) and mlp.c_proj (4096) in each of 32 layers, 2 bytes each. The rest is
    the GPTQ layout: per projection (in -> out) qweight in x out / 2 bytes, qzeros (in / 128) x (out / 8) int32,
    scales (in / 128) x out fp16, g_idx in int32; embedding, lm_head and RMSNorms fp16."""
    a = analyze(parse_config(QWEN_7B_INT4), Options(context=0))
    extra_bias = 32 * (4096 + 11008 + 11008 + 4096) * 2
    assert a.weights_bytes + extra_bias == QWEN_7B_INT4_TOTAL_SIZE

    def gptq(i, o):
        return i * o // 2 + (i // 128) * (o // 8) * 4 + (i // 128) * o * 2 + 4 * i + 2 * o

    D, I, V = 4096, 11008, 151936
    layer = gptq(D, 3 * D) + gptq(D, D) + gptq(D, I) + gptq(D, I) + gptq(I, D) + 2 * D * 2
    assert 32 * layer + 2 * V * D * 2 + D * 2 == QWEN_7B_INT4_TOTAL_SIZE  # the layout above is the index, exactly


def test_minicpm_sala_is_refused_by_name():
    """MiniCPM-SALA (model_type minicpm_sala) was read as a generic Llama with a warning: all 32 layers priced as
    MiniCPM4's 2-head K/V attention, its 24 lightning-attention layers (32 heads, a fixed-size state, q/k norms,
    output gates) not modelled. It is refused by name."""
    with pytest.raises(UnsupportedModelError, match="MiniCPM-SALA"):
        parse_config(MINICPM_SALA)


def test_internlm_chat_7b_is_the_index_less_its_fp32_inv_freq_buffers():
    fp32_buffers = 32 * (4096 // 32 // 2) * 4
    assert _params(INTERNLM_CHAT_7B).total * BF16 + fp32_buffers == INTERNLM_CHAT_7B_TOTAL_SIZE


def test_refinedweb_reads_as_transformers_converted_falcon():
    """transformers' Falcon built on the meta device from the fields its convert_custom_code_checkpoint.py
    (huggingface/transformers src/transformers/models/falcon/) writes for a RefinedWeb / RefinedWebModel checkpoint:
    n_head -> num_attention_heads, n_layer -> num_hidden_layers, n_head_kv -> num_kv_heads with
    new_decoder_architecture true, else new_decoder_architecture false."""
    def converted(c: dict) -> dict:
        out = {"model_type": "falcon", "hidden_size": c["hidden_size"], "num_attention_heads": c["n_head"],
               "num_hidden_layers": c["n_layer"], "vocab_size": c["vocab_size"], "bias": c["bias"],
               "alibi": c["alibi"], "parallel_attn": c["parallel_attn"],
               "new_decoder_architecture": "n_head_kv" in c}
        if "n_head_kv" in c:
            out["num_kv_heads"] = c["n_head_kv"]
        else:
            out["multi_query"] = c["multi_query"]
        return out

    for cfg in (FALCON_40B, FALCON_7B, FALCON_7B_AS_REFINEDWEB):
        assert _params(cfg).total == hf_param_count(converted(cfg))


# Tele-AI/Telechat models/12B_8bit/quantize_config.json (beside the config.json quoted as TELECHAT_12B)
TELECHAT_12B_INT8_QUANTIZE_CONFIG = dict(TELECHAT_7B_INT4_QUANTIZE_CONFIG, bits=8)


@pytest.mark.parametrize("cfg, qc, tied", [(TELECHAT_7B_INT4, TELECHAT_7B_INT4_QUANTIZE_CONFIG, True),
                                           (TELECHAT_12B, TELECHAT_12B_INT8_QUANTIZE_CONFIG, False)],
                         ids=["TeleChat-7B-int4", "TeleChat-12B-int8"])
def test_autogptq_sidecar_quantize_config_is_read(tmp_path, cfg, qc, tied):
    """TeleChat's GPTQ folders as Tele-AI ships them: config.json without a quantization_config beside
    quantize_config.json (AutoGPTQ, group 128). Weights, GPTQ layout as served: per projection (in -> out) qweight
    in x out x bits / 8 bytes, qzeros (in / 128) x (out x bits / 32) int32, scales (in / 128) x out fp16, g_idx in
    int32; the real biases (dense, down_proj), RMSNorms, embedding and (12B) lm_head in fp16. The fused key_value is
    one stored matrix with one g_idx (planner lists it as k and v, and counted a second g_idx, 4 x hidden bytes a
    layer over this layout, until CheckpointLayout.kv_fused). Before the sidecar fix the folders were priced as fp16
    (the 7B: 14,400,036,864 bytes, its index)."""
    import json

    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "quantize_config.json").write_text(json.dumps(qc))
    read = read_config_file(tmp_path)
    assert read["quantization_config"]["bits"] == qc["bits"]
    assert read["quantization_config"]["quant_method"] == "gptq"
    a = analyze(parse_config(read), Options(context=0))
    bits = qc["bits"]

    def gptq(i, o):
        return i * o * bits // 8 + (i // 128) * (o * bits // 32) * 4 + (i // 128) * o * 2 + 4 * i

    D, L, I, V = cfg["hidden_size"], cfg["n_layer"], cfg["ffn_hidden_size"], cfg["vocab_size"]
    layer = (gptq(D, D) + gptq(D, 2 * D) + gptq(D, D) + gptq(D, I) + gptq(D, I) + gptq(I, D)
             + (D + D) * 2 + 2 * D * 2)
    hand = L * layer + V * D * 2 * (1 if tied else 2) + D * 2
    assert a.weights_bytes == hand
    assert a.weights_bytes < _params(cfg).total * 2  # the fp16 pricing it had


def test_a_config_json_quantization_config_wins_over_the_sidecar(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(dict(TELECHAT_7B_INT4, quantization_config={
        "quant_method": "gptq", "bits": 8, "group_size": 128})))
    (tmp_path / "quantize_config.json").write_text(json.dumps(TELECHAT_7B_INT4_QUANTIZE_CONFIG))
    assert read_config_file(tmp_path)["quantization_config"]["bits"] == 8
