"""Small family gaps from the audits, each against an exact oracle:

- MPT with grouped-query / multi-query attention (``attn_config.attn_type`` + ``kv_n_heads``): refused before;
  counted as MosaicML's llm-foundry and vLLM's mpt.py build it (vllm-project/vllm
  vllm/model_executor/models/mpt.py: ``Wqkv = QKVParallelLinear(d_model, d_model // n_heads, n_heads,
  kv_n_heads, bias=not no_bias)``, ``out_proj`` d_model x d_model, ``up_proj`` / ``down_proj`` expansion_ratio x
  d_model, LayerNorms without bias under no_bias, lm_head = wte). transformers' MptAttention is multi-head only
  (its Wqkv is 3 x d_model), so it is no oracle for them: the hand count below is, and at kv_n_heads = n_heads
  the same formula is checked against transformers on the meta device.
- Zamba2 with an explicit ``attention_head_dim``: Zamba2Config keeps it (transformers 5.24: attribute_map
  head_dim -> attention_head_dim, an explicit value survives __post_init__) and Zamba2Attention sizes q/k/v/o and
  its cache with it.
- Nemotron-H's ``attention_head_dim`` (the original configs' name) against transformers' ``head_dim``.
- A known text model_type carrying LLaVA-repository vision fields: a caveat that the tower is not counted.
- TeleChat's fused ``key_value`` under GPTQ: in tests/test_real_configs_remote_audit.py (now exact).
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.params import count_params

from .clirun import run
from .oracle import hf_model, hf_param_count, unique_param_count
from .test_remote_llava_original import LLAVA_16_VICUNA_7B


def _total(cfg: dict) -> int:
    return count_params(parse_config(cfg)).total


def _kv(cfg: dict) -> int:
    return analyze(parse_config(cfg), Options(context=1024, dtype="bf16", kv_dtype="bf16")).kv.bytes_per_token


# ---- MPT: grouped-query and multi-query attention --------------------------------------------------------------

MPT = {"model_type": "mpt", "d_model": 256, "n_heads": 8, "n_layers": 3, "vocab_size": 1000, "max_seq_len": 2048,
       "no_bias": True, "expansion_ratio": 4}


def mpt_hand(cfg: dict, kv: int) -> int:
    """vLLM's MPTForCausalLM parameter shapes (file quoted in the module docstring), bias-free (no_bias)."""
    d, h, n, v = cfg["d_model"], cfg["n_heads"], cfg["n_layers"], cfg["vocab_size"]
    hd = d // h
    wqkv = d * (h + 2 * kv) * hd
    layer = wqkv + d * d + 2 * (4 * d * d) + 2 * d  # Wqkv, out_proj, up/down_proj, norm_1 / norm_2 weights
    return v * d + n * layer + d  # wte (tied lm_head), blocks, norm_f


def test_mpt_hand_formula_is_transformers_at_multi_head():
    """The hand formula, at kv = n_heads, is transformers' MptForCausalLM on the meta device (the formula's check)."""
    cfg = dict(MPT, attn_config={"attn_type": "multihead_attention", "alibi": True})
    assert mpt_hand(cfg, 8) == hf_param_count(cfg) == _total(cfg)


@pytest.mark.parametrize("attn, kv", [({"attn_type": "grouped_query_attention", "kv_n_heads": 2}, 2),
                                      ({"attn_type": "grouped_query_attention", "kv_n_heads": 8}, 8),
                                      ({"attn_type": "multiquery_attention"}, 1)], ids=["gqa-2", "gqa-8", "mqa"])
def test_mpt_grouped_and_multi_query_attention(attn, kv):
    """Refused before (attn_type not multihead_attention). Now the fused Wqkv is (n_heads + 2 kv) x head_dim rows and
    the cache holds kv heads per layer: 3 layers x 2 (K, V) x kv x 32 x 2 bytes."""
    cfg = dict(MPT, attn_config=dict(attn, alibi=True, clip_qkv=8))
    spec = parse_config(cfg)
    m = spec.layers[0].mixer
    assert (m.num_attention_heads, m.num_key_value_heads, m.head_dim, m.fused_qkv, m.alibi) == (8, kv, 32, True, True)
    assert count_params(spec).total == mpt_hand(cfg, kv)
    assert _kv(cfg) == 3 * 2 * kv * 32 * 2


def test_mpt_kv_heads_must_divide_heads():
    with pytest.raises(ConfigError, match="'kv_n_heads'"):
        parse_config(dict(MPT, attn_config={"attn_type": "grouped_query_attention", "kv_n_heads": 3}))
    with pytest.raises(ConfigError, match="'attn_type'"):
        parse_config(dict(MPT, attn_config={"attn_type": "sliding_attention"}))


def test_mpt_multi_head_with_other_kv_n_heads_is_multi_head_with_a_caveat(tmp_path):
    """llm-foundry's MultiheadAttention ignores kv_n_heads (its checkpoint's Wqkv is 3 x d_model): counted as
    multi-head, with one caveat saying vLLM would read kv_n_heads."""
    cfg = dict(MPT, attn_config={"attn_type": "multihead_attention", "kv_n_heads": 2, "alibi": True})
    assert _total(cfg) == mpt_hand(cfg, 8)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--context", "1024", "--json")
    assert r.code == 0, r.err
    assert len([c for c in r.json["caveats"] if "kv_n_heads (2) is ignored" in c]) == 1


# ---- Zamba2: an explicit attention_head_dim ---------------------------------------------------------------------

ZAMBA2 = {"model_type": "zamba2", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 8,
          "num_key_value_heads": 8, "vocab_size": 512, "intermediate_size": 352, "n_mamba_heads": 8,
          "mamba_d_state": 16, "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
          "attention_head_dim": 48}  # 2 x 128 / 8 = 32 derived: 48 differs


def test_zamba2_explicit_attention_head_dim_is_transformers():
    """transformers keeps the explicit 48 (Zamba2Config) and builds q_proj 256 -> 8 x 48; planner's total equals
    transformers on the meta device, and differs from the derived-32 model's (so a planner deriving 2 x hidden /
    heads fails here)."""
    model = hf_model(ZAMBA2)
    assert model.config.attention_head_dim == 48
    q = dict(model.named_parameters())["model.layers.1.shared_transformer.self_attn.q_proj.weight"]
    assert tuple(q.shape) == (8 * 48, 256)
    assert _total(ZAMBA2) == unique_param_count(model)
    derived = {k: v for k, v in ZAMBA2.items() if k != "attention_head_dim"}
    assert _total(derived) == hf_param_count(derived) != _total(ZAMBA2)
    spec = parse_config(ZAMBA2)
    assert spec.query_pre_attn_scalar == 24  # scores scaled by (head_dim / 2)^-0.5, Zamba2Attention.scaling
    # the alias transformers maps onto attention_head_dim (Zamba2Config.attribute_map)
    aliased = {**derived, "head_dim": 48}
    assert hf_model(aliased).config.attention_head_dim == 48 and _total(aliased) == _total(ZAMBA2)


def test_zamba2_cache_uses_the_explicit_head_dim():
    """Zamba2HybridDynamicCache stores each hybrid layer's key/value states (kv heads x head_dim, head_dim the
    attention's 48): 2 hybrid layers x 2 x 8 x 48 x 2 bytes per token. (The Mamba layers' state is per sequence.)"""
    assert _kv(ZAMBA2) == 2 * 2 * 8 * 48 * 2


# ---- Nemotron-H: attention_head_dim vs head_dim -----------------------------------------------------------------

NEMOTRON_H = {"model_type": "nemotron_h", "hidden_size": 256, "hybrid_override_pattern": "M*-M*-",
              "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 512,
              "mamba_num_heads": 8, "mamba_head_dim": 32, "n_groups": 2, "ssm_state_size": 16, "vocab_size": 512}


def test_nemotron_h_attention_head_dim_follows_the_checkpoint():
    """transformers 5.24's NemotronHConfig has a ``head_dim`` field (default 128) and never reads
    ``attention_head_dim``; its NemotronHAttention sizes q/k/v/o with config.head_dim. vLLM's nemotron_h.py reads
    config.head_dim (else hidden / heads). The original remote-code configs (Nemotron-H 8B / 4B, TensorRT-LLM's copy
    of the 8B config) name the width ``attention_head_dim``: it is the checkpoint's attention width (NeMo's
    kv_channels, 128 in every released one, e.g. the 4B's 128 where 3072 / 32 = 96, Megatron-Bridge's nemotronh.md).
    So the two readings agree on every published config; a config naming only attention_head_dim = 64 (and no
    head_dim) describes q_proj weights of 8 x 64 rows, which transformers (128) would not load. planner follows the
    field the checkpoint was written with: its count is transformers' model built with head_dim = 64, not the
    default-128 one transformers builds from the same config."""
    cfg = dict(NEMOTRON_H, attention_head_dim=64)
    spec = parse_config(cfg)
    assert {layer.mixer.head_dim for layer in spec.layers if layer.mixer is not None
            and hasattr(layer.mixer, "num_key_value_heads")} == {64}
    as_head_dim = dict(NEMOTRON_H, head_dim=64)
    assert _total(cfg) == hf_param_count(as_head_dim) == _total(as_head_dim)
    hf = hf_model(cfg)
    assert hf.config.head_dim == 128  # transformers ignores attention_head_dim
    assert unique_param_count(hf) != _total(cfg)
    assert _kv(cfg) == 2 * 2 * 2 * 64 * 2  # 2 attention layers x (K, V) x 2 KV heads x 64 x 2 bytes
    # head_dim wins when both are given (transformers' field, and vLLM's)
    assert parse_config(dict(cfg, head_dim=32)).layers[1].mixer.head_dim == 32


# ---- a known text model_type with LLaVA-repository vision fields ------------------------------------------------

def test_known_text_model_type_with_llava_fields_has_one_caveat(tmp_path):
    """liuhaotian/llava-v1.6-vicuna-7b's config (tests/test_remote_llava_original.py) saved under its language
    model's model_type 'llama': the Llama family reads the decoder; the CLIP tower and the mlp2x_gelu projector that
    mm_vision_tower / mm_projector_type / mm_hidden_size name are not counted. Before: the language model's count and
    no caveat. Now: the same count (the language model's, equal to the config without the mm_* fields) and one
    caveat line naming them. Exit code 0. The 'llava' model_type (llava_original.py) counts the tower: no caveat."""
    as_llama = dict(LLAVA_16_VICUNA_7B, model_type="llama")
    plain = {k: v for k, v in as_llama.items() if not k.startswith("mm_")}
    assert _total(as_llama) == _total(plain)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(as_llama))
    r = run("analyze", str(path), env={"COLUMNS": "1000"})  # one unwrapped line per caveat
    assert r.code == 0, r.err
    lines = [line for line in r.out.splitlines() if "LLaVA-style vision tower" in line]
    assert len(lines) == 1 and lines[0].startswith("caveat:"), r.out
    assert "mm_vision_tower" in lines[0] and "not counted" in lines[0]
    r = run("analyze", str(path), "--json")
    assert r.code == 0 and len([c for c in r.json["caveats"] if "LLaVA-style vision tower" in c]) == 1
    wrapped = tmp_path / "llava.json"
    wrapped.write_text(json.dumps(LLAVA_16_VICUNA_7B))
    r = run("analyze", str(wrapped))
    assert r.code == 0, r.err
    assert "LLaVA-style vision tower" not in r.out
    assert not parse_config(plain).caveats or all("LLaVA" not in c for c in parse_config(plain).caveats)
