"""Remote-code families (analysis/families/remote.py): no transformers oracle exists, so each total is checked
against a hand count written from vLLM's weight shapes (vllm/model_executor/models/<name>.py) and against the
published size of a real checkpoint; the runtime loads a checkpoint in the family's own tensor names and
layout, checked against a reference forward written here from the hub's modeling code."""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.oracle import hub_alibi_slopes

# internlm/internlm2_5-7b-chat config.json (the hub), verbatim but for auto_map
INTERNLM2_5_7B = {
    "architectures": ["InternLM2ForCausalLM"], "attn_implementation": "eager", "bias": False, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "internlm2",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pad_token_id": 2,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"type": "dynamic", "factor": 2.0},
    "rope_theta": 1000000, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.41.0",
    "use_cache": True, "vocab_size": 92544}
# internlm/internlm2-chat-20b: InternLM2.5-7B's fields but for the shape ones below (its config.json)
INTERNLM2_20B = dict(INTERNLM2_5_7B, hidden_size=6144, intermediate_size=16384, num_attention_heads=48,
                     num_hidden_layers=48, num_key_value_heads=8)
# Qwen/Qwen-7B config.json (the hub), verbatim but for auto_map
QWEN_7B = {
    "architectures": ["QWenLMHeadModel"], "attn_dropout_prob": 0.0, "bf16": False, "emb_dropout_prob": 0.0,
    "fp16": False, "fp32": False, "hidden_size": 4096, "intermediate_size": 22016, "initializer_range": 0.02,
    "kv_channels": 128, "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192, "model_type": "qwen",
    "no_bias": True, "num_attention_heads": 32, "num_hidden_layers": 32, "onnx_safe": None, "rotary_emb_base": 10000,
    "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192, "tie_word_embeddings": False,
    "tokenizer_class": "QWenTokenizer", "transformers_version": "4.32.0", "use_cache": True, "use_dynamic_ntk": True,
    "use_flash_attn": "auto", "use_logn_attn": True, "vocab_size": 151936}
# Qwen/Qwen-14B: Qwen-7B's fields but for these (its config.json)
QWEN_14B = dict(QWEN_7B, hidden_size=5120, intermediate_size=27392, num_attention_heads=40, num_hidden_layers=40,
                vocab_size=152064, seq_length=2048, max_position_embeddings=8192)


def internlm2_hand(c: dict, bias: bool = False) -> int:
    """vllm/model_executor/models/internlm2.py: tok_embeddings (V, D); per layer wqkv (D -> (H + 2K)·d),
    wo (H·d -> D), gate_up_proj (D -> 2I; the checkpoint's w1, w3), w2 (I -> D), attention_norm, ffn_norm; norm;
    output (V, D) untied. With ``bias`` (the hub's modeling_internlm2.py) wqkv and wo carry biases."""
    D, L, H, K, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                        c.get("num_key_value_heads", c["num_attention_heads"]), c["intermediate_size"], c["vocab_size"])
    d = D // H
    attn = D * (H + 2 * K) * d + H * d * D + (((H + 2 * K) * d + D) if bias else 0)
    layer = attn + 3 * D * I + 2 * D
    return V * D + L * layer + D + V * D


def qwen_hand(c: dict) -> int:
    """vllm/model_executor/models/qwen.py: wte (V, D); per layer c_attn (D -> 3D, bias), c_proj (D -> D),
    gate_up_proj (D -> 2 · intermediate_size/2; the checkpoint's w2, w1), c_proj (intermediate_size/2 -> D),
    ln_1, ln_2; ln_f; lm_head (V, D)."""
    D, L, I, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"] // 2, c["vocab_size"]
    layer = (D * 3 * D + 3 * D) + D * D + 3 * D * I + 2 * D
    return V * D + L * layer + D + V * D


@pytest.mark.parametrize("cfg, hand, published", [
    (INTERNLM2_5_7B, internlm2_hand, 7.74e9),  # model card / hub: 7.74B params
    (INTERNLM2_20B, internlm2_hand, 19.9e9),  # hub: 19.9B params
    (QWEN_7B, qwen_hand, 7.72e9),  # hub: 7.72B params (the Qwen technical report's "7B")
    (QWEN_14B, qwen_hand, 14.2e9),  # hub: 14.2B params
])
def test_remote_totals_equal_the_hand_count_and_the_published_size(cfg, hand, published):
    p = count_params(parse_config(cfg))
    assert p.total == p.active == hand(cfg)
    assert round(p.total / 1e9, 2 if published < 1e10 else 1) == round(published / 1e9, 2 if published < 1e10 else 1)


def test_remote_published_totals_are_exact_integers():
    """The hand counts above, evaluated: InternLM2.5-7B 7,737,708,544; Qwen-7B 7,721,324,544 (the generic Llama
    fallback counted Qwen-7B as 12,049,453,056: the full intermediate_size and no c_attn bias)."""
    assert count_params(parse_config(INTERNLM2_5_7B)).total == 7_737_708_544
    assert count_params(parse_config(QWEN_7B)).total == 7_721_324_544
    assert count_params(parse_config(QWEN_14B)).total == 14_167_290_880
    assert count_params(parse_config(INTERNLM2_20B)).total == 19_861_149_696


@pytest.mark.parametrize("cfg, kv_heads", [(INTERNLM2_5_7B, 8), (INTERNLM2_20B, 8), (QWEN_7B, 32), (QWEN_14B, 40)])
def test_remote_kv_per_token(cfg, kv_heads):
    """K and V of every KV head, head_dim = hidden / heads, per layer (vLLM's Attention(num_kv_heads))."""
    a = analyze(parse_config(cfg), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    assert a.kv.bytes_per_token == cfg["num_hidden_layers"] * 2 * kv_heads * d * 2


def test_remote_class_defaults():
    """A config with nothing but model_type is the remote config class's defaults: InternLM2Config (vocab 103168,
    4096 x 32 layers, 32 heads, no GQA, intermediate 11008, bias true); QWenConfig (vocab 151936, 4096 x 32, 32
    heads, intermediate_size 22016, no_bias true)."""
    internlm = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, intermediate_size=11008,
                    vocab_size=103168)
    assert count_params(parse_config({"model_type": "internlm2"})).total == internlm2_hand(internlm, bias=True)
    qwen = dict(hidden_size=4096, num_hidden_layers=32, intermediate_size=22016, vocab_size=151936)
    assert count_params(parse_config({"model_type": "qwen"})).total == qwen_hand(qwen)
    assert not parse_config({"model_type": "qwen"}).generic


def test_qwen_no_bias_false_biases_the_output_and_mlp():
    """modeling_qwen.py: c_proj, w1, w2 and the MLP's c_proj take bias=not no_bias."""
    cfg = dict(QWEN_7B, no_bias=False)
    D, I, L = 4096, 11008, 32
    assert count_params(parse_config(cfg)).total == qwen_hand(QWEN_7B) + L * (D + 2 * I + D)


@pytest.mark.parametrize("change, field", [
    (dict(num_key_value_heads=3), "num_key_value_heads"),
    (dict(num_attention_heads=30), "num_attention_heads"),
    (dict(bias="yes"), "bias"),
])
def test_internlm2_bad_configs(change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(INTERNLM2_5_7B, **change))


@pytest.mark.parametrize("change, field", [
    (dict(kv_channels=64), "kv_channels"),
    (dict(intermediate_size=22017), "intermediate_size"),
    (dict(rotary_pct=1.5), "rotary_pct"),
    (dict(no_bias="no"), "no_bias"),
])
def test_qwen_bad_configs(change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(QWEN_7B, **change))


# ---- runtime: checkpoints in the family's own names ----------------------------------------------

torch = pytest.importorskip("torch")


def _rms(x, w, eps):
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * w


def _rope(x, pos, rd, theta):
    """rotate_half RoPE on the first ``rd`` channels (both hub modeling files' apply_rotary_pos_emb)."""
    inv = 1.0 / theta ** (torch.arange(0, rd, 2).float() / rd)
    f = pos[:, None].float() * inv[None]
    cos, sin = torch.cat((f, f), -1).cos(), torch.cat((f, f), -1).sin()
    r, rest = x[..., :rd], x[..., rd:]
    half = rd // 2
    rot = torch.cat((-r[..., half:], r[..., :half]), -1)
    return torch.cat((r * cos + rot * sin, rest), -1)


def _attend(q, k, v):
    """q (B, T, H, d), k / v (B, T, K, d): causal softmax attention, K/V repeated over each group."""
    H, K = q.shape[2], k.shape[2]
    k, v = k.repeat_interleave(H // K, 2), v.repeat_interleave(H // K, 2)
    s = torch.einsum("bthd,bshd->bhts", q, k) / q.shape[-1] ** 0.5
    T = q.shape[1]
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("bhts,bshd->bthd", s.softmax(-1), v).reshape(q.shape[0], T, -1)


def _internlm2_reference(w, c, tokens):
    """modeling_internlm2.py: wqkv's output viewed (B, T, K, G + 2, d): the group's G queries, then its k, v."""
    D, H, K = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d, G, eps, theta = D // H, H // K, c["rms_norm_eps"], c["rope_theta"]
    B, T = tokens.shape
    pos = torch.arange(T)
    x = w["model.tok_embeddings.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = _rms(x, w[p + "attention_norm.weight"], eps)
        qkv = (h @ w[p + "attention.wqkv.weight"].T).view(B, T, K, G + 2, d)
        q = qkv[..., :G, :].reshape(B, T, H, d)
        k, v = qkv[..., -2, :], qkv[..., -1, :]
        q = _rope(q.transpose(1, 2), pos, d, theta).transpose(1, 2)
        k = _rope(k.transpose(1, 2), pos, d, theta).transpose(1, 2)
        x = x + _attend(q, k, v) @ w[p + "attention.wo.weight"].T
        h = _rms(x, w[p + "ffn_norm.weight"], eps)
        gate, up = h @ w[p + "feed_forward.w1.weight"].T, h @ w[p + "feed_forward.w3.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "feed_forward.w2.weight"].T
    return _rms(x, w["model.norm.weight"], eps) @ w["output.weight"].T


def _qwen_reference(w, c, tokens):
    """modeling_qwen.py: c_attn's output split in three (q, k, v), c_proj(w1(x) * silu(w2(x)))."""
    D, H = c["hidden_size"], c["num_attention_heads"]
    d, eps, theta = D // H, c["layer_norm_epsilon"], c["rotary_emb_base"]
    B, T = tokens.shape
    pos = torch.arange(T)
    x = w["transformer.wte.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        p = f"transformer.h.{i}."
        h = _rms(x, w[p + "ln_1.weight"], eps)
        q, k, v = (h @ w[p + "attn.c_attn.weight"].T + w[p + "attn.c_attn.bias"]).split(D, -1)
        q, k, v = (t.view(B, T, H, d) for t in (q, k, v))
        q = _rope(q.transpose(1, 2), pos, d, theta).transpose(1, 2)
        k = _rope(k.transpose(1, 2), pos, d, theta).transpose(1, 2)
        x = x + _attend(q, k, v) @ w[p + "attn.c_proj.weight"].T
        h = _rms(x, w[p + "ln_2.weight"], eps)
        a1, a2 = h @ w[p + "mlp.w1.weight"].T, h @ w[p + "mlp.w2.weight"].T
        x = x + (a1 * torch.nn.functional.silu(a2)) @ w[p + "mlp.c_proj.weight"].T
    return _rms(x, w["transformer.ln_f.weight"], eps) @ w["lm_head.weight"].T


def _checkpoint_shapes(family, c):
    D, L, H, V = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["vocab_size"]
    d = D // H
    if family == "internlm2":
        K, I = c["num_key_value_heads"], c["intermediate_size"]
        shapes = {"model.tok_embeddings.weight": (V, D), "model.norm.weight": (D,), "output.weight": (V, D)}
        for i in range(L):
            p = f"model.layers.{i}."
            shapes |= {p + "attention_norm.weight": (D,), p + "ffn_norm.weight": (D,),
                       p + "attention.wqkv.weight": ((H + 2 * K) * d, D), p + "attention.wo.weight": (D, H * d),
                       p + "feed_forward.w1.weight": (I, D), p + "feed_forward.w3.weight": (I, D),
                       p + "feed_forward.w2.weight": (D, I)}
        return shapes
    I = c["intermediate_size"] // 2
    shapes = {"transformer.wte.weight": (V, D), "transformer.ln_f.weight": (D,), "lm_head.weight": (V, D)}
    for i in range(L):
        p = f"transformer.h.{i}."
        shapes |= {p + "ln_1.weight": (D,), p + "ln_2.weight": (D,), p + "attn.c_attn.weight": (3 * D, D),
                   p + "attn.c_attn.bias": (3 * D,), p + "attn.c_proj.weight": (D, D), p + "mlp.w1.weight": (I, D),
                   p + "mlp.w2.weight": (I, D), p + "mlp.c_proj.weight": (D, I)}
    return shapes


TINY_REMOTE = {
    "internlm2": dict(INTERNLM2_5_7B, hidden_size=64, num_hidden_layers=2, num_attention_heads=8,
                      num_key_value_heads=2, intermediate_size=96, vocab_size=128, rope_scaling=None,
                      rope_theta=10000.0, torch_dtype="float32"),
    "qwen": dict(QWEN_7B, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, kv_channels=16,
                 intermediate_size=192, vocab_size=128, rotary_emb_base=10000.0, torch_dtype="float32"),
}


@pytest.mark.parametrize("family", ["internlm2", "qwen"])
def test_remote_checkpoint_loads_and_matches_the_hub_forward(family, tmp_path):
    """A checkpoint in the family's own names and fused layouts (InternLM2's per-group wqkv, Qwen's biased
    c_attn and w1 / w2 MLP) loads into our decoder with nothing missing or left over, and its logits equal a
    forward written from the hub's modeling file."""
    from tests.test_runtime import load_saved_checkpoint

    cfg = TINY_REMOTE[family]
    g = torch.Generator().manual_seed(7)
    w = {n: (torch.randn(s, generator=g) * (0.3 if len(s) == 2 else 0.1) + (1.0 if n.endswith("norm.weight")
                                                                              or ".ln_" in n else 0.0))
         for n, s in _checkpoint_shapes(family, cfg).items()}
    _, ours = load_saved_checkpoint(tmp_path, cfg, w)
    tokens = torch.randint(0, cfg["vocab_size"], (2, 9), generator=g)
    ref = (_internlm2_reference if family == "internlm2" else _qwen_reference)(w, cfg, tokens)
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=1e-4)


# ---- Baichuan, MiniCPM, MiMo ---------------------------------------------------------------------

# baichuan-inc/Baichuan2-7B-Chat config.json (the hub), verbatim but for auto_map
BAICHUAN2_7B = {
    "architectures": ["BaichuanForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "gradient_checkpointing": [False],
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 4096, "model_max_length": 4096, "model_type": "baichuan", "num_attention_heads": 32,
    "num_hidden_layers": 32, "pad_token_id": 0, "rms_norm_eps": 1e-06, "_from_model_config": True,
    "tie_word_embeddings": False, "tokenizer_class": "BaichuanTokenizer", "torch_dtype": "bfloat16",
    "transformers_version": "4.29.2", "use_cache": True, "vocab_size": 125696, "z_loss_weight": 0}
# baichuan-inc/Baichuan2-13B-Chat config.json (the hub), verbatim but for auto_map
BAICHUAN2_13B = {
    "architectures": ["BaichuanForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "gradient_checkpointing": [False],
    "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13696,
    "model_max_length": 4096, "model_type": "baichuan", "num_attention_heads": 40, "num_hidden_layers": 40,
    "pad_token_id": 0, "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.29.2", "use_cache": True, "vocab_size": 125696}
# openbmb/MiniCPM-2B-sft-bf16 config.json (the hub), verbatim but for auto_map
MINICPM_2B = {
    "_name_or_path": "openbmb/CPM-2B", "architectures": ["MiniCPMForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 2304, "initializer_range": 0.1, "intermediate_size": 5760,
    "max_position_embeddings": 4096, "num_attention_heads": 36, "num_hidden_layers": 40, "num_key_value_heads": 36,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "torch_dtype": "bfloat16", "transformers_version": "4.36.0",
    "use_cache": True, "vocab_size": 122753, "scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4,
    "model_type": "minicpm"}
# XiaomiMiMo/MiMo-7B-Base config.json (the hub), verbatim but for auto_map
MIMO_7B = {
    "architectures": ["MiMoForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 32768, "max_window_layers": 36, "model_type": "mimo", "num_attention_heads": 32,
    "num_hidden_layers": 36, "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 640000, "sliding_window": 32768, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151680}


def baichuan_hand(c: dict) -> int:
    """vllm/model_executor/models/baichuan.py: embed_tokens (V, D); per layer W_pack (D -> 3D), o_proj (D -> D),
    gate_up_proj (D -> 2I), down_proj (I -> D), two RMSNorms; norm; lm_head (V, D) (NormHead: same weight)."""
    D, L, I, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    return V * D + L * (3 * D * D + D * D + 3 * D * I + 2 * D) + D + V * D


def minicpm_hand(c: dict) -> int:
    """vllm/model_executor/models/minicpm.py: embed_tokens (V, D); per layer qkv_proj (D -> (H + 2K)·d), o_proj,
    gate_up_proj, down_proj, two RMSNorms; norm; lm_head tied (tie_word_embeddings, MiniCPMConfig's default)."""
    D, L, H, K, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                        c["num_key_value_heads"], c["intermediate_size"], c["vocab_size"])
    d = D // H
    return V * D + L * (D * (H + 2 * K) * d + H * d * D + 3 * D * I + 2 * D) + D


def mimo_hand(c: dict) -> tuple[int, int]:
    """vllm/model_executor/models/mimo.py (Qwen2's model: q/k/v biased): (served total, MTP layers). The MTP
    layer (the hub's modeling_mimo.py MiMoMTPLayers): a Qwen2 decoder layer plus token_layernorm,
    hidden_layernorm, final_layernorm and input_proj (2D -> D, no bias)."""
    D, L, H, K, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                        c["num_key_value_heads"], c["intermediate_size"], c["vocab_size"])
    d = D // H
    layer = D * (H + 2 * K) * d + (H + 2 * K) * d + H * d * D + 3 * D * I + 2 * D
    mtp = c["num_nextn_predict_layers"] * (layer + 3 * D + 2 * D * D)
    return V * D + L * layer + D + V * D, mtp


@pytest.mark.parametrize("cfg, hand, published", [
    (BAICHUAN2_7B, baichuan_hand, 7.51e9),  # hub: 7.51B params
    (BAICHUAN2_13B, baichuan_hand, 13.9e9),  # hub: 13.9B params
    (MINICPM_2B, minicpm_hand, 2.7e9),  # MiniCPM paper / model card: 2.7B with embeddings (2.4B without)
])
def test_remote_totals_baichuan_minicpm(cfg, hand, published):
    p = count_params(parse_config(cfg))
    assert p.total == p.active == hand(cfg)
    digits = 2 if published < 1e10 and cfg["model_type"] == "baichuan" else 1
    assert round(p.total / 1e9, digits) == round(published / 1e9, digits)


def test_minicpm_2b_non_embedding_size_and_multipliers():
    spec = parse_config(MINICPM_2B)
    p = count_params(spec)
    assert p.total - p.embedding == 2_442_057_984  # the paper's "2.4B non-embedding parameters"
    assert spec.embedding_multiplier == 12.0
    assert spec.numerics.residual_multiplier == pytest.approx(1.4 / 40 ** 0.5)
    assert spec.numerics.logits_scaling == pytest.approx(2304 / 256)


def test_mimo_total_excludes_the_mtp_layers_vllm_does_not_serve():
    """vLLM's MiMoForCausalLM skips model.mtp_layers.*: the served total is Qwen2's (7,622,619,136); with the MTP
    layer the checkpoint holds 7,833,409,536 (the hub's 7.83B)."""
    p = count_params(parse_config(MIMO_7B))
    total, mtp = mimo_hand(MIMO_7B)
    assert (p.total, p.mtp) == (total, mtp) == (7_622_619_136, 210_790_400)
    assert round((p.total + p.mtp) / 1e9, 2) == 7.83
    a = analyze(parse_config(MIMO_7B), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 36 * 2 * 8 * 128 * 2


@pytest.mark.parametrize("cfg, rope", [(BAICHUAN2_7B, True), (BAICHUAN2_13B, False),
                                       (dict(BAICHUAN2_13B, architectures=["BaiChuanForCausalLM"]), True)])
def test_baichuan_positions_follow_vllm(cfg, rope):
    """vLLM: BaiChuanForCausalLM (Baichuan 1 7B) and hidden_size 4096 (Baichuan 2 7B) use RoPE; the 13B models
    ALiBi (no RoPE). Baichuan 2's vocabulary (125696) marks its NormHead."""
    spec = parse_config(cfg)
    m = spec.layers[0].mixer
    assert (m.rotary_dim > 0, m.alibi) == (rope, not rope)
    assert spec.checkpoint.head_normalized
    assert not parse_config(dict(cfg, vocab_size=64000)).checkpoint.head_normalized  # Baichuan 1


def test_remote_class_defaults_baichuan_minicpm_mimo():
    assert count_params(parse_config({"model_type": "baichuan"})).total == baichuan_hand(BAICHUAN2_7B)
    minicpm = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                   intermediate_size=11008, vocab_size=32000)
    assert count_params(parse_config({"model_type": "minicpm"})).total == minicpm_hand(minicpm)
    with pytest.raises(ConfigError, match="hidden_size"):  # MiMoConfig(Qwen2Config): the shape fields are required
        parse_config({"model_type": "mimo"})


def test_minicpm_moe_counts_experts_and_active():
    """MiniCPM-MoE-8x2B (openbmb): MiniCPM-2B's shape with 8 experts of intermediate_size, top 2."""
    cfg = dict(MINICPM_2B, num_experts=8, num_experts_per_tok=2)
    p = count_params(parse_config(cfg))
    D, L, I, E = 2304, 40, 5760, 8
    dense = minicpm_hand(MINICPM_2B)
    assert p.total == dense + L * ((E - 1) * 3 * D * I + D * E)
    assert p.active == dense + L * ((2 - 1) * 3 * D * I + D * E)


@pytest.mark.parametrize("cfg, change, field", [
    (BAICHUAN2_7B, dict(num_attention_heads=30), "num_attention_heads"),
    (BAICHUAN2_7B, dict(tie_word_embeddings=True), "tie_word_embeddings"),
    (MINICPM_2B, dict(num_key_value_heads=5), "num_key_value_heads"),
    (MINICPM_2B, dict(scale_emb="big"), "scale_emb"),
    (MINICPM_2B, dict(num_experts=4, num_experts_per_tok=5), "num_experts_per_tok"),
    (MIMO_7B, dict(num_nextn_predict_layers=-1), "num_nextn_predict_layers"),
])
def test_remote_bad_configs_baichuan_minicpm_mimo(cfg, change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(cfg, **change))


def _llama_like_reference(w, tokens, *, L, H, K, eps, theta, qkv, names, alibi=False, head=None, emb_scale=1.0,
                          res_scale=1.0, logit_div=1.0):
    """A Llama-shaped forward over checkpoint tensors: ``qkv(prefix, h)`` gives q, k, v (B, T, heads, d)."""
    B, T = tokens.shape
    pos = torch.arange(T)
    x = w[names["embed"]][tokens] * emb_scale
    for i in range(L):
        p = f"model.layers.{i}."
        h = _rms(x, w[p + "input_layernorm.weight"], eps)
        q, k, v = qkv(p, h)
        d = q.shape[-1]
        if alibi:
            slopes = torch.tensor(hub_alibi_slopes(H))
            kk = k.repeat_interleave(H // K, 2)
            s = torch.einsum("bthd,bshd->bhts", q, kk) / d ** 0.5 + slopes[:, None, None] * pos[None, None, :]
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            o = torch.einsum("bhts,bshd->bthd", s.softmax(-1), v.repeat_interleave(H // K, 2)).reshape(B, T, -1)
        else:
            q = _rope(q.transpose(1, 2), pos, d, theta).transpose(1, 2)
            k = _rope(k.transpose(1, 2), pos, d, theta).transpose(1, 2)
            o = _attend(q, k, v)
        x = x + (o @ w[p + "self_attn.o_proj.weight"].T) * res_scale
        h = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g, u = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + ((torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T) * res_scale
    return (_rms(x, w["model.norm.weight"], eps) / logit_div) @ (head if head is not None else w["lm_head.weight"]).T


TINY_REMOTE |= {
    # ALiBi (hidden != 4096), 6 heads (not a power of two: the interleaved extra slopes), Baichuan 2's vocabulary
    "baichuan-alibi": dict(BAICHUAN2_13B, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                           intermediate_size=80, torch_dtype="float32"),
    "baichuan-rope": dict(BAICHUAN2_7B, architectures=["BaiChuanForCausalLM"], hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=96, vocab_size=64000, torch_dtype="float32"),
    "minicpm": dict(MINICPM_2B, hidden_size=64, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2,
                    intermediate_size=96, vocab_size=128, rope_theta=10000.0, torch_dtype="float32"),
}


def _shapes_llama_like(c, *, w_pack, tied):
    D, L, H, V, I = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["vocab_size"], \
        c["intermediate_size"]
    K = c.get("num_key_value_heads", H)
    d = D // H
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    if not tied:
        shapes["lm_head.weight"] = (V, D)
    for i in range(L):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                   p + "self_attn.o_proj.weight": (D, H * d), p + "mlp.gate_proj.weight": (I, D),
                   p + "mlp.up_proj.weight": (I, D), p + "mlp.down_proj.weight": (D, I)}
        if w_pack:
            shapes[p + "self_attn.W_pack.weight"] = (3 * D, D)
        else:
            shapes |= {p + "self_attn.q_proj.weight": (H * d, D), p + "self_attn.k_proj.weight": (K * d, D),
                       p + "self_attn.v_proj.weight": (K * d, D)}
    return shapes


@pytest.mark.parametrize("family", ["baichuan-alibi", "baichuan-rope", "minicpm"])
def test_remote_checkpoint_loads_baichuan_minicpm(family, tmp_path):
    """Baichuan's W_pack, ALiBi and NormHead (lm_head rows normalised at load, as the hub's NormHead at
    inference), and MiniCPM's multipliers with a tied head: logits equal a forward written from the hub code."""
    from tests.test_runtime import load_saved_checkpoint

    cfg = TINY_REMOTE[family]
    baichuan = family.startswith("baichuan")
    g = torch.Generator().manual_seed(11)
    w = {n: torch.randn(s, generator=g) * (0.3 if len(s) == 2 else 0.1) + (1.0 if n.endswith("norm.weight") else 0.0)
         for n, s in _shapes_llama_like(cfg, w_pack=baichuan, tied=not baichuan).items()}
    _, ours = load_saved_checkpoint(tmp_path, cfg, w)
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    K, d = cfg.get("num_key_value_heads", H), D // H
    tokens = torch.randint(0, 128, (2, 9), generator=g)
    if baichuan:
        def qkv(p, h):
            q, k, v = (h @ w[p + "self_attn.W_pack.weight"].T).split(D, -1)
            return (t.reshape(*t.shape[:2], H, d) for t in (q, k, v))
        head = w["lm_head.weight"]
        if cfg["vocab_size"] == 125696:  # NormHead: each row normalised
            head = head / head.norm(dim=-1, keepdim=True)
        ref = _llama_like_reference(w, tokens, L=cfg["num_hidden_layers"], H=H, K=H, eps=cfg["rms_norm_eps"],
                                    theta=10000.0, qkv=qkv, names={"embed": "model.embed_tokens.weight"},
                                    alibi=family == "baichuan-alibi", head=head)
    else:
        def qkv(p, h):
            return ((h @ w[p + f"self_attn.{n}_proj.weight"].T).reshape(*h.shape[:2], -1, d) for n in "qkv")
        L = cfg["num_hidden_layers"]
        ref = _llama_like_reference(w, tokens, L=L, H=H, K=K, eps=cfg["rms_norm_eps"], theta=10000.0, qkv=qkv,
                                    names={"embed": "model.embed_tokens.weight"}, head=w["model.embed_tokens.weight"],
                                    emb_scale=cfg["scale_emb"], res_scale=cfg["scale_depth"] / L ** 0.5,
                                    logit_div=D / cfg["dim_model_base"])
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=1e-4)


def test_mimo_checkpoint_loads_as_qwen2_and_skips_the_mtp_layers(tmp_path):
    """MiMo's main model is transformers' Qwen2 (the hub's MiMoModel subclasses Qwen2Model): a Qwen2 checkpoint
    plus a model.mtp_layers.0.* tensor, under model_type mimo, loads (the MTP tensor left aside, as vLLM's
    mimo.py skips it) and its logits equal transformers' Qwen2."""
    import json
    import warnings

    from safetensors.torch import load_file, save_file

    from planner.runtime.load import load_checkpoint
    from planner.runtime.model import build_decoder
    from tests.test_runtime import hf_model  # random fp32 weights, biases and norms perturbed

    cfg = dict(model_type="qwen2", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               intermediate_size=96, vocab_size=128, rope_theta=10000.0, tie_word_embeddings=False)
    hf = hf_model(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf.save_pretrained(tmp_path, safe_serialization=True)
    (path,) = tmp_path.glob("*.safetensors")
    state = load_file(path)
    state["model.mtp_layers.0.input_proj.weight"] = torch.zeros(64, 128)
    save_file(state, path, metadata={"format": "pt"})
    mimo = dict(cfg, model_type="mimo", num_nextn_predict_layers=1)
    (tmp_path / "config.json").write_text(json.dumps(mimo))
    ours = build_decoder(parse_config(mimo), seed=None)
    report = load_checkpoint(ours, tmp_path)
    assert report.missing == []
    tokens = torch.randint(0, 128, (2, 9), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), hf(tokens).logits, atol=1e-4, rtol=1e-4)
