"""Projection DDPG with a penalty on the projection distance (Kasaura et al. 2023's variant).

:mod:`baselines.proj_ddpg` (an unconstrained softmax actor, proposals α-projected by the
environment, the critic trained on the proposals) whose actor loss adds
``projection_penalty · ‖a - P(a)‖²``, P the α-projection onto the waiting category's polytope:
the actor is pushed toward proposals the environment need not move. Its proposals can still
violate the polytope (open track).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines._torch_common import OffPolicyConfig, TorchAgent, make_config
from baselines.alpha_ddpg import load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig
from baselines.proj_ddpg import dirichlet_warmup

__all__ = ["ProjPenaltyDDPGConfig", "METHOD", "train", "load"]


@dataclass(kw_only=True)
class ProjPenaltyDDPGConfig(OffPolicyConfig):
    """Projection-penalty DDPG hyper-parameters.

    Attributes:
        projection_penalty: Weight of ‖a - P(a)‖² in the actor loss (the critic's Q values are
            rewards × ``reward_scale`` summed with discount γ, of order 10-100 here).
    """

    projection_penalty: float = 10.0


def train(run: RunConfig) -> TorchAgent:
    """Train projection-penalty DDPG on ``run`` (hparams: :class:`ProjPenaltyDDPGConfig`)."""
    cfg = make_config(ProjPenaltyDDPGConfig, run.hparams)
    n_teams = run.make_env().action_space.shape[0]
    return train_ddpg_family(run, "proj-penalty-ddpg", cfg, "none", "project",
                             warmup=dirichlet_warmup(n_teams))


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy policy of checkpoint ``path`` (unprojected softmax proposals)."""
    return load_ddpg_family(path, env, "proj-penalty-ddpg", ProjPenaltyDDPGConfig, "none")


METHOD = Method(
    name="proj-penalty-ddpg",
    train=train,
    load=load,
    learned=True,
    description="projection DDPG whose actor loss adds a penalty on the distance to the "
    "alpha-projection (Kasaura et al. 2023's variant)",
)
