"""The static window LP: a hand-solved instance, ties, overload stretch, empty windows."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from conftest import tiny_game

from tsg_envs import GameConfig, make_game, solve_window_lp
from tsg_envs.lp import min_risk_allocations, window_edges


# A hand-solvable LP -----------------------------------------------------------------------------
# One flight (so c = θ), 4 passengers with q = (¼, ¾): N = (1, 3). Everyone arrives at
# d - mean = 3 - 2 = 1 (σ = 0); one window [0, 2], |w| = 2. Teams {r0} (E 0.5) and {r0, r1}
# (E 0.75), L = 4, one method: with p_θ = π_{θ,1}, u_θ ≤ -(1 - 0.5 - 0.25 p_θ)·4 = -(2 - p_θ).
# Capacity: r0 carries everyone (4 ≤ f0·2 = 8 for f0 = 4); r1 carries N·p: p_0 + 3 p_1 ≤ f1·2 = 2.
# Objective Σ P_θ u_θ with P = (¼, ¾): each unit of r1 capacity buys ¼·1 for θ0 (one passenger)
# and ¾·⅓ = ¼ for θ1 (three): a tie in Σ P u. The optimal face is p_0 + 3 p_1 = 2, p_0 in [0, 1],
# u_θ = -(2 - p_θ); utilisations are constant on it (r0: 4/8, r1: 1), so the delay-aware stage
# keeps it whole. The last stage takes the point closest to (π uniform, u = 0, v = 0):
# min 2(p_0 - ½)² + 2(p_1 - ½)² + (2 - p_0)² + (2 - p_1)² with p_1 = (2 - p_0)/3; its derivative
# (20/3) p_0 - 16/3 vanishes at p_0 = 4/5, so p_1 = 2/5, u = (-6/5, -8/5), ψ = P·(-u) = (3/10, 6/5).
# The stages keep earlier objectives within 1e-6 relative, so literals hold to 1e-5.
def lp_game(**overrides: object):
    fields = dict(
        config=GameConfig(n_resources=2, n_methods=1, n_risk_levels=2, team_size=1, n_flights=1),
        rates=np.array([4.0, 1.0]),
        attacker_prior=np.array([0.25, 0.75]),
        risk_mix=np.array([0.25, 0.75]),
        attack_loss=np.array([[4.0]]),
        departures=np.array([3.0]),
        flight_sizes=np.array([4]),
        day_length=2.0,
    )
    fields.update(overrides)
    return tiny_game(**fields)


def test_hand_solved_lp_with_tie_break() -> None:
    sol = solve_window_lp(lp_game(), window_minutes=None)
    np.testing.assert_array_equal(sol.window_edges, [0.0, 2.0])
    np.testing.assert_allclose(sol.expected_counts, [[1.0, 3.0]], rtol=1e-12)
    np.testing.assert_array_equal(sol.stretch, [1.0])
    np.testing.assert_allclose(sol.policy[0], [[0.2, 0.8], [0.6, 0.4]], atol=1e-5)
    np.testing.assert_allclose(sol.utility[0], [-1.2, -1.6], atol=1e-5)
    np.testing.assert_allclose(sol.psi, [0.3, 1.2], atol=1e-5)
    # The same edges for 60-minute windows (the day is shorter than one window).
    sol60 = solve_window_lp(lp_game(), window_minutes=60.0)
    np.testing.assert_allclose(sol60.policy, sol.policy, atol=1e-9)


def test_unique_optimum_without_tie() -> None:
    # P = (0.1, 0.9): a unit of r1 buys 0.1 for θ0 and 0.9/3 = 0.3 for θ1, so θ1 takes it all:
    # p_1 = ⅔ (2 units), p_0 = 0. u = (-2, -4/3), ψ = (0.2, 1.2).
    sol = solve_window_lp(lp_game(attacker_prior=np.array([0.1, 0.9])), window_minutes=None)
    np.testing.assert_allclose(sol.policy[0], [[1.0, 0.0], [1 / 3, 2 / 3]], atol=1e-5)
    np.testing.assert_allclose(sol.utility[0], [-2.0, -4 / 3], atol=1e-5)
    np.testing.assert_allclose(sol.psi, [0.2, 1.2], atol=1e-5)


def test_overload_stretch_by_hand() -> None:
    # f0 = 1.5: r0 must carry all 4 passengers but offers 1.5·2 = 3, so λ = 4/3 (r1 can carry 0).
    # Stretched r1 capacity 2·4/3 = 8/3: the tie again, on the face p_0 + 3 p_1 = 8/3 (both
    # utilisations 4/3 on it). The last stage (as above, p_1 = 8/9 - p_0/3): the derivative
    # (20/3) p_0 - 156/27 vanishes at p_0 = 13/15, so p_1 = 3/5; u = (-17/15, -7/5).
    sol = solve_window_lp(lp_game(rates=np.array([1.5, 1.0])), window_minutes=None)
    assert sol.stretch[0] == pytest.approx(4 / 3, rel=1e-6)
    np.testing.assert_allclose(sol.policy[0], [[2 / 15, 13 / 15], [2 / 5, 3 / 5]], atol=1e-5)
    np.testing.assert_allclose(sol.utility[0], [-17 / 15, -7 / 5], atol=1e-5)
    # Everyone is still allocated (rows on the simplex); the load fits the stretched capacity.
    np.testing.assert_allclose(sol.policy.sum(axis=-1), 1.0, atol=1e-12)
    load = sol.expected_counts[0] @ sol.policy[0] @ np.array([[1.0, 0.0], [1.0, 1.0]])
    assert np.all(load <= sol.stretch[0] * np.array([1.5, 1.0]) * 2.0 * (1 + 1e-9))


def test_window_without_passengers_of_a_level() -> None:
    # q = (1, 0): θ1 never arrives. θ0 alone: N = 4, p_0 ≤ 2/4 -> u_0 = -1.5, ψ_0 = 0.375.
    # θ1's utility is 0 (no passenger) and its policy row is the min-risk allocation: team 1
    # (E 0.75 > 0.5), never NaN.
    sol = solve_window_lp(lp_game(risk_mix=np.array([1.0, 0.0])), window_minutes=None)
    np.testing.assert_array_equal(sol.expected_counts, [[4.0, 0.0]])
    np.testing.assert_allclose(sol.utility[0], [-1.5, 0.0], atol=1e-5)
    np.testing.assert_allclose(sol.psi, [0.375, 0.0], atol=1e-5)
    np.testing.assert_allclose(sol.policy[0, 1], [0.0, 1.0], atol=1e-5)
    assert np.isfinite(sol.policy).all() and np.isfinite(sol.utility).all()


def test_empty_window_and_window_indexing() -> None:
    # 1-minute windows: edges (0, 1, 2); everyone arrives at τ = 1, i.e. in window 1 = [1, 2].
    # Window 0 is empty: utility 0, stretch 1, policy the min-risk allocation (team 1).
    # Window 1 has |w| = 1: r1 offers 1 unit; the tie as before on the face p_0 + 3 p_1 = 1, where
    # the last stage (p_1 = 1/3 - p_0/3; derivative (20/3) p_0 - 14/3) gives p_0 = 7/10,
    # p_1 = 1/10: u = (-13/10, -19/10), ψ = (0.325, 1.425).
    sol = solve_window_lp(lp_game(), window_minutes=1.0)
    np.testing.assert_array_equal(sol.window_edges, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(sol.expected_counts, [[0.0, 0.0], [1.0, 3.0]])
    np.testing.assert_array_equal(sol.utility[0], [0.0, 0.0])
    np.testing.assert_array_equal(sol.stretch, [1.0, 1.0])
    np.testing.assert_allclose(sol.policy[0], [[0.0, 1.0], [0.0, 1.0]], atol=1e-5)
    np.testing.assert_allclose(sol.policy[1], [[0.3, 0.7], [0.9, 0.1]], atol=1e-5)
    np.testing.assert_allclose(sol.utility[1], [-1.3, -1.9], atol=1e-5)
    np.testing.assert_allclose(sol.psi, [0.325, 1.425], atol=1e-5)
    assert sol.window_of(0.5) == 0 and sol.window_of(1.0) == 1 and sol.window_of(2.0) == 1
    assert sol.window_of(-3.0) == 0 and sol.window_of(99.0) == 1
    np.testing.assert_allclose(sol.action(1.5, 1), [0.9, 0.1], atol=1e-5)


def test_window_edges() -> None:
    g = tiny_game(day_length=150.5)
    np.testing.assert_array_equal(window_edges(g, 60.0), [0.0, 60.0, 120.0, 150.5])
    np.testing.assert_array_equal(window_edges(g, None), [0.0, 150.5])
    # A remainder under a minute joins the previous window.
    np.testing.assert_array_equal(window_edges(tiny_game(day_length=120.5), 60.0),
                                  [0.0, 60.0, 120.5])
    with pytest.raises(ValueError):
        window_edges(g, 0.0)


def test_min_risk_allocations_by_hand() -> None:
    # Tiny game: team 1 detects better (0.75) for every flight; risk P_θ·0.25·L_κ.
    policy, risk = min_risk_allocations(tiny_game())
    np.testing.assert_allclose(policy, [[0.0, 1.0]] * 4, atol=1e-5)  # optimal to 1e-6 relative
    np.testing.assert_allclose(risk, [0.25, 0.5, 0.25, 0.5], atol=1e-5)


# Invariants on generated instances -----------------------------------------------------------
@pytest.mark.parametrize("env_id", ["tsg/Screening-v1", "tsg/Screening-Window-10F-v1",
                                    "tsg/Screening-Day-10F-v1"])
def test_lp_solution_invariants(env_id: str) -> None:
    u = gym.make(env_id).unwrapped
    g, sol = u.game, u.lp_solution
    w, c, t = sol.policy.shape
    assert (c, t) == (g.n_categories, g.n_teams) and w == sol.n_windows
    assert np.isfinite(sol.policy).all() and np.isfinite(sol.utility).all()
    assert sol.policy.min() >= 0
    np.testing.assert_allclose(sol.policy.sum(axis=-1), 1.0, atol=1e-9)
    # Expected counts add up to the day's passengers per category.
    np.testing.assert_allclose(sol.expected_counts.sum(axis=0), g.expected_category_counts(),
                               rtol=1e-6)
    assert (sol.expected_counts[sol.expected_counts > 0] >= 1e-9).all()
    length = np.diff(sol.window_edges)
    members = g.team_members.astype(float)
    for wi in range(w):
        load = sol.expected_counts[wi] @ sol.policy[wi] @ members
        cap = sol.stretch[wi] * g.rates * length[wi]
        assert np.all(load <= cap * (1 + 1e-6) + 1e-9)
        if sol.stretch[wi] > 1:  # an overloaded window runs its binding resource at capacity
            assert np.max(load / cap) == pytest.approx(1.0, rel=1e-5)
        # Every category with passengers meets its level's utility; ψ bounds every window.
        risk = (1 - sol.policy[wi] @ g.team_efficacy) * np.tile(g.attack_loss, (g.n_risk_levels,
                                                                                1))
        worst = risk.max(axis=1).reshape(g.n_risk_levels, g.n_flights)
        active = sol.expected_counts[wi].reshape(g.n_risk_levels, g.n_flights) > 0
        for theta in range(g.n_risk_levels):
            if active[theta].any():
                assert worst[theta][active[theta]].max() == pytest.approx(
                    -sol.utility[wi, theta], rel=1e-6)
                assert g.attacker_prior[theta] * worst[theta][active[theta]].max() <= (
                    sol.psi[theta] * (1 + 1e-9))
            else:
                assert sol.utility[wi, theta] == 0
    np.testing.assert_allclose(sol.psi, (-g.attacker_prior * sol.utility).max(axis=0),
                               rtol=1e-12)


def test_lp_is_deterministic_across_fresh_games() -> None:
    cfg = GameConfig(n_flights=5)
    a = solve_window_lp(make_game(cfg, 3))
    # Copies without the cache key force fresh solves.
    b = solve_window_lp(dataclasses.replace(make_game(cfg, 3), key=None))
    c = solve_window_lp(dataclasses.replace(make_game(cfg, 3), key=None))
    np.testing.assert_array_equal(a.policy, b.policy)
    np.testing.assert_array_equal(b.policy, c.policy)
    np.testing.assert_array_equal(a.psi, c.psi)


def test_capacity_binds_in_the_single_window_preset() -> None:
    # tsg/Screening-Window-10F-v1: removing the capacity rows must improve the LP's value
    # (otherwise ψ collapses to the best reachable detection; SPEC §1).
    u = gym.make("tsg/Screening-Window-10F-v1").unwrapped
    g = u.game
    value = float(g.attacker_prior @ u.lp_solution.utility[0])
    ample = dataclasses.replace(g, rates=g.rates * 1e6, key=None)
    free_value = float(ample.attacker_prior @ solve_window_lp(ample, None).utility[0])
    assert free_value > value + 1e-3



# A unique reference ------------------------------------------------------------------------------
UNIQUE_CASES = [
    (GameConfig(horizon="window", n_flights=10), None, seed) for seed in range(3)
] + [(GameConfig(), 60.0, seed) for seed in (0, 1, 2, 15)]  # 15: once 2e-7 apart


@pytest.mark.parametrize(("config", "window_minutes", "seed"), UNIQUE_CASES)
def test_lp_policy_does_not_depend_on_the_solver_path(config, window_minutes, seed) -> None:
    from tsg_envs.lp import SolverPath

    game = make_game(config, seed)
    ref = solve_window_lp(game, window_minutes)
    for solver in ("simplex", "ipm"):
        for presolve in (True, False):
            sol = solve_window_lp(game, window_minutes, path=SolverPath(solver, presolve))
            np.testing.assert_allclose(sol.policy, ref.policy, atol=1e-7, rtol=0)
            np.testing.assert_allclose(sol.psi, ref.psi, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize(("config", "window_minutes", "seed"), UNIQUE_CASES)
def test_lp_policy_is_permuted_with_the_game(config, window_minutes, seed) -> None:
    # Reorder resources, teams, flights, risk levels and methods at once: the policy's rows and
    # columns follow (category c = θ·K + κ), ψ follows the levels, nothing else changes.
    game = make_game(config, seed)
    base = solve_window_lp(game, window_minutes)
    rng = np.random.default_rng(seed)
    tp, rp, fp = (rng.permutation(n) for n in (game.n_teams, game.n_resources, game.n_flights))
    lp_, mp = rng.permutation(game.n_risk_levels), rng.permutation(game.n_methods)
    perm = dataclasses.replace(
        game, key=None, rates=game.rates[rp], team_members=game.team_members[tp][:, rp],
        resource_efficacy=game.resource_efficacy[rp][:, mp],
        team_efficacy=game.team_efficacy[tp][:, mp], attacker_prior=game.attacker_prior[lp_],
        risk_mix=game.risk_mix[lp_], attack_loss=game.attack_loss[fp][:, mp],
        departures=game.departures[fp], flight_sizes=game.flight_sizes[fp],
    )
    sol = solve_window_lp(perm, window_minutes)
    old_category = (lp_[:, None] * game.n_flights + fp[None, :]).reshape(-1)
    # Exactly: both are solved in the same canonical order.
    np.testing.assert_array_equal(sol.policy, base.policy[:, old_category][:, :, tp])
    np.testing.assert_array_equal(sol.psi, base.psi[lp_])
    np.testing.assert_array_equal(sol.utility, base.utility[:, lp_])
    np.testing.assert_array_equal(sol.expected_counts, base.expected_counts[:, old_category])
    # The canonical order names the same entities in both.
    from tsg_envs.lp import canonical_order

    mine, theirs = canonical_order(game), canonical_order(perm)
    for name, p in (("teams", tp), ("resources", rp), ("flights", fp), ("levels", lp_),
                    ("methods", mp)):
        np.testing.assert_array_equal(p[theirs[name]], mine[name])


def test_solver_path_is_checked() -> None:
    from tsg_envs.lp import SolverPath

    with pytest.raises(ValueError, match="solver"):
        SolverPath("pdlp")
    with pytest.raises(TypeError, match="presolve"):
        SolverPath(None, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SolverPath"):
        solve_window_lp(make_game(), path="simplex")  # type: ignore[arg-type]


# The stages' optima, recomputed at the vertex -----------------------------------------------------
@pytest.mark.parametrize("solver", ["simplex", "ipm"])
@pytest.mark.parametrize("presolve", ["on", "off"])
def test_vertex_objective_of_a_small_lp_by_hand(solver, presolve) -> None:
    # min -x - y s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0: both rows bind at the optimum, so
    # x = 8/5, y = 6/5 and the value is -14/5 (by hand).
    from tsg_envs import highs

    h = highs.model(np.array([-1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 1.0]]),
                    np.full(2, -np.inf), np.array([4.0, 6.0]), np.zeros(2), np.full(2, np.inf))
    h.setOptionValue("solver", solver)
    h.setOptionValue("presolve", presolve)
    highs.run(h)
    assert highs.vertex_objective(h) == pytest.approx(-14 / 5, abs=1e-15)


def test_vertex_objective_is_the_same_at_every_optimal_vertex() -> None:
    # max x + 2y s.t. x + 2y <= 0.3 over [0, 1]^2 has a whole edge of optima, (0.3, 0) to
    # (0, 0.15); whichever vertex a path and a column order end at, the value is -0.3.
    from tsg_envs import highs

    values = set()
    for solver in ("simplex", "ipm"):
        for order in ([0, 1], [1, 0]):
            h = highs.model(np.array([-1.0, -2.0])[order], np.array([[1.0, 2.0]])[:, order],
                            np.array([-np.inf]), np.array([0.3]), np.zeros(2), np.ones(2),
                            solver=solver)
            highs.run(h)
            values.add(highs.vertex_objective(h))
    assert values == {-0.3}


def test_vertex_objective_without_a_basis_is_none() -> None:
    from tsg_envs import highs

    h = highs.model(np.array([1.0]), np.array([[1.0]]), np.array([1.0]), np.array([2.0]),
                    np.zeros(1), np.full(1, np.inf), solver="ipm")
    h.setOptionValue("run_crossover", "off")
    highs.run(h)
    assert highs.vertex_objective(h) is None


def test_lp_policy_is_exactly_the_same_on_every_solver_path_of_a_once_sensitive_game() -> None:
    # shift-10F instance 9: HiGHS's reported stage optima differed by 1.5e-12 between the simplex
    # and the default path, and the final QP moved the policy by 5e-7 for it. With the optima
    # taken at the vertex the paths agree to the QP's own accuracy.
    from tsg_envs.lp import SolverPath

    game = make_game(GameConfig(), 9)
    ref = solve_window_lp(game, 60.0)
    for solver in ("simplex", "ipm"):
        for presolve in (True, False):
            sol = solve_window_lp(game, 60.0, path=SolverPath(solver, presolve))
            np.testing.assert_allclose(sol.policy, ref.policy, atol=1e-9, rtol=0)


# The fast path against the reference path -------------------------------------------------------
@pytest.mark.parametrize(("config", "window_minutes", "seed"), [
    (GameConfig(), 60.0, 9), (GameConfig(horizon="window", n_flights=20), None, 1),
    pytest.param(GameConfig(horizon="day", n_flights=20), 60.0, 0, marks=pytest.mark.slow),
])
def test_fast_path_agrees_with_the_reference_path(config, window_minutes, seed) -> None:
    # The default path warm-starts each window's main LP from the last window's basis and solves
    # the last stage by Clarabel at 1e-9 plus the exact solve of its active set; the reference
    # path starts every LP afresh and runs Clarabel alone to 1e-13. Same unique solution.
    from tsg_envs.lp import SolverPath

    game = make_game(config, seed)
    fast = solve_window_lp(game, window_minutes)
    ref = solve_window_lp(game, window_minutes, path=SolverPath(reference=True))
    np.testing.assert_allclose(fast.policy, ref.policy, atol=1e-7, rtol=0)
    np.testing.assert_allclose(fast.psi, ref.psi, atol=1e-9, rtol=1e-9)
    np.testing.assert_allclose(fast.utility, ref.utility, atol=1e-9, rtol=1e-9)
    np.testing.assert_array_equal(fast.stretch, ref.stretch)


def test_reference_flag_is_checked() -> None:
    from tsg_envs.lp import SolverPath

    with pytest.raises(TypeError, match="reference"):
        SolverPath(reference=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lean_qp"):
        SolverPath(lean_qp="yes")  # type: ignore[arg-type]


def test_lean_qp_path_agrees_with_the_default_and_polishes_where_it_falls_back() -> None:
    # tsg/Screening-v1's game: on a window (one here) the default path's refined Clarabel run names
    # a set that fails the KKT check, so that window comes from Clarabel alone at 1e-13; the lean
    # path's unrefined run names the exact set there. The two agree to that run's error on that
    # window; every other window is the same KKT solve of the same set, bit for bit.
    from tsg_envs import qp
    from tsg_envs.lp import SolverPath

    base = gym.make("tsg/Screening-v1").unwrapped
    game = dataclasses.replace(base.game, key=None)
    polished: dict[str, list[bool]] = {}
    policy: dict[str, np.ndarray] = {}
    real = qp._polish
    for label, path in (("default", SolverPath()), ("lean", SolverPath(lean_qp=True))):
        polished[label] = []

        def spy(*a, _label=label):
            out = real(*a)
            polished[_label].append(out is not None)
            return out

        qp._polish = spy
        try:
            policy[label] = solve_window_lp(game, base.lp_window_minutes, path=path).policy
        finally:
            qp._polish = real
    # The min-risk allocations' QP, then one QP per window.
    n_windows = policy["default"].shape[0]
    assert len(polished["lean"]) == n_windows + 1 and all(polished["lean"])
    refused = [w for w in range(n_windows) if not polished["default"][w + 1]]
    assert refused and polished["default"][0]
    diff = np.abs(policy["default"] - policy["lean"]).max(axis=(1, 2))
    assert np.all(diff[refused] > 0) and np.all(diff[refused] <= 1e-9)
    np.testing.assert_array_equal(np.delete(diff, refused), 0.0)
