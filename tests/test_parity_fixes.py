"""Three fixes the cache / decode-FLOPs parity sweep (tests/test_cache_flops_parity.py) led to; each test fails on the
code before its fix.

1. GLM-5.3-Flash (``glm5_next``): its hyper-connections mix the hc_mult residual streams with the n x n ``comb``
   matrix after the attention and after the FFN (transformers' Glm5NextTextDecoderLayer.forward:
   ``torch.matmul(comb.T, residual)``, 2·n²·hidden FLOPs per token each), as DeepSeek-V4's; planner counted neither
   (0-FLOP elementwise after the attention, nothing after the FFN). Its text model has no causal-LM class, so the
   sweep skips it: compared here through the wrapper (Glm5NextForConditionalGeneration) on a text-only step.
2. Inkling-2 / Inkling-2 Loop: the block attention residuals (attention_input, mlp_input, final_input and the loop's
   message_input: learned queries attending over the RMS-normed block states, eager attention in transformers)
   were 0-FLOP ops; now 4·hidden FLOPs per query and state, with the states each layer sees (the sweep's strict
   xfails for the four model_types are gone; here a loop whose message_input reads two blocks, which the sweep's
   and tests/test_families.py's configs, one block each, do not cover).
3. ``analyze`` reported only ``state_dtype`` (the conv windows') although a recurrent state may be kept in fp32
   (KDA always, NemotronH's mamba_ssm_cache_dtype, RWKV's WKV state, RG-LRU's recurrence): the JSON's
   ``kv_cache.recurrent_state_dtype`` and per-layer ``recurrent_dtype``, and the table's "state dtype" row say it.
"""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from planner.analysis.config import parse_config
from tests.clirun import run
from tests.oracle import flop_counter

# ---- 1. GLM-5.3-Flash's hyper-connection mixes -------------------------------------------------------------


def _glm5_configs() -> dict[str, dict]:
    """tests/test_glm5_next.py's TINY (hc_mult 3; KDA, k-pool DSA with a shared indexer, full layers) and the
    sweep's mechanical shrink of Glm5NextConfig's defaults (hc_mult 4; the rope width the shrink sets back to 0),
    the tower made small (not run by a text step; its size only slows the build)."""
    from tests import test_cache_flops_parity as P
    from tests.test_glm5_next import TINY, TINY_VISION

    d = P._default("glm5_next").to_dict()
    d.pop("transformers_version", None)
    text = P._shrink(d["text_config"])
    text.pop("transformers_version", None)
    text.update(qk_rope_head_dim=0, qk_head_dim=text["qk_nope_head_dim"])  # NoPE, as the class requires
    shrunk = dict(d, model_type="glm5_next", text_config=text, vision_config=dict(TINY_VISION))
    return {"tiny": copy.deepcopy(TINY), "shrunk-defaults": shrunk}


def _glm5_decode(cfg: dict, n: int):
    """(planner's spec and decode ops after ``n`` cached tokens, transformers' decode-step FLOPs) of ``cfg``."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import AutoConfig, AutoModelForImageTextToText

    from tests import test_cache_flops_parity as P

    spec, _, ops = P._planner(cfg, n)
    d = copy.deepcopy(cfg)
    mt = d.pop("model_type")
    vocab = d["text_config"].get("vocab_size") or AutoConfig.for_model(mt).text_config.vocab_size
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conf = AutoConfig.for_model(mt, **d, attn_implementation="eager", experts_implementation="eager")
        model = AutoModelForImageTextToText.from_config(conf).eval()
        with torch.no_grad():
            cache = model(torch.randint(P.LOW, vocab, (1, n)), use_cache=True).past_key_values
            counter = flop_counter(model)
            with counter:
                model(torch.randint(P.LOW, vocab, (1, 1)), use_cache=True, past_key_values=cache)
    return spec, ops, sum(counter.get_flop_counts()["Global"].values())


@pytest.mark.parametrize("name", ["tiny", "shrunk-defaults"])
def test_glm5_next_decode_flops_equal_transformers(name):
    """FlopCounterMode over transformers' text-only decode step equals planner's step, but for the differences the
    sweep explains for these mixers (tests/test_cache_flops_parity.py: KDA's torch conv computes two outputs and
    its delta rule is elementwise; transformers expands MLA's latent every step). The old trace was
    2 x 2·n²·hidden per layer short (13,824 FLOPs on TINY: 6 layers, n = 3, hidden 64)."""
    from tests import test_cache_flops_parity as P

    spec, ops, hf = _glm5_decode(_glm5_configs()[name], P.N)
    expected = P._conv_twice(spec, ops) + P._scan_uncounted(spec, ops) + P._mla_expanded(spec, ops)
    assert hf - sum(o.flops for o in ops) == expected


def test_glm5_next_comb_mixes_after_attention_and_ffn():
    """Every layer: the comb mix after the attention (``hc_post``) and after the FFN (``ffn_hc.post``), 2·n²·hidden
    FLOPs per token each, the figures DeepSeek-V4's layers get from the same helper (compressed.hc_post)."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    cfg = _glm5_configs()["tiny"]
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "fp32")
    tokens = 3
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=tokens, cached_tokens=4)
    n, h = cfg["text_config"]["hc_mult"], cfg["text_config"]["hidden_size"]
    for i in range(spec.num_layers):
        assert [o.flops for o in ops if o.layer == i and o.name in ("hc_post", "ffn_hc.post")] == \
            [2 * tokens * n * n * h] * 2


# ---- 2. Inkling-2's block attention residuals --------------------------------------------------------------

def _loop_cfg() -> dict:
    """tests/test_families.py's Inkling-2 case in two-layer blocks, its core layers 2..5 (two blocks) run three
    times."""
    from tests.test_families import CASES

    return dict(CASES["inkling2_text"], model_type="inkling2_loop_text", num_hidden_layers=8,
                n_layers_per_attn_res_block=2,
                layer_types=["hybrid_sliding", "hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid_sliding",
                             "hybrid", "hybrid_sliding", "hybrid_sliding"],
                loop_layer_index_start=2, loop_layer_index_end=6, loop_num_passes=3, loop_gate_rank=8)


def _residual_hand(cfg: dict) -> dict[str, int]:
    """The residuals' FLOPs per token written from Inkling2LoopTextModel.forward and its decoder layers: layer i
    (every pass of a core layer alike: each pass restarts from the pre-core block states) sees ceil(i / per)
    closed blocks; attention_input (1 query, 3 on full layers, none on layer 0) attends them plus the partial
    state, mlp_input them, the layer's input when i opens a block (i % per == 0), and the partial state;
    final_input the ceil(layers / per) blocks and the partial state; on each later pass every core layer's
    message_input (4 queries) attends the previous pass's core blocks after its first, plus that pass's output:
    (end - start) / per states. Each: 4·hidden per query and state (q·k and p·v)."""
    h, per, n = cfg["hidden_size"], cfg["n_layers_per_attn_res_block"], cfg["num_hidden_layers"]
    start, end, passes = cfg["loop_layer_index_start"], cfg["loop_layer_index_end"], cfg["loop_num_passes"]
    runs = list(range(end)) + list(range(start, end)) * (passes - 1) + list(range(end, n))
    out = {"attention_input": 0, "mlp_input": 0, "final_input": 0, "message_input": 0}
    for i in runs:
        closed = -(-i // per)
        queries = 0 if i == 0 else 3 if cfg["layer_types"][i] == "hybrid" else 1
        out["attention_input"] += 4 * h * queries * (closed + 1)
        out["mlp_input"] += 4 * h * (closed + (i % per == 0) + 1)
    out["final_input"] = 4 * h * (-(-n // per) + 1)
    out["message_input"] = (passes - 1) * (end - start) * 4 * h * 4 * ((end - start) // per)
    return out


def test_inkling2_loop_block_residuals_equal_transformers_and_hand_count():
    """Per residual module, transformers' FlopCounterMode (its own matmuls: the module's eager attention) equals
    planner's ops of that name and the hand count; the whole step then equals transformers' (its convolutions
    as the sweep explains them)."""
    torch = pytest.importorskip("torch")

    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format
    from tests import test_cache_flops_parity as P
    from tests.test_families import _hf_prefill

    cfg = _loop_cfg()
    n = 12
    torch, model, cache = _hf_prefill(cfg, n, low=1, high=500)
    counter = flop_counter(model)
    with torch.no_grad(), counter:
        model(torch.randint(1, 500, (1, 1)), use_cache=True, cache=cache)
    counts = counter.get_flop_counts()
    hf = {k: 0 for k in ("attention_input", "mlp_input", "final_input", "message_input")}
    for mod, c in counts.items():
        if mod.rsplit(".", 1)[-1] in hf:
            hf[mod.rsplit(".", 1)[-1]] += sum(c.values())
    spec = parse_config(cfg)
    fmt, _ = weight_format(spec, "fp32")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n)
    ours = {k: sum(o.flops for o in ops if o.name == k) for k in hf}
    assert ours == hf == _residual_hand(cfg)
    assert hf["message_input"] == 2 * 4 * 16 * spec.hidden_size * 2  # 2 passes x 4 layers, 4 queries x 2 states
    total = sum(counts["Global"].values())
    assert total - sum(o.flops for o in ops) == P._conv_twice(spec, ops) + P._dynamic_conv_elementwise(spec, ops)


def test_inkling2_residuals_in_the_real_sized_step():
    """Inkling2TextConfig's defaults (its 6-layer blocks, full layers every 6th): the residuals' FLOPs per decoded
    token as the hand count (they were 0)."""
    from planner.analysis.family_defaults import FAMILY_DEFAULTS
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(dict(FAMILY_DEFAULTS["inkling2_text"], model_type="inkling2_text"))
    fmt, _ = weight_format(spec)
    got = sum(o.flops for o in step_ops(spec, fmt, fmt.act, cached_tokens=1024)
              if o.name in ("attention_input", "mlp_input", "final_input"))
    h, per, layers = spec.hidden_size, FAMILY_DEFAULTS["inkling2_text"]["n_layers_per_attn_res_block"], spec.num_layers
    want = 0
    for i in range(layers):
        closed = -(-i // per)
        queries = 0 if i == 0 else 1 if (i + 1) % 6 else 3
        want += 4 * h * (queries * (closed + 1) + closed + (i % per == 0) + 1)
    assert got == want + 4 * h * (-(-layers // per) + 1) > 0


# ---- 3. the recurrent state's dtype in analyze's report -----------------------------------------------------


def _analyze(tmp_path, cfg: dict, *extra: str):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = run("analyze", p, *extra)
    assert r.code == 0, r.err
    return r


def test_kimi_linear_json_and_table_say_the_kda_state_is_fp32(tmp_path):
    """Kimi-Linear-48B (tests/test_real_configs_audit.py's quoted config): 20 KDA layers with a bf16 conv window
    (3 x 32 x 128 channels x 3 columns) and a 32 x 128 x 128 state in fp32 (vLLM's kda_state_dtype), 7 MLA layers
    with none; the JSON said only ``state_dtype: bf16``."""
    from tests.test_real_configs_audit import REAL

    cfg = REAL["Kimi-Linear-48B-A3B"]
    kv = _analyze(tmp_path, cfg, "--json").json["kv_cache"]
    assert kv["state_dtype"] == "bf16" and kv["recurrent_state_dtype"] == "fp32"
    kda = [i for i in range(27) if i + 1 not in cfg["linear_attn_config"]["full_attn_layers"]]
    assert [row["layer"] for row in kv["per_layer"] if row.get("recurrent_dtype") == "fp32"] == kda
    assert all("recurrent_dtype" not in row for row in kv["per_layer"] if row["layer"] not in kda)
    assert kv["state_bytes_per_sequence"] == 20 * (2 * 3 * 32 * 128 * 3 + 4 * 32 * 128 * 128)
    table = _analyze(tmp_path, cfg).out
    assert "bf16, recurrent state fp32" in " ".join(table.split())


@pytest.mark.parametrize("cache_dtype, want", [(None, "fp32"), ("float32", "fp32"), ("bfloat16", "bf16")])
def test_nemotron_h_recurrent_state_dtype_follows_mamba_ssm_cache_dtype(tmp_path, cache_dtype, want):
    """Nemotron-H-56B (the bundled config): vLLM's NemotronH hook keeps the SSM state in mamba_ssm_cache_dtype,
    float32 when the config leaves it out; the conv window in the state dtype (bf16)."""
    from tests.conftest import load_bundled_config

    cfg = load_bundled_config("nvidia/Nemotron-H-56B-Base-8K")
    if cache_dtype:
        cfg = dict(cfg, mamba_ssm_cache_dtype=cache_dtype)
    kv = _analyze(tmp_path, cfg, "--json").json["kv_cache"]
    assert kv["state_dtype"] == "bf16" and kv["recurrent_state_dtype"] == want
    rec = {"fp32": 4, "bf16": 2}[want]
    assert kv["state_bytes_per_sequence"] == 54 * (2 * (16384 + 2 * 8 * 256) * 3 + rec * 256 * 64 * 256)
    assert sum(1 for row in kv["per_layer"] if row.get("recurrent_dtype") == want) == 54


@pytest.mark.parametrize("model, want", [("tiiuae/falcon-mamba-7b", "bf16"), ("meta-llama/Llama-3.2-1B", None)])
def test_state_dtype_alone_where_nothing_is_kept_apart(tmp_path, model, want):
    """Falcon-Mamba's SSM state follows the state dtype; a model without recurrent state has none (and no row)."""
    from tests.conftest import load_bundled_config

    cfg = load_bundled_config(model)
    kv = _analyze(tmp_path, cfg, "--json").json["kv_cache"]
    assert kv["recurrent_state_dtype"] == want
    assert ("state dtype" in _analyze(tmp_path, cfg).out) is (want is not None)


def test_rwkv_wkv_state_reported_fp32(tmp_path):
    """RWKV keeps its WKV state in fp32 whatever the dtype (its state_bytes did; the report now says it): 3 layers
    of token-shift columns (2 x hidden, bf16) and a (3 x hidden) fp32 WKV state, hidden 64."""
    from tests.test_families import CASES

    kv = _analyze(tmp_path, CASES["rwkv"], "--json").json["kv_cache"]
    assert kv["recurrent_state_dtype"] == "fp32"
    assert kv["state_bytes_per_sequence"] == 3 * (2 * 2 * 64 + 4 * 3 * 64)
