"""The one interior-point QP helper: strictly convex QPs that must be solved to high accuracy.

HiGHS (:mod:`tsg_envs.highs`) solves every LP of the project. Its active-set QP solver, however,
stops at feasibility errors near 1e-7 (or fails) on the thin faces the window LP's last stage
works on, so that stage, a projection onto the LP's optimal face, runs on Clarabel (Apache-2.0, an
interior-point conic solver) with tight tolerances. A strictly convex QP has one solution, and an
interior-point method reaches it the same way whatever the order of the variables and rows, so
the result does not depend on how the face was found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import clarabel
import numpy as np
from scipy import sparse
from scipy.sparse import linalg as sparse_linalg
from scipy.sparse.csgraph import structural_rank

__all__ = ["solve_lp", "solve_qp"]

#: Clarabel's gap and feasibility tolerances on the reference path (its defaults are 1e-8).
QP_TOL = 1e-13
#: Clarabel's tolerances before the active-set polish (:func:`solve_qp`): on the 300-flight day's
#: window QPs it names the optimal active set of every window at 1e-9 (not all of them at 1e-7).
POLISH_TOL = 1e-9
#: The polished point's largest row or bound violation (relative to 1 + |bound|), wrong-signed
#: multiplier and stationarity residual |h x + c + Aᵀy| (on the 300-flight day about 4e-15, 0
#: and 1e-8).
POLISH_PRIMAL_TOL = 1e-11
POLISH_SIGN_TOL = 1e-11
POLISH_STATIONARITY_TOL = 1e-7


def solve_qp(
    hessian_diag: np.ndarray,
    cost: np.ndarray,
    a: sparse.sparray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    what: str = "QP",
    *,
    polish: bool = True,
    lean: bool = False,
) -> np.ndarray:
    """The minimiser of ½ xᵀ diag(h) x + cᵀx s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi.

    With ``polish`` (the default), Clarabel runs to a moderate accuracy (:data:`POLISH_TOL`), its
    active set (every bound whose multiplier exceeds its slack) is taken as exact, and the
    equality-constrained KKT system of that set is solved directly (sparse LU with iterative
    refinement). The point is returned only if it satisfies the full KKT conditions: every row and
    bound within :data:`POLISH_PRIMAL_TOL`, every multiplier of the right sign and the stationarity
    residual at most :data:`POLISH_STATIONARITY_TOL`; the QP being strictly convex, that makes it
    the unique minimiser to about that residual / min(h). Otherwise (a wrong active set, a singular
    KKT matrix) the reference path runs: Clarabel alone to :data:`QP_TOL`, which is what
    ``polish=False`` asks for (the tests compare the two).

    Args:
        hessian_diag: The diagonal h >= 0, (n,).
        cost: c, (n,).
        a: The constraint matrix, (m, n).
        row_lo: Row lower bounds, -inf where unbounded (equal to ``row_hi`` for an equality).
        row_hi: Row upper bounds, inf where unbounded.
        col_lo: Column lower bounds, -inf where unbounded.
        col_hi: Column upper bounds, inf where unbounded.
        what: Names the problem in the error.
        polish: Moderate-accuracy Clarabel then the exact KKT solve of its active set (falling
            back to the reference path), or the reference path alone.
        lean: With ``polish``, a first Clarabel run without iterative refinement of its KKT
            systems (its iterations cost about 40 % less); the refined run follows only where
            the active set that one names fails the KKT check. Where the refined run alone
            would have fallen back to the reference path, the lean one often names the exact
            set, so the result moves by that path's error: see
            :class:`tsg_envs.lp.SolverPath`.

    Returns:
        x, (n,).

    Raises:
        RuntimeError: Clarabel did not solve it (the message names ``what`` and the status).
    """
    hessian_diag = np.asarray(hessian_diag, dtype=float)
    cost = np.asarray(cost, dtype=float)
    row_lo, row_hi = np.asarray(row_lo, dtype=float), np.asarray(row_hi, dtype=float)
    col_lo, col_hi = np.asarray(col_lo, dtype=float), np.asarray(col_hi, dtype=float)
    a = sparse.csr_array(a)
    if polish and np.all(hessian_diag > 0):
        for refine in (False, True) if lean else (True,):
            sol = _clarabel(hessian_diag, cost, a, row_lo, row_hi, col_lo, col_hi, POLISH_TOL,
                            refine=refine)
            if str(sol.status) in ("Solved", "AlmostSolved"):
                x = _polish(hessian_diag, cost, a, row_lo, row_hi, col_lo, col_hi,
                            np.asarray(sol.s, dtype=float), np.asarray(sol.z, dtype=float))
                if x is not None:
                    return x
    sol = _clarabel(hessian_diag, cost, a, row_lo, row_hi, col_lo, col_hi, QP_TOL)
    status = str(sol.status)
    if status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"{what}: Clarabel returned {status}")
    return np.asarray(sol.x, dtype=float)


def _clarabel(
    hessian_diag: np.ndarray, cost: np.ndarray, a: sparse.csr_array, row_lo: np.ndarray,
    row_hi: np.ndarray, col_lo: np.ndarray, col_hi: np.ndarray, tol: float, *,
    refine: bool = True,
) -> Any:
    """Clarabel's solution of the QP at gap and feasibility tolerance ``tol``.

    Its static regularisation (1e-8 by default), which limits the accuracy of x, is turned down;
    at :data:`QP_TOL` (the reference path) the KKT systems are refined harder instead. Without
    ``refine`` (below :data:`QP_TOL` only) the KKT systems are not refined at all.
    """
    big_a, b, cones, _ = _conic_form(a, row_lo, row_hi, col_lo, col_hi)
    p = sparse.diags_array(hessian_diag).tocsc()
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = tol
    settings.tol_gap_rel = tol
    settings.tol_feas = tol
    settings.static_regularization_constant = 1e-12
    if tol <= QP_TOL:
        settings.tol_ktratio = 1e-12
        settings.iterative_refinement_reltol = 1e-15
        settings.iterative_refinement_abstol = 1e-15
        settings.iterative_refinement_max_iter = 50
    elif not refine:
        settings.iterative_refinement_enable = False
    settings.max_iter = 1000
    return clarabel.DefaultSolver(p, cost, big_a, b, cones, settings).solve()


def _polish(
    h: np.ndarray, c: np.ndarray, a: sparse.csr_array, row_lo: np.ndarray, row_hi: np.ndarray,
    col_lo: np.ndarray, col_hi: np.ndarray, s: np.ndarray, z: np.ndarray,
) -> np.ndarray | None:
    """The exact KKT point of the active set Clarabel's (s, z) names, or None if it is not optimal.

    Rows and bounds are in :func:`_conic_form`'s order (equalities, upper rows, lower rows, upper
    bounds, lower bounds); one is active where its multiplier z exceeds its slack s.
    """
    m, n = a.shape
    eq = np.isfinite(row_lo) & (row_lo == row_hi)
    up = np.isfinite(row_hi) & ~eq
    lo = np.isfinite(row_lo) & ~eq
    cup, clo = np.isfinite(col_hi), np.isfinite(col_lo)
    active = z > s
    cuts = np.cumsum([int(eq.sum()), int(up.sum()), int(lo.sum()), int(cup.sum())])
    at_hi, at_lo = np.zeros(m, dtype=bool), np.zeros(m, dtype=bool)
    at_hi[up] = active[cuts[0]:cuts[1]]
    at_lo[lo] = active[cuts[1]:cuts[2]]
    fix_hi, fix_lo = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    fix_hi[cup] = active[cuts[2]:cuts[3]]
    fix_lo[clo] = active[cuts[3]:]
    if (fix_hi & fix_lo).any():
        return None
    rows = eq | at_hi | at_lo
    x = np.zeros(n)
    x[fix_hi] = col_hi[fix_hi]
    x[fix_lo] = col_lo[fix_lo]
    free = ~(fix_hi | fix_lo)
    a_s = a[rows]
    a_free = a_s[:, free]
    target = np.where(at_lo, row_lo, row_hi)[rows] - a_s[:, ~free] @ x[~free]
    n_free = int(free.sum())
    kkt = sparse.block_array(
        [[sparse.diags_array(h[free]), a_free.T], [a_free, None]], format="csc"
    )
    rhs = np.r_[-c[free], target]
    if structural_rank(kkt) < kkt.shape[0]:  # singular by its pattern: spare SuperLU, which
        return None  # fails on it too but first has BLAS print "illegal value" to stderr
    try:
        lu = sparse_linalg.splu(kkt)
    except RuntimeError:  # a singular KKT matrix: dependent active rows
        return None
    sol = lu.solve(rhs)
    for _ in range(3):
        sol += lu.solve(rhs - kkt @ sol)
    if not np.isfinite(sol).all():
        return None
    x[free] = sol[:n_free]
    y = np.zeros(m)
    y[rows] = sol[n_free:]
    # The KKT conditions of the whole QP (h x + c + Aᵀy = g, g >= 0 at lower bounds, <= 0 at
    # upper ones, 0 on free columns; y >= 0 on rows at their upper bound, <= 0 at their lower).
    ax = a @ x
    primal = max(_excess(ax, row_hi), _excess(-ax, -row_lo), _excess(x, col_hi),
                 _excess(-x, -col_lo))
    sign = max(np.max(-y[at_hi], initial=0.0), np.max(y[at_lo], initial=0.0))
    g = h * x + c + a.T @ y
    stationarity = max(np.max(np.abs(g[free]), initial=0.0), np.max(-g[fix_lo], initial=0.0),
                       np.max(g[fix_hi], initial=0.0))
    if not (primal <= POLISH_PRIMAL_TOL and sign <= POLISH_SIGN_TOL
            and stationarity <= POLISH_STATIONARITY_TOL):
        return None
    return x


def _excess(value: np.ndarray, bound: np.ndarray) -> float:
    """Largest excess of ``value`` over a finite ``bound``, relative to 1 + |bound|."""
    finite = np.isfinite(bound)
    return float(np.max((value[finite] - bound[finite]) / (1.0 + np.abs(bound[finite])),
                        initial=0.0))


def _conic_form(
    a: sparse.sparray, row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray,
    col_hi: np.ndarray,
) -> tuple[sparse.csc_array, np.ndarray, list[Any], Callable[[np.ndarray], np.ndarray]]:
    """Rows and boxes as Clarabel's A x + s = b, s in (zero cone) x (non-negative cone).

    Returns:
        (A, b, cones, row_dual): ``row_dual(z)`` maps Clarabel's dual z to one multiplier y_i
        per original row, in the sign convention c = Aᵀy + (reduced costs): y_i > 0 prices the
        row's lower bound, y_i < 0 its upper bound.
    """
    n = int(a.shape[1])
    a = sparse.csr_array(a)
    eye = sparse.identity(n, format="csr")
    eq = np.isfinite(row_lo) & (row_lo == row_hi)
    up = np.isfinite(row_hi) & ~eq
    lo = np.isfinite(row_lo) & ~eq
    cup = np.isfinite(col_hi)
    clo = np.isfinite(col_lo)
    blocks = [a[eq], a[up], -a[lo], eye[cup], -eye[clo]]
    rhs = [row_hi[eq], row_hi[up], -row_lo[lo], col_hi[cup], -col_lo[clo]]
    big_a = sparse.vstack(blocks).tocsc()
    b = np.concatenate(rhs).astype(float)
    n_eq = int(eq.sum())
    cones: list[Any] = []
    if n_eq:
        cones.append(clarabel.ZeroConeT(n_eq))
    if b.shape[0] > n_eq:
        cones.append(clarabel.NonnegativeConeT(b.shape[0] - n_eq))
    n_up, n_lo = int(up.sum()), int(lo.sum())

    def row_dual(z: np.ndarray) -> np.ndarray:
        # c + Aᵀz = 0 over the stacked rows: +a for eq and up rows, -a for lo rows.
        y = np.zeros(a.shape[0])
        y[eq] = -z[:n_eq]
        y[up] -= z[n_eq:n_eq + n_up]
        y[lo] += z[n_eq + n_up:n_eq + n_up + n_lo]
        return y

    return big_a, b, cones, row_dual


def solve_lp(
    cost: np.ndarray,
    a: sparse.sparray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    tol: float = 1e-8,
    what: str = "LP",
) -> tuple[np.ndarray, np.ndarray, float]:
    """Minimise cᵀx s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi (Clarabel's interior point).

    For large sparse LPs whose structure (long chains of rows) slows HiGHS's interior-point
    method down (the achievability bracket's fluid LP, :mod:`tsg_envs.bracket`).

    Returns:
        (x, y, objective): the primal point, one multiplier per row (y_i > 0 prices the row's
        lower bound, y_i < 0 its upper bound, as in c = Aᵀy + reduced costs) and cᵀx.

    Raises:
        RuntimeError: Clarabel did not solve it (the message names ``what`` and the status).
    """
    n = int(cost.shape[0])
    big_a, b, cones, row_dual = _conic_form(a, row_lo, row_hi, col_lo, col_hi)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = tol
    settings.tol_gap_rel = tol
    settings.tol_feas = tol
    settings.max_iter = 500
    solver = clarabel.DefaultSolver(sparse.csc_array((n, n)), np.asarray(cost, dtype=float),
                                    big_a, b, cones, settings)
    sol = solver.solve()
    status = str(sol.status)
    if status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"{what}: Clarabel returned {status}")
    x = np.asarray(sol.x, dtype=float)
    return x, row_dual(np.asarray(sol.z, dtype=float)), float(np.dot(cost, x))
