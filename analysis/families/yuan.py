"""IEIT Yuan 2.0 (``yuan``: IEITYuan/Yuan2-2B-hf, Yuan2-51B-hf, Yuan2-102B-hf), a remote-code family transformers
does not ship, as the hub's modeling_yuan.py / configuration_yuan.py build it (vLLM's mainline has no Yuan; the
Yuan team's vLLM fork's yuan.py has the same shapes):

- Llama-style pre-norm blocks (``input_layernorm`` / ``post_attention_layernorm`` RMSNorms, a final ``norm``),
  multi-head attention (``num_attention_heads``, head_dim hidden / heads, no GQA) with bias-free q/k/v/o, rotate-half
  RoPE of base 10000 (the hub's YuanRotaryEmbedding reads no rope field), behind Localized Filtering
  (``analysis.mixers.lfa``: two biased causal convs and an RMSNorm on the q/k input, a 1.5 x hidden conv state per
  sequence and layer);
- a bias-free gated MLP of ``intermediate_size`` (the hub's YuanMLP: act(up_proj(x)) · gate_proj(x), then
  down_proj; the same shapes as SwiGLU);
- the head tied to the embedding (``tie_word_embeddings``, true in every published config).

Yuan2.0-M32 (IEITYuan/Yuan2-M32-hf: 40B total / 3.7B active), as the hub's M32 modeling_yuan.py builds it:
``attention_projection_size`` (default hidden_size) widens q/k/v/o to heads x (projection / heads) while RoPE
still turns the first hidden / heads dims of each head; a ``moe_config`` with ``moe_num_experts`` > 0 puts a MoE on
every layer: ``moe_num_experts`` experts (``w1``: hidden -> 2 x ``ffn_hidden_size`` gated by
``gated_linear_unit`` (SiLU(x0) · x1), else hidden -> ffn_hidden_size; ``w2`` back), top ``moe_top_k`` of a
softmax over the attention router's logits, renormalised by ``norm_topk_prob``; the router
(``ParallelAttention_router``) is three bias-free Linears query / key / value (experts x hidden each) and
softmax(q kᵀ) v over the experts (``MoE.attention_router``). ``router_type`` other than ``attn_router``,
``use_shareqk`` and YaRN (``use_yarn``) are refused. verify refuses LFA (and the attention router); checkpoint names
are not mapped (the MLP's up_proj is the activated branch).
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers.lfa import LFAttention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, RouterKind
from .common import Traits, pre_norms, read_act, read_mha_core, read_tie

_SILU = Traits()


def build(f: Fields, model_type: str) -> ModelSpec:
    if f.has("num_experts"):
        raise f.error("num_experts", "is not a Yuan field: Yuan2.0-M32 gives its experts in moe_config "
                                     "(moe_num_experts, moe_top_k, ffn_hidden_size)")
    if f.bool("use_shareqk", False):
        raise f.error("use_shareqk", "is true: Yuan's shared q/k projection (qk_proj, qk_weight, qk_bias instead of "
                                     "the localized filter) is not modelled")
    if f.bool("use_yarn", False):
        raise f.error("use_yarn", "is true: Yuan's YaRN-scaled rotary embedding is not modelled")
    for key in ("rope_theta", "rope_scaling"):
        if f.raw(key) not in (None, 10000, 10000.0):
            raise f.error(key, f"is {f.raw(key)!r}: Yuan 2.0's rotary embedding is fixed at base 10000, unscaled "
                               "(the hub's code reads no rope field)")
    # YuanConfig (the hub's configuration_yuan.py) defaults: Yuan2-2B's geometry
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=2048, num_hidden_layers=24,
                                                           num_attention_heads=32, vocab_size=135040))
    if hidden % 2:
        raise f.error("hidden_size", f"({hidden}) must be even: Yuan's lf_gate.conv1 is hidden_size / 2 wide")
    intermediate = f.int("intermediate_size", 8192)
    act = read_act(f, _SILU)
    # Yuan2.0-M32: heads of attention_projection_size / heads; RoPE over the first hidden / heads dims of each
    proj = f.int("attention_projection_size", hidden)
    if proj % heads or proj < hidden:
        raise f.error("attention_projection_size", f"({proj}) must be a multiple of num_attention_heads ({heads}) and "
                                                   f"at least hidden_size ({hidden}): the hub's rotary embedding turns "
                                                   "hidden / heads dims of each head")
    attn = LFAttention(hidden, heads, heads, proj // heads, proj // heads, rotary_dim=hd, rope_theta=10000.0)
    moe, numerics = _moe(f, hidden, act)
    layers = tuple(_layer(attn, hidden, intermediate, act) if moe is None else
                   Layer(attn, moe, pre_norms(lambda: Norm(hidden))) for _ in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), max_position_embeddings=f.int("max_position_embeddings", 8192),
        **({"numerics": numerics} if numerics is not None else {}),
    )


def _moe(f: Fields, hidden: int, act: str) -> tuple[MoE | None, Numerics | None]:
    """Yuan2.0-M32's moe_config (the hub's YuanMoeLayer); (None, None) without one or with moe_num_experts 0."""
    raw = f.raw("moe_config")
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        raise f.error("moe_config", "must be an object (moe_num_experts, moe_top_k, ffn_hidden_size, ...)")
    g = Fields(raw, f"{f.where} (moe_config)", nested=True, family="yuan_moe")
    n_exp = g.int("moe_num_experts", lo=0)
    if n_exp == 0:  # YuanDecoderLayer: a dense YuanMLP
        return None, None
    k = g.int("moe_top_k")
    if k > n_exp:
        raise g.error("moe_top_k", f"({k}) exceeds moe_num_experts ({n_exp})")
    kind = g.str("router_type", "attn_router")
    if kind != "attn_router":
        raise g.error("router_type", f"is {kind!r}: only Yuan2.0-M32's attention router ('attn_router') is modelled")
    moe = MoE(hidden, n_exp, k, g.int("ffn_hidden_size"), gated=g.bool("gated_linear_unit", True), act=act,
              attention_router=True)
    # softmax over the router's logits, top-k, renormalised by norm_topk_prob (the Yuan vLLM fork: a softmax over
    # the top-k logits, the same weights)
    return moe, Numerics(router=RouterKind.SOFTMAX, norm_topk_prob=g.bool("norm_topk_prob", True))


def _layer(attn: LFAttention, hidden: int, intermediate: int, act: str) -> Layer:
    return Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(lambda: Norm(hidden)))
