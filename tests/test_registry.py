"""The registry: the docs' id table, PRESETS and gym.registry agree; JFK presets are real days."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import tsg_envs
from tsg_envs import GameConfig, make_game
from tsg_envs.registration import ALIASES, ENTRY_POINT, PRESETS, WINDOW_V2, Preset, register_all

README = Path(__file__).resolve().parent.parent / "docs" / "environments.md"
ID_ROW = re.compile(r"^\| `(tsg/[^`]+)` \|")


def readme_ids() -> list[str]:
    """Ids of the docs' id table: rows starting with "| `tsg/" in the ``ids`` block."""
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- ids:begin -->", 1)[1].split("<!-- ids:end -->", 1)[0]
    return [m.group(1) for line in block.splitlines() if (m := ID_ROW.match(line))]


def registered_ids() -> set[str]:
    return {env_id for env_id in gym.registry if env_id.startswith("tsg/")}


def test_readme_table_matches_presets_and_registry() -> None:
    assert README.is_file(), "docs/environments.md with the id table is missing"
    ids = readme_ids()
    assert len(ids) == len(set(ids)), "duplicate rows in the id table"
    assert set(ids) == set(PRESETS), (
        f"table only: {sorted(set(ids) - set(PRESETS))}; "
        f"PRESETS only: {sorted(set(PRESETS) - set(ids))}"
    )
    assert registered_ids() == set(PRESETS) | set(ALIASES)


def test_registered_specs_are_the_presets() -> None:
    for preset in PRESETS.values():
        spec = gym.spec(preset.id)
        assert spec.entry_point == ENTRY_POINT
        assert spec.kwargs == preset.kwargs
    register_all()  # idempotent
    assert registered_ids() == set(PRESETS) | set(ALIASES)


def test_preset_data_is_consistent() -> None:
    assert "tsg/Screening-v1" in PRESETS
    default = PRESETS["tsg/Screening-v1"]
    assert (default.horizon, default.n_flights, default.arrival_std) == ("shift", 10, 45.0)
    for p in PRESETS.values():
        assert isinstance(p, Preset) and p.description
        # v2 exists for the single-window family only, with its own settings (WINDOW_V2).
        assert p.id.endswith("-v1") or (p.id.endswith("-v2") and p.horizon == "window"), p.id
        if p.id.endswith("-v2"):
            assert (p.departure_span, p.planning_utilisation) == (
                WINDOW_V2.departure_span, WINDOW_V2.planning_utilisation), p.id
        else:
            assert p.departure_span is None and p.planning_utilisation is None, p.id
        # Ids above 20 flights (or a full real day) sit in the slow tier.
        assert p.slow == (p.n_flights is None or p.n_flights > 20), p.id
        assert (p.extra == "jfk") == p.schedule.startswith("jfk:"), p.id
        m = re.search(r"-(\d+)F", p.id)
        if m:
            assert int(m.group(1)) == p.n_flights, p.id
        m = re.search(r"-Sigma(\d+)", p.id)
        if m:
            assert float(m.group(1)) == p.arrival_std, p.id
        for horizon in ("Window", "Shift", "Day"):
            if f"-{horizon}-" in p.id:
                assert p.horizon == horizon.lower(), p.id
        assert ("Sampled" in p.id) == (p.queue_mode == "sampled"), p.id


JFK_PRESETS = [p for p in PRESETS.values() if p.schedule.startswith("jfk:")]


@pytest.mark.parametrize("preset", JFK_PRESETS, ids=[p.id for p in JFK_PRESETS])
def test_jfk_presets_use_the_real_day(preset: Preset) -> None:
    from tsg_envs.schedules import jfk_departures

    date = preset.schedule[len("jfk:"):]
    day = jfk_departures(date)
    cfg = GameConfig(n_flights=preset.n_flights, arrival_std=preset.arrival_std,
                     horizon=preset.horizon, schedule=preset.schedule)
    game = make_game(cfg, seed=0)
    got = np.sort(game.departures + game.day_start)  # minutes after midnight
    if preset.n_flights is None:
        np.testing.assert_allclose(got, day, atol=1e-9)
    else:
        assert got.shape == (preset.n_flights,)
        # A subset of the day's departures (as a multiset).
        remaining = list(day)
        for t in got:
            hit = int(np.argmin(np.abs(np.asarray(remaining) - t)))
            assert abs(remaining[hit] - t) < 1e-9, t
            remaining.pop(hit)


@pytest.mark.parametrize("preset", [p for p in JFK_PRESETS if not p.slow],
                         ids=[p.id for p in JFK_PRESETS if not p.slow])
def test_jfk_env_game_matches_the_day(preset: Preset) -> None:
    from tsg_envs.schedules import jfk_departures

    game = gym.make(preset.id).unwrapped.game
    day = set(np.round(jfk_departures(preset.schedule[4:]), 6).tolist())
    got = np.round(game.departures + game.day_start, 6).tolist()
    assert set(got) <= day and len(got) == preset.n_flights


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in JFK_PRESETS if p.slow],
                         ids=[p.id for p in JFK_PRESETS if p.slow])
def test_jfk_full_day_env(preset: Preset) -> None:
    from tsg_envs.schedules import jfk_departures

    game = gym.make(preset.id).unwrapped.game
    np.testing.assert_allclose(np.sort(game.departures + game.day_start),
                               jfk_departures(preset.schedule[4:]), atol=1e-9)


def test_import_registers_every_id() -> None:
    assert tsg_envs.PRESETS is PRESETS
    for env_id in PRESETS:
        assert env_id in gym.registry


def test_retired_v0_ids_point_to_the_current_version() -> None:
    # v0 is retired (Version History): gym.make of a v0 id fails and names the latest version.
    with pytest.raises(gym.error.Error, match="Shift-10F-v1"):
        gym.make("tsg/Screening-Shift-10F-v0")
    with pytest.raises(gym.error.Error, match="Window-10F-v2"):
        gym.make("tsg/Screening-Window-10F-v0")


def test_the_specifications_default_name_still_makes_the_default_game() -> None:
    old = gym.make("tsg/Screening-v0").unwrapped
    new = gym.make("tsg/Screening-v1").unwrapped
    assert (old.game.config, old.game.seed) == (new.game.config, new.game.seed)
    np.testing.assert_array_equal(old.risk_bound, new.risk_bound)
