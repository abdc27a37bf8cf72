"""PerceptionLM (``perception_lm``) and FastVLM (``fast_vlm``) counted whole: their timm towers (Perception Encoder,
FastViT MCi3) and projectors from timm's module shapes, beside the language model. Each real checkpoint's total is
checked against a hand count written here from the module shapes, against the transformers + timm total recorded
below, and (PerceptionLM) against the Hub's published parameter count; the lm_head tie rules; refusals by name; the CLI
end to end. A live comparison with transformers + timm on the meta device runs where timm is importable.

RECORDED / TOWERS were obtained with transformers 5.24.0, timm 1.0.31 and torch 2.14.1 (a separate venv: the dev venv
has no timm) by ``PYTHONPATH=<that venv>/lib/python3.11/site-packages python -m pytest tests/test_timm_vlm.py -k live``
(test_live_* below compute them: unique parameters of ``AutoModelForImageTextToText.from_config`` on the meta device,
tests/oracle.py; TOWERS: ``timm.create_model(arch, pretrained=False, num_classes=0, **model_args)`` on meta).
"""

from __future__ import annotations

import itertools
import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import timm_vlm
from planner.analysis.params import count_params
from tests.clirun import run


# ---- the real configs -------------------------------------------------------------------------------------------

def _qwen2(size, h, layers, heads, kv, inter, vocab, tie):
    text = {"_name_or_path": f"Qwen/Qwen2-{size}",
            "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
            "dtype": "bfloat16", "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": h,
            "initializer_range": 0.02, "intermediate_size": inter, "layer_types": ["full_attention"] * layers,
            "max_position_embeddings": 131072, "max_window_layers": layers, "model_type": "qwen2",
            "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv, "rms_norm_eps": 1e-06,
            "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None, "use_cache": True,
            "use_sliding_window": False, "vocab_size": vocab}
    if tie is not None:
        text["tie_word_embeddings"] = tie
    return text


_FASTVIT_VISION = {
    "_name_or_path": "timm/fastvit_mci3.apple_mclip2_dfndr2b", "architecture": "fastvit_mci3", "do_pooling": True,
    "global_pool": "avg", "hidden_size": 3072, "initializer_range": 0.02, "label_names": [],
    "model_args": {"inference_mode": True}, "model_type": "timm_wrapper", "num_classes": 0, "num_features": 3072,
    "pretrained_cfg": {"classifier": "head.fc", "crop_mode": "center", "crop_pct": 0.95, "custom_load": False,
                       "first_conv": ["stem.0.conv_kxk.0.conv", "stem.0.conv_scale.conv"], "fixed_input_size": False,
                       "input_size": [3, 256, 256], "interpolation": "bicubic", "license": "apple-amlr",
                       "mean": [0.48145466, 0.4578275, 0.40821073], "pool_size": [8, 8],
                       "std": [0.26862954, 0.26130258, 0.27577711], "tag": "apple_mclip2_dfndr2b"}}


def _fast_vlm(text):
    """KamilaMila/FastVLM-*'s config.json (transformers' convert_fastvlm_weights_to_hf.py output; verbatim copies in
    hlky/dinoml_v2 agents/plans/transformers/fast_vlm/_sources/KamilaMila__FastVLM-*__config.json)."""
    return {"architectures": ["FastVlmForConditionalGeneration"], "dtype": "bfloat16", "image_seq_length": 256,
            "image_token_index": 151646, "model_type": "fast_vlm", "multimodal_projector_bias": True,
            "projector_hidden_act": "gelu", "text_config": text, "transformers_version": "4.56.0.dev0",
            "vision_config": json.loads(json.dumps(_FASTVIT_VISION)), "vision_feature_layer": -1,
            "vision_feature_select_strategy": "full"}


def _pe(arch, width, layers):
    """The vision_config transformers' convert_perception_lm_weights_to_hf.py writes: TimmWrapperConfig of
    timm/{arch}.fb with model_args from the checkpoint's vision_model params (facebookresearch/perception_models
    apps/plm/configs/stage_3/plm_*.yaml: image_size 448, patch_size 14, use_ln_post false, ls_init_value 0.1)."""
    return {"model_type": "timm_wrapper", "architecture": arch, "num_classes": 0, "do_pooling": True,
            "model_args": {"embed_dim": width, "depth": layers, "img_size": [448, 448], "global_pool": "",
                           "use_post_transformer_norm": False, "init_values": 0.1, "ref_feat_shape": [32, 32]}}


def _plm(h, layers, heads, inter, tie, vision, cls):
    """facebook/Perception-LM-* (gated): the converter's PerceptionLMConfig from the PLM training configs (dim,
    n_layers, n_heads, n_kv_heads 8, vocab 128256, the Llama FFN size from ffn_dim_multiplier / multiple_of,
    weight_tying, pooling_ratio 2, use_cls_token); the mirrors PIA-SPACE-LAB/Perception-LM-1B / -3B carry the same
    shapes (hlky/dinoml_v2 agents/plans/transformers/perception_lm/config_sweep.md)."""
    text = {"model_type": "llama", "hidden_size": h, "intermediate_size": inter, "num_attention_heads": heads,
            "num_hidden_layers": layers, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "vocab_size": 128256,
            "max_position_embeddings": 11520, "bos_token_id": 128000, "eos_token_id": [128001, 128009],
            "tie_word_embeddings": tie,
            "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0}
    return {"architectures": ["PerceptionLMForConditionalGeneration"], "model_type": "perception_lm",
            "image_token_id": 128002, "video_token_id": 128003, "projector_pooling_ratio": 2,
            "vision_use_cls_token": cls, "tie_word_embeddings": tie, "text_config": text, "vision_config": vision}


CONFIGS = {
    "FastVLM-0.5B": _fast_vlm(_qwen2("0.5B", 896, 24, 14, 2, 4864, 152000, True)),
    "FastVLM-1.5B": _fast_vlm(_qwen2("1.5B", 1536, 28, 12, 2, 8960, 152000, True)),
    "FastVLM-7B": _fast_vlm(_qwen2("7B", 3584, 28, 28, 4, 18944, 152128, None)),
    "Perception-LM-1B": _plm(2048, 16, 32, 8192, True, _pe("vit_pe_core_large_patch14_336", 1024, 23), True),
    "Perception-LM-3B": _plm(3072, 28, 24, 8192, True, _pe("vit_pe_core_large_patch14_336", 1024, 23), True),
    "Perception-LM-8B": _plm(4096, 32, 32, 14336, False, _pe("vit_pe_core_gigantic_patch14_448", 1536, 47), False),
}
#: transformers 5.24 + timm 1.0.31 on the meta device (module doc)
RECORDED = {"FastVLM-0.5B": 620_361_440, "FastVLM-1.5B": 1_673_607_776, "FastVLM-7B": 7_762_651_744,
            "Perception-LM-1B": 1_533_524_992, "Perception-LM-3B": 3_516_753_920, "Perception-LM-8B": 9_794_260_736,
            "fast_vlm defaults": 7_762_651_744}
#: the Hugging Face Hub's safetensors parameter metadata of facebook/Perception-LM-* (BF16; quoted in hlky/dinoml_v2
#: agents/plans/transformers/perception_lm/config_sweep.md from the Hub API)
PUBLISHED = {"Perception-LM-1B": 1_533_524_992, "Perception-LM-3B": 3_516_753_920, "Perception-LM-8B": 9_794_260_736}


# ---- hand counts from the module shapes -------------------------------------------------------------------------

def ln(d):
    return 2 * d


def lin(n_out, n_in, bias=True):
    return n_out * n_in + (n_out if bias else 0)


def pe_count(dim, depth, hidden, patches, *, cls=True, gamma=False, pre=True, post=False, fc_norm=False,
             pool_hidden=None, patch=(14, 14), ch=3, qkv_bias=True):
    """timm Eva (attn_type rope), num_classes 0: conv patch_embed (bias only without the pre-norm), cls_token,
    pos_embed, norm_pre; blocks of norm1, fused qkv, proj, norm2, fc1 / fc2, gamma_1 / gamma_2; norm; attn_pool
    (latent, q, kv, proj, norm, mlp); fc_norm."""
    n = dim * ch * patch[0] * patch[1] + (0 if pre else dim) + (dim if cls else 0) + (patches + int(cls)) * dim
    n += ln(dim) if pre else 0
    block = ln(dim) + lin(3 * dim, dim, qkv_bias) + lin(dim, dim) + ln(dim) + lin(hidden, dim) + lin(dim, hidden)
    n += depth * (block + (2 * dim if gamma else 0))
    n += ln(dim) if post else 0
    if pool_hidden:
        n += dim + lin(dim, dim) + lin(2 * dim, dim) + lin(dim, dim) + ln(dim) + lin(pool_hidden, dim) \
             + lin(dim, pool_hidden)
    return n + (ln(dim) if fc_norm else 0)


def conv(c_out, c_in_per_group, k, bias=True):
    return c_out * c_in_per_group * k * k + (c_out if bias else 0)


def fastvit_count(layers, dims):
    """timm FastViT MCi (inference_mode): stem 3x3 s2 / 3x3 depthwise / 1x1; per stage a downsample (7x7 conv grouped
    by the input width, 1x1), a 7x7 depthwise pos_emb in the attention stages (3, 4); RepMixer blocks (3x3 depthwise
    token mixer, layer_scale) or attention blocks (LayerNorm2d, qkv without bias, proj, two layer scales), each with a
    ConvMlp (7x7 depthwise conv without bias + BatchNorm affine, 1x1 fc1 / fc2 at 4x); final_conv (3x3 grouped by
    the last width, to 2x it) with a squeeze-excite at 1/16."""
    c0 = dims[0]
    n = conv(c0, 3, 3) + conv(c0, 1, 3) + conv(c0, c0, 1)
    for i, (depth, d) in enumerate(zip(layers, dims)):
        attn = i >= 3
        if i:
            n += conv(d, 1, 7) + conv(d, d, 1)
        if attn:
            n += conv(d, 1, 7)
        mlp = conv(d, 1, 7, bias=False) + 2 * d + conv(4 * d, d, 1) + conv(d, 4 * d, 1)
        mixer = (ln(d) + lin(3 * d, d, False) + lin(d, d) + 2 * d) if attn else (conv(d, 1, 3) + d)
        n += depth * (mixer + mlp)
    final = 2 * dims[-1]
    return n + conv(final // 16, final, 1) + conv(final, final // 16, 1) + conv(final, 1, 3)


MCI3 = ((2, 12, 24, 4, 2), (96, 192, 384, 768, 1536))


def llama_count(h, layers, heads, kv, inter, vocab, tied, hd=None):
    hd = hd or h // heads
    layer = lin(heads * hd, h, False) + 2 * lin(kv * hd, h, False) + lin(h, heads * hd, False) + 3 * inter * h + 2 * h
    return vocab * h + layers * layer + h + (0 if tied else vocab * h)


def qwen2_count(h, layers, heads, kv, inter, vocab, tied):
    hd = h // heads
    layer = lin(h, h) + 2 * lin(kv * hd, h) + lin(h, h, False) + 3 * inter * h + 2 * h
    return vocab * h + layers * layer + h + (0 if tied else vocab * h)


def projector(v, h, bias=True):
    return lin(h, v, bias) + lin(h, h, bias)


# ((text count, tower count, projector), K/V bytes per token at bf16: layers x (K, V) x kv heads x head_dim x 2)
HAND = {
    "FastVLM-0.5B": ((qwen2_count(896, 24, 14, 2, 4864, 152000, True), fastvit_count(*MCI3), projector(3072, 896)),
                     24 * 2 * 2 * 64 * 2),
    "FastVLM-1.5B": ((qwen2_count(1536, 28, 12, 2, 8960, 152000, True), fastvit_count(*MCI3), projector(3072, 1536)),
                     28 * 2 * 2 * 128 * 2),
    "FastVLM-7B": ((qwen2_count(3584, 28, 28, 4, 18944, 152128, False), fastvit_count(*MCI3), projector(3072, 3584)),
                   28 * 2 * 4 * 128 * 2),
    "Perception-LM-1B": ((llama_count(2048, 16, 32, 8, 8192, 128256, True),
                          pe_count(1024, 23, 4096, 32 * 32, gamma=True), projector(1024, 2048)), 16 * 2 * 8 * 64 * 2),
    "Perception-LM-3B": ((llama_count(3072, 28, 24, 8, 8192, 128256, True),
                          pe_count(1024, 23, 4096, 32 * 32, gamma=True), projector(1024, 3072)), 28 * 2 * 8 * 128 * 2),
    "Perception-LM-8B": ((llama_count(4096, 32, 32, 8, 14336, 128256, False),
                          pe_count(1536, 47, 8960, 32 * 32, cls=False, gamma=True), projector(1536, 4096)),
                         32 * 2 * 8 * 128 * 2),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_real_checkpoints_by_hand_recorded_and_published(name):
    (text, tower, proj), kv = HAND[name]
    spec = parse_config(CONFIGS[name])
    p = count_params(spec)
    assert p.total == text + tower + proj == RECORDED[name]
    assert p.active == p.total
    assert sum(t.numel for t in spec.vision) == tower + proj
    assert analyze(spec, Options(context=100, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token == kv
    if name in PUBLISHED:
        assert p.total == PUBLISHED[name]
    assert any(f"multimodal config ({CONFIGS[name]['model_type']}): the vision" in c for c in spec.caveats)


def test_tower_counts_by_hand():
    # the towers alone: 291,415,040 (PE-L, 23 layers at 448), 1,740,922,624 (PE-G, 47 layers), 122,714,208 (MCi3)
    assert pe_count(1024, 23, 4096, 32 * 32, gamma=True) == 291_415_040
    assert pe_count(1536, 47, 8960, 32 * 32, cls=False, gamma=True) == 1_740_922_624
    assert fastvit_count(*MCI3) == 122_714_208


def test_fast_vlm_class_defaults():
    """No sub-configs: FastVlmConfig's fastvit_mci3 tower (inference_mode) and its FastVLM-7B-style Qwen2, untied."""
    p = count_params(parse_config({"model_type": "fast_vlm"}))
    hand = qwen2_count(3584, 28, 28, 4, 18944, 152128, False) + fastvit_count(*MCI3) + projector(3072, 3584)
    assert p.total == hand == RECORDED["fast_vlm defaults"]
    # a given text_config takes Qwen2Config's own defaults, not FastVLM's (hidden 4096, 32 layers, vocab 151936)
    p = count_params(parse_config({"model_type": "fast_vlm", "text_config": {"model_type": "qwen2"}}))
    assert p.total == qwen2_count(4096, 32, 32, 32, 22016, 151936, False) + fastvit_count(*MCI3) \
        + projector(3072, 4096)


def test_perception_lm_class_defaults_refused():
    with pytest.raises(ConfigError, match="model_args has no 'embed_dim'.*resnet50"):
        parse_config({"model_type": "perception_lm"})


# ---- lm_head tie rules (checked on the meta device: tests/test_timm_vlm.py's live test) ---------------------------

_TINY_TEXT = {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 96, "vocab_size": 1000}
_TINY_PE = {"architecture": "vit_pe_core_large_patch14_336",
            "model_args": {"embed_dim": 32, "depth": 1, "img_size": [28, 28], "global_pool": "",
                           "ref_feat_shape": [2, 2], "num_heads": 2}}
_TINY_FV = {"architecture": "fastvit_mci3", "hidden_size": 3072, "model_args": {"inference_mode": True}}
TIES = list(itertools.product(("perception_lm", "fast_vlm"), (None, True, False), (None, True, False)))


def _tie_cfg(mt, wrapper_tie, text_tie):
    text = dict(_TINY_TEXT) if text_tie is None else dict(_TINY_TEXT, tie_word_embeddings=text_tie)
    cfg = {"model_type": mt, "text_config": text, "vision_config": _TINY_PE if mt == "perception_lm" else _TINY_FV}
    if wrapper_tie is not None:
        cfg["tie_word_embeddings"] = wrapper_tie
    return cfg


@pytest.mark.parametrize("mt, wrapper_tie, text_tie", TIES)
def test_tie_rules(mt, wrapper_tie, text_tie):
    if mt == "perception_lm":  # the wrapper's flag when set, else text_config's (LlamaConfig: untied)
        tied = wrapper_tie if wrapper_tie is not None else bool(text_tie)
        text = llama_count(64, 1, 4, 2, 96, 1000, tied)
        vision = pe_count(32, 1, 128, 2 * 2, pre=True, post=True, patch=(14, 14)) + projector(32, 64)
    else:  # tied when either flag is set (FastVlmConfig.__post_init__)
        tied = bool(wrapper_tie) or bool(text_tie)
        text = qwen2_count(64, 1, 4, 2, 96, 1000, tied)
        vision = fastvit_count(*MCI3) + projector(3072, 64)
    assert count_params(parse_config(_tie_cfg(mt, wrapper_tie, text_tie))).total == text + vision
    # recorded on the meta device (transformers 5.24 + timm 1.0.31)
    assert text + vision == {("perception_lm", True): 133_024, ("perception_lm", False): 197_024,
                             ("fast_vlm", True): 123_010_080, ("fast_vlm", False): 123_074_080}[(mt, tied)]


# ---- every modelled timm architecture, alone -------------------------------------------------------------------

#: timm.create_model(arch, pretrained=False, num_classes=0, **model_args) on meta (timm 1.0.31), unique parameters
TOWERS = {
    ("vit_pe_core_tiny_patch16_384", ()): 6_042_240,
    ("vit_pe_core_small_patch16_384", ()): 23_586_048,
    ("vit_pe_core_base_patch16_224", ()): 92_886_528,
    ("vit_pe_core_large_patch14_336", ()): 316_102_656,
    ("vit_pe_core_gigantic_patch14_448", ()): 1_880_066_560,
    ("vit_pe_lang_large_patch14_448", ()): 291_415_040,
    ("vit_pe_lang_gigantic_patch14_448", ()): 1_740_922_624,
    ("vit_pe_spatial_tiny_patch16_512", ()): 5_683_200,
    ("vit_pe_spatial_small_patch16_512", ()): 21_983_232,
    ("vit_pe_spatial_base_patch16_512", ()): 86_433_792,
    ("vit_pe_spatial_large_patch14_448", ()): 303_964_160,
    ("vit_pe_spatial_gigantic_patch14_448", ()): 1_851_887_104,
    ("fastvit_mci3", (("inference_mode", True),)): 122_714_208,
    ("fastvit_mci4", (("inference_mode", True),)): 318_423_168,
}


def _tower(arch, args):
    if arch in timm_vlm.PE_ARCHITECTURES:
        return timm_vlm.pe_tensors(arch, dict(args), "t", "m")[0]
    return timm_vlm.fastvit_tensors(arch, dict(args), "t", "m")


@pytest.mark.parametrize("arch, args", list(TOWERS))
def test_each_architecture_equals_timm(arch, args):
    assert sum(t.numel for t in _tower(arch, args)) == TOWERS[(arch, args)]


def test_pe_architecture_defaults_by_hand():
    # core: map pooling (attn_pool, 8 heads, mlp 4x), post-norm, no layer scale; img 336 in 14-pixel patches
    assert TOWERS[("vit_pe_core_large_patch14_336", ())] == pe_count(1024, 24, 4096, 24 * 24, post=True,
                                                                    pool_hidden=4096)
    assert TOWERS[("vit_pe_core_tiny_patch16_384", ())] == pe_count(192, 12, 768, 24 * 24, post=True, pool_hidden=768,
                                                                   patch=(16, 16))
    # gigantic core: no class token, fc1 at int(1536 x 8960 / 1536) = 8960
    assert TOWERS[("vit_pe_core_gigantic_patch14_448", ())] == pe_count(1536, 50, 8960, 32 * 32, cls=False, post=True,
                                                                       pool_hidden=6144)
    # spatial: avg pooling but fc_norm and post-norm explicitly off
    assert TOWERS[("vit_pe_spatial_base_patch16_512", ())] == pe_count(768, 12, 3072, 32 * 32, patch=(16, 16))
    assert TOWERS[("vit_pe_spatial_gigantic_patch14_448", ())] == pe_count(1536, 50, 8960, 32 * 32, cls=False,
                                                                          gamma=True)
    assert TOWERS[("fastvit_mci4", (("inference_mode", True),))] == fastvit_count((2, 12, 24, 4, 4),
                                                                                  (128, 256, 512, 1024, 2048))


#: PE model_args variants, each in a PerceptionLM with a tiny Llama: (model_args, hand-counted tower)
PE_VARIANTS = {
    "core-large map pool, own heads / ratio": (
        "vit_pe_core_large_patch14_336", {"embed_dim": 256, "depth": 2, "attn_pool_num_heads": 4,
                                          "attn_pool_mlp_ratio": 2.0, "img_size": 224},
        pe_count(256, 2, 1024, 16 * 16, post=True, pool_hidden=512)),
    "tiny avg + fc_norm, no pre-norm, rectangular": (
        "vit_pe_core_tiny_patch16_384", {"embed_dim": 96, "depth": 2, "num_heads": 3, "global_pool": "avg",
                                         "use_fc_norm": True, "use_post_transformer_norm": True, "class_token": False,
                                         "img_size": [224, 160], "use_pre_transformer_norm": False, "qkv_bias": False,
                                         "init_values": 1e-5, "mlp_ratio": 3.0, "drop_path_rate": 0.1,
                                         "dynamic_img_size": True},
        pe_count(96, 2, 288, 14 * 10, cls=False, gamma=True, pre=False, post=True, fc_norm=True, patch=(16, 16),
                 qkv_bias=False)),
    "lang gigantic, token pooling, fewer layers": (
        "vit_pe_lang_gigantic_patch14_448", {"embed_dim": 1536, "depth": 3, "global_pool": "avg",
                                             "patch_size": 16, "img_size": 256, "in_chans": 4},
        pe_count(1536, 3, 8960, 16 * 16, cls=False, gamma=True, patch=(16, 16), ch=4)),
}
_TINY_LLAMA = dict(_TINY_TEXT, model_type="llama")


def _pe_cfg(arch, args):
    return {"model_type": "perception_lm", "text_config": _TINY_LLAMA,
            "vision_config": {"model_type": "timm_wrapper", "architecture": arch, "model_args": args}}


@pytest.mark.parametrize("name", list(PE_VARIANTS))
def test_pe_variants_by_hand(name):
    arch, args, tower = PE_VARIANTS[name]
    total = count_params(parse_config(_pe_cfg(arch, args))).total
    assert total == tower + projector(args["embed_dim"], 64) + llama_count(64, 1, 4, 2, 96, 1000, False)


# ---- refusals and bad configs -----------------------------------------------------------------------------------

def _plm1b(**vision):
    cfg = json.loads(json.dumps(CONFIGS["Perception-LM-1B"]))
    cfg["vision_config"].update(vision)
    return cfg


def _fast05(**vision):
    cfg = json.loads(json.dumps(CONFIGS["FastVLM-0.5B"]))
    cfg["vision_config"].update(vision)
    return cfg


def test_refusals_by_name():
    with pytest.raises(UnsupportedModelError, match="timm vision tower 'eva02_large_patch14_448' is not modelled"):
        parse_config(_plm1b(architecture="eva02_large_patch14_448"))
    with pytest.raises(UnsupportedModelError, match="timm vision tower 'fastvit_mci2' is not modelled"):
        parse_config(_fast05(architecture="fastvit_mci2"))
    with pytest.raises(UnsupportedModelError, match="inference_mode false builds FastViT's train-time"):
        parse_config(_fast05(model_args={}))
    with pytest.raises(UnsupportedModelError, match="model_args 'swiglu_mlp' for timm's vit_pe_core_large"):
        parse_config(_plm1b(model_args=dict(CONFIGS["Perception-LM-1B"]["vision_config"]["model_args"],
                                            swiglu_mlp=True)))
    with pytest.raises(UnsupportedModelError, match="model_args 'layer_scale_init_value' for timm's fastvit_mci3"):
        parse_config(_fast05(model_args={"inference_mode": True, "layer_scale_init_value": None}))
    with pytest.raises(UnsupportedModelError, match="vision tower 'siglip_vision_model' is not modelled"):
        parse_config(_plm1b(model_type="siglip_vision_model"))


def test_bad_configs():
    with pytest.raises(ConfigError, match="'hidden_size' is 1536, but timm's fastvit_mci3 outputs 3072"):
        parse_config(_fast05(hidden_size=1536))
    cfg = _fast05()
    del cfg["vision_config"]["hidden_size"]
    with pytest.raises(ConfigError, match="vision_config.hidden_size' is missing"):
        parse_config(cfg)
    with pytest.raises(ConfigError, match="vision_feature_layer"):
        parse_config(dict(CONFIGS["FastVLM-0.5B"], vision_feature_layer=-2))
    args = dict(CONFIGS["Perception-LM-1B"]["vision_config"]["model_args"], num_heads=5)
    with pytest.raises(ConfigError, match="'num_heads' .5. must divide embed_dim .1024."):
        parse_config(_plm1b(model_args=args))
    with pytest.raises(ConfigError, match="global_pool"):
        parse_config(_plm1b(model_args=dict(args, num_heads=16, global_pool="cls")))
    with pytest.raises(ConfigError, match="tie_word_embeddings"):
        parse_config(dict(CONFIGS["Perception-LM-1B"], tie_word_embeddings="yes"))


def test_cli_end_to_end(tmp_path):
    path = tmp_path / "config.json"
    for name in ("Perception-LM-8B", "FastVLM-0.5B"):
        path.write_text(json.dumps(CONFIGS[name]))
        r = run("analyze", path, "--json")
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == RECORDED[name]
        assert r.json["kv_cache"]["bytes_per_token"] == HAND[name][1]
    path.write_text(json.dumps(_fast05(model_args={"inference_mode": False})))
    run("analyze", path).assert_error("fastvit_mci3", "inference_mode false")
    path.write_text(json.dumps({"model_type": "perception_lm"}))
    run("analyze", path).assert_error("embed_dim", "PerceptionLMMultiModalProjector")


# ---- live: transformers + timm on the meta device ---------------------------------------------------------------

def _live_cases():
    cases = {name: cfg for name, cfg in CONFIGS.items()}
    cases["fast_vlm defaults"] = {"model_type": "fast_vlm"}
    for mt, wt, tt in TIES:
        cases[f"tie {mt} {wt} {tt}"] = _tie_cfg(mt, wt, tt)
    for name, (arch, args, _) in PE_VARIANTS.items():
        cases[name] = _pe_cfg(arch, args)
    return cases


@pytest.mark.parametrize("name", list(_live_cases()))
def test_live_transformers_timm(name):
    pytest.importorskip("timm", reason="the live transformers + timm comparison needs timm, which the dev venv lacks "
                                       "(the recorded totals above stand in for it)")
    from tests.oracle import hf_model, unique_param_count

    cfg = _live_cases()[name]
    ours = count_params(parse_config(cfg)).total
    assert ours == unique_param_count(hf_model(cfg, image_text=True))
    if name in RECORDED:
        assert ours == RECORDED[name]


@pytest.mark.parametrize("arch, args", list(TOWERS))
def test_live_timm_towers(arch, args):
    timm = pytest.importorskip("timm", reason="the live timm comparison needs timm, which the dev venv lacks")
    import torch

    with torch.device("meta"):
        model = timm.create_model(arch, pretrained=False, num_classes=0, **dict(args))
    assert sum(p.numel() for p in model.parameters()) == TOWERS[(arch, args)]
    assert {t.name.removeprefix("m.") for t in _tower(arch, args)} == {n for n, _ in model.named_parameters()}
