"""vLLM 0.28 image-text architectures (registry audit, part 2): OpenCUA, Bee-8B and Step3-VL-10B counted, the rest
refused by name.

OpenCUA (``opencua``, xlang-ai/OpenCUA-7B / -32B, OpenCUAForConditionalGeneration): vLLM's
vllm/transformers_utils/configs/opencua.py builds ``Qwen2_5_VLVisionConfig(**vision_config)`` and
``Qwen2Config(**text_config)`` ("based on Qwen2.5-VL but uses 1D-RoPE instead of M-RoPE"): Qwen2.5-VL's tower and
merger around a Qwen2 language model. Oracle: transformers' Qwen2ForCausalLM(text_config) plus its
Qwen2_5_VisionTransformerPretrainedModel(vision_config), on the meta device. The config below is OpenCUA-7B's shape as
its base Qwen2.5-VL-7B-Instruct publishes it (text 28 x 3584, 4 KV heads, 18944, vocab 152064, untied; vision depth
32, hidden 1280, 3420, out_hidden_size 3584); no stored repository quotes OpenCUA-7B's own config.json. Its total,
8,292,166,656, is Qwen2.5-VL-7B's bf16 checkpoint, 16,584,333,312 bytes (the model.safetensors.index.json total_size
public repos assert for Qwen2.5-VL-7B checkpoints, and exo's Qwen/Qwen-Image card's storage_size 16584333312 +
40860802176, the first its Qwen2.5-VL-7B text encoder).

Refused by name (analysis/families/vlm_refusals2.py): bagel, openvla, nemotron_parse, moondream1 / moondream3,
openpangu_vl — model_types as vLLM's registry and the hub configs quoted in public repos name them
(``"model_type": "openvla"`` with OpenVLAForActionPrediction, ``"moondream1"`` with HfMoondream, ``"moondream3"``,
``"nemotron_parse"``, BagelConfig.model_type ``"bagel"``, OpenPanguVLConfig ``"openpangu_vl"``); each gives one Error
line, never a generic Llama read.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, hf_param_count, unique_param_count

TEXT = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 128000,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": False, "hidden_act": "silu"}
VISION = {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
          "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
          "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2}
OPENCUA = {"architectures": ["OpenCUAForConditionalGeneration"], "model_type": "opencua", "image_token_id": 151664,
           "video_token_id": 151656, "vision_start_token_id": 151647, "pad_token_id": 0,
           "text_config": TEXT, "vision_config": VISION}


def _tower(vc: dict) -> int:
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers")
    from transformers import Qwen2_5_VLVisionConfig
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel

    with torch.device("meta"):
        return unique_param_count(Qwen2_5_VisionTransformerPretrainedModel(Qwen2_5_VLVisionConfig(**vc)))


def test_opencua_7b_against_transformers_parts():
    spec = parse_config(OPENCUA)
    p = count_params(spec)
    assert p.vision == _tower(VISION) == 676_550_144
    assert p.total == hf_param_count(TEXT) + p.vision == 8_292_166_656  # Qwen2.5-VL-7B's 16,584,333,312 B / 2
    assert not spec.tie_word_embeddings
    opts = Options(context=64, dtype="bf16", kv_dtype="bf16")
    a, t = analyze(spec, opts), analyze(parse_config(TEXT), opts)
    assert a.kv.bytes_per_token == t.kv.bytes_per_token == 28 * 2 * 4 * 128 * 2


def test_opencua_tiny_tied_text():
    text = dict(TEXT, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=256, tie_word_embeddings=True)
    vc = dict(VISION, depth=2, hidden_size=32, intermediate_size=48, num_heads=2, out_hidden_size=64,
              fullatt_block_indexes=[1])
    cfg = dict(OPENCUA, text_config=text, vision_config=vc)
    spec = parse_config(cfg)
    p = count_params(spec)
    assert spec.tie_word_embeddings
    assert p.vision == _tower(vc)
    assert p.total == hf_param_count(text) + p.vision


@pytest.mark.parametrize("model_type,name", [
    ("bagel", "BAGEL"), ("openvla", "OpenVLA"), ("nemotron_parse", "Nemotron-Parse"), ("moondream1", "moondream2"),
    ("moondream3", "moondream3"), ("openpangu_vl", "openPangu-VL")])
def test_refused_by_name(model_type, name):
    cfg = {"model_type": model_type, "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
           "intermediate_size": 2048, "vocab_size": 1000}
    with pytest.raises(UnsupportedModelError, match=name):
        parse_config(cfg)


def test_refusals_are_one_error_line_on_the_cli(tmp_path):
    # vikhyatk/moondream2's config.json shape (architectures HfMoondream, model_type moondream1, a nested config)
    cfg = tmp_path / "moondream2.json"
    cfg.write_text(json.dumps({"architectures": ["HfMoondream"], "model_type": "moondream1", "config": {},
                               "torch_dtype": "bfloat16"}))
    run("analyze", str(cfg)).assert_error("moondream2")
    ov = tmp_path / "openvla.json"
    ov.write_text(json.dumps({"architectures": ["OpenVLAForActionPrediction"], "model_type": "openvla",
                              "text_config": {"vocab_size": 32000}}))
    run("analyze", str(ov)).assert_error("OpenVLA")


# Bee-8B (``bee``): vLLM's bee.py is LlavaOnevisionForConditionalGeneration with BeeMultiModalProjector (pre_norm
# LayerNorm(vh), Linear(vh, 4·th), GELU, Linear(4·th, th), both biased). Oracle: transformers'
# LlavaOnevisionForConditionalGeneration built from the same text_config / vision_config on the meta device, its own
# projector (linear_1 vh -> th, linear_2 th -> th, biased) swapped for Bee's by hand. No stored repository quotes
# Bee-8B's config.json: the text_config is Qwen3-8B's as Qwen/Qwen3-8B publishes it; the tower LLaVA-OneVision's
# default SigLIP (LlavaOnevisionConfig.sub_configs_defaults: 26 layers of 1152, patch 14, 384 px, no head).
QWEN3_8B = {"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
            "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
            "tie_word_embeddings": False, "attention_bias": False}
SIGLIP_OV = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304, "patch_size": 14,
             "image_size": 384, "num_hidden_layers": 26, "num_attention_heads": 16, "vision_use_head": False}


def _bee_by_transformers(text: dict, vc: dict) -> int:
    ov = hf_model({"model_type": "llava_onevision", "text_config": text, "vision_config": vc}, image_text=True)
    vh, th = vc["hidden_size"], text["hidden_size"]
    llava_projector = (vh * th + th) + (th * th + th)
    bee_projector = 2 * vh + (vh * 4 * th + 4 * th) + (4 * th * th + th)
    return unique_param_count(ov) - llava_projector + bee_projector


def test_bee_8b_against_transformers_llava_onevision():
    cfg = {"architectures": ["BeeForConditionalGeneration"], "model_type": "bee", "text_config": QWEN3_8B,
           "vision_config": SIGLIP_OV, "image_token_id": 151669}
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == _bee_by_transformers(QWEN3_8B, SIGLIP_OV)
    assert p.total - p.vision == hf_param_count(QWEN3_8B) == 8_190_735_360  # Qwen3-8B
    assert not spec.tie_word_embeddings
    a = analyze(spec, Options(context=64, dtype="bf16", kv_dtype="bf16"))
    assert a.kv.bytes_per_token == 36 * 2 * 8 * 128 * 2


def test_bee_tiny_tied_and_default_tower():
    text = dict(QWEN3_8B, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, vocab_size=256, tie_word_embeddings=True)
    vc = dict(SIGLIP_OV, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
              image_size=56)
    spec = parse_config({"model_type": "bee", "text_config": text, "vision_config": vc})
    assert spec.tie_word_embeddings
    assert count_params(spec).total == _bee_by_transformers(text, vc)
    # vision_config absent: LLaVA-OneVision's default tower (vLLM's bee.py reads the same LlavaOnevision defaults)
    p = count_params(parse_config({"model_type": "bee", "text_config": text}))
    assert p.total == _bee_by_transformers(text, SIGLIP_OV)


# StepFun Step3-VL-10B (``step_robotics``): StepRoboticsConfig (stepfun-ai/Step3-VL-10B's configuration, as
# NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/step_vl/modeling_step3_vl/configuration.py adapts it) builds
# Qwen3Config(**text_config) and StepRoboticsVisionEncoderConfig (width 1536, 47 layers, 16 heads, 728 px / patch 14,
# mlp_ratio 8960 / 1536, ls_init_value 0.1, no cls token / ln_post), the tower transformers' Step3p7VisionModel builds
# (same defaults); vLLM's step_vl.py: conv1 bias-free, positions, ln_pre, blocks with layer scales, two biased 3x3
# stride-2 convs, vit_large_projector (4·width -> text hidden, projector_bias default false). Oracle: transformers'
# Step3p7VisionModel + the projector by hand, Qwen3ForCausalLM for the text model. The text_config is Qwen3-8B's shape
# (the card's "Qwen3-8B" decoder) with Megatron-Bridge's test fixture's vocab 152064 (no stored repository quotes the
# hub's config.json itself).
STEP_VISION = {"width": 1536, "layers": 47, "heads": 16, "num_channels": 3, "image_size": 728,
               "mlp_ratio": 8960 / 1536, "patch_size": 14, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-05,
               "use_cls_token": False, "use_ln_pre": True, "use_ln_post": False, "use_abs_posemb": True,
               "use_rope2d": True, "ls_init_value": 0.1}
STEP3_VL_10B = {"architectures": ["StepVLForConditionalGeneration"], "model_type": "step_robotics",
                "projector_bias": False, "image_token_id": 151679, "understand_projector_stride": 2,
                "text_config": dict(QWEN3_8B, vocab_size=152064, max_position_embeddings=32768),
                "vision_config": STEP_VISION}


def _step_tower(v: dict) -> int:
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers")
    from transformers.models.step3p7.configuration_step3p7 import Step3p7VisionConfig
    from transformers.models.step3p7.modeling_step3p7 import Step3p7VisionModel

    config = Step3p7VisionConfig(hidden_size=v["width"], num_hidden_layers=v["layers"], num_attention_heads=v["heads"],
                                 image_size=v["image_size"], patch_size=v["patch_size"], mlp_ratio=v["mlp_ratio"])
    with torch.device("meta"):
        return unique_param_count(Step3p7VisionModel(config))


def test_step3_vl_10b_against_transformers_parts():
    spec = parse_config(STEP3_VL_10B)
    p = count_params(spec)
    assert p.vision == _step_tower(STEP_VISION) + 4 * 1536 * 4096 == 1_981_014_784
    assert p.total == hf_param_count(STEP3_VL_10B["text_config"]) + p.vision == 10_172_798_720  # the card's "10B"
    assert not spec.tie_word_embeddings
    assert count_params(parse_config(dict(STEP3_VL_10B, projector_bias=True))).total == p.total + 4096


def test_step_robotics_tiny_and_refusals():
    v = dict(STEP_VISION, width=32, layers=2, heads=2, image_size=56, mlp_ratio=1.5)
    text = dict(QWEN3_8B, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, vocab_size=256)
    cfg = {"model_type": "step_robotics", "text_config": text, "vision_config": v}
    assert count_params(parse_config(cfg)).total == hf_param_count(text) + _step_tower(v) + 4 * 32 * 64
    # switches vLLM's StepVL tower has but this count does not build (a cls token, ln_post): refused, not miscounted
    for key, value in (("use_cls_token", True), ("use_ln_post", True)):
        with pytest.raises(UnsupportedModelError, match=key):
            parse_config(dict(cfg, vision_config=dict(v, **{key: value})))
