"""NVIDIA's NAS-pruned Llama models (``nemotron-nas``) and Deci's DeciLM-7B (``deci``): remote-code families
(transformers ships neither), so the oracle here is a hand count from the shapes vLLM's
``vllm/model_executor/models/nemotron_nas.py`` and the checkpoints' ``modeling_decilm.py`` build, the published
configs of Llama-3.3-Nemotron-Super-49B-v1 and Llama-3.1-Nemotron-Ultra-253B-v1 with their published sizes, and, for
the runtime, transformers' Llama with the no-op sub-blocks' output projections zeroed (the same function)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

_ATTN_NULLS = {"num_sink_tokens": None, "sparsify": None, "unshifted_sink": False,
               "use_prefill_window_in_sink_attention": False, "window_length": None}


def _block(group, mult, attn_linear=False, ffn_linear=False) -> dict:
    """One published block_configs entry (every field the released config.json files carry): ``group`` is the
    attention's n_heads_in_group (None: no_op), ``mult`` the FFN's ffn_mult (None: no_op)."""
    attn = dict(_ATTN_NULLS, n_heads_in_group=None if attn_linear else group,
                no_op=group is None and not attn_linear, replace_with_linear=attn_linear)
    ffn = {"ffn_mult": None if ffn_linear else mult, "no_op": mult is None and not ffn_linear,
           "replace_with_linear": ffn_linear, "sparsify": None}
    return {"attention": attn, "ffn": ffn}


def _runs(runs) -> list[dict]:
    return [_block(g, m) for g, m, n in runs for _ in range(n)]


_LLAMA3_TOP = {"architectures": ["DeciLMForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
               "auto_map": {"AutoConfig": "configuration_decilm.DeciLMConfig",
                            "AutoModelForCausalLM": "modeling_decilm.DeciLMForCausalLM"},
               "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
               "initializer_range": 0.02, "intermediate_size": None, "max_position_embeddings": 131072,
               "mlp_bias": False, "model_type": "nemotron-nas", "num_key_value_heads": None, "pretraining_tp": 1,
               "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
               "use_cache": True, "vocab_size": 128256}

#: nvidia/Llama-3_3-Nemotron-Super-49B-v1 config.json, as NeMo copies it (nemo/collections/llm/gpt/model/
#: llama_nemotron_config.py, LLAMA_33_NEMOTRON_SUPER_49B_HETEROGENEOUS_CONFIG): its 80 block_configs run-length
#: encoded as (n_heads_in_group or None for no_op, ffn_mult, consecutive layers), the other fields verbatim
SUPER_49B = dict(_LLAMA3_TOP, hidden_size=8192, num_attention_heads=64, num_hidden_layers=80,
                 rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                 block_configs=_runs([
                     (8, 2.625, 1), (8, 5.25, 5), (None, 2.625, 2), (8, 5.25, 3), (None, 3.28125, 1), (8, 5.25, 30),
                     (None, 1.3125, 1), (None, 2.625, 2), (None, 1.3125, 1), (None, 5.25, 1), (None, 1.3125, 1),
                     (None, 2.625, 1), (None, 1.3125, 3), (8, 5.25, 1), (None, 1.3125, 1), (None, 1.0, 2),
                     (None, 1.3125, 1), (None, 1.0, 3), (None, 1.3125, 2), (None, 0.5, 2), (None, 1.0, 2),
                     (None, 0.5, 2), (None, 1.0, 1), (None, 0.5, 2), (8, 5.25, 9)]))

#: nvidia/Llama-3_1-Nemotron-Ultra-253B-v1 config.json, from the same NeMo file
#: (LLAMA_31_NEMOTRON_ULTRA_253B_HETEROGENEOUS_CONFIG), 162 blocks encoded the same way (None, None: both no-ops)
ULTRA_253B = dict(_LLAMA3_TOP, hidden_size=16384, num_attention_heads=128, num_hidden_layers=162,
                  rope_scaling={"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                  block_configs=_runs([
                      (16, 0.4875, 1), (16, 0.975, 1), (16, 1.4625, 6), (16, 1.95, 1), (None, None, 4), (16, 1.95, 3),
                      (16, 4.875, 2), (None, None, 6), (16, 4.875, 3), (None, None, 5), (16, 4.875, 3),
                      (16, 2.4375, 1), (None, None, 3), (16, 1.95, 3), (None, 1.95, 1), (16, 4.875, 1),
                      (None, 4.875, 1), (None, None, 5), (16, 4.875, 4), (None, None, 5), (16, 4.875, 4),
                      (None, None, 5), (16, 4.875, 4), (None, None, 5), (16, 4.875, 4), (None, None, 5),
                      (16, 4.875, 1), (16, 3.4125, 3), (None, None, 2), (16, 2.925, 1), (16, 2.4375, 3),
                      (None, 2.4375, 2), (16, 2.4375, 1), (None, None, 1), (None, 2.4375, 7), (16, 2.4375, 1),
                      (None, None, 5), (16, 2.925, 1), (16, 4.875, 1), (None, 4.875, 1), (16, 4.875, 1),
                      (None, None, 8), (None, 36.5625, 1), (None, None, 8), (None, 39.0, 1), (None, None, 8),
                      (None, 31.40625, 1), (None, None, 5), (None, 27.5625, 1), (None, 1.95, 1), (16, 1.95, 1),
                      (16, 2.4375, 1), (None, None, 1), (16, 2.4375, 2), (16, 3.4125, 1), (16, 4.875, 4),
                      (16, 2.4375, 1)]))

#: MLP widths, worked by hand from modeling_decilm._ffn_mult_to_intermediate_size (int(2·mult·hidden/3), rounded up
#: to a multiple of 256): 5.25 at 8192 is Llama-3.3-70B's 28672, 4.875 at 16384 Llama-3.1-405B's 53248
WIDTHS = {8192: {0.5: 2816, 1.0: 5632, 1.3125: 7168, 2.625: 14336, 3.28125: 17920, 5.25: 28672},
          16384: {0.4875: 5376, 0.975: 10752, 1.4625: 16128, 1.95: 21504, 2.4375: 26624, 2.925: 32000,
                  3.4125: 37376, 4.875: 53248, 27.5625: 301056, 31.40625: 343040, 36.5625: 399360, 39.0: 425984}}


def hand_count(cfg: dict) -> tuple[int, int]:
    """(parameters, KV elements per token) from vLLM's DeciLMDecoderLayer shapes: a kept attention is
    input_layernorm (h) + q_proj (h·h) + k_proj, v_proj (h · heads/n_heads_in_group · head_dim each) + o_proj (h·h); a
    kept FFN post_attention_layernorm (h) + gate/up/down (3·h·width); a linear replacement its norm (h) + h·h; a
    no-op nothing. Plus embed_tokens, the untied lm_head and the final norm."""
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    d = h // heads
    total, kv = 2 * cfg["vocab_size"] * h + h, 0
    for b in cfg["block_configs"]:
        a, m = b["attention"], b["ffn"]
        if a["replace_with_linear"]:
            total += h + h * h
        elif not a["no_op"]:
            kv_heads = heads // a["n_heads_in_group"]
            total += h + 2 * h * h + 2 * h * kv_heads * d
            kv += 2 * kv_heads * d
        if m["replace_with_linear"]:
            total += h + h * h
        elif not m["no_op"]:
            total += h + 3 * h * WIDTHS[h][m["ffn_mult"]]
    return total, kv


@pytest.mark.parametrize("cfg,published_b,attn_layers", [(SUPER_49B, 49.9, 49), (ULTRA_253B, 253, 64)],
                         ids=["super-49b", "ultra-253b"])
def test_published_configs_equal_the_hand_count_and_the_published_size(cfg, published_b, attn_layers):
    spec = parse_config(cfg)
    total, kv_elems = hand_count(cfg)
    assert count_params(spec).total == total
    # the model cards' sizes: "49.9B" (Super), "253B" (Ultra)
    assert round(total / 1e9, 1 if published_b < 100 else 0) == published_b
    assert sum(layer.mixer is not None for layer in spec.layers) == attn_layers
    bf16 = weight_format(spec, "bf16")[0].act
    # K and V of the kept attention layers only (vLLM's per-attention-layer cache, the remote VariableCache)
    assert kv_cache(spec, bf16, bf16).bytes_per_token == 2 * kv_elems
    if cfg is SUPER_49B:  # 49 attention layers x 8 KV heads x 128 x K,V x 2 bytes
        assert 2 * kv_elems == 200_704


def test_super_and_ultra_totals_are_exact():
    """The exact totals (bf16 safetensors: twice these bytes)."""
    assert count_params(parse_config(SUPER_49B)).total == 49_867_145_216
    assert count_params(parse_config(ULTRA_253B)).total == 253_401_268_224


#: a small config with every kind of block: GQA groups 2, 8 (MQA) and 4, an attention no-op, an FFN no-op, an
#: identity layer, an attention replaced by a linear, an FFN replaced by a linear (its attention a no-op)
TINY = {"model_type": "nemotron-nas", "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 128,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256, "torch_dtype": "float32",
        "block_configs": [_block(2, 2.625), _block(None, 1.3125), _block(8, None), _block(None, None),
                          _block(4, 5.25), _block(None, 1.0, attn_linear=True), _block(None, None, ffn_linear=True)]}
TINY["num_hidden_layers"] = len(TINY["block_configs"])
WIDTHS[64] = {2.625: 256, 1.3125: 256, 5.25: 256, 1.0: 256}  # int(2·mult·64/3) <= 224, rounded up to 256


def test_every_block_kind_counts_by_hand():
    spec = parse_config(TINY)
    total, kv_elems = hand_count(TINY)
    assert count_params(spec).total == total
    # by hand (head_dim 8): q, o 64x64 each, k, v 64 x (8/g) x 8 each: g=2 -> 12288, g=8 -> 9216, g=4 -> 10240;
    # MLPs 3 x 64 x 256 = 49152; linears 64 x 64; a norm (64) before each kept sub-block
    assert total == (2 * 128 * 64 + 64) + (12288 + 64 + 49152 + 64) + (49152 + 64) + (9216 + 64) + 0 \
        + (10240 + 64 + 49152 + 64) + (4096 + 64 + 49152 + 64) + (4096 + 64) == 253_568
    assert kv_elems == 2 * (4 + 1 + 2) * 8
    fp32 = weight_format(spec, "fp32")[0].act
    assert kv_cache(spec, fp32, fp32).bytes_per_token == 4 * kv_elems
    names = {t.name for t in spec.tensors()}
    assert "model.layers.5.self_attn.linear_attn.weight" in names and "model.layers.6.mlp.linear_mlp.weight" in names
    assert not any(n.startswith("model.layers.3.") for n in names)  # the identity layer has no tensors
    assert [layer.kind for layer in spec.layers] == ["full", "mlp-only", "full-only", "identity", "full",
                                                     "linear-attn", "linear-mlp"]


def test_decode_flops_are_two_per_weight_plus_attention():
    """A decode step's matmuls: 2 FLOPs per weight of every matmul (linear replacements included, the embedding
    lookup not); attention: QK^T and PV over the cached keys plus the new one, 4 · heads · head_dim each, on the
    three attention layers only."""
    spec = parse_config(TINY)
    fmt = weight_format(spec, "fp32")[0]
    cached = 100
    ops = step_ops(spec, fmt, fmt.act, cached_tokens=cached)
    weights = sum(t.numel for t in spec.tensors() if t.kind in ("linear", "lm_head"))
    assert sum(o.flops for o in ops if o.kind == "matmul") == 2 * weights
    assert sum(o.flops for o in ops if o.kind == "attention") == 3 * 4 * 8 * 8 * (cached + 1)


@pytest.mark.parametrize("change,error,match", [
    (lambda c: c.pop("block_configs"), ConfigError, "block_configs' is missing"),
    (lambda c: c["block_configs"].pop(), ConfigError, "has 6 blocks but num_hidden_layers is 7"),
    (lambda c: c["block_configs"][0]["attention"].update(window_length=128), ConfigError, "sliding-window"),
    (lambda c: c["block_configs"][0]["attention"].update(n_heads_in_group=3), ConfigError, "must divide"),
    (lambda c: c["block_configs"][0]["attention"].update(n_heads_in_group=None), ConfigError, "n_heads_in_group"),
    (lambda c: c["block_configs"][1]["ffn"].update(ffn_mult=None), ConfigError, "neither ffn_mult"),
    (lambda c: c["block_configs"][1]["ffn"].update(ffn_mult="big"), ConfigError, "ffn_mult must be"),
    (lambda c: c["block_configs"][1]["attention"].update(replace_with_linear=True), ConfigError,
     "both no_op and replace_with_linear"),
    (lambda c: c["block_configs"][0]["ffn"].update(replace_with_linear=True, ffn_mult=None), UnsupportedModelError,
     "beside a kept attention"),
    (lambda c: c["block_configs"][0]["ffn"].update(moe={"num_local_experts": 8}), ConfigError, "mixture-of-experts"),
    (lambda c: c["block_configs"].__setitem__(2, "x"), ConfigError, "entry 2 must be an object"),
    (lambda c: c.update(position_embedding_type="none"), ConfigError, "position_embedding_type"),
])
def test_bad_block_configs_are_clear_errors(change, error, match):
    cfg = json.loads(json.dumps(TINY))
    change(cfg)
    with pytest.raises(error, match=match):
        parse_config(cfg)


# ---- DeciLM-7B (deci) ---------------------------------------------------------------------------------------


DECI = {"model_type": "deci", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads_per_layer": [4, 2, 1, 8], "vocab_size": 128,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": {"type": "dynamic", "factor": 2.0}}


def test_deci_per_layer_kv_heads():
    """DeciLMAttention (modeling_decilm.py): head_dim hidden/heads = 8, bias-free q/k/v/o with its layer's KV heads;
    LlamaMLP bias-free; two RMSNorms a layer; final norm; untied head."""
    spec = parse_config(DECI)
    h, i, v = 64, 96, 128
    layers = sum(2 * h * h + 2 * h * kv * 8 + 3 * h * i + 2 * h for kv in (4, 2, 1, 8))
    assert count_params(spec).total == 2 * v * h + h + layers
    fp32 = weight_format(spec, "fp32")[0].act
    assert kv_cache(spec, fp32, fp32).bytes_per_token == 4 * 2 * 8 * (4 + 2 + 1 + 8)
    with pytest.raises(ConfigError, match="must divide"):
        parse_config(dict(DECI, num_key_value_heads_per_layer=[4, 3, 1, 8]))
    with pytest.raises(ConfigError, match="num_key_value_heads_per_layer"):
        parse_config(dict(DECI, num_key_value_heads_per_layer=[4, 2]))


# ---- the runtime ---------------------------------------------------------------------------------------------


def _llama_twin(nas_cfg: dict, noop_attn: list[int], noop_ffn: list[int]):
    """transformers' Llama with the NAS config's shapes (one GQA group, one MLP width for every kept block) and
    random weights, o_proj zeroed on the no-op attention layers and down_proj on the no-op FFN layers: each such
    sub-block adds exactly zero to the residual, as a DeciLM no-op does (its norm's output goes nowhere)."""
    torch = pytest.importorskip("torch")
    from tests.test_runtime import hf_model

    llama = {"model_type": "llama", "hidden_size": nas_cfg["hidden_size"],
             "num_hidden_layers": nas_cfg["num_hidden_layers"],
             "num_attention_heads": nas_cfg["num_attention_heads"], "num_key_value_heads": 4, "intermediate_size": 256,
             "vocab_size": nas_cfg["vocab_size"], "rms_norm_eps": nas_cfg["rms_norm_eps"],
             "rope_theta": nas_cfg["rope_theta"], "max_position_embeddings": 256, "torch_dtype": "float32"}
    hf = hf_model(llama)
    with torch.no_grad():
        for i in noop_attn:
            hf.model.layers[i].self_attn.o_proj.weight.zero_()
        for i in noop_ffn:
            hf.model.layers[i].mlp.down_proj.weight.zero_()
    return hf


def test_runtime_logits_equal_llama_with_the_no_op_blocks_zeroed():
    torch = pytest.importorskip("torch")
    from planner.runtime.load import load_tensors
    from planner.runtime.model import build_decoder

    cfg = dict(TINY, block_configs=[_block(2, 2.625), _block(None, 1.3125), _block(2, None), _block(None, None),
                                    _block(2, 5.25)], num_hidden_layers=5)
    hf = _llama_twin(cfg, noop_attn=[1, 3], noop_ffn=[2, 3])
    spec = parse_config(cfg)
    ours = build_decoder(spec, seed=None)
    ours_names = {t.name for t in spec.tensors()}
    report = load_tensors(ours, [(n, t) for n, t in hf.state_dict().items() if n in ours_names])
    assert report.missing == []
    tokens = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(tokens).logits
        torch.testing.assert_close(ours(tokens, 0, None, all_logits=True), ref, atol=1e-4, rtol=0)


def test_runtime_parameters_flops_and_kv_equal_the_analysis():
    pytest.importorskip("torch")
    from planner.runtime.model import build_decoder, parameter_count
    from tests.test_runtime import _flop_and_kv_check

    cfg = dict(TINY, block_configs=TINY["block_configs"][:5], num_hidden_layers=5)
    spec = parse_config(cfg)
    model = build_decoder(spec)
    assert parameter_count(model) == count_params(spec).total
    _flop_and_kv_check(spec, model, batch=2, cached=7)
    deci = parse_config(DECI)
    _flop_and_kv_check(deci, build_decoder(deci), batch=1, cached=5)


def test_runtime_refuses_linear_replacements_clearly():
    pytest.importorskip("torch")
    from planner.analysis.errors import RuntimeUnavailableError
    from planner.runtime.model import build_decoder

    with pytest.raises(RuntimeUnavailableError, match="linear replacement layers"):
        build_decoder(parse_config(TINY), device="meta")


@pytest.mark.parametrize("cfg", [SUPER_49B, ULTRA_253B], ids=["Super-49B", "Ultra-253B"])
def test_tensor_parallel_step_counts_an_all_reduce_per_kept_sub_block(cfg):
    """Under tensor parallelism each attention and each MLP that is not a no-op ends in a row-parallel projection and
    one all-reduce (vLLM's nemotron_nas.py DeciLMDecoderLayer); no-op blocks run none. serve's decode step counts
    those from the block_configs, plus the embedding's and the logits', not two per layer."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import load_engine
    from planner.hardware.expected import factors_for
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import StepModel

    blocks = cfg["block_configs"]
    kept = sum(not b["attention"]["no_op"] for b in blocks) + sum(not b["ffn"]["no_op"] for b in blocks)
    assert kept < 2 * len(blocks)
    spec = parse_config(cfg)
    hw = load_profile("h100-sxm")
    model = StepModel(analyze(spec, Options(context=1024)), hw, tp_plan(spec, 8),
                      factors_for(hw, load_engine("vllm")))
    assert model.allreduce_calls == kept + 2
    assert model.decode(4, 1024).allreduce_calls == kept + 2
