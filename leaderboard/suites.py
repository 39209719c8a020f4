"""Evaluation suites, declared as data: environment ids x instance seeds x arrival seeds.

Every suite evaluates each submission on every (environment id, instance seed) pair, called a
*unit*, and within a unit on every arrival seed (one day of passengers each). The same
instances and the same arrival samples are used for every agent, and for the two reference
policies every episode is compared with (the static window LP and slack-guided, SPEC §5).

**Evaluation seeds are disjoint from training seeds.** Arrival (day) seeds of every suite start
at :data:`tsg_envs.seeds.LEADERBOARD_SEED_BASE` = 2**31. The baselines draw their training days with
``tsg_envs.seeds.training_day_seed``, which stays below 2**31 for any realistic budget, and log
their learning curves on validation days 5,000 + i (every range is listed in
:mod:`tsg_envs.seeds`); a suite's days lie above both, so no evaluation day can
have been seen in training. Training of a submission must likewise use seeds below 2**31. The
instance seeds are shared with training on purpose: a submission is evaluated on the games it
may have been fitted to (as in the paper, one policy per instance), on days it has never seen.

The suite hash (:meth:`Suite.digest`) covers every field below plus
:data:`PROTOCOL_VERSION`, so a result says exactly which protocol produced it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from tsg_envs.seeds import LEADERBOARD_SEED_BASE

__all__ = ["PROTOCOL_VERSION", "Suite", "SUITES", "get_suite"]

#: Version of the evaluation protocol (what is measured and how); part of every suite hash.
PROTOCOL_VERSION: int = 2


@dataclass(frozen=True)
class Suite:
    """One evaluation suite.

    Attributes:
        name: Short name (``--suite NAME``).
        description: One line for the board and ``--help``.
        env_ids: Registered environment ids.
        instance_seeds: ``instance_seed`` values (game instances) per id.
        arrival_seeds: ``reset(seed=...)`` values (days of arrivals) per instance; all at or
            above :data:`tsg_envs.seeds.LEADERBOARD_SEED_BASE`.
        risk_max_states: States probed by the worst-case risk per unit (evenly spaced over the
            day of the first arrival seed); None probes every state. A subsample keeps slow
            agents affordable on large ids: probing every state asks ``act`` |C| times per
            passenger.
        train_gradient_steps: Training budget, in gradient steps (mini-batches; the paper's
            budget is 10,000), of a learned baseline submitted by name without a checkpoint (one
            run per unit); non-learning baselines ignore it.
        env_kwargs: Extra ``gym.make`` kwargs for every id, as sorted (key, value) pairs.
    """

    name: str
    description: str
    env_ids: tuple[str, ...]
    instance_seeds: tuple[int, ...]
    arrival_seeds: tuple[int, ...]
    risk_max_states: int | None = 100
    train_gradient_steps: int = 10_000
    env_kwargs: tuple[tuple[str, Any], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.env_ids or not self.instance_seeds or not self.arrival_seeds:
            raise ValueError(f"suite {self.name!r} needs ids, instance seeds and arrival seeds")
        low = min(self.arrival_seeds)
        if low < LEADERBOARD_SEED_BASE:
            raise ValueError(
                f"suite {self.name!r}: arrival seed {low} is below LEADERBOARD_SEED_BASE "
                f"({LEADERBOARD_SEED_BASE}), the range reserved for evaluation"
            )

    @property
    def units(self) -> list[tuple[str, int]]:
        """Every (environment id, instance seed) pair, in evaluation order."""
        return [(e, i) for e in self.env_ids for i in self.instance_seeds]

    @property
    def n_episodes(self) -> int:
        """Episodes per submission."""
        return len(self.units) * len(self.arrival_seeds)

    def kwargs(self) -> dict[str, Any]:
        """``env_kwargs`` as a dict."""
        return dict(self.env_kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The definition as plain JSON data (lists for tuples)."""
        d = asdict(self)
        d["env_ids"] = list(self.env_ids)
        d["instance_seeds"] = list(self.instance_seeds)
        d["arrival_seeds"] = list(self.arrival_seeds)
        d["env_kwargs"] = {k: v for k, v in self.env_kwargs}
        return d

    def digest(self) -> str:
        """sha256 (hex, first 16 digits) of the definition and :data:`PROTOCOL_VERSION`."""
        blob = json.dumps(
            {"protocol": PROTOCOL_VERSION, **self.to_dict()}, sort_keys=True, default=str
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _days(n: int) -> tuple[int, ...]:
    return tuple(range(LEADERBOARD_SEED_BASE, LEADERBOARD_SEED_BASE + n))


#: Every suite, by name.
SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite(
            name="micro",
            description="smoke test: 5 flights in one window, 1 instance x 2 days",
            env_ids=("tsg/Screening-Window-5F-v1",),
            instance_seeds=(0,),
            arrival_seeds=_days(2),
            risk_max_states=10,
            train_gradient_steps=200,
        ),
        Suite(
            name="demo",
            description=(
                "the README's main command: the default environment, 1 instance x 3 days, "
                "the paper's budget of 10,000 gradient steps (mini-batches)"
            ),
            env_ids=("tsg/Screening-v1",),
            instance_seeds=(0,),
            arrival_seeds=_days(3),
            risk_max_states=50,
            train_gradient_steps=10_000,
        ),
        Suite(
            name="quick",
            description=(
                "default shift and the paper's single window, 10 flights: "
                "2 ids x 3 instances x 5 days"
            ),
            env_ids=("tsg/Screening-v1", "tsg/Screening-Window-10F-v1"),
            instance_seeds=(0, 1, 2),
            arrival_seeds=_days(5),
            risk_max_states=100,
            train_gradient_steps=10_000,
        ),
        Suite(
            name="screening",
            description=(
                "the default environment alone, where a learned agent must beat slack-guided: "
                "5 instances x 20 days"
            ),
            env_ids=("tsg/Screening-v1",),
            instance_seeds=tuple(range(5)),
            arrival_seeds=_days(20),
            risk_max_states=100,
            train_gradient_steps=10_000,
        ),
        Suite(
            name="full",
            description=(
                "9 ids (horizons, 5-20 flights, sampled queues, sigma 15-150 min) "
                "x 10 instances x 20 days"
            ),
            env_ids=(
                "tsg/Screening-v1",
                "tsg/Screening-Sampled-v1",
                "tsg/Screening-Window-5F-v1",
                "tsg/Screening-Window-10F-v1",
                "tsg/Screening-Window-20F-v1",
                "tsg/Screening-Shift-20F-v1",
                "tsg/Screening-Day-10F-v1",
                "tsg/Screening-Window-10F-Sigma15-v1",
                "tsg/Screening-Window-10F-Sigma150-v1",
            ),
            instance_seeds=tuple(range(10)),
            arrival_seeds=_days(20),
            risk_max_states=200,
            train_gradient_steps=20_000,
        ),
    )
}


def get_suite(name: str) -> Suite:
    """The suite called ``name``.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}")
    return SUITES[name]
