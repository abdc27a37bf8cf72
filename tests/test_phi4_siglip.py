"""Microsoft Phi-4-reasoning-vision-15B (``phi4-siglip``, ``Phi4ForCausalLMV``: remote code, no transformers class).

Its code builds transformers' own classes, so each part has a transformers oracle on the meta device: the language
model is Phi3ForCausalLM from the flat fields (modeling_phi4_visionr.py subclasses it; vLLM's phi4siglip.py builds
``Phi3ForCausalLM`` from the same config), the tower is Siglip2VisionModel(vision_config) whole (the checkpoint keeps
the last layer, post-LayerNorm and pooling head: vLLM's phi4siglip.py maps ``model.vision_tower.vision_tower.
vision_model.head.`` to None when it loads, i.e. the checkpoint holds it), and the projector is the ``mlp2x_gelu``
``model.mm_projector.0`` / ``.2`` pair, Linear(mm_hidden_size, hidden) and Linear(hidden, hidden), biased (vLLM:
LlavaMultiModalProjector(..., multimodal_projector_bias=True)).

The config: the hub's config.json is not quoted in any stored repository; this one is built from the fields
Blaizzy/mlx-vlm mlx_vlm/models/phi4_siglip/config.py gives as Phi-4-reasoning-vision-15B's (TextConfig /
VisionConfig / ModelConfig defaults: Phi-4's 40 layers of 5120, 40 heads / 10 KV heads, 17920, vocab 100352; SigLIP2
NaFlex so400m 1152 / 4304 / 27 layers / 16 heads / patch 16 / 256 positions; mm_hidden_size 1152, mlp2x_gelu), with
the model_type ``phi4-siglip`` that mlx-vlm, vLLM's mapping and llama.cpp's convert script read.
"""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.oracle import hf_class_model, hf_param_count, unique_param_count

VISION = {"model_type": "siglip2_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
          "num_hidden_layers": 27, "num_attention_heads": 16, "num_channels": 3, "patch_size": 16,
          "num_patches": 256, "layer_norm_eps": 1e-06, "hidden_act": "gelu_pytorch_tanh"}
PHI4V = {
    "architectures": ["Phi4ForCausalLMV"], "model_type": "phi4-siglip", "hidden_size": 5120, "num_hidden_layers": 40,
    "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 100352,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 32768,
    "original_max_position_embeddings": 32768, "tie_word_embeddings": False, "partial_rotary_factor": 1.0,
    "mm_hidden_size": 1152, "mm_projector_type": "mlp2x_gelu", "mm_vision_select_layer": -2,
    "min_num_patches": 256, "max_num_patches": 3600, "vision_config": VISION,
}
_IMAGE_KEYS = ("vision_config", "mm_hidden_size", "mm_projector_type", "mm_vision_select_layer", "min_num_patches",
               "max_num_patches", "architectures")


def _text(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k not in _IMAGE_KEYS} | {"model_type": "phi3"}


def _tower(vc: dict) -> int:
    return unique_param_count(hf_class_model(vc, "Siglip2VisionModel"))


def _projector(vh: int, h: int) -> int:
    return (vh * h + h) + (h * h + h)


def test_phi4_reasoning_vision_total_against_transformers_parts():
    """15,119,518,144 = Phi3ForCausalLM 14,659,507,200 (microsoft/phi-4's 14.7B) + Siglip2VisionModel (so400m
    NaFlex, head included) + the mlp2x_gelu projector 32,122,880 (1152·5120 + 5120 + 5120² + 5120)."""
    spec = parse_config(PHI4V)
    p = count_params(spec)
    text = hf_param_count(_text(PHI4V))
    assert text == 14_659_507_200
    assert _projector(1152, 5120) == 32_122_880
    assert p.vision == _tower(VISION) + _projector(1152, 5120)
    assert p.total == text + p.vision == 15_119_518_144
    assert not spec.tie_word_embeddings
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    a, t = analyze(spec, opts), analyze(parse_config(_text(PHI4V)), opts)
    assert a.kv.bytes_per_token == t.kv.bytes_per_token == 40 * 2 * 10 * 128 * 2
    assert a.weights_bytes == t.weights_bytes + 2 * p.vision


_TINY = {"model_type": "phi4-siglip", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128, "rope_theta": 10000.0,
         "pad_token_id": 0}
_TINY_VISION = {"model_type": "siglip2_vision_model", "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 2, "num_patches": 64}


@pytest.mark.parametrize("vision,tie", [
    (_TINY_VISION, False),
    (dict(_TINY_VISION, vision_use_head=False), True),
    ({k: v for k, v in _TINY_VISION.items() if k != "model_type"}, False),  # model_type absent: SigLIP2
])
def test_phi4_siglip_tiny_variants(vision, tie):
    cfg = dict(_TINY, vision_config=vision, mm_hidden_size=32, tie_word_embeddings=tie)
    p = count_params(parse_config(cfg))
    tower = _tower(dict(vision, model_type="siglip2_vision_model", patch_size=16))
    assert p.vision == tower + _projector(32, 64)
    assert p.total == hf_param_count(_text(cfg)) + p.vision


def test_phi4_siglip_patch_size_absent_reads_16():
    """vLLM's phi4siglip.py sets patch_size 16 when vision_config lacks it (SigLIP2's patch embedding is a Linear of
    3·patch² inputs, so the count sees it)."""
    cfg = dict(_TINY, vision_config=_TINY_VISION, mm_hidden_size=32)
    p16 = count_params(parse_config(cfg)).vision
    p14 = count_params(parse_config(dict(cfg, vision_config=dict(_TINY_VISION, patch_size=14)))).vision
    assert p16 - p14 == 32 * 3 * (16 * 16 - 14 * 14)


def test_phi4_siglip_refusals():
    base = dict(_TINY, vision_config=_TINY_VISION, mm_hidden_size=32)
    with pytest.raises(UnsupportedModelError, match="mm_projector_type"):
        parse_config(dict(base, mm_projector_type="linear"))
    with pytest.raises(UnsupportedModelError, match="siglip2_vision_model"):
        parse_config(dict(base, vision_config=dict(_TINY_VISION, model_type="clip_vision_model")))
    with pytest.raises(ConfigError, match="mm_hidden_size"):
        parse_config(dict(base, mm_hidden_size=48))
