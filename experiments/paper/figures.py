"""The four figures and their CSVs (``figN_*.png``, ``figN_*.csv``, ``figN_*_episodes.csv``).

Experiments 1, 2 and 4 are drawn from their units' rows (:func:`experiment_flights`,
:func:`experiment_risk`, :func:`experiment_sigma`); experiment 3 from the learning curves the
units of experiment 1 carry, or from the baselines' logs while there are none
(:func:`experiment_training`).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from experiments.paper.config import (
    AGENT_LABELS,
    BASE_ID,
    PAPER,
    PaperConfig,
    agent_label,
    agent_names,
)
from experiments.paper.statistics import (
    MIN_FIT_POINTS,
    Collector,
    rising_at,
    summarise,
    time_fit,
)
from experiments.paper.units import UNRECORDED, read_curves, unit_machine

__all__ = [
    "write_csv",
    "experiment_flights",
    "experiment_risk",
    "experiment_sigma",
    "experiment_training",
]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as CSV, with every key any row has as a column (``status`` when there are none)."""
    fields: list[str] = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields or ["status"])
        w.writeheader()
        for r in rows:
            w.writerow(r)


def _plot_lines(
    ax: Any,
    summary: list[dict[str, Any]],
    agents: list[str],
    key: str = "mean",
    cfg: PaperConfig | None = None,
) -> None:
    markers = {"lp": "s", "slack-lp": "D", "myopic": "v", "slack-guided": "o", "alpha-ddpg": "*"}
    colors = {
        "lp": "tab:blue",
        "slack-lp": "tab:orange",
        "myopic": "tab:green",
        "slack-guided": "tab:purple",
        "alpha-ddpg": "tab:red",
    }
    for agent in agents:
        pts = sorted((r for r in summary if r["agent"] == agent), key=lambda r: r["x"])
        if not pts:
            continue
        xs = [r["x"] for r in pts]
        ys = [r[key] for r in pts]
        lo = [r[key] - r[f"{key}_low"] for r in pts]
        hi = [r[f"{key}_high"] - r[key] for r in pts]
        ax.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            marker=markers.get(agent, "o"),
            color=colors.get(agent),
            capsize=3,
            label=agent_label(cfg, agent) if cfg is not None else AGENT_LABELS.get(agent, agent),
        )


def _paper_reference_lines(ax: Any) -> None:
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(PAPER["ratio_average"], color="black", ls="--", lw=1, label="paper: 1.25 average")
    ax.axhline(PAPER["ratio_best"], color="black", ls=":", lw=1, label="paper: 2.0 best")


def _protocol_note(cfg: PaperConfig, col: Collector) -> str:
    missing = "; ".join(f"{k}: {v}" for k, v in col.missing.items())
    n_inst = len({r["instance_seed"] for r in col.rows}) or len(cfg.instances)
    note = (
        f"{'up to ' if _uneven(col) else ''}{n_inst} instances x {cfg.days} days"
        f"{' (--quick)' if cfg.quick else ''}\nmean, 95% t-interval over instances"
        "\n(a one-instance point: bootstrap over its days)"
    )
    return note + (f"\nmissing: {missing}" if missing else "")


def _uneven(col: Collector) -> bool:
    """Whether the points of one experiment have different numbers of instances."""
    per_x: dict[float, set[int]] = {}
    for r in col.rows:
        per_x.setdefault(r["x"], set()).add(r["instance_seed"])
    return len({len(v) for v in per_x.values()}) > 1


def _figure(title: str) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.set_title(title, fontsize=11)
    return fig, ax


def _figure_pair(title: str) -> tuple[Any, tuple[Any, Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    fig.suptitle(title)
    return fig, (axes[0], axes[1])


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratio_figure(
    cfg: PaperConfig,
    col: Collector,
    summary: list[dict[str, Any]],
    title: str,
    xlabel: str,
    path: Path,
    logx: bool = False,
) -> None:
    fig, ax = _figure(title)
    _plot_lines(ax, summary, agent_names(cfg), cfg=cfg)
    _paper_reference_lines(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("delay ratio: LP mean wait / agent mean wait")
    xs = sorted({r["x"] for r in summary})
    if logx:
        ax.set_xscale("log")
    if xs:
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.minorticks_off()
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    ax.text(0.01, 0.93, _protocol_note(cfg, col), transform=ax.transAxes, fontsize=7, va="top")
    _save(fig, path)


def experiment_flights(cfg: PaperConfig, out: Path, col: Collector) -> dict:
    """Experiment 1: the delay ratio against flights; its CSVs and figure."""
    summary = summarise(cfg, col, "ratio_vs_lp")
    write_csv(out / "fig1_ratio_vs_flights_episodes.csv", col.rows)
    write_csv(out / "fig1_ratio_vs_flights.csv", summary)
    _ratio_figure(
        cfg,
        col,
        summary,
        "Static vs adaptive: delay ratio against flights (single time window)",
        "flights",
        out / "fig1_ratio_vs_flights.png",
        logx=True,
    )
    return {"collector": col, "summary": summary}


def experiment_risk(cfg: PaperConfig, out: Path, col: Collector) -> dict:
    """Experiment 2: the wait against the risk allowance, also as a fraction of the smallest's."""
    n = cfg.risk_flights
    base = min(cfg.risk_scales)
    ref = {
        (r["agent"], r["instance_seed"], r["arrival_seed"]): r["mean_wait"]
        for r in col.rows
        if r["x"] == base
    }
    for r in col.rows:
        w0 = ref.get((r["agent"], r["instance_seed"], r["arrival_seed"]))
        r["fraction_of_base"] = r["mean_wait"] / w0 if w0 else math.nan
    wait = summarise(cfg, col, "mean_wait")
    frac = summarise(cfg, col, "fraction_of_base")
    write_csv(out / "fig2_wait_vs_risk_episodes.csv", col.rows)
    write_csv(out / "fig2_wait_vs_risk.csv", wait + frac)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.6))
    fig.suptitle(f"Delay vs risk: mean wait against ψ / ψ^LP ({n} flights, one window)")
    names = ["lp", *agent_names(cfg)]
    _plot_lines(a1, wait, names, cfg=cfg)
    a1.set_xlabel("risk allowance ψ / ψ^LP")
    a1.set_ylabel("mean wait, minutes")
    if a1.get_legend_handles_labels()[0]:
        a1.legend(fontsize=7)
    _plot_lines(a2, frac, names, cfg=cfg)
    a2.set_xlabel("risk allowance ψ / ψ^LP")
    a2.set_ylabel(f"mean wait / own mean wait at ψ = {base:g} ψ^LP")
    a2.axhline(1.0, color="grey", lw=0.8)
    a2.text(0.01, 0.01, _protocol_note(cfg, col), transform=a2.transAxes, fontsize=7,
            va="bottom")
    _save(fig, out / "fig2_wait_vs_risk.png")
    return {"collector": col, "summary": wait + frac}


def experiment_sigma(cfg: PaperConfig, out: Path, col: Collector) -> dict:
    """Experiment 4: the delay ratio against the arrival spread 2σ; its CSVs and figure."""
    n = cfg.sigma_flights
    summary = summarise(cfg, col, "ratio_vs_lp")
    write_csv(out / "fig4_ratio_vs_sigma_episodes.csv", col.rows)
    write_csv(out / "fig4_ratio_vs_sigma.csv", summary)
    _ratio_figure(
        cfg,
        col,
        summary,
        f"Delay vs variance: delay ratio against the arrival spread ({n} flights, one window)",
        "2σ of arrivals, hours",
        out / "fig4_ratio_vs_sigma.png",
    )
    return {"collector": col, "summary": summary}


_FLIGHTS_RE = re.compile(r"-(\d+)F(?:-|$)")


#: A paper unit's training run: ``.../window-{n}F[-...]/i{instance}/curve.csv``.
_SLUG_RE = re.compile(r"/window-(\d+)F[^/]*/i\d+/")


def _flights_of(env_id: str) -> int | None:
    m = _FLIGHTS_RE.search(env_id)
    if m:
        return int(m.group(1))
    return 10 if env_id in ("tsg/Screening-v1", "tsg/Screening-Sampled-v1") else None


def _log_files(dirs: tuple[str, ...]) -> list[Path]:
    """Every file under (or matching) each ``dirs`` entry used as a prefix."""
    files: list[Path] = []
    for d in dirs:
        pattern = Path(d)
        for base in sorted(pattern.parent.glob(pattern.name + "*")):
            files += sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else [base]
    return files


def _read_bench(files: list[Path]) -> list[dict[str, Any]]:
    """``python -m benchmarks.training --json`` training rows, scaled to 10,000 gradient steps."""
    import json

    out = []
    for path in files:
        if path.suffix != ".json":
            continue
        try:
            doc = json.loads(path.read_text())
            steps = int(doc["config"]["grad_steps"])
            for r in doc.get("training", []):
                out.append(
                    {
                        "flights": int(r["flights"]),
                        "seconds": float(r["train_s"]) * PAPER["steps_to_converge"] / steps,
                        "measured_steps": steps,
                        "file": str(path),
                    }
                )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def experiment_training(cfg: PaperConfig, out: Path,
                         units: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    """Training curve and time to 10,000 steps against flights, from the training logs.

    Curves: the α-DDPG trainings of experiment 1's cached units (``units``: (file, unit) pairs;
    each unit carries its curve, so the figure is rebuilt from ``results/paper/units/`` alone)
    or, while there are none, every ``alpha-ddpg`` learning-curve CSV under
    ``cfg.curve_dirs``; the wall time at
    step 10,000 is interpolated in each run that reached it. Times against flights also come
    from ``python -m benchmarks.training --json`` files there (its gradient-step timings scaled
    linearly to 10,000 steps). Whatever is absent is marked missing in the figure and CSV.
    """
    # the logs under curve_dirs only stand in while no unit of experiment 1 has trained α-DDPG
    files = [] if units else _log_files(cfg.curve_dirs)
    rows = [r for r in read_curves(files) if r.get("method", "alpha-ddpg") == "alpha-ddpg"]
    for fname, unit in units:
        flights = _flights_of(unit["slug"])
        for g, wall, loss in unit.get("curve") or []:
            rows.append({"gradient_steps": g, "wall_s": wall,
                         "actor_loss": "" if loss is None else loss,
                         "env_id": f"{BASE_ID} ({unit['slug']}, instance "
                                   f"{unit['instance_seed']})",
                         "_file": fname, "_flights": flights, "_machine": unit_machine(unit)})
    bench = _read_bench(files)
    fig, (a1, a2) = _figure_pair("Scalability: α-DDPG training (" + (
        "experiment 1's per-instance trainings)" if units else "from the baselines' logs)"))
    target = PAPER["steps_to_converge"]
    summary: list[dict[str, Any]] = []
    hint = (
        "(train with python -m baselines.train --algo alpha-ddpg, or run "
        "python -m benchmarks.training --json, writing under " + ", ".join(cfg.curve_dirs) + ")"
    )
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        runs.setdefault((r.get("env_id", "?"), r["_file"]), []).append(r)
    per_flights: dict[str, dict[int, list[float]]] = {}  # machine -> flights -> seconds
    loss_runs: dict[int | None, list[list[tuple[float, float]]]] = {}
    colours: dict[int | None, str] = {}
    for (env_id, fname), rs in sorted(runs.items(), key=lambda kv: (
            kv[1][0].get("_flights") or 0, kv[0])):
        steps = np.array([float(r["gradient_steps"]) for r in rs])
        wall = np.array([float(r["wall_s"]) for r in rs])
        order = np.argsort(steps)
        slug = _SLUG_RE.search(fname)
        flights = rs[0].get("_flights") or (int(slug.group(1)) if slug else _flights_of(env_id))
        # the paper's figure 3: the actor loss against mini-batches
        losses = [
            (s, float(r["actor_loss"]))
            for s, r in zip(steps, rs, strict=True)
            if r.get("actor_loss") not in (None, "")
        ]
        if losses:
            losses.sort()
            loss_runs.setdefault(flights, []).append(losses)
            # one colour and one legend entry per flight count (experiment 1 has 30 instances)
            first = flights not in colours
            colour = colours.setdefault(flights, f"C{len(colours) % 10}")
            a1.plot([e[0] for e in losses], [e[1] for e in losses], lw=1, marker=".",
                    color=colour, alpha=0.8 if first else 0.35,
                    label=f"{flights} flights" if first else None)
        if flights is None or steps.max() < target:
            continue
        t10k = float(np.interp(target, steps[order], wall[order]))
        machine = rs[0].get("_machine") or UNRECORDED
        if machine != UNRECORDED:  # a wall time compares only with others of its machine
            per_flights.setdefault(machine, {}).setdefault(flights, []).append(t10k)
        summary.append(
            {
                "status": "ok",
                "source": "curve",
                "env_id": env_id,
                "flights": flights,
                "seconds_to_10k_steps": t10k,
                "machine": machine,
                "file": fname,
            }
        )
    for b in bench:
        summary.append(
            {
                "status": "ok",
                "source": "bench",
                "env_id": "",
                "flights": b["flights"],
                "seconds_to_10k_steps": b["seconds"],
                "file": b["file"],
            }
        )
    if runs:
        a1.set_xlabel("gradient steps (mini-batches)")
        a1.set_ylabel("actor loss (mean over the mini-batches since the last point)")
        # What the curves show at the paper's budget, measured on them (the paper reports
        # convergence by 10,000; a curve still rising there has not converged).
        rising = [r for runs_k in loss_runs.values() for run in runs_k
                  if (r := rising_at(run, target)) is not None]
        a1.axvline(target, color="black", ls=":", lw=1,
                   label=f"{target:,}: the paper's budget (it reports convergence by then)")
        if rising:
            a1.set_title(f"actor loss still rising into {target:,} in {sum(rising)} of "
                         f"{len(rising)} runs: not converged", fontsize=9)
        a1.legend(fontsize=6)
    else:
        msg = "missing: no α-DDPG learning curve\n" + hint
        a1.text(
            0.5, 0.5, msg, ha="center", va="center", fontsize=7, transform=a1.transAxes, wrap=True
        )
        summary.append({"status": "missing", "source": "curve", "reason": msg.replace("\n", " ")})
    # one colour per machine: wall times compare only on the same machine
    for j, (machine, times) in enumerate(sorted(per_flights.items(),
                                                key=lambda kv: (kv[0] == UNRECORDED, kv[0]))):
        fl, colour = sorted(times), f"C{j % 10}"
        every = [(f, t) for f in fl for t in times[f]]
        a2.scatter([e[0] for e in every], [e[1] for e in every], s=9, alpha=0.35, color=colour,
                   label=f"{machine}: each training ({len(every)}; wall time, incl. evaluation)")
        a2.plot(fl, [np.mean(times[f]) for f in fl], marker="o", ls="none", color=colour,
                label=f"{machine}: mean per flight count")
        if len(fl) >= MIN_FIT_POINTS:
            _, _, slope, icpt, r2 = time_fit(times)
            line = np.linspace(0, max(fl), 50)
            a2.plot(line, icpt + slope * line, color=colour, lw=1, ls="--",
                    label=f"{machine}: {icpt:.0f} s + {slope:.2f} s × flights "
                          f"(R² = {r2:.2f})")
    if bench:
        pts = sorted((b["flights"], b["seconds"]) for b in bench)
        a2.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="s",
            label="benchmarks.training (gradient steps only)",
        )
    unrecorded = sum(1 for r in summary if r.get("machine") == UNRECORDED)
    if unrecorded:
        a2.text(0.99, 0.02, f"{unrecorded} trainings whose machine was not recorded are left out",
                ha="right", va="bottom", fontsize=6, transform=a2.transAxes)
    if per_flights or bench:
        a2.set_xlabel("flights")
        a2.set_ylabel("wall time to 10,000 gradient steps, s")
        a2.legend(fontsize=6)
        if len({s["flights"] for s in summary if s["status"] == "ok"}) < 2:
            a2.set_title("only one flight count logged: run python -m benchmarks.training",
                         fontsize=8)
    else:
        msg = "missing: no run reached 10,000 gradient steps and no bench output\n" + hint
        a2.text(
            0.5, 0.5, msg, ha="center", va="center", fontsize=7, transform=a2.transAxes, wrap=True
        )
        summary.append({"status": "missing", "source": "time", "reason": msg.replace("\n", " ")})
    _save(fig, out / "fig3_training.png")
    write_csv(out / "fig3_training.csv", summary)
    return {"summary": summary, "losses": loss_runs}
