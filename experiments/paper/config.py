"""What the paper's experiments run: the protocol, the points of each experiment, the agents.

:class:`PaperConfig` is the whole configuration (the paper's protocol by default,
:meth:`PaperConfig.quick_config` for CI); :func:`experiment_settings` lists every point of
experiments 1, 2 and 4 as a :class:`Setting` (``gym.make`` kwargs on :data:`BASE_ID`), and
:func:`experiment_instances` the instances of each experiment's points. :data:`PAPER` holds the
paper's stated numbers, :data:`AGENT_LABELS` how the figures name each agent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PAPER",
    "AGENT_LABELS",
    "BASE_ID",
    "PaperConfig",
    "Setting",
    "agent_names",
    "agent_label",
    "experiment_instances",
    "experiment_settings",
]


#: The paper's stated numbers.
PAPER: dict[str, Any] = {
    "ratio_average": 1.25,
    "ratio_best": 2.0,
    "trend_flights": "gain falls as flights grow",
    "trend_sigma": "gain falls as the arrival spread grows",
    "steps_to_converge": 10_000,
}


#: How each agent is labelled in the figures.
AGENT_LABELS: dict[str, str] = {
    "lp": "static window LP",
    "slack-lp": "static slack LP",
    "myopic": "myopic (online, non-learning stand-in for α-DDPG)",
    "slack-guided": "slack-guided (online, non-learning stand-in for α-DDPG)",
    "alpha-ddpg": "α-DDPG (trained checkpoints)",
}


#: The registered id every point is made from (the paper's single time window, 10 flights).
BASE_ID = "tsg/Screening-Window-10F-v1"


@dataclass(frozen=True)
class PaperConfig:
    """What the paper command runs.

    Attributes:
        instances: Instance seeds per point of experiment 1 (paper: 30).
        other_instances: How many of ``instances`` (the first ones) experiments 2 and 4 use
            per point (α-DDPG is retrained per point: 10 by default); None: all of them.
        days: Arrival samples per instance (paper: 100), seeds ``LEADERBOARD_SEED_BASE + d``
            (:mod:`tsg_envs.seeds`: the leaderboard's days).
        flights: Experiment 1's flight counts (window horizon).
        risk_scales: Experiment 2's ψ / ψ^LP values (> 1: the polytopes need an interior).
        risk_flights: Experiment 2's flights.
        sigmas: Experiment 4's arrival standard deviations σ, minutes (x axis: 2σ in hours).
        sigma_flights: Experiment 4's flights.
        agents: Compared agents besides the LP (names of ``baselines`` methods).
        adaptive_checkpoint: α-DDPG checkpoint template (``{env}``, ``{instance}``); None:
            the online baselines stand in (unless ``adaptive_gradient_steps`` is set).
        adaptive_gradient_steps: Train α-DDPG per (point, instance) for this many gradient
            steps (mini-batches; the paper's budget is 10,000), seed 0, under ``train_dir``
            (resumable); None: no training.
        train_dir: Where the per-unit α-DDPG runs live (checkpoints; each unit's result copies
            its learning curve, which feeds experiment 3).
        curve_dirs: Where experiment 3 looks for training logs while no unit of experiment 1
            has trained α-DDPG.
        figures: The experiments whose missing units this run computes (``"fig1"``,
            ``"fig2"``, ``"fig4"``); the others only reuse their cached units, so a run can be
            done one experiment at a time. Every figure is drawn from what is cached.
        quick: Label of the protocol (``--quick``) in the outputs.
    """

    instances: tuple[int, ...] = tuple(range(30))
    other_instances: int | None = 10
    days: int = 100
    flights: tuple[int, ...] = (5, 10, 20, 50, 100, 300)
    risk_scales: tuple[float, ...] = (1.01, 1.05, 1.1, 1.25, 1.5, 2.0)
    risk_flights: int = 10
    sigmas: tuple[float, ...] = (7.5, 15.0, 30.0, 45.0, 60.0, 90.0, 150.0)
    sigma_flights: int = 10
    agents: tuple[str, ...] = ("slack-lp", "myopic", "slack-guided")
    adaptive_checkpoint: str | None = None
    adaptive_gradient_steps: int | None = None
    train_dir: str = "runs/paper"
    curve_dirs: tuple[str, ...] = ("results/curves", "results/bench")
    figures: tuple[str, ...] = ("fig1", "fig2", "fig4")
    quick: bool = False

    @classmethod
    def quick_config(cls) -> PaperConfig:
        """The CI protocol: 2 instances x 2 days, 2-3 points per experiment."""
        return cls(
            instances=(0, 1),
            other_instances=None,
            days=2,
            flights=(5, 10),
            risk_scales=(1.01, 1.5, 2.0),
            sigmas=(15.0, 45.0, 150.0),
            quick=True,
        )

    def replace(self, **changes: Any) -> PaperConfig:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)


@dataclass
class Setting:
    """One x value of an experiment: the env kwargs on :data:`BASE_ID`."""

    x: float
    slug: str
    kwargs: dict[str, Any]
    risk_scale: float | None = None


def agent_names(cfg: PaperConfig) -> list[str]:
    """The compared agents besides the LP: ``cfg.agents``, and α-DDPG when it is run."""
    names = list(cfg.agents)
    adaptive = cfg.adaptive_checkpoint is not None or cfg.adaptive_gradient_steps is not None
    if adaptive and "alpha-ddpg" not in names:
        names.append("alpha-ddpg")
    return names


def agent_label(cfg: PaperConfig, agent: str) -> str:
    """How the figures and the summary name ``agent`` in this configuration."""
    if agent == "alpha-ddpg" and cfg.adaptive_gradient_steps is not None:
        return f"α-DDPG (trained per instance, {cfg.adaptive_gradient_steps:,} mini-batches)"
    label = AGENT_LABELS.get(agent, agent)
    if "alpha-ddpg" in agent_names(cfg):  # α-DDPG itself is there: the others stand in for none
        label = label.replace(", non-learning stand-in for α-DDPG", ", non-learning")
    return label


def experiment_instances(cfg: PaperConfig, fig: str) -> tuple[int, ...]:
    """The instances of one experiment's points."""
    if fig == "fig1" or cfg.other_instances is None:
        return cfg.instances
    return cfg.instances[: cfg.other_instances]


def experiment_settings(cfg: PaperConfig) -> dict[str, list[Setting]]:
    """Every point of experiments 1, 2 and 4 (experiment 3 reads training logs)."""
    n, m = cfg.risk_flights, cfg.sigma_flights
    return {
        "fig1": [Setting(k, f"window-{k}F", {"n_flights": k}) for k in cfg.flights],
        "fig2": [Setting(s, f"window-{n}F-psi{s:g}", {"n_flights": n}, risk_scale=s)
                 for s in cfg.risk_scales],
        "fig4": [Setting(2 * sig / 60.0, f"window-{m}F-sigma{sig:g}",
                          {"n_flights": m, "arrival_std": sig}) for sig in cfg.sigmas],
    }
