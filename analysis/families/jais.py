"""Jais (``jais``; inceptionai / core42 jais-13b, jais-30b-v3, jais-family-* and their -chat models), a
remote-code family (transformers does not ship it): the hub's ``configuration_jais.py`` / ``modeling_jais.py``
(Cerebras' GPT-2 derivative, as BTLM's), and vLLM's ``vllm/model_executor/models/jais.py`` with its
``JAISConfig`` (``vllm/transformers_utils/configs/jais.py``, whose defaults are the ones below).

GPT-2's pre-LN block (``ln_1``, ``ln_2``, ``ln_f``: LayerNorms with bias, eps ``layer_norm_epsilon``), Conv1D
projections with biases (weights stored ``(in, out)``), tied head by default:

- attention: multi-head, one fused ``c_attn`` (rows ``[q | k | v]``) and ``c_proj``, all biased; no RoPE:
  ``position_embedding_type`` "alibi" (every published Jais) biases the scores by ALiBi's slopes, and the model
  keeps those slopes as a never-trained parameter ``transformer.relative_pe.slopes`` (``n_head x 1``: counted,
  as the checkpoint holds it; vLLM skips it when loading and computes its own); "learned" (the class default)
  adds GPT-2's ``wpe`` table of ``n_positions`` rows instead;
- MLP of ``n_inner`` (default 4 x ``n_embd``): ``activation_function`` "swiglu" is ``c_proj(c_fc(x) ·
  silu(c_fc2(x)))`` (``c_fc2`` is our gate_proj, ``c_fc`` our up_proj), any other activation GPT-2's plain
  ``c_proj(act(c_fc(x)))``; all biased;
- muP: the embedding (token plus positions) times ``embeddings_scale`` (newer configs: ``mup_embeddings_scale``),
  the logits times ``width_scale`` (newer: ``mup_output_alpha x mup_width_scale``), the scores divided by
  head_dim instead of its square root with ``scale_qk_dot_by_d`` (newer: ``mup_scale_qk_dot_by_d``); unscaled
  scores without ``scale_attn_weights``. The older names win where both are given, as in vLLM.

KV cache: K and V of every layer, ``n_head x head_dim`` each per token. ``scale_attn_by_inverse_layer_idx`` and
``add_cross_attention`` (asserted false by vLLM; no published Jais sets them) are refused.
"""

from __future__ import annotations

from ..fields import Fields
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics
from .common import pre_norms, read_mha_core, read_tie

LAYOUT = CheckpointLayout(
    renames=(("transformer.h.", "model.layers."), ("transformer.wte.", "model.embed_tokens."),
             ("transformer.wpe.", "model.embed_positions."), ("transformer.ln_f.", "model.norm."),
             ("transformer.relative_pe.", "model.relative_pe.")),
    modules=((".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm."),
             (".attn.c_attn.", ".self_attn.qkv_proj."), (".attn.c_proj.", ".self_attn.o_proj."),
             (".mlp.c_fc2.", ".mlp.gate_proj."), (".mlp.c_fc.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj.")),
    transposed=True)

#: JAISConfig's defaults (vLLM's copy of the hub's configuration_jais.py)
DEFAULTS = dict(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, activation_function="gelu_new", n_positions=1024,
                layer_norm_epsilon=1e-5, scale_attn_weights=True, position_embedding_type="learned",
                mup_width_scale=1.0, mup_embeddings_scale=1.0, mup_output_alpha=1.0, mup_scale_qk_dot_by_d=False,
                tie_word_embeddings=True)


def _mup(f: Fields) -> tuple[float, float, bool]:
    """(embedding scale, logit scale, scores divided by head_dim): the older names first, as vLLM reads them."""
    if f.cfg.get("embeddings_scale") is not None:
        emb = f.float("embeddings_scale")
    else:
        emb = f.float("mup_embeddings_scale", DEFAULTS["mup_embeddings_scale"])
    if f.cfg.get("width_scale") is not None:
        logits = f.float("width_scale")
    else:
        logits = f.float("mup_output_alpha", DEFAULTS["mup_output_alpha"]) \
            * f.float("mup_width_scale", DEFAULTS["mup_width_scale"])
    if f.cfg.get("scale_qk_dot_by_d") is not None:
        by_d = f.bool("scale_qk_dot_by_d")
    else:
        by_d = f.bool("mup_scale_qk_dot_by_d", DEFAULTS["mup_scale_qk_dot_by_d"])
    return emb, logits, by_d


def _alibi_scaling(f: Fields) -> tuple:
    """alibi_scaling's items, validated as JAISConfig does; () when null."""
    if f.raw("alibi_scaling") is None:
        return ()
    raw = f.dict("alibi_scaling")
    factor, seq = raw.get("factor"), raw.get("train_seq_len")
    ok = len(raw) == 2 and raw.get("type") == "linear" and (
        (isinstance(factor, float) and factor > 1) or (isinstance(seq, int) and not isinstance(seq, bool) and seq > 1))
    if not ok:
        raise f.error("alibi_scaling", f"must be {{\"type\": \"linear\", \"factor\": <float > 1>}} or {{\"type\": "
                                       f"\"linear\", \"train_seq_len\": <int > 1>}} (JAISConfig), got {raw!r}")
    return tuple(sorted(raw.items()))


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, hd, vocab = read_mha_core(
        f, dict(hidden_size=DEFAULTS["n_embd"], num_hidden_layers=DEFAULTS["n_layer"],
                num_attention_heads=DEFAULTS["n_head"], vocab_size=DEFAULTS["vocab_size"]),
        "Jais's head_dim is n_embd / n_head")
    inner = f.int("intermediate_size", lambda: 4 * hidden, note="n_inner absent or null: 4 x n_embd")
    for key in ("scale_attn_by_inverse_layer_idx", "add_cross_attention"):
        if f.bool(key, False):
            raise f.error(key, "is true: not supported (vLLM's Jais asserts it false; no published Jais sets it)")
    pos_type = f.str("position_embedding_type", DEFAULTS["position_embedding_type"])
    if pos_type not in ("alibi", "learned"):
        raise f.error("position_embedding_type", f"is {pos_type!r}: Jais knows 'alibi' and 'learned'")
    alibi = pos_type == "alibi"
    max_pos = f.int("max_position_embeddings", DEFAULTS["n_positions"], hi=1 << 24)
    positions = 0 if alibi else max_pos  # GPT-2's wpe: n_positions rows
    act_name = f.str("activation_function", DEFAULTS["activation_function"])
    swiglu = act_name == "swiglu"
    act = "silu" if swiglu else act_name
    emb_scale, logit_scale, by_d = _mup(f)
    scaled = f.bool("scale_attn_weights", DEFAULTS["scale_attn_weights"])
    mult = (1.0 / hd if by_d else None) if scaled else 1.0
    scaling = _alibi_scaling(f)
    eps = f.float("layer_norm_epsilon", DEFAULTS["layer_norm_epsilon"])
    tie = read_tie(f, DEFAULTS["tie_word_embeddings"])

    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True, fused_qkv=True, alibi=alibi)
    layer = Layer(attn, MLP(hidden, inner, gated=swiglu, bias=True, act=act), pre_norms(ln))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=tie, final_norm=ln(), max_position_embeddings=max_pos, position_embeddings=positions,
        alibi_slopes=heads if alibi else 0, hidden_act=act, norm_eps=eps, embedding_multiplier=emb_scale,
        numerics=Numerics(attention_multiplier=mult, logit_scale=logit_scale,
                          embedding_scale_after_positions=bool(positions) and emb_scale != 1.0,
                          alibi_scaling=scaling if alibi else ()),
        checkpoint=LAYOUT,
    )
