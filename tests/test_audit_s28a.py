"""Wave s28 A: mlx-lm's registry (``ml-explore/mlx-lm``, mlx_lm/models/<model_type>.py) and leftovers of earlier
audits that planner did not know (analysis/families/s28a_mlx.py, s28a_legacy.py, s28a_refusals.py).

- Kwai Klear (``Klear``): refused before ("n_shared_experts set, but model_type 'Klear' is not a known family"); now
  counted, oracle a hand count of mlx-lm's Klear.py module shapes, agreeing with the model card's 46B / 2.5B active.
- Apple Foundation Model (``afm7``): "standard decoder fields hidden_size are missing" before; now counted against a
  hand count of mlx-lm's afm7.py (KV-reuse layers without K/V, two K/V quantisation scalars per ordinary layer).
- Lille 130M (``lille-130m``): "required field 'intermediate_size' is missing" before; counted against lille-130m.py.
- Phixtral (``phi-msft`` + num_local_experts): ``build_phixtral`` (not registered: model_type phi-msft is read by
  analysis/families/s28d_lmdeploy_mlc.py, which refuses Phixtral) checked against mlx-lm's phixtral.py shapes.
- ``youtu_llm`` (Youtu-LLM's original model_type): read as a generic Llama before; now transformers' ``youtu``.
- Refact (``gpt_refact``), RuGPT-3 XL (``rugpt3xl``): generic-decoder error / generic Llama before; now counted.
- state-spaces mamba_ssm configs (no model_type): "required field 'model_type' is missing" before; now transformers'
  Mamba / Mamba-2 with the same modules (oracle: transformers on the meta device, and the published 129,135,360).
- LFM2-Audio, MERaLiON-2, ARWKV: refused by name (read in part, or as a generic decoder, before).
"""

from __future__ import annotations

import json
import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.dtypes import get_dtype
from planner.analysis.fields import Fields
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.spec import RouterKind
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format
from tests.clirun import analyze_json, run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")
CONTEXT = 8192


_analyze = analyze_json  # at CONTEXT (8,192)


def _refused(tmp_path, cfg: dict, *fragments: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error(*fragments)


# ---- Kwai Klear ------------------------------------------------------------------------------------------------------

#: Kwai-Klear/Klear-46B-A2.5B-Instruct/config.json as a public MLX port's test quotes it field for field (find_string
#: id 61107256645; its mlx-lm "quantization" block left out)
KLEAR_46B = {
    "architectures": ["KlearMoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "decoder_sparse_step": 1, "dtype": "bfloat16", "eos_token_id": [151645, 151643], "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8064, "max_position_embeddings": 65536,
    "mlp_only_layers": [], "model_type": "Klear", "moe_aux_loss_coeff": 0.0001, "moe_intermediate_size": 896,
    "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 256,
    "num_experts_per_tok": 8, "num_hidden_layers": 32, "num_key_value_heads": 4, "output_router_logits": False,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 500000.0, "routed_scaling_factor": 2.5,
    "router_aux_loss_coef": 0.001, "sliding_window": None, "tie_word_embeddings": False, "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}


def _klear_layer(h, heads, kv, experts, moe_inter, n_shared, inter, sparse: bool) -> int:
    """mlx-lm Klear.py: q/k/v/o bias-free (head_dim h / heads), q_norm / k_norm (head_dim), two RMSNorms; a sparse
    layer's KlearSparseMoeBlock: gate (experts x h), SwitchGLU experts (3 x h x moe_inter each), shared_experts
    (KlearMLP of moe_inter x n_shared), coefficient Linear(h, 2) with its bias, expert_bias (experts); else KlearMLP."""
    hd = h // heads
    attn = 2 * h * heads * hd + 2 * h * kv * hd + 2 * hd
    ffn = (experts * h + experts * 3 * h * moe_inter + 3 * h * moe_inter * n_shared + (2 * h + 2) + experts
           if sparse else 3 * h * inter)
    return attn + ffn + 2 * h


def test_klear_46b_equals_the_hand_count_and_the_card():
    spec = parse_config(KLEAR_46B)
    p = count_params(spec)
    v, h = 151936, 2048
    layer = _klear_layer(h, 32, 4, 256, 896, 1, 8064, sparse=True)
    total = 32 * layer + 2 * v * h + h  # embed_tokens, untied lm_head, final norm
    assert p.total == total == 46_214_690_880
    # per token: 8 of 256 routed experts (the shared MLP, router, coefficient and expert_bias always)
    assert p.active == total - 32 * 248 * 3 * h * 896 == 2_526_820_416
    # the Klear1.0 README: "46 billion total parameters but just 2.5 billion active"
    assert round(p.total / 1e9) == 46 and round(p.active / 1e9, 1) == 2.5
    moe = spec.layers[0].ffn
    assert moe.shared_intermediate_size == 896 and moe.shared_coefficient and moe.correction_bias_param
    assert spec.numerics.router == RouterKind.SIGMOID and spec.numerics.norm_topk_prob
    assert spec.numerics.routed_scaling_factor == 1.0  # mlx-lm's ModelArgs has no such field: never applied
    assert any("routed_scaling_factor (2.5) is not applied" in c for c in spec.caveats)
    # GQA of 4 K/V heads x 64 on every layer
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(1) == 32 * 2 * 4 * 64 * 2


def test_klear_dense_layers_and_the_coefficient_op(tmp_path):
    cfg = dict(KLEAR_46B, num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[3], n_shared_experts=2)
    p = count_params(parse_config(cfg))
    h, v = 2048, 151936
    # (i + 1) % 2 == 0 and not in mlp_only_layers: only layer 1 is sparse
    layers = [_klear_layer(h, 32, 4, 256, 896, 2, 8064, sparse=i == 1) for i in range(4)]
    assert p.total == sum(layers) + 2 * v * h + h
    spec = parse_config(cfg)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, cached_tokens=100)
    blend = [o for o in ops if o.name == "coefficient"]
    assert len(blend) == 1 and blend[0].flops == 2 * 2 * h  # one token: its 2 blend logits
    assert _analyze(tmp_path, dict(KLEAR_46B, model_type="klear"))["params"]["total"] == 46_214_690_880
    tiny = dict(KLEAR_46B, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, intermediate_size=64, vocab_size=128)
    d = tmp_path / "klear"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(tiny))
    run("verify", str(d), "--device", "cpu").assert_error("coefficient")


# ---- Apple Foundation Model (afm7) -------------------------------------------------------------------------------

#: the config.json mlx-lm's conversion script for Apple's on-device foundation model writes (get_model_config;
#: find_string id 36461735594)
AFM7 = {"model_type": "afm7", "vocab_size": 153600, "hidden_dim": 2048, "num_layers": 56, "num_kv_reuse_layers": 21,
        "num_heads": 16, "num_kv_heads": 2, "hidden_dim_scale_factor": 3.25, "rope_theta": 500000.0}


def test_afm7_equals_the_hand_count():
    spec = parse_config(AFM7)
    h, v, heads, kv, hd = 2048, 153600, 16, 2, 128
    mlp = 3 * h * int(h * 3.25) + 2 * h  # gate / up / down of 6656, input / post-attention RMSNorms
    # afm7.py Attention: qkv_proj (heads + 2 kv) x hd, out_proj, q_norm / k_norm (hd), quant_key / value_scale scalars
    ordinary = h * (heads + 2 * kv) * hd + h * h + 2 * hd + 2 + mlp
    # KVReuseAttention: q_proj, out_proj, q_norm only
    reuse = 2 * h * h + hd + mlp
    total = 35 * ordinary + 21 * reuse + v * h + h  # the embedding tied (embedding.as_linear), output_norm
    assert count_params(spec).total == total == 3_111_368_134
    # only the 35 ordinary layers cache K/V; the last 21 read layer 34's
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(1) == 35 * 2 * kv * hd * 2
    assert [layer.mixer.kv_shared for layer in spec.layers].count(True) == 21
    assert any("layer 34's K/V" in c for c in spec.caveats)


def test_afm7_bad_reuse_count_is_one_error(tmp_path):
    _refused(tmp_path, dict(AFM7, num_kv_reuse_layers=56), "num_kv_reuse_layers")


# ---- Lille 130M --------------------------------------------------------------------------------------------------

#: Nikity/lille-130m-instruct as the Nikityyy/lille README's "Model Architecture" gives it (24 layers, 640 wide, 10
#: heads, 2 KV heads, 512 context, the Hastings tokenizer's 32,768 vocabulary), under LilleConfig's field names
#: (huggingface/model_hf.py: model_type "lille-130m", tie_word_embeddings always true)
LILLE = {"model_type": "lille-130m", "block_size": 512, "vocab_size": 32768, "n_layer": 24, "n_head": 10,
         "n_embd": 640, "n_kv_heads": 2, "layer_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True}


def test_lille_equals_the_hand_count():
    spec = parse_config(LILLE)
    h, v, heads, kv = 640, 32768, 10, 2
    hd = h // heads
    ffn = 256 * round(int(8 * h / 3) / 256)  # Lille130mMLP
    assert ffn == 1792
    layer = h * (heads + 2 * kv) * hd + h * h + h + 3 * h * ffn + h  # qkv_proj, out_proj, attention.norm, MLP, its norm
    total = 24 * layer + v * h + h  # tok_embeddings (tied: as_linear), transformer.norm
    assert count_params(spec).total == total == 127_171_200
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(1) == 24 * 2 * kv * hd * 2


def test_lille_verify_self_checks(tmp_path):
    from tests.clirun import verify_self_checks

    verify_self_checks(tmp_path, dict(LILLE, n_layer=2, n_embd=64, n_head=4, n_kv_heads=2, vocab_size=256))


# ---- Phixtral ------------------------------------------------------------------------------------------------------

#: mlabonne/phixtral-4x2_8/config.json as a public MLX port's test quotes it (find_string id 60947397877; its
#: quantization blocks and auto_map left out)
PHIXTRAL_4X2_8 = {
    "activation_function": "gelu_new", "architectures": ["PhiForCausalLM"], "attn_pdrop": 0.0, "embd_pdrop": 0.0,
    "flash_attn": False, "flash_rotary": False, "fused_dense": False, "img_processor": None, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "phi-msft", "n_embd": 2560, "n_head": 32, "n_head_kv": None,
    "n_inner": None, "n_layer": 32, "n_positions": 2048, "num_experts_per_tok": 2, "num_local_experts": 4,
    "resid_pdrop": 0.1, "rotary_dim": 32, "tie_word_embeddings": False, "torch_dtype": "float16",
    "transformers_version": "4.35.2", "vocab_size": 51200,
}


def test_phixtral_equals_the_hand_count():
    from planner.analysis.families.s28a_mlx import build_phixtral

    spec = build_phixtral(Fields(PHIXTRAL_4X2_8, "config.json"), "phi-msft")
    h, v, e, k = 2560, 51200, 4, 2
    # phixtral.py ParallelBlock: ln (weight, bias); mixer Wqkv (3h, biased) and out_proj (biased); moe.gate (e x h,
    # no bias); e experts of fc1 (h -> 4h) and fc2 (4h -> h), biased; OutputHead: ln and a biased linear
    expert = 2 * h * 4 * h + 4 * h + h
    layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + e * h + e * expert
    total = v * h + 32 * layer + 2 * h + h * v + v
    p = count_params(spec)
    assert p.total == total == 7_814_405_120
    assert p.active == total - 32 * (e - k) * expert
    assert spec.numerics.router == RouterKind.TOPK_SOFTMAX
    assert spec.layers[0].parallel and spec.layers[0].mixer.rotary_dim == 32


# ---- Youtu-LLM under its original model_type ----------------------------------------------------------------------

#: tencent/Youtu-LLM-2B's config as a public MLX port's test quotes it (find_string id 55148034008)
YOUTU_2B = {"model_type": "youtu", "hidden_size": 2048, "intermediate_size": 6144, "kv_lora_rank": 512,
            "num_attention_heads": 16, "num_hidden_layers": 32, "num_key_value_heads": 16, "q_lora_rank": 1536,
            "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": True, "v_head_dim": 128,
            "vocab_size": 128256, "rope_parameters": {"rope_theta": 1600000, "rope_type": "default"}}


def test_youtu_llm_is_youtu():
    spec = parse_config(dict(YOUTU_2B, model_type="youtu_llm"))
    assert not spec.generic and spec.layers[0].mixer.kind == parse_config(YOUTU_2B).layers[0].mixer.kind
    oracle = unique_param_count(hf_model(YOUTU_2B))
    assert count_params(spec).total == oracle == 1_961_560_064  # "Youtu-LLM-2B: 1.96B parameters"
    # absent fields take YoutuConfig's defaults (mlx-lm youtu_llm.py's: the 2B's shapes) ...
    bare = {"model_type": "youtu_llm", "hidden_size": 2048, "num_hidden_layers": 32, "num_attention_heads": 16,
            "vocab_size": 128256, "intermediate_size": 6144}
    assert count_params(parse_config(bare)).total == oracle
    # ... but the shape fields stay required, as for model_type youtu
    for key in bare:
        if key != "model_type":
            with pytest.raises(ConfigError, match=f"required field '{key}' is missing"):
                parse_config({k: v for k, v in bare.items() if k != key})


# ---- Refact, RuGPT-3 XL ---------------------------------------------------------------------------------------------

#: smallcloudai/Refact-1_6B-fim/config.json (the fields its MLX port's load_model and llama.cpp's RefactModel read:
#: n_embd, n_head, n_layer, n_positions, vocab_size 49216, multi_query; auto_map and sampling fields left out)
REFACT_1_6B = {"architectures": ["GPTRefactForCausalLM"], "model_type": "gpt_refact", "vocab_size": 49216,
               "n_embd": 2048, "n_head": 32, "n_layer": 32, "n_positions": 4096, "multi_query": True,
               "layer_norm_epsilon": 1e-5, "attention_softmax_in_fp32": True, "scale_attention_softmax_in_fp32": True,
               "attention_bias_in_fp32": True, "torch_dtype": "bfloat16"}


def test_refact_equals_the_hand_count(tmp_path):
    spec = parse_config(REFACT_1_6B)
    h, v, heads = 2048, 49216, 32
    hd = h // heads
    f = 256 * math.ceil(int(2 * 4 * h / 3) / 256)  # Refact's MLP: 5632
    # ln_1 / ln_2 (weight only), q (h x h), kv (2 hd x h), c_proj (h x h), gate_up_proj (2f x h), mlp c_proj (h x f)
    layer = 2 * h + h * h + 2 * hd * h + h * h + 2 * f * h + f * h
    total = 32 * layer + 2 * v * h + h  # wte, untied lm_head, ln_f
    assert count_params(spec).total == total == 1_585_842_176  # "Refact-1.6B"
    m = spec.layers[0].mixer
    assert m.alibi and m.num_key_value_heads == 1 and not m.rotary_dim
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(1) == 32 * 2 * hd * 2  # MQA: one K/V head
    _refused(tmp_path, dict(REFACT_1_6B, multi_query=False), "multi_query")


#: the converted ai-forever/rugpt3xl (RuGPT3XLConfig's fields and defaults, configuration_rugpt3xl.py, find_string id
#: 53383626875; the tie as the modeling file's _tied_weights_keys and its docstring, "tied LM head", describe it)
RUGPT3XL = {"architectures": ["RuGPT3XLForCausalLM"], "model_type": "rugpt3xl", "vocab_size": 50264,
            "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 8192,
            "hidden_act": "gelu_new", "max_position_embeddings": 2048, "layer_norm_eps": 1e-5,
            "tie_word_embeddings": True, "sparse_mode": "alternating"}


def test_rugpt3xl_equals_the_hand_count():
    spec = parse_config(RUGPT3XL)
    h, v, inter, pos = 2048, 50264, 8192, 2048
    # modeling_rugpt3xl.py: two biased LayerNorms, q/k/v/o Linear(h, h) with biases, up / down with biases
    layer = 2 * 2 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h)
    total = 24 * layer + v * h + pos * h + 2 * h  # embed_tokens (tied head), embed_positions, final LayerNorm
    assert count_params(spec).total == total == 1_315_737_600
    # the conversion's README: "model.safetensors # 2.6 GB" (16-bit weights)
    assert round(2 * total / 1e9, 1) == 2.6
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(1) == 24 * 2 * h * 2  # MHA, dense in sparse layers too
    assert any("sparse_mode alternating" in c for c in spec.caveats)


# ---- mamba_ssm configs (no model_type) ----------------------------------------------------------------------------

#: state-spaces/mamba-130m/config.json (mamba_ssm's MambaConfig fields)
MAMBA_130M = {"d_model": 768, "n_layer": 24, "vocab_size": 50277, "ssm_cfg": {}, "rms_norm": True,
              "residual_in_fp32": True, "fused_add_norm": True, "pad_vocab_size_multiple": 8}
#: state-spaces/mamba2-130m/config.json
MAMBA2_130M = {"d_model": 768, "d_intermediate": 0, "n_layer": 24, "vocab_size": 50277, "ssm_cfg": {"layer": "Mamba2"},
               "attn_layer_idx": [], "attn_cfg": {}, "rms_norm": True, "residual_in_fp32": True,
               "fused_add_norm": True, "pad_vocab_size_multiple": 16, "tie_embeddings": True}


def test_mamba_ssm_configs_read_as_transformers_mamba(tmp_path):
    d = _analyze(tmp_path, MAMBA_130M)
    # transformers' MambaForCausalLM of state-spaces/mamba-130m-hf's shapes (vocabulary 50277 padded to 50280)
    oracle = unique_param_count(hf_model({"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24,
                                          "vocab_size": 50280, "state_size": 16, "expand": 2, "conv_kernel": 4,
                                          "time_step_rank": "auto", "tie_word_embeddings": True}))
    assert d["params"]["total"] == oracle == 129_135_360  # mamba-130m's published count
    assert d["kv_cache"]["bytes_per_token"] == 0
    assert any("mamba_ssm config" in c for c in d["caveats"])
    d2 = _analyze(tmp_path, MAMBA2_130M, "mamba2.json")
    oracle2 = unique_param_count(hf_model({"model_type": "mamba2", "hidden_size": 768, "num_hidden_layers": 24,
                                           "vocab_size": 50288, "state_size": 128, "expand": 2, "head_dim": 64,
                                           "num_heads": 24, "n_groups": 1, "conv_kernel": 4,
                                           "tie_word_embeddings": True}))
    assert d2["params"]["total"] == oracle2 == 128_989_632


def test_mamba_ssm_layouts_transformers_lacks_are_refused(tmp_path):
    _refused(tmp_path, dict(MAMBA2_130M, attn_layer_idx=[9, 18]), "attn_layer_idx", "hybrid")
    _refused(tmp_path, dict(MAMBA2_130M, d_intermediate=1536), "d_intermediate")
    _refused(tmp_path, dict(MAMBA_130M, rms_norm=False), "rms_norm false")
    _refused(tmp_path, dict(MAMBA_130M, ssm_cfg={"layer": "Mamba3"}), "Mamba3")
    _refused(tmp_path, dict(MAMBA_130M, ssm_cfg=[1]), "ssm_cfg")
    # the mixer's settings are checked under their own names (a string expand, a headdim that splits no head)
    _refused(tmp_path, dict(MAMBA2_130M, ssm_cfg={"layer": "Mamba2", "expand": "2"}), "ssm_cfg", "'expand'")
    _refused(tmp_path, dict(MAMBA2_130M, ssm_cfg={"layer": "Mamba2", "headdim": 100}), "ssm_cfg",
             "'headdim' (100) must divide expand x d_model (1536)")
    _refused(tmp_path, dict(MAMBA_130M, ssm_cfg={"d_state": -1}), "ssm_cfg", "'d_state'")
    # a config with neither model_type nor these fields keeps its old error
    _refused(tmp_path, {"d_model": 768}, "required field 'model_type' is missing")


# ---- refused by name -----------------------------------------------------------------------------------------------

def test_lfm2_audio_meralion2_arwkv_are_refused(tmp_path):
    lfm = {"model_type": "lfm2", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536}
    # the liquid-audio layout: no model_type, the backbone under "lfm"
    _refused(tmp_path, {"architectures": ["LFM2AudioModel"], "codebooks": 8, "lfm": lfm, "encoder": {},
                        "depthformer": {}}, "LFM2-Audio", "depthformer")
    # an MLX port's layout: model_type lfm2_audio over a text_config (read as that LFM2 alone before)
    _refused(tmp_path, {"model_type": "lfm2_audio", "text_config": lfm}, "LFM2-Audio", "depthformer")
    gemma2 = {"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "vocab_size": 256000}
    _refused(tmp_path, {"model_type": "meralion2", "text_config": gemma2, "speech_config": {"model_type": "whisper"}},
             "MERaLiON-2", "Whisper")
    _refused(tmp_path, {"architectures": ["RwkvHybridForCausalLM"], "model_type": "rwkv_hybrid", "hidden_size": 3584,
                        "num_hidden_layers": 28, "num_attention_heads": 28, "vocab_size": 152064,
                        "intermediate_size": 18944}, "ARWKV", "RWKV-7")


def test_refact_and_rugpt3xl_verify_self_checks(tmp_path):
    from tests.clirun import verify_self_checks

    verify_self_checks(tmp_path, dict(REFACT_1_6B, n_layer=2, n_embd=64, n_head=4, vocab_size=256), name="refact")
    verify_self_checks(tmp_path, dict(RUGPT3XL, num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                      intermediate_size=128, vocab_size=256, max_position_embeddings=64),
                       name="rugpt3xl")


# ---- Pixtral under its own model_type -------------------------------------------------------------------------------

#: mistral-community/pixtral-12b's config.json fields (model_type llava there: a Pixtral tower, a Mistral text model),
#: under the top-level model_type pixtral that mlx-lm's pixtral.py reads
PIXTRAL_12B = {"model_type": "pixtral", "image_token_index": 10, "projector_hidden_act": "gelu",
               "vision_feature_layer": -1, "vision_feature_select_strategy": "full",
               "text_config": {"model_type": "mistral", "hidden_size": 5120, "head_dim": 128,
                               "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 40,
                               "num_key_value_heads": 8,
                               "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "vocab_size": 131072,
                               "max_position_embeddings": 1024000},
               "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096,
                                 "num_hidden_layers": 24, "num_attention_heads": 16, "patch_size": 16,
                                 "image_size": 1024, "num_channels": 3, "rope_theta": 10000.0, "head_dim": 64}}


def test_pixtral_top_level_is_the_llava_layout(tmp_path):
    d = _analyze(tmp_path, PIXTRAL_12B)
    oracle = unique_param_count(hf_model(dict(PIXTRAL_12B, model_type="llava")))  # LlavaForConditionalGeneration
    assert d["params"]["total"] == oracle == 12_682_739_712  # Pixtral-12B's 12.7B
    assert d["kv_cache"]["bytes_per_token"] == 40 * 2 * 8 * 128 * 2
    _refused(tmp_path, {k: v for k, v in PIXTRAL_12B.items() if k != "vision_config"}, "vision_config of model_type "
             "pixtral")


def test_lille_and_afm7_bad_input_is_one_error(tmp_path):
    _refused(tmp_path, dict(LILLE, tie_word_embeddings=False), "tie_word_embeddings")
    _refused(tmp_path, dict(LILLE, n_head=7), "n_head")
    _refused(tmp_path, dict(AFM7, num_heads="16"), "num_heads")
    _refused(tmp_path, dict(KLEAR_46B, n_shared_experts=0), "n_shared_experts")
