"""Resource-rate calibration: the capacity rule and the single-window binding step.

Provenance: SPEC §1's calibration (Σ_r f_r = ρ · team size · N / L, relative rates U[lo, hi]) and
the window horizon's binding step (``GameConfig.window_bind_overload``). It sits above the data
module (:mod:`tsg_envs.game`) because the binding step solves the window LP.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tsg_envs.game import Game, GameConfig
from tsg_envs.lp import solve_window_lp, window_edges

__all__ = ["calibrated_rates", "window_bind_scale"]


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


def window_bind_scale(game: Game, overload: float) -> float:
    """Common rate factor (≤ 1) making the single-window LP bind (see ``window_bind_overload``).

    The LP is solved with effectively infinite capacity; its delay-aware pick (the allocation of
    that optimum with the lowest peak utilisation) gives the smallest peak utilisation U* any
    risk-optimal allocation needs at the current rates. Rates are scaled by min(1, U* / overload).
    """
    length = float(np.diff(window_edges(game, None))[0])
    # Rates at which no resource can bind (each could screen every passenger of the day), yet
    # utilisations stay O(1) so that the pick's objective is far above the solver tolerances.
    ample = max(1.0, game.n_passengers / float((game.rates * length).min())) * 1.01
    unbounded = dataclasses.replace(game, rates=game.rates * ample, key=None)
    sol = solve_window_lp(unbounded, None)
    counts = sol.expected_counts[0]  # (C,)
    team_load = counts @ sol.policy[0]  # (T,) expected passengers per team over the day
    load = team_load @ game.team_members.astype(float)  # (R,)
    peak = float((load / (game.rates * length)).max())
    return min(1.0, peak / overload)
