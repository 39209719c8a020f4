"""The myopic per-passenger LP (SPEC §4): method ``myopic``.

The slack-guided LP with μ = 0: each passenger gets the allocation inside its category's
polytope minimising its own expected wait π·w given the teams' current waits, with the same
tie-break (ε s_t, least capacity use; see :mod:`baselines.slack_guided`). It is greedy: it
loads whichever resources are idle now, ignoring the passengers that will need them soon. The
LP's optimum is a vertex of the polytope, so each passenger gets the cheapest of its category's
vertices, enumerated once at construction (ties: the first; see
:class:`baselines.per_passenger_lp.PerPassengerLP`), batched over days in ``act_batch``.
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
from baselines.slack_guided import SlackGuidedAgent, SlackGuidedConfig

__all__ = ["MyopicConfig", "make_agent", "train", "load", "METHOD"]


@dataclass(kw_only=True)
class MyopicConfig:
    """Hyperparameters of the myopic LP.

    Attributes:
        tie_break: ε, minutes per unit of normalised capacity use added to every team's cost,
            so that tied waits give a unique optimum. [ours]
        margin: Every risk row is tightened by this much (row units). [ours]
    """

    tie_break: float = 1e-5
    margin: float = 1e-9


def make_agent(env: gym.Env, config: MyopicConfig | None = None) -> SlackGuidedAgent:
    """The myopic agent of ``env`` (a slack-guided agent with μ = 0)."""
    config = config or MyopicConfig()
    return SlackGuidedAgent(
        env,
        SlackGuidedConfig(mu=0.0, tie_break=config.tie_break, margin=config.margin),
    )


def train(run: RunConfig) -> SlackGuidedAgent:
    """Build the myopic agent (or resume it from ``run.out``)."""
    config = config_from_hparams(MyopicConfig, run.hparams)
    return solve_or_resume(run, config, load, lambda env: (make_agent(env, config), None))


def load(path: Path, env: gym.Env) -> SlackGuidedAgent:
    """Rebuild the myopic agent from a checkpoint."""
    record, _ = read_checkpoint(path, "myopic")
    check_env_matches(record, env, path)
    return make_agent(env, MyopicConfig(**record["config"]))


METHOD = Method(
    name="myopic",
    train=train,
    load=load,
    learned=False,
    description="myopic per-passenger LP: min own expected wait inside the polytope (mu = 0)",
    config=MyopicConfig,
)
