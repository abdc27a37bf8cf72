"""transformers 5.24 model_types the generic Llama-style reading used to stand in for ("not a known family"): Higgs Audio
v2 counted exactly (analysis/families/higgs_audio.py, analysis/mixers/dual_ffn.py); the TTS / music / protein / BLIP
text models and the Qwen-Omni talker sub-configs refused by name; and a guard that no transformers config class's
default config is read generically any more."""

from __future__ import annotations

import json
import warnings

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format
from tests.clirun import run

BF16 = get_dtype("bf16")

# bosonai/higgs-audio-v2-generation-3B-base's config.json in transformers' format (model_type higgs_audio_v2), as quoted
# verbatim in a public research note (code index id 61444728151, "From the actual config.json (verbatim)") and, for the
# architecture fields, in vllm-omni's higgs-audio-v2 upstream memo (id 60818083721). Its codebook_size 1026 is the
# 1024 codes + stream BOS / EOS (audio_stream_bos_id 1024, audio_stream_eos_id 1025).
HIGGS = {
    "architectures": ["HiggsAudioV2ForConditionalGeneration"], "model_type": "higgs_audio_v2",
    "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 8192, "hidden_act": "silu", "rms_norm_eps": 1e-05, "vocab_size": 128256,
    "max_position_embeddings": 2048,
    "rope_parameters": {"factor": 32.0, "high_freq_factor": 0.5, "low_freq_factor": 0.125,
                        "original_max_position_embeddings": 1024, "rope_theta": 500000.0, "rope_type": "llama3"},
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False, "dtype": "bfloat16",
    "num_codebooks": 8, "codebook_size": 1026, "audio_token_id": 128016, "audio_bos_token_id": 128013,
    "audio_delay_token_id": 128014, "audio_stream_bos_id": 1024, "audio_stream_eos_id": 1025, "bos_token_id": 1,
    "eos_token_id": 128009, "pad_token_id": 128001,
}
# the same checkpoint in Boson AI's original format (neiom-systems/higgs-audio, models/model/model.safetensors.index.json,
# a copy of bosonai/higgs-audio-v2-generation-3B-base): metadata.total_size, all bf16, text_lm_head included
HIGGS_TOTAL_SIZE = 11_542_566_912

TINY_HIGGS = dict(model_type="higgs_audio_v2", hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=24, vocab_size=320, num_codebooks=3,
                  codebook_size=40, mlp_bias=True, attention_bias=True, pad_token_id=3, bos_token_id=1,
                  eos_token_id=2)


def _class_default(model_type: str) -> dict:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return json.loads(json.dumps(CONFIG_MAPPING[model_type]().to_dict(), default=str))


def _higgs_hf(cfg: dict, text_head: bool = False):
    """HiggsAudioV2ForConditionalGeneration on the meta device (``use_text_head`` is an __init__ argument, not a
    config field, so the oracle's hf_class_model cannot pass it)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures")}
    transformers.logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.HiggsAudioV2Config(**d)
        with torch.device("meta"):
            return transformers.HiggsAudioV2ForConditionalGeneration(config, use_text_head=text_head)


# ---- Higgs Audio v2 -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["class_default", "published", "tiny"])
def test_higgs_equals_transformers(name):
    from tests.oracle import unique_param_count

    cfg = {"class_default": _class_default("higgs_audio_v2") if name == "class_default" else None,
           "published": HIGGS, "tiny": TINY_HIGGS}[name]
    spec = parse_config(cfg)
    assert not any("not a known family" in c for c in spec.caveats)
    m = _higgs_hf(cfg)
    assert count_params(spec).total == unique_param_count(m)
    # every tensor by transformers' name and shape (our lm_head is the checkpoint's audio_lm_head)
    ours = {("audio_" + t.name if t.name.startswith("lm_head.") else t.name): tuple(t.shape) for t in spec.tensors()}
    assert ours == {n: tuple(p.shape) for n, p in m.named_parameters()}


def test_higgs_published_checkpoint_total_size():
    """The checkpoint also stores text_lm_head (vocab x hidden), which transformers' default model does not build:
    ours + that head, at 2 bytes, is the index's total_size; and transformers with use_text_head=True agrees."""
    from tests.oracle import unique_param_count

    total = count_params(parse_config(HIGGS)).total
    assert total == 5_377_281_024  # = transformers' default class (test above)
    assert 2 * (total + 128256 * 3072) == HIGGS_TOTAL_SIZE
    assert unique_param_count(_higgs_hf(HIGGS, text_head=True)) == total + 128256 * 3072


def test_higgs_active_kv_and_decode_step():
    """A step (one audio frame) runs attention, one of the two equal paths and the 8 x 1026-wide audio head: the
    active count leaves one path (two RMSNorms + a SwiGLU MLP) per layer out; the cache is Llama-3.2-3B's (28 layers x 8
    KV heads x 128, K and V); the step's FLOPs and weight reads are those of the same Llama with an 8,208-row head."""
    spec = parse_config(HIGGS)
    p = count_params(spec)
    D, inter, L = 3072, 8192, 28
    assert p.active == p.total - L * (3 * D * inter + 2 * D)
    assert p.audio == 8 * 1026 * D  # the codebook embedding
    assert p.mlp == L * 2 * 3 * D * inter  # both paths' MLPs (text mlp, audio_mlp)
    assert p.attention == L * (2 * D * 24 * 128 + 2 * D * 8 * 128)  # q, o and k, v: attention alone
    assert p.lm_head == 8 * 1026 * D and p.embedding == 128256 * D
    assert kv_cache(spec, BF16, BF16).bytes_per_token == L * 2 * 8 * 128 * 2
    llama = {k: v for k, v in HIGGS.items() if k not in ("num_codebooks", "codebook_size", "architectures")}
    llama.update(model_type="llama", vocab_size=8 * 1026)
    ref = parse_config(llama)

    def step(s):
        ops = step_ops(s, weight_format(s, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=100)
        return sum(o.flops for o in ops), sum(o.weight_bytes for o in ops)

    assert step(spec) == step(ref)


def test_higgs_tied_head_and_verify_refused(tmp_path):
    bad = tmp_path / "tied.json"
    bad.write_text(json.dumps(dict(HIGGS, tie_word_embeddings=True)))
    run("analyze", bad).assert_error("tie_word_embeddings", "audio_lm_head")
    (tmp_path / "config.json").write_text(json.dumps(TINY_HIGGS))
    run("verify", tmp_path, "--device", "cpu").assert_error("Higgs Audio v2 DualFFN attention")


# ---- refused by name ----------------------------------------------------------------------------------------------

REFUSED = {
    "pocket_tts": ("Pocket TTS", "flow-matching"),
    "gradium_phonon_tts": ("Gradium Phonon TTS", "flow-matching"),
    "musicgen_decoder": ("MusicGen decoder", "encoder_attn"),
    "musicgen_melody_decoder": ("MusicGen Melody decoder", "prepended"),
    "evolla": ("Evolla", "cross-attention adapter"),
    "blip_text_model": ("BLIP text decoder", "cross-attention over the ViT"),
    "vits": ("VITS", "non-autoregressive"),
    "qwen2_5_omni_talker": ("Qwen2.5-Omni's talker", "model_type qwen2_5_omni"),
    "qwen3_omni_moe_talker_code_predictor": ("Qwen3-Omni's talker code predictor", "model_type qwen3_omni_moe"),
}


@pytest.mark.parametrize("model_type", sorted(REFUSED))
def test_refused_by_name(model_type, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(_class_default(model_type)))
    line = run("analyze", cfg).assert_error(model_type, *REFUSED[model_type])
    assert "not a known family" not in line


def test_evolla_model_alias_refused(tmp_path):
    """CONFIG_MAPPING's 'EvollaModel' key builds an EvollaConfig (model_type evolla); a config naming it is refused too."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(dict(_class_default("evolla"), model_type="EvollaModel")))
    run("analyze", cfg).assert_error("EvollaModel", "Evolla", "protein")


# ---- guard: no transformers model_type is read as a generic Llama any more -----------------------------------------

def test_no_transformers_config_is_read_generically():
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from planner.analysis.errors import PlannerError

    transformers.logging.set_verbosity_error()
    generic = []
    for mt in sorted(CONFIG_MAPPING.keys()):
        try:
            cfg = _class_default(mt)
        except Exception:  # a config class whose defaults do not build: nothing to read
            continue
        try:
            spec = parse_config(cfg)
        except PlannerError:
            continue
        if any("not a known family" in c for c in spec.caveats):
            generic.append(mt)
    assert generic == []


def test_higgs_rope_defaults_are_the_config_class_ones():
    """A config without rope fields gets HiggsAudioV2Config.__post_init__'s llama3 RoPE (theta 500000), not Llama's."""
    transformers = pytest.importorskip("transformers")
    cfg = {k: v for k, v in HIGGS.items() if k != "rope_parameters"}
    spec = parse_config(cfg)
    hf = transformers.HiggsAudioV2Config().rope_parameters
    assert spec.layers[0].mixer.rope_theta == hf["rope_theta"] == 500000.0
    assert dict(spec.rope_scaling) == {k: v for k, v in hf.items()}
