"""The tsg-envs leaderboard: suites as data, sealed evaluation, verification, the rendered board.

``python -m leaderboard evaluate --agent FILE|NAME --suite quick --out DIR`` evaluates a
submission (see :mod:`leaderboard.submission` for the format), sealed in its own process;
``--attacker FILE|NAME`` evaluates an attacker against the panel of defenders
(:mod:`leaderboard.attacker`); ``verify`` re-evaluates a result; ``render`` writes
``LEADERBOARD.md`` and the static page; ``frontier`` builds the risk-delay frontier
(:mod:`leaderboard.frontier`). The paper's experiments are not part of the package: they live in
the repository's ``experiments/paper`` (``python -m experiments.paper`` from its root).

Results are trusted only as far as their signatures and episodes go (SPEC §7): ``signing``
(the machine's Ed25519 key, the committed trusted keys) and ``summary`` (a result's aggregate,
track and notes, recomputed from its episodes by the evaluator, ``render`` and ``verify``
alike); official rows play fresh days (:class:`~leaderboard.suites.Days`).

Inside, from the bottom up: ``suites``, ``schema``, ``aggregate`` and ``signing`` (data,
statistics and signatures); ``summary``;
``submission`` (loading a defender); ``units`` (the unit environments of both roles, loading an
attacker); ``sealed`` (the sandbox); ``runner`` (:class:`~leaderboard.runner.Execution` and the
local / Ray map over units); ``evaluate`` and ``attacker`` (the two tracks); ``verify``;
``render`` and ``readme``; ``__main__``. Imports ``tsg_envs`` and (lazily, for baseline
submissions and references) ``baselines``, never the experiments or the benchmarks.
"""

from leaderboard.aggregate import aggregate_units, iqm_interval
from leaderboard.evaluate import evaluate_submission, evaluate_unit
from leaderboard.runner import Execution
from leaderboard.schema import SCHEMA, SCHEMA_VERSION, load_result, save_result, validate
from leaderboard.submission import SubmissionError, SubmissionSpec, load_submission
from leaderboard.suites import SUITES, Suite, get_suite

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "SUITES",
    "Execution",
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
