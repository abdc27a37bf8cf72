"""Snowflake Arctic (``arctic``; Snowflake/snowflake-arctic-base and -instruct, 480B total, 17B active), a
remote-code family (transformers does not ship it): its hub ``configuration_arctic.py`` / ``modeling_arctic.py``,
and vLLM's ``vllm/model_executor/models/arctic.py`` with ``vllm/transformers_utils/configs/arctic.py`` (a copy of
the hub's configuration class, whose defaults are the ones below).

A Llama-style decoder (RMSNorms, GQA with RoPE over all of head_dim = hidden / heads, no biases, untied head by
default) whose layers ``i`` with ``(i + 1) % moe_layer_frequency == 0`` are MoE layers and the others dense:

- a dense layer's FFN is one SwiGLU of ``intermediate_size`` (``block_sparse_moe.mlp.w1/w3/w2``), read as usual
  after attention through ``post_attention_layernorm``;
- a MoE layer's FFN is ``num_local_experts`` SwiGLU experts of ``intermediate_size`` (``block_sparse_moe.experts.
  {e}.w1/w3/w2``) behind a bias-free ``gate`` (softmax, top ``num_experts_per_tok``, renormalised when k > 1);
- with ``parallel_attn_mlp_res`` (the hub's modeling code; vLLM reads the same switch as ``use_residual``, and
  the published configs set both true) a MoE layer also has a dense "residual" SwiGLU of ``hidden_size`` (the
  ``is_residual_mlp`` width: hidden, not intermediate_size) behind its own ``residual_layernorm``: the block is
  ``h = x + attn(ln_in(x)); out = h + residual_mlp(ln_res(h)) + moe(ln_post(x))`` — the experts read the
  layer's INPUT, beside attention, the residual MLP reads the attention's output. Here that residual MLP is
  the MoE's always-on shared expert (``mlp.shared_expert``; every token runs it: active) and its norm a
  ``pre_shared`` norm; ``Numerics.moe_beside_attention`` marks the data flow, which the torch runtime does
  not run (``planner verify`` refuses it by that field).

KV cache: the full-attention K and V of every layer, ``num_key_value_heads x head_dim`` each per token.
``sliding_window`` other than null is refused (the hub's Mixtral-derived code would mask by it, vLLM ignores it:
the published configs leave it null). ``quantization`` (DeepSpeed FP6/FP8 applied when loading) does not change
the checkpoint, which stays 16-bit: it is not read.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import (MLP, Attention, CheckpointLayout, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, Provenance,
                    RouterKind)
from .common import pre_norms, read_rope, read_tie

#: the hub checkpoint's module names -> ours (Mixtral's experts and gate are translated by the loader)
LAYOUT = CheckpointLayout(modules=(
    (".block_sparse_moe.mlp.w1.", ".mlp.gate_proj."), (".block_sparse_moe.mlp.w3.", ".mlp.up_proj."),
    (".block_sparse_moe.mlp.w2.", ".mlp.down_proj."),
    (".residual_mlp.w1.", ".mlp.shared_expert.gate_proj."), (".residual_mlp.w3.", ".mlp.shared_expert.up_proj."),
    (".residual_mlp.w2.", ".mlp.shared_expert.down_proj."),
))

#: ArcticConfig's defaults (the hub's configuration_arctic.py)
DEFAULTS = dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                num_attention_heads=32, hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-5,
                tie_word_embeddings=False, rope_theta=1e6, num_experts_per_tok=1, num_local_experts=8,
                moe_layer_frequency=2, parallel_attn_mlp_res=False)


def _residual(f: Fields) -> bool:
    """The residual MLP switch: the hub's ``parallel_attn_mlp_res`` (class default false), or vLLM's
    ``use_residual`` when only that is given; the two must agree when both are (the published configs set both
    true)."""
    hub = f.bool("parallel_attn_mlp_res", DEFAULTS["parallel_attn_mlp_res"])
    if f.cfg.get("use_residual") is None:
        return hub
    vllm = f.bool("use_residual")
    if f.cfg.get("parallel_attn_mlp_res") is None:
        return vllm
    if hub != vllm:
        raise f.error("use_residual", f"({vllm}) contradicts parallel_attn_mlp_res ({hub}): the hub's modeling code "
                                      "builds the residual MLP by the second, vLLM by the first")
    return hub


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size", DEFAULTS["hidden_size"])
    n_layers = f.int("num_hidden_layers", DEFAULTS["num_hidden_layers"], hi=MAX_LAYERS)
    heads = f.int("num_attention_heads", DEFAULTS["num_attention_heads"])
    vocab = f.int("vocab_size", DEFAULTS["vocab_size"], hi=1 << 26)
    inter = f.int("intermediate_size", DEFAULTS["intermediate_size"])
    kv = f.int("num_key_value_heads", lambda: heads, note="absent or null: equal to num_attention_heads (ArcticConfig)")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): Arctic's head_dim is "
                                             "hidden_size / num_attention_heads")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = hidden // heads
    act = f.str("hidden_act", DEFAULTS["hidden_act"])
    if act != "silu":
        raise f.error("hidden_act", f"is {act!r}: Arctic's MLPs are SwiGLU (vLLM accepts silu only); not supported")
    if f.raw("sliding_window") is not None:
        raise f.error("sliding_window", f"is {f.raw('sliding_window')!r}: the hub's code would mask by it and vLLM "
                                        "ignores it (every published Arctic config is null); not supported")
    experts = f.int("num_local_experts", DEFAULTS["num_local_experts"])
    top_k = f.int("num_experts_per_tok", DEFAULTS["num_experts_per_tok"])
    if top_k > experts:
        raise f.error("num_experts_per_tok", f"({top_k}) exceeds num_local_experts ({experts})")
    freq = f.int("moe_layer_frequency", DEFAULTS["moe_layer_frequency"], hi=MAX_LAYERS)
    residual = _residual(f)
    theta, rotary, scaling = read_rope(f, hd)
    if not _has_rope_theta(f):  # (read_rope's own fallback is 10000)
        theta = DEFAULTS["rope_theta"]
        f.records["rope_theta"] = Provenance("rope_theta", "default", theta, "absent: ArcticConfig's default 1e6")
    eps = f.float("rms_norm_eps", DEFAULTS["rms_norm_eps"])
    tie = read_tie(f, DEFAULTS["tie_word_embeddings"])
    max_pos = f.int("max_position_embeddings", DEFAULTS["max_position_embeddings"], hi=1 << 30)

    attn = Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary, rope_theta=theta)
    norm = lambda: Norm(hidden)  # noqa: E731
    dense = Layer(attn, MLP(hidden, inter, act=act), pre_norms(norm))
    moe = MoE(hidden, experts, top_k, inter, act=act, shared_intermediate_size=hidden if residual else 0)
    moe_norms = pre_norms(norm) + ((PlacedNorm("residual_layernorm", "pre_shared", norm()),) if residual else ())
    sparse = Layer(attn, moe, moe_norms)
    layers = tuple(sparse if (i + 1) % freq == 0 else dense for i in range(n_layers))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
                     tie_word_embeddings=tie, final_norm=norm(), max_position_embeddings=max_pos, hidden_act=act,
                     norm_eps=eps, rope_scaling=scaling,
                     numerics=Numerics(router=RouterKind.SOFTMAX, norm_topk_prob=top_k > 1,
                                       moe_beside_attention=residual and n_layers >= freq),
                     checkpoint=LAYOUT)


def _has_rope_theta(f: Fields) -> bool:
    if f.cfg.get("rope_theta") is not None:
        return True
    return any(isinstance(b, dict) and b.get("rope_theta") is not None
               for b in (f.raw("rope_parameters"), f.raw("rope_scaling")))
