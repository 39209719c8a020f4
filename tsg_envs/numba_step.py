"""The single environment's common step as one numba call (see :mod:`tsg_envs.kernel`).

Imported only at an environment's first step when the kernel is chosen: importing
:mod:`tsg_envs` never imports numba. Compiled once per machine and cached (``cache=True``:
numba writes under ``NUMBA_CACHE_DIR`` when it is set, else next to this file, else, when the
package directory is read-only, in the user's cache directory). Where numba can write none of
them, the kernel is compiled in every process instead (a warning says so).

The same floating-point operations as the numpy step, in the same order, so the results are bit
for bit the same: the small products are ``np.dot``, which numba hands to the same BLAS routines
numpy calls (``ddot``, ``dgemv``; checked against numpy in the tests), the sum of the proposal is
Python's ``math.fsum`` (the correctly rounded sum, ported below), and every other operation is
one IEEE operation on two doubles, with no fast-math (no contraction into fused multiply-adds, no
reassociation).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numba import njit

from tsg_envs.kernel_layout import (
    H_C,
    H_CAT,
    H_CLOCK,
    H_DAY,
    H_HIST,
    H_M,
    H_MIN,
    H_R,
    H_T,
    H_W,
    HEADER,
)
from tsg_envs.polytope import FEASIBILITY_TOL

__all__ = ["cached_jit", "entry_point", "fsum", "fused_step", "fused_step_unchecked"]

_TOL = FEASIBILITY_TOL
_TOL_REPROJECT = FEASIBILITY_TOL - 1e-12
#: As ``tsg_envs.env._HUGE``: proposals beyond it take the general path.
_HUGE = 1e150


def cached_jit(signature: str, error_model: Literal["python", "numpy"] = "python"
               ) -> Callable[[Callable[..., Any]], Any]:
    """``njit(signature)``, cached where numba can write a cache, else compiled uncached.

    ``error_model="numpy"`` drops the check for a zero divisor before each float division
    (IEEE results, the same for every divisor the caller guarantees non-zero).
    """

    def wrap(fn: Callable[..., Any]) -> Any:
        try:
            return njit(signature, cache=True, nogil=True, error_model=error_model)(fn)
        except RuntimeError as exc:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(exc):
                raise
            warnings.warn(f"tsg_envs: numba cannot cache the compiled step ({exc}); it is "
                          "compiled in every process (set NUMBA_CACHE_DIR to a writable "
                          "directory to keep it)", RuntimeWarning, stacklevel=2)
            return njit(signature, nogil=True, error_model=error_model)(fn)

    return wrap


@cached_jit("float64(float64[::1])")
def fsum(x: np.ndarray) -> float:
    """``math.fsum`` of finite doubles (CPython's algorithm: exact partials, half-even fix-up)."""
    p = np.empty(x.shape[0] + 1)
    n = 0
    for k in range(x.shape[0]):
        v = x[k]
        i = 0
        for jj in range(n):
            y = p[jj]
            if abs(v) < abs(y):
                v, y = y, v
            hi = v + y
            lo = y - (hi - v)
            if lo != 0.0:
                p[i] = lo
                i += 1
            v = hi
        n = i
        if v != 0.0:
            p[n] = v
            n += 1
    hi = 0.0
    lo = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        while n > 0:
            v = hi
            n -= 1
            y = p[n]
            hi = v + y
            yr = hi - v
            lo = y - yr
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            v = hi + y
            yr = v - hi
            if y == yr:
                hi = v
    return hi


_SIGNATURE = (
    "UniTuple(float64, 2)(float64[::1], float64[::1], float32[::1], float32[:, ::1], "
    "float64[:, ::1], float64[:, ::1], int64, int64, int64, float64, float64, int64)"
)


@cached_jit(_SIGNATURE)
def fused_step(
    a: np.ndarray,
    blob: np.ndarray,
    obs: np.ndarray,
    out_obs: np.ndarray,
    out_queues: np.ndarray,
    out_actions: np.ndarray,
    row: int,
    c: int,
    nxt: int,
    gap: float,
    clock: float,
    onehot: int,
) -> tuple[float, float]:
    """Check ``a`` for category ``c``, screen the passenger, write the next observation.

    Returns ``(wait, violation)``, or ``(0.0, -1.0)`` with nothing changed when the proposal is
    not the common case (negative, huge or non-finite entries, outside the tolerance, or
    renormalising it would need an α-projection): the caller then takes the numpy path.

    Args:
        a: the proposal, (T,).
        blob: :func:`tsg_envs.kernel_layout.pack`'s buffer (its state is read and updated).
        obs: the environment's observation buffer (updated in place).
        out_obs: row ``row`` receives the returned observation.
        out_queues: row ``row`` receives the queues before this passenger's load.
        out_actions: row ``row`` receives the executed action.
        row: the output row.
        c: the waiting passenger's category.
        nxt: the next passenger's category, -1 if this one is the day's last.
        gap: the time to the next arrival (not used for the last passenger).
        clock: the clock after the step (the next arrival, or the current one for the last).
        onehot: the observation index of the one-hot entry now set.
    """
    r = int(blob[H_R])
    t = int(blob[H_T])
    w = int(blob[H_W])
    nc = int(blob[H_C])
    m = int(blob[H_M])
    o_q = HEADER
    o_min = o_q + r
    o_hist = o_min + r + t
    o_rates = o_hist + nc
    o_mem = o_rates + r
    o_idx = o_mem + t * r
    o_a = o_idx + t * w
    o_b = o_a + nc * m * t
    o_scale = o_b + nc * m
    o_inv = o_scale + nc
    o_scratch = o_inv + nc
    prod = blob[o_scratch: o_scratch + m]  # np.dot(..., out): no array made per product
    load = blob[o_scratch + m: o_scratch + m + r]
    # The check (env.step's hot path) -------------------------------------------------
    for k in range(t):
        v = a[k]
        if not (v >= 0.0 and v <= _HUGE):
            return 0.0, -1.0
    total = fsum(a)
    a_c = blob[o_a + c * m * t: o_a + (c + 1) * m * t].reshape((m, t))
    b_c = blob[o_b + c * m: o_b + (c + 1) * m]
    np.dot(a_c, a, prod)
    rows = prod[0] - b_c[0]
    for k in range(1, m):
        v = prod[k] - b_c[k]
        if v > rows:
            rows = v
    dev = abs(total - 1.0)
    if not (dev <= _TOL and rows <= _TOL):
        return 0.0, -1.0
    viol = 0.0
    if rows > viol:
        viol = rows
    if dev > viol:
        viol = dev
    e = out_actions[row]
    if total == 1.0:
        for k in range(t):
            e[k] = a[k]
    else:
        for k in range(t):
            e[k] = a[k] / total
        if rows + blob[o_scale + c] * dev * 2.0 > _TOL_REPROJECT:
            np.dot(a_c, e, prod)
            worst = prod[0] - b_c[0]
            for k in range(1, m):
                v = prod[k] - b_c[k]
                if v > worst:
                    worst = v
            if worst > _TOL:
                return 0.0, -1.0
    # The transition (ScreeningDay.step, expected queues) --------------------------------
    q = blob[o_q: o_q + r]
    minutes = blob[o_min: o_min + r + t]
    rates = blob[o_rates: o_rates + r]
    out_queues[row, :] = q
    wait = np.dot(e, minutes[r:])
    np.dot(e, blob[o_mem: o_mem + t * r].reshape((t, r)), load)
    for k in range(r):
        q[k] = load[k] + q[k]
    blob[o_hist + c] += 1.0
    if nxt >= 0:
        for k in range(r):
            v = q[k] - gap * rates[k]
            q[k] = v if v >= 0.0 else 0.0
    for k in range(r):
        minutes[k] = q[k] / rates[k]
    for k in range(t):
        best = minutes[int(blob[o_idx + k * w])]
        for jj in range(1, w):
            v = minutes[int(blob[o_idx + k * w + jj])]
            best = best if best >= v else v
        minutes[r + k] = best
    # The observation (ScreeningEnv._advance) ------------------------------------------
    obs[int(blob[H_HIST]) + c] = np.float32(blob[o_hist + c] * blob[o_inv + c])
    obs[onehot] = 0.0
    if nxt >= 0:
        obs[int(blob[H_CAT]) + nxt] = 1.0
    o_obs = int(blob[H_MIN])
    for k in range(r + t):
        obs[o_obs + k] = np.float32(minutes[k])
    x = clock / blob[H_DAY]
    obs[int(blob[H_CLOCK])] = np.float32(1.0 if 1.0 < x else x)
    out_obs[row, :] = obs
    return wait, viol


def entry_point(dispatcher: Any) -> Any:
    """The one compiled overload's own entry point, or the dispatcher if numba has no such thing.

    Calling it skips the dispatcher's matching of argument types (about 0.3 µs of a 1.5 µs
    call), so the caller must pass exactly the signature's types: C-contiguous arrays of the
    right dtypes, Python ints and floats.
    """
    try:
        (signature,) = dispatcher.signatures
        return dispatcher.overloads[signature].entry_point
    except (AttributeError, KeyError, TypeError, ValueError):
        return dispatcher


#: :func:`fused_step` without the dispatcher's type matching (see :func:`entry_point`).
fused_step_unchecked = entry_point(fused_step)
