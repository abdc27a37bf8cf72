"""Real hub configs of state-space / hybrid models at their real sizes, audited against independent oracles.

Each config below is quoted from a public source in the code index (named above it, "code-index file N" being the
index's id for the file). The oracles are never planner's own output:

- parameters: transformers' model built on the meta device (tests/oracle.py);
- recurrent state per sequence: the state tensors transformers' own mixers carry, read off that same meta model's
  modules (every Mamba mixer's ``conv1d`` channels and ``A_log`` / head shapes), in vLLM's convention of
  ``conv_kernel - 1`` conv columns (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateShapeCalculator
  ``mamba1_state_shape``: conv (d_inner, k - 1), ssm (d_inner, d_state); ``mamba2_state_shape``: conv
  (d_inner + 2 groups d_state, k - 1), ssm (heads, head_dim, d_state)); transformers' cache keeps ``k`` columns
  (cache_utils.py LinearAttentionLayer.update_conv_state pads the window to conv_kernel_size), one more than a
  decode step needs, the convention tests/test_hybrid.py::test_state_matches_transformers_cache pins;
- KV bytes per token: hand arithmetic from the attention layers' K/V shapes, written out per model below.

Bug this audit found and fixed (the state tests fail on the code before the fix): recurrent states whose dtype the
serving engine fixes were counted in the model dtype. vLLM keeps NemotronH's SSM state in the config's
mamba_ssm_cache_dtype (float32 when absent), Qwen3.5's Gated DeltaNet state in its text_config's mamba_ssm_dtype
(float32 in the released configs) and Kimi Delta Attention's always in float32 (kda_state_dtype): Nemotron-H-8B's
state 51,806,208 -> 102,137,856 bytes per sequence, Qwen3.5-9B's 26,345,472 -> 51,511,296 (Kimi-Linear-48B's and
Nemotron-Nano-9B-v2's in tests/test_real_configs_audit.py). Parameters and KV bytes per token all agreed.
"""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.params import count_params

from .oracle import hf_model, unique_param_count

REAL: dict[str, dict] = {}

# ibm-granite/granite-4.0-h-small config.json, "relevant fields only, fetched live" in a KV planner's docs (code-index
# file 57624389648), which tallies its layer_types as {"mamba": 36, "attention": 4}; written here in the order another
# trimmed copy gives (code-index file 65760752905): where the 4 attention layers sit changes no count below
REAL["Granite-4.0-H-Small"] = {
    "model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_local_experts": 72, "num_experts_per_tok": 10, "shared_intermediate_size": 1536,
    "intermediate_size": 768, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "tie_word_embeddings": True,
    "vocab_size": 100352, "torch_dtype": "bfloat16", "layer_types": ["mamba"] * 36 + ["attention"] * 4}
# ibm-ai-platform/Bamba-9B, "trimmed from the real published file" (code-index file 65760752905); the trimmed copy
# leaves out vocab_size and intermediate_size, written here as published (the Llama 3 tokenizer's 128256; 14336)
REAL["Bamba-9B"] = {
    "model_type": "bamba", "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
    "mamba_d_state": 128, "attn_layer_indices": [9, 18, 27], "vocab_size": 128256, "intermediate_size": 14336}
# state-spaces/mamba-2.8b-hf config.json, "fields that matter here" (code-index file 70070065542)
REAL["mamba-2.8b-hf"] = {
    "architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 2560, "intermediate_size": 5120,
    "num_hidden_layers": 64, "state_size": 16, "conv_kernel": 4, "vocab_size": 50280, "torch_dtype": "float32"}
# state-spaces/mamba-130m-hf, trimmed (code-index file 65760752905); its vocab_size is the GPT-NeoX tokenizer's 50280,
# as in mamba-2.8b-hf above
REAL["mamba-130m-hf"] = {
    "model_type": "mamba", "num_hidden_layers": 24, "hidden_size": 768, "state_size": 16, "conv_kernel": 4,
    "expand": 2, "vocab_size": 50280}
# state-spaces/mamba-370m / -790m / -1.4b: d_model and n_layer from a port's constants, each citing the checkpoint's
# config.json (LaurentMazare/mamba.rs src/constants.rs: vocab 50277 padded to a multiple of 8 = 50280, d_state 16,
# d_conv 4), written in the -hf conversion's field names
for _name, (_d, _n) in {"mamba-370m": (1024, 48), "mamba-790m": (1536, 48), "mamba-1.4b": (2048, 48)}.items():
    REAL[_name] = {"model_type": "mamba", "hidden_size": _d, "num_hidden_layers": _n, "vocab_size": 50280,
                   "state_size": 16, "conv_kernel": 4, "expand": 2}
# nvidia/Nemotron-H-8B-Base-8K: TensorRT-LLM's modeling test copy (code-index file 5699345819, its pre-release
# model_type "mamba_hybrid" and the state-size spellings ssm_states_size / mamba_d_state); written with the released
# model_type and field name ssm_state_size (the same 128)
REAL["Nemotron-H-8B"] = {
    "attention_bias": False, "attention_dropout": 0.0, "attention_head_dim": 128, "chunk_size": 256,
    "conv_kernel": 4, "expand": 2, "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", "intermediate_size": 21504,
    "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 128,
    "mamba_proj_bias": False, "max_position_embeddings": 8192, "mlp_bias": False, "mlp_hidden_act": "relu2",
    "model_type": "nemotron_h", "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "ssm_state_size": 128, "tie_word_embeddings": False,
    "time_step_rank": 256, "use_bias": False, "use_conv_bias": True, "vocab_size": 131072}
# nvidia/Nemotron-H-47B-Base-8K and -4B-Base-8K: NeMo's NemotronHConfig47B / NemotronHConfigBase (code-index file
# 3502671081: pattern, 98 layers of 8192, mamba_state_dim 256, ffn 30720, 64 heads; 8 groups of head_dim 64, 8 query
# groups, vocab 131072) and NeMo's 4B provider test (code-index file 52188658120: 52 layers of 3072, 112 Mamba heads,
# kv_channels 128, state 128, ffn 12288), written in transformers' NemotronHConfig names; the 47B's Mamba heads are
# NeMo's derived d_inner / head_dim = 2 x 8192 / 64. The 4B's attention head (kv_channels 128) is not 3072 / 32 = 96:
# written attention_head_dim as the released Nemotron-H configs name it (the 8B's above), which planner reads;
# transformers' NemotronHConfig ignores that name but its head_dim default is the same 128
_P47 = "M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---MM---M-M*-M-M-M-M-M-"
REAL["Nemotron-H-47B"] = {
    "model_type": "nemotron_h", "hybrid_override_pattern": _P47, "num_hidden_layers": 98, "hidden_size": 8192,
    "ssm_state_size": 256, "intermediate_size": 30720, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 128, "n_groups": 8, "mamba_head_dim": 64, "mamba_num_heads": 256, "vocab_size": 131072,
    "tie_word_embeddings": False}
REAL["Nemotron-H-4B"] = {
    "model_type": "nemotron_h", "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "num_hidden_layers": 52, "hidden_size": 3072, "ssm_state_size": 128, "intermediate_size": 12288,
    "num_attention_heads": 32, "num_key_value_heads": 8, "attention_head_dim": 128, "n_groups": 8, "mamba_head_dim": 64,
    "mamba_num_heads": 112, "vocab_size": 131072, "tie_word_embeddings": False}
# tiiuae/Falcon-H1-Tiny-90M-Instruct: a port's trimmed config ("values mirror the real checkpoint", code-index file
# 54570484031), its quantization block left out; intermediate_size 768 from a converter's check of the same variant's
# config.json (code-index file 67304281555)
REAL["Falcon-H1-Tiny-90M"] = {
    "model_type": "falcon_h1", "vocab_size": 32768, "hidden_size": 512, "intermediate_size": 768,
    "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
    "rms_norm_eps": 1e-05, "rope_theta": 100000000000.0, "mamba_d_conv": 4, "mamba_d_ssm": 768, "mamba_d_state": 64,
    "mamba_d_head": 32, "mamba_n_heads": 24, "mamba_n_groups": 1, "mamba_conv_bias": True, "mamba_proj_bias": False,
    "mamba_rms_norm": False, "mamba_norm_before_gate": False, "embedding_multiplier": 0.11083984375,
    "lm_head_multiplier": 0.078125, "attention_in_multiplier": 1.0, "attention_out_multiplier": 1.0,
    "key_multiplier": 1.0, "ssm_in_multiplier": 1.0, "ssm_out_multiplier": 1.0, "tie_word_embeddings": True,
    "attention_bias": False, "projectors_bias": False}
# tiiuae/Falcon-H1-1.5B-Base shapes (24 blocks of 2048) as a KV planner's test quotes them (code-index file
# 71543829462)
REAL["Falcon-H1-1.5B"] = {
    "model_type": "falcon_h1", "num_hidden_layers": 24, "hidden_size": 2048, "intermediate_size": 4608,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 65537, "mamba_d_state": 256,
    "mamba_d_conv": 4, "mamba_n_groups": 1, "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_ssm": 3072}
# tiiuae/Falcon-H1-34B-Instruct config.json, captured whole from the hub (Sahil170595/Chimeraforge
# tests/fixtures/hybrid_configs/tiiuae_Falcon-H1-34B-Instruct.json; MANIFEST.json there gives the raw URL and date)
REAL["Falcon-H1-34B"] = json.loads(
    '{"architectures": ["FalconH1ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, '
    '"attention_in_multiplier": 1.0, "attention_out_multiplier": 0.0375, "attn_layer_indices": null, '
    '"bos_token_id": 1, "embedding_multiplier": 5.656854249492381, "eos_token_id": 11, "head_dim": 128, '
    '"hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 21504, '
    '"key_multiplier": 0.011048543456039804, "lm_head_multiplier": 0.0078125, "mamba_chunk_size": 128, '
    '"mamba_conv_bias": true, "mamba_d_conv": 4, "mamba_d_head": 128, "mamba_d_ssm": 4096, '
    '"mamba_d_state": 256, "mamba_expand": 2, "mamba_n_groups": 2, "mamba_n_heads": 32, '
    '"mamba_norm_before_gate": false, "mamba_proj_bias": false, "mamba_rms_norm": true, '
    '"mamba_use_mlp": true, "max_position_embeddings": 262144, "mlp_bias": false, '
    '"mlp_expansion_factor": 8, "mlp_multipliers": [0.1767766952966369, 0.011160714285714284], '
    '"model_type": "falcon_h1", "num_attention_heads": 20, "num_hidden_layers": 72, '
    '"num_key_value_heads": 4, "num_logits_to_keep": 1, "pad_token_id": 0, "projectors_bias": false, '
    '"rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 100000000000.0, '
    '"ssm_in_multiplier": 0.25, "ssm_multipliers": [0.3535533905932738, 0.25, 0.1767766952966369, 0.5, '
    '0.3535533905932738], "ssm_out_multiplier": 0.08838834764831845, "tie_word_embeddings": false, '
    '"torch_dtype": "bfloat16", "transformers_version": "4.52.0.dev0", "use_cache": true, '
    '"vocab_size": 261120}')
# Qwen/Qwen3.5-9B config.json, captured whole from the hub (Sahil170595/Chimeraforge
# tests/fixtures/hybrid_configs/Qwen_Qwen3.5-9B.json): its text_config declares mamba_ssm_dtype float32
REAL["Qwen3.5-9B"] = json.loads(
    '{"architectures": ["Qwen3_5ForConditionalGeneration"], "image_token_id": 248056, '
    '"model_type": "qwen3_5", "text_config": {"attention_bias": false, "attention_dropout": 0.0, '
    '"attn_output_gate": true, "dtype": "bfloat16", "eos_token_id": 248044, '
    '"full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 4096, '
    '"initializer_range": 0.02, "intermediate_size": 12288, "layer_types": ["linear_attention", '
    '"linear_attention", "linear_attention", "full_attention", "linear_attention", "linear_attention", '
    '"linear_attention", "full_attention", "linear_attention", "linear_attention", "linear_attention", '
    '"full_attention", "linear_attention", "linear_attention", "linear_attention", "full_attention", '
    '"linear_attention", "linear_attention", "linear_attention", "full_attention", "linear_attention", '
    '"linear_attention", "linear_attention", "full_attention", "linear_attention", "linear_attention", '
    '"linear_attention", "full_attention", "linear_attention", "linear_attention", "linear_attention", '
    '"full_attention"], "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, '
    '"linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128, '
    '"max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_5_text", '
    '"mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false, "num_attention_heads": 16, '
    '"num_hidden_layers": 32, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "use_cache": true, '
    '"vocab_size": 248320, "mamba_ssm_dtype": "float32", "rope_parameters": {"mrope_interleaved": true, '
    '"mrope_section": [11, 11, 10], "rope_type": "default", "rope_theta": 10000000, '
    '"partial_rotary_factor": 0.25}}, "tie_word_embeddings": false, '
    '"transformers_version": "4.57.0.dev0", "video_token_id": 248057, '
    '"vision_config": {"deepstack_visual_indexes": [], "depth": 27, "hidden_act": "gelu_pytorch_tanh", '
    '"hidden_size": 1152, "in_channels": 3, "initializer_range": 0.02, "intermediate_size": 4304, '
    '"model_type": "qwen3_5", "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 4096, '
    '"patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2}, '
    '"vision_end_token_id": 248054, "vision_start_token_id": 248053}')
# RWKV/rwkv-4-430m-pile ... rwkv-4-14b-pile: transformers' converter (huggingface/transformers
# src/transformers/models/rwkv/convert_rwkv_checkpoint_to_hf.py, code-index file 79983417) writes each hub config.json
# from NUM_HIDDEN_LAYERS_MAPPING / HIDEN_SIZE_MAPPING and the 20B tokenizer's 50277 tokens, the rest RwkvConfig's
# defaults (attention_hidden_size = hidden_size, intermediate_size = 4 x hidden_size)
for _name, (_n, _d) in {"430m": (24, 1024), "1b5": (24, 2048), "3b": (32, 2560), "7b": (32, 4096),
                        "14b": (40, 5120)}.items():
    REAL[f"rwkv-4-{_name}-pile"] = {"model_type": "rwkv", "vocab_size": 50277, "num_hidden_layers": _n,
                                     "hidden_size": _d}
# Zyphra/Zamba-7B-v1: transformers' ZambaConfig defaults, which its docstring states are Zamba-v1's (76 layers of
# 3712, a shared attention block every 6 layers from layer 2 on, 16 heads of 2 x 3712 / 16, d_state 16), written out
REAL["Zamba-7B-v1"] = {
    "model_type": "zamba", "vocab_size": 32000, "hidden_size": 3712, "num_hidden_layers": 76,
    "attn_layer_period": 6, "attn_layer_offset": 4, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 14848, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
    "n_mamba_heads": 2, "tie_word_embeddings": True}


def spec_of(cfg: dict):
    return parse_config(copy.deepcopy(cfg), where="config.json")


def _analysis(cfg: dict, ctx: int = 8192):
    return analyze(spec_of(cfg), Options(context=ctx, dtype="bf16", kv_dtype="bf16"))


_MODELS: dict[str, object] = {}


def _hf(name: str):
    if name not in _MODELS:
        _MODELS[name] = hf_model(copy.deepcopy(REAL[name]))
    return _MODELS[name]


@pytest.mark.parametrize("name", sorted(REAL))
def test_total_matches_transformers(name):
    assert count_params(spec_of(REAL[name])).total == unique_param_count(_hf(name))


def _hf_state_elements(model) -> tuple[int, int]:
    """(conv window, recurrent state) elements per sequence of transformers' model: for every recurrent mixer module
    (one with ``conv1d`` and ``A_log``), its depthwise conv's channels x (kernel - 1) window columns, plus its state:
    Mamba-1's A_log is (d_inner, d_state) (Zamba's (heads, head_dim, d_state)), one state entry each; Mamba-2's A_log
    holds one value per head, whose state is head_dim x ssm_state_size; Gated DeltaNet's one per v-head, whose state
    is head_k_dim x head_v_dim."""
    conv = rec = 0
    for m in model.modules():
        if hasattr(m, "conv1d") and hasattr(m, "A_log"):
            channels, _, kernel = m.conv1d.weight.shape
            conv += channels * (kernel - 1)
            if hasattr(m, "head_k_dim"):
                rec += m.num_v_heads * m.head_k_dim * m.head_v_dim
            else:
                rec += m.A_log.numel() if m.A_log.dim() >= 2 else m.A_log.numel() * m.head_dim * m.ssm_state_size
    return conv, rec


def _recurrent_bytes(cfg: dict) -> int:
    """Bytes per element of the recurrent state as vLLM allocates it with its defaults (the conv window: the model's
    bf16): vllm/model_executor/layers/mamba/mamba_utils.py MambaStateDtypeCalculator keeps it in
    mamba_ssm_cache_dtype, "auto" (the model dtype) unless a model's verify_and_update_config hook
    (vllm/model_executor/models/config.py) sets it: NemotronHForCausalLMConfig from the config's
    mamba_ssm_cache_dtype, float32 when absent; Qwen3_5ForConditionalGenerationConfig from text_config's
    mamba_ssm_dtype."""
    if cfg["model_type"] == "nemotron_h":
        return 4 if cfg.get("mamba_ssm_cache_dtype", "float32") == "float32" else 2
    if cfg["model_type"] == "qwen3_5":
        return 4 if cfg["text_config"].get("mamba_ssm_dtype") == "float32" else 2
    return 2


def _rwkv4_state_bytes(cfg: dict) -> int:
    """transformers' RWKV-4 state (models/rwkv/modeling_rwkv.py, RwkvModel.forward): five (batch, hidden_size,
    num_hidden_layers) tensors, the two shifted tokens in the model dtype (bf16), the WKV numerator, denominator and
    max in float32."""
    return cfg["hidden_size"] * cfg["num_hidden_layers"] * (2 * 2 + 3 * 4)


@pytest.mark.parametrize("name", sorted(REAL))
def test_state_matches_transformers_mixers(name):
    cfg = REAL[name]
    if cfg["model_type"] == "rwkv":
        want = _rwkv4_state_bytes(cfg)
    else:
        conv, rec = _hf_state_elements(_hf(name))
        want = 2 * conv + _recurrent_bytes(cfg) * rec
    assert _analysis(cfg).kv.state_bytes_per_sequence == want


def _m2(layers: int, d_inner: int, groups: int, state: int, heads: int, kernel: int = 4, ssm_bytes: int = 2) -> int:
    """Bytes of ``layers`` Mamba-2 states (vLLM's mamba2_state_shape): the conv window in bf16, the SSM state in
    ``ssm_bytes`` per element."""
    return layers * ((d_inner + 2 * groups * state) * (kernel - 1) * 2 + heads * (d_inner // heads) * state * ssm_bytes)


def _m1(layers: int, d_inner: int, state: int = 16, kernel: int = 4) -> int:
    """bf16 bytes of ``layers`` Mamba-1 states (vLLM's mamba1_state_shape)."""
    return layers * (d_inner * (kernel - 1) + d_inner * state) * 2


# (name, KV bytes per token, state bytes per sequence), bf16, by hand from each config's fields
BY_HAND = [
    # 4 attention layers x 8 KV heads x 128 x (K, V) x 2 bytes; 36 Mamba-2 layers (d_inner 8192, 1 group, d_state 128,
    # transformers' default 128 heads of 64)
    ("Granite-4.0-H-Small", 4 * 8 * 128 * 2 * 2, _m2(36, 8192, 1, 128, 128)),
    # 3 attention layers (8 KV heads of 128); 29 Mamba-2 layers (d_inner 8192, 1 group, d_state 128, 128 heads)
    ("Bamba-9B", 3 * 8 * 128 * 2 * 2, _m2(29, 8192, 1, 128, 128)),
    ("mamba-2.8b-hf", 0, _m1(64, 5120)),
    ("mamba-130m-hf", 0, _m1(24, 1536)),
    ("mamba-370m", 0, _m1(48, 2048)),
    ("mamba-790m", 0, _m1(48, 3072)),
    ("mamba-1.4b", 0, _m1(48, 4096)),
    # 4 '*' layers (8 KV heads of 128); 24 'M' layers: 128 heads x 64, 8 groups, d_state 128; NemotronH's SSM state
    # in fp32 (vLLM's NemotronHForCausalLMConfig: mamba_ssm_cache_dtype, float32 when the config leaves it out)
    ("Nemotron-H-8B", 4 * 8 * 128 * 2 * 2, _m2(24, 8192, 8, 128, 128, ssm_bytes=4)),
    # 5 '*' layers; 45 'M' layers: 256 heads x 64, 8 groups, d_state 256
    ("Nemotron-H-47B", 5 * 8 * 128 * 2 * 2, _m2(45, 16384, 8, 256, 256, ssm_bytes=4)),
    # 4 '*' layers; 24 'M' layers: 112 heads x 64 (d_inner 7168, not 2 x 3072), 8 groups, d_state 128
    ("Nemotron-H-4B", 4 * 8 * 128 * 2 * 2, _m2(24, 7168, 8, 128, 112, ssm_bytes=4)),
    # every layer runs attention (2 KV heads x 64) beside Mamba-2 (d_ssm 768, 1 group, d_state 64, 24 heads of 32)
    ("Falcon-H1-Tiny-90M", 24 * 2 * 64 * 2 * 2, _m2(24, 768, 1, 64, 24)),
    ("Falcon-H1-1.5B", 24 * 2 * 128 * 2 * 2, _m2(24, 3072, 1, 256, 48)),
    # 72 layers of attention (4 KV heads x 128) beside Mamba-2 (d_ssm 4096, 2 groups, d_state 256, 32 heads of 128)
    ("Falcon-H1-34B", 72 * 4 * 128 * 2 * 2, _m2(72, 4096, 2, 256, 32)),
    # 8 full-attention layers (4 KV heads of 256); 24 Gated DeltaNet layers: conv over q, k (16 heads x 128) and v
    # (32 x 128), kernel 4, and 32 v-heads of a 128 x 128 state, the latter in fp32 (the config's mamba_ssm_dtype,
    # which vLLM's Qwen3.5 hook makes its mamba_ssm_cache_dtype)
    ("Qwen3.5-9B", 8 * 4 * 256 * 2 * 2, 24 * ((2 * 16 * 128 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 4)),
    # 13 hybrid layers (layers 2, then 3 + i for i % 6 == 4: ZambaConfig's layers_block_type) cache the shared
    # block's K/V: 16 heads of 2 x 3712 / 16 = 464; all 76 layers hold a Mamba-1 state of d_inner 7424
    ("Zamba-7B-v1", 13 * 16 * 464 * 2 * 2, _m1(76, 7424)),
    # RWKV-4: no per-token cache; per layer two shifted tokens (bf16) and the fp32 WKV numerator / denominator / max
    ("rwkv-4-430m-pile", 0, 24 * 1024 * (2 * 2 + 3 * 4)),
    ("rwkv-4-1b5-pile", 0, 24 * 2048 * (2 * 2 + 3 * 4)),
    ("rwkv-4-3b-pile", 0, 32 * 2560 * (2 * 2 + 3 * 4)),
    ("rwkv-4-7b-pile", 0, 32 * 4096 * (2 * 2 + 3 * 4)),
    ("rwkv-4-14b-pile", 0, 40 * 5120 * (2 * 2 + 3 * 4)),
]


def test_by_hand_covers_every_config():
    assert sorted(n for n, _, _ in BY_HAND) == sorted(REAL)


@pytest.mark.parametrize("name,per_token,state", BY_HAND)
def test_kv_and_state_bytes_by_hand(name, per_token, state):
    kv = _analysis(REAL[name]).kv
    assert (kv.bytes_per_token, kv.state_bytes_per_sequence) == (per_token, state)


def test_state_does_not_grow_with_context():
    """The recurrent state is per sequence: only the attention layers' K/V grows with the context."""
    for name in ("Nemotron-H-8B", "Falcon-H1-1.5B", "mamba-2.8b-hf"):
        short, long = _analysis(REAL[name], 1024), _analysis(REAL[name], 65536)
        assert short.kv.state_bytes_per_sequence == long.kv.state_bytes_per_sequence
        assert long.kv_bytes_per_sequence - short.kv_bytes_per_sequence == 64512 * long.kv.bytes_per_token
