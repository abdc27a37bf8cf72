"""``analyze`` and ``compare`` on several GPUs: the layout options (--tp --pp --ep --dp), replicas
sharing the batch, --gpus alone searching the layout, and JSON figures that agree with ``fits``."""

import pytest

from planner.analysis.parallel import batch_shares
from tests.clirun import run


@pytest.mark.parametrize("batch, replicas, shares", [
    (6, 4, ((2, 2), (1, 2))),  # 6 = 2 + 2 + 1 + 1
    (3, 2, ((2, 1), (1, 1))),
    (8, 4, ((2, 4),)),
    (1, 3, ((1, 1), (0, 2))),  # two replicas idle
    (5, 1, ((5, 1),)),
])
def test_batch_shares_by_hand(batch, replicas, shares):
    assert batch_shares(batch, replicas) == shares


def _mem(*args):
    return run("analyze", "llama-3.1-8b", "--json", *args).json["memory"]


def test_replicas_hold_their_share_of_the_batch():
    one = _mem("--gpus", "2", "--tp", "2", "--batch", "2")  # one TP2 replica holding 2 sequences
    two = _mem("--gpus", "4", "--tp", "2", "--batch", "3")  # two TP2 replicas: 2 + 1 sequences
    assert two["replicas"] == 2 and two["layout"]["tp"] == 2 and two["layout"]["dp"] == 2
    assert two["layout"]["batch_per_replica"] == [{"sequences": 2, "replicas": 1}, {"sequences": 1, "replicas": 1}]
    # the busiest replica's GPU holds what one replica of 2 sequences holds, not 3 sequences
    assert two["per_gpu"] == one["per_gpu"]
    assert two["needed_bytes"] == 4 * one["per_gpu"]["needed_bytes"]
    assert two["capacity_bytes"] == 2 * one["capacity_bytes"] and two["usable_bytes"] == 2 * one["usable_bytes"]
    assert two["max_batch"] == 2 * one["max_batch"]
    assert "TP2 DP2" in two["layout_text"] and "1×2 + 1×1" in two["layout_text"]


def test_json_agrees_with_fits_at_the_boundary():
    mb = _mem("--gpus", "4", "--tp", "2", "--context", "131072")["max_batch"]  # 2 replicas' worth
    assert mb >= 2
    for batch, fits in ((mb, True), (mb + 1, False)):
        m = _mem("--gpus", "4", "--tp", "2", "--context", "131072", "--batch", str(batch))
        assert m["fits"] is fits
        assert (m["needed_bytes"] <= m["usable_bytes"]) is fits
        assert (m["headroom_bytes"] >= 0) is fits
        assert (batch <= m["max_batch"]) is fits
        assert (m["per_gpu"]["needed_bytes"] <= m["per_gpu"]["usable_bytes"]) is fits


def test_throughput_is_the_replicas_sum():
    def serving(*args):
        return run("compare", "llama-3.1-8b", "--json", *args).json["models"][0]

    two, one = serving("--gpus", "2", "--tp", "2", "--batch", "2"), serving("--gpus", "2", "--tp", "2", "--batch", "1")
    even = serving("--gpus", "4", "--tp", "2", "--batch", "4")
    uneven = serving("--gpus", "4", "--tp", "2", "--batch", "3")
    assert even["decode_tokens_per_s_total"] == pytest.approx(2 * two["decode_tokens_per_s_per_replica"], rel=1e-12)
    assert uneven["decode_tokens_per_s_total"] == pytest.approx(
        two["decode_tokens_per_s_per_replica"] + one["decode_tokens_per_s_per_replica"], rel=1e-12)
    assert uneven["decode_tokens_per_s"] == pytest.approx(uneven["decode_tokens_per_s_total"] / 4, rel=1e-12)
    assert uneven["serving"]["batch"] == 2  # the busiest replica's share, not the whole batch
    assert uneven["layout"]["replicas"] == 2 and uneven["fits"] is True


def test_gpus_alone_searches_the_layout():
    m = _mem("--gpus", "4", "--batch", "6")
    assert (m["layout"]["tp"], m["layout"]["dp"]) == (1, 4)  # the most replicas whose share fits
    assert m["layout"]["chosen"].startswith("searched")
    m = run("analyze", "meta-llama/Llama-3.1-70B", "--json", "--gpus", "4").json["memory"]
    assert (m["layout"]["tp"], m["layout"]["dp"]) == (2, 2)  # 141 GB of weights: one H100 cannot hold them
    # compare takes the fitting layout with the most decode tokens/s: none of the others is faster
    d = run("compare", "llama-3.1-8b", "--json", "--gpus", "4", "--batch", "64").json["models"][0]
    for tp in (1, 2, 4):
        other = run("compare", "llama-3.1-8b", "--json", "--gpus", "4", "--tp", str(tp), "--batch", "64").json["models"][0]
        assert other["decode_tokens_per_s_total"] <= d["decode_tokens_per_s_total"]
    assert d["layout"]["chosen"].startswith("searched")


def test_every_output_states_the_layout():
    r = run("analyze", "llama-3.1-8b", "--gpus", "4", "--tp", "2", "--batch", "3")
    assert r.code == 0 and "TP2 DP2" in r.out
    r = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--gpus", "4", "--tp", "2", "--batch", "3")
    assert r.code == 0 and "TP2 DP2" in r.out
    d = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--gpus", "4", "--tp", "2", "--json").json
    assert d["settings"]["layout"] == "TP2 DP2" and all(m["layout"]["label"] == "TP2 DP2" for m in d["models"])


def test_too_few_gpus_says_how_many():
    d = run("analyze", "meta-llama/Llama-3.1-70B", "--json", "--hardware", "l4").json
    assert d["memory"]["fits"] is False
    # 141 GB of bf16 weights on 24 GB L4s: 4 hold 96 GB, too few; tensor parallel goes in powers of two
    assert any("at least 8× NVIDIA L4" in n for n in d["notes"])
    m = run("compare", "meta-llama/Llama-3.1-70B", "--json", "--hardware", "l4").json["models"][0]
    assert m["fits"] is False and m["max_batch"] == 0 and m["needed_bytes"] > m["usable_bytes"]
    assert "at least 8×" in m["needs_at_least"]


@pytest.mark.parametrize("cmd", ["analyze", "compare"])
@pytest.mark.parametrize("args, fragments", [
    (["--gpus", "4", "--tp", "2", "--dp", "3"], ["--dp 3", "--gpus 4"]),
    (["--gpus", "6", "--tp", "4"], ["--tp 4"]),
    (["--gpus", "4", "--pp", "3"], ["--pp 3"]),
    (["--gpus", "2", "--ep", "2"], ["--ep 2", "mixture-of-experts"]),
    (["--gpus", "4", "--tp", "4", "--ep", "3"], ["--ep 3", "divide"]),
    (["--gpus", "3", "--tp", "3"], ["--tp 3"]),
])
def test_bad_layouts_are_one_error_line(cmd, args, fragments):
    run(cmd, "llama-3.1-8b", *args).assert_error(*fragments)
