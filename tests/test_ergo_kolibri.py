"""Ergo (``ergo``) and Kolibri 1.1 (``kolibri1_1``), new in transformers 5.25.

Oracles: transformers' own models on the meta device (models/ergo/modeling_ergo.py,
models/kolibri1_1/modeling_kolibri1_1.py) for total parameters; active parameters from the same models' named
parameters (every tensor under ``.mlp.experts.`` counted num_experts_per_tok / num_experts, Ergo's per-expert norms
included); transformers' ``Kolibri1_1Config.kv_sharing_modes`` for which layers hold no cache; the indexed layers'
decode FLOPs by hand from ``Kolibri1_1Indexer``'s description (top-k + sinks + local keys, its scores over the pool and
the block means). No released config.json of either family was found in the public index (searches for
``"model_type": "ergo"`` / ``"kolibri1_1"``, ``index_num_sink_tokens``), so the class defaults (Amazon-FMR/Ergo,
Aleph-Alpha/Kolibri-1.1 per their configuration files) stand in for the released models. KV bytes and one decode step's
FLOPs on small configs are checked against transformers by tests/test_cache_flops_parity.py.
"""

from __future__ import annotations

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, OptionError, RuntimeUnavailableError, UnsupportedModelError
from planner.analysis.mixers.indexed import block_means, scored_keys
from planner.analysis.params import count_params

transformers = pytest.importorskip("transformers", reason="the oracle is transformers' models (dev extra)")
pytest.importorskip("torch", reason="the oracle builds transformers' models on the meta device")
from transformers import CONFIG_MAPPING  # noqa: E402

from tests.oracle import hf_model, unique_param_count  # noqa: E402


def _config(mt: str, **kw) -> dict:
    """transformers' config of ``mt`` with ``kw`` as a config.json would hold it (its full dict, lists included)."""
    d = json.loads(CONFIG_MAPPING[mt](**kw).to_json_string())
    d["model_type"] = mt
    return d


def _hf(cfg: dict):
    return hf_model({k: v for k, v in copy.deepcopy(cfg).items() if k != "transformers_version"})


def _hf_active(model, k: int, e: int) -> int:
    """transformers' parameters a token uses: the routed experts' tensors (Ergo's per-expert norms too) k / e."""
    total = 0
    for name, p in model.named_parameters():
        n = p.numel()
        total += n * k // e if ".mlp.experts." in name else n
    return total


def _check(cfg: dict, k: int | None = None, e: int | None = None):
    spec = parse_config(copy.deepcopy(cfg), where="config.json")
    pc = count_params(spec)
    model = _hf(cfg)
    assert pc.total == unique_param_count(model)
    if k is not None:
        assert pc.active == _hf_active(model, k, e)
    return spec, pc, model


SMALL_ERGO = dict(hidden_size=64, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                  first_dense_intermediate_size=96, moe_intermediate_size=32, shared_intermediate_size=48,
                  num_experts=8, num_experts_per_tok=2, sliding_window=16)


# ---- Ergo ----------------------------------------------------------------------------------------

def test_ergo_defaults_match_transformers():
    """ErgoConfig's defaults (Amazon-FMR/Ergo): 1,105,550,917,632 parameters on transformers' meta model."""
    cfg = _config("ergo")
    spec, pc, _ = _check(cfg, k=8, e=256)
    assert pc.total == 1_105_550_917_632
    assert not spec.tie_word_embeddings and pc.lm_head == pc.embedding == 262144 * 8192
    types = [layer.kind for layer in spec.layers]
    assert types[0] == "sliding(512)" and types[3] == "full-nope+moe" and types.count("full-nope+moe") == 16


@pytest.mark.parametrize("kw", [
    {},  # one dense layer, every 4th full
    {"num_dense_blocks": 3, "global_attention_every_n_layers": 2},  # three dense layers
    {"mlp_layer_types": ["sparse", "dense", "sparse", "dense", "sparse", "sparse"]},  # explicit, interleaved
    {"num_dense_blocks": 6},  # no MoE at all
    {"num_experts": 16, "num_experts_per_tok": 4, "shared_intermediate_size": 80, "num_attention_heads": 8,
     "num_key_value_heads": 8},  # MHA, wider experts and shared expert
])
def test_ergo_small_configs_match_transformers(kw):
    cfg = _config("ergo", **{**SMALL_ERGO, **kw})
    _check(cfg, k=cfg["num_experts_per_tok"], e=cfg["num_experts"])


def test_ergo_released_names_and_untied_head():
    """The released configs' names (ErgoConfig.attribute_map: local_attention_window) and flat rope_parameters (the
    sliding layers'); a tie_word_embeddings in the file does not tie ErgoForCausalLM's lm_head."""
    cfg = _config("ergo", **SMALL_ERGO)
    cfg.pop("sliding_window")
    cfg.update(local_attention_window=8, rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
               global_attention_scale=2.0, tie_word_embeddings=True)
    spec, pc, model = _check(cfg, k=2, e=8)
    assert model.lm_head.weight is not model.model.embed_tokens.weight and pc.lm_head == 256 * 64
    sliding = spec.layers[0].mixer
    assert sliding.window == 8 and sliding.rope_theta == 50000.0 and sliding.rotary_dim == 16
    assert spec.layers[3].mixer.rotary_dim == 0 and spec.layers[3].mixer.window is None


def test_ergo_refusals():
    cfg = _config("ergo", **SMALL_ERGO)
    cfg["rope_parameters"] = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6,
                              "original_max_position_embeddings": 4096}
    with pytest.raises(UnsupportedModelError, match="yarn"):
        parse_config(cfg, where="config.json")
    cfg = _config("ergo", **SMALL_ERGO)
    cfg["layer_types"] = cfg["layer_types"][:-1] + ["chunked_attention"]
    with pytest.raises(ConfigError, match="layer_types"):
        parse_config(cfg, where="config.json")
    # rope_parameters keyed by layer type with a non-mapping entry: one ConfigError, not an AttributeError from
    # .get (found by mutation fuzzing)
    for bad in ("8", 0.5):
        cfg = _config("ergo", **SMALL_ERGO)
        cfg["rope_parameters"] = {"sliding_attention": bad, "full_attention": None}
        with pytest.raises(ConfigError, match="rope_parameters.sliding_attention"):
            parse_config(cfg, where="config.json")


def test_ergo_verify_refuses_in_one_line():
    from planner.runtime.model import check_supported

    spec = parse_config(_config("ergo", **SMALL_ERGO), where="config.json")
    with pytest.raises(RuntimeUnavailableError, match="per-expert output norms") as e:
        check_supported(spec)
    assert "\n" not in str(e.value)


# ---- Kolibri 1.1 ---------------------------------------------------------------------------------

SMALL_KOLIBRI = dict(hidden_size=64, num_hidden_layers=20, num_attention_heads=8, num_key_value_heads=2, head_dim=16,
                     vocab_size=256, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                     mlp_only_intermediate_size=96, num_experts=8, num_experts_per_tok=2, sliding_window=16,
                     index_num_heads=4)


def test_kolibri1_1_defaults_match_transformers():
    """Kolibri1_1Config's defaults (Aleph-Alpha/Kolibri-1.1): 75,112,646,912 parameters on transformers' meta model;
    the layers transformers' kv_sharing_modes marks "reuse" hold no K/V, every other layer its K and V."""
    cfg = _config("kolibri1_1")
    spec, pc, model = _check(cfg, k=6, e=384)
    assert pc.total == 75_112_646_912
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    bf16 = get_dtype("bf16")
    per_layer = [lk.bytes_per_token for lk in kv_cache(spec, bf16, bf16).layers]
    modes = model.config.kv_sharing_modes
    assert [b == 0 for b in per_layer] == [m == "reuse" for m in modes]
    assert modes.count("reuse") == 6 and set(per_layer) == {0, 2 * 4 * 128 * 2}


@pytest.mark.parametrize("kw", [
    {},  # four indexed layers: the default sources (2nd and 3rd read the 1st) and index_layers
    {"kv_source_layers": list(range(20))},  # no sharing
    {"mlp_only_layers": []},  # experts everywhere
    {"mlp_only_layers": [0, 5, 19], "index_layers": [4, 9]},
    {"layer_types": ["sliding_attention", "indexed_attention"] * 10,
     "kv_source_layers": [i if i % 2 == 0 or i in (1, 7) else (1 if i < 7 else 7) for i in range(20)],
     "index_layers": [1, 7, 15]},  # ten indexed layers, two producing K/V
])
def test_kolibri1_1_small_configs_match_transformers(kw):
    cfg = _config("kolibri1_1", **{**SMALL_KOLIBRI, **kw})
    spec, _, model = _check(cfg, k=2, e=8)
    modes = model.config.kv_sharing_modes
    assert [getattr(layer.mixer, "kv_shared", False) for layer in spec.layers] == [m == "reuse" for m in modes]


def test_kolibri1_1_bad_layouts_are_one_error_line():
    cfg = _config("kolibri1_1", **SMALL_KOLIBRI)
    cfg["kv_source_layers"] = list(range(20))
    cfg["kv_source_layers"][3] = 2  # a sliding layer reading another's K/V (Kolibri1_1Config refuses it too)
    with pytest.raises(ConfigError, match="kv_source_layers") as e:
        parse_config(cfg, where="config.json")
    assert "\n" not in str(e.value)
    cfg = _config("kolibri1_1", **SMALL_KOLIBRI)
    cfg["index_layers"] = [9]  # the first indexed layer (4) must pick a pool
    with pytest.raises(ConfigError, match="index_layers"):
        parse_config(cfg, where="config.json")
    cfg = _config("kolibri1_1", **SMALL_KOLIBRI)
    cfg["index_num_heads"] = 5  # more than the 4 query heads of key head 0
    with pytest.raises(ConfigError, match="index_num_heads"):
        parse_config(cfg, where="config.json")


def _decode_ops(spec, cached: int):
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    fmt, _ = weight_format(spec, "bf16")
    return step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=cached)


@pytest.mark.parametrize("cached", [100, 2183, 2184, 10_000, 16_383, 16_384, 40_000])
def test_kolibri1_1_indexed_decode_flops_by_hand(cached):
    """One decode step at ``cached`` keys (the query sees L = cached + 1): an indexed layer attends min(L, 2184) keys
    (top 2048 + 8 sinks + 128 local); beyond 2184 its indexer scores min(L, 16384) keys with 12 heads of 128 against
    key head 0, and an indexer layer beyond 16384 also scores L // 16 block means (Kolibri1_1Indexer)."""
    spec = parse_config(_config("kolibri1_1"), where="config.json")
    ops = _decode_ops(spec, cached)
    length, heads, hd = cached + 1, 48, 128
    pools = spec.layers[4].mixer.pool_source, spec.layers[9].mixer.pool_source
    assert pools == (True, False)  # index_layers default: the 1st, 3rd, 4th and 6th indexed layers
    for i in (4, 9):
        attn = [o for o in ops if o.layer == i and o.kind == "attention" and o.name.startswith("attention")]
        assert [o.flops for o in attn] == [heads * 2 * 2 * hd * min(length, 2184)]
        scored = min(length, 16384) if length > 2184 else 0
        if pools[i == 9] and length > 16384:
            scored += length // 16
        assert sum(o.flops for o in ops if o.layer == i and o.name == "indexer.scores") == 2 * 12 * hd * scored


def test_indexed_closed_forms_equal_their_sums():
    for cached, new in [(0, 1), (0, 5000), (2000, 400), (16000, 3000), (40000, 1), (3, 70000)]:
        ps = range(cached, cached + new)
        assert scored_keys(cached, new, 2184, 16384) == sum(min(p + 1, 16384) for p in ps if p + 1 > 2184)
        assert block_means(cached, new, 16384, 16) == sum((p + 1) // 16 for p in ps if p + 1 > 16384)


def test_kolibri1_1_verify_and_tp_refuse_in_one_line():
    from planner.analysis.parallel import tp_plan
    from planner.runtime.model import check_supported

    spec = parse_config(_config("kolibri1_1", **SMALL_KOLIBRI), where="config.json")
    with pytest.raises(RuntimeUnavailableError, match="Kolibri 1.1 indexed attention") as e:
        check_supported(spec)
    assert "\n" not in str(e.value)
    with pytest.raises(OptionError, match="key head 0"):
        tp_plan(spec, 2)
