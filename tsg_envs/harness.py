"""The one evaluation harness: agents rolled out on (id, instance) units and arrival seeds.

Given agent factories (the agent under test and the references, all the same to the harness),
units and day seeds, :func:`evaluate` rolls the days out in batches through the native vector
environment (:class:`~tsg_envs.vector.ScreeningVectorEnv`; sub-environment i of a batch is the
single environment reset with that day's seed), calls ``act_batch(obs_B, infos)`` where an
agent has one and ``act(obs, info)`` row by row otherwise, and returns one typed
:class:`EpisodeRecord` per (agent, unit, day). Every agent faces the same passengers of a day.

An agent with a ``reset()`` method may keep state within a day, so it is rolled out one day at a
time (a batch of one) and reset before each day, as :func:`tsg_envs.rollout.rollout` does.

This is the project's one evaluation path: ``baselines`` (its results tables and training
CLI), the leaderboard and the paper's experiments all roll out through :func:`evaluate`, keep
its :class:`EpisodeRecord` (with the reference waits of the same day attached by
:meth:`EpisodeRecord.with_references`) and compare waits with the one :func:`delay_ratio`. The
days they play are named once, in :mod:`tsg_envs.seeds`. This module imports no agent:
``baselines`` and ``leaderboard`` pass their factories in.

Example:
    >>> from tsg_envs.harness import Unit, evaluate
    >>> from tsg_envs.rollout import CentreAgent, LPAgent
    >>> recs = evaluate({"centre": CentreAgent, "lp": LPAgent},
    ...                 [Unit("tsg/Screening-v1", 0)], [10_000, 10_001])
    >>> delay_ratio(recs[2].mean_wait, recs[0].mean_wait)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import gymnasium as gym
import numpy as np

from tsg_envs.polytope import FEASIBILITY_TOL

__all__ = [
    "AgentFactory",
    "Unit",
    "EpisodeRecord",
    "RowInfos",
    "column",
    "delay_ratio",
    "evaluate",
    "roll_days",
]

#: ``factory(env) -> agent``; ``env`` is the unit's single :class:`~tsg_envs.ScreeningEnv`.
AgentFactory = Callable[[gym.Env], Any]

#: Info keys of the waiting passenger, given to ``act`` (plus the last step's keys).
_STEP_KEYS = ("category", "theta", "flight", "time", "queues", "wait", "penalty",
              "proposed_violation", "executed_action", "team")


@dataclass(frozen=True)
class Unit:
    """One (environment id, instance) pair, with extra ``gym.make`` kwargs.

    Attributes:
        env_id: A registered id.
        instance_seed: The instance.
        env_kwargs: Extra construction kwargs as sorted (name, value) pairs (hashable).
    """

    env_id: str
    instance_seed: int
    env_kwargs: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, env_id: str, instance_seed: int, **env_kwargs: Any) -> Unit:
        """A unit from keyword arguments (arrays and lists become tuples, so it hashes)."""
        items = tuple(sorted((k, _hashable(v)) for k, v in env_kwargs.items()))
        return cls(env_id, int(instance_seed), items)

    @property
    def kwargs(self) -> dict[str, Any]:
        """``gym.make`` kwargs of the unit, instance seed included."""
        return {**dict(self.env_kwargs), "instance_seed": int(self.instance_seed)}


def _hashable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value


@dataclass(frozen=True)
class EpisodeRecord:
    """One agent's day on one unit (SPEC §5's per-episode metrics).

    Attributes:
        agent: The agent's name (its key in the factories given to :func:`evaluate`).
        env_id: The unit's id.
        instance_seed: The unit's instance.
        day_seed: The day's arrival seed.
        n_passengers: Passengers of the day.
        mean_wait: Mean wait per passenger, minutes.
        p95_wait: 95th percentile wait, minutes.
        max_wait: Largest wait, minutes.
        proposed_violations: Passengers whose proposed action broke its polytope by > 1e-6.
        executed_violations: Passengers whose executed action did (0 outside penalize mode).
        max_violation: Largest violation of a proposed action.
        total_reward: Sum of rewards (minus waits, minus penalties).
        reference_mean_wait: Mean wait of each reference policy (by name) on the same unit and
            day; empty until :meth:`with_references` attaches them.
    """

    agent: str
    env_id: str
    instance_seed: int
    day_seed: int
    n_passengers: int
    mean_wait: float
    p95_wait: float
    max_wait: float
    proposed_violations: int
    executed_violations: int
    max_violation: float
    total_reward: float
    reference_mean_wait: Mapping[str, float] = field(default_factory=dict, hash=False)

    def with_references(self, waits: Mapping[str, float]) -> EpisodeRecord:
        """A copy with the references' mean waits on the same unit and day attached."""
        return replace(self, reference_mean_wait={str(k): float(v) for k, v in waits.items()})

    def ratio(self, reference: str) -> float | None:
        """:func:`delay_ratio` of ``reference``'s mean wait (None where it is not attached)."""
        return delay_ratio(self.reference_mean_wait.get(reference), self.mean_wait)

    def summary(self) -> dict[str, float]:
        """The scalar metrics, as ``EpisodeStats.summary()`` gives them."""
        return {
            "mean_wait": self.mean_wait,
            "p95_wait": self.p95_wait,
            "max_wait": self.max_wait,
            "proposed_violations": self.proposed_violations,
            "executed_violations": self.executed_violations,
            "max_violation": self.max_violation,
            "total_reward": self.total_reward,
        }


def delay_ratio(reference_wait: float | None, agent_wait: float) -> float | None:
    """The delay ratio reference wait / agent wait (higher is better), or None where undefined.

    Results are strict JSON, so an undefined ratio is ``None`` (never inf or NaN): when the
    reference is missing (``reference_wait`` None), or when the agent's wait is 0 and the
    reference's is not. Two zero waits are a ratio of 1.0.
    """
    if reference_wait is None:
        return None
    if agent_wait > 0:
        return float(reference_wait / agent_wait)
    if reference_wait <= 0:
        return 1.0
    return None


class RowInfos(Sequence):
    """The vector env's info (a dict of arrays) as a sequence of single-env info dicts.

    A row's dict is built when it is first read; batched agents can read a whole key at once
    with :meth:`column` (``infos.column("category")``) and skip the dicts altogether.
    """

    def __init__(self, info: dict[str, Any], n: int) -> None:
        self._info = info
        self._keys = [k for k in _STEP_KEYS if k in info]
        self._rows: list[dict[str, Any] | None] = [None] * n

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> dict[str, Any]:  # type: ignore[override]
        row = self._rows[i]
        if row is None:
            row = {k: self._info[k][i].item() if self._info[k].ndim == 1 else self._info[k][i]
                   for k in self._keys}
            self._rows[i] = row
        return row

    def column(self, key: str) -> np.ndarray:
        """The values of ``key`` for every row, (B, ...)."""
        return self._info[key]


def column(infos: Sequence[dict[str, Any]], key: str) -> np.ndarray:
    """``key`` of every info in ``infos`` as an array (fast for :class:`RowInfos`)."""
    if isinstance(infos, RowInfos):
        return infos.column(key)
    return np.array([i[key] for i in infos])


def roll_days(env: Any, agent: Any, day_seeds: Sequence[int]) -> list[dict[str, float]]:
    """Roll ``agent`` out on ``len(day_seeds)`` days at once in a vector env of that many rows.

    Args:
        env: A :class:`~tsg_envs.vector.ScreeningVectorEnv` with ``num_envs == len(day_seeds)``.
        agent: ``act(obs, info)``, optionally ``act_batch(obs_B, infos)`` and ``reset()``.
        day_seeds: One arrival seed per row.

    Returns:
        Per day, the metrics of :meth:`EpisodeRecord.summary` plus ``n_passengers``.
    """
    n = env.num_envs
    if len(day_seeds) != n:
        raise ValueError(f"need {n} day seeds, got {len(day_seeds)}")
    obs, info = env.reset(seed=[int(s) for s in day_seeds])
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()
    batch = getattr(agent, "act_batch", None)
    polys = env.polytopes
    steps = env.game.n_passengers
    waits = np.empty((steps, n))
    rewards = np.zeros(n)
    proposed = np.zeros(n, dtype=np.int64)
    executed = np.zeros(n, dtype=np.int64)
    max_viol = np.zeros(n)
    for k in range(steps):
        cats = info["category"]
        infos = RowInfos(info, n)
        if callable(batch):
            actions = np.asarray(batch(obs, infos), dtype=np.float64)
        else:
            actions = np.stack([np.asarray(agent.act(obs[i], infos[i]), dtype=np.float64)
                                for i in range(n)])
        obs, reward, terminated, _, info = env.step(actions)
        waits[k] = info["wait"]
        rewards += reward
        viol = info["proposed_violation"]
        proposed += viol > FEASIBILITY_TOL
        np.maximum(max_viol, viol, out=max_viol)
        executed += polys.violation(info["executed_action"], cats) > FEASIBILITY_TOL
    if not terminated.all():  # pragma: no cover - every day of an instance has `steps` passengers
        raise RuntimeError("a day did not end after the instance's passenger count")
    out = []
    for i in range(n):
        w = waits[:, i]
        out.append({
            "n_passengers": steps,
            "mean_wait": float(w.mean()),
            "p95_wait": float(np.percentile(w, 95)),
            "max_wait": float(w.max()),
            "proposed_violations": int(proposed[i]),
            "executed_violations": int(executed[i]),
            "max_violation": float(max_viol[i]),
            "total_reward": float(rewards[i]),
        })
    return out


def evaluate(
    agents: Mapping[str, AgentFactory],
    units: Sequence[Unit],
    day_seeds: Sequence[int],
    batch: int = 64,
    progress: bool = False,
) -> list[EpisodeRecord]:
    """Roll every agent out on every unit and day; one record per (agent, unit, day).

    Args:
        agents: Name -> ``factory(env)``, called once per unit with the unit's single env (the
            agent under test and the references alike).
        units: The (id, instance) units.
        day_seeds: Arrival seeds, the same for every unit and agent.
        batch: Days rolled out at once (rows of the vector environment).
        progress: Show a tqdm bar over agent-days.

    Returns:
        Records ordered by unit, then agent (in the order given), then day.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    days = [int(s) for s in day_seeds]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(units) * len(agents) * len(days), desc="evaluate", unit="day")
    records: list[EpisodeRecord] = []
    for unit in units:
        envs: dict[int, Any] = {}

        def vec(size: int, unit: Unit = unit, envs: dict[int, Any] = envs) -> Any:
            if size not in envs:
                envs[size] = gym.make_vec(
                    unit.env_id, num_envs=size, vectorization_mode="vector_entry_point",
                    **unit.kwargs,
                )
            return envs[size]

        single = vec(min(batch, len(days))).single_env
        for name, factory in agents.items():
            agent = factory(single)
            size = 1 if callable(getattr(agent, "reset", None)) else min(batch, len(days))
            for start in range(0, len(days), size):
                chunk = days[start:start + size]
                for day, stats in zip(chunk, roll_days(vec(len(chunk)), agent, chunk),
                                      strict=True):
                    records.append(EpisodeRecord(
                        agent=name, env_id=unit.env_id, instance_seed=unit.instance_seed,
                        day_seed=day, **cast(dict[str, Any], stats),
                    ))
                if bar is not None:
                    bar.update(len(chunk))
        for env in envs.values():
            env.close()
    if bar is not None:
        bar.close()
    return records
