"""Radial-squashing DDPG: the actor maps its logits radially into the polytope (no projection).

A rival of the α-projection from the action-constrained RL benchmark of Kasaura et al. (RA-L
2023, "radial squashing"). The actor is α-DDPG's MLP → tanh logits u; instead of softmax and
α-projection, :class:`~baselines.projection.RadialSquash` maps β·u to
y0 + tanh(‖d‖) ρ(d̂) d̂ (d the logits centred in the simplex's plane, ρ the distance from the
polytope's centre y0 to its boundary along d̂): a smooth bijection from the plane onto the
polytope's interior, so every action (executed, stored, or a target action) is strictly
feasible. Exploration is Gaussian noise on u before the squashing; warm-up draws feasible
allocations; the env is made with ``invalid_action="raise"``. Everything else is α-DDPG's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines._torch_common import OffPolicyConfig, TorchAgent, make_config
from baselines.alpha_ddpg import load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig

__all__ = ["RadialDDPGConfig", "METHOD", "train", "load"]


@dataclass(kw_only=True)
class RadialDDPGConfig(OffPolicyConfig):
    """Radial-DDPG hyper-parameters: those of ``OffPolicyConfig`` (β scales the logits)."""


def train(run: RunConfig) -> TorchAgent:
    """Train radial-squashing DDPG on ``run`` (hparams: :class:`RadialDDPGConfig` fields)."""
    cfg = make_config(RadialDDPGConfig, run.hparams)
    return train_ddpg_family(run, "radial-ddpg", cfg, "radial", "raise")


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy radial-DDPG policy of checkpoint ``path``, acting on ``env``."""
    return load_ddpg_family(path, env, "radial-ddpg", RadialDDPGConfig, "radial")


METHOD = Method(
    name="radial-ddpg",
    train=train,
    load=load,
    learned=True,
    description="DDPG whose logits are radially squashed into the polytope around its centre "
    "(Kasaura et al. 2023's rival of the alpha-projection)",
)
