"""The single-window family's report: how the binding step shaped each registered instance.

For every (window id, instance seed): the draws the seed took, the binding verdict (U_min, U*,
the rate factor, the share of the LP's value lost to capacity), the LP's overload stretch, the
static LP's waits over a few days and the polytope radii at the id's ψ. ``python -m
tsg_envs.bench --family JSON`` writes the rows and the README's family block.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs.harness import Unit, evaluate
from tsg_envs.instances import draw_instance
from tsg_envs.rollout import LPAgent
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

__all__ = ["FamilyRow", "WINDOW_IDS", "family_row", "family_rows", "format_family"]

#: The registered single-window ids the report covers by default.
WINDOW_IDS: tuple[str, ...] = (
    "tsg/Screening-Window-5F-v1",
    "tsg/Screening-Window-10F-v1",
    "tsg/Screening-Window-20F-v1",
    "tsg/Screening-Window-50F-v1",
    "tsg/Screening-Window-10F-Sigma15-v1",
    "tsg/Screening-Window-10F-Sigma150-v1",
)


@dataclass(frozen=True)
class FamilyRow:
    """One single-window instance.

    Attributes:
        env_id: The id.
        instance_seed: The seed.
        draws: Draws the seed took (the binding step rejected ``draws - 1``).
        least: U_min at the drawn rates.
        risk_optimal: U* at the drawn rates.
        scale: The rate factor applied.
        capacity_loss: Share of the LP's value lost to capacity (>= 0.01 by the rule).
        stretch: The LP's overload stretch λ (1: no overload).
        lp_mean_wait: The static LP's mean wait per passenger over the days, minutes.
        lp_p95_wait: Mean over the days of the LP's 95th-percentile wait, minutes.
        radius_median: Median polytope radius at the id's ψ (with its default risk slack).
        radius_min: Smallest polytope radius.
        days: Days the waits were averaged over.
    """

    env_id: str
    instance_seed: int
    draws: int
    least: float
    risk_optimal: float
    scale: float
    capacity_loss: float
    stretch: float
    lp_mean_wait: float
    lp_p95_wait: float
    radius_median: float
    radius_min: float
    days: int


def family_row(env_id: str, instance_seed: int, days: int = 3) -> FamilyRow:
    """Measure one instance (see :class:`FamilyRow`)."""
    env: Any = gym.make(env_id, instance_seed=instance_seed).unwrapped
    record = draw_instance(env.game.config, instance_seed)
    binding = record.binding
    if binding is None or binding.scale is None or binding.capacity_loss is None:
        raise ValueError(f"{env_id} is not a single-window id with the binding step")
    day_seeds = list(range(LEADERBOARD_SEED_BASE, LEADERBOARD_SEED_BASE + days))
    recs = evaluate({"lp": LPAgent}, [Unit(env_id, instance_seed)], day_seeds)
    radii = env.polytopes.radii
    return FamilyRow(
        env_id=env_id, instance_seed=instance_seed, draws=record.draws, least=binding.least,
        risk_optimal=binding.risk_optimal, scale=binding.scale,
        capacity_loss=binding.capacity_loss, stretch=float(env.lp_solution.stretch.max()),
        lp_mean_wait=float(np.mean([r.mean_wait for r in recs])),
        lp_p95_wait=float(np.mean([r.p95_wait for r in recs])),
        radius_median=float(np.median(radii)), radius_min=float(radii.min()), days=days,
    )


def _row(args: tuple[str, int, int]) -> FamilyRow:
    return family_row(*args)


def family_rows(
    env_ids: Sequence[str] = WINDOW_IDS,
    instance_seeds: Sequence[int] = tuple(range(100)),
    days: int = 3,
    workers: int = 1,
    progress: bool = True,
) -> list[FamilyRow]:
    """:func:`family_row` for every (id, seed), in ``workers`` processes."""
    jobs = [(e, int(s), days) for e in env_ids for s in instance_seeds]
    from tqdm.auto import tqdm

    if workers <= 1:
        return [_row(j) for j in tqdm(jobs, desc="family", unit="instance",
                                      disable=not progress)]
    with ProcessPoolExecutor(workers) as pool:
        return list(tqdm(pool.map(_row, jobs, chunksize=4), total=len(jobs), desc="family",
                         unit="instance", disable=not progress))


def format_family(rows: Sequence[FamilyRow]) -> str:
    """Markdown table per id: draws, stretch, capacity loss, LP waits and radii."""
    lines = [
        "| id | instances | draws rejected | λ > 1 | capacity loss, min / median "
        "| LP mean wait (min), mean / p95 / max | radius, median / min |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    ids = list(dict.fromkeys(r.env_id for r in rows))
    for env_id in ids:
        rs = [r for r in rows if r.env_id == env_id]
        seeds = [r.instance_seed for r in rs]
        waits = np.array([r.lp_mean_wait for r in rs])
        loss = np.array([r.capacity_loss for r in rs])
        lines.append(
            f"| `{env_id}` | {len(rs)} (seeds {min(seeds)}-{max(seeds)}) "
            f"| {sum(r.draws - 1 for r in rs)} | {sum(r.stretch > 1.0 for r in rs)} "
            f"| {100 * loss.min():.1f}% / {100 * np.median(loss):.1f}% "
            f"| {waits.mean():.1f} / {np.percentile(waits, 95):.1f} / {waits.max():.1f} "
            f"| {np.median([r.radius_median for r in rs]):.4f} "
            f"/ {min(r.radius_min for r in rs):.4f} |"
        )
    return "\n".join(lines)
