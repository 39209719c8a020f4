"""The layout of the buffer the compiled step reads (:mod:`tsg_envs.kernel`).

One float64 array: a header of sizes and observation positions, the day's state (queues ξ,
minutes, history h: :class:`tsg_envs.ScreeningDay` keeps views of it), then the constants of the
instance. :func:`pack` builds it; ``tsg_envs.numba_step`` reads it in the same order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HEADER", "pack", "state_size"]


#: Floats of the header (sizes and observation positions); the day's state starts after it.
HEADER = 16
#: Header slots (floats holding small integers, and the day length).
H_R, H_T, H_W, H_C, H_M, H_CAT, H_HIST, H_MIN, H_CLOCK, H_DAY = range(10)


def state_size(r: int, t: int, c: int) -> int:
    """Floats of the day's state in the buffer: queues, minutes (backlog, waits), history."""
    return r + (r + t) + c


def pack(
    *,
    rates: np.ndarray,
    members: np.ndarray,
    team_idx: np.ndarray,
    a_risk: np.ndarray,
    b_risk: np.ndarray,
    row_scale: np.ndarray,
    inv_expected: np.ndarray,
    category_start: int,
    history_start: int,
    minutes_start: int,
    clock_pos: int,
    day_length: float,
) -> np.ndarray:
    """The kernel's buffer: header, a zeroed state, then the constants in the kernel's order.

    Args:
        rates: f_r, (R,).
        members: team membership as floats, (T, R).
        team_idx: (T, W) resource indices of each team (smaller teams repeat a member).
        a_risk: risk rows of every category, (C, M, T).
        b_risk: their right-hand sides, (C, M).
        row_scale: largest |coefficient| of each category's risk rows, (C,).
        inv_expected: 1 / expected daily count of each category, (C,).
        category_start: observation index of the category one-hot.
        history_start: observation index of the history block.
        minutes_start: observation index of the backlog (the waits follow it).
        clock_pos: observation index of the clock.
        day_length: the day's length, minutes.
    """
    c, m, t = a_risk.shape
    r = rates.shape[0]
    w = team_idx.shape[1]
    head = np.zeros(HEADER)
    head[[H_R, H_T, H_W, H_C, H_M]] = r, t, w, c, m
    head[[H_CAT, H_HIST, H_MIN, H_CLOCK]] = category_start, history_start, minutes_start, clock_pos
    head[H_DAY] = day_length
    # ... and scratch space for the products A_c·π (M) and π·membership (R).
    parts = [head, np.zeros(state_size(r, t, c)), rates, members, team_idx, a_risk, b_risk,
             row_scale, inv_expected, np.zeros(m + r)]
    return np.ascontiguousarray(
        np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])
    )
