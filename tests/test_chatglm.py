"""ChatGLM2/3 and GLM-4-9B (the remote-code ``chatglm`` model type, which transformers does not ship).

No transformers oracle for the config: the counts are checked against (1) hand counts written from the shapes in
the hub's modeling_chatglm.py (SelfAttention.query_key_value = Linear(hidden, heads·kv_channels +
2·groups·kv_channels, bias=add_bias_linear or add_qkv_bias), dense, MLP.dense_h_to_4h = Linear(hidden,
2·ffn_hidden_size), dense_4h_to_h, RMSNorm / LayerNorm, Embedding.word_embeddings, output_layer) and vLLM's
vllm/model_executor/models/chatglm.py (the same shapes); (2) the published totals of real checkpoints. The
runtime is checked against transformers' ``glm`` model, which is the same network (transformers' GLM-4
``-hf`` checkpoints are these converted: query_key_value split into q / k / v, dense_h_to_4h kept as
gate_up_proj), its weights saved under ChatGLM's checkpoint names.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params

#: THUDM/glm-4-9b-chat config.json (the hub file, as logged by LLaMA-Factory; auto_map and token ids trimmed)
GLM4_9B_CHAT = {
    "model_type": "chatglm", "architectures": ["ChatGLMModel"], "add_bias_linear": False, "add_qkv_bias": True,
    "apply_query_key_layer_scaling": True, "apply_residual_connection_post_layernorm": False,
    "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
    "classifier_dropout": None, "ffn_hidden_size": 13696, "fp32_residual_connection": False, "hidden_dropout": 0.0,
    "hidden_size": 4096, "kv_channels": 128, "layernorm_epsilon": 1.5625e-07, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_hidden_layers": 40, "num_layers": 40,
    "original_rope": True, "padded_vocab_size": 151552, "post_layer_norm": True, "rmsnorm": True, "rope_ratio": 500,
    "seq_length": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151552,
    "auto_map": {"AutoConfig": "configuration_chatglm.ChatGLMConfig"},
}
#: THUDM/chatglm2-6b config.json (the hub file, as logged by transformers 4.31 when loading it); ChatGLM3-6B's
#: differs only in seq_length (8192)
CHATGLM2_6B = {
    "model_type": "chatglm", "architectures": ["ChatGLMModel"], "add_bias_linear": False, "add_qkv_bias": True,
    "apply_query_key_layer_scaling": True, "apply_residual_connection_post_layernorm": False,
    "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
    "ffn_hidden_size": 13696, "fp32_residual_connection": False, "hidden_dropout": 0.0, "hidden_size": 4096,
    "kv_channels": 128, "layernorm_epsilon": 1e-05, "multi_query_attention": True, "multi_query_group_num": 2,
    "num_attention_heads": 32, "num_layers": 28, "original_rope": True, "padded_vocab_size": 65024,
    "post_layer_norm": True, "pre_seq_len": None, "prefix_projection": False, "quantization_bit": 0,
    "rmsnorm": True, "seq_length": 32768, "tie_word_embeddings": False, "torch_dtype": "float16",
    "vocab_size": 65024,
}
CHATGLM3_6B = dict(CHATGLM2_6B, seq_length=8192)


def hand_count(c: dict) -> int:
    """modeling_chatglm.py's parameters, from its module shapes (ChatGLMConfig's defaults where ``c`` is silent)."""
    h, heads, kvc, ffn, vocab = (c["hidden_size"], c["num_attention_heads"], c.get("kv_channels", 128),
                                 c["ffn_hidden_size"], c["padded_vocab_size"])
    groups = c.get("multi_query_group_num", 1) if c.get("multi_query_attention", False) else heads
    bias_linear = c.get("add_bias_linear", False)
    qkv_out = heads * kvc + 2 * groups * kvc
    qkv = h * qkv_out + (qkv_out if bias_linear or c.get("add_qkv_bias", False) else 0)
    dense = heads * kvc * h + (h if bias_linear else 0)
    mlp = h * 2 * ffn + (2 * ffn if bias_linear else 0) + ffn * h + (h if bias_linear else 0)
    norm = h if c.get("rmsnorm", True) else 2 * h  # RMSNorm: weight; LayerNorm: weight and bias
    layer = qkv + dense + mlp + 2 * norm
    embed = vocab * h
    head = 0 if c.get("tie_word_embeddings", False) else vocab * h
    final = norm if c.get("post_layer_norm", True) else 0
    return c["num_layers"] * layer + embed + head + final


def test_glm4_9b_chat_total_is_the_published_count():
    # GLM-4's own demo (THUDM/GLM-4 composite_demo) prints "with 9399951360 (9.4B) parameters" for glm-4-9b-chat
    spec = parse_config(GLM4_9B_CHAT)
    p = count_params(spec)
    assert p.total == p.active == hand_count(GLM4_9B_CHAT) == 9_399_951_360
    assert p.embedding == p.lm_head == 151552 * 4096
    # glm-4-9b-chat's shapes with glm-4-9b-chat-1m's longer RoPE (rope_ratio 10000, seq_length 1M): RoPE changes
    # no count (the real glm-4-9b-chat-1m also has 4 K/V groups, not 2: tests/test_real_configs_remote_audit.py)
    assert count_params(parse_config(dict(GLM4_9B_CHAT, rope_ratio=10000, seq_length=1048576))).total == 9_399_951_360


@pytest.mark.parametrize("cfg", [CHATGLM2_6B, CHATGLM3_6B])
def test_chatglm_6b_total_is_the_published_checkpoint_size(cfg):
    # chatglm2-6b's pytorch_model.bin.index.json: "total_size": 12487168064 bytes in fp16, which includes the
    # rotary_pos_emb.inv_freq buffer (kv_channels / 4 = 32 fp16 values, 64 bytes); ChatGLM3-6B: "6.24B"
    total = count_params(parse_config(cfg)).total
    assert total == hand_count(cfg) == 6_243_584_000
    assert 2 * total + 2 * (128 // 4) == 12_487_168_064


VARIANTS = {
    "mha-biased-layernorm": dict(hidden_size=64, num_layers=3, num_attention_heads=4, kv_channels=16,
                                 ffn_hidden_size=96, padded_vocab_size=128, multi_query_attention=False,
                                 add_bias_linear=True, rmsnorm=False, post_layer_norm=False),
    "wide-heads-tied": dict(hidden_size=64, num_layers=2, num_attention_heads=4, kv_channels=32, ffn_hidden_size=80,
                            padded_vocab_size=100, multi_query_attention=True, multi_query_group_num=1,
                            add_qkv_bias=True, tie_word_embeddings=True),
    "class-defaults": dict(hidden_size=64, num_layers=2, num_attention_heads=4, ffn_hidden_size=96,
                           padded_vocab_size=128),  # kv_channels 128, no MQA, no biases: ChatGLMConfig's defaults
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_equal_the_hand_count(name):
    cfg = dict(VARIANTS[name], model_type="chatglm")
    assert count_params(parse_config(cfg)).total == hand_count(cfg)


def test_kv_cache_and_rope_geometry():
    """The cache holds K and V of the multi-query groups (kv_channels wide) per layer and token (the remote code's
    kv_cache = (key_layer, value_layer) of num_multi_query_groups heads); RoPE on kv_channels / 2 channels of each
    head, in interleaved pairs, base 10000 · rope_ratio."""
    bf16 = Options(context=1000, dtype="bf16", kv_dtype="bf16")
    spec = parse_config(GLM4_9B_CHAT)
    assert analyze(spec, bf16).kv.bytes_per_token == 40 * 2 * 2 * 128 * 2 == 40960
    assert analyze(parse_config(CHATGLM3_6B), bf16).kv.bytes_per_token == 28 * 2 * 2 * 128 * 2
    a = spec.layers[0].mixer
    assert (a.num_key_value_heads, a.head_dim, a.rotary_dim, a.rope_theta) == (2, 128, 64, 10000.0 * 500)
    assert a.fused_qkv and a.q_bias and a.k_bias and a.v_bias and not a.o_bias
    assert spec.numerics.rope_style == "pairs" and not spec.tie_word_embeddings
    assert spec.max_position_embeddings == 131072  # seq_length
    mha = parse_config(dict(VARIANTS["mha-biased-layernorm"], model_type="chatglm"))
    assert analyze(mha, bf16).kv.bytes_per_token == 3 * 2 * 4 * 16 * 2
    # vLLM: original_rope false (CogAgent) is rotate_half
    assert parse_config(dict(GLM4_9B_CHAT, original_rope=False)).numerics.rope_style == "half"


@pytest.mark.parametrize("change, error, match", [
    # the first ChatGLM-6B: same model_type, GLM's 2D positions
    ({"position_encoding_2d": True, "inner_hidden_size": 16384}, UnsupportedModelError, "first ChatGLM-6B"),
    ({"vision_config": {"hidden_size": 1792}}, UnsupportedModelError, "vision_config"),
    ({"pre_seq_len": 128}, UnsupportedModelError, "P-tuning"),
    ({"quantization_bit": 4}, UnsupportedModelError, "int4 / int8"),
    ({"num_hidden_layers": 30}, ConfigError, "differs from num_layers"),
    ({"kv_channels": None}, ConfigError, "kv_channels"),
    ({"kv_channels": 126}, ConfigError, "multiple of 4"),
    ({"multi_query_group_num": 3}, ConfigError, "must divide num_attention_heads"),
    ({"padded_vocab_size": None}, ConfigError, "padded_vocab_size"),
    ({"ffn_hidden_size": -1}, ConfigError, "ffn_hidden_size"),
])
def test_bad_or_unmodelled_configs_are_refused(change, error, match):
    with pytest.raises(error, match=match):
        parse_config(dict(GLM4_9B_CHAT, **change))


# ---- runtime: transformers' GLM (the converted checkpoints) under ChatGLM's names --------------------------------

TINY = {"model_type": "chatglm", "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4, "kv_channels": 16,
        "multi_query_attention": True, "multi_query_group_num": 2, "ffn_hidden_size": 96, "padded_vocab_size": 128,
        "add_qkv_bias": True, "add_bias_linear": False, "rmsnorm": True, "post_layer_norm": True,
        "layernorm_epsilon": 1e-5, "rope_ratio": 2, "seq_length": 256, "original_rope": True,
        "tie_word_embeddings": False, "torch_dtype": "float32"}
#: the same network as transformers' glm config (what its GLM-4 conversion script writes)
TINY_GLM = {"model_type": "glm", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16,
            "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128, "attention_bias": True,
            "rms_norm_eps": 1e-5, "partial_rotary_factor": 0.5, "rope_theta": 20000.0, "max_position_embeddings": 256,
            "tie_word_embeddings": False, "torch_dtype": "float32", "pad_token_id": 0}


def chatglm_checkpoint(hf):
    """transformers' GLM state dict under modeling_chatglm.py's names: q, k, v fused in that order."""
    import torch

    sd = hf.state_dict()
    out = [("transformer.rotary_pos_emb.inv_freq", torch.ones(4))]  # a buffer every ChatGLM checkpoint carries
    for n, t in sd.items():
        if ".self_attn.k_proj." in n or ".self_attn.v_proj." in n:
            continue
        if ".self_attn.q_proj." in n:
            t = torch.cat([t, sd[n.replace("q_proj", "k_proj")], sd[n.replace("q_proj", "v_proj")]])
            n = n.replace(".self_attn.q_proj.", ".self_attention.query_key_value.")
        for ours, orig in (("model.embed_tokens.", "transformer.embedding.word_embeddings."),
                           ("model.layers.", "transformer.encoder.layers."),
                           ("model.norm.", "transformer.encoder.final_layernorm."),
                           ("lm_head.", "transformer.output_layer."),
                           (".self_attn.o_proj.", ".self_attention.dense."),
                           (".mlp.gate_up_proj.", ".mlp.dense_h_to_4h."), (".mlp.down_proj.", ".mlp.dense_4h_to_h.")):
            n = n.replace(ours, orig) if ours.startswith(".") or n.startswith(ours) else n
        out.append((n, t))
    return out


def test_runtime_logits_equal_transformers_glm_loaded_from_chatglm_names():
    pytest.importorskip("torch")
    from planner.runtime.load import load_tensors
    from planner.runtime.model import build_decoder
    from tests.test_runtime import assert_logits_and_cached_decode, hf_model

    hf = hf_model(TINY_GLM)
    items = chatglm_checkpoint(hf)
    assert any(n.endswith("self_attention.query_key_value.bias") for n, _ in items)
    assert not any(n.startswith("model.") for n, _ in items)
    spec = parse_config(TINY)
    ours = build_decoder(spec, seed=None)
    report = load_tensors(ours, items)
    # a checkpoint's rotary_pos_emb.inv_freq buffer is recomputed, not loaded (the runtime's own RoPE)
    assert report.missing == [] and report.ignored == ["transformer.rotary_pos_emb.inv_freq"]
    assert sum(p.numel() for p in ours.parameters()) == count_params(spec).total == hand_count(TINY)
    assert_logits_and_cached_decode(spec, ours, hf)


def test_runtime_refuses_the_residual_after_the_norm_clearly():
    pytest.importorskip("torch")
    from planner.analysis.errors import RuntimeUnavailableError
    from planner.runtime.model import build_decoder

    spec = parse_config(dict(TINY, apply_residual_connection_post_layernorm=True))
    assert count_params(spec).total == hand_count(TINY)  # analysed: the same shapes
    with pytest.raises(RuntimeUnavailableError, match="apply_residual_connection_post_layernorm"):
        build_decoder(spec, device="meta")
