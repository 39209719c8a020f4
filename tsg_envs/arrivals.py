"""The arrival model: each day's passengers, their times and risk levels (numpy).

Provenance: SPEC §1 ("Arrivals"): passengers of flight κ arrive at d_κ − X, X normal (mean
``arrival_mean`` minutes before departure, standard deviation ``arrival_std``) truncated to
[cut-off, mean + 3σ], each with a risk level θ drawn from the mix q_θ. Every draw goes through an
explicit ``numpy.random.Generator``; :func:`sample_arrivals` (one day) and
:func:`draw_arrivals_batch` (many days, the vector environment's reset) draw the same days bit
for bit. :mod:`tsg_envs.dynamics` re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from tsg_envs.game import Game

__all__ = [
    "Arrivals",
    "ArrivalsBatch",
    "day_draws",
    "draw_arrivals_batch",
    "risk_edges",
    "sample_arrivals",
    "sample_arrivals_batch",
    "truncated_normal_ppf",
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


def truncated_normal_ppf(u: np.ndarray, a: float, b: float) -> np.ndarray:
    """The standard normal truncated to [a, b], its inverse CDF at ``u``: draws from uniforms.

    The same arithmetic as SciPy's ``truncnorm`` (its ``_ppf``, which ``truncnorm.rvs`` applies
    to ``random_state.uniform``), on scalar bounds and without its per-element bookkeeping:
    log Φ(x) = log(Φ(a) + u (Φ(b) − Φ(a))) in log space (logsumexp of two terms, written out as
    SciPy's ``logsumexp`` computes it), then ``ndtri_exp``: for a ≤ 0 < b (an arrival cut-off
    before the mean, every registered id) bit for bit the same numbers (``tests/test_vector.py``),
    about eight times faster. For a > 0 the mirrored formula, equal to rounding.
    """
    u = np.asarray(u, dtype=float)
    if u.ndim == 0:
        return truncated_normal_ppf(u.reshape(1), a, b)[0]
    if a < 0:
        first, second = _norm_logcdf(a), np.log(u)
    else:
        first, second = _norm_logcdf(-b), np.log1p(-u)
    # In place where it can be (the same operations, fewer large temporaries).
    second += _log_gauss_mass(a, b)
    high = np.maximum(second, first)
    log_phi = np.minimum(second, first, out=second)  # low
    log_phi -= high
    np.exp(log_phi, out=log_phi)
    np.log1p(log_phi, out=log_phi)
    log_phi += high
    x = special.ndtri_exp(log_phi)
    return x if a < 0 else np.negative(x, out=x)


def _norm_logcdf(x: float) -> float:
    return float(special.log_ndtr(np.float64(x)))


def _log_gauss_mass(a: float, b: float) -> float:
    """log(Φ(b) − Φ(a)) for a < b, b > 0.

    For a ≤ 0 < b as SciPy's ``truncnorm`` computes it, log1p(−Φ(a) − Φ(−b)), bit for bit; for
    0 < a < b (an arrival cut-off past the mean) in the right tail, log(Φ(−a) − Φ(−b)).
    """
    if a <= 0.0:
        return float(special.log1p(-special.ndtr(np.float64(a)) - special.ndtr(np.float64(-b))))
    return float(np.log(special.ndtr(np.float64(-a)) - special.ndtr(np.float64(-b))))


def _time_order(times: np.ndarray) -> np.ndarray:
    """``argsort(times, kind="stable")`` along the last axis, faster.

    Where a row's times are all distinct every sort gives the same order, so the quick (not
    stable) sort is used and only rows with a tie are sorted again, stably.
    """
    order = np.argsort(times, axis=-1)
    ranked = np.take_along_axis(times, order, axis=-1)
    tied = (ranked[..., 1:] == ranked[..., :-1]).any(axis=-1)
    if np.any(tied):
        order[tied] = np.argsort(times[tied], axis=-1, kind="stable")
    return order


def _arrival_offsets(game: Game, uniforms: np.ndarray) -> np.ndarray:
    """X = mean + std · ppf(u): minutes before departure, from the day's uniforms."""
    mean, std, cutoff = game.arrival_mean, game.arrival_std, game.arrival_cutoff
    x = truncated_normal_ppf(uniforms, (cutoff - mean) / std, 3.0)
    x *= std
    x += mean
    return x


def sample_arrivals(game: Game, rng: np.random.Generator) -> Arrivals:
    """Draw one day's passengers: each of flight κ's n_κ passengers arrives at d_κ - X.

    X ~ Normal(arrival_mean, arrival_std) truncated to [arrival_cutoff, arrival_mean + 3 std]
    (std = 0: X = arrival_mean), drawn as ``scipy.stats.truncnorm.rvs`` would (n uniforms
    through the inverse CDF, :func:`truncated_normal_ppf`); θ ~ q_θ independently. Sorted by
    time (stable, so ties keep flight order).
    """
    flights = np.repeat(np.arange(game.n_flights), game.flight_sizes)
    n = flights.shape[0]
    if game.arrival_std > 0:
        x = _arrival_offsets(game, rng.uniform(size=n))
    else:
        x = np.full(n, game.arrival_mean)
    times = game.departures[flights] - x
    thetas = rng.choice(game.n_risk_levels, size=n, p=game.risk_mix)
    order = _time_order(times)
    times, flights, thetas = times[order], flights[order], thetas[order]
    times = np.clip(times, 0.0, game.day_length)
    return Arrivals(
        times=times,
        categories=thetas * game.n_flights + flights,
        thetas=thetas,
        flights=flights,
    )


@dataclass(frozen=True)
class ArrivalsBatch:
    """Several days' passengers in arrival order, one row per day (:class:`Arrivals` stacked).

    Attributes:
        times: (D, N) arrival times.
        categories: (D, N).
        thetas: (D, N).
        flights: (D, N).
    """

    times: np.ndarray
    categories: np.ndarray
    thetas: np.ndarray
    flights: np.ndarray

    def __len__(self) -> int:
        return int(self.times.shape[0])

    def day(self, i: int) -> Arrivals:
        """Day ``i`` as :class:`Arrivals`."""
        return Arrivals(times=self.times[i], categories=self.categories[i],
                        thetas=self.thetas[i], flights=self.flights[i])


def draw_arrivals_batch(game: Game, rngs: list[np.random.Generator]) -> ArrivalsBatch:
    """:func:`sample_arrivals` for several days at once, one generator per day, bit for bit.

    Each generator makes exactly the draws :func:`sample_arrivals` makes (``n`` uniforms for
    the truncated normal, then ``n`` for the risk levels, which ``Generator.choice`` turns into
    levels by a search in the cumulative mix); the arithmetic then runs once over every day.
    """
    times, order, risk_u = day_draws(game, rngs)
    # cdf.searchsorted(u, side="right") (what Generator.choice does), as a count of cdf <= u.
    thetas = np.zeros(risk_u.shape, dtype=np.int64)
    for edge in risk_edges(game).tolist():
        thetas += risk_u >= edge
    flights = np.repeat(np.arange(game.n_flights), game.flight_sizes)
    times = np.clip(np.take_along_axis(times, order, axis=1), 0.0, game.day_length)
    fl = flights[order]
    th = np.take_along_axis(thetas, order, axis=1)
    return ArrivalsBatch(times=times, categories=th * game.n_flights + fl, thetas=th, flights=fl)


def risk_edges(game: Game) -> np.ndarray:
    """The cumulative risk mix without its last entry: a passenger's θ counts the edges <= u."""
    cdf = np.cumsum(game.risk_mix)
    cdf /= cdf[-1]
    return cdf[:-1]


def day_draws(game: Game, rngs: list[np.random.Generator], stable: bool = True
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`draw_arrivals_batch` before its gathers.

    Args:
        game: The instance.
        rngs: One generator per day.
        stable: Whether the order must be the stable one; False: numpy's quick sort, the stable
            order wherever a day's times are distinct (the caller fixes the days with a tie).

    Returns:
        Each day's arrival times in flight order (D, n) (not yet clipped to the day), their
        stable sort order (D, n), and the uniforms of the risk levels (D, n).
    """
    flights = np.repeat(np.arange(game.n_flights), game.flight_sizes)
    n = flights.shape[0]
    std = game.arrival_std
    # Generator.uniform(size=n) then .random(n) are the next 2n doubles of the stream, which
    # one .random(2n) call draws (the same numbers, the same state after).
    k = 2 if std > 0 else 1
    draws = np.empty((len(rngs), k * n))
    for i, rng in enumerate(rngs):
        rng.random(k * n, out=draws[i])
    draws_kbn = draws.reshape(len(rngs), k, n).transpose(1, 0, 2)
    x = (_arrival_offsets(game, draws_kbn[0]) if std > 0
         else np.full((len(rngs), n), game.arrival_mean))
    times = game.departures[flights][None, :] - x
    return times, _time_order(times) if stable else np.argsort(times, axis=-1), draws_kbn[-1]


def sample_arrivals_batch(game: Game, rngs: list[np.random.Generator]) -> list[Arrivals]:
    """:func:`draw_arrivals_batch`, one :class:`Arrivals` per day."""
    batch = draw_arrivals_batch(game, rngs)
    return [batch.day(i) for i in range(len(batch))]
