"""The seeded instance generator: ``make_game(config, seed)``.

A :class:`~tsg_envs.game.Game` is plain data (:mod:`tsg_envs.game`); this module draws one from a
:class:`~tsg_envs.game.GameConfig` and an integer seed, with every random draw on an independent
sub-stream of ``numpy.random.default_rng(seed)``. Departures come from :mod:`tsg_envs.schedules`,
the resource rates from :mod:`tsg_envs.calibration`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np

from tsg_envs import calibration, schedules, validation
from tsg_envs.cache import KeyedCache
from tsg_envs.game import Game, GameConfig

__all__ = ["InstanceDraw", "draw_instance", "make_game"]


def _departures_after_midnight(config: GameConfig, rng: np.random.Generator) -> np.ndarray:
    if config.schedule == "hub":
        if config.horizon == "window":
            # Uniformly from 08:00 over ``departure_span`` minutes (v1: 08:00-09:00, one bank).
            return np.sort(rng.uniform(8 * 60.0, 8 * 60.0 + config.departure_span,
                                       size=config.n_flights))
        n = config.n_flights
        assert n is not None  # only a real schedule lets n_flights be None (validated)
        if config.horizon == "shift":
            return schedules.sample_hub_departures(n, rng, 6 * 60.0, 12 * 60.0)
        return schedules.sample_hub_departures(n, rng, *schedules.OPERATING_DAY)
    where = f"schedule={config.schedule!r}"
    if config.schedule.startswith("jfk:"):
        try:
            times = schedules.jfk_departures(config.schedule[4:])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    else:
        try:
            times = schedules.load_departures_csv(config.schedule[4:])
        except schedules.ScheduleError as exc:
            raise schedules.ScheduleError(f"{where}: {exc}") from None
    if config.n_flights is not None and config.n_flights > len(times):
        raise ValueError(
            f"n_flights={config.n_flights} exceeds the {len(times)} departures of {where}"
        )
    return schedules.select_departures(times, config.n_flights, rng)


def _check_schedule_size(config: GameConfig, dep_abs: np.ndarray, max_size: int) -> None:
    """A real schedule's flight count and day length against the documented bounds."""
    v = validation
    k = dep_abs.shape[0]
    where = f"schedule={config.schedule!r}"
    if k > v.MAX_FLIGHTS:
        raise ValueError(
            f"{where} has {k} departures and n_flights=None keeps them all; at most "
            f"{v.MAX_FLIGHTS} flights are supported (pass n_flights to sample fewer)"
        )
    v.check_allocations(config.n_risk_levels, k, math.comb(config.n_resources, config.team_size),
                        where)
    if k * max_size > v.MAX_PASSENGERS:
        raise ValueError(
            f"{where}: {k} flights of up to {max_size} passengers could make {k * max_size} "
            f"passengers; at most {v.MAX_PASSENGERS} are supported (pass a smaller n_flights)"
        )
    length = float(dep_abs.max() - dep_abs.min()) + config.arrival_latest - config.arrival_cutoff
    if length > v.MAX_DAY_MINUTES:
        raise ValueError(
            f"{where}: departures from {dep_abs.min():g} to {dep_abs.max():g} minutes after "
            f"midnight make a day of {length:g} minutes; at most {v.MAX_DAY_MINUTES:g} are "
            "supported"
        )


def make_game(config: GameConfig | None = None, seed: int = 0) -> Game:
    """Build the game instance of ``config`` fixed by ``seed`` (a pure function).

    Args:
        config: The family; defaults to ``GameConfig()`` (the ``tsg/Screening-v1`` game).
        seed: Picks the instance. Every random draw goes through
            ``numpy.random.default_rng(seed)``; on the window horizon, a draw that the
            single-window binding step rejects (``GameConfig.window_tightness``) is followed by
            draws from ``numpy.random.default_rng([seed, d])``, d = 1, 2, ..., until one binds
            (:func:`draw_instance` says how many it took).

    Returns:
        A frozen :class:`Game`.
    """
    config = GameConfig() if config is None else config
    if not isinstance(config, GameConfig):
        raise TypeError(f"config must be a tsg_envs.GameConfig, got {validation.describe(config)}")
    seed = validation.check_int("seed", seed, low=0)
    return draw_instance(config, seed).game


@dataclass(frozen=True)
class InstanceDraw:
    """How :func:`make_game` reached an instance.

    Attributes:
        game: The instance.
        draws: Draws made (1 unless the single-window binding step rejected some).
        binding: The binding step's verdict on the accepted draw (window horizon only).
    """

    game: Game
    draws: int
    binding: calibration.WindowBinding | None


def draw_instance(config: GameConfig, seed: int) -> InstanceDraw:
    """:func:`make_game` with its record: how many draws the seed took and the binding verdict.

    Draw 0 uses ``numpy.random.default_rng(seed)``, draw d > 0 ``default_rng([seed, d])``.
    Cached per (config, seed) in :data:`INSTANCE_CACHE`: on the window horizon the binding step
    solves two window LPs per draw (on 300 flights most of a first construction), and every
    later environment of the instance (the vector envs of an evaluation, a second agent's env)
    gets the same frozen game without them.
    """
    seed = validation.check_int("seed", seed, low=0)
    return INSTANCE_CACHE.get_or_make((config, seed), lambda: _draw_instance(config, seed))


#: The instances drawn last in this process, by (config, seed) (games are frozen, read-only).
#: A test that changes the calibration's constants must clear it.
INSTANCE_CACHE: KeyedCache[InstanceDraw] = KeyedCache(16)


def _draw_instance(config: GameConfig, seed: int) -> InstanceDraw:
    if config.horizon != "window" or config.window_tightness is None:
        return InstanceDraw(_draw(config, seed, np.random.default_rng(seed)), 1, None)
    # The single-window binding step: the first draw that binds without overload.
    for draw in range(calibration.MAX_WINDOW_DRAWS):
        rng = np.random.default_rng(seed if draw == 0 else [seed, draw])
        game = _draw(config, seed, rng)
        binding = calibration.window_binding(game, config.window_tightness)
        if binding.accepted:
            game = dataclasses.replace(game, rates=game.rates * binding.scale)
            return InstanceDraw(game, draw + 1, binding)
    raise ValueError(
        f"no draw of instance seed {seed} among {calibration.MAX_WINDOW_DRAWS} makes the single "
        f"window's capacity bind without overload (window_tightness={config.window_tightness}); "
        "this config's screening fits or overloads at every capacity: pass "
        "window_tightness=None to keep the mean-load rates"
    )


def _draw(config: GameConfig, seed: int, rng: np.random.Generator) -> Game:
    """One draw of the instance from ``rng`` (the binding step may reject it)."""
    r, m, n_theta = config.n_resources, config.n_methods, config.n_risk_levels

    # Independent sub-streams, so that changing one part of the config (e.g. the schedule)
    # leaves the other draws of the instance unchanged.
    rng_sched, rng_size, rng_eff, rng_loss, rng_risk, rng_rate = rng.spawn(6)

    dep_abs = np.asarray(_departures_after_midnight(config, rng_sched), dtype=float)
    k = dep_abs.shape[0]
    lo, hi = config.flight_size_range
    _check_schedule_size(config, dep_abs, hi)
    flight_sizes = rng_size.integers(lo, hi + 1, size=k)

    team_members = np.zeros((0, r), dtype=bool)
    teams = list(itertools.combinations(range(r), config.team_size))
    team_members = np.zeros((len(teams), r), dtype=bool)
    for i, members in enumerate(teams):
        team_members[i, list(members)] = True
    resource_efficacy = rng_eff.uniform(*config.efficacy_range, size=(r, m))
    team_efficacy = 1.0 - np.prod(
        np.where(team_members[:, :, None], 1.0 - resource_efficacy[None, :, :], 1.0), axis=1
    )
    attack_loss = rng_loss.uniform(*config.loss_range, size=(k, m))
    risk_mix = np.sort(rng_risk.dirichlet(np.full(n_theta, config.risk_mix_concentration)))[::-1]
    attacker_prior = rng_risk.dirichlet(np.full(n_theta, config.attacker_prior_concentration))

    latest = config.arrival_latest
    day_start_abs = float(dep_abs.min() - latest)
    departures = dep_abs - day_start_abs
    day_length = float(departures.max() - config.arrival_cutoff)

    rates = calibration.calibrated_rates(config, int(flight_sizes.sum()), day_length, rng_rate)

    game = Game(
        config=config,
        seed=int(seed),
        rates=rates,
        team_members=team_members,
        resource_efficacy=resource_efficacy,
        team_efficacy=team_efficacy,
        attacker_prior=attacker_prior,
        risk_mix=np.ascontiguousarray(risk_mix),
        attack_loss=attack_loss,
        departures=departures,
        flight_sizes=np.asarray(flight_sizes, dtype=np.int64),
        arrival_mean=config.arrival_mean,
        arrival_std=config.arrival_std,
        arrival_cutoff=config.arrival_cutoff,
        day_start=day_start_abs,
        day_length=day_length,
        planning_utilisation=config.planning_utilisation,
        key=(config, int(seed)),
    )
    return game
