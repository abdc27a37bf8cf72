"""bench/published.py reads the memory fraction a run set for its engine, under the engine's own name (session 61):
SGLang's ``--mem-fraction-static`` (``settings.mem_fraction_static``) and TensorRT-LLM's
``kv_cache_free_gpu_mem_fraction`` as ``planner serve --gpu-memory-utilization`` takes them; before, only the key
``gpu_memory_utilization`` was read, and 200 SGLang and 861 TensorRT-LLM entries were priced at the default."""

import pytest

from tests.test_published_fit import pub


def _entry(engine, settings, gpu="h20", model="deepseek-ai/DeepSeek-R1", gpus=8):
    return {"id": "t", "quantity": "kv_capacity_tokens", "value": 1.0, "engine": engine, "engine_version": "0.5.6",
            "model_config": model, "gpu": gpu, "gpus": gpus, "tp": gpus,
            "settings": {"input_len": 1000, "output_len": 1000, "dtype": "fp8", **settings}}


def test_each_engines_own_key_is_read():
    assert pub.memory_fraction_of(_entry("sglang", {"mem_fraction_static": 0.9})) == 0.9
    assert pub.memory_fraction_of(_entry("trtllm", {"kv_cache_free_gpu_mem_fraction": 0.95})) == 0.95
    assert pub.memory_fraction_of(_entry("vllm", {"gpu_memory_utilization": 0.85})) == 0.85
    # the common key wins where both are given; another engine's key is not this one's
    assert pub.memory_fraction_of(_entry("sglang", {"gpu_memory_utilization": 0.8, "mem_fraction_static": 0.9})) == 0.8
    assert pub.memory_fraction_of(_entry("vllm", {"mem_fraction_static": 0.9})) is None
    assert pub.memory_fraction_of(_entry("sglang", {})) is None


def test_a_stated_sglang_fraction_decides_whether_deepseek_r1_fits_eight_h20():
    # tanjunchen's SGLang runs of DeepSeek-R1 (FP8) on one 8x H20 (96 GB) node pass --mem-fraction-static 0.90: at
    # SGLang's default for that memory class (0.833 of the memory free before the weights) the 78.4 GiB of weights a
    # GPU leave no pool, at 0.9 about 5 GiB
    default = pub.Point(_entry("sglang", {"max_model_len": 65536}))  # (their --context-length 65536)
    stated = pub.Point(_entry("sglang", {"max_model_len": 65536, "mem_fraction_static": 0.9}))
    assert default.mem.fraction == pytest.approx(0.833, abs=1e-3) and not default.mem.fits
    assert stated.mem.fraction == 0.9 and stated.mem.fits
    assert stated.predict() == stated.mem.kv_capacity_tokens > 0
