"""The static window LP of Brown et al. (2016) / McCarthy et al. (2017), one LP per window.

Provenance: the paper (Shah et al., AAAI 2020, Section "Experiments") compares against this LP
and takes its per-level risk ψ_θ as the bound for the online agent; SPEC §4 fixes the details
(expected rather than sampled counts, overload stretch, ties, empty windows).

For window w with expected arrivals N_{c,w}:

    maximise   Σ_θ P_θ u_θ
    subject to u_θ ≤ -(1 - z_{c,m}) L_{κ,m}       for c = ⟨θ,κ⟩ with N_{c,w} > 0, all m
               z_{c,m} = Σ_t E_{t,m} π_{c,t},  Σ_t π_{c,t} = 1,  π ≥ 0,  u_θ ≤ 0
               Σ_c Σ_{t∋r} N_{c,w} π_{c,t} ≤ λ_w u f_r |w|   for every resource r

u is the game's planning utilisation (``Game.planning_utilisation``: 1 on every v1 id, below 1
on the v2 single-window ids, where a planner budgets below the raw rates); λ_w = 1 unless the
window is over capacity; then λ_w is the smallest common stretch that makes
it feasible (:func:`least_peak_utilisation`). The stages, each keeping the previous objectives
within a relative 1e-6 of their optima by a row:

1. the main LP (HiGHS: primal simplex, each window from the last window's optimal basis),
   max Σ_θ P_θ u_θ;
2. the delay-aware face: min the peak utilisation max_r load_r / (f_r |w|) plus 1e-3 x the summed
   utilisation (HiGHS: primal simplex from stage 1's optimal basis, which stays primal feasible),
   so that the LP baseline is as kind to delay as its optimum allows;
3. the unique policy: the point of that face closest in L2 to (π uniform, u = 0, v = 0), a
   strictly convex QP (Clarabel, then the exact solve of its active set: :mod:`tsg_envs.qp`),
   so that ties among allocations and among the per-level utilities are broken the same way
   whatever the solver's path (simplex or interior point, presolve on or off, the reference
   path: :class:`SolverPath`) and whatever the order of the resources, teams or categories
   (tested to 1e-7). The values are optimal to 1e-6 relative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from tsg_envs import highs, qp, validation
from tsg_envs.cache import KeyedCache
from tsg_envs.game import Game, arrival_window_probabilities

__all__ = [
    "SolverPath",
    "canonical_order",
    "WindowLPSolution",
    "least_peak_utilisation",
    "min_risk_allocations",
    "run_stage",
    "solve_window_lp",
    "window_edges",
]

#: Expected counts below this are reported as 0 and their categories left unconstrained.
COUNT_EPS = 1e-9

#: Solver of stage 2, the delay-aware face (the main LP's is _MAIN_SOLVER): HiGHS's primal
#: simplex, warm-started from stage 1's basis (stage 1's optimum satisfies the added rows, so the
#: basis stays primal feasible; on the 300-flight day about 10x faster than interior point).
_PICK_SOLVER = "primal"
#: Weight of the summed utilisation beside the peak utilisation in stage 2.
_PICK_SUM_WEIGHT = 1e-3
#: Relative slack of the rows that keep an earlier stage's objective at its optimum. It gives the
#: final QP a face with an interior: at 1e-8 the interior-point QP loses accuracy (policies of
#: different solver paths then differ by up to 1e-3); at 1e-6 they agree to about 1e-8.
_STAGE_TOL = 1e-6
#: HiGHS's feasibility and optimality tolerances in the LP stages (its defaults are 1e-7).
_HIGHS_TOL = 1e-10

_CACHE: KeyedCache[WindowLPSolution] = KeyedCache(64)
#: HiGHS solver of each window's main LP: its primal simplex solves the 300-flight day's windows
#: about twice as fast as interior point with crossover or the dual simplex; the choice moves π
#: within the optimal face only (the final QP then picks the same point, to about 1e-9).
_MAIN_SOLVER = "primal"
#: HiGHS ``simplex_strategy`` values.
_DUAL_SIMPLEX, _PRIMAL_SIMPLEX = 1, 4


def _tol(best: float) -> float:
    return _STAGE_TOL * max(1.0, abs(best))


def run_stage(
    h: highspy.Highs, solver: str, what: str, model: highs.ModelCopy | None = None
) -> tuple[np.ndarray, float]:
    """Run one stage with ``solver``; return (x, the objective at its optimal vertex).

    ``solver``: ``"primal"`` (HiGHS's primal simplex), ``"simplex"`` (its dual simplex) or
    ``"ipm"``. An interior-point run that stops short (HiGHS's status "Unknown" at our tight
    tolerances) is rerun by the simplex from where it stopped.
    """
    h.setOptionValue("solver", "simplex" if solver == "primal" else solver)
    h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX if solver == "primal" else _DUAL_SIMPLEX)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal and solver != "simplex":
        h.setOptionValue("solver", "simplex")
    x, objective = highs.run(h, what)
    # The next stage keeps this optimum by a row: take it from the vertex, not from HiGHS's
    # report (1e-10 apart between solver paths, which the final QP would amplify).
    exact = highs.vertex_objective(h, model)
    return x, objective if exact is None else exact


@dataclass(frozen=True)
class SolverPath:
    """How HiGHS walks the LP stages; the solution does not depend on it (to 1e-7, tested).

    Attributes:
        solver: HiGHS's ``solver`` for every LP stage, ``"simplex"`` (its dual simplex) or
            ``"ipm"`` (interior point with crossover), or None for the default, its primal
            simplex (stage 2 warm-started from stage 1's basis).
        presolve: HiGHS's presolve on or off.
        reference: The slow reference path the fast one is checked against (tests, the
            ``--lp-stages`` benchmark): every window's main LP from HiGHS's own start instead of
            the last window's optimal basis, each stage's model read back from HiGHS, and the
            last stage by Clarabel alone to 1e-13 (``tsg_envs.qp.solve_qp(polish=False)``)
            instead of Clarabel to 1e-9 and the exact solve of its active set.
        lean_qp: The last stage's Clarabel run first without iterative refinement
            (``tsg_envs.qp.solve_qp(lean=True)``): on the 300-flight day the construction
            takes about a quarter less CPU (``python -m benchmarks.envs --lp-stages``). Off by
            default: on some ids it polishes a window exactly where the default falls back to
            Clarabel at 1e-13, so the policy moves in its last digits there (within the
            agreement the tests ask of every path), and results computed from the LP with it
            (α-DDPG's training above all, which amplifies any change) would differ from the
            committed ones.
    """

    solver: str | None = None
    presolve: bool = True
    reference: bool = False
    lean_qp: bool = False

    def __post_init__(self) -> None:
        if self.solver is not None:
            validation.check_choice("solver", self.solver, ("simplex", "ipm"))
        for name in ("presolve", "reference", "lean_qp"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{name} must be a bool, got {validation.describe(getattr(self, name))}")


@dataclass(frozen=True)
class WindowLPSolution:
    """The static window LP's solution over one day.

    Attributes:
        psi: ψ^LP_θ = max_w (-P_θ u*_{θ,w}), shape (Θ,).
        policy: π_{c,w}: (W, C, T); rows of categories with zero expected count hold the
            allocation that minimises that category's worst-method risk.
        window_edges: (W + 1,) minutes from the day start.
        stretch: λ_w, (W,); 1 unless the window is over capacity.
        expected_counts: N_{c,w}, (W, C); values below 1e-9 set to 0.
        utility: u*_{θ,w}, (W, Θ); 0 where the window has no passenger of level θ.
        window_minutes: The window length asked for (None: one window spanning the day).
        capacity: (W, R): passengers each resource may screen in each window as the LP
            planned, λ_w u f_r |w| (SPEC §8), so that whether capacity binds can be checked
            from outside: the LP's planned load ``expected_counts[w] @ policy[w] @
            team_members`` is at most this.
    """

    psi: np.ndarray
    policy: np.ndarray
    window_edges: np.ndarray
    stretch: np.ndarray
    expected_counts: np.ndarray
    utility: np.ndarray
    window_minutes: float | None
    capacity: np.ndarray

    def __post_init__(self) -> None:
        for name in ("psi", "policy", "window_edges", "stretch", "expected_counts", "utility",
                     "capacity"):
            getattr(self, name).setflags(write=False)

    @property
    def n_windows(self) -> int:
        """W."""
        return int(self.stretch.shape[0])

    def window_of(self, time: float | np.ndarray) -> np.ndarray:
        """Index of the window holding ``time`` (minutes from the day start), clipped."""
        idx = np.searchsorted(self.window_edges, time, side="right") - 1
        return np.clip(idx, 0, self.n_windows - 1)

    def action(self, time: float | np.ndarray, category: int | np.ndarray) -> np.ndarray:
        """The LP policy's allocation for a passenger of ``category`` arriving at ``time``."""
        return self.policy[self.window_of(time), category]


def window_edges(game: Game, window_minutes: float | None) -> np.ndarray:
    """Window edges from the day start, every ``window_minutes``, the last cut at the day's end.

    A remainder shorter than a minute is merged into the previous window.
    """
    if window_minutes is None:
        return np.array([0.0, game.day_length])
    window_minutes = validation.check_real("window_minutes", window_minutes, low=0.0,
                                           low_open=True)
    n_windows = math.ceil(game.day_length / window_minutes)
    size = n_windows * game.n_categories * game.n_teams
    if n_windows > validation.MAX_LP_WINDOWS + 1 or size > validation.MAX_LP_SIZE:
        raise ValueError(
            f"window_minutes={window_minutes:g} cuts a day of {game.day_length:g} minutes into "
            f"{n_windows} windows; with {game.n_categories} categories x {game.n_teams} teams "
            f"that is {size} allocation variables. The LP supports at most "
            f"{validation.MAX_LP_WINDOWS} windows and {validation.MAX_LP_SIZE} variables: use "
            "longer windows or fewer flights"
        )
    edges = np.arange(0.0, game.day_length, window_minutes)
    if game.day_length - edges[-1] < 1.0 and len(edges) > 1:
        edges = edges[:-1]
    return np.append(edges, game.day_length)


def min_risk_allocations(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """For every category, the allocation minimising max_m (1 - z_m) L_{κ,m} (one block LP).

    Returns:
        (policy (C, T), risk (C,)) with risk = P_θ · min_π max_m (1 - z_m) L_{κ,m}, the smallest
        ψ_θ each category admits.
    """
    t, m, k = game.n_teams, game.n_methods, game.n_flights
    # Per flight (the allocation does not depend on θ): vars [π (K·T), ρ (K)], min Σ ρ.
    # rows: -L_{κ,m} E_{:,m}·π_κ - ρ_κ <= -L_{κ,m};  Σ π_κ = 1
    n = k * t + k
    rows_a, cols_a, vals_a = [], [], []
    for kappa in range(k):
        for mm in range(m):
            r = kappa * m + mm
            rows_a += [r] * t + [r]
            cols_a += list(range(kappa * t, kappa * t + t)) + [k * t + kappa]
            vals_a += list(-game.attack_loss[kappa, mm] * game.team_efficacy[:, mm]) + [-1.0]
    a_ub = sparse.csr_array((vals_a, (rows_a, cols_a)), shape=(k * m, n))
    b_ub = -game.attack_loss.reshape(-1)
    a_eq = sparse.csr_array(
        (np.ones(k * t), (np.repeat(np.arange(k), t), np.arange(k * t))), shape=(k, n)
    )
    cost = np.concatenate([np.zeros(k * t), np.ones(k)])
    res = linprog(
        cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(k),
        bounds=[(0, None)] * (k * t) + [(None, None)] * k, method="highs",
    )
    if res.status != 0:  # pragma: no cover - the problem is always feasible
        raise RuntimeError(f"min-risk LP failed: {res.message}")
    # The minimiser is not unique; the one closest in L2 to uniform is (a strictly convex QP
    # over the optimal face, every ρ_κ kept at its optimum).
    rho_star = res.x[k * t:]
    x = qp.solve_qp(
        np.full(n, 2.0), np.r_[np.full(k * t, -2.0 / t), np.zeros(k)],
        sparse.vstack([a_ub, a_eq]),
        np.r_[np.full(k * m, -np.inf), np.ones(k)], np.r_[b_ub, np.ones(k)],
        np.r_[np.zeros(k * t), np.full(k, -np.inf)],
        np.r_[np.full(k * t, np.inf), rho_star + _STAGE_TOL * np.maximum(1.0, np.abs(rho_star))],
        what="min-risk allocation QP",
    )
    pi = np.clip(x[: k * t].reshape(k, t), 0.0, None)
    pi /= pi.sum(axis=1, keepdims=True)
    worst = (1.0 - pi @ game.team_efficacy) * game.attack_loss  # (K, M)
    rho = worst.max(axis=1)
    policy = np.tile(pi, (game.n_risk_levels, 1))
    risk = (game.attacker_prior[:, None] * rho[None, :]).reshape(-1)
    return policy, risk


def least_peak_utilisation(game: Game, n_passengers: float, capacity: np.ndarray) -> float:
    """The least peak utilisation, min over allocations of max_r load_r / capacity_r.

    The load depends on the allocation only through the team totals y_t (any y >= 0 with
    Σ y = n is reachable), so this is an LP over (y, λ): min λ s.t. Σ_{t∋r} y_t <= λ capacity_r.

    Args:
        game: The instance (its teams).
        n_passengers: Expected passengers to screen.
        capacity: Passengers each resource screens over the span, (R,).
    """
    t, r = game.n_teams, game.n_resources
    a = np.vstack([np.hstack([game.team_members.T.astype(float), -capacity[:, None]]),
                   np.r_[np.ones(t), 0.0]])
    x, _ = highs.solve(
        np.r_[np.zeros(t), 1.0], a,
        np.r_[np.full(r, -np.inf), n_passengers], np.r_[np.zeros(r), n_passengers],
        np.zeros(t + 1), np.full(t + 1, np.inf),
    )
    return float(x[-1])


#: HiGHS's basis statuses by their integer values.
_STATUS = list(highspy.HighsBasisStatus.__members__.values())


def _set_warm_basis(h: highspy.Highs, warm: dict, active: np.ndarray, act_theta: np.ndarray,
                    fallback: np.ndarray, m: int, r: int, t: int) -> None:
    """Start this window's main LP from the last window's optimal basis, mapped by category.

    Consecutive windows share most of their categories, so the last optimum is a good start
    (on the 300-flight day it halves the main LP's time). A category new to this window starts
    with its risk rows' slacks basic and its min-risk allocation's largest team basic. The basis
    is passed as an "alien" one: HiGHS repairs its count of basic variables and any singularity.
    Where the simplex ends does not matter: the optimum's value is unique and is taken at the
    vertex (:func:`run_stage`), and the last stage's QP is strictly convex.
    """
    prev, prev_col, prev_row = warm["active"], warm["col"], warm["row"]
    na, na_p = active.size, prev.size
    pos = np.searchsorted(prev, active)
    pos = np.minimum(pos, na_p - 1)
    old = prev[pos] == active
    j = pos[old]
    lower, basic, upper = 0, 1, 2
    col_pi = np.full((na, t), lower, dtype=np.int8)
    col_pi[np.arange(na), fallback[active].argmax(axis=1)] = basic
    col_pi[old] = prev_col[: na_p * t].reshape(na_p, t)[j]
    risk = np.full((na, m), basic, dtype=np.int8)
    risk[old] = prev_row[: na_p * m].reshape(na_p, m)[j]
    eq = np.full(na, lower, dtype=np.int8)
    eq[old] = prev_row[na_p * m + r:][j]
    prev_theta = warm["act_theta"]
    col_u = np.full(act_theta.size, upper, dtype=np.int8)
    tpos = np.minimum(np.searchsorted(prev_theta, act_theta), prev_theta.size - 1)
    same = prev_theta[tpos] == act_theta
    col_u[same] = prev_col[na_p * t:][tpos[same]]
    cols = np.r_[col_pi.reshape(-1), col_u]
    rows = np.r_[risk.reshape(-1), prev_row[na_p * m: na_p * m + r], eq]
    b = highspy.HighsBasis()
    b.col_status = [_STATUS[v] for v in cols]
    b.row_status = [_STATUS[v] for v in rows]
    b.valid = True
    b.alien = True
    h.setBasis(b)


def _solve_window(
    game: Game, counts: np.ndarray, length: float, fallback: np.ndarray, path: SolverPath,
    warm: dict | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Solve one window's LP. Returns (policy (C, T), utility (Θ,), stretch)."""
    t, m, k, r = game.n_teams, game.n_methods, game.n_flights, game.n_resources
    n_theta = game.n_risk_levels
    active = np.flatnonzero(counts > 0)
    policy = fallback.copy()
    utility = np.zeros(n_theta)
    if active.size == 0:
        return policy, utility, 1.0
    na = active.size
    thetas, flights = np.divmod(active, k)
    act_theta = np.unique(thetas)
    theta_col = {th: i for i, th in enumerate(act_theta)}
    nu = act_theta.size
    n_pi = na * t

    # Simplex rows.
    a_eq_pi = sparse.csr_array(
        (np.ones(n_pi), (np.repeat(np.arange(na), t), np.arange(n_pi))), shape=(na, n_pi)
    )
    # Capacity rows: load_r = Σ_c N_c Σ_{t∋r} π_{c,t}.
    members = game.team_members.astype(float)  # (T, R)
    cap_vals = (counts[active][:, None, None] * members[None, :, :])  # (na, T, R)
    ci, ti, ri = np.nonzero(cap_vals)
    a_cap_pi = sparse.csr_array(
        (cap_vals[ci, ti, ri], (ri, ci * t + ti)), shape=(r, n_pi)
    )
    capacity = game.planning_utilisation * game.rates * length

    # 0. Stretch: λ_w = the least peak utilisation any allocation reaches, if above 1.
    lam = 1.0
    least = least_peak_utilisation(game, float(counts[active].sum()), capacity)
    if least > 1.0:
        lam = least * (1.0 + 1e-7)

    # 1. Main LP. Risk rows: u_θ - L_{κ,m} Σ_t E_{t,m} π_{c,t} <= -L_{κ,m}.
    loss = game.attack_loss[flights]  # (na, M)
    risk_vals = -loss[:, :, None] * game.team_efficacy.T[None, :, :]  # (na, M, T)
    rr = (np.arange(na)[:, None, None] * m + np.arange(m)[None, :, None]) * np.ones((1, 1, t))
    cc = (np.arange(na)[:, None, None] * t + np.arange(t)[None, None, :]) * np.ones((1, m, 1))
    a_risk_pi = sparse.csr_array(
        (risk_vals.reshape(-1), (rr.reshape(-1).astype(int), cc.reshape(-1).astype(int))),
        shape=(na * m, n_pi),
    )
    ucols = np.array([theta_col[th] for th in thetas])
    a_risk_u = sparse.csr_array(
        (np.ones(na * m), (np.arange(na * m), np.repeat(ucols, m))), shape=(na * m, nu)
    )
    a_ub = sparse.vstack(
        [
            sparse.hstack([a_risk_pi, a_risk_u]),
            sparse.hstack([a_cap_pi, sparse.csr_array((r, nu))]),
        ]
    ).tocsr()
    b_ub = np.concatenate([-loss.reshape(-1), lam * capacity])
    a_eq = sparse.hstack([a_eq_pi, sparse.csr_array((na, nu))]).tocsr()
    prior = game.attacker_prior[act_theta]
    cost = np.concatenate([np.zeros(n_pi), -prior])
    a_all = sparse.vstack([a_ub, a_eq]).tocsc()
    row_lo = np.concatenate([np.full(a_ub.shape[0], -np.inf), np.ones(na)])
    row_hi = np.concatenate([b_ub, np.ones(na)])
    col_lo = np.concatenate([np.zeros(n_pi), np.full(nu, -float(game.attack_loss.max()))])
    col_hi = np.concatenate([np.full(n_pi, np.inf), np.zeros(nu)])
    # Interior point (with crossover to a vertex) is about twice as fast as the simplex here.
    h = highs.model(cost, a_all, row_lo, row_hi, col_lo, col_hi)
    # The model as HiGHS holds it, kept here as the stages change it (reading it back from HiGHS
    # converts every vector to a Python list: a tenth of the LP stages' time on 300 flights).
    model = highs.ModelCopy(cost, highs.ModelCopy.matrix(a_all), row_lo, row_hi, col_lo, col_hi)
    h.setOptionValue("presolve", "on" if path.presolve else "off")
    for name in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
        h.setOptionValue(name, _HIGHS_TOL)
    warm_start = path.solver is None and not path.reference
    warm = {} if warm is None else warm
    if warm_start and "active" in warm:
        _set_warm_basis(h, warm, active, act_theta, fallback, m, r, t)
    _, objective = run_stage(h, path.solver or _MAIN_SOLVER, "window LP",
                              None if path.reference else model)
    if warm_start:
        basis = h.getBasis()
        warm.update(active=active, act_theta=act_theta,
                    col=np.fromiter(map(int, basis.col_status), dtype=np.int8,
                                    count=n_pi + nu),
                    row=np.fromiter(map(int, basis.row_status), dtype=np.int8,
                                    count=na * m + r + na))
    best = -objective
    ucol_idx = np.arange(n_pi, n_pi + nu, dtype=np.int32)
    # Each later stage keeps the earlier objectives at their optima by a row (relaxed by
    # _STAGE_TOL, never by fixing variables at one solver's values), so every stage's optimal
    # value is unique. The row goes into the solved model: the next stage starts from its basis.
    h.addRow(-highspy.kHighsInf, -best + _tol(best), nu, ucol_idx, -prior.astype(float))
    # 2. Delay-aware face: minimise the peak resource utilisation v (plus 1e-3 x the summed
    # utilisation), so that the LP baseline is as kind to delay as its optimum allows.
    h.changeColsCost(nu, ucol_idx, np.zeros(nu))
    inv_cap = 1.0 / capacity
    util_cost = (cap_vals * inv_cap[None, None, :]).sum(axis=2).reshape(-1)  # (na*T,)
    pick_cost = _PICK_SUM_WEIGHT * util_cost
    h.changeColsCost(n_pi, np.arange(n_pi, dtype=np.int32), pick_cost)
    v_col = n_pi + nu
    h.addCol(1.0, 0.0, highspy.kHighsInf, 0, np.array([], dtype=np.int32), np.array([]))
    util_rows = (sparse.diags_array(inv_cap) @ a_cap_pi).tocsr()
    starts: list[int] = []
    idx: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for rr_ in range(r):
        starts.append(len(idx))
        row = util_rows[[rr_], :]
        idx.extend(row.indices.tolist() + [v_col])
        vals.extend(row.data.tolist() + [-1.0])
    h.addRows(
        r, np.full(r, -highspy.kHighsInf), np.zeros(r), len(idx),
        np.array(starts, dtype=np.int32), np.array(idx, dtype=np.int32), np.array(vals),
    )
    n_col = v_col + 1
    stage1_row = sparse.csr_array(
        (-prior.astype(float), (np.zeros(nu, dtype=int), ucol_idx)), shape=(1, n_col))
    util_block = sparse.csr_array(
        (np.array(vals), np.array(idx, dtype=np.int32), np.r_[starts, len(idx)]),
        shape=(r, n_col))
    model = highs.ModelCopy(
        np.r_[pick_cost, np.zeros(nu), 1.0],
        highs.ModelCopy.matrix(sparse.vstack([
            sparse.hstack([model.a, sparse.csc_array((model.a.shape[0], 1))]), stage1_row,
            util_block])),
        np.r_[row_lo, -np.inf, np.full(r, -np.inf)],
        np.r_[row_hi, -best + _tol(best), np.zeros(r)],
        np.r_[col_lo, 0.0], np.r_[col_hi, np.inf],
    )
    _, best_pick = run_stage(h, path.solver or _PICK_SOLVER, "window LP delay-aware stage",
                              None if path.reference else model)
    # 3. The unique policy: on that face, the point closest to (π uniform, u = 0, v = 0) in L2, a
    # strictly convex QP, so the policy depends neither on the solver's path nor on the order of
    # resources, teams or categories; solved by an interior-point method (tsg_envs.qp).
    face_row = sparse.csr_array(np.r_[pick_cost, np.zeros(nu), 1.0][None, :])
    x = qp.solve_qp(
        np.full(n_pi + nu + 1, 2.0),
        np.r_[np.full(n_pi, -2.0 / t), np.zeros(nu + 1)],
        sparse.vstack([model.a, face_row]),
        np.r_[model.row_lo, -np.inf],
        np.r_[model.row_hi, best_pick + _tol(best_pick)],
        model.col_lo, model.col_hi,
        what="window LP unique-policy QP", polish=not path.reference, lean=path.lean_qp,
    )
    pi = np.clip(x[:n_pi].reshape(na, t), 0.0, None)
    pi /= pi.sum(axis=1, keepdims=True)
    policy[active] = pi
    # Report the utility the (cleaned) policy actually achieves: min over its categories.
    achieved = -((1.0 - pi @ game.team_efficacy) * loss).max(axis=1)  # (na,)
    for th in act_theta:
        utility[th] = achieved[thetas == th].min()
    return policy, utility, lam


def solve_window_lp(
    game: Game, window_minutes: float | None = 60.0, *, path: SolverPath | None = None
) -> WindowLPSolution:
    """Solve the static window LP over the game's day (cached per instance and window length).

    Args:
        game: The instance.
        window_minutes: Window length; None gives one window spanning the whole day (the paper's
            single time-window setting).
        path: The HiGHS solver path (default :class:`SolverPath`); the solution does not depend
            on it beyond solver tolerances, so it is there for checks.

    Returns:
        The :class:`WindowLPSolution`.
    """
    path = SolverPath() if path is None else path
    if not isinstance(path, SolverPath):
        raise TypeError(f"path must be a SolverPath, got {validation.describe(path)}")
    cache_key = None if game.key is None else (game.key, window_minutes, path)
    return _CACHE.get_or_make(cache_key, lambda: _solve_window_lp(game, window_minutes, path))


def _order(*keys: np.ndarray) -> np.ndarray:
    """Indices sorting entities by the key columns (first column most significant), stably."""
    return np.lexsort(tuple(reversed([np.asarray(k, dtype=float) for k in keys])))


def canonical_order(game: Game) -> dict[str, np.ndarray]:
    """An order of the game's resources, teams, methods, levels and flights fixed by their data.

    Each entity is sorted by values that no reordering of the others changes (its own numbers,
    and the sorted values of its rows), so any reordering of a game has the same canonical order
    of the same entities. Entities whose keys tie keep their given order.

    Returns:
        ``{"resources", "teams", "methods", "levels", "flights"}``: for each, the original index
        of the entity at each canonical position.
    """
    members = game.team_members.astype(float)
    methods = _order(*np.sort(game.team_efficacy, axis=0),
                     *np.sort(game.attack_loss, axis=0), *np.sort(game.resource_efficacy, axis=0))
    resources = _order(game.rates, *np.sort(game.resource_efficacy, axis=1).T,
                       members.sum(axis=0))
    rate_rows = np.sort(np.where(game.team_members, game.rates[None, :], -1.0), axis=1)
    teams = _order(*np.sort(game.team_efficacy, axis=1).T, members.sum(axis=1), *rate_rows.T)
    levels = _order(game.attacker_prior, game.risk_mix)
    flights = _order(game.departures, game.flight_sizes, *np.sort(game.attack_loss, axis=1).T)
    return {"resources": resources, "teams": teams, "methods": methods, "levels": levels,
            "flights": flights}


def _solve_window_lp(
    game: Game, window_minutes: float | None, path: SolverPath
) -> WindowLPSolution:
    # Solve the game listed in its canonical order and map the solution back, so that a
    # reordered game gets exactly the reordered policy (the solvers' roundoff depends on the
    # order of rows and columns, and the last stage can amplify it past 1e-7).
    order = canonical_order(game)
    sol = _solve_in_order(game.reordered(**order), window_minutes, path)
    lv, f, t = order["levels"], order["flights"], order["teams"]
    cat = (lv[:, None] * game.n_flights + f[None, :]).reshape(-1)  # canonical c -> original c
    policy = np.empty_like(sol.policy)
    policy[:, cat[:, None], t[None, :]] = sol.policy
    counts = np.empty_like(sol.expected_counts)
    counts[:, cat] = sol.expected_counts
    utility = np.empty_like(sol.utility)
    utility[:, lv] = sol.utility
    psi = np.empty_like(sol.psi)
    psi[lv] = sol.psi
    capacity = np.empty_like(sol.capacity)
    capacity[:, order["resources"]] = sol.capacity
    return WindowLPSolution(
        psi=psi, policy=policy, window_edges=sol.window_edges.copy(), stretch=sol.stretch.copy(),
        expected_counts=counts, utility=utility, window_minutes=window_minutes,
        capacity=capacity,
    )


def _solve_in_order(
    game: Game, window_minutes: float | None, path: SolverPath
) -> WindowLPSolution:
    edges = window_edges(game, window_minutes)
    probs = arrival_window_probabilities(game, edges)  # (W, K)
    counts = (probs[:, None, :] * game.risk_mix[None, :, None] * game.flight_sizes).reshape(
        len(edges) - 1, game.n_categories
    )
    counts[counts < COUNT_EPS] = 0.0
    fallback, _ = min_risk_allocations(game)
    n_w = len(edges) - 1
    policy = np.empty((n_w, game.n_categories, game.n_teams))
    utility = np.zeros((n_w, game.n_risk_levels))
    stretch = np.ones(n_w)
    warm: dict = {}
    for w in range(n_w):
        policy[w], utility[w], stretch[w] = _solve_window(
            game, counts[w], float(edges[w + 1] - edges[w]), fallback, path, warm
        )
    psi = (-game.attacker_prior[None, :] * utility).max(axis=0)
    psi = np.maximum(psi, 0.0)
    capacity = (stretch * np.diff(edges))[:, None] * (game.planning_utilisation * game.rates)
    sol = WindowLPSolution(
        psi=psi, policy=policy, window_edges=edges, stretch=stretch,
        expected_counts=counts, utility=utility, window_minutes=window_minutes,
        capacity=capacity,
    )
    return sol
