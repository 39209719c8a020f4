r"""Which target trains α-DDPG best toward the paper's objective (the undiscounted mean wait)?

Usage::

    .venv/bin/python -m experiments.gamma_study [--instances 0 1 2] [--seeds 0] \
        [--gradient-steps 10000] [--workers 2]

The paper's objective is the average wait per passenger over a day, undiscounted; one step is
one passenger, so a discount γ = 0.95 looks about 20 passengers ahead. Variants (α-DDPG's
defaults otherwise, the paper's budget of 10,000 gradient steps): γ = 0.95 (the old default),
0.99, 0.999, and γ = 0.99 with reward centering (Naik et al. 2024; an average-reward target).
Each (variant, instance, seed) unit trains under ``runs/gamma_study/`` (resumable) and appends
one row to ``results/gamma_study.csv`` (units already there are skipped): the mean wait over 5
evaluation days (the leaderboard's seeds 2**31 + k) and the ratio LP / agent on the same days.
"""

from __future__ import annotations

import argparse
import csv
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

VARIANTS: dict[str, dict[str, object]] = {
    "gamma=0.95": {"gamma": 0.95},
    "gamma=0.99": {"gamma": 0.99},
    "gamma=0.999": {"gamma": 0.999},
    "gamma=0.99+centering": {"gamma": 0.99, "reward_centering": True},
}
FIELDS = ("variant", "env_id", "instance_seed", "seed", "gradient_steps", "eval_days",
          "mean_wait", "lp_mean_wait", "ratio_lp", "train_s")


def _unit(args: tuple[str, str, int, int, int, int, str]) -> dict[str, object]:
    variant, env_id, instance, seed, budget, days, runs = args
    from baselines.api import RunConfig, get_method
    from baselines.evaluate import evaluate
    from tsg_envs.seeds import LEADERBOARD_SEED_BASE

    run = RunConfig(
        algo="alpha-ddpg", env_id=env_id, gradient_steps=budget, seed=seed,
        out=Path(runs) / variant / env_id.replace("/", "_") / f"i{instance}" / f"s{seed}",
        instance_seed=instance, hparams=dict(VARIANTS[variant]), progress=False,
    )
    t = time.perf_counter()
    agent = get_method("alpha-ddpg").train(run)
    train_s = time.perf_counter() - t
    day_seeds = [LEADERBOARD_SEED_BASE + k for k in range(days)]
    summary = evaluate(lambda env: agent, env_id, [instance], day_seeds,
                       references=("lp",)).summary()
    return {"variant": variant, "env_id": env_id, "instance_seed": instance, "seed": seed,
            "gradient_steps": budget, "eval_days": days, "mean_wait": summary["mean_wait"],
            "lp_mean_wait": summary["lp_mean_wait"], "ratio_lp": summary["ratio_lp"],
            "train_s": round(train_s, 1)}


def main(argv: list[str] | None = None) -> int:
    """Run the missing units, appending each to the CSV as it finishes."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="tsg/Screening-v1")
    p.add_argument("--instances", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--gradient-steps", type=int, default=10_000)
    p.add_argument("--days", type=int, default=5)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("results/gamma_study.csv"))
    p.add_argument("--runs", default="runs/gamma_study")
    args = p.parse_args(argv)
    done = set()
    if args.out.exists():
        with args.out.open() as f:
            done = {(r["variant"], r["env_id"], int(r["instance_seed"]), int(r["seed"]),
                     int(r["gradient_steps"])) for r in csv.DictReader(f)}
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as f:
            csv.writer(f).writerow(FIELDS)
    jobs = [(v, args.env, i, s, args.gradient_steps, args.days, args.runs)
            for i in args.instances for s in args.seeds for v in args.variants
            if (v, args.env, i, s, args.gradient_steps) not in done]
    print(f"{len(jobs)} units to run ({len(done)} done)", flush=True)
    with ProcessPoolExecutor(max(1, args.workers)) as pool:
        for future in as_completed([pool.submit(_unit, job) for job in jobs]):
            row = future.result()
            with args.out.open("a", newline="") as f:
                csv.DictWriter(f, FIELDS).writerow(row)
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
