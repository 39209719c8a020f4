"""The statistics of the paper's experiments (as rliable's ``library.py`` is for aggregates).

Rows of the units become one :class:`Collector` per experiment (:func:`collect`); per point and
agent, a (days, instances) matrix of a metric (:func:`point_matrices`) gets its mean with a 95%
Student-t interval over the instances' means (:func:`t_interval`, :func:`summarise`), an
average over points pairs the points over the instances they share (:func:`mean_over_points`,
:func:`average`), and a trend is the Jonckheere–Terpstra rank test of the instances' means
against x (:func:`kendall`, :func:`trend_direction`, :func:`trend_text`). Training time against
flights is a least-squares line through the mean per flight count (:func:`time_fit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments.paper.config import PaperConfig, agent_label
from experiments.paper.units import unit_seconds
from leaderboard.aggregate import CI_SIZE, iqm_interval
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

__all__ = [
    "TREND_LEVEL",
    "rising_at",
    "MIN_FIT_POINTS",
    "Collector",
    "collect",
    "point_matrices",
    "t_interval",
    "summarise",
    "mean_over_points",
    "average",
    "agent_points",
    "trend_points",
    "kendall",
    "trend_direction",
    "falls_verdict",
    "trend_text",
    "time_fit",
    "time_fit_text",
    "late_share",
]


@dataclass
class Collector:
    """Per-episode rows of one experiment, with timings."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    setup_s: dict[str, float] = field(default_factory=dict)
    episode_s: dict[str, float] = field(default_factory=dict)
    passengers: dict[str, float] = field(default_factory=dict)
    train_s: dict[str, float] = field(default_factory=dict)
    train_n: dict[str, int] = field(default_factory=dict)
    unit_s: dict[str, list[float]] = field(default_factory=dict)


def collect(units: list[dict[str, Any]]) -> Collector:
    """A collector of one experiment from its units' results."""
    col = Collector()
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for u in units:
        col.rows += [{**r, "ratio_vs_lp": math.nan if r["ratio_vs_lp"] is None
                      else r["ratio_vs_lp"]} for r in u["rows"]]
        for k, v in u["missing"].items():
            col.missing.setdefault(k, v)
        by_slug.setdefault(u["slug"], []).append(u)
    for slug, us in by_slug.items():
        col.passengers[slug] = float(np.mean([u["passengers"] for u in us]))
        col.unit_s[slug] = [unit_seconds(u) for u in us]
        col.setup_s[slug] = float(np.mean([u["setup_s"] for u in us]))
        col.episode_s[slug] = sum(u["rolling_s"] for u in us) / max(
            1, sum(u["n_days"] for u in us))
        trained = [u["train_s"] for u in us if u.get("train_s") is not None]
        if trained:
            col.train_s[slug] = float(np.mean(trained))
            col.train_n[slug] = len(trained)
    return col


def point_matrices(cfg: PaperConfig, col: Collector,
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
            m[r["arrival_seed"] - LEADERBOARD_SEED_BASE, instances.index(r["instance_seed"])] = r[
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


def summarise(cfg: PaperConfig, col: Collector, value: str) -> list[dict[str, Any]]:
    """Per (x, agent): mean, IQM and 95% intervals of ``value`` over (days, instances).

    ``mean_low``/``mean_high`` are the t-interval over the point's instance means
    (:func:`t_interval`; ``interval`` = ``"instances"``); at a point with one instance only its
    days can be resampled, and they are the days-only bootstrap (``interval`` = ``"days"``).
    The ``*_days`` columns are rliable's stratified bootstrap over days within each instance:
    the uncertainty from the sample of days on these instances alone. ``n_instances`` counts
    the point's instances.
    """
    out = []
    for (x, agent), (_, m) in point_matrices(cfg, col, value).items():
        iv = iqm_interval(m)
        n = m.shape[1]
        low, high = (t_interval(m.mean(axis=0))[1:] if n > 1
                     else (iv["mean_low"], iv["mean_high"]))
        out.append(
            {
                "x": x,
                "agent": agent,
                "label": agent_label(cfg, agent),
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


def mean_over_points(points: list[tuple[list[int], np.ndarray]]) -> dict[str, Any] | None:
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


def average(cfg: PaperConfig, result: dict[str, Any], agent: str,
             value: str = "ratio_vs_lp") -> dict[str, Any] | None:
    """``agent``'s ``value`` averaged over an experiment's points, with its interval.

    See :func:`mean_over_points`: the points with two instances or more, each with all of its
    instances; None when no point has two.
    """
    return mean_over_points([(inst, m) for _, inst, m in agent_points(cfg, result, agent,
                                                                          value)])


#: Two-sided level of the trend test (Jonckheere–Terpstra over the instances' means).
TREND_LEVEL: float = 0.05


def agent_points(cfg: PaperConfig, result: dict[str, Any], agent: str,
                  value: str) -> list[tuple[float, list[int], np.ndarray]]:
    """``agent``'s points of one experiment: (x, instance seeds, (days, instances) matrix)."""
    return [(x, inst, m)
            for (x, name), (inst, m) in point_matrices(cfg, result["collector"], value).items()
            if name == agent]


def trend_points(cfg: PaperConfig, result: dict[str, Any], agent: str,
                  value: str = "ratio_vs_lp") -> list[tuple[float, np.ndarray]]:
    """``agent``'s points with two instances or more: (x, the instances' means of ``value``).

    A one-instance point is one game, not a sample of the family: it is shown, not tested.
    """
    return [(x, m.mean(axis=0)) for x, inst, m in agent_points(cfg, result, agent, value)
            if len(inst) > 1]


def kendall(points: list[tuple[float, np.ndarray]]) -> tuple[float, float] | None:
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


def trend_direction(points: list[tuple[float, np.ndarray]]) -> str:
    """The direction of the points: a rank test of their instances against x.

    ``"falls"`` or ``"rises"`` when :func:`kendall` is significant at :data:`TREND_LEVEL`
    (two-sided), else ``"no clear trend"``; ``"n/a"`` below 3 points.

    A rank test over instances, not monotonicity of the means: one point out of order still
    shows a trend when the instances of the others fall, and a point with few instances
    weighs little.
    """
    return _trend_word(kendall(points))


def _trend_word(kt: tuple[float, float] | None) -> str:
    if kt is None or not np.isfinite(kt[1]):
        return "n/a"
    tau, p = kt
    if p < TREND_LEVEL:
        return "falls" if tau < 0 else "rises"
    return "no clear trend"


def falls_verdict(trend: str, below_one: bool = False) -> str:
    """The verdict on a claim that a gain falls, given :func:`trend_direction`'s word.

    ``below_one``: the agent's ratio is below 1 (its average's interval lies under 1), so a
    falling ratio is a loss that grows, not a gain that falls: the direction agrees, no more.
    """
    if trend == "falls" and below_one:
        return "direction only: the ratio is below 1, a loss that grows rather than a gain"
    return {"falls": "agrees", "rises": "differs: rises",
            "no clear trend": "not shown: no significant trend"}.get(trend, "n/a")


def trend_text(points: list[tuple[float, np.ndarray]]) -> str:
    """:func:`trend_direction` with its statistic and size.

    E.g. ``falls (τ = -0.52 over 51 instances, p = 7.2e-07; 0.94 at 5 to 0.76 at 300)``: the
    first and last point's means.
    """
    kt = kendall(points)
    word = _trend_word(kt)
    if kt is None or word == "n/a":
        return word
    pts = sorted(points, key=lambda p: p[0])
    n = sum(len(m) for _, m in pts)
    return (f"{word} (τ = {kt[0]:.2f} over {n} instances, p = {kt[1]:.2g}; "
            f"{float(np.mean(pts[0][1])):.2f} at {pts[0][0]:g} to "
            f"{float(np.mean(pts[-1][1])):.2f} at {pts[-1][0]:g})")


#: Flight counts a training-time line is fitted through: a line through two means fits them
#: exactly (R² = 1 whatever the times), so it says nothing of linearity.
MIN_FIT_POINTS = 3


def time_fit(per_flights: dict[int, list[float]]) -> tuple[np.ndarray, np.ndarray, float,
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


def time_fit_text(per_flights: dict[int, list[float]]) -> str:
    """The mean training time per flight count (two or more), and its line from three counts on.

    ``{10: [100, 100], 20: [220], 30: [300]}`` reads ``10F: 100 s; 20F: 220 s; 30F: 300 s to
    10,000 mini-batches; least squares 7 s + 10.00 s × flights, R² = 0.99``.
    """
    xs, ys, slope, icpt, r2 = time_fit(per_flights)
    text = "; ".join(f"{int(k)}F: {y:.0f} s" for k, y in zip(xs, ys, strict=True))
    text += " to 10,000 mini-batches"
    if len(xs) < MIN_FIT_POINTS:
        return text + f" ({len(xs)} flight counts: too few to fit a line)"
    return text + f"; least squares {icpt:.0f} s + {slope:.2f} s × flights, R² = {r2:.2f}"


def late_share(losses: list[tuple[float, float]], target: float) -> float | None:
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


def rising_at(losses: list[tuple[float, float]], target: float) -> bool | None:
    """Whether the actor loss still rose over the last logged interval ending at ``target``.

    Returns:
        True when the value at ``target`` (interpolated) is above the last logged value before
        it, False otherwise; None if the run stops short of ``target`` or has no earlier log.
    """
    g = np.array([e[0] for e in losses])
    v = np.array([e[1] for e in losses])
    before = g < target
    if g.max() < target or not before.any():
        return None
    return bool(np.interp(target, g, v) > v[before][np.argmax(g[before])])

