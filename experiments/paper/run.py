"""Run the experiments: compute the missing units (locally or on Ray), then draw everything."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from experiments.paper.config import PaperConfig, experiment_instances, experiment_settings
from experiments.paper.figures import (
    experiment_flights,
    experiment_risk,
    experiment_sigma,
    experiment_training,
)
from experiments.paper.statistics import collect
from experiments.paper.summary import write_summary
from experiments.paper.units import (
    load_unit,
    paper_unit,
    save_unit,
    unit_key,
    unit_path,
    unit_seconds,
)
from leaderboard.runner import Execution

__all__ = ["run_paper"]


def run_paper(cfg: PaperConfig, out: Path, execution: Execution | None = None) -> list[Path]:
    """Run the four experiments and write their PNG, CSV and ``summary.md`` under ``out``.

    Each (experiment, point, instance) unit is cached under ``out/units/`` as soon as it
    finishes and reused while its key (:func:`~experiments.paper.units.unit_key`) matches, so
    an interrupted run resumes where it stopped and a run can be completed in chunks, or spread
    over local processes or Ray tasks (``execution``: its workers, backend, address and
    progress bar; default :class:`leaderboard.runner.Execution`, whose limits and bootstrap
    replications the paper does not use). Units are computed instance by instance, every point
    of an instance before the next one.

    Returns:
        The written paths.
    """
    from tqdm.auto import tqdm

    execution = Execution() if execution is None else execution
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = experiment_settings(cfg)
    units = [(fig, st, inst) for fig, sts in settings.items() for st in sts
             for inst in experiment_instances(cfg, fig)]
    done: dict[int, dict[str, Any]] = {}
    todo: list[int] = []
    for i, (fig, st, inst) in enumerate(units):
        cached = load_unit(unit_path(out, fig, st, inst), unit_key(cfg, st, inst))
        if cached is not None:
            done[i] = cached
        elif fig in cfg.figures:
            todo.append(i)
    # Dispatched instance by instance (every point of an experiment's instance 0, then of its
    # instance 1, ...): a run stopped part-way leaves whole instances behind it, not some points
    # far ahead of the others (experiment 1's 300-flight units take hours).
    rank = {fig: k for k, fig in enumerate(settings)}
    todo.sort(key=lambda i: (rank[units[i][0]], units[i][2], i))
    bar = tqdm(total=len(done) + len(todo), initial=len(done), desc="paper units", unit="unit",
               disable=not execution.progress)

    def keep(j: int, result: dict[str, Any]) -> None:
        i = todo[j]
        fig, st, inst = units[i]
        save_unit(unit_path(out, fig, st, inst), result)
        done[i] = result
        bar.update(1)

    t0 = time.perf_counter()
    execution.map(paper_unit, [(cfg, units[i][1], units[i][2]) for i in todo], on_result=keep)
    bar.close()
    cols = {fig: collect([done[i] for i, u in enumerate(units) if u[0] == fig and i in done])
            for fig in settings}
    results = {
        "fig1": experiment_flights(cfg, out, cols["fig1"]),
        "fig2": experiment_risk(cfg, out, cols["fig2"]),
        "fig3": experiment_training(
            cfg, out, [(str(unit_path(out, *units[i])), done[i]) for i in sorted(done)
                       if units[i][0] == "fig1" and done[i].get("curve")]),
        "fig4": experiment_sigma(cfg, out, cols["fig4"]),
    }
    unit_s = sum(unit_seconds(u) for u in done.values())
    summary = write_summary(cfg, out, results, time.perf_counter() - t0, unit_s,
                            [done[i] for i in sorted(done)])
    return sorted(out.glob("fig*.png")) + sorted(out.glob("fig*.csv")) + [summary]
