"""A real ModelOpt ``MIXED_PRECISION`` checkpoint's stored bytes, from its safetensors header census:
nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 @ 29f2d1746d8f41e316523194b19018707749b1b1.

Source (code index, read with read_file): github mudler/vllm.cpp
tests/vllm/models/fixtures/nemotron_h_35_lightning/index.json @ 007b790e375b653e1247225e8eeab9933f98cc5f, "Projected
from ... model.safetensors.index.json + the 52 safetensors headers": every tensor family with dtype, shape and count
(routed experts collapsed to {E}), ``total_tensors`` 18487; and the same repository's
tests/vllm/models/fixtures/nemotron_h_35_lightning/config.json @ f6c0d8ac35818d43dedf37b3bd429d8c8d78dc28, verbatim
below except the fields planner does not read (bos/eos/pad ids, initializer_range, dropouts, rope_theta, time_step_*,
rescale_prenorm_residual, residual_in_fp32, use_cache, use_mamba_kernels, transformers_version, norm_eps duplicates).
Its ``quantization_config`` is verbatim: ``quant_algo MIXED_PRECISION`` with an ``ignore`` list but no
``quantized_layers`` table (the fixture's copy carries none), so which matrix takes which format is known only from
the header census:

- Mamba ``in_proj`` / ``out_proj`` (23 layers each): FP8 ``weight`` + F32 ``weight_scale`` [] + F32 ``input_scale`` [1]
  (ModelOpt ``FP8``);
- routed experts (23 layers x 128, ``up_proj`` / ``down_proj``, non-gated relu2), shared experts and ``lm_head``:
  U8 ``[out, in/2]`` + F8_E4M3 ``[out, in/16]`` + F32 ``weight_scale_2`` [], no ``input_scale`` (``W4A16_NVFP4``);
- attention q/k/v/o (6 layers, listed in ``ignore``): BF16, plus F32 ``k_scale`` / ``v_scale`` [1] (the FP8 KV cache);
- routers ``gate.weight`` F32 [128, 2688] and ``e_score_correction_bias`` F32 [128]; the MTP block (``mtp*``) BF16.

Findings (what planner does today, and why it is not yet exact):
- planner flags ModelOpt ``MIXED_PRECISION`` with a caveat and sizes every weight at torch_dtype: 63,155,874,688 bytes
  against the census's 18,888,937,436 for the same tensors. Sizing it through ``QuantSpec.groups`` needs the
  ``quantized_layers`` table (not in this config), the checkpoint's Nemotron-H spellings (``backbone.`` /
  ``mixer.experts.E.up_proj`` / ``mixer.shared_experts`` against planner's ``model.`` / ``mlp.experts`` /
  ``mlp.shared_expert``), and two layout facts the census shows: the F32 routers, and that a non-gated expert's
  single ``up_proj`` must not be split in two halves as a gated ``gate_up_proj`` is (each half would add a scalar).
- The architecture itself is exact: planner's parameter count is the census's element count less the 23 router
  ``e_score_correction_bias`` buffers, and its MTP bytes are the census's ``mtp.*`` bytes less the MTP router's
  ``e_score_correction_bias`` (128 F32 = 512 bytes), the buffers planner leaves out as for DeepSeek-V3
  (tests/test_quant_real_audit.py).
"""

from __future__ import annotations

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config

LAYERS = ["mamba", "moe", "mamba", "moe", "mamba", "attention", "moe", "mamba", "moe", "mamba", "moe", "mamba",
          "attention", "moe", "mamba", "moe", "mamba", "moe", "mamba", "attention", "moe", "mamba", "moe", "mamba",
          "moe", "mamba", "attention", "moe", "mamba", "moe", "mamba", "moe", "mamba", "attention", "moe", "mamba",
          "moe", "mamba", "moe", "mamba", "moe", "mamba", "attention", "moe", "mamba", "moe", "mamba", "moe", "mamba",
          "moe", "mamba", "moe"]

_IGNORE = (["backbone.embeddings"]
           + [f"backbone.layers.{i}.mixer.{m}" for i, t in enumerate(LAYERS)
              for m in {"mamba": ["conv1d"], "moe": ["gate"], "attention": ["k_proj", "o_proj", "q_proj", "v_proj"]}[t]])

NEMOTRON_35_LIGHTNING_NVFP4 = {
    "architectures": ["NemotronHForCausalLM"], "attention_bias": False, "chunk_size": 128, "conv_kernel": 4,
    "dtype": "bfloat16", "expand": 2, "head_dim": 128, "hidden_size": 2688, "intermediate_size": 1856,
    "layer_norm_epsilon": 1e-05, "layers_block_type": LAYERS, "mamba_head_dim": 64, "mamba_hidden_act": "silu",
    "mamba_num_heads": 64, "mamba_proj_bias": False, "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 1048576, "mlp_bias": False, "mlp_hidden_act": "relu2", "model_type": "nemotron_h",
    "moe_intermediate_size": 1856, "moe_latent_size": None, "moe_shared_expert_intermediate_size": 3712,
    "moe_shared_expert_overlap": True, "mtp_layers_block_type": ["attention", "moe"], "n_group": 1, "n_groups": 8,
    "n_routed_experts": 128, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 32,
    "num_experts_per_tok": 6, "num_hidden_layers": 52, "num_key_value_heads": 2, "num_logits_to_keep": 1,
    "num_nextn_predict_layers": 1, "partial_rotary_factor": 1.0,
    # verbatim: the ignore list is the fixture's (sorted as it is there; built here from the layer pattern, the same
    # 72 entries: embeddings, each Mamba conv1d, each router, each attention q/k/v/o, "mtp*")
    "quantization_config": {"ignore": sorted(_IGNORE) + ["mtp*"],
                            "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
                            "producer": {"name": "modelopt", "version": "0.44.0rc5"},
                            "quant_algo": "MIXED_PRECISION", "quant_method": "modelopt"},
    "routed_scaling_factor": 2.5, "sliding_window": None, "ssm_state_size": 128, "tie_word_embeddings": False,
    "topk_group": 1, "use_bias": False, "use_conv_bias": True, "vocab_size": 131072,
}

H, V, E = 2688, 131072, 128


def nvfp4_w4a16(o: int, i: int) -> int:
    """U8 [o, i/2] + F8_E4M3 [o, i/16] + F32 weight_scale_2 []."""
    return o * i // 2 + o * (i // 16) + 4


def fp8(o: int, i: int) -> int:
    """F8_E4M3 [o, i] + F32 weight_scale [] + F32 input_scale [1]."""
    return o * i + 4 + 4


def census():
    """(tensor count, main-model bytes, MTP bytes, main-model elements without buffers) from the header census."""
    n = {k: LAYERS.count(k) for k in ("mamba", "moe", "attention")}
    mamba = 2 * (64 + 64 + 6144 + 6144 * 4 + 64 + 4096 + H) + fp8(10304, H) + fp8(H, 4096)
    moe = (E * (nvfp4_w4a16(H, 1856) + nvfp4_w4a16(1856, H)) + 4 * E * H + 4 * E
           + nvfp4_w4a16(H, 3712) + nvfp4_w4a16(3712, H) + 2 * H)
    attn = 2 * (4096 * H + 2 * 256 * H + H * 4096 + H) + 4 + 4
    main = n["mamba"] * mamba + n["moe"] * moe + n["attention"] * attn + 2 * V * H + 2 * H + nvfp4_w4a16(V, H)
    mtp = (2 * (H * 2 * H + 2 * H + 4096 * H + 2 * 256 * H + H * 4096 + H)
           + 2 * (H + E * 2 * H * 1856 + E * H + 2 * H * 3712 + H) + 4 * E)
    tensors = n["mamba"] * 13 + n["moe"] * (6 * E + 2 + 6 + 1) + n["attention"] * 7 + 1 + 1 + 3 + 8 + (1 + 2 * E + 5)
    elements = (n["mamba"] * (64 * 3 + 6144 * 5 + 4096 + H + 10304 * H + H * 4096)
                + n["moe"] * (E * 2 * H * 1856 + E * H + 2 * H * 3712 + H)
                + n["attention"] * (2 * 4096 * H + 2 * 256 * H + H) + 2 * V * H + H)
    return tensors, main, mtp, elements


def test_mixed_precision_is_flagged_and_the_residual_is_the_quantization():
    tensors, main, mtp, elements = census()
    assert tensors == 18487  # the oracle is the census: its tensor list, its total_tensors
    assert main == 18_888_937_436 and mtp == 2_670_652_160
    a = analyze(parse_config(NEMOTRON_35_LIGHTNING_NVFP4), Options(context=0))
    # the architecture is exact: planner's parameters are the census's elements (buffers aside), its MTP bytes the
    # census's mtp.* bytes less the MTP router's e_score_correction_bias (128 F32)
    assert a.params.total == elements == 31_577_937_344
    assert a.mtp_weights_bytes == mtp - 4 * E
    # MIXED_PRECISION is not sized (no quantized_layers table here): every weight at bf16, a caveat says so
    assert a.spec.quant is None or not a.spec.quant.groups
    assert a.weights_bytes == 2 * elements == 63_155_874_688
    assert a.weights_bytes - main == 44_266_937_252
