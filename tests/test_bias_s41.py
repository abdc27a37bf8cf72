"""The bias record (``bench/published.py --shipped --write-bias`` writes ``profiles/engines/_bias.yaml``; ``serve``
and ``plan`` flag a model family or device vendor whose steady published runs came out on one side): the grouping
and its thresholds on hand-made rows, who counts as one publisher, the parser's refusals, the line's arithmetic, and
the record as the commands read and print it. Predicting the data file is the script's run, not a test's."""

from __future__ import annotations

import pytest

from planner.analysis.errors import HardwareError
from planner.hardware import accuracy as A
from tests.clirun import run
from tests.test_published_fit import load_bench

P = load_bench("published")


def _rows(family, vendor, quantity, errs, publishers):
    return [(family, vendor, quantity, publishers[i % len(publishers)], e) for i, e in enumerate(errs)]


def test_bias_summary_groups_by_family_and_vendor_with_its_thresholds():
    rows = (_rows("deepseek_v3", "NVIDIA", "ttft_s", [-0.6, -0.5, -0.55, -0.7, -0.4, -0.5, -0.65, -0.45], "abc")
            # the same family on another vendor: 3 more points, one more publisher
            + _rows("deepseek_v3", "AMD", "ttft_s", [-0.8, -0.2, 0.1], "d")
            # seven points only: not recorded for the family
            + _rows("llama", "NVIDIA", "tpot_s", [0.1] * 7, "abc")
            # eight points from two publishers: not recorded either
            + _rows("qwen3", "NVIDIA", "tpot_s", [0.3] * 8, "ab"))
    rec = P.bias_summary(rows, command="cmd", date="2026-12-05")
    got = {(g["dimension"], g["key"], g["quantity"]): g for g in rec["groups"]}
    assert set(got) == {("family", "deepseek_v3", "ttft_s"), ("vendor", "NVIDIA", "ttft_s"),
                        ("vendor", "NVIDIA", "tpot_s")}
    ds = got[("family", "deepseek_v3", "ttft_s")]
    # eleven errors, sorted: -0.8 -0.7 -0.65 -0.6 -0.55 -0.5 -0.5 -0.45 -0.4 -0.2 0.1: the sixth is -0.5
    assert (ds["n"], ds["publishers"], ds["median_error"]) == (11, 4, -0.5)
    # |errors| sorted: 0.1 0.2 0.4 0.45 0.5 0.5 0.55 0.6 0.65 0.7 0.8
    assert ds["median_abs_error"] == 0.5
    nv = got[("vendor", "NVIDIA", "ttft_s")]
    assert (nv["n"], nv["publishers"], nv["median_error"]) == (8, 3, -0.525)
    # llama's 7 and qwen3's 8 TPOTs pool on NVIDIA: 15 points from 3 publishers, median 0.3
    assert got[("vendor", "NVIDIA", "tpot_s")]["median_error"] == 0.3
    assert [abs(g["median_error"]) for g in rec["groups"]] == sorted((abs(g["median_error"]) for g in rec["groups"]),
                                                                      reverse=True)
    assert rec["points"] == len(rows) and rec["threshold"] == P.BIAS_THRESHOLD
    # and the parser takes what it wrote
    parsed = A.parse_bias(rec)
    assert [g.key for g in parsed.groups] == ["NVIDIA", "deepseek_v3", "NVIDIA"]  # |-0.525| > |-0.5| > |0.3|
    assert parsed.groups[1].published_over_predicted == 2.0


def test_publisher_is_a_repository_or_a_host():
    k = P.publisher_key
    assert (k({"id": "a", "source": {"url": "https://github.com/SemiAnalysisAI/InferenceX/issues/870"}})
            == k({"id": "b", "source": {"url": "https://github.com/semianalysisai/inferencex/pull/3317#top"}})
            == "semianalysisai/inferencex")
    assert k({"id": "c", "source": {"repo": "NVIDIA/TensorRT-LLM", "commit": "abc"}}) == "nvidia/tensorrt-llm"
    assert k({"id": "d", "source": {"url": "https://docs.vllm.ai/en/latest/a.html"}}) == "docs.vllm.ai"
    assert k({"id": "e", "source": {"title": "a paper"}}) == "a paper"


def _bias(**over):
    d = {"date": "2026-12-05", "command": "c", "points": 100, "min_points": 8, "min_publishers": 3, "threshold": 0.25,
         "groups": [{"dimension": "family", "key": "deepseek_v3", "quantity": "output_tokens_per_s", "n": 9,
                     "publishers": 3, "median_error": 0.25, "median_abs_error": 0.3},
                    {"dimension": "family", "key": "deepseek_v3", "quantity": "ttft_s", "n": 10, "publishers": 4,
                     "median_error": -0.5, "median_abs_error": 0.5},
                    {"dimension": "family", "key": "deepseek_v3", "quantity": "tpot_s", "n": 12, "publishers": 5,
                     "median_error": -0.2, "median_abs_error": 0.3},
                    {"dimension": "vendor", "key": "AMD", "quantity": "tpot_s", "n": 20, "publishers": 6,
                     "median_error": 0.1, "median_abs_error": 0.2}]}
    d.update(over)
    return d


def test_bias_lines_say_the_ratio_of_the_flagged_groups_only():
    rec = A.parse_bias(_bias())
    assert A.bias_dict(rec, "deepseek_v3", "NVIDIA", "ideal") is None
    d = A.bias_dict(rec, "deepseek_v3", "AMD", "sglang")
    assert [g["flagged"] for g in d["groups"]] == [True, True, False, False]  # |0.25| reaches the threshold
    lines = A.bias_lines(d)
    assert len(lines) == 1  # AMD's TPOT is within it
    # published / predicted = 1 / (1 + median error): 1 / 0.5 = 2.00 for the TTFT, 1 / 1.25 = 0.80 for tokens/s;
    # in the quantities' order, TTFT first
    assert lines[0].startswith("bias on record: published runs of deepseek_v3 models measured a median 2.00× the "
                               "TTFT and 0.80× the output tokens/s predicted here (10 and 9 steady points from 4 and 3 "
                               "publishers; bench/published.py --shipped of 2026-12-05)")
    assert A.bias_dict(rec, "llama", "NVIDIA", "vllm")["groups"] == [] and A.bias_lines(None) == []


@pytest.mark.parametrize("over, words", [
    ({"groups": {"a": 1}}, "groups is not a list"),
    ({"threshold": -0.1}, "threshold must be a finite number >= 0"),
    ({"min_points": 0}, "min_points must be an integer >= 1"),
    ({"groups": [{"dimension": "gpu", "key": "x", "quantity": "ttft_s", "n": 9, "publishers": 3,
                  "median_error": 0.1, "median_abs_error": 0.1}]}, "groups[0].dimension must be one of family, vendor"),
    ({"groups": [{"dimension": "family", "key": "x", "quantity": "kv", "n": 9, "publishers": 3,
                  "median_error": 0.1, "median_abs_error": 0.1}]}, "groups[0].quantity must be one of"),
    ({"groups": [{"dimension": "family", "key": "x", "quantity": "ttft_s", "n": 0, "publishers": 3,
                  "median_error": 0.1, "median_abs_error": 0.1}]}, "groups[0].n must be an integer >= 1"),
    ({"groups": [{"dimension": "family", "key": "x", "quantity": "ttft_s", "n": 9, "publishers": 3,
                  "median_error": -1.0, "median_abs_error": 0.1}]}, "groups[0].median_error must be a finite number above -1"),
])
def test_parse_bias_refuses_a_malformed_record(over, words):
    with pytest.raises(HardwareError, match="_bias.yaml: " + words.replace("[", r"\[").replace("]", r"\]")):
        A.parse_bias(_bias(**over))


def test_shipped_record_reads_and_keeps_its_own_thresholds():
    rec = A.load_bias()
    assert rec is not None and rec.groups
    assert all(g.n >= rec.min_points and g.publishers >= rec.min_publishers for g in rec.groups)
    assert {g.dimension for g in rec.groups} == {"family", "vendor"}


def test_serve_and_plan_flag_a_matching_group(monkeypatch):
    monkeypatch.setattr(A, "load_bias", lambda: A.parse_bias(_bias()))
    r = run("serve", "deepseek-v3", "-H", "mi300x", "--gpus", "8", "--engine", "sglang", "--concurrency", "4")
    assert r.code == 0, r.err
    assert "bias on record: published runs of deepseek_v3 models measured a median 2.00× the TTFT" in " ".join(r.out.split())
    r = run("serve", "deepseek-v3", "-H", "mi300x", "--gpus", "8", "--engine", "sglang", "--json")
    assert [g["quantity"] for g in r.json["accuracy_bias"]["groups"]] == ["output_tokens_per_s", "ttft_s", "tpot_s",
                                                                           "tpot_s"]
    r = run("serve", "llama-3.1-8b")
    assert "bias on record" not in r.out
    r = run("plan", "deepseek-v3", "-H", "mi300x", "--engine", "sglang", "--rate", "1", "--ttft-p90", "5",
            "--tpot-p90", "0.2", "--max-gpus", "8")
    assert r.code == 0, r.err
    assert "bias on record: published runs of deepseek_v3 models" in " ".join(r.out.split())
    # no prediction, no flag
    r = run("serve", "llama-3.1-70b", "-H", "l4", "--json")
    assert r.json["accuracy_bias"] is None


def test_broken_bias_file_is_one_error_line_naming_it(tmp_path, monkeypatch):
    from tests.test_published_fit import _engines_copy

    _engines_copy(tmp_path, monkeypatch, _bias="points: 3\nmin_points: 8\nmin_publishers: 3\nthreshold: nan\n")
    r = run("serve", "llama-3.1-8b")
    r.assert_error("_bias.yaml", "threshold must be a finite number")


def test_compare_flags_each_model_of_a_flagged_family(monkeypatch):
    monkeypatch.setattr(A, "load_bias", lambda: A.parse_bias(_bias()))
    r = run("compare", "deepseek-v3", "llama-3.1-8b", "-H", "h200-sxm", "--gpus", "8")
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "bias on record: published runs of deepseek_v3 models measured a median 2.00× the TTFT" in text
    assert text.count("bias on record") == 1  # llama has no group in this record
    r = run("compare", "deepseek-v3", "llama-3.1-8b", "-H", "h200-sxm", "--gpus", "8", "--json")
    flagged = {m["model"]["id"]: [g["quantity"] for g in m["accuracy_bias"]["groups"] if g["flagged"]]
               for m in r.json["models"]}
    assert flagged == {"deepseek-ai/DeepSeek-V3": ["output_tokens_per_s", "ttft_s"], "meta-llama/Llama-3.1-8B": []}
    # the CSV is the JSON's leaves (tests/test_csv.py): the record's date and threshold, its groups in JSON alone
    r = run("compare", "deepseek-v3", "llama-3.1-8b", "-H", "h200-sxm", "--gpus", "8", "--format", "csv")
    header = r.out.splitlines()[0].split(",")
    assert "accuracy_bias.date" in header and "accuracy_bias.threshold" in header
