"""Gemma 3n's vision tower, audio encoder and multimodal embedders (the ``gemma3n`` wrapper,
Gemma3nForConditionalGeneration: google/gemma-3n-E2B, E4B and their -it), as transformers 5.24's modeling_gemma3n.py
and timm 1.0.31's MobileNet-V5 build them. The language model is ``gemma3n_text`` (analysis/families/gemma3n.py); the
decode trace and KV bytes stay its own.

Vision (``model.vision_tower``, kind ``vision``): ``AutoModel.from_config(vision_config)`` is TimmWrapperModel, which
calls ``timm.create_model(architecture, pretrained=False, num_classes=0, **model_args)`` (the encoder has no head).
timm's timm/models/mobilenetv5.py, _efficientnet_builder.py, _efficientnet_blocks.py and layers/attention2d.py:

- stem (``conv_stem``): a 3x3 stride-2 conv 3 -> 64 with a bias (timm 1.0.31's ``stem_bias``), an RmsNorm2d (a weight);
- ``blocks``: four stages of block strings (``_gen_mobilenet_v5``'s arch_def, copied below), every conv bias-free and
  followed by an RmsNorm2d (a weight per channel):
  ``er`` EdgeResidual: a full kxk conv in -> mid (mid = make_divisible(in * e)), norm, a 1x1 conv mid -> out, norm;
  ``uir`` UniversalInvertedResidual: an optional depthwise ``a``x``a`` conv on the input (dw_start), 1x1 in -> mid
  (pw_exp), an optional depthwise ``k``x``k`` conv on mid (dw_mid), 1x1 mid -> out (pw_proj), each normed, then a
  layer scale ``gamma`` of out (``layer_scale_init_value`` 1e-5);
  ``mqa`` MobileAttention with MultiQueryAttention2d: a norm of in, a 1x1 query conv in -> h * d, key and value 1x1
  convs in -> d (one shared head), each after a depthwise ``k``x``k`` stride-``v`` conv and a norm when ``v`` > 1,
  an output 1x1 conv h * d -> out, a layer scale of out;
- ``msfa`` (MobileNetV5MultiScaleFusionAdapter) over the last two stages' outputs (msfa_indices (-2, -1)): a
  UniversalInvertedResidual without depthwise convs or layer scale (1x1 sum -> 2 * sum, 1x1 -> 2048, each normed) and
  an RmsNorm2d of 2048 (the encoder's num_features, fixed at 2048 whatever vision_config.hidden_size says).

``mobilenetv5_300m_enc`` (the released configs) and ``mobilenetv5_300m`` (MobileNetV5 with its MSFA and no classifier
at num_classes=0: the same parameters) are 294,126,912 parameters; ``mobilenetv5_base`` 80,598,976. Any other
``architecture``, or a non-empty ``model_args`` (keyword arguments that reshape the timm model), is refused by name.

Audio (``model.audio_tower``, Gemma3nAudioEncoder, kind ``audio``): the subsampling convs (two bias-free Conv2d of
``sscp_conv_channel_size`` with ``sscp_conv_kernel_size`` / ``sscp_conv_stride_size``, each with a cumulative group
norm weight, the frequency axis padded 1 each side), ``input_proj_linear`` (channels x frequencies left -> hidden) and
``conf_num_hidden_layers`` conformer blocks: a macaron pair of feed-forwards (RMSNorm, hidden -> 4 hidden -> hidden,
RMSNorm), attention (RMSNorm, q/k/v and a relative-position ``pos_proj``, all hidden -> hidden, a ``per_dim_scale``
of head_dim, ``post`` hidden -> hidden, RMSNorm), a light conv (RMSNorm, ``linear_start`` hidden -> 2 hidden (GLU),
a depthwise Conv1d of ``conf_conv_kernel_size``, RMSNorm, ``linear_end``) and a final RMSNorm; no biases.

Embedders (Gemma3nMultimodalEmbedder, ``embed_vision`` / ``embed_audio``): a ``vocab_size`` x tower hidden table of
hard tokens, two RMSNorms of the tower hidden size, a bias-free projection to the text hidden size and a weightless
post-projection norm.

A missing ``vision_config`` / ``audio_config`` is its class defaults (Gemma3nConfig builds both towers always).

Checked against transformers 5.24 + timm 1.0.31 on the meta device (tests/test_gemma3n_whole.py): gemma-3n-E2B is
5,418,464,192 parameters (language model 4,435,182,688, vision tower 294,126,912, audio encoder 681,348,640,
embed_vision 4,460,544, embed_audio 3,345,408; the model card: "5B raw parameters"), gemma-3n-E4B and Gemma3nConfig()
7,818,517,072 (the card: "8B raw parameters").
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _mm_fields

_VISION = "vision"
_AUDIO = "audio"

#: Gemma3nAudioConfig's list defaults (the generated table holds scalars only)
SSCP_CHANNELS = (128, 32)
SSCP_KERNELS = ((3, 3), (3, 3))
SSCP_STRIDES = ((2, 2), (2, 2))

# timm's _gen_mobilenet_v5 arch_def, stage by stage (block strings: type, r repeats, a / k depthwise kernels, s stride,
# e expansion, c channels, h heads, d key / value dim, v key / value stride)
_STAGE0 = ("er_r1_k3_s2_e4_c128",) + ("er_r1_k3_s1_e4_c128",) * 2
_STAGE1 = ("uir_r1_a3_k5_s2_e6_c256", "uir_r1_a5_k0_s1_e4_c256", "uir_r1_a3_k0_s1_e4_c256", "uir_r1_a5_k0_s1_e4_c256",
           "uir_r1_a3_k0_s1_e4_c256")
_MNV5_300M = (
    _STAGE0, _STAGE1,
    ("uir_r1_a5_k5_s2_e6_c640",) + ("uir_r1_a5_k0_s1_e4_c640",) * 7 + ("uir_r1_a0_k0_s1_e1_c640",)
    + ("mqa_r1_k3_h12_v2_s1_d64_c640", "uir_r1_a0_k0_s1_e2_c640") * 14,
    ("uir_r1_a5_k5_s2_e6_c1280",) + ("mqa_r1_k3_h16_s1_d96_c1280", "uir_r1_a0_k0_s1_e2_c1280") * 19,
)
_MNV5_BASE = (
    _STAGE0, _STAGE1,
    ("uir_r1_a5_k5_s2_e6_c512",) + ("uir_r1_a5_k0_s1_e4_c512",) * 2 + ("uir_r1_a0_k0_s1_e1_c512",)
    + ("mqa_r1_k3_h8_s2_d64_c512", "uir_r1_a0_k0_s1_e2_c512") * 6,
    ("uir_r1_a5_k5_s2_e6_c1024",) + ("mqa_r1_k3_h16_s1_d64_c1024", "uir_r1_a0_k0_s1_e2_c1024") * 7,
)
#: timm architectures modelled: name -> arch_def (the 300m encoder and classifier share theirs)
MOBILENETV5 = {"mobilenetv5_300m_enc": _MNV5_300M, "mobilenetv5_300m": _MNV5_300M, "mobilenetv5_base": _MNV5_BASE}
_STEM = 64  # _gen_mobilenet_v5's stem_size (fix_stem off, multiplier 1: round_channels keeps it)
_MSFA_OUT = 2048  # MobileNetV5Encoder.num_features / MobileNetV5's num_features default


def make_divisible(v: float, divisor: int = 8, round_limit: float = 0.9) -> int:
    """timm.layers.make_divisible: to the nearest multiple of divisor, never below it nor 10% under v."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < round_limit * v else new_v


def _decode(block: str) -> tuple[str, dict[str, float]]:
    """A timm block string ("uir_r1_a3_k5_s2_e6_c256"): its type and numeric options."""
    kind, *ops = block.split("_")
    return kind, {op[0]: float(op[1:]) for op in ops}


def _conv(out: list[Tensor], name: str, shape: tuple[int, ...], norm: int | None = None) -> None:
    """A bias-free conv weight and, when given, the RmsNorm2d weight after it (ConvNormAct's ``conv`` / ``bn``)."""
    out.append(Tensor(f"{name}.conv.weight", shape, _VISION))
    if norm is not None:
        out.append(Tensor(f"{name}.bn.weight", (norm,), _VISION))


def _uir(out: list[Tensor], p: str, cin: int, cout: int, a: int, k: int, e: float, layer_scale: bool) -> None:
    mid = make_divisible(cin * e)
    if a:
        _conv(out, f"{p}.dw_start", (cin, 1, a, a), cin)
    _conv(out, f"{p}.pw_exp", (mid, cin, 1, 1), mid)
    if k:
        _conv(out, f"{p}.dw_mid", (mid, 1, k, k), mid)
    _conv(out, f"{p}.pw_proj", (cout, mid, 1, 1), cout)
    if layer_scale:
        out.append(Tensor(f"{p}.layer_scale.gamma", (cout,), _VISION))


def mobilenetv5_tensors(arch: str, prefix: str = "model.vision_tower.timm_model") -> list[Tensor]:
    """The parameters timm.create_model(arch, num_classes=0) holds, under ``prefix``."""
    out: list[Tensor] = []
    _conv(out, f"{prefix}.conv_stem", (_STEM, 3, 3, 3), _STEM)
    out.append(Tensor(f"{prefix}.conv_stem.conv.bias", (_STEM,), _VISION))
    cin = _STEM
    stage_out = []
    for si, stage in enumerate(MOBILENETV5[arch]):
        for bi, block in enumerate(stage):
            kind, o = _decode(block)
            p = f"{prefix}.blocks.{si}.{bi}"
            cout = make_divisible(o["c"])  # round_channels at multiplier 1
            if kind == "er":  # EdgeResidual: conv_exp (full kxk) + bn1, conv_pwl (1x1) + bn2, no layer scale
                mid, k = make_divisible(cin * o["e"]), int(o["k"])
                out += [Tensor(f"{p}.conv_exp.weight", (mid, cin, k, k), _VISION),
                        Tensor(f"{p}.bn1.weight", (mid,), _VISION),
                        Tensor(f"{p}.conv_pwl.weight", (cout, mid, 1, 1), _VISION),
                        Tensor(f"{p}.bn2.weight", (cout,), _VISION)]
            elif kind == "uir":
                _uir(out, p, cin, cout, int(o["a"]), int(o["k"]), o["e"], layer_scale=True)
            else:  # mqa: MobileAttention(use_multi_query=True)
                heads, dim, k, kv_stride = int(o["h"]), int(o["d"]), int(o["k"]), int(o.get("v", 1))
                out.append(Tensor(f"{p}.norm.weight", (cin,), _VISION))
                out.append(Tensor(f"{p}.attn.query.proj.weight", (heads * dim, cin, 1, 1), _VISION))
                for side in ("key", "value"):
                    if kv_stride > 1:
                        out.append(Tensor(f"{p}.attn.{side}.down_conv.weight", (cin, 1, k, k), _VISION))
                        out.append(Tensor(f"{p}.attn.{side}.norm.weight", (cin,), _VISION))
                    out.append(Tensor(f"{p}.attn.{side}.proj.weight", (dim, cin, 1, 1), _VISION))
                out.append(Tensor(f"{p}.attn.output.proj.weight", (cout, heads * dim, 1, 1), _VISION))
                out.append(Tensor(f"{p}.layer_scale.gamma", (cout,), _VISION))
            cin = cout
        stage_out.append(cin)
    fused = sum(stage_out[-2:])  # msfa_indices (-2, -1): the last two stages' outputs, concatenated
    _uir(out, f"{prefix}.msfa.ffn", fused, _MSFA_OUT, 0, 0, 2.0, layer_scale=False)
    out.append(Tensor(f"{prefix}.msfa.norm.weight", (_MSFA_OUT,), _VISION))
    return out


def _pairs(f: Fields, key: str, default: tuple) -> list[tuple[int, int]]:
    raw = f.raw(key)
    if raw is None:
        return [tuple(p) for p in default]
    ok = (isinstance(raw, list) and len(raw) == 2 and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 16
                                                    for v in p) for p in raw))
    if not ok:
        raise f.error(key, "must be two [time, frequency] pairs of positive integers "
                      "(Gemma3nAudioSubSampleConvProjection builds exactly two convs)")
    return [tuple(p) for p in raw]


def _channels(f: Fields) -> tuple[int, int]:
    raw = f.raw("sscp_conv_channel_size")
    if raw is None:
        return SSCP_CHANNELS
    if not (isinstance(raw, list) and len(raw) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 20 for v in raw)):
        raise f.error("sscp_conv_channel_size", "must be two positive integers (Gemma3nAudioSubSampleConvProjection "
                      "builds exactly two convs and flattens the last one's channels)")
    return raw[0], raw[1]


def audio_tensors(f: Fields, prefix: str = "model.audio_tower") -> list[Tensor]:
    """Gemma3nAudioEncoder's parameters (module docstring)."""
    h = f.int("hidden_size")
    heads = f.int("conf_num_attention_heads")
    if h % heads:
        raise f.error("conf_num_attention_heads", f"({heads}) must divide hidden_size ({h}): the encoder splits the "
                      "hidden size into heads of hidden_size // heads")
    hd = h // heads
    layers = f.int("conf_num_hidden_layers", hi=MAX_LAYERS)
    conv_k = f.int("conf_conv_kernel_size", hi=1 << 16)
    feat = f.int("input_feat_size", hi=1 << 20)
    c0, c1 = _channels(f)
    kernels = _pairs(f, "sscp_conv_kernel_size", SSCP_KERNELS)
    strides = _pairs(f, "sscp_conv_stride_size", SSCP_STRIDES)
    freq = feat
    for i in range(2):  # the frequency axis is padded 1 each side (pad_f_left / pad_f_right)
        freq = (freq + 2 - kernels[i][1]) // strides[i][1] + 1
        if freq < 1:
            raise f.error("sscp_conv_kernel_size", f"leaves no frequency bins after conv {i} (input_feat_size {feat})")
    a = _AUDIO
    s = f"{prefix}.subsample_conv_projection"
    out = [Tensor(f"{s}.conv_0.conv.weight", (c0, 1, *kernels[0]), a), Tensor(f"{s}.conv_0.norm.weight", (c0,), a),
           Tensor(f"{s}.conv_1.conv.weight", (c1, c0, *kernels[1]), a), Tensor(f"{s}.conv_1.norm.weight", (c1,), a),
           Tensor(f"{s}.input_proj_linear.weight", (h, c1 * freq), a)]
    for i in range(layers):
        p = f"{prefix}.conformer.{i}"
        for ffw in ("ffw_layer_start", "ffw_layer_end"):
            out += [Tensor(f"{p}.{ffw}.pre_layer_norm.weight", (h,), a),
                    Tensor(f"{p}.{ffw}.ffw_layer_1.weight", (4 * h, h), a),
                    Tensor(f"{p}.{ffw}.ffw_layer_2.weight", (h, 4 * h), a),
                    Tensor(f"{p}.{ffw}.post_layer_norm.weight", (h,), a)]
        t = f"{p}.attention"
        out += [Tensor(f"{t}.pre_attn_norm.weight", (h,), a), Tensor(f"{t}.attn.per_dim_scale", (hd,), a),
                Tensor(f"{t}.attn.relative_position_embedding.pos_proj.weight", (heads * hd, h), a)]
        out += [Tensor(f"{t}.attn.{x}_proj.weight", (heads * hd, h), a) for x in "qkv"]
        out += [Tensor(f"{t}.post.weight", (h, h), a), Tensor(f"{t}.post_norm.weight", (h,), a)]
        c = f"{p}.lconv1d"
        out += [Tensor(f"{c}.pre_layer_norm.weight", (h,), a), Tensor(f"{c}.linear_start.weight", (2 * h, h), a),
                Tensor(f"{c}.depthwise_conv1d.weight", (h, 1, conv_k), a), Tensor(f"{c}.conv_norm.weight", (h,), a),
                Tensor(f"{c}.linear_end.weight", (h, h), a), Tensor(f"{p}.norm.weight", (h,), a)]
    return out


def embedder_tensors(f: Fields, name: str, kind: str, text_hidden: int) -> list[Tensor]:
    """Gemma3nMultimodalEmbedder: the hard-token table, two norms and the projection (its last norm is weightless)."""
    h = f.int("hidden_size")
    p = f"model.{name}"
    return [Tensor(f"{p}.embedding.weight", (f.int("vocab_size", hi=1 << 26), h), kind),
            Tensor(f"{p}.hard_embedding_norm.weight", (h,), kind),
            Tensor(f"{p}.soft_embedding_norm.weight", (h,), kind),
            Tensor(f"{p}.embedding_projection.weight", (text_hidden, h), kind)]


def _fields(top: dict, where: str, key: str, family: str) -> Fields:
    """The sub-config's Fields; an absent or null one is its class defaults (Gemma3nConfig builds both towers)."""
    cfg = top.get(key)
    return _mm_fields({} if cfg is None else cfg, where, key, family) or Fields({}, where)


def gemma3n_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Gemma3nForConditionalGeneration's vision tower and embed_vision (kind ``vision``), audio encoder and
    embed_audio (kind ``audio``)."""
    vf = _fields(top, where, "vision_config", "gemma3n_vision")
    arch = vf.str("architecture")
    if arch not in MOBILENETV5:
        raise UnsupportedModelError(
            f"{where} (vision_config): Gemma 3n vision architecture '{arch}' is not modelled: its timm module "
            "definitions were not counted here",
            f"the modelled timm architectures are {', '.join(MOBILENETV5)} (the released checkpoints use "
            "mobilenetv5_300m_enc)")
    args = vf.raw("model_args")
    if args is not None and not isinstance(args, dict):
        raise vf.error("model_args", "must be an object of timm.create_model keyword arguments, or null")
    if args:
        raise UnsupportedModelError(
            f"{where} (vision_config): Gemma 3n vision model_args {sorted(args)} are not modelled: TimmWrapperModel "
            f"passes them to timm.create_model('{arch}'), where they can reshape the tower",
            "the released checkpoints set model_args null")
    af = _fields(top, where, "audio_config", "gemma3n_audio")
    out = mobilenetv5_tensors(arch) + embedder_tensors(vf, "embed_vision", _VISION, text_hidden)
    out += audio_tensors(af) + embedder_tensors(af, "embed_audio", _AUDIO, text_hidden)
    return tuple(out)

