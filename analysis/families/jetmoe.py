"""JetMoE (``jetmoe``; JetMoE-8B, jetmoe/jetmoe-8b), as transformers builds it (models/jetmoe/modeling_jetmoe.py).

Every layer: ``input_layernorm`` → a mixture of attention heads (``analysis.mixers.moa``: routed query and
output experts, one shared ``kv_proj``) → residual, ``post_attention_layernorm`` → a mixture of experts →
residual; ``norm`` after the layers. Both mixtures have ``num_local_experts`` experts and route each token to
``num_experts_per_tok`` of them by a bias-free ``router.layer`` (top-k logits, softmax over them).

- Attention: ``num_key_value_heads`` K/V heads of ``kv_channels`` (``head_dim`` is its alias), each expert as
  wide; ``JetMoeConfig.__post_init__`` sets ``num_attention_heads = num_key_value_heads · num_experts_per_tok``
  whatever the config says. RoPE over all of ``kv_channels``.
- MoE: each expert a SwiGLU of ``intermediate_size`` (gate rows first in its ``input_linear``), one output
  bias (``mlp.bias``, hidden) after the gated sum.
- Norms: RMSNorms; the two per layer at transformers' fixed eps 1e-6, the final one at ``rms_norm_eps``.
- lm_head tied to the embedding unless ``tie_word_embeddings`` is false (class default true).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.moa import MixtureOfAttention
from ..spec import CheckpointLayout, Layer, ModelSpec, MoE, Norm, Numerics, RouterKind
from .common import pre_norms, read_rope, read_tie

#: the checkpoint's (transformers') module names -> ours
LAYOUT = CheckpointLayout(modules=(
    (".self_attention.experts.router.layer.", ".self_attn.router."),
    (".self_attention.experts.input_linear.", ".self_attn.q_proj."),
    (".self_attention.experts.output_linear.", ".self_attn.o_proj."),
    (".self_attention.experts.bias", ".self_attn.o_proj.bias"),
    # (self_attention.kv_proj is our k_proj and v_proj stacked: its halves of rows, not a rename)
    (".mlp.router.layer.", ".mlp.router."),
    (".mlp.input_linear.weight", ".mlp.experts.gate_up_proj"),
    (".mlp.output_linear.weight", ".mlp.experts.down_proj"),
))


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    kv = f.int("num_key_value_heads")
    # kv_channels, or head_dim (JetMoeConfig's attribute_map: head_dim -> kv_channels)
    head_dim = f.int("kv_channels") if f.cfg.get("kv_channels") is not None or not f.has("head_dim") \
        else f.int("head_dim")
    experts = f.int("num_local_experts")
    top_k = f.int("num_experts_per_tok")
    if top_k > experts:
        raise f.error("num_experts_per_tok", f"({top_k}) exceeds num_local_experts ({experts}): transformers "
                      "refuses this config")
    heads = f.derived("num_attention_heads", kv * top_k, "num_key_value_heads x num_experts_per_tok "
                      "(JetMoeConfig sets it so, whatever the config says)")
    inter = f.int("intermediate_size")
    act = f.str("activation_function", "silu")
    theta, rotary_dim, scaling = read_rope(f, head_dim)
    if rotary_dim % 2:
        raise f.error("kv_channels", f"({head_dim}) is odd: RoPE rotates pairs of features")
    eps = f.float("rms_norm_eps", 1e-6)
    tie = read_tie(f, True)
    mixer = MixtureOfAttention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv,
                               head_dim=head_dim, v_head_dim=head_dim, o_bias=True, rotary_dim=rotary_dim,
                               rope_theta=theta, num_experts=experts)
    moe = MoE(hidden, experts, top_k, inter, gated=True, act=act, output_bias=True)
    layer = Layer(mixer, moe, pre_norms(lambda: Norm(hidden)))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
                     tie_word_embeddings=tie, final_norm=Norm(hidden),
                     max_position_embeddings=f.int("max_position_embeddings", 4096, hi=1 << 30),
                     hidden_act=act, norm_eps=eps, rope_scaling=scaling,
                     numerics=Numerics(router=RouterKind.TOPK_SOFTMAX), checkpoint=LAYOUT)
