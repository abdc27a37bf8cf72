"""Predictions against published measurements: ``python bench/published.py [--folds 5] [--only ID...]``.

For every entry of ``bench/published.yaml`` whose model config is bundled and whose GPU has a profile,
it runs the serve model in-process (``planner.hardware.serve``: the same engine memory and step model
``planner serve`` uses) with the entry's settings, and prints

- per point: the published figure, the prediction with the factors as shipped, and its error
  (``predicted / published − 1``);
- per quantity: the median |error| and the largest;
- k-fold held-out error of the fitted timing factors: the entries are split into k folds; for each fold
  the factors are fitted on the other k−1 folds and the fold is predicted with them. The fitted factors
  are global (device: achieved bandwidth and GEMM fractions, all-reduce latency) or per engine (step,
  per-sequence, launch, request and front-end overheads, the least op time, and the decode attention
  kernel's fraction of the achieved bandwidth), never per model or per point. The prefill attention fraction
  is not fitted: it is the FlashAttention-3 paper's (profiles/engines/*.yaml); fitted, it went to the grid's
  ends (0.5 for vLLM and TensorRT-LLM, 1.0 for SGLang) where it stood in for per-request costs.
- the factors fitted on all points, to copy into the profiles with this script as their source.

How the factors are fitted, and why. Since 2026-12-01 10:00 UTC the default is ``--objective l1 --sweeps 20
--grid coarse --split id`` (the shipped profiles were fitted with it): the mean |log error| of each quantity,
coordinate sweeps from the shipped values on GRID until one changes nothing, folds of every k-th point by id.
Before, it was ``--objective median --sweeps 1``; on the same 188 points and grids (bench/published.md, "Dec
1, second round") the old estimator's GEMM fraction ran from 0.5 to 0.9 over the folds and the new one's is 0.7
in all five, and held out the new one gives TTFT 14.5 % (old 21.5 %), TPOT 12.6 % (11.1 %; largest 523 %
against 468 %), e2e 6.8 % (9.7 %) and output tokens/s 7.8 % (16.3 %) median |error|. The options:

- ``--split source``: folds hold whole sources (``source_key``: a repository at one commit, else
  the page's address), balanced on their timing points. Entries of one source share a host, a harness and
  an author's settings (the five RTX 4090 rows of one blog, the six DeepSeek-R1 rows of one issue, gpt-fast's
  tables of one 330 W A100 box); split point by point they fall into different folds, and a factor fitted
  on four of them predicts the fifth with that host's quirks already in it. Held out by source, a figure is
  predicted as for a new deployment. (A per-engine factor that no training point of its engine moves keeps
  its starting value, the shipped profile's, which was itself fitted on all points: with gpt-fast's one
  source held out, its step overhead is that value.)
- ``--objective l1``: minimise the mean over the timing quantities (each weighs the same) of the
  mean |log(predicted / published)| of that quantity's training points. The former objective, each
  quantity's median |log error|, is set by one or two points of the 5-7 TPOT points in a training set: it is
  flat wherever that middle point does not move, jumps when the ranks swap, and is least where the middle
  point is fitted whatever the others do (between two points rather than at either). The mean |log error|
  counts every point with a bounded pull (a point's slope is ±1 however far off it is, so an outlier moves a
  one-factor fit no further than any other point: its minimiser is the median of the signed log ratios).
  It is not immune to a group of points off the same way that one factor can mend: on the data before
  2026-12-01 06:00 the three DeepSeek-R1 TPOT rows (−67 %, unmodelled MoE kernels) took TensorRT-LLM's
  step overhead to the grid's 4 ms under L1.
- ``--sweeps 20``: coordinate sweeps are repeated until one changes nothing (20 at most). With one sweep
  a factor set early keeps the value that was best before the factors after it moved: in fold 3 of the
  05:00 run the all-reduce latency was set to 50 µs while vLLM's request overhead was still 8 ms; at the
  fold's final values 20 µs scores 0.089 and 50 µs 0.192, but nothing went back (vLLM PR #48757's TP8 TPOT
  +58 % and NIM's TP2 TPOT +27 % held out, gpt-fast's TP8 int8 rows −28 % and −31 %).
- ``--grid fine``: the same ranges on even steps (``GRID_FINE``; every coarse value is on it), so
  that a continuous factor is not forced to jump between 10 and 20 ms or 20 and 30 µs.
- ``--fit-sample F`` and ``--no-allfit`` (session 65): a fit's time goes with its training points (each trial
  simulates every point it moves), and on all 6,718 points one fold's first sweep took 1,780 s and the fit on
  all points 2,355 s, about 3.2 hours in all. ``--fit-sample F`` fits each fold on the training points of a
  fixed share F of the benchmark rows (``in_fit_sample``: a hash of the row, the same rows in every fold and
  every run, a row's entries in or out together); every held-out point is still predicted, by its fold's
  factors. ``--no-allfit`` skips the fit on all points, which only prints factors for the profiles: the
  held-out column and ``--write-accuracy`` need only the folds'. Factors fitted on fewer points are expected
  to predict the held-out points no better, so a record made this way should not flatter the model; its
  command line says how it was made.

Memory quantities (kv_capacity_tokens, weights_gib, max_concurrency) are not fitted here: their terms
come from the engines' code (profiles/engines/*.yaml). An entry whose log a memory term was read from
(``training_for: [term, ...]``) is shown but left out of the held-out column and its medians.

Regimes. A timing entry that went through the engine's HTTP server with more than 64 requests per replica
in flight is a ``server_burst`` (``planner.hardware.accuracy.regime_of``: the 100-1,000-prompt bursts that
``vllm bench serve`` sends without ``--max-concurrency``, and 100-500-client runs); every other one is
``steady`` (1-64 clients through the server, in-process and offline runs of any size). The two are scored
apart (the table after the per-point list; ``--write-accuracy`` writes both, and ``planner serve`` prints the
figures of its scenario's regime). The bursts are predicted and scored but not fitted (``--fit-bursts`` fits
them too): the serve model prices the front end as a serial per-request intake and nothing else, and with
hundreds of requests streaming at once the front end's work sets the pace (detokenising and streaming every
token; on GPUStack's 8x H100 host each 1,000-prompt burst completed 984 requests, and SGLang's gpt-oss-20b
bursts ran 3x (H100) and 17x (A100) slower than vLLM's on the same GPU and prompts). The published runs hold no server run between 65 and
99 requests per replica. Fitted on the bursts as well, the factors bend to stand in for the missing term
(bench/published.md, "Dec 1, eighth round").

An entry's ``settings.dtype`` is the weights as run: on a ``model_config`` without a quantization_config it is
``planner serve --dtype``'s what-if; on a quantized base it is ignored where it names the base's own width (fp8 on
DeepSeek-R1's block FP8) and taken as that what-if where it names another (an NVFP4 checkpoint made from it:
``other_format``).

Each timing entry says how its benchmark ran (``settings``): ``arrival`` (``together``: a static batch or
an offline run; ``closed-loop``: C clients each sending the next request when the last ends),
``client`` (``server``: a streaming HTTP client, which sees the engine's per-request front-end cost;
``in-process``: it does not), ``cuda_graphs: false`` where the benchmark ran without CUDA graphs,
``cuda_graph_max_tokens: N`` where it captured graphs for larger steps than the engine's default (the
largest captured batch, e.g. TensorRT-LLM's perf-overview ``cuda_graph_config.batch_sizes`` up to 8192),
``batch_wait_timeout_iters`` / ``batch_wait_max_tokens_ratio`` where a TensorRT-LLM run turned on its delayed
batching of new prompts (``planner serve --batch-wait-iters / --batch-wait-tokens-ratio``),
``scheduler_recv_interval: N`` where an SGLang server ran with ``--scheduler-recv-interval N`` (its scheduler takes
new requests off its socket once every N decode steps: ``planner serve --scheduler-recv-interval``),
``enable_chunked_prefill`` where a vLLM V0 run set it (otherwise V0's default: ``v0_chunked_prefill``; without it
V0 runs prompts alone and whole),
``num_scheduler_steps: N`` where a vLLM V0 run set multi-step scheduling (``--num-scheduler-steps``: its
scheduler runs once per round of N decode steps),
``async_scheduling: true|false`` where a vLLM run set it itself (otherwise its release's default:
``vllm_async_scheduling``), and ``decode_kv_reads: per_query_head`` where the engine's decode attention
kernel read each KV head's cache once per query head (TensorRT-LLM before v0.7: no GQA sharing in its masked MHA).
A closed-loop entry may give ``num_prompts`` (the requests of the whole run, ``vllm bench serve
--num-prompts``), and an entry whose requests stopped at end-of-sequence (no ``--ignore-eos``) its
``mean_output_len`` (generated tokens per request in that run: its output tokens over its requests).
An entry whose benchmark drew each request's lengths (a random dataset with a range ratio) gives
``input_len_dist`` / ``output_len_dist`` (``uniform:A:B``, ...: ``planner serve --input-len-dist``), its
``input_len`` / ``output_len`` then being their means: closed-loop clients of different lengths drift
apart after the first round, where clients of one length would stay in step and send their prompts in bursts.
An entry with ``excluded: reason`` is listed with its reason and not predicted. An entry with a
``layout`` block (expert parallel, attention data parallel, one pool of a disaggregated deployment) is
beyond the serve model: it is listed as skipped, nothing is fitted on it, and ``bench/plan_published.py``
predicts it with ``planner plan``'s layout model. An entry with ``arrival: poisson`` (a request-rate
benchmark: ``--request-rate R`` in vLLM's benchmark_serving or SGLang's bench_serving) is skipped the same
way: ``bench/plan_published.py`` simulates it at its rate.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# NIM for LLMs serves its optimized profiles with TensorRT-LLM: its figures are predicted with that profile.
ENGINE_MAP = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "nim": "trtllm", "gpt-fast": "gptfast",
              "ideal": "ideal"}


def engine_profile_of(entry: dict) -> str:
    """The engine profile an entry is predicted with: ENGINE_MAP's, except that vLLM before 0.8 ran its V0
    engine (V1 became the default in 0.8), which profiles/engines/vllm-v0.yaml describes (vllm-v0-early.yaml before
    0.6, ``V0_LATE_FROM``). The version is the
    entry's ``engine_version`` ("0.7.3", "0.2.6 (main, Dec 2023)"); one that does not start with a release
    number (a commit, "None") keeps the V1 profile. ``settings.vllm_engine`` (``v0`` / ``v1``) names the engine
    where the run chose it itself: vLLM 0.8-0.10 still shipped V0 behind ``VLLM_USE_V1=0`` (ROCm images set it)."""
    name = ENGINE_MAP[entry["engine"]]
    chosen = (entry.get("settings") or {}).get("vllm_engine")
    if chosen is not None:
        if name != "vllm" or chosen not in ("v0", "v1"):
            raise ValueError(f"settings.vllm_engine {chosen!r}: v0 or v1, on a vLLM entry")
        return "vllm-v0" if chosen == "v0" else "vllm"
    release = release_of(entry)
    if name == "vllm" and release is not None and release < V0_LATE_FROM:
        return "vllm-v0-early"
    if name == "vllm" and release is not None and release < (0, 8):
        return "vllm-v0"
    return name


# vLLM v0.6.0 cut V0's host work per running sequence (profiles/engines/vllm-v0-early.yaml): releases before it run
# with that profile, 0.6-0.7 with vllm-v0.yaml; both are V0 (V0_PROFILES)
V0_LATE_FROM = (0, 6)
V0_PROFILES = ("vllm-v0", "vllm-v0-early")


#: the settings key in which an entry gives its engine's own memory fraction, where it does not write it as
#: ``gpu_memory_utilization`` (the name ``planner serve --gpu-memory-utilization`` takes for every engine's)
FRACTION_KEYS = {"sglang": "mem_fraction_static", "trtllm": "kv_cache_free_gpu_mem_fraction"}


def memory_fraction_of(entry: dict) -> float | None:
    """The memory fraction the run set for its engine (vLLM's ``gpu_memory_utilization``, SGLang's
    ``--mem-fraction-static``, TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``), or None (the engine's default)."""
    s = entry.get("settings") or {}
    v = s.get("gpu_memory_utilization")
    own = FRACTION_KEYS.get(entry.get("engine"))
    if v is None and own is not None:
        v = s.get(own)
    return None if v is None else float(v)


def release_of(entry: dict) -> tuple[int, int] | None:
    """(major, minor) of the entry's ``engine_version`` where it starts with a release number ("0.7.3", "0.2.6
    (main, Dec 2023)"), else None (a commit, "None", "v0.11 (V1 engine), December 2025")."""
    import re

    m = re.match(r"\s*(\d+)\.(\d+)", str(entry.get("engine_version") or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def release_patch_of(entry: dict) -> tuple[int, int, int | None] | None:
    """(major, minor, patch) of the entry's ``engine_version`` where it starts with a release number, a ``v`` allowed
    ("0.5.12 (lmsysorg/sglang image)", "v0.4.0.post1"); patch None where it gives none ("0.4"); else None."""
    import re

    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(entry.get("engine_version") or ""))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), None if m.group(3) is None else int(m.group(3))


# vLLM's async scheduling became the default in v0.14.0 (release notes, January 2026; PR #27614): the vllm
# profile runs it (profiles/engines/vllm.yaml scheduler.async_scheduling); entries of 0.8-0.13 ran without it
VLLM_ASYNC_FROM = (0, 14)
VLLM_ASYNC_DATE = "2026-01-20"  # v0.14.0's release: an entry without a release number dated from then on has it


def vllm_async_scheduling(entry: dict) -> bool:
    """Whether a vLLM entry's engine scheduled asynchronously by default: its release number is 0.14 or later,
    or, where the entry gives no release number ("main @ a89015c6df (July 2026)", "None"), its source's date
    is on or after v0.14.0's release (an undated one: not)."""
    release = release_of(entry)
    if release is not None:
        return release >= VLLM_ASYNC_FROM
    return dated_from(entry, VLLM_ASYNC_DATE)


# vLLM v0.28.0 gave devices of 160 GiB and more a step budget of 16,384 tokens (profiles/engines/vllm.yaml
# scheduler.max_num_batched_tokens, its first rule; PR #51726): earlier V1 releases ran 8,192 there
VLLM_BATCH_160_FROM = (0, 28)
VLLM_BATCH_160_DATE = "2026-08-24"  # v0.28.0's tag: an entry without a release number dated from then on has it
VLLM_BATCH_BEFORE_160 = 8192


def vllm_large_step_budget(entry: dict) -> bool:
    """Whether a vLLM V1 entry's release gave a device of 160 GiB or more the 16,384-token step budget: 0.28 or
    later, or, without a release number, a source dated on or after v0.28.0's tag (an undated one: not)."""
    release = release_of(entry)
    if release is not None:
        return release >= VLLM_BATCH_160_FROM
    return dated_from(entry, VLLM_BATCH_160_DATE)


def dated_from(entry: dict, day: str) -> bool:
    """Whether the entry's source is dated (YYYY-MM-DD) on or after ``day``; an undated one is not: the fallback for
    an entry without a release number (``vllm_async_scheduling``, ``sglang_prefill_graphs``)."""
    import re

    date = str((entry.get("source") or {}).get("date") or "")
    return bool(re.match(r"\d{4}-\d{2}-\d{2}$", date)) and date >= day


# SGLang's piecewise CUDA graphs for prompt steps became the default in v0.5.10 (release notes, "Piecewise CUDA Graph
# Enabled by Default", PR #16331; profiles/engines/sglang.yaml cuda_graphs): entries of earlier releases ran prompts
# op by op. v0.5.10's notes were out by 2026-04-06 (a dependabot bump quoting them); v0.5.9's, of 2026-03-30, do not
# have it
SGLANG_PREFILL_GRAPHS_FROM = (0, 5, 10)
SGLANG_PREFILL_GRAPHS_DATE = "2026-04-06"


def sglang_prefill_graphs(entry: dict) -> bool:
    """Whether an SGLang entry's server replayed prompt steps as CUDA graphs by default: its release is 0.5.10 or
    later, or, where it gives none ("not stated", a commit), its source is dated from v0.5.10's release on; and the
    run did not turn them off (``--enable-torch-compile``, ``--disable-piecewise-cuda-graph``, ``--enable-dp-attention``:
    SGLang disables them for each)."""
    s = entry.get("settings") or {}
    if s.get("torch_compile") or s.get("enable_dp_attention") or s.get("piecewise_cuda_graph") is False:
        return False
    r = release_patch_of(entry)
    if r is not None and r[2] is not None:
        return r >= SGLANG_PREFILL_GRAPHS_FROM
    if release_of(entry) is not None:  # "0.5" without a patch number: before or after is not known; op by op
        return False
    return dated_from(entry, SGLANG_PREFILL_GRAPHS_DATE)


# vLLM's sampler built every sequence's prompt and output token lists into padded tensors each step, penalties or
# not, from 0.2.6 (SamplingTensors) until 0.5.0 (PR #5289: only with penalties): profiles/engines/vllm-v0-early.yaml
# timing.sampler_token_cost
V0_SAMPLER_COPIES = ((0, 2, 6), (0, 5, 0))


def v0_sampler_copies(entry: dict) -> bool:
    """Whether a vLLM V0 entry's sampler copied its sequences' token lists every step (``V0_SAMPLER_COPIES``): its
    release, with a patch number, is 0.2.6 or later and before 0.5.0; a release without one counts where every
    patch of it does (0.3, 0.4). From 0.5.0 the copy runs only with penalties, and from 0.5.5 it is a numpy copy
    of about 1-2 ns a token (bench/sampler_copy.py), left unpriced."""
    return release_between(entry, *V0_SAMPLER_COPIES)


def release_between(entry: dict, lo: tuple[int, int, int], hi: tuple[int, int, int]) -> bool:
    """Whether the entry's release lies in [lo, hi): with a patch number, by it; without one ("0.4"), where every patch
    of that release does; without a release number, not."""
    r = release_patch_of(entry)
    if r is None:
        return False
    major, minor, patch = r
    if patch is not None:
        return lo <= r < hi
    return lo <= (major, minor, 0) and (major, minor + 1, 0) <= hi


TIMING = ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s")
MEMORY = ("kv_capacity_tokens", "weights_gib", "max_concurrency")

# the grid each fitted factor is searched on
GRID = {
    "memory_bandwidth": [0.6, 0.7, 0.75, 0.8, 0.85, 0.9],
    "compute": [0.5, 0.6, 0.7, 0.8, 0.9],
    # the fraction of a device's measured MAMF (16-bit columns) that GEMMs reach (hardware/expected.py for_column)
    "compute_of_mamf": [0.7, 0.8, 0.85, 0.9, 0.95, 1.0],
    # K (elements) at which a GEMM reaches half its large-K compute fraction (hardware/expected.py k_scale)
    "gemm_k_half": [0.0, 256.0, 512.0, 1024.0, 2048.0],
    "allreduce_latency_s": [0.0, 10e-6, 20e-6, 30e-6, 50e-6],
    "step_overhead_s": [0.0, 0.25e-3, 0.5e-3, 1e-3, 2e-3, 4e-3],
    "launch_overhead_per_op_s": [0.0, 2e-6, 4e-6, 6e-6, 8e-6, 12e-6, 16e-6, 24e-6, 32e-6, 48e-6, 64e-6, 96e-6, 128e-6],
    "min_op_time_s": [0.0, 1e-6, 2e-6, 3e-6, 4e-6, 6e-6, 8e-6],
    # GEMMs' fraction of the FP4 peak (NVFP4 W4A4 on Blackwell), fitted apart from ``compute`` (the others')
    "compute@fp4": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7],
    "request_overhead_s": [0.0, 1e-3, 2e-3, 4e-3, 8e-3, 16e-3, 32e-3, 64e-3],
    "server_overhead_s": [0.0, 5e-3, 7.5e-3, 10e-3, 15e-3, 20e-3, 40e-3],
    # a fraction of the achieved bandwidth, up to 1.2: hardware/expected.py holds its product with
    # memory_bandwidth at the peak
    "attention_decode": [0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2],
    "step_overhead_per_sequence_s": [0.0, 2e-6, 4e-6, 6e-6, 8e-6, 12e-6, 16e-6],
    # an engine's weight-only 4-bit kernels (Marlin / Machete; MXFP4 on Hopper) as a fraction of the byte rate
    "weight_only_int4": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
}
# the default grid: the coarse one's ranges at even steps (every coarse value is on it)
GRID_FINE = {
    "memory_bandwidth": [round(0.6 + 0.025 * i, 3) for i in range(13)],  # 0.6 .. 0.9
    "compute": [round(0.5 + 0.05 * i, 2) for i in range(9)],  # 0.5 .. 0.9
    "compute_of_mamf": [round(0.7 + 0.025 * i, 3) for i in range(13)],  # 0.7 .. 1.0
    "gemm_k_half": [128.0 * i for i in range(17)],  # 0 .. 2048
    "allreduce_latency_s": [round(5e-6 * i, 9) for i in range(11)],  # 0 .. 50 us
    "step_overhead_s": [round(0.25e-3 * i, 9) for i in range(17)],  # 0 .. 4 ms
    "launch_overhead_per_op_s": [round(1e-6 * i, 9) for i in range(17)] + [round(4e-6 * i, 9) for i in range(5, 33)],  # 0 .. 128 us
    "min_op_time_s": [round(0.5e-6 * i, 9) for i in range(17)],  # 0 .. 8 us
    "compute@fp4": [round(0.3 + 0.025 * i, 3) for i in range(17)],  # 0.3 .. 0.7
    "request_overhead_s": [round(0.5e-3 * i, 9) for i in range(17)] + [round(1e-3 * i, 9) for i in range(10, 65, 2)],  # 0 .. 64 ms
    "server_overhead_s": [round(2.5e-3 * i, 9) for i in range(17)],  # 0 .. 40 ms
    "attention_decode": [round(0.6 + 0.05 * i, 2) for i in range(13)],  # 0.6 .. 1.2
    "step_overhead_per_sequence_s": [round(1e-6 * i, 9) for i in range(17)],  # 0 .. 16 us
    "weight_only_int4": [round(0.3 + 0.05 * i, 2) for i in range(15)],  # 0.3 .. 1.0
}
# per-engine factors that no published point measures apart, so they keep the shipped value: gpt-fast's
# prompts are 5 tokens, and its launch floor only shaved its tokens/s, to 96-128 us in two folds
# gpt-fast's and SGLang's timing points decode one sequence (gpt-fast: at most 205 tokens; SGLang: the
# cookbook's one-client runs, its many-client runs being excluded as warm-cache), where KV reads are a small
# share of a step and a per-sequence cost is a per-step one: fitted there, the decode-attention fraction and
# the per-sequence overhead mend other terms instead (on 2026-12-01 11:30, SGLang's went to 0.6-0.8 and 0-16 us
# over the folds): they keep the profiles' initial values. TensorRT-LLM's two went to 0.8 and 12 us on the
# 416 points of 12:42, absorbing the FP4 MoE rows' error, and made the 205 v0.17 performance-overview rows that
# the fit had not seen worse (8.3 % -> 11.4 % median), so they were held. That error has its measured cause now
# (trtllm.yaml experts_efficiency); fitted with the others (2026-12-02 10:07, two folds' first sweeps before the
# run was stopped) they went to 1.0-1.1 and 4 us, while other factors moved too (bench/published.md, "Dec 2,
# thirteenth round"): their refit with the shipped profiles is left to a round with time for the whole k-fold.
NOT_FITTED = {"attention_decode@trtllm": "held at the profile's value until a whole k-fold refits it (trtllm.yaml)",
              "step_overhead_per_sequence_s@trtllm": "held at the profile's value until a whole k-fold refits it (trtllm.yaml)",
              "launch_overhead_per_op_s@gptfast": "its prefill is not measured apart (5-token prompts)",
              "attention_decode@gptfast": "its points decode one sequence of at most 205 tokens",
              "step_overhead_per_sequence_s@gptfast": "its points run one sequence (batch 1)",
              "attention_decode@sglang": "its points decode one sequence (the cookbook's one-client runs)",
              "step_overhead_per_sequence_s@sglang": "its points decode one sequence"}
# global factors of one peak column (``Factors.compute_by_dtype``): they move only the points whose matmuls
# run in it
GLOBAL = ("memory_bandwidth", "compute", "compute_of_mamf", "gemm_k_half", "allreduce_latency_s")  # device factors, fitted first
PER_DTYPE = ("compute@fp4",)
PER_ENGINE = ("step_overhead_s", "launch_overhead_per_op_s", "min_op_time_s", "request_overhead_s",
              "server_overhead_s", "attention_decode", "step_overhead_per_sequence_s")
# per-engine factors of a few kernels: named alone (``--factors NAME@ENGINE``) they are refitted on the points they
# move. In the whole k-fold weight_only_int4 is fitted per engine beside the others, and an engine's all-reduce
# latency only where its profile prices its own (``start_params``; elsewhere the device factor stands for it)
NAMED_ONLY = ("weight_only_int4", "allreduce_latency_s")

# requests per client beyond which a closed loop is simulated for this many only: a fit predicts each point
# hundreds of times, and AccelMark's 28-minute loops ran 150-10,902 requests (up to 1,363 per client), half of
# a pass's time. Its effect, measured against the whole run (as shipped, all 88 points whose loops are longer
# than 16 per client): at most 1.3 % (an 8-client tokens/s; 64 per client), against 0.5 % at 128 and 2.0 % at
# 32 (bench/published.md, "Dec 2, tenth round")
CLOSED_LOOP_ROUNDS_MAX = 64

# ShareGPT as vLLM's and SGLang's benchmarks sample it: pairs with a prompt over 1,024 tokens or prompt + output over
# 2,048 are dropped (vllm/benchmarks/datasets.py is_valid_sequence: max_prompt_len 1024, max_total_len 2048;
# sglang/bench_serving.py sample_sharegpt_requests: the same bounds), so a request's output is at most 2,048 − its
# prompt. A ``dataset: sharegpt`` entry gives the run's mean lengths; its outputs are simulated as geometric
# lengths with that mean cut there (``Point``)
SHAREGPT_MAX_TOTAL_LEN = 2048

# one simulation per deployment, scenario and factor set: the TTFT, TPOT, e2e and throughput entries of one
# benchmark row share it
_SIMS: dict = {}
#: sim_key -> the scenario's pure-roofline latencies (``serve``'s ``ideal``), priced with the shipped factors
_IDEALS: dict = {}


class Point:
    """One published figure with everything its prediction needs built once."""

    def __init__(self, entry: dict):
        from planner.analysis.analyze import Options, analyze
        from planner.analysis.parallel import tp_plan
        from planner.cli.common import load_model
        from planner.hardware.engine import engine_analysis, engine_memory, load_engine
        from planner.hardware.expected import allreduce_latency_source, factors_for
        from planner.hardware.profiles import load_profile
        from planner.hardware.accuracy import regime_of
        from planner.hardware.serve import Scenario, StepRules, batch_wait_of, recv_interval_of

        self.entry = entry
        self.id = entry["id"]
        self.quantity = entry["quantity"]
        self.value = float(entry["value"])
        s = entry.get("settings") or {}
        self.engine_name = engine_profile_of(entry)
        self.engine = load_engine(self.engine_name)
        self.hw = load_profile(entry["gpu"])
        spec = load_model(entry["model_config"]).spec
        s = entry.get("settings") or {}
        self.gpus = int(entry.get("gpus") or 1)
        self.tp = int(entry.get("tp") or self.gpus)
        c = s.get("concurrency")
        if c is None and str(s.get("request_rate")) == "inf" and s.get("num_requests"):
            c = s["num_requests"]  # every request arrives at once: the engine runs as many as fit
        i, o, c = int(s.get("input_len") or 1024), int(s.get("output_len") or 128), int(c or 1)
        mean_o = s.get("mean_output_len")
        if s.get("dataset") == "sharegpt" and mean_o is None:
            # ShareGPT runs (``--dataset-name sharegpt``): each request asks for its own reference length, so
            # the entry's output_len is the run's mean and the lengths spread; entered as geometric lengths with
            # that mean (a coefficient of variation near 1, as the lognormal with SD = mean of the request-rate
            # entries), cut where the benchmark's dataset filter drops pairs (SHAREGPT_MAX_TOTAL_LEN)
            mean_o, o = float(o), max(o, SHAREGPT_MAX_TOTAL_LEN - i)
        dtype = run_dtype(s, spec)
        kv = s.get("kv_dtype")
        kv = None if kv in ("auto", None) else str(kv).split()[0]
        if kv is None and self.engine_name == "trtllm" and str(s.get("dtype", "")).startswith("fp8"):
            # NVIDIA's ModelOpt FP8 checkpoints carry kv_cache_quant_algo FP8 (hf_quant_config.json), and
            # TensorRT-LLM then keeps the KV cache in FP8
            kv = "fp8"
        # the model as the engine runs it (full attention where it does not apply the config's window)
        self.a, _ = engine_analysis(analyze(spec, Options(context=i + o, dtype=dtype, kv_dtype=kv)), self.engine)
        self.plan = tp_plan(spec, self.tp)
        arrival = str(s.get("arrival") or "together")
        # where the benchmark drew each request's lengths (a random dataset with a range ratio): those
        # distributions (planner serve --input-len-dist / --output-len-dist); input_len / output_len are their means
        dists = ((s.get("input_len_dist"), s.get("output_len_dist")) if arrival in ("together", "closed-loop")
                 else (None, None))
        longest = i + o  # (the entry's input_len / output_len are the means already)
        if any(dists):
            from planner.hardware.simulate import drawn_length_summary

            longest = drawn_length_summary(i, o, *dists)[2]
        mml = s.get("max_model_len")
        if mml is None and self.quantity in TIMING:
            mml = min(longest, spec.max_position_embeddings or longest)
        # vLLM V0 without chunked prefill (v0_chunked_prefill) runs whole prompts in steps of their own, within a
        # budget of max(max_model_len, 2048) (SchedulerConfig's default then)
        v0_whole = self.engine_name in V0_PROFILES and not v0_chunked_prefill(s, spec, self.hw)
        # vLLM V0's multi-step scheduling (--num-scheduler-steps N, v0.6.0-0.7): the scheduler runs once per round
        # of N decode steps (planner.hardware.serve.simulate's scheduler_steps), as bench/plan_published.py's
        # request-rate entries run it
        self.scheduler_steps = int(s.get("num_scheduler_steps") or 1)
        mnbt = s.get("max_num_batched_tokens")
        if v0_whole and mnbt is None:
            mnbt = max(server_max_model_len(s, spec), V0_MIN_BATCHED_TOKENS)
        elif (mnbt is None and self.engine_name in V0_PROFILES and not v0_whole  # (chunked prefill on)
              and self.scheduler_steps == 1 and v0_small_chunks(entry)):
            mnbt = V0_EARLY_CHUNK_TOKENS  # a chunked-prefill server before 0.6.5: 512 tokens a step
        elif (mnbt is None and self.engine_name == "vllm" and self.engine.max_num_batched_tokens(self.hw) > VLLM_BATCH_BEFORE_160
              and not vllm_large_step_budget(entry)):
            mnbt = VLLM_BATCH_BEFORE_160  # a V1 release before 0.28 on a device of 160 GiB or more: 8,192 a step
        self.mem = engine_memory(self.a, self.hw, self.engine, self.plan,
                                 gpu_memory_utilization=memory_fraction_of(entry), max_model_len=mml,
                                 max_num_batched_tokens=mnbt,
                                 max_num_seqs=s.get("max_num_seqs"))
        # a closed loop's run length (vllm bench serve --num-prompts) and, where the benchmark let requests
        # stop at end-of-sequence, their mean output tokens
        n = s.get("num_prompts") if arrival == "closed-loop" else None
        if n is not None:  # a long run is simulated for its first CLOSED_LOOP_ROUNDS_MAX requests per client
            n = min(int(n), CLOSED_LOOP_ROUNDS_MAX * c)
        self.scenario = Scenario(i, o, c, arrival, requests=n,
                                 mean_output_len=None if mean_o is None else float(mean_o),
                                 input_len_dist=dists[0], output_len_dist=dists[1])
        self.server_client = s.get("client", "server") == "server"
        # steady or server_burst (planner.hardware.accuracy.regime_of): the regime serve reports its error by
        self.regime = regime_of(self.server_client, c, self.gpus // self.tp)
        self.training_for = tuple(entry.get("training_for") or ())
        self.base = factors_for(self.hw, self.engine)
        # which figure prices its all-reduce calls (hardware.expected.allreduce_latency_source): where the engine
        # profile prices its own, the device factor's fit does not move this point; where the hardware profile
        # does, neither fit does
        self.allreduce_source = allreduce_latency_source(self.hw, self.engine)
        self.engine_allreduce = self.allreduce_source == "engine"
        if s.get("async_scheduling") is not None:  # the run's own setting (vllm serve --[no-]async-scheduling)
            if self.engine.async_scheduling is None or not isinstance(s["async_scheduling"], bool):
                raise ValueError(f"settings.async_scheduling {s['async_scheduling']!r}: a true/false of vLLM V1's")
            self.base = replace(self.base, async_scheduling=s["async_scheduling"])
        elif self.base.async_scheduling and self.engine_name == "vllm" and not vllm_async_scheduling(entry):
            self.base = replace(self.base, async_scheduling=False)  # vLLM 0.8-0.13: synchronous by default
        if self.engine_name in V0_PROFILES and not v0_sampler_copies(entry):
            self.base = replace(self.base, sampler_token_s=0.0)  # 0.5.0 on: only with penalties, then numpy
        if self.engine_name == "sglang" and not sglang_prefill_graphs(entry):
            self.base = replace(self.base, cuda_graph_prefill=False)  # before v0.5.10: prompts op by op
        if s.get("cuda_graphs") is False:  # the benchmark ran every step op by op
            self.base = replace(self.base, cuda_graph_max_tokens=0, cuda_graph_prefill=False)
        elif s.get("cuda_graph_max_tokens") is not None:  # the benchmark's own graph sizes
            self.base = replace(self.base, cuda_graph_max_tokens=int(s["cuda_graph_max_tokens"]))
        if s.get("decode_kv_reads") == "per_query_head":
            # the engine's decode attention reads a KV head's cache once for each of its query heads
            # (TensorRT-LLM's masked MHA before v0.7: bench/published.md)
            self.base = replace(self.base, attention_decode_kv_reads=kv_reads_per_query_head(spec))
        # TensorRT-LLM's delayed batching, where the run set it (batch_wait_timeout_iters, batch_wait_max_tokens_ratio)
        self.batch_wait = batch_wait_of(self.engine, s.get("batch_wait_timeout_iters"),
                                        s.get("batch_wait_max_tokens_ratio"), self.mem.max_num_batched_tokens)
        # how the engine builds a step beyond vLLM V1's rules (planner.hardware.serve.StepRules); SGLang's
        # --scheduler-recv-interval where the run set it (scheduler_recv_interval)
        self.rules = StepRules.of(self.engine, prefill_first=self.engine.prefill_first or v0_whole,
                                  whole_prompts=v0_whole, batch_wait=self.batch_wait,
                                  lookahead=self.base.async_scheduling,
                                  recv_interval=recv_interval_of(self.engine, s.get("scheduler_recv_interval")))
        self.per_gpu = s.get("throughput_unit") == "per_gpu"
        self.compute_column = self.hw.peak_flops_key_for(self.a.fmt.compute.compute)
        self.ops_cache: dict = {}
        self.sim_s = 0.0
        import json

        if self.scheduler_steps > 1 and self.engine_name not in V0_PROFILES:
            raise ValueError(f"settings.num_scheduler_steps {self.scheduler_steps}: multi-step scheduling is vLLM V0's "
                             f"(this entry runs on {self.engine_name})")
        # the entries of one benchmark row share a simulation; its release and date are part of the row (the release
        # rules above read them, and the budget and the step rules they set live outside the factors)
        self.sim_key = json.dumps([entry["model_config"], entry["gpu"], self.engine_name, self.gpus, self.tp, s,
                                   entry.get("engine_version"), (entry.get("source") or {}).get("date")],
                                  sort_keys=True, default=str)

    def predict(self, overrides: dict | None = None) -> float | None:
        q = self.quantity
        if q == "kv_capacity_tokens":
            return float(self.mem.kv_capacity_tokens)
        if q == "weights_gib":
            return self.mem.weights_bytes / 2**30
        if q == "max_concurrency":
            return self.mem.max_concurrency
        if not self.mem.fits:
            return None
        f = self.base
        if overrides:
            # a device factor's trial value; an engine whose profile prices its own all-reduce keeps that
            f = replace(f, **{k: v for k, v in overrides.items()
                              if "@" not in k and not (k == "allreduce_latency_s" and self.engine_allreduce)})
            for name in PER_ENGINE:
                key = f"{name}@{self.engine_name}"
                if name == "attention_decode" and self.hw.name in self.engine.attention_decode_by_device:
                    continue  # the engine's own figure for this device (attention_decode_efficiency_by_device) stands
                if key in overrides:
                    f = replace(f, **{name: overrides[key]})
            key = f"compute@{self.compute_column}"
            if key in overrides:
                f = replace(f, compute_by_dtype={**f.compute_by_dtype, self.compute_column: overrides[key]})
            key = f"weight_only_int4@{self.engine_name}"
            if key in overrides:
                f = replace(f, weight_only={**f.weight_only, "int4": overrides[key]})
            key = f"allreduce_latency_s@{self.engine_name}"
            if key in overrides and self.allreduce_source != "hardware":  # (a profile's measured figure wins)
                f = replace(f, allreduce_latency_s=overrides[key])
        key = (self.sim_key, f)
        e = _SIMS.get(key)
        if e is None:  # (the expected latencies alone are kept: a k-fold holds hundreds of thousands)
            t0 = time.perf_counter()
            sim = self._serve(f)
            e = _SIMS[key] = sim.expected
            if f is self.base:
                _IDEALS.setdefault(self.sim_key, sim.ideal)
            self.sim_s = time.perf_counter() - t0  # what the last simulation took (``Predictor`` balances on it)
        return self._figure(e)

    def _figure(self, lat) -> float:
        """The entry's quantity out of a scenario's latencies (``serve``'s ``Latency``): tokens/s per GPU where the
        entry gives them so."""
        if self.quantity == "output_tokens_per_s":
            return lat.output_tokens_per_s / self.gpus if self.per_gpu else lat.output_tokens_per_s
        return getattr(lat, self.quantity)

    def _serve(self, f):
        """``serve``'s simulation of the entry's scenario under factors ``f`` (its expected and ideal latencies)."""
        from planner.hardware.serve import StepModel, simulate

        model = StepModel(self.a, self.hw, self.plan, f, ops_cache=self.ops_cache, detail=False)
        return simulate(model, self.mem, self.scenario, replicas=self.gpus // self.tp, server=self.server_client,
                        scheduler_steps=self.scheduler_steps, rules=self.rules)

    def ideal(self) -> float | None:
        """The entry's own scenario on the pure roofline (``serve``'s ``ideal``: every op at the device's peak
        compute and bandwidth, no overhead, the simulated schedule), priced with the shipped factors: a published
        time below it, or tokens/s above it, is one no engine reaches in the run as the entry describes it and as
        ``serve`` schedules it (its lengths, precision, units or caching are not what the entry says, or the run's
        schedule differs, e.g. a benchmark that leaves its start-up burst out). None for a memory figure or a
        layout that does not fit."""
        q = self.quantity
        if q not in TIMING or not self.mem.fits:
            return None
        lat = _IDEALS.get(self.sim_key)
        if lat is None:
            lat = _IDEALS[self.sim_key] = self._serve(self.base).ideal
        return self._figure(lat)


def beyond_roofline(points) -> list:
    """``(point, ideal)`` of each timing point whose published figure beats its own scenario's pure roofline
    (``Point.ideal``): a time below it, tokens/s above it."""
    out = []
    for p in points:
        r = p.ideal()
        if r is None:
            continue
        if (p.value > r) if p.quantity == "output_tokens_per_s" else (p.value < r):
            out.append((p, r))
    return out


def run_key(entry: dict) -> str:
    """The run an entry's figure comes from: the entries of one run (its TTFT, e2e and tokens/s) share the source,
    engine, model, GPUs, layout, settings and statistic, and differ only in quantity and value."""
    import json

    s = entry.get("settings") or {}
    return json.dumps([(entry.get("source") or {}).get("url"), entry.get("engine"), str(entry.get("engine_version")),
                       entry.get("model"), entry.get("gpu"), entry.get("gpus"), entry.get("tp"), s,
                       entry.get("statistic", "mean")], sort_keys=True, default=str)


#: a run whose own figures put fewer than this share of its stated concurrency in flight is listed
IN_FLIGHT_LEAST = 0.75


def implied_concurrency(entries, least: float = IN_FLIGHT_LEAST) -> list:
    """``(e2e entry, stated concurrency, requests in flight)`` of each run whose own mean e2e latency and output
    tokens/s put fewer than ``least`` x its stated concurrency in flight. Little's law: requests in flight =
    requests finished per second x mean latency = (output tokens/s / output tokens per request) x mean e2e. C
    clients in a closed loop, or C requests sent together, keep C in flight while they run: with every request
    of the same output length, close to C (a run of several waves ends on a tail of fewer, e.g. 0.78-0.9 x C for
    two or three waves in this file). Runs of drawn output lengths (``output_len_dist``, ShareGPT) are not
    checked: there the mean latency sits well below the longest, and one wave can show far fewer in flight. A
    run listed here did not run at its stated concurrency (a client-side cap, a server limit), so its latencies
    are not those of that concurrency."""
    runs: dict[str, dict] = {}
    for e in entries:
        runs.setdefault(run_key(e), {})[e["quantity"]] = e
    out = []
    for q in runs.values():
        e2e, tps = q.get("e2e_s"), q.get("output_tokens_per_s")
        if e2e is None or tps is None:
            continue
        s = e2e.get("settings") or {}
        c, o = s.get("concurrency"), s.get("output_len")
        if (s.get("arrival") not in ("closed-loop", "together") or not c or not o or "output_len_dist" in s
                or s.get("dataset") == "sharegpt"):
            continue
        total = float(tps["value"]) * (int(tps.get("gpus") or 1) if s.get("throughput_unit") == "per_gpu" else 1)
        flight = total / float(o) * float(e2e["value"])
        if flight < least * float(c):
            out.append((e2e, c, flight))
    return out


#: vLLM V0's least max_num_batched_tokens without chunked prefill (vllm/config.py SchedulerConfig, 0.5-0.7:
#: max(max_model_len, 2048))
V0_MIN_BATCHED_TOKENS = 2048

#: vLLM V0's step budget with chunked prefill before v0.6.5: vllm/config.py SchedulerConfig (0.4.1-0.6.4) gave a
#: chunked-prefill server ``max_num_batched_tokens = 512`` unless set ("It is the values that have the best balance
#: between ITL and TTFT on A100. Note it is not optimized for throughput."); vllm-project/vllm PR #10544 ("Update
#: default max_num_batch_tokens for chunked prefill to 2048", merged 2024-11-21, first in v0.6.5) raised it to 2048,
#: the vllm-v0 profile's rule. With multi-step scheduling (--num-scheduler-steps > 1, 0.6.3 on) it was
#: max(max_model_len, 2048) instead.
V0_EARLY_CHUNK_TOKENS = 512
V0_EARLY_CHUNK_BEFORE = (0, 6, 5)


def v0_small_chunks(entry: dict) -> bool:
    """Whether a vLLM V0 entry's release gave a chunked-prefill server 512-token steps by default
    (``V0_EARLY_CHUNK_TOKENS``): its release, with a patch number, is before 0.6.5; a release without one counts
    where every patch of it is (0.4, 0.5). An entry without a release number keeps the profile's 2048."""
    return release_between(entry, (0, 0, 0), V0_EARLY_CHUNK_BEFORE)


def server_max_model_len(s: dict, spec) -> int:
    """The server's max_model_len: the entry's, else the engine's default, the model's max_position_embeddings."""
    return int(s.get("max_model_len") or spec.max_position_embeddings or 0)


def run_dtype(s: dict, spec) -> str | None:
    """The ``--dtype`` an entry's weights ran at (``settings.dtype``, its first word: "fp8 (vLLM online dynamic FP8
    ...)" -> "fp8"), or None for the checkpoint's own format: no dtype, ``auto``, or a quantized base's own width
    (``other_format``)."""
    dtype = s.get("dtype")
    if dtype is not None:
        dtype = str(dtype).split()[0]
    if dtype in ("auto", None) or (spec.quant is not None and not other_format(dtype, spec.quant)):
        return None  # a quantized checkpoint is loaded in its own format
    return dtype


def other_format(dtype: str, quant) -> bool:
    """Whether an entry's ``settings.dtype`` names weights of another width than its ``model_config``'s own
    quantization (``quant``, the base checkpoint's ``QuantSpec``): a checkpoint quantized anew from that base
    (nvidia/DeepSeek-R1-0528-NVFP4-v2 or amd/DeepSeek-R1-0528-MXFP4-Preview from DeepSeek-R1's block FP8;
    Kimi-K2.5's INT4 experts from Kimi-K2's FP8; lmsys/gpt-oss-120b-bf16 from gpt-oss's MXFP4). The entry then
    runs on ``planner serve --dtype``'s what-if (a recipe of ``analysis.weights.RECIPES`` for fp8, int8, int4 and
    fp4; the plain dtype for bf16) instead of the base's format. The same width (fp8 on a block-FP8 base, mxfp4 on
    gpt-oss) keeps the base's own format."""
    from planner.analysis.dtypes import try_dtype
    from planner.analysis.weights import WEIGHT_ONLY

    name = str(dtype).strip().lower()
    if name in WEIGHT_ONLY:
        return WEIGHT_ONLY[name][0].bits != quant.bits
    d = try_dtype(name)
    return d is not None and d.bits != quant.bits  # a width planner does not know: the base's format, as before


def v0_chunked_prefill(s: dict, spec, hw) -> bool:
    """Whether a vLLM V0 server ran chunked prefill: the entry's ``enable_chunked_prefill`` where it says, else
    V0's default (vllm/engine/arg_utils.py ``_set_default_args_v0``, 0.6-0.8: off for MLA and multimodal models,
    on where max_model_len (the server's: the entry's, else the model's) passes 32,768 on a CUDA GPU without a
    sliding window; otherwise off). Without it, ``Scheduler._schedule_default`` runs a step of waiting prompts,
    whole, and decodes only in a step with none."""
    if s.get("enable_chunked_prefill") is not None:
        return bool(s["enable_chunked_prefill"])
    kinds = {layer.kind for layer in spec.layers}
    if spec.vision or any(k.startswith("mla") for k in kinds):
        return False
    return server_max_model_len(s, spec) > 32768 and hw.vendor == "NVIDIA" and not any(k.startswith("sliding") for k in kinds)


def kv_reads_per_query_head(spec) -> float:
    """Times a decode kernel that reads a KV head's cache once per query head reads each KV byte: the
    query heads per KV head (1 for multi-head attention)."""
    groups = {m.num_attention_heads / m.num_key_value_heads for m in (layer.mixer for layer in spec.layers)
              if getattr(m, "num_key_value_heads", 0)}
    if len(groups) != 1:
        raise ValueError("decode_kv_reads: per_query_head needs one attention shape in every layer")
    return groups.pop()


def read_yaml(text: str):
    """``yaml.safe_load`` through libyaml's parser where PyYAML has it (``CSafeLoader``: the same safe
    constructors and resolver, so the same data; the data file's 9,000 entries parse in 7 s, not 30 s)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader


def load_points(path: Path, only: list[str] | None) -> tuple[list[Point], list[tuple[str, str]]]:
    import yaml

    from planner.analysis.errors import PlannerError

    try:
        entries = read_yaml(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "id" in e for e in entries):
        raise ValueError("a YAML list of entries, each with an id, expected")
    points, skipped = [], []
    for e in entries:
        if only and e["id"] not in only:
            continue
        why = None
        if e.get("excluded"):
            why = f"excluded: {e['excluded']}"
        elif e.get("layout"):  # EP, attention-DP or one pool of a disaggregated deployment: not serve's
            why = "layout beyond tensor parallel: bench/plan_published.py predicts it (nothing is fitted on it)"
        elif (e.get("settings") or {}).get("arrival") == "poisson":  # a request-rate benchmark
            why = "request-rate (Poisson) benchmark: bench/plan_published.py simulates it (nothing is fitted on it)"
        elif not e.get("model_config"):
            why = "model not bundled"
        elif e.get("engine") not in ENGINE_MAP:
            why = f"engine {e.get('engine')} has no profile"
        elif e.get("quantity") not in TIMING + MEMORY:
            why = f"quantity {e.get('quantity')}"
        if why is None:
            try:
                point = Point(e)
                point.predict()  # the shipped prediction: an entry the model refuses is skipped with the reason
                points.append(point)
                continue
            except (PlannerError, KeyError, ValueError) as exc:
                why = f"{type(exc).__name__}: {exc}"
        skipped.append((e["id"], why))
    return points, skipped


def log_err(pred: float | None, pub: float) -> float:
    if pred is None or pred <= 0:
        return 5.0
    return abs(math.log(pred / pub))


def objective_value(errors_by_quantity: list[list[float]], objective: str = "l1") -> float:
    """The fit's objective: the mean over the timing quantities of each quantity's mean (``l1``) or median
    (``median``) |log(predicted / published)|. Each quantity weighs the same, so that the 55 throughput
    points do not outvote the 8 TPOT points."""
    agg = statistics.fmean if objective == "l1" else statistics.median
    return statistics.fmean(agg(es) for es in errors_by_quantity)


def fit(points: list[Point], start: dict, *, objective: str = "l1", max_sweeps: int = 20,
        grid: dict | None = None, progress: bool = False, predict=None) -> dict:
    """Coordinate search of the timing factors on ``grid`` (GRID unless given), minimising
    ``objective_value``: sweeps over the factors (globals first, then per engine), each trying every grid
    value of one factor with the others held, until a sweep changes nothing or ``max_sweeps`` have run. A
    factor that moves no training point of its engine keeps its starting value, and so does one in
    ``NOT_FITTED``. A trial replaces the current value only if it lowers the objective by more than 1e-9, so
    ties keep the earlier value. The defaults are the script's (``--objective l1 --sweeps 20``). ``progress``:
    a line on stderr after each sweep (``--progress``). ``predict(params, points)``: the points' predictions
    under ``params`` (``Predictor``; None: each point's own ``predict``, here)."""
    grid = GRID if grid is None else grid
    if predict is None:
        predict = lambda params, ps: [p.predict(params) for p in ps]  # noqa: E731
    timing = [p for p in points if p.quantity in TIMING]
    if not timing:
        return dict(start)
    best = dict(start)
    by_q = [[p for p in timing if p.quantity == q] for q in TIMING]
    by_q = [ps for ps in by_q if ps]

    def score(params):
        preds = dict(zip(map(id, timing), predict(params, timing)))
        return objective_value([[log_err(preds[id(p)], p.value) for p in ps] for ps in by_q], objective)

    cur = score(best)
    keys = [k for k in GLOBAL if k in best] + sorted(k for k in best if "@" in k
                                                                          and k not in NOT_FITTED)
    t0 = time.perf_counter()
    for sweep in range(max_sweeps):
        before = dict(best)
        for k in keys:
            values = grid[k.split("@")[0]]
            if "@" in k:  # does any training point of this engine (of this peak column) move with it?
                tag = k.split("@")[1]
                mine = [p for p in timing if (p.compute_column if k in PER_DTYPE else p.engine_name) == tag]
                lo, hi = {**best, k: values[0]}, {**best, k: values[-1]}
                if predict(lo, mine) == predict(hi, mine):
                    continue
            for v in values:
                trial = {**best, k: v}
                s = score(trial)
                if s < cur - 1e-9:
                    best, cur = trial, s
        if progress:
            moved = ", ".join(f"{k} {before[k]:g} -> {best[k]:g}" for k in best if best[k] != before[k]) or "nothing moved"
            print(f"fit on {len(timing)} timing points: sweep {sweep + 1}, objective {cur:.4f}, "
                  f"{time.perf_counter() - t0:.0f} s: {moved}", file=sys.stderr, flush=True)
        if best == before:
            break
    return best


def source_key(entry: dict) -> str:
    """The publication an entry comes from: a repository at one commit (every table of one README or
    docs page there, and files committed together), else the page's address without its fragment, else
    its title. Entries of one source share a host, a harness and an author's choices."""
    src = entry.get("source") or {}
    if src.get("repo") and src.get("commit"):
        return f"{src['repo']}@{src['commit']}"
    if src.get("url"):
        return str(src["url"]).split("#", 1)[0]
    return str(src.get("title") or entry["id"])


def publisher_key(entry: dict) -> str:
    """Who published an entry, coarser than ``source_key``: a GitHub repository (every issue, pull request and file of
    it), else the web host. ``--write-bias`` counts these, so that one harness's many files count once."""
    from urllib.parse import urlparse

    src = entry.get("source") or {}
    if src.get("repo"):
        return str(src["repo"]).lower()
    if src.get("url"):
        u = urlparse(str(src["url"]))
        parts = [x for x in u.path.split("/") if x]
        if u.netloc.lower().endswith("github.com") and len(parts) >= 2:
            return "/".join(parts[:2]).lower()
        return u.netloc.lower() or str(src["url"])
    return str(src.get("title") or entry["id"])


#: ``--write-bias``: a group (a model family or a device vendor, one quantity) is recorded from this many steady
#: points and this many publishers, and ``planner serve`` says so where its median signed error reaches the threshold
BIAS_MIN_POINTS, BIAS_MIN_PUBLISHERS, BIAS_THRESHOLD = 8, 3, 0.25


def bias_summary(rows, *, command: str, date: str) -> dict:
    """What ``--write-bias`` writes (``profiles/engines/_bias.yaml``, which ``planner serve`` reads:
    ``planner.hardware.accuracy.parse_bias``). ``rows`` are ``(family, vendor, quantity, publisher, predicted /
    published − 1)`` of the steady timing points as shipped; per family and per vendor and quantity, the groups of
    at least ``BIAS_MIN_POINTS`` points from ``BIAS_MIN_PUBLISHERS`` publishers, with the median signed and absolute
    error (rounded to 0.1 %), largest |median| first."""
    groups: dict = {}
    for family, vendor, q, publisher, e in rows:
        for dim, key in (("family", family), ("vendor", vendor)):
            groups.setdefault((dim, key, q), []).append((e, publisher))
    out = []
    for (dim, key, q), v in groups.items():
        errs = [e for e, _ in v]
        pubs = len({p for _, p in v})
        if len(v) < BIAS_MIN_POINTS or pubs < BIAS_MIN_PUBLISHERS:
            continue
        out.append({"dimension": dim, "key": key, "quantity": q, "n": len(v), "publishers": pubs,
                    "median_error": round(statistics.median(errs), 3),
                    "median_abs_error": round(statistics.median(abs(e) for e in errs), 3)})
    out.sort(key=lambda g: (-abs(g["median_error"]), g["dimension"], g["key"], g["quantity"]))
    return {"command": command, "date": date, "points": len(rows), "min_points": BIAS_MIN_POINTS,
            "min_publishers": BIAS_MIN_PUBLISHERS, "threshold": BIAS_THRESHOLD, "groups": out}


def assign_groups(sizes: dict[str, tuple[int, ...]], k: int) -> dict[str, int]:
    """Groups into k folds, each whole: the largest group first (sizes compare as tuples; ties by name)
    into the fold whose summed size is smallest so far (ties: the lower fold). Deterministic; no group is
    split across folds."""
    width = len(next(iter(sizes.values()), ()))
    totals = [(0,) * width for _ in range(k)]
    fold_of = {}
    for g in sorted(sizes, key=lambda g: (tuple(-x for x in sizes[g]), g)):
        f = min(range(k), key=lambda i: (totals[i], i))
        fold_of[g] = f
        totals[f] = tuple(a + b for a, b in zip(totals[f], sizes[g]))
    return fold_of


def split_folds(order: list, k: int, by: str = "source") -> list[int]:
    """Fold index of each point of ``order`` (sorted by id). ``id``: every k-th point; ``source``: whole
    sources (source_key) into folds, balanced on their timing points (the fitted ones) first and on all
    their points second."""
    if by == "id":
        return [i % k for i in range(len(order))]
    keys = [source_key(p.entry) for p in order]
    sizes = {g: [0, 0] for g in keys}
    for g, p in zip(keys, order):
        sizes[g][0] += p.quantity in TIMING
        sizes[g][1] += 1
    fold_of = assign_groups({g: tuple(v) for g, v in sizes.items()}, k)
    return [fold_of[g] for g in keys]


def start_params(points: list[Point], named: tuple = ()) -> dict:
    """The starting value of every factor a fit moves: the points' own (as shipped). An engine's all-reduce
    latency (``allreduce_latency_s@ENGINE``) is among them where its profile prices its own (the whole k-fold
    then fits it beside the device's) or where ``named`` (``--factors``) asks for it."""
    p0 = points[0].base if points else None
    out = {"memory_bandwidth": p0.memory_bandwidth if p0 else 0.8, "compute": p0.compute if p0 else 0.8,
           "compute_of_mamf": max((p.base.compute_of_mamf for p in points), default=0.0),
           "gemm_k_half": p0.gemm_k_half if p0 else 0.0,
           # the device default: from a point whose engine does not price its own all-reduce
           "allreduce_latency_s": next((p.base.allreduce_latency_s for p in points if not p.engine_allreduce),
                                       p0.allreduce_latency_s if p0 else 20e-6)}
    for p in points:
        for name in PER_ENGINE:
            out.setdefault(f"{name}@{p.engine_name}", getattr(p.base, name))
        out.setdefault(f"weight_only_int4@{p.engine_name}", p.base.weight_only.get("int4", 1.0))
        key = f"allreduce_latency_s@{p.engine_name}"
        if p.engine_allreduce or key in named:
            out.setdefault(key, p.base.allreduce_latency_s)
        key = f"compute@{p.compute_column}"
        if key in PER_DTYPE:
            out.setdefault(key, p.base.compute_by_dtype.get(p.compute_column, p.base.compute))
    return out


class Predictor:
    """Predictions of ``points`` under a set of factors, in ``jobs`` forked worker processes (one: here). Each
    worker holds a fixed share of the points, whole simulation groups (the entries of one benchmark row share a
    simulation: ``Point.sim_key``) balanced on what each group's last simulation took, and keeps its simulations
    (``_SIMS``) from one call to the next: a trial that a later fit repeats costs nothing on the points it
    repeats it on. A prediction does not depend on where it is made."""

    def __init__(self, points: list, jobs: int = 1):
        self.owner = {}
        self.conns: list = []
        self.procs: list = []
        if jobs <= 1 or len(points) <= 1:
            return
        import multiprocessing

        groups: dict = {}
        for p in points:
            groups.setdefault(getattr(p, "sim_key", p.id), []).append(p)

        def cost(ps):  # the seconds the group's last simulation took here (the shipped prediction, on loading)
            return sum(getattr(p, "sim_s", 0.0) for p in ps) or 1e-3 * len(ps)

        load = [0.0] * jobs
        shares: list[list] = [[] for _ in range(jobs)]
        for key in sorted(groups, key=lambda g: (-cost(groups[g]), str(g))):
            w = min(range(jobs), key=lambda j: (load[j], j))
            load[w] += cost(groups[key])
            for p in groups[key]:
                self.owner[id(p)] = w
            shares[w].extend(groups[key])
        ctx = multiprocessing.get_context("fork")  # the children inherit the points built here: nothing is pickled
        for w in range(jobs):                       # but the factors and the predictions
            parent, child = ctx.Pipe()
            mine = {id(p): p for p in shares[w]}

            def serve(conn, mine=mine) -> None:
                while True:
                    msg = conn.recv()
                    if msg is None:
                        break
                    params, ids = msg
                    try:
                        conn.send(("ok", [mine[i].predict(params) for i in ids]))
                    except Exception as exc:  # (the parent raises it; the worker goes on serving)
                        conn.send(("error", f"{type(exc).__name__}: {exc}"))
                conn.close()

            proc = ctx.Process(target=serve, args=(child,), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    def __call__(self, params: dict, points: list) -> list:
        if not self.conns:
            return [p.predict(params) for p in points]
        asked: list[list] = [[] for _ in self.conns]
        for p in points:
            asked[self.owner[id(p)]].append(id(p))
        for conn, ids in zip(self.conns, asked):
            if ids:
                conn.send((params, ids))
        got, errors = {}, []
        for conn, ids in zip(self.conns, asked):
            if ids:
                status, out = conn.recv()
                if status == "ok":
                    got.update(zip(ids, out))
                else:
                    errors.append(out)
        if errors:
            raise RuntimeError(f"a worker's prediction failed: {errors[0]}")
        return [got[id(p)] for p in points]

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except OSError:  # a worker that is gone already
                pass
            conn.close()
        for proc in self.procs:
            proc.join()
        self.conns, self.procs = [], []


def run_fits(points: list[Point], trains: list[list[int]], how: dict, jobs: int = 1, start=None,
             tests: list[list[int]] | None = None) -> list:
    """``fit`` on each training set (indices into ``points``) from ``start(training points)`` (``start_params``
    unless given), one after another, the largest training set first (the fit on every point, where it is one):
    each fit's trials are predicted by one ``Predictor`` of ``jobs`` processes, which keeps the simulations of
    the fits before, so that a fold's trials that the fits before it made cost only its points those did not
    hold. A fit's result depends neither on ``jobs`` nor on the order. In order of ``trains``. With ``tests``
    (indices, one list per training set): each item is ``(factors, predictions)``, the predictions of that
    test set's points under the fit's factors (by the same processes), in the test set's order."""
    start = start or start_params
    pool = Predictor(points, jobs)
    try:
        out: dict[int, object] = {}
        for t in sorted(range(len(trains)), key=lambda t: (-len(trains[t]), t)):
            train = [points[i] for i in trains[t]]
            params = fit(train, start(train), predict=pool, **how)
            out[t] = params if tests is None else (params, pool(params, [points[i] for i in tests[t]]))
        return [out[t] for t in range(len(trains))]
    finally:
        pool.close()


def in_fit_sample(p, fraction: float) -> bool:
    """Whether the point's simulation group (``sim_key``: the entries of one benchmark row) is in the fixed
    sample of ``fraction`` of the groups that ``--fit-sample`` fits on: the group's SHA-256, read as a number
    in [0, 1), below ``fraction``. The same groups in every fold and every run, whatever the order; a row's
    entries are in or out together."""
    import hashlib

    if fraction >= 1:
        return True
    h = hashlib.sha256(str(getattr(p, "sim_key", p.id)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction


def err(pred, pub) -> float | None:
    return None if pred is None else pred / pub - 1


def nearest_rank(xs: list[float], q: float) -> float:
    """The ``q``-quantile (0 < q <= 1) of ``xs`` by nearest rank: the smallest value with at least a
    fraction ``q`` of ``xs`` at or below it."""
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def accuracy_summary(rows, *, command: str, date: str, points: int) -> dict:
    """What ``--write-accuracy`` writes (``profiles/engines/_accuracy.yaml``, which ``planner serve``
    prints): ``rows`` are ``(engine, quantity, regime, held-out |error|)`` of the timing points; per regime
    (``steady``, ``server_burst``: ``planner.hardware.accuracy.regime_of``) and quantity, over all engines
    and per engine, the points (n), the median and the 90th percentile (nearest rank) of
    |predicted / published − 1|, rounded to 0.1 %."""
    def stats(errs: list[float]) -> dict:
        return {"n": len(errs), "median": round(statistics.median(errs), 3), "p90": round(nearest_rank(errs, 0.9), 3)}

    out: dict = {"command": command, "date": date, "points": points}
    for regime in ("steady", "server_burst"):
        mine = [(e, q, x) for e, q, r, x in rows if r == regime]
        block: dict = {"all": {}, "engines": {}}
        for q in TIMING:
            errs = [x for _, qq, x in mine if qq == q]
            if errs:
                block["all"][q] = stats(errs)
        for eng in sorted({e for e, _, _ in mine}):
            block["engines"][eng] = {q: stats(errs) for q in TIMING
                                     if (errs := [x for ee, qq, x in mine if ee == eng and qq == q])}
        out[regime] = block
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "published.yaml")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--objective", choices=("l1", "median"), default="l1",
                    help="per quantity: mean (l1) or median |log error|; averaged over quantities")
    ap.add_argument("--sweeps", type=int, default=20, help="most coordinate sweeps (stops when one changes nothing)")
    ap.add_argument("--grid", choices=("fine", "coarse"), default="coarse")
    ap.add_argument("--split", choices=("source", "id"), default="id",
                    help="folds of whole sources, or every k-th point by id")
    ap.add_argument("--shipped", action="store_true",
                    help="predict with the profiles as shipped only: no fit, no held-out column (seconds)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes that predict each trial's points, each a fixed share (forked; a fit is the same "
                         "in one process)")
    ap.add_argument("--progress", action="store_true",
                    help="a line on stderr after each sweep of each fit (the k-fold takes tens of minutes)")
    ap.add_argument("--fit-bursts", action="store_true",
                    help="fit the timing factors on the server_burst points too (by default they are predicted "
                         "and scored, not fitted)")
    ap.add_argument("--factors", metavar="NAME@ENGINE,...",
                    help="refit only these factors (e.g. request_overhead_s@vllm), every other as shipped, on the "
                         "points of their engines alone (the others do not move with them); or device factors "
                         "(e.g. allreduce_latency_s) on the points whose prediction they move")
    ap.add_argument("--grid-values", nargs="*", default=[], metavar="NAME=V,V,...",
                    help="search NAME on these values instead of the grid's (e.g. a range past its top)")
    ap.add_argument("--fit-sample", type=float, default=1.0, metavar="F",
                    help="fit each fold on the training points of a fixed share F (0 < F <= 1) of the simulation "
                         "groups (benchmark rows), chosen by a hash of the row; every held-out point is still "
                         "predicted (a fit's time goes with its points)")
    ap.add_argument("--no-allfit", action="store_true",
                    help="skip the fit on all points (its factors are printed for copying into the profiles; the "
                         "held-out column and --write-accuracy need only the folds')")
    ap.add_argument("--write-accuracy", type=Path, metavar="PATH",
                    help="write the held-out |error| per quantity and engine as YAML (profiles/engines/"
                         "_accuracy.yaml: what planner serve prints); needs the k-fold (not --shipped)")
    ap.add_argument("--write-bias", type=Path, metavar="PATH",
                    help="with --shipped: write the signed error of the steady points by model family and device "
                         "vendor as YAML (profiles/engines/_bias.yaml: what planner serve flags)")
    args = ap.parse_args(argv)
    if args.write_bias and (not args.shipped or args.only or args.factors or args.data != ROOT / "bench" / "published.yaml"):
        ap.error("--write-bias needs --shipped on the whole data file (no --only, --factors, --data)")
    if args.write_accuracy and (args.shipped or args.only or args.factors):
        ap.error("--write-accuracy needs the k-fold of every factor on every point (no --shipped, --only, --factors)")
    if not 0 < args.fit_sample <= 1:
        ap.error(f"--fit-sample {args.fit_sample:g}: a share of the rows in (0, 1] expected")
    if args.shipped and (args.fit_sample < 1 or args.no_allfit):
        ap.error("--fit-sample and --no-allfit shape the fits; --shipped runs none")
    t0 = time.perf_counter()
    grid = dict(GRID_FINE if args.grid == "fine" else GRID)
    for item in args.grid_values:
        name, _, values = item.partition("=")
        try:
            grid[name] = [float(v) for v in values.split(",")]
        except ValueError:
            ap.error(f"--grid-values {item}: NAME=V,V,... with numbers expected")
    how = dict(objective=args.objective, max_sweeps=args.sweeps, grid=grid, progress=args.progress)
    keys = [k.strip() for k in (args.factors or "").split(",") if k.strip()]
    bad = [k for k in keys if ("@" not in k and k not in GLOBAL)
           or ("@" in k and k.split("@")[0] not in PER_ENGINE + NAMED_ONLY)]
    if bad:  # (before the points load: a minute)
        ap.error(f"--factors {', '.join(bad)}: per-engine factors NAME@ENGINE ({', '.join(PER_ENGINE + NAMED_ONLY)}) "
                 f"or a device factor ({', '.join(GLOBAL)}) expected")
    if any("@" in k for k in keys) and any("@" not in k for k in keys):
        ap.error("--factors: per-engine factors or device factors, not both in one refit")
    try:
        points, skipped = load_points(args.data, args.only)
    except (OSError, ValueError) as exc:  # a missing, unreadable or malformed --data file: one line, no traceback
        ap.error(f"--data {args.data}: {exc}")
    start = None
    if keys and all("@" in k for k in keys):  # only these move; a point of another engine predicts the same
        engines = {k.split("@")[1] for k in keys}
        points = [p for p in points if p.engine_name in engines]
    # device factors, and an engine's factors of a few kernels (NAMED_ONLY): the points whose prediction moves
    # between the ends of the factor's grid -- where every factor named is of that kind (beside an engine's
    # overheads, which move all its points, the engine's points stay)
    moving = [k for k in keys if "@" not in k or k.split("@")[0] in NAMED_ONLY]
    if moving and len(moving) == len(keys):
        ends = [({k: min(grid[k.split("@")[0]])}, {k: max(grid[k.split("@")[0]])}) for k in moving]
        points = [p for p in points if p.quantity in TIMING and any(p.predict(lo) != p.predict(hi) for lo, hi in ends)]
    if keys:
        start = lambda train: {k: v for k, v in start_params(train, tuple(keys)).items() if k in keys}  # noqa: E731
    print(f"{len(points)} published points predicted, {len(skipped)} skipped")
    for sid, why in skipped:
        print(f"  skipped {sid}: {why}")
    shipped = {p.id: p.predict() for p in points}
    # k-fold held-out
    order = sorted(points, key=lambda p: p.id)
    k = max(2, min(args.folds, len(order)))
    fold_of = split_folds(order, k, args.split)
    held: dict[str, float | None] = {p.id: None for p in order}
    # the server bursts are predicted and scored, never fitted (unless --fit-bursts): see the docstring
    # (--fit-sample: only the rows of the fixed sample are fitted on; every point is still held out and predicted)
    fitted = [(args.fit_bursts or p.regime != "server_burst") and in_fit_sample(p, args.fit_sample) for p in order]
    trains = [[i for i, f in enumerate(fold_of) if f != fold and fitted[i]] for fold in range(k)]
    tests = [[i for i, f in enumerate(fold_of) if f == fold and order[i].quantity in TIMING] for fold in range(k)]
    if not args.no_allfit:
        trains.append([i for i in range(len(order)) if fitted[i]])
        tests.append([])
    runs = [] if args.shipped else run_fits(order, trains, how, args.jobs, start, tests=tests)
    fits = [params for params, _ in runs[:k]]
    allfit = runs[k][0] if len(runs) > k else None
    for fold, (params, preds) in enumerate(runs[:k]):  # the fold's timing points, predicted by its fit's processes
        for i, pred in zip(tests[fold], preds):
            held[order[i].id] = pred
    for p in order:  # memory terms are not fitted here; a point a term was read from is not held out
        if p.quantity not in TIMING and not args.shipped:
            held[p.id] = None if p.training_for else shipped[p.id]
    print()
    hdr = f"{'id':58} {'quantity':20} {'published':>12} {'shipped':>12} {'err':>7} {'held-out':>12} {'err':>7}"
    print(hdr)
    print("-" * len(hdr))

    def f(x):
        return "-" if x is None else (f"{x:,.4g}" if abs(x) < 1e5 else f"{x:,.0f}")

    def pct(x):
        return "-" if x is None else f"{x:+.0%}"

    for p in order:
        e1, e2 = err(shipped[p.id], p.value), err(held[p.id], p.value)
        h = "train" if p.training_for and p.quantity not in TIMING else f(held[p.id])
        print(f"{p.id[:58]:58} {p.quantity:20} {f(p.value):>12} {f(shipped[p.id]):>12} {pct(e1):>7} "
              f"{h:>12} {pct(e2):>7}")
    def abs_errs(ps, pred: dict) -> list[float]:  # |predicted / published - 1| of the points predicted
        return [abs(err(pred[p.id], p.value)) for p in ps if pred[p.id] is not None]

    def pc(xs, agg):  # "-" where no point is left to score (all are training points)
        return f"{agg(xs):.1%}" if xs else "-"

    def over(xs):  # points beyond 30 %
        return str(sum(x > 0.3 for x in xs)) if xs else "-"

    print()
    print(f"{'quantity':22} {'n':>3} {'median |err| shipped':>21} {'max |err| shipped':>18} {'n held-out':>10} "
          f"{'median |err| held-out':>22} {'max |err| held-out':>19}")
    for q in TIMING + MEMORY:
        ps = [p for p in order if p.quantity == q]
        if not ps:
            continue
        a, b = abs_errs(ps, shipped), abs_errs(ps, held)
        print(f"{q:22} {len(ps):>3} {pc(a, statistics.median):>21} {pc(a, max):>18} {len(b):>10} "
              f"{pc(b, statistics.median):>22} {pc(b, max):>19}")
    from planner.hardware import accuracy

    print()
    print("timing points by regime (planner.hardware.accuracy.regime_of: server_burst = through the HTTP server with more "
          f"than {accuracy.BURST_PER_REPLICA} requests per replica):")
    print(f"{'regime':13} {'quantity':22} {'n':>3} {'median |err| shipped':>21} {'> 30 % shipped':>15} "
          f"{'median |err| held-out':>22} {'> 30 % held-out':>16}")
    for regime in ("steady", "server_burst"):
        for q in TIMING:
            ps = [p for p in order if p.quantity == q and p.regime == regime]
            a, b = abs_errs(ps, shipped), abs_errs(ps, held)
            if not a:
                continue
            print(f"{regime:13} {q:22} {len(ps):>3} {pc(a, statistics.median):>20} {over(a):>15} "
                  f"{pc(b, statistics.median):>22} {over(b):>16}")
    beyond = beyond_roofline(p for p in order if p.quantity in TIMING)
    print()
    print(f"published figures beyond the pure roofline of their scenario as simulated ({len(beyond)}: either the run was "
          "not what the entry says -- its lengths, precision, units or caching -- or it was not scheduled as simulated, "
          "e.g. its start-up burst left out of the figure):")
    for p, r in beyond:
        print(f"  {p.id:58} {p.quantity:20} published {p.value:<10.4g} roofline {r:<10.4g} ({p.value / r:.2f}x)")
    short = implied_concurrency(p.entry for p in order)
    print()
    print(f"runs whose own mean e2e and output tokens/s put fewer than {IN_FLIGHT_LEAST:.0%} of their stated concurrency "
          f"in flight (Little's law; fixed output lengths; {len(short)}: not run at that concurrency):")
    for e, c, flight in short:
        print(f"  {e['id']:58} concurrency {c:<6} in flight {flight:.1f}")
    if args.shipped:
        if args.write_bias:
            import datetime

            import yaml

            rows = [(p.a.spec.model_type, p.hw.vendor, p.quantity, publisher_key(p.entry), err(shipped[p.id], p.value))
                    for p in order if p.quantity in TIMING and p.regime == "steady" and shipped[p.id] is not None]
            cmd = "python bench/published.py " + " ".join(argv if argv is not None else sys.argv[1:])
            rec = bias_summary(rows, command=cmd, date=datetime.date.today().isoformat())
            head = ("# Signed error of planner serve as shipped against the steady published measurements, by model\n"
                    "# family (model_type) and device vendor: written by bench/published.py --shipped --write-bias; not\n"
                    "# edited by hand. median_error: of predicted / published - 1. planner serve flags a matching group\n"
                    "# whose |median_error| reaches the threshold.\n")
            args.write_bias.write_text(head + yaml.safe_dump(rec, sort_keys=False, width=1000))
            flagged = [g for g in rec["groups"] if abs(g["median_error"]) >= rec["threshold"]]
            print(f"bias by family and vendor: {len(rec['groups'])} groups recorded, {len(flagged)} flagged:")
            for g in flagged:
                print(f"  {g['dimension']} {g['key']} {g['quantity']}: median {g['median_error']:+.1%} "
                      f"({g['n']} points, {g['publishers']} publishers)")
            print(f"wrote {args.write_bias}")
        print(f"as shipped only (--shipped): no fit; wall time: {time.perf_counter() - t0:.0f} s")
        return 0
    print()
    if allfit is None:
        print("factors fitted on all points: not fitted (--no-allfit)")
    else:
        print("factors fitted on all points (device factors are global; step, launch and request overheads per engine):")
        for key, v in allfit.items():
            print(f"  {key}: {v:g}")
    print("factors per fold (spread shows how stable the fit is):")
    for i, fp in enumerate(fits):
        print(f"  fold {i}: " + ", ".join(f"{k}={v:g}" for k, v in fp.items()))
    print(f"fit: objective {args.objective} |log error| per quantity, at most {args.sweeps} sweeps, {args.grid} grid, "
          f"folds by {args.split}" + (f", on {args.fit_sample:g} of the rows (--fit-sample): {sum(fitted)} points "
                                      f"there, bursts left out (the fits use their timing points)"
                                      if args.fit_sample < 1 else ""))
    for i in range(k):
        mine = [p for p, f in zip(order, fold_of) if f == i]
        print(f"  fold {i} holds out {sum(p.quantity in TIMING for p in mine)} timing points of {len(mine)}, "
              f"from {len({source_key(p.entry) for p in mine})} sources")
    if args.write_accuracy:
        import datetime

        import yaml

        rows = [(p.engine_name, p.quantity, p.regime, abs(err(held[p.id], p.value))) for p in order
                if p.quantity in TIMING and held[p.id] is not None]
        cmd = "python bench/published.py " + " ".join(argv if argv is not None else sys.argv[1:])
        acc = accuracy_summary(rows, command=cmd, date=datetime.date.today().isoformat(), points=len(points))
        head = ("# Held-out error of planner serve against published measurements: written by bench/published.py\n"
                "# --write-accuracy after its k-fold (each point predicted by factors fitted without its fold); not\n"
                "# edited by hand. planner serve prints the engine's line. median / p90: of |predicted / published - 1|.\n")
        args.write_accuracy.write_text(head + yaml.safe_dump(acc, sort_keys=False, width=1000))
        print(f"wrote {args.write_accuracy}")
    print(f"wall time: {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
