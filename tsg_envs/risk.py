"""Worst-case risk of a defender policy (SPEC §5), by probing it with every category.

The attacker knows the policy and picks its flight κ, method m and moment; nature picks its
level θ with prior P_θ. At every probed state of a day the policy is asked what it would do with
a passenger of each category c = ⟨θ, κ⟩ (the observation's category one-hot and the info's
``category``, ``theta`` and ``flight`` swapped in; queues, waits, history and clock kept). The
worst-case risk is

    Σ_θ P_θ · max over κ, m and probed states of (1 - z_m) L_{κ,m}

with z_m = Σ_t E_{t,m} π_t of the action the policy *proposes* (clipped at 0 and renormalised,
not projected: a penalty agent's leak shows). It is compared against the bound Σ_θ ψ_θ; each
level's term P_θ max (1 - z_m) L_{κ,m} against ψ_θ, with the project's one tolerance
``FEASIBILITY_TOL`` (1e-6, absolute, the polytope rows' own tolerance).

**States probed.** The day is rolled out once with the policy itself (``act``) from
``env.reset(seed)``; the visited states are s_0 … s_{N-1} (passenger i waiting) and s_N, the state
after the last passenger (queues after its load, clock at its arrival): an attacker may come
last. ``max_states`` probes a deterministic, evenly spaced subsample of them instead (documented
in the report's ``states_probed``); ``min_step`` drops the states before passenger ``min_step``
(the PettingZoo duel's attacker can reach s_1 … s_N, see :mod:`tsg_envs.duel`).

**Batched probing.** Probing the default environment takes (N + 1)·C = 46,900 policy queries. If
the agent has ``act_batch(obs, infos) -> actions`` the probe calls it on chunks instead of calling
``act`` once per query:

* ``obs``: a float32 array (B, obs_dim), each row an observation as ``act`` would receive it;
* ``infos``: a list of B info dicts (the reset/step info of that state with ``category``,
  ``theta``, ``flight`` replaced);
* returns an array (B, T) of allocations, row b what ``act(obs[b], infos[b])`` would return.

Probing calls ``act``/``act_batch`` on made-up (obs, info) pairs after the rollout, so an agent's
``act`` must be free of side effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs.game import Game
from tsg_envs.polytope import FEASIBILITY_TOL
from tsg_envs.rollout import Agent

__all__ = [
    "RiskReport",
    "worst_case_risk",
    "action_risk",
    "attack_gains",
    "risk_report_from_actions",
    "DEFAULT_PROBE_BATCH",
]

#: Rows per ``act_batch`` call of the probe.
DEFAULT_PROBE_BATCH: int = 4096


@dataclass(frozen=True)
class RiskReport:
    """Worst-case risk of a policy and the attack that achieves it.

    Attributes:
        risk: Σ_θ P_θ max_{κ,m,state} (1 - z_m) L_{κ,m}: the best-responding attacker's expected
            gain.
        bound: Σ_θ ψ_θ of the environment.
        per_theta: P_θ max_{κ,m,state} (1 - z_m) L_{κ,m}, (Θ,); compare with ψ_θ.
        best_flight: (Θ,) the attacker's best flight per level.
        best_method: (Θ,) its best method per level.
        best_time: (Θ,) its best moment (minutes from the day start) per level.
        states_probed: How many states were probed.
        risk_bound: ψ, (Θ,) (None when unknown).
        best_step: (Θ,) index of the best state: the passenger then waiting (N: after the
            last passenger). Ties go to the earliest state, then the lowest flight, then the
            lowest method.
        per_category: (C,) max over probed states and methods of (1 - z_m) L_{κ,m}: the gain of
            an attacker of that category's level who must use its flight.
    """

    risk: float
    bound: float
    per_theta: np.ndarray
    best_flight: np.ndarray
    best_method: np.ndarray
    best_time: np.ndarray
    states_probed: int
    risk_bound: np.ndarray | None = None
    best_step: np.ndarray | None = None
    per_category: np.ndarray | None = None

    @property
    def best_gain(self) -> np.ndarray:
        """(Θ,) the best response's gain per level, max (1 - z_m) L_{κ,m} (= per_theta / P_θ)."""
        if self.per_category is None or self.best_flight is None:
            raise ValueError("this report has no per-category gains")
        k = self.per_category.shape[0] // self.per_theta.shape[0]
        rows = np.arange(self.per_theta.shape[0])
        return self.per_category[rows * k + self.best_flight]

    @property
    def excess(self) -> float:
        """max_θ (per_theta_θ - ψ_θ) (or risk - bound when ψ is unknown); > 0 means a leak."""
        if self.risk_bound is None:
            return float(self.risk - self.bound)
        return float(np.max(self.per_theta - self.risk_bound))

    @property
    def within_bound(self) -> bool:
        """Whether every level's risk is within ψ_θ + ``FEASIBILITY_TOL`` (1e-6, absolute).

        The tolerance is the polytope rows' own: an allocation feasible to within 1e-6 has
        P_θ (1 - z_m) L_{κ,m} ≤ ψ_θ + 1e-6. Without per-level ψ the sum is compared with
        Σ_θ ψ_θ + Θ·1e-6.
        """
        if self.risk_bound is None:
            return bool(self.risk <= self.bound + self.per_theta.shape[0] * FEASIBILITY_TOL)
        return bool(np.all(self.per_theta <= self.risk_bound + FEASIBILITY_TOL))


def action_risk(game: Any, action: np.ndarray, flight: int) -> np.ndarray:
    """(1 - z_m) L_{κ,m} per method for an allocation ``action`` (..., T); returns (..., M)."""
    z = np.asarray(action, dtype=float) @ game.team_efficacy
    return (1.0 - z) * game.attack_loss[flight]


def _normalise(actions: np.ndarray) -> np.ndarray:
    """Clip at 0 and renormalise rows (uniform where a row has no positive mass)."""
    s = np.maximum(np.asarray(actions, dtype=float), 0.0)
    total = s.sum(axis=-1, keepdims=True)
    uniform = np.full_like(s, 1.0 / s.shape[-1])
    return np.where(total > 0, s / np.where(total > 0, total, 1.0), uniform)


def attack_gains(game: Game, actions: np.ndarray) -> np.ndarray:
    """An attacker's expected gain against probed allocations.

    Args:
        game: The instance.
        actions: (S, C, T) the allocation the policy proposes for a passenger of category c at
            probed state s (clipped at 0 and renormalised here).

    Returns:
        (S, C, M): (1 - z_m) L_{κ,m} with z_m = Σ_t E_{t,m} π_t and κ the flight of c.
    """
    a = _normalise(actions)
    if a.ndim != 3 or a.shape[1:] != (game.n_categories, game.n_teams):
        raise ValueError(
            f"actions must have shape (S, {game.n_categories}, {game.n_teams}), got {a.shape}"
        )
    z = a @ game.team_efficacy  # (S, C, M)
    loss = np.tile(game.attack_loss, (game.n_risk_levels, 1))  # (C, M), row c = θ·K + κ
    return (1.0 - z) * loss[None]


def risk_report_from_actions(
    game: Game,
    actions: np.ndarray,
    times: Sequence[float] | np.ndarray,
    steps: Sequence[int] | np.ndarray | None = None,
    risk_bound: np.ndarray | None = None,
) -> RiskReport:
    """The worst-case risk and best response from the allocations probed at some states.

    A pure function of its inputs (no environment): :func:`worst_case_risk` collects the
    allocations, this computes the best (κ, m, state) per level.

    Args:
        game: The instance (P_θ, E, L).
        actions: (S, C, T) the allocation proposed for category c at probed state s.
        times: (S,) the clock of each probed state, minutes from the day start.
        steps: (S,) the passenger index of each probed state (default 0 … S-1).
        risk_bound: ψ, (Θ,), for ``bound`` and ``within_bound`` (None: bound = nan).

    Returns:
        A :class:`RiskReport`; ties go to the earliest probed state, then the lowest flight,
        then the lowest method.
    """
    actions = np.asarray(actions, dtype=float)
    s_count = actions.shape[0]
    if s_count == 0:
        raise ValueError("no state was probed")
    times = np.asarray(times, dtype=float)
    steps = np.arange(s_count) if steps is None else np.asarray(steps, dtype=int)
    n_theta, k, m = game.n_risk_levels, game.n_flights, game.n_methods
    gains = attack_gains(game, actions).reshape(s_count, n_theta, k, m)
    per_theta_view = gains.transpose(1, 0, 2, 3).reshape(n_theta, -1)  # (Θ, S·K·M), s-major
    flat = per_theta_view.argmax(axis=1)
    best_s, best_k, best_m = np.unravel_index(flat, (s_count, k, m))
    best_gain = per_theta_view[np.arange(n_theta), flat]
    per_category = gains.max(axis=(0, 3)).reshape(-1)
    per_theta = game.attacker_prior * best_gain
    psi = None if risk_bound is None else np.asarray(risk_bound, dtype=float).copy()
    return RiskReport(
        risk=float(per_theta.sum()),
        bound=float("nan") if psi is None else float(psi.sum()),
        per_theta=per_theta,
        best_flight=np.asarray(best_k, dtype=int),
        best_method=np.asarray(best_m, dtype=int),
        best_time=times[best_s],
        states_probed=int(s_count),
        risk_bound=psi,
        best_step=steps[best_s],
        per_category=per_category,
    )


def _probe_actions(
    agent: Agent,
    obs_list: list[np.ndarray],
    info_list: list[dict[str, Any]],
    game: Game,
    cat_slice: slice,
    batch_size: int,
) -> np.ndarray:
    """(S, C, T) allocations of ``agent`` for every category at each stored state."""
    k, c_total, t = game.n_flights, game.n_categories, game.n_teams
    s_count = len(obs_list)
    cats = np.arange(c_total)
    thetas, flights = np.divmod(cats, k)
    out = np.empty((s_count, c_total, t))
    act_batch = getattr(agent, "act_batch", None)
    if act_batch is None:
        for i, (obs, info) in enumerate(zip(obs_list, info_list, strict=True)):
            for c in range(c_total):
                fake = obs.copy()
                fake[cat_slice] = 0.0
                fake[cat_slice.start + c] = 1.0
                fake_info = dict(info, category=c, theta=int(thetas[c]), flight=int(flights[c]))
                out[i, c] = np.asarray(agent.act(fake, fake_info), dtype=float)
        return out
    per_chunk = max(1, batch_size // c_total)  # whole states per call
    for start in range(0, s_count, per_chunk):
        stop = min(start + per_chunk, s_count)
        block = np.repeat(np.stack(obs_list[start:stop]), c_total, axis=0).astype(np.float32)
        block = block.reshape(stop - start, c_total, -1)
        block[:, :, cat_slice] = 0.0
        block[:, cats, cat_slice.start + cats] = 1.0
        infos = [
            dict(info_list[i], category=c, theta=int(thetas[c]), flight=int(flights[c]))
            for i in range(start, stop)
            for c in range(c_total)
        ]
        acts = np.asarray(act_batch(block.reshape((stop - start) * c_total, -1), infos))
        out[start:stop] = acts.reshape(stop - start, c_total, t)
    return out


def worst_case_risk(
    env: gym.Env,
    agent: Agent,
    seed: int | None = 0,
    max_states: int | None = None,
    *,
    min_step: int = 0,
    batch_size: int = DEFAULT_PROBE_BATCH,
) -> RiskReport:
    """Worst-case risk of ``agent`` on one day of ``env`` (probing every category).

    Args:
        env: The environment (its ``unwrapped`` must be a ``ScreeningEnv``). It is reset with
            ``seed`` and stepped through the day with ``agent.act``.
        agent: The defender policy; ``act`` (and ``act_batch`` if present, see the module
            docstring) must be free of side effects.
        seed: Seed of the day whose visited states are probed.
        max_states: Probe at most this many states, evenly spaced over s_{min_step} … s_N
            (``numpy.linspace`` rounded; None: every state). The subsample is deterministic.
        min_step: Skip the states before passenger ``min_step`` (1 gives the states the duel's
            attacker can reach).
        batch_size: Rows per ``act_batch`` call.

    Returns:
        A :class:`RiskReport` (``risk_bound`` = ``env.unwrapped.risk_bound``).
    """
    u: Any = env.unwrapped  # a ScreeningEnv (duck-typed)
    game = u.game
    n = game.n_passengers
    candidates = np.arange(min_step, n + 1)
    if candidates.size == 0:
        raise ValueError(f"min_step={min_step} leaves no state of a {n}-passenger day")
    if max_states is not None and max_states < candidates.size:
        if max_states < 1:
            raise ValueError(f"max_states must be >= 1, got {max_states}")
        idx = np.unique(np.linspace(0, candidates.size - 1, max_states).round().astype(int))
        candidates = candidates[idx]
    probe_at = set(candidates.tolist())
    obs_list: list[np.ndarray] = []
    info_list: list[dict[str, Any]] = []
    times: list[float] = []
    steps: list[int] = []

    obs, info = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        agent.reset()
    i = 0
    while True:
        if i in probe_at:
            obs_list.append(np.asarray(obs, dtype=np.float32).copy())
            info_list.append(dict(info))
            times.append(float(info["time"]))
            steps.append(i)
        if i >= n:
            break
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        i += 1
        if (terminated or truncated) and i < n:
            raise RuntimeError(f"the day ended after {i} of {n} passengers")
    actions = _probe_actions(
        agent, obs_list, info_list, game, u.obs_layout["category"], batch_size
    )
    return risk_report_from_actions(game, actions, times, steps, np.asarray(u.risk_bound))
