"""Qwen3.8 under the model_types some engines give it: read as Qwen3.5, with a caveat.

Qwen's published Qwen3.8 configs name Qwen3.5's classes, which planner reads already:

- Qwen/Qwen3.8-27B (and -FP8): ``qwen3_5`` / ``Qwen3_5ForConditionalGeneration``, its text_config ``qwen3_5_text``
  (Qwen3.5-27B's shape: 64 layers, hidden 5120, 48 Gated DeltaNet + 16 gated-attention layers, the 27-block tower);
- Qwen/Qwen3.8-2.4T-A95B (and -FP8): a flat ``qwen3_5_moe_text`` / ``Qwen3_5MoeForCausalLM`` (92 layers, hidden 8192,
  512 experts top-10 + a shared expert, one MTP layer), no vision tower;
- Qwen/Qwen3.8-Flash-Next: ``qwen4_exp`` (analysis/families/qwen4_exp.py).

The one field Qwen3.8 adds to Qwen3.5's configs is ``output_gate_type: "swish"`` (silu: hybrid._qwen_gdn_gate).

``qwen3_8``, ``qwen3_8_text``, ``qwen3_8_moe`` and ``qwen3_8_moe_text`` are in no transformers (5.25), vLLM (0.28.1
registry) or SGLang class; engines that accept them load Qwen3.5's model for them (SFLLM's models/qwen3_8.py:
``Qwen3_8ForConditionalGeneration`` inherits its Qwen3.5 implementation; mlx-swift's Qwen3.5 MTP registration lists
qwen3_8 / qwen3_8_moe / qwen3_8_text beside qwen3_5 / qwen3_5_moe / qwen3_5_text). So they are read with Qwen3.5's
builders and transformers' Qwen3.5 class defaults (tools/gen_family_defaults.py ``ALIASED``): ``qwen3_8`` /
``qwen3_8_moe`` as the wrappers when the config has a text_config (the tower counted as Qwen3.5's), as the flat
text model (``Qwen3_8ForCausalLM`` / ``Qwen3_8MoeForCausalLM``) when it has none.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec
from . import hybrid


def _as_qwen3_5(build, official: str):
    def read(f: Fields, model_type: str) -> ModelSpec:
        spec = build(f, model_type)
        return replace(spec, caveats=spec.caveats + (
            f"model_type '{model_type}' is no transformers / vLLM / SGLang class: read as Qwen3.5 ({official}), the "
            "model the engines that accept the name load; Qwen's published Qwen3.8 configs say qwen3_5 (27B) and "
            "qwen3_5_moe_text (2.4T-A95B)",))
    return read


#: model_type -> builder: the dense names read as qwen3_5_text, the MoE names as qwen3_5_moe_text
REGISTRY = {
    "qwen3_8": _as_qwen3_5(hybrid.build_qwen3_5, "qwen3_5_text"),
    "qwen3_8_text": _as_qwen3_5(hybrid.build_qwen3_5, "qwen3_5_text"),
    "qwen3_8_moe": _as_qwen3_5(hybrid.build_qwen3_5_moe, "qwen3_5_moe_text"),
    "qwen3_8_moe_text": _as_qwen3_5(hybrid.build_qwen3_5_moe, "qwen3_5_moe_text"),
}

#: the wrappers' language models (their text_config's model_type when it names none)
TEXT_WRAPPERS = {"qwen3_8": "qwen3_8_text", "qwen3_8_moe": "qwen3_8_moe_text"}

#: ``qwen3_8_qad``: one repository's download fixture gives local-inference-lab/Qwen3.8-Flash-Next-NVFP4's config as
#: {"architectures": ["Qwen3_8ForCausalLM"], "model_type": "qwen3_8_qad"} and nothing more
QAD_WHY = ("no public config or code gives its fields (a quantization-aware-distilled Qwen3.8-Flash-Next export, "
           "named only in a download fixture); Qwen3.8-Flash-Next's published config is model_type qwen4_exp "
           "(Qwen4-Exp: hyper-connections, a sparse-attention indexer, n-gram embeddings), which planner reads")
