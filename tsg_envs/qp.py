"""The one interior-point QP helper: strictly convex QPs that must be solved to high accuracy.

HiGHS (:mod:`tsg_envs.highs`) solves every LP of the project. Its active-set QP solver, however,
stops at feasibility errors near 1e-7 (or fails) on the thin faces the window LP's last stage
works on, so that stage, a projection onto the LP's optimal face, runs on Clarabel (Apache-2.0, an
interior-point conic solver) with tight tolerances. A strictly convex QP has one solution, and an
interior-point method reaches it the same way whatever the order of the variables and rows, so
the result does not depend on how the face was found.
"""

from __future__ import annotations

import clarabel
import numpy as np
from scipy import sparse

__all__ = ["solve_qp"]

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
    n = int(cost.shape[0])
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
    cones = []
    if n_eq:
        cones.append(clarabel.ZeroConeT(n_eq))
    if b.shape[0] > n_eq:
        cones.append(clarabel.NonnegativeConeT(b.shape[0] - n_eq))
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
