"""``--format csv`` of every command is one table with a header row, loadable with csv.DictReader, in
base units: each row is one of the JSON's records and each column one of its scalar fields (nested keys
joined with '.'; lists as JSON arrays), with the same value."""

import csv
import io
import json

import pytest

from tests.clirun import run

TINY = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}


def leaves(d, prefix=""):
    """(dotted path, value) of every scalar or list-of-scalars field of a JSON object (lists of objects
    stay in the JSON)."""
    for k, v in d.items():
        if isinstance(v, dict):
            yield from leaves(v, f"{prefix}{k}.")
        elif isinstance(v, list):
            if all(not isinstance(x, (dict, list)) for x in v):
                yield f"{prefix}{k}", v
        else:
            yield f"{prefix}{k}", v


def same(cell: str, value) -> bool:
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, int):
        return cell.lstrip("-").isdigit() and int(cell) == value  # a plain int: no separators, no units
    if isinstance(value, float):
        return float(cell) == value
    if isinstance(value, list):
        return json.loads(cell) == value
    return cell == value


def load_csv(*args) -> tuple[list[str], list[dict]]:
    r = run(*args, "--format", "csv")
    assert r.code == 0, r.err
    reader = csv.DictReader(io.StringIO(r.out))
    rows = list(reader)
    assert next(csv.reader(io.StringIO(r.out))) == reader.fieldnames  # one header row, then records only
    assert all(None not in row and None not in row.values() for row in rows)  # every row as wide as the header
    return reader.fieldnames, rows


def check(args, records_of, deterministic=lambda key: True):
    header, rows = load_csv(*args)
    records = records_of(run(*args, "--json").json)
    assert len(rows) == len(records) >= 1
    assert len(header) == len(set(header))
    for row, rec in zip(rows, records):
        fields = dict(leaves(rec))
        assert set(fields) <= set(header)
        for key in header:
            if key in fields and deterministic(key):
                assert same(row[key], fields[key]), (key, row[key], fields[key])
            elif key not in fields:
                assert row[key] == "", key  # a column another record has


@pytest.mark.parametrize("args", [
    ["analyze", "llama-3.1-8b", "--context", "4096", "--batch", "8"],
    ["analyze", "ai21labs/AI21-Jamba-1.5-Mini", "--gpus", "2", "--sliding-window", "1024"],
    ["analyze", "deepseek-v3", "--hardware", "a10g"],  # nothing fits: nulls, not -1
])
def test_analyze_csv_is_the_json(args):
    check(args, lambda d: [d])


@pytest.mark.parametrize("args, key", [
    (["trace", "llama-3.1-8b", "--context", "2000"], "ops"),
    (["trace", "google/gemma-3-1b-it", "--all-layers"], "ops"),
    (["trace", "llama-3.1-8b", "--sweep", "batch=1,8,64", "--sweep", "context=1k,32k"], "sweep"),
])
def test_trace_csv_is_the_json(args, key):
    check(args, lambda d: d[key])


def test_compare_csv_is_the_json():
    def ranked(d):
        by_id = {m["model"]["id"]: m for m in d["models"]}
        return [{"rank": i + 1, **by_id[mid]} for i, mid in enumerate(d["ranking"])]

    check(["compare", "llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b", "--batch", "16"], ranked)


@pytest.mark.parametrize("args, records_of", [
    (["hardware", "list"], lambda d: d["profiles"]),
    (["hardware", "show", "h100-sxm"], lambda d: [d["profile"]]),
    (["models", "list"], lambda d: d["models"]),
])
def test_listing_csv_is_the_json(args, records_of):
    check(args, records_of)


def test_serve_csv_is_the_json():
    check(["serve", "llama-3.1-8b", "--concurrency", "8", "--gpus", "2"], lambda d: [d])


def test_plan_csv_is_the_json():
    from planner.cli.plan_cmd import plan_records

    check(["plan", "llama-3.1-8b", "--max-gpus", "8", "--requests", "40"], plan_records)


def test_verify_csv_is_the_json(config_dir):
    pytest.importorskip("torch", reason="verify needs the torch runtime")
    path = config_dir(TINY)
    args = ["verify", str(path), "--device", "cpu", "--context", "16", "--steps", "2", "--warmup", "1",
            "--hardware", "cpu", "--threads", "1", "--no-profile"]
    # measured timings differ between the two runs; the exact checks and the options do not
    check(args, lambda d: [d], deterministic=lambda key: key.split(".")[0] in ("checks", "options", "model", "schema_version"))


def test_csv_numbers_are_plain():
    """No thousands separators or units: every numeric JSON field is a bare number in the CSV."""
    header, rows = load_csv("analyze", "llama-3.1-8b")
    assert rows[0]["params.total"] == "8030261248"
    assert rows[0]["memory.fits"] == "true"
    assert not any("GiB" in v or "," in v for k, v in rows[0].items() if k.endswith("_bytes"))
