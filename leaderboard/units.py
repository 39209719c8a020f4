"""What a submission is handed on one unit, and how a submission of either role is loaded.

A *unit* is one (environment id, instance seed) pair of a suite (:mod:`leaderboard.suites`).
Both roles build their own copy of the unit's environment from the same three values
(``env_id``, ``instance_seed``, the suite's ``env_kwargs``):

* a **defender** gets :func:`make_unit_env`, the unit's :class:`~tsg_envs.ScreeningEnv`, and is
  loaded by :func:`leaderboard.submission.load_submission` (``make_agent(env)``);
* an **attacker** gets :func:`attacker_unit_env`, an :class:`~tsg_envs.attacker_env.AttackerEnv`
  of the unit's duel (:func:`duel_kwargs`) that plays the static LP when stepped, and is loaded
  by :func:`load_attacker` (``make_attacker(env)``, or a baseline attacker by name).

This module sits below the sandbox (:mod:`leaderboard.sealed`), whose child process imports it
to build the submission's environment, and below the evaluators (:mod:`leaderboard.evaluate`,
:mod:`leaderboard.attacker`) that build the evaluator's copy of the same environment: the two
copies are equal by construction.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs  # noqa: F401  (registers the ids)
from leaderboard.submission import (
    MAX_SOURCE_BYTES,
    LoadedSubmission,
    SubmissionError,
    SubmissionSpec,
    checkpoint_path,
    load_file,
    row_name,
    sha256_file,
)
from tsg_envs.attacker_env import AttackerEnv
from tsg_envs.rollout import LPAgent

__all__ = [
    "ATTACKER_BASELINES",
    "make_unit_env",
    "duel_kwargs",
    "attacker_unit_env",
    "describe_attacker",
    "load_attacker",
    "dqn_config",
]

#: Baseline attackers by name.
ATTACKER_BASELINES: dict[str, str] = {
    "random": "strikes at a uniformly random arrival with a uniformly random (flight, method)",
    "dqn": "masked DQN timing attacker trained against the static LP (transfer attacker)",
    "best-response": "exact best response to each defender on each day (knows both; the bound)",
}


def make_unit_env(env_id: str, instance_seed: int, env_kwargs: dict[str, Any]) -> gym.Env:
    """The unit's environment: ``gym.make(env_id, instance_seed=..., **env_kwargs)``."""
    return gym.make(env_id, instance_seed=int(instance_seed), **env_kwargs)


def duel_kwargs(env_id: str, instance_seed: int, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``ScreeningEnv`` kwargs of a registered id's unit (what the duel is built from)."""
    spec = gym.spec(env_id)
    return {**dict(spec.kwargs), **dict(env_kwargs), "instance_seed": int(instance_seed)}


def attacker_unit_env(env_id: str, instance_seed: int, env_kwargs: dict[str, Any]) -> AttackerEnv:
    """The ``env`` handed to ``make_attacker``: the unit's duel against the static LP."""
    return AttackerEnv(LPAgent, **duel_kwargs(env_id, instance_seed, env_kwargs))


def describe_attacker(spec: SubmissionSpec) -> LoadedSubmission:
    """The attacker's row information, without running any of its code.

    Raises:
        SubmissionError: an unknown baseline name, a missing file or checkpoint.
    """
    if spec.is_file:
        path = Path(spec.source)
        if not path.exists():
            raise SubmissionError(f"import failed: no such file {spec.source!r}")
        fingerprint, description, learned = sha256_file(path, MAX_SOURCE_BYTES), "", None
    else:
        if spec.source not in ATTACKER_BASELINES:
            raise SubmissionError(
                f"unknown attacker {spec.source!r}: neither a .py file nor one of "
                f"{', '.join(ATTACKER_BASELINES)}"
            )
        h = hashlib.sha256(f"attacker:{spec.source}:{spec.train_gradient_steps}".encode())
        if spec.checkpoint is not None:
            h.update(spec.checkpoint.encode())
            if "{" not in spec.checkpoint:
                path = Path(spec.checkpoint)
                if not path.exists():
                    raise SubmissionError(f"checkpoint not found: {spec.checkpoint}")
                h.update(sha256_file(path).encode())
        fingerprint = h.hexdigest()
        description = ATTACKER_BASELINES[spec.source]
        learned = spec.source == "dqn"

    def not_here(*_: Any, **__: Any) -> Any:
        raise RuntimeError("an attacker's make_attacker runs in its own process only")

    return LoadedSubmission(spec=spec, name=row_name(spec),
                            kind="file" if spec.is_file else "baseline", description=description,
                            fingerprint=fingerprint, learned=learned, make_agent=not_here)


def load_attacker(spec: SubmissionSpec) -> LoadedSubmission:
    """Load an attacker in its own process; ``make_agent`` then builds the attacker.

    Its ``make_agent(env, *, env_id, instance_seed, env_kwargs, train_gradient_steps)`` calls
    the file's ``make_attacker(env)`` or builds the baseline attacker.

    Raises:
        SubmissionError: the file cannot be imported, or names no ``make_attacker``.
    """
    if spec.is_file:
        return load_file(spec, factory_name="make_attacker")
    loaded = describe_attacker(spec)
    if spec.source == "best-response":
        raise SubmissionError("best-response plays in the evaluator (it needs the defender)")

    def make_attacker(env: AttackerEnv, *, env_id: str, instance_seed: int,
                      env_kwargs: dict[str, Any], train_gradient_steps: int, **_: Any) -> Any:
        from baselines.attackers import RandomAttacker
        from baselines.dqn_attacker import DQNAttacker, train_dqn_attacker

        if spec.source == "random":
            return RandomAttacker(env.game)
        if spec.checkpoint is not None:
            path = checkpoint_path(spec.checkpoint, env_id, instance_seed)
            if not path.is_file():
                raise FileNotFoundError(f"checkpoint not found: {path}")
            return DQNAttacker.load(path, env)
        steps = (spec.train_gradient_steps if spec.train_gradient_steps is not None
                 else train_gradient_steps)
        return train_dqn_attacker(LPAgent, dqn_config(int(steps)),
                                  **duel_kwargs(env_id, instance_seed, env_kwargs))

    loaded.make_agent = make_attacker
    return loaded


def dqn_config(gradient_steps: int, seed: int = 0) -> Any:
    """The DQN attacker's config for a budget in gradient steps (mini-batches).

    Its warm-up (5,000 transitions) plus ``gradient_steps / updates_per_step`` transitions,
    ε decaying over the first half of them (at most 50,000).
    """
    from baselines.dqn_attacker import DQNAttackerConfig

    base = DQNAttackerConfig(seed=seed)
    steps = base.warmup_steps + int(np.ceil(gradient_steps / base.updates_per_step))
    return DQNAttackerConfig(seed=seed, steps=steps,
                             eps_decay_steps=max(1, min(base.eps_decay_steps, steps // 2)))
