"""The native vector environment's step and day arrangement as numba calls over every row.

Imported only when a :class:`~tsg_envs.vector.ScreeningVectorEnv` made with the numba kernel
(``TSG_ENVS_KERNEL``, :mod:`tsg_envs.kernel`) first steps or resets: importing :mod:`tsg_envs`
never imports numba. Compiled once per machine and cached, as :mod:`tsg_envs.numba_step`.

:func:`check_rows` then :func:`advance_rows` are
:meth:`ScreeningVectorEnv.step <tsg_envs.vector.ScreeningVectorEnv.step>` when no sub-environment
autoresets (every step but one a day): the action check of every ``invalid_action`` mode and the
α-projection, then :meth:`DayBatch.step <tsg_envs.dynamics.DayBatch.step>` in either queue mode
and the observation, each one loop over the rows (two calls, so that sampled mode draws its
uniforms only once every proposal has passed). The numpy vector step is
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

@cached_jit("float64(float64[::1], int64, float64[:, ::1], float64[:, ::1], float64[:, ::1])")
def _excess(e: np.ndarray, c: int, coef: np.ndarray, b_risk: np.ndarray,
            efficacy: np.ndarray) -> float:
    """Max over methods of a_m · e - b_m for category ``c``."""
    t, m = efficacy.shape
    worst = -np.inf
    for mm in range(m):
        s = 0.0
        for j in range(t):
            s += efficacy[j, mm] * e[j]
        ex = coef[c, mm] * s - b_risk[c, mm]
        if ex > worst:
            worst = ex
    return worst


@cached_jit("void(float64[::1], int64, float64[:, ::1], float64[:, ::1], float64[:, ::1], "
            "float64[:, ::1])")
def _project(e: np.ndarray, c: int, coef: np.ndarray, efficacy: np.ndarray,
             centers: np.ndarray, centre_slack: np.ndarray) -> None:
    """``ScreeningVectorEnv._project`` of one point of the simplex, in place."""
    t, m = efficacy.shape
    alpha = 1.0
    for mm in range(m):
        s = 0.0
        for j in range(t):
            s += efficacy[j, mm] * (e[j] - centers[c, j])
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
            e[j] = y0 + alpha * (e[j] - y0)


_CHECK_SIGNATURE = (
    "int64(float64[:, ::1], int64[::1], int64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], int64, float64, "
    "float64[::1], float64[:, ::1], float64[::1])"
)


@cached_jit(_CHECK_SIGNATURE)
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
        out_exec: each row's executed action.
        out_penalty: each row's penalty.

    Returns:
        :data:`OK`, or :data:`FALLBACK`.
    """
    n, t = a.shape
    m = coef.shape[1]
    p = cats.shape[0] - 1
    for i in range(n):
        k = index[i]
        if k >= p:
            return FALLBACK  # a day is over or never started: numpy raises
        c = cats[k, i]
        total = 0.0
        amin = np.inf
        for j in range(t):
            v = a[i, j]
            if not abs(v) <= _HUGE:  # NaN, inf or huge: the numpy path's business
                return FALLBACK
            total += v
            if v < amin:
                amin = v
        rows = -np.inf
        for mm in range(m):
            s = 0.0
            for j in range(t):
                s += efficacy[j, mm] * a[i, j]
            ex = coef[c, mm] * s - b_risk[c, mm]
            if ex > rows:
                rows = ex
        dev = abs(total - 1.0)
        viol = dev if dev > rows else rows
        if -amin > viol:
            viol = -amin
        if not viol > 0.0:
            viol = 0.0
        bad = viol > _TOL
        if bad and mode == RAISE:
            return FALLBACK
        out_viol[i] = viol
        e = out_exec[i]
        if amin >= 0.0:
            sums = total
            for j in range(t):
                e[j] = a[i, j]
        else:
            sums = 0.0
            for j in range(t):
                v = a[i, j] if a[i, j] > 0.0 else 0.0
                e[j] = v
                sums += v
        if sums <= 0.0:
            for j in range(t):
                e[j] = centers[c, j]
        else:
            for j in range(t):
                e[j] = e[j] / sums
        penalty = 0.0
        if bad and mode == PENALIZE:
            worst = _excess(e, c, coef, b_risk, efficacy)
            penalty = vp * (worst if worst > 0.0 else 0.0)
        out_penalty[i] = penalty
        project = bad and mode == PROJECT
        if not bad and (rows + row_scale[c] * dev * 2.0 > _TOL_REPROJECT or amin < 0.0):
            project = _excess(e, c, coef, b_risk, efficacy) > _TOL
        if project:
            _project(e, c, coef, efficacy, centers, centre_slack)
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


@cached_jit(_ADVANCE_SIGNATURE)
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

    ``DayBatch.step`` then ``ScreeningVectorEnv._observations``, row by row. The first ten
    arguments are ``DayBatch.fused_state()``: the arrivals passenger major with their sentinel
    (read), the rest updated in place.

    Args:
        index: each row's passenger index (N,).
        times: arrival times (P + 1, N).
        cats: categories (P + 1, N).
        thetas: risk levels (P + 1, N).
        flights: flights (P + 1, N).
        gaps: gaps to the next arrival (P + 1, N).
        queues: ξ (N, R).
        backlog: ξ_r / f_r (N, R).
        waits: team waits (N, T).
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
        executed: :func:`check_rows`'s executed actions.
        penalty: :func:`check_rows`'s penalties.
        out_obs: the observations (N, D).
        out_reward: the rewards.
        out_done: the terminations.
        out_queues: the queues before this passenger's load (N, R).
        out_wait: the passengers' waits.
        out_team: the drawn teams (-1 in expected mode).
        out_category: the next passenger's category (-1 after the last).
        out_theta: its θ.
        out_flight: its κ.
        out_time: its arrival time (the last one's after the day).

    Returns:
        How many rows' days ended with this step.
    """
    n, t = executed.shape
    r = rates.shape[0]
    width = team_idx.shape[1]
    p = times.shape[0] - 1
    sampled = u.shape[0] > 0
    o_cat, o_back, o_wait, o_hist, o_clock = layout[0], layout[1], layout[2], layout[3], layout[4]
    d = buf.shape[1]
    ended = 0
    for i in range(n):
        k = index[i]
        c = cats[k, i]
        e = executed[i]
        q = queues[i]
        for rr in range(r):
            out_queues[i, rr] = q[rr]
        if sampled:
            cum = 0.0
            for j in range(t):
                cum += e[j]
            threshold = u[i] * cum
            team = 0
            cum = 0.0
            for j in range(t):
                cum += e[j]
                if cum <= threshold:
                    team += 1
            if team > t - 1:
                team = t - 1
            wait = waits[i, team]
            for rr in range(r):
                q[rr] = q[rr] + members[team, rr]
        else:
            team = -1
            wait = 0.0
            for j in range(t):
                wait += e[j] * waits[i, j]
            for rr in range(r):
                # Σ_t π_t m_{t,r} over the teams holding r (the others add exact zeros).
                load = 0.0
                for jj in range(holders.shape[1]):
                    j = holders[rr, jj]
                    if j >= 0:
                        load += e[j]
                q[rr] = q[rr] + load
        out_team[i] = team
        out_wait[i] = wait
        out_reward[i] = -wait - penalty[i]
        screened = history[i, c] + 1
        history[i, c] = screened
        gap = gaps[k, i]
        for rr in range(r):
            v = q[rr] - gap * rates[rr]
            q[rr] = v if v >= 0.0 else 0.0
            backlog[i, rr] = q[rr] / rates[rr]
        for j in range(t):
            best = backlog[i, team_idx[j, 0]]
            for jj in range(1, width):
                v = backlog[i, team_idx[j, jj]]
                if v > best:
                    best = v
            waits[i, j] = best
        k += 1
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
        # passenger (none after the last), the minutes and the clock; then the row is copied.
        row = buf[i]
        row[o_hist + c] = np.float32(screened * inv_expected[c])
        row[o_cat + c] = 0.0
        if nxt >= 0:
            row[o_cat + nxt] = 1.0
            onehot[i] = i * d + o_cat + nxt
        else:
            onehot[i] = i * d + o_cat
        for rr in range(r):
            row[o_back + rr] = np.float32(backlog[i, rr])
        for j in range(t):
            row[o_wait + j] = np.float32(waits[i, j])
        x = clock / day_length
        row[o_clock] = np.float32(x if x <= 1.0 else 1.0)
        out_obs[i, :] = row
    return ended


@cached_jit("void(float64[:, ::1], int64[:, ::1], float64[:, :], float64[::1], int64[::1], "
            "int64, float64, int64[::1], float64[:, ::1], int64[:, ::1], int64[:, ::1], "
            "int64[:, ::1], float64[:, ::1])")
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
