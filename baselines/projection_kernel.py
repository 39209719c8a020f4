"""The α-projection's forward as one compiled call (numba), for CPU tensors.

:class:`baselines.projection.AlphaProjection` runs about thirty small torch operations per call
(gathers, a batched product, masks, a reduction); on a mini-batch of 128 each costs a few
microseconds of dispatch, which made the projection about a third of an actor update. This
kernel does the same arithmetic in one call: per row, the products ``a_k·d`` as a sequential
sum (the order of torch's small-matrix ``bmm`` kernel), the ratios, the minimum, the shrink, and
``y = y0 + α d``, each an IEEE operation on two doubles with no fast-math, so its outputs and,
through the hand-written backward, its gradients are bit for bit autograd's
(``tests/test_projection.py`` checks both against the plain torch form).

numba comes with Tianshou (a dependency of every learning baseline); it is imported only when a
projection first runs on CPU tensors, compiled once per machine and cached like
:mod:`tsg_envs.numba_step`. Without numba, or on another device, the torch form runs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["alpha_backward", "alpha_forward"]


def _jit():  # type: ignore[no-untyped-def]
    """``njit``, compiled per argument types at first use and cached where numba can write."""

    def wrap(fn):  # type: ignore[no-untyped-def]
        try:
            return njit(cache=True, nogil=True)(fn)
        except RuntimeError as exc:  # no writable cache location: compile per process
            if "cannot cache" not in str(exc):
                raise
            return njit(nogil=True)(fn)

    return wrap


@_jit()
def alpha_forward(s, onehot, cat, a_ub, centers, slack0, scale, save, y, d, alpha, a_k, w,
                  moves, keep):  # type: ignore[no-untyped-def]
    """``y`` (B, T) = the α-projection of ``s`` (B, T) onto each row's category.

    Args:
        s: (B, T) points (float32 or float64; computed in float64).
        onehot: (B, C) the observations' category one-hot, or an empty (0, 0) array when ``cat``
            gives the categories. A row whose one-hot is all zero (no passenger: max ≤ 0.5) is
            returned unchanged.
        cat: (B,) categories, or an empty array to read them from ``onehot`` (its argmax).
        a_ub: (C, K, T) every category's inequality rows.
        centers: (C, T) the centres y0.
        slack0: (C, K) ``b - A y0``.
        scale: ``1 - shrink``.
        save: also fill the outputs below ``y``, which the backward needs (else they are left
            untouched and may be empty arrays).
        y: (B, T) output, in ``s``'s dtype (rounded from float64 as torch's ``to`` rounds).
        d: (B, T) output ``s - y0``.
        alpha: (B,) output α.
        a_k: (B, T) output: the binding row (the ratio's minimum).
        w: (B,) output ``(σ_k / a_k·d) / a_k·d``.
        moves: (B,) output: α moves with ``s`` (the binding ratio is below 1, on a row with a
            passenger).
        keep: (B,) output: the row was returned unchanged (no passenger).
    """
    n_rows, n_teams = s.shape
    n_k = a_ub.shape[1]
    from_onehot = cat.shape[0] == 0
    n_cat = onehot.shape[1]
    db = np.empty(n_teams)
    for b in range(n_rows):
        keep_b = False
        if from_onehot:
            c = 0
            top = onehot[b, 0]
            for j in range(1, n_cat):
                if onehot[b, j] > top:
                    top = onehot[b, j]
                    c = j
            keep_b = not (top > 0.5)
        else:
            c = cat[b]
        for t in range(n_teams):
            db[t] = np.float64(s[b, t]) - centers[c, t]
        rmin = np.inf
        kmin = 0
        den_min = 1.0
        pos_min = False
        for k in range(n_k):
            acc = 0.0
            for t in range(n_teams):
                acc += a_ub[c, k, t] * db[t]
            pos = acc > 0.0
            den = acc if pos else 1.0
            ratio = slack0[c, k] / den if pos else np.inf
            if ratio < rmin:
                rmin = ratio
                kmin = k
                den_min = den
                pos_min = pos
        a1 = min(rmin, 1.0)
        cond = a1 < 1.0
        shrunk = a1 * scale
        al = max(shrunk, 0.0) if cond else 1.0
        for t in range(n_teams):
            y[b, t] = s[b, t] if keep_b else centers[c, t] + al * db[t]
        if save:
            for t in range(n_teams):
                d[b, t] = db[t]
                a_k[b, t] = a_ub[c, kmin, t]
            alpha[b] = al
            w[b] = (slack0[c, kmin] / den_min) / den_min
            moves[b] = cond and shrunk >= 0.0 and rmin <= 1.0 and pos_min and not keep_b
            keep[b] = keep_b


@_jit()
def alpha_backward(g, g_alpha, alpha, a_k, w, moves, keep, scale,
                   out):  # type: ignore[no-untyped-def]
    """``out`` (B, T) = ∂L/∂s from ``g`` = ∂L/∂y, in the order autograd computes it.

    Args:
        g: (B, T) the gradient at the output (float32 or float64).
        g_alpha: (B,) ``Σ_t g d`` in float64 (torch's row sum, as autograd reduces it).
        alpha: (B,) α, as :func:`alpha_forward` saved it.
        a_k: (B, T) the binding rows, saved.
        w: (B,) the weights, saved.
        moves: (B,) the rows whose α moves, saved.
        keep: (B,) the rows returned unchanged, saved.
        scale: ``1 - shrink``.
        out: (B, T) output, in ``g``'s dtype.
    """
    n_rows, n_teams = g.shape
    for b in range(n_rows):
        # autograd: the division's backward -grad (σ / den) / den after the masks and the
        # shrink's product; then bmm(aᵀ, ·) with one nonzero entry gives a_k* times it
        g_ad = -(g_alpha[b] * scale) * w[b] if moves[b] else 0.0
        for t in range(n_teams):
            gb = np.float64(g[b, t])
            out[b, t] = gb if keep[b] else gb * alpha[b] + a_k[b, t] * g_ad
