"""The online threat-screening environment (one passenger per step).

Provenance: the MDP of Shah, Sinha, Varakantham, Perrault and Tambe, "Solving Online Threat
Screening Games using Constrained Action Space Reinforcement Learning", AAAI 2020, with the
corrections and contract of this project's SPEC (§2-§3).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from tsg_envs.dynamics import Arrivals, QueueMode, ScreeningDay, sample_arrivals
from tsg_envs.game import Game, GameConfig, make_game
from tsg_envs.lp import WindowLPSolution, solve_window_lp
from tsg_envs.polytope import FEASIBILITY_TOL, Polytope, PolytopeSet, alpha_project, build_polytopes

InvalidAction = Literal["project", "raise", "penalize"]


__all__ = ["ScreeningEnv", "DEFAULT_RISK_SLACK", "DEFAULT_VIOLATION_PENALTY"]

#: Default relative slack on the LP's risk: ψ = ψ^LP (1 + slack). It gives every polytope an
#: interior (the LP's worst categories sit exactly on their bound) and buys some delay.
DEFAULT_RISK_SLACK: float = 0.01
#: Default penalty per unit of violation in ``invalid_action="penalize"`` mode.
DEFAULT_VIOLATION_PENALTY: float = 100.0

_POLYTOPE_CACHE: OrderedDict = OrderedDict()


def _cached_polytopes(game: Game, risk_bound: np.ndarray) -> PolytopeSet:
    key = None if game.key is None else (game.key, risk_bound.tobytes())
    if key is not None and key in _POLYTOPE_CACHE:
        _POLYTOPE_CACHE.move_to_end(key)
        return _POLYTOPE_CACHE[key]
    polys = build_polytopes(game, risk_bound)
    if key is not None:
        _POLYTOPE_CACHE[key] = polys
        if len(_POLYTOPE_CACHE) > 32:
            _POLYTOPE_CACHE.popitem(last=False)
    return polys


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
    category's action polytope (on the simplex: π ≥ 0, Σπ = 1).

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
    categories are ``env.unwrapped.polytopes`` (a ``PolytopeSet``). An action violating any row
    by more than 1e-6 (``tsg_envs.FEASIBILITY_TOL``) is handled by ``invalid_action``:
    ``"project"`` (default) clips at 0, renormalises and α-projects it toward the centre before
    executing it; ``"raise"`` raises ``ValueError`` naming the category, the row and the amount;
    ``"penalize"`` executes the renormalised action as proposed (breaking the bound) and
    subtracts ``violation_penalty × violation`` from the reward. NaN, inf and a wrong shape
    raise ``ValueError`` in every mode.

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
    | ``n_flights`` | 10 | flights |K| |
    | ``arrival_std`` | 45.0 | σ of arrivals, minutes |
    | ``horizon`` | ``"shift"`` | ``"window"``, ``"shift"`` or ``"day"`` |
    | ``instance_seed`` | 0 | fixes the ``Game`` |
    | ``queue_mode`` | ``"expected"`` | or ``"sampled"`` |
    | ``invalid_action`` | ``"project"`` | or ``"raise"``, ``"penalize"`` |
    | ``risk_bound`` | None | ψ, shape (Θ,); None: LP ψ × (1 + ``risk_slack``) |
    | ``risk_slack`` | 0.01 | slack on the LP's ψ |
    | ``lp_window_minutes`` | 60 (None for ``"window"``) | window of the LP that sets ψ |
    | ``schedule`` | ``"hub"`` | ``"hub"``, ``"jfk:YYYY-MM-DD"``, ``"csv:PATH"`` |
    | ``capacity_ratio`` | None | ρ of the rate calibration (None: horizon default) |
    | ``violation_penalty`` | 100.0 | penalty per unit violation (``"penalize"``) |
    | ``config`` | None | a full ``GameConfig``; the kwargs above override its fields |
    | ``game`` | None | a ready ``Game`` instance (e.g. hand-built); when given, it is used as is |
    |  |  | and ``config``, ``instance_seed`` and the instance kwargs above are ignored |

    ```python
    import gymnasium as gym
    import tsg_envs  # registers the ids

    env = gym.make("tsg/Screening-v0", instance_seed=3, queue_mode="sampled")
    ```

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        n_flights: int | None = 10,
        arrival_std: float | None = 45.0,
        horizon: str | None = "shift",
        instance_seed: int = 0,
        queue_mode: QueueMode = "expected",
        invalid_action: InvalidAction = "project",
        risk_bound: np.ndarray | None = None,
        risk_slack: float = DEFAULT_RISK_SLACK,
        lp_window_minutes: float | None | Literal["auto"] = "auto",
        schedule: str | None = None,
        capacity_ratio: float | None = None,
        violation_penalty: float = DEFAULT_VIOLATION_PENALTY,
        config: GameConfig | None = None,
        render_mode: str | None = None,
        game: Game | None = None,
    ) -> None:
        if invalid_action not in ("project", "raise", "penalize"):
            raise ValueError(
                f"invalid_action must be 'project', 'raise' or 'penalize', got {invalid_action!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if not (np.isfinite(risk_slack) and risk_slack >= 0):
            raise ValueError(f"risk_slack must be >= 0, got {risk_slack}")
        overrides = {
            "n_flights": n_flights,
            "arrival_std": arrival_std,
            "horizon": horizon,
            "schedule": schedule,
            "capacity_ratio": capacity_ratio,
        }
        if game is not None:
            if not isinstance(game, Game):
                raise TypeError(f"game must be a tsg_envs.Game, got {type(game).__name__}")
            cfg = game.config
        else:
            base = config if config is not None else GameConfig()
            changes = {k: v for k, v in overrides.items() if v is not None}
            if config is None and n_flights is None:
                changes["n_flights"] = None
            cfg = base.replace(**changes)

        # Constants of the instance --------------------------------------------------------
        self.game: Game = game if game is not None else make_game(cfg, int(instance_seed))
        self.instance_seed = int(instance_seed) if game is None else game.seed
        self.queue_mode: QueueMode = queue_mode
        self.invalid_action: InvalidAction = invalid_action
        self.risk_slack = float(risk_slack)
        self.violation_penalty = float(violation_penalty)  # reward units per unit violation
        if lp_window_minutes == "auto":
            lp_window_minutes = None if cfg.horizon == "window" else 60.0
        self.lp_window_minutes: float | None = lp_window_minutes  # minutes
        if risk_bound is None:
            psi = self.lp_solution.psi * (1.0 + self.risk_slack)
        else:
            psi = np.asarray(risk_bound, dtype=float).copy()
            if psi.shape != (self.game.n_risk_levels,):
                raise ValueError(
                    f"risk_bound must have shape ({self.game.n_risk_levels},), got {psi.shape}"
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
        self._inv_expected_list = self._inv_expected.tolist()
        self._day = ScreeningDay(g, queue_mode)

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
        self._backlog_slice = self.obs_layout["backlog"]
        self._waits_slice = self.obs_layout["waits"]
        self._history_slice = self.obs_layout["history"]
        self._history_start = self._history_slice.start
        self._clock_pos = self.obs_layout["clock"].start
        self._day_length = self.game.day_length

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
        day = self._day
        if day.done:
            raise RuntimeError("episode is over: call reset() before step()")
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self._action_shape:
            raise ValueError(f"action must have shape {self._action_shape}, got {a.shape}")
        # A handful of numbers: Python's builtins are cheaper than numpy reductions here (min and
        # max are exact in any order; fsum is the correctly rounded sum).
        p = a.tolist()
        try:
            total = math.fsum(p)
        except (ValueError, OverflowError):  # inf - inf, or overflow
            total = math.nan
        if not math.isfinite(total):  # any NaN or inf makes the sum non-finite
            raise ValueError(f"action must be finite, got {a}")
        c = day.category
        excess = self._a_risk_list[c].dot(a) - self._b_risk_list[c]
        amin = min(p)
        viol = max(0.0, max(excess.tolist()), abs(total - 1.0), -amin)
        penalty = 0.0
        if viol > FEASIBILITY_TOL:
            if self.invalid_action == "raise":
                raise ValueError(self._describe_violation(c, a, excess, total))
            s = np.maximum(a, 0.0)
            ssum = s.sum()
            s = s / ssum if ssum > 0 else self.polytopes.centers[c].copy()
            if self.invalid_action == "project":
                executed = alpha_project(
                    s, self.polytopes.centers[c], self.polytopes.A_ub[c], self.polytopes.b_ub[c]
                )
            else:
                executed = s
                penalty = self.violation_penalty * viol
        elif amin < 0:
            executed = np.maximum(a, 0.0)
            executed /= executed.sum()
        elif total != 1.0:  # a ≥ 0: the same renormalisation in one call
            executed = a / total
        else:
            executed = a.copy() if a is action else a
        result = day.step(executed, self.np_random)
        self._last_wait = result.wait
        reward = -result.wait - penalty
        # The observation changes only where the state did: the history entry of the category
        # just screened is updated here, the rest is written by _write_state().
        h = self._history_start + c
        self._obs_buf[h] = day._history[c] * self._inv_expected_list[c]
        i = day.index
        waiting = i < day._n
        info = {
            "category": day._cats[i] if waiting else -1,
            "theta": day._thetas[i] if waiting else -1,
            "flight": day._flights[i] if waiting else -1,
            "time": day.clock,
            "queues": result.queues,
            "wait": result.wait,
            "penalty": penalty,
            "proposed_violation": viol,
            "executed_action": executed,
            "team": result.team,
        }
        return self._write_state(), reward, not waiting, False, info

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
        return self._obs(), self._info()

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

    # Internals ---------------------------------------------------------------------------
    def _obs(self) -> np.ndarray:
        """Write the current state into the observation buffer and return a copy."""
        self._obs_buf[self._history_slice] = self._day.history * self._inv_expected
        return self._write_state()

    def _write_state(self) -> np.ndarray:
        """Write everything but the history into the observation buffer; return a copy."""
        day = self._day
        buf = self._obs_buf
        buf[self._onehot_pos] = 0.0
        c = day.category
        self._onehot_pos = self._category_start + c if c >= 0 else self._category_start
        if c >= 0:
            buf[self._onehot_pos] = 1.0
        buf[self._backlog_slice] = day.backlog
        buf[self._waits_slice] = day.team_waits
        buf[self._clock_pos] = min(day.clock / self._day_length, 1.0)
        return buf.copy()

    def _info(self) -> dict[str, Any]:
        day = self._day
        return {
            "category": day.category,
            "theta": day.theta,
            "flight": day.flight,
            "time": day.clock,
        }

    def _describe_violation(
        self, c: int, a: np.ndarray, excess: np.ndarray, total: float
    ) -> str:
        theta, flight = self.game.split_category(c)
        m = self.game.n_methods
        candidates = [(float(excess[i]), f"risk row {i} (method m={i})") for i in range(m)]
        j = int(np.argmin(a))
        candidates.append((float(-a[j]), f"row {m + j} (pi[{j}] >= 0)"))
        candidates.append((abs(total - 1.0), "the simplex equality sum(pi) = 1"))
        amount, row = max(candidates)
        return (
            f"action violates the polytope of category {c} (theta={theta}, flight={flight}): "
            f"{row} is off by {amount:.3g} > {FEASIBILITY_TOL:g}"
        )
