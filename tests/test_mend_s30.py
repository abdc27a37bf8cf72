"""Small items the session-30 reviewers left (wave s30, helper M).

- ``hardware/serve.py`` ``check_simulated_steps``: a closed-loop run over both budgets was refused for its prompt
  chunks "each priced apart", though ``_closed_loop`` prices each distinct step shape once and what is over the
  limit is the decode steps (2,048 requests of 98,304 + 32,768 tokens, three at once: 22 M steps, 111 shapes); the
  step count is now checked first. In a together run the prompts it names are those it simulates (one full wave
  and the rest), not those sent: said so, with the number sent.
- ``runtime/verify.py`` ``memory_guard``: ``verify --reference`` (no --batch or --context) was told "--batch N
  fits" or "use a smaller model"; it now names what it can change (free memory, --device, --dtype). The free memory
  was shown below zero ("-1.00 GiB is free") and the weights blamed where ``ulimit -v`` and the CPU threads' stacks
  were what bound; ``--threads 4096`` under ``ulimit -v 4000000`` ended in ``internal error: MemoryError`` reading the
  hardware profile (``set_cpu_threads``).

The sweep's pinned refusals (item 1) are in tests/test_audit_s29e.py (``REFUSED_DEFAULTS``); the Hugging Face cache
variable (item 4) needed no change: huggingface_hub 2.4 expands ``$VAR`` in HF_HOME / HF_HUB_CACHE itself.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from planner.analysis.errors import OptionError

REPO = Path(__file__).resolve().parents[1]


def _scenario(**kw):
    from planner.hardware.serve import Scenario

    return Scenario(**kw)


# ---- serve's step budget names the cost that is over it ------------------------------------------------------------

def test_a_closed_loop_run_of_too_many_decode_steps_names_them_not_the_chunks():
    from planner.hardware.serve import STEP_SIM_MAX_LATER_CHUNKS, check_simulated_steps

    sc = _scenario(input_len=98_304, output_len=32_768, concurrency=256, arrival="closed-loop", requests=2048)
    assert 2048 * (98_304 // 8192 - 1) > STEP_SIM_MAX_LATER_CHUNKS  # the chunks are over their limit too
    with pytest.raises(OptionError) as exc:
        check_simulated_steps(sc, 2048, 3, 8192)
    msg = str(exc.value)
    # 2,048 × 32,767 decode tokens, three a step: ⌈67,106,816 / 3⌉
    assert "22,368,939 engine steps" in msg and "32,768 output tokens" in msg and "at most 3 running" in msg
    assert "past each prompt's first" not in msg and "lower --output-len or --requests" in exc.value.hint


def test_a_together_run_names_the_prompts_it_simulates_and_those_sent():
    from planner.hardware.serve import check_simulated_steps

    # one wave of 2 and the 1 left over stand for 20,001 prompts of 50 M tokens: 3 × 6,103 later chunks
    sc = _scenario(input_len=50_000_000, output_len=2, concurrency=20_001)
    with pytest.raises(OptionError) as exc:
        check_simulated_steps(sc, 3, 2, 8192, decodes=False, sent=20_001)
    msg = str(exc.value)
    assert msg.startswith("3 prompt(s) simulated per replica (of 20,001 sent: one wave of at most 2 and the rest")
    assert "18,309 prefill steps past each prompt's first" in msg


# ---- verify's memory guard -----------------------------------------------------------------------------------------

torch_needed = pytest.mark.skipif(not __import__("importlib").util.find_spec("torch"),
                                  reason="verify needs the torch runtime (pip install 'planner[runtime]')")


@torch_needed
def test_reference_hints_name_what_it_can_change():
    """``verify --reference`` has no --batch or --context: a config past memory is told to free memory, use the
    other --device or --dtype bf16, not '--batch N fits' or 'a smaller model'."""
    import torch

    from planner.analysis.config import parse_config
    from planner.runtime.reference import _memory_guard
    from tests.test_runtime import TINY

    spec = parse_config(dict(TINY["llama"], hidden_size=2**14, intermediate_size=2**24))  # 6.6 TB of fp32
    with pytest.raises(OptionError) as exc:
        _memory_guard(spec, "fp32", torch.device("cpu"), 20)
    hint = exc.value.hint
    assert "held twice" in hint and "--device cuda" in hint and "--dtype bf16" in hint
    assert "--batch" not in hint and "--context" not in hint and "smaller model" not in hint


@torch_needed
def test_free_memory_is_clamped_at_zero_and_the_address_space_limit_named(monkeypatch):
    from planner.runtime import calibrate
    from planner.runtime.verify import GiB, memory_guard

    monkeypatch.setattr(calibrate, "address_space_left", lambda: 70 * 2**20)
    monkeypatch.setattr(calibrate, "meminfo_bytes", lambda key: 100 * GiB)
    with pytest.raises(OptionError) as exc:
        memory_guard(weights_bytes=1000, kv_bytes_at=lambda n: n, batch=1, context=8, workspace=256 * 2**20,
                     free_bytes=70 * 2**20, device="cpu", margin_bytes=GiB)
    msg = str(exc.value)
    assert "but 0.00 GiB is free" in msg and "-" not in msg.split("but ")[1].split(" GiB")[0]
    assert "the address-space limit (ulimit -v) binds, leaving this process 0.07 GiB" in msg
    assert "ulimit -v" in exc.value.hint and "--threads" in exc.value.hint and "weights alone" not in exc.value.hint


def _ulimit_v_4000000():
    resource.setrlimit(resource.RLIMIT_AS, (4_000_000 * 1024, 4_000_000 * 1024))


@torch_needed
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ulimit -v is read from /proc/self/status (Linux)")
def test_threads_past_the_address_space_limit_are_one_error_line(tmp_path):
    """4,096 CPU threads' stacks fill a 4,000,000 KiB address space: reading the hardware profile then failed with
    MemoryError (an internal error). --threads is not capped: the limit is named."""
    from tests.test_runtime import TINY

    p = tmp_path / "config.json"
    p.write_text(json.dumps(TINY["llama"]))
    r = subprocess.run([sys.executable, "-m", "planner", "verify", str(p), "--device", "cpu", "--steps", "1",
                        "--warmup", "0", "--context", "8", "--no-profile", "--hardware", "cpu", "--threads", "4096",
                        "--json"], cwd=REPO, capture_output=True, text=True, timeout=120,
                       preexec_fn=_ulimit_v_4000000)
    assert r.returncode == 1 and r.stdout == "", (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert r.stderr.startswith("Error: --threads 4,096: the CPU threads' stacks leave this process"), r.stderr
    assert "ulimit -v" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("value", ["$PLANNER_TEST_UNSET_VAR/hf", "${PLANNER_TEST_UNSET_VAR}/hf"])
def test_a_cache_variable_naming_an_unset_variable_is_refused(tmp_path, monkeypatch, value):
    """huggingface_hub expands ``$VAR`` in HF_HOME itself, but leaves an unset one literal: the cache became the
    relative folder ``./$PLANNER_TEST_UNSET_VAR/hf/hub`` under wherever planner ran."""
    from tests.clirun import run

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLANNER_TEST_UNSET_VAR", raising=False)
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    r = run("analyze", "acme/model", env={"HF_HOME": value, "HF_HUB_OFFLINE": "1"})
    r.assert_error("HF_HOME=", "PLANNER_TEST_UNSET_VAR", "not set")
    assert list(tmp_path.iterdir()) == []


def test_a_cache_variable_whose_variables_are_set_is_accepted(tmp_path, monkeypatch):
    from planner.cli import hub

    monkeypatch.setenv("PLANNER_TEST_SET_VAR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", "$PLANNER_TEST_SET_VAR/hf")
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    hub._check_cache_var()  # no error
    monkeypatch.setenv("HF_HOME", "/data/a$b/hf")  # absolute: huggingface_hub uses the literal folder the user named
    monkeypatch.delenv("b", raising=False)
    hub._check_cache_var()
