"""The slack-guided per-passenger LP (SPEC §4): method ``slack-guided``.

For each arriving passenger of category c in LP window w, given the teams' current waits w_t
(``obs[obs_layout["waits"]]``), play

    π* = argmin_{π ∈ polytope(c)}  π·(w + ε s) + μ ‖π − π^slack_{c,w}‖₁

where π^slack is the static slack LP's allocation (:mod:`baselines.slack_lp`). The first term is
the passenger's expected wait; the L1 term keeps the allocation near the slack LP's plan, which
balances the window's load, so the policy deviates only when the queues make it worth more than
μ minutes per unit of moved probability. μ = 0 is the myopic LP (:mod:`baselines.myopic`); as μ
grows the policy becomes the slack LP exactly (once 2μ exceeds the spread of the waits, moving
mass away from π^slack never pays).

Default μ = 1 minute, the best of a sweep on ``tsg/Screening-v1`` (instances 0-1, days
10_000-10_004; ``baselines/scripts/mu_sweep.py``, commit a81ee35). Mean wait in minutes:

    μ          0      0.1    0.3    1      3      10     100    (slack LP)
    wait       2.04   1.62   1.52   1.45   1.52   1.53   1.53   1.53

μ = 10 already reproduces the slack LP on every one of these days. The best μ varies by
instance (0.1 on instance 1, 1 on instance 0), so a tuned μ per instance would do better.

Ties. Waits tie often (teams sharing the bottleneck resource have equal waits; at the day
start every wait is 0). A tie-break cost ε s_t is therefore added, with s_t = Σ_{r∈t} 1/f_r the
minutes of capacity team t uses per passenger (normalised to mean 1) and ε = 1e-5 minutes: among
equally good allocations the one using the least capacity is chosen.

Purity. ``act`` must be a function of (obs, info) alone (the risk probe calls it on made-up
states). A simplex warm-started from its last basis returns, among allocations whose costs
differ by less than its tolerances (1e-7), whichever that basis leads to, and its answers differ
in the last bits with the basis (and with the factorisation and scaling state HiGHS keeps); a
day replayed after other calls then drifts (measured: up to 0.13 min on a passenger's wait once
a near-tie flipped). So every solve clears the solver state and warm-starts from the category's
*canonical basis* (its optimum for zero waits in window 0, computed when the model is built),
with scaling off (HiGHS keeps the scaling of a model's first solve, which depends on that
solve's costs): bit-identical answers for identical inputs whatever came before.

Speed. One HiGHS model per category is built once, on the category's first passenger
(constraints fixed: the risk rows tightened by 1e-9, Σπ = 1, and d ≥ ±(π − π^slack) for the L1
term, with auxiliary d ≥ 0); per passenger only the cost vector changes (``changeColsCost``),
plus the 2T row bounds of the L1 term when the window changes, and the solve warm-starts from
the canonical basis. About 0.9 ms per passenger for slack-guided and 0.8 ms for myopic on a
2-core CPU box (default env; as fast as warm-starting from the last basis, whereas a cold start
from scratch costs 1.5 ms), most of it inside HiGHS's ``run``.
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
from baselines.slack_lp import (
    SlackLPConfig,
    SlackLPSolution,
    clean_allocations,
    highs_model,
    slack_lp_for_env,
)
from tsg_envs.game import Game
from tsg_envs.polytope import PolytopeSet

__all__ = [
    "DEFAULT_MU",
    "SlackGuidedConfig",
    "PerPassengerLP",
    "SlackGuidedAgent",
    "make_agent",
    "train",
    "load",
    "METHOD",
]

#: Default μ (minutes per unit of L1 distance from the slack LP's allocation).
DEFAULT_MU: float = 1.0


@dataclass(kw_only=True)
class SlackGuidedConfig:
    """Hyperparameters of the slack-guided LP.

    Attributes:
        mu: μ, minutes of expected wait per unit of L1 distance from the slack LP's allocation
            (0: the myopic LP). [ours: the best of a sweep, see the module docstring]
        tie_break: ε, minutes per unit of normalised capacity use s_t added to every team's
            cost, so that tied waits give a unique optimum. [ours]
        margin: Every risk row is tightened by this much (row units). [ours]
        window_minutes: Windows of the guiding slack LP; ``"env"`` (default) uses the
            environment's ``lp_window_minutes``. [ours]
    """

    mu: float = DEFAULT_MU
    tie_break: float = 1e-5
    margin: float = 1e-9
    window_minutes: float | str | None = "env"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be a finite number >= 0, got {self.mu}")
        if not (np.isfinite(self.tie_break) and self.tie_break >= 0):
            raise ValueError(f"tie_break must be >= 0, got {self.tie_break}")


def capacity_use(game: Game) -> np.ndarray:
    """s_t = Σ_{r∈t} 1/f_r, normalised to mean 1: capacity team t uses per passenger, (T,)."""
    s = game.team_members.astype(float) @ (1.0 / game.rates)
    return s / s.mean()


class PerPassengerLP:
    """One HiGHS model per category: min π·(w + ε s) + μ ‖π − π^slack‖₁ over the polytope.

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
        self._bias = tie_break * capacity_use(game)
        if prices is not None:
            prices = np.asarray(prices, dtype=float)
            if prices.shape != (t,) or not np.isfinite(prices).all():
                raise ValueError(f"prices must be {t} finite numbers, got {prices!r}")
            self._bias = self._bias + prices
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
        canonical = np.concatenate([self._bias, np.full(self._n_col - t, self.mu)])
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
        cost[:t] += self._bias
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


class SlackGuidedAgent:
    """Per passenger, the allocation minimising π·w + μ‖π − π^slack_{c,w}‖₁ in the polytope.

    ``act`` reads the category and time from ``info`` and the team waits from the observation
    (``obs[obs_layout["waits"]]``); every solve starts from the category's canonical basis, so
    it is a pure function of (obs, info), bit for bit.
    """

    def __init__(
        self,
        env: gym.Env,
        config: SlackGuidedConfig | None = None,
        guide: SlackLPSolution | None = None,
    ) -> None:
        self.config = config = config or SlackGuidedConfig()
        u = env.unwrapped
        if config.mu > 0 and guide is None:
            guide = slack_lp_for_env(
                env, SlackLPConfig(window_minutes=config.window_minutes, margin=config.margin)
            )
        self.guide = guide if config.mu > 0 else None
        self._waits = u.obs_layout["waits"]
        self.lp = PerPassengerLP(
            u.game, u.polytopes, config.mu, config.tie_break, self.guide, config.margin
        )

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The per-passenger LP's allocation for the waiting passenger."""
        waits = np.asarray(obs[self._waits], dtype=float)
        return self.lp.solve(int(info["category"]), waits, float(info["time"]))

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """One LP per row, in a loop (documented: no exact batched solver).

        Each passenger's LP has its own polytope and waits; a batched interior-point method
        would not reproduce the canonical-basis simplex solution bit for bit.
        """
        return np.stack([self.act(o, i) for o, i in zip(obs, infos, strict=True)])


def make_agent(env: gym.Env, config: SlackGuidedConfig | None = None) -> SlackGuidedAgent:
    """Solve the guiding slack LP of ``env`` and return the slack-guided agent."""
    return SlackGuidedAgent(env, config)


def train(run: RunConfig) -> SlackGuidedAgent:
    """Solve the guiding slack LP (or resume it from ``run.out``); saves it as ``.npz``."""
    config = config_from_hparams(SlackGuidedConfig, run.hparams)

    def solve(env: gym.Env) -> tuple[SlackGuidedAgent, dict[str, np.ndarray] | None]:
        agent = make_agent(env, config)
        return agent, None if agent.guide is None else agent.guide.arrays()

    return solve_or_resume(run, config, load, solve)


def load(path: Path, env: gym.Env) -> SlackGuidedAgent:
    """The saved config and guiding slack-LP policy, after checking ``env`` is its instance."""
    record, arrays = read_checkpoint(path, "slack-guided")
    check_env_matches(record, env, path)
    config = SlackGuidedConfig(**record["config"])
    guide = SlackLPSolution.from_arrays(arrays) if arrays else None
    return SlackGuidedAgent(env, config, guide)


METHOD = Method(
    name="slack-guided",
    train=train,
    load=load,
    learned=False,
    description="per-passenger LP: min expected wait + mu * L1 distance to the slack LP",
)
