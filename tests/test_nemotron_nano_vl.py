"""NVIDIA's remote-code Nemotron Nano VL wrappers (``NemotronH_Nano_VL_V2``: NVIDIA-Nemotron-Nano-12B-v2-VL-BF16 /
-FP8 / -NVFP4-QAD; ``Llama_Nemotron_Nano_VL``: Llama-3.1-Nemotron-Nano-VL-8B-V1): the whole checkpoint (RADIO tower and
mlp1 as kind vision, the llm_config language model) against hand counts written from the module shapes of vLLM's
nano_nemotron_vl.py / nemotron_vl.py / radio.py, transformers 5.24's RadioModel (the Nemotron-3 Nano Omni tower) and
transformers' NemotronH / Llama on the meta device. Before this family, both model_types gave "Error: ... unsupported
model_type 'NemotronH_Nano_VL_V2' and the standard decoder fields hidden_size, num_hidden_layers, num_attention_heads,
vocab_size are missing".

No verbatim config.json or model.safetensors.index.json of either checkpoint was at hand (the code index holds neither;
the hub is not reachable), so the configs below are reconstructed, each field from a quoted source, and no checkpoint
total_size is asserted. The checkpoints also hold the RADIO input conditioner's norm_mean / norm_std (3 values each) and
summary_idxs: buffers, which transformers' RadioModel keeps as buffers too, not counted as parameters."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import check_whole_checkpoint_cli, run, verify_self_checks

# The hub RADIOConfig of C-RADIOv2-H as the wrappers' vision_config. Sources: version / patch_size / max_resolution from
# ollama's convert test TestNemotronHNanoVLLoadModelMetadata ("version": "radio_v2.5-h", "patch_size": 16,
# "max_resolution": 2048); args.model "vit_huge_patch16_224" from vLLM tests/models (get_vit_model_from_radio_config
# legacy args) and llama.cpp convert_hf_to_gguf NemotronNanoV2VLModel ("ViT-Huge ... RADIO v2.5-h": 1280 / 5120 / 32 /
# 16); cpe_max_size 2048 (vLLM RadioConfig default; the stored pos_embed is (1, 16384, 1280): mobius
# llama_nemotron_nano_vl.py "reshape [1, 128, 128, hidden]"); the teachers / cls_token_per_teacher / register_multiple
# 8 of the real-shaped C-RADIO encoder config in a Nemotron-Parse port test (clip, siglip, dino_v2, sam), giving the
# "8 special summary tokens total (4 CLS per teacher + 4 registers)" mobius states for C-RADIOv2-H; the null adaptor /
# normalizer fields as the hub RADIOConfig writes them.
RADIO_V25_H = {
    "architectures": ["RADIOModel"], "model_type": "radio", "version": "radio_v2.5-h", "patch_size": 16,
    "max_resolution": 2048, "preferred_resolution": [512, 512], "adaptor_names": None,
    "feature_normalizer_config": None, "inter_feature_normalizer_config": None, "vitdet_window_size": None,
    "args": {"model": "vit_huge_patch16_224", "cpe_max_size": 2048, "register_multiple": 8,
             "cls_token_per_teacher": True,
             "teachers": [{"name": "clip", "use_summary": True}, {"name": "siglip", "use_summary": True},
                          {"name": "dino_v2", "use_summary": True}, {"name": "sam", "use_summary": False}]}}

# nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-BF16, reconstructed: the top-level fields from ollama's
# TestNemotronHNanoVLLoadModelMetadata (force_image_size 512, downsample_ratio 0.5, patch_size 16, vit_hidden_size
# 1280, projector_hidden_size 20480) and SGLang's NemotronH_Nano_VL_V2_Config (adapted from the hub's configuration.py
# @cb5a65f: llm_config, ps_version "v2"); llm_config from Megatron-Bridge NemotronNano12Bv2VLModelProvider
# (hybrid_layer_pattern, 62 layers, hidden 5120, 128 Mamba heads of 80, 8 groups, state 128, 40 heads / 8 query
# groups of 128, ffn 20480, relu2) and the Nemotron-Nano-12B-v2 vocabulary (131072); vision projection ffn 20480.
NANO_12B_V2_VL = {
    "architectures": ["NemotronH_Nano_VL_V2"], "model_type": "NemotronH_Nano_VL_V2",
    "auto_map": {"AutoConfig": "configuration.NemotronH_Nano_VL_V2_Config",
                 "AutoModelForCausalLM": "modeling.NemotronH_Nano_VL_V2"},
    "force_image_size": 512, "downsample_ratio": 0.5, "patch_size": 16, "ps_version": "v2",
    "template": "nemotron-h-5p5-reasoning", "vit_hidden_size": 1280, "projector_hidden_size": 20480,
    "norm_mean": [0.48145466, 0.4578275, 0.40821073], "norm_std": [0.26862954, 0.26130258, 0.27577711],
    "torch_dtype": "bfloat16", "vision_config": RADIO_V25_H,
    "llm_config": {
        "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 5120,
        "num_hidden_layers": 62,
        "hybrid_override_pattern": "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-",
        "intermediate_size": 20480, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "mamba_num_heads": 128, "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
        "expand": 2, "chunk_size": 128, "vocab_size": 131072, "mlp_hidden_act": "relu2", "use_bias": False,
        "use_conv_bias": True, "mlp_bias": False, "attention_bias": False, "tie_word_embeddings": False,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}}

# nvidia/Llama-3.1-Nemotron-Nano-VL-8B-V1, reconstructed: Nemotron_Nano_VL_Config (vLLM
# transformers_utils/configs/nemotron_vl.py, adapted from the hub's configuration.py: downsample_ratio 0.5,
# projector_hidden_size 4096, vit_hidden_size 1280, llm_config built as LlamaConfig), force_image_size 512 and
# ps_version "v2" (mobius llama_nemotron_nano_vl.py: 512 x 512 tiles, 32 x 32 grid, ps_version 'v2'), the same
# C-RADIOv2-H tower, and Llama-3.1-8B-Instruct's shapes (the card's language encoder).
LLAMA_NANO_VL_8B = {
    "architectures": ["Llama_Nemotron_Nano_VL"], "model_type": "Llama_Nemotron_Nano_VL",
    "auto_map": {"AutoConfig": "configuration.Nemotron_Nano_VL_Config",
                 "AutoModelForCausalLM": "modeling.Llama_Nemotron_Nano_VL"},
    "force_image_size": 512, "downsample_ratio": 0.5, "ps_version": "v2", "template": "llama3-chat",
    "vit_hidden_size": 1280, "projector_hidden_size": 4096, "torch_dtype": "bfloat16", "vision_config": RADIO_V25_H,
    "llm_config": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}}


def _radio_by_hand(h=1280, layers=32, inter=5120, patch=16, cpe=2048, summary=8, video=None) -> int:
    """The hub RADIO (timm ViT, vLLM radio.py ViTPatchGenerator / RadioVisionEncoderLayer): a bias-free embedder
    (3 x patch² -> h) and, with a temporal patch size, a bias-free video_embedder (T x 3 x patch² -> h),
    (cpe // patch)² positions, the cls + register tokens; per block two biased LayerNorms, a biased fused qkv
    (3h, h) and proj, a biased fc1 / fc2; no layer scale, no final norm."""
    embed = h * 3 * patch * patch + (h * video * 3 * patch * patch if video else 0)
    block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    return embed + (cpe // patch) ** 2 * h + summary * h + layers * block


def _v2_mlp1_by_hand(vh=1280, proj=20480, text=5120) -> int:
    m = vh * 2 ** 2  # pixel shuffle at downsample_ratio 0.5
    return m + m * proj + proj * text  # RMSNorm(m), Linear(m, proj, no bias), Linear(proj, text, no bias)


def _llama_mlp1_by_hand(vh=1280, proj=4096, text=4096) -> int:
    m = vh * 2 ** 2
    return 2 * m + (m * proj + proj) + (proj * text + text)  # LayerNorm(m), biased Linear, biased Linear


def _transformers_radio(**kw) -> int:
    """transformers 5.24 RadioModel (the Nemotron-3 Nano Omni tower) on the meta device, shapes as given."""
    from tests.oracle import hf_class_model, unique_param_count

    cfg = {"model_type": "radio", "hidden_size": 1280, "num_hidden_layers": 32, "num_attention_heads": 16,
           "patch_size": 16, "max_img_size": 2048, "num_cls_tokens": 4, "num_registers": 4, "mlp_ratio": 4.0, **kw}
    return unique_param_count(hf_class_model(cfg, "RadioModel"))


def test_radio_tower_by_hand_equals_transformers_radio_less_layer_scales():
    """The timm RADIO of the remote checkpoints is transformers' RadioModel less its two LayerScale vectors per block
    (transformers keeps them, identity at 1.0; timm's ViT without init_values has none)."""
    assert _radio_by_hand() == 651_642_880
    assert _transformers_radio() - 2 * 1280 * 32 == _radio_by_hand()
    assert _transformers_radio(video_temporal_patch_size=2) - 2 * 1280 * 32 == _radio_by_hand(video=2)


def test_nano_12b_v2_vl_whole_checkpoint():
    from tests.oracle import hf_param_count

    spec = parse_config(NANO_12B_V2_VL)
    p = count_params(spec)
    assert _v2_mlp1_by_hand() == 209_720_320
    assert p.vision == _radio_by_hand() + _v2_mlp1_by_hand() == 861_363_200
    bare = parse_config(NANO_12B_V2_VL["llm_config"])
    lm = count_params(bare).total
    assert p.total - p.vision == lm == hf_param_count(NANO_12B_V2_VL["llm_config"])  # transformers NemotronH on meta
    assert p.total == lm + _radio_by_hand() + _v2_mlp1_by_hand()
    assert p.audio == 0 and spec.tie_word_embeddings is False
    # KV and Mamba state: the language model's alone (6 attention layers x K and V of 8 heads x 128, bf16)
    bf16 = get_dtype("bf16")
    kv, kv_bare = kv_cache(spec, bf16, bf16), kv_cache(bare, bf16, bf16)
    assert kv.bytes_per_token == kv_bare.bytes_per_token == 6 * 2 * 8 * 128 * 2
    assert kv.state_bytes_per_sequence == kv_bare.state_bytes_per_sequence > 0


def test_llama_nano_vl_8b_whole_checkpoint():
    from tests.oracle import hf_param_count

    spec = parse_config(LLAMA_NANO_VL_8B)
    p = count_params(spec)
    assert _llama_mlp1_by_hand() == 37_767_168
    assert p.vision == _radio_by_hand() + _llama_mlp1_by_hand() == 689_410_048
    lm = count_params(parse_config(LLAMA_NANO_VL_8B["llm_config"])).total
    assert p.total - p.vision == lm == hf_param_count(LLAMA_NANO_VL_8B["llm_config"]) == 8_030_261_248  # Llama-3.1-8B
    assert spec.model_type == "llama" and spec.tie_word_embeddings is False
    bf16 = get_dtype("bf16")
    assert kv_cache(spec, bf16, bf16).bytes_per_token == 32 * 2 * 8 * 128 * 2


def test_llm_config_is_built_as_the_wrappers_class_builds_it():
    """Nemotron_Nano_VL_Config builds LlamaConfig(**llm_config) whatever its model_type; a top-level
    tie_word_embeddings (PretrainedConfig writes one) does not tie the language model's head."""
    cfg = dict(LLAMA_NANO_VL_8B, tie_word_embeddings=True,
               llm_config={k: v for k, v in LLAMA_NANO_VL_8B["llm_config"].items()
                           if k not in ("model_type", "tie_word_embeddings")})
    assert count_params(parse_config(cfg)).total == count_params(parse_config(LLAMA_NANO_VL_8B)).total
    cfg = dict(NANO_12B_V2_VL, tie_word_embeddings=True,
               llm_config={k: v for k, v in NANO_12B_V2_VL["llm_config"].items() if k != "tie_word_embeddings"})
    assert count_params(parse_config(cfg)).total == count_params(parse_config(NANO_12B_V2_VL)).total


def test_tensor_names_are_the_remote_checkpoints():
    from planner.analysis.families.nemotron_nano_vl import llama_nano_vl_vision, nano_vl_v2_vision

    names = {t.name: t.shape for t in nano_vl_v2_vision(NANO_12B_V2_VL, 5120, "x")}
    r = "vision_model.radio_model.model"
    # the shapes the RADIO ports list for the stored tensors (RADIOVision.swift's "Tensor naming on disk")
    assert names[f"{r}.patch_generator.embedder.weight"] == (1280, 768)
    assert names[f"{r}.patch_generator.pos_embed"] == (1, 16384, 1280)
    assert names[f"{r}.patch_generator.cls_token.token"] == (8, 1280)
    assert names[f"{r}.blocks.31.attn.qkv.weight"] == (3840, 1280) and names[f"{r}.blocks.0.attn.qkv.bias"] == (3840,)
    assert names[f"{r}.blocks.0.attn.proj.weight"] == (1280, 1280)
    assert names[f"{r}.blocks.0.mlp.fc1.weight"] == (5120, 1280)
    assert f"{r}.blocks.32.norm1.weight" not in names and f"{r}.patch_generator.video_embedder.weight" not in names
    assert not any("layer_scale" in n or ".ls1" in n for n in names)
    assert names["mlp1.0.weight"] == (5120,) and "mlp1.0.bias" not in names  # RMSNorm
    assert names["mlp1.1.weight"] == (20480, 5120) and names["mlp1.3.weight"] == (5120, 20480)
    assert "mlp1.1.bias" not in names
    names = {t.name: t.shape for t in llama_nano_vl_vision(LLAMA_NANO_VL_8B, 4096, "x")}
    assert names["mlp1.0.bias"] == (5120,) and names["mlp1.1.bias"] == (4096,) and names["mlp1.3.weight"] == (4096, 4096)


def test_video_embedder_and_omni_tower_where_shapes_agree():
    """With a temporal patch size the patch generator holds the video_embedder (vLLM radio.py); the tower then has
    the Nemotron-3 Nano Omni tower's shapes (transformers' RadioModel via vision_wrappers.radio_tensors) less the layer
    scales, tensor by tensor."""
    from planner.analysis.families.nemotron_nano_vl import _radio_fields
    from planner.analysis.vision_wrappers import radio_tensors

    vc = dict(RADIO_V25_H, video_temporal_patch_size=2)
    cfg = dict(NANO_12B_V2_VL, vision_config=vc)
    p = count_params(parse_config(cfg))
    assert p.vision == _radio_by_hand(video=2) + _v2_mlp1_by_hand()
    f, video = _radio_fields(cfg, "x")
    assert video == 2
    timm = radio_tensors(f, video, prefix="v", timm=True)
    hf = radio_tensors(f, video, prefix="v")
    assert sum(t.numel for t in hf) - sum(t.numel for t in timm) == 2 * 1280 * 32
    hf_shapes, timm_shapes = {t.name: t.shape for t in hf}, {t.name: t.shape for t in timm}
    q = hf_shapes["v.encoder.layer.0.attention.q_proj.weight"]
    assert timm_shapes["v.model.blocks.0.attn.qkv.weight"] == (3 * q[0], q[1])  # q, k, v fused
    assert timm_shapes["v.model.patch_generator.video_embedder.weight"] == \
        hf_shapes["v.embeddings.video_patch_projection.weight"] == (1280, 2 * 3 * 16 * 16)
    assert timm_shapes["v.model.patch_generator.pos_embed"] == hf_shapes["v.embeddings.position_embedding"]
    assert timm_shapes["v.model.patch_generator.cls_token.token"] == hf_shapes["v.embeddings.cls_register_token"]
    with pytest.raises(UnsupportedModelError, match="separate_video_embedder"):
        parse_config(dict(cfg, vision_config=dict(vc, separate_video_embedder=False)))


def test_fp8_and_nvfp4_variants_keep_the_count():
    """The -FP8 / -NVFP4-QAD checkpoints are ModelOpt quantizations of the same model (their cards): same parameters,
    fewer weight bytes. (Their exact exclude_modules lists were not at hand: the tower, mlp1 and lm_head kept here.)"""
    base = run_json(NANO_12B_V2_VL)
    for algo in ("FP8", "NVFP4"):
        q = dict(NANO_12B_V2_VL, quantization_config={"quant_method": "modelopt", "quant_algo": algo,
                                                      "exclude_modules": ["vision_model*", "mlp1*", "lm_head"]})
        d = run_json(q)
        assert d["params"]["total"] == base["params"]["total"]
        assert d["memory"]["weights_bytes"] < base["memory"]["weights_bytes"]


def run_json(cfg: dict) -> dict:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.json"
        path.write_text(json.dumps(cfg))
        r = run("analyze", str(path), "--json")
        assert r.code == 0, r.err
        return r.json


def test_cli_analyze_trace_serve_plan(tmp_path):
    for cfg, total, vision, kv in ((NANO_12B_V2_VL, 13_171_364_352, 861_363_200, 24_576),
                                   (LLAMA_NANO_VL_8B, 8_719_671_296, 689_410_048, 131_072)):
        path = tmp_path / f"{cfg['model_type']}.json"
        path.write_text(json.dumps(cfg))
        # the totals: the language model (transformers on meta, above) + _radio_by_hand() + the mlp1 hand count
        assert check_whole_checkpoint_cli(path, total, kv)["params"]["vision"] == vision
        r = run("plan", str(path), "--gpu", "h100-sxm", "--max-gpus", "2", "--rate", "1", "--input-len", "1000",
                "--output-len", "100", "--requests", "20", "--json")
        assert r.code == 0, r.err


def _without(cfg: dict, key: str) -> dict:
    return {k: v for k, v in cfg.items() if k != key}


def _vision(**kw) -> dict:
    vc = copy.deepcopy(RADIO_V25_H)
    args = kw.pop("args", None)
    if args is not None:
        vc["args"] = dict(vc["args"], **args) if isinstance(args, dict) else args
    vc.update(kw)
    return vc


@pytest.mark.parametrize("cfg,fragments", [
    (_without(NANO_12B_V2_VL, "llm_config"), ("llm_config",)),
    (_without(LLAMA_NANO_VL_8B, "llm_config"), ("llm_config",)),
    (dict(NANO_12B_V2_VL, llm_config=[1]), ("llm_config",)),
    (dict(NANO_12B_V2_VL, llm_config=dict(NANO_12B_V2_VL["llm_config"], model_type="llama")), ("llm_config", "llama")),
    (dict(NANO_12B_V2_VL, vision_config=_vision(args={"model": "vit_giant_patch14"})), ("args.model",)),
    (dict(LLAMA_NANO_VL_8B, vision_config=_vision(args=None, model_type="siglip_vision_model")), ("siglip",)),
    (dict(LLAMA_NANO_VL_8B, vision_config=_vision(args=7)), ("args",)),
    (dict(LLAMA_NANO_VL_8B, vision_config=_vision(adaptor_names=["clip"])), ("adaptor_names",)),
    (dict(LLAMA_NANO_VL_8B, vision_config=_vision(args={"qk_normalization": True})), ("qk_normalization",)),
    (dict(LLAMA_NANO_VL_8B, vision_config=_vision(args={"teachers": [{"x": 1}]})), ("teachers",)),
    (dict(NANO_12B_V2_VL, vit_hidden_size=1024), ("vit_hidden_size", "1280")),
    (dict(NANO_12B_V2_VL, downsample_ratio=4), ("downsample_ratio",)),
    (dict(LLAMA_NANO_VL_8B, projector_hidden_size=0), ("projector_hidden_size",)),
    (dict(NANO_12B_V2_VL, sound_config={"model_type": "parakeet"}), ("sound_config",)),
])
def test_broken_configs_give_one_error_line(tmp_path, cfg, fragments):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    run("analyze", str(path)).assert_error(*fragments)


def test_errors_are_typed():
    with pytest.raises(ConfigError, match="llm_config"):
        parse_config(_without(NANO_12B_V2_VL, "llm_config"))
    with pytest.raises(UnsupportedModelError, match="VIT_TIMM_DIM_BY_NAME"):
        parse_config(dict(NANO_12B_V2_VL, vision_config=_vision(args={"model": "vit_giant_patch14"})))


def _tiny(cfg: dict, **llm) -> dict:
    return dict(cfg, vit_hidden_size=384, projector_hidden_size=48,
                vision_config=_vision(args={"model": "vit_small_patch16_224", "cpe_max_size": 64}),
                llm_config=dict(cfg["llm_config"], hidden_size=64, vocab_size=256, max_position_embeddings=256,
                                intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, **llm))


def test_verify_runs_the_llama_language_model(tmp_path):
    """verify builds the language model alone (the tower and mlp1 are counted, not run), as for the other VL
    wrappers: the Llama one's exact self-checks pass."""
    pytest.importorskip("torch", reason="verify needs torch")
    verify_self_checks(tmp_path, _tiny(LLAMA_NANO_VL_8B, num_hidden_layers=2), name="llama_nano_vl")


def test_verify_refuses_the_nemotron_h_mamba_layers(tmp_path):
    pytest.importorskip("torch", reason="verify needs torch")
    d = tmp_path / "nano"
    d.mkdir()
    cfg = _tiny(NANO_12B_V2_VL, num_hidden_layers=5, hybrid_override_pattern="M-M*-", head_dim=16, mamba_num_heads=8,
                mamba_head_dim=16, n_groups=2, ssm_state_size=8)
    (d / "config.json").write_text(json.dumps(cfg))
    run("verify", d, "--device", "cpu", "--context", "16", "--steps", "1", "--warmup", "0", "--hardware", "cpu",
        "--threads", "1").assert_error("Mamba")
