"""The Kyutai / Mimi speech-text family, counted whole as transformers 5.24 builds it on the meta device.

* ``kyutai_speech_to_text`` (KyutaiSpeechToTextForConditionalGeneration, models/kyutai_speech_to_text; kyutai/stt-2.6b-en-trfs,
  stt-1b-en_fr-trfs): the language model is a MoshiModel: bias-free attention (``q_proj.linear`` ...: MoshiLinear),
  RoPE rotate-half (the conversion permutes q / k), MoshiGatingMLP (``fc1`` hidden -> ffn_dim, its halves gate and up,
  ``fc2`` from ffn_dim / 2: a fused gated MLP of intermediate ffn_dim / 2), RMSNorms of eps 1e-8, every layer cached
  ``sliding_window`` tokens deep (DynamicCache builds sliding layers from the config; vLLM's port and Kyutai's own code
  keep a ring of ``context`` = 375 / 750 frames). Its ``embed_tokens.embed_tokens`` holds the text rows, then
  ``num_codebooks`` x ``codebook_vocab_size`` audio rows, then one pad row; a step sums the text row and one row per
  codebook. lm_head has ``vocab_size`` rows (text only, never tied: a tie would need the two tables the same size).
  ``codec_model`` is a MimiModel (``codec_config``, kind ``audio``), kept in float32 by transformers.
* ``csm`` (CsmForConditionalGeneration, Sesame CSM: sesame/csm-1b): the backbone is a Llama decoder (``backbone_model``)
  whose audio-frame input is the sum of ``num_codebooks`` rows of ``embed_audio_tokens`` (num_codebooks x vocab_size
  rows, kind ``audio``) and whose text input is ``embed_text_tokens`` (``text_vocab_size`` rows: our embedding);
  ``lm_head`` (vocab_size rows, never tied) predicts codebook 0. The depth decoder (``depth_decoder_config``, kind
  ``audio``): a Llama decoder of its own width with ``inputs_embeds_projector`` from the backbone width, its
  ``embed_tokens`` (tied to the backbone's audio table when ``tie_codebooks_embeddings``, the default) and
  ``codebooks_head`` (num_codebooks - 1 heads of hidden x vocab_size); and the Mimi codec (``codec_config``).
* ``moshi`` (MoshiForConditionalGeneration: kmhf/hf-moshiko, hf-moshika): the text decoder (``decoder``, a
  MoshiForCausalLM: Kyutai STT's layer, ``embed_tokens`` of vocab_size + 1 rows, a vocab_size lm_head), 2 x
  num_codebooks audio embeddings (the model's and the user's streams, kind ``audio``), the depth decoder
  (``depth_decoder_config``, kind ``audio``: a text embedding, num_codebooks - 1 audio embeddings, and every
  projection, MLP and head a MoshiFlexibleLinear, one matrix per codebook; no RoPE, no final norm) and the Mimi
  ``audio_encoder`` (``audio_encoder_config``).
* the Mimi codec (MimiModel, models/mimi): the SEANet encoder (causal convs, residual blocks, one strided conv per
  ratio), the encoder transformer (LayerNorms, layer scales, bias-free GELU MLP), the downsampling conv to
  ``frame_rate``, the split residual vector quantizer's input / output projections, the upsampling transposed conv
  (``upsample_groups`` groups), the decoder transformer and the SEANet decoder. Its codebooks (``embed_sum``,
  ``cluster_usage``, ``initialized``) are buffers, in the checkpoint but no parameters: a caveat gives their size.

The decode trace, FLOPs and K/V per step are the decoder that runs once per 80 ms audio frame (one text token for
Kyutai STT and Moshi; codebook 0 for CSM). CSM's depth decoder runs num_codebooks - 1 more sequential steps per frame
(Moshi's num_codebooks, each with its codebook's weights) over a cache of its own that is dropped after the frame;
the planner's one-decoder step cannot hold that second loop, so a caveat prices it (FLOPs and weight passes per frame).
Mimi's encoder (Kyutai STT, Moshi: the input audio) and decoder (CSM, Moshi: the generated codes to audio) run beside
the steps, not in the trace (a caveat).

Equal to transformers on the meta device, every name and shape (tests/test_kyutai_mimi.py): KyutaiSpeechToTextConfig()
(= kyutai/stt-2.6b-en-trfs, which transformers' conversion script builds from the class defaults) 2,696,431,425
(Mimi 79,308,609); stt-1b-en_fr-trfs (reconstructed) 1,068,517,185; sesame/csm-1b 1,632,100,161 (depth decoder
178,362,368); kmhf/hf-moshiko (MoshiConfig.from_audio_encoder_config(kyutai/mimi)) 7,767,037,761.

``csm_depth_decoder_model`` alone is refused: CsmDepthDecoderForCausalLM's first input is the backbone's last hidden
state, so it is no model of its own; it is counted inside ``csm``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor
from .audio_llm import _conv1d, _linear, _sub
from .common import ALIASES, Traits
from .voxtral import sub_config_dict

#: MimiConfig's upsampling_ratios when absent or empty (MimiConfig.__post_init__; not a scalar class default)
MIMI_RATIOS = (8, 6, 5, 4)

#: what an engine serving these checkpoints leaves unloaded: the one vLLM port of Kyutai STT in the code index
#: (vllm/model_executor/models/kyutai_speech_to_text.py, "LM backbone only") ignores ``codec_model.*`` on load; the
#: caller runs Mimi and feeds the summed audio embeddings
STT_UNLOADED = ("codec_model.",)

_MOSHI_MODULES = ((".q_proj.linear.", ".q_proj."), (".k_proj.linear.", ".k_proj."), (".v_proj.linear.", ".v_proj."),
                  (".o_proj.linear.", ".o_proj."), (".mlp.fc1.", ".mlp.gate_up_proj."),
                  (".mlp.fc2.", ".mlp.down_proj."))
#: MoshiModel's decoder as Kyutai STT builds it (the intermediate width is set per config: ffn_dim / 2)
STT_TRAITS = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, fused_gate_up=True, windows="all",
                    renames=(("model.embed_tokens.embed_tokens.", "model.embed_tokens."),), modules=_MOSHI_MODULES)
#: CSM's backbone and depth decoder: Llama's layer (CsmDecoderLayer), no sliding window
CSM_TRAITS = Traits(windows="none", renames=(("backbone_model.", "model."),
                                             ("embed_text_tokens.", "model.embed_tokens.")))

#: ffn_dim is the fused gate + up width here, never the intermediate size (common.ALIASES reads it as one)
_NO_FFN_ALIAS = {**ALIASES, "intermediate_size": tuple(a for a in ALIASES["intermediate_size"] if a != "ffn_dim")}


def _fields(f: Fields, model_type: str, drop: tuple[str, ...]) -> Fields:
    """``f``'s config read over the class defaults of ``model_type`` for every field (the config classes fill any
    absent one), ``drop`` keys left out (fields transformers does not read for this model)."""
    from ..family_defaults import FAMILY_DEFAULTS

    cfg = {k: v for k, v in f.cfg.items() if k not in drop}
    return Fields(cfg, f.where, aliases=_NO_FFN_ALIAS, defaults=FAMILY_DEFAULTS[model_type], nested=True,
                  family=model_type)


def _audio(tensors: list[Tensor], old: str, new: str) -> list[Tensor]:
    """Tensors of a sub-decoder built with our layer names, renamed under ``new`` and counted as kind ``audio``."""
    return [Tensor(new + t.name[len(old):] if t.name.startswith(old) else t.name, t.shape, "audio") for t in tensors]


def _attention_shapes(h: int, heads: int, kv: int, hd: int) -> tuple[tuple[str, int, int], ...]:
    """(projection, rows, columns) of q / k / v / o."""
    return ("q_proj", heads * hd, h), ("k_proj", kv * hd, h), ("v_proj", kv * hd, h), ("o_proj", h, heads * hd)


def _moshi_widths(f: Fields) -> tuple[int, int]:
    """(hidden_size, ffn_dim) of a Moshi layer, checked as its config class and MoshiAttention check them."""
    ffn, hidden, heads = f.int("ffn_dim"), f.int("hidden_size"), f.int("num_attention_heads")
    if ffn % 2:  # validate_architecture
        raise f.error("ffn_dim", f"({ffn}) must be even: fc1's output is split into the gate and up halves")
    if hidden % heads:  # MoshiAttention
        raise f.error("hidden_size", f"({hidden}) must be divisible by num_attention_heads ({heads})")
    return hidden, ffn


def _moshi_decoder(f: Fields, model_type: str, traits: Traits, tie_why: str) -> tuple[ModelSpec, Fields]:
    """A Moshi text decoder (MoshiModel + a text lm_head) read over the class defaults of ``model_type``."""
    from . import decoder

    g = _fields(f, model_type, ("intermediate_size",))  # MoshiGatingMLP reads ffn_dim only
    _, ffn = _moshi_widths(g)
    spec = decoder.build(g, model_type, replace(traits, intermediate_default=ffn // 2))
    if spec.tie_word_embeddings:
        raise g.error("tie_word_embeddings", f"is true, but {tie_why}")
    f.records.update(g.records)
    return spec, g


# ---- the Mimi codec --------------------------------------------------------------------------------------------


def _conv(out: list[Tensor], name: str, c_out: int, c_in: int, kernel: int, bias: bool = True) -> None:
    """Mimi's conv layers keep their Conv1d under ``.conv``."""
    _conv1d(out, f"{name}.conv", c_out, c_in, kernel, bias)


def _resnet(out: list[Tensor], p: str, dim: int, f: Fields) -> None:
    """MimiResnetBlock: ELU, conv (dim -> dim / compress, residual_kernel_size), ELU, conv (-> dim, 1); an optional
    1-wide shortcut conv."""
    hidden = dim // f.int("compress")
    if hidden < 1:
        raise f.error("compress", f"({f.int('compress')}) leaves a residual block of {dim} channels none")
    _conv(out, f"{p}.block.1", hidden, dim, f.int("residual_kernel_size", hi=1 << 10))
    _conv(out, f"{p}.block.3", dim, hidden, 1)
    if f.bool("use_conv_shortcut"):
        _conv(out, f"{p}.shortcut", dim, dim, 1)


def _mimi_transformer(out: list[Tensor], p: str, f: Fields) -> None:
    """MimiTransformerModel: per layer q / k / v / o (attention_bias), LayerNorms with bias, two layer scales, a
    bias-free fc1 / fc2 MLP."""
    h = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", lambda: heads)
    hd = f.int("head_dim", lambda: h // heads)
    bias = f.bool("attention_bias")
    inter = f.int("intermediate_size")
    for i in range(f.int("num_hidden_layers", lo=0, hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for proj, rows, cols in _attention_shapes(h, heads, kv, hd):
            _linear(out, f"{b}.self_attn.{proj}", rows, cols, bias)
        _linear(out, f"{b}.mlp.fc1", inter, h, False)
        _linear(out, f"{b}.mlp.fc2", h, inter, False)
        for norm in ("input_layernorm", "post_attention_layernorm"):  # nn.LayerNorm: weight and bias
            out += [Tensor(f"{b}.{norm}.weight", (h,), "audio"), Tensor(f"{b}.{norm}.bias", (h,), "audio")]
        out += [Tensor(f"{b}.self_attn_layer_scale.scale", (h,), "audio"),
                Tensor(f"{b}.mlp_layer_scale.scale", (h,), "audio")]


def _present(raw: dict, key: str, where: str) -> bool:
    """MimiConfig's ``encoder_config`` / ``decoder_config``: null drops that half, absent keeps it (any other value:
    derived from the shared fields, as the config class does)."""
    return not (key in raw and raw[key] is None)


def mimi_config(top: dict, key: str, where: str, name: str) -> tuple[Fields, dict]:
    from ..family_defaults import FAMILY_DEFAULTS

    f = _sub(top, key, where, "mimi", name, FAMILY_DEFAULTS["mimi"])
    return f, f.cfg


def mimi_rates(f: Fields) -> tuple[float, int]:
    """(frame_rate, encodec_frame_rate) as MimiConfig computes them: frame_rate given, else sampling_rate over the
    encoder's total stride (the ratios times the downsampling layer's 2); encodec_frame_rate is ceil(sampling_rate /
    prod(ratios))."""
    ratios = f.int_list("upsampling_ratios", hi=1 << 10) or list(MIMI_RATIOS)
    if not ratios or any(r < 1 for r in ratios):
        raise f.error("upsampling_ratios", f"must be a list of positive integers, got {short(ratios)}")
    sr = f.int("sampling_rate", hi=1 << 24)
    hop = math.prod(ratios)
    frame_rate = f.float("frame_rate") if f.has("frame_rate") else sr / (hop * 2)
    return frame_rate, math.ceil(sr / hop)


def mimi_codec(top: dict, key: str, where: str, prefix: str, name: str) -> tuple[list[Tensor], int, float]:
    """The parameters of MimiModel from ``top[key]`` (its class defaults where absent), named under ``prefix``;
    with the number of values its quantizer buffers store in the checkpoint and the frame rate."""
    f, raw = mimi_config(top, key, where, name)
    ratios = f.int_list("upsampling_ratios", hi=1 << 10) or list(MIMI_RATIOS)
    frame_rate, encodec_rate = mimi_rates(f)
    nq, sem = f.int("num_quantizers", hi=1 << 10), f.int("num_semantic_quantizers", lo=0, hi=1 << 10)
    if sem >= nq:  # MimiConfig.validate_architecture
        raise f.error("num_semantic_quantizers", f"({sem}) must be lower than num_quantizers ({nq})")
    book = f.int("codebook_size", hi=1 << 24)
    if book & (book - 1):
        raise f.error("codebook_size", f"({book}) must be a power of 2 (MimiConfig)")
    h, nf = f.int("hidden_size"), f.int("num_filters")
    channels, kernel, last = f.int("audio_channels", hi=64), f.int("kernel_size", hi=1 << 10), \
        f.int("last_kernel_size", hi=1 << 10)
    n_res = f.int("num_residual_layers", lo=0, hi=MAX_LAYERS)
    out: list[Tensor] = []
    resample = frame_rate != encodec_rate
    stride = int(encodec_rate / frame_rate) if resample else 1
    if resample and stride < 1:
        raise f.error("frame_rate", f"({frame_rate}) must not exceed the encoder's own rate ({encodec_rate})")
    if _present(raw, "encoder_config", where):
        p = f"{prefix}.encoder.encoder_seanet.layers"
        _conv(out, f"{p}.0", nf, channels, kernel)
        idx, scale = 1, 1
        for ratio in reversed(ratios):
            cur = scale * nf
            for _ in range(n_res):
                _resnet(out, f"{p}.{idx}", cur, f)
                idx += 1
            idx += 1  # ELU
            _conv(out, f"{p}.{idx}", 2 * cur, cur, 2 * ratio)
            idx += 1
            scale *= 2
        _conv(out, f"{p}.{idx + 1}", h, scale * nf, last)
        _mimi_transformer(out, f"{prefix}.encoder.encoder_transformer", f)
        if resample:
            _conv(out, f"{prefix}.encoder.downsample", h, h, 2 * stride, bias=False)
    dim = f.int("vector_quantization_hidden_dimension")
    if dim != h:
        for part in ("semantic_residual_vector_quantizer", "acoustic_residual_vector_quantizer"):
            out += [Tensor(f"{prefix}.quantizer.{part}.input_proj.weight", (dim, h, 1), "audio"),
                    Tensor(f"{prefix}.quantizer.{part}.output_proj.weight", (h, dim, 1), "audio")]
    if _present(raw, "decoder_config", where):
        if resample:
            groups = f.int("upsample_groups")
            if h % groups:
                raise f.error("upsample_groups", f"({groups}) must divide hidden_size ({h})")
            out.append(Tensor(f"{prefix}.decoder.upsample.conv.weight", (h, h // groups, 2 * stride), "audio"))
        _mimi_transformer(out, f"{prefix}.decoder.decoder_transformer", f)
        p = f"{prefix}.decoder.decoder_seanet.layers"
        scale = 2 ** len(ratios)
        _conv(out, f"{p}.0", scale * nf, h, kernel)
        idx = 1
        for ratio in ratios:
            cur = scale * nf
            idx += 1  # ELU
            # nn.ConvTranspose1d: weight (in, out, kernel), bias (out,)
            out += [Tensor(f"{p}.{idx}.conv.weight", (cur, cur // 2, 2 * ratio), "audio"),
                    Tensor(f"{p}.{idx}.conv.bias", (cur // 2,), "audio")]
            idx += 1
            for _ in range(n_res):
                _resnet(out, f"{p}.{idx}", cur // 2, f)
                idx += 1
            scale //= 2
        _conv(out, f"{p}.{idx + 1}", channels, nf, last)
    codebook_dim = f.int("codebook_dim", lambda: h)
    buffers = nq * (book * codebook_dim + book + 1)  # MimiEuclideanCodebook: embed_sum, cluster_usage, initialized
    return out, buffers, frame_rate


def _codec_caveat(prefix: str, n: int, buffers: int, frame_rate: float, runs: str, fp32: bool) -> str:
    kept = (" is kept in float32 by transformers (_keep_in_fp32_modules_strict: 4 bytes a parameter in the checkpoint)"
            if fp32 else "")
    return (f"the Mimi codec ({prefix}, {n:,} parameters, kind audio){kept}; its quantizer codebooks are buffers "
            f"({buffers:,} values, in the "
            f"checkpoint, not counted as parameters); {runs}, not in the decode trace; one decode step is one audio "
            f"frame ({frame_rate:g} frames a second: real time is {frame_rate:g} steps a second per stream)")


# ---- Kyutai speech-to-text ---------------------------------------------------------------------------------------


def build_stt(f: Fields, model_type: str) -> ModelSpec:
    """KyutaiSpeechToTextForConditionalGeneration: the Moshi decoder (its text + audio embedding table, a text lm_head)
    and the Mimi codec."""
    spec, g = _moshi_decoder(f, model_type, STT_TRAITS, "lm_head (vocab_size rows, text) and embed_tokens (text, "
                             "audio and pad rows) differ in shape: no Kyutai STT checkpoint ties them")
    books, book_vocab = g.int("num_codebooks", hi=1 << 10), g.int("codebook_vocab_size", hi=1 << 24)
    rows = spec.vocab_size + books * book_vocab + 1
    codec, buffers, rate = mimi_codec(f.cfg, "codec_config", f.where, "codec_model", "Kyutai STT's codec")
    n = sum(t.numel for t in codec)
    caveats = (
        f"Kyutai STT: each decode step reads {books + 1} rows of embed_tokens (the text token's and one per audio "
        f"codebook, {rows:,} rows in all: {spec.vocab_size:,} text, {books} x {book_vocab:,} audio, 1 pad) and "
        "sums them; lm_head predicts text only",
        _codec_caveat("codec_model", n, buffers, rate, "its encoder turns each 80 ms of input audio into the "
                      f"{books} codes a step reads (transformers runs it window by window inside generate)", True),
        f"kyutai_speech_to_text: the codec_model ({n:,} parameters) is counted in the total and the checkpoint's "
        "weights but not in the engine's: no upstream vLLM class serves Kyutai STT; the one vLLM port in the code "
        "index serves the decoder alone and skips codec_model.* on load (the caller runs Mimi)")
    return replace(spec, embedding_rows=rows, vision=tuple(codec), engine_unloaded=STT_UNLOADED,
                   caveats=(*spec.caveats, *caveats))


# ---- Sesame CSM --------------------------------------------------------------------------------------------------


def _depth_decoder(top: dict, where: str, backbone_hidden: int, books: int, vocab: int, tied: bool
                   ) -> tuple[list[Tensor], int, int]:
    """CsmDepthDecoderForCausalLM's parameters (kind audio); with its per-step matmul parameters (layers, projector,
    one codebook head) and its number of codebooks."""
    from . import decoder
    from ..family_defaults import FAMILY_DEFAULTS

    f = _sub(top, "depth_decoder_config", where, "csm_depth_decoder_model", "CSM's depth decoder",
             FAMILY_DEFAULTS["csm_depth_decoder_model"], aliases={**ALIASES, "vocab_size": ("codebook_size",)})
    if f.cfg.get("tie_word_embeddings"):  # CsmDepthDecoderConfig.__post_init__ raises on it
        raise f.error("tie_word_embeddings", "is true: CsmDepthDecoderConfig does not support it")
    spec = decoder.build(f, "csm_depth_decoder_model", CSM_TRAITS)
    d_books, d_vocab = f.int("num_codebooks", hi=1 << 10), spec.vocab_size
    d_back = f.int("backbone_hidden_size")
    if d_books < 2:
        raise f.error("num_codebooks", f"({d_books}) must be at least 2: the depth decoder predicts codebooks 1 .. "
                                       "num_codebooks - 1")
    h = spec.hidden_size
    out = [] if tied else [Tensor("depth_decoder.model.embed_tokens.weight", (d_books * d_vocab, d_back), "audio")]
    if tied and (d_books * d_vocab, d_back) != (books * vocab, backbone_hidden):
        raise UnsupportedModelError(
            f"{where}: tie_codebooks_embeddings ties the depth decoder's embed_tokens ({d_books} x {d_vocab} rows of "
            f"{d_back}) to the backbone's embed_audio_tokens ({books} x {vocab} rows of {backbone_hidden}), which "
            "differ in shape", "a CSM config gives both the same num_codebooks, vocab_size and hidden width")
    layers = []
    for i in range(spec.num_layers):
        layers += spec.layer_tensors(i)
    layers += spec.final_norm_tensors()
    out += _audio(layers, "model.", "depth_decoder.model.")
    proj = Tensor("depth_decoder.model.inputs_embeds_projector.weight", (h, d_back), "audio")
    head = Tensor("depth_decoder.codebooks_head.weight", (d_books - 1, h, d_vocab), "audio")
    out += [proj, head]
    step = sum(t.numel for t in layers if len(t.shape) == 2) + proj.numel + h * d_vocab
    return out, step, d_books


def build_csm(f: Fields, model_type: str) -> ModelSpec:
    """CsmForConditionalGeneration: the Llama backbone (text embedding, codebook-0 head) with its audio embedding,
    the depth decoder and the Mimi codec as kind audio."""
    from . import decoder

    # CsmConfig sets tie_word_embeddings from tie_codebooks_embeddings, which ties the two audio tables, never lm_head
    g = _fields(f, model_type, ("tie_word_embeddings",))
    spec = decoder.build(g, model_type, CSM_TRAITS)
    f.records.update(g.records)
    books, vocab = g.int("num_codebooks", hi=1 << 10), spec.vocab_size
    text_rows = g.int("text_vocab_size", hi=1 << 26)
    tied = g.bool("tie_codebooks_embeddings")
    h = spec.hidden_size
    audio = [Tensor("backbone_model.embed_tokens.embed_audio_tokens.weight", (books * vocab, h), "audio")]
    depth, step, d_books = _depth_decoder(f.cfg, f.where, h, books, vocab, tied)
    codec, buffers, rate = mimi_codec(f.cfg, "codec_config", f.where, "codec_model", "CSM's codec")
    n_depth, n_codec = sum(t.numel for t in depth), sum(t.numel for t in codec)
    steps = d_books - 1
    backbone = sum(t.numel for i in range(spec.num_layers) for t in spec.layer_tensors(i) if len(t.shape) == 2) + \
        sum(t.numel for t in spec.lm_head_tensors())
    caveats = (
        f"CSM: a decode step is one audio frame of the backbone (its input the sum of {books} rows of "
        "embed_audio_tokens, kind audio; text positions read embed_text_tokens), whose lm_head predicts codebook 0; "
        f"the depth decoder ({n_depth:,} parameters, kind audio) then runs {steps} more sequential steps per frame "
        f"(codebooks 1 .. {d_books - 1}) over a cache of its own of at most {d_books} positions, dropped after the "
        f"frame: about {2 * step * steps / 1e9:.2f} GFLOP and {steps} passes over its {step:,} per-step matmul "
        f"parameters per frame ({steps * step / backbone:.1f}x the backbone step's {backbone:,}), not in the trace, "
        "FLOPs, K/V or tokens per second here (the backbone's step is): frames per second are an upper bound",
        _codec_caveat("codec_model", n_codec, buffers, rate, "its decoder turns the generated codes into audio",
                      False),
    )
    return replace(spec, embedding_rows=text_rows, vision=tuple(audio + depth + codec),
                   caveats=(*spec.caveats, *caveats))


# ---- Moshi -------------------------------------------------------------------------------------------------------

#: MoshiForConditionalGeneration's text decoder (``decoder``: MoshiForCausalLM) under our names
MOSHI_TRAITS = replace(STT_TRAITS, renames=(("decoder.model.", "model."), ("decoder.lm_head.", "lm_head.")))


def _flexible(out: list[Tensor], name: str, books: int, n_out: int, n_in: int) -> None:
    """MoshiFlexibleLinear: one (out, in) matrix per codebook, stacked; a depth step uses its codebook's."""
    out.append(Tensor(f"{name}.weight", (books, n_out, n_in), "audio"))


def _moshi_depth(top: dict, where: str, hidden: int, vocab: int, books: int, audio_vocab: int
                 ) -> tuple[list[Tensor], int]:
    """MoshiDepthDecoder (kind audio) and its matmul parameters per depth step (one codebook's slice). A given
    depth_decoder_config takes audio_vocab_size, input_size, vocab_size and num_codebooks from the top level
    (MoshiConfig.__post_init__); an absent one is MoshiDepthConfig's class defaults throughout."""
    from ..family_defaults import FAMILY_DEFAULTS

    raw = sub_config_dict(top, "depth_decoder_config", where, "moshi_depth", "Moshi's depth decoder")
    if top.get("depth_decoder_config") is not None:
        raw = dict(raw, audio_vocab_size=audio_vocab, input_size=hidden, vocab_size=vocab, num_codebooks=books)
    f = _sub({"depth_decoder_config": raw}, "depth_decoder_config", where, "moshi_depth", "Moshi's depth decoder",
             FAMILY_DEFAULTS["moshi_depth"], aliases=_NO_FFN_ALIAS)
    h, ffn = _moshi_widths(f)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", lambda: heads)
    hd = f.int("head_dim", lambda: h // heads)
    n, d_vocab, d_audio = f.int("num_codebooks", hi=1 << 10), f.int("vocab_size", hi=1 << 26), \
        f.int("audio_vocab_size", hi=1 << 24)
    d_in = f.int("input_size")
    p = "depth_decoder"
    out = [Tensor(f"{p}.text_embed_tokens.weight", (d_vocab + 1, h), "audio")]
    out += [Tensor(f"{p}.embed_tokens.{i}.weight", (d_audio + 1, h), "audio") for i in range(n - 1)]
    _flexible(out, f"{p}.input_projections", n, h, d_in)
    for i in range(f.int("num_hidden_layers", lo=0, hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for proj, rows, cols in _attention_shapes(h, heads, kv, hd):
            _flexible(out, f"{b}.self_attn.{proj}.linear", n, rows, cols)
        _flexible(out, f"{b}.mlp.fc1", n, ffn, h)
        _flexible(out, f"{b}.mlp.fc2", n, h, ffn // 2)
        out += [Tensor(f"{b}.input_layernorm.weight", (h,), "audio"),
                Tensor(f"{b}.post_attention_layernorm.weight", (h,), "audio")]
    _flexible(out, f"{p}.lm_heads", n, d_audio, h)
    step = sum(t.numel for t in out if len(t.shape) == 3) // n
    return out, step


def build_moshi(f: Fields, model_type: str) -> ModelSpec:
    """MoshiForConditionalGeneration: the Moshi text decoder (``decoder``), 2 x num_codebooks audio embeddings (the
    model's and the user's streams), the depth decoder (per-codebook weights) and the Mimi audio encoder."""
    spec, g = _moshi_decoder(f, model_type, MOSHI_TRAITS, "lm_head (vocab_size rows) and embed_tokens (vocab_size "
                             "+ 1 rows, the last the padding row) differ in shape")
    hidden = spec.hidden_size
    codec, buffers, rate = mimi_codec(f.cfg, "audio_encoder_config", f.where, "audio_encoder", "Moshi's audio encoder")
    mimi, _ = mimi_config(f.cfg, "audio_encoder_config", f.where, "Moshi's audio encoder")
    books = g.int("num_codebooks", hi=1 << 10)
    if f.cfg.get("audio_vocab_size") is not None:
        audio_vocab = g.int("audio_vocab_size", hi=1 << 24)
    elif f.cfg.get("audio_encoder_config") is not None:
        audio_vocab = g.derived("audio_vocab_size", mimi.int("codebook_size", hi=1 << 24),
                                "absent: audio_encoder_config's codebook_size (MoshiConfig)")
    else:
        raise ConfigError(f"{f.where}: audio_vocab_size and audio_encoder_config are both absent: MoshiConfig leaves "
                          "audio_vocab_size unset and MoshiForConditionalGeneration does not build",
                          "a Moshi config.json gives audio_encoder_config (its Mimi codec)")
    if books > mimi.int("num_quantizers", hi=1 << 10):  # MoshiConfig.validate_architecture
        raise g.error("num_codebooks", f"({books}) exceeds the audio encoder's num_quantizers "
                                       f"({mimi.int('num_quantizers', hi=1 << 10)})")
    streams = [Tensor(f"embed_tokens.{i}.weight", (audio_vocab + 1, hidden), "audio") for i in range(2 * books)]
    depth, step = _moshi_depth(f.cfg, f.where, hidden, spec.vocab_size, books, audio_vocab)
    n_depth, n_codec = sum(t.numel for t in depth), sum(t.numel for t in codec)
    d_books = depth[-1].shape[0]
    caveats = (
        f"Moshi: a decode step is one audio frame of the text decoder (its input the text token's row plus one row "
        f"of each of {2 * books} audio embeddings, kind audio: the model's and the user's {books} codebooks), whose "
        f"lm_head predicts the text token; the depth decoder ({n_depth:,} parameters, kind audio, one weight slice "
        f"per codebook) then runs {d_books} sequential steps per frame over a cache of its own, dropped after the "
        f"frame: about {2 * step * d_books / 1e9:.2f} GFLOP per frame (each step {step:,} matmul parameters, its "
        "codebook's slice), not in the trace, FLOPs, K/V or tokens per second here: frames per second are an upper "
        "bound",
        _codec_caveat("audio_encoder", n_codec, buffers, rate, "it encodes the user's audio and decodes the "
                      "model's codes to audio", False))
    return replace(spec, embedding_rows=spec.vocab_size + 1, vision=tuple(streams + depth + codec),
                   caveats=(*spec.caveats, *caveats))
