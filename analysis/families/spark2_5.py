"""Spark-X2.5 (``spark2_5``: XHToken/Spark-X2.5-4B, -1.7B and their -Base, Spark2_5ForCausalLM), remote code
transformers does not ship. Counted from SGLang's ``python/sglang/srt/models/spark2_5.py`` and
``configs/spark2_5.py`` (the hub's ``modeling_spark.py`` builds the same modules).

- Attention: GQA of ``head_dim`` (256), bias-free q/k/v (SGLang fuses them as ``q_k_v_proj``) and ``out_proj``, no
  q/k norms; with ``headwise_attn_output_gate`` (the default) a bias-free ``g_proj`` (hidden -> heads) whose sigmoid
  (``gate_attn_act_mode``) scales each head's output before ``out_proj``: Laguna's / LFM3's per-head gate.
- ``layer_types``: three ``sliding_attention`` layers (window ``sliding_window``, 512; HF's window counts the current
  token, SGLang passes ``sliding_window - 1`` exclusive: the same 512 positions) to one ``full_attention``; the
  class default is that pattern, cut to ``num_hidden_layers``.
- RoPE per layer type (``rope_parameters`` keyed by layer type; the class default: full layers theta 5e6 on a quarter
  of head_dim, sliding layers theta 1e4 on all of it), NeoX style.
- MLP: a bias-free GELU-gated MLP (``gate_up_proj`` / ``down_proj``), pre-norm RMSNorms, a final norm.

Checked: Spark-X2.5-4B's config (2560 hidden, 36 layers, 16 heads, 4 K/V heads, head_dim 256, intermediate 10240,
vocab 131072, tied) counts 4,112,079,360 parameters, the hub's safetensors total (BF16) for the checkpoint.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..mixers.attention import GatedAttention
from ..spec import MLP, Layer, ModelSpec, Norm, Numerics
from .common import Traits, per_layer_types, pre_norms, read_act, read_ropes_by_type, read_tie

_TRAITS = Traits(act_default="gelu")
_TYPES = ("full_attention", "sliding_attention")
#: Spark2_5Config's rope_parameters when the config has none
_DEFAULT_ROPE = {"full_attention": {"rope_theta": 5000000.0, "partial_rotary_factor": 0.25},
                 "sliding_attention": {"rope_theta": 10000.0, "partial_rotary_factor": 1.0}}


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    n = f.int("num_hidden_layers", hi=MAX_LAYERS)
    kv = f.int("num_key_value_heads")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = f.int("head_dim")
    if f.raw("layer_types") is None:
        types = f.derived("layer_types", ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)],
                          "absent: Spark2_5Config's three sliding layers to one full")
    else:
        types = per_layer_types(f, "layer_types", n, _TYPES, at_least=True)
    window = f.int("sliding_window", 512, hi=1 << 30) if "sliding_attention" in types else None
    gated = f.bool("headwise_attn_output_gate", True)
    if gated and f.str("gate_attn_act_mode", "sigmoid") != "sigmoid":
        raise f.error("gate_attn_act_mode", f"is {f.str('gate_attn_act_mode')!r}: only the sigmoid head gate is "
                                            "modelled")
    ropes = read_ropes_by_type(f, types, hd, _DEFAULT_ROPE, "Spark2_5Config")
    mixers = {}
    for t in dict.fromkeys(types):
        kw = dict(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, v_head_dim=hd,
                  window=window if t == "sliding_attention" else None, rotary_dim=ropes[t][1], rope_theta=ropes[t][0])
        mixers[t] = GatedAttention(**kw, head_gate=True) if gated else Attention(**kw)
    act = read_act(f, _TRAITS)
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    norms = pre_norms(lambda: Norm(hidden))
    lead = "full_attention" if "full_attention" in types else "sliding_attention"
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
        layers=tuple(Layer(mixers[t], mlp, norms) for t in types),
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), rope_scaling=ropes[lead][2],
        max_position_embeddings=f.int("max_position_embeddings", 8192, hi=1 << 40),
        numerics=Numerics(rope_plain_on_windows=True,
                          rope_window_scaling=ropes["sliding_attention"][2] if "sliding_attention" in ropes else ()),
    )
