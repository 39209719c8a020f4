"""Projection DDPG: an unconstrained softmax actor whose proposals the environment projects.

The "projection" baseline of the action-constrained RL benchmark of Kasaura et al. (RA-L 2023):
the actor is α-DDPG's without a projection layer (MLP → tanh → softmax(β ·), a point of the
simplex that may break the risk bound); the environment is made with
``invalid_action="project"``, which α-projects an infeasible proposal before executing it. The
critic is trained on the *proposed* action (what the replay buffer stores), so the actor never
sees the projection. Its proposals violate the polytope: the leaderboard counts them and puts it
on the open track. Warm-up draws Dirichlet(1) points of the simplex; exploration is noise on
the logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines._torch_common import OffPolicyConfig, TorchAgent, make_config
from baselines.alpha_ddpg import load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig

__all__ = ["ProjDDPGConfig", "METHOD", "train", "load", "dirichlet_warmup"]


@dataclass(kw_only=True)
class ProjDDPGConfig(OffPolicyConfig):
    """Projection-DDPG hyper-parameters: those of ``OffPolicyConfig``."""


def dirichlet_warmup(n_teams: int) -> Any:
    """Warm-up sampler: Dirichlet(1) points of the simplex (feasible or not)."""

    def warmup(obs: np.ndarray, info: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        return rng.dirichlet(np.ones(n_teams))

    return warmup


def train(run: RunConfig) -> TorchAgent:
    """Train projection DDPG on ``run`` (hparams: :class:`ProjDDPGConfig` fields)."""
    cfg = make_config(ProjDDPGConfig, run.hparams)
    n_teams = run.make_env().action_space.shape[0]
    return train_ddpg_family(run, "proj-ddpg", cfg, "none", "project",
                             warmup=dirichlet_warmup(n_teams))


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy projection-DDPG policy of ``path`` (unprojected softmax proposals)."""
    return load_ddpg_family(path, env, "proj-ddpg", ProjDDPGConfig, "none")


METHOD = Method(
    name="proj-ddpg",
    train=train,
    load=load,
    learned=True,
    description="DDPG with an unconstrained softmax actor; the environment alpha-projects its "
    "proposals, the critic learns on the proposals (Kasaura et al. 2023's projection baseline)",
)
