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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from leaderboard.aggregate import aggregate_units, iqm_interval
    from leaderboard.evaluate import evaluate_submission, evaluate_unit
    from leaderboard.runner import Execution
    from leaderboard.schema import SCHEMA, SCHEMA_VERSION, load_result, save_result, validate
    from leaderboard.submission import SubmissionError, SubmissionSpec, load_submission
    from leaderboard.suites import SUITES, Suite, get_suite

#: Where each public name lives: imported when first used, so that a sandboxed submission's
#: process (which imports ``leaderboard.sealed``) does not pay for the evaluator's modules.
_WHERE = {
    "aggregate_units": "aggregate", "iqm_interval": "aggregate",
    "evaluate_submission": "evaluate", "evaluate_unit": "evaluate",
    "Execution": "runner",
    "SCHEMA": "schema", "SCHEMA_VERSION": "schema", "load_result": "schema",
    "save_result": "schema", "validate": "schema",
    "SubmissionError": "submission", "SubmissionSpec": "submission",
    "load_submission": "submission",
    "SUITES": "suites", "Suite": "suites", "get_suite": "suites",
}


def __getattr__(name: str) -> Any:
    """A public name of the package, imported from its module on first use (:data:`_WHERE`)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'leaderboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"leaderboard.{where}"), name)
    globals()[name] = value
    return value


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
