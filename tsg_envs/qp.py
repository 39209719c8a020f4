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

__all__ = ["solve_lp", "solve_qp"]

#: Clarabel's gap and feasibility tolerances (its defaults are 1e-8).
QP_TOL = 1e-13


def solve_qp(
    hessian_diag: np.ndarray,
    cost: np.ndarray,
    a: sparse.sparray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    what: str = "QP",
) -> np.ndarray:
    """The minimiser of ½ xᵀ diag(h) x + cᵀx s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi.

    Args:
        hessian_diag: The diagonal h >= 0, (n,).
        cost: c, (n,).
        a: The constraint matrix, (m, n).
        row_lo: Row lower bounds, -inf where unbounded (equal to ``row_hi`` for an equality).
        row_hi: Row upper bounds, inf where unbounded.
        col_lo: Column lower bounds, -inf where unbounded.
        col_hi: Column upper bounds, inf where unbounded.
        what: Names the problem in the error.

    Returns:
        x, (n,).

    Raises:
        RuntimeError: Clarabel did not solve it (the message names ``what`` and the status).
    """
    big_a, b, cones, _ = _conic_form(a, row_lo, row_hi, col_lo, col_hi)
    p = sparse.diags_array(np.asarray(hessian_diag, dtype=float)).tocsc()
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = QP_TOL
    settings.tol_gap_rel = QP_TOL
    settings.tol_feas = QP_TOL
    settings.tol_ktratio = 1e-12
    # Clarabel's static regularisation (1e-8 by default) limits the accuracy of x; the KKT
    # systems are refined iteratively instead.
    settings.static_regularization_constant = 1e-12
    settings.iterative_refinement_reltol = 1e-15
    settings.iterative_refinement_abstol = 1e-15
    settings.iterative_refinement_max_iter = 50
    settings.max_iter = 1000
    solver = clarabel.DefaultSolver(p, np.asarray(cost, dtype=float), big_a, b, cones, settings)
    sol = solver.solve()
    status = str(sol.status)
    if status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"{what}: Clarabel returned {status}")
    return np.asarray(sol.x, dtype=float)


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
    """min cᵀx s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi, by Clarabel's interior point.

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
