"""Serving under load: a request-level simulation of continuous batching, many configurations at once.

What it models (one engine replica per configuration; vLLM V1's scheduler rules):

- requests arrive at given times (Poisson by default, ``poisson_arrivals``) with input and output
  lengths drawn from distributions or read from a file of real lengths;
- every step the scheduler serves, in order: each running sequence that is decoding (one token; its
  KV grows by one token), then sequences whose prompt is partly prefilled (chunked prefill, oldest
  first), then new requests from the queue, first come first served, while the step's token budget
  (``max_num_batched_tokens``), the sequence limit (``max_num_seqs``) and the KV pool
  (``kv_capacity_tokens``) allow; a prompt larger than the budget left is prefilled in chunks (with
  ``Scheduler.prefill_first``, SGLang's rule: the prompts get the whole budget, and a step that runs any
  prompt tokens runs no decode; the pool check before it still counts the decodes' tokens);
- when the KV pool cannot take the decode tokens of a step (or is full of half-prefilled prompts), the
  most recently admitted sequence is preempted: its KV is freed and it is recomputed later (prompt and
  generated tokens prefilled again; no new request is admitted while a recompute waits, nor in a step
  that preempted), as vLLM's default ``recompute`` preemption does. Sequences keep their admission
  order, so the oldest always makes progress;
- with ``Scheduler.reserve_whole`` (an engine whose profile sets ``scheduler.kv_admission: whole``:
  TensorRT-LLM's GUARANTEED_NO_EVICT) a request is admitted only while the pool can hold its whole
  sequence, prompt and output, beside the whole sequences of those running; nothing is then preempted;
- a request whose prompt plus output cannot fit in the pool at all is rejected (counted, never run);
- a step of ``N`` new tokens from ``S`` sequences (decoding, or with a prompt chunk), ``K`` cached tokens read by
  its decodes and ``P`` (query, key) pairs of its prefill chunks takes ``t_tokens(N) + sigma_s·S + kappa_s·K +
  pi_s·P`` seconds (``StepCost``), a form whose four terms are taken from the one step model
  (``hardware.deploy.step_cost``): the weight- and token-bound part of the step tabulated over ``N``, the
  engine's host work per sequence, the KV read per cached token and the attention work per pair;
- a run of identical decode-only steps (no prefill, no arrival that could be admitted, no sequence
  finishing, the pool not filling) is taken in one jump with its exact summed time.

Disaggregated serving (``simulate_disaggregated``): a prefill pool and a decode pool simulated one
after the other; a request enters the decode pool when its prefill is done and its KV has crossed
the link (``kv_transfer_s``); its first token is counted when it reaches the decode pool.

All configurations advance together in numpy arrays (configurations × sequence slots), so a sweep
of many configurations costs about as much Python work as one. numpy is imported here, never at
import time of the CLI's light commands.

Outputs per configuration (``Result``): TTFT, TPOT (mean inter-token time of each request) and e2e at
p50/p90/p99 and mean, output tokens/s, the time-averaged and peak KV occupancy (and its series over
time when asked), preemptions, rejected requests, and the time-averaged number of requests in the
system (for Little's law checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from planner.analysis.errors import OptionError

_INF = float("inf")


@dataclass(frozen=True)
class StepCost:
    """Step time of one replica: ``interp(tokens_grid, t_tokens_s)(N) + sigma_s·S + kappa_s·K + pi_s·P``."""

    tokens_grid: tuple[int, ...]  # increasing, starting at 1
    t_tokens_s: tuple[float, ...]  # seconds of a step of N new tokens, at each grid point
    kappa_s: float  # seconds per cached token a decode reads
    pi_s: float  # seconds per (query, key) pair of a prefill chunk
    # seconds per sequence the step runs (decoding, or with a prompt chunk): the engine's host work per sequence
    # where it adds to the step (not run beside it: hardware.deploy.step_cost); 0 where ``t_tokens_s`` holds it
    sigma_s: float = 0.0

    def time_s(self, tokens: int, kv_read: int = 0, pairs: int = 0, sequences: int = 0) -> float:
        import numpy as np

        return (float(np.interp(tokens, self.tokens_grid, self.t_tokens_s)) + self.sigma_s * sequences
                + self.kappa_s * kv_read + self.pi_s * pairs)


@dataclass(frozen=True)
class Scheduler:
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    # a step that runs prompt tokens runs them alone, within the whole budget, and the decoding sequences
    # wait for it (SGLang's "Run prefill first if possible"; hardware.serve.run_steps prefill_first)
    prefill_first: bool = False
    # vLLM's asynchronous scheduling: the engine schedules the next step when this one starts, so while
    # sequences run a step admits only the requests that had arrived when the step before it started
    # (hardware.serve.run_steps lookahead)
    lookahead: bool = False
    # a request is admitted only while the pool can hold its whole sequence (prompt + output) beside every running
    # request's whole sequence, so no decode ever finds the pool full and nothing is preempted: TensorRT-LLM's
    # GUARANTEED_NO_EVICT and the engines whose profile sets ``scheduler.kv_admission: whole``
    # (hardware.serve.held_output_of); False: vLLM's blocks on demand, with recompute preemption
    reserve_whole: bool = False

    def check(self) -> None:
        for k in ("max_num_seqs", "max_num_batched_tokens", "kv_capacity_tokens"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise OptionError(f"{k.replace('_', '-')} must be a whole number >= 1, got {v!r}")


@dataclass
class Result:
    """Per-configuration metrics (arrays of length C, seconds and tokens)."""

    ttft_s: object  # (C, R) per request; nan for rejected
    tpot_s: object  # (C, R); nan where output is 1 token or rejected
    e2e_s: object  # (C, R)
    finish_s: object  # (C, R)
    output_tokens_per_s: object  # (C,)
    kv_mean_occupancy: object  # (C,) time-averaged fraction of the pool in use
    kv_peak_occupancy: object  # (C,)
    mean_in_system: object  # (C,) time-averaged requests in the system (queued or running)
    preemptions: object  # (C,)
    rejected: object  # (C,)
    duration_s: object  # (C,) first arrival to last finish
    steps: int  # lock-step iterations taken
    kv_series: list | None = None  # [(t (C,), occupancy (C,))] per iteration, when asked
    extra: dict = field(default_factory=dict)

    def percentiles(self, what: str, qs: Sequence[float] = (50, 90, 99)) -> object:
        return row_percentiles(getattr(self, what), qs)


def row_percentiles(a, qs: Sequence[float] = (50, 90, 99), empty: float = float("nan")) -> object:
    """(C, len(qs)): the percentiles ``qs`` of each row of ``a`` (C, R), NaN (rejected, unfinished) left
    out; a row with no value at all gives ``empty``."""
    import numpy as np

    with np.errstate(all="ignore"):
        ok = ~np.all(np.isnan(a), axis=1)
        out = np.full((a.shape[0], len(qs)), empty)
        if ok.any():
            out[ok] = np.nanpercentile(a[ok], qs, axis=1).T
    return out


# ---- workloads -----------------------------------------------------------------------------------


def front_end_arrivals(sends_s, intake_s: float):
    """When requests sent at ``sends_s`` (``(C, R)``, each row in send order) reach the engine through one
    serial front-end process per row that takes ``intake_s`` per request (``hardware.serve.intake_arrivals``,
    vectorised): ``L_k = max(s_k, L_{k-1}) + c`` is ``max_{j<=k}(s_j - c·j) + c·(k + 1)``. ``intake_s`` 0:
    the sends themselves."""
    import numpy as np

    s = np.asarray(sends_s, dtype=float)
    if intake_s <= 0:
        return s
    k = np.arange(s.shape[-1], dtype=float)
    return np.maximum.accumulate(s - intake_s * k, axis=-1) + intake_s * (k + 1)


def poisson_arrivals(rate_per_s: float, n: int, seed: int = 0, configs: int = 1):
    """Arrival times (configs, n) of a Poisson process of ``rate_per_s`` requests/s, from t=0."""
    import numpy as np

    if not rate_per_s > 0:
        raise OptionError(f"--rate must be > 0 requests/s, got {rate_per_s}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate_per_s, size=(configs, n))
    gaps[:, 0] = 0.0
    with np.errstate(over="ignore"):
        arrivals = np.cumsum(gaps, axis=1)
    if not np.isfinite(arrivals).all():  # a rate so slow that the times pass the largest float
        raise OptionError(f"--rate {rate_per_s:g} requests/s is too slow to simulate: the arrival times overflow")
    return arrivals


LENGTH_DISTS = "N, const:N, uniform:A:B, normal:MEAN:SD or lognormal:MEAN:SD"


def length_dist(spec: str | int, what: str = "length") -> tuple[str, list[float]]:
    """``spec`` parsed: ``(kind, args)`` of ``"const:L"``, ``"uniform:A:B"`` (whole tokens A..B, both
    included), ``"normal:MEAN:SD"`` or ``"lognormal:MEAN:SD"`` (of the length itself); an int or ``"N"``
    is ``const``. Refused (``OptionError``) where it is none of these or a length below 1 token is
    certain."""
    import math

    parts = str(spec).strip().split(":")
    try:
        kind, args = (("const", [float(parts[0])]) if len(parts) == 1
                      else (parts[0].strip().lower(), [float(x) for x in parts[1:]]))
    except ValueError:
        raise OptionError(f"{what} '{spec}' is not a distribution", f"use {LENGTH_DISTS}") from None
    ok = all(math.isfinite(a) for a in args) and (
        (kind == "const" and len(args) == 1 and args[0] >= 1)
        or (kind == "uniform" and len(args) == 2 and 1 <= args[0] <= args[1])
        or (kind == "normal" and len(args) == 2 and args[1] >= 0)
        or (kind == "lognormal" and len(args) == 2 and args[0] > 0 and args[1] >= 0))
    if not ok:
        raise OptionError(f"{what} '{spec}' is not a distribution", f"use {LENGTH_DISTS}")
    return kind, args


def draw_lengths(spec: str | int, n: int, seed: int = 0, what: str = "length"):
    """``n`` lengths drawn at random from ``spec`` (``length_dist``: an int or ``"const:L"`` fixed,
    ``"uniform:A:B"``, ``"normal:MEAN:SD"`` rounded and at least 1, ``"lognormal:MEAN:SD"`` of the length
    itself), seeded: the request-rate simulation's draw (``length_quantiles`` is the serve scenario's)."""
    import numpy as np

    if isinstance(spec, (int, np.integer)):
        if spec < 1:
            raise OptionError(f"{what} must be >= 1 token, got {spec}")
        return np.full(n, int(spec), dtype=np.int64)
    kind, args = length_dist(spec, what)
    rng = np.random.default_rng(seed)
    if kind == "const":
        out = np.full(n, args[0])
    elif kind == "uniform":
        out = rng.integers(int(args[0]), int(args[1]) + 1, size=n)
    elif kind == "normal":
        out = rng.normal(args[0], args[1], size=n)
    else:
        sigma2 = np.log(1 + (args[1] / args[0]) ** 2)
        out = rng.lognormal(np.log(args[0]) - sigma2 / 2, np.sqrt(sigma2), size=n)
    if not np.all(np.isfinite(out)):
        raise OptionError(f"{what} '{spec}' gives non-finite lengths")
    return np.maximum(1, np.rint(out)).astype(np.int64)


#: the additive steps of the two quantile sequences of ``length_quantiles`` (input lengths: √2 − 1; output
#: lengths: the golden ratio's fractional part, as ``hardware.serve.output_lengths``): irrational and
#: independent over the rationals, so request k's pair (input quantile, output quantile) fills the unit
#: square evenly for any run of consecutive k (a Kronecker sequence) and the two lengths are uncorrelated
QUANTILE_STEPS = {"input": 2 ** 0.5 - 1, "output": (5 ** 0.5 - 1) / 2}
#: the longest request length a distribution may give (``planner serve --input-len``'s own limit, 2^24 tokens)
MAX_DRAWN_LENGTH = 1 << 24
#: the most lengths one distribution gives in one call (the step-by-step simulations take at most
#: 16,384 clients × 8 rounds per replica; a longer list is refused before it is built)
MAX_QUANTILE_LENGTHS = 1 << 22


def length_quantiles(spec: str, n: int, stream: str = "input", what: str = "length") -> list[int]:
    """Lengths of requests 0 .. n − 1 from the distribution ``spec`` (``length_dist``), without a random
    draw: request k takes the quantile ``u_k = (1/2 + k × QUANTILE_STEPS[stream]) mod 1``, so any run of
    consecutive requests follows the distribution (its mean within a token or so from a few tens of
    requests on, where a seeded draw of ten wanders by ~10 %), and the same scenario gives the same
    lengths every time. Rounded to whole tokens, at least 1 (the normal's left tail is cut there)."""
    import math
    from statistics import NormalDist

    kind, args = length_dist(spec, what)
    if not 0 <= n <= MAX_QUANTILE_LENGTHS:
        raise OptionError(f"{what}: {n:,} lengths asked of '{spec}'; at most {MAX_QUANTILE_LENGTHS:,}")
    step = QUANTILE_STEPS[stream]
    us = [(0.5 + k * step) % 1.0 for k in range(n)]
    too_long = OptionError(f"{what} '{spec}' gives lengths past {MAX_DRAWN_LENGTH:,} tokens",
                           "narrow the distribution")
    if kind == "const":
        if args[0] > MAX_DRAWN_LENGTH:
            raise too_long
        return [max(1, round(args[0]))] * n
    if kind == "uniform":
        if args[1] > MAX_DRAWN_LENGTH:
            raise too_long
        a, b = math.ceil(args[0]), math.floor(args[1])
        if a > b:
            raise OptionError(f"{what} '{spec}' holds no whole token count", f"use {LENGTH_DISTS}")
        return [min(b, a + int(u * (b - a + 1))) for u in us]
    z = NormalDist()
    eps = 1e-12
    qs = [z.inv_cdf(min(max(u, eps), 1 - eps)) for u in us]
    if kind == "normal":
        xs = [args[0] + args[1] * q for q in qs]
    else:
        sigma2 = math.log1p((args[1] / args[0]) ** 2)
        mu, sd = math.log(args[0]) - sigma2 / 2, math.sqrt(sigma2)
        xs = [math.exp(min(mu + sd * q, 700.0)) for q in qs]
    if any(not x <= MAX_DRAWN_LENGTH for x in xs):  # (NaN too)
        raise too_long
    return [max(1, round(x)) for x in xs]


def drawn_length_summary(input_len: int, output_len: int, input_len_dist: str | None,
                         output_len_dist: str | None) -> tuple[int, int, int]:
    """``(mean prompt, mean output, longest prompt + longest output)`` of requests whose lengths are drawn
    from ``input_len_dist`` / ``output_len_dist`` (``length_quantiles`` over 4,096 requests; a side without a
    distribution keeps ``input_len`` / ``output_len``): what ``serve`` and ``plan`` report as the lengths and
    size a sequence by."""
    ins = length_quantiles(input_len_dist, 4096, "input", "--input-len-dist") if input_len_dist else [input_len]
    outs = length_quantiles(output_len_dist, 4096, "output", "--output-len-dist") if output_len_dist else [output_len]
    return (max(1, round(sum(ins) / len(ins))), max(1, round(sum(outs) / len(outs))), max(ins) + max(outs))


# ---- the simulation ------------------------------------------------------------------------------


def _rows(x, C: int, R: int, dtype):
    import numpy as np

    a = np.asarray(x, dtype=dtype)
    if a.ndim == 0:
        return np.full((C, R), a, dtype=dtype)
    if a.ndim == 1 or (a.ndim == 2 and a.shape[0] == 1):
        return np.broadcast_to(a.reshape(-1), (C, R)).astype(dtype)
    if a.shape != (C, R):
        raise OptionError(f"simulate: per-request arrays must be ({C}, {R}), got {a.shape}")
    return a.astype(dtype)


def _t_tokens(tt, grid, n):
    """Each row's ``t_tokens`` table ``tt`` (rows, len(grid)) at ``n`` new tokens, linear between points."""
    import numpy as np

    # (np.minimum/np.maximum: what np.clip computes, without its per-call overhead)
    n = np.minimum(np.maximum(n.astype(np.float64), grid[0]), grid[-1])
    j = np.minimum(np.maximum(np.searchsorted(grid, n, side="right") - 1, 0), len(grid) - 2)
    x0, x1 = grid[j], grid[j + 1]
    w = (n - x0) / (x1 - x0)
    ci = np.arange(len(n))
    return tt[ci, j] * (1 - w) + tt[ci, j + 1] * w


def simulate(costs: Sequence[StepCost], scheds: Sequence[Scheduler], arrivals, input_lens, output_lens, *,
             prefilled=None, record_kv: bool = False, max_iterations: int = 10_000_000,
             compact: bool = True, max_in_flight=None) -> Result:
    """Simulate ``C = len(costs)`` configurations on their requests (arrays (R,) shared or (C, R)).

    ``prefilled`` (bool (R,) or (C, R)): requests that arrive with their prompt's KV already made
    (the decode pool of a disaggregated deployment): they take ``input_len`` tokens of the pool on
    admission, no budget, and have emitted their first token.

    ``max_in_flight`` (a count, or one per configuration; None: no cap): the client's cap on requests in
    flight (``client_sends``): request ``i`` is sent at its arrival time or, where more are in flight, when
    the ``(i − cap + 1)``-th request ends, whichever is later; its TTFT and e2e count from that send.

    How it stays fast (the results are those of advancing every slot of every configuration each
    step, which tests/sim_reference.py does and the tests compare exactly):

    - per configuration it keeps the sums a step needs (decoding sequences, cached tokens they read,
      tokens in the pool, prompt tokens reserved, the soonest finish) and updates them at events
      (admission, end of a prefill, finish, preemption) instead of rescanning its slots every step;
    - decoding sequences are advanced by a per-configuration decode clock ``tau``: a decoding slot
      stores its cached and emitted tokens minus ``tau``, so a decode step touches no slot;
    - only the configurations with an event of a kind touch their slots (prefill chunks, admissions,
      finishes, preemptions), and configurations that have finished are dropped from the arrays
      (``compact``; off, they stay and do nothing)."""
    import numpy as np

    C = len(costs)
    if C == 0 or len(scheds) != C:
        raise OptionError("simulate: one scheduler per step cost, at least one")
    for s in scheds:
        s.check()
    arr = np.atleast_2d(np.asarray(arrivals, dtype=np.float64))
    R = arr.shape[1]
    arr = _rows(arr, C, R, np.float64)
    inp = _rows(input_lens, C, R, np.int64)
    out = _rows(output_lens, C, R, np.int64)
    pref = _rows(False if prefilled is None else prefilled, C, R, bool)
    if (inp < 1).any() or (out < 1).any():
        raise OptionError("every input and output length must be >= 1 token")
    if not np.all(np.diff(arr, axis=1) >= 0):
        raise OptionError("arrival times must be sorted")
    # one grid for all: the union of the breakpoints (each piecewise-linear table is kept exactly)
    grid = np.unique(np.concatenate([np.asarray(c.tokens_grid, dtype=np.float64) for c in costs]))
    if len(grid) < 2:
        grid = np.array([grid[0], grid[0] + 1.0])
    BIG = np.iinfo(np.int64).max
    lim_all = in_flight_caps(max_in_flight, C, R)  # (C,), R where there is no cap (it never binds then)
    capped = bool((lim_all < R).any())
    rel_rej = np.full((C, R), np.nan) if capped else None  # when a rejected request was passed over

    # a request whose whole sequence cannot fit in the pool is rejected up front
    cap_all = np.array([s.kv_capacity_tokens for s in scheds], dtype=np.int64)
    rejected = (inp + out - 1) > cap_all[:, None]
    any_rejected = bool(rejected.any())
    first = np.full((C, R), np.nan)
    finish = np.full((C, R), np.nan)
    amin = float(arr.min())
    span = float(arr.max() - amin) + 1.0
    flat = (arr - amin + span * np.arange(C)[:, None]).ravel()  # sorted: one searchsorted for every row
    t0_all = arr[:, 0].copy()
    # at most R sequences ever run at once, so a larger max_num_seqs (the ideal engine's 1,048,576) changes
    # nothing; taken whole it sized the (C, S) slot arrays at gigabytes (72 × 1 M × 8 B each)
    seqs = [min(s.max_num_seqs, R) for s in scheds]
    S = int(max(seqs))

    # ---- per-configuration state (rows), compacted as configurations finish ----
    st = {
        "g": np.arange(C),  # the configuration of each row
        "tt": np.array([np.interp(grid, c.tokens_grid, c.t_tokens_s) for c in costs], dtype=np.float64),
        "kappa": np.array([c.kappa_s for c in costs], dtype=np.float64),
        "sigma": np.array([c.sigma_s for c in costs], dtype=np.float64),
        "pi": np.array([c.pi_s for c in costs], dtype=np.float64),
        "seqs": np.array(seqs, dtype=np.int64),
        "budget0": np.array([s.max_num_batched_tokens for s in scheds], dtype=np.int64),
        "pff": np.array([s.prefill_first for s in scheds], dtype=bool),
        "la": np.array([s.lookahead for s in scheds], dtype=bool),
        "whole": np.array([s.reserve_whole for s in scheds], dtype=bool),
        "resv": np.zeros(C, dtype=np.int64),  # reserve_whole: Σ of the running sequences' whole sequences
        "tprev": np.full(C, np.nan),  # lookahead: when the step before this one started (nan: idle before it)
        "cap": cap_all.copy(),
        "t": arr[:, 0].copy(),
        "narr": np.zeros(C, dtype=np.int64),
        "hw": np.zeros(C, dtype=np.int64),  # slots [0, hw) are the only ones a row has used  # requests arrived by t (t never goes back)
        "nxt": np.zeros(C, dtype=np.int64),
        "tau": np.zeros(C, dtype=np.int64),  # decode clock: decode steps taken
        "nrun": np.zeros(C, dtype=np.int64),  # running sequences (slots in use)
        "d": np.zeros(C, dtype=np.int64),  # decoding sequences
        "sk": np.zeros(C, dtype=np.int64),  # sum over decoders of (stored ctx + 1): K = sk + d·tau
        "kv": np.zeros(C, dtype=np.int64),  # tokens in KV
        "pres": np.zeros(C, dtype=np.int64),  # prompt tokens reserved by running, not preempted sequences
        "npf": np.zeros(C, dtype=np.int64),  # sequences mid-prefill (not preempted)
        "nrec": np.zeros(C, dtype=np.int64),  # preempted sequences waiting for their recompute
        "fmin": np.full(C, BIG, dtype=np.int64),  # min over decoders of olen - stored gen (rem = fmin - tau)
        "nfin": np.zeros(C, dtype=np.int64),  # requests finished or rejected
        "lim": lim_all.copy(),  # the client's cap on requests in flight (max_in_flight)
        "nfin_s": np.zeros(C, dtype=np.int64),  # nfin when the last iteration started (its step's start)
        "occ_int": np.zeros(C), "occ_peak": np.zeros(C), "sys_int": np.zeros(C),
        "preempt": np.zeros(C, dtype=np.int64),
        # slots (rows, S)
        "sid": np.full((C, S), -1, dtype=np.int64),
        "order": np.zeros((C, S), dtype=np.int64),  # admission order: preemption takes the newest
        "pre": np.zeros((C, S), dtype=np.int64),  # prompt tokens still to prefill
        "c0": np.zeros((C, S), dtype=np.int64),  # tokens in KV (minus tau for a decoder)
        "g0": np.zeros((C, S), dtype=np.int64),  # tokens emitted (minus tau for a decoder)
        # a decoding slot (running, prompt done, not preempted) holds olen - stored gen, every other BIG:
        # its sequence finishes when tau reaches it
        "fkey": np.full((C, S), BIG, dtype=np.int64),
        "rec": np.zeros((C, S), dtype=bool),  # preempted, waiting for its recompute
        "olen": np.zeros((C, S), dtype=np.int64),
        "rsv": np.zeros((C, S), dtype=np.int64),  # reserve_whole: the slot's whole sequence (prompt + output − 1)
        "pfkey": np.full((C, S), BIG, dtype=np.int64),  # order of a sequence mid-prefill, else BIG
        "pfs": np.full(C, -1, dtype=np.int64),  # the slot mid-prefill when npf == 1 and known, else -1
        # free slots as a stack per row (slot 0 on top): which free slot a request takes changes nothing
        "fstack": np.maximum(np.array(seqs)[:, None] - 1 - np.arange(S)[None, :], 0),
        "nfree": np.array(seqs, dtype=np.int64),
    }
    done_acc = {k: np.zeros(C) for k in ("occ_int", "occ_peak", "sys_int")}
    done_acc["preempt"] = np.zeros(C, dtype=np.int64)
    series = [] if record_kv else None
    t_full = arr[:, 0].copy() if record_kv else None
    occ_full = np.zeros(C) if record_kv else None
    counter = 0
    steps = 0
    W = 1  # slots [0, W) are the only ones ever used (the stack hands out low slots first)

    def flush(rows):
        g = st["g"][rows]
        for k in done_acc:
            done_acc[k][g] = st[k][rows]

    while steps < max_iterations:
        g = st["g"]
        n = len(g)
        nxt = st["nxt"]
        # requests rejected up front are passed over (none to look for in most sweeps)
        while any_rejected:
            m_ = nxt < R
            rj = np.zeros(n, dtype=bool)
            rj[m_] = rejected[g[m_], nxt[m_]]
            if not rj.any():
                break
            if rel_rej is not None:
                rel_rej[g[rj], nxt[rj]] = st["t"][rj]
            st["nfin"] += rj
            nxt += rj
        nrun = st["nrun"]
        active = (nxt < R) | (nrun > 0)
        # finished configurations leave the arrays (in batches: a copy of every array costs a step)
        if compact and (~active).sum() * 8 >= max(n, 8) or (compact and not active.any()):
            keep = np.nonzero(active)[0]
            flush(np.nonzero(~active)[0])
            for k, v in st.items():
                st[k] = v[keep]
            g, nxt, nrun = st["g"], st["nxt"], st["nrun"]
            n = len(g)
            active = np.ones(n, dtype=bool)
        if not active.any():
            break
        steps += 1
        t, tau, cap, d_, kv = st["t"], st["tau"], st["cap"], st["d"], st["kv"]
        sid, order, pre, c0, g0 = st["sid"], st["order"], st["pre"], st["c0"], st["g0"]
        fkey, rec, olen, pfkey = st["fkey"], st["rec"], st["olen"], st["pfkey"]
        npf, pfs = st["npf"], st["pfs"]
        # requests arrived by t: a few steps on from the last count, then a search for rows with more
        # (compared as ``flat`` is, (t - amin) + span·g, so it rounds the same way)
        arrived, base = st["narr"], g * R
        q = t - amin + span * g
        for _ in range(3):
            adv = (arrived < R) & (flat[base + np.minimum(arrived, R - 1)] <= q)
            if not adv.any():
                break
            arrived += adv
        else:
            rr = np.nonzero(adv)[0]
            arrived[rr] = np.minimum(np.maximum(np.searchsorted(flat, q[rr], side="right") - base[rr], 0), R)
        # idle: jump to the next arrival (the client's cap never holds a request back from an idle engine: every
        # request sent before it has ended)
        idle = active & (nrun == 0) & (arrived <= nxt) & (nxt < R)
        if idle.any():
            ii = np.nonzero(idle)[0]
            t[ii] = arr[g[ii], nxt[ii]]
            arrived[ii] = np.minimum(np.maximum(
                np.searchsorted(flat, t[ii] - amin + span * g[ii], side="right") - g[ii] * R, 0), R)
        # the client's cap (max_in_flight): request i is sent once i − cap + 1 requests have ended
        if capped:
            nfin_prev, st["nfin_s"] = st["nfin_s"], st["nfin"].copy()
            gate = st["nfin"] + st["lim"]
            arrived = np.minimum(arrived, gate)  # (narr keeps the arrivals' own count)
        # lookahead: while sequences run, the step admits the requests that had arrived when the step before
        # it started (and that the client had sent by then)
        adm = arrived
        la_now = st["la"] & (nrun > 0) & ~np.isnan(st["tprev"])
        if la_now.any():
            adm = arrived.copy()
            ii = np.nonzero(la_now)[0]
            adm[ii] = np.minimum(np.maximum(np.searchsorted(flat, st["tprev"][ii] - amin + span * g[ii], side="right")
                                            - g[ii] * R, 0), arrived[ii])
            if capped:
                adm[ii] = np.minimum(adm[ii], nfin_prev[ii] + st["lim"][ii])
        # the pool: tokens in KV plus the prompt tokens reserved by sequences being prefilled
        committed = kv + st["pres"]
        preempted_now = np.zeros(n, dtype=bool)
        # 1. decodes, preempting the newest sequences while the pool cannot take their tokens
        fmin_stale = np.zeros(n, dtype=bool)
        while True:
            over = active & (committed + d_ > cap)
            if not over.any():
                break
            rows = np.nonzero(over)[0]
            holds = (sid[rows, :W] >= 0) & ~rec[rows, :W]
            v = np.where(holds, order[rows, :W], -1).argmax(1)
            ok = holds[np.arange(len(rows)), v]
            rows, vs = rows[ok], v[ok]
            if len(rows) == 0:
                break
            was_dec = fkey[rows, vs] < BIG
            ctx = c0[rows, vs] + np.where(was_dec, tau[rows], 0)
            p_ = pre[rows, vs]
            committed[rows] -= ctx + p_
            kv[rows] -= ctx
            # recompute: every token in KV plus the newest emitted one (a decoding sequence), or the
            # whole prompt again (a sequence mid-prefill)
            pre[rows, vs] = np.where(was_dec, ctx + 1, ctx + p_)
            g0[rows, vs] += np.where(was_dec, tau[rows], 0)
            c0[rows, vs] = 0
            rec[rows, vs] = True
            fkey[rows, vs] = BIG
            pfkey[rows, vs] = BIG
            st["pres"][rows] -= np.where(was_dec, 0, p_)
            npf[rows] -= ~was_dec
            pfs[rows] = -1
            st["nrec"][rows] += 1
            st["sk"][rows] -= np.where(was_dec, ctx - tau[rows] + 1, 0)
            d_[rows] -= was_dec
            fmin_stale[rows[was_dec]] = True
            st["preempt"][rows] += 1
            preempted_now[rows] = True
        if fmin_stale.any():
            rows = np.nonzero(fmin_stale)[0]
            st["fmin"][rows] = fkey[rows, :W].min(1)
        d = d_.copy()
        K = st["sk"] + d * tau
        pff = st["pff"]
        budget = np.where(active, st["budget0"] - np.where(pff, 0, d), 0)
        free_kv = cap - committed - d
        pairs = np.zeros(n, dtype=np.float64)
        ptok = np.zeros(n, dtype=np.int64)
        pseq = np.zeros(n, dtype=np.int64)  # sequences with a prompt chunk in this step
        chunks = []  # (rows, slots, tokens) of this step's prefill chunks
        did_preempt = preempted_now
        # preempted sequences come back (oldest first) when the pool can hold their recompute
        while True:
            rows = np.nonzero((st["nrec"] > 0) & ~did_preempt)[0]
            if len(rows) == 0:
                break
            cand = (sid[rows, :W] >= 0) & rec[rows, :W]
            s = np.where(cand, order[rows, :W], BIG).argmin(1)
            need_ = pre[rows, s]
            ok = free_kv[rows] >= need_
            rows, s = rows[ok], s[ok]
            if len(rows) == 0:
                break
            rec[rows, s] = False
            pfkey[rows, s] = order[rows, s]
            free_kv[rows] -= pre[rows, s]
            st["nrec"][rows] -= 1
            npf[rows] += 1
            pfs[rows] = np.where(npf[rows] == 1, s, -1)
            st["pres"][rows] += pre[rows, s]
        # 2. sequences mid-prefill (oldest first; their KV is reserved), 3. new requests (first come, first
        # served) whose whole prompt the pool can reserve
        left = npf.copy()
        while True:
            rows = np.nonzero((left > 0) & (budget > 0))[0]
            if len(rows) == 0:
                break
            ss = pfs[rows]  # the one sequence mid-prefill, where it is known
            scan = ss < 0
            if scan.any():
                ss[scan] = pfkey[rows[scan], :W].argmin(1)
            c = np.minimum(pre[rows, ss], budget[rows])
            chunks.append((rows, ss, c))
            pairs[rows] += c * c0[rows, ss] + c * (c + 1) / 2
            budget[rows] -= c
            ptok[rows] += c
            pseq[rows] += 1
            left[rows] -= 1
            pfkey[rows, ss] = BIG  # served this step (a partial chunk gets its key back below)
        # new requests wait while a preempted sequence waits for its recompute, and in a step that
        # preempted (vLLM's scheduler schedules no waiting request then)
        hold = (st["nrec"] > 0) | did_preempt
        admitted = []  # (rows, slots) admitted with their prompt's KV
        nxt_before = nxt.copy()
        while True:
            rows = np.nonzero((nxt < adm) & (st["nfree"] > 0) & ~hold)[0]
            if len(rows) == 0:
                break
            r = nxt[rows]
            gr = g[rows]
            pf = pref[gr, r]
            li = inp[gr, r]
            # reserve_whole: the pool must hold the whole sequence beside the running ones' (their KV and the
            # prompt tokens reserved are inside their reservations, so free_kv never binds there)
            wh = st["whole"][rows]
            whole_need = np.where(wh, li + out[gr, r] - 1, 0)
            ok = (free_kv[rows] >= li) & (~wh | (st["cap"][rows] - st["resv"][rows] >= whole_need)) \
                & (pf | (budget[rows] > 0))
            rows, r, gr, pf, li, whole_need = rows[ok], r[ok], gr[ok], pf[ok], li[ok], whole_need[ok]
            if len(rows) == 0:
                break
            st["resv"][rows] += whole_need
            nfree = st["nfree"]
            nfree[rows] -= 1
            ss = st["fstack"][rows, nfree[rows]]
            st["rsv"][rows, ss] = whole_need
            W = max(W, int(ss.max()) + 1)
            st["hw"][rows] = np.maximum(st["hw"][rows], ss + 1)
            sid[rows, ss] = r
            rec[rows, ss] = False
            olen[rows, ss] = out[gr, r]
            order[rows, ss] = counter + np.arange(len(rows))
            counter += len(rows)
            nxt[rows] += 1
            nrun[rows] += 1
            c = np.where(pf, 0, np.minimum(li, budget[rows]))
            pre[rows, ss] = np.where(pf, 0, li)
            c0[rows, ss] = np.where(pf, li, 0)
            g0[rows, ss] = np.where(pf, 1, 0)
            pfkey[rows, ss] = BIG
            first[gr[pf], r[pf]] = t[rows[pf]]
            st["pres"][rows] += np.where(pf, 0, li)
            npf[rows] += ~pf
            pfs[rows] = np.where(npf[rows] == 1, np.where(pf, pfs[rows], ss), -1)
            np_ = ~pf
            if np_.any():
                chunks.append((rows[np_], ss[np_], c[np_]))
            pairs[rows] += c * (c + 1) / 2
            budget[rows] -= c
            ptok[rows] += c
            pseq[rows] += np_
            free_kv[rows] -= li
            kv[rows] += np.where(pf, li, 0)
            admitted.append((rows[pf], ss[pf]))
        if pff.any():  # prefill first: a step with prompt tokens runs no decode
            idle = pff & (ptok > 0)
            d = np.where(idle, 0, d)
            K = np.where(idle, 0, K)
        N = d + ptok
        S_ = d + pseq  # the sequences the step runs
        work = active & (N > 0)
        # decode-only runs: jump to the next event
        m = np.ones(n, dtype=np.int64)
        # (a waiting or preempted request blocked by the pool stays blocked until a sequence finishes)
        jump = work & (ptok == 0) & (d > 0) & ~did_preempt
        if jump.any():
            rem = st["fmin"] - tau
            m_fin = np.maximum(rem, 1)
            room = free_kv + d  # what the pool has left for this run's decode tokens
            m_kv = np.maximum(room // np.maximum(d, 1), 1)
            mm = np.minimum(m_fin, m_kv)
            # an arrival that could be admitted ends the run at the first step starting after it
            # (one already waiting is blocked by the pool: only a finishing sequence changes that)
            # (a request the client's cap holds back is sent when one ends, and a finish ends the run anyway)
            admissible = (nxt < R) & (nxt >= arrived) & (st["nfree"] > 0)
            if capped:
                admissible &= nxt < gate
            ta = np.where(admissible, arr[g, np.minimum(nxt, R - 1)], _INF)
            T = _t_tokens(st["tt"], grid, np.maximum(d, 1)) + st["sigma"] * d
            kappa = st["kappa"]
            a2 = kappa * d / 2.0
            b = T + kappa * K - a2
            gap = ta - t
            with np.errstate(all="ignore"):
                disc = np.sqrt(b * b + 4 * a2 * np.maximum(gap, 0))
                root = np.where(a2 > 0, (-b + disc) / (2 * a2), gap / b)
            m_arr = np.where(np.isfinite(ta), np.maximum(np.ceil(root - 1e-9), 1), BIG)
            m_arr = np.minimum(m_arr, BIG // 4).astype(np.int64)
            # lookahead: the second step that starts after the arrival takes it; a request that has arrived
            # but after the step before this one started is taken by the next step
            la = st["la"]
            m_arr = np.where(la & np.isfinite(ta), m_arr + 1, m_arr)
            m_arr = np.where(la & (nxt < arrived) & (st["nfree"] > 0), 1, m_arr)
            mm = np.minimum(mm, m_arr)
            m = np.where(jump, np.maximum(mm, 1), 1)
        dt = np.where(work, m * (_t_tokens(st["tt"], grid, np.maximum(N, 1)) + st["sigma"] * S_)
                      + st["kappa"] * (m * K + d * m * (m - 1) / 2.0) + st["pi"] * pairs, 0.0)
        # nothing to run: wait for the next arrival (a preempted sequence always fits an empty pool)
        stuck = active & ~work & (nxt == nxt_before)  # (admitting a prefilled request is progress)
        if stuck.any():
            later = stuck & (arrived < R)
            ll = np.nonzero(later)[0]
            t[ll] = np.maximum(t[ll], arr[g[ll], np.minimum(arrived[ll], R - 1)])
            if (stuck & ~later & (nrun == 0)).any():
                raise OptionError("the simulation cannot make progress: a request does not fit the KV pool")
        in_sys = arrived - st["nfin"]
        occ_now = (kv + d * m + ptok) / cap
        st["occ_int"] += dt * (kv + d * (m + 1) / 2.0 + ptok) / cap
        np.maximum(st["occ_peak"], occ_now, out=st["occ_peak"])
        st["sys_int"] += dt * in_sys
        # lookahead: when the last step of this run started (a run of m decode steps: its last is the longest)
        last = np.where(m > 1, _t_tokens(st["tt"], grid, np.maximum(N, 1)) + st["sigma"] * S_
                        + st["kappa"] * (K + d * (m - 1)), dt)
        st["tprev"] = np.where(work, t + dt - last, np.nan)
        t += dt
        # apply the step(s): decoders advance with the clock
        tau += np.where(d > 0, m, 0)
        kv += d * m + ptok
        fin_rows = []
        for rows, ss, c in chunks:
            pre[rows, ss] -= c
            c0[rows, ss] += c
            st["pres"][rows] -= c
            done = pre[rows, ss] == 0
            part = ~done
            pfkey[rows[part], ss[part]] = order[rows[part], ss[part]]
            rows, ss = rows[done], ss[done]
            if len(rows) == 0:
                continue
            npf[rows] -= 1
            pfs[rows] = -1
            g0[rows, ss] += 1
            newly = g0[rows, ss] == 1
            first[g[rows[newly]], sid[rows[newly], ss[newly]]] = t[rows[newly]]
            admitted.append((rows, ss))
        # sequences whose prompt is done (prefilled now or admitted prefilled): finished, or decoding
        for rows, ss in admitted:
            if len(rows) == 0:
                continue
            f = g0[rows, ss] >= olen[rows, ss]
            if f.any():
                fin_rows.append((rows[f], ss[f], c0[rows[f], ss[f]]))
            rows, ss = rows[~f], ss[~f]
            if len(rows) == 0:
                continue
            tr = tau[rows]
            c0[rows, ss] -= tr
            g0[rows, ss] -= tr
            fk = olen[rows, ss] - g0[rows, ss]
            fkey[rows, ss] = fk
            d_[rows] += 1
            st["sk"][rows] += c0[rows, ss] + 1
            st["fmin"][rows] = np.minimum(st["fmin"][rows], fk)
        # decoders that reached their output length
        due = st["fmin"] - tau <= 0
        # (rows that used few slots are scanned apart from the wide ones)
        narrow = st["hw"] <= 32
        for frows in (np.nonzero(due & narrow)[0], np.nonzero(due & ~narrow)[0]):
            if len(frows) == 0:
                continue
            sub = fkey[frows, :int(st["hw"][frows].max())]
            fm = sub <= tau[frows, None]
            rr, ss = np.nonzero(fm)
            rows = frows[rr]
            ctx = c0[rows, ss] + tau[rows]
            fin_rows.append((rows, ss, ctx))
            fkey[rows, ss] = BIG
            # (counted over these rows only: rr indexes frows)
            d_[frows] -= np.bincount(rr, minlength=len(frows))
            st["sk"][frows] -= np.bincount(rr, c0[rows, ss] + 1, minlength=len(frows)).astype(np.int64)  # exact below 2**53
            st["fmin"][frows] = np.where(fm, BIG, sub).min(1)
        if fin_rows:
            rows = np.concatenate([f[0] for f in fin_rows])
            ss = np.concatenate([f[1] for f in fin_rows])
            ctx = np.concatenate([f[2] for f in fin_rows])
            finish[g[rows], sid[rows, ss]] = t[rows]
            kv -= np.bincount(rows, ctx, minlength=n).astype(np.int64)
            st["resv"] -= np.bincount(rows, st["rsv"][rows, ss], minlength=n).astype(np.int64)
            st["rsv"][rows, ss] = 0
            cnt = np.bincount(rows, minlength=n)
            st["nfin"] += cnt
            nrun -= cnt
            sid[rows, ss] = -1
            c0[rows, ss] = 0
            g0[rows, ss] = 0
            # push the freed slots: the k-th freed slot of a row goes k places above its stack's top
            o = np.argsort(rows, kind="stable")
            rows, ss = rows[o], ss[o]
            starts = np.cumsum(cnt) - cnt
            rank = np.arange(len(rows)) - starts[rows]
            nfree = st["nfree"]
            st["fstack"][rows, nfree[rows] + rank] = ss
            nfree += cnt
        if series is not None:
            t_full[g] = t
            occ_full[:] = 0.0
            occ_full[g] = occ_now
            series.append((t_full.copy(), occ_full.copy()))
    else:
        raise OptionError(f"the simulation did not finish in {max_iterations} steps")
    flush(np.arange(len(st["g"])))

    sent = client_sends(arr, np.where(np.isnan(rel_rej), finish, rel_rej), lim_all) if capped else arr
    ttft = first - sent
    e2e = finish - sent
    with np.errstate(all="ignore"):
        tpot = np.where(out > 1, (finish - first) / (out - 1), np.nan)
        end = np.nanmax(np.where(np.isnan(finish), -_INF, finish), axis=1)
        dur = end - t0_all
        produced = np.where(np.isnan(finish), 0, out).sum(1)
        tps = np.where(dur > 0, produced / dur, np.nan)
        occ_mean = np.where(dur > 0, done_acc["occ_int"] / dur, np.nan)
        mean_sys = np.where(dur > 0, done_acc["sys_int"] / dur, np.nan)
    return Result(ttft, tpot, e2e, finish, tps, occ_mean, done_acc["occ_peak"], mean_sys, done_acc["preempt"],
                  rejected.sum(1), dur, steps, series)


def in_flight_caps(max_in_flight, C: int, R: int):
    """``simulate``'s ``max_in_flight`` as an int64 array (C,): a count for every configuration, or one per
    configuration (None: no cap), each at most ``R`` (a cap of R or more never binds); refused unless each is
    a whole number >= 1."""
    import numpy as np

    vals = [max_in_flight] * C if max_in_flight is None or np.isscalar(max_in_flight) else list(max_in_flight)
    if len(vals) != C:
        raise OptionError(f"max_in_flight: one cap per configuration ({C}) expected, got {len(vals)}")
    out = np.full(C, R, dtype=np.int64)
    for j, v in enumerate(vals):
        if v is None:
            continue
        if (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v)
                or not float(v).is_integer() or v < 1):
            raise OptionError(f"max_in_flight must be a whole number >= 1 (requests in flight), got {v!r}")
        out[j] = min(int(v), R)
    return out


def client_sends(arrivals, released, caps):
    """When a client that keeps at most ``caps`` requests in flight sends each one: request ``i`` (in arrival
    order) at ``max(arrival_i, T_(i − cap + 1))``, ``T_k`` the time the k-th of its requests ended (``released``:
    (C, R) end times in any order, nan for none). vLLM's ``vllm bench serve --max-concurrency``: each request's
    task waits on an ``asyncio.Semaphore(max_concurrency)`` before it sends and starts its clock
    (``limited_request_func``; the request function's ``st = time.perf_counter()``; vLLM 0.18.0's
    ``vllm/benchmarks/serve.py`` and ``lib/endpoint_request_func.py``), the semaphore's waiters served first come
    first served."""
    import numpy as np

    arr = np.asarray(arrivals, dtype=np.float64)
    R = arr.shape[1]
    ends = np.sort(np.asarray(released, dtype=np.float64), axis=1)  # (nan last)
    k = np.arange(R)[None, :] - np.asarray(caps, dtype=np.int64)[:, None]
    gate = np.where(k >= 0, np.take_along_axis(ends, np.clip(k, 0, R - 1), axis=1), -_INF)
    return np.maximum(arr, gate)


def simulate_disaggregated(prefill_cost: StepCost, prefill_sched: Scheduler, decode_cost: StepCost,
                           decode_sched: Scheduler, arrivals, input_lens, output_lens, *, kv_transfer_s) -> Result:
    """A prefill pool then a decode pool. ``kv_transfer_s``: seconds to move one request's KV
    (array (R,) or a scalar) from the prefill to the decode GPUs."""
    import numpy as np

    arr = np.atleast_2d(np.asarray(arrivals, dtype=np.float64))
    R = arr.shape[1]
    inp = _rows(input_lens, 1, R, np.int64)[0]
    out = _rows(output_lens, 1, R, np.int64)[0]
    p = simulate([prefill_cost], [prefill_sched], arr, inp, np.ones(R, dtype=np.int64))
    ready = p.finish_s[0] + np.broadcast_to(np.asarray(kv_transfer_s, dtype=np.float64), (R,))
    ok = ~np.isnan(ready)
    order_ = np.argsort(np.where(ok, ready, _INF), kind="stable")
    ready_sorted = np.where(ok, ready, np.nanmax(np.where(ok, ready, -_INF)) if ok.any() else 0.0)[order_]
    d = simulate([decode_cost], [decode_sched], ready_sorted, inp[order_], out[order_],
                 prefilled=np.ones(R, dtype=bool))
    back = np.empty(R, dtype=np.int64)
    back[order_] = np.arange(R)
    finish = d.finish_s[:, back]
    first = ready[None, :]
    finish = np.where(ok[None, :], finish, np.nan)
    ttft = first - arr
    e2e = finish - arr
    with np.errstate(all="ignore"):
        tpot = np.where(out[None, :] > 1, (finish - first) / (out[None, :] - 1), np.nan)
    r = Result(ttft, tpot, e2e, finish, d.output_tokens_per_s, d.kv_mean_occupancy, d.kv_peak_occupancy,
               d.mean_in_system, d.preemptions + p.preemptions, d.rejected + p.rejected, d.duration_s,
               p.steps + d.steps)
    r.extra = {"prefill": p, "decode": d}
    return r
