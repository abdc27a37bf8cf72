"""Regenerate analysis/family_defaults.py from the installed transformers.

Saved configs omit fields equal to their class's defaults (``to_diff_dict``), so a config.json
can lack ``num_attention_heads`` or ``tie_word_embeddings`` and still mean a definite model. This
script records, per ``model_type``, the raw dataclass defaults of the transformers config class
(scalars only; None means "derived from other fields" and is left out), and the model_types
it ships that are not generative models (``NOT_GENERATIVE``: encoders, towers, sub-configs), which the
generic decoder must not read.

    python tools/gen_family_defaults.py > analysis/family_defaults.py
"""

import dataclasses
import pprint
import sys

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

TYPES = sys.argv[1:] or [
    "llama", "mistral", "ministral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "gemma", "gemma2",
    "gemma3_text", "phi3", "phi", "olmo2", "olmo3", "olmoe", "deepseek_v2", "deepseek_v3", "gpt_oss", "llama4_text",
    "granite", "smollm3", "exaone4", "glm4_moe", "starcoder2", "gpt_neox", "falcon", "qwen3_next", "nemotron_h",
    "jamba", "falcon_h1", "falcon_mamba", "mamba", "mamba2", "bamba", "granitemoehybrid", "lfm2", "lfm3",
    "bailing_hybrid", "kimi_linear", "zamba2", "zamba",
    "siglip_vision_model", "cohere", "cohere2", "gpt2", "gpt_bigcode", "gptj", "gpt_neo", "bloom",
    "clip_vision_model", "pixtral", "llava", "mistral3",
    "llava_next", "llava_next_video", "llava_onevision", "video_llava", "vipllava",
    "minimax_m2", "stablelm", "phimoe",
    "qwen2_vl", "qwen2_vl_text", "qwen2_vl_vision", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_5_vl_vision",
    "qwen3_vl", "qwen3_vl_text", "qwen3_vl_vision", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3_vl_moe_vision",
    "mllama", "mllama_text_model", "mllama_vision_model",
    "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_vision",
    "opt", "dbrx", "mpt", "gemma3n", "gemma3n_text", "gemma3n_vision", "gemma3n_audio", "nemotron", "lfm2_moe",
    "gemma4", "gemma4_text", "gemma4_vision", "gemma4_audio",
    "gemma4_unified", "gemma4_unified_text", "gemma4_unified_vision", "gemma4_unified_audio",
    "arcee", "apertus", "apertus1p5_text", "olmo", "glm", "glm4", "seed_oss", "hyperclovax", "ernie4_5", "helium",
    "granitemoe", "granitemoeshared", "exaone", "internlm3", "vaultgemma", "cwm", "ministral3",
    "ernie4_5_moe", "dots1", "hunyuan_v1_moe", "hunyuan_v1_dense", "exaone_moe", "solar_open",
    "deepseek_v32", "glm_moe_dsa", "deepseek_v4", "hy_v4", "axk2", "mistral4", "mistral_large4_text",
    "mistral_large4",
    "granite_swa", "granitemoe_swa", "flex_olmo", "mellum", "minicpm3", "bitnet", "nanochat",
    "youtu", "jais2", "minimax", "olmo_hybrid", "kolibri1", "kolibri1_1", "ergo", "flint", "lara_mini",
    "codegen", "gpt_neox_japanese", "openai-gpt", "ctrl",
    # language models of multimodal wrappers, and the wrappers whose tie_word_embeddings default decides lm_head
    "glm4v_text", "glm_ocr_text", "glm4v_moe_text", "qwen3_omni_moe_text", "qwen2_5_omni_text",
    "glm4v_vision", "glm4v_moe_vision",
    "glm4v", "glm46v", "glmga", "glm_ocr", "glm4v_moe", "internvl", "internvl_vision", "deepseek_vl", "deepseek_vl_hybrid", "janus",
    "hyperclovax_vision_v2", "lighton_ocr", "minicpm_ocr", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker",
    "inkling_text", "inkling2_text", "inkling_mm_model", "inkling_vision", "inkling_audio", "inkling2",
    "inkling2_vision", "inkling2_loop_text", "inkling2_loop", "dory", "hrm_text",
    "glm4_moe_lite", "sarvam_mla", "axk1",
    "sarvam_moe", "laguna",
    "param2moe", "minicpm5_moe",
    "afmoe",
    "qwen4_exp", "qwen4_exp_text",
    "llava_onevision1_5", "llava_onevision1_5_vision", "ovis2_5", "ovis2_5_vision",
    "minimax_m3_vl_text", "minimax_m3_vl", "minimax_m3_vl_vision", "doge",
    "xlstm",
    "zaya",
    "recurrent_gemma",
    "rwkv",
    "deepseek_ocr2", "deepseek_ocr2_text", "deepseek_ocr2_sam_vision_model", "deepseek_ocr2_encoder",
    "jetmoe", "diffllama",
    "higgs_audio_v2",
    "mimo_v2_flash",
    "persimmon", "fuyu", "biogpt",
    "chameleon", "chameleon_vqgan", "hunyuan_vl", "hunyuan_vl_text", "hunyuan_vl_vision",
    "glm_image", "glm_image_text", "glm_image_vision", "glm_image_vqmodel",
    "hy_v3", "cohere2_moe",
    "glm5_next", "glm5_next_text", "glm5_next_vision",
    "modernbert-decoder", "beam", "muse_spark_text", "muse_spark", "muse_spark_vision", "muse_spark_audio",
    "iquestcoder", "emu3_text_model", "muse_glimmer", "muse_glimmer_text", "muse_glimmer_vision",
    "cohere_compass", "cohere_compass_text", "cohere_compass_vision",
    "longcat_flash",
    "dots3_note_text", "dots3_note", "dots3_note_vision_encoder", "dots3_note_audio_encoder",
    "aria_text", "aria", "idefics3_vision", "xglm",
    "ernie4_5_vl_moe", "ernie4_5_vl_moe_text", "ernie4_5_vl_moe_vision",
    "qwen2_5_omni_vision_encoder", "qwen2_5_omni_audio_encoder", "voxtral", "voxtral_encoder", "whisper",
    "minicpmv4_6", "minicpmv4_6_vision", "minicpmv4_7", "minicpmv4_7_vision", "minicpm_ocr_vision",
    "video_llama_3", "video_llama_3_vision", "qianfan_ocr", "qianfan_ocr_vision",
    "idefics2", "idefics2_vision", "idefics2_perceiver", "idefics3", "smolvlm", "smolvlm_vision",
    "granite_docling", "granite_docling_text", "granite_docling_vision",
    "siglip2_vision_model", "lfm2_vl", "lfm3_vl", "lfm3_vl_vision", "cohere2_vision", "aya_vision",
    "molmo2", "molmo2_text", "molmo2_vision", "molmo2_adapter",
    "paligemma", "shieldgemma2", "sam_vision_model", "janus_vision_model", "janus_vqgan",
    "cosmos3_edge", "cosmos3_edge_text", "cosmos3_edge_vision", "kimi_k25", "kimi_k25_vision", "llama4",
    "llama4_vision_model", "exaone4_5", "exaone4_5_vision", "cosmos3_omni", "nemotron_h_omni", "radio",
    "parakeet_encoder", "apertus1p5", "apertus1p5_vision_tokenizer", "wavtokenizer_encoder",
    "paddleocr_vl", "paddleocr_vl_text", "paddleocr_vl_vision", "glm_ocr_vision", "got_ocr2", "got_ocr2_vision",
    "blip-2", "blip_2_vision_model", "blip_2_qformer", "instructblip", "instructblip_vision_model",
    "instructblip_qformer", "instructblipvideo", "instructblipvideo_vision_model", "instructblipvideo_qformer",
    "pp_chart2table", "pp_chart2table_vision",
    "idefics", "idefics_vision", "idefics_perciever",
    "git", "git_vision_model",
    "phi4_multimodal", "phi4_multimodal_vision", "phi4_multimodal_audio",
    "hy_v4_vl", "hy_v4_vl_text", "hy_v4_vl_vision", "unlimited_ocr", "unlimited_ocr_text",
    "unlimited_ocr_sam_vision_model", "unlimited_ocr_vision_encoder",
    "kosmos-2", "kosmos_2_text_model", "kosmos_2_vision_model", "kosmos-2.5", "kosmos_2_5_text_model",
    "kosmos_2_5_vision_model", "ovis2", "ovis2_vision",
    "kyutai_speech_to_text", "csm", "csm_depth_decoder_model", "mimi", "moshi", "moshi_depth",
]
#: Families whose config nests blocks of fields in sub-config classes: their defaults go under "<type>.<key>".
NESTED = {"dbrx": ("attn_config", "ffn_config"), "mpt": ("attn_config",)}
DENY = ("token_id", "dropout", "initializer", "use_cache", "output_", "return_", "torchscript", "problem_type",
        "chunk_size_feed_forward", "is_encoder_decoder", "name_or_path", "transformers_version", "architectures",
        "finetuning_task", "tokenizer_class", "prefix", "tie_encoder_decoder", "add_cross_attention",
        "cross_attention", "is_decoder", "pretraining_tp", "aux_loss", "router_jitter", "z_loss", "use_mamba_kernels",
        "_attn_implementation", "dtype", "use_return_dict", "pad_", "bos_", "eos_", "sep_", "decoder_start",
        "num_labels", "label", "task_specific", "pruned_heads", "tf_legacy", "torch_dtype", "classifier",
        "gradient_checkpointing", "vocab_file", "num_logits_to_keep", "attn_implementation")


def scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def scalar_defaults(cls) -> dict:
    d = {}
    for f in dataclasses.fields(cls):
        if f.name.startswith("_") or any(x in f.name for x in DENY):
            continue
        if f.default is dataclasses.MISSING:
            continue
        v = f.default
        if v is None or not scalar(v):
            continue
        d[f.name] = v
    return d


out = {}
for mt in TYPES:
    if mt not in CONFIG_MAPPING:
        continue
    cls = CONFIG_MAPPING[mt]
    if not dataclasses.is_dataclass(cls):
        continue
    for key in NESTED.get(mt, ()):
        out[f"{mt}.{key}"] = scalar_defaults(cls.sub_configs[key])
    d = scalar_defaults(cls)
    theta = getattr(cls, "default_theta", None)  # RoPE base when the config gives none
    if isinstance(theta, dict):
        theta = theta.get("global")
    if isinstance(theta, (int, float)) and not isinstance(theta, bool):
        d["rope_theta"] = float(theta)
    out[mt] = d

#: model_types no transformers config class registers, whose configs are another class's fields: their defaults are
#: that class's (Qwen3.8's names in third-party engines, read as Qwen3.5: analysis/families/qwen3_8.py)
ALIASED = {"qwen3_8": "qwen3_5_text", "qwen3_8_text": "qwen3_5_text", "qwen3_8_moe": "qwen3_5_moe_text",
           "qwen3_8_moe_text": "qwen3_5_moe_text"}
for alias, mt in ALIASED.items():
    if mt in out:
        out[alias] = dict(out[mt])


#: The auto mappings whose classes generate tokens (text, or audio codes) from a decoder: a model_type with a class in
#: none of them, and no other class that can ``generate()`` (below), is an encoder, a tower or a tokenizer.
GENERATIVE_MAPPINGS = (
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES",
    "MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES",
)


def not_generative() -> dict[str, tuple[str, ...]]:
    """The model_types transformers ships that are not generative models, each with the generative model_types
    whose config nests its config (a sub-config: the text model of a wrapper, ...). Config classes are compared,
    not names (``EvollaModel`` is ``evolla``'s). A class the mappings miss that can ``generate()`` (a
    ``GenerationMixin`` whose ``config_class`` is this config: Emu3ForCausalLM, MusicgenForCausalLM,
    GlmImageForConditionalGeneration ...) counts as generative too, so nothing generative is in the set."""
    import importlib
    import inspect
    import warnings

    from transformers import GenerationMixin, PretrainedConfig
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES, model_type_to_module_name

    generative = {CONFIG_MAPPING[k] for name in GENERATIVE_MAPPINGS for k in getattr(modeling_auto, name, {})
                  if k in CONFIG_MAPPING_NAMES}
    classes: dict[str, list] = {}
    for mt in CONFIG_MAPPING_NAMES:
        cls = CONFIG_MAPPING[mt]
        if cls in generative:
            continue
        module = model_type_to_module_name(mt)
        if module not in classes:
            try:
                mod = importlib.import_module(f"transformers.models.{module}")
                classes[module] = [getattr(mod, n) for n in dir(mod) if n[:1].isupper()]
            except Exception:  # a model whose modeling code needs a missing backend: its mappings decide
                classes[module] = []
        if any(inspect.isclass(c) and issubclass(c, GenerationMixin) and getattr(c, "config_class", None) is cls
               for c in classes[module]):
            generative.add(cls)
    parents: dict[str, set[str]] = {mt: set() for mt in CONFIG_MAPPING_NAMES if CONFIG_MAPPING[mt] not in generative}

    def walk(root: str, cfg, depth: int) -> None:
        for key in getattr(type(cfg), "sub_configs", {}) or {}:
            sub = getattr(cfg, key, None)
            if isinstance(sub, PretrainedConfig) and depth < 4:
                if sub.model_type in parents:
                    parents[sub.model_type].add(root)
                walk(root, sub, depth + 1)

    for mt in CONFIG_MAPPING_NAMES:
        if CONFIG_MAPPING[mt] not in generative:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = CONFIG_MAPPING[mt]()
        except Exception:  # a config class with required arguments: no default to walk
            continue
        walk(mt, cfg, 0)
    return {mt: tuple(sorted(p)) for mt, p in parents.items()}


print('"""Per-family config defaults (generated by tools/gen_family_defaults.py from transformers '
      f'{transformers.__version__}; do not edit).\n\nA saved config.json omits the fields equal to its class defaults, '
      'so these are what an\nabsent field means for each model_type."""\n')
print(f"TRANSFORMERS_VERSION = {transformers.__version__!r}\n")
print("FAMILY_DEFAULTS: dict[str, dict[str, object]] = " + pprint.pformat(out, width=110, sort_dicts=True))
print("\n#: The model_types transformers ships with no generative class (not in its causal-LM, image-text-to-text,\n"
      "#: multimodal-LM, seq2seq, speech-seq2seq or text-to-speech auto mappings, and no class with generate()), each\n"
      "#: with the generative model_types whose config nests it (the text model of a wrapper, ...).")
print("NOT_GENERATIVE: dict[str, tuple[str, ...]] = " + pprint.pformat(not_generative(), width=110, sort_dicts=True))
