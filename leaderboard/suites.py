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

**Which days a row plays** (:class:`Days`, SPEC §7). A suite's ``arrival_seeds`` are public:
a submission could replay them and plan with foresight. An official row plays **fresh** days
(``evaluate --days fresh``, the default on the command line): as many seeds as the suite has
days, drawn by :func:`fresh_days` from the operating system's entropy (:mod:`secrets`) when the
evaluation starts, in the evaluator, before any submission's process exists, and recorded in
the result, so ``verify`` replays them. ``--days public`` plays the suite's own seeds
(development, the README's main job) and ``--days S1,S2,...`` chosen ones; such rows are
labelled and never rank on the hard track. Every day seed lies in
[:data:`~tsg_envs.seeds.LEADERBOARD_SEED_BASE`, 2**63): disjoint from training seeds.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from tsg_envs.seeds import LEADERBOARD_SEED_BASE

__all__ = ["PROTOCOL_VERSION", "DAY_KINDS", "MAX_DAY_SEED", "Days", "Suite", "SUITES",
           "days_of", "fresh_days", "get_suite", "parse_days"]

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


#: How a row's days were chosen: drawn at the start (the only kind that ranks on the hard
#: track), the suite's public seeds, or seeds named on the command line.
DAY_KINDS: tuple[str, ...] = ("fresh", "public", "chosen")
#: Day seeds lie below this (and at or above LEADERBOARD_SEED_BASE).
MAX_DAY_SEED: int = 2**63
#: Most days one row may play (``--days S1,S2,...``).
MAX_DAYS: int = 1_000


@dataclass(frozen=True)
class Days:
    """The arrival seeds a row plays, and how they were chosen (the module doc).

    Attributes:
        kind: ``"fresh"``, ``"public"`` or ``"chosen"`` (:data:`DAY_KINDS`).
        seeds: The arrival seeds, in play order.
    """

    kind: str
    seeds: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in DAY_KINDS:
            raise ValueError(f"days must be one of {', '.join(DAY_KINDS)}, got {self.kind!r}")
        seeds = tuple(self.seeds)
        if not 1 <= len(seeds) <= MAX_DAYS:
            raise ValueError(f"a row plays 1 to {MAX_DAYS} days, got {len(seeds)}")
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, int) or not (
                    LEADERBOARD_SEED_BASE <= s < MAX_DAY_SEED):
                raise ValueError(f"a day seed must be an integer in [2**31, 2**63) (the range "
                                 f"reserved for evaluation), got {s!r}")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"day seeds must be distinct, got {list(seeds)}")
        object.__setattr__(self, "seeds", seeds)

    def to_dict(self) -> dict[str, Any]:
        """The result's ``days`` block."""
        return {"kind": self.kind, "seeds": list(self.seeds)}

    def label(self) -> str:
        """A short phrase for a row's note (empty for fresh days)."""
        if self.kind == "fresh":
            return ""
        shown = ", ".join(str(s) for s in self.seeds[:3]) + (", ..." if len(self.seeds) > 3
                                                             else "")
        what = "the suite's public days" if self.kind == "public" else "chosen days"
        return f"{what} ({shown})"


def fresh_days(n: int) -> Days:
    """``n`` distinct day seeds drawn now from the operating system's entropy (:mod:`secrets`).

    No submission can read them: they are drawn in the evaluator before any submission's
    process starts, from a source no seed or clock predicts.
    """
    seeds: list[int] = []
    while len(seeds) < n:
        s = LEADERBOARD_SEED_BASE + secrets.randbelow(MAX_DAY_SEED - LEADERBOARD_SEED_BASE)
        if s not in seeds:
            seeds.append(s)
    return Days("fresh", tuple(seeds))


def parse_days(text: str, suite: Suite) -> Days:
    """``--days``: ``fresh`` (drawn now), ``public`` (the suite's) or ``S1,S2,...`` (chosen).

    Raises:
        ValueError: anything else, or chosen seeds outside [2**31, 2**63) or repeated.
    """
    text = text.strip()
    if text == "fresh":
        return fresh_days(len(suite.arrival_seeds))
    if text == "public":
        return Days("public", tuple(suite.arrival_seeds))
    try:
        seeds = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--days must be fresh, public or seeds S1,S2,... (integers in "
                         f"[2**31, 2**63)), got {text[:80]!r}") from None
    return Days("chosen", seeds)


def days_of(doc: dict[str, Any]) -> Days:
    """The days a result played: its ``days`` block, else its suite's public seeds.

    (A result written before rows recorded their days played its suite's public seeds.)
    """
    block = doc.get("days")
    if block is None:
        return Days("public", tuple(doc["suite"]["definition"]["arrival_seeds"]))
    return Days(block["kind"], tuple(block["seeds"]))
