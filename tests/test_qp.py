"""The strictly convex QP helper: Clarabel plus the exact solve of its active set."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from tsg_envs import qp


def _box_qp():
    # min (x0 - 2)² + (x1 - 2)² + x2² s.t. x0 + x1 <= 2, x0 - x2 = 0.5, 0 <= x1 <= 0.25.
    # By hand: x1 sits at its bound 0.25 (pulled toward 2); with x2 = x0 - 0.5 the objective in x0
    # is (x0 - 2)² + (x0 - 0.5)², free minimum at x0 = 1.25, and x0 + x1 = 1.5 <= 2 holds, so
    # x = (1.25, 0.25, 0.75).
    h = np.full(3, 2.0)
    c = np.array([-4.0, -4.0, 0.0])
    a = sparse.csr_array(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, -1.0]]))
    return (h, c, a, np.array([-np.inf, 0.5]), np.array([2.0, 0.5]),
            np.array([-np.inf, 0.0, -np.inf]), np.array([np.inf, 0.25, np.inf]))


@pytest.mark.parametrize("polish", [True, False])
def test_small_qp_by_hand(polish: bool) -> None:
    x = qp.solve_qp(*_box_qp(), polish=polish)
    np.testing.assert_allclose(x, [1.25, 0.25, 0.75], atol=1e-9)


def test_polished_point_is_the_exact_kkt_point() -> None:
    # The polish solves the KKT system of the active set directly: the hand solution to roundoff,
    # tighter than Clarabel's own stopping tolerance.
    x = qp.solve_qp(*_box_qp())
    np.testing.assert_allclose(x, [1.25, 0.25, 0.75], atol=1e-14)


def test_dependent_active_rows_fall_back_to_the_reference_path() -> None:
    # The same row twice, both active at the optimum: the active set's KKT matrix is singular,
    # so the polish declines and Clarabel alone answers. min (x0 - 1)² + (x1 - 1)² s.t. x0 + x1
    # <= 1 (twice): x = (0.5, 0.5).
    a = sparse.csr_array(np.array([[1.0, 1.0], [1.0, 1.0]]))
    args = (np.full(2, 2.0), np.full(2, -2.0), a, np.full(2, -np.inf), np.ones(2),
            np.full(2, -np.inf), np.full(2, np.inf))
    s_z = {}
    real = qp._polish

    def spy(*a_):
        out = real(*a_)
        s_z["polished"] = out is not None
        return out

    qp._polish = spy
    try:
        x = qp.solve_qp(*args)
    finally:
        qp._polish = real
    assert s_z == {"polished": False}
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-9)


def test_polish_refuses_a_wrong_active_set() -> None:
    # Claim x1's upper bound is inactive and the first row active (z > s there): the KKT point of
    # that set, x0 + x1 = 2 with x2 = x0 - 0.5, breaks x1 <= 0.25, so the polish returns None.
    h, c, a, rl, rh, cl, ch = _box_qp()
    # Conic order: equality rows (row 1), upper rows (row 0), upper bounds (x1), lower bounds (x1).
    s = np.array([0.0, 0.0, 1.0, 1.0])
    z = np.array([1.0, 1.0, 0.0, 0.0])
    assert qp._polish(h, c, a, rl, rh, cl, ch, s, z) is None
    # The true active set (x1 at its upper bound, row 0 slack) gives the hand solution.
    s, z = np.array([0.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(qp._polish(h, c, a, rl, rh, cl, ch, s, z), [1.25, 0.25, 0.75],
                               atol=1e-14)


def _spied_solve(monkeypatch, args, refuse: int, **kw):
    # Record each Clarabel run's (tolerance, refine) and refuse the first ``refuse`` polishes.
    runs: list[tuple[float, bool]] = []
    real_clarabel, real_polish = qp._clarabel, qp._polish

    def clarabel(*a, refine=True):
        runs.append((a[-1], refine))
        return real_clarabel(*a, refine=refine)

    def polish(*a):
        return None if len(runs) <= refuse else real_polish(*a)

    monkeypatch.setattr(qp, "_clarabel", clarabel)
    monkeypatch.setattr(qp, "_polish", polish)
    return qp.solve_qp(*args, **kw), runs


def test_lean_polish_is_the_exact_kkt_point_from_one_unrefined_run(monkeypatch) -> None:
    x, runs = _spied_solve(monkeypatch, _box_qp(), refuse=0, lean=True)
    np.testing.assert_allclose(x, [1.25, 0.25, 0.75], atol=1e-14)
    assert runs == [(qp.POLISH_TOL, False)]
    x, runs = _spied_solve(monkeypatch, _box_qp(), refuse=0)
    assert runs == [(qp.POLISH_TOL, True)]  # the default: one refined run


def test_lean_polish_falls_back_to_the_refined_run_then_the_reference(monkeypatch) -> None:
    # The unrefined run's set refused: the refined run's set is tried; both refused: Clarabel
    # alone to QP_TOL. Each answer is still the hand solution.
    x, runs = _spied_solve(monkeypatch, _box_qp(), refuse=1, lean=True)
    assert runs == [(qp.POLISH_TOL, False), (qp.POLISH_TOL, True)]
    np.testing.assert_allclose(x, [1.25, 0.25, 0.75], atol=1e-14)
    x, runs = _spied_solve(monkeypatch, _box_qp(), refuse=2, lean=True)
    assert runs == [(qp.POLISH_TOL, False), (qp.POLISH_TOL, True), (qp.QP_TOL, True)]
    np.testing.assert_allclose(x, [1.25, 0.25, 0.75], atol=1e-9)
