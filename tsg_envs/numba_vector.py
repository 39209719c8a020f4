"""The native vector environment's step and day arrangement as numba calls over every row.

Imported only when a :class:`~tsg_envs.vector.ScreeningVectorEnv` made with the numba kernel
(``TSG_ENVS_KERNEL``, :mod:`tsg_envs.kernel`) first steps or resets: importing :mod:`tsg_envs`
never imports numba. Compiled once per machine and cached, as :mod:`tsg_envs.numba_step`.

:func:`check_rows` then :func:`advance_rows` are
:meth:`ScreeningVectorEnv.step <tsg_envs.vector.ScreeningVectorEnv.step>` when no sub-environment
autoresets (every step but one a day): the action check of every ``invalid_action`` mode and the
α-projection, then :meth:`DayBatch.step <tsg_envs.dynamics.DayBatch.step>` in either queue mode
and the observation (two calls, so that sampled mode draws its uniforms only once every
proposal has passed). Their loops run across the rows, so that they vectorise: the queues,
backlog, waits and executed actions are row-last ((R, N), (T, N); ``DayBatch.fused_state``),
and each row's sums still add its terms one after another in their order; the rare rows that
clip, renormalise to nothing, break their polytope or could cross it are then done one by one.
The numpy vector step is
the reference; this one makes the same decisions with the same elementwise operations, but sums
its small products one term after another where numpy's batched products (BLAS, ``einsum``) sum
in their own order, so the floats agree to rounding (``tests/test_vector_kernel.py``: relative
1e-12, every discrete outcome equal), not bit for bit. Anything unusual (a non-finite or huge
entry, a proposal ``"raise"`` refuses, a day that is over) changes nothing and is handed back to
the numpy path, which raises or handles it as always.

:func:`arrange_days` writes reset days into :class:`~tsg_envs.dynamics.DayBatch`'s arrays from
the arrival times and their sort order: the risk levels from their uniforms, the gather, the
clip to the day and the gaps, exactly (comparisons and one subtraction each: bit for bit the
numpy reset's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tsg_envs.numba_step import cached_jit, entry_point
from tsg_envs.polytope import ALPHA_SHRINK, FEASIBILITY_TOL

__all__ = ["advance_rows", "advance_rows_unchecked", "arrange_days", "check_rows",
           "check_rows_unchecked", "FALLBACK", "OK", "PROJECT", "PENALIZE", "RAISE"]

_TOL = FEASIBILITY_TOL
_TOL_REPROJECT = FEASIBILITY_TOL - 1e-12
_HUGE = 1e150  # as the numpy check: beyond it products could overflow (its own path)

#: ``invalid_action`` codes.
PROJECT, RAISE, PENALIZE = 0, 1, 2
#: Return codes: stepped, or nothing changed and the numpy path must take the step.
OK, FALLBACK = 0, 1

@cached_jit("float64(float64[:, ::1], int64, int64, float64[:, ::1], float64[:, ::1], "
            "float64[:, ::1])", error_model="numpy")
def _excess(e: np.ndarray, i: int, c: int, coef: np.ndarray, b_risk: np.ndarray,
            efficacy: np.ndarray) -> float:
    """Max over methods of a_m · e - b_m for category ``c``, of column ``i`` of e (T, N)."""
    t, m = efficacy.shape
    worst = -np.inf
    for mm in range(m):
        s = 0.0
        for j in range(t):
            s += efficacy[j, mm] * e[j, i]
        ex = coef[c, mm] * s - b_risk[c, mm]
        if ex > worst:
            worst = ex
    return worst


@cached_jit("void(float64[:, ::1], int64, int64, float64[:, ::1], float64[:, ::1], "
            "float64[:, ::1], float64[:, ::1])", error_model="numpy")
def _project(e: np.ndarray, i: int, c: int, coef: np.ndarray, efficacy: np.ndarray,
             centers: np.ndarray, centre_slack: np.ndarray) -> None:
    """``ScreeningVectorEnv._project`` of column ``i`` of e (T, N) (on the simplex), in place."""
    t, m = efficacy.shape
    alpha = 1.0
    for mm in range(m):
        s = 0.0
        for j in range(t):
            s += efficacy[j, mm] * (e[j, i] - centers[c, j])
        ad = coef[c, mm] * s
        if ad > 0.0:
            ratio = centre_slack[c, mm] / ad
            if ratio < alpha:
                alpha = ratio
    if alpha < 1.0:
        alpha = alpha * (1.0 - ALPHA_SHRINK)
        if not alpha > 0.0:
            alpha = 0.0
        for j in range(t):
            y0 = centers[c, j]
            e[j, i] = y0 + alpha * (e[j, i] - y0)


@cached_jit("void(float64[:, ::1], int64, int64, float64, float64, float64, float64, "
            "float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], "
            "float64[:, ::1], int64, float64, float64[:, ::1], float64[::1])",
            error_model="numpy")
def _special_row(a: np.ndarray, i: int, c: int, total: float, amin: float, rows: float,
                 viol: float, coef: np.ndarray, b_risk: np.ndarray, efficacy: np.ndarray,
                 row_scale: np.ndarray, centers: np.ndarray, centre_slack: np.ndarray,
                 mode: int, vp: float, e: np.ndarray, out_penalty: np.ndarray) -> None:
    """Row ``i``'s executed action (column ``i`` of e) and penalty, one entry at a time."""
    t = a.shape[1]
    dev = abs(total - 1.0)
    bad = viol > _TOL
    if amin >= 0.0:
        sums = total
        for j in range(t):
            e[j, i] = a[i, j]
    else:
        sums = 0.0
        for j in range(t):
            v = a[i, j] if a[i, j] > 0.0 else 0.0
            e[j, i] = v
            sums += v
    if sums <= 0.0:
        for j in range(t):
            e[j, i] = centers[c, j]
    else:
        for j in range(t):
            e[j, i] = e[j, i] / sums
    penalty = 0.0
    if bad and mode == PENALIZE:
        worst = _excess(e, i, c, coef, b_risk, efficacy)
        penalty = vp * (worst if worst > 0.0 else 0.0)
    out_penalty[i] = penalty
    project = bad and mode == PROJECT
    if not bad and (rows + row_scale[c] * dev * 2.0 > _TOL_REPROJECT or amin < 0.0):
        project = _excess(e, i, c, coef, b_risk, efficacy) > _TOL
    if project:
        _project(e, i, c, coef, efficacy, centers, centre_slack)


_CHECK_SIGNATURE = (
    "int64(float64[:, ::1], int64[::1], int64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], int64, float64, "
    "float64[::1], float64[:, ::1], float64[::1])"
)


@cached_jit(_CHECK_SIGNATURE, error_model="numpy")
def check_rows(
    a: np.ndarray,
    index: np.ndarray,
    cats: np.ndarray,
    coef: np.ndarray,
    b_risk: np.ndarray,
    efficacy: np.ndarray,
    row_scale: np.ndarray,
    centers: np.ndarray,
    centre_slack: np.ndarray,
    mode: int,
    vp: float,
    out_viol: np.ndarray,
    out_exec: np.ndarray,
    out_penalty: np.ndarray,
) -> int:
    """``ScreeningVectorEnv._check`` of every row; :data:`OK`, or :data:`FALLBACK`.

    Changes nothing but its outputs, so the caller can hand a :data:`FALLBACK` step (a
    non-finite or huge entry, a proposal ``"raise"`` refuses, a day over) to the numpy path.
    Each loop runs across the rows (row-last arrays, so it vectorises), every row's sums
    term by term in the order of its entries; the rows that clip, renormalise to nothing,
    break their polytope or could cross it after renormalising are then handled one by one.

    Args:
        a: proposals, (N, T).
        index: ``DayBatch``'s passenger index per row (N,).
        cats: ``DayBatch``'s categories, passenger major (P + 1, N).
        coef: risk row m of category c is ``coef[c, m] * efficacy[:, m]``, (C, M).
        b_risk: its right-hand side, (C, M).
        efficacy: E, (T, M).
        row_scale: largest |risk coefficient| of each category, (C,).
        centers: each category's interior point, (C, T).
        centre_slack: the slack of its risk rows there, (C, M).
        mode: the ``invalid_action`` code (:data:`PROJECT`, :data:`RAISE`, :data:`PENALIZE`).
        vp: the violation penalty per unit of excess (penalize mode).
        out_viol: each row's proposal violation.
        out_exec: the executed actions, team major (T, N).
        out_penalty: each row's penalty.

    Returns:
        :data:`OK`, or :data:`FALLBACK`.
    """
    n, t = a.shape
    m = coef.shape[1]
    p = cats.shape[0] - 1
    c = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = index[i]
        if k >= p:
            return FALLBACK  # a day is over or never started: numpy raises
        c[i] = cats[k, i]
    e = out_exec
    total = np.zeros(n)
    amin = np.full(n, np.inf)
    finite = True
    for i in range(n):  # the proposals, team major, into the executed actions' array
        for j in range(t):
            e[j, i] = a[i, j]
    for j in range(t):
        for i in range(n):
            v = e[j, i]
            finite &= abs(v) <= _HUGE  # NaN, inf or huge: the numpy path's business
            total[i] += v
            amin[i] = v if v < amin[i] else amin[i]
    if not finite:
        return FALLBACK
    rows = np.full(n, -np.inf)
    s = np.empty(n)
    for mm in range(m):
        s[:] = 0.0
        for j in range(t):
            w = efficacy[j, mm]
            for i in range(n):
                s[i] += w * e[j, i]
        for i in range(n):
            ex = coef[c[i], mm] * s[i] - b_risk[c[i], mm]
            rows[i] = ex if ex > rows[i] else rows[i]
    special = np.empty(n, dtype=np.bool_)
    any_bad = False
    for i in range(n):
        dev = abs(total[i] - 1.0)
        viol = dev if dev > rows[i] else rows[i]
        if -amin[i] > viol:
            viol = -amin[i]
        if not viol > 0.0:
            viol = 0.0
        out_viol[i] = viol
        out_penalty[i] = 0.0
        bad = viol > _TOL
        any_bad |= bad
        special[i] = (bad or amin[i] < 0.0 or not total[i] > 0.0
                      or rows[i] + row_scale[c[i]] * dev * 2.0 > _TOL_REPROJECT)
    if any_bad and mode == RAISE:
        return FALLBACK
    for j in range(t):  # renormalise (the special rows are redone below)
        for i in range(n):
            e[j, i] = e[j, i] / total[i]
    for i in range(n):
        if special[i]:
            _special_row(a, i, c[i], total[i], amin[i], rows[i], out_viol[i], coef, b_risk,
                         efficacy, row_scale, centers, centre_slack, mode, vp, e, out_penalty)
    return OK


_ADVANCE_SIGNATURE = (
    "int64(int64[::1], float64[:, ::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], "
    "float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], int64[:, ::1], "
    "float64[:, ::1], int64[:, ::1], int64[:, ::1], float64[::1], float64[::1], "
    "float32[:, ::1], int64[::1], int64[::1], float64, float64[::1], float64[:, ::1], "
    "float64[::1], "
    "float32[:, ::1], float64[::1], boolean[::1], float64[:, ::1], float64[::1], int64[::1], "
    "int64[::1], int64[::1], int64[::1], float64[::1])"
)


@cached_jit(_ADVANCE_SIGNATURE, error_model="numpy")
def advance_rows(
    index: np.ndarray,
    times: np.ndarray,
    cats: np.ndarray,
    thetas: np.ndarray,
    flights: np.ndarray,
    gaps: np.ndarray,
    queues: np.ndarray,
    backlog: np.ndarray,
    waits: np.ndarray,
    history: np.ndarray,
    members: np.ndarray,
    team_idx: np.ndarray,
    holders: np.ndarray,
    rates: np.ndarray,
    inv_expected: np.ndarray,
    buf: np.ndarray,
    onehot: np.ndarray,
    layout: np.ndarray,
    day_length: float,
    u: np.ndarray,
    executed: np.ndarray,
    penalty: np.ndarray,
    out_obs: np.ndarray,
    out_reward: np.ndarray,
    out_done: np.ndarray,
    out_queues: np.ndarray,
    out_wait: np.ndarray,
    out_team: np.ndarray,
    out_category: np.ndarray,
    out_theta: np.ndarray,
    out_flight: np.ndarray,
    out_time: np.ndarray,
) -> int:
    """Screen every row's passenger with its executed action and write its observation.

    ``DayBatch.step`` then ``ScreeningVectorEnv._observations``. The first ten arguments are
    ``DayBatch.fused_state()``: the arrivals passenger major with their sentinel (read), the
    queues, backlog and waits row-last, and the history, updated in place. Each loop runs
    across the rows (so it vectorises), every row's sums term by term in their order.

    Args:
        index: each row's passenger index (N,).
        times: arrival times (P + 1, N).
        cats: categories (P + 1, N).
        thetas: risk levels (P + 1, N).
        flights: flights (P + 1, N).
        gaps: gaps to the next arrival (P + 1, N).
        queues: ξ, resource major (R, N).
        backlog: ξ_r / f_r, resource major (R, N).
        waits: team waits, team major (T, N).
        history: h (N, C).
        members: team membership as floats (T, R).
        team_idx: each team's resource indices (T, W), smaller teams repeating a member.
        holders: the teams holding each resource, ascending, padded with -1, (R, H).
        rates: f_r, (R,).
        inv_expected: 1 / expected daily count of each category, (C,).
        buf: the observation buffer (N, D), kept current in place.
        onehot: each row's flat position of its one-hot in ``buf`` (updated).
        layout: observation positions of the category one-hot, backlog, waits, history and
            clock.
        day_length: the clock's scale, minutes.
        u: sampled mode: one U[0, 1) per row; expected mode: empty.
        executed: :func:`check_rows`'s executed actions, team major (T, N).
        penalty: :func:`check_rows`'s penalties.
        out_obs: the observations (N, D).
        out_reward: the rewards.
        out_done: the terminations.
        out_queues: the queues before this passenger's load, resource major (R, N).
        out_wait: the passengers' waits.
        out_team: the drawn teams (-1 in expected mode).
        out_category: the next passenger's category (-1 after the last).
        out_theta: its θ.
        out_flight: its κ.
        out_time: its arrival time (the last one's after the day).

    Returns:
        How many rows' days ended with this step.
    """
    t, n = executed.shape
    r = rates.shape[0]
    width = team_idx.shape[1]
    p = times.shape[0] - 1
    o_cat, o_back, o_wait, o_hist, o_clock = layout[0], layout[1], layout[2], layout[3], layout[4]
    d = buf.shape[1]
    e = executed
    q = queues
    c = np.empty(n, dtype=np.int64)
    gap = np.empty(n)
    for i in range(n):
        k = index[i]
        c[i] = cats[k, i]
        gap[i] = gaps[k, i]
    for rr in range(r):
        for i in range(n):
            out_queues[rr, i] = q[rr, i]
    if u.shape[0] > 0:  # sampled: the first team whose cumulative weight passes u · Σπ
        for i in range(n):
            cum = 0.0
            for j in range(t):
                cum += e[j, i]
            threshold = u[i] * cum
            team = 0
            cum = 0.0
            for j in range(t):
                cum += e[j, i]
                if cum <= threshold:
                    team += 1
            if team > t - 1:
                team = t - 1
            out_team[i] = team
            out_wait[i] = waits[team, i]
            for rr in range(r):
                q[rr, i] = q[rr, i] + members[team, rr]
    else:
        for i in range(n):
            out_team[i] = -1
            out_wait[i] = 0.0
        for j in range(t):
            for i in range(n):
                out_wait[i] += e[j, i] * waits[j, i]
        load = np.empty(n)
        for rr in range(r):
            # Σ_t π_t m_{t,r} over the teams holding r (the others add exact zeros).
            load[:] = 0.0
            for jj in range(holders.shape[1]):
                j = holders[rr, jj]
                if j >= 0:
                    for i in range(n):
                        load[i] += e[j, i]
            for i in range(n):
                q[rr, i] = q[rr, i] + load[i]
    for i in range(n):
        out_reward[i] = -out_wait[i] - penalty[i]
    for rr in range(r):  # drain the gap to the next arrival
        rate = rates[rr]
        for i in range(n):
            v = q[rr, i] - gap[i] * rate
            v = v if v >= 0.0 else 0.0
            q[rr, i] = v
            backlog[rr, i] = v / rate
    for j in range(t):
        first = team_idx[j, 0]
        for i in range(n):
            waits[j, i] = backlog[first, i]
        for jj in range(1, width):
            col = team_idx[j, jj]
            for i in range(n):
                v = backlog[col, i]
                waits[j, i] = v if v > waits[j, i] else waits[j, i]
    ended = 0
    for i in range(n):
        ci = c[i]
        screened = history[i, ci] + 1
        history[i, ci] = screened
        k = index[i] + 1
        index[i] = k
        out_done[i] = k >= p
        if k >= p:
            ended += 1
        nxt = cats[k, i]
        out_category[i] = nxt
        out_theta[i] = thetas[k, i]
        out_flight[i] = flights[k, i]
        clock = times[k, i]
        out_time[i] = clock
        # The observation row: the screened category's history, the one-hot moved to the next
        # passenger (none after the last), the minutes and the clock.
        buf[i, o_hist + ci] = np.float32(screened * inv_expected[ci])
        buf[i, o_cat + ci] = 0.0
        if nxt >= 0:
            buf[i, o_cat + nxt] = 1.0
            onehot[i] = i * d + o_cat + nxt
        else:
            onehot[i] = i * d + o_cat
        x = clock / day_length
        buf[i, o_clock] = np.float32(x if x <= 1.0 else 1.0)
    for rr in range(r):
        for i in range(n):
            buf[i, o_back + rr] = np.float32(backlog[rr, i])
    for j in range(t):
        for i in range(n):
            buf[i, o_wait + j] = np.float32(waits[j, i])
    for i in range(n):  # then every row is copied
        for jj in range(d):
            out_obs[i, jj] = buf[i, jj]
    return ended


@cached_jit("void(float64[:, ::1], int64[:, ::1], float64[:, :], float64[::1], int64[::1], "
            "int64, float64, int64[::1], float64[:, ::1], int64[:, ::1], int64[:, ::1], "
            "int64[:, ::1], float64[:, ::1], boolean[::1])")
def arrange_days(
    times: np.ndarray,
    order: np.ndarray,
    risk_u: np.ndarray,
    edges: np.ndarray,
    flights: np.ndarray,
    n_flights: int,
    day_length: float,
    rows: np.ndarray,
    out_times: np.ndarray,
    out_cats: np.ndarray,
    out_thetas: np.ndarray,
    out_flights: np.ndarray,
    out_gaps: np.ndarray,
    out_tied: np.ndarray,
) -> None:
    """Write days into ``DayBatch``'s arrays: ``draw_arrivals_batch`` and ``DayBatch.reset``.

    Args:
        times: each day's unsorted arrival times (k, P), passengers in flight order.
        order: their stable sort order (k, P).
        risk_u: the uniforms of the risk levels (k, P), in the same passenger order.
        edges: the cumulative risk mix without its last entry: θ counts the edges <= u.
        flights: each passenger's flight, (P,).
        n_flights: |K|.
        day_length: arrival times are clipped to [0, day_length].
        rows: the ``DayBatch`` row of each day.
        out_times: ``DayBatch``'s arrival times, passenger major (P + 1, N): the sentinel
            repeats the last time.
        out_cats: its categories (the sentinel's is -1), the same layout.
        out_thetas: its risk levels, the same layout.
        out_flights: its flights, the same layout.
        out_gaps: its gaps to the next arrival (0 after the last), the same layout.
        out_tied: whether two of a day's arrival times are equal (in ``order``, adjacent):
            its order may then differ from the stable one, which the caller passes again.
    """
    k, p = times.shape
    n_edges = edges.shape[0]
    block = 32  # days at a time: a passenger's writes for them share cache lines
    for i0 in range(0, k, block):
        i1 = min(i0 + block, k)
        for j in range(p):
            for i in range(i0, i1):
                row = rows[i]
                src = order[i, j]
                x = times[i, src]
                if x < 0.0:
                    x = 0.0
                if x > day_length:
                    x = day_length
                if j > 0 and times[i, order[i, j - 1]] == times[i, src]:
                    out_tied[i] = True
                u = risk_u[i, src]
                theta = 0
                for jj in range(n_edges):
                    if u >= edges[jj]:
                        theta += 1
                fl = flights[src]
                out_times[j, row] = x
                out_thetas[j, row] = theta
                out_flights[j, row] = fl
                out_cats[j, row] = theta * n_flights + fl
                if j > 0:
                    out_gaps[j - 1, row] = x - out_times[j - 1, row]
    for i in range(k):
        row = rows[i]
        last = out_times[p - 1, row]
        out_times[p, row] = last
        out_gaps[p - 1, row] = last - last
        out_gaps[p, row] = 0.0
        out_cats[p, row] = -1
        out_thetas[p, row] = -1
        out_flights[p, row] = -1


#: :func:`check_rows` and :func:`advance_rows` without the dispatcher's type matching
#: (``numba_step.entry_point``): the caller passes exactly the signatures' types.
check_rows_unchecked: Any = entry_point(check_rows)
advance_rows_unchecked: Any = entry_point(advance_rows)
