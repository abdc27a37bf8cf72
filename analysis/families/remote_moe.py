"""Remote-code MoE families that reuse an existing builder (no transformers class: the hub's code and vLLM).

- DeepSeek-MoE v1 (``deepseek``: deepseek-ai/deepseek-moe-16b-base / -chat; vLLM
  vllm/model_executor/models/deepseek.py -> deepseek_v2.py's MHA path): a Llama decoder (MHA/GQA, q/k/v/o
  bias-free unless ``attention_bias``, rotate-half RoPE) whose MLP is, on the layers i >= ``first_k_dense_replace``
  with i % ``moe_layer_freq`` == 0 (DeepseekConfig's defaults 0 and 1), a softmax-routed MoE of
  ``n_routed_experts`` SwiGLU experts of ``moe_intermediate_size`` (``gate.weight``: experts x hidden, no bias),
  top ``num_experts_per_tok``, renormalised only when ``norm_topk_prob`` (default false), plus one shared SwiGLU
  MLP of ``n_shared_experts x moe_intermediate_size``; dense layers a SwiGLU of ``intermediate_size``; untied
  ``lm_head``. No MLA, no MTP, no correction bias, no group routing.
- MiniMax-M1 / MiniMax-Text-01 as the hub ships them (``minimax_m1`` / ``minimax_text_01``; vLLM
  minimax_text_01.py serves both MiniMaxText01ForCausalLM and MiniMaxM1ForCausalLM): transformers' ``minimax``
  layout (``hybrid.build_minimax``) read from the original field names (``attn_type_list``), with RoPE on
  ``rotary_dim`` of each head (vLLM; default head_dim). A shared expert (``shared_intermediate_size`` > 0) is
  refused: no published checkpoint has one and it is not modelled.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..mixers import Attention
from ..spec import GroupScore, ModelSpec, RopeStyle, RouterKind
from .common import Traits, read_routing
from . import decoder, hybrid

#: DeepSeek-MoE v1: the Llama decoder with DeepSeek's MoE plan (decoder.moe_plan's "deepseek" kind)
DEEPSEEK_V1 = Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, windows="none",
                     moe="deepseek")


def build_deepseek_v1(f: Fields, model_type: str) -> ModelSpec:
    spec = decoder.build(f, model_type, DEEPSEEK_V1)
    # DeepseekMoE's MoEGate: softmax scores, top-k, renormalised only with norm_topk_prob (default false)
    routing = read_routing(f, RouterKind.SOFTMAX, norm_default=False, group_score=GroupScore.NONE)
    if f.str("scoring_func", "softmax") != "softmax":
        raise f.error("scoring_func", "must be softmax: DeepSeek-MoE v1's gate supports no other")
    numerics = replace(spec.numerics, rope_style=RopeStyle.HALF, score_correction_bias=False, **routing)
    return replace(spec, numerics=numerics, mtp_layers=(), mtp_extra_params=0)


def build_minimax_m1(f: Fields, model_type: str) -> ModelSpec:
    # the hub's MiniMax-01 configs write it as a one-element list ([0]): one value, as transformers' port reads it
    if isinstance(f.raw("shared_intermediate_size"), list):
        one = f.int_list("shared_intermediate_size") or []
        if len(one) != 1:
            raise f.error("shared_intermediate_size", f"must hold exactly one value, got {len(one)}")
        shared = one[0]
    else:
        shared = f.int("shared_intermediate_size", 0, lo=0)
    if shared:
        raise f.error("shared_intermediate_size", f"({shared}) is not modelled: MiniMax's shared expert is absent "
                                                  "from every published checkpoint")
    spec = hybrid.build_minimax(f, model_type)
    layers = spec.layers
    if f.has("rotary_dim"):
        hd = next((lay.mixer.head_dim for lay in layers if isinstance(lay.mixer, Attention)), None)
        if hd is not None:
            rd = f.int("rotary_dim", hi=hd)
            layers = tuple(replace(lay, mixer=replace(lay.mixer, rotary_dim=rd))
                           if isinstance(lay.mixer, Attention) else lay for lay in layers)
    return replace(spec, layers=layers)
