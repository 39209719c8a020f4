"""Action polytopes: rows from the game, Chebyshev centres, α-projection, infeasible ψ."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import tiny_game
from scipy.optimize import linprog

import tsg_envs
from tsg_envs import FEASIBILITY_TOL, InfeasibleRiskBoundError, alpha_project, build_polytopes
from tsg_envs.polytope import min_category_risk, violation

FAST_IDS = [p.id for p in tsg_envs.PRESETS.values() if not p.slow]
SLOW_IDS = [p.id for p in tsg_envs.PRESETS.values() if p.slow]
ALL_IDS = FAST_IDS + [pytest.param(i, marks=pytest.mark.slow) for i in SLOW_IDS]


# The tiny game by hand --------------------------------------------------------------------------
# P = (0.5, 0.5), L = (2, 4) for flights (κ0, κ1), E = (0.5, 0.75), ψ = (0.75, 0.75).
# Risk row of c = (θ, κ): -P L E·π ≤ ψ - P L.
#   κ0: P L = 1 -> a = (-0.5, -0.75), b = -0.25;  κ1: P L = 2 -> a = (-1, -1.5), b = -1.25.
# On the simplex, π = (1 - p, p):
#   κ0: 0.5 + 0.25 p ≥ 0.25, always true; the centre is the simplex's: uniform, with margin
#       ½ / ‖(-1, 0) - mean‖ = 0.5 / √0.5 = √0.5 on the two -π rows.
#   κ1: 1 + 0.5 p ≥ 1.25, i.e. p ≥ 0.5. Hull norms: risk row ‖(-1,-1.5) - (-1.25)‖ = √0.125,
#       -π rows √0.5. Margins: risk (0.5 p - 0.25)/√0.125, -π_0 (1 - p)/√0.5. Equal at p = 0.75:
#       r* = 0.25/√0.5 = √0.125. Half of it is kept for p in [0.625, 0.875]; the point closest to
#       uniform (p = 0.5) is p = 0.625: centre (0.375, 0.625), radius r*/2 = 0.0625/√0.125.
def test_hand_polytopes_of_the_tiny_game() -> None:
    polys = build_polytopes(tiny_game(), np.array([0.75, 0.75]))
    a_k0 = [[-0.5, -0.75], [-1.0, 0.0], [0.0, -1.0]]
    a_k1 = [[-1.0, -1.5], [-1.0, 0.0], [0.0, -1.0]]
    for c, (a, b) in enumerate([(a_k0, -0.25), (a_k1, -1.25)] * 2):
        p = polys[c]
        np.testing.assert_allclose(p.A_ub, a, rtol=1e-15)
        np.testing.assert_allclose(p.b_ub, [b, 0.0, 0.0], rtol=1e-15)
        np.testing.assert_array_equal(p.A_eq, [[1.0, 1.0]])
        np.testing.assert_array_equal(p.b_eq, [1.0])
    for c in (0, 2):
        np.testing.assert_allclose(polys[c].center, [0.5, 0.5], atol=1e-7)
        assert polys[c].radius == pytest.approx(0.7071067811865476, rel=1e-6)
    for c in (1, 3):
        np.testing.assert_allclose(polys[c].center, [0.375, 0.625], atol=1e-6)
        assert polys[c].radius == pytest.approx(0.1767766952966369, rel=1e-5)


def test_min_category_risk_by_hand() -> None:
    # (θ0, κ1): min over p of 0.5·(1 - 0.5 - 0.25 p)·4 at p = 1: 0.5·0.25·4 = 0.5.
    risk, pi = min_category_risk(tiny_game(), 0, 1)
    assert risk == pytest.approx(0.5, abs=1e-9)
    np.testing.assert_allclose(pi, [0.0, 1.0], atol=1e-9)


def test_psi_that_empties_a_polytope_names_theta_flight_and_best_detection() -> None:
    # ψ0 = 0.375 < 0.5, the smallest (θ0, κ1) admits: empty. Categories are built in order, so
    # c1 = (θ0, κ1) is the first to fail.
    with pytest.raises(InfeasibleRiskBoundError) as err:
        build_polytopes(tiny_game(), np.array([0.375, 2.0]))
    msg = str(err.value)
    for fragment in ("theta=0", "flight=1", "empty", "smallest psi[0] it admits is 0.5",
                     "z_m=[0.75]"):
        assert fragment in msg, (fragment, msg)
    # ψ0 = 0.5 exactly: (θ0, κ1) is the single point (0, 1), without interior.
    with pytest.raises(InfeasibleRiskBoundError, match="without interior") as err:
        build_polytopes(tiny_game(), np.array([0.5, 2.0]))
    assert "theta=0, flight=1" in str(err.value)
    # ψ1 = 0.25 empties both θ1 categories; the first one, (θ1, κ0), is named (its best is
    # 0.5·0.25·2 = 0.25: without interior).
    with pytest.raises(InfeasibleRiskBoundError, match=r"theta=1, flight=0"):
        build_polytopes(tiny_game(), np.array([2.0, 0.25]))
    assert issubclass(InfeasibleRiskBoundError, ValueError)


def test_risk_bound_validation() -> None:
    with pytest.raises(ValueError, match="shape"):
        build_polytopes(tiny_game(), np.array([1.0]))
    with pytest.raises(ValueError, match="finite"):
        build_polytopes(tiny_game(), np.array([1.0, np.nan]))


# Every registered id ----------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_rows_recomputed_from_game_arrays(env_id: str) -> None:
    u = gym.make(env_id).unwrapped
    g, psi, polys = u.game, u.risk_bound, u.polytopes
    m, t = g.n_methods, g.n_teams
    # E_{t,m} = 1 - Π_{r∈t} (1 - e_{r,m}), recomputed with loops.
    e = np.ones((t, m))
    for ti in range(t):
        for mi in range(m):
            for r in np.flatnonzero(g.team_members[ti]):
                e[ti, mi] *= 1.0 - g.resource_efficacy[r, mi]
    e = 1.0 - e
    np.testing.assert_allclose(g.team_efficacy, e, rtol=1e-12, atol=1e-15)
    assert polys.A_ub.shape == (g.n_categories, m + t, t)
    assert polys.b_ub.shape == (g.n_categories, m + t)
    for theta in range(g.n_risk_levels):
        for kappa in range(g.n_flights):
            c = theta * g.n_flights + kappa
            p = u.polytope(c)
            for mi in range(m):
                pl = g.attacker_prior[theta] * g.attack_loss[kappa, mi]
                np.testing.assert_allclose(p.A_ub[mi], -pl * e[:, mi], rtol=1e-12, atol=1e-15)
                assert p.b_ub[mi] == pytest.approx(psi[theta] - pl, rel=1e-12, abs=1e-15)
            np.testing.assert_array_equal(p.A_ub[m:], -np.eye(t))
            np.testing.assert_array_equal(p.b_ub[m:], np.zeros(t))


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_centre_strictly_feasible_with_positive_radius(env_id: str) -> None:
    u = gym.make(env_id).unwrapped
    polys = u.polytopes
    a, b, x = polys.A_ub, polys.b_ub, polys.centers
    slack = b - np.einsum("ckt,ct->ck", a, x)
    assert np.all(slack > 0), env_id
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-12)
    norms = np.linalg.norm(a - a.mean(axis=-1, keepdims=True), axis=-1)
    margin = (slack / norms).min(axis=1)
    assert np.all(polys.radii > 0)
    np.testing.assert_allclose(polys.radii, margin, rtol=1e-9)


def _chebyshev_radius(a: np.ndarray, b: np.ndarray) -> float:
    """Max-margin radius within Σπ = 1, solved independently with scipy's linprog."""
    k, t = a.shape
    norms = np.linalg.norm(a - a.mean(axis=1, keepdims=True), axis=1)
    res = linprog(
        np.r_[np.zeros(t), -1.0],
        A_ub=np.c_[a, norms], b_ub=b,
        A_eq=np.r_[np.ones(t), 0.0][None, :], b_eq=[1.0],
        bounds=[(None, None)] * t + [(None, None)], method="highs",
    )
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("env_id", ["tsg/Screening-v1", "tsg/Screening-Window-10F-v1"])
def test_radius_at_least_half_the_chebyshev_optimum(env_id: str) -> None:
    polys = gym.make(env_id).unwrapped.polytopes
    for c in range(polys.n_categories):
        r_star = _chebyshev_radius(polys.A_ub[c], polys.b_ub[c])
        assert 0.5 * r_star * (1 - 1e-6) <= polys.radii[c] <= r_star * (1 + 1e-6)


def test_centre_is_deterministic() -> None:
    g = tiny_game()
    p1 = build_polytopes(g, np.array([0.75, 0.8]))
    p2 = build_polytopes(g, np.array([0.75, 0.8]))
    np.testing.assert_array_equal(p1.centers, p2.centers)


# α-projection -----------------------------------------------------------------------------------
def _hull_directions(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    d = rng.normal(size=(n, t))
    d -= d.mean(axis=1, keepdims=True)
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def test_alpha_projection_on_1e5_points() -> None:
    polys = gym.make("tsg/Screening-v1").unwrapped.polytopes
    rng = np.random.default_rng(2020)
    n_each, t = 20_000, polys.centers.shape[1]
    cats = rng.integers(0, polys.n_categories, size=5 * n_each)
    y0 = polys.centers[cats]
    a, b = polys.A_ub[cats], polys.b_ub[cats]
    radius = polys.radii[cats][:, None]
    parts = [
        # Inside: within the Chebyshev ball of the centre (on the hull), so feasible by definition.
        y0[:n_each] + 0.99 * radius[:n_each] * rng.uniform(size=(n_each, 1))
        * _hull_directions(rng, n_each, t),
        # Uniform on the simplex, and near its vertices.
        rng.dirichlet(np.ones(t), size=n_each),
        rng.dirichlet(np.full(t, 0.05), size=n_each),
        # Far away on the hull (Σ = 1, entries in the hundreds, most negative).
        y0[3 * n_each: 4 * n_each] + 1e3 * _hull_directions(rng, n_each, t),
    ]
    # Just outside: boundary points (projections of far points, which α shrinks a relative 1e-6
    # inside) pushed a relative 3e-6..1e-3 further out.
    sl = slice(4 * n_each, 5 * n_each)
    far = y0[sl] + 10.0 * _hull_directions(rng, n_each, t)
    on_boundary = alpha_project(far, y0[sl], a[sl], b[sl])
    push = 10.0 ** rng.uniform(-5.5, -3, size=(n_each, 1))
    parts.append(y0[sl] + (1 + push) * (on_boundary - y0[sl]))
    s = np.concatenate(parts)
    y = alpha_project(s, y0, a, b)

    before = violation(s, a, b)
    after = violation(y, a, b)
    inside = (np.einsum("nkt,nt->nk", a, s) - b).max(axis=1) <= 0.0  # rows only (Σ rounds)
    assert inside[:n_each].all()
    assert (before[3 * n_each:4 * n_each] > 1.0).all()
    assert not inside[4 * n_each:].any()
    # Identity inside (bit for bit); feasible everywhere, also after float32 rounding.
    np.testing.assert_array_equal(y[inside], s[inside])
    assert after.max() <= FEASIBILITY_TOL
    assert violation(y.astype(np.float32).astype(np.float64), a, b).max() <= FEASIBILITY_TOL
    # Stays on the simplex.
    np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-9)
    assert y.min() >= -FEASIBILITY_TOL
    # α is (nearly) the largest feasible: a step 1e-5 further along s - y0 leaves the polytope.
    out = ~inside
    assert out.sum() > 3 * n_each
    further = y0[out] + (1 + 1e-5) * (y[out] - y0[out])
    rows = np.einsum("nkt,nt->nk", a[out], further) - b[out]
    assert (rows.max(axis=1) > 0).all()
    # Points just outside move by little.
    moved = np.abs(y[4 * n_each:] - s[4 * n_each:]).max(axis=1)
    assert moved.max() < 1e-3 * 2


def test_alpha_projection_batched_shapes_and_gather() -> None:
    polys = gym.make("tsg/Screening-v1").unwrapped.polytopes
    rng = np.random.default_rng(1)
    cats = rng.integers(0, polys.n_categories, size=(4, 6))
    s = rng.dirichlet(np.ones(10), size=(4, 6))
    y = polys.project(s, cats)
    assert y.shape == (4, 6, 10)
    for i in range(4):
        for j in range(6):
            p = polys[cats[i, j]]
            single = alpha_project(s[i, j], p.center, p.A_ub, p.b_ub)
            np.testing.assert_allclose(y[i, j], single, rtol=1e-12, atol=1e-15)
            assert p.contains(y[i, j])
    np.testing.assert_allclose(
        polys.violation(y, cats), [[polys[c].violation(v) for c, v in zip(cr, vr, strict=True)]
                                   for cr, vr in zip(cats, y, strict=True)], atol=1e-15)


def test_alpha_projection_of_the_centre_and_of_a_vertex_by_hand() -> None:
    polys = build_polytopes(tiny_game(), np.array([0.75, 0.75]))
    p = polys[1]  # centre (0.375, 0.625); feasible p ≥ 0.5
    np.testing.assert_array_equal(alpha_project(p.center, p.center, p.A_ub, p.b_ub), p.center)
    # From the centre toward (1, 0) the risk row binds at p = 0.5 (α = 0.2), shrunk 1e-6.
    y = alpha_project(np.array([1.0, 0.0]), p.center, p.A_ub, p.b_ub)
    np.testing.assert_allclose(y, [0.5, 0.5], atol=1e-6)
    assert p.contains(y) and y[1] > 0.5
    # Toward (0, 1): inside, unchanged.
    np.testing.assert_array_equal(alpha_project(np.array([0.0, 1.0]), p.center, p.A_ub, p.b_ub),
                                  [0.0, 1.0])


def test_sampler_is_feasible_and_spread() -> None:
    polys = gym.make("tsg/Screening-v1").unwrapped.polytopes
    rng = np.random.default_rng(7)
    cats = rng.integers(0, polys.n_categories, size=5000)
    x = polys.sample(cats, rng)
    assert polys.violation(x, cats).max() <= FEASIBILITY_TOL
    # Not collapsed onto the centres (the default polytopes of common levels are wide).
    assert np.abs(x - polys.centers[cats]).max() > 0.1


def test_batched_methods_refuse_categories_out_of_range() -> None:
    """-1 ("no one waiting") must not silently index the last category."""
    import gymnasium as gym

    import tsg_envs  # noqa: F401

    polys = gym.make("tsg/Screening-Window-5F-v1").unwrapped.polytopes
    rng = np.random.default_rng(0)
    for call in (lambda: polys.sample(np.array([-1]), rng),
                 lambda: polys.project(np.full((1, 10), 0.1), np.array([polys.n_categories])),
                 lambda: polys.violation(np.full((1, 10), 0.1), np.array([-1]))):
        with pytest.raises(IndexError, match="out of range"):
            call()
    with pytest.raises(TypeError, match="integers"):
        polys.sample(np.array([0.5]), rng)
    assert polys.sample(np.array([0, 1]), rng).shape == (2, 10)


@pytest.mark.parametrize("env_id", ["tsg/Screening-v1", "tsg/Screening-Day-10F-v1"])
def test_batched_centres_are_the_per_category_centres(env_id: str) -> None:
    # One block LP + one block QP for all categories against one LP + QP each (the reference):
    # both solve the same strictly convex problems, so they meet to solver accuracy.
    u = gym.make(env_id).unwrapped
    psi = u.polytopes.risk_bound
    together = build_polytopes(u.game, psi)
    alone = build_polytopes(u.game, psi, batched=False)
    np.testing.assert_allclose(together.centers, alone.centers, atol=1e-9, rtol=0)
    np.testing.assert_allclose(together.radii, alone.radii, atol=1e-9, rtol=0)
    np.testing.assert_array_equal(together.b_ub, alone.b_ub)


def test_batched_centres_of_the_tiny_game_by_hand() -> None:
    # The hand-worked centres above, through the block LP and QP.
    polys = build_polytopes(tiny_game(), np.array([0.75, 0.75]))
    np.testing.assert_allclose(polys.centers[0], [0.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(polys.centers[1], [0.375, 0.625], atol=1e-9)
    np.testing.assert_allclose(polys.radii[1], 0.0625 / np.sqrt(0.125), rtol=1e-9)
