"""The one HiGHS model helper: every LP and QP of the project is built and run here.

HiGHS (through ``highspy``, MIT licensed) solves the polytope centres (:mod:`tsg_envs.polytope`),
the window LP (:mod:`tsg_envs.lp`) and the slack LP baseline (``baselines.slack_lp``). Models are
silent, deterministic (``output_flag`` off, ``random_seed`` 0) and single-threaded.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
from scipy import sparse
from scipy.sparse import linalg as sparse_linalg

__all__ = ["ModelCopy", "silence_banner", "model", "pass_model", "run", "solve",
           "vertex_objective"]


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
    # One thread: the models are small to medium and solved serially, and on a many-core machine
    # HiGHS's default (half the hardware threads per process) oversubscribes parallel workers.
    h.setOptionValue("threads", 1)
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
    pass_model(h, lp, hessian_diag)
    return h


def pass_model(h: Any, lp: Any, hessian_diag: Any = None) -> None:
    """Hand ``lp`` to the HiGHS object ``h``, with a diagonal Hessian ``hessian_diag`` if given."""
    if hessian_diag is None:
        h.passModel(lp)
        return
    n = len(hessian_diag)
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


@dataclass
class ModelCopy:
    """A copy of the LP inside a ``Highs`` object, as HiGHS holds it (infinite bounds as ±inf).

    Attributes:
        cost: c, (n,).
        a: The constraint matrix, CSC (m, n).
        row_lo: Row lower bounds, (m,).
        row_hi: Row upper bounds, (m,).
        col_lo: Column lower bounds, (n,).
        col_hi: Column upper bounds, (n,).
    """

    cost: np.ndarray
    a: sparse.csc_array
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray

    @classmethod
    def read(cls, h: highspy.Highs) -> ModelCopy:
        """Read the model back from ``h`` (``getLp``)."""
        lp = h.getLp()
        n, m = int(lp.num_col_), int(lp.num_row_)
        a = sparse.csc_array(
            (np.asarray(lp.a_matrix_.value_, dtype=float), np.asarray(lp.a_matrix_.index_),
             np.asarray(lp.a_matrix_.start_)), shape=(m, n),
        )
        return cls(np.asarray(lp.col_cost_, dtype=float), a,
                   *(np.asarray(v, dtype=float) for v in (lp.row_lower_, lp.row_upper_,
                                                          lp.col_lower_, lp.col_upper_)))

    @staticmethod
    def matrix(a: sparse.sparray | np.ndarray) -> sparse.csc_array:
        """``a`` as HiGHS stores it: CSC without the entries HiGHS drops when it is passed.

        Those are the entries of magnitude at most :data:`SMALL_MATRIX_VALUE`.
        """
        csc = sparse.csc_array(a, copy=True)
        csc.data[np.abs(csc.data) <= SMALL_MATRIX_VALUE] = 0.0
        csc.eliminate_zeros()
        return csc


#: HiGHS's ``small_matrix_value``: matrix entries of at most this magnitude are dropped.
SMALL_MATRIX_VALUE = 1e-9

#: HiGHS's basis statuses (``HighsBasisStatus``) as integers.
_LOWER, _BASIC, _UPPER, _ZERO = 0, 1, 2, 3


def vertex_objective(h: highspy.Highs, lp: Any = None) -> float | None:
    """The objective at the optimal vertex of the last run, recomputed from its basis.

    HiGHS reports an objective that is exact only to its feasibility tolerances: two runs that
    reach the same optimum by different paths (simplex or interior point, presolve on or off, the
    rows in another order) report values up to 1e-10 apart. Here the nonbasic variables are put
    exactly at their bounds and the basic ones re-solved from the basis matrix (sparse LU and three
    rounds of iterative refinement with residuals in ``numpy.longdouble``), so every optimal
    vertex gives the optimal value to about machine precision.

    Args:
        h: A model that has just been run to optimality with a valid basis (simplex, or
            interior point with crossover).
        lp: The model in ``h`` as a :class:`ModelCopy` the caller keeps (it saves reading the
            model back from HiGHS, which converts every vector to a Python list), or None.

    Returns:
        The objective, or None when the basis is missing or singular, or the recomputed vertex
        is more than 1e-6 from HiGHS's solution; the caller then keeps HiGHS's value.
    """
    basis = h.getBasis()
    if not basis.valid:
        return None
    model = ModelCopy.read(h) if lp is None else lp
    a = model.a
    col_status = np.fromiter(map(int, basis.col_status), dtype=int, count=a.shape[1])
    row_status = np.fromiter(map(int, basis.row_status), dtype=int, count=a.shape[0])
    x_highs = np.asarray(h.getSolution().col_value, dtype=float)
    x = x_highs.copy()
    for status, bound in ((_LOWER, model.col_lo), (_UPPER, model.col_hi)):
        at = col_status == status
        x[at] = bound[at]
    x[col_status == _ZERO] = 0.0
    basic = np.flatnonzero(col_status == _BASIC)
    tight = np.flatnonzero(row_status != _BASIC)  # rows whose activity sits at a bound
    if basic.size != tight.size or not np.isin(row_status[tight], (_LOWER, _UPPER)).all():
        return None
    activity = np.where(row_status[tight] == _UPPER, model.row_hi[tight], model.row_lo[tight])
    if not np.isfinite(activity).all() or not np.isfinite(x).all():
        return None
    if basic.size:
        x[basic] = 0.0
        rows = sparse.coo_array(a[tight])
        ld = np.longdouble
        data = rows.data.astype(ld)

        def residual() -> np.ndarray:
            out = activity.astype(ld)
            np.add.at(out, rows.row, -(data * x.astype(ld)[rows.col]))
            return np.asarray(out, dtype=float)

        try:
            lu = sparse_linalg.splu(sparse.csc_array(a[tight][:, basic]))
        except RuntimeError:  # a singular basis matrix
            return None
        for _ in range(4):
            x[basic] += lu.solve(residual())
    if not np.isfinite(x).all() or np.abs(x - x_highs).max() > 1e-6:
        return None
    return float(np.sum(model.cost.astype(np.longdouble) * x.astype(np.longdouble)))
