"""Qwen3-Omni (``qwen3_omni_moe``: Qwen/Qwen3-Omni-30B-A3B-Instruct / -Thinking / -Captioner), counted whole as
transformers 5.24's Qwen3OmniMoeForConditionalGeneration builds it (thinker: MoE language model, audio and vision
towers; talker: MoE text model, code predictor, projections; code2wav), and its thinker alone
(``qwen3_omni_moe_thinker``) with its towers. Checked against a hand count written from the module shapes of
modeling_qwen3_omni_moe.py, against transformers on the meta device, and against the checkpoint's published weight
list (35,259,818,545 parameters, 65.68 GiB in bf16). No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.families import qwen3_omni
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks
from tests.conftest import DROP, edited

# Qwen/Qwen3-Omni-30B-A3B-Instruct config.json: every shape field as a transformers 5.7 dump of the checkpoint quotes
# its config (Qwen3OmniMoeConfig, with the checkpoint's weight list: 15 safetensors files, 28,010 tensors,
# 35,259,818,545 parameters, 65.68 GiB), laid out as the hub's config.json (transformers 4.57 names: rope_theta +
# rope_scaling, the talker's num_experts)
INSTRUCT = {
    "architectures": ["Qwen3OmniMoeForConditionalGeneration"],
    "assistant_token_id": 77091,
    "code2wav_config": {
        "attention_bias": False, "attention_dropout": 0.0, "codebook_dim": 512, "codebook_size": 2048,
        "decoder_dim": 1536, "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
        "layer_scale_initial_scale": 0.01, "max_position_embeddings": 8000, "model_type": "",
        "num_attention_heads": 16, "num_hidden_layers": 8, "num_key_value_heads": 16, "num_quantizers": 16,
        "num_semantic_quantizers": 1, "rms_norm_eps": 1e-05, "rope_theta": 10000, "semantic_codebook_size": 4096,
        "sliding_window": 72, "upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2],
        "vector_quantization_hidden_dimension": 512},
    "dtype": "bfloat16",
    "enable_audio_output": True,
    "im_end_token_id": 151645, "im_start_token_id": 151644,
    "model_type": "qwen3_omni_moe",
    "system_token_id": 8948,
    "talker_config": {
        "accept_hidden_layer": 24, "audio_end_token_id": 151670, "audio_start_token_id": 151669,
        "audio_token_id": 151675,
        "code_predictor_config": {
            "attention_bias": False, "attention_dropout": 0, "head_dim": 128, "hidden_act": "silu",
            "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
            "layer_types": ["full_attention"] * 5, "max_position_embeddings": 32768, "max_window_layers": 28,
            "model_type": "qwen3_omni_moe_talker_code_predictor", "num_attention_heads": 16, "num_code_groups": 16,
            "num_hidden_layers": 5, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None,
            "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": False, "use_cache": True,
            "use_sliding_window": False, "vocab_size": 2048},
        "codec_bos_id": 2149, "codec_eos_token_id": 2150, "codec_nothink_id": 2155, "codec_pad_id": 2148,
        "codec_think_bos_id": 2156, "codec_think_eos_id": 2157, "image_token_id": 151655,
        "model_type": "qwen3_omni_moe_talker", "num_code_groups": 16, "output_router_logits": False,
        "position_id_per_seconds": 13, "seconds_per_chunk": 2, "spatial_merge_size": 2,
        "speaker_id": {"chelsie": 2301, "ethan": 2302, "aiden": 2303},
        "text_config": {
            "attention_bias": False, "attention_dropout": 0, "decoder_sparse_step": 1, "head_dim": 128,
            "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 2048,
            "max_position_embeddings": 65536, "mlp_only_layers": [], "moe_intermediate_size": 384,
            "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 128, "num_experts_per_tok": 6,
            "num_hidden_layers": 20, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
            "rope_scaling": {"interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default",
                             "type": "default"},
            "rope_theta": 1000000, "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 768,
            "sliding_window": None, "use_cache": True, "use_sliding_window": False, "vocab_size": 3072},
        "thinker_hidden_size": 2048, "video_token_id": 151656, "vision_start_token_id": 151652},
    "thinker_config": {
        "audio_config": {
            "activation_dropout": 0, "activation_function": "gelu", "attention_dropout": 0, "conv_chunksize": 500,
            "d_model": 1280, "downsample_hidden_size": 480, "dropout": 0, "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120, "encoder_layers": 32, "initializer_range": 0.02, "max_source_positions": 1500,
            "model_type": "qwen3_omni_moe_audio_encoder", "n_window": 50, "n_window_infer": 800,
            "num_mel_bins": 128, "output_dim": 2048, "scale_embedding": False},
        "audio_end_token_id": 151670, "audio_start_token_id": 151669, "audio_token_id": 151675,
        "dtype": "bfloat16", "image_token_id": 151655, "initializer_range": 0.02,
        "model_type": "qwen3_omni_moe_thinker", "position_id_per_seconds": 13, "seconds_per_chunk": 2,
        "text_config": {
            "attention_bias": False, "attention_dropout": 0.0, "decoder_sparse_step": 1, "head_dim": 128,
            "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 768,
            "max_position_embeddings": 65536, "mlp_only_layers": [], "model_type": "qwen3_omni_moe_text",
            "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
            "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
            "rope_scaling": {"interleaved": True, "mrope_interleaved": True, "mrope_section": [24, 20, 20],
                             "rope_type": "default", "type": "default"},
            "rope_theta": 1000000, "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 0,
            "sliding_window": None, "tie_word_embeddings": False, "use_cache": True, "use_qk_norm": True,
            "use_sliding_window": False, "vocab_size": 152064},
        "user_token_id": 872, "video_token_id": 151656,
        "vision_config": {
            "apply_vit_abs_pos_embed": True, "deepstack_visual_indexes": [8, 16, 24], "depth": 27,
            "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152, "image_size": 768, "in_channels": 3,
            "in_chans": 3, "initializer_range": 0.02, "intermediate_size": 4304,
            "model_type": "qwen3_omni_moe_vision_encoder", "num_heads": 16, "num_position_embeddings": 2304,
            "out_hidden_size": 2048, "patch_size": 16, "spatial_merge_size": 2, "spatial_patch_size": 16,
            "temporal_patch_size": 2, "tokens_per_second": 2},
        "vision_end_token_id": 151653, "vision_start_token_id": 151652},
    "transformers_version": "4.57.0.dev0",
    "tts_bos_token_id": 151672, "tts_eos_token_id": 151673, "tts_pad_token_id": 151671,
    "user_token_id": 872,
}


# the thinker: transformers' Qwen3OmniMoeThinkerForConditionalGeneration of thinker_config
THINKER = INSTRUCT["thinker_config"]
# Qwen3-Omni-30B-A3B-Thinking / -Captioner: the same thinker without the talker and code2wav (their cards: "containing
# the thinker component", text output); no verbatim config.json of theirs was at hand, so the Instruct config with
# enable_audio_output false stands for them
THINKING = dict(INSTRUCT, enable_audio_output=False)

PUBLISHED_PARAMS = 35_259_818_545  # the Instruct checkpoint's weight list
PUBLISHED_BYTES = 70_519_637_090  # 65.68 GiB: every tensor bf16


# ---- the hand count, from the module shapes of modeling_qwen3_omni_moe.py ------------------------------------------


def _lin(n_out: int, n_in: int, bias: bool = False) -> int:
    return n_out * n_in + (n_out if bias else 0)


def _language_model() -> tuple[int, int]:
    """Qwen3OmniMoeThinkerTextModel + lm_head (untied): (total, active). 48 layers of q (32 x 128) / k / v (4 x 128) /
    o, q_norm / k_norm (128), a router of 128 experts, 128 experts of gate_up (2 x 768) and down, two RMSNorms."""
    V, h, L, E, k, i = 152064, 2048, 48, 128, 8, 768
    attn = _lin(4096, h) + 2 * _lin(512, h) + _lin(h, 4096) + 2 * 128
    expert = 3 * i * h
    layer = attn + E * h + E * expert + 2 * h
    total = 2 * V * h + L * layer + h
    return total, total - L * (E - k) * expert


def _audio_tower() -> int:
    """Qwen3OmniMoeAudioEncoder: 32 Whisper layers of 1280 (ffn 5120), ln_post, conv2d1..3 (480 channels, 3x3),
    conv_out (480 x 16 mel rows after three stride-2 convs, bias-free), proj1, proj2 (to 2048)."""
    d, ffn, c = 1280, 5120, 480
    layer = 4 * _lin(d, d, True) + 2 * 2 * d + _lin(ffn, d, True) + _lin(d, ffn, True)
    return (32 * layer + 2 * d + (c * 9 + c) + 2 * (c * c * 9 + c) + _lin(d, c * 16) + _lin(d, d, True)
            + _lin(2048, d, True))


def _vision_tower() -> int:
    """Qwen3OmniMoeVisionEncoder: Conv3d patches (3 x 2 x 16 x 16, biased), pos_embed (2304), 27 blocks of 1152 (qkv,
    proj, linear_fc1 / 2 of 4304, two LayerNorms), the merger (LayerNorm 1152) and 3 DeepStack mergers (LayerNorm
    4608), each two biased Linears 4608 -> 4608 -> 2048."""
    h, inter, m, out = 1152, 4304, 4608, 2048
    block = 2 * 2 * h + _lin(3 * h, h, True) + _lin(h, h, True) + _lin(inter, h, True) + _lin(h, inter, True)
    mlp = _lin(m, m, True) + _lin(out, m, True)
    return h * 3 * 2 * 16 * 16 + h + 2304 * h + 27 * block + (2 * h + mlp) + 3 * (2 * m + mlp)


def _talker() -> int:
    """Qwen3OmniMoeTalkerForConditionalGeneration: 20 layers of 1024 (q 16 x 128, k / v 2 x 128, q / k norms; router
    and 128 experts of 384, a shared expert of 768 and its gate; two norms), norm, codec_embedding (3072), text_ and
    hidden_projection (2048 -> 2048 -> 1024, biased), codec_head; the code predictor: 5 layers (q 16 x 128, k / v
    8 x 128, norms, SwiGLU 3072), norm, 15 codec embeddings and 15 heads of 2048."""
    h = 1024
    layer = (_lin(2048, h) + 2 * _lin(256, h) + _lin(h, 2048) + 256 + 128 * h + 128 * 3 * 384 * h + 3 * 768 * h
             + _lin(1, h) + 2 * h)
    talker = 20 * layer + h + 3072 * h + 2 * (_lin(2048, 2048, True) + _lin(h, 2048, True)) + _lin(3072, h)
    cp_layer = _lin(2048, h) + 2 * _lin(1024, h) + _lin(h, 2048) + 256 + 3 * 3072 * h + 2 * h
    return talker + 5 * cp_layer + h + 15 * 2048 * h + 15 * _lin(2048, h)


def _code2wav() -> int:
    """Qwen3OmniMoeCode2Wav: 8 layers of 1024 (q / k / v / o, SwiGLU 3072, two norms, two layer scales), norm,
    code_embedding (2048 x 16 rows); 2 upsamplers (ConvTranspose1d 1024 kernel 2, ConvNeXt: dwconv 7, LayerNorm,
    pwconv 4096, gamma); decoder: conv 1024 -> 1536 (7), 4 blocks halving 1536 (SnakeBeta, ConvTranspose1d of kernel
    2 x rate 8 / 5 / 4 / 3, three residual units: SnakeBeta, conv 7, SnakeBeta, conv 1), SnakeBeta, conv 96 -> 1."""
    h = 1024
    n = 8 * (4 * h * h + 3 * 3072 * h + 4 * h) + h + 2048 * 16 * h
    n += 2 * ((h * h * 2 + h) + (h * 7 + h) + 2 * h + _lin(4 * h, h, True) + _lin(h, 4 * h, True) + h)
    n += 1536 * h * 7 + 1536
    c_in = 1536
    for r in (8, 5, 4, 3):
        c = c_in // 2
        n += 2 * c_in + (c_in * c * 2 * r + c) + 3 * (2 * c + (c * c * 7 + c) + 2 * c + (c * c + c))
        c_in = c
    return n + 2 * 96 + (96 * 7 + 1)


LM, LM_ACTIVE = _language_model()
AUDIO, VISION, TALKER, CODE2WAV = _audio_tower(), _vision_tower(), _talker(), _code2wav()


def test_hand_count_is_the_published_checkpoint():
    """The hand count of the whole checkpoint is its weight list's 35,259,818,545 parameters (65.68 GiB in bf16)."""
    assert (LM, AUDIO, VISION, TALKER, CODE2WAV) == (30_532_646_912, 647_927_168, 538_631_408, 3_324_596_480,
                                                     216_016_577)
    assert LM + AUDIO + VISION + TALKER + CODE2WAV == PUBLISHED_PARAMS
    assert 2 * PUBLISHED_PARAMS == PUBLISHED_BYTES


def test_instruct_counts_whole():
    spec = parse_config(INSTRUCT)
    p = count_params(spec)
    assert p.total == PUBLISHED_PARAMS
    assert p.vision == VISION and p.audio == AUDIO + TALKER + CODE2WAV
    assert p.total - p.vision - p.audio == LM
    # active: the language model's per token (8 of 128 experts) plus every model-level tensor (towers, talker and
    # code2wav are spec.vision: planner counts them in active, as for every wrapper's towers)
    assert LM_ACTIVE == 3_353_556_992
    assert p.active == LM_ACTIVE + AUDIO + VISION + TALKER + CODE2WAV
    a = analyze(spec, Options())
    assert a.weights_bytes == PUBLISHED_BYTES  # the checkpoint's weights: every tensor, talker and code2wav included
    # K/V per token: 48 layers x (K + V) x 4 KV heads x 128 x 2 bytes
    assert a.kv.bytes_per_token == 48 * 2 * 4 * 128 * 2 == 98_304
    assert spec.num_layers == 48 and spec.hidden_size == 2048 and not spec.tie_word_embeddings
    caveat = next(c for c in spec.caveats if "not loaded by the serving engines" in c)
    assert caveat.startswith("qwen3_omni_moe: the checkpoint's talker. / code2wav. models")
    assert f"({TALKER + CODE2WAV:,} parameters)" in caveat and "qwen3_omni_moe_thinker.py" in caveat


def test_the_engine_loads_the_thinker_alone(tmp_path):
    """vLLM serves Qwen3-Omni with qwen3_omni_moe_thinker.py, whose load_weights skips talker. and code2wav.: the
    engine's weights are the thinker's (31,719,205,488 parameters, 63,438,410,976 bytes in bf16), whole on one GPU and
    the split of the same at TP 2 (norms and the towers' small vectors on every rank), with a note naming what is
    left out; the text-only checkpoint (no talker) loads the same bytes and has no such note."""
    from planner.hardware.engine import load_engine, loaded_weights
    from planner.analysis.parallel import tp_plan

    eng = load_engine("vllm")
    full, text_only = (analyze(parse_config(c), Options()) for c in (INSTRUCT, THINKING))
    assert full.spec.engine_unloaded == ("talker.", "code2wav.") and text_only.spec.engine_unloaded == ()
    thinker_bytes = 2 * (LM + AUDIO + VISION)
    assert thinker_bytes == PUBLISHED_BYTES - 2 * (TALKER + CODE2WAV) == 63_438_410_976
    one = loaded_weights(full, tp_plan(full.spec, 1), eng)
    assert one.counted_bytes_per_gpu == thinker_bytes == loaded_weights(text_only, tp_plan(full.spec, 1),
                                                                          eng).counted_bytes_per_gpu
    assert any(f"talker. / code2wav. models ({TALKER + CODE2WAV:,} parameters" in n for n in one.notes)
    two = loaded_weights(full, tp_plan(full.spec, 2), eng)
    assert two.counted_bytes_per_gpu == loaded_weights(text_only, tp_plan(full.spec, 2), eng).counted_bytes_per_gpu
    assert thinker_bytes // 2 < two.counted_bytes_per_gpu < thinker_bytes // 2 + 2**26
    assert not any("talker" in n for n in loaded_weights(text_only, tp_plan(full.spec, 1), eng).notes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(INSTRUCT))
    d = run("serve", path, "-H", "h100-sxm", "--gpus", "2", "--json").json
    assert d["memory"]["per_gpu"]["counted_weights_bytes"] == two.counted_bytes_per_gpu
    assert any("does not load the checkpoint's talker. / code2wav." in n for n in d["notes"])


def test_the_thinker_alone_and_the_text_only_checkpoints():
    """The thinker config alone, and Thinking / Captioner (enable_audio_output false: no talker, no code2wav), are
    the thinker: 31,719,205,488 parameters, its decode the same language model's; no serving caveat."""
    thinker = LM + AUDIO + VISION
    assert thinker == 31_719_205_488
    for cfg in (THINKER, THINKING):
        spec = parse_config(cfg)
        p = count_params(spec)
        assert (p.total, p.vision, p.audio) == (thinker, VISION, AUDIO)
        assert analyze(spec, Options()).kv.bytes_per_token == 98_304
        assert not any("not loaded by the serving engines" in c for c in spec.caveats)
    full, text_only = parse_config(INSTRUCT), parse_config(THINKING)
    assert full.layers == text_only.layers  # the decode trace is the thinker's language model's either way


@pytest.mark.parametrize("cfg,cls", [(INSTRUCT, "Qwen3OmniMoeForConditionalGeneration"),
                                     (THINKING, "Qwen3OmniMoeForConditionalGeneration"),
                                     (THINKER, "Qwen3OmniMoeThinkerForConditionalGeneration")])
def test_real_configs_equal_transformers(cfg, cls):
    from tests.oracle import hf_class_model, unique_param_count

    assert count_params(parse_config(cfg)).total == unique_param_count(hf_class_model(cfg, cls))


def test_tensor_names_and_shapes_are_transformers():
    """Every tower / talker / code2wav tensor by transformers' name and shape (the language model is the registry's
    qwen3_omni_moe_text row, checked in test_families)."""
    from tests.oracle import hf_class_model

    m = hf_class_model(INSTRUCT, "Qwen3OmniMoeForConditionalGeneration")
    hf = {n: tuple(p.shape) for n, p in m.named_parameters() if not n.startswith(("thinker.model.language_model.",
                                                                                   "thinker.lm_head."))}
    assert {t.name: tuple(t.shape) for t in parse_config(INSTRUCT).vision} == hf


# tiny configs: each field the count reads, against transformers on the meta device
_TEXT = dict(model_type="qwen3_omni_moe_text", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128, num_experts=4,
             num_experts_per_tok=2, moe_intermediate_size=32)
TINY = {
    "model_type": "qwen3_omni_moe",
    "thinker_config": {
        "text_config": _TEXT,
        "audio_config": dict(d_model=32, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=48,
                             num_mel_bins=20, downsample_hidden_size=8, output_dim=64),
        "vision_config": dict(depth=2, hidden_size=32, intermediate_size=48, num_heads=4, out_hidden_size=64,
                              num_position_embeddings=16, deepstack_visual_indexes=[0])},
    "talker_config": {
        "thinker_hidden_size": 64, "spatial_merge_size": 2,
        "text_config": dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=50, num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=16, shared_expert_intermediate_size=24),
        "code_predictor_config": dict(hidden_size=32, intermediate_size=40, num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=8, vocab_size=30, num_code_groups=4)},
    "code2wav_config": dict(hidden_size=32, intermediate_size=40, num_hidden_layers=1, num_attention_heads=4,
                            num_key_value_heads=4, codebook_size=16, num_quantizers=4, decoder_dim=48,
                            upsample_rates=[2, 3], upsampling_ratios=[2]),
}


def _edit(path: str, value):
    return edited(TINY, path, value)


_DROP = DROP
TINY_CASES = {
    "base": TINY,
    "thinker tied": _edit("thinker_config.tie_word_embeddings", True),
    "top-level flag ties nothing": _edit("tie_word_embeddings", True),
    "text_config flag ties nothing": _edit("thinker_config.text_config.tie_word_embeddings", True),
    "talker codec_head tied": _edit("talker_config.tie_word_embeddings", True),
    "no audio output": _edit("enable_audio_output", False),
    "talker ignores mlp_only_layers": _edit("talker_config.text_config.mlp_only_layers", [0]),
    "talker attention bias": _edit("talker_config.text_config.attention_bias", True),
    "code predictor attention bias": _edit("talker_config.code_predictor_config.attention_bias", True),
    "code2wav attention bias": _edit("code2wav_config.attention_bias", True),
    "talker head_dim": _edit("talker_config.text_config.head_dim", 16),
    "code2wav head_dim": _edit("code2wav_config.head_dim", 4),
    "num_local_experts": _edit("talker_config.text_config", {
        **{k: v for k, v in TINY["talker_config"]["text_config"].items() if k != "num_experts"},
        "num_local_experts": 4}),
    "default towers": dict(TINY, thinker_config={"text_config": _TEXT}),
    "default code2wav": _edit("code2wav_config", _DROP),
    "default code predictor": _edit("talker_config.code_predictor_config", _DROP),
    "no deepstack": _edit("thinker_config.vision_config.deepstack_visual_indexes", []),
}


@pytest.mark.parametrize("name", sorted(TINY_CASES))
def test_tiny_configs_equal_transformers(name):
    from tests.oracle import hf_class_model, unique_param_count

    cfg = TINY_CASES[name]
    assert count_params(parse_config(cfg)).total == unique_param_count(
        hf_class_model(cfg, "Qwen3OmniMoeForConditionalGeneration"))


def test_thinker_tiny_equals_transformers_by_tower():
    from tests.oracle import hf_class_model

    cfg = dict(TINY["thinker_config"], model_type="qwen3_omni_moe_thinker")
    hf = hf_class_model(cfg, "Qwen3OmniMoeThinkerForConditionalGeneration")
    p = count_params(parse_config(cfg))
    assert p.audio == sum(x.numel() for n, x in hf.named_parameters() if n.startswith("model.audio_tower."))
    assert p.vision == sum(x.numel() for n, x in hf.named_parameters() if n.startswith("model.visual."))
    assert p.total == sum(x.numel() for x in hf.parameters())


def test_defaults_are_transformers_class_defaults():
    """The sub-configs' defaults the module lays under absent fields are the installed classes'."""
    pytest.importorskip("transformers")
    from transformers.models.qwen3_omni_moe import configuration_qwen3_omni_moe as c

    for cls, defaults in ((c.Qwen3OmniMoeAudioEncoderConfig, qwen3_omni.AUDIO_DEFAULTS),
                          (c.Qwen3OmniMoeVisionEncoderConfig, qwen3_omni.VISION_DEFAULTS),
                          (c.Qwen3OmniMoeTalkerConfig, qwen3_omni.TALKER_DEFAULTS),
                          (c.Qwen3OmniMoeTalkerTextConfig, qwen3_omni.TALKER_TEXT_DEFAULTS),
                          (c.Qwen3OmniMoeTalkerCodePredictorConfig, qwen3_omni.CODE_PREDICTOR_DEFAULTS),
                          (c.Qwen3OmniMoeCode2WavConfig, qwen3_omni.CODE2WAV_DEFAULTS)):
        obj = cls()
        assert {k: (list(v) if isinstance(v := getattr(obj, k), tuple) else v) for k in defaults} == defaults, cls
    assert not hasattr(c.Qwen3OmniMoeTalkerTextConfig(), "shared_expert_intermediate_size")  # required here
    assert c.Qwen3OmniMoeConfig().enable_audio_output is True
    assert c.Qwen3OmniMoeThinkerConfig().tie_word_embeddings is False


def test_verify_runs_the_thinker_language_model(tmp_path):
    out = verify_self_checks(tmp_path, TINY)
    assert out["checks"]["params"]["predicted"] == count_params(parse_config(TINY)).total - sum(
        t.numel for t in parse_config(TINY).vision)


@pytest.mark.parametrize("edit,exc,match", [
    (("talker_config.code_predictor_config.tie_word_embeddings", True), UnsupportedModelError, "cannot build"),
    (("enable_audio_output", "yes"), ConfigError, "enable_audio_output"),
    (("thinker_config", [1]), ConfigError, "thinker_config"),
    (("talker_config.text_config", {**TINY["talker_config"]["text_config"], "shared_expert_intermediate_size": None}),
     ConfigError, "shared_expert_intermediate_size"),
    (("talker_config.text_config.num_experts_per_tok", 9), ConfigError, "num_experts_per_tok"),
    (("code2wav_config.decoder_dim", 50), ConfigError, "decoder_dim"),
    (("thinker_config.audio_config.encoder_attention_heads", 5), ConfigError, "encoder_attention_heads"),
    (("thinker_config.tie_word_embeddings", "no"), ConfigError, "tie_word_embeddings"),
])
def test_bad_configs_are_refused(edit, exc, match):
    with pytest.raises(exc, match=match):
        parse_config(_edit(*edit))


def test_the_inner_language_model_name_is_not_a_config_of_its_own():
    with pytest.raises(UnsupportedModelError, match="inside a whole Qwen3-Omni config"):
        parse_config(dict(_TEXT, model_type="qwen3_omni_moe_thinker_lm"))


def test_cli_analyze_and_one_error_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(INSTRUCT))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == PUBLISHED_PARAMS
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit("talker_config.code_predictor_config.tie_word_embeddings", True)))
    run("analyze", bad).assert_error("code_predictor_config", "tie_word_embeddings")
