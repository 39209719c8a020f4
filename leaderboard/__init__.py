"""The tsg-envs leaderboard: suites as data, evaluation, the rendered board, the paper's figures.

``python -m leaderboard evaluate --agent FILE|NAME --suite quick --out DIR`` evaluates a
submission (see :mod:`leaderboard.submission` for the format), sealed in its own process;
``--attacker FILE|NAME`` evaluates an attacker against the panel of defenders
(:mod:`leaderboard.attacker`); ``verify`` re-evaluates a result; ``render`` writes
``LEADERBOARD.md`` and the static page; ``paper`` regenerates the paper's experiments in
resumable units; ``frontier`` builds the risk-delay frontier (:mod:`leaderboard.frontier`).
Imports ``tsg_envs`` and (lazily, for baseline submissions and references) ``baselines``.
"""

from leaderboard.aggregate import aggregate_units, iqm_interval
from leaderboard.evaluate import evaluate_submission, evaluate_unit
from leaderboard.schema import SCHEMA, SCHEMA_VERSION, load_result, save_result, validate
from leaderboard.submission import SubmissionError, SubmissionSpec, load_submission
from leaderboard.suites import EVAL_SEED_BASE, SUITES, Suite, get_suite

__all__ = [
    "EVAL_SEED_BASE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SUITES",
    "Suite",
    "SubmissionError",
    "SubmissionSpec",
    "aggregate_units",
    "evaluate_submission",
    "evaluate_unit",
    "get_suite",
    "iqm_interval",
    "load_result",
    "load_submission",
    "save_result",
    "validate",
]
