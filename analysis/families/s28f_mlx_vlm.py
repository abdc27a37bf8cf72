"""Model types of mlx-vlm's registry (``Blaizzy/mlx-vlm``, one folder per model under ``mlx_vlm/models/``) that
planner did not know, refused by name (``REFUSED`` in analysis/families/__init__.py) rather than read in part or as
a generic decoder (session 28 audit, helper F; tests/test_audit_s28f.py):

- Nemotron-Labs-Diffusion (``nemotron_labs_diffusion``; nvidia/Nemotron-Labs-Diffusion-8B, NemotronLabsDiffusionModel,
  remote code; mlx-vlm's nemotron_labs_diffusion/): a masked block-diffusion LM (dlm_paradigm bidirectional,
  use_cache false, mask_token_id, block_size) on a Ministral-3 body whose LM head is ``diffusion_head``; read before
  as a generic Llama with only a "not a known family" caveat. Its VLM sibling (``nemotron_labs_diffusion_vlm``,
  NemotronDiffusionVLMModel) adds a Pixtral-style tower and a 2x2-merging projector: refused too.
- NemotronLabs VoiceChat (``nemotron_voicechat``; mlx-community/NemotronLabs-VoiceChat-11B-*): a full-duplex speech
  model (FastConformer RNN-T listener, Nemotron-H text model, a Gemma-style TTS stack with a character encoder and a
  mixture-of-Gaussians head, an audio codec); read before as its text_config, which failed with a misleading
  layers_block_type error.
- Moondream 2 in mlx-vlm's layout (``moondream2``: text_config / vision_config, vikhyatk/moondream2's 2024 weights);
  failed before with "required field 'model_type' is missing" in text_config. moondream's own layout
  (``moondream1`` / ``moondream3``) was already refused (analysis/families/vlm_refusals2.py).
- Mage-VL (``mage_vl``; Microsoft's Qwen3-4B + Mage-ViT), MolmoPoint (``molmo_point``; allenai/MolmoPoint-8B),
  PLaMo 2.1 VL (``plamo2vl``; pfnet/plamo-2.1-8b-vl, -2b-vl): read before as their text_config alone, the tower and
  the rest "not counted".
- Youtu-VL (``youtu_vl``; Youtu-LLM's MLA decoder at the root + a windowed SigLIP2 tower) and ZAYA1-VL (``zaya1_vl``;
  Zyphra's ZAYA1 + a Qwen2.5-VL tower + vision LoRA in every layer): refused before only as "not a known family".

Left alone: ``mage_flow`` (Mage-Flow, text-to-image / image editing by flow matching) and ``minimax_h3`` (MiniMax-H3,
text-to-video-and-audio diffusion) generate images / video, not tokens; ``nemotron_h_nano_omni`` is the folder of the
hub's ``NemotronH_Nano_Omni_Reasoning_V3`` configs (mlx-vlm's MODEL_REMAPPING), already counted by
analysis/families/nemotron_omni_hub.py.
"""

from __future__ import annotations

_DIFFUSION = (
    "it generates by denoising blocks of block_size masked tokens (mask_token_id), every step a forward whose "
    "attention is bidirectional over the block (dlm_paradigm bidirectional; its config.json sets use_cache false), "
    "with autoregressive and self-speculative modes of the same weights beside it (mlx-vlm's "
    "nemotron_labs_diffusion.py); the decode figures trace, serve, plan and verify give assume one causal token per "
    "step and do not describe the diffusion mode. Its body is Ministral 3's (llama_4_scaling_beta, YaRN) with "
    "diffusion_head as its LM head: the same config.json with model_type ministral3 gives its exact parameters "
    "(Nemotron-Labs-Diffusion-8B: 8,489,553,920) and its autoregressive-mode figures")
_DIFFUSION_VLM = (
    "it is Nemotron-Labs-Diffusion (a masked block-diffusion LM: denoising steps with bidirectional attention over "
    "each block, which the decode figures planner gives do not describe) with a Pixtral-style vision encoder and a "
    "2x2-merging MLP projector in front")
_VOICECHAT = (
    "it is a full-duplex speech-to-speech model: beside its Nemotron-H text model (text_config) it runs a "
    "FastConformer RNN-T listener (audio_config: encoder, prediction network, joint), a Gemma-style TTS stack "
    "(tts_config: num_hidden_layers sliding / global layers, a character encoder, a low-rank mixture-of-Gaussians "
    "head over num_quantizers codebooks, gated text-audio fusion) and an audio codec (codec_config), stepping every "
    "frame_duration seconds of audio; counting text_config alone, as before, falls short of all three, and its "
    "per-step compute is not a text decoder's")
_MOONDREAM2 = (
    "mlx-vlm's moondream2 layout (vikhyatk/moondream2's 2024 weights) joins a Phi-1.5-style text model (fused qkv "
    "with bias, attention and MLP in parallel off one LayerNorm, partial rotary, a biased lm_head) to a SigLIP-style "
    "tower run over a global crop and up to max_crops overlapping crops, whose global and merged local features are "
    "concatenated (2 x hidden_size) into proj_mlp (proj_inner_dim -> proj_out_dim); the checkpoint also ships a "
    "region model (coordinate / size encoders and decoders) that mlx-vlm drops. No family of planner joins these "
    "(moondream's own layout, moondream1 / moondream3, is refused for the same model)")
_MAGE_VL = (
    "beside its Qwen3 language model (text_config) it runs Mage-ViT (vision_config, model_type mage_vl_vision): a "
    "pre-norm ViT with a Conv2d patch embedding, fused qkv, a 4:6:6 split 3D RoPE and block-diagonal attention over "
    "frame_windows_size frames, and a patch merger (ln_q, two Linears over spatial_merge_size^2 patches) into the "
    "text width; planner models no Mage-ViT tower, and reading text_config alone, as before, falls short by it")
_MOLMO_POINT = (
    "beside its Molmo2 text model (text_config) it runs a SigLIP ViT truncated at the deepest of "
    "adapter_config.vit_layers, a connector whose cross-attention pooling has no output projection (unlike Molmo2's) "
    "ahead of a gated SiLU projector, a build_vit_embedding Linear, and a point predictor (patch / subpatch query "
    "and key projections, an RMSNorm, a learned no-more-points vector, a 9-way location head) that emits patch, "
    "subpatch and location tokens past the vocabulary; planner's molmo2 family builds neither that connector nor the "
    "pointing heads, and reading text_config alone, as before, falls short by the tower and both")
_PLAMO2VL = (
    "beside its PLaMo-2 language model (text_config: Mamba and attention layers) it runs a SigLIP encoder whose "
    "fields are flattened into vision_config as vision_encoder_* (its model_type left empty) and an image projector "
    "planner does not build (an RMSNorm and a learned bias over image_feature_size, Linear to image_proj_hidden_size "
    "with its own bias, GELU, Linear to the text width with a bias); reading text_config alone, as before, falls "
    "short by both")
_YOUTU_VL = (
    "its Youtu-LLM language model (MLA: q_lora_rank, kv_lora_rank) sits at the config's root beside a SigLIP2 tower "
    "(vision_config, a Linear patch embedding) with window attention outside fullatt_block_indexes and a patch merger "
    "(an RMSNorm ln_q, two Linears over spatial_merge_size^2 patches) into out_hidden_size; planner's youtu family "
    "reads the text model but builds no such tower")
_ZAYA1_VL = (
    "beside a ZAYA1 language model at the config's root (CCA attention, Mixture-of-Depths experts) and a Qwen2.5-VL "
    "tower (vision_config), every layer carries vision LoRA adapters (vision_lora: rank vision_lora_rank_attn on q, "
    "k, the two value projections and o; rank vision_lora_rank_mlp on every expert's fc1 and fc2) added at image "
    "positions only; planner's zaya family models neither the tower nor those adapters")

#: model_type -> (title, reason)
REFUSED_S28F: dict[str, tuple[str, str]] = {
    "nemotron_labs_diffusion": ("NVIDIA Nemotron-Labs-Diffusion, a block-diffusion LM", _DIFFUSION),
    "nemotron_labs_diffusion_vlm": ("NVIDIA Nemotron-Labs-Diffusion-VLM, a block-diffusion VLM", _DIFFUSION_VLM),
    "nemotron_voicechat": ("NVIDIA NemotronLabs VoiceChat, a full-duplex speech model", _VOICECHAT),
    "moondream2": ("Moondream 2 in mlx-vlm's layout", _MOONDREAM2),
    "mage_vl": ("Microsoft Mage-VL (Qwen3 + Mage-ViT)", _MAGE_VL),
    "molmo_point": ("Ai2 MolmoPoint", _MOLMO_POINT),
    "plamo2vl": ("PFN PLaMo 2.1 VL", _PLAMO2VL),
    "youtu_vl": ("Tencent Youtu-VL", _YOUTU_VL),
    "zaya1_vl": ("Zyphra ZAYA1-VL", _ZAYA1_VL),
}
