"""ScreeningEnv: Gymnasium API, determinism, a hand-computed day, bad actions, info contract."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import LOOSE_PSI, arrivals, tiny_game
from gymnasium.utils.env_checker import check_env

import tsg_envs
from tsg_envs import FEASIBILITY_TOL, InfeasibleRiskBoundError, ScreeningEnv
from tsg_envs.rollout import CentreAgent, rollout

FAST_IDS = [p.id for p in tsg_envs.PRESETS.values() if not p.slow]
SLOW_IDS = [p.id for p in tsg_envs.PRESETS.values() if p.slow]
ALL_IDS = FAST_IDS + [pytest.param(i, marks=pytest.mark.slow) for i in SLOW_IDS]
MODES = ("project", "raise", "penalize")
STEP_KEYS = {
    "category", "theta", "flight", "time", "queues", "wait", "penalty",
    "proposed_violation", "executed_action", "team",
}


# Gymnasium API ------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_check_env_on_every_registered_id(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    # The backlog and waits are unbounded above by design; any other checker warning fails.
    other = [str(w.message) for w in caught if "maximum value is infinity" not in str(w.message)]
    assert other == []


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_steps_per_episode_equal_passengers_of_the_day(env_id: str) -> None:
    env = gym.make(env_id)
    u = env.unwrapped
    stats = rollout(env, CentreAgent(env), seed=3)
    assert stats.waits.shape == (u.game.n_passengers,)
    assert u.game.n_passengers == int(np.sum(u.game.flight_sizes))
    assert stats.proposed_violations == 0 and stats.executed_violations == 0
    assert np.all(np.isfinite(stats.waits)) and np.all(stats.waits >= 0)


def test_env_ids_and_kwargs_reach_the_game() -> None:
    env = gym.make("tsg/Screening-Shift-10F-Sigma30-v1")
    g = env.unwrapped.game
    assert (g.n_flights, g.arrival_std, g.config.horizon) == (10, 30.0, "shift")
    env = gym.make("tsg/Screening-v1", n_flights=5, arrival_std=15.0, horizon="day")
    g = env.unwrapped.game
    assert (g.n_flights, g.arrival_std, g.config.horizon) == (5, 15.0, "day")
    assert env.unwrapped.lp_window_minutes == 60.0
    assert gym.make("tsg/Screening-Window-5F-v1").unwrapped.lp_window_minutes is None


def test_default_instance_sizes() -> None:
    env = gym.make("tsg/Screening-v1")
    u = env.unwrapped
    g = u.game
    assert (g.n_flights, g.n_teams, g.n_risk_levels, g.n_categories) == (10, 10, 5, 50)
    assert g.n_passengers == 937
    assert env.observation_space.shape == (116,)  # 2·50 + 5 + 10 + 1
    assert env.action_space.shape == (10,)
    lay = u.obs_layout
    sizes = [(lay[k].start, lay[k].stop) for k in ("category", "backlog", "waits", "history",
                                                   "clock")]
    assert sizes == [(0, 50), (50, 55), (55, 65), (65, 115), (115, 116)]


# Determinism --------------------------------------------------------------------------------
def _episode(env: gym.Env, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    agent = CentreAgent(env)
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], [info]
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        done = terminated or truncated
    return np.array(observations), np.array(rewards), infos


@pytest.mark.parametrize("env_id", ["tsg/Screening-v1", "tsg/Screening-Sampled-v1"])
def test_same_seed_same_episode_different_seed_differs(env_id: str) -> None:
    obs_a, rew_a, info_a = _episode(gym.make(env_id), seed=11)
    obs_b, rew_b, info_b = _episode(gym.make(env_id), seed=11)
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rew_a, rew_b)
    assert [i["category"] for i in info_a] == [i["category"] for i in info_b]
    assert [i.get("team") for i in info_a] == [i.get("team") for i in info_b]
    obs_c, rew_c, info_c = _episode(gym.make(env_id), seed=12)
    assert [i["category"] for i in info_a] != [i["category"] for i in info_c]
    assert not np.array_equal(rew_a, rew_c)


def test_instance_seed_fixes_the_game_and_reset_seed_only_the_day() -> None:
    a = gym.make("tsg/Screening-v1", instance_seed=4).unwrapped
    b = gym.make("tsg/Screening-v1", instance_seed=4).unwrapped
    c = gym.make("tsg/Screening-v1", instance_seed=5).unwrapped
    for name in ("rates", "team_efficacy", "attack_loss", "departures", "flight_sizes"):
        np.testing.assert_array_equal(getattr(a.game, name), getattr(b.game, name))
    assert not np.array_equal(a.game.attack_loss, c.game.attack_loss)
    sizes = a.game.flight_sizes.copy()
    a.reset(seed=1)
    a.reset(seed=2)
    np.testing.assert_array_equal(a.game.flight_sizes, sizes)


# A hand-computed day -------------------------------------------------------------------------
# Tiny game (tests/conftest.py): f = (0.5, 0.25), team 0 = {r0}, team 1 = {r0, r1}. Three
# passengers: p1 at τ=0 of c2 = (θ1, κ0), p2 at τ=1 of c1 = (θ0, κ1), p3 at τ=2 of c0 = (θ0, κ0).
# ψ = (2, 2) admits every allocation. Actions: p1 (1, 0), p2 (0, 1), p3 (½, ½).
#
# Expected mode:
#   p1: ξ = (0, 0), w = (0, 0), wait 0.            Load: r0 += 1            -> ξ = (1, 0)
#       drain 1 min: r0 1 - 0.5 = 0.5, r1 0        -> ξ = (0.5, 0), backlog (1, 0), w = (1, 1)
#   p2: wait = w_1 = max(1, 0) = 1, reward -1.     Load: r0 += 1, r1 += 1   -> ξ = (1.5, 1)
#       drain 1 min: (1.5 - 0.5, 1 - 0.25)          -> ξ = (1, 0.75), backlog (2, 3), w = (2, 3)
#   p3: wait = ½·2 + ½·3 = 2.5, reward -2.5.       Load: r0 += 1, r1 += ½   -> ξ = (2, 1.25)
#       last passenger: no drain; backlog (4, 5), w = (4, 5).
# History obs: h / (n_κ q_θ) with expected counts (c0..c3) = (1, 0.5, 1, 0.5); clock τ / 4.
#
# Sampled mode with p3's draw t*: p1, p2 are one-hot so identical to the above; p3 waits w_{t*}
# (2 or 3) and loads r ∈ t* by 1: t* = 0 -> ξ = (2, 0.75), t* = 1 -> ξ = (2, 1.75).
HAND_DAY = dict(times=[0.0, 1.0, 2.0], thetas=[1, 0, 0], flights=[0, 1, 0])
HAND_ACTIONS = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.5, 0.5])]


def _tiny_env(**kwargs: object) -> ScreeningEnv:
    kwargs.setdefault("risk_bound", LOOSE_PSI)
    return ScreeningEnv(game=tiny_game(), **kwargs)


def test_hand_computed_day_expected_mode() -> None:
    env = _tiny_env(queue_mode="expected")
    lay = env.obs_layout
    obs, info = env.reset(seed=0, options={"arrivals": arrivals(**HAND_DAY)})
    assert info == {"category": 2, "theta": 1, "flight": 0, "time": 0.0}
    np.testing.assert_array_equal(obs[lay["category"]], [0, 0, 1, 0])
    np.testing.assert_array_equal(obs[lay["backlog"]], [0, 0])

    expected = [
        # queues before load, wait, next backlog, next waits, next history, next clock, next cat
        ([0.0, 0.0], 0.0, [1.0, 0.0], [1.0, 1.0], [0, 0, 1, 0], 0.25, 1),
        ([0.5, 0.0], 1.0, [2.0, 3.0], [2.0, 3.0], [0, 2, 1, 0], 0.5, 0),
        ([1.0, 0.75], 2.5, [4.0, 5.0], [4.0, 5.0], [1, 2, 1, 0], 0.5, -1),
    ]
    for i, (action, row) in enumerate(zip(HAND_ACTIONS, expected, strict=True)):
        queues, wait, backlog, waits, history, clock, cat = row
        obs, reward, terminated, truncated, info = env.step(action)
        assert set(info) == STEP_KEYS
        np.testing.assert_array_equal(info["queues"], queues)
        assert info["wait"] == wait and reward == -wait
        assert info["team"] == -1 and info["penalty"] == 0.0
        assert info["proposed_violation"] == 0.0
        np.testing.assert_array_equal(info["executed_action"], action)
        np.testing.assert_array_equal(obs[lay["backlog"]], backlog)
        np.testing.assert_array_equal(obs[lay["waits"]], waits)
        np.testing.assert_array_equal(obs[lay["history"]], history)
        assert obs[lay["clock"]][0] == clock
        assert info["category"] == cat
        assert terminated == (i == 2) and truncated is False
    assert (info["theta"], info["flight"]) == (-1, -1)
    np.testing.assert_array_equal(obs[lay["category"]], [0, 0, 0, 0])
    with pytest.raises(RuntimeError):
        env.step(HAND_ACTIONS[0])


def test_day_minutes_are_backlog_then_waits_as_the_observation_lays_them_out() -> None:
    """The day's one array of minutes: ξ_r / f_r, then each team's max over its members."""
    env = _tiny_env(queue_mode="expected")
    env.reset(seed=0, options={"arrivals": arrivals(**HAND_DAY)})
    day = env.day
    env.step(HAND_ACTIONS[0])
    env.step(HAND_ACTIONS[1])
    # Second row of test_hand_computed_day_expected_mode: backlog [2, 3] minutes; team 0 is
    # resource 0 alone (2), team 1 both resources (max 3).
    np.testing.assert_array_equal(day.minutes, [2.0, 3.0, 2.0, 3.0])
    np.testing.assert_array_equal(day.backlog, [2.0, 3.0])
    np.testing.assert_array_equal(day.team_waits, [2.0, 3.0])
    np.testing.assert_array_equal(day.queues, [1.0, 0.75])
    obs = env.observation()
    lay = env.obs_layout
    np.testing.assert_array_equal(obs[lay["backlog"].start:lay["waits"].stop], day.minutes)


def test_hand_computed_day_sampled_mode() -> None:
    env = _tiny_env(queue_mode="sampled")
    lay = env.obs_layout
    teams_seen = set()
    for seed in range(40):
        env.reset(seed=seed, options={"arrivals": arrivals(**HAND_DAY)})
        rewards, infos = [], []
        for action in HAND_ACTIONS:
            obs, reward, terminated, _, info = env.step(action)
            rewards.append(reward)
            infos.append(info)
        assert terminated
        assert [i["team"] for i in infos[:2]] == [0, 1]
        np.testing.assert_array_equal(infos[0]["queues"], [0.0, 0.0])
        np.testing.assert_array_equal(infos[1]["queues"], [0.5, 0.0])
        np.testing.assert_array_equal(infos[2]["queues"], [1.0, 0.75])
        team = infos[2]["team"]
        teams_seen.add(team)
        wait3, backlog = {0: (2.0, [4.0, 3.0]), 1: (3.0, [4.0, 7.0])}[team]
        assert rewards == [-0.0, -1.0, -wait3]
        np.testing.assert_array_equal(obs[lay["backlog"]], backlog)
    # P(t* = 0) = ½ per day: both teams appear in 40 days unless something is broken
    # (probability of missing one: 2·2^-40).
    assert teams_seen == {0, 1}


def test_sampled_mode_draws_teams_with_the_allocation_probabilities() -> None:
    env = _tiny_env(queue_mode="sampled")
    env.reset(seed=123, options={"arrivals": arrivals([0.0] * 4000, [0] * 4000, [0] * 4000)})
    teams = [env.step(np.array([0.2, 0.8]))[4]["team"] for _ in range(4000)]
    share = np.mean(np.array(teams) == 1)
    # Binomial(4000, 0.8): sd = 0.0063; 5 sd = 0.032.
    assert abs(share - 0.8) < 0.032


def test_expected_and_sampled_modes_agree_on_one_hot_actions() -> None:
    env_e, env_s = _tiny_env(queue_mode="expected"), _tiny_env(queue_mode="sampled")
    day = arrivals([0.0, 0.5, 0.5, 3.0], [0, 1, 1, 0], [1, 1, 0, 0])
    env_e.reset(seed=0, options={"arrivals": day})
    env_s.reset(seed=0, options={"arrivals": day})
    for action in ([0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]):
        oe, re, *_ = env_e.step(np.array(action))
        os_, rs, *_ = env_s.step(np.array(action))
        np.testing.assert_array_equal(oe, os_)
        assert re == rs


# Invalid actions -------------------------------------------------------------------------------
# Tight ψ = (0.75, 0.75) on the tiny game: category c1 = (θ0, κ1) has the risk row
# -P L E·π = -2·(0.5, 0.75)·π ≤ 0.75 - 0.5·4 = -1.25, i.e. (on the simplex) π_1 ≥ 0.5.
# Its centre (test_polytope) is (0.375, 0.625). A one-passenger day (τ = 0, empty queues) waits 0,
# so reward = -penalty, and the final backlog (r0: 1/0.5 = 2, r1: π_1/0.25 = 4 π_1) shows π_1.
TIGHT_PSI = np.array([0.75, 0.75])


def _one_passenger(mode: str, theta: int, flight: int) -> ScreeningEnv:
    env = _tiny_env(invalid_action=mode, risk_bound=TIGHT_PSI)
    env.reset(seed=0, options={"arrivals": arrivals([0.0], [theta], [flight])})
    return env


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "bad", [np.array([np.nan, 1.0]), np.array([np.inf, 0.0]), np.array([-np.inf, 1.0]),
            np.array([0.5, 0.25, 0.25]), np.array([[0.5, 0.5]]), np.array(1.0)],
    ids=["nan", "inf", "-inf", "too-long", "2d", "scalar"],
)
def test_nan_inf_and_wrong_shape_raise_in_every_mode(mode: str, bad: np.ndarray) -> None:
    env = _one_passenger(mode, 0, 1)
    with pytest.raises(ValueError):
        env.step(bad)
    # Nothing advanced: the passenger is still waiting and a good action goes through.
    _, _, terminated, _, info = env.step(np.array([0.25, 0.75]))
    assert terminated and info["proposed_violation"] == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_nan_raises_through_gym_make(mode: str) -> None:
    env = gym.make("tsg/Screening-v1", invalid_action=mode)
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(np.full(10, np.nan, dtype=np.float32))


def test_project_mode_executes_the_alpha_projection() -> None:
    env = _one_passenger("project", 0, 1)
    obs, reward, _, _, info = env.step(np.array([1.0, 0.0]))
    # Risk excess of (1, 0): -2·0.5 - (-1.25) = 0.25. α from the centre (0.375, 0.625) toward
    # (1, 0): slack 0.0625 over rate 0.3125 -> α = 0.2, so y = (0.5, 0.5), shrunk 1e-6 inside.
    assert info["proposed_violation"] == pytest.approx(0.25, abs=1e-12)
    np.testing.assert_allclose(info["executed_action"], [0.5, 0.5], atol=1e-6)
    assert info["executed_action"][1] >= 0.5
    assert reward == 0.0 and info["penalty"] == 0.0
    assert env.polytope(1).violation(info["executed_action"]) <= FEASIBILITY_TOL
    np.testing.assert_allclose(obs[env.obs_layout["backlog"]], [2.0, 2.0], atol=1e-5)


def test_project_mode_renormalises_before_projecting() -> None:
    # c0 = (θ0, κ0) admits the whole simplex under ψ = 0.75 (risk ≤ 0.5·0.5·2 = 0.5).
    env = _one_passenger("project", 0, 0)
    _, _, _, _, info = env.step(np.array([0.2, 0.6]))  # |Σπ - 1| = 0.2
    assert info["proposed_violation"] == pytest.approx(0.2)
    np.testing.assert_allclose(info["executed_action"], [0.25, 0.75], rtol=1e-15)
    env = _one_passenger("project", 0, 0)
    _, _, _, _, info = env.step(np.array([-0.1, 1.1]))  # max(-π) = 0.1, Σπ = 1
    assert info["proposed_violation"] == pytest.approx(0.1)
    np.testing.assert_array_equal(info["executed_action"], [0.0, 1.0])


def test_within_tolerance_is_renormalised_not_projected_nor_penalised() -> None:
    for mode in MODES:
        env = _one_passenger(mode, 0, 1)
        _, reward, _, _, info = env.step(np.array([0.25, 0.75 + 5e-7]))
        assert info["proposed_violation"] == pytest.approx(5e-7, rel=1e-6)
        assert reward == 0.0 and info["penalty"] == 0.0
        assert abs(info["executed_action"].sum() - 1.0) < 1e-15


@pytest.mark.parametrize(
    ("theta", "flight", "action", "fragments"),
    [
        # c1: risk excess of (1, 0) is -2·0.5 + 1.25 = 0.25 (the only violated row).
        (0, 1, [1.0, 0.0], ["category 1", "theta=0", "flight=1", "risk row 0", "0.25"]),
        # c2 = (θ1, κ0), row -(0.5, 0.75)·π ≤ -0.25: (0.2, 0.6) has risk excess -0.3 and
        # |Σπ - 1| = 0.2.
        (1, 0, [0.2, 0.6], ["category 2", "theta=1", "flight=0", "sum(pi) = 1", "0.2"]),
        # c2 with (1.3, -0.3): risk excess -0.65 + 0.225 + 0.25 = -0.175, -π_1 = 0.3.
        (1, 0, [1.3, -0.3], ["category 2", "theta=1", "flight=0", "row 2 (pi[1] >= 0)", "0.3"]),
        # c3 = (θ1, κ1) with (1.2, -0.2): risk excess -1.2 + 0.3 + 1.25 = 0.35 beats -π_1 = 0.2.
        (1, 1, [1.2, -0.2], ["category 3", "theta=1", "flight=1", "risk row 0", "0.35"]),
    ],
)
def test_raise_mode_names_category_row_and_amount(
    theta: int, flight: int, action: list[float], fragments: list[str]
) -> None:
    env = _one_passenger("raise", theta, flight)
    with pytest.raises(ValueError) as err:
        env.step(np.array(action))
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    # Nothing advanced.
    assert env.step(np.array([0.25, 0.75]))[2]


def test_penalize_mode_executes_the_proposal_and_subtracts_the_penalty() -> None:
    env = _one_passenger("penalize", 0, 1)
    obs, reward, _, _, info = env.step(np.array([1.0, 0.0]))
    # Executed as proposed (breaking the bound): π_1 = 0, backlog (2, 0); penalty 100 · 0.25.
    np.testing.assert_array_equal(info["executed_action"], [1.0, 0.0])
    assert info["penalty"] == pytest.approx(25.0) and reward == pytest.approx(-25.0)
    np.testing.assert_array_equal(obs[env.obs_layout["backlog"]], [2.0, 0.0])
    # The penalty prices the risk excess of the renormalised (executed) action, not the
    # proposal's distance from the simplex. Category (θ0, κ1): row a = -P L E = -2 (0.5, 0.75)
    # = (-1, -1.5), b = ψ - P L = 0.75 - 2 = -1.25. Proposal 3 (0.8, 0.2): renormalised
    # (0.8, 0.2), a·s = -1.1, excess 0.15, penalty 3 · 0.15 = 0.45 (queues empty: wait 0).
    env = _tiny_env(invalid_action="penalize", risk_bound=TIGHT_PSI, violation_penalty=3.0)
    env.reset(seed=0, options={"arrivals": arrivals([0.0, 1.0], [0, 0], [1, 1])})
    _, reward, _, _, info = env.step(np.array([2.4, 0.6]))
    np.testing.assert_allclose(info["executed_action"], [0.8, 0.2])
    assert info["proposed_violation"] == pytest.approx(2.0)  # |Σπ - 1| of the proposal
    assert info["penalty"] == pytest.approx(0.45) and reward == pytest.approx(-0.45)
    # A huge finite proposal gives a finite reward: renormalised (1, 0), excess 0.25, penalty
    # 0.75, plus the wait behind the first passenger's load.
    _, reward, _, _, info = env.step(np.array([1e308, 0.0]))
    assert np.isfinite(reward) and info["penalty"] == pytest.approx(0.75)
    # Off the simplex only (renormalised it meets the bound): executed, no penalty.
    env.reset(seed=0, options={"arrivals": arrivals([0.0], [0], [0])})
    _, reward, _, _, info = env.step(np.array([0.2, 0.6]))
    np.testing.assert_allclose(info["executed_action"], [0.25, 0.75])
    assert info["penalty"] == 0.0 and reward == 0.0


def test_invalid_action_argument_is_checked() -> None:
    with pytest.raises(ValueError, match="invalid_action"):
        _tiny_env(invalid_action="clip")
    with pytest.raises(ValueError, match="queue_mode"):
        _tiny_env(queue_mode="mean")


def test_infeasible_risk_bound_names_theta_and_flight() -> None:
    # ψ_0 = 0.375 < 0.5 = P_0 (1 - 0.75) L_1, the best category (θ0, κ1) can do.
    with pytest.raises(InfeasibleRiskBoundError, match=r"theta=0, flight=1"):
        _tiny_env(risk_bound=np.array([0.375, 2.0]))
    with pytest.raises(ValueError, match="shape"):
        _tiny_env(risk_bound=np.array([1.0, 1.0, 1.0]))


# Info and observation contract on a generated instance ------------------------------------
def test_info_and_observation_contract_default_id() -> None:
    env = gym.make("tsg/Screening-v1")
    u = env.unwrapped
    lay = u.obs_layout
    g = u.game
    obs, info = env.reset(seed=5)
    assert set(info) == {"category", "theta", "flight", "time"}
    agent = CentreAgent(env)
    prev_obs, prev_info = obs, info
    times = []
    done = False
    while not done:
        c = prev_info["category"]
        assert c == g.category(prev_info["theta"], prev_info["flight"])
        assert prev_obs[lay["category"]].argmax() == c and prev_obs[lay["category"]].sum() == 1
        assert prev_obs in env.observation_space
        obs, reward, terminated, truncated, info = env.step(agent.act(prev_obs, prev_info))
        assert set(info) == STEP_KEYS
        # The observation's backlog is the state the next step's info reports as queues.
        np.testing.assert_allclose(
            prev_obs[lay["backlog"]], info["queues"] / g.rates, rtol=1e-6, atol=1e-6
        )
        assert reward == -info["wait"]
        times.append(prev_info["time"])
        prev_obs, prev_info = obs, info
        done = terminated or truncated
    assert np.all(np.diff(times) >= 0)
    assert (info["category"], info["theta"], info["flight"]) == (-1, -1, -1)
    # Every passenger screened once: history sums to n_passengers in expected-count units.
    h = obs[lay["history"]] * g.expected_category_counts()
    assert round(float(h.sum())) == g.n_passengers


def test_risk_bound_defaults_to_lp_psi_times_slack() -> None:
    env = gym.make("tsg/Screening-v1", risk_slack=0.05)
    u = env.unwrapped
    np.testing.assert_allclose(u.risk_bound, u.lp_solution.psi * 1.05, rtol=1e-15)
    np.testing.assert_array_equal(u.polytopes.risk_bound, u.risk_bound)
    psi = u.risk_bound * 2
    env2 = gym.make("tsg/Screening-v1", risk_bound=psi)
    np.testing.assert_array_equal(env2.unwrapped.risk_bound, psi)


def test_render_modes() -> None:
    env = _tiny_env(render_mode="ansi")
    env.reset(seed=0, options={"arrivals": arrivals(**HAND_DAY)})
    env.step(HAND_ACTIONS[0])
    text = env.render()
    assert "pax 1/3" in text and "r0:  1.0" in text
    env = _tiny_env(render_mode="rgb_array")
    env.reset(seed=0, options={"arrivals": arrivals(**HAND_DAY)})
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3


def test_docstring_arguments_table_matches_the_signature() -> None:
    """help(ScreeningEnv) documents exactly the constructor's parameters."""
    import inspect
    import re

    doc = ScreeningEnv.__doc__ or ""
    table = doc.split("## Arguments", 1)[1].split("```", 1)[0]
    documented = set(re.findall(r"^\s*\| ``([a-z_]+)`` \|", table, flags=re.M))
    params = set(inspect.signature(ScreeningEnv.__init__).parameters) - {"self"}
    assert documented == params


def test_family_report_row_and_table() -> None:
    # One single-window instance: the binding verdict holds (no stretch, >= 1% capacity loss,
    # U_min / s <= 1 < U* / s) and the table aggregates it.
    from tsg_envs import family

    row = family.family_row("tsg/Screening-Window-5F-v1", 0, days=1)
    assert row.draws >= 1 and row.stretch == 1.0 and row.capacity_loss >= 0.01
    assert row.least / row.scale <= 1.0 < row.risk_optimal / row.scale
    assert row.lp_mean_wait > 0 and 0 < row.radius_min <= row.radius_median
    text = family.format_family([row])
    assert "| `tsg/Screening-Window-5F-v1` | 1 (seeds 0-0) |" in text
    with pytest.raises(ValueError, match="single-window"):
        family.family_row("tsg/Screening-v1", 0, days=1)
