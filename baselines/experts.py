"""Expert days: what an expert policy did on whole days, as plain arrays (the offline data).

An *expert* is a policy whose days are worth imitating: the static window LP (``lp``),
slack-guided (``slack-guided``), any other method of :mod:`baselines.api` (a learned one loaded
from its checkpoint), or ``clairvoyant``: the achievability bracket's plan of each day
(:func:`tsg_envs.bracket.bracket`, SPEC §8), computed knowing the whole day and never worse
than the LP's or slack-guided's own day (both are searched), then replayed step by step.

:func:`collect` plays the expert on each day seed in the single environment and records, per
day of P passengers (Minari's layout, :mod:`leaderboard.datasets` writes it as a dataset):

=================  ===========  =================================================================
field              shape        meaning
=================  ===========  =================================================================
``observations``   (P + 1, O)   float32: the reset observation, then each step's
``actions``        (P, T)       float64: the *executed* allocations (inside their polytopes)
``rewards``        (P,)         float64: the environment's rewards, minus each passenger's wait
``terminations``   (P,)         bool: True at the last passenger only
``truncations``    (P,)         bool: never True (a day ends by termination)
``infos``          (P + 1,)     per key: ``category``, ``theta``, ``flight`` (int64) and
                                ``time`` (float64) of the passenger waiting at each observation
                                (-1 after the last one, SPEC §2)
=================  ===========  =================================================================

Actions are float64 on purpose: a risk row's coefficients reach about 10, so float32 rounding
of an allocation can move it past the 1e-6 feasibility tolerance.

Days are training days (:func:`tsg_envs.seeds.training_day_seed`): never the validation,
evaluation or leaderboard seeds. The clairvoyant expert costs a bracket per day (about 10-20 s
of CPU at 10 flights); the others a rollout (well under a second).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.api import build_agent, get_method, method_names

__all__ = ["CLAIRVOYANT", "INFO_KEYS", "METADATA_KEY", "ExpertDay", "expert_names",
           "check_expert", "collect_day", "collect", "read_days"]

#: The bracket's plan as an expert.
CLAIRVOYANT = "clairvoyant"
#: The info keys kept per observation (the waiting passenger's; SPEC §2).
INFO_KEYS = ("category", "theta", "flight", "time")
#: The key of a Minari dataset's metadata that holds what the days are (env id and version,
#: instance, expert, seeds, package version; :mod:`leaderboard.datasets` writes it).
METADATA_KEY = "tsg_envs"


def expert_names() -> list[str]:
    """Every expert name: ``clairvoyant`` and every baseline method."""
    return [CLAIRVOYANT, *method_names()]


def check_expert(name: str, checkpoint: str | None) -> None:
    """Check an expert name and its checkpoint before anything runs.

    Raises:
        ValueError: an unknown name; a learned method without a checkpoint; a checkpoint for
            ``clairvoyant``; a checkpoint path that does not exist.
    """
    if name == CLAIRVOYANT:
        if checkpoint is not None:
            raise ValueError("the clairvoyant expert takes no --checkpoint (it is the bracket's "
                             "plan of each day)")
        return
    if name not in method_names():
        raise ValueError(f"unknown expert {name!r}; choose one of {', '.join(expert_names())}")
    if checkpoint is None:
        if get_method(name).learned:
            raise ValueError(f"{name} is a learned method: give its --checkpoint")
        return
    from pathlib import Path

    if not Path(checkpoint).exists():
        raise ValueError(f"no checkpoint at {checkpoint}")


@dataclass(frozen=True)
class ExpertDay:
    """One day of an expert (shapes in the module's table; P passengers, O, T)."""

    seed: int
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, np.ndarray]

    @property
    def mean_wait(self) -> float:
        """The day's mean wait (minutes): minus the mean reward."""
        return float(-self.rewards.mean())

    @property
    def categories(self) -> np.ndarray:
        """(P,) the category of the passenger each action allocates."""
        return self.infos["category"][:-1]


def collect_day(env: gym.Env, seed: int, act: Callable[[np.ndarray, dict[str, Any], int],
                                                       np.ndarray]) -> ExpertDay:
    """Play ``act(obs, info, i)`` (i: the passenger's index in the day) on the day of ``seed``.

    The environment is the one given (its ``invalid_action`` mode applies); the recorded action
    is the executed one.
    """
    obs, info = env.reset(seed=int(seed))
    n = int(env.unwrapped.game.n_passengers)  # type: ignore[attr-defined]
    t = int(env.unwrapped.game.n_teams)  # type: ignore[attr-defined]
    observations = np.empty((n + 1, *np.shape(obs)), dtype=np.float32)
    actions = np.empty((n, t))
    rewards = np.empty(n)
    terminations = np.zeros(n, dtype=bool)
    truncations = np.zeros(n, dtype=bool)
    infos: dict[str, list[Any]] = {k: [info[k]] for k in INFO_KEYS}
    observations[0] = obs
    i = 0
    done = False
    while not done:
        if i >= n:  # pragma: no cover - every day of an instance has n passengers
            raise RuntimeError(f"the day of seed {seed} did not end after {n} passengers")
        obs, reward, term, trunc, info = env.step(np.asarray(act(obs, info, i), np.float64))
        observations[i + 1] = obs
        actions[i] = info["executed_action"]
        rewards[i] = reward
        terminations[i], truncations[i] = bool(term), bool(trunc)
        for k in INFO_KEYS:
            infos[k].append(info[k])
        done = bool(term or trunc)
        i += 1
    if i != n:  # pragma: no cover
        raise RuntimeError(f"the day of seed {seed} ended after {i} of {n} passengers")
    return ExpertDay(
        seed=int(seed), observations=observations, actions=actions, rewards=rewards,
        terminations=terminations, truncations=truncations,
        infos={k: np.asarray(v, dtype=np.float64 if k == "time" else np.int64)
               for k, v in infos.items()},
    )


def _clairvoyant_plan(env: gym.Env, seed: int) -> np.ndarray:
    """The bracket's plan of the day (slack-guided searched as a candidate too)."""
    from baselines import slack_guided
    from tsg_envs.bracket import bracket

    return bracket(env, int(seed), candidates={"slack-guided": slack_guided.make_agent}).plan


def collect(env: gym.Env, expert: str, seeds: Sequence[int], checkpoint: str | None = None,
            progress: Callable[[Iterable[int]], Iterable[int]] | None = None) -> list[ExpertDay]:
    """The expert's days on ``seeds`` (see the module's table).

    Args:
        env: The environment (``gym.make`` of a ``tsg`` id, expected queue mode for
            ``clairvoyant``).
        expert: ``clairvoyant`` or a method name (:func:`expert_names`).
        seeds: The days' arrival seeds.
        checkpoint: A learned method's checkpoint (``Method.load``), or a solved one's.
        progress: Wraps the seeds' iteration (e.g. ``tqdm``), or None.

    Raises:
        ValueError: as :func:`check_expert`.
    """
    check_expert(expert, checkpoint)
    days: list[ExpertDay] = []
    wrap = progress or (lambda it: it)
    if expert == CLAIRVOYANT:
        for seed in wrap(list(seeds)):
            plan = _clairvoyant_plan(env, seed)
            days.append(collect_day(env, seed, lambda obs, info, i, p=plan: p[i]))
        return days
    agent = build_agent(expert, env, checkpoint)
    for seed in wrap(list(seeds)):
        reset = getattr(agent, "reset", None)
        if callable(reset):
            reset()
        days.append(collect_day(env, seed, lambda obs, info, i: agent.act(obs, info)))
    return days


def read_days(dataset_id: str) -> tuple[dict[str, Any], list[ExpertDay]]:
    """``(metadata, days)`` of a Minari dataset written by ``python -m leaderboard dataset``.

    ``metadata`` is the dataset's :data:`METADATA_KEY` entry; it is read with
    ``minari.load_dataset`` (``MINARI_DATASETS_PATH`` decides where; the ``minari`` extra).

    Raises:
        ImportError: minari is not installed (names the extra).
        FileNotFoundError: no such dataset.
        ValueError: the dataset was not written by tsg-envs.
    """
    try:
        import minari
    except ImportError as err:
        raise ImportError("reading an offline dataset needs minari: pip install "
                          "'tsg-envs[minari]'") from err
    data = minari.load_dataset(dataset_id)
    meta = data.storage.metadata.get(METADATA_KEY)
    if not isinstance(meta, dict):
        raise ValueError(f"dataset {dataset_id} has no {METADATA_KEY!r} metadata: not written "
                         "by python -m leaderboard dataset")
    seeds = [int(s) for s in meta["seeds"]]
    days = []
    for seed, ep in zip(seeds, data.iterate_episodes(), strict=True):
        days.append(ExpertDay(
            seed=seed, observations=np.asarray(ep.observations, dtype=np.float32),
            actions=np.asarray(ep.actions, dtype=np.float64),
            rewards=np.asarray(ep.rewards, dtype=np.float64),
            terminations=np.asarray(ep.terminations, dtype=bool),
            truncations=np.asarray(ep.truncations, dtype=bool),
            infos={k: np.asarray(ep.infos[k]) for k in INFO_KEYS},
        ))
    return meta, days
