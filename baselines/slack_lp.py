"""The static slack LP (SPEC §4): method ``slack-lp``.

The window LP (:mod:`tsg_envs.lp`) spends detection wherever capacity allows; its per-level risk
ψ^LP_θ is set by its *worst* window, so in the other windows the environment's bound ψ leaves
risk budget unused. The slack LP spends that budget on delay: per LP window w it picks, for every
category with a positive expected count, a static allocation π_{c,w} inside the category's
polytope at the environment's ψ that minimises the largest resource utilisation

    util_{r,w} = Σ_c N_{c,w} Σ_{t∋r} π_{c,t} / (f_r |w|)

with N_{c,w} the LP's expected counts over the same windows (``solve_window_lp(game,
env.unwrapped.lp_window_minutes)``). It does not adapt within a window.

Ties. The min-max has many optima (only the bottleneck resources are pinned), so it is solved
lexicographically, with LPs only (HiGHS):

1. *leximin*: minimise the peak U = max_r util_{r,w}; pin the resources that cannot go below
   it (one LP each: minimise util_r with every free resource kept under U); then minimise the
   peak of the remaining resources with the pinned ones capped at their value, and so on until
   every resource is pinned (at most R rounds). This balances the non-bottleneck resources as
   evenly as the polytopes allow: queueing delay grows convexly with utilisation, so spreading
   load beats piling it on whichever resources happen to be fast (which a linear tie-break
   such as min Σ_r util_{r,w} would do). The leximin utilisation vector is unique;
2. with every util_{r,w} capped at its leximin value, minimise Σ_c ‖π_{c,w} − centre_c‖₁:
   among the allocations achieving it, the one closest to each polytope's centre.

Each stage keeps the previous optimum to a relative ``tolerance`` (1e-7). A pin test whose
answer the min-peak LP already gives (a resource below the band at its optimum is free; one
whose row dual bounds how far it could fall is pinned: :func:`_pin_known`) is not run; that
skips about 70% of them on ``tsg/Screening-v1`` and changes the policy only by the rounding of
HiGHS's path (below 1e-8). (A convex QP in
stage 2, Σ_r util², was tried first: HiGHS's QP solver failed on a third of the windows.)

Categories with zero expected count in a window get their polytope centre. HiGHS is
deterministic, so the same instance always gives the same policy.

Feasibility. Risk rows are tightened by ``margin`` (1e-9) in both stages; the solution is then
clipped at 0, renormalised and, if any row still exceeds it at all, α-projected toward the
centre, so every stored allocation is feasible to within float rounding (far below
``FEASIBILITY_TOL``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import highspy
import numpy as np
from scipy import sparse

from baselines.api import Method, RunConfig
from baselines.nonlearning import (
    check_env_matches,
    config_from_hparams,
    read_checkpoint,
    solve_or_resume,
)
from tsg_envs import highs
from tsg_envs.cache import KeyedCache
from tsg_envs.game import Game
from tsg_envs.harness import column
from tsg_envs.lp import solve_window_lp
from tsg_envs.polytope import PolytopeSet, alpha_project

__all__ = [
    "SLACK_LP_CACHE",
    "SlackLPConfig",
    "SlackLPSolution",
    "window_utilisation",
    "solve_slack_lp",
    "slack_lp_for_env",
    "slack_lp_key",
    "SlackLPAgent",
    "make_agent",
    "train",
    "load",
    "METHOD",
]


@dataclass(kw_only=True)
class SlackLPConfig:
    """Hyperparameters of the slack LP.

    Attributes:
        window_minutes: Window length in minutes; ``"env"`` (default) uses the environment's
            ``lp_window_minutes`` (the windows of the LP that set ψ); None is one window over
            the day. [ours]
        margin: Every risk row is tightened by this much (row units) so that the solver's own
            feasibility tolerance cannot push an allocation outside the polytope. [ours]
        tolerance: Relative slack with which each leximin round keeps the peaks already
            reached (and the pin test's threshold). [ours]
    """

    window_minutes: float | str | None = "env"
    margin: float = 1e-9
    tolerance: float = 1e-7


@dataclass(frozen=True)
class SlackLPSolution:
    """The slack LP's policy over one day.

    Attributes:
        policy: π_{c,w}, (W, C, T).
        window_edges: (W + 1,) minutes from the day start (those of the LP).
        expected_counts: N_{c,w}, (W, C), the LP's.
        utilisation: util_{r,w} of this policy, (W, R).
        risk_bound: The ψ it was solved at, (Θ,).
    """

    policy: np.ndarray
    window_edges: np.ndarray
    expected_counts: np.ndarray
    utilisation: np.ndarray
    risk_bound: np.ndarray

    def __post_init__(self) -> None:
        for name in ("policy", "window_edges", "expected_counts", "utilisation", "risk_bound"):
            getattr(self, name).setflags(write=False)

    @property
    def n_windows(self) -> int:
        """W."""
        return int(self.policy.shape[0])

    @property
    def peak_utilisation(self) -> np.ndarray:
        """max_r util_{r,w}, (W,)."""
        return self.utilisation.max(axis=1)

    def window_of(self, time: float | np.ndarray) -> np.ndarray:
        """Index of the window holding ``time`` (minutes from the day start), clipped."""
        idx = np.searchsorted(self.window_edges, time, side="right") - 1
        return np.clip(idx, 0, self.n_windows - 1)

    def action(self, time: float | np.ndarray, category: int | np.ndarray) -> np.ndarray:
        """π_{c,w} for a passenger of ``category`` arriving at ``time``."""
        return self.policy[self.window_of(time), category]

    def arrays(self) -> dict[str, np.ndarray]:
        """The fields as a dict of arrays (for ``np.savez``)."""
        return {
            "policy": self.policy,
            "window_edges": self.window_edges,
            "expected_counts": self.expected_counts,
            "utilisation": self.utilisation,
            "risk_bound": self.risk_bound,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> SlackLPSolution:
        """Inverse of :meth:`arrays`."""
        return cls(**{k: np.array(arrays[k], dtype=float) for k in (
            "policy", "window_edges", "expected_counts", "utilisation", "risk_bound")})


def window_utilisation(
    game: Game, expected_counts: np.ndarray, window_edges: np.ndarray, policy: np.ndarray
) -> np.ndarray:
    """util_{r,w} = Σ_c N_{c,w} Σ_{t∋r} π_{c,w,t} / (f_r |w|) of a static policy.

    Args:
        game: The instance (rates f_r, team membership).
        expected_counts: N_{c,w}, (W, C).
        window_edges: (W + 1,).
        policy: π, (W, C, T).

    Returns:
        (W, R).
    """
    load = np.einsum("wc,wct,tr->wr", expected_counts, policy, game.team_members.astype(float))
    lengths = np.diff(window_edges)
    return load / (game.rates[None, :] * lengths[:, None])


def highs_model(
    cost: np.ndarray,
    a: sparse.sparray | np.ndarray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    hessian_diag: np.ndarray | None = None,
) -> highspy.Highs:
    """:func:`tsg_envs.highs.model` with the constraint matrix's indices sorted first."""
    a = sparse.csc_array(a)
    a.sort_indices()
    return highs.model(cost, a, row_lo, row_hi, col_lo, col_hi, hessian_diag)


def _run(h: highspy.Highs, what: str) -> np.ndarray:
    return highs.run(h, what)[0]


def clean_allocations(
    pi: np.ndarray, categories: np.ndarray, polytopes: PolytopeSet
) -> np.ndarray:
    """Clip at 0, renormalise, and α-project toward the centre any row still exceeded.

    Args:
        pi: (N, T) solver outputs.
        categories: (N,) their categories.
        polytopes: The polytopes.

    Returns:
        (N, T) allocations inside their polytopes (to float rounding).
    """
    pi = np.clip(pi, 0.0, None)
    pi = pi / pi.sum(axis=-1, keepdims=True)
    rows = np.einsum("nkt,nt->nk", polytopes.A_ub[categories], pi) - polytopes.b_ub[categories]
    bad = rows.max(axis=-1) > 0
    if np.any(bad):
        cb = categories[bad]
        pi[bad] = alpha_project(
            pi[bad], polytopes.centers[cb], polytopes.A_ub[cb], polytopes.b_ub[cb]
        )
    return pi


def _pin_known(util: float, dual: float, peak: float, cap: float, floor: float) -> bool | None:
    """The leximin pin test's answer where it follows from the min-peak LP alone; None: run it.

    The test minimises util_j with every free resource kept under ``cap``; j is pinned when
    that minimum L is at least ``floor``. (1) If util_j is already below ``floor`` at the
    min-peak optimum, L is too: free. (2) The min-peak LP's value v(ε), with util_j's row
    tightened to util_j ≤ U − ε, is convex with slope at least the row's dual y_j at 0, so
    v(ε) ≥ peak + y_j ε. A point of the test with util_j = L (U = cap) is feasible for
    ε = cap − L, hence cap ≥ peak + y_j (cap − L) and L ≥ cap − (cap − peak) / y_j: pinned
    whenever that bound (less a margin of 1e-3 of the band for HiGHS's dual tolerance) is at
    least ``floor``.
    """
    if util < floor:
        return False
    if dual > 0.0 and cap - (cap - peak) / dual >= floor + 1e-3 * (cap - floor):
        return True
    return None


def _solve_window(
    game: Game,
    polytopes: PolytopeSet,
    counts: np.ndarray,
    length: float,
    config: SlackLPConfig,
) -> np.ndarray:
    """One window's lexicographic min-max, then the centre tie-break; returns π (C, T)."""
    t, m, r = game.n_teams, game.n_methods, game.n_resources
    policy = np.array(polytopes.centers, dtype=float)
    active = np.flatnonzero(counts > 0)
    if active.size == 0:
        return policy
    na = active.size
    n_pi = na * t
    n_risk = na * m
    # Risk rows (block diagonal) and simplex rows.
    a_risk = sparse.block_diag([polytopes.A_ub[c, :m] for c in active], format="csr")
    b_risk = polytopes.b_ub[active, :m].reshape(-1) - config.margin
    a_simplex = sparse.csr_array(
        (np.ones(n_pi), (np.repeat(np.arange(na), t), np.arange(n_pi))), shape=(na, n_pi)
    )
    # Utilisation rows: util_r = Σ_c N_c Σ_{t∋r} π_{c,t} / (f_r |w|).
    members = game.team_members.astype(float)  # (T, R)
    util = counts[active][:, None, None] * members[None] / (game.rates * length)  # (na, T, R)
    a_util = util.reshape(n_pi, r).T  # (R, n_pi), dense: R is small
    # Leximin model: variables [π, U]; rows risk, simplex, util_r - U <= 0 (free r) or
    # util_r <= bound_r (fixed r: the U coefficient is zeroed).
    a = sparse.vstack(
        [
            sparse.hstack([a_risk, sparse.csr_array((n_risk, 1))]),
            sparse.hstack([a_simplex, sparse.csr_array((na, 1))]),
            sparse.hstack([sparse.csr_array(a_util), sparse.csr_array(-np.ones((r, 1)))]),
        ]
    )
    lo = np.concatenate([np.full(n_risk, -np.inf), np.ones(na), np.full(r, -np.inf)])
    hi = np.concatenate([b_risk, np.ones(na), np.zeros(r)])
    u_col = n_pi
    cost_u = np.zeros(n_pi + 1)
    cost_u[u_col] = 1.0
    h = highs_model(cost_u, a, lo, hi, np.zeros(n_pi + 1), np.full(n_pi + 1, np.inf))
    all_cols = np.arange(n_pi + 1, dtype=np.int32)
    tol = config.tolerance
    bound = np.full(r, np.inf)
    free = list(range(r))
    while free:
        h.changeColsCost(n_pi + 1, all_cols, cost_u)
        h.changeColBounds(u_col, 0.0, highspy.kHighsInf)
        x = _run(h, "slack LP (min peak)")
        peak = float(x[u_col])
        cap = peak * (1.0 + tol) + tol
        floor = peak * (1.0 - 10 * tol) - tol
        # A free resource is pinned when it cannot go below the peak while the others stay
        # under it (one LP each). Two answers need no LP (see _pin_test_needed): a resource
        # already below the floor at the peak's optimum is free, and one whose util row's dual
        # proves it cannot leave the band [floor, cap] is pinned.
        dual = np.asarray(h.getSolution().row_dual, dtype=float)
        h.changeColBounds(u_col, 0.0, cap)
        pinned = []
        for j in free:
            known = _pin_known(float(a_util[j] @ x[:n_pi]), abs(float(dual[n_risk + na + j])),
                               peak, cap, floor)
            if known is not None:
                if known:
                    pinned.append(j)
                continue
            h.changeColsCost(n_pi + 1, all_cols, np.append(a_util[j], 0.0))
            low = float(a_util[j] @ _run(h, "slack LP (pin test)")[:n_pi])
            if low >= floor:
                pinned.append(j)
        if not pinned:  # pragma: no cover - numerically impossible; pin everything left
            pinned = list(free)
        for j in pinned:
            bound[j] = cap
            h.changeCoeff(n_risk + na + j, u_col, 0.0)
            h.changeRowBounds(n_risk + na + j, -highspy.kHighsInf, cap)
            free.remove(j)
    # Tie-break: utilisations within the leximin bounds, min Σ_c ‖π_c - centre_c‖₁
    # (auxiliary d >= |π - centre|).
    eye = sparse.eye_array(n_pi)
    a3 = sparse.vstack(
        [
            sparse.hstack([a_risk, sparse.csr_array((n_risk, n_pi))]),
            sparse.hstack([a_simplex, sparse.csr_array((na, n_pi))]),
            sparse.hstack([sparse.csr_array(a_util), sparse.csr_array((r, n_pi))]),
            sparse.hstack([-eye, eye]),  # d - π >= -centre
            sparse.hstack([eye, eye]),  # d + π >= centre
        ]
    )
    centres = polytopes.centers[active].reshape(-1)
    lo3 = np.concatenate([np.full(n_risk, -np.inf), np.ones(na), np.full(r, -np.inf),
                          -centres, centres])
    hi3 = np.concatenate([b_risk, np.ones(na), bound, np.full(2 * n_pi, np.inf)])
    cost3 = np.concatenate([np.zeros(n_pi), np.ones(n_pi)])
    x3 = _run(
        highs_model(cost3, a3, lo3, hi3, np.zeros(2 * n_pi), np.full(2 * n_pi, np.inf)),
        "slack LP (centre tie-break)",
    )
    policy[active] = clean_allocations(x3[:n_pi].reshape(na, t), active, polytopes)
    return policy


def solve_slack_lp(
    game: Game,
    polytopes: PolytopeSet,
    expected_counts: np.ndarray,
    window_edges: np.ndarray,
    config: SlackLPConfig | None = None,
) -> SlackLPSolution:
    """Solve the slack LP window by window.

    Args:
        game: The instance.
        polytopes: The environment's polytopes (at its ψ).
        expected_counts: N_{c,w}, (W, C) (the LP's).
        window_edges: (W + 1,) (the LP's).
        config: Tie-break and tolerance settings (``window_minutes`` is not used here).

    Returns:
        The :class:`SlackLPSolution`.
    """
    config = config or SlackLPConfig()
    counts = np.asarray(expected_counts, dtype=float)
    edges = np.asarray(window_edges, dtype=float)
    n_w = counts.shape[0]
    policy = np.empty((n_w, game.n_categories, game.n_teams))
    for w in range(n_w):
        policy[w] = _solve_window(game, polytopes, counts[w], float(edges[w + 1] - edges[w]),
                                  config)
    return SlackLPSolution(
        policy=policy,
        window_edges=edges.copy(),
        expected_counts=counts.copy(),
        utilisation=window_utilisation(game, counts, edges, policy),
        risk_bound=np.array(polytopes.risk_bound, dtype=float),
    )


#: Slack-LP solutions of the instances solved last in this process, keyed by their content
#: (:func:`slack_lp_key`): the slack-LP, slack-guided and ES-guided agents of one instance share
#: one solve (on the 300-flight window it is most of their set-up). The solutions are frozen.
SLACK_LP_CACHE: KeyedCache[SlackLPSolution] = KeyedCache(8)


def slack_lp_key(
    game: Game, polytopes: PolytopeSet, window_minutes: float | None, config: SlackLPConfig
) -> tuple | None:
    """What a slack-LP solution depends on, or None for a game without a cache key.

    The game's key (its config and seed), the LP windows, the polytopes' arrays (their digest:
    the same game at another ψ, or polytopes built another way, is another key) and the
    config's margin and tolerance.
    """
    if game.key is None:
        return None
    import hashlib

    digest = hashlib.sha256()
    for arr in (polytopes.A_ub, polytopes.b_ub, polytopes.centers):
        a = np.ascontiguousarray(arr, dtype=np.float64)
        digest.update(str(a.shape).encode())
        digest.update(a.tobytes())
    return (game.key, window_minutes, digest.hexdigest(), float(config.margin),
            float(config.tolerance))


def slack_lp_for_env(env: gym.Env, config: SlackLPConfig | None = None) -> SlackLPSolution:
    """The slack LP of ``env``'s instance, at its ψ, over its LP's windows.

    Solved once per content (:data:`SLACK_LP_CACHE`): a second agent built on the same instance
    (the slack-guided agent beside the slack LP in a protocol unit) gets the same solution
    without solving it again.
    """
    config = config or SlackLPConfig()
    u = env.unwrapped
    minutes = u.lp_window_minutes if config.window_minutes == "env" else config.window_minutes

    def solve() -> SlackLPSolution:
        lp = solve_window_lp(u.game, minutes)
        return solve_slack_lp(u.game, u.polytopes, lp.expected_counts, lp.window_edges, config)

    return SLACK_LP_CACHE.get_or_make(slack_lp_key(u.game, u.polytopes, minutes, config), solve)


class SlackLPAgent:
    """Plays the slack LP: every passenger of category c arriving in window w gets π_{c,w}."""

    def __init__(self, solution: SlackLPSolution) -> None:
        self.solution = solution

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """π_{c,w} for the waiting passenger's category and arrival window."""
        return self.solution.action(info["time"], info["category"]).copy()

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """π_{c,w} of each row's waiting passenger, (B, T)."""
        times = column(infos, "time").astype(np.float64)
        cats = column(infos, "category").astype(np.int64)
        return np.asarray(self.solution.action(times, cats), dtype=np.float64)


def make_agent(env: gym.Env, config: SlackLPConfig | None = None) -> SlackLPAgent:
    """Solve the slack LP of ``env`` and return its agent."""
    return SlackLPAgent(slack_lp_for_env(env, config))


def train(run: RunConfig) -> SlackLPAgent:
    """Solve the slack LP of the run's instance (or resume it); saves the policy as ``.npz``."""
    config = config_from_hparams(SlackLPConfig, run.hparams)

    def solve(env: gym.Env) -> tuple[SlackLPAgent, dict[str, np.ndarray]]:
        agent = make_agent(env, config)
        return agent, agent.solution.arrays()

    return solve_or_resume(run, config, load, solve)


def load(path: Path, env: gym.Env) -> SlackLPAgent:
    """The saved slack-LP policy (not re-solved), after checking ``env`` is its instance."""
    record, arrays = read_checkpoint(path, "slack-lp")
    check_env_matches(record, env, path)
    return SlackLPAgent(SlackLPSolution.from_arrays(arrays))


METHOD = Method(
    name="slack-lp",
    train=train,
    load=load,
    learned=False,
    description="static slack LP: per window, min peak utilisation inside the polytopes at ψ",
    config=SlackLPConfig,
)
