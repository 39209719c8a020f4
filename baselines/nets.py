"""The networks the torch baselines share, and the agent that wraps a trained policy.

Observation scaling is fixed and documented (:class:`ObsScale`): the queue features (backlogs
and team waits, minutes) are divided by ``wait_scale`` (10 minutes by default); the category
one-hot, the history fractions and the clock are already of order 1.

Shapes: B batch, O observation size, T teams, H hidden width.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tianshou.utils.net.common import ModuleWithVectorOutput
from torch import nn

__all__ = ["ObsScale", "mlp", "forward_mlp", "ScaledMLP", "Critic", "TorchAgent"]


class ObsScale(nn.Module):
    """Fixed observation scaling: queue features (backlog, waits; minutes) / ``wait_scale``.

    Args:
        obs_layout: ``env.unwrapped.obs_layout``.
        obs_dim: Observation size O.
        wait_scale: Minutes that map to 1.0.
    """

    def __init__(self, obs_layout: dict[str, slice], obs_dim: int, wait_scale: float) -> None:
        super().__init__()
        scale = torch.ones(obs_dim)
        for name in ("backlog", "waits"):
            scale[obs_layout[name]] = 1.0 / wait_scale
        self.register_buffer("scale_O", scale)

    def forward(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """(B, O) float32 scaled observations."""
        obs_BO = torch.as_tensor(obs, dtype=torch.float32, device=self.scale_O.device)
        return obs_BO * self.scale_O


def mlp(input_dim: int, hidden_sizes: Sequence[int], output_dim: int) -> nn.Sequential:
    """Linear-ReLU layers of ``hidden_sizes``, then a linear output layer (none if 0)."""
    layers: list[nn.Module] = []
    d = input_dim
    for h in hidden_sizes:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    if output_dim > 0:
        layers.append(nn.Linear(d, output_dim))
    return nn.Sequential(*layers)


def forward_mlp(net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``net(x)`` for a :func:`mlp`, as plain ``F.linear`` / ``F.relu`` calls.

    The same parameters and arithmetic as calling the ``nn.Sequential`` (bit for bit), without a
    module call per layer: acting on one passenger at a time is dominated by such overheads.
    """
    for layer in net:
        x = F.linear(x, layer.weight, layer.bias) if type(layer) is nn.Linear else F.relu(x)
    return x


class ScaledMLP(ModuleWithVectorOutput):
    """Tianshou preprocess net: :class:`ObsScale` then an MLP; ``forward(obs, state)``."""

    def __init__(self, scale: ObsScale, obs_dim: int, hidden_sizes: Sequence[int]) -> None:
        super().__init__(int(hidden_sizes[-1]))
        self.scale = scale
        self.net = mlp(obs_dim, hidden_sizes, 0)

    def forward(
        self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """(features (B, H), state)."""
        return forward_mlp(self.net, self.scale(obs)), state


class Critic(nn.Module):
    """Q(s, a): :class:`ObsScale`, concatenate the action, MLP → 1 (Tianshou critic signature)."""

    def __init__(
        self,
        obs_layout: dict[str, slice],
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int],
        wait_scale: float,
    ) -> None:
        super().__init__()
        self.scale = ObsScale(obs_layout, obs_dim, wait_scale)
        self.net = mlp(obs_dim + act_dim, hidden_sizes, 1)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor | None = None,
        info: Any = None,
    ) -> torch.Tensor:
        """(B, 1) Q-values."""
        obs_BO = self.scale(obs)
        act_BA = torch.as_tensor(act, dtype=torch.float32, device=obs_BO.device)
        return forward_mlp(self.net, torch.cat([obs_BO, act_BA], dim=-1))


class TorchAgent:
    """A trained policy as a :class:`tsg_envs.rollout.Agent`: deterministic, side-effect free.

    Args:
        act_fn: ``obs (B, O) -> actions (B, T)`` numpy; called under ``torch.no_grad``.
        name: Method name (for reprs and logs).
    """

    def __init__(self, act_fn: Callable[[np.ndarray], np.ndarray], name: str) -> None:
        self._act_fn = act_fn
        self.name = name

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The policy's action for one observation (``info`` is not needed)."""
        return self.act_batch(np.asarray(obs)[None], [info])[0]

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """Actions (B, T) for observations (B, O), as :func:`tsg_envs.risk` probes them."""
        with torch.no_grad():
            out = self._act_fn(np.asarray(obs, dtype=np.float32))
        return np.asarray(out, dtype=np.float64)

    def __repr__(self) -> str:
        return f"TorchAgent({self.name})"
