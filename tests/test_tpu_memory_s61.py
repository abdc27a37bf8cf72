"""vLLM's memory accounting on a TPU (session 61): the tpu-inference backend sizes its KV cache as the devices'
bytes_limit × gpu_memory_utilization − bytes in use once the weights are loaded
(tpu_inference/worker/tpu_worker.py determine_available_memory), with no profile run, no CUDA context or NCCL
memory, no CUDA graph pool and no RoPE table, and its Gemma 4 leaves the audio tower out
(``profiles/engines/vllm.yaml`` memory.platforms.Google)."""

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.errors import HardwareError
from planner.analysis.parallel import tp_plan
from planner.cli.common import load_model
from planner.hardware import engine as E
from planner.hardware.engine import engine_analysis, engine_memory, load_engine, loaded_weights
from planner.hardware.profiles import load_profile

GiB = 2**30
GEMMA = "google/gemma-4-E2B-it"


def _memory(model, gpu, **kw):
    spec = load_model(model).spec
    eng = load_engine("vllm")
    a, _ = engine_analysis(analyze(spec, Options(context=kw.pop("context", 4096))), eng)
    return a, engine_memory(a, load_profile(gpu), eng, tp_plan(spec, 1), **kw)


def test_v5e_pool_line_by_line_against_the_backends_log():
    # xbill9/gemma4-dev tpu-vllm-v5e1-2b/.../2026-08-09-serving-params-v5e1/REPORT.md @4cf2d8b (vLLM 0.26.1rc1, one
    # v5e, --gpu-memory-utilization 0.92 --max-model-len 32768): "total_hbm_limit_cap_gb=14.49,
    # total_hbm_used_gb=8.97, total_hbm_avail_gb=5.52", "KV cache | 5.52 GiB = 321,344 tokens"
    a, m = _memory(GEMMA, "tpu-v5e", gpu_memory_utilization=0.92, max_model_len=32768, max_num_batched_tokens=4096)
    assert round(m.budget_bytes / GiB, 2) == 14.49
    assert (m.activation_bytes, m.non_torch_bytes, m.cuda_graph_bytes, m.rope_cache_bytes) == (0, 0, 0, 0)
    assert m.weights_bytes / GiB == pytest.approx(8.97, rel=0.01)  # bytes in use: the weights as loaded
    assert m.kv_pool_bytes == m.budget_bytes - m.weights_bytes
    assert m.kv_pool_bytes / GiB == pytest.approx(5.52, rel=0.01)
    assert m.kv_bytes_per_token == 18_432  # 5.52 GiB / 321,344 tokens = 18,444 B
    assert m.kv_capacity_tokens == pytest.approx(321_344, rel=0.015)


def test_the_gpu_accounting_is_untouched_and_timing_is_the_same_profile():
    _, tpu = _memory("meta-llama/Llama-3.1-8B", "tpu-v6e")
    _, gpu = _memory("meta-llama/Llama-3.1-8B", "h100-sxm")
    assert tpu.activation_bytes == tpu.non_torch_bytes == tpu.cuda_graph_bytes == tpu.rope_cache_bytes == 0
    assert gpu.activation_bytes > 0 and gpu.non_torch_bytes > 0 and gpu.cuda_graph_bytes > 0 and gpu.rope_cache_bytes > 0
    assert tpu.visible_bytes == tpu.device_bytes == 33_550_237_696  # vLLM PR #16211's v6e figure
    assert gpu.visible_bytes < gpu.device_bytes  # the driver's reservation on a CUDA device
    eng = load_engine("vllm")
    on = eng.on(load_profile("tpu-v6e"))
    assert on is not eng and eng.on(load_profile("h100-sxm")) is eng
    assert (on.step_overhead_s, on.request_overhead_s, on.launch_overhead_per_op_s, on.weight_only_efficiency) == \
        (eng.step_overhead_s, eng.request_overhead_s, eng.launch_overhead_per_op_s, eng.weight_only_efficiency)
    sgl = load_engine("sglang")  # no platforms block: the same accounting everywhere
    assert sgl.on(load_profile("tpu-v6e")) is sgl and not sgl.platform_memory


def test_gemma4_audio_tower_left_out_on_tpu_only():
    spec = load_model(GEMMA).spec
    audio = sum(t.numel for t in spec.tensors() if t.name.startswith(("model.audio_tower", "model.embed_audio")))
    assert audio == 307_183_904
    eng = load_engine("vllm")
    a, _ = engine_analysis(analyze(spec, Options(context=4096)), eng)
    plan = tp_plan(spec, 1)
    gpu = loaded_weights(a, plan, eng.on(load_profile("mi300x")))
    tpu = loaded_weights(a, plan, eng.on(load_profile("tpu-v5e")))
    assert gpu.counted_bytes_per_gpu - tpu.counted_bytes_per_gpu == 2 * audio  # bf16
    assert any("model.audio_tower" in n for n in tpu.notes) and not any("audio" in n for n in gpu.notes)
    # a model without those tensors loads the same on both
    llama = load_model("meta-llama/Llama-3.1-8B").spec
    la, _ = engine_analysis(analyze(llama, Options(context=4096)), eng)
    lp = tp_plan(llama, 1)
    assert loaded_weights(la, lp, eng.on(load_profile("tpu-v5e"))).counted_bytes_per_gpu == \
        loaded_weights(la, lp, eng.on(load_profile("h100-sxm"))).counted_bytes_per_gpu


@pytest.mark.parametrize("platforms, match", [
    ([1, 2], "memory.platforms must map a device vendor"),
    ({"Google": 3}, "memory.platforms must map a device vendor"),
    ({"Google": {"platforms": {}}}, "cannot hold platforms of its own"),
    ({"Google": {"driver_reserved": "lots"}}, "driver_reserved"),
    ({"Google": {"unloaded": {"gemma4_text": "model.audio_tower"}}}, "memory.unloaded must map a model_type"),
    ({"Google": {"unloaded": {"gemma4_text": []}}}, "memory.unloaded must map a model_type"),
    ({"Google": {"page_size": "huge"}}, "memory.page_size"),
])
def test_bad_platform_blocks_are_refused(monkeypatch, platforms, match):
    real = E._read_yaml

    def read(name, _children=()):
        d = real(name, _children)
        if name != "vllm":
            return d
        return {**d, "memory": {**d["memory"], "platforms": platforms}}

    monkeypatch.setattr(E, "_read_yaml", read)
    with pytest.raises(HardwareError, match=match):
        load_engine("vllm")


def test_the_breakdown_names_what_reports_the_devices_memory():
    rows = {r[0]: r[1] for r in _memory(GEMMA, "tpu-v5e")[1].breakdown()}
    assert rows["device memory (JAX bytes_limit)"] == int(15.75 * GiB)
    assert "device memory (nvidia-smi)" in {r[0] for r in _memory(GEMMA, "h100-sxm")[1].breakdown()}
    assert "device memory (rocm-smi)" in {r[0] for r in _memory(GEMMA, "mi300x")[1].breakdown()}


def test_a_layouts_stage_weights_leave_out_what_the_engine_does_not_load():
    from planner.analysis.parallel import Layout, layout_plan, stage_weights_bytes

    spec = load_model(GEMMA).spec
    a = analyze(spec, Options(context=4096))
    plan = layout_plan(spec, Layout())
    (whole,) = stage_weights_bytes(spec, a.fmt, plan)
    (tpu,) = stage_weights_bytes(spec, a.fmt, plan, load_engine("vllm").on(load_profile("tpu-v5e")).unloaded.get(
        spec.model_type, ()))
    assert whole - tpu == 2 * 307_183_904
    eng = load_engine("vllm")
    ea, _ = engine_analysis(a, eng)
    assert tpu == loaded_weights(ea, tp_plan(spec, 1), eng.on(load_profile("tpu-v5e"))).counted_bytes_per_gpu


def test_tpu_page_size_as_the_backend_picks_it():
    # xbill9's v5e REPORT (block-size table): 64-token pages at max_model_len 32,768 (5,021 blocks, 512 a request) and
    # 32 at 16,384 (10,043 blocks), with vLLM's default 256 sequences there
    assert E.tpu_page_size(32768, 256) == 64 and E.tpu_page_size(16384, 256) == 32
    assert E.tpu_page_size(8192, 256) == 256 and E.tpu_page_size(2048, 256) == 128  # next_pow2 // 16, at most 256
    assert E.tpu_page_size(131072, 256) == 256 and E.tpu_page_size(131072, 1024) == 1024  # SMEM's bound wins
    assert E.tpu_page_size(100, 256) == 16
    _, m = _memory(GEMMA, "tpu-v5e", gpu_memory_utilization=0.92, max_model_len=32768, max_num_batched_tokens=4096)
    assert m.block_size == 64 and m.kv_capacity_tokens % 64 == 0
    _, g = _memory(GEMMA, "h100-sxm", max_model_len=32768)
    assert g.block_size == 16  # CUDA's vLLM: CacheConfig's 16
