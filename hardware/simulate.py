"""Serving under load: a request-level simulation of continuous batching, many configurations at once.

What it models (one engine replica per configuration; vLLM V1's scheduler rules):

- requests arrive at given times (Poisson by default, ``poisson_arrivals``) with input and output
  lengths drawn from distributions or read from a file of real lengths;
- every step the scheduler serves, in order: each running sequence that is decoding (one token; its
  KV grows by one token), then sequences whose prompt is partly prefilled (chunked prefill, oldest
  first), then new requests from the queue, first come first served, while the step's token budget
  (``max_num_batched_tokens``), the sequence limit (``max_num_seqs``) and the KV pool
  (``kv_capacity_tokens``) allow; a prompt larger than the budget left is prefilled in chunks;
- when the KV pool cannot take the decode tokens of a step (or is full of half-prefilled prompts), the
  most recently admitted sequence is preempted: its KV is freed and it is recomputed later (prompt and
  generated tokens prefilled again; no new request is admitted while a recompute waits, nor in a step
  that preempted), as vLLM's default ``recompute`` preemption does. Sequences keep their admission
  order, so the oldest always makes progress;
- a request whose prompt plus output cannot fit in the pool at all is rejected (counted, never run);
- a step of ``N`` new tokens, ``K`` cached tokens read by its decodes and ``P`` (query, key) pairs of
  its prefill chunks takes ``t_tokens(N) + kappa_s·K + pi_s·P`` seconds (``StepCost``), a form whose
  three terms are taken from the one step model (``hardware.deploy.step_cost``): the weight- and
  token-bound part of the step tabulated over ``N``, the KV read per cached token and the attention
  work per pair;
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
    """Step time of one replica: ``interp(tokens_grid, t_tokens_s)(N) + kappa_s·K + pi_s·P``."""

    tokens_grid: tuple[int, ...]  # increasing, starting at 1
    t_tokens_s: tuple[float, ...]  # seconds of a step of N new tokens, at each grid point
    kappa_s: float  # seconds per cached token a decode reads
    pi_s: float  # seconds per (query, key) pair of a prefill chunk

    def time_s(self, tokens: int, kv_read: int = 0, pairs: int = 0) -> float:
        import numpy as np

        return float(np.interp(tokens, self.tokens_grid, self.t_tokens_s)) + self.kappa_s * kv_read + self.pi_s * pairs


@dataclass(frozen=True)
class Scheduler:
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int

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
        import numpy as np

        a = getattr(self, what)
        with np.errstate(all="ignore"):
            ok = ~np.all(np.isnan(a), axis=1)
            out = np.full((a.shape[0], len(qs)), np.nan)
            if ok.any():
                out[ok] = np.nanpercentile(a[ok], qs, axis=1).T
        return out


# ---- workloads -----------------------------------------------------------------------------------


def poisson_arrivals(rate_per_s: float, n: int, seed: int = 0, configs: int = 1):
    """Arrival times (configs, n) of a Poisson process of ``rate_per_s`` requests/s, from t=0."""
    import numpy as np

    if not rate_per_s > 0:
        raise OptionError(f"--rate must be > 0 requests/s, got {rate_per_s}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate_per_s, size=(configs, n))
    gaps[:, 0] = 0.0
    return np.cumsum(gaps, axis=1)


def draw_lengths(spec: str | int, n: int, seed: int = 0, what: str = "length"):
    """``n`` lengths from ``spec``: an int (fixed), ``"const:L"``, ``"uniform:A:B"``, ``"normal:MEAN:SD"``
    (rounded, at least 1) or ``"lognormal:MEAN:SD"`` (of the length itself)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if isinstance(spec, (int, np.integer)):
        if spec < 1:
            raise OptionError(f"{what} must be >= 1 token, got {spec}")
        return np.full(n, int(spec), dtype=np.int64)
    parts = str(spec).split(":")
    try:
        kind, args = parts[0], [float(x) for x in parts[1:]]
    except ValueError:
        raise OptionError(f"{what} '{spec}' is not a distribution",
                          "use N, const:N, uniform:A:B, normal:MEAN:SD or lognormal:MEAN:SD") from None
    if kind == "const" and len(args) == 1:
        out = np.full(n, args[0])
    elif kind == "uniform" and len(args) == 2 and args[0] <= args[1]:
        out = rng.integers(int(args[0]), int(args[1]) + 1, size=n)
    elif kind == "normal" and len(args) == 2 and args[1] >= 0:
        out = rng.normal(args[0], args[1], size=n)
    elif kind == "lognormal" and len(args) == 2 and args[0] > 0 and args[1] >= 0:
        sigma2 = np.log(1 + (args[1] / args[0]) ** 2)
        out = rng.lognormal(np.log(args[0]) - sigma2 / 2, np.sqrt(sigma2), size=n)
    else:
        raise OptionError(f"{what} '{spec}' is not a distribution",
                          "use N, const:N, uniform:A:B, normal:MEAN:SD or lognormal:MEAN:SD")
    if not np.all(np.isfinite(out)):
        raise OptionError(f"{what} '{spec}' gives non-finite lengths")
    return np.maximum(1, np.rint(out)).astype(np.int64)


def read_lengths_file(path, limit_bytes: int = 64 << 20):
    """(input, output) length arrays from a file: CSV or whitespace lines of two integers, or a JSON
    list of ``{"input_len": .., "output_len": ..}`` objects. A header line is skipped."""
    import json

    import numpy as np

    from pathlib import Path

    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(limit_bytes + 1)
    except OSError as exc:
        raise OptionError(f"cannot read lengths file {path}: {exc.strerror or exc}") from None
    if len(raw) > limit_bytes:
        raise OptionError(f"lengths file {path} is larger than {limit_bytes >> 20} MiB")
    text = raw.decode("utf-8", errors="replace")
    pairs: list[tuple[int, int]] = []
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
            pairs = [(int(d["input_len"]), int(d["output_len"])) for d in data]
        except (ValueError, KeyError, TypeError):
            raise OptionError(f"lengths file {path}: a JSON list of {{\"input_len\", \"output_len\"}} objects expected") from None
    else:
        for i, line in enumerate(text.splitlines()):
            f = line.replace(",", " ").split()
            if not f or f[0].startswith("#"):
                continue
            try:
                pairs.append((int(f[0]), int(f[1])))
            except (ValueError, IndexError):
                if i == 0:
                    continue  # a header
                raise OptionError(f"lengths file {path}, line {i + 1}: two integers expected, got {line[:60]!r}") from None
    if not pairs:
        raise OptionError(f"lengths file {path} holds no lengths")
    a = np.array(pairs, dtype=np.int64)
    if (a < 1).any():
        raise OptionError(f"lengths file {path}: every length must be >= 1 token")
    return a[:, 0], a[:, 1]


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


def simulate(costs: Sequence[StepCost], scheds: Sequence[Scheduler], arrivals, input_lens, output_lens, *,
             prefilled=None, record_kv: bool = False, max_iterations: int = 10_000_000) -> Result:
    """Simulate ``C = len(costs)`` configurations on their requests (arrays (R,) shared or (C, R)).

    ``prefilled`` (bool (R,) or (C, R)): requests that arrive with their prompt's KV already made
    (the decode pool of a disaggregated deployment): they take ``input_len`` tokens of the pool on
    admission, no budget, and have emitted their first token."""
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
    tt = np.array([np.interp(grid, c.tokens_grid, c.t_tokens_s) for c in costs], dtype=np.float64)  # (C, G)
    kappa = np.array([c.kappa_s for c in costs])
    pi = np.array([c.pi_s for c in costs])
    seqs = np.array([s.max_num_seqs for s in scheds], dtype=np.int64)
    budget0 = np.array([s.max_num_batched_tokens for s in scheds], dtype=np.int64)
    cap = np.array([s.kv_capacity_tokens for s in scheds], dtype=np.int64)
    S = int(seqs.max())
    ci = np.arange(C)
    G = len(grid)

    def t_tokens(n):
        n = np.clip(n.astype(np.float64), grid[0], grid[-1])
        j = np.clip(np.searchsorted(grid, n, side="right") - 1, 0, G - 2)
        x0, x1 = grid[j], grid[j + 1]
        w = (n - x0) / (x1 - x0)
        return tt[ci, j] * (1 - w) + tt[ci, j + 1] * w

    # a request whose whole sequence cannot fit in the pool is rejected up front
    need = inp + out - 1
    rejected = need > cap[:, None]
    ttft = np.full((C, R), np.nan)
    first = np.full((C, R), np.nan)
    finish = np.full((C, R), np.nan)
    # flat sorted arrivals for a vectorised per-row searchsorted
    span = float(arr.max() - arr.min()) + 1.0
    flat = (arr - arr.min() + span * ci[:, None]).ravel()

    sid = np.full((C, S), -1, dtype=np.int64)
    pre = np.zeros((C, S), dtype=np.int64)  # prompt tokens still to prefill
    ctx = np.zeros((C, S), dtype=np.int64)  # tokens in KV
    gen = np.zeros((C, S), dtype=np.int64)  # tokens emitted
    order = np.zeros((C, S), dtype=np.int64)  # admission order: preemption takes the newest, prefill serves the oldest
    rec = np.zeros((C, S), dtype=bool)  # preempted, waiting for its recompute
    olen = np.zeros((C, S), dtype=np.int64)
    slot_ok = np.arange(S)[None, :] < seqs[:, None]
    nxt = np.zeros(C, dtype=np.int64)
    counter = 0
    t = arr[:, 0].copy()
    t0 = t.copy()
    occ_int = np.zeros(C)
    occ_peak = np.zeros(C)
    sys_int = np.zeros(C)
    n_finished = np.zeros(C, dtype=np.int64)
    preempt = np.zeros(C, dtype=np.int64)
    series = [] if record_kv else None
    steps = 0

    def skip_rejected():
        nonlocal nxt
        while True:
            m = nxt < R
            rj = np.zeros(C, dtype=bool)
            rj[m] = rejected[ci[m], nxt[m]]
            if not rj.any():
                return
            n_finished[rj] += 1
            nxt = nxt + rj

    while steps < max_iterations:
        skip_rejected()
        running = sid >= 0
        nrun = running.sum(1)
        active = (nxt < R) | (nrun > 0)
        if not active.any():
            break
        steps += 1
        arrived = np.searchsorted(flat, t - arr.min() + span * ci, side="right") - ci * R
        arrived = np.clip(arrived, 0, R)
        # idle: jump to the next arrival
        idle = active & (nrun == 0) & (arrived <= nxt) & (nxt < R)
        if idle.any():
            t[idle] = arr[ci[idle], nxt[idle]]
            arrived[idle] = np.clip(np.searchsorted(flat, t[idle] - arr.min() + span * ci[idle], side="right")
                                    - ci[idle] * R, 0, R)
        # the pool: tokens in KV plus the prompt tokens reserved by sequences being prefilled
        kv_used = ctx.sum(1)
        committed = kv_used + np.where(running & ~rec, pre, 0).sum(1)
        preempt_before = preempt.copy()
        nxt_before = nxt.copy()
        # 1. decodes, preempting the newest sequences while the pool cannot take their tokens
        dec = running & (pre == 0)
        while True:
            d = dec.sum(1)
            over = active & (committed + d > cap)
            if not over.any():
                break
            holds = running & ~rec
            key = np.where(holds, order, -1)
            v = key.argmax(1)
            rows = ci[over]
            vs = v[over]
            ok = holds[rows, vs]
            rows, vs = rows[ok], vs[ok]
            if len(rows) == 0:
                break
            was_dec = pre[rows, vs] == 0
            committed[rows] -= ctx[rows, vs] + pre[rows, vs]
            kv_used[rows] -= ctx[rows, vs]
            # recompute: every token in KV plus the newest emitted one (a decoding sequence), or the
            # whole prompt again (a sequence mid-prefill)
            pre[rows, vs] = np.where(was_dec, ctx[rows, vs] + 1, ctx[rows, vs] + pre[rows, vs])
            ctx[rows, vs] = 0
            rec[rows, vs] = True
            dec[rows, vs] = False
            preempt[rows] += 1
        d = dec.sum(1)
        K = np.where(dec, ctx + 1, 0).sum(1)
        budget = np.where(active, budget0 - d, 0)
        free_kv = cap - committed - d
        chunk = np.zeros((C, S), dtype=np.int64)
        pairs = np.zeros(C, dtype=np.float64)
        # preempted sequences come back (oldest first) when the pool can hold their recompute
        did_preempt = preempt > preempt_before
        while True:
            cand = running & rec
            key = np.where(cand, order, np.iinfo(np.int64).max)
            s = key.argmin(1)
            need_ = pre[ci, s]
            can = cand.any(1) & ~did_preempt & (free_kv >= need_)
            if not can.any():
                break
            rows, ss = ci[can], s[can]
            rec[rows, ss] = False
            free_kv[rows] -= pre[rows, ss]
        # 2. sequences mid-prefill (oldest first; their KV is reserved), 3. new requests (first come, first
        # served) whose whole prompt the pool can reserve
        served = np.zeros((C, S), dtype=bool)
        while True:
            cand = running & ~rec & (pre > 0) & ~served
            can = cand.any(1) & (budget > 0)
            if not can.any():
                break
            key = np.where(cand, order, np.iinfo(np.int64).max)
            s = key.argmin(1)
            rows = ci[can]
            ss = s[can]
            c = np.minimum(pre[rows, ss], budget[rows])
            chunk[rows, ss] = c
            served[rows, ss] = True
            pairs[rows] += c * ctx[rows, ss] + c * (c + 1) / 2
            budget[rows] -= c
        # new requests wait while a preempted sequence waits for its recompute, and in a step that
        # preempted (vLLM's scheduler schedules no waiting request then)
        hold = (running & rec).any(1) | did_preempt
        while True:
            free_slot = slot_ok & (sid < 0)
            can = (nxt < arrived) & free_slot.any(1) & ~hold
            if not can.any():
                break
            rows = ci[can]
            r = nxt[rows]
            pf = pref[rows, r]
            li = inp[rows, r]
            ok = (free_kv[rows] >= li) & (pf | (budget[rows] > 0))
            rows, r, pf, li = rows[ok], r[ok], pf[ok], li[ok]
            if len(rows) == 0:
                break
            ss = free_slot[rows].argmax(1)
            sid[rows, ss] = r
            rec[rows, ss] = False
            olen[rows, ss] = out[rows, r]
            order[rows, ss] = counter + np.arange(len(rows))
            counter += len(rows)
            nxt[rows] += 1
            c = np.where(pf, 0, np.minimum(li, budget[rows]))
            pre[rows, ss] = np.where(pf, 0, li)
            ctx[rows, ss] = np.where(pf, li, 0)
            gen[rows, ss] = np.where(pf, 1, 0)
            first[rows[pf], r[pf]] = t[rows[pf]]
            chunk[rows, ss] = c
            served[rows, ss] = True
            pairs[rows] += c * (c + 1) / 2
            budget[rows] -= c
            free_kv[rows] -= li
            kv_used[rows] += np.where(pf, li, 0)
            running = sid >= 0
        ptok = chunk.sum(1)
        N = d + ptok
        work = active & (N > 0)
        # decode-only runs: jump to the next event
        m = np.ones(C, dtype=np.int64)
        # (a waiting or preempted request blocked by the pool stays blocked until a sequence finishes)
        jump = work & (ptok == 0) & (d > 0) & ~did_preempt
        if jump.any():
            rem = np.where(dec, olen - gen, np.iinfo(np.int64).max).min(1)
            m_fin = np.maximum(rem, 1)
            room = free_kv + d  # what the pool has left for this run's decode tokens
            m_kv = np.maximum(room // np.maximum(d, 1), 1)
            mm = np.minimum(m_fin, m_kv)
            # an arrival that could be admitted ends the run at the first step starting after it
            # (one already waiting is blocked by the pool: only a finishing sequence changes that)
            admissible = (nxt < R) & (nxt >= arrived) & ((slot_ok & (sid < 0)).any(1))
            ta = np.where(admissible, arr[ci, np.minimum(nxt, R - 1)], _INF)
            T = t_tokens(np.maximum(d, 1))
            a2 = kappa * d / 2.0
            b = T + kappa * K - a2
            gap = ta - t
            with np.errstate(all="ignore"):
                disc = np.sqrt(b * b + 4 * a2 * np.maximum(gap, 0))
                root = np.where(a2 > 0, (-b + disc) / (2 * a2), gap / b)
            m_arr = np.where(np.isfinite(ta), np.maximum(np.ceil(root - 1e-9), 1), np.iinfo(np.int64).max)
            m_arr = np.minimum(m_arr, np.iinfo(np.int64).max // 4).astype(np.int64)
            mm = np.minimum(mm, m_arr)
            m = np.where(jump, np.maximum(mm, 1), 1)
        dt = np.where(work, m * t_tokens(np.maximum(N, 1)) + kappa * (m * K + d * m * (m - 1) / 2.0) + pi * pairs, 0.0)
        # nothing to run: wait for the next arrival (a preempted sequence always fits an empty pool)
        stuck = active & ~work & (nxt == nxt_before)  # (admitting a prefilled request is progress)
        if stuck.any():
            later = stuck & (arrived < R)
            t[later] = np.maximum(t[later], arr[ci[later], np.minimum(arrived[later], R - 1)])
            if (stuck & ~later & (nrun == 0)).any():
                raise OptionError("the simulation cannot make progress: a request does not fit the KV pool")
        in_sys = arrived - n_finished
        occ_now = (kv_used + d * m + ptok) / cap
        occ_int += dt * (kv_used + d * (m + 1) / 2.0 + ptok) / cap
        occ_peak = np.maximum(occ_peak, occ_now)
        sys_int += dt * in_sys
        t = t + dt
        # apply the step(s)
        ctx += np.where(dec, m[:, None], 0) + chunk
        gen += np.where(dec, m[:, None], 0)
        pre -= chunk
        done_pref = (chunk > 0) & (pre == 0)
        gen += done_pref
        newly = done_pref & (gen == 1)
        if newly.any():
            rr, ss = np.nonzero(newly)
            first[rr, sid[rr, ss]] = t[rr]
        fin = running & (gen >= olen) & (pre == 0)
        if fin.any():
            rr, ss = np.nonzero(fin)
            finish[rr, sid[rr, ss]] = t[rr]
            n_finished += fin.sum(1)
            sid[fin] = -1
            ctx[fin] = 0
            gen[fin] = 0
        if series is not None:
            series.append((t.copy(), occ_now.copy()))
    else:
        raise OptionError(f"the simulation did not finish in {max_iterations} steps")

    ttft = first - arr
    e2e = finish - arr
    with np.errstate(all="ignore"):
        tpot = np.where(out > 1, (finish - first) / (out - 1), np.nan)
        end = np.nanmax(np.where(np.isnan(finish), -_INF, finish), axis=1)
        dur = end - t0
        produced = np.where(np.isnan(finish), 0, out).sum(1)
        tps = np.where(dur > 0, produced / dur, np.nan)
        occ_mean = np.where(dur > 0, occ_int / dur, np.nan)
        mean_sys = np.where(dur > 0, sys_int / dur, np.nan)
    return Result(ttft, tpot, e2e, finish, tps, occ_mean, occ_peak, mean_sys, preempt,
                  rejected.sum(1), dur, steps, series)


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
