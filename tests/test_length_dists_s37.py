"""Requests whose lengths are drawn from a distribution (``planner serve --input-len-dist/--output-len-dist``,
``hardware.simulate.length_quantiles``, ``hardware.serve.scenario_lengths``): the quantile sequences, the
step-by-step schedule of clients of different lengths (hand-computed), the refusals, and the bench entries
that carry a benchmark's range ratio."""

import statistics

import pytest

from planner.analysis.errors import OptionError
from planner.hardware.expected import Factors
from tests.clirun import run
from tests.test_serve import _FlatModel, _Mem


def test_quantile_lengths_cover_the_distribution_without_a_random_draw():
    from planner.hardware.simulate import length_quantiles

    u = length_quantiles("uniform:819:1024", 4096, "input")
    assert (min(u), max(u)) == (819, 1024)
    assert len(set(u)) == 206  # every whole length of the range is drawn
    assert statistics.fmean(u) == pytest.approx((819 + 1024) / 2, abs=0.5)
    # a short run already has the distribution's mean (a seeded random draw of ten wanders by ~10 %)
    assert statistics.fmean(u[:10]) == pytest.approx(921.5, rel=0.03)
    assert length_quantiles("uniform:819:1024", 4096, "input") == u  # the same lengths every time
    # request 0 takes the median; request k the quantile (1/2 + k (sqrt 2 - 1)) mod 1
    assert length_quantiles("uniform:1:100", 3, "input") == [51, 92, 33]
    assert length_quantiles("uniform:1:100", 3, "output") == [51, 12, 74]
    logn = length_quantiles("lognormal:224:224", 4096, "output")
    assert statistics.fmean(logn) == pytest.approx(224, rel=0.03)
    assert statistics.pstdev(logn) == pytest.approx(224, rel=0.1)
    assert length_quantiles("normal:100:0", 5, "input") == [100] * 5
    assert min(length_quantiles("normal:2:50", 1000, "input")) == 1  # the left tail is cut at one token
    assert length_quantiles("const:7", 3, "output") == [7, 7, 7]
    assert length_quantiles("7", 2, "output") == [7, 7]


def test_input_and_output_quantiles_are_uncorrelated():
    from planner.hardware.simulate import length_quantiles

    i = length_quantiles("uniform:1:1000", 2000, "input")
    o = length_quantiles("uniform:1:1000", 2000, "output")
    assert abs(statistics.correlation(i, o)) < 0.05


@pytest.mark.parametrize("spec", ["uniform:5", "uniform:9:3", "uniform:0:5", "uniform:1.5:1.7", "lognormal:-1:2",
                                  "weird:1:2", "normal:1:-1", "nan", "const:0", "uniform:1:inf", "",
                                  "normal:1e300:1", "const:1e9", "uniform:1:1e30", "lognormal:1e12:1"])
def test_distributions_that_are_none_or_too_long_are_refused(spec):
    from planner.hardware.simulate import length_quantiles

    with pytest.raises(OptionError) as e:
        length_quantiles(spec, 4, "input", "--input-len-dist")
    assert "--input-len-dist" in str(e.value)


def test_closed_loop_clients_of_drawn_lengths_drift_apart_hand_computed():
    """2 clients, 4-token prompts, outputs drawn from uniform:1:3 (output quantiles 0.5, 0.118, 0.736, 0.354:
    2, 1, 3, 2 tokens), 4 requests, an 8-token budget, 10 ms steps, no front end. Step 0 (0-10 ms): both
    prompts; request 1 ends with its one token and its client sends request 2. Step 1: request 0's decode
    (context 4; its second and last token, at 20 ms) and request 2's prompt; request 0's client sends request
    3. Step 2: request 2's decode and request 3's prompt. Step 3: both decodes (contexts 5 and 4, priced at
    4.5 rounded as Python rounds, 4); both end at 40 ms. TTFT 10 ms each; e2e 20, 10, 30, 20 (mean 20); TPOT
    over the three requests of more than one token, (10 + 20/2 + 10) / 3 = 10 ms; 8 tokens in 40 ms. With
    fixed lengths (2 each) the clients run in step: two prompts together, then two decodes, and again."""
    from planner.hardware.serve import Scenario, simulate

    m = _FlatModel(Factors())
    r = simulate(m, _Mem(), Scenario(4, 2, 2, "closed-loop", requests=4, output_len_dist="uniform:1:3"),
                 server=False)
    assert m.steps == [{(4, 0): 2}, {(1, 4): 1, (4, 0): 1}, {(1, 4): 1, (4, 0): 1}, {(1, 4): 2}]
    assert r.expected.ttft_s == pytest.approx(10e-3)
    assert r.expected.e2e_s == pytest.approx(20e-3)
    assert r.expected.tpot_s == pytest.approx(10e-3)
    assert r.expected.output_tokens_per_s == pytest.approx(8 / 40e-3)
    assert any("uniform:1:3 (mean 2)" in n for n in r.notes)
    fixed = _FlatModel(Factors())  # (the step schedule prices each distinct step once)
    simulate(fixed, _Mem(), Scenario(4, 2, 2, "closed-loop", requests=4), server=False)
    assert fixed.steps == [{(4, 0): 2}, {(1, 4): 2}]


def test_one_length_drawn_is_the_fixed_length_schedule():
    """Closed-loop clients whose distributions hold one value go through the request-by-request loop
    (``_clocked``) and must give what the step schedule of fixed lengths (``closed_loop_schedule``, priced
    shape by shape) gives: the same step shapes and the same means, ideal and expected."""
    from planner.hardware.serve import Scenario, simulate

    a, b = _FlatModel(Factors()), _FlatModel(Factors())
    fixed = simulate(a, _Mem(), Scenario(4, 3, 3, "closed-loop", requests=7), server=False)
    drawn = simulate(b, _Mem(), Scenario(4, 3, 3, "closed-loop", requests=7, input_len_dist="uniform:4:4",
                                         output_len_dist="const:3"), server=False)
    assert {tuple(sorted(d.items())) for d in a.steps} == {tuple(sorted(d.items())) for d in b.steps}
    for k in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
        assert getattr(drawn.expected, k) == pytest.approx(getattr(fixed.expected, k)), k
        assert getattr(drawn.ideal, k) == pytest.approx(getattr(fixed.ideal, k)), k


def test_drawn_lengths_are_refused_past_max_model_len_and_beside_mean_output_len():
    from planner.hardware.serve import Scenario, _replica_admission

    with pytest.raises(OptionError, match="--max-model-len"):  # _Mem: max_model_len 64
        _replica_admission(_Mem(), Scenario(30, 20, 2, input_len_dist="uniform:10:50"), 1, closed=False)
    _replica_admission(_Mem(), Scenario(30, 20, 2, input_len_dist="uniform:10:44"), 1, closed=False)
    with pytest.raises(OptionError, match="--mean-output-len and --output-len-dist"):
        Scenario(4, 10, 2, mean_output_len=5.0, output_len_dist="uniform:1:10").check()
    with pytest.raises(OptionError, match="--output-len-dist"):
        Scenario(4, 10, 2, output_len_dist="uniform:10").check()


def test_serve_cli_drawn_lengths():
    r = run("serve", "llama-3.2-1b", "--arrival", "closed-loop", "--concurrency", "4",
            "--input-len-dist", "uniform:819:1024", "--output-len-dist", "uniform:8:24", "--requests", "12",
            "--max-model-len", "2048", "--json")
    s = r.json["settings"]
    assert (s["input_len_dist"], s["output_len_dist"]) == ("uniform:819:1024", "uniform:8:24")
    assert (s["input_len"], s["output_len"]) == (922, 16)  # the distributions' means stand for the requests
    assert any("lengths drawn per request" in n for n in r.json["notes"])
    plain = run("serve", "llama-3.2-1b", "--arrival", "closed-loop", "--concurrency", "4", "--input-len", "922",
                "--output-len", "16", "--requests", "12", "--max-model-len", "2048", "--json")
    assert plain.json["settings"]["input_len_dist"] is None
    # clients of one length send their prompts in step; of drawn lengths, one by one
    assert r.json["latency"]["ttft_s"] < plain.json["latency"]["ttft_s"]
    for args, what in ((["--input-len-dist", "uniform:9:3"], "--input-len-dist"),
                       (["--output-len-dist", "gamma:1:2"], "--output-len-dist"),
                       (["--output-len-dist", "uniform:8:24", "--mean-output-len", "12"], "--mean-output-len"),
                       (["--input-len-dist", "uniform:1000:4000", "--max-model-len", "2048"], "--max-model-len")):
        bad = run("serve", "llama-3.2-1b", "--arrival", "closed-loop", "--concurrency", "4", "--output-len", "16", *args)
        assert bad.code != 0 and bad.err.count("Error:") == 1 and what in bad.err and "Traceback" not in bad.err, args
        assert bad.out == ""


def test_bench_entries_with_a_range_ratio_carry_their_distributions():
    """InferenceX draws each length uniformly from [0.8 L, L] (its entries' means are 0.9 L); the bench
    point predicts them with those distributions and sizes max_model_len for the longest request."""
    from tests.test_published_fit import ROOT, pub

    points, _ = pub.load_points(ROOT / "bench" / "published.yaml", ["infx870-dsr1-h200-sgl-tp8-8k1k-c4-ttft",
                                                     "sglcb-gemma4-31b-mi300x-tp1-rand1000-c16-ttft"])
    by = {p.id: p for p in points}
    s = by["infx870-dsr1-h200-sgl-tp8-8k1k-c4-ttft"].scenario
    assert (s.input_len, s.input_len_dist, s.output_len_dist) == (7373, "uniform:6553:8192", "uniform:819:1024")
    assert by["infx870-dsr1-h200-sgl-tp8-8k1k-c4-ttft"].mem.max_model_len >= 8192 + 1024
    assert by["sglcb-gemma4-31b-mi300x-tp1-rand1000-c16-ttft"].scenario.output_len_dist == "uniform:1:1000"


def test_plan_cli_drawn_lengths():
    r = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "2", "--rate", "2", "--requests", "60",
            "--input-len-dist", "uniform:500:1500", "--output-len-dist", "lognormal:200:100", "--aggregated-only", "--json")
    w = r.json["workload"]
    assert (w["input_len_dist"], w["output_len_dist"]) == ("uniform:500:1500", "lognormal:200:100")
    assert w["input_len"] == 1000 and abs(w["output_len"] - 200) <= 2  # the means stand for the requests
    fixed = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "2", "--rate", "2", "--requests", "60",
                "--input-len", "1000", "--output-len", "200", "--aggregated-only", "--json")
    assert fixed.json["workload"]["input_len_dist"] is None
    # the same means, spread: the simulated requests differ, so do the percentiles
    assert r.json["cheapest"]["ttft_p90_s"] != fixed.json["cheapest"]["ttft_p90_s"]
    bad = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--output-len-dist", "poisson:3")
    assert bad.code != 0 and bad.err.count("Error:") == 1 and "--output-len-dist" in bad.err and bad.out == ""


def test_a_spec_with_colons_prints_as_written_not_as_an_emoji():
    """Rich turns ":100:" into an emoji unless told not to; "uniform:100:900" must print as given."""
    r = run("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-gpus", "1", "--rate", "1", "--requests", "40",
            "--output-len-dist", "uniform:100:900", "--aggregated-only")
    assert "uniform:100:900" in " ".join(r.out.split()) and "\U0001f4af" not in r.out
    s = run("serve", "llama-3.2-1b", "--concurrency", "2", "--arrival", "closed-loop", "--output-len-dist", "uniform:100:900")
    assert "uniform:100:900" in " ".join(s.out.split()) and "\U0001f4af" not in s.out
