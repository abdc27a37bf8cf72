"""NVIDIA Nemotron 3 Omni in the hub's remote-code format (model_type ``NemotronH_Nano_Omni_Reasoning_V3`` /
``NemotronH_Super_Omni_Reasoning_V3`` / ``NemotronH_Omni_Reasoning_V3``, analysis/families/nemotron_omni_hub.py), and
the audio architectures of vLLM 0.28.1's registry that planner refuses by name (session 27 audit).

Before this module the hub configs gave "Error: ... unsupported model_type 'NemotronH_Nano_Omni_Reasoning_V3' and the
standard decoder fields ... are missing"; kimi_audio and cohere_asr (without is_encoder_decoder) were read as a generic
Llama, funaudiochat and midashenglm as their text_config alone.

Oracles: transformers' NemotronH_Omni_Reasoning_V3 on the meta device (the same checkpoints: its conversion_mapping
renames the hub's mlp1 / sound_encoder.encoder / sound_projection / vision_projector.vision_final_layernorm tensors),
less the two identity LayerScale vectors per block its RadioModel keeps and the hub's timm tower does not; hand counts
from vLLM's module shapes (parakeet.py ProjectedParakeet / ParakeetProjection, nano_nemotron_vl.py mlp1, radio.py);
transformers' NemotronH on meta for the language model. No model.safetensors.index.json of the Omni checkpoints was at
hand, so no total_size is asserted."""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import check_whole_checkpoint_cli, run

# The hub RADIOConfig of C-RADIOv4-H as the Omni's vision_config: version / patch_size / dynamic-resolution bounds /
# video_temporal_patch_size 2 / separate_video_embedder from a Swift port's copy of the Nano Omni config.json
# (ModelRemapping tests, "version":"c-radio_v4-h"); args (which vLLM's get_vit_model_from_radio_config requires) as
# transformers' RadioConfig defaults document nvidia/C-RADIOv4-H: ViT-H/16 (vit_huge_patch16_224: 1280 / 32 / 16 /
# 5120), max_img_size 2048 (cpe_max_size), 3 cls tokens (one per teacher) and 7 registers (register_multiple 10).
RADIO_V4_H = {
    "architectures": ["RADIOModel"], "model_type": "radio", "version": "c-radio_v4-h", "patch_size": 16,
    "max_resolution": 2048, "preferred_resolution": [512, 512], "min_num_patches": 1024, "max_num_patches": 13312,
    "video_target_num_patches": 1024, "video_temporal_patch_size": 2, "separate_video_embedder": True,
    "adaptor_names": None, "feature_normalizer_config": None, "inter_feature_normalizer_config": None,
    "vitdet_window_size": None,
    "args": {"model": "vit_huge_patch16_224", "cpe_max_size": 2048, "register_multiple": 10,
             "cls_token_per_teacher": True, "teachers": [{"name": "siglip2-g"}, {"name": "dino_v3"}, {"name": "sam3"}]}}

# nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16 config.json: the top-level fields, sound_config and llm_config
# as the Swift port's fixture quotes them (llm_config: 52 layers, hidden 2688, 128 experts top-6, 1 shared expert of
# 3712, Mamba 64 x 64 heads, 8 groups, state 128, 32 / 2 heads of 128); projection_bias false (the fixture omits it;
# transformers' and vLLM's classes require it; Megatron-Bridge's ParakeetProjection is bias-free).
NANO_OMNI = {
    "architectures": ["NemotronH_Nano_Omni_Reasoning_V3"], "model_type": "NemotronH_Nano_Omni_Reasoning_V3",
    "max_sequence_length": 131072, "img_context_token_id": 18, "video_context_token_id": 131081,
    "sound_context_token_id": 27, "downsample_ratio": 0.5, "projector_hidden_size": 20480, "vit_hidden_size": 1280,
    "video_pruning_rate": 0.7, "torch_dtype": "bfloat16", "vision_config": RADIO_V4_H,
    "sound_config": {"model_type": "parakeet", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 24,
                     "intermediate_size": 4096, "conv_kernel_size": 9, "subsampling_factor": 8,
                     "subsampling_conv_channels": 256, "subsampling_conv_kernel_size": 3,
                     "subsampling_conv_stride": 2, "num_mel_bins": 128, "projection_hidden_size": 4096,
                     "projection_bias": False, "sampling_rate": 16000},
    "llm_config": {"model_type": "nemotron_h", "hidden_size": 2688, "vocab_size": 131072, "num_hidden_layers": 52,
                   "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                   "max_position_embeddings": 262144, "num_attention_heads": 32, "num_key_value_heads": 2,
                   "head_dim": 128, "norm_eps": 1e-5, "mamba_head_dim": 64, "mamba_num_heads": 64,
                   "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "time_step_min": 0.001,
                   "time_step_max": 0.1, "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 6,
                   "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712,
                   "routed_scaling_factor": 2.5, "norm_topk_prob": True, "n_group": 1, "topk_group": 1,
                   "eos_token_id": 11}}

_SMALL_LLM = dict(NANO_OMNI["llm_config"], num_hidden_layers=4, hybrid_override_pattern="ME*E", n_routed_experts=4,
                  num_experts_per_tok=2)


def _sound_by_hand(h=1024, inter=4096, layers=24, heads=8, kernel=9, ch=256, k=3, mel=128, stages=3, proj=4096,
                   text=2688, conv_bias=True) -> int:
    """vLLM parakeet.py ProjectedParakeet: transformers' ParakeetEncoder (attention_bias forced off) + ParakeetProjection
    (RMSNorm, Linear, ReLU², Linear; projection_bias false)."""
    hd = h // heads
    sub = (ch * k * k + ch) + (stages - 1) * ((ch * k * k + ch) + (ch * ch + ch)) + h * ch * (mel // 2 ** stages) + h
    cb = 1 if conv_bias else 0
    block = (2 * 2 * h * inter                      # two macaron feed-forwards, bias-free
             + 4 * h * h + h * h + 2 * heads * hd     # q / k / v / o, relative_k_proj, bias_u / bias_v
             + (2 * h * h + cb * 2 * h) + (h * kernel + cb * h) + (h * h + cb * h) + 2 * h  # conv module + BatchNorm
             + 5 * 2 * h)                             # five LayerNorms
    return sub + layers * block + h + h * proj + proj * text


def _radio_and_mlp1_by_hand(h=1280, layers=32, inter=5120, patch=16, cpe=2048, summary=10, video=2, proj=20480,
                            text=2688) -> int:
    """vLLM radio.py (timm ViT-H/16 with a video_embedder) + nano_nemotron_vl.py mlp1 (RMSNorm, Linear, ReLU², Linear)."""
    embed = h * 3 * patch * patch * (1 + video)
    block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    m = h * 4  # pixel shuffle at downsample_ratio 0.5
    return embed + (cpe // patch) ** 2 * h + summary * h + layers * block + m + m * proj + proj * text


def _transformers_format(hub: dict) -> dict:
    """The same checkpoint as transformers' nemotron_h_omni reads it (its legacy field names kept; the RADIO tower as
    RadioConfig fields; the sound_config's unregistered model_type dropped)."""
    cfg = {k: v for k, v in copy.deepcopy(hub).items() if k != "vision_config"}
    cfg["model_type"] = "nemotron_h_omni"
    cfg["sound_config"].pop("model_type")
    cfg["vision_config"] = {"model_type": "radio", "hidden_size": 1280, "num_hidden_layers": 32,
                            "num_attention_heads": 16, "patch_size": 16, "max_img_size": 2048, "num_cls_tokens": 3,
                            "num_registers": 7, "video_temporal_patch_size": 2}
    return cfg


@pytest.mark.parametrize("mtp", [0, 1])
def test_equals_transformers_nemotron_h_omni_less_layer_scales(mtp):
    """Whole model (small language model, full-size towers) = transformers' NemotronH_Omni_Reasoning_V3 on meta less
    2 x 1280 LayerScale values per RADIO block; with MTP layers both add the vision tower's final LayerNorm."""
    from tests.oracle import hf_class_model, unique_param_count

    hub = dict(NANO_OMNI, llm_config=dict(_SMALL_LLM, num_nextn_predict_layers=mtp))
    hf = unique_param_count(hf_class_model(_transformers_format(hub), "NemotronH_Omni_Reasoning_V3"))
    p = count_params(parse_config(hub))
    assert p.total == hf - 2 * 1280 * 32
    assert p.audio == _sound_by_hand() == 624_183_296
    assert p.vision == _radio_and_mlp1_by_hand() + mtp * 2 * 1280 == 813_524_480 + mtp * 2560


def test_nano_omni_whole_checkpoint(tmp_path):
    from tests.oracle import hf_param_count

    spec = parse_config(NANO_OMNI)
    p = count_params(spec)
    lm = hf_param_count(NANO_OMNI["llm_config"])  # transformers NemotronH on meta
    assert lm == count_params(parse_config(NANO_OMNI["llm_config"])).total
    assert p.total == lm + _radio_and_mlp1_by_hand() + _sound_by_hand() == 33_015_645_120
    assert spec.tie_word_embeddings is False
    # KV and Mamba state: the language model's alone (6 attention layers x K and V of 2 heads x 128, bf16)
    bf16 = get_dtype("bf16")
    kv, bare = kv_cache(spec, bf16, bf16), kv_cache(parse_config(NANO_OMNI["llm_config"]), bf16, bf16)
    assert kv.bytes_per_token == bare.bytes_per_token == 6 * 2 * 2 * 128 * 2
    assert kv.state_bytes_per_sequence == bare.state_bytes_per_sequence > 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps(NANO_OMNI))
    check_whole_checkpoint_cli(path, 33_015_645_120, 6 * 2 * 2 * 128 * 2)


def test_tensor_names_are_what_vllm_loads():
    """vLLM's NemotronH_Nano_VL_V2.load_weights: vision_model.radio_model.* / mlp1.* / sound* (ProjectedParakeet
    strips sound_encoder. and maps sound_projection. to projection.)."""
    from planner.analysis.families.nemotron_omni_hub import towers

    names = {t.name: t.shape for t in towers(NANO_OMNI, 2688, "x")}
    assert names["sound_projection.norm.weight"] == (1024,)
    assert names["sound_projection.linear1.weight"] == (4096, 1024)
    assert names["sound_projection.linear2.weight"] == (2688, 4096)
    assert "sound_projection.linear1.bias" not in names
    assert names["sound_encoder.encoder.subsampling.linear.weight"] == (1024, 256 * 16)
    assert names["sound_encoder.encoder.layers.23.conv.depthwise_conv.weight"] == (1024, 1, 9)
    assert "sound_encoder.encoder.layers.0.self_attn.q_proj.bias" not in names  # attention_bias forced off
    assert names["mlp1.1.weight"] == (20480, 5120)
    assert names["vision_model.radio_model.model.patch_generator.video_embedder.weight"] == (1280, 2 * 3 * 16 * 16)
    assert all(n.startswith(("vision_model.radio_model.", "mlp1.", "sound_encoder.encoder.", "sound_projection."))
               for n in names)


def test_variants_and_sound_options():
    base = count_params(parse_config(NANO_OMNI)).total
    for mt in ("NemotronH_Super_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3"):
        assert count_params(parse_config(dict(NANO_OMNI, model_type=mt, architectures=[mt]))).total == base
    # no sound_config (a vision-only checkpoint): the sound branch goes
    vision_only = {k: v for k, v in NANO_OMNI.items() if k != "sound_config"}
    assert base - count_params(parse_config(vision_only)).total == _sound_by_hand()
    # projection biases and an explicit attention_bias as the sound_config says
    biased = copy.deepcopy(NANO_OMNI)
    biased["sound_config"].update(projection_bias=True, attention_bias=True, convolution_bias=False)
    assert count_params(parse_config(biased)).audio == _sound_by_hand(conv_bias=False) + (4096 + 2688) + \
        24 * (2 * (4096 + 1024) + 4 * 1024)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda c: c.pop("llm_config"), "llm_config"),
    (lambda c: c["vision_config"].pop("args"), "args"),
    (lambda c: c.update(sound_config=[1]), "audio_config"),
    (lambda c: c["sound_config"].pop("projection_hidden_size"), "projection_hidden_size"),
    (lambda c: c.update(vit_hidden_size=1024), "vit_hidden_size"),
])
def test_broken_configs_give_one_error_line(tmp_path, mutate, fragment):
    cfg = copy.deepcopy(NANO_OMNI)
    mutate(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path))
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and fragment in lines[0], r.err


# ---- refused by name: (model_type, a minimal config with the real checkpoints' top-level shape, words in the error)
REFUSED = [
    # moonshotai/Kimi-Audio-7B-Instruct: KimiAudioConfig(Qwen2Config) flat fields (vLLM configs/kimi_audio.py)
    ("kimi_audio", {"architectures": ["MoonshotKimiaForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
                    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                    "vocab_size": 168448, "kimia_mimo_layers": 6, "kimia_mimo_transformer_from_layer_index": 21},
     "MIMO"),
    # OpenMOSS MOSS-Audio: language_config (Qwen3) + audio_config (a MOSS-Audio checkpoint validator's expected keys)
    ("moss_audio", {"architectures": ["MossAudioModel"], "num_hidden_layers": 36, "vocab_size": 151936,
                    "adapter_hidden_size": 8192, "deepstack_num_inject_layers": 3,
                    "language_config": {"model_type": "qwen3", "hidden_size": 2560, "num_hidden_layers": 36,
                                        "num_attention_heads": 32, "num_key_value_heads": 8,
                                        "intermediate_size": 9728, "vocab_size": 151936},
                    "audio_config": {"d_model": 1280, "encoder_layers": 32}}, "deepstack"),
    # FunAudioLLM Fun-Audio-Chat: FunAudioChatConfig text_config (Qwen3) + audio_config
    ("funaudiochat", {"architectures": ["FunAudioChatForConditionalGeneration"],
                      "text_config": {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36,
                                      "num_attention_heads": 32, "num_key_value_heads": 8,
                                      "intermediate_size": 12288, "vocab_size": 151936},
                      "audio_config": {"d_model": 1280}}, "audio_invert_tower"),
    # mispeech/midashenglm-7b: a Qwen2.5-Omni text_config + the Dasheng audio encoder
    ("midashenglm", {"architectures": ["MiDashengLMModel"],
                     "text_config": {"model_type": "qwen2_5_omni_text", "hidden_size": 3584,
                                     "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                                     "intermediate_size": 18944, "vocab_size": 151936},
                     "audio_encoder_config": {"embed_dim": 1280, "depth": 32}}, "Dasheng"),
    # FireRedASR2-AED (an MLX port's config converter: idim / odim / encoder / decoder)
    ("fireredasr2", {"architectures": ["FireRedASR2ForConditionalGeneration"], "idim": 80, "odim": 8667,
                     "encoder": {"n_layers": 16, "n_head": 20, "d_model": 1280},
                     "decoder": {"n_layers": 16, "n_head": 20, "d_model": 1280}}, "encoder-decoder"),
    # CohereLabs/cohere-transcribe-03-2026: CohereAsrConfig's decoder fields, no is_encoder_decoder key
    ("cohere_asr", {"architectures": ["CohereAsrForConditionalGeneration"], "vocab_size": 16384,
                    "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 8, "intermediate_size": 4096,
                    "encoder_config": {"model_type": "parakeet_encoder", "hidden_size": 1280}}, "encoder-decoder"),
]


@pytest.mark.parametrize("model_type, cfg, word", REFUSED, ids=[r[0] for r in REFUSED])
def test_audio_architectures_are_refused_by_name(tmp_path, model_type, cfg, word):
    with pytest.raises(UnsupportedModelError, match=word):
        parse_config(dict(cfg, model_type=model_type))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(cfg, model_type=model_type)))
    for cmd in ("analyze", "trace"):
        r = run(cmd, str(path))
        assert r.code == 1
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error:") and model_type in lines[0], r.err


# ---- Qwen3-ASR in its original format (Qwen3ASRForConditionalGeneration / Qwen3ASRRealtimeGeneration) -------------

def _qwen3_asr_original(hf: dict, arch: str = "Qwen3ASRRealtimeGeneration") -> dict:
    """The original Qwen/Qwen3-ASR-* layout of the same checkpoint (an osc_asr port's fixture of the official
    config.json: model_type qwen3_asr, thinker_config {model_type qwen3_asr_thinker, audio_config model_type
    qwen3_asr_audio_encoder, text_config model_type qwen3_asr_text with tie_word_embeddings true}); vLLM's
    Qwen3ASRForConditionalGeneration and its Qwen3ASRRealtimeGeneration subclass read hf_config.thinker_config."""
    return {"architectures": [arch], "model_type": "qwen3_asr", "support_languages": ["Chinese", "English"],
            "thinker_config": {"model_type": "qwen3_asr_thinker", "audio_token_id": 151676,
                               "audio_config": dict(hf["audio_config"], model_type="qwen3_asr_audio_encoder"),
                               "text_config": dict(hf["text_config"], model_type="qwen3_asr_text",
                                                   tie_word_embeddings=True)}}


def test_qwen3_asr_original_format_reads_its_thinker_config():
    """Before, the thinker_config was ignored: every original-format Qwen3-ASR config was counted with
    Qwen3ASRConfig's class defaults (2,039,626,880 whatever its fields). Now it is the same checkpoint as the
    transformers-format config (whose count tests/test_audio_llm.py checks against transformers on meta)."""
    from tests.test_audio_llm import QWEN3_ASR_06B, QWEN3_ASR_17B

    for hf, total in ((QWEN3_ASR_06B, 782_426_112), (QWEN3_ASR_17B, 2_038_052_480)):
        for arch in ("Qwen3ASRForConditionalGeneration", "Qwen3ASRRealtimeGeneration"):
            orig = _qwen3_asr_original(hf, arch)
            spec = parse_config(orig)
            assert count_params(spec).total == count_params(parse_config(hf)).total == total
            assert spec.tie_word_embeddings is True
        fewer = copy.deepcopy(_qwen3_asr_original(hf))
        fewer["thinker_config"]["text_config"]["num_hidden_layers"] = 27
        fewer["thinker_config"]["audio_config"]["encoder_layers"] -= 1
        assert count_params(parse_config(fewer)).total < total
    untied = copy.deepcopy(_qwen3_asr_original(QWEN3_ASR_06B))
    untied["thinker_config"]["text_config"]["tie_word_embeddings"] = False
    assert count_params(parse_config(untied)).lm_head == 151936 * 1024
    with pytest.raises(Exception, match="thinker_config"):
        parse_config(dict(_qwen3_asr_original(QWEN3_ASR_06B), thinker_config=[1]))
