"""The native vector environment: N days of one instance stepped in numpy lockstep.

``gym.make_vec(id, num_envs=N)`` builds :class:`ScreeningVectorEnv` (every id's
``vector_entry_point``). It is the single :class:`~tsg_envs.env.ScreeningEnv` over N days at once:
the same construction (every kwarg, validated once), the same action contract in every
``invalid_action`` mode, the same observation and info keys, and the batched queue model
:class:`~tsg_envs.dynamics.DayBatch`. For the same seeds, sub-environment i equals the single
environment reset with ``seed + i`` and driven by ``SyncVectorEnv`` (``tests/test_vector.py``):
observations, rewards, infos and discrete outcomes; floats to rounding, since a batched product
sums in another order than a single one.

With ``TSG_ENVS_KERNEL=numba`` (:mod:`tsg_envs.kernel`; ``env.kernel`` says which) the step and
the reset's gather of the drawn days run compiled over every row (``tsg_envs.numba_vector``): the
same days bit for bit, the same decisions, and floats equal to the numpy vector step's to
rounding (``tests/test_vector_kernel.py``). It is several times faster at N = 256 (both
against ``SyncVectorEnv``: ``python -m benchmarks.envs --vector``); the default (``auto``) keeps
the numpy step, whose numbers the committed results were made with.

Autoreset follows Gymnasium's ``NEXT_STEP`` mode (``SyncVectorEnv``'s default): the step after a
sub-environment terminates resets it, ignores its action, and returns its first observation with
reward 0. Every day of an instance has the same number of passengers, so sub-environments reset
together unless ``reset(options={"reset_mask": ...})`` resets some apart. Infos are a dict of
arrays with the single environment's keys, each with its ``_key`` mask, as ``SyncVectorEnv``
builds them.

**The day's end.** After a day's last passenger no one is waiting there: its
``info["category"]`` (and ``theta``, ``flight``) is -1, so a policy that looks up the polytope of
that category fails (``PolytopeSet`` raises an ``IndexError`` that says what follows). The next
step resets that day and ignores its action: give it any allocation, e.g. for
``np.maximum(info["category"], 0)``, and count no wait for it (its reward is 0)::

    waiting = info["category"] >= 0
    actions = envs.unwrapped.polytopes.sample(np.maximum(info["category"], 0), rng)
    obs, reward, done, _, info = envs.step(actions)
    waits = -reward[waiting]

(``docs/vector.md`` has the whole loop.)
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from tsg_envs import kernel as kernel_mod
from tsg_envs import validation
from tsg_envs.dynamics import DayBatch, draw_arrivals_batch, team_index
from tsg_envs.env import ScreeningEnv
from tsg_envs.kernel import KernelName, vector_kernel_name
from tsg_envs.polytope import ALPHA_SHRINK, FEASIBILITY_TOL, Polytope

__all__ = ["ScreeningVectorEnv", "make_screening_vector_env"]

#: The single environment's step-info keys, in its order; a reset info has the first four.
STEP_INFO_KEYS = (
    "category", "theta", "flight", "time",
    "queues", "wait", "penalty", "proposed_violation", "executed_action", "team",
)


class ScreeningVectorEnv(VectorEnv):
    """N days of one screening instance, batched (see the module docstring).

    Args:
        num_envs: N, the number of sub-environments (days).
        **kwargs: ``ScreeningEnv``'s construction kwargs (the instance is built and checked
            once); ``render_mode`` must be None.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        from tsg_envs import validation

        self.num_envs = validation.check_int("num_envs", num_envs, low=1, high=65_536)
        if kwargs.get("render_mode") is not None:
            raise ValueError(
                f"render_mode must be None for the vector environment, got "
                f"{validation.describe(kwargs['render_mode'])}; render a single environment"
            )
        kwargs.pop("max_episode_steps", None)  # gym.make_vec forwards it; days end by themselves
        self.single_env = ScreeningEnv(**kwargs)
        single = self.single_env
        self.game = single.game
        self.polytopes = single.polytopes
        self.risk_bound = single.risk_bound
        self.obs_layout = single.obs_layout
        self.invalid_action = single.invalid_action
        self.queue_mode = single.queue_mode
        self.violation_penalty = single.violation_penalty
        self.single_observation_space = single.observation_space
        self.single_action_space = single.action_space
        self.observation_space = batch_space(single.observation_space, self.num_envs)
        self.action_space = batch_space(single.action_space, self.num_envs)
        self.render_mode = None
        g = self.game
        m = g.n_methods
        self._b_risk = np.ascontiguousarray(self.polytopes.b_ub[:, :m])
        # Risk row m of category c = <θ, κ> is -P_θ L_{κ,m} E[:, m]: a coefficient times a
        # column of E, so a batch's rows are one (N, T) @ (T, M) product and two small gathers.
        self._risk_coef = (-g.attacker_prior[:, None, None] * g.attack_loss[None, :, :]).reshape(
            g.n_categories, m)
        self._inv_expected = 1.0 / np.maximum(g.expected_category_counts(), 1e-12)
        self._days = DayBatch(g, self.num_envs, single.queue_mode)
        self._rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._t = g.n_teams
        self._all = np.ones(self.num_envs, dtype=bool)
        self._all_idx = np.arange(self.num_envs)
        self._obs = np.zeros(cast(tuple[int, int], self.observation_space.shape),
                             dtype=np.float32)
        # Largest |coefficient| of each category's risk rows (bounds |a·π| for π ≥ 0, Σπ ≈ 1).
        self._row_scale = np.abs(self.polytopes.A_ub[:, :m, :]).max(axis=(1, 2))
        self._scale_max = float(self._row_scale.max())
        self._centers = np.asarray(self.polytopes.centers)
        self._centre_slack_t = np.ascontiguousarray(
            (self._b_risk - self._risk_coef * (self._centers @ g.team_efficacy)).T)
        # Method-major copies: a batch's risk rows are an (M, n) array, reduced over its first
        # axis (numpy reduces a short last axis row by row, several times slower).
        self._coef_t = np.ascontiguousarray(self._risk_coef.T)
        self._b_risk_t = np.ascontiguousarray(self._b_risk.T)
        self._efficacy_t = np.ascontiguousarray(g.team_efficacy.T)
        self._ones = np.ones(g.n_teams)
        self._pending = False  # some sub-environment's day ended: the next step resets it
        # Flat indices into the observation buffer: each row's first category and history
        # entries, and its one-hot now.
        row_start = np.arange(self.num_envs) * self._obs.shape[1]
        self._flat_category = row_start + self.obs_layout["category"].start
        self._flat_history = row_start + self.obs_layout["history"].start
        self._onehot = self._flat_category.copy()
        # The implementation (tsg_envs.kernel): numba steps every row in one compiled call when
        # TSG_ENVS_KERNEL=numba asks for it (it agrees with numpy to rounding, not bit for bit).
        self.kernel: KernelName = vector_kernel_name()
        self._compiled: Any = None  # tsg_envs.numba_vector, loaded at the first reset or step

    # Public helpers -------------------------------------------------------------------------
    def polytope(self, c: int) -> Polytope:
        """The action polytope of category ``c`` (as ``ScreeningEnv.polytope``)."""
        return self.polytopes[c]

    @property
    def days(self) -> DayBatch:
        """The batched days (read their public state; do not step them by hand)."""
        return self._days

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator | None, ...]:  # type: ignore[override]
        """Each sub-environment's generator (arrivals, and the team in sampled mode).

        One per sub-environment (None before its first reset), where Gymnasium's
        ``VectorEnv.np_random`` is one generator for all: the N days draw independently.
        """
        return tuple(self._rngs)

    # Gymnasium API ------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw new days (sub-environment i seeded with ``seed + i``, as ``SyncVectorEnv``).

        ``options["reset_mask"]`` (bool (N,)) resets only those sub-environments.
        """
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(cast(Any, seed))
            if len(seeds) != n:
                raise ValueError(f"seed must be an int or a list of {n} seeds, got {len(seeds)}")
        mask = self._all.copy()
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({n},) with a True"
                )
        rows = np.flatnonzero(mask)
        self._reset_rows(rows, [seeds[i] for i in rows.tolist()])
        self._autoreset[rows] = False
        self._pending = bool(self._autoreset.any())
        infos: dict[str, Any] = {}
        self._waiting_infos(infos, mask)
        return self._observations(), infos

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Screen each sub-environment's waiting passenger (autoresetting finished ones)."""
        n, t = self.num_envs, self._t
        a = validation.real_array("actions", actions)  # refuses complex, bool, str, objects
        if a.shape != (n, t):
            raise ValueError(f"actions must have shape {(n, t)}, got {a.shape}")
        days = self._days
        if not self._pending:  # the common step: every sub-environment screens a passenger
            return self._step_all(a)
        cats = days.category
        autoreset = self._autoreset
        every = not autoreset.any()
        if every:
            step_rows = None
            stepped = self._all
        else:
            stepped = ~autoreset
            step_rows = np.flatnonzero(stepped)
            cats = cats[step_rows]
            a = a[step_rows]
        if np.any(cats < 0):
            raise RuntimeError("a sub-environment was never reset: call reset() first")
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        if cats.size:
            # Every stepped action is checked before any state changes (raise mode, NaN, inf).
            executed, penalty, viol = self._check(a, cats)
            u = None
            if self.queue_mode == "sampled":
                rngs = cast(list[np.random.Generator], self._rngs)  # every row was reset
                idx = range(n) if step_rows is None else step_rows.tolist()
                u = np.array([rngs[i].random() for i in idx])
            res = days.step(executed, step_rows, u)
            if every:
                rewards = -res.wait - penalty
                terminated = days.done
            else:
                rewards[step_rows] = -res.wait - penalty
                terminated[step_rows] = days.done[step_rows]
            self._waiting_infos(infos, stepped)
            for key, value in (
                ("queues", res.queues), ("wait", res.wait), ("penalty", penalty),
                ("proposed_violation", viol), ("executed_action", executed), ("team", res.team),
            ):
                if not every:
                    full = np.zeros((n, *value.shape[1:]), dtype=value.dtype)
                    full[step_rows] = value
                    value = full
                infos[key], infos[f"_{key}"] = value, stepped.copy()
        if not every:
            reset_rows = np.flatnonzero(autoreset)
            self._reset_rows(reset_rows, [None] * reset_rows.size)
            self._waiting_infos(infos, autoreset)
            infos = {key: infos[key] for key in _ordered(infos)}
        self._autoreset = terminated.copy()
        self._pending = bool(terminated.any())
        if every:
            obs = self._observations((None, cats, res.screened))
        else:
            obs = self._observations()
        return obs, rewards, terminated, np.zeros(n, dtype=bool), infos

    def _step_all(self, a: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`step` when no sub-environment autoresets (every step but one a day)."""
        n = self.num_envs
        if self.kernel == "numba" and self._load_compiled() is not None:
            out = self._step_compiled(a)
            if out is not None:
                return out
        days = self._days
        cats = days.category
        if cats.min() < 0:
            raise RuntimeError("a sub-environment was never reset: call reset() first")
        executed, penalty, viol = self._check(a, cats)
        u = None
        if self.queue_mode == "sampled":
            u = np.array([cast(np.random.Generator, rng).random() for rng in self._rngs])
        res = days.step(executed, None, u)
        terminated = days.done
        masks = iter(np.ones((len(STEP_INFO_KEYS), n), dtype=bool))  # one array per key
        waiting = (days.category, days.theta, days.flight, days.clock)
        infos: dict[str, Any] = {}
        for key, value in zip(STEP_INFO_KEYS, (*waiting, res.queues, res.wait, penalty, viol,
                                               executed, res.team), strict=True):
            infos[key], infos[f"_{key}"] = value, next(masks)
        self._autoreset = terminated
        self._pending = bool(terminated.any())
        obs = self._observations((None, cats, res.screened), waiting[0])
        return obs, -res.wait - penalty, terminated.copy(), np.zeros(n, dtype=bool), infos

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release."""

    # Internals ---------------------------------------------------------------------------
    def _reset_rows(self, rows: np.ndarray, seeds: list[int | None]) -> None:
        for row, seed in zip(rows.tolist(), seeds, strict=True):
            if seed is not None or self._rngs[row] is None:
                self._rngs[row], _ = seeding.np_random(seed)
        rngs = cast(list[np.random.Generator], [self._rngs[r] for r in rows.tolist()])
        compiled = self._load_compiled()
        if compiled is not None:  # the same days, gathered into place in one compiled call
            self._days.reset_drawn(rngs, rows, compiled.arrange_days)
            return
        self._days.reset(draw_arrivals_batch(self.game, rngs), rows)

    def _load_compiled(self) -> Any:
        """``tsg_envs.numba_vector`` when the numba kernel is chosen (imported at first use)."""
        if self.kernel != "numba":
            return None
        if self._compiled is None:
            self._compiled = kernel_mod.load_vector_kernel()
            self._prepare_compiled()
        return self._compiled

    def _prepare_compiled(self) -> None:
        """The constants the compiled calls take (made once, with the kernel's first load)."""
        g = self.game
        lay = self.obs_layout
        self._positions = np.array([lay[k].start for k in ("category", "backlog", "waits",
                                                           "history", "clock")], dtype=np.int64)
        # Own C-contiguous, writeable copies: the compiled calls skip numba's type matching.
        f64 = np.float64
        self._check_consts = tuple(np.array(x, dtype=f64, order="C") for x in (
            self._risk_coef, self._b_risk, g.team_efficacy, self._row_scale, self._centers,
            self._centre_slack_t.T))
        self._advance_consts = (
            np.array(g.team_members, dtype=f64, order="C"),
            np.array(team_index(g), dtype=np.int64, order="C"),
            _holders(g.team_members),
            np.array(g.rates, dtype=f64, order="C"),
            np.array(self._inv_expected, dtype=f64, order="C"),
        )
        self._mode_code = ("project", "raise", "penalize").index(self.invalid_action)
        self._no_draws = np.empty(0)
        self._true = np.ones((11, self.num_envs), dtype=bool)  # a step's done and info masks
        self._r = g.n_resources
        self._day_length = float(g.day_length)
        self._penalty_per_unit = float(self.violation_penalty)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable: the compiled module is not; it is loaded again when next needed."""
        state = self.__dict__.copy()
        state["_compiled"] = None
        return state

    def _step_compiled(self, a: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                  dict[str, Any]] | None:
        """:meth:`_step_all` as two compiled calls over every row (``tsg_envs.numba_vector``).

        None, with nothing changed, where the check hands the step to the numpy path (a
        non-finite or huge entry, a proposal "raise" refuses, a day over: numpy raises).
        """
        nv = self._compiled
        n, t, r = self.num_envs, self._t, self._r
        days = self._days
        state = days.fused_state()
        # One allocation per dtype: the float outputs (the executed actions and queues
        # row-last, the kernels' layout; the infos are their (N, T) and (N, R) transposes),
        # the int ones, and the terminations with one mask per info key.
        floats = np.empty((5 + t + r, n))
        viol, penalty, reward, wait, clock = floats[:5]
        executed, queues = floats[5:5 + t], floats[5 + t:]
        if nv.check_rows_unchecked(
                np.ascontiguousarray(a), state[0], state[2], *self._check_consts,
                self._mode_code, self._penalty_per_unit, viol, executed, penalty,
        ) != nv.OK:
            return None
        u = self._no_draws
        if self.queue_mode == "sampled":  # drawn once every proposal has passed, as numpy
            u = np.array([cast(np.random.Generator, rng).random() for rng in self._rngs])
        obs = np.empty(self._obs.shape, dtype=np.float32)
        team, category, theta, flight = np.empty((4, n), dtype=np.int64)
        done, m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 = self._true.copy()
        ended = nv.advance_rows_unchecked(
            *state, *self._advance_consts, self._obs, self._onehot, self._positions,
            self._day_length, u, executed, penalty, obs, reward, done, queues, wait, team,
            category, theta, flight, clock,
        )
        days.fused_stepped()
        self._autoreset = done
        self._pending = ended > 0
        infos = {
            "category": category, "_category": m0, "theta": theta, "_theta": m1,
            "flight": flight, "_flight": m2, "time": clock, "_time": m3,
            "queues": queues.T, "_queues": m4, "wait": wait, "_wait": m5,
            "penalty": penalty, "_penalty": m6, "proposed_violation": viol,
            "_proposed_violation": m7, "executed_action": executed.T,
            "_executed_action": m8, "team": team, "_team": m9,
        }
        return obs, reward, done.copy(), np.zeros(n, dtype=bool), infos

    def _check(
        self, a: np.ndarray, cats: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(executed actions, penalties, proposal violations) of the stepped rows' proposals.

        The single environment's contract, batched: non-finite raises; within the tolerance the
        renormalised proposal runs (α-projected if renormalising could have crossed the
        tolerance and did); outside it ``invalid_action`` decides.
        """
        lowest, highest = float(a.min()), float(a.max())
        if not (math.isfinite(lowest) and math.isfinite(highest)):  # a NaN or inf entry
            bad = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
            raise ValueError(f"action must be finite, got {a[bad]} (row {bad} of the stepped)")
        huge = None
        if max(highest, -lowest) > 1e150:  # row products could overflow: far off the simplex
            huge = np.abs(a).max(axis=1) > 1e150
            with np.errstate(over="ignore", invalid="ignore"):
                total = a @ self._ones
                rows = self._row_excess(a, cats).max(axis=0)
        else:
            total = a @ self._ones
            rows = self._row_excess(a, cats).max(axis=0)
        dev = np.abs(total - 1.0)
        viol = np.maximum(rows, dev)
        amin = None
        if lowest < 0:
            amin = a.min(axis=1)
            np.maximum(viol, -amin, out=viol)
        np.maximum(viol, 0.0, out=viol)
        if huge is not None:
            viol[huge] = np.inf
        bad = viol > FEASIBILITY_TOL
        any_bad = bool(bad.any())
        if any_bad and self.invalid_action == "raise":
            i = int(np.flatnonzero(bad)[0])
            c = int(cats[i])
            theta, flight = self.game.split_category(c)
            raise ValueError(
                f"action violates the polytope of category {c} (theta={theta}, "
                f"flight={flight}) by {viol[i]:.3g} > {FEASIBILITY_TOL:g} (row {i} of the stepped)"
            )
        penalty = np.zeros(a.shape[0])
        if not any_bad and amin is None:
            # The common case: every proposal within the tolerance and non-negative.
            executed = a / total[:, None]
            # Renormalising moves a row by at most (largest coefficient) |Σπ - 1|: recheck the
            # rows that could cross the tolerance (none, usually, by a bound over the batch).
            if float(rows.max()) + self._scale_max * float(dev.max()) * 2.0 <= (
                    FEASIBILITY_TOL - 1e-12):
                recheck = None
            else:
                recheck = (rows + self._row_scale.take(cats) * dev * 2.0
                           > FEASIBILITY_TOL - 1e-12)
            project = None
        else:
            executed = np.maximum(a, 0.0)
            if huge is not None:  # scale before summing, so no sum overflows
                big = huge & (executed.max(axis=1) > 0)
                executed[big] /= executed[big].max(axis=1, keepdims=True)
            sums = executed @ self._ones if (amin is not None or huge is not None) else total
            empty = sums <= 0
            with np.errstate(invalid="ignore", divide="ignore"):
                executed /= sums[:, None]
            if empty.any():
                executed[empty] = self.polytopes.centers[cats[empty]]
            if self.invalid_action == "penalize" and any_bad:
                ex = self._row_excess(executed[bad], cats[bad])
                penalty[bad] = self.violation_penalty * np.maximum(ex.max(axis=0), 0.0)
            # Within the tolerance, as in the common case: recheck what renormalising could
            # have pushed across (clipped rows always).
            with np.errstate(over="ignore", invalid="ignore"):
                risky = rows + self._row_scale.take(cats) * dev * 2.0 > FEASIBILITY_TOL - 1e-12
            if amin is not None:
                risky |= amin < 0
            recheck = ~bad & risky
            project = bad if self.invalid_action == "project" else None
        # Within the tolerance a renormalised proposal that now breaks a row, and in project
        # mode every proposal outside it, is α-projected toward the centre.
        if recheck is not None and recheck.any():
            r = np.flatnonzero(recheck)
            ex = self._row_excess(executed[r], cats[r])
            over = r[ex.max(axis=0) > FEASIBILITY_TOL]
            if over.size:
                project = np.zeros(a.shape[0], dtype=bool) if project is None else project.copy()
                project[over] = True
        if project is not None and project.any():
            executed[project] = self._project(executed[project], cats[project])
        return executed, penalty, viol

    def _project(self, s: np.ndarray, cats: np.ndarray) -> np.ndarray:
        """:func:`~tsg_envs.polytope.alpha_project` of points of the simplex, on risk rows only.

        For s on the simplex the rows -π_t ≤ 0 never bind (their ratio y0_t / (y0_t - s_t) is
        at least 1), so α is the least ratio over the M risk rows, each the same product as in
        the full projection.
        """
        y0 = self._centers.take(cats, axis=0)
        d = s - y0
        ad = self._coef_t.take(cats, axis=1) * (self._efficacy_t @ d.T)  # (M, k)
        slack = self._centre_slack_t.take(cats, axis=1)
        up = ad > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(up, slack / np.where(up, ad, 1.0), np.inf)
        alpha = np.minimum(1.0, ratio.min(axis=0))
        alpha = np.where(alpha < 1.0, np.maximum(alpha * (1.0 - ALPHA_SHRINK), 0.0), 1.0)
        return np.where(alpha[:, None] >= 1.0, s, y0 + alpha[:, None] * d)

    def _row_excess(self, x: np.ndarray, cats: np.ndarray) -> np.ndarray:
        """a_m · x - b_m of every risk row of each row's category, method-major (M, n)."""
        return (self._coef_t.take(cats, axis=1) * (self._efficacy_t @ x.T)
                - self._b_risk_t.take(cats, axis=1))

    def _observations(
        self, stepped: tuple[np.ndarray | None, np.ndarray, np.ndarray] | None = None,
        waiting: np.ndarray | None = None,
    ) -> np.ndarray:
        """The observation batch (a copy of a buffer kept current).

        ``stepped`` = (rows or None for all, their categories just screened, those categories'
        counts h_c now): only those history entries changed; without it every row is
        rewritten (after a reset). ``waiting``: the waiting categories, if at hand.
        """
        days, lay, buf = self._days, self.obs_layout, self._obs
        c = days.category if waiting is None else waiting
        flat = buf.reshape(-1)
        if stepped is None:
            buf[:, lay["history"]] = days.history * self._inv_expected
            buf[:, lay["category"]] = 0.0
        else:
            # Only the screened categories' history entries changed; flat indices throughout
            # (numpy's 1-D take/put beat its 2-D fancy indexing severalfold).
            rows, cats, screened = stepped
            at = self._flat_history if rows is None else self._flat_history[rows]
            flat[at + cats] = screened * self._inv_expected.take(cats)
            flat[self._onehot] = 0.0  # the last one-hots (or a zero already)
        # Flat positions of the one-hots; a row with no one waiting points at its first
        # category column and leaves it 0.
        if c.min() >= 0:
            self._onehot = self._flat_category + c
            flat[self._onehot] = 1.0
        else:
            live = c >= 0
            self._onehot = self._flat_category + np.where(live, c, 0)
            flat[self._onehot] = live
        buf[:, lay["backlog"]] = days.backlog
        buf[:, lay["waits"]] = days.team_waits
        clock = days.clock
        clock /= self.game.day_length
        buf[:, lay["clock"].start] = np.minimum(clock, 1.0, out=clock)
        return buf.copy()

    def _waiting_infos(self, infos: dict[str, Any], rows: np.ndarray) -> None:
        """Write the four waiting-passenger keys (and masks) of the rows in bool ``rows``."""
        days = self._days
        for key, values in (("category", days.category), ("theta", days.theta),
                            ("flight", days.flight), ("time", days.clock)):
            if key in infos:  # autoreset rows joining stepped ones
                infos[key][rows] = values[rows]
                infos[f"_{key}"] |= rows
            else:
                if not rows.all():
                    values = np.where(rows, values, np.zeros((), dtype=values.dtype))
                infos[key], infos[f"_{key}"] = values, rows.copy()


def _holders(members: np.ndarray) -> np.ndarray:
    """(R, H): the teams holding each resource, ascending, padded with -1."""
    lists = [np.flatnonzero(col) for col in np.asarray(members).T]
    out = np.full((len(lists), max(1, max(len(x) for x in lists))), -1, dtype=np.int64)
    for r, teams in enumerate(lists):
        out[r, :len(teams)] = teams
    return out


def _ordered(infos: dict[str, Any]) -> list[str]:
    keys = [k for k in STEP_INFO_KEYS if k in infos]
    return [x for k in keys for x in (k, f"_{k}")]


def make_screening_vector_env(num_envs: int = 1, **kwargs: Any) -> ScreeningVectorEnv:
    """The registered ids' ``vector_entry_point``: ``ScreeningVectorEnv(num_envs, **kwargs)``."""
    return ScreeningVectorEnv(num_envs=num_envs, **kwargs)
