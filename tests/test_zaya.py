"""Zyphra ZAYA (``zaya``): CCA attention and the MLP router, against transformers 5.24 (models/zaya) and a hand count
of ZAYA1-8B. Totals against transformers on meta: tests/test_families.py CASES ``zaya*``."""

from __future__ import annotations

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from tests.test_families import CASES, _hf_decode_flops, _hf_prefill


def test_zaya1_8b_hand_count_and_published_figures():
    """ZAYA1-8B (ZayaConfig's defaults, its docstring checkpoint Zyphra/ZAYA1-8B), counted by hand from the shapes
    in modeling_zaya.py; the model card says "800m active / 8.3B total" (without the 0.54B tied embedding)."""
    h, L, V, H, K, d, E, I, R = 2048, 40, 262272, 8, 2, 128, 16, 2048, 256
    C = (H + K) * d  # the q/k conv channels
    attn = (h * H * d + h * K * d + 2 * h * (K * d // 2)  # q_proj, k_proj, v_proj_current, v_proj_delayed
            + C * 2 + C + C * d * 2 + C  # conv_qk_depthwise (C,1,2)+bias, conv_qk_grouped (C,d,2)+bias
            + H * d * h + K)  # o_proj, qk_norm.temp
    residual = 2 * 4 * h  # post_attention / post_mlp residual scalings
    norms = 2 * h
    router = h * R + R + R + (R * R + R) * 2 + R * (E + 1)  # down_proj, norm, fc1, fc2, out_proj (+ skip class)
    state_scale = R  # router_states_scale, layers 1..L-1
    experts = E * 3 * h * I
    total = V * h + L * (attn + residual + norms + router + experts) + (L - 1) * state_scale + h + 2 * h
    active = total - L * (E - 1) * 3 * h * I
    p = count_params(parse_config(CASES["zaya"]))
    assert (p.total, p.active) == (total, active) == (8_840_488_784, 1_290_741_584)
    assert round((total - V * h) / 1e9, 1) == 8.3 and 0.75e9 < active - V * h < 0.8e9


def test_zaya_kv_and_state_equal_transformers_cache():
    """transformers' cache after a 40-token prefill (fp32, window 32): K and V per token as ours (sliding layers keep
    window - 1 tokens, as every sliding family's); its conv state ((heads + kv_heads) · head_dim channels ×
    (cca_time0 - 1) + (cca_time1 - 1) columns) and recurrent state (the delayed V half) are our per-sequence
    state."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    cfg = CASES["zaya-tiny-sliding-biased"]
    spec = parse_config(cfg)
    fp32 = get_dtype("fp32")
    n = 40
    _, _, cache = _hf_prefill(cfg, n)
    layers = kv_cache(spec, fp32, fp32).layers
    assert len(layers) == len(cache.layers) == 4
    for i, lk in enumerate(layers):
        lc, m = cache.layers[i], spec.layers[i].mixer
        held = lc.keys.shape[2]
        assert held == (min(n, m.window - 1) if m.window else n)
        assert lk.bytes_per_token == (lc.keys.numel() + lc.values.numel()) * 4 // held == 2 * 2 * 16 * 4
        conv, rec = lc.conv_states[0], lc.recurrent_states[0]
        assert conv.shape[1:] == ((4 + 2) * 16, (3 - 1) + (2 - 1)) and rec.shape[1:] == (2 * 16 // 2,)
        assert lk.state_bytes == (conv.numel() + rec.numel()) * 4


def test_zaya_decode_flops_equal_transformers():
    """FlopCounterMode over transformers' decode step after a 40-token prefill (eager attention and experts): its
    ``aten.mm`` / ``aten.addmm`` / ``aten.bmm`` are our projections, router MLP, the one routed expert (unless the
    token picks the skip expert), attention and lm_head; its ``aten.convolution`` our two q/k convs (the depthwise
    one recomputing cca_time1 outputs from the cached inputs)."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = CASES["zaya-tiny-sliding-biased"]
    n = 40
    torch, model, cache = _hf_prefill(cfg, n)
    hf = _hf_decode_flops(torch, model, cfg["vocab_size"], cache=cache)
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    ours = {k: sum(o.flops for o in ops if o.kind == k) for k in ("matmul", "attention", "router", "experts", "conv")}
    # a token routed to the skip expert still runs one expert in transformers (ZayaRouter remaps it to expert 0 with
    # weight 0), so every layer's decode step runs one expert, as counted
    hf_mm = sum(v for k, v in hf.items() if k in ("aten.mm", "aten.addmm", "aten.bmm"))
    assert hf_mm == ours["matmul"] + ours["attention"] + ours["router"] + ours["experts"]
    assert hf.get("aten.convolution", 0) == ours["conv"]


@pytest.mark.parametrize("change,field", [
    ({"num_experts_per_tok": 2}, "num_experts_per_tok"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"head_dim": 15, "num_key_value_heads": 1}, "head_dim"),
    ({"cca_time0": 1, "cca_time1": 1}, "cca_time0"),
    ({"layer_types": ["hybrid", "full_attention", "hybrid", "hybrid"]}, "layer_types"),
    ({"rope_parameters": {"hybrid": {"rope_theta": 1e6}}}, "rope_parameters"),
    ({"rope_parameters": {"hybrid": {"rope_theta": "x"}, "hybrid_sliding": {"rope_theta": 1e4}}}, "rope_parameters"),
    ({"sliding_window": None}, "sliding_window"),
])
def test_zaya_refuses_bad_configs(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(CASES["zaya-tiny-sliding-biased"], **change))
