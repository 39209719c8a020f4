"""Input validation: the documented bounds and the checks every constructor uses.

Everything a user can type into ``gym.make``, a :class:`~tsg_envs.GameConfig`, a hand-built
:class:`~tsg_envs.Game` or a schedule file is checked here, before any work is done, so that no
input can hang construction or allocate without bound. A wrong kind of value raises
``TypeError``; a value of the right kind outside its range raises ``ValueError``. Every message
has the same shape: ``"<argument> must be <what is allowed>, got <value> (<type>)"``.

Kinds:

* a **count or a seed** is a :class:`numbers.Integral` (Python ``int`` or a numpy integer) and
  not a ``bool``; ``1.0`` is refused, never silently truncated to another instance;
* a **rate, time, spread or slack** is a finite :class:`numbers.Real` and not a ``bool``.

Size bounds (the upper bounds are generous for the model: the registered ids stay far below them;
``python -m benchmarks.envs --bounds`` records construction time and peak memory at them):

=============================  ==========  ==================================================
bound                          value       what it limits
=============================  ==========  ==================================================
:data:`MAX_FLIGHTS`            500         flights |K| (a full JFK day has about 300)
:data:`MAX_FLIGHT_SIZE`        1,000       passengers of one flight
:data:`MAX_PASSENGERS`         100,000     passengers of a day (checked on the worst case)
:data:`MAX_RESOURCES`          10          resource types |R|
:data:`MAX_TEAMS`              45          teams |T| = C(|R|, team size)
:data:`MAX_METHODS`            10          attack methods |M|
:data:`MAX_RISK_LEVELS`        10          risk levels |Θ|
:data:`MAX_ARRIVAL_LEAD`       720         earliest arrival before departure, mean + 3σ (min)
:data:`MAX_ARRIVAL_STD`        200         σ of arrivals, minutes (the paper sweeps 2σ to 5 h)
:data:`MIN_ARRIVAL_STD`        0.01        smallest σ above 0 (σ = 0 is allowed)
:data:`RATE_RANGE`             [1e-6, 1e9] rates of a hand-built game, passengers/minute
:data:`DEPARTURE_RANGE`        [0, 2880)   a schedule's departure, minutes after midnight
:data:`MAX_DAY_MINUTES`        3,600       a day, first to last possible arrival (minutes)
:data:`MIN_LP_WINDOW_MINUTES`  15          shortest window of the static LP (minutes)
:data:`MAX_LP_WINDOWS`         240         windows of one static LP (any game)
:data:`MAX_ALLOCATIONS`        25,000      categories × teams, |Θ|·|K|·|T| (one LP window)
:data:`MAX_LP_SIZE`            3,000,000   windows × categories × teams (one static LP)
:data:`CAPACITY_RATIO_RANGE`   [0.1, 100]  ρ of the rate calibration
:data:`MAX_DEPARTURE_SPAN`     1,440       window horizon: minutes its departures spread over
:data:`MIN_PLAN_UTILISATION`   0.05        u, the share of capacity the static LP plans (<= 1)
:data:`MAX_RISK_SLACK`         100         ``risk_slack`` (ψ = ψ^LP (1 + slack))
:data:`MAX_VIOLATION_PENALTY`  1e6         ``violation_penalty`` (penalize mode)
:data:`MAX_SCHEDULE_BYTES`     512 MiB     a ``csv:PATH`` schedule (a regular file only)
=============================  ==========  ==================================================
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MAX_FLIGHTS",
    "MAX_FLIGHT_SIZE",
    "MAX_PASSENGERS",
    "MAX_RESOURCES",
    "MAX_TEAMS",
    "MAX_METHODS",
    "MAX_RISK_LEVELS",
    "MAX_ARRIVAL_LEAD",
    "MAX_ARRIVAL_STD",
    "DEPARTURE_RANGE",
    "MAX_DAY_MINUTES",
    "MIN_LP_WINDOW_MINUTES",
    "MAX_LP_WINDOWS",
    "MAX_ALLOCATIONS",
    "MAX_LP_SIZE",
    "check_allocations",
    "CAPACITY_RATIO_RANGE",
    "MAX_DEPARTURE_SPAN",
    "MIN_PLAN_UTILISATION",
    "MAX_SCHEDULE_ROWS",
    "MAX_SCHEDULE_BYTES",
    "MAX_RISK_SLACK",
    "MIN_ARRIVAL_STD",
    "RATE_RANGE",
    "check_arrival_std",
    "MAX_VIOLATION_PENALTY",
    "describe",
    "check_int",
    "cli_real",
    "cli_int",
    "check_real",
    "check_choice",
    "real_array",
    "check_real_array",
]

MAX_FLIGHTS: int = 500
MAX_FLIGHT_SIZE: int = 1000
MAX_PASSENGERS: int = 100_000
MAX_RESOURCES: int = 10
MAX_TEAMS: int = 45
MAX_METHODS: int = 10
MAX_RISK_LEVELS: int = 10
MAX_ARRIVAL_LEAD: float = 720.0
MAX_ARRIVAL_STD: float = 200.0
DEPARTURE_RANGE: tuple[float, float] = (0.0, 2880.0)
MAX_DAY_MINUTES: float = 3600.0
MIN_LP_WINDOW_MINUTES: float = 15.0
#: Allocation variables of one LP window, categories × teams (|Θ|·|K|·|T|): 500 flights of the
#: default game (5 risk levels, 10 teams); bounds the polytope tensors and each window's LP.
MAX_ALLOCATIONS: int = 25_000
#: Allocation variables of a whole static LP, windows × categories × teams; bounds its solve time
#: (about half a minute at the bound on the 2-core reference machine).
MAX_LP_SIZE: int = 3_000_000
#: Windows of one static LP (``MAX_DAY_MINUTES / MIN_LP_WINDOW_MINUTES``); bounds direct calls of
#: the LP on hand-built games, whose windows the environment's minimum does not cover.
MAX_LP_WINDOWS: int = 240
CAPACITY_RATIO_RANGE: tuple[float, float] = (0.1, 100.0)
#: Longest span of the window horizon's departures, minutes (a whole day).
MAX_DEPARTURE_SPAN: float = 1440.0
#: Smallest planning utilisation u of the static LP (it plans u f_r |w| per resource, u <= 1).
MIN_PLAN_UTILISATION: float = 0.05
#: Smallest non-zero σ of arrivals, minutes (below it the truncated normal's arithmetic
#: overflows; σ = 0, everyone at the mean, is allowed).
MIN_ARRIVAL_STD: float = 0.01
#: Resource rates of a hand-built game, passengers per minute (queues in minutes stay finite in
#: the float32 observation).
RATE_RANGE: tuple[float, float] = (1e-6, 1e9)
#: Largest ``risk_slack``: ψ = ψ^LP (1 + slack) stays finite (100: a bound 101x the LP's).
MAX_RISK_SLACK: float = 100.0
#: Largest ``violation_penalty``: with losses up to 1e6 the penalty stays below 1e12 a step.
MAX_VIOLATION_PENALTY: float = 1e6
#: Data rows a schedule file may hold (a month of a large airport's departures fits).
MAX_SCHEDULE_ROWS: int = 1_000_000
#: Largest schedule file (bytes); it must be a regular file (not a pipe or a device).
MAX_SCHEDULE_BYTES: int = 512 * 2**20


def describe(value: Any) -> str:
    """``repr`` of a value with its type, shortened: ``1.5 (float)``."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>' if low_open else '>='} {low:g}"
    if low is None:
        return f" {'<' if high_open else '<='} {high:g}"
    return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def check_int(
    name: str, value: Any, *, low: int | None = None, high: int | None = None
) -> int:
    """A count or seed: an integral, not a bool, in [low, high]; returns it as ``int``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer{_range_text(low, high, False, False)}, "
            f"got {describe(value)}"
        )
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ValueError(
            f"{name} must be an integer{_range_text(low, high, False, False)}, "
            f"got {describe(value)}"
        )
    return v


def cli_int(low: int) -> Callable[[str], int]:
    """An ``argparse`` ``type`` for a count or seed on a command line: an integer ``>= low``.

    A bad value is a usage error naming the flag and the bound, e.g. ``argument --days: must be
    an integer >= 1, got 0``, raised while the command line is parsed, before anything runs.
    """
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def cli_real(low: float | None = None, *, low_open: bool = False,
             high: float | None = None) -> Callable[[str], float]:
    """An ``argparse`` ``type`` for a real number on a command line: finite, within the bounds.

    ``inf``, ``nan`` and numbers out of range are usage errors, raised while the command line is
    parsed (before anything runs), e.g. ``argument --unit-timeout: must be a finite number > 0,
    got inf``.
    """
    import argparse

    what = f"a finite number{_range_text(low, high, low_open, False)}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if (not math.isfinite(value) or (low is not None and (value <= low if low_open
                                                               else value < low))
                or (high is not None and value > high)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value

    parse.__name__ = what
    return parse


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real (not a bool) in the given range; returns it as ``float``."""
    what = f"a finite number{_range_text(low, high, low_open, high_open)}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    if high is not None and (v >= high if high_open else v > high):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    return v


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, if it holds real numbers (a signed, unsigned or float dtype).

    Complex numbers, booleans, strings, dates and times, and objects (``None``, a
    ``Decimal``, a ``datetime``) are refused rather than converted: ``np.asarray(x, float)``
    would drop an imaginary part, read ``True`` as 1.0 or ``"0.5"`` as 0.5. Shapes and values
    are the caller's to check.

    Raises:
        TypeError: the array's dtype is not a real-number kind.
    """
    a = np.asarray(value)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype} "
                        f"(from a {type(value).__name__})")
    return a.astype(np.float64, copy=False)


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """One of a few strings."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, got {describe(value)}")
    return value


def check_real_array(
    name: str,
    value: Any,
    *,
    shape: tuple[int, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> np.ndarray:
    """An array of finite reals (a fresh float64 copy), optionally of a shape and in a range."""
    try:
        arr = np.array(value, copy=True)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise TypeError(f"{name} must be an array of real numbers, got {describe(value)}: "
                        f"{exc}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    what = f"every entry of {name} must be{_range_text(low, high, low_open, False)}"
    if low is not None and np.any(arr <= low if low_open else arr < low):
        raise ValueError(f"{what}, got {arr}")
    if high is not None and np.any(arr > high):
        raise ValueError(f"{what}, got {arr}")
    return arr


def check_allocations(n_risk_levels: int, n_flights: int, n_teams: int, where: str) -> None:
    """|Θ|·|K|·|T| against :data:`MAX_ALLOCATIONS` (``where`` names the input)."""
    size = int(n_risk_levels) * int(n_flights) * int(n_teams)
    if size > MAX_ALLOCATIONS:
        raise ValueError(
            f"{where}: {n_risk_levels} risk levels x {n_flights} flights x {n_teams} teams = "
            f"{size} allocation variables per LP window; at most {MAX_ALLOCATIONS} are supported "
            "(fewer flights, risk levels or teams)"
        )


def check_arrival_std(name: str, value: Any) -> float:
    """σ of arrivals: 0, or in [MIN_ARRIVAL_STD, MAX_ARRIVAL_STD] minutes."""
    std = check_real(name, value, low=0.0, high=MAX_ARRIVAL_STD)
    if 0.0 < std < MIN_ARRIVAL_STD:
        raise ValueError(
            f"{name} must be 0 or in [{MIN_ARRIVAL_STD:g}, {MAX_ARRIVAL_STD:g}] minutes, "
            f"got {describe(value)}"
        )
    return std
