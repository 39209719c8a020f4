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
from tianshou.utils.lagged_network import EvalModeModuleWrapper
from tianshou.utils.net.common import ModuleWithVectorOutput
from torch import nn

__all__ = ["ObsScale", "mlp", "forward_mlp", "numpy_mlp", "QuickTrainMode", "ScaledMLP", "Critic",
           "TorchAgent"]


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


def numpy_mlp(net: nn.Sequential, scale: ObsScale | None = None
              ) -> Callable[[np.ndarray], np.ndarray]:
    """``obs (B, O) -> (B, out)`` float32: :func:`forward_mlp` (after ``scale``) in numpy.

    The arrays are views of the parameters (CPU), so the function follows every in-place
    update of them (optimiser steps, ``load_state_dict``). The same arithmetic in float32 but
    numpy's matrix products: equal to the torch forward to float32 rounding, not bit for bit.
    Calling a small network on one observation costs about a fifth of the torch call.
    """
    layers = [(layer.weight.detach().numpy().T, layer.bias.detach().numpy())
              if type(layer) is nn.Linear else None for layer in net]
    scale_O = None if scale is None else scale.scale_O.detach().numpy()

    def forward(obs_BO: np.ndarray) -> np.ndarray:
        x = np.asarray(obs_BO, dtype=np.float32)
        if scale_O is not None:
            x = x * scale_O
        for layer in layers:
            if layer is None:
                np.maximum(x, 0.0, out=x)
            else:
                x = x @ layer[0]
                x += layer[1]
        return x

    return forward


class QuickTrainMode:
    """Algorithm mixin: ``train(mode)`` that sets the flags without recursing through modules.

    Tianshou switches the whole algorithm to training mode and back around every update
    (``torch_train_mode``); torch's recursive ``Module.train``, through ``Module.__setattr__``
    for each of the 38 modules of α-DDPG, costs about 0.35 ms a switch, 6% of an update. This
    ``train`` walks a list of the modules made on its first call, sets each one's ``training``
    flag directly (Tianshou's lagged networks' modules stay in evaluation mode, as their
    wrapper's ``train`` keeps them) and calls ``train`` of any other module whose class overrides
    it, leaving its children to it: the same flags as ``Module.train``. Modules added after the
    first call are not seen: the algorithms here build every module in their constructor.
    """

    def train(self, mode: bool = True) -> Any:
        """Set training mode (``mode``) on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        plan = self.__dict__.get("_train_plan")
        if plan is None:
            plan: list[tuple[nn.Module, bool | None]] = [(self, False)]  # type: ignore[list-item]

            def walk(module: nn.Module, pinned: bool) -> None:
                for child in module.children():
                    if type(child) is EvalModeModuleWrapper:  # it, then its module in eval
                        plan.append((child, pinned))
                        plan.append((child.module, True))
                        walk(child.module, True)
                    elif type(child).train is nn.Module.train:
                        plan.append((child, pinned))
                        walk(child, pinned)
                    else:
                        plan.append((child, None))  # its own train() takes care of its children

            walk(self, False)  # type: ignore[arg-type]
            self.__dict__["_train_plan"] = plan
        for module, pinned in plan:
            if pinned is None:
                module.train(mode)
            else:
                module.__dict__["training"] = mode and not pinned
        return self


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
