"""Vision-language checkpoints vLLM 0.28 serves that planner recognises by model_type but does not count, each
refused by name (``REFUSED`` in analysis/families/__init__.py) rather than read as a generic Llama decoder:

- ``bagel`` (ByteDance-Seed/BAGEL-7B-MoT, BagelForConditionalGeneration): a Mixture-of-Transformers — every Qwen2
  layer holds a second copy of its attention / MLP / norms for generation tokens (the ``*_moe_gen`` weights), beside a
  SigLIP NaViT tower, connector, a FLUX VAE and timestep / latent-position embedders for image generation.
- ``openvla`` (openvla/openvla-7b, OpenVLAForActionPrediction): a robot action policy (predict_action decodes 7
  discretised action tokens and un-normalises them with dataset statistics), its fused DINOv2 + SigLIP timm backbone
  (Prismatic) configured by name (``timm_model_ids``), not by shapes.
- ``nemotron_parse`` (nvidia NVIDIA-Nemotron-Parse, NemotronParseForConditionalGeneration): an encoder-decoder (a
  RADIO vision encoder feeding an mBART-style decoder through cross-attention).
- ``moondream1`` / ``moondream3`` (vikhyatk/moondream2, moondream/moondream3-preview; HfMoondream,
  Moondream3ForCausalLM): configs hold the model only as moondream's own nested ``config`` / ``text`` / ``vision`` /
  ``region`` dicts (dim, ff_dim, n_layers, crop sizes, the region / coordinate / size heads; moondream3's text model
  is a mixture of experts in its later layers, with bidirectional attention over its first ``prefix_attn``
  positions), no transformers fields.
- ``openpangu_vl`` (Huawei openPangu-VL, OpenPanguVLForConditionalGeneration): a Qwen3-VL-derived wrapper (its
  modeling_openpangu_vl.py: a ViT with grouped-query fused qkv, norm-type switch and optional gated merger) whose
  decoder vLLM serves with static sink attention; neither is modelled.
"""

from __future__ import annotations

BAGEL_WHY = ("it is a Mixture-of-Transformers: each language-model layer keeps a second set of attention, MLP and "
             "norm weights for image-generation tokens, and it carries a SigLIP NaViT tower, a FLUX VAE and flow-"
             "matching embedders; planner's single-decoder model would miscount its weights and cannot price its "
             "image generation")
OPENVLA_WHY = ("it is a vision-language-action policy: predict_action decodes a fixed chunk of discretised action "
               "tokens and maps them back to robot actions, and its fused DINOv2 + SigLIP timm backbone is named by "
               "timm_model_ids rather than given by shapes, so neither its weights nor its serving are modelled")
NEMOTRON_PARSE_WHY = ("it is an encoder-decoder (a RADIO vision encoder read through the decoder's cross-attention), "
                      "not a decoder-only model; planner's decode model would misprice it")
MOONDREAM_WHY = ("its config.json holds the model only in moondream's own nested config (text / vision / region "
                 "dicts: dim, ff_dim, n_layers, crops and the region / coordinate / size heads; moondream3's text "
                 "model is a mixture of experts in its later layers with bidirectional attention over its "
                 "prefix), with no transformers-style fields to count")
OPENPANGU_VL_WHY = ("its vision tower is its own (grouped-query fused qkv, a RMSNorm / LayerNorm switch, an optional "
                    "gated merger) and vLLM serves its Qwen3-VL-derived decoder with static sink attention (a sink K/V "
                    "block beside the cache); neither is modelled, so it is not counted")
