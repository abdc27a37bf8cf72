"""Session 27 coverage audit (helper W2: vLLM's registry table and llama.cpp's convert_hf_to_gguf.py): architectures
planner read wrongly, refused by name. Before: Dream / DiffuCoder (``Dream``) and RND1 (``rnd1``) read as a generic
Llama with a "not a known family" warning (autoregressive figures for masked-diffusion LMs); Cheers (``umm``) read as
its Qwen2 ``text_config`` alone (VAE, SigLIP tower, projector and generation modules uncounted, no warning)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: Dream-org/Dream-v0-Instruct-7B's geometry as a public Rust port's parser test copies its config.json
#: (find_string id 69519966472, "Dream-7B — Qwen2.5-7B layout, run non-causally"), with architectures / mask_token_id
#: as the DiffuCoder configs in a public dLLM server's tests carry them (id 56203479481)
DREAM_7B = {"architectures": ["DreamModel"], "model_type": "Dream", "hidden_size": 3584, "num_hidden_layers": 28,
            "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
            "rms_norm_eps": 1e-6, "rope_theta": 1_000_000.0, "tie_word_embeddings": False, "mask_token_id": 151666}

#: radicalnumerics/RND1-Base-0910 as its RND1Config defaults describe it (a Qwen3-30B-A3B body; public copies of
#: configuration_rnd.py, find_string ids 58664702869 / 45235698656: model_type "rnd1", is_causal and use_cache forced off)
RND1 = {"architectures": ["RND1LM"], "model_type": "rnd1", "hidden_size": 2048, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
        "norm_topk_prob": True, "rope_theta": 1_000_000.0, "tie_word_embeddings": False, "mask_token_id": 151669,
        "num_diffusion_steps": 256}

#: Cheers (ai9stars/Cheers): CheersConfig / UMMConfig (model_type "umm") as vLLM's configs/cheers.py and the hub's
#: configuration file give it (find_string ids 52053092028, 53358047271): a Qwen2-7B text_config (vLLM's
#: _CHEERS_TEXT_DEFAULTS), a SigLIP2 vision_representation_config and the VAE encoder / decoder configs (vLLM's
#: cheers.py defaults); the tower's sizes are SigLIP's so400m ones, for shape only
CHEERS = {"architectures": ["CheersForConditionalGeneration"], "model_type": "umm",
          "text_config": {"model_type": "qwen2", "num_hidden_layers": 28, "num_attention_heads": 28,
                          "num_key_value_heads": 4, "hidden_size": 3584, "intermediate_size": 18944,
                          "rope_theta": 1_000_000.0, "vocab_size": 152064, "max_position_embeddings": 131072},
          "vision_representation_config": {"model_type": "siglip2_vision_model", "hidden_size": 1152,
                                           "intermediate_size": 4304, "num_hidden_layers": 27,
                                           "num_attention_heads": 16, "patch_size": 16, "image_size": 512},
          "vae_encoder_config": {"in_channels": 3, "ch": 128, "ch_mult": [1, 2, 4, 4], "num_res_blocks": 2,
                                 "z_channels": 32},
          "vae_decoder_config": {"in_channels": 3, "out_ch": 3, "ch": 128, "ch_mult": [1, 2, 4, 4],
                                 "num_res_blocks": 2, "z_channels": 32}}


@pytest.mark.parametrize("cfg, title, fragment", [
    (DREAM_7B, "Dream / DiffuCoder", "masked-diffusion"),
    (RND1, "RND1", "masked-diffusion"),
    (CHEERS, "Cheers", "VAE encoder"),
])
def test_refused_by_name(cfg, title, fragment):
    with pytest.raises(UnsupportedModelError, match=fragment) as exc:
        parse_config(cfg)
    assert title in str(exc.value)


@pytest.mark.parametrize("cfg, model_type", [(DREAM_7B, "Dream"), (RND1, "rnd1"), (CHEERS, "umm")])
@pytest.mark.parametrize("command", ["analyze", "trace", "serve"])
def test_every_command_one_error_line(tmp_path, cfg, model_type, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run(command, str(path)).assert_error(model_type, "not supported yet")


def test_dream_pointer_is_qwen2s_exact_count():
    """The refusal points at model_type qwen2 for Dream's parameters: with it, planner's count is transformers'
    Qwen2ForCausalLM's (q/k/v biased, untied head), checked at two layers against the class on the meta device."""
    small = dict(DREAM_7B, model_type="qwen2", num_hidden_layers=2, vocab_size=1000)
    del small["architectures"]
    assert count_params(parse_config(small)).total == unique_param_count(hf_model(small))
    # the whole 7B: the Qwen2.5-7B shape (embedding and head 152,064 x 3,584 each)
    h, inter, kv = 3584, 18944, 4 * 128
    layer = h * h + h + 2 * (h * kv + kv) + h * h + 3 * h * inter + 2 * h
    assert count_params(parse_config(dict(DREAM_7B, model_type="qwen2"))).total == \
        2 * 152064 * h + 28 * layer + h == 7_615_616_512


# ---- AI2's original OLMo (hf_olmo; llama.cpp registers OLMoForCausalLM): before, "unknown model_type 'hf_olmo', read
# as a generic Llama-style decoder: required field 'intermediate_size' is missing"; now read through transformers'
# conversion mapping (convert_olmo_weights_to_hf.py: intermediate_size = (mlp_hidden_size or mlp_ratio x d_model) // 2,
# vocab_size = embedding_size, tie_word_embeddings = weight_tying) as its olmo row

#: the ai2-olmo ModelConfig keys as a public DataDecide converter test copies an hf_olmo config (find_string id
#: 70108735285), with the OLMo-1 block's switches (weightless LayerNorm: layer_norm_type default, no affine) and
#: OLMo-1B's geometry (d_model 2048, 16 heads, 16 layers, mlp_ratio 8, embedding_size 50304 over vocab 50280, tied)
OLMO_1B = {"model_type": "hf_olmo", "architectures": ["OLMoForCausalLM"], "activation_type": "swiglu", "alibi": False,
           "attention_layer_norm": False, "bias_for_layer_norm": None, "block_group_size": 1,
           "block_type": "sequential", "clip_qkv": None, "d_model": 2048, "embedding_size": 50304,
           "eos_token_id": 50279, "include_bias": False, "layer_norm_type": "default",
           "layer_norm_with_affine": False, "max_sequence_length": 2048, "mlp_hidden_size": None, "mlp_ratio": 8,
           "multi_query_attention": False, "n_heads": 16, "n_kv_heads": None, "n_layers": 16, "pad_token_id": 1,
           "rope": True, "rope_theta": 10000, "scale_logits": False, "vocab_size": 50280, "weight_tying": True}


def _olmo_hf(cfg: dict) -> dict:
    """transformers' OlmoConfig for an hf_olmo config, written out here from convert_olmo_weights_to_hf.py."""
    inter = (cfg["mlp_hidden_size"] or cfg["mlp_ratio"] * cfg["d_model"]) // 2
    return {"model_type": "olmo", "hidden_size": cfg["d_model"], "num_attention_heads": cfg["n_heads"],
            "num_key_value_heads": cfg["n_heads"], "num_hidden_layers": cfg["n_layers"], "intermediate_size": inter,
            "vocab_size": cfg["embedding_size"], "tie_word_embeddings": cfg["weight_tying"],
            "clip_qkv": cfg["clip_qkv"]}


def test_hf_olmo_equals_transformers_olmo_on_meta():
    small = dict(OLMO_1B, n_layers=2, embedding_size=1024)
    spec = parse_config(small)
    assert count_params(spec).total == unique_param_count(hf_model(_olmo_hf(small)))
    untied = dict(small, weight_tying=False, mlp_hidden_size=11008, clip_qkv=8.0)
    assert count_params(parse_config(untied)).total == unique_param_count(hf_model(_olmo_hf(untied)))
    assert not any("not a known family" in c for c in spec.caveats)


def test_hf_olmo_1b_hand_count():
    """OLMo-1B: tied 50,304 x 2,048 embedding; per layer q / k / v / o (2048^2 each, bias-free) and SwiGLU of 8,192
    (ff_proj 16,384 rows split in two); weightless LayerNorms: no norm parameters at all."""
    p = count_params(parse_config(OLMO_1B))
    assert p.total == 50304 * 2048 + 16 * (4 * 2048 * 2048 + 3 * 2048 * 8192) == 1_176_764_416


@pytest.mark.parametrize("change, fragment", [
    ({"layer_norm_type": "rms", "layer_norm_with_affine": True}, "layer_norm_type"),  # DataDecide's RMSNorm OLMos
    ({"attention_layer_norm": True}, "attention_layer_norm"),
    ({"alibi": True, "rope": False}, "alibi"),
    ({"block_type": "parallel"}, "block_type"),
    ({"n_kv_heads": 4}, "n_kv_heads"),
    ({"multi_query_attention": True}, "multi_query_attention"),
])
def test_hf_olmo_other_blocks_refused_by_name(tmp_path, change, fragment):
    cfg = dict(OLMO_1B, **change)
    with pytest.raises(UnsupportedModelError, match=fragment):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("hf_olmo", fragment)


@pytest.mark.parametrize("key, fragment", [("include_bias", "include_bias True"), ("rope", "rope False"),
                                           ("layer_norm_with_affine", "layer_norm_with_affine True")])
def test_hf_olmo_absent_switches_take_the_ai2_olmo_defaults(key, fragment):
    """ai2-olmo's ModelConfig defaults are biases, affine LayerNorms and no RoPE (olmo/config.py): a config that leaves
    one of those switches out describes that block, not OLMo-1's, and is refused rather than read as OLMo-1."""
    cfg = {k: v for k, v in OLMO_1B.items() if k != key}
    with pytest.raises(UnsupportedModelError, match=fragment):
        parse_config(cfg)


# ---- llama.cpp-registered architectures a generic read took for Llama (rwkv6qwen2, plm) or failed on with a
# misleading "intermediate_size missing" (codeshell): refused by name

#: QRWKV6's config as a public serving tool's test writes it (find_string id 61450664040)
QRWKV6 = {"architectures": ["RWKV6Qwen2ForCausalLM"], "model_type": "rwkv6qwen2", "max_position_embeddings": 8192,
          "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8,
          "intermediate_size": 27648, "vocab_size": 152064}
#: PLMConfig's defaults (PLM-Team PLM-1.8B; a public copy of configuration_plm.py, find_string id 22275674080)
PLM = {"architectures": ["PLMForCausalLM"], "model_type": "plm", "vocab_size": 151936, "hidden_size": 2048,
       "intermediate_size": 8192, "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 16,
       "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
       "hidden_act": "relu2", "max_position_embeddings": 4096, "rope_theta": 100000.0}
#: CodeShell-7B under the field names llama.cpp's converter reads (n_embd, n_head, n_layer, num_query_groups,
#: n_positions, layer_norm_epsilon; find_string id 264669063), n_inner null
CODESHELL = {"architectures": ["CodeShellForCausalLM"], "model_type": "codeshell", "n_embd": 4096, "n_head": 32,
             "n_layer": 42, "num_query_groups": 8, "group_query_attention": True, "position_embedding_type": "rope",
             "vocab_size": 70144, "n_positions": 8192, "layer_norm_epsilon": 1e-5, "n_inner": None,
             "activation_function": "gelu_pytorch_tanh"}


@pytest.mark.parametrize("cfg, fragment", [(QRWKV6, "RWKV-6 time mixing"), (PLM, "multi-head latent attention"),
                                           (CODESHELL, "num_query_groups")])
def test_llama_cpp_archs_refused_by_name(tmp_path, cfg, fragment):
    with pytest.raises(UnsupportedModelError, match=fragment):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for command in ("analyze", "trace"):
        run(command, str(path)).assert_error(cfg["model_type"], "not supported yet")


def test_hf_olmo_runtime_builds_the_olmo_shapes():
    model = pytest.importorskip("planner.runtime.model", reason="the runtime needs torch")
    tiny = dict(OLMO_1B, d_model=64, n_heads=4, n_layers=2, mlp_ratio=4, embedding_size=128, vocab_size=120)
    net = model.build_decoder(parse_config(tiny), seed=0)
    assert sum(p.numel() for p in net.parameters()) == count_params(parse_config(tiny)).total


# ---- GroveMoE (inclusionAI GroveMoE-Inst / -Base; llama.cpp registers GroveMoeForCausalLM): its config carries
# Qwen3-MoE's fields (the SGLang port in inclusionAI/GroveMoE types it Qwen3MoeConfig and hard-codes 64 chunk experts
# of 128), so by model_type alone it read as Qwen3-30B-A3B without the adjugate experts; refused by architecture

#: Qwen3-30B-A3B's geometry (GroveMoE is up-cycled from Qwen3-30B-A3B-Base, README of inclusionAI/GroveMoE) under
#: GroveMoE's architecture name
GROVE = {"architectures": ["GroveMoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
         "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
         "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
         "vocab_size": 151936, "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [],
         "tie_word_embeddings": False, "hidden_act": "silu"}


@pytest.mark.parametrize("arch", ["GroveMoeForCausalLM", "modeling_grove_moe.GroveMoeForCausalLM"])
def test_grovemoe_refused_by_architecture(tmp_path, arch):
    cfg = dict(GROVE, architectures=[arch])
    with pytest.raises(UnsupportedModelError, match="adjugate experts"):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error("GroveMoE", "qwen3_moe")


def test_grovemoe_read_as_qwen3_moe_would_miss_its_adjugate_experts():
    """What the refusal prevents: the same fields under Qwen3-MoE's architecture count Qwen3-30B-A3B's 30.5B; the 64
    chunk experts (SwiGLU of 128 on hidden 2048) per layer add 2.4B, the card's 33B total."""
    qwen = count_params(parse_config(dict(GROVE, architectures=["Qwen3MoeForCausalLM"]))).total
    adjugate = 48 * 64 * 3 * 2048 * 128
    assert adjugate == 2_415_919_104
    assert round((qwen + adjugate) / 1e9) == 33 and round(qwen / 1e9, 1) == 30.5


# ---- KORMo (KORMo-Team KORMo-10B; transformers' modular_kormo.py, find_string id 54876685544: "architecturally
# identical to Llama, except that the two decoder-layer RMSNorms are named pre_attention_layernorm / pre_mlp_layernorm";
# llama.cpp registers KORMoForCausalLM). Before: a generic Llama read with a "not a known family" warning and Llama's
# norm names; transformers 5.25 (pinned here) does not ship it yet


def test_kormo_is_llama_with_its_norm_names():
    cfg = {"architectures": ["KORMoForCausalLM"], "model_type": "kormo", "hidden_size": 256, "intermediate_size": 512,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}
    spec = parse_config(cfg)
    llama = dict(cfg, model_type="llama")
    del llama["architectures"]
    assert count_params(spec).total == unique_param_count(hf_model(llama))
    assert not any("not a known family" in c for c in spec.caveats)
    names = {t.name for t in spec.tensors()}
    assert {"model.layers.1.pre_attention_layernorm.weight", "model.layers.1.pre_mlp_layernorm.weight"} <= names
    assert not any("input_layernorm" in n or "post_attention_layernorm" in n for n in names)


def test_funasr_refused_by_architecture():
    """Fun-ASR-Nano: vLLM's funasr.py types its config Qwen3Config (find_string id 52429151512); a Qwen3-0.6B-shaped
    decoder under its architecture name is refused instead of read as a plain Qwen3."""
    cfg = {"architectures": ["FunASRForConditionalGeneration"], "model_type": "qwen3", "hidden_size": 1024,
           "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": True}
    with pytest.raises(UnsupportedModelError, match="speech encoder"):
        parse_config(cfg)
