"""An adaptive leaderboard submission: send everyone to the shortest queue, as far as risk allows.

For the waiting passenger the agent proposes the one-hot allocation on the team with the
shortest current wait (``obs[obs_layout["waits"]]``) and α-projects it toward the category's
polytope centre, so every action is feasible. Evaluate it with::

    python -m leaderboard evaluate --agent examples/submission_greedy.py --suite quick --out runs/lb
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs.polytope import alpha_project

NAME = "example-greedy-alpha"
DESCRIPTION = "one-hot on the shortest-wait team, alpha-projected toward the polytope centre"


class GreedyAlpha:
    """Shortest-wait team, pulled back toward the centre until the risk rows hold."""

    def __init__(self, env: gym.Env) -> None:
        u = env.unwrapped
        self.polys = u.polytopes
        self.waits = u.obs_layout["waits"]

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """A feasible allocation leaning on the least-loaded team."""
        c = info["category"]
        w = np.asarray(obs[self.waits], dtype=float)
        s = np.zeros(w.shape)
        s[np.argmin(w)] = 1.0
        p = self.polys
        return alpha_project(s, p.centers[c], p.A_ub[c], p.b_ub[c])


def make_agent(env: gym.Env) -> GreedyAlpha:
    """Called once per (environment id, instance) with that environment."""
    return GreedyAlpha(env)
