"""The Chebyshev-centre policy: method ``centre``.

Every passenger gets its category's polytope centre (SPEC §3: the Chebyshev centre inside the
simplex's affine hull, tie broken toward the uniform allocation), played by
:class:`tsg_envs.rollout.CentreAgent`. It ignores the queues entirely: the point of reference of
the α-projection, and a floor any queue-aware method should beat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines.api import Method, RunConfig
from baselines.nonlearning import (
    check_env_matches,
    config_from_hparams,
    read_checkpoint,
    solve_or_resume,
)
from tsg_envs.rollout import CentreAgent

__all__ = ["CentreConfig", "make_agent", "train", "load", "METHOD"]


@dataclass(kw_only=True)
class CentreConfig:
    """The centre policy has no hyperparameters."""


def make_agent(env: gym.Env, config: CentreConfig | None = None) -> CentreAgent:
    """The centre policy of ``env``'s polytopes."""
    return CentreAgent(env)


def train(run: RunConfig) -> CentreAgent:
    """Build the centre policy (or resume it from ``run.out``)."""
    config = config_from_hparams(CentreConfig, run.hparams)
    return solve_or_resume(run, config, load, lambda env: (make_agent(env, config), None))


def load(path: Path, env: gym.Env) -> CentreAgent:
    """Rebuild the centre policy from a checkpoint (the centres are deterministic)."""
    record, _ = read_checkpoint(path, "centre")
    check_env_matches(record, env, path)
    return make_agent(env)


METHOD = Method(
    name="centre",
    train=train,
    load=load,
    learned=False,
    description="Chebyshev-centre policy: each category's polytope centre, queue-blind",
    config=CentreConfig,
)
