"""Checkpoints of TensorRT-LLM's PyTorch-backend model registry (``tensorrt_llm/_torch/models``: the
``@register_auto_model`` names indexed in ``_arch_index.py``, and the older backend's ``tensorrt_llm/models``
MODEL_MAP) that planner read wrongly or with a misleading error, refused by name for a reason their sources give
(session 28 audit, tests/test_audit_s28c.py):

By model_type (``REFUSED_S28C``):

- HyperCLOVAX-SEED-Vision (``hyperclovax_vlm``; HCXVisionForCausalLM, TRT-LLM's modeling_hyperclovax.py, vLLM's
  hyperclovax_vision.py): its language model sits in ``language_config`` (TRT-LLM reads
  ``pretrained_config.language_config["vocab_size"]``), beside a SigLIP ``vision_config`` and a C-Abstractor
  projector. Planner answered "standard decoder fields ... missing", as if the config were broken.
- Cosmos3 in NVIDIA's unified layout (``cosmos3``; Cosmos3ForConditionalGeneration, TRT-LLM's modeling_cosmos3.py):
  the root config (``model._target`` omni_mot_model) over ``transformer/`` and ``vision_encoder/`` weights that also
  hold the diffusion generator's mixture-of-transformers expert and sound / action towers; TRT-LLM serves the
  Qwen3-VL reasoner alone (Cosmos3HfWeightMapper.KEYS_TO_DROP). Planner read its text_config alone, caveated.
  transformers' format of the same model (model_type ``cosmos3_omni``) is counted.

By ``architectures[0]`` (``REFUSED_ARCHITECTURES_S28C``), whatever model_type the config names: speculative-decoding
drafters that ship a Llama / Qwen3 / DeepSeek-V3 config. TensorRT-LLM's names (EAGLE3LlamaForCausalLM,
Eagle3DeepSeekV3ForCausalLM, MistralLarge3EagleForCausalLM, MTPDraftModelForCausalLM), the MLA EAGLE-3 heads
(Eagle3DeepseekV2ForCausalLM / Eagle3DeepseekV3ForCausalLM: lightseekorg's Kimi-K3 EAGLE-3.1 head, model_type
deepseek_v3) and the DFlash / DSpark block drafters (DFlashDraftModel: SpecForge's configs/qwen3-8b-dflash.json,
model_type qwen3; DSparkDraftModel: RadixArk/Qwen3.8-27B-DSpark, model_type qwen3). Read by model_type they were
counted as whole decoders with a full vocabulary embedding and lm_head (the DFlash config: a 5-layer Qwen3).

The hub's EAGLE-3 names (LlamaForCausalLMEagle3: SpecForge's configs/llama3-70B-ealge3.json, read before as a
1-layer Llama of 2,957,008,896 parameters, nvidia/Llama-4-Maverick-17B-128E-Eagle3; Eagle3LlamaForCausalLM) and the
Qwen2 reward models TensorRT-LLM registers (Qwen2ForRewardModel, Qwen2ForProcessRewardModel, which its
ModelConfig.is_generation_model calls non-generative) are refused by the same wave's LMDeploy audit
(analysis/families/s28d_lmdeploy_mlc.py); tests/test_audit_s28c.py checks them on the TensorRT-LLM examples.
"""

from __future__ import annotations

#: model_type -> (title, reason)
REFUSED_S28C: dict[str, tuple[str, str]] = {
    "hyperclovax_vlm": (
        "NAVER HyperCLOVAX-SEED-Vision, HCXVisionForCausalLM",
        "its language model's fields sit in language_config (TensorRT-LLM's modeling_hyperclovax.py reads them "
        "there), beside a SigLIP vision_config and a C-Abstractor projector (mm_projector: a learned pos_emb over "
        "the patches, two timm RegNet stages of convolutional bottleneck blocks with squeeze-excitation and "
        "LayerNorm2d around an adaptive pool to num_queries_vis_abstractor queries, and a readout MLP) with "
        "anyres tiling and an image_newline vector; planner models neither that projector nor the language_config "
        "layout (the text model HyperCLOVAX-SEED-Think, model_type hyperclovax, and HyperCLOVAX-Vision V2, "
        "hyperclovax_vision_v2, are counted)"),
    "cosmos3": (
        "NVIDIA Cosmos3 in its unified checkpoint layout, Cosmos3ForConditionalGeneration",
        "beside the Qwen3-VL reasoner its text_config and vision_config describe, the unified checkpoint "
        "(transformer/, vision_encoder/; model._target omni_mot_model) holds the image / video diffusion generator's "
        "mixture-of-transformers expert (add_q_proj / add_k_proj / add_v_proj, to_add_out, norm_added_q / "
        "norm_added_k, moe_gen), proj_in / proj_out and a time_embedder, and sound and action towers, whose shapes "
        "this config does not give; TensorRT-LLM serves the reasoner alone (Cosmos3HfWeightMapper drops the rest). "
        "transformers' format of the model (model_type cosmos3_omni, nvidia/Cosmos3-Nano) is counted"),
}

_DRAFT = ("it is a speculative-decoding drafter, not a standalone language model: {how}; read by its model_type it "
          "would be counted as a whole {body} with a full-vocabulary embedding and lm_head. Analyse the target model "
          "instead")
_EAGLE3 = _DRAFT.format(
    how="its layer takes the token embedding concatenated with the target's hidden state (q/k/v read 2 x "
        "hidden_size), fuses three target layers' hidden states (eagle_aux_hidden_state_layer_ids) through fc "
        "(3 x hidden -> hidden), and predicts a draft_vocab_size vocabulary mapped to the target's (d2t), with the "
        "embedding shared with the target", body="decoder")
_EAGLE3_MLA = _DRAFT.format(
    how="an EAGLE-3 head with one MLA layer: the token embedding concatenated with the target's hidden state, three "
        "target layers' hidden states fused through fc (3 x hidden -> hidden), the embedding shared with the target",
    body="DeepSeek-V3 decoder")
_EAGLE_ML3 = _DRAFT.format(
    how="TensorRT-LLM's MistralLarge3DraftModel concatenates the token embedding with the target's hidden state, "
        "projects it through fc (2 x hidden -> hidden) into one Mistral Large 3 (MLA, DeepSeek-V3-shaped) layer and "
        "loads its lm_head from the target (load_lm_head_from_target)", body="DeepSeek-V3 decoder")
_BLOCK = _DRAFT.format(
    how="a block drafter (DFlash / DSpark) that proposes block_size tokens in one pass from the target's hidden "
        "states at target_layer_ids (num_target_layers): a context projection over them, draft layers attending "
        "over the target's context features, the target's embedding and lm_head shared (DSpark adds Markov and "
        "confidence heads)", body="decoder")
_MTP = _DRAFT.format(
    how="TensorRT-LLM builds it from the target checkpoint's MTP layers (num_nextn_predict_layers), each fed the "
        "target's hidden state and the next token's embedding (eh_proj over 2 x hidden)", body="decoder")

#: architectures[0] -> (title, reason): refused whatever model_type the config names
REFUSED_ARCHITECTURES_S28C: dict[str, tuple[str, str]] = {
    "EAGLE3LlamaForCausalLM": ("an EAGLE-3 draft head (TensorRT-LLM's name)", _EAGLE3),
    "MistralLarge3EagleForCausalLM": ("Mistral Large 3's EAGLE draft head (TensorRT-LLM's name)", _EAGLE_ML3),
    "Eagle3DeepseekV2ForCausalLM": ("an EAGLE-3 MLA draft head", _EAGLE3_MLA),
    "Eagle3DeepseekV3ForCausalLM": ("an EAGLE-3 MLA draft head", _EAGLE3_MLA),
    "Eagle3DeepSeekV3ForCausalLM": ("an EAGLE-3 MLA draft head (TensorRT-LLM's name)", _EAGLE3_MLA),
    "DFlashDraftModel": ("a DFlash block drafter", _BLOCK),
    "DSparkDraftModel": ("a DSpark block drafter", _BLOCK),
    "MTPDraftModelForCausalLM": ("an MTP drafter (TensorRT-LLM's name)", _MTP),
}
