"""Compute cached units again from scratch and compare them with the cache (``--verify N``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.paper.config import PaperConfig, experiment_instances, experiment_settings
from experiments.paper.units import load_unit, paper_unit, unit_key, unit_path
from leaderboard.runner import Execution
from leaderboard.verify import DEFAULT_RTOL, records_difference

__all__ = ["UnitCheck", "verify_units"]


@dataclass(frozen=True)
class UnitCheck:
    """The verdict on one cached unit computed again.

    Attributes:
        path: The cached unit's file.
        ok: Whether the fresh unit reproduced its rows (and its training's actor losses).
        exact: Whether it did so bit for bit.
        message: What was compared, or what differed.
    """

    path: Path
    ok: bool
    exact: bool
    message: str


def _comparable(unit: dict[str, Any]) -> dict[str, Any]:
    """What a unit's computation determines, part by part.

    Each agent's rows, the unit's counts and names, and α-DDPG's training (its actor losses;
    empty when the unit trained none).

    Timings (set-up, rollouts, training, the curve's wall times) and provenance are the
    machine's, not the computation's.
    """
    parts: dict[str, Any] = {"counts": {"missing": unit["missing"],
                                        "passengers": unit["passengers"],
                                        "n_days": unit["n_days"]}}
    for row in unit["rows"]:
        parts.setdefault(f"rows of {row['agent']}", []).append(row)
    parts["α-DDPG's training"] = [[row[0], row[2]] for row in unit.get("curve") or []]
    return parts


def _unit_verdict(cached: dict[str, Any], fresh: dict[str, Any],
                  rtol: float) -> tuple[bool, bool, str]:
    """``(reproduced, bit for bit, message)`` of a unit computed again against its cache.

    Every part of :func:`_comparable` is judged on its own, as
    :func:`leaderboard.verify.records_difference` does (the same structure, names and counts;
    numbers within a relative ``rtol``), so the message says which agents reproduced.
    """
    want, got = _comparable(cached), _comparable(fresh)
    n = f"{len(cached['rows'])} rows"
    if want == got:
        return True, True, f"reproduced bit for bit ({n})"
    same, near, off = [], [], []
    for part in sorted(set(want) | set(got)):
        if part not in want or part not in got:
            off.append(f"{part}: only in the {'cache' if part in want else 'fresh unit'}")
            continue
        if want[part] == got[part]:
            same.append(part)
            continue
        diff = records_difference(want[part], got[part])
        if diff is None:
            off.append(f"{part}: other rows, names or counts")
        elif diff <= rtol:
            near.append(f"{part} to a relative {diff:.1e}")
        else:
            off.append(f"{part} by a relative {diff:.1e}")
    tail = "; ".join(x for x in (", ".join(near) and f"within {rtol:g}: {', '.join(near)}",
                                  ", ".join(same) and f"bit for bit: {', '.join(same)}") if x)
    if off:
        return False, False, f"differs: {'; '.join(off)} (over {rtol:g}; {n}); {tail}"
    return True, False, f"reproduced {tail} ({n})"


def verify_units(cfg: PaperConfig, out: Path, count: int = 1, seed: int = 0,
                 rtol: float | None = None,
                 execution: Execution | None = None) -> list[UnitCheck]:
    """Compute ``count`` cached units again from scratch and compare them with the cache.

    The units are drawn (``numpy.random.default_rng(seed)``, without replacement) from the
    cached units of ``cfg.figures`` whose key matches ``cfg``; α-DDPG, when the configuration
    trains it, is trained again in a fresh scratch folder (never resumed from ``train_dir``).
    A unit reproduces when every row, count and name is equal and every number is within a
    relative ``rtol`` (default :data:`leaderboard.verify.DEFAULT_RTOL`) of the cached one, as
    ``python -m leaderboard verify`` judges a leaderboard row; the verdict says whether it did
    bit for bit. The units are computed as ``execution`` says (default
    :class:`leaderboard.runner.Execution`: one at a time in this process, with a progress bar).

    Raises:
        ValueError: when no cached unit of ``cfg.figures`` matches ``cfg``.
    """
    import tempfile

    from tqdm.auto import tqdm

    rtol = DEFAULT_RTOL if rtol is None else float(rtol)
    out = Path(out)
    cached = []
    for fig, sts in experiment_settings(cfg).items():
        if fig not in cfg.figures:
            continue
        for st in sts:
            for inst in experiment_instances(cfg, fig):
                path = unit_path(out, fig, st, inst)
                doc = load_unit(path, unit_key(cfg, st, inst))
                if doc is not None:
                    cached.append((path, st, inst, doc))
    if not cached:
        raise ValueError(f"no cached unit of {', '.join(cfg.figures) or 'no experiment'} under "
                         f"{out / 'units'} matches this configuration (its key)")
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(cached), size=min(count, len(cached)), replace=False))
    run = Execution() if execution is None else execution
    with tempfile.TemporaryDirectory(prefix="paper-verify-") as scratch:
        fresh_cfg = cfg.replace(train_dir=scratch)
        with tqdm(total=len(picked), desc="units computed again", unit="unit",
                  disable=not run.progress) as bar:
            fresh = run.map(paper_unit, [(fresh_cfg, cached[i][1], cached[i][2]) for i in picked],
                            on_result=lambda j, unit: bar.update(1))
    checks = []
    for i, unit in zip(picked, fresh, strict=True):
        path, _, _, doc = cached[i]
        ok, exact, message = _unit_verdict(doc, unit, rtol)
        checks.append(UnitCheck(path, ok, exact, message))
    return checks
