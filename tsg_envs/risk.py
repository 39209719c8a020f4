"""Worst-case risk of a defender policy (SPEC §5), by probing it with every category.

The attacker knows the policy and picks its flight κ, method m and moment; nature picks its
level θ with prior P_θ. At every probed state of a day the policy is asked what it would do with
a passenger of each category c = ⟨θ, κ⟩ (the observation's category one-hot and the info's
category, θ and κ swapped in; queues, history and clock kept). The worst-case risk is

    Σ_θ P_θ · max over κ, m and probed states of (1 - z_m) L_{κ,m}

with z_m = Σ_t E_{t,m} π_t of the action the policy *proposes* (a penalty agent's leak shows).
It is compared against the bound Σ_θ ψ_θ. Probing calls ``act`` on made-up (obs, info) pairs, so
an agent's ``act`` must be free of side effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs.rollout import Agent

__all__ = ["RiskReport", "worst_case_risk", "action_risk"]


@dataclass(frozen=True)
class RiskReport:
    """Worst-case risk of a policy and the attack that achieves it.

    Attributes:
        risk: Σ_θ P_θ max_{κ,m,state} (1 - z_m) L_{κ,m}: the best-responding attacker's expected
            gain.
        bound: Σ_θ ψ_θ of the environment.
        per_theta: P_θ max_{κ,m,state} (1 - z_m) L_{κ,m}, (Θ,); compare with ψ_θ.
        best_flight: (Θ,) the attacker's best flight per level.
        best_method: (Θ,) its best method per level.
        best_time: (Θ,) its best moment (minutes from the day start) per level.
        states_probed: How many states were probed.
    """

    risk: float
    bound: float
    per_theta: np.ndarray
    best_flight: np.ndarray
    best_method: np.ndarray
    best_time: np.ndarray
    states_probed: int

    @property
    def within_bound(self) -> bool:
        """Whether every level's risk is within ψ_θ (tolerance 1e-6 relative)."""
        return bool(self.risk <= self.bound * (1 + 1e-6) + 1e-9)


def action_risk(game: Any, action: np.ndarray, flight: int) -> np.ndarray:
    """(1 - z_m) L_{κ,m} per method for an allocation ``action`` (..., T); returns (..., M)."""
    z = np.asarray(action, dtype=float) @ game.team_efficacy
    return (1.0 - z) * game.attack_loss[flight]


def worst_case_risk(
    env: gym.Env,
    agent: Agent,
    seed: int | None = 0,
    max_states: int | None = None,
) -> RiskReport:
    """Worst-case risk of ``agent`` on one day of ``env`` (probing every category).

    Args:
        env: The environment (its ``unwrapped`` must be a ``ScreeningEnv``).
        agent: The defender policy; ``act`` must be free of side effects.
        seed: Seed of the day whose visited states are probed.
        max_states: Probe at most this many states, evenly spaced over the day (None: every
            state). The subsample is deterministic.

    Returns:
        A :class:`RiskReport`.
    """
    u = env.unwrapped
    game = u.game
    n = game.n_passengers
    probe_at = None
    if max_states is not None and max_states < n:
        probe_at = set(np.linspace(0, n - 1, max_states).round().astype(int).tolist())
    k, c_total = game.n_flights, game.n_categories
    cat_slice = u.obs_layout["category"]
    worst = np.zeros(c_total)  # max over states and methods of (1 - z_m) L
    worst_m = np.zeros(c_total, dtype=int)
    worst_t = np.zeros(c_total)
    obs, info = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        agent.reset()
    i = 0
    probed = 0
    done = False
    while not done:
        if probe_at is None or i in probe_at:
            probed += 1
            for c in range(c_total):
                theta, flight = divmod(c, k)
                fake_obs = obs.copy()
                fake_obs[cat_slice] = 0.0
                fake_obs[cat_slice.start + c] = 1.0
                fake_info = dict(info, category=c, theta=theta, flight=flight)
                a = np.asarray(agent.act(fake_obs, fake_info), dtype=float)
                s = np.maximum(a, 0.0)
                s = s / s.sum() if s.sum() > 0 else np.full_like(s, 1.0 / s.size)
                r = action_risk(game, s, flight)
                m = int(r.argmax())
                if r[m] > worst[c]:
                    worst[c], worst_m[c], worst_t[c] = r[m], m, info["time"]
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
        i += 1
    per_cat = worst.reshape(game.n_risk_levels, k)
    best_flight = per_cat.argmax(axis=1)
    rows = np.arange(game.n_risk_levels)
    best_cat = rows * k + best_flight
    per_theta = game.attacker_prior * per_cat[rows, best_flight]
    return RiskReport(
        risk=float(per_theta.sum()),
        bound=float(np.sum(u.risk_bound)),
        per_theta=per_theta,
        best_flight=best_flight,
        best_method=worst_m[best_cat],
        best_time=worst_t[best_cat],
        states_probed=probed,
    )
