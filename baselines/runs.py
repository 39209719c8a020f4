"""What every training loop shares: run identity and resume, the learning curve, validation.

* :func:`run_identity` / :func:`resume`: what a run trains on, and the newest checkpoint of the
  same run to continue from (another run's checkpoint is refused).
* :class:`CurveLog`: the learning curve, ``run.out/curve.csv`` (one row per training day and per
  validation).
* :func:`validate`: the greedy policy's mean wait over the fixed validation days
  (``tsg_envs.seeds.VALIDATION_SEED_BASE + i``, disjoint from training and test days).
* :func:`progress_bar`: a bar over the run's gradient steps.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.api import RunConfig
from baselines.checkpoint import Checkpoint, latest_checkpoint, read_checkpoint
from tsg_envs import harness, provenance
from tsg_envs.seeds import VALIDATION_SEED_BASE, training_day_seed

__all__ = ["run_identity", "resume", "CurveLog", "validate", "progress_bar", "day_seed",
           "git_commit"]


def day_seed(seed: int, day: int) -> int:
    """Reset seed of training day ``day`` of a run seeded ``seed`` (``tsg_envs.seeds``)."""
    return training_day_seed(seed, day)


def git_commit() -> str:
    """Short hash of HEAD (``+dirty`` if baselines/ or tsg_envs/ differ), or ``unknown``."""
    return provenance.git_commit(7, ("baselines", "tsg_envs")) or "unknown"


def run_identity(run: RunConfig) -> dict[str, Any]:
    """What a run trains on (environment, instance, env kwargs, seed), as checkpoints record it.

    A resume checks it: continuing another run's checkpoint would train a mix of two runs.
    """
    from baselines.nonlearning import jsonable

    return {"env_id": run.env_id, "instance_seed": int(run.instance_seed),
            "env_kwargs": jsonable(run.env_kwargs), "seed": int(run.seed)}


def resume(out: Path, method: str, run: RunConfig) -> Checkpoint | None:
    """The newest checkpoint under ``out`` to resume ``run`` from, or None when there is none.

    Raises:
        ValueError: when it holds another method, or another run's environment, instance, env
            kwargs or seed.
    """
    path = latest_checkpoint(out)
    if path is None:
        return None
    ckpt = read_checkpoint(path)
    if ckpt.state["method"] != method:
        raise ValueError(f"{path} holds a {ckpt.state['method']} run, not {method}")
    saved, ours = ckpt.state.get("run"), run_identity(run)
    if saved is not None and saved != ours:
        differ = sorted(k for k in ours if saved.get(k) != ours[k])
        raise ValueError(
            f"{path} belongs to another run (its {', '.join(differ)} differ: "
            f"{ {k: saved.get(k) for k in differ} } there, { {k: ours[k] for k in differ} } "
            "here); train into another out directory or delete that one")
    return ckpt


class CurveLog:
    """Append-only CSV of the learning curve under ``run.out/curve.csv``.

    Columns: method, env_id, instance_seed, seed, commit, gradient_steps (mini-batches so far,
    the budget's unit), step (environment steps so far), wall_s, eval_mean_wait, eval_days,
    train_day_mean_wait, max_violation, actor_loss (mean over the gradient steps since the last
    row, where the method reports one).
    """

    FIELDS = ("method", "env_id", "instance_seed", "seed", "commit", "gradient_steps", "step",
              "wall_s", "eval_mean_wait", "eval_days", "train_day_mean_wait", "max_violation",
              "actor_loss")

    def __init__(self, path: Path, method: str, run: RunConfig) -> None:
        self.path = path
        self.base = {"method": method, "env_id": run.env_id,
                     "instance_seed": run.instance_seed, "seed": run.seed,
                     "commit": git_commit()}
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(self.FIELDS)

    def write(self, **row: Any) -> None:
        """Append one row (missing fields empty)."""
        full = {**self.base, **row}
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([full.get(k, "") for k in self.FIELDS])


def validate(env: gym.Env, agent: Any, n_days: int) -> tuple[float, float]:
    """Mean over ``n_days`` validation days of (mean wait, largest proposed violation).

    The days run through the evaluation harness (batched, ``act_batch`` where the agent has it)
    on the unit ``env`` was made for (its id and kwargs).
    """
    spec = env.spec
    if spec is None:
        raise ValueError("validate needs an env made by gym.make (it reads env.spec)")
    kwargs = dict(spec.kwargs)
    unit = harness.Unit.of(spec.id, int(kwargs.pop("instance_seed", 0)), **kwargs)
    days = [VALIDATION_SEED_BASE + i for i in range(n_days)]
    recs = harness.evaluate({"agent": lambda e: agent}, [unit], days)
    return float(np.mean([r.mean_wait for r in recs])), max(r.max_violation for r in recs)


def progress_bar(run: RunConfig, initial: int) -> Any:
    """A bar over the run's gradient steps (mini-batches), or None without progress."""
    if not run.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=run.gradient_steps, initial=initial, desc=run.algo, unit="mini-batch",
                smoothing=0.05)
