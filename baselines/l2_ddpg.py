"""L2-projection DDPG: the OptLayer route the paper argues against (optional extra ``l2``).

α-DDPG with the α-projection replaced by the Euclidean projection onto the polytope, a
differentiable QP solved per sample by cvxpylayers (:class:`~baselines.projection.L2Projection`,
followed by an exact clean-up of the solver's ~1e-4 error so that every action is feasible to
1e-6). Everything else (actor, exploration before the projection, feasible warm-up, the env's
``invalid_action="raise"``) is α-DDPG's. A QP per sample makes each gradient step cost about a
second at batch 256 on a CPU core, so the defaults use small batches and few updates per step;
compare it with the others at equal wall-clock.

Needs ``pip install 'tsg-envs[l2]'`` (cvxpylayers); raises ``ImportError`` naming it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines._torch_common import OffPolicyConfig, TorchAgent, make_config
from baselines.alpha_ddpg import load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig

__all__ = ["L2DDPGConfig", "METHOD", "train", "load"]


@dataclass(kw_only=True)
class L2DDPGConfig(OffPolicyConfig):
    """L2-DDPG hyper-parameters: ``OffPolicyConfig`` with cheaper defaults for the QP layer.

    Attributes:
        batch_size: Minibatch size (each sample is a QP solve, forward and backward).
        updates_per_step: Gradient steps per environment step.
        warmup_steps: Feasible random steps before learning.
    """

    batch_size: int = 32
    updates_per_step: float = 0.05
    warmup_steps: int = 2_000


def train(run: RunConfig) -> TorchAgent:
    """Train L2-projection DDPG on ``run`` (hparams: :class:`L2DDPGConfig` fields)."""
    cfg = make_config(L2DDPGConfig, run.hparams)
    return train_ddpg_family(run, "l2-ddpg", cfg, "l2", "raise")


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy L2-DDPG policy of checkpoint ``path``, acting on ``env``."""
    return load_ddpg_family(path, env, "l2-ddpg", L2DDPGConfig, "l2")


METHOD = Method(
    name="l2-ddpg",
    train=train,
    load=load,
    learned=True,
    description="DDPG with a differentiable L2 projection (cvxpylayers QP; the OptLayer route)",
)
