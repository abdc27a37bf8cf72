"""Shanghai AI Lab Intern-S1-Pro (``interns1_pro``, remote code: internlm/Intern-S1-Pro, architectures
InternS1ProForConditionalGeneration), counted from the hub's modeling_interns1_pro.py / configuration_interns1_pro.py
and vLLM's vllm/model_executor/models/interns1_pro.py.

It is Qwen3-VL-MoE's layout with three differences:

- the language model (``interns1_pro_text``, InternS1ProTextModel) is Qwen3-VL-MoE's text model (q/k RMSNorms over
  head_dim, a softmax router, SwiGLU experts of moe_intermediate_size, dense MLPs on ``mlp_only_layers`` and off the
  ``decoder_sparse_step``), with FoPE (Fourier position embedding) where ``rope_scaling`` names any of
  ``fope_init_factor`` / ``fope_sep_head`` / ``num_inv_freq``: InternS1ProMoeTextFourierEmbedding registers two
  persistent buffers ``sin_coef`` and ``cos_coef`` of (num_key_value_heads,) head_dim / 2 x head_dim / 2 (a head axis
  with ``fope_sep_head``), stored in the checkpoint and loaded by vLLM's FourierRotaryEmbedding
  (``cos_coef`` / ``sin_coef`` parameters of those shapes), which mix the rotary frequencies per KV head;
- with ``router_n_groups`` > 1 the router (InternS1ProMoeTextGroupedRouter: one weight, experts x hidden, as Qwen's)
  takes the top num_experts_per_tok / router_n_groups experts of each of router_n_groups equal groups of experts;
- the vision tower (``interns1_pro_vision``, InternS1ProVisionModel) is Qwen3-VL's without DeepStack mergers: a biased
  Conv3d patch embedding, learned positions, LayerNorm blocks with a fused biased qkv, and the patch merger.

The config class defaults (InternS1ProTextConfig / InternS1ProVisionConfig) are quoted in ``TEXT_DEFAULTS`` and
``VISION_DEFAULTS``; lm_head is tied by text_config's flag (vLLM's InternS1ProMoeLLMForCausalLM reads
``text_config.tie_word_embeddings``). verify refuses FoPE and the per-group router (``Numerics.runtime_unsupported``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..spec import ModelSpec, Tensor
from ..vision import _qwen3_vision, vision_config_dict
from . import decoder

#: InternS1ProTextConfig.__init__'s defaults (configuration_interns1_pro.py); head_dim: hidden // heads
TEXT_DEFAULTS = {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
                 "num_attention_heads": 16, "num_key_value_heads": 16, "hidden_act": "silu",
                 "max_position_embeddings": 128000, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
                 "rope_theta": 5000000.0, "attention_bias": False, "decoder_sparse_step": 1,
                 "moe_intermediate_size": 1408, "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": True}
#: InternS1ProVisionConfig.__init__'s defaults (configuration_interns1_pro.py)
VISION_DEFAULTS = {"depth": 27, "hidden_size": 1152, "hidden_act": "gelu_pytorch_tanh", "intermediate_size": 4304,
                   "num_heads": 16, "in_channels": 3, "patch_size": 16, "spatial_merge_size": 2,
                   "temporal_patch_size": 2, "out_hidden_size": 3584, "num_position_embeddings": 2304}
#: the rope_scaling keys that switch FoPE on (InternS1ProTextModel.__init__)
FOPE_KEYS = ("fope_init_factor", "fope_sep_head", "num_inv_freq")


def _fope(f: Fields, head_dim: int, kv_heads: int) -> tuple[Tensor, ...]:
    """FoPE's ``sin_coef`` / ``cos_coef`` buffers, or none when rope_scaling names no FoPE key."""
    rs = f.cfg.get("rope_scaling") or f.cfg.get("rope_parameters") or {}
    if not isinstance(rs, dict) or all(rs.get(k) is None for k in FOPE_KEYS):
        return ()
    d = head_dim // 2  # inv_freq of the default rope init: head_dim / 2 frequencies
    n = rs.get("num_inv_freq")
    if n is not None and n != d:
        raise UnsupportedModelError(
            f"{f.where}: rope_scaling.num_inv_freq ({n!r}) other than head_dim / 2 ({d}): the hub's FoPE keeps all "
            "head_dim / 2 frequencies (its assertion allows num_inv_freq only equal to them or as a bound), and no "
            "checkpoint with another value was at hand to check the coefficient shapes",
            "Intern-S1-Pro's config leaves num_inv_freq null")
    shape = (kv_heads, d, d) if rs.get("fope_sep_head") else (d, d)
    return tuple(Tensor(f"model.rotary_emb.{name}", shape, "other") for name in ("sin_coef", "cos_coef"))


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """Intern-S1-Pro's language model: Qwen3-VL-MoE's text decoder + FoPE coefficients, grouped routing."""
    from . import REGISTRY

    f.defaults = {**TEXT_DEFAULTS, **f.defaults}  # read on the caller's Fields: analyze reports what was read
    spec = decoder.build(f, model_type, REGISTRY["qwen3_vl_moe_text"])
    moe = spec.first_moe
    attn = next(layer.mixer for layer in spec.layers if layer.mixer is not None)
    fope = _fope(f, attn.head_dim, attn.num_key_value_heads)
    groups = f.int("router_n_groups", 0, lo=-1, note="absent: one group (Qwen's top-k router)")
    unsupported, caveats = [], []
    if moe is not None and groups > 1:
        if moe.num_experts % groups or moe.num_experts_per_tok % groups:
            raise f.error("router_n_groups", f"({groups}) must divide num_experts ({moe.num_experts}) and "
                                             f"num_experts_per_tok ({moe.num_experts_per_tok}): the grouped router "
                                             "takes num_experts_per_tok / router_n_groups experts from each group")
        unsupported.append(f"Intern-S1-Pro's grouped router (the top {moe.num_experts_per_tok // groups} of each of "
                           f"{groups} expert groups)")
        caveats.append(f"router_n_groups {groups}: the router picks the top {moe.num_experts_per_tok // groups} "
                       f"experts in each of {groups} groups of {moe.num_experts // groups} (same active count)")
    if fope:
        unsupported.append("FoPE (Fourier position embedding: rotary frequencies mixed by learned sin_coef / "
                           "cos_coef per KV head)")
        caveats.append(f"FoPE: sin_coef and cos_coef ({' x '.join(map(str, fope[0].shape))} each) counted as "
                       "stored buffers; their per-position einsum (a few FLOPs per token) is not traced")
    numerics = replace(spec.numerics, runtime_unsupported="; ".join(unsupported))
    return replace(spec, model_params=spec.model_params + fope, numerics=numerics,
                   caveats=spec.caveats + tuple(caveats))


def interns1_pro_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InternS1ProVisionModel: the Qwen3-VL tower and merger without DeepStack mergers; its merger's output width
    (out_hidden_size) must be the language model's."""
    if top.get("ts_config") is not None:
        raise UnsupportedModelError(
            f"{where}: a ts_config is set: LMDeploy builds from it a time-series encoder (Whisper-style encoder "
            "layers, an adaptive subsampling and a projector: interns1_pro_time_series.py) beside the vision "
            "tower, which planner does not count; no released config with one was at hand to check its shapes",
            "Intern-S1-Pro's published config (no ts_config) is counted")
    vc = {**VISION_DEFAULTS, **vision_config_dict(top.get("vision_config"), where)}
    out = _qwen3_vision(dict(top, vision_config=vc), where, "interns1_pro_vision", deepstack_mergers=False)
    merged_out = next(t for t in out if t.name.endswith("merger.linear_fc2.weight")).shape[0]
    if merged_out != text_hidden:
        raise UnsupportedModelError(f"{where}: vision_config.out_hidden_size ({merged_out}) is not text_config's "
                                    f"hidden_size ({text_hidden}): the merger's output feeds the language model",
                                    "set out_hidden_size to the language model's hidden size")
    return out


__all__ = ["build_text", "interns1_pro_vision", "TEXT_DEFAULTS", "VISION_DEFAULTS"]
