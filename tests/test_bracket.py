"""The achievability bracket (SPEC §8): the bound worked by hand, the plan's replay and feasibility.

Hand-built games (``tsg_envs.Game``) with arrival σ = 0 make the day of every seed known: each
of flight κ's passengers arrives at d_κ − arrival_mean, ties in flight order. Every expected
value below is derived by hand in the comments; none is recomputed by the code under test.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from conftest import tiny_game

import tsg_envs  # noqa: F401  (registers the ids)
from baselines import myopic, slack_guided
from tsg_envs import Game, GameConfig, ScreeningEnv
from tsg_envs.bracket import (
    Bracket,
    bracket,
    fifo_identity,
    headroom_captured,
    load_ranges,
    replay,
)
from tsg_envs.polytope import FEASIBILITY_TOL
from tsg_envs.rollout import LPAgent, rollout


def hand_game(
    rates: list[float],
    teams: list[list[bool]],
    efficacy: list[list[float]],
    loss: list[list[float]],
    sizes: list[int],
    departures: list[float],
    day_length: float,
) -> Game:
    """One risk level (P = q = 1), σ = 0 and arrival_mean 2: flight κ arrives at d_κ − 2."""
    members = np.array(teams, dtype=bool)
    eff = np.array(efficacy, dtype=float)
    team_eff = 1.0 - np.prod(1.0 - members[:, :, None] * eff[None, :, :], axis=1)
    return Game(
        config=GameConfig(n_resources=len(rates), n_methods=eff.shape[1], n_risk_levels=1,
                          team_size=int(members.sum(axis=1).max()), n_flights=len(sizes),
                          horizon="window"),
        seed=None,
        rates=np.array(rates, dtype=float),
        team_members=members,
        resource_efficacy=eff,
        team_efficacy=team_eff,
        attacker_prior=np.array([1.0]),
        risk_mix=np.array([1.0]),
        attack_loss=np.array(loss, dtype=float),
        departures=np.array(departures, dtype=float),
        flight_sizes=np.array(sizes),
        arrival_mean=2.0,
        arrival_std=0.0,
        arrival_cutoff=1.0,
        day_start=0.0,
        day_length=day_length,
    )


def one_server_env() -> ScreeningEnv:
    """One resource f = 1, one team {r0}; flight 0 (2 passengers) at t = 0, flight 1 (1) at 1."""
    game = hand_game(rates=[1.0], teams=[[True]], efficacy=[[0.5]], loss=[[1.0], [1.0]],
                     sizes=[2, 1], departures=[2.0, 3.0], day_length=2.0)
    # ψ = 2 > P L (1 − z) <= 1: every allocation is feasible (and there is only π = (1)).
    return ScreeningEnv(game=game, risk_bound=np.array([2.0]))


def two_server_env() -> ScreeningEnv:
    """Two resources f = 1, teams {r0} and {r1}; three passengers of one flight at t = 0."""
    game = hand_game(rates=[1.0, 1.0], teams=[[True, False], [False, True]],
                     efficacy=[[0.5], [0.5]], loss=[[1.0]], sizes=[3], departures=[2.0],
                     day_length=1.0)
    return ScreeningEnv(game=game, risk_bound=np.array([2.0]))  # loose: the whole simplex


class FixedAgent:
    """Plays row i of ``actions`` at the i-th step of a day (a hand-written plan as an agent)."""

    def __init__(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=float)
        self._i = 0

    def reset(self) -> None:
        self._i = 0

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        row = self._actions[self._i % len(self._actions)]
        self._i += 1
        return row.copy()


# -------------------------------------------------------------------------------------------
# The bound by hand
# -------------------------------------------------------------------------------------------
def test_bound_is_exact_on_one_server_by_hand() -> None:
    # Arrivals t = 0, 0, 1 on one server f = 1, every passenger fully on it (one team). Waits:
    # 0; 1 (behind the first); the backlog 2 drains to 1 by t = 1, so 1. Mean 2/3.
    # Every relaxation is exact here: a one-member team's max is its member (c = 1); every load
    # is exactly 1, so the chord ℓ² <= ℓ is an equality; the gap integral at b = 2, fΔ = 1 is
    # b − fΔ/2 = 1.5, met by the tangent at b0 = fΔ; the tail's b = 2 is a tangent point (2^k/8).
    env = one_server_env()
    env.reset(seed=0)
    np.testing.assert_array_equal(env.day.arrivals.times, [0.0, 0.0, 1.0])
    b = bracket(env, seed=0)
    assert isinstance(b, Bracket)
    assert b.plan_wait == pytest.approx(2.0 / 3.0, abs=1e-12)
    assert b.lp_wait == pytest.approx(2.0 / 3.0, abs=1e-12)
    assert b.bound_wait == pytest.approx(2.0 / 3.0, abs=1e-6)
    assert b.bound_wait <= 2.0 / 3.0 + 1e-12  # a lower bound, never above the only policy's wait
    np.testing.assert_array_equal(b.plan, np.ones((3, 1)))
    np.testing.assert_allclose(b.weights, [1.0], atol=1e-6)


def exact_optimum_three_at_once() -> float:
    """The clairvoyant optimum of :func:`two_server_env`, by hand.

    All three arrive at t = 0, so nothing drains; with x_i = π_{i,0} (x_i on r0, 1 − x_i on
    r1), passenger j waits Σ_{i<j} [x_i x_j + (1 − x_i)(1 − x_j)], and with s_i = 2 x_i − 1 the
    total is Σ_{i<j} (1 + s_i s_j)/2. That is multilinear in s ∈ [−1, 1]³, so its minimum is at
    a vertex: s = (1, 1, −1) gives Σ s_i s_j = −1, the least of any sign pattern (three ±1 never
    sum to 0). Total (3 − 1)/2 = 1, mean 1/3.
    """
    return 1.0 / 3.0


def test_bound_is_strict_below_the_exact_optimum_on_two_servers() -> None:
    # The fluid relaxation with exact integrals: everything arrives at t = 0, so per resource
    # Σ_i ℓ_i ξ_i = L²/2 − Σ ℓ_i²/2 >= (L² − L)/2 (chord ℓ² <= ℓ, L the total load); with
    # L0 + L1 = 3 the least is at L0 = L1 = 1.5: 2·(2.25 − 1.5)/2 = 0.75, mean 1/4 < 1/3 (the
    # chord is strict at fractional loads). With the module's tail tangents (points 2^k/8,
    # among them 1 and 2) the tail term T(L) >= max(L − 1/2, 2L − 2), so the LP's value is at
    # least Σ_r [T(L_r) − L_r/2] at L = 1.5 each: 2·(1 − 0.75) = 0.5, mean 1/6.
    env = two_server_env()
    env.reset(seed=0)
    np.testing.assert_array_equal(env.day.arrivals.times, [0.0, 0.0, 0.0])
    optimum = exact_optimum_three_at_once()
    b = bracket(env, seed=0)
    assert b.bound_wait <= 0.25 + 1e-9
    assert b.bound_wait >= 1.0 / 6.0 - 1e-6
    assert b.bound_wait < optimum - 0.05  # strict, as the relaxation is here
    # No plan beats the clairvoyant optimum; the plan is the best of its candidates.
    assert optimum - 1e-12 <= b.plan_wait <= b.lp_wait + 1e-12
    assert b.plan_wait <= min(b.candidate_waits.values()) + 1e-12


def test_plan_is_never_worse_than_a_callers_candidate() -> None:
    # The alternating plan (r0, r1, r0) is the optimum 1/3 (waits 0, 0, 1): passed as a
    # candidate, it (or something as good) becomes the plan.
    env = two_server_env()
    alternate = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    b = bracket(env, seed=0, candidates={"alternate": lambda e: FixedAgent(alternate)})
    assert b.candidate_waits["alternate"] == pytest.approx(1.0 / 3.0, abs=1e-15)
    assert b.plan_wait == pytest.approx(exact_optimum_three_at_once(), abs=1e-12)
    assert b.bound_wait <= b.plan_wait


def mixed_range_env(n_a: int, n_b: int) -> ScreeningEnv:
    """Two resources f = 1, teams {r0}, {r1}, methods detected only by r0 (m0) or r1 (m1).

    Flight A (L = (10, 0)) must put π0 >= 1 − ψ/10 = 0.8 on team 0; flight B (L = (0, 10))
    π1 >= 0.8 on team 1. So r0's load lies in [0.8, 1] for A and [0, 0.2] for B: the
    categories' load ranges differ. All n_a + n_b passengers arrive at t = 0, A's first.
    """
    game = hand_game(rates=[1.0, 1.0], teams=[[True, False], [False, True]],
                     efficacy=[[1.0, 0.0], [0.0, 1.0]], loss=[[10.0, 0.0], [0.0, 10.0]],
                     sizes=[n_a, n_b], departures=[2.0, 2.0], day_length=1.0)
    return ScreeningEnv(game=game, risk_bound=np.array([2.0]))


def test_load_ranges_of_the_mixed_game_by_hand() -> None:
    lo, hi = load_ranges(mixed_range_env(2, 3))
    # Category 0 (A): r0 in [0.8, 1], r1 in [0, 0.2]; category 1 (B) the mirror image. The
    # tolerance widens each risk row by 1e-6 (/10 in π) and the ranges by 1e-7 more.
    want_lo = np.array([[0.8, 0.0], [0.0, 0.8]])
    want_hi = np.array([[1.0, 0.2], [0.2, 1.0]])
    assert np.all(lo <= want_lo) and np.all(hi >= want_hi)
    np.testing.assert_allclose(lo, want_lo, atol=1e-6)
    np.testing.assert_allclose(hi, want_hi, atol=1e-6)


@pytest.mark.parametrize("n_a, n_b", [(2, 3), (3, 3), (4, 2)])
def test_bound_below_a_hand_policy_when_load_ranges_differ(n_a: int, n_b: int) -> None:
    # A → team 0 and B → team 1 is feasible (π = 1 >= 0.8). Each server then serves its own
    # flight in a row at t = 0: waits 0, 1, ..., n − 1 each, total n_a(n_a − 1)/2 +
    # n_b(n_b − 1)/2: (2, 3) → 4/5 = 0.8; (3, 3) → 6/6 = 1; (4, 2) → 7/6.
    env = mixed_range_env(n_a, n_b)
    hand = np.array([[1.0, 0.0]] * n_a + [[0.0, 1.0]] * n_b)
    hand_wait, _ = replay(env, 0, hand)
    assert hand_wait == pytest.approx((n_a * (n_a - 1) + n_b * (n_b - 1)) / 2 / (n_a + n_b))
    b = bracket(env, seed=0, refine_iterations=0)
    assert b.bound_wait <= hand_wait
    assert b.bound_wait <= b.plan_wait


def test_load_ranges_by_hand_on_the_tiny_game() -> None:
    # tests/conftest.py's game: teams {r0}, {r0, r1}, E = (0.5, 0.75), P = (½, ½), L = (2, 4).
    # r0 is in both teams: load 1. r1's load is π1; with z = 0.5 + 0.25 π1 the risk rows read
    # κ0: ½·2·(0.5 − 0.25 π1) <= ψ_θ (always, for ψ >= 0.5) and κ1: 2 (0.5 − 0.25 π1) <= ψ_θ,
    # i.e. π1 >= 2 − 2ψ_θ: ψ = (0.8, 0.6) gives π1 >= 0.4 for c1 = (θ0, κ1), >= 0.8 for c3.
    env = ScreeningEnv(game=tiny_game(), risk_bound=np.array([0.8, 0.6]))
    lo, hi = load_ranges(env)
    want_lo = np.array([[1.0, 0.0], [1.0, 0.4], [1.0, 0.0], [1.0, 0.8]])
    assert np.all(lo <= want_lo) and np.all(hi >= 1.0 - 1e-7)
    np.testing.assert_allclose(lo, want_lo, atol=1e-5)
    np.testing.assert_allclose(hi, 1.0, atol=1e-6)


# -------------------------------------------------------------------------------------------
# The FIFO identity
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("times, loads, rate, want", [
    # t = 0, 0, 1 on f = 1, loads 1: ξ = 0, 1, 1 (Σ = 2); ∫: the gap after the second, b = 2 >
    # fΔ = 1, gives bΔ − fΔ²/2 = 1.5, the tail b = 2 gives 2²/2 = 2 (3.5); Σ ℓ²/2 = 1.5.
    ([0.0, 0.0, 1.0], [1.0, 1.0, 1.0], 1.0, (2.0, 3.5, 1.5)),
    # t = 0, 2, f = 0.5, loads ½, 1: b = ½ <= fΔ = 1 empties: ∫ = ¼/1; ξ1 = 0; tail 1/1.
    ([0.0, 2.0], [0.5, 1.0], 0.5, (0.0, 1.25, 1.25)),
    # t = 0, 1, f = 0.5, loads 1, 1: b = 1 > fΔ = ½: ∫ = 1 − ¼; ξ1 = ½ (ℓξ/f = 1); tail 1.5².
    ([0.0, 1.0], [1.0, 1.0], 0.5, (1.0, 3.0, 2.0)),
])
def test_fifo_identity_by_hand(times, loads, rate, want) -> None:
    got = fifo_identity(np.array(times), np.array(loads), rate)
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("env_id, instance_seed, day, agent", [
    ("tsg/Screening-Window-10F-v2", 1000, 0, "lp"),
    ("tsg/Screening-v1", 0, 1, "centre"),
])
def test_fifo_identity_on_replayed_days(env_id: str, instance_seed: int, day: int,
                                        agent: str) -> None:
    # On a real day, loads from the executed actions: the identity's two sides agree, and its
    # left side is what the environment's own queues (info["queues"]) give.
    env = gym.make(env_id, instance_seed=instance_seed)
    base = env.unwrapped
    pol = LPAgent(env) if agent == "lp" else tsg_envs.rollout.CentreAgent(env)
    obs, info = env.reset(seed=day)
    queues, executed = [], []
    for _ in range(base.game.n_passengers):
        obs, _, _, _, info = env.step(pol.act(obs, info))
        queues.append(info["queues"])
        executed.append(info["executed_action"])
    times = np.asarray(base.day.arrivals.times, dtype=float)
    loads = np.array(executed) @ base.game.team_members.astype(float)  # (P, R)
    queues = np.array(queues)
    for r, f in enumerate(base.game.rates):
        weighted, area, squares = fifo_identity(times, loads[:, r], float(f))
        assert weighted == pytest.approx(area - squares, rel=1e-12, abs=1e-12)
        env_side = float(np.sum(loads[:, r] * queues[:, r]) / f)
        assert weighted == pytest.approx(env_side, rel=1e-12, abs=1e-12)
        assert area > 0 and squares > 0


# -------------------------------------------------------------------------------------------
# The plan: exact replay, feasibility, order of the bracket
# -------------------------------------------------------------------------------------------
SMALL_V2 = GameConfig(horizon="window", n_flights=3, flight_size_range=(8, 15),
                      departure_span=120.0, arrival_std=15.0, planning_utilisation=0.6)


def check_bracket(env: gym.Env, seed: int, b: Bracket, agents: dict[str, Any]) -> None:
    """Every promise of SPEC §8 that can be checked from outside, on one day."""
    base = env.unwrapped
    n, t = base.game.n_passengers, base.game.n_teams
    assert b.seed == seed and b.plan.shape == (n, t)
    # Replaying the plan through the (wrapped) environment gives plan_wait exactly; each row
    # executes as it is, up to the renormalisation of a sum a few ulp off 1.
    _, info = env.reset(seed=seed)
    cats, waits = np.empty(n, dtype=np.int64), np.empty(n)
    for i in range(n):
        cats[i] = info["category"]
        _, _, _, _, info = env.step(b.plan[i])
        waits[i] = info["wait"]
        np.testing.assert_allclose(info["executed_action"], b.plan[i], rtol=0, atol=1e-15)
        assert info["proposed_violation"] <= FEASIBILITY_TOL
    assert float(waits.mean()) == b.plan_wait
    # Every row inside its category's polytope (1e-6), measured here from the raw rows.
    polys = base.polytopes
    rows = np.einsum("pkt,pt->pk", polys.A_ub[cats], b.plan) - polys.b_ub[cats]
    assert rows.max() <= FEASIBILITY_TOL
    assert b.plan.min() >= -FEASIBILITY_TOL
    np.testing.assert_allclose(b.plan.sum(axis=1), 1.0, atol=FEASIBILITY_TOL)
    # The order of the bracket, and the plan as the best candidate searched.
    assert b.bound_wait <= b.plan_wait <= b.lp_wait
    assert b.plan_wait <= min(b.candidate_waits.values()) + 1e-12
    assert b.candidate_waits["lp"] == b.lp_wait
    assert b.candidate_waits[b.plan_source] == pytest.approx(b.plan_wait, rel=1e-12)
    # The LP's wait is the static LP agent's own day; every agent's wait is above the bound.
    assert rollout(env, LPAgent(env), seed=seed).mean_wait == pytest.approx(b.lp_wait, rel=1e-12)
    for name, agent in agents.items():
        wait = rollout(env, agent, seed=seed).mean_wait
        assert b.bound_wait <= wait, name
        if name in b.candidate_waits:
            assert b.candidate_waits[name] == pytest.approx(wait, rel=1e-12)
            assert b.plan_wait <= wait + 1e-12
    assert b.seconds > 0 and np.isfinite(b.fluid_value)
    # The safe bound is the solver's optimum up to its tolerances (either side: an interior
    # point's reported value may sit a hair below the LP's true optimum).
    assert b.bound_wait == pytest.approx(b.fluid_value, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("instance_seed, day", [(1, 3), (4, 0)])
def test_plan_replays_exactly_and_stays_feasible(instance_seed: int, day: int) -> None:
    env = ScreeningEnv(config=SMALL_V2, instance_seed=instance_seed)
    cands = {"slack-guided": slack_guided.make_agent, "myopic": myopic.make_agent}
    b = bracket(env, day, candidates=cands)
    assert {"lp", "slack-guided", "myopic"} <= set(b.candidate_waits)
    check_bracket(env, day, b, {name: make(env) for name, make in cands.items()})


def test_bracket_is_deterministic_and_leaves_the_env_usable() -> None:
    env = ScreeningEnv(config=SMALL_V2, instance_seed=2)
    a, b = bracket(env, 5), bracket(env, 5)
    np.testing.assert_array_equal(a.plan, b.plan)
    assert (a.plan_wait, a.bound_wait, a.lp_wait) == (b.plan_wait, b.bound_wait, b.lp_wait)
    # Without refinement the plan is one of the plain candidates, and no better than with it.
    c = bracket(env, 5, refine_iterations=0)
    assert "+fw" not in c.plan_source and c.plan_wait >= a.plan_wait
    assert c.bound_wait == pytest.approx(a.bound_wait, rel=1e-12)


@pytest.mark.slow
def test_plan_replays_on_window_10f_v2() -> None:
    env = gym.make("tsg/Screening-Window-10F-v2", instance_seed=1000)
    cands = {"slack-guided": slack_guided.make_agent, "myopic": myopic.make_agent}
    b = bracket(env, 0, candidates=cands)
    check_bracket(env, 0, b, {name: make(env.unwrapped) for name, make in cands.items()})


# -------------------------------------------------------------------------------------------
# Errors and headroom
# -------------------------------------------------------------------------------------------
def test_sampled_mode_has_no_bracket() -> None:
    env = ScreeningEnv(config=SMALL_V2, instance_seed=1, queue_mode="sampled")
    with pytest.raises(ValueError, match="expected queue mode"):
        bracket(env, 0)
    with pytest.raises(ValueError, match="expected queue mode"):
        replay(env, 0, np.full((env.game.n_passengers, env.game.n_teams), 0.1))


def test_bracket_refuses_what_is_not_a_screening_env() -> None:
    class NotScreening(gym.Env):
        observation_space = gym.spaces.Discrete(1)
        action_space = gym.spaces.Discrete(1)

    with pytest.raises(TypeError, match="ScreeningEnv"):
        bracket(NotScreening(), 0)


def test_replay_checks_the_plans_shape() -> None:
    env = one_server_env()
    with pytest.raises(ValueError, match="shape"):
        replay(env, 0, np.ones((2, 1)))


@pytest.mark.parametrize("lp, plan, agent, want", [
    (10.0, 6.0, 8.0, 0.5),     # half the room: (10 − 8) / (10 − 6)
    (10.0, 6.0, 6.0, 1.0),     # matched the plan
    (10.0, 6.0, 10.0, 0.0),    # matched the LP
    (10.0, 6.0, 12.0, -0.5),   # worse than the LP
    (10.0, 9.9, 9.95, None),   # room 0.1 = 1% of the LP's wait < 2%: "—"
    (10.0, 10.5, 9.0, None),   # the plan is worse than the LP: no room
    (50.0, 48.5, 49.0, 1.0 / 1.5),  # room 1.5 = 3% of 50: (50 − 49) / 1.5
])
def test_headroom_captured_by_hand(lp: float, plan: float, agent: float, want) -> None:
    got = headroom_captured(lp, plan, agent)
    if want is None:
        assert got is None
    else:
        assert got == pytest.approx(want, rel=1e-12)
    b = Bracket(seed=0, plan=np.ones((1, 1)), plan_wait=plan, bound_wait=0.0, lp_wait=lp,
                plan_source="lp")
    assert b.headroom(agent) == got


def test_plan_and_bound_ratios_by_hand() -> None:
    b = Bracket(seed=0, plan=np.ones((1, 1)), plan_wait=5.0, bound_wait=4.0, lp_wait=10.0,
                plan_source="lp")
    assert (b.plan_ratio, b.bound_ratio) == (2.0, 2.5)
    zero = Bracket(seed=0, plan=np.ones((1, 1)), plan_wait=0.0, bound_wait=0.0, lp_wait=1.0,
                   plan_source="lp")
    assert zero.plan_ratio == zero.bound_ratio == float("inf")


def test_headroom_is_shown_at_exactly_two_percent() -> None:
    # 100 − 98 = 2.0 = 0.02 · 100 exactly in binary floating point; (100 − 99) / 2 = 0.5.
    assert headroom_captured(100.0, 98.0, 99.0) == 0.5
