"""Attackers for the duel: random and the exact best response (the DQN one: ``dqn_attacker``).

Every attacker implements :class:`AttackerPolicy` (``reset(seed)`` at the start of a day,
``act(obs, info) -> int`` on the duel attacker's observation and info, see
:mod:`tsg_envs.duel`); :func:`play_duel` plays one day of the duel between an attacker and a
defender ``Agent``.

* :class:`RandomAttacker`: strikes at a uniformly random arrival of the day with a uniformly
  random (flight, method).
* :class:`BestResponseAttacker`: the exact best response of SPEC §5 made playable. Before each
  day it probes the defender over that day's attack-free trajectory
  (:func:`tsg_envs.risk.worst_case_risk` with ``min_step=1``: the states the duel's attacker can
  reach) and strikes at the best (flight, method, moment) of its level. It knows the defender
  and the day (the seed): it is the worst case, not a realistic attacker. Against a
  deterministic defender in expected queue mode its realised gain equals the probe's exactly
  (the tests check this); the probe scores the *proposed* allocation, so in ``"project"`` mode
  against a defender that proposes infeasible allocations the realised gain can be lower.
* :class:`~baselines.dqn_attacker.DQNAttacker` (in :mod:`baselines.dqn_attacker`, with torch):
  a masked DQN trained against a fixed defender on the onlooker observation.

:func:`attacker_gain` scores any attacker against the best response on the same days, in the
real duel. This module imports no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, DuelParallelEnv, encode_attack
from tsg_envs.env import ScreeningEnv
from tsg_envs.risk import RiskReport, worst_case_risk
from tsg_envs.rollout import Agent

__all__ = [
    "AttackerPolicy",
    "DuelOutcome",
    "play_duel",
    "RandomAttacker",
    "BestResponseAttacker",
    "AttackerScore",
    "attacker_gain",
]

#: Entropy word of the random attacker's per-day stream.
_RANDOM_STREAM = 0x5EED


class AttackerPolicy(Protocol):
    """What every attacker implements."""

    def reset(self, seed: int | None = None) -> None:
        """Start a day (``seed`` is the duel's reset seed; attackers that plan may use it)."""
        ...

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """0 to wait, 1 + κ·M + m to strike (the duel's attacker action)."""
        ...


@dataclass(frozen=True)
class DuelOutcome:
    """One day of the duel.

    Attributes:
        theta: The attacker's level.
        struck: Whether it struck.
        flight: Its flight (-1 if it never struck).
        method: Its method (-1 if it never struck).
        strike_step: Index (in the attack-free day) of the passenger it cut in ahead of.
        strike_time: τ at which it joined the line (-1 if never).
        gain: Its gain (the attacker's return).
        detection_probability: z_m of the allocation it was screened with (-1 if never).
        defender_return: The defender's return (-waits - penalties - gain).
        mean_wait: The passengers' mean wait (the attacker included if it struck), minutes.
        decisions: Defender decisions (passengers of the day, +1 if the attacker struck).
    """

    theta: int
    struck: bool
    flight: int
    method: int
    strike_step: int
    strike_time: float
    gain: float
    detection_probability: float
    defender_return: float
    mean_wait: float
    decisions: int


def play_duel(
    duel: DuelParallelEnv,
    attacker: AttackerPolicy,
    defender: Agent,
    seed: int | None,
    theta: int | None = None,
) -> DuelOutcome:
    """Play one day of the parallel duel.

    Args:
        duel: The game.
        attacker: Its ``reset(seed)`` is called first.
        defender: A fixed defender ``Agent`` (its ``reset()`` is called if present).
        seed: The day's reset seed.
        theta: Fix the attacker's level (None: drawn from P_θ).

    Returns:
        The :class:`DuelOutcome`.
    """
    options = None if theta is None else {"attacker_theta": int(theta)}
    obs, infos = duel.reset(seed=seed, options=options)
    attacker.reset(seed)
    if hasattr(defender, "reset"):
        defender.reset()
    waits: list[float] = []
    d_return = gain = 0.0
    strike_step = -1
    while duel.agents:
        a = attacker.act(obs[ATTACKER], infos[ATTACKER])
        d = defender.act(obs[DEFENDER], infos[DEFENDER])
        obs, rewards, _, _, infos = duel.step({ATTACKER: a, DEFENDER: d})
        waits.append(float(infos[DEFENDER]["wait"]))
        d_return += rewards[DEFENDER]
        gain += rewards[ATTACKER]
        if duel.attacker_waiting:  # it stands where passenger `index` of the day stood
            strike_step = duel.screening.day.index
    info = infos[ATTACKER]
    return DuelOutcome(
        theta=int(info["theta"]),
        struck=bool(info["struck"]),
        flight=int(info["flight"]),
        method=int(info["method"]),
        strike_step=strike_step,
        strike_time=float(info["strike_time"]),
        gain=float(gain),
        detection_probability=float(info["detection_probability"]),
        defender_return=float(d_return),
        mean_wait=float(np.mean(waits)),
        decisions=len(waits),
    )


# Random ------------------------------------------------------------------------------------------
class RandomAttacker:
    """Strikes at a uniformly random arrival with a uniformly random (flight, method).

    Args:
        game: The instance (its day length N, flights K and methods M are public).
        seed: Seeds the choices when ``reset`` gets no seed.
    """

    def __init__(self, game: Any, seed: int = 0) -> None:
        self._n = int(game.n_passengers)
        self._n_strikes = int(game.n_flights * game.n_methods)
        self._rng = np.random.default_rng(seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Draw the day's strike moment and (flight, method) (from ``seed`` if given)."""
        if seed is not None:
            self._rng = np.random.default_rng([int(seed), _RANDOM_STREAM])
        self._strike_at = int(self._rng.integers(self._n))
        self._strike = 1 + int(self._rng.integers(self._n_strikes))
        self._i = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """Wait until the drawn arrival, then strike."""
        i = self._i
        self._i += 1
        if i == self._strike_at and not info["struck"]:
            return self._strike
        return WAIT


# Exact best response ----------------------------------------------------------------------------
class BestResponseAttacker:
    """The exact best response of SPEC §5 to a fixed defender, as a playable attacker.

    Args:
        defender: The defender it responds to (deterministic, side-effect-free ``act``; the
            same object plays the duel).
        **env_kwargs: The duel's ``ScreeningEnv`` kwargs (the same game and queue mode).
    """

    def __init__(self, defender: Agent, **env_kwargs: Any) -> None:
        self.defender = defender
        self._env = ScreeningEnv(**env_kwargs)
        self.report: RiskReport | None = None
        self._plans: dict[int, RiskReport] = {}
        self._i = 0

    def plan(self, seed: int | None) -> RiskReport:
        """The best response on day ``seed`` over the duel-reachable states (cached per seed).

        It becomes the :attr:`report` that :meth:`act` plays.
        """
        if seed is None or seed not in self._plans:
            report = worst_case_risk(self._env, self.defender, seed=seed, min_step=1)
            if seed is not None:
                self._plans[seed] = report
        else:
            report = self._plans[seed]
        self.report = report
        return report

    def reset(self, seed: int | None = None) -> None:
        """Plan the day ``seed`` (the duel's reset seed)."""
        self.plan(seed)
        self._i = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """Strike at step best_step - 1 (it then cuts in ahead of passenger best_step)."""
        assert self.report is not None, "call reset(seed) first"
        i = self._i
        self._i += 1
        if info["struck"]:
            return WAIT
        theta = int(info["theta"])
        if i == int(self.report.best_step[theta]) - 1:
            m = int(self._env.game.n_methods)
            return encode_attack(
                int(self.report.best_flight[theta]), int(self.report.best_method[theta]), m
            )
        return WAIT

    def gain(self, theta: int) -> float:
        """The planned (expected) gain of level ``theta`` on the planned day."""
        assert self.report is not None, "call reset(seed) first"
        return float(self.report.best_gain[theta])


# Scoring ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackerScore:
    """An attacker's expected gain against the exact best response's on the same days.

    Attributes:
        gain: Mean over days of Σ_θ P_θ (gain of the attacker playing level θ).
        best_response_gain: The same for the exact best response (the duel-reachable worst-case
            risk of the defender).
        fraction: gain / best_response_gain.
        per_theta_gain: (Θ,) mean gain per level.
        per_theta_best: (Θ,) mean best-response gain per level.
        seeds: The days (reset seeds).
    """

    gain: float
    best_response_gain: float
    fraction: float
    per_theta_gain: np.ndarray
    per_theta_best: np.ndarray
    seeds: tuple[int, ...]


def attacker_gain(
    attacker: AttackerPolicy,
    defender: Agent,
    seeds: Sequence[int],
    best: BestResponseAttacker | None = None,
    **env_kwargs: Any,
) -> AttackerScore:
    """Score ``attacker`` against ``defender`` as a fraction of the exact best response.

    Every level θ is played on every day (weighted by P_θ), in the queue mode of
    ``env_kwargs`` (default expected, where gains are deterministic); the best response is
    planned on the same days.

    Args:
        attacker: The attacker to score.
        defender: A deterministic defender ``Agent``.
        seeds: Reset seeds of the days.
        best: A :class:`BestResponseAttacker` of the same defender and kwargs to reuse (its
            plans are cached per day); None builds one.
        **env_kwargs: The duel's ``ScreeningEnv`` kwargs.
    """
    env_kwargs.setdefault("queue_mode", "expected")
    duel = DuelParallelEnv(**env_kwargs)
    if best is None:
        best = BestResponseAttacker(defender, **env_kwargs)
    prior = duel.game.attacker_prior
    n_theta = duel.game.n_risk_levels
    got = np.zeros((len(seeds), n_theta))
    opt = np.zeros((len(seeds), n_theta))
    for i, seed in enumerate(seeds):
        report = best.plan(int(seed))
        opt[i] = report.best_gain
        for theta in range(n_theta):
            got[i, theta] = play_duel(duel, attacker, defender, int(seed), theta=theta).gain
    gain = float(np.mean(got @ prior))
    best_gain = float(np.mean(opt @ prior))
    return AttackerScore(
        gain=gain,
        best_response_gain=best_gain,
        fraction=gain / best_gain if best_gain > 0 else float("nan"),
        per_theta_gain=got.mean(axis=0),
        per_theta_best=opt.mean(axis=0),
        seeds=tuple(int(s) for s in seeds),
    )
