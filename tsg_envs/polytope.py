"""Per-category action polytopes, their interior points, and the α-projection (numpy).

Provenance: the risk constraint is equation (1) of Shah et al. (AAAI 2020) with U⁺ = 0 and
U⁻ = -L; the α-projection is their Section "α-projection"; the centre rule (Chebyshev centre
inside the simplex's affine hull, tie broken toward the uniform allocation) is SPEC §3.

For the arriving category c = ⟨θ, κ⟩ the feasible allocations π ∈ R^T are

    A_ub π ≤ b_ub    with rows  m = 0..M-1:  -P_θ L_{κ,m} E_{:,m} · π ≤ ψ_θ - P_θ L_{κ,m}
                                 M + t:       -π_t ≤ 0
    A_eq π = b_eq    with A_eq = 1ᵀ (1 × T), b_eq = [1].
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

from tsg_envs import highs, qp
from tsg_envs.game import Game

__all__ = [
    "FEASIBILITY_TOL",
    "Polytope",
    "PolytopeSet",
    "InfeasibleRiskBoundError",
    "build_polytopes",
    "risk_rows",
    "alpha_project",
    "violation",
    "min_category_risk",
]

#: The one feasibility tolerance of the project: an action is feasible when every constraint
#: holds to within this (max row excess, |Σπ - 1|, max(-π)).
FEASIBILITY_TOL: float = 1e-6

#: Relative amount by which α is shrunk below the exact boundary hit, so that float32 rounding of
#: the projected action stays inside FEASIBILITY_TOL (rows have coefficients up to about 10).
ALPHA_SHRINK: float = 1e-6


class InfeasibleRiskBoundError(ValueError):
    """A risk bound ψ leaves some category's polytope empty or without interior."""


@dataclass(frozen=True)
class Polytope:
    """One category's action polytope in H-representation, with an interior point.

    Attributes:
        A_ub: (M + T, T); the M risk rows then the T rows -π_t ≤ 0.
        b_ub: (M + T,).
        A_eq: (1, T) ones.
        b_eq: (1,) = [1].
        center: (T,) a strictly interior point: the Chebyshev centre within the simplex's affine
            hull, tie broken toward the uniform allocation.
        radius: The centre's own margin min_i (b_i - a_i·center) / ‖a_i - mean(a_i)‖ (> 0).
    """

    A_ub: np.ndarray
    b_ub: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    center: np.ndarray
    radius: float

    def violation(self, action: np.ndarray) -> float:
        """max(0, max_i(a_i·π - b_i), |Σπ - 1|) of one action."""
        return float(violation(action, self.A_ub, self.b_ub))

    def contains(self, action: np.ndarray, tol: float = FEASIBILITY_TOL) -> bool:
        """Whether ``action`` is feasible to within ``tol``."""
        return self.violation(action) <= tol


@dataclass(frozen=True)
class PolytopeSet:
    """All categories' polytopes stacked, for batched gathers by category.

    Attributes:
        A_ub: (C, M + T, T).
        b_ub: (C, M + T).
        centers: (C, T).
        radii: (C,).
        risk_bound: ψ, (Θ,), the bound these polytopes encode.
    """

    A_ub: np.ndarray
    b_ub: np.ndarray
    centers: np.ndarray
    radii: np.ndarray
    risk_bound: np.ndarray

    def __post_init__(self) -> None:
        for name in ("A_ub", "b_ub", "centers", "radii", "risk_bound"):
            getattr(self, name).setflags(write=False)

    @property
    def n_categories(self) -> int:
        """C."""
        return int(self.A_ub.shape[0])

    def __getitem__(self, c: int) -> Polytope:
        c = int(c)
        if not 0 <= c < self.n_categories:
            raise IndexError(f"category {c} out of range [0, {self.n_categories})")
        t = self.A_ub.shape[-1]
        return Polytope(
            A_ub=self.A_ub[c].copy(),
            b_ub=self.b_ub[c].copy(),
            A_eq=np.ones((1, t)),
            b_eq=np.ones(1),
            center=self.centers[c].copy(),
            radius=float(self.radii[c]),
        )

    def _categories(self, categories: np.ndarray) -> np.ndarray:
        """Category indices as an int array, each in [0, C) (-1, "no one waiting", refused)."""
        cats = np.atleast_1d(np.asarray(categories))
        if cats.dtype.kind not in "iu":
            raise TypeError(f"categories must be integers, got dtype {cats.dtype}")
        if cats.size and (cats.min() < 0 or cats.max() >= self.n_categories):
            bad = int(cats[(cats < 0) | (cats >= self.n_categories)][0])
            if bad == -1:
                raise IndexError(
                    f"category -1 out of range [0, {self.n_categories}): no passenger is waiting, "
                    "that day is over. In a vector environment the next step resets a finished "
                    "day and ignores its action (Gymnasium's NEXT_STEP autoreset): give it any "
                    "allocation, e.g. for np.maximum(info['category'], 0) (docs: the vector "
                    "environment; help(tsg_envs.vector))"
                )
            raise IndexError(f"category {bad} out of range [0, {self.n_categories})")
        return cats.reshape(np.shape(categories))

    def project(self, actions: np.ndarray, categories: np.ndarray) -> np.ndarray:
        """α-project simplex points, each onto its own category's polytope (batched)."""
        categories = self._categories(categories)
        return alpha_project(
            actions, self.centers[categories], self.A_ub[categories], self.b_ub[categories]
        )

    def violation(self, actions: np.ndarray, categories: np.ndarray) -> np.ndarray:
        """Per-sample violation measure of proposed actions (batched)."""
        categories = self._categories(categories)
        return violation(actions, self.A_ub[categories], self.b_ub[categories])

    def sample(self, categories: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw feasible allocations for the given categories (a feasible random sampler).

        A Dirichlet(1) point of the simplex is α-projected toward the centre, then moved a
        random fraction u^(1/(T-1)) of the way from the centre to it (u ~ U[0, 1]), which spreads
        the samples through the polytope's interior instead of piling them on its boundary.
        """
        categories = np.atleast_1d(self._categories(categories))
        t = self.centers.shape[-1]
        s = rng.dirichlet(np.ones(t), size=categories.shape[0])
        y = self.project(s, categories)
        y0 = self.centers[categories]
        u = rng.uniform(size=(categories.shape[0], 1)) ** (1.0 / max(t - 1, 1))
        return y0 + u * (y - y0)


def risk_rows(game: Game, risk_bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The risk rows of every category: A (C, M, T) and b (C, M).

    Row m of category c = ⟨θ, κ⟩: -P_θ L_{κ,m} E_{:,m} · π ≤ ψ_θ - P_θ L_{κ,m}.
    """
    psi = np.asarray(risk_bound, dtype=float)
    pl = game.attacker_prior[:, None, None] * game.attack_loss[None, :, :]  # (Θ, K, M)
    a = -pl[..., None] * game.team_efficacy.T[None, None, :, :]  # (Θ, K, M, T)
    b = psi[:, None, None] - pl
    c = game.n_categories
    return a.reshape(c, game.n_methods, game.n_teams), b.reshape(c, game.n_methods)


def min_category_risk(game: Game, theta: int, flight: int) -> tuple[float, np.ndarray]:
    """Smallest ψ_θ category ⟨θ, κ⟩ admits: min_π max_m P_θ (1 - z_m) L_{κ,m}, and its π."""
    t, m = game.n_teams, game.n_methods
    pl = game.attacker_prior[theta] * game.attack_loss[flight]  # (M,)
    # variables [π (T), ρ]; min ρ s.t. P L (1 - E_m·π) <= ρ, Σπ = 1, π >= 0
    a = np.zeros((m + 1, t + 1))
    a[:m, :t] = -pl[:, None] * game.team_efficacy.T
    a[:m, t] = -1.0
    a[m, :t] = 1.0
    row_lo = np.concatenate([np.full(m, -np.inf), [1.0]])
    row_hi = np.concatenate([-pl, [1.0]])
    cost = np.zeros(t + 1)
    cost[t] = 1.0
    col_lo = np.concatenate([np.zeros(t), [-np.inf]])
    col_hi = np.full(t + 1, np.inf)
    x, obj = highs.solve(cost, a, row_lo, row_hi, col_lo, col_hi)
    return obj, x[:t]


def _hull_norms(a: np.ndarray) -> np.ndarray:
    """‖a_i - mean(a_i)‖: the row norms on the tangent space of the simplex's affine hull."""
    return np.linalg.norm(a - a.mean(axis=-1, keepdims=True), axis=-1)


class _DenseModels:
    """One HiGHS object that solves a sequence of small dense LPs and QPs.

    The same models as :func:`tsg_envs.highs.model` builds (silent, ``random_seed`` 0, the
    matrix column-wise without its zeros), passed into one ``Highs`` object instead of a new
    one each: ``passModel`` replaces the model and discards the last solve, so each solve is
    the one a fresh object makes (bit for bit, ``tests/test_polytope.py``), without the cost of
    making the object and a scipy matrix every time.
    """

    def __init__(self) -> None:
        highs.silence_banner()
        self._h = h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("threads", 1)  # as highs.model: HiGHS fails a model whose thread
        # count differs from the one its process's first run set

    def solve(self, cost: np.ndarray, a: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray,
              col_lo: np.ndarray, col_hi: np.ndarray, hessian_diag: np.ndarray | None = None
              ) -> tuple[np.ndarray, float]:
        """(x, objective) of min cᵀx (+ ½ xᵀ diag(h) x) s.t. the bounds; dense ``a``."""
        inf = highspy.kHighsInf
        cols = a.T  # column-wise, zeros dropped (as scipy's CSC of a dense matrix)
        nz = cols != 0.0
        lp = highspy.HighsLp()
        lp.num_col_ = int(cost.shape[0])
        lp.num_row_ = int(a.shape[0])
        lp.col_cost_ = np.asarray(cost, dtype=float)
        lp.col_lower_ = np.clip(col_lo, -inf, inf)
        lp.col_upper_ = np.clip(col_hi, -inf, inf)
        lp.row_lower_ = np.clip(row_lo, -inf, inf)
        lp.row_upper_ = np.clip(row_hi, -inf, inf)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.r_[0, np.cumsum(nz.sum(axis=1))].astype(np.int32)
        lp.a_matrix_.index_ = np.nonzero(nz)[1].astype(np.int32)
        lp.a_matrix_.value_ = cols[nz].astype(float)
        highs.pass_model(self._h, lp, hessian_diag)
        return highs.run(self._h)


def _centre(a_ub: np.ndarray, b_ub: np.ndarray, models: _DenseModels | None = None
            ) -> tuple[np.ndarray, float, float]:
    """Chebyshev centre within {Σπ = 1}, tie broken toward uniform; returns (x, radius, r*)."""
    solve = highs.solve if models is None else models.solve
    k, t = a_ub.shape
    norms = _hull_norms(a_ub)
    flat = norms <= 1e-12
    # Stage 1: max r s.t. a_i x + r ‖P a_i‖ <= b_i, Σx = 1 (x free; the -π rows keep x >= 0).
    a = np.zeros((k + 1, t + 1))
    a[:k, :t] = a_ub
    a[:k, t] = norms
    a[k, :t] = 1.0
    row_lo = np.concatenate([np.full(k, -np.inf), [1.0]])
    row_hi = np.concatenate([b_ub, [1.0]])
    cost = np.zeros(t + 1)
    cost[t] = -1.0
    # r may go negative so that an empty polytope gives a (negative) optimum instead of an
    # infeasible LP; only a violated row with zero hull norm (constant over teams) can still make
    # it infeasible.
    col_lo = np.full(t + 1, -np.inf)
    col_hi = np.concatenate([np.full(t, np.inf), [1.0]])
    try:
        x, obj = solve(cost, a, row_lo, row_hi, col_lo, col_hi)
    except RuntimeError:
        return np.full(t, 1.0 / t), 0.0, -np.inf
    r_star = -obj
    if r_star <= 0:
        return x[:t], 0.0, r_star
    # Stage 2: closest point (L2) to uniform among those keeping at least half the best margin.
    u = np.full(t, 1.0 / t)
    a2 = np.zeros((k + 1, t))
    a2[:k] = a_ub
    a2[k] = 1.0
    row_hi2 = np.concatenate([b_ub - 0.5 * r_star * norms, [1.0]])
    row_lo2 = np.concatenate([np.full(k, -np.inf), [1.0]])
    # ½‖x - u‖² = ½ xᵀx - uᵀx + const
    try:
        y, _ = solve(
            -u, a2, row_lo2, row_hi2, np.full(t, -np.inf), np.full(t, np.inf), np.ones(t)
        )
    except RuntimeError:
        # On a very thin polytope (r* near the solver's tolerances) the QP can fail to solve:
        # keep the stage-1 point, whose margin is r* itself.
        y = np.full(t, np.nan)
    slack = b_ub - a_ub @ y
    margin = np.where(flat, np.inf, slack / np.where(flat, 1.0, norms))
    radius = float(margin.min())
    if not radius >= 0.5 * r_star * (1 - 1e-6):  # QP tolerance or failure: the stage-1 point
        y = x[:t]
        margin = np.where(flat, np.inf, (b_ub - a_ub @ y) / np.where(flat, 1.0, norms))
        radius = float(margin.min())
    return y, radius, r_star


def _block_diagonal(blocks: np.ndarray) -> sparse.csc_array:
    """The block-diagonal sparse matrix of dense blocks (B, p, q), zeros dropped."""
    nb, p, q = blocks.shape
    b, i, j = np.nonzero(blocks)
    return sparse.csc_array((blocks[b, i, j], (b * p + i, b * q + j)), shape=(nb * p, nb * q))


def _centres_batched(a_ub: np.ndarray, b_ub: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_centre` of every category at once: one block LP, then one block QP.

    The blocks do not interact, so each block's part of the solution is its own problem's (the
    block LP's optimum is each Chebyshev radius r*; the block QP is strictly convex). Returns
    (centres (C, T), radii (C,)), or None where a category needs :func:`_centre` on its own: a
    failed solve, an r* <= 1e-9 (an empty or thin polytope, whose error names it), or a QP point
    whose margin falls short of half r*.
    """
    c, k, t = a_ub.shape
    norms = _hull_norms(a_ub)  # (C, K)
    flat = norms <= 1e-12
    # Stage 1: max Σ_c r_c, each block a_i x + r ‖P a_i‖ <= b_i, Σx = 1.
    blocks = np.zeros((c, k + 1, t + 1))
    blocks[:, :k, :t] = a_ub
    blocks[:, :k, t] = norms
    blocks[:, k, :t] = 1.0
    row_lo = np.concatenate([np.full((c, k), -np.inf), np.ones((c, 1))], axis=1).reshape(-1)
    row_hi = np.concatenate([b_ub, np.ones((c, 1))], axis=1).reshape(-1)
    cost = np.zeros((c, t + 1))
    cost[:, t] = -1.0
    col_hi = np.full((c, t + 1), np.inf)
    col_hi[:, t] = 1.0
    try:
        x, _ = highs.solve(cost.reshape(-1), _block_diagonal(blocks), row_lo, row_hi,
                           np.full(c * (t + 1), -np.inf), col_hi.reshape(-1))
    except RuntimeError:
        return None
    x = x.reshape(c, t + 1)
    r_star = x[:, t]
    if not np.all(r_star > 1e-9):
        return None
    # Stage 2: the closest point to uniform keeping at least half of each block's best margin.
    blocks2 = np.zeros((c, k + 1, t))
    blocks2[:, :k] = a_ub
    blocks2[:, k] = 1.0
    row_hi2 = np.concatenate([b_ub - 0.5 * r_star[:, None] * norms, np.ones((c, 1))], axis=1)
    # HiGHS's active-set QP slows down with the number of blocks; Clarabel's interior point and
    # its exact active-set polish (tsg_envs.qp) scale with them.
    try:
        y = qp.solve_qp(
            np.ones(c * t), np.full(c * t, -1.0 / t), _block_diagonal(blocks2), row_lo,
            row_hi2.reshape(-1), np.full(c * t, -np.inf), np.full(c * t, np.inf),
            what="polytope centres QP",
        )
    except RuntimeError:
        return None
    y = y.reshape(c, t)
    slack = b_ub - np.einsum("ckt,ct->ck", a_ub, y)
    margin = np.where(flat, np.inf, slack / np.where(flat, 1.0, norms))
    radii = margin.min(axis=1)
    if not np.all(radii >= 0.5 * r_star * (1 - 1e-6)):
        return None
    return y, radii


def build_polytopes(game: Game, risk_bound: np.ndarray, *, batched: bool = True) -> PolytopeSet:
    """Every category's polytope and centre for the risk bound ψ.

    The centres of all categories come from one block-diagonal HiGHS LP and one block QP
    (:func:`_centres_batched`, the same problems as :func:`_centre` side by side); where that
    cannot vouch for every category (an empty or thin polytope, a failed solve), each category
    is solved on its own (one LP + QP each), which also names the offending category.
    ``batched=False`` solves every category on its own (the reference the tests compare with).

    Raises:
        InfeasibleRiskBoundError: naming θ, κ, the ψ_θ given and the smallest ψ_θ the category
            admits (its best reachable detection), when a polytope is empty or has no interior.
    """
    psi = np.asarray(risk_bound, dtype=float)
    if psi.shape != (game.n_risk_levels,):
        raise ValueError(f"risk_bound must have shape ({game.n_risk_levels},), got {psi.shape}")
    if not np.all(np.isfinite(psi)):
        raise ValueError(f"risk_bound must be finite, got {psi}")
    a_risk, b_risk = risk_rows(game, psi)
    c, t = game.n_categories, game.n_teams
    a_ub = np.concatenate([a_risk, np.broadcast_to(-np.eye(t), (c, t, t))], axis=1)
    b_ub = np.concatenate([b_risk, np.zeros((c, t))], axis=1)
    together = _centres_batched(a_ub, b_ub) if batched else None
    if together is not None:
        centers, radii = together
        return PolytopeSet(A_ub=a_ub, b_ub=b_ub, centers=centers, radii=radii,
                           risk_bound=psi.copy())
    centers = np.empty((c, t))
    radii = np.empty(c)
    models = _DenseModels()
    for ci in range(c):
        x, radius, r_star = _centre(a_ub[ci], b_ub[ci], models)
        if r_star <= 1e-9 or radius <= 0:
            theta, flight = game.split_category(ci)
            best, pi = min_category_risk(game, int(theta), int(flight))
            z = game.team_efficacy.T @ pi
            raise InfeasibleRiskBoundError(
                f"risk bound psi[{theta}]={psi[theta]:.6g} leaves the polytope of category "
                f"{ci} (theta={theta}, flight={flight}) "
                + ("empty" if psi[theta] < best else "without interior")
                + f": the smallest psi[{theta}] it admits is {best:.6g}, reached at best "
                f"detection z_m={np.round(z, 4).tolist()} (Chebyshev radius {r_star:.3g}). "
                "Raise risk_bound or risk_slack."
            )
        centers[ci] = x
        radii[ci] = radius
    return PolytopeSet(A_ub=a_ub, b_ub=b_ub, centers=centers, radii=radii, risk_bound=psi.copy())


def violation(actions: np.ndarray, a_ub: np.ndarray, b_ub: np.ndarray) -> np.ndarray:
    """The SPEC violation measure, max(0, max_i(a_i·π - b_i), |Σπ - 1|, max(-π)), batched.

    Args:
        actions: (..., T).
        a_ub: (..., K, T), broadcastable against ``actions``.
        b_ub: (..., K).
    """
    actions = np.asarray(actions, dtype=float)
    rows = np.einsum("...kt,...t->...k", a_ub, actions) - b_ub
    return np.maximum.reduce(
        [
            np.zeros(actions.shape[:-1]),
            rows.max(axis=-1),
            np.abs(actions.sum(axis=-1) - 1.0),
            (-actions).max(axis=-1),
        ]
    )


def alpha_project(
    s: np.ndarray, center: np.ndarray, a_ub: np.ndarray, b_ub: np.ndarray
) -> np.ndarray:
    """α-projection: y = y0 + α (s - y0), α the largest value in [0, 1] keeping A_ub y ≤ b_ub.

    α = min(1, min over rows with a_i·(s - y0) > 0 of (b_i - a_i·y0) / (a_i·(s - y0))); when
    α < 1 it is shrunk by a relative 1e-6 so that float32 rounding stays feasible. Points
    already inside are returned unchanged. If ``s`` lies on the simplex so does ``y``.

    Args:
        s: (..., T) points (e.g. softmax outputs).
        center: (..., T) interior points y0 of the same polytopes.
        a_ub: (..., K, T) inequality rows.
        b_ub: (..., K).

    Returns:
        (..., T) projected points.
    """
    s = np.asarray(s, dtype=float)
    y0 = np.asarray(center, dtype=float)
    d = s - y0
    ad = np.einsum("...kt,...t->...k", a_ub, d)
    slack = b_ub - np.einsum("...kt,...t->...k", a_ub, y0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(ad > 0, slack / np.where(ad > 0, ad, 1.0), np.inf)
    alpha = np.minimum(1.0, ratio.min(axis=-1))
    alpha = np.where(alpha < 1.0, np.maximum(alpha * (1.0 - ALPHA_SHRINK), 0.0), 1.0)
    # α = 1 returns s itself (bit for bit), not y0 + (s - y0), which can differ by rounding.
    return np.where(alpha[..., None] >= 1.0, s, y0 + alpha[..., None] * d)
