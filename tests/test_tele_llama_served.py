"""TeleChat3 dense (``telechat3``) and Tele-FLM (``TeleFLM`` / ``teleflm``): remote-code families vLLM serves as its
Llama (vLLM's registry: ``"TeleChat3ForCausalLM": ("llama", "LlamaForCausalLM")``; teleflm.py subclasses
LlamaForCausalLM). Before: both read as the generic Llama-style decoder with a "not a known family" warning,
TeleChat3's ``telechat3-yarn`` RoPE run as plain RoPE (an unknown rope_type) and Tele-FLM's µP multipliers dropped.

Oracles: a hand count of the Llama modules; transformers' LlamaForCausalLM on the meta device (the class vLLM builds
for both); the runtime's logits against transformers' Llama whose YaRN ``attention_factor`` is TeleChat3's
``0.07 · ln(factor) + 1`` (vLLM's telechat3_scaling_rope.py) and, for Tele-FLM, whose embedding and head weights carry
the µP multipliers (vLLM's teleflm.py: embedding × input_mult, logits × output_mult / mup_scale_factor)."""

from __future__ import annotations

import json
import math

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")

#: mlx-community/Telechat3-36B-Thinking-4bit's config.json as quoted field for field in a public MLX port's test
#: (find_string id 60982996768: "the real config must parse"), its mlx ``quantization`` block left out (the bf16
#: checkpoint Tele-AI/TeleChat3-36B-Thinking has none)
TELECHAT3_36B = {
    "architectures": ["Telechat3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu", "hidden_size": 6144, "initializer_range": 0.0048,
    "intermediate_size": 24576, "max_position_embeddings": 32768, "mlp_bias": False, "model_type": "telechat3",
    "num_attention_heads": 48, "num_hidden_layers": 64, "num_key_value_heads": 8, "pad_token_id": 3,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0, "original_max_position_embeddings": 8192,
                     "rope_type": "telechat3-yarn", "type": "telechat3-yarn"},
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.53.2",
    "use_cache": True, "vocab_size": 131072}


def _llama_hand(V, h, L, heads, kv, hd, inter, tied=False) -> int:
    per = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h
    return V * h * (1 if tied else 2) + L * per + h


def _as_llama(cfg: dict) -> dict:
    out = {k: v for k, v in cfg.items() if k not in ("rope_scaling", "architectures")}
    out["model_type"] = "llama"
    return out


def test_telechat3_36b_count_kv_and_no_generic_caveat():
    spec = parse_config(TELECHAT3_36B)
    p = count_params(spec)
    hand = _llama_hand(131072, 6144, 64, 48, 8, 128, 24576)
    assert p.total == p.active == hand == 36_239_579_136  # "36B"
    assert not any("not a known family" in c for c in spec.caveats)
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 64 * 2 * 8 * 128 * 2 == 262_144


def test_telechat3_36b_equals_transformers_llama_on_meta():
    assert count_params(parse_config(TELECHAT3_36B)).total == unique_param_count(hf_model(_as_llama(TELECHAT3_36B)))


def test_telechat3_yarn_is_yarn_with_telechat3s_temperature():
    scaling = dict(parse_config(TELECHAT3_36B).rope_scaling)
    assert scaling["rope_type"] == "yarn" and "type" not in scaling
    assert scaling["factor"] == 4.0 and scaling["original_max_position_embeddings"] == 8192
    # vLLM's TeleChat3RoPEScaledRotaryEmbedding.get_mscale: 0.07 * ln(4) + 1, not YaRN's 0.1 * ln(4) + 1
    assert scaling["attention_factor"] == pytest.approx(0.07 * math.log(4.0) + 1.0, abs=1e-12)
    assert scaling["attention_factor"] != pytest.approx(0.1 * math.log(4.0) + 1.0)
    plain = dict(TELECHAT3_36B, rope_scaling={"rope_type": "yarn", "factor": 4.0})
    assert "attention_factor" not in dict(parse_config(plain).rope_scaling)  # only telechat3-yarn is rewritten


def test_telechat3_cli_and_bad_factor(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TELECHAT3_36B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 36_239_579_136
    assert "not a known family" not in r.err
    bad = dict(TELECHAT3_36B, rope_scaling={"rope_type": "telechat3-yarn", "factor": "4"})
    path.write_text(json.dumps(bad))
    run("analyze", str(path)).assert_error("rope_scaling.factor")
    path.write_text(json.dumps(dict(TELECHAT3_36B, n_routed_experts=192)))
    run("analyze", str(path)).assert_error("n_routed_experts")


#: Tele-FLM's shape fields as TeleFLMConfig names them (a public copy of configuration_teleflm.py: horizon94/s3prl
#: s3prl/upstream/flmaudio/audio_model/configuration_teleflm.py, model_type "TeleFLM"), sizes synthetic: no
#: Tele-FLM config.json was at hand, so no published total is asserted
TELEFLM = {"model_type": "TeleFLM", "architectures": ["TeleFLMForCausalLM"], "hidden_size": 256,
           "intermediate_size": 688, "num_hidden_layers": 3, "num_attention_heads": 8, "vocab_size": 1000,
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "use_mup": True, "input_mult": 1.0,
           "output_mult": 1.0, "mup_scale_factor": 32.0, "tie_word_embeddings": False}


def test_teleflm_count_equals_llama_and_multipliers():
    spec = parse_config(TELEFLM)
    hand = _llama_hand(1000, 256, 3, 8, 8, 32, 688)  # num_key_value_heads absent: TeleFLMConfig's = heads
    assert count_params(spec).total == hand == unique_param_count(hf_model(_as_llama(TELEFLM)))
    assert spec.embedding_multiplier == 1.0 and spec.numerics.logit_scale == 1.0 / 32.0
    assert not any("not a known family" in c for c in spec.caveats)
    off = parse_config(dict(TELEFLM, model_type="teleflm", use_mup=False))
    assert off.numerics.logit_scale == 1.0 and count_params(off).total == hand
    with pytest.raises(ConfigError, match="mup_scale_factor"):
        parse_config(dict(TELEFLM, mup_scale_factor=0.0))


# ---- runtime parity -------------------------------------------------------------------------------------------

TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            intermediate_size=96, vocab_size=128, max_position_embeddings=256, rms_norm_eps=1e-6,
            torch_dtype="float32", tie_word_embeddings=False, rope_theta=10000.0)


def test_telechat3_runtime_equals_llama_with_telechat3_temperature():
    rt = pytest.importorskip("tests.test_runtime", reason="the runtime tests need torch")
    ours_cfg = dict(TINY, model_type="telechat3", rope_scaling={
        "rope_type": "telechat3-yarn", "type": "telechat3-yarn", "factor": 4.0, "original_max_position_embeddings": 16,
        "beta_fast": 32.0, "beta_slow": 1.0})
    yarn = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16,
            "beta_fast": 32.0, "beta_slow": 1.0}
    hf = rt.hf_model(dict(TINY, model_type="llama",
                          rope_parameters=dict(yarn, attention_factor=0.07 * math.log(4.0) + 1.0)))
    spec, ours = rt.ours_from_hf(ours_cfg, hf)
    rt.assert_logits_and_cached_decode(spec, ours, hf)
    # the test can fail: transformers' plain YaRN (0.1 * ln 4 + 1) gives other logits
    plain = rt.hf_model(dict(TINY, model_type="llama", rope_parameters=yarn))
    plain.load_state_dict(hf.state_dict())
    tokens = rt.torch.randint(0, 128, (1, 12), generator=rt.torch.Generator().manual_seed(3))
    with rt.torch.no_grad():
        assert (plain(tokens).logits - ours(tokens, 0, None, all_logits=True)).abs().max() > 1e-3


def test_teleflm_runtime_equals_llama_with_mup_folded_into_its_weights():
    rt = pytest.importorskip("tests.test_runtime", reason="the runtime tests need torch")
    torch = rt.torch
    cfg = dict(TINY, model_type="TeleFLM", use_mup=True, input_mult=3.0, output_mult=2.0, mup_scale_factor=8.0)
    hf = rt.hf_model(dict(TINY, model_type="llama"))
    spec, ours = rt.ours_from_hf(cfg, hf)  # unscaled weights into ours; ours applies the multipliers
    with torch.no_grad():
        hf.model.embed_tokens.weight.mul_(3.0)
        hf.lm_head.weight.mul_(2.0 / 8.0)
    rt.assert_logits_and_cached_decode(spec, ours, hf)
