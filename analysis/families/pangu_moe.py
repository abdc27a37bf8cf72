"""openPangu-Ultra-MoE (``pangu_ultra_moe``: openPangu-Ultra-MoE-718B, published 718B total / 39B active), the
remote-code model_type transformers does not ship. Counted as the hub's modeling_openpangu_moe.py builds it and as
vLLM's vllm/model_executor/models/openpangu.py (``PanguUltraMoEForCausalLM``, its MLA path) serves it:

- DeepSeek-V3's multi-head latent attention (q LoRA ``q_lora_rank`` with its RMSNorm, else a full ``q_proj``;
  ``kv_a_proj_with_mqa`` to ``kv_lora_rank`` + ``qk_rope_head_dim``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``),
  RoPE on interleaved pairs (``rope_interleave``, default true in vLLM; the hub code always pairs).
- Dense SwiGLU MLPs of ``intermediate_size`` on the first ``first_k_dense_replace`` layers, then a MoE of
  ``n_routed_experts`` SwiGLU experts of ``moe_intermediate_size``, top ``num_experts_per_tok`` by sigmoid scores
  in ONE group (vLLM: num_expert_group=1; no n_group / topk_group is read), renormalised by ``norm_topk_prob`` and
  scaled by ``routed_scaling_factor``, plus ``n_shared_experts`` x moe_intermediate_size of shared expert; the
  router is a bias-free ``gate`` (a choice-only ``e_score_correction_bias`` only with ``router_enable_expert_bias``,
  counted like DeepSeek V3's: not a parameter).
- ``sandwich_norm`` (default false): the attention output is RMS-normed (``post_attention_layernorm``) before the
  residual add, the FFN input by ``pre_mlp_layernorm`` and its output by ``post_mlp_layernorm``; without it the
  Llama layout (input_layernorm, post_attention_layernorm before the FFN).
- ``num_nextn_predict_layers`` MTP modules (DeepSeek-V3's: block, enorm, hnorm, eh_proj, head norm and stored
  embedding / head copies), reported apart from the main model as for DeepSeek.

The hub's OpenPanguMoEConfig spells the fields its own way (``attention_q_lora_dim``, ``attention_kv_lora_dim``,
``attention_qk_dim``, ``attention_qk_rope_dim``, ``attention_v_dim``, ``num_routed_experts``, ``num_shared_experts``,
``num_dense_layers``, ``num_mtp_layers``); both spellings are read, with that class's defaults.

The later openPangu MoE options vLLM's openpangu.py also builds (attention sinks ``param_sink_number``,
hyper-connections ``use_mhc``, MoME convolutions ``use_mome``, sparse-attention indexers ``index_topk``, sliding
windows, ``block_post_layernorm_idx``) are refused by name, as is a config without MLA fields (vLLM's GQA / sink
attention path).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import GroupScore, ModelSpec, Norm, PlacedNorm
from . import deepseek
from .hunyuan_large import relabel_defaults, remote_defaults

#: the hub's OpenPanguMoEConfig (configuration_openpangu_moe.py) spellings of DeepSeek-V3's fields
ALIASES = {"q_lora_rank": ("attention_q_lora_dim",), "kv_lora_rank": ("attention_kv_lora_dim",),
           "qk_nope_head_dim": ("attention_qk_dim",), "qk_rope_head_dim": ("attention_qk_rope_dim",),
           "v_head_dim": ("attention_v_dim",), "n_routed_experts": ("num_routed_experts",),
           "n_shared_experts": ("num_shared_experts",), "first_k_dense_replace": ("num_dense_layers",),
           "num_nextn_predict_layers": ("num_mtp_layers",)}

#: OpenPanguMoEConfig's defaults beside the core geometry (which every config must give)
DEFAULTS = dict(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                moe_intermediate_size=2048, n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8,
                first_k_dense_replace=3, num_nextn_predict_layers=1, routed_scaling_factor=2.5, norm_topk_prob=True,
                hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False, rope_theta=25600000.0,
                max_position_embeddings=131072, attention_bias=False, sandwich_norm=False, n_group=1, topk_group=1)

#: openPangu MoE options vLLM's openpangu.py builds that are not modelled here
_UNMODELLED = (("param_sink_number", "learned attention sinks (param_sink_k_pe / param_sink_compressed_kv)"),
               ("use_mhc", "hyper-connections (mHC streams, attn_mhc_module / mlp_mhc_module)"),
               ("use_mome", "MoME causal convolutions on the q / kv latents and the attention output"),
               ("index_topk", "a DeepSeek-sparse-attention indexer (PanguIndexer)"),
               ("sliding_window", "sliding-window MLA layers"), ("sliding_window_list", "sliding-window MLA layers"),
               ("swa_layers", "sliding-window MLA layers"),
               ("block_post_layernorm_idx", "block post-layernorms"))


def build(f: Fields, model_type: str) -> ModelSpec:
    f.aliases = {**f.aliases, **{k: v for k, v in ALIASES.items() if k not in f.aliases}}
    remote_defaults(f, DEFAULTS)
    for key, what in _UNMODELLED:
        value = f.raw(key)
        if value not in (None, False, 0, [], ()):
            raise f.error(key, f"is set ({value!r}): openPangu's {what} is not modelled (vLLM's openpangu.py)")
    if f.raw("moe_layer_freq") not in (None, 1):
        raise f.error("moe_layer_freq", "is not 1: openPangu's MoE sits on every layer from first_k_dense_replace on "
                                        "(the field is not read by vLLM's openpangu.py or the hub code)")
    if f.raw("n_routed_experts") is None:
        raise f.error("n_routed_experts", "is null: a dense openPangu is openPangu-Embedded (model_type "
                                          "PanguEmbedded), not pangu_ultra_moe")
    spec = deepseek.build(f, model_type, version=3)
    # one expert group whatever n_group / topk_group say (vLLM: num_expert_group=1, topk_group=1); the choice-only
    # correction bias only with router_enable_expert_bias (the hub's gate has none)
    num = replace(spec.numerics, n_group=1, topk_group=1, group_score=GroupScore.NONE,
                  score_correction_bias=f.bool("router_enable_expert_bias", False))
    spec = replace(spec, numerics=num)
    if f.bool("sandwich_norm"):
        hidden = spec.hidden_size
        norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
                 PlacedNorm("post_attention_layernorm", "post_mixer", Norm(hidden)),
                 PlacedNorm("pre_mlp_layernorm", "pre_ffn", Norm(hidden)),
                 PlacedNorm("post_mlp_layernorm", "post_ffn", Norm(hidden)))
        spec = replace(spec, layers=tuple(replace(lay, norms=norms) for lay in spec.layers),
                       mtp_layers=tuple(replace(lay, norms=norms) for lay in spec.mtp_layers))
    relabel_defaults(f, DEFAULTS, "the hub's OpenPanguMoEConfig")
    return spec
