"""Attackers: the exact best response is exact, the sampler is the duel, DQN smoke."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import LOOSE_PSI, tiny_game

from tsg_envs import GameConfig, duel
from tsg_envs.attacker_env import AttackerEnv
from tsg_envs.duel import WAIT, encode_attack
from tsg_envs.rollout import CentreAgent, LPAgent

torch = pytest.importorskip("torch")
tianshou = pytest.importorskip("tianshou")

from baselines.attackers import (  # noqa: E402
    BestResponseAttacker,
    RandomAttacker,
    attacker_gain,
    play_duel,
)
from baselines.dqn_attacker import (  # noqa: E402
    DQNAttacker,
    DQNAttackerConfig,
    TianshouMaskObs,
    counterfactual_day,
    train_dqn_attacker,
)

SMALL = dict(config=GameConfig(flight_size_range=(5, 8)), n_flights=2)


class _Scripted:
    """Strikes with ``action`` when passenger ``at`` is waiting (never if at < 0)."""

    def __init__(self, at: int, action: int) -> None:
        self.at, self.action = at, action

    def reset(self, seed=None) -> None:
        self.i = 0

    def act(self, obs, info) -> int:
        i, self.i = self.i, self.i + 1
        return self.action if i == self.at else WAIT


def _all_strikes(game_duel, defender, seed: int, theta: int) -> float:
    """The best gain over every (moment, flight, method) strike, by playing each one."""
    g = game_duel.game
    best = 0.0
    for at in range(g.n_passengers):
        for a in range(1, 1 + g.n_flights * g.n_methods):
            best = max(best, play_duel(game_duel, _Scripted(at, a), defender, seed, theta).gain)
    return best


# The exact best response --------------------------------------------------------------------
def test_best_response_equals_brute_force_over_every_strike_small_instance() -> None:
    game_duel = duel.parallel_env(**SMALL)
    defender = LPAgent(game_duel.screening)
    br = BestResponseAttacker(defender, **SMALL)
    for theta in range(game_duel.game.n_risk_levels):
        out = play_duel(game_duel, br, defender, seed=2, theta=theta)
        assert out.struck and out.gain == pytest.approx(br.gain(theta), rel=1e-12)
        assert out.strike_step == br.report.best_step[theta]
        assert out.decisions == game_duel.game.n_passengers + 1
        assert out.gain == pytest.approx(_all_strikes(game_duel, defender, 2, theta), rel=1e-12)


# Tiny hand game, departures (3, 4): p0, p1 of flight 0 at τ = 1, p2 of flight 1 at τ = 2. The
# defender plays team 1 (E = 0.75) except for c3 = (θ1, κ1) from τ = 2 on, where it plays team 0
# (E = 0.5). θ1's best: flight 1 (L = 4) screened at τ = 2, i.e. cutting in ahead of p2 (strike
# decided while p1 waits, step 1): gain (1 - 0.5)·4 = 2. θ0's best: flight 1 at any reachable
# moment, (1 - 0.75)·4 = 1, earliest = ahead of p1 (strike at step 0).
class _TimedDefender:
    def act(self, obs, info):
        late_c3 = info["category"] == 3 and info["time"] >= 2.0
        return np.array([1.0, 0.0]) if late_c3 else np.array([0.0, 1.0])


def test_best_response_on_the_tiny_hand_game() -> None:
    kwargs = dict(
        game=tiny_game(departures=np.array([3.0, 4.0]), day_length=3.0), risk_bound=LOOSE_PSI
    )
    game_duel = duel.parallel_env(**kwargs)
    defender = _TimedDefender()
    br = BestResponseAttacker(defender, **kwargs)
    out1 = play_duel(game_duel, br, defender, seed=0, theta=1)
    assert (out1.gain, out1.flight, out1.strike_step, out1.strike_time) == (2.0, 1, 2, 2.0)
    out0 = play_duel(game_duel, br, defender, seed=0, theta=0)
    assert (out0.gain, out0.flight, out0.strike_step, out0.strike_time) == (1.0, 1, 1, 1.0)
    assert _all_strikes(game_duel, defender, 0, 1) == 2.0
    assert _all_strikes(game_duel, defender, 0, 0) == 1.0


def test_best_response_realises_the_probe_on_the_default_game() -> None:
    game_duel = duel.parallel_env()
    defender = LPAgent(game_duel.screening)
    br = BestResponseAttacker(defender)
    for theta in range(game_duel.game.n_risk_levels):
        out = play_duel(game_duel, br, defender, seed=3, theta=theta)
        assert out.gain == pytest.approx(br.gain(theta), rel=1e-12)


def test_best_response_scores_one_and_stays_within_the_bound() -> None:
    game_duel = duel.parallel_env(**SMALL)
    defender = LPAgent(game_duel.screening)
    br = BestResponseAttacker(defender, **SMALL)
    score = attacker_gain(br, defender, seeds=[3, 4], best=br, **SMALL)
    assert score.fraction == pytest.approx(1.0, rel=1e-12)
    # Σ_θ P_θ gain_θ ≤ Σ_θ ψ_θ: the LP stays inside every polytope.
    psi = game_duel.screening.risk_bound
    assert np.all(game_duel.game.attacker_prior * score.per_theta_best <= psi + 1e-6)


def test_random_attacker_is_seeded_strikes_once_and_gains_no_more_than_the_best() -> None:
    game_duel = duel.parallel_env(**SMALL)
    defender = CentreAgent(game_duel.screening)
    br = BestResponseAttacker(defender, **SMALL)
    ra = RandomAttacker(game_duel.game)
    for seed in range(6):
        out = play_duel(game_duel, ra, defender, seed=seed, theta=1)
        again = play_duel(game_duel, ra, defender, seed=seed, theta=1)
        assert out == again and out.struck
        br.plan(seed)
        assert out.gain <= br.gain(1) + 1e-12


# The training sampler is the duel -------------------------------------------------------------
def test_counterfactual_day_gains_equal_the_duels() -> None:
    game_duel = duel.parallel_env(**SMALL)
    g = game_duel.game
    defender = LPAgent(game_duel.screening)
    rng = np.random.default_rng(0)
    b = 12
    thetas = rng.integers(g.n_risk_levels, size=b)
    starts = rng.integers(g.n_passengers, size=b)
    actions = 1 + rng.integers(g.n_flights * g.n_methods, size=b)
    actions[0] = WAIT  # one attacker never strikes

    def choose(x, ids):  # each attacker strikes (or, attacker 0, waits) at its first decision
        assert x.shape[0] == len(ids)
        return actions[ids]

    data = counterfactual_day(game_duel, defender, choose, thetas, starts, seed=4, rng=rng)
    for i in range(b):
        out = play_duel(
            game_duel, _Scripted(int(starts[i]), int(actions[i])), defender, 4, int(thetas[i])
        )
        assert data["gain"][i] == pytest.approx(out.gain, rel=1e-12)
        assert data["strike_step"][i] == out.strike_step
    # One terminal transition per attacker (the waiter's at the end of the day); the waiter
    # decides from its start to the last passenger.
    assert data["terminated"].sum() == b
    assert len(data["act"]) == b - 1 + g.n_passengers - starts[0]
    # Attacker observation: Θ + R + T + clock + K + struck = 5 + 5 + 10 + 1 + 2 + 1.
    assert data["obs"].shape == data["obs_next"].shape == (len(data["act"]), 24)


# DQN smoke ---------------------------------------------------------------------------------------
def test_dqn_attacker_trains_deterministically_saves_loads_and_respects_masks(tmp_path) -> None:
    cfg = DQNAttackerConfig(
        steps=300, attackers_per_day=32, warmup_steps=100, batch_size=32, eps_decay_steps=150,
        updates_per_step=0.1, hidden_sizes=(16,),
    )
    att = train_dqn_attacker(LPAgent, cfg, **SMALL)
    again = train_dqn_attacker(LPAgent, cfg, **SMALL)
    for p, q in zip(att.net.parameters(), again.net.parameters(), strict=True):
        assert torch.equal(p, q)
    game_duel = duel.parallel_env(**SMALL)
    obs, _ = game_duel.reset(seed=0)
    loaded = DQNAttacker.load(att.save(tmp_path / "a.safetensors"), game_duel)
    np.testing.assert_array_equal(loaded.q_values(obs["attacker"]), att.q_values(obs["attacker"]))
    assert loaded.config == att.config and loaded.meta == att.meta
    masked = dict(obs["attacker"], action_mask=np.eye(7, dtype=np.int8)[4])
    assert att.act(masked) == 4  # the only allowed action
    out = play_duel(game_duel, att, LPAgent(game_duel.screening), seed=0, theta=0)
    assert out.decisions in (game_duel.game.n_passengers, game_duel.game.n_passengers + 1)
    assert att.meta["days"] >= 1 and att.meta["defender"] == "LPAgent"


def test_attacker_env_runs_under_tianshous_collector() -> None:
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.data import Collector, ReplayBuffer
    from tianshou.env import DummyVectorEnv

    from baselines.dqn_attacker import DQNAttackerConfig as Cfg
    from baselines.dqn_attacker import _make_net

    def make():
        return TianshouMaskObs(AttackerEnv(LPAgent, **SMALL))

    env = make()
    assert set(env.observation_space.spaces) == {"obs", "mask"}
    net = _make_net(env.unwrapped, Cfg(hidden_sizes=(8,)))
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space)
    venv = DummyVectorEnv([make])
    collector = Collector(policy, venv, ReplayBuffer(200))
    collector.reset(gym_reset_kwargs={"seed": 0})
    stats = collector.collect(n_step=40)
    assert stats.n_collected_steps == 40 and stats.n_collected_episodes >= 1


@pytest.mark.slow
def test_dqn_attacker_learns_most_of_the_best_response_against_the_lp() -> None:
    game_duel = duel.parallel_env()
    defender = LPAgent(game_duel.screening)
    att = train_dqn_attacker(defender, DQNAttackerConfig(steps=100_000, attackers_per_day=512))
    score = attacker_gain(att, defender, seeds=[100, 101, 102])
    random = attacker_gain(RandomAttacker(game_duel.game), defender, seeds=[100, 101, 102])
    assert score.fraction > max(0.7, random.fraction)


def test_encode_attack_matches_the_action_space() -> None:
    g = duel.parallel_env(**SMALL)
    assert encode_attack(g.game.n_flights - 1, g.game.n_methods - 1, g.game.n_methods) == (
        g.action_space("attacker").n - 1
    )
