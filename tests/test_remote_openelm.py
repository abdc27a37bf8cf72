"""Apple OpenELM (``openelm``, remote code): counted against a hand count from the hub's configuration_openelm.py /
modeling_openelm.py shapes (numpy's linspace and round, as ``OpenELMConfig.__post_init__`` runs them) and the
published sizes (272M / 457M / 1.08B / 3.04B on the hub, the paper's 0.27 / 0.45 / 1.08 / 3.04 B)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError
from planner.analysis.families.openelm import _linspace_round2
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run, verify_self_checks

#: mlx-community/OpenELM-1_1B-Instruct-4bit's config.json, field for field (its "quantization" entry dropped): the
#: hub's apple/OpenELM-1_1B config as saved by OpenELMConfig (per-layer lists written out)
OPENELM_1_1B = {
    "activation_fn_name": "swish", "architectures": ["OpenELMForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "ffn_dim_divisor": 256,
    "ffn_multipliers": [0.5, 0.63, 0.76, 0.89, 1.02, 1.15, 1.28, 1.41, 1.54, 1.67, 1.8, 1.93, 2.06, 2.19, 2.31, 2.44,
                        2.57, 2.7, 2.83, 2.96, 3.09, 3.22, 3.35, 3.48, 3.61, 3.74, 3.87, 4.0],
    "ffn_with_glu": True, "head_dim": 64, "initializer_range": 0.02, "max_context_length": 2048, "model_dim": 2048,
    "model_type": "openelm", "normalization_layer_name": "rms_norm", "normalize_qk_projections": True,
    "num_gqa_groups": 4,
    "num_kv_heads": [4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8],
    "num_query_heads": [16, 16, 16, 20, 20, 20, 20, 20, 20, 20, 24, 24, 24, 24, 24, 24, 24, 24, 28, 28, 28, 28, 28,
                        28, 32, 32, 32, 32],
    "num_transformer_layers": 28, "qkv_multipliers": [0.5, 1.0], "rope_freq_constant": 10000,
    "rope_max_length": 4096, "share_input_output_layers": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.39.3", "use_cache": True, "vocab_size": 32000,
}

#: configuration_openelm.OpenELM_CONFIGS (the hub's presets the checkpoints were built from), as config.json fields
PRESETS = {
    "270M": dict(num_transformer_layers=16, model_dim=1280, head_dim=64),
    "450M": dict(num_transformer_layers=20, model_dim=1536, head_dim=64),
    "1_1B": dict(num_transformer_layers=28, model_dim=2048, head_dim=64),
    "3B": dict(num_transformer_layers=36, model_dim=3072, head_dim=128),
}
COMMON = dict(model_type="openelm", vocab_size=32000, num_gqa_groups=4, normalize_qk_projections=True,
              share_input_output_layers=True, ffn_multipliers=[0.5, 4.0], qkv_multipliers=[0.5, 1.0],
              ffn_dim_divisor=256, activation_fn_name="swish", ffn_with_glu=True)

#: exact totals (hand count below), the published rounding each matches, KV bytes per token in bf16
EXPECTED = {
    "270M": (271_527_168, (272, 1e6, 0), 16_128),
    "450M": (457_179_136, (457, 1e6, 0), 23_296),
    "1_1B": (1_079_891_456, (1.08, 1e9, 2), 43_264),
    "3B": (3_036_647_424, (3.04, 1e9, 2), 83_968),
}


def _make_divisible(v, divisor):
    """configuration_openelm.make_divisible, copied."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _hand_count(cfg: dict) -> tuple[int, int]:
    """Total parameters and bf16 KV bytes per token from modeling_openelm.py's module shapes, the per-layer lists
    computed as OpenELMConfig.__post_init__ does (numpy linspace, round(v, 2))."""
    n, d, hd, g = cfg["num_transformer_layers"], cfg["model_dim"], cfg["head_dim"], cfg["num_gqa_groups"]
    qm = [round(v, 2) for v in np.linspace(*cfg["qkv_multipliers"], num=n, dtype=float)]
    fm = cfg["ffn_multipliers"]
    if len(fm) == 2:
        fm = [round(v, 2) for v in np.linspace(*fm, num=n, dtype=float)]
    total = cfg["vocab_size"] * d + d  # token_embeddings (shared with the head) + final norm
    kv_bytes = 0
    for m, f in zip(qm, fm):
        q = _make_divisible(d * m, hd * g) // hd
        kv = q // g
        width = _make_divisible(f * d, cfg["ffn_dim_divisor"])
        total += d * (q + 2 * kv) * hd  # qkv_proj
        total += 2 * hd  # q_norm, k_norm
        total += q * hd * d  # out_proj
        total += d * 2 * width + width * d  # proj_1 (gate; up), proj_2
        total += 2 * d  # attn_norm, ffn_norm
        kv_bytes += 2 * kv * hd * 2  # K and V, bf16
    return total, kv_bytes


def _kv_bf16(spec) -> int:
    bf16 = weight_format(spec, "bf16")[0].act
    return kv_cache(spec, bf16, bf16).bytes_per_token


@pytest.mark.parametrize("name", list(PRESETS))
def test_openelm_checkpoints_match_hand_count_and_published(name):
    cfg = dict(COMMON, **PRESETS[name])
    total, published, kv = EXPECTED[name]
    assert _hand_count(cfg) == (total, kv)
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.total == p.active == total
    assert _kv_bf16(spec) == kv
    value, scale, digits = published  # the hub's 272M / 457M / 1.08B / 3.04B
    assert round(total / scale, digits) == value


def test_openelm_real_saved_config_equals_preset():
    """The saved config (per-layer ffn_multipliers written out, stale head lists ignored) reads as its preset."""
    spec = parse_config(OPENELM_1_1B)
    assert count_params(spec).total == 1_079_891_456
    assert [layer.mixer.num_attention_heads for layer in spec.layers] == OPENELM_1_1B["num_query_heads"]
    assert [layer.mixer.num_key_value_heads for layer in spec.layers] == OPENELM_1_1B["num_kv_heads"]
    # __post_init__ recomputes the heads from qkv_multipliers whatever the saved lists say
    stale = dict(OPENELM_1_1B, num_query_heads=[8] * 28, num_kv_heads=[2] * 28)
    assert count_params(parse_config(stale)).total == 1_079_891_456


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 20, 28, 36, 50, 80, 96, 128])
@pytest.mark.parametrize("lo,hi", [(0.5, 4.0), (0.5, 1.0), (0.25, 3.3), (1.0, 1.0), (0.1, 7.77)])
def test_linspace_round_is_numpys(n, lo, hi):
    assert _linspace_round2(lo, hi, n) == [float(round(v, 2)) for v in np.linspace(lo, hi, num=n, dtype=float)]


def test_openelm_uniform_and_no_qk_norm():
    """Number multipliers: every layer alike; no q/k norms without normalize_qk_projections; plain FFN."""
    cfg = dict(model_type="openelm", vocab_size=100, model_dim=64, head_dim=16, num_transformer_layers=3,
               num_gqa_groups=2, qkv_multipliers=1.0, ffn_multipliers=2.0, ffn_dim_divisor=32,
               share_input_output_layers=True, ffn_with_glu=False)
    # q width make_divisible(64, 32) = 64: 4 heads, 2 KV; FFN make_divisible(128, 32) = 128, proj_1 128 x 64
    layer = 64 * (4 + 4) * 16 + 64 * 64 + 64 * 128 + 128 * 64 + 2 * 64
    assert count_params(parse_config(cfg)).total == 100 * 64 + 64 + 3 * layer


@pytest.mark.parametrize("change,match", [
    (dict(share_input_output_layers=False), "share_input_output_layers"),
    (dict(qkv_multipliers=[0.5, 0.75, 1.0]), "qkv_multipliers"),
    (dict(ffn_multipliers=[0.5, 1.0, 2.0]), "ffn_multipliers"),
    (dict(head_dim=48), "head_dim"),
    (dict(normalization_layer_name="layer_norm"), "normalization_layer_name"),
])
def test_openelm_bad_configs(change, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(dict(OPENELM_1_1B, **change))


def test_openelm_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OPENELM_1_1B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 1_079_891_456
    assert r.json["kv_cache"]["bytes_per_token"] == 43_264
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(OPENELM_1_1B, share_input_output_layers=False)))
    run("analyze", str(bad)).assert_error("share_input_output_layers")


def test_openelm_verifies(tmp_path):
    """verify builds the decoder from the spec (per-layer heads and widths, fused qkv and gate_up, q/k norms): its
    exact self-checks pass."""
    tiny = dict(COMMON, vocab_size=128, model_dim=64, head_dim=8, num_transformer_layers=3, num_gqa_groups=2,
                ffn_dim_divisor=16)
    verify_self_checks(tmp_path, tiny, name="openelm")


def _hub_forward(torch, w: dict, cfg: dict, heads: list[tuple[int, int]], tokens):
    """modeling_openelm.py's forward, written out: qkv_proj split by heads, q/k RMSNorms, RoPE (rotate_half over
    the whole head), GQA by repeat_interleave, causal SDPA, out_proj; GLU FFN (act(first half) x second half);
    the head is the embedding."""
    import torch.nn.functional as F

    hd, eps = cfg["head_dim"], 1e-6

    def rms(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    B, T = tokens.shape
    inv = 1.0 / (cfg["rope_freq_constant"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    theta = torch.einsum("i,j->ij", torch.arange(T, dtype=torch.float32), inv)
    emb = torch.cat((theta, theta), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    x = w["transformer.token_embeddings.weight"][tokens]
    for i, (q_h, k_h) in enumerate(heads):
        p = f"transformer.layers.{i}."
        h = rms(x, w[p + "attn_norm.weight"])
        qkv = (h @ w[p + "attn.qkv_proj.weight"].T).reshape(B, T, q_h + 2 * k_h, hd).transpose(1, 2)
        q, k, v = qkv.split([q_h, k_h, k_h], dim=1)
        q, k = rms(q, w[p + "attn.q_norm.weight"]), rms(k, w[p + "attn.k_norm.weight"])
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(q_h // k_h, dim=1), v.repeat_interleave(q_h // k_h, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, q_h * hd)
        x = x + a @ w[p + "attn.out_proj.weight"].T
        h = rms(x, w[p + "ffn_norm.weight"])
        y1, y2 = (h @ w[p + "ffn.proj_1.weight"].T).chunk(2, dim=-1)
        x = x + (F.silu(y1) * y2) @ w[p + "ffn.proj_2.weight"].T
    x = rms(x, w["transformer.norm.weight"])
    return x @ w["transformer.token_embeddings.weight"].T


def test_openelm_runtime_logits_equal_the_hub_forward():
    """Hub-named random weights load through OPENELM_LAYOUT; our decoder's logits equal modeling_openelm.py's
    forward (written out above) at 1e-4 in fp32."""
    torch = pytest.importorskip("torch")
    from planner.runtime.load import load_tensors
    from planner.runtime.model import build_decoder

    cfg = dict(COMMON, vocab_size=128, model_dim=64, head_dim=8, num_transformer_layers=3, num_gqa_groups=2,
               ffn_dim_divisor=16, rope_freq_constant=10000)
    spec = parse_config(cfg)
    heads = [(layer.mixer.num_attention_heads, layer.mixer.num_key_value_heads) for layer in spec.layers]
    assert heads == [(4, 2), (6, 3), (8, 4)]  # make_divisible(64 x [0.5, 0.75, 1.0], 16) / 8
    widths = [layer.ffn.intermediate_size for layer in spec.layers]
    assert widths == [32, 144, 256]  # make_divisible(64 x [0.5, 2.25, 4.0], 16)
    g = torch.Generator().manual_seed(0)
    d, hd = 64, 8
    w = {"transformer.token_embeddings.weight": torch.randn(128, d, generator=g) * 0.5,
         "transformer.norm.weight": 1 + 0.1 * torch.randn(d, generator=g)}
    for i, ((q_h, k_h), width) in enumerate(zip(heads, widths)):
        p = f"transformer.layers.{i}."
        w[p + "attn_norm.weight"] = 1 + 0.1 * torch.randn(d, generator=g)
        w[p + "ffn_norm.weight"] = 1 + 0.1 * torch.randn(d, generator=g)
        w[p + "attn.q_norm.weight"] = 1 + 0.1 * torch.randn(hd, generator=g)
        w[p + "attn.k_norm.weight"] = 1 + 0.1 * torch.randn(hd, generator=g)
        w[p + "attn.qkv_proj.weight"] = torch.randn((q_h + 2 * k_h) * hd, d, generator=g) * d ** -0.5
        w[p + "attn.out_proj.weight"] = torch.randn(d, q_h * hd, generator=g) * (q_h * hd) ** -0.5
        w[p + "ffn.proj_1.weight"] = torch.randn(2 * width, d, generator=g) * d ** -0.5
        w[p + "ffn.proj_2.weight"] = torch.randn(d, width, generator=g) * width ** -0.5
    ours = build_decoder(spec, seed=None)
    report = load_tensors(ours, list(w.items()))
    assert report.missing == [] and report.ignored == []
    tokens = torch.randint(0, 128, (2, 11), generator=g)
    with torch.no_grad():
        ref = _hub_forward(torch, w, cfg, heads, tokens)
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=0)
