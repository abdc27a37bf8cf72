"""SGLang-registry audit (session 27): model_types SGLang serves that planner read as a generic Llama or ended in a
generic-decoder error.

- ``nanbeige`` (Nanbeige4.2-3B, a looped Llama: SGLang's models/nanbeige.py) was read as a generic Llama: the right
  parameters but half its K/V cache and decode FLOPs (the 22 layers run twice per token, each pass caching its own
  K/V). Now counted as a loop (analysis/families/nanbeige.py).
- ``spark2_5`` (Spark-X2.5, SGLang's models/spark2_5.py) was read as a generic Llama: no head gate (4,110,604,800,
  the g_proj's 36 x 2560 x 16 short), every layer on the full layers' RoPE (theta 5e6 over the whole head). Now
  counted (analysis/families/spark2_5.py) and checked against the hub's safetensors total for XHToken/Spark-X2.5-4B.
- DeepSeek-V4.1, LongCat-Flash-Pro / LongCat 2, GigaChat 3.5, IQuest Q1, BerryLM-OS and SenseNova U1 ended in
  generic-decoder errors ("not a known family", "read as a generic Llama-style decoder: required field ...
  missing", "standard decoder fields ... missing"), Evo 2 was read as a generic Llama (every Hyena layer as
  attention); now refused by name (analysis/families/sglang_refusals_s27.py).
- MiMo-Audio (model_type qwen2, architectures MiMoAudioModel / MiMoAudioForCausalLM) was counted as its Qwen2 decoder
  alone; now refused by architecture.
- ``locateanything`` (NVIDIA LocateAnything-3B) was its Qwen2 text model alone (tower not counted); now MoonViT and
  its mlp1 are counted (analysis/families/locate_anything.py).
- Mistral Large 3 (SGLang's mistral_large_3.py: DeepSeek-V3 under Mistral's tensor names) in its Hugging Face layout,
  a mistral3 wrapper over a deepseek_v3 text_config, was already counted; pinned against transformers.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from tests.clirun import analyze_json, run

CONTEXT = 8192

#: Nanbeige/Nanbeige4.2-3B's config.json, as an architecture note quoting the hub file gives it (its auto_map left out)
NANBEIGE42_3B = {
    "architectures": ["NanbeigeForCausalLM"], "model_type": "nanbeige", "vocab_size": 166144, "hidden_size": 3072,
    "intermediate_size": 10752, "num_hidden_layers": 22, "num_attention_heads": 48, "num_key_value_heads": 8,
    "head_dim": 128, "kv_channels": 128, "hidden_act": "silu", "max_position_embeddings": 262144,
    "rope_theta": 70000000, "rope_scaling": None, "attention_bias": False, "attention_dropout": 0.0,
    "rms_norm_eps": 1e-05, "num_loops": 2, "loop_loss_weights": [], "skip_loop_final_norm": False,
    "pretraining_tp": 1, "tie_word_embeddings": False, "pad_token_id": 0, "bos_token_id": 166100,
    "eos_token_id": 166101, "torch_dtype": "bfloat16",
}
#: XHToken/Spark-X2.5-4B's config.json fields, as a model-card check quotes the hub file (raw/main/config.json); the
#: same note quotes the hub API: "safetensors": {"parameters": {"BF16": 4112079360}, "total": 4112079360}
SPARK_X25_4B = {
    "architectures": ["Spark2_5ForCausalLM"], "model_type": "spark2_5", "hidden_size": 2560,
    "intermediate_size": 10240, "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
    "head_dim": 256, "vocab_size": 131072, "max_position_embeddings": 1048576, "sliding_window": 512,
    "hidden_act": "gelu", "dtype": "bfloat16", "tie_word_embeddings": True, "gate_attn_act_mode": "sigmoid",
    "headwise_attn_output_gate": True,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 9,
    "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 5000000},
                        "sliding_attention": {"partial_rotary_factor": 1.0, "rope_theta": 10000}},
}
SPARK_X25_4B_HUB_TOTAL = 4_112_079_360


_analyze = analyze_json  # at CONTEXT (8,192)


# ---- Nanbeige: a looped Llama ---------------------------------------------------------------------------------------


def test_nanbeige42_3b_loops_its_layers(tmp_path):
    h, v, n, heads, kv, hd, inter = 3072, 166144, 22, 48, 8, 128, 10752
    # SGLang's NanbeigeAttention / NanbeigeMLP: q/k/v (qkv_proj) and o_proj bias-free at head_dim 128 (48 x 128 =
    # 6144 wide on a 3072 hidden), gate/up/down, two RMSNorms; embed_tokens, untied lm_head, final norm
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h
    total = n * layer + 2 * v * h + h
    assert total == 4_169_800_704  # "~3B non-embedding parameters" + two 166144 x 3072 tables
    d = _analyze(tmp_path, NANBEIGE42_3B)
    assert d["params"]["total"] == d["params"]["active"] == total
    assert d["memory"]["weights_bytes"] == 2 * total  # the passes share weights: stored once
    # one K/V per layer per pass: 44 cache layers (the mlx / Rust ports assert kv_layers() == 44)
    assert d["model"]["layer_kinds"] == {"full": 44}
    assert d["kv_cache"]["bytes_per_token"] == 44 * 2 * kv * hd * 2 == 180_224
    matmuls = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter
    attn = heads * 2 * 2 * hd * (CONTEXT + 1)
    assert d["flops_per_token"]["decode"] == 2 * (2 * n * matmuls + v * h) + 2 * n * attn
    assert any("run 2 times per token" in x for x in d["caveats"])
    assert not any("not a known family" in x for x in d["caveats"])


def test_nanbeige_options_it_cannot_count_are_refused(tmp_path):
    path = tmp_path / "config.json"
    for key, value in (("enable_mhc", True), ("enable_double_loop_split", True), ("qk_layernorm", True),
                       ("ngram_vocab_size_ratio", 10.0), ("loop_loss_weights", [0.5, 0.5]), ("kv_channels", 64),
                       ("hidden_act", "gelu")):
        path.write_text(json.dumps(dict(NANBEIGE42_3B, **{key: value})))
        run("analyze", str(path)).assert_error(key)
    # one loss weight: the hub code's len + 1 = 2 loops, SGLang's num_loops 2 agree
    assert _analyze(tmp_path, dict(NANBEIGE42_3B, loop_loss_weights=[1.0]), "ok.json")["kv_cache"][
        "bytes_per_token"] == 180_224
    # the loop count scales the cache and leaves the parameters alone
    three = _analyze(tmp_path, dict(NANBEIGE42_3B, num_loops=3), "three.json")
    assert three["kv_cache"]["bytes_per_token"] == 66 * 2 * 8 * 128 * 2
    assert three["params"]["total"] == 4_169_800_704


def test_nanbeige_verify_refuses_the_loop(tmp_path):
    tiny = dict(NANBEIGE42_3B, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, kv_channels=16)
    d = tmp_path / "nanbeige"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(tiny))
    r = run("trace", str(d / "config.json"), "--json")
    assert r.code == 0, r.err
    run("verify", str(d), "--device", "cpu").assert_error("looped layers")


# ---- Spark-X2.5: head-gated GQA, 3 sliding : 1 full, RoPE per layer type --------------------------------------------


def test_spark_x25_4b_equals_the_hub_total(tmp_path):
    h, v, n, heads, kv, hd, inter = 2560, 131072, 36, 16, 4, 256, 10240
    # SGLang's Spark2_5Attention: q_k_v_proj, g_proj (hidden -> heads), out_proj, all bias-free; Spark2_5MLP:
    # gate_up_proj + down_proj; input / post-attention RMSNorms; tied embedding, final norm
    layer = h * (heads + 2 * kv) * hd + h * heads + heads * hd * h + 3 * h * inter + 2 * h
    total = n * layer + v * h + h
    assert total == SPARK_X25_4B_HUB_TOTAL
    d = _analyze(tmp_path, SPARK_X25_4B)
    assert d["params"]["total"] == d["params"]["active"] == SPARK_X25_4B_HUB_TOTAL
    assert d["model"]["layer_kinds"] == {"sliding(512)": 27, "full": 9}
    per_layer = 2 * kv * hd * 2
    assert d["kv_cache"]["bytes_per_token"] == 36 * per_layer
    assert d["kv_cache"]["bytes_per_sequence"] == 9 * per_layer * CONTEXT + 27 * per_layer * 512
    # q/o, k/v, the head gate's g_proj and the MLP per layer, the tied head; attention over every key on the 9 full
    # layers, over the 512-token window on the 27 sliding ones
    matmuls = 2 * h * heads * hd + 2 * h * kv * hd + h * heads + 3 * h * inter
    attn = 9 * heads * 2 * 2 * hd * (CONTEXT + 1) + 27 * heads * 2 * 2 * hd * 512
    assert d["flops_per_token"]["decode"] == 2 * (n * matmuls + v * h) + attn
    assert not any("not a known family" in x for x in d["caveats"])


def test_spark_rope_and_gate_per_layer_type():
    spec = parse_config(SPARK_X25_4B)
    full, sliding = spec.layers[3].mixer, spec.layers[0].mixer
    # full layers: theta 5e6 on a quarter of head_dim 256; sliding layers: theta 1e4 on all of it
    assert (full.window, full.rotary_dim, full.rope_theta) == (None, 64, 5_000_000.0)
    assert (sliding.window, sliding.rotary_dim, sliding.rope_theta) == (512, 256, 10_000.0)
    assert full.head_gate and not full.gate_softplus and spec.hidden_act == "gelu"
    # without the head gate: no g_proj (36 x 2560 x 16 fewer parameters)
    plain = parse_config(dict(SPARK_X25_4B, headwise_attn_output_gate=False))
    assert not plain.layers[0].mixer.head_gate
    # Spark2_5Config's defaults when rope_parameters / layer_types are absent: the same pattern and RoPE
    bare = {k: x for k, x in SPARK_X25_4B.items() if k not in ("rope_parameters", "layer_types")}
    d = parse_config(bare)
    assert [m.mixer for m in d.layers] == [m.mixer for m in spec.layers]


def test_spark_silu_gate_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(SPARK_X25_4B, gate_attn_act_mode="silu")))
    run("analyze", str(path)).assert_error("gate_attn_act_mode")


def test_spark_verify_runs_a_tiny_config(tmp_path):
    tiny = dict(SPARK_X25_4B, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
                layer_types=["sliding_attention"] * 3 + ["full_attention"])
    d = tmp_path / "spark"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(tiny))
    r = run("verify", str(d), "--device", "cpu")
    assert r.code == 0, r.err


# ---- refused by name -------------------------------------------------------------------------------------------------

#: the configs these serving stacks read (fields from SGLang's config classes and the ports' tests)
REFUSED_CONFIGS = {
    # a DeepSeek-V4.1 conversion test's config (ds4_convert tests: text_config of the 40-layer release)
    "deepseek_v41": {"model_type": "deepseek_v41", "architectures": ["DeepseekV41ForCausalLM"],
                     "text_config": {"model_type": "deepseek_v41_text", "vocab_size": 129280, "hidden_size": 5120,
                                     "num_hidden_layers": 40, "num_attention_heads": 64, "head_dim": 512,
                                     "num_key_value_heads": 1, "n_routed_experts": 384, "num_experts_per_tok": 6,
                                     "n_shared_experts": 1, "moe_intermediate_size": 2304,
                                     "engram_layer_ids": [1, 14], "engram_vocab_size": 16000000}},
    "deepseek_v4.1": {"model_type": "deepseek_v4.1", "vocab_size": 129280, "hidden_size": 5120,
                      "num_hidden_layers": 40, "num_attention_heads": 64, "n_shared_experts": 1},
    # SGLang's LongcatFlashProConfig / Longcat2Config defaults (num_layers, ffn_hidden_size, LongCat DSA, oe_*)
    "longcat_flash_pro": {"model_type": "longcat_flash_pro", "vocab_size": 163840, "hidden_size": 8192,
                          "num_layers": 38, "num_attention_heads": 64, "ffn_hidden_size": 12288,
                          "expert_ffn_hidden_size": 2048, "n_routed_experts": 768, "moe_topk": 12,
                          "zero_expert_num": 128, "use_longcat_dsa": True, "oe_vocab_size_ratio": 100.567},
    "longcat2": {"model_type": "longcat2", "vocab_size": 163840, "hidden_size": 8192, "num_layers": 38,
                 "num_attention_heads": 64, "n_routed_experts": 768},
    # SGLang's GigaChat35Config defaults
    "gigachat3_5": {"model_type": "gigachat3_5", "architectures": ["GigaChat35ForCausalLM"], "vocab_size": 128256,
                    "hidden_size": 1280, "num_hidden_layers": 12, "num_attention_heads": 16, "q_lora_rank": 1536,
                    "kv_lora_rank": 512, "n_routed_experts": 64, "n_shared_experts": 2,
                    "full_attention_layers": [3, 7, 11], "linear_num_value_heads": 16},
    # SGLang's IQuestQ1Config defaults
    "iquest_q1": {"model_type": "iquest_q1", "architectures": ["IQuestQ1ForCausalLM"], "vocab_size": 160000,
                  "hidden_size": 3072, "dense_intermediate_size": 12288, "intermediate_size": 1536,
                  "num_hidden_layers": 88, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
                  "num_experts": 256, "num_experts_per_tok": 8, "enable_sink_attention": True},
    # SGLang's BerryLMConfig defaults
    "berrylm": {"model_type": "berrylm", "architectures": ["BerryLMForCausalLM"], "vocab_size": 180224,
                "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
                "num_experts": 128, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                "attn_res_block_size": 8},
    # SGLang's NEOChatConfig: a Qwen3 llm_config and a neo_vision vision_config
    "neo_chat": {"model_type": "neo_chat", "architectures": ["NEOChatModel"],
                 "llm_config": {"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
                                "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8},
                 "vision_config": {"model_type": "neo_vision", "hidden_size": 1024, "patch_size": 16}},
    # SDAR-1.7B-Chat's shape (a kernel profile of its SDARAttention / SDARMLP: 2048 hidden, 16 x 128 q, 8 K/V heads,
    # 6144 MLP, 28 layers, 151936 vocab)
    "sdar": {"model_type": "sdar", "architectures": ["SDARForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 28,
             "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144,
             "vocab_size": 151936},
    "sdar_moe": {"model_type": "sdar_moe", "architectures": ["SDARMoeForCausalLM"], "hidden_size": 2048,
                 "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                 "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936},
    # deepseek-ai/Janus-Pro-7B's config.json layout (vLLM-Omni's Janus detection test lists its sub-configs)
    "multi_modality": {"model_type": "multi_modality", "architectures": ["MultiModalityCausalLM"],
                       "language_config": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 30,
                                           "num_attention_heads": 32, "intermediate_size": 11008,
                                           "vocab_size": 102400},
                       "vision_config": {"cls": "CLIPVisionTower", "model_type": "vision",
                                         "params": {"image_size": 384, "model_name": "siglip_large_patch16_384"}},
                       "aligner_config": {"cls": "MlpProjector", "model_type": "aligner"},
                       "gen_vision_config": {"cls": "VQ-16", "model_type": "gen_vision"},
                       "gen_aligner_config": {"cls": "MlpProjector", "model_type": "gen_aligner"},
                       "gen_head_config": {"cls": "vision_head", "model_type": "gen_head"}},
    # SGLang's / NVIDIA's EarTTSConfig defaults
    "eartts": {"model_type": "eartts", "architectures": ["EarTTSForCausalLM"], "hidden_size": 1152,
               "context_hidden_size": 1536, "intermediate_size": 4608, "num_hidden_layers": 28,
               "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 72, "vocab_size": 2,
               "num_quantizers": 31, "codebook_size": 1024, "latent_size": 512, "mog_num_layers": 3,
               "emb_vocab_size": 151936},
    # SGLang's Gr00tN1d7Config (it mirrors GR00T-N1.7-3B's flat config.json)
    "Gr00tN1d7": {"model_type": "Gr00tN1d7", "model_name": "nvidia/Cosmos-Reason2-2B", "backbone_embedding_dim": 2048,
                  "select_layer": 16, "hidden_size": 1024, "input_embedding_dim": 1536, "max_action_dim": 132,
                  "action_horizon": 40, "diffusion_model_cfg": {"num_layers": 32, "num_attention_heads": 32,
                                                                "attention_head_dim": 48, "output_dim": 1024}},
    # a Neuron port's tiny Alpamayo 1.5 head config; vLLM-Omni's Alpamayo 2 Super test config
    "alpamayo1_5": {"model_type": "alpamayo1_5", "architectures": ["Alpamayo1_5"], "vocab_size": 151729,
                    "expert_cfg": {"head_dim": 32, "hidden_size": 96, "intermediate_size": 192,
                                   "num_attention_heads": 4, "num_key_value_heads": 2},
                    "action_space_cfg": {"n_waypoints": 8, "dt": 0.1}},
    "alpamayo2_super": {"model_type": "alpamayo2_super", "architectures": ["Alpamayo2Super"],
                        "traj_ids": {"history_id0": 151669, "future_id0": 152669, "future_start": 155681},
                        "vlm_config": {"model_type": "qwen3_vl", "image_token_id": 151655}},
    "alpamayo_r1": {"model_type": "alpamayo_r1"},
}
WHY = {"Gr00tN1d7": "vision-language-action", "alpamayo1_5": "vision-language-action",
       "alpamayo2_super": "vision-language-action", "alpamayo_r1": "vision-language-action", "eartts": "audio", "sdar": "block-diffusion", "sdar_moe": "block-diffusion", "multi_modality": "model_type janus",
       "deepseek_v41": "Engram", "deepseek_v4.1": "Engram", "longcat_flash_pro": "LongCat DSA",
       "longcat2": "over-encoding", "gigachat3_5": "Gated DeltaNet", "iquest_q1": "sinks", "berrylm": "AttnRes",
       "neo_chat": "NEO vision"}


@pytest.mark.parametrize("name", sorted(REFUSED_CONFIGS))
def test_refused_by_name(name, tmp_path):
    cfg = REFUSED_CONFIGS[name]
    with pytest.raises(UnsupportedModelError, match=f"'{cfg['model_type']}'.*not supported yet.*{WHY[name]}"):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path))
    r.assert_error(WHY[name])
    assert "Traceback" not in r.err and "generic Llama-style decoder" not in r.err.split("(a generic")[0]


# ---- Mistral Large 3: SGLang's mistral_large_3.py is DeepSeek-V3 under Mistral's tensor names -------------------------

#: the Hugging Face layout SGLang's PixtralForConditionalGeneration reads as Mistral Large 3 (its tests: a mistral3
#: wrapper whose text_config has model_type deepseek_v3 builds MistralLarge3ForCausalLM), at a small size: MLA, a
#: dense first layer, routed + shared experts, a Pixtral tower and patch-merging projector
MISTRAL_LARGE3_LAYOUT = {
    "model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"], "spatial_merge_size": 2,
    "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "image_token_index": 10,
    # set on the wrapper: transformers 5 ties by the wrapper's flag (Mistral3Config default true); planner, with the
    # wrapper's flag absent, follows text_config's (tests/test_real_configs_vlm_audit.py says why)
    "tie_word_embeddings": False,
    "text_config": {"model_type": "deepseek_v3", "hidden_size": 128, "num_hidden_layers": 3, "intermediate_size": 256,
                    "moe_intermediate_size": 64, "n_routed_experts": 8, "n_shared_experts": 1,
                    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": 48, "kv_lora_rank": 32,
                    "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 16, "num_attention_heads": 4,
                    "num_key_value_heads": 4, "vocab_size": 512, "n_group": 1, "topk_group": 1,
                    "tie_word_embeddings": False},
    "vision_config": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                      "num_attention_heads": 4, "image_size": 64, "patch_size": 8},
}


def test_mistral_large3_layout_equals_transformers(tmp_path):
    from planner.analysis.params import count_params
    from tests.oracle import hf_param_count

    spec = parse_config(MISTRAL_LARGE3_LAYOUT)
    assert spec.model_type == "deepseek_v3" and spec.vision is not None
    assert count_params(spec).total == hf_param_count(MISTRAL_LARGE3_LAYOUT)
    d = _analyze(tmp_path, MISTRAL_LARGE3_LAYOUT)
    # MLA's latent cache: kv_lora_rank + qk_rope_head_dim per layer (bf16)
    assert d["kv_cache"]["bytes_per_token"] == 3 * (32 + 16) * 2
    assert not any("not a known family" in x for x in d["caveats"])


# ---- LocateAnything: MoonViT + InternVL-style mlp1 + Qwen2 -----------------------------------------------------------

#: nvidia/LocateAnything-3B's nested configs as a TensorRT runtime test mirrors them ("The nested objects mirror
#: nvidia/LocateAnything-3B's Hugging Face config"), MoonViT's init_pos_emb 64 x 64 (MoonViTConfig's default) and the
#: text model tied as Qwen2.5-3B (the mlx-vlm port's text-config test: tie_word_embeddings true)
LOCATE_ANYTHING_3B = {
    "model_type": "locateanything", "architectures": ["LocateAnythingForConditionalGeneration"],
    "image_token_index": 151665, "box_start_token_id": 151668, "box_end_token_id": 151669,
    "coord_start_token_id": 151677, "coord_end_token_id": 152677, "mlp_connector_layers": 2,
    "text_config": {"model_type": "qwen2", "vocab_size": 152681, "hidden_size": 2048, "intermediate_size": 11008,
                    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
                    "bos_token_id": 151643, "eos_token_id": 151645, "max_position_embeddings": 32768,
                    "rope_theta": 1000000.0, "tie_word_embeddings": True},
    "vision_config": {"model_type": "moonvit", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                      "num_attention_heads": 16, "patch_size": 14, "merge_kernel_size": [2, 2]},
}


def test_locate_anything_3b_counts_its_tower_and_mlp1(tmp_path):
    # Qwen2 (biased q/k/v, head_dim 128, 2 K/V heads), tied embedding, final norm
    h, v, n, inter, kvd = 2048, 152681, 36, 11008, 2 * 128
    text = n * (h * h + h + 2 * (h * kvd + kvd) + h * h + 3 * h * inter + 2 * h) + v * h + h
    # MoonViT: biased Conv2d patch embed, 64 x 64 x 1152 positions, 27 blocks (2 LayerNorms, wqkv, wo, fc0, fc1, all
    # biased), a final LayerNorm
    vh, vi = 1152, 4304
    block = 4 * vh + (3 * vh * vh + 3 * vh) + (vh * vh + vh) + (vi * vh + vi) + (vh * vi + vh)
    tower = vh * 3 * 14 * 14 + vh + 64 * 64 * vh + 27 * block + 2 * vh
    # SGLang's LocateAnythingMultiModalProjector: LayerNorm(4 x 1152), Linear(4608 -> 2048), Linear(2048 -> 2048)
    merged = 4 * vh
    mlp1 = 2 * merged + (merged * h + h) + (h * h + h)
    assert (text, tower + mlp1) == (3_087_464_448, 430_510_832)
    d = _analyze(tmp_path, LOCATE_ANYTHING_3B)
    assert d["params"]["total"] == text + tower + mlp1 == 3_517_975_280
    assert d["kv_cache"]["bytes_per_token"] == n * 2 * kvd * 2
    assert not any("not counted" in x for x in d["caveats"])
    # the projector is not Kimi-VL's: its LayerNorm spans the merged patch, linear_1 maps straight to the text width
    names = {t.name: t.shape for t in parse_config(LOCATE_ANYTHING_3B).vision}
    assert names["mlp1.0.weight"] == (merged,) and names["mlp1.1.weight"] == (h, merged)


def test_locate_anything_other_towers_are_refused(tmp_path):
    cfg = dict(LOCATE_ANYTHING_3B, vision_config=dict(LOCATE_ANYTHING_3B["vision_config"], model_type="siglip"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("locateanything", "moonvit")


# ---- refused where the config's model_type is one planner counts: MiMo-Audio's qwen2 ---------------------------------

#: XiaomiMiMo/MiMo-Audio's config fields (model_type qwen2, as the ports that remap it by architecture note: "MiMo-Audio
#: has model_type='qwen2' but needs audio-specific handling"), with SGLang MiMoAudioConfig's local-transformer defaults
MIMO_AUDIO = {"model_type": "qwen2", "architectures": ["MiMoAudioForCausalLM"], "hidden_size": 4096,
              "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 11008,
              "vocab_size": 151680, "head_dim": 128, "speech_vocab_size": "1025-1025-129-129-129-129-129-129",
              "speech_zeroemb_idx": "1024-1024-128-128-128-128-128-128", "delay_pattern": "0-1-2-3-4-5-6-7",
              "group_size": 4, "audio_channels": 8, "local_dim": 1024, "local_layers": 16, "local_attn_heads": 64,
              "local_ffn_dim": 4096, "input_local_layers": 6}


@pytest.mark.parametrize("arch", ["MiMoAudioForCausalLM", "MiMoAudioModel"])
def test_mimo_audio_is_refused_by_architecture(arch, tmp_path):
    cfg = dict(MIMO_AUDIO, architectures=[arch])
    with pytest.raises(UnsupportedModelError, match=f"{arch}.*MiMo-Audio.*'qwen2'.*local transformer"):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("MiMo-Audio")
    # the same fields under Qwen2's own architecture stay a Qwen2 count
    plain = dict(MIMO_AUDIO, architectures=["Qwen2ForCausalLM"])
    assert parse_config(plain).model_type == "qwen2"


def test_evo2_is_refused(tmp_path):
    # SGLang's Evo2Config for evo2-7b (patch_evo2_config_json's variant defaults)
    cfg = {"model_type": "evo2", "architectures": ["Evo2ForCausalLM"], "vocab_size": 512, "hidden_size": 4096,
           "num_filters": 4096, "num_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
           "intermediate_size": 11008, "attn_layer_idxs": [3, 10, 17, 24, 31],
           "hcl_layer_idxs": [2, 6, 9, 13, 16, 20, 23, 27, 30], "hcm_layer_idxs": [1, 5, 8, 12, 15, 19, 22, 26, 29],
           "hcs_layer_idxs": [0, 4, 7, 11, 14, 18, 21, 25, 28]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("'evo2'", "Hyena")
