"""Vision-language checkpoints of vLLM 0.28's registry that planner refuses by name (``REFUSED`` in
analysis/families/__init__.py) rather than count text-only or read as a generic decoder, each for a reason its sources
give (vLLM's model file, the ports that serve it):

- Ovis2.6 (``ovis2_6``, ``ovis2_6_moe``, ``ovis2_6_next``; Ovis2_6ForCausalLM / Ovis2_6_MoeForCausalLM, which vLLM
  serves with ovis2_5.py, and Ovis2_6_NextForCausalLM): Ovis2.5's visual tokenizer and ``vte`` around a Qwen3 /
  Qwen3-MoE / Qwen3-Next ``llm_config``. GPTQModel's ovis2_6_moe definition notes the released checkpoints omit the
  SigLIP2 ``post_layernorm`` the remote code builds, so Ovis2.5's stored tower is not theirs, and no Ovis2.6 config.json
  or safetensors index was at hand to fix what they store.
- LLaVA-OneVision-2 (``llava_onevision2``, ``llava_onevision2_moe``; LlavaOnevision2ForConditionalGeneration, vLLM's
  llava_onevision2.py): its OneVision encoder (no CLS token, 3-D RoPE) and patch merger switch on use_head,
  layer_norm_type, use_patch_position_encoding and spatial_merge_size, whose defaults differ between the public ports of
  its configuration class (patch 14 / merge 2 against patch 16 / merge 3), and no released config.json was at hand.
- Intern-S2-Preview (``intern_s2_preview``; vLLM's interns2_preview.py: Qwen3.5-MoE's wrapper) stores, beside it, a
  time-series encoder and forecaster (``ts_config``, ``model.time_series.*``, ``time_series_forecaster.*``) and an
  MTP layer that vLLM skips, whose shapes no public config at hand gives.
- Intern-S2-Mobius (``interns2_mobius``; vLLM's interns2_mobius.py): Qwen3.5's hybrid layers whose routed experts live
  in ``num_blocks`` banks (``model.meta_mlp.{b}``) shared by every layer i with i % num_blocks == b, beside a
  per-layer shared expert and optional layer scales; planner's MoE is one routed bank per layer.
- Kanana-V (``kanana-1.5-v``; kakaobank/kanana-1.5-v-3b-instruct, vLLM's kanana_v.py): a Qwen2-VL tower without its
  merger and a Dynamic C-Abstractor of timm RegNet ``RegStage`` blocks (LayerNorm2d, SiLU) between them and the
  language model, whose module shapes come from timm's definitions; no config.json with its projector_config was at
  hand.
"""

from __future__ import annotations

_OVIS26 = ("its checkpoints are Ovis2.5's layout (SigLIP2-NaViT visual tokenizer, head and vte around an llm_config, "
           "served by vLLM's ovis2_5.py) with a {lm} language model, but GPTQModel's ovis2_6_moe definition notes they "
           "omit the SigLIP2 post_layernorm the remote code builds, and no Ovis2.6 config.json or safetensors index "
           "was at hand to fix which tensors they store; Ovis2.5 (model_type ovis2_5) is counted")

#: model_type -> (title, reason)
REFUSED_S27: dict[str, tuple[str, str]] = {
    "ovis2_6": ("AIDC-AI Ovis2.6 (Ovis2_6ForCausalLM, remote code)", _OVIS26.format(lm="Qwen3")),
    "ovis2_6_moe": ("AIDC-AI Ovis2.6 MoE (Ovis2_6_MoeForCausalLM, remote code)", _OVIS26.format(lm="Qwen3-MoE")),
    "ovis2_6_next": ("AIDC-AI Ovis2.6 Next (Ovis2_6_NextForCausalLM, remote code)",
                     _OVIS26.format(lm="Qwen3-Next (hybrid Gated DeltaNet)")),
    "llava_onevision2": (
        "lmms-lab LLaVA-OneVision-2 (remote code)",
        "its OneVision vision encoder (no CLS token, 3-D RoPE, windowed attention) and patch merger are not modelled: "
        "they switch on use_head, layer_norm_type, use_patch_position_encoding and spatial_merge_size, whose defaults "
        "differ between the public copies of configuration_llava_onevision2.py (patch 14 / merge 2 against patch 16 / "
        "merge 3), and no released config.json or checkpoint index was at hand; LLaVA-OneVision and -1.5 are counted"),
    "llava_onevision2_moe": (
        "lmms-lab LLaVA-OneVision-2 MoE (remote code)",
        "a Qwen3.5-MoE text_config with LLaVA-OneVision-2's OneVision encoder and patch merger, which are not "
        "modelled (their shapes switch on fields whose defaults differ between the public ports), and no released "
        "config.json or checkpoint index was at hand"),
    "intern_s2_preview": (
        "Shanghai AI Lab Intern-S2-Preview (remote code)",
        "vLLM serves it as Qwen3.5-MoE's wrapper, but its checkpoint also stores a time-series encoder and forecaster "
        "(ts_config, model.time_series.*, time_series_forecaster.*) and an MTP layer that vLLM skips, and no "
        "config.json or checkpoint index was at hand to count the tower and those parts; a text-only count would "
        "misstate its weights"),
    "interns2_mobius": (
        "Shanghai AI Lab Intern-S2-Mobius (remote code)",
        "its routed experts live in num_blocks banks (model.meta_mlp.{b}) shared by every decoder layer i with "
        "i % num_blocks == b, beside each layer's own gated shared expert and optional attn / ffn layer scales "
        "(vLLM's interns2_mobius.py); planner's MoE keeps one routed bank per layer, so the shared banks would be "
        "counted once per layer"),
    "kanana-1.5-v": (
        "Kakao Kanana-V (kanana-1.5-v, remote code)",
        "its projector is a Dynamic C-Abstractor of timm RegNet RegStage blocks (LayerNorm2d, SiLU, a patch merge and "
        "an MLP readout) after a Qwen2-VL tower without its merger (vLLM's kanana_v.py), shapes that come from timm's "
        "block definitions, and no config.json with its projector_config was at hand to count them; its language "
        "model would otherwise be read as a generic decoder"),
}

__all__ = ["REFUSED_S27"]
