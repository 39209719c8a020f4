"""Input validation of schedule files: a clear ``ScheduleError`` or a schedule that loads.

The schedule-file half of ``test_validation.py`` ("either a clear error or a sane
environment"): hand-written broken files name the path, line and column; generated CSV contents
(hypothesis) either load or raise :class:`tsg_envs.schedules.ScheduleError`; through
``gym.make`` the same errors arrive as ``ValueError``. ``TSG_HYPOTHESIS_EXAMPLES`` sets the
examples of the default tier (25), the ``slow`` tier runs the same properties with many more.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from test_validation import FAST, SLOW, _reset_and_step

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs import GameConfig, make_game, validation
from tsg_envs.schedules import ScheduleError, load_departures_csv

# =========================================================================== schedule files


def _csv(tmp_path: Path, text: str, name: str = "sched.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_schedule_missing_file(tmp_path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(ScheduleError) as info:
        load_departures_csv(path)
    assert str(path) in str(info.value) and "no such file" in str(info.value)


def test_schedule_directory(tmp_path) -> None:
    with pytest.raises(ScheduleError) as info:
        load_departures_csv(tmp_path)
    assert str(tmp_path) in str(info.value) and "directory" in str(info.value)


def test_schedule_utf16(tmp_path) -> None:
    path = tmp_path / "utf16.csv"
    path.write_text("minutes\n600\n700\n", encoding="utf-16")
    with pytest.raises(ScheduleError) as info:
        load_departures_csv(path)
    assert str(path) in str(info.value) and "UTF-8" in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("flight,minutes\nA,10\nB,1e9\n", ["line 3", "column 'minutes'", "1e9", "2880"]),
        ("flight,minutes\nA,10\nB,2880\n", ["line 3", "column 'minutes'"]),
        ("flight,minutes\nA,10\nB,-5\n", ["line 3", "column 'minutes'", "negative"]),
        ("flight,minutes\nA,10\nB,inf\n", ["line 3", "column 'minutes'", "finite"]),
        ("flight,minutes\nA,10\nB,\n", ["line 3", "column 'minutes'", "empty"]),
        ("flight,minutes\nA,10\nB,soon\n", ["line 3", "column 'minutes'", "not a number"]),
        ("flight,CRS_DEP_TIME\nA,0530\nB,0575\n", ["line 3", "column 'CRS_DEP_TIME'"]),
    ],
)
def test_schedule_bad_cell_names_path_line_column(tmp_path, text, fragments) -> None:
    path = _csv(tmp_path, text)
    with pytest.raises(ScheduleError) as info:
        load_departures_csv(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["far", "missing", "directory", "utf16"])
def test_schedule_errors_through_gym_make(tmp_path, kind) -> None:
    if kind == "far":
        path = _csv(tmp_path, "flight,minutes\nA,10\nB,1e9\n")
    elif kind == "missing":
        path = tmp_path / "nope.csv"
    elif kind == "directory":
        path = tmp_path
    else:
        path = tmp_path / "utf16.csv"
        path.write_text("minutes\n600\n700\n", encoding="utf-16")
    with pytest.raises(ScheduleError) as info:
        gym.make("tsg/Screening-v1", schedule=f"csv:{path}", n_flights=2)
    message = str(info.value)
    assert message.startswith(f"schedule='csv:{path}': "), message
    assert str(path) in message
    if kind == "far":
        assert "line 3" in message and "'minutes'" in message


@pytest.mark.timeout(60)
def test_schedule_csv_through_gym_make_works(tmp_path) -> None:
    path = _csv(tmp_path, "flight,minutes\nA,400\nB,430\nC,500\n")
    env = gym.make("tsg/Screening-v1", schedule=f"csv:{path}", n_flights=2)
    assert env.unwrapped.game.n_flights == 2
    _reset_and_step(env)
    with pytest.raises(ValueError, match="exceeds the 3 departures"):
        gym.make("tsg/Screening-v1", schedule=f"csv:{path}", n_flights=4)


_HEADERS = ["minutes", "departure_minutes", "CRS_DEP_TIME", "sched_dep_time", "flight", "", "x,y"]
_NUMBER_TEXT = st.one_of(
    st.floats().map(repr),
    st.floats(0.0, 2880.0).map(repr),
    st.integers(-100, 3000).map(str),
    st.sampled_from(["0530", "2400", "2401", "0575", " 700 ", "1e3", "nan", "inf", "-0", "", "x"]),
)
_CELL_TEXT = st.one_of(_NUMBER_TEXT, st.text(max_size=6))


_HHMM_TEXT = st.builds(lambda h, m: f"{h:02d}{m:02d}", st.integers(0, 23), st.integers(0, 59))
_MINUTES_TEXT = st.floats(0.0, 2879.0).map(repr) | st.integers(0, 2879).map(str)


@st.composite
def csv_contents(draw: st.DrawFn) -> bytes:
    """Random bytes, random text rows, random numbers in a minutes column, or a valid file."""
    kind = draw(st.sampled_from(["bytes", "rows", "numbers", "valid"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    if kind == "rows":
        header = draw(st.lists(st.sampled_from(_HEADERS) | st.text(max_size=5), max_size=3))
        rows = draw(st.lists(st.lists(_CELL_TEXT, max_size=3), max_size=8))
        lines = [",".join(header)] + [",".join(row) for row in rows]
    elif kind == "numbers":
        column = draw(st.sampled_from(["minutes", "departure_minutes"]))
        rows = draw(st.lists(_NUMBER_TEXT | _MINUTES_TEXT, max_size=8))
        lines = [f"flight,{column}"] + [f"F{i},{cell}" for i, cell in enumerate(rows)]
    else:
        column = draw(st.sampled_from(["minutes", "Departure_Minutes", "CRS_DEP_TIME",
                                       "sched_dep_time"]))
        cells = _HHMM_TEXT if "dep_time" in column.lower() else _MINUTES_TEXT
        rows = draw(st.lists(cells, min_size=1, max_size=8))
        lines = [f"carrier,{column}"] + [f"XX,{cell}" for cell in rows]
        encoding = draw(st.sampled_from(["utf-8", "utf-8-sig"]))
    text = newline.join(lines) + draw(st.sampled_from(["", newline]))
    return text.encode(encoding, errors="replace")


def _check_csv(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "schedule.csv"
        path.write_bytes(content)
        try:
            times = load_departures_csv(path)
        except ScheduleError as exc:
            event("csv refused")
            assert str(path) in str(exc), str(exc)
            return
        event("csv loaded")
        assert isinstance(times, np.ndarray) and times.dtype == np.float64 and times.ndim == 1
        assert times.size >= 1
        assert np.all(np.isfinite(times))
        lo, hi = validation.DEPARTURE_RANGE
        assert np.all((times >= lo) & (times < hi)), times
        assert np.all(np.diff(times) >= 0), times
        # A loaded schedule makes a game, or a ValueError naming the schedule (size bounds).
        config = GameConfig(schedule=f"csv:{path}", n_flights=None)
        try:
            game = make_game(config)
        except ValueError as exc:
            assert f"schedule='csv:{path}'" in str(exc), str(exc)
            return
        assert game.n_flights == times.size
        np.testing.assert_allclose(np.sort(game.departures + game.day_start), times, atol=1e-9)


@FAST
@given(content=csv_contents())
def test_schedule_csv_loads_or_schedule_error(content) -> None:
    _check_csv(content)


@pytest.mark.slow
@SLOW
@given(content=csv_contents())
def test_schedule_csv_loads_or_schedule_error_many(content) -> None:
    _check_csv(content)


@FAST
@given(values=st.lists(st.floats() | st.integers(-10, 4000), min_size=1, max_size=8))
def test_schedule_minutes_column_exact(values) -> None:
    """A minutes column loads exactly its sorted values iff every one is in [0, 2880)."""
    lo, hi = validation.DEPARTURE_RANGE
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text("minutes\n" + "".join(f"{v!r}\n" for v in values), encoding="utf-8")
        bad = [i for i, v in enumerate(values) if not lo <= v < hi]  # NaN is never in range
        if bad:
            with pytest.raises(ScheduleError) as info:
                load_departures_csv(path)
            # The first bad value is reported, on its line (the header is line 1).
            assert f"line {bad[0] + 2}," in str(info.value), str(info.value)
            assert str(path) in str(info.value)
        else:
            np.testing.assert_array_equal(load_departures_csv(path), np.sort(values))
