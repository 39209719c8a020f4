"""The paper's four experiments (Shah et al., AAAI 2020, "Experiments"), as PNG and CSV.

``python -m leaderboard paper [--quick] --out DIR`` writes, for each experiment, a figure
(``figN_*.png``), its summary (``figN_*.csv``: one row per x value and agent, with means, IQMs
and 95% intervals: ``mean_low``/``mean_high`` a Student-t interval over the instances' means,
``*_days`` rliable's bootstrap over the days of each instance) and its per-episode data
(``figN_*_episodes.csv``), plus ``summary.md`` (our numbers beside the paper's, and the
runtime of the full protocol, measured and extrapolated).

1. **Static vs adaptive** (paper Fig. "Static vs. Adaptive"): delay ratio LP / agent against
   the number of flights, single time window (``tsg/Screening-Window-*``, whose LP is one window
   over the day, as in the paper).
2. **Delay vs risk**: mean wait against the risk allowance ψ = s · ψ^LP (the ratio of ψ_θ
   across θ kept, as in the paper), s from 1.01 up, on the 10-flight window; also as a fraction
   of the same agent's wait at the smallest allowance (the paper's y axis).
3. **Scalability**: the training curve and the wall time to 10,000 gradient steps (the paper's
   mini-batches) against the number of flights, read from the baselines' logs
   (``results/curves/**/curve.csv`` written by ``baselines`` training runs, or
   ``results/bench*``); when none are found the figure says so and its CSV has
   ``status=missing``.
4. **Delay vs variance**: the delay ratio against the arrival spread 2σ (hours), 10-flight
   window.

**Agents.** The paper's adaptive agent is α-DDPG, trained per instance: with
``adaptive_gradient_steps`` (``--train-adaptive``) it is trained on every (point, instance) unit
at that budget (the paper's 10,000 mini-batches), or ``adaptive_checkpoint`` names trained
policies (a path template with ``{env}``, a slug of the setting, and ``{instance}``); without
either, the non-learning *online* baselines stand in for it and are labelled so: ``slack-
guided`` and ``myopic`` (they are always shown beside it). Every figure also shows the **static
slack LP** (``slack-lp``): it spends the risk budget the LP leaves unused in its non-worst
windows without adapting to queues, so the gap LP → slack LP is the gain from the unused budget,
and slack LP → online the gain from adapting. In the single-window setting the LP has one window
and no unused budget across windows: there the slack LP's gain comes from the polytope slack
(``risk_slack``) and from balancing load across resources.

**Protocol.** Full: 30 instances x 100 arrival samples per point (the paper's), days
``EVAL_SEED_BASE + d``. ``--quick``: 2 instances x 2 days on fewer points, for CI.

**Units.** Each (experiment, point, instance) is one unit (:func:`paper_unit`): its set-up, its
α-DDPG training when asked, and every agent's days. A finished unit is cached under
``OUT/units/`` with a key of everything it depends on and reused while the key matches, so runs
resume, can be completed in chunks, and spread over local processes or Ray tasks
(``--workers``, ``--backend ray [--address ADDR]``); the figures are drawn from whatever units
the configuration names.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs  # noqa: F401  (registers the ids)
from leaderboard.aggregate import CI_SIZE, iqm_interval
from leaderboard.suites import EVAL_SEED_BASE
from tsg_envs.harness import Unit, delay_ratio
from tsg_envs.harness import evaluate as harness_evaluate
from tsg_envs.provenance import provenance
from tsg_envs.rollout import Agent, LPAgent

__all__ = ["PAPER", "PaperConfig", "run_paper", "build_agent", "AGENT_LABELS", "paper_unit",
           "unit_key", "unit_path", "UNIT_VERSION", "UnitCheck", "verify_units"]

#: The paper's stated numbers.
PAPER: dict[str, Any] = {
    "ratio_average": 1.25,
    "ratio_best": 2.0,
    "trend_flights": "gain falls as flights grow",
    "trend_sigma": "gain falls as the arrival spread grows",
    "steps_to_converge": 10_000,
}

#: How each agent is labelled in the figures.
AGENT_LABELS: dict[str, str] = {
    "lp": "static window LP",
    "slack-lp": "static slack LP",
    "myopic": "myopic (online, non-learning stand-in for α-DDPG)",
    "slack-guided": "slack-guided (online, non-learning stand-in for α-DDPG)",
    "alpha-ddpg": "α-DDPG (trained checkpoints)",
}

_BASE_ID = "tsg/Screening-Window-10F-v1"


@dataclass(frozen=True)
class PaperConfig:
    """What the paper command runs.

    Attributes:
        instances: Instance seeds per point of experiment 1 (paper: 30).
        other_instances: How many of ``instances`` (the first ones) experiments 2 and 4 use
            per point (α-DDPG is retrained per point: 10 by default); None: all of them.
        days: Arrival samples per instance (paper: 100), seeds ``EVAL_SEED_BASE + d``.
        flights: Experiment 1's flight counts (window horizon).
        risk_scales: Experiment 2's ψ / ψ^LP values (> 1: the polytopes need an interior).
        risk_flights: Experiment 2's flights.
        sigmas: Experiment 4's arrival standard deviations σ, minutes (x axis: 2σ in hours).
        sigma_flights: Experiment 4's flights.
        agents: Compared agents besides the LP (names of ``baselines`` methods).
        adaptive_checkpoint: α-DDPG checkpoint template (``{env}``, ``{instance}``); None:
            the online baselines stand in (unless ``adaptive_gradient_steps`` is set).
        adaptive_gradient_steps: Train α-DDPG per (point, instance) for this many gradient
            steps (mini-batches; the paper's budget is 10,000), seed 0, under ``train_dir``
            (resumable); None: no training.
        train_dir: Where the per-unit α-DDPG runs live (checkpoints; each unit's result copies
            its learning curve, which feeds experiment 3).
        curve_dirs: Where experiment 3 looks for training logs while no unit of experiment 1
            has trained α-DDPG.
        figures: The experiments whose missing units this run computes (``"fig1"``,
            ``"fig2"``, ``"fig4"``); the others only reuse their cached units, so a run can be
            done one experiment at a time. Every figure is drawn from what is cached.
        quick: Label of the protocol (``--quick``) in the outputs.
    """

    instances: tuple[int, ...] = tuple(range(30))
    other_instances: int | None = 10
    days: int = 100
    flights: tuple[int, ...] = (5, 10, 20, 50, 100, 300)
    risk_scales: tuple[float, ...] = (1.01, 1.05, 1.1, 1.25, 1.5, 2.0)
    risk_flights: int = 10
    sigmas: tuple[float, ...] = (7.5, 15.0, 30.0, 45.0, 60.0, 90.0, 150.0)
    sigma_flights: int = 10
    agents: tuple[str, ...] = ("slack-lp", "myopic", "slack-guided")
    adaptive_checkpoint: str | None = None
    adaptive_gradient_steps: int | None = None
    train_dir: str = "runs/paper"
    curve_dirs: tuple[str, ...] = ("results/curves", "results/bench")
    figures: tuple[str, ...] = ("fig1", "fig2", "fig4")
    quick: bool = False

    @classmethod
    def quick_config(cls) -> PaperConfig:
        """The CI protocol: 2 instances x 2 days, 2-3 points per experiment."""
        return cls(
            instances=(0, 1),
            other_instances=None,
            days=2,
            flights=(5, 10),
            risk_scales=(1.01, 1.5, 2.0),
            sigmas=(15.0, 45.0, 150.0),
            quick=True,
        )

    def replace(self, **changes: Any) -> PaperConfig:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)


def build_agent(name: str, env: gym.Env, checkpoint: str | None = None) -> Agent:
    """An agent of ``env`` by method name, without training.

    ``"lp"`` is :class:`tsg_envs.rollout.LPAgent`; a non-learning ``baselines`` method is built
    by its module's ``make_agent(env)``; ``"alpha-ddpg"`` (or any learned method) is loaded from
    ``checkpoint``.

    Raises:
        RuntimeError: when the method or its checkpoint is unavailable (the reason).
    """
    if name == "lp":
        return LPAgent(env)
    try:
        from baselines.api import METHOD_MODULES, get_method

        if checkpoint is not None:
            path = Path(checkpoint)
            if not path.exists():
                raise FileNotFoundError(f"no checkpoint at {path}")
            return get_method(name).load(path, env)
        module = importlib.import_module(METHOD_MODULES[name])
    except Exception as err:  # noqa: BLE001 - reported beside the figure
        raise RuntimeError(f"{name} unavailable: {type(err).__name__}: {err}") from err
    make = getattr(module, "make_agent", None)
    if make is None:
        raise RuntimeError(f"{name} needs a trained checkpoint (adaptive_checkpoint)")
    return make(env)


@dataclass
class _Setting:
    """One x value of an experiment: the env kwargs on :data:`_BASE_ID`."""

    x: float
    slug: str
    kwargs: dict[str, Any]
    risk_scale: float | None = None


@dataclass
class _Collector:
    """Per-episode rows of one experiment, with timings."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    setup_s: dict[str, float] = field(default_factory=dict)
    episode_s: dict[str, float] = field(default_factory=dict)
    passengers: dict[str, float] = field(default_factory=dict)
    train_s: dict[str, float] = field(default_factory=dict)
    train_n: dict[str, int] = field(default_factory=dict)
    unit_s: dict[str, list[float]] = field(default_factory=dict)


def _agent_names(cfg: PaperConfig) -> list[str]:
    names = list(cfg.agents)
    adaptive = cfg.adaptive_checkpoint is not None or cfg.adaptive_gradient_steps is not None
    if adaptive and "alpha-ddpg" not in names:
        names.append("alpha-ddpg")
    return names


def _label(cfg: PaperConfig, agent: str) -> str:
    if agent == "alpha-ddpg" and cfg.adaptive_gradient_steps is not None:
        return f"α-DDPG (trained per instance, {cfg.adaptive_gradient_steps:,} mini-batches)"
    label = AGENT_LABELS.get(agent, agent)
    if "alpha-ddpg" in _agent_names(cfg):  # α-DDPG itself is there: the others stand in for none
        label = label.replace(", non-learning stand-in for α-DDPG", ", non-learning")
    return label


#: How a ``--quick`` summary names the full protocol.
QUICK_NOTE = " (--quick; the full protocol is 30 x 100, 10 x 100 for experiments 2 and 4)"

#: Version of a paper unit's content; part of every unit's key.
UNIT_VERSION = 1


def _unit_kwargs(setting: _Setting, inst: int) -> dict[str, Any]:
    """The setting's ``gym.make`` kwargs for one instance (ψ scaled for experiment 2)."""
    kwargs = dict(setting.kwargs)
    if setting.risk_scale is not None:
        base = gym.make(_BASE_ID, instance_seed=inst, **kwargs)
        psi = base.unwrapped.lp_solution.psi * setting.risk_scale
        kwargs["risk_bound"] = [float(x) for x in psi]
    return kwargs


def unit_key(cfg: PaperConfig, setting: _Setting, inst: int) -> str:
    """sha256 (16 hex) of what one (point, instance) unit computes: reuse it only if equal."""
    import hashlib
    import json

    blob = json.dumps({
        "version": UNIT_VERSION, "base": _BASE_ID, "slug": setting.slug, "x": setting.x,
        "kwargs": setting.kwargs, "risk_scale": setting.risk_scale, "instance": int(inst),
        "days": cfg.days, "agents": _agent_names(cfg),
        "adaptive_checkpoint": cfg.adaptive_checkpoint,
        "adaptive_gradient_steps": cfg.adaptive_gradient_steps,
    }, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _train_path(cfg: PaperConfig, setting: _Setting, inst: int) -> Path:
    """The unit's α-DDPG run folder, ``TRAIN_DIR/SLUG/iINSTANCE-KEY``.

    Named by the unit's key, so that a run of another protocol or budget (a ``--quick`` or
    ``--gradient-steps`` run, say) never mixes with this unit's.
    """
    return Path(cfg.train_dir) / setting.slug / f"i{inst}-{unit_key(cfg, setting, inst)}"


def _train_adaptive(cfg: PaperConfig, setting: _Setting, inst: int,
                    kwargs: dict[str, Any]) -> tuple[Agent, float]:
    """α-DDPG trained on the unit from scratch; (agent, training seconds).

    The unit's run folder is emptied first: a training interrupted with its unit starts again
    rather than resume, so every unit is one uninterrupted training (a resume without the
    replay buffer trains differently, and checkpoints with it take gigabytes per unit). The
    finished run stays (its checkpoint, ``best.pt`` and learning curve).
    """
    import shutil

    from baselines.api import RunConfig, get_method

    out = _train_path(cfg, setting, inst)
    shutil.rmtree(out, ignore_errors=True)
    run = RunConfig(algo="alpha-ddpg", env_id=_BASE_ID,
                    gradient_steps=int(cfg.adaptive_gradient_steps or 0), seed=0,
                    out=out, instance_seed=inst,
                    env_kwargs={k: (np.asarray(v) if k == "risk_bound" else v)
                                for k, v in kwargs.items()},
                    progress=False)
    t = time.perf_counter()
    agent = get_method("alpha-ddpg").train(run)
    return agent, time.perf_counter() - t


def _training_curve(cfg: PaperConfig, setting: _Setting, inst: int) -> list[list[float | None]]:
    """The unit's α-DDPG learning curve, ``[gradient steps, wall s, actor loss or None]`` rows.

    ``wall_s`` counts the training's own time across resumptions (it is saved in every
    checkpoint), so the curve is the same whether the run was trained at once or in chunks.
    """
    path = _train_path(cfg, setting, inst) / "curve.csv"
    out: list[list[float | None]] = []
    for r in _read_curves([path]):
        loss = r.get("actor_loss")
        out.append([float(r["gradient_steps"]), float(r["wall_s"]),
                    float(loss) if loss not in (None, "") else None])
    out.sort(key=lambda row: (row[0], row[1]))
    return out


def paper_unit(args: tuple[PaperConfig, _Setting, int]) -> dict[str, Any]:
    """One (point, instance) unit: the LP and every agent on every day; its rows and timings.

    A module-level function of one picklable argument (local workers and Ray tasks run it).
    """
    cfg, setting, inst = args
    names = ["lp", *_agent_names(cfg)]
    t0 = time.perf_counter()
    kwargs = _unit_kwargs(setting, inst)
    env_kwargs = {k: (np.asarray(v) if k == "risk_bound" else v) for k, v in kwargs.items()}
    env = gym.make(_BASE_ID, instance_seed=inst, **env_kwargs)
    agents: dict[str, Agent] = {}
    missing: dict[str, str] = {}
    train_s = None
    for name in names:
        try:
            if name == "alpha-ddpg" and cfg.adaptive_gradient_steps is not None:
                agents[name], train_s = _train_adaptive(cfg, setting, inst, kwargs)
                continue
            ckpt = None
            if name == "alpha-ddpg" and cfg.adaptive_checkpoint:
                ckpt = cfg.adaptive_checkpoint.format(env=setting.slug, instance=inst)
            agents[name] = build_agent(name, env, ckpt)
        except RuntimeError as err:
            missing.setdefault(name, str(err))
    setup = time.perf_counter() - t0 - (train_s or 0.0)
    curve = None
    if "alpha-ddpg" in agents and cfg.adaptive_gradient_steps is not None:
        curve = _training_curve(cfg, setting, inst)
        if curve:  # the training's own wall time, also when it was resumed or already done
            train_s = max(row[1] for row in curve)
    t0 = time.perf_counter()
    seeds = [EVAL_SEED_BASE + d for d in range(cfg.days)]
    unit = Unit.of(_BASE_ID, inst, **env_kwargs)
    factories = {name: (lambda e, a=a: a) for name, a in agents.items()}
    waits = {(r.agent, r.day_seed): r.mean_wait
             for r in harness_evaluate(factories, [unit], seeds)}
    rows = []
    for seed in seeds:
        lp_wait = waits[("lp", seed)]
        for name in agents:
            w = waits[(name, seed)]
            ratio = delay_ratio(lp_wait, w)[0]
            rows.append({"x": setting.x, "setting": setting.slug, "agent": name,
                         "instance_seed": inst, "arrival_seed": seed, "mean_wait": w,
                         "lp_mean_wait": lp_wait,
                         "ratio_vs_lp": None if ratio is None else ratio})
    return {"key": unit_key(cfg, setting, inst), "slug": setting.slug, "instance_seed": inst,
            "rows": rows, "missing": missing, "setup_s": setup,
            "rolling_s": time.perf_counter() - t0, "n_days": len(seeds),
            "passengers": int(env.unwrapped.game.n_passengers), "train_s": train_s,
            "curve": curve, "provenance": provenance()}


def unit_path(out: Path, fig: str, setting: _Setting, inst: int) -> Path:
    """Where a unit's result is cached: ``OUT/units/FIG/SLUG/iINSTANCE.json``."""
    return Path(out) / "units" / fig / setting.slug / f"i{inst}.json"


def _load_unit(path: Path, key: str) -> dict[str, Any] | None:
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("key") == key else None


def _save_unit(path: Path, doc: dict[str, Any]) -> None:
    import json
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def _unit_seconds(unit: dict[str, Any]) -> float:
    """A unit's process time: set-up, training and rollouts."""
    return unit["setup_s"] + unit["rolling_s"] + (unit.get("train_s") or 0.0)


def _collect(units: list[dict[str, Any]]) -> _Collector:
    """A collector of one experiment from its units' results."""
    col = _Collector()
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for u in units:
        col.rows += [{**r, "ratio_vs_lp": math.nan if r["ratio_vs_lp"] is None
                      else r["ratio_vs_lp"]} for r in u["rows"]]
        for k, v in u["missing"].items():
            col.missing.setdefault(k, v)
        by_slug.setdefault(u["slug"], []).append(u)
    for slug, us in by_slug.items():
        col.passengers[slug] = float(np.mean([u["passengers"] for u in us]))
        col.unit_s[slug] = [_unit_seconds(u) for u in us]
        col.setup_s[slug] = float(np.mean([u["setup_s"] for u in us]))
        col.episode_s[slug] = sum(u["rolling_s"] for u in us) / max(
            1, sum(u["n_days"] for u in us))
        trained = [u["train_s"] for u in us if u.get("train_s") is not None]
        if trained:
            col.train_s[slug] = float(np.mean(trained))
            col.train_n[slug] = len(trained)
    return col


def _point_matrices(cfg: PaperConfig, col: _Collector,
                    value: str) -> dict[tuple[float, str], tuple[list[int], np.ndarray]]:
    """Per (x, agent): its instance seeds and the (days, instances) matrix of ``value``.

    Complete points only; each point has the instances it has (a run in chunks can leave one
    point with fewer).
    """
    groups: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for r in col.rows:  # one pass: the summary asks for these matrices once per agent
        groups.setdefault((r["x"], r["agent"]), []).append(r)
    out = {}
    for (x, agent), sel in sorted(groups.items(), key=lambda kv: kv[0]):
        instances = sorted({r["instance_seed"] for r in sel})
        m = np.full((cfg.days, len(instances)), np.nan)
        for r in sel:
            m[r["arrival_seed"] - EVAL_SEED_BASE, instances.index(r["instance_seed"])] = r[
                value
            ]
        if np.all(np.isfinite(m)):
            out[(x, agent)] = (instances, m)
    return out


def t_interval(samples: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of independent samples (here: one mean per instance).

    The instances are the sample: a point's claim is about the family they are drawn from,
    so its interval is the t-interval of the instance means, with n - 1 degrees of freedom
    (each instance mean already averages its days). At the 4-30 instances of the paper's
    protocol a percentile bootstrap over instances would cover too little.

    Returns:
        ``(mean, low, high)``.

    Raises:
        ValueError: Fewer than two samples.
    """
    from scipy import stats

    x = np.asarray(samples, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"need at least two samples, got {x.size}")
    mean = float(x.mean())
    half = float(stats.t.ppf((1 + CI_SIZE) / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half


def _summarise(cfg: PaperConfig, col: _Collector, value: str) -> list[dict[str, Any]]:
    """Per (x, agent): mean, IQM and 95% intervals of ``value`` over (days, instances).

    ``mean_low``/``mean_high`` are the t-interval over the point's instance means
    (:func:`t_interval`; ``interval`` = ``"instances"``); at a point with one instance only its
    days can be resampled, and they are the days-only bootstrap (``interval`` = ``"days"``).
    The ``*_days`` columns are rliable's stratified bootstrap over days within each instance:
    the uncertainty from the sample of days on these instances alone. ``n_instances`` counts
    the point's instances.
    """
    out = []
    for (x, agent), (_, m) in _point_matrices(cfg, col, value).items():
        iv = iqm_interval(m)
        n = m.shape[1]
        low, high = (t_interval(m.mean(axis=0))[1:] if n > 1
                     else (iv["mean_low"], iv["mean_high"]))
        out.append(
            {
                "x": x,
                "agent": agent,
                "label": _label(cfg, agent),
                "metric": value,
                "mean": iv["mean"],
                "mean_low": low,
                "mean_high": high,
                "interval": "instances" if n > 1 else "days",
                "iqm": iv["iqm"],
                "mean_low_days": iv["mean_low"],
                "mean_high_days": iv["mean_high"],
                "iqm_low_days": iv["iqm_low"],
                "iqm_high_days": iv["iqm_high"],
                "best_instance": float(m.mean(axis=0).max()),
                "n_instances": n,
                "n_days": cfg.days,
            }
        )
    return out


def _mean_over_points(points: list[tuple[list[int], np.ndarray]]) -> dict[str, Any] | None:
    """The mean over points of each point's mean, with a 95% t-interval over instances.

    Uses the points with two instances or more, each with all of its instances (a run in
    chunks leaves some points with fewer: the slow 300-flight point of experiment 1 lags the
    others). The estimate is the mean of the point means. Instances are independent draws of
    the family, so writing it as a sum over instances, Σ_i z_i with
    z_i = Σ_{points k with instance i} x_ik / (K n_k), its variance is Σ_i a_iᵀ C a_i, where
    a_i are those weights and C the covariance of instance means between points, each entry
    estimated over the instances the two points share (so points that share instances, as in
    experiments 2 and 4, are paired; points that share none are independent). The t-quantile
    has n_eff - 1 degrees of freedom, n_eff = (Σ_i v_i)² / Σ_i v_i² the effective number of
    instances (v_i = a_iᵀ C a_i). When every point has the same n instances this is exactly
    the t-interval of the n per-instance averages over the points (n - 1 degrees of freedom).

    Returns:
        ``{"mean", "low", "high", "n_points", "n_instances", "n_instances_max"}`` (the fewest
        and most instances of a kept point), or None when no point has two instances.
    """
    from scipy import stats

    kept = [dict(zip(inst, m.mean(axis=0), strict=True)) for inst, m in points if len(inst) > 1]
    if not kept:
        return None
    k = len(kept)
    n = np.array([len(d) for d in kept], dtype=float)
    mean = float(np.mean([np.mean(list(d.values())) for d in kept]))
    cov = np.zeros((k, k))
    for p in range(k):
        for q in range(p, k):
            shared = sorted(set(kept[p]) & set(kept[q]))
            if len(shared) > 1:
                cov[p, q] = cov[q, p] = np.cov([kept[p][i] for i in shared],
                                               [kept[q][i] for i in shared], ddof=1)[0, 1]
    v = []
    for i in sorted(set().union(*kept)):
        a = np.array([1.0 / (k * n[p]) if i in kept[p] else 0.0 for p in range(k)])
        v.append(max(float(a @ cov @ a), 0.0))
    var = float(np.sum(v))
    half = 0.0
    if var > 0:
        dof = max(var**2 / float(np.sum(np.square(v))) - 1.0, 1.0)
        half = float(stats.t.ppf((1 + CI_SIZE) / 2, dof) * np.sqrt(var))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n_points": k,
            "n_instances": int(n.min()), "n_instances_max": int(n.max())}


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
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
            label=_label(cfg, agent) if cfg is not None else AGENT_LABELS.get(agent, agent),
        )


def _paper_reference_lines(ax: Any) -> None:
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(PAPER["ratio_average"], color="black", ls="--", lw=1, label="paper: 1.25 average")
    ax.axhline(PAPER["ratio_best"], color="black", ls=":", lw=1, label="paper: 2.0 best")


def _protocol_note(cfg: PaperConfig, col: _Collector) -> str:
    missing = "; ".join(f"{k}: {v}" for k, v in col.missing.items())
    n_inst = len({r["instance_seed"] for r in col.rows}) or len(cfg.instances)
    note = (
        f"{'up to ' if _uneven(col) else ''}{n_inst} instances x {cfg.days} days"
        f"{' (--quick)' if cfg.quick else ''}\nmean, 95% t-interval over instances"
        "\n(a one-instance point: bootstrap over its days)"
    )
    return note + (f"\nmissing: {missing}" if missing else "")


def _uneven(col: _Collector) -> bool:
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


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratio_figure(
    cfg: PaperConfig,
    col: _Collector,
    summary: list[dict[str, Any]],
    title: str,
    xlabel: str,
    path: Path,
    logx: bool = False,
) -> None:
    fig, ax = _figure(title)
    _plot_lines(ax, summary, _agent_names(cfg), cfg=cfg)
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


def _instances(cfg: PaperConfig, fig: str) -> tuple[int, ...]:
    """The instances of one experiment's points."""
    if fig == "fig1" or cfg.other_instances is None:
        return cfg.instances
    return cfg.instances[: cfg.other_instances]


def _settings(cfg: PaperConfig) -> dict[str, list[_Setting]]:
    """Every point of experiments 1, 2 and 4 (experiment 3 reads training logs)."""
    n, m = cfg.risk_flights, cfg.sigma_flights
    return {
        "fig1": [_Setting(k, f"window-{k}F", {"n_flights": k}) for k in cfg.flights],
        "fig2": [_Setting(s, f"window-{n}F-psi{s:g}", {"n_flights": n}, risk_scale=s)
                 for s in cfg.risk_scales],
        "fig4": [_Setting(2 * sig / 60.0, f"window-{m}F-sigma{sig:g}",
                          {"n_flights": m, "arrival_std": sig}) for sig in cfg.sigmas],
    }


def _experiment_flights(cfg: PaperConfig, out: Path, col: _Collector) -> dict:
    summary = _summarise(cfg, col, "ratio_vs_lp")
    _write_csv(out / "fig1_ratio_vs_flights_episodes.csv", col.rows)
    _write_csv(out / "fig1_ratio_vs_flights.csv", summary)
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


def _experiment_risk(cfg: PaperConfig, out: Path, col: _Collector) -> dict:
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
    wait = _summarise(cfg, col, "mean_wait")
    frac = _summarise(cfg, col, "fraction_of_base")
    _write_csv(out / "fig2_wait_vs_risk_episodes.csv", col.rows)
    _write_csv(out / "fig2_wait_vs_risk.csv", wait + frac)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.6))
    fig.suptitle(f"Delay vs risk: mean wait against ψ / ψ^LP ({n} flights, one window)")
    names = ["lp", *_agent_names(cfg)]
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


def _experiment_sigma(cfg: PaperConfig, out: Path, col: _Collector) -> dict:
    n = cfg.sigma_flights
    summary = _summarise(cfg, col, "ratio_vs_lp")
    _write_csv(out / "fig4_ratio_vs_sigma_episodes.csv", col.rows)
    _write_csv(out / "fig4_ratio_vs_sigma.csv", summary)
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


def _read_curves(files: list[Path]) -> list[dict[str, Any]]:
    """Rows of the baselines' learning-curve CSVs with a ``gradient_steps`` column.

    Curves written before the budget was counted in gradient steps (only ``step``, environment
    steps) are skipped: their x axis is not the paper's mini-batches.
    """
    rows = []
    for path in files:
        if path.suffix != ".csv":
            continue
        try:
            with path.open() as f:
                for r in csv.DictReader(f):
                    if r.get("gradient_steps") not in (None, "") and "wall_s" in r:
                        r["_file"] = str(path)
                        rows.append(r)
        except (OSError, csv.Error, UnicodeDecodeError):
            continue
    return rows


def _read_bench(files: list[Path]) -> list[dict[str, Any]]:
    """``python -m baselines.bench --json`` training rows, scaled to 10,000 gradient steps."""
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


def _experiment_training(cfg: PaperConfig, out: Path,
                         units: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    """Training curve and time to 10,000 steps against flights, from the training logs.

    Curves: the α-DDPG trainings of experiment 1's cached units (``units``: (file, unit) pairs;
    each unit carries its curve, so the figure is rebuilt from ``results/paper/units/`` alone)
    or, while there are none, every ``alpha-ddpg`` learning-curve CSV under
    ``cfg.curve_dirs``; the wall time at
    step 10,000 is interpolated in each run that reached it. Times against flights also come
    from ``python -m baselines.bench --json`` files there (its gradient-step timings scaled
    linearly to 10,000 steps). Whatever is absent is marked missing in the figure and CSV.
    """
    # the logs under curve_dirs only stand in while no unit of experiment 1 has trained α-DDPG
    files = [] if units else _log_files(cfg.curve_dirs)
    rows = [r for r in _read_curves(files) if r.get("method", "alpha-ddpg") == "alpha-ddpg"]
    for fname, unit in units:
        flights = _flights_of(unit["slug"])
        for g, wall, loss in unit.get("curve") or []:
            rows.append({"gradient_steps": g, "wall_s": wall,
                         "actor_loss": "" if loss is None else loss,
                         "env_id": f"{_BASE_ID} ({unit['slug']}, instance "
                                   f"{unit['instance_seed']})",
                         "_file": fname, "_flights": flights, "_machine": _machine(unit)})
    bench = _read_bench(files)
    fig, (a1, a2) = _figure_pair("Scalability: α-DDPG training (" + (
        "experiment 1's per-instance trainings)" if units else "from the baselines' logs)"))
    target = PAPER["steps_to_converge"]
    summary: list[dict[str, Any]] = []
    hint = (
        "(train with python -m baselines.train --algo alpha-ddpg, or run "
        "python -m baselines.bench --json, writing under " + ", ".join(cfg.curve_dirs) + ")"
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
        machine = rs[0].get("_machine") or _UNRECORDED
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
        a1.axvline(target, color="black", ls=":", lw=1, label="paper: converged by 10,000")
        a1.legend(fontsize=6)
    else:
        msg = "missing: no α-DDPG learning curve\n" + hint
        a1.text(
            0.5, 0.5, msg, ha="center", va="center", fontsize=7, transform=a1.transAxes, wrap=True
        )
        summary.append({"status": "missing", "source": "curve", "reason": msg.replace("\n", " ")})
    # one colour per machine: wall times compare only on the same machine
    for j, (machine, times) in enumerate(sorted(per_flights.items(),
                                                key=lambda kv: (kv[0] == _UNRECORDED, kv[0]))):
        fl, colour = sorted(times), f"C{j % 10}"
        every = [(f, t) for f in fl for t in times[f]]
        a2.scatter([e[0] for e in every], [e[1] for e in every], s=9, alpha=0.35, color=colour,
                   label=f"{machine}: each training ({len(every)}; wall time, incl. evaluation)")
        a2.plot(fl, [np.mean(times[f]) for f in fl], marker="o", ls="none", color=colour,
                label=f"{machine}: mean per flight count")
        if len(fl) >= _MIN_FIT_POINTS:
            _, _, slope, icpt, r2 = _time_fit(times)
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
            label="baselines.bench (gradient steps only)",
        )
    if per_flights or bench:
        a2.set_xlabel("flights")
        a2.set_ylabel("wall time to 10,000 gradient steps, s")
        a2.legend(fontsize=6)
        if len({s["flights"] for s in summary if s["status"] == "ok"}) < 2:
            a2.set_title("only one flight count logged: run python -m baselines.bench", fontsize=8)
    else:
        msg = "missing: no run reached 10,000 gradient steps and no bench output\n" + hint
        a2.text(
            0.5, 0.5, msg, ha="center", va="center", fontsize=7, transform=a2.transAxes, wrap=True
        )
        summary.append({"status": "missing", "source": "time", "reason": msg.replace("\n", " ")})
    _save(fig, out / "fig3_training.png")
    _write_csv(out / "fig3_training.csv", summary)
    return {"summary": summary, "losses": loss_runs}


#: Flight counts a training-time line is fitted through: a line through two means fits them
#: exactly (R² = 1 whatever the times), so it says nothing of linearity.
_MIN_FIT_POINTS = 3


def _time_fit_text(per_flights: dict[int, list[float]]) -> str:
    """The mean training time per flight count (two or more), and its line from three counts on.

    ``{10: [100, 100], 20: [220], 30: [300]}`` reads ``10F: 100 s; 20F: 220 s; 30F: 300 s to
    10,000 mini-batches; least squares 7 s + 10.00 s × flights, R² = 0.99``.
    """
    xs, ys, slope, icpt, r2 = _time_fit(per_flights)
    text = "; ".join(f"{int(k)}F: {y:.0f} s" for k, y in zip(xs, ys, strict=True))
    text += " to 10,000 mini-batches"
    if len(xs) < _MIN_FIT_POINTS:
        return text + f" ({len(xs)} flight counts: too few to fit a line)"
    return text + f"; least squares {icpt:.0f} s + {slope:.2f} s × flights, R² = {r2:.2f}"


def _time_fit(per_flights: dict[int, list[float]]) -> tuple[np.ndarray, np.ndarray, float,
                                                            float, float]:
    """Training time against flights: the mean per flight count and its least-squares line.

    Returns:
        ``(flights, mean seconds, slope, intercept, R²)``, the line fitted to the means.
    """
    xs = np.array(sorted(per_flights), dtype=float)
    ys = np.array([np.mean(per_flights[int(k)]) for k in xs])
    slope, icpt = np.polyfit(xs, ys, 1)
    r2 = 1.0 - float(np.sum((ys - (slope * xs + icpt)) ** 2)) / max(
        float(np.sum((ys - ys.mean()) ** 2)), 1e-12)
    return xs, ys, float(slope), float(icpt), r2


def _late_share(losses: list[tuple[float, float]], target: float) -> float | None:
    """How much of the actor loss's change happened late.

    Returns:
        The share of its change from the first logged value to ``target`` mini-batches that
        happened after ``target / 2``; None if the run stops short of ``target``.
    """
    g = np.array([e[0] for e in losses])
    v = np.array([e[1] for e in losses])
    if g.max() < target or g.min() > target / 2:
        return None
    at_end, at_half = np.interp(target, g, v), np.interp(target / 2, g, v)
    total = abs(at_end - v[0])
    return float(abs(at_end - at_half) / total) if total > 0 else 0.0


def _figure_pair(title: str) -> tuple[Any, tuple[Any, Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    fig.suptitle(title)
    return fig, (axes[0], axes[1])


#: Two-sided level of the trend test (Jonckheere–Terpstra over the instances' means).
TREND_LEVEL: float = 0.05


def _agent_points(cfg: PaperConfig, result: dict[str, Any], agent: str,
                  value: str) -> list[tuple[float, list[int], np.ndarray]]:
    """``agent``'s points of one experiment: (x, instance seeds, (days, instances) matrix)."""
    return [(x, inst, m)
            for (x, name), (inst, m) in _point_matrices(cfg, result["collector"], value).items()
            if name == agent]


def _trend_points(cfg: PaperConfig, result: dict[str, Any], agent: str,
                  value: str = "ratio_vs_lp") -> list[tuple[float, np.ndarray]]:
    """``agent``'s points with two instances or more: (x, the instances' means of ``value``).

    A one-instance point is one game, not a sample of the family: it is shown, not tested.
    """
    return [(x, m.mean(axis=0)) for x, inst, m in _agent_points(cfg, result, agent, value)
            if len(inst) > 1]


def _kendall(points: list[tuple[float, np.ndarray]]) -> tuple[float, float] | None:
    """The Jonckheere–Terpstra test of instance means against x: Kendall's τ_b and p.

    Every instance of every point is one observation (x, its mean over days), so a point
    weighs as many instances as it has; τ_b is taken between x (tied within a point) and the
    means, and its two-sided p-value is the normal approximation with the tie-corrected
    variance, which is the Jonckheere–Terpstra test of ordered groups. It treats the points'
    instances as independent groups: where points share instances (experiments 2 and 4 re-run
    each instance at every x), a common instance effect cancels between a pair and its
    reverse, which makes the test conservative, not liberal. None below three points.
    """
    from scipy import stats

    if len(points) < 3:
        return None
    x = np.concatenate([np.full(len(m), xv, dtype=float) for xv, m in points])
    y = np.concatenate([np.asarray(m, dtype=float) for _, m in points])
    res = stats.kendalltau(x, y)
    return float(res.statistic), float(res.pvalue)


def _trend(points: list[tuple[float, np.ndarray]]) -> str:
    """The direction of the points: a rank test of their instances against x.

    ``"falls"`` or ``"rises"`` when :func:`_kendall` is significant at :data:`TREND_LEVEL`
    (two-sided), else ``"no clear trend"``; ``"n/a"`` below 3 points.

    A rank test over instances, not monotonicity of the means: one point out of order still
    shows a trend when the instances of the others fall, and a point with few instances
    weighs little.
    """
    return _trend_word(_kendall(points))


def _trend_word(kt: tuple[float, float] | None) -> str:
    if kt is None or not np.isfinite(kt[1]):
        return "n/a"
    tau, p = kt
    if p < TREND_LEVEL:
        return "falls" if tau < 0 else "rises"
    return "no clear trend"


def _falls_verdict(trend: str, below_one: bool = False) -> str:
    """The verdict on a claim that a gain falls, given :func:`_trend`'s word.

    ``below_one``: the agent's ratio is below 1 (its average's interval lies under 1), so a
    falling ratio is a loss that grows, not a gain that falls: the direction agrees, no more.
    """
    if trend == "falls" and below_one:
        return "direction only: the ratio is below 1, a loss that grows rather than a gain"
    return {"falls": "agrees", "rises": "differs: rises",
            "no clear trend": "not shown: no significant trend"}.get(trend, "n/a")


def _trend_text(points: list[tuple[float, np.ndarray]]) -> str:
    """:func:`_trend` with its statistic and size.

    E.g. ``falls (τ = -0.52 over 51 instances, p = 7.2e-07; 0.94 at 5 to 0.76 at 300)``: the
    first and last point's means.
    """
    kt = _kendall(points)
    word = _trend_word(kt)
    if kt is None or word == "n/a":
        return word
    pts = sorted(points, key=lambda p: p[0])
    n = sum(len(m) for _, m in pts)
    return (f"{word} (τ = {kt[0]:.2f} over {n} instances, p = {kt[1]:.2g}; "
            f"{float(np.mean(pts[0][1])):.2f} at {pts[0][0]:g} to "
            f"{float(np.mean(pts[-1][1])):.2f} at {pts[-1][0]:g})")


def _full_protocol_estimate(cfg: PaperConfig, results: dict[str, dict]) -> list[str]:
    """Measured cost per instance (set-up) and per day (rollouts), extrapolated to 30 x 100.

    Both costs are taken at the point of this run with the most passengers and scaled linearly
    in passengers to each point of the full protocol (:class:`PaperConfig` defaults).
    """
    full = PaperConfig()
    lines = []
    total = 0.0
    for name, res in results.items():
        col: _Collector | None = res.get("collector")
        if col is None or not col.episode_s:
            continue
        ref = max(col.passengers, key=lambda k: col.passengers[k])
        setup_pp = col.setup_s[ref] / col.passengers[ref]
        day_pp = col.episode_s[ref] / col.passengers[ref]
        if name == "fig1":
            pax = [_passengers(n, None) for n in full.flights]
        elif name == "fig2":
            pax = [_passengers(full.risk_flights, None)] * len(full.risk_scales)
        else:
            pax = [_passengers(full.sigma_flights, s) for s in full.sigmas]
        n_inst = len(_instances(full, name))
        secs = sum(p * (setup_pp * n_inst + day_pp * n_inst * full.days) for p in pax)
        total += secs
        lines.append(
            f"| {name} | {ref} ({col.passengers[ref]:.0f} passengers) | {col.setup_s[ref]:.2f} | "
            f"{col.episode_s[ref]:.2f} | {len(pax)} points, up to {max(pax)} passengers | "
            f"{secs / 3600:.1f} h |"
        )
    lines.append(f"| total | | | | | {total / 3600:.1f} h (one process) |")
    return lines


def _progress(results: dict[str, dict]) -> list[str]:
    """Units done against the full protocol per experiment, and the time the rest would take.

    The rest is estimated per point from its own units' mean time (set-up, training and
    rollouts, as measured here); a point with no unit yet is counted as unknown.
    """
    full = PaperConfig()
    settings = _settings(full)
    lines = ["## Progress toward the full protocol", "",
             "| experiment | units done / full protocol | process-hours so far | "
             "remaining, estimated (one process) |", "|---|---|---|---|"]
    for fig in ("fig1", "fig2", "fig4"):
        col: _Collector | None = results[fig].get("collector")
        if col is None:
            continue
        n_full = len(_instances(full, fig))
        done = spent = rest = 0.0
        unknown = []
        for st in settings[fig]:
            times = col.unit_s.get(st.slug, [])
            done += len(times)
            spent += sum(times)
            left = max(n_full - len(times), 0)
            if left and times:
                rest += left * float(np.mean(times))
            elif left:
                unknown.append(st.slug)
        total = n_full * len(settings[fig])
        rest_text = f"{rest / 3600:.1f} h" + (
            f" + {len(unknown)} point(s) not started ({', '.join(unknown)})" if unknown else "")
        lines.append(f"| {fig} | {done:.0f} / {total} | {spent / 3600:.1f} | {rest_text} |")
    return [*lines, ""]


@functools.cache
def _passengers(n_flights: int, sigma: float | None) -> int:
    """Passengers of instance 0 of a setting (the game only: no polytopes).

    Cached: drawing a single-window game runs its calibration's LPs (about 20 s at 300
    flights), and every summary asks for the same settings.
    """
    from tsg_envs.game import GameConfig
    from tsg_envs.instances import make_game
    from tsg_envs.registration import PRESETS

    preset = PRESETS[_BASE_ID]
    changes: dict[str, Any] = {"n_flights": n_flights, "horizon": preset.horizon}
    changes["arrival_std"] = preset.arrival_std if sigma is None else sigma
    return int(make_game(GameConfig().replace(**changes), 0).n_passengers)


def _ci(r: dict[str, Any]) -> str:
    """``mean [low, high]``; † marks a point with one instance (its days-only interval)."""
    mark = "†" if r.get("interval") == "days" else ""
    return f"{r['mean']:.2f} [{r['mean_low']:.2f}, {r['mean_high']:.2f}]{mark}"


def _average(cfg: PaperConfig, result: dict[str, Any], agent: str,
             value: str = "ratio_vs_lp") -> dict[str, Any] | None:
    """``agent``'s ``value`` averaged over an experiment's points, with its interval.

    See :func:`_mean_over_points`: the points with two instances or more, each with all of its
    instances; None when no point has two.
    """
    return _mean_over_points([(inst, m) for _, inst, m in _agent_points(cfg, result, agent,
                                                                          value)])


def _average_text(avg: dict[str, Any] | None) -> str:
    if avg is None:
        return "n/a (no two instances common to the points)"
    return f"{avg['mean']:.2f} [{avg['low']:.2f}, {avg['high']:.2f}]"


def _instance_range(avg: dict[str, Any]) -> str:
    """``7`` or ``2-12``: the fewest and most instances of the points in an average."""
    lo, hi = avg["n_instances"], avg.get("n_instances_max", avg["n_instances"])
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _below_one(avg: dict[str, Any] | None) -> bool:
    return avg is not None and avg["high"] < 1.0


def _claims_table(cfg: PaperConfig, results: dict[str, dict]) -> list[str]:
    """The paper's claims about α-DDPG beside ours (means with 95% intervals per point)."""
    agent = "alpha-ddpg"
    if agent not in _agent_names(cfg):
        return ["The paper's claims are about α-DDPG, which this run does not include "
                "(`--train-adaptive`); the table of claims is left out.", ""]
    rows: list[str] = []

    def per_point(summary: list[dict[str, Any]], name: str, unit: str) -> str:
        pts = sorted((r for r in summary if r["agent"] == name and r["metric"] == "ratio_vs_lp"),
                     key=lambda r: r["x"])
        return "; ".join(f"{r['x']:g}{unit}: {_ci(r)}" for r in pts) or "not run"

    f1 = results["fig1"]["summary"]
    f4 = results["fig4"]["summary"]
    sel = [r for r in f1 if r["agent"] == agent]
    if sel:
        avg = _average(cfg, results["fig1"], agent)
        best = max(sel, key=lambda r: r["best_instance"])
        claim = PAPER["ratio_average"]
        verdict = ("n/a" if avg is None
                   else "agrees" if avg["mean"] >= claim
                   else "consistent: the interval reaches 1.25" if avg["high"] >= claim
                   else "differs: below the LP" if avg["high"] < 1.0
                   else "differs: smaller gain")
        where = ("" if avg is None else f" over {avg['n_points']} flight counts × "
                 f"{_instance_range(avg)} instances")
        rows.append(f"| fig 1: α-DDPG's ratio LP / α-DDPG averages 1.25 over flight counts | "
                    f"{_average_text(avg)}{where} (per point: {per_point(f1, agent, 'F')}) | "
                    f"{verdict} |")
        rows.append(f"| fig 1: best instance 2.0 | {best['best_instance']:.2f} (the largest "
                    f"instance mean at any point; at {best['x']:g} flights) | "
                    f"{'agrees' if best['best_instance'] >= 2.0 else 'differs'} |")
        tp = _trend_points(cfg, results["fig1"], agent)
        rows.append(f"| fig 1: the gain falls as flights grow | {_trend_text(tp)} | "
                    f"{_falls_verdict(_trend(tp), _below_one(avg))} |")
    if any(r["agent"] == agent for r in f4):
        tp = _trend_points(cfg, results["fig4"], agent)
        avg4 = _average(cfg, results["fig4"], agent)
        rows.append(f"| fig 4: the gain falls as the arrival spread grows | "
                    f"{_trend_text(tp)}"
                    f"; per 2σ in hours: {per_point(f4, agent, ' h')} | "
                    f"{_falls_verdict(_trend(tp), _below_one(avg4))} |")
    frac = [r for r in results["fig2"]["summary"]
            if r["metric"] == "fraction_of_base" and r["agent"] == agent]
    if frac:
        pts = sorted(frac, key=lambda r: r["x"])
        tp = _trend_points(cfg, results["fig2"], agent, "fraction_of_base")
        trend = _trend(tp)
        rows.append(f"| fig 2: α-DDPG's delay falls as the risk allowance grows | "
                    f"{_trend_text(tp)}"
                    f"; wait at {pts[-1]['x']:g} ψ^LP: {_ci(pts[-1])} of its wait at "
                    f"{pts[0]['x']:g} ψ^LP | "
                    f"{_falls_verdict(trend)} |")
    by_machine: dict[str, dict[int, list[float]]] = {}
    for r in results["fig3"]["summary"]:
        if r.get("status") == "ok" and r.get("source") == "curve":
            by_machine.setdefault(r.get("machine") or _UNRECORDED, {}).setdefault(
                int(r["flights"]), []).append(float(r["seconds_to_10k_steps"]))
    shares = {k: [x for run in runs if (x := _late_share(run, PAPER["steps_to_converge"]))
                  is not None] for k, runs in results["fig3"].get("losses", {}).items()
              if k is not None}
    shares = {k: v for k, v in sorted(shares.items()) if v}
    if shares:
        rows.append(
            "| fig 3: converged by about 10,000 mini-batches, whatever the size | share of the "
            "actor loss's change (first log to 10,000) made after 5,000: "
            + "; ".join(f"{k}F: {np.mean(v):.2f}" for k, v in shares.items())
            + " | the actor loss is -Q, which moves while the critic still learns: "
            "a small share is a flat curve, not a proof of convergence |")
    fits = [f"{machine}: {_time_fit_text(by_flights)}"
            for machine, by_flights in sorted(by_machine.items(),
                                              key=lambda kv: (kv[0] == _UNRECORDED, kv[0]))
            if len(by_flights) >= 2]
    if fits:
        rows.append("| fig 3: training time is linear in flights | " + " — ".join(fits)
                    + " | affine: a fixed cost per mini-batch plus a share per flight |")
    if not rows:
        return []
    avgs = {name: _average(cfg, results["fig1"], name)
            for name in ("slack-lp", "slack-guided", agent) if any(r["agent"] == name for r in f1)}
    avgs = {k: v for k, v in avgs.items() if v is not None}
    why = [
        "**Where ours differ, and what differs underneath.** Our static LP is not the paper's: "
        "among its risk-optimal allocations it takes the least peak utilisation (then a unique "
        "point), a stronger baseline than whichever optimal vertex a solver returns, and the "
        "single-window family is recalibrated so that capacity binds on every instance without "
        "overload (`docs/model.md`). α-DDPG is trained once per instance (seed 0) for 10,000 "
        "mini-batches, with γ = 0.95 per passenger (the γ study in the README)."]
    if {"slack-lp", agent} <= avgs.keys():
        sentence = (f"On experiment 1 the static slack LP averages "
                    f"{_average_text(avgs['slack-lp'])}x the LP (the risk budget the LP leaves "
                    "unused)")
        if "slack-guided" in avgs:
            by_x = {(r["x"], r["agent"]): r["mean"] for r in f1}
            xs = sorted({x for x, name in by_x if name == agent and (x, "slack-guided") in by_x})
            above = sum(by_x[(x, "slack-guided")] > by_x[(x, agent)] for x in xs)
            sentence += (f", slack-guided, adapting online without learning, "
                         f"{_average_text(avgs['slack-guided'])}x, and α-DDPG "
                         f"{_average_text(avgs[agent])}x: slack-guided is above α-DDPG at "
                         f"{above} of {len(xs)} flight counts, so on this family adapting "
                         + ("gains little over the unused budget, and α-DDPG falls short of "
                            "what adapting reaches" if above == len(xs) else
                            "and learning trade places across flight counts") + ".")
        else:
            sentence += f", and α-DDPG {_average_text(avgs[agent])}x."
        why.append(sentence)
    return ["## The paper's claims beside ours", "",
            "Means over (instances × days). Intervals are 95% Student-t intervals over the "
            "instances' means (n - 1 degrees of freedom): they cover another draw of instances "
            "from the family. † marks a point with one instance so far: one game, whose interval "
            "resamples its days only; it is shown but left out of averages and trends. An "
            "average over points is the mean of the point means, each over all of its instances; "
            "its interval pairs the points over the instances they share (a lagging point counts "
            "with the instances it has) and uses the effective number of instances, less one, as "
            "degrees of freedom (n - 1 when every point has n). A trend is the Jonckheere–Terpstra "
            "test of the instances' means against x (Kendall's τ_b over every instance of every "
            "point, so a point weighs as many instances as it has), "
            f"called a fall or a rise at p < {TREND_LEVEL:g} (two-sided), with the first and "
            "last point's means for its size. The paper gives point values only.", "",
            "| the paper | ours | verdict |", "|---|---|---|", *rows, "", " ".join(why), ""]


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _instance_counts(summary: list[dict[str, Any]], unit: str, asked: int) -> str:
    """How many instances the points of one experiment have, for the summary's protocol line.

    E.g. "5 instances", or "5 instances at 5, 10 and 20 flights, 1 at 300 flights".
    """
    per_x: dict[float, int] = {}
    for r in summary:
        per_x[r["x"]] = max(per_x.get(r["x"], 0), int(r["n_instances"]))
    counts = sorted(set(per_x.values()), reverse=True)
    if not counts:
        return f"no instance yet ({asked} asked)"
    if len(counts) == 1:
        return _n(counts[0], "instance")
    parts = []
    for n in counts:
        xs = [f"{x:g}" for x in sorted(x for x, k in per_x.items() if k == n)]
        where = xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]
        parts.append(f"{_n(n, 'instance') if not parts else n} at {where} {unit}")
    return ", ".join(parts)


#: The packages a unit's software stack is named by in the summary.
_STACK = ("torch", "numpy", "scipy", "highspy", "tianshou")


#: How the summary names the machine of units that did not record theirs.
_UNRECORDED = "machine not recorded"


def _machine(unit: dict[str, Any]) -> str:
    """The machine a unit was computed on, ``CPU model (N CPUs)``, for grouping its timings."""
    prov = unit.get("provenance")
    if not isinstance(prov, dict):
        return _UNRECORDED
    hw = prov.get("hardware") or {}
    return f"{hw.get('processor') or 'unknown CPU'} ({hw.get('cpu_count')} CPUs)"


def _provenance_table(units: list[dict[str, Any]]) -> list[str]:
    """Where the units were computed: one row per machine and software stack.

    A unit records :func:`tsg_envs.provenance.provenance` when it is computed (the code's
    commit, the packages, Python, the CPU and its count); units computed before that was kept
    are counted on a row of their own. Timings (set-up, training, rollouts) depend on the
    machine and on what shared its cores, so they compare only within a row.
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for u in units:
        prov = u.get("provenance")
        soft = ""
        if isinstance(prov, dict):
            pk = prov.get("packages") or {}
            soft = (f"Python {prov.get('python')}; "
                    + ", ".join(f"{n} {pk.get(n)}" for n in _STACK))
        groups.setdefault((_machine(u), soft), []).append(u)
    lines = [
        "## Where the units were computed",
        "",
        "| machine | software | code (commits) | units | process-hours |",
        "|---|---|---|---|---|",
    ]
    # the most units first; units without a record last
    order = sorted(groups.items(), key=lambda kv: (not kv[0][1], -len(kv[1])))
    for (machine, soft), us in order:
        stamped = sorted((u["provenance"].get("created_utc") or "",
                           (u["provenance"].get("git_commit") or "no git")[:7]
                           + ("+dirty" if u["provenance"].get("git_dirty") else ""))
                          for u in us if isinstance(u.get("provenance"), dict))
        commits = list(dict.fromkeys(c for _, c in stamped))  # in the order first used
        code = ", ".join(commits[:3]) + (f" and {len(commits) - 3} more" if len(commits) > 3
                                         else "")
        hours = sum(_unit_seconds(u) for u in us) / 3600
        if machine == _UNRECORDED:
            machine += " (units computed before they kept their provenance)"
        lines.append(f"| {machine} | {soft or '-'} | {code or '-'} | {len(us)} | "
                     f"{hours:.1f} |")
    return [*lines, ""]


def _write_summary(cfg: PaperConfig, out: Path, results: dict[str, dict], wall: float,
                   unit_s: float = 0.0, units: list[dict[str, Any]] = ()) -> Path:
    fig1 = _instance_counts([r for r in results["fig1"]["summary"] if r["agent"] == "lp"]
                            or results["fig1"]["summary"], "flights", len(cfg.instances))
    counts = sorted({int(r["n_instances"]) for key in ("fig2", "fig4")
                     for r in results[key]["summary"]})
    others = ("no instance yet" if not counts else f"{counts[0]}" if len(counts) == 1
              else f"{counts[0]}-{counts[-1]} instances")
    lines = [
        "# The paper's experiments, rerun",
        "",
        f"Protocol: {fig1} (experiment 1; {others} for experiments 2 and 4) x {cfg.days} days "
        "per point"
        f"{QUICK_NOTE if cfg.quick else ''}. Its units took {unit_s / 3600:.2f} hours of one "
        "process (set-up, training and rollouts, summed over the units, whenever each was "
        "computed); "
        f"this call took {wall:.0f} s. Ratios are LP mean wait / agent mean wait on "
        "the same instance and day; intervals are 95% Student-t intervals over instances "
        "(see below).",
        "",
        "Experiments 1 and 4: the delay ratio against the LP.",
        "",
        "| experiment | agent | ours: mean over points [95% interval] | ours: largest "
        "instance mean (any point) | ours: trend | paper |",
        "|---|---|---|---|---|---|",
    ]
    for key, trend_name in (("fig1", "trend_flights"), ("fig4", "trend_sigma")):
        summary = results[key]["summary"]
        for agent in _agent_names(cfg):
            sel = [r for r in summary if r["agent"] == agent]
            if not sel:
                continue
            best = max(r["best_instance"] for r in sel)
            lines.append(
                f"| {key} | {_label(cfg, agent)} | "
                f"{_average_text(_average(cfg, results[key], agent))} | {best:.2f} | "
                f"{_trend_text(_trend_points(cfg, results[key], agent))} | 1.25 average, "
                f"2.0 best; "
                f"{PAPER[trend_name]} |"
            )
    frac = [r for r in results["fig2"]["summary"] if r["metric"] == "fraction_of_base"]
    rows2 = []
    for agent in _agent_names(cfg):
        pts = sorted((r for r in frac if r["agent"] == agent), key=lambda r: r["x"])
        if pts:
            rows2.append(
                f"| {_label(cfg, agent)} | {_ci(pts[-1])} | "
                f"{_trend_text(_trend_points(cfg, results['fig2'], agent, 'fraction_of_base'))}"
                " | delay falls as the allowance grows |"
            )
    if rows2:
        lo, hi = (f"{x:g}" for x in (min(cfg.risk_scales), max(cfg.risk_scales)))
        lines += [
            "",
            f"Experiment 2: each day's mean wait at ψ = s ψ^LP over the same day's at "
            f"s = {lo}, averaged over days and instances.",
            "",
            f"| agent | ours: at s = {hi} [95% interval] | ours: trend in s | paper |",
            "|---|---|---|---|",
            *rows2,
        ]
    fig3 = results["fig3"]["summary"]
    timed = [r for r in fig3 if r.get("status") == "ok"]
    counts = sorted({int(r["flights"]) for r in timed})
    if timed:
        status = (f"{_n(len(timed), 'run')} timed to 10,000 mini-batches at "
                  f"{_n(len(counts), 'flight count')} ({', '.join(map(str, counts))})")
    else:
        status = "missing (no α-DDPG training reached 10,000 mini-batches)"
    if any(r.get("status") == "missing" for r in fig3):
        status += "; " + "; ".join(r["reason"] for r in fig3 if r.get("status") == "missing")
    lines += ["", f"Training time against flights (fig3): {status}.", ""]
    lines += _claims_table(cfg, results)
    missing = {}
    for res in results.values():
        col = res.get("collector")
        if col is not None:
            missing.update(col.missing)
    if missing:
        lines += ["Agents missing: " + "; ".join(f"{k}: {v}" for k, v in missing.items()), ""]
    trained = [(k, slug, secs, res["collector"].train_n[slug]) for k, res in results.items()
               if res.get("collector") is not None
               for slug, secs in res["collector"].train_s.items()]
    if trained:
        total = sum(secs * n for _, _, secs, n in trained)
        lines += [
            f"α-DDPG training per instance ({cfg.adaptive_gradient_steps:,} mini-batches, "
            f"seed 0; mean seconds per instance; {total / 3600:.2f} CPU-hours in all for this "
            "run's units, counting every unit once even when it was cached):",
            "",
            "| experiment | point | instances | training s / instance |",
            "|---|---|---|---|",
            *[f"| {k} | {slug} | {n} | {secs:.0f} |" for k, slug, secs, n in trained],
            "",
        ]
    lines += [
        "## Runtime of the full protocol (30 instances x 100 days; 10 x 100 for experiments 2 "
        "and 4), without training",
        "",
        "One unit of work measured at the largest point run here: the set-up of one instance "
        "(environment, polytopes, LP and every agent's solve) and one day (the LP's and every "
        "agent's rollout); both scaled linearly in passengers to each point of the full "
        "protocol, times its instances and instances x 100 days (α-DDPG's training, when it is "
        "run, is listed above per instance):",
        "",
        "| experiment | measured at | set-up s / instance | s / day (all agents) | "
        "full protocol | extrapolated |",
        "|---|---|---|---|---|---|",
        *_full_protocol_estimate(cfg, results),
        "",
    ]
    if not cfg.quick:
        lines += _progress(results)
    if units:
        lines += _provenance_table(list(units))
    path = out / "summary.md"
    path.write_text("\n".join(lines))
    return path


def run_paper(cfg: PaperConfig, out: Path, progress: bool = True, workers: int = 1,
              backend: str = "local", address: str | None = None) -> list[Path]:
    """Run the four experiments and write their PNG, CSV and ``summary.md`` under ``out``.

    Each (experiment, point, instance) unit is cached under ``out/units/`` as soon as it
    finishes and reused while its key (:func:`unit_key`) matches, so an interrupted run resumes
    where it stopped and a run can be completed in chunks, or spread over ``workers`` local
    processes or Ray tasks (``backend="ray"``, a local Ray or the cluster at ``address``).
    Units are computed instance by instance, every point of an instance before the next one.

    Returns:
        The written paths.
    """
    from tqdm.auto import tqdm

    from leaderboard.evaluate import map_units

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = _settings(cfg)
    units = [(fig, st, inst) for fig, sts in settings.items() for st in sts
             for inst in _instances(cfg, fig)]
    done: dict[int, dict[str, Any]] = {}
    todo: list[int] = []
    for i, (fig, st, inst) in enumerate(units):
        cached = _load_unit(unit_path(out, fig, st, inst), unit_key(cfg, st, inst))
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
               disable=not progress)

    def keep(j: int, result: dict[str, Any]) -> None:
        i = todo[j]
        fig, st, inst = units[i]
        _save_unit(unit_path(out, fig, st, inst), result)
        done[i] = result
        bar.update(1)

    t0 = time.perf_counter()
    map_units(paper_unit, [(cfg, units[i][1], units[i][2]) for i in todo], workers=workers,
              backend=backend, address=address, on_result=keep)
    bar.close()
    cols = {fig: _collect([done[i] for i, u in enumerate(units) if u[0] == fig and i in done])
            for fig in settings}
    results = {
        "fig1": _experiment_flights(cfg, out, cols["fig1"]),
        "fig2": _experiment_risk(cfg, out, cols["fig2"]),
        "fig3": _experiment_training(
            cfg, out, [(str(unit_path(out, *units[i])), done[i]) for i in sorted(done)
                       if units[i][0] == "fig1" and done[i].get("curve")]),
        "fig4": _experiment_sigma(cfg, out, cols["fig4"]),
    }
    unit_s = sum(_unit_seconds(u) for u in done.values())
    summary = _write_summary(cfg, out, results, time.perf_counter() - t0, unit_s,
                             [done[i] for i in sorted(done)])
    return sorted(out.glob("fig*.png")) + sorted(out.glob("fig*.csv")) + [summary]


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
    from leaderboard.verify import records_difference

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
                 rtol: float | None = None, progress: bool = True) -> list[UnitCheck]:
    """Compute ``count`` cached units again from scratch and compare them with the cache.

    The units are drawn (``numpy.random.default_rng(seed)``, without replacement) from the
    cached units of ``cfg.figures`` whose key matches ``cfg``; α-DDPG, when the configuration
    trains it, is trained again in a fresh scratch folder (never resumed from ``train_dir``).
    A unit reproduces when every row, count and name is equal and every number is within a
    relative ``rtol`` (default :data:`leaderboard.verify.DEFAULT_RTOL`) of the cached one, as
    ``python -m leaderboard verify`` judges a leaderboard row; the verdict says whether it did
    bit for bit.

    Raises:
        ValueError: when no cached unit of ``cfg.figures`` matches ``cfg``.
    """
    import tempfile

    from tqdm.auto import tqdm

    from leaderboard.verify import DEFAULT_RTOL

    rtol = DEFAULT_RTOL if rtol is None else float(rtol)
    out = Path(out)
    cached = []
    for fig, sts in _settings(cfg).items():
        if fig not in cfg.figures:
            continue
        for st in sts:
            for inst in _instances(cfg, fig):
                path = unit_path(out, fig, st, inst)
                doc = _load_unit(path, unit_key(cfg, st, inst))
                if doc is not None:
                    cached.append((path, st, inst, doc))
    if not cached:
        raise ValueError(f"no cached unit of {', '.join(cfg.figures) or 'no experiment'} under "
                         f"{out / 'units'} matches this configuration (its key)")
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(cached), size=min(count, len(cached)), replace=False))
    checks = []
    with tempfile.TemporaryDirectory(prefix="paper-verify-") as scratch:
        fresh_cfg = cfg.replace(train_dir=scratch)
        for i in tqdm(picked, desc="units computed again", unit="unit", disable=not progress):
            path, st, inst, doc = cached[i]
            ok, exact, message = _unit_verdict(doc, paper_unit((fresh_cfg, st, inst)), rtol)
            checks.append(UnitCheck(path, ok, exact, message))
    return checks
