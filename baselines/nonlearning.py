"""Shared plumbing of the non-learning baselines (lp, slack-lp, slack-guided, myopic, centre).

Each of these methods is a pure function of the environment's instance (its game, ψ and LP
windows) and a small typed config, so "training" is solving, and a checkpoint is a small JSON
file (plus, for the slack LP, its solved policy as ``.npz``) that records what was solved for:

``DIR/checkpoint.json``::

    {"format": 1, "algo": "slack-lp", "env_id": "tsg/Screening-v1", "instance_seed": 0,
     "env_kwargs": {...}, "config": {...}, "risk_bound": [...], "files": {...}}

``load(path, env)`` (``path`` is the JSON file or its directory) rebuilds the identical policy
and refuses an ``env`` of another instance or risk bound, whose policy would differ. ``train``
resumes: when ``run.out`` already holds a checkpoint of the same method, environment and config,
it is loaded instead of solved again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

from baselines.api import RunConfig
from baselines.config import config_from

__all__ = [
    "CHECKPOINT_NAME",
    "CHECKPOINT_FORMAT",
    "config_from_hparams",
    "jsonable",
    "checkpoint_path",
    "write_checkpoint",
    "read_checkpoint",
    "check_env_matches",
    "solve_or_resume",
]

#: File name of a non-learning method's checkpoint inside ``run.out``.
CHECKPOINT_NAME = "checkpoint.json"
#: Version of the checkpoint layout.
CHECKPOINT_FORMAT = 1

C = TypeVar("C")


def config_from_hparams(config_cls: type[C], hparams: dict[str, Any]) -> C:
    """Build a config dataclass from its defaults overridden by ``hparams``.

    Values are typed by field (text parsed, never evaluated; :func:`baselines.config.config_from`).

    Raises:
        ValueError: for a key that is not a field, listing the fields, or a value that does not
            fit its field.
    """
    return config_from(config_cls, hparams)


def jsonable(value: Any) -> Any:
    """Convert numpy arrays/scalars, paths and tuples (recursively) to JSON-friendly values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def checkpoint_path(path: Path | str) -> Path:
    """The checkpoint JSON for ``path``: the file itself, or ``CHECKPOINT_NAME`` in a folder."""
    path = Path(path)
    return path / CHECKPOINT_NAME if path.is_dir() else path


def write_checkpoint(
    run: RunConfig,
    env: gym.Env,
    config: Any,
    arrays: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write ``run.out/checkpoint.json`` (and ``run.out/<algo>.npz`` holding ``arrays``).

    Returns:
        The JSON path.
    """
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    if arrays:
        npz = f"{run.algo}.npz"
        np.savez(out / npz, **arrays)
        files["arrays"] = npz
    record = {
        "format": CHECKPOINT_FORMAT,
        "algo": run.algo,
        "env_id": run.env_id,
        "instance_seed": int(env.unwrapped.instance_seed),
        "env_kwargs": jsonable(run.env_kwargs),
        "config": jsonable(dataclasses.asdict(config)),
        "risk_bound": env.unwrapped.risk_bound.tolist(),
        "files": files,
    }
    path = out / CHECKPOINT_NAME
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)
    return path


def read_checkpoint(path: Path | str, algo: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a checkpoint of method ``algo``: (the JSON record, its arrays).

    Raises:
        FileNotFoundError: when there is no checkpoint at ``path``.
        ValueError: when the checkpoint belongs to another method or format.
    """
    path = checkpoint_path(path)
    record = json.loads(path.read_text())
    if record.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: unknown checkpoint format {record.get('format')!r}")
    if record.get("algo") != algo:
        raise ValueError(f"{path} is a {record.get('algo')!r} checkpoint, not {algo!r}")
    arrays: dict[str, np.ndarray] = {}
    if "arrays" in record.get("files", {}):
        with np.load(path.parent / record["files"]["arrays"]) as data:
            arrays = {k: data[k] for k in data.files}
    return record, arrays


def check_env_matches(record: dict[str, Any], env: gym.Env, path: Path | str) -> None:
    """Refuse an ``env`` whose instance or risk bound differs from the checkpoint's.

    Raises:
        ValueError: naming what differs.
    """
    u = env.unwrapped
    if int(u.instance_seed) != int(record["instance_seed"]):
        raise ValueError(
            f"{path} was solved for instance_seed={record['instance_seed']}, the env has "
            f"instance_seed={u.instance_seed}; build a fresh agent for this instance instead"
        )
    saved = np.asarray(record["risk_bound"], dtype=float)
    if saved.shape != u.risk_bound.shape or not np.allclose(saved, u.risk_bound, rtol=1e-12,
                                                            atol=0.0):
        raise ValueError(
            f"{path} was solved at risk bound {saved.tolist()}, the env has "
            f"{u.risk_bound.tolist()} (another env id, env_kwargs or risk_slack?)"
        )


def solve_or_resume(
    run: RunConfig,
    config: Any,
    load: Callable[[Path, gym.Env], Any],
    solve: Callable[[gym.Env], tuple[Any, dict[str, np.ndarray] | None]],
) -> Any:
    """The ``train`` of a non-learning method: resume from ``run.out`` or solve and save.

    A checkpoint in ``run.out`` is reused when its method, env id, instance, env kwargs and
    config equal the run's; otherwise the method is solved again and the checkpoint rewritten.

    Args:
        run: The run.
        config: The method's config (from ``run.hparams``).
        load: The method's ``load``.
        solve: ``solve(env) -> (agent, arrays to save or None)``.

    Returns:
        The agent.
    """
    env = run.make_env()
    path = Path(run.out) / CHECKPOINT_NAME
    if path.exists():
        try:
            record, _ = read_checkpoint(path, run.algo)
            same = (
                record["env_id"] == run.env_id
                and record["instance_seed"] == run.instance_seed
                and record["env_kwargs"] == jsonable(run.env_kwargs)
                and record["config"] == jsonable(dataclasses.asdict(config))
            )
        except (ValueError, KeyError, json.JSONDecodeError):
            same = False
        if same:
            return load(path, env)
    agent, arrays = solve(env)
    write_checkpoint(run, env, config, arrays)
    return agent
