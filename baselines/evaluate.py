"""Evaluation harness: roll an agent out on fixed days and compare it with the reference policies.

``evaluate(agent_factory, env_id, instance_seeds, day_seeds)`` plays one episode per
(instance, day) with :func:`tsg_envs.rollout.rollout`, and plays the *reference* policies on
exactly the same days: the static window LP (``"lp"``, SPEC §4) and the slack-guided
per-passenger LP (``"slack-guided"``, the strongest non-learning baseline at the same ψ). The
arrivals of a day depend only on its seed, so every policy faces the same passengers (SPEC §5).
Reference episodes are cached in-process per (env id, instance, day, env kwargs), so
evaluating many agents on the same days pays for the references once.

Per episode it records the agent's mean, p95 and max wait, its proposed and executed
violations and largest violation, the references' mean waits and the delay ratios
``ratio_lp = LP mean wait / agent mean wait`` and ``ratio_slack_guided = slack-guided mean wait
/ agent mean wait`` (higher is better; > 1 beats the reference). :meth:`EvaluationResult.summary`
aggregates: waits averaged over episodes (each day weighs the same), the pooled ratios (ratio
of the averaged waits), violations summed, the largest violation maxed.

Seeds: evaluation days are ``tsg_envs.seeds.EVAL_SEED_BASE + k = 10_000 + k``; every named
range (training, validation, evaluation, duel, leaderboard) is defined once, in
:mod:`tsg_envs.seeds`. Records are the harness's :class:`tsg_envs.harness.EpisodeRecord`, with
the references' waits attached, and every ratio is :func:`tsg_envs.harness.delay_ratio`.

The leaderboard builds on :func:`evaluate` (it passes its own ``agent_factory`` per submission);
``agent_factory(env)`` is called once per instance and must return an agent for that env.

Example:
    >>> from baselines.evaluate import evaluate
    >>> from tsg_envs.rollout import CentreAgent
    >>> res = evaluate(CentreAgent, "tsg/Screening-v1", [0], [10_000, 10_001])
    >>> res.summary()["ratio_lp"]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs import harness
from tsg_envs.cache import KeyedCache
from tsg_envs.harness import EpisodeRecord, delay_ratio
from tsg_envs.rollout import Agent, LPAgent

__all__ = [
    "REFERENCES",
    "AgentFactory",
    "EvaluationResult",
    "evaluate",
    "episode_row",
    "clear_reference_cache",
]

#: ``agent_factory(env) -> Agent``: builds (or returns) the agent for one instance's env.
AgentFactory = Callable[[gym.Env], Agent]


def _slack_guided_agent(env: gym.Env) -> Agent:
    from baselines.slack_guided import make_agent

    return make_agent(env)


#: Reference policies: name -> ``agent_factory`` (default configs).
REFERENCES: dict[str, AgentFactory] = {
    "lp": LPAgent,
    "slack-guided": _slack_guided_agent,
}

_REFERENCE_CACHE: KeyedCache[dict[str, float]] = KeyedCache(4096)


def clear_reference_cache() -> None:
    """Forget every cached reference episode."""
    _REFERENCE_CACHE.clear()


def episode_row(record: EpisodeRecord) -> dict[str, Any]:
    """One evaluated episode as a flat row (``eval.json``'s episodes, the results CSVs).

    The record's metrics (its agent's name and total reward left out), ``ratio_lp`` and
    ``ratio_slack_guided`` (None without that reference) and each reference's mean wait as
    ``<name>_mean_wait`` (``-`` becomes ``_``).
    """
    row: dict[str, Any] = {
        "env_id": record.env_id,
        "instance_seed": record.instance_seed,
        "day_seed": record.day_seed,
        "n_passengers": record.n_passengers,
        "mean_wait": record.mean_wait,
        "p95_wait": record.p95_wait,
        "max_wait": record.max_wait,
        "proposed_violations": record.proposed_violations,
        "executed_violations": record.executed_violations,
        "max_violation": record.max_violation,
        "ratio_lp": record.ratio("lp"),
        "ratio_slack_guided": record.ratio("slack-guided"),
    }
    for name, wait in record.reference_mean_wait.items():
        row[f"{name.replace('-', '_')}_mean_wait"] = wait
    return row


@dataclass(frozen=True)
class EvaluationResult:
    """Every episode of an evaluation, and their aggregate.

    Attributes:
        env_id: Gymnasium id.
        env_kwargs: Extra ``gym.make`` kwargs used.
        records: One :class:`tsg_envs.harness.EpisodeRecord` per (instance, day), instances
            outermost, each with the references' mean waits of its day attached.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    records: list[EpisodeRecord]

    def summary(self) -> dict[str, Any]:
        """Aggregate metrics over the episodes.

        Waits are averaged over episodes (each day weighs the same); ``ratio_lp`` and
        ``ratio_slack_guided`` are pooled (the references' averaged mean wait over the agent's);
        violations are summed; ``max_violation`` and ``max_wait`` are the largest.
        """
        recs = self.records
        agent = float(np.mean([r.mean_wait for r in recs]))
        out: dict[str, Any] = {
            "n_episodes": len(recs),
            "mean_wait": agent,
            "p95_wait": float(np.mean([r.p95_wait for r in recs])),
            "max_wait": float(np.max([r.max_wait for r in recs])),
            "proposed_violations": int(sum(r.proposed_violations for r in recs)),
            "executed_violations": int(sum(r.executed_violations for r in recs)),
            "max_violation": float(max(r.max_violation for r in recs)),
        }
        names = list(recs[0].reference_mean_wait) if recs else []
        for name in names:
            ref = float(np.mean([r.reference_mean_wait[name] for r in recs]))
            key = name.replace("-", "_")
            out[f"{key}_mean_wait"] = ref
            out[f"ratio_{key}"] = delay_ratio(ref, agent)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: env id, kwargs, summary and the flat per-episode records."""
        from baselines.nonlearning import jsonable

        return {
            "env_id": self.env_id,
            "env_kwargs": jsonable(self.env_kwargs),
            "summary": self.summary(),
            "episodes": [episode_row(r) for r in self.records],
        }


def _reference_waits(
    names: Sequence[str], units: Sequence[harness.Unit], days: Sequence[int], progress: bool
) -> dict[tuple[str, harness.Unit, int], float]:
    """Mean wait of each reference on each (unit, day).

    Cached in-process; what is missing is rolled out through the harness (and cached).
    """
    out: dict[tuple[str, harness.Unit, int], float] = {}
    for name in names:
        for unit in units:
            missing = [d for d in days if (name, unit, d) not in _REFERENCE_CACHE]
            if missing:
                recs = harness.evaluate({name: REFERENCES[name]}, [unit], missing,
                                        progress=progress)
                for rec in recs:
                    _REFERENCE_CACHE.get_or_make((name, unit, rec.day_seed),
                                                 lambda r=rec: r.summary())
            for d in days:
                summary = _REFERENCE_CACHE.get_or_make((name, unit, d), dict)
                out[(name, unit, d)] = summary["mean_wait"]
    return out


def evaluate(
    agent_factory: AgentFactory,
    env_id: str,
    instance_seeds: Sequence[int],
    day_seeds: Sequence[int],
    env_kwargs: dict[str, Any] | None = None,
    references: Sequence[str] = ("lp", "slack-guided"),
    progress: bool = False,
) -> EvaluationResult:
    """Roll ``agent_factory(env)`` out on every (instance, day) next to the reference policies.

    Args:
        agent_factory: ``agent_factory(env) -> Agent``, called once per instance (pass a
            lambda returning a prebuilt agent to evaluate it on its own instance).
        env_id: Gymnasium id.
        instance_seeds: Instances (``gym.make(env_id, instance_seed=...)``).
        day_seeds: Arrival seeds of the days, the same for every instance (see
            :func:`evaluation_day_seeds`).
        env_kwargs: Extra ``gym.make`` kwargs (e.g. ``risk_slack``), shared by agent and
            references.
        references: Names from :data:`REFERENCES` to compare with (cached in-process).
        progress: Show a tqdm bar over the episodes.

    Returns:
        The :class:`EvaluationResult`.
    """
    env_kwargs = dict(env_kwargs or {})
    unknown = [n for n in references if n not in REFERENCES]
    if unknown:
        raise ValueError(f"unknown reference(s) {unknown}; known: {list(REFERENCES)}")
    units = [harness.Unit.of(env_id, int(i), **env_kwargs) for i in instance_seeds]
    days = [int(d) for d in day_seeds]
    agent_recs = harness.evaluate({"agent": agent_factory}, units, days, progress=progress)
    refs = _reference_waits(references, units, days, progress)
    records = [
        rec.with_references({name: refs[(name, unit, rec.day_seed)] for name in references})
        for rec, unit in zip(agent_recs, [u for u in units for _ in days], strict=True)
    ]
    return EvaluationResult(env_id=env_id, env_kwargs=env_kwargs, records=records)
