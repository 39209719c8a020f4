"""The static window LP policy (SPEC §4): method ``lp``.

Provenance: the LP of Brown et al. (2016) / McCarthy et al. (2017) that Shah et al. (AAAI 2020)
compare against; it is solved by :func:`tsg_envs.solve_window_lp` and played by
:class:`tsg_envs.rollout.LPAgent`: every passenger of category c arriving in window w gets
π_{c,w}. Nothing is learned; ``train`` solves the LP of the run's instance and saves a small
JSON checkpoint (see :mod:`baselines.nonlearning`).
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
from tsg_envs.rollout import LPAgent

__all__ = ["StaticLPConfig", "make_agent", "train", "load", "METHOD"]


@dataclass(kw_only=True)
class StaticLPConfig:
    """Hyperparameters of the static window LP.

    Attributes:
        window_minutes: LP window length in minutes; ``"env"`` (default) uses the environment's
            own ``lp_window_minutes`` (the LP that set ψ); None is one window over the day.
            [ours; the paper uses one window]
    """

    window_minutes: float | str | None = "env"


def make_agent(env: gym.Env, config: StaticLPConfig | None = None) -> LPAgent:
    """The LP policy of ``env``'s instance."""
    config = config or StaticLPConfig()
    return LPAgent(env, window_minutes=config.window_minutes)


def train(run: RunConfig) -> LPAgent:
    """Solve the LP of the run's instance (or resume it from ``run.out``)."""
    config = config_from_hparams(StaticLPConfig, run.hparams)
    return solve_or_resume(run, config, load, lambda env: (make_agent(env, config), None))


def load(path: Path, env: gym.Env) -> LPAgent:
    """Rebuild the identical LP policy from a checkpoint (the LP is deterministic)."""
    record, _ = read_checkpoint(path, "lp")
    check_env_matches(record, env, path)
    return make_agent(env, StaticLPConfig(**record["config"]))


METHOD = Method(
    name="lp",
    train=train,
    load=load,
    learned=False,
    description="static window LP (Brown et al. 2016): one allocation per category and window",
    config=StaticLPConfig,
)
