"""SoftmaxAlphaProjection: logits -> softmax(β x) -> α-projection onto the waiting polytope."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from conftest import LOOSE_PSI, arrivals, tiny_game

from tsg_envs import FEASIBILITY_TOL, ScreeningEnv
from tsg_envs.wrappers import DEFAULT_BETA, SoftmaxAlphaProjection


def _tiny(psi: np.ndarray, beta: float = DEFAULT_BETA) -> SoftmaxAlphaProjection:
    return SoftmaxAlphaProjection(ScreeningEnv(game=tiny_game(), risk_bound=psi), beta=beta)


def test_softmax_with_beta_by_hand() -> None:
    # Loose ψ: every allocation is feasible, so the executed action is the softmax itself.
    # β = 10, logits (1, -1): s_1 = e^-10 / (e^10 + e^-10) = 1 / (1 + e^20).
    env = _tiny(LOOSE_PSI)
    env.reset(seed=0, options={"arrivals": arrivals([0.0, 1.0], [0, 0], [1, 1])})
    _, _, _, _, info = env.step(np.array([1.0, -1.0], dtype=np.float32))
    s1 = 1.0 / (1.0 + math.exp(20.0))
    np.testing.assert_allclose(info["executed_action"], [1.0 - s1, s1], rtol=1e-12, atol=1e-20)
    assert info["proposed_violation"] <= FEASIBILITY_TOL
    # Logits are clipped to [-1, 1]: (5, -5) acts like (1, -1); β = 1 gives 1 / (1 + e^2).
    env = _tiny(LOOSE_PSI, beta=1.0)
    env.reset(seed=0, options={"arrivals": arrivals([0.0], [0], [1])})
    _, _, _, _, info = env.step(np.array([5.0, -5.0]))
    np.testing.assert_allclose(info["executed_action"][1], 1.0 / (1.0 + math.exp(2.0)),
                               rtol=1e-12)


def test_projects_onto_the_waiting_category() -> None:
    # ψ = (0.75, 0.75): c1 = (θ0, κ1) needs π_1 ≥ 0.5 (test_polytope), c0 admits everything.
    # Logits (1, -1) give s ≈ (1, 0): on c0 it is executed as is; on c1 it is α-projected from
    # the centre (0.375, 0.625) to the boundary (0.5, 0.5).
    env = _tiny(np.array([0.75, 0.75]))
    env.reset(seed=0, options={"arrivals": arrivals([0.0, 100.0], [0, 0], [0, 1])})
    _, _, _, _, info = env.step(np.array([1.0, -1.0]))
    assert info["executed_action"][0] > 1 - 1e-8
    _, _, _, _, info = env.step(np.array([1.0, -1.0]))
    np.testing.assert_allclose(info["executed_action"], [0.5, 0.5], atol=1e-6)
    assert info["executed_action"][1] >= 0.5
    assert info["proposed_violation"] == 0.0


def test_every_action_feasible_over_a_day_in_raise_mode() -> None:
    # raise mode would stop the episode on any infeasible proposal.
    env = SoftmaxAlphaProjection(gym.make("tsg/Screening-v1", invalid_action="raise"))
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (10,), np.float32)
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(0)
    polys = env.unwrapped.polytopes
    done, steps = False, 0
    while not done:
        c = info["category"]
        logits = rng.uniform(-1, 1, 10).astype(np.float32)
        obs, _, terminated, truncated, info = env.step(logits)
        assert polys[c].violation(info["executed_action"]) <= FEASIBILITY_TOL
        done = terminated or truncated
        steps += 1
    assert steps == env.unwrapped.game.n_passengers


def test_bad_logits_and_beta_raise() -> None:
    env = _tiny(LOOSE_PSI)
    env.reset(seed=0, options={"arrivals": arrivals([0.0], [0], [0])})
    for bad in (np.array([np.nan, 0.0]), np.array([np.inf, 0.0]), np.zeros(3), np.zeros((1, 2))):
        with pytest.raises(ValueError):
            env.step(bad)
    with pytest.raises(ValueError, match="beta"):
        _tiny(LOOSE_PSI, beta=0.0)
