"""NVIDIA Nemotron 3 Super / Ultra: ``nemotron_h`` with ``moe_latent_size`` (LatentMoE).

transformers 5.24's NemotronHMoE (models/nemotron_h/modeling_nemotron_h.py): the router (``gate.weight``,
n_routed_experts x hidden; ``e_score_correction_bias`` a buffer) and the shared expert (``shared_experts``: relu² MLP
hidden -> moe_shared_expert_intermediate_size -> hidden) read the token at hidden width; the routed path projects it
into the latent once (``fc1_latent_proj``: Linear(hidden, latent, bias=mlp_bias)), runs the routed experts there
(NemotronHExperts: ``up_proj`` (E, moe_intermediate_size, latent), ``down_proj`` (E, latent, moe_intermediate_size),
non-gated) and projects their weighted sum back (``fc2_latent_proj``: Linear(latent, hidden)).

Oracles: transformers on the meta device (totals; active by counting the modules a token runs: every parameter
but the routed experts', those k / E), FlopCounterMode over transformers' decode step of tiny configs (the Mamba
conventions of tests/test_cache_flops_parity.py's EXPECTED_DIFFERENCES), a hand count of one layer from the module
shapes above, and the BF16 checkpoint's safetensors element count for Super (quoted below). The MTP module
(vLLM's nemotron_h_mtp.py; transformers builds none) is reported apart, as for other families.
"""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, RuntimeUnavailableError
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

# nvidia/NVIDIA-Nemotron-3-Super-120B-A12B (-NVFP4 @ 4f0cf9da) config.json, the shape fields as a public C++ test
# header transcribes it verbatim (its quantization_config left out); the BF16 repository's config is the same shape
SUPER = {
    "model_type": "nemotron_h", "hidden_size": 4096, "num_hidden_layers": 88, "vocab_size": 131072,
    "hybrid_override_pattern": "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME",
    "head_dim": 128, "intermediate_size": 2688, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64,
    "mamba_hidden_act": "silu", "mamba_num_heads": 128, "mamba_proj_bias": False, "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 262144, "mlp_bias": False, "mlp_hidden_act": "relu2", "moe_intermediate_size": 2688,
    "moe_latent_size": 1024, "moe_shared_expert_intermediate_size": 5376, "moe_shared_expert_overlap": False,
    "mtp_hybrid_override_pattern": "*E", "n_group": 1, "n_groups": 8, "n_routed_experts": 512, "n_shared_experts": 1,
    "norm_eps": 1e-05, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts_per_tok": 22,
    "num_key_value_heads": 2, "num_nextn_predict_layers": 1, "partial_rotary_factor": 1.0, "rope_theta": 10000,
    "routed_scaling_factor": 5.0, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128, "expand": 2,
    "tie_word_embeddings": False, "topk_group": 1, "use_bias": False, "use_conv_bias": True, "dtype": "bfloat16",
}

#: Super's BF16 checkpoint as its safetensors headers count it (a public parameter-catalog test quoting
#: huggingface.co/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16): 123,611,012,096 BF16 elements, of which the MTP
#: layers (transformers neither builds nor loads them) are 2,942,324,736; the F32 e_score_correction_bias buffers
#: are not parameters
SUPER_BF16_ELEMENTS, SUPER_MTP = 123_611_012_096, 2_942_324_736


def _ultra_layers() -> list[str]:
    """Ultra's 108 ``layers_block_type`` entries: attention at the 12 indices a public test of the released config
    lists, the others alternating mamba, moe (48 each; the count, not the order, sets the parameters)."""
    attention = {7, 14, 23, 32, 39, 48, 57, 64, 73, 82, 89, 98}
    out, toggle = [], 0
    for i in range(108):
        if i in attention:
            out.append("attention")
        else:
            out.append(("mamba", "moe")[toggle])
            toggle ^= 1
    return out


# nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16: the fields miles' scripts/models/nemotron-3-ultra-550b-a55b.sh and
# an Aurora deployment note quote from its config.json (108 layers = 48 mamba + 48 moe + 12 attention, hidden 8192,
# 64 heads / 2 KV of 128, MLP and expert 5120, 512 experts top-22, shared 10240, latent 2048, Mamba 256 heads in
# 8 groups, state 128, kernel 4, vocabulary 131,072, untied); mamba_head_dim 64 (d_inner = 2 x hidden, as Super)
# is not quoted there. Not a verbatim file: rebuilt from those fields.
ULTRA = dict(SUPER, hidden_size=8192, num_hidden_layers=108, num_attention_heads=64, intermediate_size=5120,
             moe_intermediate_size=5120, moe_shared_expert_intermediate_size=10240, moe_latent_size=2048,
             mamba_num_heads=256, mtp_layers_block_type=["attention", "moe"])
del ULTRA["hybrid_override_pattern"], ULTRA["mtp_hybrid_override_pattern"]
ULTRA["layers_block_type"] = _ultra_layers()

#: tiny configs for transformers' decode step: latent (24) apart from hidden (64), expert (40) and shared (48)
#: widths so a width read at the wrong place changes the count
TINY = {"model_type": "nemotron_h", "vocab_size": 128, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 56, "n_routed_experts": 6, "n_shared_experts": 1,
        "num_experts_per_tok": 2, "moe_intermediate_size": 40, "moe_shared_expert_intermediate_size": 48,
        "moe_latent_size": 24, "mlp_hidden_act": "relu2", "n_group": 1, "topk_group": 1,
        "mamba_num_heads": 8, "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 8, "conv_kernel": 4,
        "chunk_size": 32, "tie_word_embeddings": False, "hybrid_override_pattern": "*E-E", "num_hidden_layers": 4}
TINY_MAMBA = dict(TINY, hybrid_override_pattern="ME*E-", num_hidden_layers=5)

BF16 = get_dtype("bf16")


def _hf_total_and_active(cfg: dict) -> tuple[int, int]:
    """transformers on meta: unique parameters, and those a token runs (every routed expert tensor k / E)."""
    from tests.oracle import hf_model

    e, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    seen, total, active, routed = set(), 0, 0, 0
    for name, p in hf_model(cfg).named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if ".mixer.experts." in name:
            assert p.dim() == 3 and p.shape[0] == e and cfg["moe_latent_size"] in p.shape[1:]
            active += p.numel() // e * k
            routed += 1
        else:
            active += p.numel()
    assert routed == 2 * sum(1 for t in _types(cfg) if t == "moe")
    return total, active


def _types(cfg: dict) -> list[str]:
    if "layers_block_type" in cfg:
        return cfg["layers_block_type"]
    return [{"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}[c] for c in cfg["hybrid_override_pattern"]]


@pytest.mark.parametrize("name,cfg", [("super", SUPER), ("ultra", ULTRA)])
def test_real_configs_total_and_active_equal_transformers(name, cfg):
    """Super 120,668,687,360 / Ultra 549,308,968,960 (the cards: 120B-A12B, 550B-A55B), equal to transformers."""
    p = count_params(parse_config(cfg))
    assert (p.total, p.active) == _hf_total_and_active(cfg)


def test_super_total_equals_the_bf16_checkpoint_less_mtp():
    """The BF16 safetensors' elements less the MTP layers (quoted above) are exactly our total; the bf16 weight
    bytes are two per parameter."""
    spec = parse_config(SUPER)
    assert count_params(spec).total == SUPER_BF16_ELEMENTS - SUPER_MTP
    fmt, _ = weight_format(spec, "bf16")
    assert fmt.bytes_of(spec.tensors()) == 2 * (SUPER_BF16_ELEMENTS - SUPER_MTP)


def test_mtp_reported_apart_equals_the_checkpoint():
    """Super's MTP step ("*E", vLLM's nemotron_h_mtp.py): an attention block, a latent MoE block, enorm / hnorm /
    final_layernorm and eh_proj (2h -> h): exactly the checkpoint's MTP elements; not in the total. Ultra's
    (["attention", "moe"]) with its total: 1,121 GB in bf16, the BF16 repository's size (an Aurora deployment
    note; decimal GB, rounded)."""
    p = count_params(parse_config(SUPER))
    assert p.mtp == SUPER_MTP
    h = 4096
    attention = h + h * 32 * 128 + 2 * h * 2 * 128 + 32 * 128 * h
    moe = h + 512 * h + 2 * 1024 * h + 512 * 2 * 2688 * 1024 + 2 * h * 5376
    assert p.mtp == attention + moe + 3 * h + 2 * h * h
    u = count_params(parse_config(ULTRA))
    assert round((u.total + u.mtp) * 2 / 1e9) == 1121
    assert count_params(parse_config(dict(SUPER, num_nextn_predict_layers=0))).mtp == 0
    # the list form and transformers' default ([attention, moe]) read the same as Super's pattern
    listed = dict(SUPER, mtp_layers_block_type=["full_attention", "moe"])
    del listed["mtp_hybrid_override_pattern"]
    assert count_params(parse_config(listed)).mtp == SUPER_MTP
    del listed["mtp_layers_block_type"]
    assert count_params(parse_config(listed)).mtp == SUPER_MTP
    with pytest.raises(ConfigError, match="mtp_hybrid_override_pattern"):
        parse_config(dict(SUPER, mtp_hybrid_override_pattern="*X"))


@pytest.mark.parametrize("cfg", [SUPER, ULTRA])
def test_one_latent_moe_layer_by_hand(cfg):
    """One E layer from the module shapes (NemotronHMoE): norm, router E x h, fc1 l x h, experts E x 2 x I x l,
    fc2 h x l, shared 2 x h x S; a token runs all of it but E - k experts."""
    h, l, e, k = cfg["hidden_size"], cfg["moe_latent_size"], cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    i, s = cfg["moe_intermediate_size"], cfg["moe_shared_expert_intermediate_size"]
    rest = h + e * h + 2 * l * h + 2 * h * s
    spec = parse_config(cfg)
    per = {pl.kind: pl for pl in count_params(spec).per_layer}
    moe = next(pl for kind, pl in per.items() if "moe" in kind)
    assert moe.count == _types(cfg).count("moe")
    assert (moe.total, moe.active) == (rest + e * 2 * i * l, rest + k * 2 * i * l)


def test_trace_runs_the_experts_in_the_latent():
    """One decode token of a Super E layer: fc1 2·h·l, the routed experts 2·k·2·I·l, fc2 2·l·h (both replicated
    across tensor-parallel ranks, as vLLM's ReplicatedLinear), the shared expert 2·2·h·S, the router 2·h·E."""
    spec = parse_config(SUPER)
    fmt, _ = weight_format(spec, "bf16")
    ops = [o for o in step_ops(spec, fmt, BF16, batch=1, new_tokens=1, cached_tokens=100) if o.layer == 1]
    by = {o.name: o for o in ops}
    h, l, i, s, e, k = 4096, 1024, 2688, 5376, 512, 22
    assert by["fc1_latent_proj"].flops == by["fc2_latent_proj"].flops == 2 * h * l
    assert by["fc1_latent_proj"].parallel.name == by["fc2_latent_proj"].parallel.name == "REPLICATED"
    assert by[f"experts (top-{k} of {e})"].flops == 2 * k * 2 * i * l
    assert by["router"].flops == 2 * h * e
    assert sum(o.flops for o in ops if o.name.startswith("shared_expert.")) == 2 * 2 * h * s
    names = [o.name for o in ops]
    assert names.index("fc1_latent_proj") < names.index(f"experts (top-{k} of {e})") < names.index("fc2_latent_proj")


@pytest.mark.parametrize("cfg", [TINY, TINY_MAMBA], ids=["attention+moe+mlp", "with-mamba"])
def test_tiny_decode_flops_and_kv_equal_transformers(cfg):
    """After a 5-token prefill (fp32), transformers' cache holds our K/V bytes per token in each layer, and
    FlopCounterMode over its eager decode step equals the trace's FLOPs plus, with a Mamba-2 layer, the known torch
    decode differences (tests/test_cache_flops_parity.py EXPECTED_DIFFERENCES: _conv_twice, _scan_half)."""
    from planner.analysis.kv import kv_cache
    from tests.test_cache_flops_parity import _conv_twice, _scan_half
    from tests.test_families import _hf_decode_flops, _hf_prefill

    n, fp32 = 5, get_dtype("fp32")
    spec = parse_config(cfg)
    torch, model, cache = _hf_prefill(cfg, n)
    with torch.no_grad():
        kv = [0 if getattr(lc, "keys", None) is None else (lc.keys.numel() + lc.values.numel()) * 4 // n
              for lc in cache.layers]
        hf = sum(_hf_decode_flops(torch, model, cfg["vocab_size"], cache=cache).values())
    assert kv == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers]
    assert sum(kv) == 2 * 2 * 16 * 4  # the one attention layer: 2 KV heads of 16, K and V, fp32
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    assert any(o.name == "fc1_latent_proj" for o in ops)
    assert hf == sum(o.flops for o in ops) + _conv_twice(spec, ops) + _scan_half(spec, ops)


def test_tiny_totals_equal_transformers():
    for cfg in (TINY, TINY_MAMBA):
        p = count_params(parse_config(cfg))
        assert (p.total, p.active) == _hf_total_and_active(cfg)


def test_latent_width_is_checked():
    for bad in (0, -4, "wide"):
        with pytest.raises(ConfigError, match="moe_latent_size"):
            parse_config(dict(TINY, moe_latent_size=bad))
    # null: the plain MoE at hidden width (Nemotron 3 Nano), no latent projections
    plain = parse_config(dict(TINY, moe_latent_size=None))
    assert not any("latent" in t.name for t in plain.tensors())


def test_analyze_names_the_latent(tmp_path):
    from tests.clirun import run

    path = tmp_path / "config.json"
    path.write_text(json.dumps(SUPER))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == SUPER_BF16_ELEMENTS - SUPER_MTP
    assert "in latent 1024" in r.out or "in latent 1024" in json.dumps(r.json)


def test_verify_refuses_the_latent_moe_with_one_error_line(tmp_path):
    """The torch runtime has no latent projections: building the decoder refuses, and ``planner verify`` prints
    one Error line (an attention + MoE config, so the refusal is the MoE's, not the Mamba layers')."""
    from planner.runtime.model import check_supported
    from tests.clirun import run

    with pytest.raises(RuntimeUnavailableError, match="latent-projected MoE"):
        check_supported(parse_config(TINY))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    run("verify", str(path), "--device", "cpu", "--steps", "1").assert_error("verify does not support latent-projected MoE")


def test_latent_projections_are_whole_on_every_tensor_parallel_rank():
    """vLLM builds fc1_latent_proj / fc2_latent_proj as ReplicatedLinear: at --tp 8 each GPU holds them whole, the
    experts split 8 ways. The rank's parameters: (total - latent projections) / 8 + latent projections, exactly,
    as the other replicated tensors (norms, routers, Mamba's per-head vectors) are counted the same way."""
    from planner.analysis.parallel import replicated_tensor, shard_params, tp_plan

    spec = parse_config(SUPER)
    tensors = spec.tensors()
    latent = [t for t in tensors if t.name.rsplit(".", 2)[-2] in ("fc1_latent_proj", "fc2_latent_proj")]
    n_moe = sum(1 for c in _types(SUPER) if c == "moe")
    assert len(latent) == 2 * n_moe and all(replicated_tensor(t) for t in latent)
    latent_params = sum(t.numel for t in latent)
    assert latent_params == n_moe * 2 * SUPER["hidden_size"] * SUPER["moe_latent_size"]
    plan = tp_plan(spec, 8)
    with_latent = shard_params(spec, plan)
    # the same spec with those two tensors counted as split: the rank holds 7/8 of them less
    others = shard_params(spec, plan, [t for t in tensors if t not in latent])
    assert with_latent - others == latent_params
