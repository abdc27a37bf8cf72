"""Microsoft Phi-4-multimodal (``phi4_multimodal``), as transformers' modeling_phi4_multimodal.py builds
Phi4MultimodalForCausalLM (the whole checkpoint; transformers has no image-text-to-text class for it).

Its config is flat: Phi-4-mini's decoder fields at the top level (read as ``phi3``: a fused ``qkv_proj``, a fused
``gate_up_proj``, partial RoPE; ``FLAT_TEXT_WRAPPERS``) beside ``vision_config`` and ``audio_config``; lm_head tied
as the top-level ``tie_word_embeddings`` says (class default false). ``model.embed_tokens_extend`` holds:

- ``image_embed``: ``img_processor``, a SigLIP vision model with its attention-pooling head
  (Phi4MultimodalVisionModel: biased patch conv, (image_size // patch_size)² positions, SigLIP blocks,
  post_layernorm, head), then ``img_projection_up`` Linear(vision hidden, hidden) and ``img_projection_down``
  Linear(hidden, hidden), both biased, and ``global_img_feature_extensor`` [1, 1, vision hidden] and
  ``sub_img_feature_extensor`` [1, 1, 1, vision hidden]. The 2 × 2 token compression is an AvgPool (no parameters).
- ``audio_embed``: ``encoder``, a conformer (Phi4MultimodalAudioModel): the mean / inverse-std input
  normalisation (buffers); NeMo-style subsampling ``embed`` — Conv2d(1, C, 3) then log2(time_reduction) - 1 pairs
  of a depthwise Conv2d(C, C, 3, groups C) and a pointwise Conv2d(C, C, 1), all biased, C = nemo_conv_channels,
  and ``out`` Linear(C × nemo_final_size, hidden) with nemo_final_size = input_size halved (floor((n - 1) / 2 + 1))
  once per stride-2 conv —; a T5-style relative attention bias Embedding(buckets, heads), buckets =
  bias_max_distance (× 2 unless bias_symmetric); ``num_blocks`` conformer blocks: two macaron MLPs (LayerNorm,
  biased gate_up Linear(hidden, 2 × intermediate), biased down), biased q/k/v/o (heads × hidden / heads), a conv
  module (LayerNorm; GLU pointwise Conv1d(hidden, 2E, 1) with its b1 / b2 [1, E, 1]; depthwise Conv1d(hidden,
  hidden × depthwise_multiplier, kernel_size, groups hidden) and pointwise Conv1d(· , depthwise_separable_out_channel,
  1); ``ext_pw_conv_1d`` Conv1d(hidden, E, 1); all biased; E = ext_pw_out_channel) and two LayerNorms — then the
  speech and vision-speech projections: ``up_proj_for_speech`` / ``up_proj_for_vision_speech`` Linear(audio hidden ×
  downsample_rate, hidden) and ``down_proj_for_speech`` / ``down_proj_for_vision_speech`` Linear(hidden, hidden),
  biased. Counted as "audio".

The hub's own checkpoint (microsoft/Phi-4-multimodal-instruct, remote code model_type ``phi4mm``) also carries the
vision and speech LoRA adapters on every decoder projection (5.57B published); transformers' format keeps those as
separate PEFT adapters, so this count (transformers' model) holds no LoRA weights.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError, short
from ..fields import MAX_LAYERS, Fields, config_regex
from ..spec import Tensor
from ..vision import siglip_tensors, vision_config_dict

PREFIX = "model.embed_tokens_extend"


def _fields(top: dict, key: str, where: str, family: str) -> tuple[dict, Fields]:
    from ..family_defaults import FAMILY_DEFAULTS

    cfg = vision_config_dict(top.get(key), where, key)
    return cfg, Fields(cfg, f"{where} ({key})", defaults=FAMILY_DEFAULTS.get(family), nested=True, family=family)


def _linear(out: list[Tensor], name: str, n_out: int, n_in: int, kind: str) -> None:
    out.append(Tensor(f"{name}.weight", (n_out, n_in), kind))
    out.append(Tensor(f"{name}.bias", (n_out,), kind))


def _conv(out: list[Tensor], name: str, shape: tuple[int, ...]) -> None:
    out.append(Tensor(f"{name}.weight", shape, "audio"))
    out.append(Tensor(f"{name}.bias", (shape[0],), "audio"))


def _norm(out: list[Tensor], name: str, dim: int) -> None:
    out.append(Tensor(f"{name}.weight", (dim,), "audio"))
    out.append(Tensor(f"{name}.bias", (dim,), "audio"))


def _vision(top: dict, text_hidden: int, where: str) -> list[Tensor]:
    vc, _ = _fields(top, "vision_config", where, "phi4_multimodal_vision")
    p = f"{PREFIX}.image_embed"
    # Phi4MultimodalVisionModel always builds the pooling head (a SigLIP tower with vision_use_head)
    out = siglip_tensors(dict(vc, vision_use_head=True), where, prefix=f"{p}.img_processor",
                         family="phi4_multimodal_vision")
    vh = out[-1].shape[0]  # the head's fc2 bias: the vision hidden size
    _linear(out, f"{p}.img_projection_up", text_hidden, vh, "vision")
    _linear(out, f"{p}.img_projection_down", text_hidden, text_hidden, "vision")
    out.append(Tensor(f"{p}.global_img_feature_extensor", (1, 1, vh), "vision"))
    out.append(Tensor(f"{p}.sub_img_feature_extensor", (1, 1, 1, vh), "vision"))
    return out


def _audio(top: dict, text_hidden: int, where: str) -> list[Tensor]:
    _, f = _fields(top, "audio_config", where, "phi4_multimodal_audio")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    blocks = f.int("num_blocks", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    hd = h // heads  # Phi4MultimodalAudioAttention: no head_dim field in its config
    tr = f.int("time_reduction", hi=1 << 16)
    if tr % 2:
        raise f.error("time_reduction", f"({tr}) must be a multiple of 2 (Phi4MultimodalAudioConfig checks it)")
    steps = tr.bit_length() - 1  # int(log2(time_reduction))
    c = f.int("nemo_conv_channels", hi=1 << 16)
    freq = f.int("input_size", hi=1 << 16)
    for _ in range(steps):  # Phi4MultimodalAudioConfig.__post_init__: nemo_final_size
        freq = (freq - 1) // 2 + 1
    e = f.int("ext_pw_out_channel", hi=1 << 20)
    dsep = f.int("depthwise_separable_out_channel", hi=1 << 20)
    mult = f.int("depthwise_multiplier", hi=1024)
    kernel = f.int("kernel_size", hi=1024)
    max_dist = f.int("bias_max_distance", hi=1 << 24)
    buckets = max_dist if f.bool("bias_symmetric") else 2 * max_dist
    down = f.int("downsample_rate", hi=1024)

    out: list[Tensor] = []
    enc = f"{PREFIX}.audio_embed.encoder"
    _conv(out, f"{enc}.embed.conv.0", (c, 1, 3, 3))
    for i in range(steps - 1):  # Sequential: [conv, act] then [dw conv, pw conv, act] per further step
        _conv(out, f"{enc}.embed.conv.{2 + 3 * i}", (c, 1, 3, 3))
        _conv(out, f"{enc}.embed.conv.{3 + 3 * i}", (c, c, 1, 1))
    _linear(out, f"{enc}.embed.out", h, c * freq, "audio")
    out.append(Tensor(f"{enc}.relative_attention_bias_layer.bias_values.weight", (buckets, heads), "audio"))
    for i in range(blocks):
        b = f"{enc}.encoders.{i}"
        for ff in ("feed_forward_in", "feed_forward_out"):
            _norm(out, f"{b}.{ff}.layer_norm", h)
            _linear(out, f"{b}.{ff}.gate_up_proj", 2 * inter, h, "audio")
            _linear(out, f"{b}.{ff}.down_proj", h, inter, "audio")
        for name in ("q_proj", "k_proj", "v_proj"):
            _linear(out, f"{b}.self_attn.{name}", heads * hd, h, "audio")
        _linear(out, f"{b}.self_attn.o_proj", h, heads * hd, "audio")
        _norm(out, f"{b}.conv.layer_norm", h)
        _conv(out, f"{b}.conv.glu.ext_pw_conv_1d", (2 * e, h, 1))
        out.append(Tensor(f"{b}.conv.glu.b1", (1, e, 1), "audio"))
        out.append(Tensor(f"{b}.conv.glu.b2", (1, e, 1), "audio"))
        _conv(out, f"{b}.conv.dw_sep_conv_1d.dw_conv", (h * mult, 1, kernel))
        _conv(out, f"{b}.conv.dw_sep_conv_1d.pw_conv", (dsep, h * mult, 1))
        _conv(out, f"{b}.conv.ext_pw_conv_1d", (e, h, 1))
        _norm(out, f"{b}.layer_norm_att", h)
        _norm(out, f"{b}.layer_norm", h)
    a = f"{PREFIX}.audio_embed"
    for kind in ("speech", "vision_speech"):
        _linear(out, f"{a}.up_proj_for_{kind}", text_hidden, h * down, "audio")
        _linear(out, f"{a}.down_proj_for_{kind}", text_hidden, text_hidden, "audio")
    return out


def phi4_multimodal_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    if not isinstance(top, dict):
        raise ConfigError(f"{where}: expected an object")
    return tuple(_vision(top, text_hidden, where) + _audio(top, text_hidden, where))


# ---- the hub's remote-code format (``phi4mm``: microsoft/Phi-4-multimodal-instruct) --------------------------------
# transformers' convert_phi4_multimodal_weights_to_hf.py maps it onto Phi4MultimodalForCausalLM one to one (audio
# feed_forward_*.net.0.linear / net.2 -> gate_up_proj / down_proj, self_attn.linear_q/k/v/out -> q/k/v/o_proj, a LoRA'd
# projection's base_layer -> the projection) and drops the LoRA weights; its config: audio_processor.config renamed
# (attention_dim -> hidden_size, attention_heads -> num_attention_heads, linear_units -> intermediate_size,
# nemo_conv_settings.conv_channels -> nemo_conv_channels, relative_attention_bias_args.t5_bias_max_distance ->
# bias_max_distance) plus embd_layer.audio_embd_layer.downsample_rate; the vision tower is the fixed SigLIP
# (Phi4MultimodalVisionConfig's defaults) with image_embd_layer's crop_size. vLLM's phi4mm.py / phi4mm_audio.py load
# the same names. Options of the remote conformer that change shapes and that this mapping (and transformers) does not
# model are refused.

#: (remote audio_processor.config key, the value the published checkpoint uses and transformers assumes)
_AUDIO_FIXED = (("input_layer", "nemo_conv"), ("batch_norm", False), ("bias_in_glu", True),
                ("linear_glu_in_convm", False), ("ext_pw_kernel_size", 1), ("attention_inner_dim", -1),
                ("attention_group_size", 1), ("cnn_out", -1))
_IMAGE_FIXED = (("projection_cls", "mlp"), ("use_hd_transform", True), ("with_learnable_separator", True),
                ("image_token_compression_cls", "avg_pool_2d"))
_AUDIO_EMBD_FIXED = (("projection_cls", "mlp"), ("use_qformer", False), ("use_conv_downsample", False))
_LORA_MODULES = ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")


def _obj(d: dict, key: str, where: str) -> dict:
    v = d.get(key)
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object (Phi-4-multimodal's remote config has it), "
                          f"got {type(v).__name__}")
    return v


def _fixed(d: dict, pairs: tuple, where: str, path: str) -> None:
    for key, want in pairs:
        if key in d and d[key] != want:
            raise UnsupportedModelError(f"{where}: {path}.{key} = {short(d[key])} is not modelled",
                                        f"the published Phi-4-multimodal (and transformers' phi4_multimodal) use "
                                        f"{short(want)}")


def phi4mm_transformers_config(top: dict, where: str) -> dict:
    """The remote config's vision_config / audio_config as transformers' conversion script builds them."""
    embd = _obj(top, "embd_layer", where)
    image = _obj(embd, "image_embd_layer", f"{where} (embd_layer)")
    audio_embd = _obj(embd, "audio_embd_layer", f"{where} (embd_layer)")
    _fixed(image, _IMAGE_FIXED, where, "embd_layer.image_embd_layer")
    _fixed(audio_embd, _AUDIO_EMBD_FIXED, where, "embd_layer.audio_embd_layer")
    proc = _obj(top, "audio_processor", where)
    if proc.get("name", "cascades") != "cascades":
        raise UnsupportedModelError(f"{where}: audio_processor.name {short(proc.get('name'))} is not modelled",
                                    "Phi-4-multimodal's audio encoder is the 'cascades' conformer")
    ac = _obj(proc, "config", f"{where} (audio_processor)")
    w = f"{where} (audio_processor.config)"
    _fixed(ac, _AUDIO_FIXED, where, "audio_processor.config")
    nemo = ac.get("nemo_conv_settings") or {}
    if not isinstance(nemo, dict):
        raise ConfigError(f"{w}: field 'nemo_conv_settings' must be an object")
    if nemo.get("subsampling", "dw_striding") != "dw_striding":
        raise UnsupportedModelError(f"{w}: nemo_conv_settings.subsampling {short(nemo.get('subsampling'))} is not "
                                    "modelled", "the published model uses 'dw_striding'")
    rel = ac.get("relative_attention_bias_args")
    if not isinstance(rel, dict) or rel.get("type") != "t5":
        raise UnsupportedModelError(f"{w}: relative_attention_bias_args {short(rel)} is not modelled",
                                    "the remote conformer builds only {'type': 't5', ...}")
    renames = {"attention_dim": "hidden_size", "attention_heads": "num_attention_heads",
               "linear_units": "intermediate_size"}
    missing = [k for k in ("attention_dim", "attention_heads", "linear_units", "num_blocks") if k not in ac]
    if "conv_channels" not in nemo:
        missing.append("nemo_conv_settings.conv_channels")
    if missing:  # the remote ConformerEncoder's own defaults differ from transformers': name them
        raise ConfigError(f"{w}: missing field(s) {', '.join(missing)} (the published config gives them)")
    audio = {renames.get(k, k): v for k, v in ac.items() if k in (*renames, "num_blocks", "time_reduction",
                                                                   "input_size", "ext_pw_out_channel",
                                                                   "depthwise_multiplier", "kernel_size")}
    if "depthwise_seperable_out_channel" in ac:  # the remote spelling
        audio["depthwise_separable_out_channel"] = ac["depthwise_seperable_out_channel"]
    audio["nemo_conv_channels"] = nemo["conv_channels"]
    audio["bias_max_distance"] = rel.get("t5_bias_max_distance", 1000)
    audio["bias_symmetric"] = rel.get("t5_bias_symmetric", False)
    if "downsample_rate" in audio_embd:
        audio["downsample_rate"] = audio_embd["downsample_rate"]
    vision = {k: image[k] for k in ("crop_size",) if k in image}
    return dict(top, vision_config=vision, audio_config=audio)


def _lora(top: dict, where: str) -> list[Tensor]:
    """The vision and speech LoRA adapters the remote checkpoint holds (PEFT: lora_A [r, in], lora_B [out, r] per
    adapted projection, adapter names "vision" / "speech"), on the decoder projections whose name (``layers.N.…``,
    under the model PEFT wraps) fully matches the adapter's ``layer`` pattern. The text decode runs without them
    (the remote code unsets the adapters for text-only input): counted as "vision" / "audio"."""

    from ..family_defaults import FAMILY_DEFAULTS

    f = Fields(top, where, defaults=FAMILY_DEFAULTS.get("phi4_multimodal"), family="phi4_multimodal")
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads)
    hd = h // heads
    inter = f.int("intermediate_size")
    dims = {"self_attn.qkv_proj": (h, (heads + 2 * kv) * hd), "self_attn.o_proj": (heads * hd, h),
            "mlp.gate_up_proj": (h, 2 * inter), "mlp.down_proj": (inter, h)}
    out: list[Tensor] = []
    for adapter, key, kind in (("vision", "vision_lora", "vision"), ("speech", "speech_lora", "audio")):
        cfg = top.get(key)
        if cfg is None:
            continue
        if not isinstance(cfg, dict):
            raise ConfigError(f"{where}: field '{key}' must be an object (r, layer, lora_alpha)")
        lf = Fields(cfg, f"{where} ({key})", family="phi4mm")
        r = lf.int("r", hi=1 << 16)
        pattern = cfg.get("layer")
        if not isinstance(pattern, str):
            raise ConfigError(f"{where}: field '{key}.layer' must be a regular expression of the adapted modules")
        rx = config_regex(pattern, f"{where}: field '{key}.layer' is not a valid regular expression")
        for i in range(layers):
            for mod in _LORA_MODULES:
                if rx.fullmatch(f"layers.{i}.{mod}"):
                    n_in, n_out = dims[mod]
                    base = f"model.layers.{i}.{mod}"
                    out.append(Tensor(f"{base}.lora_A.{adapter}.weight", (r, n_in), kind))
                    out.append(Tensor(f"{base}.lora_B.{adapter}.weight", (n_out, r), kind))
    return out


def phi4mm_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The remote format's towers (as phi4_multimodal_towers counts the converted checkpoint) and its LoRA adapters."""
    for key in ("lm_head_bias", "attention_bias", "mlp_bias"):
        if top.get(key, False) is not False:
            raise UnsupportedModelError(f"{where}: {key} = {short(top[key])} is not modelled",
                                        "the published Phi-4-multimodal has no biases in its decoder")
    if top.get("full_attn_mod", 1) != 1:
        raise UnsupportedModelError(f"{where}: full_attn_mod = {short(top['full_attn_mod'])} is not modelled",
                                    "the published Phi-4-multimodal has full_attn_mod 1")
    return phi4_multimodal_towers(phi4mm_transformers_config(top, where), text_hidden, where) + tuple(_lora(top, where))
