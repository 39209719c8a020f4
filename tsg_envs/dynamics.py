"""The one queue model: arrivals, drain, wait, load (numpy, no Gymnasium).

Provenance: the transition and reward of Shah et al. (AAAI 2020), Section "MDP Model", with
SPEC §2's reading (the history typo h'_d = h_c fixed to h'_d = h_d).

Every face (the Gymnasium env, the PettingZoo duel, the evaluation) advances days through
:class:`ScreeningDay`, so there is exactly one implementation of the queues. One step is one
arriving passenger:

1. Drain: ξ_r ← max(ξ_r - (τ_new - τ_old) f_r, 0).
2. The policy picks π ∈ Δ^T for the passenger.
3. Wait of team t: w_t = max_{r∈t} ξ_r / f_r; the passenger's wait is Σ_t π_t w_t (expected
   mode) or w_{t*} with t* ~ π (sampled mode).
4. Load: ξ_r += Σ_{t∋r} π_t (expected) or ξ_r += 1 for r ∈ t* (sampled).
5. h_c += 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np

from tsg_envs import kernel_layout as layout
from tsg_envs.arrivals import (
    Arrivals,
    ArrivalsBatch,
    day_draws,
    draw_arrivals_batch,
    risk_edges,
    sample_arrivals,
    sample_arrivals_batch,
    truncated_normal_ppf,
)
from tsg_envs.game import Game

QueueMode = Literal["expected", "sampled"]

__all__ = [
    "Arrivals",
    "ArrivalsBatch",
    "BatchStepResult",
    "DayBatch",
    "draw_arrivals_batch",
    "risk_edges",
    "sample_arrivals",
    "sample_arrivals_batch",
    "ScreeningDay",
    "StepResult",
    "team_index",
    "team_waits",
    "truncated_normal_ppf",
]


def team_waits(queues: np.ndarray, rates: np.ndarray, team_members: np.ndarray) -> np.ndarray:
    """w_t = max_{r∈t} ξ_r / f_r for queues (..., R); returns (..., T)."""
    minutes = queues / rates
    return (minutes[..., None, :] * team_members).max(axis=-1)


def team_index(game: Game) -> np.ndarray:
    """(T, largest team) resource indices of each team; smaller teams repeat a member."""
    width = int(game.team_members.sum(axis=1).max())
    return np.array([np.resize(np.flatnonzero(row), width) for row in game.team_members])


class StepResult(NamedTuple):
    """What one passenger's screening did (an immutable named tuple: cheap to make per step).

    Attributes:
        queues: ξ (passengers) after draining, before this passenger's load, (R,).
        waits: every team's wait w_t at that moment, (T,).
        wait: the passenger's wait (expected or realised), minutes.
        team: the drawn team in sampled mode, else -1.
    """

    queues: np.ndarray
    waits: np.ndarray
    wait: float
    team: int


_tuple_new = tuple.__new__


class ScreeningDay:
    """One day of the queue model, advanced one passenger at a time.

    The state ⟨c, ξ, h, τ⟩ is held in ``queues`` (ξ, drained to the current passenger's
    arrival), ``history`` (h), ``index`` (which passenger is waiting), ``clock`` (τ) and the
    arrivals. ``minutes`` (R + T: the backlog ξ_r / f_r, then the team waits w_t, as the env's
    observation lays them out), with ``backlog`` and ``team_waits`` views of it, is kept current
    after every drain so that faces read them without recomputing.

    ``state``: the compiled step's buffer (``tsg_envs.kernel_layout.pack``; the environment
    passes it when ``TSG_ENVS_KERNEL`` picks numba). ξ, the minutes and h then live in it, and
    ``queues``, ``minutes`` and ``team_waits`` are views that every step rewrites in place (copy
    them to keep them); without it every step makes new arrays. The numbers are the same.
    """

    queues: np.ndarray
    minutes: np.ndarray
    team_waits: np.ndarray

    def __init__(
        self, game: Game, queue_mode: QueueMode = "expected", state: np.ndarray | None = None
    ) -> None:
        if queue_mode not in ("expected", "sampled"):
            raise ValueError(f"queue_mode must be 'expected' or 'sampled', got {queue_mode!r}")
        self.game = game
        # With ``state`` (the compiled kernel's buffer, tsg_envs.kernel_layout.pack), ξ, the
        # minutes and h live in it, at fixed places, as views that every step updates in place.
        self._buffer = state
        self._views: tuple[np.ndarray, np.ndarray] | None = None
        if state is not None:
            self._attach(state)
        self.queue_mode = queue_mode
        self._rates = game.rates
        self._members = game.team_members.astype(float)
        self._team_idx = team_index(game)
        width = self._team_idx.shape[1]
        self._member_lists = [np.flatnonzero(row) for row in game.team_members]
        # The same indices column by column: w = max over columns of backlog[column] (exact, and
        # a few small numpy calls instead of a fancy index plus an axis reduction).
        self._team_cols = [np.ascontiguousarray(self._team_idx[:, j]) for j in range(width)]
        # The same columns after the identity: one max over them gives [backlog, waits] in one
        # array (``minutes``), which the env copies into its observation in one write.
        r = game.n_resources
        self._r = r
        self._minutes_cols = [np.concatenate([np.arange(r), col]) for col in self._team_cols]
        self._expected = queue_mode == "expected"
        self._zeros = np.zeros(game.n_resources)
        self._drains: list[np.ndarray] = []
        self.arrivals: Arrivals | None = None
        self._n = 0
        self.index = 0
        self.clock = 0.0
        self._start(np.zeros(game.n_resources))

    def _start(self, queues: np.ndarray) -> None:
        self.queues = queues
        self._history = [0] * self.game.n_categories
        self._refresh()
        if self._views is not None:
            self._history_view[:] = 0.0
            self._history = self._history_view  # type: ignore[assignment]
            self._keep()

    def _attach(self, state: np.ndarray) -> None:
        """Make ``_views`` and ``_history_view``: the state's places in the kernel's buffer."""
        g = self.game
        r, t, c = g.n_resources, g.n_teams, g.n_categories
        size = layout.state_size(r, t, c)
        if state.dtype != np.float64 or state.ndim != 1 or state.shape[0] < layout.HEADER + size:
            raise ValueError("state must be a float64 buffer of tsg_envs.kernel_layout.pack")
        block = state[layout.HEADER: layout.HEADER + size]
        self._views = (block[:r], block[r: r + r + t])
        self._history_view = block[r + r + t:]

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled or deep-copied: the state's arrays are views of the (copied) buffer again."""
        self.__dict__.update(state)
        if self._buffer is not None:
            self._attach(self._buffer)
            assert self._views is not None
            queues, minutes = self._views
            self.queues, self.minutes, self.team_waits = queues, minutes, minutes[self._r:]
            self._history = self._history_view  # type: ignore[assignment]

    def _keep(self) -> None:
        """With a kernel's buffer: copy the state just computed into it and read it from there."""
        assert self._views is not None
        queues, minutes = self._views
        queues[:] = self.queues
        minutes[:] = self.minutes
        self.queues, self.minutes, self.team_waits = queues, minutes, minutes[self._r:]

    @property
    def history(self) -> np.ndarray:
        """h: passengers of each category screened so far, int (C,) (a fresh array)."""
        return np.array(self._history, dtype=np.int64)

    def screened(self, c: int) -> int:
        """h_c, passengers of category ``c`` screened so far (no array built)."""
        return int(self._history[c])

    @property
    def n_passengers(self) -> int:
        """Passengers of the day (the attacker included once inserted); 0 before a reset."""
        return self._n

    def _refresh(self) -> None:
        """Recompute ``minutes`` (backlog ξ_r / f_r, then team waits) from the queues."""
        backlog = self.queues / self._rates
        cols = self._minutes_cols
        minutes = backlog.take(cols[0])
        for col in cols[1:]:
            np.maximum(minutes, backlog.take(col), out=minutes)
        self.minutes = minutes
        self.team_waits = minutes[self._r:]

    @property
    def backlog(self) -> np.ndarray:
        """ξ_r / f_r, minutes, (R,) (a view of ``minutes``, rebuilt by every step)."""
        return self.minutes[: self._r]

    # State ---------------------------------------------------------------------------
    def reset(self, arrivals: Arrivals) -> None:
        """Start a day with empty queues; the clock is at the first passenger's arrival."""
        if len(arrivals) == 0:
            raise ValueError("a day needs at least one passenger")
        self.arrivals = arrivals
        self._n = len(arrivals)
        self._times = arrivals.times.tolist()
        self._cats = arrivals.categories.tolist()
        self._thetas = arrivals.thetas.tolist()
        self._flights = arrivals.flights.tolist()
        # Drain between consecutive arrivals, (t_{i+1} - t_i) f_r, one row per gap (the same
        # products the step would form); rows in a list so that a step indexes without a view.
        self._drains = list(np.diff(arrivals.times)[:, None] * self._rates)
        self.index = 0
        self.clock = self._times[0]
        self._start(np.zeros(self.game.n_resources))

    @property
    def done(self) -> bool:
        """Whether every passenger of the day has been screened."""
        return self.index >= self._n

    @property
    def category(self) -> int:
        """Category of the passenger waiting for a decision (-1 after the last)."""
        return -1 if self.index >= self._n else self._cats[self.index]

    @property
    def theta(self) -> int:
        """θ of the waiting passenger (-1 after the last)."""
        return -1 if self.index >= self._n else self._thetas[self.index]

    @property
    def flight(self) -> int:
        """κ of the waiting passenger (-1 after the last)."""
        return -1 if self.index >= self._n else self._flights[self.index]

    def waiting(self) -> tuple[int, int, int, float]:
        """(category, θ, κ, τ) of the waiting passenger; -1 for the first three after the last."""
        i = self.index
        if i >= self._n:
            return -1, -1, -1, self.clock
        return self._cats[i], self._thetas[i], self._flights[i], self.clock

    def waits(self) -> np.ndarray:
        """Each team's current wait w_t, minutes, (T,) (a copy)."""
        return self.team_waits.copy()

    def insert_passenger(self, theta: int, flight: int) -> None:
        """Put an extra passenger of category ⟨θ, κ⟩ in line now, ahead of the waiting one.

        The passenger arrives at the current clock (the waiting passenger's arrival time, or the
        last arrival's after the day is over), so nothing drains before it is screened: the next
        :meth:`step` screens it in exactly the current state ⟨c', ξ, h, τ⟩ with c' its category.
        The day gets one more step. Used by the PettingZoo duel to insert the attacker.

        Args:
            theta: Its risk level θ.
            flight: Its flight κ.
        """
        if self.arrivals is None:
            raise RuntimeError("reset the day before inserting a passenger")
        g = self.game
        if not (0 <= theta < g.n_risk_levels and 0 <= flight < g.n_flights):
            raise ValueError(f"no category for theta={theta}, flight={flight}")
        c = g.category(theta, flight)
        i = self.index
        self._times.insert(i, self.clock)
        self._cats.insert(i, c)
        self._thetas.insert(i, int(theta))
        self._flights.insert(i, int(flight))
        self._n += 1
        # It arrives at the clock, with the waiting passenger: nothing drains between them.
        self._drains.insert(i, np.zeros(g.n_resources))
        a = self.arrivals
        self.arrivals = Arrivals(
            times=np.insert(a.times, i, self.clock),
            categories=np.insert(a.categories, i, c),
            thetas=np.insert(a.thetas, i, theta),
            flights=np.insert(a.flights, i, flight),
        )

    # Transition ------------------------------------------------------------------------
    def step(self, allocation: np.ndarray, rng: np.random.Generator | None = None) -> StepResult:
        """Screen the waiting passenger with ``allocation`` (on the simplex) and advance.

        Args:
            allocation: π, (T,), non-negative and summing to one (the caller checks).
            rng: Draws the team in sampled mode.

        Returns:
            The :class:`StepResult` of this passenger.
        """
        i = self.index
        if i >= self._n:
            raise RuntimeError("the day is over: reset before stepping")
        queues_before = self.queues
        waits = self.team_waits
        if self._views is not None:  # views of the kernel's buffer: the result keeps copies
            queues_before = queues_before.copy()
            waits = waits.copy()
        if self._expected:
            # ndarray.dot: the same BLAS products as ``@`` without the gufunc overhead; the load
            # is added to the queues in place (x + y == y + x: the same sums as before).
            wait = float(allocation.dot(waits))
            queues = allocation.dot(self._members)
            queues += queues_before
            team = -1
        else:
            if rng is None:
                raise ValueError("sampled queue mode needs an rng")
            cum = np.cumsum(allocation)
            team = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
            team = min(team, allocation.shape[0] - 1)
            wait = float(waits[team])
            queues = queues_before.copy()
            queues[self._member_lists[team]] += 1.0
        self._history[self._cats[i]] += 1
        i += 1
        self.index = i
        if i < self._n:
            queues -= self._drains[i - 1]
            np.maximum(queues, self._zeros, out=queues)
            self.clock = self._times[i]
        self.queues = queues
        # _refresh, inline (the hot path of every face).
        backlog = queues / self._rates
        cols = self._minutes_cols
        minutes = backlog.take(cols[0])
        for col in cols[1:]:
            np.maximum(minutes, backlog.take(col), out=minutes)
        self.minutes = minutes
        self.team_waits = minutes[self._r:]
        if self._views is not None:
            self._keep()  # the new state into the kernel's buffer
        # tuple.__new__ skips the named tuple's Python-level __new__ (same object, less overhead).
        return _tuple_new(StepResult, (queues_before, waits, wait, team))

    def step_fused(
        self,
        fused: Callable[..., tuple[float, float]],
        action: np.ndarray,
        obs: np.ndarray,
        out_obs: np.ndarray,
        out_queues: np.ndarray,
        out_actions: np.ndarray,
        row: int,
        onehot: int,
    ) -> tuple[float, float, int, int, int, float] | None:
        """The environment's common step as one compiled call (``tsg_envs.numba_step``).

        Needs the kernel's buffer (``state``). Returns (wait, violation, and the next
        passenger's category, θ, κ and τ), or None with nothing changed when the kernel leaves
        the proposal to the numpy path (or the day is over).
        """
        i = self.index
        n = self._n
        if i >= n or self._buffer is None:
            return None
        i1 = i + 1
        if i1 < n:
            nxt = self._cats[i1]
            clock = self._times[i1]
            gap = clock - self._times[i]
        else:
            nxt, clock, gap = -1, self.clock, 0.0
        wait, viol = fused(action, self._buffer, obs, out_obs, out_queues, out_actions, row,
                           self._cats[i], nxt, gap, clock, onehot)
        if viol < 0.0:
            return None
        self.index = i1
        self.clock = clock
        if nxt < 0:
            return wait, viol, -1, -1, -1, clock
        return wait, viol, nxt, self._thetas[i1], self._flights[i1], clock


class BatchStepResult(NamedTuple):
    """What one step of :class:`DayBatch` did to the stepped rows (arrays over those rows).

    Attributes:
        queues: ξ after draining, before this passenger's load, (n, R).
        waits: every team's wait at that moment, (n, T).
        wait: each passenger's wait (expected or realised), (n,).
        team: the drawn team in sampled mode, else -1, (n,).
        screened: h_c of each passenger's category c after it, (n,).
    """

    queues: np.ndarray
    waits: np.ndarray
    wait: np.ndarray
    team: np.ndarray
    screened: np.ndarray


class DayBatch:
    """N days of one instance advanced in numpy lockstep: the batched form of the queue model.

    Row i is one day (its own arrivals); every day of an instance has ``game.n_passengers``
    passengers, so rows stepped together stay at the same index unless some are reset apart.
    The transition is :class:`ScreeningDay`'s, step for step and operation for operation (the
    drain of a gap is (t_{k+1} - t_k) f_r, the clip at zero, the waits as a max over members,
    the sampled team as the first cumulative weight above u · Σπ), so each row of a batch agrees
    with the single day on the same arrivals and allocations (``tests/test_vector.py``: the
    discrete outcomes exactly, the floats to rounding, since batched products sum in another
    order). The duel's inserted attacker stays a single-day affair (:class:`ScreeningDay`).

    Public read API, arrays over rows (copies, so callers cannot change the state):
    :attr:`index`, :attr:`done`, :attr:`category`, :attr:`theta`, :attr:`flight`, :attr:`clock`
    (of the waiting passenger; -1 for the first three after the last, whose arrival stays the
    clock), :attr:`queues` (ξ, passengers), :attr:`backlog` (ξ_r / f_r, minutes),
    :attr:`team_waits` (w_t) and :attr:`history` (h, int (N, C)).
    """

    def __init__(self, game: Game, n: int, queue_mode: QueueMode = "expected") -> None:
        if queue_mode not in ("expected", "sampled"):
            raise ValueError(f"queue_mode must be 'expected' or 'sampled', got {queue_mode!r}")
        self.game = game
        self.n = int(n)
        self.queue_mode = queue_mode
        p, r = game.n_passengers, game.n_resources
        self._rates = game.rates
        self._members = game.team_members.astype(float)
        team_idx = team_index(game)
        self._team_cols = [np.ascontiguousarray(col) for col in team_idx.T]
        # Arrivals, one row per day, plus a sentinel column (-1 / the last time) read after the
        # last passenger, so the waiting passenger is always one gather away. Stored passenger
        # major (the arrays ending in _t, (p + 1, n)): a step reads one contiguous row of each.
        self._times_t = np.zeros((p + 1, self.n))
        self._cats_t = np.full((p + 1, self.n), -1, dtype=np.int64)
        self._thetas_t = np.full((p + 1, self.n), -1, dtype=np.int64)
        self._flights_t = np.full((p + 1, self.n), -1, dtype=np.int64)
        self._gaps_t = np.zeros((p + 1, self.n))  # t_{k+1} - t_k, 0 after the last passenger
        self._times, self._cats, self._thetas, self._flights, self._gaps = (
            self._times_t.T, self._cats_t.T, self._thetas_t.T, self._flights_t.T, self._gaps_t.T)
        self._p = p
        self._flight_of = np.repeat(np.arange(game.n_flights), game.flight_sizes)
        self._rows = np.arange(self.n)
        self._no_team = np.full(self.n, -1, dtype=np.int64)
        self._row_base = self._rows * game.n_categories  # flat index of each row's history
        self._index = np.full(self.n, p, dtype=np.int64)  # not started: "done"
        # The index every row is at when all rows are at the same one (None: they are not): a
        # step then reads its passengers as columns instead of gathering them row by row.
        self._lockstep: int | None = p
        self._fused: tuple[np.ndarray, ...] | None = None  # fused_state's arrays, once made
        self._clock = np.zeros(self.n)
        self._queues = np.zeros((self.n, r))
        self._history = np.zeros((self.n, game.n_categories), dtype=np.int64)
        self._refresh()
        self._gather()

    # State ---------------------------------------------------------------------------
    def reset(self, arrivals: list[Arrivals] | ArrivalsBatch, rows: np.ndarray | None = None
              ) -> None:
        """Start the given rows' days (all rows when ``rows`` is None) with empty queues."""
        rows = self._rows if rows is None else np.asarray(rows, dtype=np.int64)
        if len(arrivals) != rows.shape[0]:
            raise ValueError(f"need one Arrivals per reset row, got {len(arrivals)} for "
                             f"{rows.shape[0]} rows")
        if not isinstance(arrivals, ArrivalsBatch):
            for arr in arrivals:
                if len(arr) != self._p:
                    raise ValueError(
                        f"a day of this instance has {self._p} passengers, got {len(arr)}"
                    )
            arrivals = ArrivalsBatch(*(np.stack([getattr(a, f) for a in arrivals]) if len(
                arrivals) else np.empty((0, self._p)) for f in ("times", "categories", "thetas",
                                                               "flights")))
        elif arrivals.times.shape[1:] != (self._p,):
            raise ValueError(f"a day of this instance has {self._p} passengers, got "
                             f"{arrivals.times.shape[1:]}")
        self._times[rows, :-1] = arrivals.times
        self._times[rows, -1] = arrivals.times[:, -1]
        self._cats[rows, :-1] = arrivals.categories
        self._thetas[rows, :-1] = arrivals.thetas
        self._flights[rows, :-1] = arrivals.flights
        self._gaps[rows, :-1] = np.diff(self._times[rows], axis=1)
        self._restart(rows)

    def _restart(self, rows: np.ndarray) -> None:
        """Put ``rows`` (their days just written) at their first passenger, queues empty."""
        self._index[rows] = 0
        self._queues[rows] = 0.0
        self._history[rows] = 0
        first = int(self._index[0])
        self._lockstep = first if bool((self._index == first).all()) else None
        self._refresh()
        self._gather()

    def reset_drawn(self, rngs: list[np.random.Generator], rows: np.ndarray,
                    arrange: Callable[..., None]) -> None:
        """:meth:`reset` of ``rows`` with days drawn from ``rngs`` (one per row).

        The days :func:`draw_arrivals_batch` draws, written in place by the compiled
        ``arrange`` (``tsg_envs.numba_vector.arrange_days``): the same days, bit for bit.
        """
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if len(rngs) != rows.shape[0]:
            raise ValueError(f"need one generator per reset row, got {len(rngs)} for "
                             f"{rows.shape[0]} rows")
        g = self.game
        times, order, risk_u = day_draws(g, rngs, stable=False)
        edges, length = risk_edges(g), float(g.day_length)
        tied = np.zeros(rows.shape[0], dtype=np.bool_)
        out = (self._times_t, self._cats_t, self._thetas_t, self._flights_t, self._gaps_t)
        arrange(times, order, risk_u, edges, self._flight_of, g.n_flights, length, rows, *out,
                tied)
        if tied.any():  # days with equal times: again in the stable order (flight order first)
            again = np.flatnonzero(tied)
            arrange(times[again], np.argsort(times[again], axis=-1, kind="stable"),
                    np.ascontiguousarray(risk_u[again]), edges, self._flight_of, g.n_flights,
                    length, rows[again], *out, tied[again])
        self._restart(rows)

    def fused_state(self) -> tuple[np.ndarray, ...]:
        """The arrays a compiled step reads and updates in place (``tsg_envs.numba_vector``).

        (index, then times, categories, θ, κ and gaps passenger major (p + 1, n), then queues,
        backlog and waits row-last ((R, n), (R, n), (T, n)), then history (n, C)); after it has
        stepped every row, call :meth:`fused_stepped`.
        """
        # The compiled step runs its loops across the rows: it reads the queues, backlog and
        # waits row-last, C-contiguous. The arrays the numpy step reads are then their
        # transposed views (the same values; after a numpy step they are copied back once).
        fused = self._fused
        if (fused is not None and fused[0] is self._index and self._queues.base is fused[6]
                and self._backlog.base is fused[7] and self._waits.base is fused[8]):
            return fused  # as the last compiled step left them
        out = []
        for name in ("_queues", "_backlog", "_waits"):
            arr = np.array(getattr(self, name).T, order="C")  # its own copy
            setattr(self, name, arr.T)
            out.append(arr)
        self._fused = (self._index, self._times_t, self._cats_t, self._thetas_t,
                       self._flights_t, self._gaps_t, *out, self._history)
        return self._fused

    def fused_stepped(self) -> None:
        """A compiled step advanced every row by one passenger: update the waiting ones."""
        k = self._lockstep
        self._lockstep = None if k is None else k + 1
        self._gather()

    def _refresh(self) -> None:
        backlog = self._queues / self._rates
        cols = self._team_cols
        waits = backlog[:, cols[0]]
        for col in cols[1:]:
            np.maximum(waits, backlog[:, col], out=waits)
        self._backlog = backlog
        self._waits = waits

    def _gather(self) -> None:
        """The waiting passenger of every row (the sentinel column after the last)."""
        k = self._lockstep
        if k is not None:
            self._category = self._cats[:, k]
            self._clock = self._times[:, k]
            return
        rows, idx = self._rows, self._index
        self._category = self._cats[rows, idx]
        self._clock = self._times[rows, idx]

    @property
    def index(self) -> np.ndarray:
        """Which passenger of its day each row is at (``game.n_passengers`` when done)."""
        return self._index.copy()

    @property
    def done(self) -> np.ndarray:
        """Whether each row's day is over, bool (N,)."""
        return self._index >= self._p

    @property
    def category(self) -> np.ndarray:
        """Category of each row's waiting passenger (-1 after the last), int (N,)."""
        return self._category.copy()

    @property
    def theta(self) -> np.ndarray:
        """θ of each row's waiting passenger (-1 after the last), int (N,)."""
        k = self._lockstep
        return self._thetas[:, k].copy() if k is not None else self._thetas[self._rows,
                                                                             self._index]

    @property
    def flight(self) -> np.ndarray:
        """κ of each row's waiting passenger (-1 after the last), int (N,)."""
        k = self._lockstep
        return self._flights[:, k].copy() if k is not None else self._flights[self._rows,
                                                                               self._index]

    @property
    def clock(self) -> np.ndarray:
        """τ: each row's waiting passenger's arrival (the last arrival after the day), (N,)."""
        return self._clock.copy()

    @property
    def queues(self) -> np.ndarray:
        """ξ, passengers in each resource's queue, drained to the waiting arrival, (N, R)."""
        return self._queues.copy()

    @property
    def backlog(self) -> np.ndarray:
        """ξ_r / f_r, minutes, (N, R)."""
        return self._backlog.copy()

    @property
    def team_waits(self) -> np.ndarray:
        """w_t = max_{r∈t} ξ_r / f_r, minutes, (N, T)."""
        return self._waits.copy()

    @property
    def history(self) -> np.ndarray:
        """h: passengers of each category screened so far, int (N, C)."""
        return self._history.copy()

    # Transition ------------------------------------------------------------------------
    def step(
        self, allocation: np.ndarray, rows: np.ndarray | None = None, u: np.ndarray | None = None
    ) -> BatchStepResult:
        """Screen the waiting passenger of each given row with its allocation and advance.

        Args:
            allocation: π per stepped row, (n, T), on the simplex (the caller checks).
            rows: The rows to step (all when None); none of them may be done.
            u: Sampled mode: one U[0, 1) draw per stepped row (the team is the first whose
                cumulative weight exceeds u · Σπ).

        Returns:
            The :class:`BatchStepResult` of the stepped rows.
        """
        every = rows is None
        rows = self._rows if every else np.asarray(rows, dtype=np.int64)
        idx = self._index if every else self._index[rows]
        cats = self._category if every else self._category[rows]
        if cats.min(initial=0) < 0:
            raise RuntimeError("a day is over: reset it before stepping")
        queues_before = self._queues if every else self._queues[rows]
        waits = self._waits if every else self._waits[rows]
        if self.queue_mode == "expected":
            wait = np.einsum("nt,nt->n", allocation, waits)
            queues = queues_before + allocation @ self._members
            team = self._no_team[:rows.shape[0]].copy()
        else:
            if u is None:
                raise ValueError("sampled queue mode needs u")
            cum = np.cumsum(allocation, axis=1)
            team = (cum <= (u * cum[:, -1])[:, None]).sum(axis=1)
            team = np.minimum(team, allocation.shape[1] - 1)
            wait = waits[np.arange(rows.shape[0]), team]
            queues = queues_before + self._members[team]
        # h_c += 1 through flat indices (one category per row, so no index repeats).
        flat = self._history.reshape(-1)
        at = (self._row_base if every else self._row_base[rows]) + cats
        screened = flat[at] + 1
        flat[at] = screened
        # Drain the gap to the next arrival (zero after the last: the sentinel repeats it).
        k = self._lockstep
        if every and k is not None:
            gap = self._gaps[:, k]
            self._lockstep = k + 1
        else:
            gap = self._gaps[rows, idx]
            self._lockstep = None
        queues -= gap[:, None] * self._rates
        np.maximum(queues, 0.0, out=queues)
        if every:
            self._index = idx + 1
            self._queues = queues
        else:
            self._index[rows] = idx + 1
            self._queues[rows] = queues
            first = int(self._index[0])
            if bool((self._index == first).all()):
                self._lockstep = first
        self._refresh()
        self._gather()
        return BatchStepResult(queues_before, waits, wait, team, screened)
