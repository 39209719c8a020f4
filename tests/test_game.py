"""Game instances: determinism, the generator's rules, validation, arrivals."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from conftest import tiny_game
from hypothesis import given, settings
from hypothesis import strategies as st

from tsg_envs import GameConfig, ScreeningDay, make_game, sample_arrivals, team_waits
from tsg_envs.game import (
    DEFAULT_CAPACITY_RATIO,
    arrival_window_probabilities,
    expected_arrivals_per_minute,
    truncated_normal_cdf,
)

ARRAYS = ("rates", "team_members", "resource_efficacy", "team_efficacy", "attacker_prior",
          "risk_mix", "attack_loss", "departures", "flight_sizes")


def test_same_seed_same_game_different_seed_differs() -> None:
    a, b, c = make_game(seed=3), make_game(seed=3), make_game(seed=4)
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.day_start, a.day_length) == (b.day_start, b.day_length)
    for name in ("rates", "resource_efficacy", "attack_loss", "departures", "risk_mix"):
        assert not np.array_equal(getattr(a, name), getattr(c, name)), name


def test_default_game_shapes_and_generator_rules() -> None:
    g = make_game(GameConfig(), seed=0)
    assert (g.n_resources, g.n_teams, g.n_methods, g.n_risk_levels, g.n_flights) == (
        5, 10, 3, 5, 10)
    # Teams: every 2-subset of 5 resources, in combinations order.
    expected = np.zeros((10, 5), dtype=bool)
    for i, pair in enumerate(itertools.combinations(range(5), 2)):
        expected[i, list(pair)] = True
    np.testing.assert_array_equal(g.team_members, expected)
    # Team efficacy with independent resources: E_{t,m} = 1 - Π_{r∈t}(1 - e_{r,m}).
    for t, (r1, r2) in enumerate(itertools.combinations(range(5), 2)):
        want = 1 - (1 - g.resource_efficacy[r1]) * (1 - g.resource_efficacy[r2])
        np.testing.assert_allclose(g.team_efficacy[t], want, rtol=1e-14)
    assert ((0 <= g.resource_efficacy) & (g.resource_efficacy <= 1)).all()
    assert ((1 <= g.attack_loss) & (g.attack_loss <= 10)).all()
    assert ((50 <= g.flight_sizes) & (g.flight_sizes <= 150)).all()
    assert g.flight_sizes.dtype == np.int64
    assert g.risk_mix.sum() == pytest.approx(1) and g.attacker_prior.sum() == pytest.approx(1)
    assert np.all(np.diff(g.risk_mix) <= 0)  # level 0 is the most common
    # The day starts at the earliest possible arrival (mean + 3σ before the first departure)
    # and ends at the last possible one (cut-off before the last departure).
    assert g.departures.min() == pytest.approx(90 + 3 * 45)
    assert g.day_length == pytest.approx(g.departures.max() - 20)
    # Shift horizon: departures inside 06:00-12:00.
    dep = g.departures + g.day_start
    assert (dep >= 360).all() and (dep <= 720).all()
    # Calibration: Σ f = ρ · team_size · N / L, ρ = 2 for the shift horizon; relative rates
    # from U[0.5, 1.5] so no resource has more than 3 times another's rate.
    assert g.rates.sum() == pytest.approx(2.0 * 2 * g.n_passengers / g.day_length, rel=1e-12)
    assert g.rates.max() / g.rates.min() <= 3.0
    assert g.n_passengers == int(g.flight_sizes.sum())


def test_default_capacity_ratio_per_horizon() -> None:
    for horizon, rho in DEFAULT_CAPACITY_RATIO.items():
        g = make_game(GameConfig(horizon=horizon, window_tightness=None), seed=1)
        assert g.config.resolved_capacity_ratio == rho
        assert g.rates.sum() == pytest.approx(rho * 2 * g.n_passengers / g.day_length)
    g = make_game(GameConfig(capacity_ratio=3.5), seed=1)
    assert g.rates.sum() == pytest.approx(3.5 * 2 * g.n_passengers / g.day_length)


def test_horizons_place_departures() -> None:
    w = make_game(GameConfig(horizon="window", n_flights=20), seed=2)
    dep = w.departures + w.day_start
    assert dep.max() - dep.min() <= 60.0
    d = make_game(GameConfig(horizon="day", n_flights=50), seed=2)
    dep = d.departures + d.day_start
    assert dep.max() - dep.min() > 6 * 60


def test_independent_substreams() -> None:
    # Changing the horizon (the schedule) leaves efficacies, losses and the risk mix unchanged.
    a = make_game(GameConfig(horizon="shift"), seed=9)
    b = make_game(GameConfig(horizon="day"), seed=9)
    for name in ("resource_efficacy", "attack_loss", "risk_mix", "attacker_prior",
                 "flight_sizes"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_game_is_read_only_and_categories_index() -> None:
    g = make_game(seed=0)
    with pytest.raises(ValueError):
        g.rates[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.day_length = 1.0  # type: ignore[misc]
    assert g.category(2, 7) == 27
    theta, flight = g.split_category(np.array([0, 9, 10, 49]))
    np.testing.assert_array_equal(theta, [0, 0, 1, 4])
    np.testing.assert_array_equal(flight, [0, 9, 0, 9])
    np.testing.assert_allclose(
        g.expected_category_counts().reshape(5, 10), np.outer(g.risk_mix, g.flight_sizes)
    )


def test_hand_built_game_validation() -> None:
    # Tiny game (tests/conftest.py): expected counts n_κ q_θ = (2, 1)·½ for θ0 then θ1.
    g = tiny_game()
    np.testing.assert_array_equal(g.expected_category_counts(), [1.0, 0.5, 1.0, 0.5])
    assert (g.n_categories, g.n_passengers) == (4, 3)
    with pytest.raises(ValueError, match="rates"):
        tiny_game(rates=np.array([0.5, 0.25, 1.0]))
    with pytest.raises(ValueError, match="attack_loss"):
        tiny_game(attack_loss=np.array([[2.0, 1.0], [4.0, 1.0]]))
    with pytest.raises(ValueError, match=r"Game.rates must be in \[1e-06, 1e\+09\]"):
        tiny_game(rates=np.array([0.5, 0.0]))


@pytest.mark.parametrize(
    "changes",
    [dict(n_flights=0), dict(team_size=6), dict(horizon="week"), dict(schedule="ftp:x"),
     dict(flight_size_range=(10, 5)), dict(arrival_std=-1.0), dict(arrival_cutoff=100.0),
     dict(capacity_ratio=0.0), dict(efficacy_range=(0.0, 1.5)), dict(n_flights=None),
     dict(relative_rate_range=(0.0, 1.0))],
)
def test_config_validation(changes: dict) -> None:
    with pytest.raises(ValueError):
        GameConfig(**changes)


def test_make_game_rejects_bad_seeds() -> None:
    with pytest.raises(ValueError, match=r"seed must be an integer >= 0, got -1 \(int\)"):
        make_game(seed=-1)
    # A float or a string is the wrong kind of value: refused, never truncated to an instance.
    for seed in (1.5, 1.0, "0", True):
        with pytest.raises(TypeError, match="seed must be an integer"):
            make_game(seed=seed)  # type: ignore[arg-type]


# Arrivals ---------------------------------------------------------------------------------------
def test_sample_arrivals_rules() -> None:
    g = make_game(seed=0)
    day = sample_arrivals(g, np.random.default_rng(0))
    assert len(day) == g.n_passengers
    assert np.all(np.diff(day.times) >= 0)
    assert day.times.min() >= 0 and day.times.max() <= g.day_length
    np.testing.assert_array_equal(np.bincount(day.flights, minlength=g.n_flights),
                                  g.flight_sizes)
    np.testing.assert_array_equal(day.categories, day.thetas * g.n_flights + day.flights)
    before = g.departures[day.flights] - day.times
    assert before.min() >= 20 - 1e-9 and before.max() <= 90 + 3 * 45 + 1e-9
    # Mean of a symmetric-ish truncated normal: close to 90 (the cut-off shifts it up a bit).
    assert 85 < before.mean() < 100
    # Levels follow q_θ (937 passengers; generous band).
    share = np.bincount(day.thetas, minlength=5) / len(day)
    assert np.abs(share - g.risk_mix).max() < 0.08
    again = sample_arrivals(g, np.random.default_rng(0))
    np.testing.assert_array_equal(again.times, day.times)
    other = sample_arrivals(g, np.random.default_rng(1))
    assert not np.array_equal(other.times, day.times)


def test_zero_std_arrivals_at_the_mean() -> None:
    g = tiny_game()  # departures 3, mean 2, σ = 0
    day = sample_arrivals(g, np.random.default_rng(0))
    np.testing.assert_array_equal(day.times, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(day.flights, [0, 0, 1])  # stable order on ties


def test_arrival_window_probabilities() -> None:
    g = make_game(seed=0)
    edges = np.linspace(0.0, g.day_length, 13)
    probs = arrival_window_probabilities(g, edges)
    assert probs.shape == (12, g.n_flights)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, atol=1e-9)
    assert probs.min() >= 0
    # σ = 0: all mass in the window holding d - mean (tiny game: τ = 1 in [1, 2)).
    np.testing.assert_array_equal(
        arrival_window_probabilities(tiny_game(), np.array([0.0, 1.0, 2.0, 4.0])),
        [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]],
    )
    edges, rate = expected_arrivals_per_minute(g)
    assert rate.sum() == pytest.approx(g.n_passengers, rel=1e-3)


# The dynamics core, directly ------------------------------------------------------------------
def test_team_waits_by_hand() -> None:
    # ξ = (1, 0.75), f = (0.5, 0.25): backlog (2, 3); w = (2, max(2, 3)) = (2, 3).
    g = tiny_game()
    np.testing.assert_array_equal(team_waits(np.array([1.0, 0.75]), g.rates, g.team_members),
                                  [2.0, 3.0])
    batch = team_waits(np.array([[1.0, 0.0], [0.0, 1.0]]), g.rates, g.team_members)
    np.testing.assert_array_equal(batch, [[2.0, 2.0], [0.0, 4.0]])


def test_screening_day_drains_and_clips_at_zero() -> None:
    # One passenger at τ = 0 on team 1 loads (1, 1); the next at τ = 10 sees ξ drained by
    # 10·f = (5, 2.5), clipped at 0.
    from conftest import arrivals

    g = tiny_game()
    day = ScreeningDay(g, "expected")
    day.reset(arrivals([0.0, 10.0], [0, 0], [0, 0]))
    r1 = day.step(np.array([0.0, 1.0]))
    assert r1.wait == 0.0 and not day.done
    np.testing.assert_array_equal(day.queues, [0.0, 0.0])
    assert day.clock == 10.0
    np.testing.assert_array_equal(day.history, [1, 0, 0, 0])
    day.step(np.array([0.0, 1.0]))
    assert day.done and day.category == -1
    with pytest.raises(RuntimeError):
        day.step(np.array([0.0, 1.0]))
    with pytest.raises(ValueError):
        ScreeningDay(g, "mean")  # type: ignore[arg-type]
    sampled = ScreeningDay(g, "sampled")
    sampled.reset(arrivals([0.0], [0], [0]))
    with pytest.raises(ValueError, match="rng"):
        sampled.step(np.array([0.5, 0.5]))


def test_window_binding_step_binds_without_overload() -> None:
    # Window horizon: each accepted instance's rates are the first binding draw's rates times one
    # common factor s = U* - τ (U* - U_min), so that the least peak utilisation any allocation
    # reaches is U_min / s <= 1 (no overload stretch) while the LP's risk-optimal allocation
    # would need U* / s > 1: capacity binds, and the LP loses at least 1% of its value to it.
    # Checked against an independent LP with capacity unbounded.
    import dataclasses

    from tsg_envs import solve_window_lp
    from tsg_envs.calibration import MIN_CAPACITY_LOSS
    from tsg_envs.instances import draw_instance

    config = GameConfig(horizon="window")
    plain_config = GameConfig(horizon="window", window_tightness=None)
    rejected = 0
    for seed in range(6):
        record = draw_instance(config, seed)
        game, binding = record.game, record.binding
        rejected += record.draws - 1
        assert binding is not None and binding.accepted
        if record.draws == 1:  # a first draw is the plain instance, rates times one factor
            plain = make_game(plain_config, seed)
            np.testing.assert_allclose(game.rates / plain.rates, binding.scale, rtol=1e-12)
            np.testing.assert_array_equal(game.attack_loss, plain.attack_loss)
        assert binding.least / binding.scale < 1.0 < binding.risk_optimal / binding.scale
        sol = solve_window_lp(game, None)
        assert sol.stretch[0] == 1.0
        unbounded = dataclasses.replace(game, rates=game.rates * 1e3, key=None)
        v_inf = game.attacker_prior @ solve_window_lp(unbounded, None).utility[0]
        v = game.attacker_prior @ sol.utility[0]
        assert (v_inf - v) / abs(v_inf) >= MIN_CAPACITY_LOSS * (1 - 1e-6)
    assert rejected > 0  # the rule does reject draws on these seeds (about half of them)


def test_window_binding_gives_up_with_a_clear_error(monkeypatch) -> None:
    from tsg_envs import calibration, instances

    monkeypatch.setattr(calibration, "MIN_CAPACITY_LOSS", 10.0)  # no draw can lose 1000%
    monkeypatch.setattr(calibration, "MAX_WINDOW_DRAWS", 2)
    instances.INSTANCE_CACHE.clear()  # an instance drawn earlier under the real constants
    with pytest.raises(ValueError, match="window_tightness=None"):
        make_game(GameConfig(horizon="window", n_flights=5), seed=0)


def test_an_instance_is_drawn_once_per_process(monkeypatch) -> None:
    # The binding step (two window LPs per draw) runs once per (config, seed); a second
    # make_game gets the same frozen game, and another seed is drawn afresh.
    from tsg_envs import calibration, instances

    instances.INSTANCE_CACHE.clear()
    calls = []
    real = calibration.window_binding

    def counting(game, tightness):
        calls.append(game.seed)
        return real(game, tightness)

    monkeypatch.setattr(calibration, "window_binding", counting)
    config = GameConfig(horizon="window", n_flights=5)
    first = make_game(config, seed=3)
    n = len(calls)
    assert n >= 1 and make_game(config, seed=3) is first and len(calls) == n
    other = make_game(config, seed=4)
    assert len(calls) > n and other.seed == 4
    assert not first.rates.flags.writeable  # shared, so read-only


def test_reordered_by_hand() -> None:
    # Swap the two resources, the two teams and the two flights of the tiny game, keep levels.
    game = tiny_game()
    swap = [1, 0]
    r = game.reordered(resources=swap, teams=swap, flights=swap)
    np.testing.assert_array_equal(r.rates, [0.25, 0.5])
    # Team 0 was {resource 0}, team 1 {0, 1}; after both swaps new team 0 = old team 1 = both
    # resources, new team 1 = old team 0 = old resource 0, which is new resource 1.
    np.testing.assert_array_equal(r.team_members, [[True, True], [False, True]])
    np.testing.assert_array_equal(r.team_efficacy, [[0.75], [0.5]])
    np.testing.assert_array_equal(r.attack_loss, [[4.0], [2.0]])
    np.testing.assert_array_equal(r.flight_sizes, [1, 2])
    np.testing.assert_array_equal(r.attacker_prior, game.attacker_prior)
    # Category c = θ·2 + κ of the new game is θ·2 + (1 - κ) of the old one.
    np.testing.assert_array_equal(r.expected_category_counts(),
                                  game.expected_category_counts()[[1, 0, 3, 2]])
    assert r.key is None and r.n_passengers == game.n_passengers
    # No order given: the same arrays.
    same = game.reordered()
    for name in ("rates", "team_members", "attack_loss", "departures"):
        np.testing.assert_array_equal(getattr(same, name), getattr(game, name))


@pytest.mark.parametrize("bad", [[0, 0], [0], [0, 2], [0.0, 1.0], [True, False], [[0, 1]]])
def test_reordered_rejects_what_is_not_a_permutation(bad) -> None:
    with pytest.raises(ValueError, match="teams must be a permutation of 0..1"):
        tiny_game().reordered(teams=bad)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reordered_then_inverse_is_the_game(seed: int) -> None:
    game = make_game(GameConfig(n_flights=4), 3)
    rng = np.random.default_rng(seed)
    order = {name: rng.permutation(n) for name, n in (
        ("resources", game.n_resources), ("teams", game.n_teams), ("methods", game.n_methods),
        ("levels", game.n_risk_levels), ("flights", game.n_flights))}
    back = game.reordered(**order).reordered(**{k: np.argsort(p) for k, p in order.items()})
    for name in ("rates", "team_members", "resource_efficacy", "team_efficacy",
                 "attacker_prior", "risk_mix", "attack_loss", "departures", "flight_sizes"):
        np.testing.assert_array_equal(getattr(back, name), getattr(game, name))


@settings(max_examples=60, deadline=None)
@given(
    a=st.floats(-8.0, 2.5, allow_nan=False),
    width=st.floats(0.05, 9.0, allow_nan=False),
    loc=st.floats(-200.0, 200.0, allow_nan=False),
    scale=st.floats(0.1, 200.0, allow_nan=False),
    seed=st.integers(0, 2**31 - 1),
)
def test_truncated_normal_cdf_is_scipy_stats_bit_for_bit(a, width, loc, scale, seed) -> None:
    # The window LP's expected counts come from this CDF; computed without importing
    # scipy.stats, it must give SciPy's numbers exactly (left tail, right tail, across the
    # centre, outside the support, and where SciPy switches to the complement).
    from scipy import stats

    b = a + width
    rng = np.random.default_rng(seed)
    z = np.concatenate([rng.uniform(a - 1.0, b + 1.0, 40), [a, b, a - 5.0, b + 5.0, 0.0]])
    x = (loc + scale * z).reshape(5, 9)
    expected = stats.truncnorm(a, b, loc=loc, scale=scale).cdf(x)
    np.testing.assert_array_equal(truncated_normal_cdf(x, a, b, loc, scale), expected)


def test_window_probabilities_are_scipy_stats_truncnorm_on_every_registered_family() -> None:
    from scipy import stats

    import tsg_envs  # noqa: F401  (registers the ids)
    from tsg_envs.game import _truncation

    for n_flights, std, horizon in ((10, 45.0, "window"), (50, 15.0, "shift"), (300, 150.0, "day")):
        game = make_game(GameConfig(n_flights=n_flights, arrival_std=std, horizon=horizon), 3)
        edges = np.linspace(0.0, game.day_length, 25)
        mean, std_, cutoff, latest = _truncation(game)
        dist = stats.truncnorm((cutoff - mean) / std_, (latest - mean) / std_, loc=mean,
                               scale=std_)
        cdf = dist.cdf(game.departures[None, :] - edges[:, None])
        expected = cdf[:-1] - cdf[1:]
        expected[expected < 0] = 0.0
        np.testing.assert_array_equal(arrival_window_probabilities(game, edges), expected)
