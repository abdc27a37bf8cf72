"""Wave s29 F: architectures vLLM and SGLang registered after the versions audited before (vLLM 0.28.1's registry;
SGLang as of sessions 27 / 28). Neither engine's newest snapshot could be fetched here (over the 500 MiB limit), so
the new entries come from the index's files of both repositories (vLLM's model_executor/models and the model-support
table a public vLLM fork copies from upstream, find_string id 66835600290; SGLang's srt/models listing).

- Ling-3.0-flash-VL (``bailing_moe_v3_vl``, BailingMoeV3VLForConditionalGeneration: vLLM's
  model_executor/models/bailing_moe_v3_vl.py): ended in "(text_config): required field 'model_type' is missing";
  with a model_type added, in "partial_rotary_factor gives 32 rotary dimensions" (its text_config carries 0.5). Now
  Ling 3's text model + Qwen3-VL's tower with a parameter-free merger + a two-Linear projector
  (analysis/families/s29f_vllm.py); Ling 3's partial_rotary_factor is ignored as both references ignore it
  (analysis/families/hybrid.py). Oracles: transformers' Qwen3VLVisionModel and BailingHybridForCausalLM on the meta
  device, the projector by hand; and the -fp4 checkpoint's safetensors parameter count (64,450,482,896), met to the
  unit by planner's split of routed experts (MXFP4, two a byte) and the rest.
- ZEDA dynamic MoE (``glm4_moe_lite_plus_plus``, vLLM's models/glm4_moe_lite_plus_plus.py; ``qwen3_moe_plus_plus``,
  ``qwen3_next_plus_plus``, SGLang's configs): unknown model_types before ("unsupported model_type ... standard
  decoder fields missing" without a known family); now the base model with zero-compute experts in every router.
  Oracle: transformers' base model on the meta device with its MoE gates widened to the ZEDA router's shape
  (Glm4MoeLitePlusPlusTopkRouter.weight: (n_routed + sum(zce_nums)) x hidden).
- Audio Flamingo Next (``audioflamingonext``, vLLM's models/audioflamingonext.py: Music Flamingo's model unchanged):
  its Qwen2 text_config alone before (7,612,806,656, "encoder is not counted"); now read as ``musicflamingo``.
  Oracle: transformers' MusicFlamingoForConditionalGeneration on the meta device.
- DeepSeek-V4-Flash-Vision-Exp (vLLM 0.30: ``deepseek_v4`` with flat ``vision_*`` fields; vLLM's models/deepseek_v4
  vision.py): the ViT, aligner and image sentinels were silently left out (the text model alone, no caveat); now
  counted. Oracle: the checkpoint's projector inventory as a public GGUF exporter lists and checks it against the
  safetensors headers (find_string id 57781789138), summed by hand: 466,393,088.
- AliceAI (``alice_ai``, vLLM's models/alice_ai.py): a generic-decoder error before; refused by name.
- Ming (``bailingmm``: Ming-Lite-Omni / Ming-flash-omni / Ming-omni-TTS, SGLang's models/bailing_mm.py): "unsupported
  model_type ... standard decoder fields missing" before; refused by name.
"""

from __future__ import annotations

import json
import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.clirun import analyze_json, run
from tests.oracle import hf_class_model, hf_model, unique_param_count
from tests.test_layer_types_parity import QWEN3_30B_A3B
from tests.test_vllm_audit_b27_h3 import GLM47_FLASH, LING3_FLASH, _by_layer

CONTEXT = 8192


def _meta(build):
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    with torch.device("meta"):
        return build()


# ---- Ling-3.0-flash-VL: Ling 3 + Qwen3-VL's tower (parameter-free merger) + a two-Linear projector -------------------

#: inclusionAI/Ling-3.0-flash-VL's config.json as vLLM's tests/transformers_utils test of BailingMoeV3VLConfig writes it
#: (find_string id 62310122082: the top level, text_config's geometry and the whole vision_config, verbatim) ...
_LING3_VL_TEXT = {"vocab_size": 157184, "hidden_size": 2560, "intermediate_size": 6144, "num_hidden_layers": 42,
                  "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128,
                  "max_position_embeddings": 131072, "layer_group_size": 6, "rope_theta": 6_000_000,
                  "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-6, "num_experts": 512, "num_experts_per_tok": 8,
                  "kv_lora_rank": 512, "no_kda_lora": True}
#: ... and text_config's remaining fields as Ling-3.0-flash's own config.json has them (tests/test_vllm_audit_b27_h3.py
#: LING3_FLASH: MLA head widths, gating, MoE widths, routing), the model card's "124B total, 5.5B active"
_LING3_VL_TEXT.update({k: v for k, v in LING3_FLASH.items()
                       if k not in _LING3_VL_TEXT and k not in ("model_type", "architectures", "rotary_dim")})
LING3_VL_VISION = {"model_type": "qwen3_moe_vit", "depth": 27, "hidden_size": 1152, "hidden_act": "gelu_pytorch_tanh",
                   "intermediate_size": 4304, "num_heads": 16, "in_channels": 3, "patch_size": 16,
                   "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 4096,
                   "num_position_embeddings": 2304, "disable_merger_proj": True}
LING3_VL = {"architectures": ["BailingMoeV3VLForConditionalGeneration"],
            "auto_map": {"AutoConfig": "configuration_bailing_moe_v3_vl.BailingMoeV3VLConfig"},
            "model_type": "bailing_moe_v3_vl", "torch_dtype": "bfloat16", "tie_word_embeddings": False,
            "norm_query_embeds": False, "image_token_id": 157157, "video_token_id": 156909,
            "vision_start_token_id": 157158, "vision_end_token_id": 157159, "mrope_section": [8, 12, 12],
            "text_config": _LING3_VL_TEXT, "vision_config": LING3_VL_VISION}


def ling3_vl_tower_oracle(vision: dict, text_hidden: int) -> int:
    """transformers' Qwen3VLVisionModel without DeepStack mergers, less its merger (vLLM swaps it for
    BailingMoeV3VisionPatchMerger: one LayerNorm over the vision width), plus BailingMoeV3VLProjector by hand:
    linear_fc1 (4 x 1152 -> text width) and linear_fc2 (text width -> text width), both biased."""
    def build():
        from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
        from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

        vc = {k: v for k, v in vision.items() if k not in ("model_type", "disable_merger_proj")}
        return Qwen3VLVisionModel(Qwen3VLVisionConfig(**vc, deepstack_visual_indexes=[]))

    model = _meta(build)
    merger = sum(p.numel() for n, p in model.named_parameters() if n.startswith("merger."))
    h = vision["hidden_size"]
    merged = h * vision["spatial_merge_size"] ** 2
    return (unique_param_count(model) - merger + 2 * h
            + (merged * text_hidden + text_hidden) + (text_hidden * text_hidden + text_hidden))


def test_ling3_vl_tower_equals_transformers_qwen3_vit_and_the_projector():
    """the names are the public checkpoint's, as SGLang's loader test lists them (find_string id 59154352065:
    model.visual.patch_embed / pos_embed / blocks.N.attn.qkv / merger.norm.weight and .bias, top-level
    linear_proj.0 / linear_proj.2)"""
    spec = parse_config(LING3_VL)
    tower = sum(t.numel for t in spec.vision)
    assert tower == ling3_vl_tower_oracle(LING3_VL_VISION, 2560) == 434_248_944
    names = {t.name: t.shape for t in spec.vision}
    assert names["model.visual.merger.norm.weight"] == names["model.visual.merger.norm.bias"] == (1152,)
    assert not any(n.startswith("model.visual.merger.linear_fc") for n in names)
    assert not any("deepstack" in n for n in names)
    assert names["linear_proj.0.weight"] == (2560, 4608) and names["linear_proj.2.weight"] == (2560, 2560)
    assert names["model.visual.patch_embed.proj.weight"] == (1152, 3, 2, 16, 16)
    assert names["model.visual.pos_embed.weight"] == (2304, 1152)
    assert names["model.visual.blocks.0.attn.qkv.weight"] == (3456, 1152)
    assert names["model.visual.blocks.26.mlp.linear_fc2.bias"] == (1152,)


def test_ling3_vl_equals_transformers_layer_kind_by_kind_plus_the_tower():
    """text_config names no model_type (BailingMoeV3TextConfig's is bailing_hybrid): the text model is transformers'
    BailingHybridForCausalLM, checked kind by kind as Ling-3.0-flash is (2 dense KDA, 33 MoE KDA, 7 MoE MLA)"""
    text = dict(_LING3_VL_TEXT, model_type="bailing_hybrid")
    outside, layers = _by_layer(dict(text, num_hidden_layers=6))
    assert layers[0] == layers[1] and layers[2] == layers[3] == layers[4]
    text_total = outside + 2 * layers[0] + 33 * layers[2] + 7 * layers[5]
    p = count_params(parse_config(LING3_VL))
    assert p.total == text_total + 434_248_944 == 124_848_440_016
    assert abs(text_total - 124e9) < 0.5e9  # the model card: 124B total


def test_ling3_vl_matches_the_fp4_checkpoints_safetensors_parameter_count():
    """inclusionAI/Ling-3.0-flash-VL-fp4: the hub's safetensors metadata reports 64,450,482,896 parameters (a model
    card digest quotes it, find_string id 67589027712, beside the card's "124B"). The routed experts are stored as
    MXFP4, two values a byte (SGLang's recipe: --moe-runner-backend flashinfer_mxfp4), so the hub counts half of them;
    every other weight one element each; plus the 512-wide expert_bias of each of the 40 MoE layers, which the
    checkpoint stores (SGLang's loader requires mlp.gate.expert_bias) and planner, as transformers, keeps out of the
    parameters. That sum meets the hub's figure to the unit, so the figure leaves the E8M0 block scales out: a
    consistency check of planner's split between routed experts and the rest (vision tower included)."""
    p = count_params(parse_config(LING3_VL))
    assert p.experts % 2 == 0
    assert (p.total - p.experts) + p.experts // 2 + 40 * 512 == 64_450_482_896


def test_ling3_vl_analyze_counts_the_tower_and_rotates_all_of_the_rope_head(tmp_path):
    d = analyze_json(tmp_path, LING3_VL, context=CONTEXT)
    assert not any("not counted" in c for c in d["caveats"])
    spec = parse_config(LING3_VL)
    mla = spec.layers[5].mixer
    # partial_rotary_factor 0.5 (of the 128-wide KDA head) is read by neither transformers nor vLLM: the MLA rotates
    # all of qk_rope_head_dim (64), whose pairs the mrope_section [8, 12, 12] splits (2 x 32 = 64)
    assert mla.qk_rope_head_dim == 64 and 2 * sum(LING3_VL["mrope_section"]) == 64


def test_ling3_text_with_partial_rotary_factor_is_read_and_an_explicit_rotary_dim_still_checked(tmp_path):
    text = dict(LING3_FLASH, partial_rotary_factor=0.5)
    text.pop("rotary_dim")
    assert count_params(parse_config(text)).total == count_params(parse_config(LING3_FLASH)).total
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LING3_FLASH, rotary_dim=32)))
    r = run("analyze", str(path))
    r.assert_error("rotary_dim")
    assert "Traceback" not in r.err


def test_ling3_vl_needs_its_vision_config(tmp_path):
    cfg = {k: v for k, v in LING3_VL.items() if k != "vision_config"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path))
    r.assert_error("vision_config")
    assert "Traceback" not in r.err


@pytest.mark.parametrize("flag", [{"multi_gate": True}, {"router_type": "MultiRouter"}])
def test_ling3_vl_with_sglang_per_modality_routers_is_refused(flag, tmp_path):
    """SGLang's is_bailing_multi_gate_enabled: image_gate / audio_gate routers beside each MoE gate"""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LING3_VL, text_config=dict(_LING3_VL_TEXT, **flag))))
    r = run("analyze", str(path))
    r.assert_error("image_gate")
    assert "Traceback" not in r.err


# ---- ZEDA dynamic MoE: zero-compute experts in the router -----------------------------------------------------------

#: ZEDA's README (find_string id 58707030612): "For GLM-4.7-Flash: architectures Glm4MoeLitePlusPlusForCausalLM,
#: use_zce_mask false, zce_nums [32], zce_types [zero]" (vLLM's model docstring: "64 + 32 = 96" router rows), on
#: zai-org/GLM-4.7-Flash's config (tests/test_vllm_audit_b27_h3.py GLM47_FLASH)
ZEDA_GLM47 = dict(GLM47_FLASH, model_type="glm4_moe_lite_plus_plus", architectures=["Glm4MoeLitePlusPlusForCausalLM"],
                  use_zce_mask=False, zce_nums=[32], zce_types=["zero"])
#: ... and "For Qwen3-30B-A3B: Qwen3MoePlusPlusForCausalLM, use_zce_mask false, zce_nums [64], zce_types [zero]", on
#: Qwen/Qwen3-30B-A3B's published config (tests/test_layer_types_parity.py, its sliding fields as published)
QWEN3_30B = dict(QWEN3_30B_A3B, use_sliding_window=False, sliding_window=None)
ZEDA_QWEN3_30B = dict(QWEN3_30B, model_type="qwen3_moe_plus_plus", architectures=["Qwen3MoePlusPlusForCausalLM"],
                      use_zce_mask=False, zce_nums=[64], zce_types=["zero"])


def test_zeda_glm_4_7_flash_is_glm_with_96_router_rows():
    """GLM-4.7-Flash kind by kind as transformers builds it (layer 0 dense, 46 MoE layers), each MoE gate widened from
    64 to 96 rows of 2048"""
    outside, layers = _by_layer(dict(GLM47_FLASH, num_hidden_layers=2))
    p = count_params(parse_config(ZEDA_GLM47))
    assert p.total == outside + layers[0] + 46 * (layers[1] + 32 * 2048) == 29_946_405_632
    moe = parse_config(ZEDA_GLM47).layers[1].ffn
    assert (moe.num_experts, moe.zero_experts, moe.router_experts) == (64, 32, 96)
    base = count_params(parse_config(GLM47_FLASH))
    assert p.active == base.active + 46 * 32 * 2048  # the router rows run for every token; no expert gets heavier


def test_zeda_qwen3_30b_is_qwen3_moe_with_192_router_rows():
    model = hf_model(QWEN3_30B)
    gates = [n for n, _ in model.named_parameters() if n.endswith("mlp.gate.weight")]
    assert len(gates) == 48
    oracle = unique_param_count(model) + 48 * 64 * 2048
    assert count_params(parse_config(ZEDA_QWEN3_30B)).total == oracle == 30_538_414_080


def test_zeda_qwen3_next_is_qwen3_next_with_wider_routers():
    """SGLang's Qwen3NextPlusPlusConfig (find_string id 58855916308) over Qwen3-Next-80B-A3B's published config
    (tests/test_hybrid.py), its class defaults for the ZCE fields: 64 copy experts, masked"""
    from tests.test_hybrid import PUBLISHED

    base = PUBLISHED["Qwen3-Next-80B-A3B"]
    oracle = unique_param_count(hf_model(base)) + 48 * 64 * 2048  # 48 MoE layers, each gate 512 -> 576 rows
    cfg = dict(base, model_type="qwen3_next_plus_plus", architectures=["Qwen3NextPlusPlusForCausalLM"])
    assert count_params(parse_config(cfg)).total == oracle == 79_680_682_752


def test_zeda_caveats_say_whether_the_zero_experts_are_masked(tmp_path):
    routable = analyze_json(tmp_path, ZEDA_GLM47, context=CONTEXT)["caveats"]
    assert any("32 zero-compute experts" in c and "uses fewer" in c for c in routable)
    masked = analyze_json(tmp_path, dict(ZEDA_QWEN3_30B, use_zce_mask=True), context=CONTEXT)["caveats"]
    assert any("64 zero-compute experts" in c and "masks them out" in c for c in masked)


def test_zeda_defaults_are_the_config_class_defaults():
    cfg = {k: v for k, v in ZEDA_QWEN3_30B.items() if not k.startswith(("zce_", "use_zce"))}
    assert parse_config(cfg).layers[0].ffn.zero_experts == 64  # Qwen3MoePlusPlusConfig: zce_nums [64], copy, masked


@pytest.mark.parametrize("change,fragment", [
    ({"zce_types": ["constant"]}, "ConstantExpert"),
    ({"zce_types": ["zero", "copy"]}, "zce_types"),
    ({"zce_types": ["bogus"]}, "zce_types"),
    ({"zce_nums": "32"}, "zce_nums"),
])
def test_zeda_bad_or_unmodelled_expert_types_are_one_error(change, fragment, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(ZEDA_GLM47, **change)))
    r = run("analyze", str(path))
    r.assert_error(fragment)
    assert "Traceback" not in r.err


# ---- Audio Flamingo Next: Music Flamingo's model under its own model_type ------------------------------------------

#: nvidia/audio-flamingo-next-hf's geometry as a public port's AudioFlamingoNextConfig.from_hf_config reads it (its
#: defaults for the checkpoint, find_string id 55479354843: a Qwen2.5-7B-shaped text model of 151,672 tokens, the AF3
#: Whisper encoder of 32 x 1280), the audio / text model_types AudioFlamingoNextConfig.__post_init__ fills in
AFNEXT = {"model_type": "audioflamingonext", "architectures": ["AudioFlamingoNextForConditionalGeneration"],
          "audio_token_id": 151667, "projector_hidden_act": "gelu", "projector_bias": True,
          "audio_config": {"model_type": "audioflamingo3_encoder", "num_mel_bins": 128, "hidden_size": 1280,
                           "num_hidden_layers": 32, "num_attention_heads": 20, "intermediate_size": 5120,
                           "max_source_positions": 1500},
          "text_config": {"model_type": "qwen2", "vocab_size": 151672, "hidden_size": 3584, "intermediate_size": 18944,
                          "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                          "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 15300000.0}}


def test_audio_flamingo_next_equals_transformers_music_flamingo(tmp_path):
    oracle = unique_param_count(hf_class_model(dict(AFNEXT, model_type="musicflamingo"),
                                               "MusicFlamingoForConditionalGeneration"))
    assert count_params(parse_config(AFNEXT)).total == oracle == 8_267_215_360  # an eval table: "8B parameters"
    d = analyze_json(tmp_path, AFNEXT, context=CONTEXT)
    assert not any("not counted" in c for c in d["caveats"])


def test_audio_flamingo_next_audio_config_defaults_to_the_af3_encoder():
    """AudioFlamingoNextConfig.__post_init__: audio_config's model_type defaults to audioflamingo3_encoder"""
    cfg = dict(AFNEXT, audio_config={k: v for k, v in AFNEXT["audio_config"].items() if k != "model_type"})
    assert count_params(parse_config(cfg)).total == 8_267_215_360


# ---- DeepSeek-V4-Flash-Vision-Exp: DeepSeek-V4 + a ViT, an aligner and image sentinels ------------------------------

#: a DeepSeek-V4-Flash-shaped config as a public engine's tests write it (find_string id 62224990777:
#: _deepseek_v4_config, 4 layers of V4-Flash's width, DSpark fields included) ...
DSV4_FLASH_4L = {
    "model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 4096,
    "intermediate_size": None, "moe_intermediate_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 64,
    "num_key_value_heads": 1, "vocab_size": 129280, "q_lora_rank": 1024, "o_lora_rank": 1024, "o_groups": 8,
    "head_dim": 512, "qk_rope_head_dim": 64, "index_topk": 512, "index_head_dim": 128, "index_n_heads": 64,
    "compress_ratios": [0, 4, 128, 0, 0], "compress_rope_theta": 160000, "num_hash_layers": 3, "hc_mult": 4,
    "hc_sinkhorn_iters": 20, "hc_eps": 1e-6, "n_routed_experts": 256, "num_experts_per_tok": 6,
    "n_shared_experts": 1, "first_k_dense_replace": None, "routed_scaling_factor": 1.5,
    "scoring_func": "sqrtsoftplus", "topk_method": "noaux_tc", "norm_topk_prob": True, "expert_dtype": "fp4",
    "swiglu_limit": 10.0, "sliding_window": 128, "dspark_block_size": 5, "dspark_noise_token_id": 128799,
    "dspark_target_layer_ids": [1, 2, 3], "dspark_markov_rank": 256}
#: ... with deepseek-ai/DeepSeek-V4-Flash-Vision-Exp's published vision fields (the same test's
#: _deepseek_v4_vision_config; a GGUF exporter's EXPECTED_CONFIG, id 57781789138, checks them against the hub config)
DSV4_VISION = {"vision_n_layers": 32, "vision_dim": 1024, "vision_n_heads": 16, "vision_inter_dim": 2816,
               "vision_patch_size": 14, "vision_rope_theta": 10000.0, "vision_downsample_ratio": 3,
               "vision_max_n_token": 384, "vision_min_pixels": 147456, "vision_max_wh_ratio": 8}
DSV4_FLASH_VISION_4L = dict(DSV4_FLASH_4L, **DSV4_VISION)


def dsv4_projector_inventory() -> dict[str, tuple[int, ...]]:
    """The exporter's expected_shapes(): every vision.* / aligner.* / image_* tensor of the checkpoint, BF16."""
    shapes = {"aligner.w1.bias": (4096,), "aligner.w1.weight": (4096, 9216), "aligner.w2.bias": (4096,),
              "aligner.w2.weight": (4096, 4096), "image_end": (4096,), "image_newline": (4096,),
              "image_pad": (4096,), "image_start": (4096,), "vision.norm.weight": (1024,),
              "vision.patch_embed.proj.bias": (1024,), "vision.patch_embed.proj.weight": (1024, 3 * 14 * 14)}
    for block in range(32):
        p = f"vision.blocks.{block}"
        shapes.update({f"{p}.attn.wo.bias": (1024,), f"{p}.attn.wo.weight": (1024, 1024),
                       f"{p}.attn.wqkv.bias": (3 * 1024,), f"{p}.attn.wqkv.weight": (3 * 1024, 1024),
                       f"{p}.mlp.w1.weight": (2 * 2816, 1024), f"{p}.mlp.w2.weight": (1024, 2816),
                       f"{p}.norm1.weight": (1024,), f"{p}.norm2.weight": (1024,)})
    return shapes


def test_deepseek_v4_vision_tower_is_the_checkpoint_inventory():
    spec = parse_config(DSV4_FLASH_VISION_4L)
    inventory = dsv4_projector_inventory()
    assert {t.name: t.shape for t in spec.vision} == inventory
    tower = sum(math.prod(shape) for shape in inventory.values())
    assert tower == 466_393_088
    text = count_params(parse_config(DSV4_FLASH_4L)).total
    assert count_params(spec).total == text + tower


def test_deepseek_v4_vision_caveat_and_text_only_unchanged(tmp_path):
    d = analyze_json(tmp_path, DSV4_FLASH_VISION_4L, context=CONTEXT)
    assert any("DeepSeek-V4 vision (vision_n_layers 32)" in c for c in d["caveats"])
    plain = parse_config(DSV4_FLASH_4L)
    assert plain.vision == () and not any("vision" in c for c in plain.caveats)
    assert parse_config(dict(DSV4_FLASH_4L, vision_n_layers=0)).vision == ()


def test_deepseek_v4_vision_heads_must_split_the_width(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(DSV4_FLASH_VISION_4L, vision_n_heads=15)))
    r = run("analyze", str(path))
    r.assert_error("vision_n_heads")
    assert "Traceback" not in r.err


# ---- refused by name ------------------------------------------------------------------------------------------------

#: vLLM's tests/models/test_alice_ai_mtp.py config.json (find_string id 68583877040), verbatim: the geometry is left to
#: AliceAIConfig's defaults
ALICE_AI = {"model_type": "alice_ai", "architectures": ["AliceAIForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_alice_ai.AliceAIConfig",
                         "AutoModelForCausalLM": "modeling_alice_ai.AliceAIForCausalLM"}}


@pytest.mark.parametrize("cfg", [ALICE_AI, dict(ALICE_AI, hidden_size=2048, num_hidden_layers=48,
                                                num_attention_heads=16, vocab_size=129024,
                                                shared_expert_intermediate_size=512, num_experts=512)],
                         ids=["class-defaults", "with-geometry"])
def test_alice_ai_is_refused_by_name(cfg, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path))
    r.assert_error("AliceAI")
    assert "block attention residuals" in r.err and "modeling_alice_ai.py" in r.err


#: inclusionAI/Ming-omni-tts-16.8B-A3B's config.json as a public serving framework's hub-metadata fixture quotes it
#: (find_string id 69172637563: architectures and model_type), with a Ling 2 llm_config as SGLang's bailing_mm.py reads
MING_TTS = {"architectures": ["BailingMMNativeForConditionalGeneration"], "model_type": "bailingmm",
            "llm_config": {"model_type": "bailing_moe_v2", "hidden_size": 2048, "num_hidden_layers": 20,
                           "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 157184,
                           "intermediate_size": 5120, "moe_intermediate_size": 512, "num_experts": 256,
                           "num_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1},
            "audio_tokenizer_config": {"enc_kwargs": {"latent_dim": 1024}}}


def test_ming_is_refused_by_name(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MING_TTS))
    r = run("analyze", str(path))
    r.assert_error("Ming")
    assert "modeling_bailingmm.py" in r.err and "DiTAR" in r.err
