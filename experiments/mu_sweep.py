"""Sweep μ of the slack-guided LP (how its default was chosen); prints a table.

Usage::

    .venv/bin/python -m experiments.mu_sweep [--instances 0 1] [--days 5]

For each μ, the slack-guided agent's mean wait over the instances × days (seeds 10_000 + k),
next to the slack LP (μ → ∞) and the LP. Results on a 2-core CPU box are quoted in
``baselines/slack_guided.py``.
"""

from __future__ import annotations

import argparse

import numpy as np

from baselines import slack_guided, slack_lp
from baselines.evaluate import evaluate
from tsg_envs.seeds import evaluation_day_seeds


def main() -> None:
    """Run the sweep."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--env", default="tsg/Screening-v1")
    p.add_argument("--instances", type=int, nargs="+", default=[0, 1])
    p.add_argument("--days", type=int, default=5)
    p.add_argument("--mus", type=float, nargs="+", default=[0, 0.1, 0.3, 1, 3, 10, 100])
    args = p.parse_args()
    days = evaluation_day_seeds(args.days)
    guides: dict[int, slack_lp.SlackLPSolution] = {}

    def factory(mu: float):
        def make(env):
            seed = env.unwrapped.instance_seed
            if seed not in guides:
                guides[seed] = slack_lp.slack_lp_for_env(env)
            cfg = slack_guided.SlackGuidedConfig(mu=mu)
            return slack_guided.SlackGuidedAgent(env, cfg, guide=guides[seed])

        return make

    def slack_factory(env):
        seed = env.unwrapped.instance_seed
        if seed not in guides:
            guides[seed] = slack_lp.slack_lp_for_env(env)
        return slack_lp.SlackLPAgent(guides[seed])

    print(f"{'mu':>8} {'mean wait':>10} {'ratio vs LP':>12}  per-instance mean wait")
    rows = [(f"{mu:g}", factory(mu)) for mu in args.mus] + [("slack-lp", slack_factory)]
    for label, make in rows:
        res = evaluate(make, args.env, args.instances, days, references=("lp",))
        s = res.summary()
        per = [np.mean([r.mean_wait for r in res.records if r.instance_seed == i])
               for i in args.instances]
        print(f"{label:>8} {s['mean_wait']:10.4f} {s['ratio_lp']:12.3f}  "
              + " ".join(f"{w:.3f}" for w in per), flush=True)


if __name__ == "__main__":
    main()
