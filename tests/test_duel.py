"""The PettingZoo duel: checkers, the shared core, a hand-computed strike, masks, bad actions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import LOOSE_PSI, arrivals, tiny_game
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

from tsg_envs import GameConfig, ScreeningEnv, duel
from tsg_envs.attacker_env import AttackerEnv
from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, decode_attack, encode_attack
from tsg_envs.rollout import LPAgent

SMALL = dict(config=GameConfig(flight_size_range=(5, 8)), n_flights=2)
STEP_KEYS = {
    "category", "theta", "flight", "time", "queues", "wait", "penalty",
    "proposed_violation", "executed_action", "team",
}


def _quiet(fn, *args, **kwargs):
    """Run a PettingZoo checker without its style warnings (agent names, Dict obs, inf bounds)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# PettingZoo checkers ------------------------------------------------------------------------
@pytest.mark.parametrize("queue_mode", ["expected", "sampled"])
def test_pettingzoo_api_tests(queue_mode: str) -> None:
    _quiet(parallel_api_test, duel.parallel_env(queue_mode=queue_mode, **SMALL), num_cycles=200)
    _quiet(api_test, duel.env(queue_mode=queue_mode, **SMALL), num_cycles=200)


@pytest.mark.parametrize("queue_mode", ["expected", "sampled"])
def test_pettingzoo_seed_tests(queue_mode: str) -> None:
    _quiet(seed_test, lambda: duel.env(queue_mode=queue_mode, **SMALL), num_cycles=200)
    _quiet(
        parallel_seed_test, lambda: duel.parallel_env(queue_mode=queue_mode, **SMALL),
        num_cycles=200,
    )


def test_parallel_api_test_on_the_default_game() -> None:
    _quiet(parallel_api_test, duel.parallel_env(), num_cycles=100)


# The core is shared ---------------------------------------------------------------------------
class _Uniform:
    """Proposes the uniform allocation (infeasible for many categories: project mode moves it)."""

    def act(self, obs, info):
        return np.full(10, 0.1)


def _single_agent_day(env: ScreeningEnv, defender, seed: int) -> list:
    obs, info = env.reset(seed=seed)
    out = [(obs, None, info)]
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(defender.act(obs, info))
        out.append((obs, reward, info))
        done = terminated or truncated
    return out


@pytest.mark.parametrize("queue_mode", ["expected", "sampled"])
@pytest.mark.parametrize("defender_kind", ["lp", "uniform"])
def test_never_striking_attacker_leaves_the_defender_trajectory_of_the_single_env(
    queue_mode: str, defender_kind: str
) -> None:
    single = ScreeningEnv(queue_mode=queue_mode)
    game = duel.parallel_env(queue_mode=queue_mode)
    defender = LPAgent(single) if defender_kind == "lp" else _Uniform()
    reference = _single_agent_day(single, defender, seed=5)

    obs, infos = game.reset(seed=5)
    got = [(obs[DEFENDER], None, infos[DEFENDER])]
    while game.agents:
        d = defender.act(obs[DEFENDER], infos[DEFENDER])
        obs, rewards, terms, _, infos = game.step({ATTACKER: WAIT, DEFENDER: d})
        got.append((obs[DEFENDER], rewards[DEFENDER], infos[DEFENDER]))
        assert rewards[ATTACKER] == 0.0 and infos[DEFENDER]["attack_loss"] == 0.0
    assert len(got) == len(reference) == single.game.n_passengers + 1
    for (o1, r1, i1), (o2, r2, i2) in zip(reference, got, strict=True):
        np.testing.assert_array_equal(o1, o2)
        assert r1 == r2
        for key in i1:
            np.testing.assert_array_equal(i1[key], i2[key], err_msg=key)
    assert set(got[-1][2]) == STEP_KEYS | {"attack_loss"}


# A hand-computed strike -----------------------------------------------------------------------
# Tiny game (conftest): f = (0.5, 0.25), team 0 = {r0}, team 1 = {r0, r1}, E = (0.5, 0.75) for the
# one method, L = (2, 4) by flight, day length 4, departures (3, 3). ψ = (2, 2) admits every
# allocation. Day: p0 (θ0, κ0) and p1 (θ1, κ0) at τ = 1, p2 (θ0, κ1) at τ = 2. The defender
# always plays team 1, π = (0, 1). The attacker (θ_a = 1) strikes with flight 1, method 0 (action
# 1 + 1·1 + 0 = 2) while p1 waits: it joins at the next arrival moment τ = 2, ahead of p2.
#
#   p0: ξ = (0, 0), wait 0.                         load -> (1, 1); no drain (p1 also at τ=1)
#   p1: w_1 = max(1/0.5, 1/0.25) = 4, wait 4.       load -> (2, 2); drain 1 min -> (1.5, 1.75)
#   attacker (c = 1·2 + 1 = 3, τ = 2): w_1 = max(3, 7) = 7, wait 7; gain (1 - 0.75)·4 = 1.
#                                                   load -> (2.5, 2.75); no drain (p2 at τ=2)
#   p2: w_1 = max(5, 11) = 11, wait 11. Day over after 4 defender decisions.
# Defender rewards: 0, -4, -7 - 1 = -8, -11; attacker rewards 0, 0, 1, 0.
# Defender's observation of the attacker: one-hot c3, backlog (3, 7), history h/(n_κ q_θ) with
# expected counts (1, 0.5, 1, 0.5) and c0, c2 screened -> (1, 0, 1, 0), clock 2/4.
# Attacker's observation then: θ one-hot (0, 1), backlog (3, 7), waits (3, 7), clock 0.5,
# departures (3 - 2)/4 = 0.25 for both flights, struck 1, mask (1, 0, 0).
DAY = dict(times=[1.0, 1.0, 2.0], thetas=[0, 1, 0], flights=[0, 0, 1])
TEAM_1 = np.array([0.0, 1.0])


def _tiny_duel(**kwargs) -> duel.DuelParallelEnv:
    kwargs.setdefault("risk_bound", LOOSE_PSI)
    return duel.parallel_env(game=kwargs.pop("game", tiny_game()), **kwargs)


def test_hand_computed_strike_expected_mode() -> None:
    game = _tiny_duel()
    obs, infos = game.reset(seed=0, options={"arrivals": arrivals(**DAY), "attacker_theta": 1})
    assert encode_attack(1, 0, 1) == 2 and decode_attack(2, 1) == (1, 0)
    attacks = [WAIT, 2, WAIT, WAIT]
    d_rewards, a_rewards, waits, cats = [], [], [], []
    for i, a in enumerate(attacks):
        obs, rewards, terms, truncs, infos = game.step({ATTACKER: a, DEFENDER: TEAM_1})
        d_rewards.append(rewards[DEFENDER])
        a_rewards.append(rewards[ATTACKER])
        waits.append(infos[DEFENDER]["wait"])
        cats.append(infos[DEFENDER]["category"])
        if i == 1:  # the defender now faces the attacker, as a plain category-3 passenger
            lay = game.defender_obs_layout
            np.testing.assert_array_equal(obs[DEFENDER][lay["category"]], [0, 0, 0, 1])
            np.testing.assert_array_equal(obs[DEFENDER][lay["backlog"]], [3.0, 7.0])
            np.testing.assert_array_equal(obs[DEFENDER][lay["history"]], [1, 0, 1, 0])
            assert obs[DEFENDER][lay["clock"]][0] == 0.5
            assert (infos[DEFENDER]["theta"], infos[DEFENDER]["flight"]) == (1, 1)
            assert infos[DEFENDER]["time"] == 2.0
            alay = game.attacker_obs_layout
            x = obs[ATTACKER]["observation"]
            np.testing.assert_array_equal(x[alay["theta"]], [0, 1])
            np.testing.assert_array_equal(x[alay["backlog"]], [3.0, 7.0])
            np.testing.assert_array_equal(x[alay["waits"]], [3.0, 7.0])
            np.testing.assert_array_equal(x[alay["clock"]], [0.5])
            np.testing.assert_array_equal(x[alay["departures"]], [0.25, 0.25])
            np.testing.assert_array_equal(x[alay["struck"]], [1.0])
            np.testing.assert_array_equal(obs[ATTACKER]["action_mask"], [1, 0, 0])
            assert infos[ATTACKER]["strike_time"] == 2.0 and not infos[ATTACKER]["screened"]
        assert all(terms.values()) == (i == 3) and not any(truncs.values())
    assert waits == [0.0, 4.0, 7.0, 11.0]
    assert d_rewards == [0.0, -4.0, -8.0, -11.0]
    assert a_rewards == [0.0, 0.0, 1.0, 0.0]
    assert cats == [2, 3, 1, -1]  # the category waiting after each decision
    assert infos[ATTACKER]["detection_probability"] == 0.75
    assert infos[ATTACKER]["detected"] == -1 and infos[ATTACKER]["screened"]
    assert game.agents == []


def test_sampled_mode_detects_with_the_drawn_teams_efficacy() -> None:
    # Team 1 is always drawn; it detects the method with E = 0.75, so the attacker gains L = 4
    # with probability 1/4, else 0. 400 days: the count of gains has sd sqrt(400·3/16) ≈ 8.7.
    game = _tiny_duel(queue_mode="sampled")
    gains = []
    for seed in range(400):
        game.reset(seed=seed, options={"arrivals": arrivals(**DAY), "attacker_theta": 1})
        total = 0.0
        for a in [WAIT, 2, WAIT, WAIT]:
            _, rewards, _, _, infos = game.step({ATTACKER: a, DEFENDER: TEAM_1})
            total += rewards[ATTACKER]
        assert infos[ATTACKER]["detected"] in (0, 1)
        assert total == (0.0 if infos[ATTACKER]["detected"] else 4.0)
        gains.append(total)
    assert abs(np.mean(np.array(gains) == 4.0) - 0.25) < 0.065  # 3 sd


def test_attacker_level_is_drawn_from_the_prior_and_private() -> None:
    # P = (0.2, 0.8): over 1000 days the share of θ_a = 1 has sd sqrt(.16/1000) ≈ 0.0126.
    game = _tiny_duel(game=tiny_game(attacker_prior=np.array([0.2, 0.8])))
    thetas = []
    for seed in range(1000):
        obs, infos = game.reset(seed=seed)
        thetas.append(infos[ATTACKER]["theta"])
        # The defender's info is the single env's (the waiting passenger), nothing of θ_a.
        assert set(infos[DEFENDER]) == {"category", "theta", "flight", "time", "attack_loss"}
        x = obs[ATTACKER]["observation"][game.attacker_obs_layout["theta"]]
        assert x[thetas[-1]] == 1.0 and x.sum() == 1.0
    assert abs(np.mean(thetas) - 0.8) < 0.04
    # The same seed gives the same level; the stream is the duel's own.
    a = [game.reset(seed=s)[1][ATTACKER]["theta"] for s in range(20)]
    b = [game.reset(seed=s)[1][ATTACKER]["theta"] for s in range(20)]
    assert a == b


def test_striking_at_the_last_passenger_adds_one_decision() -> None:
    game = _tiny_duel()
    game.reset(seed=0, options={"arrivals": arrivals(**DAY), "attacker_theta": 0})
    game.step({ATTACKER: WAIT, DEFENDER: TEAM_1})
    game.step({ATTACKER: WAIT, DEFENDER: TEAM_1})
    _, _, terms, _, infos = game.step({ATTACKER: 1, DEFENDER: TEAM_1})  # flight 0, after p2
    assert not any(terms.values()) and game.attacker_waiting
    assert infos[DEFENDER]["category"] == 0 and infos[DEFENDER]["time"] == 2.0
    _, rewards, terms, _, infos = game.step({ATTACKER: WAIT, DEFENDER: TEAM_1})
    # p2 left ξ = (2.5, 2.75) (see the hand-computed strike): wait max(5, 11) = 11;
    # gain (1 - 0.75)·2 = 0.5.
    assert infos[DEFENDER]["wait"] == 11.0 and rewards[ATTACKER] == 0.5
    assert rewards[DEFENDER] == -11.5 and all(terms.values())


# Masks and bad actions ------------------------------------------------------------------------
def test_action_mask_allows_everything_before_the_strike_and_only_the_noop_after() -> None:
    game = duel.parallel_env(**SMALL)
    obs, _ = game.reset(seed=1)
    n = game.action_space(ATTACKER).n
    assert n == 1 + 2 * 3
    np.testing.assert_array_equal(obs[ATTACKER]["action_mask"], np.ones(n))
    assert game.observation_space(ATTACKER).contains(obs[ATTACKER])
    obs, *_ = game.step({ATTACKER: encode_attack(1, 2, 3), DEFENDER: np.full(10, 0.1)})
    expected = np.zeros(n, dtype=np.int8)
    expected[0] = 1
    while game.agents:
        np.testing.assert_array_equal(obs[ATTACKER]["action_mask"], expected)
        assert game.observation_space(ATTACKER).contains(obs[ATTACKER])
        assert game.observation_space(DEFENDER).contains(obs[DEFENDER])
        obs, *_ = game.step({ATTACKER: WAIT, DEFENDER: np.full(10, 0.1)})


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (1.0, TypeError, "must be an integer"),
        ("1", TypeError, "must be an integer"),
        (True, TypeError, "must be an integer"),
        (np.array([1, 2]), TypeError, "one integer"),
        (np.array(0.5), TypeError, "one integer"),
        (-1, ValueError, "out of range"),
        (7, ValueError, "out of range"),
    ],
)
def test_bad_attacker_actions_raise_clear_errors(bad, error, match) -> None:
    game = duel.parallel_env(**SMALL)
    game.reset(seed=0)
    with pytest.raises(error, match=match):
        game.step({ATTACKER: bad, DEFENDER: np.full(10, 0.1)})


def test_integer_like_attacker_actions_are_accepted_and_a_second_strike_is_masked() -> None:
    game = duel.parallel_env(**SMALL)
    game.reset(seed=0)
    game.step({ATTACKER: np.int64(0), DEFENDER: np.full(10, 0.1)})
    game.step({ATTACKER: np.array(3), DEFENDER: np.full(10, 0.1)})
    assert game.struck
    with pytest.raises(ValueError, match="masked out"):
        game.step({ATTACKER: 3, DEFENDER: np.full(10, 0.1)})


def test_missing_action_wrong_defender_action_and_step_after_end_raise() -> None:
    game = duel.parallel_env(**SMALL)
    game.reset(seed=0)
    with pytest.raises(ValueError, match="missing"):
        game.step({ATTACKER: 0})
    with pytest.raises(ValueError, match="shape"):
        game.step({ATTACKER: 0, DEFENDER: np.ones(3)})
    with pytest.raises(ValueError, match="finite"):
        game.step({ATTACKER: 0, DEFENDER: np.full(10, np.nan)})
    while game.agents:
        game.step({ATTACKER: 0, DEFENDER: np.full(10, 0.1)})
    with pytest.raises(RuntimeError, match="reset"):
        game.step({ATTACKER: 0, DEFENDER: np.full(10, 0.1)})


def test_aec_env_rejects_masked_actions_too() -> None:
    aec = duel.env(**SMALL)
    aec.reset(seed=0)
    assert aec.agent_selection == ATTACKER
    aec.step(1)  # strike
    aec.step(np.full(10, 0.1))  # the defender's action completes the parallel step
    assert aec.agent_selection == ATTACKER
    obs = aec.observe(ATTACKER)
    assert obs["action_mask"].tolist() == [1] + [0] * 6
    # Refused on the attacker's own turn (not later, on the defender's), and nothing moved: the
    # attacker still acts, a valid action then goes through and the day continues.
    with pytest.raises(ValueError, match="masked out"):
        aec.step(2)
    for bad, error in (("1", TypeError), (1.0, TypeError), (-1, ValueError), (99, ValueError),
                       (np.array([0, 0]), TypeError)):
        with pytest.raises(error):
            aec.step(bad)
        assert aec.agent_selection == ATTACKER
    aec.step(0)
    assert aec.agent_selection == DEFENDER
    with pytest.raises(ValueError, match="finite"):
        aec.step(np.full(10, np.nan))
    assert aec.agent_selection == DEFENDER
    aec.step(np.full(10, 0.1))
    assert aec.agent_selection == ATTACKER


def test_parallel_step_refuses_a_bad_action_and_changes_nothing() -> None:
    game = duel.parallel_env(invalid_action="raise", **SMALL)
    reference = duel.parallel_env(invalid_action="raise", **SMALL)
    game.reset(seed=0)
    reference.reset(seed=0)
    for actions in ({ATTACKER: 99, DEFENDER: np.full(10, 0.1)},
                    {ATTACKER: 1, DEFENDER: np.full(10, np.inf)},
                    {ATTACKER: 1, DEFENDER: np.zeros(10)}):  # off the simplex, "raise" mode
        with pytest.raises(ValueError):
            game.step(actions)
        assert not game.struck
    # The refused calls moved nothing: the same valid step gives what an untouched game gives.
    good = {ATTACKER: 1, DEFENDER: np.full(10, 0.1)}
    got, want = game.step(good), reference.step(good)
    np.testing.assert_array_equal(got[0][DEFENDER], want[0][DEFENDER])
    assert got[1] == want[1] and game.struck


def test_render_ansi() -> None:
    game = duel.parallel_env(render_mode="ansi", **SMALL)
    game.reset(seed=0)
    assert "attacker theta=" in game.render()
    game.step({ATTACKER: 1, DEFENDER: np.full(10, 0.1)})
    assert "struck flight=0 method=0" in game.render()
    with pytest.raises(ValueError, match="render_mode"):
        duel.parallel_env(render_mode="human", **SMALL)


# The attacker's single-agent face --------------------------------------------------------------
def test_attacker_env_folds_the_defender_and_ends_at_the_outcome() -> None:
    env = AttackerEnv(lambda e: _Always(TEAM_1), game=tiny_game(), risk_bound=LOOSE_PSI)
    obs, info = env.reset(seed=0, options={"arrivals": arrivals(**DAY), "attacker_theta": 1})
    assert env.observation_space.contains(obs) and info["step"] == 0
    obs, reward, terminated, truncated, info = env.step(WAIT)
    assert (reward, terminated, info["step"]) == (0.0, False, 1)
    # The strike while p1 waits: the defender screens p1 (wait 4) and the attacker (wait 7,
    # loss 1) within this step (see the hand-computed strike above).
    obs, reward, terminated, truncated, info = env.step(2)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["defender_reward"] == -4.0 - 8.0 and info["step"] == 2
    with pytest.raises(RuntimeError):
        env.step(WAIT)
    obs, info = env.reset(seed=0, options={"arrivals": arrivals(**DAY), "start_step": 2})
    assert info["step"] == 2
    obs, reward, terminated, _, info = env.step(WAIT)
    assert (reward, terminated) == (0.0, True)  # the day ended without a strike


class _Always:
    def __init__(self, action: np.ndarray) -> None:
        self.action = action

    def act(self, obs, info):
        return self.action
