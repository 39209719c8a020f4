"""Shared fixtures: a hand-built game small enough to compute everything about it by hand.

The tiny game (see :func:`tiny_game`):

* 2 resources with rates f = (0.5, 0.25) passengers/minute (binary-exact, so float results are
  exact);
* 2 teams: team 0 = {r0}, team 1 = {r0, r1};
* 1 method; both resources detect it with e = 0.5, so E = (0.5, 1 - 0.5·0.5) = (0.5, 0.75);
* 2 risk levels with P = (0.5, 0.5) and q = (0.5, 0.5); 2 flights with L = (2, 4), sizes (2, 1);
* categories c = θ·2 + κ: c0 = (θ0, κ0), c1 = (θ0, κ1), c2 = (θ1, κ0), c3 = (θ1, κ1).

Tests derive their expected values from these numbers in comments.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tsg_envs import Arrivals, Game, GameConfig

# Results the tests evaluate are signed with a throwaway key of this test process, never with
# the machine's own (leaderboard.signing.key_path): a test never writes to ~/.config.
_KEY_DIR = tempfile.mkdtemp(prefix="tsg-test-key-")
os.environ["TSG_ENVS_SIGNING_KEY"] = os.path.join(_KEY_DIR, "signing_key")


def tiny_game(**overrides: Any) -> Game:
    """The hand-built game described in the module docstring; fields can be overridden."""
    fields: dict[str, Any] = dict(
        config=GameConfig(n_resources=2, n_methods=1, n_risk_levels=2, team_size=1, n_flights=2),
        seed=None,
        rates=np.array([0.5, 0.25]),
        team_members=np.array([[True, False], [True, True]]),
        resource_efficacy=np.array([[0.5], [0.5]]),
        team_efficacy=np.array([[0.5], [0.75]]),
        attacker_prior=np.array([0.5, 0.5]),
        risk_mix=np.array([0.5, 0.5]),
        attack_loss=np.array([[2.0], [4.0]]),
        departures=np.array([3.0, 3.0]),
        flight_sizes=np.array([2, 1]),
        arrival_mean=2.0,
        arrival_std=0.0,
        arrival_cutoff=1.0,
        day_start=0.0,
        day_length=4.0,
    )
    fields.update(overrides)
    return Game(**fields)


def arrivals(times: list[float], thetas: list[int], flights: list[int], k: int = 2) -> Arrivals:
    """A hand-made day of passengers (c = θ·k + κ)."""
    th = np.asarray(thetas, dtype=np.int64)
    fl = np.asarray(flights, dtype=np.int64)
    return Arrivals(
        times=np.asarray(times, dtype=float), categories=th * k + fl, thetas=th, flights=fl
    )


def tiered(cases: dict[str, Any], default: set[str]) -> list[Any]:
    """``cases``' names to parametrize with: those outside ``default`` carry the hostile mark.

    Each sealed run starts a process (CONTRIBUTING.md): the default tier keeps one case of each
    attack family, so every defence is exercised by default, and CI runs them all.
    """
    assert default <= set(cases)
    return [c if c in default else pytest.param(c, marks=pytest.mark.hostile)
            for c in sorted(cases)]


#: A risk bound under which every allocation of the tiny game is feasible: the worst risk of any
#: category is P·(1 - 0.5)·L ≤ 0.5·0.5·4 = 1 < 2.
LOOSE_PSI = np.array([2.0, 2.0])



def pytest_sessionfinish(session: Any) -> None:
    """Where ``python -m benchmarks.tests`` asks: this process's sealed trees' CPU seconds.

    Sealed submissions' processes are reaped outside pytest's process tree, so the benchmark's
    count of the tree's CPU time misses them; each test process (each pytest-xdist worker) writes
    its own total to ``$TSG_TESTS_SEALED_CPU_DIR/<pid>``.
    """
    out = os.environ.get("TSG_TESTS_SEALED_CPU_DIR")
    sandbox = sys.modules.get("leaderboard.sandbox")
    if out and sandbox is not None:
        Path(out, str(os.getpid())).write_text(f"{sandbox.sealed_cpu_seconds()!r}\n")
