"""Device memory as the device reports it (issue 13: "Device memory is as the device reports it"), for the five
profiles that held a vendor label read as decimal GB until session 42: the H20 (nvidia-smi's 97871 MiB), the MI300X
(rocm-smi's and torch's 196592 MiB), the MI325X and MI355X (ROCm's specification table in GiB) and Gaudi 3 (hl-smi's
131072 MiB). The H20's case is one a user meets: SGLang's DeepSeek-V3 FP8 at TP8 on eight H20s, run in sglang PRs #6885 and #7631, did not fit under the label."""

from __future__ import annotations

import json

import pytest

from planner.hardware.profiles import load_profile
from tests.clirun import run

MIB, GIB = 2**20, 2**30


@pytest.mark.parametrize("name, total, label_gb", [("h20", 97871 * MIB, 96), ("mi300x", 196592 * MIB, 192),
                                                   ("mi325x", 256 * GIB, 256), ("mi355x", 288 * GIB, 288),
                                                   ("gaudi3", 131072 * MIB, 128)])
def test_memory_is_the_reported_or_physical_total_not_the_decimal_label(name, total, label_gb):
    hw = load_profile(name)
    assert hw.memory_bytes == total
    assert hw.memory_bytes > label_gb * 10**9  # each part holds more than its label read in decimal GB


def test_deepseek_v3_fits_eight_h20s_on_sglang_as_the_published_runs_did():
    # sglang PR #7631's server: --tp 8 --context-length 4096 --mem-fraction-static 0.9 on 8x H20 (96 GB)
    r = run("serve", "deepseek-v3", "-H", "h20", "--gpus", "8", "--engine", "sglang", "--max-model-len", "4096",
            "--gpu-memory-utilization", "0.9", "--concurrency", "8", "--input-len", "515", "--output-len", "268", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["memory"]["fits"] is True
    kv = d["memory"]["kv_capacity_tokens"]
    # 0.9 of the memory free before the weights, less 78.4 GiB of weights: a few GiB of 70,272-byte tokens (MLA's
    # latent cache, replicated on every rank) -- tens of thousands of tokens, enough for the run's 8 x 783
    assert 8 * 783 < kv < 200_000
