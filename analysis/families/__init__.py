"""The registry of model families: ``model_type`` -> one row of ``Traits`` or one builder.

A plain decoder (Llama-shaped: attention + MLP/MoE, pre/post/sandwich norms) is a row of
``Traits``: what it does differently from Llama, built by ``decoder.build``. A family whose block
really differs (latent attention, fused per-head QKV, state-space or linear-attention mixers ...)
is a builder function in its own small module. This table is the only place a ``model_type`` is
looked up; everything the runtime needs (numerics, checkpoint layout) is in the ``ModelSpec`` the
builder returns, so nothing downstream branches on the family.

Order of defaults, for every field a builder reads (``analysis.fields.Fields``):

1. the config's own field, under its name or an alias (``n_embd`` for ``hidden_size`` ...,
   ``common.ALIASES``);
2. transformers' class default for that ``model_type`` (``analysis/family_defaults.py``, generated
   by ``tools/gen_family_defaults.py``: the only home of class defaults);
3. the builder's own default (the argument of ``f.int(key, default)``), for families transformers
   does not ship or fields it derives.

Adding a family (see README, "Adding a family"): one row here (or one module with a ``build``
function and one line here), the model_type in ``tools/gen_family_defaults.py``, and one row of
synthetic config in ``tests/test_families.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Union

from .. import vision
from .. import vision_shuffle
from .. import vision_wrappers
from ..spec import ModelSpec, NormKind, RopeStyle, RouterKind
from . import bloom, cohere, dbrx, deepseek, falcon, gemma3n, gemma4, gpt2, gpt_neox, hybrid, mllama, mpt, opt
from . import dory, hrm, inkling
from . import ouro
from . import iquest_loop, step1
from . import qwen4_exp
from . import doge, minimax_m3
from . import zaya
from . import remote_moe
from . import grok, hunyuan_large, yuan
from . import pangu_moe
from . import ctrl
from . import dots3_note
from . import xlstm
from . import longcat
from . import longcat_ngram
from . import idefics
from . import jetmoe
from . import jet_nemotron
from . import baichuan_m1
from . import phi4flash
from . import diffllama
from . import mimo_v2_flash
from . import recurrent_gemma
from . import rwkv
from . import rwkv6, rwkv7
from . import biogpt, persimmon
from . import hy_v3
from . import cohere2_moe
from . import afmoe
from . import tele
from . import k2_horizon
from . import bailing
from . import bailing_linear
from . import param2moe
from . import minicpm5_moe
from . import laguna
from . import step3, step3p5
from . import aria, xglm
from . import remote
from . import dots_ocr, ultravox, voxtral
from . import phi3small
from . import chatglm
from . import arctic, jais
from . import modernbert_decoder
from . import beam
from . import ergo, kolibri
from . import muse_spark
from . import muse_glimmer
from . import cohere_compass
from . import molmo2
from . import molmo
from . import nemotron_nas
from . import nemotron_puzzle
from . import plamo
from . import plamo3
from . import ernie4_5_vl
from . import ernie4_5_vl_remote
from . import qwen2_5_omni
from . import minicpmv
from . import video_llama_3, qianfan_ocr
from . import llava_next
from . import internvl
from . import nvlm_d
from . import qwen_vl
from . import llava_original
from . import deepseek_vl, paligemma
from . import ocr_vl
from . import phi3_v, phi4mm
from . import phi4_siglip
from . import remote_vl
from . import idefics_v1, git
from . import cogvlm
from . import mobilellm, openelm
from . import mistral_large4
from .common import Traits

Builder = Callable[..., ModelSpec]
Family = Union[Traits, Builder]

_QWEN2 = Traits(qkv_bias=True, o_bias=False, mlp_bias=False, windows="qwen")
_QWEN3 = Traits(o_bias="attention_bias", qk_norm="head", mlp_bias=False, windows="qwen", head_dim_default=128)
# no head_dim default (unlike qwen3): transformers' Qwen3MoeConfig falls back to hidden // heads
# Qwen3MoeConfig (and Qwen3-VL-MoE / Qwen3-Omni-MoE / Mellum) attribute_map num_experts to num_local_experts: the
# config.json transformers 5.x writes names the experts num_local_experts only
_QWEN3_MOE = Traits(qk_norm="head", mlp_bias=False, windows="use_sliding_all", moe="qwen", norm_topk_default=False,
                    aliases=(("num_experts", ("num_local_experts",)),))

_APERTUS = Traits(o_bias="attention_bias", mlp_bias=False, gated=False, act_default="xielu", qk_norm="head",
                  norm_names=("attention_layernorm", "feedforward_layernorm"), windows="none")
_GLM4_MOE = Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, moe="deepseek", qk_norm="head",
                   qk_norm_key="use_qk_norm", rotary_default=0.5)
_GLM = Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, bias_default=True, fused_gate_up=True,
              head_dim_default=128, rope_style=RopeStyle.PAIRS, rotary_default=0.5, windows="none")
_GLM4 = replace(_GLM, norms="sandwich", norm_names=("input_layernorm", "post_self_attn_layernorm",
                                                     "post_attention_layernorm", "post_mlp_layernorm"))
_GRANITEMOE = Traits(multipliers=True, mlp_bias=False, moe="mixtral", router=RouterKind.TOPK_SOFTMAX, windows="none")

_HUNYUAN = Traits(o_bias="attention_bias", mlp_bias=False, windows="none", qk_norm="head", qk_norm_after_rope=True,
                  rope_ntk_alpha=True,
                  modules=((".self_attn.query_layernorm.", ".self_attn.q_norm."),
                           (".self_attn.key_layernorm.", ".self_attn.k_norm."),
                           (".mlp.shared_mlp.", ".mlp.shared_expert."), (".mlp.gate.wg.", ".mlp.gate.")))

def _refused(title: str, why: str) -> Builder:
    """A family we recognise but cannot count exactly yet: one clear error naming it, never the generic
    decoder's silently wrong counts."""
    def build(f, model_type: str) -> ModelSpec:
        from ..errors import UnsupportedModelError

        raise UnsupportedModelError(f"{f.where}: model_type '{model_type}' ({title}) is not supported yet: {why}",
                                    "a generic Llama-style analysis would miscount it, so none is given")
    build.refused = True  # type: ignore[attr-defined]
    return build


#: MoE families transformers ships that the generic decoder would miscount (refused by name until modelled)
REFUSED: dict[str, Builder] = {
    # its text_config is a gemma4_unified_text with every layer KV-shared: read alone it would be miscounted
    "gemma4_assistant": _refused("Gemma 4 assistant", "it is a speculative-decoding drafter, not a standalone "
                                 "decoder: its layers read the target model's K/V (num_kv_shared_layers = "
                                 "num_hidden_layers: no cache of its own) and its input is the target's embedding and "
                                 "hidden state (backbone_hidden_size); analyse the target model instead"),
    "gemma4_unified_assistant": _refused("Gemma 4 unified assistant", "it is a speculative-decoding drafter, not a "
                                         "standalone decoder: every layer attends over the target model's K/V "
                                         "(num_kv_shared_layers = num_hidden_layers: no K/V projections, no cache of "
                                         "its own) and its input is the target's embedding and hidden state "
                                         "(pre_projection from 2 x backbone_hidden_size, post_projection back, "
                                         "centroids with use_ordered_embeddings); plan its target model "
                                         "(gemma4_unified) instead"),
    # read by the generic decoder as Llama (0.59x .. 2.83x, or off by their own small parameters): refused by name
    # the hub's MiniCPM-o 2.6 (remote code): MiniCPM-V 2.6 plus audio and speech modules not modelled
    "minicpmo": _refused("MiniCPM-o 2.6", "the checkpoint holds, beside MiniCPM-V 2.6's SigLIP tower, resampler and "
                         "Qwen2 language model, a Whisper audio encoder (apm, audio_config), its audio projection and "
                         "pooling, and a ChatTTS-style TTS module (tts, tts_config: a Llama decoder, per-codebook "
                         "embeddings and weight-normalised heads, a DVAE) that are not modelled; counting the language "
                         "model alone would fall short of the checkpoint"),
    "bert-generation": _refused("BertGeneration", "it is a BERT encoder used as the decoder of an encoder-decoder: "
                                "post-LayerNorm BERT blocks with learned absolute positions and an embedding LayerNorm "
                                "are not modelled"),
    # THUDM CogAgent (cogagent-chat-hf / cogagent-vqa-hf, remote code): CogVLM's visual-expert layers plus a cross-attention
    # per layer that every token, text included, runs over a second tower's cached high-resolution features
    "cogagent": _refused("CogAgent", "every decoder layer adds a cross-attention (query, key_value, dense of "
                         "cross_compute_hidden_size, post_cross_attention_layernorm) that every token, text tokens "
                         "included, runs over the cached K/V of a second, high-resolution image tower's features "
                         "(cross_vision, cross_image_size); those per-token cross-attention FLOPs and the per-image "
                         "cross cache are not modelled (CogVLM's layers are: model_type cogvlm)"),
    # openbmb MiniCPM-SALA (remote code, modeling_minicpm_sala.py): read as Llama it would give every layer
    # MiniCPM4's 2-head K/V cache
    "minicpm_sala": _refused("MiniCPM-SALA", "its mixer_types interleave InfLLM-v2 sparse-attention layers "
                             "(minicpm4) with lightning (linear) attention layers of their own heads (lightning_nh, "
                             "lightning_nkv, lightning_head_dim: a fixed-size state, q/k norms, output gate and "
                             "norm), which are not modelled"),
}

REGISTRY: dict[str, Family] = {
    # ---- plain decoders: one row of traits each ----
    "llama": Traits(),
    "mistral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all"),
    "ministral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all"),  # no layer_types: all sliding
    "mixtral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all", moe="mixtral"),
    "qwen2": _QWEN2,
    "qwen3": _QWEN3,
    "qwen2_moe": Traits(qkv_bias="qkv_bias", o_bias=False, mlp_bias=False, bias_default=True, windows="qwen2_moe",
                        moe="qwen", shared_expert_gate=True, norm_topk_default=False),
    "qwen3_moe": _QWEN3_MOE,
    # the language models of the Qwen-VL wrappers: Qwen2 / Qwen3 / Qwen3-MoE decoders (M-RoPE: with text-only
    # positions, the three sections see the same position, which is plain RoPE)
    "qwen2_vl_text": _QWEN2,
    "qwen2_5_vl_text": _QWEN2,
    "qwen3_vl_text": replace(_QWEN3, windows="none"),  # Qwen3VLTextAttention: no sliding window
    # Qwen3VLMoeTextTopKRouter renormalises the top-k weights whatever norm_topk_prob says
    "qwen3_vl_moe_text": replace(_QWEN3_MOE, norm_topk_fixed=True, windows="none"),  # its config: sliding_window None
    # Qwen3-Omni-MoE's thinker: Qwen3-MoE's block, never sliding (the thinker's attention has no window),
    # norm_topk_prob true by default; Qwen2.5-Omni's thinker: Qwen2's
    "qwen3_omni_moe_text": replace(_QWEN3_MOE, windows="none", norm_topk_default=True),
    "qwen2_5_omni_text": _QWEN2,
    "gemma": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation", act_default="gelu_pytorch_tanh",
                    norm_offset=1.0, embed_scale=True, mlp_bias=False, windows="none"),
    "gemma2": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation", act_default="gelu_pytorch_tanh",
                     norm_offset=1.0, embed_scale=True, norms="sandwich", mlp_bias=False, windows="alternate"),
    "gemma3_text": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation",
                          act_default="gelu_pytorch_tanh", norm_offset=1.0, embed_scale=True, norms="sandwich",
                          qk_norm="head", mlp_bias=False, windows="pattern", local_rope=True),
    "phi3": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, fused_qkv=True, fused_gate_up=True, windows="all"),
    "olmo2": Traits(qk_norm="full", norms="post", mlp_bias=False, windows="none"),
    "olmo3": Traits(qk_norm="full", norms="post", mlp_bias=False, windows="full_every_4th"),
    "olmoe": Traits(qk_norm="full", mlp_bias=False, windows="none", moe="mixtral", norm_topk_default=False,
                    q_norm_over_hidden=True),
    "gpt_oss": Traits(bias_default=True, mlp_bias=False, sinks=True, windows="alternate", moe="gpt_oss",
                      head_dim_default=64, gpt_oss_glu=True),
    "llama4_text": Traits(mlp_bias=False, moe="llama4", head_dim_default=128, rope_style=RopeStyle.PAIRS, llama4=True,
                          nope_layers=True, chunked_rope_layers=True),
    "granite": Traits(multipliers=True),
    "smollm3": Traits(nope_layers=True, windows="smollm3"),
    "exaone4": Traits(qk_norm="head", norms="post", windows="pattern", nope_global_with_sliding=True),
    # GLM-4.5 / 4.6: partial_rotary_factor 0.5 when absent (Glm4MoeConfig sets it in __post_init__)
    "glm4_moe": _GLM4_MOE,
    # GLM-4.5V's language model (glm4v_moe wrapper): GLM-4.5's MoE without q/k norms (use_qk_norm is not read),
    # q/k/v biased by attention_bias (true by default); head_dim from the config (hidden / heads when absent)
    "glm4v_moe_text": replace(_GLM4_MOE, qk_norm=None, qk_norm_key=None),
    # Sarvam-30B (sarvam_moe): transformers builds it as GLM-4.5 (Glm4MoeForCausalLM) from SarvamMoEConfig: RoPE
    # over the whole head when partial_rotary_factor is absent, q/k norms on by default (use_qk_norm), and the
    # original sarvam-30b names (its attribute_map) for the experts, the q/k/v bias and the MTP layers; its
    # checkpoint's names as transformers' conversion mapping renames them (query_key_value split by the runtime)
    "sarvam_moe": replace(_GLM4_MOE, rotary_default=1.0,
                          aliases=(("n_routed_experts", ("num_experts", "num_local_experts")),
                                   ("n_shared_experts", ("num_shared_experts",)), ("attention_bias", ("use_qkv_bias",)),
                                   ("num_nextn_predict_layers", ("num_mtp_layers",))),
                          renames=(("model.word_embeddings.", "model.embed_tokens."),),
                          modules=((".attention.query_layernorm.", ".self_attn.q_norm."),
                                   (".attention.key_layernorm.", ".self_attn.k_norm."),
                                   (".mlp.gate.expert_bias", ".mlp.gate.e_score_correction_bias"))),
    # MiniMax-M2: q/k RMSNorms over all heads' features, always; sigmoid router (its score-correction
    # bias is a buffer, not a parameter; the top-k weights renormalised, never scaled)
    "minimax_m2": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="full", windows="none", moe="mixtral",
                         router=RouterKind.SIGMOID),
    # StableLM: LayerNorms with bias, qkv bias by use_qkv_bias, per-head q/k LayerNorms by qk_layernorm;
    # use_parallel_residual: x + attn(ln(x)) + mlp(ln(x)), with no post_attention_layernorm
    "stablelm": Traits(qkv_bias="use_qkv_bias", o_bias=False, mlp_bias=False, norm_kind=NormKind.LAYER,
                       qk_norm="full", qk_norm_key="qk_layernorm", qk_norm_per_head=True, windows="none",
                       parallel_key="use_parallel_residual", rotary_default=0.25),
    # PhiMoE: LayerNorms with bias, all four attention projections biased by attention_bias, lm_head bias by
    # lm_head_bias; SparseMixer routing (two experts); longrope scaled by short_mscale
    "phimoe": Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, norm_kind=NormKind.LAYER,
                     windows="all", moe="mixtral", router=RouterKind.SPARSEMIXER, lm_head_bias="lm_head_bias",
                     longrope_mscale=True),
    "starcoder2": Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", bias_default=True,
                         norm_kind=NormKind.LAYER, gated=False, act_default="gelu_pytorch_tanh", windows="all"),
    # ERNIE 4.5 MoE: interleaved RoPE (pairs), every projection biased by use_bias (lm_head too; tied with a
    # bias is refused), tied by default; softmax router whose choice adds the e_score_correction_bias
    # parameter (counted), shared experts beside
    "ernie4_5_moe": Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", lm_head_bias="use_bias",
                           tie_default=True, windows="none", moe="ernie", rope_style=RopeStyle.PAIRS),
    # dots.llm1: Qwen3-style per-head q/k norms, DeepSeek V3's sigmoid router and shared experts after
    # first_k_dense_replace dense layers; sliding layers from max_window_layers on when sliding_window is set
    "dots1": Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, qk_norm="head", moe="deepseek",
                    windows="max_window_layers"),
    # EXAONE MoE (K-EXAONE): EXAONE 4's per-head q/k norms with Llama's pre-norms, 3 sliding : 1 full (NoPE)
    # layers, DeepSeek V3's sigmoid router with num_shared_experts shared experts; dense layers by
    # mlp_layer_types, else first_k_dense_replace
    "exaone_moe": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="head", windows="pattern",
                         moe="deepseek", nope_global_if_window=True),
    # Nemotron (Nemotron-4, Minitron, Nemotron-Mini): a plain MLP (up -> relu2 -> down), LayerNorm1P (LayerNorms with
    # bias whose weight is stored minus one: weight + 1 applied), RoPE on half of each head by default
    "nemotron": Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias", norm_kind=NormKind.LAYER,
                       norm_offset=1.0, gated=False, act_default="relu2", windows="none", rotary_default=0.5),
    # Arcee AFM: Llama with a plain (non-gated) MLP, up -> relu2 -> down
    "arcee": Traits(gated=False, act_default="relu2", windows="none"),
    # Apertus: a plain MLP with the xIELU activation (two learned scalars per MLP), per-head q/k RMSNorms, norms
    # named attention_layernorm / feedforward_layernorm; Apertus 1.5 may prune its lm_head (output_vocab_size)
    "apertus": _APERTUS,
    "apertus1p5_text": replace(_APERTUS, output_vocab_key="output_vocab_size"),
    # OLMo-1: weightless LayerNorms (eps 1e-5, fixed), clip_qkv, bias-free MLP
    "olmo": Traits(mlp_bias=False, norm_kind=NormKind.LAYER, norm_affine=False, norm_eps_fixed=1e-5, clip_qkv=True,
                   windows="none"),
    # GLM-4 (chat, 9B): fused gate_up MLP, q/k/v biased by attention_bias (o never), interleaved RoPE on half of
    # head_dim; GLM-4-0414 adds post-attention and post-MLP norms (sandwich)
    "glm": _GLM,
    "glm4": _GLM4,
    # GLM-4.1V / GLM-4.6V's language model (glm4v, glm46v, glmga wrappers): GLM-4-0414's sandwich block with q/k/v
    # biases always on (attention_bias is not read) and heads hidden_size / num_attention_heads wide; RoPE on
    # partial_rotary_factor of head_dim (1.0 when absent), interleaved, M-RoPE sections equal with text positions
    "glm4v_text": replace(_GLM4, qkv_bias=True, head_dim_default=None, o_from_hidden=True, rotary_default=1.0),
    # GLM-OCR's: the same block with no q/k/v biases and head_dim read as usual
    "glm_ocr_text": replace(_GLM4, qkv_bias=False, head_dim_default=None, rotary_default=1.0),
    # Seed-OSS: q/k/v biased by attention_bias, o by attention_out_bias
    "seed_oss": Traits(qkv_bias="attention_bias", o_bias="attention_out_bias", windows="none"),
    # HyperCLOVAX: Granite's multipliers (logits multiplied by logits_scaling), post norms by use_post_norm
    "hyperclovax": Traits(multipliers=True, logits_multiply=True, norms="sandwich", post_norms_key="use_post_norm",
                          norm_names=("input_layernorm", "post_norm1", "post_attention_layernorm", "post_norm2"),
                          windows="none"),
    # ERNIE 4.5 (dense): every projection biased by use_bias, interleaved RoPE, tied by default
    "ernie4_5": Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", tie_default=True,
                       head_dim_default=128, rope_style=RopeStyle.PAIRS, windows="none"),
    # Helium: interleaved RoPE, o_proj (hidden, hidden) without bias
    "helium": Traits(o_bias=False, rope_style=RopeStyle.PAIRS, o_from_hidden=True, head_dim_default=128,
                     windows="none"),
    # Granite MoE: Granite's multipliers, Mixtral's experts under block_sparse_moe, top-k of the logits softmaxed
    "granitemoe": _GRANITEMOE,
    # Granite MoE Shared: a shared MLP (shared_intermediate_size) beside the experts, its input_linear a fused gate_up
    "granitemoeshared": replace(_GRANITEMOE, shared_mlp_key="shared_intermediate_size",
                                modules=((".shared_mlp.input_linear.", ".mlp.shared_expert.gate_up_proj."),
                                         (".shared_mlp.output_linear.", ".mlp.shared_expert.down_proj."))),
    # EXAONE 3 / 3.5: Llama (transformers' LlamaForCausalLM), the original checkpoint's names renamed
    "exaone": Traits(windows="none", renames=(("transformer.wte.", "model.embed_tokens."),
                                              ("transformer.h.", "model.layers."),
                                              ("transformer.ln_f.", "model.norm.")),
                     modules=((".attn.attention.", ".self_attn."), (".self_attn.out_proj.", ".self_attn.o_proj."),
                              (".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm."),
                              (".mlp.c_fc_0.", ".mlp.gate_proj."), (".mlp.c_fc_1.", ".mlp.up_proj."),
                              (".mlp.c_proj.", ".mlp.down_proj."))),
    # InternLM3: Llama (transformers' LlamaForCausalLM) with qkv_bias / bias as attention_bias / mlp_bias
    "internlm3": Traits(head_dim_default=128, windows="none",
                        aliases=(("attention_bias", ("qkv_bias",)), ("mlp_bias", ("bias",)))),
    # VaultGemma: Gemma 2 without the post-attention / post-feedforward norms
    "vaultgemma": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation",
                         act_default="gelu_pytorch_tanh", norm_offset=1.0, embed_scale=True, mlp_bias=False,
                         windows="alternate", norm_names=("input_layernorm", "pre_feedforward_layernorm")),
    # CWM: bias-free attention, layer_types by default full on every 4th layer (0, 4, ...), sliding elsewhere
    "cwm": Traits(qkv_bias=False, o_bias=False, head_dim_default=128, windows="full_every_4"),
    # Ministral 3: Mistral with Llama-4-style query scaling by position (rope_parameters.llama_4_scaling_beta)
    "ministral3": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all", llama4_query_scale=True),
    # Solar Open (Upstage): every layer a DeepSeek V3-style MoE (sigmoid router, shared experts), q/k/v biased
    # by attention_bias, o_proj never; head_dim 128 by default
    "solar_open": Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, windows="none", moe="deepseek",
                         head_dim_default=128, dense_mlp=False),
    # Hunyuan (Tencent): per-head q/k RMSNorms after RoPE (query_layernorm / key_layernorm, always), NTK-alpha
    # RoPE; the MoE (Hunyuan-A13B) has a shared MLP beside the experts on every layer (module names rewritten)
    "hunyuan_v1_dense": _HUNYUAN,
    "hunyuan_v1_moe": replace(_HUNYUAN, moe="hunyuan"),
    # Granite SWA (granite-swash): Granite with a learned per-head attention sink (sigmoid(lse - sink) scaling the
    # output: gpt-oss's extra softmax logit), layer_types (default: full where i % 4 == 0, else sliding) and
    # layer_rope_theta (a base per layer, 0: NoPE); Granite MoE SWA: the same on Granite MoE Shared's blocks
    "granite_swa": Traits(multipliers=True, sinks=True, windows="full_every_4", layer_rope_theta=True),
    "granitemoe_swa": replace(_GRANITEMOE, sinks=True, windows="full_every_4", layer_rope_theta=True,
                              shared_mlp_key="shared_intermediate_size",
                              modules=((".shared_mlp.input_linear.", ".mlp.shared_expert.gate_up_proj."),
                                       (".shared_mlp.output_linear.", ".mlp.shared_expert.down_proj."))),
    # FlexOlmo: OLMo 2's block (q/k RMSNorms over all heads, norms after attention and MLP only) with OLMoE's
    # experts (softmax router, norm_topk_prob false by default)
    "flex_olmo": Traits(qk_norm="full", norms="post", mlp_bias=False, windows="none", moe="mixtral",
                        norm_topk_default=False),
    # BitNet b1.58 (Microsoft): Llama with an RMSNorm on the attention output before o_proj (attn_sub_norm) and
    # one on the MLP's intermediate features before down_proj (ffn_sub_norm); bias-free MLP, relu2 by default
    "bitnet": Traits(mlp_bias=False, act_default="relu2", sub_norms=True, windows="none"),
    # Jais 2: Llama with LayerNorms (bias), a plain relu2 MLP (up, down), biases on by default everywhere
    "jais2": Traits(norm_kind=NormKind.LAYER, gated=False, act_default="relu2", windows="none"),
    # NanoChat (karpathy): every RMSNorm weightless (the embeddings normed too), q/k normed per head after RoPE,
    # rotate_half with flipped signs, a plain relu2 MLP (fc1 / fc2), logits soft-capped (15 by default)
    "nanochat": Traits(o_bias="attention_bias", mlp_bias=False, gated=False, act_default="relu2", norm_affine=False,
                       embed_norm=True, qk_l2_norm=True, rope_style=RopeStyle.HALF_FLIPPED, windows="none",
                       modules=((".mlp.fc1.", ".mlp.up_proj."), (".mlp.fc2.", ".mlp.down_proj."))),
    # Mellum (JetBrains): Qwen3-MoE's attention (per-head q/k norms) and experts, MoE or dense by mlp_layer_types
    # (default: every layer sparse), sliding layers by layer_types with their own RoPE base
    # (rope_parameters.sliding_attention); its MTP layer is not built by transformers (not counted)
    "mellum": replace(_QWEN3_MOE, windows="layer_types", local_rope=True, head_dim_default=128,
                      norm_topk_default=True),
    # Kolibri-1 (Aleph-Alpha): EXAONE 4's attention (per-head q/k norms, bias-free; with sliding_window set the
    # full layers skip RoPE), GLM-4-0414's sandwich norms, a MoE on every layer with an ungated shared expert
    # (shared_expert_intermediate_size); its router chooses the top-k of logits + e_score_correction_bias (a
    # buffer) and weights them by the logits' sigmoids; full attention every 5th layer when layer_types is absent
    "kolibri1": replace(_GLM4, qkv_bias=False, o_bias=False, fused_gate_up=False, rope_style=RopeStyle.HALF,
                        rotary_default=1.0, qk_norm="head", windows="full_every_5", nope_global_if_window=True,
                        moe="qwen", dense_mlp=False, shared_mlp_key="shared_expert_intermediate_size",
                        router=RouterKind.LOGIT_SIGMOID, router_choice_bias=True, norm_topk_default=False,
                        aliases=(("num_experts", ("num_local_experts",)),),
                        # the released checkpoints' names (transformers' conversion mapping)
                        modules=(("moe.router.expert_bias", "mlp.gate.e_score_correction_bias"),
                                 ("post_attn_norm", "post_self_attn_layernorm"),
                                 ("post_ffn_norm", "post_mlp_layernorm"))),
    # Flint (RecursiveSI): Qwen3-MoE's attention with gpt-oss's per-head sinks, RoPE on the sliding layers only,
    # dense MLPs on mlp_only_layers ([0, 1] when absent), elsewhere experts plus an ungated shared expert; a
    # sigmoid router without bias (the top-k renormalised by norm_topk_prob)
    "flint": replace(_QWEN3_MOE, windows="flint", sinks=True, nope_global_if_window=True, head_dim_default=128,
                     shared_mlp_key="shared_expert_intermediate_size", mlp_only_default=(0, 1),
                     router=RouterKind.LOGIT_SIGMOID, norm_topk_default=True,
                     modules=(("self_attn.softmax_offset", "self_attn.sinks"),)),  # the released name of the sinks
    # ---- families with their own builder ----
    "deepseek_v2": deepseek.build_v2,
    "deepseek_v3": deepseek.build_v3,
    "kimi_k2": deepseek.build_kimi_k2,
    "deepseek_v32": deepseek.build_v32,  # DeepSeek sparse attention (analysis.mixers.dsa)
    "glm_moe_dsa": deepseek.build_glm_moe_dsa,  # GLM-5: the same, some layers sharing the top-k
    "deepseek_v4": deepseek.build_v4,  # sliding + compressed shared-KV MQA (analysis.mixers.compressed), mHC
    "hy_v4": deepseek.build_hy_v4,  # Hy4-preview: GLM-5's DSA with an output gate, sinks and hyper-connections
    "axk2": deepseek.build_axk2,  # A.X-K2: V3.2's DSA with a fused query / output-gate projection, gated norms
    # dots3-note: gated MLA layers, DSA / sliding-window / full by layer_types, per-layer geometry (per_layer_config)
    "dots3_note_text": dots3_note.build,
    # LongCat-Flash: two MLA + MLP sublayers per layer, a shortcut MoE with zero-computation experts
    "longcat_flash": longcat.build,
    "longcat_flash_ngram": longcat_ngram.build,  # LongCat-Flash-Lite: + hashed n-gram embeddings (remote code)
    "minicpm3": deepseek.build_minicpm3,  # MLA with a dense MLP and MiniCPM's multipliers
    "youtu": deepseek.build_youtu,  # Youtu-LLM: DeepSeek V3's MLA with a dense MLP on every layer
    "glm4_moe_lite": deepseek.build_glm4_moe_lite,  # GLM-4.7-Flash: V3's MLA and MoE, MoE by mlp_layer_types
    "axk1": deepseek.build_axk1,  # A.X-K1 (SK Telecom): V3 with an RMSNorm on each MoE block's output
    "sarvam_mla": deepseek.build_sarvam_mla,  # Sarvam-105B: a DeepSeek V3 (its original config names read)
    "mistral4": deepseek.build_mistral4,  # Mistral Small 4: V3's MLA and MoE, softmax router, Llama 4 query scale
    # Mistral Large 4: GLM-5's DSA without q LoRA, NoPE / KV-sharing layers, learned query scaling (mistral_large4.py)
    "mistral_large4_text": mistral_large4.build_text,
    "laguna": laguna.build,  # Laguna (Poolside): per-layer heads, softplus g_proj gate, RoPE per layer type, MoE
    "gpt_neox": gpt_neox.build,
    "gpt_neox_japanese": gpt_neox.build_japanese,  # serial NeoX block, bias-free, an output bias on the last layer
    "gpt2": gpt2.build_gpt2,
    "gpt_bigcode": gpt2.build_gpt2,
    "gptj": gpt2.build_gptj,
    "gpt_neo": gpt2.build_gpt_neo,
    "openai-gpt": gpt2.build_openai_gpt,  # GPT-1: learned positions, post-LN, Conv1D projections
    "ctrl": ctrl.build,  # Salesforce CTRL: sinusoidal positions, scaled embedding, a tied head with a bias
    "chatglm": chatglm.build,  # ChatGLM2/3, GLM-4-9B (remote code): fused [q; k; v] with bias, MQA groups, half-head pair RoPE
    "persimmon": persimmon.build,  # Adept Persimmon: fused per-head QKV, biased LayerNorm q/k norms, relu2 MLP
    "biogpt": biogpt.build,  # BioGPT: OPT-style offset learned positions, scaled embedding, biased fc1 / fc2
    "codegen": gpt2.build_codegen,  # Salesforce CodeGen: GPT-J's block, fused qkv_proj in 4 [q | v | k] blocks
    "bloom": bloom.build,
    "cohere": cohere.build_v1,
    "cohere2": cohere.build_v2,
    "hy_v3": hy_v3.build,
    "cohere2_moe": cohere2_moe.build,
    # Ling / Ring (inclusionAI, remote code): fused QKV, Ling 2.0 q/k norms + half RoPE + sigmoid grouped MoE, MTP
    "bailing_moe": bailing.build,
    "bailing_moe_v2": bailing.build,
    "bailing_moe_linear": bailing_linear.build,  # Ring-linear 2.0: lightning attention + Ling 2.0 GQA / MoE
    # BharatGen Param2-MoE (transformers 5.25: GLM-4.5's model under Param2MoeConfig, its original names aliased;
    # vLLM param2moe.py for the fields transformers does not read): Ling 2.0 block with the checkpoint's names
    "param2moe": param2moe.build,
    # OpenBMB MiniCPM5 MoE (transformers 5.25): gated GQA (q_gate_proj), DeepSeek-V3's MoE by mlp_layer_types
    "minicpm5_moe": minicpm5_moe.build,
    "falcon": falcon.build,
    "opt": opt.build,
    "dbrx": dbrx.build,
    "mpt": mpt.build,  # MosaicML MPT: ALiBi, fused Wqkv, bias-free LayerNorms (attn_config nested)
    "RefinedWeb": falcon.build,
    "RefinedWebModel": falcon.build,
    "qwen3_next": hybrid.build_qwen3_next,
    "qwen3_5_text": hybrid.build_qwen3_5,
    "qwen3_5_moe_text": hybrid.build_qwen3_5_moe,
    "lara_mini": hybrid.build_lara_mini,  # Lara-4-Mini: Qwen3.5 DeltaNet + Qwen3 attention (sliding / NoPE full), MoE
    "nemotron_h": hybrid.build_nemotron_h,
    "nemotron_h_puzzle": nemotron_puzzle.build,  # Nemotron-H pruned by Puzzle: per-layer block_configs
    "jamba": hybrid.build_jamba,
    "mamba": hybrid.build_mamba,
    "falcon_mamba": hybrid.build_mamba,
    "mamba2": hybrid.build_mamba,
    "falcon_h1": hybrid.build_falcon_h1,
    "bamba": hybrid.build_bamba,
    "granitemoehybrid": hybrid.build_bamba,
    "lfm2": hybrid.build_lfm2,
    "lfm2_moe": hybrid.build_lfm2,
    "bailing_hybrid": hybrid.build_bailing_hybrid,  # Ling 3: Kimi Delta Attention + gated MLA, DeepSeek V3 MoE
    "kimi_linear": hybrid.build_kimi_linear,  # Kimi Delta Attention (low-rank gates) + NoPE MLA, DeepSeek V3 MoE
    "lfm3": hybrid.build_lfm3,  # LFM2's short conv with sliding / full gated attention and sandwich norms
    "zamba2": hybrid.build_zamba2,
    "zamba": hybrid.build_zamba,
    "minimax": hybrid.build_minimax,
    # the hub's MiniMax-Text-01 / MiniMax-M1 configs (remote code; vLLM minimax_text_01.py): the same layout
    "minimax_text_01": remote_moe.build_minimax_m1,
    "minimax_m1": remote_moe.build_minimax_m1,
    # DeepSeek-MoE v1 (deepseek-moe-16b, remote code; vLLM deepseek.py): Llama MHA + DeepSeek's softmax MoE
    "deepseek": remote_moe.build_deepseek_v1,
    # xAI Grok-1 (remote code; vLLM grok1.py): four norms per block, a GELU-gated 8-expert MoE, scaled and capped
    "grok-1": grok.build_grok1,
    # Tencent Hunyuan-Large (remote code; vLLM hunyuan_v1.py): MoE with a shared MLP, cross-layer attention (CLA)
    "hunyuan": hunyuan_large.build,
    # IEIT Yuan 2.0 (remote code): MHA behind Localized Filtering (analysis.mixers.lfa); Yuan2.0-M32 refused
    "yuan": yuan.build,
    # openPangu-Ultra-MoE (remote code; vLLM openpangu.py): DeepSeek-V3 MLA + one-group sigmoid MoE, sandwich norms
    "pangu_ultra_moe": pangu_moe.build,
    # MiniMax-M3 (the language model of minimax_m3_vl): full and block-sparse layers (analysis.mixers.block_sparse)
    "minimax_m3_vl_text": minimax_m3.build,
    # MiniMaxAI/MiniMax-M3's own config (MiniMaxM3ForCausalLM): the same language model and legacy fields
    "minimax_m3": minimax_m3.build,
    # ModernBERT decoder (Ettin): embedding LayerNorm, GeGLU Wi, global / local (local_attention // 2) layers with their
    # own RoPE bases, a dense + LayerNorm prediction head before the biased (tied) decoder
    "modernbert-decoder": modernbert_decoder.build,
    # Beam (Reflection AI): a sigmoid output gate (gate_proj + per-head gate_bias), sliding / NoPE-full layers, sandwich
    # norms, dense-then-sparse layers with DeepSeek-V3's grouped sigmoid router
    "beam": beam.build,
    # Ergo (Amazon): fused QKV, sliding RoPE / NoPE full layers, sandwich norms and learned residual gates, a relu2
    # dense MLP then relu2 experts with per-expert output norms, a normed shared expert, a sigmoid router
    "ergo": ergo.build,
    # Kolibri 1.1 (Aleph Alpha): Kolibri-1 with indexed (top-k sparse, NoPE) layers, some reading an earlier
    # layer's K/V (kv_source_layers), dense MLPs on mlp_only_layers (analysis.mixers.indexed)
    "kolibri1_1": kolibri.build,
    # Muse Spark's language model: a sigmoid output gate (gate_proj), learned residual gates, MoE experts at
    # moe_hidden_size between pre_expert_proj / post_expert_proj (the wrapper muse_spark: muse_spark_towers.py)
    "muse_spark_text": muse_spark.build,
    "doge": doge.build,  # SmallDoge: dynamic-mask attention (analysis.mixers.doge), learned residual scales
    "zaya": zaya.build,  # Zyphra ZAYA1: CCA attention (analysis.mixers.cca), MLP router with a skip expert
    # PLaMo-2 (PFN, remote code; vLLM plamo2.py): Mamba (analysis.mixers.plamo2) and sliding-window attention
    # layers every mamba_step, sandwich RMSNorms with offsets, fused gate_up MLP
    "plamo2": plamo.build_plamo2,
    # PLaMo-1 (pfnet/plamo-13b, remote code): Llama pieces in a parallel block, K/V heads = heads / n_shared_head
    "plamo": plamo.build_plamo,
    # PLaMo 3 (PFN, remote code; vLLM plamo3.py): sliding-window / full attention every sliding_window_pattern-th
    # layer, q/k norms, sandwich RMSNorms with offsets, fused qkv and gate_up
    "plamo3": plamo3.build,
    # NVIDIA Llama-Nemotron Super / Ultra / 51B (remote code): per-layer block_configs (no-op, linear, GQA, ffn_mult)
    "nemotron-nas": nemotron_nas.build,
    "deci": nemotron_nas.build_deci,  # Deci/DeciLM-7B (remote code): Llama with num_key_value_heads_per_layer
    "openelm": openelm.build,  # Apple OpenELM (remote code): layer-wise scaled heads / FFN widths, fused qkv, q/k norms
    "mobilellm": mobilellm.build,  # Meta MobileLLM (remote code): Llama with share_embedding; layer_sharing refused
    "xlstm": xlstm.build,  # NX-AI xLSTM-7B: mLSTM blocks (analysis.mixers.mlstm) and SwiGLU feed-forwards
    "jetmoe": jetmoe.build,  # JetMoE: mixture of attention heads (analysis.mixers.moa) and a biased MoE
    # NVIDIA Jet-Nemotron (remote code): Qwen2 layers, most with a JetBlock (analysis.mixers.jetblock), a few attention / SWA
    "jet_nemotron": jet_nemotron.build,
    "diffllama": diffllama.build,  # DiffLlama: differential attention (analysis.mixers.diff_attention)
    "phi4flash": phi4flash.build,  # Phi-4-mini-flash (remote code): SambaY, Mamba / diff-attention self-decoder, YOCO cross-decoder with GMUs
    # Google RecurrentGemma (Griffin): RG-LRU recurrent blocks (analysis.mixers.rglru) and local MQA attention
    "recurrent_gemma": recurrent_gemma.build,
    # RWKV-4 (BlinkDL, transformers' rwkv): time-mix and channel-mix blocks (analysis.mixers.rwkv), a fixed state
    "rwkv": rwkv.build,
    # RWKV-7 Goose (fla's remote code: fla-hub/rwkv7-*, RWKV/RWKV7-Goose-World3-*-HF): the generalized delta rule
    # over a head_dim x head_dim state per head, w / a / v / g LoRAs, value residual from the first layer
    "rwkv7": rwkv7.build,
    # RWKV-6 Finch (the RWKV hub repos' remote code, RWKV/v6-Finch-*-HF): a head_size x head_size state per head,
    # data-dependent token shift and decay through low-rank maps; fla's own rwkv6 format is refused inside
    "rwkv6": rwkv6.build,
    # RWKV-5 Eagle (RWKV/rwkv-5-world-* remote code): RWKV-6's layout with a static token shift and decay
    "rwkv5": rwkv6.build_rwkv5,
    # Arcee AFMoE (Trinity): a sigmoid-gated attention output (gate_proj), sandwich norms, RoPE on sliding layers
    # only, dense-then-MoE with a sigmoid router whose expert_bias is a counted parameter, muP embedding scale
    "afmoe": afmoe.build,
    "olmo_hybrid": hybrid.build_olmo_hybrid,
    "phi": hybrid.build_phi,
    "gemma4_text": gemma4.build,
    "gemma4_unified_text": gemma4.build_unified,  # Gemma 4 unified: Gemma 4's layers, no PLE, no MoE
    "gemma3n_text": gemma3n.build,  # Gemma 3n: AltUp, LAuReL, per-layer inputs, KV-shared last layers
    "qwen4_exp_text": qwen4_exp.build_text,  # Qwen4-Exp: hyper-connections, QSA indexer, n-gram PLE
    "mllama_text_model": mllama.build_text,
    # Inkling / Inkling-2 (Thinking Machines): relative-bias attention with short convs (analysis.mixers.inkling)
    "inkling_text": inkling.build_v1,
    "inkling2_text": inkling.build_v2,
    # NVIDIA Nemotron-Labs Dory: a looped nGPT decoder (analysis.mixers.dory; Layer.stored False on later passes)
    "dory": dory.build,
    # HRM-Text: low- and high-level stacks run H_cycles x (L_cycles + 1) times (analysis.mixers.hrm; Layer.stored)
    "hrm_text": hrm.build,
    # ByteDance Ouro (remote code): all layers run total_ut_steps times, a K/V per layer per pass (Layer.stored)
    "ouro": ouro.build,
    "inkling2_loop_text": inkling.build_v2_loop,  # Inkling-2 Loop: a looped core (Layer.stored False on later passes)
    # MiMo-V2-Flash (Xiaomi): full / sliding layers with their own KV heads and sinks, v_head_dim, sigmoid MoE
    "mimo_v2_flash": mimo_v2_flash.build,
    # StepFun Step-3 (remote code, read as vLLM builds it): MFA (low-rank query, one shared KV head), shared-expert MoE
    "step3_text": step3.build,
    # StepFun Step-3.5-Flash (transformers 5.24 reads it as Step3p7TextConfig): full / sliding layers with their own
    # query-head counts, a per-head sigmoid gate, zero-centred norms, a sigmoid-routed MoE with a shared expert
    "step3p5": step3p5.build,
    # Aria (Rhymes): Llama attention, every layer a MoE of stacked (in x out) SiLU experts, a top-k softmax router
    # and a shared MLP of intermediate_size x moe_num_shared_experts
    "aria_text": aria.build_text,
    "xglm": xglm.build,  # XGLM: fairseq sinusoidal positions (offset 2), scaled embedding, biased fc1 / fc2
    # remote-code families (hub trust_remote_code; no transformers class): analysis.families.remote
    "internlm2": remote.build_internlm2,  # fused per-KV-group wqkv, untied output head
    "qwen": qwen_vl.build,  # Qwen-1: biased fused c_attn, SwiGLU of intermediate_size / 2; Qwen-VL: + `visual`
    "baichuan": remote.build_baichuan,  # W_pack fused qkv; RoPE (7B) or ALiBi (13B); Baichuan 2's NormHead
    "baichuan_m1": baichuan_m1.build,  # conv on K/V per KV head, full / sliding layers of their own heads, NormHead
    "minicpm": remote.build_minicpm,  # Llama with MiniCPM's muP multipliers (scale_emb, scale_depth, dim_model_base)
    "mimo": remote.build_mimo,  # Qwen2 + MTP layers (reported, not served by vLLM's main model)
    "telechat": remote.build_telechat,  # TeleChat 1/2: Llama, biased dense (o) and down_proj only, n_layer/n_head names
    "orion": remote.build_orion,  # Orion-14B: Llama with biased LayerNorms
    "xverse": remote.build_xverse,  # XVERSE dense: vLLM serves it as Llama (MoE variant refused)
    "internlm": remote.build_internlm,  # InternLM v1: Llama MHA with q/k/v/o biases by `bias`, rotary.base
    # a transformers port's TeleChat2Config(LlamaConfig) names TeleChat2 so (the hub's TeleChat2 says telechat)
    "telechat2": remote.build_telechat,
    # TeleChat3 dense (vLLM serves it as Llama): its telechat3-yarn RoPE read as YaRN with TeleChat3's temperature
    "telechat3": tele.build_telechat3,
    # Tele-FLM / FLM-2 (CofeAI; the hub config class says TeleFLM): Llama with muP input / output multipliers
    "TeleFLM": tele.build_teleflm,
    "teleflm": tele.build_teleflm,
    # MBZUAI-IFM K2-Horizon dense: Llama with grouped RMSNorm (verify refuses it); MoE / MoVA refused in the builder
    "k2_horizon": k2_horizon.build,
    # openPangu-Embedded 1B / 7B (hub model_type; a transformers port says openpangu_dense): Llama GQA, biased q/k/v/o
    "PanguEmbedded": remote.build_pangu_embedded,
    "openpangu_dense": remote.build_pangu_embedded,
    "aquila": remote.build_llama_served,  # BAAI Aquila / Aquila2: vLLM serves AquilaForCausalLM as Llama
    "skywork": remote.build_llama_served,  # Skywork-13B: the hub's modeling_skywork.py is Llama's
    "apriel": remote.build_llama_served,  # ServiceNow Apriel-5B (remote code): Llama with head_dim and YaRN RoPE
    "phi3small": phi3small.build,  # Phi-3-small: dense / block-sparse layers, GEGELU, biased LayerNorms, muP
    # Snowflake Arctic: dense / MoE layers, a MoE layer's experts beside attention plus a residual SwiGLU MLP
    "arctic": arctic.build,
    # Jais (Inception / Core42 / Cerebras): GPT-2's biased block with SwiGLU (c_fc, c_fc2), ALiBi, muP scales
    "jais": jais.build,
    "molmo2_text": molmo2.build_text,  # Molmo2's Qwen3-shaped LM: q/k norms per head or whole, norm_after, extra vocab rows
    # ERNIE-4.5-VL's language model: ERNIE 4.5 with modality-isolated experts (text and vision experts per layer)
    "ernie4_5_vl_moe_text": ernie4_5_vl.build_text,
    # Granite-Docling's language model: Granite's decoder (embedding / residual / attention / logits multipliers)
    "granite_docling_text": Traits(multipliers=True),
    # THUDM CogVLM / CogVLM2 (remote code, flat configs): every layer a visual expert (analysis.mixers.visual_expert:
    # language and vision experts' attention and MLP, one K/V cache), the EVA2-CLIP tower and GLU adapter in ModelSpec.vision
    "cogvlm": cogvlm.build,
    "cogvlm2": cogvlm.build,
}

#: Multimodal wrappers whose language model lives in ``text_config`` (the inner model_type when the
#: text_config does not name one).
TEXT_WRAPPERS: dict[str, str | None] = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "llava": None,
    # LLaVA variants: text_config defaults to Llama (OneVision: Qwen2), as their config classes say
    "llava_next": "llama",
    "llava_next_video": "llama",
    "llava_onevision": "qwen2",
    "video_llava": "llama",
    "vipllava": "llama",
    "qwen2_vl": "qwen2_vl_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "gemma3n": "gemma3n_text",  # its timm MobileNet-V5 tower, audio encoder, embedders: families/gemma3n_towers.py
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "qwen4_exp": "qwen4_exp_text",
    "gemma4": "gemma4_text",
    "gemma4_unified": "gemma4_unified_text",
    "mllama": "mllama_text_model",
    "glm4v": "glm4v_text",
    "glm46v": "glm4v_text",
    "glmga": "glm4v_text",
    "glm4v_moe": "glm4v_moe_text",
    "glm_ocr": "glm_ocr_text",  # GLM-OCR: its tower counted (vision.glm_ocr_vision)
    "minimax_m3_vl": "minimax_m3_vl_text",
    "qwen2_5_omni_thinker": "qwen2_5_omni_text",
    "qwen3_omni_moe_thinker": "qwen3_omni_moe_text",
    "inkling_mm_model": "inkling_text",
    "inkling2": "inkling2_text",
    "inkling2_loop": "inkling2_loop_text",
    "dots3_note": "dots3_note_text",
    "aria": "aria_text",
    "fuyu": "persimmon",  # Fuyu: Persimmon's language model; its patch projection counted (VISION_COUNTED)
    "step3_vl": "step3_text",  # StepFun Step-3's VLM wrapper (vLLM's Step3VLForConditionalGeneration)
    "step3p7": "step3p5",  # StepFun Step-3.7-Flash: Step-3.5's language model, a perception-encoder tower
    "lfm2_vl": "lfm2",  # LFM2-VL: SigLIP2 NaFlex tower, pixel-unshuffle projector (analysis.vision_shuffle)
    "lfm3_vl": "lfm3",  # LFM3-VL: its conv / attention encoder, merging projector
    "cohere2_vision": "cohere2",  # Command A Vision: SigLIP tower, pixel shuffle into a SwiGLU projector
    "aya_vision": "cohere2",  # Aya Vision: SigLIP tower, LayerNorm, pixel shuffle into a SwiGLU projector
    "molmo2": "molmo2_text",  # Ai2 Molmo2: its ViT and pooling adapter counted (analysis.families.molmo2)
    "ernie4_5_vl_moe": "ernie4_5_vl_moe_text",
    "idefics2": "mistral",  # Idefics2: Mistral + SigLIP (NaViT) + perceiver resampler (analysis.families.idefics)
    "idefics3": "llama",  # Idefics3: Llama 3 + SigLIP (NaViT) + pixel-shuffle connector
    "smolvlm": "llama",  # SmolVLM / SmolVLM2: SmolLM2 (Llama) + Idefics3's tower and connector
    "granite_docling": "granite_docling_text",  # Granite-Docling: Granite + SigLIP + DeepStack connector
    "internvl": "qwen2",  # InternVL 2.5 / 3 in transformers' format (InternVLConfig's text_config default: Qwen2)
    "internvl_chat": None,  # InternVL's remote-code format: the language model is llm_config (LLM_CONFIG_WRAPPERS)
    "NVLM_D": None,  # NVIDIA NVLM-D (remote code): llm_config built as Qwen2Config (LLM_CONFIG_WRAPPERS)
    "minicpmv": None,  # the hub's MiniCPM-V 2.5 / 2.6 / 4.0 / 4.5: flat fields, the LM by version (LLM_CONFIG_WRAPPERS)
    "paligemma": "gemma",  # PaliGemma 1 (Gemma) / 2 (Gemma 2, text_config names it) + SigLIP + a Linear projector
    "shieldgemma2": "gemma3_text",  # transformers builds Gemma3ForConditionalGeneration from it
    "deepseek_vl": "llama",  # DeepSeek-VL: Llama + SigLIP + a two-Linear aligner
    "deepseek_vl_hybrid": "llama",  # DeepSeek-VL 7B: Llama + SigLIP + SAM ViT + the hybrid aligner
    "janus": "llama",  # Janus / Janus-Pro: Llama + SigLIP-shaped tower + the VQ-VAE and image-generation heads
    "phi3_v": "phi3",  # Phi-3 / 3.5-vision (remote code): flat Phi-3 fields + CLIP ViT-L/14-336 + HD projection
    "phi4_multimodal": "phi3",  # Phi-4-multimodal: flat Phi-4-mini (Phi-3) fields + SigLIP + conformer audio
    "phi4mm": "phi3",  # Phi-4-multimodal's remote-code format: the same, plus its vision / speech LoRA adapters
    "phi4-siglip": "phi3",  # Phi-4-reasoning-vision-15B: flat Phi-4 fields + SigLIP2 NaFlex + mlp2x_gelu projector
}

#: Wrappers whose vision tower and projector are counted, as their ``*ForConditionalGeneration`` builds
#: them: model_type -> (top-level config, text hidden size, where) -> the vision tensors.
VISION_COUNTED: dict[str, Callable[[dict, int, str], tuple]] = {
    "gemma3": vision.gemma3_vision,
    "llava": vision.llava_vision,
    # the LLaVA variants: LLaVA's tower and projector, image_newline (NeXT, NeXT-Video, OneVision), NeXT-Video's
    # conv resampler, Video-LLaVA's two towers, ViP-LLaVA's LayerNormed multi-layer projector
    "llava_next": llava_next.llava_next_vision,
    "llava_next_video": llava_next.llava_next_video_vision,
    "llava_onevision": llava_next.llava_onevision_vision,
    "video_llava": llava_next.video_llava_vision,
    "vipllava": llava_next.vipllava_vision,
    "mistral3": vision.mistral3_vision,
    "qwen2_vl": vision.qwen2_vl_vision,
    "qwen2_5_vl": vision.qwen2_5_vl_vision,
    "qwen3_vl": vision.qwen3_vl_vision,
    "qwen3_vl_moe": vision.qwen3_vl_moe_vision,
    "qwen3_5": vision.qwen3_5_vision,
    "qwen3_5_moe": vision.qwen3_5_vision,
    "qwen4_exp": vision.qwen3_5_vision,  # Qwen4ExpVisionConfig: Qwen3.5-MoE's, same defaults
    "gemma4": vision.gemma4_towers,
    "gemma4_unified": vision.gemma4_unified_towers,  # encoder-free: patch / waveform embedders
    "mllama": vision.mllama_vision,
    "glm4v": vision.glm4v_vision,
    "glm46v": vision.glm4v_vision,
    "glmga": vision.glm4v_vision,
    "glm4v_moe": vision.glm4v_moe_vision,
    "minimax_m3_vl": vision.minimax_m3_vl_vision,
    "inkling_mm_model": inkling.inkling_towers,  # its HMLP vision tower and dMel audio embedding
    "inkling2": inkling.inkling2_vision,
    "inkling2_loop": inkling.inkling2_vision,
    "dots3_note": dots3_note.dots3_towers,  # its MoE vision tower (experts per block) and audio encoder
    "aria": aria.aria_vision,  # its Idefics3 (SigLIP-shaped) tower and cross-attention projector
    "fuyu": persimmon.fuyu_vision,  # no tower: one biased Linear from a flattened patch to the hidden size
    "internvl": internvl.internvl_vision,  # InternViT (layer scales, optional qk norms) + pixel-shuffle projector
    "internvl_chat": internvl.internvl_chat_vision,  # remote code: InternViT-300M / -6B (fused qkv) + mlp1
    "NVLM_D": nvlm_d.nvlm_d_vision,  # InternViT-6B with 7 dummy heads + a bias-free mlp1 through the LLM width
    "step3_vl": step3.step3_vision,  # its CLIP-like tower, two conv downsamplers and the projector (vLLM)
    "step3p7": step3p5.step3p7_vision,  # its perception-encoder tower, two stride-2 convs and the projector
    "lfm2_vl": vision_shuffle.lfm2_vl_vision,
    "lfm3_vl": vision_shuffle.lfm3_vl_vision,
    "cohere2_vision": vision_shuffle.cohere2_vision_vision,
    "aya_vision": vision_shuffle.aya_vision_vision,
    "molmo2": molmo2.molmo2_vision,
    "ernie4_5_vl_moe": ernie4_5_vl.ernie_vl_vision,  # its ViT (Linear patch embed) and the resampler
    "qwen2_5_omni_thinker": qwen2_5_omni.thinker_towers,  # Qwen2.5-VL's tower (split q/k/v) and a Whisper encoder
    # MiniCPM-V 4.6 / 4.7, MiniCPM-o OCR: a SigLIP tower with a window-attention merger, then DownsampleMLPs
    "minicpmv4_6": minicpmv.minicpmv4_6_vision,
    "minicpmv4_7": minicpmv.minicpmv4_7_vision,
    "minicpm_ocr": minicpmv.minicpm_ocr_vision,
    "minicpmv": minicpmv.minicpmv_vision,  # remote code (vLLM minicpmv.py): NaViT SigLIP vpm + the perceiver resampler
    "video_llama_3": video_llama_3.video_llama_3_vision,  # SigLIP layers without positions, a two-Linear readout
    "qianfan_ocr": qianfan_ocr.qianfan_ocr_vision,  # InternViT (its layers under layers.N) + pixel-shuffle projector
    "idefics2": idefics.idefics2_vision,  # NaViT SigLIP tower, gated MLP projection and perceiver resampler
    "idefics3": idefics.idefics3_vision,  # NaViT SigLIP tower and a pixel-shuffle Linear
    "smolvlm": idefics.smolvlm_vision,
    "granite_docling": idefics.granite_docling_vision,  # tower, coarse / fine DeepStack connector, density router
    "paligemma": paligemma.paligemma_vision,  # SigLIP tower + a biased Linear to projection_dim
    "shieldgemma2": vision.gemma3_vision,  # Gemma 3's SigLIP tower and projector (SigLIP's class defaults)
    "deepseek_vl": deepseek_vl.deepseek_vl_vision,  # SigLIP tower (head included) + the two-Linear aligner
    "deepseek_vl_hybrid": deepseek_vl.deepseek_vl_hybrid_vision,  # + SAM ViT, its neck and convs, hybrid aligner
    "janus": deepseek_vl.janus_vision,  # understanding tower + aligner; VQ-VAE, generation embeddings / heads
    "phi3_v": phi3_v.phi3_v_vision,  # CLIP ViT-L/14-336 (24 layers), glb_GN / sub_GN, img_projection
    "phi4_multimodal": phi4mm.phi4_multimodal_towers,  # SigLIP + head, projections; conformer audio encoder
    "phi4mm": phi4mm.phi4mm_towers,  # the same towers from the remote config; the LoRA adapters
    "phi4-siglip": phi4_siglip.phi4_siglip_vision,  # SigLIP2 tower (head included) + model.mm_projector.0 / .2
}

#: Wrappers whose language model is not in text_config: model_type -> (top-level config, where) -> the text_config
#: to read (InternVL's remote-code format keeps it in llm_config, built by its architectures[0]).
LLM_CONFIG_WRAPPERS: dict[str, Callable[[dict, str], dict]] = {"internvl_chat": internvl.chat_text_config}
LLM_CONFIG_WRAPPERS["minicpmv"] = minicpmv.minicpmv_text_config  # flat fields, read as Llama / Qwen2 / Qwen3 by version

#: Wrappers whose language model has image cross-attention layers: model_type -> (top-level config,
#: where) -> image tokens one image puts in their cache.
IMAGE_TOKENS: dict[str, Callable[[dict, str], int]] = {"mllama": vision.mllama_image_tokens}

#: Wrappers whose published configs may be flat: the language model's fields at the top level beside
#: vision_config (Qwen2-VL, Qwen2.5-VL: transformers' config pops them into its text_config; dots3-note: Dots3NoteConfig
#: builds its text_config from them).
FLAT_TEXT_WRAPPERS = frozenset({"qwen2_vl", "qwen2_5_vl", "dots3_note", "fuyu", "phi3_v", "phi4_multimodal",
                                "phi4mm", "phi4-siglip"})

#: How a wrapper ties lm_head to the embedding (its ``tie_word_embeddings``, class default included), counted or
#: text-only: "wrapper" — the wrapper's flag alone decides (Mistral3Config); "either" — tied when the wrapper's or
#: the text_config's flag is set (LlavaConfig.__post_init__ forwards the text flag); "text-if-absent" — the wrapper's
#: flag when the config sets it, else the text_config's own (Mistral Small 3.1 / 3.2's configs, written by transformers
#: 4.5x, which tied by the text config, leave both out and their checkpoints ship lm_head: keras-hub's preset counts
#: 24,011,361,280; transformers 5's Mistral3Config defaults to tied, and from_pretrained unties when both weights
#: differ). InternVL's, DeepSeek-VL's and Janus's "-hf" checkpoints are the same case (tests/test_wrapper_tie_audit.py):
#: transformers' convert_{internvl,deepseek_vl,deepseek_vl_hybrid,janus}_weights_to_hf.py and OpenGVLab/InternVL's
#: internvl_chat/tools/internvl_custom2hf.py (InternVL3.5 -HF) build the wrapper without the flag around an untied
#: text_config (Qwen2.5-7B, Qwen3-8B, Llama) and save the original lm_head under transformers 4.5x; transformers 5 writes
#: the wrapper's flag, so an absent one marks a 4.x file. HyperCLOVAX-Vision, LightOnOCR and MiniCPM-o OCR default to
#: tied at the wrapper (transformers 5 ties them whatever text_config says); the GLM-V wrappers and the Qwen-Omni
#: thinkers to untied.
WRAPPER_TIE: dict[str, str] = {"llava": "either", "llava_next_video": "either", "llava_onevision": "either",
                                "llava_next": "wrapper", "video_llava": "wrapper", "vipllava": "wrapper",
                                "mistral3": "text-if-absent", "qwen2_vl": "either", "qwen2_5_vl": "either",
                                "qwen3_vl": "wrapper", "qwen3_vl_moe": "wrapper", "qwen3_5": "wrapper",
                                "qwen3_5_moe": "wrapper", "qwen4_exp": "wrapper",
                                "glm4v": "either", "glm4v_moe": "either", "glm_ocr": "either", "glm46v": "wrapper",
                                "glmga": "wrapper", "internvl": "text-if-absent", "deepseek_vl": "text-if-absent",
                                "deepseek_vl_hybrid": "text-if-absent", "janus": "text-if-absent",
                                "hyperclovax_vision_v2": "wrapper",
                                "lighton_ocr": "wrapper", "minicpm_ocr": "wrapper", "minicpmv4_6": "wrapper", "minicpmv4_7": "wrapper", "video_llama_3": "either", "qianfan_ocr": "wrapper", "qwen2_5_omni_thinker": "wrapper",
                                "qwen3_omni_moe_thinker": "wrapper", "minimax_m3_vl": "either",
                                "gemma4_unified": "wrapper", "gemma4": "wrapper", "dots3_note": "wrapper",
                                "fuyu": "wrapper", "aria": "wrapper", "ernie4_5_vl_moe": "wrapper", "idefics2": "wrapper", "idefics3": "wrapper",
                                "smolvlm": "wrapper", "granite_docling": "wrapper"}
WRAPPER_TIE["step3p7"] = "wrapper"  # Step3p7Config's own flag (absent: untied); text_config's is not read
WRAPPER_TIE.update({"lfm2_vl": "wrapper", "lfm3_vl": "wrapper", "cohere2_vision": "wrapper", "aya_vision": "wrapper"})

#: Wrappers around a Cohere language model whose own lm_head leaves text_config.logit_scale out (transformers'
#: Cohere2VisionForConditionalGeneration: ``logits = self.lm_head(hidden_states)``; AyaVision's multiplies them by
#: text_config.logit_scale since transformers 5.25, as the Cohere 2 head).
UNSCALED_LOGITS_WRAPPERS = frozenset({"cohere2_vision"})
# PaliGemma: the wrapper's flag (default tied); ShieldGemma2Config.__post_init__ ties when the text_config's flag is set
WRAPPER_TIE.update({"paligemma": "wrapper", "shieldgemma2": "either"})

# IQuest-Coder-V1 (IQuestLab): transformers builds LlamaForCausalLM from IQuestCoderConfig (bias-free, head_dim 128 by
# default, untied); Emu3's language model (emu3_text_model): Llama with attention_bias / mlp_bias fixed off
REGISTRY["iquestcoder"] = Traits(head_dim_default=128, windows="none")
# IQuest-Coder-V1-Loop (iquestloopcoder, vLLM iquest_loopcoder.py): the layers run loop_num times; later passes
# attend the first pass's cache and a windowed cache of their own, gated per head (analysis.families.iquest_loop)
REGISTRY["iquestloopcoder"] = iquest_loop.build
# Upstage Solar Pro (solar, vLLM solar.py): Llama's block; the bskcn_* skip connections blend saved hidden states
# into 4 later layers' inputs (no parameters, elementwise, not traced); vLLM caches every position (its attention has
# no window: the config's sliding_window 2047 is not read), so windows are none
REGISTRY["solar"] = Traits(windows="none")
# PowerInfer SmallThinker (remote code): a Mixtral-shaped ReGLU MoE under its own names, per-layer window / NoPE masks
from . import smallthinker  # noqa: E402
REGISTRY["smallthinker"] = smallthinker.build
# AI2's original OLMo checkpoints (ai2-olmo config, hf_olmo): read as transformers' olmo row after its conversion mapping
from . import hf_olmo  # noqa: E402
REGISTRY["hf_olmo"] = hf_olmo.build
# KORMo (KORMo-Team, transformers' kormo after 5.25; llama.cpp KORMoForCausalLM): Llama with its two norms named
# pre_attention_layernorm / pre_mlp_layernorm (modular_kormo.py)
REGISTRY["kormo"] = Traits(norm_names=("pre_attention_layernorm", "pre_mlp_layernorm"))
# StepFun Step1 (step1, vLLM step1.py): GQA via num_attention_groups, ALiBi on sqrt distance (analysis.families.step1)
REGISTRY["step1"] = step1.build
# StableLM-Epoch (remote code: stabilityai/stablelm-zephyr-3b, stablelm-2-1_6b's first uploads; vLLM serves
# StableLMEpochForCausalLM with stablelm.py): transformers' StableLM block, its fields under the original names
# rope_pct (partial_rotary_factor) and norm_eps (LayerNorm eps, a common alias)
REGISTRY["stablelm_epoch"] = replace(REGISTRY["stablelm"], aliases=(("partial_rotary_factor", ("rope_pct",)),))
# Muse Glimmer (muse_glimmer_text): Muse Spark's gated attention on a dense decoder with centred sandwich norms; the
# muse_glimmer wrapper's vision tower, adapter and projection counted (analysis.families.muse_glimmer)
REGISTRY["muse_glimmer_text"] = muse_glimmer.build_text
TEXT_WRAPPERS["muse_glimmer"] = "muse_glimmer_text"
VISION_COUNTED["muse_glimmer"] = muse_glimmer.muse_glimmer_vision
WRAPPER_TIE["muse_glimmer"] = "wrapper"  # the wrapper's flag (absent: untied), not text_config's
# Cohere Compass (North-Micro-Vision): Cohere 2's parallel block with RoPE per layer type (rope_parameters keyed by
# layer type, null: NoPE) and rotate-half RoPE; the Qwen3-VL tower with DeepStack mergers; the wrapper's flag ties
REGISTRY["cohere_compass_text"] = cohere_compass.build_text
TEXT_WRAPPERS["cohere_compass"] = "cohere_compass_text"
VISION_COUNTED["cohere_compass"] = cohere_compass.cohere_compass_vision
WRAPPER_TIE["cohere_compass"] = "wrapper"
REGISTRY["emu3_text_model"] = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="none")
# Cosmos3-Edge's language model: Llama with a plain relu2 MLP (fc1 / fc2, no gate) and M-RoPE (for text, plain RoPE)
REGISTRY["cosmos3_edge_text"] = Traits(gated=False, act_default="relu2", head_dim_default=128, windows="none",
                                       modules=((".mlp.fc1.", ".mlp.up_proj."), (".mlp.fc2.", ".mlp.down_proj.")))
# wrappers whose towers analysis/vision_wrappers.py counts (Llama 4's language model is registered above)
TEXT_WRAPPERS.update({"cosmos3_edge": "cosmos3_edge_text", "cosmos3_omni": "qwen3_vl_text", "kimi_k25": "deepseek_v3",
                      "exaone4_5": "exaone4", "hyperclovax_vision_v2": "hyperclovax", "nemotron_h_omni": "nemotron_h",
                      "apertus1p5": "apertus1p5_text"})
VISION_COUNTED.update({
    "llama4": vision_wrappers.llama4_vision,  # its ViT, pixel-shuffle adapter and one Linear projector
    "kimi_k25": vision_wrappers.kimi_k25_vision,  # MoonViT and the patch-merging projector
    "cosmos3_edge": vision_wrappers.cosmos3_edge_vision,  # SigLIP2 (no head) and the merger
    "cosmos3_omni": vision_wrappers.cosmos3_omni_vision,  # the Qwen3-VL tower with DeepStack mergers
    "exaone4_5": vision_wrappers.exaone4_5_vision,  # the Qwen2.5-VL tower with a grouped qkv
    "hyperclovax_vision_v2": vision_wrappers.hyperclovax_vision_v2_vision,  # Qwen2.5-VL tower + a Linear
    "nemotron_h_omni": vision_wrappers.nemotron_h_omni_vision,  # C-RADIO + projector; Parakeet + embed_audio
    "apertus1p5": vision_wrappers.apertus1p5_towers,  # VQGAN image tokenizer, WavTokenizer audio encoder
})
# whose flag ties lm_head, as transformers builds them (checked on meta): Kimi K2.5, Cosmos3-Omni, EXAONE 4.5 and
# Apertus 1.5 the wrapper's; Cosmos3-Edge (_tied_weights_keys = {}) and Nemotron-3 Nano Omni (its own language model)
# never
WRAPPER_TIE.update({"kimi_k25": "wrapper", "cosmos3_omni": "wrapper", "exaone4_5": "wrapper", "cosmos3_edge": "never",
                    "nemotron_h_omni": "never", "apertus1p5": "wrapper"})
LLM_CONFIG_WRAPPERS["nemotron_h_omni"] = vision_wrappers.nemotron_h_omni_text_config
LLM_CONFIG_WRAPPERS["NVLM_D"] = nvlm_d.text_config  # NVLM-D: llm_config as Qwen2Config
# NVIDIA Nemotron Nano VL (remote code, vLLM nano_nemotron_vl.py / nemotron_vl.py): the hub's RADIO tower + mlp1 around
# an llm_config NemotronH (12B v2 VL) or Llama (Llama-3.1-Nemotron-Nano-VL-8B) language model
from . import nemotron_nano_vl  # noqa: E402
TEXT_WRAPPERS.update({"NemotronH_Nano_VL_V2": None, "Llama_Nemotron_Nano_VL": None})
LLM_CONFIG_WRAPPERS.update({"NemotronH_Nano_VL_V2": nemotron_nano_vl.nano_vl_v2_text_config,
                            "Llama_Nemotron_Nano_VL": nemotron_nano_vl.llama_nano_vl_text_config})
VISION_COUNTED.update({"NemotronH_Nano_VL_V2": nemotron_nano_vl.nano_vl_v2_vision,
                       "Llama_Nemotron_Nano_VL": nemotron_nano_vl.llama_nano_vl_vision})
# LLaVA / LLaVA-NeXT repositories' own format (OneVision, LLaVA-Video, LLaVA-1.6): a flat config + mm_* fields, the
# language model by architectures[0], the tower by its hub id; model_type "llava" is dispatched by is_original
for _mt in ("llava", "llava_qwen", "llava_llama", "llava_mistral"):
    LLM_CONFIG_WRAPPERS[_mt] = llava_original.text_config
TEXT_WRAPPERS.update({"llava_qwen": None, "llava_llama": None, "llava_mistral": None})
VISION_COUNTED.update({"llava": llava_original.llava_vision, "llava_qwen": llava_original.llava_original_vision,
                       "llava_llama": llava_original.llava_original_vision,
                       "llava_mistral": llava_original.llava_original_vision})
# AIDC-AI Ovis's hub remote-code format for Ovis1.5 / Ovis1.6 / Ovis2 (model_type ovis), refused by name
_OVIS_WHY = ("its visual tokenizer is not modelled: a SigLIP / CLIP / AIMv2 backbone (visual_tokenizer_config."
             "backbone_config) whose stored layers depend on each release's hub code (Ovis2's AIMv2 keeps "
             "trunk.post_trunk_norm in the checkpoint though vLLM drops it; whether SigLIP's pooling head is stored "
             "is unknown), a head Linear(backbone hidden x hidden_stride^2, vocab_size - 5) + LayerNorm and the vte "
             "table, around an llm_config (Qwen2 / Gemma2 / Llama); no published config.json and safetensors index "
             "were at hand to check those shapes exactly (Ovis2 in transformers' format is model_type ovis2; "
             "Ovis2.5, with a vit_config, is model_type ovis2_5)")
REFUSED["ovis"] = _refused("AIDC-AI Ovis", _OVIS_WHY)
# InternLM-XComposer2 / 2-4KHD / 2.5 (remote code, modeling_internlm_xcomposer2.py): flat InternLM2 fields that the
# generic decoder read as a Llama, missing the CLIP tower and projector and the Partial-LoRA matrices
REFUSED["internlmxcomposer2"] = _refused(
    "InternLM-XComposer2", "beside its InternLM2 language model (the flat fields) the checkpoint holds the CLIP ViT "
    "and MLP projector the remote code builds from vision_tower / vision_projector, and a Partial-LoRA pair (Plora_A: "
    "in x lora_r, Plora_B: lora_r x out) beside every attention and MLP linear (PLoRA, applied to image tokens), "
    "none of which is modelled; counting the language model alone would fall short of the checkpoint")
# AIDC-AI Ovis2.5 (remote code, analysis/families/ovis_remote.py): SigLIP2-NaViT visual tokenizer + head + vte around
# llm_config built as Qwen3Config (tied by its own flag)
from . import ovis_remote  # noqa: E402
LLM_CONFIG_WRAPPERS["ovis2_5"] = ovis_remote.ovis2_5_text_config  # its tower: onevision15_ovis25.ovis2_5_vision (below)
# Mistral Large 4: Mistral 3's wrapper (Pixtral tower, merger, projector; its own default tower), the wrapper's flag ties
TEXT_WRAPPERS["mistral_large4"] = "mistral_large4_text"
VISION_COUNTED["mistral_large4"] = mistral_large4.mistral_large4_vision
WRAPPER_TIE["mistral_large4"] = "wrapper"
#: The language model's model_type a wrapper's config renames on load (their __post_init__): wrapper -> {old: new}.
TEXT_TYPE_RENAMES: dict[str, dict[str, str]] = {"exaone4_5": {"exaone4_5_text": "exaone4"}}
#: Top-level model_types that published checkpoints carry for a family registered under another name: old -> (new,
#: whose name it is). DeepSeek-V4's release artifacts and SGLang's checkpoints (sgl-project/DeepSeek-V4-*-FP8) say
#: "deepseek_ref" beside architectures DeepseekV4ForCausalLM: SGLang's DeepSeekV4Config advertises that model_type,
#: vLLM 0.24 serves it as DeepSeek-V4 (its deepseek_v4 models), and aiconfigurator / miles rewrite it to deepseek_v4
#: for TensorRT-LLM's and transformers' classes; before this table the generic decoder refused it ("n_shared_experts
#: set, but model_type 'deepseek_ref' is not a known family").
MODEL_TYPE_RENAMES: dict[str, tuple[str, str]] = {
    "deepseek_ref": ("deepseek_v4", "DeepSeek-V4's release / SGLang name for DeepseekV4ForCausalLM")}

# OCR wrappers whose towers are counted (analysis/families/ocr_vl.py, analysis/vision.py). PaddleOCR-VL's language
# model: ERNIE 4.5's dense block (use_bias on every projection, head_dim 128, tied by default) with half-split RoPE
# (its M-RoPE; text-only positions make it plain RoPE), not ERNIE 4.5's interleaved pairs
REGISTRY["paddleocr_vl_text"] = Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", tie_default=True,
                                       head_dim_default=128, windows="none")
TEXT_WRAPPERS.update({"paddleocr_vl": "paddleocr_vl_text", "lighton_ocr": "qwen3", "got_ocr2": "qwen2"})
VISION_COUNTED.update({
    "paddleocr_vl": ocr_vl.paddleocr_vl_vision,  # SigLIP tower (no head) + LayerNorm / two-Linear projector
    "lighton_ocr": vision.lighton_ocr_vision,  # Pixtral tower + Mistral 3's merger, bias-free linear_1 / linear_2
    "glm_ocr": vision.glm_ocr_vision,  # GLM-4.xV-shaped tower with q/k norms, biased MLP, wider merger
    "got_ocr2": ocr_vl.got_ocr2_vision,  # SAM ViT and neck + two stride-2 convs and a Linear
    "pp_chart2table": ocr_vl.pp_chart2table_vision,  # PP-Chart2Table: GOT-OCR 2.0's model, its own config classes
})
TEXT_WRAPPERS["pp_chart2table"] = "qwen2"
#: a flat PaddleOCR-VL config: PaddleOCRVLConfig builds text_config from the other keys, but tie_word_embeddings is
#: its own field, so the text_config keeps its class default (true) and the wrapper then ties ("either")
FLAT_TEXT_WRAPPERS = FLAT_TEXT_WRAPPERS | {"paddleocr_vl"}
FLAT_TEXT_FIXED: dict[str, dict] = {"paddleocr_vl": {"tie_word_embeddings": True}}
WRAPPER_TIE.update({"paddleocr_vl": "either", "got_ocr2": "wrapper", "pp_chart2table": "wrapper"})
# BLIP-2 / InstructBLIP: ViT + Q-Former + language_projection around text_config's language model (OPT by default)
TEXT_WRAPPERS.update({"blip-2": "opt", "instructblip": "opt"})
VISION_COUNTED.update({"blip-2": ocr_vl.blip2_vision, "instructblip": ocr_vl.instructblip_vision})
TEXT_WRAPPERS["instructblipvideo"] = "opt"  # InstructBLIP-Video: InstructBLIP's model, its own config classes
VISION_COUNTED["instructblipvideo"] = ocr_vl.instructblipvideo_vision
#: Wrappers refused by the model_type of their language model: wrapper -> {text model_type: why}. BLIP-2 and
#: InstructBLIP build AutoModelForSeq2SeqLM for a non-causal text_config (Flan-T5 checkpoints).
_ENC_DEC = "an encoder-decoder language model (AutoModelForSeq2SeqLM); planner analyses decoder-only language models"
WRAPPER_REFUSED_TEXT: dict[str, dict[str, str]] = {
    w: {t: _ENC_DEC for t in ("t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus", "switch_transformers")}
    for w in ("blip-2", "instructblip", "instructblipvideo")}

# Remote-code VLMs around a DeepSeek MoE language model (analysis/families/remote_vl.py; vLLM kimi_vl.py, moonvit.py,
# deepseek_vl2.py): the language model read as vLLM reads it (transformers' DeepseekV2Config, its layout by
# topk_method / use_mla), the MoonViT / SigLIP towers and projectors counted
# IDEFICS v1: a flat config, LLaMA + gated cross-attention blocks (ModelSpec.cross_attention, style "idefics"), its
# CLIP tower and perceiver resampler in ModelSpec.vision (analysis/families/idefics_v1.py)
REGISTRY["idefics"] = idefics_v1.build
# GIT: a flat config, BERT's post-LayerNorm blocks made causal + CLIP's ViT and the visual projection in
# ModelSpec.vision (analysis/families/git.py)
REGISTRY["git"] = git.build
# Chameleon: a flat config, Llama + per-head q/k LayerNorms (swin_norm: post-norms), its VQ-VAE image tokenizer in
# ModelSpec.vision (analysis/families/chameleon.py)
from . import chameleon  # noqa: E402
REGISTRY["chameleon"] = chameleon.build
# HunYuan-VL / HunyuanOCR: Hunyuan dense's language model (head_dim required) + its ViT and conv patch merger
from . import hunyuan_vl  # noqa: E402
REGISTRY["hunyuan_vl_text"] = hunyuan_vl.build_text
TEXT_WRAPPERS["hunyuan_vl"] = "hunyuan_vl_text"
VISION_COUNTED["hunyuan_vl"] = hunyuan_vl.hunyuan_vl_vision
WRAPPER_TIE["hunyuan_vl"] = "either"  # HunYuanVLConfig.__post_init__: tied when the text_config's flag is set
FLAT_TEXT_WRAPPERS = FLAT_TEXT_WRAPPERS | {"hunyuan_vl"}  # HunYuanVLConfig: text fields beside vision_config
# its own tie_word_embeddings stays the wrapper's: the popped text_config keeps the class default (true), which ties
FLAT_TEXT_FIXED["hunyuan_vl"] = {"tie_word_embeddings": True}
# GLM-Image: GLM-4-0414's sandwich block with a vision_vocab_size lm_head (never tied) + its ViT and VQ codebook
from . import glm_image  # noqa: E402
REGISTRY["glm_image_text"] = replace(_GLM4, qkv_bias="attention_bias", bias_default=True, head_dim_default=None,
                                     rotary_default=1.0, output_vocab_key="vision_vocab_size")
TEXT_WRAPPERS["glm_image"] = "glm_image_text"
VISION_COUNTED["glm_image"] = glm_image.glm_image_towers
WRAPPER_TIE["glm_image"] = "never"  # GlmImageForConditionalGeneration._tied_weights_keys = {}
# GLM-5.3-Flash (glm5_next): KDA / k-pool DSA layers in mHC streams, GLM-5's MoE, GLM-OCR's tower (families/glm5_next.py)
from . import glm5_next  # noqa: E402
REGISTRY["glm5_next_text"] = glm5_next.build
TEXT_WRAPPERS["glm5_next"] = "glm5_next_text"
VISION_COUNTED["glm5_next"] = glm5_next.glm5_next_vision
WRAPPER_TIE["glm5_next"] = "wrapper"  # Glm5NextConfig.tie_word_embeddings (default false) ties lm_head
FLAT_TEXT_WRAPPERS = FLAT_TEXT_WRAPPERS | {"glm5_next"}  # Glm5NextConfig: top-level text fields become text_config
# Granite 4 Vision's language model alone: transformers builds no causal LM from it (Granite4VisionTextModel has no
# lm_head and no Auto class); the granite4_vision wrapper reads its text_config (analysis/families/granite4_vision.py)
REFUSED["granite4_vision_text"] = _refused("Granite 4 Vision's language model", "transformers builds it only inside "
                                           "its granite4_vision wrapper (Granite4VisionTextModel: no lm_head, no "
                                           "causal-LM class); analyse the granite4_vision config.json")
# Kimi K3 (remote code; SGLang kimi_k3.py): MoonViT-3D + patchmergerv2 around a kimi_linear text_config whose K3
# additions (attention residuals, latent MoE, output gates) hybrid.build_kimi_linear hands to kimi_k3.build_text
from . import kimi_k3  # noqa: E402
TEXT_WRAPPERS["kimi_k3"] = "kimi_linear"
VISION_COUNTED["kimi_k3"] = kimi_k3.kimi_k3_vision
WRAPPER_TIE["kimi_k3"] = "wrapper"  # KimiK3Config.tie_word_embeddings (false in the release)
# Kimi K3's DSpark draft (K3DSparkModel, a checkpoint of its own; vLLM's kimi_k3 dspark_mla.py): refused by name
REFUSED["k3_dspark"] = _refused(
    "Kimi K3 DSpark draft", "a block-parallel speculative drafter that reads the target's hidden states at "
    "target_layer_ids (a context projection over them, MLA draft layers, a Markov head, noise / mask tokens), not a "
    "causal LM of its own; its shapes are not modelled. Analyse the target, moonshotai/Kimi-K3 (model_type kimi_k3)")
TEXT_WRAPPERS.update({"kimi_vl": "deepseek_v2", "deepseek_vl_v2": "deepseek_v2"})
VISION_COUNTED.update({"kimi_vl": remote_vl.kimi_vl_vision,  # MoonViT (fused wqkv) + pre_norm / linear_1 / linear_2
                       "deepseek_vl_v2": remote_vl.deepseek_vl2_vision})  # SigLIP-so400m + attn_pool, MLP, 2 vectors
LLM_CONFIG_WRAPPERS["deepseek_vl_v2"] = remote_vl.deepseek_vl2_text_config  # language_config
#: Wrappers whose config class rebuilds text_config as another class: model_type -> (top-level config, where) ->
#: the text_config to read (Kimi-VL: DeepseekV2Config, whatever text_config.model_type says)
TEXT_CONFIG_REBUILDS: dict[str, Callable[[dict, str], dict]] = {"kimi_vl": remote_vl.kimi_vl_text_config}
# Voxtral (analysis/families/voxtral.py): Whisper-style audio tower + two-Linear projector + Llama (VoxtralConfig's
# text defaults laid under text_config); lm_head never tied (no _tied_weights_keys)
TEXT_WRAPPERS["voxtral"] = "llama"
TEXT_CONFIG_REBUILDS["voxtral"] = voxtral.voxtral_text_config
VISION_COUNTED["voxtral"] = voxtral.voxtral_towers
WRAPPER_TIE["voxtral"] = "never"
# Voxtral Realtime (analysis/families/voxtral_realtime.py): causal streaming encoder + two-Linear projector + Mistral
# with a per-layer ada_rms_norm of the delay-time embedding; lm_head tied by the wrapper's flag (set in the rebuild)
from . import voxtral_realtime  # noqa: E402
REGISTRY["voxtral_realtime_text"] = voxtral_realtime.build_text
TEXT_WRAPPERS["voxtral_realtime"] = "voxtral_realtime_text"
TEXT_CONFIG_REBUILDS["voxtral_realtime"] = voxtral_realtime.voxtral_realtime_text_config
VISION_COUNTED["voxtral_realtime"] = voxtral_realtime.voxtral_realtime_towers
# masked-diffusion LMs (remote code): blocks of tokens decoded by iterative denoising with bidirectional attention, not
# one causal token per step; read generically they were Llama-shaped (LLaDA2.0-mini: 16.97B, every layer MoE and
# sliding, for Ling 2.0's 16.26B) and traced as autoregressive decoders
REFUSED["llada2_moe"] = _refused(
    "LLaDA2 (inclusionAI LLaDA2.0 / 2.1, a masked-diffusion LM)",
    "it decodes blocks of tokens by iterative denoising (SGLang's dLLM mode: blocks of 32, mask token 156895), each "
    "step a forward over the whole block with bidirectional attention inside it (LLaDA2MoeAttention.is_causal False; "
    "SGLang's ENCODER_ONLY attention) over the cached K/V of the blocks already committed; the decode figures trace, "
    "serve, plan and verify give assume one causal token per step and do not describe that. Its transformer body is "
    "Ling 2.0's: the same config.json with model_type bailing_moe gives its exact parameters and the K/V bytes each "
    "committed token holds")
REFUSED["llada"] = _refused(
    "LLaDA / LLaDA-MoE (GSAI-ML, inclusionAI; a masked-diffusion LM)",
    "it generates by iteratively unmasking a block of masked positions, every step a forward with bidirectional "
    "(non-causal) attention over the whole sequence, and its reference sampler keeps no K/V cache; the decode figures "
    "trace, serve, plan and verify give assume one causal token per step with a K/V cache and do not describe that "
    "(nor are LLaDA-8B's OLMo-style fields, d_model / n_layers / mlp_hidden_size, or LLaDA-MoE's "
    "dense_intermediate_size / expert_intermediate_size read)")
REFUSED["diffusion_gemma"] = _refused(
    "DiffusionGemma (a block-diffusion LM)",
    "DiffusionGemmaForBlockDiffusion generates by denoising blocks of masked tokens: an encoder over the prompt and "
    "the committed blocks (its K/V cached) and a decoder whose attention is bidirectional over the block being "
    "denoised (DiffusionGemmaDecoderTextAttention.is_causal False), several forwards per block; the decode figures "
    "trace, serve, plan and verify give assume one causal token per step and do not describe that (nor are its "
    "encoder / decoder stacks, routed experts and clippable linears read)")
# session 27 audit (vLLM / llama.cpp registries): two more masked-diffusion LMs whose configs are a Qwen decoder's, so
# a generic read gave autoregressive figures, and Cheers, read as its Qwen2 text_config alone
REFUSED["Dream"] = _refused(
    "Dream / DiffuCoder (DreamModel, a masked-diffusion LM)",
    "it generates by iteratively denoising masked positions (mask_token_id), every step a forward with bidirectional "
    "attention over the whole sequence (llama.cpp converts it with causal attention off) and no K/V cache; the decode "
    "figures trace, serve, plan and verify give assume one causal token per step and do not describe that. Its body "
    "is Qwen2's: the same config.json with model_type qwen2 gives its exact parameters")
REFUSED["rnd1"] = _refused(
    "RND1 (Radical Numerics, a masked-diffusion LM)",
    "RND1Config forces is_causal False and use_cache False: it generates by num_diffusion_steps denoising passes with "
    "bidirectional attention and no K/V cache, which the decode figures trace, serve, plan and verify give (one "
    "causal token per step) do not describe. Its body is Qwen3-MoE's: the same config.json with model_type qwen3_moe "
    "gives its exact parameters")
REFUSED["umm"] = _refused(
    "Cheers (CheersForConditionalGeneration, a unified understanding / generation model)",
    "an image reaches its Qwen2 language model through a convolutional VAE encoder, the VAE's decoder "
    "(vae_decoder_projector: latents back to pixels), a SigLIP tower (vision_representation_config) and a 2x2 "
    "pixel-unshuffle projector (und_projector); the VAE's ResNet / GroupNorm stacks (vae_encoder_config, "
    "vae_decoder_config) are not modelled, and the checkpoint also holds the image-generation modules (gen_projector, "
    "hi_gate, hi_projector, time_embed) vLLM skips; its text_config alone would undercount the model")
# llama.cpp-registered architectures whose configs a generic read took for Llama (rwkv6qwen2, plm) or failed on with a
# misleading "intermediate_size missing" (codeshell)
REFUSED["rwkv6qwen2"] = _refused(
    "QRWKV6 (RWKV6Qwen2ForCausalLM, Recursal / Featherless)",
    "every layer replaces Qwen2's attention with RWKV-6 time mixing (data-dependent decay and token-shift LoRAs of "
    "lora_rank_decay / lora_rank_tokenshift, grouped key / value heads; llama.cpp's RWKV6QWEN2): a fixed-size "
    "recurrent state per layer and no K/V cache, whose shapes planner does not model; read as a Llama it would count "
    "attention and a K/V cache the model does not have")
REFUSED["plm"] = _refused(
    "PLM (PLMForCausalLM, PLM-Team PLM-1.8B)",
    "its attention is multi-head latent attention (kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim: a "
    "compressed latent K/V cache) and its MLP a non-gated ReLU² (hidden_act relu2: up, then down), a combination "
    "planner's MLA builders (DeepSeek's gated MLPs) do not build; read as a Llama it would count full K/V heads")
REFUSED["codeshell"] = _refused(
    "CodeShell (CodeShellForCausalLM, WisdomShell)",
    "its block is GPT-BigCode's (biased LayerNorms, a fused c_attn, a non-gated GELU MLP of 4 x n_embd when n_inner "
    "is null) with num_query_groups grouped K/V heads and RoPE, a combination planner's GPT-2 / BigCode builders "
    "(multi-head or multi-query, learned positions) do not build")
# Ultravox (remote code; analysis/families/ultravox.py): Whisper encoder + stacked-frame projector + text_config's
# language model (refused when only text_model_id names it); lm_head ties as text_config says
TEXT_WRAPPERS["ultravox"] = "llama"
TEXT_CONFIG_REBUILDS["ultravox"] = ultravox.ultravox_text_config
VISION_COUNTED["ultravox"] = ultravox.ultravox_towers
# Qwen2-Audio / Granite Speech (analysis/families/audio_llm.py): Whisper encoder + Linear projector + Qwen2 (lm_head
# never tied); conformer CTC encoder + windowed Q-Former projector + Granite (tied by the wrapper's own flag)
from . import audio_llm  # noqa: E402
TEXT_WRAPPERS.update({"qwen2_audio": "qwen2", "granite_speech": "granite"})
TEXT_CONFIG_REBUILDS.update({"qwen2_audio": audio_llm.qwen2_audio_text_config,
                             "granite_speech": audio_llm.granite_speech_text_config})
VISION_COUNTED.update({"qwen2_audio": audio_llm.qwen2_audio_towers, "granite_speech": audio_llm.granite_speech_towers})
WRAPPER_TIE["qwen2_audio"] = "never"
# Granite 4 Vision (analysis/families/granite4_vision.py): CLIP / SigLIP tower + image_newline + window Q-Former
# downsamplers (deepstack) + Granite's dense block (text_config read as Granite4VisionTextConfig, GraniteConfig's
# defaults, whatever its model_type); lm_head tied by the wrapper's own flag
from . import granite4_vision  # noqa: E402
TEXT_WRAPPERS["granite4_vision"] = "granite"
TEXT_CONFIG_REBUILDS["granite4_vision"] = granite4_vision.granite4_vision_text_config
VISION_COUNTED["granite4_vision"] = granite4_vision.granite4_vision_towers
WRAPPER_TIE["granite4_vision"] = "wrapper"
# Audio Flamingo 3 / Music Flamingo: Whisper-shaped encoder + two-Linear projector + Qwen2 (never tied); GLM-ASR: RoPE
# encoder + two-Linear projector + Llama (GlmAsrConfig's text defaults laid under; tied by the wrapper's own flag)
TEXT_WRAPPERS.update({"audioflamingo3": "qwen2", "musicflamingo": "qwen2", "glmasr": "llama"})
TEXT_CONFIG_REBUILDS.update({"audioflamingo3": audio_llm.flamingo_text_config,
                             "musicflamingo": audio_llm.flamingo_text_config, "glmasr": audio_llm.glmasr_text_config})
VISION_COUNTED.update({"audioflamingo3": audio_llm.audioflamingo3_towers,
                       "musicflamingo": audio_llm.musicflamingo_towers, "glmasr": audio_llm.glmasr_towers})
WRAPPER_TIE.update({"audioflamingo3": "never", "musicflamingo": "never"})
# Qwen3-ASR: Qwen3-Omni-style conv2d / Whisper-block encoder + two-Linear projector + Qwen3 (tied by the wrapper's flag)
TEXT_WRAPPERS["qwen3_asr"] = "qwen3"
TEXT_CONFIG_REBUILDS["qwen3_asr"] = audio_llm.qwen3_asr_text_config
VISION_COUNTED["qwen3_asr"] = audio_llm.qwen3_asr_towers
# VibeVoice-ASR: two ConvNeXt-1d tokenizer encoders (acoustic, semantic) + their projectors + Qwen2 (never tied)
TEXT_WRAPPERS["vibevoice_asr"] = "qwen2"
TEXT_CONFIG_REBUILDS["vibevoice_asr"] = audio_llm.vibevoice_asr_text_config
VISION_COUNTED["vibevoice_asr"] = audio_llm.vibevoice_asr_towers
# transformers 5.25's LLaVA-OneVision-1.5 (RICE ViT + merger) and Ovis2.5 (NaViT SigLIP + visual tokenizer + visual
# embedding table; the hub's remote-code ovis2_5 format, llm_config / vit_config, told apart by those fields), each
# lm_head tied by the wrapper's flag alone (analysis/families/onevision15_ovis25.py); pi0.5 refused by name
from . import onevision15_ovis25  # noqa: E402
TEXT_WRAPPERS.update({"llava_onevision1_5": "qwen3", "ovis2_5": "qwen3"})
VISION_COUNTED.update({"llava_onevision1_5": onevision15_ovis25.llava_onevision15_vision,
                       "ovis2_5": onevision15_ovis25.ovis2_5_vision})
WRAPPER_TIE["llava_onevision1_5"] = "wrapper"
TEXT_CONFIG_REBUILDS["ovis2_5"] = onevision15_ovis25.ovis2_5_text_config
REFUSED["pi05"] = _refused("Physical Intelligence pi0.5", onevision15_ovis25.PI05_WHY)
REFUSED["pi0"] = _refused("Physical Intelligence pi0", "it is a vision-language-action policy, not a token-by-token "
                           "language model: PI0ForConditionalGeneration has no generate(); sample_actions encodes "
                           "the images and prompt once with PaliGemma (vlm_config) into a prefix KV cache, then runs "
                           "the Gemma action expert (dit_config) over the robot state and a chunk of chunk_size "
                           "noisy actions for num_inference_steps flow-matching steps, which planner's decode model "
                           "(one token per step through one decoder) cannot price")
REFUSED["llavaonevision1_5"] = _refused("LLaVA-OneVision-1.5 (lmms-lab remote code)",
                                       onevision15_ovis25.ONEVISION15_REMOTE_WHY)
# vLLM 0.28 image-text architectures refused by name (analysis/families/vlm_refusals2.py); OpenCUA: Qwen2.5-VL's tower
# (OpenCUAConfig builds Qwen2_5_VLVisionConfig) around a Qwen2 text_config
from . import vlm_refusals2  # noqa: E402
REFUSED["bagel"] = _refused("ByteDance BAGEL (Mixture-of-Transformers)", vlm_refusals2.BAGEL_WHY)
REFUSED["openvla"] = _refused("OpenVLA action policy", vlm_refusals2.OPENVLA_WHY)
REFUSED["nemotron_parse"] = _refused("NVIDIA Nemotron-Parse", vlm_refusals2.NEMOTRON_PARSE_WHY)
REFUSED["moondream1"] = _refused("moondream2 (HfMoondream)", vlm_refusals2.MOONDREAM_WHY)
REFUSED["moondream3"] = _refused("moondream3 (HfMoondream / Moondream3ForCausalLM)", vlm_refusals2.MOONDREAM_WHY)
REFUSED["openpangu_vl"] = _refused("Huawei openPangu-VL", vlm_refusals2.OPENPANGU_VL_WHY)
# StepFun Step3-VL-10B (step_robotics; vLLM's StepVLForConditionalGeneration): StepRoboticsConfig builds a Qwen3
# text_config and StepRoboticsVisionEncoderConfig, the perception-encoder tower Step-3.7 reads (same defaults, shapes)
TEXT_WRAPPERS["step_robotics"] = "qwen3"
VISION_COUNTED["step_robotics"] = step3p5.step3p7_vision
from . import bee  # noqa: E402
# Open-Bee Bee-8B: LLaVA-OneVision's tower and image_newline, Bee's LayerNorm-MLP projector (families/bee.py)
TEXT_WRAPPERS["bee"] = "qwen3"
VISION_COUNTED["bee"] = bee.bee_vision
TEXT_WRAPPERS["opencua"] = "qwen2"
VISION_COUNTED["opencua"] = vision.qwen2_5_vl_vision
# Emu3 (Emu3ForConditionalGeneration): emu3_text_model (above) + its VQ-VAE image tokenizer (model.vqmodel: encoder,
# decoder, codebook, quant convs; analysis/families/emu3.py); lm_head tied by the wrapper's flag alone (meta device)
from . import emu3  # noqa: E402
TEXT_WRAPPERS["emu3"] = "emu3_text_model"
TEXT_CONFIG_REBUILDS["emu3"] = emu3.emu3_text_config
VISION_COUNTED["emu3"] = emu3.emu3_vision
WRAPPER_TIE["emu3"] = "wrapper"
# VibeVoice TTS (analysis/families/vibevoice.py): Qwen2 (read as vibevoice_text: its row, a trace caveat) + acoustic
# tokenizer encoder / decoder, semantic encoder, two connectors, diffusion head; tied by text_config's flag
from . import vibevoice  # noqa: E402
REGISTRY["vibevoice_text"] = vibevoice.build_text
TEXT_WRAPPERS["vibevoice"] = "vibevoice_text"
TEXT_CONFIG_REBUILDS["vibevoice"] = vibevoice.vibevoice_text_config
VISION_COUNTED["vibevoice"] = vibevoice.vibevoice_towers
# Granite Speech Plus: Granite Speech's conformer + Q-Former (reading concatenated encoder layers) + Granite (tied by the
# wrapper's flag); OmniASR: wav2vec 2.0 encoder + Linear + Llama; Nemotron 3.5 Transcribe (nemo_speechlm): ASR encoder
# + Nemotron 3 Diarization + Linear + word timestamp head + Nemotron-H; those two never tied
TEXT_WRAPPERS.update({"granite_speech_plus": "granite", "omniasr": "llama", "nemo_speechlm": "nemotron_h"})
TEXT_CONFIG_REBUILDS.update({"granite_speech_plus": audio_llm.granite_speech_text_config,
                             "omniasr": audio_llm.omniasr_text_config,
                             "nemo_speechlm": audio_llm.nemo_speechlm_text_config})
VISION_COUNTED.update({"granite_speech_plus": audio_llm.granite_speech_plus_towers,
                       "omniasr": audio_llm.omniasr_towers, "nemo_speechlm": audio_llm.nemo_speechlm_towers})
WRAPPER_TIE.update({"omniasr": "never", "nemo_speechlm": "never"})
WRAPPER_TIE["vibevoice_asr"] = "never"
# MOSS-Transcribe-Diarize: Whisper encoder + merge-4 Linear / Linear / LayerNorm projector + Qwen3; Fun-ASR-Nano: SAN-M
# encoder + Linear pair and adaptor layers + Qwen3 (analysis/families/speech_asr.py; both tied by the wrapper's flag)
from . import speech_asr  # noqa: E402
TEXT_WRAPPERS.update({"moss_transcribe_diarize": "qwen3", "fun_asr_nano": "qwen3"})
TEXT_CONFIG_REBUILDS.update({"moss_transcribe_diarize": speech_asr.moss_text_config,
                             "fun_asr_nano": speech_asr.fun_asr_text_config})
VISION_COUNTED.update({"moss_transcribe_diarize": speech_asr.moss_towers, "fun_asr_nano": speech_asr.fun_asr_towers})
# dots.ocr (remote code; analysis/families/dots_ocr.py): a flat Qwen2 config + its own vision tower and merger
TEXT_WRAPPERS["dots_ocr"] = "qwen2"
VISION_COUNTED["dots_ocr"] = dots_ocr.dots_ocr_vision
FLAT_TEXT_WRAPPERS = FLAT_TEXT_WRAPPERS | {"dots_ocr"}
# Ai2 Molmo v1 (remote code, analysis/families/molmo.py): a flat config (MolmoE: the whole FullMolmoConfig), its
# CLIP ViT (23 layers), attention pooling, SwiGLU projector and pad_embed counted; the LM never tied (hub code)
REGISTRY["molmo_text"] = molmo.build_text
TEXT_WRAPPERS["molmo"] = "molmo_text"
VISION_COUNTED["molmo"] = molmo.molmo_vision
FLAT_TEXT_WRAPPERS = FLAT_TEXT_WRAPPERS | {"molmo"}
WRAPPER_TIE["molmo"] = "never"
# Kosmos-2 / Kosmos-2.5 (analysis/families/kosmos2.py): XGLM's decoder with biased sub-LayerNorms (inner_attn_ln,
# ffn_layernorm); CLIP (Kosmos-2) or Pix2Struct-style (Kosmos-2.5) tower + dense / latent_query / x_attn projection
from . import kosmos2  # noqa: E402
REGISTRY.update({"kosmos_2_text_model": kosmos2.build_text, "kosmos_2_5_text_model": kosmos2.build_text})
TEXT_WRAPPERS.update({"kosmos-2": "kosmos_2_text_model", "kosmos-2.5": "kosmos_2_5_text_model"})
VISION_COUNTED.update({"kosmos-2": kosmos2.kosmos2_vision, "kosmos-2.5": kosmos2.kosmos2_5_vision})
WRAPPER_TIE["kosmos-2"] = "either"  # tied when the wrapper's or the text_config's flag is set (meta device)
# text_config's own tie flag kept (Kosmos-2: "either" with the wrapper's; Kosmos-2.5: it alone ties lm_head)
TEXT_CONFIG_REBUILDS.update({"kosmos-2": kosmos2.text_config, "kosmos-2.5": kosmos2.text_config})
# PerceptionLM / FastVLM (analysis/families/timm_vlm.py): a timm tower behind TimmWrapperModel (Perception Encoder;
# FastViT MCi3 re-parameterised) + a two-Linear projector around Llama / Qwen2; PerceptionLM ties lm_head by its own
# flag when set, else text_config's (the rebuild); FastVLM by either flag
from . import timm_vlm  # noqa: E402
TEXT_WRAPPERS.update({"perception_lm": "llama", "fast_vlm": "qwen2"})
VISION_COUNTED.update({"perception_lm": timm_vlm.perception_lm_vision, "fast_vlm": timm_vlm.fast_vlm_vision})
TEXT_CONFIG_REBUILDS.update({"perception_lm": timm_vlm.perception_lm_text_config,
                             "fast_vlm": timm_vlm.fast_vlm_text_config})
WRAPPER_TIE["fast_vlm"] = "either"
# Ovis2 in transformers' format (analysis/families/ovis2.py): AIMv2 ViT + visual tokenizer head + visual embedding
# table around text_config's language model (Qwen2 by default); the wrapper's flag alone ties lm_head (meta device)
from . import ovis2  # noqa: E402
TEXT_WRAPPERS["ovis2"] = "qwen2"
VISION_COUNTED["ovis2"] = ovis2.ovis2_vision
WRAPPER_TIE["ovis2"] = "wrapper"
# HY-V4-VL (analysis/families/hy_v4_vl.py): Hy4-preview's block with interleaved M-RoPE + HunYuan-VL's tower and its
# own merger; Unlimited-OCR (analysis/families/unlimited_ocr.py): DeepSeek-MoE v1's decoder with R-SWA layers +
# SAM ViT-B / CLIP-L towers; both tie lm_head by the wrapper's flag alone (meta device)
from . import hy_v4_vl, unlimited_ocr  # noqa: E402
REGISTRY.update({"hy_v4_vl_text": hy_v4_vl.build_text, "unlimited_ocr_text": unlimited_ocr.build_text})
TEXT_WRAPPERS.update({"hy_v4_vl": "hy_v4_vl_text", "unlimited_ocr": "unlimited_ocr_text"})
VISION_COUNTED.update({"hy_v4_vl": hy_v4_vl.hy_v4_vl_vision, "unlimited_ocr": unlimited_ocr.unlimited_ocr_vision})
WRAPPER_TIE.update({"hy_v4_vl": "wrapper", "unlimited_ocr": "wrapper"})
TEXT_CONFIG_REBUILDS["unlimited_ocr"] = unlimited_ocr.text_config  # language_config + top-level sliding_window
# DeepSeek-OCR-2 in transformers' format (analysis/families/deepseek_ocr2.py): DeepSeek-MoE v1's decoder (full
# attention) + SAM ViT-B and DeepEncoder V2's Qwen2 encoder; lm_head tied by the wrapper's flag alone (meta device)
from . import deepseek_ocr2  # noqa: E402
REGISTRY["deepseek_ocr2_text"] = deepseek_ocr2.build_text
TEXT_WRAPPERS["deepseek_ocr2"] = "deepseek_ocr2_text"
VISION_COUNTED["deepseek_ocr2"] = deepseek_ocr2.deepseek_ocr2_vision
WRAPPER_TIE["deepseek_ocr2"] = "wrapper"
# InternVL-derived wrappers (analysis/families/intern_variants.py), through InternVL's own readers: Intern-S1 / -mini
# (interns1: the HF layout, an interns1_vision tower, text_config names its model_type, tied by text_config's flag);
# H2OVL-Mississippi (h2ovl_chat) and Skywork-R1V (skywork_chat): InternVLChatModel's vision_model + mlp1 + llm_config
from . import intern_variants  # noqa: E402
TEXT_WRAPPERS.update({"interns1": None, "h2ovl_chat": None, "skywork_chat": None})
VISION_COUNTED.update({"interns1": intern_variants.interns1_vision, "h2ovl_chat": internvl.internvl_chat_vision,
                       "skywork_chat": internvl.internvl_chat_vision})
LLM_CONFIG_WRAPPERS.update({"h2ovl_chat": intern_variants.h2ovl_text_config, "skywork_chat": internvl.chat_text_config})
TEXT_CONFIG_REBUILDS["interns1"] = intern_variants.interns1_text_config  # text_config's own tie flag or its default
# Intern-S1-Pro (interns1_pro, remote code; analysis/families/interns1_pro.py): Qwen3-VL-MoE's text model + FoPE
# coefficient buffers and a per-group router, Qwen3-VL's tower without DeepStack mergers; tied by text_config's flag
from . import interns1_pro  # noqa: E402
REGISTRY["interns1_pro_text"] = interns1_pro.build_text
TEXT_WRAPPERS["interns1_pro"] = "interns1_pro_text"
VISION_COUNTED["interns1_pro"] = interns1_pro.interns1_pro_vision
# Ovis2.6, LLaVA-OneVision-2, Intern-S2-Preview / -Mobius, Kanana-V: refused by name (analysis/families/vl_refusals_s27.py)
from . import vl_refusals_s27  # noqa: E402
REFUSED.update({_mt: _refused(*_why) for _mt, _why in vl_refusals_s27.REFUSED_S27.items()})
# SGLang-registry audit (session 27): Nanbeige loop (a K/V per layer per pass) and Spark-X2.5 (Laguna's per-type RoPE,
# a sigmoid head gate) counted; DeepSeek-V4.1, LongCat-Flash-Pro / LongCat 2, GigaChat 3.5, IQuest Q1, BerryLM,
# SenseNova U1 refused by name (analysis/families/sglang_refusals_s27.py)
from . import nanbeige, spark2_5, sglang_refusals_s27  # noqa: E402
REGISTRY["nanbeige"] = nanbeige.build
REGISTRY["spark2_5"] = spark2_5.build
# NVIDIA LocateAnything: Kimi-VL's MoonViT, an InternVL-style mlp1, a Qwen2 text_config (analysis/families/locate_anything.py)
from . import locate_anything  # noqa: E402
TEXT_WRAPPERS["locateanything"] = "qwen2"
VISION_COUNTED["locateanything"] = locate_anything.vision
REFUSED.update({_mt: _refused(*_why) for _mt, _why in sglang_refusals_s27.REFUSED_SGLANG_S27.items()})
# Kwai Keye-VL (remote code: Keye-VL-8B-Preview, Keye-VL-1.5-8B), refused by name: the generic reading would count a
# flat Qwen3 config as a Llama-style decoder without its per-head q/k norms and without the vision tower
_KEYE_WHY = ("its vision side is not modelled: a SigLIP-400M-shaped NaViT tower with 2-D rotary positions and the "
             "projector of vLLM's keye.py / keye_vl1_5.py (1.5 adds slow-fast video encoding), around a flat Qwen3-8B "
             "language model; no published config.json and safetensors index were at hand to check those shapes "
             "exactly")
# the configs' model_types, as their config classes spell them (KeyeConfig.model_type "Keye", KeyeVL1_5Config's
# "KeyeVL1_5"; transformers' models/keye/configuration_keye.py), and lower-case spellings
for _mt, _name in (("Keye", "Kwai Keye-VL"), ("keye", "Kwai Keye-VL"), ("KeyeVL1_5", "Kwai Keye-VL-1.5"),
                   ("keyevl1_5", "Kwai Keye-VL-1.5"), ("keye_vl_1_5", "Kwai Keye-VL-1.5")):
    REFUSED[_mt] = _refused(_name, _KEYE_WHY)

# Xiaomi MiMo-V2.5 / V2.6 (mimo_v2, MiMoV2ForCausalLM; vLLM mimo_v2.py): the text block is MiMo-V2-Flash's read
# vLLM's way (swa_* head counts as given), but the checkpoints also hold a vision tower, an audio encoder and speech
# embeddings (vision_config / audio_config) and MTP layers that vLLM's class does not build: refused, not aliased
REFUSED["mimo_v2"] = _refused(
    "Xiaomi MiMo-V2.5 / V2.6", "its checkpoints hold, beside the MoE text decoder, a vision tower, an audio encoder "
    "and speech embeddings (vision_config, audio_config) and MTP layers (model.mtp.*), whose shapes the hub's "
    "modeling_mimo_v2.py and vLLM's mimo_v2_omni.py give (MiMoV2OmniForCausalLM, which vLLM picks for any such "
    "config) and planner does not model (vLLM's MiMoV2ForCausalLM loads the text decoder alone); the text decoder is not "
    "mimo_v2_flash's either: its sliding layers take swa_num_key_value_heads as given where transformers' "
    "MiMo-V2-Flash builds twice num_key_value_heads")

# Gemma 3n whole (analysis/families/gemma3n_towers.py): timm's MobileNet-V5 vision tower, the USM-style conformer audio
# encoder and the embed_vision / embed_audio embedders; the wrapper's flag alone ties lm_head (meta device)
from . import gemma3n_towers  # noqa: E402
VISION_COUNTED["gemma3n"] = gemma3n_towers.gemma3n_towers
WRAPPER_TIE["gemma3n"] = "wrapper"

# Muse Spark whole (analysis/families/muse_spark_towers.py): its windowed / full vision tower, vision adapter and
# projection and its convolutional audio tower; the language model is muse_spark_text (lm_head never tied)
from . import muse_spark_towers  # noqa: E402
TEXT_WRAPPERS["muse_spark"] = "muse_spark_text"
VISION_COUNTED["muse_spark"] = muse_spark_towers.muse_spark_towers
WRAPPER_TIE["muse_spark"] = "never"  # MuseSparkForConditionalGeneration declares no tied weights

# Qwen2.5-Omni whole (analysis/families/qwen25_omni.py): the thinker (its language model read as
# qwen2_5_omni_whole_text: Qwen2's row, a serving caveat; its towers) + talker + token2wav (DiT, BigVGAN), kind audio
from . import qwen25_omni  # noqa: E402
REGISTRY["qwen2_5_omni_whole_text"] = qwen25_omni.build_text
TEXT_WRAPPERS["qwen2_5_omni"] = "qwen2_5_omni_whole_text"
TEXT_CONFIG_REBUILDS["qwen2_5_omni"] = qwen25_omni.text_config
VISION_COUNTED["qwen2_5_omni"] = qwen25_omni.omni_towers

# Qwen3-Omni (analysis/families/qwen3_omni.py): the thinker's audio and vision towers (qwen3_omni_moe_thinker), and the
# whole checkpoint (qwen3_omni_moe): the thinker (its language model read as qwen3_omni_moe_thinker_lm: the
# qwen3_omni_moe_text row, a serving caveat; its towers) + talker + code2wav when enable_audio_output, kind audio
from . import qwen3_omni  # noqa: E402
VISION_COUNTED["qwen3_omni_moe_thinker"] = qwen3_omni.thinker_towers
REGISTRY["qwen3_omni_moe_thinker_lm"] = qwen3_omni.build_text
TEXT_WRAPPERS["qwen3_omni_moe"] = "qwen3_omni_moe_thinker_lm"
TEXT_CONFIG_REBUILDS["qwen3_omni_moe"] = qwen3_omni.text_config
VISION_COUNTED["qwen3_omni_moe"] = qwen3_omni.omni_towers
# Kyutai STT / Sesame CSM / Moshi (analysis/families/kyutai_mimi.py): Moshi's decoder (text + audio embeddings) or CSM's
# Llama backbone, the depth decoder (CSM, Moshi) and the Mimi codec as kind audio; CSM's depth decoder alone is refused
from . import kyutai_mimi  # noqa: E402
REGISTRY.update({"kyutai_speech_to_text": kyutai_mimi.build_stt, "csm": kyutai_mimi.build_csm,
                 "moshi": kyutai_mimi.build_moshi})
REFUSED["csm_depth_decoder_model"] = _refused(
    "Sesame CSM depth decoder", "CsmDepthDecoderForCausalLM is CSM's per-frame codebook decoder, not a model of its "
    "own: its first input is the backbone's last hidden state (projected by inputs_embeds_projector) and it runs "
    "num_codebooks - 1 steps per audio frame; pass the whole CSM config.json (model_type csm), which counts it")
# MiniMax-VL-01 (remote code): MiniMax-Text-01 + CLIP ViT (no post norm) + biased 2-Linear projector, image_newline
from . import minimax_vl  # noqa: E402
TEXT_WRAPPERS["minimax_vl_01"] = "minimax_text_01"
TEXT_CONFIG_REBUILDS["minimax_vl_01"] = minimax_vl.text_config
VISION_COUNTED["minimax_vl_01"] = minimax_vl.minimax_vl_01_vision
# remote-code types with nothing at hand to count them exactly from (the reasons: minimax_vl.REFUSED_REMOTE)
REFUSED.update({_mt: _refused(*_why) for _mt, _why in minimax_vl.REFUSED_REMOTE.items()})

#: language models read only as a wrapper's text_config (analysis.config refuses them at top level): what each is,
#: the whole config it belongs to, and the hint; their builders assume the wrapper's rebuilt text_config
WRAPPER_ONLY: dict[str, tuple[str, str, str]] = {
    "voxtral_realtime_text": ("Voxtral Realtime's language model, which transformers builds only inside "
                              "VoxtralRealtimeForConditionalGeneration (VoxtralRealtimeTextModel has no lm_head: the "
                              "head and its tie are the wrapper's)", "Voxtral Realtime",
                              "pass the Voxtral Realtime config.json (model_type voxtral_realtime)"),
    "vibevoice_text": ("VibeVoice's language model as planner reads it", "VibeVoice",
                       "pass the VibeVoice config.json (model_type vibevoice), or its text_config alone with "
                       "model_type qwen2"),
    "qwen2_5_omni_whole_text": ("Qwen2.5-Omni's thinker language model as planner reads it", "qwen2_5_omni",
                                "pass the Qwen2.5-Omni config.json (model_type qwen2_5_omni), or its thinker_config "
                                "with model_type qwen2_5_omni_thinker"),
    "qwen3_omni_moe_thinker_lm": ("Qwen3-Omni's thinker language model as planner reads it", "Qwen3-Omni",
                                  "pass the Qwen3-Omni config.json (model_type qwen3_omni_moe), or its thinker_config "
                                  "(model_type qwen3_omni_moe_thinker)"),
}

# transformers 5.24 model_types the generic Llama reading used to stand in for (tests/test_generic_read_audit.py):
# Higgs Audio v2 counted (analysis/families/higgs_audio.py); the others refused by name, the talker sub-configs as
# wrapper-only parts of the Qwen-Omni checkpoints that count them
from . import higgs_audio  # noqa: E402
REGISTRY["higgs_audio_v2"] = higgs_audio.build
_FLOW_TTS = ("it is a continuous-latent text-to-speech model, not a token-by-token LM over a vocabulary: each "
             "generated frame is a latent_dim audio latent sampled by a flow-matching MLP head (flow_head_config, run "
             "for several flow steps per frame) from the causal transformer's hidden state, and decoded by a separate "
             "audio codec; the flow head, its per-frame steps and the codec are not modelled")
REFUSED["pocket_tts"] = _refused("Kyutai Pocket TTS", _FLOW_TTS)
REFUSED["gradium_phonon_tts"] = _refused("Gradium Phonon TTS", _FLOW_TTS + " (nor its speaker-prompt projection and "
                                         "num_speakers / duration_delta conditions)")
_MUSICGEN = ("it is the decoder sub-config of {whole} (T5 text encoder + this decoder + EnCodec), whose published "
             "checkpoints (facebook/{repo}-*) are the whole config, an encoder-decoder planner does not analyse; the "
             "decoder itself is not Llama-shaped: sinusoidal positions, LayerNorms, a GELU fc1 / fc2 MLP, "
             "num_codebooks summed input embeddings and num_codebooks lm_heads (one per codebook){extra}")
REFUSED["musicgen_decoder"] = _refused("MusicGen decoder", _MUSICGEN.format(
    whole="MusicGen (model_type musicgen)", repo="musicgen",
    extra=", and a cross-attention (encoder_attn) over the T5 states in every layer"))
REFUSED["musicgen_melody_decoder"] = _refused("MusicGen Melody decoder", _MUSICGEN.format(
    whole="MusicGen Melody (model_type musicgen_melody)", repo="musicgen-melody",
    extra=", the T5 and chroma conditioning prepended to its sequence"))
_EVOLLA = ("it is a protein-language model, not a text decoder alone: a SaProt protein encoder "
           "(protein_encoder_config), a Perceiver sequence-compressor resampler (resampler_*), and a Llama-3 decoder "
           "whose every (num_hidden_layers / aligner_num_add_layers)-th layer adds a gated cross-attention adapter "
           "over the protein latents (EvollaSequenceAlignerCrossAttention); the encoder, resampler and those "
           "cross-attention layers are not modelled, so the generic reading would miss them")
REFUSED["evolla"] = _refused("Evolla", _EVOLLA)
REFUSED["EvollaModel"] = _refused("Evolla", _EVOLLA)  # transformers' CONFIG_MAPPING alias of evolla
REFUSED["blip_text_model"] = _refused(
    "BLIP text decoder", "it is BLIP's BERT-style text decoder (BlipTextLMHeadModel: post-LayerNorm layers, learned "
    "absolute positions, an embedding LayerNorm, a cross-attention over the ViT image features in every layer), built "
    "only inside BLIP's captioning / VQA models with their image tower; none of it is modelled")
REFUSED["vits"] = _refused(
    "VITS", "it is a non-autoregressive text-to-speech model (MMS-TTS): a text encoder, a stochastic duration "
    "predictor, a normalizing flow and a HiFi-GAN decoder produce the whole waveform in one pass, with no token-by-token "
    "decode, KV cache or vocabulary head to plan")
WRAPPER_ONLY["qwen2_5_omni_talker"] = (
    "Qwen2.5-Omni's talker (its speech-token decoder, fed by the thinker's hidden states through "
    "thinker_to_talker_proj), which transformers builds only inside Qwen2_5OmniForConditionalGeneration",
    "Qwen2.5-Omni", "pass the Qwen2.5-Omni config.json (model_type qwen2_5_omni): its talker is counted there")
WRAPPER_ONLY["qwen3_omni_moe_talker_code_predictor"] = (
    "Qwen3-Omni's talker code predictor (the small decoder that predicts the residual codebooks of each speech frame, "
    "num_code_groups - 1 embeddings and heads), which transformers builds only inside Qwen3-Omni's talker",
    "Qwen3-Omni", "pass the Qwen3-Omni config.json (model_type qwen3_omni_moe): its talker and code predictor are "
    "counted there")

#: wrappers whose checkpoint holds models the serving engines do not load, by tensor-name prefix: vLLM serves the
#: Qwen-Omni thinker alone (qwen2_5_omni_thinker.py / qwen3_omni_moe_thinker.py load_weights skip these prefixes),
#: so engine memory (hardware.engine.loaded_weights) leaves them out while the parameter total counts them
ENGINE_UNLOADED: dict[str, tuple[tuple[str, ...], str]] = {
    "qwen2_5_omni": (("talker.", "token2wav."), "vLLM serves it as Qwen2_5OmniThinkerForConditionalGeneration, "
                     "whose load_weights skips those prefixes"),
    "qwen3_omni_moe": (("talker.", "code2wav."), "vLLM serves it with qwen3_omni_moe_thinker.py, whose load_weights "
                       "skips those prefixes")}

#: Hub configs whose config class names no model_type (loaded through auto_map), by ``architectures[0]``: the
#: model_types that read them. One class may serve several families (CogVLM and CogVLM2 share CogVLMForCausalLM),
#: so the config is not guessed: the missing-model_type error names the choices.
MODEL_TYPES_BY_ARCHITECTURE: dict[str, str] = {
    "CogVLMForCausalLM": '"cogvlm" (CogVLM-17B: Vicuna-7B, MHA) or "cogvlm2" (CogVLM2-19B: Llama-3-8B, GQA)',
}

#: Checkpoints refused by ``architectures[0]`` whatever their model_type says: (title, reason). GroveMoE ships
#: Qwen3-MoE's config fields (its SGLang port types the config Qwen3MoeConfig; its transformers fork patches
#: modeling_qwen3_moe.py), so its model_type alone would read it as Qwen3-MoE without its adjugate experts.
_GROVE = ("GroveMoE, inclusionAI", "beside each layer's num_experts routed experts it holds num_experts / 2 adjugate "
          "experts (chunk_experts: SwiGLU MLPs of 128, one per pair of routed experts) run for every pair that holds "
          "a chosen expert and added at 0.05 (llama.cpp's GROVEMOE, SGLang's grovemoe.py), so the compute per token "
          "varies with the routing (its card: 3.14-3.28B active of 33B); read as Qwen3-MoE they would go uncounted")
REFUSED_ARCHITECTURES: dict[str, tuple[str, str]] = {"GroveMoeForCausalLM": _GROVE,
                                                    "modeling_grove_moe.GroveMoeForCausalLM": _GROVE}
# Fun-ASR-Nano: vLLM's FunASRProcessingInfo types the whole config Qwen3Config, so by model_type it reads as Qwen3
REFUSED_ARCHITECTURES["FunASRForConditionalGeneration"] = (
    "Fun-ASR-Nano, FunAudioLLM", "its config carries the Qwen3 decoder's fields (vLLM's funasr.py reads it as a "
    "Qwen3Config), but the checkpoint also holds the speech encoder and its adaptor (audio_encoder, audio_adaptor: "
    "fbank features to decoder-width embeddings) whose shapes those fields do not give; by model_type alone only the "
    "decoder would be counted")
# MiMo-Audio: model_type qwen2 (analysis/families/sglang_refusals_s27.py)
REFUSED_ARCHITECTURES.update(sglang_refusals_s27.REFUSED_ARCHITECTURES_S27)

#: The smallest Llama-shaped config (hidden 64, 2 layers): calibration times eager dispatch with it.
TINY_DECODER = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "rope_theta": 10000.0}


def lookup(model_type: str) -> Family | None:
    return REGISTRY.get(model_type) or REFUSED.get(model_type)


def supported_model_types() -> list[str]:
    return sorted(set(REGISTRY) | set(TEXT_WRAPPERS))

# ERNIE-4.5-VL's original remote-code config (ernie4_5_moe_vl: flat, list-valued moe_num_experts /
# moe_intermediate_size, moe_layer_start_index, a DFNRope vision_config), translated into the transformers format
# (ernie4_5_vl_moe) as transformers' convert_ernie4_5_vl_moe_to_hf.py does, and built by the same builder
TEXT_WRAPPERS["ernie4_5_moe_vl"] = "ernie4_5_vl_moe_text"
TEXT_CONFIG_REBUILDS["ernie4_5_moe_vl"] = ernie4_5_vl_remote.text_config
VISION_COUNTED["ernie4_5_moe_vl"] = ernie4_5_vl_remote.remote_vision

# NVIDIA Nemotron 3 Omni in the hub's remote-code format (analysis/families/nemotron_omni_hub.py): model_type is the
# architecture name, llm_config / vision_config (timm args) / sound_config; vLLM serves all three with
# NemotronH_Nano_VL_V2 (RADIO + mlp1) plus its ProjectedParakeet sound encoder
from . import nemotron_omni_hub  # noqa: E402
for _mt in nemotron_omni_hub.MODEL_TYPES:
    TEXT_WRAPPERS[_mt] = None
    LLM_CONFIG_WRAPPERS[_mt] = nemotron_omni_hub.text_config
    VISION_COUNTED[_mt] = nemotron_omni_hub.towers
# Audio models vLLM registers whose shapes planner does not model (session 27 audit): refused by name rather than read
# as a generic decoder or as their text_config alone
REFUSED["kimi_audio"] = _refused(
    "Kimi-Audio, MoonshotKimiaForCausalLM", "beside its Qwen2 decoder it runs kimia_mimo_layers extra MIMO decoder "
    "layers (their own K/V, mimo_norm and mimo_output text head) branching off layer "
    "kimia_mimo_transformer_from_layer_index, a VQ adaptor from the Whisper features and a Whisper encoder, none of "
    "which the flat Qwen2 fields describe")
REFUSED["moss_audio"] = _refused(
    "MOSS-Audio, MossAudioModel", "its Whisper-style encoder attends within windows (encoder_attention_window_size) "
    "and injects intermediate encoder layers (deepstack_encoder_layer_indexes) into the first "
    "deepstack_num_inject_layers Qwen3 decoder layers through adapters (adapter_hidden_size); those shapes are given "
    "only by its remote modeling code and vLLM's moss_audio.py and are not modelled")
REFUSED["funaudiochat"] = _refused(
    "Fun-Audio-Chat, FunAudioChatForConditionalGeneration", "beside its Qwen3 text_config it holds a continuous audio "
    "encoder, a discrete audio-token encoder and an audio_invert_tower (a CRQ transformer that decodes speech tokens "
    "at every step), whose shapes and per-token compute are not modelled; the text model alone would be miscounted")
REFUSED["midashenglm"] = _refused(
    "MiDashengLM, MiDashengLMModel", "its Dasheng audio encoder (a ViT over mel patches with separable time / "
    "frequency position embeddings) and subsampling projector are not modelled; the text_config alone would "
    "undercount the checkpoint")
_AED = ("an attention encoder-decoder (a conformer encoder and a Transformer decoder with cross-attention to it); "
        "planner analyses decoder-only language models")
REFUSED["fireredasr2"] = _refused("FireRedASR2-AED, FireRedASR2ForConditionalGeneration", _AED)
REFUSED["cohere_asr"] = _refused("Cohere Transcribe, CohereAsrForConditionalGeneration", _AED.replace(
    "a conformer encoder", "a FastConformer (Parakeet) encoder"))
# Qwen3.8 (session 27 audit, analysis/families/qwen3_8.py): its published configs are Qwen3.5's model_types; the
# qwen3_8* names some engines give it are read as Qwen3.5 with a caveat, the tower as Qwen3.5's
from . import qwen3_8  # noqa: E402
REGISTRY.update(qwen3_8.REGISTRY)
TEXT_WRAPPERS.update(qwen3_8.TEXT_WRAPPERS)
VISION_COUNTED.update({_mt: vision.qwen3_5_vision for _mt in qwen3_8.TEXT_WRAPPERS})
WRAPPER_TIE.update({_mt: "wrapper" for _mt in qwen3_8.TEXT_WRAPPERS})
REFUSED["qwen3_8_qad"] = _refused("Qwen3.8-Flash-Next QAD export", qwen3_8.QAD_WHY)
# mlx-lm's Klear, afm7, lille-130m, youtu_llm and a top-level pixtral (analysis/families/s28a_mlx.py; its Phixtral
# builder is called by model_type phi-msft's owner, s28d_lmdeploy_mlc, for a config with num_local_experts > 1)
from . import s28a_mlx  # noqa: E402
REGISTRY.update(s28a_mlx.BUILDERS)
TEXT_WRAPPERS["pixtral"] = "llama"  # mlx-lm's pixtral.py: a top-level pixtral over a text_config, built as Llama
VISION_COUNTED["pixtral"] = s28a_mlx.pixtral_vision
WRAPPER_TIE["pixtral"] = "never"  # mlx-lm's ModelArgs sets text_config tie_word_embeddings False
# Refact (gpt_refact), RuGPT-3 XL (rugpt3xl); state-spaces' mamba_ssm configs without a model_type, read as
# transformers' mamba / mamba2 (analysis/families/s28a_legacy.py; config.py asks UNTYPED_CONFIGS first)
from . import s28a_legacy  # noqa: E402
REGISTRY.update(s28a_legacy.BUILDERS)
#: (detect, translate) for configs that name no model_type: translate(cfg, where) -> (config to read, caveat)
UNTYPED_CONFIGS = [(s28a_legacy.is_mamba_ssm, s28a_legacy.translate_mamba_ssm)]
# LFM2-Audio, MERaLiON-2 and ARWKV refused by name / by architecture (analysis/families/s28a_refusals.py)
from . import s28a_refusals  # noqa: E402
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s28a_refusals.REFUSED_S28A.items()})
REFUSED_ARCHITECTURES.update(s28a_refusals.REFUSED_ARCHITECTURES_S28A)
# SGLang-registry audit, second half (analysis/families/s28b_sglang.py): Sarashina2-Vision (Llama + Qwen2-VL's tower
# + a LayerNorm over the merged features), JetVLM (Jet-Nemotron + SigLIP + a space-to-depth projector), NVILA /
# NVILA-Lite and POINTS-1.5 counted; K2-VL, MOSS-VL, Whisper refused by name, MiMo-V2-ASR and SGLang's pooled-output
# classes (sequence classifiers, reward and embedding models) by architecture
from . import s28b_sglang  # noqa: E402
TEXT_WRAPPERS.update({"sarashina2_vision": "llama", "jet_vlm": "jet_nemotron"})
TEXT_CONFIG_REBUILDS["sarashina2_vision"] = s28b_sglang.sarashina2_vision_text_config
VISION_COUNTED.update({"sarashina2_vision": s28b_sglang.sarashina2_vision_towers,
                       "jet_vlm": s28b_sglang.jet_vlm_towers})
# NVILA / NVILA-Lite (SGLang's own NVILAConfig / NVILALiteConfig): Qwen2 + SigLIP + space-to-depth projectors
TEXT_WRAPPERS.update({"nvila": "qwen2", "nvila_lite": "qwen2"})
VISION_COUNTED.update({"nvila": s28b_sglang.nvila_towers, "nvila_lite": s28b_sglang.nvila_lite_towers})
# POINTS-1.5: Qwen2 in llm_config + Qwen2-VL's tower (its merger kept) + a second patch merger as vision_projector
TEXT_WRAPPERS["pointsv1.5_chat"] = None
LLM_CONFIG_WRAPPERS["pointsv1.5_chat"] = s28b_sglang.points_v15_text_config
VISION_COUNTED["pointsv1.5_chat"] = s28b_sglang.points_v15_towers
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s28b_sglang.REFUSED_S28B.items()})
REFUSED_ARCHITECTURES.update(s28b_sglang.REFUSED_ARCHITECTURES_S28B)
# TensorRT-LLM registry audit (analysis/families/s28c_trtllm.py): HyperCLOVAX-SEED-Vision (language_config +
# C-Abstractor) and Cosmos3's unified layout refused by model_type; speculative drafters (TRT-LLM's EAGLE / MTP
# names, MLA EAGLE-3 heads, DFlash, DSpark), which ship a Llama / Qwen3 / DeepSeek model_type, by architectures[0]
from . import s28c_trtllm  # noqa: E402
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s28c_trtllm.REFUSED_S28C.items()})
REFUSED_ARCHITECTURES.update(s28c_trtllm.REFUSED_ARCHITECTURES_S28C)
# LMDeploy / MLC-LLM registry audit (analysis/families/s28d_lmdeploy_mlc.py): MLC's phi-msft / mixformer-sequential
# (Phi's remote-code configs) read as transformers' Phi; reward models, EAGLE / Medusa drafts, MetaMoE and
# Intern-S1.1 refused
from . import s28d_lmdeploy_mlc  # noqa: E402
REGISTRY["phi-msft"] = REGISTRY["mixformer-sequential"] = s28d_lmdeploy_mlc.build_phi_msft
REFUSED.update({_mt: _refused(_t, _w) for _mt, (_t, _w) in s28d_lmdeploy_mlc.REFUSED_S28D.items()})
REFUSED_ARCHITECTURES.update(s28d_lmdeploy_mlc.REFUSED_ARCHITECTURES_S28D)
# mlx-vlm registry audit (analysis/families/s28e_mlxvlm.py): mlx-community's granite_vision / granite-vision configs
# read as transformers' LLaVA-NeXT (Granite Vision 3.x) and mlx-vlm's inkling as inkling_mm_model; Falcon-OCR,
# Jina-VLM, LLM-jp-VL and the flat LLaVA-repository formats of FastVLM, Bunny and nanoLLaVA refused by name
from . import s28e_mlxvlm  # noqa: E402
for _alias, _base in ([(_mt, "llava_next") for _mt in s28e_mlxvlm.LLAVA_NEXT_ALIASES]
                      + [(_mt, "inkling_mm_model") for _mt in s28e_mlxvlm.INKLING_ALIASES]):
    TEXT_WRAPPERS[_alias] = TEXT_WRAPPERS[_base]
    VISION_COUNTED[_alias] = VISION_COUNTED[_base]
    if _base in WRAPPER_TIE:
        WRAPPER_TIE[_alias] = WRAPPER_TIE[_base]
REFUSED.update({_mt: _refused(_t, _w) for _mt, (_t, _w) in s28e_mlxvlm.REFUSED_S28E.items()})
# mlx-vlm registry audit (analysis/families/s28f_mlx_vlm.py): Nemotron-Labs-Diffusion (+ its VLM), NemotronLabs
# VoiceChat, Moondream 2 in mlx-vlm's layout, Mage-VL, MolmoPoint, PLaMo 2.1 VL, Youtu-VL and ZAYA1-VL refused by name
from . import s28f_mlx_vlm  # noqa: E402
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s28f_mlx_vlm.REFUSED_S28F.items()})

# --- wave s29 E ---
# transformers 5.25's own causal LMs that ended in a generic-decoder error (analysis/families/s29e_tf525.py): gpt-sw3
# read as GPT-2 (its config class); CPM-Ant, Reformer, XLNet, XLM, TrOCR's decoder and BLT refused by name
from . import s29e_tf525  # noqa: E402
REGISTRY["gpt-sw3"] = s29e_tf525.build_gpt_sw3
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s29e_tf525.REFUSED_S29E.items()})
# --- wave s29 F ---
# vLLM / SGLang registries after vLLM 0.28.1 (analysis/families/s29f_vllm.py): Ling-3.0-flash-VL (Ling 3 + Qwen3-VL's
# tower with a parameter-free merger + a two-Linear projector), ZEDA's dynamic-MoE variants, DeepSeek-V4's vision
# tower and Audio Flamingo Next counted; AliceAI and Ming refused by name
from . import s29f_vllm  # noqa: E402
TEXT_WRAPPERS["bailing_moe_v3_vl"] = "bailing_hybrid"
VISION_COUNTED["bailing_moe_v3_vl"] = s29f_vllm.ling3_vl_towers
TEXT_CONFIG_REBUILDS["bailing_moe_v3_vl"] = s29f_vllm.ling3_vl_text_config
# ZEDA dynamic MoE (GLM-4.7-Flash / Qwen3-MoE / Qwen3-Next + zero-compute experts in the router)
REGISTRY.update({_mt: s29f_vllm.zeda_builder(_base) for _mt, _base in s29f_vllm.ZEDA_BASES.items()})
# Audio Flamingo Next in its pre-migration format (model_type audioflamingonext: transformers' AudioFlamingoNextConfig
# subclasses MusicFlamingoConfig, vLLM's audioflamingonext.py subclasses its MusicFlamingo model unchanged)
TEXT_WRAPPERS["audioflamingonext"] = TEXT_WRAPPERS["musicflamingo"]
TEXT_CONFIG_REBUILDS["audioflamingonext"] = TEXT_CONFIG_REBUILDS["musicflamingo"]
VISION_COUNTED["audioflamingonext"] = VISION_COUNTED["musicflamingo"]
WRAPPER_TIE["audioflamingonext"] = WRAPPER_TIE["musicflamingo"]
# DeepSeek-V4-Flash-Vision-Exp: a deepseek_v4 config whose flat vision_* fields add a ViT, an aligner and image sentinels
REGISTRY["deepseek_v4"] = s29f_vllm.deepseek_v4_with_vision(REGISTRY["deepseek_v4"])
# Yandex AliceAI (KDA + gated attention + block attention residuals, shapes in unpublished remote code) and Ming
# (bailingmm: Ling 2 + vision / audio / TTS modules) refused by name
REFUSED.update({_mt: _refused(*_why) for _mt, _why in s29f_vllm.REFUSED_S29F.items()})
