"""The Kyutai / Mimi speech-text family (analysis/families/kyutai_mimi.py): Kyutai STT (``kyutai_speech_to_text``) and
Sesame CSM (``csm``) counted whole, the Mimi codec, the depth decoder and the audio embeddings as kind ``audio``, checked
against transformers 5.24 on the meta device (KyutaiSpeechToTextForConditionalGeneration, CsmForConditionalGeneration,
MimiModel, MoshiForConditionalGeneration: parameter totals, and every name and shape), against hand counts written from
the modeling files' module shapes, and against transformers' own K/V cache; ``csm_depth_decoder_model`` alone is
refused by name."""

from __future__ import annotations

import copy
import json
import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families.kyutai_mimi import mimi_codec
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.oracle import hf_class_model, unique_param_count

# kyutai/mimi config.json, verbatim as the sethdford/fern repository keeps it (models/mimi/config.json): the codec
# of Kyutai STT and of Sesame CSM
KYUTAI_MIMI = {
    "architectures": ["MimiModel"], "attention_dropout": 0.0, "audio_channels": 1, "codebook_dim": 256,
    "codebook_size": 2048, "compress": 2, "dilation_growth_rate": 2, "frame_rate": 12.5, "head_dim": 64,
    "hidden_act": "gelu", "hidden_size": 512, "initializer_range": 0.02, "intermediate_size": 2048, "kernel_size": 7,
    "last_kernel_size": 3, "layer_scale_initial_scale": 0.01, "max_position_embeddings": 8000, "model_type": "mimi",
    "norm_eps": 1e-05, "normalize": False, "num_attention_heads": 8, "num_filters": 64, "num_hidden_layers": 8,
    "num_key_value_heads": 8, "num_residual_layers": 1, "num_semantic_quantizers": 1, "pad_mode": "constant",
    "residual_kernel_size": 3, "rope_theta": 10000.0, "sampling_rate": 24000, "sliding_window": 250,
    "torch_dtype": "float32", "transformers_version": "4.45.0.dev0", "trim_right_ratio": 1.0, "upsample_groups": 512,
    "upsampling_ratios": [8, 6, 5, 4], "use_cache": False, "use_causal_conv": True, "use_conv_shortcut": False,
    "vector_quantization_hidden_dimension": 256,
}

# kyutai/stt-1b-en_fr-trfs, reconstructed (no verbatim config.json was at hand): the original kyutai/stt-1b-en_fr
# config.json's values as a Rust port quotes them ("Verified values from kyutai/stt-1b-en_fr config.json": 16 layers,
# hidden 2048, 16 heads = KV heads, intermediate 5632, text_linear 8000 rows, text_emb 8001 rows, 32 codebooks of
# 2049 rows, rope_theta 100000, sliding window 750; code index file 71400650409), converted the way transformers'
# convert_kyutai_speech_to_text_to_hf.py does it: vocab_size = text_emb rows (8001; text_linear padded by one zero
# row), ffn_dim = 2 x 5632 (fc1 is gate and up), the embedding table text + 32 x 2049 + 1 rows; Mimi = kyutai/mimi
STT_1B = {
    "model_type": "kyutai_speech_to_text", "architectures": ["KyutaiSpeechToTextForConditionalGeneration"],
    "vocab_size": 8001, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
    "num_key_value_heads": 16, "ffn_dim": 11264, "codebook_vocab_size": 2049, "num_codebooks": 32,
    "sliding_window": 750, "max_position_embeddings": 750, "rope_theta": 100000.0, "torch_dtype": "bfloat16",
    "codec_config": KYUTAI_MIMI,
}

# sesame/csm-1b config.json as a Rust CSM port's test fixture quotes it (code index file 56283678663; the fields it
# keeps, the others at CsmConfig's class defaults, which are csm-1b's: a snapshot validator of sesame/csm-1b in the
# code index, file 58675379713, pins hidden 2048, 16 layers, 32 / 8 heads, intermediate 8192, text vocab 128256,
# depth decoder hidden 1024, 4 layers, 8 / 2 heads, intermediate 8192, backbone_hidden_size 2048, Mimi hidden 512);
# audio_num_codebooks / audio_vocab_size are the original code's names, which transformers keeps but does not read
CSM_1B = {
    "architectures": ["CsmForConditionalGeneration"], "audio_eos_token_id": 128003, "audio_token_id": 128002,
    "bos_token_id": 128000, "codebook_eos_token_id": 0, "codebook_pad_token_id": 2050,
    "codec_config": {"audio_channels": 1, "codebook_size": 2048, "frame_rate": 12.5, "model_type": "mimi",
                     "num_quantizers": 32, "sampling_rate": 24000},
    "depth_decoder_config": {"max_position_embeddings": 33, "model_type": "csm_depth_decoder_model",
                             "num_codebooks": 32, "vocab_size": 2051},
    "max_position_embeddings": 2048, "model_type": "csm", "num_codebooks": 32, "pad_token_id": 128002,
    "text_vocab_size": 128256, "vocab_size": 2051, "audio_num_codebooks": 32, "audio_vocab_size": 2051,
}

# kmhf/hf-moshiko: transformers' convert_moshi_transformers.py builds it as MoshiConfig.from_audio_encoder_config(
# kyutai/mimi's config), every other field at MoshiConfig's class defaults (no depth_decoder_config: MoshiDepthConfig's)
MOSHIKO = {"model_type": "moshi", "architectures": ["MoshiForConditionalGeneration"], "audio_encoder_config": KYUTAI_MIMI}

STT_CLASS = "KyutaiSpeechToTextForConditionalGeneration"
MOSHI_CLASS = "MoshiForConditionalGeneration"
CSM_CLASS = "CsmForConditionalGeneration"


def _hf_names(cfg: dict, cls: str) -> dict[str, tuple]:
    model = hf_class_model(cfg, cls)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def _ours(spec) -> dict[str, tuple]:
    """Our tensors under the checkpoint's names: the decoder's through the spec's checkpoint layout (renames, then
    module renames), the kind-audio ones as they are."""
    audio = {t.name for t in spec.vision}
    out = {}
    for t in spec.tensors():
        name = t.name
        if name not in audio:
            hits = [(ckpt, ours) for ckpt, ours in spec.checkpoint.renames if name.startswith(ours)]
            if hits:  # the most specific rename (CSM: model.embed_tokens. before model.)
                ckpt, ours = max(hits, key=lambda h: len(h[1]))
                name = ckpt + name[len(ours):]
            for ckpt, ours in spec.checkpoint.modules:
                name = name.replace(ours, ckpt)
        out[name] = tuple(t.shape)
    return out


def _same(cfg: dict, cls: str) -> int:
    spec = parse_config(copy.deepcopy(cfg))
    ref = _hf_names(cfg, cls)
    assert _ours(spec) == ref
    total = count_params(spec).total
    assert total == sum(math.prod(s) for s in ref.values()) == unique_param_count(hf_class_model(cfg, cls))
    return total


# ---- hand counts from the modeling files' module shapes -----------------------------------------------------------


def mimi_hand(h=512, nf=64, ratios=(8, 6, 5, 4), layers=8, inter=2048, k=7, last=3, rk=3, compress=2, vq=256,
              groups=512, stride=2, ch=1):
    """MimiModel: SEANet encoder (conv, per ratio a residual block and a strided conv, final conv), encoder
    transformer (q/k/v/o, fc1/fc2, two LayerNorms with bias, two layer scales), downsample conv (no bias), the two
    RVQs' input / output projections, upsample ConvTranspose (groups, no bias), decoder transformer, SEANet decoder."""
    def res(d):
        return (d // compress) * d * rk + d // compress + d * (d // compress) + d
    enc = nf * ch * k + nf
    scale = 1
    for r in reversed(ratios):
        c = scale * nf
        enc += res(c) + 2 * c * c * 2 * r + 2 * c
        scale *= 2
    enc += h * scale * nf * last + h
    tr = layers * (4 * h * h + 2 * h * inter + 4 * h + 2 * h)
    dec = (2 ** len(ratios)) * nf * h * k + (2 ** len(ratios)) * nf
    scale = 2 ** len(ratios)
    for r in ratios:
        c = scale * nf
        dec += c * (c // 2) * 2 * r + c // 2 + res(c // 2)
        scale //= 2
    dec += ch * nf * last + ch
    return enc + tr + h * h * 2 * stride + 2 * 2 * vq * h + h * (h // groups) * 2 * stride + tr + dec


def test_mimi_hand_count_equals_transformers_and_ours():
    """kyutai/mimi (verbatim): 79,308,609 parameters by hand, in MimiModel on the meta device and in ours; its
    quantizer codebooks are buffers: 32 x (2048 x 256 + 2048 + 1) values."""
    assert mimi_hand() == 79_308_609
    model = hf_class_model(KYUTAI_MIMI, "MimiModel")
    assert unique_param_count(model) == 79_308_609
    out, buffers, rate = mimi_codec({"codec": KYUTAI_MIMI}, "codec", "x", "codec_model", "Mimi")
    assert sum(t.numel for t in out) == 79_308_609 and rate == 12.5
    assert buffers == 32 * (2048 * 256 + 2048 + 1) == sum(b.numel() for n, b in model.named_buffers()
                                                          if ".codebook." in n)


@pytest.mark.parametrize("extra", [
    {}, {"decoder_config": None}, {"encoder_config": None}, {"frame_rate": 25.0},
    {"num_residual_layers": 2, "use_conv_shortcut": True},
    {"vector_quantization_hidden_dimension": 512, "attention_bias": True, "num_key_value_heads": 2, "head_dim": 32},
    {"upsampling_ratios": [4, 5, 6], "num_filters": 32, "audio_channels": 2, "compress": 4, "upsample_groups": 128,
     "sampling_rate": 16000},
    {"num_hidden_layers": 0, "num_semantic_quantizers": 2, "num_quantizers": 8, "codebook_dim": 128},
])
def test_mimi_names_and_shapes_equal_transformers(extra):
    """MimiModel variants (a dropped half, no resampling at the encoder's own rate, residual stacks with shortcut
    convs, no RVQ projections, other ratios / channels / groups): every parameter's name and shape, and the codebook
    buffers' size."""
    cfg = {"model_type": "mimi", **extra}
    model = hf_class_model(cfg, "MimiModel")
    out, buffers, _ = mimi_codec({"c": cfg}, "c", "x", "codec", "Mimi")
    assert {t.name: tuple(t.shape) for t in out} == {f"codec.{n}": tuple(p.shape) for n, p in model.named_parameters()}
    assert buffers == sum(b.numel() for n, b in model.named_buffers() if ".codebook." in n)


def test_kyutai_stt_class_defaults_split_by_hand():
    """KyutaiSpeechToTextConfig() (= kyutai/stt-2.6b-en-trfs: transformers' conversion script builds it from the class
    defaults): embedding (4001 text + 32 x 2049 audio + 1 pad rows) x 2048, lm_head 4001 x 2048, 48 Moshi layers
    (q/k/v/o 2048², fc1 2048 -> 11264, fc2 5632 -> 2048, two RMSNorms), final norm, Mimi; equal to transformers."""
    total = _same({"model_type": "kyutai_speech_to_text"}, STT_CLASS)
    p = count_params(parse_config({"model_type": "kyutai_speech_to_text"}))
    assert p.embedding == (4001 + 32 * 2049 + 1) * 2048 == 142_479_360
    assert p.lm_head == 4001 * 2048
    assert p.attention + p.mlp + p.norm == 48 * (4 * 2048 ** 2 + 2048 * 11264 + 5632 * 2048 + 2 * 2048) + 2048
    assert p.audio == mimi_hand() and p.vision == 0
    assert total == 2_696_431_425 == p.embedding + p.lm_head + p.attention + p.mlp + p.norm + p.audio


def test_kyutai_stt_1b_equals_transformers():
    """stt-1b-en_fr-trfs (reconstructed above): equal to transformers, names and shapes; ~1B as published."""
    total = _same(STT_1B, STT_CLASS)
    lm = 16 * (4 * 2048 ** 2 + 3 * 2048 * 5632 + 2 * 2048) + 2048
    assert total == lm + (8001 + 32 * 2049 + 1) * 2048 + 8001 * 2048 + mimi_hand() == 1_068_517_185
    spec = parse_config(copy.deepcopy(STT_1B))
    assert {m.window for m in (layer.mixer for layer in spec.layers)} == {750}


def test_csm_class_defaults_split_by_hand():
    """CsmConfig() (= sesame/csm-1b): backbone Llama-3.2-1B-shaped (16 layers, 2048, 32 / 8 heads, 8192) with
    embed_text_tokens 128256 rows and a 2051-row codebook-0 head; audio table 32 x 2051 rows (tied with the depth
    decoder's); depth decoder 4 layers of 1024 (8 / 2 heads of 128, 8192), projector 2048 -> 1024, 31 heads of
    1024 x 2051; Mimi."""
    total = _same({"model_type": "csm"}, CSM_CLASS)
    p = count_params(parse_config({"model_type": "csm"}))
    backbone = 16 * (2 * 2048 * 2048 + 2 * 512 * 2048 + 3 * 2048 * 8192 + 2 * 2048) + 2048
    depth = 4 * (2 * 1024 * 1024 + 2 * 256 * 1024 + 3 * 1024 * 8192 + 2 * 1024) + 1024 + 2048 * 1024 + \
        31 * 1024 * 2051
    assert p.embedding == 128256 * 2048 and p.lm_head == 2051 * 2048
    assert p.attention + p.mlp + p.norm == backbone
    assert p.audio == 32 * 2051 * 2048 + depth + mimi_hand()
    assert total == 1_632_100_161 == p.embedding + p.lm_head + backbone + p.audio


def test_csm_1b_config_equals_transformers():
    assert _same(CSM_1B, CSM_CLASS) == 1_632_100_161


@pytest.mark.parametrize("extra", [
    {"tie_codebooks_embeddings": False},
    {"attention_bias": True, "mlp_bias": True, "num_codebooks": 8, "hidden_size": 256, "intermediate_size": 512,
     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "text_vocab_size": 1000,
     "depth_decoder_config": {"num_codebooks": 8, "backbone_hidden_size": 256, "hidden_size": 128,
                              "intermediate_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
                              "num_key_value_heads": 1, "head_dim": 48, "attention_bias": True},
     "codec_config": {"num_hidden_layers": 2, "hidden_size": 128, "num_filters": 16, "intermediate_size": 256,
                      "upsample_groups": 64, "vector_quantization_hidden_dimension": 64, "num_quantizers": 8}},
])
def test_csm_variants_equal_transformers(extra):
    _same({"model_type": "csm", **extra}, CSM_CLASS)


def test_kyutai_stt_variant_equals_transformers():
    _same({"model_type": "kyutai_speech_to_text", "hidden_size": 256, "num_hidden_layers": 3,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "ffn_dim": 640, "vocab_size": 500,
           "num_codebooks": 8, "codebook_vocab_size": 129, "sliding_window": 64, "audio_pad_token_id": 1532,
           "codec_config": {"num_hidden_layers": 1, "decoder_config": None}}, STT_CLASS)


def test_moshiko_split_by_hand():
    """Moshiko: the text decoder (32 Moshi layers of 4096: q/k/v/o, fc1 4096 -> 22528, fc2 11264 -> 4096, two norms;
    embed_tokens 32001 rows, lm_head 32000), 16 audio embeddings of 2049 rows, the depth decoder (text embedding 32001
    x 1024, 7 audio embeddings 2049 x 1024, and per codebook (8): input projection 4096 -> 1024, 6 layers of q/k/v/o
    1024², fc1 1024 -> 5632, fc2 2816 -> 1024, a 2048 x 1024 head; 2 norms a layer), Mimi; equal to transformers."""
    total = _same(MOSHIKO, MOSHI_CLASS)
    text = 32 * (4 * 4096 ** 2 + 3 * 4096 * 11264 + 2 * 4096) + 4096 + 32001 * 4096 + 32000 * 4096
    depth = 32001 * 1024 + 7 * 2049 * 1024 + 8 * (1024 * 4096 + 6 * (4 * 1024 ** 2 + 3 * 1024 * 2816) +
                                                 2048 * 1024) + 6 * 2 * 1024
    p = count_params(parse_config(copy.deepcopy(MOSHIKO)))
    assert p.audio == 16 * 2049 * 4096 + depth + mimi_hand()
    assert total == text + p.audio == 7_767_037_761
    spec = parse_config(copy.deepcopy(MOSHIKO))
    assert {layer.mixer.window for layer in spec.layers} == {3000}
    assert any("depth decoder" in c and "8 sequential steps" in c for c in spec.caveats)


@pytest.mark.parametrize("extra", [
    {"audio_encoder_config": {}, "depth_decoder_config": {}},
    {"audio_encoder_config": {}, "audio_vocab_size": 1000,
     "depth_decoder_config": {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "ffn_dim": 512,
                              "num_hidden_layers": 2}},
    {"audio_vocab_size": 1000, "num_codebooks": 4, "hidden_size": 512, "num_hidden_layers": 2,
     "num_attention_heads": 8, "ffn_dim": 1024, "vocab_size": 300, "depth_decoder_config": {"head_dim": 32}},
])
def test_moshi_variants_equal_transformers(extra):
    """A given depth_decoder_config takes audio_vocab_size, input_size, vocab_size and num_codebooks from the top
    level; an absent audio_encoder_config with audio_vocab_size given is Mimi's class defaults."""
    _same({"model_type": "moshi", **extra}, MOSHI_CLASS)


# ---- K/V against transformers' cache ------------------------------------------------------------------------------


def _prefill_cache(model, input_ids):
    torch = pytest.importorskip("torch")
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        model(input_ids=input_ids, cache=cache, use_cache=True)
    return cache


def test_kyutai_stt_kv_equals_transformers_cache():
    """A tiny KyutaiSpeechToTextModel (fp32, window 8) after a 20-frame prefill: every layer a sliding cache holding
    window - 1 frames, each frame's K and V our bytes per token; ours caps the sequence at the window."""
    torch = pytest.importorskip("torch")
    import transformers

    cfg = {"model_type": "kyutai_speech_to_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "ffn_dim": 128, "vocab_size": 50, "num_codebooks": 3, "codebook_vocab_size": 9,
           "sliding_window": 8, "audio_pad_token_id": 77, "pad_token_id": 0, "bos_token_id": 1}
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = transformers.KyutaiSpeechToTextModel(config).eval()
    n = 20
    ids = torch.cat([torch.randint(0, 50, (1, n, 1)), torch.randint(0, 9, (1, n, 3))], dim=2)
    cache = _prefill_cache(model, ids)
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    kv = kv_cache(spec, fp32, fp32)
    for i, lk in enumerate(kv.layers):
        keys = cache.layers[i].keys
        assert keys.shape[2] == min(n, 8 - 1)
        assert lk.bytes_per_token == 2 * keys.numel() * 4 // keys.shape[2] == 2 * 2 * 16 * 4
        assert spec.layers[i].mixer.window == 8


def test_csm_backbone_kv_equals_transformers_cache():
    """A tiny CsmBackboneModel (fp32) after a 12-frame prefill: a full cache per layer, our bytes per token."""
    torch = pytest.importorskip("torch")
    import transformers

    cfg = {"model_type": "csm", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 11, "num_codebooks": 3,
           "text_vocab_size": 40, "pad_token_id": 0, "bos_token_id": 1, "audio_token_id": 2, "audio_eos_token_id": 3,
           "codebook_pad_token_id": 10, "codebook_eos_token_id": 0,
           "depth_decoder_config": {"num_codebooks": 3, "backbone_hidden_size": 64, "vocab_size": 11,
                                    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                    "num_attention_heads": 2, "num_key_value_heads": 1}}
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = transformers.models.csm.modeling_csm.CsmBackboneModel(config).eval()
    n = 12
    cache = _prefill_cache(model, torch.randint(0, 11, (1, n, 3)))
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
        keys = cache.layers[i].keys
        assert keys.shape[2] == n
        assert lk.bytes_per_token == 2 * keys.numel() * 4 // n == 2 * 2 * 16 * 4


def test_moshi_kv_equals_transformers_cache():
    """A tiny MoshiForCausalLM (Moshi's text decoder, fp32, window 6) after a 15-token prefill: sliding caches of
    window - 1 tokens, our bytes per token."""
    torch = pytest.importorskip("torch")
    import transformers

    cfg = {"model_type": "moshi", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "ffn_dim": 128, "vocab_size": 50, "sliding_window": 6, "audio_vocab_size": 9,
           "num_codebooks": 2, "audio_encoder_config": {"num_quantizers": 2}}
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = transformers.MoshiForCausalLM(config).eval()
    n = 15
    cache = _prefill_cache(model, torch.randint(0, 50, (1, n)))
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    for i, lk in enumerate(kv_cache(spec, fp32, fp32).layers):
        keys = cache.layers[i].keys
        assert keys.shape[2] == min(n, 6 - 1) and spec.layers[i].mixer.window == 6
        assert lk.bytes_per_token == 2 * keys.numel() * 4 // keys.shape[2] == 2 * 2 * 16 * 4


def test_kv_bytes_of_the_released_shapes():
    """bf16 K/V per token: Kyutai STT 2.6B 48 layers x 2 x 32 heads x 64 = 393,216 B, kept 375 frames; CSM-1B's
    backbone 16 x 2 x 8 x 64 x 2 = 32,768 B (the depth decoder's per-frame cache is not in it: a caveat)."""
    bf16 = get_dtype("bf16")
    stt = kv_cache(parse_config({"model_type": "kyutai_speech_to_text"}), bf16, bf16)
    assert sum(lk.bytes_per_token for lk in stt.layers) == 48 * 2 * 32 * 64 * 2 == 393_216
    csm = parse_config(copy.deepcopy(CSM_1B))
    assert sum(lk.bytes_per_token for lk in kv_cache(csm, bf16, bf16).layers) == 16 * 2 * 8 * 64 * 2
    assert any("depth decoder" in c and "31 more sequential steps" in c for c in csm.caveats)


# ---- what the engines load, caveats -------------------------------------------------------------------------------


def test_stt_engine_leaves_the_codec_out_csm_loads_everything():
    stt = parse_config({"model_type": "kyutai_speech_to_text"})
    assert stt.engine_unloaded == ("codec_model.",)
    assert sum(t.numel for t in stt.tensors() if stt.engine_skips(t)) == mimi_hand()
    assert any("float32" in c for c in stt.caveats)
    csm = parse_config({"model_type": "csm"})
    assert csm.engine_unloaded == () and not any("float32" in c for c in csm.caveats)
    assert not stt.generic and not csm.generic


# ---- the CLI ------------------------------------------------------------------------------------------------------


def _write(tmp_path, name: str, cfg: dict):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


@pytest.mark.parametrize("cfg, total", [(STT_1B, 1_068_517_185), (CSM_1B, 1_632_100_161), (MOSHIKO, 7_767_037_761)])
def test_cli_analyze_trace_serve(tmp_path, cfg, total):
    d = _write(tmp_path, cfg["model_type"], cfg)
    r = run("analyze", d, "--context", "512", "--json")
    assert r.code == 0, r.err
    out = r.json
    assert out["params"]["total"] == total and out["params"]["audio"] > 0
    assert not any("generic" in c for c in out["caveats"])
    r = run("trace", d, "--context", "512", "--json")
    assert r.code == 0, r.err
    r = run("serve", d, "--input-len", "256", "--output-len", "64", "--max-model-len", "512", "--json")
    assert r.code == 0, r.err
    weights = r.json["memory"]["per_gpu"]["counted_weights_bytes"]
    spec = parse_config(copy.deepcopy(cfg))
    skipped = sum(t.numel for t in spec.tensors() if spec.engine_skips(t))
    assert weights == 2 * (total - skipped)  # bf16, the codec left out for Kyutai STT only
    assert (skipped > 0) == (cfg["model_type"] == "kyutai_speech_to_text")
    assert any("decode step is one audio frame" in c or "each decode step reads" in c for c in out["caveats"])


_TINY_CODEC = {"num_hidden_layers": 1, "hidden_size": 64, "num_filters": 8, "intermediate_size": 64,
               "upsample_groups": 64, "vector_quantization_hidden_dimension": 32, "num_quantizers": 4}


@pytest.mark.parametrize("cfg", [
    {"model_type": "kyutai_speech_to_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
     "num_key_value_heads": 2, "ffn_dim": 128, "vocab_size": 50, "num_codebooks": 3, "codebook_vocab_size": 9,
     "sliding_window": 8, "audio_pad_token_id": 77, "codec_config": _TINY_CODEC},
    {"model_type": "csm", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
     "intermediate_size": 96, "vocab_size": 11, "num_codebooks": 3, "text_vocab_size": 40, "codec_config": _TINY_CODEC,
     "depth_decoder_config": {"num_codebooks": 3, "backbone_hidden_size": 64, "vocab_size": 11, "hidden_size": 32,
                              "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "num_key_value_heads": 1}},
    {"model_type": "moshi", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
     "ffn_dim": 128, "vocab_size": 50, "sliding_window": 8, "num_codebooks": 2, "audio_encoder_config": _TINY_CODEC,
     "depth_decoder_config": {"hidden_size": 32, "num_attention_heads": 2, "ffn_dim": 64, "num_hidden_layers": 1}},
], ids=lambda c: c["model_type"])
def test_verify_self_checks_run_on_the_decoder(tmp_path, cfg):
    """verify builds the per-frame decoder (the kind-audio parts left out, as for every audio wrapper) and its
    parameters, decode FLOPs and K/V bytes equal the analysis."""
    out = verify_self_checks(tmp_path, cfg)
    spec = parse_config(copy.deepcopy(cfg))
    assert out["checks"]["params"]["measured"] == count_params(spec).total - sum(t.numel for t in spec.vision)


@pytest.mark.parametrize("cfg, fragments", [
    ({"model_type": "kyutai_speech_to_text", "ffn_dim": 11263}, ("ffn_dim", "even")),
    ({"model_type": "kyutai_speech_to_text", "tie_word_embeddings": True}, ("tie_word_embeddings",)),
    ({"model_type": "kyutai_speech_to_text", "hidden_size": 100, "num_attention_heads": 3}, ("divisible",)),
    ({"model_type": "kyutai_speech_to_text", "codec_config": {"model_type": "encodec"}}, ("codec_config.model_type",)),
    ({"model_type": "kyutai_speech_to_text", "codec_config": "mimi"}, ("codec_config",)),
    ({"model_type": "csm", "codec_config": {"num_semantic_quantizers": 32}}, ("num_semantic_quantizers",)),
    ({"model_type": "csm", "codec_config": {"codebook_size": 2000}}, ("codebook_size", "power of 2")),
    ({"model_type": "csm", "depth_decoder_config": {"vocab_size": 1024}}, ("tie_codebooks_embeddings", "shape")),
    ({"model_type": "csm", "depth_decoder_config": {"num_codebooks": 1}}, ("num_codebooks",)),
    ({"model_type": "csm", "depth_decoder_config": {"tie_word_embeddings": True}}, ("tie_word_embeddings",)),
    ({"model_type": "csm", "num_hidden_layers": -1}, ("num_hidden_layers",)),
    ({"model_type": "csm_depth_decoder_model"}, ("csm_depth_decoder_model", "model_type csm")),
    ({"model_type": "moshi"}, ("audio_vocab_size", "audio_encoder_config")),
    ({"model_type": "moshi", "audio_encoder_config": {"num_quantizers": 4}}, ("num_codebooks", "num_quantizers")),
    ({"model_type": "moshi", "audio_encoder_config": {}, "tie_word_embeddings": True}, ("tie_word_embeddings",)),
    ({"model_type": "moshi", "audio_encoder_config": {}, "depth_decoder_config": {"ffn_dim": 5631}}, ("ffn_dim",)),
    ({"model_type": "moshi", "audio_encoder_config": {}, "depth_decoder_config": [1]}, ("depth_decoder_config",)),
])
def test_broken_or_refused_configs_give_one_error_line(tmp_path, cfg, fragments):
    d = _write(tmp_path, "bad", cfg)
    run("analyze", d).assert_error(*fragments)
    with pytest.raises((ConfigError, UnsupportedModelError)):
        parse_config(cfg)
