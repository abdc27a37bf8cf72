"""China Telecom's Llama-served remote-code families, read as vLLM serves them (its registry maps both to a Llama
decoder; no transformers class exists):

- TeleChat3 dense (``telechat3``: ``Telechat3ForCausalLM`` / ``TeleChat3ForCausalLM``, Tele-AI/TeleChat3-36B-Thinking;
  vLLM's registry: ``"TeleChat3ForCausalLM": ("llama", "LlamaForCausalLM")``): transformers' Llama block with its own
  ``head_dim``; what differs is the RoPE scaling ``telechat3-yarn``, vLLM's TeleChat3RoPEScaledRotaryEmbedding
  (vllm/model_executor/layers/rotary_embedding/telechat3_scaling_rope.py): YaRN's frequencies with the attention
  temperature ``0.07 · ln(factor) + 1`` (times ``attn_factor``) where YaRN's is ``0.1 · ln(factor) + 1`` (the
  hub's modeling_telechat3.py ``get_mscale`` has the same 0.07). It is passed on as a plain ``yarn`` with that
  ``attention_factor``, so the runtime rotates as vLLM does. The MoE TeleChat3-105B-A4.7B is a ``deepseek_v3``
  config (ms-swift matches it to deepseek_v3), not this model_type.
- Tele-FLM / FLM-2 (``TeleFLM``, the hub config class's model_type, and ``teleflm``: ``TeleFLMForCausalLM``,
  CofeAI/Tele-FLM, FLM-2-52B-Instruct-2407, Tele-FLM-1T): vLLM's teleflm.py subclasses LlamaModel /
  LlamaForCausalLM unchanged, adding µP: under ``use_mup`` the embedding is multiplied by ``input_mult`` and the
  logits by ``output_mult / mup_scale_factor``. Class defaults: TeleFLMConfig's (use_mup false, multipliers 1,
  num_key_value_heads = heads, untied), which are LlamaConfig's for every shape field.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec

#: vLLM's TeleChat3RoPEScaledRotaryEmbedding.get_mscale slope (YaRN's is 0.1)
TELECHAT3_MSCALE_SLOPE = 0.07


def telechat3_rope(f: Fields, scaling: tuple) -> tuple:
    """``telechat3-yarn`` as YaRN with TeleChat3's temperature in ``attention_factor``; other kinds unchanged."""
    d = dict(scaling)
    if "telechat3-yarn" not in (d.get("rope_type"), d.get("type")):
        return scaling
    factor = d.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
        raise f.error("rope_scaling.factor", f"must be a positive number for telechat3-yarn, got {factor!r}")
    attn = d.get("attn_factor", 1.0)
    if isinstance(attn, bool) or not isinstance(attn, (int, float)):
        raise f.error("rope_scaling.attn_factor", f"must be a number, got {attn!r}")
    mscale = 1.0 if factor <= 1 else TELECHAT3_MSCALE_SLOPE * math.log(factor) + 1.0
    d.pop("type", None)
    d.pop("attn_factor", None)
    d["rope_type"] = "yarn"
    d["attention_factor"] = mscale * float(attn)
    f.derived("rope_scaling.attention_factor", d["attention_factor"],
              "telechat3-yarn: 0.07 x ln(factor) + 1 (vLLM's TeleChat3RoPEScaledRotaryEmbedding)")
    return tuple(sorted(d.items()))


def build_telechat3(f: Fields, model_type: str) -> ModelSpec:
    from .remote import build_llama_served

    spec = build_llama_served(f, model_type)
    return replace(spec, rope_scaling=telechat3_rope(f, spec.rope_scaling))


def build_teleflm(f: Fields, model_type: str) -> ModelSpec:
    from .remote import build_llama_served

    spec = build_llama_served(f, model_type)
    if not f.bool("use_mup", False):
        return spec
    input_mult = f.float("input_mult", 1.0)
    output_mult = f.float("output_mult", 1.0)
    scale = f.float("mup_scale_factor", 1.0)  # positive: the logits are multiplied by output_mult / mup_scale_factor
    return replace(spec, embedding_multiplier=spec.embedding_multiplier * input_mult,
                   numerics=replace(spec.numerics, logit_scale=spec.numerics.logit_scale * output_mult / scale))
