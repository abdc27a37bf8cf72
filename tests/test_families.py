"""Every supported family, on small synthetic configs: parameter totals equal transformers on the meta
device, and the KV cache follows each family's published definition."""

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.oracle import flop_counter, hf_param_count

BASE = {"hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 4096, "pad_token_id": 0}
#: DeepSeek-V4 and Inkling-2 read intermediate_size as moe_intermediate_size (their attribute_map): left out
V4_BASE = {k: v for k, v in BASE.items() if k != "intermediate_size"}

#: google/gemma-3n-E2B's text_config (config.json), as published
GEMMA3N_E2B_TEXT = {
    "model_type": "gemma3n_text", "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 20, "altup_active_idx": 0,
    "altup_coef_clip": 120.0, "altup_correct_scale": True, "altup_lr_multiplier": 1.0, "altup_num_inputs": 4,
    "attention_bias": False, "attention_dropout": 0.0, "final_logit_softcapping": 30.0, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2048, "hidden_size_per_layer_input": 256,
    "intermediate_size": [8192] * 30, "laurel_rank": 64,
    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 6, "max_position_embeddings": 32768,
    "num_attention_heads": 8, "num_hidden_layers": 30, "num_key_value_heads": 2, "num_kv_shared_layers": 10,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": None,
    "rope_theta": 1000000.0, "sliding_window": 512, "vocab_size": 262400, "vocab_size_per_layer_input": 262144}

#: Qwen4-Exp: transformers' class defaults carry no QSA indexer fields and do not build; a small config that does
#: (RoPE on a quarter of head_dim, which the indexer head must hold). The PLE row: n-gram tables on three linear
#: layers (6 hashed heads of 8 features, prime-sized slices from 5000), a "full_attention" entry read as indexed.
QWEN4_EXP = dict(V4_BASE, model_type="qwen4_exp_text", head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=16, linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=64, shared_expert_intermediate_size=96, hc_count=3, hc_lowrank=24,
                 indexer_n_heads=4, indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=8, indexer_compress_ratio=4,
                 rope_parameters={"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25})
QWEN4_EXP_PLE = dict(QWEN4_EXP, num_hidden_layers=5, ple_layer_ids=[3, 1, 5, 1], ple_embed_dim=48, heads_per_ngram=3,
                     ngram_vocab_size_base=5000, make_ngram_vocab_size_divisible_by=64, ple_conv_kernel_size=3,
                     eos_token_id=2, tie_word_embeddings=True,
                     layer_types=["linear_attention", "indexed_attention", "linear_attention", "full_attention",
                                  "linear_attention"])

CASES = {
    "llama": dict(BASE, model_type="llama"),
    "qwen4_exp_text": QWEN4_EXP,
    "qwen4_exp_text-ple-tied": QWEN4_EXP_PLE,
    "llama-biases-tied": dict(BASE, model_type="llama", attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
    "llama-head_dim": dict(BASE, model_type="llama", head_dim=32),
    "mistral": dict(BASE, model_type="mistral", sliding_window=64),
    "mistral-head_dim": dict(BASE, model_type="mistral", head_dim=24, sliding_window=None),
    "ministral": dict(BASE, model_type="ministral", head_dim=16, sliding_window=64,
                      layer_types=["sliding_attention", "full_attention"] * 2),
    "qwen2": dict(BASE, model_type="qwen2"),
    "qwen2-tied": dict(BASE, model_type="qwen2", tie_word_embeddings=True),
    "qwen3": dict(BASE, model_type="qwen3", head_dim=40),
    "qwen3-bias": dict(BASE, model_type="qwen3", head_dim=16, attention_bias=True),
    "gemma": dict(BASE, model_type="gemma", head_dim=48),
    "gemma2": dict(BASE, model_type="gemma2", head_dim=32, sliding_window=32),
    "gemma3_text": dict(BASE, model_type="gemma3_text", head_dim=32, sliding_window=32, num_hidden_layers=7),
    "phi3": dict(BASE, model_type="phi3"),
    "phi3-partial-rotary": dict(BASE, model_type="phi3", partial_rotary_factor=0.75, tie_word_embeddings=True),
    "gpt_neox": dict(BASE, model_type="gpt_neox", num_key_value_heads=None, rotary_pct=0.25),
    "gpt_neox-serial": dict(BASE, model_type="gpt_neox", num_key_value_heads=None, use_parallel_residual=False,
                            attention_bias=False),
    "falcon-mqa": {"model_type": "falcon", "hidden_size": 128, "num_hidden_layers": 3, "num_attention_heads": 8,
                   "vocab_size": 512, "multi_query": True, "parallel_attn": True},
    "falcon-new-arch": {"model_type": "falcon", "hidden_size": 128, "num_hidden_layers": 3, "num_attention_heads": 8,
                        "num_kv_heads": 2, "vocab_size": 512, "new_decoder_architecture": True, "bias": False},
    "falcon-rw-alibi": {"model_type": "falcon", "hidden_size": 128, "num_hidden_layers": 3, "num_attention_heads": 8,
                        "vocab_size": 512, "multi_query": False, "parallel_attn": False, "bias": True, "alibi": True},
    "olmo2": dict(BASE, model_type="olmo2"),
    "olmoe": dict(BASE, model_type="olmoe", num_experts=8, num_experts_per_tok=2),
    "starcoder2": dict(BASE, model_type="starcoder2", sliding_window=64),
    "granite": dict(BASE, model_type="granite"),
    "smollm3": dict(BASE, model_type="smollm3"),
    "exaone4": dict(BASE, model_type="exaone4", sliding_window=64,
                    layer_types=["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]),
    "glm4_moe": dict(BASE, model_type="glm4_moe", head_dim=16, moe_intermediate_size=64, n_routed_experts=8,
                     n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1),
    "glm4_moe-qk-norm": dict(BASE, model_type="glm4_moe", head_dim=16, moe_intermediate_size=64, n_routed_experts=8,
                             n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, use_qk_norm=True),
    "minimax_m2": dict(BASE, model_type="minimax_m2", head_dim=16, num_local_experts=4, num_experts_per_tok=2),
    "stablelm": dict(BASE, model_type="stablelm", num_key_value_heads=8),
    "stablelm-qkv-bias-qk-layernorm": dict(BASE, model_type="stablelm", use_qkv_bias=True, qk_layernorm=True,
                                           partial_rotary_factor=0.5),
    # the parallel block: one input LayerNorm, no post_attention_layernorm
    "stablelm-parallel": dict(BASE, model_type="stablelm", use_parallel_residual=True),
    "phimoe": dict(BASE, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2),
    "phimoe-lm-head-bias": dict(BASE, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2,
                                lm_head_bias=True),
    "phimoe-attention-bias": dict(BASE, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2,
                                  attention_bias=True),
    "mixtral": dict(BASE, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(BASE, model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
                      shared_expert_intermediate_size=96, decoder_sparse_step=2, mlp_only_layers=[3]),
    "qwen3_moe": dict(BASE, model_type="qwen3_moe", head_dim=16, num_experts=8, num_experts_per_tok=2,
                      moe_intermediate_size=64, mlp_only_layers=[0]),
    "deepseek_v2-lite": dict(BASE, model_type="deepseek_v2", q_lora_rank=None, kv_lora_rank=64, qk_nope_head_dim=16,
                             qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, n_shared_experts=2,
                             num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=1),
    "deepseek_v3": dict(BASE, model_type="deepseek_v3", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                        qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, n_shared_experts=1,
                        num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=2, n_group=2,
                        topk_group=1),
    # DeepSeek-V3.2: V3 plus a lightning indexer (wq_b, wk, k_norm with bias, weights_proj) on every layer;
    # MoE placed by mlp_layer_types (transformers ignores moe_layer_freq)
    "deepseek_v32": dict(BASE, model_type="deepseek_v32", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                         qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, n_shared_experts=1,
                         num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=1, n_group=2,
                         topk_group=1, index_topk=16, index_n_heads=4, index_head_dim=32),
    "deepseek_v4": dict(V4_BASE, model_type="deepseek_v4", num_hidden_layers=5, num_key_value_heads=1, head_dim=32,
                        q_lora_rank=48, o_groups=4, o_lora_rank=24, moe_intermediate_size=64, n_routed_experts=8,
                        num_experts_per_tok=2, index_n_heads=4, index_head_dim=16, index_topk=4, sliding_window=16,
                        hc_mult=3, compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
                        layer_types=["sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention",
                                     "heavily_compressed_attention", "compressed_sparse_attention"]),
    "deepseek_v4-compress_ratios-tied": dict(V4_BASE, model_type="deepseek_v4", hidden_size=96, num_attention_heads=4,
                                             num_key_value_heads=1, head_dim=48, q_lora_rank=32, o_groups=2,
                                             o_lora_rank=16, moe_intermediate_size=40, n_routed_experts=4,
                                             num_experts_per_tok=2, index_n_heads=2, index_head_dim=24, index_topk=8,
                                             sliding_window=8, hc_mult=2, compress_ratios=[0, 4, 128, 4],
                                             tie_word_embeddings=True, num_hash_layers=1),
    "deepseek_v32-mlp_layer_types-bias": dict(BASE, model_type="deepseek_v32", q_lora_rank=48, kv_lora_rank=64,
                                              qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                                              n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=2,
                                              moe_intermediate_size=32, attention_bias=True, index_topk=8,
                                              index_n_heads=2, index_head_dim=16,
                                              mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                                              layer_types=["indexed_attention"] * 4),
    # GLM-5: the same block; "shared" layers reuse the previous full layer's top-k and have no indexer
    "glm_moe_dsa": dict(BASE, model_type="glm_moe_dsa", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                        qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, n_shared_experts=1,
                        num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=1, index_topk=16,
                        index_n_heads=4, index_head_dim=32, indexer_types=["full", "shared", "full", "shared"]),
    "glm_moe_dsa-topk_freq": dict(BASE, model_type="glm_moe_dsa", num_hidden_layers=6, q_lora_rank=48,
                                  kv_lora_rank=64, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                                  n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2,
                                  moe_intermediate_size=32, index_topk=16, index_n_heads=4, index_head_dim=32,
                                  index_topk_freq=2, index_skip_topk_offset=2),
    # Hy4-preview: GLM-5's block plus gate_proj, sinks and 3 hyper-connection streams (attn_hc / ffn_hc, hc_head);
    # by default full indexers on layers 0, 1 and 5, layer 0 dense
    "hy_v4": dict(BASE, model_type="hy_v4", num_hidden_layers=6, q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                  qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2,
                  moe_intermediate_size=32, index_topk=16, index_n_heads=4, index_head_dim=32, hc_mult=3),
    "hy_v4-types-bias": dict(BASE, model_type="hy_v4", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                             qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8, n_shared_experts=2,
                             num_experts_per_tok=2, moe_intermediate_size=32, index_topk=8, index_n_heads=2,
                             index_head_dim=16, hc_mult=2, attention_bias=True,
                             indexer_types=["full", "shared", "full", "shared"],
                             mlp_layer_types=["sparse", "dense", "sparse", "sparse"]),
    # A.X-K2: V3.2's block with q_gate_proj in place of q_b_proj and gated RMSNorms (input: every layer;
    # post-attention: MoE layers); MoE by the legacy first_k_dense_replace / moe_layer_freq when mlp_layer_types is absent
    "axk2": dict(BASE, model_type="axk2", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16, qk_rope_head_dim=8,
                 v_head_dim=16, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
                 index_topk=16, index_n_heads=4, index_head_dim=32, gated_norm_rank=8),
    "axk2-legacy-groups-bias": dict(BASE, model_type="axk2", num_hidden_layers=5, q_lora_rank=48, kv_lora_rank=64,
                                    qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8,
                                    n_shared_experts=2, num_experts_per_tok=2, moe_intermediate_size=32, index_topk=8,
                                    index_n_heads=2, index_head_dim=16, first_k_dense_replace=2, moe_layer_freq=2,
                                    n_group=2, topk_group=1, attention_bias=True),
    # dots3-note: gated MLA (g_proj, k_rope_only_layernorm) on every layer; a released config's form: DSA on layers
    # 0, 1, 5, sliding-window MLA of the swa_* geometry elsewhere, shared experts by the legacy name
    "dots3_note_text": dict(BASE, model_type="dots3_note_text", num_hidden_layers=6, num_key_value_heads=8,
                            bos_token_id=1, eos_token_id=2, q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                            qk_rope_head_dim=8, v_head_dim=16, head_dim=24, n_routed_experts=8, n_shared_experts=2,
                            num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=40,
                            index_topk=16, index_n_heads=4, index_head_dim=32, swa_num_attention_heads=4,
                            swa_num_key_value_heads=4, swa_q_lora_rank=40, swa_kv_lora_rank=32, swa_head_dim=32,
                            swa_qk_nope_head_dim=24, swa_v_head_dim=16, sliding_window_size=64),
    # the form transformers saves: layer_types (a full_attention layer: no indexer), per_layer_config overrides
    # (zero-padded keys; the sliding layers' own geometry), mlp_layer_types, biases, two expert groups
    "dots3_note_text-per_layer_config": dict(
        BASE, model_type="dots3_note_text", num_key_value_heads=8, bos_token_id=1, eos_token_id=2, q_lora_rank=48,
        kv_lora_rank=64, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, head_dim=24, n_routed_experts=8,
        n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32, shared_experts_intermediate_size=24,
        index_topk=8, index_n_heads=2, index_head_dim=16, sliding_window=32, attention_bias=True, n_group=2,
        topk_group=1, layer_types=["indexed_attention", "sliding_attention", "full_attention", "sliding_attention"],
        mlp_layer_types=["sparse", "dense", "sparse", "sparse"],
        per_layer_config={f"0{i}": {"num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 24,
                                    "kv_lora_rank": 32, "head_dim": 20, "qk_nope_head_dim": 16, "qk_rope_head_dim": 4,
                                    "v_head_dim": 8} for i in (1, 3)}),
    # a legacy config without DSA (use_dsa false: plain full MLA), MoE where moe_layer_freq's list says
    "dots3_note_text-no-dsa-freq": dict(BASE, model_type="dots3_note_text", num_hidden_layers=5, num_key_value_heads=8,
                                        bos_token_id=1, eos_token_id=2, q_lora_rank=48, kv_lora_rank=64,
                                        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, head_dim=24,
                                        n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2,
                                        moe_intermediate_size=32, use_dsa=False, moe_layer_freq=[0, 1, 1, 0, 1],
                                        swa_num_attention_heads=4, swa_num_key_value_heads=4, swa_q_lora_rank=40,
                                        swa_kv_lora_rank=32, swa_head_dim=32, swa_qk_nope_head_dim=24,
                                        swa_v_head_dim=16, sliding_window_size=64),
    "gpt_oss": dict(BASE, model_type="gpt_oss", head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=32),
    "llama4_text": dict(BASE, model_type="llama4_text", head_dim=16, num_local_experts=4, num_experts_per_tok=1,
                        intermediate_size_mlp=256, interleave_moe_layer_step=2, attention_chunk_size=64),
    # Command R7B's published config names use_embedding_sharing and sliding_window_pattern, not tie/layer_types
    "cohere2": dict(BASE, model_type="cohere2", sliding_window=64, sliding_window_pattern=4, use_embedding_sharing=True),
    "cohere2-layer_types-bias": dict(BASE, model_type="cohere2", sliding_window=64, attention_bias=True,
                                     layer_types=["sliding_attention", "full_attention"] * 2, tie_word_embeddings=False),
    "cohere": dict(BASE, model_type="cohere", use_embedding_sharing=True),
    # the GPT-2 lineage names its fields n_embd / n_layer / n_head (gpt_neo: num_layers / num_heads)
    "gpt2": {"model_type": "gpt2", "n_embd": 128, "n_layer": 3, "n_head": 4, "vocab_size": 512, "n_positions": 256},
    "gpt2-n_inner": {"model_type": "gpt2", "n_embd": 128, "n_layer": 2, "n_head": 8, "vocab_size": 500,
                     "n_positions": 100, "n_inner": 200, "tie_word_embeddings": False},
    "gpt_bigcode-mqa": {"model_type": "gpt_bigcode", "n_embd": 128, "n_layer": 3, "n_head": 4, "vocab_size": 512,
                        "n_positions": 256},
    "gpt_bigcode-mha": {"model_type": "gpt_bigcode", "n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 512,
                        "n_positions": 256, "multi_query": False, "n_inner": 300},
    "gptj": {"model_type": "gptj", "n_embd": 128, "n_layer": 3, "n_head": 4, "vocab_size": 512, "n_positions": 256,
             "rotary_dim": 16},
    # CodeGen: Salesforce/codegen-350M-mono's architecture fields (356,712,448), and a tiny one with n_inner
    "codegen-350M-mono": {"model_type": "codegen", "n_embd": 1024, "n_layer": 20, "n_head": 16, "rotary_dim": 32,
                          "vocab_size": 51200, "n_positions": 2048, "n_ctx": 2048, "activation_function": "gelu_new"},
    "codegen-tiny-n_inner": {"model_type": "codegen", "n_embd": 96, "n_layer": 2, "n_head": 6, "rotary_dim": 8,
                             "vocab_size": 300, "n_inner": 200},
    # GPT-1: openai-community/openai-gpt's architecture fields (116,534,784), and a tiny untied relu one
    "openai-gpt": {"model_type": "openai-gpt", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 40478,
                   "n_positions": 512, "afn": "gelu"},
    "openai-gpt-tiny-relu-untied": {"model_type": "openai-gpt", "n_embd": 96, "n_layer": 2, "n_head": 6,
                                    "vocab_size": 300, "n_positions": 64, "afn": "relu", "tie_word_embeddings": False},
    # CTRL: Salesforce/ctrl's architecture fields (1,637,964,550: the tied head's bias counts), and a tiny untied one
    "ctrl": {"model_type": "ctrl", "n_embd": 1280, "n_layer": 48, "n_head": 16, "dff": 8192, "vocab_size": 246534,
             "n_positions": 50000},
    "ctrl-tiny-untied": {"model_type": "ctrl", "n_embd": 96, "n_layer": 2, "n_head": 6, "dff": 200, "vocab_size": 300,
                         "n_positions": 64, "tie_word_embeddings": False},
    "bloom": {"model_type": "bloom", "hidden_size": 128, "n_layer": 3, "n_head": 8, "vocab_size": 512},
    "bloom-n_embed-untied": {"model_type": "bloom", "n_embed": 96, "n_layer": 2, "n_head": 6, "vocab_size": 300,
                             "tie_word_embeddings": False},
    # GPT-NeoX Japanese: an output bias on the last layer only, the MLP hidden x intermediate_multiple_size; untied
    "gpt_neox_japanese-untied": {"model_type": "gpt_neox_japanese", "hidden_size": 96, "num_hidden_layers": 3,
                                 "num_attention_heads": 6, "intermediate_multiple_size": 3, "vocab_size": 300,
                                 "rotary_pct": 0.5, "tie_word_embeddings": False},
    "gpt_neo": {"model_type": "gpt_neo", "hidden_size": 128, "num_layers": 4, "num_heads": 4, "vocab_size": 512,
                "max_position_embeddings": 256, "window_size": 32, "attention_types": [[["global", "local"], 2]]},
    "cohere-qk_norm-untied": dict(BASE, model_type="cohere", use_qk_norm=True, tie_word_embeddings=False),
    # OPT: the architecture fields of the published facebook/opt-* config.json files (the hub's own files)
    "opt-125m": {"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "ffn_dim": 3072, "max_position_embeddings": 2048, "vocab_size": 50272, "word_embed_proj_dim": 768,
                 "do_layer_norm_before": True, "enable_bias": True, "layer_norm_elementwise_affine": True,
                 "_remove_final_layer_norm": False, "activation_function": "relu"},
    "opt-350m": {"model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                 "ffn_dim": 4096, "max_position_embeddings": 2048, "vocab_size": 50272, "word_embed_proj_dim": 512,
                 "do_layer_norm_before": False, "activation_function": "relu"},
    "opt-1.3b": {"model_type": "opt", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
                 "ffn_dim": 8192, "max_position_embeddings": 2048, "vocab_size": 50272, "word_embed_proj_dim": 2048,
                 "do_layer_norm_before": True, "activation_function": "relu"},
    "opt-no-bias-no-affine-untied-final-removed": {"model_type": "opt", "hidden_size": 128, "num_hidden_layers": 2,
                                                   "num_attention_heads": 4, "ffn_dim": 200, "vocab_size": 512,
                                                   "enable_bias": False, "layer_norm_elementwise_affine": False,
                                                   "tie_word_embeddings": False, "_remove_final_layer_norm": True},
    # DBRX: databricks/dbrx-instruct's published config.json (nested attn_config / ffn_config), and a tiny one
    "dbrx-instruct": {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768,
                      "vocab_size": 100352, "tie_word_embeddings": False,
                      "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
                      "ffn_config": {"ffn_hidden_size": 10752, "moe_jitter_eps": 0, "moe_loss_weight": 0.05,
                                     "moe_num_experts": 16, "moe_top_k": 4}},
    # kv_n_heads (1), moe_num_experts (4), moe_top_k (1) at their class defaults; transformers' DbrxAttention
    # reads attn_config.rope_theta, which its config class does not declare, so the block must name it
    "dbrx-tiny-class-defaults": {"model_type": "dbrx", "d_model": 128, "n_heads": 4, "n_layers": 2, "vocab_size": 512,
                                 "attn_config": {"rope_theta": 10000}, "ffn_config": {"ffn_hidden_size": 64}},
    # MPT: the architecture fields of mosaicml/mpt-7b's config.json (6,649,286,656: no position embedding under ALiBi), and a tiny
    # untied one with 6 heads (past a power of two) and the attn_config fields that change numerics, not counts
    "mpt-7b": {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "max_seq_len": 2048,
               "vocab_size": 50432, "expansion_ratio": 4, "no_bias": True, "learned_pos_emb": True,
               "logit_scale": None, "norm_type": "low_precision_layernorm", "embedding_fraction": 1.0,
               "attn_config": {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                               "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
                               "prefix_lm": False, "qk_ln": False, "softmax_scale": None}},
    "mpt-tiny-untied-6-heads": {"model_type": "mpt", "d_model": 96, "n_heads": 6, "n_layers": 3, "vocab_size": 300,
                                "tie_word_embeddings": False,
                                "attn_config": {"clip_qkv": 6.0, "softmax_scale": 0.2, "alibi_bias_max": 6}},
    # ERNIE 4.5 MoE: MoE on layers 1..2 (start / end index), two shared experts; the router's correction bias counts
    "ernie4_5_moe": dict(BASE, model_type="ernie4_5_moe", moe_num_experts=8, moe_k=2, moe_intermediate_size=64,
                         moe_num_shared_experts=2, moe_layer_start_index=1, moe_layer_end_index=2),
    # every other layer from 0 (interval 2: layers 1 and 3), biases everywhere (shared experts too), untied; the
    # attribute_map names num_experts / num_experts_per_tok
    "ernie4_5_moe-bias-interval": dict(BASE, model_type="ernie4_5_moe", num_experts=8, num_experts_per_tok=2,
                                       moe_intermediate_size=64, moe_num_shared_experts=1, moe_layer_start_index=0,
                                       moe_layer_interval=2, use_bias=True, tie_word_embeddings=False),
    # dots.llm1: one dense layer, then MoE (sigmoid router, grouped); sliding layers from max_window_layers on
    "dots1": dict(BASE, model_type="dots1", moe_intermediate_size=64, n_routed_experts=8, n_shared_experts=2,
                  num_experts_per_tok=2, first_k_dense_replace=1, n_group=2, topk_group=1, sliding_window=64,
                  max_window_layers=2),
    # EXAONE MoE: 3 sliding : 1 full (NoPE) by sliding_window_pattern, dense layer 0 (first_k_dense_replace)
    "exaone_moe": dict(BASE, model_type="exaone_moe", head_dim=16, moe_intermediate_size=64, num_experts=8,
                       num_experts_per_tok=2, num_shared_experts=1, sliding_window=64),
    # dense / sparse by mlp_layer_types; every layer full by layer_types
    "exaone_moe-mlp_layer_types": dict(BASE, model_type="exaone_moe", head_dim=16, moe_intermediate_size=64,
                                       num_experts=8, num_experts_per_tok=2, num_shared_experts=2,
                                       mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                                       layer_types=["full_attention"] * 4),
    # Solar Open: every layer MoE (no intermediate_size), q/k/v biases, the head_dim class default (128)
    "solar_open": {"model_type": "solar_open", "hidden_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "vocab_size": 512, "moe_intermediate_size": 64, "n_routed_experts": 8,
                   "n_shared_experts": 1, "num_experts_per_tok": 2, "attention_bias": True},
    # Hunyuan: per-head q/k norms; the MoE's experts and shared MLP of intermediate_size, top-k per layer
    "hunyuan_v1_dense": dict(BASE, model_type="hunyuan_v1_dense", head_dim=16, tie_word_embeddings=True),
    "hunyuan_v1_moe": dict(BASE, model_type="hunyuan_v1_moe", head_dim=16, num_experts=8, moe_topk=[2, 1, 2, 8],
                           attention_bias=True),
    # Gemma 4: wide full layers (global_head_dim, num_global_key_value_heads with K = V), KV shared by the last
    # layers (their MLPs double-wide), per-layer inputs; the MoE row adds the routed experts beside the dense MLP
    "gemma4_text": dict(BASE, model_type="gemma4_text", head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
                        attention_k_eq_v=True, sliding_window=32, num_hidden_layers=5,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                                     "full_attention"], num_kv_shared_layers=2, use_double_wide_mlp=True,
                        hidden_size_per_layer_input=8, final_logit_softcapping=30.0),
    "gemma4_text-moe-default-layers": dict(BASE, model_type="gemma4_text", num_hidden_layers=7, head_dim=16,
                                           global_head_dim=32, num_global_key_value_heads=1, attention_k_eq_v=True,
                                           sliding_window=32, hidden_size_per_layer_input=0, enable_moe_block=True,
                                           num_experts=8, top_k_experts=2, moe_intermediate_size=48),
    # Gemma 4 unified's language model: Gemma 4's layers (wide K = V full layers, KV shared by the last layers, their
    # MLPs double-wide) without per-layer inputs or the MoE block, whatever the config says (Gemma4UnifiedTextModel
    # never builds them); the default-layers row: five sliding, one full, the last full, sliding_window 1024
    "gemma4_unified_text": dict(BASE, model_type="gemma4_unified_text", head_dim=16, global_head_dim=32,
                                num_global_key_value_heads=1, attention_k_eq_v=True, sliding_window=32,
                                num_hidden_layers=5, layer_types=["sliding_attention", "full_attention",
                                                                  "sliding_attention", "sliding_attention",
                                                                  "full_attention"], num_kv_shared_layers=2,
                                use_double_wide_mlp=True, hidden_size_per_layer_input=8, enable_moe_block=True,
                                num_experts=4, top_k_experts=2, moe_intermediate_size=16, final_logit_softcapping=30.0),
    "gemma4_unified_text-default-layers": dict(BASE, model_type="gemma4_unified_text", num_hidden_layers=7,
                                               head_dim=16, global_head_dim=32),
    # Gemma 3n: google/gemma-3n-E2B's text_config (4,435,182,688: AltUp, LAuReL, per-layer inputs, 10 KV-shared
    # layers), and a tiny one with per-layer widths, 3 AltUp streams, biases, two shared-KV layers, untied
    "gemma3n_text-e2b": GEMMA3N_E2B_TEXT,
    "gemma3n_text-tiny": {"model_type": "gemma3n_text", "hidden_size": 64, "num_hidden_layers": 7,
                          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                          "intermediate_size": [96, 96, 128, 128, 64, 64, 32], "vocab_size": 300,
                          "vocab_size_per_layer_input": 200, "hidden_size_per_layer_input": 8, "laurel_rank": 4,
                          "altup_num_inputs": 3, "num_kv_shared_layers": 2, "sliding_window": 8,
                          "attention_bias": True, "tie_word_embeddings": False},
    # plain decoders promoted from the generic fallback (each a Traits row)
    "arcee": dict(BASE, model_type="arcee"),
    # Nemotron-4 / Minitron: relu2 plain MLP, LayerNorm1P with bias, half-width RoPE by default
    "nemotron": dict(BASE, model_type="nemotron", head_dim=16),
    "nemotron-biases-tied": dict(BASE, model_type="nemotron", attention_bias=True, mlp_bias=True,
                                 tie_word_embeddings=True, partial_rotary_factor=0.25),
    "arcee-biases": dict(BASE, model_type="arcee", attention_bias=True, mlp_bias=True),
    "apertus": dict(BASE, model_type="apertus"),
    "apertus-bias-tied": dict(BASE, model_type="apertus", attention_bias=True, tie_word_embeddings=True),
    "apertus1p5_text": dict(BASE, model_type="apertus1p5_text"),
    "apertus1p5_text-pruned-head": dict(BASE, model_type="apertus1p5_text", output_vocab_size=320),
    "olmo": dict(BASE, model_type="olmo", clip_qkv=8.0),
    "olmo-bias": dict(BASE, model_type="olmo", attention_bias=True),
    "glm": dict(BASE, model_type="glm", head_dim=16),
    "glm-no-bias-quarter-rotary": dict(BASE, model_type="glm", head_dim=16, attention_bias=False,
                                       partial_rotary_factor=0.25),
    "glm4": dict(BASE, model_type="glm4", head_dim=16),
    "seed_oss": dict(BASE, model_type="seed_oss", head_dim=16),
    "seed_oss-out-bias-mlp-bias": dict(BASE, model_type="seed_oss", head_dim=16, attention_out_bias=True,
                                       mlp_bias=True),
    "hyperclovax": dict(BASE, model_type="hyperclovax", attention_bias=True),
    "hyperclovax-no-post-norm": dict(BASE, model_type="hyperclovax", use_post_norm=False),
    "ernie4_5": dict(BASE, model_type="ernie4_5", head_dim=16),
    "ernie4_5-bias-untied": dict(BASE, model_type="ernie4_5", head_dim=16, use_bias=True, tie_word_embeddings=False),
    "helium": dict(BASE, model_type="helium", head_dim=16),
    # Zamba2: Mamba-2 layers and hybrid layers sharing num_mem_blocks transformer blocks (attention over the
    # 2h-wide concatenation with the embedding, fused-gate MLP), per-use adapters and a per-layer linear
    "zamba2": dict(BASE, model_type="zamba2", num_key_value_heads=8, layers_block_type=["mamba", "hybrid"] * 2,
                   n_mamba_heads=8, mamba_d_state=16),
    "zamba2-blocks-adapters-rope-bias": dict(
        BASE, model_type="zamba2", num_hidden_layers=6, num_key_value_heads=8, num_mem_blocks=2,
        layers_block_type=["hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"], use_shared_attention_adapter=True,
        adapter_rank=8, use_mem_rope=True, add_bias_linear=True, n_mamba_heads=4, mamba_ngroups=2, mamba_expand=3,
        intermediate_size=None, mamba_d_state=16),
    # more blocks than hybrid layers, GQA (no attention adapters), transformers' linear_attention name for Mamba
    "zamba2-gqa-spare-blocks": dict(BASE, model_type="zamba2", num_mem_blocks=3, mamba_d_state=8, n_mamba_heads=16,
                                    layers_block_type=["linear_attention", "hybrid", "hybrid", "linear_attention"]),
    # Zamba: one shared block (no adapters, separate gate / up), Mamba-1 with per-head x_proj / dt_proj
    "zamba": dict(BASE, model_type="zamba", num_hidden_layers=7, n_mamba_heads=4, mamba_d_state=8,
                  attn_layer_period=3, attn_layer_offset=1),
    "zamba-layers-biases": dict(BASE, model_type="zamba", num_key_value_heads=8, n_mamba_heads=2, mamba_d_state=8,
                                mamba_dt_rank=6, mamba_proj_bias=True, mamba_conv_bias=False, attention_head_dim=24,
                                layers_block_type=["hybrid", "mamba", "hybrid", "hybrid"]),
    "granitemoe": dict(BASE, model_type="granitemoe", num_local_experts=4, num_experts_per_tok=2),
    "granitemoeshared": dict(BASE, model_type="granitemoeshared", num_local_experts=4, num_experts_per_tok=2,
                             shared_intermediate_size=96),
    # EXAONE 3's published field names (num_layers, layer_norm_epsilon, activation_function)
    "exaone": {"model_type": "exaone", "hidden_size": 128, "num_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 2, "intermediate_size": 352, "vocab_size": 512, "layer_norm_epsilon": 1e-5,
               "activation_function": "silu", "tie_word_embeddings": True},
    # InternLM3's published names: qkv_bias and bias (transformers' attribute_map: attention_bias, mlp_bias)
    "internlm3": dict(BASE, model_type="internlm3", head_dim=16),
    "internlm3-biases": dict(BASE, model_type="internlm3", head_dim=16, qkv_bias=True, bias=True),
    "vaultgemma": dict(BASE, model_type="vaultgemma", head_dim=32, sliding_window=32),
    "cwm": dict(BASE, model_type="cwm", head_dim=16, sliding_window=64),
    # IQuest-Coder-V1: transformers builds LlamaForCausalLM (head_dim 128 by default, untied)
    "iquestcoder": dict(BASE, model_type="iquestcoder", head_dim=16),
    "iquestcoder-head_dim-default-tied": dict(BASE, model_type="iquestcoder", tie_word_embeddings=True),
    # Emu3 is counted whole (its VQ-VAE beside the language model), which AutoModelForCausalLM's Emu3ForCausalLM
    # leaves out: tests/test_emu3_whole.py checks it against Emu3ForConditionalGeneration
    "ministral3": dict(BASE, model_type="ministral3", head_dim=16),
    # Granite SWA: attention sinks, default layer_types (full every 4th from 0); a RoPE base per layer (0: NoPE)
    "granite_swa": dict(BASE, model_type="granite_swa", sliding_window=64),
    "granite_swa-layer-thetas": dict(BASE, model_type="granite_swa", sliding_window=64, layer_rope_theta=[0, 1e4, 1e4, 5e5],
                                     layer_types=["full_attention", "sliding_attention"] * 2),
    "granitemoe_swa": dict(BASE, model_type="granitemoe_swa", num_local_experts=4, num_experts_per_tok=2,
                           sliding_window=64),
    "granitemoe_swa-shared": dict(BASE, model_type="granitemoe_swa", num_local_experts=4, num_experts_per_tok=2,
                                  shared_intermediate_size=96, sliding_window=64),
    # FlexOlmo: OLMo 2's norms and q/k norms over OLMoE's experts
    "flex_olmo": dict(BASE, model_type="flex_olmo", num_experts=8, num_experts_per_tok=2),
    # Mellum: Qwen3-MoE attention and experts, dense / sparse by mlp_layer_types, sliding layers by layer_types
    "mellum": dict(BASE, model_type="mellum", head_dim=16, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
                   mlp_layer_types=["dense", "sparse", "sparse", "sparse"], sliding_window=64,
                   layer_types=["sliding_attention", "full_attention"] * 2),
    "mellum-default-layers": dict(BASE, model_type="mellum", head_dim=16, num_experts=8, num_experts_per_tok=2,
                                  moe_intermediate_size=64),
    # MiniCPM3: MLA (v_head_dim from hidden / heads) with a dense MLP, tied by default
    "minicpm3": dict(BASE, model_type="minicpm3", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                     qk_rope_head_dim=8),
    # BitNet: attn_sub_norm before o_proj, ffn_sub_norm before down_proj
    "bitnet": dict(BASE, model_type="bitnet"),
    "bitnet-bias-tied": dict(BASE, model_type="bitnet", attention_bias=True, tie_word_embeddings=True),
    # NanoChat: weightless norms, a plain relu2 MLP (fc1 / fc2)
    "nanochat": dict(BASE, model_type="nanochat"),
    # Youtu-LLM: DeepSeek V3's MLA with a dense MLP everywhere, tied by default; Jais 2: LayerNorms, relu2, biases
    "youtu": dict(BASE, model_type="youtu", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16, qk_rope_head_dim=8,
                  v_head_dim=16),
    "jais2": dict(BASE, model_type="jais2"),
    "jais2-no-bias": dict(BASE, model_type="jais2", attention_bias=False, mlp_bias=False),
    # Inkling: relative-bias attention with short convs (own head shapes on sliding layers), a dense MLP with a global
    # scale, MoE layers whose router also scores the shared experts; local_layer_ids / dense_mlp_idx /
    # dense_intermediate_size as checkpoints spell them
    "inkling_text": dict(BASE, model_type="inkling_text", head_dim=16, swa_num_attention_heads=4,
                         swa_num_key_value_heads=1, swa_head_dim=24, sliding_window_size=32, d_rel=4, rel_extent=48,
                         moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=2,
                         mlp_layer_types=["dense", "sparse", "sparse", "dense"],
                         layer_types=["hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"]),
    "inkling_text-checkpoint-fields": dict(BASE, model_type="inkling_text", num_hidden_layers=7, head_dim=16,
                                           swa_head_dim=8, sliding_window=16, d_rel=8, rel_extent=24,
                                           intermediate_size=40, dense_intermediate_size=96, dense_mlp_idx=2,
                                           n_routed_experts=4, num_experts_per_tok=1, n_shared_experts=1,
                                           local_layer_ids=[1, 2, 4], sconv_kernel_size=3),
    # Inkling-2: gated output, attention sinks, dynamic K/V convs on full layers, block attention residuals, an
    # lm_head of unpadded_vocab_size rows; default layer_types (full every 6th layer)
    "inkling2_text": dict(V4_BASE, model_type="inkling2_text", num_hidden_layers=7, head_dim=16,
                          swa_num_attention_heads=4, swa_num_key_value_heads=1, swa_head_dim=8, sliding_window_size=32,
                          d_rel=4, rel_extent=48, moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2,
                          unpadded_vocab_size=500, n_layers_per_attn_res_block=3),
    "minicpm3-untied-v_head_dim": dict(BASE, model_type="minicpm3", q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16,
                                       qk_rope_head_dim=8, v_head_dim=24, tie_word_embeddings=False),
    # MiniMax: lightning attention (qkv_proj, output_gate, norm over all heads, out_proj) and GQA softmax layers,
    # a Mixtral-style MoE in every layer; transformers' default layout (full at even layers), or layer_types
    "minimax": dict(BASE, model_type="minimax", num_local_experts=4, num_experts_per_tok=2),
    "minimax-layer_types-head_dim-tied": dict(BASE, model_type="minimax", num_hidden_layers=5, head_dim=24,
                                              num_local_experts=8, num_experts_per_tok=3, tie_word_embeddings=True,
                                              layer_types=["linear_attention"] * 3 + ["full_attention",
                                                                                      "linear_attention"]),
}
_MLA = dict(q_lora_rank=48, kv_lora_rank=64, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24,
            moe_intermediate_size=32, num_experts_per_tok=2)
CASES.update({
    # GLM-4.7-Flash: V3's MLA and MoE; layer 0 dense by default (first_k_dense_replace is not read), or mlp_layer_types
    "glm4_moe_lite": dict(BASE, **_MLA, model_type="glm4_moe_lite", n_routed_experts=8, n_shared_experts=2,
                          first_k_dense_replace=3),
    "glm4_moe_lite-mlp_layer_types": dict(BASE, **_MLA, model_type="glm4_moe_lite", n_routed_experts=8,
                                          mlp_layer_types=["dense", "sparse", "dense", "sparse"], attention_bias=True),
    # A.X-K1: a post_mlp_layernorm on MoE layers only; MoE from first_k_dense_replace (default 1) every
    # moe_layer_freq layers, or mlp_layer_types
    "axk1": dict(BASE, **_MLA, model_type="axk1", n_routed_experts=8, n_group=2, topk_group=1),
    "axk1-legacy-freq": dict(BASE, **_MLA, model_type="axk1", n_routed_experts=8, n_shared_experts=2,
                             first_k_dense_replace=1, moe_layer_freq=2, tie_word_embeddings=True),
    "axk1-mlp_layer_types": dict(BASE, **_MLA, model_type="axk1", n_routed_experts=8,
                                 mlp_layer_types=["sparse", "dense", "sparse", "sparse"]),
    # Sarvam MLA: a DeepSeek V3 (no q LoRA by default); the original sarvam-105b names num_experts /
    # num_shared_experts, head_dim (kv_lora_rank + qk_rope_head_dim, not read), rope_scaling deepseek_yarn
    "sarvam_mla": dict(BASE, **{k: v for k, v in _MLA.items() if k != "q_lora_rank"}, model_type="sarvam_mla",
                       num_experts=8, num_shared_experts=2, head_dim=72, first_k_dense_replace=2,
                       rope_scaling={"type": "deepseek_yarn", "factor": 4.0, "original_max_position_embeddings": 1024,
                                     "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}),
})
# Kolibri-1: EXAONE 4 attention, GLM-4-0414 sandwich norms, experts plus an ungated shared expert on every layer
# (the default layer_types: full on layer 4); its experts under transformers' saved name num_local_experts
# Flint: Qwen3-MoE attention with sinks, NoPE full layers, dense mlp_only_layers ([0, 1] by default), experts plus
# an ungated shared expert elsewhere
CASES.update({
    "kolibri1": dict(V4_BASE, model_type="kolibri1", num_hidden_layers=5, head_dim=16, num_experts=8,
                     num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=48,
                     sliding_window=64),
    "kolibri1-layer_types-local_experts": dict(V4_BASE, model_type="kolibri1", head_dim=24, num_local_experts=6,
                                               num_experts_per_tok=3, moe_intermediate_size=32,
                                               shared_expert_intermediate_size=80, tie_word_embeddings=True,
                                               layer_types=["full_attention", "sliding_attention"] * 2),
    "flint": dict(BASE, model_type="flint", num_hidden_layers=6, head_dim=16, num_experts=8, num_experts_per_tok=2,
                  moe_intermediate_size=64, shared_expert_intermediate_size=48, sliding_window=64, attention_bias=True),
    "flint-mlp_only-layer_types": dict(BASE, model_type="flint", head_dim=16, num_experts=8, num_experts_per_tok=2,
                                       moe_intermediate_size=64, shared_expert_intermediate_size=48,
                                       mlp_only_layers=[2], layer_types=["sliding_attention", "full_attention"] * 2),
    # Lara-4-Mini: Qwen3.5's DeltaNet, Qwen3 attention (sliding / NoPE full), Flint's sparse block on every layer;
    # the default layer_types (period 5), or given; tied by default
    "lara_mini": dict(V4_BASE, model_type="lara_mini", num_hidden_layers=6, head_dim=16, linear_num_key_heads=2,
                      linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=24, num_experts=8,
                      num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=48),
    "lara_mini-layer_types-bias-untied": dict(V4_BASE, model_type="lara_mini", head_dim=32, linear_num_key_heads=2,
                                              linear_num_value_heads=2, linear_key_head_dim=16,
                                              linear_value_head_dim=16, linear_conv_kernel_dim=3, num_experts=4,
                                              num_experts_per_tok=3, moe_intermediate_size=32,
                                              shared_expert_intermediate_size=40, attention_bias=True,
                                              tie_word_embeddings=False,
                                              layer_types=["full_attention", "linear_attention",
                                                           "sliding_attention", "sliding_attention"]),
})
# MiniMax-M3's language model: per-head Gemma q/k norms, dense (fused gate_up, dense_intermediate_size) or MoE layers
# by mlp_layer_types (experts of intermediate_size, a fused shared expert); the checkpoint's legacy fields
# (moe_layer_freq, sparse_attention_config, hidden_act "swigluoai") read as MiniMaxM3VLTextConfig reads them
_M3 = dict(BASE, model_type="minimax_m3_vl_text", head_dim=16, rotary_dim=8, num_local_experts=4,
           num_experts_per_tok=2, shared_intermediate_size=48, dense_intermediate_size=96)
CASES.update({
    "minimax_m3_vl_text": dict(_M3, mlp_layer_types=["dense", "sparse", "sparse", "sparse"]),
    "minimax_m3_vl_text-legacy-tied": dict(_M3, moe_layer_freq=[0, 1, 0, 1], hidden_act="swigluoai",
                                           sparse_attention_config={"sparse_attention_freq": [0, 0, 0, 0]},
                                           tie_word_embeddings=True, num_key_value_heads=4),
    # sparse layers: GQA attention over the key blocks a lightning indexer selects (indexer q/k projections and norms)
    "minimax_m3_vl_text-sparse": dict(_M3, layer_types=["full_attention", "minimax_m3_sparse"] * 2, index_n_heads=2,
                                      index_head_dim=8, index_block_size=4, index_topk_blocks=3),
    "minimax_m3_vl_text-legacy-sparse": dict(_M3, moe_layer_freq=[0, 1, 1, 1],
                                             sparse_attention_config={"sparse_attention_freq": [1, 0, 1, 1],
                                                                      "sparse_num_index_heads": 4,
                                                                      "sparse_index_dim": 24, "sparse_block_size": 8,
                                                                      "sparse_topk_blocks": 2,
                                                                      "sparse_local_block": 1}),
    # SmallDoge's Doge: per-head q/k norms, the dynamic mask's A and dt_proj, learned residual scales per layer
    "doge": dict(BASE, model_type="doge"),
    "doge-bias-sliding-tied": dict(BASE, model_type="doge", attention_bias=True, mlp_bias=True, sliding_window=64,
                                   tie_word_embeddings=True, num_key_value_heads=4, keep_window_size=32),
})
# xLSTM (NX-AI): mLSTM blocks (q/k at qk_dim_factor, v and the output gate at v_dim_factor, biased i/f gates, a
# per-head LayerNorm) and SwiGLU feed-forwards; the fused weight_mode with biases, num_blocks, and a
# tie_word_embeddings transformers ignores (xLSTMForCausalLM never ties)
CASES.update({
    "xlstm": {"model_type": "xlstm", "hidden_size": 128, "num_hidden_layers": 3, "num_heads": 4, "vocab_size": 512},
    "xlstm-fused-bias-blocks-tied": {"model_type": "xlstm", "hidden_size": 256, "num_blocks": 2, "num_heads": 2,
                                     "vocab_size": 300, "weight_mode": "fused", "use_bias": True,
                                     "qk_dim_factor": 0.25, "v_dim_factor": 0.5, "ffn_proj_factor": 1.3,
                                     "ffn_round_up_to_multiple_of": 128, "tie_word_embeddings": True},
    "xlstm-bias-blocks": {"model_type": "xlstm", "hidden_size": 256, "num_blocks": 2, "num_heads": 2, "vocab_size": 300,
                          "use_bias": True, "qk_dim_factor": 0.25, "v_dim_factor": 0.5},
})
# Laguna: per-layer query heads over num_key_value_heads, a bias-free g_proj (per head, or per feature with "per-element"
# gating), sliding / full layers, layer 0 dense by default and experts plus one shared SwiGLU elsewhere
# Sarvam-30B (sarvam_moe): GLM-4.5's model under SarvamMoEConfig, read by the original sarvam-30b names too
_LAGUNA_MOE = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, shared_expert_intermediate_size=40)
CASES.update({
    "laguna": dict(BASE, **_LAGUNA_MOE, model_type="laguna", head_dim=32, num_attention_heads_per_layer=[8, 4, 6, 2],
                   layer_types=["full_attention"] + ["sliding_attention"] * 3, sliding_window=64),
    "laguna-defaults": dict(BASE, model_type="laguna", num_experts=8),
    "laguna-per-element-bias": dict(BASE, **_LAGUNA_MOE, model_type="laguna", gating="per-element", attention_bias=True,
                                    mlp_layer_types=["sparse", "dense", "sparse", "dense"], tie_word_embeddings=True),
    "sarvam_moe": dict(BASE, model_type="sarvam_moe", num_experts=8, num_shared_experts=2, num_experts_per_tok=2,
                       moe_intermediate_size=48, head_dim=32, first_k_dense_replace=2, use_qkv_bias=True),
    "sarvam_moe-defaults": dict(BASE, model_type="sarvam_moe", n_routed_experts=8),
    "sarvam_moe-no-qk-norm-partial": dict(BASE, model_type="sarvam_moe", n_routed_experts=8, n_shared_experts=0,
                                          use_qk_norm=False, partial_rotary_factor=0.5, tie_word_embeddings=True),
})
# Hunyuan V3 (Hy3-preview): per-head q/k norms, layer 0 dense and the rest MoE by default (sigmoid router, a shared
# MLP of num_shared_experts x moe_intermediate_size); the head_dim class default (128, not hidden / heads); the
# mlp_layer_types row with biases (the shared MLP takes mlp_bias, the stacked experts none) and two shared experts
CASES.update({
    "hy_v3": dict(BASE, model_type="hy_v3", head_dim=16, num_experts=8, num_experts_per_tok=2,
                  moe_intermediate_size=64),
    "hy_v3-default-head_dim": dict(BASE, model_type="hy_v3", num_experts=4, num_experts_per_tok=1,
                                   moe_intermediate_size=32),
    "hy_v3-mlp_layer_types-bias-tied": dict(BASE, model_type="hy_v3", head_dim=24, num_local_experts=8,
                                            num_experts_per_tok=3, moe_intermediate_size=48, num_shared_experts=2,
                                            mlp_layer_types=["sparse", "dense", "sparse", "dense"], mlp_bias=True,
                                            attention_bias=True, tie_word_embeddings=True),
})
# Cohere 2 MoE (Command A MoE): Cohere 2's parallel block, 3 sliding (RoPE) : 1 full (NoPE) layers, every layer MoE
# by default (experts of intermediate_size, a bias-free router); the first_k_dense_replace prefix (dense at
# prefix_dense_intermediate_size, full attention with RoPE), shared experts, RMSNorms and the head_dim class default;
# explicit layer_types / mlp_layer_types with a prefix pattern of 2 (dense full layers then NoPE)
CASES.update({
    "cohere2_moe": dict(BASE, model_type="cohere2_moe", head_dim=16, num_experts=8, num_experts_per_tok=2,
                        sliding_window=64),
    "cohere2_moe-prefix-shared-rms-untied": dict(BASE, model_type="cohere2_moe", num_experts=4, num_experts_per_tok=1,
                                                 first_k_dense_replace=1, prefix_dense_intermediate_size=200,
                                                 num_shared_experts=2, shared_expert_combination_strategy="sum",
                                                 expert_selection_fn="sigmoid", rms_norm_eps=1e-5, attention_bias=True,
                                                 tie_word_embeddings=False, sliding_window=64),
    "cohere2_moe-lists": dict(BASE, model_type="cohere2_moe", head_dim=24, num_experts=6, num_experts_per_tok=3,
                              num_shared_experts=1, prefix_dense_sliding_window_pattern=2, sliding_window=64,
                              layer_types=["sliding_attention", "full_attention", "full_attention",
                                           "sliding_attention"],
                              mlp_layer_types=["dense", "dense", "sparse", "sparse"]),
})

CASES.update({
    # RecurrentGemma (Griffin): RG-LRU recurrent blocks and local attention by block_types (default r, r, a)
    "recurrent_gemma": {"model_type": "recurrent_gemma", "hidden_size": 64, "num_hidden_layers": 5,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300,
                        "intermediate_size": 96, "attention_window_size": 8},
    "recurrent_gemma-wide-lru-gqa-bias-untied": {"model_type": "recurrent_gemma", "hidden_size": 64,
                                                 "num_hidden_layers": 5, "num_attention_heads": 4,
                                                 "num_key_value_heads": 2, "vocab_size": 300, "intermediate_size": 97,
                                                 "attention_window_size": 8, "lru_width": 96, "conv1d_width": 3,
                                                 "attention_bias": True, "tie_word_embeddings": False,
                                                 "block_types": ["attention", "recurrent"], "head_dim": 24,
                                                 "partial_rotary_factor": 0.25},
})


# DiffLlama: Llama with differential attention (four lambda vectors of head_dim per layer, a weightless group norm);
# the second row GQA with a head_dim of its own, attention_bias on all four projections, tied
CASES.update({
    "diffllama": {"model_type": "diffllama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "intermediate_size": 96, "vocab_size": 300},
    "diffllama-gqa-headdim-bias-tied": {"model_type": "diffllama", "hidden_size": 64, "num_hidden_layers": 3,
                                        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 12,
                                        "intermediate_size": 80, "vocab_size": 300, "attention_bias": True,
                                        "tie_word_embeddings": True},
})

# JetMoE: a mixture of attention heads (routed query / output experts, shared kv_proj) and a biased MoE; the second
# row untied, experts wider than hidden / heads (kv_channels 24), top-3 of 5, and a num_attention_heads transformers
# overrides (kv heads x top-k)
CASES.update({
    "jetmoe": {"model_type": "jetmoe", "hidden_size": 64, "num_hidden_layers": 2, "num_key_value_heads": 4,
               "kv_channels": 16, "intermediate_size": 96, "num_local_experts": 4, "num_experts_per_tok": 2,
               "vocab_size": 300},
    "jetmoe-untied-top3-wide": {"model_type": "jetmoe", "hidden_size": 64, "num_hidden_layers": 3,
                                "num_key_value_heads": 2, "kv_channels": 24, "intermediate_size": 80,
                                "num_local_experts": 5, "num_experts_per_tok": 3, "num_attention_heads": 7,
                                "vocab_size": 300, "tie_word_embeddings": False, "rms_norm_eps": 1e-5},
})


# Persimmon: a biased fused query_key_value (heads, 3, d), LayerNorms with bias over head_dim on q and k
# (qk_layernorm, the default), partial RoPE, a biased relu2 MLP, untied; the second row without the q/k norms,
# tied, a quarter rotary. Fuyu: its flat published form (the text fields at the top level) adds one biased patch
# Linear (patch_size² x num_channels -> hidden). BioGPT: offset learned positions (max_position_embeddings + 2
# rows), a biased fc1 / fc2 block, tied by default; the second untied with scale_embedding off
_PERSIMMON_TINY = {"model_type": "persimmon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "intermediate_size": 96, "vocab_size": 300}
CASES.update({
    "persimmon": _PERSIMMON_TINY,
    "persimmon-no-qk-ln-tied-quarter": dict(_PERSIMMON_TINY, qk_layernorm=False, tie_word_embeddings=True,
                                            partial_rotary_factor=0.25, num_hidden_layers=3),
    "fuyu-flat": dict(_PERSIMMON_TINY, model_type="fuyu", patch_size=4, num_channels=3),
    "fuyu-flat-default-patch-tied": dict(_PERSIMMON_TINY, model_type="fuyu", tie_word_embeddings=True),
    "biogpt": {"model_type": "biogpt", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
               "intermediate_size": 96, "vocab_size": 300, "max_position_embeddings": 100},
    "biogpt-untied-unscaled": {"model_type": "biogpt", "hidden_size": 48, "num_hidden_layers": 3,
                               "num_attention_heads": 6, "intermediate_size": 80, "vocab_size": 300,
                               "tie_word_embeddings": False, "scale_embedding": False},
})

# Arcee AFMoE (Trinity): per-head q/k norms, a sigmoid output gate (gate_proj), sandwich norms, RoPE on sliding
# layers only; dense MLPs on the first num_dense_layers (default 1), then experts plus num_shared_experts shared
# ones fused (default 2), a sigmoid router with an expert_bias parameter. The first row: the default layer_types
# (full on every 4th layer); the second: given layer_types, q/k/v/o biases, no shared expert, tied, muP; the
# third: every layer dense (num_dense_layers >= layers), full on every 2nd layer, head_dim's class default (128)
CASES.update({
    "afmoe": dict(BASE, model_type="afmoe", head_dim=16, num_experts=8, num_experts_per_tok=2,
                  moe_intermediate_size=64, sliding_window=64),
    "afmoe-layer_types-bias-tied-mup": dict(BASE, model_type="afmoe", num_hidden_layers=5, head_dim=24, num_experts=6,
                                            num_experts_per_tok=3, moe_intermediate_size=32, num_shared_experts=0,
                                            num_dense_layers=2, attention_bias=True, tie_word_embeddings=True,
                                            mup_enabled=True, route_scale=2.5, sliding_window=32,
                                            layer_types=["full_attention", "sliding_attention", "sliding_attention",
                                                         "full_attention", "sliding_attention"]),
    "afmoe-dense-every2": dict(BASE, model_type="afmoe", num_dense_layers=4, global_attn_every_n_layers=2,
                               num_shared_experts=3),
})


# Aria's language model: Llama attention, every layer a MoE (stacked SiLU experts of intermediate_size, a top-k
# softmax router, one shared MLP of intermediate_size x moe_num_shared_experts). The second row: q/k/v/o and the
# shared MLP biased, head_dim apart from hidden / heads, one shared expert, tied. XGLM: its own field names (d_model,
# num_layers, attention_heads, ffn_dim), biased attention and fc1 / fc2, LayerNorms, fixed sinusoidal positions
# (no parameters), tied; the second row under the standard names (its attribute_map), untied, unscaled, ReLU
CASES.update({
    "aria_text": dict(BASE, model_type="aria_text", moe_num_experts=8, moe_topk=2, moe_num_shared_experts=2),
    "aria_text-bias-head_dim-tied": dict(BASE, model_type="aria_text", head_dim=24, moe_num_experts=6, moe_topk=3,
                                         moe_num_shared_experts=1, attention_bias=True, mlp_bias=True,
                                         tie_word_embeddings=True, intermediate_size=80),
    "xglm": {"model_type": "xglm", "d_model": 64, "num_layers": 2, "attention_heads": 4, "ffn_dim": 96,
             "vocab_size": 300, "max_position_embeddings": 128},
    "xglm-standard-names-untied-unscaled": {"model_type": "xglm", "hidden_size": 48, "num_hidden_layers": 3,
                                            "num_attention_heads": 6, "ffn_dim": 80, "vocab_size": 200,
                                            "scale_embedding": False, "tie_word_embeddings": False,
                                            "activation_function": "relu"},
})


CASES.update({
    # RWKV-4: attention_hidden_size / intermediate_size default to hidden / 4 x hidden; a narrower channel-mix, a
    # wider time-mix and a tied head (transformers ties head.weight to the embedding only when asked)
    "rwkv": {"model_type": "rwkv", "hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300},
    "rwkv-att-inter-tied": {"model_type": "rwkv", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 300,
                            "attention_hidden_size": 96, "intermediate_size": 200, "tie_word_embeddings": True,
                            "rescale_every": 0},
})


CASES.update({
    # Inkling-2 Loop: Inkling-2's layers 3..5 (a full layer and two sliding ones) run three times on their weights;
    # message gates of rank 8 on the looped layers, message_input's (3, 4, hidden) queries; and its loop_config form
    "inkling2_loop_text": dict(CASES["inkling2_text"], model_type="inkling2_loop_text", num_hidden_layers=9,
                               layer_types=["hybrid_sliding"] * 3 + ["hybrid", "hybrid_sliding", "hybrid_sliding",
                                                                     "hybrid_sliding", "hybrid", "hybrid_sliding"],
                               loop_layer_index_start=3, loop_layer_index_end=6, loop_num_passes=3,
                               loop_gate_rank=8),
    "inkling2_loop_text-loop_config": dict(CASES["inkling2_text"], model_type="inkling2_loop_text",
                                           num_hidden_layers=6,
                                           loop_config={"core_start": 3, "core_end": 6, "num_passes": 2,
                                                        "gate_rank": 4}),
    # Dory: nGPT layers (gated attention with sqk / s_gate, suv-scaled MLP, lambda rates, weightless L2 norms), a
    # logit_scale on lm_head; layers 2..4 run three times (a KV cache per pass); default layer_types (full every 4th)
    "dory": dict(BASE, model_type="dory", num_hidden_layers=7, head_dim=16, n_input_layers=2, n_output_layers=2,
                 n_recurrent_loops=3, sliding_window=32),
    # the released form: an "mlp" entry after each layer type, doubled counts; biases, a tied head (its
    # logit_scale still its own), one KV cache per looped layer written by the last pass
    "dory-released-layer_types-last_loop-tied": dict(
        BASE, model_type="dory", num_hidden_layers=10, n_input_layers=2, n_output_layers=4, n_recurrent_layers=4,
        layer_types=[b for t in ["sliding_attention", "full_attention"] * 2 + ["full_attention"] for b in (t, "mlp")],
        head_dim=8, attention_bias=True, mlp_bias=True, tie_word_embeddings=True, sliding_window=16,
        recurrent_kv_cache_mode="last_loop"),
    # HRM-Text: two stacks of 2 layers (gated MHA of head_dim 16, weightless norms, z_L_init) run 2 x (2 + 1) times;
    # a saved config's inflated num_hidden_layers beside num_layers_per_stack; biases
    "hrm_text": dict(BASE, model_type="hrm_text", num_hidden_layers=2, head_dim=16, H_cycles=2, L_cycles=2),
    "hrm_text-saved-inflated-bias": dict(BASE, model_type="hrm_text", num_hidden_layers=3 * 1 * 4,
                                         num_layers_per_stack=3, H_cycles=1, L_cycles=3, head_dim=8,
                                         attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
})


CASES.update({
    # Zyphra ZAYA (CCA attention, MLP router with a skip expert): the class defaults are ZAYA1-8B's; a tiny one with
    # sliding layers, every bias, an untied biased head, wider convs (3 and 2 taps) and its own per-type RoPE blocks
    "zaya": {"model_type": "zaya", "vocab_size": 262272, "hidden_size": 2048, "num_hidden_layers": 40,
             "num_attention_heads": 8},
    "zaya-tiny-sliding-biased": {
        "model_type": "zaya", "vocab_size": 320, "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "moe_intermediate_size": 48, "num_experts": 4,
        "router_hidden_size": 24, "cca_time0": 3, "cca_time1": 2, "attention_bias": True, "lm_head_bias": True,
        "tie_word_embeddings": False, "sliding_window": 32,
        "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"],
        "rope_parameters": {"hybrid": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5},
                            "hybrid_sliding": {"rope_type": "default", "rope_theta": 1e4,
                                               "partial_rotary_factor": 0.25}}},
})


# ModernBERT decoder (Ettin): class defaults (layer_types from global_attn_every_n_layers, local_attention 128 -> 64-key
# windows, bias-free, tied, biased decoder); and every bias on, explicit layer_types and RoPE bases, untied
_MBD = {k: v for k, v in BASE.items() if k != "num_key_value_heads"}
CASES.update({
    "modernbert-decoder": dict(_MBD, model_type="modernbert-decoder", num_hidden_layers=5, local_attention=16),
    "modernbert-decoder-biases-untied": dict(_MBD, model_type="modernbert-decoder", attention_bias=True, mlp_bias=True,
                                             norm_bias=True, classifier_bias=True, decoder_bias=False,
                                             tie_word_embeddings=False, global_rope_theta=50000.0,
                                             local_rope_theta=20000.0, local_attention=32,
                                             layer_types=["sliding_attention", "full_attention",
                                                          "sliding_attention", "sliding_attention"]),
})

# Ergo: fused QKV, sliding RoPE / NoPE full layers, a relu2 dense MLP then relu2 experts with per-expert norms and a
# normed shared expert (tests/test_ergo_kolibri.py); Kolibri 1.1: Kolibri-1 with indexed layers, the second reading the
# first's K/V by default, dense mlp_only_layers
CASES.update({
    "ergo": dict(V4_BASE, model_type="ergo", first_dense_intermediate_size=96, moe_intermediate_size=32,
                 shared_intermediate_size=48, num_experts=8, num_experts_per_tok=2, sliding_window=64),
    "kolibri1_1": dict(V4_BASE, model_type="kolibri1_1", num_hidden_layers=15, head_dim=16, num_experts=8,
                       num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                       mlp_only_intermediate_size=96, sliding_window=64, index_num_heads=4),
})

# Beam: class defaults (every sixth layer and the last full and NoPE, the first three dense, grouped sigmoid router);
# and explicit layer / MLP types, RoPE on both types, biased attention, tied, no soft-cap
_BEAM = dict(BASE, model_type="beam", num_hidden_layers=7, head_dim=16, num_experts=8, num_experts_per_tok=2,
             moe_intermediate_size=64, n_group=4, topk_group=2, sliding_window=64)
CASES.update({
    "beam": _BEAM,
    "beam-roped-full-biased-tied": dict(_BEAM, num_hidden_layers=4, attention_bias=True, tie_word_embeddings=True,
                                        layer_types=["full_attention", "sliding_attention", "full_attention",
                                                     "sliding_attention"],
                                        mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                                        final_logit_softcapping=None,
                                        rope_parameters={"full_attention": {"rope_type": "default",
                                                                            "rope_theta": 50000.0},
                                                         "sliding_attention": {"rope_type": "default",
                                                                               "rope_theta": 10000.0}}),
})


# Mistral Small 4's language model: V3's MLA (q LoRA optional) and MoE after first_k_dense_replace dense layers
CASES.update({
    "mistral4": dict(BASE, model_type="mistral4", num_key_value_heads=8, moe_intermediate_size=32, n_routed_experts=4,
                     num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=8,
                     v_head_dim=16, first_k_dense_replace=1),
})


@pytest.mark.parametrize("name", sorted(CASES))
def test_total_equals_transformers(name):
    cfg = {k: v for k, v in CASES[name].items() if v is not None}
    assert count_params(parse_config(cfg)).total == hf_param_count(cfg)


def kv_per_token_layer(m) -> int:
    return 2 * m.num_key_value_heads * m.head_dim * 2  # K and V, bf16


@pytest.mark.parametrize("name,expect_windows", [
    ("mistral", [64] * 4),
    ("ministral", [64, None, 64, None]),
    ("gemma2", [32, None, 32, None]),
    ("gemma3_text", [32] * 5 + [None] + [32]),
    ("starcoder2", [64] * 4),
    ("exaone4", [64, 64, 64, None]),
    ("gpt_oss", [32, None, 32, None]),
    ("cohere2", [64, 64, 64, None]),
    ("cohere2-layer_types-bias", [64, None, 64, None]),
    ("cohere", [None] * 4),
    ("gpt_neo", [None, 32, None, 32]),
    ("opt-350m", [None] * 24),
    ("dbrx-instruct", [None] * 40),
    ("gemma4_text-moe-default-layers", [32] * 5 + [None, None]),  # five sliding, one full; the last always full
    ("gemma4_unified_text-default-layers", [1024] * 5 + [None, None]),  # Gemma4UnifiedTextConfig's window: 1024
    ("dots1", [None, None, 64, 64]),
    ("exaone_moe", [64, 64, 64, None]),
    ("llama", [None] * 4),
    ("cwm", [None, 64, 64, 64]),  # CWM's default layer_types: every 4th layer (from 0) full
    ("vaultgemma", [32, None, 32, None]),
])
def test_windows_per_family(name, expect_windows):
    spec = parse_config({k: v for k, v in CASES[name].items() if v is not None})
    assert [layer.mixer.window for layer in spec.layers] == expect_windows
    ctx = 1000
    a = analyze(spec, Options(context=ctx, dtype="bf16", kv_dtype="bf16"))
    expected = sum(kv_per_token_layer(layer.mixer) * (min(ctx, w) if w else ctx)
                   for layer, w in zip(spec.layers, expect_windows))
    assert a.kv_bytes_per_sequence == expected
    assert a.kv.bytes_per_token == sum(kv_per_token_layer(layer.mixer) for layer in spec.layers)


def test_llama4_chunks_and_nope_layers():
    spec = parse_config(CASES["llama4_text"])
    assert [layer.mixer.chunk for layer in spec.layers] == [64, 64, 64, None]
    assert [layer.mixer.rotary_dim > 0 for layer in spec.layers] == [True, True, True, False]
    assert [layer.kind.endswith("+moe") for layer in spec.layers] == [False, True, False, True]


def test_cohere2_full_layers_have_no_rope():
    spec = parse_config(CASES["cohere2"])
    assert [layer.mixer.rotary_dim > 0 for layer in spec.layers] == [True, True, True, False]
    assert all(layer.parallel and len(layer.norms) == 1 for layer in spec.layers)


def test_falcon_kv_heads():
    mqa = parse_config(CASES["falcon-mqa"]).layers[0].mixer
    new = parse_config(CASES["falcon-new-arch"]).layers[0].mixer
    rw = parse_config(CASES["falcon-rw-alibi"]).layers[0].mixer
    assert (mqa.num_key_value_heads, new.num_key_value_heads, rw.num_key_value_heads) == (1, 2, 8)
    assert rw.rotary_dim == 0  # ALiBi: no rotary


def test_mla_kv_per_token():
    spec = parse_config(CASES["deepseek_v3"])
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * (64 + 8) * 2
    assert a.kv.naive_bytes_per_token == 4 * 8 * (16 + 8 + 16) * 2


@pytest.mark.parametrize("name,moe_at", [("glm4_moe_lite", {1, 2, 3}), ("glm4_moe_lite-mlp_layer_types", {1, 3}),
                                         ("axk1", {1, 2, 3}), ("axk1-legacy-freq", {2}),
                                         ("axk1-mlp_layer_types", {0, 2, 3}), ("sarvam_mla", {2, 3})])
def test_mla_moe_variants_placement_norms_and_kv(name, moe_at):
    """MoE layers as transformers builds them; A.X-K1's post_mlp_layernorm on its MoE layers only; MLA's cache
    (kv_lora_rank + qk_rope_head_dim per layer); Sarvam's deepseek_yarn read as YaRN."""
    from planner.analysis.spec import MoE

    spec = parse_config(CASES[name])
    assert {i for i, lay in enumerate(spec.layers) if isinstance(lay.ffn, MoE)} == moe_at
    post = {i for i, lay in enumerate(spec.layers) if lay.norm("post_ffn") is not None}
    assert post == (moe_at if name.startswith("axk1") else set())
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * (64 + 8) * 2
    if name == "sarvam_mla":
        assert dict(spec.rope_scaling)["rope_type"] == "yarn" and "type" not in dict(spec.rope_scaling)
    if name == "glm4_moe_lite":  # Glm4MoeLiteConfig's routing defaults
        assert (spec.numerics.routed_scaling_factor, spec.numerics.n_group) == (1.8, 1)


def test_qwen2_moe_placement():
    spec = parse_config(CASES["qwen2_moe"])
    assert [layer.kind.endswith("+moe") for layer in spec.layers] == [False, True, False, False]


@pytest.mark.parametrize("vision", [
    {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
     "image_size": 64, "patch_size": 8, "vision_use_head": False, "model_type": "siglip_vision_model"},
    {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 2,
     "image_size": 32, "patch_size": 16, "vision_use_head": True, "model_type": "siglip_vision_model"},
])
def test_gemma3_wrapper_counts_its_vision_tower(vision):
    text = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 512, "sliding_window": 32,
            "model_type": "gemma3_text"}
    cfg = {"model_type": "gemma3", "text_config": text, "vision_config": vision, "mm_tokens_per_image": 4}
    p = count_params(parse_config(cfg))
    assert p.total == hf_param_count(cfg)
    assert p.vision > 0 and p.total == count_params(parse_config(text)).total + p.vision


_TEXT = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 512, "model_type": "llama"}
_CLIP = {"model_type": "clip_vision_model", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
         "num_attention_heads": 4, "image_size": 64, "patch_size": 8}
_PIXTRAL = dict(_CLIP, model_type="pixtral")
_SIGLIP = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1,
           "num_attention_heads": 2, "image_size": 32, "patch_size": 16}
_GEMMA4_TEXT = {"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32,
                "vocab_size": 128, "vocab_size_per_layer_input": 128, "hidden_size_per_layer_input": 8}
_GEMMA4_VISION = {"model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8, "patch_size": 4,
                  "position_embedding_size": 64}
_GEMMA4_AUDIO = {"model_type": "gemma4_audio", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "subsampling_conv_channels": [8, 4], "output_proj_dims": 48, "conv_kernel_size": 3}
_GEMMA4_UNIFIED_TEXT = dict(_GEMMA4_TEXT, model_type="gemma4_unified_text")  # its per-layer input fields unread
#: Gemma 4 unified's encoder-free embedders: merged patches of (4·2)²·3 pixels to 48, projected from 40
_GEMMA4_UNIFIED_VISION = {"model_type": "gemma4_unified_vision", "patch_size": 4, "pooling_kernel_size": 2,
                          "mm_embed_dim": 48, "mm_posemb_size": 16, "output_proj_dims": 40}

_MROPE = {"rope_type": "default", "mrope_section": [4, 6, 6]}  # sums to head_dim / 2 (32 / 2)
_QWEN2_VISION = {"depth": 2, "embed_dim": 32, "mlp_ratio": 2, "num_heads": 2, "hidden_size": 128, "patch_size": 4,
                 "spatial_merge_size": 2, "temporal_patch_size": 2}
_QWEN25_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "out_hidden_size": 128,
                  "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2, "fullatt_block_indexes": [1]}
_QWEN3_VISION = {"depth": 3, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "out_hidden_size": 128,
                 "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 16,
                 "deepstack_visual_indexes": [0, 2]}
_QWEN3_TEXT = dict(_TEXT, model_type="qwen3_vl_text", head_dim=32, rope_scaling=dict(_MROPE, mrope_interleaved=True))

_QWEN35_TEXT = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 32, "vocab_size": 512, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                "linear_key_head_dim": 16, "linear_value_head_dim": 16, "model_type": "qwen3_5_text",
                "intermediate_size": 256}
_QWEN35_MOE_TEXT = dict({k: v for k, v in _QWEN35_TEXT.items() if k != "intermediate_size"},
                        model_type="qwen3_5_moe_text", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
                        shared_expert_intermediate_size=96)
_QWEN35_VISION = {"model_type": "qwen3_5_vision", "depth": 2, "hidden_size": 64, "intermediate_size": 96,
                  "num_heads": 4, "patch_size": 8, "temporal_patch_size": 2, "spatial_merge_size": 2,
                  "num_position_embeddings": 64, "out_hidden_size": 128}
_MLLAMA_VISION = {"model_type": "mllama_vision_model", "hidden_size": 32, "attention_heads": 2, "intermediate_size": 48,
                  "num_hidden_layers": 2, "num_global_layers": 1, "image_size": 32, "patch_size": 8, "max_num_tiles": 2,
                  "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]], "vision_output_dim": 96,
                  "intermediate_layers_indices": [0, 1]}
_MLLAMA_TEXT = dict(_TEXT, model_type="mllama_text_model", num_hidden_layers=5, cross_attention_layers=[1, 3],
                    pad_token_id=0)

WRAPPERS = {
    "mllama": {"model_type": "mllama", "text_config": _MLLAMA_TEXT, "vision_config": _MLLAMA_VISION},
    # embed_tokens has vocab + 8 rows, lm_head vocab: never tied, whatever the flags say
    "mllama-tie-flags": {"model_type": "mllama", "text_config": dict(_MLLAMA_TEXT, tie_word_embeddings=True),
                         "vision_config": _MLLAMA_VISION, "tie_word_embeddings": True},
    "qwen2_vl": {"model_type": "qwen2_vl", "vision_config": _QWEN2_VISION,
                 "text_config": dict(_TEXT, model_type="qwen2_vl_text", rope_scaling=_MROPE)},
    "qwen2_5_vl-text-tied": {"model_type": "qwen2_5_vl", "vision_config": _QWEN25_VISION,
                             "text_config": dict(_TEXT, model_type="qwen2_5_vl_text", tie_word_embeddings=True)},
    "qwen3_vl": {"model_type": "qwen3_vl", "vision_config": _QWEN3_VISION, "text_config": _QWEN3_TEXT},
    "qwen3_vl-wrapper-tied": {"model_type": "qwen3_vl", "vision_config": dict(_QWEN3_VISION, deepstack_visual_indexes=[]),
                              "text_config": dict(_QWEN3_TEXT, tie_word_embeddings=False), "tie_word_embeddings": True},
    "qwen3_vl_moe": {"model_type": "qwen3_vl_moe", "vision_config": _QWEN3_VISION,
                     "text_config": dict(_QWEN3_TEXT, model_type="qwen3_vl_moe_text", num_experts=4,
                                         num_experts_per_tok=2, moe_intermediate_size=64, mlp_only_layers=[0])},
    "qwen3_5": {"model_type": "qwen3_5", "text_config": _QWEN35_TEXT, "vision_config": _QWEN35_VISION},
    # the wrapper's own flag ties lm_head (the text_config's is ignored); the merger's width is out_hidden_size
    "qwen3_5-wrapper-tied": {"model_type": "qwen3_5", "text_config": dict(_QWEN35_TEXT, tie_word_embeddings=False),
                             "vision_config": dict(_QWEN35_VISION, out_hidden_size=96, spatial_merge_size=1),
                             "tie_word_embeddings": True},
    "qwen3_5-text-tied-ignored": {"model_type": "qwen3_5", "text_config": dict(_QWEN35_TEXT, tie_word_embeddings=True),
                                  "vision_config": _QWEN35_VISION},
    # deepstack_visual_indexes is ignored: Qwen3_5VisionModel has no DeepStack mergers
    "qwen3_5_moe": {"model_type": "qwen3_5_moe", "text_config": _QWEN35_MOE_TEXT,
                    "vision_config": dict(_QWEN35_VISION, deepstack_visual_indexes=[0, 1])},
    "qwen4_exp": {"model_type": "qwen4_exp", "text_config": QWEN4_EXP_PLE,
                  "vision_config": dict(_QWEN35_VISION, model_type="qwen4_exp_vision")},
    "llava-clip": {"model_type": "llava", "text_config": _TEXT, "vision_config": _CLIP},
    "llava-siglip-2-layers-no-bias": {"model_type": "llava", "text_config": dict(_TEXT, model_type="qwen2"),
                                      "vision_config": _SIGLIP, "vision_feature_layer": [-2, -5],
                                      "multimodal_projector_bias": False},
    "llava-text-tied": {"model_type": "llava", "text_config": dict(_TEXT, tie_word_embeddings=True),
                        "vision_config": _CLIP},
    "llava-wrapper-tied": {"model_type": "llava", "text_config": dict(_TEXT, tie_word_embeddings=False),
                           "vision_config": _CLIP, "tie_word_embeddings": True},
    # the wrapper's flag set: it ties (left out, text_config's decides: tests/test_real_configs_vlm_audit.py)
    "mistral3": {"model_type": "mistral3", "text_config": dict(_TEXT, model_type="mistral"), "vision_config": _PIXTRAL,
                 "tie_word_embeddings": True},
    "mistral3-merge3-bias": {"model_type": "mistral3", "text_config": dict(_TEXT, model_type="mistral",
                                                                           tie_word_embeddings=False),
                             "vision_config": _PIXTRAL, "spatial_merge_size": 3, "multimodal_projector_bias": True,
                             "tie_word_embeddings": True},  # the wrapper's flag, set, wins over text_config's
    "mistral3-untied": {"model_type": "mistral3", "text_config": dict(_TEXT, model_type="mistral"),
                        "vision_config": _PIXTRAL, "tie_word_embeddings": False},
    # Mistral Small 4's layout: a mistral4 language model (MLA + MoE) in the mistral3 wrapper; Mistral Large 4
    "mistral3-mistral4": {"model_type": "mistral3", "tie_word_embeddings": False, "vision_config": _PIXTRAL,
                          "text_config": dict(_TEXT, model_type="mistral4", moe_intermediate_size=32, n_routed_experts=4,
                                              num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24,
                                              qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16)},
    "mistral_large4": {"model_type": "mistral_large4", "vision_config": _PIXTRAL,
                       "text_config": dict(_TEXT, model_type="mistral_large4_text", num_hidden_layers=4,
                                           moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
                                           kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                                           index_head_dim=16, index_n_heads=2, kv_source_layers=[0, 1, 1, 3])},
    "gemma4-vision-audio": {"model_type": "gemma4", "text_config": _GEMMA4_TEXT, "vision_config": _GEMMA4_VISION,
                            "audio_config": _GEMMA4_AUDIO},
    "gemma4-vision-no-audio": {"model_type": "gemma4", "text_config": dict(_GEMMA4_TEXT, hidden_size_per_layer_input=0),
                               "vision_config": dict(_GEMMA4_VISION, num_key_value_heads=2), "audio_config": None},
    # Gemma 4 unified: the wrapper's own flag ties lm_head (the text_config's is ignored)
    "gemma4_unified-vision-audio": {"model_type": "gemma4_unified", "text_config": _GEMMA4_UNIFIED_TEXT,
                                    "vision_config": _GEMMA4_UNIFIED_VISION,
                                    "audio_config": {"model_type": "gemma4_unified_audio", "audio_embed_dim": 24}},
    "gemma4_unified-default-vision-text-untied-ignored": {
        "model_type": "gemma4_unified", "text_config": dict(_GEMMA4_UNIFIED_TEXT, tie_word_embeddings=False),
        "vision_config": {}},
    "gemma4_unified-wrapper-untied": {"model_type": "gemma4_unified", "text_config": _GEMMA4_UNIFIED_TEXT,
                                      "vision_config": _GEMMA4_UNIFIED_VISION, "tie_word_embeddings": False},
    # Inkling: an HMLP vision tower (projections folding the patch grid by its prime factors: 2·2·3 here, and
    # temporal 2) and a dMel-bin audio embedding; never tied (no tied weights in transformers), whatever the flag
    "inkling_mm_model": {"model_type": "inkling_mm_model", "tie_word_embeddings": True,
                         "text_config": CASES["inkling_text"],
                         "vision_config": {"patch_size": 12, "temporal_patch_size": 2, "n_layers": 7},
                         "audio_config": {"n_mel_bins": 4, "mel_vocab_size": 16}},
    "inkling_mm_model-defaults": {"model_type": "inkling_mm_model", "text_config": CASES["inkling_text"],
                                  "vision_config": {}, "audio_config": {}},
    # Inkling-2: a ViT (class token, layer scales, learned positions on a grid) and a two-linear merger
    "inkling2": {"model_type": "inkling2", "text_config": CASES["inkling2_text"],
                 "vision_config": {"text_hidden_size": 128, "num_hidden_layers": 2, "hidden_size": 32,
                                   "num_attention_heads": 2, "patch_size": 4, "posemb_grid_size": 4,
                                   "projection_hidden_dim": 48}},
    "inkling2-projector-bias-mlp-ratio": {"model_type": "inkling2", "text_config": CASES["inkling2_text"],
                                          "vision_config": {"text_hidden_size": 128, "num_hidden_layers": 1,
                                                            "hidden_size": 32, "num_attention_heads": 4,
                                                            "mlp_ratio": 2.5, "projector_bias": True,
                                                            "native_patch_size": 6, "adapter_merge_size": 3}},
    "inkling2_loop": {"model_type": "inkling2_loop", "text_config": CASES["inkling2_loop_text"],
                      "vision_config": {"text_hidden_size": 128, "num_hidden_layers": 1, "hidden_size": 32,
                                        "num_attention_heads": 2, "patch_size": 4, "posemb_grid_size": 4,
                                        "projection_hidden_dim": 48}},
}


@pytest.mark.parametrize("model_type,vision", [("qwen2_vl", _QWEN2_VISION), ("qwen2_5_vl", _QWEN25_VISION)])
def test_flat_qwen_vl_config_is_its_text_config(model_type, vision):
    """Qwen2-VL and Qwen2.5-VL hub configs are flat: the language model's fields sit beside vision_config
    (transformers pops them into text_config)."""
    flat = dict(_TEXT, model_type=model_type, vision_config=vision, rope_scaling=_MROPE, tie_word_embeddings=True)
    nested = {"model_type": model_type, "vision_config": vision, "tie_word_embeddings": True,
              "text_config": dict(_TEXT, model_type=f"{model_type}_text", rope_scaling=_MROPE)}
    p = count_params(parse_config(flat))
    assert p == count_params(parse_config(nested))
    assert p.total == hf_param_count(flat) and p.lm_head == 0


#: The architecture fields of meta-llama/Llama-3.2-11B-Vision-Instruct's config.json, transcribed field by field
#: (no verbatim copy of the file was found to bundle; the vision fields agree with mistral.rs' and llama.cpp's
#: notes on the checkpoint: 560-pixel tiles of 14-pixel patches, 4 tiles, 32 + 8 vision layers).
LLAMA_32_11B_VISION = {
    "model_type": "mllama", "image_token_index": 128256, "torch_dtype": "bfloat16",
    "text_config": {"model_type": "mllama_text_model", "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38],
                    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
                    "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
                    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
                    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                    "tie_word_embeddings": False, "vocab_size": 128256},
    "vision_config": {"model_type": "mllama_vision_model", "attention_heads": 16, "hidden_act": "gelu",
                      "hidden_size": 1280, "image_size": 560, "intermediate_layers_indices": [3, 7, 15, 23, 30],
                      "intermediate_size": 5120, "max_num_tiles": 4, "norm_eps": 1e-05, "num_channels": 3,
                      "num_global_layers": 8, "num_hidden_layers": 32, "patch_size": 14,
                      "supported_aspect_ratios": [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]],
                      "vision_output_dim": 7680},
}


#: Qwen2-VL-7B-Instruct's config.json as a VARGPT preparation script copies it (github search, find_string id
#: 57753381994): every field as published except model_type, renamed there (restored to qwen2_vl) and architectures
#: (dropped there). Qwen3-VL-30B-A3B-Instruct's as a Rust test transcribes it (find_string id 62478544309: "only the
#: fields from_hf reads", every architecture field). Not bundled: neither is a verbatim copy.
QWEN2_VL_7B = {"attention_dropout": 0.0,
               "bos_token_id": 151643,
               "eos_token_id": 151645,
               "vision_start_token_id": 151652,
               "vision_end_token_id": 151653,
               "vision_token_id": 151654,
               "image_token_id": 151655,
               "video_token_id": 151656,
               "hidden_act": "silu",
               "hidden_size": 3584,
               "initializer_range": 0.02,
               "intermediate_size": 18944,
               "max_position_embeddings": 32768,
               "max_window_layers": 28,
               "model_type": "qwen2_vl",
               "num_attention_heads": 28,
               "num_hidden_layers": 28,
               "num_key_value_heads": 4,
               "rms_norm_eps": 1e-06,
               "rope_theta": 1000000.0,
               "sliding_window": 32768,
               "tie_word_embeddings": False,
               "torch_dtype": "bfloat16",
               "transformers_version": "4.41.2",
               "use_cache": True,
               "use_sliding_window": False,
               "vision_config": {"depth": 32,
                                 "embed_dim": 1280,
                                 "mlp_ratio": 4,
                                 "num_heads": 16,
                                 "in_chans": 3,
                                 "hidden_size": 3584,
                                 "patch_size": 14,
                                 "spatial_merge_size": 2,
                                 "spatial_patch_size": 14,
                                 "temporal_patch_size": 2},
               "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
               "vocab_size": 152064}
QWEN3_VL_30B_A3B = {"architectures": ["Qwen3VLMoeForConditionalGeneration"],
                    "image_token_id": 151655,
                    "model_type": "qwen3_vl_moe",
                    "text_config": {"attention_bias": False,
                                    "decoder_sparse_step": 1,
                                    "head_dim": 128,
                                    "hidden_size": 2048,
                                    "intermediate_size": 6144,
                                    "max_position_embeddings": 262144,
                                    "mlp_only_layers": [],
                                    "model_type": "qwen3_vl_moe_text",
                                    "moe_intermediate_size": 768,
                                    "norm_topk_prob": True,
                                    "num_attention_heads": 32,
                                    "num_experts": 128,
                                    "num_experts_per_tok": 8,
                                    "num_hidden_layers": 48,
                                    "num_key_value_heads": 4,
                                    "rms_norm_eps": 1e-06,
                                    "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
                                    "rope_theta": 5000000,
                                    "vocab_size": 151936},
                    "tie_word_embeddings": False,
                    "video_token_id": 151656,
                    "vision_config": {"deepstack_visual_indexes": [8, 16, 24],
                                      "depth": 27,
                                      "hidden_act": "gelu_pytorch_tanh",
                                      "hidden_size": 1152,
                                      "in_channels": 3,
                                      "intermediate_size": 4304,
                                      "model_type": "qwen3_vl_moe",
                                      "num_heads": 16,
                                      "num_position_embeddings": 2304,
                                      "out_hidden_size": 2048,
                                      "patch_size": 16,
                                      "spatial_merge_size": 2,
                                      "temporal_patch_size": 2},
                    "vision_end_token_id": 151653,
                    "vision_start_token_id": 151652}


@pytest.mark.parametrize("cfg", [QWEN2_VL_7B, QWEN3_VL_30B_A3B], ids=["Qwen2-VL-7B-Instruct", "Qwen3-VL-30B-A3B-Instruct"])
def test_real_qwen_vl_configs_equal_transformers(cfg):
    p = count_params(parse_config(cfg))
    assert p.total == hf_param_count(cfg) and p.vision > 0


@pytest.mark.parametrize("cfg", [LLAMA_32_11B_VISION, WRAPPERS["mllama"]], ids=["Llama-3.2-11B-Vision", "tiny"])
def test_mllama_cross_attention_layers_cache_image_tokens(cfg):
    """The cross-attention layers count in params and weights, cache K/V per image (not per text token), and
    a text-only step skips them: the per-token KV and the decoder are the self-attention layers'."""
    from planner.analysis.analyze import to_dict

    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == hf_param_count(cfg)
    text, vision = cfg["text_config"], cfg["vision_config"]
    cross = text["cross_attention_layers"]
    assert spec.num_layers == text["num_hidden_layers"] - len(cross)
    kv, hd = text["num_key_value_heads"], text["hidden_size"] // text["num_attention_heads"]
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == spec.num_layers * 2 * kv * hd * 2
    image_tokens = vision["max_num_tiles"] * ((vision["image_size"] // vision["patch_size"]) ** 2 + 1)
    assert a.kv.cross_bytes_per_image == len(cross) * 2 * kv * hd * image_tokens * 2
    d = to_dict(a)["kv_cache"]["cross_attention"]
    assert (d["layers"], d["image_tokens_per_image"], d["bytes_per_image"]) == (cross, image_tokens,
                                                                               a.kv.cross_bytes_per_image)
    assert a.weights_bytes == 2 * p.total and p.cross_attention > 0


def test_multimodal_wrapper_default_vision_towers():
    """Without a vision_config the wrapper's own default tower is built (LLaVA: CLIP-L/14-336, Mistral 3:
    Pixtral 14×14 patches)."""
    for cfg in ({"model_type": "llava", "text_config": _TEXT},
                {"model_type": "mistral3", "text_config": dict(_TEXT, model_type="mistral"),
                 "tie_word_embeddings": True}):  # the flag set (left out, text_config's decides)
        assert count_params(parse_config(cfg)).total == hf_param_count(cfg)


def test_unknown_vision_tower_is_refused():
    from planner.analysis.errors import UnsupportedModelError

    cfg = {"model_type": "llava", "text_config": _TEXT, "vision_config": {"model_type": "mystery_vit"}}
    with pytest.raises(UnsupportedModelError, match="mystery_vit"):
        parse_config(cfg)


def test_promoted_plain_decoders_are_known_families_with_their_layouts():
    """The Traits rows: no generic caveat; OLMo-1's norms weightless (eps 1e-5); Apertus' norms under its own names
    and two xIELU scalars per MLP; GLM-4-0414's four norms; HyperCLOVAX's post norms by use_post_norm; the pruned
    head of Apertus 1.5 (logits output_vocab_size wide, the embedding vocab_size rows)."""
    for name in ("arcee", "apertus", "olmo", "glm", "glm4", "seed_oss", "hyperclovax", "ernie4_5", "helium",
                 "granitemoe", "granitemoeshared", "exaone", "internlm3", "vaultgemma", "cwm", "ministral3",
                 "nemotron"):
        spec = parse_config(CASES[name])
        assert not spec.generic and not any("not a known family" in c for c in spec.caveats), name
    olmo = parse_config(CASES["olmo"])
    assert olmo.norm_eps == 1e-5 and olmo.numerics.clip_qkv == 8.0
    assert not [t for t in olmo.tensors() if t.kind == "norm"]
    apertus = parse_config(CASES["apertus"]).layer_tensors(0)
    assert [t.name.split(".", 3)[3] for t in apertus if t.kind in ("norm", "other")] == [
        "attention_layernorm.weight", "feedforward_layernorm.weight", "self_attn.q_norm.weight",
        "self_attn.k_norm.weight", "mlp.act_fn.alpha_p", "mlp.act_fn.alpha_n"]
    assert [p.name for p in parse_config(CASES["glm4"]).layers[0].norms] == [
        "input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"]
    assert len(parse_config(CASES["hyperclovax"]).layers[0].norms) == 4
    assert len(parse_config(CASES["hyperclovax-no-post-norm"]).layers[0].norms) == 2
    pruned = parse_config(CASES["apertus1p5_text-pruned-head"])
    assert (pruned.vocab_size, pruned.embedding_tensors()[0].shape[0], pruned.lm_head_tensors()[0].shape) == \
        (320, 512, (320, 128))


def test_promoted_decoders_refuse_what_transformers_cannot_build():
    """Helium's o_proj is hidden x hidden (heads x head_dim must equal hidden_size); a pruned lm_head cannot be
    tied to the wider embedding."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match="o_proj is hidden_size wide"):
        parse_config(dict(CASES["helium"], head_dim=32))
    with pytest.raises(ConfigError, match="output_vocab_size"):
        parse_config(dict(CASES["apertus1p5_text-pruned-head"], tie_word_embeddings=True))


def test_phimoe_routes_exactly_two_experts_and_its_lm_head_bias_is_untied():
    """transformers' SparseMixer picks two experts whatever num_experts_per_tok says, and a tied lm_head
    would drop lm_head_bias: both refused with one error rather than counted wrong."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        parse_config(dict(CASES["phimoe"], num_experts_per_tok=3))
    with pytest.raises(ConfigError, match="lm_head_bias"):
        parse_config(dict(CASES["phimoe"], lm_head_bias=True, tie_word_embeddings=True))


@pytest.mark.parametrize("name", ["Qwen3.5-27B", "Qwen3.5-35B-A3B"])
def test_qwen3_5_published_wrappers_count_the_whole_checkpoint(name):
    """The published Qwen3.5 configs (tests/data): the whole Qwen3_5(Moe)ForConditionalGeneration, the
    tower apart; transformers' causal-LM class (which drops the tower) is the text part."""
    from tests.test_hybrid import QWEN35_REAL

    cfg = QWEN35_REAL[name]
    p = count_params(parse_config(cfg))
    assert p.total == hf_param_count(cfg)
    assert p.total - p.vision == count_params(parse_config(cfg["text_config"])).total


_GLM4V_TEXT = dict(_TEXT, model_type="glm4v_text", partial_rotary_factor=0.5,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]})
_GLM4V_MOE_TEXT = dict(_TEXT, model_type="glm4v_moe_text", head_dim=32, moe_intermediate_size=64, n_routed_experts=8,
                       n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, use_qk_norm=True)
_OMNI_MOE_TEXT = dict(_TEXT, model_type="qwen3_omni_moe_text", head_dim=32, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=64, mlp_only_layers=[0])

_GLM4V_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "out_hidden_size": 64,
                 "patch_size": 4, "image_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2}
WRAPPERS.update({
    # GLM-4.1V: q/k/v biases always, sandwich norms; the text flag ties too (Glm4vConfig forwards it)
    "glm4v": {"model_type": "glm4v", "text_config": _GLM4V_TEXT, "vision_config": _GLM4V_VISION},
    "glm4v-text-tied-qkv-bias": {"model_type": "glm4v", "text_config": dict(_GLM4V_TEXT, tie_word_embeddings=True),
                                 "vision_config": dict(_GLM4V_VISION, attention_bias=True, spatial_merge_size=1)},
    "glm46v-text-tied-ignored": {"model_type": "glm46v", "text_config": dict(_GLM4V_TEXT, tie_word_embeddings=True),
                                 "vision_config": dict(_GLM4V_VISION, model_type="glm4v_vision")},
    "glmga-wrapper-tied": {"model_type": "glmga", "text_config": _GLM4V_TEXT, "tie_word_embeddings": True,
                           "vision_config": dict(_GLM4V_VISION, model_type="glm4v_vision")},
    # GLM-4.5V: use_qk_norm is not read (no q/k norms), attention_bias true by default
    "glm4v_moe": {"model_type": "glm4v_moe", "text_config": _GLM4V_MOE_TEXT, "vision_config": _GLM4V_VISION},
    "glm4v_moe-no-bias-tied": {"model_type": "glm4v_moe", "tie_word_embeddings": True, "vision_config": _GLM4V_VISION,
                               "text_config": dict(_GLM4V_MOE_TEXT, attention_bias=False, n_group=2, topk_group=1)},
    # MiniMax-M3 VL: Conv3d patches, CLIP layers without position embeddings, a per-patch then merging projector;
    # tied when the wrapper's or the text_config's flag is set
    "minimax_m3_vl": {"model_type": "minimax_m3_vl", "text_config": CASES["minimax_m3_vl_text-sparse"],
                      "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                                        "num_attention_heads": 4, "patch_size": 4}, "projector_hidden_size": 40},
    "minimax_m3_vl-text-tied-merge3": {"model_type": "minimax_m3_vl",
                                       "text_config": dict(CASES["minimax_m3_vl_text"], tie_word_embeddings=True),
                                       "vision_config": {"hidden_size": 24, "intermediate_size": 40,
                                                         "num_hidden_layers": 1, "num_attention_heads": 2,
                                                         "patch_size": 2, "temporal_patch_size": 1,
                                                         "spatial_merge_size": 3}},
    # dots3-note: a MoE vision tower (experts per block: per_layer_config, else the legacy pyramid_num_routed) and an
    # audio encoder (conv stem, RoPE layers, adapter); legacy aliases (embed_dim, num_heads, use_bias, whisper_config,
    # whisper_adapter_in_dim, adapter_output_size) in the first
    "dots3_note": {"model_type": "dots3_note", "text_config": CASES["dots3_note_text-per_layer_config"],
                   "vision_config": {"embed_dim": 64, "num_heads": 4, "use_bias": True, "adapter_in_dim": 64,
                                     "num_hidden_layers": 3, "pyramid_num_routed": [-1, 4, 6], "intermediate_size": 96,
                                     "moe_intermediate_size": 32, "patch_size": 4, "adapter_out_dim": 128},
                   "audio_config": {"whisper_config": {"d_model": 64, "encoder_attention_heads": 4, "encoder_layers": 2,
                                                       "encoder_ffn_dim": 80, "num_mel_bins": 40},
                                    "whisper_adapter_in_dim": 64, "adapter_output_size": 128,
                                    "downsample_hidden_size": 24, "attention_bias": False}},
    "dots3_note-experts-per-layer": {
        "model_type": "dots3_note", "text_config": CASES["dots3_note_text-no-dsa-freq"],
        "vision_config": {"hidden_size": 64, "num_attention_heads": 4, "adapter_in_dim": 64, "num_hidden_layers": 3,
                          "mlp_layer_types": ["dense", "sparse", "sparse"], "per_layer_config": {"2": {"num_local_experts": 3}},
                          "num_local_experts": 5, "num_experts_per_tok": 2, "intermediate_size": 96,
                          "moe_intermediate_size": 32, "patch_size": 4, "adapter_out_dim": 128, "spatial_merge_size": 3,
                          "adapter_merge_size": 3},
        "audio_config": {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1, "intermediate_size": 80,
                         "adapter_input_size": 64, "adapter_out_dim": 128, "feature_size": 30,
                         "downsample_hidden_size": 16}},
})


# Fuyu: Persimmon's language model and a biased patch Linear (patch_size² x num_channels -> hidden), no tower
WRAPPERS.update({
    "fuyu": {"model_type": "fuyu", "text_config": _PERSIMMON_TINY, "patch_size": 5, "num_channels": 2},
})


# Aria: an Idefics3 vision tower (SigLIP's blocks, (image_size // patch_size)^2 positions, no head) and AriaProjector
# (learned queries as many as the largest projector_patch_to_query_dict value, a cross-attention with an
# nn.MultiheadAttention inside, LayerNorms, a bias-free MLP to the text hidden size); the second row: the default
# tower (Idefics3VisionConfig's) and query table
_ARIA_TEXT = {"model_type": "aria_text", "hidden_size": 64, "intermediate_size": 48, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "moe_num_experts": 4,
              "moe_topk": 2, "moe_num_shared_experts": 2}
WRAPPERS.update({
    "aria": {"model_type": "aria", "text_config": _ARIA_TEXT, "projector_patch_to_query_dict": {"16": 6, "4": 10},
             "vision_config": {"model_type": "idefics3_vision", "hidden_size": 32, "intermediate_size": 48,
                               "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 36, "patch_size": 8}},
    "aria-default-tower": {"model_type": "aria", "text_config": dict(_ARIA_TEXT, hidden_size=96)},
})


# ERNIE-4.5-VL: ERNIE 4.5 with modality-isolated experts (text and vision experts, each with a router and its
# e_score_correction_bias parameter, shared experts of the text width), its ViT (Linear patch embedding, fused qkv) and
# the resampler (spatial / temporal MLPs, mlp, after_norm); the wrapper's tie_word_embeddings alone decides tying
_ERNIE_VL_TEXT = {"model_type": "ernie4_5_vl_moe_text", "hidden_size": 64, "intermediate_size": 96,
                  "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
                  "moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": [32, 16], "moe_num_shared_experts": 1,
                  "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 4]}}
_ERNIE_VL_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "patch_size": 4}
WRAPPERS.update({
    "ernie4_5_vl_moe": {"model_type": "ernie4_5_vl_moe", "text_config": _ERNIE_VL_TEXT,
                        "vision_config": _ERNIE_VL_VISION},
    # biased projections, layer types given (two dense), untied, no shared experts; attribute_map names; merges 3 / 1
    "ernie4_5_vl_moe-bias-types-untied": {
        "model_type": "ernie4_5_vl_moe", "tie_word_embeddings": False,
        "text_config": dict({k: v for k, v in _ERNIE_VL_TEXT.items() if k not in ("moe_num_experts", "moe_k")},
                            use_bias=True, mlp_layer_types=["dense", "sparse", "dense"], num_experts=6,
                            num_experts_per_tok=3, moe_num_shared_experts=0, head_dim=8, moe_intermediate_size=[24, 40],
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}),
        "vision_config": {"num_hidden_layers": 1, "num_attention_heads": 4, "hidden_size": 32, "intermediate_size": 48,
                          "patch_size": 4, "in_channels": 2, "spatial_merge_size": 3, "temporal_merge_size": 1}},
})


# Qwen2.5-Omni's thinker: Qwen2.5-VL's tower with split q / k / v and a Whisper-style audio encoder (convs, k_proj
# bias-free, audio_bos_eos_token, ln_post, proj to output_dim); untied unless the wrapper says so (its text class
# default is tied); the audio config's attribute_map names in the second
_OMNI25_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "out_hidden_size": 128,
                  "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2}
WRAPPERS.update({
    "qwen2_5_omni_thinker": {"model_type": "qwen2_5_omni_thinker",
                             "text_config": dict(_TEXT, model_type="qwen2_5_omni_text"), "vision_config": _OMNI25_VISION,
                             "audio_config": {"num_mel_bins": 16, "encoder_layers": 2, "encoder_attention_heads": 2,
                                              "encoder_ffn_dim": 48, "d_model": 32, "output_dim": 128}},
    "qwen2_5_omni_thinker-aliases-tied": {
        "model_type": "qwen2_5_omni_thinker", "tie_word_embeddings": True,
        "text_config": dict(_TEXT, model_type="qwen2_5_omni_text", tie_word_embeddings=False),
        "vision_config": dict(_OMNI25_VISION, spatial_merge_size=1, in_channels=2),
        "audio_config": {"num_mel_bins": 8, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 40,
                         "hidden_size": 24, "output_dim": 96}},
})


# MiniCPM-V 4.6 / 4.7 and MiniCPM-o OCR: a SigLIP tower (no head) with a window-attention merger (vit_merger), then
# merger_times DownsampleMLPs (4 x hidden, the last to the text hidden size); the wrapper's flag ties
_MINICPMV_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                    "image_size": 32, "patch_size": 8}
WRAPPERS.update({
    "minicpmv4_6": {"model_type": "minicpmv4_6", "text_config": _QWEN35_TEXT, "vision_config": _MINICPMV_VISION},
    "minicpmv4_6-qwen3-merger2-window3x1": {
        "model_type": "minicpmv4_6", "merger_times": 2, "tie_word_embeddings": True,
        "text_config": dict(_TEXT, model_type="qwen3", head_dim=32),
        "vision_config": dict(_MINICPMV_VISION, window_kernel_size=[3, 1], num_channels=1)},
    "minicpmv4_7": {"model_type": "minicpmv4_7", "text_config": _QWEN35_TEXT, "vision_config": _MINICPMV_VISION},
    "minicpm_ocr": {"model_type": "minicpm_ocr", "text_config": _QWEN35_TEXT,
                    "vision_config": dict(_MINICPMV_VISION, image_size=48)},
})


# VideoLLaMA3: SigLIP layers without positions or head, a post LayerNorm and a two-Linear readout; tied when either flag
# is set. Qianfan-OCR: InternVL's InternViT (layers under layers.N, q/k/v biased by default) and pixel-shuffle projector;
# the wrapper's flag ties
_VL3_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
               "patch_size": 8}
_QIANFAN_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "image_size": 32, "patch_size": 8}
WRAPPERS.update({
    "video_llama_3": {"model_type": "video_llama_3", "text_config": dict(_TEXT, model_type="qwen2"),
                      "vision_config": _VL3_VISION},
    "video_llama_3-text-tied-channels1": {
        "model_type": "video_llama_3", "text_config": dict(_TEXT, model_type="qwen2", tie_word_embeddings=True),
        "vision_config": dict(_VL3_VISION, num_channels=1, patch_size=4)},
    "qianfan_ocr": {"model_type": "qianfan_ocr", "text_config": dict(_TEXT, model_type="qwen3", head_dim=32),
                    "vision_config": _QIANFAN_VISION},
    "qianfan_ocr-rms-qknorm-nobias-pooled-ratio4": {
        "model_type": "qianfan_ocr", "downsample_ratio": 0.25, "tie_word_embeddings": True,
        "text_config": dict(_TEXT, model_type="qwen3", head_dim=32),
        "vision_config": dict(_QIANFAN_VISION, norm_type="rms_norm", use_qk_norm=True, attention_bias=False,
                              use_mean_pooling=False, use_mask_token=True, image_size=[32, 48], patch_size=[8, 16])},
})


# Idefics2 / Idefics3 / SmolVLM / Granite-Docling: the NaViT SigLIP tower ((image_size // patch_size)^2 positions:
# 36 // 8 floors) and their connectors: Idefics2's gated MLP + GQA perceiver resampler (at the text hidden size even
# when perceiver_config says otherwise), Idefics3's / SmolVLM's pixel-shuffle Linear, Granite-Docling's coarse / fine
# DeepStack paths and density router; "-default-*": the class defaults of the parts left out
_IDEFICS_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "image_size": 36, "patch_size": 8}
_GRANITE_DOCLING_TEXT = {"model_type": "granite_docling_text", "hidden_size": 64, "intermediate_size": 96,
                         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
                         "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
_GRANITE_DOCLING_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4,
                           "num_attention_heads": 2, "image_size": 64, "patch_size": 8, "out_hidden_size": 64,
                           "scale_factor": 4, "deepstack_visual_indexes": [0, 2]}
WRAPPERS.update({
    "idefics2": {"model_type": "idefics2", "text_config": dict(_TEXT, model_type="mistral"),
                 "vision_config": _IDEFICS_VISION,
                 "perceiver_config": {"hidden_size": 96, "resampler_n_latents": 5, "resampler_depth": 2,
                                      "resampler_n_heads": 4, "resampler_head_dim": 12, "num_key_value_heads": 2}},
    "idefics2-default-tower-and-perceiver": {"model_type": "idefics2", "text_config": dict(_TEXT, model_type="mistral")},
    "idefics3": {"model_type": "idefics3", "text_config": _TEXT, "scale_factor": 3,
                 "vision_config": dict(_IDEFICS_VISION, image_size=48)},
    "idefics3-default-tower": {"model_type": "idefics3", "text_config": _TEXT},
    "smolvlm": {"model_type": "smolvlm", "text_config": dict(_TEXT, tie_word_embeddings=True),
                "vision_config": dict(_IDEFICS_VISION, patch_size=6, num_channels=4)},
    "smolvlm-default-tower": {"model_type": "smolvlm", "text_config": _TEXT},
    "granite_docling": {"model_type": "granite_docling", "text_config": _GRANITE_DOCLING_TEXT,
                        "vision_config": _GRANITE_DOCLING_VISION},
    "granite_docling-coarse-only-default-deepstack": {
        "model_type": "granite_docling", "text_config": _GRANITE_DOCLING_TEXT,
        "vision_config": {k: v for k, v in dict(_GRANITE_DOCLING_VISION, use_fine_route=False,
                                                 num_hidden_layers=11).items() if k != "deepstack_visual_indexes"}},
    "granite_docling-density-router": {"model_type": "granite_docling", "text_config": _GRANITE_DOCLING_TEXT,
                                       "vision_config": _GRANITE_DOCLING_VISION, "density_router_hidden_size": 24},
})


# InternVL (transformers' HF format): InternViT (cls token, learned positions, q/k/v biased by attention_bias, a biased
# projection_layer, optional whole-width q/k RMSNorms, LayerNorm or RMSNorm blocks, layer scales lambda_1 / lambda_2, a
# final LayerNorm only without mean pooling) and the pixel-shuffle projector (LayerNorm over hidden x int(1 / ratio)^2,
# two biased linears); tied unless the wrapper says otherwise, whatever text_config says
_INTERNVL_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                    "image_size": 32, "patch_size": 8}
WRAPPERS.update({
    "internvl-qwen2": {"model_type": "internvl", "vision_config": _INTERNVL_VISION,
                       "text_config": dict(_TEXT, model_type="qwen2", tie_word_embeddings=False)},
    "internvl-qwen3_moe-untied-6b-style": {
        "model_type": "internvl", "tie_word_embeddings": False, "downsample_ratio": 0.25,
        "text_config": dict(_TEXT, model_type="qwen3_moe", head_dim=32, num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=64),
        "vision_config": dict(_INTERNVL_VISION, norm_type="rms_norm", use_qk_norm=True, attention_bias=True,
                              image_size=[40, 24], patch_size=[8, 4], num_channels=2)},
    "internvl-mask-token-no-positions-final-norm": {
        "model_type": "internvl", "downsample_ratio": 0.3, "text_config": dict(_TEXT, model_type="qwen2"),
        "vision_config": dict(_INTERNVL_VISION, use_mask_token=True, use_absolute_position_embeddings=False,
                              use_mean_pooling=False)},
    "internvl-default-tower": {"model_type": "internvl", "text_config": dict(_TEXT, model_type="qwen2")},
})


# The LLaVA variants: LLaVA's tower (CLIP, or SigLIP without its head) and projector, plus model.image_newline (NeXT,
# NeXT-Video, OneVision); NeXT-Video's conv resampler (spatial_pool_mode "conv"); Video-LLaVA's image and video towers
# from one vision_config (224-pixel CLIP-L by default); ViP-LLaVA's LayerNorm over the concatenated feature layers
# (vision_feature_layers, always-biased linears). The SigLIP row's 36-pixel image in 8-pixel patches is 4 x 4
# positions, not 36² // 8² = 20. Tied: the wrapper's flag alone (NeXT, Video-LLaVA, ViP), or either (NeXT-Video,
# OneVision)
WRAPPERS.update({
    "llava_next": {"model_type": "llava_next", "text_config": _TEXT, "vision_config": _CLIP},
    "llava_next-siglip-2-layers-no-bias": {"model_type": "llava_next", "text_config": dict(_TEXT, model_type="qwen2"),
                                           "vision_config": _SIGLIP, "vision_feature_layer": [-1, -3],
                                           "multimodal_projector_bias": False},
    "llava_next_video": {"model_type": "llava_next_video", "text_config": _TEXT, "vision_config": _CLIP},
    "llava_next_video-conv-resampler": {"model_type": "llava_next_video", "text_config": _TEXT, "vision_config": _CLIP,
                                        "spatial_pool_mode": "conv", "spatial_pool_stride": 3,
                                        "spatial_pool_out_channels": 40},
    "llava_onevision": {"model_type": "llava_onevision", "text_config": dict(_TEXT, model_type="qwen2"),
                        "vision_config": dict(_SIGLIP, image_size=36, patch_size=8)},
    "llava_onevision-siglip-head-llama": {"model_type": "llava_onevision", "text_config": _TEXT,
                                          "vision_config": dict(_SIGLIP, vision_use_head=True)},
    "video_llava": {"model_type": "video_llava", "text_config": _TEXT, "vision_config": _CLIP},
    "video_llava-default-towers": {"model_type": "video_llava", "text_config": _TEXT},
    "vipllava": {"model_type": "vipllava", "text_config": _TEXT, "vision_config": _CLIP,
                 "vision_feature_layers": [-2, -1]},
    "vipllava-default-layers-siglip": {"model_type": "vipllava", "text_config": _TEXT, "vision_config": _SIGLIP},
})


# PaliGemma: SigLIP (head as the vision_config says: a given one without the field gets SiglipVisionConfig's head,
# an absent one PaliGemma's headless 27-layer default) and a biased Linear to projection_dim; Gemma (1) or Gemma 2
# (2) text. ShieldGemma 2: Gemma3ForConditionalGeneration (SigLIP's class-default tower when none is given).
# DeepSeek-VL: SigLIP + a two-Linear aligner; the hybrid adds a SAM ViT (windowed / global rel-pos tables), two
# necks, two stride-2 convs, alpha and a three-Linear aligner; Janus: its SigLIP-shaped tower (q/k norms, bias-free
# q/k/v here), a depth-3 aligner, the VQ-VAE (GroupNorm'd resnets over two levels) and the generation heads.
_PG_TEXT = dict(_TEXT, model_type="gemma", head_dim=32, num_key_value_heads=1)
_PG2_TEXT = dict(_TEXT, model_type="gemma2", head_dim=32, sliding_window=16)
_SAM = {"model_type": "sam_vision_model", "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2,
        "image_size": 32, "patch_size": 8, "window_size": 2, "global_attn_indexes": [1], "output_channels": 16,
        "mlp_dim": 40}
_JANUS_VISION = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 16,
                 "patch_size": 4, "projection_dim": 128, "depth": 3, "use_qk_norm": True, "attention_bias": False,
                 "mlp_ratio": 2.5}
_JANUS_VQ = {"base_channels": 32, "channel_multiplier": [1, 2], "num_res_blocks": 1, "latent_channels": 32,
             "embed_dim": 8, "num_embeddings": 64, "projection_dim": 128, "num_hidden_layers": 3,
             "image_token_embed_dim": 128}
WRAPPERS.update({
    "paligemma": {"model_type": "paligemma", "text_config": _PG_TEXT, "projection_dim": 128,
                  "vision_config": dict(_SIGLIP, vision_use_head=False)},
    "paligemma2-siglip-head-untied": {"model_type": "paligemma", "text_config": _PG2_TEXT, "projection_dim": 128,
                                      "vision_config": _SIGLIP, "tie_word_embeddings": False},
    "paligemma-default-tower": {"model_type": "paligemma", "text_config": _PG_TEXT, "projection_dim": 128},
    "shieldgemma2": {"model_type": "shieldgemma2", "vision_config": _SIGLIP,
                     "text_config": dict(_TEXT, model_type="gemma3_text", head_dim=32, sliding_window=16)},
    "shieldgemma2-default-tower": {"model_type": "shieldgemma2",
                                   "text_config": dict(_TEXT, model_type="gemma3_text", head_dim=32)},
    "deepseek_vl": {"model_type": "deepseek_vl", "text_config": _TEXT, "vision_config": _SIGLIP},
    "deepseek_vl-default-tower": {"model_type": "deepseek_vl", "text_config": _TEXT},
    "deepseek_vl_hybrid": {"model_type": "deepseek_vl_hybrid", "text_config": _TEXT, "vision_config": _SIGLIP,
                           "high_res_vision_config": _SAM},
    "deepseek_vl_hybrid-sam-no-rel-pos-window-0": {
        "model_type": "deepseek_vl_hybrid", "text_config": _TEXT, "vision_config": dict(_SIGLIP, vision_use_head=False),
        "high_res_vision_config": dict(_SAM, use_rel_pos=False, qkv_bias=False, use_abs_pos=False, mlp_dim=None,
                                       mlp_ratio=1.5)},
    "deepseek_vl_hybrid-sam-window-0": {"model_type": "deepseek_vl_hybrid", "text_config": _TEXT,
                                        "vision_config": _SIGLIP, "high_res_vision_config": dict(_SAM, window_size=0)},
    "deepseek_vl_hybrid-default-towers": {"model_type": "deepseek_vl_hybrid", "text_config": _TEXT},
    "janus": {"model_type": "janus", "text_config": _TEXT, "vision_config": _JANUS_VISION, "vq_config": _JANUS_VQ},
    "janus-double-latent-untied": {"model_type": "janus", "text_config": _TEXT, "tie_word_embeddings": False,
                                   "vision_config": dict(_JANUS_VISION, depth=1, use_qk_norm=False),
                                   "vq_config": dict(_JANUS_VQ, double_latent=True, num_res_blocks=2,
                                                     channel_multiplier=[1, 1, 2], num_hidden_layers=1)},
    "janus-default-towers": {"model_type": "janus", "text_config": _TEXT},
})


# LFM2-VL: a SigLIP2 NaFlex tower (Linear patch embedding, num_patches positions, pooling head by default) or any
# tower AutoModel builds, a pixel-unshuffle projector (LayerNorm, biases optional); LFM3-VL: its conv / attention
# encoder (layer_types, GQA, q/k norms) and merging projector; Command A Vision and Aya Vision: SigLIP towers and
# a pixel-shuffle SwiGLU projector (linear_2 reads half of alignment_intermediate_size; Aya: LayerNorm first,
# alignment_intermediate_size absent -> the text hidden size); Command A Vision's default 27-layer tower
_LFM2_VL_TEXT = {"model_type": "lfm2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
                 "layer_types": ["conv", "full_attention", "conv"]}
_LFM3_VL_TEXT = {"model_type": "lfm3", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300,
                 "pad_token_id": 0, "sliding_window": 4}
_SIGLIP2 = {"model_type": "siglip2_vision_model", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_patches": 16, "patch_size": 4}
_LFM3_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4,
                "num_key_value_heads": 2, "patch_size": 4}
WRAPPERS.update({
    "lfm2_vl": {"model_type": "lfm2_vl", "text_config": _LFM2_VL_TEXT, "vision_config": _SIGLIP2,
                "projector_hidden_size": 48},
    "lfm2_vl-siglip-plain-ds3": {"model_type": "lfm2_vl", "text_config": _LFM2_VL_TEXT,
                                 "vision_config": dict(_SIGLIP, vision_use_head=False), "downsample_factor": 3,
                                 "projector_use_layernorm": False, "projector_bias": False},
    "lfm2_vl-tie_embedding-untied": {"model_type": "lfm2_vl", "text_config": _LFM2_VL_TEXT, "tie_embedding": False,
                                     "tie_word_embeddings": True, "vision_config": dict(_SIGLIP2, vision_use_head=False)},
    "lfm3_vl": {"model_type": "lfm3_vl", "text_config": _LFM3_VL_TEXT, "vision_config": _LFM3_VISION,
                "projector_hidden_size": 40},
    "lfm3_vl-layer_types-no-bias": {"model_type": "lfm3_vl", "text_config": _LFM3_VL_TEXT, "projector_bias": False,
                                    "vision_config": dict(_LFM3_VISION, num_hidden_layers=3, spatial_merge_size=3,
                                                          layer_types=["full_attention", "full_attention", "conv"],
                                                          conv_kernel_size=5, temporal_patch_size=1, in_channels=2)},
    "cohere2_vision": {"model_type": "cohere2_vision", "text_config": CASES["cohere2"], "vision_config": _SIGLIP,
                       "alignment_intermediate_size": 50},
    "cohere2_vision-default-tower-ds1": {"model_type": "cohere2_vision", "text_config": CASES["cohere2"],
                                         "downsample_factor": 1, "alignment_intermediate_size": 33},
    "aya_vision": {"model_type": "aya_vision", "text_config": CASES["cohere2"],
                   "vision_config": dict(_SIGLIP, vision_use_head=False)},
    "aya_vision-alignment-ds3-head": {"model_type": "aya_vision", "text_config": CASES["cohere2"],
                                      "vision_config": _SIGLIP, "downsample_factor": 3,
                                      "alignment_intermediate_size": 71},
})


# Molmo2: a Qwen3-shaped LM (embedding vocab + additional_vocab_size rows, lm_head vocab, never tied), its ViT
# (learned positions, Linear patches, GQA blocks) and adapter (a pooling attention over the concatenated feature
# layers, a SwiGLU to text_hidden_size); the second row: q/k norms over all heads, post-norm, biases, and the hub's
# remote-code keys (vit_config cut to the deepest vit_layers entry, image_patch_size, image_num_pos)
_MOLMO2_TEXT = {"model_type": "molmo2_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 16, "intermediate_size": 96, "vocab_size": 300, "additional_vocab_size": 12}
_MOLMO2_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 8, "patch_size": 4, "image_size": [16, 24]}
_MOLMO2_ADAPTER = {"hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
                   "intermediate_size": 40, "text_hidden_size": 64, "vision_feature_layer": [-1, 1]}
WRAPPERS.update({
    "molmo2": {"model_type": "molmo2", "text_config": _MOLMO2_TEXT, "vision_config": _MOLMO2_VISION,
               "adapter_config": _MOLMO2_ADAPTER},
    "molmo2-olmo-norm_after-legacy-keys": {
        "model_type": "molmo2", "text_config": dict(_MOLMO2_TEXT, qk_norm_type="olmo", norm_after=True,
                                                    attention_bias=True, additional_vocab_size=0),
        "vit_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 5, "num_attention_heads": 4,
                       "num_key_value_heads": 4, "head_dim": 8, "image_patch_size": 2, "image_num_pos": 20,
                       "attention_bias": False},
        "adapter_config": dict(_MOLMO2_ADAPTER, vision_feature_layer=None, vit_layers=[-3, 0, 1], mlp_bias=True,
                               text_hidden_size=48)},
})


def test_aya_vision_default_tower_is_a_config_error():
    """AyaVisionConfig's default tower (14 heads over 1152) does not build in transformers either: a ConfigError
    naming the field, never a traceback."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config({"model_type": "aya_vision", "text_config": CASES["cohere2"]})


# ---- Wrappers whose towers analysis/vision_wrappers.py counts: Llama 4, Kimi K2.5, Cosmos3-Edge / -Omni, EXAONE 4.5,
# HyperCLOVAX-Vision V2, Nemotron-3 Nano Omni (RADIO tower and Parakeet audio encoder). Before, their towers were left
# out (Llama 4: 0.9958 of transformers' default checkpoint, EXAONE 4.5 0.78, HyperCLOVAX 0.68, Nemotron omni 0.74,
# Cosmos3-Omni 0.955) or miscounted (Cosmos3-Edge's text MLP read as gated: 1.016; Kimi K2.5's lm_head untied though
# the wrapper ties it: 1.0007)
_LLAMA4_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                  "image_size": 28, "patch_size": 7, "num_channels": 2, "projector_input_dim": 40,
                  "projector_output_dim": 24, "vision_output_dim": 56}
_KIMI_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                "patch_size": 4, "pos_emb_height": 8, "pos_emb_width": 6, "merge_kernel_size": [2, 3]}
_COSMOS_EDGE_TEXT = {"model_type": "cosmos3_edge_text", "hidden_size": 128, "intermediate_size": 200,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                     "vocab_size": 512, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                                            "mrope_section": [6, 5, 5]}}
_COSMOS_EDGE_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "patch_size": 4, "num_patches": 16, "spatial_merge_size": 2}
_RADIO = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "patch_size": 4, "max_img_size": 32,
          "num_cls_tokens": 2, "num_registers": 1, "mlp_ratio": 3.0, "video_temporal_patch_size": 2}
_NEMOTRON_H_TEXT = dict(vocab_size=128, hidden_size=64, model_type="nemotron_h", hybrid_override_pattern="M-M*-",
                        num_hidden_layers=5, mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=8,
                        conv_kernel=4, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16)
_PARAKEET = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
             "subsampling_conv_channels": 8, "num_mel_bins": 24, "conv_kernel_size": 5, "projection_hidden_size": 40,
             "projection_bias": True}
WRAPPERS.update({
    "llama4": {"model_type": "llama4", "text_config": CASES["llama4_text"], "vision_config": _LLAMA4_VISION},
    "llama4-default-tower": {"model_type": "llama4", "text_config": CASES["llama4_text"], "vision_config": {}},
    "kimi_k25": {"model_type": "kimi_k25", "text_config": CASES["deepseek_v3"], "vision_config": _KIMI_VISION,
                 "projection_hidden_size": 32},
    "cosmos3_edge": {"model_type": "cosmos3_edge", "text_config": _COSMOS_EDGE_TEXT, "vision_config": _COSMOS_EDGE_VISION,
                     "projector_hidden_size": 96},
    # biased MLP; both tie flags set: transformers never ties (_tied_weights_keys = {})
    "cosmos3_edge-mlp-bias-flags-tied": {"model_type": "cosmos3_edge", "tie_word_embeddings": True,
                                         "text_config": dict(_COSMOS_EDGE_TEXT, mlp_bias=True, attention_bias=True,
                                                             tie_word_embeddings=True),
                                         "vision_config": dict(_COSMOS_EDGE_VISION, spatial_merge_size=1)},
    "cosmos3_omni": {"model_type": "cosmos3_omni", "text_config": _QWEN3_TEXT,
                     "vision_config": dict(_QWEN3_VISION, model_type="qwen3_vl_vision")},
    "exaone4_5": {"model_type": "exaone4_5", "text_config": CASES["exaone4"],
                  "vision_config": dict(_QWEN25_VISION, num_key_value_heads=1)},
    "hyperclovax_vision_v2": {"model_type": "hyperclovax_vision_v2", "text_config": CASES["hyperclovax"],
                              "vision_config": dict(_QWEN25_VISION, model_type="qwen2_5_vl")},
    "nemotron_h_omni": {"model_type": "nemotron_h_omni", "text_config": _NEMOTRON_H_TEXT, "vision_config": _RADIO,
                        "vision_hidden_size": 32, "projector_hidden_size": 48},
    # SwiGLU RADIO without q/k/v biases, an MTP layer (the vision_final_layernorm), downsample 1/4, the audio encoder
    # (Parakeet: attention_bias false unless given, as the wrapper's __post_init__ sets; 3 subsampling stages)
    "nemotron_h_omni-swiglu-mtp-audio": {
        "model_type": "nemotron_h_omni", "text_config": dict(_NEMOTRON_H_TEXT, num_nextn_predict_layers=1),
        "vision_config": dict(_RADIO, use_swiglu_ffn=True, qkv_bias=False), "vision_hidden_size": 32,
        "projector_hidden_size": 48, "downsample_ratio": 0.25, "audio_config": _PARAKEET},
    "nemotron_h_omni-audio-biases": {
        "model_type": "nemotron_h_omni", "text_config": _NEMOTRON_H_TEXT, "vision_config": _RADIO,
        "vision_hidden_size": 32, "projector_hidden_size": 48,
        "audio_config": dict(_PARAKEET, attention_bias=True, convolution_bias=False, subsampling_factor=4, head_dim=8,
                             projection_bias=False)},
    # Apertus 1.5: a VQGAN image tokenizer (attention at resolution 8 only, a nin_shortcut where the width doubles)
    # and a WavTokenizer encoder (weight-normed convs, LSTM); no projector. The second row: GroupNorm'd convs, no
    # residual shortcut convs, two LSTM layers, pruned lm_head tied by the wrapper's flag
    "apertus1p5": {"model_type": "apertus1p5", "text_config": CASES["apertus1p5_text"], "image_token_offset": 200,
                   "audio_token_offset": 264,
                   "vision_config": {"base_channels": 32, "channel_multiplier": [1, 2], "num_res_blocks": 2,
                                     "attn_resolutions": [8], "resolution": 16, "latent_channels": 8, "embed_dim": 12,
                                     "codebook_size": 64},
                   "audio_config": {"model_type": "wavtokenizer_encoder", "num_filters": 4, "upsampling_ratios": [2, 3],
                                    "num_residual_layers": 2, "hidden_size": 16, "codebook_dim": 16,
                                    "codebook_size": 32, "num_lstm_layers": 1}},
    "apertus1p5-groupnorm-no-shortcut": {
        "model_type": "apertus1p5", "text_config": CASES["apertus1p5_text"], "image_token_offset": 200,
        "audio_token_offset": 232,
        "vision_config": {"base_channels": 64, "channel_multiplier": [1, 1, 2], "num_res_blocks": 1,
                          "attn_resolutions": [32, 8], "resolution": 32, "latent_channels": 4, "embed_dim": 4,
                          "codebook_size": 32, "in_channels": 1},
        "audio_config": {"model_type": "wavtokenizer_encoder", "num_filters": 8, "upsampling_ratios": [4],
                         "norm_type": "time_group_norm", "use_conv_shortcut": False, "compress": 4,
                         "hidden_size": 16, "codebook_dim": 16, "codebook_size": 32, "audio_channels": 2,
                         "kernel_size": 5, "last_kernel_size": 3}},
})


# ---- OCR wrappers and BLIP-2 / InstructBLIP: towers, projectors and Q-Formers counted (analysis/families/ocr_vl.py)
_PADDLE_TEXT = dict(_TEXT, model_type="paddleocr_vl_text", head_dim=48, use_bias=True)
_PADDLE_VISION = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "image_size": 60, "patch_size": 8, "spatial_merge_size": 3}
_OPT_TEXT = {"model_type": "opt", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "ffn_dim": 96, "max_position_embeddings": 64, "word_embed_proj_dim": 32,
             "do_layer_norm_before": False}
_BLIP_VISION = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                "image_size": 36, "patch_size": 8}
_QFORMER = {"hidden_size": 48, "num_hidden_layers": 5, "num_attention_heads": 4, "intermediate_size": 80,
            "cross_attention_frequency": 2, "vocab_size": 100, "max_position_embeddings": 40}
WRAPPERS.update({
    # PaddleOCR-VL: SigLIP (no head) + LayerNorm / Linear(vh·m²) / Linear projector; ERNIE-4.5 block, biased
    "paddleocr_vl": {"model_type": "paddleocr_vl", "text_config": _PADDLE_TEXT, "vision_config": _PADDLE_VISION},
    # LightOnOCR: Pixtral tower + Mistral 3's merger (the wrapper's spatial_merge_size), bias-free linears; Qwen3
    "lighton_ocr": {"model_type": "lighton_ocr", "text_config": dict(_TEXT, model_type="qwen3", head_dim=32),
                    "spatial_merge_size": 3,
                    "vision_config": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 96,
                                      "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 64,
                                      "patch_size": 8}},
    # no vision_config: LightOnOcrConfig's own default tower (Mistral 3's, not PixtralVisionConfig's defaults)
    "lighton_ocr-default-tower": {"model_type": "lighton_ocr", "text_config": dict(_TEXT, model_type="qwen3",
                                                                                    head_dim=32)},
    # GLM-OCR: q/k norms, biased proj and MLP (attention_bias), merger out_hidden × in_channels wide; and unbiased
    "glm_ocr": {"model_type": "glm_ocr", "text_config": dict(_GLM4V_TEXT, model_type="glm_ocr_text", head_dim=16),
                "vision_config": {"depth": 2, "hidden_size": 64, "intermediate_size": 96, "num_heads": 4,
                                  "out_hidden_size": 48, "patch_size": 4, "spatial_merge_size": 2,
                                  "temporal_patch_size": 2, "in_channels": 2}},
    "glm_ocr-unbiased-tied": {"model_type": "glm_ocr", "tie_word_embeddings": True,
                              "text_config": dict(_GLM4V_TEXT, model_type="glm_ocr_text", head_dim=16),
                              "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 80, "num_heads": 2,
                                                "out_hidden_size": 32, "attention_bias": False}},
    # GOT-OCR 2.0: SAM ViT (windowed and global relative positions, neck) + two stride-2 convs + Linear; Qwen2
    "got_ocr2": {"model_type": "got_ocr2", "text_config": dict(_TEXT, model_type="qwen2"),
                 "vision_config": {"hidden_size": 64, "output_channels": 16, "num_hidden_layers": 3,
                                   "num_attention_heads": 4, "image_size": 64, "patch_size": 8, "window_size": 3,
                                   "global_attn_indexes": [1], "mlp_dim": 96}},
    "got_ocr2-no-rel-pos-no-qkv-bias": {"model_type": "got_ocr2", "text_config": dict(_TEXT, model_type="qwen2"),
                                        "vision_config": {"hidden_size": 64, "output_channels": 16,
                                                          "num_hidden_layers": 2, "num_attention_heads": 4,
                                                          "image_size": 64, "patch_size": 8, "use_rel_pos": False,
                                                          "qkv_bias": False, "use_abs_pos": False, "mlp_dim": 96}},
    # BLIP-2 (OPT): ViT + Q-Former (cross-attention every 2nd layer) + language_projection; text feed-forward too
    # when use_qformer_text_input; InstructBLIP: Q-Former text embeddings and feed-forward always
    "blip-2": {"model_type": "blip-2", "text_config": _OPT_TEXT, "vision_config": _BLIP_VISION,
               "qformer_config": _QFORMER, "num_query_tokens": 5},
    "blip-2-text-input-no-qkv-bias-freq3": {
        "model_type": "blip-2", "text_config": _OPT_TEXT, "vision_config": dict(_BLIP_VISION, qkv_bias=False),
        "qformer_config": dict(_QFORMER, use_qformer_text_input=True, cross_attention_frequency=3)},
    "instructblip": {"model_type": "instructblip", "text_config": _OPT_TEXT, "vision_config": _BLIP_VISION,
                     "qformer_config": _QFORMER, "num_query_tokens": 5},
})
# InstructBLIP-Video and PP-Chart2Table: InstructBLIP's and GOT-OCR 2.0's models under their own config classes
WRAPPERS.update({
    "instructblipvideo": {"model_type": "instructblipvideo", "text_config": _OPT_TEXT,
                          "vision_config": dict(_BLIP_VISION, qkv_bias=False),
                          "qformer_config": dict(_QFORMER, cross_attention_frequency=3), "num_query_tokens": 4},
    "pp_chart2table": {"model_type": "pp_chart2table", "text_config": dict(_TEXT, model_type="qwen2"),
                       "vision_config": {"hidden_size": 64, "output_channels": 16, "num_hidden_layers": 3,
                                         "num_attention_heads": 4, "image_size": 64, "patch_size": 8,
                                         "window_size": 3, "global_attn_indexes": [1], "mlp_dim": 96}},
})


# InternVL / DeepSeek-VL / Janus: these cases check the wrapper's flag, set as transformers 5 writes it (left out, the
# text_config's decides, as transformers 4.5x tied their -hf checkpoints: tests/test_wrapper_tie_audit.py)
for _cfg in WRAPPERS.values():
    if _cfg["model_type"] in ("internvl", "deepseek_vl", "deepseek_vl_hybrid", "janus"):
        _cfg.setdefault("tie_word_embeddings", True)


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_multimodal_wrapper_counts_the_whole_checkpoint(name):
    """params.total is the full *ForConditionalGeneration model; the vision part is reported apart, in weights
    memory, and the KV cache is the language model's alone."""
    cfg = WRAPPERS[name]
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == hf_param_count(cfg)
    text = parse_config(dict(cfg["text_config"], tie_word_embeddings=spec.tie_word_embeddings))
    assert p.vision > 0 and p.total == count_params(text).total + p.vision + p.audio
    assert (p.audio > 0) == (cfg.get("audio_config") is not None)
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    a, t = analyze(spec, opts), analyze(text, opts)
    assert a.kv.bytes_per_token == t.kv.bytes_per_token
    assert a.weights_bytes == t.weights_bytes + 2 * (p.vision + p.audio)


def _first_wrapper_of_each_type() -> list[str]:
    seen: dict = {}
    for name, cfg in WRAPPERS.items():
        seen.setdefault(cfg["model_type"], name)
    return list(seen.values())


@pytest.mark.parametrize("wrapper_tie", [True, False])
@pytest.mark.parametrize("text_tie", [True, False])
@pytest.mark.parametrize("name", _first_wrapper_of_each_type())
def test_wrapper_lm_head_tying_follows_transformers(name, text_tie, wrapper_tie):
    """Which flag ties lm_head (the wrapper's, the text_config's, or either) differs by family: every wrapper type with
    the two flags disagreeing counts what transformers builds (Gemma 4's was the text_config's: 8,192 params off)."""
    cfg = dict(WRAPPERS[name], tie_word_embeddings=wrapper_tie)
    cfg["text_config"] = dict(cfg["text_config"], tie_word_embeddings=text_tie)
    assert count_params(parse_config(cfg)).total == hf_param_count(cfg)




def test_paddleocr_vl_flat_config_ties_as_transformers_does():
    """PaddleOCR-VL's hub config is flat: PaddleOCRVLConfig builds text_config from the other keys, but
    tie_word_embeddings is its own field, so the text_config keeps its default (true) and the wrapper ties even though
    the hub file says false; its vision_config's model_type 'paddleocr_vl' is renamed to the tower's."""
    cfg = dict({k: v for k, v in _PADDLE_TEXT.items() if k != "model_type"}, model_type="paddleocr_vl",
               tie_word_embeddings=False, use_bias=False, vision_config=dict(_PADDLE_VISION, model_type="paddleocr_vl"))
    spec = parse_config(cfg)
    assert spec.tie_word_embeddings
    assert count_params(spec).total == hf_param_count(cfg)


def test_blip_with_an_encoder_decoder_language_model_is_refused_by_name():
    """BLIP-2 / InstructBLIP Flan-T5 checkpoints build AutoModelForSeq2SeqLM: refused, naming the T5 language model."""
    from planner.analysis.errors import UnsupportedModelError

    for mt in ("blip-2", "instructblip", "instructblipvideo"):
        with pytest.raises(UnsupportedModelError, match=f"{mt} with text_config.model_type 't5' is refused: an encoder"):
            parse_config({"model_type": mt, "text_config": {"model_type": "t5", "d_model": 64}})


# (the Qwen3-Omni thinker, once the one wrapper whose towers were not counted, is counted whole: tests/test_qwen3_omni.py)


def test_glm_v_and_omni_text_models_refuse_a_missing_head_dim_they_cannot_derive():
    """GLM-4.5V's and Qwen3-Omni's text classes default to heads that do not divide hidden_size (96 into 4096,
    28 into 2048: transformers floors a head_dim no published checkpoint has); their real configs give head_dim."""
    from planner.analysis.errors import ConfigError

    for mt in ("glm4v_moe", "qwen3_omni_moe_thinker"):
        with pytest.raises(ConfigError, match="head_dim"):
            parse_config({"model_type": mt, "text_config": {}})


# (the whole Qwen-Omni checkpoints are counted: tests/test_qwen25_omni.py, tests/test_qwen3_omni.py)


def test_opt_projected_embedding_and_post_ln():
    """opt-350m: a 512-wide embedding and LM head with project_in/out, post-LN blocks and no final norm;
    learned positions have max_position_embeddings + 2 rows."""
    spec = parse_config(CASES["opt-350m"])
    assert [t.shape for t in spec.projection_tensors()] == [(1024, 512), (512, 1024)]
    assert spec.embedding_tensors()[0].shape == (50272, 512) and spec.position_embeddings == 2050
    assert spec.final_norm is None
    assert {p.role for p in spec.layers[0].norms} == {"post_mixer_residual", "post_ffn_residual"}
    assert parse_config(CASES["opt-125m"]).projection_tensors() == []


def test_dbrx_active_parameters_equal_transformers():
    """Active: every parameter but the (E - k) / E routed-expert weights a token does not use, counted on
    transformers' model (its experts are the w1 / v1 / w2 matrices)."""
    from tests.oracle import hf_model

    cfg = CASES["dbrx-instruct"]
    model = hf_model(cfg)
    total = sum(p.numel() for p in model.parameters())
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    e, k = cfg["ffn_config"]["moe_num_experts"], cfg["ffn_config"]["moe_top_k"]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (total, total - experts * (e - k) // e)


# ---- Gemma 3n -----------------------------------------------------------------------------------------


def test_gemma3n_e2b_counts_and_kv_by_hand():
    """E2B's language model: 30 layers, the last 10 reading the K/V of layers 18 (sliding) and 19 (full), so
    20 layers cache 2 KV heads x 256; AltUp's 3 extra streams are 6 model-level hidden x hidden projections."""
    spec = parse_config(CASES["gemma3n_text-e2b"])
    assert count_params(spec).total == 4_435_182_688  # transformers' Gemma3nForCausalLM (tied)
    assert [layer.mixer.kv_shared for layer in spec.layers] == [False] * 20 + [True] * 10
    a = analyze(spec, Options(context=4096, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 20 * (2 * 2 * 256 * 2)
    assert a.kv_bytes_per_sequence == 16 * (2 * 2 * 256 * 2) * 512 + 4 * (2 * 2 * 256 * 2) * 4096
    altup = [t for t in spec.input_tensors() if ".altup" in t.name]
    assert len(altup) == 6 and {t.shape for t in altup} == {(2048, 2048)}


def test_gemma3n_wrapper_reads_its_text_config():
    """The gemma3n wrapper's language model (text_config without a model_type, as the hub's may be): read as
    gemma3n_text, its default vision / audio towers added beside it (tests/test_gemma3n_whole.py counts them)."""
    text = {k: v for k, v in CASES["gemma3n_text-tiny"].items() if k != "model_type"}
    spec = parse_config({"model_type": "gemma3n", "text_config": text})
    assert spec.model_type == "gemma3n_text"
    p = count_params(spec)
    tied = dict(CASES["gemma3n_text-tiny"], tie_word_embeddings=True)  # the wrapper's flag (default true) ties lm_head
    assert p.total - p.vision - p.audio == count_params(parse_config(tied)).total
    assert p.vision > 0 and p.audio > 0 and any("encoders are counted" in c for c in spec.caveats)


# ---- MPT --------------------------------------------------------------------------------------------


def test_mpt_block_kv_and_numerics():
    """MPT-7B: multi-head ALiBi attention (no RoPE), K and V of every head cached on every layer; the
    attn_config numerics reach the spec."""
    spec = parse_config(CASES["mpt-7b"])
    m = spec.layers[0].mixer
    assert (m.num_key_value_heads, m.head_dim, m.alibi, m.rotary_dim, m.fused_qkv) == (32, 128, True, 0, True)
    assert spec.tie_word_embeddings and spec.numerics.clip_qkv is None and spec.numerics.alibi_bias_max == 8
    a = analyze(spec, Options(context=2048, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 32 * 2 * 4096 * 2  # 512 KiB per token
    tiny = parse_config(CASES["mpt-tiny-untied-6-heads"])
    assert (tiny.numerics.clip_qkv, tiny.numerics.attention_multiplier, tiny.numerics.alibi_bias_max) == (6.0, 0.2, 6)
    assert not tiny.tie_word_embeddings


@pytest.mark.parametrize("change,field", [
    ({"expansion_ratio": 8}, "expansion_ratio"), ({"no_bias": False}, "no_bias"),
    ({"norm_type": "low_precision_rmsnorm"}, "norm_type"),
    ({"attn_config": {"qk_ln": True}}, "qk_ln"), ({"attn_config": {"alibi": False}}, "alibi"),
    ({"attn_config": {"attn_type": "cross_attention"}}, "attn_type"),  # MQA / GQA: tests/test_family_gaps.py
])
def test_mpt_refuses_what_transformers_does_not_build(change, field):
    """transformers builds one MPT block whatever these fields say: a config that sets another value is a
    checkpoint it cannot load, refused naming the field (never counted as the block it would build)."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=f"'{field}'"):
        parse_config(dict(CASES["mpt-tiny-untied-6-heads"], **change))


# ---- DeepSeek sparse attention (DeepSeek-V3.2, GLM-5) ----------------------------------------------

DSA = ["deepseek_v32", "deepseek_v32-mlp_layer_types-bias", "glm_moe_dsa", "glm_moe_dsa-topk_freq", "hy_v4",
       "hy_v4-types-bias", "axk2", "axk2-legacy-groups-bias"]
# DeepSeek-V3.2's core geometry, as transformers' DeepseekV32Config defaults it (the rest: class defaults)
V32_GEOMETRY = {"model_type": "deepseek_v32", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
                "vocab_size": 129280, "intermediate_size": 18432}


@pytest.mark.parametrize("name", DSA + ["dots3_note_text", "dots3_note_text-per_layer_config",
                                        "dots3_note_text-no-dsa-freq"])
def test_dsa_total_and_active_parameters_equal_transformers(name):
    """Every indexer parameter is active (each token runs its layer's indexer); routed experts count k / E
    (dots3-note: gated MLA, sparse or windowed)."""
    cfg = CASES[name]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), _hf_active(cfg, cfg["num_experts_per_tok"]))


def test_dsa_layers_indexers_and_moe_placement():
    kinds = {n: [layer.kind for layer in parse_config(CASES[n]).layers] for n in DSA}
    assert kinds["deepseek_v32"] == ["dsa", "dsa+moe", "dsa+moe", "dsa+moe"]
    assert kinds["deepseek_v32-mlp_layer_types-bias"] == ["dsa+moe", "dsa", "dsa+moe", "dsa"]
    assert kinds["glm_moe_dsa"] == ["dsa", "dsa(shared)+moe", "dsa+moe", "dsa(shared)+moe"]
    # index_topk_freq 2, offset 2: full where max(i - 1, 0) % 2 == 0 (GlmMoeDsaConfig.__post_init__)
    spec = parse_config(CASES["glm_moe_dsa-topk_freq"])
    assert [layer.mixer.indexer for layer in spec.layers] == [True, True, False, True, False, True]
    # the MTP layer always has its own indexer (vLLM), even after a shared last layer
    mtp = parse_config(dict(CASES["glm_moe_dsa"], num_nextn_predict_layers=1)).mtp_layers
    assert len(mtp) == 1 and mtp[0].mixer.indexer


def test_gated_dsa_layers_tensors_and_numerics():
    """Hy4-preview: HYV4Config's default indexer_types (full on 0 and where (i - 1) % 4 == 0) and mlp_layer_types
    (layer 0 dense); gate_proj, sinks and the comb-free hyper-connections (fn 2n x n·hidden, base 2n, scale 2);
    rotate-half RoPE, one expert group. A.X-K2: q_gate_proj instead of q_b_proj, gated input norms everywhere and
    gated post-attention norms on MoE layers only; MoE where i >= first_k_dense_replace and i % moe_layer_freq == 0;
    interleaved RoPE, ungrouped routing unless n_group is set."""
    kinds = {n: [layer.kind for layer in parse_config(CASES[n]).layers] for n in DSA}
    assert kinds["hy_v4"] == ["dsa", "dsa+moe"] + ["dsa(shared)+moe"] * 3 + ["dsa+moe"]
    assert kinds["hy_v4-types-bias"] == ["dsa+moe", "dsa(shared)", "dsa+moe", "dsa(shared)+moe"]
    assert kinds["axk2"] == ["dsa", "dsa+moe", "dsa+moe", "dsa+moe"]
    assert kinds["axk2-legacy-groups-bias"] == ["dsa", "dsa", "dsa+moe", "dsa", "dsa+moe"]
    hy = parse_config(CASES["hy_v4"])  # hidden 128, 8 heads, v_head_dim 16, hc_mult 3
    shapes = {t.name: t.shape for t in hy.layers[2].tensors("model.layers.2")}
    assert shapes["model.layers.2.self_attn.gate_proj.weight"] == (8 * 16, 128)
    assert shapes["model.layers.2.self_attn.sinks"] == (8,)
    assert shapes["model.layers.2.attn_hc.fn"] == shapes["model.layers.2.ffn_hc.fn"] == (6, 3 * 128)
    assert (shapes["model.layers.2.attn_hc.base"], shapes["model.layers.2.attn_hc.scale"]) == ((6,), (2,))
    assert not any(".indexer." in n for n in shapes)  # a shared layer
    assert [t.shape for t in hy.head_hc] == [(3, 3 * 128), (3,), (1,)]
    assert (hy.numerics.rope_style, hy.numerics.n_group, hy.numerics.routed_scaling_factor) == ("half", 1, 2.827)
    ax = parse_config(CASES["axk2-legacy-groups-bias"])  # q_lora 48, qk_head_dim 24, v_head_dim 24
    names = {t.name: t.shape for t in ax.layers[1].tensors("model.layers.1")}
    assert names["model.layers.1.self_attn.q_gate_proj.weight"] == (8 * (24 + 24), 2 * 48)
    assert not any("q_b_proj" in n for n in names)
    assert names["model.layers.1.input_layernorm.mlp.fc1.weight"] == (16, 128)  # gated_norm_rank's default
    assert "model.layers.1.post_attention_layernorm.weight" in names  # dense layer: a plain RMSNorm
    moe = {t.name for t in ax.layers[2].tensors("model.layers.2")}
    assert {"model.layers.2.post_attention_layernorm.norm.weight",
            "model.layers.2.post_attention_layernorm.mlp.fc2.weight"} <= moe
    assert (ax.numerics.rope_style, ax.numerics.n_group, ax.numerics.topk_group) == ("pairs", 2, 1)
    assert parse_config(CASES["axk2"]).numerics.n_group == 1


@pytest.mark.parametrize("name", ["hy_v4", "axk2-legacy-groups-bias"])
def test_gated_dsa_decode_reads_every_layer_weight_once(name):
    """With every expert chosen, a decode step's ops read exactly each layer's tensors (Hy4's attention gate_proj
    and a dense layer's MLP gate_proj apart, its sinks and hyper-connections; A.X-K2's gated norms), and the gates'
    matmuls count: Hy4's gate_proj 2 · hidden · heads · v_head_dim, A.X-K2's norm gate 2 · 2 · rank · hidden."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(dict(CASES[name], n_routed_experts=2, num_experts_per_tok=2))
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, cached_tokens=20)
    assert all(sum(o.weight_bytes for o in ops if o.layer == i) == fmt.bytes_of(layer.tensors(f"model.layers.{i}"))
               for i, layer in enumerate(spec.layers))
    flops = {o.name: o.flops for o in ops if o.layer == 0}
    if name == "hy_v4":  # layer 0 dense: the MLP's gate_proj is 2 x 352 x 128
        assert [o.flops for o in ops if o.layer == 0 and o.name == "gate_proj"] == [2 * 128 * 8 * 16, 2 * 352 * 128]
    else:
        assert flops["input_layernorm.gate"] == 2 * 2 * 16 * 128 and "post_attention_layernorm.gate" not in flops


def test_dsa_kv_bytes_per_token_by_hand():
    """Per layer and token: MLA's latent (kv_lora_rank) and rope key, plus the indexer's key (index_head_dim;
    at fp8 with one fp32 scale per 128 elements); GLM-5's shared layers keep no indexer key. No window: every
    token stays cached, whatever index_topk."""
    bf16, fp8 = Options(context=100, dtype="bf16", kv_dtype="bf16"), Options(context=100, dtype="bf16", kv_dtype="fp8")
    v32 = parse_config(CASES["deepseek_v32"])  # latent 64 + rope 8, indexer key 32, 4 layers
    a = analyze(v32, bf16)
    assert a.kv.bytes_per_token == 4 * ((64 + 8) * 2 + 32 * 2) == 832
    assert a.kv_bytes_per_sequence == 100 * 832
    assert analyze(v32, fp8).kv.bytes_per_token == 4 * ((64 + 8) + 32 + 4)
    glm = parse_config(CASES["glm_moe_dsa"])  # layers 1 and 3 shared
    assert analyze(glm, bf16).kv.bytes_per_token == 2 * ((64 + 8) * 2 + 32 * 2) + 2 * (64 + 8) * 2
    # DeepSeek-V3.2's geometry (transformers' class defaults): 61 layers, latent 512 + rope 64, indexer key 128
    full = parse_config(V32_GEOMETRY)
    assert analyze(full, bf16).kv.bytes_per_token == 61 * (576 * 2 + 128 * 2) == 61 * 1408
    assert analyze(full, fp8).kv.bytes_per_token == 61 * (576 + 128 + 128 // 128 * 4) == 61 * 708


@pytest.mark.parametrize("name", ["deepseek_v32", "glm_moe_dsa", "hy_v4", "axk2", "dots3_note_text",
                                  "dots3_note_text-per_layer_config", "dots3_note_text-no-dsa-freq"])
def test_dsa_kv_equals_transformers_cache(name):
    """transformers' own cache after a prefill (fp32) holds exactly our bytes per token per layer: the latent,
    the rope key and, on layers with an indexer, the indexer's keys."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = dict(CASES[name], num_key_value_heads=CASES[name]["num_attention_heads"])  # MLA: no GQA in eager
    n = 5
    _, _, cache = _hf_prefill(cfg, n)
    per_layer = [sum(t.numel() * 4 for t in (getattr(lc, k, None) for k in ("keys", "values", "indexer_keys"))
                     if t is not None) // n for lc in cache.layers]
    fp32 = get_dtype("fp32")
    assert per_layer == [lk.bytes_per_token for lk in kv_cache(parse_config(cfg), fp32, fp32).layers]


# ---- dots3-note: gated MLA on every layer, DSA / sliding-window / full by layer type ------------------------

DOTS3 = ["dots3_note_text", "dots3_note_text-per_layer_config", "dots3_note_text-no-dsa-freq"]


def test_dots3_note_layer_types_geometry_and_windows():
    """Dots3NoteTextConfig: DSA on layers 0, 1 and where i % 4 == 1 (use_dsa false: plain MLA), sliding-window MLA
    of the swa_* geometry (else per_layer_config's) elsewhere; g_proj (hidden -> heads) and k_rope_only_layernorm on
    every layer; shared experts n_shared_experts x the legacy moe_shared_expert_intermediate_size. The sliding
    layers' latent cache stops at the window."""
    kinds = {n: [layer.kind for layer in parse_config(CASES[n]).layers] for n in DOTS3}
    assert kinds["dots3_note_text"] == ["dsa", "dsa+moe"] + ["mla-sliding(64)+moe"] * 3 + ["dsa+moe"]
    assert kinds["dots3_note_text-per_layer_config"] == ["dsa+moe", "mla-sliding(32)", "mla+moe", "mla-sliding(32)+moe"]
    assert kinds["dots3_note_text-no-dsa-freq"] == ["mla", "mla+moe", "mla-sliding(64)+moe", "mla-sliding(64)",
                                                   "mla-sliding(64)+moe"]
    spec = parse_config(CASES["dots3_note_text"])
    swa = {t.name.split("self_attn.")[-1]: t.shape for t in spec.layers[2].tensors("model.layers.2")}
    assert swa["kv_b_proj.weight"] == (4 * (24 + 16), 32) and swa["q_a_proj.weight"] == (40, 128)
    assert swa["g_proj.weight"] == (4, 128) and swa["k_rope_only_layernorm.weight"] == (8,)
    assert not any("indexer" in n for n in swa)
    dsa = {t.name.split("self_attn.")[-1]: t.shape for t in spec.layers[0].tensors("model.layers.0")}
    assert dsa["g_proj.weight"] == (8, 128) and dsa["indexer.wq_b.weight"] == (4 * 32, 48)
    assert spec.layers[1].ffn.shared_intermediate_size == 2 * 40
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv_bytes_per_sequence == 100 * 3 * (64 + 8 + 32) * 2 + 64 * 3 * (32 + 8) * 2
    pl = parse_config(CASES["dots3_note_text-per_layer_config"])
    assert (pl.layers[3].mixer.num_attention_heads, pl.layers[3].mixer.q_lora_rank, pl.layers[3].mixer.bias) == (2, 24, True)
    assert (pl.numerics.rope_style, pl.numerics.n_group, pl.numerics.routed_scaling_factor) == ("pairs", 2, 1.0)


@pytest.mark.parametrize("name", DOTS3)
def test_dots3_note_decode_reads_every_layer_weight_once(name):
    """With every expert chosen, a decode step reads each layer's tensors once (g_proj and k_rope_only_layernorm
    included), and a sliding layer's absorbed attention stops growing at its window."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(dict(CASES[name], n_routed_experts=2, num_experts_per_tok=2, n_group=1))
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, cached_tokens=20)
    assert all(sum(o.weight_bytes for o in ops if o.layer == i) == fmt.bytes_of(layer.tensors(f"model.layers.{i}"))
               for i, layer in enumerate(spec.layers))
    i = next(i for i, layer in enumerate(spec.layers) if layer.mixer.window)
    m = spec.layers[i].mixer
    per_key = m.num_attention_heads * (2 * (m.kv_lora_rank + m.qk_rope_head_dim) + 2 * m.kv_lora_rank)
    for ctx in (10, 1000):
        flops = {o.name: o.flops for o in step_ops(spec, fmt, fmt.act, cached_tokens=ctx) if o.layer == i}
        assert flops["attention"] == per_key * min(ctx + 1, m.window)


def test_dots3_note_wrapper_flat_config_and_default_towers_equal_transformers():
    """The released dots3-note configs are flat (Dots3NoteConfig builds its text_config from the top-level fields),
    tied by the wrapper's flag; the towers as transformers defaults them (42 vision blocks, the last 17 with 4 .. 64
    experts; a 32-layer audio encoder) counted whole."""
    towers = {"vision_config": {"adapter_out_dim": 128}, "audio_config": {"adapter_out_dim": 128}}
    flat = dict({k: v for k, v in CASES["dots3_note_text"].items() if k != "model_type"}, model_type="dots3_note",
                tie_word_embeddings=True, **towers)
    nested = dict(towers, model_type="dots3_note", text_config=CASES["dots3_note_text"], tie_word_embeddings=True)
    p, q = count_params(parse_config(flat)), count_params(parse_config(nested))
    assert p.total == q.total == hf_param_count(flat) and p.vision == q.vision and p.audio == q.audio > 0
    text = count_params(parse_config(dict(CASES["dots3_note_text"], tie_word_embeddings=True)))
    assert p.total == text.total + p.vision + p.audio


def test_dots3_note_refuses_what_transformers_does_not_build():
    """per_layer_config may vary only the attention geometry, alike within a layer type; MLA heads equal KV heads."""
    from planner.analysis.errors import ConfigError

    cfg = CASES["dots3_note_text-per_layer_config"]
    plc = cfg["per_layer_config"]
    for bad, field in [(dict(plc, **{"01": dict(plc["01"], moe_intermediate_size=16)}), "moe_intermediate_size"),
                       (dict(plc, **{"03": dict(plc["03"], v_head_dim=4)}), "another attention geometry"),
                       (dict(plc, **{"01": dict(plc["01"], num_key_value_heads=1)}), "KV heads")]:
        with pytest.raises(ConfigError, match=field):
            parse_config(dict(cfg, per_layer_config=bad))


def test_dsa_decode_attention_stops_growing_past_index_topk():
    """Decode at context c: the MLA attends min(c + 1, index_topk) keys, the indexer scores all c + 1 (index_n_heads
    x (index_head_dim + 1) multiply-adds per key: the dot products and the weighted head sum); past index_topk a
    step's FLOPs grow by the indexer's alone. Prefill sums the causal triangle capped at index_topk."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES["deepseek_v32"])  # 8 heads, latent 64 + rope 8; index_topk 16, indexer 4 x 32
    fmt, _ = weight_format(spec, "bf16")
    bf16 = get_dtype("bf16")
    per_key = 8 * (2 * (64 + 8) + 2 * 64)

    def layer0(ctx: int, new: int = 1) -> dict[str, int]:
        ops = step_ops(spec, fmt, bf16, batch=1, new_tokens=new, cached_tokens=ctx)
        return {o.name: o.flops for o in ops if o.layer == 0}

    contexts = (7, 15, 31, 63, 1000)
    at = {c: layer0(c) for c in contexts}
    assert [at[c]["attention (top-16)"] for c in contexts] == [per_key * min(c + 1, 16) for c in contexts]
    assert [at[c]["indexer.scores"] for c in contexts] == [2 * (c + 1) * 4 * (32 + 1) for c in contexts]
    rest = {c: sum(f for k, f in at[c].items() if k != "indexer.scores") for c in contexts}
    assert rest[15] == rest[31] == rest[63] == rest[1000] > rest[7]
    d = {c: analyze(spec, Options(context=c, dtype="bf16", kv_dtype="bf16")).decode_flops for c in (63, 1000)}
    assert d[1000] - d[63] == 4 * 2 * (1000 - 63) * 4 * (32 + 1)  # 4 layers, the indexer alone
    pre = layer0(0, new=40)
    assert pre["attention (top-16)"] == per_key * (sum(range(1, 17)) + 24 * 16)
    assert pre["indexer.scores"] == 2 * sum(range(1, 41)) * 4 * 33
    # GLM-5's shared layers select nothing themselves: no indexer ops, the same sparse attention
    glm = parse_config(CASES["glm_moe_dsa"])
    gfmt, _ = weight_format(glm, "bf16")
    names = {i: [o.name for o in step_ops(glm, gfmt, bf16, cached_tokens=100) if o.layer == i] for i in (0, 1)}
    assert "indexer.scores" in names[0] and not any(n.startswith("indexer.") for n in names[1])
    assert "attention (top-16)" in names[1]


@pytest.mark.parametrize("name", ["ernie4_5_moe", "ernie4_5_moe-bias-interval", "dots1", "exaone_moe",
                                  "exaone_moe-mlp_layer_types", "solar_open", "hunyuan_v1_moe", "granitemoe_swa-shared",
                                  "flex_olmo", "mellum", "glm4_moe_lite", "glm4_moe_lite-mlp_layer_types", "axk1",
                                  "axk1-legacy-freq", "sarvam_mla", "inkling_text", "laguna", "laguna-per-element-bias",
                                  "sarvam_moe",
                                  "inkling_text-checkpoint-fields", "inkling2_text", "minimax_m3_vl_text",
                                  "minimax_m3_vl_text-sparse", "minimax_m3_vl_text-legacy-sparse",
                                  "minimax_m3_vl_text-legacy-tied", "hy_v3", "hy_v3-default-head_dim",
                                  "hy_v3-mlp_layer_types-bias-tied", "cohere2_moe",
                                  "cohere2_moe-prefix-shared-rms-untied", "cohere2_moe-lists"])
def test_moe_active_parameters_equal_transformers(name):
    """Active: transformers' parameters with each layer's stacked (E, ...) expert tensors counted k / E (Hunyuan:
    moe_topk per layer); ERNIE's e_score_correction_bias parameter and every shared expert count in full."""
    import re

    from tests.oracle import hf_model

    cfg = CASES[name]
    ks = cfg.get("moe_topk", cfg.get("moe_k", cfg.get("num_experts_per_tok")))
    seen, active = set(), 0
    for n, p in hf_model(cfg).named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if ".experts." in n and p.dim() == 3:
            k = ks[int(re.search(r"layers\.(\d+)\.", n).group(1))] if isinstance(ks, list) else ks
            active += p.numel() // p.shape[0] * k
        else:
            active += p.numel()
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), active)


@pytest.mark.parametrize("model_type", ["gemma4_unified_assistant", "gemma4_assistant"])
def test_unmodelled_decoder_families_are_refused_by_name(model_type):
    """Decoders transformers ships that the generic decoder would miscount (Gemma 4's drafters ...) are
    refused, naming them."""
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=f"model_type '{model_type}'"):
        parse_config(dict(BASE, model_type=model_type))


@pytest.mark.parametrize("model_type", ["bert-generation"])
def test_generic_misread_families_are_refused_by_name(model_type):
    """Causal LMs transformers ships that the generic decoder read as Llama and miscounted (HRM 2.83x, now counted; GIT 0.59x, now counted;
    BertGeneration 1.28x; Moshi 1.65x, now counted: tests/test_kyutai_mimi.py; Beam 1.06x, now counted; Phi-4-multimodal, 0.83x, is now counted: tests/test_phi4mm.py): one UnsupportedModelError naming the
    model_type."""
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=f"model_type '{model_type}'") as e:
        parse_config(dict(BASE, model_type=model_type))
    assert "not supported yet" in e.value.message


def test_hunyuan_refuses_what_transformers_does_not_build():
    """Cross-layer attention, per-layer expert counts and experts narrower than intermediate_size: transformers'
    Hunyuan MoE would not match such a checkpoint, so they are refused rather than counted."""
    from planner.analysis.errors import ConfigError

    for extra, field in (({"use_cla": True}, "use_cla"), ({"num_experts": [8] * 4}, "num_experts"),
                         ({"moe_intermediate_size": [64] * 4}, "moe_intermediate_size")):
        with pytest.raises(ConfigError, match=field):
            parse_config(dict(CASES["hunyuan_v1_moe"], **extra))


# ---- Gemma 4 -------------------------------------------------------------------------------------

# google/gemma-4-26B-A4B-it's text geometry (no verbatim copy of its config.json was found to bundle): 30 layers
# (5 sliding : 1 full), 16 heads; sliding layers 8 KV heads x 256, full layers 2 KV heads x 512 with K = V;
# 128 experts of 704, top 8, beside a dense MLP of 2112; no per-layer inputs
GEMMA4_26B_A4B_TEXT = {
    "model_type": "gemma4_text", "hidden_size": 2816, "intermediate_size": 2112, "moe_intermediate_size": 704,
    "num_hidden_layers": 30, "num_attention_heads": 16, "num_key_value_heads": 8, "num_global_key_value_heads": 2,
    "head_dim": 256, "global_head_dim": 512, "attention_k_eq_v": True, "enable_moe_block": True, "num_experts": 128,
    "top_k_experts": 8, "hidden_size_per_layer_input": 0, "vocab_size": 262144, "sliding_window": 1024,
    "final_logit_softcapping": 30.0, "tie_word_embeddings": True,
}


def _hf_active(cfg: dict, k: int) -> int:
    """transformers' unique parameters with each stacked (E, ...) expert tensor counted k / E."""
    from tests.oracle import hf_model

    seen, n = set(), 0
    for name, p in hf_model(cfg).named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel() // p.shape[0] * k if ".experts." in name and p.dim() == 3 else p.numel()
    return n


@pytest.mark.parametrize("cfg", [CASES["gemma4_text-moe-default-layers"], GEMMA4_26B_A4B_TEXT], ids=["tiny", "26B-A4B"])
def test_gemma4_moe_total_and_active_equal_transformers(cfg):
    """The dense MLP beside the MoE block, the router's scales and top_k_experts all counted: active is
    embedding + attention + dense MLP + router + top-k of the experts."""
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), _hf_active(cfg, cfg["top_k_experts"]))


def test_gemma4_26b_full_layers_cache_two_wide_kv_heads():
    """Full layers cache 2 KV heads x 512 (K and V apart: V is the shared projection v-normed, K k-normed and
    roped), not the sliding layers' 8 x 256."""
    spec = parse_config(GEMMA4_26B_A4B_TEXT)
    full = [layer.mixer for layer in spec.layers if layer.mixer.window is None]
    assert len(full) == 5 and {(m.num_key_value_heads, m.head_dim, m.k_eq_v) for m in full} == {(2, 512, True)}
    a = analyze(spec, Options(context=4096, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 25 * (2 * 8 * 256 * 2) + 5 * (2 * 2 * 512 * 2)
    assert a.kv_bytes_per_sequence == 25 * (2 * 8 * 256 * 2) * 1024 + 5 * (2 * 2 * 512 * 2) * 4096


def _hf_text_model(cfg: dict):
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(cfg)
    mt = d.pop("model_type")
    torch.manual_seed(0)
    conf = AutoConfig.for_model(mt, **d, attn_implementation="eager", experts_implementation="eager")
    return torch, AutoModelForCausalLM.from_config(conf).eval()


def _hf_prefill(cfg: dict, n: int, low: int = 0, high: int | None = None):
    """transformers' model of ``cfg`` (_hf_text_model) after a random ``n``-token prefill with ``use_cache`` (no
    grad; token ids from [low, high), high the vocabulary by default): (torch, model, its cache)."""
    torch, model = _hf_text_model(cfg)
    with torch.no_grad():
        out = model(torch.randint(low, cfg["vocab_size"] if high is None else high, (1, n)), use_cache=True)
    return torch, model, (out.cache if hasattr(out, "cache") else out.past_key_values)


def _hf_cache_bytes_per_token(cache, n: int) -> list[int]:
    """Bytes per token each layer of transformers' fp32 cache holds (its K and V) after an ``n``-token prefill."""
    return [(lc.keys.numel() + lc.values.numel()) * 4 // n for lc in cache.layers]


def _hf_decode_flops(torch, model, high: int, low: int = 0, **past) -> dict[str, int]:
    """FlopCounterMode over one decode step of ``model`` (no grad; one random token id from [low, high), ``past``
    its ``cache=`` / ``state=`` and any other keyword arguments): {aten op name: FLOPs}."""
    counter = flop_counter(model)
    with torch.no_grad(), counter:
        model(torch.randint(low, high, (1, 1)), use_cache=True, **past)
    return {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}


def _assert_cache_and_decode_flops_equal_transformers(cfg: dict, n: int = 5) -> list[int]:
    """transformers' own cache after an ``n``-token prefill (fp32) holds exactly our bytes per token per layer, and
    FlopCounterMode over its decode step (eager) equals the trace's FLOPs. Returns the per-layer bytes."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(cfg)
    torch, model, cache = _hf_prefill(cfg, n)
    with torch.no_grad():
        per_layer = _hf_cache_bytes_per_token(cache, n)
        fp32 = get_dtype("fp32")
        assert per_layer == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers]
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    assert sum(hf.values()) == sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1,
                                                                        cached_tokens=n))
    return per_layer



@pytest.mark.parametrize("name,past_window,shared", [("gemma4_text", 40, 2), ("gemma4_text-moe-default-layers", 40, 0),
                                                     ("gemma4_unified_text", 40, 2),
                                                     ("gemma3n_text-tiny", 20, 2)])
def test_gemma4_kv_and_decode_flops_equal_transformers(name, past_window, shared):
    """transformers' own cache after a prefill shorter than the window holds exactly our bytes per token per
    layer (none in the shared-KV layers), and FlopCounterMode over its decode step (eager attention and
    experts) equals the trace's FLOPs, per-layer inputs and routed experts included; Gemma 3n's too: AltUp's
    router (twice a layer), coefficients and stream mix, LAuReL and the model-level AltUp projections."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 5
    torch, model, cache = _hf_prefill(cfg, n)
    with torch.no_grad():
        per_layer = [sum(t.numel() * 4 for t in (getattr(lc, "keys", None), getattr(lc, "values", None))
                         if t is not None) // n for lc in cache.layers]
        assert per_layer == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers]
        assert per_layer[len(per_layer) - shared:] == [0] * shared
        for cached in (n, past_window):
            if cached > n:  # the first decode step cached one more token
                model(torch.randint(0, cfg["vocab_size"], (1, cached - n - 1)), cache=cache, use_cache=True)
            hf = _hf_decode_flops(torch, model, cfg["vocab_size"], cache=cache)
            fmt, _ = weight_format(spec, "fp32")
            want = sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=cached))
            assert sum(hf.values()) == want


#: Zamba2-2.7B's shape: 54 layers in transformers' default layout (9 hybrid), two shared blocks, MHA of
#: 32 heads over the 2 x 2560 concatenation (head_dim 160), Mamba-2 of 80 heads x 64, state 64, one group
ZAMBA2_27B = {"model_type": "zamba2", "hidden_size": 2560, "num_hidden_layers": 54, "num_attention_heads": 32,
              "num_key_value_heads": 32, "n_mamba_heads": 80, "mamba_d_state": 64, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_ngroups": 1, "intermediate_size": 10240, "num_mem_blocks": 2,
              "adapter_rank": 128, "use_shared_attention_adapter": False, "use_mem_rope": False,
              "vocab_size": 32000, "tie_word_embeddings": True}


def test_zamba2_kv_state_and_shared_weights_by_hand():
    """Each of the 9 hybrid layers caches K and V of its own use of a shared block: 32 heads x 160 x 2, in
    bf16; every one of the 54 layers keeps a Mamba-2 state: conv window (5120 + 2·64) x 3 and 80 x 64 x 64.
    The two shared blocks count once; each use adds its gate_up adapter (2560·128 + 128·20480) and its
    linear (2560²); every use computes the whole block."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(ZAMBA2_27B)
    bf16 = get_dtype("bf16")
    kv = kv_cache(spec, bf16, bf16)
    hybrid = [lk.layer for lk in kv.layers if lk.bytes_per_token]
    assert hybrid == [6, 12, 18, 24, 30, 36, 42, 47, 51]
    assert kv.bytes_per_token == 9 * 2 * 32 * 160 * 2 == 184_320
    assert kv.state_bytes_per_sequence == 54 * 2 * ((5120 + 2 * 64) * 3 + 80 * 64 * 64) == 37_089_792
    assert kv.bytes_per_sequence(1000) == 1000 * 184_320
    h, i, r = 2560, 10240, 128
    block = 2 * h + 3 * (2 * h) ** 2 + h * 2 * h + h + 3 * h * i  # norms, q/k/v, o_proj, gate_up + down
    mamba = h * (2 * 5120 + 2 * 64 + 80) + 5248 * 5 + 3 * 80 + 5120 + 5120 * h  # in_proj, conv, dt/A/D, norm, out
    per_use = h * r + r * 2 * i + h * h + h  # adapter, linear, the Mamba block's input norm
    want = 32000 * h + h + 45 * (h + mamba) + 9 * (mamba + per_use) + 2 * block
    assert count_params(spec).total == want == 2_662_214_560
    # decode FLOPs at context 8192: every layer's Mamba-2, every use of a block, the head
    a = analyze(spec, Options(context=8192))
    attn = 32 * 2 * (160 + 160) * 8193
    use = 2 * (3 * (2 * h) ** 2 + 2 * h * h + 3 * h * i + h * r + r * 2 * i + h * h) + attn
    m2 = 2 * (h * 10448 + 5248 * 4 + 2 * 80 * 64 * 64 + 5120 * h)
    assert a.decode_flops == 54 * m2 + 9 * use + 2 * 32000 * h


@pytest.mark.parametrize("name", ["zamba2-blocks-adapters-rope-bias", "zamba-layers-biases"])
def test_zamba2_cache_and_decode_flops_equal_transformers(name):
    """transformers' own cache after a 5-token prefill: K/V in the hybrid layers only, a conv window of
    ``conv_kernel`` columns (ours keeps ``kernel - 1``) and the SSM state in every layer; FlopCounterMode
    over its decode step: its ``aten.mm`` are our matmuls (shared block per use, adapters, linear, Mamba
    projections), its ``aten.bmm`` our attention plus the SSM read-out (``y = h·C``, half our scan
    FLOPs: the state update is elementwise there) and, in Zamba, the per-head x_proj / dt_proj."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = {k: v for k, v in CASES[name].items() if v is not None}
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 5
    torch, model, cache = _hf_prefill(cfg, n, low=1)
    with torch.no_grad():
        for lk, lc in zip(kv_cache(spec, fp32, fp32).layers, cache.layers):
            keys = getattr(lc, "keys", None)
            assert lk.bytes_per_token == (0 if keys is None else 2 * keys.numel() * 4 // n)
        for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
            conv, rec = cache.get_conv_state(i), cache.get_recurrent_state(i)
            k = conv.shape[-1]
            assert lk.state_bytes == 4 * (conv.numel() // k * (k - 1) + rec.numel())
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=1, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    per_head = sum(o.flops for o in ops if o.name in ("x_proj", "dt_proj"))  # Zamba: batched over heads (bmm)
    assert hf["aten.mm"] + hf.get("aten.addmm", 0) == sum(o.flops for o in ops if o.kind == "matmul") - per_head
    scan = sum(o.flops for o in ops if o.kind == "scan")
    assert hf["aten.bmm"] == sum(o.flops for o in ops if o.kind == "attention") + scan // 2 + per_head


# ---- MiniMax (lightning attention) ---------------------------------------------------------------

#: MiniMax-Text-01's published dimensions (written out here, not copied from its config.json; the model card's
#: 456B total and 45.9B active without embeddings come out of them), as transformers' minimax reads them: 80 layers,
#: softmax attention every 8th (attn_type_list 0 x 7, 1), 64 heads x 128 (8 KV heads), 32 experts of 9216, top 2.
#: transformers' MiniMaxConfig class defaults are Mixtral-8x7B's shape (4096 wide, 32 layers, 8 experts), not this.
MINIMAX_TEXT_01 = {"model_type": "minimax", "hidden_size": 6144, "intermediate_size": 9216, "num_hidden_layers": 80,
                   "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 32,
                   "num_experts_per_tok": 2, "vocab_size": 200064, "max_position_embeddings": 10240000,
                   "rope_theta": 10000000.0, "rms_norm_eps": 1e-05, "block_size": 256, "tie_word_embeddings": False,
                   "layer_types": (["linear_attention"] * 7 + ["full_attention"]) * 10}


@pytest.mark.parametrize("name", ["minimax", "minimax-layer_types-head_dim-tied"])
def test_minimax_total_and_active_equal_transformers(name):
    """Lightning layers: qkv_proj (3·H·d x h), output_gate and out_proj, one RMSNorm over H·d (slope_rate and the
    decay tables are buffers, not parameters); active counts k of the stacked experts."""
    cfg = CASES[name]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), _hf_active(cfg, cfg["num_experts_per_tok"]))


def test_minimax_text_01_counts_and_state_by_hand():
    """456B total, 45.9B active without the two 200064 x 6144 tables (MiniMax's published figures); 10 softmax
    layers cache K and V of 8 heads x 128 per token; each of the 70 lightning layers keeps 64 heads x 128 x 128
    per sequence in the activation dtype (bf16: 2 MiB), whatever the KV dtype (fp8 here)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(MINIMAX_TEXT_01)
    h, i, v = 6144, 9216, 200064
    light = 3 * 8192 * h + 8192 * h + 8192 + h * 8192
    soft = 8192 * h + 2 * 1024 * h + h * 8192
    per_layer = 2 * h + 32 * h  # norms, router
    total = 2 * v * h + h + 70 * light + 10 * soft + 80 * (per_layer + 32 * 3 * h * i)
    p = count_params(spec)
    assert p.total == total == 456_089_655_296
    assert p.active == total - 80 * 30 * 3 * h * i == 48_403_306_496
    assert p.active - 2 * v * h == 45_944_920_064
    kv = kv_cache(spec, get_dtype("fp8"), get_dtype("bf16"))
    assert [lk.layer for lk in kv.layers if lk.bytes_per_token] == list(range(7, 80, 8))
    assert kv.bytes_per_token == 10 * 2 * 8 * 128 == 20_480
    assert {lk.state_bytes for lk in kv.layers if not lk.bytes_per_token} == {64 * 128 * 128 * 2}
    assert kv.state_bytes_per_sequence == 70 * 2_097_152 == 146_800_640
    # decode FLOPs at context 8192: lightning 4·H·d² per token, attention over 8193 keys, top-2 experts, the head
    a = analyze(spec, Options(context=8192))
    lin = 2 * (light - 8192) + 4 * 64 * 128 * 128
    sm = 2 * soft + 64 * 2 * (128 + 128) * 8193
    ffn = 2 * (32 * h + 2 * 3 * h * i)
    assert a.decode_flops == 70 * lin + 10 * sm + 80 * ffn + 2 * v * h


def test_minimax_attn_type_list_sets_the_layers():
    """MiniMax's original configs name the layout attn_type_list (0: lightning, 1: softmax), which transformers'
    MiniMaxConfig does not read: without layer_types we follow it rather than the default alternation."""
    from planner.analysis.errors import ConfigError

    cfg = dict(CASES["minimax"], attn_type_list=[0, 0, 0, 1])
    assert [layer.kind for layer in parse_config(cfg).layers] == ["lightning+moe"] * 3 + ["full+moe"]
    with pytest.raises(ConfigError, match="attn_type_list"):
        parse_config(dict(cfg, attn_type_list=[0, 2, 0, 1]))
    with pytest.raises(ConfigError, match="layer_types"):
        parse_config(dict(CASES["minimax"], layer_types=["linear_attention", "mamba"] * 2))


@pytest.mark.parametrize("name", ["minimax", "minimax-layer_types-head_dim-tied"])
def test_minimax_cache_and_decode_flops_equal_transformers(name):
    """transformers' MiniMaxCache after a 5-token prefill: K/V in the softmax layers only, a (heads, d, d) state in
    each lightning layer (linear_cache), exactly our bytes in fp32; FlopCounterMode over its decode step: its
    ``aten.mm`` are our matmuls (projections, router, the routed experts, lm_head), its ``aten.bmm`` our attention
    plus the lightning recurrence (kᵀv and q·S: 4·H·d² per token; the decay is elementwise)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 5
    torch, model, cache = _hf_prefill(cfg, n, low=1)
    with torch.no_grad():
        for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
            if spec.layers[i].mixer.kind == "lightning":
                state = cache.linear_cache[i]
                assert state.shape == (1, spec.layers[i].mixer.num_heads, spec.layers[i].mixer.head_dim,
                                       spec.layers[i].mixer.head_dim)
                assert (lk.bytes_per_token, lk.state_bytes) == (0, state.numel() * 4)
            else:
                lc = cache.layers[i]
                assert (lk.bytes_per_token, lk.state_bytes) == (2 * lc.keys.numel() * 4 // n, 0)
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=1, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    assert hf["aten.mm"] + hf.get("aten.addmm", 0) == sum(o.flops for o in ops if o.kind in ("matmul", "router",
                                                                                              "experts"))
    assert hf["aten.bmm"] == sum(o.flops for o in ops if o.kind in ("attention", "scan"))
    assert sum(hf.values()) == sum(o.flops for o in ops)


# ---- Inkling / Inkling-2 (relative-bias attention, short convs) -----------------------------------------


@pytest.mark.parametrize("name", ["inkling_text", "inkling2_text"])
def test_inkling_kv_and_conv_state_equal_transformers_cache(name):
    """transformers' cache after a 40-token prefill (fp32, window 32): K and V per token as ours (sliding layers
    keep at most the window); its four conv states per layer (K, V, attention output, FFN output) hold
    conv_kernel columns each, ours (as serving engines) conv_kernel - 1."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 40
    _, _, cache = _hf_prefill(cfg, n, low=1, high=500)
    for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
        lc, m = cache.layers[i], spec.layers[i].mixer
        held = lc.keys.shape[2]
        assert held == (min(n, m.window - 1) if m.window else n)
        assert lk.bytes_per_token == 2 * lc.keys.numel() * 4 // held
        convs = list(lc.conv_states.values())
        assert len(convs) == 4 and all(c.shape[-1] == m.conv_kernel for c in convs)
        assert lk.state_bytes == sum(c.numel() for c in convs) * 4 * (m.conv_kernel - 1) // m.conv_kernel


@pytest.mark.parametrize("name", ["inkling_text", "inkling2_text"])
def test_inkling_decode_flops_equal_transformers(name):
    """FlopCounterMode over transformers' decode step after a 40-token prefill. Its ``aten.mm`` and ``aten.bmm``
    are our matmuls, router (Inkling's scores the shared experts too), experts and attention (q·k, p·v and the
    relative states times the bias bank), in Inkling-2 with the block attention residuals (a few learned queries
    over the block states: 4·queries·sources·hidden per token and layer, as counted here by hand). Its
    ``aten.convolution`` is twice our static convs: its decode conv runs over the
    conv_kernel cached columns and the new one (two outputs); Inkling-2's dynamic K / V convs are elementwise
    there (not counted), matmul-shaped taps here."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    n = 40
    torch, model, cache = _hf_prefill(cfg, n, low=1, high=500)
    hf = _hf_decode_flops(torch, model, 500, low=1, cache=cache)
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    residual = 0
    if name == "inkling2_text":  # sources: the blocks closed before layer i, the current partial block (+ its input)
        per, h, queries = cfg["n_layers_per_attn_res_block"], spec.hidden_size, 0
        for i, layer in enumerate(spec.layers):
            closed = -(-i // per)
            queries += layer.mixer.residual_queries * (closed + 1) + closed + (i % per == 0) + 1
        residual = 4 * h * (queries + -(-spec.num_layers // per) + 1)
    assert sum(o.flops for o in ops if o.name in ("attention_input", "mlp_input", "final_input")) == residual
    ours = sum(o.flops for o in ops if o.kind in ("matmul", "router", "experts", "attention"))
    assert hf["aten.mm"] + hf["aten.bmm"] == ours
    static = sum(o.flops for o in ops if o.kind == "conv"
                 and not (spec.layers[o.layer].mixer.dynamic_conv and o.name.endswith(".sconv")))
    assert hf["aten.convolution"] == 2 * static


def _loop_cache_index(cfg: dict, n_run: int) -> list[int]:
    """transformers' cache layer of each layer as Inkling-2 Loop runs them: the model's layers first, then one copy
    of the core's cache layers per extra pass, appended in pass order (Inkling2LoopTextModel.forward's
    cache_offset)."""
    n, start, end = cfg["num_hidden_layers"], cfg["loop_layer_index_start"], cfg["loop_layer_index_end"]
    core = end - start
    run = list(range(end))
    for p in range(1, cfg["loop_num_passes"]):
        run += [n + (p - 1) * core + j for j in range(core)]
    run += list(range(end, n))
    assert len(run) == n_run
    return run


def test_inkling2_loop_kv_state_and_parameters_count_every_pass():
    """transformers' cache after a 40-token prefill (fp32, window 32) holds a cache layer per layer run: the core's
    layers once per pass (9 + 2 x 3 = 15 layers here, not 9), each K/V and conv state as ours for that run; our
    parameters count the core once (as the meta model's), while the trace runs its layers per pass."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES["inkling2_loop_text"]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 40
    _, _, cache = _hf_prefill(cfg, n, low=1, high=500)
    assert len(cache.layers) == spec.num_layers == 9 + 2 * 3
    assert [layer.stored for layer in spec.layers] == [True] * 6 + [False] * 6 + [True] * 3
    for i, (lk, c) in enumerate(zip(kv_cache(spec, fp32, fp32).layers, _loop_cache_index(cfg, spec.num_layers))):
        lc, m = cache.layers[c], spec.layers[i].mixer
        held = lc.keys.shape[2]
        assert held == (min(n, m.window - 1) if m.window else n)
        assert lk.bytes_per_token == 2 * lc.keys.numel() * 4 // held
        convs = list(lc.conv_states.values())
        assert lk.state_bytes == sum(c.numel() for c in convs) * 4 * (m.conv_kernel - 1) // m.conv_kernel
    assert count_params(spec).total == hf_param_count(cfg)


def test_inkling2_loop_decode_flops_equal_transformers():
    """FlopCounterMode over transformers' decode step after a 40-token prefill: its ``aten.mm`` and ``aten.bmm``
    equal our matmuls, router, experts and attention with the core's layers counted once per pass and the message
    gates on the passes after the first, the block attention residuals (attention_input, mlp_input, final_input and
    the loop's message_input: learned queries over block states) each as transformers' module computes it; its
    ``aten.convolution`` is twice our static convs (as test_inkling_decode_flops_equal_transformers)."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES["inkling2_loop_text"]
    n = 40
    torch, model, cache = _hf_prefill(cfg, n, low=1, high=500)
    counter = flop_counter(model)
    with torch.no_grad(), counter:
        model(torch.randint(1, 500, (1, 1)), use_cache=True, cache=cache)
    counts = counter.get_flop_counts()
    hf = {str(k): v for k, v in counts["Global"].items()}
    residual = 0
    for mod, c in counts.items():  # the residual modules (not nested in one another): their own matmul FLOPs
        if mod.rsplit(".", 1)[-1] in ("attention_input", "mlp_input", "final_input", "message_input"):
            residual += sum(v for k, v in c.items() if str(k) in ("aten.mm", "aten.bmm"))
    assert residual > 0
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    ours = sum(o.flops for o in ops if o.kind in ("matmul", "router", "experts", "attention"))
    assert hf["aten.mm"] + hf["aten.bmm"] == ours
    assert sum(o.flops for o in ops if o.name in ("attention_input", "mlp_input", "final_input",
                                                   "message_input")) == residual
    gates = sum(o.flops for o in ops if "message_gate" in o.name)
    h, r = spec.hidden_size, cfg["loop_gate_rank"]
    # 2 later passes x 3 core layers x 4 gates, one token: down_proj (2h -> r), forget and message gates (r -> h)
    assert gates == 2 * 3 * 4 * 2 * (2 * h * r + 2 * r * h)
    static = sum(o.flops for o in ops if o.kind == "conv"
                 and not (spec.layers[o.layer].mixer.dynamic_conv and o.name.endswith(".sconv")))
    assert hf["aten.convolution"] == 2 * static


# ---- DeepSeek-V4 (sliding + compressed shared-KV MQA, hyper-connections) -----------------------------

V4 = ["deepseek_v4", "deepseek_v4-compress_ratios-tied"]


@pytest.mark.parametrize("name", V4)
def test_deepseek_v4_total_and_active_equal_transformers(name):
    """Attention, compressors, indexers and hyper-connections are all active; routed experts count k / E (hash
    and learned routers alike)."""
    cfg = CASES[name]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), _hf_active(cfg, cfg["num_experts_per_tok"]))
    kinds = [layer.kind for layer in parse_config(cfg).layers]
    assert kinds == (["swa(16)+moe", "hca(8)+moe", "csa(4)+moe", "hca(8)+moe", "csa(4)+moe"] if name == "deepseek_v4"
                     else ["swa(8)+moe", "csa(4)+moe", "hca(128)+moe", "csa(4)+moe"])


@pytest.mark.parametrize("n", [11, 21])
def test_deepseek_v4_kv_equals_transformers_cache(n):
    """transformers' cache after an n-token prefill (fp32): the window's keys (K = V; values alias them on
    compressed layers, and are a second copy of the same keys on its generic sliding layers), ``sliding_window - 1``
    past tokens; one compressed entry per ratio tokens (head_dim, + index_head_dim on CSA); and the compressor's
    buffer and overlap, which our state counts at its largest."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES["deepseek_v4"]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    kv = kv_cache(spec, fp32, fp32)
    _, _, cache = _hf_prefill(cfg, n, low=1)
    for i, (lc, lk) in enumerate(zip(cache.layers, kv.layers)):
        m = spec.layers[i].mixer
        assert lc.keys.numel() * 4 == lk.bytes_per_token * min(n, lk.window - 1)
        entries = sum(t.numel() * 4 for t in getattr(lc, "compressed_kv", {}).values() if t is not None)
        assert entries == lk.compressed_bytes(n) == lk.bytes_at(n) - lk.bytes_per_token * min(n, lk.window)
        buf = sum(t.numel() * 4 for d in (getattr(lc, k, {}) for k in ("buffer_kv", "buffer_gate", "overlap_kv",
                                                                        "overlap_gate")) for t in d.values()
                  if t is not None)
        assert buf == 4 * m.buffer_elements(n) <= lk.state_bytes
        assert lk.state_bytes == 4 * max(m.buffer_elements(c) for c in range(n, n + 8))
    # 5 layers: window 16 x 32 each; HCA 32 per 8 tokens, CSA 32 + 16 per 4 tokens
    assert kv.bytes_per_sequence(100) == 5 * 16 * 32 * 4 + 2 * (100 // 8) * 32 * 4 + 2 * (100 // 4) * 48 * 4


def test_deepseek_v4_decode_ops_by_attention_type():
    """Decode at context c: the window attends min(c + 1, W) keys, HCA every closed entry ((c + 1) // 8), CSA
    its top index_topk of them, 4 x heads x head_dim FLOPs per key; the CSA indexer scores every entry."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES["deepseek_v4"])  # 8 heads x 32, window 16, HCA 8, CSA 4 (top 4, indexer 4 x 16)
    fmt, _ = weight_format(spec, "bf16")
    per_key = 4 * 8 * 32
    for c in (3, 40, 1000):
        ops = step_ops(spec, fmt, get_dtype("bf16"), batch=1, new_tokens=1, cached_tokens=c)
        att = {o.layer: o.flops for o in ops if o.name == "attention"}
        w = min(c + 1, 16)
        assert att == {0: per_key * w, 1: per_key * (w + (c + 1) // 8), 2: per_key * (w + min(4, (c + 1) // 4)),
                       3: per_key * (w + (c + 1) // 8), 4: per_key * (w + min(4, (c + 1) // 4))}
        scores = [o.flops for o in ops if o.name == "compressor.indexer.scores"]
        assert scores == [2 * ((c + 1) // 4) * 4 * (16 + 1)] * 2


@pytest.mark.parametrize("name", ["gemma4_text", "gemma4_text-moe-default-layers"])
def test_gemma4_config_saved_by_transformers_5_reads_its_per_layer_config(name):
    """transformers 5 saves Gemma 4's full-layer head_dim / KV heads as per_layer_config, dropping global_head_dim and
    num_global_key_value_heads: that saved config counts and caches as the original does."""
    pytest.importorskip("transformers", reason="the saved form is transformers' own (dev extra)")
    import json as _json

    from transformers import AutoConfig

    cfg = dict(CASES[name])
    saved = _json.loads(AutoConfig.for_model(cfg["model_type"], **{k: v for k, v in cfg.items() if k != "model_type"})
                        .to_json_string(use_diff=True))
    assert "per_layer_config" in saved and "global_head_dim" not in saved
    ours, original = parse_config(saved), parse_config(cfg)
    assert count_params(ours).total == count_params(original).total == hf_param_count(cfg)
    a = analyze(ours, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    b = analyze(original, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == b.kv.bytes_per_token and a.kv_bytes_per_sequence == b.kv_bytes_per_sequence


def test_gemma4_unified_assistant_is_refused_not_read_as_its_text_config():
    """The drafter's text_config is a gemma4_unified_text whose every layer reads the target's K/V: refused by name,
    never counted as that text model."""
    from planner.analysis.errors import UnsupportedModelError

    cfg = {"model_type": "gemma4_unified_assistant", "backbone_hidden_size": 128,
           "text_config": dict(CASES["gemma4_unified_text-default-layers"], num_kv_shared_layers=7)}
    with pytest.raises(UnsupportedModelError, match="'gemma4_unified_assistant' .*speculative-decoding drafter"):
        parse_config(cfg)


def test_gemma4_per_layer_config_other_than_the_derived_form_is_refused():
    cfg = dict(CASES["gemma4_text"], per_layer_config={"1": {"head_dim": 32}})  # layer 4 is full too: not derived
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match="per_layer_config"):
        parse_config(cfg)


@pytest.mark.parametrize("name,windows,roped,moe", [
    # Kolibri-1: full every 5th layer (NoPE, sliding_window being set), experts on every layer
    ("kolibri1", [64, 64, 64, 64, None], [True] * 4 + [False], [True] * 5),
    ("kolibri1-layer_types-local_experts", [None, 513, None, 513], [False, True, False, True], [True] * 4),
    # Flint: full on layers 0, 1, i % 4 == 1 and the last (NoPE), dense on mlp_only_layers
    ("flint", [None, None, 64, 64, 64, None], [False, False, True, True, True, False], [False, False] + [True] * 4),
    ("flint-mlp_only-layer_types", [513, None, 513, None], [True, False, True, False], [True, True, False, True]),
])
def test_kolibri1_and_flint_layouts(name, windows, roped, moe):
    from planner.analysis.spec import MoE, RouterKind

    spec = parse_config(CASES[name])
    assert [layer.mixer.window for layer in spec.layers] == windows
    assert [layer.mixer.rotary_dim > 0 for layer in spec.layers] == roped
    assert [isinstance(layer.ffn, MoE) for layer in spec.layers] == moe
    assert spec.numerics.router == RouterKind.LOGIT_SIGMOID
    assert spec.numerics.score_correction_bias == name.startswith("kolibri1")  # Kolibri-1's choice bias buffer
    assert spec.numerics.norm_topk_prob == name.startswith("flint")  # class defaults: False / True
    assert all(not layer.ffn.shared_expert_gate for layer in spec.layers if isinstance(layer.ffn, MoE))
    test_moe_active_parameters_equal_transformers(name)


@pytest.mark.parametrize("name,kinds,windows,roped", [
    # the default layer_types, period 5: linear, sliding, linear, full, sliding
    ("lara_mini", ["linear", "attention", "linear", "attention", "attention", "linear"],
     [None, 512, None, None, 512, None], [False, True, False, False, True, False]),
    ("lara_mini-layer_types-bias-untied", ["attention", "linear", "attention", "attention"], [None, None, 512, 512],
     [False, False, True, True]),
])
def test_lara_mini_layouts(name, kinds, windows, roped):
    """Lara-4-Mini: RoPE and the window on the sliding layers only, the whole head rotated (no partial factor);
    Flint's sparse block on every layer, its shared expert ungated; softmax routing; plain RMSNorms."""
    from planner.analysis.spec import MoE, RouterKind

    spec = parse_config(CASES[name])
    assert ["attention" if layer.mixer.kind.value == "attention" else "linear" for layer in spec.layers] == kinds
    attn = [layer.mixer for layer in spec.layers if layer.mixer.kind.value == "attention"]
    assert [getattr(layer.mixer, "window", None) for layer in spec.layers] == windows
    assert [getattr(layer.mixer, "rotary_dim", 0) > 0 for layer in spec.layers] == roped
    assert all(a.rotary_dim in (0, a.head_dim) and not a.output_gate for a in attn)
    assert all(isinstance(layer.ffn, MoE) and not layer.ffn.shared_expert_gate for layer in spec.layers)
    assert (spec.numerics.router, spec.numerics.norm_topk_prob, spec.norm_offset) == (RouterKind.SOFTMAX, True, 0.0)
    test_moe_active_parameters_equal_transformers(name)


@pytest.mark.parametrize("bad,match", [
    ({}, "n_input_layers .8. \\+ n_recurrent_layers \\+ n_output_layers .8. must equal num_hidden_layers .4."),
    ({"num_hidden_layers": 20, "n_recurrent_layers": 3}, "must equal num_hidden_layers"),
    ({"num_hidden_layers": 20, "recurrent_kv_cache_mode": "every_loop"}, "'per_loop' or 'last_loop'"),
    ({"num_hidden_layers": 20, "n_recurrent_loops": 0}, "n_recurrent_loops"),
    ({"num_hidden_layers": 20, "layer_types": ["sliding_attention", "mlp"] * 3}, "must list 10 of"),
])
def test_dory_bad_loop_configs_are_config_errors(bad, match):
    """Dory's layer counts must add up (as DoryConfig.validate_architecture), its cache mode and loops be known:
    one ConfigError each (the defaults' 8 input and 8 output layers do not fit 4 layers)."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        parse_config(dict(BASE, model_type="dory", **bad))


@pytest.mark.parametrize("name", ["hrm_text", "hrm_text-saved-inflated-bias"])
def test_hrm_kv_and_decode_flops_count_every_cycle(name):
    """transformers' cache after a 40-token prefill (fp32; prefix_lm off: a causal prompt) has one slot per layer
    run, H_cycles x (L_cycles + 1) x layers per stack, each K/V as ours (MHA of head_dim). FlopCounterMode over its
    decode step: ``aten.mm`` / ``aten.addmm`` / ``aten.bmm`` equal our matmuls and attention with every cycle's
    layers. Parameters count each stack once."""

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = dict(CASES[name], prefix_lm=False)
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 40
    torch, model, cache = _hf_prefill(cfg, n, low=1)
    conf = model.config
    assert spec.num_layers == len(cache.layers) == conf.num_layers_per_stack * conf.H_cycles * (conf.L_cycles + 1)
    assert sum(layer.stored for layer in spec.layers) == 2 * conf.num_layers_per_stack
    assert [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers] == _hf_cache_bytes_per_token(cache, n)
    hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=1, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    assert sum(v for k, v in hf.items() if k in ("aten.mm", "aten.addmm", "aten.bmm")) == sum(o.flops for o in ops)
    assert count_params(spec).total == hf_param_count(cfg)


@pytest.mark.parametrize("name", ["dory", "dory-released-layer_types-last_loop-tied"])
def test_dory_kv_and_decode_flops_count_every_loop(name):
    """transformers' cache after a 40-token prefill (fp32): "per_loop" appends a cache layer per looped layer and
    extra pass (7 + 2 x 3 = 13 here), each K/V as ours for that run (sliding layers keep window - 1 past tokens);
    "last_loop" caches the model's own layers only, the earlier passes caching nothing (since transformers 5.25 they
    go through a DoryPastReader per looped layer, appended after the model's, which reads the last pass's layer and
    holds no keys or values of its own). FlopCounterMode over its
    decode step: its ``aten.mm`` / ``aten.addmm`` / ``aten.bmm`` equal our matmuls and attention, the looped layers
    counted once per pass. Parameters count the looped layers once (the meta model's)."""

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 40
    torch, model, cache = _hf_prefill(cfg, n, low=1)
    conf = model.config
    n_in, n_rec, loops = conf.n_input_layers, conf.n_recurrent_layers, conf.n_recurrent_loops
    assert spec.num_layers == conf.num_hidden_layers + (loops - 1) * n_rec
    assert sum(layer.stored for layer in spec.layers) == conf.num_hidden_layers
    # transformers' cache layer of each layer run (DoryModel.forward's cache_offset): a pass's extra layers are
    # appended after the model's; per_loop's passes 1, 2, ... write copies of their own, last_loop's passes before
    # the last share one set of readers (extra index 1) and the last pass writes the model's own layers
    last = conf.recurrent_kv_cache_mode == "last_loop"
    run = list(range(n_in))
    for p in range(loops):
        extra = int(p < loops - 1) if last else p
        run += [conf.num_hidden_layers + (extra - 1) * n_rec + i - n_in if extra else i
                for i in range(n_in, n_in + n_rec)]
    run += list(range(conf.num_hidden_layers - conf.n_output_layers, conf.num_hidden_layers))
    assert len(cache.layers) == len(set(run))
    for lk, c, layer in zip(kv_cache(spec, fp32, fp32).layers, run, spec.layers):
        lc, w = cache.layers[c], layer.mixer.window
        if lc.keys is None:  # a last_loop reader: it stores nothing
            assert last and lc.values is None and lk.bytes_per_token == 0
            continue
        held = lc.keys.shape[2]
        assert held == (min(n, w - 1) if w else n)
        assert lk.bytes_per_token == (lc.keys.numel() + lc.values.numel()) * 4 // held
    hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=1, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    assert sum(v for k, v in hf.items() if k in ("aten.mm", "aten.addmm", "aten.bmm")) == sum(o.flops for o in ops)
    assert count_params(spec).total == hf_param_count(cfg)


def test_doge_dynamic_mask_ops_kv_and_moe_refusal():
    """Doge: K and V cached only; each step dt_proj reads every visible key's values, the top keep_window_size
    selection only past that many keys; its cross-domain MoE (is_moe) is refused by name."""
    from planner.analysis.errors import UnsupportedModelError
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES["doge-bias-sliding-tied"])
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * 2 * 4 * 16 * 2  # 4 layers x (K, V) x 4 KV heads x head_dim 16 x bf16
    assert a.kv_bytes_per_sequence == 64 * a.kv.bytes_per_token  # every layer sliding (64)
    fmt, _ = weight_format(spec, "bf16")
    ops = [o for o in step_ops(spec, fmt, fmt.act, cached_tokens=100) if o.layer == 0]
    names = [o.name for o in ops]
    assert names.index("dt_proj") < names.index("dynamic_mask.top32") < names.index("attention")
    assert next(o for o in ops if o.name == "dt_proj").flops == 2 * 64 * 4 * 4 * 16  # the 64 keys in the window
    short = [o.name for o in step_ops(parse_config(CASES["doge"]), fmt, fmt.act, cached_tokens=100) if o.layer == 0]
    assert "dt_proj" in short and not any(n.startswith("dynamic_mask.top") for n in short)  # 101 <= 2048 keys
    with pytest.raises(UnsupportedModelError, match="model_type 'doge'.*is_moe"):
        parse_config(dict(CASES["doge"], is_moe=True, num_experts=64, num_experts_per_tok=4))
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import tp_plan

    with pytest.raises(OptionError, match="dt_proj"):  # its tensor-parallel split is not modelled
        tp_plan(spec, 2)


def test_minimax_m3_layers_kv_and_numerics():
    """MiniMax-M3: dense layers where mlp_layer_types (or the legacy moe_layer_freq) says, a fused shared expert
    beside the experts, the clamped SwiGLU and routed scaling in the numerics; its KV cache is plain GQA K and V."""
    from planner.analysis.spec import GLU, MLP, MoE

    spec = parse_config(CASES["minimax_m3_vl_text"])
    assert [type(layer.ffn) for layer in spec.layers] == [MLP, MoE, MoE, MoE]
    assert spec.layers[0].ffn.intermediate_size == 96 and spec.layers[0].ffn.fused_gate_up
    assert spec.layers[1].ffn.shared_intermediate_size == 48 and spec.layers[1].ffn.moe_intermediate_size == 352
    num = spec.numerics
    assert (num.glu, num.swiglu_alpha, num.swiglu_limit, num.routed_scaling_factor) == (GLU.GPT_OSS, 1.702, 7.0, 2.0)
    assert spec.norm_offset == 1.0 and spec.layers[0].mixer.rotary_dim == 8
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * 2 * 2 * 16 * 2  # 4 layers x (K, V) x 2 KV heads x 16 x bf16
    legacy = parse_config(CASES["minimax_m3_vl_text-legacy-tied"])
    assert [type(layer.ffn) for layer in legacy.layers] == [MLP, MoE, MLP, MoE]
    assert legacy.hidden_act == "silu"


def test_minimax_m3_sparse_layers_indexer_cache_and_block_sparse_flops():
    """MiniMax-M3's sparse layers (layer_types, or the checkpoint's sparse_attention_config and its sparse_* fields):
    the indexer key (index_head_dim) cached beside K and V; the indexer scores every visible key, the attention only
    the selected blocks: all keys up to topk blocks, then (topk - 1) full blocks and the query's own partial one."""
    from planner.analysis.mixers.block_sparse import BlockSparseAttention, block_keys
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES["minimax_m3_vl_text-sparse"])
    assert [type(layer.mixer) is BlockSparseAttention for layer in spec.layers] == [False, True, False, True]
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * 2 * 2 * 16 * 2 + 2 * 8 * 2  # + the indexer key of the two sparse layers
    legacy = parse_config(CASES["minimax_m3_vl_text-legacy-sparse"])
    m = legacy.layers[0].mixer
    assert (m.index_n_heads, m.index_head_dim, m.index_block_size, m.index_topk_blocks) == (4, 24, 8, 2)
    assert [type(layer.mixer) is BlockSparseAttention for layer in legacy.layers] == [True, False, True, True]
    # block_keys: below topk blocks every key; past them (topk - 1) · B + p mod B + 1
    assert block_keys(0, 12, 4, 3) == sum(range(1, 13))
    assert block_keys(12, 1, 4, 3) == 2 * 4 + 1 and block_keys(15, 1, 4, 3) == 2 * 4 + 4
    fmt, _ = weight_format(spec, "bf16")
    ops = {o.name: o for o in step_ops(spec, fmt, fmt.act, cached_tokens=100) if o.layer == 1}
    per_key = 8 * 2 * (16 + 16)  # heads x 2 x (head_dim + v_head_dim)
    assert ops["attention (top-3 blocks)"].flops == per_key * (2 * 4 + 100 % 4 + 1)
    assert ops["indexer.scores"].flops == 2 * 101 * 2 * 8
    # the indexer key (one head) beside K / V heads split over tensor-parallel ranks is not modelled: refused,
    # while the full-attention layers alone split as usual
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import tp_plan

    with pytest.raises(OptionError, match="indexer key cache"):
        tp_plan(spec, 2)
    assert tp_plan(parse_config(CASES["minimax_m3_vl_text"]), 2).kv_divisor == 2


# ---- Qwen4-Exp (hyper-connections, QSA indexer, n-gram PLE) ------------------------------------------

QWEN4 = ["qwen4_exp_text", "qwen4_exp_text-ple-tied"]


@pytest.mark.parametrize("name", QWEN4)
def test_qwen4_exp_total_and_active_equal_transformers(name):
    """Hyper-connections, indexers and PLE (its n-gram table an embedding) are all active; routed experts k / E."""
    cfg = CASES[name]
    spec = parse_config(cfg)
    p = count_params(spec)
    assert (p.total, p.active) == (hf_param_count(cfg), _hf_active(cfg, cfg["num_experts_per_tok"]))
    kinds = [layer.kind for layer in spec.layers]
    assert kinds == (["gated_deltanet+moe"] * 3 + ["qsa(8)+moe"] if name == "qwen4_exp_text" else
                     ["gated_deltanet+ple+moe", "qsa(8)+moe"] * 2 + ["gated_deltanet+ple+moe"])
    assert spec.final_norm is None and len(spec.head_hc) == 3  # hyper_connection_mixer, no model.norm


def test_qwen4_exp_published_sizes():
    """transformers' class defaults with the QSA fields they lack (Qwen4ExpForCausalLM on meta: 67,408,139,392),
    and with PLE on layers 1, 2 and 5 (190,353,241,216: three n-gram tables of 16 prime-sized heads from 20M rows,
    128 features; transformers takes ~11 s to find the primes, so the figures are pinned here)."""
    cfg = {"model_type": "qwen4_exp_text", "hidden_size": 2048, "num_hidden_layers": 40, "vocab_size": 248320,
           "num_attention_heads": 16, "num_key_value_heads": 2, "indexer_n_heads": 32, "indexer_kv_heads": 1,
           "indexer_head_dim": 128, "indexer_budget": 2048, "indexer_compress_ratio": 8,
           "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25}}
    assert count_params(parse_config(cfg)).total == 67_408_139_392
    assert count_params(parse_config(dict(cfg, ple_layer_ids=[1, 2, 5], eos_token_id=1))).total == 190_353_241_216


def test_qwen4_exp_cache_and_selection_equal_transformers():
    """transformers' cache after an 11-token prefill (fp32): per token, K and V and the indexer's raw key on the
    indexed layers; per sequence, the DeltaNet state and conv window (transformers keeps the whole kernel, ours the
    kernel - 1 past inputs, as vLLM) and on PLE layers the dilated conv's (kernel - 1) x ngram_size window of the
    streams. The indexer selects, per query at position p, min((p + 1) // 4, 2) blocks of 4 and the tail."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES["qwen4_exp_text-ple-tied"]
    torch, model = _hf_text_model(cfg)
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    kv = kv_cache(spec, fp32, fp32)
    n, picked = 11, []
    model.model.layers[1].self_attn.indexer.register_forward_hook(lambda mod, args, out: picked.append(out))
    with torch.no_grad():
        out = model(torch.randint(3, cfg["vocab_size"], (1, n)), use_cache=True)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    for i, (lc, lk) in enumerate(zip(cache.layers, kv.layers)):
        m = spec.layers[i].mixer
        if m.index_n_heads:
            assert sum(t.numel() for t in (lc.keys, lc.values, lc.indexer_keys)) * 4 == lk.bytes_per_token * n
            assert lk.state_bytes == 0
        else:
            gdn, (conv, rec) = m.inner, m.state_elements()
            assert lc.recurrent_states[0].numel() == rec
            assert lc.conv_states[0].numel() == gdn.conv_dim * gdn.conv_kernel
            ple = lc.conv_states[1].numel() if 1 in lc.conv_states else 0
            assert ple == m.ple_conv_elements() > 0
            assert conv == gdn.conv_dim * (gdn.conv_kernel - 1) + ple and lk.state_bytes == 4 * (conv + rec)
    assert picked[0][0, 0].sum(-1).tolist() == [min((p + 1) // 4, 2) * 4 + (p + 1) % 4 for p in range(n)]


def test_qwen4_exp_decode_attends_the_selected_tokens():
    """Attention FLOPs over QSA's selection (a sparse kernel's): 8 heads x 2 x (32 + 32) per selected key; the
    indexer scores every complete block with its 4 heads x 16."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.mixers.hyper_block import qsa_keys
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    def sel(v: int, r: int, t: int) -> int:
        return min(v // r, t) * r + v % r

    for r, t in ((4, 2), (8, 1), (3, 5)):
        for c in (0, 1, 7, 8, 9, 40):
            for new in (1, 5, 33):
                assert qsa_keys(c, new, r, t) == sum(sel(p + 1, r, t) for p in range(c, c + new))
    spec = parse_config(CASES["qwen4_exp_text"])
    fmt, _ = weight_format(spec, "bf16")
    for c in (2, 7, 100, 1001):
        ops = step_ops(spec, fmt, get_dtype("bf16"), batch=1, new_tokens=1, cached_tokens=c)
        assert {o.layer: o.flops for o in ops if o.name == "attention"} == {3: 8 * 2 * 64 * sel(c + 1, 4, 2)}
        assert [o.flops for o in ops if o.name == "indexer.scores"] == [2 * ((c + 1) // 4) * 4 * 16]
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 2 * (2 * 2 * 32 + 16)  # one indexed layer: K, V (2 heads x 32), the raw key


def test_qwen4_exp_refuses_what_transformers_does_not_build():
    """Without the QSA fields (the class defaults) transformers' indexer does not build; RoPE wider than the
    indexer head and PLE on an attention layer are refused by its config. Linear layers alone need no indexer."""
    from planner.analysis.errors import ConfigError

    bare = {k: v for k, v in QWEN4_EXP.items() if not k.startswith("indexer_")}
    with pytest.raises(ConfigError, match="indexer_n_heads' is required: transformers builds a QSA indexer"):
        parse_config(bare)
    with pytest.raises(ConfigError, match="indexer_head_dim"):
        parse_config(dict(QWEN4_EXP, rope_parameters={"rope_type": "default", "rope_theta": 1e6}))
    with pytest.raises(ConfigError, match="ple_layer_ids.*layer 2"):
        parse_config(dict(QWEN4_EXP_PLE, ple_layer_ids=[2]))
    assert parse_config(dict(bare, layer_types=["linear_attention"] * 4)).layers[3].kind == "gated_deltanet+moe"


_TOPK_KEYS = ("num_experts_per_tok", "moe_k", "moe_topk", "experts_per_token", "num_experts_per_token", "top_k",
              "moe_top_k", "num_selected_experts")


def _moe_cases() -> list[str]:
    from planner.analysis.spec import MoE

    out = []
    for name, cfg in CASES.items():
        try:
            spec = parse_config({k: v for k, v in cfg.items() if v is not None})
        except Exception:  # (a case transformers builds but another test expects us to refuse)
            continue
        moes = [layer.ffn for layer in spec.layers if isinstance(layer.ffn, MoE)]
        if moes and any(cfg.get(k) == moes[0].num_experts_per_tok for k in _TOPK_KEYS):
            out.append(name)
    return out


@pytest.mark.parametrize("name", _moe_cases())
def test_more_experts_per_token_than_experts_is_refused(name):
    """Every MoE family, whatever its builder checks: a config routing each token to more experts than it has is
    one config error (before, DeepSeek-V4's builder let it through and reported more active parameters than total)."""
    from planner.analysis.errors import ConfigError
    from planner.analysis.spec import MoE

    cfg = {k: v for k, v in CASES[name].items() if v is not None}
    n = max(layer.ffn.num_experts for layer in parse_config(cfg).layers if isinstance(layer.ffn, MoE))
    key = next(k for k in _TOPK_KEYS if k in cfg and isinstance(cfg[k], int) and not isinstance(cfg[k], bool))
    with pytest.raises(ConfigError, match="exceeds|must be|between 1 and"):
        parse_config(dict(cfg, **{key: n + 1}))


@pytest.mark.parametrize("cfg", [
    {"model_type": "gemma4_assistant", "backbone_hidden_size": 64, "text_config": dict(BASE, model_type="gemma4_text")},
], ids=lambda c: c["model_type"])
def test_refused_wrappers_are_refused_by_their_own_name(cfg):
    """A wrapper we refuse is not read as its text_config (the Gemma 4 drafter's text model alone would be planned
    with a KV cache it does not have)."""
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=f"model_type '{cfg['model_type']}'"):
        parse_config(cfg)


# ---- xLSTM (mLSTM blocks) ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["xlstm", "xlstm-bias-blocks"])  # (transformers cannot initialise a fused one)
def test_xlstm_state_and_decode_flops_equal_transformers(name):
    """transformers' xLSTMCache after a 5-token prefill: per layer C (H, dk, dv), n (H, dk) and m (H, 1), exactly
    our state bytes in fp32 and nothing per token; FlopCounterMode over its decode step (the recurrent step
    kernel): its ``aten.mm`` / ``aten.addmm`` are our matmuls (projections, gates, FFN, lm_head), its ``aten.bmm``
    our mLSTM cell (k vᵀ, q·C and q·n), and nothing else is counted."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 5
    torch, model, cache = _hf_prefill(cfg, n, low=2)
    with torch.no_grad():
        layers = kv_cache(spec, fp32, fp32).layers
        assert len(layers) == len(model.backbone.blocks)
        for i, lk in enumerate(layers):
            m = spec.layers[i].mixer
            c, nn_, mm = cache.rnn_state[i]
            assert c.shape == (1, m.num_heads, m.head_k_dim, m.head_v_dim) and mm.shape == (1, m.num_heads, 1)
            assert (lk.bytes_per_token, lk.state_bytes) == (0, 4 * (c.numel() + nn_.numel() + mm.numel()))
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=2, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    assert hf.get("aten.mm", 0) + hf.get("aten.addmm", 0) == sum(o.flops for o in ops if o.kind == "matmul")
    assert hf["aten.bmm"] == sum(o.flops for o in ops if o.kind == "scan")
    assert sum(hf.values()) == sum(o.flops for o in ops)


def test_xlstm_7b_by_hand():
    """xLSTM-7B (transformers' class defaults): 32 blocks of 4096, 8 heads of q/k 256 and v 512, FFN 10944 (4096 x
    2.667 rounded up to 64); per sequence 32 x 8 x (256·512 + 256 + 1) state elements, no KV per token."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config({"model_type": "xlstm", "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 50304})
    h, v = 4096, 50304
    block = 2 * h * 2048 + 2 * h * 4096 + 2 * (8 * h + 8) + 4096 + h * 4096 + 3 * h * 10944 + 2 * h
    assert count_params(spec).total == 2 * v * h + 32 * block + h == 6_865_424_896
    cache = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert cache.bytes_per_token == 0 and cache.state_bytes_per_sequence == 2 * 32 * 8 * (256 * 512 + 256 + 1)


@pytest.mark.parametrize("name", ["xlstm", "xlstm-fused-bias-blocks-tied", "xlstm-bias-blocks", "rwkv",
                                  "rwkv-att-inter-tied"])
def test_recurrent_trace_reads_weights_once_and_its_state_per_step(name):
    """xLSTM and RWKV-4: a decode step reads every tensor once (the embedding one row per token; a tied head the
    whole embedding) and the state once, writes it once; a fresh prompt only writes it; the scan's (mLSTM cell's,
    WKV's) FLOPs grow linearly with the prompt."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES[name])
    fmt, _ = weight_format(spec)
    per_seq = kv_cache(spec, get_dtype("bf16"), fmt.act).state_bytes_per_sequence
    emb = spec.embedding_tensors()
    if name.startswith("xlstm"):
        assert not spec.tie_word_embeddings  # (xLSTMForCausalLM never ties, whatever the flag)
    ops = step_ops(spec, fmt, get_dtype("bf16"), batch=1, new_tokens=1, cached_tokens=7)
    once = fmt.bytes_of(spec.tensors()) - fmt.bytes_of(emb) + fmt.bytes_of(emb) // emb[0].shape[0]
    if spec.tie_word_embeddings:  # a tied head reads the whole embedding as its weight
        once += fmt.bytes_of(emb)
    assert sum(o.weight_bytes for o in ops) == once
    ops = step_ops(spec, fmt, get_dtype("bf16"), batch=3, new_tokens=1, cached_tokens=7)
    assert sum(o.state_read_bytes for o in ops) == sum(o.state_write_bytes for o in ops) == 3 * per_seq > 0
    prefill = step_ops(spec, fmt, get_dtype("bf16"), batch=2, new_tokens=9, cached_tokens=0)
    assert sum(o.state_read_bytes for o in prefill) == 0 and sum(o.state_write_bytes for o in prefill) == 2 * per_seq
    one = step_ops(spec, fmt, get_dtype("bf16"), new_tokens=1)
    nine = step_ops(spec, fmt, get_dtype("bf16"), new_tokens=9)
    assert all(b.flops == 9 * a.flops for a, b in zip(one, nine) if a.kind == "scan")


@pytest.mark.parametrize("change,field", [({"embedding_dim": 64}, "embedding_dim"), ({"num_heads": 3}, "qk_dim_factor"),
                                          ({"weight_mode": "mixed"}, "weight_mode"),
                                          # (found by fuzzing: int(hidden x 1e308) raised OverflowError)
                                          ({"qk_dim_factor": 1e308}, "qk_dim_factor"),
                                          ({"ffn_proj_factor": 1e308}, "ffn_proj_factor")])
def test_xlstm_refuses_what_transformers_cannot_build(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["xlstm"], **change))


@pytest.mark.parametrize("field,value", [("compress_rates", 2), ("compress_rates", ["full_attention"]),
                                         ("compress_ratios", [0, None, 128, 4]),
                                         ("compress_ratios", [["full_attention"], 4, 128, 4])])
def test_deepseek_v4_malformed_compression_fields_are_config_errors(field, value):
    """(found by fuzzing: a list or null among compress_ratios, a non-object compress_rates raised TypeError /
    KeyError inside the reader)"""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["deepseek_v4-compress_ratios-tied"], **{field: value}))


@pytest.mark.parametrize("name", ["xlstm-fused-bias-blocks-tied", "xlstm-bias-blocks", "rwkv", "rwkv-att-inter-tied"])
def test_recurrent_checkpoint_names_map_onto_ours(name):
    """transformers' parameter names (xLSTM: backbone.blocks.N.mlstm_layer / norm_mlstm / ffn ...; RWKV-4:
    rwkv.blocks.N.attention / feed_forward, blocks.0.pre_ln, ln_out, head) through the spec's CheckpointLayout are
    exactly our tensors, with their shapes."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    from transformers import AutoConfig, AutoModelForCausalLM

    from planner.runtime.load import translate

    cfg = dict(CASES[name])
    spec = parse_config(cfg)
    mt = cfg.pop("model_type")
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(mt, **cfg))
    theirs = {n: tuple(t.shape) for hf, p in model.named_parameters() for n, _, t in translate(spec, hf, p)}
    assert theirs == {t.name: tuple(t.shape) for t in spec.tensors()}


def test_older_decoders_blocks_kv_and_heads():
    """CodeGen: GPT-J's parallel block with a fused bias-free qkv_proj (4 [q | v | k] blocks), partial RoPE on pairs,
    an untied head with a bias; GPT-NeoX Japanese: the output bias on the last layer only; GPT-1: post-LN, learned
    positions, no final norm; CTRL: a tied head with its own bias, a fixed sinusoidal table. All multi-head: K and V
    of every head cached on every layer."""
    from planner.analysis.spec import RopeStyle

    cg = parse_config(CASES["codegen-350M-mono"])
    m = cg.layers[0].mixer
    assert (m.fused_qkv, m.q_bias, m.o_bias, m.rotary_dim, m.head_dim) == (True, False, False, 32, 64)
    assert cg.layers[0].parallel and cg.lm_head_bias and not cg.tie_word_embeddings
    assert cg.numerics.rope_style == RopeStyle.PAIRS and cg.checkpoint.qkv_mp == 4
    assert analyze(cg, Options(context=2048, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token == 20 * 2 * 1024 * 2
    ja = parse_config(dict(CASES["gpt_neox_japanese-untied"], rotary_emb_base=5000))
    assert [layer.mixer.o_bias for layer in ja.layers] == [False, False, True]
    assert ja.layers[0].mixer.rotary_dim == 8 and ja.layers[0].mixer.rope_theta == 5000
    assert ja.layers[0].ffn.intermediate_size == 288 and ja.checkpoint.qkv_grouped
    gpt = parse_config(CASES["openai-gpt"])
    assert gpt.final_norm is None and gpt.position_embeddings == 512 and gpt.checkpoint.transposed
    assert {p.role for p in gpt.layers[0].norms} == {"post_mixer_residual", "post_ffn_residual"}
    assert analyze(gpt, Options(context=512, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token == 12 * 2 * 768 * 2
    ctrl = parse_config(CASES["ctrl"])
    assert ctrl.tie_word_embeddings and [t.name for t in ctrl.lm_head_tensors()] == ["lm_head.bias"]
    assert ctrl.numerics.sinusoidal_positions and ctrl.position_embeddings == 0
    assert ctrl.embedding_multiplier == 1280 ** 0.5
    assert analyze(ctrl, Options(context=512, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token == 48 * 2 * 1280 * 2


@pytest.mark.parametrize("name,change,field", [
    ("codegen-tiny-n_inner", {"tie_word_embeddings": True}, "tie_word_embeddings"),
    ("codegen-tiny-n_inner", {"rotary_dim": None}, "rotary_dim"),
    ("codegen-tiny-n_inner", {"rotary_dim": 7}, "rotary_dim"),
    ("codegen-tiny-n_inner", {"n_embd": 90, "n_head": 6}, "hidden_size"),
    ("openai-gpt-tiny-relu-untied", {"afn": "gelu_fast"}, "afn"),
])
def test_older_decoders_refuse_what_transformers_cannot_run(name, change, field):
    """A tied CodeGen head would drop its bias; a null rotary_dim (sin/cos hidden_size wide), an odd one, or a
    hidden size the 4 qkv blocks cannot split fail in transformers' forward; OpenAI GPT knows four activations."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=f"'{field}'"):
        parse_config(dict(CASES[name], **change))


def test_a_derived_width_that_is_not_positive_is_a_config_error():
    """(found by fuzzing: dots3-note's sliding rope width is swa_head_dim - swa_qk_nope_head_dim, 192 when absent; a
    small swa_head_dim gave negative KV bytes per token) The builder says which field, and every family's tensors are
    checked for non-positive dimensions after its builder."""
    from planner.analysis.errors import ConfigError

    cfg = {k: v for k, v in CASES["dots3_note_text-no-dsa-freq"].items() if k != "swa_qk_nope_head_dim"}
    with pytest.raises(ConfigError, match="swa_head_dim"):
        parse_config(cfg)


# ---- Hunyuan V3 (hy_v3) ---------------------------------------------------------------------------------------

def test_hy_v3_layout_router_and_kv_by_hand():
    """Layer 0 dense (intermediate_size), the others MoE unless mlp_layer_types says; the sigmoid router's top-k
    renormalised and scaled by router_scaling_factor (class default 2.826), its choice steered by the correction
    bias; K and V of every layer cached in full (no window): 2 x kv heads x head_dim per layer and token."""
    from planner.analysis.spec import MoE, RouterKind

    spec = parse_config(CASES["hy_v3"])
    assert [type(layer.ffn).__name__ for layer in spec.layers] == ["MLP", "MoE", "MoE", "MoE"]
    assert spec.layers[0].ffn.intermediate_size == 352
    moe = spec.layers[1].ffn
    assert (moe.num_experts, moe.num_experts_per_tok, moe.moe_intermediate_size, moe.shared_intermediate_size) == \
        (8, 2, 64, 64)
    n = spec.numerics
    assert (n.router, n.norm_topk_prob, n.routed_scaling_factor, n.score_correction_bias, n.n_group) == \
        (RouterKind.SIGMOID, True, 2.826, True, 1)
    assert parse_config(dict(CASES["hy_v3"], router_scaling_factor=1.5)).numerics.routed_scaling_factor == 1.5
    bf16 = Options(context=100, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, bf16).kv.bytes_per_token == 4 * 2 * 2 * 16 * 2
    assert analyze(parse_config(CASES["hy_v3-default-head_dim"]), bf16).kv.bytes_per_token == 4 * 2 * 2 * 128 * 2
    other = parse_config(CASES["hy_v3-mlp_layer_types-bias-tied"])
    assert [isinstance(layer.ffn, MoE) for layer in other.layers] == [True, False, True, False]
    assert other.layers[0].ffn.shared_intermediate_size == 2 * 48 and other.layers[0].ffn.shared_bias


def test_hy_v3_hy3_preview_counts_by_hand():
    """HYV3Config's defaults are Hy3-preview's geometry (published: 295B total, 21B active, 80 layers + an MTP
    layer transformers does not build): written out here term by term."""
    cfg = {"model_type": "hy_v3", "vocab_size": 120832, "hidden_size": 4096, "intermediate_size": 13312,
           "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8}
    h, v, e, k, m = 4096, 120832, 192, 8, 1536
    attention = 4096 * 64 * 128 + 2 * 4096 * 8 * 128 + 64 * 128 * 4096 + 2 * 128  # q, k, v, o, q/k norms
    common = 2 * v * h + h + 80 * (attention + 2 * h) + 3 * h * 13312  # untied head, final norm, layer 0's MLP
    moe_rest = e * h + 3 * h * m  # router, one shared expert
    p = count_params(parse_config(cfg))
    assert p.total == common + 79 * (moe_rest + e * 3 * h * m) == 295_033_528_320
    assert p.active == common + 79 * (moe_rest + k * 3 * h * m) == 20_675_715_072
    a = analyze(parse_config(cfg), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 80 * 2 * 8 * 128 * 2


HY_V3_COHERE2_MOE = ["hy_v3", "hy_v3-mlp_layer_types-bias-tied", "cohere2_moe", "cohere2_moe-prefix-shared-rms-untied",
                     "cohere2_moe-lists"]


@pytest.mark.parametrize("name", HY_V3_COHERE2_MOE)
def test_hy_v3_and_cohere2_moe_kv_and_decode_flops_equal_transformers(name):
    """transformers' own cache after a prefill shorter than the window (fp32) holds exactly our bytes per token per
    layer, and FlopCounterMode over its decode step (eager attention and experts: the k chosen experts, the
    router, the shared expert) equals the trace's FLOPs."""
    _assert_cache_and_decode_flops_equal_transformers(CASES[name])


@pytest.mark.parametrize("change,field", [
    ({"num_shared_experts": 0}, "num_shared_experts"),  # transformers would build a shared MLP of intermediate_size
    ({"num_shared_experts": None}, "num_shared_experts"),
    ({"num_experts": None}, "num_experts"),
    ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ({"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types"),
    ({"mlp_layer_types": ["dense", "sparse", "moe", "sparse"]}, "mlp_layer_types"),
    ({"moe_intermediate_size": 0}, "moe_intermediate_size"),
])
def test_hy_v3_refuses_what_transformers_does_not_build(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["hy_v3"], **change))


def test_hy_v3_all_dense_layers_need_no_experts():
    """mlp_layer_types all dense: transformers builds no MoE, so num_experts may be null."""
    spec = parse_config(dict(CASES["hy_v3"], num_experts=None, mlp_layer_types=["dense"] * 4))
    assert count_params(spec).total == hf_param_count(dict(CASES["hy_v3"], num_experts=None,
                                                           mlp_layer_types=["dense"] * 4))


# ---- JetMoE: mixture of attention heads + MoE ----------------------------------------------------------------

JETMOE = ["jetmoe", "jetmoe-untied-top3-wide"]


@pytest.mark.parametrize("name", JETMOE)
def test_jetmoe_total_and_active_equal_transformers(name):
    """Active: transformers' parameters with every JetMoeParallelExperts weight (E, out, in) — the attention's
    query / output experts and the MoE's input / output experts — counted top-k / E; the shared kv_proj, both
    routers and both output biases in full."""
    from tests.oracle import hf_model

    cfg = CASES[name]
    k, e = cfg["num_experts_per_tok"], cfg["num_local_experts"]
    seen, active, routed = set(), 0, 0
    for n, p in hf_model(cfg).named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if n.endswith(("input_linear.weight", "output_linear.weight")):
            assert p.dim() == 3 and p.shape[0] == e
            active += p.numel() // e * k
            routed += 1
        else:
            active += p.numel()
    assert routed == 4 * cfg["num_hidden_layers"]
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), active)


def test_jetmoe_8b_counts_and_kv_by_hand():
    """JetMoE-8B's shape (24 layers, hidden 2048, 16 KV heads of 128, 8 experts top-2 in both mixtures, SwiGLU
    5632, tied 32000 vocabulary): per layer the attention experts 8 x 2 x 2048 x 2048, the shared kv_proj
    2 x 2048 x 2048, both routers 8 x 2048, both output biases and norms 2048 each; active uses 2 of 8 experts.
    KV: the shared K and V only, 16 x 128 x 2 per token and layer (32 query heads attend them)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = {"model_type": "jetmoe", "hidden_size": 2048, "num_hidden_layers": 24, "num_key_value_heads": 16,
           "kv_channels": 128, "intermediate_size": 5632, "num_local_experts": 8, "num_experts_per_tok": 2,
           "vocab_size": 32000, "tie_word_embeddings": True}
    h, inter = 2048, 5632
    moa, kv, moe = 8 * 2 * h * h, 2 * h * h, 8 * 3 * h * inter
    small = 2 * 8 * h + 2 * h + 2 * h  # routers, output biases, norms
    total = 24 * (moa + kv + moe + small) + 32000 * h + h
    active = 24 * (moa // 4 + kv + moe // 4 + small) + 32000 * h + h
    spec = parse_config(cfg)
    p = count_params(spec)
    assert (p.total, p.active) == (total, active)
    assert (total, active) == (8_522_237_952, 2_331_445_248)  # the model card's rounded "8B total, 2.2B active"
    m = spec.layers[0].mixer
    assert (m.num_attention_heads, m.num_key_value_heads, m.head_dim) == (32, 16, 128)
    bf16 = get_dtype("bf16")
    assert kv_cache(spec, bf16, bf16).bytes_per_token == 24 * 16 * 128 * 2 * 2


@pytest.mark.parametrize("name", JETMOE)
def test_jetmoe_kv_and_decode_flops_equal_transformers(name):
    """transformers' own cache after a prefill holds exactly our bytes per token per layer (kv_proj's K and V,
    before transformers repeats them for the top-k slots), and FlopCounterMode over a decode step (eager) equals
    the trace's FLOPs: both routers, only the top-k query / output / MoE experts, the shared kv_proj, the
    attention of top_k x kv_heads query heads, the LM head."""
    cfg = CASES[name]
    per_layer = _assert_cache_and_decode_flops_equal_transformers(cfg)
    assert per_layer[0] == 2 * cfg["num_key_value_heads"] * cfg["kv_channels"] * 4


def test_jetmoe_refuses_what_transformers_does_not_build():
    """More experts per token than experts: JetMoeConfig raises; so do we, naming the field."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        parse_config(dict(CASES["jetmoe"], num_experts_per_tok=5))


# ---- RecurrentGemma (Griffin): RG-LRU recurrent blocks and local attention ------------------------------------

RECURRENT_GEMMA = ["recurrent_gemma", "recurrent_gemma-wide-lru-gqa-bias-untied"]


@pytest.mark.parametrize("name", RECURRENT_GEMMA)
def test_recurrent_gemma_cache_and_decode_flops_equal_transformers(name):
    """transformers' cache after a 12-token prefill (fp32, window 8): the attention layers' DynamicSlidingWindowLayer
    keeps window - 1 tokens of K and V, our bytes per token each; the recurrent blocks keep (module state, not the
    cache object) a conv window of lru_width x (conv1d_width - 1) and an lru_width recurrence, our state elements
    (in a bf16 model: the window in bf16, the recurrence in fp32, our state bytes).
    FlopCounterMode over its decode step: ``aten.mm`` / ``addmm`` are our projections, ``aten.baddbmm`` the RG-LRU's
    two block-diagonal gates, ``aten.bmm`` eager attention over the window; its decode conv and recurrence are
    elementwise there (not counted), conv taps and one multiply-add per channel here."""
    from transformers import DynamicCache
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    torch, model = _hf_text_model(cfg)
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n, window = 12, cfg["attention_window_size"]
    cache = DynamicCache(config=model.config)
    layers = kv_cache(spec, fp32, fp32).layers
    with torch.no_grad():
        model(torch.randint(3, cfg["vocab_size"], (1, n)), cache=cache, use_cache=True)
        kinds = []
        for i, (lk, block) in enumerate(zip(layers, model.model.layers)):
            tb = block.temporal_block
            if hasattr(tb, "rg_lru"):
                kinds.append("r")
                conv, rec = tb.conv1d_state.numel(), tb.rg_lru.recurrent_states.numel()
                assert (lk.bytes_per_token, lk.state_bytes, lk.window) == (0, 4 * (conv + rec), None)
                assert (conv, rec) == (tb.lru_width * (tb.conv1d_width - 1), tb.lru_width)
            else:
                kinds.append("a")
                keys, values = cache.layers[i].keys, cache.layers[i].values
                assert keys.shape[2] == window - 1 == lk.window - 1
                assert lk.bytes_per_token * (window - 1) == 4 * (keys.numel() + values.numel())
                assert lk.state_bytes == 0
        types = cfg.get("block_types", ["recurrent", "recurrent", "attention"])
        assert kinds == [types[i % len(types)][0] for i in range(cfg["num_hidden_layers"])]
        # in bf16: the conv window in bf16, the recurrence still fp32 (transformers' _setup_cache)
        bf16 = get_dtype("bf16")
        model.to(torch.bfloat16)(torch.randint(3, cfg["vocab_size"], (1, n)), cache=DynamicCache(config=model.config),
                                 use_cache=True)
        held = [sum(t.numel() * t.element_size() for t in (b.temporal_block.conv1d_state,
                                                            b.temporal_block.rg_lru.recurrent_states))
                for b in model.model.layers if hasattr(b.temporal_block, "rg_lru")]
        assert held == [lk.state_bytes for lk in kv_cache(spec, bf16, bf16).layers if lk.state_bytes]
        model.to(torch.float32)
        cache = DynamicCache(config=model.config)
        model(torch.randint(3, cfg["vocab_size"], (1, n)), cache=cache, use_cache=True)
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=3, cache=cache, position_ids=torch.tensor([[n]]))
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    gates = [o for o in ops if o.name in ("input_gate", "recurrent_gate")]
    assert len(gates) == 2 * kinds.count("r")
    assert hf["aten.mm"] + hf["aten.addmm"] == sum(o.flops for o in ops if o.kind == "matmul" and o not in gates)
    assert hf["aten.baddbmm"] == sum(o.flops for o in gates)
    assert hf["aten.bmm"] == sum(o.flops for o in ops if o.kind == "attention")
    assert sum(hf.values()) == sum(o.flops for o in ops if o.kind not in ("conv", "scan"))


def test_recurrentgemma_2b_and_9b_by_hand():
    """google/recurrentgemma-2b (published config: 26 layers r, r, a; hidden 2560, lru 2560, 10 heads, MQA, MLP
    15360 / 2; vocab 256000, tied): 2.68 B (the paper's 2.7B), per token only the 8 attention layers' K and V (one
    KV head of 256), per sequence 18 x 2560 x (3 conv columns in bf16 + the recurrence in fp32); recurrentgemma-9b
    (38 layers, hidden 4096, 16 heads, MLP 24576 / 2): 8.58 B."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    def config(h, layers, heads, inter):
        return {"model_type": "recurrent_gemma", "hidden_size": h, "lru_width": h, "num_hidden_layers": layers,
                "num_attention_heads": heads, "num_key_value_heads": 1, "intermediate_size": inter,
                "vocab_size": 256000, "head_dim": 256, "attention_window_size": 2048}

    def by_hand(h, layers, heads, inter):
        recurrent = 3 * (h * h + h) + (4 * h + h) + h + 2 * (heads * (h // heads) ** 2 + h)
        attention = h * h + 2 * h * 256 + h * h + h
        mlp, norms = 3 * h * (inter // 2) + 2 * (inter // 2) + h, 2 * h
        n_att = layers // 3
        return 256000 * h + (layers - n_att) * recurrent + n_att * attention + layers * (mlp + norms) + h

    spec = parse_config(config(2560, 26, 10, 15360))
    assert count_params(spec).total == by_hand(2560, 26, 10, 15360) == 2_682_862_080
    nine = parse_config(config(4096, 38, 16, 24576))
    assert count_params(nine).total == by_hand(4096, 38, 16, 24576) == 8_579_977_216
    bf16 = get_dtype("bf16")
    cache = kv_cache(spec, bf16, bf16)
    assert cache.bytes_per_token == 8 * 2 * 256 * 2
    assert cache.state_bytes_per_sequence == 18 * (3 * 2560 * 2 + 2560 * 4)  # the recurrence in fp32, as transformers
    assert cache.bytes_per_sequence(100_000) == 8 * 2 * 256 * 2 * 2048


@pytest.mark.parametrize("change,field", [({"block_types": ["recurrent", "mamba"]}, "block_types"),
                                          ({"block_types": []}, "block_types"),
                                          ({"block_types": ["attention"], "num_hidden_layers": 101}, "block_types"),
                                          ({"lru_width": 66}, "lru_width"),
                                          ({"num_key_value_heads": 3}, "num_key_value_heads"),
                                          ({"intermediate_size": 1}, "intermediate_size"),
                                          ({"rope_parameters": {"rope_type": "linear", "factor": 2.0}},
                                           "rope_parameters")])
def test_recurrent_gemma_refuses_what_transformers_cannot_run(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["recurrent_gemma"], **change))


# ---- Persimmon, Fuyu, BioGPT ---------------------------------------------------------------------------------
# adept/persimmon-8b-base, adept/fuyu-8b (its flat config), microsoft/biogpt, microsoft/BioGPT-Large
PERSIMMON_8B = {"model_type": "persimmon", "hidden_size": 4096, "intermediate_size": 16384, "num_hidden_layers": 36,
                "num_attention_heads": 64, "vocab_size": 262144, "hidden_act": "relu2", "layer_norm_eps": 1e-5,
                "max_position_embeddings": 16384, "qk_layernorm": True, "partial_rotary_factor": 0.5,
                "rope_theta": 25000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
FUYU_8B = dict(PERSIMMON_8B, model_type="fuyu", architectures=["FuyuForCausalLM"], image_size=300, patch_size=30,
               num_channels=3, image_token_id=71011)
BIOGPT = {"model_type": "biogpt", "vocab_size": 42384, "hidden_size": 1024, "num_hidden_layers": 24,
          "num_attention_heads": 16, "intermediate_size": 4096, "hidden_act": "gelu", "max_position_embeddings": 1024,
          "layer_norm_eps": 1e-12, "scale_embedding": True}
BIOGPT_LARGE = dict(BIOGPT, vocab_size=57717, hidden_size=1600, num_hidden_layers=48, num_attention_heads=25,
                    intermediate_size=6400, max_position_embeddings=2048)


def test_persimmon_fuyu_biogpt_published_totals_by_hand():
    """Hand counts from the modeling code, independent of the builders: Persimmon-8B's 9.4B (Adept: "9.3B
    parameters"), Fuyu-8B's the same plus its patch Linear, BioGPT's 347M and BioGPT-Large's 1.57B."""
    def persimmon(h, layers, heads, inter, vocab):
        hd = h // heads
        attn = 3 * h * h + 3 * h + h * h + h + 2 * 2 * hd  # query_key_value, dense, q/k LayerNorms (weight, bias)
        mlp = h * inter + inter + inter * h + h
        return 2 * vocab * h + layers * (attn + mlp + 2 * 2 * h) + 2 * h  # untied; two LNs per block, final LN

    def biogpt(h, layers, inter, vocab, positions):
        block = 4 * (h * h + h) + h * inter + inter + inter * h + h + 2 * 2 * h
        return vocab * h + (positions + 2) * h + layers * block + 2 * h  # tied lm_head

    assert count_params(parse_config(PERSIMMON_8B)).total == persimmon(4096, 36, 64, 16384, 262144) == 9_397_175_296
    fuyu = count_params(parse_config(FUYU_8B))
    assert fuyu.total == 9_397_175_296 + 30 * 30 * 3 * 4096 + 4096 == 9_408_238_592
    assert fuyu.vision == 30 * 30 * 3 * 4096 + 4096
    assert count_params(parse_config(BIOGPT)).total == biogpt(1024, 24, 4096, 42384, 1024) == 346_763_264
    assert count_params(parse_config(BIOGPT_LARGE)).total == biogpt(1600, 48, 6400, 57717, 2048) == 1_571_188_800


@pytest.mark.parametrize("name", ["persimmon", "persimmon-no-qk-ln-tied-quarter", "fuyu-flat", "biogpt",
                                  "biogpt-untied-unscaled"])
def test_persimmon_fuyu_biogpt_kv_equals_transformers_cache(name):
    """transformers' own cache after a prefill (fp32): K and V of every head per layer and token, as ours."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES[name]
    n = 5
    _, _, cache = _hf_prefill(cfg, n)
    per_layer = _hf_cache_bytes_per_token(cache, n)
    fp32 = get_dtype("fp32")
    assert per_layer == [lk.bytes_per_token for lk in kv_cache(parse_config(cfg), fp32, fp32).layers]
    assert per_layer == [2 * cfg["hidden_size"] * 4] * cfg["num_hidden_layers"]


def test_persimmon_biogpt_numerics_follow_the_modeling_code():
    """Persimmon's rotary width is int(head_dim x 0.5) by default; BioGPT's LayerNorms run at torch's 1e-5 whatever
    layer_norm_eps says, its embedding scaled by sqrt(hidden) unless scale_embedding is off, positions at row p + 2."""
    p = parse_config(CASES["persimmon"])
    assert p.layers[0].mixer.rotary_dim == 8 and p.layers[0].mixer.qk_norm_bias
    assert parse_config(CASES["persimmon-no-qk-ln-tied-quarter"]).layers[0].mixer.rotary_dim == 4
    b = parse_config(BIOGPT)
    assert b.norm_eps == 1e-5 and b.embedding_multiplier == 32.0 and b.numerics.position_offset == 2
    assert parse_config(CASES["biogpt-untied-unscaled"]).embedding_multiplier == 1.0


@pytest.mark.parametrize("cfg,field", [
    (dict(_PERSIMMON_TINY, num_key_value_heads=2), "num_key_value_heads"),
    (dict(_PERSIMMON_TINY, num_attention_heads=5), "num_attention_heads"),
    (dict(_PERSIMMON_TINY, partial_rotary_factor=1.5), "partial_rotary_factor"),
    (dict(_PERSIMMON_TINY, qk_layernorm="yes"), "qk_layernorm"),
    (dict(_PERSIMMON_TINY, model_type="fuyu", patch_size=0), "patch_size"),
    (dict(_PERSIMMON_TINY, model_type="fuyu", num_channels="3"), "num_channels"),
    (dict(CASES["biogpt"], num_attention_heads=6), "num_attention_heads"),
    (dict(CASES["biogpt"], max_position_embeddings=-1), "max_position_embeddings"),
    (dict(CASES["biogpt"], scale_embedding="true"), "scale_embedding"),
])
def test_persimmon_fuyu_biogpt_bad_configs_are_config_errors(cfg, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(cfg)


# ---- MiMo-V2-Flash (full / sliding layers with their own KV heads and sinks, sigmoid MoE) -------------------

#: XiaomiMiMo/MiMo-V2-Flash's config.json fields that shape the model (its hybrid_layer_pattern / moe_layer_freq,
#: swa_* heads, sink flags and legacy RoPE fields included, which transformers does not read)
MIMO_V2_FLASH = {
    "model_type": "mimo_v2_flash", "vocab_size": 152576, "hidden_size": 4096, "num_hidden_layers": 48,
    "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128,
    "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128,
    "partial_rotary_factor": 0.334, "rope_theta": 5000000, "swa_rope_theta": 10000, "sliding_window": 128,
    "sliding_window_size": 128, "hybrid_layer_pattern": [0, 1, 1, 1, 1, 0] + [1, 1, 1, 1, 1, 0] * 7,
    "moe_layer_freq": [0] + [1] * 47, "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False,
    "intermediate_size": 16384, "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
    "routed_scaling_factor": None, "n_shared_experts": None, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
    "layernorm_epsilon": 1e-5, "attention_value_scale": 0.707, "max_position_embeddings": 262144,
    "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu"}
#: a small MiMo: 7 layers in the class's default layout (full 0 and 5, dense 0), 2 x 2 KV heads on sliding layers
MIMO_TINY = dict(BASE, model_type="mimo_v2_flash", num_hidden_layers=7, head_dim=24, v_head_dim=16,
                 n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, sliding_window=8)
CASES.update({
    "mimo_v2_flash": MIMO_TINY,
    # the checkpoint's own fields (consistent with the layout), biased q/k/v, tied, explicit per-layer lists
    "mimo_v2_flash-hub-fields-tied": dict(MIMO_TINY, num_hidden_layers=4, sliding_window_size=7, attention_bias=True,
                                          tie_word_embeddings=True, hybrid_layer_pattern=[0, 1, 1, 0],
                                          swa_num_key_value_heads=4, swa_head_dim=24, add_swa_attention_sink_bias=True,
                                          layer_types=["full_attention", "sliding_attention", "sliding_attention",
                                                       "full_attention"],
                                          mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                                          moe_layer_freq=[1, 0, 1, 0], n_group=4, topk_group=2),
})


def _mimo_hand(cfg: dict) -> tuple[int, int, int]:
    """(total, active, bf16 KV bytes per token summed over layers with no window cap) of a MiMo-V2-Flash config in
    the default layout, by hand: q (H x d), k (K x d), v (K x e), o (H x e -> h) per layer, twice the KV heads and
    H sinks on sliding layers; a dense SwiGLU on layer 0; E experts of 3 x h x I and an E x h router elsewhere."""
    h, n, H, K = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, e, V = cfg["head_dim"], cfg["v_head_dim"], cfg["vocab_size"]
    E, k, I = cfg["n_routed_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"]
    full = [i == 0 or (i + 1) % 6 == 0 for i in range(n)]
    total = active = 2 * V * h + h  # embedding, lm_head, final norm
    kv = 0
    for i in range(n):
        kvh = K if full[i] else 2 * K
        attn = h * H * d + h * kvh * (d + e) + H * e * h + (0 if full[i] else H) + 2 * h
        kv += kvh * (d + e) * 2
        if i == 0:
            total += attn + 3 * h * cfg["intermediate_size"]
            active += attn + 3 * h * cfg["intermediate_size"]
        else:
            total += attn + E * h + E * 3 * h * I
            active += attn + E * h + k * 3 * h * I
    return total, active, kv


@pytest.mark.parametrize("cfg", [MIMO_V2_FLASH, MIMO_TINY], ids=["published", "tiny"])
def test_mimo_v2_flash_total_active_and_kv_by_hand_and_transformers(cfg):
    """309B total / 15B active as published (308,778,768,832 / 15,445,924,288 exactly); the total is transformers'
    on meta and the active count transformers' parameters with each stacked expert tensor counted k / E; KV per
    token: 9 full layers of 4 heads x (192 + 128), 39 sliding layers of 8 (bf16)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(cfg)
    p = count_params(spec)
    total, active, kv = _mimo_hand(cfg)
    assert (p.total, p.active) == (total, active)
    assert p.total == hf_param_count(cfg) and p.active == _hf_active(cfg, cfg["num_experts_per_tok"])
    bf16 = get_dtype("bf16")
    assert sum(lk.bytes_per_token for lk in kv_cache(spec, bf16, bf16).layers) == kv
    if cfg is MIMO_V2_FLASH:
        assert (p.total, p.active, kv) == (308_778_768_832, 15_445_924_288, 9 * 2560 + 39 * 5120)
        assert {m.window for m in (layer.mixer for layer in spec.layers)} == {None, 129}  # sliding_window_size + 1


@pytest.mark.parametrize("name", ["mimo_v2_flash", "mimo_v2_flash-hub-fields-tied"])
def test_mimo_v2_flash_kv_and_decode_flops_equal_transformers(name):
    """transformers' cache after a 12-token prefill (fp32; windows of 8): K and V per token as ours, sliding layers
    holding window - 1 tokens; FlopCounterMode over its eager decode step (aten.mm / addmm / bmm) equals our matmul,
    router, expert and attention FLOPs."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES[name]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 12
    torch, model, cache = _hf_prefill(cfg, n, low=1, high=500)
    with torch.no_grad():
        for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
            lc, m = cache.layers[i], spec.layers[i].mixer
            held = lc.keys.shape[2]
            assert held == (min(n, m.window - 1) if m.window else n)
            assert lk.bytes_per_token == (lc.keys.numel() + lc.values.numel()) * 4 // held
        hf = _hf_decode_flops(torch, model, 500, low=1, cache=cache)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    hf_flops = hf["aten.mm"] + hf["aten.bmm"] + hf.get("aten.addmm", 0)  # addmm: the biased q/k/v projections
    assert hf_flops == sum(o.flops for o in ops if o.kind in ("matmul", "router", "experts", "attention"))


def test_mimo_v2_flash_numerics_follow_the_modeling_code():
    """The published config as transformers reads it: RoPE on int(192 x 0.334) = 64 channels at 5e6 (full) and 1e4
    (sliding), V scaled by 0.707, a null routed_scaling_factor read as 1.0, sigmoid routing with the correction bias;
    the MTP layers the checkpoint carries are said to be left out."""
    spec = parse_config(MIMO_V2_FLASH)
    full, sliding = spec.layers[0].mixer, spec.layers[1].mixer
    assert (full.rotary_dim, full.rope_theta, full.sinks, full.num_key_value_heads) == (64, 5e6, False, 4)
    assert (sliding.rotary_dim, sliding.rope_theta, sliding.sinks, sliding.num_key_value_heads) == (64, 1e4, True, 8)
    num = spec.numerics
    assert (num.value_scale, num.routed_scaling_factor, num.router, num.score_correction_bias) == \
        (0.707, 1.0, "sigmoid", True)
    assert spec.norm_eps == 1e-5 and not spec.tie_word_embeddings
    assert any("MTP" in c for c in spec.caveats)


@pytest.mark.parametrize("change,field", [
    (dict(hybrid_layer_pattern=[0] * 48), "hybrid_layer_pattern"),
    (dict(moe_layer_freq=[1] * 48), "moe_layer_freq"),
    (dict(swa_num_key_value_heads=4), "swa_num_key_value_heads"),
    (dict(swa_v_head_dim=192), "swa_v_head_dim"),
    (dict(add_full_attention_sink_bias=True), "add_full_attention_sink_bias"),
    (dict(n_shared_experts=1), "n_shared_experts"),
    (dict(swa_rope_theta=50000), "swa_rope_theta"),
    (dict(partial_rotary_factor=0.5), "partial_rotary_factor"),
])
def test_mimo_v2_flash_checkpoint_fields_transformers_ignores_must_agree(change, field):
    """Fields of the checkpoint transformers does not read, set to something other than what it builds: refused,
    naming the field, rather than counted as transformers' model or as the checkpoint's."""
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=f"'{field}'.*does not read it"):
        parse_config(dict(MIMO_V2_FLASH, **change))


@pytest.mark.parametrize("change,field", [
    (dict(num_key_value_heads=3), "num_key_value_heads"),
    (dict(num_key_value_heads=8, num_attention_heads=8), "num_key_value_heads"),  # sliding layers: 16 KV heads
    (dict(layer_types=["full_attention"] * 3), "layer_types"),
    (dict(layer_types=["mamba"] * 7), "layer_types"),
    (dict(mlp_layer_types=["dense", "moe"] + ["sparse"] * 5), "mlp_layer_types"),
    (dict(num_experts_per_tok=9), "num_experts_per_tok"),
    (dict(n_group=3), "n_group"),
    (dict(n_group=2, topk_group=3), "topk_group"),
    (dict(sliding_window=None), "sliding_window"),
    (dict(sliding_window_size="128"), "sliding_window_size"),
    (dict(head_dim=None), "head_dim"),
    (dict(attention_value_scale=-1.0), "attention_value_scale"),
    (dict(rope_parameters={"full_attention": {"rope_theta": 1e6}}), "rope_parameters"),
    (dict(rope_parameters={"full_attention": {"rope_theta": 1e6}, "sliding_attention": {"rope_theta": "x"}}),
     "rope_parameters"),
    (dict(hybrid_layer_pattern="yes"), "hybrid_layer_pattern"),
])
def test_mimo_v2_flash_bad_configs_are_config_errors(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(MIMO_TINY, **change))


# ---- Arcee AFMoE (Trinity) -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,windows,moe,shared", [
    ("afmoe", [64, 64, 64, None], [False, True, True, True], 2 * 64),
    ("afmoe-layer_types-bias-tied-mup", [None, 32, 32, None, 32], [False, False, True, True, True], 0),
    ("afmoe-dense-every2", [1024, None, 1024, None], [False] * 4, None),
])
def test_afmoe_layout_numerics_and_active_parameters(name, windows, moe, shared):
    """Sliding layers (the window, with RoPE) and full layers (NoPE); dense then MoE layers; every attention with its
    own bias-free gate_proj; the sigmoid router choosing by scores + expert_bias, renormalised, times route_scale;
    muP's sqrt(hidden) embedding scale. Active parameters equal transformers' with each stacked expert tensor
    counted k / E (the expert_bias, router and shared experts in full)."""
    from planner.analysis.mixers import GatedAttention
    from planner.analysis.spec import MoE, RouterKind

    cfg = CASES[name]
    spec = parse_config(cfg)
    assert [layer.mixer.window for layer in spec.layers] == windows
    assert [layer.mixer.rotary_dim > 0 for layer in spec.layers] == [w is not None for w in windows]
    assert [isinstance(layer.ffn, MoE) for layer in spec.layers] == moe
    assert all(isinstance(layer.mixer, GatedAttention) and layer.mixer.proj_gate for layer in spec.layers)
    assert spec.layers[0].mixer.head_dim == cfg.get("head_dim", 128)
    assert [p.name for p in spec.layers[0].norms] == ["input_layernorm", "post_attention_layernorm",
                                                      "pre_mlp_layernorm", "post_mlp_layernorm"]
    assert spec.embedding_multiplier == (128 ** 0.5 if cfg.get("mup_enabled") else 1.0)
    if shared is not None:
        m = next(layer.ffn for layer in spec.layers if isinstance(layer.ffn, MoE))
        assert m.shared_intermediate_size == shared and m.correction_bias_param
        assert spec.numerics.router == RouterKind.SIGMOID and spec.numerics.score_correction_bias
        assert spec.numerics.norm_topk_prob and spec.numerics.n_group == 1
        assert spec.numerics.routed_scaling_factor == cfg.get("route_scale", 1.0)
    test_moe_active_parameters_equal_transformers(name)


@pytest.mark.parametrize("name", ["afmoe", "afmoe-layer_types-bias-tied-mup"])
def test_afmoe_kv_equals_transformers_cache(name):
    """transformers' cache after a prefill shorter than the windows holds exactly our bytes per token per layer; past
    the window its sliding layers keep sliding_window - 1 tokens (the step's own key makes the window our sliding
    layers count), its full layers every token."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    fp32 = get_dtype("fp32")
    for window, n in ((None, 5), (4, 11)):
        cfg = dict(CASES[name], sliding_window=window or CASES[name]["sliding_window"])
        _, _, cache = _hf_prefill(cfg, n)
        ours = kv_cache(parse_config(cfg), fp32, fp32).layers
        kept = [lc.keys.shape[2] for lc in cache.layers]
        per_token = [(lc.keys.numel() + lc.values.numel()) * 4 // k for lc, k in zip(cache.layers, kept)]
        assert per_token == [lk.bytes_per_token for lk in ours]
        assert kept == [n if lk.window is None else min(n, lk.window - 1) for lk in ours]
        assert [lk.window for lk in ours] == [cfg["sliding_window"] if w else None
                                              for w in (layer.mixer.window for layer in parse_config(cfg).layers)]


#: arcee-ai/Trinity-Nano-Preview's config.json (as published); Trinity-Mini and Trinity-Large differ in the fields of
#: the technical report's table (arXiv:2602.17004: dims, layers, dense layers, experts, window, route scale)
TRINITY_NANO = {
    "model_type": "afmoe", "architectures": ["AfmoeForCausalLM"], "attention_dropout": 0.0, "dtype": "bfloat16",
    "global_attn_every_n_layers": 4, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 131072,
    "moe_intermediate_size": 256, "mup_enabled": True, "n_group": 1, "num_attention_heads": 8, "num_dense_layers": 2,
    "num_expert_groups": 1, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 56,
    "num_key_value_heads": 2, "num_limited_groups": 1, "num_shared_experts": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 10000, "route_norm": True, "route_scale": 2.826, "score_func": "sigmoid",
    "sliding_window": 2048, "tie_word_embeddings": False, "topk_group": 1, "use_cache": True, "use_grouped_mm": True,
    "vocab_size": 200192}
TRINITY_MINI = dict(TRINITY_NANO, hidden_size=2048, intermediate_size=6144, moe_intermediate_size=1024,
                    num_attention_heads=32, num_hidden_layers=32, num_key_value_heads=4)
TRINITY_LARGE = dict(TRINITY_NANO, hidden_size=3072, intermediate_size=12288, moe_intermediate_size=3072,
                     num_attention_heads=48, num_dense_layers=6, num_experts=256, num_experts_per_tok=4,
                     num_hidden_layers=60, num_key_value_heads=8, sliding_window=4096, route_scale=2.448)


@pytest.mark.parametrize("cfg,total,active", [(TRINITY_NANO, 6.1e9, 1.0e9), (TRINITY_MINI, 26.1e9, 3.5e9),
                                              (TRINITY_LARGE, 398.6e9, 13.4e9)], ids=["Nano", "Mini", "Large"])
def test_trinity_published_configs(cfg, total, active):
    """Totals equal transformers on meta, and the published sizes: Nano 6B total / 1B active, Mini 26B / 3B, Large
    400B / 13B (Arcee's model cards and report; active counts the embedding and the head here)."""
    p = count_params(parse_config(cfg))
    assert p.total == hf_param_count(cfg)
    assert abs(p.total - total) < 0.05e9 and abs(p.active - active) < 0.05e9


def test_trinity_large_kv_per_token_by_hand():
    """Trinity-Large: 60 layers, 15 of them full (every 4th); 8 KV heads of 128, K and V, bf16: 4096 bytes a token
    a layer; the 45 sliding layers keep at most 4096 tokens."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    bf16 = get_dtype("bf16")
    kv = kv_cache(parse_config(TRINITY_LARGE), bf16, bf16)
    assert kv.bytes_per_token == 60 * 8 * 128 * 2 * 2
    assert kv.bytes_per_sequence(131072) == 15 * 4096 * 131072 + 45 * 4096 * 4096


@pytest.mark.parametrize("change,field", [
    ({"head_dim": None}, "head_dim"),
    ({"num_dense_layers": None}, "num_dense_layers"),
    ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ({"layer_types": ["sliding_attention", "chunked_attention", "full_attention", "full_attention"]}, "layer_types"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types"),
    ({"global_attn_every_n_layers": 0}, "global_attn_every_n_layers"),
    ({"sliding_window": None}, "sliding_window"),
    ({"route_scale": None}, "route_scale"),
    ({"mup_enabled": "yes"}, "mup_enabled"),
    ({"num_shared_experts": -1}, "num_shared_experts"),
])
def test_afmoe_refuses_what_transformers_does_not_build(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["afmoe"], **change))


@pytest.mark.parametrize("name", RECURRENT_GEMMA)
def test_recurrent_gemma_trace_reads_weights_once_and_its_state_per_step(name):
    """A decode step reads every tensor once (the embedding one row per token, the whole table again as a tied head) and each recurrent
    block's state once, writes it once; a fresh prompt only writes it; attention reads at most the window."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(CASES[name])
    fmt, _ = weight_format(spec)
    bf16 = get_dtype("bf16")
    kv = kv_cache(spec, bf16, fmt.act)
    per_seq = kv.state_bytes_per_sequence
    emb = spec.embedding_tensors()
    row = fmt.bytes_of(emb) // emb[0].shape[0]
    head = fmt.bytes_of(emb) if spec.tie_word_embeddings else 0  # a tied head reads the whole table
    ops = step_ops(spec, fmt, bf16, batch=3, new_tokens=1, cached_tokens=100)
    assert sum(o.weight_bytes for o in ops) == fmt.bytes_of(spec.tensors()) - fmt.bytes_of(emb) + 3 * row + head
    assert sum(o.state_read_bytes for o in ops) == sum(o.state_write_bytes for o in ops) == 3 * per_seq > 0
    window = CASES[name]["attention_window_size"]
    assert sum(o.kv_read_bytes for o in ops if o.kind == "attention") == 3 * kv.bytes_per_token * window
    prefill = step_ops(spec, fmt, bf16, batch=2, new_tokens=9, cached_tokens=0)
    assert sum(o.state_read_bytes for o in prefill) == 0 and sum(o.state_write_bytes for o in prefill) == 2 * per_seq


# ---- Laguna and Sarvam MoE ------------------------------------------------------------------------------------------


def test_laguna_geometry_by_hand():
    """Per-layer query heads (8, 4, 6, 2) over 2 KV heads of 32; g_proj one row per head (per-element gating: one per
    output feature); full layers rope half of head_dim (base 5e5), sliding ones all of it (1e4) and keep 64 tokens;
    layer 0 dense, the rest MoE with the shared SwiGLU; the correction bias an (E,) parameter, counted."""
    spec = parse_config(CASES["laguna"])
    att = [layer.mixer for layer in spec.layers]
    assert [m.num_attention_heads for m in att] == [8, 4, 6, 2]
    assert [m.window for m in att] == [None, 64, 64, 64]
    assert [(m.rotary_dim, m.rope_theta) for m in att] == [(16, 5e5)] + [(32, 1e4)] * 3
    shapes = {t.name: t.shape for t in spec.tensors()}
    for i, h in enumerate([8, 4, 6, 2]):
        p = f"model.layers.{i}.self_attn."
        assert shapes[p + "q_proj.weight"] == (h * 32, 128) and shapes[p + "o_proj.weight"] == (128, h * 32)
        assert shapes[p + "g_proj.weight"] == (h, 128) and shapes[p + "k_proj.weight"] == (64, 128)
    assert [layer.kind.endswith("+moe") for layer in spec.layers] == [False, True, True, True]
    assert spec.layers[1].ffn.shared_intermediate_size == 40
    assert (spec.numerics.norm_topk_prob, spec.numerics.routed_scaling_factor) == (True, 1.0)
    per_elem = parse_config(CASES["laguna-per-element-bias"])
    g = {t.name: t.shape for t in per_elem.tensors()}
    assert g["model.layers.0.self_attn.g_proj.weight"] == (8 * 128, 128)  # head_dim: the class's 128, not 128 / 8
    assert [layer.kind.endswith("+moe") for layer in per_elem.layers] == [True, False, True, False]
    p = count_params(spec)
    # by hand: each MoE layer's routed experts are 8 x 3 x 128 x 48; the active count keeps 2 of the 8
    assert p.total - p.active == 3 * 6 * 3 * 128 * 48
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * 2 * 2 * 32 * 2  # per layer: K and V, 2 KV heads x 32, bf16
    assert a.kv_bytes_per_sequence == 2 * 2 * 32 * 2 * (1000 + 3 * 64)


def test_laguna_defaults_are_lagunaconfigs():
    """LagunaConfig's class defaults: head_dim 128, every layer full (half of head_dim roped at 5e5), num_attention_heads
    on every layer, gated per head, layer 0 dense."""
    spec = parse_config(CASES["laguna-defaults"])
    assert [(m.num_attention_heads, m.window, m.rotary_dim, m.rope_theta, m.gate_dim) for m in
            (layer.mixer for layer in spec.layers)] == [(8, None, 64, 5e5, 8)] * 4
    assert [layer.kind.endswith("+moe") for layer in spec.layers] == [False, True, True, True]


@pytest.mark.parametrize("name,past_window", [("laguna", 20), ("laguna-per-element-bias", 20)])
def test_laguna_kv_and_decode_flops_equal_transformers(name, past_window):
    """transformers' own cache after a prefill holds exactly our bytes per token per layer, and FlopCounterMode over
    its decode step (eager attention and experts: g_proj, the per-layer heads, the router and the routed experts)
    equals the trace's, past the 8-token window too."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = dict(CASES[name], sliding_window=8)
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 5
    torch, model, cache = _hf_prefill(cfg, n)
    with torch.no_grad():
        per_layer = _hf_cache_bytes_per_token(cache, n)
        assert per_layer == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers]
        for cached in (n, past_window):
            if cached > n:  # the first decode step cached one more token
                model(torch.randint(0, cfg["vocab_size"], (1, cached - n - 1)), cache=cache, use_cache=True)
            hf = _hf_decode_flops(torch, model, cfg["vocab_size"], cache=cache)
            fmt, _ = weight_format(spec, "fp32")
            want = sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=cached))
            assert sum(hf.values()) == want


@pytest.mark.parametrize("change,error", [
    ({"num_attention_heads_per_layer": [8, 3, 6, 2]}, "layer 1 3 query heads, not a multiple"),
    ({"num_attention_heads_per_layer": [8, 4]}, "num_attention_heads_per_layer"),
    ({"gating": "per-channel"}, "'gating' is"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, "keyed by layer type"),
    ({"rope_parameters": {"full_attention": {"rope_theta": 1e4}}}, "no entry for sliding_attention"),
    ({"rope_parameters": {"full_attention": {"rope_theta": 1e4}, "sliding_attention": {"rope_theta": 1e4,
                                                                                       "partial_rotary_factor": 2}}},
     "partial_rotary_factor"),
    ({"layer_types": ["full_attention", "linear_attention", "full_attention", "full_attention"]}, "layer_types"),
    ({"sliding_window": None}, "sliding_window"),
    ({"num_experts_per_tok": 9}, "exceeds num_experts"),
])
def test_laguna_bad_configs_are_clear_config_errors(change, error):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=error):
        parse_config(dict(CASES["laguna"], **change))


def test_laguna_router_weight_on_input_is_refused():
    """LagunaConfig raises NotImplementedError for it: refused by name, not miscounted."""
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match="moe_apply_router_weight_on_input"):
        parse_config(dict(CASES["laguna"], moe_apply_router_weight_on_input=True))


def test_sarvam_moe_reads_glm4_moe_with_sarvams_defaults_and_names():
    """SarvamMoEConfig: RoPE over the whole head unless partial_rotary_factor says otherwise (GLM-4.5: half), per-head
    q/k norms on by default, head_dim 64, routed_scaling_factor 2.5; the original names (num_experts,
    num_shared_experts, use_qkv_bias) read as n_routed_experts, n_shared_experts, attention_bias; layers from
    first_k_dense_replace MoE; the KV cache that of 2 KV heads per layer."""
    spec = parse_config(CASES["sarvam_moe"])
    att = spec.layers[0].mixer
    assert (att.head_dim, att.rotary_dim, att.q_norm_dim, att.q_bias, att.o_bias) == (32, 32, 32, True, False)
    assert [layer.kind.endswith("+moe") for layer in spec.layers] == [False, False, True, True]
    moe = spec.layers[2].ffn
    assert (moe.num_experts, moe.shared_intermediate_size) == (8, 2 * 48)
    assert (spec.numerics.routed_scaling_factor, spec.numerics.router.value) == (2.5, "sigmoid")
    same = dict(CASES["sarvam_moe"], n_routed_experts=8, n_shared_experts=2, attention_bias=True)
    for k in ("num_experts", "num_shared_experts", "use_qkv_bias"):
        del same[k]
    assert count_params(parse_config(same)) == count_params(spec)
    d = parse_config(CASES["sarvam_moe-defaults"]).layers[0].mixer
    assert (d.head_dim, d.rotary_dim, d.q_norm_dim) == (64, 64, 64)
    p = parse_config(CASES["sarvam_moe-no-qk-norm-partial"]).layers[0].mixer
    assert (p.rotary_dim, p.q_norm_dim) == (32, 0)
    a = analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 4 * 2 * 2 * 32 * 2


# ---- DiffLlama: differential attention -----------------------------------------------------------------------

DIFFLLAMA = ["diffllama", "diffllama-gqa-headdim-bias-tied"]


def test_diffllama_lambdas_by_hand():
    """Llama's tensors plus lambda_q1 / k1 / q2 / k2 (head_dim each) per layer; the group norm has no weight."""
    cfg = CASES["diffllama-gqa-headdim-bias-tied"]
    llama = count_params(parse_config(dict(cfg, model_type="llama", mlp_bias=False))).total
    assert count_params(parse_config(cfg)).total == llama + 3 * 4 * 12


@pytest.mark.parametrize("name", DIFFLLAMA)
def test_diffllama_kv_and_decode_flops_equal_transformers(name):
    """transformers' own cache holds Llama's K and V per token and layer; FlopCounterMode over a decode step (eager)
    equals the trace: the attention as transformers' two calls (scores twice, each half of V once per call)."""
    _assert_cache_and_decode_flops_equal_transformers(CASES[name], n=6)


@pytest.mark.parametrize("change,field", [({"num_key_value_heads": 1}, "num_key_value_heads"),
                                          ({"num_attention_heads": 3, "head_dim": 16}, "num_key_value_heads"),
                                          ({"attention_dropout": 0.1}, "attention_dropout")])
def test_diffllama_refuses_what_transformers_does_not_build(change, field):
    """An odd number of KV heads (the value heads split in halves) or attention dropout: DiffLlamaAttention
    raises; so do we, naming the field."""
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["diffllama"], **change))


# ---- Cohere 2 MoE (cohere2_moe) -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,ffn,windows,rope", [
    # default layer_types: 3 sliding (RoPE) : 1 full (NoPE); every layer MoE
    ("cohere2_moe", ["MoE"] * 4, [64, 64, 64, None], [16, 16, 16, 0]),
    # first_k_dense_replace 1: the dense prefix layer full at prefix pattern 1 with RoPE forced, then the pattern
    # restarts (layers 1-3 are its first three: sliding)
    ("cohere2_moe-prefix-shared-rms-untied", ["MLP", "MoE", "MoE", "MoE"], [None, 64, 64, 64], [128, 128, 128, 128]),
    # explicit lists, prefix pattern 2: no forced RoPE, so the full dense layer 1 is NoPE
    ("cohere2_moe-lists", ["MLP", "MLP", "MoE", "MoE"], [64, None, None, 64], [24, 0, 0, 24]),
])
def test_cohere2_moe_layout_windows_and_rope(name, ffn, windows, rope):
    spec = parse_config(CASES[name])
    assert [type(layer.ffn).__name__ for layer in spec.layers] == ffn
    assert [layer.mixer.window for layer in spec.layers] == windows
    assert [layer.mixer.rotary_dim for layer in spec.layers] == rope
    assert all(layer.parallel and len(layer.norms) == 1 for layer in spec.layers)


def test_cohere2_moe_experts_router_norms_and_kv_by_hand():
    """Experts (and shared experts) are intermediate_size wide, the dense prefix prefix_dense_intermediate_size;
    softmax over the top-k logits (or their sigmoids, renormalised by norm_topk_prob); the shared expert averaged
    in by default; RMSNorms only with rms_norm_eps; sliding layers cache sliding_window tokens."""
    from planner.analysis.spec import NormKind, RouterKind

    spec = parse_config(CASES["cohere2_moe"])
    moe = spec.layers[0].ffn
    assert (moe.num_experts, moe.num_experts_per_tok, moe.moe_intermediate_size, moe.shared_intermediate_size) == \
        (8, 2, 352, 0)
    assert (spec.numerics.router, spec.numerics.logit_scale, spec.final_norm.kind, spec.tie_word_embeddings) == \
        (RouterKind.TOPK_SOFTMAX, 0.0625, NormKind.LAYER, True)
    other = parse_config(CASES["cohere2_moe-prefix-shared-rms-untied"])
    assert other.layers[0].ffn.intermediate_size == 200
    assert (other.layers[1].ffn.shared_intermediate_size, other.layers[1].ffn.shared_average) == (2 * 352, False)
    assert (other.numerics.router, other.numerics.norm_topk_prob, other.final_norm.kind) == \
        (RouterKind.LOGIT_SIGMOID, True, NormKind.RMS)
    assert parse_config(CASES["cohere2_moe-lists"]).layers[2].ffn.shared_average
    a = analyze(spec, Options(context=1000, dtype="bf16", kv_dtype="bf16"))
    per_layer = 2 * 2 * 16 * 2  # K and V, 2 KV heads of 16, bf16
    assert a.kv.bytes_per_token == 4 * per_layer
    assert a.kv_bytes_per_sequence == 3 * per_layer * 64 + per_layer * 1000


#: North-Mini-Code-1.0's geometry (as an MLX port of it reads the checkpoint): 49 layers, layer 0 dense, 128
#: sigmoid-routed experts of 768, top-8, no shared expert, 3 sliding : 1 full
NORTH_MINI = {"model_type": "cohere2_moe", "hidden_size": 2048, "head_dim": 128, "num_hidden_layers": 49,
              "intermediate_size": 768, "prefix_dense_intermediate_size": 3072, "num_attention_heads": 32,
              "num_key_value_heads": 4, "vocab_size": 262144, "rope_theta": 50000.0, "rms_norm_eps": 1e-06,
              "logit_scale": 1.0, "sliding_window": 4096, "max_position_embeddings": 500000,
              "tie_word_embeddings": True, "num_experts": 128, "num_experts_per_tok": 8, "num_shared_experts": 0,
              "norm_topk_prob": False, "first_k_dense_replace": 1, "expert_selection_fn": "sigmoid"}


def test_cohere2_moe_north_mini_counts_by_hand_and_equal_transformers():
    h, v, e, k, m = 2048, 262144, 128, 8, 768
    attention = 2 * h * 32 * 128 + 2 * h * 4 * 128  # q, o; k, v (no biases)
    common = v * h + h + 49 * (attention + h) + 3 * h * 3072  # tied embedding, final norm, one norm a layer, layer 0
    p = count_params(parse_config(NORTH_MINI))
    assert p.total == common + 48 * (e * h + e * 3 * h * m) == hf_param_count(NORTH_MINI) == 30_484_303_872
    assert p.active == common + 48 * (e * h + k * 3 * h * m) == 3_305_213_952


@pytest.mark.parametrize("change,field", [
    ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ({"num_shared_experts": 1, "shared_expert_combination_strategy": "max"}, "shared_expert_combination_strategy"),
    ({"expert_selection_fn": "relu"}, "expert_selection_fn"),
    ({"layer_types": ["sliding_attention"] * 3}, "layer_types"),
    ({"layer_types": ["chunked_attention"] * 4}, "layer_types"),
    ({"mlp_layer_types": ["dense", "moe", "sparse", "sparse"]}, "mlp_layer_types"),
    ({"first_k_dense_replace": 5}, "first_k_dense_replace"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
])
def test_cohere2_moe_refuses_what_transformers_does_not_build(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["cohere2_moe"], **change))


def test_jetmoe_tensor_parallel_split_and_refusal():
    """Over tp ranks every attention expert's heads split with the KV heads (k/v projections too); the two routers,
    the two output biases and the norms stay whole on every rank. A tp that does not divide the KV heads is
    refused, naming JetMoE."""
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import shard_params, tp_plan

    cfg = CASES["jetmoe"]  # hidden 64, 2 layers, 4 KV heads of 16, 4 experts, SwiGLU 96, vocab 300 (tied)
    spec = parse_config(cfg)
    h, e = 64, 4
    whole = 2 * (2 * e * h + 2 * h + 2 * h) + h  # routers, output biases, layer norms; the final norm
    split = count_params(spec).total - whole
    assert shard_params(spec, tp_plan(spec, 2)) == whole + split // 2
    with pytest.raises(OptionError, match="JetMoE's 4 KV heads"):
        tp_plan(spec, 8)


# ---- Aria and XGLM -------------------------------------------------------------------------------------

#: rhymes-ai/Aria's config.json (transformers' AriaForConditionalGeneration layout), its routing and geometry fields
ARIA = {"model_type": "aria", "projector_patch_to_query_dict": {"1225": 128, "4900": 256}, "image_token_index": 9,
        "text_config": {"model_type": "aria_text", "hidden_size": 2560, "intermediate_size": 1664,
                        "max_position_embeddings": 65536, "moe_num_experts": 64, "moe_num_shared_experts": 2,
                        "moe_topk": 6, "num_attention_heads": 20, "num_hidden_layers": 28, "num_key_value_heads": 20,
                        "rope_theta": 5000000, "vocab_size": 100352, "pad_token_id": 2},
        "vision_config": {"model_type": "idefics3_vision", "hidden_size": 1152, "image_size": 980,
                          "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14},
        "torch_dtype": "bfloat16"}
#: facebook/xglm-7.5B's config.json (its shape fields)
XGLM_7B5 = {"model_type": "xglm", "activation_function": "gelu", "attention_heads": 32, "d_model": 4096,
            "ffn_dim": 16384, "max_position_embeddings": 2048, "num_layers": 32, "pad_token_id": 1,
            "scale_embedding": True, "vocab_size": 256008, "torch_dtype": "float16"}


@pytest.mark.parametrize("name", ["aria_text", "aria_text-bias-head_dim-tied"])
def test_aria_active_parameters_equal_transformers(name):
    """Active: transformers' parameters with each layer's stacked (E, ...) expert tensors counted moe_topk / E; the
    router and the shared MLP in full."""
    from tests.oracle import hf_model

    cfg = CASES[name]
    seen, active = set(), 0
    for n, p in hf_model(cfg).named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        active += p.numel() // p.shape[0] * cfg["moe_topk"] if ".experts." in n and p.dim() == 3 else p.numel()
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == (hf_param_count(cfg), active)


def test_aria_published_counts_by_hand():
    """rhymes-ai/Aria: 25.3B in all (the published figure); per token the attention, 6 of 64 experts, the shared MLP
    (2 x 1664 wide), the router, the norms, embedding and untied lm_head, and (the planner's convention) the
    vision tower and projector. Text-only active without embedding and head: ~3.6B (published: 3.5B per text
    token)."""
    h, i, e, k, L, v = 2560, 1664, 64, 6, 28, 100352
    vh, vi, vl, side = 1152, 4304, 27, 980 // 14
    attn, norms, router, expert, shared = 4 * h * h, 2 * h, e * h, 3 * h * i, 3 * h * 2 * i
    block = 2 * vh + 4 * (vh * vh + vh) + 2 * vh + vi * vh + vi + vh * vi + vh
    tower = vh * 3 * 14 * 14 + vh + side * side * vh + vl * block + 2 * vh
    projector = 256 * vh + 3 * vh * vh + (3 * vh * vh + 3 * vh) + 2 * (vh * vh + vh) + 3 * 2 * vh + vh * h + h * h
    common = 2 * v * h + h + tower + projector
    p = count_params(parse_config(ARIA))
    assert p.vision == tower + projector
    assert p.total == common + L * (attn + norms + router + e * expert + shared) == hf_param_count(ARIA) \
        == 25_307_311_216
    assert p.active == common + L * (attn + norms + router + k * expert + shared)
    assert round((p.active - p.vision - 2 * v * h) / 1e9, 1) == 3.6


@pytest.mark.parametrize("name", ["aria_text-bias-head_dim-tied", "xglm", "xglm-standard-names-untied-unscaled"])
def test_aria_and_xglm_kv_equal_transformers_cache(name):
    """transformers' own cache after a prefill (fp32) holds exactly our bytes per token per layer (Aria: GQA K and V
    of head_dim; XGLM: K and V of every head, hidden / heads wide)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES[name]
    n = 5
    _, _, cache = _hf_prefill(cfg, n, low=3)
    per_layer = _hf_cache_bytes_per_token(cache, n)
    fp32 = get_dtype("fp32")
    assert per_layer == [lk.bytes_per_token for lk in kv_cache(parse_config(cfg), fp32, fp32).layers]


def test_xglm_positions_scale_and_published_total():
    """XGLM: no position parameters (a fixed fairseq table, row p + 2, the pad row zeroed), the embedding scaled by
    sqrt(d_model) unless scale_embedding is false; facebook/xglm-7.5B counts 7.49B, as published (7.5B)."""
    spec = parse_config(CASES["xglm"])
    num = spec.numerics
    assert (spec.position_embeddings, num.sinusoidal_positions, num.sinusoid_fairseq, num.position_offset) == \
        (0, True, True, 2)
    assert spec.embedding_multiplier == 8.0
    assert parse_config(CASES["xglm-standard-names-untied-unscaled"]).embedding_multiplier == 1.0
    h, f, L, v = 4096, 16384, 32, 256008
    layer = 4 * (h * h + h) + 2 * (2 * h) + (f * h + f) + (h * f + h)
    p = count_params(parse_config(XGLM_7B5))
    assert p.total == v * h + L * layer + 2 * h == hf_param_count(XGLM_7B5) == 7_492_771_840


@pytest.mark.parametrize("cfg,error,field", [
    (dict(CASES["aria_text"], hidden_act="gelu"), "UnsupportedModelError", "hidden_act"),
    (dict(CASES["aria_text"], moe_topk=9), "ConfigError", "moe_topk"),
    (dict(CASES["aria_text"], moe_num_experts=0), "ConfigError", "moe_num_experts"),
    (dict(WRAPPERS["aria"], vision_config={"model_type": "siglip_vision_model"}), "UnsupportedModelError",
     "siglip_vision_model"),
    (dict(WRAPPERS["aria"], projector_patch_to_query_dict={"16": 0}), "ConfigError", "projector_patch_to_query_dict"),
    (dict(WRAPPERS["aria"], projector_patch_to_query_dict={}), "ConfigError", "projector_patch_to_query_dict"),
    (dict(WRAPPERS["aria"], vision_config=dict(WRAPPERS["aria"]["vision_config"], patch_size=64)), "ConfigError",
     "patch_size"),
    (dict(CASES["xglm"], add_cross_attention=True), "UnsupportedModelError", "add_cross_attention"),
    (dict(CASES["xglm"], attention_heads=5), "ConfigError", "attention_heads"),
    (dict(CASES["xglm"], d_model="64"), "ConfigError", "d_model"),
    (dict(CASES["xglm"], d_model=3, attention_heads=1), "ConfigError", "d_model"),  # transformers: ZeroDivisionError
])
def test_aria_and_xglm_refuse_what_transformers_does_not_build(cfg, error, field):
    from planner.analysis import errors

    with pytest.raises(getattr(errors, error), match=field):
        parse_config(cfg)


# ---- RWKV-4 (time-mix and channel-mix blocks) ------------------------------------------------------


def test_rwkv_state_and_decode_flops_equal_transformers():
    """transformers' RWKV state after a 5-token bf16 prefill: five (batch, hidden, layers) tensors, the two shifted
    tokens in the model's dtype and the WKV numerator / denominator / max in fp32, exactly our state bytes per
    layer, nothing per token; FlopCounterMode over its decode step counts only matmuls (projections, channel-mix,
    head): our matmul FLOPs; the WKV scan is 8 FLOPs per channel per layer by our convention (4 multiply-adds)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES["rwkv"]
    torch, model = _hf_text_model(cfg)
    model = model.to(torch.bfloat16)
    spec = parse_config(cfg)
    bf16 = get_dtype("bf16")
    n = 5
    with torch.no_grad():
        state = model(torch.randint(2, cfg["vocab_size"], (1, n)), use_cache=True).state
        assert len(state) == 5 and [s.dtype for s in state] == [torch.bfloat16] * 2 + [torch.float32] * 3
        layers = kv_cache(spec, bf16, bf16).layers
        assert len(layers) == cfg["num_hidden_layers"] == state[0].shape[2]
        for i, lk in enumerate(layers):
            theirs = sum(s[:, :, i].numel() * s.element_size() for s in state)
            assert (lk.bytes_per_token, lk.state_bytes) == (0, theirs) == (0, 2 * 64 * 2 + 3 * 64 * 4)
        hf = _hf_decode_flops(torch, model, cfg["vocab_size"], low=2, state=state)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    matmul = sum(o.flops for o in ops if o.kind == "matmul")
    assert hf.get("aten.mm", 0) + hf.get("aten.addmm", 0) == sum(hf.values()) == matmul
    # by hand: per layer 4·h·h (time-mix) + 2·h·4h + h·h (channel-mix), and the 300 x 64 head, 2 FLOPs per MAC
    assert matmul == 2 * (3 * (4 * 64 * 64 + 2 * 64 * 256 + 64 * 64) + 300 * 64)
    assert sum(o.flops for o in ops if o.kind == "scan") == 3 * 8 * 64


def test_rwkv_4_169m_pile_by_hand():
    """RWKV/rwkv-4-169m-pile's config.json: 12 blocks of 768, vocab 50277, untied head. Per block ln1 / ln2 (4h),
    time-mix 4 x h·h + time_decay / time_first (2h) + three time_mix vectors (3h), channel-mix h·4h twice + h·h + two
    time_mix vectors (2h); pre_ln and ln_out (4h); embedding and head. State per sequence in bf16: 12 x (2 shifted
    tokens x 768 x 2 bytes + 3 x 768 fp32)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = {"model_type": "rwkv", "attention_hidden_size": 768, "context_length": 1024, "hidden_size": 768,
           "intermediate_size": 3072, "layer_norm_epsilon": 1e-05, "num_hidden_layers": 12, "rescale_every": 6,
           "tie_word_embeddings": False, "vocab_size": 50277}
    spec = parse_config(cfg)
    h, v = 768, 50277
    block = 4 * h + 4 * h * h + 2 * h + 3 * h + 2 * h * 4 * h + h * h + 2 * h
    p = count_params(spec)
    assert p.total == p.active == 2 * v * h + 12 * block + 4 * h == 169_342_464
    cache = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert cache.bytes_per_token == 0 and cache.state_bytes_per_sequence == 12 * (2 * h * 2 + 3 * h * 4)
    assert [layer.kind for layer in spec.layers] == ["rwkv"] * 12  # (the block's channel-mix: not "rwkv-only")


@pytest.mark.parametrize("change,field", [({"hidden_size": 0}, "hidden_size"),
                                          ({"attention_hidden_size": -4}, "attention_hidden_size"),
                                          ({"intermediate_size": "wide"}, "intermediate_size"),
                                          ({"num_hidden_layers": 10 ** 9}, "num_hidden_layers"),
                                          ({"rescale_every": 1.5}, "rescale_every"),
                                          ({"tie_word_embeddings": "yes"}, "tie_word_embeddings")])
def test_rwkv_bad_fields_are_config_errors(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["rwkv"], **change))


def test_rwkv_tensor_parallel_split_and_refusal():
    """Over tp ranks the projections, the WKV state and the time-mix vectors split; the norms stay whole. A tp that
    does not divide attention_hidden_size is refused, naming RWKV."""
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import shard_params, tp_plan

    spec = parse_config(CASES["rwkv"])  # hidden 64, 3 layers
    whole = 3 * 4 * 64 + 4 * 64  # ln1 / ln2 per layer; pre_ln and ln_out
    assert shard_params(spec, tp_plan(spec, 2)) == whole + (count_params(spec).total - whole) // 2
    with pytest.raises(OptionError, match="RWKV's attention_hidden_size"):
        tp_plan(parse_config(CASES["rwkv-att-inter-tied"]), 64)


# ---- InternVL's remote-code format (internvl_chat) ------------------------------------------------------------------
# No transformers class: the language model (llm_config, built by its architectures[0]) is checked against transformers'
# build of llm_config, InternViT and mlp1 against a hand count of the remote code's shapes (vLLM's intern_vit.py):
# class_embedding, a biased 3-channel patch conv, (image // patch)^2 + 1 positions; per layer a fused qkv (biased by
# qkv_bias), q_norm / k_norm RMSNorms over the hidden size (qk_normalization), a biased proj and fc1 / fc2,
# norm1 / norm2 (LayerNorm: weight and bias; RMSNorm: weight), ls1 / ls2; mlp1 = LayerNorm(m), Linear(m, text),
# Linear(text, text) with m = vision hidden x int(1 / downsample_ratio)^2.
def _intern_vit_by_hand(h, layers, inter, image, patch, qkv_bias, qk_norm, layer_norm, text, ratio):
    attn = 3 * h * h + (3 * h if qkv_bias else 0) + (2 * h if qk_norm else 0) + (h * h + h)
    mlp = (h * inter + inter) + (inter * h + h)
    norms = (2 * 2 * h if layer_norm else 2 * h) + 2 * h  # norm1 / norm2, then ls1 / ls2
    embeddings = h + (3 * patch * patch * h + h) + ((image // patch) ** 2 + 1) * h
    m = h * int(1 / ratio) ** 2
    return layers * (attn + mlp + norms) + embeddings + (2 * m + m * text + text + text * text + text)


_CHAT_VIT = {"model_type": "intern_vit_6b", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
             "num_attention_heads": 2, "image_size": 32, "patch_size": 8, "qkv_bias": True, "qk_normalization": False,
             "norm_type": "layer_norm", "num_channels": 5}  # num_channels is not read: the conv takes 3


@pytest.mark.parametrize("llm_tie,top_tie", [(True, False), (False, True)])
@pytest.mark.parametrize("variant", ["300m", "6b"])
def test_internvl_chat_counts_the_whole_checkpoint(variant, llm_tie, top_tie):
    """InternVL2.5 / 3's remote-code config: the language model is llm_config's, tied as llm_config says (the wrapper's
    flag is not read); the 6B-style tower has RMSNorms, q/k norms and no qkv bias."""
    llm = dict(_TEXT, model_type="qwen2", architectures=["Qwen2ForCausalLM"], tie_word_embeddings=llm_tie)
    vit = _CHAT_VIT if variant == "300m" else dict(_CHAT_VIT, qkv_bias=False, qk_normalization=True,
                                                    norm_type="rms_norm", image_size=40, patch_size=6)
    ratio = 0.5 if variant == "300m" else 0.25
    cfg = {"model_type": "internvl_chat", "architectures": ["InternVLChatModel"], "llm_config": llm,
           "vision_config": vit, "downsample_ratio": ratio, "tie_word_embeddings": top_tie, "select_layer": -1}
    spec = parse_config(cfg)
    p = count_params(spec)
    by_hand = _intern_vit_by_hand(32, 2, 48, vit["image_size"], vit["patch_size"], vit["qkv_bias"],
                                  vit["qk_normalization"], vit["norm_type"] == "layer_norm", 128, ratio)
    assert p.vision == by_hand
    assert p.total == hf_param_count(llm) + by_hand
    assert spec.tie_word_embeddings is llm_tie
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, opts).kv.bytes_per_token == analyze(parse_config(llm), opts).kv.bytes_per_token


def test_internvl_chat_published_internvl2_5_8b_total():
    """OpenGVLab/InternVL2_5-8B's config (InternViT-300M-448px-V2_5 + internlm2_5-7b-chat): the hub's 8.08B. By hand:
    ViT 24 x 12,598,272 + 1,653,760 = 304,012,288; mlp1 33,570,816; InternLM2.5-7B 7,737,782,272."""
    cfg = {"model_type": "internvl_chat", "architectures": ["InternVLChatModel"], "downsample_ratio": 0.5,
           "select_layer": -1, "force_image_size": 448, "template": "internvl2_5", "torch_dtype": "bfloat16",
           "llm_config": {"architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2", "hidden_size": 4096,
                          "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
                          "num_key_value_heads": 8, "vocab_size": 92553, "rope_theta": 1000000,
                          "max_position_embeddings": 32768, "bias": False, "rms_norm_eps": 1e-5,
                          "tie_word_embeddings": False, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
           "vision_config": {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b", "hidden_size": 1024,
                             "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
                             "image_size": 448, "patch_size": 14, "qkv_bias": True, "qk_normalization": False,
                             "norm_type": "layer_norm", "use_flash_attn": True, "drop_path_rate": 0.1}}
    p = count_params(parse_config(cfg))
    assert p.vision == 304_012_288 + 33_570_816
    assert p.total == 8_075_365_376


def test_internvl_chat_refuses_what_it_cannot_read():
    from planner.analysis.errors import ConfigError, UnsupportedModelError

    llm = dict(_TEXT, model_type="qwen2", architectures=["Qwen2ForCausalLM"])
    base = {"model_type": "internvl_chat", "llm_config": llm, "vision_config": _CHAT_VIT}
    with pytest.raises(ConfigError, match="llm_config"):
        parse_config({"model_type": "internvl_chat", "vision_config": _CHAT_VIT})
    with pytest.raises(ConfigError, match="disagrees with its architectures"):
        parse_config(dict(base, llm_config=dict(llm, model_type="llama")))
    with pytest.raises(UnsupportedModelError, match="Mono-InternVL"):
        parse_config(dict(base, llm_config=dict(llm, model_type="internlm2", architectures=["InternLM2VEForCausalLM"])))
    with pytest.raises(UnsupportedModelError, match="architecture 'MistralForCausalLM'"):
        parse_config(dict(base, llm_config=dict(llm, architectures=["MistralForCausalLM"])))
    with pytest.raises(ConfigError, match="norm_type"):
        parse_config(dict(base, vision_config=dict(_CHAT_VIT, norm_type="batch_norm")))
    with pytest.raises(ConfigError, match="downsample_ratio"):
        parse_config(dict(base, downsample_ratio=2))
    with pytest.raises(ConfigError, match=r"^config\.json \(llm_config\): field 'num_key_value_heads'"):
        parse_config(dict(base, llm_config=dict(llm, num_attention_heads=3)))
    with pytest.raises(ConfigError, match="patch_size"):
        parse_config({"model_type": "internvl", "text_config": dict(_TEXT, model_type="qwen2"),
                      "vision_config": {"image_size": 8, "patch_size": 16}})


# ---- the LLaVA variants' published checkpoints and bad fields --------------------------------------

_VICUNA_7B = {"model_type": "llama", "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "vocab_size": 32064}
_CLIP_L = {"model_type": "clip_vision_model", "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
           "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768}
#: the hub's config.json files (fields that do not change shapes left out) and the parameter counts the hub shows
LLAVA_VARIANTS_PUBLISHED = {
    "llava-hf/llava-v1.6-mistral-7b-hf": ({
        "model_type": "llava_next", "vision_config": _CLIP_L, "vision_feature_layer": -2,
        "text_config": {"model_type": "mistral", "intermediate_size": 14336, "num_key_value_heads": 8,
                        "rope_theta": 1000000.0, "sliding_window": None, "vocab_size": 32064}}, 7.57e9),
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": ({
        "model_type": "llava_onevision", "tie_word_embeddings": False, "vision_feature_layer": -1,
        "text_config": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
                        "num_hidden_layers": 28, "num_key_value_heads": 4, "rope_theta": 1000000.0,
                        "vocab_size": 152128},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 384,
                          "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 26,
                          "patch_size": 14, "vision_use_head": False}}, 8.03e9),
    "LanguageBind/Video-LLaVA-7B-hf": ({
        "model_type": "video_llava", "text_config": _VICUNA_7B, "vision_config": dict(_CLIP_L, image_size=224)}, 7.37e9),
    "llava-hf/vip-llava-7b-hf": ({
        "model_type": "vipllava", "text_config": _VICUNA_7B, "vision_config": _CLIP_L,
        "vision_feature_layers": [-2, -5, -8, -11, 6]}, 7.08e9),
    "llava-hf/LLaVA-NeXT-Video-7B-hf": ({
        "model_type": "llava_next_video", "spatial_pool_mode": "average", "spatial_pool_stride": 2,
        "text_config": _VICUNA_7B, "vision_config": _CLIP_L}, 7.06e9),
}


@pytest.mark.parametrize("name", sorted(LLAVA_VARIANTS_PUBLISHED))
def test_llava_variants_published_checkpoints(name):
    cfg, shown = LLAVA_VARIANTS_PUBLISHED[name]
    total = count_params(parse_config(cfg)).total
    assert total == hf_param_count(cfg)
    assert round(total / 1e7) == round(shown / 1e7)  # the hub rounds to 0.01 B


def test_llava_variants_read_text_config_without_model_type_as_their_config_classes_do():
    """LlavaNextConfig & co. build a text_config without model_type as Llama, LlavaOnevisionConfig as Qwen2 (biased
    q/k/v): both counts equal transformers'."""
    for name in ("llava_next", "video_llava", "vipllava", "llava_onevision"):
        text = {k: v for k, v in WRAPPERS[name]["text_config"].items() if k != "model_type"}
        cfg = dict(WRAPPERS[name], text_config=text)
        assert count_params(parse_config(cfg)).total == hf_param_count(cfg), name


@pytest.mark.parametrize("cfg,error,field", [
    (dict(WRAPPERS["llava_next_video"], spatial_pool_mode="median"), "ConfigError", "spatial_pool_mode"),
    (dict(WRAPPERS["llava_next_video"], spatial_pool_mode="conv", spatial_pool_stride=0), "ConfigError",
     "spatial_pool_stride"),
    (dict(WRAPPERS["vipllava"], vision_feature_layers=[]), "ConfigError", "vision_feature_layers"),
    (dict(WRAPPERS["vipllava"], vision_feature_layers="last"), "ConfigError", "vision_feature_layers"),
    (dict(WRAPPERS["llava_next"], vision_feature_layer=[True]), "ConfigError", "vision_feature_layer"),
    (dict(WRAPPERS["video_llava"], vision_config={"model_type": "idefics3_vision"}), "UnsupportedModelError",
     "idefics3_vision"),
    (dict(WRAPPERS["llava_onevision"], vision_config=dict(_SIGLIP, patch_size=64)), "ConfigError", "patch_size"),
    (dict(WRAPPERS["llava_onevision"], vision_config="siglip"), "ConfigError", "vision_config"),
])
def test_llava_variants_refuse_bad_fields_clearly(cfg, error, field):
    from planner.analysis import errors

    with pytest.raises(getattr(errors, error), match=field):
        parse_config(cfg)


# ---- ERNIE-4.5-VL: modality-isolated experts ------------------------------------------------------------------


def _ernie_vl_hf(cfg: dict):
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import AutoConfig, AutoModelForImageTextToText

    d = dict(cfg)
    conf = AutoConfig.for_model(d.pop("model_type"), **d, attn_implementation="eager")
    torch.manual_seed(0)
    return torch, AutoModelForImageTextToText.from_config(conf).eval()


@pytest.mark.parametrize("name", ["ernie4_5_vl_moe", "ernie4_5_vl_moe-bias-types-untied"])
def test_ernie_vl_active_parameters_are_a_text_tokens(name):
    """A text token runs attention, the dense MLPs, the shared experts, the text router and moe_k of the text
    experts: transformers' parameters less the vision experts and their router (vision_moe) and the unchosen text
    experts (counted from transformers' modules); the tower and resampler count as every wrapper's do (model-level)."""
    cfg = WRAPPERS[name]
    _, hf = _ernie_vl_hf(cfg)
    text = cfg["text_config"]
    e = text.get("moe_num_experts", text.get("num_experts"))
    k = text.get("moe_k", text.get("num_experts_per_tok"))
    want = 0
    for n, p in hf.named_parameters():
        if ".mlp.vision_moe." in n:
            continue
        want += p.numel() * k // e if ".mlp.text_moe.experts." in n else p.numel()
    p = count_params(parse_config(cfg))
    assert p.active == want
    vision_experts = sum(q.numel() for n, q in hf.named_parameters() if ".mlp.vision_moe.experts." in n)
    text_experts = sum(q.numel() for n, q in hf.named_parameters() if ".mlp.text_moe.experts." in n)
    assert p.experts == vision_experts + text_experts
    assert p.vision == sum(q.numel() for n, q in hf.named_parameters()
                           if ".vision_tower." in n or ".resampler_model." in n)


def test_ernie_vl_kv_equals_transformers_cache():
    """transformers' cache after a text prefill (fp32): K and V of every layer, kv heads x head_dim each."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = WRAPPERS["ernie4_5_vl_moe-bias-types-untied"]
    torch, hf = _ernie_vl_hf(cfg)
    n = 5
    with torch.no_grad():
        out = hf(input_ids=torch.randint(0, 200, (1, n)), use_cache=True)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    per_layer = _hf_cache_bytes_per_token(cache, n)
    fp32 = get_dtype("fp32")
    assert per_layer == [lk.bytes_per_token for lk in kv_cache(parse_config(cfg), fp32, fp32).layers]


@pytest.mark.parametrize("text,vision,match", [
    ({"moe_intermediate_size": 32}, {}, "moe_intermediate_size"),
    ({"moe_intermediate_size": [32, 0]}, {}, "moe_intermediate_size"),
    ({"moe_num_experts": [4, 4]}, {}, "moe_num_experts"),
    ({"moe_k": 5}, {}, "moe_k"),
    ({"mlp_layer_types": ["dense", "sparse"]}, {}, "mlp_layer_types"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [3, 1, 4]}}, {}, "mrope_section"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0}}, {}, "rope_type"),
    ({}, {"num_heads": 5}, "num_heads"),
    ({}, {"patch_size": [4, 4]}, "patch_size"),
])
def test_ernie_vl_bad_configs_are_config_errors(text, vision, match):
    from planner.analysis.errors import ConfigError

    cfg = {"model_type": "ernie4_5_vl_moe", "text_config": dict(_ERNIE_VL_TEXT, **text),
           "vision_config": dict(_ERNIE_VL_VISION, **vision)}
    with pytest.raises(ConfigError, match=match):
        parse_config(cfg)


# ---- Idefics2 / Idefics3 / SmolVLM / Granite-Docling: published configs; IDEFICS v1 refused -------------------------
# hub config.json files as published (written from the hub pages), with the cards' parameter counts
_SIGLIP_SO400M_NAVIT = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                        "num_attention_heads": 16, "patch_size": 14}


def _smolvlm_2b(model_type: str, image_token_id: int, vocab: int, rope_theta: float, max_positions: int,
                vision_type: str) -> dict:
    """SmolVLM(2)'s 2B-class config: a 24-layer 2048-wide Llama and the SO400M NaViT tower at 384 pixels."""
    return {
        "model_type": model_type, "image_token_id": image_token_id, "scale_factor": 3, "tie_word_embeddings": False,
        "text_config": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
                        "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": vocab,
                        "rope_theta": rope_theta, "max_position_embeddings": max_positions, "pad_token_id": 2},
        "vision_config": dict(_SIGLIP_SO400M_NAVIT, model_type=vision_type, image_size=384)}


IDEFICS_PUBLISHED = {
    "HuggingFaceM4/idefics2-8b": ({
        "model_type": "idefics2", "image_token_id": 32001, "tie_word_embeddings": False, "torch_dtype": "float32",
        "perceiver_config": {"model_type": "idefics2", "resampler_depth": 3, "resampler_head_dim": 96,
                             "resampler_n_heads": 16, "resampler_n_latents": 64, "num_key_value_heads": 4},
        "text_config": {"model_type": "mistral", "rms_norm_eps": 1e-05, "sliding_window": 4096, "vocab_size": 32003,
                        "max_position_embeddings": 32768, "pad_token_id": 0},
        "vision_config": dict(_SIGLIP_SO400M_NAVIT, model_type="idefics2", image_size=980)}, 8.40e9),
    "HuggingFaceM4/Idefics3-8B-Llama3": ({
        "model_type": "idefics3", "image_token_id": 128257, "scale_factor": 2, "tie_word_embeddings": False,
        "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                        "num_attention_heads": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                        "rope_theta": 500000.0, "vocab_size": 128259, "max_position_embeddings": 131072,
                        "pad_token_id": 128002},
        "vision_config": dict(_SIGLIP_SO400M_NAVIT, model_type="idefics3", image_size=364)}, 8.46e9),
    "HuggingFaceTB/SmolVLM-Instruct": (_smolvlm_2b("idefics3", 49153, 49155, 273768.0, 16384, "idefics3"), 2.25e9),
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct": (_smolvlm_2b("smolvlm", 49190, 49280, 130000, 8192, "smolvlm_vision"),
                                             2.25e9),
    # Granite-Docling-258M is published as an Idefics3 checkpoint (Granite 165M-class Llama + SigLIP2-base-512)
    "ibm-granite/granite-docling-258M": ({
        "model_type": "idefics3", "image_token_id": 100270, "scale_factor": 4, "tie_word_embeddings": True,
        "text_config": {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                        "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 100352,
                        "rope_theta": 100000.0, "pad_token_id": 100257, "tie_word_embeddings": True},
        "vision_config": {"model_type": "idefics3_vision", "hidden_size": 768, "intermediate_size": 3072,
                          "num_hidden_layers": 12, "num_attention_heads": 12, "image_size": 512, "patch_size": 16}},
                                         258e6),
}


@pytest.mark.parametrize("name", sorted(IDEFICS_PUBLISHED))
def test_idefics_published_checkpoints_equal_transformers_and_their_cards(name):
    """Whole checkpoint (tower + connector + language model) equals transformers on meta, and lands on the card's
    parameter count (rounded as the card rounds it)."""
    cfg, card = IDEFICS_PUBLISHED[name]
    p = count_params(parse_config(cfg))
    assert p.total == hf_param_count(cfg)
    assert abs(p.total / card - 1) < 0.005 and p.vision > 0


@pytest.mark.parametrize("model_type,vision,top,match", [
    ("granite_docling", {"out_hidden_size": 48}, {}, "out_hidden_size"),
    ("granite_docling", {"use_fine_route": False}, {"density_router_hidden_size": 8}, "density_router_hidden_size"),
    ("granite_docling", {"scale_factor": 1}, {}, "scale_factor"),
    ("granite_docling", {"deepstack_visual_indexes": "3,7"}, {}, "deepstack_visual_indexes"),
    ("idefics3", {"patch_size": 64}, {}, "patch_size"),
    ("idefics3", {}, {"scale_factor": 0}, "scale_factor"),
    ("idefics2", {}, {"perceiver_config": {"resampler_n_heads": 4, "num_key_value_heads": 3}}, "num_key_value_heads"),
    ("idefics2", {"num_attention_heads": 5}, {}, "num_attention_heads"),
])
def test_idefics_family_bad_fields_are_config_errors(model_type, vision, top, match):
    from planner.analysis.errors import ConfigError

    base = {"idefics2": "idefics2", "idefics3": "idefics3", "granite_docling": "granite_docling"}[model_type]
    cfg = dict(WRAPPERS[base], **top)
    cfg["vision_config"] = dict(cfg["vision_config"], **vision)
    with pytest.raises(ConfigError, match=match):
        parse_config(cfg)


_IDEFICS_VISION = {"embed_dim": 32, "image_size": 16, "patch_size": 4, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "intermediate_size": 48}
_IDEFICS_TEXT = {"model_type": "idefics", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
                 "intermediate_size": 96, "vocab_size": 128, "cross_layer_interval": 2,
                 "vision_config": _IDEFICS_VISION}
#: IDEFICS v1 (IdeficsForVisionText2Text): LLaMA + gated cross-attention blocks + CLIP tower (+ perceiver resampler)
IDEFICS_V1 = {
    "idefics": _IDEFICS_TEXT,
    # decoupled vocab rows (embedding and lm_head), q/k RMSNorms, vector gates, the perceiver with q/k LayerNorms
    "idefics-extra-vocab-qk-norms-vector-resampler": dict(
        _IDEFICS_TEXT, additional_vocab_size=3, qk_layer_norms=True, alpha_type="vector", alpha_initializer="ones",
        use_resampler=True, perceiver_config={"resampler_n_latents": 5, "resampler_depth": 2, "resampler_n_heads": 2,
                                              "resampler_head_dim": 12, "qk_layer_norms_perceiver": True}),
    # tied (both decoupled parts), one block before layer 0 only, the resampler's class defaults
    "idefics-tied-interval4": dict(_IDEFICS_TEXT, additional_vocab_size=2, tie_word_embeddings=True,
                                   cross_layer_interval=4, use_resampler=True),
    # idefics-9b's shape with fewer layers (its "normal" float gates do not build in transformers 5.24:
    # torch.normal(size=(1)) raises, so "zeros" here)
    "idefics-9b-2-layers": {"model_type": "idefics", "hidden_size": 4096, "intermediate_size": 11008,
                            "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 32000,
                            "additional_vocab_size": 2, "cross_layer_interval": 2, "use_resampler": True,
                            "vision_config": {"embed_dim": 1280, "image_size": 224, "intermediate_size": 5120,
                                              "num_attention_heads": 16, "num_hidden_layers": 2, "patch_size": 14}},
}


_GIT_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
               "image_size": 16, "patch_size": 4}
_GIT = {"model_type": "git", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
        "intermediate_size": 96, "vocab_size": 128, "max_position_embeddings": 40, "vision_config": _GIT_VISION}
# GIT (GitForCausalLM): post-LN BERT decoder, embedding LayerNorm, biased head, CLIP tower + visual projection; tied
# (the head's bias its own), video temporal embeddings, and GitConfig's default tower (no vision_config)
CASES.update({
    "git": _GIT,
    "git-tied-video": dict(_GIT, tie_word_embeddings=True, num_image_with_embedding=4),
    "git-default-tower": {k: v for k, v in _GIT.items() if k != "vision_config"},
})


def test_git_kv_cache_and_refusals():
    """transformers' GIT cache after a text prefill holds exactly our bytes per token per layer (MHA K and V of the
    hidden width); fields GitConfig does not have are ConfigErrors."""
    torch = pytest.importorskip("torch")
    from transformers import GitConfig, GitForCausalLM

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.errors import ConfigError
    from planner.analysis.kv import kv_cache

    model = GitForCausalLM(GitConfig(**{k: v for k, v in _GIT.items() if k != "model_type"})).eval()
    n = 6
    with torch.no_grad():
        out = model(input_ids=torch.randint(0, 128, (1, n)), use_cache=True)
    fp32 = get_dtype("fp32")
    assert _hf_cache_bytes_per_token(out.past_key_values, n) == \
        [lk.bytes_per_token for lk in kv_cache(parse_config(_GIT), fp32, fp32).layers]
    for key in ("num_key_value_heads", "head_dim"):
        with pytest.raises(ConfigError, match=f"{key}.*not a field of GIT"):
            parse_config(dict(_GIT, **{key: 8}))


@pytest.mark.parametrize("name", sorted(IDEFICS_V1))
def test_idefics_v1_counts_the_whole_checkpoint(name):
    """IDEFICS v1: params.total is transformers' IdeficsForVisionText2Text; params.vision is its CLIP tower and
    perceiver resampler, the cross-attention share its gated blocks, the rest the LLaMA decoder and the decoupled
    embedding / lm_head rows."""
    from tests.oracle import hf_model

    cfg = IDEFICS_V1[name]
    spec = parse_config(cfg)
    p = count_params(spec)
    hf = hf_model(cfg)
    assert type(hf).__name__ == "IdeficsForVisionText2Text"
    named = dict(hf.named_parameters())  # a tied lm_head once
    assert p.total == sum(t.numel() for t in named.values())
    assert p.vision == sum(t.numel() for n, t in named.items()
                           if n.startswith(("model.vision_model.", "model.perceiver_resampler.")))
    assert p.cross_attention == sum(t.numel() for n, t in named.items()
                                    if n.startswith("model.gated_cross_attn_layers."))
    assert len(spec.cross_attention.layers) == len(hf.model.gated_cross_attn_layers)
    assert spec.vocab_size == hf.lm_head.out_features + hf.lm_head.out_additional_features  # the logits' width


def test_idefics_v1_kv_cache_is_its_self_attention_layers():
    """transformers' cache after a prefill with an image holds the decoder layers' K/V alone (the gated blocks refuse a
    cache and recompute the image K/V each step): exactly our bytes per token, per layer."""
    torch = pytest.importorskip("torch")
    from transformers import IdeficsConfig, IdeficsForVisionText2Text

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = IDEFICS_V1["idefics-extra-vocab-qk-norms-vector-resampler"]
    torch.manual_seed(0)
    model = IdeficsForVisionText2Text(IdeficsConfig(**{k: v for k, v in cfg.items() if k != "model_type"})).eval()
    n = 7
    with torch.no_grad():
        out = model(input_ids=torch.randint(0, 128, (1, n)), pixel_values=torch.randn(1, 1, 3, 16, 16),
                    image_attention_mask=torch.ones(1, n, 1, dtype=torch.long), use_cache=True)
    spec = parse_config(cfg)
    kv = kv_cache(spec, get_dtype("fp32"), get_dtype("fp32"))
    assert _hf_cache_bytes_per_token(out.past_key_values, n) == \
        [lk.bytes_per_token for lk in kv.layers]
    assert kv.cross_bytes_per_image is None
    assert any("transformers caches none of their K/V" in c for c in spec.caveats)


@pytest.mark.parametrize("change,match", [
    ({"cross_layer_interval": 3}, r"cross_layer_interval.*must divide num_hidden_layers \(4\)"),
    ({"alpha_type": "matrix"}, r"alpha_type.*'float' or 'vector'"),
    ({"alpha_initializer": "xavier"}, r"alpha_initializer.*must be one of"),
    ({"num_key_value_heads": 2}, r"num_key_value_heads.*not a field of IDEFICS"),
    ({"vision_config": dict(_IDEFICS_VISION, patch_size=32)}, r"patch_size.*larger than image_size"),
    ({"perceiver_config": "x", "use_resampler": True}, r"perceiver_config"),
])
def test_idefics_v1_bad_configs_are_config_errors(change, match):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        parse_config(dict(_IDEFICS_TEXT, **change))


def test_exaone4_5_old_text_model_type_reads_as_exaone4():
    """EXAONE 4.5's first release named its language model exaone4_5_text; Exaone4_5_Config renames it exaone4 (before,
    read as an unknown model_type by the generic decoder)."""
    cfg = dict(WRAPPERS["exaone4_5"], text_config=dict(CASES["exaone4"], model_type="exaone4_5_text"))
    spec = parse_config(cfg)
    assert spec.model_type == "exaone4" and count_params(spec).total == hf_param_count(cfg)


def test_nemotron_h_omni_released_field_names():
    """The released Nemotron-3 Nano Omni config keeps its language model in llm_config and the tower width in
    vit_hidden_size (transformers maps both); read so, the count is the same."""
    cfg = WRAPPERS["nemotron_h_omni"]
    legacy = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_hidden_size")}
    legacy.update(llm_config=cfg["text_config"], vit_hidden_size=cfg["vision_hidden_size"])
    assert count_params(parse_config(legacy)).total == count_params(parse_config(cfg)).total == hf_param_count(cfg)


@pytest.mark.parametrize("cfg,match", [
    ({"model_type": "minicpmv4_6", "text_config": _QWEN35_TEXT,
      "vision_config": dict(_MINICPMV_VISION, window_kernel_size=[2])}, "window_kernel_size"),
    ({"model_type": "minicpmv4_7", "text_config": _QWEN35_TEXT,
      "vision_config": dict(_MINICPMV_VISION, image_size=[32, 32])}, "image_size"),
    ({"model_type": "minicpm_ocr", "text_config": _QWEN35_TEXT, "merger_times": 0,
      "vision_config": _MINICPMV_VISION}, "merger_times"),
    ({"model_type": "qwen2_5_omni_thinker", "text_config": dict(_TEXT, model_type="qwen2_5_omni_text"),
      "vision_config": _OMNI25_VISION, "audio_config": {"d_model": 33, "encoder_attention_heads": 3}}, "d_model"),
    ({"model_type": "qwen2_5_omni_thinker", "text_config": dict(_TEXT, model_type="qwen2_5_omni_text"),
      "vision_config": _OMNI25_VISION, "audio_config": {"d_model": 32, "encoder_attention_heads": 3}},
     "encoder_attention_heads"),
    ({"model_type": "qwen2_5_omni_thinker", "text_config": dict(_TEXT, model_type="qwen2_5_omni_text"),
      "vision_config": _OMNI25_VISION, "audio_config": [1]}, "audio_config"),
    ({"model_type": "video_llama_3", "text_config": dict(_TEXT, model_type="qwen2"),
      "vision_config": dict(_VL3_VISION, num_attention_heads=5)}, "num_attention_heads"),
    ({"model_type": "video_llama_3", "text_config": dict(_TEXT, model_type="qwen2"),
      "vision_config": dict(_VL3_VISION, patch_size=[8, 8])}, "patch_size"),
    ({"model_type": "qianfan_ocr", "text_config": dict(_TEXT, model_type="qwen3", head_dim=32),
      "vision_config": dict(_QIANFAN_VISION, norm_type="batch_norm")}, "norm_type"),
    ({"model_type": "qianfan_ocr", "text_config": dict(_TEXT, model_type="qwen3", head_dim=32), "downsample_ratio": 2,
      "vision_config": _QIANFAN_VISION}, "downsample_ratio"),
])
def test_minicpmv_omni_videollama3_qianfan_bad_tower_configs_are_config_errors(cfg, match):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        parse_config(cfg)


def test_ernie_vl_remote_code_format_is_translated_never_generic():
    """ERNIE-4.5-VL's original flat config (list-valued moe_num_experts) is translated into the transformers format
    (tests/test_ernie45_vl_remote.py); a partial one is a config error, never read as a generic decoder."""
    from planner.analysis.errors import ConfigError

    cfg = {"model_type": "ernie4_5_moe_vl", "hidden_size": 2560, "num_hidden_layers": 28, "num_attention_heads": 20,
           "vocab_size": 103424, "moe_num_experts": [64, 64], "moe_intermediate_size": [1536, 512]}
    with pytest.raises(ConfigError, match="required field 'intermediate_size'"):
        parse_config(cfg)



@pytest.mark.parametrize("name", ["modernbert-decoder", "modernbert-decoder-biases-untied"])
def test_modernbert_decoder_kv_and_decode_flops_equal_transformers(name):
    """transformers' own cache after a 5-token prefill (shorter than every window; fp32) holds exactly our bytes per
    token per layer, and FlopCounterMode over its decode step (eager) equals the trace's FLOPs, the prediction
    head's dense included."""
    _assert_cache_and_decode_flops_equal_transformers(CASES[name])


def test_modernbert_decoder_shapes_by_hand():
    """Ettin-decoder-150m's geometry (22 layers of 768, GeGLU 1152, 12 heads, vocab 50368, tied, biased decoder),
    term by term; layers 0, 3, 6 ... global, the rest 64-key windows (local_attention 128 // 2)."""
    cfg = {"model_type": "modernbert-decoder", "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
           "num_hidden_layers": 22, "num_attention_heads": 12, "global_attn_every_n_layers": 3,
           "local_attention": 128}
    h, v, i = 768, 50368, 1152
    layer = 4 * h * h + 2 * i * h + i * h + 2 * h  # q, k, v, Wo; Wi (2i x h); Wo; attn_norm + mlp_norm (no bias)
    expected = v * h + h + 22 * layer - h + h + (h * h + h) + v  # embedding + its norm; layer 0 without attn_norm;
    spec = parse_config(cfg)  # final norm; lm_head dense + norm; the decoder's bias
    assert count_params(spec).total == count_params(spec).active == expected
    assert [layer.mixer.window for layer in spec.layers[:4]] == [None, 64, 64, None]
    assert spec.layers[0].mixer.rope_theta == 160000.0 and spec.layers[1].mixer.rope_theta == 10000.0
    bf16 = Options(context=100, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, bf16).kv.bytes_per_token == 22 * 2 * h * 2


@pytest.mark.parametrize("change,field", [({"num_attention_heads": 7}, "num_attention_heads"),
                                          ({"local_attention": 1}, "local_attention"),
                                          ({"layer_types": ["full_attention"] * 3}, "layer_types"),
                                          ({"intermediate_size": None}, "intermediate_size")])
def test_modernbert_decoder_refuses_bad_configs(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["modernbert-decoder"], **change))


@pytest.mark.parametrize("name", ["beam", "beam-roped-full-biased-tied"])
def test_beam_kv_and_decode_flops_equal_transformers(name):
    """transformers' own cache after a 5-token prefill (shorter than the window; fp32) holds exactly our bytes per
    token per layer, and FlopCounterMode over its decode step (eager) equals the trace's FLOPs: the attention gate's
    gate_proj, the k chosen experts and the router included."""
    _assert_cache_and_decode_flops_equal_transformers(CASES[name])


def test_beam_default_shape_by_hand():
    """BeamConfig's defaults are Beam-1.0-501B-A23B's shape (published: 501B total, 23B active), term by term: 52
    layers of 5120, 48 query heads and 8 KV heads of 128, the gate (gate_proj + gate_bias), four norms a layer,
    three dense SwiGLU layers of 20480, 49 MoE layers of 256 experts of 2560 (top 8), an untied head."""
    h, v, hd, e, m = 5120, 151936, 128, 256, 2560
    cfg = {"model_type": "beam", "hidden_size": h, "num_hidden_layers": 52, "num_attention_heads": 48,
           "num_key_value_heads": 8, "vocab_size": v, "intermediate_size": 20480}
    attention = h * 48 * hd + 2 * h * 8 * hd + 48 * hd * h + 2 * hd + h * 48 * hd + 48  # q, k, v, o, norms, gate
    common = 2 * v * h + h + 52 * (attention + 4 * h) + 3 * 3 * h * 20480
    p = count_params(parse_config(cfg))
    assert p.total == common + 49 * (e * h + e * 3 * h * m) == 501_267_599_808
    assert p.active == common + 49 * (e * h + 8 * 3 * h * m) == 23_431_516_608
    spec = parse_config(cfg)
    assert [layer.mixer.window for layer in spec.layers[:6]] == [512] * 5 + [None]
    assert spec.layers[5].mixer.rotary_dim == 0 and spec.layers[0].mixer.rotary_dim == hd
    assert spec.final_logit_softcapping == 30.0
    bf16 = Options(context=100, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, bf16).kv.bytes_per_token == 52 * 2 * 8 * hd * 2


@pytest.mark.parametrize("change,field", [({"num_key_value_heads": 3}, "num_attention_heads"),
                                          ({"n_group": 3}, "n_group"), ({"topk_group": 5}, "topk_group"),
                                          ({"num_experts_per_tok": 5}, "num_experts_per_tok"),
                                          ({"mlp_layer_types": ["dense"] * 3}, "mlp_layer_types"),
                                          ({"rope_parameters": {"full_attention": None}}, "rope_parameters")])
def test_beam_refuses_bad_configs(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["beam"], **change))


# Muse Spark's language model (no causal-LM class of its own: MuseSparkTextModel plus the wrapper's untied lm_head):
# class defaults (full / NoPE every fourth layer from the last, every layer sparse), and dense / sparse layers with
# explicit layer types, RoPE bases, biased attention and tied embeddings
MUSE_SPARK_TEXT = {"model_type": "muse_spark_text", "hidden_size": 128, "num_hidden_layers": 5,
                   "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
                   "intermediate_size": 352, "num_local_experts": 8, "num_experts_per_tok": 2,
                   "moe_intermediate_size": 64, "moe_hidden_size": 48, "sliding_window": 64,
                   "max_position_embeddings": 4096}
MUSE_SPARK_TEXT_MIXED = dict(MUSE_SPARK_TEXT, num_hidden_layers=4, attention_bias=True, tie_word_embeddings=True,
                             layer_types=["sliding_attention", "full_attention"] * 2,
                             mlp_layer_types=["dense", "sparse", "sparse", "dense"],
                             layer_rope_theta=[10000.0, 0, 10000.0, 10000.0])


def _hf_muse_spark_text(cfg: dict, meta: bool = False):
    """(torch, MuseSparkTextModel of cfg (eager), its config)."""
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import MuseSparkTextConfig
    from transformers.models.muse_spark.modeling_muse_spark import MuseSparkTextModel

    conf = MuseSparkTextConfig(**{k: v for k, v in cfg.items() if k != "model_type"}, attn_implementation="eager",
                               experts_implementation="eager")
    torch.manual_seed(0)
    if meta:
        with torch.device("meta"):
            return torch, MuseSparkTextModel(conf), conf
    return torch, MuseSparkTextModel(conf).eval(), conf


@pytest.mark.parametrize("cfg", [MUSE_SPARK_TEXT, MUSE_SPARK_TEXT_MIXED])
def test_muse_spark_text_total_equals_transformers(cfg):
    """MuseSparkTextModel's parameters plus the wrapper's lm_head (vocab x hidden, even with tie_word_embeddings), and the
    wrapper's own language model + lm_head count (MuseSparkForConditionalGeneration on meta) alike."""
    from tests.oracle import hf_language_model_count

    torch, model, conf = _hf_muse_spark_text(cfg, meta=True)
    body = sum(p.numel() for p in model.parameters())
    head = conf.vocab_size * conf.hidden_size  # the wrapper never ties it (no _tied_weights_keys)
    assert count_params(parse_config(cfg)).total == body + head
    wrapper = {"model_type": "muse_spark", "text_config": cfg, "audio_config": {"out_hidden_size": cfg["hidden_size"]},
               "tie_word_embeddings": cfg.get("tie_word_embeddings", False)}
    assert count_params(parse_config(cfg)).total == hf_language_model_count(wrapper)


@pytest.mark.parametrize("cfg", [MUSE_SPARK_TEXT, MUSE_SPARK_TEXT_MIXED])
def test_muse_spark_text_kv_and_decode_flops_equal_transformers(cfg):
    """transformers' cache after a 5-token prefill (fp32) holds exactly our bytes per token per layer, and
    FlopCounterMode over MuseSparkTextModel's decode step (eager: the gate_proj, the router, pre / post expert
    projections, the k chosen experts at moe_hidden_size) plus the lm_head's 2·hidden·vocab equals the trace."""
    from torch.utils.flop_counter import FlopCounterMode

    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec, n = parse_config(cfg), 5
    torch, model, conf = _hf_muse_spark_text(cfg)
    with torch.no_grad():
        cache = model(torch.randint(0, cfg["vocab_size"], (1, n)), use_cache=True).cache
        fp32 = get_dtype("fp32")
        assert _hf_cache_bytes_per_token(cache, n) == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers]
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.randint(0, cfg["vocab_size"], (1, 1)), use_cache=True, cache=cache)
    hf = sum(counter.get_flop_counts()["Global"].values()) + 2 * conf.hidden_size * conf.vocab_size
    fmt, _ = weight_format(spec, "fp32")
    assert hf == sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n))


def test_muse_spark_text_default_shape_by_hand():
    """MuseSparkTextConfig's defaults (Muse-Spark-Open-816B-A42B's language model), term by term: 62 layers of
    8192, 128 query and 16 KV heads of 64, the gate, three weighted norms and two residual gates a layer, 256
    experts of 4096 at moe_hidden_size 4096 (top 8) between 8192 <-> 4096 projections, untied; published 816B / 42B
    fit without the embedding and head."""
    h, v, hd, e, m, x = 8192, 202048, 64, 256, 4096, 4096
    cfg = {"model_type": "muse_spark_text", "hidden_size": h, "num_hidden_layers": 62, "num_attention_heads": 128,
           "num_key_value_heads": 16, "vocab_size": v}
    attention = h * 128 * hd + 2 * h * 16 * hd + 128 * hd * h + h * 128 * hd  # q, k, v, o, gate_proj
    per_layer = attention + 3 * h + 2 * h + e * h + 2 * h * x + 2 * x  # norms, residual gates, router, projections
    p = count_params(parse_config(cfg))
    assert p.total == 2 * v * h + h + 62 * (per_layer + e * 3 * x * m) == 819_990_536_192
    assert p.active == 2 * v * h + h + 62 * (per_layer + 8 * 3 * x * m) == 46_091_116_544
    assert p.total - 2 * v * h < 817e9 and p.active - 2 * v * h < 43e9
    spec = parse_config(cfg)
    assert [layer.mixer.window for layer in spec.layers[-5:]] == [None, 2048, 2048, 2048, None]
    assert [layer.mixer.rotary_dim for layer in spec.layers[-2:]] == [hd, 0]
    bf16 = Options(context=100, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, bf16).kv.bytes_per_token == 62 * 2 * 16 * hd * 2


@pytest.mark.parametrize("change,field", [({"num_attention_heads": 7}, "num_attention_heads"),
                                          ({"num_key_value_heads": 3}, "num_attention_heads"),
                                          ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
                                          ({"layer_rope_theta": [1.0, 2.0]}, "layer_rope_theta"),
                                          ({"mlp_layer_types": ["moe"] * 5}, "mlp_layer_types"),
                                          ({"moe_hidden_size": 0}, "moe_hidden_size")])
def test_muse_spark_text_refuses_bad_configs(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(MUSE_SPARK_TEXT, **change))
