"""Per-layer attention kinds of configs WITHOUT ``layer_types`` (older hub files), against transformers' own derivation.

The oracle is transformers 5.x itself: for every model_type in ``CONFIG_MAPPING`` whose default config (or its
``text_config``) has a ``layer_types`` attribute with attention layers in it, the default config and variants of it
(sliding flags on / off, a small ``sliding_window``, other ``num_hidden_layers``, pattern / interval / step fields
changed) are written out with ``layer_types`` dropped, transformers rebuilds it (``AutoConfig.for_model``), and each
layer's window (``sliding_window`` on a "sliding_attention" layer, ``attention_chunk_size`` on a "chunked_attention"
one, else none) must be planner's window / chunk of that layer. A model_type planner refuses (not generative, a
sub-config, a drafter) is skipped, saying so.

Families with no ``layer_types`` at all whose attention reads ``config.sliding_window`` on every layer are checked
against that attribute after transformers' ``__post_init__`` (NO_LAYER_TYPES: the modeling line is named per family).
NoPE layers (no RoPE) follow the rule each modeling file applies (NOPE_RULES, the line quoted).

Bugs this check found and fixed (each test below fails on the code before the fix):
- qwen2_moe, use_sliding_window true: Qwen2MoeConfig slides layers 0, 2, 4 ... below max_window_layers, planner slid
  layers >= max_window_layers (Qwen2's rule, which is not Qwen2-MoE's);
- qwen3_moe, use_sliding_window true: Qwen3MoeAttention windows every layer (Qwen3MoeConfig has no max_window_layers
  nor layer_types), planner only layers >= max_window_layers (28 by default);
- smollm3, use_sliding_window true: SmolLM3Config slides its NoPE layers (3, 7, 11 ...), planner none;
- qwen3_vl_text / qwen3_vl_moe_text: transformers never windows them (no sliding_window in Qwen3VLTextAttention;
  Qwen3VLMoeTextConfig sets it None), planner followed Qwen3's rule;
Where transformers' derivation differs from what serving engines do (vLLM's Qwen2-MoE takes no sliding window at all),
transformers is followed.
"""

from __future__ import annotations

import copy
import warnings

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError

transformers = pytest.importorskip("transformers", reason="the oracle is transformers' config classes (dev extra)")
from transformers import CONFIG_MAPPING, AutoConfig  # noqa: E402

transformers.logging.set_verbosity_error()

ATTENTION = {"full_attention", "sliding_attention", "chunked_attention"}
SMALL_WINDOW = 64


def _default(mt: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return CONFIG_MAPPING[mt]()
        except Exception:  # a config class with no usable defaults (gemma4_assistant, nougat): nothing to derive
            return None


def _entries() -> list[tuple[str, str]]:
    """(model_type, "" or "text_config"): every config whose default has attention layer_types."""
    out = []
    for mt in sorted(CONFIG_MAPPING.keys()):
        c = _default(mt)
        if c is None:
            continue
        for sub in ("", "text_config"):
            t = getattr(c, sub, None) if sub else c
            if t is None or not hasattr(t, "to_dict") or not isinstance(getattr(t, "layer_types", None), list):
                continue
            if set(t.layer_types) & ATTENTION:
                out.append((mt, sub))
    return out


ENTRIES = _entries()


def _variants(text: dict):
    """(name, fields changed): the default, then the fields each config class derives layer_types from."""
    yield "default", {}
    sw = {"sliding_window": SMALL_WINDOW} if "sliding_window" in text else {}
    if sw:
        yield "sliding_window=64", sw
    if "use_sliding_window" in text:
        for on in (True, False):
            yield f"use_sliding_window={on}", dict(sw, use_sliding_window=on)
    for n in (5, 12, 13):
        yield f"num_hidden_layers={n}", dict(sw, num_hidden_layers=n)
    if "max_window_layers" in text:
        for m in (0, 3, 7):
            yield f"max_window_layers={m}", dict(sw, max_window_layers=m, num_hidden_layers=12, use_sliding_window=True)
    for k, v in sorted(text.items()):
        if any(s in k for s in ("pattern", "interval", "_step", "every", "period")) and type(v) is int:
            for p in (2, 3):
                yield f"{k}={p}", dict(sw, num_hidden_layers=12, **{k: p})
                if "use_sliding_window" in text:
                    yield f"{k}={p},use_sliding_window", dict(sw, num_hidden_layers=12, use_sliding_window=True,
                                                              **{k: p})
    if "attention_chunk_size" in text:
        yield "attention_chunk_size=128", {"attention_chunk_size": 128}


# Defaults transformers accepts but that describe no runnable model, completed so the windows can be compared:
# (language-model fields, wrapper fields). Dots1Config defaults n_routed_experts to None; CohereCompassTextConfig's
# rope_parameters default is {} (its rotary embedding reads rope_parameters[layer_type]); AyaVisionConfig's default
# SigLIP tower has 14 heads over 1152 features.
_COMPASS_ROPE = {"rope_parameters": {t: {"rope_type": "default", "rope_theta": 10000.0}
                                     for t in ("full_attention", "sliding_attention")}}
FIXUPS = {
    "dots1": ({"n_routed_experts": 8, "num_experts_per_tok": 2}, {}),
    "cohere_compass_text": (_COMPASS_ROPE, {}),
    "cohere_compass": (_COMPASS_ROPE, {}),
    "aya_vision": ({}, {"vision_config": {"num_attention_heads": 16}}),
}


def _config(mt: str, sub: str, change: dict, sparse: bool = False) -> dict:
    """The default config as a dict, ``change`` applied to the language model's fields and its layer_types dropped;
    with another layer count, per-layer lists (and per_layer_config) are dropped too, for both sides to re-derive.
    ``sparse``: only the fields that differ from the class defaults (``to_diff_dict``), as older hub files have."""
    c = _default(mt)
    t = getattr(c, sub) if sub else c
    text = t.to_diff_dict() if sparse else t.to_dict()
    text.pop("transformers_version", None)
    n = t.num_hidden_layers
    text.pop("layer_types", None)
    if "num_hidden_layers" in change:
        text = {k: v for k, v in text.items()
                if k != "per_layer_config" and not (isinstance(v, list) and len(v) == n)}
    fix_text, fix_top = FIXUPS.get(mt, ({}, {}))
    text.update(fix_text)
    text.update(change)
    full = dict(c.to_dict(), text_config=text) if sub else text
    for k, v in fix_top.items():
        full[k] = dict(full[k], **v)
    full["model_type"] = mt
    return full


def _hf(mt: str, sub: str, cfg: dict):
    d = {k: v for k, v in copy.deepcopy(cfg).items() if k != "model_type"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = AutoConfig.for_model(mt, **d)
    return getattr(c, sub) if sub else c


def _hf_window(t, i: int):
    try:
        return getattr(t, "sliding_window", None) or None
    except Exception:  # a heterogeneous config (Gemma 4, dots3): the layer's own
        return getattr(t.per_layer_config[i], "sliding_window", None) or None


def _expected(t) -> list:
    """transformers: (window, chunk) per layer, None for a layer that is not softmax attention."""
    chunk = getattr(t, "attention_chunk_size", None)
    return [((_hf_window(t, i) if x == "sliding_attention" else None, chunk if x == "chunked_attention" else None)
             if x in ATTENTION else None) for i, x in enumerate(t.layer_types)]


def _planner(cfg: dict) -> list:
    return [(getattr(layer.mixer, "window", None), getattr(layer.mixer, "chunk", None))
            for layer in parse_config(copy.deepcopy(cfg), where="config.json").layers]


#: Dory is looped: planner's layers are the executed passes (112), transformers' layer_types the stored blocks (72)
LOOPED = {"dory"}


def _mismatches(mt: str, sub: str, change: dict, sparse: bool, refusals: list):
    """None when transformers rejects the variant or planner refuses it (its Error line kept in ``refusals``),
    else the layers whose (window, chunk) differ: (layer, planner's, transformers')."""
    cfg = _config(mt, sub, change, sparse)
    try:
        t = _hf(mt, sub, cfg)
    except Exception:  # transformers rejects the variant (e.g. a layer count its per-layer fields do not fit)
        return None
    expected = _expected(t)
    try:
        got = _planner(cfg)
    except (ConfigError, UnsupportedModelError) as e:
        refusals.append(str(e).splitlines()[0][:200])
        return None
    assert len(got) == len(expected), f"{len(got)} layers, transformers {len(expected)}"
    return [(i, g, e) for i, (g, e) in enumerate(zip(got, expected)) if e is not None and g != e]


@pytest.mark.parametrize("mt,sub", ENTRIES, ids=[f"{mt}.{sub}" if sub else mt for mt, sub in ENTRIES])
def test_derived_windows_match_transformers(mt, sub):
    if mt in LOOPED:
        pytest.skip(f"{mt} is looped: its executed layers are not its layer_types")
    c = _default(mt)
    text = (getattr(c, sub) if sub else c).to_dict()
    compared, bad, refusals = [], {}, []
    for name, change in _variants(text):
        for sparse in (False, True) if not sub else (False,):  # (a wrapper's text_config: whole)
            diff = _mismatches(mt, sub, change, sparse, refusals)
            if diff is None:
                continue
            compared.append(name)
            if diff:
                bad[name + (" (sparse)" if sparse else "")] = diff[:4]
    if not compared:
        pytest.skip(f"planner refuses {mt}: {refusals[0] if refusals else '?'}")
    assert not bad, f"{mt}: windows differ from transformers' derived layer_types (layer, planner, transformers): {bad}"


def test_the_sweep_covers_the_sliding_families():
    """The enumeration is not vacuous: the families whose derivation this file guards are in it."""
    names = {mt for mt, _ in ENTRIES}
    assert {"qwen2", "qwen2_moe", "qwen3", "smollm3", "olmo3", "exaone4", "ministral", "gemma3_text", "cohere2",
            "llama4_text", "gpt_oss", "dots1"} <= names
    assert len(ENTRIES) > 100


# Families with no layer_types: every layer's attention reads config.sliding_window (after the config class's
# __post_init__), or none at all. "all": modeling_<mt>.py passes getattr(config, "sliding_window") on every layer
# (mistral:173, mixtral:322, phi3:247, starcoder2:193, ministral3:168, qwen3_moe:149; phimoe:636 builds every layer's
# mask with create_sliding_window_causal_mask when config.sliding_window is set); "none": no window anywhere
# (Qwen3VLTextAttention has none; Qwen3VLMoeTextConfig sets sliding_window = None; OLMoE's mask is plain causal,
# modeling_olmoe.py:468 "diff with mixtral: no sliding", though OlmoeAttention:269 hands a leftover sliding_window key
# to the attention kernel, which only flash-attention would honour: eager / SDPA, the reference, attend to all).
NO_LAYER_TYPES = {
    "qwen3_moe": "all", "mistral": "all", "mixtral": "all", "phi3": "all", "starcoder2": "all", "ministral3": "all",
    "phimoe": "all", "olmoe": "none",
    "qwen3_vl_text": "none", "qwen3_vl_moe_text": "none",
}
SMALL = dict(hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
             head_dim=64, num_hidden_layers=6)


@pytest.mark.parametrize("mt", sorted(NO_LAYER_TYPES))
@pytest.mark.parametrize("flags", [{}, {"use_sliding_window": True}, {"use_sliding_window": False},
                                   {"use_sliding_window": True, "max_window_layers": 2}])
def test_every_layer_reads_config_sliding_window(mt, flags):
    cfg = dict(SMALL, model_type=mt, sliding_window=SMALL_WINDOW, **flags)
    if mt == "qwen3_vl_moe_text":
        cfg.update(moe_intermediate_size=128, num_experts=4, num_experts_per_tok=2)
    t = _hf(mt, "", cfg)
    assert not hasattr(t, "layer_types") or t.layer_types is None or mt == "ministral3"
    window = (t.sliding_window or None) if NO_LAYER_TYPES[mt] == "all" else None
    assert _planner(cfg) == [(window, None)] * cfg["num_hidden_layers"]


# NoPE: the condition under which each modeling file applies RoPE, on transformers' rebuilt config
NOPE_RULES = {
    # modeling_smollm3.py:192 / modeling_llama4.py:318: self.use_rope = config.no_rope_layers[layer_idx]
    "smollm3": lambda t, i: bool(t.no_rope_layers[i]),
    "llama4_text": lambda t, i: bool(t.no_rope_layers[i]),
    # modeling_exaone4.py:234 (exaone_moe:185, kolibri1:184): if self.sliding_window is None or self.is_sliding
    "exaone4": lambda t, i: t.sliding_window is None or t.layer_types[i] == "sliding_attention",
    "exaone_moe": lambda t, i: t.sliding_window is None or t.layer_types[i] == "sliding_attention",
    "kolibri1": lambda t, i: t.sliding_window is None or t.layer_types[i] == "sliding_attention",
    # modeling_cohere2.py:222 / modeling_flint.py:283: if self.sliding_window is not None (a sliding layer's)
    "cohere2": lambda t, i: bool(t.sliding_window) and t.layer_types[i] == "sliding_attention",
    "flint": lambda t, i: bool(t.sliding_window) and t.layer_types[i] == "sliding_attention",
}


@pytest.mark.parametrize("mt", sorted(NOPE_RULES))
def test_nope_layers_follow_the_modeling_code(mt):
    text = _default(mt).to_dict()
    checked = 0
    for name, change in _variants(text):
        cfg = _config(mt, "", change)
        try:
            t = _hf(mt, "", cfg)
        except Exception:
            continue
        spec = parse_config(copy.deepcopy(cfg), where="config.json")
        rope = [bool(layer.mixer.rotary_dim) for layer in spec.layers]
        assert rope == [NOPE_RULES[mt](t, i) for i in range(len(rope))], name
        checked += 1
    assert checked >= 3


# Real configs, with the sliding flag each family's class reads switched on (the published files have it off, so
# their analysis is unchanged); bf16 KV bytes of one sequence at 32768 tokens, by hand from the cache shapes.
# Qwen/Qwen3-30B-A3B config.json as a GPTQ issue log quotes it (code-index file 69846854025; also 71463455676):
# 48 layers, 4 KV heads x head_dim 128, max_window_layers 48, published with sliding_window null and
# use_sliding_window false. Here sliding_window 4096 and use_sliding_window true: all 48 layers keep 4096 tokens
# (before the fix: none, as max_window_layers is 48).
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "norm_topk_prob": True, "vocab_size": 151936, "tie_word_embeddings": False, "max_position_embeddings": 40960,
    "max_window_layers": 48, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "hidden_act": "silu",
    "use_sliding_window": True, "sliding_window": 4096}
# Qwen/Qwen1.5-MoE-A2.7B config.json (code-index file 54591096139, a Rust test's copy; 71463455676 has the -Chat's):
# 24 layers, 16 KV heads x 128, max_window_layers 21, published with use_sliding_window false. With it true and
# sliding_window 4096: layers 0, 2, ..., 20 (11) keep 4096 tokens, 13 keep all (before: layers 21-23 slid)
QWEN15_MOE_A27B = {
    "model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_key_value_heads": 16, "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
    "norm_topk_prob": False, "vocab_size": 151936, "tie_word_embeddings": False, "max_position_embeddings": 8192,
    "max_window_layers": 21, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "hidden_act": "silu",
    "use_sliding_window": True, "sliding_window": 4096}
# HuggingFaceTB/SmolLM3-3B (fields as tests/test_real_configs_audit.py quotes them, layer_types dropped),
# use_sliding_window true and sliding_window 4096: the 9 NoPE layers (3, 7, ..., 35) keep 4096 tokens
SMOLLM3_3B = {
    "model_type": "smollm3", "hidden_size": 2048, "num_hidden_layers": 36, "num_attention_heads": 16,
    "num_key_value_heads": 4, "intermediate_size": 11008, "vocab_size": 128256, "tie_word_embeddings": True,
    "max_position_embeddings": 65536, "no_rope_layer_interval": 4, "use_sliding_window": True, "sliding_window": 4096}

CTX = 32768
REAL = [
    ("Qwen3-30B-A3B", QWEN3_30B_A3B, 48 * 4096 * 4 * 128 * 2 * 2),
    ("Qwen1.5-MoE-A2.7B", QWEN15_MOE_A27B, (11 * 4096 + 13 * CTX) * 16 * 128 * 2 * 2),
    ("SmolLM3-3B", SMOLLM3_3B, (9 * 4096 + 27 * CTX) * 4 * 128 * 2 * 2),
]


@pytest.mark.parametrize("name,cfg,kv", REAL, ids=[r[0] for r in REAL])
def test_real_configs_kv_with_sliding_on(name, cfg, kv):
    t = _hf(cfg["model_type"], "", cfg)
    if getattr(t, "layer_types", None) is not None:
        assert _planner(cfg) == [(4096 if x == "sliding_attention" else None, None) for x in t.layer_types]
    a = analyze(parse_config(copy.deepcopy(cfg)), Options(context=CTX, dtype="bf16", kv_dtype="bf16"))
    assert a.kv_bytes_per_sequence == kv
    off = dict(cfg, use_sliding_window=False)  # as published: every layer keeps the whole context
    a = analyze(parse_config(copy.deepcopy(off)), Options(context=CTX, dtype="bf16", kv_dtype="bf16"))
    assert a.kv_bytes_per_sequence == cfg["num_hidden_layers"] * CTX * cfg["num_key_value_heads"] * 128 * 2 * 2


# The windows derived above, run: planner's torch decoder (weights loaded from transformers' model) gives
# transformers' logits over 20 tokens with 8-token windows, and its cached decode equals the full pass
# (tests/test_runtime.py's check). 4 layers, so every derivation has sliding and full layers.
_RUN = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
            vocab_size=128, max_position_embeddings=256, rms_norm_eps=1e-6, torch_dtype="float32", pad_token_id=0,
            rope_theta=10000.0, sliding_window=8, use_sliding_window=True)
RUN = {
    # layers 0 and 2 slide (below max_window_layers 3), 1 and 3 full
    "qwen2_moe": dict(_RUN, model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=48, norm_topk_prob=False, max_window_layers=3),
    # every layer slides (max_window_layers 2 is not Qwen3-MoE's)
    "qwen3_moe": dict(_RUN, model_type="qwen3_moe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, norm_topk_prob=True, max_window_layers=2),
    # NoPE layers 1 and 3 (interval 2) slide, RoPE layers 0 and 2 full
    "smollm3": dict(_RUN, model_type="smollm3", no_rope_layer_interval=2),
    # no window at all: the sliding_window key reaches only a flash-attention kernel, the mask is causal
    "olmoe": dict(_RUN, model_type="olmoe", num_experts=4, num_experts_per_tok=2),
}


@pytest.mark.parametrize("mt", sorted(RUN))
def test_derived_windows_run_as_transformers_does(mt):
    pytest.importorskip("torch", reason="the runtime check needs torch (the runtime extra)")
    from .test_runtime import assert_logits_and_cached_decode, hf_model, ours_from_hf

    cfg = RUN[mt]
    windows = _planner(cfg)
    assert {w for w, _ in windows} == {"qwen3_moe": {8}, "olmoe": {None}}.get(mt, {8, None})
    spec, ours = ours_from_hf(cfg, hf_model(cfg))
    assert_logits_and_cached_decode(spec, ours, hf_model(cfg))
