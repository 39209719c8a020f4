"""Mean waits of the non-learning baselines with 95% intervals (the issue-3 closing numbers).

Usage::

    .venv/bin/python -m experiments.nonlearning_results [--instances 0 1 2 3 4] [--days 20]

Evaluates lp, slack-lp, slack-guided, myopic and centre on ``--env`` (default
``tsg/Screening-v1``) over the instances × days (seeds 10_000 + k) with
:func:`baselines.evaluate.evaluate`, so every method faces the same arrival samples. Writes one
row per episode to ``results/baselines_nonlearning.csv`` and one row per method to
``results/baselines_nonlearning_summary.csv``, and prints a Markdown table.

Intervals: 95% percentile bootstrap (10_000 resamples, numpy Generator seeded 0), stratified by
instance (days are resampled within each instance); a ratio's interval resamples the paired
episodes and recomputes the pooled ratio (reference mean wait / method mean wait). Time per
step is the time spent in the agent's ``act`` per passenger (the environment's own step not
included). Worst-case risk: :func:`tsg_envs.risk.worst_case_risk` on the first day of each
instance, probing 50 evenly spaced states, reported as the largest risk / bound over instances.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines import centre, myopic, slack_guided, slack_lp, static_lp
from baselines.evaluate import episode_row, evaluate
from tsg_envs.provenance import git_commit
from tsg_envs.risk import worst_case_risk
from tsg_envs.seeds import evaluation_day_seeds

METHODS = {
    "lp": static_lp.make_agent,
    "slack-lp": slack_lp.make_agent,
    "slack-guided": slack_guided.make_agent,
    "myopic": myopic.make_agent,
    "centre": centre.make_agent,
}


class TimedAgent:
    """Wraps an agent and accumulates the wall time of its ``act`` calls (script use only)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.seconds = 0.0
        self.calls = 0

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The wrapped agent's action, timed."""
        t0 = time.perf_counter()
        a = self.agent.act(obs, info)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return a


def bootstrap(
    strata: np.ndarray, stat, arrays: list[np.ndarray], rng: np.random.Generator, n: int
) -> tuple[float, float]:
    """95% percentile interval of ``stat(*arrays)``, resampling within each stratum."""
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    values = np.empty(n)
    for b in range(n):
        idx = np.concatenate([g[rng.integers(0, g.size, g.size)] for g in groups])
        values[b] = stat(*(x[idx] for x in arrays))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def main() -> None:
    """Run the evaluation and write the CSVs."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--env", default="tsg/Screening-v1")
    p.add_argument("--instances", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--days", type=int, default=20)
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--out", type=Path, default=Path("results"))
    args = p.parse_args()
    days = evaluation_day_seeds(args.days)
    args.out.mkdir(parents=True, exist_ok=True)
    commit = git_commit(short=7, dirty_paths=None) or ""
    episodes, summary = [], []
    for name, make in METHODS.items():
        timers: list[TimedAgent] = []

        def factory(env: gym.Env, make=make, timers=timers) -> TimedAgent:
            timers.append(TimedAgent(make(env)))
            return timers[-1]

        t0 = time.perf_counter()
        res = evaluate(factory, args.env, args.instances, days)
        wall = time.perf_counter() - t0
        risks = []
        for inst in args.instances:
            env = gym.make(args.env, instance_seed=inst)
            rep = worst_case_risk(env, make(env), seed=days[0], max_states=50)
            risks.append(rep.risk / rep.bound)
        recs = [episode_row(r) for r in res.records]
        for r in recs:
            episodes.append({"method": name, **r})
        strata = np.array([r["instance_seed"] for r in recs])
        wait = np.array([r["mean_wait"] for r in recs])
        lp = np.array([r["lp_mean_wait"] for r in recs])
        sg = np.array([r["slack_guided_mean_wait"] for r in recs])
        rng = np.random.default_rng(0)
        s = res.summary()
        row = {
            "method": name,
            "env_id": args.env,
            "episodes": len(recs),
            "mean_wait": s["mean_wait"],
            "mean_wait_lo": None, "mean_wait_hi": None,
            "p95_wait": s["p95_wait"],
            "max_wait": s["max_wait"],
            "ratio_lp": s["ratio_lp"],
            "ratio_lp_lo": None, "ratio_lp_hi": None,
            "ratio_slack_guided": s["ratio_slack_guided"],
            "ratio_slack_guided_lo": None, "ratio_slack_guided_hi": None,
            "proposed_violations": s["proposed_violations"],
            "executed_violations": s["executed_violations"],
            "max_violation": s["max_violation"],
            "worst_risk_over_bound": max(risks),
            "act_ms_per_step": 1e3 * sum(t.seconds for t in timers)
            / max(sum(t.calls for t in timers), 1),
            "wall_seconds": wall,
            "commit": commit,
        }
        row["mean_wait_lo"], row["mean_wait_hi"] = bootstrap(
            strata, np.mean, [wait], rng, args.resamples)
        row["ratio_lp_lo"], row["ratio_lp_hi"] = bootstrap(
            strata, lambda a, b: a.mean() / b.mean(), [lp, wait], rng, args.resamples)
        row["ratio_slack_guided_lo"], row["ratio_slack_guided_hi"] = bootstrap(
            strata, lambda a, b: a.mean() / b.mean(), [sg, wait], rng, args.resamples)
        summary.append(row)
        print(f"{name}: done in {wall:.0f} s", flush=True)

    for path, rows in ((args.out / "baselines_nonlearning.csv", episodes),
                       (args.out / "baselines_nonlearning_summary.csv", summary)):
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    print(f"\n{args.env}, instances {args.instances}, days {days[0]}..{days[-1]} "
          f"(commit {commit})\n")
    print("| method | mean wait (min) [95% CI] | p95 | max | LP/method [95% CI] | "
          "slack-guided/method [95% CI] | viol. prop/exec | risk/bound | act ms/step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in summary:
        print(f"| {r['method']} | {r['mean_wait']:.3f} [{r['mean_wait_lo']:.3f}, "
              f"{r['mean_wait_hi']:.3f}] | {r['p95_wait']:.2f} | {r['max_wait']:.1f} | "
              f"{r['ratio_lp']:.2f} [{r['ratio_lp_lo']:.2f}, {r['ratio_lp_hi']:.2f}] | "
              f"{r['ratio_slack_guided']:.3f} [{r['ratio_slack_guided_lo']:.3f}, "
              f"{r['ratio_slack_guided_hi']:.3f}] | {r['proposed_violations']}/"
              f"{r['executed_violations']} | {r['worst_risk_over_bound']:.4f} | "
              f"{r['act_ms_per_step']:.3f} |")


if __name__ == "__main__":
    main()
