"""inclusionAI's Ring-linear 2.0 hybrids (``bailing_moe_linear``, architecture BailingMoeLinearV2ForCausalLM:
Ring-mini-linear-2.0, Ring-flash-linear-2.0): remote code transformers does not ship.

Counted from the module shapes of SGLang's python/sglang/srt/models/bailing_moe_linear.py (BailingMoeLinearV2-
ForCausalLM), vLLM's vllm/model_executor/models/bailing_moe_linear.py + layers/mamba/linear/bailing_linear_attn.py
(its linear layer and MoE) and the hub's modeling_bailing_moe_linear_v2.py as mlx-lm ports it
(mlx_lm/models/bailing_moe_linear.py):

- Ling 2.0's decoder (``families/bailing.py`` builds it: fused ``query_key_value`` GQA with per-head q/k RMSNorms
  and partial rotate-half RoPE, ``first_k_dense_replace`` dense SwiGLU layers, then sigmoid-routed grouped experts
  with the ``expert_bias`` buffer, shared experts, ``routed_scaling_factor``; untied ``lm_head``), whose attention
  is softmax only on the last layer of every ``layer_group_size`` (the hub: ``(i + 1) % group == 0``, or past the
  last whole group);
- every other layer lightning attention (``mixers/bailing_linear.py``: MHA ``query_key_value`` 3·H·d, q/k norms,
  RoPE, a d × d state per head, ``g_proj`` and a gated RMSNorm in ``group_norm_size`` groups, ``dense``).

Ring-mini-linear-2.0 (its config.json as mlx-community/Ring-mini-linear-2.0-4bit ships it, quantization keys aside):
16,423,443,456 parameters, 1,600,773,120 active (the card: "activating only 1.6B of its 16.4B total parameters";
the technical report's 957M activations are the 956,947,456 without embedding and head), 8 KiB of K/V per token
(4 softmax layers) and 8 MiB of state per sequence (16 linear layers) in bf16. Ring-flash-linear-2.0 (config
reconstructed from Ling-flash-2.0's, one softmax layer in 8): 104,181,657,600 (the report's 104B), 7,444,230,144
active (6,156,578,816 without embedding and head: the report's 6.1B), 8 KiB + 28 MiB. The ``expert_bias`` buffers
(fp32 in the checkpoint) are not parameters, as Ling 2.0's.

Refused by name: the MLA hybrids (BailingMoeV2_5ForCausalLM: Ling / Ring 2.5, whose softmax layers are MLA) and
Ring-lite-linear-preview (BailingMoeLinearForCausalLM: linear layers with GQA / low-rank options); a head_dim other
than hidden / heads (the hub sizes the linear heads from hidden / heads, vLLM and SGLang from head_dim); a layer
count that is not a whole number of groups (the hub makes the trailing layers softmax, vLLM linear, SGLang refuses).
The MTP layers (``num_nextn_predict_layers``, stored under ``model.mtp``, skipped by vLLM and SGLang's main model)
are not counted.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields, short
from ..mixers.bailing_linear import BailingLinearAttention
from ..spec import ModelSpec
from . import bailing

V2 = "BailingMoeLinearV2ForCausalLM"
#: architectures of the same model_type that are not this block, and why
OTHERS = {
    "BailingMoeV2_5ForCausalLM": "Ling / Ring 2.5's softmax layers are MLA (vLLM's BailingMoeV25MLAAttention), which "
                                 "this reader does not model",
    "BailingMoeLinearForCausalLM": "Ring-lite-linear-preview's linear layers (use_linear_gqa, use_low_rank, "
                                   "rotary_type) are not modelled",
}


def build(f: Fields, model_type: str) -> ModelSpec:
    archs = f.raw("architectures")
    names = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    for a in names:
        if a in OTHERS:
            raise f.error("architectures", f"is {a}: {OTHERS[a]}; only {V2} (Ring-linear 2.0) is supported")
    if names and V2 not in names:
        raise f.error("architectures", f"is {short(archs)}; the bailing_moe_linear reader models {V2} only")
    if f.raw("kv_lora_rank") is not None:
        raise f.error("kv_lora_rank", "is set: MLA softmax layers (Ling / Ring 2.5) are not modelled")

    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    n_layers = f.int("num_hidden_layers")
    if f.raw("head_dim") is not None and (hidden % heads or f.int("head_dim") != hidden // heads):
        raise f.error("head_dim", f"({f.int('head_dim')}) differs from hidden_size / num_attention_heads "
                                  f"({hidden} / {heads}): the hub's code sizes the heads from the latter, vLLM and "
                                  "SGLang from head_dim")
    group = f.int("layer_group_size", hi=1 << 12)
    if n_layers % group:
        raise f.error("layer_group_size", f"({group}) does not divide num_hidden_layers ({n_layers}): the hub's code "
                                          "makes the trailing layers softmax attention, vLLM linear attention, and "
                                          "SGLang refuses the config")
    # (use_bias: absent, BailingMoeConfig's default true, as bailing.build reads it)
    if f.bool("use_bias", True) and not f.bool("use_qkv_bias", False):
        raise f.error("use_qkv_bias", "is false with use_bias true: the hub's linear attention biases "
                                      "query_key_value by use_qkv_bias, vLLM and SGLang by use_bias or use_qkv_bias")
    n_mtp = f.int("num_nextn_predict_layers", 0, lo=0, hi=64)
    if n_mtp:
        f.derived("mtp_layers", 0, f"{n_mtp} MTP layer(s) (num_nextn_predict_layers, under model.mtp) not counted: "
                                   "vLLM and SGLang's main model skip them, and their block is not modelled")

    spec = bailing.build(f, model_type)
    full = spec.layers[0].mixer  # Ling 2.0's GQA, as bailing.py reads it
    inner = heads * full.head_dim
    groups = f.int("group_norm_size", 1, hi=inner)
    if inner % groups:
        raise f.error("group_norm_size", f"({groups}) does not divide the {inner} features of the linear heads")
    linear_rope = f.bool("linear_rope", True)
    silu = f.bool("use_linear_silu") if f.raw("use_linear_silu") is not None else f.bool("linear_silu", False)
    linear = BailingLinearAttention(hidden, heads, full.head_dim, qkv_bias=full.q_bias, o_bias=full.o_bias,
                                    qk_norm=bool(full.q_norm_dim), rotary_dim=full.rotary_dim if linear_rope else 0,
                                    rope_theta=full.rope_theta, norm_groups=groups, silu=silu)
    layers = tuple(layer if (i + 1) % group == 0 else replace(layer, mixer=linear)
                   for i, layer in enumerate(spec.layers))
    caveats = spec.caveats + ((f"the checkpoint's {n_mtp} MTP layer(s) (num_nextn_predict_layers, under model.mtp) "
                               "are not counted: vLLM and SGLang's Ring-linear 2.0 build none (vLLM's "
                               "bailing_moe_mtp.py is Ling 2.5's MLA block)",) if n_mtp else ())
    return replace(spec, layers=layers, mtp_layers=(), mtp_extra_params=0, caveats=caveats)
