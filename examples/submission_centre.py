"""A minimal leaderboard submission: always play the polytope's Chebyshev centre.

Evaluate it with::

    python -m leaderboard evaluate --agent examples/submission_centre.py --suite micro --out runs/lb

A submission is a Python file defining ``make_agent(env)``; the object it returns needs
``act(obs, info) -> action`` (an allocation over the teams, shape (T,)). ``NAME`` labels the
row on the board. ``act`` must be free of side effects: the worst-case risk probes it with
made-up (obs, info) pairs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

NAME = "example-centre"
DESCRIPTION = "the waiting category's polytope centre, whatever the queues"


class CentreSubmission:
    """Play the centre of ``info["category"]``'s polytope (feasible by construction)."""

    def __init__(self, env: gym.Env) -> None:
        self.centers = env.unwrapped.polytopes.centers  # (C, T)

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The centre allocation."""
        return self.centers[info["category"]].copy()


def make_agent(env: gym.Env) -> CentreSubmission:
    """Called once per (environment id, instance) with that environment."""
    return CentreSubmission(env)
