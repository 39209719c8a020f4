"""The project's named seed ranges, in one place (days never renumber).

A day of passengers is drawn by ``env.reset(seed=s)``; which seeds a purpose uses (every caller
imports its range from here, under the name in the first column):

=========================  =====================  =============================================
range                      seeds                  used by
=========================  =====================  =============================================
training days              ``s * 1_000_003 + k``  run seed s, day k (:func:`training_day_seed`)
``VALIDATION_SEED_BASE``   ``5_000 + i``          learning curves, keep-best, es-guided's
                                                  validation
``EVAL_SEED_BASE``         ``10_000 + k``         the baselines' results tables and training
                                                  CLI (:func:`evaluation_day_seeds`)
``DUEL_SEED_BASE``         ``2_000_000 + i``      the duel table (``experiments/duel_table.py``)
``LEADERBOARD_SEED_BASE``  ``2**31 + k``          every leaderboard suite, the paper's
                                                  experiments (``experiments/paper``), the
                                                  risk-delay frontier, the gamma study
=========================  =====================  =============================================

Training of run seed 0 stays below the validation range for fewer than 5,000 days (about 4.7
million steps of ``tsg/Screening-v1``); :func:`seed_ranges_overlap` checks a concrete plan.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "TRAIN_SEED_STRIDE",
    "VALIDATION_SEED_BASE",
    "EVAL_SEED_BASE",
    "DUEL_SEED_BASE",
    "LEADERBOARD_SEED_BASE",
    "training_day_seed",
    "evaluation_day_seeds",
    "seed_ranges_overlap",
]

#: Stride between runs' training day seeds: training day k of run seed s is ``s * stride + k``.
TRAIN_SEED_STRIDE: int = 1_000_003
#: Validation days (learning curves, keep-best) are ``VALIDATION_SEED_BASE + i``.
VALIDATION_SEED_BASE: int = 5_000
#: Evaluation days of the baselines' results tables are ``EVAL_SEED_BASE + k``.
EVAL_SEED_BASE: int = 10_000
#: Days of the duel table are ``DUEL_SEED_BASE + i``.
DUEL_SEED_BASE: int = 2_000_000
#: First arrival seed of every leaderboard suite; training must stay below it.
LEADERBOARD_SEED_BASE: int = 2**31


def training_day_seed(seed: int, k: int) -> int:
    """Seed of training day ``k`` of a run with ``seed``: ``seed * 1_000_003 + k``."""
    return int(seed) * TRAIN_SEED_STRIDE + int(k)


def evaluation_day_seeds(n_days: int, base: int = EVAL_SEED_BASE) -> list[int]:
    """The evaluation day seeds ``base, base + 1, ..., base + n_days - 1``."""
    if n_days < 1:
        raise ValueError(f"need at least one evaluation day, got {n_days}")
    return list(range(int(base), int(base) + int(n_days)))


def seed_ranges_overlap(seed: int, n_train_days: int, eval_seeds: Sequence[int]) -> bool:
    """Whether training days 0..n_train_days-1 of ``seed`` share a seed with ``eval_seeds``."""
    lo = training_day_seed(seed, 0)
    hi = lo + max(int(n_train_days), 0)
    return any(lo <= s < hi for s in eval_seeds)
