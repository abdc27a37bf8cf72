"""Text models of SGLang's model registry (``python/sglang/srt/models``, ``configs``) that planner refuses by name
(``REFUSED`` in analysis/families/__init__.py) rather than read as a generic decoder or end in a generic-decoder
error, each for a reason its sources give (SGLang's config class and model file, the ports that serve it):

- DeepSeek-V4.1 (``deepseek_v41``, its ``deepseek_v41_text``, and the legacy ``deepseek_v4.1`` /
  ``deepseek_v4.1_text``; DeepseekV41ForCausalLM / ForConditionalGeneration, SGLang's configs/deepseek_v41.py):
  DeepSeek-V4's layers plus Engram memory on ``engram_layer_ids`` (hashed n-gram embedding tables of
  ``engram_vocab_size`` rows, 16M in the released config, with heads of their own), K/V and indexer read from source
  layers (``kv_source_layer_ids``, ``index_source_layer_ids``), candidate-block selection and a vision tower.
- LongCat-Flash-Pro and LongCat 2 (``longcat_flash_pro``, ``longcat2``; SGLang's configs/longcat_flash_pro.py and
  longcat2.py): LongCat-Flash's shortcut MoE with zero experts plus LongCat DSA (an indexer per layer,
  ``index_topk_pattern``), over-encoding n-gram embeddings (``oe_*``) and an ``mtp_num_layers`` MTP stack.
- GigaChat 3.5 (``gigachat3_5``; GigaChat35ForCausalLM): MLA full-attention layers among Qwen3-Next Gated DeltaNet
  layers (``layer_types`` / ``full_attention_layers``), a DeepSeek MoE, pre/post norms with a gating weight.
- IQuest Q1 (``iquest_q1``; IQuestQ1ForCausalLM): full and sliding layers with learned sinks, rotary_dim on full layers
  and swa_rope_theta on sliding ones, a dense first layer of ``dense_intermediate_size`` then 256 routed experts, fixed
  per-layer output scales (``attn_out_scale``, ``ffn_out_scale``) and an optional MTP draft.
- BerryLM-OS (``berrylm``; BerryLMForCausalLM): Gated DeltaNet layers with a KDA per-channel forget gate through a
  ``kda_gate_bottleneck``, full attention every ``full_attention_interval`` layers, MoE with a shared expert, and a
  Gated Block AttnRes mixer on the residual stream (``attn_res_block_size``).
- SenseNova U1 (``neo_chat``; NEOChatModel): a Qwen3 ``llm_config`` with its own split 3-D RoPE (``rope_theta_hw``)
  and a NEO vision encoder (``neo_vision``) whose modules no public config at hand gives the shapes of.
- Evo 2 (``evo2``; Evo2ForCausalLM, Arc Institute's StripedHyena 2 DNA models): Hyena convolution layers (HCS / HCM /
  HCL: short, medium and long filters) around a few attention layers (``attn_layer_idxs``); the generic reading
  counted every layer as attention.
- SDAR / SDAR-MoE (``sdar``, ``sdar_moe``; JetLM): Qwen3 / Qwen3-MoE bodies served as block-diffusion LMs (SGLang's
  dLLM mode), as LLaDA2 is refused; the generic reading took them for Llama.
- ``multi_modality`` (MultiModalityCausalLM: DeepSeek Janus / Janus-Pro / DeepSeek-VL in their original layout, SGLang's
  deepseek_janus_pro.py): towers named by the config, not shaped; the transformers-format conversions are counted.
- NVIDIA EarTTS (``eartts``): a speech-generation stage (audio codes from a mixture-of-Gaussians head), read as a
  generic Llama before; the action policies GR00T N1.7 (``Gr00tN1d7``) and Alpamayo (``alpamayo_r1``,
  ``alpamayo1_5``, ``alpamayo2_super``), generic-decoder errors before, refused as pi0 is.

By architecture (``REFUSED_ARCHITECTURES_S27``): a config whose ``model_type`` names a family planner counts but whose
``architectures`` name another model. MiMo-Audio (XiaomiMiMo/MiMo-Audio-7B-Base / -Instruct: model_type ``qwen2``,
architectures MiMoAudioModel / MiMoAudioForCausalLM; SGLang's configs/mimo_audio.py extends Qwen2Config) adds to the
Qwen2 decoder a ``local_layers`` local transformer (``local_dim``, ``local_attn_heads``, ``local_ffn_dim``), an
``input_local_layers`` input transformer, per-channel speech embeddings and heads (``speech_vocab_size`` over
``audio_channels``); read as Qwen2 those went uncounted.
"""

from __future__ import annotations

_DSV41 = ("beside DeepSeek-V4's compressed sparse attention and hyper-connections (model_type deepseek_v4 is counted) "
          "its layers add Engram memory on engram_layer_ids (hashed n-gram embedding tables of engram_vocab_size rows "
          "with engram_n_heads heads of their own), K/V and indexer read from earlier source layers "
          "(kv_source_layer_ids / index_source_layer_ids), candidate-block selection and a vision tower "
          "(vision_config), and no published config.json with a safetensors index was at hand to fix those shapes")
_LONGCAT = ("beside LongCat-Flash's shortcut-connected MoE with zero experts (model_type longcat_flash is counted) it "
            "runs LongCat DSA, a sparse-attention indexer on every layer (index_n_heads, index_head_dim, "
            "index_topk_pattern), over-encoding n-gram embedding tables (oe_vocab_size_ratio, oe_neighbor_num, "
            "oe_split_num) and an mtp_num_layers MTP stack, which planner does not model")

#: model_type -> (title, reason)
REFUSED_SGLANG_S27: dict[str, tuple[str, str]] = {
    "deepseek_v41": ("DeepSeek-V4.1, DeepseekV41ForCausalLM", _DSV41),
    "deepseek_v41_text": ("DeepSeek-V4.1's language model", _DSV41),
    "deepseek_v4.1": ("DeepSeek-V4.1 (legacy model_type), DeepseekV41ForCausalLM", _DSV41),
    "deepseek_v4.1_text": ("DeepSeek-V4.1's language model (legacy model_type)", _DSV41),
    "longcat_flash_pro": ("Meituan LongCat-Flash-Pro", _LONGCAT),
    "longcat2": ("Meituan LongCat 2", _LONGCAT),
    "gigachat3_5": (
        "GigaChat 3.5, GigaChat35ForCausalLM",
        "it interleaves MLA full-attention layers (q_lora_rank, kv_lora_rank) with Qwen3-Next Gated DeltaNet "
        "linear-attention layers (layer_types / full_attention_layers), under a DeepSeek-style MoE with shared experts "
        "and pre/post norms with a gating weight (layernorm_type pre_post, layernorm_gating_weight); planner has no "
        "family joining MLA and Gated DeltaNet layers"),
    "iquest_q1": (
        "IQuest Q1, IQuestQ1ForCausalLM",
        "its full and sliding-window layers carry learned attention sinks, rotate rotary_dim of head_dim on full "
        "layers and use swa_rope_theta on sliding ones, its first layer is dense (dense_intermediate_size) and the rest "
        "route 256 experts, with fixed per-layer output scales (attn_out_scale, ffn_out_scale) and an optional MTP "
        "draft; no published config.json with a safetensors index was at hand to check those shapes"),
    "berrylm": (
        "BerryLM-OS, BerryLMForCausalLM",
        "its Gated DeltaNet layers take a KDA per-channel forget gate through a kda_gate_bottleneck, and a Gated Block "
        "AttnRes mixer (attn_res_block_size, attn_res_gated) mixes block outputs on the residual stream; planner "
        "models neither"),
    "neo_chat": (
        "SenseNova U1, NEOChatModel",
        "beside its Qwen3 llm_config it runs a NEO vision encoder (vision_config model_type neo_vision) and a split "
        "3-D RoPE over text and image positions (rope_theta_hw, max_position_embeddings_hw) whose module shapes no "
        "public config at hand gives"),
}

_EVO2 = ("its StripedHyena 2 blocks are mostly Hyena convolution operators (hcs_layer_idxs, hcm_layer_idxs, "
         "hcl_layer_idxs: short, medium and long filters with their own projections and filter state), with attention "
         "only on attn_layer_idxs; planner models neither the Hyena operators nor their recurrent state")
REFUSED_SGLANG_S27["evo2"] = ("Arc Institute Evo 2, Evo2ForCausalLM", _EVO2)

_MIMO_AUDIO = ("beside the Qwen2 decoder its config describes, it runs a local transformer (local_layers, local_dim, "
               "local_attn_heads, local_ffn_dim) that emits audio_channels speech tokens per group_size frames, an "
               "input local transformer (input_local_layers) and per-channel speech embeddings and heads "
               "(speech_vocab_size), which a Qwen2 reading leaves out")
#: architecture -> (title, reason): refused whatever model_type the config names
REFUSED_ARCHITECTURES_S27: dict[str, tuple[str, str]] = {
    "MiMoAudioModel": ("Xiaomi MiMo-Audio", _MIMO_AUDIO),
    "MiMoAudioForCausalLM": ("Xiaomi MiMo-Audio", _MIMO_AUDIO),
}

_SDAR = ("SGLang serves it as a block-diffusion LM (its dLLM mode, DLLM_PARAMS: blocks of 4, mask token 151669): each "
         "step a forward over the whole block with bidirectional attention inside it over the committed blocks' K/V; "
         "the decode figures trace, serve, plan and verify give assume one causal token per step. Its body is "
         "{body} verbatim (modeling_sdar.py is generated from transformers' {body}): the same config.json with "
         "model_type {mt} gives its exact parameters and the K/V bytes each committed token holds")
REFUSED_SGLANG_S27.update({
    "sdar": ("JetLM SDAR (SDARForCausalLM, a block-diffusion LM)", _SDAR.format(body="Qwen3", mt="qwen3")),
    "sdar_moe": ("JetLM SDAR-MoE (SDARMoeForCausalLM, a block-diffusion LM)",
                 _SDAR.format(body="Qwen3-MoE", mt="qwen3_moe")),
    # DeepSeek's original remote-code layout (deepseek-ai/Janus-Pro-7B / -1B, Janus-1.3B, deepseek-vl-7b-chat):
    # SGLang's deepseek_janus_pro.py serves it; transformers' conversions are model_type janus / deepseek_vl
    "multi_modality": (
        "DeepSeek Janus / Janus-Pro / DeepSeek-VL in their original layout (MultiModalityCausalLM)",
        "its towers are named, not shaped, by the config (vision_config.params.model_name siglip_large_patch16_384 "
        "and, for Janus, a VQ-16 gen_vision_config, gen_aligner_config and gen_head_config built by the remote code), "
        "beside a language_config; the transformers-format checkpoints of the same models (model_type janus, "
        "deepseek_vl, deepseek_vl_hybrid: deepseek-community/Janus-Pro-7B ...) are counted"),
})

# NVIDIA VoiceChat's EarTTS generation stage (EarTTSForCausalLM; SGLang's configs/eartts.py, vLLM-Omni's plugin): a
# Gemma 3 backbone that emits audio latents, not text tokens
REFUSED_SGLANG_S27["eartts"] = (
    "NVIDIA EarTTS, EarTTSForCausalLM (VoiceChat's speech-generation stage)",
    "its Gemma 3 backbone (vocab_size 2) reads text embeddings of emb_vocab_size fused with audio (gated fusion, a "
    "context_hidden_size input) and predicts num_quantizers x codebook_size audio codes through a mixture-of-Gaussians "
    "head (latent_size, mog_num_layers, mog_low_rank) over num_iter refinement steps per frame; it generates audio, not "
    "text, and planner models none of those heads")

# Robot / driving policies SGLang serves (docs/supported_models/vla_models): vision-language-action models whose
# output is an action trajectory, refused as pi0 / pi0.5 are
_VLA = ("it is a vision-language-action policy, not a token-by-token language model: {how}; planner's decode figures "
        "describe next-token generation")
REFUSED_SGLANG_S27.update({
    "Gr00tN1d7": ("NVIDIA GR00T N1.7 (a robot policy)", _VLA.format(
        how="a Cosmos-Reason2 (Qwen3-VL) backbone read at select_layer feeds a flow-matching DiT action head "
            "(diffusion_model_cfg, vl_self_attention_cfg; num_inference_timesteps steps) that emits action_horizon "
            "actions for one of max_num_embodiments embodiments")),
    "alpamayo_r1": ("NVIDIA Alpamayo-R1 (a driving policy)", _VLA.format(
        how="a Qwen-VL reasoning backbone plus an action expert (expert_cfg) that decodes ego trajectories "
            "(action_space_cfg) by flow matching")),
    "alpamayo1_5": ("NVIDIA Alpamayo 1.5 (a driving policy)", _VLA.format(
        how="a Qwen-VL backbone plus an action expert (expert_cfg) that decodes n_waypoints trajectories "
            "(action_space_cfg)")),
    "alpamayo2_super": ("NVIDIA Alpamayo 2 Super (a driving policy)", _VLA.format(
        how="a Qwen3-VL vlm_config backbone whose trajectory tokens (traj_ids) are decoded by an action expert")),
})
