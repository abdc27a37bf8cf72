"""PowerInfer / Tiiny SmallThinker (``smallthinker``, ``SmallThinkerForCausalLM``; remote code, the hub's
configuration_smallthinker.py / modeling_smallthinker.py, served by llama.cpp and PowerInfer).

A Mixtral-shaped MoE decoder under its own field names, every layer a mixture of experts and no dense MLP:

- ``moe_num_primary_experts`` experts of ``moe_ffn_hidden_size`` (``block_sparse_moe.experts.N.up / gate / down``),
  each ReGLU (``up(x) * relu(gate(x))``, then ``down``), ``moe_num_active_primary_experts`` per token, chosen by a
  bias-free ``primary_router`` (hidden -> experts): the top-k of the logits, weighted by their sigmoids renormalised
  to sum to one (``moe_primary_router_apply_softmax`` true: by a softmax over the chosen logits); the modeling code
  divides by the sum whatever ``norm_topk_prob`` says;
- GQA attention with its own ``head_dim``, no biases, no q/k norms; ``sliding_window_layout`` (0/1 per layer, 1:
  a window of ``sliding_window_size``) and ``rope_layout`` (0/1 per layer, 0: no position embedding) say per layer
  what transformers' ``layer_types`` / SmolLM3's ``no_rope_layers`` say;
- Llama's norms (input_layernorm, post_attention_layernorm, a final norm), a head tied or not.

So the parameters, K/V cache and FLOPs are a Mixtral decoder's under these names. One thing is not modelled: the
router reads the layer's input before ``input_layernorm`` (``router_input = hidden_states`` at the top of
SmallThinkerDecoderLayer), not the FFN's normalised input, so ``verify`` refuses it by name rather than route by the
wrong vector.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec, RouterKind
from .common import Traits

#: SmallThinkerConfig's defaults (configuration_smallthinker.py on the hub), for fields a config leaves out
DEFAULTS = dict(num_hidden_layers=32, hidden_size=1536, vocab_size=151936, rms_norm_eps=1e-6, num_attention_heads=12,
                num_key_value_heads=2, head_dim=128, rope_theta=1e6, max_position_embeddings=4096 * 32,
                sliding_window_size=4096, moe_num_primary_experts=32, moe_ffn_hidden_size=768,
                moe_primary_router_apply_softmax=False, moe_num_active_primary_experts=4, tie_word_embeddings=True)

#: SmallThinker's names for what Mixtral's reader calls num_local_experts, num_experts_per_tok ...
ALIASES = {"num_local_experts": ("moe_num_primary_experts",),
           "num_experts_per_tok": ("moe_num_active_primary_experts",),
           "intermediate_size": ("moe_ffn_hidden_size",),
           "sliding_window": ("sliding_window_size",),
           "no_rope_layers": ("rope_layout",)}

TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, tie_default=True, head_dim_default=128,
                windows="window_layout", act_key="hidden_act", act_default="relu", moe="mixtral", nope_layers=True,
                # the checkpoint's expert and router names, ours after them (Mixtral's block_sparse_moe. is shared)
                modules=((".up.weight", ".up_proj.weight"), (".gate.weight", ".gate_proj.weight"),
                         (".down.weight", ".down_proj.weight"), (".primary_router.", ".gate.")))

PRE_NORM_ROUTER = ("SmallThinker's router, which reads the layer input before input_layernorm (SmallThinkerDecoderLayer "
                   "passes router_input = hidden_states to block_sparse_moe)")


def build(f: Fields, model_type: str) -> ModelSpec:
    from . import decoder

    for key, names in ALIASES.items():
        f.aliases[key] = (*f.aliases.get(key, ()), *names)
    canonical = {name: key for key, names in ALIASES.items() for name in names}
    for key, value in DEFAULTS.items():  # under the names the readers ask for (num_local_experts ...)
        f.defaults.setdefault(canonical.get(key, key), value)
    # absent rope_layout / sliding_window_layout: the class defaults, every layer RoPE and full attention
    rope_layout = f.raw("no_rope_layers") is not None  # rope_layout, or transformers' name for it
    spec = decoder.build(f, model_type, TRAITS if rope_layout else replace(TRAITS, nope_layers=False))
    softmax = f.bool("moe_primary_router_apply_softmax")
    numerics = replace(spec.numerics, router=RouterKind.TOPK_SOFTMAX if softmax else RouterKind.LOGIT_SIGMOID,
                       norm_topk_prob=True, score_correction_bias=False, runtime_unsupported=PRE_NORM_ROUTER)
    return replace(spec, numerics=numerics)
