"""Qwen3-Omni (``qwen3_omni_moe``: Qwen/Qwen3-Omni-30B-A3B-Instruct / -Thinking / -Captioner), counted whole as
transformers 5.24's ``Qwen3OmniMoeForConditionalGeneration`` builds it
(models/qwen3_omni_moe/modeling_qwen3_omni_moe.py), and its thinker alone (``qwen3_omni_moe_thinker``,
Qwen3OmniMoeThinkerForConditionalGeneration) with its towers.

* ``thinker`` (``thinker_config``): the MoE language model (``text_config``, model_type ``qwen3_omni_moe_text``: the
  registry's row; lm_head tied by thinker_config's own ``tie_word_embeddings``, default untied) plus two towers:

  - ``audio_tower`` (``audio_config``, Qwen3OmniMoeAudioEncoder; kind ``audio``): three biased stride-2 Conv2d (1 →
    downsample_hidden_size → downsample_hidden_size → downsample_hidden_size, kernel 3), a bias-free ``conv_out``
    from downsample_hidden_size × the mel bins thrice halved (ceil) to d_model, sinusoidal positions (a buffer),
    ``encoder_layers`` pre-LayerNorm Whisper blocks (biased q / k / v / out_proj, biased fc1 / fc2 of
    encoder_ffn_dim), ``ln_post``, biased ``proj1`` (d_model²) and ``proj2`` (to output_dim).
  - ``visual`` (``vision_config``, Qwen3OmniMoeVisionEncoder; kind ``vision``): the Qwen3-VL tower under other names —
    a biased Conv3d patch embedding, ``pos_embed`` (num_position_embeddings rows), ``depth`` LayerNorm blocks (biased
    fused qkv, proj, linear_fc1 / linear_fc2 of intermediate_size), the ``merger`` (LayerNorm over hidden, two biased
    Linears over hidden × spatial_merge_size² to out_hidden_size) and one post-shuffle ``merger_list`` entry per
    ``deepstack_visual_indexes`` (LayerNorm over the merged width).

* ``talker`` (``talker_config``; kind ``audio``), only when ``enable_audio_output`` (default true) — the speech
  generator: ``text_config`` layers (attention q / k / v / o of head_dim, biased by attention_bias, RMSNorm q_norm /
  k_norm; every layer the shared-expert MoE block whatever mlp_only_layers says: a router, num_experts experts of
  moe_intermediate_size, a SwiGLU shared expert of shared_expert_intermediate_size and its one-output sigmoid gate;
  two RMSNorms), the final norm, ``codec_embedding`` (vocab × hidden), ``text_projection`` and ``hidden_projection``
  (biased thinker_hidden_size → intermediate_size → hidden), ``codec_head`` (left out when talker_config's
  ``tie_word_embeddings`` ties it to codec_embedding; default untied), and the ``code_predictor``
  (``code_predictor_config``: dense Qwen3 layers with q / k norms and a SwiGLU of intermediate_size, a final norm,
  num_code_groups − 1 codec embeddings and as many bias-free heads; its ``tie_word_embeddings`` true is refused:
  transformers 5.24 cannot build that model).
* ``code2wav`` (``code2wav_config``; kind ``audio``): ``code_embedding`` (codebook_size × num_quantizers rows), the
  ``pre_transformer`` (num_hidden_layers layers of q / k / v / o, biased by attention_bias, a SwiGLU of
  intermediate_size, two RMSNorms, two LayerScale vectors; the final norm), per ``upsampling_ratios`` entry a biased
  ConvTranspose1d (hidden², kernel = stride = ratio) and a ConvNeXt block (depthwise conv 7, LayerNorm, biased
  pwconv1 / pwconv2 of 4 × hidden, gamma); the decoder: a biased conv (hidden → decoder_dim, kernel 7), per
  ``upsample_rates`` entry a SnakeBeta (alpha, beta), a biased ConvTranspose1d (kernel 2 × rate) halving the channels
  and three residual units (SnakeBeta, conv 7, SnakeBeta, conv 1); a last SnakeBeta and a conv to one channel.

The decode trace, FLOPs and K/V are the thinker's language model's (text output, what vLLM serves). vLLM's registry
maps Qwen3OmniMoeForConditionalGeneration to qwen3_omni_moe_thinker.py, whose load_weights skips the ``talker.`` and
``code2wav.`` prefixes: the engine loads the thinker alone. The parameter total and the checkpoint's weights hold every
counted tensor, talker and code2wav included; the engine's weights (hardware.engine.loaded_weights: serve, plan) leave
them out (analysis.families.ENGINE_UNLOADED), and a caveat says so.

Checked against transformers on the meta device (tests/test_qwen3_omni.py). Qwen3-Omni-30B-A3B-Instruct (its
config.json as a transformers 5.7 dump of the checkpoint quotes it, with the checkpoint's weight list: 15 safetensors
files, 28,010 tensors, 35,259,818,545 parameters, 65.68 GiB in bf16) is 35,259,818,545 parameters here: the thinker
31,719,205,488 (language model 30,532,646,912, audio tower 647,927,168, vision tower 538,631,408), the talker
3,324,596,480 and code2wav 216,016,577 (70,519,637,090 bytes in bf16; the engine's thinker 63,438,410,976). The
Thinking and Captioner checkpoints (enable_audio_output false, no talker or code2wav built) are the thinker alone.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor

#: The sub-configs' class defaults in transformers 5.24 (configuration_qwen3_omni_moe.py; tests/test_qwen3_omni.py
#: checks them against the installed classes): what an absent field means to transformers.
AUDIO_DEFAULTS = {"d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
                  "num_mel_bins": 128, "downsample_hidden_size": 480, "output_dim": 3584}
VISION_DEFAULTS = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "in_channels": 3,
                   "patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 3584,
                   "num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24]}
TALKER_DEFAULTS = {"thinker_hidden_size": 2048}
TALKER_TEXT_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 20,
                        "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 3072,
                        "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 384,
                        "attention_bias": False}
CODE_PREDICTOR_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 5,
                           "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 2048,
                           "num_code_groups": 32, "attention_bias": False}
CODE2WAV_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 8, "num_attention_heads": 16,
                     "num_key_value_heads": 16, "codebook_size": 2048, "num_quantizers": 16, "decoder_dim": 1536,
                     "upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2], "attention_bias": False}


def _sub(cfg: dict, key: str, where: str) -> dict:
    """A sub-config as a dict: ``{}`` (the class defaults) when absent or null, a ConfigError when not an object."""
    v = cfg.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object, got {short(v)}")
    return v


def _fields(cfg: dict, key: str, where: str, defaults: dict, family: str, aliases: dict | None = None) -> Fields:
    return Fields(_sub(cfg, key, where), f"{where} ({key})", aliases=aliases, defaults=defaults, nested=True,
                  family=family)


def _w(out: list[Tensor], name: str, shape: tuple[int, ...], kind: str, bias: bool = False) -> None:
    """A weight ``{name}.weight`` of ``shape`` (and its bias of shape[0] rows when ``bias``)."""
    out.append(Tensor(f"{name}.weight", shape, kind))
    if bias:
        out.append(Tensor(f"{name}.bias", (shape[0],), kind))


def _ln(out: list[Tensor], name: str, dim: int, kind: str) -> None:
    out += [Tensor(f"{name}.weight", (dim,), kind), Tensor(f"{name}.bias", (dim,), kind)]


def _heads(f: Fields, hidden: int) -> tuple[int, int, int]:
    """(query heads, K/V heads, head_dim) of an attention block; head_dim absent: hidden // heads, as
    ``getattr(config, "head_dim", hidden // heads)`` reads it."""
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads)
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = f.int("head_dim", lambda: hidden // heads)
    return heads, kv, hd


def _attention(out: list[Tensor], b: str, h: int, heads: int, kv: int, hd: int, bias: bool, qk_norm: bool) -> None:
    k = "audio"
    _w(out, f"{b}.self_attn.q_proj", (heads * hd, h), k, bias)
    _w(out, f"{b}.self_attn.k_proj", (kv * hd, h), k, bias)
    _w(out, f"{b}.self_attn.v_proj", (kv * hd, h), k, bias)
    _w(out, f"{b}.self_attn.o_proj", (h, heads * hd), k, bias)
    if qk_norm:
        out += [Tensor(f"{b}.self_attn.q_norm.weight", (hd,), k), Tensor(f"{b}.self_attn.k_norm.weight", (hd,), k)]


def _swiglu(out: list[Tensor], p: str, h: int, inter: int) -> None:
    _w(out, f"{p}.gate_proj", (inter, h), "audio")
    _w(out, f"{p}.up_proj", (inter, h), "audio")
    _w(out, f"{p}.down_proj", (h, inter), "audio")


# ---- the thinker's towers ------------------------------------------------------------------------------------------


def audio_tower(thinker: dict, where: str, prefix: str = "model.audio_tower") -> list[Tensor]:
    f = _fields(thinker, "audio_config", where, AUDIO_DEFAULTS, "qwen3_omni_moe_audio_encoder",
                aliases={"encoder_layers": ("num_hidden_layers",), "d_model": ("hidden_size",),
                         "encoder_attention_heads": ("num_attention_heads",),
                         "encoder_ffn_dim": ("intermediate_size",)})
    d = f.int("d_model")
    heads = f.int("encoder_attention_heads")
    if d % heads:
        raise f.error("encoder_attention_heads", f"({heads}) must divide d_model ({d})")
    if d % 2:
        raise f.error("d_model", f"({d}) must be even: the sinusoidal positions need even channels")
    layers = f.int("encoder_layers", hi=MAX_LAYERS)
    ffn = f.int("encoder_ffn_dim")
    mels = f.int("num_mel_bins", hi=1 << 16)
    down = f.int("downsample_hidden_size")
    out_dim = f.int("output_dim")
    freq = (((mels + 1) // 2 + 1) // 2 + 1) // 2  # the mel axis after the three stride-2, padding-1 convs
    a, p = "audio", prefix
    out: list[Tensor] = []
    for i in range(layers):
        b = f"{p}.layers.{i}"
        for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
            _w(out, f"{b}.self_attn.{name}", (d, d), a, True)
        _ln(out, f"{b}.self_attn_layer_norm", d, a)
        _w(out, f"{b}.fc1", (ffn, d), a, True)
        _w(out, f"{b}.fc2", (d, ffn), a, True)
        _ln(out, f"{b}.final_layer_norm", d, a)
    _ln(out, f"{p}.ln_post", d, a)
    _w(out, f"{p}.conv2d1", (down, 1, 3, 3), a, True)
    _w(out, f"{p}.conv2d2", (down, down, 3, 3), a, True)
    _w(out, f"{p}.conv2d3", (down, down, 3, 3), a, True)
    _w(out, f"{p}.conv_out", (d, down * freq), a)
    _w(out, f"{p}.proj1", (d, d), a, True)
    _w(out, f"{p}.proj2", (out_dim, d), a, True)
    return out


def vision_tower(thinker: dict, where: str, prefix: str = "model.visual") -> list[Tensor]:
    f = _fields(thinker, "vision_config", where, VISION_DEFAULTS, "qwen3_omni_moe_vision_encoder",
                aliases={"depth": ("num_hidden_layers",), "num_heads": ("num_attention_heads",)})
    h = f.int("hidden_size")
    heads = f.int("num_heads")
    if h % heads:
        raise f.error("num_heads", f"({heads}) must divide the vision hidden size ({h})")
    depth = f.int("depth", hi=MAX_LAYERS)
    inter = f.int("intermediate_size")
    patch = f.int("patch_size", hi=4096)
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    out_dim = f.int("out_hidden_size")
    deepstack = f.int_list("deepstack_visual_indexes", hi=MAX_LAYERS)
    if deepstack is None:  # null: transformers' class default
        deepstack = f.derived("deepstack_visual_indexes", VISION_DEFAULTS["deepstack_visual_indexes"],
                              "absent: the class default [8, 16, 24]")
    v, p = "vision", prefix
    out: list[Tensor] = []
    for k in range(len(deepstack)):
        m = f"{p}.merger_list.{k}"
        _ln(out, f"{m}.ln_q", merged, v)
        _w(out, f"{m}.mlp.0", (merged, merged), v, True)
        _w(out, f"{m}.mlp.2", (out_dim, merged), v, True)
    _w(out, f"{p}.patch_embed.proj", (h, f.int("in_channels", hi=64), f.int("temporal_patch_size", hi=64), patch,
                                      patch), v, True)
    _w(out, f"{p}.pos_embed", (f.int("num_position_embeddings", hi=1 << 24), h), v)
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        _ln(out, f"{b}.norm1", h, v)
        _ln(out, f"{b}.norm2", h, v)
        _w(out, f"{b}.attn.qkv", (3 * h, h), v, True)
        _w(out, f"{b}.attn.proj", (h, h), v, True)
        _w(out, f"{b}.mlp.linear_fc1", (inter, h), v, True)
        _w(out, f"{b}.mlp.linear_fc2", (h, inter), v, True)
    _ln(out, f"{p}.merger.ln_q", h, v)
    _w(out, f"{p}.merger.mlp.0", (merged, merged), v, True)
    _w(out, f"{p}.merger.mlp.2", (out_dim, merged), v, True)
    return out


def thinker_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """``qwen3_omni_moe_thinker`` (VISION_COUNTED): its audio and vision towers."""
    return tuple(audio_tower(top, where) + vision_tower(top, where))


# ---- the talker and code2wav ---------------------------------------------------------------------------------------


def talker(talker_cfg: dict, where: str, prefix: str = "talker") -> list[Tensor]:
    where = f"{where} (talker_config)"
    top = Fields(talker_cfg, where, defaults=TALKER_DEFAULTS, nested=True, family="qwen3_omni_moe_talker")
    f = _fields(talker_cfg, "text_config", where, TALKER_TEXT_DEFAULTS, "qwen3_omni_moe_talker_text",
                aliases={"num_experts": ("num_local_experts",)})
    h = f.int("hidden_size")
    heads, kv, hd = _heads(f, h)
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    inter = f.int("intermediate_size")
    vocab = f.int("vocab_size")
    experts = f.int("num_experts")
    top_k = f.int("num_experts_per_tok")
    if top_k > experts:
        raise f.error("num_experts_per_tok", f"({top_k}) must not exceed num_experts ({experts})")
    moe = f.int("moe_intermediate_size")
    shared = f.int("shared_expert_intermediate_size", note="the talker's shared expert")
    bias = f.bool("attention_bias")
    think = top.int("thinker_hidden_size")
    a, p = "audio", prefix
    out: list[Tensor] = []
    for i in range(layers):  # every layer the shared-expert MoE block (Qwen3OmniMoeTalkerDecoderLayer)
        b = f"{p}.model.layers.{i}"
        _attention(out, b, h, heads, kv, hd, bias, qk_norm=True)
        out.append(Tensor(f"{b}.mlp.gate.weight", (experts, h), a))
        out.append(Tensor(f"{b}.mlp.experts.gate_up_proj", (experts, 2 * moe, h), a))
        out.append(Tensor(f"{b}.mlp.experts.down_proj", (experts, h, moe), a))
        _swiglu(out, f"{b}.mlp.shared_expert", h, shared)
        _w(out, f"{b}.mlp.shared_expert_gate", (1, h), a)
        out += [Tensor(f"{b}.input_layernorm.weight", (h,), a), Tensor(f"{b}.post_attention_layernorm.weight", (h,), a)]
    out.append(Tensor(f"{p}.model.norm.weight", (h,), a))
    _w(out, f"{p}.model.codec_embedding", (vocab, h), a)
    for name in ("text_projection", "hidden_projection"):
        _w(out, f"{p}.{name}.linear_fc1", (inter, think), a, True)
        _w(out, f"{p}.{name}.linear_fc2", (h, inter), a, True)
    if not top.bool("tie_word_embeddings", False):  # tied: codec_head is codec_embedding (its _tied_weights_keys)
        _w(out, f"{p}.codec_head", (vocab, h), a)
    out += _code_predictor(talker_cfg, where, f"{p}.code_predictor")
    return out


def _code_predictor(talker_cfg: dict, where: str, p: str) -> list[Tensor]:
    f = _fields(talker_cfg, "code_predictor_config", where, CODE_PREDICTOR_DEFAULTS,
                "qwen3_omni_moe_talker_code_predictor")
    h = f.int("hidden_size")
    heads, kv, hd = _heads(f, h)
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    inter = f.int("intermediate_size")
    vocab = f.int("vocab_size")
    groups = f.int("num_code_groups", lo=2, hi=1 << 12)
    bias = f.bool("attention_bias")
    if f.bool("tie_word_embeddings", False):
        raise UnsupportedModelError(f"{f.where}: field 'tie_word_embeddings' is true: transformers 5.24 cannot build "
                                    "that code predictor (its tied-weights key names a model.embed_tokens it does not "
                                    "have; its heads are num_code_groups - 1 Linears)",
                                    "every released Qwen3-Omni checkpoint leaves it false")
    a = "audio"
    out: list[Tensor] = []
    for i in range(layers):
        b = f"{p}.model.layers.{i}"
        _attention(out, b, h, heads, kv, hd, bias, qk_norm=True)
        _swiglu(out, f"{b}.mlp", h, inter)
        out += [Tensor(f"{b}.input_layernorm.weight", (h,), a), Tensor(f"{b}.post_attention_layernorm.weight", (h,), a)]
    out.append(Tensor(f"{p}.model.norm.weight", (h,), a))
    for g in range(groups - 1):
        _w(out, f"{p}.model.codec_embedding.{g}", (vocab, h), a)
    for g in range(groups - 1):
        _w(out, f"{p}.lm_head.{g}", (vocab, h), a)
    return out


def code2wav(top: dict, where: str, p: str = "code2wav") -> list[Tensor]:
    f = _fields(top, "code2wav_config", where, CODE2WAV_DEFAULTS, "qwen3_omni_moe_code2wav")
    h = f.int("hidden_size")
    heads, kv, hd = _heads(f, h)
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    inter = f.int("intermediate_size")
    bias = f.bool("attention_bias")
    rows = f.int("codebook_size") * f.int("num_quantizers", hi=1 << 12)
    dim = f.int("decoder_dim")
    rates = f.int_list("upsample_rates", lo=1, hi=1 << 12)
    ratios = f.int_list("upsampling_ratios", lo=1, hi=1 << 12)
    rates = CODE2WAV_DEFAULTS["upsample_rates"] if rates is None else rates
    ratios = CODE2WAV_DEFAULTS["upsampling_ratios"] if ratios is None else ratios
    if dim % 2 ** len(rates):
        raise f.error("decoder_dim", f"({dim}) must halve exactly once per upsample_rates entry ({len(rates)})")
    a = "audio"
    out: list[Tensor] = []
    for i in range(layers):
        b = f"{p}.pre_transformer.layers.{i}"
        _attention(out, b, h, heads, kv, hd, bias, qk_norm=False)
        _swiglu(out, f"{b}.mlp", h, inter)
        for name in ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn_layer_scale.scale",
                     "mlp_layer_scale.scale"):
            out.append(Tensor(f"{b}.{name}", (h,), a))
    out.append(Tensor(f"{p}.pre_transformer.norm.weight", (h,), a))
    _w(out, f"{p}.code_embedding", (rows, h), a)
    for j, r in enumerate(ratios):  # ConvTranspose1d weights are (in, out, kernel)
        u = f"{p}.upsample.{j}"
        _w(out, f"{u}.0.conv", (h, h, r), a, True)
        _w(out, f"{u}.1.dwconv.conv", (h, 1, 7), a, True)  # depthwise: groups = channels
        _ln(out, f"{u}.1.norm", h, a)
        _w(out, f"{u}.1.pwconv1", (4 * h, h), a, True)
        _w(out, f"{u}.1.pwconv2", (h, 4 * h), a, True)
        out.append(Tensor(f"{u}.1.gamma", (h,), a))
    _w(out, f"{p}.decoder.0.conv", (dim, h, 7), a, True)
    for i, r in enumerate(rates):
        c_in, c = dim // 2 ** i, dim // 2 ** (i + 1)
        b = f"{p}.decoder.{i + 1}.block"
        out += [Tensor(f"{b}.0.alpha", (c_in,), a), Tensor(f"{b}.0.beta", (c_in,), a)]
        _w(out, f"{b}.1.conv", (c_in, c, 2 * r), a)  # ConvTranspose1d: (in, out, kernel), its bias out wide
        out.append(Tensor(f"{b}.1.conv.bias", (c,), a))
        for u in range(3):  # residual units of dilation 1, 3, 9
            ru = f"{b}.{u + 2}"
            out += [Tensor(f"{ru}.act1.alpha", (c,), a), Tensor(f"{ru}.act1.beta", (c,), a)]
            _w(out, f"{ru}.conv1.conv", (c, c, 7), a, True)
            out += [Tensor(f"{ru}.act2.alpha", (c,), a), Tensor(f"{ru}.act2.beta", (c,), a)]
            _w(out, f"{ru}.conv2.conv", (c, c, 1), a, True)
    c = dim // 2 ** len(rates)
    n = len(rates) + 1
    out += [Tensor(f"{p}.decoder.{n}.alpha", (c,), a), Tensor(f"{p}.decoder.{n}.beta", (c,), a)]
    _w(out, f"{p}.decoder.{n + 1}.conv", (1, c, 7), a, True)
    return out


# ---- the whole checkpoint ------------------------------------------------------------------------------------------


def _thinker(top: dict, where: str) -> dict:
    return _sub(top, "thinker_config", where)


def audio_output(top: dict, where: str) -> bool:
    """``enable_audio_output`` (default true): whether transformers builds the talker and code2wav."""
    v = top.get("enable_audio_output", True)
    if v is None:
        return True
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: field 'enable_audio_output' must be true or false, got {short(v)}")
    return v


def text_config(top: dict, where: str) -> dict:
    """``qwen3_omni_moe`` (TEXT_CONFIG_REBUILDS): the thinker's text_config, read as ``qwen3_omni_moe_thinker_lm``
    (the ``qwen3_omni_moe_text`` row), its lm_head tied by the thinker's own
    ``tie_word_embeddings`` (Qwen3OmniMoeThinkerConfig's default: untied), not the top-level flag."""
    thinker = _thinker(top, where)
    text = dict(_sub(thinker, "text_config", f"{where} (thinker_config)"))
    tie = thinker.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where} (thinker_config): field 'tie_word_embeddings' must be true or false, "
                          f"got {short(tie)}")
    text.update(model_type="qwen3_omni_moe_thinker_lm", tie_word_embeddings=tie)
    for key in ("dtype", "torch_dtype", "quantization_config"):
        if key in thinker and key not in text:
            text[key] = thinker[key]
    return text


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """The thinker's language model inside a whole Qwen3-Omni config: the ``qwen3_omni_moe_text`` row and its class
    defaults (what the engines leave unloaded is said where the wrapper is read: analysis.config, ENGINE_UNLOADED)."""
    from . import REGISTRY, decoder
    from ..family_defaults import FAMILY_DEFAULTS

    f.defaults = dict(FAMILY_DEFAULTS["qwen3_omni_moe_text"])
    f.family = "qwen3_omni_moe_text"
    spec = decoder.build(f, "qwen3_omni_moe_text", REGISTRY["qwen3_omni_moe_text"])
    return spec


def omni_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """``qwen3_omni_moe`` (VISION_COUNTED): the thinker's towers, then the talker and code2wav when built."""
    thinker = _thinker(top, where)
    w = f"{where} (thinker_config)"
    out = audio_tower(thinker, w, "thinker.model.audio_tower") + vision_tower(thinker, w, "thinker.model.visual")
    if audio_output(top, where):
        out += talker(_sub(top, "talker_config", where), where) + code2wav(top, where)
    return tuple(out)
