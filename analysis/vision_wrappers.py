"""Vision towers and projectors of more multimodal wrappers, as their ``*ForConditionalGeneration`` builds
them in transformers (the shared pieces live in analysis/vision.py):

- Llama 4 (``llama4``): Llama4VisionModel — a bias-free unfold-conv patch projection (channels·patch² →
  hidden), a class embedding, (image_size // patch_size)² + 1 learned positions, LayerNorms before and after,
  blocks of LayerNorms, biased q/k/v/o and a biased fc1/fc2 MLP, then the pixel-shuffle adapter's bias-free
  ``fc1`` (intermediate_size → projector_input_dim) and ``fc2`` (projector_output_dim²); the projector is one
  bias-free Linear (vision_output_dim → text hidden; multi_modal_projector_bias is not read).
- Kimi K2.5 (``kimi_k25``): MoonViT — a biased Conv2d patch embed, a (pos_emb_height, pos_emb_width, hidden)
  learned position grid (the time table is a buffer), blocks of LayerNorms, biased q/k/v/proj and fc1/fc2,
  a final LayerNorm; the projector: a LayerNorm over projection_hidden_size, ``in_proj`` (hidden·merge² square)
  and ``out_proj`` (→ text hidden), both biased.
- Cosmos3-Edge (``cosmos3_edge``): a SigLIP2 tower without pooling head (``model.visual``) and a merger
  (``model.projector``: LayerNorm over the vision hidden, linear_fc1 hidden·merge² → projector_hidden_size,
  linear_fc2 → text hidden, biased).
- Cosmos3-Omni (``cosmos3_omni``): the Qwen3-VL tower with its DeepStack mergers.
- EXAONE 4.5 (``exaone4_5``): the Qwen2.5-VL tower with a grouped qkv (num_key_value_heads).
- HyperCLOVAX-Vision V2 (``hyperclovax_vision_v2``): the Qwen2.5-VL tower at ``model.vision_model`` and a
  biased ``model.projector`` (out_hidden_size → text hidden).
- Nemotron-3 Nano Omni (``nemotron_h_omni``): a C-RADIO tower (bias-free image and video patch projections,
  (max_img_size // patch_size)² learned positions, cls + register tokens, LayerNorm blocks with q/k/v
  biased by qkv_bias, a biased o_proj, a biased MLP or SwiGLU and two LayerScales), a LayerNorm after it
  when the language model has MTP layers, and the projector (an RMSNorm over the pixel-shuffled width,
  bias-free linear_1 / linear_2); with an ``audio_config`` (the released checkpoint), its Parakeet
  (FastConformer) audio encoder and the ``embed_audio`` projector (kind ``audio``).
- Apertus 1.5 (``apertus1p5``): no projector; a VQGAN image tokenizer and a WavTokenizer audio encoder
  (``apertus1p5_towers``).
"""

from __future__ import annotations

from .errors import ConfigError, UnsupportedModelError
from .fields import MAX_LAYERS, Fields
from .spec import Tensor
from .vision import (_heads_divide, _lin, _ln, _qkv_block, _tower_shape, _vision_fields, qwen2_5_vl_vision,
                     qwen3_vl_vision, siglip_tensors, vision_config_dict)


def _top(top: dict, where: str, family: str) -> Fields:
    from .family_defaults import FAMILY_DEFAULTS

    return Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)


def _vc(top: dict, where: str) -> dict:
    return vision_config_dict(top.get("vision_config"), where)


def _tower_type(top: dict, where: str, wrapper: str, accepted: tuple[str, ...]) -> None:
    """The wrappers that build ``AutoModel.from_config(vision_config)``: only the default tower is modelled."""
    mt = _vc(top, where).get("model_type", accepted[0])
    if mt not in accepted:
        raise UnsupportedModelError(f"{where}: {wrapper}'s vision tower '{mt}' is not one we can count",
                                    f"modelled here: {', '.join(accepted)}")


def _square(f: Fields, key: str) -> int:
    raw = f.raw(key)
    if isinstance(raw, (list, tuple)):
        raise f.error(key, "must be one integer here (a square patch / image)")
    return f.int(key, hi=1 << 16)


# ---- Llama 4 -------------------------------------------------------------------------------------


def llama4_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _vision_fields(top.get("vision_config"), where, "llama4_vision_model")
    h, inter, layers, channels = _tower_shape(f)
    size = _square(f, "image_size")
    patch = _square(f, "patch_size")
    if patch > size:
        raise f.error("patch_size", "is larger than image_size")
    positions = (size // patch) ** 2 + 1
    p = "model.vision_model"
    out = [Tensor(f"{p}.patch_embedding.linear.weight", (h, channels * patch * patch), "vision"),
           Tensor(f"{p}.class_embedding", (h,), "vision"),
           Tensor(f"{p}.positional_embedding_vlm", (positions, h), "vision")]
    _ln(out, f"{p}.layernorm_pre", h)
    _ln(out, f"{p}.layernorm_post", h)
    for i in range(layers):
        b = f"{p}.model.layers.{i}"
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            _lin(out, f"{b}.self_attn.{name}", h, h)  # heads × (hidden // heads) = hidden (checked above)
        _ln(out, f"{b}.input_layernorm", h)
        _ln(out, f"{b}.post_attention_layernorm", h)
        _lin(out, f"{b}.mlp.fc1", inter, h)
        _lin(out, f"{b}.mlp.fc2", h, inter)
    # the defaults of the two *_output_dim fields (Llama4VisionConfig's; not in the generated table)
    proj_in = f.int("projector_input_dim")
    proj_out = f.int("projector_output_dim", 4096, note="absent: Llama4VisionConfig's default")
    out.append(Tensor(f"{p}.vision_adapter.mlp.fc1.weight", (proj_in, inter), "vision"))
    out.append(Tensor(f"{p}.vision_adapter.mlp.fc2.weight", (proj_out, proj_out), "vision"))
    vout = f.int("vision_output_dim", 7680, note="absent: Llama4VisionConfig's default")
    out.append(Tensor("model.multi_modal_projector.linear_1.weight", (text_hidden, vout), "vision"))
    return tuple(out)


# ---- Kimi K2.5 (MoonViT) ---------------------------------------------------------------------------


def kimi_k25_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _vision_fields(top.get("vision_config"), where, "kimi_k25_vision")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    _heads_divide(f, h)
    patch = _square(f, "patch_size")
    merge = f.int_list("merge_kernel_size", hi=64)
    if merge is None:
        merge = f.derived("merge_kernel_size", [2, 2], "absent: Kimi_K25VisionConfig's default (2, 2)")
    if len(merge) != 2:
        raise f.error("merge_kernel_size", "must be two integers")
    merged = h * merge[0] * merge[1]
    p = "model.vision_tower"
    out = [Tensor(f"{p}.patch_embed.proj.weight", (h, 3, patch, patch), "vision"),
           Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision"),
           Tensor(f"{p}.patch_embed.pos_emb.position_embeddings",
                  (f.int("pos_emb_height", hi=1 << 16), f.int("pos_emb_width", hi=1 << 16), h), "vision")]
    for i in range(layers):
        b = f"{p}.layers.{i}"
        _qkv_block(out, b, h, inter, split=True)
    _ln(out, f"{p}.final_layernorm", h)
    t = _top(top, where, "kimi_k25")
    q = "model.mm_projector"
    _ln(out, f"{q}.pre_norm", t.int("projection_hidden_size"))
    _lin(out, f"{q}.in_proj", merged, merged)
    _lin(out, f"{q}.out_proj", text_hidden, merged)
    return tuple(out)


# ---- Cosmos3 (Edge, Omni) --------------------------------------------------------------------------


def cosmos3_edge_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = _vc(top, where)
    # Cosmos3EdgeVisionConfig removes SigLIP2's pooling head (vision_use_head is not a field of it)
    tower = siglip_tensors(dict(vc, vision_use_head=False), where, "model.visual", family="cosmos3_edge_vision")
    f = _vision_fields(vc, where, "cosmos3_edge_vision")
    h = f.int("hidden_size")
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    proj = _top(top, where, "cosmos3_edge").int("projector_hidden_size")
    out = list(tower)
    _ln(out, "model.projector.norm", h)
    _lin(out, "model.projector.linear_fc1", proj, merged)
    _lin(out, "model.projector.linear_fc2", text_hidden, proj)
    return tuple(out)


def cosmos3_omni_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    _tower_type(top, where, "cosmos3_omni", ("qwen3_vl_vision",))
    return qwen3_vl_vision(top, text_hidden, where)


# ---- Qwen2.5-VL towers: EXAONE 4.5, HyperCLOVAX-Vision V2 ------------------------------------------


def exaone4_5_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return qwen2_5_vl_vision(top, text_hidden, where, family="exaone4_5_vision", gqa=True)


def hyperclovax_vision_v2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    # HyperCLOVAXVisionV2Config renames the hub's "qwen2_5_vl" vision model_type to qwen2_5_vl_vision
    _tower_type(top, where, "hyperclovax_vision_v2", ("qwen2_5_vl_vision", "qwen2_5_vl"))
    out = list(qwen2_5_vl_vision(top, text_hidden, where, prefix="model.vision_model"))
    f = _vision_fields(top.get("vision_config"), where, "qwen2_5_vl_vision")
    _lin(out, "model.projector", text_hidden, f.int("out_hidden_size"))
    return tuple(out)


# ---- Nemotron-3 Nano Omni (C-RADIO tower) ----------------------------------------------------------


def radio_tensors(f: Fields, video_temporal: int | None, prefix: str = "model.vision_model",
                  timm: bool = False) -> list[Tensor]:
    """transformers' RadioModel; ``timm``: the hub's remote-code RADIOModel (nvidia/C-RADIOv2-H, the Nemotron Nano VL
    checkpoints) under ``prefix`` + ``.model``: the same shapes with timm's names (patch_generator, blocks, fused
    ``attn.qkv``, ``attn.proj``) and no layer scales (timm's ViT without init_values has none)."""
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    attn = heads * (h // heads)  # RadioAttention: head_dim = hidden // heads
    if attn == 0:
        raise f.error("num_attention_heads", f"({heads}) exceeds hidden_size ({h})")
    ratio = f.float("mlp_ratio")
    if ratio <= 0:
        raise f.error("mlp_ratio", "must be positive")
    patch = f.int("patch_size", hi=4096)
    patch_dim = f.int("num_channels", hi=64) * patch * patch
    side = f.int("max_img_size", hi=1 << 20) // patch
    qkv_bias = f.bool("qkv_bias")
    p, e = (f"{prefix}.model", f"{prefix}.model.patch_generator") if timm else (prefix, f"{prefix}.embeddings")
    names = (("embedder.weight", "video_embedder.weight", "pos_embed", "cls_token.token") if timm else
             ("patch_projection.weight", "video_patch_projection.weight", "position_embedding", "cls_register_token"))
    out = [Tensor(f"{e}.{names[0]}", (h, patch_dim), "vision")]
    if video_temporal is not None:
        out.append(Tensor(f"{e}.{names[1]}", (h, video_temporal * patch_dim), "vision"))
    out.append(Tensor(f"{e}.{names[2]}", (1, side * side, h), "vision"))
    tokens = f.int("num_cls_tokens", lo=0, hi=1024) + f.int("num_registers", lo=0, hi=1024)
    if tokens:
        out.append(Tensor(f"{e}.{names[3]}", (tokens, h), "vision"))
    swiglu = f.bool("use_swiglu_ffn")
    hidden = int(h * ratio)
    if swiglu:
        hidden = (int(hidden * 2 / 3) + 7) // 8 * 8  # RadioSwiGLUFFN: two thirds, rounded up to a multiple of 8
    for i in range(layers):
        b = f"{p}.blocks.{i}" if timm else f"{p}.encoder.layer.{i}"
        _ln(out, f"{b}.norm1", h)
        _ln(out, f"{b}.norm2", h)
        if timm:
            out.append(Tensor(f"{b}.attn.qkv.weight", (3 * attn, h), "vision"))
            if qkv_bias:
                out.append(Tensor(f"{b}.attn.qkv.bias", (3 * attn,), "vision"))
            _lin(out, f"{b}.attn.proj", h, attn)
        else:
            for name in ("q_proj", "k_proj", "v_proj"):
                out.append(Tensor(f"{b}.attention.{name}.weight", (attn, h), "vision"))
                if qkv_bias:
                    out.append(Tensor(f"{b}.attention.{name}.bias", (attn,), "vision"))
            _lin(out, f"{b}.attention.o_proj", h, attn)
            out.append(Tensor(f"{b}.layer_scale1.lambda1", (h,), "vision"))
            out.append(Tensor(f"{b}.layer_scale2.lambda1", (h,), "vision"))
        if swiglu:
            _lin(out, f"{b}.mlp.gate_proj", hidden, h)
            _lin(out, f"{b}.mlp.up_proj", hidden, h)
            _lin(out, f"{b}.mlp.down_proj", h, hidden)
        else:
            _lin(out, f"{b}.mlp.fc1", hidden, h)
            _lin(out, f"{b}.mlp.fc2", h, hidden)
    return out


def nemotron_h_omni_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from .family_defaults import FAMILY_DEFAULTS

    _tower_type(top, where, "nemotron_h_omni", ("radio",))
    t = _top(top, where, "nemotron_h_omni")
    video = t.int("video_temporal_patch_size", hi=64)
    f = _vision_fields(top.get("vision_config"), where, "radio")
    own = f.int("video_temporal_patch_size", video, hi=64, note="absent: the wrapper's (sub-config init default)")
    if own != video:
        raise f.error("video_temporal_patch_size", f"({own}) must equal the wrapper's video_temporal_patch_size "
                      f"({video}), as NemotronH_Omni_Reasoning_V3_Config requires")
    out = radio_tensors(f, video)
    if "vision_hidden_size" not in top and top.get("vit_hidden_size") is not None:  # the released config's name
        vh = Fields(top, where).int("vit_hidden_size")
    else:
        vh = t.int("vision_hidden_size")
    ratio = t.float("downsample_ratio")
    if not 0 < ratio <= 1:
        raise t.error("downsample_ratio", "must be in (0, 1]")
    width = vh * int(1 / ratio) ** 2
    text = top.get("text_config", top.get("llm_config"))
    tf = Fields(text if isinstance(text, dict) else {}, f"{where} (text_config)",
                defaults=FAMILY_DEFAULTS.get("nemotron_h"), nested=True, family="nemotron_h")
    if tf.int("num_nextn_predict_layers", 0, lo=0, hi=MAX_LAYERS):
        _ln(out, "model.vision_final_layernorm", vh)
    q = "model.multi_modal_projector"
    proj = t.int("projector_hidden_size")
    out.append(Tensor(f"{q}.layer_norm.weight", (width,), "vision"))
    out.append(Tensor(f"{q}.linear_1.weight", (proj, width), "vision"))
    out.append(Tensor(f"{q}.linear_2.weight", (text_hidden, proj), "vision"))
    audio = top.get("audio_config", top.get("sound_config"))
    if audio is not None:
        out += nemotron_omni_audio(audio, text_hidden, where)
    return tuple(out)


def nemotron_omni_audio(audio: object, text_hidden: int, where: str, tower: str = "model.audio_tower",
                        proj: str = "model.embed_audio",
                        names: tuple[str, str, str] = ("layer_norm", "linear_1", "linear_2")) -> list[Tensor]:
    """The Nemotron 3 Omni sound branch: a Parakeet encoder and an RMSNorm / Linear / ReLU² / Linear projection to
    the language model (transformers' embed_audio; the hub checkpoints' sound_encoder.encoder / sound_projection
    with norm / linear1 / linear2, vLLM parakeet.py ProjectedParakeet)."""
    from .family_defaults import FAMILY_DEFAULTS

    if not isinstance(audio, dict):
        raise ConfigError(f"{where}: field 'audio_config' must be an object")
    # NemotronH_Omni_Reasoning_V3_Config (and vLLM's ParakeetConfig.from_hf_config): the released checkpoints'
    # Parakeet runs without attention biases and input scaling unless the audio_config says otherwise; its
    # model_type ("parakeet") is dropped
    audio = {"attention_bias": False, "scale_input": False, **audio, "model_type": "parakeet_encoder"}
    af = Fields(audio, f"{where} (audio_config)", defaults=FAMILY_DEFAULTS.get("parakeet_encoder"), nested=True,
                family="parakeet_encoder")
    out = parakeet_tensors(af, tower)
    h = af.int("hidden_size")
    width = af.int("projection_hidden_size")
    bias = af.bool("projection_bias")
    out.append(Tensor(f"{proj}.{names[0]}.weight", (h,), "audio"))
    for name, n_out, n_in in ((names[1], width, h), (names[2], text_hidden, width)):
        out.append(Tensor(f"{proj}.{name}.weight", (n_out, n_in), "audio"))
        if bias:
            out.append(Tensor(f"{proj}.{name}.bias", (n_out,), "audio"))
    return out


def parakeet_tensors(f: Fields, prefix: str = "model.audio_tower") -> list[Tensor]:
    """ParakeetEncoder (a FastConformer): a 2D conv subsampler (one conv, then depthwise + pointwise pairs, all
    biased; log2(subsampling_factor) stride stages) and a biased Linear from channels × the subsampled mel bins;
    per block two macaron feed-forwards, relative-position attention (q/k/v/o biased by attention_bias, a bias-free
    relative_k_proj, bias_u / bias_v), a conv module (pointwise 2h, depthwise, BatchNorm, pointwise; biased by
    convolution_bias) and five LayerNorms. BatchNorm running statistics are buffers, not parameters."""
    a = "audio"
    out: list[Tensor] = []
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    hd = f.int("head_dim", h // heads if heads <= h else 0, note="absent: hidden_size // num_attention_heads")
    if hd < 1:
        raise f.error("num_attention_heads", f"({heads}) exceeds hidden_size ({h})")
    bias = f.bool("attention_bias")
    conv_bias = f.bool("convolution_bias")
    kernel = f.int("conv_kernel_size", hi=1024)
    factor = f.int("subsampling_factor", hi=1 << 10)
    stages = factor.bit_length() - 1  # int(math.log2(subsampling_factor))
    if stages < 1:
        raise f.error("subsampling_factor", "must be at least 2")
    ch = f.int("subsampling_conv_channels", hi=1 << 16)
    k = f.int("subsampling_conv_kernel_size", hi=64)
    stride = f.int("subsampling_conv_stride", hi=64)
    mel = f.int("num_mel_bins", hi=1 << 16) // stride ** stages
    if mel < 1:
        raise f.error("num_mel_bins", f"leaves no bins after {stages} stride-{stride} stages")
    s = f"{prefix}.subsampling"

    def lin(name: str, n_out: int, n_in: int, b: bool) -> None:
        out.append(Tensor(f"{name}.weight", (n_out, n_in), a))
        if b:
            out.append(Tensor(f"{name}.bias", (n_out,), a))

    out += [Tensor(f"{s}.layers.0.weight", (ch, 1, k, k), a), Tensor(f"{s}.layers.0.bias", (ch,), a)]
    for i in range(stages - 1):
        dw, pw = 2 + 3 * i, 3 + 3 * i
        out += [Tensor(f"{s}.layers.{dw}.weight", (ch, 1, k, k), a), Tensor(f"{s}.layers.{dw}.bias", (ch,), a),
                Tensor(f"{s}.layers.{pw}.weight", (ch, ch, 1, 1), a), Tensor(f"{s}.layers.{pw}.bias", (ch,), a)]
    lin(f"{s}.linear", h, ch * mel, True)
    for i in range(layers):
        b = f"{prefix}.layers.{i}"
        for ff in ("feed_forward1", "feed_forward2"):
            lin(f"{b}.{ff}.linear1", inter, h, bias)
            lin(f"{b}.{ff}.linear2", h, inter, bias)
        for name in ("q_proj", "k_proj", "v_proj"):
            lin(f"{b}.self_attn.{name}", heads * hd, h, bias)
        lin(f"{b}.self_attn.o_proj", h, heads * hd, bias)
        lin(f"{b}.self_attn.relative_k_proj", heads * hd, h, False)
        out += [Tensor(f"{b}.self_attn.bias_u", (heads, hd), a), Tensor(f"{b}.self_attn.bias_v", (heads, hd), a)]
        c = f"{b}.conv"
        for name, shape in (("pointwise_conv1", (2 * h, h, 1)), ("depthwise_conv", (h, 1, kernel)),
                            ("pointwise_conv2", (h, h, 1))):
            out.append(Tensor(f"{c}.{name}.weight", shape, a))
            if conv_bias:
                out.append(Tensor(f"{c}.{name}.bias", (shape[0],), a))
        out += [Tensor(f"{c}.norm.weight", (h,), a), Tensor(f"{c}.norm.bias", (h,), a)]
        for name in ("norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2", "norm_out"):
            out += [Tensor(f"{b}.{name}.weight", (h,), a), Tensor(f"{b}.{name}.bias", (h,), a)]
    return out


def nemotron_h_omni_text_config(top: dict, where: str) -> dict:
    """The released Nemotron-3 Nano Omni config.json keeps its language model in ``llm_config`` (transformers maps
    it to text_config, as it maps vit_hidden_size to vision_hidden_size)."""
    llm = top.get("llm_config")
    if llm is None:
        return {}  # no language-model fields: NemotronHConfig's defaults, as transformers builds them
    if not isinstance(llm, dict):
        raise ConfigError(f"{where}: field 'llm_config' must be an object of the language model's fields")
    return dict(llm)


# ---- Apertus 1.5: a VQ image tokenizer and a WavTokenizer audio encoder ---------------------------------------------


def _int_list(f: Fields, key: str, default: list[int], note: str, lo: int = 1) -> list[int]:
    v = f.int_list(key, lo=lo, hi=1 << 16)
    if v is None:  # a tuple class default, not in the generated scalar table
        v = f.derived(key, list(default), note)
    return v


def apertus1p5_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Apertus1p5Model's ``vision_tokenizer`` (a VQGAN encoder: conv_in, channel_multiplier stages of num_res_blocks
    ResNet blocks — GroupNorm(32) pairs, 3×3 convs, a 1×1 nin_shortcut where the width changes — with attention
    blocks (GroupNorm, 1×1 q/k/v/proj_out) at the attn_resolutions, a stride-2 downsampling conv after every stage
    but the last, a middle ResNet / attention / ResNet, norm_out, conv_out, quant_conv and a bias-free codebook
    Linear) and ``audio_tokenizer`` (WavTokenizer's SEANet encoder: weight-normed Conv1d, residual blocks with a
    1×1 shortcut, one downsampling conv per upsampling ratio, an LSTM, a last conv; its codebook is a buffer).
    They hand the language model token ids (no projector). transformers holds both in float32 whatever the
    checkpoint dtype; they are counted here at the model's dtype."""
    out: list[Tensor] = []
    vf = _vision_fields(top.get("vision_config"), where, "apertus1p5_vision_tokenizer")
    v = "vision"
    p = "model.vision_tokenizer"

    def conv(name: str, n_out: int, n_in: int, k: int, kind: str, bias: bool = True) -> None:
        out.append(Tensor(f"{name}.weight", (n_out, n_in, k, k), kind))
        if bias:
            out.append(Tensor(f"{name}.bias", (n_out,), kind))

    def group_norm(name: str, c: int, f: Fields, key: str) -> None:
        if c % 32:
            raise f.error(key, f"gives {c} channels, not a multiple of the 32 GroupNorm groups")
        _ln(out, name, c)

    def resnet(name: str, c_in: int, c_out: int) -> None:
        group_norm(f"{name}.norm1", c_in, vf, "base_channels")
        conv(f"{name}.conv1", c_out, c_in, 3, v)
        group_norm(f"{name}.norm2", c_out, vf, "base_channels")
        conv(f"{name}.conv2", c_out, c_out, 3, v)
        if c_in != c_out:
            conv(f"{name}.nin_shortcut", c_out, c_in, 1, v)

    def attn(name: str, c: int) -> None:
        group_norm(f"{name}.norm", c, vf, "base_channels")
        for x in ("q", "k", "v", "proj_out"):
            conv(f"{name}.{x}", c, c, 1, v)

    base = vf.int("base_channels", hi=1 << 16)
    mult = _int_list(vf, "channel_multiplier", [1, 1, 2, 2, 4], "absent: the class default (1, 1, 2, 2, 4)")
    if not mult:
        raise vf.error("channel_multiplier", "must list at least one stage")
    attn_res = _int_list(vf, "attn_resolutions", [16], "absent: the class default (16,)", lo=0)
    blocks = vf.int("num_res_blocks", lo=0, hi=MAX_LAYERS)
    resolution = vf.int("resolution", hi=1 << 20)
    latent = vf.int("latent_channels", hi=1 << 16)
    embed = vf.int("embed_dim", hi=1 << 16)
    e = f"{p}.encoder"
    conv(f"{e}.conv_in", base, vf.int("in_channels", hi=64), 3, v)
    for s, m in enumerate(mult):
        c_in, c_out = base * (1 if s == 0 else mult[s - 1]), base * m
        use_attn = resolution // 2 ** s in attn_res
        for i in range(blocks):
            resnet(f"{e}.stages.{s}.layers.{i}.resnet", c_in, c_out)
            if use_attn:
                attn(f"{e}.stages.{s}.layers.{i}.attention", c_out)
            c_in = c_out
        if s < len(mult) - 1:
            conv(f"{e}.stages.{s}.downsample.conv", c_out, c_out, 3, v)
    c = base * mult[-1]
    resnet(f"{e}.mid.block_1", c, c)
    attn(f"{e}.mid.attn_1", c)
    resnet(f"{e}.mid.block_2", c, c)
    group_norm(f"{e}.norm_out", c, vf, "channel_multiplier")
    conv(f"{e}.conv_out", latent, c, 3, v)
    conv(f"{p}.quant_conv", embed, latent, 1, v)
    out.append(Tensor(f"{p}.quantize.embedding.weight", (vf.int("codebook_size", hi=1 << 24), embed), v))

    af = _mm_audio_fields(top, where)
    a = "audio"
    q = "model.audio_tokenizer.encoder.layers"
    norm_type = af.str("norm_type")
    if norm_type not in ("weight_norm", "time_group_norm"):
        raise af.error("norm_type", f"must be weight_norm or time_group_norm, got {norm_type!r}")

    def conv1d(name: str, n_out: int, n_in: int, k: int) -> None:
        if norm_type == "weight_norm":  # parametrizations.weight_norm: g (out, 1, 1) and v
            out.append(Tensor(f"{name}.conv.parametrizations.weight.original0", (n_out, 1, 1), a))
            out.append(Tensor(f"{name}.conv.parametrizations.weight.original1", (n_out, n_in, k), a))
        else:
            out.append(Tensor(f"{name}.conv.weight", (n_out, n_in, k), a))
            _ln(out, f"{name}.norm", n_out)
        out.append(Tensor(f"{name}.conv.bias", (n_out,), a))

    nf = af.int("num_filters", hi=1 << 16)
    ratios = _int_list(af, "upsampling_ratios", [6, 5, 5, 4], "absent: the class default (6, 5, 5, 4)")
    residual = af.int("num_residual_layers", lo=0, hi=MAX_LAYERS)
    compress = af.int("compress", hi=1 << 10)
    rk = af.int("residual_kernel_size", hi=1024)
    shortcut = af.bool("use_conv_shortcut")
    n = 0
    conv1d(f"{q}.{n}", nf, af.int("audio_channels", hi=64), af.int("kernel_size", hi=1024))
    n += 1
    scale = 1
    for ratio in reversed(ratios):
        cs = scale * nf
        for _ in range(residual):
            hidden = cs // compress
            if hidden < 1:
                raise af.error("compress", f"({compress}) leaves no channels of {cs}")
            conv1d(f"{q}.{n}.block.1", hidden, cs, rk)
            conv1d(f"{q}.{n}.block.3", cs, hidden, 1)
            if shortcut:
                conv1d(f"{q}.{n}.shortcut", cs, cs, 1)
            n += 1
        conv1d(f"{q}.{n + 1}", 2 * cs, cs, 2 * ratio)  # after an ELU
        n += 2
        scale *= 2
    d = scale * nf
    for i in range(af.int("num_lstm_layers", lo=0, hi=MAX_LAYERS)):
        for w in ("weight_ih", "weight_hh"):
            out.append(Tensor(f"{q}.{n}.lstm.{w}_l{i}", (4 * d, d), a))
        for b in ("bias_ih", "bias_hh"):
            out.append(Tensor(f"{q}.{n}.lstm.{b}_l{i}", (4 * d,), a))
    hidden = af.int("hidden_size")
    if af.int("codebook_dim") != hidden:  # WavTokenizerConfig.validate_architecture
        raise af.error("codebook_dim", f"must equal hidden_size ({hidden}): WavTokenizer has no projections around "
                       "its quantizer")
    conv1d(f"{q}.{n + 2}", hidden, d, af.int("last_kernel_size", hi=1024))
    return tuple(out)


def _mm_audio_fields(top: dict, where: str) -> Fields:
    from .family_defaults import FAMILY_DEFAULTS

    ac = vision_config_dict(top.get("audio_config"), where, "audio_config")
    mt = ac.get("model_type", "wavtokenizer_encoder")
    if mt != "wavtokenizer_encoder":  # Apertus1p5Config.validate_architecture
        raise ConfigError(f"{where}: audio_config.model_type must be 'wavtokenizer_encoder', got {mt!r}")
    return Fields(ac, f"{where} (audio_config)", defaults=FAMILY_DEFAULTS.get("wavtokenizer_encoder"), nested=True,
                  family="wavtokenizer_encoder")
