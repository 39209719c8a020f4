"""Offline data: Minari datasets of expert screening days (``python -m leaderboard dataset``).

A dataset holds N days of one expert on one (environment id, instance): the days' observations,
the executed allocations (float64, each inside its category's polytope), the rewards (minus
each passenger's wait, minutes), terminations and the waiting passenger's ``category``,
``theta``, ``flight`` and ``time`` as infos, in Minari's layout (:mod:`baselines.experts` has
the table). It is written with ``minari.create_dataset_from_buffers`` under
``MINARI_DATASETS_PATH`` (Minari's own default, ``~/.minari/datasets``, without it) and nothing
is written elsewhere; ``minari.load_dataset(ID)`` reads it back. Its metadata's
``"tsg_envs"`` entry (:data:`baselines.experts.METADATA_KEY`) names the environment id and
version, its kwargs, the instance, the expert (and its checkpoint's sha256), the run seed and
the day seeds, the package's version and commit.

Days are the training days of a run seed, ``tsg_envs.seeds.training_day_seed(seed, k)``;
a plan whose days reach the validation, evaluation or leaderboard seeds is refused.

:data:`NAMED` is the small set of named datasets (the LP, slack-guided and the clairvoyant plan
on ``tsg/Screening-v1`` and ``tsg/Screening-Window-10F-v2``); ``python -m experiments.offline``
regenerates them and records their sizes and digests in ``results/offline/datasets.json``.
Digests: ``sha256`` of each file (the HDF5 file's bytes are a deterministic function of the
data on one h5py/HDF5 build), and ``content_sha256``, a digest of the arrays themselves (shape,
dtype and bytes of every field of every episode, in order) and of the metadata that says what
they are, which any Minari reader can recompute (:func:`content_digest`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tsg_envs.seeds import (
    EVAL_SEED_BASE,
    LEADERBOARD_SEED_BASE,
    VALIDATION_SEED_BASE,
    training_day_seed,
)

__all__ = ["MINARI_EXTRA", "RESERVED_SEEDS", "MAX_DAYS", "NAMED", "NamedDataset", "day_seeds",
           "check_days", "check_dataset_id", "datasets_root", "dataset_path", "write_dataset",
           "content_digest", "describe_dataset"]

#: What to install when minari is missing.
MINARI_EXTRA = "pip install 'tsg-envs[minari]'"
#: Seed ranges no dataset day may touch: validation, evaluation (10,000 days reserved) and
#: every leaderboard day.
RESERVED_SEEDS: tuple[tuple[int, int], ...] = (
    (VALIDATION_SEED_BASE, EVAL_SEED_BASE + 10_000),
    (LEADERBOARD_SEED_BASE, 2**63),
)
#: Most days one dataset holds (they are collected in memory before writing: ~0.5 MB a day at
#: 10 flights).
MAX_DAYS = 5_000
#: Metadata fields of the ``tsg_envs`` entry the content digest covers (not the commit, which
#: changes with every commit without changing the data).
_DIGESTED_META = ("env_id", "env_version", "env_kwargs", "instance_seed", "expert",
                  "checkpoint_sha256", "seed", "seeds", "package_version")


@dataclass(frozen=True)
class NamedDataset:
    """One of the named datasets (days: the default of ``python -m experiments.offline``)."""

    dataset_id: str
    env_id: str
    expert: str
    instance_seed: int = 0
    seed: int = 0


def _named() -> tuple[NamedDataset, ...]:
    envs = {"tsg/Screening-v1": "screening-v1", "tsg/Screening-Window-10F-v2": "window-10f-v2"}
    return tuple(NamedDataset(f"tsg/{slug}/{expert}-v0", env_id, expert)
                 for env_id, slug in envs.items() for expert in ("lp", "slack-guided",
                                                                 "clairvoyant"))


#: The named datasets: ``tsg/{screening-v1,window-10f-v2}/{lp,slack-guided,clairvoyant}-v0``,
#: instance 0, run seed 0 (days 0..N-1).
NAMED: tuple[NamedDataset, ...] = _named()


def day_seeds(seed: int, days: int) -> list[int]:
    """The arrival seeds of a dataset's days: training days 0..days-1 of run seed ``seed``."""
    return [training_day_seed(seed, k) for k in range(int(days))]


def check_days(seed: int, days: int) -> None:
    """Refuse a plan of days that is empty, too long, or reaches a reserved seed range.

    Raises:
        ValueError: naming the range.
    """
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"--days must be in [1, {MAX_DAYS}], got {days}")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    lo, hi = training_day_seed(seed, 0), training_day_seed(seed, days - 1)
    for a, b in RESERVED_SEEDS:
        if lo < b and a <= hi:
            raise ValueError(f"the days of --seed {seed} (arrival seeds {lo}..{hi}) reach the "
                             f"reserved seeds {a}..{b - 1} (validation, evaluation or "
                             "leaderboard days): choose fewer days or another seed")


def _minari() -> Any:
    try:
        import minari
    except ImportError as err:
        raise ImportError(f"offline datasets need minari: {MINARI_EXTRA}") from err
    return minari


def check_dataset_id(dataset_id: str) -> None:
    """Refuse an id Minari would refuse (``(namespace/)name-vN``, letters, digits, ``-_/``).

    Raises:
        ValueError: a malformed id, or one without a version.
    """
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        _, _, version = parse_dataset_id(dataset_id)
    except (ValueError, TypeError):
        raise ValueError(f"--dataset-id {dataset_id!r} is not a Minari id: (namespace/)name-vN, "
                         "e.g. tsg/window-10f-v2/lp-v0") from None
    if version is None:  # pragma: no cover - the pattern requires a version
        raise ValueError(f"--dataset-id {dataset_id!r} has no version (-vN)")


def datasets_root() -> Path:
    """Where datasets live: ``MINARI_DATASETS_PATH``, else Minari's ``~/.minari/datasets``.

    Nothing is created (Minari's own helper creates the folder).
    """
    root = os.environ.get("MINARI_DATASETS_PATH")
    return Path(root) if root else Path.home() / ".minari" / "datasets"


def dataset_path(dataset_id: str) -> Path:
    """The dataset's folder (it holds ``data/``)."""
    return datasets_root() / dataset_id


def _env_meta(env: Any) -> dict[str, Any]:
    from baselines.nonlearning import jsonable

    spec = env.spec
    return {"env_id": spec.id, "env_version": spec.version,
            "env_kwargs": jsonable(dict(spec.kwargs))}


def write_dataset(dataset_id: str, env_id: str, expert: str, days: int, *, instance_seed: int = 0,
                  seed: int = 0, checkpoint: str | None = None, force: bool = False,
                  progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
                  env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Collect ``days`` days of ``expert`` and write them as Minari dataset ``dataset_id``.

    Args:
        dataset_id: Minari id, ``(namespace/)name-vN``.
        env_id: A registered ``tsg`` id.
        expert: ``clairvoyant`` or a method name (:func:`baselines.experts.expert_names`).
        days: How many days (training days 0..days-1 of ``seed``).
        instance_seed: The game instance.
        seed: The run seed whose training days are played.
        checkpoint: A learned expert's checkpoint (safetensors; nothing is unpickled).
        force: Replace an existing dataset of that id (else it is an error).
        progress: Wraps the days' iteration (e.g. ``tqdm``).
        env_kwargs: Extra ``gym.make`` kwargs (recorded).

    Returns:
        :func:`describe_dataset` of the written dataset.

    Raises:
        ValueError: a bad id, expert, checkpoint or plan of days; an existing dataset without
            ``force``.
        ImportError: minari is missing (names the extra).
    """
    minari = _minari()
    import gymnasium as gym

    import tsg_envs
    from baselines.experts import METADATA_KEY, check_expert, collect
    from tsg_envs.provenance import git_commit

    check_dataset_id(dataset_id)
    check_days(seed, days)
    check_expert(expert, checkpoint)
    target = dataset_path(dataset_id)
    if target.exists() and not force:
        raise ValueError(f"dataset {dataset_id} exists at {target}: pass --force to replace it")
    env = gym.make(env_id, instance_seed=int(instance_seed), **dict(env_kwargs or {}))
    seeds = day_seeds(seed, days)
    collected = collect(env, expert, seeds, checkpoint, progress)
    meta = {
        **_env_meta(env), "instance_seed": int(instance_seed), "expert": expert,
        "checkpoint": checkpoint,
        "checkpoint_sha256": (None if checkpoint is None or not Path(checkpoint).is_file()
                              else hashlib.sha256(Path(checkpoint).read_bytes()).hexdigest()),
        "seed": int(seed), "seeds": seeds, "package": "tsg-envs",
        "package_version": tsg_envs.__version__, "commit": git_commit(12, ("tsg_envs",
                                                                          "baselines")),
        "mean_wait": float(np.mean([d.mean_wait for d in collected])),
        "actions": "executed allocations, float64, inside their category's polytope (1e-6)",
        "rewards": "minus each passenger's wait (minutes)",
        "infos": "category, theta, flight, time of the passenger waiting at each observation",
    }
    from gymnasium.spaces import Box
    from minari.data_collector.episode_buffer import EpisodeBuffer

    buffers = [EpisodeBuffer(id=k, seed=d.seed, observations=d.observations, actions=d.actions,
                             rewards=d.rewards, terminations=d.terminations,
                             truncations=d.truncations, infos=dict(d.infos))
               for k, d in enumerate(collected)]
    n_teams = int(collected[0].actions.shape[1])
    if target.exists():
        shutil.rmtree(target)
    try:
        with warnings.catch_warnings():
            # Minari asks for a code permalink and an e-mail address; the metadata above says
            # where the data came from.
            warnings.filterwarnings("ignore", category=UserWarning, module=r"minari\..*")
            data = minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env, eval_env=env.spec, algorithm_name=expert,
                author="tsg-envs", description=_description(meta, days),
                action_space=Box(0.0, 1.0, (n_teams,), np.float64),
                requirements=[f"tsg-envs=={tsg_envs.__version__}"],
            )
            data.storage.update_metadata({METADATA_KEY: meta})
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return describe_dataset(dataset_id)


def _description(meta: dict[str, Any], days: int) -> str:
    return (f"{days} days of the {meta['expert']} expert on {meta['env_id']} instance "
            f"{meta['instance_seed']} (tsg-envs {meta['package_version']}): observations, "
            "executed allocations (inside their risk polytopes), rewards = minus the waits.")


def _update(h: Any, name: str, array: Any) -> None:
    a = np.ascontiguousarray(np.asarray(array))
    h.update(f"{name}:{a.dtype.str}:{a.shape}\n".encode())
    h.update(a.tobytes())


def content_digest(meta: dict[str, Any], episodes: Iterable[Any]) -> str:
    """sha256 of a dataset's arrays and of the metadata that says what they are.

    Per episode in order: observations, actions, rewards, terminations, truncations and each
    info (sorted by key), each as ``name:dtype:shape`` then its bytes; first the metadata
    fields of :data:`_DIGESTED_META` as sorted JSON.
    """
    h = hashlib.sha256()
    h.update(json.dumps({k: meta.get(k) for k in _DIGESTED_META}, sort_keys=True).encode())
    for ep in episodes:
        for name in ("observations", "actions", "rewards", "terminations", "truncations"):
            _update(h, name, getattr(ep, name))
        for key in sorted(ep.infos):
            _update(h, f"infos.{key}", ep.infos[key])
    return h.hexdigest()


def _file_digests(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        out[path.relative_to(folder).as_posix()] = {"bytes": path.stat().st_size,
                                                     "sha256": h.hexdigest()}
    return out


def describe_dataset(dataset_id: str) -> dict[str, Any]:
    """A dataset's size, digests and what it holds (read back with ``minari.load_dataset``)."""
    minari = _minari()
    from baselines.experts import METADATA_KEY

    data = minari.load_dataset(dataset_id)
    meta = data.storage.metadata[METADATA_KEY]
    files = _file_digests(dataset_path(dataset_id) / "data")
    # metadata.json holds the commit and Minari's own bookkeeping: its digest is not the data's.
    return {
        "dataset_id": dataset_id, "env_id": meta["env_id"],
        "instance_seed": meta["instance_seed"], "expert": meta["expert"],
        "seed": meta["seed"], "days": len(meta["seeds"]),
        "steps": int(data.total_steps), "episodes": int(data.total_episodes),
        "mean_wait": meta["mean_wait"],
        "bytes": sum(f["bytes"] for f in files.values()),
        "files": files,
        "content_sha256": content_digest(meta, data.iterate_episodes()),
        "commit": meta.get("commit"),
    }


def write_named(named: Sequence[NamedDataset], days: int, force: bool = False,
                progress: bool = False) -> list[dict[str, Any]]:
    """Write every dataset of ``named`` with ``days`` days each; their descriptions."""
    import time

    rows = []
    for spec in named:
        wrap = None
        if progress:
            from tqdm.auto import tqdm

            def wrap(it: Iterable[int], spec: NamedDataset = spec) -> Iterable[int]:
                return tqdm(it, desc=spec.dataset_id, unit="day")

        start = time.process_time()
        row = write_dataset(spec.dataset_id, spec.env_id, spec.expert, days,
                            instance_seed=spec.instance_seed, seed=spec.seed, force=force,
                            progress=wrap)
        row["cpu_s"] = time.process_time() - start
        rows.append(row)
    return rows
