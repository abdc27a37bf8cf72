"""Snowflake Arctic (analysis/families/arctic.py) and Jais (analysis/families/jais.py), two remote-code families
with no transformers oracle: each total is checked against a hand count written from vLLM's weight shapes
(vllm/model_executor/models/arctic.py, jais.py) and the hub's modeling code, and against the published size of a
real checkpoint; Jais's runtime loads a checkpoint in its own names (Conv1D layout, c_fc / c_fc2, relative_pe)
checked against a forward written here from the hub's modeling_jais.py; Arctic's data flow is refused by verify."""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params
from tests.oracle import hub_alibi_slopes

# Snowflake/snowflake-arctic-instruct config.json (the hub), but for auto_map and enc_index
ARCTIC_INSTRUCT = {
    "architectures": ["ArcticForCausalLM"], "attention_dropout": 0, "bos_token_id": 1,
    "enable_expert_tensor_parallelism": False, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 7168,
    "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 4096, "model_type": "arctic",
    "moe_eval_capacity_factor": 1, "moe_layer_frequency": 1, "moe_min_capacity": 0, "moe_token_dropping": True,
    "moe_train_capacity_factor": 1, "num_attention_heads": 56, "num_experts_per_tok": 2, "num_hidden_layers": 35,
    "num_key_value_heads": 8, "num_local_experts": 128, "parallel_attn_mlp_res": True, "quantization": None,
    "rms_norm_eps": 1e-05, "rope_theta": 10000, "router_aux_loss_coef": 0.001, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.39.0", "use_cache": True,
    "use_residual": True, "vocab_size": 32000}
# core42/jais-13b config.json (the hub), but for auto_map: the paper's 40 layers x 5120, 40 heads, SwiGLU of
# 13653 (8/3 x 5120), ALiBi, vocabulary 84,992, 2048 positions; muP under the older names
JAIS_13B = {
    "activation_function": "swiglu", "architectures": ["JAISLMHeadModel"], "attn_pdrop": 0.0, "bos_token_id": 0,
    "embd_pdrop": 0.0, "embeddings_scale": 14.6, "eos_token_id": 0, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "jais", "n_embd": 5120, "n_head": 40, "n_inner": 13653, "n_layer": 40,
    "n_positions": 2048, "pad_token_id": 0, "position_embedding_type": "alibi", "reorder_and_upcast_attn": False,
    "resid_pdrop": 0.0, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
    "scale_qk_dot_by_d": True, "torch_dtype": "float32", "transformers_version": "4.28.0", "use_cache": True,
    "vocab_size": 84992, "width_scale": 0.11100000000000002}
# inceptionai/jais-30b-v3: the shape fields of its model card / config (48 layers x 7168, 56 heads, SwiGLU of 19114
# = 8/3 x 7168, ALiBi, the same vocabulary, 8192 positions) under the newer mup_* names; its muP values (which
# change no count) are not reproduced here, tie_word_embeddings left to the class default (tied)
JAIS_30B_V3 = {
    "activation_function": "swiglu", "architectures": ["JAISLMHeadModel"], "model_type": "jais", "n_embd": 7168,
    "n_head": 56, "n_inner": 19114, "n_layer": 48, "n_positions": 8192, "position_embedding_type": "alibi",
    "mup_scale_qk_dot_by_d": True, "layer_norm_epsilon": 1e-05, "vocab_size": 84992}


def arctic_hand(c: dict) -> tuple[int, int]:
    """(total, active) from vllm/model_executor/models/arctic.py: embed_tokens and lm_head (V, D); per layer
    qkv_proj (D -> (H + 2K)·d), o_proj (H·d -> D), input_layernorm and post_attention_layernorm; a MoE layer
    ((i + 1) % moe_layer_frequency == 0) has gate (E, D), ws (E, 2I, D), w2s (E, D, I) and, with use_residual, a
    residual_layernorm and residual_mlp w13 (D -> 2D) / w2 (D -> D); a dense layer block_sparse_moe.mlp w13
    (D -> 2I) / w2 (I -> D); norm. Active: top-k of the E experts."""
    D, L, H, K, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"],
                        c["intermediate_size"], c["vocab_size"])
    E, k, freq, res = c["num_local_experts"], c["num_experts_per_tok"], c["moe_layer_frequency"], c["use_residual"]
    d = D // H
    total = active = 2 * V * D + D
    for i in range(L):
        common = D * (H + 2 * K) * d + H * d * D + 2 * D
        if (i + 1) % freq == 0:
            shared = (3 * D * D + D) if res else 0
            total += common + E * D + E * 3 * D * I + shared
            active += common + E * D + k * 3 * D * I + shared
        else:
            total += common + 3 * D * I
            active += common + 3 * D * I
    return total, active


def jais_hand(c: dict) -> int:
    """vllm/model_executor/models/jais.py (plus the hub's relative_pe.slopes, which vLLM skips when loading): wte
    (V, D), wpe (P, D) unless ALiBi; per layer ln_1 and ln_2 (weight and bias), c_attn (D -> 3D, bias), c_proj
    (D -> D, bias), c_fc and, with SwiGLU, c_fc2 (D -> I, bias), c_proj (I -> D, bias); ln_f; the ALiBi slopes
    (H, 1); lm_head tied."""
    D, L, H, V = c["n_embd"], c["n_layer"], c["n_head"], c["vocab_size"]
    I = c.get("n_inner") or 4 * D
    alibi = c.get("position_embedding_type") == "alibi"
    fcs = 2 if c.get("activation_function") == "swiglu" else 1
    layer = 4 * D + (3 * D * D + 3 * D) + (D * D + D) + fcs * (D * I + I) + (I * D + D)
    return V * D + (0 if alibi else c.get("n_positions", 1024) * D) + L * layer + 2 * D + (H if alibi else 0)


def test_arctic_total_and_active_equal_the_hand_count_and_the_published_sizes():
    """Snowflake: "a 10B dense transformer model with a residual 128x3.66B MoE MLP resulting in 480B total and
    17B active parameters"."""
    p = count_params(parse_config(ARCTIC_INSTRUCT))
    assert (p.total, p.active) == arctic_hand(ARCTIC_INSTRUCT) == (478_584_608_768, 17_318_647_808)
    assert round(p.total / 1e10) * 10 == 480 and round(p.active / 1e9) == 17
    D, L, I = 7168, 35, 4864
    assert round(L * 3 * D * I / 1e9, 2) == 3.66  # one expert over all the layers: "128 x 3.66B"
    assert round((p.total - 128 * L * 3 * D * I) / 1e9) == 10  # the dense part: "10B"


def test_arctic_generic_fallback_was_wrong():
    """Before this family, arctic was read by the generic Llama fallback: no residual MLP, no residual_layernorm
    (473,189,434,368 total, 11,923,473,408 active): 5.4B short, a third of the active parameters."""
    p = count_params(parse_config(ARCTIC_INSTRUCT))
    assert p.total - 473_189_434_368 == 35 * (3 * 7168 * 7168 + 7168)
    assert not parse_config(ARCTIC_INSTRUCT).generic


@pytest.mark.parametrize("change", [
    dict(moe_layer_frequency=2), dict(moe_layer_frequency=3, use_residual=False, parallel_attn_mlp_res=False),
    dict(num_experts_per_tok=1, num_local_experts=16, num_key_value_heads=56),
])
def test_arctic_variants_equal_the_hand_count(change):
    """Dense layers between MoE layers (block_sparse_moe.mlp of intermediate_size), no residual MLP, top-1, MHA."""
    cfg = dict(ARCTIC_INSTRUCT, num_hidden_layers=6, **change)
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == arctic_hand(cfg)


def test_arctic_residual_switch_reads_either_name():
    """The hub's code builds the residual MLP by parallel_attn_mlp_res (class default false), vLLM by use_residual:
    either alone decides; contradicting values are refused."""
    base = {k: v for k, v in ARCTIC_INSTRUCT.items() if k not in ("use_residual", "parallel_attn_mlp_res")}
    base["num_hidden_layers"] = 2
    with_res = arctic_hand(dict(base, num_hidden_layers=2, use_residual=True))[0]
    without = arctic_hand(dict(base, num_hidden_layers=2, use_residual=False))[0]
    assert count_params(parse_config(base)).total == without
    assert count_params(parse_config(dict(base, use_residual=True))).total == with_res
    assert count_params(parse_config(dict(base, parallel_attn_mlp_res=True))).total == with_res
    with pytest.raises(ConfigError, match="use_residual"):
        parse_config(dict(base, use_residual=True, parallel_attn_mlp_res=False))


def test_arctic_class_defaults():
    """A config of nothing but model_type is ArcticConfig(): 32 x 4096, 32 heads (no GQA), intermediate 14336,
    8 experts top-1 every second layer, no residual MLP, vocabulary 32000, untied."""
    c = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
             intermediate_size=14336, vocab_size=32000, num_local_experts=8, num_experts_per_tok=1,
             moe_layer_frequency=2, use_residual=False)
    p = count_params(parse_config({"model_type": "arctic"}))
    assert (p.total, p.active) == arctic_hand(c)
    assert not parse_config({"model_type": "arctic"}).generic
    assert parse_config({"model_type": "arctic"}).layers[0].mixer.rope_theta == 1e6  # not read_rope's 10000


@pytest.mark.parametrize("change, field", [
    (dict(num_key_value_heads=3), "num_key_value_heads"),
    (dict(num_attention_heads=57), "num_attention_heads"),
    (dict(hidden_act="gelu"), "hidden_act"),
    (dict(sliding_window=4096), "sliding_window"),
    (dict(num_experts_per_tok=129), "num_experts_per_tok"),
    (dict(moe_layer_frequency=0), "moe_layer_frequency"),
    (dict(use_residual="yes"), "use_residual"),
])
def test_arctic_bad_configs(change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(ARCTIC_INSTRUCT, **change))


@pytest.mark.parametrize("cfg, published", [(JAIS_13B, 13), (JAIS_30B_V3, 30)])
def test_jais_totals_equal_the_hand_count_and_the_published_size(cfg, published):
    p = count_params(parse_config(cfg))
    assert p.total == p.active == jais_hand(cfg)
    assert round(p.total / 1e9) == published


def test_jais_published_totals_are_exact_integers():
    """jais-13b 13,020,811,960 (the generic Llama fallback said 13,453,440,000: an untied head, no biases, RMS
    norms); jais-30b-v3's shape 30,208,489,464."""
    assert count_params(parse_config(JAIS_13B)).total == 13_020_811_960
    assert count_params(parse_config(JAIS_30B_V3)).total == 30_208_489_464


def test_jais_class_defaults_are_gpt2_small():
    """JAISConfig() is GPT-2 small (learned positions, gelu_new, tied): 124,439,808 parameters, GPT-2's count."""
    assert count_params(parse_config({"model_type": "jais"})).total == 124_439_808
    cfg = dict(JAIS_13B, position_embedding_type="learned", activation_function="gelu_new", n_layer=2)
    assert count_params(parse_config(cfg)).total == jais_hand(cfg)


@pytest.mark.parametrize("cfg, layers, kv_heads, head_dim", [
    (ARCTIC_INSTRUCT, 35, 8, 128), (JAIS_13B, 40, 40, 128), (JAIS_30B_V3, 48, 56, 128)])
def test_kv_per_token(cfg, layers, kv_heads, head_dim):
    """K and V of every layer's KV heads (vLLM's Attention(num_kv_heads); Jais multi-head), bf16."""
    a = analyze(parse_config(cfg), Options(context=100, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == layers * 2 * kv_heads * head_dim * 2


def test_jais_mup_numerics():
    """The older names win (vLLM): embeddings_scale, width_scale, scale_qk_dot_by_d; else mup_embeddings_scale,
    mup_output_alpha x mup_width_scale, mup_scale_qk_dot_by_d; the scores over head_dim with the last."""
    s = parse_config(JAIS_13B)
    assert s.embedding_multiplier == 14.6 and s.numerics.logit_scale == pytest.approx(0.111)
    assert s.numerics.attention_multiplier == 1 / 128 and s.alibi_slopes == 40
    new = parse_config(dict(JAIS_30B_V3, mup_embeddings_scale=10.0, mup_output_alpha=2.0, mup_width_scale=0.25))
    assert new.embedding_multiplier == 10.0 and new.numerics.logit_scale == 0.5
    plain = parse_config(dict(JAIS_30B_V3, mup_scale_qk_dot_by_d=False))
    assert plain.numerics.attention_multiplier is None  # 1 / sqrt(head_dim)


@pytest.mark.parametrize("change, field", [
    (dict(n_head=48), "num_attention_heads"),
    (dict(position_embedding_type="rotary"), "position_embedding_type"),
    (dict(scale_attn_by_inverse_layer_idx=True), "scale_attn_by_inverse_layer_idx"),
    (dict(add_cross_attention=True), "add_cross_attention"),
    (dict(alibi_scaling={"type": "dynamic", "factor": 2.0}), "alibi_scaling"),
    (dict(alibi_scaling={"type": "linear", "factor": 1}), "alibi_scaling"),
    (dict(width_scale=-1.0), "width_scale"),
    (dict(n_inner="big"), "n_inner"),
])
def test_jais_bad_configs(change, field):
    with pytest.raises(ConfigError, match=field):
        parse_config(dict(JAIS_13B, **change))


# ---- runtime -------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def test_arctic_is_refused_by_verify_clearly(tmp_path):
    from planner.runtime.model import build_decoder
    from tests.test_runtime import assert_verify_refuses

    cfg = dict(ARCTIC_INSTRUCT, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=32,
               num_local_experts=4, num_hidden_layers=2, vocab_size=128)
    assert_verify_refuses(tmp_path, cfg, "verify does not support Snowflake Arctic's decoder layer yet")
    # without the residual MLP Arctic is a Mixtral-like decoder, which runs
    build_decoder(parse_config(dict(cfg, use_residual=False, parallel_attn_mlp_res=False)), device="meta")


def _ln(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def _jais_reference(w, c, tokens):
    """modeling_jais.py: Conv1D projections (x @ W + b, W stored (in, out)); the embedding (plus wpe) times the
    embeddings scale; scores q·k / d^(1 or 1/2) minus slope_h·|i - j| (relative_pe), causal; SwiGLU c_fc(x) ·
    silu(c_fc2(x)); ln_f; the tied head times the width scale."""
    D, H, eps = c["n_embd"], c["n_head"], c["layer_norm_epsilon"]
    d = D // H
    B, T = tokens.shape
    x = w["transformer.wte.weight"][tokens]
    if c["position_embedding_type"] != "alibi":
        x = x + w["transformer.wpe.weight"][torch.arange(T)][None]
    x = x * c.get("embeddings_scale", c.get("mup_embeddings_scale", 1.0))
    rel = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).abs().float()
    bias = 0.0
    if c["position_embedding_type"] == "alibi":
        bias = -w["transformer.relative_pe.slopes"][:, :, None] * rel[None]  # (H, T, T)
    power = 1.0 if c.get("scale_qk_dot_by_d", c.get("mup_scale_qk_dot_by_d")) else 0.5
    swiglu = c["activation_function"] == "swiglu"
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = _ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        q, k, v = (h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]).split(D, -1)
        q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / d ** power + bias
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = _ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        a1 = h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        if swiglu:
            a = a1 * torch.nn.functional.silu(h @ w[p + "mlp.c_fc2.weight"] + w[p + "mlp.c_fc2.bias"])
        else:  # gelu_new
            a = torch.nn.functional.gelu(a1, approximate="tanh")
        x = x + a @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = _ln(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps)
    scale = c.get("width_scale", c.get("mup_output_alpha", 1.0) * c.get("mup_width_scale", 1.0))
    return (x @ w["transformer.wte.weight"].T) * scale


def _jais_checkpoint(c, g):
    D, L, H, V = c["n_embd"], c["n_layer"], c["n_head"], c["vocab_size"]
    I = c["n_inner"]
    shapes = {"transformer.wte.weight": (V, D), "transformer.ln_f.weight": (D,), "transformer.ln_f.bias": (D,)}
    if c["position_embedding_type"] == "alibi":
        shapes["transformer.relative_pe.slopes"] = (H, 1)
    else:
        shapes["transformer.wpe.weight"] = (c["n_positions"], D)
    for i in range(L):
        p = f"transformer.h.{i}."
        shapes |= {p + "ln_1.weight": (D,), p + "ln_1.bias": (D,), p + "ln_2.weight": (D,), p + "ln_2.bias": (D,),
                   p + "attn.c_attn.weight": (D, 3 * D), p + "attn.c_attn.bias": (3 * D,),
                   p + "attn.c_proj.weight": (D, D), p + "attn.c_proj.bias": (D,),
                   p + "mlp.c_fc.weight": (D, I), p + "mlp.c_fc.bias": (I,),
                   p + "mlp.c_proj.weight": (I, D), p + "mlp.c_proj.bias": (D,)}
        if c["activation_function"] == "swiglu":
            shapes |= {p + "mlp.c_fc2.weight": (D, I), p + "mlp.c_fc2.bias": (I,)}
    w = {n: torch.randn(s, generator=g) * (0.3 if len(s) == 2 else 0.1) + (1.0 if ".ln_" in n and n.endswith("weight")
                                                                          else 0.0)
         for n, s in shapes.items()}
    if "transformer.relative_pe.slopes" in w:
        w["transformer.relative_pe.slopes"] = torch.tensor(hub_alibi_slopes(H))[:, None]
    return w


TINY_JAIS = {
    # ALiBi over 6 heads (slopes past the nearest power of two), SwiGLU, the older muP names, scores over head_dim
    "alibi": dict(JAIS_13B, n_embd=48, n_head=6, n_inner=80, n_layer=2, vocab_size=128, embeddings_scale=3.0,
                  width_scale=0.5, torch_dtype="float32"),
    # learned positions scaled with the token embedding, gelu_new, the newer muP names, 1/sqrt(d) scores
    "learned": dict(JAIS_30B_V3, n_embd=32, n_head=4, n_inner=64, n_layer=2, vocab_size=128, n_positions=32,
                    position_embedding_type="learned", activation_function="gelu_new", mup_embeddings_scale=2.0,
                    mup_output_alpha=2.0, mup_width_scale=0.25, mup_scale_qk_dot_by_d=False, torch_dtype="float32"),
}


@pytest.mark.parametrize("case", sorted(TINY_JAIS))
def test_jais_checkpoint_loads_and_matches_the_hub_forward(case, tmp_path):
    """A checkpoint in Jais's own names (transformer.h.N, Conv1D (in, out) weights, c_fc / c_fc2, relative_pe.slopes)
    loads into our decoder with nothing missing or left over, and its logits equal a forward written from the hub's
    modeling_jais.py; a cached decode step equals the recompute."""
    from planner.runtime.cache import KVCache
    from tests.test_runtime import load_saved_checkpoint

    cfg = TINY_JAIS[case]
    g = torch.Generator().manual_seed(11)
    w = _jais_checkpoint(cfg, g)
    spec, ours = load_saved_checkpoint(tmp_path, cfg, w)
    tokens = torch.randint(0, cfg["vocab_size"], (2, 9), generator=g)
    ref = _jais_reference(w, cfg, tokens)
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=1e-4)
        cache = KVCache(spec, 2, 16)
        ours(tokens[:, :8], 0, cache)
        torch.testing.assert_close(ours(tokens[:, 8:], 8, cache), ref[:, -1], atol=1e-4, rtol=1e-4)


def test_arctic_trace_reads_the_residual_mlp_and_its_norm():
    """One decode token of a MoE layer: the residual_layernorm and the residual SwiGLU (hidden x hidden, as the
    shared expert) run on every token beside the top-2 experts; every tensor of the layer but the unrouted experts is
    read once."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(ARCTIC_INSTRUCT)
    fmt, _ = weight_format(spec, "bf16")
    ops = [o for o in step_ops(spec, fmt, get_dtype("bf16"), cached_tokens=10) if o.layer == 0]
    by = {o.name: o for o in ops}
    D = 7168
    assert by["residual_layernorm"].weight_bytes == 2 * D
    assert sum(by[f"shared_expert.{n}"].flops for n in ("gate_proj", "up_proj", "down_proj")) == 3 * 2 * D * D
    read = sum(o.weight_bytes for o in ops)
    layer = sum(2 * t.numel for t in spec.layer_tensors(0) if t.kind != "expert")
    experts = 2 * 128 * 3 * D * 4864
    assert read - layer == round(experts * 2 / 128)  # one token reads its 2 experts' weights


def test_jais_pipeline_stages_hold_what_the_analysis_places(tmp_path):
    """verify --pp 2: the slopes parameter sits with the model-level norms on the last stage, as the analysis places
    it, so every per-stage exact check passes."""
    from tests.clirun import run

    (tmp_path / "config.json").write_text(json.dumps(TINY_JAIS["alibi"]))
    r = run("verify", str(tmp_path), "--device", "cpu", "--context", "16", "--pp", "2", "--steps", "1")
    assert r.code == 0, r.err
