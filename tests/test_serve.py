"""Engine memory accounting against engines' published breakdowns, the expected-time arithmetic against
hand-computed cases, and ``planner serve`` on the five models of compare (no timing assertions)."""

import math
from dataclasses import replace

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.parallel import tp_plan
from planner.analysis.spec import QuantSpec, Tensor
from planner.analysis.trace import Op
from planner.hardware.engine import (engine_memory, fewest_gpus, kv_bytes_per_token_per_gpu, load_engine,
                                     mxfp4_padded_bytes)
from planner.hardware.expected import FACTORS, IDEAL, Factors, factors_for, for_column, step_cost
from planner.hardware.profiles import load_profile
from planner.hardware.serve import serve
from tests.clirun import run
from tests.test_cli_compare import FIVE

GiB = 2**30


def _model(name):
    from planner.cli.common import load_model

    return load_model(name).spec


def gib2(x: int) -> str:
    """As vLLM prints GiB: two decimals."""
    return f"{x / GiB:.2f}"


# ---- memory, line by line -------------------------------------------------------------------------


def test_vllm_h100_llama_8b_log_line_by_line():
    """vLLM 0.19 start-up log of Llama-3.1-8B-Instruct on one H100 80GB (llm-d-incubation/llm-d-planner
    accuracy/results/v0.19.0/logs, bench/published.yaml vllm019-llama31-8b-h100-tp1-*), --max-model-len 8192
    --gpu-memory-utilization 0.95: 'Requested memory: 0.950000 (util), 75.23 GiB'; 'torch peak memory
    increase: 1.89GiB; non-torch forward increase memory: 0.25GiB; weights memory: 14.99GiB'; 'Available KV
    cache memory: 58.11 GiB'; 'GPU KV cache size: 476,016 tokens'; 'Maximum concurrency for 8,192 tokens per
    request: 58.11x'."""
    spec = _model("llama-3.1-8b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 1), max_model_len=8192,
                      gpu_memory_utilization=0.95)
    assert gib2(m.budget_bytes) == "75.23"
    assert gib2(m.weights_bytes) == "14.99"  # counted 14.96 GiB + the 32 MiB RoPE cache
    assert abs(m.activation_bytes / GiB - 1.89) < 0.05
    assert gib2(m.non_torch_bytes) == "0.25"
    assert abs(m.kv_pool_bytes / GiB - 58.11) < 0.05
    assert abs(m.kv_capacity_tokens - 476_016) / 476_016 < 0.002
    assert m.kv_capacity_tokens % 16 == 0
    assert abs(m.max_concurrency - 58.11) < 0.1
    # the breakdown adds up: cap = weights + activation + non-torch + KV pool
    assert m.budget_bytes == m.weights_bytes + m.activation_bytes + m.non_torch_bytes + m.kv_pool_bytes


def test_vllm_tp2_non_torch_memory():
    """The same logs at TP2: 'non-torch forward increase memory: 2.07GiB' (Llama-3.1-8B, weights 7.51 GiB,
    'GPU KV cache size: 1,044,688 tokens')."""
    spec = _model("llama-3.1-8b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 2), max_model_len=8192,
                      gpu_memory_utilization=0.95)
    assert gib2(m.weights_bytes) == "7.51"
    assert abs(m.non_torch_bytes / GiB - 2.07) < 0.1
    assert abs(m.kv_capacity_tokens - 1_044_688) / 1_044_688 < 0.02


def test_vllm_multi_gpu_non_torch_memory_by_platform():
    """vllm.yaml: NCCL's NVLink-SHARP buffers exist only on NVSwitch Hopper/Blackwell platforms (2.1 GiB at
    TP>1 in the H100 logs); A100 and PCIe cards log a few hundred MiB; one GPU is the same everywhere."""
    eng = load_engine("vllm")
    assert eng.non_torch_bytes(2, load_profile("h100-sxm")) == round(2.1 * GiB)
    assert eng.non_torch_bytes(4, load_profile("h200-sxm")) == round(2.1 * GiB)
    for gpu in ("a100-80gb", "h100-pcie", "l40s", "rtx-4090", "a10"):
        assert eng.non_torch_bytes(2, load_profile(gpu)) == round(0.35 * GiB), gpu
        assert eng.non_torch_bytes(1, load_profile(gpu)) == eng.non_torch_bytes(1, load_profile("h100-sxm"))


def test_vllm_a10_tp4_qwen3_30b_log():
    """vLLM issue #17469 (vLLM 0.8.5 V1, Qwen3-30B-A3B on 4x A10 at TP4, max_model_len 8192, cap 0.9):
    'Model loading took 14.2474 GiB' per rank, 'GPU KV cache size: 198,784 tokens', 'Maximum concurrency
    for 8,192 tokens per request: 24.27x'. A PCIe platform: no NVLS buffers (before: 2.1 GiB, -35 %)."""
    spec = _model("Qwen/Qwen3-30B-A3B")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("a10"), load_engine("vllm"), tp_plan(spec, 4), max_model_len=8192)
    assert abs(m.weights_bytes / GiB - 14.2474) < 0.05
    assert abs(m.kv_capacity_tokens - 198_784) / 198_784 < 0.05
    assert abs(m.max_concurrency - 24.27) / 24.27 < 0.05


def test_vllm_v0_profile_run_of_one_max_model_len_prompt():
    """vLLM issue #10517 (V0 engine, Llama-3.1-8B on an RTX 3090, cap 0.9, max_model_len 20000; chunked
    prefill off below 32K, so max_num_batched_tokens = max_model_len): 'total_gpu_memory=23.58GiB',
    'Loading model weights took 14.9888 GB' (GiB), 'peak_torch_memory=17.06GiB' (an activation peak of
    2.07 GiB), 'non_torch_memory=0.35GiB', 'kv_cache_size=3.81GiB', '# GPU blocks: 1952' (31,232 tokens)."""
    spec = _model("llama-3.1-8b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("rtx-3090"), load_engine("vllm"), tp_plan(spec, 1), max_model_len=20000,
                      gpu_memory_utilization=0.9, max_num_batched_tokens=20000)
    assert abs(m.visible_bytes / GiB - 23.58) < 0.05
    assert gib2(m.weights_bytes) == "14.99"
    assert abs(m.activation_bytes / GiB - 2.07) < 0.2
    assert abs(m.non_torch_bytes / GiB - 0.35) < 0.15
    assert abs(m.kv_pool_bytes / GiB - 3.81) < 0.25
    assert abs(m.kv_capacity_tokens - 31_232) / 31_232 < 0.07


def test_rope_cache_is_32_mib_at_128k():
    spec = _model("llama-3.1-8b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 1))
    assert m.rope_cache_bytes == 131072 * 128 * 2 == 32 * 2**20


def test_sglang_mem_fraction_static_default_and_pool():
    """server_args.py: H100 (gpu_mem 81,559 MiB < 90 GiB): reserved 9.5 GiB + 0.5 GiB × tp."""
    spec = _model("llama-3.1-8b")
    hw = load_profile("h100-sxm")
    eng = load_engine("sglang")
    assert eng.default_fraction(hw, 1) == round((81559 - 10240) / 81559, 3)
    assert eng.default_fraction(hw, 8) == round((81559 - (9.5 + 4) * 1024) / 81559, 3)
    a = analyze(spec, Options())
    m = engine_memory(a, hw, eng, tp_plan(spec, 1))
    # KV = mem_fraction_static x free before the weights - weights (model_runner.profile_max_num_token)
    free_before = m.visible_bytes - m.non_torch_bytes
    assert m.kv_pool_bytes == int(m.fraction * free_before) - m.weights_bytes
    assert m.kv_capacity_tokens == m.kv_pool_bytes // (32 * 8 * 128 * 2 * 2)  # page size 1


def test_recurrent_only_pool_is_shown_in_sequences_of_state():
    """Falcon-Mamba keeps no per-token cache: its pool row gives the sequences whose fixed state it holds (64 layers
    × (conv 8,192 × 3 + SSM 8,192 × 16) bf16 elements each), not a token count."""
    spec = _model("falcon-mamba-7b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 1))
    state = 64 * (8192 * 3 + 8192 * 16) * 2
    assert m.kv_bytes_per_token == 0 and m.state_bytes_per_sequence == state
    row = dict((what, note) for what, _, note in m.breakdown())["KV cache pool"]
    assert row == f"{m.kv_pool_bytes // state:,} sequences × {state:,} B of state per GPU"


def test_recurrent_only_serve_reports_sequences_not_a_token_count():
    """serve's summary and JSON for a model without per-token KV: the concurrency is the states the pool
    holds (not an internal token sentinel over --max-model-len), and kv_capacity_tokens is null."""
    r = run("serve", "falcon-mamba-7b", "--json")
    assert r.code == 0, r.err
    mem = r.json["memory"]
    state = 64 * (8192 * 3 + 8192 * 16) * 2
    pool = mem["per_gpu"]["kv_pool_bytes"]
    assert mem["kv_capacity_tokens"] is None
    assert mem["state_sequences"] == pool // state
    assert math.isclose(mem["max_concurrency"], pool / state)
    text = run("serve", "falcon-mamba-7b")
    assert text.code == 0, text.err
    assert f"state pool: {pool // state:,} sequences per replica" in text.out
    assert "KV pool:" not in text.out


def test_hybrid_concurrency_pays_each_sequence_its_state():
    """Jamba-1.5-Mini (4 attention layers of 32, the rest Mamba) at TP2: a sequence of --max-model-len tokens
    holds its whole KV blocks and its Mamba state, so the sequences that fit are fewer than the KV tokens over
    the length; the engine starts only if one such sequence fits."""
    spec = _model("ai21labs/AI21-Jamba-1.5-Mini")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 2), max_model_len=65536)
    tok, state = m.kv_bytes_per_token, m.state_bytes_per_sequence
    assert tok == 4 * 2 * 8 * 128 * 2 // 2  # K and V of 8 KV heads × 128, bf16, half of them per GPU
    assert state > 0
    assert math.isclose(m.max_concurrency, m.kv_pool_bytes / (65536 * tok + state))
    assert m.max_concurrency < m.kv_capacity_tokens / 65536
    assert m.fits and m.max_batch(65536) == m.kv_pool_bytes // (65536 * tok + state)
    # a pool too small for one sequence's state does not start, whatever its tokens
    small = replace(m, kv_pool_bytes=state - 1, kv_capacity_tokens=(state - 1) // tok // 16 * 16, max_model_len=16)
    assert small.kv_capacity_tokens >= 16 and not small.fits

def test_trtllm_free_fraction():
    spec = _model("llama-3.1-8b")
    hw = load_profile("h100-sxm")
    m = engine_memory(analyze(spec, Options()), hw, load_engine("trtllm"), tp_plan(spec, 1))
    free_after = m.visible_bytes - m.non_torch_bytes - m.weights_bytes - m.activation_bytes - m.cuda_graph_bytes
    assert m.kv_pool_bytes == int(0.9 * free_after)
    assert m.kv_capacity_tokens % 32 == 0  # tokens_per_block


def test_ideal_engine_is_device_minus_weights():
    spec = _model("llama-3.1-8b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    m = engine_memory(a, hw, load_engine("ideal"), tp_plan(spec, 1))
    assert m.kv_pool_bytes == hw.memory_bytes - a.weights_bytes
    assert m.kv_capacity_tokens == m.kv_pool_bytes // a.kv.bytes_per_token


def test_device_memory_as_nvidia_smi_reports_it():
    for name, mib in (("h100-sxm", 81559), ("a100-40gb", 40960), ("rtx-4090", 24564), ("l4", 23034)):
        assert load_profile(name).memory_bytes == mib * 2**20


def test_flashmla_fp8_cache_is_656_bytes_per_layer():
    spec = _model("deepseek-v3")
    a = analyze(spec, Options(kv_dtype="fp8"))
    plan = tp_plan(spec, 8)
    assert kv_bytes_per_token_per_gpu(a, plan, load_engine("vllm")) == 61 * (512 + 4 * 4 + 64 * 2) == 61 * 656
    assert kv_bytes_per_token_per_gpu(a, plan, load_engine("sglang")) == 61 * 576  # plain fp8 latent + rope


def test_deepseek_v32_engine_kv_adds_the_fp8_indexer_key():
    """DeepSeek-V3.2 on vLLM and SGLang: the indexer key is fp8 plus one fp32 scale per 128 (132 B per layer,
    vLLM's DeepseekV32IndexerCache, SGLang's NSATokenToKVPool) whatever the KV dtype; an fp8 MLA cache is
    FlashMLA's sparse 656 B layout on both; both replicated on every tensor-parallel rank."""
    from planner.analysis.config import parse_config
    from tests.test_families import V32_GEOMETRY

    spec = parse_config(V32_GEOMETRY)
    plan = tp_plan(spec, 8)
    fp8, bf16 = analyze(spec, Options(kv_dtype="fp8")), analyze(spec, Options(kv_dtype="bf16"))
    for engine in ("vllm", "sglang"):
        assert kv_bytes_per_token_per_gpu(fp8, plan, load_engine(engine)) == 61 * (656 + 128 + 4) == 61 * 788
        assert kv_bytes_per_token_per_gpu(bf16, plan, load_engine(engine)) == 61 * (576 * 2 + 132)
    assert bf16.kv.bytes_per_token == 61 * (576 + 128) * 2  # the analysis: the indexer key in the KV dtype


def test_mxfp4_padding_hidden_2880_to_3072():
    q = QuantSpec("mxfp4", 4)
    down = Tensor("x.experts.down_proj", (32, 2880, 2880), "expert")
    padded = mxfp4_padded_bytes(down, q, 1, 256, 64)
    # (E, 3072, 2880): 4-bit values + one byte per 32
    assert padded == 32 * (3072 * 2880 // 2 + 3072 * 2880 // 32)
    spec = _model("gpt-oss-20b")
    a = analyze(spec, Options())
    m = engine_memory(a, load_profile("h100-sxm"), load_engine("vllm"), tp_plan(spec, 1))
    assert 1.03 < (m.counted_weights_bytes + m.padding_bytes) / a.weights_bytes < 1.09


def test_awq_int4_recipe_matches_a_real_checkpoint():
    """hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 safetensors: 5.73 GB."""
    a = analyze(_model("llama-3.1-8b"), Options(dtype="int4"))
    assert round(a.weights_bytes / 1e9, 2) == 5.73
    assert "AWQ" in a.fmt.describe()
    assert any("embeddings and lm_head in 16 bit" in n for n in a.notes)


def test_fp32_checkpoint_served_in_bf16():
    d = serve(_model("gemma-2-9b"), load_profile("h100-sxm"), engine="vllm")
    assert d.analysis.fmt.base.name == "bf16"
    assert any("fp32 checkpoint" in n for n in d.notes)


def test_kv_dtype_only_what_engines_offer():
    run("serve", "llama-3.1-8b", "--kv-dtype", "int8").assert_error("--kv-dtype", "vLLM")
    assert run("serve", "llama-3.1-8b", "--kv-dtype", "fp8", "--json").code == 0


def test_step_by_step_paths_refuse_more_clients_than_they_simulate():
    """A million closed-loop clients (or requests through a front end that queues them) ran for minutes;
    now one error line, and the closed-form burst path still answers."""
    run("serve", "llama-3.1-8b", "--arrival", "closed-loop", "--concurrency", "1000000", "--input-len", "100",
        "--output-len", "100").assert_error("closed-loop clients", "16,384 per replica")
    # vLLM's and SGLang's front ends queue requests one after another (server_overhead): a million of them are
    # refused with one line; the ideal engine has no front-end cost, so its burst takes the closed-form path and
    # answers
    from planner.analysis.errors import OptionError
    from planner.hardware.serve import Scenario, simulate

    with pytest.raises(OptionError, match="HTTP front end.*16,384 per replica"):
        simulate(_FlatModel(Factors(server_overhead_s=1e-3)), _Mem(), Scenario(100, 100, 1_000_000))
    run("serve", "llama-3.1-8b", "--concurrency", "1000000", "--input-len", "100", "--output-len",
        "100").assert_error("HTTP front end", "16,384 per replica")
    run("serve", "llama-3.1-8b", "--engine", "sglang", "--concurrency", "1000000", "--input-len", "100",
        "--output-len", "100").assert_error("HTTP front end", "16,384 per replica")
    assert run("serve", "llama-3.1-8b", "--engine", "ideal", "--concurrency", "1000000", "--input-len", "100",
               "--output-len", "100", "--json").code == 0


def test_max_model_len_capped_at_max_position_embeddings():
    run("serve", "llama-3.1-8b", "--max-model-len", "200000").assert_error("max_position_embeddings")


def test_does_not_fit_names_the_fewest_gpus():
    r = run("serve", "deepseek-v3", "--gpus", "8", "--hardware", "h100-sxm", "--json")
    d = r.json
    assert d["fits"] is False and d["latency"]["tpot_s"] is None and d["throughput"]["output_tokens_per_s"] is None
    assert d["fewest_gpus"] == 16  # 627 GiB of fp8 weights: 78 GiB per GPU at tp 8 exceeds 0.9 × 79 GiB
    spec = _model("deepseek-v3")
    assert fewest_gpus(analyze(spec, Options()), load_profile("h200-sxm"), load_engine("vllm")) == 8


# ---- expected-time arithmetic ---------------------------------------------------------------------


class HW:
    name = "test"
    memory_bandwidth_bytes_per_s = 1e12
    interconnect_bytes_per_s = 1e11

    def peak_flops_for(self, key):
        return 1e15


def test_gemm_p_norm_and_factor_parts_hand_computed():
    op = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**9)
    f = Factors(memory_bandwidth=0.5, compute=0.5, gemm_ridge_exponent=2.0)
    c = step_cost([op], HW(), "bf16", f, decode=True, sequences=1)
    assert c.ideal_s == pytest.approx(2e-3)  # max(2 ms compute, 1 ms memory)
    assert c.expected_s == pytest.approx(math.sqrt(4e-3**2 + 2e-3**2))  # c' = 4 ms, m' = 2 ms
    assert c.parts["bandwidth efficiency"] == pytest.approx(0.0)  # still compute-bound at 2 ms
    assert c.parts["GEMM efficiency"] == pytest.approx(math.sqrt(20) * 1e-3 - 2e-3)
    assert sum(c.parts.values()) == pytest.approx(c.expected_s - c.ideal_s)


class FP4Columns(HW):
    """A device whose fp4 (and nvfp4) steps run in an fp4 peak column, every other dtype in bf16's."""

    def peak_flops_key_for(self, key):
        return {"fp4": "fp4", "nvfp4": "fp4"}.get(key, "bf16")


def test_compute_fraction_of_one_peak_column_replaces_the_general_one():
    """``compute_by_dtype``: matmuls that run in the fp4 column reach 0.4 of its peak where the others reach
    0.8; a step in another column keeps 0.8. A compute-bound GEMM of 2 TFLOP at a 1 PFLOP/s peak: 2 ms ideal,
    5 ms at 0.4, 2.5 ms at 0.8 (infinite ridge exponent: the longer of compute and memory)."""
    op = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**6)
    f = Factors(compute=0.8, compute_by_dtype={"fp4": 0.4})
    fp4 = step_cost([op], FP4Columns(), "fp4", f, decode=False, sequences=1)
    assert fp4.ideal_s == pytest.approx(2e-3) and fp4.expected_s == pytest.approx(5e-3)
    assert fp4.parts["GEMM efficiency"] == pytest.approx(3e-3)
    assert step_cost([op], FP4Columns(), "bf16", f, decode=False, sequences=1).expected_s == pytest.approx(2.5e-3)


def test_experts_efficiency_of_one_column_slows_only_the_routed_experts_there():
    """``experts_by_dtype``: the engine's MoE kernels in the fp4 column reach 0.4 of the rate the step model
    gives their GEMMs. A compute-bound expert GEMM of 2 TFLOP at a 1 PFLOP/s peak and compute 0.8: 2.5 ms,
    so 6.25 ms at 0.4, counted as GEMM efficiency (6.25 − 2 = 4.25 ms); a dense matmul of the same size in
    the same step stays at 2.5 ms, and the expert GEMM in the bf16 column stays at 2.5 ms."""
    experts = Op("experts", "experts", "ffn", 0, flops=2 * 10**12, weight_bytes=10**6)
    dense = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**6)
    f = Factors(compute=0.8, experts_by_dtype={"fp4": 0.4})
    fp4 = step_cost([experts], FP4Columns(), "fp4", f, decode=False, sequences=1)
    assert fp4.ideal_s == pytest.approx(2e-3) and fp4.expected_s == pytest.approx(6.25e-3)
    assert fp4.parts["GEMM efficiency"] == pytest.approx(4.25e-3)
    assert step_cost([dense], FP4Columns(), "fp4", f, decode=False, sequences=1).expected_s == pytest.approx(2.5e-3)
    assert step_cost([experts], FP4Columns(), "bf16", f, decode=False, sequences=1).expected_s == pytest.approx(2.5e-3)


def test_trtllm_lists_its_fp4_moe_shortfall_and_vllm_none():
    """TensorRT-LLM's profile carries the measured fp4 MoE fraction (aiconfigurator's CUTLASS NVFP4 tables) into
    the factors of every device; vLLM's MoE path (FlashInfer's) measured at the step model's rate lists none."""
    assert load_engine("trtllm").experts_efficiency == {"fp4": 0.38}
    assert load_engine("vllm").experts_efficiency == {}
    assert factors_for(load_profile("b200"), load_engine("trtllm")).experts_by_dtype == {"fp4": 0.38}
    assert factors_for(load_profile("b200"), load_engine("vllm")).experts_by_dtype == {}


def test_experts_compute_fraction_of_a_weight_format_slows_only_their_compute_bound_time():
    """``experts_compute_by_format``: the engine's MoE GEMMs for one weight format reach 0.5 of the compute rate
    (``experts_compute``), where the memory-bound time stays as modelled (unlike ``experts_by_dtype``, which
    divides the whole time). At a 1 PFLOP/s peak, 1 TB/s and compute 0.8, infinite ridge exponent:
    - a compute-bound expert GEMM of 2 TFLOP over 1 GB of weights: 2.5 ms, 5 ms at 0.5 (memory 1 ms);
    - a memory-bound one of 0.2 TFLOP over 2 GB: 2 ms either way (compute 0.25 ms, 0.5 ms at 0.5);
    - a dense matmul of 2 TFLOP, and the expert GEMM of a model in another format (or none): 2.5 ms."""
    big = Op("experts", "experts", "ffn", 0, flops=2 * 10**12, weight_bytes=10**9)
    small = Op("experts", "experts", "ffn", 0, flops=2 * 10**11, weight_bytes=2 * 10**9)
    dense = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**9)
    f = Factors(compute=0.8, experts_compute_by_format={"fp8_block": 0.5})

    def t(op, fmt):
        return step_cost([op], FP4Columns(), "fp8", f, decode=False, sequences=1, experts_format=fmt)

    assert t(big, "fp8_block").expected_s == pytest.approx(5e-3)
    assert t(big, "fp8_block").parts["GEMM efficiency"] == pytest.approx(3e-3)  # 5 ms over the ideal 2 ms
    assert t(small, "fp8_block").expected_s == pytest.approx(2e-3)
    assert t(dense, "fp8_block").expected_s == pytest.approx(2.5e-3)
    assert t(big, None).expected_s == pytest.approx(2.5e-3)


def test_experts_format_names_block_scaled_fp8_and_mxfp4_checkpoints_only():
    """DeepSeek-R1's and Qwen's FP8 checkpoints carry 128 x 128 weight scales (``fp8_block``), gpt-oss's experts
    are MXFP4 (``mxfp4``); a per-channel FP8 checkpoint (RedHatAI's FP8-dynamic), an ``--dtype fp8`` or
    ``--dtype int4`` what-if and a bf16 model have neither."""
    from planner.hardware.expected import experts_format

    def fmt(name, dtype=None):
        return experts_format(analyze(_model(name), Options(dtype=dtype)).fmt)

    assert fmt("deepseek-r1") == "fp8_block" and fmt("qwen3-30b-a3b-fp8") == "fp8_block"
    assert fmt("llama-4-scout-17b-16e-instruct-fp8-dynamic") is None
    assert fmt("qwen3-30b-a3b", "fp8") is None and fmt("qwen3-30b-a3b") is None
    assert fmt("openai/gpt-oss-20b") == "mxfp4" and fmt("openai/gpt-oss-120b") == "mxfp4"
    assert fmt("qwen3-30b-a3b", "int4") is None


def test_trtllm_block_fp8_moe_fraction_is_per_device_and_deepseek_prefill_meets_the_kernel_table():
    """TensorRT-LLM's profile lists the block-scaled FP8 MoE fraction per device (aiconfigurator's tables: 0.37 on
    Hopper's CUTLASS path, 0.6 on Blackwell's DeepGEMM), none on an A100 or for vLLM. With it, DeepSeek-R1's routed
    experts on one H200 of TP8 take, per layer at 8,192 tokens, 4.3 ms against the 4.98 ms that aiconfigurator
    measured for TensorRT-LLM 1.3.0rc20 (1.77 ms without it; 0.37 is the median over 24 Hopper tables, this shape's
    own 0.32), while a one-sequence decode step is nearly unchanged."""
    from planner.hardware.serve import StepModel

    from planner.hardware.profiles import list_profiles

    trt = load_engine("trtllm")
    bundled = {p.name for p in list_profiles()}
    assert set(trt.experts_compute_efficiency["fp8_block"]) <= bundled  # a misspelt device would do nothing
    assert factors_for(load_profile("h200-sxm"), trt).experts_compute_by_format == {"fp8_block": 0.37, "mxfp4": 0.83}
    assert factors_for(load_profile("b200"), trt).experts_compute_by_format == {"fp8_block": 0.6}
    assert factors_for(load_profile("a100-80gb"), trt).experts_compute_by_format == {}
    assert factors_for(load_profile("h200-sxm"), load_engine("vllm")).experts_compute_by_format == {}

    spec, hw = _model("deepseek-r1"), load_profile("h200-sxm")
    a = analyze(spec, Options(context=8192))
    f = factors_for(hw, trt)
    with_it, without = (StepModel(a, hw, tp_plan(spec, 8), g) for g in (f, replace(f, experts_compute_by_format={})))

    assert _experts_layer_ms(with_it, hw, 8192) == pytest.approx(4.98, rel=0.15)
    assert _experts_layer_ms(without, hw, 8192) < 0.4 * 4.98
    assert with_it.decode(1, 2048).expected_s == pytest.approx(without.decode(1, 2048).expected_s, rel=0.01)
    assert with_it.prefill({(8192, 0): 1}).expected_s > 1.4 * without.prefill({(8192, 0): 1}).expected_s


def _experts_layer_ms(m, hw, tokens: int) -> float:
    """One layer's routed experts in a prompt step of ``tokens`` under StepModel ``m``'s factors, in ms."""
    from planner.hardware.expected import ops_time_s

    g = next(g for g in m._ops(1, tokens, 0) if g.op.kind == "experts")  # every MoE layer has the same shape
    fc = for_column(m.f, hw, m.compute_key, m.experts_format)
    return 1e3 * ops_time_s([g], hw.peak_flops_for(m.compute_key), hw.memory_bandwidth_bytes_per_s, fc,
                            decode=False, weight_only_bits=m.weight_only_bits, rows=tokens,
                            expert_rows=m._expert_rows(tokens), expert_inner=m.expert_inner) / g.count


def test_trtllm_mxfp4_moe_on_hopper_meets_the_kernel_table():
    """TensorRT-LLM's MXFP4 MoE on Hopper (W4A16): aiconfigurator 0.12's table (1.3.0rc20, h100_sxm, balanced)
    measures gpt-oss-20b's expert layer at 4.346 ms for 8,192 tokens; with the profile's 0.83 the step model gives
    it within 5 %, without it 17 % short. A one-sequence decode step (memory-bound) is unchanged, and on a B200
    (MXFP4 natively) nothing is listed."""
    from planner.hardware.serve import StepModel

    trt = load_engine("trtllm")
    spec, hw = _model("openai/gpt-oss-20b"), load_profile("h100-sxm")
    a = analyze(spec, Options(context=8192))
    f = factors_for(hw, trt)
    assert f.experts_compute_by_format["mxfp4"] == 0.83
    assert "mxfp4" not in factors_for(load_profile("b200"), trt).experts_compute_by_format
    with_it, without = (StepModel(a, hw, tp_plan(spec, 1), g) for g in (f, replace(f, experts_compute_by_format={})))
    assert with_it.experts_format == "mxfp4"
    assert _experts_layer_ms(with_it, hw, 8192) == pytest.approx(4.346, rel=0.05)
    assert _experts_layer_ms(without, hw, 8192) == pytest.approx(0.83 * 4.346, rel=0.05)
    assert with_it.decode(1, 2048).expected_s == pytest.approx(without.decode(1, 2048).expected_s, rel=0.01)


def test_device_defaults_carry_the_fp4_fraction_unless_the_profile_has_its_own():
    from dataclasses import replace as dc_replace

    from planner.hardware.expected import device_defaults, factors_for

    dd = {**device_defaults(), "compute_by_dtype": {"fp4": 0.45}}
    hw = load_profile("b200")
    assert factors_for(hw, load_engine("trtllm"), defaults=dd).compute_by_dtype == {"fp4": 0.45}
    own = dc_replace(hw, compute_efficiency=0.6)  # a calibrated or written fraction applies to every column
    assert factors_for(own, load_engine("trtllm"), defaults=dd).compute_by_dtype == {}


def test_a_devices_mamf_sets_the_gemm_fraction_of_its_16_bit_columns_hand_computed():
    """H100 SXM's MAMF is 794.5 of 989.4 TFLOP/s in bf16, none in fp8. With compute_of_mamf 0.9 a bf16 step's
    GEMMs reach 0.9 x 794.5 / 989.4 = 0.7227 of the peak; an fp8 step keeps ``compute`` (0.7). A
    compute-bound 2 TFLOP GEMM at bf16 then takes 2e12 / (989.4e12 x 0.7227) = 2.797 ms. A profile with its
    own compute fraction, and the ideal engine, take no MAMF."""
    from dataclasses import replace as dc_replace

    from planner.hardware.expected import device_defaults, factors_for, for_column

    hw = load_profile("h100-sxm")
    dd = {**device_defaults(), "compute": 0.7, "compute_of_mamf": 0.9}
    f = factors_for(hw, load_engine("vllm"), defaults=dd)
    assert f.compute_of_mamf == 0.9 and f.mamf_fraction["bf16"] == pytest.approx(794.5 / 989.4)
    assert for_column(f, hw, "bf16").compute == pytest.approx(0.9 * 794.5 / 989.4)
    assert for_column(f, hw, "fp8").compute == pytest.approx(0.7)
    op = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**6)
    flat = Factors(compute=f.compute, mamf_fraction=f.mamf_fraction, compute_of_mamf=f.compute_of_mamf)  # GEMMs only
    assert step_cost([op], hw, "bf16", flat, decode=False, sequences=1).expected_s == pytest.approx(
        2e12 / (989.4e12 * 0.9 * 794.5 / 989.4))
    own = factors_for(dc_replace(hw, compute_efficiency=0.6), load_engine("vllm"), defaults=dd)
    assert own.mamf_fraction == {} and for_column(own, hw, "bf16").compute == 0.6
    assert factors_for(hw, load_engine("vllm"), defaults={**dd, "compute_of_mamf": 0.0}).mamf_fraction == {}
    assert factors_for(hw, load_engine("ideal"), defaults=dd).compute == 1.0


def test_mi300x_bf16_gemms_run_slower_than_h100s_at_one_fraction_of_its_mamf():
    """The same compute-bound prefill GEMM, expected on MI300X and H100 SXM (vLLM, device defaults): MI300X's
    peak is 1.32x H100's, but its MAMF 668.4 against 794.5 TFLOP/s, so it takes 794.5 / 668.4 = 1.19x as long."""
    from planner.hardware.expected import factors_for

    op = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**13, weight_bytes=10**6)
    t = {}
    for name in ("h100-sxm", "mi300x"):
        hw = load_profile(name)
        f = factors_for(hw, load_engine("vllm"))
        f = Factors(compute=f.compute, mamf_fraction=f.mamf_fraction, compute_of_mamf=f.compute_of_mamf)  # GEMMs only
        t[name] = step_cost([op], hw, "bf16", f, decode=False, sequences=1).expected_s
    assert t["mi300x"] / t["h100-sxm"] == pytest.approx(794.5 / 668.4)


class SlowHW(HW):
    def peak_flops_for(self, key):
        return 1e14


def _matmul(n: int, k: int, out: int) -> Op:
    """A bf16 matmul of ``n`` rows, inner dimension ``k`` and ``out`` columns, counted as the trace counts one."""
    return Op("gate_proj", "matmul", "ffn", 0, flops=2 * n * k * out, weight_bytes=2 * k * out,
              act_read_bytes=2 * n * k, act_write_bytes=2 * n * out)


def test_gemm_k_half_scales_a_matmuls_compute_by_its_inner_dimension_hand_computed():
    """K = 1024 and gemm_k_half 512: compute takes (1024 + 512) / 1024 = 1.5x. 16,384 rows x 1024 x 4096 is
    137.4 GFLOP, 1.374 ms at 100 TFLOP/s, against 176 MB of traffic (0.18 ms at 1 TB/s): compute-bound, so
    the expected step is 1.5x the ideal and the whole difference is the GEMM-efficiency part."""
    op = _matmul(16384, 1024, 4096)
    f = Factors(gemm_k_half=512.0)
    c = step_cost([op], SlowHW(), "bf16", f, decode=False, sequences=1, rows=16384)
    assert c.ideal_s == pytest.approx(2 * 16384 * 1024 * 4096 / 1e14)
    assert c.expected_s == pytest.approx(1.5 * c.ideal_s)
    assert c.parts["GEMM efficiency"] == pytest.approx(0.5 * c.ideal_s)
    assert step_cost([op], SlowHW(), "bf16", replace(f, gemm_k_half=0.0), decode=False, sequences=1,
                     rows=16384).expected_s == pytest.approx(c.ideal_s)
    # without the step's rows the matmul's K is unknown (hardware.expected.inner_dim): not scaled
    assert step_cost([op], SlowHW(), "bf16", f, decode=False, sequences=1).expected_s == pytest.approx(c.ideal_s)
    # a calibrated rows table measured the GEMM's whole time: it is used alone
    table = replace(f, matmul_efficiency_by_rows={16384: 1.0})
    assert step_cost([op], SlowHW(), "bf16", table, decode=False, sequences=1,
                     rows=16384).expected_s == pytest.approx(c.ideal_s)


def test_gemm_k_half_on_routed_experts_weighs_each_gemms_k_by_its_flops():
    """Qwen3-30B-A3B's experts: gate and up over the hidden size 2048 (2/3 of the FLOPs), down over the
    intermediate 768 (1/3); at gemm_k_half 512: 2/3 x 2560/2048 + 1/3 x 1280/768 = 0.8333 + 0.5556 = 1.3889."""
    from planner.cli.common import load_model
    from planner.hardware.expected import expert_inner, k_scale

    spec = load_model("Qwen/Qwen3-30B-A3B").spec
    dims = expert_inner(spec)
    assert dims == ((2048, pytest.approx(2 / 3)), (768, pytest.approx(1 / 3)))
    assert expert_inner(spec, 4)[1][0] == 192  # the down projection's K splits tp ways
    assert expert_inner(load_model("llama-3.1-8b").spec) is None
    assert k_scale(512.0, dims) == pytest.approx(2 / 3 * 2560 / 2048 + 1 / 3 * 1280 / 768)
    assert k_scale(0.0, dims) == 1.0 and k_scale(512.0, None) == 1.0
    ex = Op("experts (top-8 of 128)", "experts", "ffn", 0, flops=2 * 10**12, weight_bytes=10**6)
    c = step_cost([ex], SlowHW(), "bf16", Factors(gemm_k_half=512.0), decode=False, sequences=1, rows=4096,
                  expert_rows=256.0, expert_inner=dims)
    assert c.expected_s == pytest.approx(20e-3 * (2 / 3 * 2560 / 2048 + 1 / 3 * 1280 / 768))


def test_device_defaults_carry_gemm_k_half_unless_the_profile_has_its_own_compute(monkeypatch):
    from dataclasses import replace as dc_replace

    from planner.analysis.errors import HardwareError
    from planner.hardware import engine as engine_mod
    from planner.hardware.expected import device_defaults, factors_for

    dd = {**device_defaults(), "gemm_k_half": 1024.0}
    hw = load_profile("h100-sxm")
    assert factors_for(hw, load_engine("vllm"), defaults=dd).gemm_k_half == 1024.0
    assert factors_for(dc_replace(hw, compute_efficiency=0.6), load_engine("vllm"), defaults=dd).gemm_k_half == 0.0
    assert factors_for(hw, load_engine("ideal"), defaults=dd).gemm_k_half == 0.0
    device = engine_mod._read_yaml("_device")
    for bad in (-1, True, "big", float("nan")):  # a bad _device.yaml value: one HardwareError naming the field
        monkeypatch.setattr(engine_mod, "_read_yaml", lambda name, bad=bad: {**device, "gemm_k_half": bad})
        with pytest.raises(HardwareError, match="gemm_k_half"):
            device_defaults()


def test_rows_efficiency_log_linear_between_points_hand_computed():
    from planner.hardware.expected import rows_efficiency

    table = {1: 0.1, 4: 0.2, 64: 0.6, 4096: 1.0}
    assert rows_efficiency(table, 1) == 0.1 and rows_efficiency(table, 4) == 0.2
    assert rows_efficiency(table, 2) == pytest.approx(0.15)  # halfway in log2 from 1 to 4
    assert rows_efficiency(table, 16) == pytest.approx(0.4)  # halfway in log from 4 to 64
    assert rows_efficiency(table, 512) == pytest.approx(0.8)  # halfway in log from 64 to 4096
    assert rows_efficiency(table, 10**6) == 1.0 and rows_efficiency({8: 0.3}, 2) == 0.3
    assert rows_efficiency({}, 4) == 1.0 and rows_efficiency(table, None) == 1.0


def test_calibrated_rows_table_takes_precedence_over_the_ridge_curve_for_matmuls():
    mm = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**12, weight_bytes=10**9)  # c = 2 ms, m = 1 ms ideal
    ex = replace(mm, name="experts", kind="experts")
    f = Factors(memory_bandwidth=0.5, compute=0.5, gemm_ridge_exponent=2.0, matmul_efficiency_by_rows={4: 0.25, 64: 1.0})
    c = step_cost([mm], HW(), "bf16", f, decode=True, sequences=1, rows=4)
    assert c.expected_s == pytest.approx(max(4e-3 / 0.25, 2e-3))  # 16 ms: the table's time, no p-norm on top
    assert c.parts["GEMM efficiency"] == pytest.approx(16e-3 - 2e-3)
    c16 = step_cost([mm], HW(), "bf16", f, decode=True, sequences=1, rows=16)
    assert c16.expected_s == pytest.approx(4e-3 / 0.625)  # e(16) halfway in log from 4 (0.25) to 64 (1.0)
    # no rows known, or expert GEMMs (rows per expert not measured): the ridge curve
    plain = math.sqrt(4e-3**2 + 2e-3**2)
    assert step_cost([mm], HW(), "bf16", f, decode=True, sequences=1).expected_s == pytest.approx(plain)
    assert step_cost([ex], HW(), "bf16", f, decode=True, sequences=1, rows=4).expected_s == pytest.approx(plain)
    # expert GEMMs with their rows per touched expert known: the table at those rows
    assert step_cost([ex], HW(), "bf16", f, decode=True, sequences=1, rows=64,
                     expert_rows=4).expected_s == pytest.approx(4e-3 / 0.25)
    # beyond the last point its value (1.0) holds: max(c' = 4 ms, m' = 2 ms), the roofline's max, not the p-norm
    assert step_cost([mm], HW(), "bf16", f, decode=True, sequences=1, rows=10**4).expected_s == pytest.approx(4e-3)


def test_factors_carry_the_profile_table_with_its_square_point():
    from planner.hardware.expected import factors_for

    hw = replace(load_profile("h100-sxm"), matmul_efficiency_by_rows={1: 0.1, 64: 0.5},
                 matmul_efficiency_square_rows=4096)
    f = factors_for(hw, load_engine("vllm"))
    assert dict(f.matmul_efficiency_by_rows) == {1: 0.1, 64: 0.5, 4096: 1.0}
    assert hw.matmul_efficiency_at(512) == pytest.approx(0.75)  # the same interpolation, halfway 64 -> 4096
    assert factors_for(hw, load_engine("ideal")).matmul_efficiency_by_rows == {}
    assert factors_for(load_profile("h100-sxm"), load_engine("vllm")).matmul_efficiency_by_rows == {}


def test_allreduce_latency_times_count_plus_bytes_over_bandwidth():
    f = Factors(interconnect=0.5, allreduce_latency_s=20e-6, step_overhead_s=2e-3, step_overhead_per_sequence_s=1e-5)
    c = step_cost([], HW(), "bf16", f, decode=True, sequences=4, allreduce_bytes=10**8, allreduce_calls=160)
    assert c.ideal_s == pytest.approx(1e-3)  # 100 MB / 100 GB/s
    assert c.parts["all-reduce bandwidth"] == pytest.approx(1e-3)  # at half the bandwidth
    assert c.parts["all-reduce latency"] == pytest.approx(160 * 20e-6)
    assert c.parts["step overhead"] == pytest.approx(2e-3 + 4e-5)
    assert c.expected_s == pytest.approx(1e-3 + 1e-3 + 3.2e-3 + 2.04e-3)


def test_tensor_parallel_over_pcie_takes_the_host_link_at_half_its_rate():
    """PCIe-only cards (L40S, RTX 4090, L4 ...) cross the PCIe Gen4 x16 host link, 31.5 GB/s per direction,
    at the profile's measured all-reduce fraction 0.5 (NVIDIA/nccl #1639), where NVLink takes _device.yaml's
    0.8: 100 MB take 100e6 / 31.5e9 = 3.17 ms ideal and twice that expected; on H100 SXM 100e6 / 450e9 / 0.8."""
    l40s, h100 = load_profile("l40s"), load_profile("h100-sxm")
    f = factors_for(l40s, load_engine("vllm"))
    assert f.interconnect == 0.5 and factors_for(h100, load_engine("vllm")).interconnect == 0.8
    c = step_cost([], l40s, "bf16", f, decode=True, sequences=1, allreduce_bytes=10**8, allreduce_calls=1)
    assert c.ideal_s == pytest.approx(1e8 / 31.5e9)
    assert c.parts["all-reduce bandwidth"] == pytest.approx(1e8 / 31.5e9)  # at half the link: twice the time
    fh = factors_for(h100, load_engine("vllm"))
    ch = step_cost([], h100, "bf16", fh, decode=True, sequences=1, allreduce_bytes=10**8, allreduce_calls=1)
    assert ch.parts["all-reduce bandwidth"] == pytest.approx(1e8 / (450e9 * 0.8) - 1e8 / 450e9)
    r = run("serve", "llama-3.1-70b", "-H", "l40s", "--gpus", "4", "--dtype", "fp8", "--json")
    assert r.code == 0 and r.json["explain"]["tpot_s"]["all-reduce bandwidth"] > 0


def test_weight_only_and_attention_factors():
    gemv = Op("up_proj", "matmul", "ffn", 0, flops=2 * 10**6, weight_bytes=10**9, act_read_bytes=10**6)
    attn = Op("attention", "attention", "attention", 0, flops=10**6, kv_read_bytes=10**9)
    f = Factors(memory_bandwidth=0.8, weight_only={"int4": 0.5}, attention_decode=0.5)
    c = step_cost([gemv, attn], HW(), "bf16", f, decode=True, sequences=1, weight_only_bits=4)
    m_gemv = 1e9 / (0.8e12 * 0.5) + 1e6 / 0.8e12
    m_attn = 1e9 / (0.8e12 * 0.5)
    assert c.expected_s == pytest.approx(m_gemv + m_attn, rel=1e-6)
    assert c.parts["weight-only kernels"] == pytest.approx(1e9 / 0.8e12, rel=1e-6)
    assert c.parts["attention kernels"] == pytest.approx(1e9 / 0.8e12, rel=1e-6)


def test_decode_attention_that_reads_the_kv_cache_once_per_query_head():
    # 1 GB of KV read, 1 MB of query/output, 8 query heads per KV head: the KV is read 8 times
    attn = Op("attention", "attention", "attention", 0, flops=10**6, kv_read_bytes=10**9, act_read_bytes=10**6)
    f = Factors(memory_bandwidth=0.5, attention_decode=0.8, attention_decode_kv_reads=8.0)
    c = step_cost([attn], HW(), "bf16", f, decode=True, sequences=1)
    assert c.ideal_s == pytest.approx((1e9 + 1e6) / 1e12)
    assert c.expected_s == pytest.approx((8e9 + 1e6) / (1e12 * 0.5 * 0.8), rel=1e-9)
    assert c.parts["attention kernels"] == pytest.approx((8e9 + 1e6) / 0.4e12 - (1e9 + 1e6) / 0.5e12, rel=1e-9)
    # the prefill (context) kernel is not affected: it is priced by FLOPs and bytes read once
    p = step_cost([attn], HW(), "bf16", f, decode=False, sequences=1)
    assert p.expected_s == pytest.approx((1e9 + 1e6) / 0.5e12, rel=1e-9)


def test_decode_attention_fraction_above_one_is_capped_at_the_peak():
    """The decode attention fraction is of the achieved bandwidth: 1.1 at e_mem 0.8 reads at 0.88 of the peak;
    2.0 would pass the peak (1.6), so the product is held at 1."""
    attn = Op("attention", "attention", "attention", 0, flops=10**6, kv_read_bytes=10**9)
    fast = step_cost([attn], HW(), "bf16", Factors(memory_bandwidth=0.8, attention_decode=1.1), decode=True,
                     sequences=1)
    assert fast.expected_s == pytest.approx(1e9 / (1e12 * 0.88), rel=1e-9)
    assert fast.parts["attention kernels"] == pytest.approx(1e9 / 0.88e12 - 1e9 / 0.8e12, rel=1e-9)  # negative
    over = step_cost([attn], HW(), "bf16", Factors(memory_bandwidth=0.8, attention_decode=2.0), decode=True,
                     sequences=1)
    assert over.expected_s == pytest.approx(fast.ideal_s, rel=1e-9)


def test_engine_profile_bounds_the_decode_attention_fraction(monkeypatch):
    import copy

    import planner.hardware.engine as engine_mod
    from planner.analysis.errors import HardwareError

    real = engine_mod._read_yaml("vllm")

    def with_value(v):
        d = copy.deepcopy(real)
        d["timing"]["attention_decode_efficiency"] = v
        monkeypatch.setattr(engine_mod, "_read_yaml", lambda name: d)
        return engine_mod.load_engine("vllm")

    for bad in (1.3, 0, "fast", True):
        with pytest.raises(HardwareError, match="attention_decode_efficiency"):
            with_value(bad)
    assert with_value(1.2).attention_decode_efficiency == 1.2


def test_kv_reads_per_query_head_is_the_query_heads_per_kv_head():
    from planner.cli.common import load_model
    from tests.test_published_fit import pub

    kv_reads_per_query_head = pub.kv_reads_per_query_head

    assert kv_reads_per_query_head(load_model("meta-llama/Llama-2-70b-hf").spec) == 64 / 8
    assert kv_reads_per_query_head(load_model("meta-llama/Llama-2-7b-hf").spec) == 1.0


def test_expert_rows_are_routed_rows_over_experts_touched_hand_computed():
    from planner.hardware.expected import expert_rows

    assert expert_rows(1, 8, 2) == pytest.approx(1.0)  # one token touches exactly its 2 experts
    # 4 tokens, top-2 of 8: 8 routed rows over 8 (1 - (3/4)^4) = 5.46875 experts expected
    assert expert_rows(4, 8, 2) == pytest.approx(8 / 5.46875)
    assert expert_rows(4096, 8, 2) == pytest.approx(4096 * 2 / 8, rel=1e-9)  # every expert touched


def test_launch_floor_per_op_of_a_step_not_in_a_cuda_graph():
    short = Op("input_layernorm", "norm", "norm", 0, act_read_bytes=10**6)  # 1 us at 1 TB/s
    long = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**9, weight_bytes=10**8)  # 100 us
    f = Factors(launch_overhead_per_op_s=8e-6)
    graph = step_cost([short, long], HW(), "bf16", f, decode=True, sequences=1)
    assert graph.parts["kernel launches"] == 0.0 and graph.expected_s == pytest.approx(101e-6)
    eager = step_cost([short, long], HW(), "bf16", f, decode=True, sequences=1, graph=False)
    assert eager.parts["kernel launches"] == pytest.approx(7e-6)  # the norm waits 8 us for the host, not 1
    assert eager.expected_s == pytest.approx(108e-6)
    assert sum(eager.parts.values()) == pytest.approx(eager.expected_s - eager.ideal_s)


def test_least_op_time_floors_every_step_and_the_longer_floor_wins():
    """``min_op_time`` floors each op of a graphed step too; an eager step takes the longer of it and
    the host's launch time per op (``op_floor_s``)."""
    from planner.hardware.expected import op_floor_s

    short = Op("input_layernorm", "norm", "norm", 0, act_read_bytes=10**6)  # 1 us at 1 TB/s
    long = Op("gate_proj", "matmul", "ffn", 0, flops=2 * 10**9, weight_bytes=10**8)  # 100 us
    f = Factors(min_op_time_s=3e-6, launch_overhead_per_op_s=8e-6)
    assert op_floor_s(f, graph=True) == (3e-6, 0.0) and op_floor_s(f, graph=False) == (3e-6, 8e-6)
    slow_device = step_cost([short, long], HW(), "bf16", replace(f, launch_overhead_per_op_s=2e-6), decode=True,
                            sequences=1, graph=False)
    assert slow_device.parts["kernel launches"] == pytest.approx(2e-6)  # the device's 3 us outlasts the host's 2
    graph = step_cost([short, long], HW(), "bf16", f, decode=True, sequences=1)
    assert graph.parts["kernel launches"] == pytest.approx(2e-6)  # the norm takes 3 us, not 1; the GEMM hides it
    assert graph.expected_s == pytest.approx(103e-6)
    eager = step_cost([short, long], HW(), "bf16", f, decode=True, sequences=1, graph=False)
    assert eager.parts["kernel launches"] == pytest.approx(7e-6)
    assert sum(graph.parts.values()) == pytest.approx(graph.expected_s - graph.ideal_s)


def test_sglang_graph_sizes_follow_the_device_memory_rules():
    """SGLang's cuda_graph_max_bs default by memory class (sglang.yaml's rules, from server_args.py): a
    24 GB card captures up to 24, an 80 GB H100 256, a 180 GB B200 512; the factors carry the device's."""
    from planner.analysis.errors import HardwareError
    from planner.hardware.engine import _graph_rules
    from planner.hardware.expected import factors_for

    eng = load_engine("sglang")
    got = {name: eng.cuda_graph_max_tokens(load_profile(name)) for name in ("rtx-4090", "h100-sxm", "b200")}
    assert got == {"rtx-4090": 24, "h100-sxm": 256, "b200": 512}
    assert factors_for(load_profile("h100-sxm"), eng).cuda_graph_max_tokens == 256
    assert load_engine("trtllm").cuda_graph_max_tokens(load_profile("b200")) == 128  # one value for every device
    with pytest.raises(HardwareError, match="cuda_graphs.max_tokens"):
        _graph_rules([{"max_memory": "20 GiB", "value": 0}], "test profile")


def test_which_steps_replay_a_cuda_graph():
    from planner.hardware.expected import graphed

    f = Factors(cuda_graph_max_tokens=128, cuda_graph_prefill=False)
    assert graphed(f, tokens=128, prefill=False) and not graphed(f, tokens=129, prefill=False)
    assert not graphed(f, tokens=16, prefill=True)
    assert graphed(replace(f, cuda_graph_prefill=True), tokens=16, prefill=True)
    assert not graphed(replace(f, cuda_graph_max_tokens=0), tokens=1, prefill=False)


def test_request_and_server_overheads_add_to_ttft_and_e2e_only():
    """One request: the engine's request overhead and the front end's intake both add once to TTFT and
    e2e (the request reaches the engine after its intake, then runs the same steps); TPOT is untouched.
    In-process (server=False) only the engine's part counts."""
    from planner.hardware.serve import Scenario, StepModel, simulate

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("ideal"), plan, max_model_len=1024)
    f = Factors(request_overhead_s=2e-3, server_overhead_s=5e-3)
    for C, server, extra in ((1, True, 7e-3), (4, False, 2e-3)):
        base = simulate(StepModel(a, hw, plan, IDEAL), mem, Scenario(64, 8, C))
        r = simulate(StepModel(a, hw, plan, f), mem, Scenario(64, 8, C), server=server)
        assert r.expected.ttft_s == pytest.approx(base.expected.ttft_s + extra)
        assert r.expected.e2e_s == pytest.approx(base.expected.e2e_s + extra)
        assert r.expected.tpot_s == pytest.approx(base.expected.tpot_s)
        assert r.explain["ttft_s"]["request overhead"] == pytest.approx(extra)
        assert r.ideal.ttft_s == pytest.approx(base.ideal.ttft_s)


def test_intake_arrivals_are_serial_hand_computed():
    """One front-end process, 4 ms per request: a burst of three sent at t = 0 reaches the engine at 4, 8
    and 12 ms; a request sent while the front end is busy waits for it, one sent later does not."""
    from planner.hardware.serve import intake_arrivals

    arr, free = intake_arrivals([0.0, 0.0, 0.0], 4e-3)
    assert arr == pytest.approx([4e-3, 8e-3, 12e-3]) and free == pytest.approx(12e-3)
    arr, free = intake_arrivals([0.0, 1e-3, 30e-3], 4e-3)
    assert arr == pytest.approx([4e-3, 8e-3, 34e-3]) and free == pytest.approx(34e-3)
    arr, _ = intake_arrivals([5e-3], 4e-3, free_s=20e-3)  # busy until 20 ms with earlier requests
    assert arr == pytest.approx([24e-3])


class _FlatModel:
    """A step model whose every step takes 10 ms (5 ms ideal, 5 ms of step overhead); records the steps."""

    def __init__(self, f):
        self.f = f
        self.steps = []

    def _cost(self):
        from planner.hardware.expected import StepCost

        parts = {k: 0.0 for k in FACTORS}
        parts["step overhead"] = 5e-3
        return StepCost(5e-3, 10e-3, parts, 0)

    def decode(self, batch, context):
        self.steps.append({(1, context): batch})
        return self._cost()

    def prefill(self, pieces):
        self.steps.append(dict(pieces))
        return self._cost()


class _Mem:
    max_model_len, max_num_seqs, max_num_batched_tokens = 64, 16, 8

    @staticmethod
    def max_batch(tokens):
        return 100


def test_burst_through_the_front_end_hand_computed_schedule():
    """Three 4-token prompts, 2 output tokens, sent at once through a 4 ms front end, an 8-token budget,
    10 ms steps. Arrivals 4, 8, 12 ms. Step 0 (4-14 ms): prompt 0. Step 1 (14-24): prompt 0's decode at
    context 4, prompt 1 whole, the first 3 tokens of prompt 2 (request 0 ends). Step 2 (24-34): request
    1's decode, prompt 2's last token (request 1 ends). Step 3 (34-44): request 2's decode.
    TTFT 14, 24, 34 ms (mean 24); e2e 24, 34, 44 (mean 34); TPOT 10 ms; 6 tokens in 44 ms.
    Ideal: the steps inside each window at 5 ms: TTFT windows 1, 1, 2 steps; e2e windows 2, 2, 3."""
    from planner.hardware.serve import Scenario, simulate

    m = _FlatModel(Factors(server_overhead_s=4e-3))
    r = simulate(m, _Mem(), Scenario(4, 2, 3))
    assert m.steps == [{(4, 0): 1}, {(1, 4): 1, (4, 0): 1, (3, 0): 1}, {(1, 4): 1, (1, 3): 1}, {(1, 4): 1}]
    assert r.expected.ttft_s == pytest.approx(24e-3)
    assert r.expected.e2e_s == pytest.approx(34e-3)
    assert r.expected.tpot_s == pytest.approx(10e-3)
    assert r.expected.output_tokens_per_s == pytest.approx(6 / 44e-3)
    assert r.ideal.ttft_s == pytest.approx(20e-3 / 3)
    assert r.ideal.e2e_s == pytest.approx(35e-3 / 3)
    assert r.ideal.output_tokens_per_s == pytest.approx(6 / 20e-3)
    # steps inside the TTFT windows: 1 + 1 + 2 of 10 ms, half of it step overhead; the rest is the front end
    assert r.explain["ttft_s"]["step overhead"] == pytest.approx(20e-3 / 3)
    assert r.explain["ttft_s"]["request overhead"] == pytest.approx(24e-3 - 40e-3 / 3)


def test_closed_loop_through_the_front_end_hand_computed():
    """One closed-loop client, a 4 ms front end, 10 ms steps: each request waits 4 ms in the front end,
    then a prompt step and a decode step: TTFT 14 ms, e2e 24 ms, and the next request is sent when the
    last ends, so 8 requests x 2 tokens take 8 x 24 ms (the engine idles while the front end works)."""
    from planner.hardware.serve import CLOSED_LOOP_ROUNDS, Scenario, simulate

    m = _FlatModel(Factors(server_overhead_s=4e-3))
    r = simulate(m, _Mem(), Scenario(4, 2, 1, "closed-loop"))
    assert len(m.steps) == 2 * CLOSED_LOOP_ROUNDS
    assert r.expected.ttft_s == pytest.approx(14e-3)
    assert r.expected.e2e_s == pytest.approx(24e-3)
    assert r.expected.output_tokens_per_s == pytest.approx(2 * CLOSED_LOOP_ROUNDS / (CLOSED_LOOP_ROUNDS * 24e-3))


def test_front_end_explanation_sums_to_the_gap():
    """Through a 5 ms front end, 16 requests of a real model: each latency's parts sum to expected − ideal."""
    from planner.hardware.serve import Scenario, StepModel, simulate

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("vllm"), plan, max_model_len=1024)
    f = Factors(memory_bandwidth=0.8, step_overhead_s=1e-3, request_overhead_s=2e-3, server_overhead_s=5e-3)
    for arrival in ("together", "closed-loop"):
        r = simulate(StepModel(a, hw, plan, f), mem, Scenario(256, 16, 16, arrival))
        for key in ("ttft_s", "e2e_s"):
            gap = getattr(r.expected, key) - getattr(r.ideal, key)
            assert sum(r.explain[key].values()) == pytest.approx(gap)
        # the 16th request cannot reach the engine before 16 x 5 ms: the mean TTFT holds at least the mean intake
        assert r.expected.ttft_s > 8.5 * 5e-3


def test_closed_loop_schedule_lockstep_hand_computed():
    """2 clients, 4-token prompts, 3 output tokens, an 8-token budget, 4 requests: both prompts fit one step
    (both first tokens at its end), two decode steps at contexts 4 and 5 finish both, and the clients' next
    requests start one step later: the same three steps again. TTFT windows hold the prompt steps only
    (2 requests x 2 steps), e2e windows every step (2 requests at each)."""
    from planner.hardware.serve import closed_loop_schedule

    sched = closed_loop_schedule(4, 3, 2, 4, 8, 2, 1)
    assert sorted(sched) == sorted([
        ((((4, 0), 2),), 2, 4, 4),
        ((((1, 4), 2),), 2, 0, 4),
        ((((1, 5), 2),), 2, 0, 4),
    ])


def test_closed_loop_schedule_chunks_a_prompt_over_the_budget():
    """One client, a 6-token prompt, a 4-token budget, 3 output tokens: the prompt is cut 4 + 2 over two
    steps (its first token at the end of the second), then two decode steps at contexts 6 and 7."""
    from planner.hardware.serve import closed_loop_schedule

    sched = closed_loop_schedule(6, 3, 1, 1, 4, 1, 1)
    assert sorted(sched) == sorted([
        ((((4, 0), 1),), 1, 1, 1),
        ((((2, 4), 1),), 1, 1, 1),
        ((((1, 6), 1),), 1, 0, 1),
        ((((1, 7), 1),), 1, 0, 1),
    ])


def test_closed_loop_schedule_decodes_take_the_budget_first():
    """3 clients, 4-token prompts, a 5-token budget: step 0 prefills one prompt and the first token of the
    next; in step 1 the first request's decode takes 1 token of the budget, the cut prompt its last 3, and
    the third prompt the 1 token left (V1: running requests first, then waiting ones)."""
    from planner.hardware.serve import closed_loop_schedule

    sched = dict((k, n) for k, n, _, _ in closed_loop_schedule(4, 3, 3, 3, 5, 3, 1))
    assert sched[(((1, 0), 1), ((4, 0), 1))] == 1
    assert sched[(((1, 0), 1), ((1, 4), 1), ((3, 1), 1))] == 1


def test_closed_loop_schedule_a_cut_prompt_and_a_whole_one_complete_in_one_step():
    """4 clients, 2-token prompts, 2 output tokens, a 5-token budget: step 0 prefills prompts A and B and the
    first token of C; step 1 runs A's and B's decodes (context 2; both end), C's last token and D whole, so
    C and D (sent together, one group) both get their first token there; step 2 decodes both at context 2.
    TTFT windows: A, B step 0; C, D steps 0-1. e2e windows: A, B steps 0-1; C, D steps 0-2."""
    from planner.hardware.serve import closed_loop_schedule

    sched = closed_loop_schedule.__wrapped__(2, 2, 4, 4, 5, 4, 1)
    assert sorted(sched) == sorted([
        ((((1, 0), 1), ((2, 0), 2)), 1, 4, 4),
        ((((1, 1), 1), ((1, 2), 2), ((2, 0), 1)), 1, 2, 4),
        ((((1, 2), 2),), 1, 0, 2),
    ])


def test_closed_loop_priced_from_its_schedule():
    """simulate(closed-loop) = the schedule's steps priced by the step model: with the lockstep case above,
    TTFT is the prompt step, e2e the prompt step and both decode steps, and throughput 4 x 3 tokens over two
    rounds of the three steps."""
    from planner.hardware.serve import CLOSED_LOOP_ROUNDS, Scenario, StepModel, simulate

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("ideal"), plan, max_model_len=64, max_num_batched_tokens=8)
    model = StepModel(a, hw, plan, IDEAL)
    r = simulate(model, mem, Scenario(4, 3, 2, "closed-loop"))
    p = model.prefill({(4, 0): 2}).ideal_s
    d = model.decode(2, 4).ideal_s + model.decode(2, 5).ideal_s
    assert r.expected.ttft_s == pytest.approx(p)
    assert r.expected.e2e_s == pytest.approx(p + d)
    assert r.expected.tpot_s == pytest.approx(d / 2)
    assert r.expected.output_tokens_per_s == pytest.approx(2 * 3 / (p + d))
    assert r.prefill_steps == CLOSED_LOOP_ROUNDS and r.wave == 2


def test_closed_loop_clients_beyond_the_running_batch_wait():
    from planner.hardware.serve import Scenario, StepModel, simulate

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("ideal"), plan, max_model_len=1024, max_num_seqs=2)
    model = StepModel(a, hw, plan, IDEAL)
    two = simulate(model, mem, Scenario(64, 8, 2, "closed-loop"))
    four = simulate(model, mem, Scenario(64, 8, 4, "closed-loop"))
    # twice the clients, the same two slots: the pairs run one after the other, so throughput is the same
    # and the other pair's service time is added to the latencies as waiting
    assert four.expected.output_tokens_per_s == pytest.approx(two.expected.output_tokens_per_s)
    assert four.expected.ttft_s > two.expected.ttft_s + 0.9 * two.expected.e2e_s
    assert four.expected.tpot_s == pytest.approx(two.expected.tpot_s)


def test_arrival_option_is_checked():
    r = run("serve", "llama-3.2-1b", "--arrival", "poisson")
    assert r.code != 0 and r.err.count("Error:") == 1 and "closed-loop" in r.err


def test_ideal_engine_has_no_gap():
    d = serve(_model("llama-3.1-8b"), load_profile("h100-sxm"), engine="ideal", concurrency=4,
              input_len=512, output_len=16)
    r = d.result
    assert r.expected == r.ideal
    assert all(v == 0 for v in r.explain["e2e_s"].values())


# ---- serve on the five models of compare ----------------------------------------------------------

KEYS = (("memory", "kv_capacity_tokens"), ("memory", "per_gpu", "weights_bytes"), ("latency", "ttft_s"),
        ("latency", "tpot_s"), ("latency", "e2e_s"), ("throughput", "output_tokens_per_s"), ("ideal", "ttft_s"),
        ("ideal", "tpot_s"), ("ideal", "e2e_s"))


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_serve_five_models_on_1_2_4_8_gpus(engine):
    from planner.hardware.serve import deployment_dict

    hw = load_profile("h100-sxm")
    for model in FIVE:
        spec = _model(model)
        for gpus in (1, 2, 4, 8):
            arrival = ("together", "closed-loop")[gpus % 3 % 2]  # both modes over the layouts
            d = deployment_dict(serve(spec, hw, engine=engine, gpus=gpus, input_len=256, output_len=4,
                                      concurrency=8, max_model_len=8192, arrival=arrival))
            assert d["settings"]["arrival"] == arrival
            for path in KEYS:
                v = d
                for k in path:
                    v = v[k]
                assert v is not None and v > 0, (model, gpus, path)
            for key in ("ttft_s", "tpot_s", "e2e_s"):
                assert d["latency"][key] >= d["ideal"][key], (model, gpus, key)
                total = sum(d["explain"][key].values())
                assert total == pytest.approx(d["latency"][key] - d["ideal"][key], rel=1e-6, abs=1e-12)
            assert d["latency"]["ttft_s"] <= d["latency"]["e2e_s"]


def test_serve_cli_json_and_words():
    r = run("serve", "llama-3.1-8b", "--gpus", "2", "--concurrency", "8", "--input-len", "512", "--output-len", "32",
            "--max-model-len", "8192", "--json")
    d = r.json
    assert d["schema_version"] == 1 and d["layout"] == {"gpus": 2, "tp": 2, "replicas": 1}
    assert set(d["explain"]["tpot_s"]) == set(FACTORS)
    t = run("serve", "llama-3.1-8b", "--gpus", "2", "--concurrency", "8", "--input-len", "512", "--output-len", "32",
            "--max-model-len", "8192")
    assert t.code == 0
    from planner.hardware.engine import load_engine

    # vLLM's own figure (vllm.yaml timing.allreduce_latency; the h100-sxm profile has none)
    lat_us = round(load_engine("vllm").allreduce_latency_s * 1e6)
    words = " ".join(t.out.split())  # the sentence wraps at the terminal's width
    assert "per token on vLLM (ideal" in words and f"all-reduce latency 66 × {lat_us} µs" in words


def test_no_torch_for_serve():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom planner.cli.app import app\n"
            "res = CliRunner().invoke(app, ['serve', 'llama-3.1-8b', '--json'])\n"
            "assert res.exit_code == 0, res.output\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert out.returncode == 0, out.stderr


def test_waves_hand_computed():
    """max_num_seqs 4 and 8 requests: two identical waves of length L; the second wave waits for the
    first, so mean e2e = 1.5 L, mean TTFT = TTFT of one wave + L / 2, throughput unchanged."""
    from planner.hardware.expected import IDEAL
    from planner.hardware.serve import Scenario, StepModel, simulate

    spec = _model("llama-3.1-8b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("ideal"), plan, max_model_len=8192, max_num_seqs=4)
    one = simulate(StepModel(a, hw, plan, IDEAL), mem, Scenario(64, 8, 4))
    two = simulate(StepModel(a, hw, plan, IDEAL), mem, Scenario(64, 8, 8))
    L = one.expected.e2e_s
    assert two.waves == 2 and one.waves == 1
    assert two.expected.e2e_s == pytest.approx(1.5 * L)
    assert two.expected.ttft_s == pytest.approx(one.expected.ttft_s + L / 2)
    assert two.expected.output_tokens_per_s == pytest.approx(one.expected.output_tokens_per_s)


def test_prefill_chunks_hand_computed():
    """Two 6-token prompts with a 4-token chunk: steps [(4,0)], [(2,4),(2,0)], [(4,2)]; the first
    request's first token ends step 2, the second's step 3."""
    from planner.hardware.expected import IDEAL
    from planner.hardware.serve import Scenario, StepModel, simulate

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    a = analyze(spec, Options())
    plan = tp_plan(spec, 1)
    mem = engine_memory(a, hw, load_engine("ideal"), plan, max_model_len=64, max_num_batched_tokens=4)
    model = StepModel(a, hw, plan, IDEAL)
    r = simulate(model, mem, Scenario(6, 1, 2))
    s1 = model.prefill({(4, 0): 1}).ideal_s
    s2 = model.prefill({(2, 4): 1, (2, 0): 1}).ideal_s
    s3 = model.prefill({(4, 2): 1}).ideal_s
    assert r.prefill_steps == 3
    assert r.expected.ttft_s == pytest.approx(((s1 + s2) + (s1 + s2 + s3)) / 2)
    assert r.expected.e2e_s == pytest.approx(s1 + s2 + s3)  # one output token: no decode step


# ---- trace: the one step model, the one fit test, --gpus/--tp ------------------------------------


def _burst(hw):
    """vLLM's factors on ``hw`` without its HTTP front end: the requests reach the scheduler together (with
    the front end they arrive one ``server_overhead`` apart, and the first decode step holds fewer)."""
    from dataclasses import replace as dc_replace

    from planner.hardware.expected import factors_for

    return dc_replace(factors_for(hw, load_engine("vllm")), server_overhead_s=0.0)


def test_trace_expected_step_is_serves_decode_step_beside_the_roofline():
    d = run("trace", "llama-3.1-8b", "--hardware", "h100-sxm", "--context", "4096", "--batch", "4", "--json").json
    tt = d["totals"]
    hw = load_profile("h100-sxm")
    s = serve(_model("llama-3.1-8b"), hw, input_len=4096, output_len=2, concurrency=4, factors=_burst(hw))
    step = s.result.decode_step  # serve's first decode step of the wave: 4 sequences at 4,096 tokens
    assert tt["expected_step_s"] == pytest.approx(step.expected_s, rel=1e-9)
    assert tt["ideal_step_s"] == pytest.approx(step.ideal_s, rel=1e-9)
    assert tt["ideal_step_s"] == pytest.approx(tt["device_s"], rel=1e-9)  # tp 1: the per-op roofline summed
    assert sum(tt["gap_by_factor"].values()) == pytest.approx(tt["expected_step_s"] - tt["ideal_step_s"])
    assert tt["tokens_per_s"] == pytest.approx(4 / tt["expected_step_s"])  # the expected figure, not the ideal
    assert tt["ideal_tokens_per_s"] == pytest.approx(4 / tt["ideal_step_s"])
    assert d["memory"]["fits"] and d["engine"] == "vllm" and d["layout"] == {"gpus": 1, "tp": 1}


def test_trace_marks_what_does_not_fit_and_shows_no_throughput():
    d = run("trace", "deepseek-v3", "--hardware", "h200-sxm", "--sweep", "batch=1,8", "--json").json
    assert d["memory"]["fits"] is False and d["memory"]["fewest_gpus"] == 8
    assert d["totals"]["tokens_per_s"] is None and d["totals"]["ideal_tokens_per_s"] is None
    assert d["totals"]["expected_step_s"] > 0  # the step is still priced, only not sold as throughput
    assert [(r["fits"], r["tokens_per_s"]) for r in d["sweep"]] == [(False, None), (False, None)]
    r = run("trace", "deepseek-v3", "--hardware", "h200-sxm", "--sweep", "batch=1,8")
    assert r.code == 0 and r.out.count("does not fit") >= 3  # two sweep rows and the note


def test_trace_tp_shards_the_step_and_sweep_rows_use_the_fit_test():
    one = run("trace", "llama-3.1-70b", "--hardware", "h100-sxm", "--json").json
    eight = run("trace", "llama-3.1-70b", "--hardware", "h100-sxm", "--gpus", "8", "--json",
                "--sweep", "batch=1,4096", "--sweep", "context=128k").json
    assert one["memory"]["fits"] is False and one["totals"]["tokens_per_s"] is None
    assert eight["layout"] == {"gpus": 8, "tp": 8} and eight["memory"]["fits"]
    # column-/row-parallel weights split 8 ways; only norms stay whole
    assert one["totals"]["weight_bytes"] / 8 <= eight["totals"]["weight_bytes"] < one["totals"]["weight_bytes"] / 7.9
    assert eight["totals"]["gap_by_factor"]["all-reduce latency"] > 0
    fits = {r["batch"]: r["fits"] for r in eight["sweep"]}
    assert fits == {1: True, 4096: False}
    assert [r["tokens_per_s"] is None for r in eight["sweep"]] == [False, True]


def test_trace_bad_layout_is_one_error_line():
    r = run("trace", "llama-3.1-8b", "--gpus", "3", "--tp", "2")
    assert r.code != 0 and r.err.strip().startswith("Error:") and len(r.err.strip().splitlines()) == 1


def test_compare_times_are_serves_expected_beside_the_ideal():
    d = run("compare", "llama-3.1-8b", "--hardware", "h100-sxm", "--context", "4096", "--batch", "4", "--json").json
    sv = d["models"][0]["serving"]
    spec, hw = _model("llama-3.1-8b"), load_profile("h100-sxm")
    step = serve(spec, hw, input_len=4096, output_len=2, concurrency=4, factors=_burst(hw)).result.decode_step
    assert sv["step_s"] == pytest.approx(step.expected_s, rel=1e-9)
    assert sv["ideal"]["step_s"] == pytest.approx(step.ideal_s, rel=1e-9)
    assert sum(sv["gap_by_factor"].values()) == pytest.approx(sv["step_s"] - sv["ideal"]["step_s"])
    assert sv["decode_tokens_per_s"] == pytest.approx(4 / step.expected_s)
    first = serve(spec, hw, input_len=4096, output_len=1, concurrency=1).result  # one prompt, one chunk
    assert sv["ttft_s"] == pytest.approx(first.expected.ttft_s, rel=1e-9)
    assert sv["ideal"]["ttft_s"] == pytest.approx(first.ideal.ttft_s, rel=1e-9)
    assert sv["ttft_s"] > sv["ideal"]["ttft_s"]
    text = run("compare", "llama-3.1-8b", "qwen2.5-7b", "--context", "4096").out
    assert "(ideal " in text


def test_compare_ttft_of_a_long_prompt_is_the_sum_of_its_chunks():
    from planner.hardware.expected import factors_for
    from planner.hardware.serve import StepModel

    spec, hw = _model("llama-3.1-8b"), load_profile("h100-sxm")
    d = run("compare", "llama-3.1-8b", "--hardware", "h100-sxm", "--context", "20000", "--json").json
    chunk = load_engine("vllm").max_num_batched_tokens(hw)
    a = analyze(spec, Options(context=20000, batch=1))
    f = factors_for(hw, load_engine("vllm"))
    m = StepModel(a, hw, tp_plan(spec, 1), f)
    starts = range(0, 20000, chunk)
    want = sum(m.prefill({(min(chunk, 20000 - s), s): 1}).expected_s for s in starts)
    # plus, once, the engine's per-request overhead and its HTTP front end's time for this one request
    want += f.request_overhead_s + f.server_overhead_s
    assert len(starts) >= 2 and d["models"][0]["serving"]["ttft_s"] == pytest.approx(want, rel=1e-9)


def _flat_price(pieces) -> float:  # every step 10 ms
    return 10e-3


def test_multi_step_round_boundary_admission_hand_computed():
    """vLLM V0 multi-step, 3 decode steps per round, 10 ms steps, an 8-token budget. A (4-token prompt, 5
    tokens) is sent at 0, B (5-token prompt, 2 tokens) at 15 ms. Step 0 (0-10 ms): A's prompt alone (first
    token at 10 ms). Steps 1-3 (10-40 ms): a round of A's decodes at contexts 4, 5, 6; B arrives at 15 ms
    but waits for the round's end. Step 4 (40-50): B's prompt in a step of its own (A does not decode):
    TTFT 35 ms. Steps 5-7 (50-80): a round of both, mean contexts (7+5)/2, (8+6)/2, (9+7)/2. A makes its
    5th token in step 5 and B its 2nd, but both keep their places until the round ends and get their
    tokens at 80 ms. Under V1 rules (one step per round) B joins step 2 beside A's decode: TTFT 15 ms."""
    from planner.hardware.serve import run_steps

    sends = [(0.0, 1, 4, 5), (15e-3, 1, 5, 2)]
    steps, done = run_steps(sends, 8, 4, price=_flat_price, scheduler_steps=3)
    assert steps == [{(4, 0): 1}, {(1, 4): 1}, {(1, 5): 1}, {(1, 6): 1}, {(5, 0): 1},
                     {(1, 6): 2}, {(1, 7): 2}, {(1, 8): 2}]
    a, b = sorted(done, key=lambda m: m.send_s)
    assert (a.start_step, a.first_step, a.end_step) == (0, 0, 7)
    assert (b.start_step, b.first_step, b.end_step) == (2, 4, 7)  # (step 2 is the first to start after 15 ms)
    assert a.first_s == pytest.approx(10e-3) and a.end_s == pytest.approx(80e-3)
    assert b.first_s - b.send_s == pytest.approx(35e-3) and b.end_s == pytest.approx(80e-3)
    steps1, done1 = run_steps(sends, 8, 4, price=_flat_price)
    assert steps1[2] == {(1, 5): 1, (5, 0): 1}
    b1 = max(done1, key=lambda m: m.send_s)
    assert b1.first_s - b1.send_s == pytest.approx(15e-3)


def test_multi_step_prompts_run_whole_and_alone():
    """Multi-step rounds take prompts whole (V0 0.6.0 has no chunked prefill with multi-step): with a
    6-token budget, three 4-token prompts sent together run one per prompt step (a prompt over what is
    left of the budget waits for the next round), and a 9-token prompt, longer than the budget, runs
    alone; one-token requests end with their prompt step."""
    from planner.hardware.serve import run_steps

    steps, done = run_steps([(0.0, 3, 4, 1), (0.0, 1, 9, 1)], 6, 8, price=_flat_price, scheduler_steps=4)
    assert steps == [{(4, 0): 1}, {(4, 0): 1}, {(4, 0): 1}, {(9, 0): 1}]
    assert sorted(m.end_step for m in done) == [0, 1, 2, 3]


def test_num_scheduler_steps_only_where_the_engine_has_it():
    from planner.analysis.errors import OptionError
    from planner.hardware.serve import serve

    spec = _model("llama-3.2-1b")
    hw = load_profile("h100-sxm")
    assert load_engine("vllm").num_scheduler_steps == 1
    d = serve(spec, hw, engine="vllm", input_len=64, output_len=8, concurrency=2, num_scheduler_steps=4)
    assert d.num_scheduler_steps == 4 and any("multi-step" in n for n in d.notes)
    with pytest.raises(OptionError, match="no multi-step"):
        serve(spec, hw, engine="sglang", input_len=64, output_len=8, num_scheduler_steps=4)


def test_step_loop_admits_only_what_the_kv_pool_holds():
    """With a 10-token pool, two requests of 4 + 2 tokens sent together cannot run at once (each reserves
    its whole 6-token sequence): the second starts the step after the first ends. 10 ms steps: the first
    runs steps 0-1 (prompt, decode), the second steps 2-3."""
    from planner.hardware.serve import run_steps

    steps, done = run_steps([(0.0, 2, 4, 2)], 16, 4, price=_flat_price, kv_tokens=10)
    assert steps == [{(4, 0): 1}, {(1, 4): 1}, {(4, 0): 1}, {(1, 4): 1}]
    assert [(m.start_step, m.first_step, m.end_step, m.count) for m in done] == [(0, 0, 1, 1), (0, 2, 3, 1)]
    assert done[1].end_s == pytest.approx(40e-3)


def test_output_lengths_geometric_cut_at_the_cap_hand_computed():
    """Output 10, mean 8: a request goes on after each token with chance r where (1 − r^10) / (1 − r) = 8:
    r = 0.94927 (1 − 0.94927^10 = 0.4058, / 0.05073 = 8.00). Request k takes u = k × 0.618... mod 1 and
    length 1 + ⌊ln(1 − u) / ln r⌋ (ln r = −0.052064), at most 10: u 0 -> 1; 0.618 -> 1 + ⌊18.48⌋ -> 10;
    0.236 -> 1 + ⌊5.17⌋ = 6; 0.854 -> 10; 0.472 -> 1 + ⌊12.27⌋ -> 10; 0.0902 -> 1 + ⌊1.82⌋ = 2; 0.708 -> 10;
    0.326 -> 1 + ⌊7.59⌋ = 8. Without a mean (or at the cap) every request runs to the output length; a mean
    of 1 stops every request after its first token."""
    from planner.hardware.serve import eos_continue_probability, output_lengths

    assert eos_continue_probability(10, 8.0) == pytest.approx(0.94927, abs=1e-5)
    assert output_lengths(10, 8.0, 8) == [1, 10, 6, 10, 10, 2, 10, 8]
    assert output_lengths(10, None, 3) == [10, 10, 10]
    assert output_lengths(10, 10.0, 2) == [10, 10]
    assert output_lengths(10, 1.0, 3) == [1, 1, 1]
    # a mean a few float steps under a 2^24-token cap: r within 1e-15 of 1, the lengths at the cap
    assert output_lengths(2**24, 2**24 - 4e-9, 3)[1:] == [2**24, 2**24]
    # many requests: the mean is the one asked for, and the share cut at the cap is r^(cap − 1)
    many = output_lengths(128, 100.0, 30000)
    r = eos_continue_probability(128, 100.0)
    assert sum(many) / 30000 == pytest.approx(100, abs=0.1)
    assert sum(x == 128 for x in many) / 30000 == pytest.approx(r ** 127, abs=0.002)
    assert min(many) == 1


def test_kv_pool_admission_holds_the_mean_length_of_requests_that_stop_at_eos():
    """A pool that holds 60 tokens, 4-token prompts, output cap 10, 8 clients. Every request running to 10
    tokens holds 14: 60 // 14 = 4 run at once. Requests that stop at end-of-sequence with mean 2 hold 4 + 2 =
    6 on average (the engine admits by the blocks a request holds, not by its cap): 60 // 6 = 10, so all 8
    run; mean 2.5 rounds up to 3 held tokens: 60 // 7 = 8."""
    from planner.hardware.serve import Scenario, _replica_admission

    class Pool(_Mem):
        @staticmethod
        def max_batch(tokens):
            return 60 // tokens

    assert _replica_admission(Pool(), Scenario(4, 10, 8), 1, closed=False)[1] == 4
    assert _replica_admission(Pool(), Scenario(4, 10, 8, mean_output_len=2.0), 1, closed=False)[1] == 8
    assert _replica_admission(Pool(), Scenario(4, 10, 9, mean_output_len=2.5), 1, closed=False)[1] == 8
    # a mean at the cap is the cap
    assert _replica_admission(Pool(), Scenario(4, 10, 8, mean_output_len=10.0), 1, closed=False)[1] == 4


def test_mean_output_len_outside_the_lengths_is_refused():
    from planner.analysis.errors import OptionError
    from planner.hardware.serve import Scenario

    Scenario(4, 10, 2, "closed-loop", mean_output_len=1.0).check()  # every request stops after one token
    for bad in (0.5, 10.5, float("nan")):
        with pytest.raises(OptionError, match="--mean-output-len"):
            Scenario(4, 10, 2, "closed-loop", mean_output_len=bad).check()
    with pytest.raises(OptionError, match="--requests"):
        Scenario(4, 10, 2, "closed-loop", requests=0).check()


def test_closed_loop_run_length_hand_computed():
    """2 clients, 4-token prompts, 3 output tokens, an 8-token budget, 10 ms steps, 3 requests in all
    (``--requests``, vLLM's --num-prompts): steps 0-2 run both first requests (prompts together, then decodes
    at contexts 4 and 5); both end at 30 ms, but only one more request is left, so steps 3-5 run it alone.
    TTFT 10 ms each, e2e 30 ms each, 9 tokens in 60 ms; the default would run 8 per client."""
    from planner.hardware.serve import Scenario, simulate

    m = _FlatModel(Factors())
    r = simulate(m, _Mem(), Scenario(4, 3, 2, "closed-loop", requests=3))
    assert m.steps == [{(4, 0): 2}, {(1, 4): 2}, {(1, 5): 2}, {(4, 0): 1}, {(1, 4): 1}, {(1, 5): 1}]
    assert r.expected.ttft_s == pytest.approx(10e-3)
    assert r.expected.e2e_s == pytest.approx(30e-3)
    assert r.expected.output_tokens_per_s == pytest.approx(9 / 60e-3)
    assert "3 requests in all" in " ".join(r.notes)


def test_closed_loop_clients_drift_apart_when_requests_stop_at_eos_hand_computed():
    """2 clients, 4-token prompts, output 3 with mean 2.5 (r = 0.8229; requests 0-3 get 1, 3, 2, 3 tokens,
    ``output_lengths``), 4 requests, an 8-token budget, 10 ms steps, no front end. Step 0 (0-10 ms): both
    prompts; request 0 ends with its first token at 10 ms and its client sends request 2. Step 1: request
    1's decode at context 4 and request 2's prompt. Step 2: request 1's decode at context 5 (it ends at 30
    ms, its third token) and request 2's at context 4 (it ends at 30 ms, its second), priced together at
    their mean context 4.5, rounded as Python rounds to 4 (``run_steps``); one request is left,
    request 3, sent at 30 ms. Steps 3-5: its prompt and two decodes; it ends at 60 ms. TTFT 10 ms each; e2e
    10, 30, 20, 30 (mean 22.5); 9 tokens in 60 ms; TPOT (22.5 − 10) / (2.25 − 1) = 10 ms."""
    from planner.hardware.serve import Scenario, simulate

    m = _FlatModel(Factors())
    r = simulate(m, _Mem(), Scenario(4, 3, 2, "closed-loop", requests=4, mean_output_len=2.5))
    assert m.steps == [{(4, 0): 2}, {(1, 4): 1, (4, 0): 1}, {(1, 4): 2}, {(4, 0): 1}, {(1, 4): 1}, {(1, 5): 1}]
    assert r.expected.ttft_s == pytest.approx(10e-3)
    assert r.expected.e2e_s == pytest.approx(22.5e-3)
    assert r.expected.tpot_s == pytest.approx(10e-3)
    assert r.expected.output_tokens_per_s == pytest.approx(9 / 60e-3)
    assert r.explain["ttft_s"]["request overhead"] == 0.0  # no front end: nothing waits outside the steps


def test_tpot_of_requests_of_different_lengths_is_the_mean_of_each_ones_hand_computed():
    """TPOT as vllm bench serve reports it: the mean over requests (more than one token) of each one's
    (e2e − TTFT) / (tokens − 1), not the ratio of the means. Three 4-token prompts together, output cap 10
    with mean 8 (lengths 1, 10, 6: ``output_lengths``), an 8-token budget, no front end; a decode step takes
    10 ms per sequence, a step with a prompt 10 ms (half of each is ideal). Step 0 (0-10): prompts 0 and 1;
    request 0 ends with its one token. Step 1 (10-20): request 1's decode and prompt 2. Steps 2-6: two
    decodes, 20 ms each (to 120 ms; request 2 makes its sixth token). Steps 7-9: request 1 alone, 10 ms each
    (to 150 ms). Request 1: (150 − 10) / 9 = 15.56 ms; request 2: (120 − 20) / 5 = 20 ms; TPOT 17.78 ms,
    where (mean e2e − mean TTFT) / (mean tokens − 1) = (93.33 − 13.33) / 4.667 = 17.14 ms."""
    from planner.hardware.expected import StepCost
    from planner.hardware.serve import Scenario, simulate

    class PerSequence(_FlatModel):
        def decode(self, batch, context):
            self.steps.append({(1, context): batch})
            parts = {k: 0.0 for k in FACTORS}
            parts["step overhead"] = 5e-3 * batch
            return StepCost(5e-3 * batch, 10e-3 * batch, parts, 0)

    m = PerSequence(Factors())
    r = simulate(m, _Mem(), Scenario(4, 10, 3, mean_output_len=8.0), server=False)
    # ten steps, nine priced: the decode contexts are the mean over the batch, rounded half to even, so steps 3
    # and 4 are both {(1, 6): 2}, and run_steps' decode stretch prices a step that repeats the one before once
    assert m.steps == [{(4, 0): 2}, {(1, 4): 1, (4, 0): 1}, {(1, 4): 2}, {(1, 6): 2}, {(1, 8): 2}, {(1, 8): 2},
                       {(1, 10): 1}, {(1, 11): 1}, {(1, 12): 1}]
    assert r.expected.tpot_s == pytest.approx((140 / 9 + 20) / 2 * 1e-3)
    assert r.ideal.tpot_s == pytest.approx((140 / 9 + 20) / 4 * 1e-3)
    assert r.explain["tpot_s"]["step overhead"] == pytest.approx((140 / 9 + 20) / 4 * 1e-3)
    assert r.explain["tpot_s"]["request overhead"] == pytest.approx(0.0, abs=1e-12)
    assert r.expected.e2e_s == pytest.approx(280e-3 / 3)
    assert r.expected.ttft_s == pytest.approx(40e-3 / 3)


def test_serve_cli_run_length_and_eos_lengths():
    r = run("serve", "llama-3.2-1b", "--arrival", "closed-loop", "--concurrency", "4", "--input-len", "64",
            "--output-len", "16", "--requests", "12", "--mean-output-len", "12", "--max-model-len", "1024", "--json")
    s = r.json["settings"]
    assert (s["requests"], s["mean_output_len"]) == (12, 12.0)
    assert any("12 requests in all" in n for n in r.json["notes"])
    assert any("geometric lengths" in n for n in r.json["notes"])
    bad = run("serve", "llama-3.2-1b", "--output-len", "16", "--mean-output-len", "17")
    assert bad.code != 0 and bad.err.count("Error:") == 1 and "--mean-output-len" in bad.err


def test_time_cells_carry_a_sign_and_drop_float_residue():
    """The explain table's parts may be negative (a factor that saves time: the decode attention fraction
    above 1) or float residue of a difference; both print as times, not as 1e+04 ns."""
    from planner.cli.render import fmt_time

    assert fmt_time(-6.04e-5) == "-60.4 µs"
    assert fmt_time(-0.0153) == "-15.3 ms"
    assert fmt_time(-3.67e-17) == "0 ns" and fmt_time(0.0) == "0 ns"
    assert fmt_time(0.0123) == "12.3 ms" and fmt_time(2.5) == "2.5 s"


# ---- sliding windows the engine does not apply ----------------------------------------------------


def test_trtllm_keeps_mistral_full_context_where_vllm_keeps_its_window():
    """Mistral-7B-v0.1's config has sliding_window 4096 on all 32 layers. TensorRT-LLM (v0.17 TensorRT
    engines and the 1.0 PyTorch backend) does not apply it unless KvCacheConfig.max_attention_window is
    set (profiles/engines/trtllm.yaml sliding_window): a 22,000-token sequence keeps and attends to all
    22,000 tokens of every layer. vLLM applies the window (its KV manager and kernels): 4,096."""
    from planner.hardware.engine import engine_analysis

    spec = _model("mistralai/Mistral-7B-v0.1")
    ctx = 22000
    a = analyze(spec, Options(context=ctx))
    per_token = 32 * 2 * 8 * 128 * 2  # layers × (K, V) × KV heads × head_dim × bf16 bytes
    assert a.kv.bytes_per_token == per_token
    assert a.kv_bytes_per_sequence == 4096 * per_token  # the config's window, as vLLM runs it
    same, notes = engine_analysis(a, load_engine("vllm"))
    assert same is a and notes == ()
    full, notes = engine_analysis(a, load_engine("trtllm"))
    assert full.kv_bytes_per_sequence == ctx * per_token
    assert all(lk.window is None for lk in full.kv.layers)
    assert len(notes) == 1 and "4,096" in notes[0] and "full attention" in notes[0]
    # a decode step at 22,000 cached tokens attends to 22,001 keys (the new token's own included) where the
    # window holds 4,096 of them, the new one included: it reads 17,905 tokens' K and V more
    assert full.decode_totals.kv_bytes - a.decode_totals.kv_bytes == (ctx + 1 - 4096) * per_token


def test_trtllm_applies_the_window_of_the_models_whose_kernels_take_it():
    """gpt-oss passes its window to TensorRT-LLM's attention kernel (PyTorch backend; PR #12597's
    description): its windowed layers stay windowed."""
    from planner.hardware.engine import engine_analysis

    a = analyze(_model("openai/gpt-oss-20b"), Options(context=8192))
    assert any(lk.window for lk in a.kv.layers)
    same, notes = engine_analysis(a, load_engine("trtllm"))
    assert same is a and notes == ()


def test_serve_on_trtllm_says_it_prices_mistral_with_full_attention():
    hw = load_profile("h200-sxm")
    spec = _model("mistralai/Mistral-7B-v0.1")
    kw = dict(input_len=20000, output_len=4, concurrency=1)
    trt = serve(spec, hw, engine="trtllm", **kw)
    vllm = serve(spec, hw, engine="vllm", **kw)
    assert any("does not apply this model's sliding window" in n for n in trt.notes)
    assert not any("sliding window (" in n for n in vllm.notes)
    assert trt.analysis.kv_bytes_per_sequence == 20004 * trt.analysis.kv.bytes_per_token
    assert vllm.analysis.kv_bytes_per_sequence == 4096 * vllm.analysis.kv.bytes_per_token
    # the prompt's attention over 20,000 tokens is quadratic without the window: more FLOPs than with it
    assert trt.analysis.prefill_flops > vllm.analysis.prefill_flops


def test_engine_profile_checks_its_sliding_window_fact(monkeypatch):
    import copy

    import planner.hardware.engine as engine_mod
    from planner.analysis.errors import HardwareError

    real = engine_mod._read_yaml("trtllm")

    def with_value(v):
        d = copy.deepcopy(real)
        d["sliding_window"] = v
        monkeypatch.setattr(engine_mod, "_read_yaml", lambda name: d)
        return engine_mod.load_engine("trtllm")

    for bad in ({"default": "sometimes"}, "ignored", {"default": "ignored", "applied_for": "gpt_oss"}):
        with pytest.raises(HardwareError, match="sliding_window"):
            with_value(bad)
    assert with_value(None).applies_sliding_window("mistral")  # no fact: the window is applied
    e = with_value({"default": "ignored", "applied_for": ["gpt_oss"]})
    assert not e.applies_sliding_window("mistral") and e.applies_sliding_window("gpt_oss")


def test_mxfp4_experts_are_weight_only_only_without_fp4_tensor_cores():
    """gpt-oss's MXFP4 experts: dequantized in the GEMM (weight-only, priced by the engine's
    weight_only_efficiency) on Ampere and Hopper; read as FP4 by Blackwell's tensor cores (a profile
    with an fp4 peak), where no weight-only term applies. An int4 what-if stays weight-only everywhere."""
    from planner.cli.common import load_model
    from planner.hardware.serve import StepModel

    a = analyze(load_model("openai/gpt-oss-20b").spec, Options())
    assert a.fmt.quant.method == "mxfp4"
    assert StepModel.weight_only_bits_of(a, load_profile("a100-80gb")) == 4
    assert StepModel.weight_only_bits_of(a, load_profile("h100-sxm")) == 4
    assert StepModel.weight_only_bits_of(a, load_profile("b200")) is None
    int4 = analyze(load_model("llama-3.1-8b").spec, Options(dtype="int4"))
    assert StepModel.weight_only_bits_of(int4, load_profile("b200")) == 4
    # through serve: the weight-only term is there on H100 and absent on B200
    on = {hw: run("serve", "openai/gpt-oss-20b", "-H", hw, "--json").json["explain"]["tpot_s"]["weight-only kernels"]
          for hw in ("h100-sxm", "b200")}
    assert on["h100-sxm"] > 0 and on["b200"] == 0


def test_cuda_graph_max_tokens_sets_which_steps_replay_graphs_and_is_reported():
    """``--cuda-graph-max-tokens`` replaces the engine profile's largest graphed step. At 0 (vLLM
    --enforce-eager) every decode step of 8 sequences is launched op by op, so it pays the launch floor per op
    and the decode slows down, while the prompt steps (graphed only up to 512 tokens on vLLM, and these are
    1,024) and so TTFT stay the same (without async scheduling: with it, a request that arrives while others run
    waits for the step after next, whose length the graphs change). The JSON settings say which size was used; a
    negative size is one error."""
    from planner.analysis.errors import OptionError
    from planner.hardware.serve import deployment_dict

    spec, hw = _model("llama-3.1-8b"), load_profile("h100-sxm")
    kw = dict(engine="vllm", input_len=1024, output_len=64, concurrency=8)
    default, eager = serve(spec, hw, **kw), serve(spec, hw, cuda_graph_max_tokens=0, **kw)
    assert default.factors.cuda_graph_max_tokens == 512 and eager.factors.cuda_graph_max_tokens == 0
    assert eager.result.expected.tpot_s > 1.2 * default.result.expected.tpot_s
    assert eager.result.explain["tpot_s"]["kernel launches"] > default.result.explain["tpot_s"]["kernel launches"]
    sync = dict(kw, async_scheduling=False)
    assert serve(spec, hw, cuda_graph_max_tokens=0, **sync).result.expected.ttft_s == pytest.approx(
        serve(spec, hw, **sync).result.expected.ttft_s)
    assert deployment_dict(eager)["settings"]["cuda_graph_max_tokens"] == 0
    with pytest.raises(OptionError):
        serve(spec, hw, cuda_graph_max_tokens=-1, **kw)
