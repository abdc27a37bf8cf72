"""SGLang-registry audit, second half (``python/sglang/srt/models`` from ``llama4`` to ``z``): the multimodal wrappers
planner read as their language model alone (a caveat saying the tower was not counted), now counted as SGLang builds
them, and the ones refused by name.

- Sarashina2-Vision (``sarashina2_vision``: sbintuitions/sarashina2-vision-8b / -14b, sarashina2.2-vision-3b,
  sarashina2.2-ocr; Sarashina2VisionForCausalLM, SGLang's models/sarashina2_vision.py): ``llm``, a LlamaForCausalLM
  built from ``text_config`` (its vocab_size replaced by the top-level ``vocab_size`` when the config sets one);
  ``visual``, Qwen2-VL's vision transformer unchanged (Conv3d patch embedding, biased fused-qkv blocks, the
  LayerNorm + two-Linear patch merger into ``vision_config.hidden_size``); and ``norm``, a biased LayerNorm over the
  text width applied to the merged image features.
- JetVLM (``jet_vlm``: JetVLMForConditionalGeneration, SGLang's models/jet_vlm.py and configs/jet_vlm.py):
  ``llm``, a Jet-Nemotron language model (``text_config``, counted by ``jet_nemotron``); ``vision_tower``,
  transformers' SiglipVisionModel built from ``vision_config`` (the pooling head too when ``vision_use_head``, as
  the class builds it); ``mm_projector``, a 2x2 space-to-depth then LayerNorm(4 x 1152), Linear(4608 -> text
  hidden), GELU, Linear(text hidden -> text hidden), all biased. SGLang fixes the projector's input at
  MM_HIDDEN_SIZE = 1152 (a SigLIP-so400m width): another tower width is an error here, as it is there.
- NVILA and NVILA-Lite (``nvila`` / ``nvila_lite``: NVILAForConditionalGeneration / NVILALiteForConditionalGeneration,
  SGLang's models/nvila.py and nvila_lite.py, whose NVILAConfig / NVILALiteConfig they define): ``llm``, a
  Qwen2ForCausalLM from ``text_config``; ``vision_tower``, SiglipVisionModel as for JetVLM; ``mm_projector``: NVILA
  concatenates three S2 scales (448, 896, 1344) of 1152-wide features (MM_HIDDEN_SIZE = 3456), then a 2x2
  space-to-depth, LayerNorm(13824), Linear(13824 -> hidden), GELU, Linear(hidden -> hidden); NVILA-Lite a 3x3
  space-to-depth of the 1152-wide features, LayerNorm(10368), Linear(10368 -> 3456), GELU, LayerNorm(3456),
  Linear(3456 -> hidden), GELU, Linear(hidden -> hidden), all biased.
- POINTS-1.5 (``pointsv1.5_chat``: WePOINTS/POINTS-1-5-Qwen-2-5-7B-Chat; POINTSV15ChatModel, SGLang's
  models/points_v15_chat.py and configs/points_v15_chat.py): ``llm``, a Qwen2ForCausalLM built from ``llm_config``
  (SGLang forces its architectures to Qwen2ForCausalLM; its own tie_word_embeddings, Qwen2Config's default when
  absent); ``vision_encoder``, Qwen2-VL's vision transformer as SGLang's Qwen2VisionTransformer builds it, its own
  patch merger into ``vision_config.hidden_size`` included (the NaViT subclass skips it in forward, but the module
  holds it, as does the hub's modeling_pointsv15_chat.py: ``Qwen2VisionTransformerForNavitPOINTS._from_config``, a
  Qwen2VisionTransformerPretrainedModel); ``vision_projector``, a second Qwen2-VL patch merger (the hub's
  ``PatchMerger(llm hidden, context_dim=1280)``: LayerNorm(1280), Linear(4 x 1280 -> 4 x 1280), GELU,
  Linear(4 x 1280 -> llm hidden), all biased) whose context width SGLang fixes at 1280: another ``embed_dim`` is an
  error here.

Refused by name (``REFUSED_S28B``): K2-VL (``k2_vl``, K2VLForConditionalGeneration; SGLang's configs/kimi_k2_vl.py
and models/kimi_k2_vl.py), the pre-release layout of Kimi K2.5's VLM, read before as its DeepSeek-V3 text model with a
"tower not counted" caveat; MOSS-VL (``moss_vl``, MossVLForConditionalGeneration, SGLang's models/moss_vl.py), read as
its text model with the cross-attention layers taken for self-attention over the text (an error when text_config names
no model_type). (Whisper's fields without ``is_encoder_decoder``, as SGLang's models/whisper.py reads them, ended in
"the standard decoder fields ... are missing"; config.not_a_decoder now refuses them by encoder_layers /
decoder_layers.) By architecture
(``REFUSED_ARCHITECTURES_S28B``): MiMo-V2-ASR (MiMoV2ASRForCausalLM, SGLang's models/mimo_v2_asr.py), a MiMo decoder
config whose ``audio_config`` builds the MiMo-Audio encoder beside it; and SGLang's pooled-output classes (Llama /
Qwen2 / Qwen3 sequence classifiers and reward models, the Llama / Mistral / Qwen3 embedding models), which read by
model_type were counted as causal LMs with a vocabulary head they do not have (Skywork-Reward-Llama-3.1-8B:
8,030,261,248 for Llama-3.1-8B's 7,504,924,672 body + a 4,096 score).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import Fields, short
from ..spec import Tensor
from ..vision import _lin, _ln, _vision_fields, qwen2_vl_vision, siglip_tensors
from .voxtral import required_sub_config

# ---- Sarashina2-Vision ----------------------------------------------------------------------------------------------


def sarashina2_vision_text_config(top: dict, where: str) -> dict:
    """SGLang's Sarashina2VisionForCausalLM builds LlamaConfig(**text_config) and then sets its vocab_size from the
    top-level config's when that has one; a config without ``text_config`` is refused (the remote code keeps the
    language model there)."""
    text = top.get("text_config")
    if text is None:
        raise ConfigError(f"{where}: required field 'text_config' is missing",
                          "Sarashina2-Vision keeps its Llama language model in text_config")
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {short(text)}")
    if top.get("vision_config") is None:
        raise ConfigError(f"{where}: required field 'vision_config' is missing",
                          "Sarashina2-Vision's Qwen2-VL tower is built from vision_config")
    text = dict(text)
    if "vocab_size" in top:
        text["vocab_size"] = Fields(top, where).int("vocab_size")
    return text


def sarashina2_vision_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Qwen2-VL's tower under ``visual.`` (the checkpoint's names) and the ``norm`` LayerNorm over the text width."""
    out = [Tensor("visual." + t.name.removeprefix("model.visual."), t.shape, t.kind)
           for t in qwen2_vl_vision(top, text_hidden, where)]
    merged_out = _vision_fields(top["vision_config"], where, "qwen2_vl_vision").int("hidden_size")
    if merged_out != text_hidden:
        raise ConfigError(f"{where}: vision_config.hidden_size ({merged_out}) must equal text_config.hidden_size "
                          f"({text_hidden})", "the patch merger maps into the language model's width")
    _ln(out, "norm", text_hidden)
    return tuple(out)


# ---- JetVLM ---------------------------------------------------------------------------------------------------------

#: SGLang's jet_vlm.py: ``MM_HIDDEN_SIZE = 1152``, the projector's input width before the 2x2 space-to-depth
JET_VLM_MM_HIDDEN = 1152


def _siglip_1152(top: dict, where: str, wrapper: str, mm_hidden: int) -> list[Tensor]:
    """SiglipVisionModel(vision_config) under ``vision_tower.vision_model`` (its class defaults when the config has
    none, as these config classes build SiglipVisionConfig()), its width checked against the 1152 the wrapper's
    projector is built for (``mm_hidden``: SGLang's MM_HIDDEN_SIZE)."""
    vc = top.get("vision_config")
    if vc is None:
        vc = {}
    out = siglip_tensors(vc, where, prefix="vision_tower.vision_model", family="siglip_vision_model")
    h = _vision_fields(vc, where, "siglip_vision_model").int("hidden_size")
    if h != JET_VLM_MM_HIDDEN:
        raise ConfigError(f"{where}: vision_config.hidden_size is {h}; {wrapper}'s projector takes {mm_hidden} "
                          f"(SGLang's MM_HIDDEN_SIZE, from a {JET_VLM_MM_HIDDEN}-wide tower)",
                          f"{wrapper} pairs its language model with a SigLIP-so400m-width tower")
    return out


def jet_vlm_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    out = _siglip_1152(top, where, "JetVLM", JET_VLM_MM_HIDDEN)
    merged = 4 * JET_VLM_MM_HIDDEN  # JetVLMDownSample2x2BlockFix: (p1 p2 d) with p1 = p2 = 2
    _ln(out, "mm_projector.layers.1", merged)
    _lin(out, "mm_projector.layers.2", text_hidden, merged)
    _lin(out, "mm_projector.layers.4", text_hidden, text_hidden)
    return tuple(out)


# ---- NVILA / NVILA-Lite ---------------------------------------------------------------------------------------------


def nvila_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    mm = 3 * JET_VLM_MM_HIDDEN  # nvila.py MM_HIDDEN_SIZE = 3456: scales [448, 896, 1344] concatenated on channels
    out = _siglip_1152(top, where, "NVILA", mm)
    _ln(out, "mm_projector.layers.1", 4 * mm)  # NVILAMultiModalProjectorDownsampleBlock: 2 x 2 -> 4 x 3456
    _lin(out, "mm_projector.layers.2", text_hidden, 4 * mm)
    _lin(out, "mm_projector.layers.4", text_hidden, text_hidden)
    return tuple(out)


def nvila_lite_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    mm = JET_VLM_MM_HIDDEN  # nvila_lite.py MM_HIDDEN_SIZE = 1152
    out = _siglip_1152(top, where, "NVILA-Lite", mm)
    _ln(out, "mm_projector.layers.1", 9 * mm)  # NVILALiteMultiModalProjectorDownsampleBlock: 3 x 3 -> 9 x 1152
    _lin(out, "mm_projector.layers.2", 3 * mm, 9 * mm)
    _ln(out, "mm_projector.layers.4", 3 * mm)
    _lin(out, "mm_projector.layers.5", text_hidden, 3 * mm)
    _lin(out, "mm_projector.layers.7", text_hidden, text_hidden)
    return tuple(out)


# ---- POINTS-1.5 -----------------------------------------------------------------------------------------------------

#: SGLang's points_v15_chat.py: ``Qwen2VisionPatchMerger(d_model=llm hidden, context_dim=1280)``, spatial merge 2
POINTS_CONTEXT_DIM = 1280


def points_v15_text_config(top: dict, where: str) -> dict:
    """``llm_config`` read as Qwen2 (SGLang sets its architectures to Qwen2ForCausalLM, whatever it says)."""
    text = required_sub_config(top, "llm_config", where, "POINTS-1.5 keeps its Qwen2 language model in llm_config")
    text["model_type"] = "qwen2"
    text.pop("architectures", None)
    return text


def points_v15_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    if top.get("vision_config") is None:
        raise ConfigError(f"{where}: required field 'vision_config' is missing",
                          "POINTS-1.5's Qwen2-VL tower is built from vision_config")
    e = _vision_fields(top["vision_config"], where, "qwen2_vl_vision").int("embed_dim")
    if e != POINTS_CONTEXT_DIM:
        raise ConfigError(f"{where}: vision_config.embed_dim is {e}; POINTS-1.5's vision_projector takes "
                          f"{POINTS_CONTEXT_DIM} (SGLang's context_dim)", "POINTS-1.5 uses Qwen2-VL's 1280-wide tower")
    out = [Tensor("vision_encoder." + t.name.removeprefix("model.visual."), t.shape, t.kind)
           for t in qwen2_vl_vision(top, text_hidden, where)]
    merged = 4 * e  # Qwen2VisionPatchMerger's spatial_merge_size default, 2 x 2
    _ln(out, "vision_projector.ln_q", e)
    _lin(out, "vision_projector.mlp.0", merged, merged)
    _lin(out, "vision_projector.mlp.2", text_hidden, merged)
    return tuple(out)


# ---- refused by name ------------------------------------------------------------------------------------------------

#: model_type -> (title, reason)
REFUSED_S28B: dict[str, tuple[str, str]] = {
    "k2_vl": (
        "K2-VL, K2VLForConditionalGeneration (the pre-release Kimi K2.5 VLM layout)",
        "its MoonViT3d tower is described by flat vt_* fields (vt_hidden_size, vt_num_hidden_layers, "
        "vt_intermediate_size) with divided_fixed space-time position embeddings (init_pos_emb_height / width / "
        "time), an sd2_tpool temporal merge and a patchmerger projector, and no published config.json or "
        "checkpoint index with model_type k2_vl was at hand to fix those shapes; the released Kimi K2.5 "
        "(model_type kimi_k25, its vision_config) is counted, and its text_config alone reads as deepseek_v3"),
    "moss_vl": (
        "MOSS-VL, MossVLForConditionalGeneration",
        "its language model interleaves cross-attention layers (text_config.cross_attention_layers) with Qwen3-style "
        "self-attention layers: each cross-attention layer reads K/V projected from the vision features (an "
        "encoder cache of image tokens plus a separator per frame, frame-causal masks), gated by tanh scalars, and "
        "its tower is Qwen3-VL's with one merger over the concatenated DeepStack features; planner's decode and "
        "cache figures would take those layers for self-attention over the text"),
}

_MIMO_V2_ASR = ("beside the MiMo decoder its config describes, SGLang's MiMoV2ASRForCausalLM builds the MiMo-Audio "
                "encoder from audio_config (an input local transformer, per-channel speech embeddings and a group "
                "downcast projection), which a reading by model_type leaves out")
#: SGLang's pooled-output models (llama_reward.py, llama_classification.py, qwen2_classification.py,
#: qwen3_classification.py, qwen3_rm.py, llama_embedding.py, qwen3_embedding.py): a decoder body without lm_head and a
#: small head (or none) over the last token, served for scores / embeddings
_POOLED = ("it is a {what} (SGLang's {file}): one forward pass scores or embeds a whole sequence, no token-by-token "
           "generation; {head} and no vocabulary head, so a {body} causal-LM reading counts an lm_head the "
           "checkpoint does not have, and planner's decode figures describe next-token generation")


def _pooled(what: str, file: str, head: str, body: str) -> str:
    return _POOLED.format(what=what, file=file, head=head, body=body)


#: architecture -> (title, reason): refused whatever model_type the config names
REFUSED_ARCHITECTURES_S28B: dict[str, tuple[str, str]] = {
    "MiMoV2ASRForCausalLM": ("Xiaomi MiMo-V2-ASR", _MIMO_V2_ASR),
    "LlamaForSequenceClassification": ("a Llama sequence classifier / reward model (Skywork-Reward-Llama ...)", _pooled(
        "sequence classifier", "llama_reward.py", "its output is score, a bias-free Linear(hidden, num_labels) on the "
        "last token,", "Llama")),
    "LlamaForSequenceClassificationWithNormal_Weights": ("a Llama reward model with a weighting head", _pooled(
        "reward model", "llama_reward.py", "its output is score, a bias-free Linear(hidden, num_labels), weighted by "
        "an MLP Linear(hidden, hidden), SELU, Linear(hidden, hidden), SELU, Linear(hidden, num_labels // 2),",
        "Llama")),
    "LlamaForClassification": ("a Llama classifier", _pooled(
        "classifier", "llama_classification.py", "its output is classification_head, a bias-free Linear(hidden, "
        "classification_out_size) read at the EOS tokens,", "Llama")),
    "Qwen2ForSequenceClassification": ("a Qwen2 sequence classifier / reward model", _pooled(
        "sequence classifier", "qwen2_classification.py", "its output is score, a biased Linear(hidden, num_labels) "
        "on the last token,", "Qwen2")),
    "Qwen3ForSequenceClassification": ("a Qwen3 sequence classifier / reward model", _pooled(
        "sequence classifier", "qwen3_classification.py", "its output is score, a biased Linear(hidden, num_labels) "
        "on the last token,", "Qwen3")),
    "Qwen3ForRewardModel": ("a Qwen3 reward model", _pooled(
        "reward model", "qwen3_rm.py", "its output is score, Linear(hidden, hidden), ReLU, Linear(hidden, 1), both "
        "biased, on the last token,", "Qwen3")),
    "LlamaEmbeddingModel": ("a Llama embedding model", _pooled(
        "text-embedding model", "llama_embedding.py", "its output is the last token's hidden state", "Llama")),
    "MistralModel": ("a Mistral embedding model (intfloat/e5-mistral-7b-instruct ...)", _pooled(
        "text-embedding model", "llama_embedding.py, which serves MistralModel as LlamaEmbeddingModel", "its output "
        "is the last token's hidden state", "Mistral")),
    "Qwen3Model": ("a Qwen3 embedding model", _pooled(
        "text-embedding model", "qwen3_embedding.py", "its output is the last token's hidden state", "Qwen3")),
}
