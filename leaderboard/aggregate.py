"""Aggregation across instances: IQM with 95% stratified-bootstrap intervals (rliable).

**Runs and tasks.** rliable expects a score matrix of shape (runs, tasks). Here a *task* is one
game instance, i.e. one (environment id, instance seed) unit of the suite, and a *run* is one
arrival day (arrival seed) on it: the source of randomness an evaluation repeats. Every unit of
a suite sees the same number of days, so the matrix is (days, units). The interquartile mean
(IQM) is taken over all its entries; the interval is rliable's stratified bootstrap, which
resamples days within each instance (``task_bootstrap=False``): it measures the uncertainty
from the finite sample of days on these instances. Instances enter as strata, not as a sample
of a larger population; the full suite's 10 instances per id keep that population broad.

Per-episode scores: ``mean_wait`` (minutes, lower is better), ``p95_wait``, and the delay
ratios ``ratio_vs_lp`` = LP mean wait / agent mean wait and ``ratio_vs_slack_guided`` =
slack-guided mean wait / agent mean wait, both on the same instance and day (higher is better;
the paper reports the first: 1.25 average, 2.0 best).

rliable's ``StratifiedBootstrap`` draws its indices from the global ``np.random`` even when it
is given a ``random_state`` (rliable 1.2.0), which would make the intervals differ from run to
run. :class:`_SeededStratifiedBootstrap` keeps rliable's resampling scheme and draws from an
explicit generator instead, so intervals are deterministic (seed :data:`BOOTSTRAP_SEED`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["BOOTSTRAP_REPS", "BOOTSTRAP_SEED", "CI_SIZE", "MAX_REPS", "iqm_interval",
           "rliable_interval", "profile_interval", "aggregate_units", "aggregate_defenders"]

#: Bootstrap replications for every interval.
BOOTSTRAP_REPS: int = 2_000
#: Seed of the bootstrap generator (intervals are deterministic).
BOOTSTRAP_SEED: int = 0
#: Coverage of the intervals.
CI_SIZE: float = 0.95
#: Most bootstrap replications a result may ask for (``--reps``; a stored result's ``reps``
#: beyond it is not recomputed as asked).
MAX_REPS: int = 100_000


def iqm_interval(
    scores: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> dict[str, float]:
    """IQM, mean and their 95% stratified-bootstrap intervals of a (runs, tasks) matrix.

    rliable's scheme (``StratifiedBootstrap`` with ``task_bootstrap=False``, percentile
    intervals, ``aggregate_iqm`` and ``aggregate_mean``), computed for all replications at once:
    replication r resamples the runs within each task with the r-th draw
    ``generator.choice(runs, (runs, tasks))`` of ``numpy.random.default_rng(seed)``, exactly the
    draws rliable makes through :class:`_SeededStratifiedBootstrap`'s ``update_indices``, so the
    intervals equal rliable's bit for bit (a test holds the two equal) at a tenth of the time:
    ``render`` and ``verify`` recompute every committed result's intervals on load.

    Args:
        scores: (runs, tasks) finite scores.
        reps: Bootstrap replications.
        seed: Seed of the bootstrap's generator.

    Returns:
        ``{"iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high"}``.
    """
    from scipy import stats

    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.size == 0:
        raise ValueError(f"scores must be a non-empty (runs, tasks) matrix, got {scores.shape}")
    runs, tasks = scores.shape
    point = (float(stats.trim_mean(scores, proportiontocut=0.25, axis=None)),
             float(np.mean(np.mean(scores, axis=0), axis=0)))
    if runs < 2 or np.ptp(scores) == 0:
        low = high = point  # nothing to resample
    else:
        gen = np.random.default_rng(seed)
        # rliable draws generator.choice(runs, (runs, tasks)) once per replication; that is
        # generator.integers(0, runs, (runs, tasks)), and numpy's bounded integers are the same
        # stream drawn in one call or many (a test holds the two equal), so draw them all at once.
        idx = gen.integers(0, runs, size=(reps, runs, tasks))
        res = scores[idx, np.arange(tasks)]  # (reps, runs, tasks)
        flat = res.reshape(reps, -1)
        cut = int(0.25 * flat.shape[1])  # scipy's trim_mean, row by row
        part = np.partition(flat, (cut, flat.shape[1] - cut - 1), axis=1)
        iqm = np.mean(part[:, cut:flat.shape[1] - cut], axis=1)
        mean = np.mean(np.mean(res, axis=1), axis=1)
        alpha = (1.0 - CI_SIZE) / 2  # arch's percentile interval
        pct = [100 * alpha, 100 * (1.0 - alpha)]
        (l0, h0), (l1, h1) = np.percentile(iqm, pct), np.percentile(mean, pct)
        low, high = (float(l0), float(l1)), (float(h0), float(h1))
    return {
        "iqm": point[0],
        "iqm_low": float(low[0]),
        "iqm_high": float(high[0]),
        "mean": point[1],
        "mean_low": float(low[1]),
        "mean_high": float(high[1]),
    }


def rliable_interval(
    scores: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> dict[str, float]:
    """:func:`iqm_interval` through rliable itself (slow; the reference the tests compare with)."""
    from rliable import metrics

    scores = np.asarray(scores, dtype=float)

    def func(x: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x)])

    point = func(scores)
    if scores.shape[0] < 2 or np.ptp(scores) == 0:
        low = high = point
    else:
        bs = _bootstrap_class()(scores, seed=np.random.default_rng(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = bs.conf_int(func, reps=reps, size=CI_SIZE, method="percentile")
        low, high = ci[0], ci[1]
    return {"iqm": float(point[0]), "iqm_low": float(low[0]), "iqm_high": float(high[0]),
            "mean": float(point[1]), "mean_low": float(low[1]), "mean_high": float(high[1])}


def _bootstrap_class() -> type:
    from rliable.library import StratifiedBootstrap

    class _SeededStratifiedBootstrap(StratifiedBootstrap):
        """rliable's stratified bootstrap, drawing indices from ``self.generator``."""

        def update_indices(self) -> tuple[np.ndarray, ...]:
            indices = self.generator.choice(self._num_items, self._args_shape, replace=True)
            return (indices, *self._strata_indices)

    return _SeededStratifiedBootstrap


def profile_interval(
    scores: np.ndarray, taus: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """A performance profile and its 95% stratified-bootstrap band, deterministically.

    The profile is rliable's score distribution (the fraction of all (run, task) scores above
    each τ); the band resamples runs within each task as :func:`iqm_interval` does, from a
    generator seeded with ``seed``, so the same scores always give the same band (rliable's own
    ``create_performance_profile`` draws from the global ``np.random``).

    Args:
        scores: (runs, tasks) finite scores.
        taus: Thresholds τ, 1-D.
        reps: Bootstrap replications.
        seed: Seed of the bootstrap's generator.

    Returns:
        (profile of shape (len(taus),), band of shape (2, len(taus)): lower and upper).
    """
    from rliable.library import score_distributions

    scores = np.asarray(scores, dtype=float)
    taus = np.asarray(taus, dtype=float)

    def func(x: np.ndarray) -> np.ndarray:
        return score_distributions(x, taus)

    profile = func(scores)
    if scores.shape[0] < 2 or np.ptp(scores) == 0:
        return profile, np.stack([profile, profile])
    bs = _bootstrap_class()(scores, seed=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ci = bs.conf_int(func, reps=reps, size=CI_SIZE, method="percentile")
    return profile, np.asarray(ci)


def _matrix(units: list[dict[str, Any]], key: str) -> np.ndarray | None:
    """(days, units) matrix of an episode field; None when any entry is missing."""
    cols = []
    for unit in units:
        vals = [ep.get(key) for ep in unit["episodes"]]
        if any(v is None for v in vals):
            return None
        cols.append(vals)
    m = np.asarray(cols, dtype=float).T
    return m if np.all(np.isfinite(m)) else None


def aggregate_units(
    units: list[dict[str, Any]], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """The ``aggregate`` block of a result from its completed units.

    Args:
        units: Unit records (see :mod:`leaderboard.evaluate`), each with the same number of
            episodes.
        reps: Bootstrap replications.
        seed: Bootstrap seed.

    Returns:
        Scalar summaries: interval blocks for ``mean_wait``, ``p95_wait``, ``ratio_vs_lp`` and
        ``ratio_vs_slack_guided`` (None when the reference is missing), ``ratio_best`` (the
        best instance's mean ratio vs LP), violation counts, and the worst-case risk summary.
    """
    if not units:
        raise ValueError("no units to aggregate")
    n_days = {len(u["episodes"]) for u in units}
    if len(n_days) != 1:
        raise ValueError(f"units have different numbers of episodes: {sorted(n_days)}")
    out: dict[str, Any] = {
        "n_tasks": len(units),
        "n_runs": n_days.pop(),
        "reps": reps,
        "ci_size": CI_SIZE,
    }
    out["n_episodes"] = out["n_tasks"] * out["n_runs"]
    for key in ("mean_wait", "p95_wait", "ratio_vs_lp", "ratio_vs_slack_guided", "lp_mean_wait"):
        m = _matrix(units, key)
        out[key] = None if m is None else iqm_interval(m, reps=reps, seed=seed)
    ratio = _matrix(units, "ratio_vs_lp")
    out["ratio_vs_lp_best"] = None if ratio is None else float(ratio.mean(axis=0).max())
    eps = [ep for u in units for ep in u["episodes"]]
    out["max_wait"] = float(max(ep["max_wait"] for ep in eps))
    out["proposed_violations"] = int(sum(ep["proposed_violations"] for ep in eps))
    out["executed_violations"] = int(sum(ep["executed_violations"] for ep in eps))
    out["max_violation"] = float(max(ep["max_violation"] for ep in eps))
    risks = [u["risk"] for u in units if u.get("risk") is not None]
    if len(risks) == len(units):
        out["risk"] = {
            "mean": float(np.mean([r["risk"] for r in risks])),
            "mean_bound": float(np.mean([r["bound"] for r in risks])),
            "max_over_bound": float(max(r["risk"] / r["bound"] for r in risks)),
            "within_bound": bool(all(r["within_bound"] for r in risks)),
        }
    else:
        out["risk"] = None
    return out


def aggregate_defenders(units: list[dict[str, Any]], reps: int = BOOTSTRAP_REPS,
                        with_reps: bool = True) -> dict[str, dict[str, Any]]:
    """An attacker result's ``defenders`` block: per panel defender, IQM / mean intervals.

    Of the gain, the best response's gain and the fraction of the best response, over (days,
    units).

    Args:
        units: The attacker result's completed units.
        reps: Bootstrap replications.
        with_reps: Record ``reps`` in each block (results written before it was recorded hold
            none, and were computed with :data:`BOOTSTRAP_REPS`).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in units[0]["defenders"]:
        cols: dict[str, list[list[Any]]] = {
            k: [] for k in ("gain", "best_response_gain", "fraction_of_best_response")}
        for unit in units:
            eps = unit["defenders"][name]["episodes"]
            for key in cols:
                cols[key].append([ep[key] for ep in eps])
        block: dict[str, Any] = {}
        for key, col in cols.items():
            if any(v is None for c in col for v in c):
                block[key] = None
                continue
            block[key] = iqm_interval(np.asarray(col, dtype=float).T, reps=reps)
        gains = np.asarray(cols["gain"], dtype=float)
        bests = np.asarray(cols["best_response_gain"], dtype=float)
        block["fraction_of_means"] = (float(gains.mean() / bests.mean())
                                      if bests.mean() > 0 else None)
        strikes = [s for u in units for ep in u["defenders"][name]["episodes"]
                   for s in ep["strike_step"]]
        block["struck"] = float(np.mean([s >= 0 for s in strikes]))
        block["n_episodes"] = int(gains.size)
        if with_reps:
            block["reps"] = int(reps)
        out[name] = block
    return out
