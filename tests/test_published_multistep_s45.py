"""bench/published.py honours a vLLM V0 entry's multi-step scheduling (``settings.num_scheduler_steps``), as
``planner serve --num-scheduler-steps`` and bench/plan_published.py's request-rate entries do, and refuses it
on an engine that has none. No published figure is asserted here."""

from __future__ import annotations

import yaml

from tests.test_published_fit import pub


def _entry(pid: str, version: str, steps: int | None) -> dict:
    settings = {"arrival": "closed-loop", "client": "in-process", "dtype": "bf16", "input_len": 512,
                "output_len": 64, "concurrency": 8, "num_prompts": 16}
    if steps is not None:
        settings["num_scheduler_steps"] = steps
    return {"id": pid, "quantity": "ttft_s", "value": 0.1, "engine": "vllm", "engine_version": version,
            "model": "meta-llama/Llama-3.1-8B", "model_config": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm",
            "gpus": 1, "tp": 1, "settings": settings,
            "source": {"title": "hand-made", "url": "https://example.invalid/", "quote": "-"}}


def test_multi_step_rounds_reach_the_simulation(tmp_path):
    path = tmp_path / "e.yaml"
    # 0.6.6: both at V0's 2048-token chunks (before 0.6.5 a one-step chunked-prefill server had 512: v0_small_chunks)
    path.write_text(yaml.safe_dump([_entry("one-step", "0.6.6", None), _entry("ten-step", "0.6.6", 10)]))
    points, skipped = pub.load_points(path, None)
    assert skipped == [] and [p.engine_name for p in points] == ["vllm-v0", "vllm-v0"]
    one, ten = points
    assert (one.scheduler_steps, ten.scheduler_steps) == (1, 10)
    # with rounds of ten decode steps a closed-loop client's next prompt waits for the round in flight to end
    # (hardware/serve.py run_steps), so the mean time to first token grows
    assert ten.predict() > one.predict()


def test_multi_step_on_an_engine_without_it_is_skipped_with_the_reason(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump([_entry("v1-ten-step", "0.9.0", 10)]))
    points, skipped = pub.load_points(path, None)
    assert points == []
    (sid, why), = skipped
    assert sid == "v1-ten-step" and "num_scheduler_steps" in why and "vLLM V0" in why
