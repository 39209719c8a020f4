r"""Where does es-guided's gain over slack-guided come from: its learned μ, its prices, or both?

Usage::

    .venv/bin/python -m experiments.es_ablation \
        [--runs runs/multiseed/es-guided] [--instances 0 1 2 3 4] [--seeds 0 1 2 3 4] [--days 5]

For every trained (instance, seed) of ``tsg/Screening-v1`` (checkpoints from
``python -m experiments.multiseed --suite screening --plan es-guided=5``), plays the learned
policy, the learned μ with the prices zeroed, and the learned prices at μ = 1, beside
slack-guided (θ = 0), on the baselines' evaluation days 10,000 + k, and writes one row each to
``results/es_guided_ablation.csv``: the ratio slack-guided wait / variant wait, averaged over
the days (higher is better; 1 is no gain).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

FIELDS = ("instance_seed", "seed", "mu", "eval_days", "ratio_learned", "ratio_mu_only",
          "ratio_prices_only")


def main(argv: list[str] | None = None) -> int:
    """Run the ablation and write the CSV."""
    import gymnasium as gym

    import tsg_envs  # noqa: F401
    from baselines.api import get_method
    from baselines.es_guided import ESGuidedAgent, day_mean_wait
    from baselines.slack_guided import make_agent
    from tsg_envs.seeds import evaluation_day_seeds

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", default="runs/multiseed/es-guided")
    p.add_argument("--instances", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--days", type=int, default=5)
    p.add_argument("--out", default="results/es_guided_ablation.csv")
    args = p.parse_args(argv)
    days = evaluation_day_seeds(args.days)
    rows = []
    for inst in args.instances:
        env = gym.make("tsg/Screening-v1", instance_seed=inst)
        sg = make_agent(env)
        base = {d: day_mean_wait(env, sg, d) for d in days}
        for seed in args.seeds:
            path = Path(args.runs) / f"tsg_Screening-v1_i{inst}" / f"s{seed}"
            agent = get_method("es-guided").load(path, env)
            zero = np.zeros_like(agent.prices)
            variants = {
                "ratio_learned": agent,
                "ratio_mu_only": ESGuidedAgent(env, np.r_[agent.theta[0], zero], agent.guide),
                "ratio_prices_only": ESGuidedAgent(env, np.r_[0.0, agent.prices], agent.guide),
            }
            row = {"instance_seed": inst, "seed": seed, "mu": agent.mu, "eval_days": len(days)}
            for key, policy in variants.items():
                row[key] = float(np.mean([base[d] / day_mean_wait(env, policy, d) for d in days]))
            rows.append(row)
            print(row, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    geo = {k: float(np.exp(np.mean([np.log(r[k]) for r in rows]))) for k in FIELDS[4:]}
    print("geometric mean over (instance, seed):", {k: round(v, 4) for k, v in geo.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
