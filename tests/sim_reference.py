"""The serving simulation as first written: every configuration and every sequence slot advanced in
lock-step, each step's state recomputed from the slot arrays. Slow (every iteration touches
configurations x max_num_seqs slots) but plain; kept as the oracle that hardware.simulate.simulate (which
compacts finished configurations and keeps per-configuration sums instead of rescanning slots) must
equal exactly."""

from __future__ import annotations

from typing import Sequence

from planner.analysis.errors import OptionError
from planner.hardware.simulate import Result, Scheduler, StepCost, _rows, client_sends, in_flight_caps

_INF = float("inf")


def simulate_reference(costs: Sequence[StepCost], scheds: Sequence[Scheduler], arrivals, input_lens, output_lens, *,
             prefilled=None, record_kv: bool = False, max_iterations: int = 10_000_000,
             max_in_flight=None) -> Result:
    """Simulate ``C = len(costs)`` configurations on their requests (arrays (R,) shared or (C, R)).

    ``prefilled`` (bool (R,) or (C, R)): requests that arrive with their prompt's KV already made
    (the decode pool of a disaggregated deployment): they take ``input_len`` tokens of the pool on
    admission, no budget, and have emitted their first token. ``max_in_flight``: the client's cap on
    requests in flight (as ``simulate``'s): request i reaches the engine once i − cap + 1 requests have ended."""
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
    sigma = np.array([c.sigma_s for c in costs])
    pi = np.array([c.pi_s for c in costs])
    seqs = np.array([s.max_num_seqs for s in scheds], dtype=np.int64)
    budget0 = np.array([s.max_num_batched_tokens for s in scheds], dtype=np.int64)
    pff = np.array([s.prefill_first for s in scheds], dtype=bool)
    la = np.array([s.lookahead for s in scheds], dtype=bool)
    whole = np.array([s.reserve_whole for s in scheds], dtype=bool)
    tprev = np.full(C, np.nan)  # lookahead: when the step before this one started (nan: idle before it)
    cap = np.array([s.kv_capacity_tokens for s in scheds], dtype=np.int64)
    lim = in_flight_caps(max_in_flight, C, R)
    released = np.full((C, R), np.nan)  # when each request ended (finished, or passed over as rejected)
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
    rsv = np.zeros((C, S), dtype=np.int64)  # reserve_whole: the slot's whole sequence (prompt + output − 1)
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
    fin_start = np.zeros(C, dtype=np.int64)  # n_finished when the last iteration started

    def skip_rejected():
        nonlocal nxt
        while True:
            m = nxt < R
            rj = np.zeros(C, dtype=bool)
            rj[m] = rejected[ci[m], nxt[m]]
            if not rj.any():
                return
            released[ci[rj], nxt[rj]] = t[rj]
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
        # the client's cap: request i is sent once i − cap + 1 requests have ended
        fin_prev, fin_start = fin_start, n_finished.copy()
        arrived = np.minimum(arrived, n_finished + lim)
        # lookahead: while sequences run, the step admits the requests that had arrived when the step before
        # it started (and that the client had sent by then)
        busy = la & (nrun > 0) & ~np.isnan(tprev)
        adm = np.where(busy, np.minimum(np.clip(np.searchsorted(flat, np.where(busy, tprev, t) - arr.min() + span * ci,
                                                                side="right") - ci * R, 0, R), arrived), arrived)
        adm = np.where(busy, np.minimum(adm, fin_prev + lim), adm)
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
        budget = np.where(active, budget0 - np.where(pff, 0, d), 0)
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
            can = (nxt < adm) & free_slot.any(1) & ~hold
            if not can.any():
                break
            rows = ci[can]
            r = nxt[rows]
            pf = pref[rows, r]
            li = inp[rows, r]
            # reserve_whole: the whole sequence beside the running sequences' whole sequences
            need_whole = li + out[rows, r] - 1
            room_whole = cap[rows] - np.where(sid[rows] >= 0, rsv[rows], 0).sum(1)
            ok = (free_kv[rows] >= li) & (~whole[rows] | (room_whole >= need_whole)) & (pf | (budget[rows] > 0))
            rows, r, pf, li = rows[ok], r[ok], pf[ok], li[ok]
            if len(rows) == 0:
                break
            ss = free_slot[rows].argmax(1)
            rsv[rows, ss] = np.where(whole[rows], li + out[rows, r] - 1, 0)
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
        # prefill first: a step with prompt tokens runs no decode
        idle = pff & (ptok > 0)
        d = np.where(idle, 0, d)
        K = np.where(idle, 0, K)
        dec = dec & ~idle[:, None]
        N = d + ptok
        S_ = d + (chunk > 0).sum(1)  # the sequences the step runs: decoding, or with a prompt chunk
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
            admissible = (nxt < R) & (nxt >= arrived) & ((slot_ok & (sid < 0)).any(1)) & (nxt < n_finished + lim)
            ta = np.where(admissible, arr[ci, np.minimum(nxt, R - 1)], _INF)
            T = t_tokens(np.maximum(d, 1)) + sigma * d
            a2 = kappa * d / 2.0
            b = T + kappa * K - a2
            gap = ta - t
            with np.errstate(all="ignore"):
                disc = np.sqrt(b * b + 4 * a2 * np.maximum(gap, 0))
                root = np.where(a2 > 0, (-b + disc) / (2 * a2), gap / b)
            m_arr = np.where(np.isfinite(ta), np.maximum(np.ceil(root - 1e-9), 1), np.iinfo(np.int64).max)
            m_arr = np.minimum(m_arr, np.iinfo(np.int64).max // 4).astype(np.int64)
            # lookahead: the second step that starts after the arrival takes it; one that has arrived but after
            # the step before this one started is taken by the next step
            m_arr = np.where(la & np.isfinite(ta), m_arr + 1, m_arr)
            m_arr = np.where(la & (nxt < arrived) & ((slot_ok & (sid < 0)).any(1)), 1, m_arr)
            mm = np.minimum(mm, m_arr)
            m = np.where(jump, np.maximum(mm, 1), 1)
        dt = np.where(work, m * (t_tokens(np.maximum(N, 1)) + sigma * S_) + kappa * (m * K + d * m * (m - 1) / 2.0)
                      + pi * pairs, 0.0)
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
        last = np.where(m > 1, t_tokens(np.maximum(N, 1)) + sigma * S_ + kappa * (K + d * (m - 1)), dt)
        tprev = np.where(work, t + dt - last, np.nan)
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
            released[rr, sid[rr, ss]] = t[rr]
            n_finished += fin.sum(1)
            sid[fin] = -1
            rsv[fin] = 0
            ctx[fin] = 0
            gen[fin] = 0
        if series is not None:
            series.append((t.copy(), occ_now.copy()))
    else:
        raise OptionError(f"the simulation did not finish in {max_iterations} steps")

    sent = client_sends(arr, released, lim)
    ttft = first - sent
    e2e = finish - sent
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
