"""From a Hugging Face ``config.json`` (a dict) to a ``ModelSpec``.

This module reads the file, unwraps a multimodal wrapper's ``text_config``, looks the
``model_type`` up in the family registry (``analysis.families``: a row of traits or a builder) and
finishes the spec (dtype, quantization, provenance). An unlisted ``model_type`` whose config has
the standard fields (under any alias) is analysed as a generic decoder with a caveat naming every
assumption. Remote code (``auto_map``) is never run: such a config is read for its fields only.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import families
from .errors import ConfigError, UnsupportedModelError
from .files import read_bounded
from .families import (FLAT_TEXT_WRAPPERS, IMAGE_TOKENS, TEXT_WRAPPERS, VISION_COUNTED,  # noqa: F401  (re-exported)
                       WRAPPER_TIE, supported_model_types)
from .families import decoder as _decoder
from .families.common import ALIASES, Traits, generic_traits, read_rope_extra
from .fields import Fields, short
from .spec import ModelSpec, MoE

# ---- reading the file ----------------------------------------------------------------------------

MAX_CONFIG_BYTES = 16 * 1024 * 1024


def _sidecar(folder: Path, name: str) -> dict | None:
    """The JSON object of a quantization sidecar file beside config.json (bounded read), None when absent."""
    side = folder / name
    if not os.path.isfile(side):
        return None
    try:
        return decode_config_bytes(read_bounded(side, MAX_CONFIG_BYTES, what=name), str(side))
    except OSError as exc:
        raise ConfigError(f"{side}: cannot read: {exc.strerror or exc}") from None


def read_config_file(path: str | os.PathLike) -> dict:
    """Read and decode a config.json; every failure is a one-line ``ConfigError`` naming the file.
    The read is bounded: a FIFO, a device or a file over ``MAX_CONFIG_BYTES`` is refused unread."""
    p = Path(path)
    if p.is_dir():
        if not os.path.lexists(p / "config.json"):
            raise ConfigError(f"{p}: folder has no config.json", "pass the folder of a Hugging Face model or a config.json file")
        p = p / "config.json"
    try:
        data = read_bounded(p, MAX_CONFIG_BYTES, what="config.json")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    cfg = decode_config_bytes(data, str(p))
    # NVIDIA ModelOpt checkpoints of 2024-25 (nvidia/*-FP8, *-FP4) describe their quantization in a sidecar
    # hf_quant_config.json ({"producer": ..., "quantization": {"quant_algo", ...}}), not in config.json
    hq = _sidecar(p.parent, "hf_quant_config.json") if "quantization_config" not in cfg else None
    if hq is not None:
        cfg["quantization_config"] = {"quant_method": "modelopt", **hq}
    # AutoGPTQ checkpoints saved before transformers wrote a quantization_config into config.json (2023: TeleChat's
    # 7B_4bit / 12B_8bit folders, early GPTQ uploads) give bits / group_size only in a sidecar quantize_config.json
    qc = _sidecar(p.parent, "quantize_config.json") if "quantization_config" not in cfg else None
    if qc is not None and "bits" in qc:
        cfg["quantization_config"] = {"quant_method": "gptq", **qc}
    return cfg


def decode_config_bytes(data: bytes, where: str) -> dict:
    """config.json bytes to a dict; every failure is a one-line ``ConfigError`` naming ``where``."""
    p = where
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ConfigError(f"{p}: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ConfigError(f"{p}: not valid JSON: {str(exc).split(';')[0]}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{p}: expected a JSON object of config fields, got {type(cfg).__name__}")
    return cfg


#: Fields that change a decoder's shape or arithmetic in ways the generic (Llama-style) builder does
#: not model: parallel blocks, shared or projected embeddings, layer patterns, biases, other position
#: encodings, post-norm blocks. A generic analysis names the ones its config sets.
UNMODELLED = (
    "parallel_attn", "use_parallel_residual", "parallel_residual", "parallel_block", "use_embedding_sharing",
    "word_embed_proj_dim", "sliding_window_pattern", "attention_types", "attention_layers", "bias", "use_bias",
    "enable_bias", "qkv_bias", "add_bias_linear", "alibi", "position_embedding_type", "do_layer_norm_before",
    "apply_residual_connection_post_layernorm", "rotary_dim", "multi_query", "logit_scale", "use_qk_norm",
    "qk_layernorm", "n_positions",
    # Pangu Pro MoE V2 (vLLM PanguProMoEV2ForCausalLM): split q/k nope / rope and v widths, learned sink keys and values
    "qk_nope_dim", "v_channels", "param_sink_number",
)


#: Top-level fields of a flat multimodal config that name a vision tower or projector (LLaVA's mm_*, Qwen-VL's visual,
#: InternLM-XComposer2's vision_tower / vision_projector ...): an unknown model_type setting one is refused, not read
#: by the generic decoder, which counts no tower.
FLAT_VISION_KEYS = ("mm_vision_tower", "vision_tower", "mm_projector_type", "mm_hidden_size", "vision_projector",
                    "vision_config", "visual", "vit_config", "visual_config")
#: Of those, the flat LLaVA-repository fields (a tower named by path, a projector by type): a KNOWN text model_type
#: setting one is read as its language model with a caveat that the tower and projector are not counted
FLAT_LLAVA_KEYS = ("mm_vision_tower", "vision_tower", "mm_projector_type", "mm_hidden_size", "vision_projector")


def unmodelled_fields(cfg: dict) -> list[str]:
    """The fields of ``UNMODELLED`` that ``cfg`` sets (to anything but null, false or 0)."""
    return [k for k in UNMODELLED if cfg.get(k) not in (None, False, 0)]


#: MoE layout fields beyond the generic decoder's reading (every layer the same routed-experts MoE, no shared
#: expert): dense layers, shared experts, sparse steps. Each with the values that leave the generic layout as is.
GENERIC_MOE_LAYOUT = {
    "first_k_dense_replace": (0,), "n_shared_experts": (0,), "num_shared_experts": (0,), "num_shared_expert": (0,),
    "shared_expert_intermediate_size": (0,), "shared_intermediate_size": (0,), "share_expert_dim": (0,),
    "moe_shared_expert_intermediate_size": (0,), "dense_intermediate_size": (), "moe_layer_freq": (1,),
    "decoder_sparse_step": (1,), "moe_layer_interval": (1,), "moe_layer_start_index": (0,),
    "moe_layer_end_index": (-1,), "mlp_only_layers": ([],),
}


def generic_moe_layout(cfg: dict) -> list[str]:
    """The ``GENERIC_MOE_LAYOUT`` fields ``cfg`` sets to a layout the generic MoE would not build (MiniMaxAI's
    MiniMax-M3 config read generically: 3 dense layers and the shared experts ignored, 4 % too many parameters);
    ``mlp_layer_types`` / a ``moe_layer_freq`` list with a dense layer."""
    out = [k for k, plain in GENERIC_MOE_LAYOUT.items() if cfg.get(k) is not None and cfg[k] is not False
           and cfg[k] not in plain and not (isinstance(cfg[k], list) and all(cfg[k]) and k == "moe_layer_freq")]
    types = cfg.get("mlp_layer_types")
    if isinstance(types, list) and any(t != "sparse" for t in types):
        out.append("mlp_layer_types")
    return out


#: What an encoder's ``architectures`` end with (the BERT lineage: BertForMaskedLM, RobertaModel ...).
ENCODER_HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering",
                 "ForPreTraining", "ForMultipleChoice", "ForNextSentencePrediction",
                 # speech and vision encoders (wav2vec2 / HuBERT / WavLM's CTC heads, ViT / BEiT classifiers ...)
                 "ForCTC", "ForAudioClassification", "ForAudioFrameClassification", "ForXVector",
                 "ForImageClassification", "ForImageClassificationWithTeacher", "ForMaskedImageModeling",
                 "ForObjectDetection", "ForSemanticSegmentation", "ForUniversalSegmentation", "ForDepthEstimation",
                 "ForZeroShotImageClassification", "ForZeroShotObjectDetection")


#: What a decoder's ``architectures`` end with when a scoring head replaces lm_head (reward models, classifiers):
#: refused whatever the model_type (transformers' LlamaForSequenceClassification, Qwen2.5-Math-PRM's
#: Qwen2ForProcessRewardModel, InternLM2ForRewardModel, ...)
SCORING_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForRewardModel",
                 "ForProcessRewardModel")


def first_architecture(cfg: dict) -> str | None:
    """``architectures[0]`` when the config lists one as a string, else None."""
    arch = cfg.get("architectures")
    return arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else None


def not_a_decoder(cfg: dict) -> str | None:
    """Why an unknown family's config is not a decoder-only LM the generic builder may stand in for, or None:
    an encoder-decoder (``is_encoder_decoder``), or a BERT-lineage encoder (token-type embeddings,
    ``type_vocab_size``; or only encoder heads in ``architectures``). The generic Llama-style count of
    such a config is wrong (BERT-base: 1.25x transformers'), so it is refused, not caveated."""
    if cfg.get("is_encoder_decoder") is True:
        return "an encoder-decoder model (is_encoder_decoder)"
    if all(type(cfg.get(k)) is int for k in ("encoder_layers", "decoder_layers")):  # Whisper / BART without the flag
        return "an encoder-decoder model (encoder_layers and decoder_layers)"
    if isinstance(cfg.get("type_vocab_size"), int) and cfg["type_vocab_size"] > 0:
        return "an encoder (token-type embeddings: type_vocab_size)"
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and all(isinstance(a, str) and a.endswith(ENCODER_HEADS) for a in arch):
        return f"an encoder (architectures: {', '.join(arch)})"
    if "logit_scale_init_value" in cfg:  # CLIP, SigLIP, OWL-ViT, GroupViT, X-CLIP ...: image-text similarity
        return "a contrastive dual encoder (logit_scale_init_value: CLIP / SigLIP-style image and text towers)"
    return None


def not_generative(model_type: str, where: str) -> UnsupportedModelError | None:
    """The refusal of a top-level ``model_type`` that transformers ships with no generative class (SigLIP,
    wav2vec2, MPNet, ModernBERT, a wrapper's text sub-config ...: ``NOT_GENERATIVE``, generated from its auto
    mappings), or None. Only for a model_type with no family of its own: the generic decoder would give it a
    Llama-style count that means nothing. A wrapper's text_config is never refused by it (Diffusion Gemma's text
    model has no causal-LM class of its own: the wrapper is the generative model)."""
    from .family_defaults import NOT_GENERATIVE

    if model_type not in NOT_GENERATIVE:
        return None
    parents = NOT_GENERATIVE[model_type]
    nested_in = ""
    if parents:
        more = f" and {len(parents) - 3} more" if len(parents) > 3 else ""
        nested_in = f"it is a sub-config of {', '.join(parents[:3])}{more}; "
    return UnsupportedModelError(
        f"{where}: model_type '{model_type}' is not a generative model in transformers (no causal-LM / "
        f"image-text-to-text class): {nested_in}a generic Llama-style count of it would mean nothing",
        "pass the config.json of the whole generative model" if parents else
        "planner analyses generative language models; planner models lists the bundled ones")


# ---- the entry point -----------------------------------------------------------------------------


def _supported_hint(model_type: str) -> str:
    """The hint for an unknown model_type: the close matches among the supported ones (the whole list, over
    two hundred names, is too long for one error line) and how many there are."""
    import difflib

    known = supported_model_types()
    close = difflib.get_close_matches(str(model_type), known, n=5, cutoff=0.6)
    near = f"close matches: {', '.join(close)}; " if close else ""
    return f"{near}{len(known)} model_types are supported: README.md lists the families"


def parse_config(cfg: Any, *, where: str = "config.json", name: str = "", source: str = "") -> ModelSpec:
    """Build a ``ModelSpec`` from a decoded config.json; raise ``ConfigError`` on anything unusable."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: expected a JSON object of config fields, got {type(cfg).__name__}")
    caveats: list[str] = []
    renamed = families.MODEL_TYPE_RENAMES.get(cfg["model_type"]) if isinstance(cfg.get("model_type"), str) else None
    if renamed is not None:  # DeepSeek-V4's "deepseek_ref": the family registered as deepseek_v4
        caveats.append(f"model_type '{cfg['model_type']}' ({renamed[1]}) is read as '{renamed[0]}'")
        cfg = dict(cfg, model_type=renamed[0])
    flat = isinstance(cfg.get("model_type"), str) and cfg["model_type"] in FLAT_TEXT_WRAPPERS  # (a list: refused below)
    if flat and cfg.get("text_config") is None:
        # a flat hub config (Qwen2-VL, Qwen2.5-VL): the language model's fields sit beside vision_config
        cfg = dict(cfg, text_config={k: v for k, v in cfg.items() if k not in ("model_type", "vision_config",
                                                                              "audio_config")})
        cfg["text_config"].update(families.FLAT_TEXT_FIXED.get(cfg["model_type"], {}))  # PaddleOCR-VL's tie
    llm_config = families.LLM_CONFIG_WRAPPERS.get(cfg["model_type"]) if isinstance(cfg.get("model_type"), str) else None
    if llm_config is not None and cfg.get("text_config") is None:
        # InternVL's remote-code format (internvl_chat): the language model's fields are in llm_config
        cfg = dict(cfg, text_config=llm_config(cfg, where))
    else:
        llm_config = None  # (Nemotron-3 Nano Omni: a text_config, when given, is read as such)
    rebuild = families.TEXT_CONFIG_REBUILDS.get(cfg["model_type"]) if isinstance(cfg.get("model_type"), str) else None
    if rebuild is not None:  # Kimi-VL: its config class re-reads text_config as DeepseekV2Config (its defaults)
        cfg = dict(cfg, text_config=rebuild(cfg, where))
    top = cfg
    top_where = where
    nested = False
    wrapper = None
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(f"{where}: field 'model_type' must be a string, got {short(model_type)}")
    arch0 = first_architecture(cfg)
    if arch0 in families.REFUSED_ARCHITECTURES:  # GroveMoE: a qwen3_moe config whose architecture adds experts
        title, why = families.REFUSED_ARCHITECTURES[arch0]
        raise UnsupportedModelError(f"{where}: architecture {arch0} ({title}, model_type '{model_type}') is not "
                                    f"supported yet: {why}", "a generic analysis would miscount it, so none is given")
    heads = cfg.get("architectures")
    if isinstance(heads, list) and heads and all(isinstance(a, str) and a.endswith(SCORING_HEADS) for a in heads) \
            and isinstance(model_type, str) and families.lookup(model_type) is not None:  # unknown: not_a_decoder
        raise UnsupportedModelError(  # Skywork-Reward-Gemma-2-27B (Gemma2ForSequenceClassification), ...
            f"{where}: architecture {heads[0]} (model_type '{model_type}') scores or labels a sequence in one forward "
            "pass through a small head in place of lm_head: it generates no tokens, so the decode, KV-cache and "
            "serving figures planner gives do not describe it",
            "analyse the generative model it was trained from")
    if cfg.get("auto_map") or cfg.get("trust_remote_code"):
        caveats.append("config points at remote code (auto_map); analysed from its fields only, no code was run")
    if cfg.get("text_config") is not None and not isinstance(cfg["text_config"], dict):
        raise ConfigError(f"{where}: field 'text_config' must be an object of the language model's fields, "
                          f"got {type(cfg['text_config']).__name__} {short(cfg['text_config'])}")
    # a refused model_type is refused by name, its text_config not read in its place
    if isinstance(cfg.get("text_config"), dict) and model_type not in families.REFUSED \
            and ("hidden_size" not in cfg or model_type in TEXT_WRAPPERS):
        if model_type not in TEXT_WRAPPERS and families.lookup(model_type or "") is None:
            encoder = not_a_decoder(cfg)  # an unknown wrapper: CLIP's text tower is no language model of it
            if encoder:
                raise UnsupportedModelError(f"{where}: model_type '{model_type}' is {encoder}, not a decoder-only causal LM",
                                            "planner analyses decoder-only language models; planner models lists "
                                            "the bundled ones")
            refused = not_generative(model_type or "", where)  # SigLIP, SAM 3, PE-Audio: their text tower is no LM
            if refused:
                raise refused
        text = dict(cfg["text_config"])
        inner = text.get("model_type") or TEXT_WRAPPERS.get(model_type or "") or ""
        if not isinstance(inner, str):
            raise ConfigError(f"{where}: field 'text_config.model_type' must be a string, got {short(inner)}")
        if inner == model_type and inner in TEXT_WRAPPERS and TEXT_WRAPPERS[inner]:
            inner = TEXT_WRAPPERS[inner]
        inner = families.TEXT_TYPE_RENAMES.get(model_type or "", {}).get(inner, inner)  # EXAONE 4.5's old name
        why = families.WRAPPER_REFUSED_TEXT.get(model_type or "", {}).get(inner)
        if why:  # BLIP-2 / InstructBLIP with Flan-T5
            raise UnsupportedModelError(f"{where}: {model_type} with text_config.model_type '{inner}' is refused: "
                                        f"{why}",
                                        f"{model_type} checkpoints with an OPT (or other decoder-only) language model "
                                        "are supported")
        text["model_type"] = inner
        for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
            if key in cfg and key not in text:
                text[key] = cfg[key]
        rule = WRAPPER_TIE.get(model_type or "")
        if rule == "never":  # transformers never ties them (Cosmos3-Edge's _tied_weights_keys = {}, ...)
            text["tie_word_embeddings"] = False
        elif rule == "text-if-absent" and "tie_word_embeddings" not in cfg:
            pass  # the released config leaves the wrapper's flag out: text_config's own flag decides (WRAPPER_TIE)
        elif rule is not None:
            from .family_defaults import FAMILY_DEFAULTS

            tie = cfg.get("tie_word_embeddings", FAMILY_DEFAULTS.get(model_type, {}).get("tie_word_embeddings"))
            if tie is None and "tie_word_embeddings" not in cfg:  # a config class without the field (MuseGlimmerConfig):
                tie = False  # transformers' tying reads it as false
            if model_type == "lfm2_vl" and "tie_embedding" in cfg:  # Lfm2VlConfig: it overrides tie_word_embeddings
                tie = cfg["tie_embedding"]
            if not isinstance(tie, bool):
                raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {short(tie)}")
            if rule in ("wrapper", "text-if-absent") or tie:
                text["tie_word_embeddings"] = tie
            if rule == "wrapper":
                text.pop("tie_embedding", None)  # LFM2's own alias: the wrapper's flag decides, not the text's
        wrapper = model_type
        if model_type in VISION_COUNTED:
            caveats.append(f"multimodal config ({model_type}): the vision (and audio) encoders are counted in the "
                           "parameters and weights, as transformers builds them, but take no part in the text decode "
                           "trace")
        else:
            caveats.append(f"multimodal config ({model_type}): the language model in text_config is analysed; "
                           "its vision/audio encoder is not counted (not modelled here yet): params.total and weights "
                           "memory are short by that encoder")
        cfg = text
        model_type = inner
        where = f"{where} ({'llm_config' if llm_config is not None else 'text_config'})"
        nested = True
    if not model_type:
        for detect, translate in families.UNTYPED_CONFIGS:  # state-spaces' mamba_ssm configs name no model_type
            if not nested and detect(cfg):
                hf, note = translate(cfg, where)
                spec = parse_config(hf, where=where, name=name, source=source)
                return replace(spec, caveats=(*spec.caveats, note))
        arch = first_architecture(cfg)
        if arch in families.MODEL_TYPES_BY_ARCHITECTURE:  # remote code whose config class names none
            raise ConfigError(f"{where}: required field 'model_type' is missing (architectures: {arch}, whose "
                              "config class sets none)",
                              f"add \"model_type\": {families.MODEL_TYPES_BY_ARCHITECTURE[arch]}")
        raise ConfigError(f"{where}: required field 'model_type' is missing",
                          "a Hugging Face config.json names its architecture in model_type")
    only_in = None if nested else families.WRAPPER_ONLY.get(model_type)
    if only_in:
        what, whole, hint = only_in
        raise UnsupportedModelError(f"{where}: model_type '{model_type}' is {what}, read only inside a whole {whole} "
                                    "config, not a config of its own", hint)
    family = families.lookup(model_type)
    generic = family is None
    if family is None:
        if model_type in TEXT_WRAPPERS:
            raise UnsupportedModelError(f"{where}: multimodal model_type '{model_type}' has no text_config we can read",
                                        "if it is a vision tower's own config (as Pixtral's is inside Mistral 3 / "
                                        "LLaVA), pass the whole model's config.json")
        # an encoder-decoder / encoder is named as such first: Whisper, BART, T5Gemma ... keep their fields under
        # other names (d_model, encoder_layers, encoder / decoder sub-configs), so "fields missing" would be vaguer
        encoder = not_a_decoder(cfg)
        if encoder:
            raise UnsupportedModelError(
                f"{where}: model_type '{model_type}' is {encoder}, not a decoder-only causal LM",
                "planner analyses decoder-only language models; planner models lists the bundled ones")
        missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
                   if not any(a in cfg for a in (k, *ALIASES.get(k, ())))]
        if missing:
            raise UnsupportedModelError(
                f"{where}: unsupported model_type '{model_type}' and the standard decoder fields "
                f"{', '.join(missing)} are missing",
                _supported_hint(model_type),
            )
        refused = None if nested else not_generative(model_type, where)  # a wrapper's text_config is read as its LM
        if refused:
            raise refused
        family = generic_traits(cfg)
        unread = [k for k, v in cfg.items() if "expert" in k.lower() and isinstance(v, int) and not isinstance(v, bool)
                  and v > 1] if family.moe is None and cfg.get("is_moe") is not False else []
        if unread:
            # Aria's moe_num_experts, ...: a mixture of experts the generic decoder would count as one dense MLP
            raise UnsupportedModelError(
                f"{where}: {', '.join(unread)} set, but model_type '{model_type}' is not a known family: its experts "
                "are not a layout the generic decoder reads (it would count one dense MLP)",
                "a generic Llama-style analysis would miscount it, so none is given")
        layout = generic_moe_layout(cfg) if family.moe == "generic" else []
        if layout:
            raise UnsupportedModelError(
                f"{where}: {', '.join(layout)} set, but model_type '{model_type}' is not a known family: the generic "
                "decoder would read every layer as the same routed-experts MoE, without these dense layers or "
                "shared experts", "a generic Llama-style analysis would miscount it, so none is given")
        towers = [] if nested else [k for k in FLAT_VISION_KEYS if cfg.get(k) not in (None, False, "", {}, [])]
        if towers:
            # Bunny (bunny-phi: Phi-2 + SigLIP), InternLM-XComposer2 ...: a flat remote-code VLM whose tower the
            # generic decoder never counts, around a language model it reads as a Llama whatever it is
            raise UnsupportedModelError(
                f"{where}: {', '.join(towers)} set, but model_type '{model_type}' is not a known family: the vision "
                "tower and projector they name are not counted by the generic decoder, which would also read the "
                "language model as a Llama", "a generic Llama-style analysis would miscount it, so none is given")
        caveats.append(f"model_type '{model_type}' is not a known family: analysed as a generic Llama-style "
                       "decoder (pre-norm RMSNorm, gated MLP, RoPE); check the assumed fields below")
        unknown = unmodelled_fields(cfg)
        if unknown:
            caveats.append("the generic decoder does not model these fields, so the counts may be wrong: "
                           + ", ".join(unknown))
    from .family_defaults import FAMILY_DEFAULTS

    aliases = {**ALIASES, **dict(family.aliases)} if isinstance(family, Traits) else ALIASES
    f = Fields(cfg, where, aliases=aliases, defaults=FAMILY_DEFAULTS.get(model_type), nested=nested, family=model_type)
    if isinstance(family, Traits) and generic:
        try:
            spec = _decoder.build(f, model_type, family, generic=True)
        except UnsupportedModelError:
            raise
        except ConfigError as exc:
            # the generic decoder's complaint (no intermediate_size, linear-attention layer_types ...) is about a
            # family it does not know, not about a broken config of a known one: say so
            reason = exc.message[len(where) + 2:] if exc.message.startswith(f"{where}: ") else exc.message
            raise UnsupportedModelError(f"{where}: unknown model_type '{model_type}', read as a generic Llama-style "
                                        f"decoder: {reason}", exc.hint) from None
    elif isinstance(family, Traits):
        spec = _decoder.build(f, model_type, family, generic=generic)
    else:
        spec = family(f, model_type)
    if wrapper in VISION_COUNTED:
        spec = replace(spec, vision=VISION_COUNTED[wrapper](top, spec.hidden_size, top_where))
    flat = [] if nested or generic or spec.vision else [k for k in FLAT_LLAVA_KEYS
                                                       if cfg.get(k) not in (None, False, "", {}, [])]
    if flat:
        # a LLaVA-repository checkpoint saved under its language model's model_type (llama, mistral, qwen2 ...):
        # the known family's builder reads the decoder; the tower and projector these fields name are not counted
        caveats.append(f"{', '.join(flat)} set: a LLaVA-style vision tower / projector that model_type "
                       f"'{model_type}' does not build; its weights are not counted (the counts are the language "
                       "model's alone)")
    skipped, why = families.ENGINE_UNLOADED.get(wrapper, ((), ""))
    unloaded = sum(t.numel for t in spec.vision if skipped and t.name.startswith(skipped))
    if unloaded:
        caveats.append(f"{wrapper}: the checkpoint's {' / '.join(skipped)} models ({unloaded:,} parameters) are "
                       f"counted in the total and the checkpoint's weights, but not loaded by the serving engines ("
                       f"{why}): the engine's weights in serve and plan leave them out")
        spec = replace(spec, engine_unloaded=skipped)
    if wrapper in families.UNSCALED_LOGITS_WRAPPERS and spec.numerics.logit_scale != 1.0:
        caveats.append(f"{wrapper}: transformers' *ForConditionalGeneration head does not multiply the logits by "
                       f"text_config.logit_scale ({spec.numerics.logit_scale}), so verify runs without it (vLLM's "
                       "Cohere 2 head applies it: logits, not counts, differ)")
        spec = replace(spec, numerics=replace(spec.numerics, logit_scale=1.0))
    if spec.cross_attention is not None:
        x = spec.cross_attention
        if wrapper in IMAGE_TOKENS:
            x = replace(x, image_tokens=IMAGE_TOKENS[wrapper](top, top_where))
            spec = replace(spec, cross_attention=x)
        if x.style == "idefics":
            caveats.append(
                f"{len(x.layers)} gated cross-attention blocks (before decoder layers "
                f"{', '.join(str(i - k) for k, i in enumerate(x.layers))}) attend to the image features: their "
                "weights are counted; transformers caches none of their "
                "K/V (recomputed from the image features every step), so the per-token KV is the "
                f"{spec.num_layers} self-attention layers'. They run at every step (transformers' forward needs an "
                "image), but the decoder, trace and FLOPs here are the self-attention layers only: per-token FLOPs "
                "leave out the blocks' q/o projections, gated MLPs and attention over the image tokens, and their "
                "K/V projections of the image features")
        else:
            caveats.append(f"{len(x.layers)} cross-attention layers (checkpoint layers "
                           f"{', '.join(map(str, x.layers))}) "
                           "attend to image tokens: their weights are counted, their KV cache is per image "
                           "(kv_cache.cross_attention), and a text-only step skips them, as transformers does; the "
                           f"decoder, its FLOPs and its per-token KV are the {spec.num_layers} self-attention layers")
    spec = finish(spec, f, top_cfg=top, name=name, source=source, caveats=caveats)
    if generic:
        spec = replace(spec, generic=True)
    return spec




# ---- finishing -----------------------------------------------------------------------------------


def finish(spec: ModelSpec, f: Fields, *, top_cfg: dict, name: str, source: str, caveats: list[str]) -> ModelSpec:
    from .quant import parse_quantization, with_primary

    dtype = None
    for key in ("torch_dtype", "dtype"):
        v = top_cfg.get(key, f.cfg.get(key))
        if key == "torch_dtype" and v is not None and not isinstance(v, str):  # (a list was read as absent: bf16)
            raise f.error(key, f"must be a dtype name such as 'bfloat16', got {short(v)}")
        if isinstance(v, str):
            dtype = v
            f._record(key, "read", v)
            break
    if dtype is None:
        f.defaulted("torch_dtype", "bf16", "absent: bf16 assumed")
    max_pos = f.opt_int("max_position_embeddings", hi=1 << 31)
    qc = top_cfg.get("quantization_config", f.cfg.get("quantization_config"))
    quant, qcaveats = parse_quantization(qc, f.where, spec.model_type, top_cfg.get("expert_dtype", f.cfg.get(
        "expert_dtype"))) if qc is not None else (None, [])
    mlx = top_cfg.get("quantization")  # mlx-lm / mlx-vlm conversions: {"group_size": 64, "bits": 4, ...}
    if qc is None and isinstance(mlx, dict) and "bits" in mlx and "quant_algo" not in mlx:
        qcaveats = qcaveats + [f"MLX-quantized config (quantization: {short(mlx)}) is not modelled: weights sized at "
                               "torch_dtype; real storage is about bits/16 of that, plus per-group scales and biases"]
    for layer in spec.layers:
        m = layer.mixer
        if m is not None and m.window is not None and m.window < 1:
            raise f.error("sliding_window", f"must be a positive integer, got {m.window}")
        e = layer.ffn
        # every family's experts, whatever its builder checked: a token routes to between 1 and all of them
        # (more would count more active parameters than the model has)
        if isinstance(e, MoE) and not 1 <= e.num_experts_per_tok <= e.num_experts:
            raise ConfigError(f"{f.where}: experts per token ({e.num_experts_per_tok}) must be between 1 and the "
                              f"number of routed experts ({e.num_experts})")
    # every family, whatever its builder checked: a derived width that comes out zero or negative (a head_dim
    # smaller than the dims carved out of it ...) would give negative parameter and KV counts
    for t in spec.tensors():
        if any(d < 1 for d in t.shape):
            raise ConfigError(f"{f.where}: these fields give {t.name} the shape {tuple(t.shape)}: every "
                              "dimension must be positive")
    if quant is not None and quant.groups:
        quant, gcaveats = with_primary(quant, replace(spec, quant=quant))
        qcaveats = qcaveats + gcaveats
    numerics = replace(spec.numerics, rope_extra=read_rope_extra(f))
    return replace(
        spec, numerics=numerics, torch_dtype=dtype, max_position_embeddings=max_pos, quant=quant, name=name, source=source,
        provenance=f.provenance(), caveats=tuple(spec.caveats) + tuple(caveats) + tuple(qcaveats),
    )


