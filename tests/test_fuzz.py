"""Property tests over the config space (hypothesis).

1. Generated *valid* configs across families (llama, qwen2, qwen3, mistral, gemma2, mixtral,
   qwen3_moe, deepseek_v3, and a few more for the oracle): the arithmetic's invariants hold —
   parameters grow with layers, width and experts; GQA's KV bytes are MHA's × kv_heads/heads;
   active ≤ total; bytes per sequence are capped by windows and monotone in context; trace rows sum
   to the totals; prefill of one token is decode at context 0; and the parameter total equals
   transformers' model built on the meta device.
2. Generated *broken* configs (wrong types, missing keys, zero/negative/huge sizes, contradictions,
   nesting garbage, bytes that are not UTF-8 or not JSON) run through ``planner analyze --json`` in
   one process: every run either succeeds with valid JSON, or exits 1/2 with exactly one ``Error:``
   line, an empty stdout and no traceback — never an ``internal error``.

Every test is deterministic (``derandomize=True``, no example database).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config, supported_model_types
from planner.analysis.dtypes import get_dtype
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.spec import MLA, Attention, MoE
from planner.analysis.trace import NUMERIC_FIELDS, Totals, group_ops, step_ops
from planner.analysis.weights import weight_format
from tests.clirun import run
from tests.conftest import bundled_index, load_bundled_config

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])

ATTENTION_FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma2", "mixtral", "qwen3_moe")
FAMILIES = ATTENTION_FAMILIES + ("deepseek_v3",)
MOE_FAMILIES = ("mixtral", "qwen3_moe", "deepseek_v3")
#: Families checked against transformers besides the main ones.
ORACLE_EXTRA = ("qwen2_moe", "phi3", "olmo2", "olmoe", "gpt_oss", "gemma3_text", "starcoder2", "gemma", "deepseek_v2")


# ---- valid configs -------------------------------------------------------------------------------


@st.composite
def valid_config(draw, families=FAMILIES):
    """A small config.json of one of ``families`` that transformers would build."""
    mt = draw(st.sampled_from(families))
    layers = draw(st.integers(1, 4))
    hidden = draw(st.sampled_from([16, 32, 48, 64]))
    cfg = {"model_type": mt, "hidden_size": hidden, "num_hidden_layers": layers, "vocab_size": draw(st.integers(32, 300)),
           "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 4096,
           "torch_dtype": draw(st.sampled_from(["bfloat16", "float16", "float32"]))}
    if mt in ("deepseek_v3", "deepseek_v2"):
        heads = draw(st.integers(1, 4))
        n_exp = draw(st.integers(1, 6))
        cfg.update(num_attention_heads=heads, num_key_value_heads=heads,
                   q_lora_rank=draw(st.one_of(st.none(), st.sampled_from([8, 16]))),
                   kv_lora_rank=draw(st.sampled_from([8, 16])), qk_nope_head_dim=draw(st.sampled_from([4, 8])),
                   qk_rope_head_dim=draw(st.sampled_from([2, 4])), v_head_dim=draw(st.sampled_from([4, 8])),
                   intermediate_size=draw(st.sampled_from([24, 32, 64])),
                   moe_intermediate_size=draw(st.sampled_from([8, 16])),
                   n_routed_experts=n_exp, num_experts_per_tok=draw(st.integers(1, n_exp)),
                   n_shared_experts=draw(st.integers(0, 2)), first_k_dense_replace=draw(st.integers(0, layers)),
                   n_group=1, topk_group=1, num_nextn_predict_layers=0)
        return cfg
    kv = draw(st.sampled_from([1, 2, 4]))
    heads = kv * draw(st.sampled_from([1, 2, 4]))
    cfg.update(num_attention_heads=heads, num_key_value_heads=kv, head_dim=draw(st.sampled_from([4, 8, 16])),
               intermediate_size=draw(st.sampled_from([16, 24, 64])))
    if mt == "llama":
        cfg.update(attention_bias=draw(st.booleans()), mlp_bias=draw(st.booleans()))
    if mt in ("mistral", "mixtral", "gemma2", "phi3"):
        cfg["sliding_window"] = draw(st.one_of(st.none(), st.integers(1, 64)))
    if mt in ("qwen2", "qwen3", "qwen3_moe"):
        cfg.update(use_sliding_window=draw(st.booleans()), sliding_window=draw(st.integers(1, 64)),
                   max_window_layers=draw(st.integers(0, layers)))
    if mt == "qwen3":
        cfg["attention_bias"] = draw(st.booleans())
    if mt == "mixtral":
        n = draw(st.integers(1, 6))
        cfg.update(num_local_experts=n, num_experts_per_tok=draw(st.integers(1, n)))
    if mt in ("qwen3_moe", "qwen2_moe", "olmoe"):
        n = draw(st.integers(1, 6))
        cfg.update(num_experts=n, num_experts_per_tok=draw(st.integers(1, n)),
                   moe_intermediate_size=draw(st.sampled_from([8, 16])))
    if mt == "qwen3_moe":
        cfg.update(decoder_sparse_step=draw(st.integers(1, 2)),
                   mlp_only_layers=sorted(draw(st.sets(st.integers(0, layers - 1), max_size=layers))))
    if mt == "qwen2_moe":
        cfg.update(shared_expert_intermediate_size=draw(st.sampled_from([8, 24])),
                   decoder_sparse_step=draw(st.integers(1, 2)))
    if mt == "olmoe":
        cfg["head_dim"] = hidden // heads
    if mt in ("gemma2", "gemma3_text"):
        cfg["query_pre_attn_scalar"] = cfg["head_dim"]
    if mt == "gemma3_text":
        cfg.update(sliding_window=draw(st.integers(1, 64)), sliding_window_pattern=draw(st.integers(1, 6)))
    if mt == "gpt_oss":
        n = draw(st.integers(1, 6))
        cfg.update(num_local_experts=n, num_experts_per_tok=draw(st.integers(1, n)), sliding_window=draw(st.integers(1, 64)))
    if mt == "starcoder2":
        cfg["use_bias"] = draw(st.booleans())
    if mt == "phi3":
        cfg["pad_token_id"] = 0
    # a saved config.json leaves out the fields equal to its class defaults
    optional = ["tie_word_embeddings", "torch_dtype", "max_position_embeddings"]
    if mt == "llama":
        optional.append("num_key_value_heads")  # absent: MHA (other families default to a fixed count)
    if hidden % heads == 0 or mt in ("qwen3", "gemma2"):
        optional.append("head_dim")
    for k in draw(st.sets(st.sampled_from(optional))):
        if k == "num_key_value_heads":
            cfg["num_attention_heads"] = cfg["num_key_value_heads"]
        cfg.pop(k, None)
    return cfg


def spec_of(cfg):
    return parse_config(cfg, where="generated config.json")


def total_params(cfg) -> int:
    return count_params(spec_of(cfg)).total


def kv_bytes_per_token(cfg, kv_dtype="bf16") -> int:
    d = get_dtype(kv_dtype)
    return kv_cache(spec_of(cfg), d, d).bytes_per_token


@settings(max_examples=150, **SETTINGS)
@given(valid_config(), st.integers(1, 3))
def test_params_grow_with_layers(cfg, more):
    bigger = dict(cfg, num_hidden_layers=cfg["num_hidden_layers"] + more)
    assert total_params(bigger) > total_params(cfg)


@settings(max_examples=150, **SETTINGS)
@given(valid_config())
def test_params_grow_with_width(cfg):
    wider = dict(cfg, hidden_size=cfg["hidden_size"] + 16)
    if "head_dim" not in wider and cfg["model_type"] not in ("qwen3", "gemma2", "deepseek_v3"):
        wider["head_dim"] = spec_of(cfg).layers[0].mixer.head_dim  # keep the heads' shape
    assert total_params(wider) > total_params(cfg)
    deeper_ffn = dict(cfg, intermediate_size=cfg["intermediate_size"] + 8)
    grows = any(not isinstance(layer.ffn, MoE) or cfg["model_type"] == "mixtral" for layer in spec_of(cfg).layers)
    assert (total_params(deeper_ffn) > total_params(cfg)) == grows
    if "moe_intermediate_size" in cfg:
        fatter = dict(cfg, moe_intermediate_size=cfg["moe_intermediate_size"] + 8)
        has_moe = any(isinstance(layer.ffn, MoE) for layer in spec_of(cfg).layers)
        assert (total_params(fatter) > total_params(cfg)) == has_moe


@settings(max_examples=150, **SETTINGS)
@given(valid_config(MOE_FAMILIES), st.integers(1, 4))
def test_params_grow_with_experts_and_active_only_by_the_router(cfg, more):
    key = {"mixtral": "num_local_experts", "qwen3_moe": "num_experts", "deepseek_v3": "n_routed_experts"}[cfg["model_type"]]
    more_experts = dict(cfg, **{key: cfg[key] + more})
    a, b = count_params(spec_of(cfg)), count_params(spec_of(more_experts))
    n_moe = sum(isinstance(layer.ffn, MoE) for layer in spec_of(cfg).layers)
    if n_moe == 0:
        assert b.total == a.total
        return
    moe = next(layer.ffn for layer in spec_of(cfg).layers if isinstance(layer.ffn, MoE))
    # each MoE layer gains `more` experts and `more` router rows; a token still uses top-k experts
    assert b.total - a.total == n_moe * more * (moe.expert_params + cfg["hidden_size"])
    assert b.active - a.active == n_moe * more * cfg["hidden_size"]


@settings(max_examples=200, **SETTINGS)
@given(valid_config(FAMILIES + ORACLE_EXTRA))
def test_active_at_most_total_and_parts_sum_to_total(cfg):
    p = count_params(spec_of(cfg))
    assert 0 < p.active <= p.total
    parts = p.embedding + p.lm_head + p.attention + p.mlp + p.experts + p.shared_experts + p.router + p.norm + p.ssm
    assert parts == p.total
    if not any(isinstance(layer.ffn, MoE) for layer in spec_of(cfg).layers):
        assert p.active == p.total


@settings(max_examples=200, **SETTINGS)
@given(valid_config(ATTENTION_FAMILIES), st.sampled_from(["bf16", "fp8", "fp32"]))
def test_gqa_kv_bytes_are_mha_times_kv_over_heads(cfg, kv_dtype):
    heads = cfg["num_attention_heads"]
    cfg = dict(cfg, head_dim=spec_of(cfg).layers[0].mixer.head_dim)  # the same heads in both
    mha = kv_bytes_per_token(dict(cfg, num_key_value_heads=heads), kv_dtype)
    for kv in (k for k in range(1, heads + 1) if heads % k == 0):
        gqa = kv_bytes_per_token(dict(cfg, num_key_value_heads=kv), kv_dtype)
        assert gqa * heads == mha * kv


@settings(max_examples=200, **SETTINGS)
@given(valid_config(FAMILIES + ("gemma3_text", "gpt_oss", "phi3")),
       st.lists(st.integers(0, 200), min_size=2, max_size=6))
def test_bytes_per_sequence_capped_by_windows_and_monotone_in_context(cfg, contexts):
    spec = spec_of(cfg)
    d = get_dtype("bf16")
    cache = kv_cache(spec, d, d)
    contexts = sorted(contexts)
    seq = [cache.bytes_per_sequence(c) for c in contexts]
    assert seq == sorted(seq)
    for c, b in zip(contexts, seq):
        assert b <= c * cache.bytes_per_token
        for lk, layer in zip(cache.layers, spec.layers):
            m = layer.mixer
            cap = m.window or m.chunk if isinstance(m, Attention) else None
            assert lk.window == cap
            if cap:
                assert lk.bytes_at(c) == lk.bytes_per_token * min(c, cap)
    # past the largest window only the full-attention layers still grow
    big = max(contexts) + 10_000
    full = sum(lk.bytes_per_token for lk in cache.layers if lk.window is None)
    assert cache.bytes_per_sequence(big + 1) - cache.bytes_per_sequence(big) == full


@settings(max_examples=150, **SETTINGS)
@given(valid_config(FAMILIES + ("gemma3_text", "gpt_oss")), st.integers(1, 16), st.integers(0, 300),
       st.booleans(), st.sampled_from([None, "fp8", "int4", "fp32"]))
def test_trace_rows_sum_to_totals(cfg, batch, context, all_layers, dtype):
    spec = spec_of(cfg)
    fmt, _ = weight_format(spec, dtype)
    ops = step_ops(spec, fmt, fmt.act, batch=batch, new_tokens=1, cached_tokens=context)
    tot = Totals.of(ops)
    groups = group_ops(spec, ops, all_layers)
    for name in NUMERIC_FIELDS:
        assert sum(getattr(g.op, name) * g.count for g in groups) == sum(getattr(o, name) for o in ops)
    # a step reads each weight once, whatever the batch: dense models read exactly all of them
    if not any(isinstance(layer.ffn, MoE) for layer in spec.layers):
        head = spec.lm_head_tensors() or spec.embedding_tensors()[:1]
        body = [t for i, layer in enumerate(spec.layers) for t in layer.tensors(f"model.layers.{i}")]
        expected = fmt.bytes_of(body + spec.final_norm_tensors() + head)
        embed_row = fmt.bytes_of(spec.embedding_tensors()[:1]) // spec.vocab_size
        assert tot.weight_bytes - expected in range(0, batch * embed_row + 2)


@settings(max_examples=150, **SETTINGS)
@given(valid_config(FAMILIES + ("gemma3_text", "gpt_oss")), st.integers(1, 8))
def test_prefill_of_one_token_is_decode_at_context_zero(cfg, batch):
    spec = spec_of(cfg)
    a1 = analyze(spec, Options(context=1, batch=batch))
    a0 = analyze(spec, Options(context=0, batch=batch))
    assert a1.prefill_flops == a0.decode_flops
    # and decode FLOPs and cached bytes never shrink as the context grows
    a9 = analyze(spec, Options(context=9, batch=batch))
    assert a9.decode_flops >= a0.decode_flops
    assert a9.kv_bytes_per_sequence >= a1.kv_bytes_per_sequence


def test_mla_kv_is_the_latent_not_the_heads():
    cfg = {"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
           "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": None, "kv_lora_rank": 16,
           "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "intermediate_size": 64,
           "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
           "first_k_dense_replace": 1}
    spec = spec_of(cfg)
    assert all(isinstance(layer.mixer, MLA) for layer in spec.layers)
    assert kv_bytes_per_token(cfg) == 2 * 2 * (16 + 4)
    assert kv_bytes_per_token(dict(cfg, num_attention_heads=8, num_key_value_heads=8)) == kv_bytes_per_token(cfg)


# ---- the transformers oracle ---------------------------------------------------------------------


@pytest.mark.parametrize("families,n", [(FAMILIES, 24), (ORACLE_EXTRA, 12)])
def test_param_total_equals_transformers_meta(families, n):
    """The strongest property: our count equals the model transformers builds from the same config."""
    pytest.importorskip("torch", reason="the transformers oracle needs torch")
    pytest.importorskip("transformers", reason="the transformers oracle needs transformers")
    from tests.oracle import hf_param_count

    @settings(max_examples=n, **SETTINGS)
    @given(valid_config(families))
    def check(cfg):
        assert total_params(cfg) == hf_param_count(cfg), cfg

    check()


# ---- broken configs through the CLI --------------------------------------------------------------

#: Field names the parser reads (the bundled configs' keys and the fields of every builder).
KNOWN_KEYS = sorted({k for m in bundled_index() for k in load_bundled_config(m["id"])} | {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
    "vocab_size", "model_type", "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
    "attention_chunk_size", "num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "decoder_sparse_step", "mlp_only_layers", "n_routed_experts", "n_shared_experts", "first_k_dense_replace",
    "moe_layer_freq", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "rotary_dim", "rotary_pct",
    "tie_word_embeddings", "torch_dtype", "dtype", "quantization_config", "text_config", "auto_map",
    "num_nextn_predict_layers", "no_rope_layers", "no_rope_layer_interval", "moe_layers", "interleave_moe_layer_step",
    "sliding_window_pattern", "shared_expert_intermediate_size", "attention_bias", "mlp_bias", "hidden_act",
    "rms_norm_eps", "max_position_embeddings", "query_pre_attn_scalar", "attn_logit_softcapping",
    "final_logit_softcapping", "rope_local_base_freq", "num_kv_heads", "multi_query", "new_decoder_architecture",
    "parallel_attn", "alibi", "bias", "ffn_hidden_size", "num_ln_in_parallel_attn", "use_parallel_residual",
    "hybrid_override_pattern", "mamba_d_state", "mamba_n_heads", "mamba_d_head", "mamba_expand", "mamba_d_conv",
    "state_size", "conv_kernel", "expand", "time_step_rank", "attn_layer_period", "attn_layer_offset",
    "expert_layer_period", "expert_layer_offset", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval",
})

SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, -8, 1, 3, 7, 2**24 + 1, 2**31, 2**63, 10**30, 1.5, -0.5, 1e-300, 1e308]),
    st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "4096", "abc", "NaN", "bfloat16", "full_attention", "sliding_attention", "llama", "\x00",
                     "é" * 3, "1e9"]),
    st.text(max_size=12),
)
GARBAGE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=6,
)
QUANT = st.fixed_dictionaries(
    {"quant_method": st.one_of(st.sampled_from(["fp8", "fbgemm_fp8", "awq", "gptq", "bitsandbytes", "mxfp4",
                                                "compressed-tensors", "hqq", "AWQ"]), SCALARS)},
    optional={k: GARBAGE for k in ("bits", "w_bit", "group_size", "q_group_size", "weight_block_size", "zero_point",
                                   "load_in_4bit", "load_in_8bit", "bnb_4bit_use_double_quant", "config_groups",
                                   "modules_to_not_convert", "ignore", "ignored_layers", "desc_act")}
    | {"config_groups": st.dictionaries(st.text(max_size=4), st.one_of(GARBAGE, st.fixed_dictionaries(
        {"weights": st.one_of(GARBAGE, st.fixed_dictionaries({}, optional={
            "num_bits": GARBAGE, "strategy": st.one_of(st.sampled_from(["group", "channel", "tensor", "block"]), SCALARS),
            "group_size": GARBAGE, "block_structure": GARBAGE, "symmetric": GARBAGE, "type": GARBAGE}))})),
        max_size=2)},
)


#: Bundled configs to break (one is left out only for speed: its 449 ``ignore`` patterns make every
#: analysis of it take ~0.5 s).
BUNDLED_BASES = [m["id"] for m in bundled_index() if m["id"] != "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic"]


def _class_default_configs() -> list[dict]:
    """Every family's transformers class defaults as a config (hybrids included) where they parse."""
    from planner.analysis.family_defaults import FAMILY_DEFAULTS

    out = []
    for mt in supported_model_types():
        cfg = dict(FAMILY_DEFAULTS.get(mt, {}), model_type=mt)
        try:
            parse_config(cfg)
        except Exception:
            continue
        out.append(cfg)
    return out


CLASS_DEFAULTS = _class_default_configs()


@st.composite
def base_config(draw):
    """A valid config to break: a small generated one, a bundled real one, or a family's class defaults
    (every supported family, hybrids included)."""
    which = draw(st.integers(0, 3))
    if which == 0:
        return load_bundled_config(draw(st.sampled_from(BUNDLED_BASES)))
    if which == 1:
        return json.loads(json.dumps(draw(st.sampled_from(CLASS_DEFAULTS))))
    return draw(valid_config(FAMILIES + ORACLE_EXTRA))


@st.composite
def mutation(draw, cfg):
    kind = draw(st.sampled_from(["set", "set", "delete", "size", "size", "contradiction", "model_type", "nest",
                                 "extra_key", "layer_list"]))
    keys = sorted(set(cfg) | set(KNOWN_KEYS)) if cfg else KNOWN_KEYS
    if kind == "set":
        cfg[draw(st.sampled_from(keys))] = draw(GARBAGE)
    elif kind == "delete" and cfg:
        cfg.pop(draw(st.sampled_from(sorted(cfg))), None)
    elif kind == "size":
        key = draw(st.sampled_from([k for k in keys if any(w in k for w in ("size", "num_", "n_", "dim", "rank",
                                                                            "window", "layers", "heads", "experts"))]))
        cfg[key] = draw(st.sampled_from([0, -1, -4096, 2**24 + 1, 2**40, 10**18, 2**14 + 1, 1 << 30, 7, 1]))
    elif kind == "contradiction":
        which = draw(st.integers(0, 6))
        heads = cfg.get("num_attention_heads") if isinstance(cfg.get("num_attention_heads"), int) else 8
        if which == 0:  # kv heads that do not divide the heads
            cfg["num_key_value_heads"] = heads + 1 if heads > 1 else 3
        elif which == 1:  # a head_dim inconsistent with the projections
            cfg["head_dim"] = draw(st.sampled_from([0, -64, 3, 2**25, 1.5, "128"]))
        elif which == 2:  # more experts per token than experts
            for k in ("num_local_experts", "num_experts", "n_routed_experts"):
                if isinstance(cfg.get(k), int):
                    cfg["num_experts_per_tok"] = cfg[k] + draw(st.integers(1, 5))
            cfg.setdefault("num_experts_per_tok", -2)
        elif which == 3:  # layer_types of the wrong length or an unknown kind
            n = cfg.get("num_hidden_layers") if isinstance(cfg.get("num_hidden_layers"), int) else 2
            n = min(n, 4096)  # a "size" mutation may have set 10**18 layers: the list is still the wrong length
            cfg["layer_types"] = draw(st.one_of(
                st.just(["full_attention"] * (max(n, 0) + 1)), st.just(["teleport_attention"] * max(n, 1)),
                st.lists(st.sampled_from(["full_attention", "sliding_attention", "chunked_attention", "mamba"]),
                         max_size=6)))
        elif which == 4:  # a window with no size, or a negative one
            cfg.update(use_sliding_window=True, sliding_window=draw(st.sampled_from([-1, 0, None, "4k", 2**40])))
        elif which == 5:  # MoE layers out of range
            cfg["mlp_only_layers" if draw(st.booleans()) else "moe_layers"] = draw(st.lists(
                st.integers(-3, 10**6), max_size=4))
        else:  # MLA ranks that cannot hold the heads
            cfg.update(kv_lora_rank=draw(st.sampled_from([0, -1, None, 2**30])),
                       qk_rope_head_dim=draw(st.sampled_from([0, -2, 3.5])))
    elif kind == "model_type":
        cfg["model_type"] = draw(st.one_of(st.sampled_from(supported_model_types()), SCALARS,
                                           st.sampled_from(["Llama", "LLAMA", "llama ", "gpt2", "bert", "t5", "whisper"])))
    elif kind == "nest":
        key = draw(st.sampled_from(["text_config", "quantization_config", "rope_scaling", "rope_parameters", "auto_map",
                                    "layer_types", "no_rope_layers", "sliding_window"]))
        if key == "quantization_config":
            cfg[key] = draw(st.one_of(QUANT, GARBAGE))
        elif key == "text_config":
            inner = dict(cfg)
            for _ in range(draw(st.integers(0, 2))):
                draw(mutation(inner))
            outer = draw(st.sampled_from(["llama4", "gemma3", "mistral3", "qwen2_vl", "qwen3_vl_moe", "llava", "gemma3n",
                                          "llama", None]))
            cfg.clear()
            cfg.update({"model_type": outer, "text_config": draw(st.one_of(st.just(inner), GARBAGE))})
        else:
            cfg[key] = draw(GARBAGE)
    elif kind == "extra_key":  # harmless unknown keys, with garbage values
        cfg[draw(st.text(min_size=1, max_size=20))] = draw(GARBAGE)
    elif kind == "layer_list":
        n = cfg.get("num_hidden_layers") if isinstance(cfg.get("num_hidden_layers"), int) else 2
        cfg[draw(st.sampled_from(["layer_types", "no_rope_layers", "mlp_only_layers", "moe_layers",
                                  "hybrid_override_pattern", "attn_layer_indices"]))] = draw(st.one_of(
            st.lists(GARBAGE, max_size=max(0, min(n, 8)) + 1), st.text(max_size=10)))
    return cfg


def _encode(draw, cfg) -> bytes:
    text = json.dumps(cfg)  # NaN and Infinity as Python writes them (json.loads reads them back)
    how = draw(st.sampled_from(["plain"] * 8 + ["truncate", "latin1", "bad_bytes", "bom", "top_level", "deep", "dupe"]))
    if how == "truncate":
        return text.encode()[: draw(st.integers(0, max(0, len(text) - 1)))]
    if how == "latin1":
        return (text[:-1] + ', "name": "caf\u00e9 \u00e0 la cr\u00e8me"}').encode("latin-1") if text.endswith("}") else b"\xe9"
    if how == "bad_bytes":
        raw = text.encode()
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80\x80", b"\xed\xa0\x80", b"\x00"])) + raw[at:]
    if how == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if how == "top_level":
        return json.dumps(draw(st.one_of(st.lists(GARBAGE, max_size=3), SCALARS))).encode()
    if how == "deep":
        depth = draw(st.sampled_from([50, 5000, 200_000]))
        return ('{"model_type": "llama", "rope_scaling": ' + "[" * depth + "]" * depth + "}").encode()
    if how == "dupe":  # a key given twice: JSON keeps the last one
        return (text[:-1] + ', "hidden_size": "twice"}').encode() if text.endswith("}") else text.encode()
    return text.encode()


@st.composite
def broken_config(draw) -> bytes:
    cfg = dict(draw(base_config()))
    for _ in range(draw(st.integers(1, 3))):
        draw(mutation(cfg))
    return _encode(draw, cfg)


def _no_constants(token: str):
    raise AssertionError(f"JSON output holds {token}")


def check_outcome(r, where: str) -> None:
    """Success with valid JSON, or one ``Error:`` line (exit 1/2), empty stdout, no traceback."""
    assert "Traceback" not in r.err, r.err
    assert "internal error" not in r.err, r.err
    if r.code == 0:
        d = json.loads(r.out, parse_constant=_no_constants)  # strict JSON: no NaN or Infinity tokens
        p = d["params"]
        assert isinstance(p["total"], int) and 0 < p["active"] <= p["total"]
        for key in ("weights_bytes", "kv_bytes", "total_bytes"):
            assert isinstance(d["memory"][key], int) and d["memory"][key] >= 0
        assert all(not line.startswith("Error:") for line in r.err.splitlines())
        return
    assert r.code in (1, 2), (r.code, r.err)
    line = r.assert_error(code=r.code)
    assert len(line) < 2000


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module", autouse=True)
def _build_the_cli_once():
    """typer's CliRunner rebuilds the click command from the app on every invoke (~15 ms); the fuzz
    tests invoke it thousands of times, so they build it once (same app, same PlannerGroup.main)."""
    import typer.testing as tt

    from planner.cli.app import app

    original = getattr(tt, "_get_command", None)
    if original is None:  # another typer: keep its behaviour (slower, same results)
        yield
        return
    command = original(app)
    tt._get_command = lambda a: command if a is app else original(a)
    try:
        yield
    finally:
        tt._get_command = original


@settings(max_examples=2500, **SETTINGS)
@given(broken_config())
def test_broken_configs_never_crash_analyze_json(fuzz_dir, data):
    path = fuzz_dir / "config.json"
    path.write_bytes(data)
    check_outcome(run("analyze", str(path), "--json"), str(path))


@settings(max_examples=200, **SETTINGS)
@given(broken_config(), st.sampled_from(["analyze", "trace", "compare"]), st.sampled_from(["table", "csv", "markdown"]))
def test_broken_configs_never_print_a_partial_table(fuzz_dir, data, command, fmt):
    path = fuzz_dir / "config-table.json"
    path.write_bytes(data)
    models = [str(path), "qwen2.5-0.5b"] if command == "compare" else [str(path)]
    r = run(command, *models, "--format", fmt, "--context", "64")
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    if r.code != 0:
        assert r.code in (1, 2)
        r.assert_error(code=r.code)  # stdout empty: no half-printed table
    else:
        assert r.out.strip()


def test_fuzz_finds_both_outcomes(fuzz_dir):
    """The generator is not degenerate: among its examples some configs are valid, most are not."""
    codes = []

    @settings(max_examples=150, **SETTINGS)
    @given(broken_config())
    def collect(data):
        path = fuzz_dir / "config-mix.json"
        path.write_bytes(data)
        codes.append(run("analyze", str(path), "--json").code)

    collect()
    assert codes.count(0) >= 5 and codes.count(1) >= 50, codes


def test_nan_and_infinity_tokens_are_rejected_or_ignored(tmp_path):
    for token in ("NaN", "Infinity", "-Infinity", "1e999"):
        path = tmp_path / "config.json"
        path.write_text('{"model_type": "llama", "hidden_size": %s, "num_hidden_layers": 2, "num_attention_heads": 4, '
                        '"intermediate_size": 64, "vocab_size": 100}' % token)
        run("analyze", str(path), "--json").assert_error("hidden_size")
        path.write_text('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
                        '"intermediate_size": 64, "vocab_size": 100, "rope_theta": %s}' % token)
        run("analyze", str(path), "--json").assert_error("rope_theta")


def test_generated_valid_configs_are_valid_through_the_cli(fuzz_dir):
    @settings(max_examples=60, **SETTINGS)
    @given(valid_config(FAMILIES + ORACLE_EXTRA))
    def check(cfg):
        path = fuzz_dir / "config-valid.json"
        path.write_text(json.dumps(cfg))
        r = run("analyze", str(path), "--json", "--context", "128")
        assert r.code == 0, r.err
        assert r.json["params"]["total"] == total_params(cfg)

    check()


# ---- broken hardware profiles through the CLI ----------------------------------------------------

_NUMBER_TEXT = st.one_of(
    st.integers(-10**6, 10**30).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1,979", "1,5", "1e400", "1e-400", "1e999999999", "-0", "0", ".5", "5.", "1e", "e5", "1_000", "0x10",
                     "nan", "inf", "1,000,000.5", "+3", "9" * 5000]))
_UNIT_TEXT = st.sampled_from(["", "GiB", "GB", "gb", "Gb", "TB/s", "tb/s", "Gbit/s", "GiB/s", "TFLOP/s", "tflops", "TOPS",
                              "us", "µs", "μs", "ms", "s", "ns", "%", "USD", "$", "B", "bytes", "PB/s", "EFLOP/s", "weird",
                              "TB / s", " GiB "])
_PROFILE_VALUE = st.one_of(st.builds(lambda n, sp, u: f"{n}{sp}{u}", _NUMBER_TEXT, st.sampled_from(["", " "]), _UNIT_TEXT),
                           GARBAGE)
_GOOD_PROFILE = {"name": "my-gpu", "display_name": "My GPU", "vendor": "Acme", "aliases": ["mine"], "memory": "24 GiB",
                 "memory_bandwidth": "1 TB/s", "peak_flops": {"bf16": "100 TFLOP/s", "fp8": "200 TFLOP/s"},
                 "interconnect": "50 GB/s", "kernel_launch_overhead": "5 us", "runtime_reserve": "2 GiB",
                 "price_per_hour": 1.5, "efficiency": {"memory_bandwidth": 0.8, "compute": None}, "source": ["x"],
                 "notes": ["y"]}
_PROFILE_KEYS = list(_GOOD_PROFILE) + ["peak_flops.bf16", "peak_flops.fp32", "peak_flops.int8", "peak_flops.BF16",
                                       "peak_flops.fp64", "efficiency.compute", "efficiency.memory_bandwidth", "bogus"]


@st.composite
def broken_profile(draw) -> bytes:
    import yaml

    d = json.loads(json.dumps(_GOOD_PROFILE))
    for _ in range(draw(st.integers(1, 3))):
        key, delete = draw(st.sampled_from(_PROFILE_KEYS)), draw(st.integers(0, 2)) == 0
        outer, _, inner = key.partition(".")
        target = d
        if inner:
            if not isinstance(d.get(outer), dict):
                d[outer] = {}
            target, key = d[outer], inner
        if delete:
            target.pop(key, None)
        else:
            target[key] = draw(_PROFILE_VALUE)
    text = yaml.safe_dump(d, allow_unicode=True)
    how = draw(st.sampled_from(["plain"] * 6 + ["tag", "truncate", "bytes", "tab", "aliases", "list"]))
    if how == "tag":
        text = draw(st.sampled_from(["!!python/object/apply:os.system ['exit 3']\n", "memory: !!python/name:os.system\n",
                                     "x: !custom 1\n", "memory: !!binary aGVsbG8=\n", "? [1, 2]\n: 3\n"])) + text
    elif how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "bytes":
        return text.encode()[:40] + b"\xff\xfe" + text.encode()[40:]
    elif how == "tab":
        text = text.replace("  ", "\t", 1)
    elif how == "aliases":
        text = "a: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nnotes: [*b,*b,*b,*b,*b,*b,*b,*b]\n" + text
    elif how == "list":
        text = "- " + text.replace("\n", "\n  ")
    return text.encode()


@settings(max_examples=600, **SETTINGS)
@given(broken_profile(), st.sampled_from([("hardware", "show", "{p}", "--json"),
                                          ("analyze", "qwen2.5-0.5b", "--hardware", "{p}", "--json"),
                                          ("trace", "qwen2.5-0.5b", "--hardware", "{p}", "--format", "csv"),
                                          ("compare", "qwen2.5-0.5b", "gemma-2-2b", "--hardware", "{p}", "--json")]))
def test_broken_hardware_profiles_never_crash(fuzz_dir, data, args):
    path = fuzz_dir / "gpu.yaml"
    path.write_bytes(data)
    r = run(*[a.format(p=path) for a in args])
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    if r.code == 0:
        if "--json" in args:
            json.loads(r.out, parse_constant=_no_constants)
        return
    assert r.code in (1, 2)
    r.assert_error(code=r.code)
