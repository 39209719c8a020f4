"""The interface every baseline method implements, and the lazy registry of method names.

A method is a :class:`Method` found in its module as ``METHOD`` (or, for a family of
methods declared as data, as ``METHODS[name]``: the DDPG family in :mod:`baselines.ddpg`);
``train(run)`` trains (or solves) on ``run.env_id`` and returns an
:class:`tsg_envs.rollout.Agent`, writing checkpoints under ``run.out`` and resuming from the last
one there; ``load(path, env)`` rebuilds the identical agent from a checkpoint; ``make_config``
builds its typed config from ``--set`` overrides. The registry maps CLI names to modules and
imports them lazily, so that the LP baselines never import torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from tsg_envs.rollout import Agent, LPAgent

__all__ = [
    "PAPER_GRADIENT_STEPS", "RunConfig", "Method", "METHOD_MODULES", "get_method", "method_names",
    "build_agent",
]

#: The paper's training budget: 10,000 gradient steps (mini-batches; its figure 3 caption).
PAPER_GRADIENT_STEPS = 10_000


@dataclass(kw_only=True)
class RunConfig:
    """One training (or solving) run, as the CLI receives it.

    Attributes:
        algo: Method name (a key of :data:`METHOD_MODULES`).
        env_id: Gymnasium id to train on.
        gradient_steps: Training budget in gradient steps (mini-batches), the paper's unit: its
            "10,000 training steps" are 10,000 mini-batches (:data:`PAPER_GRADIENT_STEPS`). The
            environment steps follow from the method's warm-up and updates per environment
            step. Ignored by non-learning methods.
        seed: Seeds the networks, exploration and the training days.
        out: Directory for checkpoints, curves and the final evaluation.
        instance_seed: Which game instance of ``env_id``.
        env_kwargs: Extra ``gym.make`` kwargs (e.g. ``risk_slack``).
        hparams: Method-specific overrides of its config dataclass's defaults.
        progress: Show a progress bar.
    """

    algo: str
    env_id: str = "tsg/Screening-v1"
    gradient_steps: int = PAPER_GRADIENT_STEPS
    seed: int = 0
    out: Path = Path("runs/default")
    instance_seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    hparams: dict[str, Any] = field(default_factory=dict)
    progress: bool = True

    def make_env(self, **overrides: Any) -> gym.Env:
        """``gym.make`` the run's environment (``overrides`` win over ``env_kwargs``)."""
        kwargs = {"instance_seed": self.instance_seed, **self.env_kwargs, **overrides}
        return gym.make(self.env_id, **kwargs)

    def make_vector_env(self, num_envs: int, **overrides: Any) -> gym.vector.VectorEnv:
        """The run's environment as the native vector environment of ``num_envs`` days."""
        kwargs = {"instance_seed": self.instance_seed, **self.env_kwargs, **overrides}
        return gym.make_vec(self.env_id, num_envs=int(num_envs),
                            vectorization_mode="vector_entry_point", **kwargs)


@dataclass(frozen=True)
class Method:
    """A baseline method.

    Attributes:
        name: CLI name.
        train: ``train(run) -> Agent``; checkpoints under ``run.out``, resumes from the last.
        load: ``load(checkpoint_path, env) -> Agent``; the identical policy.
        learned: Whether it learns (has a training budget) or is solved/fixed.
        description: One line for ``--help`` and the README.
        config: Its config dataclass (fields documented by their docstrings), if any.
        make_config: ``make_config(overrides) -> config``: the typed config from ``--set``
            overrides (text parsed by field type, :mod:`baselines.config`); raises
            ``ValueError`` for an unknown name or a value that does not fit.
        config_fields: The fields ``make_config`` accepts (None: all of ``config``'s).
    """

    name: str
    train: Callable[[RunConfig], Agent]
    load: Callable[[Path, gym.Env], Agent]
    learned: bool
    description: str
    config: type | None = None
    make_config: Callable[[Mapping[str, Any]], Any] | None = None
    config_fields: frozenset[str] | None = None

    def build_config(self, overrides: Mapping[str, Any] | None = None) -> Any:
        """Its config from ``overrides`` (None when it has no config).

        Raises:
            ValueError: for an unknown or inapplicable name, or a value that does not fit.
        """
        if self.make_config is not None:
            return self.make_config(dict(overrides or {}))
        if self.config is None:
            if overrides:
                raise ValueError(f"{self.name} takes no hyperparameters, got {sorted(overrides)}")
            return None
        from baselines.config import config_from

        return config_from(self.config, overrides, allowed=self.config_fields, what=self.name)


#: CLI name -> module defining ``METHOD``. Imported lazily by :func:`get_method`.
METHOD_MODULES: dict[str, str] = {
    "alpha-ddpg": "baselines.ddpg",
    "alpha-td3": "baselines.ddpg",
    "penalty-ddpg": "baselines.ddpg",
    "l2-ddpg": "baselines.ddpg",
    "radial-ddpg": "baselines.ddpg",
    "proj-ddpg": "baselines.ddpg",
    "proj-penalty-ddpg": "baselines.ddpg",
    "lp": "baselines.static_lp",
    "slack-lp": "baselines.slack_lp",
    "slack-guided": "baselines.slack_guided",
    "es-guided": "baselines.es_guided",
    "myopic": "baselines.myopic",
    "centre": "baselines.centre",
    "sac": "baselines.sac",
    "ppo": "baselines.ppo",
    "bc": "baselines.bc",
}


def method_names() -> list[str]:
    """Every CLI method name, in registry order."""
    return list(METHOD_MODULES)


def get_method(name: str) -> Method:
    """Import and return the method called ``name``.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if name not in METHOD_MODULES:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHOD_MODULES)}")
    module = importlib.import_module(METHOD_MODULES[name])
    family = getattr(module, "METHODS", None)
    return family[name] if family is not None else module.METHOD


def build_agent(name: str, env: gym.Env, checkpoint: str | None = None) -> Agent:
    """An agent of ``env`` by method name, without training.

    ``"lp"`` is :class:`tsg_envs.rollout.LPAgent`; a non-learning method is built by its
    module's ``make_agent(env)``; a learned method (``"alpha-ddpg"``, ...) is loaded from
    ``checkpoint``.

    Raises:
        RuntimeError: when the method or its checkpoint is unavailable (the reason).
    """
    if name == "lp":
        return LPAgent(env)
    try:
        if checkpoint is not None:
            path = Path(checkpoint)
            if not path.exists():
                raise FileNotFoundError(f"no checkpoint at {path}")
            return get_method(name).load(path, env)
        module = importlib.import_module(METHOD_MODULES[name])
    except Exception as err:  # noqa: BLE001 - the caller reports it
        raise RuntimeError(f"{name} unavailable: {type(err).__name__}: {err}") from err
    make = getattr(module, "make_agent", None)
    if make is None:
        raise RuntimeError(f"{name} needs a trained checkpoint")
    return make(env)
