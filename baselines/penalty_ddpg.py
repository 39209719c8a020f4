"""Penalty DDPG: an unconstrained softmax actor, the environment penalising violations.

The actor is α-DDPG's without the projection (MLP → tanh → softmax(β ·)); the env is made with
``invalid_action="penalize"``: it executes the proposed allocation even when it breaks the risk
bound and subtracts ``violation_penalty × e`` from the reward, e the risk rows' excess of the
executed (renormalised) allocation (the actor's softmax output is on the simplex, so e is the
proposal's risk excess). Its risk leak shows in the
reported violations and the worst-case risk. Warm-up draws Dirichlet(1) allocations (points of
the simplex, feasible or not), exploration is noise on the logits as in α-DDPG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines._torch_common import OffPolicyConfig, TorchAgent, make_config
from baselines.alpha_ddpg import load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig
from baselines.proj_ddpg import dirichlet_warmup

__all__ = ["PenaltyDDPGConfig", "METHOD", "train", "load"]


@dataclass(kw_only=True)
class PenaltyDDPGConfig(OffPolicyConfig):
    """Penalty-DDPG hyper-parameters: those of ``OffPolicyConfig``.

    The penalty per unit violation is the env's ``violation_penalty`` (``RunConfig.env_kwargs``).
    """


def train(run: RunConfig) -> TorchAgent:
    """Train penalty DDPG on ``run`` (hparams: :class:`PenaltyDDPGConfig` fields)."""
    cfg = make_config(PenaltyDDPGConfig, run.hparams)
    n_teams = run.make_env().action_space.shape[0]
    return train_ddpg_family(
        run, "penalty-ddpg", cfg, "none", "penalize", warmup=dirichlet_warmup(n_teams)
    )


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy penalty-DDPG policy of checkpoint ``path`` (unprojected softmax actions)."""
    return load_ddpg_family(path, env, "penalty-ddpg", PenaltyDDPGConfig, "none")


METHOD = Method(
    name="penalty-ddpg",
    train=train,
    load=load,
    learned=True,
    description="DDPG with an unconstrained softmax actor; the env penalises violations",
)
