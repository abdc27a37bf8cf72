"""``planner verify`` red-teamed with hostile configs and options (wave s30, helper H2): each case below was an
``internal error:`` line, or an allocation past what the machine (or ``ulimit -v``) allows, before its fix; now it
is one ``Error:`` line refusing it before anything is allocated, or a run that succeeds. Found by a seeded fuzzer
(mutated tiny configs of tests/test_runtime.py, hostile options and --weights folders, run in subprocesses)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="verify needs the torch runtime (pip install 'planner[runtime]')")

from planner.analysis.config import parse_config  # noqa: E402
from tests.clirun import run  # noqa: E402
from tests.test_families import CASES  # noqa: E402
from tests.test_runtime import TINY  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHEAP = ("--device", "cpu", "--steps", "1", "--warmup", "0", "--context", "8", "--no-profile", "--hardware", "cpu",
         "--threads", "1", "--json")


def _write(tmp_path: Path, cfg: dict) -> str:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return str(p)


def test_the_largest_seed_runs(tmp_path):
    """--seed takes 0 .. 2**64 - 1; the KV cache's per-tensor seeds (seed + i) passed torch's uint64 (ValueError:
    Overflow when unpacking long long)."""
    r = run("verify", _write(tmp_path, TINY["llama"]), *CHEAP, "--seed", str(2**64 - 1))
    assert r.code == 0, r.err
    assert r.json["checks"]["params"]["ok"]


@pytest.mark.parametrize("change,fragment", [
    (dict(n_routed_experts=1000, n_group=1048576, topk_group=5), "n_group (1048576) does not split the 1000 routed"),
    (dict(n_group=2, topk_group=3), "topk_group (3) must be between 1 and n_group (2)")])
def test_a_grouped_router_splits_its_experts(tmp_path, change, fragment):
    """DeepSeek-V3's grouped router (glm4_moe_lite here) views the experts as (n_group, experts / n_group) and keeps
    topk_group groups: verify refuses a config where that cannot run (its router raised a RuntimeError on reshape /
    topk). The analysis reads it, as transformers' config class does (tests/test_fuzz.py counts a 4-expert V3 under
    the class's default n_group 8)."""
    cfg = dict(TINY["glm4_moe_lite"], num_experts_per_tok=2, **change)
    assert parse_config(cfg).numerics.n_group == change["n_group"]
    run("verify", _write(tmp_path, cfg), *CHEAP).assert_error(fragment)


def test_top2_groups_of_one_expert_are_refused_by_verify(tmp_path):
    """8 experts in DeepseekV3Config's default 8 groups: analysed (the counts do not depend on it), but a group is
    ranked by its two best experts, which one expert does not have (torch.topk: selected index k out of range)."""
    cfg = dict(CASES["deepseek_v3"], n_group=None, topk_group=None)
    assert parse_config(cfg).numerics.n_group == 8
    run("verify", _write(tmp_path, cfg), *CHEAP).assert_error("leaves groups of one expert")


@pytest.mark.parametrize("flag", ["--tp", "--pp"])
def test_cpu_ranks_are_memory_guarded_before_they_spawn(tmp_path, flag):
    """A 6.6 TB model under --tp 2 / --pp 2 on CPU: the ranks share this host's memory; they were spawned and each
    allocated its shard (an OOM, or 'run failed: rank 0: RuntimeError: ... can't allocate memory')."""
    cfg = dict(TINY["llama"], hidden_size=2**14, intermediate_size=2**24)  # 6.6 TB of fp32 weights
    run("verify", _write(tmp_path, cfg), *CHEAP, flag, "2").assert_error("not enough cpu memory", "weights")


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ulimit -v is read from /proc/self/status (Linux)")
def test_ulimit_v_is_the_memory_verify_has(tmp_path):
    """Under ``ulimit -v`` (RLIMIT_AS, common on shared clusters) of 4 GiB, 5.4 GB of attention weights: free memory
    was MemAvailable only, so the guard passed and torch's allocator failed (an internal error)."""
    cfg = dict(TINY["llama"], num_attention_heads=5, num_key_value_heads=5, head_dim=2**19)
    r = subprocess.run([sys.executable, "-m", "planner", "verify", _write(tmp_path, cfg), *CHEAP], cwd=REPO,
                       capture_output=True, text=True, timeout=120, preexec_fn=_limit_address_space)
    assert r.returncode == 1 and r.stdout == "", (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert r.stderr.startswith("Error: not enough cpu memory") and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.fixture
def llama_checkpoint(tmp_path):
    pytest.importorskip("transformers", reason="the reference check compares with transformers")
    from tests.test_reference import save_checkpoint

    d = tmp_path / "llama"
    save_checkpoint(d, "llama")
    return d


def test_reference_refuses_a_config_larger_than_memory_before_building(llama_checkpoint, tmp_path):
    """--reference built our decoder (and then transformers') before comparing shapes with the checkpoint: a 6.6 TB
    config beside a tiny checkpoint reached torch's allocator (an internal error)."""
    cfg = dict(json.loads((llama_checkpoint / "config.json").read_text()), hidden_size=2**14, intermediate_size=2**24)
    r = run("verify", _write(tmp_path, cfg), "--weights", str(llama_checkpoint), "--reference", "transformers",
            "--device", "cpu", "--json")
    r.assert_error("not enough cpu memory")


def test_reference_refuses_a_prompt_past_its_token_bound(llama_checkpoint):
    """Both models prefill the whole --prompt (a mask of tokens × tokens: 100,000 tokens asked torch for 10 GB)."""
    r = run("verify", str(llama_checkpoint), "--weights", str(llama_checkpoint), "--reference", "transformers",
            "--device", "cpu", "--json", "--prompt", "Paris " * 5000)
    r.assert_error("the prompt tokenizes to 5,000 tokens", "at most 4,096")
