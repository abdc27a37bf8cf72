"""DBRX (databricks/dbrx-base, dbrx-instruct), as transformers' modeling_dbrx.py builds it.

- The top level names the shape ``d_model``, ``n_heads``, ``n_layers``, ``max_seq_len`` (aliases of
  the standard fields); the attention and the FFN read nested blocks, ``attn_config`` (``kv_n_heads``,
  ``clip_qkv``, ``rope_theta``) and ``ffn_config`` (``ffn_hidden_size``, ``moe_num_experts``,
  ``moe_top_k``, ``ffn_act_fn``, ``moe_normalize_expert_weights``), each with its class defaults.
- Attention: one fused, bias-free ``Wqkv`` (rows ``[q; k; v]``), its output clamped to
  ``[-clip_qkv, clip_qkv]`` when set, RoPE on rotate-half pairs, a bias-free ``out_proj``.
- Every layer is a MoE of ``moe_num_experts`` SwiGLU experts (``w1`` gate, ``v1`` up, ``w2`` down,
  each stored as one (experts × ffn_hidden_size, d_model) matrix), no shared expert; the router is a
  bias-free linear, softmax over all experts, top-k, then the k weights divided by their
  ``moe_normalize_expert_weights``-norm (1: their sum; null: left as they are).
- LayerNorms without bias (``norm_1`` before attention, ``norm_2`` before the FFN, ``norm_f``), eps
  1e-5 (torch's default); an untied lm_head (transformers refuses a tied DBRX).

RoPE base: published configs (dbrx-instruct) give it as ``attn_config.rope_theta`` (500000), which the
original code and vLLM use; transformers 5 reads only a top-level ``rope_theta`` / ``rope_parameters``
and otherwise runs at its default 10000. We take a top-level value when there is one, else the
``attn_config`` one. Parameter counts do not depend on it.
"""

from __future__ import annotations

from ..fields import Fields
from ..spec import (MoE, Attention, CheckpointLayout, ExpertLayout, Layer, ModelSpec, Norm, NormKind, Numerics,
                    RouterKind)
from .common import merge_nested, nested_fields, pre_norms, read_mha_shape, read_rope, read_tie

#: DbrxForCausalLM's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("transformer.wte.", "model.embed_tokens."), ("transformer.blocks.", "model.layers."),
             ("transformer.norm_f.", "model.norm.")),
    modules=((".norm_attn_norm.attn.Wqkv.", ".self_attn.qkv_proj."), (".norm_attn_norm.attn.out_proj.", ".self_attn.o_proj."),
             (".norm_attn_norm.norm_1.", ".input_layernorm."), (".norm_attn_norm.norm_2.", ".post_attention_layernorm."),
             (".ffn.router.layer.", ".mlp.router."), (".ffn.experts.mlp.", ".mlp.experts.")),
    experts=ExpertLayout.DBRX)

LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default: DBRX's LayerNorms are built without an eps


def _top_level_theta(f: Fields) -> bool:
    params = f.cfg.get("rope_parameters")
    return f.cfg.get("rope_theta") is not None or (isinstance(params, dict) and params.get("rope_theta") is not None)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    attn_f = nested_fields(f, "attn_config")
    kv = attn_f.int("kv_n_heads")
    if kv > heads or heads % kv:
        raise attn_f.error("kv_n_heads", f"({kv}) must divide n_heads ({heads})")
    clip = attn_f.float("clip_qkv", None)
    theta, rotary_dim, scaling = read_rope(f, hd)
    if not _top_level_theta(f) and attn_f.has("rope_theta"):
        f.records.pop("rope_theta", None)  # the top-level default did not apply
        theta = attn_f.float("rope_theta")
    merge_nested(f, "attn_config", attn_f)

    ffn_f = nested_fields(f, "ffn_config")
    inter = ffn_f.int("ffn_hidden_size")
    n_exp = ffn_f.int("moe_num_experts")
    k = ffn_f.int("moe_top_k")
    if k > n_exp:
        raise ffn_f.error("moe_top_k", f"({k}) exceeds moe_num_experts ({n_exp})")
    act_fn = ffn_f.dict("ffn_act_fn", {"name": "silu"})
    act = act_fn.get("name", "silu")
    if not isinstance(act, str):
        raise ffn_f.error("ffn_act_fn", f"must name its activation in 'name', got {act!r}")
    if ffn_f.cfg.get("moe_normalize_expert_weights", 0) is None:  # null: the top-k weights are not renormalised
        p = ffn_f.derived("moe_normalize_expert_weights", None, "null: top-k weights used as they are")
    else:
        p = ffn_f.float("moe_normalize_expert_weights")
    merge_nested(f, "ffn_config", ffn_f)

    ln = lambda: Norm(hidden, NormKind.LAYER, bias=False)  # noqa: E731
    attn = Attention(hidden, heads, kv, hd, hd, fused_qkv=True, rotary_dim=rotary_dim, rope_theta=theta)
    layer = Layer(attn, MoE(hidden, n_exp, k, inter, act=act), pre_norms(ln))
    spec = ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act,
        norm_eps=f.derived("layer_norm_eps", LAYER_NORM_EPS, "torch's LayerNorm default (DBRX has no eps field)"),
        rope_scaling=scaling,
        numerics=Numerics(router=RouterKind.SOFTMAX, norm_topk_prob=p is not None, topk_norm_p=p or 1.0,
                          clip_qkv=clip),
        checkpoint=LAYOUT,
    )
    if spec.tie_word_embeddings:
        raise f.error("tie_word_embeddings", "is true, but DBRX has its own lm_head (transformers refuses a tied DBRX)")
    return spec
