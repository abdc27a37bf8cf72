"""transformers' own causal-LM model_types that ended in a generic-decoder error (wave s29 E audit).

The audit was meant for the model_types transformers added after 5.25.0 (the installed release). None could be had:
PyPI's newest transformers is 5.25.0 itself, the GitHub snapshot of huggingface/transformers is too large to bring
here, and the stored copies of its files (models/auto/configuration_auto.py, setup.py) are older releases. So, as the
brief asks in that case, every transformers 5.25 model_type with a causal-LM class, and every image-text-to-text
wrapper whose text_config is one (247 in all: tests/test_cache_flops_parity.py's ``_entries``), was read from its
class-default config (``CONFIG_MAPPING[t]().to_dict()``) and planner's parameter total compared with transformers'
model built on the meta device (tests/test_audit_s29e.py). Of the 199 planner reads, 197 equal transformers exactly:
emu3 and moshi against the whole Emu3ForConditionalGeneration / MoshiForConditionalGeneration planner counts, DBRX,
HunYuan (dense, MoE), Ministral and Nemotron against their defaults completed where transformers' own model cannot be
built from them (a field left None); FastVLM's and Gemma 3n's default towers need timm, absent here. The 48 refused
are encoders and encoder-decoders refused as such, defaults whose field left None or inconsistent planner names
(deepseek_v2's num_experts_per_tok, dots1's n_routed_experts, glm4_moe's head_dim over 96 heads of 4096, lfm2_moe's
layer_types, ...), and six that, with gpt-sw3, ended
in an error about a generic Llama reading ("unknown model_type ..., read as a generic Llama-style decoder",
"unsupported model_type ... standard decoder fields are missing"):

- ``gpt-sw3`` (AI Sweden's GPT-SW3): transformers maps it to GPT2Config and GPT2LMHeadModel (its published
  checkpoints say model_type gpt2; the name is the tokenizer's): now read as gpt2, with GPT2Config's defaults.
- ``cpmant``, ``reformer``, ``xlnet``, ``xlm``, ``trocr``, ``blt``: refused by name (``REFUSED_S29E``), each for
  what transformers 5.25's modeling file does that planner's decoder does not (below).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import CORE_FIELDS, Fields
from ..spec import ModelSpec
from . import gpt2


def build_gpt_sw3(f: Fields, model_type: str) -> ModelSpec:
    """``gpt-sw3``: CONFIG_MAPPING_NAMES["gpt-sw3"] is GPT2Config and MODEL_FOR_CAUSAL_LM_MAPPING_NAMES["gpt-sw3"] is
    GPT2LMHeadModel, so it is GPT-2 (analysis/families/gpt2.py), an absent field meaning what GPT2Config's default
    says (tools/gen_family_defaults.py keys its table by model_type and has no row of its own for gpt-sw3)."""
    from ..family_defaults import FAMILY_DEFAULTS

    gpt2_defaults = {k: v for k, v in FAMILY_DEFAULTS.get("gpt2", {}).items() if k not in CORE_FIELDS}
    f.defaults = {**gpt2_defaults, **f.defaults}
    spec = gpt2.build_gpt2(f, model_type)
    return replace(spec, caveats=spec.caveats + (
        "model_type 'gpt-sw3' is transformers' name for GPT-SW3, whose config class is GPT2Config and model "
        "GPT2LMHeadModel: read as gpt2",))


#: model_type -> (title, reason): each from transformers 5.25's models/<name>/modeling_*.py
REFUSED_S29E: dict[str, tuple[str, str]] = {
    "cpmant": (
        "CPM-Ant, CpmAntForCausalLM",
        "its attention is not causal: CpmAntModel._prepare_attention_mask lets every token of the prompt attend to "
        "every other (context is all ones), so the K/V a decode step reads were computed bidirectionally over the "
        "prefill and a cached decode is not the causal decoder planner models; it also prepends prompt_length "
        "learned prompt tokens to every sequence (prompt_types x prompt_length extra embedding rows), adds a "
        "segment embedding (segment_types rows) and a bucketed segment / relative-position attention bias "
        "(segment_types^2 + position_bias_num_buckets rows per head) recomputed over the whole sequence each step"),
    "reformer": (
        "Reformer, ReformerModelWithLMHead",
        "its attention layers (attn_layers) are chunked local attention and LSH attention that hashes queries and "
        "keys into num_buckets buckets over num_hashes rounds, in reversible residual blocks with chunked "
        "feed-forward and axial position embeddings (axial_pos_shape); its cache (ReformerDynamicCache) holds "
        "each layer's past hidden states and LSH buckets, not K/V, and planner models none of these"),
    "xlnet": (
        "XLNet, XLNetLMHeadModel",
        "it is a permutation language model with two-stream relative attention (r_w_bias, r_r_bias, r_s_bias, "
        "segment embeddings seg_embed) and no K/V cache: generate() appends a dummy token, builds a permutation "
        "mask and reruns the last tokens against mems (cached hidden states, mem_len of them), which is not the "
        "causal decode step planner models"),
    "xlm": (
        "XLM, XLMWithLMHeadModel",
        "it is a cross-lingual masked / translation language model (bidirectional unless causal is set) with "
        "language embeddings (n_langs), post-LayerNorm blocks and an optional adaptive-softmax head (asm), and it "
        "has no K/V-cached decode: generate() appends mask_token_id and reruns the whole sequence every step"),
    "trocr": (
        "TrOCR's decoder, TrOCRForCausalLM",
        "it is the text decoder of a VisionEncoderDecoderModel: every layer cross-attends (encoder_attn, K/V of "
        "cross_attention_hidden_size) to the image encoder's output, an encoder its config does not describe "
        "(the vision-encoder-decoder wrapper's encoder config does), so neither the model nor its cache is a "
        "decoder-only causal LM"),
    "blt": (
        "Byte Latent Transformer, BltForCausalLM",
        "it reads bytes through hashed n-gram embeddings into a local encoder, groups them into patches whose "
        "boundaries an entropy model (patcher_config, patching_mode entropy, patching_threshold) sets at run time, "
        "runs its global transformer once per patch (without a cache) and a local decoder that cross-attends to "
        "the patches, so the work and cache per generated byte depend on the text, not on the config alone"),
}
