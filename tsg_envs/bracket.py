"""The achievability bracket of a day: a clairvoyant plan and a proven bound on any policy's wait.

Provenance: SPEC §8 (ours). Every score is read against what was achievable on the same day:
:func:`bracket` returns, for an environment in expected queue mode and an arrival seed,

* ``plan``: a clairvoyant allocation of each of the day's passengers (computed knowing the
  whole day), every row inside its category's polytope; replaying it (``env.reset(seed=seed)``
  then ``env.step(plan[i])``) gives ``plan_wait`` exactly;
* ``bound_wait``: a proven lower bound on the mean wait of *any* policy, online or clairvoyant,
  on that day at the environment's ψ: ``bound_wait <= plan_wait`` and ``bound_wait <=`` every
  agent's wait.

**The bound.** Passenger i (arriving at τ_i, category c_i) is allocated π_i in its polytope and
loads resource r by ℓ_{i,r} = Σ_{t∋r} π_{i,t} ∈ [0, 1]; ξ_{r,i} is r's backlog just before that
load. The passenger's wait is Σ_t π_{i,t} max_{r∈t} ξ_{r,i}/f_r. Three relaxations, each a
relaxation (every policy's trajectory stays feasible and its objective does not rise):

1. *Max by weighted sums.* For weights c_r >= 0 with Σ_{r∈t} c_r <= 1 for every team,
   max_{r∈t} x_r >= Σ_{r∈t} c_r x_r (x >= 0), so a passenger's wait is at least
   Σ_r c_r ℓ_{i,r} ξ_{r,i}/f_r. The weights are not fixed: the LP below picks the best ones
   (by LP duality, min Σ_t y_t over y >= 0 with Σ_{t∋r} y_t >= z_r equals max c·z over those
   weights).
2. *The FIFO identity, relaxed.* Per resource, a passenger's work ℓ_i waits ξ_i/f behind the
   backlog and then drains over ℓ_i/f, so Σ_i ℓ_i ξ_i/f = ∫ξ dτ − Σ_i ℓ_i²/(2f) (the integral
   includes the tail after the last arrival; :func:`fifo_identity` checks it on a replay). Over
   the gap Δ after passenger i the backlog is b = ξ_i + ℓ_i draining linearly, and the gap's
   integral g(b) = b²/(2f) for b <= fΔ, bΔ − fΔ²/2 beyond, is convex: it is under-approximated
   by tangents (a max of tangents is below a convex function). The concave −ℓ² is bounded by its
   chord on [0, 1] (ℓ² <= ℓ), never by a tangent. The per-resource term is also >= 0, since
   Σ_i ℓ_i ξ_i/f is.
3. *Tolerance.* Each risk row is widened by the 1e-6 the environment accepts.

The result is one LP (HiGHS) in (π, ξ, a, z, y). Its reported optimum depends on the solver's
tolerances, so ``bound_wait`` is taken from the LP's dual instead: for any row multipliers the
weak-duality expression (rows at their bounds plus every column's reduced cost at its worse
bound, each variable boxed by a bound no trajectory exceeds) is a lower bound on the LP's
minimum, whatever the solver's accuracy (Neumaier and Shcherbina, "Safe bounds in linear and
mixed-integer programming", 2004).

**The plan.** The LP's minimiser, cleaned onto the polytopes and replayed exactly, is a first
plan. Others are searched too, so the plan is never worse than any of them: the static LP's own
day, and any candidate agents the caller passes (e.g. slack-guided from ``baselines``, which
this module does not import). The best replayed candidate is the plan.

Expected queue mode only: in sampled mode a passenger's wait depends on the environment's draw
of the team, so no allocation fixes it and there is no bracket (:func:`bracket` raises).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym
import numpy as np
from scipy import sparse

from tsg_envs import highs, qp
from tsg_envs.polytope import FEASIBILITY_TOL

__all__ = [
    "Bracket",
    "bracket",
    "fifo_identity",
    "load_ranges",
    "replay",
    "headroom_captured",
]

#: Tangents of each gap's integral g(b) on [0, fΔ] (points fΔ·k/K, k = 1..K; a >= 0 is k = 0).
#: A gap where the queue empties loses at most fΔ²/(8K²) to them.
GAP_TANGENTS = 3
#: Gaps with fΔ below this (passengers) keep only their linear tangent.
MIN_TANGENT_POINT = 0.1
#: Tangents of the tail's integral b²/(2f) after the last arrival: points 2^k / 8 up to P.
TAIL_RATIO = 2.0
#: Frank-Wolfe steps on the exact wait that refine the best candidate plan.
REFINE_ITERATIONS = 60
#: Clarabel's tolerances on the fluid LP (the bound comes from its multipliers, safely).
FLUID_TOL = 1e-7
#: Headroom is shown only where the LP's wait exceeds the plan's by this share of the LP's wait.
MIN_HEADROOM = 0.02


@dataclass(frozen=True)
class Bracket:
    """A day's achievability bracket (SPEC §8).

    Attributes:
        seed: The day's arrival seed.
        plan: (P, T) clairvoyant allocation of each passenger in arrival order, every row inside
            its category's polytope (within 1e-6).
        plan_wait: Mean wait of ``plan`` replayed (minutes).
        bound_wait: Proven lower bound on any policy's mean wait that day (minutes).
        lp_wait: The static window LP's mean wait that day (minutes).
        plan_source: Which candidate the plan is (``"fluid"``, ``"lp"`` or a caller's name).
        candidate_waits: Mean wait of every candidate searched, by name.
        weights: c_r, the max-by-weighted-sum weights the bound settled on, (R,).
        fluid_value: The LP's optimum as its solver reports it (minutes; ``bound_wait`` is the
            weak-duality value of its multipliers, equal to it within the solver's tolerance).
        seconds: CPU seconds the bracket took (the caller's candidates' rollouts excluded).
    """

    seed: int
    plan: np.ndarray
    plan_wait: float
    bound_wait: float
    lp_wait: float
    plan_source: str
    candidate_waits: dict[str, float] = field(default_factory=dict)
    weights: np.ndarray | None = None
    fluid_value: float = float("nan")
    seconds: float = 0.0

    @property
    def plan_ratio(self) -> float:
        """LP wait / plan wait: what a clairvoyant plan gains over the LP that day."""
        return self.lp_wait / self.plan_wait if self.plan_wait > 0 else float("inf")

    @property
    def bound_ratio(self) -> float:
        """LP wait / bound wait: the most any policy could gain over the LP that day."""
        return self.lp_wait / self.bound_wait if self.bound_wait > 0 else float("inf")

    def headroom(self, agent_wait: float) -> float | None:
        """Headroom captured, (LP wait − agent wait) / (LP wait − plan wait), or None ("—")."""
        return headroom_captured(self.lp_wait, self.plan_wait, agent_wait)


def headroom_captured(lp_wait: float, plan_wait: float, agent_wait: float) -> float | None:
    """(LP wait − agent wait) / (LP wait − plan wait); None where the room is under 2% of the LP's.

    1 means the agent matched the clairvoyant plan, 0 the LP; negative is worse than the LP.
    """
    room = lp_wait - plan_wait
    if room <= 0 or room < MIN_HEADROOM * lp_wait:
        return None
    return float((lp_wait - agent_wait) / room)


# -------------------------------------------------------------------------------------------
# Replays
# -------------------------------------------------------------------------------------------
def _screening(env: gym.Env) -> Any:
    base = env.unwrapped
    if not hasattr(base, "polytopes") or not hasattr(base, "day"):
        raise TypeError(f"bracket needs a tsg_envs ScreeningEnv, got {type(base).__name__}")
    if cast(Any, base).queue_mode != "expected":
        raise ValueError(
            "the bracket exists in expected queue mode only: in sampled mode a passenger's wait "
            "depends on the environment's draw of the team, which no allocation fixes"
        )
    return base


def replay(env: gym.Env, seed: int, actions: np.ndarray) -> tuple[float, np.ndarray]:
    """Replay ``actions`` on the day of ``seed``; (mean wait, executed actions).

    Resets ``env`` (its unwrapped screening environment) with ``seed`` and steps every row.
    """
    base = _screening(env)
    base.reset(seed=int(seed))
    n = base.game.n_passengers
    if actions.shape != (n, base.game.n_teams):
        raise ValueError(f"actions must have shape {(n, base.game.n_teams)}, got {actions.shape}")
    waits = np.empty(n)
    executed = np.empty_like(actions, dtype=np.float64)
    for i in range(n):
        _, _, _, _, info = base.step(actions[i])
        waits[i] = info["wait"]
        executed[i] = info["executed_action"]
    return float(waits.mean()), executed


def _rollout(env: gym.Env, seed: int, act: Callable[[np.ndarray, dict], np.ndarray]
             ) -> tuple[float, np.ndarray]:
    """Roll a policy out on the day of ``seed``; (mean wait, executed actions)."""
    base = _screening(env)
    obs, info = base.reset(seed=int(seed))
    n, t = base.game.n_passengers, base.game.n_teams
    waits = np.empty(n)
    executed = np.empty((n, t))
    for i in range(n):
        obs, _, _, _, step_info = base.step(np.asarray(act(obs, info), dtype=np.float64))
        waits[i] = step_info["wait"]
        executed[i] = step_info["executed_action"]
        info = step_info
    return float(waits.mean()), executed


def fifo_identity(times: np.ndarray, loads: np.ndarray, rate: float) -> tuple[float, float, float]:
    """The three terms of the FIFO identity Σ ℓ_i ξ_i / f = ∫ ξ dτ − Σ ℓ_i² / (2f) on one resource.

    Args:
        times: (P,) arrival times, non-decreasing.
        loads: (P,) each passenger's load ℓ_i on the resource.
        rate: f, the resource's rate.

    Returns:
        (Σ ℓ_i ξ_i / f, ∫ ξ dτ including the tail, Σ ℓ_i² / (2f)), with ξ simulated exactly as the
        environment's queue (drain, then load).
    """
    xi = 0.0
    weighted, area = 0.0, 0.0
    for i in range(len(times)):
        if i > 0:
            gap = float(times[i] - times[i - 1])
            b = xi
            area += _gap_integral(b, gap, rate)
            xi = max(b - gap * rate, 0.0)
        weighted += loads[i] * xi / rate
        xi += loads[i]
    area += xi * xi / (2.0 * rate)  # the tail after the last arrival
    return weighted, area, float(np.sum(np.square(loads)) / (2.0 * rate))


def _gap_integral(b: float, gap: float, rate: float) -> float:
    """∫_0^gap max(b − rate s, 0) ds."""
    if b <= rate * gap:
        return b * b / (2.0 * rate)
    return b * gap - rate * gap * gap / 2.0


# -------------------------------------------------------------------------------------------
# The fluid LP
# -------------------------------------------------------------------------------------------
@dataclass
class _Fluid:
    """The assembled fluid LP (min cost·x s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi)."""

    cost: np.ndarray
    a: sparse.csc_array
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    solve_hi: np.ndarray  # the upper bounds given to the solver (col_hi: the safe bound's boxes)
    n_pi: int
    weights_rows: slice


def load_ranges(base: Any) -> tuple[np.ndarray, np.ndarray]:
    """The least and largest load of each resource in each category's polytope.

    Returns:
        (lo, hi), each (C, R): the extremes of Σ_{t∋r} π_t over category c's polytope widened
        by the accepted tolerance (2R block LPs over all categories), widened by 1e-7.
    """
    g = base.game
    polys = base.polytopes
    c, m, t, r = g.n_categories, g.n_methods, g.n_teams, g.n_resources
    cc, mm, tt = np.meshgrid(np.arange(c), np.arange(m), np.arange(t), indexing="ij")
    risk = sparse.csr_array((polys.A_ub[:, :m, :].reshape(-1),
                             ((cc * m + mm).reshape(-1), (cc * t + tt).reshape(-1))),
                            shape=(c * m, c * t))
    simplex = sparse.csr_array((np.ones(c * t), (np.repeat(np.arange(c), t), np.arange(c * t))),
                               shape=(c, c * t))
    a = sparse.vstack([risk, simplex])
    lo_rows = np.r_[np.full(c * m, -np.inf), np.ones(c)]
    hi_rows = np.r_[(polys.b_ub[:, :m] + FEASIBILITY_TOL).reshape(-1), np.ones(c)]
    lo, hi = np.empty((c, r)), np.empty((c, r))
    members = g.team_members.astype(float)
    for rr in range(r):
        cost = np.tile(members[:, rr], c)
        for sign, out in ((1.0, lo), (-1.0, hi)):
            x, _ = highs.solve(sign * cost, a, lo_rows, hi_rows, np.zeros(c * t), np.ones(c * t))
            out[:, rr] = x.reshape(c, t) @ members[:, rr]
    # Solver tolerances: widen by a hair so that the range holds every executed allocation.
    return np.clip(lo - 1e-7, 0.0, 1.0), np.clip(hi + 1e-7, 0.0, 1.0)


def _fluid_lp(base: Any, times: np.ndarray, cats: np.ndarray,
              ranges: tuple[np.ndarray, np.ndarray],
              weights: np.ndarray | None = None) -> _Fluid:
    """Build the fluid LP of one day (see the module docstring for its three relaxations).

    Columns: π (P·T) | ℓ (R·P) loads | ξ (R·P) backlogs just before each load | a (R·P) each
    gap's integral | z (R) | y (T). ``weights`` None: the bound's LP, the weights c chosen by the
    LP (the duals of the y rows). Given (R,): the objective is Σ_r c_r z_r / P with those weights
    fixed (a plan heuristic: with every c_r = 1, Σ_{r∈t} backlog over-counts each team's wait).
    """
    g = base.game
    p, t, r, m = len(times), g.n_teams, g.n_resources, g.n_methods
    f = g.rates.astype(float)
    members = g.team_members.astype(float)  # (T, R)
    polys = base.polytopes
    gaps = np.diff(times)  # (P-1,)
    lo_load, hi_load = ranges[0][cats].T, ranges[1][cats].T  # (R, P)

    n_pi = p * t
    o_l = n_pi
    o_x = o_l + r * p
    o_a = o_x + r * p
    o_z = o_a + r * p
    o_y = o_z + r
    n = o_y + t
    rp = np.arange(r)[:, None] * p + np.arange(p)[None, :]  # (R, P) offset of (r, i)

    rows, cols, vals, row_lo, row_hi = [], [], [], [], []
    n_rows = 0

    def block(count: int, lo: np.ndarray | float, hi: np.ndarray | float,
              entries: list[tuple[np.ndarray, np.ndarray, np.ndarray | float]]) -> None:
        nonlocal n_rows
        for rw, cl, v in entries:
            rw = np.asarray(rw).ravel()
            rows.append(n_rows + rw)
            cols.append(np.asarray(cl).ravel())
            vals.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(cl)).ravel())
        row_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).ravel())
        row_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).ravel())
        n_rows += count

    # 1. Risk rows, widened by the accepted tolerance: A_risk[c_i] π_i <= b_risk[c_i] + tol.
    ii: np.ndarray  # index grids of each block (their dimensions differ from block to block)
    tt: np.ndarray
    ii, mm, tt = np.meshgrid(np.arange(p), np.arange(m), np.arange(t), indexing="ij")
    block(p * m, -np.inf, (polys.b_ub[cats, :m] + FEASIBILITY_TOL).reshape(-1),
          [(ii * m + mm, ii * t + tt, polys.A_ub[cats, :m, :])])
    # 2. Simplex: Σ_t π_{i,t} = 1.
    ii, tt = np.meshgrid(np.arange(p), np.arange(t), indexing="ij")
    block(p, 1.0, 1.0, [(ii, ii * t + tt, 1.0)])
    # 3. Loads: ℓ_{r,i} − Σ_{t∋r} π_{i,t} = 0.
    mt, mr = np.nonzero(members)  # team mt[j] contains resource mr[j]
    jj, ii = np.meshgrid(np.arange(len(mt)), np.arange(p), indexing="ij")
    block(r * p, 0.0, 0.0, [(rp, o_l + rp, 1.0), (mr[jj] * p + ii, ii * t + mt[jj], -1.0)])
    if p > 1:
        # 4. Drain: the backlog ξ_{r,i+1} >= ξ_{r,i} + ℓ_{r,i} − f_r Δ_i (and ξ >= 0 as a bound;
        #    queues start empty).
        q = np.arange(r)[:, None] * (p - 1) + np.arange(p - 1)[None, :]
        block(r * (p - 1), (-(f[:, None] * gaps[None, :])).reshape(-1), np.inf,
              [(q, o_x + rp[:, 1:], 1.0), (q, o_x + rp[:, :-1], -1.0), (q, o_l + rp[:, :-1], -1.0)])
    # 5. Tangents of each gap's integral g(b) at the backlog b = ξ + ℓ just after the load:
    #    a_{r,i} − s (ξ_{r,i} + ℓ_{r,i}) >= −q, at b0 = f Δ_i k / K (a zero gap's integral is 0,
    #    which a >= 0 covers), and of the tail's b²/(2f) after the last arrival at b0 = 2^k / 8.
    k_gap = np.arange(1, GAP_TANGENTS + 1) / GAP_TANGENTS
    tail = 0.125 * TAIL_RATIO ** np.arange(int(np.ceil(np.log(8.0 * p) / np.log(TAIL_RATIO))) + 1)
    b0 = np.zeros((r, p, max(GAP_TANGENTS, tail.size)))
    b0[:, :-1, :GAP_TANGENTS] = f[:, None, None] * gaps[None, :, None] * k_gap[None, None, :]
    b0[:, -1, :tail.size] = tail
    # A gap short enough that fΔ < MIN_TANGENT_POINT keeps only its linear tangent (slope Δ); it
    # loses at most fΔ²/8 < MIN_TANGENT_POINT Δ / 8 (tiny tangents only slow the solver down).
    b0[:, :-1, :GAP_TANGENTS - 1] *= b0[:, :-1, GAP_TANGENTS - 1:GAP_TANGENTS] >= MIN_TANGENT_POINT
    rr, ii, kk = np.nonzero(b0 > 0)
    point = b0[rr, ii, kk]
    slope = point / f[rr]
    idx = np.arange(point.shape[0])
    block(point.shape[0], -point * point / (2.0 * f[rr]), np.inf,
          [(idx, o_a + rr * p + ii, 1.0), (idx, o_x + rr * p + ii, -slope),
           (idx, o_l + rr * p + ii, -slope)])
    # 6. z_r − Σ_i a_{r,i} + Σ_i ℓ_{r,i} (lo + hi) / (2 f_r) >= Σ_i lo hi / (2 f_r): the chord
    #    ℓ² <= (lo + hi) ℓ − lo hi of each passenger's load range, never a tangent.
    chord = (lo_load + hi_load) / (2.0 * f[:, None])  # (R, P)
    const = (lo_load * hi_load / (2.0 * f[:, None])).sum(axis=1)
    rr = np.repeat(np.arange(r), p)
    block(r, const, np.inf, [(np.arange(r), o_z + np.arange(r), 1.0),
                             (rr, o_a + rp.ravel(), -1.0), (rr, o_l + rp.ravel(), chord.ravel())])
    # 7. Σ_{t∋r} y_t − z_r >= 0 (their duals are the weights c_r).
    weights_rows = slice(n_rows, n_rows + r)
    block(r, 0.0, np.inf, [(mr, o_y + mt, 1.0), (np.arange(r), o_z + np.arange(r), -1.0)])
    a = sparse.csc_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n)
    )
    # Boxes no trajectory leaves (they make the dual bound finite; the solver sees only the
    # natural bounds, since huge boxes slow interior-point methods down): loads in their ranges,
    # backlogs at most P, a gap's integral at most P times its length (the tail's P²/(2f)), z
    # at most the sum of those.
    big_b = float(p)
    a_hi = np.empty((r, p))
    a_hi[:, :-1] = big_b * gaps[None, :]
    a_hi[:, -1] = big_b * big_b / (2.0 * f)
    z_hi = a_hi.sum(axis=1)
    col_lo = np.concatenate([np.zeros(n_pi), lo_load.ravel(), np.zeros(2 * r * p + r + t)])
    col_hi = np.concatenate([np.ones(n_pi), hi_load.ravel(), np.full(r * p, big_b),
                             a_hi.ravel(), z_hi, np.full(t, z_hi.sum())])
    solve_hi = col_hi.copy()
    solve_hi[o_x:] = np.inf
    solve_hi[o_x + rp[:, 0]] = 0.0  # queues start empty
    col_hi[o_x + rp[:, 0]] = 0.0
    cost = np.zeros(n)  # the day's total wait (passenger-minutes); the mean divides by P
    if weights is None:
        cost[o_y:] = 1.0
    else:
        cost[o_z:o_y] = np.asarray(weights, dtype=float)
    return _Fluid(cost=cost, a=a, row_lo=np.concatenate(row_lo), row_hi=np.concatenate(row_hi),
                  col_lo=col_lo, col_hi=col_hi, solve_hi=solve_hi, n_pi=n_pi,
                  weights_rows=weights_rows)


def _safe_bound(lp: _Fluid, row_dual: np.ndarray) -> float:
    """Weak duality with any multipliers: min cost·x >= Σ_i y_i·(row bound) + Σ_j min_box d_j x_j.

    For rows l <= a_i·x <= u and a multiplier y_i, y_i a_i·x >= y_i l_i (y_i > 0) or y_i u_i
    (y_i < 0); with d = c − Aᵀy, cost·x = yᵀAx + dᵀx. Infinite bounds on the needed side make a
    multiplier useless: it is dropped (set to 0) first.
    """
    y = np.asarray(row_dual, dtype=float).copy()
    y[(y > 0) & ~np.isfinite(lp.row_lo)] = 0.0
    y[(y < 0) & ~np.isfinite(lp.row_hi)] = 0.0
    row_part = np.where(y > 0, y * np.where(np.isfinite(lp.row_lo), lp.row_lo, 0.0),
                        y * np.where(np.isfinite(lp.row_hi), lp.row_hi, 0.0))
    d = lp.cost - lp.a.T @ y
    col_part = np.where(d > 0, d * lp.col_lo, d * lp.col_hi)
    return float(np.sum(row_part, dtype=np.longdouble) + np.sum(col_part, dtype=np.longdouble))


def _solve_fluid(lp: _Fluid) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Solve the fluid LP: (x, reported optimum, safe lower bound, row multipliers).

    Clarabel's interior point (:func:`tsg_envs.qp.solve_lp`): on this LP's long chains of rows
    it takes about half the time of HiGHS's. Where it stops short (rare: once in about 1,000
    small random games), HiGHS's interior point solves it instead. Either way the bound is the
    weak-duality value of the multipliers, valid whatever their accuracy.
    """
    try:
        x, dual, value = qp.solve_lp(lp.cost, lp.a, lp.row_lo, lp.row_hi, lp.col_lo,
                                     lp.solve_hi, tol=FLUID_TOL, what="the bracket's fluid LP")
    except RuntimeError:
        h = highs.model(lp.cost, lp.a, lp.row_lo, lp.row_hi, lp.col_lo, lp.solve_hi,
                        solver="ipm")
        x, value = highs.run(h, "the bracket's fluid LP")
        # HiGHS's row duals follow c = Aᵀy + reduced costs, as _safe_bound expects.
        dual = np.asarray(h.getSolution().row_dual, dtype=float)
    return x, value, _safe_bound(lp, dual), dual


def _clean(plan: np.ndarray, cats: np.ndarray, base: Any) -> np.ndarray:
    """Rows onto the simplex and strictly inside their polytopes (α-projected where needed)."""
    polys = base.polytopes
    out = np.clip(plan, 0.0, None)
    out /= out.sum(axis=1, keepdims=True)
    bad = np.flatnonzero(polys.violation(out, cats) > 0.0)
    if bad.size:
        out[bad] = polys.project(out[bad], cats[bad])
    return out


# -------------------------------------------------------------------------------------------
# The bracket
# -------------------------------------------------------------------------------------------
def bracket(
    env: gym.Env,
    seed: int,
    candidates: Mapping[str, Callable[[gym.Env], Any]] | None = None,
    refine_iterations: int = REFINE_ITERATIONS,
) -> Bracket:
    """The achievability bracket of the day of ``seed`` (SPEC §8).

    Args:
        env: A screening environment (``gym.make`` of a ``tsg`` id or a ``ScreeningEnv``) in
            expected queue mode. It is reset and stepped (replays); its configuration is not
            changed.
        seed: The day's arrival seed (``env.reset(seed=seed)``).
        candidates: More plans to search: name -> ``factory(env) -> agent`` (``act(obs,
            info)``), each rolled out on the day (e.g. slack-guided from ``baselines``). The
            static LP's own day is always searched.
        refine_iterations: Frank-Wolfe steps on the exact wait from the best candidate (0: off).

    Returns:
        The :class:`Bracket`: ``plan``, ``plan_wait``, ``bound_wait`` and what they came from.

    Raises:
        ValueError: ``env`` is in sampled queue mode (no bracket exists there).
    """
    start = time.process_time()
    base = _screening(env)
    seed = int(seed)
    base.reset(seed=seed)
    arrivals = base.day.arrivals
    times = np.asarray(arrivals.times, dtype=float)
    cats = np.asarray(arrivals.categories, dtype=np.int64)

    ranges = load_ranges(base)
    lp = _fluid_lp(base, times, cats, ranges)
    x, value, bound, dual = _solve_fluid(lp)
    # The multipliers of the y rows are the weights c_r; the LP's objective is the day's total
    # wait.
    weights = np.abs(dual[lp.weights_rows])
    p = len(times)
    value, bound = value / p, bound / p
    t = base.game.n_teams
    waits: dict[str, float] = {}
    plans: dict[str, np.ndarray] = {}
    waits["fluid"], plans["fluid"] = replay(base, seed, _clean(x[: lp.n_pi].reshape(-1, t), cats,
                                                               base))
    # The bound's minimiser exploits its relaxation (it may unbalance a team's members, whose
    # weighted sum then under-counts the team's wait); the same LP with every c_r = 1, where the
    # sum over-counts it instead, plans better.
    lp_sum = _fluid_lp(base, times, cats, ranges, np.ones(base.game.n_resources))
    x_sum = _solve_fluid(lp_sum)[0]
    waits["fluid-sum"], plans["fluid-sum"] = replay(
        base, seed, _clean(x_sum[: lp_sum.n_pi].reshape(-1, t), cats, base))
    sol = base.lp_solution
    waits["lp"], plans["lp"] = _rollout(
        base, seed, lambda obs, info: sol.action(info["time"], info["category"]))
    outside = time.process_time()
    for name, factory in (candidates or {}).items():
        agent = factory(base)
        waits[name], plans[name] = _rollout(base, seed, agent.act)
    outside = time.process_time() - outside  # the caller's candidates are not the bracket's cost
    best = min(waits, key=lambda k: waits[k])
    if refine_iterations > 0:
        day = _Day.of(base, times, cats)
        refined, _, steps = _refine(day, plans[best], _Oracle(base, cats), refine_iterations)
        if steps:
            name = f"{best}+fw{steps}"
            waits[name], plans[name] = replay(base, seed, _clean(refined, cats, base))
            if waits[name] < waits[best]:
                best = name
    plan = plans[best]
    plan_wait, _ = replay(base, seed, plan)  # the executed rows replay to the same day
    return Bracket(
        seed=seed, plan=plan, plan_wait=plan_wait, bound_wait=bound,
        lp_wait=waits["lp"], plan_source=best, candidate_waits=waits,
        weights=weights, fluid_value=value, seconds=time.process_time() - start - outside,
    )


# -------------------------------------------------------------------------------------------
# Plan refinement: Frank-Wolfe on the exact mean wait
# -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Day:
    """A day's fixed data for exact simulation: drains (P-1, R), rates, teams, categories."""

    cats: np.ndarray
    drains: np.ndarray
    rates: np.ndarray
    members: np.ndarray  # (T, R) float
    team_idx: np.ndarray  # (T, width) member indices (small teams repeat one)

    @classmethod
    def of(cls, base: Any, times: np.ndarray, cats: np.ndarray) -> _Day:
        g = base.game
        width = int(g.team_members.sum(axis=1).max())
        team_idx = np.array([np.resize(np.flatnonzero(row), width) for row in g.team_members])
        return cls(cats=cats, drains=np.diff(times)[:, None] * g.rates, rates=g.rates,
                   members=g.team_members.astype(float), team_idx=team_idx)


def _forward(day: _Day, plans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact queues of B plans (B, P, T): (mean waits (B,), team waits (B, P, T), ξ (B, P, R))."""
    b, p, t = plans.shape
    loads = plans @ day.members  # (B, P, R)
    inv = 1.0 / day.rates
    xi = np.zeros((b, day.rates.shape[0]))
    team_w = np.empty((b, p, t))
    xis = np.empty((b, p, day.rates.shape[0]))
    for i in range(p):
        xis[:, i] = xi
        team_w[:, i] = (xi * inv)[:, day.team_idx].max(axis=2)
        xi = xi + loads[:, i]
        if i + 1 < p:
            xi = np.maximum(xi - day.drains[i], 0.0)
    waits = np.einsum("bpt,bpt->b", plans, team_w) / p
    return waits, team_w, xis


def _gradient(day: _Day, plan: np.ndarray, team_w: np.ndarray, xis: np.ndarray) -> np.ndarray:
    """d(mean wait)/d(plan) (P, T) at one plan, by the adjoint of the queue recursion."""
    p, t = plan.shape
    inv = 1.0 / day.rates
    loads = plan @ day.members
    # Which member sets each team's wait (first maximiser, as numpy's max would tie-break).
    x = xis * inv  # (P, R)
    arg = np.take_along_axis(
        day.team_idx[None, :, :].repeat(p, axis=0),
        x[:, day.team_idx].argmax(axis=2)[:, :, None], axis=2,
    )[:, :, 0]  # (P, T) resource setting team t's wait
    direct = np.zeros((p, day.rates.shape[0]))
    np.add.at(direct, (np.repeat(np.arange(p), t), arg.reshape(-1)), plan.reshape(-1))
    direct *= inv / p
    grad_load = np.zeros_like(direct)
    mu = direct[p - 1].copy()
    for i in range(p - 2, -1, -1):
        alive = (xis[i] + loads[i] - day.drains[i]) > 0
        g_l = np.where(alive, mu, 0.0)
        grad_load[i] = g_l
        mu = direct[i] + g_l
    return team_w / p + grad_load @ day.members.T


class _Oracle:
    """argmin_{V_i in polytope(c_i)} Σ_i g_i·V_i for every passenger at once (one block LP)."""

    def __init__(self, base: Any, cats: np.ndarray) -> None:
        polys = base.polytopes
        m = base.game.n_methods
        p, t = cats.shape[0], base.game.n_teams
        a_risk = polys.A_ub[cats, :m, :]
        ii, mm, tt = np.meshgrid(np.arange(p), np.arange(m), np.arange(t), indexing="ij")
        risk = sparse.csr_array((a_risk.reshape(-1), ((ii * m + mm).reshape(-1),
                                                      (ii * t + tt).reshape(-1))),
                                shape=(p * m, p * t))
        simplex = sparse.csr_array((np.ones(p * t), (np.repeat(np.arange(p), t),
                                                     np.arange(p * t))), shape=(p, p * t))
        a = sparse.vstack([risk, simplex])
        # Strictly inside: the risk rows tightened a hair, so cleaned vertices stay feasible.
        hi = np.r_[polys.b_ub[cats, :m].reshape(-1) - 1e-9, np.ones(p)]
        lo = np.r_[np.full(p * m, -np.inf), np.ones(p)]
        self._h = highs.model(np.zeros(p * t), a, lo, hi, np.zeros(p * t), np.ones(p * t),
                              solver="simplex")
        self._idx = np.arange(p * t, dtype=np.int32)
        self._shape = (p, t)

    def argmin(self, grad: np.ndarray) -> np.ndarray:
        self._h.changeColsCost(self._idx.size, self._idx, grad.reshape(-1).astype(float))
        x, _ = highs.run(self._h, "bracket plan oracle")
        v = np.clip(x.reshape(self._shape), 0.0, None)
        return v / v.sum(axis=1, keepdims=True)


#: Step sizes the Frank-Wolfe line search tries (every one simulated exactly, in one batch).
_STEPS = np.array([1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625])


def _refine(day: _Day, plan: np.ndarray, oracle: _Oracle, iterations: int
            ) -> tuple[np.ndarray, float, int]:
    """Frank-Wolfe steps on the exact mean wait from ``plan``; (plan, its wait, steps taken).

    Each step moves every passenger toward the vertex of its polytope that the wait's gradient
    prefers, by the step size (of :data:`_STEPS`) that the exact simulation finds best; it stops
    when no step size improves. Every iterate is a convex combination of feasible rows, so
    feasible. The objective is not convex (queues couple passengers bilinearly): this is a local
    improvement, not an optimum.
    """
    waits, team_w, xis = _forward(day, plan[None])
    best = float(waits[0])
    taken = 0
    for _ in range(iterations):
        grad = _gradient(day, plan, team_w[0], xis[0])
        direction = oracle.argmin(grad) - plan
        trial = plan[None] + _STEPS[:, None, None] * direction[None]
        trial_waits, trial_w, trial_xis = _forward(day, trial)
        k = int(np.argmin(trial_waits))
        if not trial_waits[k] < best * (1.0 - 1e-9):
            break
        plan, best = trial[k], float(trial_waits[k])
        team_w, xis = trial_w[k:k + 1], trial_xis[k:k + 1]
        taken += 1
    return plan, best, taken
