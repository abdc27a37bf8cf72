"""Phi-4-multimodal: transformers' ``phi4_multimodal`` (Phi4MultimodalForCausalLM, the whole checkpoint: Phi-4-mini's
decoder, the SigLIP image embedding and the conformer audio embedding) checked against transformers built on meta;
the hub's remote-code ``phi4mm`` format against the same count after transformers' own conversion mapping
(convert_phi4_multimodal_weights_to_hf.py: renamed audio fields, the LoRA weights dropped) plus a hand count of its
PEFT LoRA adapters (lora_A [r, in], lora_B [out, r] on qkv_proj / o_proj / gate_up_proj / down_proj of every layer,
vision r = 256 and speech r = 320 in the published config), and the hub's published 5.57B.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params

_TEXT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 96, "vocab_size": 128, "pad_token_id": 0, "partial_rotary_factor": 0.5}
_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2,
           "image_size": 32, "patch_size": 8}
_AUDIO = {"hidden_size": 32, "intermediate_size": 48, "num_blocks": 2, "num_attention_heads": 2, "input_size": 16,
          "nemo_conv_channels": 8, "ext_pw_out_channel": 16, "depthwise_separable_out_channel": 24,
          "bias_max_distance": 10, "time_reduction": 8}


def _mm(**kw) -> dict:
    cfg = dict(_TEXT, model_type="phi4_multimodal", vision_config=_VISION, audio_config=_AUDIO)
    return {**cfg, **kw}


def _hf_split(cfg: dict) -> tuple[int, int, int]:
    """(total, image embedding, audio embedding) of transformers' model built on meta."""
    from tests.oracle import hf_model

    model = hf_model(cfg)
    seen, total, vision, audio = set(), 0, 0, 0
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        vision += p.numel() * (".embed_tokens_extend.image_embed." in name)
        audio += p.numel() * (".embed_tokens_extend.audio_embed." in name)
    return total, vision, audio


@pytest.mark.parametrize("kw", [
    {},
    {"tie_word_embeddings": True},
    # odd patches per side (a reflection pad, no parameters), a symmetric bias table, 4x time reduction
    {"vision_config": dict(_VISION, image_size=40), "audio_config": dict(_AUDIO, bias_symmetric=True,
                                                                          time_reduction=4)},
    # 16x reduction (three stride-2 convs), a depthwise multiplier, downsampled speech projections
    {"audio_config": dict(_AUDIO, time_reduction=16, depthwise_multiplier=2, downsample_rate=2, kernel_size=5,
                          input_size=80)},
    {"vision_config": {}, "audio_config": {}},  # the class defaults: SigLIP-so400m-like tower, the 24-block conformer
], ids=["untied", "tied", "odd-patches-symmetric-tr4", "tr16-mult2-down2", "default-towers"])
def test_phi4_multimodal_counts_the_whole_checkpoint(kw):
    cfg = _mm(**kw)
    spec = parse_config(cfg)
    p = count_params(spec)
    total, vision, audio = _hf_split(cfg)
    assert (p.total, p.vision, p.audio) == (total, vision, audio)
    assert spec.tie_word_embeddings is cfg.get("tie_word_embeddings", False)
    text = {k: v for k, v in cfg.items() if k not in ("vision_config", "audio_config")} | {"model_type": "phi3"}
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    a, t = analyze(spec, opts), analyze(parse_config(text), opts)
    assert a.kv.bytes_per_token == t.kv.bytes_per_token
    assert a.weights_bytes == t.weights_bytes + 2 * (p.vision + p.audio)


_F48 = [1.0] * 48  # the published rope_scaling lists: 48 factors each (values shortened here)
#: microsoft/Phi-4-multimodal-instruct's config.json as published (remote code; rope factor values replaced by 1.0,
#: auto_map and activation_checkpointing left out)
PHI4MM = {
    "architectures": ["Phi4MMForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "audio_processor": {"name": "cascades", "config": {
        "activation": "swish", "attention_dim": 1024, "attention_heads": 16, "batch_norm": False, "bias_in_glu": True,
        "causal": True, "chunk_size": -1, "cnn_layer_norm": True, "conv_activation": "swish", "conv_glu_type": "swish",
        "depthwise_multiplier": 1, "depthwise_seperable_out_channel": 1024, "dropout_rate": 0.0,
        "encoder_embedding_config": {"input_size": 80}, "ext_pw_kernel_size": 1, "ext_pw_out_channel": 1024,
        "input_layer": "nemo_conv", "input_size": 80, "kernel_size": 3, "left_chunk": 18, "linear_units": 1536,
        "nemo_conv_settings": {"conv_channels": 1024}, "num_blocks": 24,
        "relative_attention_bias_args": {"t5_bias_max_distance": 500, "type": "t5"}, "time_reduction": 8}},
    "bos_token_id": 199999,
    "embd_layer": {
        "audio_embd_layer": {"compression_rate": 8, "downsample_rate": 1, "embedding_cls": "audio",
                             "enable_gradient_checkpointing": True, "projection_cls": "mlp",
                             "use_conv_downsample": False, "use_qformer": False},
        "embedding_cls": "image_audio",
        "image_embd_layer": {"crop_size": 448, "embedding_cls": "tune_image", "enable_gradient_checkpointing": True,
                             "hd_transform_order": "sub_glb", "image_token_compression_cls": "avg_pool_2d",
                             "projection_cls": "mlp", "use_hd_transform": True, "with_learnable_separator": True}},
    "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu", "hidden_size": 3072,
    "img_processor": None, "initializer_range": 0.02, "intermediate_size": 8192, "interpolate_factor": 1,
    "lm_head_bias": False, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "phi4mm",
    "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "original_max_position_embeddings": 4096, "pad_token_id": 199999, "partial_rotary_factor": 0.75,
    "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": _F48, "short_factor": _F48, "type": "longrope"}, "rope_theta": 10000.0,
    "sliding_window": 262144,
    "speech_lora": {"dp": 0.01, "layer": r"((layers.*self_attn\.(qkv|o)_proj)|(layers.*mlp\.(gate_up|down)_proj))",
                    "lora_alpha": 640, "r": 320},
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    "vision_lora": {"dp": 0.0, "layer": r"layers.*((self_attn\.(qkv_proj|o_proj))|(mlp\.(gate_up|down)_proj))",
                    "lora_alpha": 512, "r": 256},
    "vocab_size": 200064,
}


def _converted(remote: dict) -> dict:
    """transformers' convert_config, written out: the phi4_multimodal config the remote one converts to."""
    ac = remote["audio_processor"]["config"]
    audio = {"hidden_size": ac["attention_dim"], "num_attention_heads": ac["attention_heads"],
             "intermediate_size": ac["linear_units"], "num_blocks": ac["num_blocks"],
             "nemo_conv_channels": ac["nemo_conv_settings"]["conv_channels"],
             "bias_max_distance": ac["relative_attention_bias_args"]["t5_bias_max_distance"],
             "time_reduction": ac["time_reduction"], "input_size": ac["input_size"],
             "ext_pw_out_channel": ac["ext_pw_out_channel"],
             "depthwise_separable_out_channel": ac["depthwise_seperable_out_channel"],
             "kernel_size": ac["kernel_size"], "depthwise_multiplier": ac["depthwise_multiplier"],
             "downsample_rate": remote["embd_layer"]["audio_embd_layer"]["downsample_rate"]}
    keep = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
            "vocab_size", "tie_word_embeddings", "pad_token_id")
    return {k: remote[k] for k in keep} | {
        "model_type": "phi4_multimodal", "audio_config": audio,
        "vision_config": {"crop_size": remote["embd_layer"]["image_embd_layer"]["crop_size"]}}


def lora_by_hand(h, heads, kv, inter, layers, ranks) -> int:
    hd = h // heads
    per_rank = (h + (heads + 2 * kv) * hd) + (heads * hd + h) + (h + 2 * inter) + (inter + h)
    return layers * per_rank * sum(ranks)


def test_phi4_multimodal_published_transformers_format_total():
    """The converted checkpoint (transformers' format): 4,743,988,032 = Phi-4-mini 3,836,021,760 (tied) + image
    embedding 441,550,016 + audio embedding 466,416,256."""
    cfg = _converted(PHI4MM)
    p = count_params(parse_config(cfg))
    assert (p.total, p.vision, p.audio) == _hf_split(cfg) == (4_743_988_032, 441_550_016, 466_416_256)


def test_phi4mm_published_total():
    """The hub's Phi-4-multimodal-instruct: "5.57B params" = the converted model + the LoRA adapters
    (32 layers x 45,056 x (256 + 320) = 830,472,192)."""
    spec = parse_config(PHI4MM)
    p = count_params(spec)
    lora = lora_by_hand(3072, 24, 8, 8192, 32, (256, 320))
    assert lora == 830_472_192
    assert p.total == 4_743_988_032 + lora == 5_574_460_224
    assert round(p.total / 1e9, 2) == 5.57
    assert p.vision == 441_550_016 + lora_by_hand(3072, 24, 8, 8192, 32, (256,))
    assert p.audio == 466_416_256 + lora_by_hand(3072, 24, 8, 8192, 32, (320,))
    assert spec.tie_word_embeddings
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    assert analyze(spec, opts).kv.bytes_per_token == analyze(parse_config(_converted(PHI4MM)), opts).kv.bytes_per_token


def _tiny_remote(**kw) -> dict:
    ac = dict(PHI4MM["audio_processor"]["config"], attention_dim=32, attention_heads=2, linear_units=48, num_blocks=2,
              nemo_conv_settings={"conv_channels": 8}, input_size=16, ext_pw_out_channel=16,
              depthwise_seperable_out_channel=24, relative_attention_bias_args={"type": "t5",
                                                                                "t5_bias_max_distance": 10})
    cfg = dict(PHI4MM, **_TEXT, audio_processor={"name": "cascades", "config": ac},
               vision_lora=dict(PHI4MM["vision_lora"], r=4), speech_lora=dict(PHI4MM["speech_lora"], r=3))
    cfg.pop("rope_scaling")
    return {**cfg, **kw}


def test_phi4mm_maps_onto_transformers_shapes():
    """A tiny remote config: the converted config's transformers count (default vision tower) plus its LoRA."""
    cfg = _tiny_remote()
    total, _, _ = _hf_split(_converted(cfg))
    assert count_params(parse_config(cfg)).total == total + lora_by_hand(64, 4, 2, 96, 2, (4, 3))
    # one adapter matching only the attention projections
    only_attn = _tiny_remote(speech_lora=None, vision_lora={"r": 4, "layer": r"layers.*self_attn\.(qkv|o)_proj"})
    hd = 64 // 4
    attn = 2 * 4 * ((64 + (4 + 2 * 2) * hd) + (4 * hd + 64))
    assert count_params(parse_config(only_attn)).total == total + attn


def test_phi4mm_refuses_what_it_cannot_map():
    base = _tiny_remote()
    ac = base["audio_processor"]["config"]
    with pytest.raises(UnsupportedModelError, match="linear_glu_in_convm"):
        parse_config(dict(base, audio_processor={"name": "cascades", "config": dict(ac, linear_glu_in_convm=True)}))
    with pytest.raises(UnsupportedModelError, match="attention_group_size"):
        parse_config(dict(base, audio_processor={"name": "cascades", "config": dict(ac, attention_group_size=2)}))
    with pytest.raises(UnsupportedModelError, match="relative_attention_bias_args"):
        parse_config(dict(base, audio_processor={"name": "cascades", "config": dict(
            ac, relative_attention_bias_args={"type": "alibi"})}))
    with pytest.raises(ConfigError, match="attention_dim"):
        parse_config(dict(base, audio_processor={"name": "cascades", "config": {
            k: v for k, v in ac.items() if k != "attention_dim"}}))
    with pytest.raises(ConfigError, match="audio_processor"):
        parse_config({k: v for k, v in base.items() if k != "audio_processor"})
    with pytest.raises(UnsupportedModelError, match="use_qformer"):
        parse_config(dict(base, embd_layer=dict(base["embd_layer"], audio_embd_layer=dict(
            base["embd_layer"]["audio_embd_layer"], use_qformer=True))))
    with pytest.raises(UnsupportedModelError, match="lm_head_bias"):
        parse_config(dict(base, lm_head_bias=True))
    with pytest.raises(ConfigError, match="regular expression"):
        parse_config(dict(base, vision_lora={"r": 4, "layer": "layers.*(("}))
    with pytest.raises(ConfigError, match="time_reduction"):
        parse_config(_mm(audio_config=dict(_AUDIO, time_reduction=3)))
