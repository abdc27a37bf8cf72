"""Wave s29 F: architectures vLLM and SGLang registered after the versions audited before (vLLM 0.28.1's registry,
SGLang as of sessions 27 / 28), read as their engines build them.

- Ling-3.0-flash-VL (``bailing_moe_v3_vl``: inclusionAI/Ling-3.0-flash-VL and its -fp4 repository;
  BailingMoeV3VLForConditionalGeneration, vLLM's model_executor/models/bailing_moe_v3_vl.py with its config class
  transformers_utils/configs/bailing_moe_v3_vl.py): ``language_model``, Ling 3's BailingMoeV3ForCausalLM built from
  ``text_config`` (``bailing_hybrid``, counted by ``hybrid.build_bailing_hybrid``; the config class names that
  model_type, so a text_config without one is read as it); ``visual``, Qwen3-VL's vision transformer
  (``Qwen3_VisionTransformer``: biased Conv3d patch embedding, learned positions, LayerNorm blocks with a biased
  fused qkv, proj and linear_fc1 / linear_fc2) with no DeepStack mergers (``deepstack_visual_indexes = []``) and its
  merger replaced by ``BailingMoeV3VisionPatchMerger``: a LayerNorm over the vision width and a 2x2 reshape, no MLP
  (``disable_merger_proj``); ``linear_proj``, ``BailingMoeV3VLProjector``: Linear(4 x vision width -> text width),
  GELU, Linear(text width -> text width), both biased (``linear_proj.0`` / ``.2``: SGLang's models/bailing_mm_v3.py
  reads the public checkpoint's ``model.visual.*`` and top-level ``linear_proj.*``, and its BailingMoeV3VLConfig
  notes "the public Bailing checkpoint omits deepstack entirely"). A text_config with ``multi_gate`` or
  ``router_type: MultiRouter`` is refused: SGLang then builds per-modality routers (``image_gate``,
  ``audio_gate``) beside each MoE layer's gate, which planner does not model. The vision config's
  ``out_hidden_size`` and ``disable_merger_proj`` are unused: vLLM overwrites the first with the merged width and
  builds the parameter-free merger whatever the second says.
- ZEDA dynamic MoE (``glm4_moe_lite_plus_plus``: ZEDA-GLM-4.7-Flash-Dynamic, Glm4MoeLitePlusPlusForCausalLM, vLLM's
  model_executor/models/glm4_moe_lite_plus_plus.py and configs/glm4_moe_lite_plus_plus.py; ``qwen3_moe_plus_plus``:
  Qwen3MoePlusPlusForCausalLM; ``qwen3_next_plus_plus``: SGLang's configs Qwen3NextPlusPlusConfig): the base model
  (GLM-4.7-Flash, Qwen3-MoE, Qwen3-Next) whose router also scores ``sum(zce_nums)`` zero-compute experts (ZCE)
  after the routed ones: the gate is (n_routed + sum(zce_nums)) x hidden (the ZEDA transformers fork's
  Glm4MoeLitePlusPlusTopkRouter, vLLM's and SGLang's re-created gates), the experts' weights are unchanged. "copy"
  experts return their input and "zero" experts zeros: no weights, no compute (planner's zero-computation experts,
  as LongCat-Flash's). A "constant" expert (ConstantExpert: a learned vector and a Linear(hidden, 2) mixing gate
  each) is refused. ``use_zce_mask`` (the config class's default: true) masks the ZCE logits to -inf before
  routing, so no token reaches one.
- DeepSeek-V4-Flash-Vision-Exp (``deepseek_v4`` with ``vision_n_layers`` > 0: vLLM's models/deepseek_v4 vision.py
  and multimodal wrapper; new in vLLM 0.30): the text model read by ``deepseek.build_v4`` as before, plus the ViT
  and aligner the flat ``vision_*`` fields describe, which planner ignored before (no caveat):
  ``vision.patch_embed.proj`` (a biased Linear of 3 x vision_patch_size^2 -> vision_dim), vision_n_layers blocks of
  RMSNorm ``norm1`` / ``norm2``, a biased fused ``attn.wqkv`` (3 x vision_dim) and ``attn.wo``, a bias-free SwiGLU
  ``mlp.w1`` (gate and up: 2 x vision_inter_dim) and ``mlp.w2``; a final RMSNorm ``vision.norm``; the ``aligner``:
  w1 (vision_dim x vision_downsample_ratio^2 -> hidden) and w2 (hidden -> hidden), both biased, GELU between; and
  the four learned image sentinels ``image_start`` / ``image_pad`` / ``image_newline`` / ``image_end`` (hidden wide
  each).
- Audio Flamingo Next in its pre-migration format (``audioflamingonext``: nvidia/audio-flamingo-next-hf,
  AudioFlamingoNextForConditionalGeneration; vLLM's model_executor/models/audioflamingonext.py subclasses its
  MusicFlamingo model with ``pass``, transformers' AudioFlamingoNextConfig subclasses MusicFlamingoConfig with
  audio_config defaulting to ``audioflamingo3_encoder`` and text_config to ``qwen2``) is read as ``musicflamingo``
  (analysis/families/__init__.py), the Whisper-shaped encoder and the projector counted.

Refused by name (``REFUSED_S29F``): AliceAI (``alice_ai``: Yandex AliceAI-Foundation-80B-A3B, AliceAIForCausalLM,
vLLM's model_executor/models/alice_ai.py with configs/alice_ai.py; its MTP ``alice_ai_mtp``), before a generic-decoder
error ("shared_expert_intermediate_size set, but model_type 'alice_ai' is not a known family", or "standard decoder
fields missing" for a config that leaves the geometry to the class defaults); Ming (``bailingmm``: inclusionAI's
Ming-Lite-Omni / Ming-flash-omni / Ming-omni-TTS, BailingMMNativeForConditionalGeneration /
BailingMM2NativeForConditionalGeneration, SGLang's models/bailing_mm.py), before "unsupported model_type 'bailingmm'
and the standard decoder fields ... are missing".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, MoE, Tensor
from ..vision import _lin, _ln, _qkv_block, _qwen_blocks, _qwen_patch, _qwen_vision_fields

# ---- Ling-3.0-flash-VL ----------------------------------------------------------------------------------------------


def ling3_vl_text_config(top: dict, where: str) -> dict:
    """text_config as Ling 3 reads it; SGLang's per-modality routers (``is_bailing_multi_gate_enabled``) refused."""
    text = top.get("text_config")
    if not isinstance(text, dict):
        return text  # config.py reports a missing or malformed text_config
    if text.get("multi_gate") or text.get("router_type") == "MultiRouter":
        raise UnsupportedModelError(
            f"{where}: text_config sets multi_gate / router_type MultiRouter: SGLang's Bailing VL then routes image "
            "and audio tokens through routers of their own (image_gate, audio_gate beside gate on every MoE layer), "
            "which planner does not model", "a Ling-3.0-flash-VL text_config without them is counted")
    return text


def ling3_vl_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The Qwen3-VL tower under ``model.visual`` with Bailing's parameter-free patch merger (one LayerNorm), then the
    two-Linear ``linear_proj`` into the text width."""
    if top.get("vision_config") is None:
        raise ConfigError(f"{where}: required field 'vision_config' is missing",
                          "Ling-3.0-flash-VL builds its Qwen3-VL tower from vision_config")
    f = _qwen_vision_fields(top, where, "qwen3_vl_vision")
    h = f.int("hidden_size")
    depth = _qwen_blocks(f, h)
    inter = f.int("intermediate_size")
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    p = "model.visual"
    out = [Tensor(f"{p}.patch_embed.proj.weight", _qwen_patch(f, h), "vision"),
           Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision"),
           Tensor(f"{p}.pos_embed.weight", (f.int("num_position_embeddings", hi=1 << 24), h), "vision")]
    for i in range(depth):
        _qkv_block(out, f"{p}.blocks.{i}", h, inter, fc="linear_fc")
    _ln(out, f"{p}.merger.norm", h)  # BailingMoeV3VisionPatchMerger: norm, then reshape(-1, h * merge^2)
    _lin(out, "linear_proj.0", text_hidden, merged)
    _lin(out, "linear_proj.2", text_hidden, text_hidden)
    return tuple(out)


# ---- ZEDA dynamic MoE: zero-compute experts in the router --------------------------------------------------------

#: ZEDA's config classes (Glm4MoeLitePlusPlusConfig, Qwen3MoePlusPlusConfig, Qwen3NextPlusPlusConfig): their defaults
ZCE_DEFAULTS = {"zce_nums": [64], "zce_types": ["copy"], "use_zce_mask": True}
#: each ZEDA model_type -> the model_type its base model is read as
ZEDA_BASES = {"glm4_moe_lite_plus_plus": "glm4_moe_lite", "qwen3_moe_plus_plus": "qwen3_moe",
              "qwen3_next_plus_plus": "qwen3_next"}
#: ZCE types without weights (CopyExpert, ZeroExpert); ConstantExpert has some
ZCE_WEIGHTLESS = ("copy", "zero")


def _zce(f: Fields) -> tuple[int, bool]:
    """(sum of zce_nums, use_zce_mask), the lists checked against each other and the expert types."""
    nums = f.int_list("zce_nums", hi=1 << 16)
    if nums is None:
        nums = f.defaulted("zce_nums", ZCE_DEFAULTS["zce_nums"], "absent: the ZEDA config class's default")
    types = f.raw("zce_types")
    if types is None:
        types = f.defaulted("zce_types", ZCE_DEFAULTS["zce_types"], "absent: the ZEDA config class's default")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise f.error("zce_types", "must be a list of expert type names (copy, zero, constant)")
    if len(types) != len(nums):
        raise f.error("zce_types", f"names {len(types)} types for {len(nums)} zce_nums entries: the ZEDA MoE pairs "
                                   "them (zip(zce_types, zce_nums))")
    bad = sorted({t for t in types if t not in ZCE_WEIGHTLESS + ("constant",)})
    if bad:
        raise f.error("zce_types", f"names {bad}; ZEDA's MoE knows copy, zero and constant (ValueError there)")
    if "constant" in types:
        raise UnsupportedModelError(
            f"{f.where}: zce_types names 'constant' experts, which planner does not model: each ZEDA ConstantExpert "
            "holds a learned hidden-size vector and a Linear(hidden, 2) that mixes it with its input",
            "copy and zero experts (no weights) are counted; a constant expert's weights and compute are not")
    mask = f.bool("use_zce_mask", ZCE_DEFAULTS["use_zce_mask"], note="absent: the ZEDA config class's default")
    return sum(nums), mask


def zeda_builder(base_type: str) -> Callable[[Fields, str], ModelSpec]:
    """The ZEDA model_type's builder: the base family's reading (its class defaults, its aliases), then every MoE
    layer's router widened by the zero-compute experts."""
    def build(f: Fields, model_type: str) -> ModelSpec:
        from . import REGISTRY, decoder
        from .common import ALIASES, Traits
        from ..family_defaults import FAMILY_DEFAULTS

        zce, mask = _zce(f)
        family = REGISTRY[base_type]
        aliases = {**ALIASES, **dict(family.aliases)} if isinstance(family, Traits) else dict(f.aliases)
        g = Fields(f.cfg, f.where, aliases=aliases, defaults=FAMILY_DEFAULTS.get(base_type), family=base_type)
        spec = decoder.build(g, base_type, family) if isinstance(family, Traits) else family(g, base_type)
        f.records.update(g.records)
        layers = tuple(replace(layer, ffn=replace(layer.ffn, zero_experts=layer.ffn.zero_experts + zce))
                       if isinstance(layer.ffn, MoE) else layer for layer in spec.layers)
        if not any(isinstance(layer.ffn, MoE) for layer in layers):
            raise f.error("zce_nums", "is set, but the model has no MoE layer whose router could score the "
                                      "zero-compute experts")
        note = (f"ZEDA dynamic MoE: each router also scores {zce} zero-compute experts (no weights); "
                + ("use_zce_mask masks them out, so every token uses its top-k routed experts"
                   if mask else "active parameters are the most a token uses (all top-k on routed experts); a "
                                "token routed to a zero-compute expert uses fewer"))
        return replace(spec, model_type=model_type, layers=layers, caveats=spec.caveats + (note,))
    return build


# ---- DeepSeek-V4 vision (DeepSeek-V4-Flash-Vision-Exp) -----------------------------------------------------------

#: the learned image sentinel embeddings (vLLM's _IMAGE_SENTINEL_NAMES; the checkpoint's names, no ".weight")
DSV4_IMAGE_SENTINELS = ("image_start", "image_pad", "image_newline", "image_end")


def deepseek_v4_vision_tensors(f: Fields, hidden: int) -> tuple[Tensor, ...]:
    """The ViT, aligner and sentinels a DeepSeek-V4 config with vision_n_layers > 0 describes (vLLM's
    deepseek_v4/vision.py: DeepseekV4VisionTransformer, DeepseekV4Aligner); () without them."""
    if f.raw("vision_n_layers") is None:  # a text-only DeepSeek-V4 (DeepseekV4Config has no vision fields)
        return ()
    layers = f.int("vision_n_layers", lo=0, hi=MAX_LAYERS)
    if not layers:
        return ()
    d = f.int("vision_dim")
    heads = f.int("vision_n_heads")
    if d % heads:
        raise f.error("vision_n_heads", f"({heads}) must divide vision_dim ({d}): the ViT's attention splits it "
                                        "into heads")
    inter = f.int("vision_inter_dim")
    patch = f.int("vision_patch_size", hi=4096)
    ratio = f.int("vision_downsample_ratio", hi=64)
    out: list[Tensor] = []
    _lin(out, "vision.patch_embed.proj", d, 3 * patch * patch)
    for i in range(layers):
        b = f"vision.blocks.{i}"
        out.append(Tensor(f"{b}.norm1.weight", (d,), "vision"))
        _lin(out, f"{b}.attn.wqkv", 3 * d, d)
        _lin(out, f"{b}.attn.wo", d, d)
        out.append(Tensor(f"{b}.norm2.weight", (d,), "vision"))
        out.append(Tensor(f"{b}.mlp.w1.weight", (2 * inter, d), "vision"))  # gate and up, merged
        out.append(Tensor(f"{b}.mlp.w2.weight", (d, inter), "vision"))
    out.append(Tensor("vision.norm.weight", (d,), "vision"))
    _lin(out, "aligner.w1", hidden, d * ratio * ratio)
    _lin(out, "aligner.w2", hidden, hidden)
    out.extend(Tensor(name, (hidden,), "vision") for name in DSV4_IMAGE_SENTINELS)
    return tuple(out)


def deepseek_v4_with_vision(base: Callable[[Fields, str], ModelSpec]) -> Callable[[Fields, str], ModelSpec]:
    """``deepseek.build_v4``, then the vision tower of a config that sets vision_n_layers."""
    def build(f: Fields, model_type: str) -> ModelSpec:
        spec = base(f, model_type)
        tower = deepseek_v4_vision_tensors(f, spec.hidden_size)
        if not tower:
            return spec
        note = (f"DeepSeek-V4 vision (vision_n_layers {f.raw('vision_n_layers')}): the ViT, its aligner and the "
                "image sentinels are counted in the parameters and weights, as vLLM builds them, but take no part in "
                "the text decode trace")
        return replace(spec, vision=tuple(spec.vision) + tower, caveats=spec.caveats + (note,))
    return build


# ---- refused by name ------------------------------------------------------------------------------------------------

_ALICE_WHY = (
    "Qwen3-Next's gated full attention and sparse MoE (sigmoid router with a correction bias, a shared expert) around "
    "Kimi Delta Attention layers in AliceAI's own split layout (separate q / k / v short convolutions, a_log_bias, "
    "b_proj and f_a_proj beside the projections vLLM fuses into in_proj_qkvgfab), with block attention residuals (a "
    "depth-softmax mix over the completed blocks of block_attn_res_block_size layers: attn_res_proj / mlp_res_proj "
    "and their norm weights on every layer, a final attnres_final mixer) and zero-centred norms; the KDA gate and "
    "output-gate shapes are fixed in the hub's modeling_alice_ai.py, which no public source at hand gives, and no "
    "released config.json gives the geometry the AliceAIConfig defaults leave to Qwen3NextConfig")

_MING_WHY = (
    "a Ling 2 (bailing_moe_v2) language model in llm_config (SGLang's BailingMMNativeForConditionalGeneration) beside "
    "a Qwen2.5-VL or Qwen3-VL vision tower under vision_config and an mlp_depth-deep projector, and, in the omni and "
    "TTS checkpoints, an audio encoder (audio_config: SGLang refuses it), an audio tokenizer "
    "(audio_tokenizer_config), a DiTAR flow head (ditar_config) and an aggregator (aggregator_config), with "
    "per-modality routers when llm_config sets multi_gate; the audio and generation modules take their shapes "
    "from the hub's remote modeling_bailingmm.py, which no public source at hand gives")

#: model_type -> (title, why) for analysis/families/__init__.py's _refused
REFUSED_S29F = {
    "bailingmm": ("Ming omni / TTS, BailingMMNativeForConditionalGeneration", _MING_WHY),
    "alice_ai": ("Yandex AliceAI, AliceAIForCausalLM", _ALICE_WHY),
    "alice_ai_mtp": ("AliceAI's MTP draft, AliceAIMTP", "a speculative-decoding draft layer of AliceAI (vLLM's "
                     "alice_ai_mtp.py), not a model to serve alone; AliceAI itself is refused: " + _ALICE_WHY),
}
