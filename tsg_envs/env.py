"""The online threat-screening environment (one passenger per step).

Provenance: the MDP of Shah, Sinha, Varakantham, Perrault and Tambe, "Solving Online Threat
Screening Games using Constrained Action Space Reinforcement Learning", AAAI 2020, with the
corrections and contract of this project's SPEC (§2-§3).
"""

from __future__ import annotations

import math
from operator import sub as _sub
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from tsg_envs import kernel as kernel_mod
from tsg_envs import kernel_layout as layout
from tsg_envs import validation
from tsg_envs.cache import KeyedCache
from tsg_envs.dynamics import Arrivals, QueueMode, ScreeningDay, sample_arrivals, team_index
from tsg_envs.game import Game, GameConfig
from tsg_envs.instances import make_game
from tsg_envs.kernel import KernelName, kernel_name
from tsg_envs.lp import WindowLPSolution, solve_window_lp, window_edges
from tsg_envs.polytope import FEASIBILITY_TOL, Polytope, PolytopeSet, alpha_project, build_polytopes

InvalidAction = Literal["project", "raise", "penalize"]


__all__ = [
    "ScreeningEnv",
    "make_screening_env",
    "DEFAULT_RISK_SLACK",
    "DEFAULT_VIOLATION_PENALTY",
]

#: Default relative slack on the LP's risk: ψ = ψ^LP (1 + slack). It gives every polytope an
#: interior (the LP's worst categories sit exactly on their bound) and buys some delay.
DEFAULT_RISK_SLACK: float = 0.01
#: Default penalty per unit of violation in ``invalid_action="penalize"`` mode.
DEFAULT_VIOLATION_PENALTY: float = 100.0

class _FromConfig:
    """Default of the game kwargs: take the value from ``config`` (or ``GameConfig()``)."""

    def __repr__(self) -> str:
        return "<from config>"


#: The default of ``n_flights``: the config's value (None means every departure of a real day).
FROM_CONFIG = _FromConfig()

_POLYTOPE_CACHE: KeyedCache[PolytopeSet] = KeyedCache(32)
#: Proposal entries beyond this magnitude are far off the simplex; measuring their rows could
#: overflow, so their violation is taken as inf (they are still finite, so never an error).
_HUGE: float = 1e150
#: The float64 dtype (an action of this dtype skips the conversion).
_F64 = np.dtype(np.float64)
#: The strides of a C-contiguous float64 vector (what the compiled step takes).
_C_STRIDES = (8,)
#: Steps whose outputs (observation, queues, executed action) share one allocation (kernel).
_POOL = 256


def _cached_polytopes(game: Game, risk_bound: np.ndarray) -> PolytopeSet:
    key = None if game.key is None else (game.key, risk_bound.tobytes())
    return _POLYTOPE_CACHE.get_or_make(key, lambda: build_polytopes(game, risk_bound))


class ScreeningEnv(gym.Env):
    """Online threat screening: allocate each arriving passenger to screening teams.

    ## Description
    Passengers of |K| flights arrive at a security checkpoint over a day (normally distributed
    before their flight's departure). Each passenger has a category c = ⟨θ, κ⟩: a risk level θ
    the attacker cannot control and the flight κ it can. For each arrival the agent chooses a
    randomised allocation π over teams of screening resources (a team is a subset of resources;
    each resource r screens f_r passengers per minute and has a queue). The agent must keep the
    risk of an undetected attack below a hard bound ψ for every passenger (the action
    constraints below) while minimising the passengers' waiting time. An attacker who watches the
    procedure and picks flight, method and moment then gains at most Σ_θ ψ_θ in expectation.

    ## Action Space
    ``Box(0, 1, (T,), float32)``: π, an allocation over the T teams that must lie in the current
    category's action polytope (on the simplex: π ≥ 0, Σπ = 1). Any array (or sequence) of real
    numbers is accepted (float, signed or unsigned integer dtypes); complex, boolean, string,
    date-time and object arrays raise ``TypeError`` instead of being converted.

    ## Action Constraints
    For the waiting passenger's category c = ⟨θ, κ⟩ (``info["category"]``, also the one-hot
    ``obs[obs_layout["category"]]``), ``env.unwrapped.polytope(c)`` returns

    | field | shape | meaning |
    |---|---|---|
    | ``A_ub`` | (M + T, T) | rows m < M: -P_θ L_{κ,m} E_{:,m}; rows M + t: -e_t |
    | ``b_ub`` | (M + T,) | ψ_θ - P_θ L_{κ,m}, then zeros |
    | ``A_eq``, ``b_eq`` | (1, T), (1,) | Σ_t π_t = 1 |
    | ``center`` | (T,) | strictly interior point (Chebyshev centre in the simplex hull) |
    | ``radius`` | float | the centre's margin, > 0 |

    i.e. P_θ (1 - z_m) L_{κ,m} ≤ ψ_θ with z_m = Σ_t E_{t,m} π_t. The stacked tensors of all
    categories are ``env.unwrapped.polytopes`` (a ``PolytopeSet``).

    A proposal's violation is max(max_i(a_i·π - b_i), |Σπ - 1|, max(-π)), measured on the action
    as proposed (``info["proposed_violation"]``). A proposal within 1e-6
    (``tsg_envs.FEASIBILITY_TOL``) is accepted in every mode; what executes is its renormalised
    form (clipped at 0, divided by its sum; the proposal itself, bit for bit, when it already is
    on the simplex), α-projected toward the centre if renormalising took it past the tolerance,
    so the executed action satisfies every row, the simplex and π ≥ 0 within 1e-6. A proposal
    outside the tolerance is handled by ``invalid_action``:

    * ``"project"`` (default): clip at 0, renormalise (the centre if nothing is left) and
      α-project toward the centre; that feasible action executes;
    * ``"raise"``: ``ValueError`` naming the category, the row and the amount;
    * ``"penalize"``: the renormalised action executes as proposed, even though it breaks the
      bound, and ``violation_penalty × e`` is subtracted from the reward, with e = max(0,
      max_m(a_m·s - b_m)) the risk rows' excess of the executed (renormalised) action s. On the
      simplex e is bounded, so every finite proposal gives a finite reward; a proposal off the
      simplex whose renormalised form meets the bound is not penalised.

    NaN, inf and a wrong shape raise ``ValueError`` in every mode. ``env.unwrapped.check_action``
    applies the same checks without stepping.

    ## Observation Space
    A flat ``Box(float32)`` of size 2C + R + T + 1; ``env.unwrapped.obs_layout`` maps names to
    slices:

    | name | size | meaning |
    |---|---|---|
    | ``category`` | C | one-hot of the waiting passenger's category (all zero after the last) |
    | ``backlog`` | R | queue backlog of each resource in minutes, ξ_r / f_r |
    | ``waits`` | T | each team's current wait w_t = max_{r∈t} ξ_r / f_r, minutes |
    | ``history`` | C | passengers of each category screened so far / expected daily count |
    | ``clock`` | 1 | τ / day length (0 at the day start, 1 at the last possible arrival) |

    The schedule (departures, flight sizes) is public through ``env.unwrapped.game``; the agent
    never sees future arrivals.

    ## Rewards
    ``reward = -wait - penalty``: ``wait`` is the passenger's expected wait Σ_t π_t w_t
    (``queue_mode="expected"``) or the realised wait w_{t*} of the team t* ~ π drawn by the
    environment (``"sampled"``); ``penalty`` is 0 except in ``"penalize"`` mode. Both are in
    ``info`` (``wait``, ``penalty``).

    ## Starting State
    ``reset(seed=...)`` draws the day's arrival times and passenger risk levels; the instance
    (rates, efficacies, losses, schedule, flight sizes) is fixed by ``instance_seed`` at
    construction. Queues start empty. ``reset(options={"arrivals": Arrivals})`` replays a given
    day.

    ## Episode End
    Terminates after the last passenger (every episode of an instance has
    ``game.n_passengers`` steps); never truncates.

    ## Info
    Every ``reset``/``step`` info: ``category``, ``theta``, ``flight``, ``time`` (of the
    passenger now waiting; -1 for the first three after the last passenger). Every ``step``
    info also: ``queues`` (ξ in passengers after draining, before this passenger's load),
    ``wait``, ``penalty``, ``proposed_violation``, ``executed_action``, ``team`` (sampled mode,
    else -1).

    ## Arguments
    | kwarg | default | meaning |
    |---|---|---|
    | ``n_flights`` | from config (10) | flights |K|, 1 to 500; None: every departure of a |
    |  |  | real schedule (``jfk:``/``csv:``) |
    | ``arrival_std`` | from config (45.0) | σ of arrivals, minutes, 0 to 200 |
    | ``horizon`` | from config (``"shift"``) | ``"window"``, ``"shift"`` or ``"day"`` |
    | ``instance_seed`` | 0 | fixes the ``Game``; an integer >= 0 (``1.0`` is refused) |
    | ``queue_mode`` | ``"expected"`` | or ``"sampled"`` |
    | ``invalid_action`` | ``"project"`` | or ``"raise"``, ``"penalize"`` |
    | ``risk_bound`` | None | ψ, shape (Θ,); None: LP ψ × (1 + ``risk_slack``) |
    | ``risk_slack`` | 0.01 | slack on the LP's ψ, 0 to 100 |
    | ``lp_window_minutes`` | ``"auto"``: 60 (None, one window, | window of the LP that sets ψ, |
    |  | for ``"window"``) | 15 to 3,600 minutes, or None |
    | ``schedule`` | from config (``"hub"``) | ``"hub"``, ``"jfk:YYYY-MM-DD"``, ``"csv:PATH"`` |
    | ``capacity_ratio`` | None | ρ of the rate calibration, 0.1 to 100 (None: horizon |
    |  |  | default) |
    | ``departure_span`` | from config (60.0) | window horizon: minutes from 08:00 over which |
    |  |  | departures are drawn (v1 ids 60, v2 ids 360) |
    | ``planning_utilisation`` | from config (1.0) | u, the share of capacity the static LP plans |
    |  |  | to use, 0.05 to 1 (v1 ids 1, v2 single-window ids below 1) |
    | ``violation_penalty`` | 100.0 | penalty per unit risk excess (``"penalize"``), 0 to 1e6 |
    | ``render_mode`` | None | ``"ansi"`` or ``"rgb_array"`` (no ``"human"``: no display |
    |  |  | stack is shipped; an unsupported mode fails at construction) |
    | ``config`` | None | a full ``GameConfig`` (None: ``GameConfig()``); the game kwargs |
    |  |  | above override its fields when given, and keep its values when left out |
    | ``game`` | None | a ready ``Game`` instance (e.g. hand-built); when given, it is used as is |
    |  |  | and ``config``, ``instance_seed`` and the instance kwargs above are ignored |

    Every argument is checked at construction, before any work, against the bounds of
    :mod:`tsg_envs.validation` (at most 500 flights, 100,000 passengers, ...): a wrong kind of
    value raises ``TypeError``, an out-of-range one ``ValueError``, naming the argument.

    ```python
    import gymnasium as gym
    import tsg_envs  # registers the ids

    env = gym.make("tsg/Screening-v1", instance_seed=3, queue_mode="sampled")
    ```

    ## Version History
    * v2: the single-window ids only (``Window-{N}F[-Sigma{σ}]-v2``; every v1 id stays registered
      unchanged). Departures spread over 6 hours (``departure_span`` 360) with σ = 15 minutes
      for the flights grid, so the category mix changes within the window, and the static LP
      plans at utilisation u = 0.6 of the raw capacity (``planning_utilisation``), so its
      binding resource is not critically loaded; the binding step makes that planned capacity
      bind on every instance seed. On v1 a clairvoyant plan gained little over the LP
      (``docs/model.md``, "The single-window family v2"; ``tsg_envs.bracket``).
    * v1: every id. The single-window ids (``Window-*``) draw each instance seed until the single
      window's capacity binds without overload (``GameConfig.window_tightness``; v0 needed the
      LP's overload stretch on about half of instance seeds 0-99, or never bound, and its
      polytopes then sat at the best reachable risk). The static LP's policy and ψ are now unique
      (a strictly convex last stage): v0's ψ depended on HiGHS's path by up to 0.3% on
      ``tsg/Screening-v1``'s instances, so every id's polytopes moved by that much.
    * v0: initial release (retired; ``tsg/Screening-v0``, the default game's name in the
      specification, stays registered as an alias of ``tsg/Screening-v1``: the same instances,
      ψ from the unique LP).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        n_flights: int | None | _FromConfig = FROM_CONFIG,
        arrival_std: float | None = None,
        horizon: str | None = None,
        instance_seed: int = 0,
        queue_mode: QueueMode = "expected",
        invalid_action: InvalidAction = "project",
        risk_bound: np.ndarray | None = None,
        risk_slack: float = DEFAULT_RISK_SLACK,
        lp_window_minutes: float | None | Literal["auto"] = "auto",
        schedule: str | None = None,
        capacity_ratio: float | None = None,
        departure_span: float | None = None,
        planning_utilisation: float | None = None,
        violation_penalty: float = DEFAULT_VIOLATION_PENALTY,
        config: GameConfig | None = None,
        render_mode: str | None = None,
        game: Game | None = None,
    ) -> None:
        # Every argument is checked here, before any work (validation's bounds and messages).
        v = validation
        if render_mode is not None and (
            not isinstance(render_mode, str) or render_mode not in self.metadata["render_modes"]
        ):
            hint = (
                " ('human' needs a display stack tsg-envs does not ship: use 'rgb_array' and "
                "show the frames yourself)"
                if isinstance(render_mode, str) and render_mode == "human"
                else ""
            )
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {v.describe(render_mode)}{hint}"
            )
        v.check_choice("invalid_action", invalid_action, ("project", "raise", "penalize"))
        v.check_choice("queue_mode", queue_mode, ("expected", "sampled"))
        instance_seed = v.check_int("instance_seed", instance_seed, low=0)
        risk_slack = v.check_real("risk_slack", risk_slack, low=0.0, high=v.MAX_RISK_SLACK)
        violation_penalty = v.check_real(
            "violation_penalty", violation_penalty, low=0.0, high=v.MAX_VIOLATION_PENALTY
        )
        if isinstance(lp_window_minutes, str):
            v.check_choice("lp_window_minutes (a number of minutes, None or)", lp_window_minutes,
                           ("auto",))
        elif lp_window_minutes is not None:
            lp_window_minutes = v.check_real(
                "lp_window_minutes", lp_window_minutes,
                low=v.MIN_LP_WINDOW_MINUTES, high=v.MAX_DAY_MINUTES,
            )
        if config is not None and not isinstance(config, GameConfig):
            raise TypeError(f"config must be a tsg_envs.GameConfig, got {v.describe(config)}")
        # Game kwargs left out keep the config's value (GameConfig()'s without a config): a
        # default here would silently override a config passed in.
        overrides = {
            "arrival_std": arrival_std,
            "horizon": horizon,
            "schedule": schedule,
            "capacity_ratio": capacity_ratio,
            "departure_span": departure_span,
            "planning_utilisation": planning_utilisation,
        }
        if game is not None:
            if not isinstance(game, Game):
                raise TypeError(f"game must be a tsg_envs.Game, got {v.describe(game)}")
            cfg = game.config
        else:
            base = config if config is not None else GameConfig()
            changes: dict[str, Any] = {key: val for key, val in overrides.items()
                                       if val is not None}
            if n_flights is not FROM_CONFIG:
                changes["n_flights"] = n_flights  # None: every departure of a real schedule
            cfg = base.replace(**changes)  # GameConfig checks every field

        # Constants of the instance --------------------------------------------------------
        self.game: Game = game if game is not None else make_game(cfg, instance_seed)
        self.instance_seed = instance_seed if game is None else game.seed
        self.queue_mode: QueueMode = queue_mode
        self.invalid_action: InvalidAction = invalid_action
        self.risk_slack = risk_slack
        self.violation_penalty = violation_penalty  # reward units per unit violation
        if lp_window_minutes == "auto":
            lp_window_minutes = None if cfg.horizon == "window" else 60.0
        self.lp_window_minutes: float | None = lp_window_minutes  # minutes
        window_edges(self.game, lp_window_minutes)  # the LP's size bound, before any solve
        if risk_bound is None:
            psi = self.lp_solution.psi * (1.0 + self.risk_slack)
        else:
            psi = v.check_real_array(
                "risk_bound", risk_bound, shape=(self.game.n_risk_levels,), low=0.0
            )
        psi.setflags(write=False)
        self.risk_bound: np.ndarray = psi
        self.polytopes: PolytopeSet = _cached_polytopes(self.game, psi)
        g = self.game
        m, t = g.n_methods, g.n_teams
        self._a_risk = np.ascontiguousarray(self.polytopes.A_ub[:, :m, :])
        self._b_risk = np.ascontiguousarray(self.polytopes.b_ub[:, :m])
        self._inv_expected = 1.0 / np.maximum(g.expected_category_counts(), 1e-12)
        # Per-category risk rows as a list (no view per step) and Python floats for the hot path.
        self._a_risk_list = list(self._a_risk)
        self._b_risk_list = list(self._b_risk)
        self._b_risk_py = [row.tolist() for row in self._b_risk]
        self._inv_expected_list = self._inv_expected.tolist()
        # Largest |coefficient| of each category's risk rows (bounds |a·π| for π ≥ 0, Σπ ≈ 1).
        row_scale = np.abs(self._a_risk).max(axis=(1, 2))
        self._row_scale_list = row_scale.tolist()

        # Spaces ------------------------------------------------------------------------------
        c, r = g.n_categories, g.n_resources
        sizes = [("category", c), ("backlog", r), ("waits", t), ("history", c), ("clock", 1)]
        self.obs_layout: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.obs_layout[name] = slice(start, start + size)
            start += size
        low = np.zeros(start, dtype=np.float32)
        high = np.full(start, np.inf, dtype=np.float32)
        high[self.obs_layout["category"]] = 1.0
        high[self.obs_layout["clock"]] = 1.0
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = spaces.Box(0.0, 1.0, shape=(t,), dtype=np.float32)
        self.render_mode = render_mode
        self._last_wait = 0.0
        self._action_shape = (t,)
        self._obs_buf = np.zeros(start, dtype=np.float32)
        self._onehot_pos = 0
        self._category_start = self.obs_layout["category"].start
        # backlog and waits are adjacent: the day's ``minutes`` fill both in one write.
        self._minutes_slice = slice(self.obs_layout["backlog"].start,
                                    self.obs_layout["waits"].stop)
        self._history_slice = self.obs_layout["history"]
        self._history_start = self._history_slice.start
        self._clock_pos = self.obs_layout["clock"].start
        self._day_length = self.game.day_length
        # The implementation (tsg_envs.kernel): the compiled kernel covers expected queues.
        self.kernel: KernelName = kernel_name() if queue_mode == "expected" else "numpy"
        self._kernel_on = self.kernel == "numba"
        self._fused: Any = None  # the compiled step, loaded at the first step
        if self.kernel == "numba":
            self._buffer = layout.pack(
                rates=g.rates, members=g.team_members, team_idx=team_index(g),
                a_risk=self._a_risk, b_risk=self._b_risk, row_scale=row_scale,
                inv_expected=self._inv_expected, category_start=self._category_start,
                history_start=self._history_start, minutes_start=self._minutes_slice.start,
                clock_pos=self._clock_pos, day_length=self._day_length,
            )
            self._day = ScreeningDay(g, queue_mode, state=self._buffer)
        else:
            self._day = ScreeningDay(g, queue_mode)
        self._pool_row = _POOL  # the output rows of the kernel's steps (made when first needed)

    # Public helpers -------------------------------------------------------------------------
    @property
    def lp_solution(self) -> WindowLPSolution:
        """The static window LP of this instance (cached per instance and window length)."""
        return solve_window_lp(self.game, self.lp_window_minutes)

    def polytope(self, c: int) -> Polytope:
        """The action polytope of category ``c`` (see Action Constraints)."""
        return self.polytopes[c]

    # Gymnasium API ------------------------------------------------------------------------
    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Screen the waiting passenger with ``action`` and move to the next arrival."""
        if (self._kernel_on and type(action) is np.ndarray and action.dtype is _F64
                and action.shape == self._action_shape and action.strides == _C_STRIDES):
            out = self._step_fused(action)
            if out is not None:
                return out
        day = self._day
        c = day.category
        if c < 0:
            raise RuntimeError("episode is over: call reset() before step()")
        # The hot path: a finite proposal of the right shape, on the simplex to within the
        # tolerance and non-negative (what a constrained agent proposes). The same numbers as
        # _measure and the general path below, with fewer calls; anything else goes there.
        a = action
        if type(a) is not np.ndarray or a.dtype is not _F64:  # one cheap test on the hot path
            a = validation.real_array("action", action)  # refuses complex, bool, str, objects
        if a.shape == self._action_shape:
            p = a.tolist()
            amin = min(p)
            if amin >= 0.0 and max(p) <= _HUGE:  # NaN fails these comparisons
                try:
                    total = math.fsum(p)
                except (OverflowError, ValueError):
                    total = math.nan
                # The same differences as numpy's, one float at a time (no array built).
                rows = max(map(_sub, self._a_risk_list[c].dot(a).tolist(), self._b_risk_py[c]))
                dev = abs(total - 1.0)  # NaN (some entry is NaN) fails the test below
                if dev <= FEASIBILITY_TOL and rows <= FEASIBILITY_TOL:
                    viol = max(0.0, rows, dev)
                    if total == 1.0:
                        executed = a.copy() if a is action else a
                    else:
                        executed = a / total
                        if rows + self._row_scale_list[c] * dev * 2.0 > FEASIBILITY_TOL - 1e-12:
                            executed = self._reproject(executed, c)
                    return self._advance(c, executed, 0.0, viol)
        a, excess, total, amin, viol, rows = self._measure(action, c)
        penalty = 0.0
        if viol > FEASIBILITY_TOL:
            if self.invalid_action == "raise":
                raise ValueError(self._describe_violation(c, a, excess, total))
            s = np.maximum(a, 0.0)
            smax = s.max()
            if excess is None and smax > 0:  # huge entries: scale first, so no sum overflows
                s /= smax
            ssum = s.sum()
            s = s / ssum if ssum > 0 else self.polytopes.centers[c].copy()
            if self.invalid_action == "project":
                executed = alpha_project(
                    s, self.polytopes.centers[c], self.polytopes.A_ub[c], self.polytopes.b_ub[c]
                )
            else:
                # The renormalised action executes as proposed; the penalty prices its risk
                # excess (bounded on the simplex), so every finite proposal gives a finite reward.
                executed = s
                excess_s = self._a_risk_list[c].dot(s) - self._b_risk_list[c]
                penalty = self.violation_penalty * max(0.0, max(excess_s.tolist()))
        else:
            # Within the tolerance: accepted in every mode. What executes is its renormalised
            # form (bit-identical to the proposal when it already is on the simplex) ...
            renormalised = True
            if amin < 0:
                executed = np.maximum(a, 0.0)
                executed /= executed.sum()
            elif total != 1.0:  # a ≥ 0: the same renormalisation in one call
                executed = a / total
            else:
                executed = a.copy() if a is action else a
                renormalised = False
            # ... α-projected if renormalising pushed a risk row past the tolerance (dividing
            # by a sum just above 1 moves a row with coefficients ~10 by ~10x the sum's error).
            # Dividing a ≥ 0 by its sum moves a row by at most |a·π| |1 - 1/Σπ| ≤ (largest row
            # coefficient) |Σπ - 1|: re-measure only when that could cross the tolerance.
            if renormalised and (
                amin < 0
                or rows + self._row_scale_list[c] * abs(total - 1.0) * 2.0
                > FEASIBILITY_TOL - 1e-12
            ):
                executed = self._reproject(executed, c)
        return self._advance(c, executed, penalty, viol)

    def _step_fused(self, action: np.ndarray
                    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]] | None:
        """The common step as one compiled call (tsg_envs.kernel); None: take the numpy path.

        The returned observation, queues and executed action are rows of arrays made every
        :data:`_POOL` steps, each row handed out once and never written again.
        """
        fused = self._fused
        if fused is None:
            # The entry point without numba's type matching: step() passed a C-contiguous
            # float64 action of the right shape; the rest are this env's own arrays and numbers.
            fused = self._fused = kernel_mod.load_kernel().fused_step_unchecked
        j = self._pool_row
        if j == _POOL:
            t = self._action_shape[0]
            self._pool_obs = np.empty((_POOL, self._obs_buf.shape[0]), dtype=np.float32)
            self._pool_queues = np.empty((_POOL, self.game.n_resources))
            self._pool_actions = np.empty((_POOL, t))
            j = 0
        try:
            out = self._day.step_fused(fused, action, self._obs_buf, self._pool_obs,
                                       self._pool_queues, self._pool_actions, j,
                                       self._onehot_pos)
        except TypeError:  # a type the kernel does not take (step() checks it before)
            return None
        if out is None:
            return None
        self._pool_row = j + 1
        wait, viol, nxt, theta, flight, clock = out
        self._last_wait = wait
        if nxt >= 0:
            self._onehot_pos = self._category_start + nxt
        info = {
            "category": nxt,
            "theta": theta,
            "flight": flight,
            "time": clock,
            "queues": self._pool_queues[j],
            "wait": wait,
            "penalty": 0.0,
            "proposed_violation": viol,
            "executed_action": self._pool_actions[j],
            "team": -1,
        }
        return self._pool_obs[j], -wait - 0.0, nxt < 0, False, info

    def __getstate__(self) -> dict[str, Any]:
        """Picklable: the compiled step is not; it is loaded again at the next step."""
        state = self.__dict__.copy()
        state["_fused"] = None
        return state

    def _reproject(self, executed: np.ndarray, c: int) -> np.ndarray:
        """α-project a renormalised proposal if renormalising pushed a risk row past the tol."""
        exec_excess = self._a_risk_list[c].dot(executed) - self._b_risk_list[c]
        if max(exec_excess.tolist()) > FEASIBILITY_TOL:
            return alpha_project(executed, self.polytopes.centers[c], self.polytopes.A_ub[c],
                                 self.polytopes.b_ub[c])
        return executed

    def _advance(self, c: int, executed: np.ndarray, penalty: float, viol: float
                 ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Screen the waiting passenger (category ``c``) with ``executed``; the step's return."""
        day = self._day
        result = day.step(executed, self._np_random)
        wait = result.wait
        self._last_wait = wait
        # The observation changes only where the state did: the history entry of the category
        # just screened, the one-hot, the minutes (backlog, then waits) and the clock.
        buf = self._obs_buf
        buf[self._history_start + c] = day.screened(c) * self._inv_expected_list[c]
        nxt, theta, flight, clock = day.waiting()
        buf[self._onehot_pos] = 0.0
        if nxt >= 0:
            pos = self._category_start + nxt
            buf[pos] = 1.0
            self._onehot_pos = pos
        buf[self._minutes_slice] = day.minutes
        buf[self._clock_pos] = min(clock / self._day_length, 1.0)
        info = {
            "category": nxt,
            "theta": theta,
            "flight": flight,
            "time": clock,
            "queues": result.queues,
            "wait": wait,
            "penalty": penalty,
            "proposed_violation": viol,
            "executed_action": executed,
            "team": result.team,
        }
        return buf.copy(), -wait - penalty, nxt < 0, False, info

    def check_action(self, action: Any) -> float:
        """Check a proposal for the waiting passenger as :meth:`step` would, without stepping.

        Raises ``ValueError`` for a wrong shape, NaN or inf (every mode) and, in ``"raise"``
        mode, for a proposal outside the polytope by more than the tolerance.

        Returns:
            The proposal's violation (``info["proposed_violation"]`` of the step it would make).
        """
        c = self._day.category
        if c < 0:
            raise RuntimeError("episode is over: call reset() before checking an action")
        a, excess, total, _, viol, _ = self._measure(action, c)
        if viol > FEASIBILITY_TOL and self.invalid_action == "raise":
            raise ValueError(self._describe_violation(c, a, excess, total))
        return viol

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a new day of arrivals (or replay ``options["arrivals"]``) with empty queues."""
        super().reset(seed=seed)
        arrivals = None if options is None else options.get("arrivals")
        if arrivals is None:
            arrivals = sample_arrivals(self.game, self.np_random)
        elif not isinstance(arrivals, Arrivals):
            raise TypeError("options['arrivals'] must be a tsg_envs.Arrivals")
        self._day.reset(arrivals)
        self._last_wait = 0.0
        return self.observation(), self.waiting_info()

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: one line of queues and waits; ``"rgb_array"``: queue backlogs as bars."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode to make().")
            return None
        day = self._day
        backlog = day.queues / self.game.rates
        if self.render_mode == "ansi":
            clock = (self.game.day_start + day.clock) % 1440
            hh, mm = divmod(int(clock), 60)
            queues = " ".join(f"r{i}:{b:5.1f}" for i, b in enumerate(backlog))
            total = 0 if day.arrivals is None else len(day.arrivals)
            return (
                f"{hh:02d}:{mm:02d} pax {day.index}/{total} "
                f"cat {day.category:>3d} | backlog min [{queues}] | "
                f"min wait {day.team_waits.min():5.1f} | last wait {self._last_wait:5.1f}\n"
            )
        height, bar_w, gap = 160, 40, 10
        r = self.game.n_resources
        img = np.full((height, r * (bar_w + gap) + gap, 3), 255, dtype=np.uint8)
        scale = max(30.0, float(backlog.max()))  # 30 minutes full scale, grows if needed
        for i, b in enumerate(backlog):
            h = int(round((height - 10) * min(b / scale, 1.0)))
            x0 = gap + i * (bar_w + gap)
            color = (200, 60, 60) if b > 15 else (60, 120, 200)
            if h > 0:
                img[height - h :, x0 : x0 + bar_w] = color
        img[height - 1, :] = 0
        return img

    def close(self) -> None:
        """Nothing to release."""

    # Faces: the duel and the attacker's env read and extend the day through these ---------
    @property
    def day(self) -> ScreeningDay:
        """The day being screened (read its public state; step it only through :meth:`step`)."""
        return self._day

    def insert_passenger(self, theta: int, flight: int) -> None:
        """Put an extra passenger of ⟨θ, κ⟩ in line now (see ``ScreeningDay.insert_passenger``).

        The next :meth:`step` screens it; :meth:`observation` and :meth:`waiting_info` then
        describe it. Used by the duel to insert the attacker.
        """
        self._day.insert_passenger(theta, flight)

    def observation(self) -> np.ndarray:
        """The observation of the current state (a fresh array; as ``reset``/``step`` return)."""
        self._obs_buf[self._history_slice] = self._day.history * self._inv_expected
        return self._write_state()

    def waiting_info(self) -> dict[str, Any]:
        """``category``, ``theta``, ``flight``, ``time`` of the passenger now waiting."""
        day = self._day
        return {
            "category": day.category,
            "theta": day.theta,
            "flight": day.flight,
            "time": day.clock,
        }

    # Internals ---------------------------------------------------------------------------
    def _write_state(self, c: int | None = None) -> np.ndarray:
        """Write everything but the history into the observation buffer; return a copy.

        ``c``: the waiting category, if at hand.
        """
        day = self._day
        buf = self._obs_buf
        buf[self._onehot_pos] = 0.0
        if c is None:
            c = day.category
        self._onehot_pos = self._category_start + c if c >= 0 else self._category_start
        if c >= 0:
            buf[self._onehot_pos] = 1.0
        buf[self._minutes_slice] = day.minutes
        buf[self._clock_pos] = min(day.clock / self._day_length, 1.0)
        return buf.copy()

    def _measure(
        self, action: Any, c: int
    ) -> tuple[np.ndarray, Any, float, float, float, float]:
        """(proposal as float64, risk-row excess, Σπ, min π, violation, max row excess)."""
        a = validation.real_array("action", action)
        if a.shape != self._action_shape:
            raise ValueError(f"action must have shape {self._action_shape}, got {a.shape}")
        # A handful of numbers: Python's builtins are cheaper than numpy reductions here (min and
        # max are exact in any order; fsum is the correctly rounded sum).
        p = a.tolist()
        try:
            total = math.fsum(p)
        except OverflowError:  # the running sum overflowed before any NaN or inf was seen
            total = math.inf if bool(np.isfinite(a).all()) else math.nan
        except ValueError:  # inf - inf
            total = math.nan
        if total != total:  # NaN: some entry is NaN, or inf and -inf meet
            raise ValueError(f"action must be finite, got {a}")
        amin, amax = min(p), max(p)
        if not (math.isfinite(amin) and math.isfinite(amax)):  # a lone +inf or -inf
            raise ValueError(f"action must be finite, got {a}")
        if amax > _HUGE or amin < -_HUGE:
            # Row products could overflow (to inf, or NaN from inf - inf): far off the simplex.
            return a, None, total, amin, math.inf, math.inf
        excess = self._a_risk_list[c].dot(a) - self._b_risk_list[c]
        rows = max(excess.tolist())
        return a, excess, total, amin, max(0.0, rows, abs(total - 1.0), -amin), rows

    def _describe_violation(
        self, c: int, a: np.ndarray, excess: np.ndarray, total: float
    ) -> str:
        theta, flight = self.game.split_category(c)
        m = self.game.n_methods
        if excess is None:
            return (
                f"action violates the polytope of category {c} (theta={theta}, flight={flight}): "
                f"entries of magnitude above {_HUGE:g} put it far off the simplex, got {a}"
            )
        candidates = [(float(excess[i]), f"risk row {i} (method m={i})") for i in range(m)]
        j = int(np.argmin(a))
        candidates.append((float(-a[j]), f"row {m + j} (pi[{j}] >= 0)"))
        candidates.append((abs(total - 1.0), "the simplex equality sum(pi) = 1"))
        amount, row = max(candidates)
        return (
            f"action violates the polytope of category {c} (theta={theta}, flight={flight}): "
            f"{row} is off by {amount:.3g} > {FEASIBILITY_TOL:g}"
        )


def make_screening_env(**kwargs: Any) -> ScreeningEnv:
    """The registered ids' entry point: ``ScreeningEnv(**kwargs)``.

    A function rather than the class, so that ``gym.make`` passes ``render_mode`` through
    unchanged and an unsupported mode fails at construction (see ``registration.ENTRY_POINT``).
    """
    return ScreeningEnv(**kwargs)
