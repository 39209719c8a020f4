"""The agent interface and episode rollouts shared by baselines, the duel and the leaderboard.

An agent is any object with ``act(obs, info) -> action`` (optionally ``reset()`` at the start of
a day). ``act`` must be free of side effects: the worst-case risk probes it with made-up
(obs, info) pairs. Agents see the world only through the public contract: the observation, the
info keys of SPEC §3 and ``env.unwrapped`` (``game``, ``risk_bound``, ``polytope(c)``,
``polytopes``, ``obs_layout``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import gymnasium as gym
import numpy as np

from tsg_envs.harness import column
from tsg_envs.polytope import FEASIBILITY_TOL, violation

__all__ = ["Agent", "EpisodeStats", "rollout", "CentreAgent", "LPAgent"]


@runtime_checkable
class Agent(Protocol):
    """What every defender policy implements."""

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """Return an allocation π (T,) for the waiting passenger; no side effects."""
        ...


@dataclass
class EpisodeStats:
    """Per-episode metrics (SPEC §5, the parts measured on the episode itself).

    Attributes:
        waits: Each passenger's wait, minutes (expected or realised).
        proposed_violations: Passengers whose proposed action broke a constraint by > 1e-6.
        executed_violations: Passengers whose executed action did (0 outside penalize mode).
        max_violation: Largest violation of any proposed action.
        total_reward: Sum of rewards.
    """

    waits: np.ndarray
    proposed_violations: int
    executed_violations: int
    max_violation: float
    total_reward: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_wait(self) -> float:
        """Mean delay per passenger, minutes."""
        return float(self.waits.mean())

    @property
    def p95_wait(self) -> float:
        """95th percentile wait, minutes."""
        return float(np.percentile(self.waits, 95))

    @property
    def max_wait(self) -> float:
        """Largest wait, minutes."""
        return float(self.waits.max())

    def summary(self) -> dict[str, float]:
        """The scalar metrics as a dict."""
        return {
            "mean_wait": self.mean_wait,
            "p95_wait": self.p95_wait,
            "max_wait": self.max_wait,
            "proposed_violations": self.proposed_violations,
            "executed_violations": self.executed_violations,
            "max_violation": self.max_violation,
            "total_reward": self.total_reward,
        }


def rollout(env: gym.Env, agent: Agent, seed: int | None = None) -> EpisodeStats:
    """Run one day of ``env`` with ``agent`` and collect its metrics.

    The arrivals depend only on ``seed`` (not on the agent), so two agents rolled out with the
    same seed face the same passengers.
    """
    obs, info = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        agent.reset()
    unwrapped: Any = env.unwrapped  # a ScreeningEnv (duck-typed: its public contract)
    n = unwrapped.game.n_passengers
    waits = np.empty(n)
    proposed = executed = 0
    max_viol = 0.0
    total = 0.0
    polys = unwrapped.polytopes
    i = 0
    done = False
    while not done:
        c = info["category"]
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, step_info = env.step(action)
        done = terminated or truncated
        viol = step_info["proposed_violation"]
        max_viol = max(max_viol, viol)
        proposed += int(viol > FEASIBILITY_TOL)
        executed += int(
            violation(step_info["executed_action"], polys.A_ub[c], polys.b_ub[c])
            > FEASIBILITY_TOL
        )
        waits[i] = step_info["wait"]
        total += float(reward)
        i += 1
        info = step_info
    return EpisodeStats(
        waits=waits[:i],
        proposed_violations=int(proposed),
        executed_violations=int(executed),
        max_violation=float(max_viol),
        total_reward=float(total),
    )


class CentreAgent:
    """Always plays the waiting category's polytope centre (the Chebyshev-centre policy)."""

    def __init__(self, env: gym.Env) -> None:
        self._centers = cast(Any, env.unwrapped).polytopes.centers

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The centre of ``info["category"]``'s polytope."""
        return self._centers[info["category"]].copy()

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """The centres of each row's waiting category, (B, T)."""
        return self._centers[column(infos, "category").astype(np.int64)]


class LPAgent:
    """The static window LP policy (SPEC §4), with the environment's LP window length.

    Every passenger of category c arriving in window w gets π_{c,w}.
    """

    def __init__(self, env: gym.Env, window_minutes: float | None | str = "env") -> None:
        from tsg_envs.lp import solve_window_lp

        u: Any = env.unwrapped
        minutes = u.lp_window_minutes if window_minutes == "env" else window_minutes
        self.solution = solve_window_lp(u.game, cast(float | None, minutes))

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """π_{c,w} for the waiting passenger's category and arrival window."""
        return self.solution.action(info["time"], info["category"]).copy()

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """π_{c,w} of each row's waiting passenger, (B, T)."""
        times = column(infos, "time").astype(np.float64)
        cats = column(infos, "category").astype(np.int64)
        return self.solution.action(times, cats)
