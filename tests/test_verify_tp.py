"""``planner verify --tp 2 --device cpu``: two gloo ranks of tiny models, each rank's shard checked
against the analysis of that shard, and the tp run's logits equal to the single-process decoder's.
The MoE case (Qwen2-MoE's shape: routed experts, a shared expert and its gate) shards every expert
column/row-parallel with the router replicated, as engines do without expert parallelism."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="verify --tp needs the torch runtime")

from tests.clirun import run  # noqa: E402
from tests.test_runtime import TINY  # noqa: E402

MLA_DENSE = dict(TINY["deepseek_v3"], first_k_dense_replace=2)  # MLA layers, no MoE
KV_REPLICATED = dict(TINY["qwen2"], num_key_value_heads=1)  # tp 2 > 1 KV head: the head on both ranks


def _tp_run(cfg: dict, tp: int = 2, batch: int = 2):
    from planner.analysis.config import parse_config
    from planner.runtime.model import build_decoder
    from planner.runtime.parallel import LAYER_AR
    from planner.runtime.verify import VerifyOptions
    from planner.runtime.verify_tp import run_verify_tp

    spec = parse_config(cfg)
    opts = VerifyOptions(device="cpu", batch=batch, context=12, steps=2, warmup=1, hardware="cpu", threads=1, tp=tp,
                         seed=3)
    r = run_verify_tp(spec, opts, want_logits=True)
    single = build_decoder(spec, seed=3)
    prompt = torch.randint(0, spec.vocab_size, (batch, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = single(prompt, 0, None)
    return spec, r, want, LAYER_AR


@pytest.mark.parametrize("cfg", [TINY["llama"], KV_REPLICATED, MLA_DENSE, TINY["qwen2_moe"],
                                 TINY["lfm3-attention-only"]],  # LFM3: g_proj split by heads with q_proj
                         ids=["llama", "kv-replicated", "mla", "moe", "lfm3-head-gate"])
def test_two_gloo_ranks_match_the_analysis_and_the_single_process_logits(cfg):
    spec, r, want, layer_ar = _tp_run(cfg)
    assert r.backend == "gloo" and len(r.rank_checks) == 2
    for checks in r.rank_checks:
        assert [c.name for c in checks] == ["params", "flops", "kv_bytes"]
        assert all(c.ok for c in checks), checks
    assert want.abs().max() > 0.01  # logits large enough for the comparison to mean something
    torch.testing.assert_close(torch.tensor(r.logits), want, atol=1e-5, rtol=0)
    ar = next(c for c in r.collectives if c.kind == layer_ar)
    assert ar.calls_per_step == 2 * spec.num_layers and ar.bytes_per_call == 2 * spec.hidden_size * 4
    assert ar.in_prediction and ar.predicted_per_step_s > 0 and r.predicted_collective_s == ar.predicted_per_step_s


def test_kv_replication_keeps_one_head_per_rank():
    """With one KV head and tp 2, each rank's cache holds the whole KV (the analysis' kv_divisor is 1)."""
    from planner.analysis.config import parse_config
    from planner.analysis.parallel import tp_plan
    from planner.runtime.parallel import shard_spec

    spec = parse_config(KV_REPLICATED)
    assert tp_plan(spec, 2).kv_divisor == 1
    s = shard_spec(spec, 2)
    assert s.layers[0].mixer.num_key_value_heads == 1 and s.layers[0].mixer.num_attention_heads == 2
    assert s.vocab_size == spec.vocab_size // 2


def test_cli_tp2_prints_per_rank_checks_and_collective_timing(tmp_path):
    import json

    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY["qwen2"]))
    r = run("verify", str(d), "--device", "cpu", "--tp", "2", "--context", "8", "--steps", "2", "--warmup", "1",
            "--hardware", "cpu", "--threads", "1", "--json")
    assert r.code == 0, r.err
    j = r.json
    assert j["tp"] == 2 and j["backend"] == "gloo" and [x["rank"] for x in j["ranks"]] == [0, 1]
    assert all(c["ok"] for x in j["ranks"] for c in x["checks"].values())
    kinds = {c["kind"]: c for c in j["collectives"]}
    assert kinds["all-reduce (layers)"]["predicted_per_step_s"] is not None
    assert kinds["all-gather (logits)"]["in_prediction"] is False
    assert j["timing"]["measured_s"] > 0 and "latency" in j["timing"]["collective_rule"]


@pytest.mark.parametrize("cfg,args,fragment", [
    (dict(TINY["llama"], num_attention_heads=4), ("--tp", "3"), "do not split 3 ways"),
    (dict(TINY["qwen2_moe"], moe_intermediate_size=33), ("--tp", "2"), "33 features do not split 2 ways"),
    (TINY["llama"], ("--tp", "2", "--weights", "."), "--weights"),
])
def test_tp_refusals_are_one_error_line(tmp_path, cfg, args, fragment):
    import json

    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    r = run("verify", str(d), "--device", "cpu", "--hardware", "cpu", *args)
    r.assert_error(fragment, code=r.code)
    assert r.code in (1, 2)
