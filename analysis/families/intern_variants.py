"""Wrappers whose modules are InternVL's, counted through ``analysis.families.internvl`` (no copy of its towers):

``interns1`` (internlm/Intern-S1: Qwen3-MoE 235B-A22B + InternViT-6B; internlm/Intern-S1-mini: Qwen3-8B + InternViT-300M;
remote code, architectures InternS1ForConditionalGeneration), counted from the hub's configuration_interns1.py and vLLM's
vllm/model_executor/models/interns1.py + interns1_vit.py. It is transformers' InternVL HF layout under new names:

- ``vision_config`` is InternS1VisionConfig (model_type ``interns1_vision``), a subclass of InternVLVisionConfig with its
  fields and defaults; vLLM's InternS1VisionModel stores what transformers' InternVLVisionModel does (``cls_token``,
  ``mask_token`` by use_mask_token, a biased patch Conv2d, learned positions, q/k/v biased by attention_bias, whole-width
  q/k RMSNorms by use_qk_norm, a biased ``projection_layer``, biased fc1 / fc2, ``layernorm_before`` / ``layernorm_after``
  by norm_type, ``lambda_1`` / ``lambda_2``, a final LayerNorm only without mean pooling), all layers built;
- InternS1MultiModalProjector is InternVL's: LayerNorm(vision hidden x int(1 / downsample_ratio)^2), biased
  ``linear_1`` to the text hidden size, biased ``linear_2`` (InternS1Config's downsample_ratio default 0.5, as
  InternVLConfig's);
- the checkpoint's names are model.vision_tower. / model.multi_modal_projector. / model.language_model. / lm_head.
  (vLLM's hf_to_vllm_mapper), the names ``internvl_vision`` gives;
- ``text_config`` must name its model_type (InternS1Config raises ValueError otherwise: no default language model):
  qwen3_moe for Intern-S1, qwen3 for Intern-S1-mini, read by those families. lm_head is tied as text_config's flag says
  (the remote code runs on transformers 4.x, which ties by the text config's flag; where text_config has none, its
  class default, never the wrapper's flag).

``h2ovl_chat`` (H2OVL-Mississippi-800M / -2B, remote code): vLLM's H2OVLChatConfig is InternVLChatConfig under another
model_type and H2OVLChatModel subclasses InternVLChatModel, overriding only the processor (MSAC tiling) and refusing
the mono (visual-expert) form, so the checkpoint is ``internvl_chat``'s: InternViT ``vision_model`` + ``mlp1`` and the
``llm_config`` language model built by its architectures[0]. vLLM builds that language model from its registry by the
architecture, so MistralForCausalLM (the H2O-Danube2 base of the 2B) is read as Mistral besides the architectures
InternVLChatConfig builds.

``skywork_chat`` (Skywork-R1V-38B, R1V2-38B, R1V3-38B, remote code): vLLM's SkyworkR1VChatModel builds InternVisionModel
(all layers: select_layer -1) and ``mlp1`` = LayerNorm(m), ReplicatedLinear(m, llm hidden) and ReplicatedLinear(llm
hidden, llm hidden), both biased (ReplicatedLinear's default; return_bias=False only drops it from the forward's
return), GELU between: InternVLChatModel's tensors. The hub's SkyworkChatConfig builds llm_config as Qwen2Config
(Qwen2ForCausalLM: DeepSeek-R1-Distill-Qwen-32B, QwQ-32B, InternVL3-38B's Qwen2.5-32B).

No verbatim config.json or model.safetensors.index.json of these checkpoints was at hand (no hub access here); the tests
count configs reconstructed from the named components and check them against the model cards' rounded figures only.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..spec import Tensor
from ..vision import vision_tower_config
from .internvl import chat_text_config, internvl_vision

#: architectures vLLM builds for an H2OVL llm_config beyond those InternVLChatConfig builds -> the model_type read
H2OVL_EXTRA_ARCHITECTURES = {"MistralForCausalLM": "mistral"}


def interns1_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InternS1ForConditionalGeneration's vision tower and projector: InternVL's HF-format tensors, the tower's config
    being an ``interns1_vision`` (InternVLVisionConfig's fields and defaults)."""
    vc = vision_tower_config(top, where, "interns1_vision", "Intern-S1",
                             "InternS1Config builds its tower as interns1_vision (InternS1VisionConfig)")
    return internvl_vision(dict(top, vision_config=dict(vc, model_type="internvl_vision")), text_hidden, where)


def interns1_text_config(cfg: dict, where: str) -> dict:
    """InternS1Config's language model: ``text_config``, its own tie_word_embeddings deciding lm_head's tying (its
    config class's default when absent; the wrapper's flag is not read)."""
    from ..family_defaults import FAMILY_DEFAULTS

    text = cfg.get("text_config")
    if not isinstance(text, dict) or "tie_word_embeddings" in text:
        return text
    mt = text.get("model_type")
    tie = FAMILY_DEFAULTS.get(mt, {}).get("tie_word_embeddings", False) if isinstance(mt, str) else False
    return dict(text, tie_word_embeddings=tie if isinstance(tie, bool) else False)


def h2ovl_text_config(cfg: dict, where: str) -> dict:
    """H2OVLChatConfig's language model: ``llm_config`` read as InternVLChatConfig reads it, or as Mistral when its
    architectures[0] is MistralForCausalLM (vLLM builds it by the architecture)."""
    llm = cfg.get("llm_config")
    arch = llm.get("architectures") if isinstance(llm, dict) else None
    built = H2OVL_EXTRA_ARCHITECTURES.get(arch[0]) if isinstance(arch, list) and arch and isinstance(arch[0], str) \
        else None
    if built is None:
        return chat_text_config(cfg, where)
    mt = llm.get("model_type")
    if mt is not None and mt != built:
        raise ConfigError(f"{where}: field 'llm_config.model_type' ({mt!r}) disagrees with its architectures "
                          f"({arch[0]}, built as {built})")
    text = dict(llm, model_type=built)
    text.setdefault("tie_word_embeddings", False)  # MistralConfig's default
    return text
