"""PLaMo-2 (``plamo2``, Preferred Networks; remote code, no transformers oracle). Totals are checked against hand counts
written from vLLM's weight shapes (vllm/model_executor/models/plamo2.py: every parameter its load_weights fills) and
against the published sizes (plamo-2-1b ~1.29B, plamo-2-8b ~9.1B); the KV cache and the per-sequence Mamba state
against vLLM's shapes (``Plamo2MambaMixer.get_state_shape``, the hub's ``PlamoCache``). Before this family was
registered, the generic Llama fallback read plamo-2-1b as 1,152,780,288 parameters (138,661,632 short) with 16 full
attention layers."""

from __future__ import annotations

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

BF16, FP32 = get_dtype("bf16"), get_dtype("fp32")

# pfnet/plamo-2-1b config.json's shape fields
PLAMO2_1B = {"architectures": ["Plamo2ForCausalLM"], "model_type": "plamo2", "hidden_size": 2048,
             "num_hidden_layers": 16, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "num_attention_heads": 16,
             "num_key_value_heads": 1, "hidden_size_per_head": 128, "max_position_embeddings": 10485760,
             "attention_window_size": 2048, "full_attention_idx": [], "mamba_d_state": 64, "mamba_d_conv": 4,
             "mamba_num_heads": 32, "mamba_step": 2, "mamba_chunk_size": 256, "mamba_enabled": True,
             "intermediate_size": 8192, "vocab_size": 100000}
# pfnet/plamo-2-8b: Plamo2Config's defaults (hidden 4096, 32 layers, 32 heads / 4 KV heads, 64 Mamba heads) with
# intermediate_size 16384 and the 100k vocabulary (the shapes whose total gives the published 9.1B)
PLAMO2_8B = {**PLAMO2_1B, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 4, "mamba_num_heads": 64, "intermediate_size": 16384}
TINY = {"model_type": "plamo2", "hidden_size": 64, "num_hidden_layers": 5, "num_attention_heads": 4,
        "num_key_value_heads": 2, "hidden_size_per_head": 16, "attention_window_size": 32, "mamba_d_state": 8,
        "mamba_d_conv": 4, "mamba_num_heads": 4, "mamba_step": 2, "intermediate_size": 128, "vocab_size": 256,
        "tie_word_embeddings": False}


def vllm_is_mamba(c: dict, i: int) -> bool:
    """plamo2.py's is_mamba, written out (the hub's returns False for every layer when mamba_enabled is false)."""
    step, n = c.get("mamba_step", 2), c["num_hidden_layers"]
    if not c.get("mamba_enabled", True):
        return False
    if n <= step // 2:
        return i != n - 1
    return (i % step) != (step // 2)


def plamo2_hand(c: dict) -> int:
    """plamo2.py: embed (V, D); per layer pre_mixer / post_mixer / pre_mlp / post_mlp RMSNorms (D each), DenseMLP
    gate_up (D -> 2I) and down (I -> D), and a mixer: Plamo2MambaMixer (in_proj D -> 2·d_inner, conv1d
    (d_inner, 1, d_conv) no bias, bcdt_proj d_inner -> dt_dim + 2N, dt_proj dt_dim -> heads, A / D / dt_bias per
    head, dt_norm (dt_dim), B_norm and C_norm (N), out_proj d_inner -> D; d_inner = mamba heads x head size,
    dt_dim = max(64, D // 16)) or Plamo2AttentionMixer (qkv_proj D -> (H + 2K)·d, o_proj H·d -> D, q_norm weight
    (H, d), k_norm weight (K, d)); the final norm; lm_head (V, D) unless tied."""
    D, L, V, I = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    H, K, d = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size_per_head"]
    mh, N, kconv = c["mamba_num_heads"], c["mamba_d_state"], c["mamba_d_conv"]
    inner, dt = mh * d, max(64, D // 16)
    mamba = D * 2 * inner + inner * kconv + inner * (dt + 2 * N) + dt * mh + 3 * mh + dt + 2 * N + inner * D
    attn = D * (H + 2 * K) * d + H * d * D + H * d + K * d
    common = 4 * D + 3 * D * I
    layers = sum(common + (mamba if vllm_is_mamba(c, i) else attn) for i in range(L))
    return V * D + layers + D + (0 if c.get("tie_word_embeddings", True) else V * D)


@pytest.mark.parametrize("cfg,published", [(PLAMO2_1B, 1.29e9), (PLAMO2_8B, 9.1e9)])
def test_total_equals_vllm_hand_count_and_published_size(cfg, published):
    total = count_params(parse_config(cfg)).total
    assert total == plamo2_hand(cfg)
    assert abs(total / published - 1) < 0.01
    assert analyze(parse_config(cfg), Options()).params.active == total  # dense: every parameter is active


def test_plamo2_1b_exact_numbers():
    spec = parse_config(PLAMO2_1B)
    assert count_params(spec).total == 1_291_441_920
    assert [layer.mixer.kind.value for layer in spec.layers] == ["mamba", "attention"] * 8
    assert not spec.generic


@pytest.mark.parametrize("layers,step,enabled", [(5, 2, True), (7, 3, True), (9, 4, True), (1, 2, True),
                                                  (2, 5, True), (4, 2, False)])
def test_layer_pattern_and_untied_tiny_counts(layers, step, enabled):
    cfg = {**TINY, "num_hidden_layers": layers, "mamba_step": step, "mamba_enabled": enabled}
    spec = parse_config(cfg)
    want = [vllm_is_mamba(cfg, i) for i in range(layers)]
    assert [layer.mixer.kind.value == "mamba" for layer in spec.layers] == want
    assert count_params(spec).total == plamo2_hand(cfg)


@pytest.mark.parametrize("state_dtype", [BF16, FP32])
def test_kv_and_state_match_vllm_shapes(state_dtype):
    """Attention layers cache K and V (K heads x head size each) of the last attention_window_size tokens; Mamba
    layers keep vLLM's mamba2_state_shape with n_groups=0: conv (d_inner, d_conv - 1), ssm (heads, head size, N)."""
    c = PLAMO2_1B
    cache = kv_cache(parse_config(c), BF16, state_dtype)
    d, mh, N = c["hidden_size_per_head"], c["mamba_num_heads"], c["mamba_d_state"]
    for i, lk in enumerate(cache.layers):
        if vllm_is_mamba(c, i):
            assert (lk.bytes_per_token, lk.window) == (0, None)
            assert lk.state_bytes == (mh * d * (c["mamba_d_conv"] - 1) + mh * d * N) * state_dtype.bits // 8
        else:
            assert lk.bytes_per_token == 2 * c["num_key_value_heads"] * d * 2
            assert (lk.window, lk.state_bytes) == (c["attention_window_size"], 0)
    assert cache.bytes_per_sequence(8192) == 8 * 2 * 128 * 2 * 2048  # capped at the window
    full = parse_config({**c, "full_attention_idx": [1]})
    assert [lk.window for lk in kv_cache(full, BF16, BF16).layers][:4] == [None, None, None, 2048]


def test_decode_matmul_flops_are_twice_the_linear_weights():
    """One decode token: every projection of a Mamba and an attention layer is 2 FLOPs per weight."""
    spec = parse_config(TINY)
    ops = step_ops(spec, weight_format(spec, "bf16")[0], BF16, batch=1, new_tokens=1, cached_tokens=7)
    D, d, mh, N, I = 64, 16, 4, 8, 128
    inner, dt = mh * d, 64
    mamba_mm = D * 2 * inner + inner * (dt + 2 * N) + dt * mh + inner * D + 3 * D * I
    attn_mm = D * (4 + 4) * d + 4 * d * D + 3 * D * I
    for layer, want in ((0, mamba_mm), (1, attn_mm)):
        got = sum(o.flops for o in ops if o.layer == layer and o.kind.value == "matmul")
        assert got == 2 * want, layer


def test_verify_refuses_clearly(tmp_path):
    from .test_runtime import assert_verify_refuses

    assert_verify_refuses(tmp_path, TINY, "verify does not support PLaMo-2 Mamba layers yet")
    assert_verify_refuses(tmp_path, {**TINY, "mamba_enabled": False},
                          "verify does not support RMSNorms with per-norm weight offsets yet")


@pytest.mark.parametrize("patch,field", [({"mamba_step": 1}, "mamba_step"),
                                          ({"num_key_value_heads": 3}, "num_key_value_heads"),
                                          ({"hidden_size_per_head": 0}, "hidden_size_per_head"),
                                          ({"mamba_num_heads": "x"}, "mamba_num_heads"),
                                          ({"full_attention_idx": "all"}, "full_attention_idx"),
                                          ({"mamba_enabled": "yes"}, "mamba_enabled")])
def test_bad_configs_are_config_errors(patch, field):
    with pytest.raises(ConfigError, match=field):
        parse_config({**TINY, **patch})


# ---- PLaMo-1 (``plamo``) -------------------------------------------------------------------------

# pfnet/plamo-13b config.json's shape fields (its num_key_value_heads, 40, is not what the hub's code builds)
PLAMO_13B = {"architectures": ["PlamoForCausalLM"], "model_type": "plamo", "hidden_size": 5120,
             "intermediate_size": 16640, "max_position_embeddings": 4096, "n_shared_head": 8,
             "num_attention_heads": 40, "num_hidden_layers": 40, "num_key_value_heads": 40, "rms_norm_eps": 1e-6,
             "tie_word_embeddings": False, "vocab_size": 50432}


def plamo_hand(c: dict) -> int:
    """The hub's modeling_plamo.py (plamo-13b): embed (V, D); per layer q_proj (D -> H·d), k_proj and v_proj
    (D -> ceil(H / n_shared_head)·d each), o_proj, gate / up (D -> I) and down (I -> D), ONE RMSNorm (the parallel
    block's ``norm``); the final norm; an untied lm_head (V, D). d = D / H."""
    D, L, V, I, H = (c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"],
                     c["num_attention_heads"])
    d, K = D // H, -(-H // c["n_shared_head"])
    layer = 2 * D * H * d + 2 * D * K * d + 3 * D * I + D
    return V * D + L * layer + D + (0 if c.get("tie_word_embeddings") else V * D)


def test_plamo1_total_kv_and_parallel_block():
    spec = parse_config(PLAMO_13B)
    total = count_params(spec).total
    assert total == plamo_hand(PLAMO_13B) == 13_099_545_600  # published: 13.1B
    # the generic Llama reading (num_key_value_heads 40, two norms a layer) had 14,934,758,400
    generic = parse_config({**PLAMO_13B, "model_type": "plamo_unregistered"})
    assert generic.generic and count_params(generic).total == 14_934_758_400
    layer = spec.layers[0]
    assert layer.parallel and [n.role for n in layer.norms] == ["pre_mixer"]
    assert layer.mixer.num_key_value_heads == 5
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 40 * 2 * 5 * 128 * 2


def test_plamo1_bad_sharing_is_a_config_error():
    with pytest.raises(ConfigError, match="n_shared_head"):
        parse_config({**PLAMO_13B, "n_shared_head": 3})


def test_plamo1_runtime_holds_the_counted_parameters():
    torch = pytest.importorskip("torch")
    from planner.runtime.model import build_decoder, parameter_count

    tiny = {**PLAMO_13B, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8, "n_shared_head": 4,
            "intermediate_size": 96, "vocab_size": 128}
    spec = parse_config(tiny)
    model = build_decoder(spec)
    assert parameter_count(model) == count_params(spec).total == plamo_hand(tiny)
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3]]))
    assert torch.isfinite(out if isinstance(out, torch.Tensor) else out[0]).all()
