"""The one HiGHS model helper: every LP and QP of the project is built and run here.

HiGHS (through ``highspy``, MIT licensed) solves the polytope centres (:mod:`tsg_envs.polytope`),
the window LP (:mod:`tsg_envs.lp`) and the slack LP baseline (``baselines.slack_lp``). Models are
silent and deterministic (``output_flag`` off, ``random_seed`` 0).
"""

from __future__ import annotations

import functools
import os
import sys

import highspy
import numpy as np
from scipy import sparse

__all__ = ["silence_banner", "model", "run", "solve"]


@functools.cache
def silence_banner() -> None:
    """Make the process's first ``Highs`` object with fd 1 pointed at /dev/null.

    HiGHS prints a banner to fd 1 when the first ``Highs`` object is made, whatever its options.
    """
    try:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    except OSError:  # pragma: no cover - no real fd 1 (some notebook kernels)
        highspy.Highs()
        return
    try:
        os.dup2(null, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def model(
    cost: np.ndarray,
    a: sparse.sparray | np.ndarray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    hessian_diag: np.ndarray | None = None,
    solver: str | None = None,
) -> highspy.Highs:
    """A silent, deterministic HiGHS model of min cᵀx (+ ½ xᵀ diag(h) x) s.t. the bounds.

    Args:
        cost: c, (n,).
        a: The constraint matrix, dense or sparse, (m, n); passed column-wise as given (a dense
            matrix becomes CSC with its zeros dropped).
        row_lo: Row lower bounds, -inf where unbounded.
        row_hi: Row upper bounds, inf where unbounded.
        col_lo: Column lower bounds, -inf where unbounded.
        col_hi: Column upper bounds, inf where unbounded.
        hessian_diag: The diagonal of a convex quadratic term (a QP), or None (an LP).
        solver: HiGHS's ``solver`` option (e.g. ``"simplex"``), or None for its default.

    Returns:
        The ``Highs`` object with the model passed, not yet run.
    """
    silence_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    if solver is not None:
        h.setOptionValue("solver", solver)
    inf = highspy.kHighsInf
    csc = sparse.csc_array(a)
    n = int(cost.shape[0])
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = int(csc.shape[0])
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.clip(np.asarray(col_lo, dtype=float), -inf, inf)
    lp.col_upper_ = np.clip(np.asarray(col_hi, dtype=float), -inf, inf)
    lp.row_lower_ = np.clip(np.asarray(row_lo, dtype=float), -inf, inf)
    lp.row_upper_ = np.clip(np.asarray(row_hi, dtype=float), -inf, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = csc.indptr.astype(np.int32)
    lp.a_matrix_.index_ = csc.indices.astype(np.int32)
    lp.a_matrix_.value_ = csc.data.astype(float)
    if hessian_diag is None:
        h.passModel(lp)
    else:
        full = highspy.HighsModel()
        full.lp_ = lp
        hess = highspy.HighsHessian()
        hess.dim_ = n
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = np.arange(n + 1, dtype=np.int32)
        hess.index_ = np.arange(n, dtype=np.int32)
        hess.value_ = np.asarray(hessian_diag, dtype=float)
        full.hessian_ = hess
        h.passModel(full)
    return h


def run(h: highspy.Highs, what: str = "HiGHS") -> tuple[np.ndarray, float]:
    """Run a model; return (x, objective) or raise ``RuntimeError`` naming ``what``."""
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"{what}: HiGHS returned {h.modelStatusToString(status)}")
    return np.array(h.getSolution().col_value), float(h.getInfo().objective_function_value)


def solve(
    cost: np.ndarray,
    a: sparse.sparray | np.ndarray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    hessian_diag: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """:func:`model` then :func:`run`: (x, objective) of min cᵀx (+ ½ xᵀ diag(h) x)."""
    return run(model(cost, a, row_lo, row_hi, col_lo, col_hi, hessian_diag))
