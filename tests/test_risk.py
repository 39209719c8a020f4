"""Worst-case risk: a hand-worked best response, the hidden-category leak, batching, bounds."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import LOOSE_PSI, tiny_game

from tsg_envs import FEASIBILITY_TOL, ScreeningEnv
from tsg_envs.risk import attack_gains, risk_report_from_actions, worst_case_risk
from tsg_envs.rollout import CentreAgent, LPAgent, rollout

# Tiny game (conftest): E = (0.5, 0.75) for teams (0, 1) and the one method, L = (2, 4) by
# flight, P = (0.5, 0.5); c0 = (θ0, κ0), c1 = (θ0, κ1), c2 = (θ1, κ0), c3 = (θ1, κ1).
# For π = (π0, π1): z = 0.5 π0 + 0.75 π1 and the attacker's gain is (1 - z) L_κ:
#   team 0 (1, 0): 0.5 L      team 1 (0, 1): 0.25 L      (½, ½): 0.375 L.
T0, T1, HALF = [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]


def test_hand_worked_best_response_from_probed_actions() -> None:
    game = tiny_game()
    actions = np.array(
        [
            # c0       c1       c2     c3
            [T0, T1, T1, T1],  # state 0, τ = 1.0: gains 1.0, 1.0, 0.5, 1.0
            [T1, HALF, T0, T1],  # state 1, τ = 1.5: gains 0.5, 1.5, 1.0, 1.0
            [T1, T1, T1, T0],  # state 2, τ = 2.0: gains 0.5, 1.0, 0.5, 2.0
        ]
    )
    np.testing.assert_allclose(
        attack_gains(game, actions)[:, :, 0],
        [[1.0, 1.0, 0.5, 1.0], [0.5, 1.5, 1.0, 1.0], [0.5, 1.0, 0.5, 2.0]],
    )
    report = risk_report_from_actions(
        game, actions, times=[1.0, 1.5, 2.0], steps=[4, 5, 6], risk_bound=np.array([0.8, 0.9])
    )
    # θ0: best c1 at state 1 (gain 1.5); θ1: best c3 at state 2 (gain 2.0).
    np.testing.assert_allclose(report.per_theta, [0.5 * 1.5, 0.5 * 2.0])
    assert report.risk == pytest.approx(1.75)
    assert report.bound == pytest.approx(1.7)
    np.testing.assert_array_equal(report.best_flight, [1, 1])
    np.testing.assert_array_equal(report.best_method, [0, 0])
    np.testing.assert_array_equal(report.best_time, [1.5, 2.0])
    np.testing.assert_array_equal(report.best_step, [5, 6])
    np.testing.assert_allclose(report.per_category, [1.0, 1.5, 1.0, 2.0])
    np.testing.assert_allclose(report.best_gain, [1.5, 2.0])
    # θ1's 1.0 exceeds ψ1 = 0.9 by 0.1 (θ0's 0.75 is within 0.8).
    assert not report.within_bound and report.excess == pytest.approx(0.1)


def test_ties_go_to_the_earliest_state_then_lowest_flight_actions_renormalised() -> None:
    game = tiny_game()
    # Every state plays team 1 scaled by 2 with a small negative entry clipped away: gains are
    # 0.25 L everywhere, so θ's best is κ1 (L = 4) at the first state.
    actions = np.tile(np.array([-0.1, 2.0]), (3, 4, 1))
    report = risk_report_from_actions(game, actions, times=[0.0, 1.0, 2.0])
    np.testing.assert_array_equal(report.best_step, [0, 0])
    np.testing.assert_array_equal(report.best_flight, [1, 1])
    np.testing.assert_allclose(report.per_theta, [0.5, 0.5])
    # Equal flights: L = (3, 3) makes both flights tie; the lowest wins.
    tied = tiny_game(attack_loss=np.array([[3.0], [3.0]]))
    np.testing.assert_array_equal(
        risk_report_from_actions(tied, actions, times=[0.0, 1.0, 2.0]).best_flight, [0, 0]
    )
    with pytest.raises(ValueError, match="shape"):
        risk_report_from_actions(game, np.ones((3, 5, 2)), times=[0.0, 1.0, 2.0])


# An end-to-end probe on a tiny day ---------------------------------------------------------------
# departures (3, 4), day length 3, σ = 0, mean 2: flight 0's two passengers arrive at τ = 1, flight
# 1's one at τ = 2. Visited states: s0 (τ 1), s1 (τ 1), s2 (τ 2), s3 (after the last, τ 2).
# The defender: θ0 categories team 1; c2 team 0; c3 team 1 before τ = 2, team 0 from τ = 2.
#   θ0: c0 0.25·2 = 0.5, c1 0.25·4 = 1.0 at every state -> best κ1 at s0, P·gain = 0.5.
#   θ1: c2 0.5·2 = 1.0; c3 0.25·4 = 1.0 before τ 2 and 0.5·4 = 2.0 from s2 -> κ1 at s2, 1.0.
# Risk 1.5 against Σψ = 4 (ψ = (2, 2) admits every allocation).
class _TimedDefender:
    def act(self, obs, info):
        c = info["category"]
        if c in (0, 1):
            return np.array(T1)
        if c == 2:
            return np.array(T0)
        return np.array(T0 if info["time"] >= 2.0 else T1)


class _Batched(_TimedDefender):
    calls = 0

    def act_batch(self, obs, infos):
        assert obs.dtype == np.float32 and obs.shape == (len(infos), 2 * 4 + 2 + 2 + 1)
        type(self).calls += 1
        cats = np.argmax(obs[:, :4], axis=1)
        assert [i["category"] for i in infos] == cats.tolist()
        return np.stack([self.act(o, i) for o, i in zip(obs, infos, strict=True)])


def _tiny_env(**game_overrides) -> ScreeningEnv:
    fields = dict(departures=np.array([3.0, 4.0]), day_length=3.0)
    fields.update(game_overrides)
    return ScreeningEnv(game=tiny_game(**fields), risk_bound=LOOSE_PSI)


def test_worst_case_risk_of_a_time_dependent_defender_on_a_tiny_day() -> None:
    env = _tiny_env()
    report = worst_case_risk(env, _TimedDefender(), seed=0)
    assert report.states_probed == 4
    np.testing.assert_allclose(report.per_theta, [0.5, 1.0])
    assert report.risk == pytest.approx(1.5) and report.bound == pytest.approx(4.0)
    np.testing.assert_array_equal(report.best_flight, [1, 1])
    np.testing.assert_array_equal(report.best_step, [0, 2])
    np.testing.assert_array_equal(report.best_time, [1.0, 2.0])
    assert report.within_bound
    # The duel's attacker reaches s1 … s3 only: θ0's best moves to s1 (same gain).
    late = worst_case_risk(env, _TimedDefender(), seed=0, min_step=1)
    assert late.states_probed == 3
    np.testing.assert_array_equal(late.best_step, [1, 2])
    # Two evenly spaced states of four: s0 and s3 (the state after the last passenger).
    sub = worst_case_risk(env, _TimedDefender(), seed=0, max_states=2)
    assert sub.states_probed == 2
    np.testing.assert_array_equal(sub.best_step, [0, 3])
    np.testing.assert_allclose(sub.per_theta, [0.5, 1.0])


def test_batched_probe_equals_the_per_query_probe() -> None:
    env = _tiny_env()
    _Batched.calls = 0
    batched = worst_case_risk(env, _Batched(), seed=0, batch_size=8)
    assert _Batched.calls == 2  # 8 rows per call = 2 states of 4 categories; 4 states
    plain = worst_case_risk(env, _TimedDefender(), seed=0)
    for name in ("per_theta", "best_flight", "best_method", "best_time", "best_step",
                 "per_category"):
        np.testing.assert_array_equal(getattr(batched, name), getattr(plain, name))


# The hidden-category leak -----------------------------------------------------------------------
# All passengers have θ0 (q = (1, 0)) but the attacker's prior is still (½, ½). ψ = (0.6, 0.6):
# κ0 (L = 2) needs P L (1 - z) = 1 - z ≤ 0.6, true for every π (z ≥ 0.5); κ1 (L = 4) needs
# 2 (1 - z) ≤ 0.6, i.e. z ≥ 0.7, i.e. π1 ≥ 0.8. The defender plays team 1 for everybody except
# c3 = (θ1, κ1), whom it never meets, where it plays team 0 (z = 0.5: risk 0.5·0.5·4 = 1 > 0.6).
# Worst case: θ0 0.5·max(0.25·2, 0.25·4) = 0.5; θ1 0.5·max(0.25·2, 0.5·4) = 1.0.
class _LeakyDefender:
    def __init__(self, leak: bool) -> None:
        self.leak = leak

    def act(self, obs, info):
        return np.array(T0 if (self.leak and info["category"] == 3) else T1)


def test_a_leak_on_a_category_never_met_shows_in_the_worst_case_risk() -> None:
    env = ScreeningEnv(
        game=tiny_game(risk_mix=np.array([1.0, 0.0]), departures=np.array([3.0, 4.0]),
                       day_length=3.0),
        risk_bound=np.array([0.6, 0.6]),
        invalid_action="raise",
    )
    leaky = _LeakyDefender(leak=True)
    for seed in range(5):  # feasible for every passenger it meets: "raise" mode never raises
        stats = rollout(env, leaky, seed=seed)
        assert stats.proposed_violations == 0 and stats.max_violation <= FEASIBILITY_TOL
    report = worst_case_risk(env, leaky, seed=0)
    np.testing.assert_allclose(report.per_theta, [0.5, 1.0])
    assert report.risk == pytest.approx(1.5) and report.bound == pytest.approx(1.2)
    assert not report.within_bound and report.excess == pytest.approx(0.4)
    assert (report.best_flight[1], report.best_method[1]) == (1, 0)
    safe = worst_case_risk(env, _LeakyDefender(leak=False), seed=0)
    np.testing.assert_allclose(safe.per_theta, [0.5, 0.5])
    assert safe.within_bound


# The default game -------------------------------------------------------------------------------
@pytest.mark.parametrize("agent_cls", [LPAgent, CentreAgent])
def test_lp_and_centre_policies_stay_within_the_bound(agent_cls) -> None:
    env = gym.make("tsg/Screening-v1")
    report = worst_case_risk(env, agent_cls(env), seed=0)
    assert report.states_probed == env.unwrapped.game.n_passengers + 1
    assert report.within_bound, (report.per_theta, report.risk_bound)
    assert np.all(report.per_theta <= report.risk_bound + FEASIBILITY_TOL)
    assert report.risk <= report.bound + 5 * FEASIBILITY_TOL
    # Every polytope's worst row binds at ψ for some category (the LP's worst windows, the
    # centre's margin aside): the risk is close to the bound, not trivially below it.
    assert report.risk > 0.9 * report.bound


class _WorstTeam:
    """Proposes, for every category, the team that detects its flight's best method least."""

    def __init__(self, env, project: bool) -> None:
        u = env.unwrapped
        self.polys = u.polytopes
        g = u.game
        self.weakest = np.argmin(g.team_efficacy, axis=0)  # per method
        self.best_m = np.argmax(g.attack_loss, axis=1)  # per flight
        self.k, self.t = g.n_flights, g.n_teams
        self.project = project

    def act(self, obs, info):
        c = info["category"]
        s = np.zeros(self.t)
        s[self.weakest[self.best_m[c % self.k]]] = 1.0
        return self.polys.project(s[None], [c])[0] if self.project else s


def test_alpha_projected_defender_sits_on_the_bound_and_unprojected_one_leaks() -> None:
    env = gym.make("tsg/Screening-v1", invalid_action="penalize")
    # α-projecting the worst team lands on the polytope boundary (shrunk by a relative 1e-6):
    # every level's risk reaches ψ_θ to within 1e-3 and never exceeds it by more than 1e-6.
    projected = worst_case_risk(env, _WorstTeam(env, project=True), seed=0, max_states=20)
    assert projected.within_bound
    np.testing.assert_allclose(projected.per_theta, projected.risk_bound, rtol=1e-3)
    # Proposed as is (penalize mode executes it), the same allocation breaks every level's bound.
    leaky = worst_case_risk(env, _WorstTeam(env, project=False), seed=0, max_states=20)
    assert not leaky.within_bound
    assert np.all(leaky.per_theta > leaky.risk_bound + 1e-3) and leaky.excess > 1e-3
