"""Input validation: "either a clear error or a sane environment" (tsg_envs.validation).

Every value a user can hand to ``gym.make``/``ScreeningEnv``, a ``GameConfig``, a hand-built
``Game`` or a schedule file either raises ``TypeError``/``ValueError`` whose message names the
offending argument, or gives something that works. Properties are generated with hypothesis;
``TSG_HYPOTHESIS_EXAMPLES`` sets the examples of the default tier (25), the ``slow`` tier runs the
same properties with many more.

The regressions at the end pin the bugs these properties found in the first version of the
validation (each now fixed). Schedule files have their own file, ``test_validation_schedules.py``.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from conftest import LOOSE_PSI, tiny_game
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs import GameConfig, InfeasibleRiskBoundError, ScreeningEnv, make_game, validation

EXAMPLES = int(os.environ.get("TSG_HYPOTHESIS_EXAMPLES", "25"))
SLOW_EXAMPLES = 300
FAST = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
SLOW = settings(
    max_examples=SLOW_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

#: gym.make re-raises a TypeError of the entry point with every kwarg appended to its message;
#: the part before this is the package's own message.
_GYM_TYPEERROR_SUFFIX = " was raised from the environment creator"


def _own_message(exc: BaseException) -> str:
    return str(exc).split(_GYM_TYPEERROR_SUFFIX)[0]


def _make(via_gym: bool, **kwargs: Any) -> gym.Env:
    if via_gym:
        return gym.make("tsg/Screening-v1", **kwargs)
    return ScreeningEnv(**kwargs)


def _reset_and_step(env: gym.Env) -> None:
    """reset(seed=0), the observation in its space, one step at the category's centre."""
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs), obs
    inner = env.unwrapped
    c = info["category"]
    assert 0 <= c < inner.game.n_categories
    center = inner.polytope(c).center
    obs2, reward, terminated, truncated, info2 = env.step(center)
    assert env.observation_space.contains(obs2), obs2
    assert np.isfinite(reward) and reward <= 0.0  # -wait; the centre is feasible: no penalty
    assert info2["penalty"] == 0.0
    assert truncated is False
    assert terminated == (inner.game.n_passengers == 1)
    assert np.all(np.isfinite(inner.risk_bound)) and np.all(inner.risk_bound >= 0)
    if inner.render_mode == "ansi":
        assert isinstance(env.render(), str)
    elif inner.render_mode == "rgb_array":
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3


# =========================================================================== construction property

_SPECIAL_FLOATS = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 5e-324, 2.2e-308,
                   1e308, 1.7976931348623157e308, -1.0, -1e-300, 1e9]
_NUMPY_SCALARS = [np.float64("nan"), np.float64(30.0), np.float32(1.5), np.float32("inf"),
                  np.int64(-3), np.int64(3), np.int32(2), np.uint64(7), np.bool_(True),
                  np.bool_(False)]


def _junk(ints: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """Values of every kind: ints, bools, floats (NaN, inf, -0.0, subnormal, huge, negative),
    strings, None, numpy scalars, flat lists."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70) if ints is None else ints,
        st.floats(),
        st.sampled_from(_SPECIAL_FLOATS),
        st.text(max_size=8),
        st.sampled_from(_NUMPY_SCALARS),
        st.lists(st.integers(-5, 5) | st.floats(), max_size=3),
        st.lists(st.floats() | st.lists(st.floats(), max_size=2), max_size=3),  # ragged
    )


def _small_configs() -> st.SearchStrategy:
    return st.builds(
        GameConfig,
        n_resources=st.integers(1, 4),
        n_methods=st.integers(1, 3),
        n_risk_levels=st.integers(1, 3),
        team_size=st.just(1),
        n_flights=st.integers(1, 4),
        horizon=st.sampled_from(["window", "shift", "day"]),
    )


# Valid values: cheap constructions only (few flights, LP windows of 30 minutes or more).
_VALID: dict[str, st.SearchStrategy] = {
    "n_flights": st.integers(1, 5),
    "horizon": st.sampled_from(["window", "shift", "day"]),
    "arrival_std": st.just(0.0) | st.floats(validation.MIN_ARRIVAL_STD, 200.0),
    "instance_seed": st.integers(0, 2**64),
    "queue_mode": st.sampled_from(["expected", "sampled"]),
    "invalid_action": st.sampled_from(["project", "raise", "penalize"]),
    "risk_slack": st.floats(0.0, 100.0),
    "lp_window_minutes": st.sampled_from(["auto", None]) | st.floats(30.0, 240.0),
    "capacity_ratio": st.none() | st.floats(0.1, 100.0),
    "violation_penalty": st.floats(0.0, 1e6),
    "render_mode": st.sampled_from([None, "ansi", "rgb_array"]),
    "schedule": st.just("hub"),
}

# Perturbations: mostly invalid, sometimes valid (then construction must work).
_PERTURB: dict[str, st.SearchStrategy] = {
    # Integers from 11 to 500 flights are valid but slow.
    "n_flights": _junk(ints=st.integers(-(2**40), 10) | st.integers(501, 2**40))
    | st.sampled_from([np.int8(3), np.uint8(2), np.int16(4), np.int8(-1)]),
    "horizon": _junk() | st.sampled_from(["window", "shift", "day", "Day", "week"]),
    "arrival_std": _junk() | st.floats(-1e3, 1e3),
    "instance_seed": _junk() | st.integers(-(2**70), 2**70),
    "queue_mode": _junk() | st.sampled_from(["expected", "sampled", "EXPECTED"]),
    "invalid_action": _junk() | st.sampled_from(["project", "raise", "clip"]),
    "risk_slack": _junk() | st.floats(-1.0, 1.0),
    "lp_window_minutes": _junk() | st.floats(-100.0, 4000.0) | st.just("auto"),
    "capacity_ratio": _junk() | st.floats(-1.0, 200.0),
    "violation_penalty": _junk() | st.floats(-1e6, 1e6),
    "render_mode": _junk()
    | st.sampled_from(["human", "rgb", "ANSI", "ansi", "rgb_array", np.array([1, 2])]),
    "schedule": _junk()
    | st.sampled_from(["hub", "HUB", "csv:", "jfk:", "csv:.", "csv:/nonexistent/x.csv"])
    | st.text(max_size=6).map(lambda s: "csv:" + s)
    | st.text(max_size=10).map(lambda s: "jfk:" + s),
    "risk_bound": _junk()
    | hnp.arrays(np.float64, st.integers(0, 6), elements=st.floats())
    | hnp.arrays(np.float64, 5, elements=st.floats(0.0, 10.0))
    | hnp.arrays(np.int64, 5, elements=st.integers(-3, 10)),
    "config": _junk() | _small_configs(),
    "game": _junk() | st.builds(tiny_game),
}


@st.composite
def construction_cases(draw: st.DrawFn) -> tuple[bool, dict[str, Any], list[str]]:
    """(through gym.make?, kwargs, the perturbed kwargs); the unperturbed ones are valid."""
    kwargs = draw(
        st.fixed_dictionaries(
            {"n_flights": _VALID["n_flights"], "horizon": _VALID["horizon"]},
            optional={k: v for k, v in _VALID.items() if k not in ("n_flights", "horizon")},
        )
    )
    bad = draw(st.lists(st.sampled_from(sorted(_PERTURB)), max_size=3, unique=True))
    for key in bad:
        kwargs[key] = draw(_PERTURB[key], label=key)
    return draw(st.booleans()), kwargs, bad


def _check_construction(via_gym: bool, kwargs: dict[str, Any], bad: list[str]) -> None:
    note(f"via_gym={via_gym} bad={bad}")
    try:
        env = _make(via_gym, **kwargs)
    except InfeasibleRiskBoundError as exc:
        # A valid slack can still be too small for a degenerate category: a clear refusal that
        # names θ, κ and the knob to turn.
        assert "risk_slack" in str(exc) and "theta=" in str(exc), str(exc)
        event("refused: risk bound without interior")
        return
    except (TypeError, ValueError) as exc:
        message = _own_message(exc)
        event(f"refused: {type(exc).__name__}")
        # The unperturbed kwargs are valid, so the culprit is one of the perturbed ones.
        assert any(key in message for key in bad), (bad, message)
        assert message.strip(), "empty message"
        return
    event("constructed")
    try:
        _reset_and_step(env)
    finally:
        env.close()


@FAST
@given(case=construction_cases())
def test_construction_clear_error_or_sane_env(case) -> None:
    _check_construction(*case)


@pytest.mark.slow
@SLOW
@given(case=construction_cases())
def test_construction_clear_error_or_sane_env_many(case) -> None:
    _check_construction(*case)


# =========================================================================== literal cases


@pytest.mark.parametrize(
    ("kwargs", "exc_type", "fragments"),
    [
        ({"instance_seed": 1.0}, TypeError, ["instance_seed", "1.0 (float)"]),
        ({"instance_seed": 1.5}, TypeError, ["instance_seed", "1.5 (float)"]),
        ({"instance_seed": -1}, ValueError, ["instance_seed", ">= 0"]),
        ({"n_flights": True}, TypeError, ["n_flights", "True (bool)"]),
        ({"n_flights": 3.0}, TypeError, ["n_flights"]),
        ({"n_flights": 0}, ValueError, ["n_flights", "[1, 500]"]),
        ({"n_flights": 501}, ValueError, ["n_flights", "500", "501 (int)"]),
        ({"violation_penalty": -1.0}, ValueError, ["violation_penalty", "[0, 1e+06]"]),
        ({"violation_penalty": float("nan")}, ValueError, ["violation_penalty"]),
        ({"risk_slack": -0.5}, ValueError, ["risk_slack"]),
        ({"capacity_ratio": float("inf")}, ValueError, ["capacity_ratio", "[0.1, 100]"]),
        ({"capacity_ratio": 0.0}, ValueError, ["capacity_ratio", "[0.1, 100]"]),
        ({"capacity_ratio": "2"}, TypeError, ["capacity_ratio", "'2' (str)"]),
        ({"arrival_std": -1.0}, ValueError, ["arrival_std"]),
        ({"lp_window_minutes": 0.001}, ValueError, ["lp_window_minutes", "[15, 3600]"]),
        ({"lp_window_minutes": "hourly"}, ValueError, ["lp_window_minutes", "'auto'"]),
        ({"lp_window_minutes": True}, TypeError, ["lp_window_minutes"]),
        ({"horizon": "week"}, ValueError, ["horizon", "'window'", "'shift'", "'day'"]),
        ({"queue_mode": "fifo"}, ValueError, ["queue_mode", "'expected'", "'sampled'"]),
        ({"invalid_action": "clip"}, ValueError, ["invalid_action", "'project'"]),
        ({"render_mode": "human"}, ValueError, ["render_mode", "'ansi'", "'rgb_array'"]),
        ({"risk_bound": [0.1, float("nan"), 0.1, 0.1, 0.1]}, ValueError, ["risk_bound", "finite"]),
        ({"risk_bound": [0.1, 0.1]}, ValueError, ["risk_bound", "shape (5,)"]),
        ({"risk_bound": np.ones((5, 1))}, ValueError, ["risk_bound", "shape (5,)"]),
        ({"risk_bound": [0.1, -0.1, 0.1, 0.1, 0.1]}, ValueError, ["risk_bound", ">= 0"]),
        ({"risk_bound": ["a"] * 5}, TypeError, ["risk_bound"]),
        ({"risk_bound": np.zeros(5)}, ValueError, ["risk_bound", "empty"]),
        ({"schedule": "lax"}, ValueError, ["schedule", "'hub'"]),
        ({"schedule": "jfk:2013-02-30"}, ValueError, ["schedule='jfk:2013-02-30'"]),
        ({"config": {"n_flights": 3}}, TypeError, ["config", "GameConfig"]),
        ({"game": "tiny"}, TypeError, ["game", "Game"]),
    ],
    ids=lambda v: repr(v)[:40] if isinstance(v, dict) else None,
)
@pytest.mark.parametrize("via_gym", [False, True], ids=["ScreeningEnv", "gym.make"])
@pytest.mark.timeout(30)
def test_construction_refuses(kwargs, exc_type, fragments, via_gym) -> None:
    kwargs = dict(kwargs)
    n_flights = kwargs.pop("n_flights", 3)
    with pytest.raises(exc_type) as info:
        _make(via_gym, n_flights=n_flights, **kwargs)
    message = _own_message(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("value", [1e9, float("inf"), 250.0, 5e300])
def test_huge_arrival_std_fails_fast(value) -> None:
    """σ beyond the bound is refused by the config check, before any day is built."""
    with pytest.raises(ValueError, match="arrival_std"):
        gym.make("tsg/Screening-v1", arrival_std=value)


def test_arrival_std_near_bound_combines_with_mean() -> None:
    # 90 + 3 * 200 = 690 <= 720 is fine; a mean of 200 pushes the earliest arrival past 720.
    GameConfig(arrival_std=200.0)
    with pytest.raises(ValueError, match=r"arrival_mean \+ 3 \* arrival_std"):
        GameConfig(arrival_std=200.0, arrival_mean=200.0)


@pytest.mark.parametrize(
    ("kwargs", "exc_type", "fragment"),
    [
        ({"n_flights": 3.0}, TypeError, "n_flights"),
        ({"n_resources": 11}, ValueError, "n_resources"),
        ({"n_resources": 10, "team_size": 5}, ValueError, "252 teams"),
        ({"team_size": 6}, ValueError, "team_size"),
        ({"flight_size_range": (0, 10)}, ValueError, "flight_size_range[0]"),
        ({"flight_size_range": (10, 5)}, ValueError, "flight_size_range[1]"),
        ({"flight_size_range": (1, 1001)}, ValueError, "flight_size_range[1]"),
        ({"flight_size_range": 100}, TypeError, "flight_size_range"),
        ({"flight_size_range": (1.0, 2.0)}, TypeError, "flight_size_range[0]"),
        ({"arrival_cutoff": 95.0}, ValueError, "arrival_cutoff"),
        ({"efficacy_range": (0.0, 1.5)}, ValueError, "efficacy_range[1]"),
        ({"loss_range": (float("nan"), 1.0)}, ValueError, "loss_range[0]"),
        ({"relative_rate_range": (0.0, 1.0)}, ValueError, "relative_rate_range[0]"),
        ({"risk_mix_concentration": 0.0}, ValueError, "risk_mix_concentration"),
        ({"window_tightness": 1.0}, ValueError, "window_tightness"),
        ({"window_tightness": 0.0}, ValueError, "window_tightness"),
        ({"n_flights": None}, ValueError, "n_flights=None"),
        ({"schedule": None}, ValueError, "schedule"),
    ],
)
def test_game_config_refuses(kwargs, exc_type, fragment) -> None:
    with pytest.raises(exc_type) as info:
        GameConfig(**kwargs)
    assert fragment in str(info.value)


def test_make_game_seed_kinds() -> None:
    with pytest.raises(TypeError, match="seed"):
        make_game(GameConfig(n_flights=2), seed=1.0)
    with pytest.raises(TypeError, match="seed"):
        make_game(GameConfig(n_flights=2), seed=True)
    with pytest.raises(ValueError, match="seed"):
        make_game(GameConfig(n_flights=2), seed=-1)
    with pytest.raises(TypeError, match="config"):
        make_game({"n_flights": 2})
    # A numpy integer seed is the same instance as the int.
    a = make_game(GameConfig(n_flights=2), seed=np.int64(4))
    b = make_game(GameConfig(n_flights=2), seed=4)
    np.testing.assert_array_equal(a.rates, b.rates)


def test_config_fields_kept_when_kwargs_left_out() -> None:
    """Only config given: its game fields are kept (no kwarg default overrides them); a kwarg
    given overrides its field."""
    config = GameConfig(horizon="window", arrival_std=15.0, n_flights=3)
    got = ScreeningEnv(config=config).game.config
    assert (got.horizon, got.arrival_std, got.n_flights) == ("window", 15.0, 3)
    got = ScreeningEnv(config=config, n_flights=2, arrival_std=30.0).game.config
    assert (got.horizon, got.arrival_std, got.n_flights) == ("window", 30.0, 2)


# --------------------------------------------------------------------------- hand-built games


def _many_flights(k: int) -> dict[str, Any]:
    return {
        "departures": np.full(k, 3.0),
        "attack_loss": np.full((k, 1), 2.0),
        "flight_sizes": np.ones(k, dtype=np.int64),
    }


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        ({"rates": np.array([np.nan, 0.25])}, ["Game.rates", "finite"]),
        ({"rates": np.array([0.0, 0.25])}, ["Game.rates", "[1e-06, 1e+09]"]),
        ({"rates": np.array([np.inf, 0.25])}, ["Game.rates"]),
        ({"flight_sizes": np.array([-2, 1])}, ["Game.flight_sizes", "positive"]),
        ({"flight_sizes": np.array([2.0, 1.0])}, ["Game.flight_sizes"]),
        ({"flight_sizes": np.array([60_000, 60_000])}, ["120000 passengers", "100000"]),
        ({"risk_mix": np.array([0.5, 0.6])}, ["Game.risk_mix", "sum to 1"]),
        ({"attacker_prior": np.array([1.5, -0.5])}, ["Game.attacker_prior"]),
        ({"resource_efficacy": np.array([[1.5], [0.5]])}, ["Game.resource_efficacy", "[0, 1]"]),
        ({"attack_loss": np.array([[-1.0], [4.0]])}, ["Game.attack_loss", "[0, 1e+06]"]),
        ({"attack_loss": np.array([[2e15], [4.0]])}, ["Game.attack_loss", "[0, 1e+06]"]),
        ({"departures": np.array([3.0, 4000.0])}, ["Game.departures", "3600"]),
        ({"team_members": np.array([[True, False], [False, False]])}, ["Game.team_members"]),
        ({"arrival_mean": float("nan")}, ["Game.arrival_mean"]),
        ({"arrival_std": 300.0}, ["Game.arrival_std", "200"]),
        ({"arrival_cutoff": 3.0}, ["Game.arrival_cutoff"]),
        ({"day_length": 0.0}, ["Game.day_length"]),
        ({"day_start": float("inf")}, ["Game.day_start"]),
        ({"rates": np.array([0.5, 0.25, 0.25])}, ["Game.rates", "shape"]),
        (_many_flights(501), ["501 flights", "500"]),
    ],
    ids=lambda v: "+".join(v) if isinstance(v, dict) else None,
)
def test_hand_built_game_refused(overrides, fragments) -> None:
    with pytest.raises(ValueError) as info:
        tiny_game(**overrides)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_hand_built_game_bounds_are_inclusive() -> None:
    # 500 flights of one passenger is within every bound.
    assert tiny_game(**_many_flights(500)).n_flights == 500
    with pytest.raises(TypeError, match="Game.config"):
        tiny_game(config="cfg")


_GAME_ARRAY_FIELDS = {
    "rates": (2,),
    "resource_efficacy": (2, 1),
    "team_efficacy": (2, 1),
    "attacker_prior": (2,),
    "risk_mix": (2,),
    "attack_loss": (2, 1),
    "departures": (2,),
}
_GAME_SCALAR_FIELDS = ("arrival_mean", "arrival_std", "arrival_cutoff", "day_start", "day_length")


@st.composite
def game_perturbations(draw: st.DrawFn) -> tuple[str, Any]:
    field = draw(st.sampled_from([*_GAME_ARRAY_FIELDS, "flight_sizes", *_GAME_SCALAR_FIELDS]))
    if field == "flight_sizes":
        value = draw(
            hnp.arrays(np.int64, 2, elements=st.integers(-3, 70_000))
            | hnp.arrays(np.float64, 2, elements=st.floats())
        )
    elif field in _GAME_ARRAY_FIELDS:
        shape = _GAME_ARRAY_FIELDS[field]
        value = draw(
            hnp.arrays(np.float64, shape, elements=st.floats())
            | hnp.arrays(np.float64, shape, elements=st.floats(0.0, 1.0))
            | hnp.arrays(np.float64, shape, elements=st.floats(0.0, 10.0, exclude_min=True))
        )
    else:
        value = draw(_junk() | st.floats(-10.0, 10.0))
    return field, value


def _names_field(field: str, message: str) -> bool:
    if field.startswith("arrival_"):
        # Coupled: arrival_cutoff's range is [0, arrival_mean]; mean + 3 std <= 720.
        return "arrival_" in message
    if field == "flight_sizes":
        return "flight_sizes" in message or "passengers" in message
    return field in message


def _check_hand_built(field: str, value: Any) -> None:
    try:
        game = tiny_game(**{field: value})
    except (TypeError, ValueError) as exc:
        event(f"game refused: {type(exc).__name__}")
        assert _names_field(field, str(exc)), (field, str(exc))
        return
    event("game built")
    # Whatever was accepted lies inside the documented ranges.
    assert np.all(np.isfinite(game.rates)) and np.all(game.rates > 0)
    for name in ("resource_efficacy", "team_efficacy", "attacker_prior", "risk_mix"):
        arr = getattr(game, name)
        assert np.all((arr >= 0) & (arr <= 1)), name
    assert abs(game.risk_mix.sum() - 1) <= 1e-9 and abs(game.attacker_prior.sum() - 1) <= 1e-9
    assert np.all(game.attack_loss >= 0) and np.all(game.attack_loss <= 1e6)
    assert np.all((game.departures >= 0) & (game.departures <= validation.MAX_DAY_MINUTES))
    assert game.flight_sizes.dtype.kind in "iu" and np.all(game.flight_sizes >= 1)
    assert game.n_passengers <= validation.MAX_PASSENGERS
    # ... and it makes an environment (or a clear refusal of the risk bound), never a crash.
    try:
        env = ScreeningEnv(game=game, risk_bound=LOOSE_PSI)
    except ValueError as exc:
        assert "risk_bound" in str(exc), str(exc)
        return
    _reset_and_step(env)


@FAST
@given(case=game_perturbations())
def test_hand_built_game_clear_error_or_sane(case) -> None:
    _check_hand_built(*case)


@pytest.mark.slow
@SLOW
@given(case=game_perturbations())
def test_hand_built_game_clear_error_or_sane_many(case) -> None:
    _check_hand_built(*case)


# =========================================================================== size bounds first


@pytest.mark.timeout(30)
def test_passenger_bound_checked_before_work() -> None:
    with pytest.raises(ValueError) as info:
        GameConfig(n_flights=500, flight_size_range=(1000, 1000))
    assert "100000" in str(info.value) and "passengers" in str(info.value)
    # The same through gym.make: refused at the config, no game is built.
    with pytest.raises(ValueError, match="100000"):
        gym.make(
            "tsg/Screening-v1",
            config=GameConfig(flight_size_range=(1000, 1000)),
            n_flights=101,
        )
    # At the bound it is accepted (100 * 1000 = 100000).
    GameConfig(n_flights=100, flight_size_range=(1000, 1000))


@pytest.mark.timeout(30)
def test_team_bound_checked_before_work() -> None:
    with pytest.raises(ValueError, match="at most 45"):
        gym.make("tsg/Screening-v1", config=GameConfig(n_resources=10, team_size=3))


@pytest.mark.timeout(30)
def test_schedule_flight_bound_checked_before_work(tmp_path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("minutes\n" + "".join(f"{300 + i}\n" for i in range(600)), encoding="utf-8")
    config = GameConfig(schedule=f"csv:{path}", n_flights=None, flight_size_range=(10, 20))
    with pytest.raises(ValueError) as info:
        make_game(config)
    assert "schedule=" in str(info.value) and "500" in str(info.value)


@pytest.mark.timeout(60)
def test_longest_day_the_bounds_allow_fits_max_day(tmp_path) -> None:
    """DEPARTURE_RANGE and MAX_ARRIVAL_LEAD compose to at most MAX_DAY_MINUTES: departures at
    0 and 2879.99 with the earliest arrival 720 minutes ahead and no cutoff still fit."""
    path = tmp_path / "long.csv"
    path.write_text("minutes\n0\n2879.99\n", encoding="utf-8")
    config = GameConfig(schedule=f"csv:{path}", n_flights=None, arrival_mean=120.0,
                        arrival_std=200.0, arrival_cutoff=0.0)
    game = make_game(config)
    assert 3599 < game.day_length <= validation.MAX_DAY_MINUTES
    env = ScreeningEnv(config=config)
    assert env.game.n_flights == 2
    _reset_and_step(env)


# ================================================================ regressions (fuzzer finds)
# Each was found by the properties above on the first version of the validation and is fixed.


def test_thin_polytope() -> None:
    """Default risk_slack, 1 flight, window horizon, instance 6: must construct (or refuse
    the risk bound with a ValueError); it raised RuntimeError from the centre QP."""
    env = gym.make("tsg/Screening-v1", n_flights=1, horizon="window", instance_seed=6)
    _reset_and_step(env)


def test_small_risk_slack() -> None:
    """risk_slack=1e-3 is a documented-valid slack (>= 0); it raised RuntimeError."""
    try:
        env = ScreeningEnv(n_flights=3, risk_slack=1e-3, instance_seed=0)
    except ValueError as exc:  # a clear refusal would be acceptable too
        assert "risk_slack" in str(exc)
        return
    _reset_and_step(env)


def test_array_render_mode() -> None:
    with pytest.raises((TypeError, ValueError), match="render_mode"):
        ScreeningEnv(n_flights=2, render_mode=np.array([1, 2]))


def test_ragged_risk_bound() -> None:
    with pytest.raises((TypeError, ValueError), match="risk_bound"):
        ScreeningEnv(n_flights=2, risk_bound=[1.0, [2.0, 3.0], 1.0, 1.0, 1.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_small_numpy_integer_n_flights() -> None:
    """np.int8(3) is a numbers.Integral in range; GameConfig raised OverflowError."""
    env = ScreeningEnv(n_flights=np.int8(3))
    _reset_and_step(env)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_numpy_int16_passenger_bound() -> None:
    """500 * 1000 wraps around in int16, so GameConfig accepts 500 000 passengers."""
    with pytest.raises(ValueError, match="100000"):
        GameConfig(n_flights=np.int16(500), flight_size_range=(1000, 1000))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_numpy_int8_flight_size_range() -> None:
    """(np.int8(127), np.int8(127)) is a valid range; make_game raises 'low >= high'."""
    game = make_game(GameConfig(n_flights=2, flight_size_range=(np.int8(127), np.int8(127))))
    assert game.n_passengers == 254


def test_hand_built_game_list_field() -> None:
    with pytest.raises(TypeError, match="rates"):
        tiny_game(rates=[0.5, 0.25])


def test_hand_built_game_2d_departures() -> None:
    """Was accepted; the environment then failed with an unrelated TypeError at reset."""
    with pytest.raises(ValueError, match="departures"):
        tiny_game(departures=np.array([[3.0], [3.0]]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_huge_risk_slack() -> None:
    """ψ^LP (1 + risk_slack) overflows to inf; the error names risk_bound, which was not given."""
    try:
        ScreeningEnv(n_flights=3, instance_seed=1, risk_slack=1.7976931348623157e308)
    except ValueError as exc:
        assert "risk_slack" in str(exc), str(exc)


def test_huge_violation_penalty() -> None:
    """'penalize' mode promises a finite reward for every finite proposal: the penalty is
    bounded (MAX_VIOLATION_PENALTY), and at the bound the reward stays finite."""
    with pytest.raises(ValueError, match="violation_penalty"):
        ScreeningEnv(n_flights=3, invalid_action="penalize", violation_penalty=1e308)
    env = ScreeningEnv(n_flights=3, invalid_action="penalize", violation_penalty=1e6)
    env.reset(seed=0)
    for team in range(env.action_space.shape[0]):
        action = np.zeros(env.action_space.shape)
        action[team] = 1e300
        _, reward, terminated, _, _ = env.step(action)
        assert np.isfinite(reward), (team, reward)
        if terminated:
            break


@given(low=st.integers(-5, 5), value=st.integers(-(10**15), 10**15))
def test_cli_int_accepts_exactly_the_integers_from_its_bound(low: int, value: int) -> None:
    import argparse

    from tsg_envs.validation import cli_int

    parse = cli_int(low)
    if value >= low:
        assert parse(str(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError,
                           match=f"must be an integer >= {low}, got {value}"):
            parse(str(value))


@pytest.mark.parametrize("text", ["", "1.0", "one", "1e3", "--"])
def test_cli_int_refuses_what_is_not_an_integer(text: str) -> None:
    import argparse

    from tsg_envs.validation import cli_int

    with pytest.raises(argparse.ArgumentTypeError, match="not an integer"):
        cli_int(0)(text)


@pytest.mark.parametrize(("module", "argv", "message"), [
    ("tsg_envs.__main__", ["--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
    ("tsg_envs.__main__", ["--instance-seed", "x"], "argument --instance-seed: not an integer"),
    ("baselines.train", ["--algo", "lp", "--eval-days", "0"],
     "argument --eval-days: must be an integer >= 1, got 0"),
    ("baselines.train", ["--algo", "lp", "--gradient-steps", "-1"],
     "argument --gradient-steps: must be an integer >= 0, got -1"),
])
def test_command_lines_refuse_bad_counts_before_running(module, argv, message, capsys) -> None:
    import importlib

    with pytest.raises(SystemExit) as exc:
        importlib.import_module(module).main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err
