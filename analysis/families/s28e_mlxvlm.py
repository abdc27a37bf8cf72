"""Audit of mlx-vlm's model registry (wave s28 E; ``Blaizzy/mlx-vlm``, one folder per model under
``mlx_vlm/models/``, folder names resolved through ``MODEL_REMAPPING`` in ``mlx_vlm/utils.py``): the folders bonsai,
deepseekocr, deepseekocr_2, falcon_ocr, fastvlm, florence2, granite_vision, inkling, jina_vlm, llava_bunny and llmjpvl,
mapped onto the model_types their checkpoints' config.json carry.

Already handled, nothing changed: ``deepseekocr`` (DeepSeek-OCR: model_type deepseek_vl_v2 with architectures
DeepseekOCRForCausalLM, counted by analysis/families/deepseek_ocr.py), ``deepseekocr_2`` (transformers' deepseek_ocr2,
counted; the remote-code DeepseekOCR2ForCausalLM format refused by name), ``florence2`` (Florence-2's config says
``is_encoder_decoder: true``: refused as an encoder-decoder, a BART encoder-decoder over DaViT image features
and the prompt). ``bonsai`` is a text-to-image generator (Prism Bonsai, mlx-vlm's image-generation path): out of scope.

Read here as an existing family:

- ``granite_vision`` / ``granite-vision`` (mlx-vlm's granite_vision folder; mlx-community's conversions of IBM's
  Granite Vision 3.x write model_type granite_vision, the originals ship llava_next with a granite text_config): the
  same modules as transformers' LlavaNextForConditionalGeneration (SigLIP tower, a projector over the
  concatenated ``vision_feature_layer`` list, ``image_newline``, a Granite decoder). Read before as its
  text_config alone (tower, projector and newline dropped); now as llava_next.
- ``inkling`` (mlx-vlm's inkling folder and its ModelConfig's default model_type; the released checkpoints say
  ``inkling_mm_model``, which MODEL_REMAPPING maps onto it): transformers' InklingForConditionalGeneration. Read
  before by a generic path (towers dropped, the text model miscounted); now as inkling_mm_model.

Refused by name (``REFUSED_S28E``; module-level strings give the reason):

- ``falcon_ocr`` (tiiuae/Falcon-OCR, FalconOCRForCausalLM, remote code): its config's flat ``dim`` / ``n_layers`` /
  ``ffn_dim`` were read as a generic Llama, which it is not (see ``_FALCON_OCR``).
- ``jvlm`` / ``jina_vlm`` (jinaai/jina-vlm): nested block configs and an attention-pooling connector.
- ``llmjpvl`` (llm-jp/llm-jp-4-vl-9B-beta, Jagle-VL-2.2B): no config.json or modeling file at hand.
- LLaVA-repository flat formats whose tower is chosen by a hub id in ``mm_vision_tower``: FastVLM's original
  ``llava_qwen2`` (apple/FastVLM-*; the transformers conversion, model_type fast_vlm, is counted), Bunny's
  ``bunny-*`` (BAAI/Bunny-*) and nanoLLaVA's ``llava-qwen2``. The generic read already refused these (flat vision
  keys); the name now says which model it is and which format planner counts.
"""

from __future__ import annotations

#: mlx-vlm's names for transformers' LLaVA-NeXT layout (Granite Vision 3.x as mlx-community converts it)
LLAVA_NEXT_ALIASES = ("granite_vision", "granite-vision", "granitevision")  # the last: older transformers
#: releases mapped model_type granitevision to LlavaNextConfig in CONFIG_MAPPING_NAMES (5.25 no longer does)
#: mlx-vlm's name for transformers' InklingForConditionalGeneration (model_type inkling_mm_model)
INKLING_ALIASES = ("inkling",)

_FALCON_OCR = (
    "an early-fusion OCR transformer (remote code modeling_falcon_ocr.py; mlx-vlm's falcon_ocr/language.py) that "
    "planner's decoder does not model: raw 16 x 16 pixel patches enter through an img_projector Linear into the same "
    "layers as text, image tokens attend bidirectionally; every attention has learned per-head sinks, weightless "
    "RMSNorms on its input and on q / k, and a 3D rotary embedding whose spatial half uses per-head learned "
    "frequencies (freqs_cis_golden, n_heads x head_dim / 4 x 2), so every query head sees its own rotation of a "
    "shared K head (mlx-vlm expands K to n_heads before rotating and caching it); the MLP is a squared-ReLU gate "
    "(w13, w2). Read before as a generic Llama from its dim / n_layers / ffn_dim fields, which miscounted it")
_JINA_VLM = (
    "its text and vision configs are jina-vlm's own nested blocks (block_config.attn_config / ffn_config / "
    "lnorm_config, n_layers, embedding_size plus an additional_vocab_size embedding table), not a transformers "
    "decoder's fields; the SigLIP2-style tower concatenates two inner layers (vit_layers) into a connector of "
    "2 x 2 attention pooling (vl_connector_config.attn_pooling_config, query = the patch mean) and a gated MLP "
    "projector (mlp_projector_config.size), which no family of planner builds")
_LLMJPVL = (
    "LLM-jp-VL (llm-jp/llm-jp-4-vl-9B-beta, llm-jp/Jagle-VL-2.2B-Jagle-FineVision; remote code modeling_llmjpvl.py) "
    "is a SigLIP2-so400m tower, pixel shuffle and InternVL's mlp1 connector in front of the Llama or Qwen3 named by "
    "llm_config.model_type, but neither checkpoint's config.json nor its modeling file was at hand to fix which "
    "tower modules the checkpoint stores (ports note an attention-pooling head kept in the weights and unused) and "
    "under which fields; a partial count would be wrong")
_FLAT_TOWER = (
    "a LLaVA-repository checkpoint whose vision tower is chosen by a hub id or tag in mm_vision_tower ({tower}), "
    "its stored shapes fixed by that name in the serving code rather than by the config's fields, in front of a "
    "{text} language model read from the flat fields, with an mm_projector_type projector from mm_hidden_size; "
    "planner would have to guess the tower{alt}")

#: model_type -> (title, reason)
REFUSED_S28E: dict[str, tuple[str, str]] = {
    "falcon_ocr": ("TII Falcon-OCR, FalconOCRForCausalLM", _FALCON_OCR),
    "jvlm": ("Jina-VLM (jinaai/jina-vlm), JinaVLMForConditionalGeneration", _JINA_VLM),
    "jina_vlm": ("Jina-VLM (mlx-vlm's name for model_type jvlm)", _JINA_VLM),
    "llmjpvl": ("LLM-jp-VL, LLMjpVLModel", _LLMJPVL),
    "llava_qwen2": ("Apple FastVLM, original LLaVA format, LlavaQwen2ForCausalLM", _FLAT_TOWER.format(
        tower="mobileclip_l_1024, a FastViTHD", text="Qwen2",
        alt="; the transformers conversion (model_type fast_vlm, FastVlmForConditionalGeneration) is counted")),
    "llava-qwen2": ("nanoLLaVA (qnguyen3/nanoLLaVA), LlavaQwen2ForCausalLM", _FLAT_TOWER.format(
        tower="google/siglip-so400m-patch14-384", text="Qwen1.5", alt="")),
}
for _suffix, _text, _cls in (("phi", "Phi-2", "BunnyPhiForCausalLM"), ("phi3", "Phi-3", "BunnyPhi3ForCausalLM"),
                             ("llama", "Llama-3", "BunnyLlamaForCausalLM"), ("qwen2", "Qwen2", "BunnyQwen2ForCausalLM"),
                             ("minicpm", "MiniCPM", "BunnyMiniCPMForCausalLM"),
                             ("stablelm", "StableLM-2", "BunnyStableLMForCausalLM")):
    REFUSED_S28E[f"bunny-{_suffix}"] = (f"BAAI Bunny, {_cls}", _FLAT_TOWER.format(
        tower="SigLIP-so400m or EVA-CLIP, per checkpoint", text=_text, alt=""))
