"""Microsoft Phi-3-vision / Phi-3.5-vision (``phi3_v``: remote code, no transformers class).

No transformers oracle for the whole checkpoint: its language model is Phi-3 (checked against transformers'
Phi3ForCausalLM built from the same flat fields), its image embedding against a hand count of the remote code's
shapes (image_embedding_phi3_v.py of microsoft/Phi-3-vision-128k-instruct, the same in vLLM's phi3v.py):
CLIPVisionModel(CLIP_VIT_LARGE_PATCH14_336_CONFIG: hidden 1024, intermediate 4096, 24 layers, 336 / 14) —
class_embedding, a bias-free 3-channel patch conv, 577 positions, pre_layrnorm, per layer two LayerNorms, biased
q/k/v/out and fc1 / fc2, post_layernorm —; glb_GN [1, 1, 4·image_dim_out] and sub_GN [1, 1, 1, 4·image_dim_out]
(with_learnable_separator); img_projection: Linear(image_dim_out, hidden) ("linear"), or for "mlp"
Linear(d, hidden), GELU, Linear(hidden, hidden) with d = 4·image_dim_out under use_hd_transform.
And the published size: the hub's 4.15B for Phi-3-vision-128k-instruct and Phi-3.5-vision-instruct.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.oracle import hf_param_count

_F48 = [1.0] * 48  # the published rope_scaling lists hold 48 per-frequency factors (values shortened here)
#: microsoft/Phi-3-vision-128k-instruct's config.json as published on the hub (rope factor values replaced by 1.0;
#: auto_map abbreviated); Phi-3.5-vision-instruct's differs in rope_scaling.type ("longrope") and the factors
PHI3_V = {
    "architectures": ["Phi3VForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "auto_map": {"AutoConfig": "configuration_phi3_v.Phi3VConfig",
                 "AutoModelForCausalLM": "modeling_phi3_v.Phi3VForCausalLM"},
    "embd_layer": {"embedding_cls": "image", "hd_transform_order": "sub_glb", "projection_cls": "mlp",
                   "use_hd_transform": True, "with_learnable_separator": True},
    "embd_pdrop": 0.0, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 3072,
    "img_processor": {"image_dim_out": 1024, "model_name": "openai/clip-vit-large-patch14-336",
                      "name": "clip_vision_model", "num_img_tokens": 144},
    "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "phi3_v",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": _F48, "short_factor": _F48, "type": "su"}, "rope_theta": 10000.0,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    "vocab_size": 32064,
}
PHI35_V = dict(PHI3_V, rope_scaling={"long_factor": _F48, "short_factor": _F48, "type": "longrope"})


def clip_by_hand(h=1024, inter=4096, layers=24, image=336, patch=14) -> int:
    block = 2 * 2 * h + 4 * (h * h + h) + (inter * h + inter) + (h * inter + h)
    embeddings = h + 3 * patch * patch * h + ((image // patch) ** 2 + 1) * h
    return embeddings + 2 * h + layers * block + 2 * h  # pre_layrnorm, blocks, post_layernorm


def embedding_by_hand(text_hidden, dim_out=1024, hd=True, mlp=True) -> int:
    d = 4 * dim_out if hd else dim_out
    separators = 2 * 4 * dim_out if hd else 0
    projection = (d * text_hidden + text_hidden) + ((text_hidden * text_hidden + text_hidden) if mlp else 0)
    return clip_by_hand() + separators + projection


def _text(cfg: dict) -> dict:
    """The flat config as transformers' Phi-3 reads it: the image fields dropped, and rope_scaling (no parameters;
    transformers 5 wants the su / longrope lists under rope_parameters with original_max_position_embeddings)."""
    drop = ("embd_layer", "img_processor", "auto_map", "rope_scaling")
    return {k: v for k, v in cfg.items() if k not in drop} | {"model_type": "phi3"}


@pytest.mark.parametrize("cfg", [PHI3_V, PHI35_V], ids=["phi-3-vision-128k", "phi-3.5-vision"])
def test_phi3_v_published_total(cfg):
    """4,146,621,440 = Phi-3-mini's 3,821,079,552 + CLIP ViT-L/14-336 303,507,456 + separators 8,192 + projection
    22,026,240: the hub's "4.15B params" (bf16 weights 8,293,242,880 bytes)."""
    spec = parse_config(cfg)
    p = count_params(spec)
    assert clip_by_hand() == 303_507_456
    assert p.vision == embedding_by_hand(3072) == 325_541_888
    assert p.total == hf_param_count(_text(cfg)) + p.vision == 4_146_621_440
    assert round(p.total / 1e9, 2) == 4.15
    assert not spec.tie_word_embeddings
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    a, t = analyze(spec, opts), analyze(parse_config(_text(cfg)), opts)
    assert a.kv.bytes_per_token == t.kv.bytes_per_token
    assert a.weights_bytes == t.weights_bytes + 2 * p.vision


_TINY_TEXT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 96, "vocab_size": 128, "rope_theta": 10000.0, "pad_token_id": 0}


@pytest.mark.parametrize("embd,tie,vision", [
    ({"projection_cls": "linear"}, False, embedding_by_hand(64, hd=False, mlp=False)),
    ({"projection_cls": "mlp"}, True, embedding_by_hand(64, hd=False, mlp=True)),
    ({"projection_cls": "mlp", "use_hd_transform": True, "with_learnable_separator": True}, False,
     embedding_by_hand(64, dim_out=256)),
    ({"use_hd_transform": True, "with_learnable_separator": True}, True, embedding_by_hand(64, dim_out=256, mlp=False)),
    ("default", False, 0),  # Phi3VConfig's default embd_layer: Phi3VModel builds no image embedding
])
def test_phi3_v_embedding_variants(embd, tie, vision):
    dim = 256 if isinstance(embd, dict) and embd.get("use_hd_transform") else 1024
    cfg = dict(_TINY_TEXT, model_type="phi3_v", tie_word_embeddings=tie, embd_layer=embd,
               img_processor=dict(PHI3_V["img_processor"], image_dim_out=dim))
    p = count_params(parse_config(cfg))
    assert p.vision == vision
    assert p.total == hf_param_count(_text(cfg)) + vision


def test_phi3_v_refuses_what_its_code_does_not_build():
    base = dict(_TINY_TEXT, model_type="phi3_v", embd_layer=PHI3_V["embd_layer"], img_processor=PHI3_V["img_processor"])
    img = PHI3_V["img_processor"]
    with pytest.raises(UnsupportedModelError, match="clip-vit-large-patch14-336"):
        parse_config(dict(base, img_processor=dict(img, model_name="openai/clip-vit-base-patch16")))
    with pytest.raises(UnsupportedModelError, match="img_processor"):
        parse_config(dict(base, img_processor=dict(img, name="siglip")))
    with pytest.raises(ConfigError, match="img_processor"):
        parse_config(dict(base, img_processor=None))
    with pytest.raises(ConfigError, match="image_dim_out"):
        parse_config(dict(base, img_processor={k: v for k, v in img.items() if k != "image_dim_out"}))
    with pytest.raises(ConfigError, match="image_dim_out"):
        parse_config(dict(base, img_processor=dict(img, image_dim_out="1024")))
    with pytest.raises(ConfigError, match="must be equal"):
        parse_config(dict(base, embd_layer=dict(PHI3_V["embd_layer"], with_learnable_separator=False)))
    with pytest.raises(ConfigError, match="use_hd_transform"):
        parse_config(dict(base, embd_layer=dict(PHI3_V["embd_layer"], use_hd_transform="yes")))
    with pytest.raises(UnsupportedModelError, match="projection_cls"):
        parse_config(dict(base, embd_layer=dict(PHI3_V["embd_layer"], projection_cls="conv")))


def test_phi3_v_text_logits_equal_transformers_phi3():
    """The runtime runs phi3_v's language model: transformers' Phi3ForCausalLM weights (the checkpoint's text names
    are Phi-3's) load into the decoder built from the phi3_v spec, logits and cached decode equal; the image
    embedding is counted, never built."""
    pytest.importorskip("torch", reason="the runtime tests need torch")
    from planner.runtime.load import load_tensors
    from planner.runtime.model import build_decoder
    from tests.test_runtime import TINY, assert_logits_and_cached_decode, hf_model

    text = dict(TINY["phi3"])
    cfg = dict(text, model_type="phi3_v", embd_layer=PHI3_V["embd_layer"], img_processor=PHI3_V["img_processor"])
    hf = hf_model(text)
    spec = parse_config(cfg)
    ours = build_decoder(spec, seed=None)
    assert load_tensors(ours, hf.state_dict().items()).missing == []
    assert count_params(spec).total == sum(p.numel() for p in hf.parameters()) + embedding_by_hand(64)
    assert_logits_and_cached_decode(spec, ours, hf)
