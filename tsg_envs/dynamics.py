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

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats

from tsg_envs.game import Game

QueueMode = Literal["expected", "sampled"]

__all__ = [
    "Arrivals",
    "BatchStepResult",
    "DayBatch",
    "sample_arrivals",
    "sample_arrivals_batch",
    "ScreeningDay",
    "StepResult",
    "team_waits",
]


@dataclass(frozen=True)
class Arrivals:
    """One day's passengers in arrival order.

    Attributes:
        times: (N,) arrival times, minutes from the day start, non-decreasing.
        categories: (N,) category c = θ·|K| + κ of each passenger.
        thetas: (N,) risk level θ.
        flights: (N,) flight κ.
    """

    times: np.ndarray
    categories: np.ndarray
    thetas: np.ndarray
    flights: np.ndarray

    def __len__(self) -> int:
        return int(self.times.shape[0])


def sample_arrivals(game: Game, rng: np.random.Generator) -> Arrivals:
    """Draw one day's passengers: each of flight κ's n_κ passengers arrives at d_κ - X.

    X ~ Normal(arrival_mean, arrival_std) truncated to [arrival_cutoff, arrival_mean + 3 std]
    (std = 0: X = arrival_mean); θ ~ q_θ independently. Sorted by time (stable, so ties keep
    flight order).
    """
    flights = np.repeat(np.arange(game.n_flights), game.flight_sizes)
    n = flights.shape[0]
    mean, std, cutoff = game.arrival_mean, game.arrival_std, game.arrival_cutoff
    if std > 0:
        a, b = (cutoff - mean) / std, 3.0
        x = stats.truncnorm.rvs(a, b, loc=mean, scale=std, size=n, random_state=rng)
    else:
        x = np.full(n, mean)
    times = game.departures[flights] - x
    thetas = rng.choice(game.n_risk_levels, size=n, p=game.risk_mix)
    order = np.argsort(times, kind="stable")
    times, flights, thetas = times[order], flights[order], thetas[order]
    times = np.clip(times, 0.0, game.day_length)
    return Arrivals(
        times=times,
        categories=thetas * game.n_flights + flights,
        thetas=thetas,
        flights=flights,
    )


def sample_arrivals_batch(game: Game, rngs: list[np.random.Generator]) -> list[Arrivals]:
    """:func:`sample_arrivals` for several days at once, one generator per day, bit for bit.

    Each generator makes exactly the draws :func:`sample_arrivals` makes (``n`` uniforms for
    the truncated normal, then the risk levels); the truncated normal's inverse CDF, which is
    what ``truncnorm.rvs`` applies to those uniforms, then runs once over every day.
    """
    flights = np.repeat(np.arange(game.n_flights), game.flight_sizes)
    n = flights.shape[0]
    mean, std, cutoff = game.arrival_mean, game.arrival_std, game.arrival_cutoff
    uniforms, thetas = [], []
    for rng in rngs:
        if std > 0:
            uniforms.append(rng.uniform(size=n))
        thetas.append(rng.choice(game.n_risk_levels, size=n, p=game.risk_mix))
    if std > 0:
        a = (cutoff - mean) / std
        x = stats.truncnorm.ppf(np.stack(uniforms), a, 3.0, loc=mean, scale=std)
    else:
        x = np.full((len(rngs), n), mean)
    times = game.departures[flights][None, :] - x
    order = np.argsort(times, axis=1, kind="stable")
    times = np.clip(np.take_along_axis(times, order, axis=1), 0.0, game.day_length)
    out = []
    for i in range(len(rngs)):
        fl, th = flights[order[i]], thetas[i][order[i]]
        out.append(Arrivals(times=times[i], categories=th * game.n_flights + fl, thetas=th,
                            flights=fl))
    return out


def team_waits(queues: np.ndarray, rates: np.ndarray, team_members: np.ndarray) -> np.ndarray:
    """w_t = max_{r∈t} ξ_r / f_r for queues (..., R); returns (..., T)."""
    minutes = queues / rates
    return (minutes[..., None, :] * team_members).max(axis=-1)


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
    arrivals. ``backlog`` (ξ_r / f_r) and ``team_waits`` (w_t) are kept current after every
    drain so that faces read them without recomputing.
    """

    def __init__(self, game: Game, queue_mode: QueueMode = "expected") -> None:
        if queue_mode not in ("expected", "sampled"):
            raise ValueError(f"queue_mode must be 'expected' or 'sampled', got {queue_mode!r}")
        self.game = game
        self.queue_mode = queue_mode
        self._rates = game.rates
        self._members = game.team_members.astype(float)
        sizes = game.team_members.sum(axis=1)
        # (T, max team size) resource indices; smaller teams repeat a member (max is unchanged).
        width = int(sizes.max())
        self._team_idx = np.array(
            [np.resize(np.flatnonzero(row), width) for row in game.team_members]
        )
        self._member_lists = [np.flatnonzero(row) for row in game.team_members]
        # The same indices column by column: w = max over columns of backlog[column] (exact, and
        # a few small numpy calls instead of a fancy index plus an axis reduction).
        self._team_cols = [np.ascontiguousarray(self._team_idx[:, j]) for j in range(width)]
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

    @property
    def history(self) -> np.ndarray:
        """h: passengers of each category screened so far, int (C,) (a fresh array)."""
        return np.array(self._history, dtype=np.int64)

    def screened(self, c: int) -> int:
        """h_c, passengers of category ``c`` screened so far (no array built)."""
        return self._history[c]

    @property
    def n_passengers(self) -> int:
        """Passengers of the day (the attacker included once inserted); 0 before a reset."""
        return self._n

    def _refresh(self) -> None:
        """Recompute ``backlog`` (ξ_r / f_r) and ``team_waits`` (max over members) from queues."""
        backlog = self.queues / self._rates
        cols = self._team_cols
        waits = backlog[cols[0]]
        for col in cols[1:]:
            np.maximum(waits, backlog[col], out=waits)
        self.backlog = backlog
        self.team_waits = waits

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
        if self.index >= self._n:
            raise RuntimeError("the day is over: reset before stepping")
        queues_before = self.queues
        waits = self.team_waits
        if self.queue_mode == "expected":
            # ndarray.dot: the same BLAS products as ``@`` without the gufunc overhead.
            wait = float(allocation.dot(waits))
            queues = queues_before + allocation.dot(self._members)
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
        self._history[self._cats[self.index]] += 1
        self.index += 1
        if self.index < self._n:
            queues -= self._drains[self.index - 1]
            np.maximum(queues, self._zeros, out=queues)
            self.clock = self._times[self.index]
        self.queues = queues
        self._refresh()
        # tuple.__new__ skips the named tuple's Python-level __new__ (same object, less overhead).
        return _tuple_new(StepResult, (queues_before, waits, wait, team))


class BatchStepResult(NamedTuple):
    """What one step of :class:`DayBatch` did to the stepped rows (arrays over those rows).

    Attributes:
        queues: ξ after draining, before this passenger's load, (n, R).
        waits: every team's wait at that moment, (n, T).
        wait: each passenger's wait (expected or realised), (n,).
        team: the drawn team in sampled mode, else -1, (n,).
    """

    queues: np.ndarray
    waits: np.ndarray
    wait: np.ndarray
    team: np.ndarray


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
        width = int(game.team_members.sum(axis=1).max())
        team_idx = np.array([np.resize(np.flatnonzero(row), width) for row in game.team_members])
        self._team_cols = [np.ascontiguousarray(team_idx[:, j]) for j in range(width)]
        # Arrivals, one row per day, plus a sentinel column (-1 / the last time) read after the
        # last passenger, so the waiting passenger is always one gather away.
        self._times = np.zeros((self.n, p + 1))
        self._cats = np.full((self.n, p + 1), -1, dtype=np.int64)
        self._thetas = np.full((self.n, p + 1), -1, dtype=np.int64)
        self._flights = np.full((self.n, p + 1), -1, dtype=np.int64)
        self._p = p
        self._rows = np.arange(self.n)
        self._index = np.full(self.n, p, dtype=np.int64)  # not started: "done"
        self._clock = np.zeros(self.n)
        self._queues = np.zeros((self.n, r))
        self._history = np.zeros((self.n, game.n_categories), dtype=np.int64)
        self._refresh()
        self._gather()

    # State ---------------------------------------------------------------------------
    def reset(self, arrivals: list[Arrivals], rows: np.ndarray | None = None) -> None:
        """Start the given rows' days (all rows when ``rows`` is None) with empty queues."""
        rows = self._rows if rows is None else np.asarray(rows, dtype=np.int64)
        if len(arrivals) != rows.shape[0]:
            raise ValueError(f"need one Arrivals per reset row, got {len(arrivals)} for "
                             f"{rows.shape[0]} rows")
        for row, arr in zip(rows.tolist(), arrivals, strict=True):
            if len(arr) != self._p:
                raise ValueError(
                    f"a day of this instance has {self._p} passengers, got {len(arr)}"
                )
            self._times[row, :-1] = arr.times
            self._times[row, -1] = arr.times[-1]
            self._cats[row, :-1] = arr.categories
            self._thetas[row, :-1] = arr.thetas
            self._flights[row, :-1] = arr.flights
        self._index[rows] = 0
        self._queues[rows] = 0.0
        self._history[rows] = 0
        self._refresh()
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
        return self._thetas[self._rows, self._index]

    @property
    def flight(self) -> np.ndarray:
        """κ of each row's waiting passenger (-1 after the last), int (N,)."""
        return self._flights[self._rows, self._index]

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
        if np.any(cats < 0):
            raise RuntimeError("a day is over: reset it before stepping")
        queues_before = self._queues if every else self._queues[rows]
        waits = self._waits if every else self._waits[rows]
        if self.queue_mode == "expected":
            wait = np.einsum("nt,nt->n", allocation, waits)
            queues = queues_before + allocation @ self._members
            team = np.full(rows.shape[0], -1, dtype=np.int64)
        else:
            if u is None:
                raise ValueError("sampled queue mode needs u")
            cum = np.cumsum(allocation, axis=1)
            team = (cum <= (u * cum[:, -1])[:, None]).sum(axis=1)
            team = np.minimum(team, allocation.shape[1] - 1)
            wait = waits[np.arange(rows.shape[0]), team]
            queues = queues_before + self._members[team]
        self._history[rows, cats] += 1
        idx = idx + 1
        # Drain the gap to the next arrival (zero after the last: the sentinel repeats it).
        gap = self._times[rows, idx] - self._times[rows, idx - 1]
        queues = np.maximum(queues - gap[:, None] * self._rates, 0.0)
        if every:
            self._index = idx
            self._queues = queues
        else:
            self._index[rows] = idx
            self._queues[rows] = queues
        self._refresh()
        self._gather()
        return BatchStepResult(queues_before, waits, wait, team)
