"""Wrappers that let stock agents act inside the risk polytopes.

:class:`SoftmaxAlphaProjection` exposes ``Box(-1, 1, (T,))`` logits: the action is scaled by β,
passed through a softmax (onto the simplex), then α-projected toward the waiting category's
polytope centre (SPEC §3). Every executed action is feasible, so Stable-Baselines3 or Tianshou
SAC/PPO run unchanged.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from tsg_envs.polytope import alpha_project

__all__ = ["SoftmaxAlphaProjection", "VectorSoftmaxAlphaProjection", "DEFAULT_BETA"]

#: Logit scale β: with logits in [-1, 1] and no scaling, the softmax could give no team more
#: than e / (e + (T - 1)/e) ≈ 0.45 of the mass (T = 10); β = 10 lets it reach 1 - 2e-8.
DEFAULT_BETA: float = 10.0


class SoftmaxAlphaProjection(gym.ActionWrapper):
    """Map ``Box(-1, 1, (T,))`` logits to a feasible allocation: softmax(β x), α-projected.

    Args:
        env: A ``ScreeningEnv`` (possibly wrapped).
        beta: Logit scale β (default 10).
    """

    def __init__(self, env: gym.Env, beta: float = DEFAULT_BETA) -> None:
        super().__init__(env)
        if not beta > 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        self.beta = float(beta)
        t = int(np.prod(env.action_space.shape or (1,)))
        self.action_space = spaces.Box(-1.0, 1.0, shape=(t,), dtype=np.float32)
        self._category = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset and remember the waiting category."""
        obs, info = self.env.reset(**kwargs)
        self._category = info["category"]
        return obs, info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Project the logits for the waiting category, step, remember the next category."""
        obs, reward, terminated, truncated, info = self.env.step(self.action(action))
        self._category = info["category"]
        return obs, float(reward), terminated, truncated, info

    def action(self, action: np.ndarray) -> np.ndarray:
        """softmax(β x) then α-projection onto the waiting category's polytope."""
        x = np.asarray(action, dtype=np.float64)
        if x.shape != self.action_space.shape or not np.isfinite(x).all():
            raise ValueError(f"logits must be finite with shape {self.action_space.shape}")
        z = self.beta * np.clip(x, -1.0, 1.0)
        s = np.exp(z - z.max())
        s /= s.sum()
        polys = cast(Any, self.env.unwrapped).polytopes
        c = self._category
        return alpha_project(s, polys.centers[c], polys.A_ub[c], polys.b_ub[c])


class VectorSoftmaxAlphaProjection(gym.vector.VectorWrapper):
    """:class:`SoftmaxAlphaProjection` for a vector env: ``Box(-1, 1, (N, T))`` logits.

    Row i's logits go through softmax(β x) and the α-projection of its waiting category's
    polytope (the categories are read from the infos, as a stock vector agent would not). A row
    whose day just ended (category -1) is autoreset on this step and its action ignored.

    Args:
        env: A ``ScreeningVectorEnv`` (``gym.make_vec(id, num_envs=N)``).
        beta: Logit scale β (default 10).
    """

    def __init__(self, env: gym.vector.VectorEnv, beta: float = DEFAULT_BETA) -> None:
        super().__init__(env)
        if not beta > 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        self.beta = float(beta)
        n, t = cast(tuple[int, int], env.action_space.shape)
        self.single_action_space = spaces.Box(-1.0, 1.0, shape=(t,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(n, t), dtype=np.float32)
        self._categories = np.zeros(n, dtype=np.int64)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset and remember the waiting categories."""
        obs, info = self.env.reset(**kwargs)
        self._remember(info)
        return obs, info

    def step(self, actions: np.ndarray) -> tuple:
        """Project each row's logits for its waiting category, step, remember the next ones."""
        out = self.env.step(self.actions(actions))
        self._remember(out[4])
        return out

    def actions(self, actions: np.ndarray) -> np.ndarray:
        """softmax(β x) per row, then α-projection onto the row's waiting category's polytope."""
        x = np.asarray(actions, dtype=np.float64)
        if x.shape != self.action_space.shape or not np.isfinite(x).all():
            raise ValueError(f"logits must be finite with shape {self.action_space.shape}")
        z = self.beta * np.clip(x, -1.0, 1.0)
        s = np.exp(z - z.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        polys = cast(Any, self.env.unwrapped).polytopes
        c = self._categories
        return alpha_project(s, polys.centers[c], polys.A_ub[c], polys.b_ub[c])

    def _remember(self, info: dict[str, Any]) -> None:
        cats = info["category"]
        mask = info.get("_category", np.ones(cats.shape[0], dtype=bool))
        self._categories = np.where(mask & (cats >= 0), cats, 0).astype(np.int64)
