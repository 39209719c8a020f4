"""The per-passenger LP of slack-guided and myopic, solved exactly and batched.

min π·(w + ε s) + μ ‖π − π^slack‖₁ over the waiting passenger's polytope (the method is
:mod:`baselines.slack_guided`; μ = 0 is :mod:`baselines.myopic`).

Purity and speed. ``act`` must be a function of (obs, info) alone (the risk probe calls it on
made-up states), and the harness calls ``act_batch`` once per step for every day at once. Each
passenger's LP is solved exactly by :class:`PerPassengerLP`, batched, from its own data only: a
row of a batch is bit for bit that passenger solved alone, whatever else is in the batch and
whatever was solved before. Myopic takes the cheapest of its polytope's vertices (enumerated
once per category); slack-guided takes the LP's optimum without the risk rows where it is
feasible, the slack LP's own allocation where a dual certificate proves it optimal, and
otherwise pivots a small dual simplex. Its CPU per day through the harness, against the static
LP's, is the agents table of ``python -m tsg_envs.bench --agents``. :class:`HighsPerPassengerLP`
(one HiGHS model per category, solved from a canonical basis, as before) is kept as the
reference the tests check it against.
"""

from __future__ import annotations

import itertools
import math

import highspy
import numpy as np
from scipy import sparse

from baselines.slack_lp import SlackLPSolution, clean_allocations, highs_model
from tsg_envs.game import Game
from tsg_envs.polytope import PolytopeSet

__all__ = ["capacity_use", "PerPassengerLP", "HighsPerPassengerLP"]

#: A basic variable within this of its bounds counts as feasible (the dual simplex stops).
_PRIMAL_TOL: float = 1e-12
#: Pivot elements below this are never chosen.
_PIVOT_TOL: float = 1e-9


def capacity_use(game: Game) -> np.ndarray:
    """s_t = Σ_{r∈t} 1/f_r, normalised to mean 1: capacity team t uses per passenger, (T,)."""
    s = game.team_members.astype(float) @ (1.0 / game.rates)
    return s / s.mean()


class PerPassengerLP:
    """min π·(w + ε s) + μ ‖π − π^slack‖₁ over each passenger's polytope, batched and exact.

    Every passenger's LP is solved exactly, for a whole batch of passengers at once
    (:meth:`solve_batch`; :meth:`solve` is a batch of one, bit for bit the same row), as a
    function of the passenger's own data alone (nothing is remembered between calls):

    * μ = 0 (myopic): the LP's optimum is a vertex of the polytope, so it is the cheapest of
      the category's vertices, enumerated once at construction (:func:`_polytope_vertices`);
      ties go to the first in enumeration order.
    * μ > 0: with π = π^slack + a − b (a ≥ 0 mass moved onto a team, 0 ≤ b ≤ π^slack mass moved
      off it) the LP has M + 1 rows (Σa − Σb = 0 and the risk rows A a − A b + s = b − margin −
      A π^slack, slacks s ≥ 0) and 2T + M bounded columns of cost (w + μ, μ − w, 0). Without
      the risk rows its optimum is greedy: every team dearer than the cheapest by more than 2μ
      hands its guide mass to the cheapest (ties: the first). (1) Where that meets the risk rows
      it is the optimum. (2) Otherwise, where π^slack is proven optimal by a dual certificate
      (:meth:`_guide_optimal`), π^slack. (3) Otherwise a bounded dual simplex from the greedy
      basis (:meth:`_pivot`: the most violated basic variable leaves, ties to the first; the
      column of least ratio enters, ties to the first), the vertex solved from its final basis.
      On ``tsg/Screening-v1`` about 80% of passengers end at (1), 15% at (2), 5% at (3).

    A passenger whose simplex does not finish within ``max_pivots`` pivots (cycling, which the
    rules do not exclude) is solved by :class:`HighsPerPassengerLP` instead.

    Args:
        game: The instance.
        polytopes: The environment's polytopes.
        mu: μ (0: the myopic LP, no guide needed).
        tie_break: ε.
        guide: The slack LP solution (required when ``mu > 0``).
        margin: Risk-row tightening.
        prices: Minutes added to every team's cost, (T,) (default none; learned by
            :mod:`baselines.es_guided`): the LP then minimises π·(w + p + ε s) + μ‖π − π^slack‖₁.
        max_pivots: Dual simplex pivots before a passenger falls back to HiGHS.
    """

    def __init__(
        self,
        game: Game,
        polytopes: PolytopeSet,
        mu: float,
        tie_break: float = 1e-5,
        guide: SlackLPSolution | None = None,
        margin: float = 1e-9,
        prices: np.ndarray | None = None,
        max_pivots: int = 64,
    ) -> None:
        # The reference validates the arguments (and is the fallback; its models are built
        # lazily, so it costs nothing unless used).
        self.reference = HighsPerPassengerLP(game, polytopes, mu, tie_break, guide, margin,
                                             prices)
        self.polytopes = polytopes
        self.mu = float(mu)
        self.guide = self.reference.guide
        self.max_pivots = int(max_pivots)
        t, m = game.n_teams, game.n_methods
        self._t, self._m = t, m
        self._bias = self.reference.bias
        a_risk = np.asarray(polytopes.A_ub[:, :m, :], dtype=float)  # (C, M, T)
        b_risk = np.asarray(polytopes.b_ub[:, :m], dtype=float) - float(margin)
        self._a_risk, self._b_risk = a_risk, b_risk
        if self.guide is None:
            self._vertices = _polytope_vertices(a_risk, b_risk)
            return
        self._edges = np.asarray(self.guide.window_edges[1:-1], dtype=float)
        self._p = np.asarray(self.guide.policy, dtype=float)  # (W, C, T)
        # b' − A π^slack: the risk rows' right-hand side in (a, b, s), π^slack's own slack.
        self._rhs = b_risk[None] - np.einsum("cmt,wct->wcm", a_risk, self._p)
        self._feasible = (self._rhs >= -_PRIMAL_TOL).all(axis=-1)  # π^slack meets b − margin
        self._tight = (self._rhs <= _PRIMAL_TOL) & self._feasible[..., None]
        self._pairs = ii, jj = np.triu_indices(t, 1)
        # 1 / (A_ki − A_kj) for every row k and pair of teams (0 where parallel), (C, M, pairs);
        # -inf for the teams outside the guide's support, (W, C, T).
        diff = a_risk[:, :, ii] - a_risk[:, :, jj]
        with np.errstate(divide="ignore"):
            self._cross = np.where(diff != 0.0, 1.0 / np.where(diff != 0.0, diff, 1.0), 0.0)
        self._outside = np.where(self._p > 0.0, 0.0, -np.inf)
        self._cols = [[tuple(col) for col in ac.T.tolist()] for ac in a_risk]  # A_{:,t} per c

    def solve(self, category: int, waits: np.ndarray, time: float) -> np.ndarray:
        """The optimal allocation for a passenger of ``category`` at ``time`` facing ``waits``.

        Args:
            category: c.
            waits: w_t, minutes, (T,).
            time: Arrival time, minutes from the day start (picks the guide's window).

        Returns:
            π, (T,), inside the category's polytope.
        """
        return self.solve_batch(np.array([int(category)]), np.asarray(waits, float)[None],
                                np.array([float(time)]))[0]

    def solve_batch(self, categories: np.ndarray, waits: np.ndarray, times: np.ndarray
                    ) -> np.ndarray:
        """:meth:`solve` for a batch of passengers, (B,) categories, (B, T) waits, (B,) times."""
        cats = np.asarray(categories, dtype=np.int64)
        cost_w = np.asarray(waits, dtype=float) + self._bias
        rows = np.arange(cats.shape[0])
        if self.guide is None:  # myopic: the cheapest vertex (NaN padding never wins)
            verts = self._vertices[cats]  # (B, V, T)
            value = np.einsum("bvt,bt->bv", verts, cost_w)
            pi = verts[rows, np.argmin(np.nan_to_num(value, nan=np.inf), axis=1)]
            hard = rows
        else:
            win = np.searchsorted(self._edges, np.asarray(times, dtype=float), side="right")
            pi, hard = self._guided(cats, win, cost_w, rows)
        pi /= pi.sum(axis=1, keepdims=True)
        if hard.size:  # solved vertices, to float rounding: cleaned as the HiGHS answers are
            polys = self.polytopes
            ch = cats[hard]
            x = np.maximum(pi[hard], 0.0)
            x /= x.sum(axis=1, keepdims=True)
            bad = (np.einsum("bkt,bt->bk", polys.A_ub[ch], x) - polys.b_ub[ch]).max(axis=1) > 0
            if bad.any():
                x[bad] = clean_allocations(x[bad], ch[bad], polys)
            pi[hard] = x
        return pi

    def _guided(self, cats: np.ndarray, win: np.ndarray, cost_w: np.ndarray, rows: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """μ > 0: (π, the rows solved by pivots); see the class docstring."""
        guide = self._p[win, cats]
        cheap = np.argmin(cost_w, axis=1)
        give = cost_w - cost_w[rows, cheap][:, None] > 2.0 * self.mu
        moved = np.where(give, guide, 0.0)
        shift = moved.sum(axis=1)
        pi = guide - moved
        pi[rows, cheap] += shift
        slack = self._b_risk[cats] - np.einsum("bmt,bt->bm", self._a_risk[cats], pi)
        hard = np.flatnonzero(slack.min(axis=1) < -_PRIMAL_TOL)
        if not hard.size:
            return pi, hard
        proven = self._guide_optimal(cats[hard], win[hard], cost_w[hard])
        pi[hard] = guide[hard]
        hard = hard[~proven]
        if hard.size:
            cats_h, win_h = cats[hard], win[hard]
            args = zip(cats_h.tolist(), guide[hard].tolist(), cost_w[hard].tolist(),
                       cheap[hard].tolist(), give[hard].tolist(), shift[hard].tolist(),
                       slack[hard].tolist(), self._rhs[win_h, cats_h].tolist(), strict=True)
            for i, (c, *row) in zip(hard.tolist(), args, strict=True):
                x = self._pivot(self._cols[c], *row)
                pi[i] = (x if x is not None else  # pragma: no cover - cycling: HiGHS
                         self.reference.solve(c, cost_w[i] - self._bias, _window_time(
                             self.guide, int(win[i]))))
        return pi, hard

    def _guide_optimal(self, cats: np.ndarray, win: np.ndarray, cost_w: np.ndarray
                       ) -> np.ndarray:
        """Whether π^slack is proven optimal for each row, bool (n,) (False: not proven).

        π^slack (feasible, tight risk rows R, support S) is optimal iff some duals z ≥ 0 of
        its tight rows make g = w + Σ_{k∈R} z_k A_k spread by at most 2μ from the cheapest team
        to the dearest team of S: F(z) = max_S g − min g ≤ 2μ (then every move off π^slack
        costs at least what it saves). Checked on each single tight row k (z = z_k e_k): F is
        convex and piecewise linear in z_k, so its least value over z_k ≥ 0 is at 0 or where
        two teams' g cross, and those points are all tried. For |R| = 1 this decides; for
        |R| ≥ 2 a row it does not prove goes to the simplex.
        """
        ii, jj = self._pairs
        # z_k where teams i and j cross on tight row k, (w_j − w_i) / (A_ki − A_kj); 0 where they
        # never cross or the row is not tight (F(0) > 2μ here: the greedy start moved mass, so
        # those candidates prove nothing).
        z = ((cost_w[:, jj] - cost_w[:, ii])[:, None, :] * self._cross[cats]
             * self._tight[win, cats][:, :, None])
        np.maximum(z, 0.0, out=z)
        # Teams first, so the reductions over teams run over whole blocks of candidates:
        # g is (T, n, M, pairs).
        g = (cost_w.T[:, :, None, None]
             + self._a_risk[cats].transpose(2, 0, 1)[..., None] * z[None])
        top = (g + self._outside[win, cats].T[:, :, None, None]).max(axis=0)
        proven = (top - g.min(axis=0) <= 2.0 * self.mu + _PRIMAL_TOL).any(axis=(1, 2))
        return proven & self._feasible[win, cats]

    def _pivot(self, cols: list[tuple[float, ...]], p: list[float], w: list[float], cheap: int,
               give: list[bool], shift: float, slack: list[float], rhs: list[float]
               ) -> list[float] | None:
        """One row's bounded dual simplex from the greedy basis; π (None: not within the cap).

        Columns: a_t (mass onto team t, [0, ∞)), b_t (mass off it, [0, p_t]), s_k (risk row k's
        slack, [0, ∞)); rows: Σa − Σb = 0 and A(a − b) + s = rhs. Column a_t is (1, A_{:,t})
        and b_t its negative, so b's pivot-row entries and reduced costs follow from a's
        (α_b = −α_a, d_b = 2μ − d_a). Python floats: a row takes a few pivots of a 4-row LP,
        where numpy's per-call cost would dominate.
        """
        t_n, m = self._t, self._m
        k = m + 1
        two_mu = 2.0 * self.mu
        n_ab = 2 * t_n
        # Basis {a_cheap, s_1..s_M}: B⁻¹ = [[1, 0], [−A_{:,cheap}, I]], duals (w_cheap + μ, 0).
        basis = [cheap, *range(n_ab, n_ab + m)]
        binv = [[1.0] + [0.0] * m]
        for i in range(m):
            row = [-cols[cheap][i]] + [0.0] * m
            row[i + 1] = 1.0
            binv.append(row)
        xb = [shift, *slack]
        wc = w[cheap]
        d_a = [wt - wc for wt in w]
        d_s = [0.0] * m
        upper = list(give)  # b_t at its upper bound p_t
        in_basis = [False] * (n_ab + m)
        for j in basis:
            in_basis[j] = True
        for _ in range(self.max_pivots + 1):
            # Leaving: the most violated basic variable (first on ties).
            worst, r, above = _PRIMAL_TOL, -1, False
            for i, j in enumerate(basis):
                v = xb[i]
                if -v > worst:
                    worst, r, above = -v, i, False
                elif t_n <= j < n_ab and v - p[j - t_n] > worst:
                    worst, r, above = v - p[j - t_n], i, True
            if r < 0:
                break
            rho = binv[r]
            r0, rr = rho[0], rho[1:]
            if m == 3:
                r1, r2, r3 = rr
                alpha = [r0 + r1 * x + r2 * y + r3 * z for x, y, z in cols]
            else:
                alpha = [r0 + sum(x * y for x, y in zip(rr, col, strict=True)) for col in cols]
            # Entering: least (move·d)⁺ / |α| among columns that move x_r back toward its
            # bound (first on ties, in the order a, b, s).
            sgn = 1.0 if above else -1.0
            best, q = math.inf, -1
            for t in range(t_n):
                al = alpha[t]
                if not in_basis[t] and sgn * al > _PIVOT_TOL:
                    ratio = max(d_a[t], 0.0) / abs(al)
                    if ratio < best:
                        best, q = ratio, t
            for t in range(t_n):
                if in_basis[t_n + t] or p[t] <= 0.0:
                    continue
                move = -1.0 if upper[t] else 1.0
                al = -alpha[t]
                if sgn * move * al > _PIVOT_TOL:
                    ratio = max(move * (two_mu - d_a[t]), 0.0) / abs(al)
                    if ratio < best:
                        best, q = ratio, t_n + t
            for i in range(m):
                al = rr[i]
                if not in_basis[n_ab + i] and sgn * al > _PIVOT_TOL:
                    ratio = max(d_s[i], 0.0) / abs(al)
                    if ratio < best:
                        best, q = ratio, n_ab + i
            if q < 0:  # pragma: no cover - nothing can enter: infeasible, never for a polytope
                return None
            # The entering column, u = B⁻¹ col_q, and its α, d and current value.
            if q < n_ab:
                t = q % t_n
                sign = -1.0 if q >= t_n else 1.0
                col = [sign, *(sign * x for x in cols[t])]
                al_q = sign * alpha[t]
                d_q = two_mu - d_a[t] if q >= t_n else d_a[t]
                x_q = p[t] if q >= t_n and upper[t] else 0.0
            else:
                col = [0.0] * k
                col[q - n_ab + 1] = 1.0
                al_q, d_q, x_q = rr[q - n_ab], d_s[q - n_ab], 0.0
            u = [sum(x * y for x, y in zip(row, col, strict=True)) for row in binv]
            u_r = u[r]
            step = (xb[r] - (p[basis[r] - t_n] if above else 0.0)) / u_r
            xb = [xv - step * uv for xv, uv in zip(xb, u, strict=True)]
            xb[r] = x_q + step
            theta = d_q / al_q
            d_a = [dv - theta * av for dv, av in zip(d_a, alpha, strict=True)]
            d_s = [dv - theta * av for dv, av in zip(d_s, rr, strict=True)]
            pivot = [x / u_r for x in rho]
            binv = [[x - uv * y for x, y in zip(row, pivot, strict=True)]
                    for row, uv in zip(binv, u, strict=True)]
            binv[r] = pivot
            old = basis[r]
            in_basis[old], in_basis[q] = False, True
            if t_n <= old < n_ab:
                upper[old - t_n] = above
            basis[r] = q
        else:
            return None
        # The vertex: nonbasic columns at their bounds, the basic ones solved from B⁻¹.
        b_eff = [0.0, *rhs]
        pi = list(p)
        for t in range(t_n):
            if upper[t] and not in_basis[t_n + t]:
                pi[t] = 0.0
                b_eff[0] += p[t]
                for i in range(m):
                    b_eff[i + 1] += cols[t][i] * p[t]
        for row, j in zip(binv, basis, strict=True):
            if j < n_ab:
                v = sum(x * y for x, y in zip(row, b_eff, strict=True))
                pi[j % t_n] += v if j < t_n else -v
        return pi


def _window_time(guide: SlackLPSolution, w: int) -> float:
    """A time inside window ``w`` of ``guide`` (for the HiGHS fallback)."""
    return float(guide.window_edges[w])


def _polytope_vertices(a_risk: np.ndarray, b_risk: np.ndarray) -> np.ndarray:
    """Every vertex of {π ∈ Δ, A π ≤ b} per category, (C, V, T), padded with NaN rows.

    A vertex has |R| + 1 nonzero entries S for some set R of tight rows: π_S solves
    [1ᵀ; A_{R,S}] π_S = [1; b_R]. Every (R, S) with |S| = |R| + 1 is solved (715 systems for
    10 teams and 3 rows) and the feasible solutions kept (to 1e-12), in the order of
    ``itertools.combinations`` over |R| = 0..M, S, then R.
    """
    c, m, t = a_risk.shape
    found: list[np.ndarray] = []
    for r in range(m + 1):
        for supp in itertools.combinations(range(t), r + 1):
            for tight in itertools.combinations(range(m), r):
                mat = np.ones((c, r + 1, r + 1))
                rhs = np.ones((c, r + 1))
                if r:
                    mat[:, 1:, :] = a_risk[:, list(tight)][:, :, list(supp)]
                    rhs[:, 1:] = b_risk[:, list(tight)]
                ok = np.abs(np.linalg.det(mat)) > 1e-12
                x = np.zeros((c, r + 1))
                if ok.any():
                    x[ok] = np.linalg.solve(mat[ok], rhs[ok][..., None])[..., 0]
                v = np.zeros((c, t))
                v[:, list(supp)] = x
                ok &= (x >= -_PRIMAL_TOL).all(axis=1)
                ok &= (np.einsum("cmt,ct->cm", a_risk, v) <= b_risk + _PRIMAL_TOL).all(axis=1)
                v[~ok] = np.nan
                found.append(v)
    verts = np.stack(found, axis=1)  # (C, candidates, T)
    keep = ~np.isnan(verts[..., 0])
    width = int(keep.sum(axis=1).max())
    out = np.full((c, width, t), np.nan)
    for ci in range(c):
        out[ci, :keep[ci].sum()] = verts[ci, keep[ci]]
    return out


class HighsPerPassengerLP:
    """The reference: one HiGHS model per category, min π·(w + ε s) + μ ‖π − π^slack‖₁.

    Solves the same LP as :class:`PerPassengerLP`, one passenger at a time; kept as the
    reference that tests check the batched solver against, and as its fallback for a passenger
    whose dual simplex does not finish.

    Args:
        game: The instance.
        polytopes: The environment's polytopes.
        mu: μ (0: no L1 term, no auxiliary variables, no guide needed).
        tie_break: ε.
        guide: The slack LP solution (required when ``mu > 0``).
        margin: Risk-row tightening.
        prices: Minutes added to every team's cost, (T,) (default none; learned by
            :mod:`baselines.es_guided`): the LP then minimises π·(w + p + ε s) + μ‖π − π^slack‖₁.
    """

    def __init__(
        self,
        game: Game,
        polytopes: PolytopeSet,
        mu: float,
        tie_break: float = 1e-5,
        guide: SlackLPSolution | None = None,
        margin: float = 1e-9,
        prices: np.ndarray | None = None,
    ) -> None:
        if mu > 0 and guide is None:
            raise ValueError("mu > 0 needs the slack LP solution as guide")
        self.polytopes = polytopes
        self.mu = float(mu)
        self.guide = guide if mu > 0 else None
        self._t = t = game.n_teams
        m = game.n_methods
        self.bias = tie_break * capacity_use(game)
        if prices is not None:
            prices = np.asarray(prices, dtype=float)
            if prices.shape != (t,) or not np.isfinite(prices).all():
                raise ValueError(f"prices must be {t} finite numbers, got {prices!r}")
            self.bias = self.bias + prices
        self._n_col = 2 * t if self.mu > 0 else t
        self._cols = np.arange(self._n_col, dtype=np.int32)
        self._cost = np.full(self._n_col, self.mu)
        self._l1_rows = np.arange(m + 1, m + 1 + 2 * t, dtype=np.int32)
        self._margin = float(margin)
        self._m = m
        # Built on a category's first passenger (a day rarely sees every category); each model
        # then stays in the window its last passenger arrived in.
        self._models: dict[int, highspy.Highs] = {}
        self._window: dict[int, int] = {}
        self._basis: dict[int, highspy.HighsBasis] = {}

    def _build(self, c: int) -> highspy.Highs:
        """Category ``c``'s model with its L1 rows for window 0, and its canonical basis.

        The canonical basis is the optimum of the model's canonical costs (zero waits) in
        window 0, so it depends on the category alone, never on the calls before.
        """
        m, t, polys = self._m, self._t, self.polytopes
        a_risk = polys.A_ub[c, :m]
        b_risk = polys.b_ub[c, :m] - self._margin
        if self.guide is not None:
            eye = np.eye(t)
            a = np.block(
                [
                    [a_risk, np.zeros((m, t))],
                    [np.ones((1, t)), np.zeros((1, t))],
                    [-eye, eye],  # d - π >= -p
                    [eye, eye],  # d + π >= p
                ]
            )
            p = self.guide.policy[0, c]
            lo = np.concatenate([np.full(m, -np.inf), [1.0], -p, p])
            hi = np.concatenate([b_risk, [1.0], np.full(2 * t, np.inf)])
        else:
            a = np.vstack([a_risk, np.ones((1, t))])
            lo = np.concatenate([np.full(m, -np.inf), [1.0]])
            hi = np.concatenate([b_risk, [1.0]])
        canonical = np.concatenate([self.bias, np.full(self._n_col - t, self.mu)])
        h = highs_model(
            canonical, sparse.csc_array(a), lo, hi,
            np.zeros(self._n_col), np.full(self._n_col, np.inf),
        )
        # HiGHS keeps the scaling of a model's first solve; without scaling, a solve started
        # from a given basis is a function of the model data alone.
        h.setOptionValue("simplex_scale_strategy", 0)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:  # pragma: no cover
            raise RuntimeError(
                f"per-passenger LP of category {c}: {h.modelStatusToString(h.getModelStatus())}"
            )
        self._basis[c] = h.getBasis()
        self._window[c] = 0
        return h

    def solve(self, category: int, waits: np.ndarray, time: float) -> np.ndarray:
        """The optimal allocation for a passenger of ``category`` at ``time`` facing ``waits``.

        Args:
            category: c.
            waits: w_t, minutes, (T,).
            time: Arrival time, minutes from the day start (picks the guide's window).

        Returns:
            π, (T,), inside the category's polytope.
        """
        t = self._t
        h = self._models.get(category)
        if h is None:
            h = self._models[category] = self._build(category)
        if self.guide is not None:
            w = int(self.guide.window_of(time))
            if w != self._window[category]:
                p = self.guide.policy[w, category]
                inf = np.full(2 * t, highspy.kHighsInf)
                h.changeRowsBounds(2 * t, self._l1_rows, np.concatenate([-p, p]), inf)
                self._window[category] = w
        cost = self._cost
        cost[:t] = waits
        cost[:t] += self.bias
        h.changeColsCost(self._n_col, self._cols, cost)
        h.clearSolver()  # forget the last solve, then warm-start from the canonical basis
        h.setBasis(self._basis[category])
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:  # pragma: no cover
            h.clearSolver()  # retry once from scratch before giving up
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                raise RuntimeError(
                    f"per-passenger LP of category {category}: "
                    f"{h.modelStatusToString(h.getModelStatus())}"
                )
        x = np.maximum(np.asarray(h.getSolution().col_value[:t]), 0.0)
        x /= x.sum()
        polys = self.polytopes
        if (polys.A_ub[category] @ x - polys.b_ub[category]).max() > 0:
            cat = np.array([category])
            x = clean_allocations(x[None, :], cat, polys)[0]
        return x
