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

Yuan2.0-M32 (``moe_config``: 32 experts behind an attention router) and YaRN (``use_yarn``) are refused. verify
refuses LFA; checkpoint names are not mapped (the MLP's up_proj is the activated branch).
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers.lfa import LFAttention
from ..spec import MLP, Layer, ModelSpec, Norm
from .common import Traits, pre_norms, read_act, read_mha_core, read_tie

_SILU = Traits()


def build(f: Fields, model_type: str) -> ModelSpec:
    if f.raw("moe_config") is not None or f.has("num_experts"):
        raise f.error("moe_config" if f.raw("moe_config") is not None else "num_experts",
                      "is set: Yuan2.0-M32's mixture of experts behind an attention router is not modelled")
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
    attn = LFAttention(hidden, heads, heads, hd, hd, rotary_dim=hd, rope_theta=10000.0)
    layers = tuple(_layer(attn, hidden, intermediate, act) for _ in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), max_position_embeddings=f.int("max_position_embeddings", 8192),
    )


def _layer(attn: LFAttention, hidden: int, intermediate: int, act: str) -> Layer:
    return Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(lambda: Norm(hidden)))
