"""Resource-rate calibration: the capacity rule and the single-window binding step.

Provenance: SPEC §1's calibration (Σ_r f_r = ρ · team size · N / L, relative rates U[lo, hi]) and
the window horizon's binding step (``GameConfig.window_tightness``), ours. It sits above the data
module (:mod:`tsg_envs.game`) because the binding step solves the window LP.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tsg_envs.game import Game, GameConfig
from tsg_envs.lp import SolverPath, least_peak_utilisation, solve_window_lp, window_edges

__all__ = [
    "MAX_WINDOW_DRAWS",
    "MIN_CAPACITY_LOSS",
    "WindowBinding",
    "calibrated_rates",
    "window_binding",
]


def calibrated_rates(
    config: GameConfig, n_passengers: int, day_length: float, rng: np.random.Generator
) -> np.ndarray:
    """f_r: relative shares U[relative_rate_range] scaled to Σ_r f_r = ρ · team size · N / L.

    Args:
        config: The family (ρ is ``config.resolved_capacity_ratio``).
        n_passengers: N, the day's passengers.
        day_length: L, minutes from the first to the last possible arrival.
        rng: The instance's rate sub-stream (one draw of |R| uniforms).
    """
    relative = rng.uniform(*config.relative_rate_range, size=config.n_resources)
    total_rate = config.resolved_capacity_ratio * config.team_size * n_passengers / day_length
    return relative / relative.sum() * total_rate


#: The single-window LP must lose at least this fraction of its value to capacity (its value with
#: the capacity rows at least this much below its value without them).
MIN_CAPACITY_LOSS = 0.01
#: Draws tried per instance seed before giving up (a draw is rejected with probability about 1/2
#: on the registered window ids, so 64 failures mean the config cannot bind).
MAX_WINDOW_DRAWS = 64


@dataclass(frozen=True)
class WindowBinding:
    """The single-window binding step's verdict on one draw.

    Attributes:
        least: U_min, the least peak utilisation any allocation reaches at the drawn rates.
        risk_optimal: U*, the peak utilisation of the LP's allocation with capacity unbounded
            (the risk-optimal screening, spread as evenly as its optimum allows).
        scale: The common rate factor s = U* - τ (U* - U_min), or None when U* <= U_min.
        capacity_loss: (V_inf - V) / |V_inf| at the scaled rates (V: the LP's value Σ P_θ u_θ),
            or None when ``scale`` is None.
        accepted: ``scale`` is set and ``capacity_loss >= MIN_CAPACITY_LOSS``.
    """

    least: float
    risk_optimal: float
    scale: float | None
    capacity_loss: float | None

    @property
    def accepted(self) -> bool:
        """Whether the draw binds without overload (see the class docstring)."""
        return self.capacity_loss is not None and self.capacity_loss >= MIN_CAPACITY_LOSS


#: The LP path of the calibration: the reference path, so that the single-window families'
#: instances (whose rates come from the LP's allocation) stay what they were to the last bit
#: whatever the default path's roundoff (the v1 ids' games are pinned: tests/test_window_v2.py).
_CALIBRATION_PATH = SolverPath(reference=True)


def _value(game: Game) -> float:
    sol = solve_window_lp(game, None, path=_CALIBRATION_PATH)
    return float(game.attacker_prior @ sol.utility[0])


def window_binding(game: Game, tightness: float) -> WindowBinding:
    """Scale a single-window draw's rates so that capacity binds without overload, or reject it.

    Utilisations are of the LP's planned capacity u f_r |w| (u = ``game.planning_utilisation``;
    the servers' own utilisation is u times it). At the drawn rates, U_min is the least peak
    utilisation any allocation of the window's passengers reaches and U* the peak utilisation
    of the LP's (unique) allocation when capacity is unbounded. Scaling every rate by s divides
    both by s. Capacity binds without overload exactly when U_min <= s < U*; the rule takes
    s = U* - τ (U* - U_min) with τ = ``tightness`` in (0, 1), then requires the LP to lose at
    least :data:`MIN_CAPACITY_LOSS` of its value to capacity. A draw with U* <= U_min (its
    risk-optimal screening fits whatever the capacity, as long as any screening fits) cannot
    bind and is rejected.
    """
    length = float(np.diff(window_edges(game, None))[0])
    n = float(game.n_passengers)
    # The LP's planned capacity u f_r |w| (u = Game.planning_utilisation, 1 on v1 ids).
    capacity = game.planning_utilisation * game.rates * length
    least = least_peak_utilisation(game, n, capacity)
    # Rates at which no resource can bind (each could screen every passenger of the day), yet
    # utilisations stay O(1) so that the pick's objective is far above the solver tolerances.
    ample = max(1.0, n / float(capacity.min())) * 1.01
    unbounded = dataclasses.replace(game, rates=game.rates * ample, key=None)
    sol = solve_window_lp(unbounded, None, path=_CALIBRATION_PATH)
    load = sol.expected_counts[0] @ sol.policy[0] @ game.team_members.astype(float)  # (R,)
    risk_optimal = float((load / capacity).max())
    if risk_optimal <= least * (1.0 + 1e-6):
        return WindowBinding(least, risk_optimal, None, None)
    scale = risk_optimal - tightness * (risk_optimal - least)
    v_inf = float(unbounded.attacker_prior @ sol.utility[0])
    v = _value(dataclasses.replace(game, rates=game.rates * scale, key=None))
    return WindowBinding(least, risk_optimal, scale, (v_inf - v) / max(abs(v_inf), 1e-12))
